"""Benchmark of memoized longitudinal collection against multi-freq-ldpy.

N users (default 10^6) hold one of d values (default 1024, Zipf(1.1)); they report for
``--rounds`` rounds (default 3), and before every round but the first ``--churn`` of them
(default 10%) redraw their value from the same law. Every protocol runs on the same users and
values, with ``eps_perm = 2`` (what averaging any number of rounds of an unchanged value can
reveal) and ``eps_1 = 1`` (one report):

* ours: ``LongitudinalMechanism`` (L-GRR, L-SUE, L-OUE, L-OSUE, L-SOUE) with a ``MemoState``
  (the permanent responses derived from a secret per user), and ``DBitFlipPM`` (``eps =
  eps_perm``, one sampled bucket per user, memoized per user and value);
* multi-freq-ldpy 0.2.5 (its own virtual environment, ``/work/peers-venv``, run in a
  subprocess on the same users): ``L_*_Client`` once per user and round (it keeps no state:
  every call redraws the "permanent" response, so its rounds are not memoized, and the
  time it spends per round is that of a first round), ``L_*_Aggregator_MI`` and
  ``dBitFlipPM_Client`` / ``dBitFlipPM_Aggregator_MI`` (``b = d``, one bit).

Printed per protocol: seconds per round (wall and CPU; the first round apart, since later rounds
draw permanent responses only for the users who changed value), and the error of one round's
count estimates: ``MSE / N`` (the mean over the d cells of the squared count error, divided by
N, averaged over the rounds), next to the analytic variance (``count_variance``, same units)
and, for the comparison with the peer, our estimate after multi-freq-ldpy's own
post-processing (negative frequencies clipped to 0, then renormalized: biased, but that is
what its aggregators return). Time ratio: the peer's CPU seconds over ours, per round.
That post-processing is biased (clipping the noise of the many near-empty cells adds mass,
and renormalizing shrinks every cell), so its MSE / N grows with N: the peer's clipped MSE is
compared with ours clipped on the same users, and our unbiased MSE / N with the formula.

The peer's unary clients return one float64 vector of d entries per user (8 GB at 10^6 x
1024), so the unary protocols and dBitFlipPM of the peer run on the first ``--peer-users``
users (default 2 x 10^5), and their times are scaled by N / peer-users (marked
"extrapolated"); its L-GRR runs on all the users. MSE / N does not depend on N.

``--memo-speed`` instead times memoization's cost: each kind (L-GRR, L-SUE, L-OUE, L-OSUE,
L-SOUE, dBitFlipPM, 1BitMean) at each ``--memo-users`` (default 10^6 and 10^7), first round
and later rounds, in this tree and in the tree of ``--before`` (default: the parent of the
first commit of ``sklearn_ldp/mechanisms/_base/prf.py``, followed through its move from
``sklearn_ldp/mechanisms/_prf.py``: the tree where permanent responses were drawn from the
round's generator and stored), each in its own subprocess (``git archive`` of that commit
into a temporary folder, imported by path), one after the other on the same values; ratio =
this tree's CPU seconds over the before tree's. Measured (2 cores shared with other jobs, load
average 10-16, d = 64, two runs; the before column itself varies by up to 1.5x between runs),
round 1 after / before at 10^6 and 10^7 users: L-GRR 0.96-1.4x, 1BitMean 1.25-2.2x,
dBitFlipPM 1.9-2.7x, the unary kinds (L-SUE, L-OUE, L-OSUE, L-SOUE) 2.3-3.7x; later rounds
1.05-1.8x. A PRF word is
SipHash-2-4 of one 7-byte block, about 0.08 s per 10^6 words in numpy against a few
milliseconds for PCG64: L-GRR and 1BitMean need one word per user and value (1BitMean one
more per user, its alpha), dBitFlipPM one per user (its bucket) and one per value, and the
unary kinds about 7.4 words per 64 lanes (bit-sliced Bernoulli lanes decided together: the
expected maximum of 64 geometric digit counts) plus the lanes' bookkeeping.

Examples
--------
    python benchmarks/bench_longitudinal.py
    python benchmarks/bench_longitudinal.py --memo-speed --cells 64
    python benchmarks/bench_longitudinal.py --users 100000 --no-peers
    python benchmarks/bench_longitudinal.py --no-peers      # ours and the front door, 10^6
"""

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import cached_peer, fmt, machine_note, print_table, run_peer  # noqa: E402

