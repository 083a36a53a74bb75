"""Cost of privatizing one record with the standard-library client, per mechanism kind.

Each kind is built on the server (``n = 1024`` cells, eps = 1; the marginal kinds over 10
binary columns, ``max_order = 2``; the workload of the Gaussian kinds is the histogram), its
JSON rebuilt by :class:`sklearn_ldp.deploy.client.Randomizer` with operating-system entropy (the
deployment default), and ``privatize`` is timed over many records.

Examples
--------
    python benchmarks/bench_client.py
"""

import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

from sklearn_ldp.deploy import client
from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism  # noqa: E402
from sklearn_ldp.selection import build_mechanism  # noqa: E402

N_CELLS = 1024
KINDS = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
         "subset_selection", "hierarchical", "haar", "gaussian_pure")
MARGINAL_KINDS = ("inp_ht", "inp_ps", "marg_ps", "marg_rr", "marg_ht", "inp_em")


def time_per_record(mechanism, n_cells, budget_seconds=0.5):
    randomizer = client.Randomizer.from_json(mechanism.to_json())
    cells = np.random.default_rng(0).integers(0, n_cells, 100_000).tolist()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget_seconds:
        for cell in cells[count % 90_000:count % 90_000 + 100]:
            randomizer.privatize(cell)
        count += 100
    return (time.perf_counter() - start) / count


def main():
    rows = []
    for kind in KINDS:
        mechanism, _ = build_mechanism(kind, (N_CELLS,), 1.0, np.eye(N_CELLS))
        rows.append([kind, N_CELLS, f"{1e6 * time_per_record(mechanism, N_CELLS):.1f}"])
    for kind in MARGINAL_KINDS:
        mechanism = build_marginal_mechanism(kind, (2,) * 10, 1.0, 2)
        rows.append([kind, 2**10, f"{1e6 * time_per_record(mechanism, 2**10):.1f}"])
    print("Standard-library client, one record at a time, SystemRandom entropy, eps = 1")
    print_table(["kind", "cells", "us per record"], rows)


if __name__ == "__main__":
    main()
