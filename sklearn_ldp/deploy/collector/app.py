"""The collector's HTTP API, an ASGI application on Starlette.

``GET /collections/{name}/spec``
    ``{"collection": name, "spec": {...}, "spec_hash": "<sha256 hex>"}``: what devices
    rebuild their randomizer from, and the hash their batches must carry.
``POST /collections/{name}/batches``
    A JSON body ``{"batch_id": str, "spec_hash": str, "reports": [...]}`` (reports in the
    device client's format, see ``docs/client.md``; every kind the client randomizes). All or
    nothing: every report is checked against the mechanism
    (:func:`~sklearn_ldp.deploy.collect.reports_from_client`, i.e. its ``report_validity``, or
    for the math-layer kinds :func:`~sklearn_ldp.deploy.collect.stack_client_reports`) before
    the batch is stored in one transaction; the reply is sent
    after the commit. ``201`` stored, ``200`` already stored (a retry), otherwise a 4xx or
    503 with ``{"error": "<one line>"}`` and nothing stored.

Status codes: 400 malformed body, 401 missing client token (when rate-limited), 404 unknown
collection, 409 batch id stored with other reports, 412 spec hash of another specification,
413 body or batch over its cap, 422 a report outside the mechanism's valid set, 429 rate limit
(with ``Retry-After``), 503 database unavailable.
"""

import json
import math
import re
import threading
import time
from collections import OrderedDict

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse
from starlette.routing import Route

from ..._logging import get_logger
from .store import BatchConflict, StoreUnavailable

BATCH_ID_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
BATCH_FIELDS = {"batch_id", "spec_hash", "reports"}

_logger = get_logger("deploy.collector")


class TokenBucket:
    """Per-client token buckets: ``rate`` batches per second, bursts of ``burst``.

    Buckets live in memory only (the tokens are never stored); at most ``max_clients`` are
    kept, the least recently seen forgotten first.

    Parameters
    ----------
    rate : float
        Batches per second refilled in each client's bucket.
    burst : int
        The bucket's size: batches a client may send at once.
    max_clients : int, default=100_000
        Buckets kept in memory.

    Examples
    --------
    >>> bucket = TokenBucket(rate=1.0, burst=2)
    >>> [bucket.take("device-7", now=0.0) for _ in range(3)]
    [0.0, 0.0, 1.0]
    >>> bucket.take("device-7", now=1.0)
    0.0
    """

    def __init__(self, rate, burst, max_clients=100_000):
        if not (isinstance(rate, (int, float)) and math.isfinite(rate) and rate > 0):
            raise ValueError(f"rate must be a positive number of batches per second, got "
                             f"{rate!r}.")
        if type(burst) is not int or burst < 1:
            raise ValueError(f"burst must be a positive integer, got {burst!r}.")
        self.rate, self.burst, self.max_clients = float(rate), burst, int(max_clients)
        self._buckets = OrderedDict()
        self._lock = threading.Lock()

    def take(self, client, now=None):
        """Take one batch from ``client``'s bucket: 0.0 if allowed, else the seconds to wait."""
        now = time.monotonic() if now is None else now
        with self._lock:
            level, last = self._buckets.pop(client, (float(self.burst), now))
            level = min(float(self.burst), level + (now - last) * self.rate)
            wait = 0.0 if level >= 1.0 else (1.0 - level) / self.rate
            self._buckets[client] = (level - 1.0 if wait == 0.0 else level, now)
            if len(self._buckets) > self.max_clients:
                self._buckets.popitem(last=False)
            return wait


class _Refused(Exception):
    """A request refused with ``status`` and a one-line ``reason``."""

    def __init__(self, status, reason, headers=None):
        super().__init__(reason)
        self.status, self.reason, self.headers = status, reason, headers


def _one_line(text, limit=300):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _no_constants(name):
    raise ValueError(f"{name} is not a JSON number")


