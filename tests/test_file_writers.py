"""One writer per file, atomic saves, no silent downgrade (issue 26, the files part).

* Two writers of one path (two processes, or two objects of one process): the second is
  refused with FileLockedError naming the path; no accepted report is lost.
* Every save (``LDPReports.save``, ``AggregatedReports.save``, the ledger) is atomic: a
  process killed by SIGKILL at random points of a large overwrite leaves the previous file
  loadable, 20 times out of 20.
* Files and ledgers without a checksum are refused unless ``allow_unverified=True``; the
  hypothesis properties below edit valid files into checksum-less ones (the downgrades an
  editor would try) and check that nothing loads differently without the opt-in.
"""

import gzip
import hashlib
import json
import multiprocessing
import os
import random
import signal
import sys
import time
import warnings

import numpy as np
import pytest
from _fuzzing import FUZZ, outcome
from hypothesis import given
from hypothesis import strategies as st

from sklearn_ldp.deploy import budget
from sklearn_ldp.deploy.budget import PrivacyLedger
from sklearn_ldp.deploy.io import ReportWriter, read_reports, write_reports
from sklearn_ldp.deploy.limits import (
    FileLockedError,
    UnverifiedFileWarning,
    acquire_lock,
    atomic_write,
    lock_path,
    writer_lock,
)
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.reports import AggregatedReports, LDPReports

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

MECHANISM = RandomizedResponse(4, 1.0)
FORMATS = ("csv", "csv.gz", "parquet")


# Other processes are forked from this one (sklearn_ldp already imported: no start-up cost).
FORK = multiprocessing.get_context("fork")


def forked(target, *args):
    process = FORK.Process(target=target, args=args)
    process.start()
    return process


def visible(folder):
    """Names a reader would see in ``folder`` (hidden temporary and lock files excluded)."""
    return sorted(name for name in os.listdir(folder) if not name.startswith("."))


# ---------------------------------------------------------------------- one writer
def _writer(path, value, barrier, messages):
    """Write 10 chunks of 10,000 reports of ``value`` (exit code 3 if refused)."""
    barrier.wait()  # both processes start together
    try:
        with ReportWriter(path, MECHANISM) as writer:
            for _ in range(10):
                writer.write(np.full(10_000, value, dtype=np.uint8))
                time.sleep(0.05)
    except FileLockedError as error:
        messages.put(str(error))
        sys.exit(3)


@pytest.mark.parametrize("fmt", FORMATS)
def test_two_writer_processes_one_is_refused_and_no_report_is_lost(fmt, tmp_path):
    # Before the lock, both exited 0 and the file held 100,000 of the 200,000 reports.
    path = tmp_path / f"reports.{fmt}"
    barrier, messages = FORK.Barrier(2), FORK.Queue()
    processes = [forked(_writer, path, value, barrier, messages) for value in (1, 2)]
    for process in processes:
        process.join(timeout=120)
    codes = [process.exitcode for process in processes]
    assert sorted(codes) == [0, 3], codes
    refused = messages.get(timeout=10)
    assert str(path) in refused and "another writer holds" in refused
    accepted = (1, 2)[codes.index(0)]
    reports = read_reports(path).reports
    # Every report of the writer that was accepted is in the file; nothing of the other.
    assert reports.shape == (100_000,) and set(np.unique(reports).tolist()) == {accepted}
    assert visible(tmp_path) == [path.name]
    assert not os.path.exists(lock_path(path))  # released (and removed) on close


def test_second_writer_in_the_same_process_is_refused_until_close(tmp_path):
    path = tmp_path / "reports.parquet"
    writer = ReportWriter(path, MECHANISM)
    writer.write(np.array([0, 1, 2]))
    for second in (lambda: ReportWriter(path, MECHANISM),
                   lambda: write_reports(LDPReports(np.array([3]), MECHANISM), path),
                   lambda: LDPReports(np.array([3]), MECHANISM).save(path),
                   lambda: LDPReports(np.array([3]), MECHANISM).aggregate().save(path)):
        with pytest.raises(FileLockedError, match=r"reports\.parquet: another writer holds"):
            second()
    writer.close()
    assert read_reports(path).reports.tolist() == [0, 1, 2]
    with ReportWriter(path, MECHANISM) as again:  # free after close
        again.write(np.array([3]))
    assert read_reports(path).reports.tolist() == [3]
    # A writer that fails releases the lock too.
    with pytest.raises(ValueError):
        with ReportWriter(path, MECHANISM) as failing:
            failing.write(np.array([9]))  # not a report of a 4-cell mechanism
    with ReportWriter(path, MECHANISM) as after:
        after.write(np.array([2]))
    assert read_reports(path).reports.tolist() == [2]
    assert visible(tmp_path) == ["reports.parquet"]
    # The lock follows the path, not the spelling: a relative path is the same file.
    with ReportWriter(path, MECHANISM):
        with pytest.raises(FileLockedError):
            ReportWriter(os.path.relpath(path), MECHANISM)


