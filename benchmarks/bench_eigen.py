"""Benchmark of Eigen-Design (``sklearn_ldp.optimize.eigen_design``): time and error / bound.

For the all-range and the 2-way-marginal workloads at each domain size ``n`` it runs
``eigen_design`` with each speed-up and prints the wall time of the whole call (eigen-queries,
Program 1, completion and the exact error), the time of the two main stages, the number of
eigen-queries and the ratio of the total squared error to the singular value bound (1 is
optimal; the ratio does not depend on epsilon or delta).

Workloads:

* all-range over ``n`` ordered cells, given by its Gram matrix in closed form
  ``(W^T W)_ij = (min(i, j) + 1)(n - max(i, j))`` (the query matrix has ``n(n+1)/2`` rows:
  too large to write down at ``n = 4096``);
* all 2-way marginals of ``log4(n)`` attributes with 4 categories each (explicit matrix).

Speed-ups: ``none`` (Program 1 over all eigen-queries; skipped above ``--full-limit``
eigen-queries, as it grows like ``k^3``), ``separation`` (groups of ``k^(1/3)``),
``principal-flat`` (the paper: 10 % principal vectors, common tail weight) and
``principal-sqrt`` (ours, the default of ``speedup="auto"`` beyond 256 eigen-queries: the tail
keeps the ``sqrt(lambda)`` profile; 10 % principal vectors, at most 128).

The machine this was written for has 2 cores and other processes may run at the same time:
timings are wall-clock and noisy; the BLAS thread configuration is printed. When other jobs
load the machine, ``OPENBLAS_NUM_THREADS=1`` avoids thread oversubscription (measured:
``eigh`` at n = 1024 took 0.37 s with one thread and 1.6 s with two under load; 0.16 s with
two on an idle machine).

Scale mode (``--scale``): the central model end to end through the public API,
``WorkloadEstimator(strategy="eigen", epsilon=1, delta=1e-6, workload=...).fit(df)`` on a
DataFrame of ``--records`` records over one column of ``n`` categories, for the all-range and
prefix workloads (given as operators: all ranges over 4096 cells are 8.4 million queries).
Each configuration runs in a fresh process, so that its peak memory (``ru_maxrss``) is its
own. Columns: the whole ``fit`` (encoding the records, the Gram, Eigen-Design, the noisy
measurement, least squares, the expected total error and the bound), its Eigen-Design stages
(eigen-queries, Program 1), the per-query variances of every query
(``mechanism_.query_variance_summary``, what ``expected_error_`` and ``predict_error`` use, without
the labels), the answers to every query (``workload @ data_vector_``), the ratio of the total
squared error to the singular value bound and the peak resident memory. The table goes to
``benchmarks/results/bench_eigen_scale.txt`` (``--output``).

Examples
--------
    python benchmarks/bench_eigen.py
    python benchmarks/bench_eigen.py --sizes 64,256 --workloads all_range
    python benchmarks/bench_eigen.py --sizes 1024 --speedups none,principal-sqrt --refine 10
    python benchmarks/bench_eigen.py --scale
    python benchmarks/bench_eigen.py --scale --sizes 1024 --workloads prefix --records 100000
"""

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time

import numpy as np
from _common import print_table  # noqa: E402  (benchmarks/ is on sys.path when run)

from sklearn_ldp import workloads
from sklearn_ldp.optimize.eigen_design import eigen_design

SPEEDUPS = {
    "none": {"speedup": "none"},
    "separation": {"speedup": "separation"},
    "principal-flat": {"speedup": "principal", "n_principal": 0.1, "tail": "flat"},
    "principal-sqrt": {"speedup": "principal", "tail": "sqrt"},  # default: 10 %, at most 128
}


def all_range_gram(n):
    """``W^T W`` of all ``n(n+1)/2`` ranges: cell pair (i, j) shares (min+1)(n-max) ranges."""
    cells = np.arange(n)
    low, high = np.minimum.outer(cells, cells), np.maximum.outer(cells, cells)
    return ((low + 1) * (n - high)).astype(float)


def marginals_workload(n):
    """All 2-way marginals over ``log4(n)`` attributes of 4 categories."""
    d = round(math.log(n, 4))
    if 4**d != n or d < 2:
        raise ValueError(f"2-way marginals need n = 4^d with d >= 2, got {n}.")
    return workloads.marginals({f"a{i}": range(4) for i in range(d)}, k=2).toarray()


def run(workload, n, name, refine, full_limit):
    if workload == "all_range":
        inputs, k = {"gram": all_range_gram(n)}, n
    else:
        W = marginals_workload(n)
        inputs, k = {"workload": W}, np.linalg.matrix_rank(W)
    if name == "none" and k > full_limit:
        return [workload, n, name, k, "skipped", "", "", ""]
    start = time.perf_counter()
    design = eigen_design(**inputs, refine_iter=refine, **SPEEDUPS[name])
    seconds = time.perf_counter() - start
    return [workload, n, name, design.eigenvalues.size, f"{seconds:.2f}",
            f"{design.seconds['eigen']:.2f}", f"{design.seconds['program1']:.2f}",
            f"{design.ratio:.4f}"]


