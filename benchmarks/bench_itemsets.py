"""Benchmark of frequent itemsets (SVSM): recall of the true top-k itemsets and CPU time.

Data (planted, fixed by the seed): ``d = 200`` items. With ``--data patterns`` (default)
each user takes one of the planted patterns below over the items ``0 .. 9`` (or none, the
remaining share): items bought together, whatever their own popularity. With ``--data
independent`` each user holds item ``i`` of ``0 .. 9`` with probability ``INDEPENDENT[i]``,
independently (itemset frequencies are products of item frequencies, the model of the
candidate rule). Then 0 to 3 further items drawn uniformly from the background items
``10 .. 199``. A background item is held by about 1% of the users, so every itemset holding
one is rarer than 1% and the true top-k itemsets are itemsets of the planted items, counted
exactly from the users' masks (the script checks that the k-th true frequency exceeds the
most frequent background item's).

Two paths, per N and epsilon (k = 10, so 20 candidate items; 20 candidate itemsets, the
paper's 2k, and with ``--budgets`` more, on the arrays path):

* ``arrays``: :class:`~sklearn_ldp.mechanisms.set_valued.svsm.FrequentItemsets` on flat
  ``(lengths, items)`` arrays: the user split, the candidate round, the two size rounds, the
  item and itemset rounds and the server's steps between them, then the estimate;
* ``pandas``: ``LDPEncoder(categories={"apps": ("itemsets", items, 8, 10)})`` and
  ``ItemsetEstimator`` in a Pipeline on a DataFrame whose cells are Python sets (the same
  protocol plus reading the object column).

Reported: CPU seconds of this process (the machine is shared, so wall time is noisy), the
recall (true top-k itemsets found in the estimated top-k, over k), the recall of the best
ranking of the same candidates (their true top-k: what the candidate rule allows), the
itemset pad length L and the long-set correction u_L, the RMSE of the candidate itemsets'
frequencies over their mean analytic standard error, and the mean and standard deviation
of their z-scores (estimate - truth) / std_error, with the long-set correction (default)
and without it (``raw``).

Examples
--------
    PYTHONPATH=. python benchmarks/bench_itemsets.py --quick
    PYTHONPATH=. python benchmarks/bench_itemsets.py            # N = 10^6, eps 1, 2, 4
    PYTHONPATH=. python benchmarks/bench_itemsets.py --data independent
    PYTHONPATH=. python benchmarks/bench_itemsets.py --budgets 20,40,80   # candidate budget
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
from sklearn.pipeline import make_pipeline  # noqa: E402

from sklearn_ldp import ItemsetEstimator, LDPEncoder  # noqa: E402
from sklearn_ldp.mechanisms.set_valued.svsm import (  # noqa: E402
    FrequentItemsets,
    itemset_frequencies,
)

N_ITEMS, N_PLANTED, TOP_K = 200, 10, 10
# The cap on a set: 3 planted items + 3 background ("patterns"), 10 + 3 ("independent").
MAX_SIZE = {"patterns": 8, "independent": 13}
# (itemset of planted items, share of users).
PATTERNS = [((0, 1, 2), 0.16), ((0, 1), 0.10), ((3, 4), 0.12), ((5, 6, 7), 0.09),
            ((2, 8), 0.08), ((4, 9), 0.07), ((0, 3), 0.06), ((1, 5, 8), 0.05),
            ((6, 9), 0.04)]


# The "independent" data: item i of 0 .. 9 held with probability INDEPENDENT[i], each
# independently of the others (itemset frequencies are products: the candidate rule's model).
INDEPENDENT = np.array([0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15])


def planted_data(n_users, rng, data="patterns"):
    """``(lengths, items)`` of the users (each user's items distinct)."""
    if data == "independent":
        held = rng.random((n_users, N_PLANTED)) < INDEPENDENT
        lengths = held.sum(axis=1)
        planted = np.nonzero(held)[1]
    else:
        shares = [share for _, share in PATTERNS]
        kinds = rng.choice(len(PATTERNS) + 1, size=n_users, p=shares + [1 - sum(shares)])
        pattern_lengths = np.array([len(p) for p, _ in PATTERNS] + [0])
        pattern_items = np.concatenate([p for p, _ in PATTERNS]).astype(np.int64)
        starts = np.concatenate(([0], np.cumsum(pattern_lengths)[:-1]))
        lengths = pattern_lengths[kinds]
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        planted = pattern_items[np.repeat(starts[kinds], lengths) + offsets]
    # Background: 0-3 distinct items of 10 .. 199 (a draw without replacement per user).
    extra = rng.integers(0, 4, size=n_users)
    background = N_PLANTED + np.argsort(rng.random((n_users, N_ITEMS - N_PLANTED)),
                                        axis=1)[:, :3]
    keep = np.arange(3) < extra[:, None]
    users = np.concatenate([np.repeat(np.arange(n_users), lengths),
                            np.nonzero(keep)[0]])
    items = np.concatenate([planted, background[keep]])
    order = np.argsort(users, kind="stable")
    return (lengths + extra).astype(np.int64), items[order].astype(np.int64)


def true_itemset_frequencies(lengths, items):
    """Every itemset of >= 2 planted items -> its frequency; and the most frequent background
    item's frequency (an upper bound on any itemset holding one)."""
    n_users = lengths.size
    owners = np.repeat(np.arange(n_users), lengths)
    planted = items < N_PLANTED
    masks = np.zeros(n_users, dtype=np.int64)
    np.add.at(masks, owners[planted], np.left_shift(1, items[planted]))
    by_mask = np.bincount(masks, minlength=1 << N_PLANTED)
    every = np.arange(1 << N_PLANTED)
    truth = {}
    for subset in range(1 << N_PLANTED):
        if bin(subset).count("1") >= 2:
            count = by_mask[(every & subset) == subset].sum()
            if count:
                truth[tuple(i for i in range(N_PLANTED) if subset >> i & 1)] = count / n_users
    background = np.bincount(items[~planted], minlength=N_ITEMS).max() / n_users
    return truth, background


def recall(estimated, truth):
    """The share of the true top-k itemsets in the estimated top-k."""
    true_top = sorted(truth, key=lambda s: -truth[s])[:TOP_K]
    return len(set(true_top) & set(estimated[:TOP_K])) / TOP_K


def run_arrays(lengths, items, epsilon, seed, cap, budget):
    protocol = FrequentItemsets(N_ITEMS, cap, epsilon, TOP_K, n_candidates=budget)
    start = time.process_time()
    plan, reports = protocol.run((lengths, items), np.random.default_rng(seed))
    frequencies, errors = itemset_frequencies(plan.mechanism,
                                              plan.mechanism.aggregate(reports))
    seconds = time.process_time() - start
    order = np.argsort(-frequencies, kind="stable")
    return (seconds, [plan.itemsets[i] for i in order], plan.itemsets, frequencies, errors,
            plan.mechanism)


def run_pandas(lengths, items, epsilon, seed, cap, budget):
    cells = np.split(items, np.cumsum(lengths)[:-1])
    df = pd.DataFrame({"apps": [set(cell.tolist()) for cell in cells]})
    pipe = make_pipeline(
        LDPEncoder(categories={"apps": ("itemsets", list(range(N_ITEMS)), cap, TOP_K,
                                        budget)}, epsilon=epsilon, random_state=seed),
        ItemsetEstimator(top_k=TOP_K))
    start = time.process_time()
    estimator = pipe.fit(df)[-1]
    seconds = time.process_time() - start
    table = estimator.itemsets_
    return (seconds, list(estimator.top_itemsets_["itemset"]), list(table["itemset"]),
            table["frequency"].to_numpy(), table["std_error"].to_numpy(),
            estimator.mechanism_)


def z_summary(frequencies, errors, true):
    """``(rmse / mean std_error, mean z, sd z)`` of the candidates' estimates."""
    z = (frequencies - true) / errors
    rmse = np.sqrt(np.mean((frequencies - true) ** 2)) / np.mean(errors)
    return f"{rmse:.2f}", f"{z.mean():+.2f}", f"{z.std(ddof=1):.2f}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 10^5 only")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data", choices=["patterns", "independent"], default="patterns",
                        help="planted patterns (default) or independent items")
    parser.add_argument("--budgets", default=str(2 * TOP_K),
                        help="comma-separated numbers of candidate itemsets (default: the "
                        "paper's 2k); the pandas path runs the first only")
    args = parser.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    sizes = [100_000] if args.quick else [1_000_000]
    print(machine_note())
    rows = []
    for n_users in sizes:
        lengths, items = planted_data(n_users, np.random.default_rng(args.seed), args.data)
        truth, background = true_itemset_frequencies(lengths, items)
        kth = sorted(truth.values(), reverse=True)[TOP_K - 1]
        print(f"N = {n_users}: k-th true itemset frequency {kth:.4f}, most frequent "
              f"background item {background:.4f} (any itemset holding one is rarer)")
        runs = [(budget, "arrays", run_arrays) for budget in budgets] \
            + [(budgets[0], "pandas", run_pandas)]
        for epsilon in (1.0, 2.0, 4.0):
            for budget, path, run in runs:
                seconds, ranked, candidates, frequencies, errors, mechanism = run(
                    lengths, items, epsilon, args.seed, MAX_SIZE[args.data], budget)
                if path == "pandas":  # labels are the item codes themselves
                    candidates = [tuple(c) for c in candidates]
                    ranked = [tuple(c) for c in ranked]
                true = np.array([truth.get(tuple(c), 0.0) for c in candidates])
                factor = mechanism.size_factor
                # The best a ranking of these candidates could do (their true top-k).
                best = [c for _, c in sorted(zip(-true, candidates, strict=True))]
                rows.append((n_users, epsilon, path, f"{seconds:.2f}",
                             f"{recall(ranked, truth):.2f}", f"{recall(best, truth):.2f}",
                             len(candidates), mechanism.pad_length, f"{factor:.3f}",
                             *z_summary(frequencies, errors, true),
                             *z_summary(frequencies / factor, errors / factor, true)))
    print_table(["N", "epsilon", "path", "cpu_s", "recall@10", "candidates_recall@10",
                 "candidates", "L", "u_L", "rmse/se", "z_mean", "z_sd", "raw_rmse/se",
                 "raw_z_mean", "raw_z_sd"], rows)


if __name__ == "__main__":
    main()
