"""Caps on the sizes that files and specifications may declare, and the shared integrity helpers.

A specification, a report file, a saved aggregate or a ledger comes from disk or from another
party: a few bytes can *declare* ``n_inputs = 10**12`` or a billion-row file, and rebuilding what
they describe would exhaust memory or CPU. Every loader compares each declared size with the
caps below **before allocating anything**, and refuses with a ValueError that names the field,
the cap and how to raise it.

======================  ===========  ==========================================================
cap                     default      what it bounds
======================  ===========  ==========================================================
``max_cells``           2**24        cells of a domain: ``n_inputs`` of a mechanism spec, the
                                     product of a saved domain's category counts, the ``n`` of
                                     a workload spec
``max_matrix_entries``  2**27        entries of a dense matrix in a spec (a factorization
                                     strategy ``Q``, a Gaussian workload ``A``) and of a
                                     mechanism's statistic (e.g. all marginal tables); the
                                     same bound as ``_validation.MAX_DENSE_ENTRIES`` (1 GiB)
``max_array_bytes``     2**32        uncompressed bytes of one array stored in a ``.npz`` file
``max_header_bytes``    2**30        bytes of one JSON text (a spec, a file header, a ledger
                                     file) and of one line of a CSV report file
``max_file_rows``       2**36        rows of one report file (declared in a Parquet footer or
                                     counted in a CSV)
``max_workload_terms``  2**20        Kronecker factors of one structured workload built in
                                     Python objects: attribute sets times columns of
                                     ``marginals``/``range_marginals``, blocks of a stack
======================  ===========  ==========================================================

The defaults sit comfortably above the largest supported domains (about ``2**20`` cells
for the structured strategies) and strategies. Raise a cap for files you trust::

    from sklearn_ldp import set_limits, limits
    set_limits(max_cells=2**26)            # for the rest of the process
    with limits(max_file_rows=2**40):      # for one block
        ...

The number of reports an aggregate may summarize is not configurable: :data:`MAX_REPORTS`
(``2**62``) keeps every int64 sum of two valid statistics exact.

Writing files
-------------
Every writer of the package (:class:`~sklearn_ldp.deploy.io.ReportWriter`, ``LDPReports.save``,
``AggregatedReports.save``, a file :class:`~sklearn_ldp.PrivacyLedger`) goes through the
helpers at the end of this module: :func:`writer_lock` (one writer per path: an
``fcntl.flock`` on the hidden sidecar ``.<name>.lock``, refused with
:class:`FileLockedError` when held) and :func:`atomic_write` (a hidden temporary file in the
same directory, ``fsync``, rename onto the target, ``fsync`` of the directory). Readers
refuse files without a checksum unless the caller passes ``allow_unverified=True``
(:class:`UnverifiedFileWarning`).
"""

import contextlib
import errno
import os
import tempfile
import threading
import time

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None
    import msvcrt

# Reports one aggregate may summarize: any two counts <= 2**62 add up without int64 overflow.
MAX_REPORTS = 2**62

DEFAULT_LIMITS = {
    "max_cells": 2**24,
    "max_matrix_entries": 2**27,
    "max_array_bytes": 2**32,
    "max_header_bytes": 2**30,
    "max_file_rows": 2**36,
    # A Kronecker block costs about 5 microseconds per factor to build: 2**20 factors take
    # seconds, where 20 binary columns' 8-way marginals (2.5 million factors) took minutes.
    "max_workload_terms": 2**20,
}

# Where the error messages send users who need a larger cap (one place to change it).
SETTER = "sklearn_ldp.set_limits"

_LIMITS = dict(DEFAULT_LIMITS)
_LOCK = threading.Lock()


