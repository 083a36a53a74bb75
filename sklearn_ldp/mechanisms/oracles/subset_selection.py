"""Subset selection (Ye and Barg 2018; Wang et al. 2016) as a structured frequency oracle.

A user of type ``u`` reports a subset ``S`` of ``k`` cells (``1 <= k <= n - 1``) with

    P(S | u) proportional to e^eps if u in S, else 1,

over all ``C(n, k)`` subsets of size ``k``. Equivalently: ``u`` is in ``S`` with probability

    p = k e^eps / (k e^eps + n - k),

and the remaining ``k - [u in S]`` slots are a uniform subset of the other ``n - 1`` cells.
The probability ratio of two types on one output is at most
``(p / C(n-1, k-1)) / ((1 - p) / C(n-1, k)) = p (n - k) / ((1 - p) k)``, which equals
``e^eps`` at the nominal ``p``.

Support probabilities (see :mod:`.support`), for cells ``j != j'`` both different from ``u``:

    q       = P(j in S)             = p (k-1)/(n-1) + (1-p) k/(n-1)
    r_own   = P(u in S, j in S)     = p (k-1)/(n-1)
    r_other = P(j in S, j' in S)    = p (k-1)(k-2)/((n-1)(n-2)) + (1-p) k(k-1)/((n-1)(n-2))

(``r_other`` is irrelevant, and set to 0, when ``n = 2``: no such pair exists.) The tests
check all four against the exact strategy matrix by brute force. The estimate is
``(C - q N) / (p - q)`` with the known-total step; ``p - q = (p n - k) / (n - 1) > 0``.

Decisions (the references leave them open):

* Subset size. ``subset_size=None`` chooses the ``k`` in ``1..n-1`` that minimizes the exact
  per-user variance of the Histogram workload (the same for every type,
  ``(n - 1) c_norm + (1 - 1/n) c_own`` in the notation of :mod:`.support`), evaluated for
  every ``k`` at once with the nominal ``p``. It is close to Ye and Barg's
  ``n / (e^eps + 1)``. The chosen ``k`` is stored in ``params`` so that the JSON pins the
  mechanism exactly.
* Exact privacy. The realized ``p`` is the nominal one rounded *down* to a multiple of
  ``2^-52`` and drawn exactly (:mod:`._bits`): that can only lower the ratio above, and ``q``,
  ``r_own``, ``r_other``, the estimator and the variance all use the realized ``p``.
* Sampling (vectorized over users, exact). The other cells are first drawn as independent
  bits with a dyadic probability ``pi`` (packed, bit-sliced); given how many there are, they
  are a uniform subset of that size. The size is then corrected to ``k - [u in S]`` one cell
  at a time: a missing cell is added by drawing uniform cells until one is not in the set, a
  surplus cell is removed by drawing uniform cells until one is in the set. Each step keeps
  the set uniform among the subsets of its size, so the final set is exactly uniform (the
  uniform draws are exact: ``Generator.integers``). ``pi`` (a multiple of ``2^-PI_DIGITS``
  or finer) minimizes the expected cost, correction draws plus fill: at ``n = 1024``,
  ``eps = 1`` (``k = 275``) it is ``1/4`` (about 28 draws per user), for small ``k`` it is 0
  (only additions), for ``k`` near ``n`` it is 1 (only removals), so large ``k`` needs no
  separate sampling of the complement. Each correction round is one vectorized step
  for every user not finished yet (never a loop over users or cells); users are handled in
  blocks of ``RANDOMIZE_BLOCK_BYTES`` of reports that stay in cache through the rounds.
  Measured at ``N = 10^6``, ``n = 1024``, ``eps = 1``: randomize 0.8-1.6 s (2 shared cores).

Reports are packed bit vectors (``np.packbits(..., axis=1, bitorder="little")``, ``ceil(n/8)``
bytes per user) with exactly ``k`` ones; ``check_reports`` refuses any other popcount.

No exact simulation of the aggregate is offered: the counts of different cells are dependent
(each report has exactly ``k`` ones) and we know no way to draw them jointly without one draw
per user.

Pure numpy and scipy; no scikit-learn here.
"""

import decimal
import itertools
import math
from types import SimpleNamespace

import numpy as np
from scipy.stats import binom

from ..._validation import check_epsilon, check_positive_int
from .._base.bits import (
    DECIMAL_CONTEXT,
    DENSE_DIGITS,
    PRECISION,
    bernoulli_bits,
    bernoulli_packed,
    bits_needed,
    check_packed_report_memory,
    check_packed_reports,
    column_counts,
    dyadic_numerator,
    n_packed_bytes,
    packed_report_layout,
    ratio_at_most,
    row_popcounts,
    set_bits,
    unused_bits_clear,
)
from .._base.counts import count_total, totals_differ
from .._base.exact import ExactLaw, check_law_size, exp_decimal
from .._base.mechanism import ReportCheck, check_type_indices, chunks, register, report_text
from .support import SupportOracle

