"""Server side of the standard-library client: reports received from devices -> LDPReports.

A device privatizes its record with ``sklearn_ldp/client.py`` and sends one report in plain
JSON types (see ``docs/client.md``): an integer, a list of integers (packed bits, ``[seed,
bucket]``, ``[level, ...]``), a list of floats, or ``null`` (the "bottom" of
``gaussian_pure``). :func:`reports_from_client` stacks the reports of many devices into
exactly the array the mechanism's own ``randomize`` returns (same dtype and row shape), checks
them, and wraps them in :class:`~sklearn_ldp.reports.LDPReports` for any estimator.
"""

import numpy as np

from ._logging import get_logger
from .mechanisms import Mechanism, mechanism_from_json
from .reports import LDPReports

INVALID_POLICIES = ("raise", "drop")

_logger = get_logger("collect")


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


def _well_formed(value, template, check):
    """Whether one device's report has the row shape of ``template`` and entries of the
    right kind (``check``): what the stacking below needs. Used to drop malformed reports
    one by one under ``invalid="drop"``."""
    if template.ndim == 1:
        return check(value)
    if isinstance(value, (bytes, bytearray)) and template.dtype == np.uint8:
        value = list(value)
    if value is None and np.issubdtype(template.dtype, np.floating):
        return True  # a dropped ("bottom") report of gaussian_pure
    if not isinstance(value, (list, tuple, np.ndarray)) or len(value) != template.shape[1]:
        return False
    return all(check(entry) for entry in (value.tolist() if isinstance(value, np.ndarray)
                                          else value))


def _in_dtype_range(objects, template):
    """Per report (row of ``objects``), whether every entry fits the report dtype."""
    limits = np.iinfo(template.dtype)
    rows = objects.reshape(objects.shape[0], -1).tolist()
    return np.array([min(row) >= 0 and max(row) <= limits.max for row in rows], dtype=bool)


def _wrap(array, mechanism, domain, workload, invalid, n_dropped, n_received):
    """LDPReports of ``array`` (dropping the reports the mechanism refuses under "drop"),
    with ``n_invalid``: how many of the ``n_received`` reports were dropped in all."""
    if invalid == "drop":
        array, refused = mechanism.drop_invalid_reports(array)
        n_dropped += refused
    reports = LDPReports(array, mechanism, domain, workload, n_invalid=n_dropped)
    if n_dropped:
        _logger.warning("reports_from_client: dropped %d of %d reports of the %r mechanism as "
                        "invalid (malformed, or outside its valid-report set).", n_dropped,
                        n_received, mechanism.kind)
    return reports


