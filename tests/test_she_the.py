"""Summation and thresholding histogram encoding (SHE, THE): the exact noise sampler against
its law, unbiasedness and the analytic variance by simulation, the exact audit, the client's
integers, the encoder route and hostile input."""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _audit_cases import client_reports
from _fuzzing import FUZZ, fuzz_settings, mutate, outcome
from _stats import check_unbiased, chi_square_p_value, replicated_statistics
from hypothesis import given
from hypothesis import strategies as st

from sklearn_ldp import LDPEncoder, WorkloadEstimator
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.collect import reports_from_client
from sklearn_ldp.mechanisms import (
    SummationHistogramEncoding,
    SymmetricUnaryEncoding,
    ThresholdingHistogramEncoding,
    audit_privacy,
    mechanism_from_dict,
)
from sklearn_ldp.mechanisms._base.exact import random_words
from sklearn_ldp.mechanisms.oracles.histogram_encoding import (
    NOISE_BITS,
    _magnitude_from_bits,
    _magnitude_tables,
    _resolve,
    best_threshold,
    noise_ratio_numerator,
    report_bound_dtype,
    sample_one_sided_geometric,
    sample_two_sided_geometric,
    threshold_probabilities,
)
from sklearn_ldp.reports import AggregatedReports, LDPReports

EPSILONS = (0.5, 1.0, 4.0)


def geometric_pmf(R, values):
    """``P(Z = z) = (1 - r) / (1 + r) r^{|z|}``, ``r = R / 2^20``."""
    r = R / 2**NOISE_BITS
    return (1 - r) / (1 + r) * r ** np.abs(values)


# ---------------------------------------------------------------- the noise and its ratio
@pytest.mark.parametrize("epsilon", EPSILONS + (0.1, 8.0))
def test_noise_ratio_is_the_least_private_numerator(epsilon):
    one = 2**NOISE_BITS
    R = noise_ratio_numerator(epsilon)
    assert (one / R) ** 2 <= math.exp(epsilon) * (1 + 1e-12)
    assert (one / (R - 1)) ** 2 > math.exp(epsilon) * (1 - 1e-12)  # R - 1 would not be private


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_sampler_draws_the_two_sided_geometric(epsilon):
    R = noise_ratio_numerator(epsilon)
    draws = sample_two_sided_geometric(np.random.default_rng(5), 200_000, R)
    values, counts = np.unique(draws, return_counts=True)
    support = np.arange(values.min(), values.max() + 1)
    observed = np.zeros(support.size)
    observed[values - support[0]] = counts
    expected = geometric_pmf(R, support) * draws.size
    # The mass outside the observed range joins the pooled cell of small expectations.
    expected = np.append(expected, draws.size - expected.sum())
    observed = np.append(observed, 0)
    assert chi_square_p_value(observed, expected) > 1e-4


def test_sampler_of_extreme_ratios():
    for R in (1, 3 * 2**18, 2**NOISE_BITS - 2**12):
        r = R / 2**NOISE_BITS
        draws = sample_two_sided_geometric(np.random.default_rng(1), 200_000, R)
        variance = 2 * r / (1 - r) ** 2
        # Within 5 standard errors of the sample variance (the fourth moment of the
        # two-sided geometric is below 6 variance^2 + variance).
        assert abs(draws.var() - variance) < 5 * math.sqrt((6 * variance**2 + variance)
                                                           / draws.size)
        one_sided = sample_one_sided_geometric(np.random.default_rng(2), 200_000, R)
        assert abs(one_sided.mean() - r / (1 - r)) < 5 * math.sqrt(r / (1 - r) ** 2
                                                                   / one_sided.size)