class UnverifiedFileWarning(UserWarning):
    """A file without a checksum was read unverified, because the caller opted in.

    Files without a checksum (written by an earlier sklearn_ldp, report files from other
    systems, or current files stripped of their checksum) are refused with a ValueError
    naming the file, unless the loader is called with ``allow_unverified=True``: the file
    is then read and this warning says that its content could not be checked against
    modification or truncation; saving it again with this version adds a checksum. The
    loaders: :func:`sklearn_ldp.deploy.io.read_reports`,
    :func:`sklearn_ldp.deploy.io.aggregate_files`,
    :func:`sklearn_ldp.deploy.io.iter_report_chunks`, :meth:`sklearn_ldp.LDPReports.load`,
    :meth:`sklearn_ldp.AggregatedReports.load` and :meth:`sklearn_ldp.PrivacyLedger.open`.

    See Also
    --------
    sklearn_ldp.LDPReports.load : Loads saved reports, verifying their checksum.
    sklearn_ldp.deploy.io.read_reports : Reads report files, verifying their checksum.
    sklearn_ldp.PrivacyLedger.open : Opens a ledger file, verifying its checksum.

    Examples
    --------
    >>> import os, tempfile, warnings
    >>> import numpy as np
    >>> from sklearn_ldp import LDPReports
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> path = os.path.join(tempfile.mkdtemp(), "old.npz")
    >>> header = ('{"format": "sklearn_ldp", "kind": "LDPReports", "file_version": 2, '
    ...           '"mechanism": ' + RandomizedResponse(3, 1.0).to_json() + ', '
    ...           '"categories": null, "workload": null}')
    >>> with open(path, "wb") as file:  # a file of an earlier version: no checksum
    ...     np.savez(file, reports=np.array([0, 2], np.uint8), header=np.array(header))
    >>> LDPReports.load(path)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ...old.npz: file version 2 carries no checksum ...
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     LDPReports.load(path, allow_unverified=True).reports.tolist()
    [0, 2]
    >>> caught[0].category.__name__
    'UnverifiedFileWarning'
    """


def get_limits():
    """The current caps, as a new dict.

    Returns
    -------
    dict of str to int
        The caps ``max_cells``, ``max_matrix_entries``, ``max_array_bytes``,
        ``max_header_bytes``, ``max_file_rows`` and ``max_workload_terms`` (changing the
        dict changes no cap).

    See Also
    --------
    set_limits : Change caps for the whole process.
    limits : Change caps inside a ``with`` block.

    Examples
    --------
    >>> get_limits()["max_cells"] == 2**24
    True
    """
    with _LOCK:
        return dict(_LIMITS)


def set_limits(**changes):
    """Change caps for the whole process; returns their previous values.

    Each value is an integer >= 1; unknown names are a ValueError (a typo must not leave
    the default in place silently).

    Parameters
    ----------
    **changes : int
        New values of caps by name: ``max_cells``, ``max_matrix_entries``,
        ``max_array_bytes``, ``max_header_bytes``, ``max_file_rows``,
        ``max_workload_terms``.

    Returns
    -------
    dict of str to int
        The previous values of the changed caps (``set_limits(**previous)`` restores them).

    Raises
    ------
    ValueError
        If a name is unknown or a value is not an integer >= 1 (no cap is changed then).

    See Also
    --------
    get_limits : The current caps.
    limits : Change caps inside a ``with`` block only.

    Examples
    --------
    >>> previous = set_limits(max_cells=2**26)
    >>> get_limits()["max_cells"] == 2**26
    True
    >>> _ = set_limits(**previous)
    """
    unknown = sorted(set(changes) - set(DEFAULT_LIMITS))
    if unknown:
        raise ValueError(f"unknown limits {unknown}; the limits are {sorted(DEFAULT_LIMITS)}.")
    for name, value in changes.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1, got {value!r}.")
    with _LOCK:
        previous = {name: _LIMITS[name] for name in changes}
        _LIMITS.update(changes)
    return previous


@contextlib.contextmanager
def limits(**changes):
    """Change caps inside a ``with`` block, restoring them on exit.

    The caps are process-wide: other threads see the change while the block runs.

    Parameters
    ----------
    **changes : int
        New values of caps by name, as for :func:`set_limits`.

    Yields
    ------
    None
        The block runs with the new caps; the previous values are restored on exit, also
        when the block raises.

    Raises
    ------
    ValueError
        If a name is unknown or a value is not an integer >= 1.

    See Also
    --------
    set_limits : Change caps for the rest of the process.
    get_limits : The current caps.

    Examples
    --------
    >>> with limits(max_file_rows=10):
    ...     get_limits()["max_file_rows"]
    10
    """
    previous = set_limits(**changes)
    try:
        yield
    finally:
        set_limits(**previous)


