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
"""

import contextlib
import os
import threading

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
    """A file written by an earlier sklearn_ldp (without a checksum) was read unverified.

    Its content cannot be checked against modification or truncation; saving it again with
    this version adds a checksum. Emitted when loading report files
    (:func:`sklearn_ldp.io.read_reports`), saved reports and aggregates
    (:meth:`sklearn_ldp.LDPReports.load`, :meth:`sklearn_ldp.AggregatedReports.load`) and
    privacy ledgers (:meth:`sklearn_ldp.PrivacyLedger.open`) of earlier versions.

    See Also
    --------
    sklearn_ldp.LDPReports.load : Loads saved reports, verifying their checksum.
    sklearn_ldp.io.read_reports : Reads report files, verifying their checksum.
    sklearn_ldp.PrivacyLedger.open : Opens a ledger file, verifying its checksum.

    Examples
    --------
    Refuse unverified files instead of reading them with a warning:

    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", UnverifiedFileWarning)
    ...     issubclass(UnverifiedFileWarning, UserWarning)
    True
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
        if cells > get_limits()["max_cells"]:
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
        _matrix_size(spec.get("Q"), "Q", kind)
        return
    if "n_inputs" not in spec:
        raise ValueError(f"{where} has no field 'n_inputs'.")
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
