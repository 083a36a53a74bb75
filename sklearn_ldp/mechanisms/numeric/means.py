"""Unbiased means of bounded numeric values under LDP: Duchi, Piecewise, Hybrid, and several
attributes by sampling.

How a report is drawn on its public grid is in :mod:`.base`.

Mean estimation. With ``t = 2 u - 1`` in ``[-1, 1]``, each randomizer's report decodes to
``y`` with ``E[y | t] = t`` exactly for the realised (dyadic) rounding, so the mean of the
reports, mapped back, is an unbiased estimate of the mean. ``s = e^(eps / 2)``:

* **Duchi** (Duchi, Jordan & Wainwright 2018, 1-D): one bit, the window law with ``M = 2``,
  ``L = 1`` and ``a + b = 2^28``: ``P(1 | t)`` runs from ``b / 2^28`` to ``a / 2^28``,
  linearly in the rounded ``(t + 1) / 2``, drawn by one 63-bit dyadic Bernoulli. A bit decodes
  to ``+-C``, ``C = (a + b) / (a - b)`` (the continuous ``(e^eps + 1) / (e^eps - 1)`` to
  ``1e-7``); ``Var[y | t] = C^2 - t^2``.
* **Piecewise** (Wang et al. 2019): ``M`` cells (default 4096) and a window of ``L = round(M /
  (s + 1))`` cells, the share ``(C - 1) / (2 C)`` of the continuous centre piece in its range
  ``[-C, C]``, ``C = (s + 1) / (s - 1)``; cell ``j`` reports ``alpha j + beta``, the affine
  decoder that is unbiased (close to the cell centres in ``[-C, C]``). The variance, rounding
  included, is the continuous ``t^2 / (s - 1) + (s + 3) / (3 (s - 1)^2)`` within 0.5% for
  ``eps`` in ``[0.1, 8]``.
* **Hybrid** (Wang et al. 2019): Piecewise with probability ``alpha = A / 2^52`` (``A`` the
  dyadic rounding of the realised ``L (a - b) / T``, the discrete counterpart of the paper's
  ``1 - 1/s``, above ``eps_star``; else 0), Duchi otherwise (its bit reported
  as the value ``+-C``); each part is ``eps``-private, so the mixture is. With ``alpha = 1 -
  1/s`` the ``t^2`` terms cancel and the worst case is below Duchi's for ``eps > eps_star``
  (about 0.61, where the two are equal); below it ``alpha = 0``.

Each report changes the mean estimate by at most its largest ``|y|`` (times the half-width of
the bounds); reports are checked on the server: a float report must be exactly a grid value.

Several attributes (Wang et al. 2019, Algorithm 4): each user samples ``k`` of the ``d``
attributes without replacement (exact uniform integers), privatizes each sampled value with
budget ``eps / k`` (rounded down to a float whose ``k``-fold is at most ``eps``, exactly) and
reports it scaled by ``d / k``; unsampled attributes count as 0. The estimate stays unbiased,
and ``k = max(1, min(d, floor(eps / 2.5)))`` is the paper's choice for Piecewise and Hybrid.

References
----------
.. [1] J. C. Duchi, M. I. Jordan and M. J. Wainwright, "Minimax optimal procedures for
   locally private estimation", Journal of the American Statistical Association, 2018.
.. [2] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin and G. Yu, "Collecting
   and analyzing multidimensional data with local differential privacy", ICDE 2019.
"""

import decimal
import itertools
import math
import numbers

import numpy as np

from ..._validation import check_epsilon
from .._base.docstrings import shared_sections
from .._base.exact import (
    DECIMAL_CONTEXT,
    ExactLaw,
    check_law_size,
    exp_decimal,
    uniform_below,
    uniform_bits,
)
from .._base.headers import check_spec_header
from .._base.window import (
    DEFAULT_GRID_SIZE,
    FRACTION_BITS,
    TWO_POINT_FRACTION_BITS,
    AffineGrid,
    WindowLaw,
    check_resolution,
    two_point_weights,
    window_length,
    window_weights,
)
from .base import (
    SPEC_VERSION,
    _check_grid_spec,
    _float_reports,
    _grid_report_validity,
    _grid_size,
    _Scaled,
    check_bounds,
    check_values,
    split_budget,
)


