"""Workloads: sets of linear counting queries over a domain, as structured linear operators.

Row ``i`` of a workload ``W`` is one query; its answer on the data vector ``x`` (counts per cell,
in the flat-index order of the :class:`~sklearn_ldp.domain.Domain`) is ``(W @ x)[i]``.

A workload keeps its structure instead of a dense ``p x n`` matrix (DESIGN section 6; HDMM's
implicit matrices, McKenna et al. VLDB 2018): the histogram is an identity, a CDF a prefix
operator answered by a cumulative sum, ranges are differences of cumulative sums, marginals
are Kronecker products answered by reshaping and summing, unions are stacks. Every workload
offers

* ``matvec(x)`` / ``rmatvec(y)`` (also ``W @ x``) in ``O(n)``, ``O(n log n)`` or ``O(p + n)``,
* ``gram()``: ``W^T W`` as an operator (:mod:`sklearn_ldp._gram`), closed forms where known,
* ``shape``, ``n_queries``, and ``labels`` computed on first use,
* ``query_stats()``: per-query norms, sums and extreme entries (what the frequency oracles'
  per-query variances need),
* ``toarray()``: the dense matrix, only on request and refused past ``2**27`` entries with a
  message naming the size,
* ``aslinearoperator()`` for :mod:`scipy.sparse.linalg`.

Builders take the domain as a ``Domain``, a mapping column -> categories, or an int number of
cells, and return a labelled :class:`Workload`.
"""

import functools
import itertools
import math
import numbers
import warnings
from collections.abc import Mapping, Sized

import numpy as np
import pandas as pd
import scipy.sparse
import scipy.sparse.linalg

from . import _gram
from ._fwht import fwht, is_power_of_two
from ._gram import check_dense_entries
from ._validation import (
    MAX_DENSE_ENTRIES,
    as_float_matrix,
    check_positive_int,
    describe,
    refuse_deep_nesting,
    short_repr,
)
from .deploy.limits import check_size, get_limits
from .domain import Domain, _object_array, _product_strings, _shorten, as_domain

__all__ = [
    "Workload",
    "as_workload",
    "stack",
    "kron",
    "histogram",
    "total",
    "prefix",
    "all_range",
    "ranges",
    "marginals",
    "range_marginals",
    "parity",
    "from_predicates",
    "custom",
    "Identity",
    "Total",
    "Prefix",
    "AllRange",
    "Intervals",
    "Kron",
    "Stack",
    "Parity",
    "MatrixWorkload",
    "MAX_LABELS",
    "MAX_QUERY_ENTRIES",
]

