"""Statistics that cannot lie: the validation and exact addition of aggregated counts.

:func:`check_statistic` validates a statistic against the mechanism that claims it (integer
counts for every mechanism except the Gaussian ones, never negative, at most ``2**62``
reports, totals consistent with each other where the mechanism records both);
:func:`add_counts` and :func:`sum_statistics` add statistics without int64 overflow. The
report containers (:class:`~sklearn_ldp.reports.AggregatedReports`), the readers of files
and the distributed aggregation all call them.
"""

import numpy as np

from ..oracles.randomized_response import RandomizedResponse
from ..oracles.subset_selection import SubsetSelection
from ..oracles.support import SupportOracle
from .mechanism import MAX_REPORTS, exact_total
from .rows import empty_reports, has_own_layout

# Largest float count of a Gaussian statistic that float64 holds exactly.
MAX_FLOAT_COUNT = 2**53


def _support_reports(segment, oracle, where):
    """Reports of a support oracle's statistic ``[C_0, ..., C_{m-1}, N]``, checked.

    A report supports a cell at most once, so every ``C_j <= N``; a randomized-response
    report supports exactly one cell (``sum C = N``) and a subset-selection report exactly
    ``k`` (``sum C = k N``).
    """
    n_reports, support = int(segment[-1]), segment[:-1]
    if support.size and int(support.max()) > n_reports:
        cell = int(np.argmax(support))
        raise ValueError(f"{where}: the support count {int(support[cell])} of cell {cell} "
                         f"exceeds the number of reports {n_reports}: no reports produce it.")
    per_report = 1 if isinstance(oracle, RandomizedResponse) else (
        oracle.subset_size if isinstance(oracle, SubsetSelection) else None)
    if per_report is not None and exact_total(support) != per_report * n_reports:
        raise ValueError(f"{where}: the counts sum to {exact_total(support)}, but {n_reports} "
                         f"reports support {per_report * n_reports} cells "
                         f"({per_report} each): the totals are inconsistent.")
    return n_reports


def _segments(mechanism, length):
    """``[(slice, oracle)]`` when the statistic is a concatenation of frequency-oracle
    statistics (support oracles, the full-domain marginal kinds, the levels of a tree), else
    None. Mirrors the mechanisms' ``aggregate`` (see the report of issue 15: a
    mechanism-side method would keep this next to the code it describes)."""
    if isinstance(mechanism, SupportOracle):
        return [(slice(0, length), mechanism)]
    if mechanism.kind in ("inp_rr", "inp_ps") and isinstance(getattr(mechanism, "oracle", None),
                                                            SupportOracle):
        return [(slice(0, length), mechanism.oracle)]
    if mechanism.kind == "hierarchical":
        segments, start = [], 0
        for oracle in mechanism.level_oracles:
            size = (oracle.n_inputs + 1 if isinstance(oracle, SupportOracle)
                    else oracle.n_outputs)
            segments.append((slice(start, start + size), oracle))
            start += size
        return segments
    return None


def _count_reports(statistic, mechanism, where):
    """The exact number of reports of a count statistic, its totals checked for consistency."""
    segments = _segments(mechanism, statistic.shape[0])
    if segments is not None:
        total = 0
        for level, (rows, oracle) in enumerate(segments):
            part = f"{where} (level {level + 1})" if len(segments) > 1 else where
            if isinstance(oracle, SupportOracle):
                total += _support_reports(statistic[rows], oracle, part)
            else:
                total += exact_total(statistic[rows])
    elif mechanism.kind == "marg_rr":
        # [support counts of every set's cells, reports per set]: each <= its set's reports.
        offsets = np.asarray(mechanism.cell_offsets, dtype=np.int64)
        cells = int(offsets[-1])
        support, per_set = statistic[:cells], statistic[cells:]
        owners = np.repeat(per_set, np.diff(offsets))
        if np.any(support > owners):
            cell = int(np.flatnonzero(support > owners)[0])
            raise ValueError(f"{where}: the support count {int(support[cell])} of table cell "
                             f"{cell} exceeds the {int(owners[cell])} reports of its attribute "
                             "set: no reports produce it.")
        total = exact_total(per_set)
    elif mechanism.kind == "inp_em":
        # Every user is counted once in the table of every attribute set.
        offsets = np.asarray(mechanism.cell_offsets, dtype=np.int64)
        sums = [exact_total(statistic[offsets[i]:offsets[i + 1]])
                for i in range(offsets.shape[0] - 1)]
        if len(set(sums)) > 1:
            raise ValueError(f"{where}: the tables of the attribute sets count different "
                             f"numbers of users ({min(sums)} to {max(sums)}): every user is in "
                             "every table.")
        total = sums[0]
    else:
        total = exact_total(statistic)  # one count per report
    if total > MAX_REPORTS:
        raise ValueError(f"{where} summarizes {total} reports, more than 2^62: refused (int64 "
                         "sums of such counts could overflow).")
    return total


