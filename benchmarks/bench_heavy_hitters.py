"""Benchmark of heavy hitters (PEM, TreeHist) and sketches (CMS, HCMS) against pure-LDP.

Data (issue 18): N users (default 10^6) holding 32-bit values: 20 planted values with
frequencies evenly spaced from 3% down to 1%, the other 60% of the users drawn from a
Zipf(1.1)-Mandelbrot background over 10^5 random 32-bit values, ``P(rank r) ~ (r + r0)^-1.1``
with the offset ``r0`` set so that the largest background value holds 0.5% of the users:
the planted values are the true top 20 (checked, and printed).

* **Heavy hitters** (``PrefixHeavyHitters``, top 20, defaults derived from N and epsilon) at
  epsilon = 4 and 2: recall and precision of the 20 values returned, against the planted
  ones, and the end-to-end time (encode + randomize + identify), wall-clock and CPU. Targets
  at epsilon = 4: recall >= 0.95, precision >= 0.9, <= 10 s.
* **Sketches** (``SketchFrequencyOracle``, CMS and HCMS, default sizes for N and epsilon):
  the estimated counts of 40 given candidates (the 20 planted values and the 20 largest
  background values) over ``--sketch-repeats`` collections, each with fresh randomness and a
  fresh public hash seed (the estimate is unbiased over both): the empirical root mean
  squared error against the analytic standard error that ``estimate_counts`` reports (target:
  within 10%), pooled over the candidates, with the smallest and largest per-candidate ratio.
* **Public API**: the same heavy-hitter task through ``LDPEncoder`` ->
  ``HeavyHitterEstimator`` from a DataFrame column (one run), to show the glue's overhead.
* **pure-LDP** 1.2.0 (run in its own virtual environment, ``/work/peers-venv``, in a
  subprocess, on the same users): PEM and TreeHist with its Apple CMS inside (32 hashes x
  1024, the configuration of its own experiment script; with its default OLH oracle PEM cannot
  run 32-bit values) and PEM with HCMS inside, top 20 (PEM: start_length 2, fragment_length 5,
  so 6 rounds like ours); its CMS and HCMS frequency oracles with our sketch sizes, on the
  same candidates. One run each (pure-LDP privatizes one user at a
  time in Python). Time ratios are pure-LDP's CPU seconds over ours for the same task.

Wall-clock times on a shared 2-core machine are noisy (other jobs): CPU seconds are printed
next to them, and the load average at the start.

Examples
--------
    python benchmarks/bench_heavy_hitters.py
    python benchmarks/bench_heavy_hitters.py --users 100000 --seeds 1 --no-peers
    python benchmarks/bench_heavy_hitters.py --peer-users 100000   # peers on a subsample
"""

import argparse
import math
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import fmt, machine_note, print_table, run_peer, timed  # noqa: E402

from sklearn_ldp import LDPEncoder  # noqa: E402
from sklearn_ldp.estimators.heavy_hitters import HeavyHitterEstimator  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.values import decode_values, encode_values  # noqa: E402

BIT_LENGTH = 32
N_PLANTED = 20
PLANTED = np.linspace(0.03, 0.01, N_PLANTED)
N_BACKGROUND = 10**5
TOP_BACKGROUND = 0.005


def background_law(size, mass, top, exponent=1.1):
    """Zipf-Mandelbrot probabilities ``~ (r + r0)^-exponent`` summing to ``mass``, with ``r0``
    found by bisection so that the largest is ``top``."""
    ranks = np.arange(1, size + 1, dtype=float)

    def largest(offset):
        weights = (ranks + offset) ** -exponent
        return mass * weights[0] / weights.sum()

    low, high = 0.0, float(size)
    for _ in range(100):
        middle = (low + high) / 2
        low, high = (middle, high) if largest(middle) > top else (low, middle)
    weights = (ranks + high) ** -exponent
    return mass * weights / weights.sum()


