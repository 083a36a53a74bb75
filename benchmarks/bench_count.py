"""Benchmark of the count-mechanism LPs (dissertation chapter 6): solve time and optimality.

Part 1, solve time vs group size. For each group size ``n`` and each property set (every
single property, the combinations the thesis's decision logic needs, all seven), the L0 LP
with a uniform prior is solved by each solver (best of ``--repeats``):

* ``highs``: scipy's HiGHS, interior point + crossover, on the LP restricted to symmetric
  mechanisms (free by Theorem 8);
* ``cvxpy``: the cvxpy formulation solved by cvxpy's default LP solver (Clarabel);
* ``auto``: what ``solve_count_lp`` uses by default (HiGHS for n <= 30, cvxpy above);
* ``design``: ``design_count_mechanism(mechanism="auto")``, i.e. what ``CountMechanism.fit``
  does (a closed form where the thesis proves one optimal, else the LP).

The target is n <= 100 in <= 2 s for any property set. The last table gives, per solver and
group size, the worst time over the property sets.

Part 2, closed forms vs LP optima: for several n and alpha, the gap between the objective of
the LP and of GM (no property), EM (F; all seven properties), RR (n = 1) and GRR (the square
LDP LP of §6.8); all should be below 1e-6.

Timings are wall-clock on a shared 2-core machine and may be noisy.

Example
-------
    python benchmarks/bench_count.py                      # sizes 5..100, about 2-3 minutes
    python benchmarks/bench_count.py --sizes 10 50 --repeats 1
"""

import argparse
import math
import platform
import time
from functools import partial

import numpy as np
from _common import print_table  # noqa: E402  (benchmarks/ is on sys.path when run)

import sklearn_ldp
from sklearn_ldp.mechanisms.central.count import (
    PROPERTIES,
    expected_loss,
    explicit_fair_mechanism,
    geometric_mechanism,
    randomized_response_count,
)
from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
from sklearn_ldp.selection import design_count_mechanism, solve_count_lp, solve_ldp_lp

PROPERTY_SETS = [()] + [(name,) for name in PROPERTIES] + [
    ("RH", "CH"), ("WH", "CM"), ("RM", "CM", "WH"),
    tuple(name for name in PROPERTIES if name != "F"), PROPERTIES,
]


def best_of(function, repeats):
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - start)
    return min(times), result


def label(properties):
    return "+".join(properties) if properties else "(none)"


def timing(sizes, epsilon, repeats, solvers):
    rows, worst = [], {}
    for n in sizes:
        for properties in PROPERTY_SETS:
            row = [n, label(properties)]
            objectives = []
            for solver in solvers:
                if solver == "design":
                    seconds, design = best_of(
                        partial(design_count_mechanism, n, epsilon, properties=properties),
                        repeats)
                    row += [f"{seconds:.3f}", design.mechanism]
                    objectives.append(design.objective)
                else:
                    seconds, result = best_of(
                        partial(solve_count_lp, n, epsilon, properties=properties,
                                solver=solver), repeats)
                    row.append(f"{seconds:.3f}")
                    objectives.append(result.objective)
                worst[(solver, n)] = max(worst.get((solver, n), 0.0), seconds)
            row.append(f"{max(objectives) - min(objectives):.1e}")
            rows.append(row)
    headers = ["n", "properties"]
    for solver in solvers:
        headers += ["design s", "chosen"] if solver == "design" else [f"{solver} s"]
    headers.append("objective spread")
    print_table(headers, rows)
    print()
    print("worst time over the property sets (seconds):")
    print_table(["n"] + list(solvers),
                [[n] + [f"{worst[(s, n)]:.3f}" for s in solvers] for n in sizes])


def gaps(solver):
    rows = []
    for n in (2, 5, 10, 20, 40):
        for alpha in (0.3, 0.62, 0.9, 0.99):
            epsilon = -math.log(alpha)
            gm = expected_loss(geometric_mechanism(n, epsilon))
            em = expected_loss(explicit_fair_mechanism(n, epsilon))
            lp = solve_count_lp(n, epsilon, solver=solver).objective
            lp_f = solve_count_lp(n, epsilon, properties=("F",), solver=solver).objective
            lp_all = solve_count_lp(n, epsilon, properties=PROPERTIES, solver=solver).objective
            rows.append([n, alpha, f"{abs(lp - gm):.1e}", f"{abs(lp_f - em):.1e}",
                         f"{abs(lp_all - em):.1e}"])
    print_table(["n", "alpha", "|LP - GM|", "|LP(F) - EM|", "|LP(all) - EM|"], rows)
    rows = []
    for alpha in (0.3, 0.62, 0.9):
        epsilon = -math.log(alpha)
        rr = expected_loss(randomized_response_count(epsilon))
        lp1 = solve_count_lp(1, epsilon, solver=solver).objective
        grr = [abs(solve_ldp_lp(k, epsilon, solver=solver).objective
                   - expected_loss(randomized_response_strategy(k, epsilon)))
               for k in (3, 8, 16)]
        rows.append([alpha, f"{abs(lp1 - rr):.1e}"] + [f"{g:.1e}" for g in grr])
    print_table(["alpha", "|LP(n=1) - RR|", "|LDP-LP(3) - GRR|", "|LDP-LP(8) - GRR|",
                 "|LDP-LP(16) - GRR|"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 20, 30, 50, 75, 100])
    parser.add_argument("--alpha", type=float, default=0.9,
                        help="alpha = e^-epsilon of the timing runs (default 0.9)")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--solvers", nargs="+", default=["highs", "cvxpy", "auto", "design"])
    parser.add_argument("--skip-gaps", action="store_true")
    args = parser.parse_args()
    import cvxpy
    import scipy

    print(f"sklearn_ldp {sklearn_ldp.__version__}, scipy {scipy.__version__}, cvxpy "
          f"{cvxpy.__version__}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"L0 loss, uniform prior, alpha = {args.alpha} (epsilon = {-math.log(args.alpha):.4f}),"
          f" best of {args.repeats}")
    print()
    timing(args.sizes, -math.log(args.alpha), args.repeats, args.solvers)
    if not args.skip_gaps:
        for solver in ("highs", "cvxpy"):
            print()
            print(f"closed forms vs LP optima, solver={solver} (objective gaps):")
            gaps(solver)


if __name__ == "__main__":
    main()
