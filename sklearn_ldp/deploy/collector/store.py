"""Where the collector keeps batches: one small interface over SQLite and PostgreSQL.

A store holds two tables: the collections (name, client specification, its SHA-256) and the
batches (collection, batch id, digest, number of reports, the packed reports and the UTC day
of receipt for retention). Registered mechanisms and ``"columns"`` records are packed as the
io layer packs them (the bytes of the array ``mechanism.randomize`` returns); the math-layer
kinds (numeric, multi-attribute, heavy hitters, longitudinal), whose reports are not rows of
one array, as the compact JSON list of the reports the devices sent, which
:func:`~sklearn_ldp.deploy.collect.stack_client_reports` reads back. Nothing else is stored:
no address, no client token, no time finer than the day.

:class:`SQLiteStore` (the default: embedded, one file in WAL mode, nothing to start) and
:class:`PostgresStore` (psycopg 3, for a production database) share every statement; they
differ only in how they connect, their placeholders and their blob type.
"""

import datetime
import hashlib
import json
import queue
import re
import sqlite3
import threading

import numpy as np

from ...mechanisms import Mechanism
from ...mechanisms._base.docstrings import shared_sections
from ...mechanisms._base.rows import empty_reports
from ...mechanisms._base.specs import load_mechanism_json
from ..collect import (
    MATH_LAYER_KINDS,
    _math_layer_mechanism,
    reports_from_client,
    stack_client_reports,
)

# The parameter every per-collection method of a store takes, written once.
_collection_parameter = shared_sections({"collection parameter": """\
Parameters
----------
collection : str
    The collection's name."""})

NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS ldp_collections (name TEXT PRIMARY KEY, spec TEXT NOT NULL, "
    "spec_hash TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS ldp_batches (collection TEXT NOT NULL, batch_id TEXT NOT NULL, "
    "digest TEXT NOT NULL, n_reports INTEGER NOT NULL, payload {blob} NOT NULL, "
    "received_day INTEGER NOT NULL, PRIMARY KEY (collection, batch_id))",
)


class StoreUnavailable(RuntimeError):
    """The database cannot be reached or failed: nothing was stored.

    The collector answers it with HTTP 503 and ``Retry-After``.

    See Also
    --------
    BatchConflict : The other error a store raises for a batch.

    Examples
    --------
    >>> raise StoreUnavailable("the database is unavailable: connection refused")
    Traceback (most recent call last):
    ...
    sklearn_ldp.deploy.collector.store.StoreUnavailable: the database is unavailable: ...
    """


class BatchConflict(ValueError):
    """A batch id already stored with other reports (a retry must resend the same batch).

    The collector answers it with HTTP 409.

    See Also
    --------
    StoreUnavailable : The other error a store raises for a batch.

    Examples
    --------
    >>> isinstance(BatchConflict("batch id 'b1' is already stored"), ValueError)
    True
    """


def check_name(name):
    """``name`` if it is a valid collection name (letters, digits, ``_.-``; at most 64).

    Parameters
    ----------
    name : str
        The candidate name; it must start with a letter or digit.

    Returns
    -------
    str
        ``name`` unchanged.

    Raises
    ------
    ValueError
        Not a string of that form (the message quotes it).

    Examples
    --------
    >>> check_name("survey-2026")
    'survey-2026'
    """
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise ValueError(f"collection name must be 1 to 64 letters, digits, '_', '.' or '-' "
                         f"(starting with a letter or digit), got {str(name)[:80]!r}.")
    return name


