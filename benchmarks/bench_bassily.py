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

``--throughput`` prints instead the time of ``randomize`` for both kinds at 10^5 and 10^6
users (and 10^7 with ``--max-users 10000000``; d = 16 only there, the reports take 1.3 GB),
d = 16 and 64 (identity workloads), against the same kinds at a checkout of the commit before
the exact samplers (float Gaussian noise; ``--before``). Each time is the best of
``--repeats`` calls in a fresh process, the two versions alternating, after a warm-up call
(which builds the discrete Gaussian's table once per process; its time is printed apart);
wall-clock and CPU seconds are both printed (CPU time is less sensitive to other jobs on a
shared machine), and the ratios exact / float of each.

Example
-------
    python benchmarks/bench_bassily.py --users 100000 --cells 1024
    git worktree add --detach /tmp/before a2ef90b~1
    PYTHONPATH=. python benchmarks/bench_bassily.py --throughput --before /tmp/before
"""

import argparse
import json
import os
import subprocess
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
    parser.add_argument("--throughput", action="store_true",
                        help="time randomize against the float version (see --before)")
    parser.add_argument("--before", default=None,
                        help="a checkout of the commit before the exact samplers (a2ef90b~1)")
    parser.add_argument("--max-users", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker is not None:
        print(json.dumps(_time_randomize(**json.loads(args.worker))))
        return
    if args.throughput:
        throughput(args)
        return
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


def _time_randomize(kind, users, cells, epsilon, repeats):
    """Seconds of the warm-up call and the best of ``repeats`` calls of ``randomize``."""
    from sklearn_ldp.mechanisms import GaussianMechanism, GaussianRejectionMechanism

    if kind == "gaussian":
        mechanism = GaussianMechanism(cells, epsilon, delta=1e-6)
    else:
        mechanism = GaussianRejectionMechanism(cells, epsilon)
    rng = np.random.default_rng(0)
    types = rng.integers(0, cells, size=users)
    start = time.perf_counter()
    mechanism.randomize(types[:4096], rng)  # builds what is built once per process
    warm = time.perf_counter() - start
    best = cpu = float("inf")
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        mechanism.randomize(types, rng)
        best = min(best, time.perf_counter() - start)
        cpu = min(cpu, time.process_time() - start_cpu)
    return {"warm": warm, "best": best, "cpu": cpu}


def _run_worker(root, **job):
    """:func:`_time_randomize` in a fresh process importing ``sklearn_ldp`` from ``root``."""
    env = {**os.environ, "PYTHONPATH": root}
    command = [sys.executable, os.path.abspath(__file__), "--worker", json.dumps(job)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def throughput(args):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    rows = []
    sizes = [users for users in (100_000, 1_000_000, 10_000_000) if users <= args.max_users]
    for users in sizes:
        for cells in (16, 64):
            if users * cells > 16 * 10_000_000:
                continue  # the reports alone would exceed 1.3 GB
            for kind in ("gaussian", "gaussian_pure"):
                job = dict(kind=kind, users=users, cells=cells, epsilon=args.epsilon,
                           repeats=args.repeats)
                exact = _run_worker(here, **job)
                row = [kind, users, cells, f"{exact['best']:.2f}", f"{exact['cpu']:.2f}",
                       f"{exact['warm']:.2f}"]
                if args.before:
                    before = _run_worker(os.path.abspath(args.before), **job)
                    row += [f"{before['best']:.2f}", f"{before['cpu']:.2f}",
                            f"{exact['best'] / before['best']:.2f}",
                            f"{exact['cpu'] / before['cpu']:.2f}"]
                rows.append(row)
                print(*row, flush=True, file=sys.stderr)
    print(f"# randomize, identity workload d = n, eps = {args.epsilon}; best of {args.repeats}")
    headers = ["kind", "users", "d", "exact s", "exact cpu s", "warm-up s"]
    if args.before:
        headers += ["float s", "float cpu s", "ratio", "cpu ratio"]
    print_table(headers, rows)


if __name__ == "__main__":
    main()