def _holder(path, locked, stop):
    """Hold the lock of ``path`` (as a writer would) until ``stop`` is set or killed."""
    held = acquire_lock(path)
    locked.set()
    stop.wait(60)
    held.release()


def hold_lock(path):
    """A forked process holding the lock of ``path``; returns (process, stop event)."""
    locked, stop = FORK.Event(), FORK.Event()
    process = forked(_holder, path, locked, stop)
    assert locked.wait(30)
    return process, stop


def test_a_writer_of_another_process_blocks_saves_until_it_dies(tmp_path):
    path = tmp_path / "aggregate.npz"
    aggregate = LDPReports(np.array([0, 1, 1]), MECHANISM).aggregate()
    aggregate.save(path)
    before = path.read_bytes()
    holder, _ = hold_lock(path)
    other = LDPReports(np.array([3, 3]), MECHANISM).aggregate()
    with pytest.raises(FileLockedError, match=r"aggregate\.npz: another writer holds"):
        other.save(path)
    assert path.read_bytes() == before  # nothing written
    holder.kill()  # SIGKILL: the OS releases the flock; the stale lock file is reused
    holder.join(timeout=30)
    assert os.path.exists(lock_path(path))
    other.save(path)
    assert AggregatedReports.load(path).statistic.tolist() == other.statistic.tolist()


def test_lock_file_handover_never_admits_two_holders(tmp_path):
    """Many acquire/release rounds of threads racing on one path: at most one holder at a
    time, although each release unlinks the lock file (the inode check of acquire_lock)."""
    import threading

    path = tmp_path / "target.csv"
    inside, worst, errors = [0], [0], []
    guard = threading.Lock()

    def worker():
        for _ in range(200):
            try:
                held = acquire_lock(path, timeout=10.0)
            except FileLockedError as error:  # pragma: no cover - a failure
                errors.append(error)
                return
            with guard:
                inside[0] += 1
                worst[0] = max(worst[0], inside[0])
            time.sleep(0.0002)
            with guard:
                inside[0] -= 1
            held.release()

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and worst[0] == 1


def test_a_forked_copy_of_a_held_lock_neither_releases_nor_removes_it(tmp_path):
    """A process forked while a writer is open (multiprocessing, joblib) holds a copy of the
    lock; releasing that copy must leave the parent's lock in place."""
    path = tmp_path / "reports.csv"
    held = acquire_lock(path)
    child = forked(held.release)
    child.join(timeout=30)
    assert child.exitcode == 0 and os.path.exists(lock_path(path))
    with pytest.raises(FileLockedError):
        acquire_lock(path)
    held.release()
    acquire_lock(path).release()
    assert not os.path.exists(lock_path(path))


# ---------------------------------------------------------------------- ledger lock
def _charger(path, name, barrier):
    ledger = PrivacyLedger.open(path)
    barrier.wait()
    for i in range(30):
        ledger.charge(0.01, description=f"{name} {i}")


def _creator(path, barrier):
    barrier.wait()
    try:
        PrivacyLedger.create(path, total_epsilon=5.0)
    except ValueError:
        sys.exit(3)


def run_all(target, argument_lists):
    """Fork one process per argument list, released together; their exit codes."""
    barrier = FORK.Barrier(len(argument_lists))
    processes = [forked(target, *arguments, barrier) for arguments in argument_lists]
    for process in processes:
        process.join(timeout=120)
    return [process.exitcode for process in processes]


