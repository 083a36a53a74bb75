"""Reports in files (CSV, Parquet), chunked aggregation, merging shards, partial_fit."""

import gzip
import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp import LDPEncoder, UnverifiedFileWarning, workloads
from sklearn_ldp.deploy.io import (
    ReportWriter,
    aggregate_files,
    frame_to_reports,
    iter_report_chunks,
    read_reports,
    report_columns,
    reports_frame,
    write_reports,
)
from sklearn_ldp.estimators.range import RangeQueryEstimator
from sklearn_ldp.estimators.workload import WorkloadEstimator
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.reports import AggregatedReports, LDPReports
from sklearn_ldp.selection import baseline_mechanism

pytest.importorskip("pyarrow")

# Report layouts: 1-D indices, packed bits, (seed, bucket) pairs, tree levels + bits.
MECHANISMS = {
    "randomized_response": baseline_mechanism("randomized_response", (20,), 1.0),
    "oue": baseline_mechanism("oue", (20,), 1.0),
    "olh": baseline_mechanism("olh", (20,), 1.0),
    "hierarchical": baseline_mechanism("hierarchical", (20,), 1.0),
    "subset_selection": baseline_mechanism("subset_selection", (20,), 1.0),
}


def privatized(mechanism, n_users=500, seed=0):
    rng = np.random.default_rng(seed)
    types = rng.integers(0, mechanism.n_inputs, n_users)
    return LDPReports(mechanism.randomize(types, rng), mechanism)


def shard_files(folder, reports, formats=("csv", "parquet", "csv")):
    """Write ``reports`` as consecutive shards, one per format; return the paths."""
    bounds = np.linspace(0, len(reports), len(formats) + 1).astype(int)
    paths = []
    for number, fmt in enumerate(formats):
        path = os.path.join(folder, f"part-{number}.{fmt}")
        write_reports(reports[bounds[number]:bounds[number + 1]], path, chunk_size=64)
        paths.append(path)
    return paths


# ---------------------------------------------------------------------- merging
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_merged_shards_equal_the_aggregate_of_the_union(name):
    reports = privatized(MECHANISMS[name])
    parts = [reports[:123].aggregate(), reports[123:400].aggregate(), reports[400:].aggregate()]
    whole = reports.mechanism.aggregate(reports.reports)
    merged = AggregatedReports.merge(parts)
    assert merged.statistic.dtype == np.int64
    np.testing.assert_array_equal(merged.statistic, whole)
    np.testing.assert_array_equal((parts[0] + parts[1] + parts[2]).statistic, whole)
    np.testing.assert_array_equal(sum(parts).statistic, whole)
    assert len(merged) == len(reports)
    np.testing.assert_array_equal(parts[0].statistic, reports[:123].aggregate().statistic)


def test_merge_refuses_other_mechanisms_and_domains():
    a = privatized(RandomizedResponse(4, 1.0)).aggregate()
    b = privatized(RandomizedResponse(4, 2.0)).aggregate()
    before = a.statistic.copy()
    with pytest.raises(ValueError, match="different mechanisms"):
        a + b
    with pytest.raises(ValueError, match="different mechanisms"):
        AggregatedReports.merge([a, a, b])
    np.testing.assert_array_equal(a.statistic, before)  # nothing applied
    enc = LDPEncoder(categories={"x": list("abcd")}, strategy="randomized_response").fit()
    other = LDPEncoder(categories={"y": list("abcd")}, strategy="randomized_response").fit()
    with pytest.raises(ValueError, match="different domains"):
        enc.simulate_counts(np.ones(4, int)) + other.simulate_counts(np.ones(4, int))
    with pytest.raises(ValueError, match="at least one"):
        AggregatedReports.merge([])
    with pytest.raises(ValueError, match="aggregate\\(\\) first"):
        AggregatedReports.merge([a, privatized(RandomizedResponse(4, 1.0))])


