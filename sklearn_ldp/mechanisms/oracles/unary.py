"""Unary encoding: symmetric (basic one-time RAPPOR) and optimized (OUE) frequency oracles.

Each user of type ``u`` sends ``n`` independent bits, packed (``np.packbits(..., axis=1,
bitorder="little")``, ``ceil(n / 8)`` bytes per user): bit ``u`` is 1 with probability ``p``
and every other bit with probability ``q``:

* ``"rappor"`` (symmetric unary encoding, SUE): ``p = e^{eps/2} / (1 + e^{eps/2})``,
  ``q = 1 - p``;
* ``"oue"`` (optimized unary encoding, Wang et al. 2017): ``p = 1/2``, ``q = 1 / (e^eps + 1)``,
  which minimizes ``q (1 - q) / (p - q)^2`` subject to ``p (1 - q) / (q (1 - p)) = e^eps``.

Two outputs that differ only in bits ``u`` and ``u'`` have probability ratio at most
``p (1 - q) / (q (1 - p))``, so the mechanism is exactly epsilon-LDP when that ratio is at most
``e^eps``.

Decision (exact sampling). The bits are drawn exactly (see :mod:`._bits`), which needs dyadic
probabilities. The realized ``p`` is the nominal one rounded *down* and ``q`` rounded *up* to
a multiple of ``2^-52`` (``_bits.PRECISION``): both moves lower ``p (1 - q) / (q (1 - p))``,
so the realized mechanism is never less private than the nominal one (checked exactly in
80-digit arithmetic at construction). For ``"rappor"`` the realized ``p + q`` is still exactly
1. The estimator and the variance use the realized values ``self.p`` and ``self.q`` (exact
float64 numbers), so rounding the probabilities biases nothing and the variance is exact.

Estimator and variance: see :mod:`.support`. The server counts ``C_j``, the reports with bit
``j`` set; ``(C - q N) / (p - q)`` is unbiased, followed by the known-total step. The bits
are independent, so the pair probabilities are ``r_own = p q`` and ``r_other = q^2``, and
the per-user variance of cell ``j`` before the known-total step is
``(q (1 - q) + [j = u] (p - q)(1 - p - q)) / (p - q)^2``.

Exact simulation. ``C_j`` is the sum of independent bits, ``Binomial(x_j, p) +
Binomial(N - x_j, q)``, independently across ``j``: ``simulate_statistic`` draws it in
``O(n)`` with no per-user randomness.

The dense strategy matrix (:func:`rappor_strategy`, and ``strategy_matrix()`` with the
realized probabilities) has all ``2^n`` bit vectors as outputs, so it is only for
``n <= MAX_EXACT_RAPPOR_CELLS``.

Pure numpy; no scikit-learn here.
"""

import decimal

import numpy as np

from ..._validation import check_epsilon, check_positive_int
from .._base.bits import (
    DECIMAL_CONTEXT,
    PRECISION,
    bernoulli_bits,
    bernoulli_packed,
    check_packed_report_memory,
    column_counts,
    dyadic_numerator,
    packed_report_layout,
    packed_rule,
    ratio_at_most,
    set_bits,
    unused_bits_clear,
)
from .._base.docstrings import shared_sections
from .._base.exact import ExactLaw, check_law_size, exp_decimal
from .._base.mechanism import ReportCheck, check_type_counts, check_type_indices, register
from .support import SupportOracle, oracle_docstring

MAX_EXACT_RAPPOR_CELLS = 16


