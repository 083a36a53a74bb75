"""The reference collector's HTTP API and stores, in process (Starlette's TestClient).

Every test runs on SQLite and on PostgreSQL. The PostgreSQL case reads a DSN from
``SKLEARN_LDP_TEST_POSTGRES``; without one it is skipped, except under ``CI=true`` where a
missing DSN fails (CI installs and starts PostgreSQL, see ``.ci/run``).
"""

import json
import logging
import os
from urllib.parse import quote

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from starlette.testclient import TestClient  # noqa: E402

from sklearn_ldp import LDPEncoder, WorkloadEstimator  # noqa: E402
from sklearn_ldp.deploy.client import Randomizer  # noqa: E402
from sklearn_ldp.deploy.collector import (  # noqa: E402
    PostgresStore,
    SQLiteStore,
    aggregate,
    create_app,
    open_store,
)
from sklearn_ldp.mechanisms import (  # noqa: E402
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
)

POSTGRES_ENV = "SKLEARN_LDP_TEST_POSTGRES"
MECHANISM = RandomizedResponse(5, 1.0)


def postgres_dsn():
    """The test database's DSN; skips (or fails under CI=true) when it is not set."""
    dsn = os.environ.get(POSTGRES_ENV)
    if not dsn:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI=true but {POSTGRES_ENV} is unset: .ci/run must start PostgreSQL "
                        "and export its DSN.")
        pytest.skip(f"set {POSTGRES_ENV} to a PostgreSQL DSN to run the PostgreSQL case")
    return dsn


def make_store(kind, tmp_path):
    """A fresh, empty store of ``kind`` ("sqlite" or "postgres")."""
    if kind == "sqlite":
        return SQLiteStore(tmp_path / "reports.db")
    import psycopg

    dsn = postgres_dsn()
    # One schema per test process: the suite runs files on two workers at once, and one
    # worker's fresh store must not drop the tables that the other is writing to.
    schema = f"test_{os.environ.get('PYTEST_XDIST_WORKER', 'main')}"
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        connection.execute(f"DROP TABLE IF EXISTS {schema}.ldp_batches, "
                           f"{schema}.ldp_collections")
    return PostgresStore(with_search_path(dsn, schema))


def with_search_path(dsn, schema):
    """``dsn`` whose sessions use ``schema``; a URI stays a URI (``serve --store`` takes one)."""
    options = f"-c search_path={schema}"
    if dsn.startswith(("postgresql://", "postgres://")):
        return f"{dsn}{'&' if '?' in dsn else '?'}options={quote(options)}"
    from psycopg.conninfo import make_conninfo

    return make_conninfo(dsn, options=options)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    store = make_store(request.param, tmp_path)
    yield store
    store.close()


@pytest.fixture
def http(store):
    store.add_collection("survey", MECHANISM)
    return TestClient(create_app(store, max_batch_reports=100, max_body_bytes=20_000))


def spec_hash(http, name="survey"):
    return http.get(f"/collections/{name}/spec").json()["spec_hash"]


def post(http, reports, batch_id="b1", name="survey", digest=None, **kwargs):
    batch = {"batch_id": batch_id, "spec_hash": digest or spec_hash(http, name),
             "reports": reports}
    return http.post(f"/collections/{name}/batches", json=batch, **kwargs)


def assert_refused(response, status, words, store, stored=(0, 0)):
    """A 4xx/5xx with a one-line reason naming ``words``, and nothing more stored."""
    assert response.status_code == status, response.text
    reason = response.json()["error"]
    assert "\n" not in reason and len(reason) <= 300
    assert words in reason, reason
    assert store.count("survey") == stored


# ---------------------------------------------------------------------- the API
def test_spec_is_served_with_its_hash_and_rebuilds_the_client(http):
    body = http.get("/collections/survey/spec").json()
    assert body["collection"] == "survey"
    assert len(body["spec_hash"]) == 64
    randomizer = Randomizer.from_json(json.dumps(body["spec"]), seed=0)
    reports = [randomizer.privatize(value) for value in [0, 1, 2, 3, 4] * 4]
    assert post(http, reports).status_code == 201


