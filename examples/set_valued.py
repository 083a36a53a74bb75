"""Which apps do users have installed? Item frequencies of set-valued data
=========================================================================

A phone vendor wants to know how many users have each of 40 apps installed. Each user's
record is a *set* of apps (1 to 10 of them), private as a whole, and each user sends one
report under epsilon = 2 local differential privacy:

1. ``LDPEncoder(categories={"apps": ("sets", apps, 10)})`` declares the column: a set of at
   most 10 of the listed apps per user (a longer set, an unknown app or an app listed twice
   is refused, naming the row).
2. ``fit`` on the data asks a tenth of the users for the size of their set (privately) and
   sets the pad length to the 90th percentile of the estimated sizes (Wang, Li and Jha,
   S&P 2018); the other users pad their set to that length with dummy items and report one
   element of it, drawn uniformly, through a frequency oracle.
3. ``SetFrequencyEstimator`` scales the oracle's counts by the pad length: the share of
   users holding each app, with its standard error.

The script prints the ten most installed apps, estimated against true, and the largest
error in standard errors over all 40 apps. The few users whose set is longer than the pad
length have their apps undercounted (the price of a short pad length, which keeps the
variance low); the example reports that share.

Run: ``python examples/set_valued.py`` (a few seconds).
"""

import numpy as np
import pandas as pd

from sklearn_ldp import LDPEncoder, SetFrequencyEstimator

rng = np.random.default_rng(11)  # the data's generator, not the encoder's random_state
n_users, n_apps = 200_000, 40
apps = [f"app{i:02d}" for i in range(n_apps)]

# Set sizes: most users have 2 to 5 apps, a few up to 10. Each user's apps are drawn
# without replacement, the first apps the most popular (weighted sampling by exponential
# keys, vectorized).
sizes = np.minimum(rng.geometric(0.3, size=n_users), 10)
popularity = 1.0 / np.arange(1, n_apps + 1) ** 0.8
ranked = np.argsort(rng.exponential(size=(n_users, n_apps)) / popularity, axis=1)
held = np.arange(n_apps)[None, :] < sizes[:, None]
labels = np.asarray(apps, dtype=object)
df = pd.DataFrame({"apps": [set(labels[row[keep]]) for row, keep in zip(ranked, held,
                                                                         strict=True)]})
truth = pd.Series(np.bincount(ranked[held], minlength=n_apps) / n_users, index=apps)

encoder = LDPEncoder(categories={"apps": ("sets", apps, 10)}, epsilon=2.0, random_state=0)
reports = encoder.fit(df).transform(df)
estimator = SetFrequencyEstimator(top_k=10).fit(reports)

print(f"pad length {encoder.pad_length_} (90th percentile of the estimated sizes); "
      f"{np.mean(sizes > encoder.pad_length_):.1%} of the sets are longer; "
      f"{estimator.n_reports_} item reports, {encoder.mechanism_.oracle_name} oracle")
table = estimator.top_items_.assign(true=truth[estimator.top_items_.index])
print(table.round(4))
z = (estimator.frequencies_ - truth) / estimator.std_errors_
print(f"largest |error| / std_error over the {n_apps} apps: {z.abs().max():.2f}")
