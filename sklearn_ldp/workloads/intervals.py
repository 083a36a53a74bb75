"""Workloads over the flat order of the cells: the histogram, the total, prefix sums (a CDF),
chosen intervals and all ranges; their operators and builders.
"""

import itertools
import numbers
from collections.abc import Mapping, Sized

import numpy as np
import pandas as pd

from .. import _gram
from .._validation import check_positive_int, describe
from ..deploy.limits import check_size, get_limits
from ..domain import _object_array, _shorten, as_domain
from .base import (
    QueryStats,
    _broadcast_stats,
    _builder,
    _check_query_entries,
    _documents_cells,
    _Structured,
)


def _single_column_values(domain):
    """Category strings of a one-column domain, else None (labels then use flat indices)."""
    if domain is not None and domain.n_columns == 1:
        return domain.columns[0], _strings(domain.categories[domain.columns[0]])
    return None


@_documents_cells
class Identity(_Structured):
    """The histogram: one count per cell (``I``, ``n x n``).

    The labels are the domain's cell labels.

    {cells_parameters:histogram}

    Examples
    --------
    >>> W = Identity(3)
    >>> W @ [5, 6, 7]
    array([5., 6., 7.])
    >>> W.labels.tolist()
    ['x=0', 'x=1', 'x=2']
    """

    _kind = "histogram"

    def __init__(self, n_cells, domain=None, name="histogram"):
        self._setup(n_cells, n_cells, domain, name)

    def _matvec(self, X):
        return X.copy()

    def _rmatvec(self, Y):
        return Y.copy()

    def _make_gram(self):
        return _gram.IdentityGram(self.n_cells)

    def column_sq_norms(self):
        return np.ones(self.n_cells)

    def _query_stats(self):
        low = 0.0 if self.n_cells > 1 else 1.0
        return _broadcast_stats(self.n_queries, 1.0, 1.0, low, 1.0)

    def intervals(self):
        cells = np.arange(self.n_cells, dtype=np.int64)
        return cells, cells.copy()

    def _make_labels(self):
        if self.domain is None:
            return [f"x={i}" for i in range(self.n_cells)]
        return self.domain.cell_labels()


@_documents_cells
class Total(_Structured):
    """One query: the number of users (a row of ones).

    {cells_parameters:total}

    Examples
    --------
    >>> Total(3) @ [1, 2, 3]
    array([6.])
    """

    _kind = "total"

    def __init__(self, n_cells, domain=None, name="total"):
        self._setup(1, n_cells, domain, name)

    def _matvec(self, X):
        return X.sum(axis=0, keepdims=True)

    def _rmatvec(self, Y):
        return np.broadcast_to(Y, (self.n_cells, Y.shape[1])).copy()

    def _make_gram(self):
        return _gram.OnesGram(self.n_cells)

    def column_sq_norms(self):
        return np.ones(self.n_cells)

    def _query_stats(self):
        return _broadcast_stats(1, self.n_cells, self.n_cells, 1.0, 1.0)

    def intervals(self):
        return np.zeros(1, dtype=np.int64), np.full(1, self.n_cells - 1, dtype=np.int64)

    def _make_labels(self):
        return ["total"]


