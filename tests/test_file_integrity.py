"""Hostile files: checksums, atomic writers, size caps and clear errors from every loader.

Every kind of file the package writes (``.npz`` reports and aggregates, CSV, gzip CSV and
Parquet report files, the privacy ledger) carries a format version and a SHA-256; a changed
byte or a cut is refused, a writer killed mid-file leaves nothing that reads as complete,
declared sizes are capped before anything is allocated, and loaders raise ValueError naming
the file, never the internals' own errors.
"""

import gzip
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp import LDPEncoder, workloads
from sklearn_ldp.deploy.budget import PrivacyLedger, resolve_ledger
from sklearn_ldp.deploy.io import (
    ReportWriter,
    aggregate_files,
    iter_report_chunks,
    read_reports,
    reports_frame,
    write_reports,
)
from sklearn_ldp.deploy.limits import (
    DEFAULT_LIMITS,
    UnverifiedFileWarning,
    check_mechanism_spec_sizes,
    get_limits,
    limits,
    set_limits,
)
from sklearn_ldp.mechanisms import RandomizedResponse, mechanism_from_dict, mechanism_from_json
from sklearn_ldp.mechanisms.oracles.unary import OptimizedUnaryEncoding
from sklearn_ldp.reports import AggregatedReports, LDPReports

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

CHECKSUM = "checksum mismatch: the file was modified or truncated"
REPORT_FORMATS = ("csv", "csv.gz", "parquet")


def privatized(mechanism, n_users=3000, seed=0):
    rng = np.random.default_rng(seed)
    return LDPReports(mechanism.randomize(rng.integers(0, mechanism.n_inputs, n_users), rng),
                      mechanism)


def flip(path, position):
    data = bytearray(open(path, "rb").read())
    data[position] ^= 0x01
    with open(path, "wb") as file:
        file.write(data)


def truncate(path, fraction):
    data = open(path, "rb").read()
    with open(path, "wb") as file:
        file.write(data[:int(len(data) * fraction)])


def parquet_row_groups_end(path):
    """Offset of the footer: bytes before it are the row groups (data and page headers)."""
    data = open(path, "rb").read()
    return len(data) - 8 - int.from_bytes(data[-8:-4], "little")


def saved_files(folder):
    """One file of every kind, with a loader each: ``{kind: (path, load)}``."""
    mechanism = OptimizedUnaryEncoding(20, 1.0)
    reports = privatized(mechanism)
    files = {}
    for fmt in REPORT_FORMATS:
        path = os.path.join(folder, f"reports.{fmt}")
        write_reports(reports, path, chunk_size=700)
        files[fmt] = (path, aggregate_files)
    files["npz-reports"] = (os.path.join(folder, "reports.npz"), LDPReports.load)
    reports.save(files["npz-reports"][0])
    files["npz-aggregate"] = (os.path.join(folder, "aggregate.npz"), AggregatedReports.load)
    reports.aggregate().save(files["npz-aggregate"][0])
    ledger = os.path.join(folder, "ledger.json")
    PrivacyLedger.create(ledger, total_epsilon=5.0).charge(1.0, description="first wave")
    files["ledger"] = (ledger, PrivacyLedger.open)
    return files


KINDS = ("csv", "csv.gz", "parquet", "npz-reports", "npz-aggregate", "ledger")


def flip_position(kind, path):
    """A byte inside the content (for JSON: a letter of a description, so the text stays
    valid JSON and only the checksum can tell)."""
    if kind == "parquet":
        return parquet_row_groups_end(path) // 2
    if kind == "ledger":
        return open(path, "rb").read().index(b"first wave")
    return os.path.getsize(path) // 2


# ---------------------------------------------------------------------- checksums
@pytest.mark.parametrize("kind", KINDS)
def test_flipped_byte_is_refused_naming_the_checksum(kind, tmp_path):
    path, load = saved_files(tmp_path)[kind]
    load(path)  # intact: loads
    flip(path, flip_position(kind, path))
    with pytest.raises(ValueError, match=CHECKSUM) as error:
        load(path)
    assert os.path.basename(path) in str(error.value)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.97])
