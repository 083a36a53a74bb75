"""Exact discrete laws of the numeric randomizers: the *window* law on a public grid.

Every numeric randomizer of the package (Duchi, Piecewise, Hybrid, Square Wave, the one-bit
randomizer) reports one cell of a finite public grid of ``M`` cells, drawn with exact integer
probabilities:

* **Window rows.** Input ``w`` (a *window position*, ``0 <= w <= M - L``) gives the ``L``
  consecutive cells ``w .. w + L - 1`` the integer weight ``a`` and every other cell the
  weight ``b``; every row sums to ``T = L a + (M - L) b``. Two rows differ only in where
  ``a`` and ``b`` sit, so the ratio of their probabilities of any cell is ``1``, ``a / b`` or
  ``b / a``: the law is ``eps``-private exactly when ``a / b <= e^eps``, an integer
  comparison (:func:`~sklearn_ldp.mechanisms._base.exact.integer_ratio_at_most`).
* **Random rounding.** A value, mapped to ``u in [0, 1]`` (clamped after the float mapping),
  lies at the real position ``p = u (M - L)``. It uses position ``w0 = floor(p)`` or ``w0 + 1``,
  the latter with probability ``F / 2^K``, ``F`` the fraction ``p - w0`` rounded to ``K`` bits.
  A float decides only the *mixture weight* of two rows that both reach every cell, and a
  mixture of ``eps``-private rows (all with total ``T``) is ``eps``-private, so the law of
  every value is private whatever the float arithmetic did.
* **Sampling.** One exact dyadic Bernoulli picks the row, one exactly uniform integer
  ``U in [0, T)`` picks the cell in closed form: ``U < L a`` is the window (cell ``w + U //
  a``), otherwise cell ``(U - L a) // b`` of the ``M - L`` cells outside it, in order: every
  window cell has ``a`` values of ``U``, every other ``b``. No table, no loop.
* **Unbiased decoding.** ``E[j | w]`` is affine in ``w`` (slope ``L (a - b) / T``) and the
  rounding keeps ``E[w] = w0 + F / 2^K``, so an affine function of the cell index is an
  unbiased estimate of the realised position (:meth:`WindowLaw.mean_decoder`).

Duchi's one bit is the window law with ``M = 2``, ``L = 1``: ``P(1 | F) = (b 2^K + F (a - b))
/ (2^K T)``, sampled as *one* dyadic Bernoulli when ``T`` is a power of two
(:func:`two_point_weights`).

Pure numpy and the standard library; nothing here knows about scikit-learn.
"""

import decimal
import math
from fractions import Fraction

import numpy as np

from .exact import (
    DECIMAL_CONTEXT,
    ExactLaw,
    exp_decimal,
    integer_ratio_at_most,
    largest_numerator_within,
    uniform_below,
    uniform_bits,
)

# Binary digits of the random-rounding fraction of the grid kinds.
FRACTION_BITS = 52
# Most cells of a grid (distinct report values of one kind).
MAX_GRID_SIZE = 2**16
# Cells of the Piecewise / Hybrid grid, and the least of the Square Wave grid, by default.
DEFAULT_GRID_SIZE = 4096
# Window weights: b = 2^24 (a / b within 6e-8 of e^eps), more bits for small epsilon (so
# that a - b keeps 24 bits), a at most 2^45 (T < 2^61 for every grid).
_WEIGHT_BITS = 24
_WEIGHT_CAP = 2**45
# Two-point (Duchi) law: a + b = 2^TWO_POINT_BITS, the fraction on 63 - TWO_POINT_BITS bits,
# so that one 63-bit dyadic Bernoulli draws the report.
TWO_POINT_BITS = 28
TWO_POINT_FRACTION_BITS = 63 - TWO_POINT_BITS


def window_weights(epsilon):
    """The integer weights ``(a, b)`` of the window law: ``a / b <= e^eps`` decided exactly,
    ``a`` the largest such integer for ``b = 2^24`` (``2^(24 + log2(1 / eps))`` below ``eps =
    1``, at most ``2^44``, so that ``a / b - 1`` keeps 24 significant bits); above ``eps``
    about 21, ``a = 2^45`` and ``b`` is the least integer that keeps the bound.

    Examples
    --------
    >>> a, b = window_weights(1.0)
    >>> b, integer_ratio_at_most(a, b, 1.0), integer_ratio_at_most(a + 1, b, 1.0)
    (16777216, True, False)
    """
    extra = max(0, -math.frexp(epsilon)[1] + 1)  # about log2(1 / eps) for eps < 1
    denominator = 2**min(_WEIGHT_BITS + extra, 44)
    a = largest_numerator_within(denominator, epsilon)
    if a <= _WEIGHT_CAP:
        return a, denominator
    a = _WEIGHT_CAP
    b = max(1, int(DECIMAL_CONTEXT.divide(decimal.Decimal(a), exp_decimal(epsilon))
                   .to_integral_value(rounding=decimal.ROUND_CEILING)))
    while not integer_ratio_at_most(a, b, epsilon):
        b += 1
    while b > 1 and integer_ratio_at_most(a, b - 1, epsilon):
        b -= 1
    return a, b


