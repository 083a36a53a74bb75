"""The layout shared by the writers and the readers of report files (CSV and Parquet).

File names, the header lines and metadata keys of report file version 2, the Parquet
checksum, and the checks of arguments common to writing and reading; the layout itself is
described in :mod:`sklearn_ldp.deploy.io`.
"""

import os

import numpy as np

from ..limits import (
    checksum_mismatch,
)

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


def import_pyarrow():
    """pyarrow (with its parquet module), or an ImportError saying how to install it."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError("reading or writing Parquet needs pyarrow: pip install pyarrow (or "
                          "sklearn_ldp[distributed]).") from None
    return pyarrow


def file_format(path, format=None):
    """``"csv"`` or ``"parquet"``: ``format`` checked, else from the suffix of ``path``."""
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


def parquet_checksum(region_digest, spec, n_rows):
    """The checksum of a Parquet report file: its bytes before the footer, spec, rows."""
    digest = region_digest.copy()
    digest.update(b"\0" + (spec or "").encode() + b"\0" + str(n_rows).encode())
    return digest.hexdigest()


def parquet_footer_start(handle, where):
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


def check_chunk_size(chunk_size):
    """``chunk_size`` as an int >= 1, or a ValueError naming it (a negative size would write
    no reports, and pandas would name it "chunksize")."""
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int | np.integer) \
            or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}.")
    return int(chunk_size)
