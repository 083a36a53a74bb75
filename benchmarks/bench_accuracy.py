"""Accuracy benchmark (issue 17): post-processing options, the peers, WFM, and two checks.

Sections (all by default; pick some with ``--sections``):

``postprocess``
    Every frequency oracle at ``--users`` N, ``--cells`` d, ``--epsilon`` (defaults 10^5,
    1024, 1) on Zipf(1.1) data (one fixed draw of the users, seed ``DATA_SEED``), ``--repeats``
    collections (noise seeds 0, 1, ...). For each ``WorkloadEstimator(postprocess=...)``
    option (none, clip, norm_sub, simplex, wnnls, base_cut, em) the measured
    ``MSE*N = N * mean_j (x_hat_j / N - x_j / N)^2`` (per cell, in fractions, times N; the
    unit of ``/work/shared/reference/peer_figures.md``), averaged over the collections, and
    its ratio to the unbiased estimate's (``none``). ``wnnls`` on the histogram workload is
    the same problem as ``clip``, and ``norm_sub`` the same as ``simplex`` (both listed).
``peers``
    Every frequency oracle against the pure-LDP and multi-freq-ldpy implementations, on the
    same users and the same list of seeds (each library draws its own noise from them). The
    peers run in a subprocess of ``--peers-python`` (a separate virtual environment: they need
    numpy < 2, and they are never imported by the package). pure-LDP's estimators are
    unbiased: compared with our unbiased estimate. multi-freq-ldpy's ``MI`` clips and
    renormalizes, and its ``IBU`` is plain EM on the support counts' Poisson model: both are
    compared with our ``em``. Pure-Python peers are slow, so some rows use fewer users
    (``--peer-users-slow``) and fewer repetitions; ours is always measured on the same users.
``wfm``
    ``strategy="optimized"`` against the workload factorization mechanism's figures recorded
    in ``peer_figures.md`` (WFM is not packaged): worst-case per-user variance at eps = 1 of
    prefix and all-range over 128 cells and all 2-way marginals of 4 x 4 x 4 x 4, recomputed
    here from the returned strategy with its optimal reconstruction.
``known_total``
    InpRR and MargRR: our predicted total variation (the estimator uses the known total N)
    against the thesis formula (which does not), and a simulation of the measured TV.
``composite``
    For unary encoding the statistic keeps only the support counts, so our EM maximizes
    their composite likelihood. Against the exact maximum-likelihood estimate from the
    individual reports (dense EM over all 2^n bit vectors, n = 8): distance in standard
    deviations and squared-error ratios.

Timing: the defaults take about 10-20 minutes on a loaded 2-core machine, most of it in the
peers (pure-Python clients, and multi-freq-ldpy's dense IBU with 10,000 iterations).

Examples
--------
    python benchmarks/bench_accuracy.py
    python benchmarks/bench_accuracy.py --sections postprocess --repeats 5
    python benchmarks/bench_accuracy.py --sections peers --peers-python /work/peers-venv/bin/python
"""

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

import sklearn_ldp  # noqa: E402
from sklearn_ldp import LDPEncoder, WorkloadEstimator, workloads  # noqa: E402
from sklearn_ldp.mechanisms._base.mechanism import mechanism_class  # noqa: E402
from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism  # noqa: E402
from sklearn_ldp.mechanisms.oracles.em import em_frequencies  # noqa: E402  (composite)
from sklearn_ldp.reports import AggregatedReports  # noqa: E402

ORACLES = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
           "subset_selection")
OPTIONS = ("none", "clip", "norm_sub", "simplex", "wnnls", "base_cut", "em")
SECTIONS = ("postprocess", "peers", "wfm", "known_total", "composite")
# The users' types are drawn once with this seed; the noise of collection r uses seed r
# (never the data's seed: a shared stream correlates the users' types with their noise).
DATA_SEED = 20240
NOISE_OFFSET = 1000
# WFM's recorded worst-case per-user variances (peer_figures.md, 5 seeds, median), eps = 1.
WFM_FIGURES = {"prefix, n = 128": 1899.9, "all-range, n = 128": 181280.0,
               "2-way marginals, 4 x 4 x 4 x 4": 2057.6}


