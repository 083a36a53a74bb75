"""Reports in files: write them to CSV or Parquet, aggregate many files in bounded memory.

Column schema
-------------
One row per report, in every format (CSV, Parquet, and the partitions of a Dask or Spark
DataFrame, see :mod:`sklearn_ldp.deploy.distributed`); :func:`report_columns` gives the names:

* **one integer per user** (``randomized_response``, ``hadamard``, ``hrr``, ``haar``,
  ``factorization`` strategies such as ``"optimized"``, ``"hierarchical"`` with HRR levels):
  a single column ``report``, the output index.
* **a row of ``w`` values per user**: columns ``report_0 ... report_{w-1}`` in the order of
  the mechanism's report array:

  - packed bits (``rappor``, ``oue``, ``subset_selection``): ``w = ceil(n / 8)`` bytes
    (0..255), ``np.packbits(bits, axis=1, bitorder="little")``;
  - local hashing (``olh``, ``blh``): ``report_0`` the 64-bit hash seed (unsigned),
    ``report_1`` the bucket;
  - ``"hierarchical"`` with OUE levels: ``report_0`` the level (1-based), then that level's
    packed bits; with OLH levels: level, seed, bucket;
  - Gaussian randomizers: the ``w`` real coordinates (a row of empty values / NaN is a
    dropped ``gaussian_pure`` report).

Integer columns must hold integers that fit the mechanism's report type (``uint8`` to
``uint64``, as ``mechanism.randomize`` returns them); Parquet files store exactly that type.
Files written here also carry the mechanism's JSON specification (CSV: a first line
``# sklearn_ldp mechanism: {...}``; Parquet: the schema metadata key
``sklearn_ldp.mechanism``), so that reports of another mechanism are refused before anything
is aggregated. Files from elsewhere may omit it (then pass ``mechanism=``).

File format versions and integrity
----------------------------------
Files written here are of **report file version 2**:

* CSV: the spec line, then ``# sklearn_ldp file_version: 2``, the column line, the rows, and a
  last line ``# sklearn_ldp end: {"n_rows": N, "sha256": "..."}``: the SHA-256 of every byte
  before it (of the decompressed text, for ``.csv.gz``);
* Parquet: the metadata ``sklearn_ldp.file_version`` (``"2"``, in the schema and the file's
  key-value metadata), ``sklearn_ldp.n_rows`` and ``sklearn_ldp.sha256``: the SHA-256 of
  every byte before the footer (the row groups: page headers and data), then of the spec
  and of the row count; the data pages also carry Parquet's CRC-32 page checksums. The
  footer's other fields (schema, offsets, statistics) are checked by decoding it: damage
  there is refused as an unreadable file, or cannot change a report.

Readers verify a file of version 2 completely **before** yielding any of its reports (a
hashing pass over its bytes, then the parsing pass: each such file is read twice, the first
time at the speed of SHA-256), and refuse a mismatch, a missing end line or metadata, or a
wrong row count with "checksum mismatch: the file was modified or truncated". Files of
version 1 (written by earlier releases: a spec, no checksum) and files without a spec (from
other systems) carry no checksum: they are refused unless the caller passes
``allow_unverified=True`` (see below). The checksum detects damage and truncation, not
forgery: whoever can write the file can recompute it.

:class:`ReportWriter` writes to a hidden temporary file (``.<name>.<random>.tmp``) in the
target directory and renames it onto the target only on a successful ``close``, after an
``fsync`` (and an ``fsync`` of the directory): a writer that fails or is killed (even by
SIGKILL) leaves no file at the target and the previous file there intact, and the hidden
temporary file is never picked up when reading a directory or a glob pattern.

**One writer per path.** From its construction to its ``close``, a :class:`ReportWriter`
holds an exclusive OS lock (``fcntl.flock``) on the hidden lock file ``.<name>.lock`` next
to the target (:func:`sklearn_ldp.deploy.limits.lock_path`); a second writer of the same path, in
this process or another one, is refused at once with
:class:`~sklearn_ldp.deploy.limits.FileLockedError` naming the path, instead of replacing the
first writer's file on its ``close``. :meth:`LDPReports.save` and
:meth:`AggregatedReports.save` take the same lock. The OS releases it when its holder dies.

**No silent downgrade.** A file without a checksum (version 1, or a file without a spec
from another system) cannot be told apart from a verified file whose checksum was stripped;
readers refuse it with a ValueError naming the file unless the caller passes
``allow_unverified=True`` (then it is read with an
:class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning`).

Sizes a file declares (rows, header lines) are checked against the caps of
:mod:`sklearn_ldp.deploy.limits` (``max_file_rows``, ``max_header_bytes``); the spec's sizes are
checked when the mechanism is rebuilt.

Parquet needs the optional dependency pyarrow (``pip install sklearn_ldp[distributed]``).
"""

