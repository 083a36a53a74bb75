"""Counts of reports: the 2^62 bound, exact totals, and additions that cannot wrap.

A mechanism's statistic counts reports in int64; every count is kept at most ``MAX_REPORTS``
and a sum of two counts is checked before it is formed (:func:`add_counts`), so a
corrupted or crafted aggregate is refused instead of wrapping. Used by
:class:`~sklearn_ldp.mechanisms._base.mechanism.Mechanism`'s validation of statistics, the
report containers and the file formats.
"""

import numpy as np

# Most reports (or simulated users) one statistic may count. Counts are int64, whose largest
# value is 2^63 - 1: every count is kept at most 2^62, and a sum of two counts is checked
# against this limit *before* it is formed (`add_counts`), so no sum ever wraps.
MAX_REPORTS = 2**62


def exact_total(counts):
    """The exact sum of non-negative integer ``counts`` as a Python int (never wraps).

    Each count is split into its high and low 31-bit halves; the halves of fewer than
    ``2^32`` counts sum in int64 without overflow, and are recombined in Python integers.

    Examples
    --------
    >>> exact_total(np.array([2**62, 2**62, 2**62]))
    13835058055282163712
    """
    flat = np.asarray(counts, dtype=np.int64).ravel()
    total = 0
    for start in range(0, flat.shape[0], 2**31):
        part = flat[start:start + 2**31]
        total += int(np.sum(part >> 31)) * 2**31 + int(np.sum(part & (2**31 - 1)))
    return total


def check_count_values(counts, name, what="statistic"):
    """``counts`` checked to hold counts of reports, or a ValueError naming the first
    offending entry.

    Integer arrays are counts of reports: returned as int64. Float arrays are accepted for
    decoding an *expected* statistic (``Q @ x``: exact checks of unbiasedness), so their
    entries may be fractions, but they must be finite; statistics that cross a trust boundary
    (files, estimators' fit) are required to be integers where they are read. Either way no
    entry may be negative or exceed ``MAX_REPORTS = 2^62``.
    """
    counts = np.asarray(counts)
    floating = np.issubdtype(counts.dtype, np.floating)
    if floating:
        if not np.all(np.isfinite(counts)):
            index = int(np.flatnonzero(~np.isfinite(counts.ravel()))[0])
            raise ValueError(f"the {what} of {name!r} holds counts of reports; entry {index} "
                             f"is {counts.ravel()[index].item()!r}.")
    elif not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"the {what} of {name!r} holds integer counts, got dtype "
                         f"{counts.dtype}.")
    if counts.size:
        if counts.min() < 0:
            index = int(np.argmin(counts.ravel()))
            raise ValueError(f"the {what} of {name!r} holds counts of reports, which are "
                             f"non-negative; entry {index} is {counts.ravel()[index].item()!r}.")
        if counts.max() > MAX_REPORTS:
            index = int(np.argmax(counts.ravel()))
            raise ValueError(f"the {what} of {name!r} counts at most 2^62 reports; entry "
                             f"{index} is {counts.ravel()[index].item()!r}.")
    return counts.astype(float if floating else np.int64)


def count_total(counts):
    """The sum of checked counts: exact (a Python int) for integers, a float for an expected
    statistic."""
    counts = np.asarray(counts)
    if np.issubdtype(counts.dtype, np.floating):
        return float(np.sum(counts))
    return exact_total(counts)


def report_count(counts):
    """The number of reports that checked ``counts`` sum to, as an int (rounded for an
    expected statistic)."""
    total = count_total(counts)
    return total if isinstance(total, int) else int(round(total))


def totals_differ(found, expected):
    """Whether two totals of counts differ: exactly for integers, beyond rounding (a relative
    ``1e-9``) when either is a float (an expected statistic)."""
    if isinstance(found, float) or isinstance(expected, float):
        return abs(found - expected) > 1e-9 * max(abs(found), abs(expected), 1.0)
    return found != expected


def add_counts(total, counts, name):
    """``total + counts`` for two checked int64 count arrays, refused (never wrapped) when an
    entry would exceed ``MAX_REPORTS``.

    ``MAX_REPORTS - counts`` cannot overflow for checked counts, so the comparison is exact.
    """
    total, counts = np.asarray(total), np.asarray(counts)
    if np.issubdtype(total.dtype, np.integer) and np.issubdtype(counts.dtype, np.integer):
        over = total > MAX_REPORTS - counts
        if np.any(over):
            index = int(np.flatnonzero(over.ravel())[0])
            raise ValueError(
                f"adding these statistics of {name!r} would count more than 2^62 reports in "
                f"entry {index} ({total.ravel()[index]} + {counts.ravel()[index]}); refused "
                "rather than wrapped.")
    return total + counts
