"""Benchmark of the range mechanisms in the setting of thesis Tables 5.2 and 5.3.

Setting (digest section 4.7): Cauchy data (location D/2, scale D/20, truncated to [0, D) and
discretized to cells: one multinomial draw of the N users per domain size), N = 2^26 users,
e^eps from e^0.2 to e^1.4, D = 2^8, 2^16, 2^20; methods HH^c_2, HH^c_4, HH^c_16 (hierarchical
histogram with OUE levels and the consistency step) and HaarHRR. Every repetition draws the
mechanism's aggregate from its exact distribution (``simulate_statistic``, "simulation mode")
and estimates the leaves; every range is then a difference of two prefix sums, so the error
of ``[a, b]`` is ``E(b) - E(a - 1)`` with ``E`` the prefix errors (fractions of users).

Workloads, as the thesis: all ranges for D = 2^8 and 2^16 (the mean over all pairs comes in
closed form, ``sum_{i<j} (E_j - E_i)^2 = M sum E^2 - (sum E)^2``); for D = 2^20 the ranges
starting every 2^14 cells (33.5M ranges); Table 5.3: all prefixes.

The tables are labelled "MSE x 1000" but their values behave like root-MSE x 1000 (digest
section 4.8): we print ``1000 sqrt(mean over repetitions of the workload MSE)`` with the spread
over repetitions, the thesis's value, their ratio, and the ranking of the four methods per
row (1 = best) next to the thesis's. Also printed per (method, eps): the wall-clock seconds
of one repetition (simulate + estimate + evaluate; target < 60 s at D = 2^20) and the error
of the median (quantile 0.5 by binary search on the CDF) in cells, as a fraction of D
(target: within 1%). ``--analytic`` adds, for D = 2^8, the exact expected RMSE from the
mechanisms' analytic variance on this data (a check of the simulation). ``--ratio-check``
compares the package's linear normalization (by the expected number of users of each tree
level or Haar coefficient) with the thesis's normalization by the realized number, at
D = 2^8.

Examples
--------
    python benchmarks/bench_ranges.py                          # full tables, 5 repetitions
    python benchmarks/bench_ranges.py --sizes 8 --repeats 3    # D = 2^8 only
    python benchmarks/bench_ranges.py --table prefix --sizes 8,16
    python benchmarks/bench_ranges.py --sizes 8 --analytic --ratio-check
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

from sklearn_ldp._fwht import fwht  # noqa: E402
from sklearn_ldp.mechanisms.ranges.haar import HaarHRR  # noqa: E402
from sklearn_ldp.mechanisms.ranges.tree import HierarchicalHistogram  # noqa: E402
from sklearn_ldp.mechanisms.ranges.tree_structure import tree_consistency  # noqa: E402

EPSILONS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.1, 1.2, 1.4)
METHODS = ("HH2", "HH4", "HH16", "Haar")

# Thesis Table 5.2 (arbitrary ranges) and 5.3 (prefixes), columns HH^c_2, HH^c_4, HH^c_16,
# HaarHRR, per log2 D and epsilon (digest section 4.8).
THESIS = {
    "all": {
        8: [(4.269, 4.037, 4.176, 3.684), (2.024, 2.193, 2.590, 1.831),
            (1.388, 1.341, 1.535, 1.278), (1.002, 0.950, 1.130, 0.987),
            (0.844, 0.744, 0.844, 0.811), (0.722, 0.667, 0.820, 0.748),
            (0.684, 0.658, 0.642, 0.732), (0.571, 0.542, 0.592, 0.601)],
        16: [(6.745, 7.129, 8.692, 6.666), (3.616, 3.424, 4.648, 3.526),
             (2.333, 2.360, 2.793, 2.342), (1.644, 1.728, 2.075, 1.711),
             (1.356, 1.377, 1.642, 1.484), (1.303, 1.270, 1.597, 1.345),
             (1.090, 1.140, 1.433, 1.201), (0.922, 0.995, 1.158, 1.130)],
        20: [(10.043, 10.493, 11.511, 9.285), (5.378, 4.751, 5.617, 5.261),
             (3.605, 3.603, 4.483, 3.693), (3.047, 3.042, 3.352, 3.316),
             (2.522, 2.690, 3.131, 2.915), (2.556, 2.540, 2.729, 2.722),
             (2.619, 2.488, 2.757, 2.640), (2.339, 2.304, 2.652, 2.505)],
    },
    "prefix": {
        8: [(4.306, 2.968, 4.282, 2.857), (1.859, 1.439, 1.828, 1.377),
            (1.366, 0.957, 1.758, 1.031), (0.937, 0.778, 0.896, 0.758),
            (0.802, 0.561, 0.637, 0.613), (0.684, 0.533, 0.666, 0.626),
            (0.658, 0.437, 0.670, 0.568), (0.573, 0.420, 0.478, 0.494)],
        16: [(7.701, 6.172, 7.014, 5.870), (3.266, 3.101, 3.744, 2.880),
             (2.402, 2.176, 2.426, 2.018), (1.663, 1.503, 1.834, 1.511),
             (1.338, 1.220, 1.426, 1.244), (1.202, 1.051, 1.259, 1.120),
             (1.080, 0.978, 1.147, 1.054), (0.973, 0.848, 0.981, 0.973)],
        20: [(8.874, 8.255, 10.462, 7.237), (4.734, 4.395, 5.754, 4.271),
             (3.788, 3.485, 4.055, 3.377), (3.287, 3.094, 3.268, 3.108),
             (3.022, 2.848, 2.826, 2.920), (3.053, 2.756, 2.727, 2.727),
             (3.145, 2.627, 2.914, 2.754), (2.975, 2.659, 2.543, 2.696)],
    },
}

# D = 2^20 (and larger): ranges from every 2^14-th cell (digest section 4.7).
START_STEP = {20: 2**14}


def cauchy_counts(n_cells, n_users, rng):
    """Users per cell: Cauchy(D/2, D/20) truncated to [0, D), one multinomial draw."""
    edges = np.arange(n_cells + 1, dtype=float)
    cdf = np.arctan((edges - n_cells / 2) / (n_cells / 20)) / np.pi
    probabilities = np.diff(cdf)
    return rng.multinomial(n_users, probabilities / probabilities.sum())


def build(method, n_cells, epsilon):
    if method == "Haar":
        return HaarHRR(n_cells, epsilon)
    return HierarchicalHistogram(n_cells, epsilon, branching=int(method[2:]), oracle="oue")


def range_mse(prefix_errors, log2_cells, table):
    """Mean squared error over the workload, from the prefix errors E(0..D-1)."""
    if table == "prefix":
        return float(np.mean(prefix_errors**2))
    errors = np.concatenate([[0.0], prefix_errors])  # E(-1) = 0
    step = START_STEP.get(log2_cells)
    if step is None:  # all ranges: pairs i < j of the D + 1 points
        m = errors.size
        return float((m * np.sum(errors**2) - np.sum(errors) ** 2) / (m * (m - 1) / 2))
    # Ranges [a, b] for a in 0, step, 2 step, ... and every b >= a: E(b) - E(a - 1).
    suffix = np.cumsum(errors[::-1])[::-1]
    suffix_squares = np.cumsum((errors**2)[::-1])[::-1]
    total, count = 0.0, 0
    for start in range(0, errors.size - 1, step):
        base = errors[start]  # E(start - 1)
        ends = errors.size - 1 - start  # b = start .. D - 1 are the points start+1 .. D
        total += suffix_squares[start + 1] - 2 * base * suffix[start + 1] + ends * base**2
        count += ends
    return total / count


def median_cell(estimate, n_users):
    """The median by the thesis's binary search on the (unbiased, possibly non-monotone) CDF."""
    cdf = np.cumsum(estimate) / n_users
    low, high = 0, cdf.size - 1
    while low < high:
        middle = (low + high) // 2
        if cdf[middle] >= 0.5:
            high = middle
        else:
            low = middle + 1
    return low


