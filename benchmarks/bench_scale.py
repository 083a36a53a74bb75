"""Benchmark of aggregation at scale: 10^8 k-RR reports from Parquet files, one machine vs Dask.

Steps (defaults: N = 10^8 users, d = 1024 cells, eps = 1, 16 Parquet files):

1. ``write``: privatize N users with k-RR in chunks (Zipf-like data, ``P(cell u) ~ 1 / (u +
   1)^1.1``) and write their reports to Parquet files with ``sklearn_ldp.deploy.io.ReportWriter``.
   The statistic of every chunk is summed on the way: the reference aggregate.
2. ``single machine``: a fresh process runs ``aggregate_files`` on the directory (chunks of
   2^20 reports) and reports its wall time and peak resident memory (``ru_maxrss``; the
   target is <= 4 GB).
3. ``dask``: a fresh process starts a ``LocalCluster`` of 2 workers (1 thread each), reads
   the files with ``dask.dataframe.read_parquet`` and runs ``aggregate_dask``; wall time of
   the aggregation (cluster start-up separate) and the peak memory of the driver and of the
   largest worker.

Both results must equal the reference **bit for bit** (``statistic.tobytes()``). The data go
to ``--data-dir`` (default ``benchmarks/data/scale``, git-ignored) and are deleted at the end
unless ``--keep``. Wall-clock times on a shared 2-core machine: expect noise.

Examples
--------
    python benchmarks/bench_scale.py                 # 10^8 reports, ~200 MB of Parquet
    python benchmarks/bench_scale.py --n 1000000 --files 4
"""

import argparse
import importlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

PRIVATIZE_CHUNK = 2**22
STATISTIC_FILE = "{}.statistic.npy"


def peak_megabytes():
    # ru_maxrss is in kilobytes on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def mechanism_of(args):
    from sklearn_ldp.mechanisms import RandomizedResponse

    return RandomizedResponse(args.cells, args.epsilon)


def write_files(args):
    """Privatize in chunks, write the shards; return (seconds, bytes, reference statistic)."""
    from sklearn_ldp.deploy.io import ReportWriter

    mechanism = mechanism_of(args)
    rng = np.random.default_rng(args.seed)
    weights = 1.0 / np.arange(1, args.cells + 1) ** 1.1
    weights /= weights.sum()
    reference = mechanism.aggregate(np.zeros(0, dtype=np.uint16))
    bounds = np.linspace(0, args.n, args.files + 1).astype(np.int64)
    start = time.perf_counter()
    for shard in range(args.files):
        path = os.path.join(args.data_dir, f"part-{shard:04d}.parquet")
        with ReportWriter(path, mechanism) as writer:
            for first in range(bounds[shard], bounds[shard + 1], PRIVATIZE_CHUNK):
                size = min(PRIVATIZE_CHUNK, bounds[shard + 1] - first)
                reports = mechanism.randomize(rng.choice(args.cells, size=size, p=weights), rng)
                writer.write(reports)
                reference += mechanism.aggregate(reports)
    seconds = time.perf_counter() - start
    size = sum(os.path.getsize(os.path.join(args.data_dir, name))
               for name in os.listdir(args.data_dir) if name.endswith(".parquet"))
    return seconds, size, reference


def run_single(args):
    """In a fresh process: aggregate the files on this machine; print a JSON line."""
    from sklearn_ldp.deploy.io import aggregate_files

    mechanism = mechanism_of(args)
    start = time.perf_counter()
    result = aggregate_files(args.data_dir, mechanism, progress=args.progress)
    seconds = time.perf_counter() - start
    np.save(os.path.join(args.data_dir, STATISTIC_FILE.format("single")), result.statistic)
    print(json.dumps({"seconds": seconds, "peak_mb": peak_megabytes(),
                      "n_reports": len(result)}))


def worker_peak_megabytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_dask(args):
    """In a fresh process: a 2-worker LocalCluster aggregates the files; print a JSON line."""
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    from sklearn_ldp.deploy.distributed import aggregate_dask

    mechanism = mechanism_of(args)
    start = time.perf_counter()
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None)
    client = Client(cluster)
    client.run(importlib.import_module, "sklearn_ldp.deploy.distributed")  # workers' imports
    started = time.perf_counter()
    frame = dd.read_parquet(os.path.join(args.data_dir, "*.parquet"))
    result = aggregate_dask(frame, mechanism)
    seconds = time.perf_counter() - started
    workers = client.run(worker_peak_megabytes)
    np.save(os.path.join(args.data_dir, STATISTIC_FILE.format("dask")), result.statistic)
    print(json.dumps({"seconds": seconds, "startup": started - start,
                      "peak_mb": peak_megabytes(), "worker_peak_mb": max(workers.values()),
                      "partitions": frame.npartitions, "n_reports": len(result)}))
    client.close()
    cluster.close()


