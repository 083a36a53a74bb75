"""Throughput of ``randomize`` of the frequency oracles, this tree against another copy.

Issue 26 made every oracle sample an exact integer law; this measures ``randomize`` at
``--users`` users (10^6) for randomized response, OLH, Hadamard response, HRR, HaarHRR and
OUE, best of ``--repeats`` (3) calls in each of ``--rounds`` (3) processes, with the package of
this tree and, given ``--before DIR`` (a directory holding another ``sklearn_ldp``, e.g.
``git archive <commit> sklearn_ldp | tar -x -C DIR``), with that one, the two alternating on
the same machine, and prints the ratio.

Example
-------
    mkdir -p /tmp/before && git archive d9b25a1 sklearn_ldp | tar -x -C /tmp/before
    python benchmarks/bench_exact_randomize.py --before /tmp/before
"""

import argparse
import json
import os
import subprocess
import sys
import time

CASES = [  # (label, kind, n_inputs, params)
    ("randomized_response n=256", "randomized_response", 256, {}),
    ("olh n=1024", "olh", 1024, {}),
    ("hadamard n=1024", "hadamard", 1024, {}),
    ("hrr n=1024", "hrr", 1024, {}),
    ("haar n=1024", "haar", 1024, {}),
    ("oue n=256", "oue", 256, {}),
]


def measure(n_users, repeats, epsilon):
    """Seconds of the best of ``repeats`` randomize calls, per case (in this process)."""
    import numpy as np

    from sklearn_ldp.mechanisms import mechanism_from_dict

    times = {}
    for label, kind, n, params in CASES:
        mechanism = mechanism_from_dict({"version": 1, "mechanism": kind, "epsilon": epsilon,
                                         "n_inputs": n, "params": params})
        rng = np.random.default_rng(0)
        users = rng.integers(0, n, n_users)
        best = float("inf")
        for _ in range(repeats):
            start = time.perf_counter()
            mechanism.randomize(users, rng)
            best = min(best, time.perf_counter() - start)
        times[label] = best
    return times


def run(path, args):
    """``measure`` in a fresh process importing ``sklearn_ldp`` from ``path``."""
    code = (f"import sys, json; sys.path.insert(0, {path!r}); "
            f"sys.path.insert(1, {os.path.dirname(os.path.abspath(__file__))!r}); "
            "import bench_exact_randomize as b; "
            f"print(json.dumps(b.measure({args.users}, {args.repeats}, {args.epsilon})))")
    output = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                            text=True, cwd="/").stdout
    return json.loads(output.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--before", help="directory holding the sklearn_ldp to compare with")
    parser.add_argument("--rounds", type=int, default=3, help="alternations of the copies")
    args = parser.parse_args()
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # Alternate the two copies --rounds times and keep each case's best: on a shared machine
    # the load changes between runs, and interleaving exposes both copies to it alike.
    now, before = {}, ({} if args.before else None)
    for _ in range(args.rounds):
        for copy, path in ((now, here), (before, args.before)):
            if path is None:
                continue
            for label, seconds in run(path, args).items():
                copy[label] = min(copy.get(label, float("inf")), seconds)
    print(f"randomize, {args.users} users, eps = {args.epsilon}, best of {args.repeats} x "
          f"{args.rounds} (s)")
    for label in now:
        line = f"{label:28s} now {now[label]:.3f}"
        if before:
            line += f"  before {before[label]:.3f}  ratio {now[label] / before[label]:.2f}"
        print(line)


if __name__ == "__main__":
    main()
