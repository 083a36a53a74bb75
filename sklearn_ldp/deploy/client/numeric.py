"""The numeric kinds (``duchi``, ``piecewise``, ``hybrid``, ``square_wave``, ``sampled_mean``).

Each reports a point of the server's public grid with its exact integer law
(``mechanisms/_base/window.py``), re-derived here and compared with the spec's ``grid``.
"""

import decimal
import fractions
import math
from collections.abc import Mapping

from ._exact import DECIMAL_CONTEXT, _decimal_exp, _largest_within, _within
from ._spec import (
    MAX_ATTRIBUTES,
    _check_bounds,
    _check_budget,
    _check_choice,
    _check_fields,
    _check_value,
    _ValueKind,
)

MAX_SQUARE_WAVE_CELLS = 2**12  # numeric.MAX_SQUARE_WAVE_CELLS
MAX_GRID_SIZE = 2**16  # _window.MAX_GRID_SIZE
DEFAULT_GRID_SIZE = 4096  # _window.DEFAULT_GRID_SIZE
FRACTION_BITS = 52  # _window.FRACTION_BITS: the random rounding of the grid kinds
TWO_POINT_BITS = 28  # _window.TWO_POINT_BITS: a + b of Duchi's two-point law
# numeric.HYBRID_EPSILON_STAR, the same float literal.
HYBRID_EPSILON_STAR = 0.6093524930273103


# _window_weights, _two_point_weights and _window_length repeat
# sklearn_ldp.mechanisms._base.window (standard library only, so that a device can copy this
# folder alone: not imported from the server); the spec's grid is checked against them.
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
                         "does not know; update the client.")
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
    base = _check_choice(params["base"], MEAN_KINDS, "params['base']", kind)
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
