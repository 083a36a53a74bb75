"""Bassily's protocols: Gaussian (eps, delta) and rejection-sampling pure-eps randomizers, the
projection onto the symmetric convex hull, the one-bit randomizer and the adaptive estimator.

Tolerances are derived from the variances: means within 4 standard errors, variances within a
chi-square band at the 1e-6 level (or a normal approximation of it for many replicates).
"""

import math
import warnings

import cvxpy as cp
import numpy as np
import pandas as pd
import pytest
from _sklearn_checks import FLOAT_CODES_REFUSED
from _stats import check_unbiased_and_variance, chi_square_p_value, replicated_statistics
from scipy import integrate, special, stats
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ldp import workloads
from sklearn_ldp.estimators.adaptive import AdaptiveQueryEstimator
from sklearn_ldp.mechanisms._base.mechanism import mechanism_from_json
from sklearn_ldp.mechanisms.bassily.gaussian import (
    GaussianMechanism,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    gaussian_delta,
)
from sklearn_ldp.mechanisms.bassily.rejection import (
    MAX_REJECTION_EPSILON,
    GaussianRejectionMechanism,
    loss_window,
    optimal_rejection_sigma,
    paper_rejection_sigma,
    rejection_moments,
    window_probability,
)
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.mechanisms.numeric.one_bit import OneBitRandomizer
from sklearn_ldp.optimize.hull import _fista, _wolfe, project_l1_ball, project_onto_hull
from sklearn_ldp.postprocess import projected_answers