async def _read_body(request, max_body_bytes):
    declared = request.headers.get("content-length")
    if declared is not None and not declared.isdigit():
        raise _Refused(400, f"content-length must be a number of bytes, got "
                            f"{_one_line(repr(declared), 40)}.")
    if declared is not None and int(declared) > max_body_bytes:
        raise _Refused(413, f"the body is over {max_body_bytes} bytes (content-length "
                            f"{_one_line(declared, 40)}).")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_body_bytes:
            raise _Refused(413, f"the body is over {max_body_bytes} bytes.")
        chunks.append(chunk)
    return b"".join(chunks)


def _parse_batch(body, max_batch_reports):
    """The batch's fields, or :class:`_Refused` (400/413) naming what is wrong."""
    try:
        batch = json.loads(body, parse_constant=_no_constants)
    except (ValueError, RecursionError) as exc:
        raise _Refused(400, f"the body is not valid JSON: {_one_line(exc, 120)}") from None
    if not isinstance(batch, dict):
        raise _Refused(400, f"the body must be a JSON object {sorted(BATCH_FIELDS)}, got "
                            f"{type(batch).__name__}.")
    if set(batch) != BATCH_FIELDS:
        missing, extra = BATCH_FIELDS - set(batch), set(batch) - BATCH_FIELDS
        raise _Refused(400, f"the batch must hold exactly the fields {sorted(BATCH_FIELDS)}"
                            f" (missing {sorted(missing)}, unknown "
                            f"{_one_line(sorted(extra), 80)}).")
    batch_id, reports = batch["batch_id"], batch["reports"]
    if not isinstance(batch_id, str) or BATCH_ID_PATTERN.fullmatch(batch_id) is None:
        raise _Refused(400, f"batch_id must be 1 to 128 letters, digits or '_.:-', got "
                            f"{_one_line(repr(batch_id), 80)}.")
    if not isinstance(batch["spec_hash"], str):
        raise _Refused(400, f"spec_hash must be a string, got "
                            f"{type(batch['spec_hash']).__name__}.")
    if not isinstance(reports, list) or not reports:
        raise _Refused(400, "reports must be a non-empty list of reports.")
    if len(reports) > max_batch_reports:
        raise _Refused(413, f"the batch holds {len(reports)} reports; at most "
                            f"{max_batch_reports} per batch.")
    return batch_id, batch["spec_hash"], reports


