"""Benchmark of SPL, SMP and RS+FD over many categorical attributes against multi-freq-ldpy.

N users (default 10^6) hold a record of 10 attributes with 2, 3, 5, 8, 10, 15, 20, 30, 40 and
50 values, each drawn independently from a Zipf(1.1) law over its values; epsilon = 1 for the
whole record. For every protocol (``MultiAttributeMechanism``) and oracle inside:

* seconds to privatize all the records (client) and to aggregate and estimate every
  attribute's histogram (server), wall-clock and CPU, averaged over ``--repeats`` runs;
* ``MSE / N``: the mean squared count error over every value of every attribute (183 cells),
  divided by N (averaged over the runs), next to the analytic variance (``count_variance``,
  same units) and their ratio (with its standard error over the runs); and our estimate
  after multi-freq-ldpy's
  post-processing (frequencies clipped at 0 and renormalized: biased, but what its aggregators
  return), to compare with its numbers.

multi-freq-ldpy 0.2.5 runs the same records (its own virtual environment,
``/work/peers-venv``, in a subprocess; one client call per user): ``RSpFD_GRR``,
``RSpFD_UE_zero`` (optimized UE) ``--peer-repeats`` times (default 5; its numba RNG ignores
seeds, so the runs are independent draws), ``SPL_GRR`` / ``SPL_UE``, ``SMP_GRR`` /
``SMP_UE`` ``--other-peer-repeats`` times (default 3). Every run is kept in
``--peer-cache`` (default ``results/bench_multi_attribute_peer_cache.json``; up to a minute
a run at 10^6 users), so a rerun only runs our side. Its aggregators return frequencies
clipped at 0 and renormalized, so the accuracy ratio compares our estimates after the same
post-processing: our MSE/N over its, each averaged over the runs, with the standard error of
the ratio (delta method), so that "equal or better" is a statement within that error.

About RS+FD's budget. multi-freq-ldpy's RS+FD runs each report with the paper's amplified
budget ``eps' = ln(d (e^eps - 1) + 1)`` (2.90 here), which is epsilon-LDP only between records
that differ in one attribute, and, for GRR, only when every attribute has the same number of
values (see ``sklearn_ldp/mechanisms/multi_attribute/mechanisms.py``). So it is compared with our
``neighbourhood="attribute"``, which declares the record-level epsilon it attains (= eps'):

* "rsfd / oue_z (attribute)" is the same law as the peer's (eps' = 2.90 for both): equal
  accuracy, and the time ratio is at equal accuracy;
* "rsfd / grr (attribute)" uses the largest eps' that keeps records differing in one
  attribute within e^1 (2.47 here, unequal domains): the peer's 2.90 gives those records a
  ratio e^1.39. For equal accuracy the row "rsfd / grr (peer's eps')" runs ours with the same
  eps' = 2.90 (declared: attribute-level epsilon 1.39), the same law as the peer's.

The time ratio is the peer's seconds (client + server) over ours for the same protocol, CPU
(``process_time``, less sensitive to the other jobs on a shared machine) and wall-clock; the
machine's load average is printed at the start and at the end.

Examples
--------
    python benchmarks/bench_multi_attribute.py
    python benchmarks/bench_multi_attribute.py --users 100000 --no-peers
"""

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import cached_peer, fmt, machine_note, print_table, run_peer  # noqa: E402

from sklearn_ldp.mechanisms.multi_attribute.mechanisms import (  # noqa: E402
    MultiAttributeMechanism,
    rsfd_amplified_epsilon,
    rsfd_attribute_ratio,
)

SHAPE = (2, 3, 5, 8, 10, 15, 20, 30, 40, 50)
# The peer's runs take about a minute each at 10^6 users: kept here so reruns are cheap.
PEER_CACHE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                          "bench_multi_attribute_peer_cache.json")


def make_records(n_users, seed):
    rng = np.random.default_rng(seed)
    columns = []
    for k in SHAPE:
        law = 1.0 / np.arange(1, k + 1) ** 1.1
        columns.append(rng.choice(k, size=n_users, p=law / law.sum()))
    return np.column_stack(columns)


def clip_renormalize(counts, n):
    f = np.clip(counts / n, 0.0, None)
    return n * f / f.sum() if f.sum() > 0 else n * f