# ---------------------------------------------------------------------- files
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_files_aggregate_exactly_in_small_chunks(name, tmp_path):
    reports = privatized(MECHANISMS[name])
    shard_files(tmp_path, reports, formats=("csv", "parquet", "csv.gz", "pq"))
    whole = reports.mechanism.aggregate(reports.reports)
    result = aggregate_files(tmp_path, chunk_size=37)
    np.testing.assert_array_equal(result.statistic, whole)
    assert result.mechanism == reports.mechanism
    np.testing.assert_array_equal(read_reports(tmp_path).reports, reports.reports)


def test_chunks_are_bounded_and_cover_every_report(tmp_path):
    reports = privatized(MECHANISMS["oue"], n_users=300)
    paths = shard_files(tmp_path, reports, formats=("csv", "parquet"))
    chunks = list(iter_report_chunks(paths, chunk_size=7))
    assert len(chunks) >= 2 * (150 // 7)  # several chunks per file
    assert max(chunk.shape[0] for chunk in chunks) <= 7
    np.testing.assert_array_equal(np.concatenate(chunks), reports.reports)


def test_sources_directory_glob_list_and_given_mechanism(tmp_path):
    mechanism = MECHANISMS["randomized_response"]
    reports = privatized(mechanism)
    paths = shard_files(tmp_path, reports)
    (tmp_path / "_SUCCESS").write_text("")  # Spark bookkeeping files are skipped
    whole = mechanism.aggregate(reports.reports)
    for source in (tmp_path, str(tmp_path / "part-*"), paths):
        np.testing.assert_array_equal(aggregate_files(source, mechanism).statistic, whole)
    # Files from other systems carry no specification (and no checksum): read only on
    # request (allow_unverified=True), with the mechanism given.
    bare = tmp_path / "bare" / "reports.csv"
    bare.parent.mkdir()
    reports_frame(reports).to_csv(bare, index=False)
    with pytest.warns(UnverifiedFileWarning, match=r"reports\.csv: the file carries no checksum"):
        statistic = aggregate_files(bare, mechanism, allow_unverified=True).statistic
    np.testing.assert_array_equal(statistic, whole)
    with pytest.raises(ValueError, match=r"reports\.csv: the file carries no checksum"):
        aggregate_files(bare, mechanism)
    with pytest.warns(UnverifiedFileWarning), \
            pytest.raises(ValueError, match="no mechanism specification"):
        aggregate_files(bare, allow_unverified=True)


def test_progress_bar_on_stderr(tmp_path, capsys):
    reports = privatized(MECHANISMS["randomized_response"])
    shard_files(tmp_path, reports, formats=("parquet", "csv"))
    aggregate_files(tmp_path, chunk_size=50, progress=True)
    err = capsys.readouterr().err
    assert "aggregating [" in err and "100%" in err and "2/2 files" in err
    assert f"{len(reports):,} reports" in err and err.endswith("\n")
    aggregate_files(tmp_path, chunk_size=50)
    assert capsys.readouterr().err == ""


def test_columns_and_frames():
    assert report_columns(MECHANISMS["randomized_response"]) == ["report"]
    assert report_columns(MECHANISMS["olh"]) == ["report_0", "report_1"]
    assert report_columns(MECHANISMS["oue"]) == ["report_0", "report_1", "report_2"]
    reports = privatized(MECHANISMS["olh"], n_users=50)
    frame = reports_frame(reports)
    np.testing.assert_array_equal(frame_to_reports(frame, reports.mechanism), reports.reports)
    # 64-bit seeds survive CSV (unsigned decimal integers).
    assert reports.reports[:, 0].max() > np.iinfo(np.int64).max
    rr = MECHANISMS["randomized_response"]
    with pytest.raises(ValueError, match="column 'report': dtype float64, but reports"):
        frame_to_reports(pd.DataFrame({"report": [1.0, 2.0]}), rr)  # never converted
    with pytest.raises(ValueError, match=r"DataFrame, row 2, column 'report': nan is not an "):
        frame_to_reports(pd.DataFrame({"report": [1.0, None]}), rr)


# ---------------------------------------------------------------------- bad input
def test_wrong_columns_name_the_file(tmp_path):
    mechanism = MECHANISMS["randomized_response"]
    good = shard_files(tmp_path, privatized(mechanism), formats=("csv",))[0]
    bad = tmp_path / "part-9.csv"
    pd.DataFrame({"value": [1, 2]}).to_csv(bad, index=False)
    with pytest.raises(ValueError, match=r"part-9\.csv.*missing \['report'\].*"
                                         r"unexpected \['value'\]"):
        aggregate_files([good, bad], mechanism, allow_unverified=True)
    extra = tmp_path / "extra.parquet"
    frame = reports_frame(privatized(mechanism, 10)).assign(user_id=range(10))
    frame.to_parquet(extra)
    with pytest.raises(ValueError, match=r"extra\.parquet.*unexpected \['user_id'\]"):
        aggregate_files(extra, mechanism, allow_unverified=True)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_values_out_of_range_name_file_row_and_column(fmt, tmp_path):
    mechanism = MECHANISMS["randomized_response"]  # reports in [0, 20), stored as uint8
    frame = reports_frame(privatized(mechanism, 100))
    path = tmp_path / f"reports.{fmt}"
    for value, message in [(20, r"row 43: .*indices in \[0, 20\)"),
                           (-1, r"row 43, column 'report': value -1 is outside"),
                           (300, r"row 43, column 'report': value 300 is outside")]:
        broken = frame.astype(np.int64)
        broken.loc[42, "report"] = value
        if fmt == "csv":
            broken.to_csv(path, index=False)
        else:
            broken.to_parquet(path)
        with pytest.raises(ValueError, match=f"reports.{fmt}, " + message):
            aggregate_files(path, mechanism, chunk_size=16, allow_unverified=True)


def test_non_integers_and_refused_reports_name_the_row(tmp_path):
    mechanism = MECHANISMS["olh"]
    frame = reports_frame(privatized(mechanism, 60)).astype(object)
    frame.loc[30, "report_1"] = "x"
    path = tmp_path / "bad.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(ValueError, match=r"bad\.csv, row 31, column 'report_1': 'x' is not an "
                                         "integer"):
        aggregate_files(path, mechanism, chunk_size=100, allow_unverified=True)
    # subset selection reports must have exactly k bits set: the mechanism's own check.
    subset = MECHANISMS["subset_selection"]
    bits = reports_frame(privatized(subset, 40))
    bits.loc[25, "report_0"] ^= 1
    bits.to_parquet(tmp_path / "bits.parquet")
    with pytest.raises(ValueError, match=r"bits\.parquet, row 26: .*bits set"):
        aggregate_files(tmp_path / "bits.parquet", subset, chunk_size=8, allow_unverified=True)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("report\n1\n2,3\n")
    with pytest.raises(ValueError, match=r"ragged\.csv"):
        aggregate_files(ragged, MECHANISMS["randomized_response"], allow_unverified=True)