def test_unresolved_words_agree_with_the_exact_comparison():
    # The words whose bucket does not decide |Z|, resolved on 63 bits, against the
    # comparison with exact fractions (Python integers).
    for epsilon in (0.5, 8.0):
        R = noise_ratio_numerator(epsilon)
        _, floors, exact = _magnitude_tables(R)
        V = random_words(np.random.default_rng(3), 2000) >> np.uint64(1)  # 63 bits of U
        V[:50] = np.uint64(1) << np.uint64(20)  # deep: U below every listed threshold
        resolved = _resolve(np.random.default_rng(4), V, np.zeros(2000, dtype=bool), R, floors,
                            exact)
        V = V.tolist()
        for i in range(50, 2000):
            assert abs(int(resolved[i])) == _magnitude_from_bits(None, V[i], R)
        assert (np.abs(resolved[:50]) >= floors.size).all()


def test_report_type_bounds_the_tail():
    for epsilon, dtype in ((8.0, np.int8), (1.5, np.int8), (1.4, np.int16), (0.01, np.int16),
                           (0.005, np.int32)):
        R = noise_ratio_numerator(epsilon)
        assert report_bound_dtype(R) is dtype, epsilon
        m = np.iinfo(report_bound_dtype(R)).max
        assert m * math.log2(2**NOISE_BITS / R) >= 128  # 2 r^m <= 2^-128, in logs


def test_she_reports_and_per_coordinate_law():
    mechanism = SummationHistogramEncoding(3, 1.0)
    rng = np.random.default_rng(9)
    reports = mechanism.randomize(np.full(30_000, 1), rng)
    assert reports.dtype == mechanism.report_dtype and reports.shape == (30_000, 3)
    R = mechanism.ratio_numerator
    for column, shift in ((0, 0), (1, 1), (2, 0)):
        noise = reports[:, column].astype(np.int64) - shift
        support = np.arange(-40, 41)
        observed = np.array([(noise == z).sum() for z in support])
        expected = geometric_pmf(R, support) * noise.size
        assert chi_square_p_value(np.append(observed, noise.size - observed.sum()),
                                  np.append(expected, noise.size - expected.sum())) > 1e-4


# ---------------------------------------------------------------- estimates and variance
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_she_unbiased_and_mse_within_five_percent(epsilon):
    mechanism = SummationHistogramEncoding(16, epsilon)
    users = np.repeat(np.arange(16), np.arange(16) % 3 + 1)  # 31 users, skewed
    truth = np.bincount(users, minlength=16)
    statistics = replicated_statistics(mechanism, users, 2000, np.random.default_rng(7))
    answers = np.array([mechanism.estimate(s) for s in statistics])
    # Exact per-cell variance: the sum over users of their per-user variance.
    variance = mechanism.query_variance(np.eye(16))[:, users].sum(axis=1)
    check_unbiased(answers, truth, variance)
    squared = ((answers - truth) / np.sqrt(variance)) ** 2  # each has mean 1
    mse_ratio = squared.mean()
    # Tolerance from the variance of the variance (the squared errors' own spread).
    tolerance = 4.5 * squared.std() / math.sqrt(squared.size)
    assert tolerance < 0.05
    assert abs(mse_ratio - 1) < tolerance, (mse_ratio, tolerance)


@pytest.mark.parametrize("epsilon", EPSILONS)
def test_the_unbiased_and_mse_within_five_percent(epsilon):
    mechanism = ThresholdingHistogramEncoding(16, epsilon, scale=4, threshold=3)
    users = np.repeat(np.arange(16), np.arange(16) % 3 + 1)
    truth = np.bincount(users, minlength=16)
    statistics = replicated_statistics(mechanism, users, 2000, np.random.default_rng(8))
    answers = np.array([mechanism.estimate(s) for s in statistics])
    variance = mechanism.query_variance(np.eye(16))[:, users].sum(axis=1)
    check_unbiased(answers, truth, variance)
    squared = ((answers - truth) / np.sqrt(variance)) ** 2
    tolerance = 4.5 * squared.std() / math.sqrt(squared.size)
    assert tolerance < 0.05
    assert abs(squared.mean() - 1) < tolerance, (squared.mean(), tolerance)


