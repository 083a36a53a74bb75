"""Analytic error of range queries under LDP (thesis chapter 5) and the choice of fan-out B.

All functions return the variance of an answer given as a *fraction* of ``n_users`` users
(multiply by ``n_users^2`` for counts). ``V_F`` is the per-cell variance of the frequency
oracle in the rare-item limit, ``oracle_variance(epsilon) / n_users``:

* flat (one frequency oracle over the cells, Fact 1 and Lemma 8): a range of ``r`` cells has
  variance ``r V_F``; the average over all ``D (D + 1) / 2`` ranges is ``(D + 2) / 3 V_F``;
* hierarchical histogram HH_B without consistency (Theorem 6 with uniform levels, eq. 5.1):
  ``V_r <= 2 (B - 1) h ceil(log_B r) V_F``, ``h = ceil(log_B D)``; averaged over all ranges
  (Theorem 7) about ``2 (B - 1) h log_B((1 + 2 D) / 3) V_F``;
* with the consistency step (Lemma 10, eq. 5.2): ``(B + 1) / 2 log_B r h V_F``
  (``1/2 log2 r log2 D V_F`` at ``B = 8``);
* HaarHRR (eq. 5.3): ``h^2 / 2 V_F`` with ``h = ceil(log2 D)``, whatever ``r``.

These are the thesis's rare-item bounds (they neglect the data-dependent part of the
variance, and the thesis takes ``V_F = 4 e^eps / (e^eps - 1)^2`` for every oracle). The exact
variance of what the package runs is ``query_variance`` of the mechanisms; the tests compare
the two. Minimizing ``(B - 1) / ln(B)^2`` (no consistency) gives ``B ~ 4.92``, and
``(B + 1) / ln(B)^2`` (consistency) gives ``B ~ 9.18``; with padding the heights are integers,
which :func:`recommend_branching` accounts for.

Pure numpy; no scikit-learn here.
"""

import math

import numpy as np

from ..._gram import MinMaxGram
from ..._validation import check_epsilon, check_positive_int
from .._base.docstrings import shared_sections
from .tree import HierarchicalHistogram
from .tree_structure import check_branching, range_matrix, tree_height

# recommend_branching computes the exact average variance over the whole workload up to this
# many cells (from the closed-form Gram in O(n log n) per candidate, so the limit is about the
# time: all 15 default candidates take ~2 s at 2^16).
EXACT_RECOMMENDATION_CELLS = 1024

# The parameters and the reference that the bounds below share.
_bound_docstring = shared_sections({
    "n_cells": """\
n_cells : int
    Domain size ``D``.""",
    "epsilon": """\
epsilon : float
    Privacy budget of one report, in ``(0, 50]``.""",
    "n_users": """\
n_users : int, default=1
    Number of users ``N``: the variance is of a fraction of them (per-user variance of
    a count for ``N = 1``).""",
    "oracle": """\
oracle : {"oue", "olh", "hrr"}, default="oue"
    The frequency oracle, through its rare-item variance (:func:`oracle_variance`).""",
    "range raises": """\
Raises
------
ValueError
    If a parameter is invalid or ``range_length > n_cells``.""",
    "thesis reference": """\
References
----------
.. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Answering range queries under local
   differential privacy", PVLDB 12(10), 2019 (chapter 5 of T. Kulkarni's PhD
   dissertation, University of Warwick, whose equation numbers are used here).""",
})


