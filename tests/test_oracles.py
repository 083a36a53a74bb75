"""The support-oracle framework, structured k-RR, exact simulation, post-processing."""

import numpy as np
import pandas as pd
import pytest
from _stats import check_unbiased_and_variance, chi_square_p_value

from sklearn_ldp import LDPEncoder, WorkloadEstimator, workloads
from sklearn_ldp.mechanisms import (
    FactorizationMechanism,
    RandomizedResponse,
    mechanism_from_json,
)
from sklearn_ldp.mechanisms._base import mechanism as mechanisms_base
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.postprocess import postprocess
from sklearn_ldp.reports import AggregatedReports
from sklearn_ldp.selection import baseline_mechanism


def support_decoder(mechanism, supports):
    """Dense one-report contributions ``L[:, o]`` of a support oracle (with the total step).

    ``supports[o]`` is the 0/1 support vector of output ``o``.
    """
    n = mechanism.n_inputs
    raw = (supports.T - mechanism.q) / (mechanism.p - mechanism.q)  # (n, m)
    return raw - raw.mean(axis=0) + 1.0 / n  # P X + 1/n


@pytest.mark.parametrize("n, epsilon", [(2, 0.5), (5, 1.0), (9, 3.0)])
def test_support_oracle_variance_matches_the_dense_formula(n, epsilon):
    """z_u = sum_o ||W L_o||^2 Q[o, u] - ||w_u||^2 with the explicit decoder."""
    mechanism = RandomizedResponse(n, epsilon)
    Q = mechanism.strategy_matrix()
    L = support_decoder(mechanism, np.eye(n))
    np.testing.assert_allclose(L @ Q, np.eye(n), atol=1e-12)  # unbiased
    for W in (np.eye(n), workloads.prefix(n).toarray(),
              np.random.default_rng(0).normal(size=(3, n))):
        G = W.T @ W
        dense = np.sum((W @ L) ** 2, axis=0) @ Q - np.diag(G)
        np.testing.assert_allclose(mechanism.per_user_variance(G), dense, rtol=1e-10, atol=1e-10)
        per_query = (W @ L) ** 2 @ Q - W**2
        np.testing.assert_allclose(mechanism.query_variance(W), per_query, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_randomized_response_is_private_and_equals_the_optimal_reconstruction(epsilon):
    n = 7
    mechanism = RandomizedResponse(n, epsilon)
    Q = mechanism.strategy_matrix()
    assert privacy_ratio(Q) <= np.exp(epsilon) * (1 + 1e-9)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0)
    dense = FactorizationMechanism(Q, epsilon)
    gram = workloads.prefix(n).gram()
    np.testing.assert_allclose(mechanism.per_user_variance(gram), dense.per_user_variance(gram))
    counts = np.array([5, 0, 3, 9, 1, 0, 2])
    np.testing.assert_allclose(
        mechanism.estimate(np.append(counts, counts.sum())), dense.estimate(counts)
    )


def test_randomized_response_sampling_follows_its_strategy():
    n, per_type = 5, 20000
    mechanism = RandomizedResponse(n, 1.0)
    types = np.repeat(np.arange(n), per_type)
    reports = mechanism.randomize(types, np.random.default_rng(3))
    assert reports.dtype == np.uint8
    observed = np.zeros((n, n))
    np.add.at(observed, (reports, types), 1)
    expected = mechanism.strategy_matrix() * per_type
    # Pearson chi-square per type against its column, Bonferroni over the n types
    p_values = [chi_square_p_value(observed[:, t], expected[:, t]) for t in range(n)]
    assert min(p_values) > 1e-6 / n


def _check_simulation_moments(mechanism, type_counts, repetitions, rng):
    """Mean and covariance of simulated output counts vs the exact multinomial moments."""
    Q = mechanism.strategy_matrix()
    draws = np.array([mechanism.simulate_statistic(type_counts, rng) for _ in range(repetitions)])
    if draws.shape[1] == Q.shape[0] + 1:  # support oracles append the number of reports
        assert np.all(draws[:, -1] == type_counts.sum())
        draws = draws[:, :-1]
    mean = Q @ type_counts
    covariance = np.diag(mean) - (Q * type_counts) @ Q.T
    check_unbiased_and_variance(draws, mean, np.diag(covariance))
    # one off-diagonal covariance (the counts of outputs 0 and 1), tolerance from its sd
    pair = np.cov(draws[:, 0], draws[:, 1])[0, 1]
    pair_sd = np.sqrt((covariance[0, 0] * covariance[1, 1] + covariance[0, 1] ** 2) / repetitions)
    assert abs(pair - covariance[0, 1]) < 4.5 * pair_sd


