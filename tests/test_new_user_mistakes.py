"""The natural mistakes of a new user, one test each.

Each mistake ends in either a correct analysis or a ValueError / TypeError /
NotFittedError whose message names the field and the value and says what to do: never a
silent wrong answer, never an IndexError, KeyError, AttributeError, ZeroDivisionError or
numpy warning (the module's ``filterwarnings`` turns every warning into a failure, so a
case that warns fails unless it says which warning it expects).
"""

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError

from sklearn_ldp import (
    AttributeHistogramEstimator,
    DistributionEstimator,
    HeavyHitterEstimator,
    HistogramDisplay,
    LDPEncoder,
    LDPReports,
    LongitudinalEncoder,
    MarginalEstimator,
    MeanEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
    margin_of_error,
    users_needed,
)

pytestmark = pytest.mark.filterwarnings("error")

N = 4000
BROWSERS = ["chrome", "firefox", "safari"]
SHARES = [0.5, 0.3, 0.2]


@pytest.fixture(scope="module")
def users():
    rng = np.random.default_rng(0)
    return pd.DataFrame({"browser": rng.choice(BROWSERS, N, p=SHARES),
                         "age": rng.uniform(18, 90, N),
                         "hour": rng.integers(0, 24, N)})


def histogram_encoder(**params):
    return LDPEncoder(**{"categories": {"browser": BROWSERS}, "epsilon": 1.0,
                         "random_state": 0, **params})


def hours_encoder(**params):
    return LDPEncoder(**{"categories": {"hour": range(24)}, "strategy": "hierarchical",
                         "epsilon": 1.0, "random_state": 0, **params})


def assert_histogram_right(estimator, records):
    """The counts of BROWSERS in ``records`` within 5 of the estimator's own standard errors
    (an analysis is right when its error is the one it states)."""
    truth = pd.Series(np.asarray(records).ravel()).value_counts().reindex(BROWSERS)
    sd = np.sqrt(np.asarray(estimator.expected_error_["worst_case"], dtype=float))
    z = (np.asarray(estimator.answers_, dtype=float) - truth.to_numpy()) / sd
    assert np.all(np.abs(z) < 5), z


# ---------------------------------------------------------------- the encoder's parameters
def test_01_categories_of_a_misspelled_column(users):
    with pytest.raises(ValueError, match=r"categories names the column\(s\) \['browsr'\], "
                                         r"which the data lacks \(it has columns "
                                         r"\['browser'\]\)"):
        histogram_encoder(categories={"browsr": BROWSERS}).fit(users[["browser"]])


def test_02_bounds_reversed(users):
    with pytest.raises(ValueError, match=r"bounds\['age'\] must satisfy low < high, "
                                         r"got \(100, 0\)"):
        LDPEncoder(bounds={"age": (100, 0)}).fit(users[["age"]])


def test_02b_bounds_of_a_misspelled_column(users):
    with pytest.raises(ValueError, match=r"bounds names the column\(s\) \['agee'\], which the "
                                         r"data lacks \(it has columns \['age', 'browser'\]\)"):
        LDPEncoder(bounds={"agee": (0, 100)}).fit(users[["age", "browser"]])


def test_03_bounds_as_strings(users):
    with pytest.raises(ValueError, match=r"bounds\['age'\] must hold two finite numbers, "
                                         r"got \('0', '100'\)"):
        LDPEncoder(bounds={"age": ("0", "100")}).fit(users[["age"]])


def test_04_bounds_on_a_string_column(users):
    encoder = LDPEncoder(bounds={"browser": (0, 1)}, random_state=0)
    with pytest.raises(ValueError, match=r"Column 'browser' holds '\w+' at row 0, not a "
                                         r"number \(it has bounds"):
        encoder.fit_transform(users[["browser"]])


