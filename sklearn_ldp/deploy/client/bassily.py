"""Bassily's Gaussian kinds (``gaussian``, ``gaussian_pure``) on the device.

``sigma`` is recomputed with stdlib ``erf``/``erfc`` instead of scipy's ``ndtr``; the noise is
the exact discrete Gaussian on the server's public lattice, drawn from integer random bits.

The calibration (``_analytic_sigma``, ``_gaussian_delta``) and the rejection sampler's
``kappa`` and ``sigma`` repeat ``sklearn_ldp.mechanisms.bassily.gaussian`` and ``.rejection``
on purpose: the client uses the standard library only, so that a device can copy this folder
alone; the tests check that both sides compute the same ``sigma``.
"""

import decimal
import math
from collections.abc import Mapping

from ._exact import _ONE, PRECISION, _keep_numerator, _uniform_words, _within
from ._spec import _check_matrix, _common

# Largest epsilon of the rejection-sampling Gaussian randomizer (acceptance e^(eps/2)/2 <= 1).
MAX_REJECTION_EPSILON = 2.0 * math.log(2.0)
_SQRT_2PI = math.sqrt(2.0 * math.pi)
_SQRT1_2 = math.sqrt(0.5)


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
    """Balle-Wang's exact delta of the continuous Gaussian mechanism (as the server's): only
    a reference now, the sampled law is checked by :func:`_zcdp_within`."""
    ratio = sensitivity / sigma
    first = _ndtr(ratio / 2 - epsilon / ratio)
    second = math.exp(epsilon + _log_ndtr(-ratio / 2 - epsilon / ratio))
    return max(first - second, 0.0)


# Both Gaussian kinds draw on the public lattice 2^-exponent Z^d (spec version 2,
# mechanisms/gaussian.py): the noise is the exact discrete Gaussian N_Z(0, sigma2) (CKS20),
# sigma2 >= 2^24 lattice steps squared; lattice coordinates stay below 2^50.
_MIN_LATTICE_SIGMA2 = 2**24
_LATTICE_SIGMA_BITS = 12
_MAX_LATTICE_EXPONENT = 1100
# The exact zCDP check (the server's discrete_gaussian.zcdp_log_delta_bound): 60 digits, a
# margin far above their rounding, a Decimal bisection for the order a.
_ZCDP_CONTEXT = decimal.Context(prec=60)
_ZCDP_MARGIN = decimal.Decimal("1e-30")


def _lattice_field(spec, kind, keys):
    """The spec's ``lattice``: an object of exactly ``keys``, each an integer."""
    lattice = spec.get("lattice")
    if not isinstance(lattice, Mapping) or set(lattice) != set(keys):
        raise ValueError(f"the lattice of the {kind!r} specification must be an object with the "
                         f"integers {sorted(keys)}, got {lattice!r}.")
    for key in keys:
        value = lattice[key]
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"lattice[{key!r}] of the {kind!r} specification must be an "
                             f"integer, got {value!r}.")
    if abs(lattice["exponent"]) > _MAX_LATTICE_EXPONENT:
        raise ValueError(f"lattice['exponent'] of the {kind!r} specification is "
                         f"{lattice['exponent']!r}, outside [-{_MAX_LATTICE_EXPONENT}, "
                         f"{_MAX_LATTICE_EXPONENT}].")
    if lattice["sigma2"] < _MIN_LATTICE_SIGMA2:
        raise ValueError(f"lattice['sigma2'] of the {kind!r} specification is "
                         f"{lattice['sigma2']!r}, below 2^24 (the lattice must be finer than "
                         "the noise).")
    return dict(lattice)


def _lattice_coordinates(A, exponent, kind):
    """The server's ``gaussian.lattice_coordinates``: per entry, ``floor(a 2^m)`` and the
    numerator ``rint(frac 2^52)`` of rounding up (exact float operations, half-even rint)."""
    floors, numerators = [], []
    for row in A:
        floor_row, numerator_row = [], []
        for value in row:
            try:
                x = math.ldexp(value, exponent)
            except OverflowError:
                x = math.inf
            if not math.isfinite(x) or abs(x) >= 2.0**50 or math.ldexp(x, -exponent) != value:
                raise ValueError(f"lattice['exponent'] = {exponent} of the {kind!r} "
                                 "specification does not fit the workload: its entries times "
                                 f"2^{exponent} must be exact doubles below 2^50.")
            whole = math.floor(x)
            floor_row.append(whole)
            numerator_row.append(round(math.ldexp(x - whole, PRECISION)))
        floors.append(floor_row)
        numerators.append(numerator_row)
    return floors, numerators