def test_stored_batches_aggregate_like_in_memory(http, store):
    rng = np.random.default_rng(1)
    arrays = [MECHANISM.randomize(rng.integers(0, 5, 100), rng) for _ in range(5)]
    for index, array in enumerate(arrays):
        response = post(http, array.tolist(), batch_id=f"batch-{index}")
        assert response.status_code == 201
        assert response.json() == {"batch_id": f"batch-{index}", "stored": 100,
                                   "duplicate": False}
    total = aggregate(store, "survey")
    assert np.array_equal(total.statistic, MECHANISM.aggregate(np.concatenate(arrays)))
    assert store.count("survey") == (5, 500)


@pytest.mark.parametrize("mechanism", [OptimizedUnaryEncoding(20, 1.0),
                                       OptimizedLocalHashing(50, 2.0),
                                       RandomizedResponse(3, 0.5)])
def test_aggregate_equals_in_memory_and_estimators_fit(store, mechanism):
    collection = store.add_collection("c", mechanism)
    rng = np.random.default_rng(2)
    arrays = [mechanism.randomize(rng.integers(0, mechanism.n_inputs, size), rng)
              for size in (1, 50, 333)]
    for index, array in enumerate(arrays):
        assert store.put_batch(collection, f"b{index}", array) is True
    total = aggregate(store, "c")
    expected = mechanism.aggregate(np.concatenate(arrays))
    assert np.array_equal(total.statistic, expected) and len(total) == 384
    assert np.allclose(WorkloadEstimator().fit(total).answers_,
                       WorkloadEstimator().fit(type(total)(expected, mechanism)).answers_)


def test_encoder_spec_end_to_end(store):
    encoder = LDPEncoder(categories={"app": ["mail", "maps", "news"]}, strategy="oue",
                         epsilon=1.0).fit()
    store.add_collection("apps", encoder.client_spec())
    http = TestClient(create_app(store))
    spec = http.get("/collections/apps/spec").json()
    randomizer = Randomizer.from_json(json.dumps(spec["spec"]), seed=3)
    reports = [randomizer.privatize(value) for value in [0, 1, 2, 2] * 25]
    response = http.post("/collections/apps/batches", json={
        "batch_id": "d1", "spec_hash": spec["spec_hash"], "reports": reports})
    assert response.status_code == 201
    assert len(WorkloadEstimator().fit(aggregate(store, "apps")).answers_) == 3


def test_retried_batch_is_stored_once(http, store):
    assert post(http, [0, 1, 2]).status_code == 201
    again = post(http, [0, 1, 2])
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert store.count("survey") == (1, 3)


def test_same_batch_id_with_other_reports_is_409(http, store):
    assert post(http, [0, 1, 2]).status_code == 201
    assert_refused(post(http, [0, 1, 3]), 409, "already stored with other reports", store,
                   stored=(1, 3))
    assert aggregate(store, "survey").statistic.tolist() == \
        MECHANISM.aggregate(np.array([0, 1, 2], dtype=np.uint8)).tolist()


@pytest.mark.parametrize("body, words", [
    (b"{not json", "not valid JSON"),
    (b"[1, 2]", "must be a JSON object"),
    (b'"x"', "must be a JSON object"),
    (b'{"batch_id": "a", "reports": [1]}', "missing ['spec_hash']"),
    (b'{"batch_id": "a", "spec_hash": "h", "reports": [1], "ip": "1.2.3.4"}', "unknown"),
    (b'{"batch_id": 7, "spec_hash": "h", "reports": [1]}', "batch_id must be"),
    (b'{"batch_id": "a b", "spec_hash": "h", "reports": [1]}', "batch_id must be"),
    (b'{"batch_id": "", "spec_hash": "h", "reports": [1]}', "batch_id must be"),
    (b'{"batch_id": "a", "spec_hash": null, "reports": [1]}', "spec_hash must be a string"),
    (b'{"batch_id": "a", "spec_hash": "h", "reports": []}', "non-empty list"),
    (b'{"batch_id": "a", "spec_hash": "h", "reports": {"0": 1}}', "non-empty list"),
    (b'{"batch_id": "a", "spec_hash": "h", "reports": [NaN]}', "not valid JSON"),
    (b"[" * 10_001 + b"]" * 10_001, "over 20000 bytes"),
    (b"\xff\xfe", "not valid JSON"),
])
def test_malformed_bodies_are_400(http, store, body, words):
    response = http.post("/collections/survey/batches", content=body,
                         headers={"content-type": "application/json"})
    status = 413 if "bytes" in words else 400
    assert_refused(response, status, words, store)


