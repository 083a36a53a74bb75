"""Writing reports to CSV and Parquet files: :class:`ReportWriter`, :func:`write_reports`.

Atomic, one writer per path, and with the checksum of report file version 2 (see
:mod:`sklearn_ldp.deploy.io`).
"""

import contextlib
import gzip
import hashlib
import io
import json
import os

from ...mechanisms import Mechanism
from ...mechanisms._base.rows import empty_reports
from ...reports import LDPReports
from ..limits import (
    acquire_lock,
    commit_temporary,
    discard_temporary,
    temporary_sibling,
)
from .formats import (
    CHECKSUM_KEY,
    CHUNK_SIZE,
    CSV_END_PREFIX,
    CSV_SPEC_PREFIX,
    CSV_VERSION_PREFIX,
    FILE_VERSION,
    ROWS_KEY,
    SPEC_KEY,
    VERSION_KEY,
    check_chunk_size,
    file_format,
    import_pyarrow,
    parquet_checksum,
    parquet_footer_start,
)
from .frames import report_columns, reports_frame


class _HashingSink(io.RawIOBase):
    """A binary file that hashes every byte written through it (the Parquet writer's sink)."""

    def __init__(self, file):
        super().__init__()
        self.file = file
        self.size = 0
        self.digest = hashlib.sha256()

    def writable(self):
        return True

    def write(self, data):
        self.digest.update(data)
        self.size += len(data)
        return self.file.write(data)

    def tell(self):
        return self.size

    def flush(self):
        self.file.flush()


class ReportWriter:
    """Append chunks of reports to one CSV or Parquet file (a context manager), atomically.

    The file gets the column schema of :mod:`sklearn_ldp.deploy.io`, the mechanism's JSON
    specification and, on :meth:`close`, its row count and SHA-256 checksum (report file
    version 2). Until then everything goes to a hidden temporary file in the same
    directory (``.<name>.<random>.tmp``); ``close`` flushes it to disk and renames it onto
    ``path``. If an exception leaves the ``with`` block, or the process dies, nothing is
    written at ``path`` (an existing file there is left as it was) and no file that a
    reader would take as complete exists.

    Parameters
    ----------
    path : str or path-like
        ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` (or give ``format``).
    mechanism : Mechanism
        The mechanism whose reports are written; every chunk is checked against it.
    format : {"csv", "parquet"}, optional
        Default: from the file name.

    Attributes
    ----------
    n_reports : int
        The number of reports written so far.

    Raises
    ------
    sklearn_ldp.deploy.limits.FileLockedError
        If another writer (a ReportWriter or a ``save``, in this process or another) holds
        ``path``: one writer per path, from construction to :meth:`close` (an OS lock on
        the hidden file ``.<name>.lock``, released by the OS if this process dies).

    See Also
    --------
    write_reports : Write LDPReports to one file at once.
    aggregate_files : Aggregate the files written.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from sklearn_ldp.deploy.io import aggregate_files
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> path = os.path.join(tempfile.mkdtemp(), "part-0.csv")
    >>> with ReportWriter(path, mechanism) as writer:
    ...     writer.write(np.array([0, 2, 1]))
    ...     writer.write(np.array([1]))
    ...     os.path.exists(path)      # not before close
    False
    >>> aggregate_files(path).statistic.tolist()
    [1, 2, 1, 4]
    """

    def __init__(self, path, mechanism, format=None):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a mechanism object, got "
                             f"{type(mechanism).__name__}.")
        self.path = os.fspath(path)
        self.mechanism = mechanism
        self.format = file_format(path, format)
        self.n_reports = 0
        self._columns = report_columns(mechanism)
        self._closed = False
        self._file = self._raw = None
        pa = import_pyarrow() if self.format == "parquet" else None  # before any file exists
        # One writer per path, until close: a second writer's rename would replace this
        # file (all its reports lost, both exiting 0). Refused at once, before any file.
        self._lock = acquire_lock(self.path, what="report file")
        try:
            self._raw, self._temporary = temporary_sibling(self.path)
        except BaseException:
            self._lock.release()
            raise
        try:
            if self.format == "parquet":
                self._sink = _HashingSink(self._raw)
                self._spec = mechanism.to_json()
                empty = empty_reports(mechanism)
                fields = [pa.field(column, pa.from_numpy_dtype(empty.dtype))
                          for column in self._columns]
                # The version also in the schema: damage to one copy cannot pass for version 1.
                self._schema = pa.schema(fields, metadata={SPEC_KEY: self._spec,
                                                           VERSION_KEY: str(FILE_VERSION)})
                self._file = pa.parquet.ParquetWriter(self._sink, self._schema,
                                                      write_page_checksum=True)
            else:
                self._file = (gzip.GzipFile(filename="", mode="wb", fileobj=self._raw)
                              if self.path.lower().endswith(".gz") else self._raw)
                self._digest = hashlib.sha256()
                self._write_text(f"{CSV_SPEC_PREFIX}{mechanism.to_json()}\n"
                                 f"{CSV_VERSION_PREFIX}{FILE_VERSION}\n"
                                 + ",".join(self._columns) + "\n")
        except BaseException:
            self._abort()
            raise

    def _write_text(self, text, hashed=True):
        data = text.encode("utf-8")
        if hashed:
            self._digest.update(data)
        self._file.write(data)

    def write(self, reports):
        """Append reports (LDPReports of this mechanism, or a report array).

        Parameters
        ----------
        reports : LDPReports or ndarray
            Reports of the writer's mechanism (an array as ``mechanism.randomize``
            returns it); they are checked before anything is written.

        Raises
        ------
        ValueError
            If the writer is closed, or the reports come from another mechanism or are not
            valid reports of it.
        """
        if self._closed:
            raise ValueError(f"{self.path}: the writer is closed.")
        if isinstance(reports, LDPReports):
            if reports.mechanism != self.mechanism:
                raise ValueError(f"these reports come from {reports.mechanism!r}, but the file "
                                 f"holds reports of {self.mechanism!r}.")
            reports = reports.reports
        frame = reports_frame(LDPReports(reports, self.mechanism))
        if self.format == "parquet":
            pa = import_pyarrow()
            table = pa.Table.from_arrays([pa.array(frame[name].to_numpy())
                                          for name in self._columns], schema=self._schema)
            self._file.write_table(table, row_group_size=CHUNK_SIZE)
        else:
            self._write_text(frame.to_csv(header=False, index=False, lineterminator="\n"))
        self.n_reports += len(frame)

    def flush(self):
        """Push the reports written so far to the temporary file (not to ``path``).

        A checkpoint for long-running writers (the operating system holds the bytes even if
        this process dies); the file still appears at ``path`` only on :meth:`close`.
        """
        if self._closed:
            raise ValueError(f"{self.path}: the writer is closed.")
        if self.format == "csv":
            self._file.flush()  # gzip: a sync flush, so the compressed bytes so far decode
        self._raw.flush()

    def close(self):
        """Write the row count and checksum, flush to disk and rename onto ``path``.

        On any failure the temporary file is removed and nothing appears at ``path``.
        Closing twice does nothing.
        """
        if self._closed:
            return
        try:
            if self.format == "parquet":
                # Every row group is in the sink by now: only the footer is left to write.
                region = self._sink.size
                self._file.add_key_value_metadata({
                    VERSION_KEY: str(FILE_VERSION), ROWS_KEY: str(self.n_reports),
                    CHECKSUM_KEY: parquet_checksum(self._sink.digest, self._spec,
                                                    self.n_reports)})
                self._file.close()
                self._raw.flush()
                with open(self._temporary, "rb") as written:
                    if parquet_footer_start(written, self._temporary) != region:
                        raise RuntimeError("pyarrow wrote row-group bytes after close: the "
                                           "checksum would not cover them.")
            else:
                end = {"n_rows": self.n_reports, "sha256": self._digest.hexdigest()}
                self._write_text(f"{CSV_END_PREFIX}{json.dumps(end)}\n", hashed=False)
                if self._file is not self._raw:
                    self._file.close()
            self._closed = True
            commit_temporary(self._raw, self._temporary, self.path)
        except BaseException:
            self._abort()
            raise
        finally:
            self._lock.release()

    def _abort(self):
        """Drop the temporary file (after an error): nothing is written at ``path``."""
        self._closed = True
        if self._file is not None and self._file is not self._raw:
            with contextlib.suppress(Exception):
                self._file.close()
        discard_temporary(self._raw, self._temporary)
        self._lock.release()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        if exc_type is not None:
            self._abort()  # never leave a truncated file that looks complete
        else:
            self.close()
        return False


