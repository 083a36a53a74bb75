"""The ``.npz`` file format of the report containers (``LDPReports.save``, ``.load``).

A file holds the array (reports or statistic), the mechanism's JSON specification, the
domain's categories and the workload (when present), so that another process, machine or
release of the package decodes them exactly. :func:`save_npz` and :func:`load_npz` take and
return arrays, mechanisms, domains and workloads, never the containers:
:mod:`sklearn_ldp.reports` calls them (it sits below the deployment layer only through this
one module, which imports nothing above the mechanisms, the domain and the workloads).

File integrity
--------------
Files of version 3 (written by this version) hold a member ``sha256``: the SHA-256 of every
other member (name, dtype, shape and bytes, in name order).
:meth:`~sklearn_ldp.LDPReports.load` and :meth:`~sklearn_ldp.AggregatedReports.load` recompute
it and refuse a mismatch ("checksum mismatch: the file was modified or truncated"), as they
refuse a zip member whose CRC-32 fails. Files of
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
"""

import hashlib
import json
import os
import warnings
import zipfile
import zlib

import numpy as np
import pandas as pd

from ..domain import Domain
from ..mechanisms._base.counts import MAX_REPORTS
from ..mechanisms._base.specs import load_mechanism
from ..workloads import Workload
from ..workloads.spec import workload_from_spec
from .limits import (
    MAX_FLAT_CELLS,
    PRODUCT_FREE_KINDS,
    UnverifiedFileWarning,
    atomic_write,
    check_size,
    checksum_mismatch,
    writer_lock,
)

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


def save_npz(path, kind, array_name, array, mechanism, domain, workload, n_invalid=0):
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


def _domain_from_header(categories, name, mechanism=None):
    """The Domain of the header's categories, its number of cells checked first.

    The product of the category counts is capped by ``max_cells`` (before any Domain is
    built) only where the reports' ``mechanism`` allocates one entry per cell of the joint
    domain: the kinds of ``PRODUCT_FREE_KINDS`` (SPL / SMP / RS+FD columns, InpHT, the
    marginal-set kinds) are written over domains far past it and must read back. Each
    column's own count stays capped (:class:`~sklearn_ldp.domain.Domain`), and the header's
    lists are bounded by the file's size anyway. Without a mechanism the cap applies.
    """
    if categories is None:
        return None
    if not isinstance(categories, dict) or not categories:
        raise ValueError(f"{name}: the header field 'categories' must be a non-empty object "
                         "(column -> list of categories).")
    product_free = getattr(mechanism, "kind", None) in PRODUCT_FREE_KINDS
    cells = 1
    for column, values in categories.items():
        if not isinstance(values, list):
            raise ValueError(f"{name}: the categories of column {column!r} must be a list, "
                             f"got {type(values).__name__}.")
        cells *= max(len(values), 1)
        if not product_free:
            check_size(cells, "the cells of the domain (product of category counts)",
                       "max_cells", name)
        elif cells > MAX_FLAT_CELLS:
            raise ValueError(f"{name}: the cells of the domain (product of category counts) "
                             f"= {cells} exceed 2^62 (flat cell indices are int64).")
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


def load_npz(path, kind, array_name, allow_unverified=False):
    """``(array, mechanism, domain, workload, n_invalid)`` from a file written by
    ``save_npz``.

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
    domain = _domain_from_header(header.get("categories"), name, mechanism)
    workload = _workload_from_header(header, contents, domain, name)
    if array_name not in contents:
        raise ValueError(f"{name}: the file has no array {array_name!r}.")
    n_invalid = header.get("n_invalid", 0)
    if isinstance(n_invalid, bool) or not isinstance(n_invalid, int) or not (
            0 <= n_invalid <= MAX_REPORTS):
        raise ValueError(f"{name}: the header's n_invalid must be an integer in [0, 2^62], "
                         f"got {n_invalid!r}.")
    return contents[array_name], mechanism, domain, workload, n_invalid