def test_truncated_file_is_refused(kind, fraction, tmp_path):
    path, load = saved_files(tmp_path)[kind]
    truncate(path, fraction)
    with pytest.raises(ValueError) as error:
        load(path)
    assert os.path.basename(path) in str(error.value)
    if kind in ("csv", "csv.gz"):  # read line by line up to the cut: no end line
        assert CHECKSUM in str(error.value)


def test_every_member_and_field_is_covered(tmp_path):
    """Edits that keep each container valid (zip CRC, JSON, CSV) still fail the SHA-256."""
    files = saved_files(tmp_path)
    # npz: a member rewritten with a valid zip CRC-32 (an edit, not damage).
    path = files["npz-aggregate"][0]
    with np.load(path, allow_pickle=False) as data:
        contents = {key: data[key] for key in data.files}
    contents["statistic"] = contents["statistic"].copy()
    contents["statistic"][0] += 1
    with open(path, "wb") as file:
        np.savez(file, **contents)
    with pytest.raises(ValueError, match=CHECKSUM):
        AggregatedReports.load(path)
    # CSV: a report changed to another valid report, and the spec's epsilon.
    path = files["csv"][0]
    lines = open(path).read().split("\n")
    lines[3] = "1,1,1" if lines[3] != "1,1,1" else "0,0,0"
    open(path, "w").write("\n".join(lines))
    with pytest.raises(ValueError, match=CHECKSUM):
        aggregate_files(path)
    path = files["csv.gz"][0]
    with gzip.open(path, "rt") as file:
        text = file.read()
    with gzip.open(path, "wt") as file:
        file.write(text.replace('"epsilon": 1.0', '"epsilon": 2.0', 1))
    with pytest.raises(ValueError, match=CHECKSUM):
        aggregate_files(path)
    # Ledger: an epsilon edited down (valid JSON, consistent totals).
    path = files["ledger"][0]
    stored = json.loads(open(path).read())
    stored["entries"][0]["epsilon"] = 0.1
    open(path, "w").write(json.dumps(stored))
    with pytest.raises(ValueError, match=CHECKSUM):
        PrivacyLedger.open(path)


def test_verification_happens_before_any_chunk_is_yielded(tmp_path):
    path, _ = saved_files(tmp_path)["csv"]
    truncate(path, 0.9)
    chunks = iter_report_chunks(path, chunk_size=10)
    with pytest.raises(ValueError, match=CHECKSUM):
        next(chunks)


# ---------------------------------------------------------------------- atomic writers
KILLED_WRITER = textwrap.dedent("""
    import os, signal, sys
    import numpy as np
    from sklearn_ldp.deploy.io import ReportWriter
    from sklearn_ldp.mechanisms import RandomizedResponse

    folder, plan = sys.argv[1], sys.argv[2:]
    mechanism = RandomizedResponse(16, 1.0)
    for item in plan:
        name, chunks = item.split(":")
        ready_read, ready_write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: some chunks, on disk, then it waits to be killed
            with ReportWriter(os.path.join(folder, name), mechanism) as writer:
                for _ in range(int(chunks)):
                    writer.write(np.arange(16) % 16)
                    writer.flush()
                os.write(ready_write, b"x")
                signal.pause()
                writer.write(np.arange(16) % 16)
            os._exit(0)
        os.read(ready_read, 1)
        print(f"{name} {pid}", flush=True)  # the test kills it
        _, status = os.waitpid(pid, 0)
        print(f"killed {os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL}",
              flush=True)
""")


