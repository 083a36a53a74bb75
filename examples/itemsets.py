"""Which apps are installed together? Frequent itemsets of set-valued data
=======================================================================

A phone vendor wants the groups of apps most often installed together, among 40 apps. Each
user's record is a *set* of apps, private as a whole; each user sends one report under
epsilon = 2 local differential privacy:

1. ``LDPEncoder(categories={"apps": ("itemsets", apps, 8, 10)})`` declares the column: a set
   of at most 8 of the listed apps per user, and ``k = 10`` (20 candidate apps, the 10
   frequent apps, 20 candidate itemsets).
2. ``fit`` splits the users at random into the rounds of SVSM (Wang, Li and Jha, S&P 2018)
   and runs the server's steps between them: the candidate apps (a quarter of the users),
   their size round and the frequent apps (SVIM, on half the users in all), then the
   candidate itemsets (products of the frequent apps' guesses) and their size round.
3. ``transform`` privatizes the last 40% of the users: each pads the list of candidate
   itemsets its set contains to the pad length and reports one of them.
4. ``ItemsetEstimator`` returns each candidate itemset's share of users and its standard
   error (with the long-set correction of the size round that chose the pad length), and
   the top 10.

The script prints the top 10 itemsets, estimated against true, and how many of the true top
10 are found at epsilon = 1, 2 and 4. The candidate itemsets are guessed from the frequent
apps' frequencies as if apps were installed independently, so a group of less popular apps
installed together (apps 8 and 9) is not a candidate at any epsilon: the recall stops below
10 of 10 for that reason, not for lack of budget. A fifth entry of the declaration,
``n_candidates``, lists more of the rule's itemsets (here 40 instead of 20): more
candidates, each estimated with more noise.

Run: ``python examples/itemsets.py`` (about a minute).
"""

import numpy as np
import pandas as pd
from sklearn.pipeline import make_pipeline

from sklearn_ldp import ItemsetEstimator, LDPEncoder

rng = np.random.default_rng(5)  # the data's generator, not the encoder's random_state
n_users, n_apps = 200_000, 40
apps = [f"app{i:02d}" for i in range(n_apps)]
# Groups installed together (apps 0-9), each with its share of users; then 0-3 other apps.
groups = [((0, 1, 2), 0.16), ((0, 1), 0.12), ((3, 4), 0.12), ((0, 3), 0.08), ((5, 6), 0.08),
          ((1, 5), 0.06), ((2, 7), 0.06), ((8, 9), 0.05)]
kinds = rng.choice(len(groups) + 1, size=n_users, p=[s for _, s in groups]
                   + [1 - sum(s for _, s in groups)])
cells = []
for kind, extra in zip(kinds, rng.integers(0, 4, size=n_users), strict=True):
    held = set(groups[kind][0]) if kind < len(groups) else set()
    held |= set(rng.choice(np.arange(10, n_apps), size=extra, replace=False).tolist())
    cells.append({apps[i] for i in held})
df = pd.DataFrame({"apps": cells})


def true_frequency(itemset):
    wanted = set(itemset)
    return sum(wanted <= cell for cell in cells) / n_users


pipe = make_pipeline(
    LDPEncoder(categories={"apps": ("itemsets", apps, 8, 10)}, epsilon=2.0, random_state=0),
    ItemsetEstimator(top_k=10))
estimator = pipe.fit(df)[-1]
encoder = pipe[0]
print(f"frequent apps: {encoder.frequent_items_}")
print(f"pad lengths: items {encoder.item_pad_length_}, itemsets {encoder.pad_length_}; "
      f"{estimator.n_reports_} itemset reports")
top = estimator.top_itemsets_.assign(
    true=[true_frequency(itemset) for itemset in estimator.top_itemsets_["itemset"]])
print(top.round(3).to_string())

# The true top 10 among every itemset of the 10 grouped apps (an itemset with another app
# is held by about 2% of the users or fewer, below the true top 10).
grouped = [apps[i] for i in range(10)]
masks = pd.Series([sum(1 << grouped.index(a) for a in cell if a in grouped)
                   for cell in cells]).value_counts()
truth = {}
for subset in range(1 << 10):
    if bin(subset).count("1") >= 2:
        count = masks[(masks.index & subset) == subset].sum()
        if count:
            truth[tuple(grouped[i] for i in range(10) if subset >> i & 1)] = count / n_users
true_top = set(sorted(truth, key=lambda s: -truth[s])[:10])
for epsilon in (1.0, 2.0, 4.0):
    pipe.set_params(ldpencoder__epsilon=epsilon)
    found = set(pipe.fit(df)[-1].top_itemsets_["itemset"])
    print(f"epsilon {epsilon}: {len(found & true_top)} of the true top 10 itemsets found")

# The candidate budget: 40 candidate itemsets instead of the paper's 20.
pipe.set_params(ldpencoder__epsilon=2.0,
                ldpencoder__categories={"apps": ("itemsets", apps, 8, 10, 40)})
found = set(pipe.fit(df)[-1].top_itemsets_["itemset"])
print(f"40 candidates, epsilon 2.0: {len(found & true_top)} of the true top 10 itemsets found")
