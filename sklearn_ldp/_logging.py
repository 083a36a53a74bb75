"""Progress reports of long work (optimizers, selection, big fits) through :mod:`logging`.

Every module logs to a child of the ``"sklearn_ldp"`` logger. ``verbose > 0`` makes progress
visible even when the application has not configured logging: it sets the level to INFO and,
if no handler would print the records, attaches one that writes to stderr. Applications that
configure logging themselves keep full control (their handlers and levels are left alone).
"""

import logging

ROOT_NAME = "sklearn_ldp"


def get_logger(name, verbose=0):
    """The logger ``sklearn_ldp.<name>``, made to show INFO records when ``verbose > 0``."""
    logger = logging.getLogger(f"{ROOT_NAME}.{name}")
    if verbose and verbose > 0:
        package = logging.getLogger(ROOT_NAME)
        if package.getEffectiveLevel() > logging.INFO:
            package.setLevel(logging.INFO)
        if not package.handlers and not logging.getLogger().handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("[%(name)s] %(message)s"))
            package.addHandler(handler)
    return logger