def duchi_constant(epsilon):
    """Duchi's continuous output magnitude ``C = (e^eps + 1) / (e^eps - 1)`` (the realised
    one is :meth:`DuchiMechanism.report_magnitude`)."""
    return 1.0 / math.tanh(epsilon / 2.0)


def piecewise_constant(epsilon):
    """Piecewise's continuous output range ``C = (s + 1) / (s - 1)``, ``s = e^(eps / 2)``."""
    return 1.0 / math.tanh(epsilon / 4.0)


def _hybrid_constant_variance(epsilon):
    s = math.exp(epsilon / 2.0)
    return (s + 3) / (3 * s * (s - 1)) + duchi_constant(epsilon) ** 2 / s


# Where Hybrid with alpha = 1 - 1/s and Duchi have the same worst case (the root, found by
# brentq to 1e-14 and written out so that the server and the client use the same float;
# tests/test_exact_numeric.py checks it is the root).
HYBRID_EPSILON_STAR = 0.6093524930273103


def hybrid_alpha(epsilon):
    """Probability that Hybrid uses Piecewise: ``1 - e^(-eps/2)`` above ``eps_star``, else 0
    (the realised one is ``hybrid_alpha_numerator(epsilon) / 2^52``)."""
    return 1.0 - math.exp(-epsilon / 2.0) if epsilon > HYBRID_EPSILON_STAR else 0.0


def hybrid_alpha_numerator(epsilon, law):
    """``A``, the dyadic numerator (on 52 bits) of Hybrid's probability of Piecewise: 0 at or
    below ``eps_star``, else ``L (a - b) / T`` of the Piecewise window ``law`` rounded to
    nearest (integer arithmetic, identical on every machine).

    ``L (a - b) / T`` is the weight that cancels the ``t^2`` terms of the realised laws
    (Piecewise's ``Var[y | t]`` grows as ``(T / (L (a - b)) - 1) t^2``, Duchi's falls as
    ``t^2``), as ``1 - 1/s`` does for the continuous ones (Wang et al.), which it equals in
    the limit.

    Examples
    --------
    >>> law = _piecewise_law(1.0, 4096)
    >>> hybrid_alpha_numerator(0.5, law), round(hybrid_alpha_numerator(1.0, law) / 2**52, 4)
    (0, 0.3934)
    """
    if not epsilon > HYBRID_EPSILON_STAR:
        return 0
    numerator = law.window * (law.a - law.b)
    return (2**(FRACTION_BITS + 1) * numerator + law.total) // (2 * law.total)


def optimal_sample_size(n_attributes, epsilon):
    """Attributes each user reports in the multi-dimensional variant: ``max(1, min(d,
    floor(eps / 2.5)))`` (Wang et al. 2019)."""
    return max(1, min(int(n_attributes), int(math.floor(epsilon / 2.5))))



# Docstring sections the mean randomizers share, written once (lines ``<mean parameters>``,
# ``<grid size: description>`` and ``<see also and wang 2019: names>`` of a class docstring;
# :mod:`sklearn_ldp.mechanisms._base.docstrings`).
mean_docstring = shared_sections({
    "mean parameters": """\
epsilon : float
    Privacy budget of each report.
bounds : tuple of float, default=(-1.0, 1.0)
    Public bounds ``(low, high)`` of the value.""",
    "grid size": lambda description: f"""\
grid_size : int, default=4096
    {description}""",
    "see also and wang 2019": lambda see_also: f"""\
See Also
--------
{see_also}

References
----------
.. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin and G. Yu,
   "Collecting and analyzing multidimensional data with local differential privacy",
   ICDE 2019.""",
})

