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

Examples
--------
    python benchmarks/bench_eigen.py
    python benchmarks/bench_eigen.py --sizes 64,256 --workloads all_range
    python benchmarks/bench_eigen.py --sizes 1024 --speedups none,principal-sqrt --refine 10
"""

import argparse
import math
import os
import platform
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


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,256,1024,4096")
    parser.add_argument("--workloads", default="all_range,marginals")
    parser.add_argument("--speedups", default=",".join(SPEEDUPS))
    parser.add_argument("--full-limit", type=int, default=1024,
                        help="skip speedup=none above this many eigen-queries")
    parser.add_argument("--refine", type=int, default=0, help="L-BFGS refinement steps")
    args = parser.parse_args()
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
