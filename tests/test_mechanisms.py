"""Strategy matrices: exact privacy, reference values, sampling, unbiasedness and variance."""

import numpy as np
import pytest
from _stats import check_unbiased_and_variance, chi_square_p_value

from sklearn_ldp import workloads
from sklearn_ldp.mechanisms import (
    FactorizationMechanism,
    hadamard_strategy,
    hierarchical_strategy,
    mechanism_from_dict,
    mechanism_from_json,
    per_user_variance,
    rappor_strategy,
    sample_complexity,
    svd_lower_bound,
)
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.mechanisms.oracles.randomized_response import (
    randomized_response_histogram_variance,
)
from sklearn_ldp.selection import STRATEGIES, baseline_mechanism, build_mechanism

EPSILONS = [0.5, 1.0, 2.0, 4.0]
BINARY4 = {f"b{i}": [0, 1] for i in range(4)}
CATEGORICAL = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW")}


def _workloads():
    yield "histogram", (16,), workloads.histogram(16).toarray()
    yield "prefix", (16,), workloads.prefix(16).toarray()
    yield "all_range", (12,), workloads.all_range(12).toarray()
    yield "marginals2", (2, 2, 2, 2), workloads.marginals(BINARY4, k=2).toarray()
    yield "categorical2", (3, 2, 4), workloads.marginals(CATEGORICAL, k=2).toarray()


# Mechanisms whose exact strategy matrix is exponential in n (checked at small n only), and
# those without a finite one (audited statistically in their own test files).
EXPONENTIAL_STRATEGIES = ("rappor", "oue", "subset_selection", "hierarchical", "inp_rr", "the")
NO_STRATEGY_MATRIX = ("olh", "blh", "gaussian", "gaussian_pure", "she")


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("workload_name, shape, W", list(_workloads()))
@pytest.mark.parametrize("strategy", [name for name in STRATEGIES
                                      if name not in NO_STRATEGY_MATRIX])
def test_every_buildable_strategy_is_exactly_private(strategy, workload_name, shape, W, epsilon):
    n = int(np.prod(shape))
    if strategy in EXPONENTIAL_STRATEGIES and n > 12:
        pytest.skip("exact matrix has exponentially many rows; checked at n <= 12")
    mechanism, _ = build_mechanism(strategy, shape, epsilon, W, max_iter=60, random_state=0)
    Q = mechanism.strategy_matrix()
    assert np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-9)
    # max_o max_{u,u'} Q[o,u] / Q[o,u'] <= e^eps
    assert privacy_ratio(Q) <= np.exp(epsilon) * (1 + 1e-9)


def test_privacy_check_rejects_a_leaky_matrix():
    Q = np.array([[0.9, 0.1], [0.1, 0.9]])
    with pytest.raises(ValueError, match="not 1.0-LDP"):
        FactorizationMechanism(Q, 1.0)
    with pytest.raises(ValueError, match="sum to 1"):
        FactorizationMechanism(np.array([[0.5, 0.5], [0.4, 0.5]]), 5.0)


# ---------------------------------------------------------------- reference values (seeds §1.12)
def test_hierarchical_prefix_reference_with_pseudo_inverse_reconstruction():
    W = workloads.prefix(128).toarray()
    Q = hierarchical_strategy(128, 1.0)
    assert Q.shape == (340, 128)
    V = W @ np.linalg.pinv(Q)
    assert per_user_variance(V, Q, W).max() == pytest.approx(5665.561344, abs=1e-5)


def test_hierarchical_prefix_reference_with_optimal_reconstruction():
    W = workloads.prefix(128)
    z = FactorizationMechanism(hierarchical_strategy(128, 1.0), 1.0).per_user_variance(W.gram())
    assert z.max() == pytest.approx(5466.1318, abs=1e-3)
    assert z.mean() == pytest.approx(4949.6383, abs=1e-3)


@pytest.mark.parametrize("n, epsilon, expected", [(8, 0.5, 154.6483), (8, 1.0, 27.11470),
                                                  (8, 2.0, 3.563122)])
def test_randomized_response_closed_form(n, epsilon, expected):
    mechanism = baseline_mechanism("randomized_response", (n,), epsilon)
    z = mechanism.per_user_variance(np.eye(n))
    np.testing.assert_allclose(z, expected, rtol=1e-6)
    assert randomized_response_histogram_variance(n, epsilon) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize("epsilon, expected", [(0.5, 121731.7), (1, 17423.6), (2, 1283.08),
                                               (4, 21.51)])
def test_randomized_response_sample_complexity(epsilon, expected):
    z = randomized_response_histogram_variance(512, epsilon)
    assert sample_complexity(z, 512, alpha=0.01) == pytest.approx(expected, rel=1e-4)


@pytest.mark.parametrize("n, epsilon, worst, average", [(16, 1, 98.405, 95.804),
                                                        (64, 1, 443.78, 440.64),
                                                        (64, 2, 107.68, 105.74)])
def test_hadamard_histogram_reference(n, epsilon, worst, average):
    # The reference figures are those of the paper's block layout; the layout chosen by
    # default (the least mean variance over all layouts) is never worse.
    from sklearn_ldp.mechanisms import HadamardResponse
    z = HadamardResponse(n, epsilon, layout="paper").per_user_variance(np.eye(n))
    assert z.max() == pytest.approx(worst, abs=5e-3)
    assert z.mean() == pytest.approx(average, abs=5e-3)
    chosen = baseline_mechanism("hadamard", (n,), epsilon).per_user_variance(np.eye(n))
    assert chosen.mean() <= z.mean() * (1 + 1e-12)


