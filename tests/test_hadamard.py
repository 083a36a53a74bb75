"""Hadamard response (structured sampler) and HRR: privacy, sampling, estimates, variance."""

import itertools
import json

import numpy as np
import pytest
from _stats import chi_square_p_value
from scipy import stats
from scipy.linalg import hadamard

from sklearn_ldp import workloads
from sklearn_ldp._fwht import fwht, hadamard_parity, hadamard_signs, is_power_of_two
from sklearn_ldp.mechanisms._base.mechanism import SPEC_VERSION, mechanism_from_json
from sklearn_ldp.mechanisms.factorization.mechanism import (
    FactorizationMechanism,
    optimal_reconstruction,
    per_user_variance,
    privacy_ratio,
)
from sklearn_ldp.mechanisms.oracles.hadamard import HadamardResponse, hadamard_layout
from sklearn_ldp.mechanisms.oracles.hadamard_coefficient import HadamardRandomizedResponse
from sklearn_ldp.mechanisms.oracles.hadamard_layout import (
    check_layout,
    hadamard_shape,
    hadamard_strategy,
)

# (n, eps): powers of two and not, one block and several (n_blocks > 1 with block_size > 2
# at (13, 2), (100, 3), (30, 2); block_size 2 with many blocks at (20, 4), (7, 10)). The
# chosen layouts include blocks with a hole at (30, 2), (64, 2) and (100, 3).
HR_CASES = [(1, 0.5), (5, 1.0), (6, 1.0), (13, 2.0), (16, 3.0), (20, 4.0), (30, 2.0),
            (64, 2.0), (100, 3.0), (7, 10.0)]
# Layouts given explicitly: the paper's (with empty blocks), blocks with holes of every size
# with and without a partial block, one block in its upper half.
LAYOUT_CASES = [(13, 2.0, "paper"), (20, 4.0, "paper"), (30, 2.0, (8, 8, 4)),
                (30, 1.0, (3, 16, 2)), (50, 2.0, (3, 32, 8)), (64, 1.0, (1, 128, 64)),
                (24, 3.0, (6, 8, 4)), (10, 2.0, (5, 4, 2))]
HRR_CASES = [(1, 1.0), (2, 1.0), (5, 0.5), (12, 2.0), (16, 1.0), (33, 4.0)]
# Family-wise false-alarm level of each statistical test below (fixed seeds make them
# deterministic; the level says how unlucky a seed would have to be).
ALPHA = 1e-4


def _mechanism(kind, n, epsilon):
    return HadamardResponse(n, epsilon) if kind == "hr" else HadamardRandomizedResponse(n, epsilon)


def _output_rows(kind, reports):
    """Row of the strategy matrix of each report (HRR rows start at output 2)."""
    reports = np.asarray(reports, dtype=np.int64)
    return reports if kind == "hr" else reports - 2


# ------------------------------------------------------------------ fast Walsh-Hadamard transform
@pytest.mark.parametrize("length", [1, 2, 4, 8, 32, 256])
def test_fwht_matches_scipy_hadamard(length):
    rng = np.random.default_rng(length)
    values = rng.normal(size=(3, 2, length))
    before = values.copy()
    expected = values @ hadamard(length).T
    np.testing.assert_allclose(fwht(values), expected, atol=1e-10 * length)
    np.testing.assert_array_equal(values, before)  # the input is not modified
    # Any axis, and integer input.
    moved = np.moveaxis(values, -1, 1)
    np.testing.assert_allclose(fwht(moved, axis=1), np.moveaxis(expected, -1, 1),
                               atol=1e-10 * length)
    integers = rng.integers(-5, 5, size=length)
    np.testing.assert_array_equal(fwht(integers), hadamard(length) @ integers)
    # H H = K I.
    np.testing.assert_allclose(fwht(fwht(values)), length * values, atol=1e-9 * length)