def _power(value):
    """``value`` with its power of two when it is one, for readable messages."""
    exponent = value.bit_length() - 1
    return f"{value} (2^{exponent})" if value == 1 << exponent else str(value)


def check_size(value, field, limit, where=None):
    """``value`` if it is an integer in ``[1, cap]`` (``cap`` the limit named ``limit``).

    Else a ValueError naming ``where``, the ``field``, the cap and how to raise it. Called
    before anything of that size is allocated.

    Examples
    --------
    >>> check_size(12, "n_inputs", "max_cells")
    12
    >>> check_size(10**12, "n_inputs", "max_cells")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: n_inputs = 1000000000000 exceeds the limit max_cells = 16777216 (2^24); ...
    """
    prefix = f"{where}: " if where else ""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{prefix}{field} must be an integer >= 1, got {value!r}.")
    cap = get_limits()[limit]
    if value > cap:
        raise ValueError(
            f"{prefix}{field} = {value} exceeds the limit {limit} = {_power(cap)}; nothing was "
            f"allocated. If the source is trusted, raise it with {SETTER}({limit}=...)."
        )
    return value


def checksum_mismatch(where, detail=""):
    """The ValueError of content that does not match its checksum."""
    detail = f" ({detail})" if detail else ""
    return ValueError(f"{where}: checksum mismatch: the file was modified or truncated{detail}.")


# ---------------------------------------------------------------------- mechanism specs
_MARGINAL_KINDS = ("inp_rr", "inp_ps", "inp_ht", "inp_em", "marg_rr", "marg_ps", "marg_ht")
# Kinds that never allocate one entry per cell of the joint domain (measured: a 10^9-cell
# domain collects and aggregates; inp_rr / inp_ps build a full-domain oracle and do not):
# their joint domain is bounded only by int64 flat cell indices, not by max_cells. The
# tables they do build are capped (max_matrix_entries, see _marginal_sizes).
PRODUCT_FREE_KINDS = ("inp_ht", "inp_em", "marg_rr", "marg_ps", "marg_ht", "columns",
                      "multi_attribute")
# The largest joint domain of those kinds: flat cell indices are int64.
MAX_FLAT_CELLS = 2**62


def _matrix_size(matrix, field, kind):
    """``(rows, columns)`` of a nested-list matrix of a spec, checked against the caps.

    Only the outer list and its first row are measured: numpy refuses ragged rows later,
    and nothing larger than ``rows x columns`` is built from them.
    """
    if not isinstance(matrix, list) or not matrix or not isinstance(matrix[0], list):
        raise ValueError(f"the {kind!r} specification: {field} must be a non-empty list of rows "
                         f"(lists of numbers), got {type(matrix).__name__}.")
    rows, columns = len(matrix), len(matrix[0])
    check_size(columns, f"the columns of {field}", "max_cells", f"the {kind!r} specification")
    check_size(rows * columns, f"the entries of {field} ({rows} x {columns})",
               "max_matrix_entries", f"the {kind!r} specification")
    return rows, columns


