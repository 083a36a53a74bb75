"""Docstring sections that the estimators share, written once.

A class or method docstring names a section by a line of its own, ``<name>`` or
``<name: argument>``; ``@estimator_docstring`` writes it in
(:mod:`sklearn_ldp.mechanisms._base.docstrings`).
"""

from ..mechanisms._base.docstrings import shared_sections

estimator_docstring = shared_sections({
    # The parameters of an estimator that privatizes raw records itself through an
    # LDPEncoder (MarginalEstimator, RangeQueryEstimator); the argument names the encoder's.
    "simulation parameters": lambda names: f"""\
{names} : optional
    Only for fitting on raw records: the estimator privatizes them itself with an
    :class:`~sklearn_ldp.encoder.LDPEncoder` of these parameters (a simulation
    convenience, identical to a Pipeline of the two).
random_state : int, Generator or None, default=None
    Used only when privatizing raw records.
ledger, ledger_users : str, path or None; str, default=None, "all"
    Privacy budget ledger (see :mod:`sklearn_ldp.deploy.budget`) charged when the
    estimator privatizes raw records (a collection, charged by its internal
    encoder); fitting on reports charges nothing here.""",
    # The end of the parameters of a fit that ignores y, and what it returns; the argument
    # names the estimator's class.
    "ignored y and self": lambda name: f"""\
y : ignored
    Not used.

Returns
-------
self : {name}
    The fitted estimator.""",
})
