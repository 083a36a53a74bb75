"""Every peer figure we can run, in one table: the peer's CPU seconds over ours through the
public API, at 10^6 users, with both accuracies.

Rows (the rows of ``/work/shared/reference/peer_figures.md`` that run here):

* frequency oracles, d = 1024 cells, epsilon = 1, Zipf(1.1) data: k-RR, SUE, OUE, OLH, BLH,
  Hadamard response and Hadamard mechanism (pure-LDP 1.2.0), OUE and subset selection
  (multi-freq-ldpy 0.2.5). Ours: ``LDPEncoder(categories, strategy, epsilon=1)
  .fit(df).transform(df)`` then ``WorkloadEstimator().fit(reports).answers_`` (the counts).
  Accuracy: MSE * N, the mean over the cells of ``N (f_hat - f)^2`` (frequencies);
* multi-attribute, 10 attributes of 2 ... 50 values (``bench_multi_attribute.SHAPE``), epsilon
  = 1: SMP and SPL with GRR and OUE inside (multi-freq-ldpy). Ours: ``LDPEncoder(categories,
  strategy="smp" | "spl", oracle=...)`` then ``AttributeHistogramEstimator``. Accuracy: MSE * N
  pooled over the 183 cells; the peer's estimates are clipped at 0 and renormalized (biased),
  ours are not;
* longitudinal, d = 1024, eps_perm = 2, eps_1 = 1 (dBitFlipPM: eps = 2, one bucket bit): one
  round of L-GRR, L-OUE, L-OSUE and dBitFlipPM (multi-freq-ldpy). Ours: ``LongitudinalEncoder
  (...).fit()``, ``new_state(N)``, ``LongitudinalEstimator().partial_fit(encoder.transform(values,
  state=state))``, the first round (which draws the permanent responses) and, for the time
  ratio of later rounds, the second. The peer's estimators clip and renormalize;
  ``AttributeHistogramEstimator`` does the same by default (``postprocess="clip"``), while
  ``LongitudinalEstimator(normalize=True)`` only divides by N (unbiased).
* heavy hitters (``--sections heavy``; ``bench_heavy_hitters.peer_table_rows``): 32-bit
  integers, 20 planted values at 3% ... 1%, epsilon = 2 and 4: pure-LDP's PEM (its CMS
  inside) against ``LDPEncoder(categories={"c": 32}, strategy="pem")`` and
  ``HeavyHitterEstimator(top_k=20)``, both on all the users (recall depends on N); pure-LDP's
  CMS and HCMS (32 hashes x 1024) against ``strategy="cms" | "hcms"`` at the default sizes,
  ``HeavyHitterEstimator().predict`` of 40 candidates (MSE * N of their frequencies).

The peers run in their own virtual environment (``/work/peers-venv``, never imported here),
one client call per user as their APIs take them, on the first ``--peer-users`` users of the
same data (default 50,000): their cost is linear in the users (a Python loop per user), so
their seconds are scaled to ``--users`` and marked "(x20)" (the factor). Peer results are
kept in ``--peer-cache`` so that a rerun only times our side (delete it to time both sides
under the same load: the ratio is only meaningful within one run).

Our side: CPU time (``process_time``, all threads) of the whole public-API call, best of
``--repeats`` runs after one untimed warm-up run (which fills the per-process caches: the
Hadamard layout and its histogram variances, the numba-free lookups of the domain). RAPPOR's
sketch is not in this table.

Examples
--------
    PYTHONPATH=. python benchmarks/bench_peers.py
    PYTHONPATH=. python benchmarks/bench_peers.py --users 100000 --peer-users 10000 --only oue
"""

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cached_peer, fmt, machine_note, print_table, run_peer  # noqa: E402
from bench_multi_attribute import PEER_SOURCE as MULTI_SOURCE  # noqa: E402
from bench_multi_attribute import SHAPE, make_records  # noqa: E402

from sklearn_ldp import (  # noqa: E402
    AttributeHistogramEstimator,
    LDPEncoder,
    LongitudinalEncoder,
    LongitudinalEstimator,
    WorkloadEstimator,
)

RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results")
PEER_CACHE = os.path.join(RESULTS, "peers_cache.json")

# label -> (peer library, peer configuration, our strategy)
ORACLES = {
    "k-RR": ("pure-LDP", "krr", "randomized_response"),
    "SUE": ("pure-LDP", "sue", "rappor"),
    "OUE": ("pure-LDP", "oue", "oue"),
    "OUE (mfl)": ("multi-freq-ldpy", "mfl_oue", "oue"),
    "OLH": ("pure-LDP", "olh", "olh"),
    "BLH": ("pure-LDP", "blh", "blh"),
    "Hadamard response": ("pure-LDP", "hr", "hadamard"),
    "Hadamard mechanism": ("pure-LDP", "hm", "hrr"),
    "subset selection": ("multi-freq-ldpy", "mfl_ss", "subset_selection"),
}
MULTI = {"SMP / GRR": ("smp", "grr"), "SMP / OUE": ("smp", "oue"),
         "SPL / GRR": ("spl", "grr"), "SPL / OUE": ("spl", "oue")}