def canonical_spec(spec):
    """The client specification as canonical JSON text (sorted keys, no spaces).

    Parameters
    ----------
    spec : Mechanism or str
        A :class:`~sklearn_ldp.mechanisms.Mechanism` or the JSON text devices rebuild their
        randomizer from (``LDPEncoder.client_spec()``).

    Returns
    -------
    str
        The canonical text; its SHA-256 is the ``spec_hash`` that batches must carry.

    Raises
    ------
    TypeError
        ``spec`` is neither a mechanism nor a string.
    ValueError
        ``spec`` is not valid JSON.

    Examples
    --------
    >>> canonical_spec('{"n": 2,  "mechanism": "x"}')
    '{"mechanism":"x","n":2}'
    """
    if isinstance(spec, Mechanism):
        spec = spec.to_json()
    if not isinstance(spec, str):
        raise TypeError(f"spec must be a Mechanism or its JSON text, got {type(spec).__name__}.")
    try:
        value = json.loads(spec)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"spec is not valid JSON: {exc}") from None
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class Collection:
    """One collection: its name, canonical specification, hash and mechanism.

    Parameters
    ----------
    name : str
        The collection's name (see :func:`check_name`).
    spec : str
        The canonical client specification (see :func:`canonical_spec`).

    Attributes
    ----------
    spec_hash : str
        SHA-256 (hex) of ``spec``.
    mechanism : Mechanism or math-layer mechanism
        The mechanism rebuilt from ``spec``: it validates and aggregates the reports.
    math_layer : bool
        Whether ``spec`` is a math-layer kind (numeric, multi-attribute, heavy hitters,
        longitudinal): reports checked by
        :func:`~sklearn_ldp.deploy.collect.stack_client_reports` and stored as JSON.
    template : ndarray or None
        A zero-row array with the dtype and row shape of the mechanism's reports (None for
        the math-layer kinds).

    See Also
    --------
    SQLiteStore.add_collection : Registers a collection and returns it.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> c = Collection("ages", canonical_spec(RandomizedResponse(4, 1.0)))
    >>> c.template.dtype, len(c.spec_hash), c.math_layer
    (dtype('uint8'), 64, False)
    >>> from sklearn_ldp.mechanisms.numeric.means import DuchiMechanism
    >>> c = Collection("scores", canonical_spec(json.dumps(DuchiMechanism(1.0).to_dict())))
    >>> c.math_layer, c.pack(c.check([1, 0, 1]))
    (True, b'[1,0,1]')
    """

    def __init__(self, name, spec):
        self.name = check_name(name)
        self.spec = spec
        self.spec_hash = hashlib.sha256(spec.encode("utf-8")).hexdigest()
        kind = json.loads(spec).get("mechanism") if spec.startswith("{") else None
        self.math_layer = kind in MATH_LAYER_KINDS
        if self.math_layer:
            self.mechanism = _math_layer_mechanism(spec)
            self.template = None
        else:
            self.mechanism = load_mechanism_json(spec)
            self.template = np.ascontiguousarray(empty_reports(self.mechanism))

    def check(self, reports):
        """The devices' reports, checked against the mechanism, in the form :meth:`pack` takes.

        Parameters
        ----------
        reports : list
            One report per device, as the client sent it (after a JSON round trip).

        Returns
        -------
        ndarray or list
            Registered kinds: the array ``mechanism.randomize`` returns
            (:func:`~sklearn_ldp.deploy.collect.reports_from_client`); math-layer kinds: the
            list itself, every report accepted by
            :func:`~sklearn_ldp.deploy.collect.stack_client_reports`.

        Raises
        ------
        ValueError
            A report of the wrong form or outside the mechanism's valid set (named).
        """
        if self.math_layer:
            stack_client_reports(reports, self.mechanism)
            return list(reports)
        return reports_from_client(reports, self.mechanism).reports

    def pack(self, checked):
        """The reports as stored.

        Parameters
        ----------
        checked : ndarray or list
            What :meth:`check` returned.

        Returns
        -------
        bytes
            The payload stored for the batch: the bytes of the array (little-endian,
            row-major), or for the math-layer kinds the compact JSON of the list.
        """
        if self.math_layer:
            return json.dumps(checked, separators=(",", ":"), allow_nan=False).encode("utf-8")
        return np.ascontiguousarray(checked,
                                    dtype=self.template.dtype.newbyteorder("<")).tobytes()

    def unpack(self, payload, n_reports):
        """The reports :meth:`pack` stored, checked again, as the mechanism aggregates them.

        Parameters
        ----------
        payload : bytes
            What :meth:`pack` returned.
        n_reports : int
            The number of reports in it.

        Returns
        -------
        ndarray, tuple of ndarray or dict
            Registered kinds: the array of reports; math-layer kinds: what
            :func:`~sklearn_ldp.deploy.collect.stack_client_reports` returns.
        """
        if self.math_layer:
            reports = json.loads(bytes(payload).decode("utf-8"))
            if not isinstance(reports, list) or len(reports) != n_reports:
                raise ValueError(f"a stored batch of collection {self.name!r} does not hold "
                                 f"{n_reports} reports (a database edited by hand).")
            return stack_client_reports(reports, self.mechanism)
        array = np.frombuffer(payload, dtype=self.template.dtype.newbyteorder("<"))
        return array.astype(self.template.dtype, copy=False).reshape(
            (n_reports,) + self.template.shape[1:])