def test_hadamard_signs_match_scipy():
    H = hadamard(64)
    rows, columns = np.arange(64)[:, None], np.arange(64)[None, :]
    np.testing.assert_array_equal(hadamard_signs(rows, columns), H)
    np.testing.assert_array_equal(hadamard_parity(rows, columns), (H < 0).astype(np.uint8))
    assert [is_power_of_two(v) for v in (0, 1, 2, 3, 64, 96)] == [False, True, True, False,
                                                                   True, False]


def test_fwht_bad_input():
    with pytest.raises(ValueError, match="power-of-two length"):
        fwht(np.ones(6))
    with pytest.raises(ValueError, match="power-of-two length"):
        fwht(np.ones((3, 4)), axis=0)
    with pytest.raises(ValueError, match="real numbers"):
        fwht(np.ones(4, dtype=complex))
    with pytest.raises(ValueError, match="at least one axis"):
        fwht(3.0)


# ------------------------------------------------------------------ exact privacy
@pytest.mark.parametrize("n, epsilon, layout", [(n, eps, None) for n, eps in HR_CASES]
                         + [(n, eps, "paper") for n, eps in HR_CASES] + LAYOUT_CASES)
def test_hadamard_response_is_exactly_private(n, epsilon, layout):
    mechanism = HadamardResponse(n, epsilon, layout=layout)
    Q = mechanism.strategy_matrix()
    expected = {None: hadamard_layout(n, epsilon),
                "paper": (*hadamard_shape(n, epsilon), 1)}.get(layout, layout)
    assert mechanism.layout == (mechanism.n_blocks, mechanism.block_size, mechanism.hole)
    assert mechanism.layout == expected
    n_blocks, block_size, hole = expected
    assert Q.shape == (n_blocks * block_size, n) == (mechanism.n_outputs, n)
    np.testing.assert_array_equal(Q, hadamard_strategy(n, epsilon, expected))
    if layout == "paper":
        np.testing.assert_array_equal(Q, hadamard_strategy(n, epsilon))  # the default
    # Each column: e^eps / Z on half of its own block, 1 / Z elsewhere.
    for column in Q.T:
        assert np.count_nonzero(np.isclose(column, column.max())) == block_size // 2
    assert np.all(Q > 0)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-12)
    ratio = privacy_ratio(Q)
    assert ratio <= np.exp(epsilon) * (1 + 1e-9)
    if n > 1:  # the budget is used fully
        assert ratio >= np.exp(epsilon) * (1 - 1e-9)


@pytest.mark.parametrize("n, epsilon", HRR_CASES)
def test_hrr_is_exactly_private(n, epsilon):
    mechanism = HadamardRandomizedResponse(n, epsilon)
    K = mechanism.n_coefficients
    assert K == max(2, 2 ** int(np.ceil(np.log2(n)))) and mechanism.n_outputs == 2 * K
    Q = mechanism.strategy_matrix()
    assert Q.shape == (2 * (K - 1), n)
    assert np.all(Q > 0)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-12)
    ratio = privacy_ratio(Q)
    assert ratio <= np.exp(epsilon) * (1 + 1e-9)
    if n > 1:  # the budget is used fully
        assert ratio >= np.exp(epsilon) * (1 - 1e-9)


# ------------------------------------------------------------------ randomize == strategy columns
SAMPLING_CASES = ([("hr", n, eps, None) for n, eps in HR_CASES if n > 1]
                  + [("hr", n, eps, layout) for n, eps, layout in LAYOUT_CASES]
                  + [("hrr", n, eps, None) for n, eps in HRR_CASES])