def test_writer_killed_by_sigkill_leaves_nothing_that_reads_as_complete(tmp_path):
    plan = [f"part-{trial}.{fmt}:{1 + 2 * trial}"
            for trial in range(2) for fmt in REPORT_FORMATS]
    folder = tmp_path / "shards"
    folder.mkdir()
    server = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(folder), *plan],
                              stdout=subprocess.PIPE, text=True)
    try:
        for _ in plan:
            name, pid = server.stdout.readline().split()
            os.kill(int(pid), signal.SIGKILL)
            assert server.stdout.readline().strip() == "killed True"
    finally:
        server.stdout.close()
        assert server.wait(timeout=120) == 0
    listed = sorted(os.listdir(folder))
    names = [name for name in listed if name.endswith(".tmp")]
    # Every writer left only its hidden temporary file, with some reports in it, and its
    # hidden lock file (the OS released the lock when the writer died).
    assert len(names) == len(plan) and all(name.startswith(".part-") for name in names)
    assert sorted(set(listed) - set(names)) == sorted(
        f".{entry.split(':')[0]}.lock" for entry in plan)
    assert all(os.path.getsize(folder / name) > 0 for name in names)
    for entry in plan:  # a killed writer never blocks the next one
        with ReportWriter(folder / entry.split(":")[0], RandomizedResponse(4, 1.0)) as writer:
            writer.write(np.array([1, 2]))
        os.remove(folder / entry.split(":")[0])
    with pytest.raises(ValueError, match="no report files"):
        aggregate_files(folder)  # hidden temporary files are never picked up
    with pytest.raises(ValueError, match="no report files"):
        aggregate_files(str(folder / "*"))
    # Even renamed to a report name, a partial file never reads as complete.
    for name in names:
        suffix = next(fmt for fmt in REPORT_FORMATS[::-1] if f".{fmt}." in name)
        visible = tmp_path / f"renamed.{suffix}"
        shutil.copy(folder / name, visible)
        with pytest.raises(ValueError, match="checksum mismatch|not a readable Parquet"):
            read_reports(visible)
        os.remove(visible)


@pytest.mark.parametrize("fmt", REPORT_FORMATS)
def test_failed_writer_leaves_the_previous_file_and_no_temporary(fmt, tmp_path):
    mechanism = RandomizedResponse(8, 1.0)
    path = tmp_path / f"out.{fmt}"
    write_reports(LDPReports(np.arange(8), mechanism), path)
    before = open(path, "rb").read()
    with pytest.raises(ValueError, match=r"indices in \[0, 8\)"):
        with ReportWriter(path, mechanism) as writer:
            writer.write(np.arange(8))
            writer.write(np.array([9]))
    assert open(path, "rb").read() == before
    assert sorted(os.listdir(tmp_path)) == [f"out.{fmt}"]  # no temporary left behind
    assert read_reports(path).reports.tolist() == list(range(8))