def test_she_variance_is_the_discrete_laplace_variance():
    for epsilon in EPSILONS:
        mechanism = SummationHistogramEncoding(10, epsilon)
        r = mechanism.ratio_numerator / 2**NOISE_BITS
        assert mechanism.noise_variance == pytest.approx(2 * r / (1 - r) ** 2, rel=1e-14)
        # Below the continuous Laplace's 8 / eps^2 (and close to it for small eps).
        assert mechanism.noise_variance < 8 / epsilon**2
        assert mechanism.noise_variance == pytest.approx(
            1 / (2 * math.sinh(epsilon / 4) ** 2), rel=1e-4)
        # Histogram workload: (1 - 1/d) V per cell after the known-total step.
        assert mechanism.per_user_variance(np.eye(10)) == pytest.approx(
            np.full(10, 9 * mechanism.noise_variance))


def test_simulated_statistic_has_the_sum_law():
    mechanism = SummationHistogramEncoding(4, 1.0)
    counts = np.array([300, 0, 100, 50])
    draws = np.array([mechanism.simulate_statistic(counts, np.random.default_rng(i))
                      for i in range(400)])
    assert (draws[:, -1] == 450).all()
    check_unbiased(draws[:, :-1].astype(float), counts, np.full(4, 450 * mechanism.noise_variance))


# ---------------------------------------------------------------- THE
def test_best_threshold_is_the_integer_lattice():
    # The search over lattices Z / s (s <= 16) and thresholds k / s ends at s = 1, k = 0,
    # where THE is symmetric unary encoding; the paper's continuous optimum (theta in
    # (0.5, 1)) is worse on every lattice.
    for epsilon in (0.1, 0.5, 1.0, 2.0, 4.0, 8.0):
        assert best_threshold(epsilon) == (1, 0)
        the = ThresholdingHistogramEncoding(16, epsilon)
        sue = SymmetricUnaryEncoding(16, epsilon)
        ratio = the.per_user_variance(np.eye(16))[0] / sue.per_user_variance(np.eye(16))[0]
        # Equal up to the rounding of the noise ratio r to a multiple of 2^-20 (the rational
        # noise whose threshold THE is), at most 6e-5 relative at eps = 8.
        assert ratio == pytest.approx(1, rel=1e-4)


def test_threshold_probabilities_are_exact_fractions():
    p, q = threshold_probabilities(1.0, 4, 3)
    R = noise_ratio_numerator(1.0, 4)
    r = R / 2**NOISE_BITS
    assert float(q) == pytest.approx(r**4 / (1 + r), rel=1e-14)
    assert float(p) == pytest.approx(1 - r**1 / (1 + r), rel=1e-14)
    mechanism = ThresholdingHistogramEncoding(5, 1.0, scale=4, threshold=3)
    assert mechanism.p <= float(p) and mechanism.q >= float(q)  # rounded toward privacy
    assert abs(mechanism.p - float(p)) < 2**-51 and abs(mechanism.q - float(q)) < 2**-51


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("lattice", [None, (4, 3), (16, 9)])
def test_exact_audit_passes(epsilon, lattice):
    the = ThresholdingHistogramEncoding(6, epsilon, *(lattice or ()))
    audit = audit_privacy(the, [0, 5, 2])
    assert audit.private and audit.realised <= epsilon
    if lattice is None:
        she = SummationHistogramEncoding(3, epsilon)
        audit = audit_privacy(she, [0, 2, 1])
        assert audit.private and audit.realised <= epsilon
        assert not audit_privacy(she, [0, 2, 1], epsilon=epsilon * (1 - 1e-5)).private