LONGITUDINAL = {"L-GRR": "l_grr", "L-OUE": "l_oue", "L-OSUE": "l_osue",
                "dBitFlipPM": "dbitflip"}

ORACLE_SOURCE = r'''
import importlib.util, json, random, sys, time, types
import numpy as np
data = np.load(sys.argv[1])
params = json.loads(sys.argv[2])
users, d, eps, name = data["users"], params["d"], params["epsilon"], params["oracle"]
random.seed(params["seed"])
np.random.seed(params["seed"])
if name.startswith("mfl_"):
    if name == "mfl_oue":
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Client, UE_Aggregator_MI
        report = lambda v: UE_Client(v, d, eps, True)
        estimate = lambda reports: UE_Aggregator_MI(reports, eps, True)
    else:
        from multi_freq_ldpy.pure_frequency_oracles.SS import SS_Client, SS_Aggregator_MI
        report = lambda v: SS_Client(v, d, eps)
        estimate = lambda reports: SS_Aggregator_MI(reports, d, eps)
    estimate([report(0), report(1)])  # warm-up (numba compiles on the first call)
    c0 = time.process_time()
    frequencies = np.asarray(estimate([report(int(v)) for v in users.tolist()]), dtype=float)
    cpu = time.process_time() - c0
else:
    # pure_ldp.frequency_oracles/__init__ imports every oracle (RAPPOR's with scikit-learn):
    # register the package without running it.
    spec = importlib.util.find_spec("pure_ldp")
    package = types.ModuleType("pure_ldp.frequency_oracles")
    package.__path__ = [spec.submodule_search_locations[0] + "/frequency_oracles"]
    sys.modules["pure_ldp.frequency_oracles"] = package
    c0 = time.process_time()
    if name == "krr":
        from pure_ldp.frequency_oracles.direct_encoding.de_client import DEClient
        from pure_ldp.frequency_oracles.direct_encoding.de_server import DEServer
        client, server = DEClient(eps, d), DEServer(eps, d)
    elif name in ("sue", "oue"):
        from pure_ldp.frequency_oracles.unary_encoding.ue_client import UEClient
        from pure_ldp.frequency_oracles.unary_encoding.ue_server import UEServer
        client = UEClient(eps, d, use_oue=name == "oue")
        server = UEServer(eps, d, use_oue=name == "oue")
    elif name in ("olh", "blh"):
        from pure_ldp.frequency_oracles.local_hashing.lh_client import LHClient
        from pure_ldp.frequency_oracles.local_hashing.lh_server import LHServer
        client = LHClient(eps, d, use_olh=name == "olh")
        server = LHServer(eps, d, use_olh=name == "olh")
    elif name == "hr":
        from pure_ldp.frequency_oracles.hadamard_response.hr_client import (
            HadamardResponseClient)
        from pure_ldp.frequency_oracles.hadamard_response.hr_server import (
            HadamardResponseServer)
        server = HadamardResponseServer(eps, d)
        client = HadamardResponseClient(eps, d, server.get_hash_funcs())
    else:
        from pure_ldp.frequency_oracles.hadamard_mechanism.hadamard_mechanism_client import (
            HadamardMechClient)
        from pure_ldp.frequency_oracles.hadamard_mechanism.hadamard_mechanism_server import (
            HadamardMechServer)
        client = HadamardMechClient(eps, d, 1, use_optimal_t=True)
        server = HadamardMechServer(eps, d, 1, use_optimal_t=True)
    for v in users.tolist():  # items 1..d in pure-LDP
        server.aggregate(client.privatise(v + 1))
    counts = np.array([server.estimate(j + 1, suppress_warnings=True) for j in range(d)])
    cpu = time.process_time() - c0
    frequencies = counts / len(users)
truth = np.bincount(users, minlength=d) / len(users)
print(json.dumps({"cpu": cpu, "mse_n": float(np.mean((frequencies - truth) ** 2)) * len(users)}))
'''

