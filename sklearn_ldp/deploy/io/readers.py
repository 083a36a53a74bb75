"""Reading report files in bounded memory: :func:`iter_report_chunks`, :func:`read_reports`.

Each file of version 2 is verified completely (its checksum) before any of its reports is
yielded; files without a checksum only with ``allow_unverified=True`` (see
:mod:`sklearn_ldp.deploy.io`).
"""

import contextlib
import glob
import gzip
import hashlib
import io
import json
import os
import warnings
import zlib

import numpy as np
import pandas as pd

from ...mechanisms import Mechanism
from ...mechanisms._base.docstrings import shared_sections
from ...mechanisms._base.rows import empty_reports
from ...mechanisms._base.specs import load_mechanism_json
from ...reports import LDPReports
from ..limits import (
    UnverifiedFileWarning,
    check_size,
    checksum_mismatch,
    get_limits,
)
from .formats import (
    CHECKSUM_KEY,
    CHUNK_SIZE,
    CSV_END_PREFIX,
    CSV_SPEC_PREFIX,
    CSV_VERSION_PREFIX,
    FILE_VERSION,
    READ_BLOCK,
    ROWS_KEY,
    SPEC_KEY,
    VERSION_KEY,
    check_chunk_size,
    file_format,
    import_pyarrow,
    parquet_checksum,
    parquet_footer_start,
)
from .frames import check_column_names, checked_reports, columns_to_array, first_bad, report_columns

# Docstring sections of the readers, written once (lines ``<files parameters>`` and
# ``<unverified warning>`` of a docstring; :mod:`sklearn_ldp.mechanisms._base.docstrings`).
files_docstring = shared_sections({
    "files parameters": """\
Parameters
----------
source : str, path-like or list of them
    A file, a directory, a glob pattern or a list of files, as in
    :func:`aggregate_files`.
mechanism : Mechanism, optional
    The mechanism the clients ran, as in :func:`aggregate_files`.""",
    "unverified warning": """\
Warns
-----
UnverifiedFileWarning
    With ``allow_unverified=True``, for each file without a checksum.""",
})

def _check_rows(n_rows, where):
    """``n_rows`` if within ``max_file_rows`` (zero rows are allowed)."""
    if n_rows:
        check_size(n_rows, "the number of rows", "max_file_rows", where)
    return n_rows


@contextlib.contextmanager
def _csv_stream(path):
    """The decompressed bytes of a CSV file (``.gz``: gzip), as one seekable binary stream."""
    with open(path, "rb") as raw:
        if path.lower().endswith(".gz"):
            with gzip.GzipFile(fileobj=raw, mode="rb") as stream:
                yield stream
        else:
            yield raw


def _read_line(stream, where, number):
    """One line of at most ``max_header_bytes`` bytes (a longer one is refused unread)."""
    limit = get_limits()["max_header_bytes"]
    line = stream.readline(limit + 1)
    if len(line) > limit:
        check_size(len(line), f"line {number}", "max_header_bytes", where)
    return line


def _unverified(path, version, allow_unverified):
    """Refuse a report file without a checksum, or warn if the caller opted in.

    A version-1 file or one without a spec cannot be told apart from a version-2 file whose
    version line, metadata or end line were removed: reading it silently would let any edit
    pass for an old file.
    """
    origin = ("report file version 1, written by an earlier sklearn_ldp" if version == 1 else
              "no sklearn_ldp header: written by another system, or its header and end "
              "line were removed")
    if not allow_unverified:
        raise ValueError(
            f"{path}: the file carries no checksum ({origin}); refused, since nothing can "
            "tell it from a modified or truncated file. Pass allow_unverified=True to read "
            "it unverified, or write it again with write_reports to add a checksum.")
    warnings.warn(f"{path}: the file carries no checksum ({origin}); it is read unverified "
                  "(allow_unverified=True). Write it again to add one.",
                  UnverifiedFileWarning, stacklevel=6)


