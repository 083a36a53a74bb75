"""Marginal mechanisms (thesis chapter 4): privacy, sampler, unbiasedness, variance, EM, errors."""

import itertools
import math

import numpy as np
import pytest
from _stats import check_unbiased_and_variance, chi_square_p_value
from scipy import stats

from sklearn_ldp.mechanisms._base.mechanism import mechanism_from_json
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.mechanisms.marginals.base import MARGINAL_STRATEGIES, build_marginal_mechanism
from sklearn_ldp.mechanisms.marginals.input_perturbation import InpHT

# Family-wise false-alarm level of each statistical test (fixed seeds make them
# deterministic; the level says how unlucky a seed would have to be).
ALPHA = 1e-4
EPSILON = math.log(3)
SHAPES = [(2, 2, 2), (2, 3, 2)]
INDEX_KINDS = ("inp_ps", "inp_ht", "marg_ps", "marg_ht", "inp_em")


def _skewed_population(shape, n_users, seed):
    """Fixed users over the domain with a skewed distribution (a few heavy cells)."""
    rng = np.random.default_rng(seed)
    n_cells = math.prod(shape)
    weights = rng.dirichlet(np.full(n_cells, 0.7))
    return np.repeat(np.arange(n_cells), rng.multinomial(n_users, weights))


def _true_marginal(indices, shape, attributes):
    table = np.bincount(indices, minlength=math.prod(shape)).reshape(shape)
    others = tuple(a for a in range(len(shape)) if a not in attributes)
    return table.sum(axis=others) / indices.shape[0]


def _report_rows(mechanism, reports):
    """Row of the strategy matrix of each report."""
    if mechanism.kind == "inp_rr":
        bits = np.unpackbits(reports, axis=1, bitorder="little")[:, :mechanism.n_inputs]
        return bits.astype(np.int64) @ (1 << np.arange(mechanism.n_inputs, dtype=np.int64))
    if mechanism.kind == "marg_rr":
        return mechanism.report_rows(reports)
    return np.asarray(reports, dtype=np.int64)


# ------------------------------------------------------------------ privacy
@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
@pytest.mark.parametrize("shape", SHAPES + [(3, 4)])
@pytest.mark.parametrize("epsilon", [0.5, EPSILON])
def test_strategy_matrix_is_exactly_private(kind, shape, epsilon):
    for order in range(1, len(shape) + 1):
        mechanism = build_marginal_mechanism(kind, shape, epsilon, order)
        Q = mechanism.strategy_matrix()
        assert Q.shape[1] == mechanism.n_inputs
        assert np.all(Q >= 0)
        np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-12)
        assert privacy_ratio(Q) <= np.exp(epsilon) * (1 + 1e-9)


@pytest.mark.parametrize("shape", SHAPES + [(3, 4)])
def test_inp_em_spends_epsilon_over_d_per_attribute(shape):
    mechanism = build_marginal_mechanism("inp_em", shape, 1.2, 1)
    for position in range(len(shape)):
        channel = mechanism.attribute_channel(position)
        assert channel.shape == (shape[position], shape[position])
        np.testing.assert_allclose(np.log(privacy_ratio(channel)), 1.2 / len(shape))


@pytest.mark.parametrize("kind", ["inp_rr", "marg_rr"])
def test_unary_kinds_use_half_epsilon_per_bit(kind):
    mechanism = build_marginal_mechanism(kind, (2, 3, 2), 1.3, 2)
    oracles = [mechanism.oracle] if kind == "inp_rr" else list(mechanism.oracles.values())
    for oracle in oracles:
        np.testing.assert_allclose(oracle.p, np.exp(0.65) / (1 + np.exp(0.65)), rtol=1e-14)
        np.testing.assert_allclose(oracle.p + oracle.q, 1.0)


