"""A reference collector: devices' reports over HTTP into SQLite or PostgreSQL.

:func:`create_app` is an ASGI application (Starlette) that publishes each collection's client
specification and receives batches of reports, checks every report against the mechanism
and stores each batch once, in one transaction, before acknowledging it. :func:`serve` runs
it with uvicorn; ``sklearn-ldp serve`` (:mod:`sklearn_ldp.cli`) does the same from a shell.
:func:`aggregate` streams a collection's stored batches into
:class:`~sklearn_ldp.AggregatedReports` for the estimators. See ``docs/collector.md``.

The HTTP part needs the optional dependencies of the ``server`` extra
(``pip install sklearn_ldp[server]``: starlette, uvicorn, psycopg); the stores and
:func:`aggregate` need only psycopg, and only for PostgreSQL.
"""

from .aggregate import aggregate
from .store import (
    BatchConflict,
    Collection,
    PostgresStore,
    SQLiteStore,
    StoreUnavailable,
    open_store,
)

__all__ = ["BatchConflict", "Collection", "PostgresStore", "SQLiteStore", "StoreUnavailable",
           "aggregate", "create_app", "open_store", "serve"]


def __getattr__(name):
    # The HTTP layer imports starlette: loaded on first use, so that the stores and
    # aggregate work without the server extra.
    if name in ("create_app", "serve", "TokenBucket"):
        try:
            from . import app
        except ImportError as exc:
            raise ImportError(f"sklearn_ldp.deploy.collector.{name} needs the server extra: "
                              f"pip install 'sklearn_ldp[server]' ({exc}).") from None
        return getattr(app, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