LONG_SOURCE = r'''
import json, sys, time
import numpy as np
data = np.load(sys.argv[1])
params = json.loads(sys.argv[2])
values, k, name = data["values"], params["k"], params["protocol"]
eps_perm, eps_1 = params["eps_perm"], params["eps_1"]
np.random.seed(params["seed"])
if name == "dbitflip":
    from multi_freq_ldpy.long_freq_est.dBitFlipPM import (dBitFlipPM_Client as client,
                                                          dBitFlipPM_Aggregator_MI as aggregator)
    report = lambda v: client(v, k, k, 1, eps_perm)
    estimate = lambda reports: aggregator(reports, k, 1, eps_perm)
else:
    module = __import__("multi_freq_ldpy.long_freq_est." + name.upper(), fromlist=["x"])
    client = getattr(module, name.upper() + "_Client")
    aggregator = getattr(module, name.upper() + "_Aggregator_MI")
    report = lambda v: client(v, k, eps_perm, eps_1)
    estimate = (lambda reports: aggregator(reports, k, eps_perm, eps_1)) if name == "l_grr" \
        else (lambda reports: aggregator(reports, eps_perm, eps_1))
estimate([report(0), report(1), report(0)])  # warm-up (numba compiles on the first call)
c0 = time.process_time()
frequencies = np.asarray(estimate([report(int(v)) for v in values.tolist()]), dtype=float)
cpu = time.process_time() - c0
truth = np.bincount(values, minlength=k) / len(values)
print(json.dumps({"cpu": cpu, "mse_n": float(np.mean((frequencies - truth) ** 2)) * len(values)}))
'''


def zipf_cells(n_users, n_cells, seed):
    law = 1.0 / np.arange(1, n_cells + 1) ** 1.1
    return np.random.default_rng(seed).choice(n_cells, size=n_users, p=law / law.sum())


def best_cpu(run, repeats):
    """``(result of the last run, least CPU seconds over the timed runs)``, after one untimed
    warm-up run."""
    result = run()
    times = []
    for _ in range(repeats):
        start = time.process_time()
        result = run()
        times.append(time.process_time() - start)
    return result, min(times)


def peer(args, key, source, arrays, params, users):
    """The peer's result on ``users`` users, its CPU scaled to ``args.users``."""
    result = cached_peer(args.peer_cache, f"v1:{users}:{key}",
                         lambda: run_peer(source, arrays, params))
    if "error" not in result:
        result = dict(result, scale=args.users / users)
    return result


def oracle_rows(args, users):
    d = args.cells
    frame = pd.DataFrame({"x": users})
    categories = {"x": range(d)}
    truth = np.bincount(users, minlength=d) / users.size
    rows = []
    for label, (library, config, strategy) in ORACLES.items():
        if args.only and config not in args.only and strategy not in args.only:
            continue
        n_peer = min(args.peer_users, users.size)
        theirs = peer(args, f"oracle:{config}:{d}:{args.epsilon}", ORACLE_SOURCE,
                      {"users": users[:n_peer]},
                      {"oracle": config, "d": d, "epsilon": args.epsilon, "seed": 0}, n_peer)

        def ours(strategy=strategy):
            reports = LDPEncoder(categories=categories, strategy=strategy, epsilon=args.epsilon,
                                 random_state=1).fit(frame).transform(frame)
            return WorkloadEstimator().fit(reports).answers_

        answers, cpu = best_cpu(ours, args.repeats)
        mse_n = float(np.mean((np.asarray(answers, dtype=float) / users.size - truth) ** 2)) \
            * users.size
        rows.append(row(label, library, theirs, cpu, mse_n))
        print(f"# {label} done", flush=True)
    return rows


def multi_rows(args):
    records = make_records(args.users, 0)
    columns = [f"c{i}" for i in range(len(SHAPE))]
    frame = pd.DataFrame(records, columns=columns)
    categories = {c: range(k) for c, k in zip(columns, SHAPE, strict=True)}
    truths = [np.bincount(records[:, i], minlength=k) for i, k in enumerate(SHAPE)]
    rows = []
    for label, (protocol, oracle) in MULTI.items():
        if args.only and protocol not in args.only:
            continue
        theirs = multi_peer(args, records, protocol, oracle)

        def ours(protocol=protocol, oracle=oracle):
            reports = LDPEncoder(categories=categories, strategy=protocol, oracle=oracle,
                                 epsilon=args.epsilon, random_state=1).fit_transform(frame)
            return AttributeHistogramEstimator().fit(reports).histograms_

        histograms, cpu = best_cpu(ours, args.repeats)
        mse_n = float(np.concatenate([
            (np.asarray(histograms[c], dtype=float) - t / args.users) ** 2
            for c, t in zip(columns, truths, strict=True)]).mean()) * args.users
        rows.append(row(label, "multi-freq-ldpy", theirs, cpu, mse_n))
        print(f"# {label} done", flush=True)
    return rows


