"""The seams between the estimators and scikit-learn: malformed input refused with
scikit-learn's messages, a float column never silently a histogram, a Pipeline's
``predict(queries)`` pointed at its last step, and the encoder's block of a ColumnTransformer
(pandas or numpy output) read back exactly."""

import warnings

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
from sklearn.exceptions import NotFittedError
from sklearn.pipeline import make_pipeline

from sklearn_ldp import (
    LDPEncoder,
    LDPReports,
    LongitudinalEncoder,
    LongitudinalEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
)

MALFORMED = [
    (sp.csr_matrix(np.ones((3, 1))), TypeError, "Sparse data was passed"),
    (np.ones((3, 1)) + 1j, ValueError, "Complex data not supported"),
    (np.empty((0, 1)), ValueError, r"0 sample\(s\)"),
    (np.empty((3, 0)), ValueError, r"0 feature\(s\)"),
    (np.array([[1.0], [np.nan]]), ValueError, "Input X contains NaN"),
    (np.array([[1.0], [np.inf]]), ValueError, "Input X contains infinity"),
]


@pytest.mark.parametrize(("X", "error", "message"), MALFORMED)
def test_longitudinal_fit_refuses_malformed_input_with_sklearn_messages(X, error, message):
    with pytest.raises(error, match=message):
        LongitudinalEncoder(categories=["a", "b"]).fit(X)
    with pytest.raises(error, match=message):
        LongitudinalEstimator().fit(X)


def test_longitudinal_fit_still_accepts_rounds_and_names_what_it_fits():
    enc = LongitudinalEncoder(categories=["a", "b"], random_state=0).fit(["a", "b", "a"])
    round_0 = enc.transform(["a", "b", "a"], state=enc.new_state(3))
    assert LongitudinalEstimator().fit(round_0).n_rounds_ == 1
    # Well-formed data that is not reports: the estimator's own message.
    with pytest.raises(ValueError, match="fits LongitudinalReports"):
        LongitudinalEstimator().fit(np.ones((3, 1)))
    with pytest.raises(ValueError, match="fits LongitudinalReports"):
        LongitudinalEstimator().fit({"round": 0})


@pytest.mark.parametrize("column", [
    np.arange(214, dtype=float),                       # distances in whole units
    np.array([0.0, 1.0, 1.0]),
    pd.Series([1.0, 2.0], dtype="Float64"),            # nullable float
    np.arange(10, dtype=np.float32),
])
def test_a_float_column_without_bounds_is_never_a_histogram_of_observed_values(column):
    df = pd.DataFrame({"distance": column})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match=r"Column 'distance' holds numbers") as info:
            LDPEncoder().fit(df)
        with pytest.raises(ValueError, match=r"Column 'distance' holds numbers"):
            WorkloadEstimator(strategy="randomized_response", epsilon=1.0).fit(df)
    message = str(info.value)
    assert "bounds={'distance': (low, high)}" in message
    assert "categories={'distance': [...]}" in message and "categories='observed'" in message


def test_observed_is_the_explicit_opt_in_and_bounds_the_numeric_path():
    df = pd.DataFrame({"distance": np.arange(200, dtype=float) % 20,
                       "city": np.tile(["a", "b"], 100)})
    with pytest.warns(UserWarning, match="leaks"):
        enc = LDPEncoder(categories="observed", strategy="randomized_response",
                         epsilon=1.0, random_state=0).fit(df)
    assert enc.domain_.categories["distance"] == [float(v) for v in range(20)]
    assert enc.domain_.categories["city"] == ["a", "b"]
    # The observed values are public: the reports carry the domain that lists them.
    assert enc.transform(df).domain.categories["distance"][-1] == 19.0
    # Integer columns and strings are categories as before; a numeric column with bounds
    # is a number.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        ints = LDPEncoder(strategy="randomized_response").fit(df.astype({"distance": int}))
    assert ints.domain_.categories["distance"] == list(range(20))
    numeric = LDPEncoder(bounds={"distance": (0, 100)}, strategy="hybrid", epsilon=1.0,
                         random_state=0).fit(df[["distance"]])
    assert numeric.bounds_ == {"distance": (0, 100)}


def test_categories_string_other_than_auto_or_observed_is_refused():
    with pytest.raises(ValueError, match="'auto' or 'observed'"):
        LDPEncoder(categories="everything").fit(pd.DataFrame({"a": ["x", "y"]}))


