"""scikit-learn integration: set_output, ColumnTransformer, feature names, report frames."""

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

from sklearn_ldp import LDPEncoder, WorkloadEstimator, workloads
from sklearn_ldp.deploy.io import (
    read_reports,
    report_columns,
    reports_frame,
    reports_from_frame,
    write_reports,
)
from sklearn_ldp.estimators import RangeQueryEstimator
from sklearn_ldp.mechanisms import RandomizedResponse

CATS = {"smoker": ["no", "yes"], "age": ["<30", "30-50", ">50"]}


def _frame(n=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"smoker": rng.choice(CATS["smoker"], n),
                         "age": rng.choice(CATS["age"], n),
                         "income": rng.normal(size=n)},
                        index=pd.RangeIndex(1000, 1000 + n, name="user"))


def _encoder(strategy="oue", **params):
    return LDPEncoder(categories=CATS, strategy=strategy, epsilon=1.0, random_state=0, **params)


@pytest.mark.parametrize(("strategy", "columns"), [
    ("randomized_response", ["report"]),
    ("oue", ["report_0"]),
    ("olh", ["report_0", "report_1"]),
])
def test_pandas_output_names_the_real_report_columns(strategy, columns):
    df = _frame()
    encoder = _encoder(strategy).fit(df)
    assert encoder.get_feature_names_out().tolist() == columns
    assert columns == report_columns(encoder.mechanism_)
    reports = encoder.transform(df)  # default output: LDPReports, unchanged
    frame = _encoder(strategy).set_output(transform="pandas").fit_transform(df)
    assert isinstance(frame, pd.DataFrame) and frame.columns.tolist() == columns
    assert frame.index.equals(df.index)  # one report per record, aligned with it
    np.testing.assert_array_equal(frame.to_numpy().squeeze(), np.asarray(reports).squeeze())
    back = reports_from_frame(frame)
    assert back.mechanism == encoder.mechanism_ and back.domain == encoder.domain_
    assert back.workload.n_queries == encoder.workload_.n_queries


def test_get_feature_names_out_checks_the_input_features():
    encoder = _encoder().fit(_frame())
    assert encoder.get_feature_names_out(["smoker", "age", "income"]).tolist() == ["report_0"]
    with pytest.raises(ValueError, match="input_features is not equal to feature_names_in_"):
        encoder.get_feature_names_out(["a", "b", "c"])


@pytest.mark.parametrize("estimator", [WorkloadEstimator(), RangeQueryEstimator()])
def test_estimators_fit_report_frames_like_reports(estimator):
    df = _frame()
    encoder = _encoder("hierarchical").set_output(transform="pandas")
    frame = encoder.fit_transform(df[["age"]].assign(smoker="no"))
    from_frame = estimator.fit(frame)
    direct = type(estimator)().fit(reports_from_frame(frame))
    np.testing.assert_array_equal(from_frame.statistic_, direct.statistic_)
    assert from_frame.n_users_ == len(df)
    assert from_frame.domain_ == encoder.domain_


def test_report_frames_round_trip_through_parquet(tmp_path):
    pytest.importorskip("pyarrow")
    df = _frame()
    encoder = _encoder("olh", workload="prefix").set_output(transform="pandas")
    frame = encoder.fit_transform(df)
    expected = WorkloadEstimator().fit(frame)
    # pandas writes DataFrame.attrs into the file's metadata and reads them back
    frame.to_parquet(tmp_path / "frame.parquet")
    loaded = pd.read_parquet(tmp_path / "frame.parquet")
    again = WorkloadEstimator().fit(loaded)
    pd.testing.assert_series_equal(again.answers_, expected.answers_)
    assert again.workload_.name == "prefix"  # the workload came back from attrs
    # the report files of sklearn_ldp.deploy.io carry the mechanism themselves
    write_reports(reports_from_frame(frame), tmp_path / "reports.parquet")
    read = read_reports(tmp_path / "reports.parquet", domain=encoder.domain_,
                        workload=encoder.workload_)
    pd.testing.assert_series_equal(WorkloadEstimator().fit(read).answers_, expected.answers_)


