"""Spark: reports aggregated per partition on a local[2] session equal one in-memory fit."""

import os
import sys

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp import (
    HeavyHitterEstimator,
    LDPEncoder,
    MarginalEstimator,
    MeanEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
)
from sklearn_ldp.deploy.io import reports_frame, write_reports
from sklearn_ldp.reports import LDPReports
from sklearn_ldp.selection import baseline_mechanism

pytest.importorskip("pyspark")
pytest.importorskip("pyarrow")
from pyspark.sql import SparkSession  # noqa: E402

from sklearn_ldp.deploy.distributed import _counted_statistic, aggregate_spark  # noqa: E402

N_USERS = 4000
rng = np.random.default_rng(31)
TYPES = pd.DataFrame({"a": rng.integers(0, 2, N_USERS), "b": rng.integers(0, 3, N_USERS),
                      "c": rng.integers(0, 2, N_USERS)})


def _encoded(encoder, frame):
    return encoder, encoder.fit_transform(frame)


# One case per kind of statistic: (encoder, its reports on N_USERS users, an estimator).
KINDS = {
    "oracle": lambda: _encoded(
        LDPEncoder(categories={"t": list(range(40))}, strategy="oue", random_state=0),
        pd.DataFrame({"t": rng.integers(0, 40, N_USERS)})) + (WorkloadEstimator,),
    "range_tree": lambda: _encoded(
        LDPEncoder(categories={"t": list(range(64))}, strategy="hierarchical", random_state=0),
        pd.DataFrame({"t": rng.integers(0, 64, N_USERS)})) + (RangeQueryEstimator,),
    "marginal": lambda: _encoded(
        LDPEncoder(categories={"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}, strategy="marg_rr",
                   random_state=0), TYPES) + (MarginalEstimator,),
    "mean": lambda: _encoded(
        LDPEncoder(bounds={"age": (0.0, 100.0)}, strategy="piecewise", random_state=0),
        pd.DataFrame({"age": rng.uniform(0, 100, N_USERS)})) + (MeanEstimator,),
    "heavy_hitter_sketch": lambda: _encoded(
        LDPEncoder(categories={"id": 32}, strategy="cms", epsilon=4.0, sketch_width=64,
                   n_hashes=4, random_state=0),
        pd.DataFrame({"id": np.where(rng.random(N_USERS) < 0.3, 7,
                                     rng.integers(0, 2**32, N_USERS))}))
        + (lambda: HeavyHitterEstimator(candidates=[7, 8]),),
}


@pytest.fixture(scope="module")
def spark():
    previous = os.environ.get("PYSPARK_PYTHON")
    os.environ["PYSPARK_PYTHON"] = sys.executable  # the workers import this sklearn_ldp
    session = (SparkSession.builder.master("local[2]").appName("sklearn_ldp tests")
               .config("spark.driver.memory", "512m")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "3")
               .config("spark.default.parallelism", "5")  # createDataFrame's partitions
               .config("spark.sql.execution.arrow.pyspark.enabled", "true")
               # Several Arrow batches per partition: the batches' sums are tested too.
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "300")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    if previous is None:
        os.environ.pop("PYSPARK_PYTHON", None)
    else:
        os.environ["PYSPARK_PYTHON"] = previous


def spark_frame(spark, reports):
    """The reports as a Spark DataFrame of Spark's own types (long / double), 5 partitions."""
    frame = reports_frame(reports, attrs=False)
    integer = [name for name in frame.columns if frame[name].dtype.kind in "iu"]
    frame[integer] = frame[integer].astype(np.int64)
    return spark.createDataFrame(frame)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_spark_equals_one_in_memory_fit_bit_for_bit(kind, spark):
    encoder, reports, estimator = KINDS[kind]()
    single = reports.aggregate()
    on_spark = aggregate_spark(spark_frame(spark, reports), encoder)
    assert on_spark.statistic.dtype == single.statistic.dtype
    if single.statistic.dtype.kind == "f":  # a float sum (the mean): equal up to rounding
        np.testing.assert_allclose(on_spark.statistic, single.statistic, rtol=1e-12)
    else:
        assert on_spark.statistic.tobytes() == single.statistic.tobytes()
    assert on_spark.mechanism == reports.mechanism and on_spark.domain == reports.domain
    fitted, direct = estimator().fit(on_spark), estimator().fit(reports)
    for name in ("statistic_", "answers_", "mean_", "heavy_hitters_"):
        if hasattr(direct, name):
            expected, got = getattr(direct, name), getattr(fitted, name)
            if isinstance(expected, pd.Series):
                pd.testing.assert_series_equal(got, expected, rtol=1e-12)
            elif isinstance(expected, pd.DataFrame):
                pd.testing.assert_frame_equal(got, expected, rtol=1e-12)
            else:
                np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_counted_statistic_equals_the_repeated_reports():
    for mechanism in (baseline_mechanism("randomized_response", (9,), 1.0),
                      baseline_mechanism("oue", (20,), 1.0)):
        reports = mechanism.randomize(rng.integers(0, mechanism.n_inputs, 50), rng)
        counts = rng.integers(1, 2000, 50)
        counts[0] = 2**40 + 3  # a count past any batch: never materialised
        repeated = mechanism.aggregate(np.repeat(reports[1:], counts[1:], axis=0))
        expected = repeated + mechanism.aggregate(reports[:1]) * counts[0]
        assert (_counted_statistic(mechanism, reports, counts).tobytes()
                == expected.tobytes())


