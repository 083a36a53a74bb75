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
import warnings

import numpy as np
from scipy import special

from ..._validation import check_delta, check_epsilon, check_positive_int
from .._base.counts import MAX_REPORTS
from .._base.mechanism import (
    Mechanism,
    ReportCheck,
    ReportInfluence,
    check_type_counts,
    check_type_indices,
    check_workload_matrix,
    chunks,
    register,
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
            inside = np.all((block >= low) & (block <= high), axis=1)
            if bottom_allowed:
                inside |= np.all(np.isnan(block), axis=1)
            valid[rows] = inside
        rule = (f"finite vectors of length {self.n_queries} with every coordinate i in "
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

    def supports(self, workload_matrix):
        """Whether every query (a query matrix or a workload) lies in the row space of the
        measured matrix.

        Parameters
        ----------
        workload_matrix : workload or array-like of shape (p, n_inputs)
            A query matrix or a workload.

        Returns
        -------
        bool
            True when every query's answer ``w . x_hat`` is unbiased.
        """
        return self._solver.in_row_space(self._support_rows(workload_matrix))

    def supports_gram(self, gram):
        """Whether the workload with Gram ``W^T W`` (operator or array) lies in that row
        space (same row space).

        Parameters
        ----------
        gram : Gram, workload or ndarray of shape (n_inputs, n_inputs)
            ``W^T W`` for the workload ``W``.

        Returns
        -------
        bool
            True when the workload can be answered without bias.
        """
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
    """Bassily's Gaussian randomizer: report ``a_u + N(0, sigma^2 I_d)``, (eps, delta)-LDP.

    For a workload of ``d`` linear queries ``A`` (``d x n``), a user of cell ``u`` sends the
    column ``a_u`` (the answers of the queries on their record) plus Gaussian noise; the
    server sums the reports and returns the minimum-norm ``x_hat = A^+ sum``, unbiased for
    every query in the row space of ``A``. The noise does not depend on ``n``, only on the
    largest column norm ``r`` of ``A`` (the sensitivity is ``2 r``).

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
    calibration : {"analytic", "classic"}, default="analytic"
        ``"analytic"``: smallest exact sigma (Balle & Wang); ``"classic"``: the paper's
        ``2 r sqrt(2 ln(2/delta)) / eps``.

    Attributes
    ----------
    sigma : float
        Noise standard deviation per coordinate.
    radius : float
        ``r``, the largest column norm; the sensitivity is ``2 r``.

    See Also
    --------
    GaussianRejectionMechanism : The pure epsilon-LDP randomizer of the same paper.
    FactorizationMechanism : Workload-adaptive strategies with pure epsilon-LDP.
    MatrixMechanism : The central-model counterpart (one trusted curator).

    References
    ----------
    .. [1] R. Bassily, "Linear queries estimation with local differential privacy", AISTATS
       2019 (PMLR 89), Algorithms 1-2.
    .. [2] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential
       privacy: analytical calibration and optimal denoising", ICML 2018 (the analytic
       calibration, Theorem 8).

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
    array([8660., 5460.])
    >>> round(mechanism.sigma, 3), float(np.sqrt(10000 * mechanism.query_variance(
    ...     mechanism.A)[0, 0]).round(1))
    (11.949, 1194.9)
    """

    kind = "gaussian"
    CALIBRATIONS = ("analytic", "classic")

    def __init__(self, n_inputs, epsilon, delta=None, workload=None, calibration="analytic"):
        self.epsilon = check_epsilon(epsilon)
        if delta is None:
            raise ValueError(
                "the Gaussian randomizer needs delta: it is (epsilon, delta)-LDP, not "
                "epsilon-LDP. Pass delta in (0, 1) (e.g. 1e-6), or use the pure-LDP "
                "'gaussian_pure' (rejection sampling) mechanism."
            )
        self.delta = check_delta(delta)
        if calibration not in self.CALIBRATIONS:
            raise ValueError(f"calibration must be one of {self.CALIBRATIONS}, got "
                             f"{calibration!r}.")
        self.calibration = calibration
        self._setup_workload(n_inputs, workload)
        self.name = "gaussian"
        sensitivity = 2.0 * self.radius
        if calibration == "analytic":
            self.sigma = analytic_gaussian_sigma(sensitivity, self.epsilon, self.delta)
        else:
            self.sigma = classic_gaussian_sigma(sensitivity, self.epsilon, self.delta)
        self._solver_cache = None
        self._tail = tail_multiplier(self.n_queries)

    _statistic_extra = 1

    def _scalar_params(self):
        return {"delta": self.delta, "calibration": self.calibration}

    def report_bounds(self):
        """Per coordinate ``i``: ``[min_u A[i, u] - sigma z, max_u A[i, u] + sigma z]``.

        A report is ``a_u + g``, ``g ~ N(0, sigma^2 I)``: whatever ``u``, every coordinate
        lies in this range unless some ``|g_i| > sigma z``, which has probability below
        ``REPORT_TAIL_PROBABILITY`` (``z`` from :func:`tail_multiplier` with the ``d``
        coordinates).

        Returns
        -------
        low, high : ndarray of shape (d,)
            The smallest and largest accepted value of each coordinate of a report.
        """
        spread = self.sigma * self._tail
        return self.A.min(axis=1) - spread, self.A.max(axis=1) + spread

    @property
    def _solver(self):
        # Built on first server-side use: clients only need A and sigma.
        if self._solver_cache is None:
            self._solver_cache = _MinimumNorm(self.A)
        return self._solver_cache

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """One report per user: ``a_u + N(0, sigma^2 I)`` as an ``(N, d)`` float64 array.

        Parameters
        ----------
        indices : array-like of int of shape (n_users,)
            The users' types (flat domain cells in ``[0, n)``).
        rng : numpy.random.Generator
            Source of randomness (the client's).

        Returns
        -------
        reports : ndarray of float64 of shape (n_users, d)
            One noisy column of the workload per user.
        """
        indices = check_type_indices(indices, self.n_inputs)
        reports = rng.standard_normal((indices.shape[0], self.n_queries))
        columns = self.A.T
        for rows in chunks(indices.shape[0], RANDOMIZE_CHUNK):
            block = reports[rows]
            block *= self.sigma
            block += columns[indices[rows]]
        return reports

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        """Valid reports: finite rows inside :meth:`report_bounds` (width and dtype are
        checked first).

        Parameters
        ----------
        reports : ndarray of float of shape (n_reports, d)
            Reports as :meth:`randomize` returns them.

        Returns
        -------
        check : ReportCheck
            The reports and, per report, whether it is finite and inside the bounds.

        Raises
        ------
        ValueError
            If the array is not 2-D with ``d`` float columns.
        """
        return self._box_validity(reports, bottom_allowed=False)

    def report_influence(self, workload_matrix):
        """Influence of one report (:meth:`~.base.Mechanism.report_influence`): a report
        ``r`` adds ``r`` to the sum, so ``W x_hat`` moves by ``W A^+ r``, extreme at a corner
        of the box of :meth:`report_bounds`.

        Parameters
        ----------
        workload_matrix : array-like of shape (p, n_inputs) or (n_inputs,)
            Dense query rows over the cells (one row: one query).

        Returns
        -------
        influence : ReportInfluence
            Per query, the smallest and largest change of the answer that one accepted
            report can make, and the reports (box corners) that attain them.
        """
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        return self._influence_from_coefficients(W @ self._solver.pinv)

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
        """Exact draw of the statistic: ``A x + N(0, N sigma^2 I)`` (the sum of N Gaussians).

        Parameters
        ----------
        type_counts : array-like of int of shape (n_inputs,)
            Number of users of each type (at most ``2^62`` in all).
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        statistic : ndarray of float64 of shape (d + 1,)
            Distributed exactly as ``aggregate(randomize(users))``.
        """
        counts = check_type_counts(type_counts, self.n_inputs)
        n_users = int(counts.sum())
        noise = math.sqrt(n_users) * self.sigma * rng.standard_normal(self.n_queries)
        return np.append(self.A @ counts + noise, float(n_users))

    def estimate(self, statistic):
        """``x_hat = A^+ sum``: unbiased for every workload in the row space of ``A``.

        Parameters
        ----------
        statistic : array-like of float of shape (d + 1,)
            As :meth:`aggregate` returns it (sums of several are statistics too).

        Returns
        -------
        x_hat : ndarray of shape (n_inputs,)
            The minimum-norm estimate of the users per cell; ``W x_hat`` is unbiased for
            every ``W`` that :meth:`supports`.

        Raises
        ------
        ValueError
            If ``statistic`` is not a statistic that reports of this mechanism can produce.
        """
        statistic = self._check_statistic(statistic, 1)
        return self._solver.solve(statistic[:-1])

    # ------------------------------------------------------------------ analysis
    def per_user_variance(self, gram):
        """``z_u = sigma^2 tr(G A^+ A^{+T})``, the same for every type (``gram``: operator,
        workload or array, densified: ``n`` is small here).

        Parameters
        ----------
        gram : Gram, workload or ndarray of shape (n_inputs, n_inputs)
            ``G = W^T W`` of the workload ``W`` (an operator, the workload itself, or a
            dense array).

        Returns
        -------
        variance : ndarray of shape (n_inputs,)
            ``z_u``, the total variance of the workload's answers that one user of type
            ``u`` contributes (the same for every ``u``).
        """
        gram = self._dense_gram(gram)
        pinv = self._solver.pinv
        total = self.sigma**2 * float(np.sum((gram @ pinv) * pinv))
        return np.full(self.n_inputs, total)

    def query_variance(self, workload_matrix):
        """``z[i, u] = sigma^2 ||w_i A^+||^2`` for every type ``u``.

        Parameters
        ----------
        workload_matrix : array-like of shape (p, n_inputs) or (n_inputs,)
            Dense query rows over the cells (one row: one query).

        Returns
        -------
        variance : ndarray of shape (p, n_inputs)
            ``z[i, u]``, the variance one user of type ``u`` adds to the answer of query
            ``i``.

        Raises
        ------
        ValueError
            If ``workload_matrix`` does not have ``n_inputs`` columns.
        """
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        per_query = self.sigma**2 * np.sum((W @ self._solver.pinv) ** 2, axis=1)
        return np.repeat(per_query[:, None], self.n_inputs, axis=1)


# Names that moved out of this module (the rejection sampler to its own module, the hull
# projection to the optimizers), importable from here until their removal: old imports and
# pickles keep working.
_MOVED_TO_REJECTION = ("GaussianRejectionMechanism", "MAX_REJECTION_EPSILON", "equalized_norms",
                       "optimal_rejection_sigma", "paper_rejection_sigma", "rejection_moments",
                       "window_probability")
_MOVED_TO_OPTIMIZE_HULL = ("project_l1_ball", "project_onto_hull")


def __getattr__(name):
    """Deprecated names: imported lazily from their new module, with a DeprecationWarning."""
    if name in _MOVED_TO_REJECTION:
        from . import rejection as home
    elif name in _MOVED_TO_OPTIMIZE_HULL:
        from ...optimize import hull as home
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} is deprecated: import it from {home.__name__}.",
                  DeprecationWarning, stacklevel=2)
    return getattr(home, name)
