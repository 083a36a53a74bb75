"""PCKV-UE: key-value data through unary encoding with the correlated key/value perturbation.

The unary-encoding instance of PCKV (Gu et al. 2020). Padding, sampling and the
value's discretization to ``v* = +-1`` are those of :class:`~.pckv.PCKVGRR`; the sampled pair
``<k, v*>`` becomes a vector of ``d' = d + L`` entries in ``{-1, 0, +1}`` (``v*`` at ``k``,
0 elsewhere), and every entry is perturbed independently:

* entry ``k``: 0 with probability ``a = 1/2``; otherwise ``v*`` with weight ``b_k`` and
  ``-v*`` with weight ``b_f`` (the value's randomized response, ``b_k / b_f <= e^eps_2``);
* every other entry: ``+1`` or ``-1`` with probability ``q / 2`` each, 0 with ``1 - q``
  (a fake value for a key reported although not held).

Correlated budget (the paper's privacy analysis, as for PCKV-GRR): the worst ratio is
``2 b_k (1 - q) / ((b_k + b_f) q)`` (entry ``k`` reported with its kept value against a 0,
at the other input's key the other way round), that is
``eps = max(eps_2, eps_1 + ln(2 e^eps_2 / (e^eps_2 + 1)))`` with ``e^eps_1 = (1 - q) / q``.
The paper's allocation for PCKV-UE takes ``eps_2 = eps`` and ``e^eps_1 = (e^eps + 1) / 2``,
i.e. ``q = 2 / (e^eps + 3)``: ``q`` is the dyadic ``q_num / 2^52`` rounded up from it and
raised until ``2 b_k (2^52 - q_num) <= e^eps (b_k + b_f) q_num`` holds exactly on integers.

Exactness. The other entries are packed exact Bernoulli(``q_num / 2^52``) bits
(:func:`~sklearn_ldp.mechanisms._base.bits.bernoulli_packed`) with uniform random sign bits;
entry ``k`` is a uniform bit and the value's two-weight draw. Reports are two packed bit
vectors of ``d'`` bits side by side (``ceil(d' / 8)`` bytes each): the entries that are
``+1``, then those that are ``-1`` -- never an ``N x d`` array of floats.

Estimators and variances: those of PCKV-GRR with ``p = 1/2`` (the probability that the held
key's entry is non-zero) and ``q`` (an other entry's): ``n_1``, ``n_2`` count the reports
with ``+1``, ``-1`` at key ``k``.

References
----------
.. [1] X. Gu, M. Li, Y. Cheng, L. Xiong and Y. Cao, "PCKV: Locally differentially private
   correlated key-value data collection with optimized utility", USENIX Security 2020.
"""

import decimal

import numpy as np

from .._base.bits import (
    PRECISION,
    bernoulli_packed,
    check_packed_report_memory,
    column_counts,
    dyadic_numerator,
    n_packed_bytes,
    packed_report_layout,
    set_bits,
)
from .._base.exact import (
    DECIMAL_CONTEXT,
    ExactLaw,
    check_law_size,
    exp_decimal,
    integer_ratio_at_most,
    random_words,
    uniform_below,
)
from .._base.mechanism import ReportCheck
from .._base.ratio import ratio_weights, sample_ratio_law
from .pckv import KeyValueMechanism, key_value_docstring

PCKV_UE_KIND = "pckv_ue"
_ONE = 2**PRECISION


def ue_fake_numerator(epsilon, keep, flip):
    """``q_num``: the smallest dyadic ``q_num / 2^52`` at least ``2 / (e^eps + 3)`` with
    ``2 keep (2^52 - q_num) <= e^eps (keep + flip) q_num`` (decided on integers).

    Examples
    --------
    >>> keep, flip = ratio_weights(1.0, 1, 1, "pckv_ue")
    >>> round(ue_fake_numerator(1.0, keep, flip) / 2**52, 6)  # 2 / (e + 3)
    0.349755
    """
    with decimal.localcontext(DECIMAL_CONTEXT):
        nominal = decimal.Decimal(2) / (exp_decimal(epsilon) + 3)
    numerator = dyadic_numerator(nominal, "up")
    while not integer_ratio_at_most(2 * keep * (_ONE - numerator), (keep + flip) * numerator,
                                    epsilon):
        numerator += 1
    return numerator


