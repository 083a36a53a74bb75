"""Range kinds: ``factorization`` tables, the ``hierarchical`` tree and ``haar``.
"""

import bisect
import itertools

from ._exact import _parity, _ratio_draw, _within
from ._spec import FACTORIZATION_SPEC_VERSION, _check_budget, _check_int, _common, _spec_field
from .oracles import (
    _make_hrr,
    _make_local_hashing,
    _make_unary,
    _olh_buckets,
    _sign_weights,
)

# The factorization spec carries the integer table that is sampled (format version 2): columns
# summing to 2^TABLE_PRECISION, one 52-bit uniform integer per report, as the server's
# sklearn_ldp.mechanisms._base.exact.sample_table.
TABLE_PRECISION = 52
_TABLE_ONE = 2**TABLE_PRECISION
MAX_TABLE_ENTRIES = 2**27  # sklearn_ldp.deploy.limits: the default max_matrix_entries


def _normalized_strategy(table, epsilon, kind):
    """The server's exact check of a strategy's integer table; returns its columns.

    The same decisions as ``FactorizationMechanism.from_table``: a rectangular list of rows of
    integers in ``[0, 2^52]``; every column summing to ``2^52``; no row 0 for every input;
    every row's ``max <= e^eps min`` decided on the integers (a row 0 for some inputs only is
    an infinite ratio). Returns the columns ``[u][o]`` (the law of input ``u``).
    """
    name = f"table of the {kind!r} specification"
    if not isinstance(table, list) or not table or not all(
            isinstance(row, list) and row for row in table):
        raise ValueError(f"the {name} must be a non-empty list of non-empty lists (rows).")
    width = len(table[0])
    if len(table) * width > MAX_TABLE_ENTRIES:  # before reading any entry
        raise ValueError(f"the {name} has {len(table)} x {width} entries, more than "
                         f"{MAX_TABLE_ENTRIES} (sklearn_ldp.deploy.limits: max_matrix_entries).")
    for o, row in enumerate(table):
        if len(row) != width:
            raise ValueError(f"the {name} is not rectangular: row {o} has {len(row)} "
                             f"entries, row 0 has {width}.")
        for value in row:
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"the {name} must hold integers; row {o} holds {value!r}.")
            if not 0 <= value <= _TABLE_ONE:
                raise ValueError(f"the {name} must hold weights in [0, 2**{TABLE_PRECISION}]; "
                                 f"row {o} holds {value!r}.")
    columns = [list(column) for column in zip(*table, strict=True)]
    for u, column in enumerate(columns):
        total = sum(column)
        if total != _TABLE_ONE:
            raise ValueError(f"column {u} of the {name} sums to {total}, not "
                             f"2**{TABLE_PRECISION}: refusing to privatize with it.")
    for o, row in enumerate(table):
        high, low = max(row), min(row)
        if high == 0:
            raise ValueError(f"row {o} of the {name} is 0 for every input: an output that is "
                             "never reported must not be listed.")
        if not _within(high, low, epsilon):
            ratio = "infinite" if low == 0 else repr(high / low)
            raise ValueError(f"row {o} of the {name} has weight {high} for input "
                             f"{row.index(high)} and {low} for input {row.index(low)}: its "
                             f"realised ratio {ratio} exceeds e^{epsilon!r}: the table "
                             f"is not {epsilon}-LDP; refusing to privatize with it.")
    return columns