def test_deeply_nested_json_is_400(store):
    store.add_collection("survey", MECHANISM)
    http = TestClient(create_app(store))
    response = http.post("/collections/survey/batches", content=b"[" * 10**5 + b"]" * 10**5)
    assert_refused(response, 400, "not valid JSON", store)


def test_oversized_bodies_and_batches_are_413(http, store):
    assert_refused(post(http, [0] * 101), 413, "at most 100 per batch", store)
    response = http.post("/collections/survey/batches", content=b" " * 20_001)
    assert_refused(response, 413, "over 20000 bytes", store)
    response = http.post("/collections/survey/batches", content=b"{}",
                         headers={"content-length": "99999999999"})
    assert response.status_code == 413
    response = http.post("/collections/survey/batches", content=b"{}",
                         headers={"content-length": "-2"})
    assert_refused(response, 400, "content-length must be", store)


@pytest.mark.parametrize("bad", [5, -1, 256, 1.0, True, "1", None, [1], 2**70])
def test_invalid_report_refuses_the_whole_batch(http, store, bad):
    response = post(http, [0, 1, 2, 3, bad])
    assert_refused(response, 422, "report 4", store)


def test_invalid_packed_bits_are_422(store):
    mechanism = OptimizedUnaryEncoding(10, 1.0)  # 2 bytes a report, bits past 10 must be 0
    store.add_collection("survey", mechanism)
    http = TestClient(create_app(store))
    assert post(http, [[1, 0], [0, 1]]).status_code == 201
    assert_refused(post(http, [[0, 0], [0, 4]], batch_id="b2"), 422, "oue", store,
                   stored=(1, 2))
    assert_refused(post(http, [[0, 0], [0]], batch_id="b3"), 422, "report 1", store,
                   stored=(1, 2))


def test_spec_hash_of_another_collection_is_412(http, store):
    store.add_collection("other", RandomizedResponse(5, 2.0))
    other = spec_hash(http, "other")
    assert other != spec_hash(http)
    assert_refused(post(http, [0, 1], digest=other), 412, "is not the hash", store)
    assert_refused(post(http, [0, 1], digest="0" * 64), 412, "fetch GET", store)


def test_unknown_collection_is_404(http, store):
    assert http.get("/collections/nope/spec").status_code == 404
    assert_refused(post(http, [0], name="nope", digest="h"), 404, "no collection", store)


def test_rate_limit_per_client_token(store):
    store.add_collection("survey", MECHANISM)
    http = TestClient(create_app(store, rate=0.001, burst=2))
    digest = spec_hash(http)
    assert_refused(post(http, [0], digest=digest), 401, "client token", store)
    device = {"Authorization": "Bearer device-1"}
    for index in range(2):
        assert post(http, [0], f"a{index}", digest=digest, headers=device).status_code == 201
    refused = post(http, [0], "a2", digest=digest, headers=device)
    assert_refused(refused, 429, "rate limit", store, stored=(2, 2))
    assert int(refused.headers["retry-after"]) >= 1
    other = {"Authorization": "Bearer device-2"}
    assert post(http, [0], "a3", digest=digest, headers=other).status_code == 201


def test_unreachable_postgres_is_503_and_nothing_acknowledged():
    store = PostgresStore("postgresql://nobody@127.0.0.1:1/none", connect_timeout=2)
    http = TestClient(create_app(store))
    response = http.get("/collections/survey/spec")
    assert response.status_code == 503 and "unavailable" in response.json()["error"]
    response = http.post("/collections/survey/batches",
                         json={"batch_id": "a", "spec_hash": "h", "reports": [0]})
    assert response.status_code == 503 and response.headers["retry-after"]