def _centre_sensitivity2(floors, numerators):
    """The server's ``gaussian.centre_sensitivity2``: ``min((2R)^2, sum_i range_i^2)`` of the
    rounded centres, on Python integers."""
    radius2 = [0] * len(floors[0])
    box = 0
    for floor_row, numerator_row in zip(floors, numerators, strict=True):
        lowest = [f + (q == _ONE) for f, q in zip(floor_row, numerator_row, strict=True)]
        highest = [f + (q > 0) for f, q in zip(floor_row, numerator_row, strict=True)]
        for u, (lo, hi) in enumerate(zip(lowest, highest, strict=True)):
            radius2[u] += max(lo * lo, hi * hi)
        box += (max(highest) - min(lowest)) ** 2
    return min(4 * max(radius2), box)


def _zcdp_log_delta_bound(sensitivity2, sigma2, epsilon):
    """The server's ``discrete_gaussian.zcdp_log_delta_bound``: an upper bound on ``ln
    delta`` of ``rho = sensitivity2 / (2 sigma2)`` zCDP (CKS20 Corollary 13, one Decimal
    order ``a`` by bisection, 60 digits, raised by a margin)."""
    ctx, D, one = _ZCDP_CONTEXT, decimal.Decimal, decimal.Decimal(1)
    rho = ctx.divide(D(sensitivity2), D(2 * sigma2))
    eps = D(float(epsilon))

    def slope(a):
        return ctx.add(ctx.subtract(ctx.multiply(ctx.subtract(2 * a, one), rho), eps),
                       ctx.ln(ctx.subtract(one, ctx.divide(one, a))))

    low = one + D("1e-12")
    high = ctx.add(ctx.divide(ctx.add(eps, one), 2 * rho), D(2))
    for _ in range(80):
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


def _zcdp_within(sensitivity2, sigma2, epsilon, delta):
    """The server's ``zcdp_delta_within``: discrete Gaussian ``sigma2`` on centres of squared
    sensitivity ``sensitivity2`` is (epsilon, delta)-DP, decided with safe-side rounding."""
    log_delta = _ZCDP_CONTEXT.subtract(_ZCDP_CONTEXT.ln(decimal.Decimal(float(delta))),
                                       _ZCDP_MARGIN)
    return _zcdp_log_delta_bound(sensitivity2, sigma2, epsilon) <= log_delta


def _bernoulli_exp(numerator, denominator, rng):
    """Exact ``Bernoulli(exp(-numerator / denominator))`` from ``randrange`` (CKS20 Alg. 1):
    ``floor`` coins of ``e^-1``, then one for the fraction, each by the alternating series."""
    def fraction(num, den):
        k = 1
        while rng.randrange(den * k) < num:
            k += 1
        return k % 2 == 1

    whole, rest = divmod(numerator, denominator)
    return all(fraction(1, 1) for _ in range(whole)) and fraction(rest, denominator)


def _discrete_gaussian(sigma2, rng):
    """One exact draw of ``N_Z(0, sigma2)`` (CKS20 Algorithms 2-3, as the server's
    ``sample_discrete_gaussian``): discrete Laplace proposals of scale ``t = isqrt(sigma2) +
    1``, accepted with ``exp(-(|y| t - sigma2)^2 / (2 sigma2 t^2))``; integers only."""
    t = math.isqrt(sigma2) + 1
    while True:
        u = rng.randrange(t)
        if not _bernoulli_exp(u, t, rng):
            continue
        v = 0
        while _bernoulli_exp(1, 1, rng):
            v += 1
        negative = rng.randrange(2) == 1
        magnitude = u + t * v
        if negative and magnitude == 0:  # -0 would count zero twice
            continue
        y = -magnitude if negative else magnitude
        shift = magnitude * t - sigma2
        if _bernoulli_exp(shift * shift, 2 * sigma2 * t * t, rng):
            return y


def _gaussian(spec):
    n, epsilon, params = _common(spec, ("workload", "delta"))
    A, _ = _workload(params, n, "gaussian")
    delta = params.get("delta")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0.0 < delta < 1.0:
        raise ValueError(f"params['delta'] of the 'gaussian' specification must lie in (0, 1), "
                         f"got {delta!r}.")
    lattice = _lattice_field(spec, "gaussian", ("exponent", "sensitivity2", "sigma2"))
    exponent, sigma2 = lattice["exponent"], lattice["sigma2"]
    floors, numerators = _lattice_coordinates(A, exponent, "gaussian")
    sensitivity2 = _centre_sensitivity2(floors, numerators)
    if lattice["sensitivity2"] != sensitivity2:
        raise ValueError(f"lattice['sensitivity2'] of the 'gaussian' specification is "
                         f"{lattice['sensitivity2']!r}, but the workload on the lattice "
                         f"2^-{exponent} gives {sensitivity2}: an edited lattice is refused.")
    # The server's rule, re-checked exactly: sigma2 is the smallest that passes, and the next
    # coarser lattice would need less than 2^24.
    if not _zcdp_within(sensitivity2, sigma2, epsilon, delta):
        raise ValueError(f"lattice['sigma2'] of the 'gaussian' specification is {sigma2!r}: the "
                         f"discrete Gaussian with it is not ({epsilon}, {delta})-LDP for the "
                         f"squared sensitivity {sensitivity2} (exact check).")
    if _zcdp_within(sensitivity2, sigma2 - 1, epsilon, delta):
        raise ValueError(f"lattice['sigma2'] of the 'gaussian' specification is {sigma2!r}, not "
                         "the smallest that passes the exact check: an edited lattice is "
                         "refused.")
    coarser = _centre_sensitivity2(*_lattice_coordinates(A, exponent - 1, "gaussian"))
    if not _zcdp_within(coarser, _MIN_LATTICE_SIGMA2 - 1, epsilon, delta):
        raise ValueError(f"lattice['exponent'] of the 'gaussian' specification is {exponent!r}, "
                         "but the lattice one step coarser already needs sigma2 >= 2^24: an "
                         "edited lattice is refused.")
    d = len(A)

    def privatize(cell, rng):
        words = _uniform_words(rng, d)
        return [math.ldexp(floors[i][cell] + (words[i] < numerators[i][cell])
                           + _discrete_gaussian(sigma2, rng), -exponent) for i in range(d)]

    privatize.sigma = math.sqrt(sigma2) * math.ldexp(1.0, -exponent)
    privatize.lattice = {"exponent": exponent, "sensitivity2": sensitivity2, "sigma2": sigma2}
    privatize.numerators = numerators  # exposed for the tests (the server's integers)
    return n, privatize