@pytest.mark.parametrize("name", ["randomized_response", "hierarchical"])
def test_counting_identical_reports_on_the_jvm_gives_the_same_statistic(name, spark):
    mechanism = baseline_mechanism(name, (64,), 1.0)
    reports = LDPReports(mechanism.randomize(rng.integers(0, 64, 5000), rng), mechanism)
    result = aggregate_spark(spark_frame(spark, reports), mechanism, count_identical=True)
    assert result.statistic.tobytes() == reports.aggregate().statistic.tobytes()


def test_parquet_files_read_by_spark_equal_the_files(spark, tmp_path):
    mechanism = baseline_mechanism("hierarchical", (50,), 1.0)
    reports = LDPReports(mechanism.randomize(rng.integers(0, 50, 3000), rng), mechanism)
    for shard, start in enumerate(range(0, 3000, 1000)):
        write_reports(reports[start:start + 1000], tmp_path / f"part-{shard}.parquet")
    frame = spark.read.parquet(str(tmp_path))
    result = aggregate_spark(frame, mechanism, depth=3)
    assert result.statistic.tobytes() == reports.aggregate().statistic.tobytes()


def test_empty_frame_gives_the_empty_statistic(spark):
    mechanism = baseline_mechanism("randomized_response", (5,), 1.0)
    frame = spark.createDataFrame([], "report long")
    assert aggregate_spark(frame, mechanism).statistic.tolist() == [0] * 6


def test_a_bad_report_fails_the_job_naming_partition_row_column_and_value(spark):
    mechanism = baseline_mechanism("randomized_response", (50,), 1.0)
    values = mechanism.randomize(rng.integers(0, 50, 1000), rng).astype(np.int64)
    values[777] = 50  # outside [0, 50): no report of this mechanism
    frame = spark.createDataFrame(pd.DataFrame({"report": values})).coalesce(1)
    with pytest.raises(ValueError, match=r"Spark partition 0, row 778: .*50"):
        aggregate_spark(frame, mechanism)
    with pytest.raises(ValueError, match=r"Spark partition \d \(identical reports counted\), "
                                         r"row \d+: .*50"):
        aggregate_spark(frame, mechanism, count_identical=True)
    values[777] = -1
    frame = spark.createDataFrame(pd.DataFrame({"report": values})).coalesce(1)
    with pytest.raises(ValueError, match=r"partition 0, row 778, column 'report': value -1 is "
                                         r"outside \[0, 255\]"):
        aggregate_spark(frame, mechanism)


def test_bad_columns_and_types_are_refused(spark):
    mechanism = baseline_mechanism("randomized_response", (5,), 1.0)
    with pytest.raises(ValueError, match=r"the Spark DataFrame: .*missing \['report'\]; "
                                         r"unexpected \['value'\]"):
        aggregate_spark(spark.createDataFrame([(1,)], "value long"), mechanism)
    with pytest.raises(ValueError, match=r"column 'report': dtype float64, but reports of this "
                                         r"mechanism are uint8 integers"):
        aggregate_spark(spark.createDataFrame([(1.0,)], "report double"), mechanism)
    with pytest.raises(ValueError, match=r"'x' is not an integer"):
        aggregate_spark(spark.createDataFrame([("x",)], "report string"), mechanism)
    with pytest.raises(ValueError, match="depth must be an integer >= 1, got 0"):
        aggregate_spark(spark.createDataFrame([(1,)], "report long"), mechanism, depth=0)
    with pytest.raises(ValueError, match="count_identical must be True or False, got 1"):
        aggregate_spark(spark.createDataFrame([(1,)], "report long"), mechanism,
                        count_identical=1)
    with pytest.raises(ValueError, match="LDPEncoder is not fitted"):
        aggregate_spark(spark.createDataFrame([(1,)], "report long"), LDPEncoder())


def test_unsigned_64_bit_seeds_from_parquet_are_refused_not_converted(spark, tmp_path):
    mechanism = baseline_mechanism("olh", (50,), 1.0)  # reports: uint64 seed, bucket
    reports = LDPReports(mechanism.randomize(rng.integers(0, 50, 200), rng), mechanism)
    write_reports(reports, tmp_path / "olh.parquet")
    frame = spark.read.parquet(str(tmp_path / "olh.parquet"))  # uint64: decimal(20,0)
    with pytest.raises(ValueError, match=r"column 'report_0': dtype object, but reports of "
                                         r"this mechanism are uint64 integers"):
        aggregate_spark(frame, mechanism)
