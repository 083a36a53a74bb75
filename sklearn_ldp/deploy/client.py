"""Dependency-free LDP client: rebuild a randomizer from the server's JSON, privatize one record.

This file uses the Python standard library only (no numpy, no other ``sklearn_ldp`` module), so
a team can copy it alone onto a device. The server builds a mechanism (``LDPEncoder`` or
``sklearn_ldp.mechanisms``) and ships ``mechanism.to_json()``; each device runs::

    randomizer = Randomizer.from_json(spec_text, categories={"age": ["<30", "30-50", ">50"],
                                                             "smoker": ["no", "yes"]})
    report = randomizer.privatize({"age": "30-50", "smoker": "yes"})
    send(json.dumps(report))

and the server turns the reports it receives back into an array with
``sklearn_ldp.deploy.collect.reports_from_client`` (see ``docs/client.md``).

Entropy. By default every random draw comes from the operating system
(``random.SystemRandom``, i.e. ``os.urandom``). ``seed=`` switches to a seeded Mersenne
Twister: **for tests and simulation only**, never in deployment (anyone who knows the seed can
undo the randomization); a seeded Randomizer emits a UserWarning saying so.

Exactness. A report has exactly the distribution of one row of the server's
``mechanism.randomize``, computed with the same arithmetic:

* unary encoding (``rappor``, ``oue``) and ``subset_selection`` draw their bits with dyadic
  probabilities ``a / 2^52``, with ``a`` rounded from the nominal probability in 80-digit
  decimal arithmetic in the direction that keeps the ratio ``<= e^eps`` (the same integers
  ``a`` as the server, checked by the tests); a bit is ``[U < a]`` for ``U`` uniform on 52
  bits, which is exactly Bernoulli(``a / 2^52``);
* ``randomized_response``, local hashing (``olh``, ``blh``), ``hadamard``, ``hrr``, ``haar``
  and the ``hierarchical`` tree's levels sample a two-weight law: favoured outputs of integer
  weight ``a``, the others ``d = 2^s``, ``a / d <= e^eps`` decided on integers in 80-digit
  decimal arithmetic (the server's integers, checked by the tests, and checked again here
  when the spec loads), drawn from one exactly uniform integer in ``[0, total)``
  (``randrange``: rejection, no rounding) -- exactly the law of the server's ``randomize``;
  their levels, coefficients and hash seeds are exactly uniform integers too;
* the other discrete kinds compare a uniform double (53 bits, like numpy's ``random``) with
  the server's floating-point probability formula. The client evaluates ``e^eps`` correctly
  rounded (the same on every device); numpy's ``exp`` can differ from it in the last bit, so
  those probabilities may differ from the server's by about ``1e-16`` (relative), far below
  anything observable (see ``docs/client.md``);
* ``factorization`` samples the integer table the spec carries (columns summing to
  ``2^52``) by integer inverse CDF on ``rng.getrandbits(52)``, after the server's exact check
  of the table (every row's ``max <= e^eps min`` on integers): the server's law exactly;
* local hashing uses the server's hash family (two-character additive tabulation with
  SplitMix64 table entries) bit for bit;
* the Hadamard marginal kinds (``inp_ht``, ``marg_ht``), PEM/TreeHist and the sketches keep
  the true sign or bucket when a uniform 52-bit word is below the server's numerator ``a``
  (``_keep_numerator``: the largest with ``a (g - 1) / (2^52 - a) <= e^eps``, decided on
  integers; the sketch's flip numerator is ``2^52 - a``); coefficients, sets, rounds and
  other buckets are ``randrange`` draws (rejection, exactly uniform). SPL and InpEM split
  ``eps`` into the server's shares (``_split_budget``: the product of the sampled ratios
  is within ``e^eps``, decided on integers);
* the Gaussian kinds recompute ``sigma`` with stdlib ``erf``/``erfc`` instead of scipy's
  ``ndtr`` (agreement about ``1e-12`` relative) and draw Gaussians with
  ``random.normalvariate``: floating-point Gaussian noise is the usual approximation of a
  continuous distribution (its low-order bits are not exactly distributed as the ideal
  mechanism's).

* the math-layer kinds (numbers: ``duchi``, ``piecewise``, ``hybrid``, ``square_wave``,
  ``sampled_mean``; ``multi_attribute``; LDPEncoder's ``"columns"`` records; heavy hitters:
  ``prefix_heavy_hitters``, ``sketch``; rounds: ``longitudinal``, ``dbitflip_pm``,
  ``1bitmean_pm``) take values that are not cell indices. The numeric kinds report points of
  the server's public grid with its exact integer law (``mechanisms/_window.py``): the
  window weights ``a / b <= e^eps``, the grid size and window, Hybrid's mixture numerator and
  the per-value budget of ``sampled_mean`` are re-derived here with the server's integer and
  80-digit decimal arithmetic and compared with the spec's ``grid`` (an edited one is
  refused); the value's position is rounded by a dyadic bit ``[U_52 < F]``, the cell drawn
  from ``random.randrange(T)`` (exact rejection) by the closed-form inverse CDF, Duchi's bit
  as ``[U_63 < b 2^35 + F (a - b)]``, and the grid value computed as ``float(j) * slope +
  offset`` from the same correctly rounded floats as the server's; their oracles inside are
  the exact kinds above; the heavy-hitter hashes (SplitMix64 rows
  of PEM/TreeHist, the sketch's fingerprints and salts) are the server's bit for bit and the
  heavy hitters' and 1BitMean's bits are exact dyadic draws with the server's numerators.
  Hybrid's ``eps_star`` is the server's float literal, and RS+FD's attribute budget is
  bisected the same way on both sides (the same float). The longitudinal kinds draw with the
  integer numerators the server ships in the spec, checked exactly against ``epsilon_perm``
  and ``epsilon_1`` here (nothing re-solved).

The memoizing kinds (``longitudinal``, ``dbitflip_pm``, ``1bitmean_pm``) never store a
permanent response: it is *derived* from a 128-bit secret of the device and the value through
SipHash-2-4 (a keyed PRF, bit for bit the server's), read by the exact samplers. The secret
lives in a client **state file** (``Randomizer(..., state=path)``): JSON, created on first
use from the operating system's entropy (a seeded Randomizer derives it from the seed,
simulation only), written atomically (temporary file, fsync, rename, fsync of the folder)
under a non-blocking ``fcntl.flock`` of ``path + ".lock"`` (a second process using the file
at the same moment is refused), bound to the spec by the SHA-256 of its canonical JSON and
sealed by a SHA-256 of its content. Restoring a backup of the file gives the same secret, so
the same permanent responses; a lost secret means new permanent responses (``epsilon_perm``
spent again for every value reported afterwards). A state file of another spec, edited,
truncated or gone after use is a ValueError naming the file: the client never makes a new
secret in place of one it could not read.

Central-model mechanisms (``MatrixMechanism``, the count mechanisms) run on a trusted
curator, not on clients: they have no client randomizer here.

Adding a kind: write one ``_<kind>(spec)`` function returning ``(n_inputs, privatize_cell)``
(or a ``_ValueKind`` for values that are not cell indices) and add it to ``RANDOMIZERS``.
"""

import bisect
import decimal
import fractions
import hashlib
import itertools
import json
import math
import os
import random
import secrets
import tempfile
import warnings
from collections.abc import Mapping

__all__ = ["RANDOMIZERS", "SPEC_VERSION", "Randomizer"]

SPEC_VERSION = 1

# Binary digits of the dyadic probabilities of the exact Bernoulli bits (as the server's).
PRECISION = 52
_ONE = 2**PRECISION
# 80 significant digits: rounds probabilities to 2^-52 and checks ratios exactly.
DECIMAL_CONTEXT = decimal.Context(prec=80)

# Local hashing: largest number of buckets, SplitMix64 constants.
MAX_BUCKETS = 2**20
LINEAR_MIN_CELLS = 2048  # local hashing: the linear family above this many cells (as the server)
_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB

# Largest epsilon of the rejection-sampling Gaussian randomizer (acceptance e^(eps/2)/2 <= 1).
MAX_REJECTION_EPSILON = 2.0 * math.log(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT1_2 = math.sqrt(0.5)

# Relative slack of the root-finding checks (the longitudinal budget), as on the server.
PRIVACY_RTOL = 1e-9

# Emitted when a seed is given: whoever knows the seed can recompute the noise.
SEEDED_WARNING = ("Randomizer(seed=...) makes the noise reproducible: deployed noise must not "
                  "be seeded, since whoever knows the seed can undo the randomization. Use a "
                  "seed for tests and simulation only; on devices pass no seed (operating-"
                  "system entropy).")


# ---------------------------------------------------------------------- exact arithmetic
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


def _ndtr(x):
    """Standard normal CDF from ``erf``/``erfc`` (the branches scipy's ``ndtr`` uses)."""
    t = x * _SQRT1_2
    if abs(t) < _SQRT1_2:
        return 0.5 + 0.5 * math.erf(t)
    tail = 0.5 * math.erfc(abs(t))
    return 1.0 - tail if t > 0 else tail


def _log_ndtr(x):
    """``log Phi(x)``, by the asymptotic series where ``Phi(x)`` would underflow."""
    if x > -37.0:
        return math.log(_ndtr(x))
    inverse_square = 1.0 / (x * x)
    series, term = 1.0, 1.0
    for k in range(1, 7):  # 1 - 1/x^2 + 3/x^4 - 15/x^6 ...: relative error < 1e-16 here
        term *= -(2 * k - 1) * inverse_square
        series += term
    return -0.5 * x * x - math.log(-x) - math.log(_SQRT_2PI) + math.log(series)


def _normal_pdf(t):
    return math.exp(-0.5 * (t * t)) / _SQRT_2PI


# ---------------------------------------------------------------------- spec checks
def _spec_field(spec, key, kind):
    if key not in spec:
        raise ValueError(f"the {kind!r} specification has no {key!r} field: it was not written "
                         "by mechanism.to_json() of a compatible sklearn_ldp.")
    return spec[key]


def _check_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return value


def _check_epsilon(value, kind):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"epsilon of the {kind!r} specification must be a number, got "
                         f"{value!r}.")
    value = float(value)
    if not math.isfinite(value) or not 0.0 < value <= 50.0:
        raise ValueError(f"epsilon of the {kind!r} specification must lie in (0, 50], got "
                         f"{value!r}.")
    return value


def _common(spec, allowed=()):
    """``(n_inputs, epsilon, params)`` of a spec, refusing parameters this client does not
    know (a newer server may have added one that changes the randomizer)."""
    kind = spec["mechanism"]
    n_inputs = _check_int(_spec_field(spec, "n_inputs", kind), "n_inputs")
    epsilon = _check_epsilon(_spec_field(spec, "epsilon", kind), kind)
    params = spec.get("params") or {}
    if not isinstance(params, Mapping):
        raise ValueError(f"params of the {kind!r} specification must be an object, got "
                         f"{params!r}.")
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"the {kind!r} specification has parameters {unknown} that this client "
                         f"does not know (it knows {sorted(allowed)}); update client.py.")
    return n_inputs, epsilon, dict(params)


def _check_matrix(rows, name, kind):
    """A non-empty rectangular list of lists of finite floats."""
    if not isinstance(rows, list) or not rows or not all(
            isinstance(row, list) and row for row in rows):
        raise ValueError(f"{name} of the {kind!r} specification must be a non-empty list of "
                         "non-empty lists (rows).")
    width = len(rows[0])
    matrix = []
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"{name} of the {kind!r} specification is not rectangular: row {i} "
                             f"has {len(row)} entries, row 0 has {width}.")
        values = []
        for value in row:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
                    value):
                raise ValueError(f"{name} of the {kind!r} specification must hold finite "
                                 f"numbers; row {i} holds {value!r}.")
            values.append(float(value))
        matrix.append(values)
    return matrix


# ---------------------------------------------------------------------- frequency oracles
def _make_randomized_response(n, epsilon):
    # The server's integer weights: own cell a, each other cell d (exact two-weight law).
    weights = _ratio_weights(epsilon, 1, n - 1, "randomized_response") if n > 1 else None

    def privatize(cell, rng):
        if n == 1:
            return 0
        keep, other = _ratio_draw(rng, 1, n - 1, *weights)
        if keep:
            return cell
        return other + (other >= cell)  # uniform over the n - 1 cells other than the user's

    privatize.weights = weights  # exposed for the tests (the server's integers)
    return privatize


def _unary_numerators(kind, epsilon):
    """``(p_numerator, q_numerator)`` of unary encoding, exactly as the server rounds them."""
    e = _decimal_exp(epsilon)
    with decimal.localcontext(DECIMAL_CONTEXT):
        if kind == "rappor":
            root = e.sqrt()
            p_nominal = root / (1 + root)
            q_nominal = 1 - p_nominal
        else:  # "oue"
            p_nominal, q_nominal = decimal.Decimal(1) / 2, 1 / (e + 1)
    p_num = _dyadic_numerator(p_nominal, "down")
    q_num = _dyadic_numerator(q_nominal, "up")
    while q_num < p_num and not _ratio_at_most(p_num * (_ONE - q_num), q_num * (_ONE - p_num), e):
        q_num += 1
    if p_num <= q_num:
        raise ValueError(f"epsilon={epsilon!r} is too small for {kind!r}: at precision 2^-52 "
                         "the probabilities p and q coincide.")
    return p_num, q_num


def _make_unary(kind, n, epsilon):
    p_num, q_num = _unary_numerators(kind, epsilon)

    def privatize(cell, rng):
        words = _uniform_words(rng, n)
        ones = [j for j, word in enumerate(words) if word < (p_num if j == cell else q_num)]
        return _packed(ones, n)

    return privatize


def _randomized_response(spec):
    n, epsilon, _ = _common(spec)
    return n, _make_randomized_response(n, epsilon)


def _rappor(spec):
    n, epsilon, _ = _common(spec)
    return n, _make_unary("rappor", n, epsilon)


def _oue(spec):
    n, epsilon, _ = _common(spec)
    return n, _make_unary("oue", n, epsilon)


def _subset_numerator(n, k, epsilon):
    """Numerator of ``P(u in S)``, rounded down exactly as the server does."""
    e = _decimal_exp(epsilon)
    with decimal.localcontext(DECIMAL_CONTEXT):
        p_nominal = k * e / (k * e + (n - k))
    p_num = _dyadic_numerator(p_nominal, "down")
    while p_num > 0 and not _ratio_at_most(p_num * (n - k), (_ONE - p_num) * k, e):
        p_num -= 1
    if p_num * n <= k * _ONE:
        raise ValueError(f"epsilon={epsilon!r} is too small for 'subset_selection' at precision "
                         "2^-52.")
    return p_num


def _subset_selection(spec):
    n, epsilon, params = _common(spec, ("subset_size",))
    if n < 2:
        raise ValueError("the 'subset_selection' specification needs n_inputs >= 2.")
    if params.get("subset_size") is None:
        raise ValueError("the 'subset_selection' specification must pin params['subset_size'] "
                         "(the server writes the size it chose).")
    k = _check_int(params["subset_size"], "subset_size")
    if k > n - 1:
        raise ValueError(f"subset_size must lie in [1, n_inputs - 1] = [1, {n - 1}], got {k}.")
    p_num = _subset_numerator(n, k, epsilon)

    def privatize(cell, rng):
        include = _uniform_words(rng, 1)[0] < p_num
        # The other members: a uniform subset of the n - 1 cells other than the user's.
        others = rng.sample(range(n - 1), k - include)
        ones = [j + (j >= cell) for j in others] + ([cell] if include else [])
        return _packed(ones, n)

    return n, privatize