# ------------------------------------------------------------------ sampler
@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
@pytest.mark.parametrize("shape", SHAPES)
def test_reports_follow_the_strategy_matrix(kind, shape):
    mechanism = build_marginal_mechanism(kind, shape, EPSILON, 2)
    Q = mechanism.strategy_matrix()
    rng = np.random.default_rng(7)
    n_users = 20000
    types = [0, mechanism.n_inputs - 1, 5]
    p_values = []
    for user_type in types:
        reports = mechanism.randomize(np.full(n_users, user_type), rng)
        observed = np.bincount(_report_rows(mechanism, reports), minlength=Q.shape[0])
        assert observed.shape[0] == Q.shape[0]
        p_values.append(chi_square_p_value(observed.astype(float), n_users * Q[:, user_type]))
    assert min(p_values) > ALPHA / len(types)


# ------------------------------------------------------------------ unbiasedness and variance
def _repeat_estimates(mechanism, indices, attribute_sets, repeats, rng, simulate=False):
    counts = np.bincount(indices, minlength=mechanism.n_inputs)
    estimates = {attributes: [] for attributes in attribute_sets}
    for _ in range(repeats):
        if simulate:
            statistic = mechanism.simulate_statistic(counts, rng)
        else:
            statistic = mechanism.aggregate(mechanism.randomize(indices, rng))
        assert mechanism.n_reports(statistic) == indices.shape[0]
        for attributes in attribute_sets:
            estimates[attributes].append(mechanism.estimate_marginal(statistic, attributes))
    return {attributes: np.array(values) for attributes, values in estimates.items()}


def _check_mean_and_variance(mechanism, indices, estimates, attributes, repeats):
    shape = mechanism.shape
    truth = _true_marginal(indices, shape, attributes)
    variance = mechanism.marginal_variance(attributes, indices.shape[0], truth)
    assert variance.shape == truth.shape and np.all(variance > 0)
    level = ALPHA / truth.size
    # Mean within the Bonferroni normal quantile of the standard error; variance in the
    # chi-square band of (R - 1) s^2 / sigma^2, both at the Bonferroni level.
    check_unbiased_and_variance(estimates, truth, variance, z_max=stats.norm.isf(level / 2),
                                level=level)


@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
@pytest.mark.parametrize("shape", SHAPES)
def test_marginals_are_unbiased_with_the_predicted_variance(kind, shape):
    mechanism = build_marginal_mechanism(kind, shape, EPSILON, 2)
    indices = _skewed_population(shape, 3000, seed=1)
    attribute_sets = [(0, 1), (1, 2), (1,)]
    repeats = 300
    estimates = _repeat_estimates(mechanism, indices, attribute_sets, repeats,
                                  np.random.default_rng(11))
    for attributes in attribute_sets:
        _check_mean_and_variance(mechanism, indices, estimates[attributes], attributes, repeats)


@pytest.mark.parametrize("kind", ["inp_rr", "inp_ps", "inp_ht", "marg_rr", "marg_ps", "marg_ht"])
def test_simulated_statistic_gives_the_same_estimates(kind):
    shape = (2, 3, 2)
    mechanism = build_marginal_mechanism(kind, shape, EPSILON, 2)
    indices = _skewed_population(shape, 3000, seed=2)
    attribute_sets = [(0, 2), (1,)]
    repeats = 300
    estimates = _repeat_estimates(mechanism, indices, attribute_sets, repeats,
                                  np.random.default_rng(12), simulate=True)
    for attributes in attribute_sets:
        _check_mean_and_variance(mechanism, indices, estimates[attributes], attributes, repeats)


@pytest.mark.parametrize("kind", ["inp_ht", "marg_ps", "marg_ht"])
def test_simulated_statistic_has_the_exact_mean_and_variance_of_the_outputs(kind):
    """Each output count of the simulation: mean Q @ counts, and the variance of a sum of
    independent per-user indicators, sum_u c_u Q[o, u] (1 - Q[o, u]), within tolerances."""
    shape = (3, 2, 2)
    mechanism = build_marginal_mechanism(kind, shape, EPSILON, 2)
    counts = np.bincount(_skewed_population(shape, 2000, seed=4), minlength=mechanism.n_inputs)
    Q = mechanism.strategy_matrix()
    mean, variance = Q @ counts, (Q * (1 - Q)) @ counts
    repeats = 400
    rng = np.random.default_rng(13)
    draws = np.array([mechanism.simulate_statistic(counts, rng) for _ in range(repeats)])
    level = ALPHA / Q.shape[0]
    check_unbiased_and_variance(draws, mean, variance, z_max=stats.norm.isf(level / 2),
                                level=level)
    assert np.all(draws.sum(axis=1) == counts.sum())


