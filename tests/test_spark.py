"""Spark: reports aggregated per partition on a local[2] session equal one in-memory fit."""

import os
import re
import sys
from decimal import Decimal

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

from sklearn_ldp.deploy.distributed import (  # noqa: E402
    MAX_COUNTED,
    _bit_keys,
    _counted_statistic,
    _distinct_bound,
    aggregate_spark,
)

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


# The method "auto" takes for each kind: Spark counts identical index reports; bit vectors,
# hash rows and floats go through Python.
ROUTES = {"oracle": "partitions", "range_tree": "partitions", "marginal": "count",
          "mean": "partitions", "heavy_hitter_sketch": "partitions"}


def _route(mechanism):
    if _bit_keys(mechanism) is not None:
        return "partitions"
    bound = _distinct_bound(mechanism, mechanism.aggregate(
        mechanism.randomize(np.zeros(0, dtype=np.int64), rng)))
    return "count" if bound is not None and bound <= MAX_COUNTED else "partitions"


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
    assert _route(encoder.mechanism_) == ROUTES[kind]
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



@pytest.mark.parametrize("name", ["randomized_response", "hadamard", "haar", "hierarchical"])
def test_counted_on_the_jvm_equals_the_partitions_and_one_fit(name, spark):
    mechanism = baseline_mechanism(name, (64,), 1.0, oracle="hrr")
    reports = LDPReports(mechanism.randomize(rng.integers(0, 64, 5000), rng), mechanism)
    frame = spark_frame(spark, reports)
    expected = reports.aggregate().statistic.tobytes()
    assert _route(mechanism) == "count"
    for method in ("count", "partitions"):
        assert aggregate_spark(frame, mechanism, method=method).statistic.tobytes() == expected


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
    for method in ("count", "partitions"):
        assert aggregate_spark(frame, mechanism, method=method).statistic.tolist() == [0] * 6


@pytest.mark.parametrize("method", ["count", "partitions"])
def test_a_bad_report_fails_naming_partition_row_column_and_value(method, spark):
    mechanism = baseline_mechanism("randomized_response", (50,), 1.0)
    values = mechanism.randomize(rng.integers(0, 50, 1000), rng).astype(np.int64)
    values[777] = 50  # outside [0, 50): no report of this mechanism
    frame = spark.createDataFrame(pd.DataFrame({"report": values})).coalesce(1)
    with pytest.raises(ValueError, match=r"^Spark partition 0, row 778: .*50"):
        aggregate_spark(frame, mechanism, method=method)
    values[777] = -1
    frame = spark.createDataFrame(pd.DataFrame({"report": values})).repartition(1)
    with pytest.raises(ValueError, match=r"^Spark partition 0, row 778, column 'report': value "
                                         r"-1 is outside \[0, 255\]"):
        aggregate_spark(frame, mechanism, method=method)
    nulls = spark.createDataFrame([(1,), (None,)], "report long").coalesce(1)
    with pytest.raises(ValueError, match=r"^Spark partition 0, row 2, column 'report': nan is "
                                         r"not an integer"):
        aggregate_spark(nulls, mechanism, method=method)


@pytest.mark.parametrize("name", ["oue", "rappor", "hierarchical"])
def test_bit_vectors_counted_by_column_and_value_equal_one_fit(name, spark):
    mechanism = baseline_mechanism(name, (36,), 1.0)  # 36 bits: the last byte has padding
    reports = LDPReports(mechanism.randomize(rng.integers(0, 36, 3000), rng), mechanism)
    assert _bit_keys(mechanism) is not None
    result = aggregate_spark(spark_frame(spark, reports), mechanism, method="count")
    assert result.statistic.tobytes() == reports.aggregate().statistic.tobytes()


def test_a_bad_bit_vector_is_located_as_by_the_partitions(spark):
    mechanism = baseline_mechanism("oue", (36,), 1.0)
    values = mechanism.randomize(rng.integers(0, 36, 800), rng).astype(np.int64)
    values[432, 4] = 0x30  # bits 36 and 37: past the 36 cells
    frame = spark.createDataFrame(pd.DataFrame(
        values, columns=[f"report_{j}" for j in range(5)])).coalesce(1)
    messages = []
    for method in ("count", "partitions"):
        with pytest.raises(ValueError, match=r"^Spark partition 0, row 433: ") as error:
            aggregate_spark(frame, mechanism, method=method)
        messages.append(str(error.value))
    assert messages[0] == messages[1]


def test_a_bad_report_in_a_later_partition_is_located(spark):
    mechanism = baseline_mechanism("hierarchical", (64,), 1.0, oracle="hrr")
    values = mechanism.randomize(rng.integers(0, 64, 900), rng).astype(np.int64)
    values[650] = 0  # coefficient 0 of the first level is never sent
    frame = spark.createDataFrame(pd.DataFrame({"report": values})).repartition(1)
    frame = frame.union(frame).coalesce(2)
    with pytest.raises(ValueError, match=r"^Spark partition 0, row 651: .*HRR coefficient"):
        aggregate_spark(frame, mechanism)