import contextlib
import glob
import gzip
import hashlib
import io
import json
import os
import sys
import time
import warnings
import zlib

import numpy as np
import pandas as pd

from ..mechanisms import Mechanism
from ..mechanisms._base.rows import empty_reports
from ..mechanisms._base.specs import load_mechanism_json
from ..mechanisms._base.statistics import add_counts
from ..mechanisms.multi_attribute.columns import ColumnsMechanism
from ..reports import AggregatedReports, LDPReports
from ..workloads import workload_from_spec
from .limits import (
    UnverifiedFileWarning,
    acquire_lock,
    check_size,
    checksum_mismatch,
    commit_temporary,
    discard_temporary,
    get_limits,
    temporary_sibling,
)
from .npz import _category_to_json, _domain_from_header, _workload_spec_cells

__all__ = ["ReportWriter", "aggregate_files", "frame_to_reports", "iter_report_chunks",
           "read_reports", "report_columns", "reports_frame", "reports_from_frame",
           "write_reports"]

# Reports read (and written per Parquet row group) at once: ~1-8 MB per chunk for most
# mechanisms, so memory stays bounded whatever the size of the files.
CHUNK_SIZE = 2**20
SPEC_KEY = "sklearn_ldp.mechanism"
CSV_SPEC_PREFIX = "# sklearn_ldp mechanism: "
SUFFIXES = {".csv": "csv", ".csv.gz": "csv", ".parquet": "parquet", ".pq": "parquet"}

# Layout of the files written here: 2 added the checksum (1 had the spec only).
FILE_VERSION = 2
CSV_VERSION_PREFIX = "# sklearn_ldp file_version: "
CSV_END_PREFIX = "# sklearn_ldp end: "
VERSION_KEY = "sklearn_ldp.file_version"
ROWS_KEY = "sklearn_ldp.n_rows"
CHECKSUM_KEY = "sklearn_ldp.sha256"
# Bytes hashed at once by the verification pass of a CSV file.
READ_BLOCK = 2**20
# DataFrame.attrs keys of a report frame (reports_frame): JSON text only, so that pandas keeps
# them through copies, slices and DataFrame.to_parquet / pandas.read_parquet (which stores
# attrs in the file's metadata).
DOMAIN_ATTR = "sklearn_ldp.domain"
WORKLOAD_ATTR = "sklearn_ldp.workload"


def _import_pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError("reading or writing Parquet needs pyarrow: pip install pyarrow (or "
                          "sklearn_ldp[distributed]).") from None
    return pyarrow


# ---------------------------------------------------------------------- schema
def report_columns(mechanism):
    """Column names of ``mechanism``'s reports in files and DataFrames (see module docstring).

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism whose reports are stored.

    Returns
    -------
    list of str
        ``["report"]`` for one integer per user, else ``["report_0", ..., "report_{w-1}"]``
        for a row of ``w`` values per user.

    See Also
    --------
    reports_frame : Reports as a DataFrame with these columns.
    write_reports : Reports to a CSV or Parquet file with these columns.

    Examples
    --------
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> report_columns(baseline_mechanism("randomized_response", (4,), 1.0))
    ['report']
    >>> report_columns(baseline_mechanism("olh", (4,), 1.0))
    ['report_0', 'report_1']
    """
    if isinstance(mechanism, ColumnsMechanism):
        # Records of several columns: one name per report column, after the record's columns.
        return mechanism.report_columns()
    empty = empty_reports(mechanism)
    if empty.ndim == 1:
        return ["report"]
    return [f"report_{j}" for j in range(empty.shape[1])]