class _ReportFile:
    """One file's header: format, version, spec, columns, rows (None if unknown).

    ``version`` is None for a file without a spec (from another system), 1 for one written
    by an earlier sklearn_ldp (a spec, no checksum), 2 for a verified one.
    """

    def __init__(self, path, allow_unverified=False):
        self.path = path
        self.format = file_format(path)
        self.spec = None
        self.version = None
        self.n_rows = None
        self.checksum = None
        self.skip_lines = 0
        try:
            if self.format == "parquet":
                self._read_parquet_header()
            else:
                self._read_csv_header()
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise checksum_mismatch(path, f"cannot decompress: {exc}") from None
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            if str(exc).startswith(path):
                raise
            raise ValueError(f"{path}: cannot read the file ({exc}; it may be truncated or "
                             "not a report file).") from None
        if self.version != FILE_VERSION:
            _unverified(path, self.version, allow_unverified)

    # ------------------------------------------------------------------ parquet
    def _parquet(self, source=None):
        """The ParquetFile of ``source`` (an open binary file; default: the path)."""
        pa = import_pyarrow()
        try:
            return pa.parquet.ParquetFile(self.path if source is None else source,
                                          page_checksum_verification=True)
        except (pa.ArrowException, OSError) as exc:
            raise ValueError(f"{self.path}: not a readable Parquet file ({exc}); it may be "
                             "truncated (a writer that did not finish) or modified.") from None

    def _parquet_fields(self, parquet):
        """``(spec, version, rows declared, checksum)`` from a Parquet file's metadata."""
        schema = parquet.schema_arrow
        metadata = parquet.metadata.metadata or {}
        spec = (schema.metadata or {}).get(SPEC_KEY.encode())
        if spec is not None:
            check_size(max(len(spec), 1), "the specification", "max_header_bytes", self.path)
            spec = spec.decode()
        # The version is in the schema and in the file's key-value metadata: a file with
        # either is a version-2 file, and damage to the other cannot pass for version 1.
        version = metadata.get(VERSION_KEY.encode(),
                               (schema.metadata or {}).get(VERSION_KEY.encode()))
        if version is None:
            return spec, (None if spec is None else 1), None, None
        if version != str(FILE_VERSION).encode():
            raise ValueError(f"{self.path}: unsupported report file version {version!r}; this "
                             f"sklearn_ldp reads versions 1 and {FILE_VERSION}.")
        rows, checksum = metadata.get(ROWS_KEY.encode()), metadata.get(CHECKSUM_KEY.encode())
        if rows is None or checksum is None or not rows.isdigit():
            raise checksum_mismatch(self.path, f"version {FILE_VERSION} without a valid "
                                               f"{ROWS_KEY} and {CHECKSUM_KEY}")
        return spec, FILE_VERSION, int(rows), checksum.decode(errors="replace")

    def _read_parquet_header(self):
        parquet = self._parquet()
        schema = parquet.schema_arrow
        self.columns = list(schema.names)
        self.types = {field.name: field.type for field in schema}
        self._fields = self._parquet_fields(parquet)
        self.spec, self.version, declared, self.checksum = self._fields
        self.n_rows = _check_rows(parquet.metadata.num_rows, self.path)
        if declared is not None and declared != self.n_rows:
            raise checksum_mismatch(self.path, f"{declared} rows declared, {self.n_rows} "
                                               "stored")

    # ------------------------------------------------------------------ csv
    def _read_csv_header(self):
        with _csv_stream(self.path) as stream:
            head = first = _read_line(stream, self.path, 1)
            line = first
            if first.startswith(CSV_SPEC_PREFIX.encode()):
                self.spec = first[len(CSV_SPEC_PREFIX):].decode().strip()
                self.skip_lines, self.version = 1, 1
                line = _read_line(stream, self.path, 2)
                head += line
                if line.startswith(CSV_VERSION_PREFIX.encode()):
                    found = line[len(CSV_VERSION_PREFIX):].decode().strip()
                    if found != str(FILE_VERSION):
                        raise ValueError(f"{self.path}: unsupported report file version "
                                         f"{found!r}; this sklearn_ldp reads versions 1 and "
                                         f"{FILE_VERSION}.")
                    self.skip_lines, self.version = 2, FILE_VERSION
                    line = _read_line(stream, self.path, 3)
                    head += line
        if not line.strip():
            raise ValueError(f"{self.path}: empty file, no header line with the report "
                             "columns.")
        self._head = head  # the verification pass checks the file still starts with it
        try:
            header = pd.read_csv(io.BytesIO(line), nrows=0)
        except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
            raise ValueError(f"{self.path}: no readable header line with the report columns "
                             f"({exc}).") from None
        self.columns = list(header.columns)

    def _verify_csv(self, stream):
        """Hash the whole (decompressed) file and check its end line; returns the rows.

        One pass in blocks of ``READ_BLOCK`` bytes: everything before the last line is
        hashed, the last line must be the end line with the same SHA-256 and row count.
        A line longer than ``max_header_bytes`` or more rows than ``max_file_rows`` are
        refused as soon as they are seen.
        """
        limits = get_limits()
        digest, pending, lines, start = hashlib.sha256(), b"", 0, b""
        while True:
            block = stream.read(READ_BLOCK)
            if not block:
                break
            data = pending + block
            if len(start) < len(self._head):
                start += block[:len(self._head) - len(start)]
            cut = data.rfind(b"\n", 0, len(data) - 1)  # pending: the last, maybe partial, line
            if cut >= 0:
                view = memoryview(data)[:cut + 1]
                digest.update(view)
                lines += data.count(b"\n", 0, cut + 1)
                pending = data[cut + 1:]
            else:
                pending = data
            if len(pending) > limits["max_header_bytes"]:
                check_size(len(pending), f"line {lines + 1}", "max_header_bytes", self.path)
            _check_rows(max(lines - self.skip_lines - 1, 0), self.path)
        if not start.startswith(self._head):
            raise ValueError(f"{self.path}: the file changed while it was read.")
        if not (pending.startswith(CSV_END_PREFIX.encode()) and pending.endswith(b"\n")):
            raise checksum_mismatch(self.path, "no end line: the writer did not finish, or "
                                               "the file was cut short")
        try:
            end = json.loads(pending[len(CSV_END_PREFIX):])
            n_rows, checksum = end["n_rows"], end["sha256"]
        except (ValueError, KeyError, TypeError):
            raise checksum_mismatch(self.path, "unreadable end line") from None
        rows = lines - self.skip_lines - 1
        if checksum != digest.hexdigest():
            raise checksum_mismatch(self.path)
        if n_rows != rows:
            raise checksum_mismatch(self.path, f"{n_rows} rows declared, {rows} stored")
        return rows

    # ------------------------------------------------------------------ both
    def mechanism(self):
        """The mechanism of the file's spec (None if it has none); ValueError if unreadable."""
        if self.spec is None:
            return None
        try:
            return load_mechanism_json(self.spec)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise ValueError(f"{self.path}: cannot rebuild the mechanism of its "
                             f"specification: {exc}") from None

    def check_schema(self, mechanism):
        expected = report_columns(mechanism)
        check_column_names(self.columns, expected, self.path, mechanism)
        if self.format == "parquet":
            empty = empty_reports(mechanism)
            integer = np.issubdtype(empty.dtype, np.integer)
            pa = import_pyarrow()
            for name in expected:
                kind = self.types[name]
                fits = (pa.types.is_integer(kind) if integer else
                        pa.types.is_floating(kind) or pa.types.is_integer(kind))
                if not fits:
                    raise ValueError(f"{self.path}, column {name!r}: type {kind}, but the "
                                     f"reports of {mechanism!r} are "
                                     f"{'integers' if integer else 'numbers'}.")

    def chunks(self, mechanism, chunk_size):
        """Yield ``(report array, rows before it)``: converted, not yet checked by the mechanism.

        A file of version 2 is verified completely (checksum, row count) before its first
        chunk is yielded.
        """
        if self.format == "parquet":
            yield from self._parquet_chunks(mechanism, chunk_size)
            return
        try:
            with _csv_stream(self.path) as stream:
                n_rows = None
                if self.version == FILE_VERSION:
                    n_rows = self._verify_csv(stream)
                    stream.seek(0)
                if n_rows == 0:
                    return
                yield from self._csv_chunks(stream, mechanism, chunk_size, n_rows)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise checksum_mismatch(self.path, f"cannot decompress: {exc}") from None
        except OSError as exc:
            raise ValueError(f"{self.path}: cannot read the file ({exc}).") from None

    def _csv_chunks(self, stream, mechanism, chunk_size, n_rows):
        empty = empty_reports(mechanism)
        expected = report_columns(mechanism)
        first_row = 0
        # No usecols: with it pandas silently accepts rows with extra fields. ``nrows`` stops
        # before the end line of a verified file.
        reader = pd.read_csv(stream, skiprows=self.skip_lines, chunksize=chunk_size,
                             nrows=n_rows)
        try:
            for frame in reader:
                columns = {name: frame[name].to_numpy() for name in expected}
                yield columns_to_array(columns, empty, self.path, first_row), first_row
                first_row += len(frame)
                _check_rows(first_row, self.path)
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.path}: cannot parse the CSV after row {first_row} "
                             f"({exc}).") from None
        finally:
            reader.close()

    def _verify_parquet(self, handle):
        """Hash the bytes before the footer (block by block), with the spec and the rows."""
        start = parquet_footer_start(handle, self.path)
        handle.seek(0)
        digest, done = hashlib.sha256(), 0
        while done < start:
            block = handle.read(min(READ_BLOCK, start - done))
            if not block:
                raise checksum_mismatch(self.path, "the file was cut short")
            digest.update(block)
            done += len(block)
        if parquet_checksum(digest, self.spec, self.n_rows) != self.checksum:
            raise checksum_mismatch(self.path)
        handle.seek(0)

    def _parquet_chunks(self, mechanism, chunk_size):
        pa = import_pyarrow()
        empty = empty_reports(mechanism)
        expected = report_columns(mechanism)
        first_row = 0
        # One open file for the hashing pass and the parsing pass: what is parsed is what
        # was verified, even if the path is replaced meanwhile.
        with open(self.path, "rb") as handle:
            if self.version == FILE_VERSION:
                self._verify_parquet(handle)
            parquet = self._parquet(handle)
            if self._parquet_fields(parquet) != self._fields:
                raise ValueError(f"{self.path}: the file changed while it was read.")
            try:
                for batch in parquet.iter_batches(batch_size=chunk_size, columns=expected):
                    columns = {}
                    for name in expected:
                        column = batch.column(name)
                        if column.null_count and np.issubdtype(empty.dtype, np.integer):
                            row = first_bad(np.asarray(column.is_null()))
                            raise ValueError(f"{self.path}, row {first_row + row + 1}, column "
                                             f"{name!r}: missing value.")
                        columns[name] = column.to_numpy(zero_copy_only=False)
                    yield columns_to_array(columns, empty, self.path, first_row), first_row
                    first_row += batch.num_rows
            except OSError as exc:
                if "checksum" in str(exc).lower():  # a Parquet page's CRC-32
                    raise checksum_mismatch(self.path, str(exc)) from None
                raise ValueError(f"{self.path}: cannot read row {first_row + 1} onwards "
                                 f"({exc}); the file may be truncated or modified.") from None
            except pa.ArrowException as exc:
                raise ValueError(f"{self.path}: cannot read row {first_row + 1} onwards "
                                 f"({exc}).") from None


