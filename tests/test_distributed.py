"""Dask: reports aggregated per partition on a 2-worker LocalCluster equal the single machine."""

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp import LDPEncoder
from sklearn_ldp.deploy.io import aggregate_files, reports_frame, write_reports
from sklearn_ldp.estimators.range import RangeQueryEstimator
from sklearn_ldp.estimators.workload import WorkloadEstimator
from sklearn_ldp.reports import LDPReports
from sklearn_ldp.selection import baseline_mechanism

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")
pytest.importorskip("pyarrow")

from sklearn_ldp.deploy.distributed import DaskReports, aggregate_dask, partition_statistic  # noqa: E402

MECHANISMS = {
    "randomized_response": baseline_mechanism("randomized_response", (50,), 1.0),
    "rappor": baseline_mechanism("rappor", (50,), 1.0),
    "olh": baseline_mechanism("olh", (50,), 1.0),
    "hierarchical": baseline_mechanism("hierarchical", (50,), 1.0),
    "haar": baseline_mechanism("haar", (64,), 1.0),
}


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


def privatized(mechanism, n_users=3000, seed=0):
    rng = np.random.default_rng(seed)
    return LDPReports(mechanism.randomize(rng.integers(0, mechanism.n_inputs, n_users), rng),
                      mechanism)


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_dask_array_equals_single_machine_bit_for_bit(name, client):
    reports = privatized(MECHANISMS[name])
    single = reports.mechanism.aggregate(reports.reports)
    for rows in (1000, 257):  # uneven blocks, and more blocks than split_every
        chunks = (rows,) if reports.reports.ndim == 1 else (rows, 1)  # 2-D: split columns too
        array = da.from_array(reports.reports, chunks=chunks)
        result = aggregate_dask(array, reports.mechanism, split_every=3)
        assert result.statistic.dtype == single.dtype == np.int64
        assert result.statistic.tobytes() == single.tobytes()


def test_dask_dataframe_from_parquet_files_equals_files_and_estimator_fits(client, tmp_path):
    encoder = LDPEncoder(categories={"t": list(range(40))}, strategy="oue", random_state=0)
    rng = np.random.default_rng(1)
    reports = encoder.fit_transform(pd.DataFrame({"t": rng.integers(0, 40, 5000)}))
    for shard, start in enumerate(range(0, 5000, 1250)):
        write_reports(reports[start:start + 1250], tmp_path / f"part-{shard}.parquet",
                      chunk_size=400)
    frame = dd.read_parquet(str(tmp_path / "part-*.parquet"))
    assert frame.npartitions >= 4
    from_files = aggregate_files(tmp_path)
    on_cluster = aggregate_dask(frame, reports.mechanism)
    assert on_cluster.statistic.tobytes() == from_files.statistic.tobytes()
    lazy = DaskReports(frame, reports.mechanism, reports.domain, reports.workload)
    assert "not computed" in repr(lazy)
    fitted = WorkloadEstimator().fit(lazy)
    single = WorkloadEstimator().fit(reports)
    np.testing.assert_array_equal(fitted.statistic_, single.statistic_)
    pd.testing.assert_series_equal(fitted.answers_, single.answers_)
    assert fitted.n_users_ == 5000 and repr(lazy).startswith("DaskReports(computed")


def test_estimators_fit_and_partial_fit_dask_reports(client):
    mechanism = MECHANISMS["hierarchical"]
    reports = privatized(mechanism, 4000, seed=2)
    frame = dd.from_pandas(reports_frame(reports), npartitions=5)
    single = RangeQueryEstimator().fit(reports)
    on_cluster = RangeQueryEstimator().fit(DaskReports(frame, mechanism))
    np.testing.assert_array_equal(on_cluster.cdf_, single.cdf_)
    halves = [DaskReports(frame.partitions[:2], mechanism),
              DaskReports(frame.partitions[2:], mechanism)]
    streamed = RangeQueryEstimator().partial_fit(halves[0]).partial_fit(halves[1])
    np.testing.assert_array_equal(streamed.statistic_, single.statistic_)
    merged = halves[0].compute() + halves[1].compute()
    np.testing.assert_array_equal(merged.statistic, single.statistic_)


def test_bad_partitions_and_collections_give_clear_errors(client):
    mechanism = MECHANISMS["randomized_response"]
    frame = reports_frame(privatized(mechanism, 100)).astype(np.int64)
    frame.loc[70, "report"] = 50  # outside [0, 50)
    collection = dd.from_pandas(frame, npartitions=4)
    with pytest.raises(ValueError, match=r"partition 2, row \d+: .*indices in \[0, 50\)"):
        aggregate_dask(collection, mechanism)
    renamed = dd.from_pandas(frame.rename(columns={"report": "value"}), npartitions=2)
    with pytest.raises(ValueError, match=r"the Dask DataFrame: .*missing \['report'\]"):
        aggregate_dask(renamed, mechanism)
    with pytest.raises(ValueError, match="arrays of shape"):
        aggregate_dask(da.zeros((10, 3), chunks=5, dtype=np.uint8), mechanism)
    with pytest.raises(ValueError, match="Dask array or DataFrame"):
        aggregate_dask(np.zeros(3), mechanism)
    with pytest.raises(ValueError, match="split_every"):
        aggregate_dask(collection, mechanism, split_every=1)


def test_gaussian_float_statistics_agree_up_to_rounding(client):
    mechanism = baseline_mechanism("hadamard", (16,), 1.0)
    single_machine = privatized(mechanism)
    assert partition_statistic(single_machine.reports, mechanism).tobytes() == \
        mechanism.aggregate(single_machine.reports).tobytes()
    encoder = LDPEncoder(categories={"t": list(range(8))}, strategy="gaussian", delta=1e-6,
                         random_state=0).fit()
    reports = encoder.transform(pd.DataFrame({"t": np.arange(2000) % 8}))
    array = da.from_array(reports.reports, chunks=(300, 8))
    result = aggregate_dask(array, reports.mechanism)
    np.testing.assert_allclose(result.statistic, reports.mechanism.aggregate(reports.reports),
                               rtol=1e-12, atol=1e-9)
