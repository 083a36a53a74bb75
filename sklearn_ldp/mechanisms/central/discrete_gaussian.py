r"""The exact discrete Gaussian (Canonne, Kamath & Steinke, NeurIPS 2020) and its calibration.

``N_Z(0, sigma^2)``, ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers, drawn by the exact
rejection sampler of CKS20 from integer uniform draws only (no floating point), vectorized
in int64 with an exact Python-integer path for large values; and the smallest integer
``sigma^2`` that makes an integer query of a given L2 sensitivity (epsilon, delta)-DP, through
zCDP and CKS20's conversion. The central matrix mechanism's ``noise="discrete"`` uses both
(see :mod:`.matrix` for why).

Pure numpy; no scikit-learn here.
"""

import decimal
import math
import numbers
import random

import numpy as np

from ..._validation import check_delta, check_epsilon

__all__ = [
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


def sample_discrete_gaussian(sigma2, size, rng):
    """Exact draws of the discrete Gaussian ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers.

    Canonne, Kamath & Steinke (2020), Algorithm 3: discrete Laplace proposals with
    ``t = floor(sigma) + 1``, accepted with probability ``exp(-(|y| - sigma^2/t)^2 /
    (2 sigma^2))``. Only integer uniform draws are used, so the output distribution is exact
    (no floating point). Vectorized in int64; proposals whose integers would not fit (``|y|``
    beyond about 100 sigma at the default scale, or any proposal when ``sigma`` exceeds about
    13000) take an exact, slower Python-integer path.

    Parameters
    ----------
    sigma2 : int
        The variance parameter ``sigma^2`` (a positive integer, so every quantity is rational).
    size : int
    rng : numpy Generator

    Examples
    --------
    >>> draws = sample_discrete_gaussian(100, 5, np.random.default_rng(0))
    >>> draws.dtype, draws.shape
    (dtype('int64'), (5,))
    """
    if isinstance(sigma2, bool) or not isinstance(sigma2, numbers.Integral) or sigma2 < 1:
        raise ValueError(f"sigma2 must be an integer >= 1, got {sigma2!r}.")
    sigma2 = int(sigma2)
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