def test_ledger_lock_serializes_processes_and_refuses_a_stuck_holder(tmp_path, monkeypatch):
    path = str(tmp_path / "ledger.json")
    # Four processes create the same ledger at once: exactly one succeeds.
    assert sorted(run_all(_creator, [(path,)] * 4)) == [0, 3, 3, 3]
    # Three processes charge concurrently: every charge is recorded once.
    assert run_all(_charger, [(path, name) for name in "abc"]) == [0, 0, 0]
    ledger = PrivacyLedger.open(path)
    assert [entry["id"] for entry in ledger.entries] == list(range(90))
    assert {entry["description"] for entry in ledger.entries} == {
        f"{name} {i}" for name in "abc" for i in range(30)}
    # A holder that does not let go: the charge is refused after LOCK_SECONDS, naming the
    # file, and records nothing.
    holder, stop = hold_lock(path)
    monkeypatch.setattr(budget, "LOCK_SECONDS", 0.3)
    with pytest.raises(FileLockedError, match=r"ledger\.json: another writer holds this "
                                              r"privacy ledger's lock .* for 0\.3 s"):
        ledger.charge(0.5, description="blocked")
    stop.set()
    holder.join(timeout=30)
    assert holder.exitcode == 0
    assert len(ledger.entries) == 90
    ledger.charge(0.5, description="after")
    assert ledger.entries[-1]["description"] == "after"


# ---------------------------------------------------------------------- atomic saves
def _content(kind, size, seed):
    """A large save: ``size`` one-byte reports, or an aggregate of ``size`` + 1 counts."""
    rng = np.random.default_rng(seed)
    if kind == "reports":
        return LDPReports(rng.integers(0, 64, size).astype(np.uint8), RandomizedResponse(64, 1.0))
    counts = rng.integers(0, 8, size)
    return AggregatedReports(np.append(counts, counts.sum()), RandomizedResponse(size, 1.0))


def _fingerprint(content):
    array = content.reports if isinstance(content, LDPReports) else content.statistic
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


@pytest.mark.parametrize("kind, size", [("reports", 2_000_000), ("aggregate", 2**19)])
def test_save_killed_at_random_points_leaves_the_previous_file_loadable(kind, size,
                                                                         tmp_path):
    """20 overwrites, each by a forked process killed (SIGKILL) at a random time within the
    duration of a save: the file always loads, verified, with the previous content (or the
    new one when the kill came after the rename)."""
    # Before the atomic save, 13 kills in 20 left an unreadable file (save of 4M reports).
    trials = 20
    path = tmp_path / f"{kind}.npz"
    load = LDPReports.load if kind == "reports" else AggregatedReports.load
    first = _content(kind, size, 0)
    first.save(path)
    start = time.perf_counter()
    first.save(path)
    duration = time.perf_counter() - start
    previous, loads, interrupted, rng = _fingerprint(first), 0, 0, random.Random(0)
    for trial in range(1, trials + 1):
        content = _content(kind, size, trial)
        process = forked(content.save, path)
        time.sleep(rng.uniform(0, duration))
        process.kill()
        process.join(timeout=60)
        interrupted += process.exitcode == -signal.SIGKILL
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a verified load, no fallback
            found = _fingerprint(load(path))  # raises if the file is damaged
        loads += 1
        new = _fingerprint(content)
        assert found in (previous, new)
        if process.exitcode == 0:
            assert found == new
        previous = found
        assert visible(tmp_path) == [path.name]  # temporary files are hidden
    assert loads == trials
    assert interrupted >= trials // 4  # most kills landed during a save, not after it


