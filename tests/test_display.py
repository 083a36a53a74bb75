"""The displays draw the estimators' own numbers, at the stated confidence, headless."""

import sys
import warnings
from statistics import NormalDist

import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

from sklearn_ldp import (  # noqa: E402
    AttributeHistogramEstimator,
    CDFDisplay,
    DistributionEstimator,
    HeavyHitterDisplay,
    HeavyHitterEstimator,
    HistogramDisplay,
    LDPEncoder,
    LongitudinalDisplay,
    LongitudinalEstimator,
    MarginalEstimator,
    MeanDisplay,
    MeanEstimator,
    RangeQueryEstimator,
    StrategyComparisonDisplay,
    WorkloadEstimator,
    expected_error_scorer,
)
from sklearn_ldp.longitudinal import LongitudinalEncoder  # noqa: E402

Z95 = NormalDist().inv_cdf(0.975)
CATEGORIES = {"browser": ["firefox", "chrome", "safari", "edge"], "os": ["linux", "mac"]}


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def records():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"browser": rng.choice(CATEGORIES["browser"], 3000,
                                               p=[0.02, 0.6, 0.3, 0.08]),
                         "os": rng.choice(CATEGORIES["os"], 3000)})


@pytest.fixture(scope="module")
def histogram(records):
    # A small budget: some of the rare category's estimates fall below 0.
    return AttributeHistogramEstimator(strategy="smp", epsilon=0.5, categories=CATEGORIES,
                                       random_state=3).fit(records)


def _bar_heights(bars):
    return np.array([bar.get_height() for bar in bars])


def _errorbar_segments(container):
    """``(low, high)`` ends of each segment of an ErrorbarContainer."""
    (collection,) = container.lines[2]
    segments = collection.get_segments()
    return (np.array([min(s[0][1], s[1][1]) for s in segments]),
            np.array([max(s[0][1], s[1][1]) for s in segments]),
            np.array([min(s[0][0], s[1][0]) for s in segments]),
            np.array([max(s[0][0], s[1][0]) for s in segments]))


# --------------------------------------------------------------------- histograms
def test_histogram_draws_the_estimators_answers_and_intervals(histogram):
    display = HistogramDisplay.from_estimator(histogram, clip_negative=False)
    answers = histogram.answers_.to_numpy()
    std = np.sqrt(histogram.expected_error_["worst_case"].to_numpy())
    np.testing.assert_allclose(_bar_heights(display.bars_), answers)
    low, high, _, _ = _errorbar_segments(display.errorbars_)
    np.testing.assert_allclose(low, answers - Z95 * std)
    np.testing.assert_allclose(high, answers + Z95 * std)
    labels = [tick.get_text() for tick in display.ax_.get_xticklabels()]
    assert labels == list(histogram.answers_.index)


def test_histogram_never_shows_a_negative_share_by_default():
    estimates = pd.Series([0.5, -0.02, 0.3], index=["a", "b", "c"])
    display = HistogramDisplay(estimates, [0.01, 0.05, 0.01]).plot()
    assert _bar_heights(display.bars_).min() == 0.0
    low, high, _, _ = _errorbar_segments(display.errorbars_)
    assert low.min() >= 0.0
    np.testing.assert_allclose(high, np.maximum(estimates + Z95 * np.array([0.01, 0.05, 0.01]),
                                                0))
    assert display.estimates is estimates  # the numbers are kept as estimated


def test_histogram_of_one_column_and_confidence_level(histogram):
    display = HistogramDisplay.from_estimator(histogram, column="os", confidence=0.5,
                                              error="average_case")
    rows = ["os=linux", "os=mac"]
    std = np.sqrt(histogram.expected_error_.loc[rows, "average_case"].to_numpy())
    center = np.maximum(histogram.histograms_["os"].to_numpy(), 0)
    np.testing.assert_allclose(display.upper_ - center,
                               NormalDist().inv_cdf(0.75) * std, rtol=1e-12)
    assert display.ax_.get_xlabel() == "os"


