"""Benchmark of Spark aggregation beside Dask: k-RR reports from Parquet files, one run.

Steps (defaults: N = 10^7 users, d = 1024 cells, eps = 1, 16 Parquet files):

1. ``write``: the Parquet files and the reference statistic of ``bench_scale.py``.
2. ``dask``: a fresh process, a 2-worker ``LocalCluster`` (1 thread each), ``aggregate_dask``
   of ``dask.dataframe.read_parquet`` (the ``dask`` step of ``bench_scale.py``).
3. ``spark``: a fresh process, a ``local[2]`` Spark session (2 executor threads, the same two
   cores), ``aggregate_spark`` of ``spark.read.parquet``, Arrow batches of up to
   ``--batch`` rows; then, in the same session, ``aggregate_spark(..., count_identical=True)``
   (identical reports counted on the JVM before Python sees them).

Both times exclude start-up (Dask cluster, Spark session and JVM), which are printed apart.
Both results must equal the reference **bit for bit**. The ratio Spark / Dask is measured in
the same run on the same (shared) machine.

Examples
--------
    PYTHONPATH=. python benchmarks/bench_spark.py                 # 10^7 reports
    PYTHONPATH=. python benchmarks/bench_spark.py --n 100000000   # 10^8 reports
"""

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_scale  # noqa: E402
from _common import print_table  # noqa: E402


def run_spark(args):
    """In a fresh process: a local[2] Spark session aggregates the files; print a JSON line."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from sklearn_ldp.deploy.distributed import aggregate_spark

    mechanism = bench_scale.mechanism_of(args)
    start = time.perf_counter()
    spark = (SparkSession.builder.master("local[2]").appName("bench_spark")
             .config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "1g")
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", str(args.batch))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    # Warm the Python workers (their imports) as the Dask step does, outside the timing.
    spark.sparkContext.parallelize(range(2), 2).map(
        lambda _: __import__("sklearn_ldp.deploy.distributed")).collect()
    started = time.perf_counter()
    frame = spark.read.parquet(os.path.join(args.data_dir, "*.parquet"))
    result = aggregate_spark(frame, mechanism)
    seconds = time.perf_counter() - started
    counted_start = time.perf_counter()
    counted = aggregate_spark(frame, mechanism, count_identical=True)
    counted_seconds = time.perf_counter() - counted_start
    for name, statistic in (("spark", result.statistic), ("counted", counted.statistic)):
        np.save(os.path.join(args.data_dir, bench_scale.STATISTIC_FILE.format(name)), statistic)
    print(json.dumps({"seconds": seconds, "startup": started - start,
                      "counted_seconds": counted_seconds,
                      "partitions": frame.rdd.getNumPartitions(), "n_reports": len(result)}))
    spark.stop()


def child(args, step):
    """Run one step in a fresh process (``spark`` here, ``dask`` in ``bench_scale.py``)."""
    script = os.path.abspath(__file__ if step == "spark" else bench_scale.__file__)
    command = [sys.executable, script, "--one", step, "--n", str(args.n), "--cells",
               str(args.cells), "--epsilon", str(args.epsilon), "--data-dir", args.data_dir]
    if step == "spark":
        command += ["--batch", str(args.batch)]
    output = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if output.returncode != 0:
        raise SystemExit(f"the {step} step failed (exit code {output.returncode}).")
    return json.loads(output.stdout.strip().splitlines()[-1])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=10**7, help="number of reports")
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=2**20,
                        help="spark.sql.execution.arrow.maxRecordsPerBatch")
    parser.add_argument("--data-dir", default=os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "data", "spark"))
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one step
    args = parser.parse_args(argv)
    if args.one == "spark":
        return run_spark(args)
    import dask
    import pyspark

    import sklearn_ldp

    print(f"# sklearn_ldp {sklearn_ldp.__version__}, numpy {np.__version__}, dask "
          f"{dask.__version__}, pyspark {pyspark.__version__}, python "
          f"{platform.python_version()}, {os.cpu_count()} cores, load average at start "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"# N={args.n:,} k-RR reports, d={args.cells}, eps={args.epsilon}, "
          f"{args.files} Parquet files, Arrow batches of {args.batch:,} rows")
    if os.path.exists(args.data_dir):
        raise SystemExit(f"{args.data_dir} exists; remove it or choose another --data-dir.")
    os.makedirs(args.data_dir)
    try:
        _, size, reference = bench_scale.write_files(args)
        print(f"# written: {size / 2**20:.0f} MB on disk", flush=True)
        results = {step: child(args, step) for step in ("dask", "spark")}
        statistics = {step: np.load(os.path.join(
            args.data_dir, bench_scale.STATISTIC_FILE.format(step)))
            for step in ("dask", "spark", "counted")}
    finally:
        shutil.rmtree(args.data_dir)
    rows = [[f"aggregate_{step}, 2 workers ({result['partitions']} partitions)",
             f"{result['n_reports']:,}", f"{result['seconds']:.1f}",
             f"{result['startup']:.1f}", f"{args.n / result['seconds'] / 1e6:.1f}",
             "yes" if statistics[step].tobytes() == reference.tobytes() else "NO"]
            for step, result in results.items()]
    spark = results["spark"]
    rows.append(["aggregate_spark, count_identical=True", f"{spark['n_reports']:,}",
                 f"{spark['counted_seconds']:.1f}", "-",
                 f"{args.n / spark['counted_seconds'] / 1e6:.1f}",
                 "yes" if statistics["counted"].tobytes() == reference.tobytes() else "NO"])
    print()
    print_table(["step", "reports", "wall s", "start-up s", "M reports/s",
                 "bit-for-bit equal"], rows)
    dask_seconds = results["dask"]["seconds"]
    print(f"\n# Spark / Dask wall time (same run): {spark['seconds'] / dask_seconds:.2f}; "
          f"with count_identical=True: {spark['counted_seconds'] / dask_seconds:.2f}")


if __name__ == "__main__":
    main()