def zipf_types(n_users, n_cells, seed=DATA_SEED):
    weights = 1.0 / np.arange(1, n_cells + 1) ** 1.1
    return np.random.default_rng(seed).choice(n_cells, size=n_users, p=weights / weights.sum())


def statistic_of(mechanism, types, seed):
    """The aggregate of one collection: exact simulation where the oracle has one."""
    rng = np.random.default_rng(NOISE_OFFSET + seed)
    counts = np.bincount(types, minlength=mechanism.n_inputs)
    try:
        return mechanism.simulate_statistic(counts, rng)
    except NotImplementedError:
        return mechanism.aggregate(mechanism.randomize(types, rng))


def mse_n(estimate, counts):
    """``N * mean_j (x_hat_j / N - x_j / N)^2``."""
    n_users = counts.sum()
    return float(np.mean((np.asarray(estimate) - counts) ** 2) / n_users)


def environment():
    load = " ".join(f"{v:.2f}" for v in os.getloadavg())
    print(f"# sklearn_ldp {getattr(sklearn_ldp, '__version__', '?')}, numpy {np.__version__}, "
          f"python {platform.python_version()}; load average at start {load}")


# ---------------------------------------------------------------------------- postprocess
def run_postprocess(args):
    print(f"\n## post-processing options: N = {args.users}, d = {args.cells}, "
          f"eps = {args.epsilon}, Zipf(1.1), {args.repeats} collections; MSE*N (ratio to none)")
    types = zipf_types(args.users, args.cells)
    counts = np.bincount(types, minlength=args.cells)
    rows, results = [], {}
    for name in args.oracles:
        mechanism = mechanism_class(name)(args.cells, args.epsilon)
        errors = {option: [] for option in OPTIONS}
        em_seconds, em_iterations = [], []
        for seed in range(args.repeats):
            reports = AggregatedReports(statistic_of(mechanism, types, seed), mechanism)
            for option in OPTIONS:
                started = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # an EM that stops at max_iter is counted
                    estimator = WorkloadEstimator(postprocess=option).fit(reports)
                if option == "em":
                    em_seconds.append(time.perf_counter() - started)
                    em_iterations.append(estimator.postprocess_info_["n_iter"])
                errors[option].append(mse_n(estimator.data_vector_, counts))
        means = {option: float(np.mean(errors[option])) for option in OPTIONS}
        # Largest relative standard error of a mean over the options (collections vary).
        spread = max(np.std(errors[o], ddof=1) / math.sqrt(len(errors[o])) / means[o]
                     for o in OPTIONS) if args.repeats > 1 else float("nan")
        results[name] = means
        best = min(OPTIONS[1:], key=means.get)
        rows.append([name] + [f"{means[o]:.3f}" + ("" if o == "none" else
                                                   f" ({means[o] / means['none']:.3f})")
                              for o in OPTIONS]
                    + [best, f"{100 * spread:.1f}", f"{np.mean(em_seconds):.2f}",
                       f"{np.mean(em_iterations):.0f}"])
        print(f"# {name} done", flush=True)
    print_table(["oracle", *OPTIONS, "best", "max se %", "em s", "em iter"], rows)
    print("# em iter 0: closed form (support oracles); base_cut: alpha = 0.05; 'max se %': "
          "the largest standard error of a mean in the row, relative to that mean; 'em s': "
          "the whole WorkloadEstimator fit with postprocess='em'.")
    return results


