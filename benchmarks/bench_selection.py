"""Time, pick, report size and error of strategy="auto" on large histograms, prefixes, marginals.

Run from the repository root:

    PYTHONPATH=. python benchmarks/bench_selection.py            # the default selection
    PYTHONPATH=. python benchmarks/bench_selection.py --compare  # also without the report
                                                                 # size limit and the bounds
    PYTHONPATH=. python benchmarks/bench_selection.py --marginals  # 2-way marginals, with
                                                                 # and without the marginal
                                                                 # strategies as candidates

Each row: the workload, its cells, wall and CPU seconds of ``build_mechanism("auto", ...)``,
the strategy chosen, its bytes a user, its worst-case per-user variance, and the candidates
skipped by their lower bound. ``--compare`` adds the selection with ``max_report_bytes=None``
and no lower bounds (every candidate scored exactly), and the ratio of the CPU times within
this run (the machine may be shared: compare ratios, not absolute times).

``--marginals``: ``auto`` on the 2-way marginals of several grids at eps 1 and 4, with the
marginal strategies as candidates (scored in closed form,
:mod:`sklearn_ldp.selection.marginal_workloads`) and without them (the selection before they
were candidates: the joint-domain candidates only); ``error_ratio`` is the worst case without
them over the worst case with them.
"""

import argparse
import sys

import numpy as np
from _common import print_table, timed

import sklearn_ldp.selection.local as local
from sklearn_ldp import workloads
from sklearn_ldp.selection import build_mechanism

CASES = [("histogram", 2**12), ("histogram", 2**16), ("histogram", 2**20),
         ("prefix", 2**12), ("prefix", 2**16), ("prefix", 525_600)]
MARGINAL_CASES = [(6, 9, 12), (12, 30, 12), (20, 30, 40, 50)]


def run_marginals(shape, epsilon, with_marginal_strategies=True):
    """``auto`` on the 2-way marginals of ``shape``: (chosen, worst case, wall, CPU)."""
    domain = {f"c{j}": list(range(size)) for j, size in enumerate(shape)}
    workload = workloads.marginals(domain, k=2)
    recognize = local.marginal_sets
    if not with_marginal_strategies:
        local.marginal_sets = lambda workload, shape: None
    try:
        (_, report), wall, cpu = timed(build_mechanism, "auto", shape, epsilon,
                                       workload=workload)
    finally:
        local.marginal_sets = recognize
    chosen = report["chosen"]
    return chosen, report["selection"][chosen]["worst_case"], wall, cpu


def marginal_rows():
    run_marginals((2, 3, 4), 1.0)  # imports and first-call set-up, not timed
    rows = []
    for shape in MARGINAL_CASES:
        for epsilon in (1.0, 4.0):
            chosen, worst, wall, cpu = run_marginals(shape, epsilon)
            old_chosen, old_worst, _, old_cpu = run_marginals(shape, epsilon, False)
            rows.append(["x".join(map(str, shape)), int(np.prod(shape)), epsilon, chosen,
                         f"{worst:.4g}", f"{wall:.2f}", f"{cpu:.2f}", old_chosen,
                         f"{old_worst:.4g}", f"{old_cpu:.2f}", f"{old_worst / worst:.2f}"])
    print_table(["2-way marginals of", "cells", "eps", "chosen", "worst_case", "wall_s",
                 "cpu_s", "before_chosen", "before_worst_case", "before_cpu_s",
                 "error_ratio"], rows)


def run(kind, n, epsilon, **kwargs):
    workload = workloads.prefix(n) if kind == "prefix" else None
    (_, report), wall, cpu = timed(build_mechanism, "auto", (n,), epsilon, workload=workload,
                                   **kwargs)
    bounded = [name for name, row in report["selection"].items()
               if "lower bound" in row["reason"]]
    chosen = report["chosen"]
    return report, wall, cpu, [chosen, report["report_bytes"],
                               f"{report['selection'][chosen]['worst_case']:.4g}",
                               ",".join(bounded) or "-"]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--compare", action="store_true",
                        help="also run without the size limit and the lower bounds")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--marginals", action="store_true",
                        help="2-way marginals with and without the marginal strategies")
    args = parser.parse_args(argv)
    print(f"sklearn_ldp from {local.__file__}")
    if args.marginals:
        marginal_rows()
        return 0
    for kind in ("histogram", "prefix"):  # imports and first-call set-up, not timed
        run(kind, 64, args.epsilon)
    rows = []
    for kind, n in CASES:
        _, wall, cpu, fields = run(kind, n, args.epsilon)
        row = [kind, n, f"{wall:.2f}", f"{cpu:.2f}", *fields]
        if args.compare:
            kinds = local.BOUND_FIRST_KINDS
            local.BOUND_FIRST_KINDS = ()  # every candidate scored exactly
            try:
                _, old_wall, old_cpu, old_fields = run(kind, n, args.epsilon,
                                                       max_report_bytes=None)
            finally:
                local.BOUND_FIRST_KINDS = kinds
            row += [f"{old_cpu:.2f}", old_fields[0], old_fields[1], f"{old_cpu / cpu:.1f}"]
        rows.append(row)
    headers = ["workload", "cells", "wall_s", "cpu_s", "chosen", "bytes", "worst_case",
               "skipped_by_bound"]
    if args.compare:
        headers += ["unlimited_cpu_s", "unlimited_chosen", "unlimited_bytes", "cpu_ratio"]
    print_table(headers, rows)


if __name__ == "__main__":
    sys.exit(main())
