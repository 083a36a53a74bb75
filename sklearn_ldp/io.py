"""Reports in files: write them to CSV or Parquet, aggregate many files in bounded memory.

Column schema
-------------
One row per report, in every format (CSV, Parquet, and the partitions of a Dask or Spark
DataFrame, see :mod:`sklearn_ldp.distributed`); :func:`report_columns` gives the names:

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

Parquet needs the optional dependency pyarrow (``pip install sklearn_ldp[distributed]``).
"""

import glob
import gzip
import os
import sys
import time

import numpy as np
import pandas as pd

from .mechanisms import Mechanism, mechanism_from_json
from .reports import AggregatedReports, LDPReports, empty_reports

__all__ = ["ReportWriter", "aggregate_files", "frame_to_reports", "iter_report_chunks",
           "read_reports", "report_columns", "reports_frame", "write_reports"]

# Reports read (and written per Parquet row group) at once: ~1-8 MB per chunk for most
# mechanisms, so memory stays bounded whatever the size of the files.
CHUNK_SIZE = 2**20
SPEC_KEY = "sklearn_ldp.mechanism"
CSV_SPEC_PREFIX = "# sklearn_ldp mechanism: "
SUFFIXES = {".csv": "csv", ".csv.gz": "csv", ".parquet": "parquet", ".pq": "parquet"}


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

    Examples
    --------
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> report_columns(baseline_mechanism("randomized_response", (4,), 1.0))
    ['report']
    >>> report_columns(baseline_mechanism("olh", (4,), 1.0))
    ['report_0', 'report_1']
    """
    empty = empty_reports(mechanism)
    if empty.ndim == 1:
        return ["report"]
    return [f"report_{j}" for j in range(empty.shape[1])]


def reports_frame(reports):
    """LDPReports as a pandas DataFrame with the file schema (e.g. for ``dd.from_pandas``).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> reports_frame(LDPReports(np.array([0, 2]), RandomizedResponse(3, 1.0)))
       report
    0       0
    1       2
    """
    array = np.asarray(reports.reports)
    columns = report_columns(reports.mechanism)
    if array.ndim == 1:
        return pd.DataFrame({columns[0]: array})
    return pd.DataFrame({name: array[:, j] for j, name in enumerate(columns)})


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


class ReportWriter:
    """Append chunks of reports to one CSV or Parquet file (a context manager).

    The file gets the column schema of the module docstring and the mechanism's JSON
    specification. If an exception leaves the ``with`` block, the incomplete file is
    deleted.

    Parameters
    ----------
    path : str or path-like
        ``.csv``, ``.csv.gz``, ``.parquet`` or ``.pq`` (or give ``format``).
    mechanism : Mechanism
        The mechanism whose reports are written; every chunk is checked against it.
    format : {"csv", "parquet"}, optional
        Default: from the file name.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> path = os.path.join(tempfile.mkdtemp(), "part-0.csv")
    >>> with ReportWriter(path, mechanism) as writer:
    ...     writer.write(np.array([0, 2, 1]))
    ...     writer.write(np.array([1]))
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
        if self.format == "parquet":
            pa = _import_pyarrow()
            empty = empty_reports(mechanism)
            fields = [pa.field(name, pa.from_numpy_dtype(empty.dtype)) for name in self._columns]
            self._schema = pa.schema(fields, metadata={SPEC_KEY: mechanism.to_json()})
            self._file = pa.parquet.ParquetWriter(self.path, self._schema)
        else:
            opener = gzip.open if self.path.lower().endswith(".gz") else open
            self._file = opener(self.path, "wt", newline="")
            self._file.write(CSV_SPEC_PREFIX + mechanism.to_json() + "\n")
            self._file.write(",".join(self._columns) + "\n")

    def write(self, reports):
        """Append reports (LDPReports of this mechanism, or a report array)."""
        if isinstance(reports, LDPReports):
            if reports.mechanism != self.mechanism:
                raise ValueError(f"these reports come from {reports.mechanism!r}, but the file "
                                 f"holds reports of {self.mechanism!r}.")
            reports = reports.reports
        frame = reports_frame(LDPReports(reports, self.mechanism))
        if self.format == "parquet":
            pa = _import_pyarrow()
            table = pa.Table.from_arrays([pa.array(frame[name].to_numpy()) for name in
                                          self._columns], schema=self._schema)
            self._file.write_table(table, row_group_size=CHUNK_SIZE)
        else:
            frame.to_csv(self._file, header=False, index=False, lineterminator="\n")
        self.n_reports += len(frame)

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, traceback):
        self.close()
        if exc_type is not None and os.path.exists(self.path):
            os.remove(self.path)  # never leave a truncated file that looks complete
        return False