def analytic_rmse(mechanism, counts, n_users, table):
    """Exact expected RMSE over the workload (small D): sum_u x_u z_u per query."""
    n = mechanism.n_inputs
    if table == "prefix":
        lo, hi = np.zeros(n, dtype=np.int64), np.arange(n)
    else:
        lo, hi = np.triu_indices(n)
    W = ((np.arange(n) >= lo[:, None]) & (np.arange(n) <= hi[:, None])).astype(float)
    variance = mechanism.query_variance(W) @ counts / n_users**2
    return float(np.sqrt(variance.mean()))


def realized_normalization(mechanism, statistic, n_users):
    """The thesis's estimate: levels (or Haar coefficients) normalized by the realized number
    of users who reported them, instead of the expected number."""
    if isinstance(mechanism, HaarHRR):
        cells = np.arange(mechanism.n_inputs)
        leaves = np.full(mechanism.n_inputs, n_users / mechanism.padded_size)
        for level, m in enumerate(mechanism.level_sizes, start=1):
            counts = statistic[mechanism._offsets[level - 1]:mechanism._offsets[level]]
            reported = counts[1::2] + counts[0::2]
            mean_bit = (counts[1::2] - counts[0::2]) / np.maximum(reported, 1)
            detail = n_users * fwht(mechanism.debias * mean_bit) / m  # left minus right
            sign = 1.0 - 2.0 * ((cells >> (level - 1)) & 1)
            leaves += sign * detail[cells >> level] / 2.0**level
        return leaves
    levels = []
    for oracle, segment in zip(mechanism.level_oracles, mechanism._segments(statistic),
                               strict=True):
        levels.append(n_users * oracle.estimate(segment) / max(oracle.n_reports(segment), 1))
    return tree_consistency(levels, n_users, mechanism.branching, mechanism.level_variances)[-1]