def _marginal_sizes(shape, max_order, kind):
    """Refuse a marginal spec whose tables (over every ``max_order``-set) exceed the caps.

    The running product stops at the first value past the cap, so a shape of a million
    attributes costs nothing; the tables' total is the elementary symmetric polynomial
    ``e_k`` of the (padded) category counts, computed exactly with Python integers.
    """
    where = f"the {kind!r} specification"
    product_free = kind in PRODUCT_FREE_KINDS
    cap = MAX_FLAT_CELLS if product_free else get_limits()["max_cells"]
    if not isinstance(shape, list) or not shape:
        raise ValueError(f"{where}: params.shape must be a non-empty list of category counts.")
    cells = 1
    for position, size in enumerate(shape):
        if isinstance(size, bool) or not isinstance(size, int):
            raise ValueError(f"{where}: params.shape[{position}] must be an integer, got "
                             f"{size!r}.")
        if size < 2:
            return  # refused by the mechanism, before anything is allocated
        cells *= size
        if cells > cap:
            if product_free:
                raise ValueError(f"{where}: the product of params.shape (so far) = {cells} "
                                 "exceeds 2^62 (flat cell indices are int64).")
            check_size(cells, "the product of params.shape (so far)", "max_cells", where)
    if isinstance(max_order, bool) or not isinstance(max_order, int) \
            or not 1 <= max_order <= len(shape):
        return  # refused by the mechanism
    padded = [1 << (size - 1).bit_length() for size in shape]  # Hadamard kinds pad to 2^b
    sums = [1] + [0] * max_order
    for size in padded:
        for order in range(max_order, 0, -1):
            sums[order] += sums[order - 1] * size
    check_size(2 * sums[max_order], f"the statistic of every {max_order}-attribute table "
               "(outputs of all tables)", "max_matrix_entries", where)


def check_mechanism_spec_sizes(spec):
    """Refuse a mechanism spec (a dict) whose declared sizes exceed the caps.

    Run by ``mechanism_from_dict`` before any constructor, so a spec declaring
    ``n_inputs = 10**12`` costs a comparison, not an allocation. Checked: ``n_inputs``
    (``max_cells``); a factorization's ``Q`` and a Gaussian workload ``A``, or the identity a
    Gaussian spec without one implies (``max_matrix_entries``); the parameters that size a
    mechanism (``n_buckets``, ``subset_size``, ``branching``: ``max_cells``); the marginal
    tables of ``shape`` and ``max_order``. Values of the wrong type are left to the
    constructors, which refuse them.

    Examples
    --------
    >>> check_mechanism_spec_sizes({"mechanism": "randomized_response", "n_inputs": 4})
    >>> check_mechanism_spec_sizes({"mechanism": "oue", "n_inputs": 10**12})
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the 'oue' specification: n_inputs = 1000000000000 exceeds the limit ...
    """
    kind = spec.get("mechanism")
    where = f"the {kind!r} specification"
    params = spec.get("params")
    if params is None:
        params = {}
    if not isinstance(params, dict):
        raise ValueError(f"{where}: params must be a JSON object, got {type(params).__name__}.")
    if kind == "factorization":
        field = "Q" if "Q" in spec else "table"  # version 1 carried a float "Q"
        _matrix_size(spec.get(field), field, kind)
        return
    if "n_inputs" not in spec:
        raise ValueError(f"{where} has no field 'n_inputs'.")
    if kind in PRODUCT_FREE_KINDS:  # never allocated: only int64 indices bound it
        n_inputs = spec["n_inputs"]
        if isinstance(n_inputs, int) and not isinstance(n_inputs, bool) \
                and n_inputs > MAX_FLAT_CELLS:
            raise ValueError(f"{where}: n_inputs = {n_inputs} exceeds 2^62 (flat cell indices "
                             "are int64).")
    else:
        n_inputs = check_size(spec["n_inputs"], "n_inputs", "max_cells", where)
    if kind in ("gaussian", "gaussian_pure"):
        workload = params.get("workload")
        if workload is None:  # the identity: n x n
            check_size(n_inputs * n_inputs, f"the entries of the implied {n_inputs} x "
                       f"{n_inputs} identity workload", "max_matrix_entries", where)
        else:
            _matrix_size(workload, "params.workload", kind)
    for name in ("n_buckets", "subset_size", "branching"):
        value = params.get(name)
        if isinstance(value, int) and not isinstance(value, bool):
            check_size(value, f"params.{name}", "max_cells", where)
    if kind in _MARGINAL_KINDS:
        _marginal_sizes(params.get("shape"), params.get("max_order"), kind)


def fsync_directory(directory):
    """Make a rename into ``directory`` durable (POSIX; shared by the report writer and the
    ledger); a no-op where directories cannot be opened."""
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:  # pragma: no cover - Windows
        return
    try:
        os.fsync(descriptor)
    except OSError:  # pragma: no cover - file systems without directory fsync
        pass
    finally:
        os.close(descriptor)


