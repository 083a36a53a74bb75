"""Cost of the scikit-learn API layer: LDPEncoder versus the bare mechanism, per input kind.

For ``N`` records (default 10^6) in a pandas DataFrame, each input kind and strategy times,
interleaved over ``--repeats`` rounds (medians reported):

* ``randomize``: ``mechanism.randomize(indices, rng)`` on the already-encoded flat indices
  (the bare mechanism, what any API must pay);
* ``encode``: ``Domain.encode(df)`` alone;
* ``transform``: ``encoder.transform(df)`` of an encoder fitted beforehand (the per-call
  cost);
* ``build``: ``LDPEncoder(...).fit()`` without data: the data-independent strategy build;
* ``api``: ``LDPEncoder(categories=..., strategy=..., epsilon=1, random_state=0)
  .fit(df).transform(df)``, what a user pays from scratch (build included).

``api - randomize`` is the whole overhead of the API layer; ``api - build - randomize`` is what
the layer spends on the records themselves (sklearn's checks of the table and the encoding,
in ``fit`` and in ``transform``). Differences are medians of the per-round differences.
Timings are wall-clock (``--clock cpu``: CPU time of the process, all threads included). On a
machine shared with other jobs, the BLAS threads of the strategy build (OpenBLAS spins its idle
threads for a while after a call) compete with what follows in ``api``; ``--blas-threads 1``
shows the layer's cost without that. An encoder that cannot be fitted (e.g. a workload too
large for this version) gets ``encode`` only and a note.

Examples
--------
    python benchmarks/bench_api_overhead.py
    python benchmarks/bench_api_overhead.py --blas-threads 1
    python benchmarks/bench_api_overhead.py --users 100000 --repeats 3 --kinds str,category
"""

import argparse
import os
import platform
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

import sklearn_ldp  # noqa: E402
from sklearn_ldp import LDPEncoder  # noqa: E402
from sklearn_ldp.domain import Domain  # noqa: E402

STRATEGIES = ("randomized_response", "olh", "hadamard")


def make_inputs(n_users, rng):
    """Input kind -> (description, DataFrame, categories)."""
    strings100 = [f"cat{i:03d}" for i in range(100)]
    strings24 = [f"a{i:02d}" for i in range(24)]
    pick100 = rng.integers(0, 100, n_users)
    return {
        "int64": ("int64 column, categories range(2^16)",
                  pd.DataFrame({"x": rng.integers(0, 2**16, n_users)}),
                  {"x": range(2**16)}),
        "int64_small": ("int64 column, categories range(2^10)",
                        pd.DataFrame({"x": rng.integers(0, 2**10, n_users)}),
                        {"x": range(2**10)}),
        "str": ("pandas default string column (Arrow-backed in pandas 3), 100 categories",
                pd.DataFrame({"s": pd.Series(np.array(strings100, dtype=object)[pick100],
                                             dtype="str")}),
                {"s": strings100}),
        "category": ("categorical column, 100 categories",
                     pd.DataFrame({"s": pd.Categorical.from_codes(pick100, strings100)}),
                     {"s": strings100}),
        "object_int": ("object column of python ints, categories range(100)",
                       pd.DataFrame({"x": pd.Series(pick100.tolist(), dtype=object)}),
                       {"x": range(100)}),
        "two_columns": ("string column (24 categories) and int64 column (range(12))",
                        pd.DataFrame({
                            "a": pd.Series(np.array(strings24, dtype=object)[
                                rng.integers(0, 24, n_users)], dtype="str"),
                            "b": rng.integers(0, 12, n_users)}),
                        {"a": strings24, "b": range(12)}),
    }


CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}


def time_once(function, clock):
    start = clock()
    function()
    return clock() - start


