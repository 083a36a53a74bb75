"""Central model: matrix mechanism, Eigen-Design, discrete Gaussian, private selection.

Reference numbers: ../shared/reference/seeds_math.md section 2.12 (LM12 Figure 1). Errors are
compared as ratios of total squared error to the singular value bound, which do not depend on
the noise calibration (the paper's absolute values use an unknown constant, about 57.07).
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _sklearn_checks import FLOAT_CODES_REFUSED
from _stats import check_unbiased_and_variance, chi_square_p_value
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ldp import Domain, WorkloadEstimator, workloads
from sklearn_ldp.mechanisms.bassily.gaussian import gaussian_delta
from sklearn_ldp.mechanisms.central import discrete_gaussian, matrix, private_selection
from sklearn_ldp.mechanisms.central.discrete_gaussian import sample_discrete_gaussian, zcdp_delta
from sklearn_ldp.mechanisms.central.matrix import MatrixMechanism, gaussian_mechanism_error
from sklearn_ldp.mechanisms.central.private_selection import (
    exponential_probabilities,
    relative_error_utilities,
    select_strategy,
)
from sklearn_ldp.mechanisms.central.strategies import (
    fourier_basis_strategy,
    tree_strategy,
    wavelet_strategy,
)
from sklearn_ldp.optimize.eigen_design import (
    eigen_design,
    optimal_error,
    program1,
    refine_strategy,
    singular_value_bound,
    strategy_error,
)
from sklearn_ldp.selection.central import central_strategy

# LM12 Figure 1, reconstructed (seeds_math.md 2.12): cells = gender (M, F) x GPA bucket (4).
FIGURE1 = np.array([
    [1, 1, 1, 1, 1, 1, 1, 1],          # all students
    [1, 1, 1, 1, 0, 0, 0, 0],          # male
    [0, 0, 0, 0, 1, 1, 1, 1],          # female
    [1, 1, 0, 0, 1, 1, 0, 0],          # GPA < 3.0
    [0, 0, 1, 1, 0, 0, 1, 1],          # GPA >= 3.0
    [1, 1, 0, 0, 0, 0, 0, 0],          # male, GPA < 3.0
    [0, 0, 0, 0, 1, 1, 0, 0],          # female, GPA < 3.0
    [1, 1, 1, 1, -1, -1, -1, -1],      # male minus female
], dtype=float)
SVDB = 14.92040820501


# ---------------------------------------------------------------------- Figure 1
def test_figure1_workload_properties():
    values = np.sort(np.linalg.eigvalsh(FIGURE1.T @ FIGURE1))[::-1]
    root = math.sqrt(37)
    np.testing.assert_allclose(values[:4], [11 + root, 7 + root, 11 - root, 7 - root], rtol=1e-10)
    np.testing.assert_allclose(values[4:], 0, atol=1e-10)
    assert singular_value_bound(FIGURE1) == pytest.approx(SVDB, rel=1e-6)
    assert matrix.l2_sensitivity(FIGURE1) ** 2 == pytest.approx(5)
    design = eigen_design(FIGURE1)
    # the paper's guarantee (n sigma_1 / svdb)^(1/4) = 1.7397, reported squared
    assert math.sqrt(design.approximation_bound) == pytest.approx(1.7397, abs=1e-4)


def test_figure1_ratios_to_the_bound():
    """Paper: workload 2.68, identity 2.41, Haar 1.41, Eigen-Design <= 1.042 (29.79/29.18)^2."""
    ratios = {
        "gaussian mechanism on W": gaussian_mechanism_error(FIGURE1) / SVDB,
        "identity": strategy_error(np.eye(8), FIGURE1) / SVDB,
        "haar": strategy_error(wavelet_strategy((8,)), FIGURE1) / SVDB,
        "eigen": eigen_design(FIGURE1, speedup="none").ratio,
    }
    assert ratios["gaussian mechanism on W"] == pytest.approx(40 / SVDB, rel=1e-9)
    assert round(ratios["gaussian mechanism on W"], 2) == 2.68
    assert round(ratios["identity"], 2) == 2.41
    assert round(ratios["haar"], 2) == 1.41
    assert ratios["eigen"] <= 1.042
    # exact Program 2 with completion (X = 15.4763), Program 1 alone 15.8638
    assert ratios["eigen"] * SVDB == pytest.approx(15.4763, abs=2e-3)
    design = eigen_design(FIGURE1)
    partial = np.sqrt(design.weights)[:, None] * design.eigen_queries
    assert strategy_error(partial, FIGURE1) == pytest.approx(15.8638, abs=2e-3)
    # the matrix mechanism with A = W reconstructs by least squares: 5 * rank(W) = 20, half
    # the paper's 40 for the Gaussian mechanism that releases W x + noise directly
    assert strategy_error(FIGURE1, FIGURE1) == pytest.approx(20.0, rel=1e-8)


def test_figure1_absolute_numbers_with_the_papers_constant():
    """sqrt(57.07 X) gives the paper's RMSE figures (the constant is empirical, UNSURE)."""
    totals = [gaussian_mechanism_error(FIGURE1), strategy_error(np.eye(8), FIGURE1),
              strategy_error(wavelet_strategy((8,)), FIGURE1), singular_value_bound(FIGURE1)]
    paper = [47.78, 45.36, 34.62, 29.18]
    np.testing.assert_allclose(np.sqrt(57.07 * np.array(totals)), paper, rtol=3e-3)


