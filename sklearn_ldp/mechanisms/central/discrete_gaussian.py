r"""The exact discrete Gaussian (Canonne, Kamath & Steinke, NeurIPS 2020) and its calibration.

``N_Z(0, sigma^2)``, ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers, drawn exactly from
uniform random bits compared with integers (no floating point decides a draw): by rejection
from an alias table whose acceptance bounds are exact integers (one 64-bit word per draw),
or by CKS20's rejection sampler on arrays for a huge ``sigma^2``; and the smallest integer
``sigma^2`` that makes an integer query of a given L2 sensitivity (epsilon, delta)-DP, through
zCDP and CKS20's conversion. The central matrix mechanism's ``noise="discrete"`` uses both
(see :mod:`.matrix` for why).

Pure numpy; no scikit-learn here.
"""

import decimal
import functools
import itertools
import math
import numbers
import random
from typing import NamedTuple

import numpy as np

from ..._validation import check_delta, check_epsilon
from .._base.exact import BracketedLaw, check_law_size, random_words

__all__ = [
    "audit_reach",
    "discrete_gaussian_law",
    "discrete_gaussian_sigma2",
    "discrete_gaussian_tail_bound",
    "smallest_sigma2_within",
    "sample_discrete_gaussian",
    "zcdp_delta",
    "zcdp_delta_within",
    "zcdp_log_delta_bound",
]

# The discrete sampler works in int64 while its integers stay below this (headroom for
# products); larger values go through exact Python integers.
_INT64_LIMIT = 2**62
# Largest sigma2 whose table the sampler builds (a table of at most _MAX_TABLE_BINS bins).
_MAX_TABLE_SIGMA2 = 2_000_000_000
# Fewer draws than this use CKS20's Algorithm 3 directly (no table to build).
_MIN_TABLE_SIZE = 4096


# ---------------------------------------------------------------------- discrete Gaussian
def zcdp_delta(rho, epsilon):
    """Smallest delta for which rho-zCDP implies (epsilon, delta)-DP (CKS20, Corollary 13).

    ``delta = inf_{a > 1} exp((a - 1)(a rho - eps)) / (a - 1) * (1 - 1/a)^a``; the exponent's
    derivative ``(2a - 1) rho - eps + ln(1 - 1/a)`` increases in ``a``, so its root is found
    by bisection. Any ``a`` gives a valid bound, so an imprecise root only errs on the safe
    side.

    Examples
    --------
    >>> round(zcdp_delta(0.05, 1.0), 6)
    0.000386
    """
    if rho <= 0:
        return 0.0
    low, high = 1.0 + 1e-12, (epsilon + 1.0) / (2.0 * rho) + 2.0
    for _ in range(200):
        alpha = 0.5 * (low + high)
        if (2 * alpha - 1) * rho - epsilon + math.log1p(-1.0 / alpha) < 0:
            low = alpha
        else:
            high = alpha
    alpha = high
    log_delta = ((alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha)
                 - math.log(alpha - 1))
    return min(math.exp(log_delta), 1.0)


def _zcdp_rho(epsilon, delta):
    """Largest rho whose zCDP guarantee implies (epsilon, delta)-DP (bisection on rho)."""
    low, high = 0.0, epsilon + 1.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if zcdp_delta(middle, epsilon) <= delta:
            low = middle
        else:
            high = middle
    return low


