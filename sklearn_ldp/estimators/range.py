"""RangeQueryEstimator: ranges, prefixes, CDF and quantiles from LDP reports (thesis ch. 5).

The math is that of the range mechanisms, :mod:`sklearn_ldp.mechanisms.ranges`
(:mod:`~sklearn_ldp.mechanisms.ranges.tree` for the hierarchical histogram and its
consistency, :mod:`~sklearn_ldp.mechanisms.ranges.haar` for HaarHRR,
:mod:`~sklearn_ldp.mechanisms.ranges.bounds` for the variance bounds and the branching
factor); this module answers and labels the queries."""

import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.isotonic import isotonic_regression
from sklearn.utils.validation import check_is_fitted

from .._validation import FreshEntropyMixin, check_nesting, store_params
from ..mechanisms.ranges.tree import HierarchicalHistogram
from ..workloads import Intervals
from ._base import (
    add_batch,
    forget_fitted,
    reports_or_privatized,
    with_tags,
)
from ._docstrings import estimator_docstring

MONOTONE = ("none", "isotonic", "cumulative")

# expected_error_ evaluates the CDF's variance at every prefix up to this many cells, and at
# this many evenly spaced prefixes beyond (each costs O(h^2) for the tree, O(1) for the
# closed forms: about 0.1 s for the tree at 2^20 cells).
EXPECTED_ERROR_POINTS = 4096


