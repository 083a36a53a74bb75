"""The workload operator: :class:`Workload`, its structured base, per-query statistics and
coercion (:func:`as_workload`).

Every workload family of this package derives from :class:`Workload` and implements its
products (``_matvec`` / ``_rmatvec``), Gram, statistics, labels and spec.
"""

import re
import textwrap

import numpy as np
import pandas as pd
import scipy.sparse
import scipy.sparse.linalg

from .. import _gram
from .._gram import check_dense_entries
from .._validation import MAX_DENSE_ENTRIES, as_float_matrix, describe, refuse_deep_nesting
from ..deploy.limits import check_size
from ..domain import _shorten, as_domain

# Labels are built on first use, one Python string per query: refuse beyond this many.
MAX_LABELS = 2**24
# Unions of at most this many queries check their labels for repeats when they are built.
EAGER_LABEL_CHECK = 2**16
# Answers, per-query statistics and interval lists are float64/int64 arrays with one entry per
# query (and per column of a block): refuse beyond this many entries (1 GiB).
MAX_QUERY_ENTRIES = 2**27


def _shared_sections(**sections):
    """Decorator: write shared docstring text at the placeholder lines ``{name}``.

    Text several docstrings share is written once; each placeholder line is replaced by its
    text, indented as the placeholder, so that numpydoc, Sphinx and ``inspect.getdoc`` read one
    ordinary docstring. A text may be a function of one string, given in the placeholder as
    ``{name:value}``.
    """
    def decorate(documented):
        doc = documented.__doc__
        for name, text in sections.items():
            def fill(match, text=text):
                filled = text(match.group(2)) if callable(text) else text
                return textwrap.indent(filled, match.group(1))

            doc = re.sub(rf"^([ \t]*)\{{{name}(?::(\w+))?\}}$", fill, doc, count=1,
                         flags=re.MULTILINE)
        documented.__doc__ = doc
        return documented

    return decorate


# The Parameters section every builder opens with (the domain it is built over).
_documents_domain = _shared_sections(domain_parameter="""Parameters
----------
domain : Domain, mapping or int
    The domain: a :class:`~sklearn_ldp.domain.Domain`, a mapping column -> categories,
    or an int number of cells.""")


def _builder(function):
    """Decorator of the builders that take a domain first: the shared ``domain`` parameter in
    the docstring, and a clear error for arguments nested too deeply to read."""
    return refuse_deep_nesting(_documents_domain(function))

# The parameters of an explicit query matrix (Workload and MatrixWorkload).
_documents_matrix = _shared_sections(matrix_parameters="""Parameters
----------
matrix : array-like or scipy sparse matrix of shape (p, n)
    One row per query, one column per domain cell (flat-index order). A 1-D array is one
    query. Must be finite. Sparse input stays sparse.
labels : sequence of str, optional
    One unique label per query. Default ``"q0", ..., "q{p-1}"``.
domain : Domain, mapping or int, optional
    The domain the queries range over; ``n`` must equal its number of cells.""")


# The parameters of the workloads over the flat order of n_cells cells, with the default name,
# then the See Also entry of their builder (of that name).
_documents_cells = _shared_sections(cells_parameters=lambda name: f"""Parameters
----------
n_cells : int
    The number of domain cells.
domain : Domain, mapping or int, optional
    The domain (its size must be ``n_cells``).
name : str, default="{name}"
    A short name of the workload family.

See Also
--------
{name} : The builder of this workload from a domain.""")

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

@_documents_matrix
class Workload:
    """A labelled set of linear counting queries: a ``p x n`` linear operator.

    ``Workload(matrix, ...)`` wraps an explicit query matrix (dense or scipy sparse); the
    builders of this module return structured subclasses that never form the matrix.

    {matrix_parameters}
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
        >>> from sklearn_ldp.workloads import prefix
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
        >>> from sklearn_ldp.workloads import prefix
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
        >>> from sklearn_ldp.workloads import prefix
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
        >>> from sklearn_ldp.workloads import prefix
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
        >>> from sklearn_ldp.workloads import prefix
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
        >>> from sklearn_ldp.workloads import ranges
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
        >>> from sklearn_ldp.workloads import histogram
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
        >>> from sklearn_ldp.workloads import prefix
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
        >>> from sklearn_ldp.workloads import prefix
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
        >>> from sklearn_ldp.workloads import prefix
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


@_documents_matrix
class MatrixWorkload(Workload):
    """An explicit query matrix (dense or sparse): the same as ``Workload(matrix, ...)``.

    {matrix_parameters}
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

    # The spec kind of a closed form that its size alone rebuilds ("histogram", "prefix"...);
    # the kinds that carry more (factors, blocks, bounds, masks) write their own _spec.
    _kind = None

    def _spec(self):
        return {"kind": self._kind, "n": self.n_cells}, {}

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