def test_pipeline_predict_of_queries_names_the_last_step():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"x": rng.integers(0, 8, 2000)})
    pipe = make_pipeline(LDPEncoder(categories={"x": list(range(8))}, strategy="hierarchical",
                                    epsilon=1.0, random_state=0),
                         RangeQueryEstimator()).fit(X)
    ranges = [[0, 3], [2, 5]]
    with pytest.raises(ValueError, match=r"X has 2 features, but LDPEncoder is expecting 1 "
                                         r"features.*pipeline\[-1\]\.predict\(queries\)"):
        pipe.predict(ranges)
    answers = pipe[-1].predict(ranges)
    assert answers.shape == (2,)
    # Records of the right width are privatized as ever (no hint on other errors).
    with pytest.raises(ValueError) as info:
        pipe[0].transform(pd.DataFrame({"x": [99]}))
    assert "pipeline[-1]" not in str(info.value)


def _column_transformer(strategy="oue"):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import StandardScaler
    return ColumnTransformer([
        ("ldp", LDPEncoder(categories={"city": ["a", "b", "c"]}, strategy=strategy,
                           epsilon=1.0, random_state=0), ["city"]),
        ("scale", StandardScaler(), ["age"])]).set_output(transform="pandas")


def test_column_transformer_block_is_decoded_with_the_encoder_mechanism():
    rng = np.random.default_rng(0)
    n = 20_000
    df = pd.DataFrame({"city": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
                       "age": rng.normal(40, 10, n)})
    ct = _column_transformer()
    Z = ct.fit_transform(df)
    encoder = ct.named_transformers_["ldp"]
    assert list(Z.columns) == [f"ldp__{c}" for c in encoder.get_feature_names_out()] + [
        "scale__age"]
    reports = encoder.reports_from_frame(Z)
    assert reports.mechanism == encoder.mechanism_ and reports.domain == encoder.domain_
    est = WorkloadEstimator().fit(reports)
    shares = est.answers_ / n
    sd = np.sqrt(np.asarray(est.expected_error_["worst_case"], dtype=float)) / n
    assert np.all(np.abs(shares - [0.5, 0.3, 0.2]) < 5 * sd)
    # The block alone, too, and the same reports as the encoder's own pandas output.
    block = Z.filter(like="ldp__")
    np.testing.assert_array_equal(encoder.reports_from_frame(block).reports, reports.reports)


def test_column_transformer_block_refusals_name_the_fix():
    df = pd.DataFrame({"city": ["a", "b", "c"], "age": [1.0, 2.0, 3.0]})
    ct = _column_transformer(strategy="randomized_response")
    Z = ct.fit_transform(df)
    encoder = ct.named_transformers_["ldp"]
    with pytest.raises(ValueError, match="pandas DataFrame"):
        encoder.reports_from_frame(Z.to_numpy())
    with pytest.raises(ValueError, match=r"'report' once.*frame.filter"):
        encoder.reports_from_frame(Z.drop(columns="ldp__report"))
    doubled = pd.concat([Z, Z.add_prefix("other__")], axis=1)
    with pytest.raises(ValueError, match="once"):
        encoder.reports_from_frame(doubled)
    bad = Z.assign(ldp__report=[0, 1, 7])  # 7 is no report of a 3-value mechanism
    with pytest.raises(ValueError, match="report"):
        encoder.reports_from_frame(bad)


def _city_age(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"city": rng.choice(["a", "b", "c"], n, p=[0.5, 0.3, 0.2]),
                         "age": rng.normal(40, 10, n)})


# One report column (uint8), a row of bits, two columns of 64-bit hash seeds, a tree's two
# columns: every layout goes through numpy's stacking and back unchanged.
@pytest.mark.parametrize("strategy", ["randomized_response", "oue", "olh", "hierarchical"])
def test_column_transformer_numpy_output_keeps_the_reports_exactly(strategy):
    df = _city_age(3000)
    ct = _column_transformer(strategy).set_output(transform="default")
    Z = ct.fit_transform(df)
    encoder = ct.named_transformers_["ldp"]
    block = Z[:, ct.output_indices_["ldp"]]
    assert isinstance(Z, np.ndarray) and Z.shape[0] == len(df)
    assert block.shape[1] == len(encoder.get_feature_names_out())
    reports = encoder.reports_from_array(block)
    assert reports.mechanism == encoder.mechanism_ and reports.domain == encoder.domain_
    # The same draws as the encoder alone (same seed) and as the pandas output.
    alone = LDPEncoder(**encoder.get_params()).fit_transform(df[["city"]])
    np.testing.assert_array_equal(reports.reports, alone.reports)
    Zp = _column_transformer(strategy).fit_transform(df)
    np.testing.assert_array_equal(
        ct.named_transformers_["ldp"].reports_from_frame(Zp).reports, reports.reports)
    # The scaled column is untouched by the stacking.
    np.testing.assert_allclose(Z[:, ct.output_indices_["scale"]].astype(float),
                               Zp[["scale__age"]].to_numpy())
    # 64-bit seeds stay Python integers (float64 would round them).
    assert (Z.dtype == object) == (reports.reports.dtype.itemsize == 8)