def _frame_attrs(reports):
    """The ``DataFrame.attrs`` that let :func:`reports_from_frame` rebuild ``reports``.

    The mechanism's JSON specification always; the domain when its categories are JSON-able
    (str, numbers, bools, tuples and intervals, as :meth:`LDPReports.save` stores them); the
    workload when its structure needs no arrays (histogram, prefix, all ranges, their
    products and stacks; a custom query matrix is left out: pass ``workload=`` again).
    """
    attrs = {SPEC_KEY: reports.mechanism.to_json()}
    domain = getattr(reports, "domain", None)
    if domain is not None:
        try:
            attrs[DOMAIN_ATTR] = json.dumps(
                {column: [_category_to_json(v, column) for v in values]
                 for column, values in domain.categories.items()})
        except ValueError:
            pass  # categories JSON cannot hold: answers are then labelled by cell index
    workload = getattr(reports, "workload", None)
    if workload is not None:
        spec, arrays = workload.to_spec()
        if not arrays:
            attrs[WORKLOAD_ATTR] = json.dumps(spec)
    return attrs


def reports_frame(reports, attrs=True):
    """LDPReports as a pandas DataFrame with the file schema (e.g. for ``dd.from_pandas``).

    Parameters
    ----------
    reports : LDPReports
        The reports to convert.
    attrs : bool, default=True
        Store the mechanism's JSON specification (and the domain and workload when they can
        be written as JSON) in ``DataFrame.attrs``, so that :func:`reports_from_frame` and
        the estimators decode the frame without being told the mechanism. pandas keeps
        ``attrs`` through copies and slices and through ``to_parquet`` / ``read_parquet``;
        CSV files do not hold them (use :func:`write_reports`, whose files carry the
        specification).

    Returns
    -------
    pandas.DataFrame
        One row per report, columns :func:`report_columns`.

    See Also
    --------
    reports_from_frame : The reverse conversion.
    report_columns : The column names.
    sklearn_ldp.deploy.distributed.aggregate_dask : Aggregates such frames on a Dask cluster.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> frame = reports_frame(LDPReports(np.array([0, 2]), RandomizedResponse(3, 1.0)))
    >>> frame
       report
    0       0
    1       2
    >>> reports_from_frame(frame).mechanism
    RandomizedResponse(n_inputs=3, epsilon=1.0)
    """
    array = np.asarray(reports.reports)
    columns = report_columns(reports.mechanism)
    if array.ndim == 1:
        frame = pd.DataFrame({columns[0]: array})
    else:
        frame = pd.DataFrame({name: array[:, j] for j, name in enumerate(columns)})
    if attrs:
        frame.attrs.update(_frame_attrs(reports))
    return frame


def _strip_prefix(columns, expected):
    """``columns`` without a common ``"<name>__"`` prefix, if that leaves ``expected``.

    A ColumnTransformer prefixes its transformers' column names (verbose feature names:
    ``"ldp__report_0"``); the report columns are still recognized, in their order.
    """
    if len(columns) != len(expected) or not all(isinstance(c, str) for c in columns):
        return columns
    first = columns[0]
    if not first.endswith("__" + expected[0]):
        return columns
    prefix = first[:len(first) - len(expected[0])]
    if all(c == prefix + e for c, e in zip(columns, expected, strict=True)):
        return list(expected)
    return columns