def test_figure1_mirror_variant_gives_the_same_numbers():
    """UNSURE in the notes: q6/q7 as 'GPA >= 3.0' rows; every quantity is identical."""
    mirror = FIGURE1.copy()
    mirror[5] = [0, 0, 1, 1, 0, 0, 0, 0]
    mirror[6] = [0, 0, 0, 0, 0, 0, 1, 1]
    assert singular_value_bound(mirror) == pytest.approx(singular_value_bound(FIGURE1), rel=1e-12)
    assert eigen_design(mirror).error == pytest.approx(eigen_design(FIGURE1).error, rel=1e-5)
    assert strategy_error(wavelet_strategy((8,)), mirror) == pytest.approx(21.0)


def test_refinement_goes_beyond_the_paper_to_the_sdp_optimum():
    plain = eigen_design(FIGURE1)
    refined = eigen_design(FIGURE1, refine_iter=5)
    optimum = optimal_error(FIGURE1) / SVDB
    assert optimum == pytest.approx(1.00583, abs=2e-4)
    assert optimum - 1e-4 <= refined.ratio <= 1.0065 < plain.ratio
    assert refined.ratio <= 1.007  # "about 1.007" in the notes
    # the refined strategy is what the error says: unit columns, same error recomputed
    A = refined.strategy
    np.testing.assert_allclose(np.linalg.norm(A, axis=0), 1.0, rtol=1e-10)
    assert strategy_error(A, FIGURE1) / SVDB == pytest.approx(refined.ratio, rel=1e-9)
    assert len(refined.refine_history) >= 1


def test_refinement_gradient_matches_finite_differences():
    from sklearn_ldp.optimize.eigen_design import _normalized_error

    rng = np.random.default_rng(0)
    G = FIGURE1.T @ FIGURE1
    B = np.eye(8) + 0.3 * rng.standard_normal((8, 8))
    _, gradient = _normalized_error(B.ravel(), G, 8)
    step = 1e-6
    for index in rng.choice(64, size=6, replace=False):
        e = np.zeros(64)
        e[index] = step
        numeric = (_normalized_error(B.ravel() + e, G, 8)[0]
                   - _normalized_error(B.ravel() - e, G, 8)[0]) / (2 * step)
        assert numeric == pytest.approx(gradient[index], rel=1e-5, abs=1e-6)
    A, history = refine_strategy(np.eye(8), G, max_iter=3)
    assert history[-1] < strategy_error(np.eye(8), FIGURE1)