def ratio_check(n_users, repeats, seed):
    """Linear (expected-count) vs realized-count normalization, D = 2^8, all ranges."""
    rng = np.random.default_rng(seed)
    counts = cauchy_counts(2**8, n_users, rng)
    rows = []
    for method in METHODS:
        for epsilon in (0.2, 1.1):
            mechanism = build(method, 2**8, epsilon)
            linear, realized = [], []
            for _ in range(repeats):
                statistic = mechanism.simulate_statistic(counts, rng)
                linear.append(range_mse(np.cumsum(mechanism.estimate(statistic) - counts)
                                        / n_users, 8, "all"))
                leaves = realized_normalization(mechanism, statistic, n_users)
                realized.append(range_mse(np.cumsum(leaves - counts) / n_users, 8, "all"))
            rows.append((method, epsilon, f"{1000 * np.sqrt(np.mean(linear)):.3f}",
                         f"{1000 * np.sqrt(np.mean(realized)):.3f}",
                         f"{np.sqrt(np.mean(linear) / np.mean(realized)):.3f}"))
    print("\n# linear (expected-count) vs realized-count normalization of the levels / Haar "
          f"coefficients, D = 2^8, {repeats} repetitions, RMSE x 1000 over all ranges")
    print_table(["method", "eps", "linear", "realized", "ratio"], rows)


def ranks(values):
    order = np.argsort(np.argsort(values, kind="stable"), kind="stable")
    return "".join(str(r + 1) for r in order)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--table", choices=["all", "prefix"], default="all",
                        help="all: Table 5.2 (ranges); prefix: Table 5.3")
    parser.add_argument("--sizes", default="8,16,20", help="log2 of the domain sizes")
    parser.add_argument("--epsilons", default=",".join(str(e) for e in EPSILONS))
    parser.add_argument("--users", type=int, default=2**26)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--analytic", action="store_true",
                        help="also the exact expected RMSE (D <= 2^8 only)")
    parser.add_argument("--ratio-check", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    epsilons = [float(e) for e in args.epsilons.split(",")]
    print(f"# thesis Table {'5.2 (all ranges)' if args.table == 'all' else '5.3 (prefixes)'}; "
          f"N = {args.users}, {args.repeats} repetitions, Cauchy(D/2, D/20) data, seed "
          f"{args.seed}; values are 1000 x RMSE (sd over repetitions of 1000 x RMSE)")
    summary = []
    for log2_cells in sizes:
        n_cells = 2**log2_cells
        rng = np.random.default_rng([args.seed, log2_cells])
        counts = cauchy_counts(n_cells, args.users, rng)
        true_median = int(np.searchsorted(np.cumsum(counts) / args.users, 0.5))
        rows = []
        for epsilon in epsilons:
            ours, seconds, median_errors, spreads, analytic = [], [], [], [], []
            for method in METHODS:
                mechanism = build(method, n_cells, epsilon)
                errors, times, medians = [], [], []
                for _ in range(args.repeats):
                    start = time.perf_counter()
                    statistic = mechanism.simulate_statistic(counts, rng)
                    estimate = mechanism.estimate(statistic)
                    prefix_errors = np.cumsum(estimate - counts) / args.users
                    errors.append(range_mse(prefix_errors, log2_cells, args.table))
                    times.append(time.perf_counter() - start)
                    medians.append(abs(median_cell(estimate, args.users) - true_median))
                ours.append(1000 * np.sqrt(np.mean(errors)))
                spreads.append(1000 * np.std(np.sqrt(errors), ddof=1) if args.repeats > 1
                               else 0.0)
                seconds.append(max(times))
                median_errors.append(max(medians) / n_cells)
                if args.analytic and n_cells <= 2**8:
                    analytic.append(1000 * analytic_rmse(mechanism, counts, args.users,
                                                         args.table))
            row_index = EPSILONS.index(epsilon) if epsilon in EPSILONS else None
            thesis = (THESIS[args.table].get(log2_cells, [None] * len(EPSILONS))[row_index]
                      if row_index is not None else None)
            cells = []
            for i, method in enumerate(METHODS):
                text = f"{ours[i]:.3f}({spreads[i]:.2f})"
                if thesis is not None:
                    text += f" {thesis[i]:.3f} x{ours[i] / thesis[i]:.2f}"
                if analytic:
                    text += f" an{analytic[i]:.3f}"
                cells.append(text)
                if thesis is not None:
                    summary.append((log2_cells, epsilon, method, ours[i] / thesis[i]))
            rows.append([f"2^{log2_cells}", epsilon, *cells, ranks(ours),
                         ranks(thesis) if thesis is not None else "-",
                         f"{max(seconds):.1f}", f"{max(median_errors):.5f}"])
        print()
        print_table(["D", "eps", *(f"{m}: ours(sd) thesis ratio" for m in METHODS),
                     "rank ours", "rank thesis", "max s/rep", "max |median err|/D"], rows)
    if summary:
        ratios = np.array([entry[3] for entry in summary])
        worst = summary[int(np.argmax(np.abs(np.log(ratios))))]
        print(f"\n# ours / thesis: median {np.median(ratios):.3f}, range {ratios.min():.3f} .. "
              f"{ratios.max():.3f}; farthest: D = 2^{worst[0]}, eps = {worst[1]}, {worst[2]} "
              f"(x{worst[3]:.3f}); within 25%: {np.mean(np.abs(ratios - 1) <= 0.25):.0%}")
    if args.ratio_check:
        ratio_check(args.users, args.repeats, args.seed)


if __name__ == "__main__":
    main()
