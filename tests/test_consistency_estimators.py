"""Consistent frequency estimates (issue 17, item 3): Base-Cut and the EM / maximum-likelihood
estimate of every frequency oracle, and how the estimators label ``expected_error_``.

* Both return non-negative estimates; EM's sums to the number of users (a distribution).
* EM never lowers the likelihood (plain and accelerated), its limit is a fixed point of the
  EM map satisfying the optimality (KKT) conditions, and the closed form used for the support
  oracles is that fixed point.
* The structured channels equal a dense reference implementation of EM (the dense strategy
  matrix for the exact models, the dense composite channel for the support counts), iterate
  by iterate, on small domains.
* At large N, EM recovers a known distribution within bands derived from the analytic
  variance of the unbiased estimate.
* Bad parameters raise ValueError (TypeError for a mechanism without a channel).

Seeds: the data and the privatization never share a generator seed (reusing one correlates
the users' types with their noise).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from sklearn.exceptions import ConvergenceWarning

from sklearn_ldp import LDPEncoder, WorkloadEstimator, workloads
from sklearn_ldp.mechanisms import (
    BinaryLocalHashing,
    FactorizationMechanism,
    HadamardRandomizedResponse,
    HadamardResponse,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
    SymmetricUnaryEncoding,
    randomized_response_strategy,
)
from sklearn_ldp.mechanisms.oracles.em import _separable_mle, em_frequencies, oracle_channel
from sklearn_ldp.postprocess import base_cut, em_estimate, postprocess

ORACLES = {
    "randomized_response": RandomizedResponse,
    "rappor": SymmetricUnaryEncoding,
    "oue": OptimizedUnaryEncoding,
    "olh": OptimizedLocalHashing,
    "blh": BinaryLocalHashing,
    "hadamard": HadamardResponse,
    "hrr": HadamardRandomizedResponse,
    "subset_selection": SubsetSelection,
}
SUPPORT = ("randomized_response", "rappor", "oue", "olh", "blh", "subset_selection")


def _population(n, n_users, seed=11):
    """A skewed population with empty cells (where post-processing matters)."""
    weights = 1.0 / np.arange(1, n + 1) ** 1.5
    weights[n // 2::3] = 0.0  # some empty cells
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_users, weights / weights.sum())


def _statistic(mechanism, counts, seed):
    """The aggregate of the users ``counts`` (exact simulation where the oracle has one)."""
    rng = np.random.default_rng(seed)
    try:
        return mechanism.simulate_statistic(counts, rng)
    except NotImplementedError:
        users = rng.permutation(np.repeat(np.arange(counts.size), counts))
        return mechanism.aggregate(mechanism.randomize(users, rng))


def _cell_sd(mechanism, n_users):
    """Standard deviation of each unbiased cell count, users spread uniformly."""
    _, average = mechanism.query_variance_summary(workloads.histogram(mechanism.n_inputs))
    return np.sqrt(n_users * np.asarray(average))


# ---------------------------------------------------------------- valid outputs
@pytest.mark.parametrize("name", ORACLES)
def test_em_and_base_cut_outputs_are_valid(name):
    mechanism = ORACLES[name](12, 1.0)
    counts = _population(12, 3000)
    statistic = _statistic(mechanism, counts, seed=101)
    for solver in ("auto", "em"):
        estimate, info = em_estimate(mechanism, statistic, solver=solver)
        assert estimate.shape == (12,) and np.all(np.isfinite(estimate))
        assert estimate.min() >= 0.0
        assert estimate.sum() == pytest.approx(3000, rel=1e-12)
        assert info["converged"]
        assert info["model"] == ("exact" if name in ("randomized_response", "hadamard", "hrr")
                                 else "composite")
    unbiased = mechanism.estimate(statistic)
    sd = _cell_sd(mechanism, 3000)
    cut = base_cut(unbiased, sd)
    threshold = stats.norm.isf(0.05 / 12) * sd
    assert cut.min() >= 0.0
    kept = unbiased > threshold
    np.testing.assert_array_equal(cut[kept], unbiased[kept])  # kept cells unchanged
    assert np.all(cut[~kept] == 0.0)


def test_em_on_a_factorization_strategy():
    mechanism = FactorizationMechanism(randomized_response_strategy(5, 1.0), 1.0)
    counts = np.array([400, 300, 200, 100, 0])
    statistic = _statistic(mechanism, counts, seed=7)
    # Run to convergence: at the default tol (1e-2 nats) the stopping point moves by ~0.1
    # with the draw, which is not what this compares.
    estimate, info = em_estimate(mechanism, statistic, tol=1e-8)
    assert info["model"] == "exact" and info["solver"] == "em" and info["converged"]
    # The same channel as k-RR's (up to the 1e-13 of its exact table): the same maximum
    # (k-RR's is in closed form).
    closed, _ = em_estimate(RandomizedResponse(5, 1.0),
                            np.append(statistic, statistic.sum()))
    np.testing.assert_allclose(estimate, closed, atol=0.05)


# ---------------------------------------------------------------- EM's likelihood and fixed point
@pytest.mark.parametrize("accelerate", [False, True])
@pytest.mark.parametrize("name", ORACLES)
def test_em_likelihood_never_decreases(name, accelerate):
    mechanism = ORACLES[name](10, 0.7)
    statistic = _statistic(mechanism, _population(10, 2000), seed=202)
    _, info = em_frequencies(mechanism, statistic, solver="em", accelerate=accelerate,
                             max_iter=300, tol=1e-12)
    history = info["history"]
    assert history.size > 2
    # Rounding of a sum of ~20 logs: a relative 1e-13 of the total.
    assert np.all(np.diff(history) >= -1e-13 * np.abs(history[:-1]))
    assert history[-1] > history[0]


@pytest.mark.parametrize("name", ORACLES)
def test_em_limit_satisfies_the_optimality_conditions(name):
    """At the maximum over the simplex the gradient ``g = B^T (c / B pi)`` equals ``T`` on the
    cells with mass and is at most ``T`` on the empty ones (the EM map's fixed point
    ``pi = pi g / T``, plus the condition that no empty cell would gain)."""
    mechanism = ORACLES[name](10, 1.0)
    statistic = _statistic(mechanism, _population(10, 5000), seed=303)
    channel = oracle_channel(mechanism, statistic)
    estimate, _ = em_estimate(mechanism, statistic)  # closed form for the support oracles
    pi = estimate / estimate.sum()
    forward = channel.forward(pi)
    gradient = channel.adjoint(np.where(channel.counts > 0, channel.counts / forward, 0.0))
    relative = gradient / channel.total - 1.0
    tolerance = 1e-7 if name in SUPPORT else 2e-3  # exact closed form / EM stopped at tol
    assert np.all(relative <= tolerance)
    massive = pi > 1e-3
    assert np.all(np.abs(relative[massive]) <= tolerance)
    # The fixed point of the EM map.
    np.testing.assert_allclose(channel.em_step(pi), pi, atol=tolerance)


@pytest.mark.parametrize("name", SUPPORT)
def test_closed_form_is_em_limit(name):
    mechanism = ORACLES[name](16, 0.8)
    statistic = _statistic(mechanism, _population(16, 4000), seed=404)
    closed = _separable_mle(mechanism, statistic)
    channel = oracle_channel(mechanism, statistic)
    iterated, info = em_frequencies(mechanism, statistic, solver="em", tol=1e-8,
                                    max_iter=20000)
    # EM approaches the maximum from below; the closed form is at least as likely.
    assert channel.log_likelihood(closed) >= info["log_likelihood"] - 1e-9 * abs(
        info["log_likelihood"])
    sd = _cell_sd(mechanism, 4000)
    assert np.all(np.abs(iterated - 4000 * closed) <= 0.05 * sd)


# ---------------------------------------------------------------- structured = dense reference
def _dense_reference(mechanism, statistic):
    """``(B, c)``: the channel and observed counts, densely, from first principles."""
    if isinstance(mechanism, RandomizedResponse | HadamardResponse):
        return mechanism.strategy_matrix(), np.asarray(statistic[:mechanism.strategy_matrix()
                                                                 .shape[0]], dtype=float)
    if isinstance(mechanism, HadamardRandomizedResponse):
        return mechanism.strategy_matrix(), np.asarray(statistic[2:], dtype=float)
    n, p, q = mechanism.n_inputs, mechanism.p, mechanism.q
    support = np.full((n, n), q) + (p - q) * np.eye(n)  # P(j in S | u)
    channel = np.vstack([support, 1.0 - support]) / n
    supported, total = np.asarray(statistic[:-1], dtype=float), float(statistic[-1])
    return channel, np.concatenate([supported, total - supported])


@pytest.mark.parametrize("n", [5, 8])
@pytest.mark.parametrize("name", ORACLES)
def test_structured_em_equals_dense_reference(name, n):
    mechanism = ORACLES[name](n, 1.3)
    statistic = _statistic(mechanism, _population(n, 1500), seed=505)
    B, c = _dense_reference(mechanism, statistic)
    assert np.allclose(B.sum(axis=0), 1.0)  # column-stochastic
    channel = oracle_channel(mechanism, statistic)
    np.testing.assert_array_equal(channel.counts, c)
    pi = np.full(n, 1.0 / n)
    for _ in range(25):  # plain EM (IBU) with the dense matrix
        pi = pi * (B.T @ (c / (B @ pi))) / c.sum()
    reference_likelihood = float(c[c > 0] @ np.log((B @ pi)[c > 0]))
    estimate, info = em_frequencies(mechanism, statistic, solver="em", accelerate=False,
                                    max_iter=25, tol=1e-300)
    assert info["n_iter"] == 25
    np.testing.assert_allclose(estimate / 1500, pi, rtol=1e-10, atol=1e-14)
    assert info["log_likelihood"] == pytest.approx(reference_likelihood, rel=1e-12)


@pytest.mark.parametrize("name", ["randomized_response", "hadamard", "hrr"])
def test_exact_models_maximize_the_reports_likelihood(name):
    """For these oracles the statistic is the histogram of the reports: the channel's
    likelihood is the likelihood of the reports themselves (up to a constant), computed
    from the dense strategy matrix of the mechanism."""
    mechanism = ORACLES[name](7, 1.0)
    statistic = _statistic(mechanism, _population(7, 800), seed=606)
    Q = mechanism.strategy_matrix()
    outputs = statistic[2:] if name == "hrr" else statistic[:Q.shape[0]]
    channel = oracle_channel(mechanism, statistic)
    rng = np.random.default_rng(0)
    for _ in range(3):
        pi = rng.dirichlet(np.ones(7))
        assert channel.log_likelihood(pi) == pytest.approx(
            float(outputs @ np.log(Q @ pi)), rel=1e-12)


# ---------------------------------------------------------------- recovery at large N
@pytest.mark.parametrize("name", ORACLES)
def test_em_recovers_a_known_distribution(name):
    n, n_users = 16, 200_000
    mechanism = ORACLES[name](n, 1.0)
    counts = _population(n, n_users)
    statistic = _statistic(mechanism, counts, seed=707)
    estimate, _ = em_estimate(mechanism, statistic)
    # The MLE's error is of the order of the unbiased estimate's standard deviation (never
    # much more: EM only removes infeasible noise); 5 standard deviations per cell, 16
    # cells, fixed seed.
    sd = _cell_sd(mechanism, n_users)
    assert np.all(np.abs(estimate - counts) <= 5 * sd), (estimate - counts) / sd
    # And the empty cells are (nearly) empty: within 5 sd of 0 from above.
    assert np.all(estimate[counts == 0] <= 5 * sd[counts == 0])


def test_em_beats_the_unbiased_estimate_on_skewed_data():
    """Mean squared error over 6 collections on Zipf data with many rare cells."""
    n, n_users = 128, 20_000
    weights = 1.0 / np.arange(1, n + 1) ** 1.1
    counts = np.random.default_rng(3).multinomial(n_users, weights / weights.sum())
    for name in ("oue", "hadamard", "hrr"):
        mechanism = ORACLES[name](n, 1.0)
        errors = {"none": [], "em": [], "base_cut": []}
        for seed in range(6):
            statistic = _statistic(mechanism, counts, seed=1000 + seed)
            unbiased = mechanism.estimate(statistic)
            errors["none"].append(np.mean((unbiased - counts) ** 2))
            errors["em"].append(np.mean((em_estimate(mechanism, statistic)[0] - counts) ** 2))
            cut = base_cut(unbiased, _cell_sd(mechanism, n_users))
            errors["base_cut"].append(np.mean((cut - counts) ** 2))
        assert np.mean(errors["em"]) < 0.7 * np.mean(errors["none"]), name
        assert np.mean(errors["base_cut"]) < np.mean(errors["none"]), name


# ---------------------------------------------------------------- bad parameters
def test_bad_parameters_raise():
    mechanism = OptimizedUnaryEncoding(6, 1.0)
    statistic = _statistic(mechanism, np.array([50, 40, 30, 20, 10, 0]), seed=1)
    for kwargs, match in [({"max_iter": 0}, "max_iter"), ({"max_iter": 2.5}, "max_iter"),
                          ({"tol": 0.0}, "tol"), ({"tol": -1e-3}, "tol"),
                          ({"tol": float("nan")}, "tol"), ({"tol": True}, "tol"),
                          ({"solver": "newton"}, "solver")]:
        with pytest.raises(ValueError, match=match):
            em_estimate(mechanism, statistic, **kwargs)
    with pytest.raises(ValueError, match="start"):
        em_frequencies(mechanism, statistic, solver="em", start=np.array([1, 0, 1, 1, 1, 1.0]))
    with pytest.raises(ValueError, match="statistic"):
        em_estimate(mechanism, statistic[:-2])
    with pytest.raises(ValueError, match="0 users|no reports"):
        em_estimate(mechanism, np.zeros_like(statistic))
    from sklearn_ldp.mechanisms import HierarchicalHistogram
    with pytest.raises(TypeError, match="frequency oracles"):
        em_estimate(HierarchicalHistogram(16, 1.0), np.zeros(10))
    unbiased = np.array([5.0, -1.0, 2.0])
    for kwargs, match in [({"std": -1.0}, "std"), ({"std": np.ones(2)}, "std"),
                          ({"std": 1.0, "alpha": 0.0}, "alpha"),
                          ({"std": 1.0, "alpha": 1.0}, "alpha"),
                          ({"std": 1.0, "alpha": "0.1"}, "alpha")]:
        with pytest.raises(ValueError, match=match):
            base_cut(unbiased, **kwargs)
    with pytest.raises(ValueError, match="x_hat"):
        base_cut(np.array([1.0, np.nan]), 1.0)
    with pytest.raises(ValueError, match="postprocess must be one of"):
        postprocess(unbiased, "norm_cut", None, 6.0)
    with pytest.raises(ValueError, match="std"):
        postprocess(unbiased, "base_cut", None, 6.0)
    with pytest.raises(ValueError, match="do not apply"):
        postprocess(unbiased, "clip", None, 6.0, params={"alpha": 0.1})


# ---------------------------------------------------------------- WorkloadEstimator
DOMAIN = {"item": [f"i{k}" for k in range(32)]}


def _reports(strategy, n_users=4000, seed=21):
    weights = 1.0 / np.arange(1, 33) ** 1.2
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"item": rng.choice(DOMAIN["item"], n_users, p=weights / weights.sum())})
    encoder = LDPEncoder(categories=DOMAIN, strategy=strategy, epsilon=1.0,
                         random_state=seed + 1000)
    return df, encoder.fit_transform(df)


def test_workload_estimator_em_and_base_cut():
    df, reports = _reports("hrr")
    none = WorkloadEstimator().fit(reports)
    assert none.expected_error_kind_ == "output" and none.postprocess_info_ is None
    assert none.expected_error_.columns.name is None
    assert none.expected_error_.attrs["expected_error_kind"] == "output"
    em = WorkloadEstimator(postprocess="em", postprocess_params={"tol": 1e-8}).fit(reports)
    assert em.data_vector_.min() >= 0 and em.data_vector_.sum() == pytest.approx(4000)
    assert em.answers_.sum() == pytest.approx(4000)
    assert em.postprocess_info_["converged"] and em.postprocess_info_["model"] == "exact"
    np.testing.assert_array_equal(em.unbiased_data_vector_, none.data_vector_)
    cut = WorkloadEstimator(postprocess="base_cut", postprocess_params={"alpha": 0.01}).fit(
        reports)
    assert cut.data_vector_.min() >= 0
    for fitted in (em, cut):
        # The analytic error is the unbiased estimate's, and every printout says so.
        assert fitted.expected_error_kind_ == "unbiased_estimate"
        table = fitted.expected_error_
        assert "unbiased" in table.columns.name
        assert table.attrs["expected_error_kind"] == "unbiased_estimate"
        pd.testing.assert_frame_equal(table, none.expected_error_, check_names=False)
        assert "unbiased" in fitted.predict_error(np.eye(32)[:3]).columns.name


def test_workload_estimator_em_warns_when_stopped_early():
    _, reports = _reports("hadamard")
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        estimator = WorkloadEstimator(postprocess="em",
                                      postprocess_params={"max_iter": 1}).fit(reports)
    assert not estimator.postprocess_info_["converged"]
    assert estimator.data_vector_.sum() == pytest.approx(4000)


def test_workload_estimator_bad_postprocess_parameters():
    _, reports = _reports("oue", n_users=500)
    for params in ({"alpha": 0.1}, "tol=1", {"max_iter": 10, "bogus": 1}):
        with pytest.raises(ValueError, match="postprocess_params"):
            WorkloadEstimator(postprocess="em", postprocess_params=params).fit(reports)
    with pytest.raises(ValueError, match="postprocess_params"):
        WorkloadEstimator(postprocess="wnnls", postprocess_params={"alpha": 0.1}).fit(reports)
    with pytest.raises(ValueError, match="max_iter"):
        WorkloadEstimator(postprocess="em", postprocess_params={"max_iter": 0}).fit(reports)
    tree = LDPEncoder(categories=DOMAIN, strategy="hierarchical", epsilon=1.0,
                      random_state=0).fit_transform(pd.DataFrame({"item": ["i0"] * 50}))
    with pytest.raises(ValueError, match="postprocess='em'"):
        WorkloadEstimator(postprocess="em").fit(tree)
    raw = pd.DataFrame({"item": ["i0", "i1"] * 50})
    with pytest.raises(ValueError, match="central model"):
        WorkloadEstimator(strategy="identity", epsilon=1.0, delta=1e-5, categories=DOMAIN,
                          postprocess="em").fit(raw)


def test_central_model_base_cut():
    rng = np.random.default_rng(5)
    raw = pd.DataFrame({"item": rng.choice(DOMAIN["item"][:4], 2000)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        estimator = WorkloadEstimator(strategy="identity", epsilon=1.0, delta=1e-5,
                                      categories=DOMAIN, postprocess="base_cut",
                                      random_state=0).fit(raw)
    # The 28 empty cells are cut (noise sd ~4.8 against a threshold ~3.4 sd) and the four
    # full ones (~500 users, ~100 sd) kept.
    assert np.all(estimator.data_vector_[4:] == 0.0)
    assert np.all(estimator.data_vector_[:4] > 0)
    assert estimator.expected_error_kind_ == "unbiased_estimate"


def test_em_logs_progress(caplog):
    mechanism = HadamardResponse(64, 1.0)
    statistic = _statistic(mechanism, _population(64, 5000), seed=808)
    with caplog.at_level("INFO", logger="sklearn_ldp.oracle_em"):
        _, info = em_estimate(mechanism, statistic, verbose=1)
    messages = [record.getMessage() for record in caplog.records]
    assert any(m.startswith("EM iteration 1:") for m in messages)
    assert any("converged after" in m and "duality gap" in m for m in messages)
    assert info["duality_gap"] <= 1e-2 or info["n_iter"] > 10


@pytest.mark.parametrize("n, epsilon", [(64, 2.0), (1024, 2.0), (100, 1.0), (16, 3.0)])
def test_hadamard_em_channel_matches_the_dense_strategy_for_every_layout(n, epsilon):
    # Layouts with holes (cells at columns hole .. b-1) included: the EM channel must be the
    # mechanism's own Q for whatever layout it chose.
    from sklearn_ldp.mechanisms import HadamardResponse
    from sklearn_ldp.mechanisms.oracles.em import oracle_channel
    mechanism = HadamardResponse(n, epsilon)
    Q = mechanism.strategy_matrix()
    rng = np.random.default_rng(0)
    channel = oracle_channel(mechanism, np.zeros(mechanism.n_outputs, dtype=np.int64))
    pi, r = rng.random(n), rng.random(mechanism.n_outputs)
    np.testing.assert_allclose(channel.forward(pi), Q @ pi, rtol=1e-10, atol=1e-14)
    np.testing.assert_allclose(channel.adjoint(r), Q.T @ r, rtol=1e-10, atol=1e-14)