def test_specification_of_another_mechanism_or_version_is_refused(tmp_path):
    mechanism = MECHANISMS["randomized_response"]
    reports = privatized(mechanism)
    shard_files(tmp_path, reports, formats=("csv", "parquet"))
    other = RandomizedResponse(20, 2.0)
    with pytest.raises(ValueError, match="holds reports of"):
        aggregate_files(tmp_path, other)
    # A shard of another mechanism among good ones: refused before any data is read.
    write_reports(privatized(other), tmp_path / "part-2.csv")
    with pytest.raises(ValueError, match=r"part-2\.csv holds reports of .*epsilon=2\.0"):
        aggregate_files(tmp_path)
    os.remove(tmp_path / "part-2.csv")
    for change, message in [({"version": 99}, "unsupported specification version 99"),
                            ({"mechanism": "teleport"}, "not a mechanism specification")]:
        spec = dict(mechanism.to_dict(), **change)
        path = tmp_path / "part-3.csv"
        path.write_text(f"# sklearn_ldp mechanism: {json.dumps(spec)}\nreport\n1\n")
        with pytest.raises(ValueError, match=r"part-3\.csv: the file carries no checksum"):
            aggregate_files(tmp_path)
        with pytest.warns(UnverifiedFileWarning), \
                pytest.raises(ValueError, match=r"part-3\.csv: cannot rebuild the mechanism.*"
                                                + message):
            aggregate_files(tmp_path, allow_unverified=True)
    os.remove(tmp_path / "part-3.csv")
    (tmp_path / "notes.txt").write_text("")
    with pytest.raises(ValueError, match=r"notes\.txt: unknown report file type"):
        aggregate_files(tmp_path)
    with pytest.raises(ValueError, match="no report files"):
        aggregate_files(tmp_path / "nothing-*.csv")
    with pytest.raises(ValueError, match="chunk_size"):
        aggregate_files(tmp_path / "part-0.csv", chunk_size=0)


