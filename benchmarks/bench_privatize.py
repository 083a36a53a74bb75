"""Benchmark of the client and server sides of a mechanism at scale, and an accuracy check.

For ``N`` users (default 10^6) with Zipf-like types over ``n`` cells (default 256):

* build an optimized strategy once (``build_mechanism("optimized", ...)``, ``m = 4n``) for the
  chosen workload, and report its build time separately;
* for it and for the ``randomized_response``, ``hadamard`` and ``hierarchical_matrix``
  baselines, time ``randomize`` (client side), ``aggregate`` + ``estimate`` (server side) and
  the whole pipeline, best of ``--repeats`` (3), and give reports per second;
* check the analytic error: over ``--mse-reps`` fresh randomizations, the sum of squared
  errors of the estimated counts ``x_hat - x`` against its expectation
  ``sum_u x_u z_u = N sum_u p_u z_u`` with ``z = per_user_variance(I)`` (Histogram workload),
  and print their ratio (should be close to 1).

Timings are wall-clock on a shared 2-core machine and may be noisy.

Example
-------
    python benchmarks/bench_privatize.py --users 1000000 --n 256
"""

import argparse
import os
import platform
import sys
import time

import numpy as np
from _common import print_table  # noqa: E402  (benchmarks/ is on sys.path when run)

import sklearn_ldp
from sklearn_ldp import workloads
from sklearn_ldp.selection import baseline_mechanism, build_mechanism

BASELINE_NAMES = ("randomized_response", "hadamard", "hierarchical_matrix")


def zipf_types(n, n_users, exponent, rng):
    """Types with ``P(u) ~ 1 / (u + 1)^exponent`` (most mass on the first cells)."""
    weights = 1.0 / np.arange(1, n + 1) ** exponent
    p = weights / weights.sum()
    return rng.choice(n, size=n_users, p=p), p


def best_of(function, repeats):
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def fmt(value, spec):
    return "-" if value is None or not np.isfinite(value) else format(value, spec)




def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--workload", choices=("histogram", "prefix"), default="histogram",
                        help="workload the optimized strategy is built for")
    parser.add_argument("--max-iter", type=int, default=100)
    parser.add_argument("--zipf", type=float, default=1.1, help="Zipf exponent of the types")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats (best of)")
    parser.add_argument("--mse-reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    n, N = args.n, args.users
    print(f"# sklearn_ldp {getattr(sklearn_ldp, '__version__', '?')}, numpy {np.__version__}, "
          f"python {platform.python_version()}; wall-clock on a shared 2-core machine (noisy); "
          f"load average at start {' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    print(f"# N={N} users, n={n} cells, Zipf exponent {args.zipf}, epsilon={args.epsilon}, "
          f"timings best of {args.repeats}, MSE over {args.mse_reps} repetitions")
    rng = np.random.default_rng(args.seed)
    types, p = zipf_types(n, N, args.zipf, rng)
    x = np.bincount(types, minlength=n).astype(float)
    print(f"# data: largest cell {x.max():.0f} users, smallest {x.min():.0f}, "
          f"top-10 cells hold {x[:10].sum() / N:.1%}")

    W = (workloads.histogram(n) if args.workload == "histogram" else workloads.prefix(n)).toarray()
    start = time.perf_counter()
    optimized, report = build_mechanism("optimized", (n,), args.epsilon, workload_matrix=W,
                                        max_iter=args.max_iter, random_state=args.seed)
    build_seconds = time.perf_counter() - start
    print(f"# optimized strategy for the {args.workload} workload: build {build_seconds:.2f}s, "
          f"{report['n_iter']} iterations, converged={report['converged']}, "
          f"m={optimized.n_outputs}, worst case on its workload "
          f"{report['candidates']['optimized']:.6g}")
    sys.stdout.flush()

    mechanisms = [("optimized", optimized)]
    for name in BASELINE_NAMES:
        mechanisms.append((name, baseline_mechanism(name, (n,), args.epsilon)))

    identity = np.eye(n)
    headers = ["mechanism", "m", "randomize s", "agg+est s", "total s", "reports/s (rand)",
               "reports/s (total)", "hist worst z", "sum p_u z_u", "N sum p_u z_u", "mean SSE",
               "SSE ratio", "ratio sd", "ratio (x.z)"]
    rows = []
    for name, mechanism in mechanisms:
        timing_rng = np.random.default_rng(args.seed + 1)

        def privatize(mechanism=mechanism, rng=timing_rng):
            return mechanism.randomize(types, rng)

        def server(reports, mechanism=mechanism):
            return mechanism.estimate(mechanism.aggregate(reports))

        t_rand, reports = best_of(privatize, args.repeats)
        t_server, _ = best_of(lambda reports=reports: server(reports), args.repeats)
        t_total, _ = best_of(lambda: server(privatize()), args.repeats)
        z = mechanism.per_user_variance(identity)
        expected = N * float(p @ z)  # E ||x_hat - x||^2 with the exact Zipf probabilities
        expected_data = float(x @ z)  # the same with the realized counts (what is unbiased)
        mse_rng = np.random.default_rng(args.seed + 2)
        sse = []
        for _ in range(args.mse_reps):
            estimate = mechanism.estimate(mechanism.aggregate(mechanism.randomize(types,
                                                                                  mse_rng)))
            sse.append(float(np.sum((estimate - x) ** 2)))
        ratios = np.array(sse) / expected
        rows.append([
            name, mechanism.n_outputs, fmt(t_rand, ".3f"), fmt(t_server, ".4f"),
            fmt(t_total, ".3f"), fmt(N / t_rand, ".3g"), fmt(N / t_total, ".3g"),
            fmt(float(z.max()), ".5g"), fmt(float(p @ z), ".5g"), fmt(expected, ".4g"),
            fmt(float(np.mean(sse)), ".4g"), fmt(float(ratios.mean()), ".3f"),
            fmt(float(ratios.std(ddof=1)) if len(ratios) > 1 else np.nan, ".3f"),
            fmt(float(np.mean(sse)) / expected_data, ".3f"),
        ])
        print(f"# {name} done (N p.z = {expected:.4g}, x.z = {expected_data:.4g})", flush=True)
    print()
    print_table(headers, rows)
    print("# randomize s: client side for all N users; agg+est s: bincount + decode; total: "
          "both (fresh randomization each repeat); reports/s = N / seconds.")
    print("# z = per_user_variance(I) (Histogram workload); SSE = ||x_hat - x||^2 of the estimated "
          "counts; SSE ratio = mean over repetitions of SSE / (N sum_u p_u z_u), ratio sd its "
          "spread across repetitions; ratio (x.z) = mean SSE / sum_u x_u z_u with the realized "
          "counts x. Each ratio should be close to 1.")


if __name__ == "__main__":
    main()
