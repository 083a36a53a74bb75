r"""Bassily's protocols for linear queries under LDP (AISTATS 2019): Gaussian randomizers.

The workload is a ``d x n`` matrix ``A`` (``d`` queries over ``n`` domain cells); ``a_u`` is
its column for cell ``u`` and ``r = max_u ||a_u||_2``. Both mechanisms send one real vector
of length ``d`` per user (real vectors are inherent to these protocols), so reports are an
``(N, d)`` float64 array. This module holds the calibration of the Gaussian mechanism, the
parts both randomizers share and the (eps, delta) one; the pure eps-LDP one (rejection
sampling) is in :mod:`.gaussian_rejection`.

Approximate LDP: :class:`GaussianMechanism` (Algorithms 1-2)
--------------------------------------------------------------
A user of type ``u`` reports ``a_u + g``, ``g ~ N(0, sigma^2 I_d)``. Any two inputs differ by
at most ``2 r`` in L2, so this is the Gaussian mechanism with sensitivity ``Delta = 2 r``.

* ``calibration="analytic"`` (default): the smallest sigma for which it is (eps, delta)-DP,
  from the exact condition of Balle & Wang (ICML 2018, Theorem 8)::

      Phi(Delta / (2 sigma) - eps sigma / Delta) - e^eps Phi(-Delta / (2 sigma) - eps sigma / Delta)
          <= delta,

  solved by bisection on sigma (the left side decreases in sigma).
* ``calibration="classic"``: the formula of the paper, ``sigma = 2 r sqrt(2 ln(2/delta)) /
  eps``. Decision between ``2/delta`` and ``1.25/delta`` (the references differ): ``2/delta``
  (the paper's, and the LM12 convention); it is the larger sigma of the two, and on every
  setting we checked with ``eps <= 1`` it is at least the analytic sigma, so it is private.

The statistic is ``[sum of reports (d), N]``; ``E[sum] = A x``. The estimate is the
minimum-norm solution ``x_hat = A^+ sum`` (solves with ``A^T A`` or ``A A^T``, whichever is
smaller; never an explicit inverse). ``W x_hat`` is unbiased for every ``W`` in the row space
of ``A`` (in particular ``A`` itself), and its covariance is ``N sigma^2 W A^+ A^{+T} W^T``,
the same for every user: ``z_u = sigma^2 ||W A^+||_F^2``.

Projection (Bassily's Algorithm 2, step 3): the noisy answers can be projected onto the
symmetric convex hull of the workload's columns, a numerical program that lives in
:mod:`sklearn_ldp.optimize.hull` and is applied by :mod:`sklearn_ldp.postprocess`
(:func:`~sklearn_ldp.postprocess.projected_answers`, ``postprocess="hull"``).

Pure numpy/scipy; nothing here knows about scikit-learn or pandas.
"""

import math

import numpy as np
from scipy import special

from ..._validation import check_delta, check_epsilon, check_positive_int
from .._base.counts import MAX_REPORTS
from .._base.exact import TABLE_PRECISION, bernoulli_below
from .._base.influence import ReportInfluence
from .._base.mechanism import (
    Mechanism,
    ReportCheck,
    check_type_counts,
    check_type_indices,
    check_workload_matrix,
    chunks,
    register,
)
from ..central.discrete_gaussian import (
    audit_reach,
    discrete_gaussian_law,
    sample_discrete_gaussian,
    smallest_sigma2_within,
    zcdp_delta_within,
)
from ..factorization.mechanism import PseudoInverse, workload_in_row_space

# Users randomized at once (bounds the temporaries of randomize beyond the output itself).
RANDOMIZE_CHUNK = 2**16

# A report is refused when the randomizer produces a value as far out with probability below
# this (per report, all coordinates together): honest reports pass except once in 10^12,
# while a crafted report can move an estimate only a bounded amount.
REPORT_TAIL_PROBABILITY = 1e-12


def tail_multiplier(dimension, probability=REPORT_TAIL_PROBABILITY, density_factor=1.0):
    """``z`` with ``P(some |g_i| > sigma z) <= probability`` for the ``dimension`` coordinates
    of a report whose density is at most ``density_factor`` times that of
    ``N(0, sigma^2 I)``.

    By the union bound over the coordinates, ``dimension * density_factor * 2 Phi(-z)`` is
    set equal to ``probability``.

    Examples
    --------
    >>> round(float(tail_multiplier(1)), 3), round(float(tail_multiplier(1000)), 3)
    (7.131, 8.027)
    """
    return float(-special.ndtri(probability / (2.0 * dimension * density_factor)))


# ---------------------------------------------------------------------- the public lattice
# Version 2 of both Gaussian kinds: reports are points of the public lattice h Z^d,
# ``h = 2^-lattice_exponent``, drawn exactly; the specification names the lattice's integers.
GAUSSIAN_SPEC_VERSION = 2

# The noise is at least 2^12 lattice steps (sigma2 >= 2^24 in lattice units): the lattice is
# far finer than the noise, and at most about 2^13 steps, so the exact discrete Gaussian
# sampler stays in its vectorized int64 path (it needs sigma below about 13000 steps).
LATTICE_SIGMA_BITS = 12
MIN_LATTICE_SIGMA2 = 2 ** (2 * LATTICE_SIGMA_BITS)

# Lattice coordinates of the workload stay below this (every report k h with |k| < 2^53 is an
# exact double, with room for the noise).
_MAX_LATTICE_COORDINATE = 2.0**50