# ---------------------------------------------------------------------- old formats
def test_files_of_the_previous_layout_are_refused_unless_allowed(tmp_path):
    """No silent downgrade: a file without a checksum is refused naming the file; the
    explicit opt-in (allow_unverified=True, the same keyword everywhere) reads it with a
    warning."""
    mechanism = RandomizedResponse(4, 1.0)
    reports = np.array([0, 3, 2, 2], dtype=np.uint8)
    # .npz file version 2: no "sha256" member.
    header = {"format": "sklearn_ldp", "kind": "LDPReports", "file_version": 2,
              "mechanism": mechanism.to_dict(), "categories": {"x": list("abcd")},
              "workload": {"kind": "histogram", "n": 4, "name": "histogram"}}
    with open(tmp_path / "old.npz", "wb") as file:
        np.savez_compressed(file, reports=reports, header=np.array(json.dumps(header)))
    with pytest.raises(ValueError, match=r"old\.npz: file version 2 carries no checksum"):
        LDPReports.load(tmp_path / "old.npz")
    with pytest.warns(UnverifiedFileWarning, match=r"old\.npz .*file version 2"):
        loaded = LDPReports.load(tmp_path / "old.npz", allow_unverified=True)
    assert loaded.reports.tolist() == [0, 3, 2, 2] and loaded.workload.shape == (4, 4)
    # Report files version 1: a spec, no version line or metadata, no checksum.
    spec = mechanism.to_json()
    (tmp_path / "old.csv").write_text(f"# sklearn_ldp mechanism: {spec}\nreport\n0\n3\n2\n2\n")
    with gzip.open(tmp_path / "old.csv.gz", "wt") as file:
        file.write(f"# sklearn_ldp mechanism: {spec}\nreport\n0\n3\n2\n2\n")
    table = pa.table({"report": reports}).replace_schema_metadata(
        {"sklearn_ldp.mechanism": spec})
    pq.write_table(table, tmp_path / "old.parquet")
    for name in ("old.csv", "old.csv.gz", "old.parquet"):
        for read in (read_reports, aggregate_files, lambda path, **kw: list(
                iter_report_chunks(path, **kw))):
            with pytest.raises(ValueError, match=name.replace(".", r"\.")
                               + ": the file carries no checksum .report file version 1"):
                read(tmp_path / name)
        with pytest.warns(UnverifiedFileWarning, match="report file version 1"):
            assert read_reports(tmp_path / name,
                                allow_unverified=True).reports.tolist() == [0, 3, 2, 2]
    # Files without a spec (from other systems, or a current file stripped of its header and
    # end line): refused likewise, read with a warning on request.
    reports_frame(LDPReports(reports, mechanism)).to_csv(tmp_path / "bare.csv", index=False)
    with pytest.raises(ValueError, match=r"bare\.csv: the file carries no checksum"):
        aggregate_files(tmp_path / "bare.csv", mechanism)
    with pytest.warns(UnverifiedFileWarning, match="no sklearn_ldp header"):
        assert aggregate_files(tmp_path / "bare.csv", mechanism,
                               allow_unverified=True).statistic[-1] == 4
    # Ledger version 1: refused; opened on request, then rewritten with a checksum by the
    # next charge.
    ledger = tmp_path / "ledger.json"
    ledger.write_text(json.dumps({"format": "sklearn_ldp.privacy_ledger", "version": 1,
                                  "total_epsilon": 2.0, "total_delta": 0.0, "groups": [],
                                  "entries": []}))
    with pytest.raises(ValueError, match=r"ledger\.json.*ledger version 1 carries no checksum"):
        PrivacyLedger.open(ledger)
    with pytest.raises(ValueError, match="ledger version 1 carries no checksum"):
        resolve_ledger(str(ledger))  # what the estimators' ledger= parameter does
    with pytest.warns(UnverifiedFileWarning, match="ledger version 1"):
        PrivacyLedger.open(ledger, allow_unverified=True).charge(0.5)
    stored = json.loads(ledger.read_text())
    assert stored["version"] == 2 and len(stored["sha256"]) == 64
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PrivacyLedger.open(ledger).spent().epsilon == 0.5
    # The opt-in is one boolean keyword; anything else is a TypeError.
    for load, path in [(LDPReports.load, tmp_path / "old.npz"),
                       (AggregatedReports.load, tmp_path / "old.npz"),
                       (read_reports, tmp_path / "old.csv"), (PrivacyLedger.open, ledger)]:
        with pytest.raises(TypeError, match="allow_unverified must be True or False"):
            load(path, allow_unverified="yes")


def test_current_version_without_its_checksum_is_refused(tmp_path):
    mechanism = RandomizedResponse(4, 1.0)
    LDPReports(np.array([0, 1]), mechanism).save(tmp_path / "r.npz")
    with np.load(tmp_path / "r.npz", allow_pickle=False) as data:
        contents = {key: data[key] for key in data.files if key != "sha256"}
    with open(tmp_path / "r.npz", "wb") as file:
        np.savez(file, **contents)
    with pytest.raises(ValueError, match=CHECKSUM + r" \(file version 3 without"):
        LDPReports.load(tmp_path / "r.npz")
    path = tmp_path / "ledger.json"
    PrivacyLedger.create(path, total_epsilon=1.0)
    stored = json.loads(path.read_text())
    del stored["sha256"]
    path.write_text(json.dumps(stored))
    with pytest.raises(ValueError, match=CHECKSUM):
        PrivacyLedger.open(path)


# ---------------------------------------------------------------------- size caps
class _Unreachable(Exception):
    """Raised if a constructor runs: the cap must refuse before anything is built."""


@pytest.fixture
def no_constructors(monkeypatch):
    def refuse(*args, **kwargs):
        raise _Unreachable("a constructor ran before the size check")

    for cls in (OptimizedUnaryEncoding, RandomizedResponse):
        monkeypatch.setattr(cls, "__init__", refuse)