@pytest.mark.parametrize("kind, n, epsilon, layout", SAMPLING_CASES)
def test_randomize_draws_exactly_from_the_strategy_columns(kind, n, epsilon, layout):
    mechanism = (HadamardResponse(n, epsilon, layout=layout) if kind == "hr"
                 else _mechanism(kind, n, epsilon))
    Q = mechanism.strategy_matrix()
    m = Q.shape[0]
    # Enough users per type for >= ~8 expected reports in the rarest output.
    per_type = int(np.clip(8 / Q.min(), 2000, 20000))
    types = np.repeat(np.arange(n), per_type)
    reports = mechanism.randomize(types, np.random.default_rng(n * 100 + int(10 * epsilon)))
    rows = _output_rows(kind, reports)
    assert rows.min() >= 0 and rows.max() < m
    observed = np.bincount(rows * n + types, minlength=m * n).reshape(m, n)
    assert chi_square_p_value(observed, per_type * Q) > ALPHA
    if n > 1:
        # The same test rejects the sample against the wrong columns (it has power).
        shifted = np.roll(np.arange(n), 1)
        assert chi_square_p_value(observed, per_type * Q[:, shifted]) < 1e-12


def test_report_dtypes_are_compact():
    rng = np.random.default_rng(0)
    assert HadamardRandomizedResponse(5, 1.0).randomize([0, 4], rng).dtype == np.uint8
    assert HadamardRandomizedResponse(200, 1.0).randomize([0, 199], rng).dtype == np.uint16
    assert HadamardRandomizedResponse(2**20, 1.0).randomize([0, 7], rng).dtype == np.uint32
    assert HadamardResponse(16, 1.0).randomize([0, 15], rng).dtype == np.uint8
    assert HadamardResponse(300, 1.0).randomize([0, 299], rng).dtype == np.uint16


# ------------------------------------------------------------------ HRR: exact variance formulas
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 12, 16, 33])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_hrr_variance_formulas_match_the_dense_computation(n, epsilon):
    mechanism = HadamardRandomizedResponse(n, epsilon)
    Q = mechanism.strategy_matrix()
    L = mechanism.decoder_matrix()
    np.testing.assert_allclose(L @ Q, np.eye(n), atol=1e-12)  # unbiased
    rng = np.random.default_rng(n)
    counts = rng.integers(0, 30, size=Q.shape[0] + 2)
    counts[:2] = 0
    np.testing.assert_allclose(mechanism.estimate(counts), L @ counts[2:], atol=1e-9)
    for W in (np.eye(n), workloads.prefix(n).toarray(), rng.normal(size=(4, n))):
        dense = np.sum((W @ L) ** 2, axis=0) @ Q - np.sum(W * W, axis=0)
        scale = max(1.0, np.abs(dense).max())
        np.testing.assert_allclose(mechanism.per_user_variance(W.T @ W), dense,
                                   atol=1e-10 * scale)
        dense_queries = (W @ L) ** 2 @ Q - W * W
        np.testing.assert_allclose(mechanism.query_variance(W), dense_queries,
                                   atol=1e-10 * scale)
        np.testing.assert_allclose(mechanism.query_variance(W).sum(axis=0),
                                   mechanism.per_user_variance(W.T @ W), atol=1e-10 * scale)


@pytest.mark.parametrize("n", [2, 8, 16])
def test_hrr_equals_the_optimal_decoder_for_powers_of_two(n):
    mechanism = HadamardRandomizedResponse(n, 1.0)
    Q = mechanism.strategy_matrix()
    np.testing.assert_allclose(mechanism.decoder_matrix(), optimal_reconstruction(Q, np.eye(n)),
                               atol=1e-10)


def test_hrr_prefix_reference_and_closeness_to_optimal():
    W = workloads.prefix(16).toarray()
    z = HadamardRandomizedResponse(16, 1.0).per_user_variance(W.T @ W)
    assert round(float(z.max()), 1) == 185.2
    # n not a power of two: the known-total step keeps HRR close to V* on the Prefix.
    for n in (5, 12, 17):
        mechanism = HadamardRandomizedResponse(n, 1.0)
        W = workloads.prefix(n).toarray()
        Q = mechanism.strategy_matrix()
        optimal = per_user_variance(optimal_reconstruction(Q, W), Q, W)
        z = mechanism.per_user_variance(W.T @ W)
        assert z.max() <= 1.05 * optimal.max()
        assert z.mean() <= 1.05 * optimal.mean()


