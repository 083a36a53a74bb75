"""Benchmark of heavy hitters through the public API, on strings and integers, against pure-LDP.

Every run is what a new user writes, with every default: ``LDPEncoder(categories={"c":
"strings"}, strategy=..., epsilon=...)`` (``{"c": 32}`` for the integers), ``fit_transform`` on
a one-column DataFrame, then ``HeavyHitterEstimator(top_k=10).fit``; the sketches (``cms``,
``hcms``) are given the true vocabulary as ``candidates``. Corpora (Zipf laws ``P(rank r) ~
r^-1.05`` over a vocabulary of random strings, fixed by the seed):

* ``words``: 30,000 random lowercase strings of 2 to 12 bytes (lengths uniform).
* ``codes``: 2,000 random 3-byte upper-case codes.
* ``urls``: 10,000 URL-like strings of 20 to 80 bytes (``https://`` + one of 300 hosts +
  random path segments).
* ``four``: four app names at 25% each, at 20,000 and 100,000 users only.
* ``int32``: 32-bit integers, 20 planted values at 3% ... 1% (evenly spaced) over a
  Zipf(1.1)-Mandelbrot background of 10^5 values whose largest holds 0.5%: the planted values
  are the true top 20; ``top_k=20`` here (the encoder's default ``n_candidates``).

Reported per strategy, N and epsilon: recall of the true top 10 (top 4 for ``four``, top 20
for ``int32``), the number of values returned, phantoms (returned values held by nobody),
precision (returned values in the true top, over those returned), and the end-to-end time
(transform + fit), wall-clock and CPU seconds of this process.

``--peers`` runs pure-LDP's PEM (1.2.0, with its Apple CMS inside, 32 hashes x 1024: the
configuration of its own experiment script) in its own virtual environment
(``/work/peers-venv``: ``pip install pure-ldp "numpy<2.3"``; never a dependency; its hashes'
str input is encoded as UTF-8, which xxhash 3 no longer does itself) on the ``int32`` case
and on ``codes`` (3 bytes read as a 24-bit integer, which its binary-string interface takes)
on the same users, and prints its recall and CPU time next to ours (time ratio within one
run). Wall-clock times on a shared machine are noisy: CPU seconds are printed next to them,
and the load average at the start.

The sketch section checks the sketches' standard errors at the defaults: over
``--sketch-repeats`` collections (fresh randomness and a fresh public hash seed each), the
empirical RMSE of 40 candidates (the 20 planted integers and the 20 largest background ones)
over the standard error ``estimate_counts`` reports, pooled, and the z-scores' mean and
standard deviation.

Examples
--------
    PYTHONPATH=. python benchmarks/bench_heavy_hitters.py --quick
    PYTHONPATH=. python benchmarks/bench_heavy_hitters.py              # N = 10^5 and 10^6
    PYTHONPATH=. python benchmarks/bench_heavy_hitters.py --peers --corpora int32,codes
"""

import argparse
import math
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import cached_peer, fmt, machine_note, print_table, run_peer  # noqa: E402

from sklearn_ldp import LDPEncoder  # noqa: E402
from sklearn_ldp.estimators.heavy_hitters import HeavyHitterEstimator  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values  # noqa: E402

STRATEGIES = ("pem", "treehist", "cms", "hcms")
ZIPF = 1.05
N_PLANTED = 20
PLANTED = np.linspace(0.03, 0.01, N_PLANTED)
N_BACKGROUND = 10**5
TOP_BACKGROUND = 0.005


# ---------------------------------------------------------------------- corpora
def zipf_law(size, exponent=ZIPF):
    law = np.arange(1, size + 1, dtype=float) ** -exponent
    return law / law.sum()


def random_strings(rng, size, low, high, alphabet):
    """``size`` distinct random strings over ``alphabet`` with lengths uniform in
    ``[low, high]``."""
    letters = np.frombuffer(alphabet.encode(), dtype=np.uint8)
    found = {}
    while len(found) < size:
        lengths = rng.integers(low, high + 1, size=size)
        rows = letters[rng.integers(letters.size, size=(size, high))]
        for row, length in zip(rows, lengths, strict=True):
            found.setdefault(row[:length].tobytes().decode(), None)
    return np.array(list(found)[:size], dtype=object)


