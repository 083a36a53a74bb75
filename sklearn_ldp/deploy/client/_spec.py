"""Reading a specification: format versions, field checks, shared limits, value kinds.

Every kind's builder validates the server's JSON with these checks before it derives any
probability, so a malformed or edited specification is refused with a message naming the field.
"""

import dataclasses
import math
from collections.abc import Mapping

SPEC_VERSION = 1
FACTORIZATION_SPEC_VERSION = 2
# Numeric kinds (numeric.py, _window.py): the spec version they are written in.
NUMERIC_SPEC_VERSION = 2
# Kinds whose specification format has its own version (the others read SPEC_VERSION):
# factorization tables, the numeric grids, and longitudinal specifications, which carry
# their numerators since version 2 (3: one-word permanent GRR, one-block PRF messages).
KIND_SPEC_VERSIONS = {
    "factorization": FACTORIZATION_SPEC_VERSION,
    **dict.fromkeys(("duchi", "piecewise", "hybrid", "square_wave", "sampled_mean"),
                    NUMERIC_SPEC_VERSION),
    "longitudinal": 3,
    # Bassily's Gaussian kinds: lattice points and their exact integers since version 2.
    **dict.fromkeys(("gaussian", "gaussian_pure"), 2),
    # Prefix heavy hitters: a verification round of whole values since version 2.
    "prefix_heavy_hitters": 2,
}


def _spec_version(kind):
    """The specification version this client reads for ``kind`` (``KIND_SPEC_VERSIONS``:
    the kinds whose format changed with their exact laws; the others read ``SPEC_VERSION``)."""
    return KIND_SPEC_VERSIONS.get(kind, SPEC_VERSION) if isinstance(kind, str) else SPEC_VERSION


def _spec_field(spec, key, kind):
    if key not in spec:
        raise ValueError(f"the {kind!r} specification has no {key!r} field: it was not written "
                         "by mechanism.to_json() of a compatible sklearn_ldp.")
    return spec[key]


def _check_int(value, name, minimum=1):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
    return value


def _common(spec, allowed=()):
    """``(n_inputs, epsilon, params)`` of a spec, refusing parameters this client does not
    know (a newer server may have added one that changes the randomizer)."""
    kind = spec["mechanism"]
    n_inputs = _check_int(_spec_field(spec, "n_inputs", kind), "n_inputs")
    epsilon = _check_budget(_spec_field(spec, "epsilon", kind), "epsilon", kind)
    params = spec.get("params") or {}
    if not isinstance(params, Mapping):
        raise ValueError(f"params of the {kind!r} specification must be an object, got "
                         f"{params!r}.")
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"the {kind!r} specification has parameters {unknown} that this client "
                         f"does not know (it knows {sorted(allowed)}); update the client.")
    return n_inputs, epsilon, dict(params)


def _check_matrix(rows, name, kind):
    """A non-empty rectangular list of lists of finite floats."""
    if not isinstance(rows, list) or not rows or not all(
            isinstance(row, list) and row for row in rows):
        raise ValueError(f"{name} of the {kind!r} specification must be a non-empty list of "
                         "non-empty lists (rows).")
    width = len(rows[0])
    matrix = []
    for i, row in enumerate(rows):
        if len(row) != width:
            raise ValueError(f"{name} of the {kind!r} specification is not rectangular: row {i} "
                             f"has {len(row)} entries, row 0 has {width}.")
        values = []
        for value in row:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
                    value):
                raise ValueError(f"{name} of the {kind!r} specification must hold finite "
                                 f"numbers; row {i} holds {value!r}.")
            values.append(float(value))
        matrix.append(values)
    return matrix


# The value kinds take a value that is not a flat cell index (a number, a record of several
# columns, a bit string) or keep client state between rounds. Their builder returns a
# _ValueKind instead of (n_inputs, privatize_cell); Randomizer dispatches on the type.
MAX_CELLS = 2**24  # sklearn_ldp.deploy.limits: the default max_cells
MAX_ATTRIBUTES = 1024  # multi_attribute.MAX_ATTRIBUTES (and the "columns" kind's cap)


@dataclasses.dataclass
class _ValueKind:
    """A randomizer of one kind that privatizes values (not flat cells).

    ``privatize(value, rng, memo)``; ``bind(categories)`` receives the Randomizer's
    ``categories`` (kinds that take none refuse them); ``stateful`` kinds get a
    :class:`_StateFile` as ``memo`` and must check it with ``check_state``.
    """

    n_inputs: object
    privatize: object
    stateful: bool = False
    bind: object = None
    check_state: object = None
    encode: object = None


def _check_number(value, name, kind):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(
            value):
        raise ValueError(f"{name} of the {kind!r} specification must be a finite number, "
                         f"got {value!r}.")
    return float(value)


# The server's smallest epsilon (sklearn_ldp._validation.MIN_EPSILON).
MIN_BUDGET = 1e-6


def _check_budget(value, name, kind):
    """An epsilon-like field in (0, 50] (the server's check_epsilon)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} of the {kind!r} specification must be a number, got "
                         f"{value!r}.")
    value = float(value)
    if not math.isfinite(value) or not 0.0 < value <= 50.0:
        raise ValueError(f"{name} of the {kind!r} specification must lie in (0, 50], got "
                         f"{value!r}.")
    if value < MIN_BUDGET:
        # The server refuses these too: e^eps - 1 vanishes, and layouts derived from e^eps
        # (Hadamard response's blocks) would be empty.
        raise ValueError(f"{name} of the {kind!r} specification is too small to be "
                         f"meaningful, got {value!r}; the smallest is {MIN_BUDGET:g}.")
    return value


def _check_fields(spec, kind, required, optional=()):
    """Refuse missing and unknown top-level fields (a newer server's field may change the
    randomizer)."""
    missing = [key for key in required if key not in spec]
    if missing:
        raise ValueError(f"the {kind!r} specification has no {missing[0]!r} field: it was not "
                         "written by to_dict() of a compatible sklearn_ldp.")
    unknown = sorted(set(spec) - set(required) - set(optional) - {"version", "mechanism"})
    if unknown:
        raise ValueError(f"the {kind!r} specification has fields {unknown} that this client "
                         "does not know; update the client.")


def _check_bounds(pair, name, kind):
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        raise ValueError(f"{name} of the {kind!r} specification must be a pair [low, high], "
                         f"got {pair!r}.")
    low = _check_number(pair[0], name, kind)
    high = _check_number(pair[1], name, kind)
    if not low < high:
        raise ValueError(f"{name} of the {kind!r} specification must satisfy low < high, got "
                         f"{pair!r}.")
    return low, high


def _check_value(value, bounds, name):
    """A number within ``bounds`` as a float (refused otherwise: nothing is clipped)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name} must be a number, got {value!r}.")
    low, high = bounds
    number = float(value)
    if not low <= number <= high:  # NaN compares False: refused too
        raise ValueError(f"{name} must lie in the declared bounds [{low}, {high}], got "
                         f"{value!r}.")
    return number


def _check_choice(value, choices, name, kind):
    """``value`` if it is one of ``choices`` (a specification field naming a protocol)."""
    if value not in choices:
        raise ValueError(f"{name} of the {kind!r} specification must be one of {choices}, got "
                         f"{value!r}.")
    return value
