"""Exact integer arithmetic and random bits shared by every kind of the client.

80-digit decimal ``exp``, dyadic numerators rounded in the direction that keeps a ratio within
``e^eps``, the two-weight law's integers and draw, uniform 52-bit words, parities, bit packing
and SplitMix64: the integers every kind's law is built from, the server's bit for bit.
"""

import decimal

# Binary digits of the dyadic probabilities of the exact Bernoulli bits (as the server's).
PRECISION = 52
_ONE = 2**PRECISION
# 80 significant digits: rounds probabilities to 2^-52 and checks ratios exactly.
DECIMAL_CONTEXT = decimal.Context(prec=80)
# SplitMix64 constants (the server's hashes: local hashing, heavy hitters, sketches).
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


def _decimal_exp(x):
    """``e^x`` with 80 significant digits (``x`` a float, taken exactly)."""
    return DECIMAL_CONTEXT.exp(decimal.Decimal(float(x)))


def _exp(x):
    """``e^x`` correctly rounded to a float (identical on every platform)."""
    return float(_decimal_exp(x))


def _dyadic_numerator(value, rounding):
    """The integer ``a`` with ``a / 2^52`` the floor (``"down"``) or ceiling of ``value``."""
    scaled = DECIMAL_CONTEXT.multiply(decimal.Decimal(value), decimal.Decimal(_ONE))
    mode = decimal.ROUND_FLOOR if rounding == "down" else decimal.ROUND_CEILING
    return int(scaled.to_integral_value(rounding=mode))


def _ratio_at_most(numerator, denominator, bound):
    """Whether ``numerator / denominator <= bound`` (integers against an 80-digit Decimal)."""
    return DECIMAL_CONTEXT.divide(decimal.Decimal(numerator), decimal.Decimal(denominator)) <= bound


# Two-weight laws (server: sklearn_ldp.mechanisms._base.ratio): total weight at most 2^62, and a
# ratio within 10^-70 (relative) of e^eps counts as above it (sklearn_ldp.mechanisms._base.exact).
_TOTAL_BITS = 62
_DECISION_MARGIN = decimal.Decimal("1e-70")


def _exact_bound(epsilon):
    """``e^eps (1 - 10^-70)`` with 80 digits: the bound every integer ratio is held to."""
    return DECIMAL_CONTEXT.multiply(_decimal_exp(epsilon),
                                    DECIMAL_CONTEXT.subtract(1, _DECISION_MARGIN))


def _within(numerator, denominator, epsilon):
    """Whether ``numerator / denominator <= e^epsilon`` for integers ``>= 0``, decided as the
    server's ``_exact.integer_ratio_at_most`` (``0 / 0`` allowed, ``x / 0`` not)."""
    if denominator == 0:
        return numerator == 0
    return _ratio_at_most(numerator, denominator, _exact_bound(epsilon))


def _within_both_ways(a, b, epsilon):
    """``a / b`` and ``b / a`` both at most ``e^epsilon`` (two outputs' weights)."""
    return _within(a, b, epsilon) and _within(b, a, epsilon)


# Repeats sklearn_ldp.mechanisms._base.exact.largest_numerator_within (standard library only, so
# that a device can copy this folder alone: not imported from the server; the tests check that
# both give the same integers).
def _largest_within(denominator, epsilon):
    """The server's ``_exact.largest_numerator_within``: the largest ``a`` with
    ``a / denominator <= e^epsilon``."""
    bound = _exact_bound(epsilon)
    candidate = int(DECIMAL_CONTEXT.multiply(bound, decimal.Decimal(denominator))
                    .to_integral_value(rounding=decimal.ROUND_FLOOR))
    while candidate > 0 and not _ratio_at_most(candidate, denominator, bound):
        candidate -= 1
    return candidate


def _ratio_weights(epsilon, n_favoured, n_other, kind):
    """``(a, d)`` of a two-weight law, exactly the server's integers: ``d = 2^s`` the largest
    with ``F a + R d <= 2^62``, ``a`` the largest with ``a / d <= e^eps`` (decided on
    integers), then checked (``d < a``, the ratio, the total)."""
    ceiling = int(_decimal_exp(epsilon).to_integral_value(rounding=decimal.ROUND_CEILING))
    d = 1 << max(0, _TOTAL_BITS - (n_favoured * ceiling + n_other).bit_length())
    bound = _exact_bound(epsilon)
    a = min(_largest_within(d, epsilon), (2**_TOTAL_BITS - n_other * d) // n_favoured)
    if a <= d:
        raise ValueError(f"epsilon={epsilon!r} is too small for the {kind!r} specification: "
                         "the favoured outputs are no more likely than the others; use "
                         "epsilon >= 1e-12.")
    if not _ratio_at_most(a, d, bound) or n_favoured * a + n_other * d > 2**_TOTAL_BITS:
        raise ValueError(f"the {kind!r} weights a={a}, d={d} are not {epsilon}-LDP.")
    return a, d


def _ratio_draw(rng, n_favoured, n_other, a, d):
    """One report of a two-weight law: ``(favoured, index)`` from one exactly uniform integer
    in ``[0, F a + R d)`` (``randrange`` rejects, it does not round)."""
    draw = rng.randrange(n_favoured * a + n_other * d)
    if draw < n_favoured * a:
        return True, draw // a
    return False, (draw - n_favoured * a) // d


def _uniform_words(rng, count):
    """``count`` independent uniform integers of ``PRECISION`` bits (one entropy request)."""
    data = rng.getrandbits(56 * count).to_bytes(7 * count, "little") if count else b""
    return [int.from_bytes(data[7 * i:7 * i + 7], "little") & (_ONE - 1) for i in range(count)]


def _parity(a, b):
    """``popcount(a & b) mod 2``: 0 where the Hadamard entry ``H[a, b]`` is ``+1``."""
    return bin(a & b).count("1") & 1


def _packed(ones, n_bits):
    """Bits ``ones`` (positions set to 1) of an ``n_bits`` vector, packed like
    ``np.packbits(bits, bitorder="little")``: a list of byte values."""
    packed = [0] * ((n_bits + 7) // 8)
    for position in ones:
        packed[position >> 3] |= 1 << (position & 7)
    return packed


def _mix64(z):
    """The SplitMix64 finalizer (a bijection of 64-bit words)."""
    z = (z ^ (z >> 30)) * _MIX1 & _MASK64
    z = (z ^ (z >> 27)) * _MIX2 & _MASK64
    return z ^ (z >> 31)


def _keep_numerator(epsilon, n_outputs=2):
    """The server's ``_exact.keep_numerator``: ``n_outputs``-ary randomized response keeps the
    truth with ``a / 2^52``, ``a`` the largest integer with ``a (n - 1) / (2^52 - a) <=
    e^eps``."""
    e = _decimal_exp(epsilon)
    nominal = DECIMAL_CONTEXT.divide(DECIMAL_CONTEXT.multiply(e, _ONE),
                                     DECIMAL_CONTEXT.add(e, n_outputs - 1))
    a = min(_ONE - 1, int(nominal.to_integral_value(rounding=decimal.ROUND_FLOOR)))
    while a > 0 and not _within(a * (n_outputs - 1), _ONE - a, epsilon):
        a -= 1
    if a * n_outputs < _ONE:
        raise ValueError(f"epsilon={epsilon!r} is too small for {n_outputs}-ary randomized "
                         "response at precision 2^-52.")
    return a
