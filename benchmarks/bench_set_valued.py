"""Benchmark of set-valued item frequencies (SVIM): time and error against the number of users.

Data (fixed by the seed): each user holds 1 to 8 distinct items of ``d`` (sizes uniform); its
items are a Zipf-distributed first item (``P(rank r) ~ r^-1.3``) and the next ones at a
stride of 7 (mod ``d``), so the small items are the popular ones.

Two paths, per N, d and epsilon:

* ``arrays``: :class:`~sklearn_ldp.mechanisms.set_valued.svim.SetItemMechanism` on flat
  ``(lengths, items)`` arrays (the vectorized core: pad, sample, oracle, aggregate, decode),
  with the pad length 4 (fixed, so the sets of 5 to 8 items are subsampled: the paper's
  bias) and, for the accuracy columns, the pad length 8 (no set subsampled: unbiased);
* ``pandas``: ``LDPEncoder(categories={"s": ("sets", items, 8)})`` and
  ``SetFrequencyEstimator`` on a DataFrame whose cells are Python sets (the size round on a
  tenth of the users, the flattening of the object column, then the same core), N up to
  10^6.

* ``pckv``: :class:`~sklearn_ldp.mechanisms.set_valued.pckv.PCKVGRR` on the same keys, each
  with a value on the lattice of 1/100 whose mean depends on the key (``--key-value`` runs
  only this path), pad length 8: the error columns are those of the value sums.

* ``--pandas-speed``: CPU seconds of the whole path at 10^5 and 10^6 users, flat arrays (the
  mechanism on ``(lengths, codes[, values])``) against pandas (``LDPEncoder.fit_transform``,
  as a Pipeline calls it, and the estimator, on a column of Python sets or of dicts
  ``{key: value}`` with string labels), for sets (SVIM) and key-value pairs (PCKV-GRR).

Reported: CPU seconds (this process; the machine is shared, so wall time is noisy), the
oracle (GRR or OLH by size), the RMSE of the item counts over the ``d`` items divided by
the mean analytic standard error (``count_variance`` at the true counts; 1 when the
analytic variance is right), and the largest |bias| / standard error over items for the
unbiased configuration (one collection: a z-score).

Examples
--------
    PYTHONPATH=. python benchmarks/bench_set_valued.py --quick
    PYTHONPATH=. python benchmarks/bench_set_valued.py            # N up to 10^6
    PYTHONPATH=. python benchmarks/bench_set_valued.py --key-value
    PYTHONPATH=. python benchmarks/bench_set_valued.py --pandas-speed
"""

import argparse
import os
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import machine_note, print_table  # noqa: E402

from sklearn_ldp import KeyValueEstimator, LDPEncoder, SetFrequencyEstimator  # noqa: E402
from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR  # noqa: E402
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism  # noqa: E402

MAX_SIZE = 8


def flat_data(n_users, n_items, rng):
    """``(lengths, items)`` of the benchmark's users and the true count of each item."""
    lengths = rng.integers(1, MAX_SIZE + 1, size=n_users)
    first = (rng.zipf(1.3, size=n_users) - 1) % n_items
    rank = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    items = (np.repeat(first, lengths) + 7 * rank) % n_items
    return lengths, items, np.bincount(items, minlength=n_items)


def cpu(call):
    start = time.process_time()
    result = call()
    return result, time.process_time() - start


def run_arrays(n_users, n_items, epsilon, pad, rng):
    lengths, items, truth = flat_data(n_users, n_items, rng)
    mechanism = SetItemMechanism(n_items, pad, epsilon, max_set_size=MAX_SIZE)
    counts, seconds = cpu(lambda: mechanism.estimate(
        mechanism.aggregate(mechanism.randomize((lengths, items), rng))))
    std = np.sqrt(mechanism.count_variance(n_users, truth))
    rmse = float(np.sqrt(np.mean((counts - truth) ** 2)))
    return {"path": "arrays", "N": n_users, "d": n_items, "epsilon": epsilon, "L": pad,
            "oracle": mechanism.oracle_name, "cpu_s": round(seconds, 2),
            "rmse/std": round(rmse / float(np.mean(std)), 3),
            "max|z|": round(float(np.max(np.abs(counts - truth) / std)), 2)}


def run_pandas(n_users, n_items, epsilon, rng):
    lengths, items, _ = flat_data(n_users, n_items, rng)
    cells = pd.Series(np.split(items, np.cumsum(lengths)[:-1]), dtype=object).map(set)
    frame = pd.DataFrame({"s": cells})
    encoder = LDPEncoder(categories={"s": ("sets", list(range(n_items)), MAX_SIZE)},
                         epsilon=epsilon, random_state=rng)
    estimator, seconds = cpu(lambda: SetFrequencyEstimator().fit(
        encoder.fit(frame).transform(frame)))
    return {"path": "pandas", "N": n_users, "d": n_items, "epsilon": epsilon,
            "L": encoder.pad_length_, "oracle": encoder.mechanism_.oracle_name,
            "cpu_s": round(seconds, 2), "rmse/std": "", "max|z|": ""}