def test_histogram_respects_ax_and_true_values(histogram):
    figure, (left, right) = plt.subplots(1, 2)
    truth = [0.5, 0.5]
    display = HistogramDisplay.from_estimator(histogram, column="os", ax=right,
                                              true_values=truth)
    assert display.ax_ is right and display.figure_ is figure
    assert not left.patches
    np.testing.assert_allclose(display.truth_.get_ydata(), truth)


def test_histogram_of_a_workload_estimator():
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"day": rng.integers(0, 7, 2000)})
    categories = {"day": range(7)}
    estimator = WorkloadEstimator(workload="histogram", strategy="hadamard", epsilon=1.0,
                                  categories=categories, random_state=0).fit(data)
    display = HistogramDisplay.from_estimator(estimator, clip_negative=False)
    np.testing.assert_allclose(_bar_heights(display.bars_), estimator.answers_.to_numpy())
    np.testing.assert_allclose(display.upper_ - estimator.answers_.to_numpy(),
                               Z95 * np.sqrt(estimator.expected_error_["worst_case"]))
    assert display.ax_.get_ylabel() == "users"  # normalize=False: counts


def test_histogram_of_a_marginal():
    rng = np.random.default_rng(2)
    data = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 3000),
                         "b": rng.choice(["u", "v"], 3000)})
    encoder = LDPEncoder(categories={"a": ["x", "y", "z"], "b": ["u", "v"]},
                         strategy="marg_ht", epsilon=1.0, random_state=0)
    estimator = MarginalEstimator().fit(encoder.fit_transform(data))
    display = HistogramDisplay.from_estimator(estimator, clip_negative=False)
    table = estimator.predict([("a", "b")])[0]
    np.testing.assert_allclose(_bar_heights(display.bars_), table.to_numpy())
    variance = estimator.mechanism_.marginal_variance((0, 1), estimator.n_users_).ravel()
    np.testing.assert_allclose(display.upper_ - table.to_numpy(), Z95 * np.sqrt(variance))
    assert [t.get_text() for t in display.ax_.get_xticklabels()][:2] == ["x, u", "x, v"]
    one = HistogramDisplay.from_estimator(estimator, marginal="b")
    assert len(one.bars_) == 2
    with pytest.raises(ValueError, match="average_case"):
        HistogramDisplay.from_estimator(estimator, error="worst_case")
    with pytest.raises(ValueError, match="marginal=\\('b', 'a'\\)"):
        HistogramDisplay.from_estimator(estimator, marginal=("b", "a"))


def test_too_many_bars_is_refused_before_the_answers_are_built():
    estimator = WorkloadEstimator(workload="histogram", strategy="olh", epsilon=1.0,
                                  categories={"port": range(2**12)}, random_state=0).fit(
        pd.DataFrame({"port": np.arange(2**12)}))
    with pytest.raises(ValueError, match="too many bars"):
        HistogramDisplay.from_estimator(estimator)
    assert estimator._answers is None  # refused from the workload's size alone
    with pytest.raises(ValueError, match="too many bars"):
        HeavyHitterDisplay(np.arange(600), np.zeros(600), np.zeros(600)).plot()


def test_histogram_refusals(histogram):
    with pytest.raises(NotFittedError):
        HistogramDisplay.from_estimator(AttributeHistogramEstimator())
    with pytest.raises(TypeError, match="RangeQueryEstimator"):
        HistogramDisplay.from_estimator(RangeQueryEstimator())
    with pytest.raises(ValueError, match="column='nope'"):
        HistogramDisplay.from_estimator(histogram, column="nope")
    with pytest.raises(ValueError, match="confidence"):
        HistogramDisplay.from_estimator(histogram, confidence=95)
    with pytest.raises(ValueError, match="error"):
        HistogramDisplay.from_estimator(histogram, error="best_case")
    with pytest.raises(TypeError, match="clip_negative"):
        HistogramDisplay.from_estimator(histogram, clip_negative="no")
    with pytest.raises(ValueError, match="std_errors"):
        HistogramDisplay(pd.Series([0.1, 0.2]), [0.1]).plot()
    with pytest.raises(ValueError, match="true_values"):
        HistogramDisplay(pd.Series([0.1, 0.2]), [0.1, 0.1], true_values=[np.nan, 1]).plot()