@_documents_cells
class Prefix(_Structured):
    """Prefix sums (a CDF): row ``i`` counts cells ``0..i`` (lower-triangular ones).

    A one-column domain labels the queries with its categories.

    {cells_parameters:prefix}

    Examples
    --------
    >>> Prefix(3).toarray()
    array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]])
    """

    _kind = "prefix"

    def __init__(self, n_cells, domain=None, name="prefix"):
        self._setup(n_cells, n_cells, domain, name)

    def _matvec(self, X):
        return np.cumsum(X, axis=0)

    def _rmatvec(self, Y):
        return np.cumsum(Y[::-1], axis=0)[::-1]

    def _make_gram(self):
        return _gram.MinMaxGram.prefix(self.n_cells)

    def column_sq_norms(self):
        return self.n_cells - np.arange(self.n_cells, dtype=float)

    def _query_stats(self):
        lengths = np.arange(1, self.n_cells + 1, dtype=float)
        mins = (lengths == self.n_cells).astype(float)
        return QueryStats(lengths, lengths, mins, np.ones(self.n_cells))

    def intervals(self):
        return np.zeros(self.n_cells, dtype=np.int64), np.arange(self.n_cells, dtype=np.int64)

    def _make_labels(self):
        single = _single_column_values(self.domain)
        if single is not None:
            return (single[0] + " <= " + single[1]).tolist()
        if self.domain is None:
            return [f"x <= {i}" for i in range(self.n_cells)]
        return [f"cells[0..{i}]" for i in range(self.n_cells)]