def rappor_strategy(n, epsilon):
    """The ``2^n x n`` strategy of symmetric unary encoding (outputs indexed by bit vectors).

    Output ``y`` (an integer whose bit ``u`` is bit ``u`` of the report) has probability
    ``p^(n-h) (1-p)^h`` for a user of type ``u``, ``h`` the Hamming distance from ``y`` to the
    one-hot vector of ``u``.

    Parameters
    ----------
    n : int
        Domain size (bits per report), from 1 to ``MAX_EXACT_RAPPOR_CELLS`` (16).
    epsilon : float
        Privacy budget of one report, in ``(0, 50]``; each bit is flipped with probability
        ``1 / (1 + e^{eps/2})``.

    Returns
    -------
    Q : ndarray of shape (2 ** n, n)
        The strategy matrix; each column is a probability distribution over the reports.

    Raises
    ------
    ValueError
        If ``n`` or ``epsilon`` is invalid, or ``n > 16`` (the matrix has ``2^n`` rows).

    See Also
    --------
    SymmetricUnaryEncoding : The same mechanism, structured (packed bits, any ``n``).
    randomized_response_strategy : The strategy of randomized response.

    References
    ----------
    .. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
       privacy-preserving ordinal response", ACM CCS 2014.

    Examples
    --------
    >>> Q = rappor_strategy(3, 1.0)
    >>> Q.shape, Q.sum(axis=0).round(12).tolist()
    ((8, 3), [1.0, 1.0, 1.0])
    >>> round(float(np.log(Q[1, 0] / Q[2, 0])), 12)  # type 0: reports 0b001 vs 0b010
    1.0
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    if n > MAX_EXACT_RAPPOR_CELLS:
        raise ValueError(
            f"the exact 'rappor' strategy matrix has 2^n rows and is limited to n <= "
            f"{MAX_EXACT_RAPPOR_CELLS} cells (got {n}); use 'hadamard' or 'optimized' instead."
        )
    p = np.exp(epsilon / 2) / (1 + np.exp(epsilon / 2))
    outputs = np.arange(2**n)[:, None]
    bits = (outputs >> np.arange(n)[None, :]) & 1  # bits[y, u] = bit u of output y
    ones = bits.sum(axis=1, keepdims=True)
    hamming = ones + 1 - 2 * bits  # distance from y to the one-hot vector e_u
    return p ** (n - hamming) * (1 - p) ** hamming

def _unary_strategy(n, p, q):
    """``2^n x n`` matrix: output ``y`` (bit ``j`` of ``y`` = bit ``j`` of the report)."""
    outputs = np.arange(2**n)[:, None]
    bits = (outputs >> np.arange(n)[None, :]) & 1  # bits[y, u] = bit u of output y
    others = bits.sum(axis=1, keepdims=True) - bits  # ones among the bits other than u
    own = np.where(bits == 1, p, 1 - p)
    return own * q**others * (1 - q) ** (n - 1 - others)


# The parameters and attributes of the unary encodings, written in at ``<unary parameters>``.
unary_docstring = shared_sections({"unary parameters": """\
Parameters
----------
n_inputs : int
    Domain size ``n`` (bits per report), at least 1.
epsilon : float
    Privacy budget of one report, in ``(0, 50]``.

Attributes
----------
p, q : float
    Realized probabilities (multiples of ``2^-52``) of bit ``u`` and of every other bit.
p_numerator, q_numerator : int
    ``p = p_numerator / 2^52``, ``q = q_numerator / 2^52``.