def test_missing_matplotlib_names_the_extra(histogram, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'pip install "sklearn_ldp\[examples\]"'):
        HistogramDisplay.from_estimator(histogram)


# --------------------------------------------------------------------- heavy hitters
@pytest.fixture(scope="module")
def heavy_hitters():
    rng = np.random.default_rng(0)
    ids = np.where(rng.random(60_000) < 0.4, 7, rng.integers(2**10, size=60_000))
    encoder = LDPEncoder(categories={"id": 10}, strategy="pem", epsilon=4.0, n_candidates=4,
                         random_state=0)
    reports = encoder.fit_transform(pd.DataFrame({"id": ids}))
    return HeavyHitterEstimator(top_k=3).fit(reports)


def test_heavy_hitters_draw_their_frequencies_and_intervals(heavy_hitters):
    table = heavy_hitters.heavy_hitters_
    display = HeavyHitterDisplay.from_estimator(heavy_hitters, clip_negative=False,
                                                true_frequency={7: 0.4})
    widths = np.array([bar.get_width() for bar in display.bars_])
    np.testing.assert_allclose(widths, table["frequency"])
    _, _, low, high = _errorbar_segments(display.errorbars_)
    np.testing.assert_allclose(low, table["frequency"] - Z95 * table["std_error"])
    np.testing.assert_allclose(high, table["frequency"] + Z95 * table["std_error"])
    assert [t.get_text() for t in display.ax_.get_yticklabels()] == [
        str(v) for v in table["value"]]
    truth = display.truth_.get_xdata()
    assert truth[0] == 0.4 and np.isnan(truth[1:]).all()
    assert display.ax_.yaxis_inverted()  # the largest on top


def test_heavy_hitter_refusals(heavy_hitters):
    with pytest.raises(NotFittedError):
        HeavyHitterDisplay.from_estimator(HeavyHitterEstimator())
    with pytest.raises(TypeError, match="true_frequency"):
        HeavyHitterDisplay.from_estimator(heavy_hitters, true_frequency=[0.4])
    with pytest.raises(TypeError, match="HeavyHitterEstimator"):
        HeavyHitterDisplay.from_estimator(MeanEstimator())


# --------------------------------------------------------------------- means
@pytest.fixture(scope="module")
def means():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"age": rng.uniform(18, 80, 3000), "score": rng.uniform(0, 1, 3000)})
    return MeanEstimator(strategy="duchi", epsilon=1.0,
                         bounds={"age": (18, 80), "score": (0, 1)}, random_state=0).fit(data)


def test_means_with_their_intervals(means):
    display = MeanDisplay.from_estimator(means, true_means=[49, 0.5])
    _, _, low, high = _errorbar_segments(display.errorbars_)
    np.testing.assert_allclose(low, means.mean_ - Z95 * means.mean_std_error_)
    np.testing.assert_allclose(high, means.mean_ + Z95 * means.mean_std_error_)
    np.testing.assert_allclose(display.errorbars_.lines[0].get_xdata(), means.mean_)
    noise = MeanDisplay.from_estimator(means, error="average_case", confidence=0.9)
    np.testing.assert_allclose(noise.upper_ - means.mean_, NormalDist().inv_cdf(0.95)
                               * np.sqrt(means.expected_error_["average_case"]))
    with pytest.raises(NotFittedError):
        MeanDisplay.from_estimator(MeanEstimator())
    with pytest.raises(ValueError, match="error"):
        MeanDisplay.from_estimator(means, error="variance")


# --------------------------------------------------------------------- CDF
@pytest.fixture(scope="module")
def ranges():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"minute": rng.normal(30, 8, 4000).clip(0, 59).astype(int)})
    return RangeQueryEstimator(strategy="hierarchical", epsilon=1.0,
                               categories={"minute": range(60)}, random_state=0).fit(data)


