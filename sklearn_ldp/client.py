"""Dependency-free LDP client: rebuild a randomizer from the server's JSON, privatize one record.

This file uses the Python standard library only (no numpy, no other ``sklearn_ldp`` module), so
a team can copy it alone onto a device. The server builds a mechanism (``LDPEncoder`` or
``sklearn_ldp.mechanisms``) and ships ``mechanism.to_json()``; each device runs::

    randomizer = Randomizer.from_json(spec_text, categories={"age": ["<30", "30-50", ">50"],
                                                             "smoker": ["no", "yes"]})
    report = randomizer.privatize({"age": "30-50", "smoker": "yes"})
    send(json.dumps(report))

and the server turns the reports it receives back into an array with
``sklearn_ldp.collect.reports_from_client`` (see ``docs/client.md``).

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
* the other discrete kinds compare a uniform double (53 bits, like numpy's ``random``) with
  the server's floating-point probability formula. The client evaluates ``e^eps`` correctly
  rounded (the same on every device); numpy's ``exp`` can differ from it in the last bit, so
  those probabilities may differ from the server's by about ``1e-16`` (relative), far below
  anything observable (see ``docs/client.md``);
* local hashing uses the server's hash family (two-character additive tabulation with
  SplitMix64 table entries) bit for bit;
* the Gaussian kinds recompute ``sigma`` with stdlib ``erf``/``erfc`` instead of scipy's
  ``ndtr`` (agreement about ``1e-12`` relative) and draw Gaussians with
  ``random.normalvariate``: floating-point Gaussian noise is the usual approximation of a
  continuous distribution (its low-order bits are not exactly distributed as the ideal
  mechanism's).

Central-model mechanisms (``MatrixMechanism``, the count mechanisms) run on a trusted
curator, not on clients: they have no client randomizer here.

Adding a kind: write one ``_<kind>(spec)`` function returning ``(n_inputs, privatize_cell)``
and add it to ``RANDOMIZERS``.
"""

import bisect
import decimal
import itertools
import json
import math
import random
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