@pytest.mark.parametrize("name", ["randomized_response", "hierarchical_matrix"])
def test_simulated_statistic_has_the_exact_distribution(name):
    mechanism = baseline_mechanism(name, (8,), 1.0)
    type_counts = np.array([300, 0, 50, 120, 7, 0, 80, 443])
    # Seed 6: with seed 5 the exact table's law (1e-13 from the float strategy) shifts the
    # multinomial draws into a 4.8-sd variance fluctuation of one of 20 outputs (30 other
    # seeds pass).
    _check_simulation_moments(mechanism, type_counts, 3000, np.random.default_rng(6))


def test_simulation_blocks_cover_every_type(monkeypatch):
    """Randomized response spreads users in blocks of types: blocks of 3 give the same law."""
    from sklearn_ldp.mechanisms.oracles import randomized_response

    monkeypatch.setattr(randomized_response, "SIMULATION_BLOCK", 3)
    mechanism = RandomizedResponse(8, 1.0)
    type_counts = np.array([300, 0, 50, 120, 7, 0, 80, 443])
    _check_simulation_moments(mechanism, type_counts, 3000, np.random.default_rng(6))


def test_chunked_aggregation_equals_one_pass(monkeypatch):
    mechanism = RandomizedResponse(300, 1.0)
    reports = mechanism.randomize(np.random.default_rng(0).integers(0, 300, 100_000),
                                  np.random.default_rng(1))
    whole = mechanism.aggregate(reports)
    monkeypatch.setattr(mechanisms_base, "AGGREGATE_CHUNK", 999)
    chunked = mechanism.aggregate(reports)
    np.testing.assert_array_equal(whole, chunked)
    assert chunked.dtype == np.int64 and chunked[-1] == 100_000


def test_simulation_of_a_huge_population_does_not_overflow():
    mechanism = RandomizedResponse(4, 1.0)
    type_counts = np.array([4 * 10**9, 3 * 10**9, 2 * 10**9, 10**9], dtype=np.int64)
    statistic = mechanism.simulate_statistic(type_counts, np.random.default_rng(0))
    assert statistic[-1] == 10**10 and statistic[:-1].sum() == 10**10
    x_hat = mechanism.estimate(statistic)
    sd = np.sqrt(mechanism.query_variance(np.eye(4)) @ type_counts)
    assert np.all(np.abs(x_hat - type_counts) < 5 * sd)


def test_encoder_simulation_fits_like_reports():
    domain = {"colour": ["red", "green", "blue"], "size": ["S", "L"]}
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"colour": rng.choice(domain["colour"], 4000),
                       "size": rng.choice(domain["size"], 4000)})
    encoder = LDPEncoder(categories=domain, strategy="randomized_response", epsilon=1.0,
                         random_state=0).fit()
    aggregated = encoder.simulate(df)
    assert isinstance(aggregated, AggregatedReports) and len(aggregated) == 4000
    estimator = WorkloadEstimator().fit(aggregated)
    assert estimator.n_users_ == 4000
    truth = np.bincount(encoder.domain_.encode(df), minlength=6)
    sd = np.sqrt(estimator.expected_error_["worst_case"].to_numpy())
    assert np.all(np.abs(estimator.answers_.to_numpy() - truth) < 5 * sd)
    # partial fits mix simulated aggregates and per-user reports of the same mechanism
    estimator.partial_fit(encoder.transform(df))
    assert estimator.n_users_ == 8000
    with pytest.raises(ValueError, match="6 integer counts"):
        encoder.simulate_counts([1, 2, 3])


def test_mechanisms_round_trip_through_json():
    mechanism = RandomizedResponse(12, 0.7)
    rebuilt = mechanism_from_json(mechanism.to_json())
    assert rebuilt == mechanism and isinstance(rebuilt, RandomizedResponse)
    assert rebuilt != RandomizedResponse(12, 0.8)
    with pytest.raises(ValueError, match="not a mechanism specification"):
        mechanism_from_json('{"mechanism": "nope", "version": 1}')


def test_reports_of_another_domain_are_refused():
    mechanism = RandomizedResponse(4, 1.0)
    with pytest.raises(ValueError, match=r"indices in \[0, 4\)"):
        mechanism.aggregate(np.array([0, 1, 7]))
    with pytest.raises(ValueError, match="1-D array of integer"):
        mechanism.aggregate(np.zeros((3, 2), dtype=np.uint8))
    with pytest.raises(ValueError, match="user types"):
        mechanism.randomize(np.array([0, 4]), np.random.default_rng(0))