def test_cdf_band_at_the_stated_confidence(ranges):
    display = CDFDisplay.from_estimator(ranges, quantiles=[0.25, 0.5], confidence=0.8)
    np.testing.assert_allclose(display.line_.get_ydata(), ranges.cdf_)
    points = ranges.labels_.get_indexer(ranges.expected_error_.index)
    std = np.sqrt(ranges.expected_error_["worst_case"].to_numpy())
    z = NormalDist().inv_cdf(0.9)
    np.testing.assert_allclose(display.lower_, np.clip(ranges.cdf_[points] - z * std, 0, 1))
    np.testing.assert_allclose(display.upper_, np.clip(ranges.cdf_[points] + z * std, 0, 1))
    assert display.ax_.get_xlabel() == "minute"
    drawn = [line.get_xdata()[0] for line in display.quantile_lines_]
    np.testing.assert_allclose(drawn, ranges.quantiles([0.25, 0.5]).astype(float))


def test_cdf_of_a_distribution_has_no_band():
    rng = np.random.default_rng(1)
    data = pd.DataFrame({"hours": rng.beta(2, 5, 4000) * 40})
    estimator = DistributionEstimator(strategy="square_wave", epsilon=2.0,
                                      bounds={"hours": (0, 40)}, n_bins=32,
                                      random_state=0).fit(data)
    figure, ax = plt.subplots()
    display = CDFDisplay.from_estimator(estimator, quantiles=[0.5], ax=ax)
    assert display.ax_ is ax and display.band_ is None
    np.testing.assert_allclose(display.line_.get_ydata()[1:], estimator.cdf().to_numpy())
    assert display.quantile_lines_[0].get_xdata()[0] == pytest.approx(
        estimator.quantiles(0.5))
    with pytest.raises(ValueError, match="column"):
        CDFDisplay.from_estimator(estimator, column="nope")


def test_cdf_refusals(ranges):
    with pytest.raises(NotFittedError):
        CDFDisplay.from_estimator(RangeQueryEstimator())
    with pytest.raises(ValueError, match="quantiles"):
        CDFDisplay.from_estimator(ranges, quantiles=[1.5])
    with pytest.raises(ValueError, match="column"):
        CDFDisplay.from_estimator(ranges, column="minute")


# --------------------------------------------------------------------- longitudinal
def test_longitudinal_lines_and_bands():
    encoder = LongitudinalEncoder(categories=["mail", "maps"], random_state=0).fit()
    state = encoder.new_state(3000)
    estimator = LongitudinalEstimator(normalize=True)
    rng = np.random.default_rng(1)
    for _ in range(3):
        estimator.partial_fit(encoder.transform(rng.choice(["mail", "maps"], 3000,
                                                           p=[0.7, 0.3]), state=state))
    truth = np.tile([0.7, 0.3], (3, 1))
    display = LongitudinalDisplay.from_estimator(estimator, clip_negative=False,
                                                 true_values=truth)
    np.testing.assert_allclose(display.truth_["maps"].get_ydata(), truth[:, 1])
    for column in ("mail", "maps"):
        np.testing.assert_allclose(display.lines_[column].get_ydata(),
                                   estimator.estimates_[column])
        np.testing.assert_allclose(display.upper_[column] - estimator.estimates_[column],
                                   Z95 * estimator.standard_errors_[column])
    assert display.ax_.get_ylabel().startswith("share of users")
    only = LongitudinalDisplay.from_estimator(estimator, columns=["maps"])
    assert list(only.lines_) == ["maps"]
    with pytest.raises(ValueError, match="columns"):
        LongitudinalDisplay.from_estimator(estimator, columns=["web"])
    with pytest.raises(ValueError, match="true_values"):
        LongitudinalDisplay.from_estimator(estimator, true_values=truth[:2])
    with pytest.raises(NotFittedError):
        LongitudinalDisplay.from_estimator(LongitudinalEstimator())