pair_own, pair_other : float
    ``p q`` and ``q^2`` (independent bits)."""})


@unary_docstring
class UnaryEncoding(SupportOracle):
    """Unary encoding frequency oracle (base of ``"rappor"`` and ``"oue"``), any domain size.

    Use :class:`SymmetricUnaryEncoding` or :class:`OptimizedUnaryEncoding`; subclasses only
    give the nominal ``(p, q)`` (see the module docstring for the mathematics).

    <unary parameters>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = OptimizedUnaryEncoding(4, 1.0)
    >>> reports = mechanism.randomize(np.array([0, 1, 1, 3]), np.random.default_rng(0))
    >>> reports.shape, reports.dtype
    ((4, 1), dtype('uint8'))
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (4,)

    The exact law of one report (:meth:`exact_law`):

    >>> law = OptimizedUnaryEncoding(3, 1.0).exact_law(0)
    >>> law.outputs.shape, law.total == 2 ** (3 * 52)
    ((8, 1), True)

    An exact draw of the aggregate of many users (:meth:`simulate_statistic`):

    >>> mechanism = SymmetricUnaryEncoding(3, 1.0)
    >>> mechanism.simulate_statistic(np.array([5, 0, 2]), np.random.default_rng(0))[-1]
    np.int64(7)
    """

    kind = None

    def __init__(self, n_inputs, epsilon):
        if self.kind is None:
            raise TypeError("UnaryEncoding is abstract: use SymmetricUnaryEncoding ('rappor') "
                            "or OptimizedUnaryEncoding ('oue').")
        self._set_domain_and_budget(n_inputs, epsilon)
        with decimal.localcontext(DECIMAL_CONTEXT):
            p_nominal, q_nominal = self._nominal_probabilities(exp_decimal(self.epsilon))
        p_num = dyadic_numerator(p_nominal, "down")
        q_num = dyadic_numerator(q_nominal, "up")
        one = 2**PRECISION
        # Rounding p down and q up cannot raise the ratio; this exact check guards the
        # 80-digit arithmetic against a nominal value lying on a multiple of 2^-52.
        while q_num < p_num and not ratio_at_most(p_num * (one - q_num), q_num * (one - p_num),
                                                  exp_decimal(self.epsilon)):
            q_num += 1
        if p_num <= q_num:
            raise ValueError(
                f"epsilon={self.epsilon!r} is too small for {self.kind!r}: at the sampler's "
                f"precision 2^-{PRECISION} the probabilities p and q coincide; use epsilon "
                ">= 1e-14."
            )
        self.p_numerator, self.q_numerator = p_num, q_num
        self.p = p_num / one  # exact: numerators are below 2^53
        self.q = q_num / one
        self.pair_own = self.p * self.q  # the bits are independent
        self.pair_other = self.q * self.q

    @staticmethod
    def _nominal_probabilities(e):
        """``(p, q)`` as Decimals, given ``e = e^eps`` (called in an 80-digit context)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        # Packed reports (little bit order): every bit 1 with probability q, then bit u redrawn with
        # p.
        indices = check_type_indices(indices, self.n_inputs)
        check_packed_report_memory(indices.shape[0], self.n_inputs, self.name)
        reports = bernoulli_packed(rng, indices.shape[0], self.n_inputs, self.q_numerator)
        # Overwriting bit u with an independent Bernoulli(p) bit leaves the other bits
        # independent Bernoulli(q), exactly the mechanism.
        own = bernoulli_bits(rng, indices.shape[0], self.p_numerator)
        set_bits(reports, indices, own)
        return reports

    def exact_law(self, value):
        # All 2^n packed bit vectors (uint8 rows; vector v has bit j equal to bit j of the integer
        # v, in the order of v). Bit value is 1 with probability p_numerator / 2^52 and every other
        # bit with q_numerator / 2^52, independently: the weight of a vector is the product of its
        # bits' numerators (Python integers), over 2^(52 n).
        value = int(check_type_indices([value], self.n_inputs)[0])
        n = self.n_inputs
        check_law_size(2**n, self.name)
        codes = np.arange(2**n, dtype=np.int64)
        bits = ((codes[:, None] >> np.arange(n)) & 1).astype(np.uint8)
        outputs = np.packbits(bits, axis=1, bitorder="little")
        one = 2**PRECISION
        own = bits[:, value].tolist()
        others = (bits.sum(axis=1) - bits[:, value]).tolist()
        p, q = self.p_numerator, self.q_numerator
        weights = [(p if b else one - p) * q**k * (one - q) ** (n - 1 - k)
                   for b, k in zip(own, others, strict=True)]
        return ExactLaw(outputs, weights, one**n)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Every vector of n bits is a valid report (each has positive probability): only bits set
        # past bit n - 1 (the last byte's padding) are not.
        reports = packed_report_layout(reports, self.n_inputs, self.name)
        return ReportCheck(reports, unused_bits_clear(reports, self.n_inputs),
                           packed_rule(self.n_inputs))

    def _support_extremes(self, centered):
        """Any set of bits is a valid report: the extremes sum the row's negative (positive)
        entries, attained by the report with exactly those bits set."""
        low = np.minimum(centered, 0.0).sum(axis=1)
        high = np.maximum(centered, 0.0).sum(axis=1)
        low_reports = np.packbits(centered < 0, axis=1, bitorder="little")
        high_reports = np.packbits(centered > 0, axis=1, bitorder="little")
        return low, high, low_reports, high_reports, True

    def _support_counts(self, reports):
        return column_counts(reports, self.n_inputs)

    def simulate_statistic(self, type_counts, rng):
        # C_j = Binomial(x_j, p) + Binomial(N - x_j, q), independent across j: O(n), no per-user
        # randomness.
        counts = check_type_counts(type_counts, self.n_inputs)
        total = counts.sum()
        # A simulation (no report leaves a device): float binomials with the realised p, q.
        support = rng.binomial(counts, self.p) + rng.binomial(total - counts, self.q)
        return np.append(support.astype(np.int64), np.int64(total))

    def strategy_matrix(self):
        """The exact ``2^n x n`` strategy with the realized ``p``, ``q`` (``n <= 16``).

        Row ``y`` is the report whose bit ``j`` is bit ``j`` of the integer ``y``.

        Returns
        -------
        Q : ndarray of shape (2 ** n_inputs, n_inputs)
            ``Q[y, u]``, the probability that a user of type ``u`` sends report ``y``.

        Raises
        ------
        ValueError
            If ``n > 16``.
        """
        if self.n_inputs > MAX_EXACT_RAPPOR_CELLS:
            raise ValueError(
                f"the exact {self.kind!r} strategy matrix has 2^n rows and is limited to n <= "
                f"{MAX_EXACT_RAPPOR_CELLS} cells (got {self.n_inputs})."
            )
        return _unary_strategy(self.n_inputs, self.p, self.q)


