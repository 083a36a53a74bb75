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
versions 1 and 2 (no checksum) still load, with an
:class:`~sklearn_ldp._limits.UnverifiedFileWarning`: nothing can tell whether they were
damaged; save them again to add the checksum. The checksum detects accidental damage and
truncation, not forgery: anyone who can write the file can recompute it (authenticate files by
other means, e.g. a signature, when their writer is not trusted).

Every size the file declares (members, arrays, the mechanism's ``n_inputs`` and matrices, the
domain, the workload) is checked against the caps of :mod:`sklearn_ldp._limits` before it is
allocated, and every problem is a ValueError naming the file and the field.

Aggregates that cannot lie
--------------------------
:class:`AggregatedReports` validates its statistic when it is built, loaded and merged
(:func:`check_statistic`): integer counts for every mechanism except the Gaussian ones
(floats, bools and objects refused), never negative, at most ``2**62`` reports, and totals
consistent with each other where the mechanism records both (support counts at most the
number of reports, randomized-response counts summing to it, ...).
"""

import hashlib
import json
import os
import warnings
import zipfile
import zlib

import numpy as np
import pandas as pd

from ._limits import MAX_REPORTS, UnverifiedFileWarning, check_size, checksum_mismatch
from .domain import Domain
from .mechanisms import Mechanism, RandomizedResponse, mechanism_from_dict
from .mechanisms.subset_selection import SubsetSelection
from .mechanisms.support import SupportOracle
from .workloads import Workload, workload_from_spec

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
    with open(os.fspath(path), "wb") as file:  # np.savez would append ".npz" to other names
        np.savez_compressed(file, **arrays)


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
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
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
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
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
            except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
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


def _verify_members(contents, version, name):
    """Check the ``sha256`` member (version 3), or warn that an older file is unverified."""
    if version in UNVERIFIED_FILE_VERSIONS:
        warnings.warn(f"{name} was saved by an earlier sklearn_ldp (file version {version}) "
                      "without a checksum: it is read unverified. Save it again to add one.",
                      UnverifiedFileWarning, stacklevel=4)
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


def _load_npz(path, kind, array_name):
    """``(array, mechanism, domain, workload, n_invalid)`` from a file written by
    ``_save_npz``.

    Every failure is a ValueError naming the file (and the field or member).
    """
    name = os.fspath(path)
    contents = _read_members(name)
    header = _read_header(contents, name)
    _verify_members(contents, header["file_version"], name)
    found = header.get("kind")
    if found != kind:
        raise ValueError(f"{name} holds {found}, not {kind}; load it with {found}.load."
                         if found in FILE_KINDS else
                         f"{name}: unknown kind {found!r}, not {kind}.")
    spec = _json_field(header, "mechanism", (dict,), name)
    try:
        mechanism = mechanism_from_dict(spec)
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
    sklearn_ldp.io.write_reports : Writes reports to Parquet or CSV files.

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
            The file to write (overwritten if it exists; no suffix is added).

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
    def load(cls, path):
        """Reports saved by :meth:`save`; a ValueError naming the file if they cannot be read.

        Refused: another kind of file, an unknown file or specification version or mechanism,
        a checksum mismatch (the file was modified or truncated), declared sizes over the
        caps of :mod:`sklearn_ldp._limits`, reports the mechanism refuses. A file saved by an
        earlier version (no checksum) loads with an
        :class:`~sklearn_ldp._limits.UnverifiedFileWarning`.

        Parameters
        ----------
        path : str or os.PathLike
            A file written by :meth:`save`.

        Returns
        -------
        LDPReports
            The reports with their mechanism, domain, workload and ``n_invalid``.

        Raises
        ------
        ValueError
            If the file cannot be read or verified (the message names the file).
        """
        reports, mechanism, domain, workload, n_invalid = _load_npz(path, "LDPReports",
                                                                    "reports")
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
    sklearn_ldp.io.aggregate_files : Aggregates report files chunk by chunk.
    sklearn_ldp.distributed.aggregate_dask : Aggregates reports on a Dask cluster.

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
            The file to write (overwritten if it exists; no suffix is added).

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
    def load(cls, path):
        """An aggregate saved by :meth:`save`; a ValueError naming the file if it cannot be read.

        Refused: another kind of file, an unknown file or specification version or mechanism,
        a checksum mismatch (the file was modified or truncated), declared sizes over the
        caps of :mod:`sklearn_ldp._limits`, a statistic that :func:`check_statistic` refuses
        (wrong shape or type, negative counts, inconsistent totals). A file saved by an
        earlier version (no checksum) loads with an
        :class:`~sklearn_ldp._limits.UnverifiedFileWarning`.

        Parameters
        ----------
        path : str or os.PathLike
            A file written by :meth:`save`.

        Returns
        -------
        AggregatedReports
            The statistic with its mechanism, domain and workload.

        Raises
        ------
        ValueError
            If the file cannot be read or verified (the message names the file).
        """
        statistic, mechanism, domain, workload, _ = _load_npz(path, "AggregatedReports",
                                                              "statistic")
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
    (:mod:`sklearn_ldp.distributed`); :func:`~sklearn_ldp.io.aggregate_files` adds its
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

    A :class:`~sklearn_ldp.distributed.DaskReports` is an AggregatedReports whose statistic
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