# ---------------------------------------------------------------------- one writer, atomic
class FileLockedError(BlockingIOError):
    """Another writer (this process or another one) holds the lock of the file.

    Raised by :class:`sklearn_ldp.deploy.io.ReportWriter`, :meth:`sklearn_ldp.LDPReports.save`,
    :meth:`sklearn_ldp.AggregatedReports.save` and a file :class:`sklearn_ldp.PrivacyLedger`
    instead of letting two writers replace each other's file; nothing was written. The
    message names the file and its lock file. A subclass of ``BlockingIOError`` (an
    ``OSError``): the file system, not the caller's input, is busy. Public as
    ``sklearn_ldp.FileLockedError``.

    See Also
    --------
    sklearn_ldp.deploy.io.ReportWriter : The streaming writer that takes the lock.
    sklearn_ldp.UnverifiedFileWarning : The other file-level signal of the package.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "reports.csv")
    >>> with writer_lock(path):
    ...     try:
    ...         with writer_lock(path):
    ...             pass
    ...     except FileLockedError as error:
    ...         print("refused:", "another writer" in str(error))
    refused: True
    """


def lock_path(path):
    """The lock file of ``path``: ``.<name>.lock``, hidden, in the same directory.

    A separate file rather than ``path`` itself: ``path`` is *replaced* by every atomic save
    (a lock on the old inode would not exclude a writer that opens the new one), and it may
    not exist yet (creating it to lock it would put an empty file where a reader expects a
    complete one). Hidden, with a suffix no reader accepts: directory and glob readers never
    take it for a report file.

    Examples
    --------
    >>> lock_path("/data/part-0.csv")
    '/data/.part-0.csv.lock'
    """
    directory, name = os.path.split(os.path.abspath(os.fspath(path)))
    return os.path.join(directory, f".{name}.lock")


def _try_lock(descriptor):
    """Take the exclusive lock of an open file without waiting; False if it is held."""
    try:
        if fcntl is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:  # pragma: no cover - Windows
            msvcrt.locking(descriptor, msvcrt.LK_NBLCK, 1)
    except (BlockingIOError, PermissionError):
        return False
    except OSError as exc:  # EAGAIN / EACCES from some file systems
        if exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise
    return True


class _HeldLock:
    """An acquired lock file: release it once (unlink while held, then close)."""

    def __init__(self, descriptor, path):
        self.descriptor, self.path = descriptor, path
        self.pid = os.getpid()

    def _still_ours(self):
        """Whether the lock file at ``path`` is the inode this object locked."""
        try:
            current, mine = os.stat(self.path), os.fstat(self.descriptor)
        except OSError:
            return False
        return (current.st_ino, current.st_dev) == (mine.st_ino, mine.st_dev)

    def release(self):
        if self.descriptor is None:
            return
        # Unlinked while still held, so that no one locks a name nobody will check again;
        # an acquirer that opened this inode before the unlink sees that it is gone and
        # retries on a fresh file (see acquire_lock). Only by the process that locked it
        # (a forked copy of this object must not remove the lock of a later holder) and
        # only if the name is still this inode.
        if os.getpid() == self.pid and self._still_ours():
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        descriptor, self.descriptor = self.descriptor, None
        os.close(descriptor)  # releases the flock (the OS does the same if we die)

    def __del__(self):  # a writer dropped without close must not keep the path locked
        with contextlib.suppress(Exception):
            self.release()