HUGE_SPECS = [
    ({"mechanism": "oue", "n_inputs": 10**12}, "n_inputs = 1000000000000 .* max_cells"),
    ({"mechanism": "factorization", "Q": [[0.5] * 2**14] * 2**14},
     r"entries of Q \(16384 x 16384\) .* max_matrix_entries"),
    ({"mechanism": "gaussian", "n_inputs": 2**20, "params": {"delta": 1e-6}},
     "identity workload .* max_matrix_entries"),
    ({"mechanism": "gaussian_pure", "n_inputs": 8, "params": {"workload": [[1.0] * 8] * 10**8}},
     "entries of params.workload .* max_matrix_entries"),
    ({"mechanism": "marg_ps", "n_inputs": 2**24, "params": {"shape": [2] * 24, "max_order": 12}},
     "statistic of every 12-attribute table .* max_matrix_entries"),
    ({"mechanism": "inp_rr", "n_inputs": 2**20, "params": {"shape": [2] * 10**6,
                                                           "max_order": 1}},
     "product of params.shape .* max_cells"),
    ({"mechanism": "olh", "n_inputs": 16, "params": {"n_buckets": 10**15}},
     "params.n_buckets .* max_cells"),
]


@pytest.mark.parametrize("spec, message", HUGE_SPECS,
                         ids=[spec["mechanism"] for spec, _ in HUGE_SPECS])
def test_huge_declared_sizes_are_refused_before_anything_is_built(spec, message,
                                                                  no_constructors):
    spec = {"version": 1, "epsilon": 1.0, **spec}
    with pytest.raises(ValueError, match=message) as error:
        mechanism_from_dict(spec)
    assert "set_limits" in str(error.value)  # says how to raise the cap
    with pytest.raises(ValueError, match=message):
        check_mechanism_spec_sizes(spec)


def test_huge_sizes_in_every_kind_of_file_are_refused_naming_the_file(tmp_path,
                                                                      no_constructors):
    spec = {"version": 1, "mechanism": "oue", "epsilon": 1.0, "n_inputs": 10**12,
            "params": {}}
    (tmp_path / "huge.csv").write_text(f"# sklearn_ldp mechanism: {json.dumps(spec)}\n"
                                       "report_0\n1\n")
    table = pa.table({"report_0": np.array([1], dtype=np.uint8)}).replace_schema_metadata(
        {"sklearn_ldp.mechanism": json.dumps(spec)})
    pq.write_table(table, tmp_path / "huge.parquet")
    header = {"format": "sklearn_ldp", "kind": "LDPReports", "file_version": 2,
              "mechanism": spec, "categories": None, "workload": None}
    with open(tmp_path / "huge.npz", "wb") as file:
        np.savez(file, reports=np.zeros(1, np.uint8), header=np.array(json.dumps(header)))
    for name, load in [("huge.csv", aggregate_files), ("huge.parquet", aggregate_files),
                       ("huge.npz", LDPReports.load)]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnverifiedFileWarning)
            with pytest.raises(ValueError, match=rf"{name}: .*max_cells"):
                load(tmp_path / name, allow_unverified=True)


def _declare_shape(npy, old, new):
    """The .npy bytes with another declared shape, the header length kept (less padding)."""
    grow = len(new) - len(old)
    end = npy.index(b"\n")
    header = npy[:end].replace(old, new)
    assert header.endswith(b" " * grow)
    return header[:len(header) - grow] + npy[end:]


