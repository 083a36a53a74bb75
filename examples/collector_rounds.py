"""The collector for numbers and for rounds of memoized reports
==============================================================

A fitness app asks two things under local differential privacy: the users' mean age (a
bounded number, the Hybrid mechanism) once, and every day which of 8 workout types each user
does most (dBitFlipPM: each device memoizes its report of a value, so reporting the same
workout day after day reveals no more than one report). The server registers one collection
for the ages and one per day for the workouts (the same specification under a new name), and
the reference collector (:mod:`sklearn_ldp.deploy.collector`) checks and stores the devices'
batches. ``aggregate`` returns, for these kinds of the math layer, the statistic their
mechanism estimates from.

Each device keeps its secret in a small state file (``state=``), so its reports of an
unchanged workout repeat exactly from one day to the next. The HTTP calls go through
Starlette's in-process test client. Needs ``pip install sklearn_ldp[server]``.

Run:  python examples/collector_rounds.py      (under a minute: a state file per device)
"""

import json
import os
import tempfile
import uuid

import numpy as np
from starlette.testclient import TestClient

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.collector import SQLiteStore, aggregate, create_app
from sklearn_ldp.mechanisms.longitudinal.mechanisms import DBitFlipPM
from sklearn_ldp.mechanisms.numeric.means import HybridMechanism

N_DEVICES = 600
folder = tempfile.mkdtemp()
rng = np.random.default_rng(0)
ages = rng.uniform(18, 80, N_DEVICES)
workouts = rng.choice(8, N_DEVICES, p=[0.3, 0.2, 0.1, 0.1, 0.1, 0.1, 0.05, 0.05])

# The server: the mechanisms, a SQLite store, the collector.
hybrid = HybridMechanism(2.0, bounds=(0, 100))
dbit = DBitFlipPM(8, 2.0, n_sampled=2)
store = SQLiteStore(os.path.join(folder, "reports.db"))
store.add_collection("ages", json.dumps(hybrid.to_dict()))
days = ["workouts-2026-11-28", "workouts-2026-11-29"]
for day in days:
    store.add_collection(day, json.dumps(dbit.to_dict()))
http = TestClient(create_app(store))


def send(collection, reports):
    """One batch of reports to a collection (a device's upload queue)."""
    published = http.get(f"/collections/{collection}/spec").json()
    batch = {"batch_id": str(uuid.uuid4()), "spec_hash": published["spec_hash"],
             "reports": reports}
    return http.post(f"/collections/{collection}/batches", json=batch).status_code


# The devices: ages once.
spec = json.dumps(http.get("/collections/ages/spec").json()["spec"])
print("ages:", send("ages", [Randomizer.from_json(spec).privatize(float(a)) for a in ages]))
statistic = aggregate(store, "ages")
error = np.sqrt(hybrid.estimate_mean_variance(statistic))
print(f"mean age: estimated {hybrid.estimate_mean(statistic):.1f} +- {error:.1f}"
      f"  (true {ages.mean():.1f})")

# Workouts every day, each device with its own state file.
spec = json.dumps(http.get(f"/collections/{days[0]}/spec").json()["spec"])
devices = [Randomizer.from_json(spec, state=os.path.join(folder, f"device-{i}.json"))
           for i in range(N_DEVICES)]
sent = {}
for day in days:
    sent[day] = [device.privatize(int(w)) for device, w in zip(devices, workouts, strict=True)]
    print(f"{day}:", send(day, sent[day]))
print("every device sent the same report both days:", sent[days[0]] == sent[days[1]])

# The same reports give the same estimates both days: memoization at work (what changes is
# only what the users change). Each count is within a few standard errors of the truth.
truth = np.bincount(workouts, minlength=8)
for day in days:
    estimate = dbit.estimate(aggregate(store, day))
    print(day, "estimated counts", np.round(estimate).astype(int).tolist())
errors = np.sqrt(dbit.count_variance(np.clip(estimate / N_DEVICES, 0, 1), N_DEVICES))
print("standard errors ", np.round(errors).astype(int).tolist())
print("true counts     ", truth.tolist())

# A crafted report (a bucket twice) is refused with the reason; nothing is stored.
print("crafted:", send(days[1], [[3, 3, 0, 1]]))
print("stored (batches, reports):", store.count(days[1]))
