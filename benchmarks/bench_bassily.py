"""Benchmark of Bassily's Gaussian randomizers: privatize, estimate and simulate times.

For ``GaussianMechanism`` (delta = 1e-6) and ``GaussianRejectionMechanism`` on the identity
workload (d = n cells), eps = 1: time to privatize ``--users`` users (reports are real
vectors, ``users x d`` float64, so the time is dominated by the normal draws and grows
linearly with users x d), to aggregate + estimate, and to draw the aggregate exactly with
``simulate_statistic`` (independent of the number of users), plus the squared error of one
simulated estimate over its analytic expectation.

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


if __name__ == "__main__":
    main()