# The privacy check of a dense strategy matrix, with the server's constants
# (sklearn_ldp._validation): a column sum may differ from 1 by COLUMN_SUM_ATOL, whatever the
# number of rows, and the realised epsilon may exceed the claimed one by the fraction
# PRIVACY_RTOL.
COLUMN_SUM_ATOL = 1e-9
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
    e = _exp(epsilon)
    p = e / (e + n - 1)

    def privatize(cell, rng):
        if n == 1:
            return 0
        if rng.random() < p:
            return cell
        other = rng.randrange(n - 1)
        return other + (other >= cell)  # uniform over the n - 1 cells other than the user's

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
    e = _exp(epsilon)
    p = e / (e + g - 1)
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

    def privatize(cell, rng):
        seed = rng.getrandbits(64)
        hashed = bucket(seed, cell)
        if rng.random() < p:
            return [seed, hashed]
        other = rng.randrange(g - 1)
        return [seed, other + (other >= hashed)]

    privatize.bucket = bucket  # exposed for the tests (hash agreement with the server)
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
    server checks it (``sklearn_ldp.mechanisms.hadamard.check_layout``): all three or none
    (the paper's layout, hole 1)."""
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
    e = _exp(epsilon)
    normalizer = half * e + n_outputs - half
    favoured_threshold = half * e / normalizer
    block_threshold = (half * e + half) / normalizer

    def privatize(cell, rng):
        block = cell // load
        start = block * b  # first output of the user's block
        column = cell % load + (hole if block < n_full else 1)
        event = rng.random()
        position = rng.randrange(b)
        if _parity(position, column) != (event >= favoured_threshold):
            position ^= column & -column  # a bijection between the two parity classes
        if event >= block_threshold:
            outside = rng.randrange(n_outputs - b)
            return outside + b * (outside >= start)  # skip the user's own block
        return start + position

    return n, privatize


def _make_hrr(n, epsilon):
    K = max(2, 1 << (n - 1).bit_length())
    e = _exp(epsilon)
    p = e / (e + 1.0)

    def privatize(cell, rng):
        coefficient = rng.randrange(1, K)
        flipped = rng.random() >= p
        return 2 * coefficient + (1 ^ _parity(coefficient, cell) ^ flipped)

    privatize.n_outputs = 2 * K
    return privatize


def _hrr(spec):
    n, epsilon, _ = _common(spec)
    return n, _make_hrr(n, epsilon)


# ---------------------------------------------------------------------- dense strategies
def _normalized_strategy(Q, epsilon, kind):
    """The server's privacy check of a strategy matrix; returns the matrix to sample.

    The same steps and decisions as ``sklearn_ldp._validation.check_ldp_strategy``: no
    negative entry; rows that are zero for every input dropped (never reported; the server
    numbers the outputs without them); each column, summed down the rows in order (as numpy's
    ``cumsum``), within ``COLUMN_SUM_ATOL`` of 1, then divided by its sum; no row of the
    normalized matrix zero for some inputs only; its realised epsilon ``max_o log(max_u
    Q[o,u] / min_u Q[o,u])`` at most ``epsilon (1 + PRIVACY_RTOL)``, the ratio compared
    exactly (80-digit decimal arithmetic on the float entries).
    """
    for o, row in enumerate(Q):
        for u, value in enumerate(row):
            if value < 0:
                raise ValueError(f"the strategy Q of the {kind!r} specification has a negative "
                                 f"entry {value!r} at row {o}, column {u}.")
    rows = [row for row in Q if max(row) > 0]
    if not rows:
        raise ValueError(f"the strategy Q of the {kind!r} specification is all zeros.")
    sums = []
    for u in range(len(rows[0])):
        running = 0.0
        for row in rows:
            running += row[u]
        if abs(running - 1.0) > COLUMN_SUM_ATOL:
            raise ValueError(f"column {u} of the strategy Q of the {kind!r} specification sums "
                             f"to {running!r}: every column must sum to 1 within "
                             f"{COLUMN_SUM_ATOL:g}; refusing to privatize with it.")
        sums.append(running)
    normalized = [[value / total for value, total in zip(row, sums, strict=True)]
                  for row in rows]
    bound = _decimal_exp(epsilon * (1.0 + PRIVACY_RTOL))
    for o, row in enumerate(normalized):
        low, high = min(row), max(row)
        if low <= 0:
            raise ValueError(f"row {o} (among the non-zero rows) of the strategy Q of the "
                             f"{kind!r} specification is 0 for input {row.index(low)} but "
                             f"{high!r} for input {row.index(high)}: an unbounded privacy "
                             "ratio; refusing to privatize with it.")
        ratio = DECIMAL_CONTEXT.divide(decimal.Decimal(high), decimal.Decimal(low))
        if ratio > bound:
            realised = float(DECIMAL_CONTEXT.ln(ratio))
            raise ValueError(f"the strategy Q of the {kind!r} specification is not "
                             f"{epsilon}-LDP: its realised epsilon (output {o} of the "
                             f"normalized matrix) is {realised!r} > {epsilon}; refusing to "
                             "privatize with it.")
    return normalized


def _factorization(spec):
    """Inverse-CDF sampling from the column of the strategy ``Q`` carried by the spec.

    The spec is checked and normalized exactly as the server does
    (:func:`_normalized_strategy`), and the *normalized* matrix is sampled, so no mass is
    left to (or taken from) the last output.
    """
    kind = "factorization"
    epsilon = _check_epsilon(_spec_field(spec, "epsilon", kind), kind)
    Q = _normalized_strategy(_check_matrix(_spec_field(spec, "Q", kind), "Q", kind), epsilon,
                             kind)
    n_outputs, n = len(Q), len(Q[0])
    # Cumulative probabilities down each column, summed in order like numpy's cumsum; the
    # last is 1 up to rounding and set to exactly 1, as on the server.
    cumulative = []
    for u in range(n):
        running, column = 0.0, []
        for o in range(n_outputs):
            running += Q[o][u]
            column.append(running)
        column[-1] = 1.0
        cumulative.append(column)

    def privatize(cell, rng):
        # The first output whose cumulative probability exceeds the uniform draw.
        return bisect.bisect_right(cumulative[cell], rng.random())

    privatize.probabilities = Q  # the matrix sampled, exposed for the tests
    return n, privatize


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
    e = _exp(epsilon)
    p = e / (e + 1.0)

    def privatize(cell, rng):
        level = rng.randrange(1, height + 1)
        coefficient = rng.randrange(sizes[level - 1])
        negative = ((cell >> (level - 1)) & 1) ^ _parity(coefficient, cell >> level)
        flipped = rng.random() >= p
        return offsets[level - 1] + 2 * coefficient + (1 ^ negative ^ flipped)

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
    share = epsilon / len(shape)
    attributes = [_make_randomized_response(size, share) for size in shape]

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
    e = _exp(epsilon)
    p = e / (1.0 + e)

    def privatize(cell, rng):
        code = _binary_code(_attribute_codes(cell, shape), everything, shape)
        t = rng.randrange(len(masks))
        flipped = rng.random() >= p
        return 2 * t + (1 ^ _parity(masks[t], code) ^ flipped)

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
    e = _exp(epsilon)
    p = e / (1.0 + e)

    def privatize(cell, rng):
        s = rng.randrange(len(sets))
        code = _binary_code(_attribute_codes(cell, shape), sets[s], shape)
        alpha = rng.randrange(1, coefficients[s] + 1)
        flipped = rng.random() >= p
        return 2 * (offsets[s] + alpha - 1) + (1 ^ _parity(alpha, code) ^ flipped)

    return n, privatize


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
        cell = 0
        for column, lookup, size, has_bool, value in zip(
                self.columns, self.codes, self.sizes, self.has_bool, values, strict=True):
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
            cell = cell * size + code
        return cell


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
        encodes them like ``Domain.encode``; without, it takes flat cell indices.
    seed : int, optional
        **Tests and simulation only.** ``None`` (default) draws from the operating system's
        entropy (``random.SystemRandom``); a seed makes the reports reproducible, and
        therefore reversible by anyone who knows it, so it emits a UserWarning (filter it
        where a test or a simulation seeds on purpose).

    Attributes
    ----------
    kind : str
        The mechanism kind (e.g. ``"oue"``).
    epsilon : float or None
        The privacy parameter of the specification (None if it has none).
    n_inputs : int
        Number of domain cells.
    columns : list of str or None
        The record columns when ``categories`` was given.

    See Also
    --------
    sklearn_ldp.LDPEncoder.client_spec : The specification the server ships to clients.
    sklearn_ldp.reports_from_client : Stacks the clients' reports on the server.
    sklearn_ldp.mechanism_from_json : The server-side mechanism of the same specification.

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

    def __init__(self, spec, categories=None, seed=None):
        if not isinstance(spec, Mapping) or "mechanism" not in spec:
            raise ValueError(f"not a mechanism specification (a JSON object with 'version' and "
                             f"'mechanism'): {str(spec)[:80]!r}.")
        if spec.get("version") != SPEC_VERSION:
            raise ValueError(f"unsupported specification version {spec.get('version')!r}; this "
                             f"client reads version {SPEC_VERSION}.")
        kind = spec["mechanism"]
        if kind not in RANDOMIZERS:
            raise ValueError(f"unknown mechanism {kind!r}; this client randomizes "
                             f"{sorted(RANDOMIZERS)} (central-model mechanisms run on the "
                             "curator, not on clients).")
        self.kind = kind
        self.epsilon = float(spec["epsilon"]) if "epsilon" in spec else None
        self.n_inputs, self._privatize_cell = RANDOMIZERS[kind](dict(spec))
        self._categories = None if categories is None else _Categories(categories)
        if self._categories is not None and self._categories.size != self.n_inputs:
            raise ValueError(f"the categories describe {self._categories.size} cells "
                             f"({' x '.join(map(str, self._categories.sizes))}) but the "
                             f"{kind!r} mechanism covers {self.n_inputs}: they are not the "
                             "server's domain.")
        self.columns = None if self._categories is None else list(self._categories.columns)
        if seed is None:
            self._rng = random.SystemRandom()
        else:
            warnings.warn(SEEDED_WARNING, UserWarning, stacklevel=2)
            self._rng = random.Random(seed)

    @classmethod
    def from_json(cls, text, categories=None, seed=None):
        """Rebuild the randomizer from the text of ``mechanism.to_json()``.

        Parameters
        ----------
        text : str or bytes
            The JSON specification.
        categories : mapping column -> list, optional
            The public categories of the server's domain, in its order.
        seed : int, optional
            **Tests and simulation only** (see the class description).

        Returns
        -------
        Randomizer
            ``Randomizer(json.loads(text), categories, seed)``.

        Raises
        ------
        ValueError
            If ``text`` is not valid JSON or not a specification this client supports.
        """
        try:
            spec = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the mechanism specification is not valid JSON: {exc}") from None
        return cls(spec, categories=categories, seed=seed)

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
        if self._categories is None:
            raise ValueError("encode needs the domain's categories: build the Randomizer with "
                             "categories=...")
        return self._categories.encode(record)

    def privatize(self, value):
        """One privatized report of ``value``, in plain JSON-ready Python types.

        Parameters
        ----------
        value : int, dict or list
            A flat cell index in ``[0, n_inputs)``, or with ``categories`` a record.

        Returns
        -------
        report : int, list of int, list of float or None
            Exactly one row of the server's ``randomize`` (see ``docs/client.md``).
        """
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