def lattice_coordinates(A, exponent):
    """Integer lattice coordinates of the workload's entries for the step ``h = 2^-exponent``.

    ``A / h = A 2^exponent`` is exact in float64 (a power-of-two scaling, checked by the round
    trip), so ``x = floor + f`` with ``floor`` an integer and ``f`` in ``[0, 1)`` exact too.
    A user rounds ``x`` up with probability ``numerator / 2^52`` and down otherwise,
    ``numerator = rint(f 2^52)`` (exact when ``|x| >= 1``, the usual case; otherwise within
    ``2^-53`` of ``f``), so the centre's mean is ``floor + numerator / 2^52`` exactly: the
    estimator uses that realised column (:func:`realized_columns`).

    Parameters
    ----------
    A : ndarray of float of shape (d, n)
        The workload.
    exponent : int
        The lattice exponent ``m`` (``h = 2^-m``).

    Returns
    -------
    floor : ndarray of int64 of shape (d, n)
    numerators : ndarray of int64 of shape (d, n)
        Each in ``[0, 2^52]``.

    Raises
    ------
    ValueError
        If ``A 2^exponent`` is not exact or its entries reach ``2^50`` (the exponent does
        not fit the workload).

    Examples
    --------
    >>> floor, numerators = lattice_coordinates(np.array([[0.75, -1.25]]), 1)
    >>> floor.tolist(), (numerators / 2**52).tolist()
    ([[1, -3]], [[0.5, 0.5]])
    """
    if isinstance(exponent, bool) or not isinstance(exponent, (int, np.integer)):
        raise ValueError(f"the lattice exponent must be an integer, got {exponent!r}.")
    exponent = int(exponent)
    if abs(exponent) > 1100:  # beyond any double's exponent range: nothing fits
        raise ValueError(f"the lattice exponent {exponent} is outside [-1100, 1100].")
    with np.errstate(over="ignore"):
        X = np.ldexp(A, exponent)
    if (not np.all(np.isfinite(X)) or np.abs(X).max() >= _MAX_LATTICE_COORDINATE
            or not np.array_equal(np.ldexp(X, -exponent), A)):
        raise ValueError(f"the lattice exponent {exponent} does not fit the workload: its "
                         f"entries times 2^{exponent} must be exact doubles below 2^50.")
    floor = np.floor(X)
    numerators = np.rint(np.ldexp(X - floor, TABLE_PRECISION)).astype(np.int64)
    return floor.astype(np.int64), numerators


def realized_columns(floor, numerators, exponent):
    """The mean report ``h (floor + numerator / 2^52)`` of each workload entry (float64).

    Examples
    --------
    >>> realized_columns(np.array([[1]]), np.array([[2**51]]), 1).tolist()
    [[0.75]]
    """
    return np.ldexp(floor + np.ldexp(numerators.astype(float), -TABLE_PRECISION), -exponent)


def centre_sensitivity2(floor, numerators):
    """An exact integer bound on ``||c - c'||^2`` over any two rounded centres (any inputs).

    A coordinate of a centre is ``floor`` or ``floor + 1`` (the latter only when the
    numerator is positive, the former only when it is below ``2^52``). Two bounds hold, and
    the smaller is returned: ``(2 R)^2`` with ``R^2 = max_u sum_i max(lo_ui^2, hi_ui^2)``
    (the triangle inequality), and ``sum_i (max_u hi_ui - min_u lo_ui)^2`` (per coordinate).

    Examples
    --------
    >>> centre_sensitivity2(np.array([[3, 0], [0, 3]]), np.zeros((2, 2), dtype=np.int64))
    18
    """
    lowest = floor + (numerators == 2**TABLE_PRECISION)
    highest = floor + (numerators > 0)
    largest = np.maximum(np.abs(lowest), np.abs(highest))
    ranges = highest.max(axis=1) - lowest.min(axis=1)
    if largest.max() < 2**20 and floor.shape[0] < 2**22:  # int64 sums cannot overflow
        radius2 = int((largest * largest).sum(axis=0).max())
        box = int((ranges * ranges).sum())
    else:  # Python integers: exact whatever the sizes
        big = largest.astype(object)
        radius2 = int(max((big * big).sum(axis=0)))
        box = int(sum(int(r) ** 2 for r in ranges))
    return min(4 * radius2, box)


def gaussian_lattice(A, epsilon, delta, sigma_estimate):
    """``(exponent, sensitivity2, sigma2)`` of the exact Gaussian randomizer on ``A``.

    For an exponent ``m`` the centres' squared sensitivity ``Delta^2`` (lattice units,
    :func:`centre_sensitivity2`) is exact and ``sigma2(m)`` is the smallest integer that
    :func:`~.discrete_gaussian.zcdp_delta_within` accepts. The exponent is the one with
    ``sigma2(m) >= 2^24`` and ``sigma2(m - 1) < 2^24`` (a local rule, so anyone can check a
    given exponent; the float ``sigma_estimate`` only gives the search its start).

    Examples
    --------
    >>> exponent, sensitivity2, sigma2 = gaussian_lattice(np.eye(2), 1.0, 1e-6, 10.0)
    >>> 2**24 <= sigma2 < 2**27, sensitivity2 == 2 * 4**exponent
    (True, True)
    """
    cache = {}

    def calibrated(m):
        if m not in cache:
            sensitivity2 = centre_sensitivity2(*lattice_coordinates(A, m))
            cache[m] = (sensitivity2, smallest_sigma2_within(sensitivity2, epsilon, delta))
        return cache[m]

    m = LATTICE_SIGMA_BITS + 1 - math.frexp(sigma_estimate)[1]
    while calibrated(m)[1] < MIN_LATTICE_SIGMA2:
        m += 1
    while calibrated(m - 1)[1] >= MIN_LATTICE_SIGMA2:
        m -= 1
    return (m, *calibrated(m))