def test_hrr_n1_is_exact():
    mechanism = HadamardRandomizedResponse(1, 1.0)
    reports = mechanism.randomize(np.zeros(50, dtype=int), np.random.default_rng(0))
    assert mechanism.estimate(mechanism.aggregate(reports)) == pytest.approx([50.0])
    assert mechanism.per_user_variance(np.ones((1, 1))) == pytest.approx([0.0])


# ------------------------------------------------------------------ unbiasedness, variance
@pytest.mark.parametrize("kind, n, epsilon", [("hr", 12, 1.0), ("hr", 30, 2.0), ("hr", 64, 2.0),
                                              ("hrr", 12, 1.0), ("hrr", 16, 0.5)])
def test_simulated_estimates_are_unbiased_with_the_analytic_variance(kind, n, epsilon):
    mechanism = _mechanism(kind, n, epsilon)
    n_users, repeats = 1000, 400
    rng = np.random.default_rng(7)
    weights = 1.0 / np.arange(1, n + 1)
    x = rng.multinomial(n_users, weights / weights.sum())
    types = np.repeat(np.arange(n), x)
    reports = mechanism.randomize(np.tile(types, repeats), rng).reshape(repeats, n_users)
    estimates = np.array([mechanism.estimate(mechanism.aggregate(row)) for row in reports])
    for W in (np.eye(n), workloads.prefix(n).toarray()):
        answers = estimates @ W.T  # (repeats, queries)
        variance = mechanism.query_variance(W) @ x  # analytic variance of each answer
        # The total count (last prefix) is exact: both decoders reproduce the known N.
        exact = variance <= 1e-9 * variance.max()
        assert np.array_equal(np.flatnonzero(exact), [n - 1] if W[-1].all() else [])
        np.testing.assert_allclose(answers[:, exact], n_users, rtol=1e-9)
        answers, variance, W = answers[:, ~exact], variance[~exact], W[~exact]
        n_queries = W.shape[0]
        z = (answers.mean(axis=0) - W @ x) / np.sqrt(variance / repeats)
        assert np.max(np.abs(z)) < stats.norm.isf(ALPHA / (2 * n_queries))
        # (R - 1) s^2 / sigma^2 ~ chi2(R - 1) for approximately normal answers.
        ratio = answers.var(axis=0, ddof=1) / variance
        low = stats.chi2.ppf(ALPHA / (2 * n_queries), repeats - 1) / (repeats - 1)
        high = stats.chi2.isf(ALPHA / (2 * n_queries), repeats - 1) / (repeats - 1)
        assert np.all((low < ratio) & (ratio < high)), (ratio.min(), ratio.max())
        # The total matches per_user_variance on the Gram matrix too.
        total = mechanism.per_user_variance(W.T @ W) @ x
        assert total == pytest.approx(variance.sum(), rel=1e-9)


@pytest.mark.parametrize("layout", [None, "paper", (7, 4, 2), (2, 16, 4)])
def test_hadamard_response_keeps_the_dense_decoder_and_variance(layout):
    mechanism = HadamardResponse(13, 2.0, layout=layout)
    dense = FactorizationMechanism(hadamard_strategy(13, 2.0, mechanism.layout), 2.0,
                                   "hadamard")
    W = workloads.prefix(13).toarray()
    np.testing.assert_allclose(mechanism.per_user_variance(W.T @ W),
                               dense.per_user_variance(W.T @ W))
    counts = np.arange(mechanism.n_outputs)
    np.testing.assert_allclose(mechanism.estimate(counts), dense.estimate(counts))


# ------------------------------------------------------------------ simulate_statistic
def _exact_statistic_distribution(mechanism, kind, types):
    """Every possible statistic for these users, with its probability (small cases only)."""
    Q = mechanism.strategy_matrix()
    offset = 0 if kind == "hr" else 2
    distribution = {}
    for outputs in itertools.product(range(Q.shape[0]), repeat=len(types)):
        probability = np.prod(Q[list(outputs), types])
        statistic = np.zeros(mechanism.n_outputs, dtype=np.int64)
        np.add.at(statistic, np.array(outputs) + offset, 1)
        key = statistic.tobytes()
        distribution[key] = distribution.get(key, 0.0) + probability
    return distribution