def test_npz_arrays_domains_and_workloads_are_capped(tmp_path):
    mechanism = RandomizedResponse(4, 1.0)
    # A member whose .npy header declares 10^12 entries but holds a few bytes (valid CRC).
    path = tmp_path / "bomb.npz"
    LDPReports(np.array([0, 1]), mechanism).save(path)
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info) for info in archive.infolist()}
    members["reports.npy"] = _declare_shape(members["reports.npy"], b"(2,)",
                                            b"(1000000000000,)")
    with zipfile.ZipFile(path, "w") as archive:
        for member, data in members.items():
            archive.writestr(member, data)
    with pytest.raises(ValueError, match=r"bomb\.npz: .*declares 8000000000000 bytes"):
        LDPReports.load(path)
    # The uncompressed size of the arrays against max_array_bytes.
    big = tmp_path / "big.npz"
    LDPReports(np.zeros(5000, np.uint8), mechanism).save(big)
    with limits(max_array_bytes=1000):
        with pytest.raises(ValueError, match=r"big\.npz: .*max_array_bytes = 1000"):
            LDPReports.load(big)
    LDPReports.load(big)  # the default cap again
    # A domain of 10^30 cells and a workload spec of 10^12 cells, in a crafted header.
    for change, message in [
        (lambda h: h.update(categories={f"c{i}": list(range(10)) for i in range(30)}),
         "cells of the domain .* max_cells"),
        (lambda h: h.update(workload={"kind": "prefix", "n": 10**12, "name": "p"}),
         r"workload spec 'prefix': the cells \(n\) = 1000000000000 .* max_cells"),
        (lambda h: h.update(workload={"kind": "kron", "name": "k", "factors": [
            {"kind": "histogram", "n": 2**20, "name": "h"}] * 3}), "max_cells"),
    ]:
        LDPReports(np.array([0, 1]), mechanism).save(path)
        with np.load(path, allow_pickle=False) as data:
            contents = {key: data[key] for key in data.files if key != "sha256"}
        header = json.loads(str(contents["header"]))
        header["file_version"] = 2
        change(header)
        contents["header"] = np.array(json.dumps(header))
        with open(path, "wb") as file:
            np.savez(file, **contents)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UnverifiedFileWarning)
            with pytest.raises(ValueError, match=message):
                LDPReports.load(path, allow_unverified=True)


def test_report_file_rows_and_lines_are_capped(tmp_path):
    mechanism = RandomizedResponse(4, 1.0)
    reports = LDPReports(np.arange(16) % 4, mechanism)
    for fmt in REPORT_FORMATS:
        write_reports(reports, tmp_path / f"r.{fmt}")
        with limits(max_file_rows=10):
            with pytest.raises(ValueError, match=r"number of rows = 16 .* max_file_rows = 10"):
                aggregate_files(tmp_path / f"r.{fmt}")
        assert len(aggregate_files(tmp_path / f"r.{fmt}")) == 16
    with limits(max_header_bytes=40):  # the spec line is longer
        with pytest.raises(ValueError, match=r"r\.csv: line 1 = \d+ exceeds .*max_header_bytes"):
            aggregate_files(tmp_path / "r.csv")


def test_limits_are_configurable_and_checked():
    assert get_limits() == DEFAULT_LIMITS
    spec = RandomizedResponse(16, 1.0).to_dict()
    with limits(max_cells=8):
        with pytest.raises(ValueError, match="n_inputs = 16 exceeds the limit max_cells = 8"):
            mechanism_from_dict(spec)
    assert mechanism_from_dict(spec).n_inputs == 16
    previous = set_limits(max_cells=2**26)
    try:
        assert get_limits()["max_cells"] == 2**26
    finally:
        set_limits(**previous)
    with pytest.raises(ValueError, match="unknown limits"):
        set_limits(max_cell=3)
    with pytest.raises(ValueError, match="integer >= 1"):
        set_limits(max_cells=0)
    assert get_limits() == DEFAULT_LIMITS