def write_reports(reports, path, format=None, chunk_size=CHUNK_SIZE):
    """Write LDPReports to one CSV or Parquet file (columns: :mod:`sklearn_ldp.deploy.io`).

    Atomic, with a checksum (see :class:`ReportWriter`).

    Parameters
    ----------
    reports : LDPReports
        The reports to write (with the mechanism's specification).
    path : str or path-like
        ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` (or give ``format``); an existing
        file is replaced.
    format : {"csv", "parquet"}, optional
        Default: from the file name.
    chunk_size : int, default=2**20
        Reports converted and written at once (bounds the memory of the conversion); an
        integer >= 1.

    Raises
    ------
    ValueError
        If ``reports`` is not LDPReports, ``chunk_size`` is not an integer >= 1, or the
        file type is unknown.
    sklearn_ldp.deploy.limits.FileLockedError
        If another writer is writing ``path`` (see :class:`ReportWriter`).

    See Also
    --------
    read_reports : Read small files back into memory.
    aggregate_files : Aggregate many files in bounded memory.
    ReportWriter : Write a file chunk by chunk.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from sklearn_ldp.deploy.io import read_reports
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> reports = LDPReports(np.array([0, 2, 1, 1]), RandomizedResponse(3, 1.0))
    >>> path = os.path.join(tempfile.mkdtemp(), "reports.csv")
    >>> write_reports(reports, path)
    >>> read_reports(path).reports.tolist()
    [0, 2, 1, 1]
    """
    if not isinstance(reports, LDPReports):
        raise ValueError(f"write_reports writes LDPReports, got {type(reports).__name__}.")
    # Before the file is opened: a bad size must not leave (or replace) a file.
    chunk_size = check_chunk_size(chunk_size)
    with ReportWriter(path, reports.mechanism, format) as writer:
        for start in range(0, max(len(reports), 1), chunk_size):
            writer.write(reports.reports[start:start + chunk_size])