@pytest.mark.parametrize("kind", ["inp_ht", "marg_ht", "marg_ps", "inp_ps"])
@pytest.mark.parametrize("shape", [(2, 3, 2), (3, 5), (2, 2, 2)])
def test_expected_statistic_decodes_to_the_truth(kind, shape):
    """Exact unbiasedness check: decoding E[statistic] gives the true marginal (with folding
    of structural zeros for the Hadamard kinds)."""
    mechanism = build_marginal_mechanism(kind, shape, 0.7, 2)
    indices = _skewed_population(shape, 1000, seed=3)
    counts = np.bincount(indices, minlength=mechanism.n_inputs)
    expected = mechanism.strategy_matrix() @ counts
    if kind == "inp_ps":
        expected = np.append(expected, counts.sum())
    for order in (1, 2):
        for attributes in mechanism.attribute_sets(order):
            estimate = mechanism.estimate_marginal(expected, attributes)
            np.testing.assert_allclose(estimate, _true_marginal(indices, shape, attributes),
                                       atol=1e-12)


@pytest.mark.parametrize("kind", ["inp_ht", "marg_ht"])
def test_folded_hadamard_estimates_sum_to_one(kind):
    mechanism = build_marginal_mechanism(kind, (3, 5, 2), 1.0, 2)
    rng = np.random.default_rng(4)
    statistic = mechanism.aggregate(mechanism.randomize(rng.integers(0, 30, 500), rng))
    for attributes in [(0,), (1,), (0, 1), (1, 2)]:
        estimate = mechanism.estimate_marginal(statistic, attributes)
        assert estimate.shape == mechanism.marginal_shape(attributes)
        np.testing.assert_allclose(estimate.sum(), 1.0, atol=1e-12)


# ------------------------------------------------------------------ variance formulas
def test_inp_ht_predicts_the_thesis_tv():
    mechanism = build_marginal_mechanism("inp_ht", (2,) * 8, EPSILON, 5)
    # Digest section 3.2: InpHT with d = 8, k = 5, N = 2^18, e^eps = 3 predicts TV = 0.128.
    np.testing.assert_allclose(mechanism.expected_tv((0, 1, 2, 3, 4), 2**18), 0.128, atol=5e-4)


def test_inp_ps_variance_matches_the_thesis_formula():
    d, k, n_users = 5, 2, 1000
    mechanism = build_marginal_mechanism("inp_ps", (2,) * d, 1.1, k)
    marginal = np.array([[0.4, 0.1], [0.2, 0.3]])
    e, size = np.exp(1.1), 2**d
    p, q = e / (e + size - 1), 1 / (e + size - 1)
    group = 2 ** (d - k)
    inside, outside = p + (group - 1) * q, group * q
    expected = (marginal * inside * (1 - inside) + (1 - marginal) * outside * (1 - outside)) / (
        n_users * (p - q) ** 2)
    np.testing.assert_allclose(mechanism.marginal_variance((1, 3), n_users, marginal), expected)


def test_first_order_methods_coincide_for_one_way_marginals():
    # Digest section 3.7: InpHT = MargPS = MargHT exactly for k = 1 (binary attributes).
    variances = [build_marginal_mechanism(kind, (2,) * 6, EPSILON, 1).marginal_variance(
        (2,), 5000, [0.3, 0.7]) for kind in ("inp_ht", "marg_ps", "marg_ht")]
    np.testing.assert_allclose(variances[1], variances[0])
    np.testing.assert_allclose(variances[2], variances[0])


def test_expected_tv_is_the_gaussian_approximation():
    mechanism = build_marginal_mechanism("marg_ps", (2, 3, 2), 1.0, 2)
    variance = mechanism.marginal_variance((0, 1), 1000)
    expected = 0.5 * np.sqrt(2 / np.pi) * np.sqrt(variance).sum()
    assert mechanism.expected_tv((0, 1), 1000) == pytest.approx(expected)