# ---------------------------------------------------------------------- representation
def test_representation_independence():
    rng = np.random.default_rng(1)
    permutation = rng.permutation(8)
    permuted = FIGURE1[:, permutation]
    eigen, eigen_permuted = eigen_design(FIGURE1), eigen_design(permuted)
    assert eigen_permuted.error == pytest.approx(eigen.error, rel=1e-5)
    haar = strategy_error(wavelet_strategy((8,)), FIGURE1)
    haar_permuted = strategy_error(wavelet_strategy((8,)), permuted)
    assert abs(haar_permuted / haar - 1) > 0.05  # Haar depends on the cell order
    # error-equivalent workload: U W for an orthogonal U has the same Gram matrix
    U, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    assert eigen_design(U @ FIGURE1).error == pytest.approx(eigen.error, rel=1e-5)


# ---------------------------------------------------------------------- Eigen-Design
def test_completion_gives_sensitivity_one_and_never_hurts():
    W = workloads.all_range(16).toarray()
    design = eigen_design(W)
    norms = np.linalg.norm(design.strategy, axis=0)
    assert norms.max() == pytest.approx(1.0, rel=1e-9)
    np.testing.assert_allclose(norms, 1.0, atol=1e-6)  # every column completed to the max
    partial = np.sqrt(design.weights)[:, None] * design.eigen_queries
    assert design.error <= strategy_error(partial, W) + 1e-9
    assert strategy_error(design.strategy, W) == pytest.approx(design.error, rel=1e-8)


def test_zero_eigenvalue_queries_are_dropped():
    W = workloads.marginals({"a": range(3), "b": range(4), "c": range(2)}, k=2).toarray()
    design = eigen_design(W)
    assert design.eigenvalues.size == np.linalg.matrix_rank(W)
    assert np.all(design.weights > 0)
    assert design.ratio == pytest.approx(1.0, abs=2e-3)  # marginals: at the bound (LM12)


def test_speedups_and_the_sqrt_tail():
    W = workloads.all_range(64).toarray()
    full = eigen_design(W, speedup="none")
    separated = eigen_design(W, speedup="separation", group_size=8)
    flat = eigen_design(W, speedup="principal", n_principal=0.1, tail="flat")
    sqrt_tail = eigen_design(W, speedup="principal", n_principal=0.1, tail="sqrt")
    assert 1.0 <= full.ratio <= 1.05
    assert full.ratio - 1e-3 <= separated.ratio <= full.ratio * 1.05
    assert sqrt_tail.ratio <= full.ratio * 1.005  # as good as the full program
    assert flat.ratio > sqrt_tail.ratio + 0.01  # the paper's flat tail is clearly worse
    assert (separated.speedup, flat.n_principal) == ("separation", 7)
    # gram-only input gives the same design
    assert eigen_design(gram=W.T @ W).error == pytest.approx(full.error, rel=1e-4)


def test_program1_matches_the_kkt_solution_of_a_diagonal_design():
    # with the identity design, u_j <= 1 per cell and the optimum is u = 1
    np.testing.assert_allclose(program1(np.eye(3), [1.0, 2.0, 3.0]), 1.0, rtol=1e-5)
    # two queries sharing one cell: min 1/u1 + 4/u2 s.t. u1 + u2 <= 1 -> u = (1/3, 2/3)
    u = program1(np.array([[1.0], [1.0]]), [1.0, 4.0])
    np.testing.assert_allclose(u, [1 / 3, 2 / 3], rtol=1e-4)
    assert program1(np.eye(2), [0.0, 1.0])[0] == 0.0


def test_row_scaling_optimizes_the_normalized_workload():
    rng = np.random.default_rng(2)
    pairs = {tuple(int(v) for v in sorted(rng.integers(0, 32, 2))) for _ in range(40)}
    W = workloads.ranges(32, sorted(pairs)).toarray()
    W = np.vstack([W, np.ones((1, 32))])  # one large query among small ones
    normalized = W / np.linalg.norm(W, axis=1, keepdims=True)
    plain = eigen_design(W)
    scaled = eigen_design(W, row_scaling="unit")
    assert (strategy_error(scaled.strategy, normalized)
            <= strategy_error(plain.strategy, normalized) * (1 + 1e-4))
    assert scaled.bound == pytest.approx(plain.bound)  # the bound of the original workload


