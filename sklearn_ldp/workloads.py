"""Workloads: sets of linear counting queries over a domain, as dense ``p x n`` matrices.

Row ``i`` of a workload ``W`` is one query; its answer on the data vector ``x`` (counts per cell,
in the flat-index order of the :class:`~sklearn_ldp.domain.Domain`) is ``(W @ x)[i]``.

Builders take the domain as a ``Domain``, a mapping column -> categories, or an int number of
cells, and return a labelled :class:`Workload`.
"""

import itertools
import math
import numbers

import numpy as np
import pandas as pd
import scipy.sparse

from ._validation import MAX_DENSE_ENTRIES, as_float_matrix, check_positive_int
from .domain import Domain, _object_array, _product_strings, _shorten, as_domain

__all__ = [
    "Workload",
    "as_workload",
    "stack",
    "histogram",
    "prefix",
    "all_range",
    "ranges",
    "marginals",
    "range_marginals",
    "parity",
    "from_predicates",
    "custom",
]


def _check_dense(n_queries, n_cells, what):
    """Refuse a dense workload matrix that would not fit in memory."""
    if n_queries * n_cells > MAX_DENSE_ENTRIES:
        raise ValueError(
            f"The {what} workload would be a dense {n_queries} x {n_cells} matrix "
            f"({n_queries * n_cells} entries, limit {MAX_DENSE_ENTRIES}); it is too large. Use "
            "fewer or coarser categories, or fewer queries."
        )


class Workload:
    """A labelled set of linear counting queries: a dense ``p x n`` matrix.

    Parameters
    ----------
    matrix : array-like of shape (p, n)
        One row per query, one column per domain cell (flat-index order). A 1-D array is one
        query. Converted to float64; must be finite.
    labels : sequence of str, optional
        One unique label per query. Default ``"q0", ..., "q{p-1}"``.
    domain : Domain, mapping or int, optional
        The domain the queries range over; ``n`` must equal its number of cells.
    name : str, default="custom"
        A short name of the workload family (e.g. ``"marginals"``).

    Attributes
    ----------
    matrix : ndarray of shape (p, n)
        The query matrix (read-only).
    labels : pandas Index of str
        The query labels.
    domain : Domain or None
        The domain, if known.
    name : str
        The workload name.

    Examples
    --------
    >>> W = Workload([[1, 1, 0], [0, 1, 1]], labels=["a|b", "b|c"])
    >>> W.n_queries, W.n_cells
    (2, 3)
    >>> W.matrix @ [10, 20, 30]
    array([30., 50.])
    """

    def __init__(self, matrix, labels=None, domain=None, name="custom"):
        original = matrix
        if scipy.sparse.issparse(matrix):
            matrix = matrix.toarray()
        matrix = as_float_matrix(matrix, "The workload matrix")
        if isinstance(original, np.ndarray) and np.may_share_memory(matrix, original):
            matrix = matrix.copy()
        p, n = matrix.shape
        if p == 0 or n == 0:
            raise ValueError(
                f"A workload needs at least one query and one cell, got a {p} x {n} matrix."
            )
        matrix.flags.writeable = False
        if domain is not None:
            domain = as_domain(domain)
            if n != domain.size:
                raise ValueError(
                    f"The workload has {n} columns but the domain has {domain.size} cells."
                )
        if labels is None:
            labels = [f"q{i}" for i in range(p)]
        elif isinstance(labels, str):
            raise ValueError("labels must be a sequence of strings, one per query, not a str.")
        labels = pd.Index([str(label) for label in labels], name="query")
        if len(labels) != p:
            raise ValueError(f"The workload has {p} queries but {len(labels)} labels were given.")
        if not labels.is_unique:
            duplicates = labels[labels.duplicated()].unique()
            raise ValueError(f"Workload labels must be unique; repeated: {_shorten(duplicates)}.")
        self._matrix = matrix
        self._labels = labels
        self._domain = domain
        self.name = str(name)
        self._gram = None

    @property
    def matrix(self):
        """The ``p x n`` query matrix (float64, read-only)."""
        return self._matrix

    @property
    def labels(self):
        """The query labels (pandas Index of str)."""
        return self._labels

    @property
    def domain(self):
        """The domain of the queries, or None."""
        return self._domain

    @property
    def n_queries(self):
        """Number of queries ``p``."""
        return self._matrix.shape[0]

    @property
    def n_cells(self):
        """Number of domain cells ``n`` (matrix columns)."""
        return self._matrix.shape[1]

    def gram(self):
        """The Gram matrix ``W^T W`` (``n x n``), computed once, returned read-only.

        Examples
        --------
        >>> Workload([[1, 1]]).gram()
        array([[1., 1.],
               [1., 1.]])
        """
        if self._gram is None:
            _check_dense(self.n_cells, self.n_cells, "Gram matrix of the")
            gram = self._matrix.T @ self._matrix
            gram.flags.writeable = False
            self._gram = gram
        return self._gram

    def check_width(self, n_cells):
        """Raise a ValueError unless the workload has ``n_cells`` columns.

        Examples
        --------
        >>> Workload([[1, 0, 1]]).check_width(3)
        """
        if self.n_cells != n_cells:
            raise ValueError(
                f"The workload {self.name!r} has {self.n_cells} columns but the domain has "
                f"{n_cells} cells."
            )

    def __len__(self):
        return self.n_queries

    def __repr__(self):
        domain = "" if self._domain is None else f", domain={self._domain!r}"
        return (
            f"Workload(name={self.name!r}, n_queries={self.n_queries}, "
            f"n_cells={self.n_cells}{domain})"
        )


