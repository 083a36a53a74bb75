"""LDPEncoder defaults for a newcomer: categories read from data, unknown and missing values."""

import time
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from sklearn_ldp import Domain, LDPEncoder, WorkloadEstimator
from sklearn_ldp.binning import PublicBinsDiscretizer, interval_categories
from sklearn_ldp.domain import MAX_CATEGORIES_FROM_DATA

CATS = {"smoker": ["no", "yes", "other", "missing"], "age": ["<30", "30-50", ">50"]}
# Randomized response at this epsilon reports the true cell with probability 1 - 1e-12:
# the estimated counts are then the true counts, so substitutions can be checked exactly.
EXACT = 30.0


def _frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"smoker": rng.choice(["no", "yes"], n),
                         "age": rng.choice(CATS["age"], n)})


def _counts(encoder, X):
    """Users per cell, estimated from near-noiseless reports of ``X``."""
    estimator = WorkloadEstimator().fit(encoder.transform(X))
    return dict(zip(estimator.answers_.index, np.round(estimator.answers_.to_numpy()),
                    strict=True))


# ---------------------------------------------------------------- categories read from data
def test_default_encoder_on_a_small_categorical_frame_is_quick_and_warns():
    df = pd.DataFrame({"smoker": ["no", "yes"] * 100, "age": ["<30", "30-50", ">50", "<30"] * 50,
                       "region": list("NESW") * 50})
    start = time.perf_counter()
    with pytest.warns(UserWarning, match="leaks information"):
        reports = LDPEncoder().fit_transform(df)
    assert len(reports) == 200
    # Measured at 1-3 s (the "auto" selection optimizes a strategy for these 24 cells).
    assert time.perf_counter() - start < 30


@pytest.mark.parametrize("column", [
    np.random.default_rng(0).normal(size=50_000),          # a measurement
    np.array([0.5, 1.0, 1.0]),                              # a single fractional value
    np.array([1.0, np.inf]),                                # inf is no category
    pd.Series([1.5, 2.0], dtype="Float64"),                 # nullable float
    pd.Series([1, 2.5, "x"], dtype=object),                 # a float among objects
])
def test_a_float_column_is_refused_with_advice_not_a_category_per_value(column):
    df = pd.DataFrame({"duration": column})
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match=r"'duration' holds continuous values") as info:
            LDPEncoder().fit(df)
    assert time.perf_counter() - start < 10  # refused at once: no domain is built
    message = str(info.value)
    assert "PublicBinsDiscretizer" in message and "declare its categories" in message
    assert "interval_categories" in message


def test_high_cardinality_is_refused_above_the_documented_limit():
    assert MAX_CATEGORIES_FROM_DATA == 1000
    too_many = pd.DataFrame({"user_id": np.arange(MAX_CATEGORIES_FROM_DATA + 1)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match=r"'user_id' has 1001 distinct values, more than "
                                             r"max_categories=1000.*PublicBinsDiscretizer"):
            LDPEncoder(strategy="randomized_response").fit(too_many)
        with pytest.raises(ValueError, match="max_categories=1000"):  # the estimators too
            WorkloadEstimator(strategy="randomized_response", epsilon=1.0).fit(too_many)
        with pytest.raises(ValueError, match="max_categories=1000"):  # a categorical dtype too
            LDPEncoder().fit(too_many.astype("category"))
        at_limit = too_many.iloc[:MAX_CATEGORIES_FROM_DATA]
        encoder = LDPEncoder(strategy="randomized_response").fit(at_limit)
    assert encoder.domain_.size == MAX_CATEGORIES_FROM_DATA


def test_declared_categories_have_no_limit_and_floats_are_fine_once_binned():
    encoder = LDPEncoder(categories={"user_id": range(5000)}, strategy="hadamard")
    assert encoder.fit(pd.DataFrame({"user_id": [1, 4999]})).domain_.size == 5000
    ages = pd.DataFrame({"age": [23.5, 41.2, 67.9, 35.0]})
    edges = [0, 30, 50, 120]
    binned = LDPEncoder(categories={"age": interval_categories(edges)},
                        strategy="randomized_response", random_state=0).fit_transform(ages)
    assert len(binned) == 4
    binner = PublicBinsDiscretizer({"age": edges}, encode="ordinal").fit()
    pipeline = make_pipeline(binner, LDPEncoder(categories=binner.categories_,
                                                strategy="randomized_response"))
    assert len(pipeline.fit_transform(ages)) == 4


def test_integral_floats_are_read_as_categories_only_when_observed_is_asked():
    # A float column is a number: never silently a histogram of the values seen.
    with pytest.raises(ValueError, match=r"Column 'x0' holds numbers.*bounds=\{'x0'"):
        LDPEncoder(strategy="randomized_response").fit(np.array([[0.0], [1.0], [1.0]]))
    with pytest.warns(UserWarning, match="leaks"):
        encoder = LDPEncoder(strategy="randomized_response", categories="observed").fit(
            np.array([[0.0], [1.0], [1.0]]))
    assert encoder.domain_.categories == {"x0": [0.0, 1.0]}


def test_explicit_from_data_keeps_reading_every_value_unless_asked():
    df = pd.DataFrame({"x": [0.5, 0.25]})
    with pytest.warns(UserWarning):
        assert Domain.from_data(df).categories == {"x": [0.25, 0.5]}
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="continuous"):
        Domain.from_data(df, allow_continuous=False)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="max_categories=1"):
        Domain.from_data(df, max_categories=1)
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="max_categories"):
        Domain.from_data(df, max_categories=0)