def test_lower_bound_holds_for_every_strategy():
    W = workloads.prefix(16).toarray()
    bound = singular_value_bound(W)
    rng = np.random.default_rng(3)
    strategies = [np.eye(16), W, tree_strategy((16,)), wavelet_strategy((16,)),
                  fourier_basis_strategy((16,)), rng.standard_normal((20, 16))]
    for A in strategies:
        assert strategy_error(A, W) >= bound * (1 - 1e-9)


# ---------------------------------------------------------------------- strategies
def test_baseline_strategies_shapes_and_sensitivity():
    assert tree_strategy((8,)).shape == (15, 8)
    assert matrix.l2_sensitivity(tree_strategy((8,))) ** 2 == pytest.approx(4)  # 4 levels
    assert tree_strategy((9,), branching=3).shape == (13, 9)
    assert matrix.l2_sensitivity(wavelet_strategy((8,))) ** 2 == pytest.approx(4)
    A = wavelet_strategy((6,))  # padded to 8 then cut
    assert np.linalg.matrix_rank(A) == 6
    np.testing.assert_allclose(np.linalg.norm(A, axis=0) ** 2, 4)
    assert wavelet_strategy((4, 2)).shape == (8, 8)  # Kronecker per attribute
    shape = (2, 4, 2)
    W = workloads.marginals({"a": range(2), "b": range(4), "c": range(2)}, k=1).toarray()
    F = fourier_basis_strategy(shape, W)
    assert F.shape == (1 + 1 + 3 + 1, 16)  # total + the characters of each attribute only
    assert MatrixMechanism(F, 1.0, 1e-5).supports(W).all()
    odd = workloads.marginals({"a": range(3), "b": range(3)}, k=1).toarray()
    assert MatrixMechanism(fourier_basis_strategy((3, 3), odd), 1.0, 1e-5).supports(odd).all()


def test_unsupported_strategy_is_refused_with_a_clear_error():
    W = workloads.prefix(4)
    mechanism = MatrixMechanism(np.eye(4)[:3], 1.0, 1e-5, name="three cells")
    with pytest.raises(ValueError, match="does not support the workload.*row space"):
        mechanism.check_supports(W.toarray(), W.labels)
    with pytest.raises(ValueError, match="does not support"):
        strategy_error(np.eye(4)[:3], W.toarray())


# ---------------------------------------------------------------------- the mechanism
def test_calibration_analytic_is_exact_and_classic_is_the_lm12_formula():
    eps, delta = 0.5, 1e-4
    mechanism = MatrixMechanism(wavelet_strategy((8,)), eps, delta)
    assert mechanism.sensitivity == pytest.approx(2.0)
    assert gaussian_delta(mechanism.sigma, 2.0, eps) <= delta
    assert gaussian_delta(mechanism.sigma * 0.99, 2.0, eps) > delta
    classic = MatrixMechanism(wavelet_strategy((8,)), eps, delta, calibration="classic")
    assert classic.sigma == pytest.approx(2.0 * math.sqrt(2 * math.log(2 / delta)) / eps)
    assert mechanism.sigma < classic.sigma


def test_matrix_mechanism_is_unbiased_with_the_analytic_variance():
    W = workloads.prefix(8).toarray()
    x = np.array([50, 0, 3, 20, 7, 0, 100, 1])
    mechanism = MatrixMechanism(wavelet_strategy((8,)), 1.0, 1e-5)
    rng = np.random.default_rng(4)
    repetitions = 3000
    answers = np.array([W @ mechanism.estimate(mechanism.measure(x, rng))
                        for _ in range(repetitions)])
    variance = mechanism.query_variance(W)
    check_unbiased_and_variance(answers, W @ x, variance)
    assert mechanism.total_squared_error(W.T @ W) == pytest.approx(variance.sum())
    # answers are consistent: the total equals the sum of the cells' estimates
    x_hat = mechanism.estimate(mechanism.measure(x, rng))
    assert (W @ x_hat)[-1] == pytest.approx(x_hat.sum())


