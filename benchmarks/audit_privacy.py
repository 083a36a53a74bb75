"""The privacy audit as a table: every mechanism kind, on the law it actually samples.

For each kind of ``tests/_audit_cases.py`` (small instances, adversarial inputs) and each
epsilon: the realised epsilon of the exact laws over every pair of inputs (decided on
integers; ``private`` says whether the claim holds exactly; for the (epsilon, delta) kinds,
the realised delta at the claimed epsilon, an upper bound on the hockey-stick divergence),
and the black-box lower bound of
a distinguisher that only sees reports (held-out likelihood-ratio event, Clopper-Pearson,
confidence 1 - 1e-3), from ``--reports`` server reports and ``--client-reports`` client
reports of each input of two pairs (the first two inputs, and the last two).

Run: ``python benchmarks/audit_privacy.py [--reports 200000] [--client-reports 20000]
[--kinds gaussian ...]``.
"""

import argparse
import pathlib
import sys
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))

from _audit_cases import (  # noqa: E402
    CASES,
    client_reports,
    event_keys,
    sampled_pairs,
    server_reports,
)
from _common import machine_note, print_table  # noqa: E402
from _laws import empirical_epsilon_lower_bound  # noqa: E402

from sklearn_ldp.mechanisms import audit_privacy  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 4.0])
    parser.add_argument("--reports", type=int, default=200_000)
    parser.add_argument("--client-reports", type=int, default=20_000)
    parser.add_argument("--kinds", nargs="+", default=sorted(CASES), choices=sorted(CASES),
                        metavar="KIND", help="the kinds to audit (default: all)")
    args = parser.parse_args()
    print(machine_note())
    rows = []
    for kind in sorted(args.kinds):
        case = CASES[kind]
        for epsilon in args.epsilons:
            if epsilon > case.max_epsilon:
                continue
            start = time.perf_counter()
            mechanism = case.build(epsilon)
            audit = audit_privacy(mechanism, case.values)
            exact_seconds = time.perf_counter() - start
            rng = np.random.default_rng(0)
            for first, second in sampled_pairs(case):
                keys = event_keys(mechanism, first)
                server = empirical_epsilon_lower_bound(
                    server_reports(mechanism, first, args.reports, rng),
                    server_reports(mechanism, second, args.reports, rng), event_keys=keys)
                client = "-"
                if case.client:
                    bound = empirical_epsilon_lower_bound(
                        client_reports(mechanism, first, args.client_reports, seed=1),
                        client_reports(mechanism, second, args.client_reports, seed=2),
                        event_keys=keys)
                    client = f"{bound:.3f}"
                deltas = (f"{audit.realised_delta:.3g} <= {audit.delta:g}" if audit.delta
                          else "-")
                rows.append([kind, epsilon, f"{audit.realised:.9f}", deltas, audit.private,
                             len(case.values), f"{exact_seconds:.2f}", f"{first!r} vs {second!r}",
                             f"{server:.3f}", client])
    print_table(["kind", "claimed eps", "realised eps (exact)", "realised delta", "private",
                 "inputs", "exact s", "sampled pair", "black-box server", "black-box client"],
                rows)


if __name__ == "__main__":
    main()