def check_gaussian_lattice(A, epsilon, delta, lattice, kind="gaussian"):
    """Refuse a ``lattice`` (specification field) other than the one the rule gives, or whose
    integers fail the exact (epsilon, delta) check; return ``(exponent, sensitivity2,
    sigma2)``.

    Examples
    --------
    >>> lattice = dict(zip(("exponent", "sensitivity2", "sigma2"),
    ...                    gaussian_lattice(np.eye(2), 1.0, 1e-6, 10.0)))
    >>> check_gaussian_lattice(np.eye(2), 1.0, 1e-6, lattice)[0] == lattice["exponent"]
    True
    """
    if not isinstance(lattice, dict) or set(lattice) != {"exponent", "sensitivity2", "sigma2"}:
        raise ValueError(f"the lattice of the {kind!r} specification must be an object with "
                         f"the integers 'exponent', 'sensitivity2' and 'sigma2', got "
                         f"{lattice!r}.")
    for key, value in lattice.items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"lattice[{key!r}] of the {kind!r} specification must be an "
                             f"integer, got {value!r}.")
    m = lattice["exponent"]
    try:
        sensitivity2 = centre_sensitivity2(*lattice_coordinates(A, m))
    except (ValueError, OverflowError, TypeError) as exc:
        raise ValueError(f"lattice['exponent'] of the {kind!r} specification is {m!r}: "
                         f"{exc}") from None
    if lattice["sensitivity2"] != sensitivity2:
        raise ValueError(f"lattice['sensitivity2'] of the {kind!r} specification is "
                         f"{lattice['sensitivity2']!r}, but the workload on the lattice 2^-{m} "
                         f"gives {sensitivity2}: an edited lattice is refused.")
    sigma2 = lattice["sigma2"]
    if sigma2 < 1 or not zcdp_delta_within(sensitivity2, sigma2, epsilon, delta):
        raise ValueError(f"lattice['sigma2'] of the {kind!r} specification is {sigma2!r}: "
                         f"the discrete Gaussian with it is not ({epsilon}, {delta})-LDP for "
                         f"the squared sensitivity {sensitivity2} (exact check).")
    smallest = smallest_sigma2_within(sensitivity2, epsilon, delta)
    if sigma2 != smallest:
        raise ValueError(f"lattice['sigma2'] of the {kind!r} specification is {sigma2!r}, but "
                         f"its epsilon, delta and workload give {smallest}: an edited lattice "
                         "is refused.")
    # The exponent's rule, checked locally: sigma2 >= 2^24 here, < 2^24 one step coarser.
    coarser = smallest_sigma2_within(centre_sensitivity2(*lattice_coordinates(A, m - 1)),
                                     epsilon, delta)
    if sigma2 < MIN_LATTICE_SIGMA2 or coarser >= MIN_LATTICE_SIGMA2:
        raise ValueError(f"lattice['exponent'] of the {kind!r} specification is {m!r}, but the "
                         f"rule (sigma2 >= 2^24 on it, < 2^24 on 2^-(m - 1)) gives sigma2 = "
                         f"{sigma2} and {coarser}: an edited lattice is refused.")
    return m, sensitivity2, sigma2


def _lattice_box(low, high, exponent):
    """``(low, high)`` rounded outward to the lattice ``2^-exponent Z``: the box's corners
    are then valid reports (exact: power-of-two scalings and floor/ceil)."""
    return (np.ldexp(np.floor(np.ldexp(low, exponent)), -exponent),
            np.ldexp(np.ceil(np.ldexp(high, exponent)), -exponent))


def on_lattice(block, exponent):
    """Whether each entry of ``block`` is an integer multiple of ``2^-exponent`` (NaN: False).

    Examples
    --------
    >>> on_lattice(np.array([0.25, 0.3, np.nan]), 2).tolist()
    [True, False, False]
    """
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = np.ldexp(block, exponent)
        return np.isfinite(scaled) & (scaled == np.floor(scaled))


# ---------------------------------------------------------------------- calibration
def gaussian_delta(sigma, sensitivity, epsilon):
    """Smallest delta for which ``f(x) + N(0, sigma^2 I)`` is (epsilon, delta)-DP.

    The exact condition of Balle & Wang (2018, Theorem 8) for L2 sensitivity ``Delta``::

        Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta)

    The second term is evaluated in log space (``log_ndtr``) so a large ``eps`` does not
    overflow.

    Examples
    --------
    >>> round(gaussian_delta(1.0, 1.0, 1.0), 4)
    0.1269
    """
    ratio = sensitivity / sigma
    first = special.ndtr(ratio / 2 - epsilon / ratio)
    second = np.exp(epsilon + special.log_ndtr(-ratio / 2 - epsilon / ratio))
    return float(max(first - second, 0.0))


def analytic_gaussian_sigma(sensitivity, epsilon, delta, rtol=1e-12):
    """The smallest sigma with ``gaussian_delta(sigma, sensitivity, epsilon) <= delta``.

    Bisection in ``log(sigma)`` between a sigma that fails and one that holds; returns the
    upper (private) end once the bracket is narrower than ``rtol``.

    Examples
    --------
    >>> sigma = analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    >>> round(sigma, 3), gaussian_delta(sigma, 1.0, 1.0) <= 1e-5
    (3.731, True)
    """
    high = sensitivity * max(1.0, math.sqrt(2 * math.log(2 / delta)) / epsilon)
    while gaussian_delta(high, sensitivity, epsilon) > delta:
        high *= 2.0
    low = high / 2.0
    while gaussian_delta(low, sensitivity, epsilon) <= delta:
        high, low = low, low / 2.0
    while high / low - 1.0 > rtol:
        middle = math.sqrt(low * high)
        if gaussian_delta(middle, sensitivity, epsilon) <= delta:
            high = middle
        else:
            low = middle
    return high


