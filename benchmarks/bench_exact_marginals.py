"""Throughput of ``randomize`` at 10^6 users for the marginal, heavy-hitter and multi-attribute
kinds, to compare two copies of the package (before / after the exact samplers).

Run once per tree, interleaved, on the same machine, and compare the best-of-3 times::

    git archive <old commit> | tar -x -C /tmp/old
    for tree in /tmp/old . /tmp/old .; do PYTHONPATH=$tree python \
        benchmarks/bench_exact_marginals.py; done

(run from outside the tree, or with PYTHONPATH first, so that the intended copy is imported).
"""

import time

import numpy as np

from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters
from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values
from sklearn_ldp.mechanisms.marginals.input_perturbation import InpHT, InpRR
from sklearn_ldp.mechanisms.marginals.marginal_perturbation import MargHT, MargRR
from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism

N = 10**6
rng = np.random.default_rng(0)
shape = [2, 3, 4, 2, 5]
n_cells = int(np.prod(shape))
cells = rng.integers(n_cells, size=N)
values = encode_values(rng.integers(2**32, size=N), 32)
records = np.column_stack([rng.integers(k, size=N) for k in (3, 4, 5, 2)])
cases = {
    "InpRR": (InpRR(n_cells, 1.0, shape, 2), cells),
    "MargRR": (MargRR(n_cells, 1.0, shape, 2), cells),
    "InpHT": (InpHT(n_cells, 1.0, shape, 2), cells),
    "MargHT": (MargHT(n_cells, 1.0, shape, 2), cells),
    "PEM": (PrefixHeavyHitters(32, 4.0, n_candidates=20), values),
    "TreeHist": (PrefixHeavyHitters(32, 4.0, protocol="treehist", n_candidates=20), values),
    "SMP-GRR": (MultiAttributeMechanism((3, 4, 5, 2), 2.0, "smp", "grr"), records),
    "SMP-OUE": (MultiAttributeMechanism((3, 4, 5, 2), 2.0, "smp", "oue"), records),
}
for name, (mechanism, data) in cases.items():
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        mechanism.randomize(data, np.random.default_rng(1))
        best = min(best, time.perf_counter() - start)
    print(f"{name} {best:.4f}", flush=True)