def _resolve_paths(source):
    """Files to read: a file, a directory (its report files), a glob pattern, or a list."""
    if isinstance(source, list | tuple):
        paths = [os.fspath(path) for path in source]
        for path in paths:
            if not os.path.isfile(path):
                raise ValueError(f"{path}: no such file.")
    else:
        source = os.fspath(source)
        if os.path.isdir(source):
            # Hidden and "_"-prefixed entries are bookkeeping of Spark/Hadoop (_SUCCESS, .crc).
            names = sorted(name for name in os.listdir(source)
                           if not name.startswith((".", "_")))
            paths = [os.path.join(source, name) for name in names]
            paths = [path for path in paths if os.path.isfile(path)]
        elif os.path.isfile(source):
            paths = [source]
        else:
            paths = sorted(path for path in glob.glob(source) if os.path.isfile(path))
    if not paths:
        raise ValueError(f"no report files found at {source!r}.")
    for path in paths:
        file_format(path)  # an unknown file type is an error, never silently skipped
    return paths


def open_files(source, mechanism, allow_unverified):
    """Headers of every file, checked against one mechanism, before any data is read."""
    if not isinstance(allow_unverified, bool):
        raise TypeError(f"allow_unverified must be True or False, got {allow_unverified!r}.")
    files = [_ReportFile(path, allow_unverified) for path in _resolve_paths(source)]
    if mechanism is not None and not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a mechanism object (e.g. from "
                         f"mechanism_from_json), got {type(mechanism).__name__}.")
    for file in files:
        found = file.mechanism()
        if found is None:
            continue
        if mechanism is None:
            mechanism = found
        elif found != mechanism:
            raise ValueError(f"{file.path} holds reports of {found!r}, not of {mechanism!r}: "
                             "reports of different mechanisms cannot be aggregated together.")
    if mechanism is None:
        raise ValueError("the files carry no mechanism specification; pass mechanism= (e.g. "
                         "mechanism_from_json(spec)).")
    for file in files:
        file.check_schema(mechanism)
    return files, mechanism


