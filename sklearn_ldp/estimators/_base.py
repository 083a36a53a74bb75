"""Glue shared by the estimators (scikit-learn side; the encoder and the reports below it)."""

import warnings

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_array

from .._logging import get_logger
from ..deploy.io import reports_from_frame
from ..deploy.io.formats import SPEC_KEY
from ..encoder import LDPEncoder
from ..mechanisms._base.mechanism import add_counts
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
            "sklearn_ldp.deploy.io.reports_from_frame(frame, mechanism)) or AggregatedReports "
            "(LDPEncoder.simulate). To fit on raw records, set strategy= and epsilon= so that "
            "the estimator privatizes them itself (a simulation of the clients)."
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


def deprecated_counts_property():
    """The fitted ``counts_`` of the estimators, renamed ``statistic_`` (issue 16, item 7):
    a read-only property that returns ``statistic_`` with a FutureWarning, for one release.

    Unfitted, it raises AttributeError *without* warning, so that ``hasattr(est, "counts_")``
    stays silent and False. It is a class attribute, not an instance one: scikit-learn's
    ``check_is_fitted(est)`` (which lists ``vars(est)``) never sees it, so it cannot make an
    unfitted estimator look fitted.
    """

    def counts_(self):
        """Deprecated alias of ``statistic_`` (removed in the next release).

        Returns
        -------
        ndarray
            ``statistic_``, the mechanism's aggregate of all reports fitted.
        """
        if "statistic_" not in vars(self):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute 'counts_' "
                                 "(renamed statistic_; not fitted yet).")
        warnings.warn(f"{type(self).__name__}.counts_ is deprecated and will be removed in "
                      "the next release; use statistic_ (the same array: the mechanism's "
                      "aggregate of the reports).", FutureWarning, stacklevel=2)
        return self.statistic_

    return property(counts_)


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