def make_data(n_users, seed):
    """``(values, planted, background)``: each user's value and the value lists by rank."""
    rng = np.random.default_rng(seed)
    ids = rng.choice(2**BIT_LENGTH, size=N_PLANTED + N_BACKGROUND, replace=False)
    law = np.concatenate([PLANTED, background_law(N_BACKGROUND, 1 - PLANTED.sum(),
                                                  TOP_BACKGROUND)])
    values = ids[rng.choice(law.size, size=n_users, p=law / law.sum())].astype(np.int64)
    return values, ids[:N_PLANTED].astype(np.int64), ids[N_PLANTED:].astype(np.int64)


def check_top(values, planted):
    distinct, counts = np.unique(values, return_counts=True)
    order = np.argsort(-counts, kind="stable")
    top = set(distinct[order[:N_PLANTED]].tolist())
    return top == set(planted.tolist()), counts[order[N_PLANTED]] / values.size


# ---------------------------------------------------------------------- ours
def run_finder(values, planted, protocol, epsilon, seed):
    rng = np.random.default_rng(seed + 1000)
    wall, cpu = time.perf_counter(), time.process_time()
    finder = PrefixHeavyHitters(BIT_LENGTH, epsilon, protocol=protocol, n_candidates=N_PLANTED,
                                n_users=values.size)
    words, encode_wall, _ = timed(encode_values, values, BIT_LENGTH)
    reports, randomize_wall, _ = timed(finder.randomize, words, rng)
    found, identify_wall, _ = timed(finder.identify, reports)
    total_wall, total_cpu = time.perf_counter() - wall, time.process_time() - cpu
    got = set(decode_values(found["values"], BIT_LENGTH, False).tolist())
    hits = len(got & set(planted.tolist()))
    truth = {v: c for v, c in zip(*np.unique(values, return_counts=True), strict=True)}
    decoded = decode_values(found["values"], BIT_LENGTH, False).tolist()
    z = [(count - truth.get(v, 0)) / error for v, count, error in
         zip(decoded, found["counts"], found["std_errors"], strict=True)]
    return {"recall": hits / N_PLANTED, "precision": hits / max(len(got), 1),
            "encode": encode_wall, "randomize": randomize_wall, "identify": identify_wall,
            "wall": total_wall, "cpu": total_cpu, "eta": finder.extension_bits,
            "rounds": finder.n_rounds, "z_rms": float(np.sqrt(np.mean(np.square(z))))}


def run_api(values, planted, strategy, epsilon, seed):
    """The same task through the public API: LDPEncoder(categories={"id": 32}) ->
    HeavyHitterEstimator(top_k=20), from a DataFrame column."""
    frame = pd.DataFrame({"id": values})
    wall, cpu = time.perf_counter(), time.process_time()
    encoder = LDPEncoder(categories={"id": BIT_LENGTH}, strategy=strategy, epsilon=epsilon,
                         n_candidates=N_PLANTED, n_users=values.size, random_state=seed + 2000)
    reports, transform_wall, _ = timed(encoder.fit_transform, frame)
    estimator, fit_wall, _ = timed(HeavyHitterEstimator(top_k=N_PLANTED).fit, reports)
    total_wall, total_cpu = time.perf_counter() - wall, time.process_time() - cpu
    got = set(estimator.heavy_hitters_["value"].tolist())
    hits = len(got & set(planted.tolist()))
    return {"recall": hits / N_PLANTED, "precision": hits / max(len(got), 1),
            "transform": transform_wall, "fit": fit_wall, "wall": total_wall,
            "cpu": total_cpu}