def discrete_gaussian_sigma2(sensitivity2, epsilon, delta):
    """Smallest integer ``sigma^2`` making ``q + N_Z(0, sigma^2)^r`` (epsilon, delta)-DP.

    ``q`` is integer-valued with squared L2 sensitivity ``sensitivity2`` (an integer).

    Examples
    --------
    >>> discrete_gaussian_sigma2(1, 1.0, 1e-5)
    17
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    rho = _zcdp_rho(epsilon, delta)
    sigma2 = max(1, math.ceil(sensitivity2 / (2.0 * rho)))
    while zcdp_delta(sensitivity2 / (2.0 * sigma2), epsilon) > delta:  # guard the rounding
        sigma2 += 1
    return sigma2


def discrete_gaussian_tail_bound(sigma2, dimension=1, probability=1e-12):
    """The least integer ``t`` with ``P(some |Y_i| > t) < probability`` for ``dimension``
    independent draws ``Y_i`` of ``N_Z(0, sigma^2)``.

    The discrete Gaussian is sub-Gaussian with variance proxy ``sigma^2`` (CKS20), so
    ``P(|Y| > t) <= 2 exp(-t^2 / (2 sigma^2))``; the union bound over the coordinates gives
    ``t = sigma sqrt(2 ln(2 dimension / probability))``, rounded up. A measurement whose noise
    exceeds it is refused as not produced by the sampler (it happens with probability below
    ``probability``).

    Examples
    --------
    >>> discrete_gaussian_tail_bound(100)
    76
    """
    if isinstance(sigma2, bool) or not isinstance(sigma2, numbers.Real) or not sigma2 > 0:
        raise ValueError(f"sigma2 must be a positive number, got {sigma2!r}.")
    if not 0 < probability < 1:
        raise ValueError(f"probability must lie in (0, 1), got {probability!r}.")
    dimension = max(1, int(dimension))
    return math.ceil(math.sqrt(2.0 * sigma2 * math.log(2.0 * dimension / probability)))


def _bernoulli_exp_small(num, den, rng):
    """``Bernoulli(exp(-num/den))`` for int64 arrays with ``0 <= num <= den`` (CKS20 Alg. 1).

    Draw ``A_k ~ Bernoulli(gamma / k)`` for ``k = 1, 2, ...`` until one is 0; the result is 1
    iff that ``k`` is odd. Each ``A_k`` is an exact integer comparison ``U < num`` with ``U``
    uniform on ``{0, ..., den k - 1}``.
    """
    k = np.ones(num.shape, dtype=np.int64)
    pending = np.arange(num.size)
    while pending.size:
        if k[pending[0]] >= 64:  # P <= 1/63!: finish exactly in Python integers, never overflow
            generator = random.Random(int(rng.integers(2**63)))
            for i in pending:
                while generator.randrange(int(den[i]) * int(k[i])) < int(num[i]):
                    k[i] += 1
            break
        high = den[pending] * k[pending]
        heads = rng.integers(0, high) < num[pending]
        k[pending[heads]] += 1
        pending = pending[heads]
    return (k % 2) == 1


def _bernoulli_exp(num, den, rng):
    """``Bernoulli(exp(-num/den))`` for int64 ``num >= 0``: ``floor`` coins of ``e^-1``, then
    one coin for the fractional part; the result is 1 iff every coin is 1."""
    whole, rest = np.divmod(num, den)
    result = _bernoulli_exp_small(rest, den, rng)
    left = whole.copy()
    alive = np.flatnonzero(result & (left > 0))
    while alive.size:
        ones = np.ones(alive.size, dtype=np.int64)
        heads = _bernoulli_exp_small(ones, ones, rng)
        result[alive[~heads]] = False
        left[alive] -= 1
        alive = alive[heads & (left[alive] > 0)]
    return result


def _discrete_laplace(t, size, rng):
    """``size`` draws of the discrete Laplace ``P(y) ~ exp(-|y| / t)`` (CKS20 Algorithm 2)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        m = pending.size
        U = rng.integers(0, t, size=m)
        keep = _bernoulli_exp(U, np.full(m, t, dtype=np.int64), rng)
        # V = number of heads of Bernoulli(1/e) before the first tail (geometric).
        V = np.zeros(m, dtype=np.int64)
        alive = np.flatnonzero(keep)
        while alive.size:
            ones = np.ones(alive.size, dtype=np.int64)
            heads = _bernoulli_exp_small(ones, ones, rng)
            V[alive[heads]] += 1
            alive = alive[heads]
        negative = rng.integers(0, 2, size=m) == 1
        magnitude = U + t * V
        accept = keep & ~(negative & (magnitude == 0))  # -0 would count zero twice
        out[pending[accept]] = np.where(negative[accept], -magnitude[accept], magnitude[accept])
        pending = pending[~accept]
    return out


def _bernoulli_exp_python(num, den, generator):
    """Exact ``Bernoulli(exp(-num/den))`` with Python integers (any size; the slow path)."""
    def small(numerator, denominator):  # Bernoulli(exp(-numerator/denominator)), ratio <= 1
        k = 1
        while generator.randrange(denominator * k) < numerator:
            k += 1
        return k % 2 == 1

    whole, rest = divmod(num, den)
    return all(small(1, 1) for _ in range(whole)) and small(rest, den)


def _sample_cks(sigma2, size, rng):
    """CKS20 Algorithm 3 on arrays: discrete Laplace proposals of scale ``t = isqrt(sigma2) +
    1``, accepted by ``Bernoulli(exp(-(|y| t - sigma2)^2 / (2 sigma2 t^2)))`` (integer draws
    only). The path for a ``sigma2`` too large for the table of :func:`_gaussian_table`."""
    t = math.isqrt(sigma2) + 1
    denominator = 2 * sigma2 * t * t  # gamma = (|y| t - sigma^2)^2 / (2 sigma^2 t^2)
    vectorized = denominator * 64 < _INT64_LIMIT  # den * k stays in int64 (k < 64 above)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    python_rng = None
    while pending.size:
        m = pending.size
        y = _discrete_laplace(t, m, rng)
        shift = np.abs(y) * t - sigma2
        fits = (np.abs(shift) < math.isqrt(_INT64_LIMIT)) & vectorized
        accept = np.zeros(m, dtype=bool)
        accept[fits] = _bernoulli_exp(shift[fits] ** 2, np.full(int(fits.sum()), denominator),
                                      rng)
        if not fits.all():
            if python_rng is None:
                python_rng = random.Random(int(rng.integers(2**63)))
            for i in np.flatnonzero(~fits):
                accept[i] = _bernoulli_exp_python(int(shift[i]) ** 2, denominator, python_rng)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


