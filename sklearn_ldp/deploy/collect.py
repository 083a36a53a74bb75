"""Server side of the standard-library client: reports received from devices -> LDPReports.

A device privatizes its record with the client package ``sklearn_ldp/deploy/client/`` and
sends one report in plain JSON types (see ``docs/client.md``): an integer, a list of integers
(packed bits, ``[seed, bucket]``, ``[level, ...]``), a list of floats, or ``null`` (the "bottom" of
``gaussian_pure``). :func:`reports_from_client` stacks the reports of many devices into
exactly the array the mechanism's own ``randomize`` returns (same dtype and row shape), checks
them, and wraps them in :class:`~sklearn_ldp.reports.LDPReports` for any estimator.
"""

import json
import math

import numpy as np

from .._logging import get_logger
from ..mechanisms import Mechanism
from ..mechanisms._base.specs import load_mechanism_json
from ..mechanisms.heavy_hitters.prefix import LENGTH_ROUND_FIRST, PrefixHeavyHitters
from ..mechanisms.heavy_hitters.sketches import SketchFrequencyOracle
from ..mechanisms.longitudinal.mechanisms import DBitFlipPM, LongitudinalMechanism, OneBitMeanPM
from ..mechanisms.multi_attribute.columns import (
    SAMPLED_MEAN_KIND,
    _sampled_mean_from_spec,
    column_part,
)
from ..mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
from ..mechanisms.numeric.means import MeanMechanism, SampledMeanMechanism
from ..mechanisms.numeric.registry import NUMERIC_CLASSES, numeric_mechanism_from_dict
from ..mechanisms.numeric.square_wave import SquareWaveMechanism
from ..reports import LDPReports

INVALID_POLICIES = ("raise", "drop")
# The math-layer kinds whose client reports stack_client_reports reads (not Mechanism
# classes: their reports are not LDPReports).
MATH_LAYER_KINDS = (*NUMERIC_CLASSES, SAMPLED_MEAN_KIND, MultiAttributeMechanism.kind,
                    PrefixHeavyHitters.kind, SketchFrequencyOracle.kind,
                    LongitudinalMechanism.kind, DBitFlipPM.kind, OneBitMeanPM.kind)