def run_sketch(values, candidates, truth, hadamard, epsilon, repeats, seed):
    words, cand = encode_values(values, BIT_LENGTH), encode_values(candidates, BIT_LENGTH)
    estimates, errors, times = [], [], []
    for repeat in range(repeats):
        rng = np.random.default_rng(seed + 7919 * repeat)
        sketch = SketchFrequencyOracle(epsilon, hadamard=hadamard, n_users=values.size,
                                       hash_seed=int(rng.integers(2**63)))
        reports, randomize_wall, randomize_cpu = timed(sketch.randomize, words, rng)
        statistic, aggregate_wall, aggregate_cpu = timed(sketch.aggregate, reports)
        (counts, error), estimate_wall, estimate_cpu = timed(sketch.estimate_counts, statistic,
                                                             cand)
        estimates.append(counts)
        errors.append(error)
        times.append((randomize_wall, aggregate_wall + estimate_wall,
                      randomize_cpu + aggregate_cpu + estimate_cpu))
    estimates, errors = np.array(estimates), np.array(errors)
    mse = np.mean((estimates - truth) ** 2, axis=0)
    analytic = np.mean(errors ** 2, axis=0)
    per_candidate = np.sqrt(mse / analytic)
    times = np.array(times).mean(axis=0)
    return {"k": sketch.n_hashes, "m": sketch.width, "ratio": math.sqrt(mse.sum() / analytic.sum()),
            "ratio_se": 1 / math.sqrt(2 * repeats * len(candidates)),
            "min": per_candidate.min(), "max": per_candidate.max(),
            "mse_n": mse.mean() / values.size, "analytic_n": analytic.mean() / values.size,
            "randomize": times[0], "server": times[1], "cpu": times[2]}


# ---------------------------------------------------------------------- pure-LDP
PEER_SOURCE = r'''
import json, random, sys, time, types
import numpy as np
# pure_ldp imports its RAPPOR server (unused here), which imports scikit-learn and
# statsmodels; the peer environment has neither: empty stand-ins let the package import.
for name in ("sklearn", "sklearn.linear_model", "sklearn.feature_selection", "statsmodels",
             "statsmodels.api"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["sklearn.linear_model"].Lasso = sys.modules["sklearn.linear_model"].ElasticNet = None
sys.modules["sklearn.linear_model"].LinearRegression = None
data = np.load(sys.argv[1])
params = json.loads(sys.argv[2])
values = data["values"]
random.seed(params["seed"]); np.random.seed(params["seed"])
from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
eps, task = params["epsilon"], params["task"]
strings = [format(int(v), "032b") for v in values]
cpu0, wall0 = time.process_time(), time.perf_counter()
privatise = aggregate = 0.0
def clock():
    return time.perf_counter()
if task in ("pem", "treehist"):
    inner = params["inner"]
    server_fo = CMSServer(eps / (2 if task == "treehist" else 1), params["k"], params["m"],
                          is_hadamard=inner == "hcms")
    client_fo = CMSClient(eps / (2 if task == "treehist" else 1), server_fo.get_hash_funcs(),
                          params["m"], is_hadamard=inner == "hcms")
    if task == "pem":
        from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer
        client = PEMClient(eps, params["start"], 32, params["fragment"], fo_client=client_fo)
        server = PEMServer(eps, params["start"], 32, params["fragment"], fo_server=server_fo)
    else:
        from pure_ldp.heavy_hitters.treehistogram import TreeHistClient, TreeHistServer
        client = TreeHistClient(eps, 1, 32, fo_client=client_fo)
        server = TreeHistServer(eps, 32, 1, fo_server=server_fo)
    for s in strings:  # one user at a time (its memory-safe mode: reports are m floats each)
        t0 = clock(); report = client.privatise(s); t1 = clock()
        server.aggregate(report); aggregate += clock() - t1; privatise += t1 - t0
    t0 = clock()
    found, frequencies = server.find_heavy_hitters(k=20)
    estimate = clock() - t0
    found_values = [int(x.replace("*", ""), 2) if x.replace("*", "") else -1 for x in found]
    planted = set(int(v) for v in data["planted"])
    hits = len(planted & set(found_values))
    result = {"recall": hits / 20, "precision": hits / max(len(set(found_values)), 1)}
else:
    server = CMSServer(eps, params["k"], params["m"], is_hadamard=task == "hcms")
    client = CMSClient(eps, server.get_hash_funcs(), params["m"], is_hadamard=task == "hcms")
    for s in values.tolist():
        t0 = clock(); report = client.privatise(s); t1 = clock()
        server.aggregate(report); aggregate += clock() - t1; privatise += t1 - t0
    t0 = clock()
    counts = np.array([server.estimate(c, suppress_warnings=True)
                       for c in data["candidates"].tolist()])
    estimate = clock() - t0
    result = {"mse_n": float(np.mean((counts - data["truth"]) ** 2)) / len(values)}
result.update({"privatise": privatise, "server": aggregate + estimate,
               "cpu": time.process_time() - cpu0, "wall": time.perf_counter() - wall0,
               "users": len(values)})
print(json.dumps(result))
'''