@files_docstring
def iter_report_chunks(source, mechanism=None, chunk_size=CHUNK_SIZE, *,
                       allow_unverified=False):
    """Yield the reports of the files at ``source`` as arrays of at most ``chunk_size`` rows.

    Each chunk is checked like :func:`frame_to_reports` (errors name the file, row and
    column). ``source`` and ``mechanism`` as in :func:`aggregate_files`. Each file with a
    checksum is verified completely before its first chunk is yielded (see the module
    docstring).

    <files parameters>
    chunk_size : int, default=2**20
        Most reports per chunk (a chunk never spans two files); an integer >= 1.
    allow_unverified : bool, default=False
        Read files without a checksum, with a warning each, as in :func:`aggregate_files`.

    Returns
    -------
    iterator of ndarray
        The reports chunk by chunk, each as ``mechanism.randomize`` returns them. The files
        are opened and checked as the iteration starts.

    Raises
    ------
    ValueError
        At the call, if ``chunk_size`` is not an integer >= 1; during the iteration, as
        :func:`aggregate_files`, naming the file, row and column.

    See Also
    --------
    aggregate_files : Aggregate the chunks.
    read_reports : All reports at once.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ldp.deploy.io import write_reports
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> path = os.path.join(tempfile.mkdtemp(), "reports.csv")
    >>> write_reports(LDPReports(np.arange(5) % 3, RandomizedResponse(3, 1.0)), path)
    >>> [chunk.tolist() for chunk in iter_report_chunks(path, chunk_size=2)]
    [[0, 1], [2, 0], [1]]
    """
    # Checked at the call, not at the first next(): the error points at the caller's line.
    return _report_chunks(source, mechanism, check_chunk_size(chunk_size), allow_unverified)


