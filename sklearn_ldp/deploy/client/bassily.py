"""Bassily's Gaussian kinds (``gaussian``, ``gaussian_pure``) on the device.

``sigma`` is recomputed with stdlib ``erf``/``erfc`` instead of scipy's ``ndtr``; the noise is
``random.normalvariate`` (floating-point Gaussian noise, the usual approximation).

The calibration (``_analytic_sigma``, ``_gaussian_delta``) and the rejection sampler's
``kappa`` and ``sigma`` repeat ``sklearn_ldp.mechanisms.bassily.gaussian`` and ``.rejection``
on purpose: the client uses the standard library only, so that a device can copy this folder
alone; the tests check that both sides compute the same ``sigma``.
"""

import math

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
