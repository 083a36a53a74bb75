"""Bounded numeric values: Duchi, Piecewise, Hybrid (means) and Square Wave (distribution).

Privacy is checked exactly on each randomizer's output law; unbiasedness and variance by
simulation against the analytic formulas (tolerances from the variance, fixed seeds).
"""

import math

import numpy as np
import pytest
from _stats import check_unbiased_and_variance, chi_square_p_value
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_ldp.mechanisms._base.exact import integer_ratio_at_most
from sklearn_ldp.mechanisms.numeric.means import (
    HYBRID_EPSILON_STAR,
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    duchi_constant,
    hybrid_alpha,
    hybrid_alpha_numerator,
    piecewise_constant,
)
from sklearn_ldp.mechanisms.numeric.registry import numeric_mechanism, numeric_mechanism_from_dict
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism, square_wave_bandwidth

EPSILONS = [0.1, 0.5, HYBRID_EPSILON_STAR, 1.0, 2.0, 4.0, 8.0]
MEAN_CLASSES = [DuchiMechanism, PiecewiseMechanism, HybridMechanism]


# ---------------------------------------------------------------- exact privacy

@pytest.mark.parametrize("epsilon", EPSILONS)
def test_duchi_output_probabilities_differ_by_at_most_e_eps(epsilon):
    # The exact integer law of the bit: its ratio over t is at most e^eps (decided on
    # integers) and within 1e-6 of it (the continuous mechanism's).
    mechanism = DuchiMechanism(epsilon)
    laws = [mechanism.exact_law(t) for t in np.linspace(-1, 1, 201)]
    for output in (0, 1):
        weights = [int(law.weights[output]) for law in laws]
        assert min(weights) > 0
        assert integer_ratio_at_most(max(weights), min(weights), epsilon)
        assert max(weights) / min(weights) == pytest.approx(math.exp(epsilon), rel=1e-4)


def _piecewise_density(epsilon, t, y):
    C = piecewise_constant(epsilon)
    s = math.exp(epsilon / 2)
    p = (math.exp(epsilon) - s) / (2 * s + 2)
    left = (C + 1) / 2 * t - (C - 1) / 2
    return np.where((y >= left) & (y <= left + C - 1), p, p / math.exp(epsilon))


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_piecewise_density_is_normalized_and_epsilon_ldp(epsilon):
    C = piecewise_constant(epsilon)
    y = np.linspace(-C, C, 20001)
    densities = np.array([_piecewise_density(epsilon, t, y) for t in np.linspace(-1, 1, 41)])
    # Each density is a normalized step function; over all inputs, at each output its
    # largest value is e^eps times its smallest.
    for t in (-1.0, 0.3, 1.0):
        left = (C + 1) / 2 * t - (C - 1) / 2
        p = _piecewise_density(epsilon, t, np.array([left + 1e-12]))[0]
        assert p * (C - 1) + p / math.exp(epsilon) * (C + 1) == pytest.approx(1.0, rel=1e-12)
    ratio = densities.max(axis=0) / densities.min(axis=0)
    assert ratio.max() == pytest.approx(math.exp(epsilon), rel=1e-12)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_square_wave_density_ratio_and_normalization(epsilon):
    mechanism = SquareWaveMechanism(epsilon, n_bins=16)
    # The realised law: p / q = a / b <= e^eps exactly (within 1e-6 of it), its bandwidth
    # within half a cell of the paper's.
    a, b = mechanism.law.a, mechanism.law.b
    assert integer_ratio_at_most(a, b, epsilon)
    assert mechanism.p / mechanism.q == pytest.approx(math.exp(epsilon), rel=1e-6)
    assert abs(mechanism.b - square_wave_bandwidth(epsilon)) <= (1 + 2 * mechanism.b) \
        / mechanism.law.cells
    b = mechanism.b
    # Density p on 2b, q on the rest of [-b, 1 + b] (length 1).
    assert 2 * b * mechanism.p + mechanism.q == pytest.approx(1.0, rel=1e-12)
    channel = mechanism.channel()
    assert np.allclose(channel.sum(axis=0), 1.0, atol=1e-12)
    # Every bucket's probability over all inputs spans at most a factor e^eps.
    assert (channel.max(axis=1) / channel.min(axis=1)).max() <= math.exp(epsilon) * (1 + 1e-12)


