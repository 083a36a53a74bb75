"""Aggregating report files in bounded memory: :func:`aggregate_files`.

The files are read chunk by chunk (:mod:`sklearn_ldp.deploy.io.readers`) and each chunk's
statistic is added to the total with overflow checks, so memory stays bounded whatever the
number and size of the files.
"""

import os
import sys
import time

from ...mechanisms._base.rows import empty_reports
from ...mechanisms._base.statistics import add_counts
from ...reports import AggregatedReports
from .formats import CHUNK_SIZE, check_chunk_size
from .frames import aggregate_checked
from .readers import files_docstring, open_files


class _Progress:
    """A one-line progress bar on stderr, redrawn at most every 0.2 s."""

    WIDTH = 30

    def __init__(self, files, enabled):
        self.enabled = enabled
        self.n_files = len(files)
        self.sizes = [os.path.getsize(file.path) for file in files]
        self.total_bytes = max(sum(self.sizes), 1)
        self.files_done = 0
        self.bytes_done = 0
        self.reports = 0
        self.start = self.last = time.perf_counter()

    def update(self, file, n_new, file_rows_done, force=False):
        self.reports += n_new
        now = time.perf_counter()
        if not self.enabled or (now - self.last < 0.2 and not force):
            return
        self.last = now
        within = 0.0
        if file is not None and file.n_rows:
            within = self.sizes[self.files_done] * file_rows_done / file.n_rows
        fraction = min(1.0, (self.bytes_done + within) / self.total_bytes)
        filled = int(round(fraction * self.WIDTH))
        bar = "#" * filled + "." * (self.WIDTH - filled)
        sys.stderr.write(f"\raggregating [{bar}] {100 * fraction:3.0f}%  "
                         f"{self.files_done}/{self.n_files} files  {self.reports:,} reports  "
                         f"{now - self.start:.1f} s")
        sys.stderr.flush()

    def file_done(self):
        self.bytes_done += self.sizes[self.files_done]
        self.files_done += 1
        self.update(None, 0, 0, force=self.files_done == self.n_files)
        if self.enabled and self.files_done == self.n_files:
            sys.stderr.write("\n")
            sys.stderr.flush()


@files_docstring
def aggregate_files(source, mechanism=None, domain=None, workload=None, chunk_size=CHUNK_SIZE,
                    progress=False, *, allow_unverified=False):
    """Aggregate the reports of many CSV or Parquet files in chunks, in bounded memory.

    Memory holds one chunk of ``chunk_size`` reports and the statistic, whatever the number
    and size of the files (10^8 k-RR reports: see ``benchmarks/bench_scale.py``). The result
    equals ``mechanism.aggregate`` of all reports at once, exactly.

    Parameters
    ----------
    source : str, path-like or list of them
        A file, a directory (every file in it except hidden and ``_``-prefixed ones such as
        Spark's ``_SUCCESS``; all must be report files), a glob pattern
        (``"shards/*.parquet"``) or a list of files. Formats by suffix: ``.csv``,
        ``.csv.gz``, ``.parquet``, ``.pq``; they may be mixed.
    mechanism : Mechanism, optional
        The mechanism the clients ran. Default: the one in the files' specification. Every
        file that carries a specification must match it.
    domain, workload : optional
        Attached to the result (for labelled answers).
    chunk_size : int, default=2**20
        Reports read at once.
    progress : bool, default=False
        Draw a progress bar on stderr (fraction of bytes, files, reports, seconds).
    allow_unverified : bool, default=False
        Read files without a checksum (version 1, or without a spec: from another system)
        with an :class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` each, instead of
        refusing them. Only for files whose origin you trust: their content cannot be
        verified.

    Returns
    -------
    AggregatedReports
        The statistic of all the reports, with the mechanism, domain and workload.

    Raises
    ------
    ValueError
        Naming the file (and row and column) for: no files, an unknown file type, a
        specification of an unknown version or mechanism or of another mechanism, a checksum
        mismatch (a file modified or truncated, e.g. by a writer that was killed), a file
        without a checksum (unless ``allow_unverified=True``), sizes over
        the caps of :mod:`sklearn_ldp.deploy.limits`, missing or extra columns, values that are
        not integers of the report type, reports the mechanism refuses, a total of more than
        ``2**62`` reports. Every header is checked before any data is read; on any error
        nothing is returned.

    <unverified warning>

    See Also
    --------
    write_reports : Write the report files.
    iter_report_chunks : The checked chunks themselves.
    sklearn_ldp.AggregatedReports.merge : Merge aggregates of disjoint shards.
    sklearn_ldp.deploy.distributed.aggregate_dask : The same on a Dask cluster.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from sklearn_ldp import LDPReports
    >>> from sklearn_ldp.deploy.io import write_reports
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> folder = tempfile.mkdtemp()
    >>> for shard, values in enumerate([[0, 2], [1, 1, 2]]):
    ...     reports = LDPReports(np.array(values), mechanism)
    ...     write_reports(reports, os.path.join(folder, f"part-{shard}.csv"))
    >>> aggregate_files(folder, chunk_size=2).statistic.tolist()
    [1, 2, 2, 5]
    """
    chunk_size = check_chunk_size(chunk_size)
    files, mechanism = open_files(source, mechanism, allow_unverified)
    total = mechanism.aggregate(empty_reports(mechanism)).copy()
    bar = _Progress(files, progress)
    for file in files:
        for array, first_row in file.chunks(mechanism, chunk_size):
            add_counts(total, aggregate_checked(mechanism, array, file.path, first_row),
                       mechanism)
            bar.update(file, array.shape[0], first_row + array.shape[0])
        bar.file_done()
    return AggregatedReports(total, mechanism, domain, workload)