def _check_float_counts(statistic, mechanism, where):
    """The trailing counts of a Gaussian statistic (``N``; ``K <= N`` kept for
    ``gaussian_pure``): non-negative integers that float64 holds exactly."""
    n_counts = {"gaussian": 1, "gaussian_pure": 2}.get(mechanism.kind, 0)
    if not n_counts:
        return
    counts = statistic[-n_counts:]
    if np.any(counts < 0) or np.any(counts != np.round(counts)) or \
            np.any(counts > MAX_FLOAT_COUNT):
        raise ValueError(f"{where} ends with the counts {counts.tolist()}: they must be "
                         f"integers in [0, 2^53] (numbers of reports).")
    if n_counts == 2 and counts[0] > counts[1]:
        raise ValueError(f"{where} keeps {counts[0]:g} reports of {counts[1]:g}: the totals "
                         "are inconsistent.")


def check_statistic(statistic, mechanism):
    """``statistic`` validated as a statistic of ``mechanism``, else a ValueError saying why.

    * the shape of the mechanism's statistic (else it comes from another mechanism);
    * counts (every mechanism but the Gaussian ones: the statistic of its empty aggregate
      has an integer dtype) are an integer array (floats, bools and objects refused), never
      negative, returned as int64; the number of reports is exact (no int64 sum can wrap)
      and at most ``2**62``; totals the mechanism records twice agree: support counts at
      most the number of reports (and summing to it, or to ``k`` times it, for randomized
      response and subset selection), per-set counts of ``marg_rr``, equal table sums of
      ``inp_em``; the mechanism's own ``n_reports`` checks pass and agree;
    * the Gaussian mechanisms' float sums are finite, their trailing counts non-negative
      integers (``K <= N``).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> check_statistic(np.array([1, 0, 2, 3]), mechanism).tolist()
    [1, 0, 2, 3]
    >>> check_statistic(np.array([1, 0, 2, 4]), mechanism)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the statistic of RandomizedResponse(...): the counts sum to 3, but 4 reports ...
    """
    if has_own_layout(mechanism):  # records of several columns, heavy-hitter values
        return mechanism.check_statistic(statistic)
    statistic = np.asarray(statistic)
    where = f"the statistic of {mechanism!r}"
    zero = mechanism.aggregate(empty_reports(mechanism))
    if statistic.shape != zero.shape:
        raise ValueError(f"{where} has shape {zero.shape}, got {statistic.shape}: it comes "
                         "from another mechanism.")
    if np.issubdtype(zero.dtype, np.integer):
        if statistic.dtype.kind not in "iu":
            raise ValueError(f"{where} holds integer counts, got dtype {statistic.dtype}.")
        if statistic.size and statistic.dtype.kind == "i" and statistic.min() < 0:
            position = int(np.argmin(statistic))
            raise ValueError(f"{where} holds a negative count ({int(statistic[position])} at "
                             f"position {position}): no reports produce it.")
        if statistic.size and statistic.max() > MAX_REPORTS:
            position = int(np.argmax(statistic))
            raise ValueError(f"{where} holds the count {int(statistic[position])} at position "
                             f"{position}, more than 2^62 reports: refused.")
        statistic = statistic.astype(zero.dtype, copy=False)
        total = _count_reports(statistic, mechanism, where)
    else:
        if statistic.dtype.kind != "f" or not np.all(np.isfinite(statistic)):
            raise ValueError(f"{where} holds finite floats, got dtype {statistic.dtype} or "
                             "non-finite entries.")
        _check_float_counts(statistic, mechanism, where)
        total = None
    try:
        claimed = mechanism.n_reports(statistic)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    if total is not None and claimed != total:
        raise ValueError(f"{where} counts {total} reports by its totals, but the mechanism "
                         f"counts {claimed}: the totals are inconsistent.")
    return statistic


def add_counts(total, statistic, mechanism):
    """``total += statistic`` in place, refusing (ValueError) any entry past ``2**62``.

    For statistics the mechanism's ``aggregate`` just produced (valid by construction): the
    overflow check without a full :func:`check_statistic` of every chunk. Float statistics
    add as floats.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> total = np.array([1, 0, 0, 1])
    >>> add_counts(total, np.array([0, 2, 0, 2]), RandomizedResponse(3, 1.0)).tolist()
    [1, 2, 0, 3]
    """
    if np.issubdtype(total.dtype, np.integer) and np.any(statistic > MAX_REPORTS - total):
        # Both sides are <= 2^62, so MAX_REPORTS - total cannot overflow either.
        raise ValueError(f"adding these statistics of {mechanism!r} would count more than 2^62 "
                         "reports: refused (int64 overflow).")
    total += statistic
    return total


def sum_statistics(statistics, mechanism):
    """The sum of statistics of ``mechanism``, each validated, without int64 overflow.

    Count statistics add entry by entry only after checking that no entry would pass
    ``2**62`` (a ValueError otherwise, never a wraparound); the result is validated again
    (its totals at most ``2**62`` reports). Float statistics (Gaussian) add as floats. Used
    by :meth:`AggregatedReports.merge` and by the Dask tree of sums
    (:mod:`sklearn_ldp.deploy.distributed`); :func:`~sklearn_ldp.deploy.io.aggregate_files` adds its
    chunks with the same check (:func:`add_counts`).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> sum_statistics([np.array([1, 0, 0, 1]), np.array([0, 2, 0, 2])], mechanism).tolist()
    [1, 2, 0, 3]
    """
    statistics = [check_statistic(statistic, mechanism) for statistic in statistics]
    if not statistics:
        raise ValueError("sum_statistics needs at least one statistic.")
    total = statistics[0].copy()
    for statistic in statistics[1:]:
        add_counts(total, statistic, mechanism)
    return check_statistic(total, mechanism)
