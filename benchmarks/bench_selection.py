"""Time, pick, report size and error of strategy="auto" on large histograms and prefixes.

Run from the repository root:

    PYTHONPATH=. python benchmarks/bench_selection.py            # the default selection
    PYTHONPATH=. python benchmarks/bench_selection.py --compare  # also without the report
                                                                 # size limit and the bounds

Each row: the workload, its cells, wall and CPU seconds of ``build_mechanism("auto", ...)``,
the strategy chosen, its bytes a user, its worst-case per-user variance, and the candidates
skipped by their lower bound. ``--compare`` adds the selection with ``max_report_bytes=None``
and no lower bounds (every candidate scored exactly), and the ratio of the CPU times within
this run (the machine may be shared: compare ratios, not absolute times).
"""

import argparse
import sys

from _common import print_table, timed

import sklearn_ldp.selection.local as local
from sklearn_ldp import workloads
from sklearn_ldp.selection import build_mechanism

CASES = [("histogram", 2**12), ("histogram", 2**16), ("histogram", 2**20),
         ("prefix", 2**12), ("prefix", 2**16), ("prefix", 525_600)]


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
    args = parser.parse_args(argv)
    print(f"sklearn_ldp from {local.__file__}")
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