def _report_chunks(source, mechanism, chunk_size, allow_unverified):
    """The generator behind :func:`iter_report_chunks` (``chunk_size`` already checked)."""
    files, mechanism = open_files(source, mechanism, allow_unverified)
    for file in files:
        for array, first_row in file.chunks(mechanism, chunk_size):
            yield checked_reports(mechanism, array, file.path, first_row)


@files_docstring
def read_reports(source, mechanism=None, domain=None, workload=None, *,
                 allow_unverified=False):
    """All reports of the files at ``source`` in memory, as LDPReports (for small files).

    Use :func:`aggregate_files` for large ones: it never holds more than one chunk.

    <files parameters>
    domain : Domain, optional
        Attached to the result (for labelled answers).
    workload : Workload, optional
        Attached to the result.
    allow_unverified : bool, default=False
        Read files without a checksum, with a warning each, as in :func:`aggregate_files`.

    Returns
    -------
    LDPReports
        The reports of every file, in order.

    Raises
    ------
    ValueError
        As :func:`aggregate_files`, naming the file, row and column.

    <unverified warning>

    See Also
    --------
    write_reports : Write reports to a file.
    aggregate_files : Aggregate large files in bounded memory.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ldp.deploy.io import write_reports
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> path = os.path.join(tempfile.mkdtemp(), "reports.parquet")
    >>> write_reports(LDPReports(np.array([2, 0, 1]), RandomizedResponse(3, 1.0)), path)
    >>> reports = read_reports(path)
    >>> reports.reports.tolist(), reports.mechanism
    ([2, 0, 1], RandomizedResponse(n_inputs=3, epsilon=1.0))
    """
    files, mechanism = open_files(source, mechanism, allow_unverified)
    parts = [checked_reports(mechanism, array, file.path, first_row)
             for file in files for array, first_row in file.chunks(mechanism, CHUNK_SIZE)]
    reports = np.concatenate(parts) if parts else empty_reports(mechanism)
    return LDPReports(reports, mechanism, domain, workload)
