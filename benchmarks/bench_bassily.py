"""Benchmark of Bassily's Gaussian randomizers: privatize, estimate and simulate times.

For ``GaussianMechanism`` (delta = 1e-6) and ``GaussianRejectionMechanism`` on the identity
workload (d = n cells), eps = 1: time to privatize ``--users`` users (reports are real
vectors, ``users x d`` float64, so the time is dominated by the normal draws and grows
linearly with users x d), to aggregate + estimate, and to draw the aggregate exactly with
``simulate_statistic`` (independent of the number of users), plus the squared error of one
simulated estimate over its analytic expectation.

Both randomizers sample exactly on a public lattice (discrete Gaussian, spec version 2); the
second table is the price of the exact (eps, delta) check: the per-user variance of the exact
``gaussian`` kind over the analytic (continuous) Gaussian's, at eps in {0.5, 1, 2},
delta = 1e-6, on the identity (d = n = cells) and the prefix workload over 64 cells.

Example
-------
    python benchmarks/bench_bassily.py --users 100000 --cells 1024
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402


def main(argv=None):
    from sklearn_ldp.mechanisms import GaussianMechanism, GaussianRejectionMechanism

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    weights = 1.0 / np.arange(1, args.cells + 1) ** 1.1
    types = rng.choice(args.cells, size=args.users, p=weights / weights.sum())
    x = np.bincount(types, minlength=args.cells)
    rows = []
    for mechanism in (GaussianMechanism(args.cells, args.epsilon, delta=1e-6),
                      GaussianRejectionMechanism(args.cells, args.epsilon)):
        start = time.perf_counter()
        reports = mechanism.randomize(types, rng)
        middle = time.perf_counter()
        mechanism.estimate(mechanism.aggregate(reports))
        end = time.perf_counter()
        del reports
        simulate_start = time.perf_counter()
        statistic = mechanism.simulate_statistic(x, rng)
        simulate = time.perf_counter() - simulate_start
        error = np.sum((mechanism.estimate(statistic) - x) ** 2)
        analytic = float(x @ mechanism.per_user_variance(np.eye(args.cells)))
        rows.append([mechanism.kind, f"{middle - start:.2f}", f"{end - middle:.3f}",
                     f"{simulate * 1000:.1f}", f"{error / analytic:.3f}"])
    print(f"# N={args.users}, d=n={args.cells}, eps={args.epsilon}, identity workload")
    print_table(["mechanism", "privatize s", "agg+est s", "simulate ms", "SSE/analytic (1 draw)"],
                rows)
    cost = []
    for name, n, workload in (("identity", args.cells, None),
                              ("prefix", 64, np.tril(np.ones((64, 64))))):
        ratios = [GaussianMechanism(n, eps, delta=1e-6, workload=workload).variance_cost
                  for eps in (0.5, 1.0, 2.0)]
        cost.append([name] + [f"{ratio:.3f}" for ratio in ratios])
    print("# exact / analytic Gaussian per-user variance, delta = 1e-6")
    print_table(["workload", "eps=0.5", "eps=1", "eps=2"], cost)


if __name__ == "__main__":
    main()