def test_hybrid_is_a_data_independent_mixture_of_epsilon_ldp_randomizers():
    # Its law is alpha * Piecewise + (1 - alpha) * Duchi with alpha fixed by epsilon alone,
    # so every event's probability ratio is at most e^eps (both components are checked
    # above); here: alpha follows the paper's rule around the exact eps_star.
    assert HYBRID_EPSILON_STAR == pytest.approx(0.61, abs=0.01)
    assert hybrid_alpha(HYBRID_EPSILON_STAR) == 0.0
    assert hybrid_alpha(1.0) == pytest.approx(1 - math.exp(-0.5))
    # The realised alpha (the weight that cancels the t^2 terms of the discrete laws) is the
    # paper's to within the grid's resolution.
    law = PiecewiseMechanism(1.0).law
    assert hybrid_alpha_numerator(HYBRID_EPSILON_STAR, law) == 0
    assert hybrid_alpha_numerator(1.0, law) / 2**52 == pytest.approx(1 - math.exp(-0.5),
                                                                     rel=1e-3)


# ---------------------------------------------------------------- error

@pytest.mark.parametrize("epsilon", np.geomspace(0.01, 20, 400))
def test_hybrid_worst_case_never_above_duchi_or_piecewise(epsilon):
    # On the grid, up to the variance of one random-rounding step ((1 / (M - L))^2 in unit
    # scale), which Hybrid's constant variance carries where Piecewise's is smallest.
    hybrid = HybridMechanism(epsilon).worst_case_variance()
    piecewise = PiecewiseMechanism(epsilon)
    step = 1.0 / piecewise.law.span ** 2
    assert hybrid <= DuchiMechanism(epsilon).worst_case_variance() * (1 + 1e-12) + step
    assert hybrid <= piecewise.worst_case_variance() * (1 + 1e-12) + step


@pytest.mark.parametrize("cls", MEAN_CLASSES)
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_mean_reports_are_unbiased_with_the_analytic_variance(cls, epsilon):
    # Replicates are means of batches of 1000 reports: near normal even when one report is
    # a very skewed two-point variable (Duchi at eps = 4, t = -1), so the chi-square band of
    # the variance holds.
    rng = np.random.default_rng(12345)
    mechanism = cls(epsilon, bounds=(-1, 1))
    batch = 1000
    for t in (-1.0, -0.3, 0.0, 0.8, 1.0):
        y = mechanism.report_values(mechanism.randomize(np.full(400 * batch, t), rng))
        check_unbiased_and_variance(y.reshape(-1, batch).mean(axis=1)[:, None], t,
                                    mechanism.unit_variance(np.array([t])) / batch)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_piecewise_reports_follow_the_density(epsilon):
    rng = np.random.default_rng(99)
    mechanism = PiecewiseMechanism(epsilon)
    C = piecewise_constant(epsilon)
    edges = np.linspace(-C, C, 61)
    fine = np.linspace(-C, C, 60 * 2000 + 1)
    midpoints = (fine[1:] + fine[:-1]) / 2
    for t in (-1.0, 0.25, 1.0):
        density = _piecewise_density(epsilon, t, midpoints)
        expected = (density * np.diff(fine)).reshape(60, -1).sum(axis=1)
        # The step density's mean and variance are the analytic ones.
        mean = (density * midpoints * np.diff(fine)).sum()
        second = (density * midpoints ** 2 * np.diff(fine)).sum()
        assert mean == pytest.approx(t, abs=1e-4)
        # The grid law: unbiased, its variance the analytic one (rounding included), within
        # 0.2% of the continuous density's.
        law = mechanism.exact_law(t)
        probabilities = np.array([int(w) / int(law.total) for w in law.weights])
        grid_mean = probabilities @ law.outputs
        grid_variance = probabilities @ law.outputs ** 2 - grid_mean ** 2
        assert grid_mean == pytest.approx(t, abs=1e-12)
        assert grid_variance == pytest.approx(mechanism.unit_variance(t), rel=1e-9)
        assert second - mean ** 2 == pytest.approx(grid_variance, rel=2e-3)
        # The grid law is the step density up to the grid's resolution (total variation
        # over the 60 bins below 2 cells' worth), and the reports follow the grid law.
        grid_mass = np.histogram(law.outputs, bins=edges, weights=np.array(
            [int(w) / int(law.total) for w in law.weights]))[0]
        assert np.abs(grid_mass - expected / expected.sum()).sum() < 4 * 60 / mechanism.law.cells
        counts, _ = np.histogram(mechanism.randomize(np.full(200_000, t), rng), bins=edges)
        assert chi_square_p_value(counts, 200_000 * grid_mass) > 1e-6