def write_reports(reports, path, format=None, chunk_size=CHUNK_SIZE):
    """Write LDPReports to one CSV or Parquet file (see the module docstring for the columns).

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
    with ReportWriter(path, reports.mechanism, format) as writer:
        for start in range(0, max(len(reports), 1), chunk_size):
            writer.write(reports.reports[start:start + chunk_size])


# ---------------------------------------------------------------------- reading
class _ReportFile:
    """One file's header: format, mechanism spec (or None), columns, rows (None if unknown)."""

    def __init__(self, path):
        self.path = path
        self.format = _format_of(path)
        self.spec = None
        self.n_rows = None
        self.skip_lines = 0
        try:
            if self.format == "parquet":
                self._read_parquet_header()
            else:
                self._read_csv_header()
        except (OSError, ValueError, UnicodeDecodeError) as exc:
            if str(exc).startswith(path):
                raise
            raise ValueError(f"{path}: cannot read the file ({exc}).") from None

    def _read_parquet_header(self):
        pa = _import_pyarrow()
        try:
            parquet = pa.parquet.ParquetFile(self.path)
        except pa.ArrowException as exc:
            raise ValueError(f"{self.path}: not a readable Parquet file ({exc}).") from None
        schema = parquet.schema_arrow
        self.columns = list(schema.names)
        self.types = {field.name: field.type for field in schema}
        metadata = schema.metadata or {}
        if SPEC_KEY.encode() in metadata:
            self.spec = metadata[SPEC_KEY.encode()].decode()
        self.n_rows = parquet.metadata.num_rows

    def _read_csv_header(self):
        opener = gzip.open if self.path.lower().endswith(".gz") else open
        with opener(self.path, "rt") as file:
            first = file.readline()
        if first.startswith(CSV_SPEC_PREFIX):
            self.spec = first[len(CSV_SPEC_PREFIX):].strip()
            self.skip_lines = 1
        try:
            header = pd.read_csv(self.path, skiprows=self.skip_lines, nrows=0)
        except pd.errors.EmptyDataError:
            raise ValueError(f"{self.path}: empty file, no header line with the report "
                             "columns.") from None
        self.columns = list(header.columns)

    def mechanism(self):
        """The mechanism of the file's spec (None if it has none); ValueError if unreadable."""
        if self.spec is None:
            return None
        try:
            return mechanism_from_json(self.spec)
        except (ValueError, TypeError) as exc:  # json errors are ValueErrors
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
        """Yield ``(report array, rows before it)``: converted, not yet checked by the mechanism."""
        empty = empty_reports(mechanism)
        expected = report_columns(mechanism)
        first_row = 0
        if self.format == "parquet":
            pa = _import_pyarrow()
            parquet = pa.parquet.ParquetFile(self.path)
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
            except pa.ArrowException as exc:
                raise ValueError(f"{self.path}: cannot read row {first_row + 1} onwards "
                                 f"({exc}).") from None
            return
        # No usecols: with it pandas silently accepts rows with extra fields.
        reader = pd.read_csv(self.path, skiprows=self.skip_lines, chunksize=chunk_size)
        try:
            for frame in reader:
                columns = {name: frame[name].to_numpy() for name in expected}
                yield _columns_to_array(columns, empty, self.path, first_row), first_row
                first_row += len(frame)
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise ValueError(f"{self.path}: cannot parse the CSV after row {first_row} "
                             f"({exc}).") from None
        finally:
            reader.close()


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


def _open_files(source, mechanism):
    """Headers of every file, checked against one mechanism, before any data is read."""
    files = [_ReportFile(path) for path in _resolve_paths(source)]
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


def iter_report_chunks(source, mechanism=None, chunk_size=CHUNK_SIZE):
    """Yield the reports of the files at ``source`` as arrays of at most ``chunk_size`` rows.

    Each chunk is checked like :func:`frame_to_reports` (errors name the file, row and
    column). ``source`` and ``mechanism`` as in :func:`aggregate_files`.

    Examples
    --------
    >>> import os, tempfile
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> path = os.path.join(tempfile.mkdtemp(), "reports.csv")
    >>> write_reports(LDPReports(np.arange(5) % 3, RandomizedResponse(3, 1.0)), path)
    >>> [chunk.tolist() for chunk in iter_report_chunks(path, chunk_size=2)]
    [[0, 1], [2, 0], [1]]
    """
    files, mechanism = _open_files(source, mechanism)
    for file in files:
        for array, first_row in file.chunks(mechanism, chunk_size):
            yield _checked(mechanism, array, file.path, first_row)


def read_reports(source, mechanism=None, domain=None, workload=None):
    """All reports of the files at ``source`` in memory, as LDPReports (for small files).

    Use :func:`aggregate_files` for large ones: it never holds more than one chunk. See
    :func:`write_reports` for an example.
    """
    files, mechanism = _open_files(source, mechanism)
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
                    progress=False):
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

    Returns
    -------
    AggregatedReports

    Raises
    ------
    ValueError
        Naming the file (and row and column) for: no files, an unknown file type, a
        specification of an unknown version or mechanism or of another mechanism, missing or
        extra columns, values that are not integers of the report type, reports the mechanism
        refuses. Every header is checked before any data is read; on any error nothing is
        returned.

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
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) \
            or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}.")
    files, mechanism = _open_files(source, mechanism)
    total = mechanism.aggregate(empty_reports(mechanism)).copy()
    bar = _Progress(files, progress)
    for file in files:
        for array, first_row in file.chunks(mechanism, int(chunk_size)):
            total += _aggregate_checked(mechanism, array, file.path, first_row)
            bar.update(file, array.shape[0], first_row + array.shape[0])
        bar.file_done()
    return AggregatedReports(total, mechanism, domain, workload)