def words_corpus(rng):
    return random_strings(rng, 30_000, 2, 12, "abcdefghijklmnopqrstuvwxyz")


def codes_corpus(rng):
    return random_strings(rng, 2_000, 3, 3, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")


def urls_corpus(rng, size=10_000):
    """``https://`` + host + top-level domain + ``/`` + a random path, 20 to 80 bytes."""
    hosts = random_strings(rng, 300, 4, 12, "abcdefghijklmnopqrstuvwxyz")
    tlds = np.array([".com", ".org", ".net", ".io"], dtype=object)
    prefixes = "https://" + hosts[rng.integers(hosts.size, size=size)] + \
        tlds[rng.integers(tlds.size, size=size)] + "/"
    paths = random_strings(rng, size, 80, 80, "abcdefghijklmnopqrstuvwxyz0123456789/-_")
    lengths = rng.integers(20, 81, size=size)
    urls = [prefix + path[:max(length - len(prefix), 1)]
            for prefix, path, length in zip(prefixes, paths, lengths, strict=True)]
    return np.array(list(dict.fromkeys(urls)), dtype=object)


FOUR = np.array(["maps", "mail", "photos", "music"], dtype=object)


def background_law(size, mass, top, exponent=1.1):
    """Zipf-Mandelbrot probabilities ``~ (r + r0)^-exponent`` summing to ``mass``, with ``r0``
    found by bisection so that the largest is ``top``."""
    ranks = np.arange(1, size + 1, dtype=float)
    low, high = 0.0, float(size)
    for _ in range(100):
        middle = (low + high) / 2
        weights = (ranks + middle) ** -exponent
        low, high = (middle, high) if mass * weights[0] / weights.sum() > top else (low, middle)
    weights = (ranks + high) ** -exponent
    return mass * weights / weights.sum()


def int32_corpus(rng):
    ids = rng.choice(2**32, size=N_PLANTED + N_BACKGROUND, replace=False).astype(np.int64)
    law = np.concatenate([PLANTED, background_law(N_BACKGROUND, 1 - PLANTED.sum(),
                                                  TOP_BACKGROUND)])
    return ids, law / law.sum()


def corpus(name, seed):
    """``(vocabulary, law, categories, top)``: the values, their probabilities, the encoder's
    declaration and how many of the most frequent values count as the true top."""
    rng = np.random.default_rng(seed)
    if name == "int32":
        ids, law = int32_corpus(rng)
        return ids, law, 32, N_PLANTED
    if name == "four":
        return FOUR, np.full(4, 0.25), "strings", 4
    vocabulary = {"words": words_corpus, "codes": codes_corpus, "urls": urls_corpus}[name](rng)
    return vocabulary, zipf_law(vocabulary.size), "strings", 10


# ---------------------------------------------------------------------- ours
def run_api(column, vocabulary, categories, top, strategy, epsilon, seed, **params):
    """One collection and fit through the public API (``params``: encoder parameters beyond
    the defaults), scored against the column."""
    held = pd.Series(column).value_counts(sort=True)
    true_top = set(held.index[:top].tolist())
    frame = pd.DataFrame({"c": column})
    sketch = strategy in ("cms", "hcms")
    wall, cpu = time.perf_counter(), time.process_time()
    encoder = LDPEncoder(categories={"c": categories}, strategy=strategy, epsilon=epsilon,
                         random_state=seed, **params)
    try:
        reports = encoder.fit_transform(frame)
    except ValueError as exc:  # e.g. values longer than the default max_string_bytes
        return {"error": str(exc)}
    estimator = HeavyHitterEstimator(top_k=max(top, 10),
                                     candidates=list(vocabulary) if sketch else None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        estimator.fit(reports)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    returned = estimator.heavy_hitters_["value"].tolist()
    hits = len(true_top & set(returned))
    return {"recall": hits / top, "returned": len(returned),
            "phantoms": sum(value not in held.index for value in returned),
            "precision": hits / len(returned) if returned else float("nan"),
            "wall": wall, "cpu": cpu, "warned": len(caught)}


def run_sketch(values, candidates, truth, hadamard, epsilon, repeats, seed):
    """RMSE over the reported standard error, and the z-scores, over fresh collections."""
    words, cand = encode_values(values, 32), encode_values(candidates, 32)
    estimates, errors = [], []
    for repeat in range(repeats):
        rng = np.random.default_rng(seed + 7919 * repeat)
        sketch = SketchFrequencyOracle(epsilon, hadamard=hadamard, n_users=values.size,
                                       hash_seed=int(rng.integers(2**63)))
        counts, error = sketch.estimate_counts(sketch.aggregate(sketch.randomize(words, rng)),
                                               cand)
        estimates.append(counts)
        errors.append(error)
    estimates, errors = np.array(estimates), np.array(errors)
    z = (estimates - truth) / errors
    ratio = math.sqrt(np.mean((estimates - truth) ** 2) / np.mean(errors ** 2))
    return {"k": sketch.n_hashes, "m": sketch.width, "ratio": ratio,
            "ratio_se": 1 / math.sqrt(2 * z.size), "z_mean": z.mean(), "z_sd": z.std()}


# ---------------------------------------------------------------------- pure-LDP
PEER_PRELUDE = r'''
import json, random, sys, time, types
import numpy as np
# pure_ldp imports its RAPPOR server (unused here), which imports scikit-learn and
# statsmodels; the peer environment has neither: empty stand-ins let the package import.
for name in ("sklearn", "sklearn.linear_model", "sklearn.feature_selection", "statsmodels",
             "statsmodels.api"):
    sys.modules[name] = types.ModuleType(name)
sys.modules["sklearn.linear_model"].Lasso = sys.modules["sklearn.linear_model"].ElasticNet = None
sys.modules["sklearn.linear_model"].LinearRegression = None
# Its hashes pass str to xxhash, which xxhash 3 refuses; encode them as xxhash 2 did (UTF-8).
import xxhash
_xxh64 = xxhash.xxh64
xxhash.xxh64 = lambda data, seed=0: _xxh64(data.encode() if isinstance(data, str) else data,
                                           seed=seed)
data = np.load(sys.argv[1])
params = json.loads(sys.argv[2])
random.seed(params["seed"]); np.random.seed(params["seed"])
'''

PEER_SOURCE = PEER_PRELUDE + r'''
values, bits, top = data["values"], params["bits"], params["top"]
from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer
eps = params["epsilon"]
strings = [format(int(v), "0%db" % bits) for v in values]
cpu0 = time.process_time()
server_fo = CMSServer(eps, params["k"], params["m"])
client_fo = CMSClient(eps, server_fo.get_hash_funcs(), params["m"])
client = PEMClient(eps, params["start"], bits, params["fragment"], fo_client=client_fo)
server = PEMServer(eps, params["start"], bits, params["fragment"], fo_server=server_fo)
for s in strings:  # one user at a time (its memory-safe mode: reports are m floats each)
    server.aggregate(client.privatise(s))
found, frequencies = server.find_heavy_hitters(k=top)
found_values = [int(x.replace("*", ""), 2) if x.replace("*", "") else -1 for x in found]
truth = set(int(v) for v in data["top"])
hits = len(truth & set(found_values))
print(json.dumps({"recall": hits / len(truth), "returned": len(found_values),
                  "cpu": time.process_time() - cpu0}))
'''


# pure-LDP's CMS / HCMS (Apple's sketches) on given values: the counts of the candidates.
SKETCH_PEER_SOURCE = PEER_PRELUDE + r'''
from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
hadamard = params["hadamard"]
cpu0 = time.process_time()
server = CMSServer(params["epsilon"], params["k"], params["m"], is_hadamard=hadamard)
client = CMSClient(params["epsilon"], server.get_hash_funcs(), params["m"],
                   is_hadamard=hadamard)
for v in data["values"].tolist():  # one user at a time, as its API takes them
    server.aggregate(client.privatise(str(v)))
counts = [server.estimate(str(c), suppress_warnings=True)
          for c in data["candidates"].tolist()]
print(json.dumps({"counts": [float(c) for c in counts], "cpu": time.process_time() - cpu0}))
'''


def code_integers(values):
    """3-byte strings as 24-bit integers (big-endian bytes), for pure-LDP's binary strings."""
    return np.array([int.from_bytes(v.encode(), "big") for v in values], dtype=np.int64)


def run_pure_ldp(column, name, top, epsilon):
    held = pd.Series(column).value_counts(sort=True)
    true_top = np.asarray(held.index[:top].tolist())
    if name == "codes":
        column, true_top, bits = code_integers(column), code_integers(true_top), 24
    else:
        bits = 32
    # Its PEM extends the candidates by ``fragment`` bits from ``start`` on and needs start +
    # rounds * fragment == bits exactly: 5-bit fragments after the first ceil(log2 top) bits.
    fragment = 5
    start = bits - fragment * math.ceil((bits - math.ceil(math.log2(top))) / fragment)
    return run_peer(PEER_SOURCE, {"values": np.asarray(column, dtype=np.int64),
                                  "top": np.asarray(true_top, dtype=np.int64)},
                    {"epsilon": epsilon, "seed": 0, "bits": bits, "top": top, "k": 32,
                     "m": 1024, "start": start, "fragment": fragment})


# ---------------------------------------------------------------------- bench_peers rows
def peer_table_rows(n_users, peer_users, cache, repeats, epsilons=(2.0, 4.0), seed=0):
    """Rows of ``bench_peers.py``'s table (its columns): on the ``int32`` corpus, pure-LDP's
    PEM against ours on all ``n_users`` (recall of the 20 planted values: it depends on N,
    so both run on the same users), and pure-LDP's CMS / HCMS (32 hashes x 1024) against
    ours at their default sizes on 40 candidates (the 20 planted and the 20 largest
    background values; MSE * N of their frequencies; the peer on the first ``peer_users``,
    its CPU scaled to ``n_users``). Ours: the public API, least CPU of ``repeats`` runs."""
    vocabulary, law, _, _ = corpus("int32", seed)
    rng = np.random.default_rng(seed + n_users)
    column = vocabulary[rng.choice(vocabulary.size, size=n_users, p=law)]
    held = pd.Series(column).value_counts(sort=True)
    true_top = np.asarray(held.index[:N_PLANTED].tolist(), dtype=np.int64)
    rows = []
    for epsilon in epsilons:
        theirs = cached_peer(cache, f"v1:{n_users}:pem:int32:{seed}:{epsilon}",
                             lambda epsilon=epsilon: run_pure_ldp(column, "int32", N_PLANTED,
                                                                  epsilon))
        ours = min((run_api(column, vocabulary, 32, N_PLANTED, "pem", epsilon, seed)
                    for _ in range(repeats)), key=lambda result: result["cpu"])
        label = f"PEM, 32-bit, eps {epsilon:g}"
        if "error" in theirs:
            rows.append([label, "pure-LDP", theirs["error"][:60], "-", f"{ours['cpu']:.2f}",
                         f"recall {ours['recall']:.2f}", "-", "top 20"])
            continue
        rows.append([label, "pure-LDP", f"{theirs['cpu']:.1f}",
                     f"recall {theirs['recall']:.2f}", f"{ours['cpu']:.2f}",
                     f"recall {ours['recall']:.2f}", f"{theirs['cpu'] / ours['cpu']:.1f}x",
                     "top 20; both on all users"])
    candidates = np.concatenate([true_top, vocabulary[N_PLANTED:2 * N_PLANTED]])
    frame = pd.DataFrame({"c": column})
    n_peer = min(peer_users, n_users)
    for strategy in ("cms", "hcms"):
        for epsilon in epsilons:
            params = {"epsilon": epsilon, "k": 32, "m": 1024, "hadamard": strategy == "hcms",
                      "seed": 0}
            theirs = cached_peer(cache, f"v1:{n_peer}:{strategy}:int32:{seed}:{epsilon}",
                                 lambda params=params: run_peer(
                                     SKETCH_PEER_SOURCE, {"values": column[:n_peer],
                                                          "candidates": candidates}, params))

            def ours(strategy=strategy, epsilon=epsilon):
                reports = LDPEncoder(categories={"c": 32}, strategy=strategy,
                                     epsilon=epsilon, random_state=seed).fit_transform(frame)
                return HeavyHitterEstimator().fit(reports).predict(candidates)

            times = []
            for _ in range(repeats):
                start = time.process_time()
                table = ours()
                times.append(time.process_time() - start)
            truth = held.reindex(candidates, fill_value=0).to_numpy() / n_users
            mse_n = float(np.mean((table["frequency"].to_numpy() - truth) ** 2)) * n_users
            label = f"{strategy.upper()}, 32-bit, eps {epsilon:g}"
            if "error" in theirs:
                rows.append([label, "pure-LDP", theirs["error"][:60], "-",
                             f"{min(times):.2f}", fmt(mse_n), "-", "40 candidates"])
                continue
            peer_truth = pd.Series(column[:n_peer]).value_counts().reindex(
                candidates, fill_value=0).to_numpy() / n_peer
            peer_mse_n = float(np.mean((np.asarray(theirs["counts"]) / n_peer - peer_truth)
                                       ** 2)) * n_peer
            scaled = theirs["cpu"] * n_users / n_peer
            factor = "" if n_peer == n_users else f" (x{n_users / n_peer:.0f})"
            rows.append([label, "pure-LDP", f"{scaled:.2f}{factor}", fmt(peer_mse_n),
                         f"{min(times):.2f}", fmt(mse_n), f"{scaled / min(times):.1f}x",
                         "40 candidates; peer 32 x 1024"])
    return rows


# ---------------------------------------------------------------------- main
def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="N = 10^5 only, 3 sketch repeats (a smoke run of every table)")
    parser.add_argument("--users", default="100000,1000000")
    parser.add_argument("--epsilons", default="1,2,4")
    parser.add_argument("--corpora", default="words,codes,urls,four,int32")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--sketch-repeats", type=int, default=10)
    parser.add_argument("--peers", action="store_true",
                        help="pure-LDP's PEM on int32 and codes (largest N, eps 2 and 4)")
    parser.add_argument("--no-sketch-check", action="store_true",
                        help="skip the sketches' standard-error table")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    users = [10**5] if args.quick else [int(n) for n in args.users.split(",")]
    repeats = 3 if args.quick else args.sketch_repeats
    epsilons = [float(e) for e in args.epsilons.split(",")]
    strategies = [s for s in args.strategies.split(",") if s]  # "": the sketch check only
    print(machine_note())
    print("Every default of the public API; recall of the true top (10; four: 4; int32: 20), "
          "phantoms = returned values held by nobody; seconds = transform + fit.\n")
    ours, columns = {}, {}
    for name in args.corpora.split(","):
        vocabulary, law, categories, top = corpus(name, args.seed)
        sizes = [20_000, 100_000] if name == "four" else users
        rows, errors = [], {}
        for n_users in sizes:
            rng = np.random.default_rng(args.seed + n_users)
            column = vocabulary[rng.choice(vocabulary.size, size=n_users, p=law)]
            columns[name, n_users] = column
            held = pd.Series(column).value_counts(sort=True)
            print(f"{name}: N = {n_users}, {held.size} distinct values held, the true top "
                  f"{top} hold {100 * held.iloc[top - 1] / n_users:.3g}% ... "
                  f"{100 * held.iloc[0] / n_users:.3g}%, the next "
                  f"{100 * held.iloc[top] / n_users if held.size > top else 0:.3g}%.")
            longest = max(len(str(value).encode()) for value in vocabulary)
            for strategy in strategies:
                for epsilon in epsilons:
                    result = run_api(column, vocabulary, categories, top, strategy, epsilon,
                                     args.seed)
                    label = strategy
                    if "error" in result:
                        # The defaults refuse the column: say so, then run with the length
                        # declared, as the error message asks.
                        errors.setdefault(result["error"])
                        rows.append([strategy, n_users, epsilon, "refused"] + [""] * 6)
                        label = f"{strategy} (max_string_bytes={longest})"
                        result = run_api(column, vocabulary, categories, top, strategy,
                                         epsilon, args.seed, max_string_bytes=longest)
                        if "error" in result:
                            errors.setdefault(result["error"])
                            rows.append([label, n_users, epsilon, "refused"] + [""] * 6)
                            continue
                    ours[name, n_users, strategy, epsilon] = result
                    rows.append([label, n_users, epsilon, fmt(result["recall"]),
                                 result["returned"], result["phantoms"],
                                 fmt(result["precision"]), f"{result['wall']:.2f}",
                                 f"{result['cpu']:.2f}", result["warned"]])
        if rows:
            print_table(["strategy", "N", "eps", "recall", "returned", "phantoms",
                         "precision", "wall s", "CPU s", "warnings"], rows)
        for message in errors:
            print(f"refused: {message}")
        print()

    if "int32" in args.corpora.split(",") and not args.no_sketch_check:
        n_users = max(users)
        vocabulary, law, _, _ = corpus("int32", args.seed)
        column = columns["int32", n_users].astype(np.int64)
        candidates = vocabulary[:2 * N_PLANTED]  # the planted and the 20 largest background
        distinct, counts = np.unique(column, return_counts=True)
        index = np.searchsorted(distinct, candidates)
        found = (index < distinct.size) & (distinct[np.minimum(index, distinct.size - 1)]
                                           == candidates)
        truth = np.where(found, counts[np.minimum(index, distinct.size - 1)], 0).astype(float)
        print(f"Sketch standard errors (int32, N = {n_users}, default sizes): 40 candidates, "
              f"{repeats} collections each with a fresh hash seed:")
        rows = []
        for hadamard in (False, True):
            for epsilon in epsilons:
                result = run_sketch(column, candidates, truth, hadamard, epsilon, repeats,
                                    args.seed)
                rows.append(["HCMS" if hadamard else "CMS", epsilon,
                             f"{result['k']} x {result['m']}",
                             f"{result['ratio']:.3f} +- {result['ratio_se']:.3f}",
                             f"{result['z_mean']:+.3f}", f"{result['z_sd']:.3f}"])
        print_table(["sketch", "eps", "k x m", "RMSE / SE", "z mean", "z sd"], rows)
        print()

    if not args.peers:
        return
    n_users = max(users)
    print(f"pure-LDP 1.2.0 PEM (CMS 32 x 1024 inside) against our PEM, N = {n_users}, "
          "same users; time ratio = its CPU s / ours:")
    rows = []
    for name in ("int32", "codes"):
        if (name, n_users) not in columns:
            continue
        top = N_PLANTED if name == "int32" else 10
        for epsilon in [e for e in epsilons if e in (2.0, 4.0)]:
            peer = run_pure_ldp(columns[name, n_users], name, top, epsilon)
            mine = ours.get((name, n_users, "pem", epsilon))
            if "error" in peer or mine is None:
                rows.append([name, epsilon, peer.get("error", "no run of ours")[:60]]
                            + [""] * 4)
                continue
            rows.append([name, epsilon, fmt(peer["recall"]), f"{peer['cpu']:.1f}",
                         fmt(mine["recall"]), f"{mine['cpu']:.2f}",
                         f"{peer['cpu'] / mine['cpu']:.1f}x"])
    print_table(["corpus", "eps", "pure-LDP recall", "pure-LDP CPU s", "ours recall",
                 "ours CPU s", "time ratio"], rows)


if __name__ == "__main__":
    main()