def test_column_transformer_numpy_block_is_decoded_unbiased():
    n = 20_000
    ct = _column_transformer("oue").set_output(transform="default")
    Z = ct.fit_transform(_city_age(n))
    reports = ct.named_transformers_["ldp"].reports_from_array(Z[:, ct.output_indices_["ldp"]])
    est = WorkloadEstimator().fit(reports)
    sd = np.sqrt(np.asarray(est.expected_error_["worst_case"], dtype=float)) / n
    assert np.all(np.abs(est.answers_ / n - [0.5, 0.3, 0.2]) < 5 * sd)


def test_column_transformer_numpy_block_refusals_name_the_fix():
    ct = _column_transformer("olh").set_output(transform="default")
    Z = ct.fit_transform(_city_age(50))
    encoder = ct.named_transformers_["ldp"]
    block = Z[:, ct.output_indices_["ldp"]]
    with pytest.raises(ValueError, match=r"ct\.output_indices_\[name\]"):
        encoder.reports_from_array(Z)                     # the whole output, not the block
    with pytest.raises(ValueError, match="float64 .* 64-bit"):
        encoder.reports_from_array(block.astype(float))   # seeds rounded by a cast
    with pytest.raises(ValueError, match=r"'x' \(row 0, column 0\)"):
        encoder.reports_from_array(np.where(np.arange(50)[:, None] == 0, "x", block))
    for value, shown in ((-1, "-1"), (True, "True"), (2**64, str(2**64)), (1.5, "1.5")):
        bad = block.copy()                                # object dtype: Python integers
        bad[3, 1] = value
        with pytest.raises(ValueError, match=rf"{shown} \(row 3, column 1\)"):
            encoder.reports_from_array(bad)
    rr = _column_transformer("randomized_response").set_output(transform="default")
    Z = rr.fit_transform(_city_age(50))
    block = Z[:, rr.output_indices_["ldp"]]
    encoder = rr.named_transformers_["ldp"]
    for value in (0.5, np.nan, np.inf, 7.0):              # 7 is no report of 3 categories
        bad = block.copy()
        bad[5, 0] = value
        with pytest.raises(ValueError, match="report"):
            encoder.reports_from_array(bad)
    with pytest.raises(ValueError, match="must be a mechanism"):
        LDPReports.from_array(block, "rr")
    with pytest.raises(NotFittedError):
        LDPEncoder().reports_from_array(block)


@pytest.mark.parametrize("params", [
    {"bounds": {"age": (0, 100)}},                                      # float reports
    {"bounds": {"age": (0, 100)}, "categories": {"city": ["a", "b", "c"]}},
    {"categories": {"city": "strings"}, "strategy": "hcms", "max_string_bytes": 4},
], ids=["numeric", "mixed-record", "heavy-hitter-sketch"])
def test_column_transformer_numpy_output_for_records_and_strings(params):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import StandardScaler
    df = _city_age(500).assign(w=np.arange(500.0))
    columns = [c for c in ("age", "city") if c in params.get("bounds", {})
               or c in params.get("categories", {})]
    ct = ColumnTransformer([("ldp", LDPEncoder(random_state=0, **params), columns),
                            ("scale", StandardScaler(), ["w"])])
    Z = ct.fit_transform(df)
    encoder = ct.named_transformers_["ldp"]
    reports = encoder.reports_from_array(Z[:, ct.output_indices_["ldp"]])
    alone = LDPEncoder(**encoder.get_params()).fit_transform(df[columns])
    np.testing.assert_array_equal(reports.reports, alone.reports)
    assert reports.mechanism == encoder.mechanism_