@pytest.mark.parametrize("strategy, worst, average", [("randomized_response", 15967.5, 15588.7),
                                                      ("hadamard", 6819.04, 4716.54),
                                                      ("hierarchical_matrix", 1822.74, 1625.94)])
def test_prefix64_references(strategy, worst, average):
    gram = workloads.prefix(64).gram()
    if strategy == "hadamard":  # the reference is the paper's block layout
        from sklearn_ldp.mechanisms import HadamardResponse
        z = HadamardResponse(64, 1.0, layout="paper").per_user_variance(gram)
    else:
        z = baseline_mechanism(strategy, (64,), 1.0).per_user_variance(gram)
    assert z.max() == pytest.approx(worst, abs=0.05)
    assert z.mean() == pytest.approx(average, abs=0.05)


def test_shapes_of_reference_strategies():
    assert hadamard_strategy(16, 1.0).shape == (32, 16)
    assert hadamard_strategy(16, 3.0).shape == (32, 16)
    assert hadamard_strategy(64, 1.0).shape == (128, 64)
    assert hierarchical_strategy(64, 1.0).shape == (168, 64)
    assert rappor_strategy(4, 1.0).shape == (16, 4)


def test_histogram_lower_bound_reference():
    # (e^-eps - 1/n) / alpha for the identity workload, n = 512, alpha = 0.01
    W = np.eye(512)
    bound = svd_lower_bound(W, 1.0)
    assert sample_complexity(bound, 512, 0.01) == pytest.approx(36.59, abs=0.01)


def test_invariants_between_average_worst_and_lower_bound():
    W = workloads.prefix(32)
    mechanism = baseline_mechanism("hierarchical_matrix", (32,), 1.0)
    z = mechanism.per_user_variance(W.gram())
    frobenius = np.sum(W.toarray()**2) / 32
    assert z.mean() <= z.max() <= np.exp(1.0) * (z.mean() + frobenius) + 1e-9
    assert z.max() >= svd_lower_bound(W.toarray(), 1.0)


# ---------------------------------------------------------------- sampling and estimation
def test_randomize_follows_the_strategy_columns():
    mechanism = baseline_mechanism("hierarchical_matrix", (16,), 1.0)
    rng = np.random.default_rng(1)
    n_per_type = 40_000
    types = np.repeat(np.arange(16), n_per_type)
    reports = mechanism.randomize(types, rng)
    counts = np.zeros((mechanism.n_outputs, 16))
    np.add.at(counts, (reports.astype(np.int64), types), 1)
    expected = mechanism.Q * n_per_type
    # Pearson chi-square per type against its column, Bonferroni over the 16 types
    p_values = [chi_square_p_value(counts[:, t], expected[:, t]) for t in range(16)]
    assert min(p_values) > 1e-6 / 16


def test_zero_probability_outputs_are_never_sampled():
    Q = np.array([[0.5, 0.5], [0.0, 0.0], [0.5, 0.5]])
    mechanism = FactorizationMechanism(Q, 1.0)  # the zero row is dropped
    assert mechanism.n_outputs == 2
    reports = mechanism.randomize(np.zeros(1000, dtype=int), np.random.default_rng(0))
    assert set(np.unique(reports)) <= {0, 1}


@pytest.mark.parametrize("strategy", ["randomized_response", "hadamard", "hierarchical_matrix"])
def test_answers_are_unbiased_with_the_analytic_variance(strategy):
    """Mean and variance of each query answer over repetitions match the formulas."""
    n, epsilon, n_users, repetitions = 8, 1.0, 2000, 400
    W = workloads.prefix(n).toarray()
    mechanism = baseline_mechanism(strategy, (n,), epsilon)
    rng = np.random.default_rng(2024)
    types = rng.integers(0, n, size=n_users)
    x = np.bincount(types, minlength=n)
    answers = np.array([
        W @ mechanism.estimate(mechanism.aggregate(mechanism.randomize(types, rng)))
        for _ in range(repetitions)
    ])
    # exact variance of each answer for this data: sum_u x_u z_iu
    variance = mechanism.query_variance(W) @ x
    # the last prefix query is the total, known exactly: zero variance
    np.testing.assert_allclose(answers[:, -1], n_users, rtol=1e-9)
    assert variance[-1] == pytest.approx(0, abs=1e-6)
    answers, variance, W = answers[:, :-1], variance[:-1], W[:-1]
    check_unbiased_and_variance(answers, W @ x, variance)


def test_json_round_trip_rebuilds_the_same_mechanism():
    # On the prefix workload the optimizer's own strategy wins (on the histogram "optimized"
    # returns a closed form, which has no dense Q to compare).
    mechanism, _ = build_mechanism("optimized", (6,), 1.0, workloads.prefix(6), max_iter=20,
                                   random_state=0)
    rebuilt = mechanism_from_json(mechanism.to_json())
    assert rebuilt == mechanism
    np.testing.assert_array_equal(rebuilt.Q, mechanism.Q)
    with pytest.raises(ValueError, match="version"):
        spec = mechanism.to_dict()
        spec["version"] = 99
        mechanism_from_dict(spec)


def test_strategy_that_cannot_answer_the_workload_says_so():
    mechanism = baseline_mechanism("fourier", (2, 2, 2), 1.0, max_order=1)
    W = workloads.marginals({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, k=2).toarray()
    with pytest.raises(ValueError, match="row space"):
        mechanism.check_supports(W)