def test_database_failing_mid_request_is_503(http, store, monkeypatch, caplog):
    caplog.set_level(logging.WARNING, logger="sklearn_ldp")
    digest = spec_hash(http)  # the collection is known (cached) before the database fails

    def broken(connection):
        raise store.unavailable_errors[0]("disk I/O error")

    monkeypatch.setattr(store, "_connect", lambda: broken(None))
    store.close()
    response = post(http, [0, 1], digest=digest)
    assert response.status_code == 503 and "nothing was stored" in response.json()["error"]
    assert "disk I/O error" in caplog.text and "disk" not in response.text
    monkeypatch.undo()
    assert store.count("survey") == (0, 0)


def test_unopenable_sqlite_file_is_503(tmp_path):
    store = SQLiteStore(tmp_path)  # a directory: SQLite cannot open it
    response = TestClient(create_app(store)).get("/collections/survey/spec")
    assert response.status_code == 503


def test_logs_hold_no_address_token_or_report(http, store, caplog):
    caplog.set_level(logging.DEBUG, logger="sklearn_ldp")
    headers = {"Authorization": "Bearer secret-token-123"}
    post(http, [0, 9], headers=headers)
    post(http, [0, 1], batch_id="ok", headers=headers)
    http.post("/collections/survey/batches", content=b"{bad")
    text = caplog.text
    assert "refused a request with 422" in text
    for secret in ("testclient", "secret-token-123", "127.0.0.1"):
        assert secret not in text


def test_nothing_but_reports_is_stored(store, tmp_path):
    if not isinstance(store, SQLiteStore):
        pytest.skip("the schema is the same; read it from SQLite")
    import sqlite3

    collection = store.add_collection("survey", MECHANISM)
    store.put_batch(collection, "b", np.array([1, 2], dtype=np.uint8))
    columns = [row[1] for row in sqlite3.connect(store.path).execute(
        "PRAGMA table_info(ldp_batches)")]
    assert columns == ["collection", "batch_id", "digest", "n_reports", "payload",
                       "received_day"]


def test_concurrent_puts_of_one_id_store_it_once(store):
    # 8 threads send the same 20 batch ids, half of them with other reports: per id, one
    # put stores it, the same content is a retry (False), other content a BatchConflict.
    import threading

    from sklearn_ldp.deploy.collector import BatchConflict

    collection = store.add_collection("survey", MECHANISM)
    outcomes = []

    def put(k):
        content = np.array([k % 2, 4], dtype=np.uint8)
        for i in range(20):
            try:
                outcomes.append((i, k % 2, store.put_batch(collection, f"b{i}", content)))
            except BatchConflict:
                outcomes.append((i, k % 2, "conflict"))

    threads = [threading.Thread(target=put, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert store.count("survey") == (20, 40)
    winners = {}
    for i in range(20):
        stored = [parity for j, parity, result in outcomes if j == i and result is True]
        assert len(stored) == 1
        winners[i] = stored[0]
        for j, parity, result in outcomes:
            if j == i and result is not True:
                assert result == (False if parity == winners[i] else "conflict")
    expected = MECHANISM.aggregate(np.array([[winners[i], 4] for i in range(20)],
                                            dtype=np.uint8).ravel())
    assert np.array_equal(aggregate(store, "survey").statistic, expected)


def test_retention_deletes_old_batches(store):
    collection = store.add_collection("survey", MECHANISM)
    store.put_batch(collection, "b", np.array([1, 2], dtype=np.uint8))
    assert store.delete_before("survey", 0) == 0
    assert store.delete_before("survey", 10**6) == 1
    assert store.count("survey") == (0, 0)


# ---------------------------------------------------------------------- constructors
def test_collections_are_checked(store):
    store.add_collection("survey", MECHANISM)
    store.add_collection("survey", MECHANISM.to_json())  # the same spec again: fine
    with pytest.raises(ValueError, match="another specification"):
        store.add_collection("survey", RandomizedResponse(5, 2.0))
    for name in ["", "a b", "x" * 65, "../etc", None, 3]:
        with pytest.raises(ValueError, match="collection name"):
            store.add_collection(name, MECHANISM)
    with pytest.raises(ValueError, match="not valid JSON"):
        store.add_collection("bad", "{")
    with pytest.raises(TypeError, match="spec must be"):
        store.add_collection("bad", 3)
    with pytest.raises(ValueError, match="mechanism"):
        store.add_collection("bad", '{"mechanism": "no_such_kind"}')
    with pytest.raises(ValueError, match="no collection"):
        aggregate(store, "missing")


@pytest.mark.parametrize("options, words", [
    ({"max_batch_reports": 0}, "max_batch_reports"),
    ({"max_body_bytes": 1.5}, "max_body_bytes"),
    ({"rate": -1}, "rate"),
    ({"rate": float("nan")}, "rate"),
    ({"rate": 1, "burst": 0}, "burst"),
])
def test_create_app_options_are_checked(tmp_path, options, words):
    with pytest.raises(ValueError, match=words):
        create_app(SQLiteStore(tmp_path / "r.db"), **options)


def test_open_store(tmp_path):
    assert isinstance(open_store(str(tmp_path / "a.db")), SQLiteStore)
    assert isinstance(open_store("postgresql://u@h/d"), PostgresStore)
    with pytest.raises(ValueError, match="store must be"):
        open_store("")


# ---------------------------------------------------------------------- property test
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5)
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner,
                                                               max_size=4),
    max_leaves=12)