def classic_gaussian_sigma(sensitivity, epsilon, delta):
    """The paper's ``sigma = Delta sqrt(2 ln(2 / delta)) / eps`` (see the module on 2/delta).

    Examples
    --------
    >>> round(classic_gaussian_sigma(2.0, 1.0, 1e-5), 3)
    9.882
    """
    return sensitivity * math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon


# ---------------------------------------------------------------------- shared linear algebra
class _MinimumNorm:
    """Minimum-norm solutions with a ``d x n`` matrix ``M``: ``M^+ b`` by solves.

    Works with the smaller of the Gram matrices ``M^T M`` (``n x n``, tall ``M``) and
    ``M M^T`` (``d x d``, wide ``M``), factored once by :class:`PseudoInverse` (Cholesky
    when positive definite, else an eigendecomposition that drops the null space).
    """

    def __init__(self, M):
        self.M = M
        d, n = M.shape
        self.tall = d >= n
        self._solver = PseudoInverse(M.T @ M if self.tall else M @ M.T)
        self.rank = self._solver.rank
        self._pinv = None

    def solve(self, b):
        """``M^+ b`` for a vector (or matrix of columns) ``b`` of length ``d``."""
        if self.tall:
            return self._solver.solve(self.M.T @ b)
        return self.M.T @ self._solver.solve(b)

    @property
    def pinv(self):
        """``M^+`` (``n x d``), computed once by solves, for the variance formulas."""
        if self._pinv is None:
            if self.tall:
                self._pinv = self._solver.solve(self.M.T)
            else:
                self._pinv = self._solver.solve(self.M).T
            self._pinv.setflags(write=False)
        return self._pinv

    @property
    def null_space_dim(self):
        return self.M.shape[1] - self.rank

    def in_row_space(self, rows):
        """Whether every row of ``rows`` (width ``n``) lies in the row space of ``M``."""
        rows = np.atleast_2d(np.asarray(rows, dtype=float))
        if self.tall:
            return workload_in_row_space(rows, self._solver.null_space)
        if self.null_space_dim == 0:
            return True
        residual = rows - (rows @ self.pinv) @ self.M
        return np.linalg.norm(residual) <= 1e-8 * max(np.linalg.norm(rows), 1.0)


def _as_workload_matrix(workload, n_inputs):
    """The strategy workload ``A`` (``d x n``) as a finite float64 array, checked."""
    if workload is None:
        workload = np.eye(n_inputs)
    # A sklearn_ldp Workload (or a scipy sparse matrix) densifies on request, size-guarded.
    matrix = workload.toarray() if hasattr(workload, "toarray") else workload
    try:
        A = np.array(matrix, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"workload must be a numeric d x n matrix: {exc}") from None
    if A.ndim == 1:
        A = A[np.newaxis, :]
    if A.ndim != 2 or A.shape[0] == 0:
        raise ValueError(f"workload must be a 2-D d x n matrix, got shape {A.shape}.")
    if A.shape[1] != n_inputs:
        raise ValueError(f"the workload has {A.shape[1]} columns but the domain has {n_inputs} "
                         "cells.")
    if not np.all(np.isfinite(A)):
        raise ValueError("the workload contains NaN or infinite entries.")
    norms = np.sqrt((A * A).sum(axis=0))
    if norms.max() == 0.0:
        raise ValueError("the workload is all zeros: there is nothing to measure.")
    A.setflags(write=False)
    return A