@pytest.mark.parametrize("cls", MEAN_CLASSES)
def test_mean_estimate_in_value_units(cls):
    rng = np.random.default_rng(7)
    values = rng.uniform(20, 80, size=400_000)
    mechanism = cls(2.0, bounds=(0, 100))
    statistic = mechanism.aggregate(mechanism.randomize(values, rng))
    variance = mechanism.variance(values).sum() / len(values) ** 2
    z = (mechanism.estimate_mean(statistic) - values.mean()) / math.sqrt(variance)
    assert abs(z) < 4.5
    # The estimated variance of the estimate is close to the analytic one (large N).
    assert mechanism.estimate_mean_variance(statistic) == pytest.approx(
        variance + values.var() / len(values), rel=0.05)


def test_statistics_are_additive_over_chunks():
    rng = np.random.default_rng(3)
    mechanism = PiecewiseMechanism(1.0, bounds=(0, 1))
    reports = mechanism.randomize(rng.random(10_000), rng)
    whole = mechanism.aggregate(reports)
    parts = mechanism.aggregate(reports[:3000]) + mechanism.aggregate(reports[3000:])
    assert np.allclose(whole, parts, rtol=1e-12)
    sw = SquareWaveMechanism(1.0, n_bins=32)
    reports = sw.randomize(rng.random(10_000), rng)
    assert np.array_equal(sw.aggregate(reports),
                          sw.aggregate(reports[:1234]) + sw.aggregate(reports[1234:]))


# ---------------------------------------------------------------- Square Wave

def test_square_wave_channel_matches_numerical_integration():
    mechanism = SquareWaveMechanism(1.3, n_bins=24, n_buckets=30)
    channel = mechanism.channel()
    b, edges = mechanism.b, np.linspace(-mechanism.b, 1 + mechanism.b, 31)
    for i in (0, 7, 23):
        v = (i + (np.arange(4000) + 0.5) / 4000) / 24  # midpoints inside bin i
        overlap = np.clip(np.minimum(v[:, None] + b, edges[1:]) -
                          np.maximum(v[:, None] - b, edges[:-1]), 0, None)
        expected = (mechanism.q * np.diff(edges) + (mechanism.p - mechanism.q) * overlap
                    ).mean(axis=0)
        assert np.allclose(channel[:, i], expected, atol=1e-7)


def test_square_wave_report_law_matches_the_channel():
    rng = np.random.default_rng(11)
    mechanism = SquareWaveMechanism(1.0, n_bins=16)
    bin_index = 5
    values = (bin_index + rng.random(300_000)) / 16  # uniform in bin 5
    counts = mechanism.aggregate(mechanism.randomize(values, rng))
    assert chi_square_p_value(counts, len(values) * mechanism.channel()[:, bin_index]) > 1e-6


