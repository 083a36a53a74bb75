"""HaarHRR: range queries through the discrete Haar transform (Cormode, Kulkarni, Srivastava).

Transform. Pad the ordered domain ``[0, n)`` to ``D = 2^h`` cells (``h`` the least integer with
``2^h >= n``, at least 1; the padding cells are held by nobody). A node ``u`` at height
``l in {1..h}`` covers the ``2^l`` cells ``x`` with ``x >> l = u``; there are ``m_l = D / 2^l``
of them. Its detail coefficient, in counts, is

    d_l[u] = (users in its left half) - (users in its right half),

and the data vector is rebuilt exactly from them and the total ``N``:

    x[c] = N / D + sum_l s_l(c) d_l[c >> l] / 2^l,     s_l(c) = +1 if bit (l - 1) of c is 0,
                                                                 -1 otherwise.

(The dissertation writes the orthonormal coefficients ``(C_left - C_right) / 2^(l/2)``; a user
has one non-zero coefficient ``+-2^(-l/2)`` per level, rescaled to ``+-1`` here and the scale
reapplied by the server.)

Client. A user of cell ``c`` samples a height ``l`` uniformly from ``{1..h}``, and applies HRR
to the signed one-hot vector ``s_l(c) e_u`` of length ``m_l`` (``u = c >> l``): sample ``j``
uniformly from ``[0, m_l)`` (coefficient 0 included: the sign makes it informative), compute
``b = s_l(c) (-1)^popcount(j & u)`` and send ``b`` with probability ``p = a / (a + d)``,
else ``-b``, with the integer weights of :func:`~._ratio.sign_weights` (``a / d <= e^eps``
decided exactly, nominally ``p = e^eps / (1 + e^eps)``; the level, the coefficient and the
kept sign are exactly uniform integers, so the law is exact). At the top (``m_h = 1``) this
is binary randomized response on ``s_h(c)``. Given ``(l, j)``, which do not depend on the
data, two cells' probabilities of a bit are ``p`` or ``1 - p``: the ratio is at most
``e^eps``. The report is the integer
``offset_l + 2 j + bit`` (``bit = 1`` for ``+1``), ``offset_l = 2 sum_{k < l} m_k``; there are
``2 (D - 1)`` outputs, and aggregation is one ``bincount``.

Estimator (linear, unbiased). With ``T_l[j]`` the number of ``+1`` minus the number of ``-1``
reports at ``(l, j)`` and ``c = 1 / (2p - 1) = (a + d) / (a - d)`` (the realised ``p``),

    dhat_l = h c H_{m_l} T_l        (one fast Walsh-Hadamard transform per level),

since ``E[T_l[j]] = (2p - 1) (H d_l)[j] / (h m_l)`` and ``H H = m_l I``. The leaves follow from
the reconstruction formula with the known ``N`` (the scaling coefficient, not perturbed). We
normalize by the *expected* number of users per ``(l, j)``, ``N / (h m_l)``, not by the
realized one as the thesis's Algorithm does: the estimate is then linear in the report
counts, exactly unbiased, and its variance below is exact (the price: RMSE over all ranges
1.1% higher at D = 2^8, eps = 1.1, none at eps = 0.2;
``python benchmarks/bench_ranges.py --sizes 8 --repeats 40 --ratio-check``). No consistency
step is needed: the coefficients are not redundant. Nodes made only of padding have no real
cell, so they never enter the estimate of a real cell.

Exact variance. For a query ``w`` on the real cells let ``a_l[u] = sum_{c in u} s_l(c) w_c``
(left minus right sums of ``w``) and ``wbar = sum(w) / D``. One user of cell ``c`` at ``(l, j)``
who sends ``b'`` contributes ``wbar + h c b' (H a_l)[j] / 2^l`` to ``w . xhat``; with
``b'^2 = 1``, ``E[(H a_l)[j]^2] = ||a_l||^2`` and ``E[b' (H a_l)[j]] = (2p - 1) s_l(c) a_l[u]``,

    z(w, c) = h c^2 sum_l ||a_l||^2 / 4^l - (w_c - wbar)^2.

A range cuts at most two nodes per level, each with ``|a_l[u]| <= 2^(l-1)``, hence the
thesis's bound ``h^2 c^2 / 2`` (eq. 5.3), whatever the length of the range; it also makes the
worst and average variance of ``p`` ranges an ``O(p h)`` computation
(:meth:`HaarHRR.query_variance_summary`).

Structure. Summed over a workload with Gram ``G``, ``sum_i ||a_l(w_i)||^2 = tr(A_l G A_l^T)``
with ``A_l`` the rows ``1_left - 1_right`` of the level-``l`` nodes (restricted to the real
cells). Cutting the cells into blocks of ``2^(l-1)``, node ``u`` is blocks ``2u`` and ``2u+1``,
and ``(1_L - 1_R)^T G (1_L - 1_R) = 2 (S_L + S_R) - S_node`` with ``S`` the sums of ``G`` over a
block times itself, so ``tr(A_l G A_l^T)`` is twice the block sums at width ``2^(l-1)`` minus
those at width ``2^l`` (blocks made only of padding are empty). The Gram's ``block_sums``
computes them in ``O(n)`` per level for the closed-form Grams (histogram, prefix, all-range,
their sums and aligned Kronecker products): ``O(n log n)`` in all, no ``n x n`` matrix.

Pure numpy; no scikit-learn here.
"""