def as_workload(obj, domain=None):
    """Coerce ``obj`` to a :class:`Workload`.

    Parameters
    ----------
    obj : Workload or array-like
        A Workload is returned as is; a 2-D array-like becomes a custom workload; a 1-D
        array-like is a single query.
    domain : Domain, mapping or int, optional
        If given, the workload's width must equal the domain size.

    Returns
    -------
    Workload

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
            f"Expected a Workload or a query matrix (2-D array-like), got {type(obj).__name__}."
        )
    if not scipy.sparse.issparse(obj):
        try:
            obj = np.asarray(obj, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"Expected a Workload or a numeric query matrix (2-D array-like): {exc}"
            ) from None
        if obj.ndim not in (1, 2):
            raise ValueError(
                f"A query matrix must be 1-D (one query) or 2-D, got {obj.ndim} dimensions."
            )
    return Workload(obj, domain=domain)


def stack(workloads, name=None):
    """Vertical union of workloads over the same domain.

    Parameters
    ----------
    workloads : sequence of Workload or array-like
        Workloads with the same number of cells; their labels must stay unique.
    name : str, optional
        Default: the names joined by ``"+"``.

    Returns
    -------
    Workload

    Examples
    --------
    >>> W = stack([histogram(3), prefix(3)])
    >>> W.n_queries, W.name
    (6, 'histogram+prefix')
    """
    workloads = [as_workload(w) for w in workloads]
    if not workloads:
        raise ValueError("stack needs at least one workload.")
    n_cells = workloads[0].n_cells
    for i, w in enumerate(workloads[1:], start=1):
        if w.n_cells != n_cells:
            raise ValueError(
                f"Cannot stack workloads of different widths: workload 0 ({workloads[0].name!r})"
                f" has {n_cells} columns but workload {i} ({w.name!r}) has {w.n_cells}."
            )
    domains = [w.domain for w in workloads if w.domain is not None]
    for d in domains[1:]:
        if d != domains[0]:
            raise ValueError(
                f"Cannot stack workloads over different domains: {domains[0]!r} and {d!r}."
            )
    labels = [label for w in workloads for label in w.labels]
    if name is None:
        name = "+".join(w.name for w in workloads)
    return Workload(
        np.vstack([w.matrix for w in workloads]),
        labels=labels,
        domain=domains[0] if domains else None,
        name=name,
    )


# ---------------------------------------------------------------------- helpers
def _strings(values):
    """Category values as an object array of str."""
    return np.array([str(v) for v in values], dtype=object)


def _range_matrix(n):
    """All intervals [i, j] of range(n), ordered by i then j: (n(n+1)/2, n) 0/1 matrix."""
    lo, hi = np.triu_indices(n)
    cells = np.arange(n)
    matrix = (cells >= lo[:, np.newaxis]) & (cells <= hi[:, np.newaxis])
    return matrix.astype(float), lo, hi


def _range_strings(name, categories, lo, hi):
    """Labels ``"name in [lo, hi]"`` with category values."""
    text = _strings(categories)
    return name + " in [" + text[lo] + ", " + text[hi] + "]"


def _flat_range_labels(domain, lo, hi):
    """Labels of flat-index intervals: category values for one column, indices otherwise."""
    if domain.n_columns == 1:
        column = domain.columns[0]
        return _range_strings(column, domain.categories[column], lo, hi).tolist()
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
        return list(itertools.combinations(columns, int(k)))
    if isinstance(attributes, str):
        attributes = [attributes]
    subsets = []
    for subset in attributes:
        subset = (subset,) if isinstance(subset, str) else tuple(subset)
        unknown = [a for a in subset if a not in columns]
        if unknown:
            raise ValueError(
                f"{what}: unknown column(s) {unknown!r}; the domain columns are {columns!r}."
            )
        if len(set(subset)) != len(subset):
            raise ValueError(f"{what}: the attribute set {subset!r} repeats a column.")
        subsets.append(tuple(c for c in columns if c in subset))
    if not subsets:
        raise ValueError(f"{what}: attributes is empty; give at least one attribute set.")
    return subsets


def _kron_workload(domain, subsets, factor, name):
    """Stack, per subset S, the Kronecker product of ``factor(a)`` (a in S) or a ones row."""
    blocks = []
    labels = []
    factors = {}
    for subset in subsets:
        for a in subset:
            if a not in factors:
                factors[a] = factor(a)
    n_queries = sum(math.prod(factors[a][0].shape[0] for a in s) for s in subsets)
    _check_dense(n_queries, domain.size, name)
    for subset in subsets:
        matrix = np.ones((1, 1))
        for a, n_a in zip(domain.columns, domain.shape, strict=True):
            matrix = np.kron(matrix, factors[a][0] if a in subset else np.ones((1, n_a)))
        blocks.append(matrix)
        if subset:
            labels.extend(_product_strings([factors[a][1] for a in subset], " & "))
        else:
            labels.append("total")
    return Workload(np.vstack(blocks), labels=labels, domain=domain, name=name)


# ---------------------------------------------------------------------- builders
def histogram(domain):
    """The identity workload: one count per cell.

    Parameters
    ----------
    domain : Domain, mapping or int

    Returns
    -------
    Workload
        ``n x n`` identity, labelled by :meth:`Domain.cell_labels`.

    Examples
    --------
    >>> histogram({"smoker": ["no", "yes"]}).labels.tolist()
    ['smoker=no', 'smoker=yes']
    """
    domain = as_domain(domain)
    n = domain.size
    _check_dense(n, n, "histogram")
    return Workload(np.eye(n), labels=domain.cell_labels(), domain=domain, name="histogram")


def prefix(domain):
    """Prefix sums (a CDF): row ``i`` counts cells ``0..i`` of the flat order.

    Parameters
    ----------
    domain : Domain, mapping or int

    Returns
    -------
    Workload
        Lower-triangular ones, ``n x n``. Labels ``"age <= 30-50"`` for a single column,
        ``"cells[0..i]"`` otherwise.

    Examples
    --------
    >>> W = prefix({"age": ["<30", "30-50", ">50"]})
    >>> W.labels.tolist()
    ['age <= <30', 'age <= 30-50', 'age <= >50']
    >>> W.matrix @ [1, 2, 3]
    array([1., 3., 6.])
    """
    domain = as_domain(domain)
    n = domain.size
    _check_dense(n, n, "prefix")
    if domain.n_columns == 1:
        column = domain.columns[0]
        labels = (column + " <= " + _strings(domain.categories[column])).tolist()
    else:
        labels = [f"cells[0..{i}]" for i in range(n)]
    return Workload(np.tril(np.ones((n, n))), labels=labels, domain=domain, name="prefix")


def all_range(domain):
    """All range queries ``[i, j]``, ``0 <= i <= j < n``, over the flat order.

    Parameters
    ----------
    domain : Domain, mapping or int

    Returns
    -------
    Workload
        ``n(n+1)/2`` rows ordered by ``i`` then ``j``. Labels ``"age in [<30, 30-50]"`` for a
        single column, ``"cells[i..j]"`` (flat indices) otherwise.

    Raises
    ------
    ValueError
        If the dense matrix would have more than ``2**27`` entries.

    Examples
    --------
    >>> W = all_range(3)
    >>> W.n_queries
    6
    >>> W.labels[:3].tolist()
    ['x in [0, 0]', 'x in [0, 1]', 'x in [0, 2]']
    """
    domain = as_domain(domain)
    n = domain.size
    _check_dense(n * (n + 1) // 2, n, "all_range")
    matrix, lo, hi = _range_matrix(n)
    return Workload(
        matrix, labels=_flat_range_labels(domain, lo, hi), domain=domain, name="all_range"
    )


def ranges(domain, intervals):
    """Chosen range queries: closed intervals over the flat order.

    Parameters
    ----------
    domain : Domain, mapping or int
    intervals : sequence of (lo, hi)
        Closed intervals. For a single-column domain, ``lo`` and ``hi`` are category values;
        otherwise integer flat indices. ``lo`` must not come after ``hi``.

    Returns
    -------
    Workload

    Examples
    --------
    >>> W = ranges({"age": ["<30", "30-50", ">50"]}, [("<30", "30-50"), (">50", ">50")])
    >>> W.matrix
    array([[1., 1., 0.],
           [0., 0., 1.]])
    """
    domain = as_domain(domain)
    n = domain.size
    intervals = list(intervals)
    if not intervals:
        raise ValueError("ranges: intervals is empty; give at least one (lo, hi) pair.")
    for interval in intervals:
        if isinstance(interval, str) or len(interval) != 2:
            raise ValueError(f"ranges: each interval must be a (lo, hi) pair, got {interval!r}.")
    if domain.n_columns == 1:
        column = domain.columns[0]
        index = domain._indexes[0]
        bounds = _object_array([v for interval in intervals for v in interval])
        positions = index.get_indexer(bounds)
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
    _check_dense(len(lo), n, "ranges")
    cells = np.arange(n)
    matrix = (cells >= lo[:, np.newaxis]) & (cells <= hi[:, np.newaxis])
    return Workload(
        matrix.astype(float), labels=_flat_range_labels(domain, lo, hi), domain=domain,
        name="ranges",
    )


def marginals(domain, k=None, attributes=None):
    """Marginal counts over attribute subsets.

    Parameters
    ----------
    domain : Domain, mapping or int
    k : int, optional
        All subsets of ``k`` columns (``itertools.combinations`` order); ``k=0`` is the total.
    attributes : sequence of (tuple of str or str), optional
        Explicit subsets; a single str means a one-column subset. Exactly one of ``k`` and
        ``attributes`` must be given.

    Returns
    -------
    Workload
        For each subset S, the Kronecker product over the domain columns of the identity
        (column in S) or a row of ones (column not in S). Labels ``"age=<30 & smoker=no"``,
        ``"total"`` for the empty subset.

    Examples
    --------
    >>> dom = {"age": ["<30", ">=30"], "smoker": ["no", "yes"]}
    >>> W = marginals(dom, attributes=["smoker"])
    >>> W.labels.tolist()
    ['smoker=no', 'smoker=yes']
    >>> W.matrix
    array([[1., 0., 1., 0.],
           [0., 1., 0., 1.]])
    """
    domain = as_domain(domain)
    subsets = _subsets(domain, k, attributes, "marginals")
    categories = domain.categories

    def factor(a):
        return np.eye(len(categories[a])), a + "=" + _strings(categories[a])

    return _kron_workload(domain, subsets, factor, "marginals")


def range_marginals(domain, k=None, attributes=None):
    """Range marginals: all ranges of each attribute in a subset, crossed.

    Parameters
    ----------
    domain : Domain, mapping or int
    k : int, optional
        All subsets of ``k`` columns. Default 1 when ``attributes`` is not given.
    attributes : sequence of (tuple of str or str), optional
        Explicit subsets (a single str means a one-column subset).

    Returns
    -------
    Workload
        Like :func:`marginals`, with each column in the subset contributing all its range
        queries (the :func:`all_range` matrix of that column) instead of the identity. Labels
        ``"age in [<30, 30-50] & smoker in [no, no]"``.

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
    categories = domain.categories

    def factor(a):
        matrix, lo, hi = _range_matrix(len(categories[a]))
        return matrix, _range_strings(a, categories[a], lo, hi)

    return _kron_workload(domain, subsets, factor, "range_marginals")