_MATH_LAYER_CLASSES = (MeanMechanism, SquareWaveMechanism, SampledMeanMechanism,
                       MultiAttributeMechanism, PrefixHeavyHitters, SketchFrequencyOracle,
                       LongitudinalMechanism, DBitFlipPM, OneBitMeanPM)

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
    return _bad_report(kind, index, value, _expected_format(template))


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
    return np.array([min(row) >= limits.min and max(row) <= limits.max for row in rows],
                    dtype=bool)


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
    """Stack reports sent by ``sklearn_ldp.deploy.client`` into :class:`LDPReports`.

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
        The server's mechanism, or the JSON it shipped to the clients (rebuilt by
        :func:`~sklearn_ldp.mechanisms._base.specs.load_mechanism_json`, so ``"columns"`` records of
        :class:`~sklearn_ldp.LDPEncoder` work too). The math-layer kinds (numeric,
        multi-attribute, heavy hitters, longitudinal) go through :func:`stack_client_reports`.
    domain, workload : optional
        Passed to :class:`LDPReports`.
    invalid : {"raise", "drop"}, default="raise"
        ``"raise"``: a ValueError names the mechanism, the first invalid report and its
        value. ``"drop"``: malformed reports and reports outside the valid set are removed,
        counted in the result's ``n_invalid`` attribute (estimators fitted on it record it as
        ``n_invalid_reports_``) and logged as a warning on the ``sklearn_ldp.deploy.collect``
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
    sklearn_ldp.deploy.client.Randomizer : The client that produces the reports.
    stack_client_reports : The same for the math-layer kinds.
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
    if isinstance(mechanism, (str, bytes)):
        if _math_layer_kind(mechanism) is not None:
            raise ValueError(f"the {_math_layer_kind(mechanism)!r} mechanism's reports are not "
                             "LDPReports: stack them with stack_client_reports.")
        mechanism = load_mechanism_json(mechanism)  # any kind, "columns" records too
    if isinstance(mechanism, _MATH_LAYER_CLASSES):
        raise ValueError(f"the {mechanism.kind!r} mechanism's reports are not LDPReports: "
                         "stack them with stack_client_reports.")
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
            if low < limits.min or high > limits.max:
                fits = _in_dtype_range(objects, template)
                row = int(np.flatnonzero(~fits)[0])
                raise ValueError(
                    f"reports of the {kind!r} mechanism hold integers in [{limits.min}, "
                    f"{limits.max}]; "
                    f"got values from {low} to {high} (report {row} is {values[row]!r}): they "
                    "come from another mechanism or domain, or were crafted.")
        array = objects.astype(template.dtype)
    return _wrap(array, mechanism, domain, workload, invalid, n_dropped, n_received)


# ---------------------------------------------------------------------- math-layer kinds
def _math_layer_kind(text):
    """The kind of a JSON specification if it is a math-layer kind, else None."""
    try:
        spec = json.loads(text)
    except (ValueError, RecursionError):
        return None
    kind = spec.get("mechanism") if isinstance(spec, dict) else None
    return kind if kind in MATH_LAYER_KINDS else None


def _math_layer_mechanism(mechanism):
    """The server-side object of a math-layer kind, from itself, its dict or its JSON."""
    if isinstance(mechanism, _MATH_LAYER_CLASSES):
        return mechanism
    if isinstance(mechanism, (str, bytes)):
        try:
            mechanism = json.loads(mechanism)
        except (ValueError, RecursionError) as exc:
            raise ValueError(f"the mechanism specification is not valid JSON: {exc}") from None
    kind = mechanism.get("mechanism") if isinstance(mechanism, dict) else None
    if kind in NUMERIC_CLASSES:
        return numeric_mechanism_from_dict(mechanism)
    if kind == SAMPLED_MEAN_KIND:
        return _sampled_mean_from_spec(mechanism)
    for cls in (MultiAttributeMechanism, PrefixHeavyHitters, SketchFrequencyOracle,
                LongitudinalMechanism, DBitFlipPM, OneBitMeanPM):
        if kind == cls.kind:
            return cls.from_dict(mechanism)
    raise ValueError(f"stack_client_reports reads the math-layer kinds {MATH_LAYER_KINDS}; got "
                     f"{str(mechanism)[:80]!r} (registered mechanisms and 'columns' records go "
                     "through reports_from_client).")


def _length_round_first(mechanism):
    """The first round number of a string length round's rows when ``mechanism`` is the
    specification :func:`~sklearn_ldp.mechanisms.heavy_hitters.prefix.length_round_spec`
    returns (as a dict or JSON), else 0. Its devices number their rows from there, so that
    they never collide with the prefix rounds' rows."""
    if isinstance(mechanism, (str, bytes)):
        try:
            mechanism = json.loads(mechanism)
        except (ValueError, RecursionError):
            return 0  # _math_layer_mechanism names the bad JSON
    round_spec = mechanism.get("length_round") if isinstance(mechanism, dict) else None
    if round_spec is None:
        return 0
    if not isinstance(round_spec, dict) or round_spec.get("first_round") != LENGTH_ROUND_FIRST:
        raise ValueError(f"length_round must be {{'first_round': {LENGTH_ROUND_FIRST}, "
                         f"'max_string_bytes': ...}}, got {str(round_spec)[:80]!r}.")
    return LENGTH_ROUND_FIRST


def _bad_report(kind, index, value, expected):
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return ValueError(f"report {index} ({text}) is not a report of the {kind!r} mechanism: each "
                      f"report is {expected}.")


def _stack(values, kind, width, floating, top, expected):
    """The reports as an array: ``(N,)`` when ``width`` is None (one number each), else
    ``(N, width)``; float64 (finite numbers) or uint64 (integers in ``[0, top]``). A
    ValueError names the first malformed report."""
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ValueError(f"values must be a sequence of reports (one per device), got "
                         f"{type(values).__name__}.")
    check = _is_number if floating else _is_integer
    rows = []
    for index, value in enumerate(values):
        if width is None:
            entries = [value]
        else:
            if isinstance(value, (bytes, bytearray)):
                value = list(value)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            if not isinstance(value, (list, tuple)) or len(value) != width:
                raise _bad_report(kind, index, value, expected)
            entries = value
        for entry in entries:
            if not check(entry) or (floating and not math.isfinite(entry)) or (
                    not floating and not 0 <= entry <= top):
                raise _bad_report(kind, index, value, expected)
        rows.append(entries)
    array = np.array(rows, dtype=np.float64 if floating else np.uint64).reshape(
        len(rows), 1 if width is None else width)
    return array[:, 0] if width is None else array


