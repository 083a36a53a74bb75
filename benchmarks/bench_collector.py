"""Sustained throughput of the reference collector on loopback, SQLite and PostgreSQL.

The collector runs as deployed (``python -m sklearn_ldp serve``: one uvicorn
process, access log off) on a free loopback port. ``--clients`` threads post ``--reports``
reports in batches of ``--batch``: ``--kind rr`` (default) randomized response (k = 16,
epsilon = 1), a registered mechanism stored as packed bytes; ``--kind hybrid`` (the Hybrid
mean of a number, epsilon = 1) and ``--kind pem`` (prefix heavy hitters, 32-bit values,
``[round, seed, y]`` reports), math-layer kinds checked by ``stack_client_reports`` and stored
as JSON. The bodies are
encoded before the clock starts, so the figure is the collector's: receive, parse, check
every report, store each batch in its own committed transaction (SQLite: WAL,
``synchronous=FULL``), acknowledge. Then the stored reports are aggregated and compared with
the reports sent (nothing lost or doubled), and the aggregation's own rate is printed.

Run from the worktree root (so the worktree's package is the one served)::

    PYTHONPATH=. python benchmarks/bench_collector.py --reports 1000000
    PYTHONPATH=. python benchmarks/bench_collector.py --reports 200000 --kind pem
    PYTHONPATH=. python benchmarks/bench_collector.py --postgres postgresql://u:p@127.0.0.1/db

With ``--postgres`` (or ``SKLEARN_LDP_TEST_POSTGRES`` set) PostgreSQL is measured after
SQLite; its tables ``ldp_batches`` and ``ldp_collections`` are dropped first.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

import httpx
import numpy as np

from sklearn_ldp.deploy.collector import aggregate, open_store
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters
from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values
from sklearn_ldp.mechanisms.numeric.means import HybridMechanism


def _sorted_rows(array):
    return array[np.lexsort(array.T[::-1])]


class Kind:
    """A mechanism, its spec text, reports of one batch (the array ``randomize`` returns,
    whose ``tolist()`` is the devices' wire form) and the exactness check of the aggregate."""

    def __init__(self, name):
        self.name = name
        if name == "rr":
            self.mechanism = RandomizedResponse(16, 1.0)
            self.spec = self.mechanism.to_json()
        elif name == "hybrid":
            self.mechanism = HybridMechanism(1.0, bounds=(0, 100))
            self.spec = json.dumps(self.mechanism.to_dict())
        else:
            self.mechanism = PrefixHeavyHitters(32, 2.0, n_candidates=8)
            self.spec = json.dumps(self.mechanism.to_dict())

    def batch(self, n, rng):
        if self.name == "rr":
            return self.mechanism.randomize(rng.integers(0, 16, n), rng)
        if self.name == "hybrid":
            return self.mechanism.randomize(rng.uniform(0, 100, n), rng)
        return self.mechanism.randomize(encode_values(rng.integers(0, 64, n), 32), rng)

    def exact(self, total, arrays):
        sent = np.concatenate(arrays)
        if self.name == "rr":
            return np.array_equal(total.statistic, self.mechanism.aggregate(sent))
        if self.name == "hybrid":  # float sums, in batch-id order
            return np.allclose(total, self.mechanism.aggregate(sent), rtol=1e-12, atol=0)
        return np.array_equal(_sorted_rows(total), _sorted_rows(sent))


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start_collector(url, spec_path):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "sklearn_ldp", "serve", "--store", url,
         "--collection", f"bench={spec_path}", "--port", str(port)],
        stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            return process, base, httpx.get(f"{base}/collections/bench/spec").json()[
                "spec_hash"]
        except httpx.TransportError:
            time.sleep(0.2)
    process.kill()
    raise RuntimeError("the collector did not start")


def measure(url, args, spec_path, kind):
    rng = np.random.default_rng(0)
    n_batches = args.reports // args.batch
    arrays = [kind.batch(args.batch, rng) for _ in range(n_batches)]
    process, base, spec_hash = start_collector(url, spec_path)
    bodies = [json.dumps({"batch_id": f"b{index:07d}", "spec_hash": spec_hash,
                          "reports": array.tolist()}).encode() for index, array in
              enumerate(arrays)]
    errors = []

    def client(k):
        with httpx.Client(timeout=120) as http:
            for body in bodies[k::args.clients]:
                response = http.post(f"{base}/collections/bench/batches", content=body,
                                     headers={"content-type": "application/json"})
                if response.status_code != 201:
                    errors.append(response.text)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(k,)) for k in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    process.terminate()
    process.wait()
    store = open_store(url)
    start = time.perf_counter()
    total = aggregate(store, "bench")
    aggregate_seconds = time.perf_counter() - start
    exact = kind.exact(total, arrays)
    return {"reports": n_batches * args.batch, "seconds": seconds, "errors": len(errors),
            "stored": store.count("bench"), "exact": exact,
            "aggregate_seconds": aggregate_seconds}


def drop_tables(dsn):
    import psycopg

    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("DROP TABLE IF EXISTS ldp_batches, ldp_collections")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=10**6)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--postgres", default=os.environ.get("SKLEARN_LDP_TEST_POSTGRES"))
    parser.add_argument("--kind", choices=["rr", "hybrid", "pem"], default="rr")
    args = parser.parse_args()
    kind = Kind(args.kind)
    folder = tempfile.mkdtemp()
    spec_path = os.path.join(folder, "spec.json")
    with open(spec_path, "w") as file:
        file.write(kind.spec)
    targets = [("sqlite", os.path.join(folder, "reports.db"))]
    if args.postgres:
        drop_tables(args.postgres)
        targets.append(("postgresql", args.postgres))
    print(f"{args.reports:,} {kind.mechanism.kind} reports, batches of {args.batch}, "
          f"{args.clients} clients, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    for name, url in targets:
        result = measure(url, args, spec_path, kind)
        print(f"{name:>10}: {result['reports']:,} reports in {result['seconds']:.1f} s = "
              f"{result['reports'] / result['seconds']:,.0f} reports/s sustained; "
              f"stored (batches, reports) = {result['stored']}, refused {result['errors']}, "
              f"aggregate exact: {result['exact']} "
              f"({result['reports'] / result['aggregate_seconds']:,.0f} reports/s)")


if __name__ == "__main__":
    main()
