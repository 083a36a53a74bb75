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


# The memoizing kind's state in IndexedDB, across two launches of the browser on one profile:
# the first creates the secret, waits for its commit (flush) and posts the report to a
# dbitflip_pm collection; the second finds the secret and reports the same.
IDB_PAGE = """<!doctype html>
<meta charset="utf-8">
<title>sklearn-ldp client, IndexedDB state</title>
<link rel="icon" href="data:,">
<script type="module">
import { IndexedDBStorage, Randomizer, reportToJSON } from "/client/index.js";

const memoSpec = %(memo_spec)s;
const collection = %(collection)s;
const KEY = "e2e-idb";

function stored() {  // the entry as IndexedDB holds it, through a connection of its own
  return new Promise((resolve, reject) => {
    const opening = indexedDB.open("sklearn-ldp");
    opening.onerror = () => reject(opening.error);
    opening.onsuccess = () => {
      const db = opening.result;
      const read = db.transaction("client-state").objectStore("client-state").get(KEY);
      read.onsuccess = () => { db.close(); resolve(read.result ?? null); };
      read.onerror = () => reject(read.error);
    };
  });
}

try {
  const storage = await IndexedDBStorage.open();
  const existed = storage.get(KEY) !== null;
  const memo = new Randomizer(memoSpec, { state: storage, stateKey: KEY });
  const report = memo.privatize(3);
  await storage.flush();  // the secret is committed before the report leaves the page
  const raw = await stored();
  let posted = null;
  if (!existed) {
    const published = await (await fetch(`/collections/${collection}/spec`)).json();
    const reply = await fetch(`/collections/${collection}/batches`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: `{"batch_id":"idb-1","spec_hash":${JSON.stringify(published.spec_hash)},` +
        `"reports":[${reportToJSON(report)}]}` });
    posted = reply.status;
  }
  storage.close();
  // Two tabs that loaded before either wrote: the second write of a key is refused, never
  // replacing the first (its flush rejects), and the first entry stays.
  const [tabA, tabB] = [await IndexedDBStorage.open(), await IndexedDBStorage.open()];
  const race = `race-${crypto.randomUUID()}`;
  tabA.set(race, "first");
  await tabA.flush();
  tabB.set(race, "second");
  const secondRefused = await tabB.flush().then(() => false, () => true);
  const forgotten = tabB.get(race) === null;  // the refused write is not kept in memory
  const kept = (await IndexedDBStorage.open()).get(race);
  window.e2eResult = { existed, report: reportToJSON(report), posted, secondRefused, kept,
                       forgotten,
                       secret: raw === null ? null : JSON.parse(raw).state.secret };
} catch (error) {
  window.e2eError = String(error && error.stack || error);
}
</script>
"""
MEMO_COLLECTION = "memo-e2e"


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
    store.add_collection(MEMO_COLLECTION, MEMO_SPEC)
    page = PAGE % {"collection": json.dumps(COLLECTION), "categories": json.dumps(CATEGORIES),
                   "records": json.dumps(RECORDS), "memo_spec": MEMO_SPEC}

    idb_page = IDB_PAGE % {"memo_spec": MEMO_SPEC, "collection": json.dumps(MEMO_COLLECTION)}

    async def index(request):
        return HTMLResponse(page)

    async def idb(request):
        return HTMLResponse(idb_page)

    app = Starlette(routes=[Route("/", index), Route("/idb", idb),
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


def _run_page(url, profile):
    run = subprocess.run([NODE, "e2e/run_page.mjs", url, str(profile), CHROMIUM],
                         cwd=CLIENT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-4000:]
    outcome = json.loads(run.stdout.splitlines()[-1])
    assert outcome["problems"] == []
    return outcome["result"]


def _server_dbitflip_report(secret_hex, value):
    """The server's dbitflip_pm report of ``value`` for the device secret ``secret_hex``."""
    from sklearn_ldp.mechanisms.longitudinal.mechanisms import DBitFlipPM, MemoState

    secret = bytes.fromhex(secret_hex)
    words = np.array([[int.from_bytes(secret[:8], "little"),
                       int.from_bytes(secret[8:], "little")]], dtype=np.uint64)
    mechanism = DBitFlipPM(6, 1.0, n_sampled=2)
    state = MemoState(mechanism, 1, secrets=words)
    return np.hstack(mechanism.randomize(np.array([value]), state))[0].tolist()


def test_indexeddb_state_survives_a_reload_and_matches_the_server(collector, tmp_path):
    from sklearn_ldp.deploy.collector import aggregate
    from sklearn_ldp.mechanisms.longitudinal.mechanisms import DBitFlipPM

    url, store, _ = collector
    profile = tmp_path / "chromium-profile"
    first = _run_page(url + "idb", profile)
    assert first["existed"] is False and first["posted"] == 201
    assert first["secondRefused"] is True and first["kept"] == "first"
    assert first["forgotten"] is True
    assert first["secret"] is not None and len(first["secret"]) == 32  # committed (flush)
    assert json.loads(first["report"]) == _server_dbitflip_report(first["secret"], 3)
    # A new browser process on the same profile: the secret is read back, the report repeats.
    second = _run_page(url + "idb", profile)
    assert second["existed"] is True and second["posted"] is None
    assert second["secret"] == first["secret"] and second["report"] == first["report"]
    # The report posted to the dbitflip_pm collection aggregates as the server's.
    mechanism = DBitFlipPM(6, 1.0, n_sampled=2)
    report = json.loads(first["report"])
    expected = mechanism.aggregate((np.array([report[:2]]), np.array([report[2:]])))
    np.testing.assert_array_equal(aggregate(store, MEMO_COLLECTION), expected)


def test_browser_privatizes_and_posts_to_the_collector(collector, tmp_path):
    from sklearn_ldp import WorkloadEstimator
    from sklearn_ldp.deploy.collector import aggregate

    url, store, encoder = collector
    result = _run_page(url, tmp_path / "chromium-profile")
    assert "Chrome" in result["userAgent"]
    assert result["first"] == {"status": 201, "body": {
        "batch_id": result["batchId"], "stored": len(RECORDS), "duplicate": False}}
    assert result["retry"]["status"] == 200 and result["retry"]["body"]["duplicate"] is True
    # The memoizing kind's report in the browser is the server's for the stored secret.
    assert result["memoRepeats"] is True
    assert json.loads(result["memoReport"]) == _server_dbitflip_report(result["memoStored"], 3)

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