def test_bad_parameters():
    with pytest.raises(ValueError, match="needs delta"):
        MatrixMechanism(np.eye(2), 1.0, None)
    with pytest.raises(ValueError, match=r"open interval \(0, 1\)"):
        MatrixMechanism(np.eye(2), 1.0, 1.5)
    with pytest.raises(ValueError, match="calibration"):
        MatrixMechanism(np.eye(2), 1.0, 1e-5, calibration="tight")
    with pytest.raises(ValueError, match="all zeros"):
        MatrixMechanism(np.zeros((2, 2)), 1.0, 1e-5)
    with pytest.raises(ValueError, match="do not apply"):
        central_strategy("wavelet", np.eye(4), branching=3)
    with pytest.raises(ValueError, match="unknown central strategy"):
        central_strategy("haar", np.eye(4))


def test_solver_failure_names_the_solver_and_suggests_another():
    W = workloads.all_range(16).toarray()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="CLARABEL.*Try solver='SCS'"):
            eigen_design(W, speedup="none", solver_options={"max_iter": 1})
    with pytest.raises(ValueError, match="not an installed cvxpy solver"):
        eigen_design(W, solver="NO_SUCH_SOLVER")
    with pytest.raises(ValueError, match="HIGHS"):
        eigen_design(W, solver="HIGHS")  # an LP solver cannot solve Program 1's cones


# ---------------------------------------------------------------------- discrete Gaussian
@pytest.mark.parametrize("sigma2", [1, 3, 40])
def test_discrete_gaussian_sampler_has_the_exact_distribution(sigma2):
    draws = sample_discrete_gaussian(sigma2, 60000, np.random.default_rng(5))
    support = np.arange(-12 * math.isqrt(sigma2) - 12, 12 * math.isqrt(sigma2) + 13)
    pmf = np.exp(-support.astype(float) ** 2 / (2 * sigma2))
    pmf /= pmf.sum()
    observed = np.array([(draws == k).sum() for k in support])
    assert observed.sum() == draws.size
    # chi-square on the cells with enough mass, the rest pooled
    assert chi_square_p_value(observed, draws.size * pmf) > 1e-4


def test_discrete_gaussian_large_sigma_and_python_path():
    rng = np.random.default_rng(6)
    draws = sample_discrete_gaussian(4096**2, 20000, rng)  # vectorized int64 path
    assert draws.std() == pytest.approx(4096, rel=5 * math.sqrt(1 / (2 * 20000)))
    big = sample_discrete_gaussian(20000**2, 3000, rng)  # exact Python-integer acceptance
    assert big.std() == pytest.approx(20000, rel=5 * math.sqrt(1 / (2 * 3000)))
    with pytest.raises(ValueError, match="integer"):
        sample_discrete_gaussian(2.5, 3, rng)


def test_bernoulli_exp_coins_are_exact():
    rng = np.random.default_rng(7)
    n = 40000
    for num, den in [(1, 3), (3, 2), (5, 1)]:
        heads = discrete_gaussian._bernoulli_exp(np.full(n, num), np.full(n, den), rng).mean()
        p = math.exp(-num / den)
        assert abs(heads - p) < 4.5 * math.sqrt(p * (1 - p) / n)


def test_zcdp_conversion_and_discrete_calibration():
    alphas = np.linspace(1.0001, 100, 400000)
    for rho, eps in [(0.05, 1.0), (0.01, 0.5)]:
        brute = np.exp(np.min((alphas - 1) * (alphas * rho - eps)
                              + alphas * np.log1p(-1 / alphas) - np.log(alphas - 1)))
        assert zcdp_delta(rho, eps) == pytest.approx(brute, rel=1e-6)
    sigma2 = discrete_gaussian.discrete_gaussian_sigma2(50, 1.0, 1e-5)
    assert zcdp_delta(50 / (2 * sigma2), 1.0) <= 1e-5 < zcdp_delta(50 / (2 * (sigma2 - 1)), 1.0)