SCALE_SIZES = "256,512,1024,2048,4096"
SCALE_WORKLOADS = "all_range,prefix"
SCALE_OUTPUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                            "bench_eigen_scale.txt")


def run_scale_one(workload, n, records):
    """One configuration of the scale mode, in this process; prints a JSON line."""
    import pandas as pd

    from sklearn_ldp import WorkloadEstimator

    categories = {"t": list(range(n))}
    df = pd.DataFrame({"t": np.random.default_rng(0).integers(0, n, records)})
    W = getattr(workloads, workload)(categories)
    start = time.perf_counter()
    est = WorkloadEstimator(strategy="eigen", epsilon=1.0, delta=1e-6, workload=W,
                            categories=categories, random_state=0).fit(df)
    fit = time.perf_counter() - start
    start = time.perf_counter()
    variance, _ = est.mechanism_.query_variance_summary(W)
    variances = time.perf_counter() - start
    start = time.perf_counter()
    answers = W @ est.data_vector_
    answering = time.perf_counter() - start
    total = est.expected_total_error_["worst_case"]
    assert abs(variance.sum() / total - 1) < 1e-8 and np.all(np.isfinite(answers))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux
    print(json.dumps({
        "workload": workload, "n": n, "queries": W.n_queries, "records": records,
        "fit": fit, "eigen": est.design_.seconds["eigen"],
        "program1": est.design_.seconds["program1"], "variances": variances,
        "answers": answering, "ratio": total / est.lower_bound_, "peak_mib": peak}))


def run_scale(args):
    threads = {key: os.environ.get(key) for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    header = [f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} "
              f"cores, BLAS threads {threads}, load average {os.getloadavg()[0]:.2f} at start",
              f"WorkloadEstimator(strategy='eigen', epsilon=1, delta=1e-6).fit(df), "
              f"{args.records} records; one process per row"]
    print("\n".join(header), flush=True)
    rows = []
    for workload in args.workloads.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            done = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--scale-one", workload, str(n),
                 "--records", str(args.records)], capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(done.stderr, file=sys.stderr)
                rows.append([workload, n, "failed", "", "", "", "", "", "", ""])
                continue
            r = json.loads(done.stdout.strip().splitlines()[-1])
            rows.append([workload, n, r["queries"], f"{r['fit']:.2f}", f"{r['eigen']:.2f}",
                         f"{r['program1']:.2f}", f"{r['variances']:.2f}",
                         f"{r['answers']:.2f}", f"{r['ratio']:.4f}", f"{r['peak_mib']:.0f}"])
            print("  ".join(str(c) for c in rows[-1]), flush=True)
    headers = ["workload", "n", "queries", "fit s", "eigen s", "program1 s", "variances s",
               "answers s", "error/bound", "peak MiB"]
    print()
    print_table(headers, rows)
    if args.output:
        widths = [max(len(str(h)), *(len(str(r[i])) for r in rows))
                  for i, h in enumerate(headers)]
        line = "  ".join(str(h).rjust(w) for h, w in zip(headers, widths, strict=True))
        with open(args.output, "w") as f:
            f.write("\n".join(header) + "\n\n" + line + "\n" + "-" * len(line) + "\n")
            for row in rows:
                f.write("  ".join(str(c).rjust(w) for c, w in zip(row, widths, strict=True))
                        + "\n")
        print(f"written to {args.output}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,256,1024,4096")
    parser.add_argument("--workloads", default="all_range,marginals")
    parser.add_argument("--speedups", default=",".join(SPEEDUPS))
    parser.add_argument("--full-limit", type=int, default=1024,
                        help="skip speedup=none above this many eigen-queries")
    parser.add_argument("--refine", type=int, default=0, help="L-BFGS refinement steps")
    parser.add_argument("--scale", action="store_true",
                        help="time WorkloadEstimator end to end (sizes default "
                             f"{SCALE_SIZES}, workloads {SCALE_WORKLOADS})")
    parser.add_argument("--records", type=int, default=10**6, help="records (scale mode)")
    parser.add_argument("--output", default=SCALE_OUTPUT,
                        help="file of the scale table ('' for none)")
    parser.add_argument("--scale-one", nargs=2, metavar=("WORKLOAD", "N"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.scale_one:
        run_scale_one(args.scale_one[0], int(args.scale_one[1]), args.records)
        return
    if args.scale:
        if args.sizes == parser.get_default("sizes"):
            args.sizes = SCALE_SIZES
        if args.workloads == parser.get_default("workloads"):
            args.workloads = SCALE_WORKLOADS
        run_scale(args)
        return
    threads = {key: os.environ.get(key) for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    print(f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores,"
          f" BLAS threads {threads}")
    rows = []
    for workload in args.workloads.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            for name in args.speedups.split(","):
                rows.append(run(workload, n, name, args.refine, args.full_limit))
                print("  ".join(str(c) for c in rows[-1]), flush=True)
    print()
    print_table(["workload", "n", "speedup", "eigen-queries", "seconds", "eigen s",
                 "program1 s", "error/bound"], rows)


if __name__ == "__main__":
    main()
