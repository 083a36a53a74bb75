"""Throughput of the doors the size caps and hostile-input checks touch, before and after.

Usage::

    git archive <base-commit> sklearn_ldp | tar -x -C /tmp/before
    python benchmarks/bench_caps.py /tmp/before     # the tree before the change
    python benchmarks/bench_caps.py .               # this tree

Each figure is the best of a few runs on the same machine; compare the two outputs as ratios.
"""

import os
import sys
import time

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
sys.path.insert(0, ROOT)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import sklearn_ldp  # noqa: E402
from sklearn_ldp import LDPEncoder, workloads  # noqa: E402
from sklearn_ldp.domain import Domain  # noqa: E402

assert sklearn_ldp.__file__.startswith(ROOT), sklearn_ldp.__file__


def best(function, repeat=3):
    """The fastest of ``repeat`` runs, in seconds."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def main():
    categories = {"age": [f"a{i}" for i in range(10)], "smoker": ["no", "yes"]}
    rng = np.random.default_rng(0)
    records = pd.DataFrame({"age": rng.choice(categories["age"], 1_000_000),
                            "smoker": rng.choice(categories["smoker"], 1_000_000)})
    encoder = LDPEncoder(categories=categories, strategy="oue", epsilon=1.0).fit()
    seconds = best(lambda: encoder.transform(records))
    print(f"transform 1e6 records (oue, 20 cells): {1e6 / seconds:,.0f} records/s")
    seconds = best(lambda: LDPEncoder(categories=categories, strategy="oue", epsilon=1.0).fit())
    print(f"fit (oue, 20 cells): {seconds * 1e3:.1f} ms")
    listed = {"id": list(range(2**20))}
    seconds = best(lambda: LDPEncoder(categories=listed, strategy="olh", epsilon=1.0).fit(), 2)
    print(f"fit (olh, a listed column of 2^20 categories): {seconds:.2f} s")
    domain = Domain({f"c{i}": [0, 1] for i in range(20)})
    seconds = best(lambda: workloads.marginals(domain, k=4), 1)
    print(f"marginals(20 binary columns, k=4: 4845 blocks): {seconds:.2f} s")


if __name__ == "__main__":
    main()