def test_square_wave_em_recovers_a_distribution():
    rng = np.random.default_rng(5)
    mechanism = SquareWaveMechanism(2.0, bounds=(0, 10), n_bins=16)
    values = rng.choice([2.1, 7.7], p=[0.3, 0.7], size=400_000)
    counts = mechanism.aggregate(mechanism.randomize(values, rng))
    estimate = mechanism.estimate_distribution(counts, smoothing=False)
    assert estimate.sum() == pytest.approx(1.0) and (estimate >= 0).all()
    # Mass near the two atoms (bins 3 and 12, with their neighbours).
    assert estimate[2:5].sum() == pytest.approx(0.3, abs=0.05)
    assert estimate[11:14].sum() == pytest.approx(0.7, abs=0.05)


def test_em_increases_the_likelihood_monotonically():
    rng = np.random.default_rng(8)
    mechanism = SquareWaveMechanism(1.0, n_bins=32)
    counts = mechanism.aggregate(mechanism.randomize(rng.beta(2, 6, 50_000), rng))
    channel = mechanism.channel()
    likelihoods = []
    for iterations in (1, 2, 5, 20, 100):
        x = mechanism.estimate_distribution(counts, smoothing=False, max_iter=iterations,
                                            tol=0.0)
        likelihoods.append(counts @ np.log(channel @ x))
    assert np.all(np.diff(likelihoods) >= -1e-9)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("cls", MEAN_CLASSES + [SquareWaveMechanism])
def test_values_outside_bounds_or_nan_are_refused(cls):
    mechanism = cls(1.0, bounds=(0, 10))
    rng = np.random.default_rng(0)
    for bad in ([1.0, 10.5], [np.nan], [-0.1]):
        with pytest.raises(ValueError, match="declared bounds"):
            mechanism.randomize(np.array(bad), rng)
    with pytest.raises(TypeError, match="numbers"):
        mechanism.randomize(np.array(["a"]), rng)


@pytest.mark.parametrize("bounds", [(1, 1), (2, 1), (0, np.inf), (np.nan, 1), "ab", (0,),
                                    (True, 2)])
def test_bad_bounds_are_refused(bounds):
    with pytest.raises(ValueError, match="bounds"):
        PiecewiseMechanism(1.0, bounds=bounds)


def test_invalid_reports_are_refused():
    duchi, piecewise = DuchiMechanism(1.0), PiecewiseMechanism(1.0)
    with pytest.raises(ValueError, match="row 1"):
        duchi.aggregate(np.array([1, 2, 0], dtype=np.uint8))
    with pytest.raises(ValueError, match="row 0"):
        piecewise.aggregate(np.array([piecewise_constant(1.0) * 1.01]))
    on_grid = piecewise.grid.values(np.array([0, 7]))
    with pytest.raises(ValueError, match="row 2"):
        piecewise.aggregate(np.append(on_grid, np.nan))
    with pytest.raises(ValueError, match="row 1"):  # one float off the grid
        piecewise.aggregate(np.array([on_grid[0], np.nextafter(on_grid[1], 0)]))
    hybrid = HybridMechanism(0.3)  # Duchi alone: only +-C_D
    with pytest.raises(ValueError, match="row 0"):
        hybrid.aggregate(np.array([0.5]))
    with pytest.raises(ValueError, match="row 0"):  # the continuous C_D is not a report
        hybrid.aggregate(np.array([duchi_constant(0.3)]))
    assert hybrid.aggregate(hybrid.duchi_values[1:])[0] == 1
    sw = SquareWaveMechanism(1.0, n_bins=8)
    with pytest.raises(ValueError, match="row 0"):
        sw.aggregate(np.array([2.0]))


def test_impossible_statistics_are_refused():
    mechanism = PiecewiseMechanism(1.0)
    C = piecewise_constant(1.0)
    for statistic in ([0, 0, 0], [2.5, 0, 1], [2, 3 * C, 1], [2, 0, -1], [2, 0, 3 * C * C],
                      [2, 1.0, 0.1], [np.nan, 0, 0], [1, 2]):
        with pytest.raises(ValueError, match="statistic"):
            mechanism.estimate_mean(statistic)
    sw = SquareWaveMechanism(1.0, n_bins=8)
    for counts in (np.zeros(8, dtype=np.int64), np.full(8, -1), np.ones(7, dtype=np.int64),
                   np.ones(8)):
        with pytest.raises(ValueError, match="statistic"):
            sw.estimate_distribution(counts)