def child(args, step, script=None, extra=()):
    """Run ``--one step`` of ``script`` (default: this one) in a fresh process; its JSON line."""
    command = [sys.executable, os.path.abspath(script or __file__), "--one", step, "--n",
               str(args.n), "--cells", str(args.cells), "--epsilon", str(args.epsilon),
               "--data-dir", args.data_dir, *extra]
    if getattr(args, "progress", False):
        command.append("--progress")
    output = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if output.returncode != 0:
        raise SystemExit(f"the {step} step failed (exit code {output.returncode}).")
    return json.loads(output.stdout.strip().splitlines()[-1])


def add_data_arguments(parser, n, folder):
    """The options shared with ``bench_spark.py``: the data set and where it goes."""
    parser.add_argument("--n", type=int, default=n, help="number of reports")
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "data", folder))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one step


def print_header(args, versions):
    """The first lines of a result: versions (``{name: version}``), machine, load, data."""
    import sklearn_ldp

    names = {"sklearn_ldp": sklearn_ldp.__version__, "numpy": np.__version__, **versions,
             "python": platform.python_version()}
    print(f"# {', '.join(f'{name} {version}' for name, version in names.items())}, "
          f"{os.cpu_count()} cores, load average at start "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"# N={args.n:,} k-RR reports, d={args.cells}, eps={args.epsilon}, Zipf(1.1) data, "
          f"{args.files} Parquet files in {args.data_dir}")
    if os.path.exists(args.data_dir):
        raise SystemExit(f"{args.data_dir} exists; remove it or choose another --data-dir.")
    os.makedirs(args.data_dir)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_data_arguments(parser, 10**8, "scale")
    parser.add_argument("--keep", action="store_true", help="keep the Parquet files")
    parser.add_argument("--progress", action="store_true", help="progress bar on stderr")
    args = parser.parse_args(argv)
    if args.one == "single":
        return run_single(args)
    if args.one == "dask":
        return run_dask(args)
    import dask
    import pyarrow

    print_header(args, {"dask": dask.__version__, "pyarrow": pyarrow.__version__})
    try:
        write_seconds, size, reference = write_files(args)
        print(f"# written: {size / 2**20:.0f} MB on disk", flush=True)
        single = child(args, "single")
        print("# single machine done", flush=True)
        on_cluster = child(args, "dask")
        print("# dask done", flush=True)
        statistics = {step: np.load(os.path.join(args.data_dir, STATISTIC_FILE.format(step)))
                      for step in ("single", "dask")}
    finally:
        if not args.keep:
            shutil.rmtree(args.data_dir)
    equal = {step: "yes" if statistic.tobytes() == reference.tobytes() else "NO"
             for step, statistic in statistics.items()}
    rows = [
        ["write (privatize + Parquet)", f"{args.n:,}", f"{write_seconds:.1f}", "-", "-",
         f"{args.n / write_seconds / 1e6:.1f}", "(reference)"],
        ["aggregate_files, 1 process", f"{single['n_reports']:,}", f"{single['seconds']:.1f}",
         f"{single['peak_mb']:.0f}", "-", f"{args.n / single['seconds'] / 1e6:.1f}",
         equal["single"]],
        [f"aggregate_dask, 2 workers ({on_cluster['partitions']} partitions)",
         f"{on_cluster['n_reports']:,}", f"{on_cluster['seconds']:.1f}",
         f"{on_cluster['peak_mb']:.0f}", f"{on_cluster['worker_peak_mb']:.0f}",
         f"{args.n / on_cluster['seconds'] / 1e6:.1f}", equal["dask"]],
    ]
    print()
    print_table(["step", "reports", "wall s", "peak MB", "worker peak MB", "M reports/s",
                 "bit-for-bit equal"], rows)
    print(f"\n# dask cluster start-up and imports on the workers {on_cluster['startup']:.1f} s "
          "(not included); peak MB = "
          "peak resident memory of the process (driver for dask); target <= 4096 MB.")


if __name__ == "__main__":
    main()