class MeanMechanism(_Scaled):
    """Base of the unbiased mean randomizers (values mapped to ``t in [-1, 1]``).

    The statistic is ``[n_reports, sum of y, sum of y^2]`` (additive over disjoint sets of
    reports); :meth:`estimate_mean` maps ``sum y / n`` back to the value scale.
    """

    def _to_unit(self, values):
        """``t = 2 u - 1`` for each value (``u`` the clamped unit fraction)."""
        return 2.0 * self._unit(values) - 1.0

    @property
    def half_width(self):
        """Half the width of the bounds: a unit of ``t`` in value units."""
        return (self.bounds[1] - self.bounds[0]) / 2

    def randomize(self, values, rng):
        """One report per value (see the class)."""
        return self._randomize_unit(self._unit(values), rng)

    def unit_variance(self, t):
        """``Var[y | t]`` for ``t`` in ``[-1, 1]`` (unit scale), of the realised law, rounding
        included."""
        u = np.clip((np.asarray(t, dtype=float) + 1.0) / 2.0, 0.0, 1.0)
        return self._variance_unit(u)

    def variance(self, values):
        """Variance of one user's report, in squared value units, for each value."""
        return self._variance_unit(self._unit(values)) * self.half_width ** 2

    def _probe_points(self):
        """Unit values where the variance is largest: the ends, the middle and fine points of
        the rounding intervals next to them (the variance is a quadratic in ``t`` plus a
        rounding bump ``f (1 - f)`` within each interval)."""
        step = 1.0 / max(self._positions(), 1)
        fine = np.linspace(0.0, step, 33)
        return np.clip(np.concatenate([[0.0, 0.5, 1.0], fine, 1.0 - fine, 0.5 + fine,
                                       0.5 - fine]), 0.0, 1.0)

    def _positions(self):
        return 1

    def worst_case_variance(self):
        """Largest variance of one user's report over the bounds (squared value units)."""
        return float(self._variance_unit(self._probe_points()).max()) * self.half_width ** 2

    def report_magnitude(self):
        """The largest ``|y|`` a valid report has (unit scale)."""
        raise NotImplementedError

    def report_validity(self, reports):
        """Boolean mask of the reports the randomizer can produce."""
        raise NotImplementedError

    def check_reports(self, reports):
        """The reports as an array, or a ValueError naming the first invalid one."""
        reports = np.asarray(reports)
        valid = self.report_validity(reports)
        if not valid.all():
            row = int(np.argmin(valid))
            raise ValueError(f"invalid {self.kind!r} report at row {row}: {reports[row]!r} "
                             f"({int((~valid).sum())} invalid of {len(valid)}; reports are "
                             "exactly the values of the public grid).")
        return reports

    def report_values(self, reports):
        """The reports as floats ``y`` (unit scale)."""
        return np.asarray(reports, dtype=float)

    def aggregate(self, reports):
        """``[n, sum y, sum y^2]`` of the valid reports (a ValueError on an invalid one)."""
        y = self.report_values(self.check_reports(reports))
        return np.array([float(len(y)), float(y.sum()), float(np.square(y).sum())])

    def check_statistic(self, statistic):
        """The statistic as a float array, refused if no set of valid reports produces it."""
        statistic = np.asarray(statistic, dtype=float)
        if statistic.shape != (3,) or not np.isfinite(statistic).all():
            raise ValueError(f"a {self.kind!r} statistic is [n, sum y, sum y^2] (3 finite "
                             f"numbers), got {statistic!r}.")
        n, total, squares = statistic
        magnitude = self.report_magnitude()
        slack = 1e-9 * max(n, 1.0) * magnitude ** 2
        if n < 1 or n != math.floor(n) or abs(total) > n * magnitude * (1 + 1e-12) \
                or squares < -slack or squares > n * magnitude ** 2 + slack \
                or total ** 2 > n * squares + slack * n:
            raise ValueError(f"the {self.kind!r} statistic {statistic.tolist()!r} cannot come "
                             f"from valid reports (|y| <= {magnitude:.6g} each).")
        return statistic

    def estimate_mean(self, statistic):
        """Unbiased estimate of the mean value from ``aggregate``'s statistic."""
        n, total, _ = self.check_statistic(statistic)
        low, high = self.bounds
        return (low + high) / 2 + self.half_width * total / n

    def estimate_mean_variance(self, statistic):
        """Unbiased estimate of the variance of :meth:`estimate_mean` (squared value units):
        the reports' sample variance over ``n``."""
        n, total, squares = self.check_statistic(statistic)
        if n < 2:
            return math.inf
        sample_variance = max(squares - total ** 2 / n, 0.0) / (n - 1)
        return sample_variance / n * self.half_width ** 2


