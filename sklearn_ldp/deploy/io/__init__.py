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

Modules
-------
:mod:`~sklearn_ldp.deploy.io.frames` (the column schema and report DataFrames),
:mod:`~sklearn_ldp.deploy.io.writers`, :mod:`~sklearn_ldp.deploy.io.readers`,
:mod:`~sklearn_ldp.deploy.io.aggregate` (bounded-memory aggregation of files) and
:mod:`~sklearn_ldp.deploy.io.formats` (the layout the writers and readers share). This
package's names are their public API.
"""

from .aggregate import aggregate_files
from .frames import frame_to_reports, report_columns, reports_frame, reports_from_frame
from .readers import iter_report_chunks, read_reports
from .writers import ReportWriter, write_reports

__all__ = ["ReportWriter", "aggregate_files", "frame_to_reports", "iter_report_chunks",
           "read_reports", "report_columns", "reports_frame", "reports_from_frame",
           "write_reports"]
