"""Workloads over attribute subsets: marginals and range marginals (stacks of Kronecker
products).
"""

import itertools
import math
import numbers
from collections.abc import Mapping

import numpy as np

from .._validation import describe, short_repr
from ..deploy.limits import check_size, get_limits
from ..domain import Domain, as_domain
from .algebra import Kron, Stack
from .base import _builder
from .intervals import AllRange, Identity, Total


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
@_builder
def marginals(domain, k=None, attributes=None):
    """Marginal counts over attribute subsets.

    {domain_parameter}
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


@_builder
def range_marginals(domain, k=None, attributes=None):
    """Range marginals: all ranges of each attribute in a subset, crossed.

    {domain_parameter}
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