from sklearn_ldp.estimators.longitudinal import LongitudinalEstimator  # noqa: E402
from sklearn_ldp.longitudinal import LongitudinalEncoder  # noqa: E402
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (  # noqa: E402
    DBitFlipPM,
    LongitudinalMechanism,
    MemoState,
)

PROTOCOLS = ("l_grr", "l_sue", "l_oue", "l_osue", "l_soue")


def make_rounds(n_users, n_cells, n_rounds, churn, seed):
    """``(n_rounds, n_users)`` values: Zipf(1.1) over the cells, ``churn`` of the users
    redrawing theirs before each round after the first."""
    rng = np.random.default_rng(seed)
    law = 1.0 / np.arange(1, n_cells + 1) ** 1.1
    law /= law.sum()
    rounds = [rng.choice(n_cells, size=n_users, p=law)]
    for _ in range(n_rounds - 1):
        values = rounds[-1].copy()
        moved = rng.random(n_users) < churn
        values[moved] = rng.choice(n_cells, size=int(moved.sum()), p=law)
        rounds.append(values)
    return np.array(rounds)


def clip_renormalize(counts, n):
    """multi-freq-ldpy's post-processing: frequencies clipped at 0 and renormalized."""
    f = np.clip(counts / n, 0.0, None)
    return n * f / f.sum() if f.sum() > 0 else n * f


def run_ours(mechanism, rounds, seed):
    rng = np.random.default_rng(seed)
    n = rounds.shape[1]
    state = MemoState(mechanism, n, rng=rng)
    result = []
    for values in rounds:
        wall, cpu = time.perf_counter(), time.process_time()
        reports = mechanism.randomize(values, state, rng)
        middle_wall, middle_cpu = time.perf_counter(), time.process_time()
        estimate = mechanism.estimate(mechanism.aggregate(reports))
        end_wall, end_cpu = time.perf_counter(), time.process_time()
        truth = np.bincount(values, minlength=mechanism.n_cells)
        analytic = mechanism.count_variance(truth / n, n)
        result.append({"client": middle_wall - wall, "server": end_wall - middle_wall,
                       "cpu": end_cpu - cpu, "client_cpu": middle_cpu - cpu,
                       "mse": np.mean((estimate - truth) ** 2) / n,
                       "clipped": np.mean((clip_renormalize(estimate, n) - truth) ** 2) / n,
                       "analytic": analytic.mean() / n})
    return result


def run_front_door(name, rounds, eps_perm, eps_1, seed):
    """CPU seconds per round through LongitudinalEncoder.transform (state bookkeeping, the
    max_values check, the reports' validation and aggregate) and
    LongitudinalEstimator.partial_fit, and the largest |estimate - math layer's formula|
    check: the estimate's error over its analytic standard deviation, per round."""
    n, k = rounds.shape[1], int(rounds.max()) + 1
    encoder = LongitudinalEncoder(categories=list(range(k)), strategy=name,
                                  epsilon_perm=eps_perm, epsilon_1=eps_1,
                                  random_state=seed).fit()
    state, estimator, result = encoder.new_state(n), LongitudinalEstimator(), []
    for values in rounds:
        cpu = time.process_time()
        reports = encoder.transform(values, state=state)
        middle = time.process_time()
        estimator.partial_fit(reports)
        end = time.process_time()
        truth = np.bincount(values, minlength=k)
        z = (estimator.estimates_.iloc[-1].to_numpy() - truth) / np.sqrt(
            encoder.mechanism_.count_variance(truth / n, n))
        result.append({"client_cpu": middle - cpu, "server_cpu": end - middle,
                       "z": float(np.abs(z).max())})
    return result