@key_value_docstring
class PCKVUE(KeyValueMechanism):
    """PCKV-UE over ``n_keys`` keys with values on the lattice ``j / value_steps``.

    Parameters
    ----------
    <key-value parameters>

    Attributes
    ----------
    weights : tuple of int
        ``(b_k, b_f, q_num)``: the value's weights and the numerator of ``q`` over ``2^52``.
    p, q, b : float
        ``1/2``, the realised ``q`` and ``b_k / (b_k + b_f)`` (module docstring).

    <gu20 reference>

    Examples
    --------
    >>> mechanism = PCKVUE(3, pad_length=1, epsilon=4.0)
    >>> keys = (np.ones(20000, dtype=int), np.zeros(20000, dtype=int))   # one pair each
    >>> reports = mechanism.randomize((*keys, np.full(20000, 0.5)), np.random.default_rng(0))
    >>> reports.shape, reports.dtype   # +1 bits, then -1 bits, of the 4 keys (3 and a dummy)
    ((20000, 2), dtype('uint8'))
    >>> frequency, mean = mechanism.estimate(mechanism.aggregate(reports))
    >>> (frequency.round(1) + 0.0).tolist(), round(float(mean[0]), 1)
    ([1.0, 0.0, 0.0], 0.5)
    """

    kind = PCKV_UE_KIND

    def _derive(self):
        keep, flip = ratio_weights(self.epsilon, 1, 1, self.kind)
        q_num = ue_fake_numerator(self.epsilon, keep, flip)
        if 2 * q_num >= _ONE:
            raise ValueError(f"epsilon={self.epsilon} is too small for PCKV-UE: the key would "
                             "carry no information.")
        self.weights = (keep, flip, q_num)
        self.p, self.q, self.b = 0.5, q_num / _ONE, keep / (keep + flip)
        self.n_bytes = n_packed_bytes(self.n_outputs_keys)

    def _budget_weights(self):
        keep, flip, q_num = self.weights
        return (_ONE - q_num) / q_num, keep, flip

    # ------------------------------------------------------------------ client side
    def _perturb(self, key, positive, rng):
        keep, flip, q_num = self.weights
        n, n_bits = key.size, self.n_outputs_keys
        check_packed_report_memory(n, 16 * self.n_bytes, self.kind)
        nonzero = bernoulli_packed(rng, n, n_bits, q_num)
        signs = random_words(rng, -(-n * self.n_bytes // 8)).view(np.uint8)
        signs = signs[:n * self.n_bytes].reshape(n, self.n_bytes)
        plus, minus = nonzero & signs, nonzero & ~signs
        # The held key's entry: non-zero with probability 1/2, its sign v* kept with b.
        shown = uniform_below(rng, 2, n).astype(bool)
        kept, _ = sample_ratio_law(rng, n, 1, 1, keep, flip)
        up = positive == kept
        set_bits(plus, key, shown & up)
        set_bits(minus, key, shown & ~up)
        return np.hstack([plus, minus])

    def pair_law(self, key, j):
        """The exact law of the report of the pair ``<key, j / M>`` (after sampling), over
        every one of the ``3^(d + L)`` reports."""
        keep, flip, q_num = self.weights
        m, n_bits = self.value_steps, self.n_outputs_keys
        check_law_size(3 ** n_bits, self.kind)
        codes = np.arange(3 ** n_bits, dtype=np.int64)
        trits = (codes[:, None] // 3 ** np.arange(n_bits)) % 3  # 0, +1 (1), -1 (2)
        half = _ONE // 2
        own = [half * 2 * m * (keep + flip),                   # 0
               half * ((m + j) * keep + (m - j) * flip),       # +1
               half * ((m + j) * flip + (m - j) * keep)]       # -1
        other = [2 * (_ONE - q_num), q_num, q_num]
        weights = []
        for row in trits.tolist():
            weight = own[row[key]]
            for position, trit in enumerate(row):
                if position != key:
                    weight *= other[trit]
            weights.append(weight)
        outputs = np.hstack([np.packbits(trits == 1, axis=1, bitorder="little"),
                             np.packbits(trits == 2, axis=1, bitorder="little")])
        total = _ONE * 2 * m * (keep + flip) * (2 * _ONE) ** (n_bits - 1)
        return ExactLaw(outputs, weights, total)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Two packed vectors of d + L bits: no bit past the last key in either, no entry both
        # +1 and -1.
        reports = packed_report_layout(reports, 16 * self.n_bytes, self.kind)
        plus, minus = reports[:, :self.n_bytes], reports[:, self.n_bytes:]
        unused = np.uint8((0xFF << (self.n_outputs_keys - 8 * (self.n_bytes - 1))) & 0xFF)
        valid = ~np.any(plus & minus, axis=1) & ((plus[:, -1] & unused) == 0) \
            & ((minus[:, -1] & unused) == 0)
        return ReportCheck(reports, valid, f"two packed vectors of {self.n_outputs_keys} bits "
                           "(+1 entries, then -1 entries) with no entry in both and no bit set "
                           "past the last key")

    def empty_reports(self):
        """Zero reports (packed uint8 rows of ``2 ceil((d + L) / 8)`` bytes)."""
        return np.zeros((0, 2 * self.n_bytes), dtype=np.uint8)

    def aggregate(self, reports):
        """Counts of ``<k, -1>`` and ``<k, +1>`` over the ``d + L`` keys, then ``N``."""
        reports = self.check_reports(reports)
        counts = column_counts(reports, 16 * self.n_bytes)
        plus = counts[:self.n_outputs_keys]
        minus = counts[8 * self.n_bytes:8 * self.n_bytes + self.n_outputs_keys]
        statistic = np.empty(2 * self.n_outputs_keys + 1, dtype=np.int64)
        statistic[0:-1:2], statistic[1:-1:2], statistic[-1] = minus, plus, reports.shape[0]
        return statistic

    def _counts_consistent(self, statistic):
        # Each report has at most one non-zero entry per key.
        return bool(np.all(statistic[:-1].reshape(-1, 2).sum(axis=1) <= statistic[-1]))

    def __repr__(self):
        return (f"PCKVUE(n_keys={self.n_keys}, pad_length={self.pad_length}, "
                f"epsilon={self.epsilon})")