def _interval_bounds(values, field, name):
    """``values`` as a 1-D int64 array of at most ``max_matrix_entries`` interval bounds, or
    a ValueError naming the field (no float, bool or overflowing value is converted)."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"workload {name!r}: {field} must be a 1-D array of integer cell "
                         f"indices ({exc}).") from None
    if array.size and array.dtype.kind not in "iu":
        raise ValueError(f"workload {name!r}: {field} must hold integer cell indices, got "
                         f"dtype {array.dtype} (e.g. {array.ravel()[0]!r}).")
    check_size(max(array.size, 1), f"the number of intervals ({field})",
               "max_matrix_entries", f"workload {name!r}")
    if array.dtype.kind == "u" and array.size and array.max() > np.iinfo(np.int64).max:
        raise ValueError(f"workload {name!r}: {field} holds {array.max()}, past any cell.")
    return array.astype(np.int64).ravel()


class _IntervalFamily(_Structured):
    """Workloads whose queries are intervals ``[lo, hi]`` of the flat order."""

    def _interval_arrays(self):
        raise NotImplementedError

    def intervals(self):
        _check_query_entries(self.n_queries, 2, "The interval list", self.name)
        lo, hi = self._interval_arrays()
        return lo.copy(), hi.copy()

    def _query_stats(self):
        lo, hi = self._interval_arrays()
        lengths = (hi - lo + 1).astype(float)
        mins = (lengths == self.n_cells).astype(float)
        return QueryStats(lengths, lengths, mins, np.ones(lengths.shape[0]))

    def _make_labels(self):
        lo, hi = self._interval_arrays()
        return _flat_range_labels(self.domain, lo, hi)

    def _dense_rows(self, rows):
        lo, hi = self._interval_arrays()
        cells = np.arange(self.n_cells)
        return ((cells >= lo[rows, None]) & (cells <= hi[rows, None])).astype(float)

    def _dense(self):
        return self._dense_rows(slice(0, self.n_queries))


class Intervals(_IntervalFamily):
    """Chosen closed intervals ``[lo_i, hi_i]`` of the flat order, answered by differences of
    one cumulative sum (``O(p + n)``).

    Parameters
    ----------
    n_cells : int
        The number of domain cells.
    lo, hi : array-like of int
        The first and last cell (inclusive, flat indices) of each query, with
        ``0 <= lo <= hi < n``; one entry per query each.
    domain : Domain, mapping or int, optional
        The domain (its size must be ``n_cells``).
    name : str, default="ranges"
        A short name of the workload family.
    labels : sequence of str, optional
        One unique label per query; default from the category values (one-column domain)
        or the flat indices.

    See Also
    --------
    ranges : The builder of this workload from a domain and category bounds.
    AllRange : Every interval of the domain.

    Examples
    --------
    >>> W = Intervals(5, lo=[0, 2], hi=[1, 4])
    >>> W.labels.tolist()
    ['x in [0, 1]', 'x in [2, 4]']
    >>> W @ [1, 2, 3, 4, 5]
    array([ 3., 12.])
    """

    def __init__(self, n_cells, lo, hi, domain=None, name="ranges", labels=None):
        n = check_positive_int(n_cells, "n_cells")
        check_size(n, "n_cells", "max_cells", f"workload {name!r}")
        lo = _interval_bounds(lo, "lo", name)
        hi = _interval_bounds(hi, "hi", name)
        if lo.shape != hi.shape:
            raise ValueError(f"ranges: lo and hi differ in length ({lo.shape[0]} and "
                             f"{hi.shape[0]}).")
        bad = (lo < 0) | (hi >= n) | (lo > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"ranges: interval {i} = [{lo[i]}, {hi[i]}] is not inside [0, {n - 1}] with lo "
                f"<= hi ({int(bad.sum())} such intervals).")
        lo.flags.writeable = False
        hi.flags.writeable = False
        self._lo, self._hi = lo, hi
        self._setup(lo.shape[0], n, domain, name, labels)

    def _interval_arrays(self):
        return self._lo, self._hi

    def _matvec(self, X):
        cumulative = np.zeros((self.n_cells + 1, X.shape[1]))
        np.cumsum(X, axis=0, out=cumulative[1:])
        return cumulative[self._hi + 1] - cumulative[self._lo]

    def _rmatvec(self, Y):
        marks = np.zeros((self.n_cells + 1, Y.shape[1]))
        np.add.at(marks, self._lo, Y)
        np.add.at(marks, self._hi + 1, -Y)
        return np.cumsum(marks, axis=0)[:-1]

    def _make_gram(self):
        return _gram.IntervalGram(self.n_cells, self._lo, self._hi)

    def column_sq_norms(self):
        marks = np.zeros(self.n_cells + 1)
        np.add.at(marks, self._lo, 1.0)
        np.add.at(marks, self._hi + 1, -1.0)
        return np.cumsum(marks)[:-1]

    def _labels_are_custom(self):
        return self._labels is not None and not self._labels.equals(
            pd.Index(_flat_range_labels(self.domain, self._lo, self._hi)))

    def _spec(self):
        return {"kind": "ranges", "n": self.n_cells}, {"lo": self._lo, "hi": self._hi}


@_documents_cells
class AllRange(_IntervalFamily):
    """All ``n (n + 1) / 2`` intervals ``[i, j]``, ordered by ``i`` then ``j``; never listed
    unless asked (its Gram ``(min(i, j) + 1) (n - max(i, j))`` is a closed form).

    {cells_parameters:all_range}
    Intervals : Chosen intervals only.
    Prefix : The intervals that start at the first cell.

    Examples
    --------
    >>> W = AllRange(3)
    >>> W.n_queries
    6
    >>> W @ [1, 2, 3]
    array([1., 3., 6., 2., 5., 3.])
    """

    _kind = "all_range"

    def __init__(self, n_cells, domain=None, name="all_range"):
        n = check_positive_int(n_cells, "n_cells")
        self._setup(n * (n + 1) // 2, n, domain, name)

    def _interval_arrays(self):
        lo, hi = np.triu_indices(self.n_cells)
        return lo.astype(np.int64), hi.astype(np.int64)

    def _matvec(self, X):
        n = self.n_cells
        cumulative = np.zeros((n + 1, X.shape[1]))
        np.cumsum(X, axis=0, out=cumulative[1:])
        # Row block of start i: cumulative[i+1 .. n] - cumulative[i].
        lo, hi = np.triu_indices(n)
        return cumulative[hi + 1] - cumulative[lo]

    def _rmatvec(self, Y):
        lo, hi = np.triu_indices(self.n_cells)
        marks = np.zeros((self.n_cells + 1, Y.shape[1]))
        np.add.at(marks, lo, Y)
        np.add.at(marks, hi + 1, -Y)
        return np.cumsum(marks, axis=0)[:-1]

    def _make_gram(self):
        return _gram.MinMaxGram.all_range(self.n_cells)

    def column_sq_norms(self):
        cells = np.arange(self.n_cells, dtype=float)
        return (cells + 1.0) * (self.n_cells - cells)


# ---------------------------------------------------------------------- helpers
def _strings(values):
    """Category values as an object array of str."""
    return np.array([str(v) for v in values], dtype=object)


def _strings_at(categories, positions):
    """``str`` of the categories at ``positions`` only (an object array like ``positions``):
    a few intervals of a 2^20-value column need not format every value."""
    needed, inverse = np.unique(positions, return_inverse=True)
    return _strings([categories[i] for i in needed.tolist()])[inverse.reshape(positions.shape)]


def _flat_range_labels(domain, lo, hi):
    """Labels of flat-index intervals: category values for one column, indices otherwise."""
    if domain is not None and domain.n_columns == 1:
        column = domain.columns[0]
        categories = domain.categories[column]
        return (column + " in [" + _strings_at(categories, lo) + ", "
                + _strings_at(categories, hi) + "]").tolist()
    if domain is None:
        column = "x"
        return [f"{column} in [{a}, {b}]" for a, b in zip(lo.tolist(), hi.tolist(),
                                                          strict=True)]
    return [f"cells[{a}..{b}]" for a, b in zip(lo.tolist(), hi.tolist(), strict=True)]


def _over_domain(workload_class, domain):
    """``workload_class`` over every cell of ``domain`` (a Domain, mapping or int)."""
    domain = as_domain(domain)
    return workload_class(domain.size, domain=domain)


# ---------------------------------------------------------------------- builders
@_builder
def histogram(domain):
    """The identity workload: one count per cell.

    {domain_parameter}

    Returns
    -------
    Workload
        ``n x n`` identity (never stored), labelled by :meth:`Domain.cell_labels`.

    See Also
    --------
    marginals : Counts over attribute subsets.
    total : The number of users.

    Examples
    --------
    >>> histogram({"smoker": ["no", "yes"]}).labels.tolist()
    ['smoker=no', 'smoker=yes']
    >>> histogram(2**20).shape
    (1048576, 1048576)
    """
    return _over_domain(Identity, domain)


@_builder
def total(domain):
    """One query: the number of users (a row of ones).

    {domain_parameter}

    Returns
    -------
    Workload
        A ``1 x n`` row of ones labelled ``"total"``.

    See Also
    --------
    histogram : One count per cell.
    marginals : With ``k=0``, the total as a marginal.

    Examples
    --------
    >>> total(3) @ [1, 2, 3]
    array([6.])
    """
    return _over_domain(Total, domain)


@_builder
def prefix(domain):
    """Prefix sums (a CDF): row ``i`` counts cells ``0..i`` of the flat order.

    {domain_parameter}

    Returns
    -------
    Workload
        Lower-triangular ones, ``n x n``, answered by a cumulative sum. Labels
        ``"age <= 30-50"`` for a single column, ``"cells[0..i]"`` otherwise.

    See Also
    --------
    all_range : Every interval of the flat order.
    ranges : Chosen intervals.

    Examples
    --------
    >>> W = prefix({"age": ["<30", "30-50", ">50"]})
    >>> W.labels.tolist()
    ['age <= <30', 'age <= 30-50', 'age <= >50']
    >>> W @ [1, 2, 3]
    array([1., 3., 6.])
    """
    return _over_domain(Prefix, domain)


@_builder
def all_range(domain):
    """All range queries ``[i, j]``, ``0 <= i <= j < n``, over the flat order.

    {domain_parameter}

    Returns
    -------
    Workload
        ``n(n+1)/2`` rows ordered by ``i`` then ``j``, never listed unless asked (its Gram is
        a closed form). Labels ``"age in [<30, 30-50]"`` for a single column,
        ``"cells[i..j]"`` (flat indices) otherwise.

    See Also
    --------
    ranges : Chosen intervals only.
    prefix : The intervals that start at the first cell.
    range_marginals : All ranges of each attribute, crossed.

    Examples
    --------
    >>> W = all_range(3)
    >>> W.n_queries
    6
    >>> W.labels[:3].tolist()
    ['x in [0, 0]', 'x in [0, 1]', 'x in [0, 2]']
    >>> all_range(2**20).n_queries
    549756338176
    """
    return _over_domain(AllRange, domain)
@_builder
def ranges(domain, intervals):
    """Chosen range queries: closed intervals over the flat order.

    {domain_parameter}
    intervals : sequence of (lo, hi)
        Closed intervals. For a single-column domain, ``lo`` and ``hi`` are category values;
        otherwise integer flat indices. ``lo`` must not come after ``hi``.

    Returns
    -------
    Workload
        An :class:`Intervals` workload, one 0/1 row per interval, answered by differences
        of one cumulative sum.

    See Also
    --------
    all_range : Every interval.
    prefix : The intervals that start at the first cell.

    Examples
    --------
    >>> W = ranges({"age": ["<30", "30-50", ">50"]}, [("<30", "30-50"), (">50", ">50")])
    >>> W.toarray()
    array([[1., 1., 0.],
           [0., 0., 1.]])
    """
    domain = as_domain(domain)
    n = domain.size
    check_size(n, "the cells of the domain", "max_cells", "ranges")
    if isinstance(intervals, str | bytes | Mapping) or not isinstance(intervals, Sized) or (
            isinstance(intervals, np.ndarray) and intervals.ndim != 2):
        raise ValueError(f"ranges: intervals must be a list of (lo, hi) pairs, got "
                         f"{describe(intervals)}.")
    # Read up to the cap only: an endless iterator must not run until memory is gone. The
    # cap on listed intervals is max_cells (what a 2^24-cell domain's histogram lists).
    cap = get_limits()["max_cells"]
    intervals = list(itertools.islice(intervals, cap + 1))
    if len(intervals) > cap:
        check_size(len(intervals), "the number of intervals", "max_cells", "ranges")
    if not intervals:
        raise ValueError("ranges: intervals is empty; give at least one (lo, hi) pair.")
    for interval in intervals:
        if not (isinstance(interval, tuple | list) or (
                isinstance(interval, np.ndarray) and interval.ndim == 1)) or len(interval) != 2:
            raise ValueError(f"ranges: each interval must be a (lo, hi) pair, got "
                             f"{describe(interval)}.")
    if domain.n_columns == 1:
        column = domain.columns[0]
        index = domain._indexes[0]
        bounds = _object_array([v for interval in intervals for v in interval])
        try:
            positions = index.get_indexer(bounds)
        except TypeError:  # an unhashable bound (a list...)
            raise ValueError(f"ranges: interval bounds must be categories of column "
                             f"{column!r}, got {describe(bounds.tolist())}.") from None
        if (positions < 0).any():
            raise ValueError(
                f"ranges: interval bounds not among the categories of column {column!r}: "
                f"{_shorten(pd.unique(bounds[positions < 0]))}."
            )
    else:
        bounds = [v for interval in intervals for v in interval]
        for v in bounds:
            if isinstance(v, bool) or not isinstance(v, numbers.Integral) or not 0 <= v < n:
                raise ValueError(
                    f"ranges: over a multi-column domain interval bounds are flat cell indices, "
                    f"integers in [0, {n}); got {v!r}."
                )
        positions = np.array(bounds, dtype=np.int64)
    lo, hi = positions[0::2], positions[1::2]
    reversed_ = lo > hi
    if reversed_.any():
        i = int(np.flatnonzero(reversed_)[0])
        raise ValueError(
            f"ranges: interval {intervals[i]!r} has lo after hi ({int(reversed_.sum())} such "
            "intervals)."
        )
    return Intervals(n, lo, hi, domain=domain, name="ranges")