PEER_SOURCE = r'''
import json, sys, time
import numpy as np
data = np.load(sys.argv[1])
params = json.loads(sys.argv[2])
rounds, k = data["rounds"], params["k"]
np.random.seed(params["seed"])
name, eps_perm, eps_1 = params["protocol"], params["eps_perm"], params["eps_1"]
if name == "dbitflip":
    from multi_freq_ldpy.long_freq_est.dBitFlipPM import (dBitFlipPM_Client as client,
                                                          dBitFlipPM_Aggregator_MI as aggregator)
    report = lambda v: client(v, k, k, 1, eps_perm)
    estimate = lambda reports: aggregator(reports, k, 1, eps_perm)
else:
    module = __import__("multi_freq_ldpy.long_freq_est." + name.upper(),
                        fromlist=["x"])
    upper = name.upper()
    client = getattr(module, upper + "_Client")
    aggregator = getattr(module, upper + "_Aggregator_MI")
    report = lambda v: client(v, k, eps_perm, eps_1)
    if name == "l_grr":
        estimate = lambda reports: aggregator(reports, k, eps_perm, eps_1)
    else:
        estimate = lambda reports: aggregator(reports, eps_perm, eps_1)
# Warm-up (numba compiles the clients on their first call): not timed.
estimate([report(0), report(1), report(0)])
out = []
for values in rounds:
    n = len(values)
    c0, w0 = time.process_time(), time.perf_counter()
    reports = [report(int(v)) for v in values]
    c1, w1 = time.process_time(), time.perf_counter()
    frequencies = estimate(reports)
    c2, w2 = time.process_time(), time.perf_counter()
    truth = np.bincount(values, minlength=k)
    out.append({"client": w1 - w0, "server": w2 - w1, "cpu": c2 - c0,
                "mse": float(np.mean((n * np.asarray(frequencies) - truth) ** 2)) / n})
    del reports
print(json.dumps({"rounds": out}))
'''


MEMO_KINDS = PROTOCOLS + ("dbitflip", "1bitmean")

# One kind, one size, one tree: imported from sys.argv[3] (this tree or the before tree's
# folder); prints the CPU and wall seconds of each round. Both APIs: before memoization
# MemoState(mechanism) and new_state(n, rng); after, MemoState(mechanism, n, rng=rng).
MEMO_SOURCE = r'''
import inspect, json, sys, time
sys.path.insert(0, sys.argv[3])
import numpy as np
try:  # the family's package (this layout), or the single module of older trees
    from sklearn_ldp.mechanisms.longitudinal import mechanisms as L
except ImportError:
    from sklearn_ldp.mechanisms import longitudinal as L
data = np.load(sys.argv[1])
params = json.loads(sys.argv[2])
rounds, name, k = data["rounds"], params["kind"], params["cells"]
rng = np.random.default_rng(params["seed"])
n = rounds.shape[1]
if name == "dbitflip":
    mechanism = L.DBitFlipPM(k, params["eps_perm"], n_sampled=1)
elif name == "1bitmean":
    mechanism = L.OneBitMeanPM(k - 1, params["eps_perm"])
    rounds = rounds.astype(float)
else:
    mechanism = L.LongitudinalMechanism(k, params["eps_perm"], params["eps_1"], name)
if hasattr(mechanism, "new_state"):
    state = mechanism.new_state(n, rng)
elif len(inspect.signature(L.MemoState).parameters) > 1:
    state = L.MemoState(mechanism, n, rng=rng)
else:
    state = L.MemoState(mechanism)
out = []
for values in rounds:
    c0, w0 = time.process_time(), time.perf_counter()
    reports = mechanism.randomize(values, state, rng)
    out.append({"cpu": time.process_time() - c0, "wall": time.perf_counter() - w0})
    del reports
print(json.dumps({"rounds": out, "file": L.__file__}))
'''


def before_commit():
    """The parent of the first commit of ``sklearn_ldp/mechanisms/_base/prf.py``."""
    import subprocess

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # --follow: the module was moved (from sklearn_ldp/mechanisms/_prf.py); without it the
    # "first" commit would be the move, whose parent already memoizes with the PRF.
    first = subprocess.run(["git", "log", "--follow", "--format=%H", "--",
                            "sklearn_ldp/mechanisms/_base/prf.py"], cwd=root, check=True,
                           capture_output=True, text=True).stdout.split()[-1]
    return first + "~1"