def _renamed_keyword(old, new):
    """Decorator: accept the keyword ``old`` as the deprecated spelling of ``new``.

    The vocabulary of issue 16 (item 7) renamed parameters (``n`` -> ``n_cells`` here,
    ``counts`` -> ``statistic`` in the mechanisms); the old keyword keeps working for one
    release with a FutureWarning naming the new one. Positional calls are unchanged; giving
    both spellings is a TypeError, as Python's own for a repeated argument.
    """

    def decorate(function):
        # A class is called by its name: "Identity()", not "Identity.__init__()".
        called = function.__qualname__.removesuffix(".__init__")

        @functools.wraps(function)
        def wrapper(*args, **kwargs):
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{called}() got both {new!r} and its deprecated "
                                    f"spelling {old!r}; give only {new!r}.")
                warnings.warn(f"{called}(): the keyword {old!r} is deprecated "
                              f"and will be removed in the next release; use {new!r}.",
                              FutureWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return function(*args, **kwargs)

        return wrapper

    return decorate


# Labels are built on first use, one Python string per query: refuse beyond this many.
MAX_LABELS = 2**24
# Unions of at most this many queries check their labels for repeats when they are built.
EAGER_LABEL_CHECK = 2**16
# Answers, per-query statistics and interval lists are float64/int64 arrays with one entry per
# query (and per column of a block): refuse beyond this many entries (1 GiB).
MAX_QUERY_ENTRIES = 2**27


def _check_terms(terms, field, name):
    """Refuse a list of factors or blocks longer than ``max_workload_terms`` (each becomes a
    Python object), or one that is not a list of workloads at all."""
    try:
        size = None if isinstance(terms, str | bytes | Mapping) else len(terms)
    except TypeError:  # no length, or a 0-d array
        size = None
    if size is None or not hasattr(terms, "__iter__"):
        raise TypeError(f"{name}: {field} must be a list of workloads, got "
                        f"{describe(terms)}.")
    if size > get_limits()["max_workload_terms"]:
        check_size(len(terms), f"the number of {field}", "max_workload_terms", name)


def _as_terms(terms, field, name):
    """The workloads of ``terms``, an error naming the first that is none."""
    result = []
    for position, term in enumerate(terms):
        try:
            result.append(as_workload(term))
        except ValueError as exc:
            raise ValueError(f"{name}: {field}[{position}]: {exc}") from None
    return result


def _check_query_entries(n_queries, n_columns, what, name):
    if n_queries * n_columns > MAX_QUERY_ENTRIES:
        raise ValueError(
            f"{what} of the {name!r} workload would hold {n_queries * n_columns} values "
            f"({n_queries} queries; limit {MAX_QUERY_ENTRIES}). Ask for the queries you need "
            "(e.g. workloads.ranges(domain, intervals) or predict on chosen intervals) "
            "instead of all of them."
        )


class QueryStats:
    """Per-query summaries of a workload: ``sq_norms`` (``||w||^2``), ``sums`` (``w . 1``),
    ``mins`` and ``maxs`` (the extreme entries of each row), all arrays of length ``p``."""

    def __init__(self, sq_norms, sums, mins, maxs):
        self.sq_norms = np.asarray(sq_norms, dtype=float)
        self.sums = np.asarray(sums, dtype=float)
        self.mins = np.asarray(mins, dtype=float)
        self.maxs = np.asarray(maxs, dtype=float)

    @classmethod
    def concatenate(cls, parts):
        return cls(*(np.concatenate([getattr(p, a) for p in parts])
                     for a in ("sq_norms", "sums", "mins", "maxs")))

    def scaled(self, weight):
        low, high = weight * self.mins, weight * self.maxs
        return QueryStats(weight * weight * self.sq_norms, weight * self.sums,
                          np.minimum(low, high), np.maximum(low, high))


def _broadcast_stats(n_queries, sq_norm, total, low, high):
    return QueryStats(*(np.full(n_queries, float(v)) for v in (sq_norm, total, low, high)))


class Workload:
    """A labelled set of linear counting queries: a ``p x n`` linear operator.

    ``Workload(matrix, ...)`` wraps an explicit query matrix (dense or scipy sparse); the
    builders of this module return structured subclasses that never form the matrix.

    Parameters
    ----------
    matrix : array-like or scipy sparse matrix of shape (p, n)
        One row per query, one column per domain cell (flat-index order). A 1-D array is one
        query. Must be finite. Sparse input stays sparse.
    labels : sequence of str, optional
        One unique label per query. Default ``"q0", ..., "q{p-1}"``.
    domain : Domain, mapping or int, optional
        The domain the queries range over; ``n`` must equal its number of cells.
    name : str, default="custom"
        A short name of the workload family (e.g. ``"marginals"``).

    Attributes
    ----------
    shape : tuple of int
        ``(p, n)``: the number of queries and of domain cells.
    labels : pandas Index of str
        The query labels (computed on first use).
    domain : Domain or None
        The domain of the queries, if one was given.
    name : str
        The name of the workload family.

    See Also
    --------
    as_workload : Coerce a matrix or a workload to a Workload.
    custom : Build a workload from an explicit query matrix.
    histogram, prefix, all_range, ranges, marginals : Structured workload builders.
    sklearn_ldp.domain.Domain : The domain whose cells the queries count.

    Examples
    --------
    >>> W = Workload([[1, 1, 0], [0, 1, 1]], labels=["a|b", "b|c"])
    >>> W.n_queries, W.n_cells
    (2, 3)
    >>> W @ [10, 20, 30]
    array([30., 50.])
    """

    # Whether n_cells is checked against max_cells (all but products and stacks).
    _allocates_cells = True

    def __init__(self, matrix, labels=None, domain=None, name="custom"):
        if scipy.sparse.issparse(matrix):
            matrix = scipy.sparse.csr_array(matrix, dtype=float)
            if matrix.ndim != 2:
                raise ValueError("The workload matrix must be 2-D.")
            if not np.all(np.isfinite(matrix.data)):
                raise ValueError("The workload matrix contains NaN or infinite entries.")
            matrix.sort_indices()
        else:
            original = matrix
            matrix = as_float_matrix(matrix, "The workload matrix")
            if isinstance(original, np.ndarray) and np.may_share_memory(matrix, original):
                matrix = matrix.copy()
            matrix.flags.writeable = False
        self._matrix = matrix
        self._setup(matrix.shape[0], matrix.shape[1], domain, name, labels)

    # ------------------------------------------------------------------ set-up
    def _setup(self, n_queries, n_cells, domain, name, labels=None):
        """Common attributes of every workload (subclasses call this instead of __init__)."""
        n_queries, n_cells = int(n_queries), int(n_cells)
        if n_queries == 0 or n_cells == 0:
            raise ValueError(
                f"A workload needs at least one query and one cell, got a {n_queries} x "
                f"{n_cells} matrix."
            )
        if self._allocates_cells:
            # It answers from a vector of n_cells counts: refused before anything of that
            # size (a Gram, a cumulative sum, a spread of answers) is allocated. Products and
            # stacks are left to their factors: one-way marginals over a product far past
            # the cap are what the multi-attribute protocols answer, column by column.
            check_size(n_cells, "n_cells (the domain's cells)", "max_cells",
                       f"workload {name!r}")
        if domain is not None:
            domain = as_domain(domain)
            if n_cells != domain.size:
                raise ValueError(
                    f"The workload has {n_cells} columns but the domain has {domain.size} "
                    "cells."
                )
        self._shape = (n_queries, n_cells)
        self._domain = domain
        self.name = str(name)
        self._labels = None
        self._gram = None
        if labels is not None:
            self._labels = self._checked_labels(labels)

    def _checked_labels(self, labels):
        if isinstance(labels, str):
            raise ValueError("labels must be a sequence of strings, one per query, not a str.")
        labels = pd.Index([str(label) for label in labels], name="query")
        if len(labels) != self.n_queries:
            raise ValueError(
                f"The workload has {self.n_queries} queries but {len(labels)} labels were given."
            )
        if not labels.is_unique:
            duplicates = labels[labels.duplicated()].unique()
            raise ValueError(f"Workload labels must be unique; repeated: {_shorten(duplicates)}.")
        return labels

    # ------------------------------------------------------------------ properties
    @property
    def shape(self):
        """``(p, n)``: number of queries and of domain cells."""
        return self._shape

    @property
    def n_queries(self):
        """Number of queries ``p``."""
        return self._shape[0]

    @property
    def n_cells(self):
        """Number of domain cells ``n``."""
        return self._shape[1]

    @property
    def domain(self):
        """The domain of the queries, or None."""
        return self._domain

    @property
    def labels(self):
        """The query labels (pandas Index of str), built on first use."""
        if self._labels is None:
            if self.n_queries > MAX_LABELS:
                raise ValueError(
                    f"The {self.name!r} workload has {self.n_queries} queries, too many to "
                    f"label one by one (limit {MAX_LABELS}). Ask for the queries you need "
                    "(e.g. workloads.ranges(domain, intervals))."
                )
            self._labels = self._checked_labels(self._make_labels())
        return self._labels

    def _make_labels(self):
        return [f"q{i}" for i in range(self.n_queries)]

    @property
    def matrix(self):
        """Deprecated: the dense matrix; use :meth:`toarray` (refused past 2**27 entries)."""
        warnings.warn(
            "Workload.matrix is deprecated: workloads are structured operators now. Use "
            "W.toarray() for the dense matrix, or W @ x, W.gram() and W.query_stats().",
            DeprecationWarning, stacklevel=2)
        dense = self.toarray()
        dense.flags.writeable = False
        return dense

    # ------------------------------------------------------------------ products
    def _matvec(self, X):
        """``W X`` for an ``(n, k)`` float array: ``(p, k)``."""
        return np.asarray(self._matrix @ X)

    def _rmatvec(self, Y):
        """``W^T Y`` for a ``(p, k)`` float array: ``(n, k)``."""
        return np.asarray(self._matrix.T @ Y)

    def matvec(self, x):
        """The answers ``W x`` for a data vector ``(n,)`` or a block ``(n, k)``.

        Parameters
        ----------
        x : array-like of shape (n_cells,) or (n_cells, k)
            A data vector (counts or fractions per domain cell, in flat-index order), or
            ``k`` of them as columns.

        Returns
        -------
        ndarray of shape (n_queries,) or (n_queries, k)
            The query answers, one row per query (and one column per data vector).

        Raises
        ------
        ValueError
            If ``x`` does not have ``n_cells`` rows, or if the answers would hold more than
            ``MAX_QUERY_ENTRIES`` values.

        Examples
        --------
        >>> prefix(4).matvec([1, 2, 3, 4])
        array([ 1.,  3.,  6., 10.])
        """
        X, vector = _gram._as_columns(x, self.n_cells)
        _check_query_entries(self.n_queries, X.shape[1], "The answers", self.name)
        result = self._matvec(X)
        return result[:, 0] if vector else result

    def rmatvec(self, y):
        """``W^T y`` for a vector ``(p,)`` or a block ``(p, k)``.

        Parameters
        ----------
        y : array-like of shape (n_queries,) or (n_queries, k)
            One value per query (or ``k`` columns of them).

        Returns
        -------
        ndarray of shape (n_cells,) or (n_cells, k)
            The transposed product, one row per domain cell.

        Examples
        --------
        >>> prefix(3).rmatvec([1, 1, 1])
        array([3., 2., 1.])
        """
        Y, vector = _gram._as_columns(y, self.n_queries)
        result = self._rmatvec(Y)
        return result[:, 0] if vector else result

    def __matmul__(self, x):
        return self.matvec(x)

    def gram(self):
        """``W^T W`` as a :class:`~sklearn_ldp._gram.Gram` operator (computed once).

        Closed forms are used where they are known (identity, prefix, all-range, intervals,
        Kronecker products and weighted sums of them); an explicit matrix gets a dense Gram
        while ``n x n`` stays small.

        Returns
        -------
        Gram
            An ``n x n`` symmetric operator (``matvec``, ``diagonal``, ``toarray``...); the
            same object on every call.

        Examples
        --------
        >>> prefix(3).gram().toarray()
        array([[3., 2., 1.],
               [2., 2., 1.],
               [1., 1., 1.]])
        """
        if self._gram is None:
            self._gram = self._make_gram()
        return self._gram

    def _make_gram(self):
        if self.n_cells * self.n_cells <= MAX_DENSE_ENTRIES // 8:
            dense = self._matrix.T @ self._matrix
            if scipy.sparse.issparse(dense):
                dense = dense.toarray()
            return _gram.DenseGram(dense)
        return _gram.WorkloadGram(self)

    def column_sq_norms(self):
        """``diag(W^T W)``: the squared norm of each column (one per cell).

        Returns
        -------
        ndarray of shape (n_cells,)
            ``sum_i W[i, u]^2`` for each cell ``u``.

        Examples
        --------
        >>> prefix(3).column_sq_norms()
        array([3., 2., 1.])
        """
        if scipy.sparse.issparse(self._matrix):
            return np.asarray(self._matrix.multiply(self._matrix).sum(axis=0)).ravel()
        return np.einsum("ij,ij->j", self._matrix, self._matrix)

    def query_stats(self):
        """Per-query ``sq_norms``, ``sums``, ``mins`` and ``maxs`` (a :class:`QueryStats`).

        These are what the frequency oracles' per-query variances need.

        Returns
        -------
        QueryStats
            Arrays of length ``n_queries``: ``sq_norms`` (``||w_i||^2``), ``sums``
            (``w_i . 1``), ``mins`` and ``maxs`` (the extreme entries of each row).

        Raises
        ------
        ValueError
            If the statistics would hold more than ``MAX_QUERY_ENTRIES`` values.

        Examples
        --------
        >>> stats = prefix(3).query_stats()
        >>> stats.sq_norms, stats.mins
        (array([1., 2., 3.]), array([0., 0., 1.]))
        """
        _check_query_entries(self.n_queries, 4, "The per-query statistics", self.name)
        return self._query_stats()

    def _query_stats(self):
        M = self._matrix
        if scipy.sparse.issparse(M):
            sq = np.asarray(M.multiply(M).sum(axis=1)).ravel()
            sums = np.asarray(M.sum(axis=1)).ravel()
            mins = M.min(axis=1).toarray().ravel()
            maxs = M.max(axis=1).toarray().ravel()
            return QueryStats(sq, sums, mins, maxs)
        return QueryStats(np.einsum("ij,ij->i", M, M), M.sum(axis=1), M.min(axis=1),
                          M.max(axis=1))

    def intervals(self):
        """``(lo, hi)`` int64 arrays if every query is a 0/1 interval of the flat order, else
        None (range mechanisms answer and score such workloads in ``O(log n)`` a query).

        Returns
        -------
        tuple of (ndarray of shape (n_queries,), ndarray of shape (n_queries,)) or None
            The first and last cell (inclusive) of each query, or None when the workload is
            not known to be a list of intervals (an explicit matrix is never inspected).

        Examples
        --------
        >>> ranges(5, [(0, 1), (2, 4)]).intervals()
        (array([0, 2]), array([1, 4]))
        """
        return None

    def toarray(self):
        """The dense ``p x n`` matrix, refused past ``2**27`` entries.

        Returns
        -------
        ndarray of shape (n_queries, n_cells)
            A new float array (changing it does not change the workload).

        Raises
        ------
        ValueError
            If the matrix would have more than ``2**27`` entries.

        Examples
        --------
        >>> histogram(2).toarray()
        array([[1., 0.],
               [0., 1.]])
        """
        check_dense_entries(
            self.n_queries, self.n_cells, f"The {self.name!r} workload",
            "Use it as an operator (W @ x, W.gram(), W.query_stats()) or ask for fewer "
            "queries.")
        return self._dense()

    def _dense(self):
        if scipy.sparse.issparse(self._matrix):
            return self._matrix.toarray()
        return self._matrix.copy()

    def row_blocks(self, max_entries=2**22):
        """Iterate ``(rows, dense block)`` over consecutive row slices of about
        ``max_entries`` entries each (for computations that need the rows themselves).

        Parameters
        ----------
        max_entries : int, default=2**22
            The number of matrix entries per block (at least one row per block).

        Yields
        ------
        rows : slice
            The query rows of the block.
        block : ndarray of shape (rows.stop - rows.start, n_cells)
            Those rows of the matrix, dense.

        Examples
        --------
        >>> [rows for rows, block in prefix(4).row_blocks(max_entries=8)]
        [slice(0, 2, None), slice(2, 4, None)]
        """
        size = max(1, max_entries // self.n_cells)
        for start in range(0, self.n_queries, size):
            rows = slice(start, min(start + size, self.n_queries))
            yield rows, self._dense_rows(rows)

    def _dense_rows(self, rows):
        """Dense rows ``rows`` (a slice) of the matrix."""
        block = self._matrix[rows]
        return block.toarray() if scipy.sparse.issparse(block) else np.array(block)

    def aslinearoperator(self):
        """The workload as a :class:`scipy.sparse.linalg.LinearOperator`.

        Returns
        -------
        scipy.sparse.linalg.LinearOperator
            A ``p x n`` float operator whose products call :meth:`matvec` and
            :meth:`rmatvec` (no dense matrix is formed).

        Examples
        --------
        >>> prefix(3).aslinearoperator().matvec([1.0, 1.0, 1.0])
        array([1., 2., 3.])
        """
        return scipy.sparse.linalg.LinearOperator(
            self.shape, matvec=self.matvec, rmatvec=self.rmatvec, matmat=self.matvec,
            rmatmat=self.rmatvec, dtype=float)

    def check_width(self, n_cells):
        """Raise a ValueError unless the workload has ``n_cells`` columns.

        Parameters
        ----------
        n_cells : int
            The number of cells of the domain the workload is used with.

        Raises
        ------
        ValueError
            If the workload's number of columns differs from ``n_cells``.

        Examples
        --------
        >>> Workload([[1, 0, 1]]).check_width(3)
        """
        if self.n_cells != n_cells:
            raise ValueError(
                f"The workload {self.name!r} has {self.n_cells} columns but the domain has "
                f"{n_cells} cells."
            )

    # ------------------------------------------------------------------ serialization
    def to_spec(self):
        """``(spec, arrays)``: a JSON-able description and the arrays it refers to, from
        which :func:`workload_from_spec` rebuilds the workload (no pickles).

        Returns
        -------
        spec : dict
            JSON-able: the workload's kind, sizes and name (and those of its parts).
        arrays : dict of str to ndarray
            The arrays the spec refers to (matrix entries, interval bounds, custom labels);
            empty for the closed-form kinds.

        Examples
        --------
        >>> prefix(3).to_spec()
        ({'kind': 'prefix', 'n': 3, 'name': 'prefix'}, {})
        """
        spec, arrays = self._spec()
        spec["name"] = self.name
        if self._labels_are_custom():
            arrays = dict(arrays)
            arrays["labels"] = np.asarray(self.labels, dtype=str)
        return spec, arrays

    def _spec(self):
        if scipy.sparse.issparse(self._matrix):
            M = self._matrix
            return ({"kind": "sparse", "shape": list(M.shape)},
                    {"data": M.data, "indices": M.indices, "indptr": M.indptr})
        return {"kind": "matrix"}, {"matrix": self._matrix}

    def _labels_are_custom(self):
        """Whether the labels were given (not derivable from the structure)."""
        return type(self) in (Workload, MatrixWorkload) and self._labels is not None

    def __len__(self):
        return self.n_queries

    def __repr__(self):
        domain = "" if self._domain is None else f", domain={self._domain!r}"
        return (
            f"{type(self).__name__}(name={self.name!r}, n_queries={self.n_queries}, "
            f"n_cells={self.n_cells}{domain})"
        )


class MatrixWorkload(Workload):
    """An explicit query matrix (dense or sparse): the same as ``Workload(matrix, ...)``.

    Parameters
    ----------
    matrix : array-like or scipy sparse matrix of shape (p, n)
        One row per query, one column per domain cell (flat-index order). A 1-D array is one
        query. Must be finite. Sparse input stays sparse.
    labels : sequence of str, optional
        One unique label per query. Default ``"q0", ..., "q{p-1}"``.
    domain : Domain, mapping or int, optional
        The domain the queries range over; ``n`` must equal its number of cells.
    name : str, default="custom"
        A short name of the workload family.

    See Also
    --------
    custom : The builder of explicit workloads.
    Workload : The base class, which accepts the same arguments.

    Examples
    --------
    >>> W = MatrixWorkload([[1, 0, 1]], labels=["odd cells"])
    >>> W @ [1, 2, 3]
    array([4.])
    """


# ---------------------------------------------------------------------- structured classes
class _Structured(Workload):
    """Base of the structured workloads (no stored matrix)."""

    def _make_gram(self):
        return _gram.WorkloadGram(self)

    def _dense(self):
        return self._matvec(np.eye(self.n_cells))

    def _dense_rows(self, rows):
        return self._dense_block(rows)

    def _dense_block(self, rows):
        selector = np.zeros((self.n_queries, rows.stop - rows.start))
        selector[np.arange(rows.start, rows.stop), np.arange(rows.stop - rows.start)] = 1.0
        return self._rmatvec(selector).T

    def column_sq_norms(self):
        raise NotImplementedError

    def _query_stats(self):
        parts = []
        for _rows, block in self.row_blocks():
            parts.append(QueryStats(np.einsum("ij,ij->i", block, block), block.sum(axis=1),
                                    block.min(axis=1), block.max(axis=1)))
        return QueryStats.concatenate(parts)


def _single_column_values(domain):
    """Category strings of a one-column domain, else None (labels then use flat indices)."""
    if domain is not None and domain.n_columns == 1:
        return domain.columns[0], _strings(domain.categories[domain.columns[0]])
    return None


class Identity(_Structured):
    """The histogram: one count per cell (``I``, ``n x n``).

    Parameters
    ----------
    n_cells : int
        The number of domain cells (the keyword ``n`` is its deprecated spelling).
    domain : Domain, mapping or int, optional
        The domain (its size must be ``n_cells``); the labels are its cell labels.
    name : str, default="histogram"
        A short name of the workload family.

    See Also
    --------
    histogram : The builder of this workload from a domain.

    Examples
    --------
    >>> W = Identity(3)
    >>> W @ [5, 6, 7]
    array([5., 6., 7.])
    >>> W.labels.tolist()
    ['x=0', 'x=1', 'x=2']
    """

    @_renamed_keyword("n", "n_cells")
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

    def _spec(self):
        return {"kind": "histogram", "n": self.n_cells}, {}


class Total(_Structured):
    """One query: the number of users (a row of ones).

    Parameters
    ----------
    n_cells : int
        The number of domain cells (the keyword ``n`` is its deprecated spelling).
    domain : Domain, mapping or int, optional
        The domain (its size must be ``n_cells``).
    name : str, default="total"
        A short name of the workload family.

    See Also
    --------
    total : The builder of this workload from a domain.

    Examples
    --------
    >>> Total(3) @ [1, 2, 3]
    array([6.])
    """

    @_renamed_keyword("n", "n_cells")
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

    def _spec(self):
        return {"kind": "total", "n": self.n_cells}, {}


class Prefix(_Structured):
    """Prefix sums (a CDF): row ``i`` counts cells ``0..i`` (lower-triangular ones).

    Parameters
    ----------
    n_cells : int
        The number of domain cells (the keyword ``n`` is its deprecated spelling).
    domain : Domain, mapping or int, optional
        The domain (its size must be ``n_cells``); a one-column domain labels the queries with
        its categories.
    name : str, default="prefix"
        A short name of the workload family.

    See Also
    --------
    prefix : The builder of this workload from a domain.

    Examples
    --------
    >>> Prefix(3).toarray()
    array([[1., 0., 0.],
           [1., 1., 0.],
           [1., 1., 1.]])
    """

    @_renamed_keyword("n", "n_cells")
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

    def _spec(self):
        return {"kind": "prefix", "n": self.n_cells}, {}


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
        The number of domain cells (the keyword ``n`` is its deprecated spelling).
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

    @_renamed_keyword("n", "n_cells")
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


class AllRange(_IntervalFamily):
    """All ``n (n + 1) / 2`` intervals ``[i, j]``, ordered by ``i`` then ``j``; never listed
    unless asked (its Gram ``(min(i, j) + 1) (n - max(i, j))`` is a closed form).

    Parameters
    ----------
    n_cells : int
        The number of domain cells (the keyword ``n`` is its deprecated spelling).
    domain : Domain, mapping or int, optional
        The domain (its size must be ``n_cells``).
    name : str, default="all_range"
        A short name of the workload family.

    See Also
    --------
    all_range : The builder of this workload from a domain.
    Intervals : Chosen intervals only.

    Examples
    --------
    >>> W = AllRange(3)
    >>> W.n_queries
    6
    >>> W @ [1, 2, 3]
    array([1., 3., 6., 2., 5., 3.])
    """

    @_renamed_keyword("n", "n_cells")
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

    def _spec(self):
        return {"kind": "all_range", "n": self.n_cells}, {}


class Kron(_Structured):
    """Kronecker product of per-attribute factor workloads (first factor slowest).

    Answers by reshaping the data vector to the domain shape and applying each factor along
    its axis; the Gram is the Kronecker product of the factors' Grams.

    Parameters
    ----------
    factors : sequence of Workload or array-like
        One workload per domain column, over that column's cells.
    domain : Domain, mapping or int, optional
        The product domain (its size must be the product of the factors' widths).
    name : str, default="kron"
        A short name of the workload family.

    See Also
    --------
    kron : The builder of this workload.
    marginals : Kronecker products of identities and totals.

    Examples
    --------
    >>> W = Kron([Identity(2), Total(3)])
    >>> W @ [1, 2, 3, 4, 5, 6]
    array([ 6., 15.])
    """

    _allocates_cells = False

    def __init__(self, factors, domain=None, name="kron"):
        _check_terms(factors, "factors", name)
        self.factors = _as_terms(factors, "factors", name)
        if not self.factors:
            raise ValueError("kron needs at least one factor workload.")
        self._setup(math.prod(f.n_queries for f in self.factors),
                    math.prod(f.n_cells for f in self.factors), domain, name)

    def _apply(self, X, method, sizes_in, sizes_out):
        k = X.shape[1]
        result = X.reshape(*sizes_in, k)
        for axis, factor in enumerate(self.factors):
            moved = np.moveaxis(result, axis, 0)
            rest = moved.shape[1:]
            applied = getattr(factor, method)(moved.reshape(sizes_in[axis], -1))
            result = np.moveaxis(applied.reshape(sizes_out[axis], *rest), 0, axis)
            sizes_in = sizes_in[:axis] + [sizes_out[axis]] + sizes_in[axis + 1:]
        return result.reshape(-1, k)

    def _matvec(self, X):
        return self._apply(X, "_matvec", [f.n_cells for f in self.factors],
                           [f.n_queries for f in self.factors])

    def _rmatvec(self, Y):
        return self._apply(Y, "_rmatvec", [f.n_queries for f in self.factors],
                           [f.n_cells for f in self.factors])

    def _make_gram(self):
        return _gram.KronGram([f.gram() for f in self.factors])

    def column_sq_norms(self):
        result = np.ones(1)
        for factor in self.factors:
            result = np.kron(result, factor.column_sq_norms())
        return result

    def _query_stats(self):
        stats = [f.query_stats() for f in self.factors]
        sq, sums = np.ones(1), np.ones(1)
        low, high = np.ones(1), np.ones(1)
        for s in stats:
            sq, sums = np.kron(sq, s.sq_norms), np.kron(sums, s.sums)
            # Every product of one entry per factor occurs in the row, so the extremes of a
            # product of intervals are the row's extremes.
            corners = np.stack([np.kron(low, s.mins), np.kron(low, s.maxs),
                                np.kron(high, s.mins), np.kron(high, s.maxs)])
            low, high = corners.min(axis=0), corners.max(axis=0)
        return QueryStats(sq, sums, low, high)

    def intervals(self):
        # Over a single attribute (the others summed out) a query is an interval of the flat
        # order only when every other factor is the total of a one-cell axis; keep it simple.
        if len(self.factors) == 1:
            return self.factors[0].intervals()
        return None

    def _make_labels(self):
        parts = [np.asarray(f.labels, dtype=object) for f in self.factors
                 if not isinstance(f, Total)]
        if not parts:
            return ["total"]
        return _product_strings(parts, " & ")

    def _spec(self):
        children, arrays = [], {}
        for i, factor in enumerate(self.factors):
            spec, child_arrays = factor.to_spec()
            children.append(spec)
            arrays.update({f"{i}.{key}": value for key, value in child_arrays.items()})
        return {"kind": "kron", "factors": children}, arrays


class Stack(_Structured):
    """A (weighted) union of workloads over the same cells: their rows one after another.

    The Gram is ``sum_k w_k^2 G_k``, so a weighted union tells an optimizer or a selection
    which queries matter more.

    Parameters
    ----------
    blocks : sequence of Workload or array-like
        Workloads with the same number of cells.
    weights : array-like of float, optional
        A finite positive weight per workload (default 1): its rows are multiplied by it.
    domain : Domain, mapping or int, optional
        The common domain.
    name : str, default="stack"
        A short name of the workload family.

    See Also
    --------
    stack : The builder of this workload (it also checks the labels for repeats).

    Examples
    --------
    >>> W = Stack([Total(3), Identity(3)], weights=[2, 1])
    >>> W.labels.tolist()
    ['total', 'x=0', 'x=1', 'x=2']
    >>> W @ [1, 2, 3]
    array([12.,  1.,  2.,  3.])
    """

    _allocates_cells = False

    def __init__(self, blocks, weights=None, domain=None, name="stack"):
        _check_terms(blocks, "blocks", name)
        self.blocks = _as_terms(blocks, "blocks", name)
        if not self.blocks:
            raise ValueError("stack needs at least one workload.")
        if weights is None:
            weights = np.ones(len(self.blocks))
        weights = np.asarray(weights, dtype=float).ravel()
        if weights.shape[0] != len(self.blocks) or not np.all(np.isfinite(weights)) or np.any(
                weights <= 0):
            raise ValueError(f"stack: weights must be {len(self.blocks)} finite positive "
                             f"numbers (one per workload), got {weights.tolist()!r}.")
        self.weights = weights
        n_cells = _check_same_width(self.blocks)
        self._offsets = np.cumsum([0] + [b.n_queries for b in self.blocks])
        self._setup(int(self._offsets[-1]), n_cells, domain, name)

    def _matvec(self, X):
        return np.concatenate([w * b._matvec(X) for w, b in zip(self.weights, self.blocks,
                                                                   strict=True)])

    def _rmatvec(self, Y):
        result = np.zeros((self.n_cells, Y.shape[1]))
        for i, (w, b) in enumerate(zip(self.weights, self.blocks, strict=True)):
            result += w * b._rmatvec(Y[self._offsets[i]:self._offsets[i + 1]])
        return result

    def _make_gram(self):
        terms = []
        for w, b in zip(self.weights, self.blocks, strict=True):
            g = b.gram()
            terms.append(g if w == 1.0 else _gram.ScaledGram(g, w * w))
        return terms[0] if len(terms) == 1 else _gram.SumGram(terms)

    def column_sq_norms(self):
        return sum(w * w * b.column_sq_norms() for w, b in zip(self.weights, self.blocks,
                                                               strict=True))

    def _query_stats(self):
        return QueryStats.concatenate([b.query_stats().scaled(w) for w, b in
                                       zip(self.weights, self.blocks, strict=True)])

    def intervals(self):
        if np.any(self.weights != 1.0):
            return None
        parts = [b.intervals() for b in self.blocks]
        if any(p is None for p in parts):
            return None
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    def _make_labels(self):
        return [label for b in self.blocks for label in b.labels]

    def _spec(self):
        children, arrays = [], {}
        for i, block in enumerate(self.blocks):
            spec, child_arrays = block.to_spec()
            children.append(spec)
            arrays.update({f"{i}.{key}": value for key, value in child_arrays.items()})
        return {"kind": "stack", "blocks": children, "weights": self.weights.tolist()}, arrays


def _check_same_width(blocks):
    """The common number of cells of ``blocks``, or a ValueError naming the first misfit."""
    n_cells = blocks[0].n_cells
    for i, w in enumerate(blocks[1:], start=1):
        if w.n_cells != n_cells:
            raise ValueError(
                f"Cannot stack workloads of different widths: workload 0 ({blocks[0].name!r}) "
                f"has {n_cells} columns but workload {i} ({w.name!r}) has {w.n_cells}."
            )
    return n_cells


class Parity(_Structured):
    """Parity queries ``(-1)^popcount(mask & u)`` over the ``d`` bits of the flat index,
    answered by one fast Walsh-Hadamard transform (``O(n log n)``).

    Parameters
    ----------
    n_cells : int
        The number of domain cells, ``2**d`` (the keyword ``n`` is its deprecated spelling).
    masks : array-like of int
        One bit mask per query, in ``[1, n_cells)``: the attributes whose parity it takes.
    bit_names : sequence of str
        The ``d`` attribute names, most significant bit first (used in the labels).
    domain : Domain, mapping or int, optional
        The domain (its size must be ``n_cells``).
    name : str, default="parity"
        A short name of the workload family.

    Raises
    ------
    ValueError
        If ``n`` is not ``2 ** len(bit_names)``, ``bit_names`` is not a sequence of strings,
        or ``masks`` is not a non-empty 1-D array of integers in ``[1, n)`` (mask 0 would be
        the total, not a parity; a mask ``>= n`` names bits the domain does not have).

    See Also
    --------
    parity : The builder of this workload from a binary domain.

    Examples
    --------
    >>> W = Parity(4, masks=[2, 1, 3], bit_names=["a", "b"])
    >>> W.labels.tolist()
    ['parity(a)', 'parity(b)', 'parity(a, b)']
    >>> W @ [1, 0, 0, 0]
    array([1., 1., 1.])
    """

    @_renamed_keyword("n", "n_cells")
    def __init__(self, n_cells, masks, bit_names, domain=None, name="parity"):
        # The one validation of parity workloads: direct construction and spec loading
        # (_from_spec, which reads these from a possibly tampered file) both go through it.
        n = check_positive_int(n_cells, "Parity: n_cells")
        if isinstance(bit_names, str | bytes | dict | set | frozenset) or not hasattr(
                bit_names, "__iter__"):
            raise ValueError(f"Parity: bit_names must be a sequence of strings (one per bit, "
                             f"most significant first), got {bit_names!r:.80}.")
        bit_names = list(bit_names)
        if not all(isinstance(b, str) for b in bit_names):
            raise ValueError(f"Parity: bit_names must be strings, got {_shorten(bit_names)}.")
        if n != 2 ** len(bit_names):
            raise ValueError(f"Parity: n = {n} cells must be 2 ** len(bit_names) (one bit name "
                             f"per bit of the flat index), got {len(bit_names)} bit_names "
                             f"{_shorten(bit_names)}.")
        masks = np.asarray(masks)
        if masks.ndim != 1 or masks.size == 0 or masks.dtype.kind not in "iu":
            raise ValueError(f"Parity: masks must be a non-empty 1-D array of integers, got "
                             f"{masks!r}.")
        bad = (masks < 1) | (masks >= n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Parity: masks must be integers in [1, {n}) (a non-empty set of the "
                f"{len(bit_names)} bits; 0 would be the total); masks[{i}] is {masks[i]} "
                f"({int(bad.sum())} such masks).")
        self.masks = masks.astype(np.int64)
        self.bit_names = bit_names
        self._setup(self.masks.shape[0], n, domain, name)

    def _matvec(self, X):
        return fwht(X, axis=0)[self.masks]

    def _rmatvec(self, Y):
        spread = np.zeros((self.n_cells, Y.shape[1]))
        np.add.at(spread, self.masks, Y)
        return fwht(spread, axis=0)  # H is symmetric

    def column_sq_norms(self):
        return np.full(self.n_cells, float(self.n_queries))

    def _query_stats(self):
        return _broadcast_stats(self.n_queries, self.n_cells, 0.0, -1.0, 1.0)

    def _make_labels(self):
        d = len(self.bit_names)
        return ["parity(" + ", ".join(self.bit_names[j] for j in range(d)
                                      if (int(m) >> (d - 1 - j)) & 1) + ")"
                for m in self.masks]

    def _spec(self):
        return ({"kind": "parity", "n": self.n_cells, "bit_names": self.bit_names},
                {"masks": self.masks})


# ---------------------------------------------------------------------- coercion, algebra
@refuse_deep_nesting
def as_workload(obj, domain=None):
    """Coerce ``obj`` to a :class:`Workload`.

    Parameters
    ----------
    obj : Workload, array-like or scipy sparse matrix
        A Workload is returned as is; a 2-D array-like becomes a custom workload (sparse
        input stays sparse); a 1-D array-like is a single query.
    domain : Domain, mapping or int, optional
        If given, the workload's width must equal the domain size.

    Returns
    -------
    Workload
        ``obj`` itself if it is a Workload, else a custom workload wrapping the matrix.

    Raises
    ------
    ValueError
        If ``obj`` is not numeric, not 1-D or 2-D, or of the wrong width for ``domain``.

    See Also
    --------
    custom : Build a labelled workload from an explicit matrix.

    Examples
    --------
    >>> as_workload([1, 0, 1]).n_queries
    1
    """
    if isinstance(obj, Workload):
        if domain is not None:
            obj.check_width(as_domain(domain).size)
        return obj
    if isinstance(obj, (str, bytes)) or obj is None or isinstance(obj, dict):
        raise ValueError(
            f"Expected a Workload or a query matrix (2-D array-like), got {describe(obj)}."
        )
    if not scipy.sparse.issparse(obj):
        given = obj
        try:
            obj = np.asarray(obj, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"Expected a Workload or a numeric query matrix (2-D array-like), got "
                f"{describe(given)}: {exc}"
            ) from None
        if obj.ndim not in (1, 2):
            raise ValueError(
                f"A query matrix must be 1-D (one query) or 2-D, got {obj.ndim} dimensions "
                f"({describe(given)})."
            )
    return Workload(obj, domain=domain)


def _common_domain(workloads):
    domains = [w.domain for w in workloads if w.domain is not None]
    for d in domains[1:]:
        if d != domains[0]:
            raise ValueError(
                f"Cannot stack workloads over different domains: {domains[0]!r} and {d!r}."
            )
    return domains[0] if domains else None


@refuse_deep_nesting
def stack(workloads, name=None, weights=None):
    """Vertical union of workloads over the same domain (optionally weighted).

    Parameters
    ----------
    workloads : sequence of Workload or array-like
        Workloads with the same number of cells; their labels must stay unique.
    name : str, optional
        Default: the names joined by ``"+"``.
    weights : sequence of float, optional
        A positive weight per workload (default 1): its rows are multiplied by it, so its
        queries count ``weight^2`` times more in every squared error.

    Returns
    -------
    Workload
        A :class:`Stack`: the rows of every workload, one workload after another.

    See Also
    --------
    Stack : The class of the result.
    kron : The Kronecker product of workloads.

    Examples
    --------
    >>> W = stack([histogram(3), prefix(3)])
    >>> W.n_queries, W.name
    (6, 'histogram+prefix')
    """
    _check_terms(workloads, "workloads", "stack")
    workloads = _as_terms(workloads, "workloads", "stack")
    if not workloads:
        raise ValueError("stack needs at least one workload.")
    _check_same_width(workloads)
    if name is None:
        name = "+".join(w.name for w in workloads)
    result = Stack(workloads, weights=weights, domain=_common_domain(workloads), name=name)
    if result.n_queries <= EAGER_LABEL_CHECK:
        result.labels  # noqa: B018 -- repeated labels are an error here, not at first use
    return result


@refuse_deep_nesting
def kron(factors, domain=None, name="kron"):
    """Kronecker product of per-attribute workloads (first factor slowest).

    Parameters
    ----------
    factors : sequence of Workload or array-like
        One workload per domain column, over that column's categories.
    domain : Domain, mapping or int, optional
        The product domain (its shape must match the factors' widths).
    name : str, default="kron"
        A short name of the workload family.

    Returns
    -------
    Workload
        A :class:`Kron` of ``prod(p_i)`` queries over ``prod(n_i)`` cells.

    See Also
    --------
    Kron : The class of the result.
    stack : The union of workloads.
    marginals : Kronecker products of identities and totals, one per attribute subset.

    Examples
    --------
    >>> W = kron([prefix(3), total(2)])
    >>> W @ [1, 1, 2, 2, 3, 3]
    array([ 2.,  6., 12.])
    """
    return Kron(factors, domain=domain, name=name)


# ---------------------------------------------------------------------- helpers
def _strings(values):
    """Category values as an object array of str."""
    return np.array([str(v) for v in values], dtype=object)


def _range_strings(name, categories, lo, hi):
    """Labels ``"name in [lo, hi]"`` with category values."""
    text = _strings(categories)
    return name + " in [" + text[lo] + ", " + text[hi] + "]"


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
def _subsets(domain, k, attributes, what, default_k=None):
    """Attribute subsets (tuples in domain column order) from ``k`` or ``attributes``."""
    if k is None and attributes is None:
        k = default_k
    if (k is None) == (attributes is None):
        raise ValueError(f"{what}: give exactly one of k or attributes.")
    columns = domain.columns
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not (
            0 <= k <= len(columns)
        ):
            raise ValueError(
                f"{what}: k must be an integer in [0, {len(columns)}] (the number of domain "
                f"columns), got {k!r}."
            )
        _check_subset_terms(math.comb(len(columns), int(k)), len(columns), what, f"k={k}")
        return list(itertools.combinations(columns, int(k)))
    if isinstance(attributes, str):
        attributes = [attributes]
    if isinstance(attributes, Mapping | bytes) or not hasattr(attributes, "__iter__") \
            or (isinstance(attributes, np.ndarray) and attributes.ndim == 0):
        raise ValueError(f"{what}: attributes must be a list of attribute sets (tuples of "
                         f"column names), got {describe(attributes)}.")
    cap = get_limits()["max_workload_terms"]
    attributes = list(itertools.islice(attributes, cap // len(columns) + 1))
    _check_subset_terms(len(attributes), len(columns), what, "attributes")
    subsets = []
    for subset in attributes:
        subset = (subset,) if isinstance(subset, str) else tuple(subset)
        unknown = [a for a in subset if a not in columns]
        if unknown:
            raise ValueError(
                f"{what}: attributes name unknown column(s) {short_repr(unknown)}; the domain "
                f"columns are {columns!r}."
            )
        if len(set(subset)) != len(subset):
            raise ValueError(f"{what}: the attribute set {subset!r} repeats a column.")
        subsets.append(tuple(c for c in columns if c in subset))
    if not subsets:
        raise ValueError(f"{what}: attributes is empty; give at least one attribute set.")
    return subsets


def _check_subset_terms(n_subsets, n_columns, what, given):
    """Refuse more Kronecker factors (attribute sets x columns) than ``max_workload_terms``,
    before the attribute sets are listed."""
    if n_subsets * n_columns > get_limits()["max_workload_terms"]:
        try:
            check_size(n_subsets * n_columns, f"the Kronecker factors ({given}: {n_subsets} "
                       f"attribute sets x {n_columns} columns)", "max_workload_terms", what)
        except ValueError as exc:
            raise ValueError(
                f"{exc} Every marginal up to an order comes without a workload from a "
                "marginal strategy (LDPEncoder(strategy='inp_ht', max_order=...) and "
                "MarginalEstimator).") from None


def _column_domain(domain, column):
    return Domain({column: domain.categories[column]})


def _kron_workload(domain, subsets, factor, name):
    """Stack, per subset S, the Kronecker product of ``factor(a)`` (a in S) or a total.

    The factors of a column are built once and shared by every block (workloads are
    immutable): building them per subset cost a millisecond per block.
    """
    shape = dict(zip(domain.columns, domain.shape, strict=True))
    inside = {a: factor(a) for a in {a for subset in subsets for a in subset}}
    outside = {a: Total(n_a) for a, n_a in shape.items()}
    blocks = []
    for subset in subsets:
        factors = [inside[a] if a in subset else outside[a] for a in shape]
        blocks.append(Kron(factors, domain=domain, name=name))
    if len(blocks) == 1:
        return blocks[0]
    return Stack(blocks, domain=domain, name=name)


# ---------------------------------------------------------------------- builders
@refuse_deep_nesting
def histogram(domain):
    """The identity workload: one count per cell.

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.

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
    domain = as_domain(domain)
    return Identity(domain.size, domain=domain)


@refuse_deep_nesting
def total(domain):
    """One query: the number of users (a row of ones).

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.

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
    domain = as_domain(domain)
    return Total(domain.size, domain=domain)


@refuse_deep_nesting
def prefix(domain):
    """Prefix sums (a CDF): row ``i`` counts cells ``0..i`` of the flat order.

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.

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
    domain = as_domain(domain)
    return Prefix(domain.size, domain=domain)


@refuse_deep_nesting
def all_range(domain):
    """All range queries ``[i, j]``, ``0 <= i <= j < n``, over the flat order.

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.

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
    domain = as_domain(domain)
    return AllRange(domain.size, domain=domain)
@refuse_deep_nesting
def ranges(domain, intervals):
    """Chosen range queries: closed intervals over the flat order.

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.
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


@refuse_deep_nesting
def marginals(domain, k=None, attributes=None):
    """Marginal counts over attribute subsets.

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.
    k : int, optional
        All subsets of ``k`` columns (``itertools.combinations`` order); ``k=0`` is the total.
    attributes : sequence of (tuple of str or str), optional
        Explicit subsets; a single str means a one-column subset. Exactly one of ``k`` and
        ``attributes`` must be given.

    Returns
    -------
    Workload
        For each subset S, the Kronecker product over the domain columns of the identity
        (column in S) or a row of ones (column not in S), answered by reshaping and summing.
        Labels ``"age=<30 & smoker=no"``, ``"total"`` for the empty subset.

    See Also
    --------
    range_marginals : Ranges of each attribute instead of single values.
    histogram : The marginal over all columns.
    sklearn_ldp.MarginalEstimator : Estimates marginals from LDP reports.

    Examples
    --------
    >>> dom = {"age": ["<30", ">=30"], "smoker": ["no", "yes"]}
    >>> W = marginals(dom, attributes=["smoker"])
    >>> W.labels.tolist()
    ['smoker=no', 'smoker=yes']
    >>> W.toarray()
    array([[1., 0., 1., 0.],
           [0., 1., 0., 1.]])
    """
    domain = as_domain(domain)
    subsets = _subsets(domain, k, attributes, "marginals")

    def factor(a):
        return Identity(len(domain.categories[a]), domain=_column_domain(domain, a))

    return _kron_workload(domain, subsets, factor, "marginals")


@refuse_deep_nesting
def range_marginals(domain, k=None, attributes=None):
    """Range marginals: all ranges of each attribute in a subset, crossed.

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.
    k : int, optional
        All subsets of ``k`` columns. Default 1 when ``attributes`` is not given.
    attributes : sequence of (tuple of str or str), optional
        Explicit subsets (a single str means a one-column subset).

    Returns
    -------
    Workload
        Like :func:`marginals`, with each column in the subset contributing all its range
        queries (:func:`all_range` of that column) instead of the identity. Labels
        ``"age in [<30, 30-50] & smoker in [no, no]"``.

    See Also
    --------
    marginals : Single values of each attribute instead of ranges.
    all_range : Every range of the flat order.

    Examples
    --------
    >>> W = range_marginals({"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]})
    >>> W.n_queries
    9
    >>> W.labels[1]
    'age in [<30, 30-50]'
    """
    domain = as_domain(domain)
    subsets = _subsets(domain, k, attributes, "range_marginals", default_k=1)

    def factor(a):
        return AllRange(len(domain.categories[a]), domain=_column_domain(domain, a))

    return _kron_workload(domain, subsets, factor, "range_marginals")


@refuse_deep_nesting
def parity(domain, k=None):
    """Parity queries over binary attributes (Fourier / Hadamard characters).

    Parameters
    ----------
    domain : Domain, mapping or int
        Every column must have exactly 2 categories, or an int ``n`` that is a power of two
        (the attributes are then the bits of the flat index).
    k : int, optional
        Largest subset size; default all ``d`` attributes.

    Returns
    -------
    Workload
        For every subset S of attributes with ``1 <= |S| <= k`` (by size, then
        ``itertools.combinations`` order), the row ``(-1)^popcount(mask(S) & u)`` over flat
        indices ``u``, where attribute ``j`` is bit ``d-1-j`` of ``u`` (first column = most
        significant bit), answered by a fast Walsh-Hadamard transform. Labels
        ``"parity(age, smoker)"``; for an int domain the attributes are named ``bit{i}``
        after their place value ``2**i``.

    See Also
    --------
    marginals : Marginal counts; on binary attributes the ``k``-way marginals are linear
        combinations of the total and the parities of at most ``k`` attributes.
    Parity : The class of the result.

    Examples
    --------
    >>> parity({"a": [0, 1], "b": [0, 1]}).toarray()
    array([[ 1.,  1., -1., -1.],
           [ 1., -1.,  1., -1.],
           [ 1., -1., -1.,  1.]])
    """
    if isinstance(domain, numbers.Integral) and not isinstance(domain, bool):
        n = check_positive_int(domain, "domain (a number of cells)", minimum=2)
        if not is_power_of_two(n):
            raise ValueError(
                f"parity: an int domain must be a power of two (bits of the flat index), "
                f"got {n}."
            )
        d = n.bit_length() - 1
        names = [f"bit{d - 1 - j}" for j in range(d)]
        domain = Domain.from_size(n)
    else:
        domain = as_domain(domain)
        not_binary = [c for c, s in zip(domain.columns, domain.shape, strict=True) if s != 2]
        if not_binary:
            raise ValueError(
                f"parity needs binary attributes (exactly 2 categories each); column(s) "
                f"{not_binary!r} are not binary. Use marginals(...) for non-binary attributes."
            )
        d = domain.n_columns
        names = list(domain.columns)
        n = domain.size
    if k is None:
        k = d
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= d:
        raise ValueError(f"parity: k must be an integer in [1, {d}], got {k!r}.")
    n_subsets = sum(math.comb(d, size) for size in range(1, k + 1))
    _check_query_entries(n_subsets, 1, "The query list", "parity")
    masks = np.array([sum(1 << (d - 1 - j) for j in s) for size in range(1, k + 1)
                      for s in itertools.combinations(range(d), size)], dtype=np.int64)
    return Parity(n, masks, names, domain=domain)
@refuse_deep_nesting
def from_predicates(domain, predicates):
    """Counting queries defined by predicates over the domain cells.

    Parameters
    ----------
    domain : Domain, mapping or int
        The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
        or an int number of cells.
    predicates : dict or list
        ``{label: predicate}`` or a list of predicates (labelled by the expression string, or
        ``"q{i}"`` for callables). A predicate is a pandas expression string evaluated with
        ``domain.cells().eval(expr)`` (e.g. ``"age == '<30' and smoker == 'yes'"``), or a
        callable taking the cells DataFrame (it must not modify it) and returning a boolean
        mask of length ``n``.

    Returns
    -------
    Workload
        One 0/1 row per predicate, stored sparse.

    See Also
    --------
    custom : A workload from an explicit matrix.
    sklearn_ldp.domain.Domain.cells : The cells DataFrame the predicates are evaluated on.

    Examples
    --------
    >>> dom = {"age": [20, 40, 60], "smoker": ["no", "yes"]}
    >>> W = from_predicates(dom, {"young smokers": "age < 30 and smoker == 'yes'",
    ...                           "60+": lambda c: c["age"] >= 60})
    >>> W.toarray()
    array([[0., 1., 0., 0., 0., 0.],
           [0., 0., 0., 0., 1., 1.]])
    """
    domain = as_domain(domain)
    if isinstance(predicates, dict):
        items = [(str(label), pred) for label, pred in predicates.items()]
    elif isinstance(predicates, (str, bytes)) or callable(predicates) \
            or not hasattr(predicates, "__iter__") \
            or (isinstance(predicates, np.ndarray) and predicates.ndim == 0):
        raise ValueError(f"predicates must be a dict label -> predicate or a list of "
                         f"predicates, got {describe(predicates)}.")
    else:
        items = [
            (pred if isinstance(pred, str) else f"q{i}", pred)
            for i, pred in enumerate(predicates)
        ]
    if not items:
        raise ValueError("from_predicates: no predicates were given.")
    n = domain.size
    # One dense mask of n cells per predicate: refused before the cells are enumerated.
    check_size(len(items) * n, f"the entries of the masks ({len(items)} predicates x {n} "
               "cells)", "max_matrix_entries", "from_predicates")
    cells = domain.cells()
    rows = []
    for label, pred in items:
        if isinstance(pred, str):
            try:
                mask = cells.eval(pred)
            except Exception as exc:
                raise ValueError(
                    f"Predicate {label!r} could not be evaluated over the domain columns "
                    f"{domain.columns!r}: {type(exc).__name__}: {exc}"
                ) from exc
        elif callable(pred):
            try:
                mask = pred(cells)
            except Exception as exc:
                raise ValueError(
                    f"Predicate {label!r} raised {type(exc).__name__}: {exc}"
                ) from exc
        else:
            raise ValueError(
                f"Predicate {label!r} must be an expression string or a callable, got "
                f"{type(pred).__name__}."
            )
        if isinstance(mask, (pd.Series, pd.Index)) and pd.api.types.is_bool_dtype(mask.dtype):
            if mask.isna().any():
                raise ValueError(
                    f"Predicate {label!r} gave missing values instead of True/False."
                )
            mask = mask.to_numpy(dtype=bool)
        try:
            mask = np.asarray(mask)
        except (TypeError, ValueError):
            mask = None
        if mask is None or mask.dtype != bool or mask.shape != (n,):
            got = "an unreadable result" if mask is None else (
                f"dtype {mask.dtype}, shape {mask.shape}"
            )
            raise ValueError(
                f"Predicate {label!r} must give a boolean mask of length {n} (one per cell), "
                f"got {got}."
            )
        rows.append(scipy.sparse.csr_array(mask[np.newaxis, :].astype(float)))
    return Workload(
        scipy.sparse.vstack(rows, format="csr"), labels=[label for label, _ in items],
        domain=domain, name="predicates",
    )


@refuse_deep_nesting
def custom(matrix, domain=None, labels=None):
    """A workload from an explicit query matrix (dense, or scipy sparse kept sparse).

    Parameters
    ----------
    matrix : array-like or scipy sparse matrix of shape (p, n)
        One row per query, one column per domain cell (flat-index order). Must be finite.
    domain : Domain, mapping or int, optional
        The domain the queries range over; ``n`` must equal its number of cells.
    labels : sequence of str, optional
        One unique label per query. Default ``"q0", ..., "q{p-1}"``.

    Returns
    -------
    Workload
        ``Workload(matrix, labels, domain, name="custom")``.

    See Also
    --------
    from_predicates : 0/1 queries defined by predicates over the cells.
    as_workload : Coerce a matrix or a workload to a Workload.

    Examples
    --------
    >>> custom([[1, 0, 1]], labels=["odd cells"]).labels.tolist()
    ['odd cells']
    """
    if domain is not None:
        domain = as_domain(domain)
    return Workload(matrix, labels=labels, domain=domain, name="custom")


# ---------------------------------------------------------------------- serialization
# Structured kinds rebuilt from a spec; sizes are capped (the configurable max_cells of
# sklearn_ldp.deploy.limits) so that a tampered file cannot ask for an unbounded allocation (the
# matrix kinds carry their arrays, already in memory).


def _spec_size(spec, key="n"):
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"workload spec: {key!r} must be a positive integer, got {value!r}.")
    check_size(value, f"workload spec {key!r}", "max_cells")
    return value


def _sub_arrays(arrays, index):
    prefix = f"{index}."
    return {key[len(prefix):]: value for key, value in arrays.items() if key.startswith(prefix)}


def _from_spec(spec, arrays, domain):
    if not isinstance(spec, dict):
        raise ValueError(f"workload spec must be a JSON object, got {type(spec).__name__}.")
    kind = spec.get("kind")
    name = spec.get("name", kind)
    if not isinstance(name, str):
        raise ValueError(f"workload spec: name must be a string, got {name!r}.")
    simple = {"histogram": Identity, "total": Total, "prefix": Prefix, "all_range": AllRange}
    if kind in simple:
        return simple[kind](_spec_size(spec), domain=domain, name=name)
    if kind == "ranges":
        return Intervals(_spec_size(spec), arrays["lo"], arrays["hi"], domain=domain, name=name)
    if kind == "parity":
        n = _spec_size(spec)
        try:  # Parity validates the names and masks (one copy of the rules)
            return Parity(n, arrays["masks"], spec.get("bit_names"), domain=domain,
                          name=name)
        except ValueError as exc:
            raise ValueError(f"workload spec: {exc}") from None
    if kind in ("kron", "stack"):
        key = "factors" if kind == "kron" else "blocks"
        children = spec.get(key)
        if not isinstance(children, list) or not children:
            raise ValueError(f"workload spec: {kind} needs a non-empty list {key!r}.")
        if kind == "stack":
            child_domains = [domain] * len(children)
        elif domain is not None and domain.n_columns == len(children):
            # Marginal-type products: factor i ranges over column i (its labels name it).
            child_domains = [_column_domain(domain, c) for c in domain.columns]
        else:
            child_domains = [None] * len(children)
        parts = [_from_spec(child, _sub_arrays(arrays, i), child_domain)
                 for i, (child, child_domain) in enumerate(zip(children, child_domains,
                                                               strict=True))]
        if kind == "kron":
            return Kron(parts, domain=domain, name=name)
        return Stack(parts, weights=spec.get("weights"), domain=domain, name=name)
    if kind == "matrix":
        return Workload(arrays["matrix"], domain=domain, name=name)
    if kind == "sparse":
        shape = spec.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2):
            raise ValueError("workload spec: sparse needs a shape [p, n].")
        matrix = scipy.sparse.csr_array(
            (arrays["data"], arrays["indices"], arrays["indptr"]),
            shape=(_spec_size({"p": shape[0]}, "p"), _spec_size({"n": shape[1]})))
        matrix.check_format(full_check=True)
        return Workload(matrix, domain=domain, name=name)
    raise ValueError(f"workload spec: unknown kind {kind!r}.")


def workload_from_spec(spec, arrays=None, domain=None):
    """Rebuild a workload from :meth:`Workload.to_spec` output (``spec``, ``arrays``).

    Examples
    --------
    >>> spec, arrays = stack([histogram(4), prefix(4)]).to_spec()
    >>> workload_from_spec(spec, arrays).n_queries
    8
    """
    arrays = {} if arrays is None else dict(arrays)
    labels = arrays.pop("labels", None)
    try:
        workload = _from_spec(spec, arrays, None if domain is None else as_domain(domain))
    except KeyError as exc:
        raise ValueError(f"workload spec: the array {exc} is missing.") from None
    if labels is not None:
        workload._labels = workload._checked_labels(labels)
    return workload
