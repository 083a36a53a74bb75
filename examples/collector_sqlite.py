"""A collector with a real database: devices post batches, the server stores and aggregates
=========================================================================================

A telemetry team asks which app each user opened most today, under local differential
privacy. The server fits an :class:`~sklearn_ldp.LDPEncoder`, registers a collection in a
SQLite store and serves it with the reference collector
(:mod:`sklearn_ldp.deploy.collector`). Each device fetches the collection's specification,
privatizes its own answer with the device client and posts it in a batch; a batch that is
retried is stored once, and a batch with a report the mechanism cannot produce is refused
whole. The server then aggregates the stored reports (one batch in memory at a time) and
fits an estimator.

The HTTP calls go through Starlette's in-process test client; in production the same
application runs under uvicorn (``sklearn-ldp serve``, see
``docs/collector.md``) behind a TLS proxy. Needs ``pip install sklearn_ldp[server]``.

Run:  python examples/collector_sqlite.py      (a few seconds)
"""

import json
import os
import tempfile
import uuid

import numpy as np
from starlette.testclient import TestClient

from sklearn_ldp import LDPEncoder, WorkloadEstimator
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.collector import SQLiteStore, aggregate, create_app

APPS = ["mail", "maps", "music", "news"]
TRUE_SHARES = [0.4, 0.1, 0.2, 0.3]
N_DEVICES = 20_000
BATCH = 500  # devices' reports relayed together (e.g. by an app's upload queue)

# The server: an encoder, a collection in a SQLite file, the collector application.
encoder = LDPEncoder(categories={"app": APPS}, strategy="oue", epsilon=1.0).fit()
store = SQLiteStore(os.path.join(tempfile.mkdtemp(), "reports.db"))
store.add_collection("apps-today", encoder.client_spec())
http = TestClient(create_app(store))

# The devices: fetch the specification once, privatize their own answer.
published = http.get("/collections/apps-today/spec").json()
randomizer = Randomizer.from_json(json.dumps(published["spec"]))
answers = np.random.default_rng(0).choice(len(APPS), N_DEVICES, p=TRUE_SHARES)
reports = [randomizer.privatize(int(app)) for app in answers]

statuses = []
for start in range(0, N_DEVICES, BATCH):
    batch = {"batch_id": str(uuid.uuid4()), "spec_hash": published["spec_hash"],
             "reports": reports[start:start + BATCH]}
    statuses.append(http.post("/collections/apps-today/batches", json=batch).status_code)
    if start == 0:  # the reply was lost: the device sends the same batch again
        retry = http.post("/collections/apps-today/batches", json=batch)
        print("retry:", retry.status_code, retry.json())
print("batches stored:", statuses.count(201), "of", len(statuses))

# A crafted batch: OUE reports are 4 bits packed in one byte; 255 sets bits no device sets.
crafted = {"batch_id": str(uuid.uuid4()), "spec_hash": published["spec_hash"],
           "reports": [[3], [255]]}
refused = http.post("/collections/apps-today/batches", json=crafted)
print("crafted batch:", refused.status_code, refused.json()["error"])
print("stored (batches, reports):", store.count("apps-today"))

# The server: aggregate the stored reports and estimate the shares.
total = aggregate(store, "apps-today", domain=encoder.domain_)
estimate = WorkloadEstimator().fit(total).answers_ / len(total)
for app, share, true in zip(APPS, estimate, TRUE_SHARES, strict=True):
    print(f"{app:>6}: estimated {share:.3f}  (true {true:.2f})")