@register
@unary_docstring
class SymmetricUnaryEncoding(UnaryEncoding):
    """Symmetric unary encoding (basic one-time RAPPOR): ``p = e^{eps/2} / (1 + e^{eps/2})``,
    ``q = 1 - p`` (realized: rounded to multiples of ``2^-52``, ``p`` down, ``q`` up).

    Each user sends ``n`` bits, packed: the one-hot vector of their cell with every bit
    flipped independently with probability ``q``. The server counts the reports with each
    bit set and estimates ``(C - q N) / (p - q)``, then spreads the difference to the known
    total ``N`` over the cells (module :mod:`~sklearn_ldp.mechanisms.oracles.unary`).

    <unary parameters>

    See Also
    --------
    OptimizedUnaryEncoding : Same reports, ``p = 1/2``: less variance for ``eps > 0``.
    RandomizedResponse : One cell index per user; less variance on small domains.
    rappor_strategy : The same mechanism as a dense ``2^n x n`` matrix.

    References
    ----------
    .. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
       privacy-preserving ordinal response", ACM CCS 2014.
    .. [2] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
       for frequency estimation", USENIX Security 2017.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = SymmetricUnaryEncoding(4, 2.0)
    >>> round(mechanism.p, 4), round(mechanism.q, 4), mechanism.p + mechanism.q
    (0.7311, 0.2689, 1.0)
    >>> users = np.repeat([0, 1, 2, 3], [4000, 3000, 2000, 1000])
    >>> reports = mechanism.randomize(users, np.random.default_rng(0))
    >>> reports.shape, np.unpackbits(reports[:2], axis=1, count=4, bitorder="little").tolist()
    ((10000, 1), [[1, 1, 0, 1], [1, 0, 0, 0]])
    >>> mechanism.estimate(mechanism.aggregate(reports)).round(-1)
    array([4040., 3000., 1960., 1010.])
    """

    kind = "rappor"

    @staticmethod
    def _nominal_probabilities(e):
        root = e.sqrt()
        p = root / (1 + root)
        return p, 1 - p


@register
@unary_docstring
@oracle_docstring
class OptimizedUnaryEncoding(UnaryEncoding):
    """Optimized unary encoding (OUE): ``p = 1/2``, ``q = 1 / (e^eps + 1)``
    (realized ``q``: rounded up to a multiple of ``2^-52``; ``p = 1/2`` is exact).

    Reports are ``n`` packed bits, as for :class:`SymmetricUnaryEncoding`; Wang et al.
    chose ``p`` and ``q`` to minimize the variance ``q (1 - q) / (p - q)^2`` of each count
    under the privacy constraint ``p (1 - q) / (q (1 - p)) = e^eps``.

    <unary parameters>

    See Also
    --------
    SymmetricUnaryEncoding : Basic RAPPOR, the same reports with ``p + q = 1``.
    OptimizedLocalHashing : About the same variance, with reports of two integers.
    RandomizedResponse : One cell index per user; less variance on small domains.

    <wang17 reference>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = OptimizedUnaryEncoding(8, 1.0)
    >>> mechanism.p, round(mechanism.q, 4)
    (0.5, 0.2689)

    Per-user variance of a cell's count on 64 cells at ``epsilon = 1``, against symmetric
    unary encoding and randomized response:

    >>> from sklearn_ldp.mechanisms import RandomizedResponse, SymmetricUnaryEncoding
    >>> [round(float(M(64, 1.0).per_user_variance(np.eye(64))[0]), 1)
    ...  for M in (OptimizedUnaryEncoding, SymmetricUnaryEncoding, RandomizedResponse)]
    [233.0, 246.8, 1439.0]
    """

    kind = "oue"

    @staticmethod
    def _nominal_probabilities(e):
        return decimal.Decimal(1) / 2, 1 / (e + 1)