@_bound_docstring
def oracle_variance(epsilon, oracle="oue", n_users=1):
    """Rare-item variance ``V_F`` of one cell's frequency, per the thesis (digest section 2).

    ``"oue"`` and ``"olh"``: ``4 e^eps / (e^eps - 1)^2``; ``"hrr"``:
    ``((e^eps + 1) / (e^eps - 1))^2`` (one Hadamard coefficient and one bit).

    Parameters
    ----------
    <epsilon>
    oracle : {"oue", "olh", "hrr"}, default="oue"
        The frequency oracle: optimized unary encoding, optimized local hashing, or
        Hadamard randomized response.
    <n_users>

    Returns
    -------
    variance : float
        ``V_F``, the variance of the estimated fraction of users in one rare cell.

    Raises
    ------
    ValueError
        If ``epsilon``, ``oracle`` or ``n_users`` is invalid.

    See Also
    --------
    flat_variance : The variance of a range answered by the oracle cell by cell.
    OptimizedUnaryEncoding : The ``"oue"`` oracle, with its exact variance.
    HadamardRandomizedResponse : The ``"hrr"`` oracle, with its exact variance.

    <thesis reference>

    Examples
    --------
    >>> round(oracle_variance(math.log(3)), 6), round(oracle_variance(math.log(3), "hrr"), 6)
    (3.0, 4.0)
    """
    epsilon = check_epsilon(epsilon)
    n_users = check_positive_int(n_users, "n_users")
    e = math.exp(epsilon)
    if oracle in ("oue", "olh"):
        value = 4 * e / (e - 1) ** 2
    elif oracle == "hrr":
        value = ((e + 1) / (e - 1)) ** 2
    else:
        raise ValueError(f"oracle must be 'oue', 'olh' or 'hrr', got {oracle!r}.")
    return value / n_users


def _log(value, base):
    return math.log(value) / math.log(base)


def _check_length(range_length, n_cells):
    range_length = check_positive_int(range_length, "range_length")
    if range_length > n_cells:
        raise ValueError(f"range_length must be at most n_cells = {n_cells}, got {range_length}.")
    return range_length


@_bound_docstring
def flat_variance(n_cells, epsilon, range_length=None, n_users=1, oracle="oue"):
    """Flat method: ``r V_F`` for a range of ``r`` cells, or ``(D + 2) / 3 V_F`` averaged
    over all ranges (``range_length=None``).

    Parameters
    ----------
    <n_cells>
    <epsilon>
    range_length : int or None, default=None
        ``r``, the number of cells in the range, in ``[1, D]``; None averages over all
        ``D (D + 1) / 2`` ranges.
    <n_users>
    <oracle>

    Returns
    -------
    variance : float
        The rare-item variance of the range's answer, as a fraction of ``n_users``.

    <range raises>

    See Also
    --------
    hierarchical_variance_bound : The bound for a tree of oracles.
    haar_variance_bound : The bound for HaarHRR.
    oracle_variance : ``V_F``.

    <thesis reference>

    Examples
    --------
    >>> round(flat_variance(256, math.log(3), range_length=10), 9)
    30.0
    """
    n_cells = check_positive_int(n_cells, "n_cells")
    v_f = oracle_variance(epsilon, oracle, n_users)
    if range_length is None:
        return (n_cells + 2) / 3 * v_f
    return _check_length(range_length, n_cells) * v_f


@_bound_docstring
def hierarchical_variance_bound(n_cells, epsilon, branching=4, range_length=None,
                                consistency=True, n_users=1, oracle="oue"):
    """Thesis bounds for HH_B: eq. 5.1 (``consistency=False``) or eq. 5.2 (``True``).

    ``range_length=None`` gives the bound for the longest range (``r = D``), and without
    consistency Theorem 7's average over all ranges.

    Parameters
    ----------
    <n_cells>
    <epsilon>
    branching : int, default=4
        The fan-out ``B >= 2`` of the tree; its height is ``h = ceil(log_B D)``.
    range_length : int or None, default=None
        ``r``, the number of cells in the range, in ``[1, D]``; None as described above.
    consistency : bool, default=True
        Whether the tree's estimates are made consistent (eq. 5.2) or not (eq. 5.1).
    <n_users>
    <oracle>

    Returns
    -------
    variance : float
        The bound on the variance of the range's answer, as a fraction of ``n_users``.

    <range raises>

    See Also
    --------
    HierarchicalHistogram : The mechanism, with its exact variance.
    recommend_branching : The fan-out of least error.
    flat_variance : The same for the oracle alone.

    <thesis reference>

    Examples
    --------
    >>> round(hierarchical_variance_bound(2**15, math.log(3), 8, 2**15), 9)  # eq. 5.2
    337.5
    """
    n_cells = check_positive_int(n_cells, "n_cells")
    branching = check_branching(branching)
    v_f = oracle_variance(epsilon, oracle, n_users)
    height = tree_height(n_cells, branching)
    if consistency:
        length = n_cells if range_length is None else _check_length(range_length, n_cells)
        return (branching + 1) / 2 * max(_log(length, branching), 1.0) * height * v_f
    if range_length is None:
        return 2 * (branching - 1) * height * _log((1 + 2 * n_cells) / 3, branching) * v_f
    length = _check_length(range_length, n_cells)
    return 2 * (branching - 1) * height * max(math.ceil(_log(length, branching) - 1e-12), 1) * v_f