@estimator_docstring
class RangeQueryEstimator(FreshEntropyMixin, BaseEstimator):
    """Fractions of users in ranges, the CDF and quantiles of an ordered column, from LDP
    reports.

    Fit it on the reports of any mechanism over an ordered domain: the range mechanisms
    ``"hierarchical"`` (tree of fan-out ``B``, thesis's HH_B) and ``"haar"`` (HaarHRR), which
    are built for ranges, or any frequency oracle ("flat") or factorization strategy. Every
    answer is a fraction of the users, with its analytic variance available before and after
    collection.

    Parameters
    ----------
    consistency : bool, default=True
        For ``"hierarchical"`` reports: answer from the consistent tree (weighted least
        squares with the root fixed at the known number of users; every range is then a
        difference of two prefix sums). ``False`` answers each range from its B-adic
        decomposition of the raw levels (the thesis's methods without "CI"). Both are unbiased;
        consistency never increased the analytic error in the tests. Ignored by other
        mechanisms, whose estimates need no consistency step.
    monotone : {"none", "isotonic", "cumulative"}, default="none"
        Fix of the noisy CDF, which can decrease or leave ``[0, 1]``. ``"none"`` keeps the
        unbiased estimate (quantiles then use the thesis's binary search on it).
        ``"isotonic"`` replaces the CDF by its least-squares non-decreasing fit in ``[0, 1]``
        (pool-adjacent-violators): the Euclidean projection onto the CDFs, so its squared
        error over the whole CDF is never larger than the raw one's. ``"cumulative"``
        (cumulative clipping) clips to ``[0, 1]`` and takes the running maximum: cheaper,
        biased upwards, no such guarantee. ``predict``, ``cdf`` and ``quantiles`` all use the
        fixed CDF (range answers are then non-negative); ``expected_error_`` always
        describes the unbiased estimate.
    <simulation parameters: strategy, epsilon, categories, branching, oracle>

    Attributes
    ----------
    mechanism_ : Mechanism
        The mechanism the reports came with.
    domain_ : Domain or None
        The domain the reports came with.
    statistic_ : ndarray
        The mechanism's additive statistic of all reports fitted.
    n_users_ : int
        Number of reports fitted.
    data_vector_ : ndarray
        Unbiased number of users per cell (for ``"hierarchical"``, the consistent leaves).
    cdf_ : ndarray
        Estimated fraction of users in cells ``0..i``, for every cell ``i`` (after the
        ``monotone`` fix).
    labels_ : pandas.Index
        Label of each cell: the categories of a single-column domain, else flat indices.
    expected_error_ : pandas.DataFrame
        Variance of the unbiased CDF (fractions squared) at evenly spaced prefixes (every
        prefix on domains up to 2^11 cells): ``worst_case`` (all users in the worst cell) and
        ``average_case`` (users spread evenly), for the number of users fitted.

    See Also
    --------
    sklearn_ldp.LDPEncoder : Builds the ``"hierarchical"`` and ``"haar"`` strategies.
    sklearn_ldp.mechanisms.HierarchicalHistogram : The tree of frequency oracles.
    sklearn_ldp.mechanisms.HaarHRR : The Haar wavelet mechanism.
    sklearn_ldp.mechanisms.recommend_branching : The fan-out with the least error.
    sklearn_ldp.WorkloadEstimator : Any linear queries, ranges included.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Answering range queries under local
       differential privacy", PVLDB 12(10), 2019; chapter 5 of T. Kulkarni's PhD
       dissertation, University of Warwick (HH_B, HaarHRR, consistency, quantiles).
    .. [2] M. Hay, V. Rastogi, G. Miklau and D. Suciu, "Boosting the accuracy of
       differentially private histograms through consistency", PVLDB 3(1), 2010 (the
       constrained least squares on the tree).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ldp import LDPEncoder, RangeQueryEstimator
    >>> df = pd.DataFrame({"minute": list(range(600, 850)) * 80})  # 20,000 users about noon
    >>> enc = LDPEncoder(categories={"minute": range(1440)}, strategy="hierarchical",
    ...                  branching=4, epsilon=1.1, random_state=0)
    >>> est = RangeQueryEstimator().fit(enc.fit_transform(df))
    >>> est.predict([[0, 1439]]).round(9).tolist()   # the whole domain: the known total
    [1.0]
    >>> est.quantiles([0.5]).shape
    (1,)
    """

    # Renamed statistic_ (issue 16, item 7): the old name warns for one release.

    def __init__(self, consistency=True, monotone="none", strategy=None, epsilon=None,
                 categories=None, branching=4, oracle="auto", random_state=None, ledger=None,
                 ledger_users="all"):
        store_params(self, locals())

    # ------------------------------------------------------------------ fitting
    def _as_reports(self, X, first_call):
        return reports_or_privatized(self, X, first_call, branching=self.branching,
                                     oracle=self.oracle)

    @estimator_docstring
    def fit(self, X, y=None):
        """Aggregate the reports in ``X`` and estimate the CDF.

        Parameters
        ----------
        X : LDPReports, AggregatedReports or DataFrame
            The reports: LDPReports, AggregatedReports, or a DataFrame of report columns
            whose ``attrs`` carry the mechanism (``LDPEncoder`` with
            ``set_output(transform="pandas")``; see
            :func:`~sklearn_ldp.deploy.io.reports_from_frame`); raw records with ``strategy`` set.
        <ignored y and self: RangeQueryEstimator>
        """
        check_nesting(self, locals())
        forget_fitted(self, ("statistic_", "encoder_", "_first_batch", "n_invalid_reports_"))
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those seen so far (chunked fits equal one fit).

        Parameters
        ----------
        X : LDPReports, AggregatedReports or DataFrame
            More reports of the same mechanism and domain (as in :meth:`fit`).
        y : None
            Ignored.

        Returns
        -------
        self : RangeQueryEstimator
            The estimator, refitted on all the reports seen.
        """
        check_nesting(self, locals())
        if self.monotone not in MONOTONE:
            raise ValueError(f"monotone must be one of {MONOTONE}, got {self.monotone!r}.")
        if not isinstance(self.consistency, bool | np.bool_):
            raise ValueError(f"consistency must be True or False, got {self.consistency!r}.")
        first_call = not hasattr(self, "statistic_")
        reports = self._as_reports(X, first_call)

        def on_first(reports):
            self.labels_ = self._cell_labels()

        add_batch(self, reports, first_call, on_first)
        self._reconstruct()
        return self

    def _cell_labels(self):
        n = self.mechanism_.n_inputs
        if self.domain_ is not None and self.domain_.n_columns == 1:
            return self.domain_._indexes[0]
        return pd.RangeIndex(n, name="cell")

    def _tree_raw(self):
        """Whether answers come from the raw B-adic decompositions of a tree."""
        return isinstance(self.mechanism_, HierarchicalHistogram) and not self.consistency

    def _reconstruct(self):
        n = self.mechanism_.n_inputs
        self.data_vector_ = self.mechanism_.estimate(self.statistic_)
        if self._tree_raw():
            prefix = self.mechanism_.range_counts(self.statistic_, np.zeros(n, dtype=np.int64),
                                                  np.arange(n), consistency=False)
        else:
            prefix = np.cumsum(self.data_vector_)
        self._raw_cdf = prefix / self.n_users_
        if self.monotone == "isotonic":
            self.cdf_ = isotonic_regression(self._raw_cdf, y_min=0.0, y_max=1.0)
        elif self.monotone == "cumulative":
            self.cdf_ = np.maximum.accumulate(np.clip(self._raw_cdf, 0.0, 1.0))
        else:
            self.cdf_ = self._raw_cdf
        points = np.unique(np.linspace(0, n - 1, num=min(n, EXPECTED_ERROR_POINTS))
                           .round().astype(np.int64))
        self.expected_error_ = self._error_table(np.zeros_like(points), points,
                                                 self.labels_.take(points))

    # ------------------------------------------------------------------ queries
    def _positions(self, values, what):
        """Cell positions of range bounds: category labels first, else integer indices."""
        n = self.mechanism_.n_inputs
        positions = np.full(values.shape[0], -1, dtype=np.int64)
        if self.domain_ is not None and self.domain_.n_columns == 1:
            try:
                positions = np.asarray(self.labels_.get_indexer(values), dtype=np.int64)
            except (TypeError, ValueError):
                pass  # bounds of a type the categories cannot hold: maybe indices
        missing = np.flatnonzero(positions < 0)
        if missing.size:
            rest = values[missing]
            if rest.dtype == object:
                integral = [isinstance(v, numbers.Integral) and not isinstance(v, bool)
                            for v in rest]
                rest = np.asarray(rest.tolist()) if all(integral) else rest
            inside = (np.zeros(rest.shape, dtype=bool) if rest.dtype.kind not in "iu"
                      else (rest >= 0) & (rest < n))
            if not inside.all():
                value = rest[np.flatnonzero(~inside)[0]]
                raise ValueError(
                    f"{what} {value!r} is neither a category of the domain nor a cell index in "
                    f"[0, {n}): ranges must lie inside the domain."
                )
            positions[missing] = rest
        return positions

    def _bounds(self, X):
        """``(lo, hi)`` cell positions of closed ranges given as ``[[lo, hi], ...]``."""
        check_is_fitted(self, "statistic_")
        if isinstance(X, pd.DataFrame):
            array = X.to_numpy(dtype=object)
        elif isinstance(X, np.ndarray):
            array = X
        else:
            try:  # object: keep the python values (labels and indices alike)
                array = np.asarray(X, dtype=object)
            except ValueError:  # ragged
                array = None
        if array is not None:
            if array.dtype.kind in "fc":
                bad = ~np.isfinite(array)
            else:
                bad = np.array([isinstance(v, float | np.floating) and not np.isfinite(v)
                                for v in array.ravel()], dtype=bool)
            if bad.any():
                raise ValueError("range bounds contain NaN or inf; give category labels or "
                                 "cell indices.")
        if array is None or array.ndim != 2 or array.shape[1] != 2 or array.shape[0] == 0:
            raise ValueError("ranges must be given as [[lo, hi], ...]: closed ranges, one pair "
                             "per row (category labels or cell indices).")
        lo = self._positions(array[:, 0], "range start")
        hi = self._positions(array[:, 1], "range end")
        reversed_ = lo > hi
        if reversed_.any():
            i = int(np.flatnonzero(reversed_)[0])
            raise ValueError(f"range {array[i].tolist()!r} has lo after hi "
                             f"({int(reversed_.sum())} such ranges); ranges are closed "
                             "[lo, hi] with lo <= hi.")
        return lo, hi

    def predict(self, X):
        """Fraction of the users in each closed range ``[lo, hi]``.

        Parameters
        ----------
        X : array-like of shape (p, 2)
            One range per row: category labels of the (single) column, or cell indices
            (labels take precedence when both could apply). For interval categories (see
            :func:`~sklearn_ldp.binning.interval_categories`) a number stands for its bin.

        Returns
        -------
        ndarray of shape (p,)
            The estimated fraction of the users in each range (from the fixed CDF when
            ``monotone`` is not ``"none"``).
        """
        check_nesting(self, locals())
        lo, hi = self._bounds(X)
        if self.monotone == "none" and self._tree_raw():
            return self.mechanism_.range_counts(self.statistic_, lo, hi,
                                                consistency=False) / self.n_users_
        cdf = np.concatenate([[0.0], self.cdf_])
        return cdf[hi + 1] - cdf[lo]

    def predict_error(self, X):
        """Analytic variance of each unbiased range answer (fractions squared).

        Parameters
        ----------
        X : array-like of shape (p, 2)
            One closed range per row, as in :meth:`predict`.

        Returns
        -------
        pandas.DataFrame
            Columns ``worst_case`` (all users in the worst cell for that range) and
            ``average_case`` (users spread evenly over the cells), one row per range.
        """
        check_nesting(self, locals())
        lo, hi = self._bounds(X)
        labels = [f"[{self.labels_[a]}, {self.labels_[b]}]" for a, b in zip(lo, hi, strict=True)]
        return self._error_table(lo, hi, labels)

    def _error_table(self, lo, hi, labels):
        """``expected_error_``-style table of the ranges ``[lo, hi]``: per range, the worst
        and the average (over user types) variance of its answer, for the fitted users.

        From the mechanism's structure, never from dense rows: the tree's
        ``range_variance_summary`` (``O(h^2)`` per range), and the closed forms of the other
        mechanisms' ``query_variance_summary`` on the intervals (frequency oracles, Haar).
        """
        if isinstance(self.mechanism_, HierarchicalHistogram):
            worst, average = self.mechanism_.range_variance_summary(
                lo, hi, consistency=self.consistency)
        else:
            worst, average = self.mechanism_.query_variance_summary(
                Intervals(self.mechanism_.n_inputs, lo, hi))
        return pd.DataFrame({"worst_case": np.asarray(worst) / self.n_users_,
                             "average_case": np.asarray(average) / self.n_users_},
                            index=pd.Index(labels, name="range"))

    def cdf(self):
        """The estimated CDF: fraction of users at or below each cell.

        Returns
        -------
        pandas.Series
            ``cdf_`` indexed by the cell labels, named ``"cdf"``.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "statistic_")
        return pd.Series(self.cdf_, index=self.labels_, name="cdf")

    def quantiles(self, q):
        """The ``phi``-quantiles: for each ``phi``, the first cell whose CDF reaches ``phi``.

        Found by binary search on the CDF (for a non-monotone CDF, ``monotone="none"``, the
        thesis's search; the result then has CDF ``>= phi`` and its left neighbour ``< phi``).

        Parameters
        ----------
        q : float or array-like of float in [0, 1]
            The levels ``phi`` of the quantiles.

        Returns
        -------
        label or ndarray
            The quantile of each level: a category value (single-column domain) or a cell
            index; a single label for a scalar ``q``.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "statistic_")
        scalar = np.ndim(q) == 0
        try:
            phi = np.atleast_1d(np.asarray(q, dtype=float))
        except (TypeError, ValueError):
            raise ValueError(f"q must hold numbers in [0, 1], got {q!r}.") from None
        if phi.ndim != 1 or np.any(~np.isfinite(phi)) or np.any((phi < 0) | (phi > 1)):
            raise ValueError(f"q must hold numbers in [0, 1], got {q!r}.")
        low = np.zeros(phi.shape[0], dtype=np.int64)
        high = np.full(phi.shape[0], self.cdf_.shape[0] - 1, dtype=np.int64)
        while np.any(low < high):
            middle = (low + high) // 2
            reached = self.cdf_[middle] >= phi
            high = np.where(reached, middle, high)
            low = np.where(reached, low, middle + 1)
        values = self.labels_.take(low).to_numpy()
        return values[0] if scalar else values

    def __sklearn_tags__(self):
        return with_tags(super().__sklearn_tags__(), categorical=True, string=True,
                         requires_fit=True, non_deterministic=True)