# ---------------------------------------------------------------------------- peers
PEER_WORKER = r'''
import json, os, random, sys, time, types
import numpy as np
spec = json.loads(sys.argv[1])
data = np.load(spec["data"])[: spec["users"]]
d, eps = spec["cells"], spec["epsilon"]
peer = spec["peer"]
if peer.startswith("pure-LDP"):
    import pure_ldp
    # pure_ldp.frequency_oracles/__init__ imports RAPPOR, which needs scikit-learn (absent
    # from the peers' venv): register the package without running it, import the oracles.
    package = types.ModuleType("pure_ldp.frequency_oracles")
    package.__path__ = [os.path.join(os.path.dirname(pure_ldp.__file__), "frequency_oracles")]
    sys.modules["pure_ldp.frequency_oracles"] = package
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    from pure_ldp.frequency_oracles.hadamard_response import (HadamardResponseClient,
                                                              HadamardResponseServer)
    from pure_ldp.frequency_oracles.hadamard_mechanism import HadamardMechClient, HadamardMechServer
    def pair():
        if peer == "pure-LDP DE":
            return DEClient(eps, d), DEServer(eps, d)
        if peer in ("pure-LDP SUE", "pure-LDP OUE"):
            oue = peer.endswith("OUE")
            return UEClient(eps, d, use_oue=oue), UEServer(eps, d, use_oue=oue)
        if peer == "pure-LDP OLH":
            return LHClient(eps, d, use_olh=True), LHServer(eps, d, use_olh=True)
        if peer == "pure-LDP BLH":
            return LHClient(eps, d, g=2), LHServer(eps, d, g=2)
        if peer == "pure-LDP HR":
            server = HadamardResponseServer(eps, d)
            return HadamardResponseClient(eps, d, server.get_hash_funcs()), server
        if peer == "pure-LDP HM":
            return HadamardMechClient(eps, d, t=1), HadamardMechServer(eps, d, t=1)
        raise ValueError(peer)
else:
    from multi_freq_ldpy.pure_frequency_oracles import GRR, LH, SS, UE
    from numba import njit

    @njit
    def seed_numba(seed):
        # multi-freq-ldpy's clients are numba-compiled: their np.random is numba's own
        # generator, which np.random.seed called from Python does not reach.
        np.random.seed(seed)
estimates, seconds = [], []
for seed in spec["seeds"]:
    random.seed(seed)
    np.random.seed(seed)
    if not peer.startswith("pure-LDP"):
        seed_numba(seed)
    started = time.perf_counter()
    if peer.startswith("pure-LDP"):
        client, server = pair()
        for value in data:  # pure-LDP items are 1..d (its default index_mapper is x - 1)
            server.aggregate(client.privatise(int(value) + 1))
        counts = np.array(server.estimate_all(range(1, d + 1), suppress_warnings=True))
        estimate = counts / len(data)
    else:
        name, estimator = peer.split()[1:3]
        module = {"GRR": GRR, "OUE": UE, "SS": SS, "OLH": LH}[name]
        prefix = {"GRR": "GRR", "OUE": "UE", "SS": "SS", "OLH": "LH"}[name]
        client = getattr(module, prefix + "_Client")
        extra = {"optimal": True} if name in ("OUE", "OLH") else {}
        reports = [client(int(value), d, eps, **extra) for value in data]
        aggregate = getattr(module, f"{prefix}_Aggregator_{estimator}")
        if name == "OUE" and estimator == "MI":
            estimate = aggregate(reports, eps, **extra)
        else:
            estimate = aggregate(reports, d, eps, **extra)
    seconds.append(time.perf_counter() - started)
    estimates.append(np.asarray(estimate, dtype=float))
np.savez(spec["out"], estimates=np.array(estimates), seconds=np.array(seconds))
'''

# (peer, our oracle, what it is compared with: "none" or "em", slow: use --peer-users-slow)
PEERS = (
    ("pure-LDP DE", "randomized_response", "none", False),
    ("pure-LDP SUE", "rappor", "none", False),
    ("pure-LDP OUE", "oue", "none", False),
    ("pure-LDP OLH", "olh", "none", True),
    ("pure-LDP BLH", "blh", "none", True),
    ("pure-LDP HR", "hadamard", "none", False),
    ("pure-LDP HM", "hrr", "none", False),
    ("multi-freq GRR MI", "randomized_response", "em", True),
    ("multi-freq GRR IBU", "randomized_response", "em", True),
    ("multi-freq OUE MI", "oue", "em", True),
    ("multi-freq OUE IBU", "oue", "em", True),
    ("multi-freq SS MI", "subset_selection", "em", True),
    ("multi-freq SS IBU", "subset_selection", "em", True),
    ("multi-freq OLH MI", "olh", "em", True),
)


