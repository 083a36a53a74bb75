"""Sustained throughput of the reference collector on loopback, SQLite and PostgreSQL.

The collector runs as deployed (``python -m sklearn_ldp serve``: one uvicorn
process, access log off) on a free loopback port. ``--clients`` threads post ``--reports``
randomized-response reports (k = 16, epsilon = 1) in batches of ``--batch``; the bodies are
encoded before the clock starts, so the figure is the collector's: receive, parse, check
every report, store each batch in its own committed transaction (SQLite: WAL,
``synchronous=FULL``), acknowledge. Then the stored reports are aggregated and compared with
the reports sent (nothing lost or doubled), and the aggregation's own rate is printed.

Run from the worktree root (so the worktree's package is the one served)::

    PYTHONPATH=. python benchmarks/bench_collector.py --reports 1000000
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

MECHANISM = RandomizedResponse(16, 1.0)


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


def measure(url, args, spec_path):
    rng = np.random.default_rng(0)
    n_batches = args.reports // args.batch
    arrays = [MECHANISM.randomize(rng.integers(0, 16, args.batch), rng)
              for _ in range(n_batches)]
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
    exact = np.array_equal(total.statistic, MECHANISM.aggregate(np.concatenate(arrays)))
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
    args = parser.parse_args()
    folder = tempfile.mkdtemp()
    spec_path = os.path.join(folder, "spec.json")
    with open(spec_path, "w") as file:
        file.write(MECHANISM.to_json())
    targets = [("sqlite", os.path.join(folder, "reports.db"))]
    if args.postgres:
        drop_tables(args.postgres)
        targets.append(("postgresql", args.postgres))
    print(f"{args.reports:,} reports, batches of {args.batch}, {args.clients} clients, "
          f"{os.cpu_count()} cores")
    for name, url in targets:
        result = measure(url, args, spec_path)
        print(f"{name:>10}: {result['reports']:,} reports in {result['seconds']:.1f} s = "
              f"{result['reports'] / result['seconds']:,.0f} reports/s sustained; "
              f"stored (batches, reports) = {result['stored']}, refused {result['errors']}, "
              f"aggregate exact: {result['exact']} "
              f"({result['reports'] / result['aggregate_seconds']:,.0f} reports/s)")


if __name__ == "__main__":
    main()
