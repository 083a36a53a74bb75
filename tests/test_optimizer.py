"""Bounded-simplex projection, analytic gradient, and the strategy optimizer."""

import numpy as np
import pytest

from sklearn_ldp import workloads
from sklearn_ldp.mechanisms.factorization.mechanism import (
    FactorizationMechanism,
    average_case_objective,
)
from sklearn_ldp.optimize import optimize_strategy, project_bounded_simplex
from sklearn_ldp.optimize.ldp_factorization import (
    SINGLE_THREAD_MAX_CELLS,
    AverageCaseObjective,
    limit_blas_threads,
)
from sklearn_ldp.selection import baseline_mechanism, build_mechanism, worst_case_variance


def _random_bounds(rng, m, epsilon):
    z = rng.uniform(0.2, 1.8, m)
    z *= (1 + np.exp(-epsilon)) / 2 / z.sum()
    return z, np.exp(epsilon) * z


@pytest.mark.parametrize("method", ["sort", "newton"])
def test_projection_satisfies_the_optimality_conditions(method):
    rng = np.random.default_rng(0)
    m, n = 30, 25
    lower, upper = _random_bounds(rng, m, 1.0)
    R = rng.normal(scale=0.1, size=(m, n))
    Q = project_bounded_simplex(R, lower, upper, method=method)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-12)
    assert np.all(Q >= lower[:, None]) and np.all(Q <= upper[:, None])
    # KKT: Q = clip(R + lambda) with one lambda per column
    shift = Q - R
    free = (Q > lower[:, None] + 1e-15) & (Q < upper[:, None] - 1e-15)
    for u in range(n):
        assert np.ptp(shift[free[:, u], u]) < 1e-12
    # and no feasible point is closer (random feasible perturbations along the simplex)
    for _ in range(50):
        direction = rng.normal(size=(m, n))
        direction -= direction.mean(axis=0)
        candidate = np.clip(Q + 1e-3 * direction, lower[:, None], upper[:, None])
        candidate = project_bounded_simplex(candidate, lower, upper, method="sort")
        assert np.sum((candidate - R) ** 2) >= np.sum((Q - R) ** 2) - 1e-12


def test_sort_and_newton_projections_agree():
    rng = np.random.default_rng(3)
    lower, upper = _random_bounds(rng, 200, 2.0)
    R = rng.random((200, 60)) / 100
    np.testing.assert_allclose(
        project_bounded_simplex(R, lower, upper, "sort"),
        project_bounded_simplex(R, lower, upper, "newton"),
        atol=1e-14,
    )


def test_projection_rejects_infeasible_bounds():
    with pytest.raises(ValueError, match="infeasible"):
        project_bounded_simplex(np.zeros((3, 1)), np.full(3, 0.5), np.ones(3))


# A full-rank Gram (Cholesky factor) and a singular one (eigen-factor of the marginals).
SMALL_GRAMS = {
    "prefix": workloads.prefix(8).gram(),
    "marginals": workloads.marginals({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, k=1).gram(),
}


@pytest.mark.parametrize("name", sorted(SMALL_GRAMS))
def test_analytic_gradient_matches_finite_differences(name):
    rng = np.random.default_rng(0)
    gram = SMALL_GRAMS[name]
    n, m = gram.shape[0], 20
    Q = rng.random((m, n)) + 0.1
    Q /= Q.sum(axis=0)
    function = AverageCaseObjective(gram)
    evaluation = function.gradient(function.value(np.ascontiguousarray(Q.T)))
    objective, gradient_t = evaluation.objective, evaluation.gradient
    assert objective == pytest.approx(average_case_objective(Q, gram))
    np.testing.assert_allclose(
        evaluation.per_user, FactorizationMechanism(Q, 50.0).per_user_variance(gram), rtol=1e-9
    )
    numeric = np.zeros_like(Q)
    h = 1e-6
    for o in range(m):
        for u in range(n):
            step = np.zeros_like(Q)
            step[o, u] = h
            numeric[o, u] = (average_case_objective(Q + step, gram)
                             - average_case_objective(Q - step, gram)) / (2 * h)
    np.testing.assert_allclose(gradient_t.T, numeric, rtol=1e-5, atol=1e-6 * np.abs(numeric).max())


def test_optimizer_reports_progress_and_keeps_the_best_iterate():
    gram = workloads.prefix(16).gram()
    result = optimize_strategy(gram, 1.0, max_iter=80, random_state=0)
    assert result.Q.shape == (64, 16)
    assert 1 <= result.n_iter <= 80 and len(result.history) == result.n_iter
    assert result.worst_case == pytest.approx(min(h["worst_case"] for h in result.history))
    # seeds_math.md §1.12 sanity: RR 300, HR 362 on Prefix n=16
    assert result.worst_case < 0.6 * 300


def test_optimizer_is_reproducible():
    gram = workloads.histogram(8).gram()
    first = optimize_strategy(gram, 1.0, max_iter=30, random_state=7)
    second = optimize_strategy(gram, 1.0, max_iter=30, random_state=7)
    np.testing.assert_array_equal(first.Q, second.Q)


def test_optimizer_result_is_private_and_column_stochastic():
    gram = workloads.prefix(16).gram()
    result = optimize_strategy(gram, 1.0, max_iter=40, random_state=0)
    ratio = (result.Q.max(axis=1) / result.Q.min(axis=1)).max()
    assert ratio <= np.exp(1.0) * (1 + 1e-9)
    np.testing.assert_allclose(result.Q.sum(axis=0), 1.0, atol=1e-12)


BINARY6 = {f"b{i}": [0, 1] for i in range(6)}
WORKLOADS64 = {
    "histogram": workloads.histogram(64).toarray(),
    "prefix": workloads.prefix(64).toarray(),
    "all_range": workloads.all_range(64).toarray(),
    "marginals2": workloads.marginals(BINARY6, k=2).toarray(),
}


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0, 4.0])
@pytest.mark.parametrize("name", sorted(WORKLOADS64))
def test_optimized_beats_every_baseline_at_n64(name, epsilon):
    W = WORKLOADS64[name]
    gram = W.T @ W
    mechanism, _ = build_mechanism("optimized", (64,), epsilon, W, init="best", max_iter=300,
                                   random_state=0)
    optimized = worst_case_variance(mechanism, gram)
    for strategy in ["randomized_response", "hadamard", "hierarchical_matrix", "fourier"]:
        shape = (2,) * 6 if strategy == "fourier" else (64,)
        baseline = worst_case_variance(baseline_mechanism(strategy, shape, epsilon, W), gram)
        assert optimized <= baseline * (1 + 1e-9), strategy


def _blas_threads():
    from threadpoolctl import threadpool_info

    return {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}


def test_small_problems_run_the_blas_on_one_thread():
    # Loaded 2-core machine: 0.29 s per iteration at n = 64 with two BLAS threads, 0.016 with
    # one (see the module docstring); larger problems keep the library's own setting.
    outside = _blas_threads()
    with limit_blas_threads(64):
        assert _blas_threads() == {1}
    with limit_blas_threads(SINGLE_THREAD_MAX_CELLS + 1):
        assert _blas_threads() == outside
    assert _blas_threads() == outside