def test_writer_checks_reports_and_removes_incomplete_files(tmp_path):
    mechanism = MECHANISMS["randomized_response"]
    path = tmp_path / "out.parquet"
    with pytest.raises(ValueError, match=r"indices in \[0, 20\)"):
        with ReportWriter(path, mechanism) as writer:
            writer.write(np.arange(10))
            writer.write(np.array([25]))
    assert not path.exists()
    with pytest.raises(ValueError, match="holds reports of"):
        with ReportWriter(tmp_path / "out.csv", mechanism) as writer:
            writer.write(privatized(RandomizedResponse(20, 2.0), 5))
    assert not (tmp_path / "out.csv").exists()
    with pytest.raises(ValueError, match="unknown report file type"):
        ReportWriter(tmp_path / "out.json", mechanism)
    with ReportWriter(tmp_path / "out.csv.gz", mechanism) as writer:
        writer.write(np.arange(3))
    with gzip.open(tmp_path / "out.csv.gz", "rt") as file:
        assert file.readline().startswith("# sklearn_ldp mechanism: {")


def test_parquet_without_pyarrow_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match="pip install pyarrow"):
        write_reports(privatized(MECHANISMS["randomized_response"], 5), tmp_path / "a.parquet")


# ---------------------------------------------------------------------- partial_fit
def test_workload_fit_equals_partial_fits_merged_shards_and_files(tmp_path):
    domain = {"x": list(range(8)), "y": ["a", "b"]}
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.integers(0, 8, 3000), "y": rng.choice(["a", "b"], 3000)})
    encoder = LDPEncoder(categories=domain, strategy="oue", random_state=0,
                         workload=workloads.marginals(domain, k=1)).fit()
    reports = encoder.transform(df)
    one = WorkloadEstimator().fit(reports)
    streamed = WorkloadEstimator()
    for start in range(0, len(reports), 700):
        streamed.partial_fit(reports[start:start + 700])
    shards = [reports[:1000].aggregate(), reports[1000:].aggregate()]
    merged = WorkloadEstimator().fit(AggregatedReports.merge(shards))
    shard_files(tmp_path, reports)
    from_files = WorkloadEstimator(workload=reports.workload).fit(
        aggregate_files(tmp_path, domain=reports.domain))
    for other in (streamed, merged, from_files):
        np.testing.assert_array_equal(other.statistic_, one.statistic_)
        assert other.n_users_ == one.n_users_ == 3000
        pd.testing.assert_series_equal(other.answers_, one.answers_)
        pd.testing.assert_frame_equal(other.expected_error_, one.expected_error_)


def test_range_fit_equals_partial_fits_and_merged_shards():
    encoder = LDPEncoder(categories={"t": list(range(64))}, strategy="hierarchical",
                         random_state=0).fit()
    rng = np.random.default_rng(4)
    reports = encoder.transform(pd.DataFrame({"t": rng.integers(0, 64, 4000)}))
    one = RangeQueryEstimator().fit(reports)
    streamed = RangeQueryEstimator().partial_fit(reports[:1500]).partial_fit(reports[1500:])
    merged = RangeQueryEstimator().fit(reports[:999].aggregate() + reports[999:].aggregate())
    ranges = [[0, 10], [5, 63], [20, 20]]
    for other in (streamed, merged):
        np.testing.assert_array_equal(other.statistic_, one.statistic_)
        np.testing.assert_array_equal(other.cdf_, one.cdf_)
        np.testing.assert_array_equal(other.predict(ranges), one.predict(ranges))
    with pytest.raises(ValueError, match="different mechanism"):
        one.partial_fit(privatized(MECHANISMS["randomized_response"]))