def test_discrete_noise_mechanism_measures_integers_and_is_unbiased():
    W = workloads.prefix(8).toarray()
    design = eigen_design(W)
    mechanism = MatrixMechanism(design.strategy, 1.0, 1e-5, noise="discrete")
    x = np.array([5, 0, 3, 20, 7, 0, 10, 1])
    rng = np.random.default_rng(8)
    y = mechanism.measure(x, rng)
    assert y.dtype == np.int64
    np.testing.assert_array_equal(mechanism.A, np.round(mechanism.A))
    assert abs(mechanism.sigma / 4096 - 1) < 0.01  # default: about 2^12 lattice units
    repetitions = 1500
    answers = np.array([W @ mechanism.estimate(mechanism.measure(x, rng))
                        for _ in range(repetitions)])
    variance = mechanism.query_variance(W)
    check_unbiased_and_variance(answers, W @ x, variance)
    # the quantized strategy is as good as the real one, up to the rounding
    assert strategy_error(mechanism.A, W) == pytest.approx(design.error, rel=1e-3)
    with pytest.raises(ValueError, match="integer counts"):
        mechanism.measure(x + 0.5, rng)


# ---------------------------------------------------------------------- private selection
def test_exponential_mechanism_output_distribution():
    utilities = np.array([0.0, -1.0, -3.0, -0.5])
    p = exponential_probabilities(utilities, 2.0, 1.0)
    # The exact law: exp(eps u / (2 Delta)) with the grid's factor GRID / (GRID + 1) (the
    # utilities here lie on the grid; the base p / q is within 2^-20 of e^(eps / 66)).
    sharpness = private_selection.GRID / (private_selection.GRID + 1)
    nominal = np.exp(sharpness * utilities)
    np.testing.assert_allclose(p, nominal / nominal.sum(), rtol=1e-4)
    law = private_selection.exponential_law(utilities, 2.0, 1.0)
    assert sum(law.weights) == law.total and p.tolist() == [w / law.total for w in law.weights]
    rng = np.random.default_rng(9)
    draws = np.array([private_selection.exponential_mechanism(utilities, 2.0, 1.0, rng)
                      for _ in range(20000)])
    counts = np.bincount(draws, minlength=4)
    assert chi_square_p_value(counts, 20000 * p) > 1e-4


def test_relative_error_selection_is_private_for_every_neighbour():
    W = workloads.stack([workloads.prefix(8), workloads.histogram(8)]).toarray()
    candidates = {name: MatrixMechanism(central_strategy(name, W)[0], 0.9, 1e-5, name=name)
                  for name in ("identity", "hierarchical", "wavelet", "eigen")}
    x = np.array([300, 2, 0, 40, 900, 5, 60, 1])
    sanity, eps = 20.0, 0.1
    u, sensitivity = relative_error_utilities(x, W, list(candidates.values()), sanity)
    p = exponential_probabilities(u, eps, sensitivity)
    worst_change, worst_ratio = 0.0, 0.0
    for j in range(8):
        for step in (1, -1):
            neighbour = x.copy()
            neighbour[j] += step
            u2, _ = relative_error_utilities(neighbour, W, list(candidates.values()), sanity)
            worst_change = max(worst_change, np.abs(u2 - u).max())
            p2 = exponential_probabilities(u2, eps, sensitivity)
            worst_ratio = max(worst_ratio, np.max(np.abs(np.log(p2 / p))))
    assert worst_change <= sensitivity
    assert worst_ratio <= eps + 1e-12
    # with a large budget the best candidate wins; the choice is reproducible
    best = max(candidates, key=lambda c: u[list(candidates).index(c)])
    chosen = select_strategy(x, W, candidates, 50.0, sanity, np.random.default_rng(0))
    assert chosen.probabilities.max() > 0.95 and chosen.choice == best


