"""The collector as deployed: a real uvicorn process on loopback, concurrent clients.

* Load: 10^5 reports from 8 concurrent clients that also resend some acknowledged batches
  (retries): every batch is stored exactly once, and the stored reports aggregate to
  exactly the reports sent.
* kill -9 during the load: every batch a client saw acknowledged is in the database with its
  reports; after a restart, resending every batch completes the collection with nothing
  doubled.

Both run on SQLite and on PostgreSQL (see ``tests/test_collector.py`` for the DSN).
"""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

httpx = pytest.importorskip("httpx")
pytest.importorskip("uvicorn")

from test_collector import make_store  # noqa: E402

from sklearn_ldp.deploy.collector import aggregate  # noqa: E402
from sklearn_ldp.mechanisms import RandomizedResponse  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
MECHANISM = RandomizedResponse(5, 1.0)
N_CLIENTS = 8


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def store_url(store):
    return getattr(store, "path", None) or store.dsn


class Collector:
    """``python -m sklearn_ldp serve`` in a child process, on a free port."""

    def __init__(self, store, tmp_path):
        spec = tmp_path / "spec.json"
        spec.write_text(MECHANISM.to_json())
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # The worktree's package first, whatever the working directory of pytest.
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sklearn_ldp", "serve", "--store", store_url(store),
             "--collection", f"survey={spec}", "--port", str(self.port)],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while True:
            try:
                self.spec_hash = httpx.get(f"{self.url}/collections/survey/spec").json()[
                    "spec_hash"]
                return
            except httpx.TransportError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the collector did not start: "
                                       f"{self.process.stderr.read().decode()}") from None
                time.sleep(0.2)

    def kill(self):
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


def make_batches(n_batches, size, seed):
    rng = np.random.default_rng(seed)
    return {f"batch-{index:05d}": MECHANISM.randomize(rng.integers(0, 5, size), rng)
            for index in range(n_batches)}


class Client(threading.Thread):
    """Sends its batches; retries on errors; resends some acknowledged batches.

    ``acked`` records the batch ids the collector acknowledged (2xx): a client's view of
    what the collector promised to keep.
    """

    def __init__(self, collector, batches, acked, resend=0.2, stop=None, seed=0):
        super().__init__()
        self.collector, self.batches, self.acked = collector, batches, acked
        self.resend, self.stop = resend, stop
        self.rng = np.random.default_rng(seed)
        self.duplicates = 0
        self.failures = []

    def post(self, http, batch_id):
        body = {"batch_id": batch_id, "spec_hash": self.collector.spec_hash,
                "reports": self.batches[batch_id].tolist()}
        return http.post(f"{self.collector.url}/collections/survey/batches", json=body)

    def run(self):
        with httpx.Client(timeout=60) as http:
            for batch_id in self.batches:
                while True:
                    if self.stop is not None and self.stop.is_set():
                        return
                    try:
                        response = self.post(http, batch_id)
                    except httpx.TransportError:
                        if self.stop is not None:
                            return  # the collector was killed
                        time.sleep(0.1)
                        continue
                    if response.status_code in (200, 201):
                        self.acked.add(batch_id)
                        break
                    if response.status_code != 503:
                        self.failures.append((batch_id, response.status_code, response.text))
                        return
                    time.sleep(0.1)
                if self.rng.random() < self.resend:  # a retry of a batch already stored
                    try:
                        response = self.post(http, batch_id)
                    except httpx.TransportError:
                        continue
                    if response.status_code == 200 and response.json()["duplicate"]:
                        self.duplicates += 1
                    else:
                        self.failures.append((batch_id, response.status_code, response.text))


def run_clients(collector, batches, acked, stop=None):
    ids = list(batches)
    clients = [Client(collector, {i: batches[i] for i in ids[k::N_CLIENTS]}, acked, stop=stop,
                      seed=k) for k in range(N_CLIENTS)]
    for client in clients:
        client.start()
    return clients


def expected_statistic(batches, ids):
    return MECHANISM.aggregate(np.concatenate([batches[i] for i in sorted(ids)]))


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    store = make_store(request.param, tmp_path)
    yield store
    store.close()


def test_load_from_concurrent_clients_nothing_lost_or_doubled(store, tmp_path):
    batches = make_batches(200, 500, seed=0)  # 10^5 reports
    collector = Collector(store, tmp_path)
    acked = set()
    try:
        clients = run_clients(collector, batches, acked)
        for client in clients:
            client.join()
    finally:
        collector.stop()
    assert not [f for client in clients for f in client.failures]
    assert sum(client.duplicates for client in clients) > 0  # retries did happen
    assert acked == set(batches)
    assert store.batch_ids("survey") == set(batches)
    assert store.count("survey") == (200, 10**5)
    assert np.array_equal(aggregate(store, "survey").statistic,
                          expected_statistic(batches, batches))


def test_kill_9_loses_no_acknowledged_batch(store, tmp_path):
    batches = make_batches(400, 250, seed=1)  # 10^5 reports
    collector = Collector(store, tmp_path)
    acked, stop = set(), threading.Event()
    clients = run_clients(collector, batches, acked, stop=stop)
    while len(acked) < 100 and any(client.is_alive() for client in clients):
        time.sleep(0.01)
    collector.kill()
    seen = set(acked)  # acknowledged before the kill was observed
    stop.set()
    for client in clients:
        client.join()
    assert not [f for client in clients for f in client.failures]
    stored = store.batch_ids("survey")
    assert len(seen) >= 100 and seen <= set(acked) <= stored
    assert np.array_equal(aggregate(store, "survey").statistic,
                          expected_statistic(batches, stored))

    # Restarted, every client resends everything: the collection completes, nothing doubled.
    collector = Collector(store, tmp_path)
    try:
        clients = run_clients(collector, batches, acked)
        for client in clients:
            client.join()
    finally:
        collector.stop()
    assert not [f for client in clients for f in client.failures]
    assert store.count("survey") == (400, 10**5)
    assert np.array_equal(aggregate(store, "survey").statistic,
                          expected_statistic(batches, batches))