def _today():
    return (datetime.datetime.now(datetime.timezone.utc).date()
            - datetime.date(1970, 1, 1)).days


class _GroupCommit:
    """Group commit: concurrent :meth:`put_batch` calls share one transaction.

    A commit waits for the disk (an fsync), so one transaction per batch caps a store at the
    disk's fsyncs per second. Here each caller queues its batch and waits; one writer thread
    inserts every batch waiting (up to ``MAX_GROUP``) in one transaction, commits once, then
    answers each caller: every batch is still acknowledged only after its commit. The thread
    exits after ``IDLE_SECONDS`` without work (closing its connection) and restarts on the
    next batch.
    """

    MAX_GROUP = 64
    IDLE_SECONDS = 1.0

    def __init__(self, store):
        self.store = store
        self.queue = queue.Queue()
        self.lock = threading.Lock()
        self.thread = None

    def submit(self, row):
        done, answer = threading.Event(), []
        with self.lock:
            self.queue.put((row, done, answer))
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._run, daemon=True,
                                               name="sklearn_ldp-collector-writer")
                self.thread.start()
        done.wait()
        if isinstance(answer[0], BaseException):
            raise answer[0]
        return answer[0]

    def _take(self):
        """The next group of waiting batches, or None after IDLE_SECONDS without any."""
        try:
            group = [self.queue.get(timeout=self.IDLE_SECONDS)]
        except queue.Empty:
            return None
        while len(group) < self.MAX_GROUP:
            try:
                group.append(self.queue.get_nowait())
            except queue.Empty:
                break
        return group

    def _run(self):
        while True:
            group = self._take()
            if group is None:
                with self.lock:  # submit queues under this lock: nothing can be left behind
                    if self.queue.empty():
                        self.store.close()
                        self.thread = None
                        return
                continue
            try:
                answers = self.store._insert_group([row for row, _, _ in group])
            except BaseException as exc:  # noqa: BLE001 - every waiting caller gets it
                answers = [exc] * len(group)
            for (_, done, answer), result in zip(group, answers, strict=True):
                answer.append(result)
                done.set()


