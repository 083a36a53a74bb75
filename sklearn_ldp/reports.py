"""LDPReports: what the server receives, together with the mechanism that produced it.

Both containers save to and load from a ``.npz`` file (:meth:`LDPReports.save`,
:meth:`AggregatedReports.save`) that holds the array, the mechanism's JSON specification, the
domain's categories and the workload (when present), so that another process, machine or
release of the package decodes them exactly. Aggregates merge exactly
(:meth:`AggregatedReports.merge`, ``a + b``): the statistics are additive integer counts,
summed with overflow checks.

File integrity
--------------
Files of version 3 (written by this version) hold a member ``sha256``: the SHA-256 of every
other member (name, dtype, shape and bytes, in name order). :meth:`LDPReports.load` and
:meth:`AggregatedReports.load` recompute it and refuse a mismatch ("checksum mismatch: the
file was modified or truncated"), as they refuse a zip member whose CRC-32 fails. Files of
versions 1 and 2 (no checksum) are refused with a ValueError naming the file, since nothing
can tell them from a damaged file or a current file stripped of its checksum, unless the
caller passes ``allow_unverified=True`` to ``load`` (they then load with an
:class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning`; save them again to add the
checksum). The checksum detects accidental damage and truncation, not forgery: anyone who can
write the file can recompute it (authenticate files by other means, e.g. a signature, when
their writer is not trusted).

Saving is atomic and has one writer at a time: ``save`` holds an OS lock on the hidden file
``.<name>.lock`` next to the target (a second writer, a save or a
:class:`~sklearn_ldp.deploy.io.ReportWriter` of the same path, is refused with
:class:`~sklearn_ldp.deploy.limits.FileLockedError`), writes a hidden temporary file in the same
directory, flushes it to disk and renames it onto the target: a save killed at any point
leaves the previous file loadable.

Every size the file declares (members, arrays, the mechanism's ``n_inputs`` and matrices, the
domain, the workload) is checked against the caps of :mod:`sklearn_ldp.deploy.limits` before it is
allocated, and every problem is a ValueError naming the file and the field.

Records of several columns
--------------------------
:class:`ColumnsMechanism` carries the reports of records of several columns (numeric columns
with public bounds, several categorical columns, or both: ``LDPEncoder(bounds=...)``,
``strategy="spl"``/``"smp"``/``"rsfd"``): one row of report columns per user, the parts'
statistics side by side. Files and frames hold them like any other reports;
:func:`load_mechanism` rebuilds their specification.

Aggregates that cannot lie
--------------------------
:class:`AggregatedReports` validates its statistic when it is built, loaded and merged
(:func:`check_statistic`): integer counts for every mechanism except the Gaussian ones
(floats, bools and objects refused), never negative, at most ``2**62`` reports, and totals
consistent with each other where the mechanism records both (support counts at most the
number of reports, randomized-response counts summing to it, ...).
"""

import codecs
import hashlib
import json
import math
import os
import warnings
import zipfile
import zlib
from fractions import Fraction

import numpy as np
import pandas as pd

from .deploy.limits import (
    MAX_REPORTS,
    UnverifiedFileWarning,
    atomic_write,
    check_size,
    checksum_mismatch,
    writer_lock,
)
from .domain import Domain
from .mechanisms import Mechanism, RandomizedResponse, mechanism_from_dict
from .mechanisms._base.mechanism import ReportCheck
from .mechanisms.heavy_hitters.prefix import PrefixHeavyHitters
from .mechanisms.heavy_hitters.sketches import SketchFrequencyOracle
from .mechanisms.heavy_hitters.values import MAX_BIT_LENGTH, decode_values, encode_values, n_words
from .mechanisms.multi_attribute.mechanisms import MAX_ATTRIBUTES, MultiAttributeMechanism
from .mechanisms.numeric.base import NUMERIC_MECHANISMS
from .mechanisms.numeric.means import MeanMechanism, SampledMeanMechanism
from .mechanisms.numeric.registry import numeric_mechanism_from_dict
from .mechanisms.numeric.square_wave import SquareWaveMechanism
from .mechanisms.oracles.subset_selection import SubsetSelection
from .mechanisms.oracles.support import SupportOracle
from .workloads import Workload, histogram, workload_from_spec

# Version of the layout of the files written by `save` (not of the mechanism specification).
# Version 3 added the member "sha256"; 2 stored the workload's structure; 1 its dense matrix.
FILE_VERSION = 3
READABLE_FILE_VERSIONS = (1, 2, 3)
UNVERIFIED_FILE_VERSIONS = (1, 2)
FILE_KINDS = ("LDPReports", "AggregatedReports")
CHECKSUM_MEMBER = "sha256"
# Members of a file: the array, the header, the checksum and a workload's few arrays.
MAX_MEMBERS = 256
# Nesting of a workload spec (stacks of Kronecker products ...): far below Python's recursion.
MAX_WORKLOAD_DEPTH = 32
# Largest float count of a Gaussian statistic that float64 holds exactly.
MAX_FLOAT_COUNT = 2**53
# Entries summed at once by `_exact_sum`: 2^24 halves of at most 2^31 each fit in int64.
_SUM_BLOCK = 2**24
_HALF_BITS = 31


def empty_reports(mechanism):
    """A zero-row array with the shape and dtype of ``mechanism``'s reports.

    Learned from one report of cell 0 (the layout is fixed by the mechanism), so readers of
    files and partitions know the expected columns and dtype before seeing any data.

    Examples
    --------
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> empty_reports(baseline_mechanism("olh", (5,), 1.0)).shape
    (0, 2)
    """
    if isinstance(mechanism, ColumnsMechanism | HeavyHitterMechanism):  # own row layouts
        return mechanism.empty_reports()
    probe = mechanism.randomize(np.zeros(1, dtype=np.int64), np.random.default_rng(0))
    return np.asarray(probe)[:0]


# ---------------------------------------------------------------------- files
def _category_to_json(value, column):
    """One category as a JSON value; tuples and intervals are tagged so they come back."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_category_to_json(v, column) for v in value]}
    if isinstance(value, pd.Interval):
        return {"interval": [_category_to_json(value.left, column),
                             _category_to_json(value.right, column), value.closed]}
    raise ValueError(
        f"cannot save the category {value!r} of column {column!r}: only str, int, float, bool, "
        "tuples of them and pandas.Interval are stored; save without the domain (domain=None) "
        "and pass it again after loading."
    )


def _category_from_json(value):
    if isinstance(value, dict) and "tuple" in value:
        return tuple(_category_from_json(v) for v in value["tuple"])
    if isinstance(value, dict) and "interval" in value:
        left, right, closed = value["interval"]
        return pd.Interval(_category_from_json(left), _category_from_json(right), closed=closed)
    return value


def _members_digest(arrays):
    """SHA-256 (hex) of the members ``arrays`` (name -> array), the checksum excepted.

    Each member contributes its name, dtype (with byte order), shape and C-order bytes, in
    name order, so the digest depends on the content only (not on the zip layout or the
    compression) and equals on every platform.
    """
    digest = hashlib.sha256()
    for name in sorted(arrays):
        if name == CHECKSUM_MEMBER:
            continue
        array = np.ascontiguousarray(arrays[name])
        digest.update(f"{name}\0{array.dtype.str}\0{array.shape}\0".encode())
        if array.dtype.itemsize:
            digest.update(array.reshape(-1).view(np.uint8))
    return digest.hexdigest()


def _save_npz(path, kind, array_name, array, mechanism, domain, workload, n_invalid=0):
    """Write ``array`` and everything needed to decode it (no pickled objects)."""
    categories = None
    if domain is not None:
        categories = {column: [_category_to_json(v, column) for v in values]
                      for column, values in domain.categories.items()}
    header = {"format": "sklearn_ldp", "kind": kind, "file_version": FILE_VERSION,
              "mechanism": mechanism.to_dict(), "categories": categories,
              "workload": None}
    if n_invalid:
        header["n_invalid"] = int(n_invalid)  # reports dropped at collection (LDPReports)
    arrays = {array_name: np.asarray(array)}
    if workload is not None:
        # The workload's structure, not its matrix (all ranges over 2^16 cells are 2^31 rows).
        header["workload"], workload_arrays = workload.to_spec()
        arrays.update({f"workload.{key}": value for key, value in workload_arrays.items()})
    arrays["header"] = np.array(json.dumps(header))
    arrays[CHECKSUM_MEMBER] = np.array(_members_digest(arrays))
    # One writer at a time (a second one is refused, not interleaved), and the previous file
    # stays whole until the new one is complete on disk: a kill mid-save loses nothing.
    with writer_lock(path, what=f"saved {kind}"), atomic_write(path) as file:
        np.savez_compressed(file, **arrays)  # to a file object: no ".npz" appended


def _array_header(member, version, key, name):
    """``(shape, dtype)`` from the ``.npy`` header of a member (nothing else read)."""
    if version == (1, 0):
        shape, _fortran, dtype = np.lib.format.read_array_header_1_0(member)
    elif version == (2, 0):
        shape, _fortran, dtype = np.lib.format.read_array_header_2_0(member)
    else:
        raise ValueError(f"{name}: the array {key!r} has the unsupported .npy version "
                         f"{version}.")
    return shape, dtype


def _read_members(name):
    """Every member of the ``.npz`` file ``name`` as ``{key: array}``, sizes checked first.

    The zip directory declares each member's uncompressed size and each ``.npy`` header its
    shape and dtype: both are compared with ``max_array_bytes`` before a byte of data is
    read, so a small compressed file cannot expand into an unbounded allocation. Object
    arrays (pickles) are refused. A member whose data fails its CRC-32 or does not inflate
    is a checksum mismatch.
    """
    try:
        archive = zipfile.ZipFile(name)
    except FileNotFoundError:
        raise ValueError(f"{name}: no such file.") from None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError) as exc:
        raise ValueError(f"{name}: not a file saved by sklearn_ldp (not a readable .npz "
                         f"archive: {exc}; the file may be truncated).") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise ValueError(f"{name}: {len(infos)} members, more than the {MAX_MEMBERS} of a "
                             "file saved by sklearn_ldp.")
        declared = 0
        layout = []
        for info in infos:
            if not info.filename.endswith(".npy"):
                raise ValueError(f"{name}: the member {info.filename!r} is not a .npy array.")
            key = info.filename[:-len(".npy")]
            declared += info.file_size
            check_size(max(declared, 1), "the uncompressed size of its arrays",
                       "max_array_bytes", name)
            layout.append((info, key))
        # Every member's CRC-32 first (streamed, within the sizes just checked): damage is
        # a checksum mismatch, not whatever error garbage would raise when parsed.
        try:
            damaged = archive.testzip()
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError,
                NotImplementedError) as exc:  # e.g. a damaged compression method
            raise checksum_mismatch(name, str(exc)) from None
        if damaged is not None:
            raise checksum_mismatch(name, f"bad CRC-32 of the member {damaged!r}")
        contents = {}
        for info, key in layout:
            try:
                with archive.open(info) as member:
                    version = np.lib.format.read_magic(member)
                    shape, dtype = _array_header(member, version, key, name)
                if dtype.hasobject:
                    raise ValueError(f"{name}: the array {key!r} holds Python objects "
                                     "(pickles are never loaded).")
                n_bytes = int(np.prod(shape, dtype=object)) * dtype.itemsize
                if n_bytes > info.file_size:
                    raise checksum_mismatch(name, f"the array {key!r} declares {n_bytes} "
                                                  f"bytes, its member holds {info.file_size}")
                with archive.open(info) as member:
                    contents[key] = np.lib.format.read_array(member, allow_pickle=False)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError) as exc:
                raise checksum_mismatch(name, f"member {key!r}: {exc}") from None
            except (OSError, ValueError, TypeError) as exc:
                if str(exc).startswith(name):
                    raise
                raise ValueError(f"{name}: the array {key!r} cannot be read ({exc}).") from None
    return contents


def _json_field(header, field, types, name):
    """``header[field]`` if it has one of ``types``, else a ValueError naming the field."""
    if field not in header:
        raise ValueError(f"{name}: the header has no field {field!r}.")
    value = header[field]
    if not isinstance(value, types):
        allowed = " or ".join("null" if t is type(None) else t.__name__ for t in types)
        raise ValueError(f"{name}: the header field {field!r} must be {allowed}, got "
                         f"{type(value).__name__}.")
    return value


def _read_header(contents, name):
    """The parsed JSON header of a file, with its format, version and size checked."""
    header = contents.get("header")
    if header is None or header.shape != () or header.dtype.kind != "U":
        raise ValueError(f"{name}: not a file saved by sklearn_ldp (no valid header).")
    check_size(max(header.dtype.itemsize // 4, 1), "the header length", "max_header_bytes", name)
    try:
        header = json.loads(str(header))
    except (ValueError, RecursionError):
        raise ValueError(f"{name}: not a file saved by sklearn_ldp (the header is not "
                         "valid JSON).") from None
    if not isinstance(header, dict) or header.get("format") != "sklearn_ldp":
        raise ValueError(f"{name}: not a file saved by sklearn_ldp (no valid header).")
    version = header.get("file_version")
    if isinstance(version, bool) or version not in READABLE_FILE_VERSIONS:
        raise ValueError(f"{name}: unsupported file version {version!r}; "
                         f"this sklearn_ldp reads versions {list(READABLE_FILE_VERSIONS)}.")
    return header


def _verify_members(contents, version, name, allow_unverified):
    """Check the ``sha256`` member (version 3); refuse an older file (no checksum) unless
    ``allow_unverified``, then read it with a warning.

    An old version cannot be told apart from a current file whose ``sha256`` member was
    dropped and its header's version edited: accepting it silently would let any edit pass.
    """
    if version in UNVERIFIED_FILE_VERSIONS:
        if not allow_unverified:
            raise ValueError(
                f"{name}: file version {version} carries no checksum (saved by an earlier "
                "sklearn_ldp, or a current file downgraded); refused, since nothing can tell "
                "it from a modified or truncated file. Pass allow_unverified=True to load it "
                "unverified, then save it again to add a checksum.")
        warnings.warn(f"{name} was saved by an earlier sklearn_ldp (file version {version}) "
                      "without a checksum: it is read unverified (allow_unverified=True). "
                      "Save it again to add one.", UnverifiedFileWarning, stacklevel=4)
        return
    stored = contents.get(CHECKSUM_MEMBER)
    if stored is None:
        raise checksum_mismatch(name, f"file version {version} without its {CHECKSUM_MEMBER!r} "
                                      "member")
    if stored.shape != () or stored.dtype.kind != "U" or str(stored) != _members_digest(contents):
        raise checksum_mismatch(name)


def _domain_from_header(categories, name):
    """The Domain of the header's categories, its number of cells checked first."""
    if categories is None:
        return None
    if not isinstance(categories, dict) or not categories:
        raise ValueError(f"{name}: the header field 'categories' must be a non-empty object "
                         "(column -> list of categories).")
    cells = 1
    for column, values in categories.items():
        if not isinstance(values, list):
            raise ValueError(f"{name}: the categories of column {column!r} must be a list, "
                             f"got {type(values).__name__}.")
        cells *= max(len(values), 1)
        check_size(cells, "the cells of the domain (product of category counts)",
                   "max_cells", name)
    try:
        return Domain({column: [_category_from_json(v) for v in values]
                       for column, values in categories.items()})
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        raise ValueError(f"{name}: invalid categories: {exc}") from None