# ---------------------------------------------------------------- client and deployment
@pytest.mark.parametrize("epsilon", EPSILONS + (0.01,))
def test_client_derives_the_server_integers(epsilon):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        she = SummationHistogramEncoding(5, epsilon)
        client = Randomizer(she.to_dict(), seed=0)
        assert client._privatize_cell.ratio_numerator == she.ratio_numerator
        assert client._privatize_cell.bound == she.report_bound
        for lattice in ((1, 0), (4, 3), (16, 31)):
            the = ThresholdingHistogramEncoding(5, epsilon, *lattice)
            client = Randomizer(the.to_dict(), seed=0)
            assert client._privatize_cell.numerators == (the.p_numerator, the.q_numerator)


def test_client_reports_follow_the_law():
    mechanism = SummationHistogramEncoding(3, 1.0)
    reports = client_reports(mechanism, 2, 5_000, seed=3).astype(np.int64)
    R = mechanism.ratio_numerator
    support = np.arange(-25, 26)
    for column, shift in ((0, 0), (2, 1)):
        noise = reports[:, column] - shift
        observed = np.array([(noise == z).sum() for z in support])
        expected = geometric_pmf(R, support) * noise.size
        assert chi_square_p_value(np.append(observed, noise.size - observed.sum()),
                                  np.append(expected, noise.size - expected.sum())) > 1e-4


def test_spec_round_trip():
    for mechanism in (SummationHistogramEncoding(7, 1.5),
                      ThresholdingHistogramEncoding(7, 1.5),
                      ThresholdingHistogramEncoding(7, 1.5, scale=3, threshold=2)):
        rebuilt = mechanism_from_dict(json.loads(mechanism.to_json()))
        assert rebuilt.to_dict() == mechanism.to_dict()
        assert type(rebuilt) is type(mechanism)


@pytest.mark.parametrize("strategy", ["she", "the"])
def test_encoder_route_and_files(strategy, tmp_path):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.integers(0, 6, 3000)})
    encoder = LDPEncoder(epsilon=2.0, strategy=strategy, categories={"a": list(range(6))},
                         random_state=0)
    reports = encoder.fit_transform(frame)
    estimator = WorkloadEstimator().fit(reports)
    truth = np.bincount(frame["a"], minlength=6)
    sd = np.sqrt(estimator.expected_error_["worst_case"].to_numpy())
    assert np.all(np.abs(estimator.answers_.to_numpy() - truth) < 5 * sd)
    reports.save(tmp_path / "r.npz")
    reports.aggregate().save(tmp_path / "a.npz")
    assert np.array_equal(LDPReports.load(tmp_path / "r.npz").reports, reports.reports)
    assert np.array_equal(AggregatedReports.load(tmp_path / "a.npz").statistic,
                          reports.aggregate().statistic)


def test_auto_never_picks_histogram_encoding():
    from sklearn_ldp.selection import baselines

    assert "she" in baselines.STRATEGIES and "the" in baselines.STRATEGIES
    assert not set(baselines.HISTOGRAM_ENCODINGS) & set(baselines.BASELINES)


# ---------------------------------------------------------------- hostile input
@pytest.mark.parametrize("kwargs, field", [
    ({"scale": 0, "threshold": 0}, "scale"), ({"scale": 17, "threshold": 0}, "scale"),
    ({"scale": 2, "threshold": 4}, "threshold"), ({"scale": 2, "threshold": -1}, "threshold"),
    ({"scale": 2.0, "threshold": 1}, "scale"), ({"scale": True, "threshold": 0}, "scale"),
    ({"scale": 2}, "threshold"), ({"threshold": 1}, "scale")])
def test_the_refuses_bad_lattices(kwargs, field):
    with pytest.raises(ValueError, match=field):
        ThresholdingHistogramEncoding(4, 1.0, **kwargs)