def test_a_frame_without_its_mechanism_is_refused_with_the_way_out(tmp_path):
    frame = _encoder("randomized_response").set_output(transform="pandas").fit_transform(
        _frame())
    frame.to_csv(tmp_path / "reports.csv", index=False)
    bare = pd.read_csv(tmp_path / "reports.csv")  # CSV keeps no attrs
    assert not bare.attrs
    with pytest.raises(ValueError, match=r"expects LDPReports.*reports_from_frame"):
        WorkloadEstimator().fit(bare)
    with pytest.raises(ValueError, match="carries no mechanism.*pass mechanism="):
        reports_from_frame(bare)
    mechanism = reports_from_frame(frame).mechanism
    assert len(reports_from_frame(bare, mechanism=mechanism)) == len(frame)
    with pytest.raises(ValueError, match="holds reports of"):
        reports_from_frame(frame, mechanism=RandomizedResponse(6, 2.0))
    with pytest.raises(ValueError, match="unexpected"):  # extra columns are not reports
        reports_from_frame(frame.assign(income=1.0))
    with pytest.raises(ValueError, match="must be a pandas DataFrame"):
        reports_from_frame(np.zeros((2, 1)))


def test_attrs_are_optional_in_reports_frame():
    reports = _encoder().fit_transform(_frame())
    assert reports_frame(reports, attrs=False).attrs == {}
    assert set(reports_frame(reports).attrs) == {"sklearn_ldp.mechanism", "sklearn_ldp.domain",
                                                  "sklearn_ldp.workload"}
    custom = _encoder(workload=workloads.as_workload(np.eye(6)[:2])).fit_transform(_frame())
    assert "sklearn_ldp.workload" not in reports_frame(custom).attrs  # a matrix: not JSON


def test_column_transformer_on_a_column_subset():
    df = _frame()
    transformer = ColumnTransformer([("ldp", _encoder(), ["smoker", "age"])])
    transformer.set_output(transform="pandas")
    out = transformer.fit_transform(df)
    assert out.columns.tolist() == ["ldp__report_0"]
    assert transformer.get_feature_names_out().tolist() == ["ldp__report_0"]
    estimator = WorkloadEstimator().fit(out)  # the "ldp__" prefix is recognized
    assert estimator.n_users_ == len(df)
    assert estimator.answers_.index[0] == "smoker=no, age=<30"
    plain = ColumnTransformer([("ldp", _encoder(), ["smoker", "age"])],
                              verbose_feature_names_out=False).set_output(transform="pandas")
    assert WorkloadEstimator().fit(plain.fit_transform(df)).n_users_ == len(df)


def test_column_transformer_limits():
    df = _frame()
    # Without pandas output the report columns are stacked as numbers, which carry no
    # mechanism: the estimators refuse them (the encoder reads them back, test_seams.py).
    stacked = ColumnTransformer([("ldp", _encoder(), ["smoker", "age"])]).fit_transform(df)
    assert stacked.shape == (len(df), 1)
    with pytest.raises(ValueError, match="expects LDPReports"):
        WorkloadEstimator().fit(stacked)
    # Stacked with raw columns the frame is no longer reports (and loses the mechanism).
    mixed = ColumnTransformer([("ldp", _encoder(), ["smoker", "age"])],
                              remainder="passthrough").set_output(transform="pandas")
    out = mixed.fit_transform(df)
    assert out.columns.tolist() == ["ldp__report_0", "remainder__income"]
    with pytest.raises(ValueError, match="expects LDPReports"):
        WorkloadEstimator().fit(out)


def test_pipeline_with_pandas_output():
    df = _frame()
    pipeline = make_pipeline(_encoder("hadamard"), WorkloadEstimator())
    pipeline.set_output(transform="pandas")
    estimator = pipeline.fit(df[["smoker", "age"]])[-1]
    assert estimator.n_users_ == len(df)
    assert estimator.mechanism_ == pipeline[0].mechanism_


def test_unsupported_output_container_is_refused_before_collecting():
    encoder = _encoder().fit(_frame())
    encoder._sklearn_output_config = {"transform": "polars"}  # what set_output would store
    with pytest.raises(ValueError, match=r"set_output\(transform='polars'\) is not supported"):
        encoder.transform(_frame())