def _first_invalid(valid, kind, values, rule):
    valid = np.asarray(valid, dtype=bool)
    if not valid.all():
        index = int(np.argmin(valid))
        raise _bad_report(kind, index, values[index], rule)


def stack_client_reports(values, mechanism):
    """Stack reports of the math-layer kinds sent by ``sklearn_ldp.deploy.client`` into what the
    mechanism's own aggregation reads.

    The kinds of :mod:`sklearn_ldp.mechanisms.numeric`, ``multi_attribute``,
    ``heavy_hitters`` and ``longitudinal`` are not :class:`~sklearn_ldp.mechanisms.Mechanism`
    classes, so their reports are not :class:`~sklearn_ldp.LDPReports`: this returns the
    array (or tuple of arrays, or dict) that their ``randomize`` returns for many users.
    Every report is checked (type, length, range, and the mechanism's valid-report set); the
    first one at fault is a ValueError naming its index. Nothing is dropped.

    Parameters
    ----------
    values : sequence
        One report per device, as ``Randomizer.privatize`` returned it (after a JSON round
        trip). Layouts: ``duchi`` an integer 0/1; ``piecewise``, ``hybrid``,
        ``square_wave`` a number; ``sampled_mean`` ``[a_1..a_k, y_1..y_k]``;
        ``multi_attribute`` the row of the server's multi-attribute part (SPL, RS+FD:
        every attribute's report in order; SMP: the attribute, its report, zero padding);
        ``prefix_heavy_hitters`` ``[round, seed, y]``; ``sketch`` ``[j // 256, j % 256,
        packed bytes...]`` (CMS) or ``[j, l, bit]`` (HCMS); ``longitudinal`` a value
        (``l_grr``) or packed bytes; ``dbitflip_pm`` ``[b_1..b_d, bit_1..bit_d]``;
        ``1bitmean_pm`` an integer 0 or 1.
    mechanism : object, dict or str
        The server's mechanism, its ``to_dict()`` or the JSON shipped to the clients.

    Returns
    -------
    reports : ndarray, tuple of ndarray or dict
        What ``mechanism.randomize`` returns: duchi uint8 bits; the other numeric kinds
        float64; ``sampled_mean`` ``(attributes, reports)``; ``multi_attribute`` the dict of
        ``randomize``; ``prefix_heavy_hitters`` ``(N, 3)`` uint64; ``sketch`` ``(j, bits)``
        or ``(j, l, bit)``; ``longitudinal`` int64 values or packed uint8 rows;
        ``dbitflip_pm`` ``(buckets, bits)``; ``1bitmean_pm`` uint8 bits.

    Raises
    ------
    ValueError
        A report of the wrong type, length or range, or outside the mechanism's
        valid-report set (the message names the first one).

    See Also
    --------
    reports_from_client : The same for registered mechanisms and ``"columns"`` records.
    sklearn_ldp.deploy.client.Randomizer : The client that produces the reports.

    References
    ----------
    .. [1] N. Wang et al., "Collecting and analyzing multidimensional data with local
       differential privacy", ICDE 2019 (the numeric reports).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.numeric.means import DuchiMechanism
    >>> mechanism = DuchiMechanism(1.0, bounds=(0, 10))
    >>> bits = stack_client_reports([1, 0, 1], mechanism)
    >>> bits.dtype, round(float(mechanism.estimate_mean(mechanism.aggregate(bits))), 3)
    (dtype('uint8'), 8.607)
    """
    first_round = _length_round_first(mechanism)
    mechanism = _math_layer_mechanism(mechanism)
    kind = mechanism.kind
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if isinstance(values, (str, bytes, dict)) or not hasattr(values, "__len__"):
        raise ValueError(f"values must be a sequence of reports (one per device), got "
                         f"{type(values).__name__}.")
    values = list(values)
    if isinstance(mechanism, OneBitMeanPM):
        return _stack(values, kind, None, False, 1, "an integer 0 or 1").astype(np.uint8)
    if isinstance(mechanism, MeanMechanism | SquareWaveMechanism):
        duchi = kind == "duchi"
        expected = "an integer 0 or 1" if duchi else "one number"
        array = _stack(values, kind, None, not duchi, 1, expected)
        array = array.astype(np.uint8) if duchi else array
        _first_invalid(mechanism.report_validity(array), kind, values,
                       f"{expected} the randomizer can produce")
        return array
    if isinstance(mechanism, SampledMeanMechanism | MultiAttributeMechanism):
        part = column_part([f"c{j}" for j in range(mechanism.n_attributes)], mechanism)
        floating = part.report_dtype.kind == "f"
        expected = f"a list of {part.width} {'numbers' if floating else 'integers'}"
        block = _stack(values, kind, part.width, floating, np.iinfo(np.uint64).max, expected)
        block = block.astype(part.report_dtype) if floating else block
        _first_invalid(part.validity(block), kind, values, expected + " (a valid row)")
        if isinstance(mechanism, MultiAttributeMechanism):
            return part._native(block)
        k = mechanism.n_sampled
        attributes = block[:, :k].astype(np.min_scalar_type(mechanism.n_attributes - 1))
        reports = block[:, k:]
        reports = reports.astype(np.uint8) if mechanism.base == "duchi" else \
            reports.astype(np.float64)
        return attributes, reports
    if isinstance(mechanism, PrefixHeavyHitters):
        limit = mechanism.g if mechanism.protocol == "pem" else 2
        last = first_round + mechanism.n_rounds
        rounds = f"round < {last}" if first_round == 0 else f"{first_round} <= round < {last}"
        expected = f"[{rounds}, seed < 2^64, y < {limit}]"
        array = _stack(values, kind, 3, False, 2**64 - 1, expected)
        if array.size:
            _first_invalid((array[:, 0] >= first_round) & (array[:, 0] < last)
                           & (array[:, 2] < limit), kind, values, expected)
        return array
    if isinstance(mechanism, SketchFrequencyOracle):
        k, m = mechanism.n_hashes, mechanism.width
        if mechanism.hadamard:
            expected = f"[j < {k}, l < {m}, bit 0 or 1]"
            array = _stack(values, kind, 3, False, 2**32 - 1, expected)
            if array.size:
                _first_invalid((array[:, 0] < k) & (array[:, 1] < m) & (array[:, 2] <= 1),
                               kind, values, expected)
            return (array[:, 0].astype(np.uint32), array[:, 1].astype(np.uint32),
                    array[:, 2].astype(np.uint8))
        n_bytes = (m + 7) // 8
        expected = (f"[j // 256, j % 256 (j < {k}), then {n_bytes} bytes of the packed {m}-bit "
                    "vector]")
        array = _stack(values, kind, 2 + n_bytes, False, 255, expected)
        j = array[:, 0] * np.uint64(256) + array[:, 1]
        valid = j < k
        if m % 8:
            valid &= (array[:, -1] >> np.uint64(m % 8)) == 0
        _first_invalid(valid, kind, values, expected)
        return j.astype(np.uint32), array[:, 2:].astype(np.uint8)
    if isinstance(mechanism, LongitudinalMechanism):
        k = mechanism.n_cells
        if not mechanism.unary:
            expected = f"an integer in [0, {k})"
            array = _stack(values, kind, None, False, 2**63 - 1, expected)
            _first_invalid(array < k, kind, values, expected)
            return array.astype(np.int64)
        n_bytes = (k + 7) // 8
        expected = f"a list of {n_bytes} bytes (the packed {k}-bit vector)"
        array = _stack(values, kind, n_bytes, False, 255, expected)
        if k % 8:
            _first_invalid((array[:, -1] >> np.uint64(k % 8)) == 0, kind, values,
                           expected + " with no bit past the last value")
        return array.astype(np.uint8)
    # DBitFlipPM
    k, d = mechanism.n_cells, mechanism.n_sampled
    expected = f"[{d} distinct buckets < {k}, then {d} bits]"
    array = _stack(values, kind, 2 * d, False, 2**63 - 1, expected)
    buckets, bits = array[:, :d].astype(np.int64), array[:, d:]
    valid = (buckets < k).all(axis=1) & (bits <= 1).all(axis=1)
    if d > 1:
        valid &= (np.diff(np.sort(buckets, axis=1), axis=1) != 0).all(axis=1)
    _first_invalid(valid, kind, values, expected)
    return buckets, bits.astype(np.uint8)