@_bound_docstring
def haar_variance_bound(n_cells, epsilon, n_users=1):
    """HaarHRR, eq. 5.3: ``h^2 / 2 V_F`` (``h = ceil(log2 D)``, HRR's ``V_F``) for every
    range, hence also on average. An upper bound on the exact variance of
    :class:`~sklearn_ldp.mechanisms.ranges.haar.HaarHRR`.

    Parameters
    ----------
    <n_cells>
    <epsilon>
    <n_users>

    Returns
    -------
    variance : float
        The bound on the variance of any range's answer, as a fraction of ``n_users``.

    Raises
    ------
    ValueError
        If a parameter is invalid.

    See Also
    --------
    HaarHRR : The mechanism, with its exact variance.
    hierarchical_variance_bound : The bound for a tree of oracles.

    <thesis reference>

    Examples
    --------
    >>> round(haar_variance_bound(2**8, math.log(3)), 9)
    128.0

    The exact worst-case variance of a range is often much smaller:

    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import HaarHRR
    >>> query = np.zeros(16)
    >>> query[3:11] = 1
    >>> round(haar_variance_bound(16, 1.0), 2), round(float(HaarHRR(16, 1.0).query_variance(
    ...     query).max()), 2)
    (37.46, 17.02)
    """
    n_cells = check_positive_int(n_cells, "n_cells")
    height = max(1, (n_cells - 1).bit_length())
    return height**2 / 2 * oracle_variance(epsilon, "hrr", n_users)


def _sampled_ranges(n_cells, workload, n_ranges):
    """A fixed sample of ranges: uniform over all ranges, or over all prefixes."""
    rng = np.random.default_rng(0)  # a fixed sample: the same ranges for every candidate
    if workload == "prefix":
        hi = rng.integers(0, n_cells, size=n_ranges)
        return np.zeros_like(hi), hi
    # Uniform over pairs lo <= hi: the pair (min, max) of two uniform cells, with the
    # diagonal counted once as often as the others, i.e. rejection of half the ties.
    lo, hi = rng.integers(0, n_cells, size=(2, 4 * n_ranges))
    keep = (lo != hi) | (rng.integers(0, 2, size=lo.shape[0]) == 1)  # an exact fair coin
    lo, hi = np.minimum(lo, hi)[keep][:n_ranges], np.maximum(lo, hi)[keep][:n_ranges]
    return lo, hi