def run_peers(args):
    print(f"\n## peers: d = {args.cells}, eps = {args.epsilon}, Zipf(1.1), same users and seeds "
          f"(fast peers: N = {args.peer_users}, {args.peer_repeats} seeds; slow ones: N = "
          f"{args.peer_users_slow}, {args.peer_repeats_slow} seed); MSE*N")
    if not os.path.exists(args.peers_python):
        print(f"# {args.peers_python} not found: section skipped")
        return {}
    types = zipf_types(max(args.peer_users, args.peer_users_slow), args.cells)
    rows, results = [], {}
    with tempfile.TemporaryDirectory() as folder:
        data_path = os.path.join(folder, "types.npy")
        np.save(data_path, types)
        for peer, oracle, ours_option, slow in PEERS:
            if args.peer_filter and not any(f in peer for f in args.peer_filter):
                continue
            users = args.peer_users_slow if slow else args.peer_users
            seeds = list(range(args.peer_repeats_slow if slow else args.peer_repeats))
            out = os.path.join(folder, "out.npz")
            spec = {"data": data_path, "users": users, "cells": args.cells,
                    "epsilon": args.epsilon, "peer": peer, "seeds": seeds, "out": out}
            started = time.perf_counter()
            done = subprocess.run([args.peers_python, "-c", PEER_WORKER, json.dumps(spec)],
                                  capture_output=True, text=True)
            if done.returncode != 0:
                print(f"# {peer} failed: {done.stderr.strip().splitlines()[-1:]}")
                continue
            result = np.load(out)
            counts = np.bincount(types[:users], minlength=args.cells)
            peer_error = float(np.mean([mse_n(users * e, counts) for e in result["estimates"]]))
            mechanism = mechanism_class(oracle)(args.cells, args.epsilon)
            ours = {"none": [], "em": [], "base_cut": []}
            for seed in seeds:
                reports = AggregatedReports(statistic_of(mechanism, types[:users], seed),
                                            mechanism)
                for option in ours:
                    estimator = WorkloadEstimator(postprocess=option).fit(reports)
                    ours[option].append(mse_n(estimator.data_vector_, counts))
            ours = {option: float(np.mean(values)) for option, values in ours.items()}
            mine = ours[ours_option]
            results[peer] = (mine, peer_error)
            rows.append([peer, oracle, users, len(seeds), f"{peer_error:.3f}",
                         ours_option, f"{mine:.3f}", f"{mine / peer_error:.3f}",
                         f"{ours['none']:.3f}", f"{ours['base_cut']:.3f}",
                         f"{ours['base_cut'] / peer_error:.3f}",
                         f"{np.mean(result['seconds']):.1f}"])
            print(f"# {peer} done in {time.perf_counter() - started:.0f} s", flush=True)
    print_table(["peer", "ours", "N", "seeds", "peer MSE*N", "vs ours", "ours MSE*N",
                 "ours/peer", "ours none", "ours base_cut", "base_cut/peer", "peer s"], rows)
    print("# ours/peer < 1: ours more accurate. 'vs ours' = which of our estimates is compared: "
          "the unbiased one (none) with pure-LDP's unbiased estimators, the EM one (em) with "
          "multi-freq-ldpy's clipped-and-renormalized (MI) and IBU estimators (base_cut shown "
          "too). Relative standard error of an unbiased row's MSE*N: about sqrt(2 / (d seeds)),"
          " 3% with 2 seeds and 4.4% with 1. 'peer s': the peer's privatize + aggregate + "
          "estimate, per seed (pure Python: hence the smaller N of the slow rows).")
    return results