class _VectorReportMechanism(Mechanism):
    """Common parts of the two Gaussian mechanisms: workload, reports of width ``d``."""

    spec_version = GAUSSIAN_SPEC_VERSION

    def _setup_workload(self, n_inputs, workload):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.A = _as_workload_matrix(workload, self.n_inputs)
        self.n_queries = self.A.shape[0]
        self.column_norms = np.sqrt((self.A * self.A).sum(axis=0))
        self.radius = float(self.column_norms.max())

    def _check_report_shape(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.n_queries:
            raise ValueError(
                f"reports of the {self.kind!r} mechanism are real vectors of length "
                f"{self.n_queries} (one row per user, an (N, {self.n_queries}) array); got an "
                f"array of shape {reports.shape}: they come from another mechanism or workload."
            )
        if not np.issubdtype(reports.dtype, np.floating):
            raise ValueError(
                f"reports of the {self.kind!r} mechanism are float vectors, got dtype "
                f"{reports.dtype}."
            )
        return reports

    def report_bounds(self):
        """``(low, high)``: per coordinate, the range outside which a report is refused."""
        raise NotImplementedError

    def _box_validity(self, reports, bottom_allowed):
        """:class:`ReportCheck`: rows that are finite and inside :meth:`report_bounds` (or,
        when ``bottom_allowed``, entirely NaN: the "bottom" report)."""
        reports = self._check_report_shape(reports)
        low, high = self.report_bounds()
        valid = np.empty(reports.shape[0], dtype=bool)
        for rows in chunks(reports.shape[0]):
            block = reports[rows]
            # NaN compares False, so a NaN entry is never "inside": only whole NaN rows pass.
            inside = np.all((block >= low) & (block <= high)
                            & on_lattice(block, self.lattice_exponent), axis=1)
            if bottom_allowed:
                inside |= np.all(np.isnan(block), axis=1)
            valid[rows] = inside
        rule = (f"finite vectors of length {self.n_queries} with every coordinate i a "
                f"multiple of 2^-{self.lattice_exponent} in "
                f"[low_i, high_i] of report_bounds() ([{low[0]:.6g}, {high[0]:.6g}] for i = 0; "
                f"honest noise leaves this box with probability below "
                f"{REPORT_TAIL_PROBABILITY:g})")
        if bottom_allowed:
            rule += (", or a row of NaN (bottom); rows with some NaN or infinite entries are "
                     "neither")
        return ReportCheck(reports, valid, rule)

    def _check_statistic(self, statistic, extra):
        """The statistic as float64, or a ValueError: wrong length, non-finite entries, a
        number of reports that is not an integer in ``[0, 2^62]``, or sums that ``N`` reports
        inside :meth:`report_bounds` cannot reach."""
        statistic = np.asarray(statistic)
        if statistic.shape != (self.n_queries + extra,):
            raise ValueError(
                f"the statistic of the {self.kind!r} mechanism has {self.n_queries + extra} "
                f"entries, got shape {statistic.shape}."
            )
        if not (np.issubdtype(statistic.dtype, np.floating)
                or np.issubdtype(statistic.dtype, np.integer)):
            raise ValueError(f"the statistic of the {self.kind!r} mechanism holds numbers, got "
                             f"dtype {statistic.dtype}.")
        statistic = statistic.astype(float)
        if not np.all(np.isfinite(statistic)):
            index = int(np.flatnonzero(~np.isfinite(statistic))[0])
            raise ValueError(f"the statistic of the {self.kind!r} mechanism must be finite; "
                             f"entry {index} is {statistic[index].item()!r}.")
        counts = statistic[self.n_queries:]
        bad = (counts < 0) | (counts > MAX_REPORTS) | (counts != np.round(counts))
        if np.any(bad):
            index = self.n_queries + int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"the statistic of the {self.kind!r} mechanism ends with counts of reports, "
                f"integers in [0, 2^62]; entry {index} is {statistic[index].item()!r}.")
        # Every report lies in the box, so the sum of the m reports it adds lies in m times it
        # (up to the rounding of a float sum).
        summed = counts[0]
        low, high = self.report_bounds()
        slack = 1e-9 * summed * np.maximum(np.abs(low), np.abs(high)) + 1e-9
        outside = (statistic[:self.n_queries] < summed * low - slack) | (
            statistic[:self.n_queries] > summed * high + slack)
        if np.any(outside):
            index = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"the statistic of the {self.kind!r} mechanism sums {int(summed)} reports, but "
                f"coordinate {index} of the sum is {statistic[index].item()!r}, outside "
                f"[{summed * low[index]:.6g}, {summed * high[index]:.6g}] (reports are bounded "
                "per coordinate): the statistic is corrupted or crafted.")
        return statistic

    def n_reports(self, statistic):
        return int(self._check_statistic(statistic, self._statistic_extra)[-1])

    def estimate(self, statistic):
        # The minimum-norm x_hat = M^+ sum (M the measured matrix: realized_A, or
        # A diag(kappa) for the rejection mechanism): unbiased for every workload in the row
        # space of M (supports).
        statistic = self._check_statistic(statistic, self._statistic_extra)
        return self._solver.solve(statistic[:self.n_queries])

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`; the ``lattice`` must pass the kind's exact checks
        and be the one its epsilon, delta and params give (an edited one is a ValueError
        naming the field).

        Parameters
        ----------
        spec : dict
            A specification written by :meth:`to_dict` (possibly by another party).

        Returns
        -------
        mechanism
            The mechanism the specification describes.
        """
        mechanism = cls(spec["n_inputs"], spec["epsilon"], **spec.get("params", {}))
        mechanism._check_lattice(spec.get("lattice"))
        return mechanism

    def to_dict(self):
        """The specification (version 2): the kind's fields and its ``lattice`` integers.

        Returns
        -------
        dict
            JSON-serializable specification, read back by :meth:`from_dict`.
        """
        return {**super().to_dict(), "version": GAUSSIAN_SPEC_VERSION,
                "lattice": self.lattice_spec()}

    def _influence_from_coefficients(self, coefficients):
        """:class:`~.base.ReportInfluence` of the answers ``c . r`` (one row ``c`` per query)
        over the reports ``r`` in the box of :meth:`report_bounds`: a linear function is
        extreme at a corner, coordinate by coordinate."""
        low, high = self.report_bounds()
        at_low, at_high = coefficients * low, coefficients * high
        positive = coefficients > 0
        return ReportInfluence(
            np.minimum(at_low, at_high).sum(axis=1), np.maximum(at_low, at_high).sum(axis=1),
            np.where(positive, low, high), np.where(positive, high, low))

    def report_influence(self, workload_matrix):
        # A kept report ``r`` adds ``r`` to the sum, so ``W x_hat`` moves by ``W M^+ r``
        # (``M`` the measured matrix), extreme at a corner of the box of report_bounds
        # (a bottom report of the rejection mechanism moves nothing).
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        return self._influence_from_coefficients(W @ self._solver.pinv)

    def supports(self, workload_matrix):
        # Every query in the row space of the measured matrix.
        return self._solver.in_row_space(self._support_rows(workload_matrix))

    def supports_gram(self, gram):
        # The workload of Gram ``W^T W`` in that row space.
        return self._solver.in_row_space(self._dense_gram(gram))

    @property
    def null_space_dim(self):
        return self._solver.null_space_dim

    def fingerprint(self):
        params = {key: value for key, value in self._scalar_params().items()}
        return (self.kind, self.epsilon, self.A.shape, hash(self.A.tobytes()),
                tuple(sorted(params.items())))

    def __eq__(self, other):
        return (type(other) is type(self) and self.fingerprint() == other.fingerprint()
                and np.array_equal(self.A, other.A))

    def __hash__(self):
        return hash(self.fingerprint())

    @property
    def params(self):
        """Constructor parameters as plain JSON values (the workload as nested lists)."""
        return {"workload": self.A.tolist(), **self._scalar_params()}

    def __repr__(self):
        params = "".join(f", {key}={value!r}" for key, value in self._scalar_params().items())
        return (f"{type(self).__name__}(n_inputs={self.n_inputs}, epsilon={self.epsilon}, "
                f"workload=<{self.n_queries} x {self.n_inputs}>{params})")


# ---------------------------------------------------------------------- (eps, delta): Gaussian
@register
class GaussianMechanism(_VectorReportMechanism):
    """Bassily's Gaussian randomizer on a public lattice, exactly (eps, delta)-LDP.

    For a workload of ``d`` linear queries ``A`` (``d x n``), a user of cell ``u`` sends the
    column ``a_u`` (the answers of the queries on their record) plus noise; the server sums
    the reports and returns the minimum-norm ``x_hat = A^+ sum``, unbiased for every query in
    the row space of ``A``.

    Exact sampling (issue 26). Reports are points ``k h`` of the public lattice ``h Z^d``,
    ``h = 2^-m`` (exact doubles): the user rounds ``a_u / h`` (exact in float64) to an
    integer centre ``c`` at random, up with probability ``numerator / 2^52`` (an exact
    dyadic Bernoulli, so ``E[c] = a_u / h`` up to ``2^-53``), then adds the exact discrete
    Gaussian ``N_Z(0, sigma2)^d`` (CKS20, integer arithmetic only). No float decides which
    reports an input can reach.

    Privacy. Any two centres differ by at most ``Delta`` in L2, bounded exactly on the
    integers (:func:`centre_sensitivity2`, at most ``(2 R)^2`` lattice units); the discrete
    Gaussian is then ``Delta^2 / (2 sigma2)``-zCDP for each pair of centres (CKS20), hence
    (eps, delta)-DP by CKS20's conversion evaluated in 60-digit Decimal with safe-side
    rounding (:func:`~.discrete_gaussian.zcdp_delta_within`); the rounding makes the report a
    mixture over centres, and the hockey-stick divergence is jointly convex, so the bound
    holds for the mixture. ``sigma2`` is the smallest integer that passes; the lattice
    exponent keeps ``sigma2`` in ``[2^24, 2^26]`` (the noise is 4096 to 8192 lattice steps).
    The constructor, ``from_dict`` and the client re-run the check on the specification's
    integers.

    Cost of exactness. The zCDP conversion and the triangle-inequality sensitivity are not
    tight: the per-user variance is ``sigma2 h^2`` instead of the analytic Gaussian's
    ``sigma^2`` (Balle & Wang, sensitivity ``2 r``), a ratio :attr:`variance_cost` of 1.16,
    1.15 and 1.14 on the identity at ``eps`` = 0.5, 1, 2 (``delta = 1e-6``); on the prefix
    workload over 64 cells it is 0.28 (the exact box bound on the sensitivity is far below
    ``2 r`` there). ``benchmarks/bench_bassily.py`` and ``docs/bassily.md``.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n``.
    epsilon : float
        Privacy budget of one report, in ``(0, 50]``.
    delta : float in (0, 1)
        Required: the Gaussian randomizer is only approximately private.
    workload : array of shape (d, n), Workload or None, default=None
        The matrix ``A`` whose columns users send (default: the identity, i.e. the
        histogram). Stored as nested lists in ``params`` for JSON.

    Attributes
    ----------
    sigma : float
        Noise scale per coordinate, ``sqrt(sigma2) h``.
    radius : float
        ``r``, the largest column norm.
    lattice_exponent, sensitivity2, sigma2 : int
        The lattice ``h = 2^-lattice_exponent``, the exact squared sensitivity of the centres
        and the discrete Gaussian's ``sigma^2``, both in lattice units.
    realized_A : ndarray of shape (d, n)
        The mean report of each type (``A`` up to ``2^-53`` lattice steps); the estimator
        uses it.

    See Also
    --------
    GaussianRejectionMechanism : The pure epsilon-LDP randomizer of the same paper.
    FactorizationMechanism : Workload-adaptive strategies with pure epsilon-LDP.
    MatrixMechanism : The central-model counterpart (one trusted curator).

    References
    ----------
    .. [1] R. Bassily, "Linear queries estimation with local differential privacy", AISTATS
       2019 (PMLR 89), Algorithms 1-2.
    .. [2] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
       privacy", NeurIPS 2020 (the sampler, zCDP and its conversion, Corollary 13).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = GaussianMechanism(3, 1.0, delta=1e-6, workload=[[1, 1, 0], [0, 1, 1]])
    >>> reports = mechanism.randomize(np.array([0, 1, 2, 2]), np.random.default_rng(0))
    >>> reports.shape
    (4, 2)
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (3,)

    The two queries' answers for 10000 users (truly 8000 and 5000), and their standard
    deviation:

    >>> users = np.repeat([0, 1, 2], [5000, 3000, 2000])
    >>> statistic = mechanism.aggregate(mechanism.randomize(users, np.random.default_rng(0)))
    >>> (mechanism.A @ mechanism.estimate(statistic)).round(-1)
    array([9140., 4230.])
    >>> round(mechanism.sigma, 3), float(np.sqrt(10000 * mechanism.query_variance(
    ...     mechanism.A)[0, 0]).round(1))
    (6.408, 640.8)

    Reports are lattice points; the specification carries the lattice's integers:

    >>> mechanism.lattice_spec()
    {'exponent': 10, 'sensitivity2': 2097152, 'sigma2': 43052114}
    >>> bool(np.all(reports * 2**10 == np.round(reports * 2**10)))
    True
    """

    kind = "gaussian"

    def __init__(self, n_inputs, epsilon, delta=None, workload=None):
        self.epsilon = check_epsilon(epsilon)
        if delta is None:
            raise ValueError(
                "the Gaussian randomizer needs delta: it is (epsilon, delta)-LDP, not "
                "epsilon-LDP. Pass delta in (0, 1) (e.g. 1e-6), or use the pure-LDP "
                "'gaussian_pure' (rejection sampling) mechanism."
            )
        self.delta = check_delta(delta)
        self._setup_workload(n_inputs, workload)
        self.name = "gaussian"
        # The analytic (continuous) sigma only starts the search of the lattice.
        self.analytic_sigma = analytic_gaussian_sigma(2.0 * self.radius, self.epsilon,
                                                      self.delta)
        self.lattice_exponent, self.sensitivity2, self.sigma2 = gaussian_lattice(
            self.A, self.epsilon, self.delta, self.analytic_sigma)
        self._set_lattice()

    def _set_lattice(self):
        self.step = math.ldexp(1.0, -self.lattice_exponent)
        self.sigma = math.sqrt(self.sigma2) * self.step
        floor, numerators = lattice_coordinates(self.A, self.lattice_exponent)
        self._floor_t = np.ascontiguousarray(floor.T)  # rows: types
        self._numerators_t = np.ascontiguousarray(numerators.T)
        self._rounds = bool(numerators.any())
        self.realized_A = realized_columns(floor, numerators, self.lattice_exponent)
        self.realized_A.setflags(write=False)
        # Variance of the rounding bit of each entry (h^2 units), for the variance formulas.
        p = numerators / 2.0**TABLE_PRECISION
        self._rounding_variance = p * (1.0 - p)
        self._solver_cache = None
        self._tail = tail_multiplier(self.n_queries)

    @property
    def variance_cost(self):
        """``sigma^2`` of the exact randomizer over the analytic Gaussian's (Balle & Wang,
        sensitivity ``2 r``): the price of the exact check."""
        return self.sigma**2 / self.analytic_sigma**2

    _statistic_extra = 1

    def _scalar_params(self):
        return {"delta": self.delta}

    def lattice_spec(self):
        """The integers of the sampled law (the specification's ``lattice``).

        Returns
        -------
        dict
            ``exponent`` (``h = 2^-exponent``), ``sensitivity2`` and ``sigma2``.
        """
        return {"exponent": self.lattice_exponent, "sensitivity2": self.sensitivity2,
                "sigma2": self.sigma2}

    def _check_lattice(self, lattice):
        # The lattice the epsilon, delta and workload give, passing the exact check.
        check_gaussian_lattice(self.A, self.epsilon, self.delta, lattice, self.kind)
        if lattice != self.lattice_spec():
            raise ValueError(f"the lattice {lattice!r} of the 'gaussian' specification "
                             f"differs from {self.lattice_spec()!r}.")

    def report_bounds(self):
        """Per coordinate ``i``: ``[min_u A[i, u] - sigma z - 2h, max_u A[i, u] + sigma z +
        2h]``.

        A report is ``h (c + g)`` with ``c`` within one step of ``a_u / h`` and ``g`` discrete
        Gaussian, whose tail is at most the continuous one shifted by one step (CKS20): every
        coordinate lies in this range unless some ``|g_i| h > sigma z``, probability below
        ``REPORT_TAIL_PROBABILITY`` (``z`` from :func:`tail_multiplier`).

        Returns
        -------
        low, high : ndarray of shape (d,)
            The smallest and largest accepted value of each coordinate of a report.
        """
        spread = self.sigma * self._tail + 2.0 * self.step
        return _lattice_box(self.A.min(axis=1) - spread, self.A.max(axis=1) + spread,
                            self.lattice_exponent)

    @property
    def _solver(self):
        # Built on first server-side use: clients only need the lattice integers.
        if self._solver_cache is None:
            self._solver_cache = _MinimumNorm(self.realized_A)
        return self._solver_cache

    def exact_law(self, value):
        """The law of one report of a user of type ``value``, bracketed by integers (for
        :func:`~sklearn_ldp.mechanisms.audit_privacy`; one-query workloads).

        A report is ``h (c + g)``: the centre ``c`` is ``floor`` or ``floor + 1`` with the
        exact dyadic probabilities of the rounding bit, ``g`` the discrete Gaussian. The law
        lists the lattice points from ``audit_reach`` below the smallest centre of any type to
        as far above the largest (the same outputs for every type), each probability within
        integer brackets, and bounds the mass beyond (:func:`discrete_gaussian_law`).

        Parameters
        ----------
        value : int
            The user's type (a cell in ``[0, n)``).

        Returns
        -------
        BracketedLaw
            Outputs as report rows (``(m, 1)`` floats on the lattice).

        Raises
        ------
        ValueError
            If the workload has more than one query: the law of a ``d``-dimensional report
            has ``(2 R)^d`` lattice points (audit a one-query workload).

        Examples
        --------
        >>> mechanism = GaussianMechanism(2, 1.0, delta=1e-6, workload=[[1.0, -1.0]])
        >>> law = mechanism.exact_law(0)
        >>> law.outputs.shape[1], law.total_low <= law.total_high
        (1, True)
        """
        if self.n_queries != 1:
            raise ValueError(f"exact_law lists one-query workloads only (the law of a report "
                             f"of {self.n_queries} queries has too many lattice points); "
                             "audit a one-query workload.")
        u = int(check_type_indices(np.array([value]), self.n_inputs)[0])
        floor = self._floor_t[:, 0]
        reach = audit_reach(self.sigma2, self.delta)
        support = (int(floor.min()) - reach, int(floor.max()) + 1 + reach)
        up = int(self._numerators_t[u, 0])
        centre = int(floor[u])
        law = discrete_gaussian_law(self.sigma2, [centre, centre + 1],
                                    [2**TABLE_PRECISION - up, up], support)
        return law._replace(outputs=np.ldexp(law.outputs.astype(float),
                                             -self.lattice_exponent)[:, None])

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """One report per user: ``h (c + g)``, a lattice point, as an ``(N, d)`` float64 array.

        ``c`` is ``a_u / h`` rounded at random by exact dyadic Bernoulli bits, ``g`` the exact
        discrete Gaussian ``N_Z(0, sigma2)^d`` (integer arithmetic on random words only).

        Parameters
        ----------
        indices : array-like of int of shape (n_users,)
            The users' types (flat domain cells in ``[0, n)``).
        rng : numpy.random.Generator
            Source of randomness (the client's).

        Returns
        -------
        reports : ndarray of float64 of shape (n_users, d)
            One noisy column of the workload per user, on the lattice ``2^-m Z``.
        """
        indices = check_type_indices(indices, self.n_inputs)
        reports = np.empty((indices.shape[0], self.n_queries))
        for rows in chunks(indices.shape[0], RANDOMIZE_CHUNK):
            users = indices[rows]
            centres = sample_discrete_gaussian(self.sigma2, users.size * self.n_queries,
                                               rng).reshape(users.size, self.n_queries)
            centres += self._floor_t[users]
            if self._rounds:  # a workload on the lattice (the identity) rounds nothing
                centres += bernoulli_below(rng, self._numerators_t[users])
            np.multiply(centres, self.step, out=reports[rows])  # exact: h is a power of two
        return reports

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Finite rows inside :meth:`report_bounds` (width and dtype are checked first).
        return self._box_validity(reports, bottom_allowed=False)

    def aggregate(self, reports):
        """``[sum of the reports (d), N]`` as float64 (additive over chunks).

        Parameters
        ----------
        reports : ndarray of float of shape (n_reports, d)
            Reports as :meth:`randomize` returns them.

        Returns
        -------
        statistic : ndarray of float64 of shape (d + 1,)
            The sum of the reports, then their number; statistics of disjoint sets of
            reports add.

        Raises
        ------
        ValueError
            If some report is invalid (see :meth:`report_validity`).
        """
        reports = self.check_reports(reports)
        total = np.zeros(self.n_queries)
        for rows in chunks(reports.shape[0]):
            total += reports[rows].sum(axis=0)
        return np.append(total, float(reports.shape[0]))

    def simulate_statistic(self, type_counts, rng):
        """Draw of the statistic without one report per user: the rounded centres exactly
        (binomial counts of rounding up per type and coordinate), the sum of the ``N``
        discrete Gaussians as a normal of variance ``N sigma2`` rounded to the lattice (their
        difference in law is far below anything measurable at ``sigma2 >= 2^24``).

        Parameters
        ----------
        type_counts : array-like of int of shape (n_inputs,)
            Number of users of each type (at most ``2^62`` in all).
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        statistic : ndarray of float64 of shape (d + 1,)
            Distributed as ``aggregate(randomize(users))``.
        """
        counts = check_type_counts(type_counts, self.n_inputs)
        n_users = int(counts.sum())
        ups = rng.binomial(counts[:, None], self._numerators_t / 2.0**TABLE_PRECISION)
        centres = (self._floor_t * counts[:, None] + ups).sum(axis=0).astype(float)
        noise = np.rint(math.sqrt(n_users * self.sigma2) * rng.standard_normal(self.n_queries))
        return np.append(np.ldexp(centres + noise, -self.lattice_exponent), float(n_users))

    # ------------------------------------------------------------------ analysis
    def per_user_variance(self, gram):
        # z_u = sigma^2 tr(G A^+ A^{+T}) + h^2 sum_i p_ui (1 - p_ui) (A^{+T} G A^+)_ii: the
        # noise, and the rounding bits (p_ui the probability of rounding up; about 1e-8 of the
        # total); A is realized_A.
        gram = self._dense_gram(gram)
        pinv = self._solver.pinv
        per_coordinate = np.sum((gram @ pinv) * pinv, axis=0)  # (A^+T G A^+)_ii
        return (self.sigma**2 * float(per_coordinate.sum())
                + self.step**2 * (per_coordinate @ self._rounding_variance))

    def query_variance(self, workload_matrix):
        # z[i, u] = sigma^2 ||c_i||^2 + h^2 sum_j c_ij^2 p_ju (1 - p_ju), c = W A^+.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        squared = (W @ self._solver.pinv) ** 2
        return (self.sigma**2 * squared.sum(axis=1)[:, None]
                + self.step**2 * (squared @ self._rounding_variance))