def _workload_spec_cells(spec, name, depth=0):
    """Cells (columns) of a workload spec, each declared size checked against the caps.

    Walks the spec before ``workload_from_spec`` builds anything: ``n`` and sparse shapes
    at most ``max_cells`` (Kronecker products: the product of their factors' cells), at most
    :data:`MAX_WORKLOAD_DEPTH` levels of nesting.
    """
    if depth > MAX_WORKLOAD_DEPTH:
        raise ValueError(f"{name}: the workload spec nests more than {MAX_WORKLOAD_DEPTH} "
                         "levels.")
    if not isinstance(spec, dict):
        raise ValueError(f"{name}: a workload spec must be a JSON object, got "
                         f"{type(spec).__name__}.")
    kind = spec.get("kind")
    where = f"{name}: workload spec {kind!r}"
    if kind in ("kron", "stack"):
        key = "factors" if kind == "kron" else "blocks"
        children = spec.get(key)
        if not isinstance(children, list) or not children:
            raise ValueError(f"{where} needs a non-empty list {key!r}.")
        check_size(len(children), f"the number of {key}", "max_cells", where)
        cells = 1
        for child in children:
            child_cells = _workload_spec_cells(child, name, depth + 1)
            cells = cells * child_cells if kind == "kron" else child_cells
            check_size(cells, "the cells (n)", "max_cells", where)
        return cells
    if kind == "sparse":
        shape = spec.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2):
            raise ValueError(f"{where} needs a shape [p, n].")
        check_size(shape[0], "the rows (p)", "max_matrix_entries", where)
        return check_size(shape[1], "the cells (n)", "max_cells", where)
    if kind == "matrix":
        return 1  # the matrix is a member, already within max_array_bytes
    return check_size(spec.get("n"), "the cells (n)", "max_cells", where)


def _workload_from_header(header, contents, domain, name):
    """The workload of a file: the dense matrix (version 1) or the structure (2 and 3)."""
    try:
        if "workload_matrix" in contents:  # file version 1 stored the dense matrix
            labels = contents.get("workload_labels")
            title = header.get("workload_name", "custom")
            return Workload(contents["workload_matrix"], labels=labels, domain=domain,
                            name=title if isinstance(title, str) else "custom")
        spec = header.get("workload")
        if spec is None:
            return None
        _workload_spec_cells(spec, name)
        return workload_from_spec(
            spec, {key[len("workload."):]: value for key, value in contents.items()
                   if key.startswith("workload.")}, domain)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError,
            RecursionError) as exc:
        if str(exc).startswith(name):
            raise
        raise ValueError(f"{name}: cannot rebuild the workload: {exc}") from None


def _load_npz(path, kind, array_name, allow_unverified=False):
    """``(array, mechanism, domain, workload, n_invalid)`` from a file written by
    ``_save_npz``.

    Every failure is a ValueError naming the file (and the field or member).
    """
    name = os.fspath(path)
    if not isinstance(allow_unverified, bool):
        raise TypeError(f"allow_unverified must be True or False, got {allow_unverified!r}.")
    contents = _read_members(name)
    header = _read_header(contents, name)
    _verify_members(contents, header["file_version"], name, allow_unverified)
    found = header.get("kind")
    if found != kind:
        raise ValueError(f"{name} holds {found}, not {kind}; load it with {found}.load."
                         if found in FILE_KINDS else
                         f"{name}: unknown kind {found!r}, not {kind}.")
    spec = _json_field(header, "mechanism", (dict,), name)
    try:
        mechanism = load_mechanism(spec)
    except (ValueError, TypeError, KeyError, RecursionError) as exc:
        raise ValueError(f"{name}: cannot rebuild the mechanism: {exc}") from None
    domain = _domain_from_header(header.get("categories"), name)
    workload = _workload_from_header(header, contents, domain, name)
    if array_name not in contents:
        raise ValueError(f"{name}: the file has no array {array_name!r}.")
    n_invalid = header.get("n_invalid", 0)
    if isinstance(n_invalid, bool) or not isinstance(n_invalid, int) or not (
            0 <= n_invalid <= MAX_REPORTS):
        raise ValueError(f"{name}: the header's n_invalid must be an integer in [0, 2^62], "
                         f"got {n_invalid!r}.")
    return contents[array_name], mechanism, domain, workload, n_invalid