def two_point_weights(epsilon):
    """``(a, b)`` with ``a + b = 2^TWO_POINT_BITS`` and ``a / b <= e^eps`` exactly, ``a`` the
    largest such integer (Duchi's and the one-bit randomizer's law).

    Examples
    --------
    >>> a, b = two_point_weights(1.0)
    >>> a + b == 2**TWO_POINT_BITS, integer_ratio_at_most(a, b, 1.0)
    (True, True)
    >>> integer_ratio_at_most(a + 1, b - 1, 1.0)
    False
    """
    total = 2**TWO_POINT_BITS
    e = exp_decimal(epsilon)
    a = int(DECIMAL_CONTEXT.divide(e * total, e + 1).to_integral_value(
        rounding=decimal.ROUND_FLOOR))
    a = min(a, total - 1)
    while not integer_ratio_at_most(a, total - a, epsilon):
        a -= 1
    while a + 1 < total and integer_ratio_at_most(a + 1, total - a - 1, epsilon):
        a += 1
    return a, total - a


def window_length(cells, share):
    """``L = round(M share)`` kept in ``[1, M - 1]`` (``share`` a Decimal: the continuous
    mechanism's share of the output range covered by its high-density window).

    Examples
    --------
    >>> window_length(4096, decimal.Decimal("0.3775")), window_length(8, decimal.Decimal(0))
    (1546, 1)
    """
    length = int(DECIMAL_CONTEXT.multiply(decimal.Decimal(cells), share)
                 .to_integral_value(rounding=decimal.ROUND_HALF_EVEN))
    return min(max(length, 1), cells - 1)


def check_resolution(bounds, cells, name="bounds"):
    """Refuse bounds too narrow for float64 to place a value among ``cells`` grid cells.

    The mapping ``u = (x - low) / (high - low)`` is exact to a few ulps of the bounds; when
    ``high - low < cells * ulp(max(|low|, |high|))`` fewer than ``cells`` floats lie between
    the bounds, so that rounding moves ``u`` by more than one grid step (bounds ``(1e16,
    1e16 + 2)`` map the upper bound two steps off). Such bounds are refused; privacy does not
    depend on it (every ``u`` is clamped into ``[0, 1]``), accuracy does.

    Examples
    --------
    >>> check_resolution((0.0, 10.0), 4096)
    >>> check_resolution((1e16, 1e16 + 2), 2)
    Traceback (most recent call last):
    ...
    ValueError: bounds (1e+16, 1.0000000000000002e+16) are too narrow for float64 ...
    """
    low, high = bounds
    ulp = math.ulp(max(abs(low), abs(high)))
    width = high - low
    if not math.isfinite(width) or width < cells * ulp:
        raise ValueError(f"{name} ({low!r}, {high!r}) are too narrow for float64 at that "
                         f"magnitude: the width {width!r} must be finite and at least {cells} "
                         f"grid cells times the spacing of floats there ({ulp!r}); subtract "
                         "an offset from the values first.")


def unit_fraction(values, bounds):
    """``u = (x - low) / (high - low)`` clamped to ``[0, 1]`` (values already checked against
    the bounds; the clamp absorbs the mapping's rounding at the ends).

    Examples
    --------
    >>> unit_fraction(np.array([0.0, 2.5, 10.0]), (0.0, 10.0)).tolist()
    [0.0, 0.25, 1.0]
    """
    low, high = bounds
    return np.clip((np.asarray(values, dtype=float) - low) / (high - low), 0.0, 1.0)