@_bound_docstring
def recommend_branching(n_cells, epsilon=1.0, workload="all_range", consistency=True,
                        oracle="oue", candidates=range(2, 17), n_sampled_ranges=16,
                        return_scores=False):
    """The fan-out ``B`` with the least expected error on a range workload.

    With consistency (the default, as ``estimate`` and :class:`RangeQueryEstimator` use
    it), each ``B`` is scored by the *exact* average-case variance of
    :class:`HierarchicalHistogram` (users spread evenly over the cells): over the whole
    workload up to ``EXACT_RECOMMENDATION_CELLS`` cells, else over a fixed sample of
    ``n_sampled_ranges`` ranges (the same for every ``B``). Without consistency, the thesis's
    bound for the longest range (eq. 5.1), whose minimizer does not depend on epsilon. Both
    account for padding (``h = ceil(log_B D)``). The thesis's bounds favour ``B ~ 9``
    (consistent) and ``B ~ 5``; the exact variance, like its Tables 5.2/5.3, usually picks 4.

    Parameters
    ----------
    n_cells : int
        Domain size ``n``, at least 2.
    epsilon : float, default=1.0
        Privacy budget of one report, in ``(0, 50]``.
    workload : {"all_range", "prefix"}, default="all_range"
        The queries: all ranges, or all prefixes ``[0, i]``.
    consistency : bool, default=True
        Whether the tree's estimates are made consistent (scored exactly) or not (scored
        by eq. 5.1).
    oracle : {"oue", "olh", "hrr"}, default="oue"
        The frequency oracle of every level of the tree.
    candidates : iterable of int, default=range(2, 17)
        The fan-outs to compare, each at least 2.
    n_sampled_ranges : int, default=16
        Ranges sampled on large domains (the cost is about ``n_sampled_ranges x n x 15``
        per candidate: some 10 s at ``n = 2^20`` for the default candidates).
    return_scores : bool, default=False
        Also return ``{B: score}`` (per-user variance of one answer).

    Returns
    -------
    branching : int
        The fan-out with the least score (the smallest one on ties).
    scores : dict of int to float
        Only with ``return_scores=True``: the score of every candidate, the per-user
        variance of one answer (averaged over the workload's queries).

    Raises
    ------
    ValueError
        If a parameter is invalid or ``candidates`` is empty.

    See Also
    --------
    HierarchicalHistogram : The tree of frequency oracles whose fan-out this chooses.
    hierarchical_variance_bound : The paper's bounds.

    <thesis reference>

    Examples
    --------
    >>> recommend_branching(2**16, consistency=False)   # B ln B - 2B + 2 = 0: B ~ 4.92
    4
    >>> recommend_branching(256, epsilon=1.1)
    4
    """
    n_cells = check_positive_int(n_cells, "n_cells (at least 2)", minimum=2)
    epsilon = check_epsilon(epsilon)
    if workload not in ("all_range", "prefix"):
        raise ValueError(f"workload must be 'all_range' or 'prefix', got {workload!r}.")
    candidates = sorted({check_branching(b) for b in candidates})
    if not candidates:
        raise ValueError("candidates is empty; give at least one fan-out >= 2.")
    scores = {}
    if not consistency:
        for branching in candidates:
            scores[branching] = hierarchical_variance_bound(
                n_cells, epsilon, branching, range_length=n_cells, consistency=False,
                oracle=oracle)
    elif n_cells <= EXACT_RECOMMENDATION_CELLS:
        # Closed-form Grams (ranges containing both cells; prefixes: n - max): never dense.
        gram = (MinMaxGram.all_range(n_cells) if workload == "all_range"
                else MinMaxGram.prefix(n_cells))
        n_queries = n_cells * (n_cells + 1) // 2 if workload == "all_range" else n_cells
        for branching in candidates:
            mechanism = HierarchicalHistogram(n_cells, epsilon, branching, oracle)
            scores[branching] = float(mechanism.per_user_variance(gram).mean() / n_queries)
    else:
        lo, hi = _sampled_ranges(n_cells, workload,
                                 check_positive_int(n_sampled_ranges, "n_sampled_ranges"))
        W = range_matrix(lo, hi, n_cells)
        for branching in candidates:
            mechanism = HierarchicalHistogram(n_cells, epsilon, branching, oracle)
            scores[branching] = float(mechanism.average_query_variance(W).mean())
    best = min(scores, key=lambda branching: (scores[branching], branching))
    return (best, scores) if return_scores else best