def test_norm_sub_is_the_simplex_projection_and_clip_zeroes_negatives():
    x_hat = np.array([40.0, -12.0, 25.0, 3.0, -1.0])
    total = 60.0
    projected = postprocess(x_hat, "norm_sub", None, total)
    # Norm-Sub's characterization: negatives become zero, the positive part is shifted by one
    # common amount, and the result sums to the number of users.
    assert projected.sum() == pytest.approx(total)
    positive = projected > 0
    shifts = x_hat[positive] - projected[positive]
    np.testing.assert_allclose(shifts, shifts[0])
    assert np.all(x_hat[~positive] <= shifts[0] + 1e-12)
    np.testing.assert_allclose(projected, postprocess(x_hat, "simplex", None, total))
    np.testing.assert_array_equal(postprocess(x_hat, "clip", None, total),
                                  [40.0, 0.0, 25.0, 3.0, 0.0])


def test_grid_search_compares_oracles_on_held_out_reports():
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    domain = {"item": [f"i{k}" for k in range(24)]}
    rng = np.random.default_rng(11)
    weights = 1.0 / np.arange(1, 25)
    df = pd.DataFrame({"item": rng.choice(domain["item"], 6000, p=weights / weights.sum())})
    pipe = make_pipeline(LDPEncoder(categories=domain, epsilon=1.0, random_state=0),
                         WorkloadEstimator())
    oracles = ["randomized_response", "oue", "olh", "hrr", "subset_selection"]
    search = GridSearchCV(pipe, {"ldpencoder__strategy": oracles}, cv=3).fit(df)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    # at n = 24, eps = 1 randomized response has 2.3x the variance of the others
    assert search.best_params_["ldpencoder__strategy"] != "randomized_response"
    assert scores[0] == scores.min()


def test_hull_projection_from_the_gram_equals_the_projection_with_the_workload():
    from sklearn_ldp.optimize.hull import project_onto_hull
    from sklearn_ldp.postprocess import hull_projection

    rng = np.random.default_rng(4)
    W = rng.normal(size=(5, 8))
    x_hat = rng.normal(scale=40.0, size=8)
    total = 20.0
    projected = hull_projection(x_hat, W.T @ W, total)
    point, _ = project_onto_hull(W, W @ x_hat / total, tol=1e-9)
    np.testing.assert_allclose(W @ projected / total, point, atol=1e-5)
    assert np.abs(projected).sum() <= total * (1 + 1e-6)


def test_bassily_pipeline_gaussian_with_hull_projection():
    domain = {"item": [f"i{k}" for k in range(64)]}
    rng = np.random.default_rng(8)
    df = pd.DataFrame({"item": rng.choice(domain["item"], 300)})
    truth = np.bincount(LDPEncoder(categories=domain).fit().domain_.encode(df), minlength=64)
    errors = {}
    for method in ("none", "hull"):
        encoder = LDPEncoder(categories=domain, strategy="gaussian", epsilon=1.0, delta=1e-6,
                             random_state=1)
        estimator = WorkloadEstimator(postprocess=method).fit(encoder.fit_transform(df))
        errors[method] = np.sum((estimator.answers_.to_numpy() - truth) ** 2)
    # 300 users, 64 noisy coordinates of sd ~8.4 sqrt(300) each: projecting onto the hull
    # (the truth / N lies in it) removes most of the noise
    assert errors["hull"] < 0.2 * errors["none"]
    with pytest.raises(ValueError, match="delta"):
        LDPEncoder(categories=domain, strategy="gaussian", epsilon=1.0).fit()
    with pytest.raises(ValueError, match="2 ln 2|2\\*ln|1.386"):
        LDPEncoder(categories=domain, strategy="gaussian_pure", epsilon=3.0).fit()


def test_known_total_step_on_prefix_reference():
    """The figure quoted in support.py and docs/oracles.md (SUE, n = 8, eps = 1, prefix)."""
    from sklearn_ldp.mechanisms import SymmetricUnaryEncoding

    mechanism = SymmetricUnaryEncoding(8, 1.0)
    W = workloads.prefix(8).toarray()
    Q = mechanism.strategy_matrix()
    bits = (np.arange(2**8)[:, None] >> np.arange(8)[None, :]) & 1
    textbook = (bits.T - mechanism.q) / (mechanism.p - mechanism.q)  # no known-total step
    before = (np.sum((W @ textbook) ** 2, axis=0) @ Q - np.sum(W**2, axis=0)).max()
    after = mechanism.per_user_variance(W.T @ W).max()
    assert before == pytest.approx(141.04, abs=0.01)
    assert after == pytest.approx(41.14, abs=0.01)