# ---------------------------------------------------------------- handle_unknown
def test_unknown_values_raise_by_default_naming_the_column():
    encoder = LDPEncoder(categories=CATS, strategy="randomized_response").fit()
    with pytest.raises(ValueError, match=r"Column 'smoker' has 1 rows.*'maybe'"):
        encoder.transform(pd.DataFrame({"smoker": ["maybe"], "age": ["<30"]}))


def test_other_maps_unknown_values_to_the_declared_category_and_keeps_every_user():
    df = _frame()
    df["smoker"] = df["smoker"].astype(object)
    df.loc[:9, "smoker"] = "maybe"
    df.loc[10:14, "smoker"] = 7  # another type, equally unknown
    before = df.copy()
    encoder = LDPEncoder(categories=CATS, strategy="randomized_response", epsilon=EXACT,
                         handle_unknown="other", unknown_category={"smoker": "other"},
                         random_state=0).fit()
    counts = _counts(encoder, df)
    pd.testing.assert_frame_equal(df, before)  # the caller's data is not modified
    assert sum(counts.values()) == len(df)  # nobody dropped: N is the number of users
    other = sum(v for k, v in counts.items() if "smoker=other" in k)
    assert other == 15
    assert sum(v for k, v in counts.items() if "smoker=missing" in k) == 0
    # simulate applies the same mapping
    assert encoder.simulate(df).statistic.sum() > 0


def test_unknown_category_per_column():
    encoder = LDPEncoder(categories=CATS, strategy="randomized_response", epsilon=EXACT,
                         handle_unknown="other", unknown_category={"smoker": "other"},
                         random_state=0).fit()
    counts = _counts(encoder, pd.DataFrame({"smoker": ["maybe", "no"], "age": ["<30", "<30"]}))
    assert counts["smoker=other, age=<30"] == 1
    with pytest.raises(ValueError, match=r"Column 'age' has 1 rows with values"):
        encoder.transform(pd.DataFrame({"smoker": ["no"], "age": ["old"]}))
    with pytest.raises(ValueError, match=r"unknown_category names columns \['height'\]"):
        LDPEncoder(categories=CATS, handle_unknown="other",
                   unknown_category={"height": "other"}).fit()


@pytest.mark.parametrize(("params", "pattern"), [
    ({"handle_unknown": "ignore"}, r"'ignore' is not offered.*number of users N"),
    ({"handle_unknown": "infrequent"}, r"handle_unknown must be one of \('error', 'other'\), "
                                       r"got 'infrequent'"),
    ({"handle_unknown": None}, "handle_unknown must be one of"),
    ({"handle_unknown": "other"}, r"handle_unknown='other' needs unknown_category"),
    ({"unknown_category": "other"}, r"unknown_category='other' is only used with "
                                    r"handle_unknown='other'"),
    ({"handle_unknown": "other", "unknown_category": "elsewhere"},
     r"unknown_category='elsewhere': 'elsewhere' is not a declared category of column "
     r"'smoker'"),
    ({"handle_unknown": "other", "unknown_category": ["x"]}, "must be a hashable category"),
    ({"handle_unknown": "other", "unknown_category": np.nan}, "not a missing value"),
    ({"handle_missing": "drop"}, r"handle_missing must be one of \('error', 'category'\), got "
                                 r"'drop'"),
    ({"handle_missing": "category"}, "handle_missing='category' needs missing_category"),
    ({"missing_category": "missing"}, "missing_category='missing' is only used with"),
    ({"handle_missing": "category", "missing_category": "n/a"},
     r"missing_category='n/a': 'n/a' is not a declared category of column 'smoker'"),
])
def test_handling_parameters_are_validated_in_fit(params, pattern):
    encoder = LDPEncoder(categories=CATS, strategy="randomized_response", **params)
    with pytest.raises(ValueError, match=pattern):
        encoder.fit()
    assert not hasattr(encoder, "mechanism_")


