"""The ``sklearn-ldp`` command line: round trips of every subcommand and its failure modes.

Round trip: ``spec`` -> devices privatize with the dependency-free client -> report files
-> ``aggregate`` -> ``estimate`` gives the answers of the Python API on the same reports.
Failures: a missing, truncated or foreign file exits with status 1, one line on stderr naming
the file, and leaves no output behind.
"""

import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sklearn_ldp import (
    AggregatedReports,
    AttributeHistogramEstimator,
    LDPReports,
    MarginalEstimator,
    MeanEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
)
from sklearn_ldp.cli import main
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.collect import reports_from_client
from sklearn_ldp.deploy.io import write_reports
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.mechanisms._base.specs import load_mechanism
from sklearn_ldp.planning import margin_of_error, users_needed

AGE = ["<30", "30-50", ">50"]
SMOKER = ["no", "yes"]


def _write_config(folder, config, name="config.json"):
    path = folder / name
    path.write_text(json.dumps(config))
    return str(path)


def _collect(spec_path, records, folder, n_files=3, seed=0):
    """What the devices send, written as CSV files by the collector: the LDPReports too."""
    spec = json.loads(open(spec_path).read())
    device = Randomizer(spec["mechanism"], categories=spec["categories"], seed=seed)
    values = [device.privatize(record) for record in records]
    mechanism = load_mechanism(spec["mechanism"])
    os.makedirs(folder, exist_ok=True)
    parts = np.array_split(np.arange(len(values)), n_files)
    for i, rows in enumerate(parts):
        reports = reports_from_client([values[j] for j in rows], mechanism)
        write_reports(reports, os.path.join(folder, f"part-{i}.csv"))
    return reports_from_client(values, mechanism)


def _run(*argv):
    assert main([str(a) for a in argv]) == 0


@pytest.fixture
def categorical(tmp_path):
    """A spec over two categorical columns, 600 users' reports in 3 CSV files, aggregated."""
    config = _write_config(tmp_path, {"columns": {"age": AGE, "smoker": SMOKER},
                                      "epsilon": 2.0, "strategy": "randomized_response",
                                      "n_users": 600})
    spec = tmp_path / "spec.json"
    _run("spec", config, "-o", spec, "-q")
    rng = np.random.default_rng(1)
    records = [{"age": AGE[a], "smoker": SMOKER[s]}
               for a, s in zip(rng.integers(0, 3, 600), rng.integers(0, 2, 600), strict=True)]
    reports = _collect(spec, records, tmp_path / "reports")
    aggregate = tmp_path / "agg.npz"
    _run("aggregate", tmp_path / "reports", "-o", aggregate, "--spec", spec, "-q")
    return tmp_path, spec, reports, aggregate


