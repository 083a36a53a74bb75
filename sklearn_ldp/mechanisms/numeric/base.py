"""Bounded numeric values under LDP: what the numeric mechanisms share.

Every mechanism here privatizes one real number per user, known to lie in public bounds
``[low, high]``. Pure numpy; nothing knows about scikit-learn or pandas.

How a report is drawn (issue 26, "privacy that holds on the machine"). The value is checked
against its bounds, mapped to ``u = (x - low) / (high - low)`` and clamped to ``[0, 1]``;
bounds too narrow for float64 to place a value among the grid's cells are refused
(:func:`~sklearn_ldp.mechanisms._base.window.check_resolution`). Every kind then reports one
cell of a finite public grid of ``M`` cells with exact integer probabilities: the *window
law* of :mod:`sklearn_ldp.mechanisms._base.window` -- ``L`` consecutive cells of weight ``a``, the
others ``b``, ``a / b <= e^eps`` decided on integers, the window position chosen by an exact
random rounding of ``u (M - L)``. Floats decide only the mixture weight of two rows that each
reach every cell, so no float decides which reports a value can produce (Mironov 2012).
``exact_law(value)`` returns the integer law of one value's report, and the constructor (and
so :func:`~.registry.numeric_mechanism_from_dict`) checks ``a / b <= e^eps`` exactly.

The mechanisms: :mod:`.means` (Duchi, Piecewise, Hybrid and the sampled multi-attribute mean)
and :mod:`.square_wave` (the distribution); :mod:`.registry` builds one by name or from its
specification. This module holds the bounds and values checks, the budget split and the
specification parts they share.

References
----------
.. [1] I. Mironov, "On significance of the least significant bits for differential privacy",
   CCS 2012.
"""

import math
import numbers
from fractions import Fraction

import numpy as np

from ..._validation import check_epsilon
from .._base.headers import SpecEquality
from .._base.window import (
    MAX_GRID_SIZE,
    unit_fraction,
)

NUMERIC_MECHANISMS = ("duchi", "piecewise", "hybrid", "square_wave")
# Version 2: reports on exact public grids, named in the specification's "grid" field.
SPEC_VERSION = 2


def check_bounds(bounds, name="bounds"):
    """``(low, high)`` as floats with ``low < high``, both finite, or a ValueError."""
    try:
        low, high = bounds
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair (low, high), got {bounds!r}.") from None
    for value in (low, high):
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or not math.isfinite(value):
            raise ValueError(f"{name} must hold two finite numbers, got {bounds!r}.")
    if not low < high:
        raise ValueError(f"{name} must satisfy low < high, got {bounds!r}.")
    return float(low), float(high)


def check_values(values, bounds, name="values"):
    """The values as a float array, refused (ValueError) if any is NaN or outside the bounds.

    The error names the first offending position and value: nothing is clipped here
    (clipping is an explicit choice of the caller, who then counts it).
    """
    values = np.asarray(values)
    if values.dtype.kind not in "iuf" or values.dtype == bool:
        raise TypeError(f"{name} must be numbers, got an array of dtype {values.dtype}.")
    values = values.astype(float, copy=False)
    low, high = bounds
    bad = ~((values >= low) & (values <= high))  # NaN compares False: refused too
    if bad.any():
        position = np.unravel_index(int(np.argmax(bad)), values.shape)
        raise ValueError(
            f"{name} must lie in the declared bounds [{low}, {high}]: found "
            f"{values[position]!r} at position {tuple(int(i) for i in position)} "
            f"({int(bad.sum())} value(s) out of bounds or NaN).")
    return values




def split_budget(epsilon, parts):
    """``eps / k`` as the largest float whose ``k``-fold is at most ``eps`` exactly (the
    composition of ``k`` reports must not pass ``eps`` by a rounding).

    Examples
    --------
    >>> split_budget(1.0, 3) * 3 <= 1.0
    True
    """
    share = epsilon / parts
    while Fraction(share) * parts > Fraction(epsilon):
        share = math.nextafter(share, 0.0)
    return share


def _grid_size(value, name="grid_size", minimum=3):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not minimum <= value <= MAX_GRID_SIZE:
        raise ValueError(f"{name} must be an integer in [{minimum}, {MAX_GRID_SIZE}], got "
                         f"{value!r}.")
    return int(value)


def _check_grid_spec(spec, derived, kind):
    """Refuse a specification whose ``grid`` differs from what its epsilon and params give,
    naming the first differing field."""
    grid = spec.get("grid")
    if not isinstance(grid, dict):
        raise ValueError(f"the {kind!r} specification needs its 'grid' (the integers of the "
                         f"sampled law), got {grid!r}.")
    for key in sorted(set(grid) | set(derived)):
        if grid.get(key) != derived.get(key):
            raise ValueError(f"grid[{key!r}] of the {kind!r} specification is "
                             f"{grid.get(key)!r}, but its epsilon and params give "
                             f"{derived.get(key)!r}: an edited grid is refused.")


class _Scaled(SpecEquality):
    """Shared parts of the numeric mechanisms: budget, public bounds, the spec."""

    kind = None

    def __init__(self, epsilon, bounds=(-1.0, 1.0)):
        self.epsilon = check_epsilon(epsilon)
        self.bounds = check_bounds(bounds)

    def _unit(self, values):
        """Values checked against the bounds, mapped to ``u in [0, 1]`` and clamped."""
        return unit_fraction(check_values(values, self.bounds), self.bounds)

    def to_dict(self):
        """A JSON-ready specification from which
        :func:`~.registry.numeric_mechanism_from_dict` rebuilds the mechanism; ``grid`` names
        the integers of the sampled law."""
        return {"version": SPEC_VERSION, "mechanism": self.kind, "epsilon": self.epsilon,
                "bounds": list(self.bounds), "params": self._params(), "grid": self.grid_spec()}

    def _params(self):
        return {}

    def __repr__(self):
        params = "".join(f", {key}={value!r}" for key, value in self._params().items())
        return f"{type(self).__name__}(epsilon={self.epsilon}, bounds={self.bounds}{params})"

    def exact_law(self, value):
        """The exact law of the report of one value (in value units): an
        :class:`~sklearn_ldp.mechanisms._base.exact.ExactLaw` over the whole public output set,
        outputs encoded as :meth:`randomize` encodes reports."""
        return self._unit_law(float(self._unit(np.array([value]))[0]))


def _float_reports(reports):
    """Whether ``reports`` is a 1-D float array (the grid kinds' report format)."""
    return reports.ndim == 1 and reports.dtype.kind == "f"


def _grid_report_validity(reports, grid):
    """Per report, whether it is a value of ``grid`` (none is when ``reports`` is not a 1-D
    float array, the grid kinds' report format)."""
    reports = np.asarray(reports)
    if not _float_reports(reports):
        return np.zeros(reports.shape[:1] or (1,), dtype=bool)
    return grid.indices(reports)[1]