class LDPReports:
    """Privatized reports plus the mechanism (and domain) needed to decode them.

    Parameters
    ----------
    reports : array-like with one row per user
        The reports as the mechanism's ``randomize`` returns them: output indices (shape
        ``(n_users,)``), packed bit vectors (``(n_users, n_bytes)`` uint8) or
        ``(seed, value)`` pairs, depending on the mechanism.
    mechanism : Mechanism
        The mechanism the clients ran. Reports from real clients are wrapped with the
        mechanism rebuilt from its JSON: ``LDPReports(array, mechanism=mechanism_from_json(s))``.
    domain : Domain, optional
        The public domain the user types index into (for labelled answers).
    workload : Workload, optional
        The workload the strategy was built for; estimators use it when given none.
    n_invalid : int, default=0
        Reports dropped as invalid when these were collected
        (``reports_from_client(..., invalid="drop")``); estimators fitted on them add it to
        ``n_invalid_reports_``. Kept by :meth:`save`/:meth:`load` and summed by
        :meth:`concat`; a selection of rows (``reports[a:b]``) has 0, since the dropped
        reports belong to no row (fit the whole batch to count them once).

    See Also
    --------
    AggregatedReports : The sufficient statistic of many reports (mergeable).
    sklearn_ldp.LDPEncoder.transform : Privatizes a DataFrame into LDPReports.
    sklearn_ldp.reports_from_client : Wraps and validates the reports of real clients.
    sklearn_ldp.deploy.io.write_reports : Writes reports to Parquet or CSV files.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> mech = baseline_mechanism("randomized_response", (3,), 1.0)
    >>> reports = LDPReports(np.array([0, 2, 1, 1]), mech)
    >>> len(reports), len(reports[:2]), len(LDPReports.concat([reports, reports]))
    (4, 2, 8)
    """

    def __init__(self, reports, mechanism, domain=None, workload=None, n_invalid=0):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(
                f"mechanism must be a mechanism object (e.g. from mechanism_from_json), got "
                f"{type(mechanism).__name__}."
            )
        if isinstance(n_invalid, (bool, np.bool_)) or not isinstance(
                n_invalid, (int, np.integer)) or not 0 <= n_invalid <= MAX_REPORTS:
            raise ValueError(f"n_invalid must be an integer in [0, 2^62] (reports dropped "
                             f"at collection), got {n_invalid!r}.")
        self.reports = mechanism.check_reports(reports)
        self.mechanism = mechanism
        self.domain = domain
        self.workload = workload
        self.n_invalid = int(n_invalid)

    def __len__(self):
        return self.reports.shape[0]

    @property
    def shape(self):
        """The shape of the reports array: ``(n_users,)`` or ``(n_users, width)`` (tuple)."""
        return self.reports.shape

    def __getitem__(self, key):
        """Row selection (slice, integer array or boolean mask) keeps the mechanism."""
        if isinstance(key, (int, np.integer)):
            key = slice(key, key + 1 if key != -1 else None)
        return LDPReports(self.reports[key], self.mechanism, self.domain, self.workload)

    def __array__(self, dtype=None, copy=None):
        return self.reports if dtype is None else self.reports.astype(dtype)

    def aggregate(self):
        """The reports' sufficient statistic as :class:`AggregatedReports` (mergeable).

        Returns
        -------
        AggregatedReports
            ``mechanism.aggregate(reports)`` with the same mechanism, domain and workload
            (``n_invalid`` is not kept).

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> reports = LDPReports(np.array([0, 2, 1, 1]), RandomizedResponse(3, 1.0))
        >>> reports.aggregate().statistic.tolist()   # users per output, then their number
        [1, 2, 1, 4]
        """
        return AggregatedReports(self.mechanism.aggregate(self.reports), self.mechanism,
                                 self.domain, self.workload)

    def save(self, path):
        """Write the reports, the mechanism's JSON spec, the domain and the workload to ``path``.

        A compressed ``.npz`` file without pickled objects (safe to load from others);
        :meth:`load` rebuilds equal reports.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced atomically if it exists; no suffix is added).

        Raises
        ------
        sklearn_ldp.deploy.limits.FileLockedError
            If another writer (a save or a :class:`~sklearn_ldp.deploy.io.ReportWriter`, in this
            process or another) is writing ``path``; nothing is written.

        Notes
        -----
        The file is written to a hidden temporary file in the same directory, flushed to
        disk and renamed onto ``path`` (then the directory is flushed): a save that fails or
        is killed leaves the previous file at ``path`` loadable. The save holds the lock of
        ``path`` (:func:`sklearn_ldp.deploy.limits.writer_lock`) while it runs.

        Examples
        --------
        >>> import os, tempfile
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> reports = LDPReports(np.array([0, 2, 1, 1]), RandomizedResponse(3, 1.0))
        >>> path = os.path.join(tempfile.mkdtemp(), "reports.npz")
        >>> reports.save(path)
        >>> LDPReports.load(path).reports.tolist()
        [0, 2, 1, 1]
        """
        _save_npz(path, "LDPReports", "reports", self.reports, self.mechanism, self.domain,
                  self.workload, self.n_invalid)

    @classmethod
    def load(cls, path, *, allow_unverified=False):
        """Reports saved by :meth:`save`; a ValueError naming the file if they cannot be read.

        Refused: another kind of file, an unknown file or specification version or mechanism,
        a checksum mismatch (the file was modified or truncated), declared sizes over the
        caps of :mod:`sklearn_ldp.deploy.limits`, reports the mechanism refuses, and a file saved by
        an earlier version (file version 1 or 2: no checksum) unless ``allow_unverified``.

        Parameters
        ----------
        path : str or os.PathLike
            A file written by :meth:`save`.
        allow_unverified : bool, default=False
            Load a file without a checksum (file versions 1 and 2) with an
            :class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` instead of refusing it. Only
            for files whose origin you trust: their content cannot be verified.

        Returns
        -------
        LDPReports
            The reports with their mechanism, domain, workload and ``n_invalid``.

        Raises
        ------
        ValueError
            If the file cannot be read or verified (the message names the file).
        """
        reports, mechanism, domain, workload, n_invalid = _load_npz(
            path, "LDPReports", "reports", allow_unverified)
        try:
            return cls(reports, mechanism, domain, workload, n_invalid)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None

    @classmethod
    def concat(cls, parts):
        """Concatenate reports produced by the same mechanism (else a ValueError).

        Parameters
        ----------
        parts : iterable of LDPReports
            At least one; all from equal mechanisms.

        Returns
        -------
        LDPReports
            The rows of every part in order, with the first part's domain and workload and
            the sum of their ``n_invalid``.

        Raises
        ------
        ValueError
            If ``parts`` is empty or the mechanisms differ.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("concat needs at least one LDPReports.")
        first = parts[0]
        for part in parts[1:]:
            if part.mechanism != first.mechanism:
                raise ValueError(
                    "cannot concatenate reports from different mechanisms "
                    f"({first.mechanism!r} vs {part.mechanism!r})."
                )
        return cls(
            np.concatenate([part.reports for part in parts]),
            first.mechanism,
            first.domain,
            first.workload,
            sum(part.n_invalid for part in parts),
        )

    def __repr__(self):
        return f"LDPReports(n_users={len(self)}, mechanism={self.mechanism!r})"


class AggregatedReports:
    """The server's sufficient statistic of many reports, with the mechanism that made them.

    What :meth:`LDPEncoder.simulate <sklearn_ldp.encoder.LDPEncoder.simulate>` returns: the
    aggregate drawn directly from its exact distribution, statistically identical to
    ``mechanism.aggregate(encoder.transform(X).reports)`` but without one draw per user, so
    simulations with 10^8 or more users are cheap. Estimators fit on it like on
    :class:`LDPReports`. (It is also what a deployment would keep after aggregating the
    reports of one partition.)

    Parameters
    ----------
    statistic : ndarray
        The mechanism's additive statistic (see ``Mechanism.aggregate``). Validated by
        :func:`check_statistic`: a statistic that no set of reports can produce (negative or
        float counts, inconsistent totals, more than ``2**62`` reports) is a ValueError.
    mechanism : Mechanism
        The mechanism that produced the reports.
    domain : Domain, optional
        The public domain the user types index into (for labelled answers).
    workload : Workload, optional
        The workload the strategy was built for; estimators use it when given none.

    See Also
    --------
    LDPReports : The reports themselves.
    sklearn_ldp.LDPEncoder.simulate : Draws an aggregate without one report per user.
    sklearn_ldp.deploy.io.aggregate_files : Aggregates report files chunk by chunk.
    sklearn_ldp.deploy.distributed.aggregate_dask : Aggregates reports on a Dask cluster.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> statistic = mechanism.simulate_statistic(np.array([10**8, 0, 0]),
    ...                                          np.random.default_rng(0))
    >>> len(AggregatedReports(statistic, mechanism))
    100000000
    >>> AggregatedReports(np.array([1, -1, 0, 0]), mechanism)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the statistic of RandomizedResponse(...) holds a negative count (-1 at ...
    """

    def __init__(self, statistic, mechanism, domain=None, workload=None):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a mechanism object, got "
                             f"{type(mechanism).__name__}.")
        self.statistic = check_statistic(statistic, mechanism)
        self.mechanism = mechanism
        self.domain = domain
        self.workload = workload

    def __len__(self):
        return self.mechanism.n_reports(self.statistic)

    def __repr__(self):
        return f"{type(self).__name__}(n_users={len(self)}, mechanism={self.mechanism!r})"

    # ------------------------------------------------------------------ merging
    @classmethod
    def merge(cls, parts):
        """The aggregate of the union of disjoint shards: the sum of their statistics.

        Exact (integer counts; the Gaussian mechanisms' float sums up to rounding). All parts
        must come from the same mechanism and carry the same domain (or none), else a
        ValueError and nothing is merged. The domain and workload of the first part that has
        one are kept. Every part's statistic is validated again (:func:`check_statistic`),
        and a sum that would pass ``2**62`` reports is a ValueError, never an int64
        wraparound (:func:`sum_statistics`).

        Parameters
        ----------
        parts : iterable of AggregatedReports
            At least one aggregate, all of the same mechanism.

        Returns
        -------
        AggregatedReports
            The aggregate of all the parts' reports.

        Raises
        ------
        ValueError
            If ``parts`` is empty, holds something else, or mixes mechanisms or domains.

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> mechanism = RandomizedResponse(3, 1.0)
        >>> a = LDPReports(np.array([0, 2]), mechanism).aggregate()
        >>> b = LDPReports(np.array([1, 1]), mechanism).aggregate()
        >>> AggregatedReports.merge([a, b]).statistic.tolist(), len(a + b)
        ([1, 2, 1, 4], 4)
        """
        parts = list(parts)
        if not parts:
            raise ValueError("merge needs at least one AggregatedReports.")
        for position, part in enumerate(parts):
            if not isinstance(part, AggregatedReports):
                raise ValueError(f"merge combines AggregatedReports; part {position} is a "
                                 f"{type(part).__name__} (aggregate LDPReports with "
                                 ".aggregate() first).")
        first = parts[0]
        domain = next((part.domain for part in parts if part.domain is not None), None)
        workload = next((part.workload for part in parts if part.workload is not None), None)
        for position, part in enumerate(parts):
            if part.mechanism != first.mechanism:
                raise ValueError(
                    f"cannot merge aggregates of different mechanisms: part {position} comes "
                    f"from {part.mechanism!r}, part 0 from {first.mechanism!r}."
                )
            if part.domain is not None and part.domain != domain:
                raise ValueError(f"cannot merge aggregates over different domains: part "
                                 f"{position} has {part.domain!r}, another {domain!r}.")
        total = sum_statistics([part.statistic for part in parts], first.mechanism)
        return AggregatedReports(total, first.mechanism, domain, workload)

    def __add__(self, other):
        if not isinstance(other, AggregatedReports):
            return NotImplemented
        return AggregatedReports.merge([self, other])

    def __radd__(self, other):
        # sum(parts) starts from 0.
        if isinstance(other, int) and other == 0:
            return AggregatedReports.merge([self])
        return NotImplemented

    # ------------------------------------------------------------------ files
    def save(self, path):
        """Write the statistic, the mechanism's JSON spec, the domain and the workload.

        A compressed ``.npz`` file without pickled objects, with a SHA-256 checksum of its
        content; :meth:`load` reads it back.

        Parameters
        ----------
        path : str or os.PathLike
            The file to write (replaced atomically if it exists; no suffix is added).

        Raises
        ------
        sklearn_ldp.deploy.limits.FileLockedError
            If another writer is writing ``path`` (nothing is written); one writer at a
            time and atomic, as :meth:`LDPReports.save`.

        Examples
        --------
        >>> import os, tempfile
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> aggregate = LDPReports(np.array([0, 2, 1]), RandomizedResponse(3, 1.0)).aggregate()
        >>> path = os.path.join(tempfile.mkdtemp(), "aggregate.npz")
        >>> aggregate.save(path)
        >>> AggregatedReports.load(path).statistic.tolist()
        [1, 1, 1, 3]
        """
        _save_npz(path, "AggregatedReports", "statistic", self.statistic, self.mechanism,
                  self.domain, self.workload)

    @classmethod
    def load(cls, path, *, allow_unverified=False):
        """An aggregate saved by :meth:`save`; a ValueError naming the file if it cannot be read.

        Refused: another kind of file, an unknown file or specification version or mechanism,
        a checksum mismatch (the file was modified or truncated), declared sizes over the
        caps of :mod:`sklearn_ldp.deploy.limits`, a statistic that :func:`check_statistic` refuses
        (wrong shape or type, negative counts, inconsistent totals), and a file saved by an
        earlier version (file version 1 or 2: no checksum) unless ``allow_unverified``.

        Parameters
        ----------
        path : str or os.PathLike
            A file written by :meth:`save`.
        allow_unverified : bool, default=False
            Load a file without a checksum (file versions 1 and 2) with an
            :class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` instead of refusing it. Only
            for files whose origin you trust: their content cannot be verified.

        Returns
        -------
        AggregatedReports
            The statistic with its mechanism, domain and workload.

        Raises
        ------
        ValueError
            If the file cannot be read or verified (the message names the file).
        """
        statistic, mechanism, domain, workload, _ = _load_npz(
            path, "AggregatedReports", "statistic", allow_unverified)
        try:
            statistic = check_statistic(statistic, mechanism)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None
        return cls(statistic, mechanism, domain, workload)


# ---------------------------------------------------------------------- statistics
def _exact_sum(values):
    """The exact sum of non-negative int64 ``values`` as a Python int (never wraps).

    Each value is split into its high and low 31 bits; blocks of ``2**24`` halves sum in
    int64 without overflow, and the blocks add up as Python integers.
    """
    total = 0
    for start in range(0, values.shape[0], _SUM_BLOCK):
        block = values[start:start + _SUM_BLOCK]
        high = int(np.sum(block >> _HALF_BITS, dtype=np.int64))
        low = int(np.sum(block & ((1 << _HALF_BITS) - 1), dtype=np.int64))
        total += (high << _HALF_BITS) + low
    return total


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
    if per_report is not None and _exact_sum(support) != per_report * n_reports:
        raise ValueError(f"{where}: the counts sum to {_exact_sum(support)}, but {n_reports} "
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
                total += _exact_sum(statistic[rows])
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
        total = _exact_sum(per_set)
    elif mechanism.kind == "inp_em":
        # Every user is counted once in the table of every attribute set.
        offsets = np.asarray(mechanism.cell_offsets, dtype=np.int64)
        sums = [_exact_sum(statistic[offsets[i]:offsets[i + 1]])
                for i in range(offsets.shape[0] - 1)]
        if len(set(sums)) > 1:
            raise ValueError(f"{where}: the tables of the attribute sets count different "
                             f"numbers of users ({min(sums)} to {max(sums)}): every user is in "
                             "every table.")
        total = sums[0]
    else:
        total = _exact_sum(statistic)  # one count per report
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
    if isinstance(mechanism, ColumnsMechanism | HeavyHitterMechanism):  # own layouts
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


def statistic_of(reports):
    """The additive statistic of LDPReports (aggregated now) or AggregatedReports.

    A :class:`~sklearn_ldp.deploy.distributed.DaskReports` is an AggregatedReports whose statistic
    is computed on the Dask cluster the first time it is asked for, here.
    """
    if isinstance(reports, AggregatedReports):
        return reports.statistic
    return reports.mechanism.aggregate(reports.reports)


def check_same_mechanism(reports, mechanism):
    """Refuse reports that another mechanism (strategy, epsilon or domain) produced."""
    if reports.mechanism != mechanism:
        raise ValueError(
            "these reports come from a different mechanism than the ones already fitted "
            f"({reports.mechanism!r} vs {mechanism!r}); a different strategy, epsilon "
            "or domain cannot be mixed into one estimate."
        )


# ---------------------------------------------------------------------- several columns
# Records of several columns (numeric columns with public bounds, categorical columns) are
# privatized by one mechanism per *part* of the record, and every user's reports of all parts
# form one row. The class below is the glue that lets LDPReports, AggregatedReports, their
# files and the report frames of :mod:`sklearn_ldp.deploy.io` carry such rows: it is a Mechanism
# (so every container accepts it) whose math is entirely that of the mechanisms of
# :mod:`sklearn_ldp.mechanisms.numeric`,
# :mod:`~sklearn_ldp.mechanisms.multi_attribute.mechanisms` and
# the frequency oracles. It lives here, not in ``mechanisms/``, only because the containers
# must rebuild it from a file; its spec kind ``"columns"`` is dispatched by
# :func:`load_mechanism` rather than registered (the client randomizers do not know it).
COLUMNS_KIND = "columns"
COLUMNS_SPEC_VERSION = 1
# Most columns of one record (the multi-attribute mechanisms' own cap).
MAX_COLUMNS = MAX_ATTRIBUTES
ORACLE_KINDS = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
                "subset_selection")
SAMPLED_MEAN_KIND = "sampled_mean"
# Integers that float64 holds exactly: integer reports and counts stored in a float row.
_FLOAT_EXACT = 2**53


def _integer_entries(block, dtype):
    """``(block as dtype, rows_ok)``: ``rows_ok[i]`` when every entry of row ``i`` is an
    integer that ``dtype`` holds (entries that are not become 0 in the cast copy)."""
    block = np.asarray(block)
    info = np.iinfo(dtype)
    if block.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            ok = (np.isfinite(block) & (block == np.floor(block)) & (block >= info.min)
                  & (block <= info.max))
    elif block.dtype.kind in "iu":
        ok = np.ones(block.shape, dtype=bool)
        source = np.iinfo(block.dtype)
        if source.min < info.min:
            ok &= block >= info.min
        if source.max > info.max:
            ok &= block <= info.max
    else:
        ok = np.zeros(block.shape, dtype=bool)
    rows_ok = ok.all(axis=tuple(range(1, ok.ndim))) if ok.ndim > 1 else ok
    safe = np.where(ok, block, 0).astype(dtype) if not ok.all() else block.astype(dtype)
    return safe, rows_ok


class _Part:
    """One part of a record: its columns, its mechanism, the layout of its report columns.

    Subclasses set ``width`` (report columns), ``report_dtype`` (float64, or the unsigned
    type of the integer reports), ``statistic_size`` and ``float_statistic``, and implement
    the client side (``randomize``), the checks (``validity``, ``check_statistic``), the
    statistic (``aggregate``) and the spec.
    """

    kind = None

    def __init__(self, columns, mechanism):
        self.columns = tuple(columns)
        self.mechanism = mechanism

    @property
    def epsilon(self):
        """The record-level budget the part spends (standard LDP)."""
        return float(self.mechanism.epsilon)

    @property
    def float_reports(self):
        return np.dtype(self.report_dtype).kind == "f"

    @property
    def strategy(self):
        return self.kind

    def spec(self):
        return {"columns": list(self.columns), "spec": self.mechanism.to_dict()}

    def names(self):
        """Report column names (one per report column)."""
        if self.width == 1:
            return [f"report_{self.columns[0]}"]
        return [f"report_{self.columns[0]}_{j}" for j in range(self.width)]


class _MeanPart(_Part):
    """One bounded number, Duchi / Piecewise / Hybrid (one report value per user)."""

    kind = "mean"
    width = 1
    statistic_size = 3
    float_statistic = True

    @property
    def report_dtype(self):
        return np.dtype(np.uint8) if self.mechanism.kind == "duchi" else np.dtype(np.float64)

    @property
    def strategy(self):
        return self.mechanism.kind

    def randomize(self, records, rng):
        return self.mechanism.randomize(records[:, 0], rng)[:, None]

    def _native(self, block):
        column = block[:, 0]
        return column.astype(np.uint8) if self.mechanism.kind == "duchi" else \
            column.astype(np.float64)

    def validity(self, block):
        column = block[:, 0]
        if self.mechanism.kind == "duchi":
            return (column == 0) | (column == 1)
        if block.dtype.kind != "f":
            return np.zeros(block.shape[0], dtype=bool)
        return np.asarray(self.mechanism.report_validity(column.astype(np.float64)), dtype=bool)

    def aggregate(self, block):
        return self.mechanism.aggregate(self._native(block))

    def check_statistic(self, statistic):
        if not np.any(statistic):
            return 0  # the aggregate of no reports
        self.mechanism.check_statistic(statistic)
        return int(statistic[0])

    # decoding (value units)
    def means(self, statistic):
        """``(means, standard errors)`` of the part's columns from its statistic."""
        mean = self.mechanism.estimate_mean(statistic)
        return np.array([mean]), np.array([math.sqrt(
            self.mechanism.estimate_mean_variance(statistic))])

    def per_user_variance(self):
        """``(worst, average)`` variance of one user's report, per column (value units)."""
        variance = self.mechanism.unit_variance(np.array([0.0, 1.0])) \
            * self.mechanism.half_width ** 2
        # Every Var[y | t] here is a + b t^2 (plus the grid's rounding bump, which the
        # mechanism's worst case includes): its mean over t uniform in [-1, 1] is about
        # a + b / 3 = (2 f(0) + f(1)) / 3.
        return (np.array([self.mechanism.worst_case_variance()]),
                np.array([(2 * variance[0] + variance[1]) / 3]))

    def bounds(self):
        return [self.mechanism.bounds]


class _SampledMeanPart(_Part):
    """``d`` bounded numbers, each user reporting ``k`` of them (Wang et al. 2019).

    Report row: the ``k`` sampled attribute positions, then their ``k`` reports. Statistic:
    ``[N, sum y_1 .. sum y_d, sum y_1^2 .. sum y_d^2]`` (the mechanism's ``[N, sums]`` plus
    the sums of squares, for the estimated standard errors).
    """

    kind = SAMPLED_MEAN_KIND
    float_statistic = True

    def __init__(self, columns, mechanism):
        super().__init__(columns, mechanism)
        if len(self.columns) != mechanism.n_attributes:
            raise ValueError(f"a sampled-mean part over {mechanism.n_attributes} attributes "
                             f"needs as many columns, got {list(self.columns)!r}.")
        self.width = 2 * mechanism.n_sampled
        self.statistic_size = 1 + 2 * mechanism.n_attributes

    @property
    def report_dtype(self):
        if self.mechanism.base != "duchi":
            return np.dtype(np.float64)
        return np.result_type(np.min_scalar_type(self.mechanism.n_attributes - 1), np.uint8)

    @property
    def strategy(self):
        return self.mechanism.base

    def spec(self):
        return {"columns": list(self.columns), "spec": self.mechanism.to_dict()}

    def names(self):
        k = self.mechanism.n_sampled
        return ([f"report_sampled_attribute_{j}" for j in range(k)]
                + [f"report_sampled_value_{j}" for j in range(k)])

    def randomize(self, records, rng):
        attributes, values = self.mechanism.randomize(records, rng)
        return np.hstack([attributes.astype(self.report_dtype),
                          values.astype(self.report_dtype)])

    def validity(self, block):
        k, d = self.mechanism.n_sampled, self.mechanism.n_attributes
        attributes, ok = _integer_entries(block[:, :k], np.int64)
        ok &= ((attributes >= 0) & (attributes < d)).all(axis=1)
        if k > 1:  # sampled without replacement
            ok &= (np.diff(np.sort(attributes, axis=1), axis=1) != 0).all(axis=1)
        values = block[:, k:]
        randomizer = self.mechanism.randomizer
        if randomizer.kind == "duchi":
            ok &= ((values == 0) | (values == 1)).all(axis=1)
        elif block.dtype.kind != "f":
            ok[:] = False
        else:
            ok &= np.asarray(randomizer.report_validity(values.astype(np.float64).ravel()),
                             dtype=bool).reshape(values.shape).all(axis=1)
        return ok

    def aggregate(self, block):
        k, d = self.mechanism.n_sampled, self.mechanism.n_attributes
        attributes = block[:, :k].astype(np.int64).ravel()
        values = block[:, k:]
        randomizer = self.mechanism.randomizer
        native = values.astype(np.uint8 if randomizer.kind == "duchi" else np.float64).ravel()
        y = randomizer.report_values(native)
        sums = np.bincount(attributes, weights=y, minlength=d)
        squares = np.bincount(attributes, weights=np.square(y), minlength=d)
        return np.concatenate([[float(block.shape[0])], sums, squares])

    def check_statistic(self, statistic):
        d = self.mechanism.n_attributes
        n = statistic[0]
        if n == 0 and not np.any(statistic):
            return 0
        sums, squares = statistic[1:d + 1], statistic[d + 1:]
        magnitude = self.mechanism.randomizer.report_magnitude()
        slack = 1e-9 * max(n, 1.0) * magnitude ** 2
        if (n < 1 or n != math.floor(n) or n > _FLOAT_EXACT
                or np.any(np.abs(sums) > n * magnitude * (1 + 1e-12))
                or np.any(squares < -slack) or np.any(squares > n * magnitude ** 2 + slack)
                or np.any(sums ** 2 > n * squares + slack * n)):
            raise ValueError(f"the sampled-mean statistic {statistic.tolist()!r} cannot come "
                             f"from valid reports (|y| <= {magnitude:.6g} each).")
        return int(n)

    def means(self, statistic):
        mechanism = self.mechanism
        d = mechanism.n_attributes
        means = mechanism.estimate_means(statistic[:d + 1])
        n = statistic[0]
        half = np.array([(high - low) / 2 for low, high in mechanism.bounds])
        if n < 2:
            return means, np.full(d, np.inf)
        # Each user's contribution to attribute j's unit-scale estimate is z = (d / k) y when
        # j was sampled, else 0; the estimate is the mean of z over the N users, so its
        # variance is estimated without bias by the sample variance of z over N.
        ratio = d / mechanism.n_sampled
        total, squares = ratio * statistic[1:d + 1], ratio ** 2 * statistic[d + 1:]
        sample_variance = np.maximum(squares - total ** 2 / n, 0.0) / (n - 1)
        return means, np.sqrt(sample_variance / n) * half

    def per_user_variance(self):
        mechanism = self.mechanism
        half = np.array([(high - low) / 2 for low, high in mechanism.bounds])
        at_zero, at_one = mechanism.unit_variance(np.array([0.0, 1.0]))
        worst = max(at_zero, at_one) * half ** 2
        return worst, (2 * at_zero + at_one) / 3 * half ** 2

    def bounds(self):
        return list(self.mechanism.bounds)


class _SquareWavePart(_Part):
    """One bounded number for its distribution: Square Wave (one float per user)."""

    kind = "square_wave"
    width = 1
    report_dtype = np.dtype(np.float64)
    float_statistic = False

    @property
    def statistic_size(self):
        return self.mechanism.n_buckets

    def randomize(self, records, rng):
        return self.mechanism.randomize(records[:, 0], rng)[:, None]

    def validity(self, block):
        if block.dtype.kind != "f":
            return np.zeros(block.shape[0], dtype=bool)
        return np.asarray(self.mechanism.report_validity(block[:, 0].astype(np.float64)),
                          dtype=bool)

    def aggregate(self, block):
        return self.mechanism.aggregate(block[:, 0].astype(np.float64))

    def check_statistic(self, statistic):
        return _exact_sum(statistic)

    def bounds(self):
        return [self.mechanism.bounds]


def _native_dtype(oracle):
    """``(dtype, ndim)`` of a frequency oracle's reports."""
    probe = np.asarray(oracle.randomize(np.zeros(1, dtype=np.int64), np.random.default_rng(0)))
    return probe.dtype, probe.ndim


class _MultiAttributePart(_Part):
    """Several categorical columns by SPL, SMP or RS+FD (Arcolezi et al. 2021).

    Report row: SPL and RS+FD, every attribute's oracle report in column order (one index,
    or the packed bits); SMP, the chosen attribute then its report, padded with zeros to the
    widest attribute's report.
    """

    kind = "multi_attribute"
    float_statistic = False

    def __init__(self, columns, mechanism):
        super().__init__(columns, mechanism)
        if len(self.columns) != mechanism.n_attributes:
            raise ValueError(f"a multi-attribute part over {mechanism.n_attributes} attributes "
                             f"needs as many columns, got {list(self.columns)!r}.")
        layouts = [_native_dtype(oracle) for oracle in mechanism.oracles]
        self._dtypes = [dtype for dtype, _ in layouts]
        self._packed = [ndim == 2 for _, ndim in layouts]
        self._widths = [(size + 7) // 8 if packed else 1
                        for size, packed in zip(mechanism.shape, self._packed, strict=True)]
        self._smp = mechanism.protocol == "smp"
        self._attribute_dtype = np.min_scalar_type(mechanism.n_attributes - 1)
        dtypes = self._dtypes + ([self._attribute_dtype] if self._smp else [])
        self.report_dtype = np.result_type(*dtypes)
        self.width = 1 + max(self._widths) if self._smp else sum(self._widths)
        self._offsets = np.cumsum([0] + self._widths)
        self.statistic_size = sum(mechanism.shape) + mechanism.n_attributes

    @property
    def strategy(self):
        return self.mechanism.protocol

    def names(self):
        if self._smp:
            return ["report_attribute"] + [f"report_value_{j}" for j in range(self.width - 1)]
        names = []
        for column, width in zip(self.columns, self._widths, strict=True):
            names += [f"report_{column}"] if width == 1 else [f"report_{column}_{j}"
                                                             for j in range(width)]
        return names

    def randomize(self, records, rng):
        native = self.mechanism.randomize(records.astype(np.int64), rng)
        n = records.shape[0]
        block = np.zeros((n, self.width), dtype=self.report_dtype)
        if self._smp:
            attribute = native["attribute"]
            block[:, 0] = attribute
            for i, part in enumerate(native["reports"]):
                # Explicit widths: an attribute no user sampled has an empty part, whose
                # width -1 cannot infer.
                block[attribute == i, 1:1 + self._widths[i]] = part.reshape(part.shape[0],
                                                                            self._widths[i])
            return block
        for i, part in enumerate(native["reports"]):
            start = self._offsets[i]
            block[:, start:start + self._widths[i]] = part.reshape(n, self._widths[i])
        return block

    def _oracle_validity(self, i, sub):
        native, ok = _integer_entries(sub, self._dtypes[i])
        native = native if self._packed[i] else native[:, 0]
        return ok & np.asarray(self.mechanism.oracles[i].report_validity(native).valid,
                               dtype=bool)

    def validity(self, block):
        if not self._smp:
            ok = np.ones(block.shape[0], dtype=bool)
            for i, width in enumerate(self._widths):
                start = self._offsets[i]
                ok &= self._oracle_validity(i, block[:, start:start + width])
            return ok
        attribute, ok = _integer_entries(block[:, :1], np.int64)
        attribute = attribute[:, 0]
        ok &= (attribute >= 0) & (attribute < self.mechanism.n_attributes)
        rest = block[:, 1:]
        for i, width in enumerate(self._widths):
            rows = np.flatnonzero(ok & (attribute == i))
            if not rows.size:
                continue
            valid = self._oracle_validity(i, rest[rows, :width])
            valid &= (rest[rows, width:] == 0).all(axis=1)  # the padding
            ok[rows] = valid
        return ok

    def _native(self, block):
        reports = []
        if not self._smp:
            for i, width in enumerate(self._widths):
                start = self._offsets[i]
                sub = block[:, start:start + width].astype(self._dtypes[i])
                reports.append(sub if self._packed[i] else sub[:, 0])
            return {"attribute": None, "reports": reports}
        attribute = block[:, 0].astype(self._attribute_dtype)
        for i, width in enumerate(self._widths):
            sub = block[attribute == i, 1:1 + width].astype(self._dtypes[i])
            reports.append(sub if self._packed[i] else sub[:, 0])
        return {"attribute": attribute, "reports": reports}

    def aggregate(self, block):
        return self.mechanism.aggregate(self._native(block))

    def check_statistic(self, statistic):
        parts = self.mechanism._split(statistic)
        if self._smp:
            return sum(int(part[-1]) for part in parts)
        return int(parts[0][-1])

    def counts(self, statistic):
        """Unbiased user counts of every category, one array per column."""
        return self.mechanism.estimate(statistic)

    def count_variance(self, i, frequencies, n_users):
        """Variance of column ``i``'s count estimates at the given frequencies (the
        mechanism's formula: exact for SPL and RS+FD, SMP up to ``O(d / N)``)."""
        return self.mechanism.count_variance(i, frequencies, n_users)

    def per_user_variance(self):
        """Per column, ``(worst, average)`` variance of one category's count, per user: the
        worst over the category's frequency in ``[0, 1]``, and at uniform frequencies."""
        grid = np.linspace(0.0, 1.0, 1001)  # each variance is a quadratic in f
        return [(float(self.count_variance(i, grid, 1).max()),
                 float(self.count_variance(i, np.full(size, 1 / size), 1).mean()))
                for i, size in enumerate(self.mechanism.shape)]

    def sizes(self):
        return list(self.mechanism.shape)


class _OraclePart(_Part):
    """One categorical column through a frequency oracle of the package."""

    kind = "oracle"

    def __init__(self, columns, mechanism):
        super().__init__(columns, mechanism)
        if len(self.columns) != 1:
            raise ValueError(f"a frequency-oracle part reports one column, got "
                             f"{list(self.columns)!r}.")
        if mechanism.kind not in ORACLE_KINDS:
            raise ValueError(f"a categorical column is reported through a frequency oracle "
                             f"({', '.join(ORACLE_KINDS)}), not {mechanism.kind!r}.")
        empty = empty_reports(mechanism)
        self.report_dtype = empty.dtype
        self._ndim = empty.ndim
        self.width = 1 if empty.ndim == 1 else empty.shape[1]
        self.statistic_size = mechanism.aggregate(empty).shape[0]

    float_statistic = False

    @property
    def strategy(self):
        return self.mechanism.kind

    def randomize(self, records, rng):
        reports = np.asarray(self.mechanism.randomize(records[:, 0].astype(np.int64), rng))
        return reports.reshape(reports.shape[0], -1)

    def _native(self, block):
        native = block.astype(self.report_dtype)
        return native[:, 0] if self._ndim == 1 else native

    def validity(self, block):
        native, ok = _integer_entries(block, self.report_dtype)
        native = native[:, 0] if self._ndim == 1 else native
        return ok & np.asarray(self.mechanism.report_validity(native).valid, dtype=bool)

    def aggregate(self, block):
        return self.mechanism.aggregate(self._native(block))

    def check_statistic(self, statistic):
        return self.mechanism.n_reports(check_statistic(statistic, self.mechanism))

    def counts(self, statistic):
        return [self.mechanism.estimate(statistic)]

    def per_user_variance(self):
        worst, average = self.mechanism.query_variance_summary(histogram(
            self.mechanism.n_inputs))
        return [(float(np.max(worst)), float(np.mean(average)))]

    def sizes(self):
        return [self.mechanism.n_inputs]


def _sampled_mean_from_spec(spec):
    """A SampledMeanMechanism from the spec ``_SampledMeanPart.spec`` writes (its
    ``to_dict``), its number of attributes capped before anything is built."""
    bounds = spec.get("bounds")
    if not isinstance(bounds, list) or not 1 <= len(bounds) <= MAX_COLUMNS:
        raise ValueError(f"a sampled-mean specification has 'bounds': a list of 1 to "
                         f"{MAX_COLUMNS} pairs, got {str(bounds)[:80]!r}.")
    return SampledMeanMechanism.from_dict(spec)


def _declared_cells(entry):
    """The categories a part's spec declares (0 when it declares none or is malformed: the
    part's own loader then refuses it)."""
    spec = entry.get("spec") if isinstance(entry, dict) else None
    if not isinstance(spec, dict):
        return 0
    sizes = spec.get("shape") if spec.get("mechanism") == MultiAttributeMechanism.kind \
        else [spec.get("n_inputs")] if spec.get("mechanism") in ORACLE_KINDS else []
    if not isinstance(sizes, list):
        return 0
    return sum(size for size in sizes
               if isinstance(size, int) and not isinstance(size, bool) and size > 0)


def _part_from_spec(entry, position):
    """One part from its ``{"columns": [...], "spec": {...}}`` entry (ValueError if bad)."""
    where = f"part {position}"
    if not isinstance(entry, dict) or set(entry) != {"columns", "spec"}:
        raise ValueError(f"{where} must be an object with 'columns' and 'spec', got "
                         f"{str(entry)[:80]!r}.")
    columns, spec = entry["columns"], entry["spec"]
    if not isinstance(columns, list) or not columns or len(columns) > MAX_COLUMNS \
            or not all(isinstance(column, str) for column in columns):
        raise ValueError(f"{where}: 'columns' must be a list of 1 to {MAX_COLUMNS} column "
                         f"names (strings), got {str(columns)[:80]!r}.")
    if not isinstance(spec, dict) or not isinstance(spec.get("mechanism"), str):
        raise ValueError(f"{where}: 'spec' must be a mechanism specification, got "
                         f"{str(spec)[:80]!r}.")
    kind = spec["mechanism"]
    if kind in NUMERIC_MECHANISMS:
        if len(columns) != 1:
            raise ValueError(f"{where}: the {kind!r} mechanism reports one column, got "
                             f"{columns!r}.")
        mechanism = numeric_mechanism_from_dict(spec)
        return (_SquareWavePart if kind == "square_wave" else _MeanPart)(columns, mechanism)
    if kind == SAMPLED_MEAN_KIND:
        return _SampledMeanPart(columns, _sampled_mean_from_spec(spec))
    if kind == MultiAttributeMechanism.kind:
        shape = spec.get("shape")
        if not isinstance(shape, list) or not 1 <= len(shape) <= MAX_COLUMNS:
            raise ValueError(f"{where}: a multi-attribute 'shape' is a list of 1 to "
                             f"{MAX_COLUMNS} category counts, got {str(shape)[:80]!r}.")
        for size in shape:
            check_size(size, "a number of categories", "max_cells", where)
        return _MultiAttributePart(columns, MultiAttributeMechanism.from_dict(spec))
    if kind in ORACLE_KINDS:
        return _OraclePart(columns, mechanism_from_dict(spec))
    known = NUMERIC_MECHANISMS + (SAMPLED_MEAN_KIND, MultiAttributeMechanism.kind) + ORACLE_KINDS
    raise ValueError(f"{where}: unknown mechanism {kind!r} for a column part (known: "
                     f"{', '.join(known)}).")


class ColumnsMechanism(Mechanism):
    """Records of several columns, each part of the record privatized by its own mechanism.

    The mechanism of :class:`~sklearn_ldp.LDPEncoder` with ``bounds`` (numeric columns) or a
    multi-attribute strategy (``"spl"``, ``"smp"``, ``"rsfd"``). A part is one numeric column
    (Duchi, Piecewise, Hybrid or Square Wave), several numeric columns sampled ``k`` of ``d``
    per user, several categorical columns (SPL, SMP or RS+FD), or one categorical column
    through a frequency oracle. Every user sends one row: the parts' reports side by side.
    The parts' budgets add up (sequential composition): ``epsilon`` is their sum, the
    record-level guarantee (for RS+FD declared with ``neighbourhood="attribute"``, its larger
    record-level epsilon).

    The statistic is the parts' statistics concatenated (float64 when a part sums real
    reports, else int64 counts): additive, so partial fits, merges and files work as for
    any mechanism. It estimates per-column quantities, not the cells of a joint domain:
    :class:`~sklearn_ldp.MeanEstimator`, :class:`~sklearn_ldp.DistributionEstimator` and
    :class:`~sklearn_ldp.AttributeHistogramEstimator` decode it.

    Parameters
    ----------
    parts : list
        The parts (built by the encoder, or by :meth:`from_dict`).

    Attributes
    ----------
    columns : tuple of str
        Every column of the record, part by part.
    epsilon : float
        The record-level budget: the sum of the parts' budgets.
    report_dtype : numpy.dtype
        float64 when a part reports real numbers, else the unsigned type of the reports.
    """

    kind = COLUMNS_KIND

    def __init__(self, parts):
        parts = list(parts)
        if not parts or len(parts) > MAX_COLUMNS:
            raise ValueError(f"a record needs 1 to {MAX_COLUMNS} parts, got {len(parts)}.")
        columns = [column for part in parts for column in part.columns]
        if len(columns) > MAX_COLUMNS:
            raise ValueError(f"a record has at most {MAX_COLUMNS} columns, got {len(columns)}.")
        duplicated = sorted({column for column in columns if columns.count(column) > 1})
        if duplicated:
            raise ValueError(f"the columns {duplicated!r} appear in more than one part.")
        self.parts = parts
        self.columns = tuple(columns)
        self.n_inputs = len(columns)
        # Sequential composition: the smallest float at least the exact sum of the parts'
        # budgets (a correctly rounded sum can fall half a unit below it).
        total = sum(Fraction(part.epsilon) for part in parts)
        self.epsilon = float(total)
        if Fraction(self.epsilon) < total:
            self.epsilon = math.nextafter(self.epsilon, math.inf)
        self.name = COLUMNS_KIND
        self.params = {}
        if any(part.float_reports for part in parts):
            self.report_dtype = np.dtype(np.float64)
            for part in parts:
                if not part.float_reports and np.dtype(part.report_dtype).itemsize >= 8:
                    raise ValueError(
                        f"the {part.strategy!r} reports of column(s) {list(part.columns)!r} "
                        "are 64-bit integers (hash seeds), which a row of real-valued reports "
                        "cannot hold exactly; report that column with another frequency "
                        "oracle ('oue', 'randomized_response', 'hadamard', 'hrr').")
        else:
            self.report_dtype = np.result_type(*[part.report_dtype for part in parts])
        widths = np.cumsum([0] + [part.width for part in parts])
        self._report_slices = [slice(a, b) for a, b in zip(widths[:-1], widths[1:],
                                                           strict=True)]
        self.width = int(widths[-1])
        sizes = np.cumsum([0] + [part.statistic_size for part in parts])
        self._statistic_slices = [slice(a, b) for a, b in zip(sizes[:-1], sizes[1:],
                                                              strict=True)]
        self.statistic_size = int(sizes[-1])
        self.float_statistic = any(part.float_statistic for part in parts)
        self._positions = [[columns.index(column) for column in part.columns]
                           for part in parts]

    # ------------------------------------------------------------------ description
    def __repr__(self):
        parts = ", ".join(f"{part.strategy}({', '.join(part.columns)})" for part in self.parts)
        return f"ColumnsMechanism([{parts}], epsilon={self.epsilon:g})"

    def report_columns(self):
        """Names of the report columns (in files and DataFrames), part by part."""
        names = [name for part in self.parts for name in part.names()]
        if len(set(names)) != len(names):  # column names that collide once prefixed
            names = [f"report_{j}" for j in range(len(names))]
        return names

    def budget(self):
        """One row per column: its part's ``strategy``, ``epsilon`` and position ``part``
        (the columns of one part share its budget)."""
        rows = [(column, part.strategy, part.epsilon, position)
                for position, part in enumerate(self.parts) for column in part.columns]
        return pd.DataFrame(rows, columns=["column", "strategy", "epsilon", "part"]
                            ).set_index("column")

    def answer_errors(self, categories=None):
        """Every per-column answer with the variance one user adds to it.

        One row per mean of a numeric column (value units squared) and per category of a
        categorical column (the category's *count*, squared counts per user). Square-wave
        columns have none: their EM estimate's error has no closed form. The variance for
        ``N`` users is ``N`` times a count's and ``1 / N`` times a mean's.

        Parameters
        ----------
        categories : dict or None, default=None
            Column -> its categories, for the labels (codes otherwise).

        Returns
        -------
        pandas.DataFrame
            Columns ``column``, ``answer`` (the label: the column, or ``"column=category"``),
            ``kind`` (``"mean"`` or ``"frequency"``), ``part``, ``code`` (the category's
            position, -1 for a mean), ``worst_case`` and ``average_case``.
        """
        rows = []
        for position, part in enumerate(self.parts):
            if isinstance(part, _MeanPart | _SampledMeanPart):
                worst, average = part.per_user_variance()
                rows += [(column, column, "mean", position, -1, float(w), float(a))
                         for column, w, a in zip(part.columns, worst, average, strict=True)]
            elif isinstance(part, _MultiAttributePart | _OraclePart):
                for column, size, (worst, average) in zip(
                        part.columns, part.sizes(), part.per_user_variance(), strict=True):
                    labels = (categories or {}).get(column)
                    if labels is None or len(labels) != size:
                        labels = range(size)
                    rows += [(column, f"{column}={label}", "frequency", position, code,
                              float(worst), float(average))
                             for code, label in enumerate(labels)]
        return pd.DataFrame(rows, columns=["column", "answer", "kind", "part", "code",
                                           "worst_case", "average_case"])

    def part_statistic(self, statistic, position):
        """The segment of ``statistic`` that belongs to part ``position`` (its own dtype)."""
        segment = np.asarray(statistic)[self._statistic_slices[position]]
        if self.float_statistic and not self.parts[position].float_statistic:
            segment = segment.astype(np.int64)
        return segment

    # ------------------------------------------------------------------ spec
    def to_dict(self):
        """The specification: the parts' columns and mechanisms, and the total epsilon.

        Returns
        -------
        dict
            ``"version"``, ``"mechanism"`` (``"columns"``), ``"epsilon"`` (the sum of the
            parts'), ``"n_inputs"`` (the number of columns) and ``"params"``: ``"parts"``,
            a list of ``{"columns": [...], "spec": {...}}``.
        """
        return {"version": COLUMNS_SPEC_VERSION, "mechanism": COLUMNS_KIND,
                "epsilon": self.epsilon, "n_inputs": self.n_inputs,
                "params": {"parts": [part.spec() for part in self.parts]}}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`; every problem is a ValueError naming the field.

        Each part's mechanism is rebuilt and validated by its own loader (with the caps of
        :mod:`sklearn_ldp.deploy.limits` and the exact privacy checks of the frequency oracles),
        and the declared total epsilon must equal the sum of the parts' budgets.

        Parameters
        ----------
        spec : dict
            A specification written by :meth:`to_dict`.

        Returns
        -------
        ColumnsMechanism
            The mechanism it describes.
        """
        if not isinstance(spec, dict) or spec.get("mechanism") != COLUMNS_KIND:
            raise ValueError(f"not a {COLUMNS_KIND!r} specification: {str(spec)[:80]!r}.")
        if spec.get("version") != COLUMNS_SPEC_VERSION:
            raise ValueError(f"unsupported {COLUMNS_KIND!r} specification version "
                             f"{spec.get('version')!r}; this sklearn_ldp reads "
                             f"{COLUMNS_SPEC_VERSION}.")
        params = spec.get("params")
        if not isinstance(params, dict) or set(params) != {"parts"} \
                or not isinstance(params["parts"], list):
            raise ValueError(f"the {COLUMNS_KIND!r} specification's params must be "
                             "{'parts': [...]}.")
        entries = params["parts"]
        if not 1 <= len(entries) <= MAX_COLUMNS:
            raise ValueError(f"the {COLUMNS_KIND!r} specification has 1 to {MAX_COLUMNS} "
                             f"parts, got {len(entries)}.")
        # Every part's declared cells are counted before any is built (building one probes
        # its oracle's report layout): together at most max_cells.
        declared = 0
        for position, entry in enumerate(entries):
            declared += _declared_cells(entry)
            check_size(max(declared, 1), "the categories of its parts, in all", "max_cells",
                       f"the {COLUMNS_KIND!r} specification (part {position})")
        try:
            parts = [_part_from_spec(entry, position)
                     for position, entry in enumerate(entries)]
        except (KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
            raise ValueError(f"malformed {COLUMNS_KIND!r} specification: "
                             f"{type(exc).__name__}: {exc}.") from None
        mechanism = cls(parts)
        claimed = spec.get("epsilon")
        if isinstance(claimed, bool) or not isinstance(claimed, int | float) \
                or claimed != mechanism.epsilon:  # exactly the composed budget
            raise ValueError(f"the {COLUMNS_KIND!r} specification claims epsilon={claimed!r}, "
                             f"but its parts spend {mechanism.epsilon!r} (their sum).")
        if spec.get("n_inputs") != mechanism.n_inputs:
            raise ValueError(f"the {COLUMNS_KIND!r} specification claims n_inputs="
                             f"{spec.get('n_inputs')!r}, but its parts hold "
                             f"{mechanism.n_inputs} columns.")
        return mechanism

    # ------------------------------------------------------------------ client side
    def empty_reports(self):
        """Zero reports with the layout of this mechanism's report rows."""
        return np.zeros((0, self.width), dtype=self.report_dtype)

    def randomize(self, records, rng):
        """Privatize one record per user: one row of report columns each.

        Parameters
        ----------
        records : ndarray of shape (n_users, n_columns)
            The values of :attr:`columns`, in that order: numbers within each numeric
            column's bounds, category codes (integers) of categorical columns.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of shape (n_users, n_report_columns)
            The parts' reports side by side (:meth:`report_columns`).
        """
        records = np.asarray(records)
        if records.ndim == 1 and records.size == 0:
            return self.empty_reports()  # no users (how collect probes the report layout)
        if records.ndim != 2 or records.shape[1] != self.n_inputs:
            raise ValueError(f"records must be an (n_users, {self.n_inputs}) array of the "
                             f"columns {list(self.columns)!r}, got shape {records.shape}.")
        out = np.empty((records.shape[0], self.width), dtype=self.report_dtype)
        for part, positions, rows in zip(self.parts, self._positions, self._report_slices,
                                         strict=True):
            out[:, rows] = part.randomize(records[:, positions], rng)
        return out

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        """Which rows are valid reports of every part.

        Parameters
        ----------
        reports : array-like of shape (n_reports, n_report_columns)
            Report rows.

        Returns
        -------
        ReportCheck
            The rows (in the report dtype when all are valid), a mask, and the rule.

        Raises
        ------
        ValueError
            If the array is not 2-D with one column per report column, or not numeric.
        """
        from .mechanisms._base.mechanism import ReportCheck

        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.width \
                or reports.dtype.kind not in ("f" if self.report_dtype.kind == "f" else "iu"):
            kind = "real numbers" if self.report_dtype.kind == "f" else "integers"
            raise ValueError(f"reports of {self!r} are rows of {self.width} {kind} (columns "
                             f"{self.report_columns()}), got an array of shape "
                             f"{reports.shape} and dtype {reports.dtype}.")
        valid = np.ones(reports.shape[0], dtype=bool)
        for part, rows in zip(self.parts, self._report_slices, strict=True):
            valid &= part.validity(reports[:, rows])
        if valid.all() and reports.dtype != self.report_dtype:
            reports = reports.astype(self.report_dtype)
        rule = "rows of the parts' valid reports (" + "; ".join(
            f"{part.strategy} of {', '.join(part.columns)}" for part in self.parts) + ")"
        return ReportCheck(reports, valid, rule)

    def aggregate(self, reports):
        """The parts' statistics, concatenated (additive over disjoint sets of reports).

        Parameters
        ----------
        reports : array-like of shape (n_reports, n_report_columns)
            Report rows (checked first).

        Returns
        -------
        ndarray
            float64 when a part sums real-valued reports, else int64 counts.
        """
        from .mechanisms._base.mechanism import chunks

        reports = self.check_reports(reports)
        dtype = np.float64 if self.float_statistic else np.int64
        total = np.zeros(self.statistic_size, dtype=dtype)
        for rows in chunks(reports.shape[0]) or [slice(0, 0)]:
            block = reports[rows]
            for part, columns, segment in zip(self.parts, self._report_slices,
                                              self._statistic_slices, strict=True):
                total[segment] += part.aggregate(block[:, columns])
        return total

    def check_statistic(self, statistic):
        """``statistic`` checked as this mechanism's, else a ValueError saying why.

        Parameters
        ----------
        statistic : array-like
            A statistic of :meth:`aggregate` (or a sum of several).

        Returns
        -------
        ndarray
            The statistic (float64 or int64).
        """
        return self._checked(statistic)[0]

    def _checked(self, statistic):
        statistic = np.asarray(statistic)
        where = f"the statistic of {self!r}"
        if statistic.shape != (self.statistic_size,):
            raise ValueError(f"{where} has shape ({self.statistic_size},), got "
                             f"{statistic.shape}: it comes from another mechanism.")
        if self.float_statistic:
            if statistic.dtype.kind not in "iuf":
                raise ValueError(f"{where} holds numbers, got dtype {statistic.dtype}.")
            statistic = statistic.astype(np.float64)
            if not np.all(np.isfinite(statistic)):
                raise ValueError(f"{where} holds finite numbers; got NaN or inf.")
        else:
            if statistic.dtype.kind not in "iu":
                raise ValueError(f"{where} holds integer counts, got dtype {statistic.dtype}.")
            if statistic.size and statistic.dtype.kind == "i" and statistic.min() < 0:
                raise ValueError(f"{where} holds a negative count: no reports produce it.")
            if statistic.size and statistic.max() > MAX_REPORTS:
                raise ValueError(f"{where} holds a count above 2^62: refused.")
            statistic = statistic.astype(np.int64)
        totals = []
        for position, part in enumerate(self.parts):
            segment = statistic[self._statistic_slices[position]]
            label = f"{where}, part {position} ({part.strategy} of {', '.join(part.columns)})"
            if self.float_statistic and not part.float_statistic:
                if np.any(segment < 0) or np.any(segment != np.floor(segment)) \
                        or np.any(segment > _FLOAT_EXACT):
                    raise ValueError(f"{label} holds counts: integers in [0, 2^53].")
                segment = segment.astype(np.int64)
            try:
                totals.append(part.check_statistic(segment))
            except ValueError as exc:
                raise ValueError(f"{label}: {exc}") from None
        if len(set(totals)) > 1:
            raise ValueError(f"{where} counts {totals} reports in its parts: every user "
                             "reports every part, so the totals are inconsistent.")
        if totals[0] > (_FLOAT_EXACT if self.float_statistic else MAX_REPORTS):
            raise ValueError(f"{where} counts {totals[0]} reports, more than it can hold "
                             "exactly: refused.")
        return statistic, totals[0]

    def n_reports(self, statistic):
        """Number of reports (users) counted by ``statistic`` (checked).

        Parameters
        ----------
        statistic : array-like
            A statistic of :meth:`aggregate`.

        Returns
        -------
        int
            The number of users.
        """
        return self._checked(statistic)[1]

    def estimate(self, statistic):
        """Not a data vector: raises a ValueError naming the estimators that decode it.

        Parameters
        ----------
        statistic : array-like
            A statistic of :meth:`aggregate`.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError(_COLUMNS_DECODERS)

    def supports(self, workload_matrix):
        """False: no workload over joint cells is answered (see :meth:`estimate`).

        Parameters
        ----------
        workload_matrix : workload or array-like
            Any queries.

        Returns
        -------
        bool
            False.
        """
        return False

    def check_supports(self, workload_matrix):
        """Raise the ValueError of :meth:`estimate`.

        Parameters
        ----------
        workload_matrix : workload or array-like
            Any queries.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError(_COLUMNS_DECODERS)

    def per_user_variance(self, gram):
        """Not defined on joint cells (see :meth:`estimate`).

        Parameters
        ----------
        gram : Gram or array-like
            Any Gram matrix.

        Raises
        ------
        NotImplementedError
            Always.
        """
        raise NotImplementedError(_COLUMNS_DECODERS)


_COLUMNS_DECODERS = (
    "these reports carry per-column statistics of a record of numeric and/or categorical "
    "columns (LDPEncoder with bounds= or strategy='spl'/'smp'/'rsfd'), not a data vector over "
    "joint cells: decode them with MeanEstimator (means of numeric columns), "
    "DistributionEstimator (square_wave columns) or AttributeHistogramEstimator (histograms "
    "of categorical columns).")


# ---------------------------------------------------------------------- heavy hitters
# One column whose values are too many to list (strings of a declared byte length, integers of
# a declared bit length): the reports of PEM / TreeHist (prefix extension) or of Apple's CMS /
# HCMS sketches. As for ColumnsMechanism, the class below is the glue that lets LDPReports,
# AggregatedReports, their files and frames carry such reports; the math is that of
# :mod:`sklearn_ldp.mechanisms.heavy_hitters`, whose ``to_dict`` specification (the one
# the
# clients rebuild the randomizer from) is kept unchanged inside this one's ``params``.
HEAVY_HITTERS_KIND = "heavy_hitters"
HEAVY_HITTERS_SPEC_VERSION = 1
HEAVY_HITTER_STRATEGIES = ("pem", "treehist", "cms", "hcms")
VALUE_TYPES = ("strings", "integers")
# Longest values: integers are numpy integers (64 bits); strings at most MAX_BIT_LENGTH bits.
MAX_INTEGER_BITS = 64
MAX_STRING_BYTES = MAX_BIT_LENGTH // 8


def _check_value_spec(value_type, bit_length, where):
    """``(value_type, bit_length)`` validated, or a ValueError naming ``where``."""
    if not isinstance(value_type, str) or value_type not in VALUE_TYPES:
        raise ValueError(f"{where}: the values must be one of {VALUE_TYPES}, got "
                         f"{value_type!r}.")
    top = MAX_INTEGER_BITS if value_type == "integers" else MAX_BIT_LENGTH
    if isinstance(bit_length, bool) or not isinstance(bit_length, int) \
            or not 1 <= bit_length <= top or (value_type == "strings" and bit_length % 8):
        raise ValueError(f"{where}: the bit length of {value_type} must be an integer in "
                         f"[1, {top}]{' and a multiple of 8' if value_type == 'strings' else ''},"
                         f" got {bit_length!r}.")
    return value_type, bit_length


def _plain(value):
    """A numpy scalar as the Python value (for messages)."""
    return value.item() if isinstance(value, np.generic) else value


class HeavyHitterMechanism(Mechanism):
    """The reports of one column of strings or integers for heavy hitters and frequencies.

    Wraps a :class:`~sklearn_ldp.mechanisms.heavy_hitters.prefix.PrefixHeavyHitters` (PEM,
    TreeHist) or a :class:`~sklearn_ldp.mechanisms.heavy_hitters.sketches.SketchFrequencyOracle`
    (CMS, HCMS) with the column's name and how its values are encoded, so that
    :class:`LDPReports` (and its files, with their SHA-256 and size caps) carry the reports of
    ``LDPEncoder(categories={"url": "strings"}, strategy="pem")``.
    :class:`~sklearn_ldp.HeavyHitterEstimator` decodes them.

    Report layout (one row per user): PEM / TreeHist ``[round, seed, y]`` (uint64, the math
    layer's); HCMS ``[j, l, bit]`` (uint32); CMS ``2 + ceil(m / 8)`` bytes (uint8): the hash
    index ``j`` big-endian in two bytes, then the packed ``+-1`` vector.

    Parameters
    ----------
    oracle : PrefixHeavyHitters or SketchFrequencyOracle
        The protocol.
    column : str
        The column's name.
    value_type : {"strings", "integers"}
        Strings (UTF-8, at most ``bit_length / 8`` bytes) or integers in
        ``[0, 2^bit_length)``.
    bit_length : int
        Bits of a value (for the sketches, of the encoding that is hashed).

    See Also
    --------
    sklearn_ldp.HeavyHitterEstimator : Decodes the reports.
    sklearn_ldp.LDPEncoder : Builds this mechanism for ``strategy="pem"`` (and the others).

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
       identification", IEEE TDSC, 2019.
    .. [2] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine
       Learning Journal, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle
    >>> mechanism = HeavyHitterMechanism(SketchFrequencyOracle(2.0, 16, 64, hadamard=True),
    ...                                  "app", "strings", 64)
    >>> reports = mechanism.randomize(mechanism.encode(["mail", "maps"], "apps"),
    ...                               np.random.default_rng(0))
    >>> reports.shape, mechanism.strategy
    ((2, 3), 'hcms')
    """

    kind = HEAVY_HITTERS_KIND

    def __init__(self, oracle, column, value_type, bit_length):
        if not isinstance(oracle, PrefixHeavyHitters | SketchFrequencyOracle):
            raise ValueError(f"oracle must be a PrefixHeavyHitters or a SketchFrequencyOracle, "
                             f"got {type(oracle).__name__}.")
        if not isinstance(column, str):
            raise ValueError(f"column must be a str, got {column!r}.")
        self.value_type, self.bit_length = _check_value_spec(value_type, bit_length,
                                                             f"column {column!r}")
        if self.value_type == "strings" and self.bit_length % 8:
            raise ValueError(f"column {column!r}: strings need a multiple of 8 bits.")
        self.prefix = isinstance(oracle, PrefixHeavyHitters)
        if self.prefix and oracle.bit_length != self.bit_length:
            raise ValueError(f"column {column!r}: the protocol's bit_length "
                             f"{oracle.bit_length} is not the values' {self.bit_length}.")
        if not self.prefix:
            check_size(oracle.n_hashes * oracle.width, "the sketch's cells (n_hashes * width)",
                       "max_matrix_entries", f"column {column!r}")
        self.oracle = oracle
        self.column = column
        self.epsilon = float(oracle.epsilon)
        self.n_inputs = None  # the domain (every value of bit_length bits) is not listed
        self.name = self.strategy
        self.params = {}

    @property
    def strategy(self):
        """``"pem"``, ``"treehist"``, ``"cms"`` or ``"hcms"``."""
        if self.prefix:
            return self.oracle.protocol
        return "hcms" if self.oracle.hadamard else "cms"

    @property
    def n_words(self):
        """uint64 words per encoded value."""
        return n_words(self.bit_length)

    def __repr__(self):
        return (f"HeavyHitterMechanism({self.strategy}, column={self.column!r}, "
                f"{self.value_type} of {self.bit_length} bits, epsilon={self.epsilon:g})")

    # ------------------------------------------------------------------ spec
    def to_dict(self):
        """The specification: the column, its values and the protocol's own ``to_dict``.

        Returns
        -------
        dict
            ``"version"``, ``"mechanism"`` (``"heavy_hitters"``), ``"epsilon"`` and
            ``"params"``: ``"column"``, ``"values"``, ``"bit_length"``, ``"oracle"``.
        """
        return {"version": HEAVY_HITTERS_SPEC_VERSION, "mechanism": HEAVY_HITTERS_KIND,
                "epsilon": self.epsilon,
                "params": {"column": self.column, "values": self.value_type,
                           "bit_length": self.bit_length, "oracle": self.oracle.to_dict()}}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`; every problem is a ValueError naming the field.

        Parameters
        ----------
        spec : dict
            A specification written by :meth:`to_dict`.

        Returns
        -------
        HeavyHitterMechanism
            The mechanism it describes (sizes checked before anything is allocated).
        """
        if not isinstance(spec, dict) or spec.get("mechanism") != HEAVY_HITTERS_KIND:
            raise ValueError(f"not a {HEAVY_HITTERS_KIND!r} specification: {str(spec)[:80]!r}.")
        if spec.get("version") != HEAVY_HITTERS_SPEC_VERSION:
            raise ValueError(f"unsupported {HEAVY_HITTERS_KIND!r} specification version "
                             f"{spec.get('version')!r}; this sklearn_ldp reads "
                             f"{HEAVY_HITTERS_SPEC_VERSION}.")
        params = spec.get("params")
        if not isinstance(params, dict) or set(params) != {"column", "values", "bit_length",
                                                           "oracle"}:
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification's params must have "
                             "exactly the fields column, values, bit_length and oracle.")
        oracle_spec = params["oracle"]
        if not isinstance(oracle_spec, dict):
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification's oracle must be an "
                             f"object, got {type(oracle_spec).__name__}.")
        kind = oracle_spec.get("mechanism")
        if kind == SketchFrequencyOracle.kind:
            # The sketch's k x m cells are allocated by every aggregate: capped before.
            k, m = oracle_spec.get("n_hashes"), oracle_spec.get("width")
            if all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (k, m)):
                check_size(k * m, "the sketch's cells (n_hashes * width)",
                           "max_matrix_entries", f"the {HEAVY_HITTERS_KIND!r} specification")
            build = SketchFrequencyOracle.from_dict
        elif kind == PrefixHeavyHitters.kind:
            build = PrefixHeavyHitters.from_dict
        else:
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification's oracle is "
                             f"{kind!r}, not {PrefixHeavyHitters.kind!r} or "
                             f"{SketchFrequencyOracle.kind!r}.")
        try:
            oracle = build(oracle_spec)
        except (TypeError, KeyError, OverflowError) as exc:
            raise ValueError(f"malformed {HEAVY_HITTERS_KIND!r} oracle: {exc}") from None
        mechanism = cls(oracle, params["column"], params["values"], params["bit_length"])
        claimed = spec.get("epsilon")
        if isinstance(claimed, bool) or not isinstance(claimed, int | float) \
                or claimed != mechanism.epsilon:
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification claims epsilon="
                             f"{claimed!r}, its oracle {mechanism.epsilon!r}.")
        return mechanism

    def client_dict(self):
        """The protocol's own specification (what the clients rebuild the randomizer from);
        a sketch's also carries the values' ``bit_length`` (its hashes cover the encoded
        words, so a device needs it to encode a value)."""
        spec = self.oracle.to_dict()
        if not self.prefix:
            spec["bit_length"] = self.bit_length
        return spec

    # ------------------------------------------------------------------ values
    def encode(self, values, column=None):
        """The values as ``(n, W)`` uint64 words; a ValueError naming a bad value.

        Strings must be ``str`` valid in UTF-8 (no lone surrogates), without NUL characters
        (the zero padding), of at most ``bit_length / 8`` bytes; integers must be integers
        (an integral float is accepted; booleans are not) in ``[0, 2^bit_length)``. Missing
        values are refused here (the encoder replaces them first, as ``handle_missing``
        says).

        Parameters
        ----------
        values : array-like of shape (n,)
            The values.
        column : str or None, default=None
            Named in the messages (default: the mechanism's column).

        Returns
        -------
        ndarray of uint64, shape (n, W)
            :func:`~sklearn_ldp.mechanisms.heavy_hitters.values.encode_values` of the values.
        """
        column = self.column if column is None else column
        array = values.to_numpy() if isinstance(values, pd.Series | pd.Index) \
            else np.asarray(values, dtype=None if isinstance(values, np.ndarray) else object)
        if array.ndim != 1:
            raise ValueError(f"column {column!r}: the values must be one-dimensional, got "
                             f"shape {array.shape}.")
        if array.size:
            absent = np.asarray(pd.isna(array), dtype=bool)
            if absent.any():
                row = int(np.flatnonzero(absent)[0])
                raise ValueError(f"column {column!r} has {int(absent.sum())} missing values "
                                 f"(first at row {row}): pass handle_missing='category' with "
                                 "missing_category=<a value> to count them as that value.")
        if self.value_type == "strings":
            return self._encode_strings(array, column)
        return self._encode_integers(array, column)

    def _encode_strings(self, array, column):
        n_bytes = self.bit_length // 8
        original = array
        if array.dtype.kind != "U":
            kind = pd.api.types.infer_dtype(array, skipna=False) if array.size else "empty"
            if kind not in ("string", "empty"):
                not_str = [i for i, v in enumerate(array.tolist()) if not isinstance(v, str)]
                row = not_str[0]
                raise ValueError(f"column {column!r} holds strings, but row {row} is "
                                 f"{_plain(array[row])!r} ({type(array[row]).__name__}).")
            array = array.astype(str) if array.size else np.zeros(0, dtype="U1")
        try:
            encoded = np.char.encode(array, "utf-8")
        except UnicodeEncodeError:
            for row, value in enumerate(array.tolist()):  # only to name the bad value
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    raise ValueError(f"column {column!r}: the value {value!r} at row {row} is "
                                     f"not valid in UTF-8 ({exc.reason}).") from None
            raise
        lengths = np.char.str_len(encoded) if encoded.size else np.zeros(0, dtype=int)
        # Checked on the Python strings (numpy's fixed-width strings drop trailing NULs).
        nul = pd.Series(original, dtype=object).str.contains("\0", regex=False).to_numpy(
            dtype=bool) if array.size else np.zeros(0, dtype=bool)
        if nul.any():
            row = int(np.flatnonzero(nul)[0])
            raise ValueError(f"column {column!r}: the value {original[row]!r} at row {row} "
                             "holds a NUL character, which the zero padding of the encoding "
                             "cannot tell apart.")
        too_long = lengths > n_bytes
        if too_long.any():
            row = int(np.flatnonzero(too_long)[0])
            raise ValueError(f"column {column!r}: the value {_plain(array[row])!r} at row {row} "
                             "takes "
                             f"{int(lengths[row])} bytes in UTF-8, more than the declared "
                             f"{n_bytes} (max_string_bytes).")
        width = self.n_words * 8
        padded = encoded.astype(f"S{width}")  # zero bytes after the value
        return np.frombuffer(padded.tobytes(), dtype=">u8").reshape(array.shape[0],
                                                                    self.n_words) \
            .astype(np.uint64)

    def _encode_integers(self, array, column):
        if array.dtype.kind == "b":
            raise ValueError(f"column {column!r} holds integers, got booleans.")
        if array.dtype.kind == "O" and array.size:
            kind = pd.api.types.infer_dtype(array, skipna=False)
            if kind not in ("integer", "floating", "mixed-integer-float"):
                bad = [i for i, v in enumerate(array.tolist())
                       if isinstance(v, bool) or not isinstance(v, int | float | np.number)]
                row = bad[0] if bad else 0
                raise ValueError(f"column {column!r} holds integers, but row {row} is "
                                 f"{_plain(array[row])!r}.")
            if all(isinstance(v, int) for v in array.tolist()):
                try:
                    array = array.astype(np.int64)
                except OverflowError:  # above 2^63 (a 64-bit value) or below -2^63
                    try:
                        array = array.astype(np.uint64)
                    except OverflowError:
                        array = array.astype(float)  # refused below, named
            else:
                array = array.astype(float)
        if array.dtype.kind == "f":
            bad = ~np.isfinite(array) | (array != np.floor(array))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ValueError(f"column {column!r}: the value {_plain(array[row])!r} at row "
                                 f"{row} is not an integer.")
            limit = 2.0 ** self.bit_length
            bad = (array < 0) | (array >= limit)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ValueError(f"column {column!r}: the value {_plain(array[row])!r} at row "
                                 f"{row} is outside [0, 2^{self.bit_length}).")
            array = array.astype(np.uint64)
        elif array.dtype.kind not in "iu" and array.size:
            raise ValueError(f"column {column!r} holds integers, got dtype {array.dtype}.")
        array = array.astype(np.int64 if array.dtype.kind == "i" else np.uint64, copy=False) \
            if array.size else np.zeros(0, dtype=np.uint64)
        bad = array < 0
        if self.bit_length < 64:
            bad = bad | (array >= (1 << self.bit_length))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"column {column!r}: the value {int(array[row])} at row {row} is "
                             f"outside [0, 2^{self.bit_length}).")
        return encode_values(array.astype(np.uint64), self.bit_length)

    def possible(self, words):
        """Which encoded values some user can hold: every integer; a string whose bytes,
        without the zero padding, hold no zero byte and are valid UTF-8 (a prefix-extension
        protocol can return others only as false positives)."""
        words = np.asarray(words, dtype=np.uint64)
        if self.value_type == "integers":
            return np.ones(words.shape[0], dtype=bool)
        raw = words.astype(">u8").tobytes()
        width = words.shape[1] * 8
        ok = np.ones(words.shape[0], dtype=bool)
        for i in range(words.shape[0]):  # a few found values, never the users
            value = raw[i * width:(i + 1) * width][:self.bit_length // 8].rstrip(b"\0")
            try:
                ok[i] = b"\0" not in value and value.decode("utf-8") is not None
            except UnicodeDecodeError:
                ok[i] = False
        return ok

    def possible_prefix(self, words, length):
        """Which ``(c, W)`` candidate prefixes of ``length`` bits some user's value can start
        with: every integer prefix; for strings, the complete bytes must be a valid UTF-8
        prefix, and once a zero byte (the padding) appears every later bit must be zero. The
        prefix-extension rounds drop the others (a few hundred candidates per round, never
        the users, so a loop over them is cheap)."""
        words = np.asarray(words, dtype=np.uint64)
        if self.value_type == "integers":
            return np.ones(words.shape[0], dtype=bool)
        raw = words.astype(">u8").tobytes()
        width = words.shape[1] * 8
        n_bytes = -(-length // 8)  # the last byte may be partial (its low bits are zero)
        ok = np.ones(words.shape[0], dtype=bool)
        for i in range(words.shape[0]):
            prefix = raw[i * width:i * width + n_bytes]
            end = prefix.find(b"\0")
            if end >= 0:  # the padding started: nothing but zeros after it
                ok[i] = not prefix[end:].strip(b"\0")
                complete, final = prefix[:end], True
            else:
                complete, final = prefix[:length // 8], False
            if ok[i]:
                try:
                    codecs.getincrementaldecoder("utf-8")().decode(complete, final=final)
                except UnicodeDecodeError:
                    ok[i] = False
        return ok

    def decode(self, words):
        """Values (a list of str, or an int64/uint64 array) of ``(n, W)`` words."""
        values = decode_values(words, self.bit_length, self.value_type == "strings")
        if self.value_type == "integers" and self.bit_length < 64:
            return np.asarray(values, dtype=np.int64)
        return values

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Privatize encoded values (``(n, W)`` uint64 words, :meth:`encode`) or 1-D values.

        Parameters
        ----------
        indices : ndarray
            ``(n, W)`` uint64 words, or one value per user (encoded by :meth:`encode`).
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray
            One report row per user (layout in the class docstring).
        """
        words = np.asarray(indices)
        if not (words.ndim == 2 and words.dtype == np.uint64):
            words = self.encode(indices)
        if self.prefix:
            return self.oracle.randomize(words, rng)
        parts = self.oracle.randomize(words, rng)
        if self.oracle.hadamard:
            return np.column_stack(parts).astype(np.uint32)
        j, bits = parts
        head = np.column_stack([(j >> 8).astype(np.uint8), (j & 0xFF).astype(np.uint8)])
        return np.concatenate([head, bits], axis=1)

    def exact_law(self, value, seed=0):
        """The exact law of one user's report row, given the public hashes (the report's
        seed for PEM / TreeHist, ``hash_seed`` for the sketches): the oracle's law with its
        outputs in this mechanism's row layout.

        Parameters
        ----------
        value : str or int
            The user's value (as :meth:`encode` takes it).
        seed : int, default=0
            PEM / TreeHist: the report's hash seed (ignored by the sketches).

        Returns
        -------
        ExactLaw
            The oracle's law, its outputs in this mechanism's report-row layout.
        """
        words = self.encode([value])
        if self.prefix:
            return self.oracle.exact_law(words, seed=seed)
        law = self.oracle.exact_law(words, bit_length=self.bit_length)
        rows = np.asarray(law.outputs)
        if self.oracle.hadamard:
            return law._replace(outputs=rows.astype(np.uint32))
        head = np.column_stack([rows[:, 0] >> 8, rows[:, 0] & 0xFF])
        return law._replace(outputs=np.concatenate([head, rows[:, 1:]], axis=1)
                            .astype(np.uint8))

    def empty_reports(self):
        """Zero reports with the layout of this mechanism's report rows."""
        if self.prefix:
            return np.zeros((0, 3), dtype=np.uint64)
        if self.oracle.hadamard:
            return np.zeros((0, 3), dtype=np.uint32)
        return np.zeros((0, 2 + (self.oracle.width + 7) // 8), dtype=np.uint8)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        """Which reports the protocol can send, as a ``ReportCheck`` (a wrong layout raises).

        Parameters
        ----------
        reports : array-like
            Report rows (layout in the class docstring).

        Returns
        -------
        ReportCheck
            The reports, a boolean per report and the rule in words.
        """
        reports = np.asarray(reports)
        empty = self.empty_reports()
        if reports.ndim != 2 or reports.shape[1] != empty.shape[1] \
                or reports.dtype != empty.dtype:
            raise ValueError(f"{self!r} reports are a (n, {empty.shape[1]}) {empty.dtype} "
                             f"array, got shape {reports.shape} and dtype {reports.dtype}.")
        if self.prefix:
            limit = self.oracle.g if self.oracle.protocol == "pem" else 2
            bad = (reports[:, 0] >= self.oracle.n_rounds) | (reports[:, 2] >= limit)
            rule = f"round < {self.oracle.n_rounds}, y < {limit}"
        elif self.oracle.hadamard:
            k, m = self.oracle.n_hashes, self.oracle.width
            bad = (reports[:, 0] >= k) | (reports[:, 1] >= m) | (reports[:, 2] > 1)
            rule = f"j < {k}, l < {m}, bit in {{0, 1}}"
        else:
            k, m = self.oracle.n_hashes, self.oracle.width
            j = (reports[:, 0].astype(np.uint32) << np.uint32(8)) | reports[:, 1]
            bad = j >= k
            if m % 8:  # no bit past the sketch width
                bad = bad | ((reports[:, -1] >> np.uint8(m % 8)) != 0)
            rule = f"j < {k}, no bit past the width {m}"
        return ReportCheck(reports, ~bad, rule)

    def _parts(self, reports):
        """The math layer's report tuple of this mechanism's report rows."""
        if self.oracle.hadamard:
            return reports[:, 0], reports[:, 1], reports[:, 2]
        j = (reports[:, 0].astype(np.uint32) << np.uint32(8)) | reports[:, 1]
        return j, np.ascontiguousarray(reports[:, 2:])

    def aggregate(self, reports):
        """The sketches' additive statistic (the math layer's); prefix extension has none.

        Raises
        ------
        ValueError
            For PEM and TreeHist: their rounds choose the candidates of the next round from
            the estimates of the previous one, so the server keeps the reports themselves.
        """
        if self.prefix:
            raise ValueError(f"{self.strategy!r} reports have no additive statistic (each "
                             "round's candidates come from the previous round's estimates): "
                             "fit HeavyHitterEstimator on the LDPReports themselves.")
        return self.oracle.aggregate(self._parts(self.check_reports(reports)))

    def n_reports(self, statistic):
        """The number of reports a sketch statistic counts."""
        statistic = self.check_statistic(statistic)
        k, m = self.oracle.n_hashes, self.oracle.width
        return int(statistic[k * m:].sum())

    def check_statistic(self, statistic):
        """A sketch statistic checked (integer counts, consistent totals) as int64."""
        if self.prefix:
            raise ValueError(f"{self.strategy!r} reports have no additive statistic.")
        statistic = np.asarray(statistic)
        if statistic.dtype.kind not in "iu":
            raise ValueError(f"the statistic of {self!r} holds integer counts, got dtype "
                             f"{statistic.dtype}.")
        if statistic.size and statistic.max() > MAX_REPORTS:
            raise ValueError(f"the statistic of {self!r} holds a count above 2^62.")
        statistic = statistic.astype(np.int64)
        try:
            self.oracle._sketch(statistic)  # shape, signs and totals (ones <= reports)
        except ValueError as exc:
            raise ValueError(f"the statistic of {self!r}: {exc}") from None
        k, m = self.oracle.n_hashes, self.oracle.width
        if self.oracle.hadamard:
            _exact_sum(statistic[k * m:])
        elif _exact_sum(statistic[k * m:]) > MAX_REPORTS:
            raise ValueError(f"the statistic of {self!r} counts more than 2^62 reports.")
        return statistic

    def count_variance_per_user(self, frequency):
        """Variance of a value's estimated count among ``N`` users, over ``N`` (the math
        layer's ``count_variance_per_user``)."""
        return self.oracle.count_variance_per_user(frequency)

    def per_user_variance(self, workload=None):
        """``(worst_case, average_case)`` variance of one value's count, over ``N``: the
        largest over the value's share, and that of a value of share 0."""
        shares = np.linspace(0.0, 1.0, 101)
        return (float(np.max(self.count_variance_per_user(shares))),
                float(self.count_variance_per_user(0.0)))


def load_mechanism(spec):
    """Any mechanism a report file or frame may carry, from its specification.

    ``"columns"`` specifications (records of several columns) are rebuilt by
    :meth:`ColumnsMechanism.from_dict`, every other kind by
    :func:`~sklearn_ldp.mechanisms.mechanism_from_dict`.

    Parameters
    ----------
    spec : dict
        A mechanism specification (``to_dict()``).

    Returns
    -------
    Mechanism
        The mechanism it describes.

    Raises
    ------
    ValueError
        If the specification is not valid.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> load_mechanism(RandomizedResponse(3, 1.0).to_dict())
    RandomizedResponse(n_inputs=3, epsilon=1.0)
    """
    if isinstance(spec, dict) and spec.get("mechanism") == COLUMNS_KIND:
        return ColumnsMechanism.from_dict(spec)
    if isinstance(spec, dict) and spec.get("mechanism") == HEAVY_HITTERS_KIND:
        return HeavyHitterMechanism.from_dict(spec)
    return mechanism_from_dict(spec)


def load_mechanism_json(text):
    """:func:`load_mechanism` of JSON text (a ValueError if it is not JSON)."""
    try:
        spec = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the mechanism specification is not valid JSON: {exc}") from None
    return load_mechanism(spec)


def column_part(columns, mechanism):
    """The part of a record that ``mechanism`` privatizes over ``columns``.

    Parameters
    ----------
    columns : sequence of str
        The record's columns the mechanism reports (one, or one per attribute).
    mechanism : object
        A numeric mechanism (Duchi, Piecewise, Hybrid, Square Wave, SampledMean), a
        MultiAttributeMechanism or a frequency oracle.

    Returns
    -------
    object
        The part, for :class:`ColumnsMechanism`.
    """
    if isinstance(mechanism, SquareWaveMechanism):
        return _SquareWavePart(columns, mechanism)
    if isinstance(mechanism, MeanMechanism):
        return _MeanPart(columns, mechanism)
    if isinstance(mechanism, SampledMeanMechanism):
        return _SampledMeanPart(columns, mechanism)
    if isinstance(mechanism, MultiAttributeMechanism):
        return _MultiAttributePart(columns, mechanism)
    if isinstance(mechanism, Mechanism):
        return _OraclePart(columns, mechanism)
    raise ValueError(f"no column part for {type(mechanism).__name__}.")