def peer(task, values, planted, epsilon, scale, **params):
    arrays = {"values": values, "planted": planted}
    arrays.update({key: params.pop(key) for key in ("candidates", "truth") if key in params})
    result = run_peer(PEER_SOURCE, arrays, {"task": task, "epsilon": epsilon, "seed": 0,
                                           **params})
    if "error" not in result and scale != 1:  # extrapolated from a subsample, linearly
        for key in ("privatise", "server", "cpu", "wall"):
            result[key] *= scale
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--seeds", type=int, default=3, help="data sets / runs per setting")
    parser.add_argument("--sketch-repeats", type=int, default=10)
    parser.add_argument("--epsilons", default="4,2")
    parser.add_argument("--no-peers", action="store_true")
    parser.add_argument("--no-treehist-peer", action="store_true")
    parser.add_argument("--peer-users", type=int, default=None,
                        help="run the peers on the first M users, times scaled by N / M")
    parser.add_argument("--peer-sections", default="hh,sketch",
                        help="which peer tables: hh (PEM, TreeHist), sketch (CMS, HCMS)")
    args = parser.parse_args()
    epsilons = [float(e) for e in args.epsilons.split(",")]
    print(machine_note())
    values, planted, background = make_data(args.users, 0)
    exact, next_share = check_top(values, planted)
    print(f"N = {args.users}, 32-bit values; planted 20 at 3% ... 1% are the true top 20: "
          f"{exact}; the 21st value holds {100 * next_share:.3f}% of the users.\n")

    print("Heavy hitters, top 20 (mean over seeds; seconds wall / CPU, encode + randomize + "
          "identify):")
    ours = {}
    rows = []
    for protocol in ("pem", "treehist"):
        for epsilon in epsilons:
            runs = []
            for seed in range(args.seeds):
                data = (values, planted) if seed == 0 else make_data(args.users, seed)[:2]
                runs.append(run_finder(*data, protocol, epsilon, seed))
            mean = {key: float(np.mean([run[key] for run in runs])) for key in runs[0]}
            ours[protocol, epsilon] = mean
            rows.append([protocol, epsilon, f"{mean['eta']:.0f} / {mean['rounds']:.0f}",
                         fmt(mean["recall"]), fmt(min(run["recall"] for run in runs)),
                         fmt(mean["precision"]), fmt(mean["z_rms"]),
                         f"{mean['randomize']:.2f}", f"{mean['identify']:.2f}",
                         f"{mean['wall']:.2f}", f"{mean['cpu']:.2f}"])
    print_table(["protocol", "eps", "eta / rounds", "recall", "min recall", "precision",
                 "count z rms", "randomize s", "identify s", "total s", "CPU s"], rows)

    print("\nThe same through the public API, LDPEncoder(categories={'id': 32}).fit_transform("
          "frame) -> HeavyHitterEstimator(top_k=20).fit (first data set, one run):")
    rows = []
    for protocol in ("pem", "treehist"):
        for epsilon in epsilons:
            api = run_api(values, planted, protocol, epsilon, 0)
            rows.append([protocol, epsilon, fmt(api["recall"]), fmt(api["precision"]),
                         f"{api['transform']:.2f}", f"{api['fit']:.2f}", f"{api['wall']:.2f}",
                         f"{api['cpu']:.2f}"])
    print_table(["strategy", "eps", "recall", "precision", "transform s", "fit s", "total s",
                 "CPU s"], rows)

    # Candidates: the planted values and the 20 largest background values.
    candidates = np.concatenate([planted, background[:N_PLANTED]])
    distinct, counts = np.unique(values, return_counts=True)
    truth = counts[np.searchsorted(distinct, candidates)].astype(float)
    print(f"\nSketches: 40 given candidates, {args.sketch_repeats} collections each with a fresh "
          "hash seed; empirical RMSE / analytic standard error (pooled; per-candidate range):")
    rows, sketches = [], {}
    for hadamard in (False, True):
        for epsilon in epsilons:
            result = run_sketch(values, candidates, truth, hadamard, epsilon,
                                args.sketch_repeats, 0)
            sketches[hadamard, epsilon] = result
            rows.append(["HCMS" if hadamard else "CMS", epsilon, f"{result['k']} x {result['m']}",
                         f"{result['ratio']:.3f} +- {result['ratio_se']:.3f}",
                         f"{result['min']:.2f} .. {result['max']:.2f}",
                         fmt(result["mse_n"]), fmt(result["analytic_n"]),
                         f"{result['randomize']:.2f}", f"{result['server']:.2f}",
                         f"{result['cpu']:.2f}"])
    print_table(["sketch", "eps", "k x m", "RMSE / SE", "per candidate", "MSE/N",
                 "analytic/N", "randomize s", "agg+est s", "CPU s"], rows)

    if args.no_peers:
        return
    sub = values if args.peer_users is None else values[:args.peer_users]
    scale = values.size / sub.size
    note = "" if scale == 1 else f" (on {sub.size} users, times x {scale:g}: extrapolated)"
    print(f"\npure-LDP 1.2.0 on the same users{note}; ratio = its CPU s / ours:")
    rows = []
    # pure-LDP's PEM extends its candidates by fragment_length bits from start_length on and
    # needs start + rounds * fragment == 32 exactly (otherwise its last candidates are longer
    # than the users' strings and none matches): 6 rounds of 5 bits after 2, as many rounds
    # as ours.
    fragment = 5
    start = BIT_LENGTH - fragment * math.ceil((BIT_LENGTH - math.ceil(math.log2(N_PLANTED)))
                                              / fragment)
    for epsilon in epsilons if "hh" in args.peer_sections else []:
        for task, inner in (("pem", "cms"), ("pem", "hcms"), ("treehist", "cms")):
            if task == "treehist" and args.no_treehist_peer:
                continue
            result = peer(task, sub, planted, epsilon, scale, inner=inner, k=32, m=1024,
                          start=start, fragment=fragment)
            mine = ours[task, epsilon]
            if "error" in result:
                rows.append([f"{task} ({inner} inside)", epsilon, result["error"]] + [""] * 6)
                continue
            rows.append([f"{task} ({inner} inside)", epsilon, fmt(result["recall"]),
                         fmt(result["precision"]), f"{result['privatise']:.1f}",
                         f"{result['server']:.1f}", f"{result['cpu']:.1f}",
                         f"{mine['recall']:.2f} / {mine['precision']:.2f}",
                         f"{result['cpu'] / mine['cpu']:.1f}x"])
    if rows:
        print_table(["pure-LDP", "eps", "recall", "precision", "privatise s", "server s",
                     "CPU s", "ours recall / prec.", "time ratio"], rows)
    rows = []
    if "sketch" not in args.peer_sections:
        return
    truth_sub = truth if scale == 1 else np.array(
        [np.sum(sub == c) for c in candidates], dtype=float)
    for hadamard in (False, True):
        for epsilon in epsilons:
            mine = sketches[hadamard, epsilon]
            task = "hcms" if hadamard else "cms"
            result = peer(task, sub, planted, epsilon, scale, k=mine["k"], m=mine["m"],
                          candidates=candidates, truth=truth_sub)
            if "error" in result:
                rows.append([task.upper(), epsilon, result["error"]] + [""] * 6)
                continue
            rows.append([task.upper(), epsilon, f"{mine['k']} x {mine['m']}",
                         fmt(result["mse_n"]), fmt(mine["mse_n"]),
                         f"{result['privatise']:.1f}", f"{result['server']:.1f}",
                         f"{result['cpu']:.1f}", f"{result['cpu'] / mine['cpu']:.1f}x"])
    print_table(["pure-LDP", "eps", "k x m", "its MSE/N (1 run)", "ours MSE/N",
                 "privatise s", "server s", "CPU s", "time ratio"], rows)


if __name__ == "__main__":
    main()