@pytest.mark.parametrize("kind, n, epsilon", [("hrr", 3, 1.0), ("hr", 3, 1.0)])
def test_simulate_statistic_has_the_exact_distribution(kind, n, epsilon):
    mechanism = _mechanism(kind, n, epsilon)
    type_counts = np.array([2, 1, 1])
    types = np.repeat(np.arange(n), type_counts)
    distribution = _exact_statistic_distribution(mechanism, kind, types)
    assert sum(distribution.values()) == pytest.approx(1.0)
    keys = list(distribution)
    index = {key: i for i, key in enumerate(keys)}
    draws = 6000
    rng = np.random.default_rng(11)
    observed = np.zeros(len(keys))
    for _ in range(draws):
        statistic = mechanism.simulate_statistic(type_counts, rng)
        assert statistic.dtype == np.int64
        observed[index[statistic.tobytes()]] += 1
    expected = draws * np.array([distribution[key] for key in keys])
    assert chi_square_p_value(observed, expected) > ALPHA
    # randomize + aggregate has that distribution too (the reference for the simulation).
    reports = mechanism.randomize(np.tile(types, draws), rng).reshape(draws, len(types))
    observed = np.zeros(len(keys))
    for row in reports:
        observed[index[mechanism.aggregate(row).tobytes()]] += 1
    assert chi_square_p_value(observed, expected) > ALPHA


def test_hrr_simulate_statistic_moments_at_a_larger_domain():
    mechanism = HadamardRandomizedResponse(20, 1.0)
    Q = mechanism.strategy_matrix()
    type_counts = np.arange(20) * 50
    type_counts[3] = 0
    rng = np.random.default_rng(5)
    draws = 1000
    statistics = np.array([mechanism.simulate_statistic(type_counts, rng) for _ in range(draws)])
    assert np.all(statistics[:, :2] == 0)
    assert np.all(statistics.sum(axis=1) == type_counts.sum())
    mean = Q @ type_counts
    variance = (Q * (1 - Q)) @ type_counts  # independent users: sum of Bernoulli variances
    z = (statistics[:, 2:].mean(axis=0) - mean) / np.sqrt(variance / draws)
    m = Q.shape[0]
    assert np.max(np.abs(z)) < stats.norm.isf(ALPHA / (2 * m))
    ratio = statistics[:, 2:].var(axis=0, ddof=1) / variance
    assert np.all(ratio > stats.chi2.ppf(ALPHA / (2 * m), draws - 1) / (draws - 1))
    assert np.all(ratio < stats.chi2.isf(ALPHA / (2 * m), draws - 1) / (draws - 1))
    assert np.all(mechanism.simulate_statistic(np.zeros(20, dtype=int), rng) == 0)


# ------------------------------------------------------------------ aggregation, large domains
@pytest.mark.parametrize("kind", ["hr", "hrr"])
def test_aggregate_is_additive_over_chunks(kind):
    mechanism = _mechanism(kind, 40, 1.0)
    rng = np.random.default_rng(3)
    reports = mechanism.randomize(rng.integers(0, 40, size=300_000), rng)  # > one chunk
    statistic = mechanism.aggregate(reports)
    assert statistic.dtype == np.int64
    np.testing.assert_array_equal(
        statistic, np.bincount(reports.astype(np.int64), minlength=mechanism.n_outputs))
    halves = mechanism.aggregate(reports[:123_457]) + mechanism.aggregate(reports[123_457:])
    np.testing.assert_array_equal(statistic, halves)
    assert mechanism.n_reports(statistic) == 300_000
    empty = mechanism.aggregate(reports[:0])
    assert empty.shape == statistic.shape and not empty.any()