# too_slow is about the machine, not the loader: on a loaded CI machine the first draws can
# wait seconds for a core (a failed health check, not a failed case). Every case keeps its
# deadline.
@settings(max_examples=200, deadline=2000, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["version", "mechanism", "epsilon", "bounds",
                                        "params"]),
                       st.one_of(st.none(), st.integers(-5, 5000), st.floats(allow_nan=True),
                                 st.text(max_size=5),
                                 st.sampled_from(["duchi", "piecewise", "hybrid",
                                                  "square_wave"]),
                                 st.lists(st.floats(-10, 10), max_size=3),
                                 st.dictionaries(st.sampled_from(["n_bins", "n_buckets", "x"]),
                                                 st.integers(-3, 10_000), max_size=2))))
def test_spec_loader_refuses_malformed_specs_with_value_or_type_errors(spec):
    try:
        mechanism = numeric_mechanism_from_dict(spec)
    except (ValueError, TypeError):
        return
    assert numeric_mechanism_from_dict(mechanism.to_dict()) == mechanism


@pytest.mark.parametrize("kind", ["duchi", "piecewise", "hybrid", "square_wave"])
def test_specs_round_trip(kind):
    params = {"n_bins": 64} if kind == "square_wave" else {}
    mechanism = numeric_mechanism(kind, 1.5, (0, 3), **params)
    assert numeric_mechanism_from_dict(mechanism.to_dict()) == mechanism
    with pytest.raises(ValueError, match="unknown numeric strategy"):
        numeric_mechanism("laplace", 1.0, (0, 1))


@pytest.mark.parametrize("epsilon, base", [(1.0, "hybrid"), (5.0, "piecewise"),
                                           (10.0, "hybrid"), (2.0, "duchi")])
def test_sampled_means_are_unbiased_with_the_analytic_variance(epsilon, base):
    from sklearn_ldp.mechanisms.numeric.means import SampledMeanMechanism, optimal_sample_size
    rng = np.random.default_rng(31)
    bounds = [(0, 1), (-5, 5), (10, 20), (0, 1)]
    mechanism = SampledMeanMechanism(epsilon, bounds, base=base)
    assert mechanism.n_sampled == optimal_sample_size(4, epsilon)
    low, high = np.array(bounds).T
    X = low + (high - low) * rng.beta(2, 3, size=(3000, 4))
    answers = np.array([mechanism.estimate_means(mechanism.aggregate(
        mechanism.randomize(X, rng))) for _ in range(300)])
    t = (X - (low + high) / 2) / ((high - low) / 2)
    variance = mechanism.unit_variance(t).sum(axis=0) * ((high - low) / 2) ** 2 / 3000 ** 2
    check_unbiased_and_variance(answers, X.mean(axis=0), variance)


def test_sampled_mean_refuses_bad_input():
    from sklearn_ldp.mechanisms.numeric.means import SampledMeanMechanism
    mechanism = SampledMeanMechanism(4.0, [(0, 1)] * 3, n_sampled=2)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="column 1"):
        mechanism.randomize(np.array([[0.5, 1.5, 0.5]]), rng)
    attributes, values = mechanism.randomize(np.full((10, 3), 0.5), rng)
    attributes[0] = [1, 1]
    with pytest.raises(ValueError, match="twice"):
        mechanism.aggregate((attributes, values))
    with pytest.raises(ValueError, match="n_sampled"):
        SampledMeanMechanism(1.0, [(0, 1)] * 3, n_sampled=4)
    with pytest.raises(ValueError, match=r"bounds\[1\]"):
        SampledMeanMechanism(1.0, [(0, 1), (1, 0)])