@pytest.mark.parametrize(("params", "message"), [
    ({"epsilon": "1.0"}, r"epsilon must be a positive real number, got '1.0'"),
    ({"epsilon": 0}, r"epsilon must be a finite number > 0, got 0.0"),
    ({"epsilon": float("inf")}, r"epsilon must be a finite number > 0, got inf"),
    ({"epsilon": -1}, r"epsilon must be a finite number > 0, got -1.0"),
    ({"epsilon": [1.0]}, r"epsilon must be a positive real number, got \[1.0\]"),
    ({"strategy": "randomised_response"},
     r"unknown strategy 'randomised_response'\. Did you mean 'randomized_response'\?"),
    ({"workload": "histogrm"},
     r"unknown workload name 'histogrm'; use one of \['all_range', 'histogram', 'prefix'\]"),
    ({"random_state": "0"}, r"random_state must be None, an integer >= 0.*got '0'"),
    ({"categories": BROWSERS},
     r"categories must be a mapping column name -> sequence.*got list \['chrome'"),
    ({"categories": {"browser": set(BROWSERS)}},
     r"column 'browser' were given as a set.*pass a list"),
    ({"categories": {"browser": ["chrome", "chrome", "safari"]}},
     r"Column 'browser' has duplicate categories: \['chrome'\]"),
], ids=["05-epsilon-string", "06-epsilon-zero", "07-epsilon-inf", "08-epsilon-negative",
        "09-epsilon-list", "10-misspelled-strategy", "11-misspelled-workload",
        "12-random-state-string", "13-categories-list", "14-categories-set",
        "15-duplicate-categories"])
def test_05_to_15_a_bad_encoder_parameter(users, params, message):
    with pytest.raises(ValueError, match=message):
        histogram_encoder(**params).fit_transform(users[["browser"]])


# ---------------------------------------------------------------- the data
def test_16_a_mean_without_bounds(users):
    # A float column is never turned into one category per observed value.
    with pytest.raises(ValueError, match=r"Column 'age' holds continuous values.*"
                                         r"PublicBinsDiscretizer"):
        with pytest.warns(UserWarning, match="leaks"):
            LDPEncoder(random_state=0).fit_transform(users[["age"]])


def test_17_too_many_categories_read_from_the_data():
    ids = pd.DataFrame({"id": np.arange(5000).astype(str)})
    with pytest.raises(ValueError, match=r"Column 'id' has 5000 distinct values, more than "
                                         r"max_categories=1000.*Bin it"):
        with pytest.warns(UserWarning, match="leaks"):
            LDPEncoder(random_state=0).fit(ids)


@pytest.mark.parametrize("missing", [np.nan, None], ids=["nan", "none"])
def test_18_19_missing_value_in_a_category_column(users, missing):
    frame = users[["browser"]].astype(object)
    frame.loc[3, "browser"] = missing
    with pytest.raises(ValueError, match=r"Column 'browser' has 1 missing values.*fill them"):
        histogram_encoder().fit_transform(frame)


def test_20_missing_value_in_a_numeric_column(users):
    frame = users[["age"]].copy()
    frame.loc[3, "age"] = np.nan
    with pytest.raises(ValueError, match=r"Column 'age' has 1 missing values.*"
                                         r"handle_missing='category'"):
        LDPEncoder(bounds={"age": (0, 100)}, random_state=0).fit_transform(frame)


def test_21_value_outside_the_bounds(users):
    with pytest.raises(ValueError, match=r"Column 'age' has \d+ values outside its declared "
                                         r"bounds \[0.0, 50.0\].*clip=True"):
        LDPEncoder(bounds={"age": (0, 50)}, random_state=0).fit_transform(users[["age"]])


def test_22_unseen_category_at_transform(users):
    encoder = histogram_encoder().fit(users[["browser"]])
    with pytest.raises(ValueError, match=r"Column 'browser' has 1 rows with values that are "
                                         r"not among its categories: \['opera'\]"):
        encoder.transform(pd.DataFrame({"browser": ["opera"]}))


def test_23_numbers_read_as_strings(users):
    as_text = pd.DataFrame({"hour": users["hour"].astype(str)})
    with pytest.raises(ValueError, match=r"Column 'hour' has 4000 rows with values that are "
                                         r"not among its categories: \['\d+'"):
        hours_encoder().fit_transform(as_text)


def test_24_categories_declared_as_strings_for_integers(users):
    with pytest.raises(ValueError, match=r"Column 'hour' has 4000 rows .*Declared "
                                         r"categories: \['0', '1'"):
        hours_encoder(categories={"hour": [str(h) for h in range(24)]}).fit_transform(
            users[["hour"]])


def test_25_a_series_instead_of_a_frame(users):
    # One column given as a Series is that column: the analysis is right.
    estimator = WorkloadEstimator().fit(histogram_encoder().fit_transform(users["browser"]))
    assert_histogram_right(estimator, users["browser"])


def test_26_an_array_without_column_names(users):
    array = users[["browser"]].to_numpy()
    estimator = WorkloadEstimator().fit(histogram_encoder().fit_transform(array))
    assert_histogram_right(estimator, array)