_ENVELOPES = {}


def _keep_envelope(epsilon):
    """The server's ``gaussian_rejection.keep_envelope``: ``(2^52 - hi, hi)`` with ``hi`` the
    randomized-response numerator, and the loss window ``(ln(2 lo/2^52), ln(2 hi/2^52))``."""
    if epsilon not in _ENVELOPES:
        high = _keep_numerator(epsilon, 2)
        low = _ONE - high
        _ENVELOPES[epsilon] = (low, high, math.log(2.0 * low / _ONE),
                               math.log(2.0 * high / _ONE))
    return _ENVELOPES[epsilon]


def _rejection_kappa(norm, sigma, epsilon):
    """``kappa`` of the rejection sampler for a column of norm ``norm > 0`` (server formula)."""
    s = norm / sigma
    _, _, loss_low, loss_high = _keep_envelope(epsilon)
    low, high = s / 2 + loss_low / s, s / 2 + loss_high / s
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
    lattice = _lattice_field(spec, "gaussian_pure",
                             ("exponent", "sigma2", "keep_low", "keep_high"))
    low, high, loss_low, loss_high = _keep_envelope(epsilon)
    for key, value in (("keep_low", low), ("keep_high", high)):
        if lattice[key] != value:
            raise ValueError(f"lattice[{key!r}] of the 'gaussian_pure' specification is "
                             f"{lattice[key]!r}, but its epsilon gives {value}: an edited "
                             "envelope is refused.")
    if not (low <= _ONE // 2 <= high and _within(high, low, epsilon)
            and _within(_ONE - low, _ONE - high, epsilon)):
        raise ValueError(f"the envelope [{low}, {high}] of the 'gaussian_pure' specification "
                         f"fails its exact {epsilon}-LDP checks.")
    # The lattice follows the float sigma; this client's sigma agrees with the server's to
    # about 1e-12 (stdlib erf), so sigma2 is compared with that tolerance. Privacy does not
    # depend on it: the envelope above alone makes every report eps-LDP.
    exponent, sigma2 = lattice["exponent"], lattice["sigma2"]
    expected_exponent = _LATTICE_SIGMA_BITS + 1 - math.frexp(sigma)[1]
    expected_sigma2 = math.ldexp(sigma, expected_exponent) ** 2
    if exponent != expected_exponent or abs(sigma2 - expected_sigma2) > 1.0 + 1e-9 * sigma2:
        raise ValueError(f"lattice['exponent'], lattice['sigma2'] of the 'gaussian_pure' "
                         f"specification are {exponent!r}, {sigma2!r}, but its epsilon and "
                         f"params give {expected_exponent}, {round(expected_sigma2)}: an "
                         "edited lattice is refused.")
    sigma = math.sqrt(sigma2) * math.ldexp(1.0, -exponent)  # the realised sigma, as the server
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
        draw = [math.ldexp(_discrete_gaussian(sigma2, rng), -exponent) for _ in A]
        inner = 0.0
        for a, v in zip(plugged[cell], draw, strict=True):
            inner += a * v
        loss = (2.0 * inner - effective[cell] ** 2) / (2.0 * sigma**2)
        keep = 0.5 * math.exp(loss) if loss_low <= loss <= loss_high else 0.5
        numerator = min(max(math.floor(math.ldexp(keep, PRECISION)), low), high)
        return draw if _uniform_words(rng, 1)[0] < numerator else None  # None: "bottom"

    privatize.sigma = sigma
    privatize.effective_norms = effective
    privatize.lattice = {"exponent": exponent, "sigma2": sigma2, "keep_low": low,
                         "keep_high": high}
    return n, privatize