class AffineGrid:
    """The report values ``y_j = slope * j + offset`` (float64: one multiplication, one
    addition, the same on every IEEE machine) of cells ``j = 0 .. size - 1``.

    ``slope`` and ``offset`` are exact rationals rounded once to floats, so the server and the
    client compute the very same values; a report is valid exactly when it is one of them.

    Examples
    --------
    >>> grid = AffineGrid(4, Fraction(1, 2), Fraction(-3, 4))
    >>> grid.values(np.arange(4)).tolist()
    [-0.75, -0.25, 0.25, 0.75]
    >>> grid.indices(np.array([0.25, 0.3]))
    (array([2, 0]), array([ True, False]))
    """

    def __init__(self, size, slope, offset):
        self.size = int(size)
        self.slope = float(slope)
        self.offset = float(offset)
        values = self.values(np.arange(self.size))
        # Distinct, increasing and invertible by rounding (a step far above the ulps).
        if self.size > 1 and not (np.diff(values) > 0).all():
            raise ValueError(f"the grid of {self.size} cells with step {self.slope!r} is not "
                             "distinct in float64.")
        index, valid = self.indices(values)
        if not (valid.all() and (index == np.arange(self.size)).all()):
            raise ValueError(f"the grid of {self.size} cells with step {self.slope!r} cannot "
                             "be inverted in float64.")

    def values(self, cells):
        """The report value of each cell index."""
        return np.asarray(cells).astype(np.float64) * self.slope + self.offset

    def indices(self, reports):
        """``(cells, valid)``: each report's cell index (0 where invalid) and whether the
        report is exactly a grid value (NaN, infinities and off-grid floats are not)."""
        reports = np.asarray(reports, dtype=np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            position = np.rint((reports - self.offset) / self.slope)
            inside = np.isfinite(position) & (position >= 0) & (position < self.size)
        cells = np.where(inside, position, 0).astype(np.int64)
        valid = inside & (self.values(cells) == reports)
        return np.where(valid, cells, 0), valid

    def lowest(self):
        return self.offset

    def highest(self):
        return float(self.values(self.size - 1))


class WindowLaw:
    """The window law of ``cells`` = ``M`` cells, window ``L``, weights ``a > b >= 1`` (module
    docstring), with a random rounding on ``fraction_bits`` bits.

    The constructor checks the structure exactly: ``1 <= L < M <= MAX_GRID_SIZE``, integer
    weights with ``a / b <= e^eps``; a ValueError names the field.

    Examples
    --------
    >>> law = WindowLaw(8, 3, 5, 2, epsilon=1.0)
    >>> law.total, law.row(2)
    (25, [2, 2, 5, 5, 5, 2, 2, 2])
    >>> cells = law.sample(np.random.default_rng(0), *law.positions(np.full(5, 0.4)))
    >>> cells.shape
    (5,)
    """

    def __init__(self, cells, window, a, b, epsilon, fraction_bits=FRACTION_BITS, name="grid"):
        if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)) and a <= b:
            raise ValueError(f"{name}['weights'] = [{a}, {b}]: epsilon={epsilon!r} is too "
                             "small for integer weights (a must exceed b: the report would "
                             "carry no information).")
        for field, value, low, high in (("cells", cells, 2, MAX_GRID_SIZE),
                                        ("window", window, 1, cells - 1),
                                        ("weights[1]", b, 1, 2**62),
                                        ("weights[0]", a, b + 1, 2**62)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
                    or not low <= value <= high:
                raise ValueError(f"{name}[{field!r}] must be an integer in [{low}, {high}], "
                                 f"got {value!r}.")
        if not integer_ratio_at_most(a, b, epsilon):
            raise ValueError(f"{name}['weights'] = [{a}, {b}]: the ratio a / b exceeds "
                             f"e^epsilon for epsilon={epsilon!r}.")
        self.cells, self.window, self.a, self.b = int(cells), int(window), int(a), int(b)
        self.fraction_bits = int(fraction_bits)
        self.total = self.window * self.a + (self.cells - self.window) * self.b
        if self.total >= 2**62 or not 1 <= self.fraction_bits <= 63 - (
                self.total.bit_length() - 1 if self.cells == 2 else 0):
            raise ValueError(f"{name}: the grid of {cells} cells with weights [{a}, {b}] is too "
                             "large for 64-bit sampling.")
        self.span = self.cells - self.window  # window positions 0 .. span

    # ------------------------------------------------------------------ sampling
    def positions(self, u):
        """``(w0, F)`` for unit values ``u`` in ``[0, 1]``: the lower window position and the
        rounding numerator on ``fraction_bits`` bits (position ``w0 + 1`` has probability
        ``F / 2^K``)."""
        p = np.asarray(u, dtype=np.float64) * float(self.span)
        w0 = np.minimum(np.floor(p), float(self.span - 1))
        scale = float(2**self.fraction_bits)
        # p - w0 lies in [0, 1] exactly (w0 <= p <= w0 + 1), so F lies in [0, 2^K].
        numerators = np.rint((p - w0) * scale)
        return w0.astype(np.int64), numerators.astype(np.int64)

    def sample(self, rng, w0, numerators):
        """One cell index (int64) per element of ``w0`` / ``numerators``."""
        w0 = np.asarray(w0, dtype=np.int64)
        if self.cells == 2 and self.total & (self.total - 1) == 0:
            # One dyadic Bernoulli: P(1) = (b 2^K + F (a - b)) / (2^K T).
            numerators = self.b * 2**self.fraction_bits + np.asarray(numerators) \
                * (self.a - self.b)
            bits = self.fraction_bits + self.total.bit_length() - 1
            return (uniform_bits(rng, w0.shape, bits).astype(np.int64) < numerators) \
                .astype(np.int64)
        # [U_K < F]: exactly Bernoulli(F / 2^K) (F in [0, 2^K] by construction).
        up = uniform_bits(rng, w0.shape, self.fraction_bits).astype(np.int64) < numerators
        w = w0 + up
        draws = uniform_below(rng, self.total, w.shape)
        # U < L a: the window, cell w + U // a (each of its cells has a values of U);
        # otherwise cell k = (U - L a) // b of the M - L cells outside it, in order.
        inside = draws < self.window * self.a
        outside = (draws - self.window * self.a) // self.b
        outside += self.window * (outside >= w)
        return np.where(inside, w + draws // self.a, outside)

    # ------------------------------------------------------------------ exact law
    def row(self, w):
        """The integer weights of window position ``w`` over the ``M`` cells."""
        return [self.a if w <= j < w + self.window else self.b for j in range(self.cells)]

    def law_weights(self, w0, numerator):
        """The exact weights (Python ints, total ``T 2^K``) of one value's law: the rounding
        mixture of rows ``w0`` and ``w0 + 1``."""
        w0, numerator = int(w0), int(numerator)
        one = 2**self.fraction_bits
        low = self.row(w0)
        high = self.row(min(w0 + 1, self.span))
        return [(one - numerator) * x + numerator * y for x, y in zip(low, high, strict=True)]

    def exact_law(self, u, outputs):
        """The :class:`ExactLaw` of unit value ``u`` (one float), outputs as given."""
        w0, numerator = self.positions(np.array([u]))
        weights = self.law_weights(w0[0], numerator[0])
        return ExactLaw(outputs, weights, self.total * 2**self.fraction_bits)

    # ------------------------------------------------------------------ moments
    def _moments(self, w):
        """``E[j | w]`` and ``E[j^2 | w]`` (floats) for window positions ``w``."""
        M, L, a, b, T = self.cells, self.window, self.a, self.b, self.total
        w = np.asarray(w, dtype=float)
        s1, s2 = M * (M - 1) / 2, (M - 1) * M * (2 * M - 1) / 6
        w1 = L * w + L * (L - 1) / 2
        w2 = L * w * w + w * L * (L - 1) + (L - 1) * L * (2 * L - 1) / 6
        return (b * s1 + (a - b) * w1) / T, (b * s2 + (a - b) * w2) / T

    def cell_variance(self, u):
        """``Var[j | u]`` of the cell index, rounding included, for unit values ``u``."""
        w0, numerators = self.positions(u)
        f = numerators / float(2**self.fraction_bits)
        m0, q0 = self._moments(w0)
        m1, q1 = self._moments(np.minimum(w0 + 1, self.span))
        mean = (1 - f) * m0 + f * m1
        return np.maximum((1 - f) * q0 + f * q1 - mean * mean, 0.0)

    def mean_decoder(self):
        """``(alpha, beta)`` as exact Fractions: ``alpha j + beta`` has expectation ``2 w /
        (M - L) - 1`` at window position ``w`` (the unit value ``t = 2 u - 1``)."""
        M, L, a, b, T = self.cells, self.window, self.a, self.b, self.total
        slope = Fraction(L * (a - b), T)  # dE[j]/dw
        intercept = Fraction(b * M * (M - 1) + (a - b) * L * (L - 1), 2 * T)  # E[j | 0]
        alpha = 2 / (slope * self.span)
        return alpha, -alpha * intercept - 1

    def spec(self):
        """The integers that define the law (what a specification names)."""
        return {"cells": self.cells, "window": self.window, "weights": [self.a, self.b],
                "fraction_bits": self.fraction_bits}