def test_27_the_whole_frame_at_transform_after_fitting_one_column(users):
    encoder = histogram_encoder().fit(users[["browser"]])
    with pytest.raises(ValueError, match=r"(?s)Feature names unseen at fit time.*Pass only the "
                                         r"columns seen in fit: X\[\['browser'\]\]"):
        encoder.transform(users)


def test_28_an_empty_frame(users):
    with pytest.raises(ValueError, match=r"0 sample\(s\)"):
        histogram_encoder().fit_transform(users[["browser"]].iloc[:0])


def test_29_a_string_longer_than_declared(users):
    encoder = LDPEncoder(categories={"browser": "strings"}, strategy="hcms", epsilon=2.0,
                         max_string_bytes=2, random_state=0)
    with pytest.raises(ValueError, match=r"column 'browser': the value '\w+' at row 0 takes "
                                         r"\d bytes in UTF-8, more than the declared 2 "
                                         r"\(max_string_bytes\)"):
        encoder.fit_transform(users[["browser"]])


# ---------------------------------------------------------------- reports and estimators
def test_30_the_raw_frame_given_to_an_estimator(users):
    with pytest.raises(ValueError, match=r"WorkloadEstimator\.fit expects LDPReports.*set "
                                         r"strategy= and epsilon="):
        WorkloadEstimator().fit(users[["browser"]])


@pytest.mark.parametrize(("estimator", "message"), [
    (MeanEstimator(), r"MeanEstimator decodes the reports of records of several columns.*"
                      r"RandomizedResponse\(n_inputs=3.*decode them with WorkloadEstimator"),
    (DistributionEstimator(), r"DistributionEstimator decodes .*RandomizedResponse"),
    (MarginalEstimator(), r"MarginalEstimator decodes reports of a marginal strategy.*"
                          r"Use WorkloadEstimator"),
], ids=["mean", "distribution", "marginal"])
def test_31_to_33_reports_of_another_kind_of_encoder(users, estimator, message):
    reports = histogram_encoder(strategy="randomized_response").fit_transform(
        users[["browser"]])
    with pytest.raises(ValueError, match=message):
        estimator.fit(reports)


def test_34_reports_of_two_epsilons_in_one_estimate(users):
    one = histogram_encoder(epsilon=1.0).fit_transform(users[["browser"]])
    two = histogram_encoder(epsilon=2.0).fit_transform(users[["browser"]])
    estimator = WorkloadEstimator().partial_fit(one)
    with pytest.raises(ValueError, match=r"different mechanism.*epsilon=2\.0.*cannot be "
                                         r"mixed into one estimate"):
        estimator.partial_fit(two)
    with pytest.raises(ValueError, match=r"cannot concatenate reports from different "
                                         r"mechanisms.*epsilon=2\.0"):
        LDPReports.concat([one, two])


def test_35_reports_of_another_column_in_one_estimate(users):
    browsers = histogram_encoder().fit_transform(users[["browser"]])
    hours = hours_encoder(strategy="oue").fit_transform(users[["hour"]])
    estimator = WorkloadEstimator().partial_fit(browsers)
    with pytest.raises(ValueError, match=r"partial_fit: these reports come from a different "
                                         r"mechanism"):
        estimator.partial_fit(hours)


def test_36_transform_twice_expecting_the_same_reports(users):
    # Each transform is a new collection: fresh randomness (never the same noise twice), and
    # each batch alone is an unbiased estimate.
    encoder = histogram_encoder().fit(users[["browser"]])
    first, second = encoder.transform(users[["browser"]]), encoder.transform(users[["browser"]])
    assert not np.array_equal(first.reports, second.reports)
    for reports in (first, second):
        assert_histogram_right(WorkloadEstimator().fit(reports), users["browser"])


def test_37_one_seed_for_two_collections_of_different_users():
    # random_state makes a simulation reproducible; two collections seeded alike over
    # different users are each right (the seed fixes the noise of a row, not an answer).
    rng = np.random.default_rng(1)
    for _day in range(2):
        frame = pd.DataFrame({"browser": rng.choice(BROWSERS, N, p=SHARES)})
        estimator = WorkloadEstimator().fit(histogram_encoder().fit_transform(frame))
        assert_histogram_right(estimator, frame["browser"])


def test_38_predict_and_display_before_fit():
    with pytest.raises(NotFittedError, match="RangeQueryEstimator instance is not fitted"):
        RangeQueryEstimator().predict([[0, 3]])
    with pytest.raises(NotFittedError, match="WorkloadEstimator instance is not fitted"):
        HistogramDisplay.from_estimator(WorkloadEstimator())


