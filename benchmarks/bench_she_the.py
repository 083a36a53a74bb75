"""Histogram encoding (SHE, THE) against pure-LDP 1.2.0 and multi-freq-ldpy 0.2.5: CPU seconds
and accuracy at 10^6 users, d = 64 cells, epsilon = 1 (and 4).

Ours: ``LDPEncoder(categories, strategy="she" | "the", epsilon).fit_transform(df)`` then
``WorkloadEstimator().fit(reports).answers_`` (the counts): exact discrete noise, reports of
64 int16 (int8 from eps 1.41) or 64 bits. Peers: pure-LDP's ``HEClient`` / ``HEServer``
(``use_the`` False / True, continuous Laplace, one client and one server call per user) and
multi-freq-ldpy's ``HE_Client`` + ``HE_Aggregator_MI(use_thresh=True)`` (THE), run in their own
virtual environment (``/work/peers-venv``) on the first ``--peer-users`` users of the same data,
their CPU seconds scaled linearly to ``--users`` (their cost is a Python loop per user).
Accuracy: MSE * N, the mean over the cells of ``N (f_hat - f)^2`` (frequencies), against the
analytic value of each side (ours: ``expected_error_``; the continuous SHE: ``8 / eps^2``,
the continuous THE: the paper's variance at its optimal threshold, both times ``1 - 1/d`` for
ours' known-total step only).

CPU time is ``process_time`` of the whole call, the best of ``--repeats`` runs after one
untimed warm-up; the ratio is only meaningful within one run (the machine is shared).

Examples
--------
    PYTHONPATH=. python benchmarks/bench_she_the.py
    PYTHONPATH=. python benchmarks/bench_she_the.py --users 200000 --peer-users 20000
"""

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import cached_peer, fmt, machine_note, print_table, run_peer  # noqa: E402

from sklearn_ldp import LDPEncoder, WorkloadEstimator  # noqa: E402

PEER_SOURCE = r'''
import importlib.util, json, sys, time, types
import numpy as np
users = np.load(sys.argv[1])["users"]
params = json.loads(sys.argv[2])
d, eps, name = params["d"], params["epsilon"], params["name"]
np.random.seed(params["seed"])
if name == "mfl_the":
    from multi_freq_ldpy.pure_frequency_oracles.HE import HE_Client, HE_Aggregator_MI
    HE_Aggregator_MI([HE_Client(0, d, eps), HE_Client(1, d, eps)], d, eps, use_thresh=True)
    c0 = time.process_time()
    frequencies = np.asarray(HE_Aggregator_MI([HE_Client(int(v), d, eps)
                                               for v in users.tolist()], d, eps,
                                              use_thresh=True), dtype=float)
    cpu = time.process_time() - c0
else:
    # pure_ldp.frequency_oracles/__init__ imports every oracle (RAPPOR's with scikit-learn):
    # register the package without running it.
    spec = importlib.util.find_spec("pure_ldp")
    package = types.ModuleType("pure_ldp.frequency_oracles")
    package.__path__ = [spec.submodule_search_locations[0] + "/frequency_oracles"]
    sys.modules["pure_ldp.frequency_oracles"] = package
    from pure_ldp.frequency_oracles.histogram_encoding.he_client import HEClient
    from pure_ldp.frequency_oracles.histogram_encoding.he_server import HEServer
    c0 = time.process_time()
    client = HEClient(eps, d)
    server = HEServer(eps, d, use_the=name == "pure_the")
    for v in users.tolist():  # items 1..d in pure-LDP
        server.aggregate(client.privatise(v + 1))
    counts = np.array([server.estimate(j + 1, suppress_warnings=True) for j in range(d)])
    cpu = time.process_time() - c0
    frequencies = counts / len(users)
truth = np.bincount(users, minlength=d) / len(users)
print(json.dumps({"cpu": cpu, "mse_n": float(np.mean((frequencies - truth) ** 2)) * len(users)}))
'''


def continuous_the_variance(epsilon):
    """The paper's THE variance per user and cell at its optimal threshold in (0.5, 1)."""
    thetas = np.linspace(0.5, 1.0, 50_001)
    p = 1 - 0.5 * np.exp(epsilon * (thetas - 1) / 2)
    q = 0.5 * np.exp(-epsilon * thetas / 2)
    return float(np.min(q * (1 - q) / (p - q) ** 2))


def ours(strategy, users, d, epsilon):
    frame = pd.DataFrame({"cell": users})
    encoder = LDPEncoder(categories={"cell": list(range(d))}, strategy=strategy,
                         epsilon=epsilon, random_state=0)
    estimator = WorkloadEstimator().fit(encoder.fit_transform(frame))
    return estimator


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--peer-users", type=int, default=50_000)
    parser.add_argument("--cells", type=int, default=64)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 4.0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--peer-cache", default=None)
    args = parser.parse_args()
    d, n = args.cells, args.users
    law = 1.0 / np.arange(1, d + 1) ** 1.1
    users = np.random.default_rng(7).choice(d, size=n, p=law / law.sum())
    truth = np.bincount(users, minlength=d) / n
    print(machine_note())
    rows = []
    for epsilon in args.epsilons:
        analytic_peer = {"she": 8 / epsilon**2, "the": continuous_the_variance(epsilon)}
        for strategy, peers in (("she", ["pure_she"]), ("the", ["pure_the", "mfl_the"])):
            estimator = ours(strategy, users, d, epsilon)  # warm-up
            times = []
            for _ in range(args.repeats):
                start = time.process_time()
                estimator = ours(strategy, users, d, epsilon)
                times.append(time.process_time() - start)
            cpu = min(times)
            answers = estimator.answers_.to_numpy() / n
            mse_n = float(np.mean((answers - truth) ** 2)) * n
            analytic = float(estimator.expected_error_["average_case"].mean()) / n
            for name in peers:
                sample = users[:args.peer_users]
                result = cached_peer(args.peer_cache, f"v1:{args.peer_users}:{name}:{epsilon}",
                                     lambda name=name, sample=sample, eps=epsilon: run_peer(
                                         PEER_SOURCE, {"users": sample},
                                         {"d": d, "epsilon": eps, "name": name, "seed": 1}))
                if "error" in result:
                    print(f"{name}: {result['error']}")
                    continue
                scale = n / args.peer_users
                peer_cpu = result["cpu"] * scale
                rows.append([f"{strategy} eps={epsilon:g}", name, fmt(cpu), fmt(peer_cpu),
                             f"x{scale:g}", fmt(peer_cpu / cpu), fmt(mse_n), fmt(analytic),
                             fmt(result["mse_n"]), fmt(analytic_peer[strategy])])
    print_table(["strategy", "peer", "our cpu s", "peer cpu s", "peer scaled", "ratio",
                 "our MSE*N", "our analytic", "peer MSE*N", "peer analytic"], rows)


if __name__ == "__main__":
    main()
