"""The frequency oracles: randomized response, unary encoding, subset selection, local
hashing, Hadamard response and HRR.
"""

import decimal
import math

from ._exact import (
    _GOLDEN,
    _MASK32,
    _MASK64,
    _ONE,
    DECIMAL_CONTEXT,
    _decimal_exp,
    _dyadic_numerator,
    _mix64,
    _packed,
    _parity,
    _ratio_at_most,
    _ratio_draw,
    _ratio_weights,
    _uniform_words,
)
from ._spec import _check_int, _common

# Local hashing: largest number of buckets.
MAX_BUCKETS = 2**20


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
    return _dyadic_unary(p_nominal, q_nominal, kind, epsilon)


def _dyadic_unary(p_nominal, q_nominal, kind, epsilon):
    """The server's ``UnaryEncoding`` rounding of nominal ``(p, q)`` (Decimals): ``p`` down,
    ``q`` up to multiples of 2^-52, ``q`` raised until the ratio is within ``e^eps``."""
    e = _decimal_exp(epsilon)
    p_num = _dyadic_numerator(p_nominal, "down")
    q_num = _dyadic_numerator(q_nominal, "up")
    while q_num < p_num and not _ratio_at_most(p_num * (_ONE - q_num), q_num * (_ONE - p_num), e):
        q_num += 1
    if p_num <= q_num:
        raise ValueError(f"epsilon={epsilon!r} is too small for {kind!r}: at precision 2^-52 "
                         "the probabilities p and q coincide.")
    return p_num, q_num


def _make_unary(kind, n, epsilon):
    return _unary_privatizer(n, *_unary_numerators(kind, epsilon))


def _unary_privatizer(n, p_num, q_num):
    """Unary encoding's client: bit ``cell`` is 1 with ``p_num / 2^52``, the others with
    ``q_num / 2^52``, packed."""

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
    server checks it (``sklearn_ldp.mechanisms.oracles.hadamard.check_layout``): all three or none
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


# The frequency oracles by kind name: the registry's first entries, and the kinds a "columns"
# record may use for a categorical column.
ORACLE_KINDS = {
    "randomized_response": _randomized_response,
    "rappor": _rappor,
    "oue": _oue,
    "olh": _olh,
    "blh": _blh,
    "hadamard": _hadamard,
    "hrr": _hrr,
    "subset_selection": _subset_selection,
}