def test_hrr_scales_to_a_million_cells_without_dense_matrices():
    n = 2**20
    mechanism = HadamardRandomizedResponse(n, 1.0)
    rng = np.random.default_rng(0)
    users = rng.integers(0, n, size=20_000)
    estimate = mechanism.estimate(mechanism.aggregate(mechanism.randomize(users, rng)))
    assert estimate.shape == (n,)
    assert estimate.sum() == pytest.approx(20_000)  # the known total, exactly
    W = np.zeros((1, n))
    W[0, : n // 2] = 1.0
    x = np.bincount(users, minlength=n)
    sd = np.sqrt(mechanism.query_variance(W)[0] @ x)
    assert abs(W[0] @ estimate - W[0] @ x) < stats.norm.isf(ALPHA / 2) * sd
    with pytest.raises(ValueError, match="too many for the dense strategy"):
        mechanism.strategy_matrix()


# ------------------------------------------------------------------ serialization, equality
@pytest.mark.parametrize("kind", ["hr", "hrr"])
def test_json_round_trip(kind):
    mechanism = _mechanism(kind, 12, 1.5)
    text = mechanism.to_json()
    spec = json.loads(text)
    assert spec["mechanism"] == ("hadamard" if kind == "hr" else "hrr")
    assert set(spec) == {"version", "mechanism", "epsilon", "n_inputs", "params"}  # no matrix
    rebuilt = mechanism_from_json(text)
    assert type(rebuilt) is type(mechanism)
    assert rebuilt == mechanism and hash(rebuilt) == hash(mechanism)
    assert (rebuilt.n_inputs, rebuilt.epsilon) == (12, 1.5)
    assert type(mechanism).from_json(text) == mechanism
    assert rebuilt != _mechanism(kind, 12, 1.0) and rebuilt != _mechanism(kind, 13, 1.5)
    other = _mechanism("hrr" if kind == "hr" else "hr", 12, 1.5)
    assert rebuilt != other
    with pytest.raises(ValueError, match="describes a"):
        type(mechanism).from_json(other.to_json())
    assert repr(mechanism).startswith(type(mechanism).__name__ + "(n_inputs=12, epsilon=1.5")


def test_hadamard_response_differs_from_a_plain_factorization():
    mechanism = HadamardResponse(12, 1.0)
    plain = FactorizationMechanism(mechanism.strategy_matrix(), 1.0, "hadamard")
    assert mechanism != plain and plain != mechanism
    assert mechanism == HadamardResponse(12, 1.0)
    assert type(mechanism_from_json(plain.to_json())) is FactorizationMechanism
    spec = mechanism.to_dict()
    spec["params"] = {"Q": [[1.0]]}
    with pytest.raises(ValueError, match="takes no parameters"):
        HadamardResponse.from_dict(spec)


# ------------------------------------------------------------------ layouts and specifications
def test_mean_cell_variance_at_1024_cells_and_eps_1():
    """The figure of issue 17: MSE * N (per cell, N users) of the histogram at d = 1024,
    eps = 1. The paper's layout (two blocks of 1024 outputs, the second holding one cell)
    has 7.18; the chosen layout, one block of 2048 outputs, 4.6750: the least of every
    layout (test_the_chosen_layout_has_the_least_mean_variance), below the one randomized
    bit per cell, ((e + 1) / (e - 1))^2 = 4.6827, of the peer's Hadamard response, and equal
    to HRR's within 0.1%. The issue's target of 4.6 is below what any layout reaches (its
    4.55 for the peer was the noise of one run; see docs/oracles.md)."""
    n, epsilon = 1024, 1.0
    mechanism = HadamardResponse(n, epsilon)
    assert mechanism.layout == (1, 2048, 1)
    z = mechanism.per_user_variance(np.eye(n))  # per user of each type, summed over cells
    weights = 1.0 / np.arange(1, n + 1) ** 1.1  # the benchmark's Zipf data
    zipf = float(weights @ z / weights.sum()) / n
    uniform = mechanism._mean_cell_variance()
    assert uniform == pytest.approx(z.mean() / n, rel=1e-12)
    assert uniform == pytest.approx(4.6750, abs=5e-5) and zipf == pytest.approx(4.6750, abs=5e-4)
    e = np.e
    assert uniform < ((e + 1) / (e - 1)) ** 2 < 4.683
    hrr = HadamardRandomizedResponse(n, epsilon).per_user_variance(np.eye(n))
    assert zipf == pytest.approx(float(weights @ hrr / weights.sum()) / n, rel=1e-3)
    paper = HadamardResponse(n, epsilon, layout="paper")
    assert paper.layout == (2, 1024, 1)
    assert paper._mean_cell_variance() == pytest.approx(7.1814, abs=5e-4)


@pytest.mark.parametrize("n, epsilon", [(13, 2.0), (20, 4.0), (30, 2.0), (64, 2.0)])
def test_old_specifications_keep_the_paper_layout(n, epsilon):
    """A specification without a layout (every one written before the layout was recorded)
    builds the paper's layout, serializes back unchanged (same fingerprint) and decodes as
    the dense strategy of that layout does."""
    spec = {"version": SPEC_VERSION, "mechanism": "hadamard", "epsilon": epsilon,
            "n_inputs": n, "params": {}}
    old = HadamardResponse.from_dict(spec)
    assert old.layout == (*hadamard_shape(n, epsilon), 1)
    assert old.to_dict() == spec
    assert old.fingerprint() == json.dumps(spec, sort_keys=True)
    assert mechanism_from_json(json.dumps(spec)) == old
    dense = FactorizationMechanism(hadamard_strategy(n, epsilon), epsilon, "hadamard")
    counts = np.random.default_rng(n).integers(0, 40, size=old.n_outputs)
    np.testing.assert_allclose(old.estimate(counts), dense.estimate(counts), rtol=1e-9,
                               atol=1e-9 * np.abs(dense.estimate(counts)).max())
    new = HadamardResponse(n, epsilon)
    if new.layout != old.layout:
        assert new != old and new.to_dict()["params"] == dict(
            zip(("n_blocks", "block_size", "hole"), new.layout, strict=True))
    rebuilt = HadamardResponse.from_dict(new.to_dict())
    assert rebuilt == new and rebuilt.layout == new.layout
    assert HadamardResponse(n, epsilon, layout=new.layout) == new


def test_layout_bad_input():
    spec = HadamardResponse(30, 2.0).to_dict()
    assert spec["params"] == {"n_blocks": 5, "block_size": 8, "hole": 2}
    for params, error, match in [
            ({"n_blocks": 5}, ValueError, "all three"),
            ({**spec["params"], "extra": 1}, ValueError, "all three"),
            ({"n_blocks": 5, "block_size": 6, "hole": 2}, ValueError, "power of two"),
            ({"n_blocks": 5, "block_size": 8, "hole": 8}, ValueError, "hole must be"),
            ({"n_blocks": 5, "block_size": 8, "hole": 3}, ValueError, "hole must be"),
            ({"n_blocks": 4, "block_size": 8, "hole": 2}, ValueError, "at least 5"),
            ({"n_blocks": 64, "block_size": 8, "hole": 2}, ValueError, "at most 240"),
            ({"n_blocks": True, "block_size": 8, "hole": 2}, TypeError, "n_blocks"),
            ({"n_blocks": 5.0, "block_size": 8, "hole": 2}, TypeError, "n_blocks")]:
        with pytest.raises(error, match=match):
            HadamardResponse.from_dict({**spec, "params": params})
    with pytest.raises(ValueError, match="layout must be None, 'paper'"):
        HadamardResponse(30, 2.0, layout="best")
    with pytest.raises(TypeError, match="triple"):
        HadamardResponse(30, 2.0, layout=(5, 8))
    with pytest.raises(ValueError, match="n must be"):
        hadamard_layout(0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        hadamard_layout(10, -1.0)
    assert check_layout(30, (5, 8, 2)) == (5, 8, 2)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kind", ["hr", "hrr"])
def test_bad_input(kind):
    mechanism = _mechanism(kind, 6, 1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"in \[0, 6\)"):
        mechanism.randomize([0, 6], rng)
    with pytest.raises(ValueError, match="integer"):
        mechanism.randomize([0.5, 1.0], rng)
    with pytest.raises(ValueError, match="1-D"):
        mechanism.randomize([[0, 1]], rng)
    m = mechanism.n_outputs
    with pytest.raises(ValueError, match="another mechanism"):
        mechanism.aggregate(np.array([2, m]))
    with pytest.raises(ValueError, match="1-D array of integer"):
        mechanism.aggregate(np.array([2.0, 3.0]))
    with pytest.raises(ValueError, match="statistic"):
        mechanism.estimate(np.zeros(m + 1, dtype=np.int64))
    with pytest.raises(ValueError, match="epsilon"):
        _mechanism(kind, 6, 0.0)
    with pytest.raises(ValueError, match="epsilon"):
        _mechanism(kind, 6, -1.0)
    with pytest.raises(ValueError, match="n_inputs"):
        _mechanism(kind, 0, 1.0)
    with pytest.raises(ValueError, match="n_inputs"):
        _mechanism(kind, 2.5, 1.0)
    with pytest.raises(ValueError, match="type_counts"):
        mechanism.simulate_statistic(np.ones(5, dtype=int), rng)


def test_hrr_bad_input():
    mechanism = HadamardRandomizedResponse(6, 1.0)
    with pytest.raises(ValueError, match="coefficient"):
        mechanism.aggregate(np.array([1, 5]))
    statistic = np.zeros(mechanism.n_outputs, dtype=np.int64)
    statistic[0] = 3
    with pytest.raises(ValueError, match="coefficient 0"):
        mechanism.estimate(statistic)
    with pytest.raises(ValueError, match="Gram matrix must be 6 x 6"):
        mechanism.per_user_variance(np.eye(5))
    with pytest.raises(ValueError, match="6 columns"):
        mechanism.query_variance(np.ones((2, 5)))


def test_hadamard_response_is_structured_and_dense_only_on_request():
    mechanism = HadamardResponse(2**16, 1.0)  # no dense decoder: built from its blocks
    with pytest.raises(ValueError, match="too many for the dense strategy"):
        mechanism.strategy_matrix()


@pytest.mark.parametrize("n, epsilon, prefix_ratio, histogram_ratio",
                         [(16, 1.0, 3.681, 1.127), (64, 3.0, 24.70, 1.243)])
def test_optimal_decoder_beats_the_block_estimator(n, epsilon, prefix_ratio, histogram_ratio):
    """The figures quoted in hadamard_decoder.py: worst-case variance of ASZ's block-wise estimator
    over that of the optimal decoder V* used here (on the paper's layout)."""
    mechanism = HadamardResponse(n, epsilon, layout="paper")
    Q = mechanism.strategy_matrix()
    n_blocks, block = hadamard_shape(n, epsilon)
    e = np.exp(epsilon)
    Z = block / 2 * e + n_blocks * block - block / 2
    H = hadamard(block)
    # ASZ: x_hat_j = kappa * (Hadamard column of j within its block) . y
    L = np.zeros((n, n_blocks * block))
    for j in range(n):
        start = (j // (block - 1)) * block
        L[j, start:start + block] = 2 * Z / (block * (e - 1)) * H[:, j % (block - 1) + 1]
    np.testing.assert_allclose(L @ Q, np.eye(n), atol=1e-9)  # also unbiased
    for W, expected in ((workloads.prefix(n).toarray(), prefix_ratio),
                        (np.eye(n), histogram_ratio)):
        G = W.T @ W
        block_estimator = (np.sum((W @ L) ** 2, axis=0) @ Q - np.diag(G)).max()
        ratio = block_estimator / mechanism.per_user_variance(G).max()
        assert ratio == pytest.approx(expected, rel=1e-3)