def run_pckv(n_users, n_items, epsilon, rng):
    lengths, keys, held = flat_data(n_users, n_items, rng)
    centre = np.linspace(-0.8, 0.8, n_items)[keys]
    values = np.clip(np.round(centre + rng.uniform(-0.2, 0.2, size=keys.size), 2), -1, 1)
    mechanism = PCKVGRR(n_items, MAX_SIZE, epsilon, value_steps=100, max_set_size=MAX_SIZE)
    sums, seconds = cpu(lambda: mechanism.value_sums(mechanism.aggregate(
        mechanism.randomize((lengths, keys, values), rng))))
    truth = np.bincount(keys, weights=values, minlength=n_items) / n_users
    squares = np.bincount(keys, weights=values ** 2, minlength=n_items)
    std = np.sqrt(mechanism.value_sum_variance(n_users, held, squares))
    rmse = float(np.sqrt(np.mean((sums - truth) ** 2)))
    return {"path": "pckv", "N": n_users, "d": n_items, "epsilon": epsilon, "L": MAX_SIZE,
            "oracle": "pckv_grr", "cpu_s": round(seconds, 2),
            "rmse/std": round(rmse / float(np.mean(std)), 3),
            "max|z|": round(float(np.max(np.abs(sums - truth) / std)), 2)}


def run_speed(n_users, kind, rng, n_keys=100):
    """CPU seconds of the flat-array path and of the pandas path (one column of Python sets
    or dicts with string labels) on the same users."""
    lengths, codes, _ = flat_data(n_users, n_keys, rng)
    labels = [f"k{i}" for i in range(n_keys)]
    values = np.round(rng.uniform(-1, 1, size=codes.size), 2)
    if kind == "sets":
        mechanism = SetItemMechanism(n_keys, MAX_SIZE, 2.0, max_set_size=MAX_SIZE)
        _, arrays = cpu(lambda: mechanism.estimate(mechanism.aggregate(
            mechanism.randomize((lengths, codes), rng))))
    else:
        mechanism = PCKVGRR(n_keys, MAX_SIZE, 2.0, value_steps=100, max_set_size=MAX_SIZE)
        _, arrays = cpu(lambda: mechanism.estimate(mechanism.aggregate(
            mechanism.randomize((lengths, codes, values), rng))))
    # The cells as a user would hold them: Python sets or dicts of string labels.
    spans = list(zip((np.cumsum(lengths) - lengths).tolist(), lengths.tolist(), strict=True))
    names, numbers = [labels[c] for c in codes.tolist()], values.tolist()
    if kind == "sets":
        cells = [set(names[a:a + m]) for a, m in spans]
        declaration, estimator = ("sets", labels, MAX_SIZE), SetFrequencyEstimator()
    else:
        cells = [dict(zip(names[a:a + m], numbers[a:a + m], strict=True))
                 for a, m in spans]
        declaration, estimator = ("key_value", labels, MAX_SIZE, 100), KeyValueEstimator()
    frame = pd.DataFrame({"c": pd.Series(cells, dtype=object)})
    encoder = LDPEncoder(categories={"c": declaration}, epsilon=2.0, random_state=0)
    # fit_transform, as a Pipeline calls it: the cells are read once.
    _, pandas_seconds = cpu(lambda: estimator.fit(encoder.fit_transform(frame)))
    return {"kind": kind, "N": n_users, "arrays_cpu_s": round(arrays, 2),
            "pandas_cpu_s": round(pandas_seconds, 2),
            "pandas/arrays": round(pandas_seconds / arrays, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N up to 10^5 only")
    parser.add_argument("--key-value", action="store_true", help="the PCKV path only")
    parser.add_argument("--pandas-speed", action="store_true",
                        help="CPU time of flat arrays against pandas, 10^5 and 10^6 users")
    args = parser.parse_args()
    if args.pandas_speed:
        print(machine_note())
        rows = [run_speed(n, kind, np.random.default_rng(2026))
                for kind in ("sets", "key_value") for n in (10**5, 10**6)]
        print_table(list(rows[0]), [list(row.values()) for row in rows])
        return
    sizes = [10**4, 10**5] if args.quick else [10**4, 10**5, 10**6]
    rng = np.random.default_rng(2026)
    print(machine_note())
    rows = []
    for n_items in (100, 1000):
        for epsilon in (1.0, 4.0):
            for n_users in sizes:
                rows.append(run_pckv(n_users, n_items, epsilon, rng))
                if args.key_value:
                    continue
                for pad in (4, MAX_SIZE):
                    rows.append(run_arrays(n_users, n_items, epsilon, pad, rng))
                rows.append(run_pandas(n_users, n_items, epsilon, rng))
                print(rows[-1], flush=True)  # progress
    print_table(list(rows[0]), [list(row.values()) for row in rows])


if __name__ == "__main__":
    main()