WIDE = np.array([[1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
                 [0.0, 1.0, 0.0, 0.0, 1.0, 0.0],
                 [0.0, 1.0, 0.0, 0.0, 1.0, 1.0],
                 [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])  # 4 x 6, rank 4, unequal column norms
COUNTS = np.array([40, 5, 0, 25, 60, 12])


# ---------------------------------------------------------------------- calibration
@pytest.mark.parametrize("epsilon,delta,sensitivity",
                         [(0.1, 1e-6, 2.0), (0.5, 1e-5, 1.0), (1.0, 1e-8, 3.0), (1.0, 0.3, 2.0),
                          (4.0, 1e-6, 2.0)])
def test_analytic_sigma_meets_balle_wang_with_equality(epsilon, delta, sensitivity):
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    assert gaussian_delta(sigma, sensitivity, epsilon) <= delta
    assert gaussian_delta(sigma * (1 - 1e-9), sensitivity, epsilon) > delta * (1 - 1e-6)
    assert gaussian_delta(sigma, sensitivity, epsilon) == pytest.approx(delta, rel=1e-6)
    if epsilon <= 1:
        assert sigma <= classic_gaussian_sigma(sensitivity, epsilon, delta)


@pytest.mark.parametrize("sigma,epsilon", [(1.0, 0.5), (2.5, 1.0), (0.7, 3.0)])
def test_balle_wang_delta_is_the_hockey_stick_divergence(sigma, epsilon):
    """delta(eps) = int max(0, p - e^eps q) for N(Delta, s^2) vs N(0, s^2), by quadrature."""
    sensitivity = 1.3
    p = stats.norm(sensitivity, sigma).pdf
    q = stats.norm(0.0, sigma).pdf
    crossing = sensitivity / 2 + epsilon * sigma**2 / sensitivity  # p = e^eps q here
    divergence = integrate.quad(lambda t: p(t) - math.exp(epsilon) * q(t), crossing, np.inf,
                                epsabs=1e-14)[0]
    assert gaussian_delta(sigma, sensitivity, epsilon) == pytest.approx(divergence, rel=1e-7)


def test_gaussian_mechanism_sigma_is_the_exact_lattice_calibration():
    # Format change (spec version 2): sigma is sqrt(sigma2) h of the exact discrete Gaussian
    # on the lattice h = 2^-m, calibrated by the exact zCDP check on the centres' sensitivity
    # (at most 2 r, plus the rounding step); the analytic sigma is the reference.
    mechanism = GaussianMechanism(6, 0.8, delta=1e-6, workload=WIDE)
    r = np.sqrt((WIDE**2).sum(axis=0)).max()
    assert mechanism.radius == pytest.approx(r)
    h = 2.0**-mechanism.lattice_exponent
    assert mechanism.sigma == math.sqrt(mechanism.sigma2) * h
    assert mechanism.sensitivity2 <= (2 * r / h + 2 * math.sqrt(4)) ** 2
    assert 2**24 <= mechanism.sigma2 < 2**27
    assert mechanism.analytic_sigma == pytest.approx(analytic_gaussian_sigma(2 * r, 0.8, 1e-6))
    classic = classic_gaussian_sigma(2 * r, 0.8, 1e-6)
    assert mechanism.sigma <= 1.5 * classic


# ---------------------------------------------------------------------- Gaussian mechanism
def test_gaussian_estimate_unbiased_with_exact_variance_simulated():
    mechanism = GaussianMechanism(6, 1.0, delta=1e-5, workload=WIDE)
    rng = np.random.default_rng(0)
    W = np.vstack([WIDE, WIDE[0] - 2 * WIDE[2]])  # queries in the row space of A
    answers = np.array([W @ mechanism.estimate(mechanism.simulate_statistic(COUNTS, rng))
                        for _ in range(4000)])
    variance = mechanism.query_variance(W) @ COUNTS
    check_unbiased_and_variance(answers, W @ COUNTS, variance)
    assert mechanism.per_user_variance(W.T @ W) @ COUNTS == pytest.approx(variance.sum())


def test_gaussian_randomize_matches_analytic_moments():
    mechanism = GaussianMechanism(6, 1.0, delta=1e-5, workload=WIDE)
    rng = np.random.default_rng(1)
    users = np.repeat(np.arange(6), COUNTS)
    answers = np.array([WIDE @ mechanism.estimate(statistic) for statistic
                        in replicated_statistics(mechanism, users, 1500, rng)])
    check_unbiased_and_variance(answers, WIDE @ COUNTS, mechanism.query_variance(WIDE) @ COUNTS)


def test_gaussian_row_space_and_null_space():
    mechanism = GaussianMechanism(6, 1.0, delta=1e-5, workload=WIDE)
    assert mechanism.null_space_dim == 2
    assert mechanism.supports(WIDE) and mechanism.supports_gram(WIDE.T @ WIDE)
    assert not mechanism.supports(np.eye(6)[[2]])
    assert not mechanism.supports_gram(np.eye(6))
    with pytest.raises(ValueError, match="row space"):
        mechanism.check_supports(np.eye(6))
    tall = GaussianMechanism(3, 1.0, delta=1e-5, workload=workloads.all_range(3))
    assert tall.null_space_dim == 0 and tall.supports(np.eye(3))


def test_gaussian_json_round_trip_and_errors():
    mechanism = GaussianMechanism(6, 1.0, delta=1e-5, workload=WIDE)
    copy = mechanism_from_json(mechanism.to_json())
    assert copy == mechanism and copy.sigma == mechanism.sigma
    assert copy != GaussianMechanism(6, 1.0, delta=1e-4, workload=WIDE)
    assert GaussianMechanism.from_json(mechanism.to_json()).A.tolist() == WIDE.tolist()
    with pytest.raises(ValueError, match="needs delta"):
        GaussianMechanism(6, 1.0, workload=WIDE)
    for delta in (0.0, 1.0, -0.1, 2.0, float("nan")):
        with pytest.raises(ValueError, match="delta"):
            GaussianMechanism(6, 1.0, delta=delta, workload=WIDE)
    with pytest.raises(TypeError, match="calibration"):  # the exact check calibrates
        GaussianMechanism(6, 1.0, delta=1e-5, workload=WIDE, calibration="classic")
    with pytest.raises(ValueError, match="columns"):
        GaussianMechanism(5, 1.0, delta=1e-5, workload=WIDE)
    with pytest.raises(ValueError, match="all zeros"):
        GaussianMechanism(3, 1.0, delta=1e-5, workload=np.zeros((2, 3)))
    reports = mechanism.randomize(np.array([0, 1, 5]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="length 4"):
        mechanism.aggregate(reports[:, :3])
    with pytest.raises(ValueError, match="length 4"):
        mechanism.aggregate(np.array([0, 1, 2]))  # index reports of another mechanism
    with pytest.raises(ValueError, match="float"):
        mechanism.aggregate(reports.astype(np.int64))
    bad = reports.copy()
    bad[1, 2] = np.nan
    with pytest.raises(ValueError, match="finite"):
        mechanism.aggregate(bad)
    with pytest.raises(ValueError, match="5 entries"):
        mechanism.estimate(np.zeros(4))
    with pytest.raises(ValueError, match="integers in"):
        mechanism.randomize(np.array([0, 6]), np.random.default_rng(0))


def test_gaussian_aggregate_is_additive_over_chunks():
    mechanism = GaussianMechanism(6, 1.0, delta=1e-5, workload=WIDE)
    reports = mechanism.randomize(np.arange(6).repeat(50), np.random.default_rng(3))
    whole = mechanism.aggregate(reports)
    parts = mechanism.aggregate(reports[:100]) + mechanism.aggregate(reports[100:])
    np.testing.assert_allclose(whole, parts, rtol=1e-12)
    assert mechanism.n_reports(whole) == 300


# ---------------------------------------------------------------------- projection onto A B_1
def _cvxpy_projection(A, y):
    v = cp.Variable(A.shape[1])
    cp.Problem(cp.Minimize(cp.sum_squares(A @ v - y)), [cp.norm1(v) <= 1]).solve(
        solver=cp.CLARABEL)
    return A @ v.value


def _instances():
    rng = np.random.default_rng(7)
    cases = []
    for d, J in [(5, 8), (8, 5), (6, 6), (12, 30), (3, 40)]:
        A = rng.standard_normal((d, J))
        for size in (0.05, 1.0, 10.0):
            cases.append((A, size * rng.standard_normal(d)))
    A = np.tril(np.ones((24, 24)))  # ill-conditioned (prefix sums)
    cases.append((A, A @ rng.dirichlet(np.ones(24)) + 0.5 * rng.standard_normal(24)))
    deficient = rng.standard_normal((6, 3)) @ rng.standard_normal((3, 9))  # rank 3
    cases.append((deficient, 3 * rng.standard_normal(6)))
    return cases


@pytest.mark.parametrize("case", range(len(_instances())))
def test_projection_matches_cvxpy(case):
    A, y = _instances()[case]
    point, v = project_onto_hull(A, y, tol=1e-7)
    expected = _cvxpy_projection(A, y)
    scale = max(np.linalg.norm(y), np.sqrt((A**2).sum(axis=0)).max())
    assert np.abs(v).sum() <= 1 + 1e-9
    np.testing.assert_allclose(A @ v, point, atol=1e-9 * scale)
    np.testing.assert_allclose(point, expected, atol=2e-5 * scale)
    # our objective is never worse than the interior-point solver's (up to its accuracy)
    assert np.sum((point - y) ** 2) <= np.sum((expected - y) ** 2) + 1e-7 * scale**2


@pytest.mark.parametrize("solver", ["fista", "wolfe"])
def test_each_projection_solver_is_correct(solver):
    """Both interleaved solvers reach the projection on their own (bounds are certified)."""
    for A, y in _instances()[::3]:
        scale = max(np.linalg.norm(y), np.sqrt((A**2).sum(axis=0)).max())
        target = (1e-7 * scale) ** 2
        steps = (_fista(A, y, np.random.default_rng(0)) if solver == "fista"
                 else _wolfe(A, y, target))
        for n_blocks, (bound, point, v, _) in enumerate(steps):  # noqa: B007 - used below
            if bound <= target or n_blocks > 5000:
                break
        assert bound <= target
        expected = _cvxpy_projection(A, y)
        np.testing.assert_allclose(point, expected, atol=2e-5 * scale)
        assert np.linalg.norm(point - A @ v) <= 1e-9 * scale
        assert np.abs(v).sum() <= 1 + 1e-9


def test_projection_of_interior_point_is_the_point_and_l1_ball():
    rng = np.random.default_rng(2)
    A = rng.standard_normal((4, 10))
    y = A @ (0.4 * project_l1_ball(rng.standard_normal(10)))
    point, _ = project_onto_hull(A, y, tol=1e-10)
    np.testing.assert_allclose(point, y, atol=1e-8)
    v = rng.standard_normal(50) * 3
    w = project_l1_ball(v)
    assert np.abs(w).sum() == pytest.approx(1.0)
    # KKT of the L1-ball projection: v - w = theta * sign(w) on the support, |v| <= theta off it
    theta = np.abs(v - w)[w != 0]
    np.testing.assert_allclose(theta, theta[0])
    assert np.all(np.abs(v[w == 0]) <= theta[0] + 1e-12)
    with pytest.raises(ValueError, match="one entry per row"):
        project_onto_hull(A, np.zeros(5))


def test_projection_reduces_error_when_users_are_few():
    """A = I, n = 400 cells, 30 users: the noisy mean is far outside the L1 ball."""
    n, n_users = 400, 30
    mechanism = GaussianMechanism(n, 1.0, delta=1e-6)
    rng = np.random.default_rng(4)
    p = rng.dirichlet(np.full(n, 0.05))
    raw_errors, projected_errors = [], []
    for _ in range(10):
        counts = rng.multinomial(n_users, p)
        statistic = mechanism.simulate_statistic(counts, rng)
        truth = counts / n_users
        mean = mechanism.estimate(statistic) / n_users
        projected = projected_answers(mechanism, statistic) / n_users
        raw_errors.append(np.sum((mean - truth) ** 2))
        projected_errors.append(np.sum((projected - truth) ** 2))
        # sharp form of Bassily's Lemma 2.2 (K symmetric, truth in K): ||P(y) - y*||^2 <=
        # 2 ||z||_{K polar} = 2 max_j |<a_j, z>| with z the noise of the mean
        assert projected_errors[-1] <= 2 * np.abs(mean - truth).max() * (1 + 1e-6)
    assert np.mean(projected_errors) < 0.05 * np.mean(raw_errors)


# ---------------------------------------------------------------------- pure: rejection sampling
def _keep_moments_by_quadrature(norm, sigma, epsilon):
    """(P(keep), E[t h], E[t^2 h]) by 1-D integration over t = <v, a/|a|> / sigma."""
    s = norm / sigma
    loss_low, loss_high = loss_window(epsilon)  # the exact envelope's window (version 2)

    def keep(t):
        loss = s * t - s * s / 2
        return 0.5 * math.exp(loss) if loss_low <= loss <= loss_high else 0.5

    pieces = [(-np.inf, s / 2 + loss_low / s), (s / 2 + loss_low / s, s / 2 + loss_high / s),
              (s / 2 + loss_high / s, np.inf)]
    pdf = stats.norm.pdf
    return [sum(integrate.quad(lambda t, k=k: t**k * keep(t) * pdf(t), a, b, epsabs=1e-13)[0]
                for a, b in pieces) for k in range(3)]


def test_rejection_moments_match_quadrature():
    epsilon, sigma = 1.0, 1.7
    for norm in (0.05, 0.4, 1.0, 3.0):
        p_keep, kappa, alpha, beta = rejection_moments(np.array([norm]), sigma, epsilon)
        m0, m1, m2 = _keep_moments_by_quadrature(norm, sigma, epsilon)
        assert p_keep[0] == pytest.approx(m0, abs=1e-10)
        assert kappa[0] == pytest.approx(sigma * m1 / norm, rel=1e-8, abs=1e-14)
        assert alpha[0] == pytest.approx(sigma**2 * m0, rel=1e-10)
        assert beta[0] == pytest.approx(sigma**2 * (m2 - m0) / norm**2, rel=1e-7, abs=1e-13)


@pytest.mark.parametrize("epsilon", [0.3, 1.0, MAX_REJECTION_EPSILON])
@pytest.mark.parametrize("calibration", ["optimal", "paper"])
def test_pure_privacy_exact_ratios(epsilon, calibration):
    """P(bottom | a) by quadrature for every column, and the density ratio of kept reports."""
    A = np.hstack([WIDE, -WIDE[:, :1]])  # an opposite pair of columns
    mechanism = GaussianRejectionMechanism(7, epsilon, workload=A, calibration=calibration)
    bottom = np.array([1 - _keep_moments_by_quadrature(m, mechanism.sigma, epsilon)[0]
                       if m > 0 else 0.5 for m in mechanism.effective_norms])
    assert len(bottom) == 7 and bottom.max() / bottom.min() <= math.exp(epsilon) * (1 + 1e-9)
    # Version 2: P(bottom) is no longer 1/2 (asymmetric window), but it lies in the envelope.
    one = 2.0**52
    assert np.all(bottom >= 1 - mechanism.keep_high / one - 1e-12)
    assert np.all(bottom <= 1 - mechanism.keep_low / one + 1e-12)
    # A kept report has density phi_0(v) * keep(u, v): compare all pairs of types at many v.
    rng = np.random.default_rng(5)
    draws = mechanism.sigma * rng.standard_normal((2000, 4)) * rng.uniform(0.01, 3, (2000, 1))
    keep = np.array([mechanism.keep_probability(np.full(2000, u), draws) for u in range(7)])
    numerators = np.array([mechanism.keep_numerators(np.full(2000, u), draws)
                           for u in range(7)])
    assert numerators.max() <= mechanism.keep_high and numerators.min() >= mechanism.keep_low
    assert np.max(keep.max(axis=0) / keep.min(axis=0)) <= math.exp(epsilon) * (1 + 1e-12)
    # the check is not vacuous: an in-window draw against an out-of-window one gives
    # e^{eps/2}, an opposite pair with both in the window up to e^{eps - s^2}
    assert np.max(keep.max(axis=0) / keep.min(axis=0)) > math.exp(0.45 * epsilon)


def test_pure_privacy_empirical_audit():
    """Opposite columns +a and -a: empirical likelihood ratios of (bin of t, or bottom)."""
    epsilon = 1.0
    A = np.array([[1.0, -1.0, 0.3], [0.0, 0.0, 0.4]])
    mechanism = GaussianRejectionMechanism(3, epsilon, workload=A)
    rng = np.random.default_rng(6)
    n_users = 200_000
    edges = np.array([-np.inf, -2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0, np.inf])
    histograms = []
    for u in (0, 1):
        reports = mechanism.randomize(np.full(n_users, u), rng)
        t = reports[:, 0] / mechanism.sigma  # coordinate along +a
        kept = ~np.isnan(t)
        counts = np.histogram(t[kept], bins=edges)[0]
        histograms.append(np.append(counts, n_users - kept.sum()))
        # exact probabilities of the bins (closed form) vs the sample: chi-square
        s = mechanism.effective_norms[u] / mechanism.sigma
        sign = 1.0 if u == 0 else -1.0
        exact = []
        for lo, hi in zip(edges[:-1], edges[1:], strict=True):
            # along a_u the coordinate is sign * t; integrate h(t') phi(t') over the bin
            a, b = sorted((sign * lo, sign * hi))
            loss_low, loss_high = loss_window(epsilon)
            lo_w, hi_w = s / 2 + loss_low / s, s / 2 + loss_high / s
            inside = max(0.0, special.ndtr(min(b, hi_w) - s) - special.ndtr(max(a, lo_w) - s))
            total = special.ndtr(b) - special.ndtr(a)
            window = max(0.0, special.ndtr(min(b, hi_w)) - special.ndtr(max(a, lo_w)))
            exact.append(0.5 * inside + 0.5 * (total - window))
        exact = np.append(exact, 1.0 - mechanism.p_keep[u])
        assert exact.sum() == pytest.approx(1.0)
        assert chi_square_p_value(histograms[-1], n_users * exact) > 1e-6
    first, second = np.array(histograms, dtype=float)
    log_ratio = np.abs(np.log(first / second))
    standard_error = np.sqrt(1 / first + 1 / second)
    assert np.all(log_ratio <= epsilon + 4 * standard_error)
    assert np.max(log_ratio) > 0.5 * epsilon  # the pair is informative: the audit has power


@pytest.mark.parametrize("columns", ["raw", "equalized"])
def test_pure_estimate_unbiased_with_exact_variance(columns):
    A = np.tril(np.ones((6, 6))) if columns == "raw" else WIDE
    mechanism = GaussianRejectionMechanism(6, 1.0, workload=A)
    assert mechanism.columns == columns and mechanism.supports(A)
    rng = np.random.default_rng(8)
    answers = np.array([A @ mechanism.estimate(mechanism.simulate_statistic(COUNTS, rng))
                        for _ in range(4000)])
    check_unbiased_and_variance(answers, A @ COUNTS, mechanism.query_variance(A) @ COUNTS)
    users = np.repeat(np.arange(6), COUNTS)
    answers = np.array([A @ mechanism.estimate(statistic) for statistic
                        in replicated_statistics(mechanism, users, 1500, rng)])
    check_unbiased_and_variance(answers, A @ COUNTS, mechanism.query_variance(A) @ COUNTS)
    assert mechanism.per_user_variance(A.T @ A) @ COUNTS == pytest.approx(
        (mechanism.query_variance(A) @ COUNTS).sum())


def test_pure_statistic_moments_simulated_and_randomized_agree():
    """T, K of both routes: E[T] = A diag(kappa) x, Cov T exact, K a sum of binomials."""
    mechanism = GaussianRejectionMechanism(6, 0.7, workload=WIDE, columns="raw")
    rng = np.random.default_rng(9)
    n_users = COUNTS.sum()
    mean = (WIDE * mechanism.kappa) @ COUNTS
    covariance = sum(c * (mechanism.alpha[u] * np.eye(4) + (mechanism.beta[u] - mechanism.kappa[u]
                          ** 2) * np.outer(WIDE[:, u], WIDE[:, u])) for u, c in enumerate(COUNTS))
    users = np.repeat(np.arange(6), COUNTS)
    for statistics in (
        np.array([mechanism.simulate_statistic(COUNTS, rng) for _ in range(3000)]),
        replicated_statistics(mechanism, users, 1500, rng),
    ):
        check_unbiased_and_variance(statistics[:, :4], mean, np.diag(covariance))
        p = mechanism.p_keep
        check_unbiased_and_variance(statistics[:, 4:5], [p @ COUNTS],
                                    [(p * (1 - p)) @ COUNTS])
        assert np.all(statistics[:, 5] == n_users)
        # one off-diagonal covariance, through the variance of a sum of two coordinates
        check_unbiased_and_variance(statistics[:, :1] + statistics[:, 1:2], [mean[0] + mean[1]],
                                     [covariance[0, 0] + covariance[1, 1] + 2 * covariance[0, 1]])


def test_pure_raw_columns_on_wide_unequal_workload_do_not_support_it():
    raw = GaussianRejectionMechanism(6, 1.0, workload=WIDE, columns="raw")
    assert not raw.supports(WIDE)
    equalized = GaussianRejectionMechanism(6, 1.0, workload=WIDE)
    assert equalized.columns == "equalized" and equalized.supports(WIDE)
    np.testing.assert_allclose(equalized.kappa, equalized.kappa[0], rtol=1e-9)


def test_pure_calibrations():
    epsilon = 1.0
    paper = GaussianRejectionMechanism(6, epsilon, workload=WIDE, calibration="paper")
    delta0 = math.tanh(epsilon / 2)
    assert (1 + delta0) / (1 - delta0) == pytest.approx(math.exp(epsilon))
    sigma = paper_rejection_sigma(paper.radius, epsilon)
    s = paper.radius / sigma  # the window probability binds at the largest column
    assert window_probability(s, epsilon) == pytest.approx(1 - delta0, rel=1e-10)
    assert paper.sigma == pytest.approx(sigma, rel=1e-7)  # realised on the lattice

    def unit_variance(sigma):
        _, kappa, alpha, _ = rejection_moments(np.array([1.0]), sigma, epsilon)
        return alpha[0] / kappa[0] ** 2

    best = optimal_rejection_sigma(1.0, epsilon)
    assert unit_variance(best) < unit_variance(best * 1.05)
    assert unit_variance(best) < unit_variance(best / 1.05)
    assert unit_variance(best) < 0.2 * unit_variance(paper_rejection_sigma(1.0, epsilon))


def test_pure_json_round_trip_and_errors():
    mechanism = GaussianRejectionMechanism(6, 1.0, workload=WIDE)
    copy = mechanism_from_json(mechanism.to_json())
    assert copy == mechanism and copy.params["columns"] == "equalized"
    np.testing.assert_array_equal(copy.kappa, mechanism.kappa)
    with pytest.raises(ValueError, match=r"2 ln 2 = 1.386294"):
        GaussianRejectionMechanism(6, 1.4, workload=WIDE)
    GaussianRejectionMechanism(6, MAX_REJECTION_EPSILON, workload=WIDE)  # the limit is allowed
    with pytest.raises(ValueError, match="columns must be one of"):
        GaussianRejectionMechanism(6, 1.0, workload=WIDE, columns="scaled")
    reports = mechanism.randomize(np.arange(6).repeat(20), np.random.default_rng(0))
    assert np.isnan(reports).all(axis=1).sum() > 0  # some users dropped (bottom)
    with pytest.raises(ValueError, match="length 4"):
        mechanism.aggregate(reports[:, :2])
    bad = reports.copy()
    bad[~np.isnan(bad[:, 0])][:1] = 0.0
    row = int(np.flatnonzero(~np.isnan(bad[:, 0]))[0])
    bad[row, 1] = np.nan
    with pytest.raises(ValueError, match="some NaN"):
        mechanism.aggregate(bad)
    bad[row, 1] = np.inf
    with pytest.raises(ValueError, match="infinite"):
        mechanism.aggregate(bad)
    statistic = mechanism.aggregate(reports)
    assert mechanism.n_reports(statistic) == 120
    assert mechanism.n_kept(statistic) == int((~np.isnan(reports[:, 0])).sum())


# ---------------------------------------------------------------------- one-bit randomizer
def test_one_bit_randomizer_is_exactly_epsilon_ldp():
    for epsilon, bound in [(0.5, 1.0), (1.0, 3.0), (4.0, 0.2)]:
        randomizer = OneBitRandomizer(epsilon, bound)
        values = np.linspace(-bound, bound, 41)
        ratio = privacy_ratio(randomizer.strategy_matrix(values))
        assert ratio <= math.exp(epsilon) * (1 + 1e-9)
        # attained at +-r, up to the integer weights (a + b = 2^28) of the exact law
        assert ratio == pytest.approx(math.exp(epsilon), rel=1e-6)
        np.testing.assert_allclose(randomizer.strategy_matrix(values).sum(axis=0), 1.0)


def test_one_bit_randomizer_unbiased_with_exact_variance():
    randomizer = OneBitRandomizer(1.0, 2.0)
    rng = np.random.default_rng(10)
    values = np.array([-2.0, -0.7, 0.0, 1.3, 2.0])
    bits = randomizer.randomize(np.tile(values, (40000, 1)), rng)
    assert bits.dtype == np.int8 and set(np.unique(bits).tolist()) <= {-1, 1}
    decoded = randomizer.decode(bits)
    check_unbiased_and_variance(decoded, values, randomizer.variance(values))
    # the frequency of +1 is binomial with the exact probability
    plus = (bits == 1).sum(axis=0)
    probability = randomizer.probability_plus(values)
    z = (plus - 40000 * probability) / np.sqrt(40000 * probability * (1 - probability))
    assert np.all(np.abs(z) < 4.5)


def test_one_bit_randomizer_errors_and_round_trip():
    randomizer = OneBitRandomizer(1.0, 2.0)
    assert OneBitRandomizer.from_dict(randomizer.to_dict()) == randomizer
    with pytest.raises(ValueError, match=r"\[-2.0, 2.0\]"):
        randomizer.randomize(np.array([0.5, 2.5]), np.random.default_rng(0))
    with pytest.raises(ValueError, match="finite"):
        randomizer.variance(np.array([np.nan]))
    with pytest.raises(ValueError, match=r"\+1 or -1"):
        randomizer.decode(np.array([1, 0, -1]))
    with pytest.raises(ValueError, match="bound"):
        OneBitRandomizer(1.0, 0.0)


# ---------------------------------------------------------------------- adaptive estimator
DOM = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}


def _records(n_users, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.choice(DOM["age"], n_users, p=[0.5, 0.3, 0.2]),
                         "smoker": rng.choice(DOM["smoker"], n_users, p=[0.8, 0.2])})


def _cell_fractions(df):
    from sklearn_ldp import Domain

    domain = Domain(DOM)
    return np.bincount(domain.encode(df), minlength=domain.size) / len(df)


def test_adaptive_answers_within_tolerance_default_marginals():
    df = _records(60000)
    estimator = AdaptiveQueryEstimator(categories=DOM, epsilon=1.0, random_state=0).fit(df)
    W = workloads.marginals(DOM, k=1)
    assert list(estimator.answers_.index) == list(W.labels)
    truth = W.toarray() @ _cell_fractions(df)
    error = estimator.answers_.to_numpy() - truth
    worst = estimator.expected_error_["worst_case"].to_numpy()
    assert np.all(np.abs(error) <= 4 * np.sqrt(worst))
    sizes = estimator.group_sizes_
    assert sizes.sum() == 60000 and sizes.max() - sizes.min() <= 1 and len(sizes) == 5
    c = (math.e + 1) / (math.e - 1)
    # Indicator queries have a zero entry: the worst case is (c r)^2 / |S_t|; spread evenly,
    # a user's variance is c^2 - (fraction of the cells in the query).
    np.testing.assert_allclose(worst, c**2 / sizes)
    np.testing.assert_allclose(estimator.expected_error_["average_case"],
                               (c**2 - W.toarray().mean(axis=1)) / sizes)
    assert list(estimator.expected_error_.index) == list(estimator.answers_.index)
    np.testing.assert_array_equal(estimator.queries_, W.toarray())
    again = AdaptiveQueryEstimator(categories=DOM, epsilon=1.0, random_state=0).fit(df)
    pd.testing.assert_series_equal(estimator.answers_, again.answers_)


def test_adaptive_answer_variance_matches_exact_formula():
    """Repeated rounds on one fixed group: Var = sum((c r)^2 - q[v]^2) / m^2 (<= reported)."""
    df = _records(400, seed=1)
    query = np.array([1.0, -0.5, 0.25, 0.0, -1.0, 0.6])
    estimator = AdaptiveQueryEstimator(categories=DOM, epsilon=0.5, queries=query[None, :])
    estimator.partial_fit(df)
    for _ in range(1499):
        estimator.partial_fit(df, query=query)
    from sklearn_ldp import Domain

    values = query[Domain(DOM).encode(df)]
    scale = estimator.randomizer_.scale
    exact = np.sum(scale**2 - values**2) / len(df) ** 2
    answers = estimator.answers_.to_numpy()[:, None]
    check_unbiased_and_variance(answers, [values.mean()], [exact])
    assert np.all(estimator.expected_error_["worst_case"] >= exact)
    assert estimator.answers_.index.is_unique and estimator.n_rounds_ == 1500


def test_adaptive_expected_error_is_the_exact_variance_of_its_two_cases():
    """worst_case is the exact variance (the formula checked by simulation above) with every
    user in the cell of least |q|, average_case with users spread evenly over the cells."""
    query = np.array([1.0, -0.5, 0.25, 0.3, -1.0, 0.6])  # no zero entry
    estimator = AdaptiveQueryEstimator(categories=DOM, epsilon=0.5, queries=query[None, :],
                                       random_state=0)
    m = 600
    estimator.partial_fit(_records(m, seed=5))
    scale = estimator.randomizer_.scale

    def exact(cells):
        return np.sum(scale**2 - query[cells] ** 2) / len(cells) ** 2

    worst_cell = np.full(m, np.argmin(np.abs(query)))
    spread = np.repeat(np.arange(6), m // 6)
    row = estimator.expected_error_.iloc[0]
    assert row["worst_case"] == pytest.approx(exact(worst_cell), rel=1e-12)
    assert row["average_case"] == pytest.approx(exact(spread), rel=1e-12)
    # no zero entry: strictly below the bound (c r)^2 / m reported before
    assert row["worst_case"] < scale**2 / m and row["average_case"] < row["worst_case"]


def test_adaptive_callable_chooses_queries_from_previous_answers():
    df = _records(40000, seed=2)
    seen = []

    def next_query(answers):
        seen.append(answers.copy())
        if len(answers) == 0:
            return np.array([1.0, 1, 0, 0, 0, 0])  # age < 30
        # next: the complement if the first answer looked like a majority, else smokers
        if answers.iloc[-1] > 0.4:
            return np.array([0.0, 0, 1, 1, 1, 1])
        return np.array([0.0, 1, 0, 1, 0, 1])

    estimator = AdaptiveQueryEstimator(categories=DOM, queries=next_query, n_rounds=3,
                                       random_state=1).fit(df)
    assert [len(a) for a in seen] == [0, 1, 2]
    assert isinstance(seen[1], pd.Series)
    np.testing.assert_array_equal(estimator.queries_[1], [0.0, 0, 1, 1, 1, 1])
    truth = estimator.queries_ @ _cell_fractions(df)
    error = estimator.answers_.to_numpy() - truth
    assert np.all(np.abs(error) <= 4 * np.sqrt(estimator.expected_error_["worst_case"]))
    assert list(estimator.answers_.index) == ["q0", "q1", "q2"]
    with pytest.raises(ValueError, match="n_rounds"):
        AdaptiveQueryEstimator(categories=DOM, queries=next_query).fit(df)


def test_adaptive_partial_fit_with_explicit_and_exhausted_queries():
    W = workloads.Workload(np.array([[1.0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1]]),
                           labels=["young non-smoker", "old"])
    estimator = AdaptiveQueryEstimator(categories=DOM, queries=W, random_state=0)
    estimator.partial_fit(_records(3000, 3))
    estimator.partial_fit(_records(3000, 4))
    assert list(estimator.answers_.index) == ["young non-smoker", "old"]
    with pytest.raises(ValueError, match="all 2 queries have been answered"):
        estimator.partial_fit(_records(3000, 5))
    estimator.partial_fit(_records(3000, 5), query=np.full(6, 0.5))
    assert list(estimator.answers_.index)[-1] == "q2"
    assert estimator.group_sizes_.tolist() == [3000, 3000, 3000]


def test_adaptive_queries_out_of_bound_are_refused():
    df = _records(500)
    bad = workloads.Workload(np.array([[1.0, 0, 0, 0, 0, 0], [0, 2.5, 0, 0, 0, 0]]),
                             labels=["fine", "too big"])
    with pytest.raises(ValueError, match=r"'too big'.*\[-1.0, 1.0\]"):
        AdaptiveQueryEstimator(categories=DOM, queries=bad).fit(df)
    AdaptiveQueryEstimator(categories=DOM, queries=bad, bound=2.5).fit(df)
    with pytest.raises(ValueError, match=r"'q1'.*\[-1.0, 1.0\]"):
        AdaptiveQueryEstimator(categories=DOM, queries=lambda a: np.full(6, len(a) * 2.0),
                               n_rounds=2).fit(df)
    estimator = AdaptiveQueryEstimator(categories=DOM).partial_fit(df)
    with pytest.raises(ValueError, match=r"'q1'.*\[-1.0, 1.0\]"):
        estimator.partial_fit(df, query=np.full(6, -1.5))
    with pytest.raises(ValueError, match="length 6"):
        estimator.partial_fit(df, query=np.ones(5))
    with pytest.raises(ValueError, match="at least one user per query"):
        AdaptiveQueryEstimator(categories=DOM).fit(df.iloc[:3])
    with pytest.raises(ValueError, match="not among its categories"):
        AdaptiveQueryEstimator(categories=DOM).fit(df.assign(age="old"))
    with pytest.raises(ValueError, match="epsilon"):
        AdaptiveQueryEstimator(categories=DOM, epsilon=0).fit(df)


EXPECTED_FAILED = dict(FLOAT_CODES_REFUSED)
# The default constructor asks one query per cell of the domain read from the data, one
# group of users per query: scikit-learn's small check data (15 rows, 18 cells) cannot give
# every query a user, which fit refuses by design; and after fit has answered every query,
# partial_fit needs the next query (query=...), which check_fit_score_takes_y does not pass.
EXPECTED_FAILED_DEFAULT = {
    **EXPECTED_FAILED,
    "check_n_features_in_after_fitting": "one user per query needed: 18 queries (one per "
                                         "cell of the check data's domain), 15 rows",
    "check_fit_score_takes_y": "after fit answered every query, partial_fit needs the next "
                               "query (query=...), which the check does not pass",
}


@parametrize_with_checks(
    [AdaptiveQueryEstimator(epsilon=1.0, n_rounds=2, random_state=0),
     AdaptiveQueryEstimator()],  # the default constructor
    expected_failed_checks=lambda estimator: (
        EXPECTED_FAILED if estimator.n_rounds == 2 else EXPECTED_FAILED_DEFAULT),
)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # categories read from the data
        check(estimator)