# --------------------------------------------------------------------- strategies
def test_strategy_comparison_from_a_search():
    rng = np.random.default_rng(0)
    data = pd.DataFrame({"day": rng.integers(0, 16, 200)})
    encoder = LDPEncoder(categories={"day": range(16)}, epsilon=1.0, workload="prefix",
                         strategy="hadamard")
    strategies = ["randomized_response", "hadamard", "hierarchical"]
    everyone = np.arange(len(data))
    scorer = expected_error_scorer(epsilon=1.0)
    search = GridSearchCV(encoder, {"strategy": strategies}, scoring=scorer,
                          cv=[(everyone, everyone)]).fit(data)
    display = StrategyComparisonDisplay.from_search(search)
    widths = np.array([bar.get_width() for bar in display.bars_])
    np.testing.assert_allclose(widths, -search.cv_results_["mean_test_score"])
    assert display.best_ == search.best_params_["strategy"]
    direct = StrategyComparisonDisplay.from_encoders(
        [LDPEncoder(categories={"day": range(16)}, epsilon=1.0, workload="prefix",
                    strategy=s).fit() for s in strategies])
    np.testing.assert_allclose([bar.get_width() for bar in direct.bars_], widths)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        other = GridSearchCV(encoder, {"strategy": strategies[:2]}, scoring=None,
                             cv=[(everyone, everyone)], error_score=np.nan)
    with pytest.raises(NotFittedError):
        StrategyComparisonDisplay.from_search(other)
    with pytest.raises(NotFittedError):
        StrategyComparisonDisplay.from_encoders([LDPEncoder(categories={"day": range(4)})])
    with pytest.raises(ValueError, match="errors"):
        StrategyComparisonDisplay(["a", "b"], [1.0, np.nan]).plot()


def test_strategy_comparison_refuses_another_scorer():
    from sklearn.dummy import DummyRegressor

    search = GridSearchCV(DummyRegressor(), {"strategy": ["mean", "median"]}, cv=2).fit(
        np.zeros((4, 1)), np.arange(4.0))
    with pytest.raises(TypeError, match="expected_error_scorer"):
        StrategyComparisonDisplay.from_search(search)


# --------------------------------------------------------------------- hostile numbers
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_ANY_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(),
                        st.booleans(), st.none(), st.text(max_size=3))


@settings(max_examples=40, deadline=5000)
@given(estimates=st.lists(st.floats(-1, 2), min_size=1, max_size=6),
       std_errors=st.lists(st.one_of(st.floats(0, 1), _ANY_NUMBER), min_size=0, max_size=7),
       confidence=_ANY_NUMBER)
def test_histogram_from_any_numbers_draws_or_refuses(estimates, std_errors, confidence):
    display = HistogramDisplay(pd.Series(estimates), std_errors, confidence=confidence)
    try:
        display.plot()
    except (ValueError, TypeError) as error:
        assert "std_errors" in str(error) or "confidence" in str(error)
        return
    finally:
        plt.close("all")
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    expected_upper = np.maximum(np.array(estimates) + z * np.array(std_errors, dtype=float), 0)
    np.testing.assert_allclose(display.upper_, expected_upper)
    assert np.all(_bar_heights(display.bars_) >= 0)


@pytest.mark.parametrize("draw", [
    lambda ax: HistogramDisplay(pd.Series([0.2, 0.8]), [0.1, 0.1]).plot(ax=ax),
    lambda ax: HeavyHitterDisplay(["a"], [0.5], [0.1]).plot(ax=ax),
    lambda ax: MeanDisplay(pd.Series({"age": 40.0}), [1.0]).plot(ax=ax),
    lambda ax: CDFDisplay([0, 1, 2], [0.2, 0.6, 1.0], band_x=[0, 2], band_cdf=[0.2, 1.0],
                          band_std=[0.1, 0.0]).plot(ax=ax),
    lambda ax: LongitudinalDisplay(pd.DataFrame({"a": [0.5, 0.6]}),
                                   pd.DataFrame({"a": [0.1, 0.1]})).plot(ax=ax),
    lambda ax: StrategyComparisonDisplay(["x", "y"], [2.0, 1.0]).plot(ax=ax),
], ids=["histogram", "heavy_hitters", "mean", "cdf", "longitudinal", "strategies"])
def test_every_display_draws_on_the_axes_given(draw):
    figure, (other, target) = plt.subplots(1, 2)
    display = draw(target)
    assert display.ax_ is target and display.figure_ is figure
    assert not other.has_data() and target.has_data()
    assert len(figure.axes) == 2