def reports_from_client(values, mechanism, domain=None, workload=None, invalid="raise"):
    """Stack reports sent by ``sklearn_ldp.client`` into :class:`LDPReports`.

    Reports are untrusted: each must have the layout of the mechanism's reports and lie in
    its valid-report set (:meth:`~sklearn_ldp.mechanisms.Mechanism.report_validity`: the
    outputs the randomizer can produce; for the Gaussian mechanisms, values beyond the noise
    bound that an honest report exceeds with probability below 1e-12). This is the one place
    where invalid reports may be dropped instead of refused.

    Parameters
    ----------
    values : sequence or ndarray
        One report per device, as ``Randomizer.privatize`` returned it (after a JSON round
        trip: lists instead of tuples, ``null`` for a dropped ``gaussian_pure`` report).
        Packed-bit reports may also be ``bytes``. An array with the dtype and row shape of
        the mechanism's reports is taken as it is (no per-report conversion).
    mechanism : Mechanism or str
        The server's mechanism, or the JSON it shipped to the clients.
    domain, workload : optional
        Passed to :class:`LDPReports`.
    invalid : {"raise", "drop"}, default="raise"
        ``"raise"``: a ValueError names the mechanism, the first invalid report and its
        value. ``"drop"``: malformed reports and reports outside the valid set are removed,
        counted in the result's ``n_invalid`` attribute (estimators fitted on it record it as
        ``n_invalid_reports_``) and logged as a warning on the ``sklearn_ldp.collect``
        logger. An array of the wrong layout (not one report at fault) raises either way.

    Returns
    -------
    LDPReports
        The reports as the array ``mechanism.randomize`` would have returned (same dtype and
        row shape), checked by ``mechanism.check_reports``, with ``n_invalid`` (0 under
        ``"raise"``).

    Raises
    ------
    ValueError
        A report of the wrong type or length (the message names the first one), an entry out
        of the report dtype's range, or reports that the mechanism refuses (e.g. a bucket
        outside ``[0, g)``, a level outside the tree, a Gaussian report beyond its bound).

    See Also
    --------
    sklearn_ldp.client.Randomizer : The client that produces the reports.
    sklearn_ldp.LDPEncoder.client_spec : The JSON specification shipped to the clients.
    sklearn_ldp.mechanism_from_json : Rebuilds the mechanism from that specification.
    sklearn_ldp.LDPReports : The container returned.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import OptimizedUnaryEncoding, RandomizedResponse
    >>> mechanism = OptimizedUnaryEncoding(10, 1.0)
    >>> reports = reports_from_client([[5, 2], [0, 1], [128, 0]], mechanism)
    >>> reports.shape, reports.reports.dtype
    ((3, 2), dtype('uint8'))
    >>> kept = reports_from_client([0, 3, 9, "x", 1], RandomizedResponse(4, 1.0),
    ...                            invalid="drop")
    >>> kept.reports.tolist(), kept.n_invalid
    ([0, 3, 1], 2)
    """
    if invalid not in INVALID_POLICIES:
        raise ValueError(f"invalid must be 'raise' (refuse invalid reports) or 'drop' (drop and "
                         f"count them), got {invalid!r}.")
    if isinstance(mechanism, str):
        mechanism = mechanism_from_json(mechanism)
    if not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a Mechanism or its JSON, got "
                         f"{type(mechanism).__name__}.")
    kind = mechanism.kind
    template = report_template(mechanism)
    if (isinstance(values, np.ndarray) and values.dtype == template.dtype
            and values.shape[1:] == template.shape[1:]):
        # Already the mechanism's layout (e.g. read from a columnar file): checked as a whole.
        return _wrap(values, mechanism, domain, workload, invalid, 0, values.shape[0])
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ValueError(f"values must be a sequence of reports (one per device), got "
                         f"{type(values).__name__}.")
    values = list(values)
    n_received = len(values)
    floating = np.issubdtype(template.dtype, np.floating)
    check = _is_number if floating else _is_integer
    n_dropped = 0
    if invalid == "drop":
        kept = [value for value in values if _well_formed(value, template, check)]
        n_dropped, values = len(values) - len(kept), kept
    if not values:
        return _wrap(template, mechanism, domain, workload, invalid, n_dropped, n_received)
    objects = _as_objects(values, template, kind)
    flat = objects.reshape(-1)
    for position, entry in enumerate(flat.tolist()):
        if not check(entry):
            index = position // max(1, int(np.prod(template.shape[1:])))
            raise _malformed(kind, index, values[index], template)
    if floating:
        array = objects.astype(template.dtype)
    else:
        limits = np.iinfo(template.dtype)
        if invalid == "drop":
            fits = _in_dtype_range(objects, template)
            n_dropped += int(fits.shape[0] - np.count_nonzero(fits))
            objects = objects[fits]
            flat = objects.reshape(-1)
        if flat.size:
            low, high = min(flat), max(flat)
            if low < 0 or high > limits.max:
                fits = _in_dtype_range(objects, template)
                row = int(np.flatnonzero(~fits)[0])
                raise ValueError(
                    f"reports of the {kind!r} mechanism hold integers in [0, {limits.max}]; "
                    f"got values from {low} to {high} (report {row} is {values[row]!r}): they "
                    "come from another mechanism or domain, or were crafted.")
        array = objects.astype(template.dtype)
    return _wrap(array, mechanism, domain, workload, invalid, n_dropped, n_received)