@settings(max_examples=60, deadline=2000,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batch_id=_json_values | st.text(max_size=10), reports=_json_values)
def test_any_bad_batch_is_4xx_and_stores_nothing(tmp_path_factory, batch_id, reports):
    store = SQLiteStore(tmp_path_factory.mktemp("prop") / "r.db")
    store.add_collection("survey", MECHANISM)
    http = TestClient(create_app(store))
    response = post(http, reports, batch_id=batch_id)
    if response.status_code in (200, 201):
        assert store.count("survey")[1] == len(reports)
    else:
        assert 400 <= response.status_code < 500, response.text
        assert store.count("survey") == (0, 0)


# ---------------------------------------------------------------------- sklearn-ldp serve
def test_cli_serve_registers_collections(tmp_path, monkeypatch, capsys):
    from sklearn_ldp.cli import main
    from sklearn_ldp.deploy.collector import app

    served = []
    monkeypatch.setattr(app, "serve", lambda store, **options: served.append((store, options)))
    config = tmp_path / "survey.json"
    config.write_text(json.dumps({"columns": {"app": ["a", "b", "c"]}, "epsilon": 1.0,
                                  "strategy": "oue"}))
    spec, bare = tmp_path / "spec.json", tmp_path / "bare.json"
    assert main(["spec", str(config), "-o", str(spec), "-q"]) == 0
    bare.write_text(MECHANISM.to_json())
    database = str(tmp_path / "reports.db")
    assert main(["serve", "--store", database, "--collection", f"apps={spec}",
                 "--collection", f"rr={bare}", "--port", "9999", "--rate", "2"]) == 0
    store, options = served[0]
    assert options == {"host": "127.0.0.1", "port": 9999, "access_log": False,
                       "max_batch_reports": 10_000, "rate": 2.0, "burst": 10}
    assert json.loads(store.collection("apps").spec) == json.loads(spec.read_text())[
        "mechanism"]
    assert store.collection("rr").mechanism.to_json() == MECHANISM.to_json()
    for bad, words in [("apps", "NAME=SPEC_FILE"), (f"rr={config}", "not a mechanism"),
                       (f"x={tmp_path / 'none.json'}", "no such file"),
                       (f"rr={spec}", "another specification")]:
        assert main(["serve", "--store", database, "--collection", bad]) == 1
        assert words in capsys.readouterr().err