class _SQLStore:
    """The statements both databases share; subclasses connect and name their errors."""

    blob = "BLOB"
    placeholder = "?"
    unavailable_errors = ()

    def __init__(self):
        self._local = threading.local()
        self._collections = {}
        self._lock = threading.Lock()
        self._schema_ready = False
        self._writer = _GroupCommit(self)

    # ---------------------------------------------------------------- connections
    def _connect(self):
        raise NotImplementedError

    def _connection(self):
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._connect()
            self._local.connection = connection
        return connection

    def _drop_connection(self):
        connection = getattr(self._local, "connection", None)
        self._local.connection = None
        if connection is not None:
            try:
                connection.close()
            except Exception:  # noqa: BLE001 - a broken connection may fail to close
                pass

    def _sql(self, text):
        return text.replace("?", self.placeholder)

    def _run(self, work):
        """``work(connection)`` in one transaction; the database's failures become
        :class:`StoreUnavailable` (the transaction is rolled back: nothing stored)."""
        try:
            connection = self._connection()
            if not self._schema_ready:
                with self._lock:  # concurrent CREATE TABLE IF NOT EXISTS can clash
                    if not self._schema_ready:
                        self._transaction(connection, self._create_schema)
                        self._schema_ready = True
            return self._transaction(connection, work)
        except self.unavailable_errors as exc:
            self._drop_connection()
            reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise StoreUnavailable(f"the database is unavailable: {reason}") from exc

    def _transaction(self, connection, work):
        raise NotImplementedError

    def _create_schema(self, connection):
        for statement in _SCHEMA:
            connection.execute(statement.format(blob=self.blob))

    def close(self):
        """Close this thread's connection (others close when their thread ends)."""
        self._drop_connection()

    # ---------------------------------------------------------------- collections
    def add_collection(self, name, spec):
        """Register a collection (idempotent for the same specification).

        Parameters
        ----------
        name : str
            Letters, digits, ``_.-``, at most 64 characters.
        spec : Mechanism or str
            What devices rebuild their randomizer from. A collection's specification never
            changes: a new specification is a new collection.

        Returns
        -------
        Collection
            The registered collection.

        Raises
        ------
        ValueError
            An invalid name, a specification that is not JSON or of an unknown kind, or
            another specification under this name.
        StoreUnavailable
            The database failed.
        """
        collection = Collection(check_name(name), canonical_spec(spec))

        def work(connection):
            row = connection.execute(self._sql("SELECT spec FROM ldp_collections WHERE name = ?"),
                                     (name,)).fetchone()
            if row is None:
                connection.execute(self._sql("INSERT INTO ldp_collections (name, spec, "
                                             "spec_hash) VALUES (?, ?, ?)"),
                                   (name, collection.spec, collection.spec_hash))
            elif row[0] != collection.spec:
                raise ValueError(f"collection {name!r} already exists with another "
                                 "specification; a new specification needs a new collection.")

        self._run(work)
        self._collections[name] = collection
        return collection

    def collection(self, name):
        """The :class:`Collection` named ``name``, or None if there is none.

        Parameters
        ----------
        name : str
            The collection's name.

        Returns
        -------
        Collection or None
            The collection (cached: specifications never change), or None.
        """
        if name in self._collections:
            return self._collections[name]
        row = self._run(lambda connection: connection.execute(
            self._sql("SELECT spec FROM ldp_collections WHERE name = ?"), (name,)).fetchone())
        if row is None:
            return None
        # Specifications never change, so the rebuilt mechanism is kept.
        collection = self._collections[name] = Collection(name, row[0])
        return collection

    # ---------------------------------------------------------------- batches
    def put_batch(self, collection, batch_id, array):
        """Store one batch of checked reports, once.

        Parameters
        ----------
        collection : Collection
            The batch's collection.
        batch_id : str
            The id the device chose.
        array : ndarray or list
            The reports, already checked (:meth:`Collection.check`).

        Returns
        -------
        bool
            True if stored now, False if this batch id was already stored with the same
            reports (a retry).

        Raises
        ------
        BatchConflict
            The batch id is stored with other reports.
        StoreUnavailable
            The database failed: nothing was stored.
        """
        payload = collection.pack(array)
        return self._writer.submit((collection.name, batch_id,
                                    hashlib.sha256(payload).hexdigest(), len(array),
                                    payload))

    def _insert_group(self, rows):
        """Insert the batches ``rows`` in one transaction (one commit, one fsync, for all).

        Returns, per row, True (stored), False (a retry of a stored batch) or a
        :class:`BatchConflict` (the id is stored with other reports; nothing inserted for
        it). A database failure raises :class:`StoreUnavailable` for the whole group.
        """
        day = _today()

        def work(connection):
            results = []
            for collection, batch_id, digest, n_reports, payload in rows:
                inserted = connection.execute(
                    self._sql("INSERT INTO ldp_batches (collection, batch_id, digest, "
                              "n_reports, payload, received_day) VALUES (?, ?, ?, ?, ?, ?) "
                              "ON CONFLICT (collection, batch_id) DO NOTHING"),
                    (collection, batch_id, digest, n_reports, payload, day)).rowcount
                if inserted == 1:
                    results.append(True)
                    continue
                stored = connection.execute(
                    self._sql("SELECT digest FROM ldp_batches WHERE collection = ? AND "
                              "batch_id = ?"), (collection, batch_id)).fetchone()[0]
                results.append(False if stored == digest else BatchConflict(
                    f"batch id {batch_id!r} is already stored with other reports; a retry "
                    "must resend the same batch."))
            return results

        return self._run(work)

    @_collection_parameter
    def count(self, collection):
        """How many batches and reports are stored for a collection.

        <collection parameter>

        Returns
        -------
        tuple of int
            ``(batches, reports)``.
        """
        row = self._run(lambda connection: connection.execute(
            self._sql("SELECT COUNT(*), COALESCE(SUM(n_reports), 0) FROM ldp_batches "
                      "WHERE collection = ?"), (collection,)).fetchone())
        return int(row[0]), int(row[1])

    @_collection_parameter
    def batch_ids(self, collection):
        """The batch ids stored for a collection (for audits and tests).

        <collection parameter>

        Returns
        -------
        set of str
            Every stored batch id.
        """
        rows = self._run(lambda connection: connection.execute(
            self._sql("SELECT batch_id FROM ldp_batches WHERE collection = ?"),
            (collection,)).fetchall())
        return {row[0] for row in rows}

    @_collection_parameter
    def delete_before(self, collection, day):
        """Delete the batches received before ``day``: the retention policy.

        <collection parameter>
        day : int
            Days since 1970-01-01 (UTC); batches received on an earlier day are deleted.

        Returns
        -------
        int
            The number of batches deleted.
        """
        return self._run(lambda connection: connection.execute(
            self._sql("DELETE FROM ldp_batches WHERE collection = ? AND received_day < ?"),
            (collection, int(day))).rowcount)

    @_collection_parameter
    def iter_batches(self, collection):
        """Every stored batch of a collection, streamed (one batch in memory at a time).

        <collection parameter>

        Yields
        ------
        tuple
            ``(n_reports, payload)`` of each batch, in batch id order.
        """
        raise NotImplementedError