def _parity_bits(values):
    """Parity (0/1) of the number of set bits of non-negative int64 ``values``."""
    values = values.copy()
    for shift in (32, 16, 8, 4, 2, 1):
        values ^= values >> shift
    return values & 1


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
        significant bit). Labels ``"parity(age, smoker)"``; for an int domain the attributes
        are named ``bit{i}`` after their place value ``2**i``.

    Examples
    --------
    >>> parity({"a": [0, 1], "b": [0, 1]}).matrix
    array([[ 1.,  1., -1., -1.],
           [ 1., -1.,  1., -1.],
           [ 1., -1., -1.,  1.]])
    """
    if isinstance(domain, numbers.Integral) and not isinstance(domain, bool):
        n = check_positive_int(domain, "n", minimum=2)
        if n & (n - 1):
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
        names = domain.columns
        n = domain.size
    if k is None:
        k = d
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= d:
        raise ValueError(f"parity: k must be an integer in [1, {d}], got {k!r}.")
    subsets = [s for size in range(1, k + 1) for s in itertools.combinations(range(d), size)]
    _check_dense(len(subsets), n, "parity")
    masks = np.array([sum(1 << (d - 1 - j) for j in s) for s in subsets], dtype=np.int64)
    bits = _parity_bits(masks[:, np.newaxis] & np.arange(n, dtype=np.int64))
    labels = ["parity(" + ", ".join(names[j] for j in s) + ")" for s in subsets]
    return Workload(1.0 - 2.0 * bits, labels=labels, domain=domain, name="parity")


def from_predicates(domain, predicates):
    """Counting queries defined by predicates over the domain cells.

    Parameters
    ----------
    domain : Domain, mapping or int
    predicates : dict or list
        ``{label: predicate}`` or a list of predicates (labelled by the expression string, or
        ``"q{i}"`` for callables). A predicate is a pandas expression string evaluated with
        ``domain.cells().eval(expr)`` (e.g. ``"age == '<30' and smoker == 'yes'"``), or a
        callable taking the cells DataFrame (it must not modify it) and returning a boolean
        mask of length ``n``.

    Returns
    -------
    Workload
        One 0/1 row per predicate.

    Examples
    --------
    >>> dom = {"age": [20, 40, 60], "smoker": ["no", "yes"]}
    >>> W = from_predicates(dom, {"young smokers": "age < 30 and smoker == 'yes'",
    ...                           "60+": lambda c: c["age"] >= 60})
    >>> W.matrix
    array([[0., 1., 0., 0., 0., 0.],
           [0., 0., 0., 0., 1., 1.]])
    """
    domain = as_domain(domain)
    if isinstance(predicates, dict):
        items = [(str(label), pred) for label, pred in predicates.items()]
    elif isinstance(predicates, (str, bytes)) or callable(predicates):
        raise ValueError("predicates must be a dict label -> predicate or a list of predicates.")
    else:
        items = [
            (pred if isinstance(pred, str) else f"q{i}", pred)
            for i, pred in enumerate(predicates)
        ]
    if not items:
        raise ValueError("from_predicates: no predicates were given.")
    n = domain.size
    _check_dense(len(items), n, "from_predicates")
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
        rows.append(mask)
    return Workload(
        np.array(rows, dtype=float), labels=[label for label, _ in items], domain=domain,
        name="predicates",
    )


def custom(matrix, domain=None, labels=None):
    """A workload from an explicit query matrix.

    Parameters
    ----------
    matrix : array-like of shape (p, n)
    domain : Domain, mapping or int, optional
    labels : sequence of str, optional

    Returns
    -------
    Workload
        ``Workload(matrix, labels, domain, name="custom")``.

    Examples
    --------
    >>> custom([[1, 0, 1]], labels=["odd cells"]).labels.tolist()
    ['odd cells']
    """
    if domain is not None:
        domain = as_domain(domain)
    return Workload(matrix, labels=labels, domain=domain, name="custom")