def test_bad_columns_types_and_arguments_are_refused(spark):
    mechanism = baseline_mechanism("randomized_response", (5,), 1.0)
    with pytest.raises(ValueError, match=r"the Spark DataFrame: .*missing \['report'\]; "
                                         r"unexpected \['value'\]"):
        aggregate_spark(spark.createDataFrame([(1,)], "value long"), mechanism)
    for kind in ("double", "string", "decimal(20,0)", "boolean"):
        with pytest.raises(ValueError, match=rf"column 'report': Spark type {re.escape(kind)}, "
                                             r"but reports of .* are uint8 values \(byte, "
                                             r"short, int or long\)"):
            aggregate_spark(spark.createDataFrame([], f"report {kind}"), mechanism)
    frame = spark.createDataFrame([(1,)], "report long")
    with pytest.raises(ValueError, match="depth must be an integer >= 1, got 0"):
        aggregate_spark(frame, mechanism, depth=0)
    with pytest.raises(ValueError, match=r"method must be one of \('auto', 'count', "
                                         r"'partitions'\), got 'fast'"):
        aggregate_spark(frame, mechanism, method="fast")
    with pytest.raises(ValueError, match="LDPEncoder is not fitted"):
        aggregate_spark(frame, LDPEncoder())
    piecewise = LDPEncoder(bounds={"x": (0.0, 1.0)}, strategy="piecewise").fit(
        pd.DataFrame({"x": [0.5]})).mechanism_
    with pytest.raises(ValueError, match="exact for integer statistics only"):
        aggregate_spark(spark.createDataFrame([(0.5,)], "report_x double"), piecewise,
                        method="count")


def test_too_many_distinct_reports_for_count(spark, monkeypatch):
    import sklearn_ldp.deploy.distributed as distributed

    monkeypatch.setattr(distributed, "MAX_COUNTED", 10)
    mechanism = baseline_mechanism("randomized_response", (64,), 1.0)
    reports = LDPReports(mechanism.randomize(rng.integers(0, 64, 2000), rng), mechanism)
    frame = spark_frame(spark, reports)
    with pytest.raises(ValueError, match=r"more than 10 distinct reports .* "
                                         r"method='partitions'"):
        aggregate_spark(frame, mechanism, method="count")
    # "auto" falls back to the partitions.
    result = aggregate_spark(frame, mechanism)
    assert result.statistic.tobytes() == reports.aggregate().statistic.tobytes()


@pytest.mark.parametrize("name", ["olh", "blh"])
def test_unsigned_64_bit_seeds_as_long_bits_or_parquet_decimal(name, spark, tmp_path):
    mechanism = baseline_mechanism(name, (50,), 1.0)  # reports: uint64 seed, bucket
    array = mechanism.randomize(rng.integers(0, 50, 600), rng)
    array[0, 0], array[1, 0], array[2, 0] = 2**64 - 1, 2**63, 2**63 - 1  # the extremes
    reports = LDPReports(array, mechanism)
    expected = reports.aggregate().statistic.tobytes()
    assert (array[:, 0] >= 2**63).sum() > 100  # many seeds are negative longs
    bits = pd.DataFrame({"report_0": array[:, 0].view(np.int64),
                         "report_1": array[:, 1].astype(np.int64)})
    assert aggregate_spark(spark.createDataFrame(bits), mechanism).statistic.tobytes() == expected
    write_reports(reports, tmp_path / "seeds.parquet")
    frame = spark.read.parquet(str(tmp_path / "seeds.parquet"))
    assert dict(frame.dtypes)["report_0"] == "decimal(20,0)"  # Parquet uint64
    assert aggregate_spark(frame, mechanism).statistic.tobytes() == expected


def test_unsigned_64_bit_seeds_refuse_other_types_and_values(spark):
    mechanism = baseline_mechanism("olh", (50,), 1.0)
    for kind in ("double", "string", "decimal(21,0)", "decimal(20,1)"):
        with pytest.raises(ValueError, match=rf"column 'report_0': Spark type "
                                             rf"{re.escape(kind)}, but reports of .* are "
                                             r"uint64 values .*decimal\(20,0\)"):
            aggregate_spark(spark.createDataFrame([], f"report_0 {kind}, report_1 long"),
                            mechanism)
    frame = spark.createDataFrame([(Decimal(5), 1), (Decimal(-3), 0)],
                                  "report_0 decimal(20,0), report_1 long").coalesce(1)
    with pytest.raises(ValueError, match=r"^Spark partition 0, row 2, column 'report_0': nan is "
                                         r"not an integer"):
        aggregate_spark(frame, mechanism)
