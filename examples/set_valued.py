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

A second section collects key-value data: each user reports, for up to 5 of 10 apps, the
time spent in it, scaled to ``[-1, 1]`` on the lattice of step 1/100 (a column of dicts
declared ``("key_value", apps, 5, 100)``). The encoder reports each user's pairs by PCKV-GRR
or PCKV-UE, whichever has the smaller analytic variance for 10 apps at epsilon 2 (printed);
``KeyValueEstimator`` returns each app's share of users and its mean scaled time, printed
against the truth (the shares of the apps of users with more pairs than the pad length are
undercounted, as for sets). The last lines privatize one user's pairs on a device with the
standard-library client, from the specification the server ships (it carries the app
labels), and decode such reports with labelled apps.

Run: ``python examples/set_valued.py`` (a few seconds).
"""

import numpy as np
import pandas as pd
from sklearn.pipeline import Pipeline

from sklearn_ldp import KeyValueEstimator, LDPEncoder, SetFrequencyEstimator, reports_from_client
from sklearn_ldp.deploy.client import Randomizer

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

# ---------------------------------------------------------------- key-value data (PCKV)
# The first 10 apps; each user's time in each of its apps (the first 5 it holds), in
# [-1, 1] on the lattice of 1/100: app k's times centred on a mean that rises with k.
kv_apps = apps[:10]
kv_held = held & (ranked < 10) & (np.cumsum(held & (ranked < 10), axis=1) <= 5)
centre = np.append(np.linspace(-0.6, 0.6, 10), np.zeros(n_apps - 10))  # apps 10+: unused
times = np.clip(np.round(centre[ranked] + rng.uniform(-0.3, 0.3, ranked.shape), 2), -1, 1)
usage = pd.DataFrame({"usage": [
    dict(zip(labels[row[keep]].tolist(), time[keep].tolist(), strict=True))
    for row, keep, time in zip(ranked, kv_held, times, strict=True)]})
kv = Pipeline([
    ("ldp", LDPEncoder(categories={"usage": ("key_value", kv_apps, 5, 100)}, epsilon=2.0,
                       random_state=0)),
    ("kv", KeyValueEstimator()),
]).fit(usage)
estimator = kv.named_steps["kv"]
true_share = np.bincount(ranked[kv_held], minlength=10) / n_users
true_mean = np.bincount(ranked[kv_held], weights=times[kv_held], minlength=10) / np.maximum(
    np.bincount(ranked[kv_held], minlength=10), 1)
pad = kv.named_steps["ldp"].pad_length_
print(f"\nkey-value ({kv.named_steps['ldp'].mechanism_.kind}): pad length {pad}; "
      f"{np.mean(kv_held.sum(axis=1) > pad):.1%} of the users hold more pairs (their keys "
      f"undercounted); {estimator.n_reports_} pair reports")
print(pd.DataFrame({"share": estimator.frequencies_, "true_share": true_share,
                    "mean": estimator.means_, "true_mean": true_mean,
                    "mean_std_error": estimator.std_errors_["mean"]}).round(3))

# A device: the specification (with the app labels) in, one report out; the server decodes
# the devices' reports with labelled apps, no keys= needed.
spec = kv.named_steps["ldp"].mechanism_.to_json()
device = Randomizer.from_json(spec)
sent = [device.privatize(cell) for cell in usage["usage"][:5000]]  # 5,000 devices
from_devices = KeyValueEstimator().fit(reports_from_client(sent, spec))
print("labelled from the devices' reports:", list(from_devices.frequencies_.index[:3]), "...")