def create_app(store, *, max_batch_reports=10_000, max_body_bytes=4 * 2**20, rate=None,
               burst=10):
    """The collector as an ASGI application (serve it with uvicorn, see :func:`serve`).

    Parameters
    ----------
    store : SQLiteStore or PostgresStore
        Where collections and batches are kept (see :func:`~.store.open_store`).
    max_batch_reports : int, default=10_000
        Reports per batch; a larger batch is refused with 413.
    max_body_bytes : int, default=4 MiB
        Bytes per request body; a larger body is refused with 413 before it is parsed.
    rate : float, optional
        Batches per second per client token (``Authorization: Bearer <token>``); ``None``
        (default) disables rate limiting. When set, a request without a token is refused
        with 401.
    burst : int, default=10
        The token bucket's size (batches a client may send at once).

    Returns
    -------
    starlette.applications.Starlette
        The application; its routes are described in this module's docstring.

    See Also
    --------
    serve : Runs it with uvicorn.
    sklearn_ldp.deploy.collector.aggregate : Reads the stored reports back.

    Examples
    --------
    >>> import os, tempfile
    >>> from starlette.testclient import TestClient
    >>> from sklearn_ldp.deploy.collector import SQLiteStore
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> store = SQLiteStore(os.path.join(tempfile.mkdtemp(), "reports.db"))
    >>> _ = store.add_collection("survey", RandomizedResponse(3, 1.0))
    >>> http = TestClient(create_app(store))
    >>> spec = http.get("/collections/survey/spec").json()
    >>> batch = {"batch_id": "b1", "spec_hash": spec["spec_hash"], "reports": [0, 2, 1]}
    >>> http.post("/collections/survey/batches", json=batch).status_code
    201
    >>> http.post("/collections/survey/batches", json=batch).json()
    {'batch_id': 'b1', 'stored': 3, 'duplicate': True}
    >>> batch = {**batch, "batch_id": "b2", "reports": [0, 7]}
    >>> http.post("/collections/survey/batches", json=batch).status_code
    422
    """
    if type(max_batch_reports) is not int or max_batch_reports < 1:
        raise ValueError(f"max_batch_reports must be a positive integer, got "
                         f"{max_batch_reports!r}.")
    if type(max_body_bytes) is not int or max_body_bytes < 1:
        raise ValueError(f"max_body_bytes must be a positive integer, got {max_body_bytes!r}.")
    limiter = None if rate is None else TokenBucket(rate, burst)

    async def find(name):
        collection = await run_in_threadpool(store.collection, name)
        if collection is None:
            raise _Refused(404, f"no collection named {_one_line(repr(name), 80)}.")
        return collection

    async def spec(request):
        collection = await find(request.path_params["name"])
        return JSONResponse({"collection": collection.name,
                             "spec": json.loads(collection.spec),
                             "spec_hash": collection.spec_hash})

    def check_and_store(collection, batch_id, reports):
        try:
            checked = collection.check(reports)
        except (ValueError, TypeError) as exc:
            raise _Refused(422, _one_line(exc)) from None
        try:
            return store.put_batch(collection, batch_id, checked), len(checked)
        except BatchConflict as exc:
            raise _Refused(409, _one_line(exc)) from None

    async def batches(request):
        if limiter is not None:
            authorization = request.headers.get("authorization", "")
            token = authorization.removeprefix("Bearer ").strip()
            if not authorization.startswith("Bearer ") or not token:
                raise _Refused(401, "a client token is required: Authorization: Bearer "
                                    "<token>.")
            wait = limiter.take(token)
            if wait:
                raise _Refused(429, f"rate limit: retry in {wait:.1f} s.",
                               {"Retry-After": str(math.ceil(wait))})
        collection = await find(request.path_params["name"])
        body = await _read_body(request, max_body_bytes)
        batch_id, spec_hash, reports = _parse_batch(body, max_batch_reports)
        if spec_hash != collection.spec_hash:
            raise _Refused(412, f"spec_hash {_one_line(repr(spec_hash), 80)} is not the "
                                f"hash of collection {collection.name!r}'s specification; "
                                f"fetch GET /collections/{collection.name}/spec.")
        stored, n_reports = await run_in_threadpool(check_and_store, collection, batch_id,
                                                    reports)
        return JSONResponse({"batch_id": batch_id, "stored": n_reports,
                             "duplicate": not stored}, status_code=201 if stored else 200)

    async def refused(request, exc):
        # The reason and the status only: never the address, the token or the body.
        _logger.info("refused a request with %d: %s", exc.status, exc.reason)
        return JSONResponse({"error": exc.reason}, status_code=exc.status,
                            headers=exc.headers)

    async def unavailable(request, exc):
        # The database's own message (hosts, ports, paths) goes to the operator, not the client.
        _logger.warning("answered 503: %s", _one_line(exc))
        return JSONResponse({"error": "the database is unavailable; nothing was stored, retry "
                                      "later."}, status_code=503, headers={"Retry-After": "5"})

    routes = [Route("/collections/{name}/spec", spec, methods=["GET"]),
              Route("/collections/{name}/batches", batches, methods=["POST"])]
    return Starlette(routes=routes, exception_handlers={_Refused: refused,
                                                        StoreUnavailable: unavailable})


def serve(store, host="127.0.0.1", port=8000, access_log=False, **options):
    """Serve the collector with uvicorn (blocks until stopped).

    Parameters
    ----------
    store : SQLiteStore or PostgresStore
        Where collections and batches are kept.
    host : str, default="127.0.0.1"
        Bind address; put a TLS-terminating proxy in front (see ``docs/collector.md``).
    port : int, default=8000
        The port to listen on.
    access_log : bool, default=False
        The access log of uvicorn (it holds client addresses): off unless asked for.
    **options
        Passed to :func:`create_app` (``max_batch_reports``, ``rate``, ...).

    See Also
    --------
    create_app : The application served.

    Examples
    --------
    >>> serve(store, port=8000)  # doctest: +SKIP
    """
    import uvicorn

    uvicorn.run(create_app(store, **options), host=host, port=port, access_log=access_log,
                log_level="warning")