# ------------------------------------------------------------------ EM baseline
def test_em_converges_on_easy_data():
    shape = (2, 3, 2)
    mechanism = build_marginal_mechanism("inp_em", shape, 4.0, 2)
    indices = _skewed_population(shape, 20000, seed=5)
    rng = np.random.default_rng(6)
    statistic = mechanism.aggregate(mechanism.randomize(indices, rng))
    for attributes in [(0, 1), (2,)]:
        table, info = mechanism.em_marginal(statistic, attributes)
        truth = _true_marginal(indices, shape, attributes)
        assert info["converged"] and not info["stuck_at_prior"] and info["n_iter"] > 1
        assert np.all(table >= 0) and table.sum() == pytest.approx(1.0)
        sd = np.sqrt(mechanism.marginal_variance(attributes, indices.shape[0], truth))
        assert np.all(np.abs(table - truth) <= 5 * sd)


def test_em_reports_stuck_at_prior_at_tiny_epsilon():
    # eps / d = 0.001 per attribute: the first EM step moves the prior by ~(p - q) x noise.
    mechanism = build_marginal_mechanism("inp_em", (2, 2, 2, 2), 0.004, 2)
    indices = np.zeros(2000, dtype=np.int64)  # far from uniform: EM should move, but cannot
    statistic = mechanism.aggregate(mechanism.randomize(indices, np.random.default_rng(8)))
    table, info = mechanism.em_marginal(statistic, (0, 1))
    assert info == {"n_iter": 1, "converged": True, "stuck_at_prior": True}
    np.testing.assert_allclose(table, 0.25, atol=1e-5)
    # With a tighter tolerance EM keeps going and is no longer stuck.
    _, info = mechanism.em_marginal(statistic, (0, 1), tol=1e-12, max_iter=50)
    assert info["n_iter"] == 50 and not info["converged"] and not info["stuck_at_prior"]


def test_em_rejects_bad_settings():
    mechanism = build_marginal_mechanism("inp_em", (2, 2), 1.0, 2)
    statistic = mechanism.aggregate(mechanism.randomize([0, 1, 2], np.random.default_rng(0)))
    with pytest.raises(ValueError, match="tol"):
        mechanism.em_marginal(statistic, (0,), tol=0)
    with pytest.raises(ValueError, match="max_iter"):
        mechanism.em_marginal(statistic, (0,), max_iter=0)


# ------------------------------------------------------------------ serialization, API
@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
def test_json_round_trip(kind):
    mechanism = build_marginal_mechanism(kind, (2, 3, 2), 0.8, 2)
    rebuilt = mechanism_from_json(mechanism.to_json())
    assert type(rebuilt) is type(mechanism) and rebuilt == mechanism
    assert rebuilt.to_dict()["params"] == {"shape": [2, 3, 2], "max_order": 2}
    assert type(mechanism).from_json(mechanism.to_json()) == mechanism
    assert mechanism != build_marginal_mechanism(kind, (2, 3, 2), 0.8, 1)


@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
def test_statistic_is_additive_and_sets_without_users_are_uniform(kind):
    mechanism = build_marginal_mechanism(kind, (2, 3, 2), 1.0, 2)
    rng = np.random.default_rng(9)
    indices = rng.integers(0, 12, size=400)
    reports = mechanism.randomize(indices, rng)
    whole = mechanism.aggregate(reports)
    parts = mechanism.aggregate(reports[:150]) + mechanism.aggregate(reports[150:])
    assert whole.dtype == np.int64 and np.array_equal(whole, parts)
    empty = np.zeros_like(whole)
    np.testing.assert_allclose(mechanism.estimate_marginal(empty, (0, 1)), 1 / 6)


@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
def test_full_domain_estimate_only_for_input_unary_kinds(kind):
    mechanism = build_marginal_mechanism(kind, (2, 2), 1.0, 2)
    statistic = mechanism.aggregate(mechanism.randomize([0, 3, 3], np.random.default_rng(0)))
    if kind in ("inp_rr", "inp_ps"):
        assert mechanism.estimate(statistic).shape == (4,)
    else:
        with pytest.raises(NotImplementedError, match="estimate_marginal"):
            mechanism.estimate(statistic)