@pytest.mark.parametrize("epsilon, n_bins, n_buckets", [(1.0, 16, 16), (1.3, 24, 30),
                                                        (0.2, 64, 40), (4.0, 100, 257),
                                                        (8.0, 512, 512)])
def test_square_wave_channel_operator_matches_the_matrix(epsilon, n_bins, n_buckets):
    # EM uses M x and M^T y from second antiderivatives (module docstring), never M itself.
    from sklearn_ldp.mechanisms.numeric.square_wave import _SquareWaveChannel
    rng = np.random.default_rng(3)
    mechanism = SquareWaveMechanism(epsilon, n_bins=n_bins, n_buckets=n_buckets)
    channel, operator = mechanism.channel(), _SquareWaveChannel(mechanism)
    for _ in range(3):
        x, y = rng.random(n_bins), rng.random(n_buckets)
        assert np.allclose(operator.matvec(x), channel @ x, rtol=1e-9, atol=0)
        assert np.allclose(operator.rmatvec(y), channel.T @ y, rtol=1e-9, atol=0)


def test_square_wave_default_stopping_rule_is_li_et_al():
    # Li et al. stop EMS when the total log-likelihood gains less than 1e-3 e^eps: the
    # default tol is that per report; a looser or tighter tol changes the estimate.
    rng = np.random.default_rng(12)
    mechanism = SquareWaveMechanism(1.0, n_bins=64)
    counts = mechanism.aggregate(mechanism.randomize(rng.beta(2, 5, 20_000), rng))
    default = mechanism.estimate_distribution(counts)
    rule = mechanism.estimate_distribution(counts, tol=1e-3 * math.e / 20_000)
    assert np.array_equal(default, rule)
    assert not np.allclose(default, mechanism.estimate_distribution(counts, tol=1e-12))


def test_square_wave_bandwidth_is_accurate_for_small_epsilon():
    # The closed form cancels for small epsilon (1e-8 gave 1.11 instead of 0.5); the series
    # below 0.1 keeps full precision. Reference: the closed form in 60-digit decimals.
    import decimal

    from sklearn_ldp.deploy.client.numeric import _square_wave_bandwidth
    from sklearn_ldp.mechanisms.numeric.square_wave import (
        SquareWaveMechanism,
        _square_wave_bandwidth_decimal,
        square_wave_bandwidth,
    )

    for epsilon in (1e-12, 1e-8, 1e-4, 0.01, 0.0999, 0.1, 0.5, 1.0, 4.0):
        with decimal.localcontext(decimal.Context(prec=80)):
            eps = decimal.Decimal(epsilon)
            e = eps.exp()
            exact = (eps * e - e + 1) / (2 * e * (e - 1 - eps))
        assert abs(square_wave_bandwidth(epsilon) - float(exact)) <= 1e-13 * float(exact)
        assert _square_wave_bandwidth(epsilon) == _square_wave_bandwidth_decimal(epsilon)
    assert float(_square_wave_bandwidth_decimal(1e-300)) == 0.5  # was a ZeroDivisionError
    # Below about 1e-8 the integer weights cannot express e^eps: refused, not a flat law.
    with pytest.raises(ValueError, match="too small"):
        SquareWaveMechanism(1e-300)


def test_sampled_mean_specification_round_trips():
    import json

    from sklearn_ldp.mechanisms.numeric.means import SampledMeanMechanism
    from sklearn_ldp.mechanisms.numeric.registry import numeric_mechanism_from_dict

    mechanism = SampledMeanMechanism(2.0, [(0, 1), (-5, 5), (0, 100)], base="piecewise")
    spec = json.loads(json.dumps(mechanism.to_dict()))
    again = numeric_mechanism_from_dict(spec)
    assert again.to_dict() == mechanism.to_dict() and again.n_sampled == mechanism.n_sampled
    for bad, field in [(dict(spec, version=1), "version"), (dict(spec, params={}), "params"),
                       ({k: v for k, v in spec.items() if k != "bounds"}, "bounds")]:
        with pytest.raises(ValueError, match=field):
            SampledMeanMechanism.from_dict(bad)