def test_spec_round_trip_histogram(categorical):
    tmp_path, spec, reports, aggregate = categorical
    loaded = AggregatedReports.load(aggregate)
    assert loaded.statistic.tolist() == reports.aggregate().statistic.tolist()
    assert loaded.domain is not None and list(loaded.domain.columns) == ["age", "smoker"]
    out = tmp_path / "answers.csv"
    _run("estimate", aggregate, "--estimator", "histogram", "-o", out, "-q")
    table = pd.read_csv(out)
    python = WorkloadEstimator(workload="histogram", normalize=True).fit(
        LDPReports(reports.reports, reports.mechanism, loaded.domain))
    np.testing.assert_allclose(table["answer"], python.answers_.to_numpy(), rtol=1e-12)
    assert list(table["query"]) == list(python.answers_.index)
    margins = margin_of_error(loaded, len(loaded), per_query=True)
    np.testing.assert_allclose(table["margin"], margins.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(table["margin"] / table["std_error"], 1.959964, rtol=1e-6)


def test_plan_prints_users_needed(categorical, capsys):
    _, spec, _, _ = categorical
    _run("plan", spec, "--margin", "0.02")
    out = capsys.readouterr().out
    model = AggregatedReports.load(categorical[3])
    assert f": {users_needed(model, 0.02)}\n" in out
    assert "margin of error with 600 users" in out


def test_aggregate_mixes_npz_and_folders(categorical):
    tmp_path, spec, reports, aggregate = categorical
    first = LDPReports(reports.reports[:100], reports.mechanism)
    first.save(tmp_path / "first.npz")
    second = tmp_path / "second.npz"
    LDPReports(reports.reports[100:], reports.mechanism).aggregate().save(second)
    total = tmp_path / "total.npz"
    _run("aggregate", tmp_path / "first.npz", second, "-o", total, "-q")
    assert AggregatedReports.load(total).statistic.tolist() == \
        reports.aggregate().statistic.tolist()


def test_numeric_and_columns_histogram(tmp_path):
    # A record of a numeric and a categorical column: means and histograms, one collection.
    config = _write_config(tmp_path, {"columns": {"income": {"bounds": [0, 100]},
                                                  "smoker": {"categories": SMOKER}},
                                      "epsilon": 2.0})
    spec = tmp_path / "spec.json"
    _run("spec", config, "-o", spec, "-q")
    rng = np.random.default_rng(2)
    reports = _collect(spec, [{"income": float(v), "smoker": SMOKER[int(v) % 2]}
                              for v in rng.uniform(0, 100, 500)], tmp_path / "r")
    aggregate = tmp_path / "agg.npz"
    _run("aggregate", tmp_path / "r", "--spec", spec, "-o", aggregate, "-q")
    out = tmp_path / "means.parquet"
    _run("estimate", aggregate, "--estimator", "numeric", "-o", out, "-q")
    table = pd.read_parquet(out)
    python = MeanEstimator().fit(reports)
    assert table["query"].tolist() == ["income"]
    assert table["answer"].iloc[0] == pytest.approx(python.mean_["income"], rel=1e-12)
    assert table["std_error"].iloc[0] == pytest.approx(
        np.sqrt(python.expected_error_["worst_case"]["income"]), rel=1e-9)
    _run("estimate", aggregate, "--estimator", "histogram", "-o", out, "-q")
    table = pd.read_parquet(out)
    python = AttributeHistogramEstimator().fit(AggregatedReports.load(aggregate))
    assert table["query"].tolist() == ["smoker=no", "smoker=yes"]
    np.testing.assert_allclose(table["answer"], python.answers_.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(table["std_error"] ** 2,
                               python.expected_error_["worst_case"].to_numpy(), rtol=1e-9)


def test_range_and_marginal_round_trips(tmp_path):
    minutes = list(range(16))
    config = _write_config(tmp_path, {"columns": {"minute": minutes}, "epsilon": 2.0,
                                      "strategy": "hierarchical", "workload": "prefix"},
                           "config.json")
    spec = tmp_path / "spec.json"
    _run("spec", config, "-o", spec, "-q")
    rng = np.random.default_rng(3)
    _collect(spec, [{"minute": int(v)} for v in rng.integers(0, 16, 400)],
             tmp_path / "r")
    aggregate = tmp_path / "agg.npz"
    _run("aggregate", tmp_path / "r", "--spec", spec, "-o", aggregate, "-q")
    out = tmp_path / "cdf.csv"
    _run("estimate", aggregate, "--estimator", "range", "-o", out, "-q")
    python = RangeQueryEstimator().fit(AggregatedReports.load(aggregate))
    np.testing.assert_allclose(pd.read_csv(out)["answer"], python.cdf_, rtol=1e-12)
    _run("estimate", aggregate, "--estimator", "range", "--ranges", "2:5", "0:15", "-o", out,
         "-q")
    table = pd.read_csv(out)
    np.testing.assert_allclose(table["answer"], python.predict([[2, 5], [0, 15]]), rtol=1e-12)
    np.testing.assert_allclose(table["std_error"] ** 2,
                               python.predict_error([[2, 5], [0, 15]])["worst_case"],
                               rtol=1e-9)

    config = _write_config(tmp_path, {"columns": {"age": AGE, "smoker": SMOKER},
                                      "epsilon": 2.0, "strategy": "inp_ht"}, "m.json")
    _run("spec", config, "-o", spec, "-q")
    records = [{"age": AGE[i % 3], "smoker": SMOKER[i % 2]} for i in range(300)]
    _collect(spec, records, tmp_path / "m")
    _run("aggregate", tmp_path / "m", "--spec", spec, "-o", aggregate, "-q")
    _run("estimate", aggregate, "--estimator", "marginal", "-o", out, "-q")
    table = pd.read_csv(out)
    python = MarginalEstimator(postprocess="none").fit(AggregatedReports.load(aggregate))
    expected = np.concatenate([t.to_numpy() for t in python.predict([("age",), ("smoker",),
                                                                     ("age", "smoker")])])
    np.testing.assert_allclose(table["answer"], expected, rtol=1e-12)
    assert "age=<30, smoker=no" in set(table["query"])


def test_toml_config(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('epsilon = 1.0\nstrategy = "oue"\n[columns]\nsmoker = ["no", "yes"]\n')
    _run("spec", path, "-o", tmp_path / "s.json", "-q")
    spec = json.loads((tmp_path / "s.json").read_text())
    assert spec["mechanism"]["mechanism"] == "oue"


# ---------------------------------------------------------------------- failures
def _fails(capsys, argv, *fragments, output=None):
    assert main([str(a) for a in argv]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for fragment in fragments:
        assert str(fragment) in err, err
    if output is not None:
        folder = os.path.dirname(output)
        leftovers = [n for n in os.listdir(folder) if n.startswith(f".{os.path.basename(output)}")
                     and n.endswith(".tmp")]
        assert not os.path.exists(output) and not leftovers


def test_missing_files(tmp_path, capsys):
    out = tmp_path / "out.json"
    _fails(capsys, ["spec", tmp_path / "nope.json", "-o", out], "nope.json", "no such file",
           output=out)
    _fails(capsys, ["aggregate", tmp_path / "nope", "-o", tmp_path / "a.npz"], "nope",
           output=tmp_path / "a.npz")
    _fails(capsys, ["estimate", tmp_path / "nope.npz", "--estimator", "histogram", "-o",
                    tmp_path / "o.csv"], "nope.npz", output=tmp_path / "o.csv")
    _fails(capsys, ["plan", tmp_path / "nope.json"], "nope.json")


def test_bad_and_foreign_configs(tmp_path, capsys):
    out = tmp_path / "s.json"
    bad = tmp_path / "bad.json"
    bad.write_text('{"columns": {"a": ["x"]}, "epsilon": ')
    _fails(capsys, ["spec", bad, "-o", out], "bad.json", "not valid JSON", output=out)
    bad.write_text('{"columns": {"a": ["x", "y"]}, "epsilon": 1, "epsilom": 2}')
    _fails(capsys, ["spec", bad, "-o", out], "bad.json", "epsilom", output=out)
    bad.write_text('{"columns": {"a": ["x", "y"]}, "epsilon": 1, "n_users": 0}')
    _fails(capsys, ["spec", bad, "-o", out], "bad.json", "n_users", output=out)
    bad.write_text('{"columns": {"a": ["x", "y"]}, "epsilon": -1}')
    _fails(capsys, ["spec", bad, "-o", out], "bad.json", "epsilon", output=out)
    binary = tmp_path / "blob.json"
    binary.write_bytes(b"\x89PNG\x00\xff")
    _fails(capsys, ["spec", binary, "-o", out], "blob.json", output=out)
    _fails(capsys, ["plan", bad], "bad.json", "not a spec")


def test_truncated_and_foreign_report_files(categorical, capsys):
    tmp_path, spec, _, aggregate = categorical
    part = tmp_path / "reports" / "part-0.csv"
    text = part.read_bytes()
    part.write_bytes(text[: len(text) // 2])
    out = tmp_path / "new.npz"
    _fails(capsys, ["aggregate", tmp_path / "reports", "-o", out], "part-0.csv", output=out)
    part.write_bytes(b"hello,world\n1,2\n")
    _fails(capsys, ["aggregate", part, "-o", out], "part-0.csv", output=out)
    other = tmp_path / "other.txt"
    other.write_text("not reports")
    _fails(capsys, ["aggregate", other, "-o", out], "other.txt", output=out)
    # A truncated aggregate, and an aggregate used as a spec.
    data = open(aggregate, "rb").read()
    broken = tmp_path / "broken.npz"
    broken.write_bytes(data[: len(data) // 2])
    _fails(capsys, ["estimate", broken, "--estimator", "histogram", "-o", tmp_path / "o.csv"],
           "broken.npz", output=tmp_path / "o.csv")
    _fails(capsys, ["plan", aggregate], "agg.npz")
    # Reports of another mechanism than the spec's.
    config = _write_config(tmp_path, {"columns": {"age": AGE, "smoker": SMOKER},
                                      "epsilon": 0.5, "strategy": "randomized_response"},
                           "other.json")
    other_spec = tmp_path / "other_spec.json"
    _run("spec", config, "-o", other_spec, "-q")
    _collect(spec, [{"age": "<30", "smoker": "no"}] * 10, tmp_path / "fresh", n_files=1)
    _fails(capsys, ["aggregate", tmp_path / "fresh", "--spec", other_spec, "-o", out],
           "part-0.csv", output=out)


def test_missing_output_folder_and_mixed_mechanisms(categorical, capsys):
    tmp_path, spec, reports, aggregate = categorical
    _fails(capsys, ["estimate", aggregate, "--estimator", "histogram", "-o",
                    tmp_path / "nowhere" / "o.csv"], "nowhere", "does not exist")
    other = tmp_path / "other.npz"
    LDPReports(np.array([0, 1]), RandomizedResponse(6, 0.25)).aggregate().save(other)
    out = tmp_path / "mixed.npz"
    _fails(capsys, ["aggregate", aggregate, other, "-o", out], "other.npz", output=out)


def test_output_is_never_partial(categorical, capsys):
    tmp_path, _, _, aggregate = categorical
    out = tmp_path / "o.txt"
    _fails(capsys, ["estimate", aggregate, "--estimator", "histogram", "-o", out], ".csv",
           output=out)
    # A failure after the answers: the previous output stays as it was.
    previous = tmp_path / "keep.csv"
    previous.write_text("old\n")
    assert main(["estimate", str(aggregate), "--estimator", "numeric", "-o",
                 str(previous)]) == 1
    assert previous.read_text() == "old\n"
    capsys.readouterr()


def test_usage_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["plan", "x.json", "--margin", "0"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        main(["estimate", "x.npz", "--estimator", "median", "-o", "o.csv"])
    capsys.readouterr()


def test_python_m_sklearn_ldp_subprocess(tmp_path):
    # One interpreter start (each costs seconds): a failing call shows that ``python -m``
    # passes the arguments, returns main's exit status and prints one line, no traceback.
    # What the commands compute is tested in-process above.
    result = subprocess.run([sys.executable, "-m", "sklearn_ldp", "plan", str(tmp_path / "x")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and "x: no such file" in result.stderr


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(allow_nan=True)
    | st.text(max_size=4),
    lambda children: st.lists(children, max_size=3)
    | st.dictionaries(st.text(max_size=4), children, max_size=3),
    max_leaves=8)
_columns = st.dictionaries(
    st.sampled_from(["a", "b", ""]),
    st.lists(st.integers(0, 3) | st.text(max_size=2), max_size=4)
    | st.fixed_dictionaries({"bounds": _json}) | st.fixed_dictionaries({"categories": _json})
    | _json, max_size=2)
_config = st.fixed_dictionaries(
    {"columns": _columns | _json},
    optional={"epsilon": st.floats(-1, 3) | _json,
              "strategy": st.sampled_from(["auto", "oue", "hybrid", "nope"]) | _json,
              "workload": st.sampled_from(["prefix", "cdf"]) | _json,
              "n_users": _json, "branching": _json})


@settings(max_examples=60, deadline=10_000,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(config=_config | _json)
def test_hostile_configs_fail_with_one_line(tmp_path, capsys, config):
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(config))
    out = tmp_path / "hostile_spec.json"
    if out.exists():
        out.unlink()
    status = main(["spec", str(path), "-o", str(out), "-q"])
    err = capsys.readouterr().err
    if status == 0:
        assert out.exists() and err == ""
    else:
        assert status == 1 and err.count("\n") == 1 and "hostile.json" in err, err
        assert not out.exists()


def test_no_progress_bar_without_a_terminal(categorical, capsys):
    tmp_path, _, _, _ = categorical
    assert main(["aggregate", str(tmp_path / "reports"), "-o", str(tmp_path / "n.npz")]) == 0
    err = capsys.readouterr().err
    assert "aggregating [" not in err and err.startswith("wrote ")


def test_progress_bar_on_a_terminal(categorical, capsys, monkeypatch):
    tmp_path, _, _, _ = categorical
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    assert main(["aggregate", str(tmp_path / "reports"), "-o", str(tmp_path / "t.npz")]) == 0
    assert "aggregating [" in capsys.readouterr().err
    assert main(["aggregate", str(tmp_path / "reports"), "-o", str(tmp_path / "t.npz"),
                 "--quiet"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["aggregate", str(tmp_path / "t.npz"), str(tmp_path / "agg.npz"), "-o",
                 str(tmp_path / "u.npz")]) == 0
    assert "2/2 files" in capsys.readouterr().err


def test_heavy_hitter_spec_and_plan(tmp_path, capsys):
    from sklearn_ldp import LDPEncoder

    config = _write_config(tmp_path, {"columns": {"url": "strings"}, "epsilon": 2.0})
    spec = tmp_path / "spec.json"
    _run("spec", config, "-o", spec, "-q")
    written = json.loads(spec.read_text())
    assert written["mechanism"]["mechanism"] == "prefix_heavy_hitters"   # the devices' part
    Randomizer(written["mechanism"]).privatize("example.org")
    _run("plan", spec, "--margin", "0.01")
    encoder = LDPEncoder(categories={"url": "strings"}, epsilon=2.0)
    assert f": {users_needed(encoder, 0.01)}\n" in capsys.readouterr().out


def test_workload_round_trip(tmp_path):
    config = _write_config(tmp_path, {"columns": {"age": AGE, "smoker": SMOKER},
                                      "epsilon": 1.0, "strategy": "oue",
                                      "workload": {"marginals": 1}})
    spec = tmp_path / "spec.json"
    _run("spec", config, "-o", spec, "-q")
    records = [{"age": AGE[i % 3], "smoker": SMOKER[i % 2]} for i in range(300)]
    reports = _collect(spec, records, tmp_path / "r", n_files=2)
    aggregate = tmp_path / "agg.npz"
    _run("aggregate", tmp_path / "r", "--spec", spec, "-o", aggregate, "-q")
    out = tmp_path / "w.csv"
    _run("estimate", aggregate, "--estimator", "workload", "--confidence", "0.9", "-o", out,
         "-q")
    table = pd.read_csv(out)
    loaded = AggregatedReports.load(aggregate)
    python = WorkloadEstimator(normalize=True).fit(
        LDPReports(reports.reports, reports.mechanism, loaded.domain, loaded.workload))
    assert list(table["query"]) == list(python.answers_.index)
    assert len(table) == 5   # the one-way marginals: 3 ages + 2 smoker values
    np.testing.assert_allclose(table["answer"], python.answers_.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(
        table["margin"], margin_of_error(loaded, 300, 0.9, loaded.workload,
                                         per_query=True).to_numpy(), rtol=1e-12)
