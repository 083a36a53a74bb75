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

The package, one module a job: :mod:`~sklearn_ldp.workloads.base` (the :class:`Workload`
operator and :func:`as_workload`), :mod:`~sklearn_ldp.workloads.intervals` (histogram, total,
prefix, ranges over the flat order), :mod:`~sklearn_ldp.workloads.algebra` (Kronecker products
and stacks), :mod:`~sklearn_ldp.workloads.subsets` (marginals, range marginals),
:mod:`~sklearn_ldp.workloads.fourier` (parities), :mod:`~sklearn_ldp.workloads.explicit`
(matrices, predicates) and :mod:`~sklearn_ldp.workloads.spec` (rebuilding from a file's spec).
"""

from .algebra import Kron, Stack, kron, stack
from .base import MAX_LABELS, MAX_QUERY_ENTRIES, MatrixWorkload, Workload, as_workload
from .explicit import custom, from_predicates
from .fourier import Parity, parity
from .intervals import (
    AllRange,
    Identity,
    Intervals,
    Prefix,
    Total,
    all_range,
    histogram,
    prefix,
    ranges,
    total,
)
from .subsets import marginals, range_marginals

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