def reports_from_frame(frame, mechanism=None, domain=None, workload=None):
    """LDPReports from a DataFrame of report columns (the reverse of :func:`reports_frame`).

    Accepts the output of ``LDPEncoder`` with ``set_output(transform="pandas")`` (alone or
    in a ColumnTransformer, whose ``"<name>__"`` column prefix is recognized) and frames
    read back with ``pandas.read_parquet`` after ``DataFrame.to_parquet``.

    Parameters
    ----------
    frame : pandas.DataFrame
        Exactly the columns :func:`report_columns` of the mechanism, in any order.
    mechanism : Mechanism, optional
        Default: rebuilt from ``frame.attrs`` (set by :func:`reports_frame`). Given and the
        frame carries another one, a ValueError.
    domain, workload : Domain, Workload, optional
        Default: those of ``frame.attrs``, if any.

    Returns
    -------
    LDPReports
        The reports of every row, in order, with their mechanism, domain and workload.

    Raises
    ------
    ValueError
        No mechanism (neither ``mechanism=`` nor in ``attrs``), a different mechanism in
        ``attrs``, wrong columns, or values that are not reports of the mechanism (naming
        the row and column).

    See Also
    --------
    reports_frame : The reverse conversion.
    frame_to_reports : Only the checked report array.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> frame = pd.DataFrame({"report": [0, 2, 1]})
    >>> reports_from_frame(frame, mechanism=RandomizedResponse(3, 1.0)).reports.tolist()
    [0, 2, 1]
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"frame must be a pandas DataFrame of report columns, got "
                         f"{type(frame).__name__}.")
    where = "DataFrame.attrs"
    spec = frame.attrs.get(SPEC_KEY)
    if spec is not None and not isinstance(spec, str):
        raise ValueError(f"{where}[{SPEC_KEY!r}] must be the mechanism's JSON text, got "
                         f"{type(spec).__name__}.")
    carried = None if spec is None else load_mechanism_json(spec)
    if mechanism is None:
        if carried is None:
            raise ValueError(
                "the DataFrame carries no mechanism (no DataFrame.attrs[" + repr(SPEC_KEY)
                + "]: e.g. it was read from CSV, or rebuilt by an operation that drops "
                "attrs); pass mechanism= (e.g. mechanism_from_json(encoder.client_spec())).")
        mechanism = carried
    elif not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a mechanism object (e.g. from "
                         f"mechanism_from_json), got {type(mechanism).__name__}.")
    elif carried is not None and carried != mechanism:
        raise ValueError(f"the DataFrame holds reports of {carried!r} ({where}), not of "
                         f"{mechanism!r}.")
    if domain is None and frame.attrs.get(DOMAIN_ATTR) is not None:
        domain = _domain_from_header(json.loads(frame.attrs[DOMAIN_ATTR]), where)
    if workload is None and frame.attrs.get(WORKLOAD_ATTR) is not None:
        workload_spec = json.loads(frame.attrs[WORKLOAD_ATTR])
        _workload_spec_cells(workload_spec, where)
        workload = workload_from_spec(workload_spec, None, domain)
    expected = report_columns(mechanism)
    columns = _strip_prefix(list(frame.columns), expected)
    if columns != list(frame.columns):
        frame = frame.set_axis(columns, axis=1)
    array = frame_to_reports(frame, mechanism)
    return LDPReports(array, mechanism, domain, workload)


def _python(value):
    """A numpy scalar as the python value, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def _first_bad(mask):
    return int(np.flatnonzero(mask)[0])


def _integer_column(values, dtype, where, first_row, column):
    """An integer column as ``dtype``, or a ValueError naming the first bad row and value."""
    info = np.iinfo(dtype)
    if values.dtype.kind not in "iu":
        numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(numeric) | (numeric != np.round(numeric))
        if bad.any():
            row = _first_bad(bad)
            raise ValueError(f"{where}, row {first_row + row + 1}, column {column!r}: "
                             f"{_python(values[row])!r} is not an integer (reports of this "
                             f"mechanism are {np.dtype(dtype)} integers).")
        # Integral floats would be exact only below 2**53 (not 64-bit seeds): never convert.
        raise ValueError(f"{where}, column {column!r}: dtype {values.dtype}, but reports of "
                         f"this mechanism are {np.dtype(dtype)} integers; store them as "
                         "integers.")
    source = np.iinfo(values.dtype)
    outside = np.zeros(values.shape[0], dtype=bool)
    if source.min < info.min:
        outside |= values < info.min
    if source.max > info.max:
        outside |= values > info.max
    if outside.any():
        row = _first_bad(outside)
        raise ValueError(f"{where}, row {first_row + row + 1}, column {column!r}: value "
                         f"{values[row]} is outside [{info.min}, {info.max}], the range of this "
                         "mechanism's reports: they come from another mechanism or domain.")
    return values.astype(dtype, copy=False)


def _float_column(values, where, first_row, column):
    if values.dtype.kind not in "iuf":
        numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
        bad = np.isnan(numeric) & ~pd.isna(values)
        if bad.any():
            row = _first_bad(bad)
            raise ValueError(f"{where}, row {first_row + row + 1}, column {column!r}: "
                             f"{_python(values[row])!r} is not a number.")
        return numeric
    return values.astype(np.float64, copy=False)


def _columns_to_array(columns, empty, where, first_row):
    """Convert ``{name: 1-D values}`` (already in schema order) to the mechanism's report array."""
    names = list(columns)
    convert = (_float_column if np.issubdtype(empty.dtype, np.floating) else
               lambda v, w, r, c: _integer_column(v, empty.dtype, w, r, c))
    arrays = [convert(np.asarray(columns[name]), where, first_row, name) for name in names]
    if empty.ndim == 1:
        return arrays[0]
    n_rows = arrays[0].shape[0] if arrays else 0
    result = np.empty((n_rows, len(arrays)), dtype=empty.dtype)
    for j, array in enumerate(arrays):
        result[:, j] = array
    return result