# ---------------------------------------------------------------------- clear errors
def _assert_clear_error(load, path):
    """The loader raises a ValueError or TypeError that names the file, also when the
    checksum-less formats are allowed (so that their parsing is exercised)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnverifiedFileWarning)
        try:
            load(path, allow_unverified=True)
        except (ValueError, TypeError) as exc:
            assert os.path.basename(str(path)) in str(exc), str(exc)
            return
    raise AssertionError(f"{path} loaded")


def test_garbage_never_escapes_as_an_internal_error(tmp_path):
    mechanism = RandomizedResponse(4, 1.0)
    garbage = {
        "empty.npz": b"", "zip.npz": b"PK\x03\x04 garbage", "text.csv": b"\xff\xfe\x00bad",
        "empty.csv": b"", "noise.csv.gz": b"\x1f\x8b\x08\x00 not gzip",
        "cut.csv.gz": gzip.compress(b"# sklearn_ldp mechanism: {}\nreport\n1\n")[:25],
        "noise.parquet": b"PAR1 not parquet PAR1", "empty.parquet": b"",
        "spec.csv": b'# sklearn_ldp mechanism: {"version": 1, "mechanism": "oue"}\nreport\n1\n',
        "deep.csv": b"# sklearn_ldp mechanism: " + b"[" * 100000 + b"\nreport\n1\n",
        "badversion.csv": b"# sklearn_ldp mechanism: " + mechanism.to_json().encode()
                          + b"\n# sklearn_ldp file_version: x\nreport\n1\n",
    }
    for name, data in garbage.items():
        (tmp_path / name).write_bytes(data)
        load = LDPReports.load if name.endswith(".npz") else aggregate_files
        _assert_clear_error(load, tmp_path / name)
    # Headers of the right container with fields of the wrong JSON types.
    good = {"format": "sklearn_ldp", "kind": "LDPReports", "file_version": 2,
            "mechanism": mechanism.to_dict(), "categories": None, "workload": None}
    for number, change in enumerate([
            {"mechanism": []}, {"mechanism": {"version": 1, "mechanism": "oue"}},
            {"mechanism": {**mechanism.to_dict(), "params": 5}}, {"categories": 5},
            {"categories": {"x": 5}}, {"categories": {"x": [{"interval": [1]}] * 4}},
            {"workload": "x"}, {"workload": {"kind": "ranges", "n": 4}},
            {"workload": {"kind": "stack", "blocks": [{"kind": "stack", "blocks": []}]}},
            {"file_version": True}, {"kind": None}]):
        path = tmp_path / f"header-{number}.npz"
        with open(path, "wb") as file:
            np.savez(file, reports=np.zeros(1, np.uint8),
                     header=np.array(json.dumps({**good, **change})))
        _assert_clear_error(LDPReports.load, path)
    with open(tmp_path / "objects.npz", "wb") as file:
        np.savez(file, reports=np.array([object()]), header=np.array(json.dumps(good)))
    _assert_clear_error(LDPReports.load, tmp_path / "objects.npz")
    # Ledgers.
    for name, data in {"binary.json": b"\xff\xfe", "deep.json": b"[" * 100000,
                       "list.json": b"[]", "fields.json": json.dumps(
                           {"format": "sklearn_ldp.privacy_ledger", "version": 1,
                            "total_epsilon": 1.0, "total_delta": 0.0, "groups": 3,
                            "entries": {}}).encode()}.items():
        (tmp_path / name).write_bytes(data)
        _assert_clear_error(PrivacyLedger.open, tmp_path / name)


def test_csv_specs_are_rebuilt_with_the_caps_and_clear_errors():
    with pytest.raises(ValueError, match="has no field 'n_inputs'"):
        mechanism_from_json('{"version": 1, "mechanism": "oue", "epsilon": 1.0}')
    with pytest.raises(ValueError, match="params must be a JSON object"):
        mechanism_from_json('{"version": 1, "mechanism": "oue", "epsilon": 1.0, '
                            '"n_inputs": 4, "params": [1]}')


def test_round_trips_still_work_with_a_domain_and_a_workload(tmp_path):
    domain = {"x": list(range(8)), "y": ["a", "b"]}
    encoder = LDPEncoder(categories=domain, strategy="olh", random_state=0,
                         workload=workloads.marginals(domain, k=1)).fit()
    rng = np.random.default_rng(0)
    reports = encoder.transform(pd.DataFrame({"x": rng.integers(0, 8, 500),
                                              "y": rng.choice(["a", "b"], 500)}))
    reports.save(tmp_path / "r.npz")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = LDPReports.load(tmp_path / "r.npz")
        assert loaded.domain == reports.domain and loaded.workload.shape == \
            reports.workload.shape
        for fmt in REPORT_FORMATS:
            write_reports(reports, tmp_path / f"r.{fmt}", chunk_size=128)
            np.testing.assert_array_equal(read_reports(tmp_path / f"r.{fmt}").reports,
                                          reports.reports)