import numpy as np

from ..._fwht import fwht, hadamard_parity
from ..._validation import check_dense_size
from .._base.counts import report_count
from .._base.exact import ExactLaw, check_law_size, uniform_below
from .._base.influence import ReportInfluence
from .._base.mechanism import (
    Mechanism,
    check_output_counts,
    check_type_counts,
    check_type_indices,
    check_workload_matrix,
    chunks,
    index_report_validity,
    register,
    report_dtype,
)
from .._base.ratio import kept_signs, ratio_law_weights, sign_weights
from .._base.workload_ops import check_gram, check_workload_width, gram_with_blocks, is_workload
from ..oracles._hrr_simulation import simulate_signed_hrr


def _left_minus_right(values, height, size):
    """``a_l`` for ``l = 1..height``: per node, the left-half minus the right-half sums of
    ``values`` (last axis, ``size`` cells, zero-padded to ``2^height``)."""
    values = np.asarray(values, dtype=float)
    padded = 1 << height
    if padded > size:
        values = np.concatenate(
            [values, np.zeros(values.shape[:-1] + (padded - size,))], axis=-1)
    result = []
    sums = values  # sums over the nodes of the level below (cells at first)
    for _ in range(height):
        pairs = sums.reshape(sums.shape[:-1] + (-1, 2))
        result.append(pairs[..., 0] - pairs[..., 1])
        sums = pairs.sum(axis=-1)
    return result