# ---------------------------------------------------------------------------- WFM
def run_wfm(args):
    print(f"\n## strategy='optimized' against WFM (recorded figures), eps = 1, seeds "
          f"{list(range(args.wfm_seeds))}; worst-case per-user variance")
    cases = {
        "prefix, n = 128": ({"x": list(range(128))}, workloads.prefix),
        "all-range, n = 128": ({"x": list(range(128))}, workloads.all_range),
        "2-way marginals, 4 x 4 x 4 x 4": ({f"a{i}": list(range(4)) for i in range(4)},
                                           lambda dom: workloads.marginals(dom, k=2)),
    }
    rows = []
    for label, (domain, build) in cases.items():
        W = build(domain)
        gram = W.gram()
        worst, seconds = [], []
        for seed in range(args.wfm_seeds):
            started = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # ConvergenceWarning at the iteration cap
                encoder = LDPEncoder(categories=domain, strategy="optimized", workload=W,
                                     epsilon=1.0, random_state=seed).fit()
            seconds.append(time.perf_counter() - started)
            worst.append(float(encoder.mechanism_.per_user_variance(gram).max()))
        median = float(np.median(worst))
        rows.append([label, f"{WFM_FIGURES[label]:.1f}", f"{median:.1f}",
                     f"{WFM_FIGURES[label] / median:.3f}", f"{np.mean(seconds):.0f}"])
        print(f"# {label} done", flush=True)
    print_table(["workload", "WFM (recorded)", "ours (median)", "WFM / ours", "ours s"], rows)
    print("# WFM / ours >= 1.15 is the issue's aim (ours at least 15% ahead).")


# ---------------------------------------------------------------------------- known total
def thesis_tv(name, d, k, n_users, epsilon):
    """Thesis (digest 3.2) cell variances for binary columns, uniform data, as a TV."""
    e = math.exp(epsilon / 2)
    unary = e / (e - 1) ** 2
    cells = 2**k
    if name == "inp_rr":
        variance = 2 ** (d - k) * unary / n_users
    else:
        m = 1.0 / cells
        variance = (unary + m * (1 - m)) / (n_users / math.comb(d, k))
    return 0.5 * math.sqrt(2 / math.pi) * cells * math.sqrt(variance)


def run_known_total(args):
    n_users, epsilon = 2**18, math.log(3)
    print("\n## known total (InpRR, MargRR): predicted TV of one k-way marginal, binary "
          "columns, N = 2^18, eps = ln 3, uniform data")
    rows = []
    for name in ("inp_rr", "marg_rr"):
        for d in (4, 8, 16):
            for k in (1, 2, 3):
                mechanism = build_marginal_mechanism(name, (2,) * d, epsilon, k)
                ours = mechanism.expected_tv(tuple(range(k)), n_users)
                thesis = thesis_tv(name, d, k, n_users, epsilon)
                rows.append([name, d, k, f"{ours:.4f}", f"{thesis:.4f}",
                             f"{ours / thesis:.3f}", f"{math.sqrt(1 - 2.0**-k):.3f}"])
    print_table(["strategy", "d", "k", "ours", "thesis", "ours/thesis", "sqrt(1-1/V)"], rows)
    rows = []
    for name, d, k in (("inp_rr", 4, 2), ("inp_rr", 8, 1), ("marg_rr", 8, 2),
                       ("marg_rr", 4, 1)):
        mechanism = build_marginal_mechanism(name, (2,) * d, epsilon, k)
        rng = np.random.default_rng(2024)
        counts = rng.multinomial(n_users, np.full(2**d, 2.0**-d))
        truth = counts.reshape((2,) * d).sum(axis=tuple(range(k, d))) / n_users
        tvs = [0.5 * np.abs(mechanism.estimate_marginal(mechanism.simulate_statistic(counts, rng),
                                                        tuple(range(k))) - truth).sum()
               for _ in range(args.tv_repeats)]
        rows.append([name, d, k, f"{np.mean(tvs):.5f} +- {np.std(tvs) / np.sqrt(len(tvs)):.5f}",
                     f"{mechanism.expected_tv(tuple(range(k)), n_users):.5f}",
                     f"{thesis_tv(name, d, k, n_users, epsilon):.5f}"])
    print(f"# measured TV over {args.tv_repeats} simulated collections (exact simulation):")
    print_table(["strategy", "d", "k", "measured (+- se)", "ours", "thesis"], rows)