def memo_speed(args):
    """Before / after memoization, CPU seconds per round, one subprocess per measurement."""
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = args.before or before_commit()
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(["git", "archive", commit], cwd=root, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
        label = subprocess.run(["git", "rev-parse", "--short", commit], cwd=root,
                               check=True, capture_output=True, text=True).stdout.strip()
        print(f"before = {commit} ({label}), after = this tree; d = {args.cells}, "
              f"{args.rounds} rounds, churn {args.churn}; CPU s per round (later rounds: "
              "mean); ratio = after / before.\n")
        rows = []
        for users in args.memo_users:
            rounds = make_rounds(users, args.cells, args.rounds, args.churn, 0)
            for kind in args.memo_kinds:
                params = {"kind": kind, "cells": args.cells, "eps_perm": args.eps_perm,
                          "eps_1": args.eps_1, "seed": 1}
                times = {}
                for tree, path in (("before", folder), ("after", root)):
                    result = run_peer(MEMO_SOURCE.replace("sys.argv[3]", repr(path)),
                                      {"rounds": rounds}, params, python=sys.executable)
                    if "error" in result:
                        raise RuntimeError(f"{kind} {users} {tree}: {result['error']}")
                    times[tree] = [r["cpu"] for r in result["rounds"]]
                first = [times[tree][0] for tree in ("before", "after")]
                later = [np.mean(times[tree][1:]) for tree in ("before", "after")]
                rows.append([f"{users:.0e}", kind, f"{first[0]:.2f}", f"{first[1]:.2f}",
                             f"{first[1] / first[0]:.2f}", f"{later[0]:.2f}",
                             f"{later[1]:.2f}", f"{later[1] / later[0]:.2f}"])
                print_table(["users", "kind", "round 1 before", "round 1 after", "ratio",
                             "later before", "later after", "ratio"], rows[-1:])
        print()
        print_table(["users", "kind", "round 1 before", "round 1 after", "ratio",
                     "later before", "later after", "ratio"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--churn", type=float, default=0.1)
    parser.add_argument("--eps-perm", type=float, default=2.0)
    parser.add_argument("--eps-1", type=float, default=1.0)
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-front-door", action="store_true",
                        help="skip the LongitudinalEncoder / LongitudinalEstimator timing")
    parser.add_argument("--peer-users", type=int, default=200_000)
    parser.add_argument("--peer-cache", default=None,
                        help="JSON file keeping the peer's results between runs")
    parser.add_argument("--memo-speed", action="store_true",
                        help="time memoization against the tree before it (see above)")
    parser.add_argument("--before", default=None, help="the commit before memoization")
    parser.add_argument("--memo-users", type=int, nargs="+", default=[10**6, 10**7])
    parser.add_argument("--memo-kinds", nargs="+", default=list(MEMO_KINDS))
    args = parser.parse_args()
    print(machine_note())
    if args.memo_speed:
        memo_speed(args)
        return
    rounds = make_rounds(args.users, args.cells, args.rounds, args.churn, 0)
    print(f"N = {args.users}, d = {args.cells} (Zipf 1.1), {args.rounds} rounds, "
          f"{100 * args.churn:g}% of the users change value before each later round; "
          f"eps_perm = {args.eps_perm}, eps_1 = {args.eps_1} (dBitFlipPM: eps = eps_perm, "
          f"d = 1).\n")
    mechanisms = {name: LongitudinalMechanism(args.cells, args.eps_perm, args.eps_1, name)
                  for name in PROTOCOLS}
    mechanisms["dbitflip"] = DBitFlipPM(args.cells, args.eps_perm, n_sampled=1)
    ours, rows = {}, []
    for index, (name, mechanism) in enumerate(mechanisms.items()):
        result = run_ours(mechanism, rounds, 100 + index)
        ours[name] = result
        first, later = result[0], result[1:]
        mean = {key: np.mean([r[key] for r in result]) for key in ("mse", "clipped", "analytic")}
        rows.append([name, f"{first['client']:.2f} / {first['server']:.2f}", f"{first['cpu']:.2f}",
                     f"{np.mean([r['client'] for r in later]):.2f} / "
                     f"{np.mean([r['server'] for r in later]):.2f}" if later else "-",
                     f"{np.mean([r['cpu'] for r in later]):.2f}" if later else "-",
                     fmt(mean["mse"]), fmt(mean["analytic"]),
                     f"{mean['mse'] / mean['analytic']:.3f}", fmt(mean["clipped"])])
    print("Ours (seconds per round, client / server wall, and CPU):")
    print_table(["protocol", "round 1 s", "round 1 CPU", "later rounds s", "later CPU",
                 "MSE/N", "analytic/N", "ratio", "MSE/N clipped"], rows)
    if not args.no_front_door:
        rows = []
        for index, name in enumerate(mechanisms):
            front = run_front_door(name, rounds, args.eps_perm, args.eps_1, 100 + index)
            math_cpu = [r["cpu"] for r in ours[name]]
            cpu = [r["client_cpu"] + r["server_cpu"] for r in front]
            rows.append([name, f"{front[0]['client_cpu']:.2f} / {front[0]['server_cpu']:.2f}",
                         f"{np.mean([r['client_cpu'] for r in front[1:]]):.2f} / "
                         f"{np.mean([r['server_cpu'] for r in front[1:]]):.2f}"
                         if len(front) > 1 else "-",
                         f"{np.mean(cpu) / np.mean(math_cpu):.2f}",
                         f"{max(r['z'] for r in front):.2f}"])
        print("\nFront door (LongitudinalEncoder.transform / LongitudinalEstimator.partial_fit, "
              "CPU s per round; overhead = their CPU over the math layer's, mean of the "
              "rounds; max |z| = largest count error over its analytic sd, all cells and "
              "rounds):")
        print_table(["protocol", "round 1 CPU", "later rounds CPU", "overhead", "max |z|"],
                    rows)
    if args.no_peers:
        return
    print("\nmulti-freq-ldpy 0.2.5 (no memoization: every round redraws the permanent "
          "response); time ratio = its CPU s per round / ours (round 1; later rounds):")
    rows = []
    for name in mechanisms:
        users = args.users if name == "l_grr" else min(args.peer_users, args.users)
        scale = args.users / users
        params = {"protocol": name, "k": args.cells, "eps_perm": args.eps_perm,
                  "eps_1": args.eps_1, "seed": 0}
        key = f"{users}:{args.rounds}:{args.churn}:{sorted(params.items())}"
        result = cached_peer(args.peer_cache, key, lambda params=params, users=users: run_peer(
            PEER_SOURCE, {"rounds": rounds[:, :users]}, params))
        if "error" in result:
            rows.append([name, users, result["error"]] + [""] * 5)
            continue
        peer = result["rounds"]
        cpu = np.mean([r["cpu"] for r in peer]) * scale
        client = np.mean([r["client"] for r in peer]) * scale
        server = np.mean([r["server"] for r in peer]) * scale
        mse = np.mean([r["mse"] for r in peer])
        mine = ours[name]
        later = [r["cpu"] for r in mine[1:]] or [mine[0]["cpu"]]
        # The clipped estimator is biased and its MSE / N grows with N: compare it with ours
        # on the same users.
        same = mine if users == args.users else run_ours(
            mechanisms[name], rounds[:, :users], 100 + list(mechanisms).index(name))
        rows.append([name, f"{users}" + (" (extrapolated)" if scale != 1 else ""),
                     f"{client:.1f} / {server:.1f}", f"{cpu:.1f}", fmt(mse),
                     fmt(np.mean([r["clipped"] for r in same])),
                     f"{cpu / mine[0]['cpu']:.0f}x; {cpu / np.mean(later):.0f}x"])
    print_table(["protocol", "peer users", "its s per round (client / server)", "its CPU s",
                 "its MSE/N (clipped)", "ours clipped, same users", "time ratio"], rows)


if __name__ == "__main__":
    main()
