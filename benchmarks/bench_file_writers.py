"""Writers under concurrency and crashes, and what the safety costs (issue 26, files).

Three measurements of the sklearn_ldp found in ``--tree`` (default: this checkout):

* two processes write 100,000 reports each to one path with ``ReportWriter``: their exit
  codes and how many reports of the accepted writers the file holds;
* ``--trials`` overwrites of a saved ``.npz`` of 4,000,000 reports, each by a process killed
  with SIGKILL at a random time within the duration of a save: how often the file loads;
* the time of the writers (best of a few runs): large and small saves, report files, ledger
  charges.

Compare two versions on one machine by pointing ``--tree`` at an export of the older one::

    git archive d9b25a1 sklearn_ldp | tar -x -C /tmp/old
    python benchmarks/bench_file_writers.py --tree /tmp/old
    python benchmarks/bench_file_writers.py

Prints one JSON object.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

WRITER = """
    import sys, time
    import numpy as np
    from sklearn_ldp.deploy.io import ReportWriter
    from sklearn_ldp.mechanisms import RandomizedResponse
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        with ReportWriter(sys.argv[1], RandomizedResponse(4, 1.0)) as writer:
            for _ in range(10):
                writer.write(np.full(10_000, int(sys.argv[2]), dtype=np.uint8))
                time.sleep(0.05)
    except OSError as error:
        print(error, file=sys.stderr)
        sys.exit(3)
"""

SAVER = """
    import sys
    import numpy as np
    from sklearn_ldp import LDPReports
    from sklearn_ldp.mechanisms import RandomizedResponse
    values = np.random.default_rng(int(sys.argv[2])).integers(0, 64, 4_000_000)
    reports = LDPReports(values.astype(np.uint8), RandomizedResponse(64, 1.0))
    print("ready", flush=True)
    reports.save(sys.argv[1])
    print("done", flush=True)
"""

TIMINGS = """
    import json, os, sys, tempfile, time
    import numpy as np
    from sklearn_ldp import LDPReports
    from sklearn_ldp.deploy.budget import PrivacyLedger
    from sklearn_ldp.deploy.io import write_reports
    from sklearn_ldp.mechanisms import RandomizedResponse

    folder = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    reports = LDPReports(rng.integers(0, 64, 4_000_000).astype(np.uint8),
                         RandomizedResponse(64, 1.0))
    aggregate = LDPReports(rng.integers(0, 2**20, 2**21),
                           RandomizedResponse(2**20, 1.0)).aggregate()
    small = reports[:1_000_000]
    tiny = LDPReports(np.array([0, 1]), RandomizedResponse(4, 1.0))
    ledger = PrivacyLedger.create(os.path.join(folder, "ledger.json"), total_epsilon=1e6)

    def best(call, runs):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return round(min(times), 4)

    path = lambda name: os.path.join(folder, name)
    print(json.dumps({
        "LDPReports.save, 4M reports (s)": best(lambda: reports.save(path("r.npz")), 5),
        "AggregatedReports.save, 2^20 cells (s)": best(lambda: aggregate.save(path("a.npz")), 5),
        "write_reports CSV, 1M reports (s)": best(lambda: write_reports(small, path("r.csv")), 3),
        "write_reports Parquet, 1M reports (s)": best(
            lambda: write_reports(small, path("r.parquet")), 3),
        "100 saves of 2 reports (s)": best(
            lambda: [tiny.save(path("t.npz")) for _ in range(100)], 3),
        "100 ledger charges (s)": best(lambda: [ledger.charge(0.001) for _ in range(100)], 3),
    }))
"""


def python(tree, code, *args, **kwargs):
    env = dict(os.environ, PYTHONPATH=tree)
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
                            env=env, text=True, cwd=tempfile.gettempdir(), **kwargs)


def two_writers(tree):
    """Exit codes of two concurrent writers of one path, and the reports the file holds."""
    path = os.path.join(tempfile.mkdtemp(), "reports.csv")
    processes = [python(tree, WRITER, path, value, stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for value in (1, 2)]
    for process in processes:
        assert process.stdout.readline().strip() == "ready"
    for process in processes:
        process.stdin.write("go\n")
        process.stdin.flush()
    codes = [process.wait(timeout=300) for process in processes]
    with open(path) as file:
        rows = sum(1 for line in file if not line.startswith("#")) - 1
    return {"exit codes": codes, "reports accepted": 100_000 * codes.count(0),
            "reports in the file": rows}


def killed_saves(tree, trials, seed):
    """How often a saved file loads after a save that overwrote it was killed."""
    path = os.path.join(tempfile.mkdtemp(), "reports.npz")
    first = python(tree, SAVER, path, 0, stdout=subprocess.PIPE)
    assert first.stdout.readline().strip() == "ready"
    start = time.perf_counter()
    assert first.stdout.readline().strip() == "done"
    duration = time.perf_counter() - start
    first.wait()
    rng, loads = random.Random(seed), 0
    check = ("import sys, warnings; warnings.simplefilter('ignore'); "
             "from sklearn_ldp import LDPReports; LDPReports.load(sys.argv[1])")
    for trial in range(1, trials + 1):
        saver = python(tree, SAVER, path, trial, stdout=subprocess.PIPE)
        assert saver.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0, duration))
        saver.send_signal(signal.SIGKILL)
        saver.wait()
        # allow_unverified does not exist in older versions: load the way each version can.
        loaded = python(tree, check, path, stderr=subprocess.DEVNULL).wait() == 0
        loads += loaded
        if not loaded:  # start the next trial from a good file
            python(tree, SAVER, path, 0, stdout=subprocess.DEVNULL).wait()
    return {"trials": trials, "previous or new file loads": loads,
            "seconds of one save": round(duration, 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", default=os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), help="folder holding the sklearn_ldp to measure")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    timings = json.loads(python(args.tree, TIMINGS, stdout=subprocess.PIPE).communicate()[0])
    result = {"tree": args.tree, "timings": timings, "two writers": two_writers(args.tree),
              "killed saves": killed_saves(args.tree, args.trials, args.seed)}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