def test_selection_frequencies_follow_the_probabilities():
    W = workloads.prefix(8).toarray()
    candidates = {name: MatrixMechanism(central_strategy(name, W)[0], 0.9, 1e-5, name=name)
                  for name in ("identity", "wavelet")}
    x = np.array([30, 2, 0, 40, 90, 5, 60, 1])
    rng = np.random.default_rng(10)
    choices = [select_strategy(x, W, candidates, 0.5, 5.0, rng) for _ in range(4000)]
    p = choices[0].probabilities
    assert 0.05 < p[0] < 0.95  # a genuinely random choice
    counts = np.array([sum(c.choice == name for c in choices) for name in candidates])
    assert chi_square_p_value(counts, 4000 * p) > 1e-4


# ---------------------------------------------------------------------- estimator
DOM = {"gender": ["M", "F"], "gpa": ["1-2", "2-3", "3-3.5", "3.5-4"]}


def _students(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"gender": rng.choice(DOM["gender"], n),
                         "gpa": rng.choice(DOM["gpa"], n, p=[0.1, 0.3, 0.4, 0.2])})


def test_issue_contract_eigen_on_raw_records():
    df = _students()
    W = workloads.Workload(FIGURE1, domain=DOM)
    est = WorkloadEstimator(workload=W, strategy="eigen", epsilon=0.5, delta=1e-4,
                            categories=DOM, random_state=0).fit(df)
    truth = FIGURE1 @ np.bincount(Domain(DOM).encode(df), minlength=8)
    sd = np.sqrt(est.expected_error_["worst_case"].to_numpy())
    assert np.all(np.abs(est.answers_.to_numpy() - truth) < 5 * sd)
    total = est.expected_error_["worst_case"].sum()
    assert total / est.lower_bound_ == pytest.approx(est.design_.ratio, rel=1e-6)
    assert est.strategy_matrix_.shape[1] == 8 and est.strategy_ == "eigen"
    assert est.privacy_budget_ == {"selection_epsilon": 0.0, "measurement_epsilon": 0.5,
                                   "delta": 1e-4}
    assert not hasattr(est, "partial_fit")  # a second release would spend epsilon again
    again = WorkloadEstimator(workload=W, strategy="eigen", epsilon=0.5, delta=1e-4,
                              categories=DOM, random_state=0).fit(df)
    pd.testing.assert_series_equal(est.answers_, again.answers_)
    # queries in the workload's span are answered consistently, others are refused
    assert est.predict(FIGURE1[1] + FIGURE1[5]).item() == pytest.approx(
        est.answers_.iloc[1] + est.answers_.iloc[5])
    with pytest.raises(ValueError, match="not in its row space"):
        est.predict(workloads.marginals(DOM, k=1))


def test_estimator_answers_have_the_expected_variance():
    df = _students(500)
    W = workloads.marginals(DOM, k=1)
    truth = W.toarray() @ np.bincount(Domain(DOM).encode(df), minlength=8)
    errors = np.array([
        WorkloadEstimator(workload=W, strategy="hierarchical", epsilon=1.0, delta=1e-5,
                          categories=DOM, random_state=seed).fit(df).answers_.to_numpy() - truth
        for seed in range(400)])
    variance = WorkloadEstimator(workload=W, strategy="hierarchical", epsilon=1.0, delta=1e-5,
                                 categories=DOM).fit(df).expected_error_["worst_case"]
    check_unbiased_and_variance(errors, 0.0, variance.to_numpy())


