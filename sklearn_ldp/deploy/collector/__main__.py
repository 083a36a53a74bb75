"""``python -m sklearn_ldp.deploy.collector``: serve collections from a shell.

Example: ``python -m sklearn_ldp.deploy.collector --store reports.db --collection
survey=survey_spec.json --port 8000`` (the spec file holds ``LDPEncoder.client_spec()``).
"""

import argparse
import sys

from .app import serve
from .store import open_store


def main(argv=None):
    """Parse the command line, register the collections and serve until stopped."""
    parser = argparse.ArgumentParser(prog="python -m sklearn_ldp.deploy.collector",
                                     description="Serve the sklearn_ldp reference collector.")
    parser.add_argument("--store", required=True,
                        help="a SQLite file path, or a postgresql:// URL")
    parser.add_argument("--collection", action="append", default=[], metavar="NAME=SPEC_FILE",
                        help="register a collection from a client specification file "
                             "(repeatable; collections already in the store are served too)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--max-batch-reports", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=None,
                        help="batches per second per client token (default: no limit)")
    parser.add_argument("--burst", type=int, default=10)
    parser.add_argument("--access-log", action="store_true",
                        help="uvicorn's access log, which holds client addresses (off by "
                             "default)")
    args = parser.parse_args(argv)
    store = open_store(args.store)
    for item in args.collection:
        name, sep, path = item.partition("=")
        if not sep:
            parser.error(f"--collection takes NAME=SPEC_FILE, got {item!r}")
        with open(path, encoding="utf-8") as file:
            store.add_collection(name, file.read())
    store.close()  # the main thread's connection; request threads open their own
    serve(store, host=args.host, port=args.port, access_log=args.access_log,
          max_batch_reports=args.max_batch_reports, rate=args.rate, burst=args.burst)


if __name__ == "__main__":
    sys.exit(main())