@register
class HaarHRR(Mechanism):
    """HaarHRR: one Haar level per user, its signed coefficient through HRR (full epsilon).

    For range queries on an ordered domain. Each user samples one level of the discrete Haar
    transform of their one-hot vector and sends one randomized bit of one Hadamard
    coefficient of it; the server rebuilds unbiased Haar coefficients and, from them, the
    counts of every cell. The variance of a range is at most ``h^2 c^2 / 2`` per user
    (``h = ceil(log2 n)``, ``c = (e^eps + 1) / (e^eps - 1)``), whatever its length.

    See the module docstring for the mathematics. Any domain size (padded to a power of two);
    reports are one integer, aggregation one ``bincount``, estimation one FWHT per level.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n``, the cells in their order.
    epsilon : float
        Privacy budget of one report, in ``(0, 50]``.

    Attributes
    ----------
    height : int
        ``h``, the number of Haar levels (``2^h >= n``).
    level_sizes : list of int
        ``m_l = 2^(h - l)`` nodes at height ``l = 1..h``.
    n_outputs : int
        ``2 (2^h - 1)`` possible reports.
    weights : tuple of int
        ``(a, d)``: integer weights of keeping and flipping the sign (``a / d <= e^eps``).
    p : float
        Probability of sending the true sign, ``a / (a + d)``.

    See Also
    --------
    HierarchicalHistogram : The other range mechanism of the same paper (a tree of
        frequency oracles).
    haar_variance_bound : The paper's bound on the variance of a range.
    HadamardRandomizedResponse : The Hadamard-coefficient oracle HaarHRR applies per level.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Answering range queries under local
       differential privacy", PVLDB 12(10), 2019 (HaarHRR; also chapter 5 of T. Kulkarni's
       PhD dissertation, University of Warwick).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = HaarHRR(6, 1.0)
    >>> mechanism.height, mechanism.level_sizes, mechanism.n_outputs
    (3, [4, 2, 1], 14)
    >>> rng = np.random.default_rng(0)
    >>> statistic = mechanism.aggregate(mechanism.randomize(rng.integers(0, 6, 500), rng))
    >>> mechanism.n_reports(statistic), mechanism.estimate(statistic).shape
    (500, (6,))

    A range of 8 of 16 cells, 20000 users (9961 of them in the range):

    >>> mechanism = HaarHRR(16, 1.0)
    >>> rng = np.random.default_rng(0)
    >>> users = rng.integers(0, 16, 20000)
    >>> int(np.count_nonzero((users >= 3) & (users < 11)))
    9961
    >>> statistic = mechanism.aggregate(mechanism.randomize(users, rng))
    >>> round(float(mechanism.estimate(statistic)[3:11].sum()))
    9976
    >>> query = np.zeros(16)
    >>> query[3:11] = 1
    >>> float(np.sqrt(20000 * mechanism.query_variance(query).max()).round(1))  # worst sd
    583.4

    The exact law of one report (:meth:`exact_law`):

    >>> law = HaarHRR(4, 1.0).exact_law(1)
    >>> law.outputs.tolist(), law.total == 2 * 2 * sum(HaarHRR(4, 1.0).weights)
    ([0, 1, 2, 3, 4, 5], True)

    An exact draw of the aggregate of many users (:meth:`simulate_statistic`):

    >>> mechanism = HaarHRR(8, 1.0)
    >>> int(mechanism.simulate_statistic(np.full(8, 10), np.random.default_rng(0)).sum())
    80
    """

    kind = "haar"

    def __init__(self, n_inputs, epsilon):
        self._set_domain_and_budget(n_inputs, epsilon)
        self.height = max(1, (self.n_inputs - 1).bit_length())
        self.padded_size = 1 << self.height
        self.level_sizes = [self.padded_size >> level for level in range(1, self.height + 1)]
        self._offsets = np.concatenate([[0], np.cumsum([2 * m for m in self.level_sizes])])
        self.n_outputs = int(self._offsets[-1])
        # The realised p and 1 / (2p - 1), from the integers sampled (checked exactly).
        self.weights, self.p, self.debias = sign_weights(self.epsilon, self.name)

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        # One report offset_l + 2 j + bit per user, O(1) each, vectorized.
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        level = uniform_below(rng, self.height, n_users) + 1
        node = indices >> level
        sizes = np.asarray(self.level_sizes, dtype=np.int64)[level - 1]
        coefficient = uniform_below(rng, sizes, n_users)
        # 1 where the true sign is -1: right half (bit l-1 set) xor a negative Hadamard entry.
        negative = ((indices >> (level - 1)) & 1).astype(np.uint8) ^ hadamard_parity(
            coefficient, node)
        flipped = (~kept_signs(rng, n_users, self.weights)).astype(np.uint8)
        bit = 1 ^ negative ^ flipped
        reports = self._offsets[level - 1] + 2 * coefficient + bit
        return reports.astype(report_dtype(self.n_outputs))

    def exact_law(self, value):
        # All 2 (D - 1) outputs: output offset_l + 2 j + bit has probability (1 / h) (1 / m_l) (a or
        # d) / (a + d), i.e. weight (m_1 / m_l) a for the true sign of (l, j), (m_1 / m_l) d for the
        # other, over the total h m_1 (a + d).
        value = int(check_type_indices([value], self.n_inputs)[0])
        check_law_size(self.n_outputs, self.name)
        a, d = self.weights
        widest = self.level_sizes[0]
        weights = []
        for level, size in enumerate(self.level_sizes, start=1):  # h levels, not users
            coefficient = np.arange(size)
            negative = ((value >> (level - 1)) & 1) ^ hadamard_parity(
                coefficient, np.full(size, value >> level))
            kept = np.stack([negative == 1, negative == 0], axis=1).ravel()  # bits 0, 1
            scale = widest // size
            weights += [scale * w for w in ratio_law_weights(kept, a, d)]
        outputs = np.arange(self.n_outputs).astype(report_dtype(self.n_outputs))
        return ExactLaw(outputs, weights, self.height * widest * (a + d))

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Valid reports: the 2 (D - 1) output indices offset_l + 2 j + bit.
        return index_report_validity(reports, self.n_outputs, self.name)

    def report_influence(self, workload_matrix):
        # Report (l, j, b) changes w . x_hat by sum(w) / D + h c b (H a_l)[j] / 2^l (module
        # docstring, a_l the left-minus-right sums of w): extreme at the level and coefficient of
        # largest |(H a_l)[j]| / 2^l, with the sign b that adds to (or subtracts from) the constant.
        # One FWHT per level and query.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        rows = np.arange(W.shape[0])
        best_size = np.full(W.shape[0], -1.0)
        best_signed = np.zeros(W.shape[0])
        best_output = np.zeros(W.shape[0], dtype=np.int64)  # output 2 j of the best (l, j)
        for k, details in enumerate(_left_minus_right(W, self.height, self.n_inputs)):
            signal = self.height * self.debias * fwht(details, axis=-1) / 2.0 ** (k + 1)
            j = np.argmax(np.abs(signal), axis=1)
            value = signal[rows, j]
            better = np.abs(value) > best_size
            best_size = np.where(better, np.abs(value), best_size)
            best_signed = np.where(better, value, best_signed)
            best_output = np.where(better, self._offsets[k] + 2 * j, best_output)
        constant = W.sum(axis=1) / self.padded_size
        # bit 1 sends +1 (adds the signal), bit 0 sends -1.
        plus = (best_signed >= 0).astype(np.int64)
        dtype = report_dtype(self.n_outputs)
        return ReportInfluence(constant - best_size, constant + best_size,
                               (best_output + 1 - plus).astype(dtype),
                               (best_output + plus).astype(dtype))

    def aggregate(self, reports):
        # Counts of each output, in chunks.
        reports = self.check_reports(reports)
        counts = np.zeros(self.n_outputs, dtype=np.int64)
        for rows in chunks(reports.shape[0]):
            counts += np.bincount(reports[rows], minlength=self.n_outputs)
        return counts

    def _check_statistic(self, statistic):
        """Output counts as int64: the right length, non-negative integers (at most 2^62)."""
        return check_output_counts(statistic, self.n_outputs, self.name)

    def n_reports(self, statistic):
        return report_count(self._check_statistic(statistic))

    def simulate_statistic(self, type_counts, rng):
        # Users are split over the heights by sequential binomials; at each height the left- and
        # right-half users of every node are the +e_u and -e_u users of an HRR drawn by
        # simulate_signed_hrr (O(m log m) binomials). O(D log D) in all: D = 2^20 takes about a
        # second.
        counts = check_type_counts(type_counts, self.n_inputs)
        padded = np.zeros(self.padded_size, dtype=np.int64)
        statistic = np.zeros(self.n_outputs, dtype=np.int64)
        remaining = counts
        for k, m in enumerate(self.level_sizes):
            left = self.height - k
            at_level = remaining if left == 1 else rng.binomial(remaining, 1.0 / left)
            remaining = remaining - at_level
            padded[:self.n_inputs] = at_level
            halves = padded.reshape(m, 2, -1).sum(axis=2)
            sent_plus, sent_minus = simulate_signed_hrr(halves[:, 0], halves[:, 1], self.p, rng)
            start = self._offsets[k]
            statistic[start + 1:start + 2 * m:2] = sent_plus
            statistic[start:start + 2 * m:2] = sent_minus
        return statistic

    # ------------------------------------------------------------------ estimation
    def coefficients(self, statistic):
        """Unbiased detail coefficients ``dhat_l`` (counts, left minus right), ``l = 1..h``.

        Parameters
        ----------
        statistic : array-like of int of shape (n_outputs,)
            Counts of each output, as :meth:`aggregate` returns them (sums of several
            are statistics too).

        Returns
        -------
        coefficients : list of ndarray
            ``h`` arrays; the ``l``-th (``l = 1..h``) has ``m_l = 2^(h - l)`` entries, the
            estimated users in the left half minus those in the right half of each node.

        Raises
        ------
        ValueError
            If ``statistic`` is not a valid statistic of this mechanism.
        """
        statistic = self._check_statistic(statistic).astype(float)
        result = []
        for k in range(self.height):
            level = statistic[self._offsets[k]:self._offsets[k + 1]]
            balance = level[1::2] - level[0::2]  # (+1 reports) - (-1 reports) per coefficient
            result.append(self.height * self.debias * fwht(balance))
        return result

    def estimate(self, statistic):
        # N / D + sum_l s_l(c) dhat_l[c >> l] / 2^l, summing to the number of reports.
        statistic = self._check_statistic(statistic)
        cells = np.arange(self.n_inputs)
        estimate = np.full(self.n_inputs, float(statistic.sum()) / self.padded_size)
        for level, detail in enumerate(self.coefficients(statistic), start=1):
            sign = 1.0 - 2.0 * ((cells >> (level - 1)) & 1)
            estimate += sign * detail[cells >> level] / 2.0**level
        return estimate

    def strategy_matrix(self):
        """``P(report | cell)``: ``2 (D - 1) x n``, row ``o`` = output ``o``.

        Returns
        -------
        Q : ndarray of shape (n_outputs, n_inputs)
            ``Q[o, c]``, the probability that a user of cell ``c`` sends output ``o``.

        Raises
        ------
        ValueError
            If the dense matrix would be too large.
        """
        check_dense_size(self.n_outputs, self.n_inputs, self.name)
        cells = np.arange(self.n_inputs)
        blocks = []
        for level, m in enumerate(self.level_sizes, start=1):
            negative = (((cells >> (level - 1)) & 1)[None, :]
                        ^ hadamard_parity(np.arange(m)[:, None], (cells >> level)[None, :]))
            plus = np.where(negative == 0, self.p, 1.0 - self.p) / (self.height * m)
            block = np.empty((2 * m, self.n_inputs))
            block[1::2] = plus
            block[0::2] = 1.0 / (self.height * m) - plus
            blocks.append(block)
        return np.vstack(blocks)

    # ------------------------------------------------------------------ analysis
    def _noise(self, details):
        """``h c^2 sum_l ||a_l||^2 / 4^l`` for stacked ``a_l`` (sums over the last axis)."""
        total = 0.0
        for level, detail in enumerate(details, start=1):
            total = total + np.sum(detail * detail, axis=-1) / 4.0**level
        return self.height * self.debias**2 * total

    def query_variance(self, workload_matrix):
        # Exact, from the module docstring's closed form.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        noise = self._noise(_left_minus_right(W, self.height, self.n_inputs))
        centered = W - W.sum(axis=1, keepdims=True) / self.padded_size
        return noise[:, None] - centered * centered

    def per_user_variance(self, gram):
        # sum_i ||a_l(w_i)||^2 = tr(A_l G A_l^T) from block sums of G (module docstring), and sum_i
        # (w_i,c - wbar_i)^2 is the diagonal of P G P with P = I - 1 1^T / D: O(n log n) for the
        # closed-form Grams; other Grams are densified up to DENSE_GRAM_CELLS cells or summed over
        # the workload's rows.
        gram = check_gram(gram, self.n_inputs)
        widths = [1 << level for level in range(self.height + 1)]
        structured = gram_with_blocks(gram, widths)
        if structured is None:
            return self._per_user_variance_fallback(gram)
        noise = 0.0
        sums = [float(np.sum(structured.block_sums(width))) for width in widths]
        for level in range(1, self.height + 1):
            noise += (2.0 * sums[level - 1] - sums[level]) / 4.0**level
        noise *= self.height * self.debias**2
        row_sums = gram.row_sums()
        D = self.padded_size
        centered_diagonal = gram.diagonal() - 2 * row_sums / D + gram.total() / D**2
        return noise - centered_diagonal

    def query_variance_summary(self, workload):
        # Interval workloads in O(p h): an interval has a_l non-zero only at the (at most two)
        # level-l nodes holding its ends, and its centered entries w_c - wbar take two values, 1 -
        # wbar inside and -wbar outside. Other workloads are reduced from their dense rows.
        check_workload_width(workload, self.n_inputs)
        intervals = workload.intervals() if is_workload(workload) else None
        if intervals is None:
            return super().query_variance_summary(workload)
        lo, hi = (np.asarray(bound, dtype=np.int64) for bound in intervals)
        noise = np.zeros(lo.shape[0])
        for level in range(1, self.height + 1):
            half = 1 << (level - 1)
            first, last = lo >> level, hi >> level
            for node, counted in ((first, True), (last, first != last)):
                start = node << level
                left = _overlap(lo, hi, start, start + half - 1)
                right = _overlap(lo, hi, start + half, start + 2 * half - 1)
                noise += np.where(counted, (left - right) ** 2, 0.0) / 4.0**level
        noise *= self.height * self.debias**2
        length = (hi - lo + 1).astype(float)
        wbar = length / self.padded_size
        inside, outside = (1.0 - wbar) ** 2, wbar**2
        whole = length == self.n_inputs  # no cell outside the interval
        smallest = np.where(whole, inside, np.minimum(inside, outside))
        mean = (length * inside + (self.n_inputs - length) * outside) / self.n_inputs
        return noise - smallest, noise - mean


def _overlap(lo, hi, start, stop):
    """Cells of ``[lo, hi]`` inside ``[start, stop]`` (closed intervals, elementwise)."""
    return np.maximum(np.minimum(hi, stop) - np.maximum(lo, start) + 1, 0).astype(float)