def test_she_refuses_bad_reports_and_statistics():
    mechanism = SummationHistogramEncoding(3, 1.0)
    bound = mechanism.report_bound
    with pytest.raises(ValueError, match="3 columns"):
        mechanism.aggregate(np.zeros((2, 4), dtype=np.int16))
    with pytest.raises(ValueError, match="integer"):
        mechanism.aggregate(np.zeros((2, 3)))
    bad = np.array([[0, 0, 0], [bound + 1, 0, 0]], dtype=np.int32)
    with pytest.raises(ValueError, match=f"report 1 .*{bound + 1}"):
        mechanism.aggregate(bad)
    kept, dropped = mechanism.drop_invalid_reports(bad)
    assert dropped == 1 and kept.shape == (1, 3)
    with pytest.raises(ValueError, match="number of reports"):
        mechanism.estimate(np.array([1, 2, 3, -1]))
    with pytest.raises(ValueError, match="sum of cell 0"):
        mechanism.estimate(np.array([bound * 5 + 1, 0, 0, 5]))
    with pytest.raises(ValueError, match="integer sums"):
        AggregatedReports(np.array([1.0, 2.0, 3.0, 4.0]), mechanism)
    with pytest.raises(ValueError, match=r"\[-32768, 32767\]"):
        reports_from_client([[0, 1, 40000]], mechanism)
    with pytest.raises(ValueError, match="n_inputs"):
        SummationHistogramEncoding(0, 1.0)
    with pytest.raises(ValueError, match="epsilon"):
        SummationHistogramEncoding(3, float("nan"))
    with pytest.raises(ValueError, match="too small"):
        SummationHistogramEncoding(3, 1e-7)
    with pytest.raises(ValueError, match="GiB.*'oue'"):
        SummationHistogramEncoding(2**20, 1.0).randomize(np.zeros(5000, dtype=np.int64),
                                                         np.random.default_rng(0))


def test_influence_of_one_report_is_bounded_by_the_report_type():
    mechanism = SummationHistogramEncoding(4, 4.0)
    W = np.array([[1.0, 0, 0, 0], [1, 1, 0, 0]])
    influence = mechanism.report_influence(W)
    stat = mechanism.aggregate(mechanism.randomize(np.arange(4), np.random.default_rng(0)))
    base = W @ mechanism.estimate(stat)
    for reports, bound in ((influence.low_reports, influence.low),
                           (influence.high_reports, influence.high)):
        for i, report in enumerate(reports):
            moved = W @ mechanism.estimate(stat + np.append(report.astype(np.int64), 1))
            assert moved[i] - base[i] == pytest.approx(bound[i])


@fuzz_settings(30)
@given(data=st.data())
def test_fuzz_edited_specs(data):
    specs = [SummationHistogramEncoding(3, 1.0).to_dict(),
             ThresholdingHistogramEncoding(4, 1.0, scale=2, threshold=1).to_dict()]
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40),
                       st.floats(allow_nan=True), st.text(max_size=4))
    edited = mutate(data.draw(st.sampled_from(specs)), data, leaves)
    mechanism = outcome(mechanism_from_dict, edited)
    if mechanism is not None and 2 <= mechanism.n_inputs <= 3:
        assert audit_privacy(mechanism, [0, mechanism.n_inputs - 1]).private
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        outcome(Randomizer, edited, seed=0)


@FUZZ
@given(rows=st.lists(st.lists(st.one_of(st.integers(-2**40, 2**40), st.floats(),
                                        st.none(), st.text(max_size=2)), max_size=4),
                     max_size=4))
def test_fuzz_client_report_lists(rows):
    mechanism = SummationHistogramEncoding(3, 1.0)
    collected = outcome(reports_from_client, rows, mechanism)
    if collected is not None:
        assert np.abs(collected.reports.astype(np.int64)).max(initial=0) <= mechanism.report_bound


@FUZZ
@given(statistic=st.lists(st.integers(-2**64, 2**64), min_size=0, max_size=5))
def test_fuzz_statistics(statistic):
    mechanism = SummationHistogramEncoding(3, 1.0)
    try:
        array = np.array(statistic, dtype=np.int64)
    except OverflowError:
        return
    estimate = outcome(mechanism.estimate, array)
    if estimate is not None:
        assert np.all(np.isfinite(estimate))