def test_parameters_are_stored_unchanged_and_clone_safely():
    mapping = {"smoker": "other", "age": ">50"}
    encoder = LDPEncoder(categories=CATS, handle_unknown="other", unknown_category=mapping,
                         handle_missing="category", missing_category="missing")
    params = encoder.get_params()
    assert params["unknown_category"] is mapping and params["handle_unknown"] == "other"
    assert params["handle_missing"] == "category" and params["missing_category"] == "missing"
    copy = clone(encoder)
    assert copy.get_params()["unknown_category"] == mapping
    # missing_category "missing" is declared for smoker only: age refuses at fit
    with pytest.raises(ValueError, match="column 'age'"):
        copy.fit()
    assert encoder.unknown_category is mapping


# ---------------------------------------------------------------- handle_missing
def test_missing_values_raise_by_default():
    encoder = LDPEncoder(categories=CATS, strategy="randomized_response").fit()
    with pytest.raises(ValueError, match=r"Column 'smoker' has 1 missing values"):
        encoder.transform(pd.DataFrame({"smoker": [None], "age": ["<30"]}))
    # missing values are not unknown values: "other" does not swallow them
    other = LDPEncoder(categories=CATS, strategy="randomized_response",
                       handle_unknown="other", unknown_category={"smoker": "other"}).fit()
    with pytest.raises(ValueError, match="missing values"):
        other.transform(pd.DataFrame({"smoker": [np.nan], "age": ["<30"]}))


def test_missing_values_map_to_the_declared_category():
    df = _frame()
    df["smoker"] = df["smoker"].astype(object)
    df.loc[:4, "smoker"] = None
    df.loc[5:7, "smoker"] = np.nan
    df.loc[8, "smoker"] = pd.NA
    encoder = LDPEncoder(categories={"smoker": CATS["smoker"], "age": CATS["age"]},
                         strategy="randomized_response", epsilon=EXACT,
                         handle_missing="category", missing_category={"smoker": "missing"},
                         random_state=0).fit()
    counts = _counts(encoder, df)
    assert sum(v for k, v in counts.items() if "smoker=missing" in k) == 9
    assert sum(counts.values()) == len(df)


def test_missing_values_in_a_numeric_array():
    encoder = LDPEncoder(categories={"x0": [0, 1, -1]}, strategy="randomized_response",
                         epsilon=EXACT, handle_missing="category", missing_category=-1,
                         random_state=0).fit(np.array([[0.0], [np.nan]]))
    assert encoder.__sklearn_tags__().input_tags.allow_nan
    counts = _counts(encoder, np.array([[0.0], [1.0], [np.nan], [np.nan]]))
    assert counts == {"x0=0": 1, "x0=1": 1, "x0=-1": 2}
    with pytest.raises(ValueError, match="infinity"):  # inf is not missing
        encoder.transform(np.array([[np.inf]]))


def test_categories_read_from_data_get_the_other_and_missing_cells():
    df = pd.DataFrame({"smoker": ["no", None, "yes", "no"]})
    with pytest.warns(UserWarning, match="leaks"):
        encoder = LDPEncoder(strategy="randomized_response", epsilon=EXACT,
                             handle_unknown="other", unknown_category="other",
                             handle_missing="category", missing_category="n/a",
                             random_state=0).fit(df)
    assert encoder.domain_.categories == {"smoker": ["n/a", "no", "yes", "other"]}
    counts = _counts(encoder, pd.DataFrame({"smoker": ["maybe", None, "no"]}))
    assert counts == {"smoker=n/a": 1, "smoker=no": 1, "smoker=yes": 0, "smoker=other": 1}
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="1 missing values"):
        LDPEncoder().fit(df)  # without a missing category, NaN is refused as before