def test_auto_picks_the_least_analytic_error_and_private_selection_spends_budget():
    df = _students(1000)
    W = workloads.marginals(DOM, k=1)
    est = WorkloadEstimator(workload=W, strategy="auto", epsilon=1.0, delta=1e-5,
                            categories=DOM, random_state=0).fit(df)
    assert est.strategy_ == est.candidates_.idxmin()
    assert est.expected_error_["worst_case"].sum() == pytest.approx(est.candidates_.min())
    private = WorkloadEstimator(
        workload=W, strategy="auto", epsilon=1.0, delta=1e-5, categories=DOM, random_state=0,
        strategy_params={"selection": "relative_error", "selection_epsilon": 0.2,
                         "sanity_bound": 50, "candidates": ["identity", "wavelet", "eigen"]},
    ).fit(df)
    assert private.privacy_budget_["measurement_epsilon"] == pytest.approx(0.8)
    assert private.strategy_ == private.selection_.choice
    assert private.mechanism_.epsilon == pytest.approx(0.8)


def test_estimator_options_and_custom_strategy():
    df = _students(800)
    W = workloads.prefix(8)
    est = WorkloadEstimator(workload=W, strategy="eigen", epsilon=1.0, delta=1e-5,
                            categories=DOM, random_state=0, normalize=True,
                            strategy_params={"noise": "discrete", "refine_iter": 2}).fit(df)
    assert est.answers_.iloc[-1] == pytest.approx(1.0)  # normalized by the private total
    assert est.statistic_.dtype == np.int64
    custom = WorkloadEstimator(workload=W, strategy=np.tril(np.ones((8, 8))), epsilon=1.0,
                               delta=1e-5, categories=DOM, random_state=0).fit(df)
    assert custom.strategy_ == "custom"
    assert -1e-3 < custom.score(_students(300, seed=1)) <= 0


@pytest.mark.parametrize("params, message", [
    ({"strategy": "eigen"}, "needs delta"),
    ({"strategy": "eigen", "delta": 0.0}, r"open interval \(0, 1\)"),
    ({"strategy": "wavelet", "delta": 1e-5, "branching": 4},
     "do not apply"),
    ({"strategy": np.eye(8)[:7], "delta": 1e-5}, "does not support the workload"),
    ({"strategy": "auto", "delta": 1e-5,
      "strategy_params": {"selection": "relative_error", "selection_epsilon": 2.0}},
     "selection_epsilon"),
])
def test_estimator_bad_input(params, message):
    settings = {"workload": workloads.prefix(8), "epsilon": 1.0, "categories": DOM, **params}
    with pytest.raises(ValueError, match=message):
        WorkloadEstimator(**settings).fit(_students(50))


def test_local_model_is_unchanged_by_delta_rule():
    df = _students(300)
    local = WorkloadEstimator(strategy="hierarchical", epsilon=1.0, categories=DOM,
                              random_state=0).fit(df)
    assert not hasattr(local, "lower_bound_") and local.n_users_ == 300
    central = WorkloadEstimator(strategy="hierarchical", epsilon=1.0, delta=1e-5,
                                categories=DOM, random_state=0).fit(df)
    assert central.strategy_ == "hierarchical" and hasattr(central, "lower_bound_")


def test_local_strategies_get_delta_and_options_through():
    df = _students(400)
    gaussian = WorkloadEstimator(strategy="gaussian", epsilon=1.0, delta=1e-5, categories=DOM,
                                 random_state=0).fit(df)  # (eps, delta)-LDP: still local
    assert gaussian.n_users_ == 400 and not hasattr(gaussian, "lower_bound_")
    tree = WorkloadEstimator(strategy="hierarchical", epsilon=1.0, categories=DOM,
                             random_state=0, branching=3).fit(df)
    assert tree.encoder_.branching == 3
    with pytest.raises(ValueError, match="strategy_params does not fit LDPEncoder"):
        WorkloadEstimator(strategy="hadamard", epsilon=1.0, categories=DOM,
                          strategy_params={"depth": 2}).fit(df)


@parametrize_with_checks(
    [WorkloadEstimator(strategy="eigen", epsilon=1.0, delta=1e-5, random_state=0)],
    expected_failed_checks=lambda estimator: {
        "check_fit2d_predict1d": "predict takes queries: a 1-D array is one linear query",
        **FLOAT_CODES_REFUSED,
    },
)
def test_sklearn_compatible_central_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)
