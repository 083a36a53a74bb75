"""The JavaScript client in a real browser: headless Chromium (Debian's ``chromium``, driven by
``playwright-core`` from ``clients/js/node_modules``) opens a page that loads the client as ES
modules, fetches a collection's specification from the reference collector (uvicorn on a
loopback port, SQLite in a temporary folder), privatizes records and posts them as one batch;
the test then reads the store, aggregates, and checks what arrived.

Skipped where Chromium, Node or playwright-core is missing, except under ``CI=true`` (``.ci/run``
installs them), where a missing piece fails the test.
"""

import json
import os
import pathlib
import shutil
import socket
import subprocess
import threading
import time

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CLIENT = ROOT / "clients" / "js"
CHROMIUM = shutil.which("chromium") or (
    "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None)
NODE = shutil.which("node")
PLAYWRIGHT = CLIENT / "node_modules" / "playwright-core"

COLLECTION = "apps-e2e"
CATEGORIES = {"app": ["mail", "maps", "news"], "os": ["android", "ios"]}
# The records the page privatizes: cell (app, os) = 2 * app + os, so the true counts are known.
RECORDS = [{"app": app, "os": os_} for app, os_, times in
           [("mail", "android", 90), ("maps", "ios", 60), ("news", "android", 30),
            ("news", "ios", 20)] for _ in range(times)]
TRUE_COUNTS = np.array([90, 0, 0, 60, 30, 20])
MEMO_SPEC = ('{"version": 1, "mechanism": "dbitflip_pm", "n_cells": 6, "epsilon": 1.0, '
             '"n_sampled": 2}')


def _missing():
    pieces = {"chromium": CHROMIUM, "node": NODE,
              "playwright-core (npm ci in clients/js)": PLAYWRIGHT.is_dir() or None}
    return [name for name, found in pieces.items() if not found]


def _require_browser():
    missing = _missing()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but the browser end-to-end test lacks {missing} "
                        "(.ci/run installs them)")
        pytest.skip(f"the browser end-to-end test needs {missing}")


PAGE = """<!doctype html>
<meta charset="utf-8">
<title>sklearn-ldp client, end to end</title>
<link rel="icon" href="data:,">
<script type="module">
import { LocalStorage, Randomizer, reportToJSON } from "/client/index.js";

const collection = %(collection)s;
const categories = %(categories)s;
const records = %(records)s;

async function post(body) {
  const reply = await fetch(`/collections/${collection}/batches`, {
    method: "POST", headers: { "Content-Type": "application/json" }, body });
  return { status: reply.status, body: await reply.json() };
}

try {
  const published = await (await fetch(`/collections/${collection}/spec`)).json();
  const randomizer = new Randomizer(published.spec, { categories });
  const started = performance.now();
  const reports = records.map((record) => randomizer.privatize(record));
  const millisecondsPerRecord = (performance.now() - started) / records.length;
  const batchId = crypto.randomUUID();
  // The body as text: reportToJSON writes the reports exactly (BigInt seeds included).
  const body = `{"batch_id":${JSON.stringify(batchId)},` +
    `"spec_hash":${JSON.stringify(published.spec_hash)},` +
    `"reports":[${reports.map(reportToJSON).join(",")}]}`;
  const first = await post(body);
  const retry = await post(body); // the same batch again: stored once
  // A memoizing kind keeps its secret in the page's localStorage: its reports repeat, also
  // from a second Randomizer on the same storage.
  const memoSpec = %(memo_spec)s;
  const memo = new Randomizer(memoSpec, { state: new LocalStorage(), stateKey: "e2e-memo" });
  const memoReport = reportToJSON(memo.privatize(3));
  const again = new Randomizer(memoSpec, { state: new LocalStorage(), stateKey: "e2e-memo" });
  const memoRepeats = [1, 2, 3].every(() => reportToJSON(memo.privatize(3)) === memoReport) &&
    reportToJSON(again.privatize(3)) === memoReport;
  const memoStored = JSON.parse(localStorage.getItem("e2e-memo")).state.secret;
  window.e2eResult = { batchId, first, retry, nReports: reports.length,
                       millisecondsPerRecord, userAgent: navigator.userAgent,
                       memoReport, memoRepeats, memoStored };
} catch (error) {
  window.e2eError = String(error && error.stack || error);
}
</script>
"""


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def collector(tmp_path):
    """A collector on a loopback port serving the page and the client's ES modules on the same
    origin (no CORS needed), its SQLite store in ``tmp_path``."""
    _require_browser()  # before anything starts
    uvicorn = pytest.importorskip("uvicorn")
    pytest.importorskip("starlette")
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from sklearn_ldp import LDPEncoder
    from sklearn_ldp.deploy.collector import SQLiteStore, create_app

    encoder = LDPEncoder(categories=CATEGORIES, strategy="oue", epsilon=2.0).fit()
    store = SQLiteStore(str(tmp_path / "reports.db"))
    store.add_collection(COLLECTION, encoder.client_spec())
    page = PAGE % {"collection": json.dumps(COLLECTION), "categories": json.dumps(CATEGORIES),
                   "records": json.dumps(RECORDS), "memo_spec": MEMO_SPEC}

    async def index(request):
        return HTMLResponse(page)

    app = Starlette(routes=[Route("/", index),
                            Mount("/client", StaticFiles(directory=CLIENT / "src")),
                            Mount("/", create_app(store))])
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           access_log=False, lifespan="off"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the collector did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/", store, encoder
    finally:
        server.should_exit = True
        thread.join(timeout=30)
        store.close()


