"""RAPPOR on strings: ours against pure-LDP's, and against our unary and heavy-hitter strategies.

Run from the worktree root: ``PYTHONPATH=. python benchmarks/bench_rappor.py [--users N]``.

Data: ``--users`` users whose values are ``--domain`` strings ``site-<i>.example`` with Zipf
(1.1) frequencies; the candidate list is those strings plus ``--absent`` strings nobody holds.

Two tables:

1. *Equal accuracy, CPU time.* pure-LDP's ``RAPPORClient``/``RAPPORServer`` implement the
   permanent randomized response only (no instantaneous step), decoded by non-negative least
   squares (``reg_const=0``; its default adds an L2 penalty that biases the estimates; the peer
   environment lacks scikit-learn, so that least-squares step runs as ``scipy.optimize.nnls``,
   which is what scikit-learn's ``LinearRegression(positive=True)`` calls). Ours is
   run with the same law (``p = 0, q = 1``: the report is the permanent response), the same
   ``k = 128`` bits, ``h = 2`` hashes, 64 cohorts, ``f = 0.5``, on the same users, decoded over
   the same domain; CPU seconds of the whole pipeline (privatize every user, aggregate,
   decode) and the MSE of the frequencies over the domain. The peer runs in its own
   environment (``/work/peers-venv``). Its client never clears a set Bloom bit (a set bit
   stays set with probability 1, not ``1 - f/2``) while its server decodes as if it did, so
   its estimates are ``(1 - f/2) / (1 - f)`` times the truth: its MSE is that bias, and no
   parameter gives it our accuracy (the comparison is at equal parameters).
2. *RAPPOR against our other strategies* on the same data: RAPPOR with the paper's Chrome
   parameters (``p = 0.5, q = 0.75``: one report is ``eps_1 = 1.07``-LDP, everything about one
   value ``eps_inf = 4.39``); OUE over the candidate list and PEM (no list) at ``eps_1`` and at
   ``eps_inf``. Recall: share of the values of true frequency at least ``--recall-at``
   detected; false positives: absent candidates detected (RAPPOR, OUE; Holm at 0.05) or values
   found that nobody holds (PEM); MSE of the frequencies over the domain (PEM: 0 for values it
   did not return).
"""

import argparse
import json

import numpy as np
import pandas as pd
from _common import fmt, machine_note, print_table, run_peer, timed

from sklearn_ldp import HeavyHitterEstimator, LDPEncoder, RapporEstimator, WorkloadEstimator
from sklearn_ldp.mechanisms.heavy_hitters.rappor import RapporMechanism
from sklearn_ldp.mechanisms.heavy_hitters.rappor_decoder import decode_candidates
from sklearn_ldp.mechanisms.heavy_hitters.significance import holm_supported

PEER_SOURCE = r"""
import json, sys, time, types
import numpy as np
from scipy.optimize import nnls

# The peer environment has no scikit-learn or statsmodels, which pure-LDP's RAPPOR server
# imports: LinearRegression(positive=True, fit_intercept=False), the decoder it uses with
# reg_const=0, is scipy's non-negative least squares (what scikit-learn runs for it).
class LinearRegression:
    def __init__(self, positive=True, fit_intercept=False):
        pass
    def fit(self, X, y):
        self.coef_ = nnls(X, y)[0]
        return self
linear_model = types.ModuleType("sklearn.linear_model")
linear_model.LinearRegression = linear_model.Lasso = linear_model.ElasticNet = LinearRegression
sklearn = types.ModuleType("sklearn")
sklearn.linear_model = linear_model
feature_selection = types.ModuleType("sklearn.feature_selection")
feature_selection.__all__ = []
statsmodels = types.ModuleType("statsmodels")
statsmodels.api = types.ModuleType("statsmodels.api")
sys.modules.update({"sklearn": sklearn, "sklearn.linear_model": linear_model,
                    "sklearn.feature_selection": feature_selection,
                    "statsmodels": statsmodels, "statsmodels.api": statsmodels.api})
from pure_ldp.frequency_oracles.rappor import RAPPORClient, RAPPORServer
data = np.load(sys.argv[1])["codes"]
params = json.loads(sys.argv[2])
start = time.process_time()
server = RAPPORServer(params["f"], 128, 2, params["d"], num_of_cohorts=64, reg_const=0)
client = RAPPORClient(params["f"], 128, server.get_hash_funcs(), num_of_cohorts=64)
for code in data.tolist():
    server.aggregate(client.privatise(code + 1))
counts = [float(server.estimate(i + 1, suppress_warnings=True)) for i in range(params["d"])]
print(json.dumps({"cpu": time.process_time() - start, "counts": counts}))
"""


def zipf_codes(n_users, n_values, seed):
    law = 1.0 / np.arange(1, n_values + 1) ** 1.1
    return np.random.default_rng(seed).choice(n_values, size=n_users, p=law / law.sum())


def equal_accuracy_rows(args, codes, domain, truth):
    n, d = codes.size, len(domain)
    values = np.array(domain, dtype=object)[codes]
    rappor = RapporMechanism(128, 2, 64, f=args.f, p=0.0, q=1.0)

    def ours():
        rng = np.random.default_rng(1)
        statistic = rappor.aggregate(rappor.randomize(values, rng))
        return decode_candidates(rappor, statistic, domain).frequencies

    frequencies, _, cpu = timed(ours)
    mse_ours = float(np.mean((frequencies - truth) ** 2))
    n_peer = min(args.peer_users, n)
    theirs = run_peer(PEER_SOURCE, {"codes": codes[:n_peer]}, {"f": args.f, "d": d})
    rows = [["ours (bloom_rappor, p=0, q=1)", n, fmt(cpu), fmt(mse_ours * n), "1"]]
    if "error" in theirs:
        rows.append(["pure-LDP RAPPOR", n_peer, theirs["error"], "-", "-"])
    else:
        peer_truth = np.bincount(codes[:n_peer], minlength=d) / n_peer
        mse_peer = float(np.mean((np.asarray(theirs["counts"]) / n_peer - peer_truth) ** 2))
        peer_cpu = theirs["cpu"] * n / n_peer  # scaled to the same users
        rows.append(["pure-LDP RAPPOR (reg_const=0)", n_peer, fmt(peer_cpu),
                     fmt(mse_peer * n_peer), fmt(peer_cpu / cpu)])
    return rows