def measure(frame, categories, strategy, repeats, seed, clock):
    """Median seconds of every timing and of the per-round overheads (None if unfittable)."""
    def encoder():
        return LDPEncoder(categories=categories, strategy=strategy, epsilon=1,
                          random_state=seed)

    domain = Domain(categories)
    domain.encode(frame)  # warm-up (lookup structures built on first use, when cached)
    try:
        fitted = encoder().fit(frame)
    except ValueError as exc:  # e.g. a workload too large for this version of the package
        encode = np.median([time_once(lambda: domain.encode(frame), clock)
                            for _ in range(repeats)])
        return {"encode": encode}, str(exc)
    indices = fitted.domain_.encode(frame)
    mechanism = fitted.mechanism_
    rounds = []
    for r in range(repeats):
        bare = time_once(lambda r=r: mechanism.randomize(indices, np.random.default_rng(r)),
                         clock)
        encode = time_once(lambda: domain.encode(frame), clock)
        transform = time_once(lambda: fitted.transform(frame), clock)
        build = time_once(lambda: encoder().fit(), clock)
        api = time_once(lambda: encoder().fit(frame).transform(frame), clock)
        rounds.append({"randomize": bare, "encode": encode, "transform": transform,
                       "build": build, "api": api, "transform-randomize": transform - bare,
                       "api-randomize": api - bare, "api-build-randomize": api - build - bare})
    return {key: np.median([r[key] for r in rounds]) for key in rounds[0]}, None


COLUMNS = ("randomize", "encode", "transform", "build", "api", "transform-randomize",
           "api-randomize", "api-build-randomize")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=7, help="timing rounds (medians)")
    parser.add_argument("--kinds", default=None,
                        help="comma-separated input kinds (default: all)")
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--clock", choices=sorted(CLOCKS), default="wall",
                        help="wall-clock time, or the CPU time of this process (all its "
                             "threads), which other jobs on a shared machine do not inflate")
    parser.add_argument("--blas-threads", type=int, default=None,
                        help="limit BLAS threads (threadpoolctl) for the whole run; default: "
                             "the library's own setting")
    args = parser.parse_args()
    if args.blas_threads is not None:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=args.blas_threads, user_api="blas"):
            run(args)
    else:
        run(args)


def run(args):
    inputs = make_inputs(args.users, np.random.default_rng(args.seed))
    kinds = list(inputs) if args.kinds is None else args.kinds.split(",")
    strategies = args.strategies.split(",")
    print(f"# sklearn_ldp {getattr(sklearn_ldp, '__version__', '?')}, numpy {np.__version__}, "
          f"pandas {pd.__version__}, python {platform.python_version()}; wall-clock on a "
          "shared 2-core machine (noisy); load average at start "
          f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}")
    blas = "default" if args.blas_threads is None else args.blas_threads
    print(f"# N={args.users} records, epsilon=1, medians of {args.repeats} interleaved rounds, "
          f"{args.clock} time, BLAS threads: {blas}")
    for kind in kinds:
        description, frame, _ = inputs[kind]
        dtypes = ", ".join(f"{c}: {frame[c].dtype}" for c in frame.columns)
        print(f"# {kind}: {description} ({dtypes})")
    rows, notes = [], []
    for kind in kinds:
        _, frame, categories = inputs[kind]
        cells = int(np.prod([len(c) for c in categories.values()]))
        for strategy in strategies:
            times, refused = measure(frame, categories, strategy, args.repeats, args.seed,
                                     CLOCKS[args.clock])
            if refused:
                notes.append(f"# {kind} / {strategy}: LDPEncoder refused: {refused}")
            rows.append([kind, strategy, args.users, cells]
                        + [f"{times[c]:.3f}" if c in times else "-" for c in COLUMNS])
            print(f"# {kind} / {strategy} done", flush=True)
    print()
    print_table(["input", "strategy", "N", "cells"] + [f"{c} s" for c in COLUMNS], rows)
    for note in notes:
        print(note)
    print("# randomize: mechanism.randomize(indices, rng) on the encoded indices; encode: "
          "Domain.encode(df); transform: transform(df) of a fitted encoder; build: "
          "LDPEncoder.fit() without data; api: LDPEncoder.fit(df).transform(df). Differences: "
          "medians of the per-round differences.")


if __name__ == "__main__":
    main()
