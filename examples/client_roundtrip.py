"""Deployment round trip with the standard-library client
======================================================

The server ships a mechanism as JSON, devices privatize with the standard-library client,
the server decodes their reports.

1. The server builds an ``LDPEncoder`` over the public domain (no data needed) and ships
   ``encoder.mechanism_.to_json()`` and the categories to the devices.
2. Each simulated device loads the folder ``sklearn_ldp/deploy/client/`` *by its path* (as a team
   would copy that one folder onto a device; it imports nothing but the standard library and
   its own modules), rebuilds the randomizer and privatizes its own record. The seed is for
   this simulation only: real devices leave it out and draw from the operating system's
   entropy.
3. The server stacks the JSON reports with ``reports_from_client`` and fits a
   ``WorkloadEstimator``; we print the estimates against the truth (known only because the
   data are synthetic), with the analytic standard error, and draw them with
   :class:`~sklearn_ldp.HistogramDisplay`.

Run:  python examples/client_roundtrip.py      (a few seconds)
"""

import importlib.util
import json
import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import sklearn_ldp
from sklearn_ldp import Domain, HistogramDisplay, LDPEncoder, WorkloadEstimator, workloads
from sklearn_ldp.deploy.collect import reports_from_client

# ---------------------------------------------------------------- 1. server: the spec
categories = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}
W = workloads.marginals(categories, k=1)
encoder = LDPEncoder(categories=categories, strategy="oue", epsilon=1.0, workload=W).fit()
shipped = json.dumps({"mechanism": encoder.mechanism_.to_json(), "categories": categories})

# ---------------------------------------------------------------- 2. devices
folder = Path(sklearn_ldp.__file__).parent / "deploy" / "client"
module_spec = importlib.util.spec_from_file_location(
    "ldp_client", folder / "__init__.py", submodule_search_locations=[str(folder)])
client = importlib.util.module_from_spec(module_spec)
sys.modules["ldp_client"] = client  # its modules import each other relatively
module_spec.loader.exec_module(client)

rng = np.random.default_rng(7)
n_users = 20_000
records = pd.DataFrame({
    "age": rng.choice(categories["age"], size=n_users, p=[0.3, 0.5, 0.2]),
    "smoker": rng.choice(categories["smoker"], size=n_users, p=[0.8, 0.2]),
})
received = json.loads(shipped)
device = client.Randomizer.from_json(received["mechanism"], categories=received["categories"],
                                     seed=2024)  # simulation only: devices omit the seed
wire = [json.dumps(device.privatize(record)) for record in records.to_dict("records")]

# ---------------------------------------------------------------- 3. server: decode
reports = reports_from_client([json.loads(message) for message in wire], encoder.mechanism_,
                              domain=encoder.domain_, workload=encoder.workload_)
estimator = WorkloadEstimator(workload=W).fit(reports)

truth = W.toarray() @ np.bincount(Domain(categories).encode(records), minlength=6)
variance = encoder.mechanism_.query_variance(W.toarray()) @ np.bincount(
    Domain(categories).encode(records), minlength=6)
table = pd.DataFrame({"estimate": estimator.answers_.to_numpy().round(0), "truth": truth,
                      "standard error": np.sqrt(variance).round(0)},
                     index=estimator.answers_.index)
print(f"{n_users} devices, mechanism {encoder.mechanism_.kind!r}, epsilon = 1.0; "
      f"one report is {len(wire[0])} bytes of JSON, e.g. {wire[0]}")
print(table.to_string())

# The estimates with their 95% intervals (worst case over the data), the truth as diamonds.
HistogramDisplay.from_estimator(estimator, true_values=truth)
plt.show()