@pytest.fixture(scope="module")
def hour_ranges(users):
    return RangeQueryEstimator().fit(hours_encoder().fit_transform(users[["hour"]]))


@pytest.mark.parametrize(("ranges", "message"), [
    ([[0, 30]], r"range end .*30.* is neither a category of the domain nor a cell index in "
                r"\[0, 24\)"),
    ([[9, 3]], r"range \[9, 3\] has lo after hi.*lo <= hi"),
    ([[0.5, 3]], r"range start 0\.5 is neither a category"),
], ids=["outside", "reversed", "between-cells"])
def test_39_ranges_outside_the_domain(hour_ranges, ranges, message):
    with pytest.raises(ValueError, match=message):
        hour_ranges.predict(ranges)


@pytest.mark.parametrize("q", [[25, 50, 75], [1.5], [-0.1]], ids=["percent", "above", "below"])
def test_40_quantiles_outside_zero_one(users, hour_ranges, q):
    with pytest.raises(ValueError, match=r"q must hold numbers in \[0, 1\], got"):
        hour_ranges.quantiles(q)
    encoder = LDPEncoder(bounds={"age": (0, 100)}, strategy="square_wave", random_state=0)
    distribution = DistributionEstimator().fit(encoder.fit_transform(users[["age"]]))
    with pytest.raises(ValueError, match=r"q must hold numbers in \[0, 1\], got"):
        distribution.quantiles(q)


@pytest.mark.parametrize("top_k", [0, -1, 2.5, "3"])
def test_41_top_k_not_a_positive_integer(users, top_k):
    encoder = LDPEncoder(categories={"browser": "strings"}, strategy="hcms", epsilon=2.0,
                         max_string_bytes=8, random_state=0)
    reports = encoder.fit_transform(users[["browser"]])
    with pytest.raises(ValueError, match=rf"top_k must be a positive integer or None, got "
                                         rf"{top_k!r}"):
        HeavyHitterEstimator(candidates=BROWSERS, top_k=top_k).fit(reports)


def test_42_marginal_of_a_column_not_collected(users):
    columns = {"browser": BROWSERS, "hour": list(range(24))}
    encoder = LDPEncoder(categories=columns, strategy="inp_ht", max_order=2, random_state=0)
    tables = MarginalEstimator().fit(encoder.fit_transform(users[["browser", "hour"]]))
    with pytest.raises(ValueError, match=r"attribute 'hours' was not collected: the reports "
                                         r"cover \['browser', 'hour'\]"):
        tables.crosstab("browser", "hours")


def test_43_histogram_of_a_column_not_collected(users):
    columns = {"browser": BROWSERS, "hour": list(range(24))}
    encoder = LDPEncoder(categories=columns, strategy="spl", random_state=0)
    estimator = AttributeHistogramEstimator().fit(
        encoder.fit_transform(users[["browser", "hour"]]))
    with pytest.raises(ValueError, match="hours"):
        estimator.predict(["hours"])


# ---------------------------------------------------------------- planning and rounds
@pytest.mark.parametrize(("margin", "message"), [
    (5, r"margin=5\.0 is at least the whole range of a share.*pass margin=0\.05"),
    (0, r"margin must be a positive number .*got int 0"),
], ids=["points-not-fraction", "zero"])
def test_44_margin_in_points_instead_of_a_fraction(margin, message):
    with pytest.raises(ValueError, match=message):
        users_needed(histogram_encoder(), margin=margin)
    assert users_needed(histogram_encoder(), margin=0.05) > 1


def test_45_margin_of_error_for_zero_users():
    with pytest.raises(ValueError, match=r"n_users must be an integer >= 1, got int 0"):
        margin_of_error(histogram_encoder(), 0)


def test_46_a_daily_round_without_the_devices_state(users):
    encoder = LongitudinalEncoder(categories=BROWSERS, epsilon_perm=2.0, epsilon_1=1.0,
                                  random_state=0).fit()
    with pytest.raises(ValueError, match=r"transform needs state= .*from new_state"):
        encoder.transform(users["browser"])
    with pytest.raises(ValueError, match=r"X has 4000 rows but the state holds 10 users"):
        encoder.transform(users["browser"], state=encoder.new_state(10))


def test_47_one_round_epsilon_above_the_permanent_one():
    with pytest.raises(ValueError, match=r"epsilon_1 \(one round\) must be below epsilon_perm"
                                         r".*got 2\.0 >= 1\.0"):
        LongitudinalEncoder(categories=BROWSERS, epsilon_perm=1.0, epsilon_1=2.0).fit()
