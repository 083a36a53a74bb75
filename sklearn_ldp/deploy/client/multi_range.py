"""The ``multi_range`` kind: TDG / HDG records of several numbers for range queries.

The server's :mod:`sklearn_ldp.mechanisms.multi_range.grids`, repeated with the standard
library: a uniform group (``random.randrange``, an exact uniform integer), the record's cell
in that group's grid (the same IEEE double arithmetic as the server), then OLH's ``[seed,
bucket]`` of the cell with the linear hash family and the server's integer weights.
"""

import math
from collections.abc import Mapping
from itertools import combinations

from ._spec import _check_bounds, _check_value, _common, _ValueKind
from .oracles import _make_local_hashing, _olh_buckets

# The server's caps (mechanisms/multi_range/grids.py).
MAX_G1, MAX_G2, MAX_RANGE_ATTRIBUTES = 2**12, 2**8, 64
KIND = "multi_range"


def _grid(value, name, cap):
    if isinstance(value, bool) or not isinstance(value, int) or not 2 <= value <= cap \
            or value & (value - 1):
        raise ValueError(f"params[{name!r}] of the {KIND!r} specification must be a power of "
                         f"two in [2, {cap}], got {value!r}.")
    return value


def _multi_range(spec):
    n_inputs, epsilon, params = _common(spec, ("method", "bounds", "g1", "g2", "columns"))
    method = params.get("method", "hdg")
    if method not in ("hdg", "tdg"):
        raise ValueError(f"params['method'] of the {KIND!r} specification must be 'hdg' or "
                         f"'tdg', got {method!r}.")
    pairs = params.get("bounds")
    if not isinstance(pairs, list) or not 2 <= len(pairs) <= MAX_RANGE_ATTRIBUTES:
        raise ValueError(f"params['bounds'] of the {KIND!r} specification must be a list of 2 "
                         f"to {MAX_RANGE_ATTRIBUTES} pairs, got {str(pairs)[:80]!r}.")
    bounds = [_check_bounds(pair, f"params['bounds'][{j}]", KIND)
              for j, pair in enumerate(pairs)]
    d = len(bounds)
    columns = params.get("columns") or [f"x{i}" for i in range(d)]
    if not isinstance(columns, list) or len(columns) != d or len(set(columns)) != d or any(
            not isinstance(c, str) for c in columns):
        raise ValueError(f"params['columns'] of the {KIND!r} specification must be {d} "
                         f"distinct names, got {str(columns)[:80]!r}.")
    g2 = _grid(params.get("g2", 8), "g2", MAX_G2)
    if method == "tdg":
        if params.get("g1") is not None:
            raise ValueError(f"params['g1'] of a 'tdg' {KIND!r} specification must be null.")
        resolution = g2
    else:
        resolution = _grid(params.get("g1", 8 * g2), "g1", MAX_G1)
        if resolution < g2:
            raise ValueError(f"params['g1'] of the {KIND!r} specification must be at least "
                             f"g2={g2}, got {resolution}.")
    groups = ([(a,) for a in range(d)] if method == "hdg" else []) + list(
        combinations(range(d), 2))
    buckets = _olh_buckets(epsilon, "linear")
    oracle_2d = _make_local_hashing(g2 * g2, epsilon, buckets, "linear")
    oracle_1d = (_make_local_hashing(resolution, epsilon, buckets, "linear")
                 if method == "hdg" else None)
    cells = sum(resolution if len(group) == 1 else g2 * g2 for group in groups)
    if n_inputs != cells:
        raise ValueError(f"n_inputs of the {KIND!r} specification must be {cells} (the cells "
                         f"of its grids), got {n_inputs}.")
    step = resolution // g2

    def codes(record):
        if isinstance(record, Mapping):
            missing = [c for c in columns if c not in record]
            if missing:
                raise ValueError(f"the record has no value of {missing[0]!r} (columns: "
                                 f"{columns}).")
            record = [record[c] for c in columns]
        if not isinstance(record, (list, tuple)) or len(record) != d:
            raise ValueError(f"a {KIND!r} record is a dict of {columns} or a list of {d} "
                             f"numbers, got {record!r}.")
        result = []
        for column, value, (low, high) in zip(columns, record, bounds, strict=True):
            number = _check_value(value, (low, high), f"{column!r}")
            # The server's arithmetic, in its order (floor of (v - lo) * r / (hi - lo)).
            result.append(min(math.floor((number - low) * resolution / (high - low)),
                              resolution - 1))
        return result

    def privatize(value, rng, memo=None):
        code = codes(value)
        group = rng.randrange(len(groups))
        attributes = groups[group]
        if len(attributes) == 1:
            return [group] + oracle_1d(code[attributes[0]], rng)
        a, b = attributes
        return [group] + oracle_2d((code[a] // step) * g2 + code[b] // step, rng)

    return _ValueKind(d, privatize)