class SQLiteStore(_SQLStore):
    """Batches in one SQLite file (WAL journal, ``synchronous=FULL``): the default.

    A batch is acknowledged after its transaction is on disk, so a process killed at any
    moment (even by SIGKILL) loses no acknowledged batch. Writers take turns (SQLite has one
    writer at a time; ``busy_timeout`` waits for the lock instead of failing).

    Parameters
    ----------
    path : str or path-like
        The database file (created if missing).
    timeout : float, default=30
        Seconds to wait for another writer's lock before answering 503.

    See Also
    --------
    PostgresStore : The same interface on PostgreSQL.
    aggregate : The stored reports as ``AggregatedReports``.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> store = SQLiteStore(os.path.join(tempfile.mkdtemp(), "reports.db"))
    >>> survey = store.add_collection("survey", RandomizedResponse(3, 1.0))
    >>> store.put_batch(survey, "b1", np.array([0, 2, 2], dtype=np.uint8))
    True
    >>> store.put_batch(survey, "b1", np.array([0, 2, 2], dtype=np.uint8))  # a retry
    False
    >>> store.count("survey")
    (1, 3)
    """

    unavailable_errors = (sqlite3.OperationalError, sqlite3.DatabaseError)

    def __init__(self, path, timeout=30.0):
        super().__init__()
        self.path = str(path)
        self.timeout = float(timeout)

    def __repr__(self):
        return f"SQLiteStore({self.path!r})"

    def _connect(self):
        connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute(f"PRAGMA busy_timeout={int(self.timeout * 1000)}")
        return connection

    def _transaction(self, connection, work):
        # BEGIN IMMEDIATE takes the write lock up front: no lock upgrade can fail midway.
        connection.execute("BEGIN IMMEDIATE")
        try:
            result = work(connection)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        return result

    def iter_batches(self, collection):
        connection = sqlite3.connect(self.path, timeout=self.timeout)
        try:
            cursor = connection.execute(
                "SELECT n_reports, payload FROM ldp_batches WHERE collection = ? "
                "ORDER BY batch_id", (collection,))
            yield from cursor
        finally:
            connection.close()


