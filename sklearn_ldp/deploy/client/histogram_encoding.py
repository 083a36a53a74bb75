"""Histogram encoding: SHE (noisy one-hot integers) and THE (their thresholded bits).

The server's ``sklearn_ldp.mechanisms.oracles.histogram_encoding``, standard library only:
the noise ratio ``r = R / 2^20`` (the least ``R`` with ``(2^20 / R)^{2 s} <= e^eps``), the
two-sided geometric drawn from 64-bit words compared with integers, the report bound, and
THE's exact ``p``, ``q`` rounded as unary encoding rounds them. The tests check that both
sides derive the same integers.
"""

import decimal
import fractions

from ._exact import DECIMAL_CONTEXT, _decimal_exp, _within
from ._spec import _check_int, _common
from .oracles import _dyadic_unary, _unary_privatizer

# As the server: r = R / 2^NOISE_BITS, NOISE_BLOCK geometric steps per 64-bit word, a
# coordinate beyond the report type with probability at most 2^-TAIL_BITS.
NOISE_BITS = 20
NOISE_BLOCK = 3
TAIL_BITS = 128
THE_MAX_SCALE = 16
# Largest values of int8 and int16 (the report types), then int32's.
_BOUNDS = (127, 32767)
_INT32_MAX = 2**31 - 1


def _noise_ratio_numerator(epsilon, scale=1):
    """The server's ``noise_ratio_numerator``: the least ``R`` with ``(2^20 / R)^{2 s} <=
    e^eps``, decided on integers."""
    one = 2**NOISE_BITS
    nominal = DECIMAL_CONTEXT.multiply(_decimal_exp(-epsilon / (2 * scale)), decimal.Decimal(one))
    R = max(1, int(nominal.to_integral_value(rounding=decimal.ROUND_CEILING)) - 2)
    while not _within(one ** (2 * scale), R ** (2 * scale), epsilon):
        R += 1
    if R >= one:
        raise ValueError(f"epsilon={epsilon!r} is too small for histogram encoding on a lattice "
                         f"of {scale} steps; use epsilon >= 1e-5.")
    return R


def _report_bound(R):
    """The largest value ``m`` of the server's report type: int8's or int16's when ``2 R^m
    <= 2^{20 m - 128}``, else int32's."""
    for m in _BOUNDS:
        if 2 * R**m <= 2 ** (NOISE_BITS * m - TAIL_BITS):
            return m
    return _INT32_MAX


def _two_sided_geometric(rng, R):
    """One draw of ``P(z) ~ r^{|z|}``: three geometric steps per word (its top 60 bits below
    ``R^j 2^{20 (3 - j)}``), the sign from the first word's lowest bit, -0 redrawn."""
    thresholds = [R**j << (NOISE_BITS * (NOISE_BLOCK - j)) for j in range(1, NOISE_BLOCK + 1)]
    while True:
        word = rng.getrandbits(64)
        negative = word & 1
        magnitude = 0
        while True:
            bits = word >> 4
            steps = sum(bits < t for t in thresholds)
            magnitude += steps
            if steps < NOISE_BLOCK:
                break
            word = rng.getrandbits(64)
        if not (negative and magnitude == 0):
            return -magnitude if negative else magnitude


def _she(spec):
    n, epsilon, _ = _common(spec)
    R = _noise_ratio_numerator(epsilon)
    bound = _report_bound(R)

    def privatize(cell, rng):
        row = [_two_sided_geometric(rng, R) + (j == cell) for j in range(n)]
        if max(abs(value) for value in row) > bound:
            # Probability below 2^-128 a coordinate: an outcome of its own, never clipped.
            raise OverflowError(f"a 'she' report has a coordinate beyond +-{bound}; no report "
                                "is sent.")
        return row

    privatize.ratio_numerator, privatize.bound = R, bound  # for the tests
    return n, privatize


def _tail(R, g):
    """``P(Z >= g)`` of the two-sided geometric of ratio ``R / 2^20``, a Fraction."""
    r = fractions.Fraction(R, 2**NOISE_BITS)
    return r**g / (1 + r) if g >= 1 else 1 - r ** (1 - g) / (1 + r)


def _the(spec):
    n, epsilon, params = _common(spec, allowed=("scale", "threshold"))
    scale = _check_int(params.get("scale"), "scale")
    threshold = _check_int(params.get("threshold"), "threshold", minimum=0)
    if scale > THE_MAX_SCALE or threshold >= 2 * scale:
        raise ValueError(f"the 'the' specification needs 1 <= scale <= {THE_MAX_SCALE} and "
                         f"0 <= threshold < 2 scale, got scale={scale}, threshold={threshold}.")
    R = _noise_ratio_numerator(epsilon, scale)
    nominal = [DECIMAL_CONTEXT.divide(decimal.Decimal(f.numerator), f.denominator)
               for f in (_tail(R, threshold + 1 - scale), _tail(R, threshold + 1))]
    numerators = _dyadic_unary(*nominal, "the", epsilon)
    privatize = _unary_privatizer(n, *numerators)
    privatize.numerators = numerators  # for the tests
    return n, privatize