def _olh_buckets(epsilon, hash_family="tabulation"):
    """The server's default ``g`` (with ``math.exp``, as the server): ``round(e^eps) + 1``
    for tabulation, the power of two of least rare-item variance for the linear family."""
    e = math.exp(epsilon)
    if hash_family == "linear":
        powers = [2**r for r in range(1, MAX_BUCKETS.bit_length())]
        return min(powers, key=lambda g: (e + g - 1) ** 2 / (g - 1))
    return int(min(max(round(e) + 1, 2), MAX_BUCKETS))


def _hash_family(params):
    family = params.get("hash_family", "tabulation")  # absent: a spec from before "linear"
    if family not in ("tabulation", "linear"):
        raise ValueError(f"hash_family must be 'tabulation' or 'linear', got {family!r}.")
    return family


def _make_local_hashing(n, epsilon, g, hash_family="tabulation"):
    g = _check_int(g, "n_buckets", minimum=2)
    if g > MAX_BUCKETS:
        raise ValueError(f"n_buckets must be at most {MAX_BUCKETS}, got {g}.")
    if hash_family == "linear" and g & (g - 1):
        raise ValueError(f"the linear hash family needs n_buckets a power of two, got {g}.")
    # g-ary randomized response of the bucket with the server's integer weights.
    weights = _ratio_weights(epsilon, 1, g - 1, "olh")
    n_lo = math.isqrt(n - 1) + 1 if n > 1 else 1
    bits_mask = (1 << max(1, (n - 1).bit_length())) - 1
    n_rows = g.bit_length() - 1

    def tabulation_bucket(seed, cell):
        low = _mix64((seed + (cell % n_lo + 1) * _GOLDEN) & _MASK64) >> 32
        high = _mix64((seed + (cell // n_lo + 1) * _GOLDEN) & _MASK64) & _MASK32
        return (((low + high) & _MASK32) * g) >> 32

    def linear_bucket(seed, cell):
        # H(x) = M x over GF(2); row k of M is the k-th SplitMix64 output, cut to the cell bits.
        hashed = 0
        for k in range(n_rows):
            row = _mix64((seed + (k + 1) * _GOLDEN) & _MASK64) & bits_mask
            hashed |= _parity(row, cell) << k
        return hashed

    bucket = linear_bucket if hash_family == "linear" else tabulation_bucket

    def report_given_seed(cell, seed, rng):
        hashed = bucket(seed, cell)
        keep, other = _ratio_draw(rng, 1, g - 1, *weights)
        return [seed, hashed if keep else other + (other >= hashed)]

    def privatize(cell, rng):
        return report_given_seed(cell, rng.getrandbits(64), rng)

    # Exposed for the tests: hash agreement, the server's integers, the law given a seed.
    privatize.bucket = bucket
    privatize.weights = weights
    privatize.report_given_seed = report_given_seed
    return privatize


def _olh(spec):
    n, epsilon, params = _common(spec, ("n_buckets", "hash_family"))
    family = _hash_family(params)
    g = params.get("n_buckets")
    g = _olh_buckets(epsilon, family) if g is None else g
    return n, _make_local_hashing(n, epsilon, g, family)


def _blh(spec):
    n, epsilon, params = _common(spec, ("hash_family",))
    return n, _make_local_hashing(n, epsilon, 2, _hash_family(params))


def hadamard_shape(n, epsilon):
    """``(n_blocks, block_size)`` of Hadamard response, with the server's formula: the
    paper's layout, which a specification without a layout means."""
    # Rounded before the ceiling, as on the server, so that one ulp of exp cannot move it.
    n_blocks = 2 ** (math.ceil(round(math.log2(min(math.exp(epsilon), 2 * n)), 9)) - 1)
    block_size = 2 ** math.ceil(round(math.log2(n / n_blocks + 1), 9))
    return n_blocks, block_size


def _hadamard_layout(n, epsilon, params):
    """``(n_blocks, block_size, hole)`` of a Hadamard response specification, checked as the
    server checks it (``sklearn_ldp.mechanisms.oracles.hadamard_layout.check_layout``): all
    three or none (the paper's layout, hole 1)."""
    keys = ("n_blocks", "block_size", "hole")
    if not params:
        return (*hadamard_shape(n, epsilon), 1)
    if set(params) != set(keys):
        raise ValueError(f"the 'hadamard' specification must give all of {keys} or none, got "
                         f"{sorted(params)}.")
    n_blocks, block_size, hole = (_check_int(params[key], key) for key in keys)
    if block_size < 2 or block_size & (block_size - 1):
        raise ValueError(f"block_size must be a power of two, at least 2; got {block_size}.")
    if hole & (hole - 1) or 2 * hole > block_size:
        raise ValueError(f"hole must be a power of two at most block_size / 2; got {hole}.")
    load = block_size - hole
    needed = -(-n // load)  # the full blocks and the partial one
    if n_blocks < needed or n_blocks * block_size > 8 * n:
        raise ValueError(f"n_blocks must be at least {needed} with at most {8 * n} outputs; "
                         f"got {n_blocks} blocks of {block_size}.")
    return n_blocks, block_size, hole


def _hadamard(spec):
    n, epsilon, params = _common(spec, ("n_blocks", "block_size", "hole"))
    b_count, b, hole = _hadamard_layout(n, epsilon, params)
    load = b - hole  # cells of a full block, at the columns hole .. b - 1
    n_full = n // load  # the cells after them: one partial block, at the columns 1, 2, ...
    n_outputs = b_count * b
    half = b // 2
    # The server's integer weights: a on the favoured half of the block, d elsewhere.
    weights = _ratio_weights(epsilon, half, n_outputs - half, "hadamard")

    def privatize(cell, rng):
        block = cell // load
        start = block * b  # first output of the user's block
        column = cell % load + (hole if block < n_full else 1)
        favoured, index = _ratio_draw(rng, half, n_outputs - half, *weights)
        if not favoured and index >= half:
            outside = index - half
            return outside + b * (outside >= start)  # skip the user's own block
        # The index-th position of the wanted parity: a 0 inserted at the lowest set bit of
        # the column, then that bit set if the parity is wrong (a bijection onto each half).
        low = column & -column
        position = ((index & -low) << 1) | (index & (low - 1))
        if _parity(position, column) != (not favoured):
            position |= low
        return start + position

    privatize.weights = weights  # exposed for the tests (the server's integers)
    return n, privatize


def _sign_weights(epsilon, kind):
    """``(a, d)``: the server's integer weights of keeping and flipping a sign."""
    return _ratio_weights(epsilon, 1, 1, kind)


def _make_hrr(n, epsilon):
    K = max(2, 1 << (n - 1).bit_length())
    weights = _sign_weights(epsilon, "hrr")

    def privatize(cell, rng):
        coefficient = rng.randrange(1, K)
        flipped = not _ratio_draw(rng, 1, 1, *weights)[0]
        return 2 * coefficient + (1 ^ _parity(coefficient, cell) ^ flipped)

    privatize.n_outputs = 2 * K
    privatize.weights = weights  # exposed for the tests (the server's integers)
    return privatize


def _hrr(spec):
    n, epsilon, _ = _common(spec)
    return n, _make_hrr(n, epsilon)


# ---------------------------------------------------------------------- dense strategies
# The factorization spec carries the integer table that is sampled (format version 2): columns
# summing to 2^TABLE_PRECISION, one 52-bit uniform integer per report, as the server's
# sklearn_ldp.mechanisms._base.exact.sample_table.
TABLE_PRECISION = 52
FACTORIZATION_SPEC_VERSION = 2
# Kinds whose specification format has its own version (the others read SPEC_VERSION).
KIND_SPEC_VERSIONS = {"factorization": FACTORIZATION_SPEC_VERSION}
_TABLE_ONE = 2**TABLE_PRECISION
MAX_TABLE_ENTRIES = 2**27  # sklearn_ldp.deploy.limits: the default max_matrix_entries
def _normalized_strategy(table, epsilon, kind):
    """The server's exact check of a strategy's integer table; returns its columns.

    The same decisions as ``FactorizationMechanism.from_table``: a rectangular list of rows of
    integers in ``[0, 2^52]``; every column summing to ``2^52``; no row 0 for every input;
    every row's ``max <= e^eps min`` decided on the integers (a row 0 for some inputs only is
    an infinite ratio). Returns the columns ``[u][o]`` (the law of input ``u``).
    """
    name = f"table of the {kind!r} specification"
    if not isinstance(table, list) or not table or not all(
            isinstance(row, list) and row for row in table):
        raise ValueError(f"the {name} must be a non-empty list of non-empty lists (rows).")
    width = len(table[0])
    if len(table) * width > MAX_TABLE_ENTRIES:  # before reading any entry
        raise ValueError(f"the {name} has {len(table)} x {width} entries, more than "
                         f"{MAX_TABLE_ENTRIES} (sklearn_ldp.deploy.limits: max_matrix_entries).")
    for o, row in enumerate(table):
        if len(row) != width:
            raise ValueError(f"the {name} is not rectangular: row {o} has {len(row)} "
                             f"entries, row 0 has {width}.")
        for value in row:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"the {name} must hold integers; row {o} holds {value!r}.")
            if not 0 <= value <= _TABLE_ONE:
                raise ValueError(f"the {name} must hold weights in [0, 2**{TABLE_PRECISION}]; "
                                 f"row {o} holds {value!r}.")
    columns = [list(column) for column in zip(*table, strict=True)]
    for u, column in enumerate(columns):
        total = sum(column)
        if total != _TABLE_ONE:
            raise ValueError(f"column {u} of the {name} sums to {total}, not "
                             f"2**{TABLE_PRECISION}: refusing to privatize with it.")
    for o, row in enumerate(table):
        high, low = max(row), min(row)
        if high == 0:
            raise ValueError(f"row {o} of the {name} is 0 for every input: an output that is "
                             "never reported must not be listed.")
        if not _within(high, low, epsilon):
            ratio = "infinite" if low == 0 else repr(high / low)
            raise ValueError(f"row {o} of the {name} has weight {high} for input "
                             f"{row.index(high)} and {low} for input {row.index(low)}: its "
                             f"realised ratio {ratio} exceeds e^{epsilon!r}: the table "
                             f"is not {epsilon}-LDP; refusing to privatize with it.")
    return columns


def _factorization(spec):
    """Integer inverse CDF on the column of the strategy's integer table carried by the spec.

    The table is checked exactly as the server does (:func:`_normalized_strategy`); a report
    is the first output whose cumulative weight exceeds ``U``, a uniform 52-bit integer
    (``rng.getrandbits(52)``), so ``P(o | u) = table[o][u] / 2^52`` exactly, the law of the
    server's ``randomize``.
    """
    kind = "factorization"
    epsilon = _check_epsilon(_spec_field(spec, "epsilon", kind), kind)
    if "Q" in spec:
        raise ValueError("the 'factorization' specification carries a float matrix 'Q' "
                         "(version 1); this client samples the integer 'table' of version "
                         f"{FACTORIZATION_SPEC_VERSION}.")
    precision = _spec_field(spec, "precision", kind)
    if precision != TABLE_PRECISION or isinstance(precision, bool):
        raise ValueError(f"precision of the 'factorization' specification must be "
                         f"{TABLE_PRECISION}, got {precision!r}.")
    columns = _normalized_strategy(_spec_field(spec, "table", kind), epsilon, kind)
    cumulative = [list(itertools.accumulate(column)) for column in columns]

    def privatize(cell, rng):
        # The first output whose cumulative weight exceeds the uniform integer.
        return bisect.bisect_right(cumulative[cell], rng.getrandbits(TABLE_PRECISION))

    privatize.table = [list(row) for row in zip(*columns, strict=True)]  # for the tests
    return len(columns), privatize


# ---------------------------------------------------------------------- range mechanisms
_LEVEL_ORACLES = ("oue", "olh", "hrr")


def _hierarchical(spec):
    n, epsilon, params = _common(spec, ("branching", "oracle", "olh_hash"))
    branching = _check_int(params.get("branching", 4), "branching", minimum=2)
    oracle = params.get("oracle", "oue")
    if oracle not in _LEVEL_ORACLES:
        raise ValueError(f"oracle of the 'hierarchical' specification must be one of "
                         f"{list(_LEVEL_ORACLES)}, got {oracle!r}.")
    height, width = 1, branching
    while width < n:
        width *= branching
        height += 1
    widths = [branching ** (height - level) for level in range(1, height + 1)]
    sizes = [-(-n // w) for w in widths]
    if oracle == "oue":
        levels = [_make_unary("oue", m, epsilon) for m in sizes]
        width_bytes = (sizes[-1] + 7) // 8  # every row as wide as the leaf level's report
    elif oracle == "olh":
        # "by_size": each level takes the server's default family for its size; specs from
        # before the linear family (no olh_hash) hashed every level by tabulation.
        olh_hash = params.get("olh_hash", "tabulation")
        if olh_hash not in ("by_size", "tabulation"):
            raise ValueError(f"olh_hash must be 'by_size' or 'tabulation', got {olh_hash!r}.")
        families = ["linear" if olh_hash == "by_size" and m > LINEAR_MIN_CELLS
                    else "tabulation" for m in sizes]
        levels = [_make_local_hashing(m, epsilon, _olh_buckets(epsilon, family), family)
                  for m, family in zip(sizes, families, strict=True)]
    else:
        levels = [_make_hrr(m, epsilon) for m in sizes]
        offsets = [0]
        for level in levels:
            offsets.append(offsets[-1] + level.n_outputs)

    def privatize(cell, rng):
        k = rng.randrange(height)
        report = levels[k](cell // widths[k], rng)
        if oracle == "oue":
            return [k + 1] + report + [0] * (width_bytes - len(report))
        if oracle == "olh":
            return [k + 1] + report
        return offsets[k] + report

    return n, privatize


def _haar(spec):
    n, epsilon, _ = _common(spec)
    height = max(1, (n - 1).bit_length())
    sizes = [(1 << height) >> level for level in range(1, height + 1)]
    offsets = [0]
    for m in sizes:
        offsets.append(offsets[-1] + 2 * m)
    weights = _sign_weights(epsilon, "haar")

    def privatize(cell, rng):
        level = rng.randrange(1, height + 1)
        coefficient = rng.randrange(sizes[level - 1])
        negative = ((cell >> (level - 1)) & 1) ^ _parity(coefficient, cell >> level)
        flipped = not _ratio_draw(rng, 1, 1, *weights)[0]
        return offsets[level - 1] + 2 * coefficient + (1 ^ negative ^ flipped)

    privatize.weights = weights  # exposed for the tests (the server's integers)
    return n, privatize


# ---------------------------------------------------------------------- Gaussian randomizers
def _workload(params, n, kind):
    """The workload ``A`` (rows) of a Gaussian spec and its column norms."""
    if "workload" not in params:
        raise ValueError(f"the {kind!r} specification has no params['workload'].")
    A = _check_matrix(params["workload"], "params['workload']", kind)
    if len(A[0]) != n:
        raise ValueError(f"the workload of the {kind!r} specification has {len(A[0])} columns "
                         f"but n_inputs is {n}.")
    norms = []
    for u in range(n):
        total = 0.0
        for row in A:
            total += row[u] * row[u]
        norms.append(math.sqrt(total))
    if max(norms) == 0.0:
        raise ValueError(f"the workload of the {kind!r} specification is all zeros.")
    return A, norms


def _gaussian_delta(sigma, sensitivity, epsilon):
    """Balle-Wang's exact delta of the Gaussian mechanism (as the server's)."""
    ratio = sensitivity / sigma
    first = _ndtr(ratio / 2 - epsilon / ratio)
    second = math.exp(epsilon + _log_ndtr(-ratio / 2 - epsilon / ratio))
    return max(first - second, 0.0)


def _analytic_sigma(sensitivity, epsilon, delta, rtol=1e-12):
    """Smallest sigma with ``_gaussian_delta <= delta`` (the server's bisection)."""
    high = sensitivity * max(1.0, math.sqrt(2 * math.log(2 / delta)) / epsilon)
    while _gaussian_delta(high, sensitivity, epsilon) > delta:
        high *= 2.0
    low = high / 2.0
    while _gaussian_delta(low, sensitivity, epsilon) <= delta:
        high, low = low, low / 2.0
    while high / low - 1.0 > rtol:
        middle = math.sqrt(low * high)
        if _gaussian_delta(middle, sensitivity, epsilon) <= delta:
            high = middle
        else:
            low = middle
    return high


def _gaussian(spec):
    n, epsilon, params = _common(spec, ("workload", "delta", "calibration"))
    A, norms = _workload(params, n, "gaussian")
    delta = params.get("delta")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
        raise ValueError(f"params['delta'] of the 'gaussian' specification must lie in (0, 1), "
                         f"got {delta!r}.")
    calibration = params.get("calibration", "analytic")
    sensitivity = 2.0 * max(norms)
    if calibration == "analytic":
        sigma = _analytic_sigma(sensitivity, epsilon, float(delta))
    elif calibration == "classic":
        sigma = sensitivity * math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon
    else:
        raise ValueError(f"calibration of the 'gaussian' specification must be 'analytic' or "
                         f"'classic', got {calibration!r}.")

    def privatize(cell, rng):
        return [row[cell] + sigma * rng.normalvariate(0.0, 1.0) for row in A]

    privatize.sigma = sigma
    return n, privatize


def _rejection_kappa(norm, sigma, epsilon):
    """``kappa`` of the rejection sampler for a column of norm ``norm > 0`` (server formula)."""
    s = norm / sigma
    low, high = s / 2 - epsilon / (2 * s), s / 2 + epsilon / (2 * s)
    shifted_low, shifted_high = low - s, high - s
    mass_in = _ndtr(shifted_high) - _ndtr(shifted_low)
    first_in = _normal_pdf(shifted_low) - _normal_pdf(shifted_high)
    window_t = s * mass_in + first_in
    first_g = _normal_pdf(low) - _normal_pdf(high)
    mean_t = 0.5 * window_t + 0.5 * (0.0 - first_g)
    return sigma * mean_t / norm


def _mean_t(s, epsilon):
    return _rejection_kappa(s, 1.0, epsilon) * s


def _optimal_rejection_sigma(radius, epsilon):
    """Golden-section search of the server's ``optimal_rejection_sigma``."""

    def gain(log_s):
        s = math.exp(log_s)
        return _rejection_kappa(s, 1.0, epsilon) * s

    low, high = math.log(1e-3), math.log(1e2)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    left, right = high - ratio * (high - low), low + ratio * (high - low)
    gain_left, gain_right = gain(left), gain(right)
    while high - low > 1e-10:
        if gain_left < gain_right:
            low, left, gain_left = left, right, gain_right
            right = low + ratio * (high - low)
            gain_right = gain(right)
        else:
            high, right, gain_right = right, left, gain_left
            left = high - ratio * (high - low)
            gain_left = gain(left)
    return radius / math.exp(0.5 * (low + high))


def _paper_rejection_sigma(radius, epsilon):
    """Bisection of the server's ``paper_rejection_sigma`` (``delta_0 = tanh(eps / 2)``)."""

    def window(s):
        half_width = epsilon / (2 * s)
        return _ndtr(half_width - s / 2) - _ndtr(-half_width - s / 2)

    target = 1.0 - math.tanh(epsilon / 2)
    low, high = 0.0, 1.0
    while window(high) >= target:
        low, high = high, 2 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        if window(middle) >= target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-14 * high:
            break
    return radius / low


def _equalized_norms(norms, sigma, epsilon):
    """The server's ``equalized_norms``: the same ``kappa`` for every column (bisection)."""
    radius = max(norms)
    s_max = radius / sigma
    upper = min(s_max, radius / _optimal_rejection_sigma(radius, epsilon))
    peak = _mean_t(s_max, epsilon)
    result = []
    for norm in norms:
        if norm == radius or norm == 0:
            result.append(norm)
            continue
        target = peak * norm / radius
        low, high = 0.0, upper
        for _ in range(100):
            middle = 0.5 * (low + high)
            if _mean_t(middle, epsilon) < target:
                low = middle
            else:
                high = middle
        result.append(sigma * 0.5 * (low + high))
    return result


def _gaussian_pure(spec):
    n, epsilon, params = _common(spec, ("workload", "calibration", "columns"))
    if epsilon > MAX_REJECTION_EPSILON:
        raise ValueError(f"epsilon={epsilon!r} is too large for 'gaussian_pure' (at most 2 ln 2).")
    A, norms = _workload(params, n, "gaussian_pure")
    radius = max(norms)
    calibration = params.get("calibration", "optimal")
    if calibration == "optimal":
        sigma = _optimal_rejection_sigma(radius, epsilon)
    elif calibration == "paper":
        sigma = _paper_rejection_sigma(radius, epsilon)
    else:
        raise ValueError(f"calibration of the 'gaussian_pure' specification must be 'optimal' or "
                         f"'paper', got {calibration!r}.")
    columns = params.get("columns")
    if columns == "raw":
        effective = list(norms)
    elif columns == "equalized":
        effective = _equalized_norms(norms, sigma, epsilon)
    else:
        raise ValueError(f"columns of the 'gaussian_pure' specification must be 'raw' or "
                         f"'equalized' (the server writes the resolved value), got {columns!r}.")
    # The vector each type plugs into the sampler: a_u scaled to its effective norm.
    plugged = []
    for u in range(n):
        scale = effective[u] / (norms[u] if norms[u] > 0 else 1.0)
        plugged.append([row[u] * scale for row in A])

    def privatize(cell, rng):
        draw = [rng.normalvariate(0.0, 1.0) * sigma for _ in A]
        inner = 0.0
        for a, v in zip(plugged[cell], draw, strict=True):
            inner += a * v
        loss = (2.0 * inner - effective[cell] ** 2) / (2.0 * sigma**2)
        keep = 0.5 * math.exp(loss) if abs(loss) <= epsilon / 2 else 0.5
        return draw if rng.random() < keep else None  # None: the "bottom" report

    privatize.sigma = sigma
    privatize.effective_norms = effective
    return n, privatize


# ---------------------------------------------------------------------- marginal mechanisms
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


def _sign_flip(epsilon):
    """``privatize``'s flip test of InpHT / MargHT / TreeHist: the sign is flipped when a
    uniform 52-bit word is ``>= a`` (probability ``(2^52 - a) / 2^52``, exactly)."""
    a = _keep_numerator(epsilon, 2)

    def flipped(rng):
        return _uniform_words(rng, 1)[0] >= a

    return flipped


def _split_budget(epsilon, sizes, unary):
    """``(share, oracles)``: the server's ``multi_attribute.split_budget`` for SPL and InpEM.
    ``eps / d`` per attribute, lowered by one float step while the product of the sampled
    worst ratios (randomized response ``a / d``; "oue" ``p (1 - q) / (q (1 - p))`` on its
    numerators) is not within ``e^eps``, decided on integers."""
    share = epsilon / len(sizes)
    for _ in range(64):
        if unary:
            oracles = [_make_unary("oue", size, share) for size in sizes]
            p, q = _unary_numerators("oue", share)
            ratios = [(p * (_ONE - q), q * (_ONE - p))] * len(sizes)
        else:
            oracles = [_make_randomized_response(size, share) for size in sizes]
            ratios = [oracle.weights for oracle in oracles]
        if _within(math.prod(n for n, _ in ratios), math.prod(d for _, d in ratios), epsilon):
            return share, oracles
        share = math.nextafter(share, 0.0)
    raise ValueError(f"no budget share near epsilon / {len(sizes)} composes within "
                     f"epsilon={epsilon!r}.")


def _marginal_spec(spec):
    """``(n, epsilon, shape, max_order)`` of a marginal mechanism's spec, checked."""
    n, epsilon, params = _common(spec, ("shape", "max_order"))
    kind = spec["mechanism"]
    shape = params.get("shape")
    if not isinstance(shape, list) or not shape or any(
            isinstance(size, bool) or not isinstance(size, int) or size < 2 for size in shape):
        raise ValueError(f"params['shape'] of the {kind!r} specification must be a list of "
                         f"category counts >= 2, got {shape!r}.")
    if math.prod(shape) != n:
        raise ValueError(f"n_inputs={n} of the {kind!r} specification does not match its shape "
                         f"{shape}.")
    max_order = _check_int(params.get("max_order"), "max_order")
    if max_order > len(shape):
        raise ValueError(f"max_order must be at most {len(shape)}, got {max_order}.")
    return n, epsilon, shape, max_order


def _attribute_codes(cell, shape):
    """Category code of every attribute of a flat C-order cell."""
    codes = [0] * len(shape)
    for position in range(len(shape) - 1, -1, -1):
        cell, codes[position] = divmod(cell, shape[position])
    return codes


def _binary_code(codes, members, shape):
    """Concatenated ``ceil(log2 r)``-bit codes of ``members``, the first most significant."""
    code = 0
    for a in members:
        code = (code << (shape[a] - 1).bit_length()) | codes[a]
    return code


def _set_cell(codes, members, shape):
    """C-order cell of the record in the table of the attribute set ``members``."""
    cell = 0
    for a in members:
        cell = cell * shape[a] + codes[a]
    return cell


def _inp_rr(spec):
    n, epsilon, _, _ = _marginal_spec(spec)
    return n, _make_unary("rappor", n, epsilon)


def _inp_ps(spec):
    n, epsilon, _, _ = _marginal_spec(spec)
    return n, _make_randomized_response(n, epsilon)


def _inp_em(spec):
    n, epsilon, shape, _ = _marginal_spec(spec)
    _, attributes = _split_budget(epsilon, shape, unary=False)  # the server's shares

    def privatize(cell, rng):
        noisy = 0
        for size, oracle, code in zip(shape, attributes, _attribute_codes(cell, shape),
                                      strict=True):
            noisy = noisy * size + oracle(code, rng)
        return noisy

    return n, privatize


def _inp_ht(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    everything = range(len(shape))
    shifts = [sum((shape[b] - 1).bit_length() for b in everything if b > a) for a in everything]
    masks = []  # the server's order: by order, attribute set, then C order of the masks
    for order in range(1, max_order + 1):
        for members in itertools.combinations(everything, order):
            parts = [[mask << shifts[a] for mask in range(1, 2 ** (shape[a] - 1).bit_length())]
                     for a in members]
            masks.extend(sum(combination) for combination in itertools.product(*parts))
    flip = _sign_flip(epsilon)

    def privatize(cell, rng):
        code = _binary_code(_attribute_codes(cell, shape), everything, shape)
        t = rng.randrange(len(masks))  # exact: rejection on random bits
        return 2 * t + (1 ^ _parity(masks[t], code) ^ flip(rng))

    return n, privatize


def _attribute_sets(shape, max_order):
    sets = list(itertools.combinations(range(len(shape)), max_order))
    return sets, [math.prod(shape[a] for a in members) for members in sets]


def _marg_ps(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    sets, cells = _attribute_sets(shape, max_order)
    offsets = [sum(cells[:index]) for index in range(len(sets))]
    oracles = {size: _make_randomized_response(size, epsilon) for size in set(cells)}

    def privatize(cell, rng):
        s = rng.randrange(len(sets))
        local = _set_cell(_attribute_codes(cell, shape), sets[s], shape)
        return offsets[s] + oracles[cells[s]](local, rng)

    return n, privatize


def _marg_rr(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    sets, cells = _attribute_sets(shape, max_order)
    # The set index in the bytes of the smallest unsigned type that holds it (1, 2, 4 or 8).
    set_bytes = next(size for size in (1, 2, 4, 8) if len(sets) <= 256**size)
    bit_bytes = (max(cells) + 7) // 8
    oracles = {size: _make_unary("rappor", size, epsilon) for size in set(cells)}

    def privatize(cell, rng):
        s = rng.randrange(len(sets))
        local = _set_cell(_attribute_codes(cell, shape), sets[s], shape)
        packed = oracles[cells[s]](local, rng)
        return (list(s.to_bytes(set_bytes, "little")) + packed
                + [0] * (bit_bytes - len(packed)))

    return n, privatize


def _marg_ht(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    sets, _ = _attribute_sets(shape, max_order)
    coefficients = [2 ** sum((shape[a] - 1).bit_length() for a in members) - 1
                    for members in sets]
    offsets = [sum(coefficients[:index]) for index in range(len(sets))]
    flip = _sign_flip(epsilon)

    def privatize(cell, rng):
        s = rng.randrange(len(sets))
        code = _binary_code(_attribute_codes(cell, shape), sets[s], shape)
        alpha = rng.randrange(1, coefficients[s] + 1)
        return 2 * (offsets[s] + alpha - 1) + (1 ^ _parity(alpha, code) ^ flip(rng))

    return n, privatize


# ---------------------------------------------------------------------- values, not cells
# The kinds below take a value that is not a flat cell index (a number, a record of several
# columns, a bit string) or keep client state between rounds. Their builder returns a
# _ValueKind instead of (n_inputs, privatize_cell); Randomizer dispatches on the type.
MAX_CELLS = 2**24  # sklearn_ldp.deploy.limits: the default max_cells
MAX_ATTRIBUTES = 1024  # multi_attribute.MAX_ATTRIBUTES (and the "columns" kind's cap)
MAX_SQUARE_WAVE_CELLS = 2**12  # numeric.MAX_SQUARE_WAVE_CELLS
MAX_BIT_LENGTH = 1024  # heavy_hitters.MAX_BIT_LENGTH
MAX_CANDIDATES = 2**16  # heavy_hitters.MAX_CANDIDATES
MAX_SKETCH_WIDTH = 2**20
MAX_SKETCH_HASHES = 2**16
# Kinds with memoized client state (need Randomizer(..., state=path)).
STATEFUL_KINDS = ("longitudinal", "dbitflip_pm", "1bitmean_pm")


class _ValueKind:
    """A randomizer of one kind that privatizes values (not flat cells).

    ``privatize(value, rng, memo)``; ``bind(categories)`` receives the Randomizer's
    ``categories`` (kinds that take none refuse them); ``stateful`` kinds get a
    :class:`_StateFile` as ``memo`` and must check it with ``check_state``.
    """

    def __init__(self, n_inputs, privatize, stateful=False, bind=None, check_state=None,
                 encode=None):
        self.n_inputs = n_inputs
        self.privatize = privatize
        self.stateful = stateful
        self.bind = bind
        self.check_state = check_state
        self.encode = encode


def _check_number(value, name, kind):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise ValueError(f"{name} of the {kind!r} specification must be a finite number, "
                         f"got {value!r}.")
    return float(value)


def _check_budget(value, name, kind):
    """An epsilon-like field in (0, 50] (the server's check_epsilon)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} of the {kind!r} specification must be a number, got "
                         f"{value!r}.")
    value = float(value)
    if not math.isfinite(value) or not 0.0 < value <= 50.0:
        raise ValueError(f"{name} of the {kind!r} specification must lie in (0, 50], got "
                         f"{value!r}.")
    return value


def _check_fields(spec, kind, required, optional=()):
    """Refuse missing and unknown top-level fields (a newer server's field may change the
    randomizer)."""
    missing = [key for key in required if key not in spec]
    if missing:
        raise ValueError(f"the {kind!r} specification has no {missing[0]!r} field: it was not "
                         "written by to_dict() of a compatible sklearn_ldp.")
    unknown = sorted(set(spec) - set(required) - set(optional) - {"version", "mechanism"})
    if unknown:
        raise ValueError(f"the {kind!r} specification has fields {unknown} that this client "
                         "does not know; update client.py.")


def _check_bounds(pair, name, kind):
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise ValueError(f"{name} of the {kind!r} specification must be a pair [low, high], "
                         f"got {pair!r}.")
    low = _check_number(pair[0], name, kind)
    high = _check_number(pair[1], name, kind)
    if not low < high:
        raise ValueError(f"{name} of the {kind!r} specification must satisfy low < high, got "
                         f"{pair!r}.")
    return low, high


def _check_value(value, bounds, name):
    """A number within ``bounds`` as a float (refused otherwise: nothing is clipped)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    low, high = bounds
    number = float(value)
    if not low <= number <= high:  # NaN compares False: refused too
        raise ValueError(f"{name} must lie in the declared bounds [{low}, {high}], got "
                         f"{value!r}.")
    return number


def _bisect_root(function, low, high):
    """The root of an increasing ``function`` on ``[low, high]`` (``function(low) < 0 <
    function(high)``), bisected until the interval is one float wide."""
    for _ in range(2000):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if function(middle) < 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


# Numeric kinds (numeric.py, _window.py): the spec version they are written in, the grid caps.
NUMERIC_SPEC_VERSION = 2
KIND_SPEC_VERSIONS.update(dict.fromkeys(("duchi", "piecewise", "hybrid", "square_wave",
                                         "sampled_mean"), NUMERIC_SPEC_VERSION))
MAX_GRID_SIZE = 2**16  # _window.MAX_GRID_SIZE
DEFAULT_GRID_SIZE = 4096  # _window.DEFAULT_GRID_SIZE
FRACTION_BITS = 52  # _window.FRACTION_BITS: the random rounding of the grid kinds
TWO_POINT_BITS = 28  # _window.TWO_POINT_BITS: a + b of Duchi's two-point law
# numeric.HYBRID_EPSILON_STAR, the same float literal.
HYBRID_EPSILON_STAR = 0.6093524930273103


def _window_weights(epsilon):
    """``_window.window_weights``: ``(a, b)`` with ``a / b <= e^eps`` exactly."""
    extra = max(0, -math.frexp(epsilon)[1] + 1)
    denominator = 2**min(24 + extra, 44)
    a = _largest_within(denominator, epsilon)
    if a <= 2**45:
        return a, denominator
    a = 2**45
    b = max(1, int(DECIMAL_CONTEXT.divide(decimal.Decimal(a), _decimal_exp(epsilon))
                   .to_integral_value(rounding=decimal.ROUND_CEILING)))
    while not _within(a, b, epsilon):
        b += 1
    while b > 1 and _within(a, b - 1, epsilon):
        b -= 1
    return a, b


def _two_point_weights(epsilon):
    """``_window.two_point_weights``: ``a + b = 2^28``, ``a`` the largest with ``a / b <=
    e^eps``."""
    total = 2**TWO_POINT_BITS
    e = _decimal_exp(epsilon)
    a = min(int(DECIMAL_CONTEXT.divide(e * total, e + 1).to_integral_value(
        rounding=decimal.ROUND_FLOOR)), total - 1)
    while not _within(a, total - a, epsilon):
        a -= 1
    while a + 1 < total and _within(a + 1, total - a - 1, epsilon):
        a += 1
    return a, total - a


def _window_length(cells, share):
    length = int(DECIMAL_CONTEXT.multiply(decimal.Decimal(cells), share)
                 .to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    return min(max(length, 1), cells - 1)


def _square_wave_bandwidth(epsilon):
    """``numeric._square_wave_bandwidth_decimal``: Li et al.'s bandwidth in 80-digit decimals."""
    if epsilon < 1e-20:
        return decimal.Decimal("0.5")
    eps = decimal.Decimal(float(epsilon))
    e = _decimal_exp(epsilon)
    with decimal.localcontext(DECIMAL_CONTEXT):  # 80 digits, whatever the caller's context
        return (eps * e - e + 1) / (2 * e * (e - 1 - eps))


def _even_share(epsilon, parts):
    """``numeric.split_budget``: the largest float whose ``parts``-fold is at most ``epsilon``."""
    share = epsilon / parts
    while fractions.Fraction(share) * parts > fractions.Fraction(epsilon):
        share = math.nextafter(share, 0.0)
    return share


class _Window:
    """The window law of ``_window.WindowLaw`` (``M`` cells, window ``L``, weights ``a > b``),
    sampled with the server's integers and map: a rounding bit ``[U_K < F]`` and a uniform
    integer in ``[0, T)`` (``random.randrange``: exact rejection), or for two cells one ``U_63
    < b 2^K + F (a - b)``."""

    def __init__(self, cells, window, a, b, epsilon, fraction_bits, kind):
        if not a > b >= 1 or not _within(a, b, epsilon):
            raise ValueError(f"the weights [{a}, {b}] of the {kind!r} grid do not satisfy "
                             f"b < a <= e^epsilon b for epsilon={epsilon!r} (epsilon too "
                             "small for integer weights, or an edited grid).")
        self.cells, self.window, self.a, self.b = cells, window, a, b
        self.bits = fraction_bits
        self.total = window * a + (cells - window) * b
        self.span = cells - window
        if self.total >= 2**62:
            raise ValueError(f"the {kind!r} grid is too large for 64-bit sampling.")

    def spec(self):
        return {"cells": self.cells, "window": self.window, "weights": [self.a, self.b],
                "fraction_bits": self.bits}

    def decoder(self):
        """``(alpha, beta)``, exact Fractions: ``alpha j + beta`` is unbiased for ``2 u - 1``."""
        M, L, a, b, T = self.cells, self.window, self.a, self.b, self.total
        slope = fractions.Fraction(L * (a - b), T)
        intercept = fractions.Fraction(b * M * (M - 1) + (a - b) * L * (L - 1), 2 * T)
        alpha = 2 / (slope * self.span)
        return alpha, -alpha * intercept - 1

    def draw(self, u, rng):
        """One cell index for the unit value ``u`` in ``[0, 1]``."""
        p = u * float(self.span)
        w0 = min(math.floor(p), self.span - 1)
        scale = 2**self.bits
        numerator = int(min(max(round((p - w0) * float(scale)), 0), scale))
        if self.cells == 2 and self.total & (self.total - 1) == 0:
            bits = self.bits + self.total.bit_length() - 1
            return int(rng.getrandbits(bits) < self.b * scale + numerator * (self.a - self.b))
        w = w0 + int(rng.getrandbits(self.bits) < numerator)
        draw = rng.randrange(self.total)
        # The window (a values of U per cell), else the M - L other cells in order.
        if draw < self.window * self.a:
            return w + draw // self.a
        cell = (draw - self.window * self.a) // self.b
        return cell + self.window if cell >= w else cell


def _grid_values(slope, offset):
    """``AffineGrid.values`` of one cell: ``float(j) * slope + offset`` in float64."""
    slope, offset = float(slope), float(offset)
    return lambda cell: float(cell) * slope + offset


def _check_resolution(bounds, cells, name, kind):
    """``_window.check_resolution``: bounds at least ``cells`` float spacings wide."""
    low, high = bounds
    ulp = math.ulp(max(abs(low), abs(high)))
    if not math.isfinite(high - low) or high - low < cells * ulp:
        raise ValueError(f"{name} ({low!r}, {high!r}) of the {kind!r} specification are too "
                         f"narrow for float64 at that magnitude: the width must be at least "
                         f"{cells} grid cells times the spacing of floats there ({ulp!r}).")


def _check_grid(spec, derived, kind):
    """Refuse a spec whose ``grid`` differs from what epsilon and params give (naming the
    first differing field), as ``numeric._check_grid_spec``."""
    grid = spec.get("grid")
    if not isinstance(grid, Mapping):
        raise ValueError(f"the {kind!r} specification needs its 'grid', got {grid!r}.")
    for key in sorted(set(grid) | set(derived)):
        if grid.get(key) != derived.get(key):
            raise ValueError(f"grid[{key!r}] of the {kind!r} specification is "
                             f"{grid.get(key)!r}, but its epsilon and params give "
                             f"{derived.get(key)!r}: an edited grid is refused.")


def _grid_size(value, kind, minimum=3):
    if isinstance(value, bool) or not isinstance(value, int) \
            or not minimum <= value <= MAX_GRID_SIZE:
        raise ValueError(f"params['grid_size'] of the {kind!r} specification must be an "
                         f"integer in [{minimum}, {MAX_GRID_SIZE}], got {value!r}.")
    return value


def _unit_fraction(value, bounds):
    """``u = (x - low) / (high - low)`` clamped to ``[0, 1]`` (``_window.unit_fraction``)."""
    low, high = bounds
    return min(max((value - low) / (high - low), 0.0), 1.0)


def _unit_randomizer(kind, epsilon, grid_size, name):
    """``(draw, grid)``: ``draw(u, rng)`` is one report of the unit value ``u`` in ``[0, 1]``
    by Duchi (an int 0/1), Piecewise or Hybrid (a float grid value), with the server's
    integers; ``grid`` is the server's ``grid_spec()`` (to verify the spec's)."""
    a, b = _two_point_weights(epsilon)
    duchi = _Window(2, 1, a, b, epsilon, 63 - TWO_POINT_BITS, name)
    if kind == "duchi":
        return duchi.draw, duchi.spec()
    a, b = _window_weights(epsilon)
    with decimal.localcontext(DECIMAL_CONTEXT):
        share = 1 / (1 + _decimal_exp(epsilon / 2.0))
    piecewise = _Window(grid_size, _window_length(grid_size, share), a, b, epsilon,
                        FRACTION_BITS, name)
    value = _grid_values(*piecewise.decoder())

    def draw_piecewise(u, rng):
        return value(piecewise.draw(u, rng))

    if kind == "piecewise":
        return draw_piecewise, piecewise.spec()
    duchi_value = _grid_values(*duchi.decoder())
    alpha = 0
    if epsilon > HYBRID_EPSILON_STAR:
        numerator = piecewise.window * (piecewise.a - piecewise.b)
        alpha = (2**(FRACTION_BITS + 1) * numerator + piecewise.total) // (2 * piecewise.total)

    def draw_hybrid(u, rng):
        if rng.getrandbits(FRACTION_BITS) < alpha:
            return draw_piecewise(u, rng)
        return duchi_value(duchi.draw(u, rng))

    return draw_hybrid, {"piecewise": piecewise.spec(), "duchi": duchi.spec(),
                         "alpha_numerator": alpha, "alpha_bits": FRACTION_BITS}


MEAN_KINDS = ("duchi", "piecewise", "hybrid")


def _spec_version(kind):
    """The specification version this client reads for ``kind`` (``KIND_SPEC_VERSIONS``:
    the kinds whose format changed with their exact laws; the others read ``SPEC_VERSION``)."""
    return KIND_SPEC_VERSIONS.get(kind, SPEC_VERSION) if isinstance(kind, str) else SPEC_VERSION


def _numeric_spec(spec):
    kind = spec["mechanism"]
    _check_fields(spec, kind, ("epsilon", "bounds", "grid"), ("params",))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    bounds = _check_bounds(spec["bounds"], "bounds", kind)
    params = spec.get("params") or {}
    if not isinstance(params, Mapping):
        raise ValueError(f"params of the {kind!r} specification must be an object, got "
                         f"{params!r}.")
    allowed = {"duchi": (), "square_wave": ("n_bins", "n_buckets", "grid_size")}.get(
        kind, ("grid_size",))
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"the {kind!r} specification has parameters {unknown} that this client "
                         "does not know; update client.py.")
    return kind, epsilon, bounds, dict(params)


def _mean_kind(spec):
    kind, epsilon, bounds, params = _numeric_spec(spec)
    grid_size = _grid_size(params.get("grid_size", DEFAULT_GRID_SIZE), kind)
    draw, grid = _unit_randomizer(kind, epsilon, grid_size, kind)
    _check_grid(spec, grid, kind)
    _check_resolution(bounds, 2 if kind == "duchi" else grid_size, "bounds", kind)

    def privatize(value, rng, memo=None):
        number = _check_value(value, bounds, "the value")
        return draw(_unit_fraction(number, bounds), rng)

    return _ValueKind(1, privatize)


def _square_wave(spec):
    kind, epsilon, bounds, params = _numeric_spec(spec)
    for name in ("n_bins", "n_buckets"):
        value = params.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or not 2 <= value <= MAX_SQUARE_WAVE_CELLS):
            raise ValueError(f"{name} of the 'square_wave' specification must be an integer "
                             f"in [2, {MAX_SQUARE_WAVE_CELLS}], got {value!r}.")
    n_buckets = params.get("n_buckets") or params.get("n_bins") or 1024
    grid_size = params.get("grid_size")
    if grid_size is None:
        grid_size = n_buckets * -(-DEFAULT_GRID_SIZE // n_buckets)
    grid_size = _grid_size(grid_size, kind)
    if grid_size % n_buckets:
        raise ValueError(f"params['grid_size']={grid_size!r} of the 'square_wave' "
                         f"specification must be a multiple of n_buckets={n_buckets}.")
    bandwidth = _square_wave_bandwidth(epsilon)
    a, b = _window_weights(epsilon)
    with decimal.localcontext(DECIMAL_CONTEXT):
        share = 2 * bandwidth / (1 + 2 * bandwidth)
    law = _Window(grid_size, _window_length(grid_size, share), a, b, epsilon, FRACTION_BITS,
                  kind)
    _check_grid(spec, law.spec(), kind)
    _check_resolution(bounds, grid_size, "bounds", kind)
    # Cell j reports its centre (j + 1/2) / (M - L) - b' of [-b', 1 + b'].
    value = _grid_values(fractions.Fraction(1, law.span),
                         fractions.Fraction(1 - law.window, 2 * law.span))

    def privatize(number, rng, memo=None):
        u = _unit_fraction(_check_value(number, bounds, "the value"), bounds)
        return value(law.draw(u, rng))

    return _ValueKind(1, privatize)


def _sampled_mean(spec):
    kind = "sampled_mean"
    _check_fields(spec, kind, ("epsilon", "bounds", "params", "grid"))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    pairs = spec["bounds"]
    if not isinstance(pairs, list) or not 1 <= len(pairs) <= MAX_ATTRIBUTES:
        raise ValueError(f"bounds of the 'sampled_mean' specification must be a list of 1 to "
                         f"{MAX_ATTRIBUTES} pairs, got {str(pairs)[:80]!r}.")
    bounds = [_check_bounds(pair, f"bounds[{j}]", kind) for j, pair in enumerate(pairs)]
    params = spec["params"]
    if not isinstance(params, Mapping) or set(params) != {"base", "n_sampled", "grid_size"}:
        raise ValueError(f"params of the 'sampled_mean' specification must be {{'base', "
                         f"'n_sampled', 'grid_size'}}, got {params!r}.")
    base = params["base"]
    if base not in MEAN_KINDS:
        raise ValueError(f"params['base'] of the 'sampled_mean' specification must be one of "
                         f"{MEAN_KINDS}, got {base!r}.")
    d = len(bounds)
    k = params["n_sampled"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= d:
        raise ValueError(f"params['n_sampled'] of the 'sampled_mean' specification must be an "
                         f"integer in [1, {d}], got {k!r}.")
    grid_size = params["grid_size"]
    if base == "duchi" and grid_size is not None:
        raise ValueError(f"params['grid_size'] of the 'sampled_mean' specification must be "
                         f"null for base 'duchi', got {grid_size!r}.")
    if base != "duchi":
        grid_size = _grid_size(grid_size, kind)
    value_epsilon = _even_share(epsilon, k)
    draw, grid = _unit_randomizer(base, value_epsilon, grid_size, kind)
    _check_grid(spec, {"value_epsilon": value_epsilon, "base": grid}, kind)
    for j, pair in enumerate(bounds):
        _check_resolution(pair, grid_size or 2, f"bounds[{j}]", kind)

    def privatize(value, rng, memo=None):
        if not isinstance(value, (list, tuple)) or len(value) != d:
            raise ValueError(f"a 'sampled_mean' record is a list of {d} numbers (one per "
                             f"attribute), got {value!r}.")
        numbers = [_check_value(x, pair, f"attribute {j} of the record")
                   for j, (x, pair) in enumerate(zip(value, bounds, strict=True))]
        # k attributes uniformly without replacement, in random order (random.sample draws
        # exact uniform integers, like the server's sample_attributes).
        attributes = rng.sample(range(d), k)
        reports = [draw(_unit_fraction(numbers[a], bounds[a]), rng) for a in attributes]
        return attributes + reports

    return _ValueKind(d, privatize)


# ---------------------------------------------------------------------- several attributes
MULTI_PROTOCOLS = {"spl": ("grr", "oue"), "smp": ("grr", "oue"),
                   "rsfd": ("grr", "oue_z", "oue_r")}


def _nominal_pq(oracle, size, inner_epsilon):
    e = math.exp(inner_epsilon)
    return (e / (e + size - 1), 1 / (e + size - 1)) if oracle == "grr" else (0.5, 1 / (e + 1))


def _rsfd_attribute_ratio(inner_epsilon, shape, oracle):
    """RS+FD's exact worst ratio between records that differ in one attribute
    (``multi_attribute.rsfd_attribute_ratio``, same formulas)."""
    return _rsfd_ratio([_nominal_pq(oracle, size, inner_epsilon) for size in shape], shape,
                       oracle)


def _rsfd_ratio(pq, shape, oracle):
    """The worst ratio for each attribute's ``(p, q)`` (floats, or the sampled Fractions)."""
    smallest, pairs = [], []
    for size, (p, q) in zip(shape, pq, strict=True):
        if oracle == "grr":
            smallest.append(size * q)
            pairs.append((size * p, size * q))
            continue
        high, low = p / q, (1 - p) / (1 - q)
        if oracle == "oue_z":
            smallest.append(low)
            pairs.append((high, low))
        else:
            smallest.append(low * size / ((size - 1) * high + low))
            one_bit = (high + (size - 1) * low) / size
            pairs.append((high / one_bit, low / one_bit))
    total = sum(smallest)
    return max((total - smallest[j] + A) / (total - smallest[j] + B)
               for j, (A, B) in enumerate(pairs))


def _rsfd_attribute_epsilon(epsilon, shape, oracle):
    """The inner budget of RS+FD with ``neighbourhood="attribute"``: the server's float (it
    bisects the same function the same way)."""
    target = epsilon + math.log1p(-1e-12)

    def excess(inner):
        return math.log(_rsfd_attribute_ratio(inner, shape, oracle)) - target

    high = epsilon + math.log(len(shape)) + 1.0
    while excess(high) < 0:
        if high >= 50.0:
            raise ValueError(f"no inner budget up to 50 reaches epsilon={epsilon!r} between "
                             f"records that differ in one attribute for shape {shape}.")
        high = min(2 * high, 50.0)
    return _bisect_root(excess, 1e-12, high)


def _check_shape(shape, kind):
    if not isinstance(shape, list) or not 1 <= len(shape) <= MAX_ATTRIBUTES:
        raise ValueError(f"shape of the {kind!r} specification must be a list of 1 to "
                         f"{MAX_ATTRIBUTES} category counts, got {str(shape)[:80]!r}.")
    for size in shape:
        if isinstance(size, bool) or not isinstance(size, int) or not 2 <= size <= MAX_CELLS:
            raise ValueError(f"shape of the {kind!r} specification must hold integers in "
                             f"[2, {MAX_CELLS}], got {size!r}.")
    if sum(shape) > MAX_CELLS:
        raise ValueError(f"shape of the {kind!r} specification declares {sum(shape)} "
                         f"categories in all, more than {MAX_CELLS}.")
    return list(shape)


class _ColumnCodes:
    """Per-column category codes of records (``_Categories`` without the flat index)."""

    def __init__(self, categories, sizes, names=None):
        self.lookup = _Categories(categories)
        if names is not None and self.lookup.columns != list(names):
            raise ValueError(f"categories must name the columns {list(names)} in that order, "
                             f"got {self.lookup.columns}.")
        if self.lookup.sizes != list(sizes):
            raise ValueError(f"the categories have {self.lookup.sizes} values per column but the "
                             f"specification declares {list(sizes)}: they are not the server's.")

    def codes(self, record):
        return self.lookup.codes_of(record)


def _codes_or_check(record, sizes, columns, name):
    """Integer category codes given directly (no categories): checked against ``sizes``."""
    if not isinstance(record, (list, tuple)) or len(record) != len(sizes):
        raise ValueError(f"a {name} record is a list of {len(sizes)} category codes (or pass "
                         f"categories= to give values), got {record!r}.")
    for column, (code, size) in enumerate(zip(record, sizes, strict=True)):
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < size:
            label = columns[column] if columns else column
            raise ValueError(f"column {label!r} of the record has the code {code!r}, not an "
                             f"integer in [0, {size}).")
    return list(record)


def _multi_attribute_parts(spec):
    """``(shape, privatize_codes)``: the codes of one record -> its report row, in the layout
    of the server's multi-attribute part (``reports._MultiAttributePart``): SPL and RS+FD
    every attribute's oracle report in order (an index, or packed bytes); SMP the chosen
    attribute, its report, zeros up to the widest attribute's report."""
    kind = "multi_attribute"
    _check_fields(spec, kind, ("epsilon", "shape"), ("params",))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    shape = _check_shape(spec["shape"], kind)
    params = spec.get("params") or {}
    if not isinstance(params, Mapping) or not set(params) <= {"protocol", "oracle",
                                                               "neighbourhood"}:
        raise ValueError(f"params of the 'multi_attribute' specification must hold "
                         f"'protocol', 'oracle', 'neighbourhood' only, got {params!r}.")
    protocol = params.get("protocol", "smp")
    if protocol not in MULTI_PROTOCOLS:
        raise ValueError(f"params['protocol'] must be one of {sorted(MULTI_PROTOCOLS)}, got "
                         f"{protocol!r}.")
    oracle = params.get("oracle", "grr")
    if oracle not in MULTI_PROTOCOLS[protocol]:
        raise ValueError(f"params['oracle'] must be one of {MULTI_PROTOCOLS[protocol]} for "
                         f"protocol {protocol!r}, got {oracle!r}.")
    neighbourhood = params.get("neighbourhood", "record")
    if neighbourhood not in ("record", "attribute"):
        raise ValueError(f"params['neighbourhood'] must be 'record' or 'attribute', got "
                         f"{neighbourhood!r}.")
    if neighbourhood == "attribute" and protocol != "rsfd":
        raise ValueError("params['neighbourhood']='attribute' applies to protocol 'rsfd' only.")
    d = len(shape)
    unary = oracle != "grr"
    if protocol == "spl":  # the server's shares, exactly within epsilon together
        inner, oracles = _split_budget(epsilon, shape, unary)
    else:
        inner = epsilon
        if neighbourhood == "attribute":
            inner = _rsfd_attribute_epsilon(epsilon, shape, oracle)
        oracles = [_make_unary("oue", size, inner) if unary else
                   _make_randomized_response(size, inner) for size in shape]
        if neighbourhood == "attribute":
            _check_rsfd_attribute(epsilon, shape, oracle, inner, oracles)
    widths = [(size + 7) // 8 if unary else 1 for size in shape]

    def as_list(report):
        return report if isinstance(report, list) else [report]

    if protocol == "spl":
        def privatize_codes(codes, rng):
            row = []
            for oracle_i, code in zip(oracles, codes, strict=True):
                row += as_list(oracle_i(code, rng))
            return row
    elif protocol == "smp":
        widest = max(widths)

        def privatize_codes(codes, rng):
            chosen = rng.randrange(d)
            report = as_list(oracles[chosen](codes[chosen], rng))
            return [chosen] + report + [0] * (widest - len(report))
    else:
        q_numerators = [_unary_numerators("oue", inner)[1] if unary else None for _ in shape]

        def fake(i, rng):
            if oracle == "grr":
                return [rng.randrange(shape[i])]
            if oracle == "oue_z":  # unary encoding of no value: every bit 1 with q
                words = _uniform_words(rng, shape[i])
                return _packed([j for j, w in enumerate(words) if w < q_numerators[i]],
                               shape[i])
            return oracles[i](rng.randrange(shape[i]), rng)  # oue_r: of a uniform value

        def privatize_codes(codes, rng):
            chosen = rng.randrange(d)
            row = []
            for i in range(d):
                row += as_list(oracles[i](codes[i], rng)) if i == chosen else fake(i, rng)
            return row

    return shape, privatize_codes


def _check_rsfd_attribute(epsilon, shape, oracle, inner, oracles):
    """RS+FD between records that differ in one attribute: the worst ratio on the sampled
    ``p``, ``q`` (exact fractions) within ``e^eps``, decided on integers (the server's
    ``MultiAttributeMechanism._check_privacy``)."""
    if oracle == "grr":
        weights = [privatize.weights for privatize in oracles]
        pq = [(fractions.Fraction(a, a + (k - 1) * d), fractions.Fraction(d, a + (k - 1) * d))
              for (a, d), k in zip(weights, shape, strict=True)]
    else:
        p, q = _unary_numerators("oue", inner)
        pq = [(fractions.Fraction(p, _ONE), fractions.Fraction(q, _ONE))] * len(shape)
    worst = _rsfd_ratio(pq, shape, oracle)
    if not _within(worst.numerator, worst.denominator, epsilon):
        raise ValueError(f"the 'multi_attribute' specification's RS+FD worst ratio between "
                         f"records that differ in one attribute, {float(worst)!r}, is above "
                         f"e^epsilon for epsilon={epsilon!r}.")


def _multi_attribute(spec):
    shape, privatize_codes = _multi_attribute_parts(spec)
    holder = {"codes": None}

    def bind(categories):
        holder["codes"] = _ColumnCodes(categories, shape)

    def encode(record):
        if holder["codes"] is not None:
            return holder["codes"].codes(record)
        return _codes_or_check(record, shape, None, "'multi_attribute'")

    def privatize(value, rng, memo=None):
        return privatize_codes(encode(value), rng)

    return _ValueKind(len(shape), privatize, bind=bind, encode=encode)


# ---------------------------------------------------------------------- records of columns
ORACLE_PART_KINDS = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
                     "subset_selection")


def _columns(spec):
    """The ``"columns"`` kind (``reports.ColumnsMechanism``): one row per record, the parts'
    reports side by side."""
    kind = "columns"
    _check_fields(spec, kind, ("epsilon", "n_inputs", "params"))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    params = spec["params"]
    if not isinstance(params, Mapping) or set(params) != {"parts"} or not isinstance(
            params["parts"], list) or not 1 <= len(params["parts"]) <= MAX_ATTRIBUTES:
        raise ValueError(f"params of the 'columns' specification must be {{'parts': [...]}} "
                         f"with 1 to {MAX_ATTRIBUTES} parts, got {str(params)[:80]!r}.")
    parts, seen, budgets, declared = [], set(), [], 0
    for position, entry in enumerate(params["parts"]):
        where = f"part {position} of the 'columns' specification"
        if not isinstance(entry, Mapping) or set(entry) != {"columns", "spec"}:
            raise ValueError(f"{where} must be an object with 'columns' and 'spec', got "
                             f"{str(entry)[:80]!r}.")
        columns, part = entry["columns"], entry["spec"]
        if not isinstance(columns, list) or not columns or len(columns) > MAX_ATTRIBUTES \
                or not all(isinstance(column, str) for column in columns):
            raise ValueError(f"{where}: 'columns' must be a list of 1 to {MAX_ATTRIBUTES} "
                             f"column names, got {str(columns)[:80]!r}.")
        duplicated = sorted(seen.intersection(columns)) or sorted(
            {c for c in columns if columns.count(c) > 1})
        if duplicated:
            raise ValueError(f"{where}: the columns {duplicated} appear more than once.")
        seen.update(columns)
        if not isinstance(part, Mapping) or not isinstance(part.get("mechanism"), str):
            raise ValueError(f"{where}: 'spec' must be a mechanism specification, got "
                             f"{str(part)[:80]!r}.")
        sub = part["mechanism"]
        if part.get("version") != _spec_version(sub):
            raise ValueError(f"{where}: unsupported specification version "
                             f"{part.get('version')!r}.")
        part = dict(part)
        if sub in MEAN_KINDS + ("square_wave",):
            if len(columns) != 1:
                raise ValueError(f"{where}: the {sub!r} mechanism reports one column, got "
                                 f"{columns!r}.")
            built = (_square_wave if sub == "square_wave" else _mean_kind)(part)
            bounds = _check_bounds(part["bounds"], "bounds", sub)
            parts.append(("number", columns, built, [bounds]))
            budgets.append(_check_budget(part["epsilon"], "epsilon", sub))
        elif sub == "sampled_mean":
            built = _sampled_mean(part)
            if len(columns) != built.n_inputs:
                raise ValueError(f"{where}: a sampled-mean part over {built.n_inputs} "
                                 f"attributes needs as many columns, got {columns!r}.")
            bounds = [_check_bounds(pair, "bounds", sub) for pair in part["bounds"]]
            parts.append(("numbers", columns, built, bounds))
            budgets.append(_check_budget(part["epsilon"], "epsilon", sub))
        elif sub == "multi_attribute":
            shape, privatize_codes = _multi_attribute_parts(part)
            if len(columns) != len(shape):
                raise ValueError(f"{where}: a multi-attribute part over {len(shape)} "
                                 f"attributes needs as many columns, got {columns!r}.")
            declared += sum(shape)
            parts.append(("categories", columns, privatize_codes, shape))
            budgets.append(_multi_attribute_epsilon(part, shape))
        elif sub in ORACLE_PART_KINDS:
            if len(columns) != 1:
                raise ValueError(f"{where}: a frequency-oracle part reports one column, got "
                                 f"{columns!r}.")
            n, privatize_cell = RANDOMIZERS[sub](part)
            declared += n
            parts.append(("categories", columns, _oracle_codes(privatize_cell), [n]))
            budgets.append(_check_epsilon(part["epsilon"], sub))
        else:
            raise ValueError(f"{where}: unknown mechanism {sub!r} for a column part (known: "
                             f"{MEAN_KINDS + ('square_wave', 'sampled_mean', 'multi_attribute')}"
                             f" and the frequency oracles {ORACLE_PART_KINDS}).")
        if declared > MAX_CELLS:
            raise ValueError(f"the 'columns' specification declares {declared} categories in "
                             f"all (part {position}), more than {MAX_CELLS}.")
    order = [column for _, columns, _, _ in parts for column in columns]
    if len(order) > MAX_ATTRIBUTES:
        raise ValueError(f"the 'columns' specification has {len(order)} columns, more than "
                         f"{MAX_ATTRIBUTES}.")
    # The server's ColumnsMechanism.epsilon: the smallest float at least the exact sum.
    spent = sum(fractions.Fraction(budget) for budget in budgets)
    total = float(spent)
    if fractions.Fraction(total) < spent:
        total = math.nextafter(total, math.inf)
    if epsilon != total:
        raise ValueError(f"the 'columns' specification claims epsilon={epsilon!r}, but its parts "
                         f"spend {total!r} (their sum).")
    if spec["n_inputs"] != len(order):
        raise ValueError(f"the 'columns' specification claims n_inputs={spec['n_inputs']!r}, "
                         f"but its parts hold {len(order)} columns.")
    lookups = {}

    def bind(categories):
        if not isinstance(categories, Mapping):
            raise ValueError("categories must be a mapping column -> list of categories.")
        categorical = {c: (part, i) for part in parts if part[0] == "categories"
                       for i, c in enumerate(part[1])}
        for column, values in categories.items():
            if column not in categorical:
                raise ValueError(f"categories name the column {column!r}, which is not a "
                                 f"categorical column of the specification "
                                 f"{sorted(categorical)}.")
            part, i = categorical[column]
            lookup = _Categories({column: values})
            if lookup.sizes[0] != part[3][i]:
                raise ValueError(f"column {column!r} has {lookup.sizes[0]} categories but the "
                                 f"specification declares {part[3][i]}.")
            lookups[column] = lookup

    def privatize(record, rng, memo=None):
        if not isinstance(record, Mapping):
            raise ValueError(f"a 'columns' record is a dict column -> value with the columns "
                             f"{order}, got {str(record)[:80]!r}.")
        missing = [column for column in order if column not in record]
        if missing:
            raise ValueError(f"the record has no value for column(s) {missing}.")
        extra = sorted(str(column) for column in record if column not in seen)
        if extra:
            raise ValueError(f"the record has columns {extra} that the specification does not "
                             f"know (it has {order}).")
        row = []
        for role, columns, randomize, sizes in parts:
            if role == "number":
                row.append(randomize.privatize(record[columns[0]], rng))
            elif role == "numbers":
                row += randomize.privatize([record[c] for c in columns], rng)
            else:
                codes = []
                for column, size in zip(columns, sizes, strict=True):
                    value = record[column]
                    if column in lookups:
                        codes.append(lookups[column].codes_of({column: value})[0])
                    elif isinstance(value, bool) or not isinstance(value, int) \
                            or not 0 <= value < size:
                        raise ValueError(f"column {column!r} has the value {value!r}: without "
                                         f"categories= for it, a category code in [0, {size}).")
                    else:
                        codes.append(value)
                row += randomize(codes, rng)
        return row

    built = _ValueKind(len(order), privatize, bind=bind)
    built.columns = order
    return built


def _oracle_codes(privatize_cell):
    def privatize_codes(codes, rng):
        report = privatize_cell(codes[0], rng)
        return report if isinstance(report, list) else [report]

    return privatize_codes


def _multi_attribute_epsilon(spec, shape):
    """The record-level budget of a multi-attribute part (``MultiAttributeMechanism.epsilon``):
    the attribute budget, except RS+FD with neighbourhood "attribute" (its inner budget)."""
    epsilon = float(spec["epsilon"])
    params = spec.get("params") or {}
    if params.get("protocol") == "rsfd" and params.get("neighbourhood") == "attribute":
        return _rsfd_attribute_epsilon(epsilon, shape, params.get("oracle", "grr"))
    return epsilon


# ---------------------------------------------------------------------- client state
STATE_FORMAT = "sklearn_ldp.client_state"
STATE_VERSION = 2
# Longitudinal specifications carry their numerators since version 2.
KIND_SPEC_VERSIONS["longitudinal"] = 2


def _canonical(obj):
    """The canonical JSON text of ``obj`` (sorted keys, no spaces): what digests cover."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------- SipHash-2-4
# The PRF that derives permanent responses from the client's secret, bit for bit the server's
# (sklearn_ldp.mechanisms._base.prf): SipHash-2-4 (Aumasson and Bernstein 2012) of the 24-byte
# message (tag, value, counter), three little-endian 64-bit words.
def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _sip_rounds(v0, v1, v2, v3, count):
    for _ in range(count):
        v0 = (v0 + v1) & _MASK64
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK64
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK64
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK64
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def _siphash24(key, message):
    """SipHash-2-4 of ``message`` (bytes) under the 16-byte ``key``: a 64-bit integer."""
    k0, k1 = int.from_bytes(key[:8], "little"), int.from_bytes(key[8:16], "little")
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    tail = len(message) - len(message) % 8
    blocks = [int.from_bytes(message[i:i + 8], "little") for i in range(0, tail, 8)]
    blocks.append(int.from_bytes(message[tail:], "little") | ((len(message) & 0xFF) << 56))
    for block in blocks:
        v3 ^= block
        v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
        v0 ^= block
    v2 ^= 0xFF
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def _prf(secret, label, value, counter):
    """The PRF word of ``(label, value, counter)`` under the client's 16-byte ``secret``."""
    return _siphash24(secret, label.encode("ascii") + value.to_bytes(8, "little")
                      + counter.to_bytes(8, "little"))


def _prf_bit(secret, label, value, counter, numerator):
    """1 with probability ``numerator / 2^52`` exactly: the top 52 bits of a PRF word below
    the numerator."""
    return int((_prf(secret, label, value, counter) >> 12) < numerator)


def _prf_below(secret, label, value, high):
    """A uniform integer in ``[0, high)``: the first PRF word (counters 0, 1, ...) at or above
    ``2^64 mod high``, reduced modulo ``high`` (the server's ``prf_uniform_below``)."""
    limit = (1 << 64) % high
    for counter in itertools.count():
        word = _prf(secret, label, value, counter)
        if word >= limit:
            return word % high
    raise AssertionError("unreachable")  # pragma: no cover


def _prf_lanes(secret, label, value, n_bits, numerator):
    """``n_bits`` independent bits (an integer, bit ``j`` for value ``j``), each 1 with
    probability ``numerator / 2^52``: the server's bit-sliced ``prf_bernoulli_lanes`` (digit
    ``t`` of lane ``j`` of group ``g`` is bit ``(t mod P) L + j`` of the word of counter
    ``256 g + t div P``, ``L`` the power of two at least the group's width, ``P = 64 / L``;
    the digits are compared with the numerator's, top digit first)."""
    bits = 0
    for group in range((n_bits + 63) // 64):
        width = min(64, n_bits - 64 * group)
        valid = (1 << width) - 1
        lane_bits = 1 << (width - 1).bit_length()
        per_word = 64 // lane_bits
        result, undecided = (valid, 0) if numerator == _ONE else (0, valid)
        word = 0
        for t in range(PRECISION):
            if not undecided:
                break
            if t % per_word == 0:
                stored = _prf(secret, label, value, 256 * group + t // per_word)
            word = stored >> ((t % per_word) * lane_bits)
            if (numerator >> (PRECISION - 1 - t)) & 1:
                decided = undecided & ~word
                result |= decided
            else:
                decided = undecided & word
            undecided &= ~decided
        bits |= result << (64 * group)
    return bits


try:  # POSIX advisory locks (standard library); elsewhere the state file is not locked
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


def _new_secret(rng):
    """16 bytes of secret: from the operating system (``secrets``) unless the Randomizer is
    seeded (simulation: whoever knows the seed can recompute the permanent responses)."""
    if isinstance(rng, random.SystemRandom):
        return secrets.token_bytes(16)
    return rng.getrandbits(128).to_bytes(16, "little")


def _check_secret_state(state):
    """The problem of a state object (``{"secret": 32 lowercase hex digits}``), or None."""
    if not isinstance(state, dict) or set(state) != {"secret"}:
        return "it must hold exactly a 'secret'"
    secret = state["secret"]
    if not isinstance(secret, str) or len(secret) != 32 or any(
            c not in "0123456789abcdef" for c in secret):
        return (f"'secret' must be 32 lowercase hex digits (128 bits), got "
                f"{str(secret)[:40]!r}")
    return None


class _StateFile:
    """The client's secret, in a small JSON file: its permanent responses derive from it.

    A memoizing kind does not store its permanent responses: the response of a value is a
    function of the client's 128-bit secret and the value (SipHash-2-4), so a restored
    backup, a second process or a rebuilt file with the same secret gives the same
    responses, never a second one. The file holds ``format``, ``version``, ``spec_sha256``
    (the SHA-256 of the canonical JSON of the specification: the state of another spec is
    refused), ``kind``, ``state`` (``{"secret": hex}``) and ``sha256``, the SHA-256 of the
    canonical JSON of all the other fields (a seal: an edited or truncated file is refused).
    It is created on first use (permissions 0600), under an exclusive non-blocking
    ``fcntl.flock`` of ``path + ".lock"`` (a second process using the file at the same time
    is refused), and written atomically (a temporary file in the same folder, fsync,
    ``os.replace``, fsync of the folder). A file that cannot be read, that belongs to
    another spec, whose seal does not match, or that disappeared after this client used it
    is a ValueError naming the file: the client never draws a new secret in its place.
    """

    def __init__(self, path, spec, check_state=_check_secret_state):
        try:
            self.path = os.fspath(path)
        except TypeError:
            raise ValueError(f"state must be a file path, got {path!r}.") from None
        try:
            self.spec_digest = _sha256(_canonical(dict(spec)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the specification cannot be written as JSON ({exc}), so no "
                             "state file can be bound to it.") from None
        self.kind = spec["mechanism"]
        self.check_state = check_state
        self._seen = False  # whether this client has read or written the file already

    def secret(self, rng):
        """The client's 16-byte secret: read from the file, or created (and saved) on first
        use, under the file's lock."""
        descriptor = self._lock()
        try:
            state = self.load()
            if state is None:
                state = {"secret": _new_secret(rng).hex()}
                self.save(state)
        finally:
            if descriptor is not None:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
                os.close(descriptor)
        return bytes.fromhex(state["secret"])

    def _lock(self):
        if fcntl is None:  # pragma: no cover - Windows
            return None
        lock = self.path + ".lock"
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            raise ValueError(f"the state file {self.path!r} is in use by another process (its "
                             f"lock {lock!r} is held): one writer at a time.") from None
        return descriptor

    def load(self):
        """The kind's state from the file (``None`` if the file does not exist yet)."""
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError:
            if self._seen:
                raise ValueError(f"the state file {self.path!r} disappeared after this client "
                                 "used it; refusing to draw a new secret (restore the file: a "
                                 "new secret means new permanent responses).") from None
            return None
        try:
            content = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise ValueError(f"the state file {self.path!r} is not valid JSON (truncated or "
                             "edited); refusing to draw a new secret.") from None
        if not isinstance(content, dict) or set(content) != {
                "format", "version", "spec_sha256", "kind", "state", "sha256"}:
            raise ValueError(f"the state file {self.path!r} is not a client state file (fields "
                             f"{sorted(content) if isinstance(content, dict) else None}).")
        if content["format"] != STATE_FORMAT or content["version"] != STATE_VERSION:
            raise ValueError(f"the state file {self.path!r} has format {content['format']!r} "
                             f"version {content['version']!r}; this client writes "
                             f"{STATE_FORMAT!r} version {STATE_VERSION}.")
        seal = content.pop("sha256")
        if not isinstance(seal, str) or seal != _sha256(_canonical(content)):
            raise ValueError(f"the state file {self.path!r} does not match its SHA-256 seal: it "
                             "was edited or damaged; refusing to draw a new secret.")
        if content["spec_sha256"] != self.spec_digest or content["kind"] != self.kind:
            raise ValueError(f"the state file {self.path!r} belongs to another specification "
                             f"(kind {content['kind']!r}, spec digest "
                             f"{str(content['spec_sha256'])[:12]}...); use one state file per "
                             "specification.")
        problem = self.check_state(content["state"])
        if problem:
            raise ValueError(f"the state file {self.path!r} holds an invalid state: {problem}.")
        self._seen = True
        return content["state"]

    def save(self, state):
        """Write ``state`` sealed, atomically and durably."""
        content = {"format": STATE_FORMAT, "version": STATE_VERSION,
                   "spec_sha256": self.spec_digest, "kind": self.kind, "state": state}
        content["sha256"] = _sha256(_canonical(content))
        folder = os.path.dirname(os.path.abspath(self.path))
        # mkstemp: readable by the owner only (the file holds the secret).
        handle, temporary = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(_canonical(content))
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        try:  # the rename itself made durable (POSIX; skipped where folders cannot be opened)
            descriptor = os.open(folder, os.O_RDONLY)
        except OSError:  # pragma: no cover - Windows
            descriptor = None
        if descriptor is not None:
            try:
                os.fsync(descriptor)
            except OSError:  # pragma: no cover - file systems without directory fsync
                pass
            finally:
                os.close(descriptor)
        self._seen = True


# ---------------------------------------------------------------------- longitudinal
LONGITUDINAL_PROTOCOLS = {"l_grr": ("grr", "grr"), "l_sue": ("sue", "sue"),
                          "l_oue": ("oue", "oue"), "l_osue": ("oue", "sue"),
                          "l_soue": ("sue", "oue")}
def _check_cells_field(value, name, kind, minimum=2):
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_CELLS:
        raise ValueError(f"{name} of the {kind!r} specification must be an integer in "
                         f"[{minimum}, {MAX_CELLS}], got {value!r}.")
    return value


def _check_cell_value(value, k):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < k:
        raise ValueError(f"the value must be a cell index, an integer in [0, {k}), got "
                         f"{value!r}.")
    return value


def _longitudinal_weights(unary, k, numerators):
    """``(own, other, total)`` of one report (``LongitudinalMechanism._report_weights``)."""
    if unary:
        p1, q1 = numerators["p_perm"], numerators["q_perm"]
        p2, q2 = numerators["p_instant"], numerators["q_instant"]
        return p1 * p2 + (_ONE - p1) * q2, q1 * p2 + (_ONE - q1) * q2, _ONE * _ONE
    keep1, keep2 = numerators["keep_perm"], numerators["keep_instant"]
    move1, move2 = _ONE - keep1, _ONE - keep2
    own = keep1 * keep2 * (k - 1) ** 2 + move1 * move2 * (k - 1)
    other = (move1 * keep2 + keep1 * move2) * (k - 1) + (k - 2) * move1 * move2
    return own, other, (_ONE * (k - 1)) ** 2


def _longitudinal_numerators(spec, k, permanent, instant, epsilon_perm, epsilon_1):
    """The shipped numerators, checked: integers in ``[0, 2^52]`` of the protocol's forms
    ("sue": ``p = 2^52 - q``; "oue": ``p = 2^51``), the permanent step within
    ``epsilon_perm`` and one report within ``epsilon_1``, exactly on the integers."""
    kind = "longitudinal"
    unary = permanent != "grr"
    names = ("p_perm", "q_perm", "p_instant", "q_instant") if unary \
        else ("keep_perm", "keep_instant")
    numerators = spec["numerators"]
    if not isinstance(numerators, dict) or set(numerators) != set(names):
        raise ValueError(f"numerators of the {kind!r} specification must hold exactly "
                         f"{sorted(names)}, got {str(numerators)[:80]!r}.")
    for name in names:
        value = numerators[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _ONE:
            raise ValueError(f"numerators.{name} of the {kind!r} specification must be an "
                             f"integer in [0, 2^52], got {value!r}.")
    if unary:
        for step, suffix in ((permanent, "perm"), (instant, "instant")):
            p, q = numerators["p_" + suffix], numerators["q_" + suffix]
            expected = _ONE - q if step == "sue" else _ONE // 2
            if p != expected:
                raise ValueError(f"numerators.p_{suffix} of the {kind!r} specification is "
                                 f"{p}, not {expected} (the {step!r} step's form).")
        p1, q1 = numerators["p_perm"], numerators["q_perm"]
        permanent_pair = (p1 * (_ONE - q1), q1 * (_ONE - p1))
    else:
        keep = numerators["keep_perm"]
        permanent_pair = (keep * (k - 1), _ONE - keep)
    if not _within_both_ways(*permanent_pair, epsilon_perm):
        raise ValueError(f"numerators of the {kind!r} specification make the permanent "
                         f"response exceed epsilon_perm={epsilon_perm!r} (exact check): "
                         f"{numerators}.")
    own, other, total = _longitudinal_weights(unary, k, numerators)
    report_pair = (own * (total - other), other * (total - own)) if unary else (own, other)
    if not _within_both_ways(*report_pair, epsilon_1):
        raise ValueError(f"numerators of the {kind!r} specification make one report exceed "
                         f"epsilon_1={epsilon_1!r} (exact check): {numerators}.")
    return numerators


def _longitudinal(spec):
    """``LongitudinalMechanism`` (l_grr, l_sue, l_oue, l_osue, l_soue): a permanent response
    per value, derived from the client's secret (state file), and a fresh instantaneous
    randomization of it in every report, with the server's shipped numerators."""
    kind = "longitudinal"
    _check_fields(spec, kind, ("n_cells", "epsilon_perm", "epsilon_1", "protocol",
                               "numerators"))
    k = _check_cells_field(spec["n_cells"], "n_cells", kind)
    epsilon_perm = _check_budget(spec["epsilon_perm"], "epsilon_perm", kind)
    epsilon_1 = _check_budget(spec["epsilon_1"], "epsilon_1", kind)
    if not epsilon_1 < epsilon_perm:
        raise ValueError(f"epsilon_1 of the 'longitudinal' specification must be below "
                         f"epsilon_perm, got {epsilon_1!r} >= {epsilon_perm!r}.")
    protocol = spec["protocol"]
    if protocol not in LONGITUDINAL_PROTOCOLS:
        raise ValueError(f"protocol of the 'longitudinal' specification must be one of "
                         f"{sorted(LONGITUDINAL_PROTOCOLS)}, got {protocol!r}.")
    permanent, instant = LONGITUDINAL_PROTOCOLS[protocol]
    unary = permanent != "grr"
    numerators = _longitudinal_numerators(spec, k, permanent, instant, epsilon_perm,
                                          epsilon_1)
    n_bytes = (k + 7) // 8

    def draw_permanent(value, secret):
        if not unary:
            if _prf_bit(secret, "grr-keep", value, 0, numerators["keep_perm"]):
                return value
            other = _prf_below(secret, "grr-othr", value, k - 1)
            return other + (other >= value)
        # Every bit 1 with q1, then the value's own bit 1 with p1 (the server's order).
        bits = _prf_lanes(secret, "ue-plane", value, k, numerators["q_perm"])
        bits &= ~(1 << value)
        bits |= _prf_bit(secret, "ue-ownbt", value, 0, numerators["p_perm"]) << value
        return list(bits.to_bytes(n_bytes, "little"))

    def instantaneous(response, rng):
        if not unary:
            if _uniform_words(rng, 1)[0] < numerators["keep_instant"]:
                return response
            other = rng.randrange(k - 1)  # exact: rejection on random bits
            return other + (other >= response)
        words = _uniform_words(rng, k)
        q2 = numerators["q_instant"]
        report = _packed([j for j, word in enumerate(words) if word < q2], k)
        if instant == "sue":  # a set permanent bit is 1 with 1 - q2 = p2
            return [r ^ b for r, b in zip(report, response, strict=True)]
        # "oue": a set permanent bit becomes a fair coin (p2 = 1/2), as the server XORs one.
        coins = list(rng.getrandbits(8 * n_bytes).to_bytes(n_bytes, "little"))
        return [r ^ (c & b) for r, c, b in zip(report, coins, response, strict=True)]

    def privatize(value, rng, memo):
        value = _check_cell_value(value, k)
        return instantaneous(draw_permanent(value, memo.secret(rng)), rng)

    built = _ValueKind(k, privatize, stateful=True, check_state=_check_secret_state)
    built.derive = draw_permanent  # (value, secret) -> permanent response (parity tests)
    return built


def _dbitflip_numerators(epsilon):
    """``(own, other)`` over ``2^52``: ``other = 1 / (e^(eps/2) + 1)`` rounded up in 80-digit
    decimals, ``own = 2^52 - other`` (``DBitFlipPM``), checked exactly."""
    other = _dyadic_numerator(DECIMAL_CONTEXT.divide(
        1, DECIMAL_CONTEXT.add(_decimal_exp(epsilon / 2), 1)), "up")
    own = _ONE - other
    if not _within_both_ways(own, other, epsilon / 2):
        raise ValueError(f"epsilon={epsilon!r} of the 'dbitflip_pm' specification cannot be "
                         "realized at precision 2^-52.")
    return own, other


def _dbitflip_pm(spec):
    """``DBitFlipPM``: ``d`` buckets and one bit per bucket, memoized per value: both derived
    from the client's secret (state file), so an unchanged value repeats its report."""
    kind = "dbitflip_pm"
    _check_fields(spec, kind, ("n_cells", "epsilon", "n_sampled"))
    k = _check_cells_field(spec["n_cells"], "n_cells", kind)
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    d = spec["n_sampled"]
    if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= k:
        raise ValueError(f"n_sampled of the 'dbitflip_pm' specification must be an integer in "
                         f"[1, {k}], got {d!r}.")
    own, other = _dbitflip_numerators(epsilon)

    def buckets(secret):
        # Floyd's algorithm on PRF words (the server's _derived_subsets).
        chosen = []
        for j in range(k - d, k):
            t = _prf_below(secret, "dbf-bckt", j, j + 1)
            chosen.append(j if t in chosen else t)
        return sorted(chosen)

    def derive(value, secret):
        sampled = buckets(secret)
        bits = [_prf_bit(secret, "dbf-bits", value, i, own if bucket == value else other)
                for i, bucket in enumerate(sampled)]
        return sampled + bits

    def privatize(value, rng, memo):
        return derive(_check_cell_value(value, k), memo.secret(rng))

    built = _ValueKind(k, privatize, stateful=True, check_state=_check_secret_state)
    built.derive = derive  # (value, secret) -> report (parity tests)
    return built


def _one_bit_mean_pm(spec):
    """``OneBitMeanPM`` (Ding et al.'s 1BitMean with alpha-point rounding): the client's
    ``alpha`` and the bit of every rounding point are derived from its secret (state file);
    the bit probabilities are the server's exact ``2^-52`` numerators."""
    kind = "1bitmean_pm"
    _check_fields(spec, kind, ("max_value", "epsilon", "n_segments"))
    m = spec["max_value"]
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) \
            or m <= 0:
        raise ValueError(f"max_value of the {kind!r} specification must be a finite number "
                         f"> 0, got {m!r}.")
    m = float(m)
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    s = spec["n_segments"]
    if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= 2**20:
        raise ValueError(f"n_segments of the {kind!r} specification must be an integer in "
                         f"[1, 2^20], got {s!r}.")
    # p_0 = 1 / (e^eps + 1) rounded up (the server divides in the default 28-digit decimal
    # context, as for the sketch), p_s = 1 - p_0, the points between on the straight line.
    low = _sketch_flip_numerator(epsilon, True)
    high = _ONE - low
    bound = _decimal_exp(epsilon)
    if not (_ratio_at_most(high, low, bound) and _ratio_at_most(_ONE - low, _ONE - high,
                                                                 bound)):
        raise ValueError(f"epsilon={epsilon!r} of the {kind!r} specification cannot be "
                         "realized at precision 2^-52.")

    def numerator(point):
        return low + (point * (high - low) + s // 2) // s

    def derive(value, secret):
        alpha = (_prf(secret, "1bm-alph", 0, 0) >> 12) / _ONE  # exact: A / 2^52
        scaled = value * (s / m)
        lower = min(math.floor(scaled), s)
        point = min(lower + (scaled - lower + alpha >= 1.0), s)
        return _prf_bit(secret, "1bm-bits", point, 0, numerator(point))

    def privatize(value, rng, memo):
        return derive(_check_value(value, (0.0, m), "the counter"), memo.secret(rng))

    built = _ValueKind(1, privatize, stateful=True, check_state=_check_secret_state)
    built.derive = derive  # (value, secret) -> report (parity tests)
    return built


# ---------------------------------------------------------------------- heavy hitters
def _bit_string(value, bit_length):
    """The value as the server's bit string (``heavy_hitters.encode_values``): an integer of
    ``W * 64`` bits, word 0 most significant; ``W = ceil(bit_length / 64)``."""
    W = -(-bit_length // 64)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < 1 << bit_length:
            raise ValueError(f"the value {value!r} is not in [0, 2^{bit_length}).")
        return value << (W * 64 - bit_length)  # the L-bit string at the top
    if isinstance(value, str):
        if "\0" in value:  # the zero padding could not tell "a" and "a\0" apart
            raise ValueError(f"the value {value!r} holds a NUL character, which the zero "
                             "padding of the encoding cannot tell apart.")
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"the value {value!r} is not a valid Unicode string ({exc.reason} "
                             f"at position {exc.start}): it has no UTF-8 encoding.") from None
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"the value {value!r} is not valid UTF-8 ({exc.reason} at byte "
                             f"{exc.start}).") from None
        if b"\0" in data:
            raise ValueError(f"the value {value!r} holds a NUL byte, which the zero padding "
                             "of the encoding cannot tell apart.")
    else:
        raise ValueError(f"the value must be an integer or a string, got {value!r}.")
    if bit_length % 8:
        raise ValueError(f"string values need a bit_length that is a multiple of 8, got "
                         f"{bit_length}; the value {value!r} cannot be encoded.")
    if len(data) > bit_length // 8:
        raise ValueError(f"the value {value!r} takes {len(data)} bytes in UTF-8, more than "
                         f"the {bit_length // 8} of bit_length={bit_length}.")
    return int.from_bytes(data.ljust(W * 8, b"\0"), "big")


def _prefix_schedule(bit_length, n_candidates, extension_bits):
    """``heavy_hitters.prefix_schedule``, same formula."""
    first = min(bit_length, max(1, math.ceil(math.log2(n_candidates))) + extension_bits)
    rest = bit_length - first
    steps = -(-rest // extension_bits)
    lengths = [first]
    for i in range(steps):
        lengths.append(lengths[-1] + rest // steps + (i < rest % steps))
    return lengths


def _prefix_heavy_hitters(spec):
    """``PrefixHeavyHitters`` (PEM, TreeHist): a uniform round, a 64-bit seed naming the
    round's linear hash (SplitMix64 rows, bit for bit the server's), and the randomized hash
    of the value's prefix. Report ``[round, seed, y]``."""
    kind = "prefix_heavy_hitters"
    fields = ("bit_length", "epsilon", "protocol", "n_candidates", "extension_bits")
    _check_fields(spec, kind, fields)
    L = spec["bit_length"]
    if isinstance(L, bool) or not isinstance(L, int) or not 1 <= L <= MAX_BIT_LENGTH:
        raise ValueError(f"bit_length of the {kind!r} specification must be an integer in "
                         f"[1, {MAX_BIT_LENGTH}], got {L!r}.")
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    protocol = spec["protocol"]
    if protocol not in ("pem", "treehist"):
        raise ValueError(f"protocol of the {kind!r} specification must be 'pem' or 'treehist', "
                         f"got {protocol!r}.")
    n_candidates = _check_int(spec["n_candidates"], f"n_candidates of the {kind!r} "
                              "specification")
    eta = _check_int(spec["extension_bits"], f"extension_bits of the {kind!r} specification")
    if protocol == "treehist" and eta != 1:
        raise ValueError(f"extension_bits of a 'treehist' specification is 1, got {eta!r}.")
    if n_candidates > MAX_CANDIDATES or eta > 16 or n_candidates << eta > MAX_CANDIDATES:
        raise ValueError(f"n_candidates * 2^extension_bits of the {kind!r} specification must "
                         f"be at most {MAX_CANDIDATES}, got n_candidates={n_candidates}, "
                         f"extension_bits={eta}.")
    lengths = _prefix_schedule(L, n_candidates, eta)
    W = -(-L // 64)
    if protocol == "pem":
        g = _olh_buckets(epsilon, "linear")  # best_power_of_two_buckets
        n_rows = g.bit_length() - 1
    else:
        g, n_rows = 2, 1
    # The own bucket is kept when a 52-bit word is below the server's numerator (the largest
    # with a (g - 1) / (2^52 - a) <= e^eps, decided exactly): exactly its law.
    keep = _keep_numerator(epsilon, g)
    top = W * 64

    def own_hash(seed, prefix, length):
        mask = ((1 << length) - 1) << (top - length)
        hashed = 0
        for row in range(n_rows):
            # Row `row` is words row * W + 1 .. row * W + W of SplitMix64 from the seed.
            bits = 0
            for w in range(W):
                step = (row * W + w + 1) * _GOLDEN
                bits = (bits << 64) | _mix64((seed + step) & _MASK64)
            hashed |= _parity(bits & mask, prefix) << row
        return hashed

    def privatize(value, rng, memo=None):
        x = _bit_string(value, L)
        round_index = rng.randrange(len(lengths))
        seed = rng.getrandbits(64)
        length = lengths[round_index]
        prefix = x & (((1 << length) - 1) << (top - length))
        own = own_hash(seed, prefix, length)
        kept = _uniform_words(rng, 1)[0] < keep
        if protocol == "pem":  # g-ary randomized response of the bucket
            other = rng.randrange(g - 1)  # exact: rejection on random bits
            other += other >= own
            y = own if kept else other
        else:
            y = own ^ (not kept)
        return [round_index, seed, int(y)]

    privatize.keep_numerator = keep  # exposed for the tests (the server's integer)

    privatize.own_hash = own_hash  # exposed for the tests (agreement with the server)
    return _ValueKind(None, privatize)


def _fingerprint(x, W):
    """``heavy_hitters._fingerprints`` of one bit string."""
    state = 0
    for w in range(W):
        word = (x >> (64 * (W - 1 - w))) & _MASK64
        state = (_mix64(state ^ word) + _GOLDEN * (w + 1)) & _MASK64
    return state


def _sketch(spec):
    """``SketchFrequencyOracle``: CMS report ``[j // 256, j % 256, packed bits...]`` (the
    ``+-1`` vector, bit 1 = +1), HCMS report ``[j, l, bit]``; the flip bits exact (dyadic, as
    the server)."""
    kind = "sketch"
    _check_fields(spec, kind, ("epsilon", "n_hashes", "width", "hadamard", "hash_seed"),
                  ("bit_length",))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    # The encoder's client_spec() adds the values' bit length; a bare math-layer spec has
    # none, and then every value comes as a pair [value, bit_length].
    declared = spec.get("bit_length")
    if declared is not None and (isinstance(declared, bool) or not isinstance(declared, int)
                                 or not 1 <= declared <= MAX_BIT_LENGTH):
        raise ValueError(f"bit_length of the 'sketch' specification must be an integer in "
                         f"[1, {MAX_BIT_LENGTH}], got {declared!r}.")
    k = spec["n_hashes"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SKETCH_HASHES:
        raise ValueError(f"n_hashes of the 'sketch' specification must be an integer in "
                         f"[1, {MAX_SKETCH_HASHES}], got {k!r}.")
    m = spec["width"]
    if isinstance(m, bool) or not isinstance(m, int) or not 2 <= m <= MAX_SKETCH_WIDTH:
        raise ValueError(f"width of the 'sketch' specification must be an integer in "
                         f"[2, {MAX_SKETCH_WIDTH}], got {m!r}.")
    hadamard = spec["hadamard"]
    if not isinstance(hadamard, bool):
        raise ValueError(f"hadamard of the 'sketch' specification must be true or false, got "
                         f"{hadamard!r}.")
    if hadamard and m & (m - 1):
        raise ValueError(f"width of an HCMS 'sketch' specification must be a power of two, got "
                         f"{m!r}.")
    hash_seed = spec["hash_seed"]
    if isinstance(hash_seed, bool) or not isinstance(hash_seed, int) \
            or not 0 <= hash_seed < 2**64:
        raise ValueError(f"hash_seed of the 'sketch' specification must be an integer in "
                         f"[0, 2^64), got {hash_seed!r}.")
    flip_num = _sketch_flip_numerator(epsilon, hadamard)
    salts = {}

    def position(x, W, j):
        if j not in salts:
            salts[j] = _mix64((hash_seed + (j + 1) * _GOLDEN) & _MASK64)
        return _mix64(_fingerprint(x, W) ^ salts[j]) % m

    def privatize(value, rng, memo=None):
        # The hash covers the W words of encode_values(values, bit_length), and the bit
        # length (not in the spec) moves an integer within them: the value comes with it.
        x, W = _sketch_words(value, declared)
        j = rng.randrange(k)
        h = position(x, W, j)
        if not hadamard:
            words = _uniform_words(rng, m)
            ones = {i for i, word in enumerate(words) if word < flip_num}
            ones ^= {h}
            # j in two big-endian bytes (j < 2^16), then the packed bits: every entry a
            # byte, the row layout of the encoder's heavy-hitter reports.
            return [j >> 8, j & 0xFF] + _packed(sorted(ones), m)
        coordinate = rng.randrange(m)
        flip = _uniform_words(rng, 1)[0] < flip_num
        return [j, coordinate, int((_parity(coordinate, h) == 0) ^ flip)]

    privatize.position = position  # exposed for the tests
    return _ValueKind(None, privatize)


def _sketch_words(value, declared=None):
    """``(bit string, W)`` of a sketch value encoded as the server's
    ``encode_values(values, bit_length)``: a plain value when the specification declares the
    bit length, else a pair ``[value, bit_length]`` (which must agree with a declared one)."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        item, bit_length = value
        if isinstance(bit_length, bool) or not isinstance(bit_length, int) \
                or not 1 <= bit_length <= MAX_BIT_LENGTH:
            raise ValueError(f"the bit_length of the value must be an integer in "
                             f"[1, {MAX_BIT_LENGTH}], got {bit_length!r}.")
        if declared is not None and bit_length != declared:
            raise ValueError(f"the value's bit_length {bit_length} is not the specification's "
                             f"{declared}.")
    elif declared is not None:
        item, bit_length = value, declared
    else:
        raise ValueError(f"a 'sketch' value is a pair [value, bit_length] (the bit_length the "
                         f"server passes to encode_values), got {value!r}.")
    return _bit_string(item, bit_length), -(-bit_length // 64)


def _sketch_flip_numerator(epsilon, hadamard):
    """``SketchFrequencyOracle._flip_numerator``: ``f = 2^52 - a``, ``a`` the largest keep
    numerator with ``a / f <= e^eps'`` (``eps' = eps / 2`` for CMS), then the whole report's
    ratio checked on the integers (``(a / f)^2`` for CMS: two entries differ)."""
    flip = _ONE - _keep_numerator(epsilon / (1 if hadamard else 2), 2)
    power = 1 if hadamard else 2
    if not 0 < flip < _ONE // 2 or not _within((_ONE - flip) ** power, flip ** power, epsilon):
        raise ValueError(f"epsilon of the 'sketch' specification gives the flip numerator "
                         f"{flip}, whose ratio is not within e^{epsilon!r}.")
    return flip


# ---------------------------------------------------------------------- registry
RANDOMIZERS = {
    "randomized_response": _randomized_response,
    "rappor": _rappor,
    "oue": _oue,
    "olh": _olh,
    "blh": _blh,
    "hadamard": _hadamard,
    "hrr": _hrr,
    "subset_selection": _subset_selection,
    "factorization": _factorization,
    "hierarchical": _hierarchical,
    "haar": _haar,
    "gaussian": _gaussian,
    "gaussian_pure": _gaussian_pure,
    "inp_rr": _inp_rr,
    "inp_ps": _inp_ps,
    "inp_ht": _inp_ht,
    "inp_em": _inp_em,
    "marg_rr": _marg_rr,
    "marg_ps": _marg_ps,
    "marg_ht": _marg_ht,
    # Kinds of the math layer (sklearn_ldp.mechanisms.numeric.mechanisms, multi_attribute,
    # heavy_hitters, longitudinal) and the "columns" records of LDPEncoder: not registered
    # Mechanism classes on the server, but randomized on devices all the same.
    "duchi": _mean_kind,
    "piecewise": _mean_kind,
    "hybrid": _mean_kind,
    "square_wave": _square_wave,
    "sampled_mean": _sampled_mean,
    "multi_attribute": _multi_attribute,
    "columns": _columns,
    "prefix_heavy_hitters": _prefix_heavy_hitters,
    "sketch": _sketch,
    "longitudinal": _longitudinal,
    "dbitflip_pm": _dbitflip_pm,
    "1bitmean_pm": _one_bit_mean_pm,
}


# ---------------------------------------------------------------------- records
def _is_missing(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


class _Categories:
    """Column -> category code lookups, encoding a record like ``Domain.encode``."""

    def __init__(self, categories):
        if not isinstance(categories, Mapping) or not categories:
            raise ValueError("categories must be a non-empty mapping column -> list of "
                             "categories, as the server's Domain was built with.")
        self.columns, self.codes, self.sizes, self.has_bool = [], [], [], []
        for column, values in categories.items():
            if not isinstance(column, str):
                raise ValueError(f"column names must be strings, got {column!r}.")
            if isinstance(values, (str, bytes, Mapping, set, frozenset)):
                raise ValueError(f"the categories of column {column!r} must be a list (their "
                                 f"order fixes the cell index), got {values!r}.")
            values = list(values)
            if not values:
                raise ValueError(f"column {column!r} has no categories.")
            lookup = {}
            for code, value in enumerate(values):
                try:
                    hash(value)
                except TypeError:
                    raise ValueError(f"the categories of column {column!r} must be hashable; "
                                     f"{value!r} is not.") from None
                if _is_missing(value):
                    raise ValueError(f"column {column!r} has a missing value among its "
                                     "categories.")
                if value in lookup:
                    raise ValueError(f"column {column!r} has the duplicate category {value!r}.")
                lookup[value] = code
            self.columns.append(column)
            self.codes.append(lookup)
            self.sizes.append(len(values))
            self.has_bool.append(any(isinstance(value, bool) for value in values))
        self.size = math.prod(self.sizes)

    def encode(self, record):
        """The flat C-order cell index of one record (first column slowest)."""
        cell = 0
        for size, code in zip(self.sizes, self.codes_of(record), strict=True):
            cell = cell * size + code
        return cell

    def codes_of(self, record):
        """The category code of each column of one record, in column order."""
        if isinstance(record, Mapping):
            missing = [c for c in self.columns if c not in record]
            if missing:
                raise ValueError(f"the record has no value for column(s) {missing}; it has "
                                 f"{sorted(map(str, record))}.")
            values = [record[c] for c in self.columns]
        elif isinstance(record, (list, tuple)):
            if len(record) != len(self.columns):
                raise ValueError(f"the record has {len(record)} values but the domain has "
                                 f"{len(self.columns)} columns {self.columns}.")
            values = list(record)
        elif len(self.columns) == 1:
            values = [record]
        else:
            raise ValueError(f"a record must be a dict column -> value or a list of "
                             f"{len(self.columns)} values in the order {self.columns}, got "
                             f"{record!r}.")
        codes = []
        for column, lookup, has_bool, value in zip(
                self.columns, self.codes, self.has_bool, values, strict=True):
            if _is_missing(value):
                raise ValueError(f"column {column!r} has a missing value (None/NaN); every "
                                 "record needs one of the declared categories.")
            try:
                code = lookup.get(value)
            except TypeError:  # unhashable
                code = None
            if code is None or (isinstance(value, bool) and not has_bool):
                shown = list(lookup)[:10]
                raise ValueError(f"column {column!r} has the value {value!r}, which is not "
                                 f"among its categories {shown}"
                                 f"{' ...' if len(lookup) > 10 else ''}.")
            codes.append(code)
        return codes


# ---------------------------------------------------------------------- the client
class Randomizer:
    """The randomizer of one LDP mechanism, rebuilt from its JSON specification.

    Parameters
    ----------
    spec : dict
        What the server's ``mechanism.to_dict()`` returns (``from_json`` parses the text).
    categories : mapping column -> list, optional
        The public categories of the server's domain, in its order. With them
        :meth:`privatize` takes records (a dict column -> value or a list of values) and
        encodes them like ``Domain.encode``; without, it takes flat cell indices. For
        ``multi_attribute`` one list per attribute; for ``"columns"`` the categorical
        columns' lists (a categorical column without them takes integer codes).
    seed : int, optional
        **Tests and simulation only.** ``None`` (default) draws from the operating system's
        entropy (``random.SystemRandom``); a seed makes the reports reproducible, and
        therefore reversible by anyone who knows it, so it emits a UserWarning (filter it
        where a test or a simulation seeds on purpose).
    state : str or os.PathLike, optional
        The client state file of the memoizing kinds (``longitudinal``, ``dbitflip_pm``,
        ``1bitmean_pm``),
        required by them and refused by the others: created on first use, rewritten
        atomically, bound to the specification and sealed by a SHA-256 (see
        ``docs/client.md``). One file per client and specification.

    Attributes
    ----------
    kind : str
        The mechanism kind (e.g. ``"oue"``).
    epsilon : float or None
        The privacy parameter of the specification (None if it has none).
    n_inputs : int or None
        Number of domain cells; for the value kinds the number of values in a record (1 for
        one number, the attributes or columns of a record), None for heavy hitters (bit
        strings).
    columns : list of str or None
        The record columns when ``categories`` was given.

    See Also
    --------
    sklearn_ldp.LDPEncoder.client_spec : The specification the server ships to clients.
    sklearn_ldp.reports_from_client : Stacks the clients' reports on the server.
    sklearn_ldp.mechanism_from_json : The server-side mechanism of the same specification.

    Notes
    -----
    Values of the kinds that do not take cell indices: ``duchi``, ``piecewise``, ``hybrid``,
    ``square_wave`` one number within the spec's bounds (refused outside, never clipped);
    ``sampled_mean`` a list of ``d`` numbers; ``multi_attribute`` a list of category codes
    (or a record, with ``categories``); ``"columns"`` a dict column -> value;
    ``prefix_heavy_hitters`` an integer below ``2^bit_length`` or a UTF-8 string of at most
    ``bit_length / 8`` bytes; ``sketch`` a pair ``[value, bit_length]`` (the bit length the
    server encodes candidates with); ``longitudinal``, ``dbitflip_pm`` a cell index;
    ``1bitmean_pm`` a counter in ``[0, max_value]``.

    Examples
    --------
    >>> spec = '{"version": 1, "mechanism": "randomized_response", "epsilon": 1.0, '
    >>> spec += '"n_inputs": 6, "params": {}}'
    >>> client = Randomizer.from_json(spec, categories={"age": ["<30", "30-50", ">50"],
    ...                                                 "smoker": ["no", "yes"]})
    >>> client.encode({"age": "30-50", "smoker": "yes"})
    3
    >>> report = client.privatize({"age": "30-50", "smoker": "yes"})
    >>> 0 <= report < 6
    True
    """

    def __init__(self, spec, categories=None, seed=None, state=None):
        if not isinstance(spec, Mapping) or "mechanism" not in spec:
            raise ValueError(f"not a mechanism specification (a JSON object with 'version' and "
                             f"'mechanism'): {str(spec)[:80]!r}.")
        kind = spec["mechanism"]
        expected = _spec_version(kind)
        if spec.get("version") != expected:
            raise ValueError(f"unsupported specification version {spec.get('version')!r}; this "
                             f"client reads version {expected} of {kind!r}.")
        if kind not in RANDOMIZERS:
            raise ValueError(f"unknown mechanism {kind!r}; this client randomizes "
                             f"{sorted(RANDOMIZERS)} (central-model mechanisms run on the "
                             "curator, not on clients).")
        self.kind = kind
        built = RANDOMIZERS[kind](dict(spec))
        self.epsilon = float(spec["epsilon"]) if "epsilon" in spec else None
        self._values, self._state = None, None
        if isinstance(built, _ValueKind):
            self._values, self._privatize_cell = built, None
            self.n_inputs = built.n_inputs
            if built.stateful:
                if state is None:
                    raise ValueError(f"the {kind!r} mechanism memoizes permanent responses: "
                                     "pass state=<path of this client's state file>.")
                self._state = _StateFile(state, spec, built.check_state)
        else:
            self.n_inputs, self._privatize_cell = built
        if state is not None and self._state is None:
            raise ValueError(f"state={state!r}: the {kind!r} mechanism keeps no client state.")
        self._categories = None
        if self._values is not None:
            if categories is not None:
                if built.bind is None:
                    raise ValueError(f"the {kind!r} mechanism takes no categories (its values "
                                     "are numbers, bit strings or cell indices).")
                built.bind(categories)
                self.columns = list(categories)
        else:
            self._categories = None if categories is None else _Categories(categories)
        if self._categories is not None and self._categories.size != self.n_inputs:
            raise ValueError(f"the categories describe {self._categories.size} cells "
                             f"({' x '.join(map(str, self._categories.sizes))}) but the "
                             f"{kind!r} mechanism covers {self.n_inputs}: they are not the "
                             "server's domain.")
        if self._values is not None and getattr(built, "columns", None) is not None:
            self.columns = list(built.columns)  # a "columns" record: every column
        elif self._values is None or categories is None:
            self.columns = None if self._categories is None else list(
                self._categories.columns)
        if seed is None:
            self._rng = random.SystemRandom()
        else:
            warnings.warn(SEEDED_WARNING, UserWarning, stacklevel=2)
            self._rng = random.Random(seed)

    @classmethod
    def from_json(cls, text, categories=None, seed=None, state=None):
        """Rebuild the randomizer from the text of ``mechanism.to_json()``.

        Parameters
        ----------
        text : str or bytes
            The JSON specification.
        categories : mapping column -> list, optional
            The public categories of the server's domain, in its order.
        seed : int, optional
            **Tests and simulation only** (see the class description).
        state : str or os.PathLike, optional
            The client state file of the memoizing kinds (see the class description).

        Returns
        -------
        Randomizer
            ``Randomizer(json.loads(text), categories, seed, state)``.

        Raises
        ------
        ValueError
            If ``text`` is not valid JSON or not a specification this client supports.
        """
        try:
            spec = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the mechanism specification is not valid JSON: {exc}") from None
        return cls(spec, categories=categories, seed=seed, state=state)

    def encode(self, record):
        """The flat cell index of ``record`` (needs ``categories``).

        Parameters
        ----------
        record : dict, list or scalar
            A dict column -> value, a list of values in column order, or a single value for
            a one-column domain.

        Returns
        -------
        int
            The C-order flat index of the record's cell (first column slowest), as
            ``Domain.encode`` computes it on the server.

        Raises
        ------
        ValueError
            Without ``categories``, or for a missing column, a missing value or a value that
            is not among the categories.
        """
        if self._values is not None and self._values.encode is not None:
            return self._values.encode(record)
        if self._categories is None:
            raise ValueError("encode needs the domain's categories: build the Randomizer with "
                             "categories=...")
        return self._categories.encode(record)

    def privatize(self, value):
        """One privatized report of ``value``, in plain JSON-ready Python types.

        Parameters
        ----------
        value : int, float, str, dict or list
            A flat cell index in ``[0, n_inputs)``, or with ``categories`` a record; for the
            value kinds the value described in the class Notes.

        Returns
        -------
        report : int, float, list of int, list of float or None
            Exactly one row of the server's ``randomize`` (see ``docs/client.md``).
        """
        if self._values is not None:
            return self._values.privatize(value, self._rng, self._state)
        if self._categories is not None:
            cell = self._categories.encode(value)
        else:
            if isinstance(value, bool) or not isinstance(value, int) or not (
                    0 <= value < self.n_inputs):
                raise ValueError(f"the value must be a cell index, an integer in [0, "
                                 f"{self.n_inputs}), got {value!r} (pass categories= to "
                                 "privatize records).")
            cell = value
        return self._privatize_cell(cell, self._rng)
