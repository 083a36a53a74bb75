"""Benchmark of Spark aggregation beside Dask: k-RR reports from Parquet files, one run.

Steps (defaults: N = 10^7 users, d = 1024 cells, eps = 1, 16 Parquet files):

1. ``write``: the Parquet files (privatized and written in chunks) and the reference
   statistic, as in ``bench_scale.py``.
2. ``dask``: a fresh process, a 2-worker ``LocalCluster`` (1 thread each), ``aggregate_dask``
   of ``dask.dataframe.read_parquet`` (the ``dask`` step of ``bench_scale.py``).
3. ``spark``: a fresh process, a ``local[2]`` Spark session (2 executor threads, the same two
   cores), ``aggregate_spark`` of ``spark.read.parquet`` with each method of ``--methods``
   (``auto`` = ``count`` for k-RR: identical reports counted on the JVM; ``partitions``:
   every report through Python in Arrow batches), ``--repeat`` times each in the same session
   (the first run includes the JVM's compilation of the query).

Times exclude start-up (Dask cluster, Spark session and JVM), printed apart. Every result
must equal the reference **bit for bit**. The ratio Spark / Dask is measured in the same run
on the same (shared) machine.

Examples
--------
    PYTHONPATH=. python benchmarks/bench_spark.py                 # 10^7 reports
    PYTHONPATH=. python benchmarks/bench_spark.py --n 100000000 --methods auto
"""

import argparse
import json
import os
import shutil
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
             .config("spark.driver.memory", "2g")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    # Warm the Python workers (their imports) as the Dask step does, outside the timing.
    spark.sparkContext.parallelize(range(2), 2).map(
        lambda _: __import__("sklearn_ldp.deploy.distributed")).collect()
    started = time.perf_counter()
    frame = spark.read.parquet(os.path.join(args.data_dir, "*.parquet"))
    seconds = {}
    for method in args.methods.split(","):
        # The first run includes the JVM's compilation of the query (cold); the second reuses it.
        seconds[method] = []
        for _ in range(args.repeat):
            begin = time.perf_counter()
            result = aggregate_spark(frame, mechanism, method=method)
            seconds[method].append(time.perf_counter() - begin)
        np.save(os.path.join(args.data_dir, bench_scale.STATISTIC_FILE.format(method)),
                result.statistic)
    print(json.dumps({"seconds": seconds, "startup": started - start,
                      "partitions": frame.rdd.getNumPartitions(), "n_reports": len(result)}))
    spark.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    bench_scale.add_data_arguments(parser, 10**7, "spark")
    parser.add_argument("--methods", default="auto,partitions",
                        help="aggregate_spark methods to time, comma-separated")
    parser.add_argument("--repeat", type=int, default=2,
                        help="runs of each method in the same session (first: cold JVM)")
    args = parser.parse_args(argv)
    if args.one == "spark":
        return run_spark(args)
    import dask
    import pyspark

    bench_scale.print_header(args, {"dask": dask.__version__, "pyspark": pyspark.__version__})
    methods = args.methods.split(",")
    try:
        _, size, reference = bench_scale.write_files(args)
        print(f"# written: {size / 2**20:.0f} MB on disk", flush=True)
        on_dask = bench_scale.child(args, "dask", bench_scale.__file__)
        print("# dask done", flush=True)
        on_spark = bench_scale.child(args, "spark", __file__, ["--methods", args.methods,
                                                               "--repeat", str(args.repeat)])
        statistics = {step: np.load(os.path.join(
            args.data_dir, bench_scale.STATISTIC_FILE.format(step)))
            for step in ["dask", *methods]}
    finally:
        shutil.rmtree(args.data_dir)
    equal = {step: "yes" if statistic.tobytes() == reference.tobytes() else "NO"
             for step, statistic in statistics.items()}
    rows = [[f"aggregate_dask, 2 workers ({on_dask['partitions']} partitions)",
             f"{on_dask['n_reports']:,}", f"{on_dask['seconds']:.1f}",
             f"{on_dask['startup']:.1f}", f"{args.n / on_dask['seconds'] / 1e6:.1f}",
             equal["dask"], "1.00"]]
    for method in methods:
        for run, seconds in enumerate(on_spark["seconds"][method], start=1):
            rows.append([f"aggregate_spark(method={method!r}) run {run}, local[2] "
                         f"({on_spark['partitions']} partitions)", f"{on_spark['n_reports']:,}",
                         f"{seconds:.1f}", f"{on_spark['startup']:.1f}" if len(rows) == 1 else "-",
                         f"{args.n / seconds / 1e6:.1f}", equal[method],
                         f"{seconds / on_dask['seconds']:.2f}"])
    print()
    print_table(["step", "reports", "wall s", "start-up s", "M reports/s",
                 "bit-for-bit equal", "/ Dask"], rows)


if __name__ == "__main__":
    main()