def run_ours(mechanism, records, repeats, seed):
    n = records.shape[0]
    truths = [np.bincount(records[:, i], minlength=k) for i, k in enumerate(SHAPE)]
    # Pooled over every cell of every attribute (183 cells), so that the 2- and 3-value
    # attributes (errors of few degrees of freedom) do not dominate.
    analytic = np.concatenate([mechanism.count_variance(i, truth / n, n)
                               for i, truth in enumerate(truths)]).mean() / n
    rows = []
    for repeat in range(repeats):
        rng = np.random.default_rng(seed + repeat)
        wall, cpu = time.perf_counter(), time.process_time()
        reports = mechanism.randomize(records, rng)
        middle_wall, middle_cpu = time.perf_counter(), time.process_time()
        estimates = mechanism.estimate(mechanism.aggregate(reports))
        end_wall, end_cpu = time.perf_counter(), time.process_time()
        rows.append({
            "client": middle_wall - wall, "server": end_wall - middle_wall,
            "client_cpu": middle_cpu - cpu, "cpu": end_cpu - cpu,
            "mse": np.concatenate([(e - t) ** 2 for e, t in zip(estimates, truths,
                                                                 strict=True)]).mean() / n,
            "clipped": np.concatenate([(clip_renormalize(e, n) - t) ** 2 for e, t in
                                       zip(estimates, truths, strict=True)]).mean() / n})
    result = {key: float(np.mean([row[key] for row in rows])) for key in rows[0]}
    # Per run, for the pooled accuracy ratio against the peer and its standard error.
    result["clipped_runs"] = [row["clipped"] for row in rows]
    result["analytic"] = float(analytic)
    ratios = [row["mse"] / analytic for row in rows]
    result["ratio_se"] = float(np.std(ratios, ddof=1) / np.sqrt(len(rows))) if len(rows) > 1 \
        else float("nan")
    return result


PEER_SOURCE = r'''
import json, sys, time
import numpy as np
data = np.load(sys.argv[1])
params = json.loads(sys.argv[2])
records, eps = data["records"], params["epsilon"]
lst_k = [int(k) for k in params["shape"]]
d = len(lst_k)
np.random.seed(params["seed"])
protocol, oracle = params["protocol"], params["oracle"]
if protocol == "rsfd":
    from multi_freq_ldpy.mdim_freq_est import RSpFD_solution as m
    if oracle == "grr":
        client = lambda t: m.RSpFD_GRR_Client(t, lst_k, d, eps)
        server = lambda r: m.RSpFD_GRR_Aggregator_MI(r, lst_k, d, eps)
    else:
        client = lambda t: m.RSpFD_UE_zero_Client(t, lst_k, d, eps, True)
        server = lambda r: m.RSpFD_UE_zero_Aggregator_MI(r, lst_k, d, eps, True)
else:
    module = __import__("multi_freq_ldpy.mdim_freq_est." + protocol.upper() + "_solution",
                        fromlist=["x"])
    P = protocol.upper()
    if oracle == "grr":
        client = lambda t: getattr(module, P + "_GRR_Client")(t, lst_k, d, eps)
        server = lambda r: getattr(module, P + "_GRR_Aggregator_MI")(r, lst_k, d, eps)
    else:
        client = lambda t: getattr(module, P + "_UE_Client")(t, lst_k, d, eps, True)
        server = lambda r: getattr(module, P + "_UE_Aggregator_MI")(r, d, eps, True)
rows = [tuple(int(v) for v in row) for row in records.tolist()]
server([client(t) for t in rows[:2000]])  # warm-up (numba compiles on first call)
c0, w0 = time.process_time(), time.perf_counter()
reports = [client(t) for t in rows]
c1, w1 = time.process_time(), time.perf_counter()
frequencies = server(reports)
c2, w2 = time.process_time(), time.perf_counter()
print(json.dumps({"client": w1 - w0, "server": w2 - w1, "client_cpu": c1 - c0,
                  "cpu": c2 - c0,
                  "frequencies": [np.asarray(f, dtype=float).tolist() for f in frequencies]}))
'''



def settings(epsilon):
    amplified = rsfd_amplified_epsilon(epsilon, len(SHAPE))
    # The attribute-level guarantee that the peer's amplified budget gives RS+FD[GRR] here.
    grr_attribute = math.log(rsfd_attribute_ratio(amplified, SHAPE, "grr"))
    return [
        ("rsfd / grr (attribute)", "rsfd", "grr", "attribute", epsilon, ("rsfd", "grr")),
        ("rsfd / grr (peer's eps')", "rsfd", "grr", "attribute", grr_attribute,
         ("rsfd", "grr")),
        ("rsfd / oue_z (attribute)", "rsfd", "oue_z", "attribute", epsilon, ("rsfd", "oue")),
        ("rsfd / grr (record)", "rsfd", "grr", "record", epsilon, None),
        ("rsfd / oue_z (record)", "rsfd", "oue_z", "record", epsilon, None),
        ("rsfd / oue_r (attribute)", "rsfd", "oue_r", "attribute", epsilon, None),
        ("smp / grr", "smp", "grr", "record", epsilon, ("smp", "grr")),
        ("smp / oue", "smp", "oue", "record", epsilon, ("smp", "oue")),
        ("spl / grr", "spl", "grr", "record", epsilon, ("spl", "grr")),
        ("spl / oue", "spl", "oue", "record", epsilon, ("spl", "oue")),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--peer-repeats", type=int, default=5,
                        help="runs of the peer's RS+FD (its RNG ignores seeds)")
    parser.add_argument("--other-peer-repeats", type=int, default=3,
                        help="runs of the peer's SPL and SMP")
    parser.add_argument("--peer-cache", default=PEER_CACHE,
                        help="JSON file keeping the peer's runs between reruns ('' for none)")
    parser.add_argument("--no-peers", action="store_true")
    args = parser.parse_args()
    args.peer_cache = args.peer_cache or None
    print(machine_note())
    records = make_records(args.users, 0)
    print(f"N = {args.users}, {len(SHAPE)} attributes with {SHAPE} values (Zipf 1.1 each), "
          f"epsilon = {args.epsilon}; the paper's amplified eps' = "
          f"{rsfd_amplified_epsilon(args.epsilon, len(SHAPE)):.4f}.\n")
    rows, ours = [], {}
    for label, protocol, oracle, neighbourhood, epsilon, _ in settings(args.epsilon):
        mechanism = MultiAttributeMechanism(SHAPE, epsilon, protocol=protocol, oracle=oracle,
                                            neighbourhood=neighbourhood)
        result = run_ours(mechanism, records, args.repeats, 10)
        ours[label] = result
        rows.append([label, f"{mechanism.inner_epsilon:.3f}", f"{mechanism.epsilon:.3f}",
                     f"{result['client']:.2f} / {result['server']:.2f}", f"{result['cpu']:.2f}",
                     fmt(result["mse"]), fmt(result["analytic"]),
                     f"{result['mse'] / result['analytic']:.3f} +- {result['ratio_se']:.3f}",
                     fmt(result["clipped"])])
    print(f"Ours ({args.repeats} runs; seconds client / server wall, and CPU):")
    print_table(["protocol / oracle", "inner eps", "record eps", "s", "CPU s", "MSE/N",
                 "analytic/N", "ratio", "MSE/N clipped"], rows)
    if args.no_peers:
        return
    compare_with_peer(args, records, ours)
    print("\n" + machine_note() + " (at the end)")