def check_column_names(found, expected, where, mechanism):
    """A ValueError naming ``where`` unless the columns are exactly ``expected``."""
    missing = [name for name in expected if name not in found]
    extra = [name for name in found if name not in expected]
    if missing or extra:
        raise ValueError(
            f"{where}: the reports of {mechanism!r} have the columns {expected}; "
            + (f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {extra}" if extra else "")
            + " (another mechanism's reports, or not a report file)."
        )


def frame_to_reports(frame, mechanism, where="DataFrame", first_row=0):
    """The report array of a DataFrame with the file schema, checked against ``mechanism``.

    Wrong or missing columns, values that are not integers of the report type, and reports the
    mechanism refuses raise a ValueError naming ``where``, the row (counted from 1, plus
    ``first_row``) and the column. Used for every chunk of a file and every partition of a
    Dask or Spark DataFrame.

    Parameters
    ----------
    frame : pandas.DataFrame
        Exactly the columns :func:`report_columns` of ``mechanism`` (in any order).
    mechanism : Mechanism
        The mechanism the reports must come from.
    where : str, default="DataFrame"
        What the frame is (a file name, a partition), for the error messages.
    first_row : int, default=0
        The number of rows before this frame in its source, for the error messages.

    Returns
    -------
    ndarray
        The reports as ``mechanism.randomize`` returns them: shape ``(n_rows,)`` or
        ``(n_rows, w)``, of the mechanism's report dtype.

    Raises
    ------
    ValueError
        For wrong columns, values that are not reports of the mechanism.

    See Also
    --------
    reports_from_frame : The same, wrapped as LDPReports.
    sklearn_ldp.deploy.distributed.partition_statistic : Aggregates one partition.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> frame_to_reports(pd.DataFrame({"report": [0, 2, 1]}), RandomizedResponse(3, 1.0))
    array([0, 2, 1], dtype=uint8)
    """
    empty = empty_reports(mechanism)
    expected = report_columns(mechanism)
    check_column_names(list(frame.columns), expected, where, mechanism)
    array = _columns_to_array({name: frame[name].to_numpy() for name in expected}, empty,
                              where, first_row)
    return _checked(mechanism, array, where, first_row)


def _locate(mechanism, array, where, first_row, error):
    """Re-raise ``error`` naming the first report that ``mechanism`` refuses (by bisection)."""
    passes, fails = 0, array.shape[0]  # check_reports(array[:passes]) passes; [:fails] fails
    while fails - passes > 1:
        middle = (passes + fails) // 2
        try:
            mechanism.check_reports(array[:middle])
            passes = middle
        except ValueError:
            fails = middle
    try:
        mechanism.check_reports(array[fails - 1:fails])
    except ValueError as single:
        error = single
    raise ValueError(f"{where}, row {first_row + fails}: {error}") from None


def _checked(mechanism, array, where, first_row):
    try:
        return mechanism.check_reports(array)
    except ValueError as exc:
        _locate(mechanism, array, where, first_row, exc)


def _aggregate_checked(mechanism, array, where, first_row):
    """``mechanism.aggregate(array)`` (which validates), naming the bad row on failure."""
    try:
        return mechanism.aggregate(array)
    except ValueError as exc:
        _locate(mechanism, array, where, first_row, exc)


# ---------------------------------------------------------------------- writing
def _format_of(path, format=None):
    if format is not None:
        if format not in ("csv", "parquet"):
            raise ValueError(f"format must be 'csv' or 'parquet', got {format!r}.")
        return format
    name = os.fspath(path).lower()
    for suffix, kind in SUFFIXES.items():
        if name.endswith(suffix):
            return kind
    raise ValueError(f"{os.fspath(path)}: unknown report file type; names end in "
                     f"{sorted(SUFFIXES)} (or pass format='csv' or 'parquet').")


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


def _parquet_checksum(region_digest, spec, n_rows):
    """The checksum of a Parquet report file: its bytes before the footer, spec, rows."""
    digest = region_digest.copy()
    digest.update(b"\0" + (spec or "").encode() + b"\0" + str(n_rows).encode())
    return digest.hexdigest()


def _parquet_footer_start(handle, where):
    """Offset of the footer of the Parquet file ``handle`` (from its last 8 bytes)."""
    size = os.fstat(handle.fileno()).st_size
    if size < 12:
        raise checksum_mismatch(where, "too short for a Parquet file")
    handle.seek(size - 8)
    tail = handle.read(8)
    start = size - 8 - int.from_bytes(tail[:4], "little")
    if tail[4:] != b"PAR1" or start < 4:
        raise checksum_mismatch(where, "no Parquet footer")
    return start


class ReportWriter:
    """Append chunks of reports to one CSV or Parquet file (a context manager), atomically.

    The file gets the column schema of the module docstring, the mechanism's JSON
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
    >>> import os, tempfile
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
        self.format = _format_of(path, format)
        self.n_reports = 0
        self._columns = report_columns(mechanism)
        self._closed = False
        self._file = self._raw = None
        pa = _import_pyarrow() if self.format == "parquet" else None  # before any file exists
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
            pa = _import_pyarrow()
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
                    CHECKSUM_KEY: _parquet_checksum(self._sink.digest, self._spec,
                                                    self.n_reports)})
                self._file.close()
                self._raw.flush()
                with open(self._temporary, "rb") as written:
                    if _parquet_footer_start(written, self._temporary) != region:
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
    """Write LDPReports to one CSV or Parquet file (see the module docstring for the columns).

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
    >>> import os, tempfile
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
    chunk_size = _check_chunk_size(chunk_size)
    with ReportWriter(path, reports.mechanism, format) as writer:
        for start in range(0, max(len(reports), 1), chunk_size):
            writer.write(reports.reports[start:start + chunk_size])


def _check_chunk_size(chunk_size):
    """``chunk_size`` as an int >= 1, or a ValueError naming it (a negative size would write
    no reports, and pandas would name it "chunksize")."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) \
            or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}.")
    return int(chunk_size)


# ---------------------------------------------------------------------- reading
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
        self.format = _format_of(path)
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
        pa = _import_pyarrow()
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
            pa = _import_pyarrow()
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
                yield _columns_to_array(columns, empty, self.path, first_row), first_row
                first_row += len(frame)
                _check_rows(first_row, self.path)
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.path}: cannot parse the CSV after row {first_row} "
                             f"({exc}).") from None
        finally:
            reader.close()

    def _verify_parquet(self, handle):
        """Hash the bytes before the footer (block by block), with the spec and the rows."""
        start = _parquet_footer_start(handle, self.path)
        handle.seek(0)
        digest, done = hashlib.sha256(), 0
        while done < start:
            block = handle.read(min(READ_BLOCK, start - done))
            if not block:
                raise checksum_mismatch(self.path, "the file was cut short")
            digest.update(block)
            done += len(block)
        if _parquet_checksum(digest, self.spec, self.n_rows) != self.checksum:
            raise checksum_mismatch(self.path)
        handle.seek(0)

    def _parquet_chunks(self, mechanism, chunk_size):
        pa = _import_pyarrow()
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
                            row = _first_bad(np.asarray(column.is_null()))
                            raise ValueError(f"{self.path}, row {first_row + row + 1}, column "
                                             f"{name!r}: missing value.")
                        columns[name] = column.to_numpy(zero_copy_only=False)
                    yield _columns_to_array(columns, empty, self.path, first_row), first_row
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
        _format_of(path)  # an unknown file type is an error, never silently skipped
    return paths


def _open_files(source, mechanism, allow_unverified):
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


def iter_report_chunks(source, mechanism=None, chunk_size=CHUNK_SIZE, *,
                       allow_unverified=False):
    """Yield the reports of the files at ``source`` as arrays of at most ``chunk_size`` rows.

    Each chunk is checked like :func:`frame_to_reports` (errors name the file, row and
    column). ``source`` and ``mechanism`` as in :func:`aggregate_files`. Each file with a
    checksum is verified completely before its first chunk is yielded (see the module
    docstring).

    Parameters
    ----------
    source : str, path-like or list of them
        A file, a directory, a glob pattern or a list of files, as in
        :func:`aggregate_files`.
    mechanism : Mechanism, optional
        The mechanism the clients ran. Default: the one in the files' specification. Every
        file that carries a specification must match it.
    chunk_size : int, default=2**20
        Most reports per chunk (a chunk never spans two files); an integer >= 1.
    allow_unverified : bool, default=False
        Read files without a checksum (version 1, or without a spec: from another system)
        with an :class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` each, instead of
        refusing them. Only for files whose origin you trust: their content cannot be
        verified.

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
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> path = os.path.join(tempfile.mkdtemp(), "reports.csv")
    >>> write_reports(LDPReports(np.arange(5) % 3, RandomizedResponse(3, 1.0)), path)
    >>> [chunk.tolist() for chunk in iter_report_chunks(path, chunk_size=2)]
    [[0, 1], [2, 0], [1]]
    """
    # Checked at the call, not at the first next(): the error points at the caller's line.
    return _report_chunks(source, mechanism, _check_chunk_size(chunk_size), allow_unverified)


def _report_chunks(source, mechanism, chunk_size, allow_unverified):
    """The generator behind :func:`iter_report_chunks` (``chunk_size`` already checked)."""
    files, mechanism = _open_files(source, mechanism, allow_unverified)
    for file in files:
        for array, first_row in file.chunks(mechanism, chunk_size):
            yield _checked(mechanism, array, file.path, first_row)


def read_reports(source, mechanism=None, domain=None, workload=None, *,
                 allow_unverified=False):
    """All reports of the files at ``source`` in memory, as LDPReports (for small files).

    Use :func:`aggregate_files` for large ones: it never holds more than one chunk.

    Parameters
    ----------
    source : str, path-like or list of them
        A file, a directory, a glob pattern or a list of files, as in
        :func:`aggregate_files`.
    mechanism : Mechanism, optional
        The mechanism the clients ran. Default: the one in the files' specification. Every
        file that carries a specification must match it.
    domain : Domain, optional
        Attached to the result (for labelled answers).
    workload : Workload, optional
        Attached to the result.
    allow_unverified : bool, default=False
        Read files without a checksum (version 1, or without a spec: from another system)
        with an :class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` each, instead of
        refusing them. Only for files whose origin you trust: their content cannot be
        verified.

    Returns
    -------
    LDPReports
        The reports of every file, in order.

    Raises
    ------
    ValueError
        As :func:`aggregate_files`, naming the file, row and column.

    Warns
    -----
    UnverifiedFileWarning
        With ``allow_unverified=True``, for each file without a checksum.

    See Also
    --------
    write_reports : Write reports to a file.
    aggregate_files : Aggregate large files in bounded memory.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> path = os.path.join(tempfile.mkdtemp(), "reports.parquet")
    >>> write_reports(LDPReports(np.array([2, 0, 1]), RandomizedResponse(3, 1.0)), path)
    >>> reports = read_reports(path)
    >>> reports.reports.tolist(), reports.mechanism
    ([2, 0, 1], RandomizedResponse(n_inputs=3, epsilon=1.0))
    """
    files, mechanism = _open_files(source, mechanism, allow_unverified)
    parts = [_checked(mechanism, array, file.path, first_row)
             for file in files for array, first_row in file.chunks(mechanism, CHUNK_SIZE)]
    reports = np.concatenate(parts) if parts else empty_reports(mechanism)
    return LDPReports(reports, mechanism, domain, workload)


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

    Warns
    -----
    UnverifiedFileWarning
        With ``allow_unverified=True``, for each file without a checksum.

    See Also
    --------
    write_reports : Write the report files.
    iter_report_chunks : The checked chunks themselves.
    sklearn_ldp.AggregatedReports.merge : Merge aggregates of disjoint shards.
    sklearn_ldp.deploy.distributed.aggregate_dask : The same on a Dask cluster.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> folder = tempfile.mkdtemp()
    >>> for shard, values in enumerate([[0, 2], [1, 1, 2]]):
    ...     reports = LDPReports(np.array(values), mechanism)
    ...     write_reports(reports, os.path.join(folder, f"part-{shard}.csv"))
    >>> aggregate_files(folder, chunk_size=2).statistic.tolist()
    [1, 2, 2, 5]
    """
    chunk_size = _check_chunk_size(chunk_size)
    files, mechanism = _open_files(source, mechanism, allow_unverified)
    total = mechanism.aggregate(empty_reports(mechanism)).copy()
    bar = _Progress(files, progress)
    for file in files:
        for array, first_row in file.chunks(mechanism, chunk_size):
            add_counts(total, _aggregate_checked(mechanism, array, file.path, first_row),
                       mechanism)
            bar.update(file, array.shape[0], first_row + array.shape[0])
        bar.file_done()
    return AggregatedReports(total, mechanism, domain, workload)