def acquire_lock(path, timeout=0.0, what="file"):
    """Take the exclusive OS lock of ``path`` (its :func:`lock_path`); a held lock object.

    ``fcntl.flock`` on the lock file, never blocking: with ``timeout=0`` a lock held by
    anyone else (another process, or another writer of this process) is refused at once
    with :class:`FileLockedError`; with ``timeout > 0`` it is retried every few
    milliseconds for that many seconds first (the ledger's short transactions). The OS
    releases a flock when its holder dies, even by SIGKILL, so a killed writer never
    blocks the next one; the lock file it leaves is reused.

    Parameters
    ----------
    path : str or path-like
        The file to write (it need not exist).
    timeout : float, default=0.0
        Seconds to keep retrying a held lock.
    what : str, default="file"
        What ``path`` is, for the error message.

    Returns
    -------
    object
        Call its ``release()`` to unlock (idempotent).

    Raises
    ------
    FileLockedError
        If another writer holds the lock past ``timeout``.
    """
    path = os.fspath(path)
    name = lock_path(path)
    deadline = time.monotonic() + timeout
    while True:
        descriptor = os.open(name, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            if _try_lock(descriptor):
                # The holder before us unlinks the file on release: a lock on an inode
                # that is no longer (or not yet) at ``name`` excludes no one. Retry then.
                try:
                    current = os.stat(name)
                except FileNotFoundError:
                    current = None
                mine = os.fstat(descriptor)
                if current is not None and (current.st_ino, current.st_dev) == (
                        mine.st_ino, mine.st_dev):
                    return _HeldLock(descriptor, name)
                os.close(descriptor)
                continue
        except BaseException:
            os.close(descriptor)
            raise
        os.close(descriptor)
        if time.monotonic() >= deadline:
            waited = f" for {timeout:g} s" if timeout else ""
            raise FileLockedError(
                errno.EWOULDBLOCK,
                f"{path}: another writer holds this {what}'s lock ({name}){waited}; "
                "refused, nothing was written (one writer at a time: wait for the other "
                "writer to finish, or write to another path).")
        time.sleep(0.005)


@contextlib.contextmanager
def writer_lock(path, timeout=0.0, what="file"):
    """Hold :func:`acquire_lock` of ``path`` for the ``with`` block.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "aggregate.npz")
    >>> with writer_lock(path):
    ...     os.path.exists(lock_path(path))
    True
    >>> os.path.exists(lock_path(path))
    False
    """
    held = acquire_lock(path, timeout, what)
    try:
        yield
    finally:
        held.release()


def temporary_sibling(path):
    """``(binary file, name)`` of a new hidden temporary file next to ``path``.

    ``.<name>.<random>.tmp``: in the same directory (so that the rename onto ``path`` is
    atomic: same file system), hidden and with a suffix no reader accepts.
    """
    directory, name = os.path.split(os.path.abspath(os.fspath(path)))
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{name}.", suffix=".tmp")
    return os.fdopen(descriptor, "wb"), temporary


def commit_temporary(handle, temporary, path):
    """Flush ``handle`` (the open file of ``temporary``) to disk, close it, rename it onto
    ``path`` and flush the directory: ``path`` holds the old or the new content, never a mix.

    On any failure the temporary file is removed and ``path`` is left as it was.
    """
    try:
        handle.flush()
        os.fsync(handle.fileno())
        handle.close()
        os.replace(temporary, os.fspath(path))
    except BaseException:
        discard_temporary(handle, temporary)
        raise
    fsync_directory(os.path.dirname(os.path.abspath(os.fspath(path))))


def discard_temporary(handle, temporary):
    """Close and remove an uncommitted temporary file (after an error)."""
    if handle is not None:
        with contextlib.suppress(Exception):
            handle.close()
    with contextlib.suppress(FileNotFoundError):
        os.remove(temporary)


@contextlib.contextmanager
def atomic_write(path):
    """A binary file whose content replaces ``path`` atomically when the block succeeds.

    Written to :func:`temporary_sibling`, then :func:`commit_temporary` (fsync, rename,
    fsync of the directory). If the block raises, or the process is killed, ``path`` keeps
    its previous content. Take :func:`writer_lock` around it to exclude other writers.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "data.bin")
    >>> with atomic_write(path) as handle:
    ...     _ = handle.write(b"new")
    >>> open(path, "rb").read()
    b'new'
    """
    handle, temporary = temporary_sibling(path)
    try:
        yield handle
    except BaseException:
        discard_temporary(handle, temporary)
        raise
    commit_temporary(handle, temporary, path)