def _factorization(spec):
    """Integer inverse CDF on the column of the strategy's integer table carried by the spec.

    The table is checked exactly as the server does (:func:`_normalized_strategy`); a report
    is the first output whose cumulative weight exceeds ``U``, a uniform 52-bit integer
    (``rng.getrandbits(52)``), so ``P(o | u) = table[o][u] / 2^52`` exactly, the law of the
    server's ``randomize``.
    """
    kind = "factorization"
    epsilon = _check_budget(_spec_field(spec, "epsilon", kind), "epsilon", kind)
    if "Q" in spec:
        raise ValueError("the 'factorization' specification carries a float matrix 'Q' "
                         "(version 1); this client samples the integer 'table' of version "
                         f"{FACTORIZATION_SPEC_VERSION}.")
    precision = _spec_field(spec, "precision", kind)
    if precision != TABLE_PRECISION or isinstance(precision, bool):
        raise ValueError(f"precision of the 'factorization' specification must be "
                         f"{TABLE_PRECISION}, got {precision!r}.")
    columns = _normalized_strategy(_spec_field(spec, "table", kind), epsilon, kind)
    cumulative = [list(itertools.accumulate(column)) for column in columns]

    def privatize(cell, rng):
        # The first output whose cumulative weight exceeds the uniform integer.
        return bisect.bisect_right(cumulative[cell], rng.getrandbits(TABLE_PRECISION))

    privatize.table = [list(row) for row in zip(*columns, strict=True)]  # for the tests
    return len(columns), privatize


_LEVEL_ORACLES = ("oue", "olh", "hrr")


def _hierarchical(spec):
    n, epsilon, params = _common(spec, ("branching", "oracle", "olh_hash"))
    branching = _check_int(params.get("branching", 4), "branching", minimum=2)
    oracle = params.get("oracle", "oue")
    if oracle not in _LEVEL_ORACLES:
        raise ValueError(f"oracle of the 'hierarchical' specification must be one of "
                         f"{list(_LEVEL_ORACLES)}, got {oracle!r}.")
    height, width = 1, branching
    while width < n:
        width *= branching
        height += 1
    widths = [branching ** (height - level) for level in range(1, height + 1)]
    sizes = [-(-n // w) for w in widths]
    if oracle == "oue":
        levels = [_make_unary("oue", m, epsilon) for m in sizes]
        width_bytes = (sizes[-1] + 7) // 8  # every row as wide as the leaf level's report
    elif oracle == "olh":
        # "by_size": each level takes the server's default family (linear at every size); specs
        # from before the linear family (no olh_hash) hashed every level by tabulation.
        olh_hash = params.get("olh_hash", "tabulation")
        if olh_hash not in ("by_size", "tabulation"):
            raise ValueError(f"olh_hash must be 'by_size' or 'tabulation', got {olh_hash!r}.")
        family = "linear" if olh_hash == "by_size" else "tabulation"
        levels = [_make_local_hashing(m, epsilon, _olh_buckets(epsilon, family), family)
                  for m in sizes]
    else:
        levels = [_make_hrr(m, epsilon) for m in sizes]
        offsets = [0]
        for level in levels:
            offsets.append(offsets[-1] + level.n_outputs)

    def privatize(cell, rng):
        k = rng.randrange(height)
        report = levels[k](cell // widths[k], rng)
        if oracle == "oue":
            return [k + 1] + report + [0] * (width_bytes - len(report))
        if oracle == "olh":
            return [k + 1] + report
        return offsets[k] + report

    return n, privatize


def _haar(spec):
    n, epsilon, _ = _common(spec)
    height = max(1, (n - 1).bit_length())
    sizes = [(1 << height) >> level for level in range(1, height + 1)]
    offsets = [0]
    for m in sizes:
        offsets.append(offsets[-1] + 2 * m)
    weights = _sign_weights(epsilon, "haar")

    def privatize(cell, rng):
        level = rng.randrange(1, height + 1)
        coefficient = rng.randrange(sizes[level - 1])
        negative = ((cell >> (level - 1)) & 1) ^ _parity(coefficient, cell >> level)
        flipped = not _ratio_draw(rng, 1, 1, *weights)[0]
        return offsets[level - 1] + 2 * coefficient + (1 ^ negative ^ flipped)

    privatize.weights = weights  # exposed for the tests (the server's integers)
    return n, privatize