# ---------------------------------------------------------------------- the table sampler
# The discrete Gaussian by rejection from an exact dyadic proposal (an alias table), accepted
# by comparing uniform bits with exact integer bounds of the acceptance probability. A 64-bit
# word per draw: its top bits pick an alias bin, the next ones the alias coin, then
# _ACCEPT_BITS bits decide the acceptance of almost every draw, and the last bit the sign.
_ACCEPT_BITS = 14
# Bits of the proposal's probabilities (words of 64 bits: the rest is acceptance and sign).
_PROPOSAL_BITS = 63 - _ACCEPT_BITS
# Bits of the exact bounds of each acceptance probability held in the table (int64).
_BOUND_BITS = 62
# Fixed-point bits of the exact interval recurrence that computes exp(-m^2 / (2 sigma^2)).
_RECURRENCE_BITS = 128
# The proposal's total is 2^_PROPOSAL_BITS (1 - 2^-10): the rest proposes "reject".
_SCALE_BITS = 30
# Largest alias table (bins): enough for _MAX_TABLE_SIGMA2.
_MAX_TABLE_BINS = 2**18
# Draws per block of the table sampler.
_TABLE_BLOCK = 2**16


@functools.lru_cache(maxsize=4096)
def _exp_bracket(numerator, denominator, bits):
    """Integers ``(low, high)`` with ``low <= 2^bits exp(-numerator / denominator) <= high``.

    Decimal's ``exp`` is correctly rounded (as are its products and quotients), so the value
    at ``p`` digits is within a relative ``(x + 3) 10^(1 - p)`` of the true one (``x`` the
    exponent, its own rounding included); the bounds widen it by that, so they hold exactly.
    """
    x_size = len(str(numerator // denominator + 1))
    digits = int(bits * 0.302) + x_size + 25
    ctx = decimal.Context(prec=digits, Emin=-10**8, Emax=10**8)
    exponent = ctx.divide(decimal.Decimal(-numerator), decimal.Decimal(denominator))
    value = ctx.multiply(ctx.exp(exponent), decimal.Decimal(2**bits))
    central = int(value.to_integral_value(rounding=decimal.ROUND_FLOOR))
    margin = central * (numerator // denominator + 4) // 10 ** (digits - 1) + 2
    return max(central - margin, 0), central + margin


def _ceil_div(numerator, denominator):
    return -(-numerator // denominator)


class _GaussianTable(NamedTuple):
    """The exact proposal and acceptance bounds of :func:`_sample_table` for one ``sigma2``.

    Magnitudes ``m = 0..core`` have proposal weights ``weights[m]`` (over
    ``2^_PROPOSAL_BITS``); entry ``core + 1`` proposes the tail ``m > core``, the others
    "reject". A proposed ``m <= core`` is accepted with probability ``a(m) = c_m
    exp(-m^2 / (2 sigma2)) scale / (2^_SCALE_BITS weights[m])`` (``c_0 = 1``, else 2: the
    sign halves it), within ``[low[m], high[m]] / 2^_BOUND_BITS``; every ``a(m)`` is at
    least ``threshold / 2^_ACCEPT_BITS``.
    """

    sigma2: int
    t: int
    core: int
    scale: int
    weights: list
    tail_weight: int
    bin_bits: int
    coin_limits: np.ndarray
    alias: np.ndarray
    low: np.ndarray
    high: np.ndarray
    threshold: int


@functools.lru_cache(maxsize=8)
def _gaussian_table(sigma2, core=None, slack=0):
    """The :class:`_GaussianTable` of ``sigma2`` (cached), or None when it would be too large.

    ``core`` caps the table's magnitudes and ``slack`` widens the acceptance bounds (tests
    use them to run the tail and the refinement often; the law is the same)."""
    t = math.isqrt(sigma2) + 1
    P = _RECURRENCE_BITS
    # scale / 2^_SCALE_BITS ~ 2^_PROPOSAL_BITS (1 - 2^-10) / sum_y exp(-y^2 / (2 sigma2)).
    scale = int(2.0 ** (_PROPOSAL_BITS + _SCALE_BITS) * (1 - 2.0**-10)
                / math.sqrt(2 * math.pi * sigma2))
    g_bounds = []  # (low, high) of exp(-m^2 / (2 sigma2)) 2^P for m = 0, 1, ...
    squares = _square_exp_bounds(sigma2, P)
    limit, total = 1 << _ACCEPT_BITS, 1 << _PROPOSAL_BITS
    # Tail m = core + 1 + G, G = |discrete Laplace(t)| of law s(G) = (2 - [G = 0]) kappa
    # exp(-G / t), kappa = (1 - r) / (1 + r), r = exp(-1/t): a_T(G) is largest at G = 0.
    r_low, r_high = _exp_bracket(1, t, P)
    kappa_low = ((1 << P) - r_high << P) // ((1 << P) + r_high)
    while True:
        weights = []
        for m in itertools.count():
            if m == len(g_bounds):
                g_bounds.append(next(squares))
            weight = _ceil_div((1 if m == 0 else 2) * g_bounds[m][1] * scale,
                               1 << (P + _SCALE_BITS))
            if weight < limit or (core is not None and m > core):
                break
            if m + 3 > _MAX_TABLE_BINS:
                return None
            weights.append(weight)
        last = len(weights) - 1
        if t * (last + 1) < sigma2:  # the tail's proposal must dominate (see _tail_bounds)
            raise ValueError(f"the table of sigma2={sigma2} needs magnitudes up to at least "
                             f"{sigma2 // t}, got core={last}.")
        tail_weight = _ceil_div(2 * g_bounds[last + 1][1] * scale, kappa_low << _SCALE_BITS)
        reject = total - sum(weights) - tail_weight
        if reject >= 0:
            break
        # The tail's envelope is loose for a small table (tests): scale the proposal down.
        scale = scale * total * 1023 // ((sum(weights) + tail_weight) * 1024)
    core = last
    g_bounds = g_bounds[:core + 1]
    bin_bits = max(1, (core + 3 - 1).bit_length())
    probability, alias = _alias_table(weights + [tail_weight, reject], bin_bits)
    coin_limits = probability.astype(np.uint64) << np.uint64(_ACCEPT_BITS + 1)
    low, high = [], []
    for m, ((gl, gh), weight) in enumerate(zip(g_bounds, weights, strict=True)):
        c = 1 if m == 0 else 2
        den = weight << (P + _SCALE_BITS - _BOUND_BITS)
        low.append(max(c * gl * scale // den - slack, 0))
        high.append(min(_ceil_div(c * gh * scale, den) + slack, 1 << _BOUND_BITS))
    threshold = min(low) >> (_BOUND_BITS - _ACCEPT_BITS)
    return _GaussianTable(sigma2, t, core, scale, weights, tail_weight, bin_bits, coin_limits,
                          alias, np.array(low, dtype=np.int64), np.array(high, dtype=np.int64),
                          threshold)


def _square_exp_bounds(sigma2, P):
    """Yield ``(low, high)`` around ``exp(-m^2 / (2 sigma2)) 2^P`` for ``m = 0, 1, ...``:
    ``g(m + 1) = g(m) q^(2m + 1)``, ``q = exp(-1 / (2 sigma2))``, in integers rounded down for
    the low bound and up for the high one (so both hold exactly)."""
    q_low, q_high = _exp_bracket(1, 2 * sigma2, P)
    q2_low, q2_high = q_low * q_low >> P, _ceil_div(q_high * q_high, 1 << P)
    g_low = g_high = 1 << P
    f_low, f_high = q_low, q_high  # q^(2m + 1) 2^P
    while True:
        yield g_low, g_high
        g_low, g_high = g_low * f_low >> P, _ceil_div(g_high * f_high, 1 << P)
        f_low, f_high = f_low * q2_low >> P, _ceil_div(f_high * q2_high, 1 << P)


def _alias_table(weights, bin_bits):
    """Walker's alias table of integer ``weights`` summing to ``2^_PROPOSAL_BITS``, in
    integers: bin ``j`` keeps ``j`` when a coin below ``2^(_PROPOSAL_BITS - bin_bits)`` is
    under ``probability[j]``, else gives ``alias[j]``; so ``P(e) = weights[e] /
    2^_PROPOSAL_BITS`` exactly."""
    bins = 1 << bin_bits
    capacity = 1 << (_PROPOSAL_BITS - bin_bits)
    left = list(weights) + [0] * (bins - len(weights))
    probability, alias = [capacity] * bins, list(range(bins))
    small = [e for e in range(bins) if left[e] < capacity]
    large = [e for e in range(bins) if left[e] >= capacity]
    while small and large:
        s, g = small.pop(), large.pop()
        probability[s], alias[s] = left[s], g
        left[g] -= capacity - left[s]
        (small if left[g] < capacity else large).append(g)
    for e in small + large:  # exact integers: what remains is exactly full
        if left[e] != capacity:
            raise RuntimeError("the alias table does not balance.")
    return np.array(probability, dtype=np.int64), np.array(alias, dtype=np.int64)


def _uniform_below_value(x, bits, bounds, generator):
    """Whether ``V < a`` for ``V = (x + V') / 2^bits``, ``V'`` uniform on ``[0, 1)``:
    ``bounds(k)`` gives integers around ``a 2^k``; each undecided round reads 64 more bits of
    ``V`` and asks for bounds 64 bits finer (exact: a comparison of uniform bits)."""
    while True:
        low, high = bounds(bits)
        if high > 1 << bits:
            raise RuntimeError("an acceptance probability exceeds 1.")
        if x + 1 <= low:
            return True
        if x >= high:
            return False
        x, bits = (x << 64) | generator.getrandbits(64), bits + 64


def _core_bounds(table, m):
    """``bounds(bits)`` of the acceptance probability ``a(m)`` of a magnitude in the table."""
    c = 1 if m == 0 else 2
    weight = table.weights[m]

    def bounds(bits):
        extra = bits + 64 + 2 * m * m // table.sigma2  # exp(-x) >= 2^(-2x)
        gl, gh = _exp_bracket(m * m, 2 * table.sigma2, extra)
        den = weight << (extra + _SCALE_BITS - bits)
        return c * gl * table.scale // den, _ceil_div(c * gh * table.scale, den)

    return bounds


def _tail_bounds(table, gap):
    """``bounds(bits)`` of the tail's acceptance ``a_T(G) = 2 exp(-(core + 1 + G)^2 /
    (2 sigma2) + G / t) scale / (2^_SCALE_BITS tail_weight s(G))`` (see _gaussian_table)."""
    m, sigma2, t = table.core + 1 + gap, table.sigma2, table.t
    numerator = m * m * t - 2 * sigma2 * gap  # >= 0 because t (core + 1) >= sigma2
    denominator = 2 * sigma2 * t
    halves = 1 if gap == 0 else 2  # s(G) has the factor 2 - [G = 0]

    def bounds(bits):
        extra = bits + 64 + 2 * numerator // denominator
        el, eh = _exp_bracket(numerator, denominator, extra)
        rl, rh = _exp_bracket(1, t, extra)
        one = 1 << extra
        # 1 / kappa = (1 + r) / (1 - r), increasing in r.
        base = (1 << _SCALE_BITS) * table.tail_weight * halves
        low = (2 * el * table.scale * (one + rl) << bits) // (base * one * (one - rl))
        high = _ceil_div(2 * eh * table.scale * (one + rh) << bits, base * one * (one - rh))
        return low, high

    return bounds


def _sample_table(table, size, rng):
    """``size`` exact draws of the discrete Gaussian of ``table.sigma2`` (see
    :func:`_gaussian_table`): one 64-bit word per draw almost always, in blocks small enough
    for the temporaries to stay in the cache."""
    out = np.empty(size, dtype=np.int64)
    for start in range(0, size, _TABLE_BLOCK):
        _sample_table_block(table, out[start:start + _TABLE_BLOCK], rng)
    return out


def _sample_table_block(table, out, rng):
    """Fill ``out`` with draws (see :func:`_sample_table`)."""
    generator = None
    # Fields of a word, compared in place: the coin against table.coin_limits (the alias
    # probabilities shifted to it) and the acceptance bits against threshold << 1.
    coin_field = np.uint64(((1 << (_PROPOSAL_BITS - table.bin_bits)) - 1) << (_ACCEPT_BITS + 1))
    accept_bits = np.uint64((1 << _ACCEPT_BITS) - 1)
    accept_limit = np.uint64(table.threshold << 1)
    one = np.uint64(1)
    pending = None  # every lane of out, in the first round
    while pending is None or pending.size:
        words = random_words(rng, out.size if pending is None else pending.size)
        bins = (words >> np.uint64(64 - table.bin_bits)).view(np.int64)
        y = np.where((words & coin_field) < table.coin_limits[bins], bins, table.alias[bins])
        undone = (words & (accept_bits << one)) >= accept_limit
        undone |= y > table.core
        # The sign: y -> (y ^ s) - s with s = 0 or -1 (two's complement negation).
        sign = (words & one).view(np.int64)
        np.negative(sign, out=sign)
        y ^= sign
        y -= sign
        rest = np.flatnonzero(undone)
        if pending is None:
            out[:] = y
            lanes = rest
        else:
            out[pending[~undone]] = y[~undone]
            lanes = pending[rest]
        magnitude = np.abs(y[rest])
        redo = [lanes[magnitude > table.core + 1]]  # "reject" proposed
        undecided = np.flatnonzero(magnitude <= table.core + 1)
        if undecided.size:
            yu, mu = y[rest[undecided]], magnitude[undecided]
            core = mu <= table.core
            # The next bits of the same uniform: V = (uniform + V') / 2^_ACCEPT_BITS.
            shift = _BOUND_BITS - _ACCEPT_BITS
            uniform = (words[rest[undecided]] >> one) & accept_bits
            x = (uniform.astype(np.int64) << shift) | (
                random_words(rng, undecided.size) >> np.uint64(64 - shift)).astype(np.int64)
            index = np.where(core, mu, 0)
            yes = core & (x < table.low[index])
            no = core & (x >= table.high[index])
            out[lanes[undecided[yes]]] = yu[yes]
            redo.append(lanes[undecided[no]])
            for k in np.flatnonzero(~yes & ~no):
                if generator is None:
                    generator = random.Random(int(rng.integers(2**63)))
                lane = lanes[undecided[k]]
                if core[k]:
                    ok = _uniform_below_value(int(x[k]), _BOUND_BITS,
                                              _core_bounds(table, int(mu[k])), generator)
                    value = int(yu[k])
                else:
                    gap = abs(int(_discrete_laplace(table.t, 1, rng)[0]))
                    ok = _uniform_below_value(generator.getrandbits(64), 64,
                                              _tail_bounds(table, gap), generator)
                    value = (table.core + 1 + gap) * (1 if yu[k] >= 0 else -1)
                if ok:
                    out[lane] = value
                else:
                    redo.append(np.array([lane]))
        pending = np.concatenate(redo).astype(np.int64)


def sample_discrete_gaussian(sigma2, size, rng):
    """Exact draws of the discrete Gaussian ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers.

    Rejection sampling from an exact dyadic proposal: an alias table over the magnitudes
    ``|y| <= core`` (about ``5 sigma``, where the proposal weights stay above ``2^14``) and
    one entry for the tail, which draws ``|y| - core - 1`` from the discrete Laplace of
    Canonne, Kamath & Steinke (2020, Algorithm 2). A proposal is accepted with probability
    ``P(y) / (M q(y))`` by comparing uniform bits with exact integer bounds of it (computed
    once per ``sigma2`` by interval arithmetic on integers; a comparison the bounds cannot
    decide reads more bits against finer bounds). Every decision is an integer comparison of
    uniform random bits, so the law is exactly the discrete Gaussian, as with CKS20's
    Algorithm 3; the usual draw costs one 64-bit word. A ``sigma2`` above about ``2.3e9``
    or fewer than 4096 draws use CKS20's Algorithm 3 on arrays (same law, slower).

    Parameters
    ----------
    sigma2 : int
        The variance parameter ``sigma^2`` (a positive integer, so every quantity is rational).
    size : int
    rng : numpy Generator

    Returns
    -------
    draws : ndarray of int64 of shape (size,)

    References
    ----------
    .. [1] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
       privacy", NeurIPS 2020.
    .. [2] A. J. Walker, "An efficient method for generating discrete random variables with
       general distributions", ACM TOMS 3(3), 1977 (the alias table).

    Examples
    --------
    >>> draws = sample_discrete_gaussian(100, 5, np.random.default_rng(0))
    >>> draws.dtype, draws.shape
    (dtype('int64'), (5,))
    """
    if isinstance(sigma2, bool) or not isinstance(sigma2, numbers.Integral) or sigma2 < 1:
        raise ValueError(f"sigma2 must be an integer >= 1, got {sigma2!r}.")
    sigma2 = int(sigma2)
    # The table costs about as much to build as a few thousand draws (cached per sigma2).
    table = (_gaussian_table(sigma2) if sigma2 <= _MAX_TABLE_SIGMA2 and size >= _MIN_TABLE_SIZE
             else None)
    if table is None:
        return _sample_cks(sigma2, size, rng)
    return _sample_table(table, size, rng)


# ---------------------------------------------------------------------- exact (eps, delta) check
# Digits of the Decimal arithmetic of the exact zCDP check; the margin absorbs its rounding
# (a few units in the 60th digit of numbers below 10^12) with room to spare.
_ZCDP_CONTEXT = decimal.Context(prec=60)
_ZCDP_MARGIN = decimal.Decimal("1e-30")
_ZCDP_BISECTION_STEPS = 80


def zcdp_log_delta_bound(sensitivity2, sigma2, epsilon):
    """An upper bound on ``ln delta`` of (eps, delta)-DP for ``rho = sensitivity2 / (2 sigma2)``
    zCDP, computed in 60-digit Decimal arithmetic (deterministic on every platform).

    CKS20 (Corollary 13): for every ``a > 1``, ``delta <= exp((a - 1)(a rho - eps)) / (a - 1)
    (1 - 1/a)^a``. Any ``a`` gives a valid bound, so ``a`` is a fixed Decimal found by a
    Decimal bisection on the exponent's derivative (no float decides it); the bound is then
    evaluated at that ``a`` and raised by a margin far above the rounding of 60 digits.

    Parameters
    ----------
    sensitivity2 : int
        Squared L2 sensitivity of the integer query (``>= 1``).
    sigma2 : int
        ``sigma^2`` of the discrete Gaussian noise per coordinate (``>= 1``).
    epsilon : float
        Target epsilon (taken exactly).

    Returns
    -------
    log_delta : decimal.Decimal
        ``ln`` of a delta that the mechanism provably meets.

    Examples
    --------
    >>> bound = zcdp_log_delta_bound(1, 10, 1.0)
    >>> round(math.exp(float(bound)), 6) >= zcdp_delta(0.05, 1.0) - 1e-12
    True
    """
    ctx = _ZCDP_CONTEXT
    D = decimal.Decimal
    rho = ctx.divide(D(int(sensitivity2)), D(2 * int(sigma2)))
    eps = D(float(epsilon))
    one = D(1)

    def slope(a):  # derivative of the exponent: (2a - 1) rho - eps + ln(1 - 1/a)
        return ctx.add(ctx.subtract(ctx.multiply(ctx.subtract(2 * a, one), rho), eps),
                       ctx.ln(ctx.subtract(one, ctx.divide(one, a))))

    low = one + D("1e-12")
    high = ctx.add(ctx.divide(ctx.add(eps, one), 2 * rho), D(2))
    for _ in range(_ZCDP_BISECTION_STEPS):
        middle = ctx.divide(ctx.add(low, high), D(2))
        if slope(middle) < 0:
            low = middle
        else:
            high = middle
    a = high
    terms = (ctx.multiply(ctx.subtract(a, one), ctx.subtract(ctx.multiply(a, rho), eps)),
             ctx.multiply(a, ctx.ln(ctx.subtract(one, ctx.divide(one, a)))),
             -ctx.ln(ctx.subtract(a, one)))
    total = ctx.add(ctx.add(terms[0], terms[1]), terms[2])
    scale = ctx.add(one, sum((abs(t) for t in terms), D(0)))
    return ctx.add(total, ctx.multiply(_ZCDP_MARGIN, scale))


def zcdp_delta_within(sensitivity2, sigma2, epsilon, delta):
    """Whether discrete Gaussian noise ``sigma2`` on an integer query of squared sensitivity
    ``sensitivity2`` is (epsilon, delta)-DP, decided rigorously (safe-side rounding).

    Examples
    --------
    >>> zcdp_delta_within(1, 17, 1.0, 1e-5), zcdp_delta_within(1, 16, 1.0, 1e-5)
    (True, False)
    """
    ctx = _ZCDP_CONTEXT
    log_delta = ctx.subtract(ctx.ln(decimal.Decimal(float(delta))), _ZCDP_MARGIN)
    return zcdp_log_delta_bound(sensitivity2, sigma2, epsilon) <= log_delta


def smallest_sigma2_within(sensitivity2, epsilon, delta):
    """The smallest integer ``sigma2`` that :func:`zcdp_delta_within` accepts.

    The float calibration :func:`discrete_gaussian_sigma2` gives the start; the exact check
    then moves it (the check is monotone in ``sigma2``: a larger ``sigma2`` lowers ``rho``).

    Examples
    --------
    >>> smallest_sigma2_within(1, 1.0, 1e-5)
    17
    """
    sigma2 = discrete_gaussian_sigma2(sensitivity2, epsilon, delta)
    while not zcdp_delta_within(sensitivity2, sigma2, epsilon, delta):
        sigma2 += 1
    while sigma2 > 1 and zcdp_delta_within(sensitivity2, sigma2 - 1, epsilon, delta):
        sigma2 -= 1
    return sigma2


# ---------------------------------------------------------------------- exact law (audit)
# The audited support reaches this many bits below delta: the mass left outside it adds at
# most delta 2^-_AUDIT_TAIL_BITS to the hockey-stick bound.
_AUDIT_TAIL_BITS = 40


def audit_reach(sigma2, delta):
    """The distance ``R`` from a centre that an audited law lists: ``exp(-R^2 / (2 sigma2))
    <= 2^-40 min(delta, 1)``.

    Examples
    --------
    >>> audit_reach(100, 1e-6)
    93
    """
    target = math.log(2.0) * _AUDIT_TAIL_BITS - math.log(min(float(delta), 1.0))
    return math.ceil(math.sqrt(2.0 * int(sigma2) * target)) + 1


def _tail_sum_high(sigma2, start, bits):
    """An integer ``>= 2^bits sum_{m >= start} exp(-m^2 / (2 sigma2))`` (``start >= 1``).

    ``m^2 >= start^2 + 2 start (m - start)``, so the sum is at most the geometric series
    ``exp(-start^2 / (2 sigma2)) / (1 - exp(-start / sigma2))``.
    """
    head = _exp_bracket(start * start, 2 * sigma2, bits)[1]
    ratio = _exp_bracket(start, sigma2, bits)[1]
    if ratio >= 1 << bits:
        raise ValueError(f"the audited support of sigma2={sigma2} is too narrow ({start}).")
    return _ceil_div(head << bits, (1 << bits) - ratio)


@functools.lru_cache(maxsize=4)
def _bracket_arrays(sigma2, size, bits):
    """``exp(-m^2 / (2 sigma2)) 2^bits`` for ``m = 0..size``, as object arrays (low, high),
    and bounds of the normalizer ``sum_k exp(-k^2 / (2 sigma2)) 2^bits`` over all integers
    (cached: an audit builds the law of every input on one support)."""
    pairs = list(itertools.islice(_square_exp_bounds(sigma2, bits), size + 1))
    low = np.empty(size + 1, dtype=object)
    high = np.empty(size + 1, dtype=object)
    low[:], high[:] = [p[0] for p in pairs], [p[1] for p in pairs]
    # 1 + 2 sum_{m >= 1}: listed up to size, a geometric bound beyond.
    z_low = 2 * sum(low[1:]) + low[0]
    z_high = 2 * (sum(high[1:]) + _tail_sum_high(sigma2, size + 1, bits)) + high[0]
    return low, high, z_low, z_high


def discrete_gaussian_law(sigma2, centres, weights, support, bits=_RECURRENCE_BITS):
    """The bracketed exact law of ``c + N_Z(0, sigma2)``, ``c = centres[j]`` with probability
    ``weights[j] / sum(weights)``, over the integers ``support[0] .. support[1]``.

    Every weight ``exp(-(k - c)^2 / (2 sigma2))`` is bracketed by integers at ``bits`` bits
    (a recurrence rounded outwards from a correctly rounded ``exp``); the normalizer
    ``sum_k exp(-k^2 / (2 sigma2))`` by the listed part plus a geometric bound of the rest;
    and the mass outside the support by the same geometric bound, on both sides. So the law
    sampled by :func:`sample_discrete_gaussian` (plus an exact rounding bit, say) lies within
    the brackets: what :func:`~sklearn_ldp.mechanisms._base.exact.hockey_stick_bound` needs.

    Parameters
    ----------
    sigma2 : int
        The discrete Gaussian's ``sigma^2``.
    centres : sequence of int
        The centres the mixture can pick (each inside the support).
    weights : sequence of int
        Their non-negative integer weights.
    support : (int, int)
        The first and last integer listed (the same for every input compared).
    bits : int, default=128
        Bits of the brackets. Their rounding is absolute (about ``m 2^-bits`` of the weight
        at the centre, at distance ``m``), so far in the tail, where the weights are tiny,
        fewer bits would widen the brackets relative to the weights, and the bound with
        them: 128 bits keep it within ``1e-12`` of the divergence (relative).

    Returns
    -------
    BracketedLaw
        Outputs ``support[0] .. support[1]`` (int64).

    Raises
    ------
    ValueError
        If a centre lies outside the support or the support lists more than
        ``MAX_LAW_OUTPUTS`` integers.

    Examples
    --------
    >>> law = discrete_gaussian_law(4, [0], [1], (-30, 30))
    >>> mass = sum(int(w) for w in law.low) / law.total_high
    >>> 1 - 1e-12 < mass <= 1
    True
    """
    sigma2 = int(sigma2)
    first, last = int(support[0]), int(support[1])
    centres = [int(c) for c in centres]
    weights = [int(w) for w in weights]
    if not all(first <= c <= last for c in centres):
        raise ValueError(f"the centres {centres} must lie inside the support {support}.")
    check_law_size(last - first + 1, "discrete Gaussian")
    width = last - first
    g_low, g_high, z_low, z_high = _bracket_arrays(sigma2, width, bits)
    outputs = np.arange(first, last + 1, dtype=np.int64)
    low = np.zeros(outputs.size, dtype=object)
    high = np.zeros(outputs.size, dtype=object)
    for centre, weight in zip(centres, weights, strict=True):
        if weight:
            distance = np.abs(outputs - centre)
            low += weight * g_low[distance]
            high += weight * g_high[distance]
    total = sum(weights)
    # Every centre is at least `near` from an end of the support: each side's unlisted mass
    # is at most the tail from near + 1.
    near = min(min(c - first, last - c) for c in centres)
    tail = 2 * total * _tail_sum_high(sigma2, near + 1, bits)
    return BracketedLaw(outputs, low, high, total * z_low, total * z_high, tail)