# ---------------------------------------------------------------------------- composite
def run_composite(args):
    n, n_users = 8, 20000
    print(f"\n## composite vs exact MLE (unary encoding, n = {n}, N = {n_users}, "
          f"{args.composite_repeats} collections)")
    pi = np.array([0.4, 0.25, 0.15, 0.1, 0.05, 0.05, 0.0, 0.0])
    counts = (n_users * pi).astype(int)
    users = np.repeat(np.arange(n), counts)
    rows = []
    for name in ("oue", "rappor"):
        for epsilon in (0.5, 1.0, 3.0):
            mechanism = mechanism_class(name)(n, epsilon)
            Q = mechanism.strategy_matrix()  # 2^n bit vectors x n
            sd = np.sqrt(n_users * mechanism.query_variance_summary(workloads.histogram(n))[1])
            distance, errors = [], {"composite": [], "exact": [], "none": []}
            for seed in range(args.composite_repeats):
                rng = np.random.default_rng(NOISE_OFFSET + seed)
                reports = mechanism.randomize(users, rng)
                bits = np.unpackbits(reports, axis=1, bitorder="little")[:, :n]
                histogram = np.bincount(bits @ (1 << np.arange(n)), minlength=2**n)
                exact = np.full(n, 1.0 / n)
                for _ in range(3000):  # plain EM on the reports' own likelihood
                    exact = exact * (Q.T @ (histogram / (Q @ exact))) / n_users
                exact *= n_users
                statistic = mechanism.aggregate(reports)
                composite = em_frequencies(mechanism, statistic)[0]
                distance.append(np.max(np.abs(exact - composite) / sd))
                for key, value in (("composite", composite), ("exact", exact),
                                   ("none", mechanism.estimate(statistic))):
                    errors[key].append(np.sum((value - counts) ** 2))
            exact_error = np.mean(errors["exact"])
            rows.append([name, epsilon, f"{np.max(distance):.2f}",
                         f"{np.mean(errors['composite']) / exact_error:.3f}",
                         f"{np.mean(errors['none']) / exact_error:.3f}"])
    print_table(["oracle", "eps", "max |exact - composite| / sd", "SSE composite / exact",
                 "SSE unbiased / exact"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--users", type=int, default=100_000)
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--oracles", default=",".join(ORACLES))
    parser.add_argument("--peers-python", default="/work/peers-venv/bin/python")
    parser.add_argument("--peer-users", type=int, default=100_000)
    parser.add_argument("--peer-repeats", type=int, default=2)
    parser.add_argument("--peer-users-slow", type=int, default=10_000)
    parser.add_argument("--peer-repeats-slow", type=int, default=2)
    parser.add_argument("--peer-filter", default="",
                        help="comma-separated substrings of the peer rows to run")
    parser.add_argument("--wfm-seeds", type=int, default=1)
    parser.add_argument("--tv-repeats", type=int, default=200)
    parser.add_argument("--composite-repeats", type=int, default=10)
    args = parser.parse_args()
    args.oracles = [o for o in args.oracles.split(",") if o]
    args.peer_filter = [p for p in args.peer_filter.split(",") if p]
    sections = [s for s in args.sections.split(",") if s]
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {SECTIONS}")
    environment()
    runners = {"postprocess": run_postprocess, "peers": run_peers, "wfm": run_wfm,
               "known_total": run_known_total, "composite": run_composite}
    for section in sections:
        started = time.perf_counter()
        runners[section](args)
        print(f"# section {section}: {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