def detection(detected_values, truth_by_value, absent, recall_at):
    frequent = [v for v, f in truth_by_value.items() if f >= recall_at]
    recall = np.mean([v in detected_values for v in frequent]) if frequent else float("nan")
    false = sum(v in detected_values for v in absent) if absent is not None else sum(
        v not in truth_by_value for v in detected_values)
    return recall, false


def strategy_rows(args, codes, domain, absent, truth):
    n = codes.size
    frame = pd.DataFrame({"site": np.array(domain, dtype=object)[codes]})
    candidates = domain + absent
    truth_by_value = {v: f for v, f in zip(domain, truth, strict=True) if f > 0}
    chrome = RapporMechanism()
    rows = []

    def rappor():
        encoder = LDPEncoder(categories={"site": "strings"}, strategy=chrome, random_state=2)
        return RapporEstimator(candidates=candidates).fit(encoder.fit_transform(frame))

    found, _, cpu = timed(rappor)
    results = found.results_
    detected = set(results["value"][results["detected"]])
    recall, false = detection(detected, truth_by_value, absent, args.recall_at)
    mse = float(np.mean((results["frequency"].to_numpy()[:len(domain)] - truth) ** 2))
    rows.append([f"RAPPOR Chrome (eps_1={chrome.epsilon_1:.2f}, eps_inf="
                 f"{chrome.epsilon_inf:.2f})", fmt(recall), false, fmt(mse * n), fmt(cpu)])
    for epsilon, name in ((chrome.epsilon_1, "eps_1"), (chrome.epsilon_inf, "eps_inf")):
        def oue(epsilon=epsilon):
            encoder = LDPEncoder(categories={"site": candidates}, strategy="oue",
                                 epsilon=epsilon, random_state=3)
            return WorkloadEstimator().fit(encoder.fit_transform(frame)).answers_

        answers, _, cpu = timed(oue)
        estimate = np.asarray(answers, dtype=float) / n
        q = 1 / (np.exp(epsilon) + 1)
        null_sd = np.sqrt(q * (1 - q) / (0.5 - q) ** 2 / n)
        supported = holm_supported(estimate / null_sd)
        detected = {c for c, s in zip(candidates, supported, strict=True) if s}
        recall, false = detection(detected, truth_by_value, absent, args.recall_at)
        mse = float(np.mean((estimate[:len(domain)] - truth) ** 2))
        rows.append([f"OUE over the candidates ({name}={epsilon:.2f})", fmt(recall), false,
                     fmt(mse * n), fmt(cpu)])

        def pem(epsilon=epsilon):
            encoder = LDPEncoder(categories={"site": "strings"}, strategy="pem",
                                 epsilon=epsilon, max_string_bytes=16, random_state=4)
            return HeavyHitterEstimator().fit(encoder.fit_transform(frame)).heavy_hitters_

        table, _, cpu = timed(pem)
        found_values = dict(zip(table["value"], table["frequency"], strict=True))
        recall, false = detection(set(found_values), truth_by_value, None, args.recall_at)
        estimate = np.array([found_values.get(v, 0.0) for v in domain])
        mse = float(np.mean((estimate - truth) ** 2))
        rows.append([f"PEM, no list ({name}={epsilon:.2f})", fmt(recall), false,
                     fmt(mse * n), fmt(cpu)])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--peer-users", type=int, default=10**6)
    parser.add_argument("--domain", type=int, default=100)
    parser.add_argument("--absent", type=int, default=100)
    parser.add_argument("--f", type=float, default=0.5)
    parser.add_argument("--recall-at", type=float, default=0.005)
    parser.add_argument("--skip-peer", action="store_true")
    parser.add_argument("--json", help="also write the tables to this JSON file")
    args = parser.parse_args()
    print(machine_note())
    domain = [f"site-{i}.example" for i in range(args.domain)]
    absent = [f"absent-{i}.example" for i in range(args.absent)]
    codes = zipf_codes(args.users, args.domain, seed=0)
    truth = np.bincount(codes, minlength=args.domain) / codes.size
    tables = {}
    if not args.skip_peer:
        rows = equal_accuracy_rows(args, codes, domain, truth)
        print(f"\nEqual law, {args.users} users, domain {args.domain}: CPU seconds of "
              "privatize + aggregate + decode (peer scaled to the same users)")
        print_table(["implementation", "users run", "CPU s", "MSE x N", "time ratio"], rows)
        tables["equal_accuracy"] = rows
    rows = strategy_rows(args, codes, domain, absent, truth)
    print(f"\nStrategies on the same {args.users} users (recall at frequency >= "
          f"{args.recall_at}, {args.absent} absent candidates)")
    print_table(["strategy", "recall", "false positives", "MSE x N", "CPU s"], rows)
    tables["strategies"] = rows
    if args.json:
        with open(args.json, "w") as handle:
            json.dump(tables, handle, default=str)


if __name__ == "__main__":
    main()
