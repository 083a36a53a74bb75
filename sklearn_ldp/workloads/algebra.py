"""The algebra of workloads: Kronecker products and (weighted) stacks, as classes and
builders.
"""

import math
from collections.abc import Mapping

import numpy as np

from .. import _gram
from .._validation import describe, refuse_deep_nesting
from ..deploy.limits import check_size, get_limits
from ..domain import _product_strings
from .base import EAGER_LABEL_CHECK, QueryStats, _Structured, as_workload
from .intervals import Total


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


def _children_spec(parts):
    """The specs of the factors or blocks ``parts``, and their arrays under keys ``"i.key"``
    (part ``i``), as :func:`~sklearn_ldp.workloads.spec.workload_from_spec` reads them."""
    children, arrays = [], {}
    for i, part in enumerate(parts):
        spec, part_arrays = part.to_spec()
        children.append(spec)
        arrays.update({f"{i}.{key}": value for key, value in part_arrays.items()})
    return children, arrays


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
    Stack : The union of workloads, the other combination.

    Examples
    --------
    >>> from sklearn_ldp.workloads import Identity
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
        return _gram.kron_vectors(factor.column_sq_norms() for factor in self.factors)

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
        children, arrays = _children_spec(self.factors)
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
    >>> from sklearn_ldp.workloads import Identity
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
        children, arrays = _children_spec(self.blocks)
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
    >>> from sklearn_ldp.workloads import histogram, prefix
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
    >>> from sklearn_ldp.workloads import prefix, total
    >>> W = kron([prefix(3), total(2)])
    >>> W @ [1, 1, 2, 2, 3, 3]
    array([ 2.,  6., 12.])
    """
    return Kron(factors, domain=domain, name=name)
