"""Glue shared by the estimators (scikit-learn side; the encoder and the reports below it)."""


import numpy as np
import pandas as pd
from sklearn.utils.validation import check_array

from .._logging import get_logger
from ..deploy.io import reports_from_frame
from ..deploy.io.formats import SPEC_KEY
from ..encoder import LDPEncoder
from ..mechanisms._base.counts import add_counts
from ..mechanisms._base.rows import empty_reports
from ..reports import AggregatedReports, LDPReports, statistic_of

_logger = get_logger("estimators")


def forget_fitted(estimator, attributes):
    """Remove the fitted ``attributes`` an earlier ``fit`` left, so that a new ``fit`` starts
    from nothing (and ``check_is_fitted`` is False until it succeeds)."""
    for attribute in attributes:
        estimator.__dict__.pop(attribute, None)


def reports_or_privatized(estimator, X, first_call, strategy_params=None, **encoder_params):
    """``X`` if it holds reports, else raw records privatized by the estimator's own encoder.

    For estimators that accept raw records as a simulation convenience when their
    ``strategy`` is set: the first call fits ``estimator.encoder_ = LDPEncoder(strategy=...,
    epsilon=..., categories=..., random_state=..., ledger=..., ledger_users=...,
    **encoder_params, **strategy_params)`` on ``X`` (privatizing raw records is a collection,
    so the estimator's ledger is charged) and copies its ``n_features_in_`` /
    ``feature_names_in_``; every call returns ``encoder_.transform(X)``.

    A DataFrame whose ``attrs`` carry a mechanism (``LDPEncoder`` with
    ``set_output(transform="pandas")``, :func:`~sklearn_ldp.deploy.io.reports_frame`, also after
    ``to_parquet`` / ``read_parquet``) holds reports: it is converted back by
    :func:`~sklearn_ldp.deploy.io.reports_from_frame`, never privatized again.
    """
    if isinstance(X, LDPReports | AggregatedReports):
        return X
    if isinstance(X, pd.DataFrame) and X.attrs.get(SPEC_KEY) is not None:
        return reports_from_frame(X)
    name = type(estimator).__name__
    if estimator.strategy is None:
        if not isinstance(X, pd.DataFrame):
            # What cannot be records either (sparse, complex, empty, NaN) gets scikit-learn's
            # own message first; anything else is refused below.
            check_array(X, accept_sparse=False, dtype=None, ensure_2d=False,
                        ensure_all_finite=np.asarray(X).dtype.kind in "fc")
        raise ValueError(
            f"{name}.fit expects LDPReports (the output of LDPEncoder.transform), a DataFrame "
            "of reports (LDPEncoder with set_output(transform='pandas'), whose attrs carry the "
            "mechanism; a frame of report columns without them: "
            "sklearn_ldp.deploy.io.reports_from_frame(frame, mechanism); the encoder's block of "
            "a ColumnTransformer's numpy output: encoder.reports_from_array(block)) or "
            "AggregatedReports (LDPEncoder.simulate). To fit on raw records, set strategy= and "
            "epsilon= so that the estimator privatizes them itself (a simulation of the "
            "clients)."
        )
    if first_call:
        try:
            encoder = LDPEncoder(strategy=estimator.strategy, epsilon=estimator.epsilon,
                                 categories=getattr(estimator, "categories", None),
                                 random_state=estimator.random_state, ledger=estimator.ledger,
                                 ledger_users=estimator.ledger_users, **encoder_params,
                                 **(strategy_params or {}))
        except TypeError as exc:
            raise ValueError(f"strategy_params does not fit LDPEncoder: {exc}") from None
        estimator.encoder_ = encoder.fit(X)
        for attribute in ("n_features_in_", "feature_names_in_"):
            if hasattr(estimator.encoder_, attribute):
                setattr(estimator, attribute, getattr(estimator.encoder_, attribute))
    return estimator.encoder_.transform(X)


# ---------------------------------------------------------------------- fitting batches
def _same_workload(first, other):
    """Whether two workloads (or None) describe the same queries: the same object, or the
    same structure and arrays (``to_spec``)."""
    if first is other:
        return True
    if first is None or other is None:
        return False
    spec_a, arrays_a = first.to_spec()
    spec_b, arrays_b = other.to_spec()
    return spec_a == spec_b and arrays_a.keys() == arrays_b.keys() and all(
        np.array_equal(arrays_a[key], arrays_b[key]) for key in arrays_a)


def start_batches(estimator, reports):
    """Record what the first batch of ``partial_fit`` fixes: its mechanism, domain and
    workload (later batches must match them), and the invalid reports dropped so far."""
    estimator._first_batch = (reports.mechanism, reports.domain, reports.workload)
    estimator.n_invalid_reports_ = 0