# Largest number of outputs C(n, k) of the exact strategy matrix.
MAX_STRATEGY_ROWS = 2**16

# Bytes of reports randomized at once (they stay in cache through the correction rounds).
RANDOMIZE_BLOCK_BYTES = 2**21

# Fill probabilities pi are multiples of 2^-PI_DIGITS (at least; finer for large domains).
PI_DIGITS = 10

# Cost of the fill per 64-bit word and binary digit of pi, in units of one correction draw
# (measured: about 8 ns against 37 ns at N = 10^6, n = 1024).
FILL_WORD_COST = 0.2


def _support_probabilities(n, k, p):
    """``(q, r_own, r_other)`` for domain ``n``, subset size ``k`` (arrays allowed), P(u in S)."""
    k = np.asarray(k, dtype=float)
    q = (p * (k - 1) + (1 - p) * k) / (n - 1)
    pair_own = p * (k - 1) / (n - 1)
    if n > 2:
        pair_other = (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / ((n - 1) * (n - 2))
    else:
        pair_other = np.zeros_like(k)  # no pair of cells other than u exists
    return q, pair_own, pair_other


def subset_histogram_variance(n, epsilon, k):
    """Exact per-user variance of the Histogram workload, for each subset size in ``k``.

    With the known-total step, for every user type (nominal ``p``).

    Examples
    --------
    >>> v = subset_histogram_variance(16, 1.0, np.arange(1, 16))
    >>> int(np.argmin(v)) + 1
    4
    """
    k = np.asarray(k, dtype=float)
    e = np.exp(epsilon)
    p = k * e / (k * e + n - k)
    q, pair_own, pair_other = _support_probabilities(n, k, p)
    # SupportOracle's coefficient formula, evaluated on arrays (it only reads these four).
    c_norm, c_own = SupportOracle._variance_coefficients(
        SimpleNamespace(p=p, q=q, pair_own=pair_own, pair_other=pair_other)
    )
    # Histogram: tr(P I P) = n - 1 and (P I P)_uu = 1 - 1/n.
    return c_norm * (n - 1) + c_own * (1 - 1 / n)


def optimal_subset_size(n, epsilon):
    """The ``k`` in ``1..n-1`` with the least exact Histogram variance (ties: smallest ``k``).

    Examples
    --------
    >>> optimal_subset_size(1024, 1.0)
    275
    """
    n = check_positive_int(n, "n_inputs", minimum=2)
    sizes = np.arange(1, n)
    return int(sizes[np.argmin(subset_histogram_variance(n, epsilon, sizes))])


@register
class SubsetSelection(SupportOracle):
    """Ye-Barg subset selection: each user reports ``k`` cells, their own favoured by e^eps.

    A set ``S`` of ``k`` cells has probability proportional to ``e^eps`` if it contains the
    user's cell, else 1. Reports are packed bit vectors with exactly ``k`` bits set; the
    server counts how often each cell is reported and debiases the counts as for unary
    encoding. See the module docstring for the mathematics and the exact sampler.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n >= 2``.
    epsilon : float
        Privacy budget of one report, in ``(0, 50]``.
    subset_size : int or None, default=None
        ``k`` in ``[1, n - 1]``; ``None`` picks the ``k`` with the least exact Histogram
        variance (:func:`optimal_subset_size`). ``params["subset_size"]`` holds the ``k`` used.

    Attributes
    ----------
    subset_size : int
        ``k``, the number of cells in every report.
    p, q, pair_own, pair_other : float
        Realized support probabilities (``p`` a multiple of ``2^-52``).

    See Also
    --------
    RandomizedResponse : The case ``k = 1``, with reports of one cell index.
    OptimizedUnaryEncoding : Reports of ``n`` independent bits.
    OptimizedLocalHashing : Reports of two integers, whatever ``n``.

    References
    ----------
    .. [1] M. Ye and A. Barg, "Optimal schemes for discrete distribution estimation under
       locally differential privacy", IEEE Transactions on Information Theory 64(8), 2018.
    .. [2] S. Wang et al., "Mutual information optimally local private discrete
       distribution estimation", arXiv:1607.08025, 2016.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = SubsetSelection(16, 1.0)
    >>> mechanism.subset_size, mechanism.params
    (4, {'subset_size': 4})
    >>> reports = mechanism.randomize(np.array([0, 5, 5, 15]), np.random.default_rng(0))
    >>> reports.shape, np.unpackbits(reports, axis=1).sum(axis=1).tolist()
    ((4, 2), [4, 4, 4, 4])
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (16,)

    Per-user variance of a cell's count on 64 cells at ``epsilon = 3``, against optimized
    unary encoding and randomized response:

    >>> from sklearn_ldp.mechanisms import OptimizedUnaryEncoding, RandomizedResponse
    >>> [round(float(M(64, 3.0).per_user_variance(np.eye(64))[0]), 1)
    ...  for M in (SubsetSelection, OptimizedUnaryEncoding, RandomizedResponse)]
    [12.7, 14.9, 17.7]

    The exact law of one report (:meth:`exact_law`):

    >>> law = SubsetSelection(4, 1.0, subset_size=2).exact_law(0)
    >>> law.outputs.shape, sum(law.weights) == law.total
    ((6, 1), True)
    """

    kind = "subset_selection"

    def __init__(self, n_inputs, epsilon, subset_size=None):
        n = check_positive_int(n_inputs, "n_inputs", minimum=2)
        self.n_inputs = n
        self.epsilon = check_epsilon(epsilon)
        self.name = "subset_selection"
        if subset_size is None:
            k = optimal_subset_size(n, self.epsilon)
        else:
            k = check_positive_int(subset_size, "subset_size")
            if k > n - 1:
                raise ValueError(
                    f"subset_size must be an integer in [1, n_inputs - 1] = [1, {n - 1}] (or "
                    f"None to choose it from epsilon), got {subset_size!r}."
                )
        self.subset_size = k
        self.params = {"subset_size": k}
        e = exp_decimal(self.epsilon)
        with decimal.localcontext(DECIMAL_CONTEXT):
            p_nominal = k * e / (k * e + (n - k))
        p_num = dyadic_numerator(p_nominal, "down")
        one = 2**PRECISION
        # Exact check of p (n - k) / ((1 - p) k) <= e^eps (rounding down guarantees it).
        while p_num > 0 and not ratio_at_most(p_num * (n - k), (one - p_num) * k, e):
            p_num -= 1
        if p_num * n <= k * one:  # p - q = (p n - k) / (n - 1) must stay positive
            raise ValueError(
                f"epsilon={self.epsilon!r} is too small for 'subset_selection': at the "
                f"sampler's precision 2^-{PRECISION} the own cell is no more likely than the "
                "others; use epsilon >= 1e-12."
            )
        self.p_numerator = p_num
        self.p = p_num / one
        q, pair_own, pair_other = _support_probabilities(n, k, self.p)
        self.q, self.pair_own, self.pair_other = float(q), float(pair_own), float(pair_other)
        self._fill = None  # numerator of the fill probability pi, chosen on first use

    # ------------------------------------------------------------------ client side
    def _fill_numerator(self):
        """``(numerator, digits)`` of the fill probability ``pi = numerator / 2^digits``.

        Minimizes the expected cost per user in units of one correction draw: from ``m``
        other cells to the target ``t``, adding costs ``sum_{s=m}^{t-1} (n-1)/(n-1-s)`` draws
        and removing ``sum_{s=t+1}^{m} (n-1)/s``, with ``m ~ Binomial(n - 1, pi)`` and
        ``t = k - 1`` with probability ``p``, else ``k``; the fill costs ``FILL_WORD_COST``
        per 64-bit word and binary digit of ``pi`` (none for ``pi`` = 0 or 1). Candidates:
        65 values whose mean size spans ``k +- 3 sd``, and the multiples of 1/16 (with 0 and
        1, best for very small or very large ``k``).
        """
        if self._fill is not None:
            return self._fill
        n, k = self.n_inputs, self.subset_size
        others = n - 1
        digits = max(PI_DIGITS, others.bit_length() + 2)
        scale = 2**digits
        sd = math.sqrt(max(k * (1 - k / others), 1.0))
        span = 3 * sd / others * scale
        candidates = np.concatenate((
            np.round(np.linspace(k / others * scale - span, k / others * scale + span, 65)),
            np.arange(0, scale + 1, scale // 16),
        ))
        candidates = np.unique(np.clip(candidates, 0, scale)).astype(np.int64)
        every = np.arange(others + 1)
        add = np.concatenate(([0.0], np.cumsum(others / (others - every[:-1]))))
        remove = np.concatenate(([0.0], np.cumsum(others / every[1:])))
        words = -(-n // 64)
        best, best_cost = None, np.inf
        for numerator in candidates.tolist():  # a few dozen candidates, not users or cells
            pi = numerator / scale
            mean, spread = others * pi, math.sqrt(others * pi * (1 - pi))
            # Sizes within 12 sd of the mean hold all but a negligible part of the mass.
            sizes = every[max(0, math.floor(mean - 12 * spread - 1)):
                          min(others, math.ceil(mean + 12 * spread + 1)) + 1]
            pmf = binom.pmf(sizes, others, pi)
            cost = 0.0
            for target, weight in ((k - 1, self.p), (k, 1 - self.p)):
                draws = np.where(sizes < target, add[target] - add[sizes],
                                 remove[sizes] - remove[target])
                cost += weight * float(pmf @ draws)
            if 0 < numerator < scale:
                cost += FILL_WORD_COST * words * min(bits_needed(numerator, digits),
                                                     DENSE_DIGITS + 1)
            if cost < best_cost:
                best, best_cost = numerator, cost
        self._fill = (best, digits)
        return self._fill

    def randomize(self, indices, rng):
        # Packed reports (little bit order) with exactly k bits set, the reported cells (module
        # docstring).
        indices = check_type_indices(indices, self.n_inputs)
        check_packed_report_memory(indices.shape[0], self.n_inputs, self.name)
        n_users, n_bytes = indices.shape[0], n_packed_bytes(self.n_inputs)
        reports = np.empty((n_users, n_bytes), dtype=np.uint8)
        include = bernoulli_bits(rng, n_users, self.p_numerator)  # u in S
        numerator, digits = self._fill_numerator()
        # Users in blocks whose reports stay in cache through the correction rounds.
        for rows in chunks(n_users, max(1024, RANDOMIZE_BLOCK_BYTES // n_bytes)):
            block, types = reports[rows], indices[rows]
            bernoulli_packed(rng, block.shape[0], self.n_inputs, numerator, digits, out=block)
            set_bits(block, types, 0)  # the fill covers the other n - 1 cells only
            # Signed number of other cells still to add (> 0) or to remove (< 0).
            need = (self.subset_size - include[rows].astype(np.int64)) - row_popcounts(block)
            self._correct_sizes(block, types, need, rng)
            set_bits(block, types, include[rows])
        return reports

    def exact_law(self, value):
        # Over the C(n, k) packed subsets in the order of subset_outputs: u is in the set with
        # probability p_numerator / 2^52 and the other members are a uniform subset of the other
        # cells, so a set holding the value has weight p_numerator C(n-1, k), any other (2^52 -
        # p_numerator) C(n-1, k-1), over 2^52 C(n-1, k-1) C(n-1, k).
        value = int(check_type_indices([value], self.n_inputs)[0])
        n, k = self.n_inputs, self.subset_size
        check_law_size(math.comb(n, k), self.name)
        members = self.subset_outputs()
        outputs = np.packbits(members.astype(np.uint8), axis=1, bitorder="little")
        one = 2**PRECISION
        inside = self.p_numerator * math.comb(n - 1, k)
        outside = (one - self.p_numerator) * math.comb(n - 1, k - 1)
        weights = [inside if member else outside for member in members[:, value].tolist()]
        return ExactLaw(outputs, weights, one * math.comb(n - 1, k - 1) * math.comb(n - 1, k))

    def _correct_sizes(self, block, types, need, rng):
        """Add or remove uniformly drawn other cells until every ``need`` is 0 (in place)."""
        flat = block.reshape(-1)  # a view: ``block`` is a C-contiguous slice of the reports
        active = np.flatnonzero(need)
        remaining = np.abs(need[active])
        # Removing needs a drawn cell that is in the set (bit 1), adding one that is not (0).
        wanted = (need[active] < 0).astype(np.uint8)
        types = types[active]
        row_start = active * block.shape[1]
        while row_start.size:
            # A uniform cell other than u: a uniform label in [0, n-1), shifted past u.
            cells = rng.integers(0, self.n_inputs - 1, size=row_start.size)
            cells += cells >= types
            where = row_start + (cells >> 3)
            masks = np.left_shift(1, cells & 7).astype(np.uint8)
            current = flat[where]
            hit = np.flatnonzero(((current & masks) != 0) == wanted)
            flat[where[hit]] = current[hit] ^ masks[hit]  # rows differ: no repeated index
            remaining[hit] -= 1
            if not np.all(remaining[hit]):
                keep = np.flatnonzero(remaining)
                remaining, wanted = remaining[keep], wanted[keep]
                types, row_start = types[keep], row_start[keep]

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Valid reports: the vectors of n bits with exactly k of them set.
        reports = packed_report_layout(reports, self.n_inputs, self.name)
        valid = unused_bits_clear(reports, self.n_inputs) & (
            row_popcounts(reports) == self.subset_size)
        rule = (f"vectors of {self.n_inputs} bits with exactly {self.subset_size} bits set "
                f"(subset_size={self.subset_size})")
        return ReportCheck(reports, valid, rule)

    def check_reports(self, reports):
        # The message names the first invalid report: bits set past bit n - 1, or a number of bits
        # other than k (with the value it has).
        reports = check_packed_reports(reports, self.n_inputs, self.name)
        popcounts = row_popcounts(reports)
        wrong = np.flatnonzero(popcounts != self.subset_size)
        if wrong.size:
            bad = int(wrong[0])
            raise ValueError(
                f"reports of the 'subset_selection' mechanism with subset_size="
                f"{self.subset_size} have exactly {self.subset_size} bits set; report {bad} has "
                f"{int(popcounts[bad])} ({report_text(reports, bad)}; {wrong.size} such "
                "reports): the reports come from another mechanism or subset size, or were "
                "crafted."
            )
        return reports

    def _check_support_totals(self, support, total):
        """No cell is supported more than ``N`` times, and every report supports exactly
        ``k`` cells: the support counts sum to ``k N``."""
        super()._check_support_totals(support, total)
        supported = count_total(support)
        if totals_differ(supported, self.subset_size * total):
            raise ValueError(
                f"the statistic of {self.name!r} counts {total} reports of {self.subset_size} "
                f"cells each, but its support counts sum to {supported}, not "
                f"{self.subset_size * total}: the counts are inconsistent (corrupted or "
                "crafted)."
            )

    def _support_extremes(self, centered):
        """A report supports exactly ``k`` cells: the extremes sum the row's ``k`` smallest
        (largest) entries, attained by the report of those cells."""
        k = self.subset_size
        lowest = np.argpartition(centered, k - 1, axis=1)[:, :k]
        highest = np.argpartition(-centered, k - 1, axis=1)[:, :k]
        reports = []
        for cells in (lowest, highest):
            bits = np.zeros(centered.shape, dtype=bool)
            np.put_along_axis(bits, cells, True, axis=1)
            reports.append(np.packbits(bits, axis=1, bitorder="little"))
        low = np.take_along_axis(centered, lowest, axis=1).sum(axis=1)
        high = np.take_along_axis(centered, highest, axis=1).sum(axis=1)
        return low, high, reports[0], reports[1], True

    def _support_counts(self, reports):
        return column_counts(reports, self.n_inputs)

    def strategy_matrix(self):
        """The exact ``C(n, k) x n`` strategy (limited to ``MAX_STRATEGY_ROWS`` outputs).

        Rows are the ``k``-subsets in the lexicographic order of ``itertools.combinations``
        (see :meth:`subset_outputs`).

        Returns
        -------
        Q : ndarray of shape (C(n, k), n)
            ``Q[S, u]``, the probability that a user of type ``u`` reports the subset ``S``.

        Raises
        ------
        ValueError
            If ``C(n, k)`` exceeds ``MAX_STRATEGY_ROWS`` (65536).
        """
        members = self.subset_outputs()
        n, k = self.n_inputs, self.subset_size
        inside = self.p / math.comb(n - 1, k - 1)
        outside = (1 - self.p) / math.comb(n - 1, k)
        return np.where(members, inside, outside)

    def subset_outputs(self):
        """Membership matrix ``(C(n, k), n)`` of bool of the outputs of :meth:`strategy_matrix`.

        Returns
        -------
        members : ndarray of bool of shape (C(n, k), n)
            Row ``i`` marks the cells of the ``i``-th ``k``-subset, in the order of
            ``itertools.combinations(range(n), k)``.

        Raises
        ------
        ValueError
            If ``C(n, k)`` exceeds ``MAX_STRATEGY_ROWS`` (65536).

        Examples
        --------
        >>> SubsetSelection(3, 1.0, subset_size=2).subset_outputs().astype(int)
        array([[1, 1, 0],
               [1, 0, 1],
               [0, 1, 1]])
        """
        n, k = self.n_inputs, self.subset_size
        rows = math.comb(n, k)
        if rows > MAX_STRATEGY_ROWS:
            raise ValueError(
                f"the exact 'subset_selection' strategy matrix has C(n, k) = C({n}, {k}) = "
                f"{rows} rows; it is limited to {MAX_STRATEGY_ROWS}."
            )
        flat = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), k)),
                           dtype=np.int64, count=rows * k)
        members = np.zeros((rows, n), dtype=bool)
        members[np.repeat(np.arange(rows), k), flat] = True
        return members