@mean_docstring
class DuchiMechanism(MeanMechanism):
    """Duchi et al.'s one-dimensional randomizer: one bit per user, exact dyadic law.

    ``P(bit = 1)`` is ``(b 2^K + F (a - b)) / 2^(K + 28)``: ``a + b = 2^28`` with ``a / b <=
    e^eps`` decided exactly (:func:`~sklearn_ldp.mechanisms._base.window.two_point_weights`) and
    ``F / 2^K`` the value's ``(t + 1) / 2`` rounded to ``K = 35`` bits; one 63-bit Bernoulli
    draws it. A bit decodes to ``+-C``, ``C = (a + b) / (a - b)``, unbiased for the rounded
    value.

    Parameters
    ----------
    <mean parameters>

    See Also
    --------
    PiecewiseMechanism, HybridMechanism

    References
    ----------
    .. [1] J. C. Duchi, M. I. Jordan and M. J. Wainwright, "Minimax optimal procedures for
       locally private estimation", Journal of the American Statistical Association, 2018.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = DuchiMechanism(1.0, bounds=(0, 10))
    >>> reports = mechanism.randomize(np.full(100_000, 7.0), np.random.default_rng(0))
    >>> round(float(mechanism.estimate_mean(mechanism.aggregate(reports))), 1)
    7.0
    >>> law = mechanism.exact_law(7.0)
    >>> law.outputs.tolist(), law.total == 2**63
    ([0, 1], True)
    """

    kind = "duchi"

    def __init__(self, epsilon, bounds=(-1.0, 1.0)):
        super().__init__(epsilon, bounds)
        a, b = two_point_weights(self.epsilon)
        self.law = WindowLaw(2, 1, a, b, self.epsilon, TWO_POINT_FRACTION_BITS)
        alpha, beta = self.law.mean_decoder()
        self.grid = AffineGrid(2, alpha, beta)
        check_resolution(self.bounds, 2)

    def grid_spec(self):
        """The integers of the sampled law (the specification's ``grid``)."""
        return self.law.spec()

    def _randomize_unit(self, u, rng):
        """One bit per user (1: ``+C``, 0: ``-C``), as uint8."""
        return self.law.sample(rng, *self.law.positions(u)).astype(np.uint8)

    def _unit_law(self, u):
        return self.law.exact_law(u, np.arange(2, dtype=np.uint8))

    def report_magnitude(self):
        return float(max(abs(self.grid.lowest()), abs(self.grid.highest())))

    def report_validity(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 1 or reports.dtype.kind not in "iub":
            return np.zeros(reports.shape[:1] or (1,), dtype=bool)
        return (reports == 0) | (reports == 1)

    def report_values(self, reports):
        return self.grid.values(np.asarray(reports))

    def _variance_unit(self, u):
        return self.grid.slope ** 2 * self.law.cell_variance(u)


def _piecewise_law(epsilon, grid_size):
    """The window law of Piecewise: ``L = round(M / (s + 1))`` of ``M`` cells, ``s =
    e^(eps/2)`` (the continuous centre's share ``(C - 1) / (2 C)`` of its range)."""
    with decimal.localcontext(DECIMAL_CONTEXT):
        share = 1 / (1 + exp_decimal(epsilon / 2.0))
    a, b = window_weights(epsilon)
    return WindowLaw(grid_size, window_length(grid_size, share), a, b, epsilon)


@mean_docstring
class PiecewiseMechanism(MeanMechanism):
    """Wang et al.'s Piecewise mechanism on a public grid: one float per user.

    The report is one of ``grid_size`` values ``alpha j + beta`` spread over about ``[-C,
    C]``, drawn by the exact window law (module docstring): cells ``w .. w + L - 1`` have
    weight ``a``, the others ``b``, ``a / b <= e^eps`` exactly, the window position ``w``
    randomly rounded from the value.

    Parameters
    ----------
    <mean parameters>
    <grid size: Cells ``M`` of the report grid (distinct report values), at most 65,536.>

    <see also and wang 2019: DuchiMechanism, HybridMechanism>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = PiecewiseMechanism(2.0, bounds=(0, 100))
    >>> reports = mechanism.randomize(np.full(100_000, 30.0), np.random.default_rng(0))
    >>> round(mechanism.estimate_mean(mechanism.aggregate(reports)))
    30
    >>> len(np.unique(reports)) <= mechanism.grid.size
    True
    """

    kind = "piecewise"

    def __init__(self, epsilon, bounds=(-1.0, 1.0), grid_size=DEFAULT_GRID_SIZE):
        super().__init__(epsilon, bounds)
        self.law = _piecewise_law(self.epsilon, _grid_size(grid_size))
        self.grid = AffineGrid(self.law.cells, *self.law.mean_decoder())
        check_resolution(self.bounds, self.law.cells)

    def _params(self):
        return {"grid_size": self.law.cells}

    def grid_spec(self):
        """The integers of the sampled law (the specification's ``grid``)."""
        return self.law.spec()

    def _positions(self):
        return self.law.span

    def _randomize_unit(self, u, rng):
        """One float per user: a grid value."""
        return self.grid.values(self.law.sample(rng, *self.law.positions(u)))

    def _unit_law(self, u):
        return self.law.exact_law(u, self.grid.values(np.arange(self.law.cells)))

    def report_magnitude(self):
        return float(max(abs(self.grid.lowest()), abs(self.grid.highest())))

    def report_validity(self, reports):
        return _grid_report_validity(reports, self.grid)

    def _variance_unit(self, u):
        return self.grid.slope ** 2 * self.law.cell_variance(u)


@mean_docstring
class HybridMechanism(MeanMechanism):
    """Wang et al.'s Hybrid mechanism: Piecewise with probability ``alpha``, else Duchi.

    ``alpha = A / 2^52`` exactly (:func:`hybrid_alpha_numerator`); the Piecewise part reports
    a grid value, the Duchi part the value ``+-C`` of its bit (exact floats, checked on the
    server). Its worst-case variance is at most Duchi's and Piecewise's at every epsilon.

    Parameters
    ----------
    <mean parameters>
    <grid size: Cells of the Piecewise part's grid.>

    <see also and wang 2019: DuchiMechanism, PiecewiseMechanism>

    Examples
    --------
    >>> mechanism = HybridMechanism(1.0)
    >>> round(mechanism.worst_case_variance(), 3) <= round(DuchiMechanism(1.0)
    ...                                                   .worst_case_variance(), 3)
    True
    """

    kind = "hybrid"

    def __init__(self, epsilon, bounds=(-1.0, 1.0), grid_size=DEFAULT_GRID_SIZE):
        super().__init__(epsilon, bounds)
        self.piecewise = PiecewiseMechanism(self.epsilon, bounds, grid_size)
        self.duchi = DuchiMechanism(self.epsilon, bounds)
        self.alpha_numerator = hybrid_alpha_numerator(self.epsilon, self.piecewise.law)
        self.duchi_values = self.duchi.grid.values(np.arange(2))

    def _params(self):
        return {"grid_size": self.piecewise.law.cells}

    def grid_spec(self):
        """The integers of the sampled law (the specification's ``grid``)."""
        return {"piecewise": self.piecewise.grid_spec(), "duchi": self.duchi.grid_spec(),
                "alpha_numerator": self.alpha_numerator, "alpha_bits": FRACTION_BITS}

    def _positions(self):
        return self.piecewise.law.span

    @property
    def alpha(self):
        """The realised probability of the Piecewise part, ``A / 2^52``."""
        return self.alpha_numerator / 2**FRACTION_BITS

    def _randomize_unit(self, u, rng):
        """One float per user: a Piecewise grid value or Duchi's ``+-C``."""
        u = np.asarray(u, dtype=float)
        # [U_52 < A]: exactly Bernoulli(A / 2^52).
        piecewise = uniform_bits(rng, u.shape, FRACTION_BITS) < self.alpha_numerator
        reports = np.empty(u.shape)
        reports[piecewise] = self.piecewise._randomize_unit(u[piecewise], rng)
        bits = self.duchi._randomize_unit(u[~piecewise], rng)
        reports[~piecewise] = self.duchi_values[bits]
        return reports

    def _unit_law(self, u):
        piecewise, duchi = self.piecewise._unit_law(u), self.duchi._unit_law(u)
        one = 2**FRACTION_BITS
        if self.alpha_numerator == 0:
            return ExactLaw(self.duchi_values, list(duchi.weights), duchi.total)
        outputs = np.unique(np.concatenate([piecewise.outputs, self.duchi_values]))
        weights = [0] * len(outputs)
        for values, law, share, other in (
                (piecewise.outputs, piecewise, self.alpha_numerator, duchi.total),
                (self.duchi_values, duchi, one - self.alpha_numerator, piecewise.total)):
            for o, w in zip(np.searchsorted(outputs, values).tolist(), law.weights,
                            strict=True):
                weights[o] += share * int(w) * other
        return ExactLaw(outputs, weights, one * piecewise.total * duchi.total)

    def report_magnitude(self):
        duchi = self.duchi.report_magnitude()
        return max(self.piecewise.report_magnitude(), duchi) if self.alpha_numerator else duchi

    def report_validity(self, reports):
        reports = np.asarray(reports)
        if not _float_reports(reports):
            return np.zeros(reports.shape[:1] or (1,), dtype=bool)
        duchi = (reports == self.duchi_values[0]) | (reports == self.duchi_values[1])
        if self.alpha_numerator == 0:
            return duchi
        return duchi | self.piecewise.grid.indices(reports)[1]

    def _variance_unit(self, u):
        alpha = self.alpha
        return alpha * self.piecewise._variance_unit(u) \
            + (1 - alpha) * self.duchi._variance_unit(u)


MEAN_MECHANISMS = {cls.kind: cls for cls in (DuchiMechanism, PiecewiseMechanism,
                                             HybridMechanism)}


@mean_docstring
class SampledMeanMechanism:
    """Means of ``d`` bounded attributes: each user reports ``k`` of them (Wang et al. 2019).

    Each user samples ``k`` attributes uniformly without replacement (exact uniform integers)
    and privatizes each sampled value with ``eps / k`` (:func:`split_budget`) through the
    chosen mean randomizer; the record is ``eps``-LDP by composition, and attribute ``j``'s
    mean is estimated as ``d / (k N)`` times the sum of its reports (unsampled attributes
    count as 0), which is unbiased.

    Parameters
    ----------
    epsilon : float
        Privacy budget of one user's whole record.
    bounds : sequence of (float, float)
        Public bounds of each attribute.
    base : {"hybrid", "piecewise", "duchi"}, default="hybrid"
        Randomizer of each sampled value.
    n_sampled : int or None, default=None
        Attributes each user reports, ``k`` (default: :func:`optimal_sample_size`).
    grid_size : int or None, default=None
        Cells of the Piecewise grid of the base randomizer (default 4096; none for Duchi).

    <see also and wang 2019: HybridMechanism, PiecewiseMechanism, DuchiMechanism>

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> mechanism = SampledMeanMechanism(4.0, [(0, 1)] * 5)
    >>> X = rng.uniform(0.2, 0.4, size=(200_000, 5))
    >>> means = mechanism.estimate_means(mechanism.aggregate(mechanism.randomize(X, rng)))
    >>> np.round(means, 1).tolist()
    [0.3, 0.3, 0.3, 0.3, 0.3]
    """

    kind = "sampled_mean"

    def __init__(self, epsilon, bounds, base="hybrid", n_sampled=None, grid_size=None):
        self.epsilon = check_epsilon(epsilon)
        try:
            bounds = list(bounds)
        except TypeError:
            raise ValueError(f"bounds must be a list of (low, high) pairs, got {bounds!r}.") \
                from None
        if not bounds:
            raise ValueError("bounds must name at least one attribute.")
        self.bounds = [check_bounds(pair, f"bounds[{j}]") for j, pair in enumerate(bounds)]
        if base not in MEAN_MECHANISMS:
            raise ValueError(f"base must be one of {sorted(MEAN_MECHANISMS)}, got {base!r}.")
        self.base = base
        d = len(self.bounds)
        if n_sampled is None:
            n_sampled = optimal_sample_size(d, self.epsilon)
        if isinstance(n_sampled, bool) or not isinstance(n_sampled, numbers.Integral) \
                or not 1 <= n_sampled <= d:
            raise ValueError(f"n_sampled must be an integer in [1, {d}], got {n_sampled!r}.")
        self.n_sampled = int(n_sampled)
        if base == "duchi" and grid_size is not None:
            raise ValueError(f"grid_size applies to the Piecewise grid; base='duchi' has none, "
                             f"got grid_size={grid_size!r}.")
        extra = {} if grid_size is None else {"grid_size": grid_size}
        # One unit-scale randomizer serves every attribute (values are mapped per column).
        self.value_epsilon = split_budget(self.epsilon, self.n_sampled)
        self.randomizer = MEAN_MECHANISMS[base](self.value_epsilon, **extra)
        for j, pair in enumerate(self.bounds):
            check_resolution(pair, self.randomizer.law.cells if base == "duchi"
                             else self.randomizer._params()["grid_size"], f"bounds[{j}]")

    @property
    def n_attributes(self):
        """Number of attributes ``d``."""
        return len(self.bounds)

    def grid_spec(self):
        """The budget of each value and the integers of the base randomizer's law."""
        return {"value_epsilon": self.value_epsilon, "base": self.randomizer.grid_spec()}

    def to_dict(self):
        """A JSON-ready specification (rebuilt by :meth:`from_dict`)."""
        grid_size = self.randomizer._params().get("grid_size")
        return {"version": SPEC_VERSION, "mechanism": self.kind, "epsilon": self.epsilon,
                "bounds": [list(pair) for pair in self.bounds],
                "params": {"base": self.base, "n_sampled": self.n_sampled,
                           "grid_size": grid_size},
                "grid": self.grid_spec()}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field."""
        check_spec_header(spec, cls.kind, SPEC_VERSION, "sampled-mean")
        params = spec.get("params")
        if not isinstance(params, dict) or set(params) != {"base", "n_sampled", "grid_size"}:
            raise ValueError(f"a sampled-mean specification has params 'base', 'n_sampled' "
                             f"and 'grid_size', got {params!r}.")
        if "epsilon" not in spec or not isinstance(spec.get("bounds"), list):
            raise ValueError("a sampled-mean specification needs 'epsilon' and 'bounds' (a "
                             "list of (low, high) pairs).")
        mechanism = cls(spec["epsilon"], spec["bounds"], base=params["base"],
                        n_sampled=params["n_sampled"], grid_size=params["grid_size"])
        _check_grid_spec(spec, mechanism.grid_spec(), cls.kind)
        return mechanism

    def _to_unit(self, X):
        """``u in [0, 1]`` of every entry of ``X`` (each column by its bounds, clamped)."""
        X = np.asarray(X)
        if X.ndim != 2 or X.shape[1] != self.n_attributes:
            raise ValueError(f"X must be an (n_users, {self.n_attributes}) array, got shape "
                             f"{X.shape}.")
        for j, pair in enumerate(self.bounds):
            check_values(X[:, j], pair, f"column {j} of X")
        low, high = np.array(self.bounds).T
        return np.clip((X.astype(float) - low) / (high - low), 0.0, 1.0)

    def sample_attributes(self, n_users, rng):
        """``(n_users, k)`` attribute indices, each row ``k`` distinct attributes drawn
        uniformly without replacement in random order, from exact uniform integers: the
        ``i``-th is the ``r``-th attribute not yet drawn, ``r`` uniform in ``[0, d - i)``
        (a loop over ``k``, not over users)."""
        d, k = self.n_attributes, self.n_sampled
        chosen = np.empty((n_users, k), dtype=np.int64)
        for i in range(k):
            pick = uniform_below(rng, d - i, n_users)
            # Skip the attributes already drawn, in increasing order.
            for column in np.sort(chosen[:, :i], axis=1).T:
                pick += column <= pick
            chosen[:, i] = pick
        return chosen

    def randomize(self, X, rng):
        """``(attributes, reports)``: per user the ``k`` sampled attribute indices (int) and
        their unit-scale reports (the base randomizer's format), each of shape ``(n, k)``."""
        u = self._to_unit(X)
        n, d = u.shape
        attributes = self.sample_attributes(n, rng)
        chosen = np.take_along_axis(u, attributes, axis=1)
        reports = self.randomizer._randomize_unit(chosen.ravel(), rng).reshape(chosen.shape)
        return attributes.astype(np.min_scalar_type(d - 1)), reports

    def exact_law(self, record):
        """The exact law of one user's whole report for a record of ``d`` values: outputs are
        rows ``[attributes..., reports...]`` (floats) over every ordered choice of ``k``
        attributes and every combination of base outputs (small ``d`` only)."""
        u = self._to_unit(np.asarray(record, dtype=float)[None, :])[0]
        d, k = self.n_attributes, self.n_sampled
        choices = list(itertools.permutations(range(d), k))
        laws = [self.randomizer._unit_law(float(x)) for x in u]
        check_law_size(len(choices) * len(laws[0].weights) ** k, self.kind)
        rows, weights = [], []
        for attributes in choices:
            parts = [laws[a] for a in attributes]
            for combination in itertools.product(*(range(len(law.weights)) for law in parts)):
                rows.append(list(attributes) + [float(law.outputs[o]) for law, o in
                                                zip(parts, combination, strict=True)])
                weight = 1
                for law, o in zip(parts, combination, strict=True):
                    weight *= int(law.weights[o])
                weights.append(weight)
        return ExactLaw(np.array(rows), weights, len(choices) * int(laws[0].total) ** k)

    def aggregate(self, reports):
        """``[N, sum y_1, ..., sum y_d]``: the number of users and each attribute's sum of
        reports (unit scale); a ValueError on an invalid report or attribute index."""
        attributes, values = (np.asarray(part) for part in reports)
        if attributes.ndim != 2 or attributes.shape != values.shape \
                or attributes.shape[1] != self.n_sampled:
            raise ValueError(f"reports must be two (n_users, {self.n_sampled}) arrays, got "
                             f"shapes {attributes.shape} and {values.shape}.")
        if attributes.dtype.kind not in "iu" or (attributes.size and (
                attributes.min() < 0 or attributes.max() >= self.n_attributes)):
            raise ValueError(f"report attributes must be indices in [0, {self.n_attributes}).")
        if self.n_sampled > 1 and (np.diff(np.sort(attributes, axis=1), axis=1) == 0).any():
            raise ValueError("a report names the same attribute twice (attributes are sampled "
                             "without replacement).")
        y = self.randomizer.report_values(self.randomizer.check_reports(values.ravel()))
        sums = np.bincount(attributes.ravel().astype(np.int64), weights=y,
                           minlength=self.n_attributes)
        return np.concatenate([[float(attributes.shape[0])], sums])

    def estimate_means(self, statistic):
        """Unbiased estimates of every attribute's mean, in value units."""
        statistic = np.asarray(statistic, dtype=float)
        if statistic.shape != (self.n_attributes + 1,) or not np.isfinite(statistic).all():
            raise ValueError(f"the statistic holds {self.n_attributes + 1} finite numbers "
                             f"(N and each attribute's sum), got {statistic!r}.")
        n = statistic[0]
        magnitude = self.randomizer.report_magnitude()
        if n < 1 or n != math.floor(n) or (np.abs(statistic[1:]) > n * magnitude
                                           * (1 + 1e-12)).any():
            raise ValueError(f"the statistic {statistic.tolist()!r} cannot come from valid "
                             "reports.")
        low, high = np.array(self.bounds).T
        unit = self.n_attributes / (self.n_sampled * n) * statistic[1:]
        return (low + high) / 2 + (high - low) / 2 * unit

    def unit_variance(self, t):
        """Per-user variance of each attribute's unit-scale estimate ``(d/k) y 1[sampled]``
        for unit values ``t`` (any shape)."""
        ratio = self.n_attributes / self.n_sampled
        t = np.asarray(t, dtype=float)
        return ratio * (self.randomizer.unit_variance(t) + t ** 2) - t ** 2

    def worst_case_variance(self):
        """Largest per-user variance of one attribute's mean estimate, in squared units of
        the widest attribute."""
        t = 2.0 * self.randomizer._probe_points() - 1.0
        half = max((high - low) / 2 for low, high in self.bounds)
        return float(self.unit_variance(t).max()) * half ** 2