def test_a_failing_save_keeps_the_previous_file_and_releases_the_lock(tmp_path, monkeypatch):
    path = tmp_path / "reports.npz"
    LDPReports(np.array([0, 1]), MECHANISM).save(path)
    before = path.read_bytes()

    def broken(file, **arrays):
        file.write(b"PK\x03\x04 half an archive")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        LDPReports(np.array([3, 3, 3]), MECHANISM).save(path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["reports.npz"]  # no temporary, no lock file
    monkeypatch.undo()
    LDPReports(np.array([3]), MECHANISM).save(path)
    assert LDPReports.load(path).reports.tolist() == [3]


def test_atomic_write_and_ledger_writes_leave_old_or_new(tmp_path, monkeypatch):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.create(path, total_epsilon=1.0)
    ledger.charge(0.25, description="kept")
    before = path.read_bytes()
    # The rename fails: the ledger file is unchanged and the temporary removed.
    monkeypatch.setattr(os, "replace", lambda *a: (_ for _ in ()).throw(OSError("EIO")))
    with pytest.raises(OSError, match="EIO"):
        ledger.charge(0.25, description="lost")
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["ledger.json"]
    with pytest.raises(RuntimeError):
        with atomic_write(tmp_path / "other.bin") as handle:
            handle.write(b"partial")
            raise RuntimeError
    assert sorted(os.listdir(tmp_path)) == ["ledger.json"]
    with writer_lock(path):  # the ledger's own lock: a charge waits, then is refused
        monkeypatch.setattr(budget, "LOCK_SECONDS", 0.05)
        with pytest.raises(FileLockedError, match=r"ledger\.json"):
            ledger.charge(0.1)
    assert len(ledger.entries) == 1


# ---------------------------------------------------------------------- no silent downgrade
def _write_valid_files(folder):
    reports = LDPReports(np.array([0, 3, 2, 2, 1, 0], dtype=np.uint8), MECHANISM)
    paths = {"npz": folder / "reports.npz", "agg": folder / "aggregate.npz",
             "ledger": folder / "ledger.json"}
    reports.save(paths["npz"])
    reports.aggregate().save(paths["agg"])
    for fmt in FORMATS:
        paths[fmt] = folder / f"reports.{fmt}"
        write_reports(reports, paths[fmt])
    ledger = PrivacyLedger.create(paths["ledger"], total_epsilon=2.0)
    for amount in (0.5, 0.25, 0.5):
        ledger.charge(amount, description="survey")
    return paths


def _load(kind, path, allow_unverified):
    if kind == "npz":
        return LDPReports.load(path, allow_unverified=allow_unverified)
    if kind == "agg":
        return AggregatedReports.load(path, allow_unverified=allow_unverified)
    if kind == "ledger":
        return PrivacyLedger.open(path, allow_unverified=allow_unverified)
    return read_reports(path, MECHANISM, allow_unverified=allow_unverified)


def _meaning(kind, loaded):
    """What a loaded file means (what an edit must not change silently)."""
    if kind == "ledger":
        return json.dumps(loaded.to_dict(), sort_keys=True)
    array = loaded.statistic if kind == "agg" else loaded.reports
    return (loaded.mechanism.fingerprint(), np.asarray(array).tobytes())


def _downgrade_npz(path, data):
    with np.load(path, allow_pickle=False) as stored:
        contents = {key: stored[key] for key in stored.files}
    header = json.loads(str(contents["header"]))
    if data.draw(st.booleans()):
        del contents["sha256"]
    header["file_version"] = data.draw(st.sampled_from([1, 2, 3]))
    array = "reports" if "reports" in contents else "statistic"
    if data.draw(st.booleans()) and contents[array].size:  # change the content too
        edited = contents[array].copy()
        edited.reshape(-1)[0] = data.draw(st.integers(0, 3))
        contents[array] = edited
    contents["header"] = np.array(json.dumps(header))
    with open(path, "wb") as file:
        np.savez(file, **contents)


def _downgrade_csv(path, data):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as file:
        lines = file.read().splitlines(keepends=True)
    # Lines: spec, version, columns, rows..., end. Drop any of the sklearn_ldp lines and
    # maybe some rows (what an editor removing reports, or the checksum, would do).
    keep = [True] * len(lines)
    for index in (0, 1, len(lines) - 1):
        keep[index] = data.draw(st.booleans())
    if not any(not flag for flag in keep):
        keep[len(lines) - 1] = False
    for index in range(3, len(lines) - 1):
        if data.draw(st.integers(0, 3)) == 0:
            keep[index] = False
    edited = b"".join(line for line, flag in zip(lines, keep, strict=True) if flag)
    with opener(path, "wb") as file:
        file.write(edited)


def _downgrade_parquet(path, data):
    table = pq.read_table(path)
    schema_metadata = dict(table.schema.metadata or {})
    for key in (b"sklearn_ldp.file_version", b"sklearn_ldp.sha256", b"sklearn_ldp.n_rows"):
        schema_metadata.pop(key, None)
    if data.draw(st.booleans()):
        schema_metadata.pop(b"sklearn_ldp.mechanism", None)
    rows = data.draw(st.integers(0, table.num_rows))
    table = table.slice(0, rows).replace_schema_metadata(schema_metadata)
    pq.write_table(table, path)


def _downgrade_ledger(path, data):
    content = json.loads(path.read_text())
    if data.draw(st.booleans()):
        del content["sha256"]
    content["version"] = data.draw(st.sampled_from([1, 2]))
    if data.draw(st.booleans()) and content["entries"]:  # "forget" spent budget
        del content["entries"][data.draw(st.integers(0, len(content["entries"]) - 1))]
    path.write_text(json.dumps(content))


def _load_or_none(kind, path):
    """``_load`` with the opt-in, under the fuzz time limit, warnings left to the caller
    (``_fuzzing.outcome`` silences them)."""
    from _fuzzing import ACCEPTABLE, time_limit

    with time_limit():
        try:
            return _load(kind, path, True)
        except ACCEPTABLE as error:
            assert str(error), f"{type(error).__name__} without a message"
            return None


DOWNGRADES = {"npz": _downgrade_npz, "agg": _downgrade_npz, "csv": _downgrade_csv,
              "csv.gz": _downgrade_csv, "parquet": _downgrade_parquet,
              "ledger": _downgrade_ledger}


@FUZZ
@given(data=st.data())
def test_fuzz_downgraded_files_are_refused_without_the_opt_in(tmp_path_factory, data):
    """Edits that turn a verified file into a checksum-less one (older version, no checksum
    member or metadata, no end line; rows or ledger entries removed) never load silently:
    refused without ``allow_unverified``, or, if the edit left a verified file, its
    meaning is exactly what was saved. With the opt-in, the outcome is a load or a clear
    error, and a load of an unverified file warns."""
    folder = tmp_path_factory.mktemp("downgrade")
    paths = _write_valid_files(folder)
    kind = data.draw(st.sampled_from(sorted(paths)))
    path = paths[kind]
    original = _meaning(kind, _load(kind, path, False))
    DOWNGRADES[kind](path, data)
    loaded = outcome(_load, kind, path, False)
    if loaded is not None:
        assert _meaning(kind, loaded) == original, kind
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        opted = _load_or_none(kind, path)
    if opted is not None and loaded is None:
        # Loaded only with the opt-in: it was unverified, and the caller was told.
        assert any(issubclass(w.category, UnverifiedFileWarning) for w in caught), kind


@FUZZ
@given(data=st.data(), text=st.one_of(st.binary(max_size=300), st.just(b"")))
def test_fuzz_loaders_with_the_opt_in_end_in_a_load_or_a_clear_error(tmp_path_factory, data,
                                                                     text):
    """Arbitrary bytes (or a valid file with bytes spliced in) under every loader, with and
    without ``allow_unverified``: a load or a ValueError/TypeError, within the time limit."""
    folder = tmp_path_factory.mktemp("bytes")
    paths = _write_valid_files(folder)
    kind = data.draw(st.sampled_from(sorted(paths)))
    path = paths[kind]
    if data.draw(st.booleans()):
        content = bytearray(path.read_bytes())
        position = data.draw(st.integers(0, len(content)))
        content[position:position + data.draw(st.integers(0, 8))] = text[:16]
        path.write_bytes(bytes(content))
    else:
        path.write_bytes(text)
    for allow in (False, True):
        outcome(_load, kind, path, allow)


def test_file_locked_error_is_public_and_is_what_a_second_writer_gets(tmp_path):
    # Users catch it from the package itself (not from the private _limits module).
    import sklearn_ldp
    from sklearn_ldp import FileLockedError as PublicFileLockedError

    assert "FileLockedError" in sklearn_ldp.__all__
    assert PublicFileLockedError is FileLockedError
    assert issubclass(PublicFileLockedError, OSError)
    path = tmp_path / "reports.csv"
    with ReportWriter(path, MECHANISM) as writer:
        writer.write(np.array([0, 1]))
        with pytest.raises(PublicFileLockedError, match=r"reports\.csv: another writer holds"):
            ReportWriter(path, MECHANISM)
    assert read_reports(path).reports.tolist() == [0, 1]