def multi_peer(args, records, protocol, oracle):
    """multi-freq-ldpy on the first ``--peer-users`` records."""
    params = {"protocol": protocol, "oracle": oracle, "epsilon": args.epsilon,
              "shape": list(SHAPE), "seed": 0}
    n_peer = min(args.peer_users, args.users)
    result = cached_peer(args.peer_cache, f"v1:{n_peer}:multi:{sorted(params.items())}",
                         lambda: run_peer(MULTI_SOURCE, {"records": records[:n_peer]}, params))
    if "error" in result:
        return result
    mse_n = float(np.concatenate([
        (np.asarray(f) - np.bincount(records[:n_peer, i], minlength=k) / n_peer) ** 2
        for i, (f, k) in enumerate(zip(result["frequencies"], SHAPE, strict=True))]).mean()) \
        * n_peer
    return {"cpu": result["cpu"], "mse_n": mse_n, "scale": args.users / n_peer}


def longitudinal_rows(args, values):
    d = args.cells
    truth = np.bincount(values, minlength=d) / values.size
    rows = []
    for label, strategy in LONGITUDINAL.items():
        if args.only and strategy not in args.only:
            continue
        n_peer = min(args.peer_users, values.size)
        theirs = peer(args, f"long:{strategy}:{d}", LONG_SOURCE, {"values": values[:n_peer]},
                      {"protocol": strategy, "k": d, "eps_perm": 2.0, "eps_1": 1.0,
                       "seed": 0}, n_peer)

        def ours(strategy=strategy):
            epsilons = {"epsilon_perm": 2.0} if strategy == "dbitflip" else \
                {"epsilon_perm": 2.0, "epsilon_1": 1.0}
            encoder = LongitudinalEncoder(categories=list(range(d)), strategy=strategy,
                                          random_state=1, **epsilons).fit()
            state = encoder.new_state(values.size)
            estimator = LongitudinalEstimator(normalize=True)
            times = []
            for _ in range(2):
                start = time.process_time()
                estimator.partial_fit(encoder.transform(values, state=state))
                times.append(time.process_time() - start)
            return estimator.estimates_, times

        estimates, (first, second) = ours()  # one run: the permanent round is the first
        mse_n = float(np.mean((np.asarray(estimates)[0] - truth) ** 2)) * values.size
        rows.append(row(label, "multi-freq-ldpy", theirs, first, mse_n,
                        note=f"later round {second:.2f} s"))
        print(f"# {label} done", flush=True)
    return rows


def row(label, library, theirs, cpu, mse_n, note=""):
    if "error" in theirs:
        return [label, library, theirs["error"][:60], "-", f"{cpu:.3f}", fmt(mse_n), "-", note]
    scaled = theirs["cpu"] * theirs["scale"]
    factor = "" if theirs["scale"] == 1 else f" (x{theirs['scale']:.0f})"
    return [label, library, f"{scaled:.2f}{factor}", fmt(theirs["mse_n"]), f"{cpu:.3f}",
            fmt(mse_n), f"{scaled / cpu:.1f}x", note]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--peer-users", type=int, default=50_000,
                        help="users the per-user peers run on (their CPU is scaled to --users)")
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3, help="timed runs of ours (best)")
    parser.add_argument("--peer-cache", default=PEER_CACHE,
                        help="JSON file keeping the peers' runs ('' for none)")
    parser.add_argument("--only", default="",
                        help="comma-separated peer configurations or our strategies")
    parser.add_argument("--sections", default="oracles,multi,longitudinal,heavy")
    args = parser.parse_args()
    args.peer_cache = args.peer_cache or None
    args.only = [name for name in args.only.split(",") if name]
    sections = args.sections.split(",")
    print(machine_note())
    print(f"N = {args.users} users (peers: per-user loops on the first {args.peer_users}, "
          f"CPU scaled x{args.users / args.peer_users:.0f} when marked), epsilon = "
          f"{args.epsilon}, d = {args.cells}; CPU seconds (process_time); ours: the public API, "
          f"best of {args.repeats} after a warm-up.\n")
    users = zipf_cells(args.users, args.cells, 0)
    rows = []
    if "oracles" in sections:
        rows += oracle_rows(args, users)
    if "multi" in sections:
        rows += multi_rows(args)
    if "longitudinal" in sections:
        rows += longitudinal_rows(args, users)
    if "heavy" in sections:
        from bench_heavy_hitters import peer_table_rows
        rows += peer_table_rows(args.users, args.peer_users, args.peer_cache, args.repeats)
    print()
    print_table(["row", "peer", "peer CPU s", "peer MSE*N", "ours CPU s", "ours MSE*N",
                 "peer / ours", "note"], rows)
    print("\nMSE*N: mean over cells of N (f_hat - f)^2 (multi-attribute: pooled over the 183 "
          "cells of the 10 attributes). multi-freq-ldpy clips and renormalizes its estimates "
          "(biased; its L-GRR is also mis-calibrated, over-private): its MSE is not a "
          "variance. Ours are unbiased, at the analytic variance.")
    print(machine_note() + " (at the end)")


if __name__ == "__main__":
    main()
