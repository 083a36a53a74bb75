"""Server side of the standard-library client: reports received from devices -> LDPReports.

A device privatizes its record with ``sklearn_ldp/client.py`` and sends one report in plain
JSON types (see ``docs/client.md``): an integer, a list of integers (packed bits, ``[seed,
bucket]``, ``[level, ...]``), a list of floats, or ``null`` (the "bottom" of
``gaussian_pure``). :func:`reports_from_client` stacks the reports of many devices into
exactly the array the mechanism's own ``randomize`` returns (same dtype and row shape), checks
them, and wraps them in :class:`~sklearn_ldp.reports.LDPReports` for any estimator.
"""

import numpy as np

from .mechanisms import Mechanism, mechanism_from_json
from .reports import LDPReports


def report_template(mechanism):
    """An empty array with the dtype and row shape of the mechanism's reports.

    Taken from the mechanism's own ``randomize`` on no users, so every kind (present or
    future) is covered without a table of formats.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import OptimizedLocalHashing
    >>> template = report_template(OptimizedLocalHashing(8, 1.0))
    >>> template.shape, template.dtype
    ((0, 2), dtype('uint64'))
    """
    return mechanism.randomize(np.zeros(0, dtype=np.int64), np.random.default_rng(0))


def _expected_format(template):
    dtype = template.dtype
    if template.ndim == 1:
        return f"one integer in [0, {np.iinfo(dtype).max}]"
    width = template.shape[1]
    if np.issubdtype(dtype, np.floating):
        return f"a list of {width} numbers (or null for a dropped report)"
    return f"a list of {width} integers in [0, {np.iinfo(dtype).max}]"


def _malformed(kind, index, value, template):
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return ValueError(f"report {index} ({text}) is not a report of the {kind!r} mechanism: each "
                      f"report is {_expected_format(template)}.")


def _is_integer(value):
    # bool is an int subclass, but a boolean is never a valid report entry.
    return type(value) is int or isinstance(value, np.integer)


def _is_number(value):
    return _is_integer(value) or type(value) is float or isinstance(value, np.floating)


def _as_objects(values, template, kind):
    """The reports as an object array of shape ``(N,) + row shape``, or a ValueError naming
    the first malformed report."""
    width = template.shape[1:]
    if template.ndim == 2 and template.dtype == np.uint8:
        # Packed bit rows may arrive as bytes (a binary transport) instead of lists.
        values = [list(v) if isinstance(v, (bytes, bytearray)) else v for v in values]
    if template.ndim == 2 and np.issubdtype(template.dtype, np.floating):
        missing = [np.nan] * width[0]
        values = [missing if v is None else v for v in values]
    try:
        objects = np.array(values, dtype=object)
    except ValueError:
        objects = None
    if objects is None or objects.shape != (len(values),) + width:
        for index, value in enumerate(values):
            if template.ndim == 1:
                if isinstance(value, (list, tuple, dict, bytes, bytearray, np.ndarray)):
                    raise _malformed(kind, index, value, template)
            elif not isinstance(value, (list, tuple, np.ndarray)) or len(value) != width[0]:
                raise _malformed(kind, index, value, template)
        raise ValueError(f"the reports of the {kind!r} mechanism cannot be stacked into an "
                         f"array of rows of shape {width}.")
    return objects


def reports_from_client(values, mechanism, domain=None, workload=None):
    """Stack reports sent by ``sklearn_ldp.client`` into :class:`LDPReports`.

    Parameters
    ----------
    values : sequence
        One report per device, as ``Randomizer.privatize`` returned it (after a JSON round
        trip: lists instead of tuples, ``null`` for a dropped ``gaussian_pure`` report).
        Packed-bit reports may also be ``bytes``.
    mechanism : Mechanism or str
        The server's mechanism, or the JSON it shipped to the clients.
    domain, workload : optional
        Passed to :class:`LDPReports`.

    Returns
    -------
    LDPReports
        The reports as the array ``mechanism.randomize`` would have returned (same dtype and
        row shape), checked by ``mechanism.check_reports``.

    Raises
    ------
    ValueError
        A report of the wrong type or length (the message names the first one), an entry out
        of the report dtype's range, or reports that the mechanism refuses (e.g. a bucket
        outside ``[0, g)``, a level outside the tree).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import OptimizedUnaryEncoding
    >>> mechanism = OptimizedUnaryEncoding(10, 1.0)
    >>> reports = reports_from_client([[5, 2], [0, 1], [128, 0]], mechanism)
    >>> reports.shape, reports.reports.dtype
    ((3, 2), dtype('uint8'))
    """
    if isinstance(mechanism, str):
        mechanism = mechanism_from_json(mechanism)
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a Mechanism or its JSON, got "
                         f"{type(mechanism).__name__}.")
    kind = mechanism.kind
    template = report_template(mechanism)
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ValueError(f"values must be a sequence of reports (one per device), got "
                         f"{type(values).__name__}.")
    values = list(values)
    if not values:
        return LDPReports(template, mechanism, domain, workload)
    objects = _as_objects(values, template, kind)
    flat = objects.reshape(-1)
    floating = np.issubdtype(template.dtype, np.floating)
    check = _is_number if floating else _is_integer
    for position, entry in enumerate(flat.tolist()):
        if not check(entry):
            index = position // max(1, int(np.prod(template.shape[1:])))
            raise _malformed(kind, index, values[index], template)
    if floating:
        array = objects.astype(template.dtype)
    else:
        limits = np.iinfo(template.dtype)
        low, high = min(flat), max(flat)
        if low < 0 or high > limits.max:
            raise ValueError(f"reports of the {kind!r} mechanism hold integers in [0, "
                             f"{limits.max}]; got values from {low} to {high}: they come from "
                             "another mechanism or domain.")
        array = objects.astype(template.dtype)
    return LDPReports(array, mechanism, domain, workload)