def test_browser_privatizes_and_posts_to_the_collector(collector, tmp_path):
    from sklearn_ldp import WorkloadEstimator
    from sklearn_ldp.deploy.collector import aggregate

    url, store, encoder = collector
    run = subprocess.run(
        [NODE, "e2e/run_page.mjs", url, str(tmp_path / "chromium-profile"), CHROMIUM],
        cwd=CLIENT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    outcome = json.loads(run.stdout.splitlines()[-1])
    assert outcome["problems"] == []
    result = outcome["result"]
    assert "Chrome" in result["userAgent"]
    assert result["first"] == {"status": 201, "body": {
        "batch_id": result["batchId"], "stored": len(RECORDS), "duplicate": False}}
    assert result["retry"]["status"] == 200 and result["retry"]["body"]["duplicate"] is True
    # The memoizing kind's report in the browser is the server's for the stored secret.
    assert result["memoRepeats"] is True
    from sklearn_ldp.mechanisms.longitudinal.mechanisms import DBitFlipPM, MemoState

    secret = bytes.fromhex(result["memoStored"])
    words = np.array([[int.from_bytes(secret[:8], "little"),
                       int.from_bytes(secret[8:], "little")]], dtype=np.uint64)
    mechanism = DBitFlipPM(6, 1.0, n_sampled=2)
    server = np.hstack(mechanism.randomize(np.array([3]), MemoState(mechanism, 1, secrets=words)))
    assert json.loads(result["memoReport"]) == server[0].tolist()

    # Stored once, and every report is valid: aggregate checks each batch again against OUE.
    assert set(store.batch_ids(COLLECTION)) == {result["batchId"]}
    assert store.count(COLLECTION) == (1, len(RECORDS))  # (batches, reports)
    total = aggregate(store, COLLECTION, domain=encoder.domain_)
    assert len(total) == len(RECORDS)

    # The counts estimated from the browser's reports are unbiased: within 5 standard
    # deviations of the truth (OUE's variance per cell is n q (1 - q) / (p - q)^2 plus the
    # cell's own term, bounded here by n (p(1-p) + q(1-q)) / (p - q)^2).
    counts = WorkloadEstimator(workload="histogram").fit(total).answers_
    p, q = 0.5, 1 / (1 + np.exp(2.0))
    sd = np.sqrt(len(RECORDS) * (p * (1 - p) + q * (1 - q))) / (p - q)
    assert np.all(np.abs(counts - TRUE_COUNTS) < 5 * sd), (counts, TRUE_COUNTS, sd)