def check_batch(estimator, reports):
    """Refuse a later ``partial_fit`` batch whose mechanism (fingerprint), domain or workload
    differs from the first batch's, with a ValueError naming what differs.

    A batch without a domain (or workload) is accepted after one with it: it carries no
    other claim about the cells. Two different ones are refused, since the counts of one
    cannot be added to the counts of the other.
    """
    name = type(estimator).__name__
    mechanism, domain, workload = getattr(estimator, "_first_batch",
                                          (estimator.mechanism_, estimator.domain_, None))
    if reports.mechanism != mechanism:
        raise ValueError(
            f"{name}.partial_fit: these reports come from a different mechanism than the ones "
            f"already fitted ({reports.mechanism!r}, fingerprint "
            f"{_short(reports.mechanism.fingerprint())}, vs {mechanism!r}, fingerprint "
            f"{_short(mechanism.fingerprint())}); a different strategy, epsilon or domain "
            "cannot be mixed into one estimate."
        )
    if reports.domain is not None and domain is not None and reports.domain != domain:
        raise ValueError(
            f"{name}.partial_fit: these reports are over the domain {reports.domain!r}, the "
            f"first batch over {domain!r}; the same cells cannot mean different categories in "
            "one estimate."
        )
    if (reports.workload is not None and workload is not None
            and not _same_workload(workload, reports.workload)):
        raise ValueError(
            f"{name}.partial_fit: these reports carry the workload {reports.workload!r}, the "
            f"first batch {workload!r}; fit reports collected for one workload together."
        )


def _short(fingerprint):
    """A fingerprint shortened for messages (a dense strategy's fingerprint is long)."""
    text = str(fingerprint)
    return text if len(text) <= 80 else text[:77] + "..."


def checked_statistic(estimator, reports):
    """The statistic of ``reports`` (LDPReports aggregated now, or AggregatedReports),
    checked by the mechanism: counts where the mechanism counts (integers, non-negative,
    consistent totals, at most 2^62), as the mechanism's own aggregate of no reports has
    them; its number of reports comes with it."""
    statistic = statistic_of(reports)
    if isinstance(reports, AggregatedReports):
        zero = reports.mechanism.aggregate(empty_reports(reports.mechanism))
        statistic = np.asarray(statistic)
        if (np.issubdtype(zero.dtype, np.integer)
                and not np.issubdtype(statistic.dtype, np.integer)):
            raise ValueError(
                f"{type(estimator).__name__}.fit: the statistic of {reports.mechanism!r} holds "
                f"integer counts of reports, got dtype {statistic.dtype}.")
    return statistic, reports.mechanism.n_reports(statistic)


def add_statistic(estimator, statistic):
    """``statistic_ + statistic`` for a later batch, refused (not wrapped) past 2^62 reports
    in any count."""
    if np.issubdtype(np.asarray(statistic).dtype, np.integer):
        return add_counts(estimator.statistic_, statistic, estimator.mechanism_.name)
    return estimator.statistic_ + statistic


def add_batch(estimator, reports, first_call, on_first=None):
    """The batch step every ``partial_fit`` shares: check ``reports`` and add them to the fit.

    Refuses an empty batch and (after the first) a batch of another mechanism, domain or
    workload; computes the checked statistic before any state changes, so that a refused
    batch leaves the fit as it was. The first batch sets ``mechanism_`` and ``domain_``, then
    calls ``on_first(reports)`` (the estimator's own first-batch attributes, which may refuse
    the batch) before the batches start; every batch adds to ``statistic_``, ``n_users_`` and
    ``n_invalid_reports_``.
    """
    if len(reports) == 0:
        raise ValueError("no reports to fit: X has 0 rows.")
    if not first_call:
        check_batch(estimator, reports)
    statistic, n_reports = checked_statistic(estimator, reports)
    if first_call:
        estimator.mechanism_ = reports.mechanism
        estimator.domain_ = reports.domain
        if on_first is not None:
            on_first(reports)
        start_batches(estimator, reports)
        estimator.statistic_, estimator.n_users_ = statistic, n_reports
    else:
        estimator.statistic_ = add_statistic(estimator, statistic)
        estimator.n_users_ += n_reports
    record_invalid(estimator, reports)


def record_invalid(estimator, reports):
    """Add the invalid reports dropped when ``reports`` were collected
    (``reports_from_client(..., invalid="drop")`` sets ``n_invalid``) to
    ``n_invalid_reports_``, and log them."""
    dropped = int(getattr(reports, "n_invalid", 0) or 0)
    if dropped:
        estimator.n_invalid_reports_ += dropped
        _logger.warning("%s: %d invalid reports were dropped when this batch was collected "
                        "(%d in all so far).", type(estimator).__name__, dropped,
                        estimator.n_invalid_reports_)


# Tags of scikit-learn's Tags object itself; every other name given to with_tags is an input tag.
_ESTIMATOR_TAGS = ("requires_fit", "non_deterministic")


def with_tags(tags, **values):
    """``tags`` (an estimator's scikit-learn ``Tags``) with the tags named in ``values`` set:
    ``requires_fit`` and ``non_deterministic`` on ``tags``, the others on ``tags.input_tags``."""
    for name, value in values.items():
        setattr(tags if name in _ESTIMATOR_TAGS else tags.input_tags, name, value)
    return tags
