"""The layout of a mechanism's report rows, known before any report is seen.

:func:`empty_reports` is what the readers of files, frames and partitions (and the record
mechanism, for each of its parts) expect; a mechanism whose rows are its own says so
(:func:`has_own_layout`).
"""

import numpy as np


def has_own_layout(mechanism):
    """Whether ``mechanism``'s report rows are its own rather than those of one cell.

    Such a mechanism (records of several columns, values of a heavy-hitter column) defines
    ``empty_reports()`` and validates its own statistic (``check_statistic``).
    """
    return callable(getattr(mechanism, "empty_reports", None))


def empty_reports(mechanism):
    """A zero-row array with the shape and dtype of ``mechanism``'s reports.

    Learned from one report of cell 0 (the layout is fixed by the mechanism), so readers of
    files and partitions know the expected columns and dtype before seeing any data; a
    mechanism whose rows are not those of one cell (records of several columns, values of a
    heavy-hitter column) says so with its own ``empty_reports()`` method.

    Examples
    --------
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> empty_reports(baseline_mechanism("olh", (5,), 1.0)).shape
    (0, 2)
    """
    if has_own_layout(mechanism):
        return mechanism.empty_reports()
    probe = mechanism.randomize(np.zeros(1, dtype=np.int64), np.random.default_rng(0))
    return np.asarray(probe)[:0]