class PostgresStore(_SQLStore):
    """Batches in a PostgreSQL database (psycopg 3), for production.

    Connects lazily (one connection per thread): a collector starts while the database is
    down and answers 503 until it is back.

    Parameters
    ----------
    dsn : str
        A libpq connection string or URI, e.g. ``"postgresql://ldp:secret@db/ldp"``.
    connect_timeout : int, default=5
        Seconds before a connection attempt fails (then 503).

    See Also
    --------
    SQLiteStore : The same interface on an embedded SQLite file.

    Examples
    --------
    >>> store = PostgresStore("postgresql://ldp:secret@127.0.0.1/ldp")  # connects on first use
    >>> store
    PostgresStore(<dsn>)
    """

    blob = "BYTEA"
    placeholder = "%s"

    def __init__(self, dsn, connect_timeout=5):
        super().__init__()
        import psycopg  # the optional dependency of the "server" extra

        self._psycopg = psycopg
        self.unavailable_errors = (psycopg.OperationalError, psycopg.InterfaceError)
        self.dsn = dsn
        self.connect_timeout = int(connect_timeout)

    def __repr__(self):
        return "PostgresStore(<dsn>)"  # the DSN may hold a password

    def _connect(self):
        return self._psycopg.connect(self.dsn, autocommit=True,
                                     connect_timeout=self.connect_timeout)

    def _transaction(self, connection, work):
        with connection.transaction():
            return work(connection)

    def iter_batches(self, collection):
        try:
            connection = self._connect()
        except self.unavailable_errors as exc:
            raise StoreUnavailable(f"the database is unavailable: {exc}") from exc
        try:
            with connection.transaction(), connection.cursor(name="ldp_aggregate") as cursor:
                cursor.itersize = 256
                cursor.execute("SELECT n_reports, payload FROM ldp_batches "
                               "WHERE collection = %s ORDER BY batch_id", (collection,))
                for n_reports, payload in cursor:
                    yield n_reports, bytes(payload)
        finally:
            connection.close()


def open_store(url):
    """A store from a URL: ``postgresql://...`` (or ``postgres://``) is PostgreSQL, anything
    else a SQLite file path (an optional ``sqlite:///`` prefix is removed).

    Parameters
    ----------
    url : str
        ``postgresql://user:password@host/database``, a path, or ``sqlite:///path``.

    Returns
    -------
    SQLiteStore or PostgresStore
        The store (not yet connected).

    See Also
    --------
    SQLiteStore, PostgresStore : The two stores.

    Examples
    --------
    >>> open_store("sqlite:///tmp/reports.db")
    SQLiteStore('/tmp/reports.db')
    """
    if not isinstance(url, str) or not url:
        raise ValueError(f"store must be a SQLite path or a postgresql:// URL, got {url!r}.")
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresStore(url)
    return SQLiteStore(url.removeprefix("sqlite://"))