def mean_and_se(values):
    """Mean of independent runs and its standard error (NaN with a single run)."""
    values = np.asarray(values, dtype=float)
    se = values.std(ddof=1) / math.sqrt(values.size) if values.size > 1 else float("nan")
    return float(values.mean()), float(se)


def peer_runs(args, records, peer):
    """The peer's runs of one protocol (``--peer-repeats`` for RS+FD, the target;
    ``--other-peer-repeats`` for the others), each kept in the cache under its own key: its
    numba RNG ignores seeds, so the runs are independent draws and a rerun reuses them."""
    repeats = args.peer_repeats if peer[0] == "rsfd" else args.other_peer_repeats
    runs = []
    for repeat in range(repeats):
        params = {"protocol": peer[0], "oracle": peer[1], "epsilon": args.epsilon,
                  "shape": list(SHAPE), "seed": repeat}
        result = cached_peer(args.peer_cache,
                             f"v3:{args.users}:{sorted(params.items())}:run{repeat}",
                             lambda params=params: run_peer(PEER_SOURCE, {"records": records},
                                                            params))
        if "error" in result:
            return result
        n = records.shape[0]
        # Its estimates (clipped and renormalized frequencies), scored like ours: pooled
        # over the 183 cells.
        mse = float(np.concatenate([
            (n * np.asarray(f) - np.bincount(records[:, i], minlength=k)) ** 2
            for i, (f, k) in enumerate(zip(result["frequencies"], SHAPE, strict=True))])
            .mean() / n)
        runs.append({"mse": mse, "cpu": result["cpu"],
                     "wall": result["client"] + result["server"]})
    return runs


def compare_with_peer(args, records, ours):
    print(f"\nmulti-freq-ldpy 0.2.5 on the same records ({args.peer_repeats} runs for RS+FD, "
          f"{args.other_peer_repeats} for SPL and SMP; cached in --peer-cache). Accuracy ratio = "
          "our MSE/N after its post-processing (clipped, renormalized) over its MSE/N, pooled "
          "over the runs (ratio of the means, +- its standard error): below 1 + 2 se is 'equal "
          "or better'. Time ratio = its seconds (client + server) over ours, CPU and wall:")
    rows, done = [], {}
    for label, *_, peer in settings(args.epsilon):
        if peer is None:
            continue
        if peer not in done:
            done[peer] = peer_runs(args, records, peer)
        runs, mine = done[peer], ours[label]
        if "error" in runs:
            rows.append([label, "/".join(peer), runs["error"]] + [""] * 6)
            continue
        theirs, theirs_se = mean_and_se([run["mse"] for run in runs])
        own, own_se = mean_and_se(mine["clipped_runs"])
        ratio = own / theirs
        # Delta method for the ratio of two independent means.
        ratio_se = ratio * math.sqrt((own_se / own) ** 2 + (theirs_se / theirs) ** 2) \
            if len(runs) > 1 else float("nan")
        cpu = float(np.mean([run["cpu"] for run in runs]))
        wall = float(np.mean([run["wall"] for run in runs]))
        rows.append([label, "/".join(peer), len(runs), f"{wall:.1f}", f"{cpu:.1f}",
                     fmt(theirs), fmt(own), f"{ratio:.3f} +- {ratio_se:.3f}",
                     f"{cpu / mine['cpu']:.0f}x / {wall / (mine['client'] + mine['server']):.0f}x"])
    print_table(["ours", "peer", "its runs", "its wall s", "its CPU s", "its MSE/N",
                 "ours MSE/N (clipped)", "accuracy ratio", "time ratio CPU / wall"], rows)

if __name__ == "__main__":
    main()