def test_attribute_sets_follow_combinations_order():
    mechanism = build_marginal_mechanism("marg_ht", (2, 2, 3, 2), 1.0, 3)
    assert mechanism.attribute_sets(2) == list(itertools.combinations(range(4), 2))
    assert mechanism.sets == list(itertools.combinations(range(4), 3))


def test_inp_ht_coefficients_touch_at_most_max_order_attributes():
    mechanism = InpHT(24, 1.0, [2, 3, 4], 2)  # bits 1, 2, 2
    masks = mechanism.coefficient_masks
    assert mechanism.n_coefficients == (1 + 3 + 3) + (1 * 3 + 1 * 3 + 3 * 3)
    assert len(set(masks.tolist())) == masks.size and np.all(masks > 0)
    fields = np.stack([(masks >> 4) & 1, (masks >> 2) & 3, masks & 3])
    assert np.all((fields != 0).sum(axis=0) <= 2)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
def test_bad_construction_is_refused(kind):
    with pytest.raises(ValueError, match="position 1"):
        build_marginal_mechanism(kind, (2, 1, 3), 1.0, 1)
    with pytest.raises(ValueError, match="max_order"):
        build_marginal_mechanism(kind, (2, 2), 1.0, 3)
    with pytest.raises(ValueError, match="max_order"):
        build_marginal_mechanism(kind, (2, 2), 1.0, 0)
    with pytest.raises(ValueError, match="n_inputs"):
        type(build_marginal_mechanism(kind, (2, 2), 1.0, 1))(5, 1.0, [2, 2], 1)
    with pytest.raises(ValueError, match="epsilon"):
        build_marginal_mechanism(kind, (2, 2), -1.0, 1)


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="inp_ht"):
        build_marginal_mechanism("marg_xx", (2, 2), 1.0, 1)


@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
def test_bad_attributes_are_refused(kind):
    mechanism = build_marginal_mechanism(kind, (2, 3, 2), 1.0, 2)
    statistic = mechanism.aggregate(mechanism.randomize([0, 5], np.random.default_rng(0)))
    for attributes, message in [((1, 0), "sorted"), ((0, 0), "sorted"), ((0, 3), "range"),
                                ((0, 1, 2), "max_order"), ((), "max_order"),
                                ((-1,), "range"), ("ab", "tuple"), ((0.5,), "integers")]:
        with pytest.raises(ValueError, match=message):
            mechanism.estimate_marginal(statistic, attributes)
        with pytest.raises(ValueError, match=message):
            mechanism.marginal_variance(attributes, 100)
    with pytest.raises(ValueError, match="shape"):
        mechanism.marginal_variance((0, 1), 100, np.full((3, 2), 1 / 6))
    with pytest.raises(ValueError, match="sum"):
        mechanism.marginal_variance((0,), 100, [0.5, 0.6])


@pytest.mark.parametrize("kind", MARGINAL_STRATEGIES)
def test_reports_and_statistics_from_another_kind_are_refused(kind):
    mechanism = build_marginal_mechanism(kind, (2, 3, 2), 1.0, 2)
    rng = np.random.default_rng(0)
    indices = rng.integers(0, 12, size=300)
    other_kind = "marg_rr" if kind in INDEX_KINDS else "inp_ht"
    other = build_marginal_mechanism(other_kind, (2, 3, 2), 1.0, 2)
    with pytest.raises(ValueError, match="mechanism"):
        mechanism.aggregate(other.randomize(indices, rng))
    with pytest.raises(ValueError):
        mechanism.estimate_marginal(np.zeros(3, dtype=np.int64), (0,))
    bigger = build_marginal_mechanism("inp_ps", (4, 4, 4, 4), 1.0, 2)  # indices up to 255
    if kind in INDEX_KINDS:
        with pytest.raises(ValueError, match="another mechanism"):
            mechanism.aggregate(bigger.randomize(np.arange(200, 256), rng))
    with pytest.raises(ValueError, match="user types"):
        mechanism.randomize([0, 12], rng)
