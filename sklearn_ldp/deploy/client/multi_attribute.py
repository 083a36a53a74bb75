"""The ``multi_attribute`` kind: SPL, SMP and RS+FD records of several categorical attributes.
"""

import fractions
import math
from collections.abc import Mapping

from ._exact import _ONE, _packed, _uniform_words, _within
from ._spec import MAX_ATTRIBUTES, MAX_CELLS, _check_budget, _check_fields, _ValueKind
from .marginals import _split_budget
from .oracles import _make_randomized_response, _make_unary, _unary_numerators
from .records import _Categories

MULTI_PROTOCOLS = {"spl": ("grr", "oue"), "smp": ("grr", "oue"),
                   "rsfd": ("grr", "oue_z", "oue_r")}


def _nominal_pq(oracle, size, inner_epsilon):
    e = math.exp(inner_epsilon)
    return (e / (e + size - 1), 1 / (e + size - 1)) if oracle == "grr" else (0.5, 1 / (e + 1))


def _rsfd_attribute_ratio(inner_epsilon, shape, oracle):
    """RS+FD's exact worst ratio between records that differ in one attribute
    (``multi_attribute.rsfd_attribute_ratio``, same formulas)."""
    return _rsfd_ratio([_nominal_pq(oracle, size, inner_epsilon) for size in shape], shape,
                       oracle)


def _rsfd_ratio(pq, shape, oracle):
    """The worst ratio for each attribute's ``(p, q)`` (floats, or the sampled Fractions)."""
    smallest, pairs = [], []
    for size, (p, q) in zip(shape, pq, strict=True):
        if oracle == "grr":
            smallest.append(size * q)
            pairs.append((size * p, size * q))
            continue
        high, low = p / q, (1 - p) / (1 - q)
        if oracle == "oue_z":
            smallest.append(low)
            pairs.append((high, low))
        else:
            smallest.append(low * size / ((size - 1) * high + low))
            one_bit = (high + (size - 1) * low) / size
            pairs.append((high / one_bit, low / one_bit))
    total = sum(smallest)
    return max((total - smallest[j] + A) / (total - smallest[j] + B)
               for j, (A, B) in enumerate(pairs))


def _bisect_root(function, low, high):
    """The root of an increasing ``function`` on ``[low, high]`` (``function(low) < 0 <
    function(high)``), bisected until the interval is one float wide."""
    for _ in range(2000):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if function(middle) < 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


# Repeats the server's RS+FD attribute-budget bisection (mechanisms/multi_attribute) so that both
# sides find the same float (standard library only, so that a device can copy this folder alone:
# not imported from the server).
def _rsfd_attribute_epsilon(epsilon, shape, oracle):
    """The inner budget of RS+FD with ``neighbourhood="attribute"``: the server's float (it
    bisects the same function the same way)."""
    target = epsilon + math.log1p(-1e-12)

    def excess(inner):
        return math.log(_rsfd_attribute_ratio(inner, shape, oracle)) - target

    high = epsilon + math.log(len(shape)) + 1.0
    while excess(high) < 0:
        if high >= 50.0:
            raise ValueError(f"no inner budget up to 50 reaches epsilon={epsilon!r} between "
                             f"records that differ in one attribute for shape {shape}.")
        high = min(2 * high, 50.0)
    return _bisect_root(excess, 1e-12, high)


def _check_shape(shape, kind):
    if not isinstance(shape, list) or not 1 <= len(shape) <= MAX_ATTRIBUTES:
        raise ValueError(f"shape of the {kind!r} specification must be a list of 1 to "
                         f"{MAX_ATTRIBUTES} category counts, got {str(shape)[:80]!r}.")
    for size in shape:
        if isinstance(size, bool) or not isinstance(size, int) or not 2 <= size <= MAX_CELLS:
            raise ValueError(f"shape of the {kind!r} specification must hold integers in "
                             f"[2, {MAX_CELLS}], got {size!r}.")
    if sum(shape) > MAX_CELLS:
        raise ValueError(f"shape of the {kind!r} specification declares {sum(shape)} "
                         f"categories in all, more than {MAX_CELLS}.")
    return list(shape)


class _ColumnCodes:
    """Per-column category codes of records (``_Categories`` without the flat index)."""

    def __init__(self, categories, sizes, names=None):
        self.lookup = _Categories(categories)
        if names is not None and self.lookup.columns != list(names):
            raise ValueError(f"categories must name the columns {list(names)} in that order, "
                             f"got {self.lookup.columns}.")
        if self.lookup.sizes != list(sizes):
            raise ValueError(f"the categories have {self.lookup.sizes} values per column but the "
                             f"specification declares {list(sizes)}: they are not the server's.")

    def codes(self, record):
        return self.lookup.codes_of(record)


def _codes_or_check(record, sizes, columns, name):
    """Integer category codes given directly (no categories): checked against ``sizes``."""
    if not isinstance(record, (list, tuple)) or len(record) != len(sizes):
        raise ValueError(f"a {name} record is a list of {len(sizes)} category codes (or pass "
                         f"categories= to give values), got {record!r}.")
    for column, (code, size) in enumerate(zip(record, sizes, strict=True)):
        if isinstance(code, bool) or not isinstance(code, int) or not 0 <= code < size:
            label = columns[column] if columns else column
            raise ValueError(f"column {label!r} of the record has the code {code!r}, not an "
                             f"integer in [0, {size}).")
    return list(record)


def _multi_attribute_parts(spec):
    """``(shape, privatize_codes)``: the codes of one record -> its report row, in the layout
    of the server's multi-attribute part (``reports._MultiAttributePart``): SPL and RS+FD
    every attribute's oracle report in order (an index, or packed bytes); SMP the chosen
    attribute, its report, zeros up to the widest attribute's report."""
    kind = "multi_attribute"
    _check_fields(spec, kind, ("epsilon", "shape"), ("params",))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    shape = _check_shape(spec["shape"], kind)
    params = spec.get("params") or {}
    if not isinstance(params, Mapping) or not set(params) <= {"protocol", "oracle",
                                                               "neighbourhood"}:
        raise ValueError(f"params of the 'multi_attribute' specification must hold "
                         f"'protocol', 'oracle', 'neighbourhood' only, got {params!r}.")
    protocol = params.get("protocol", "smp")
    if protocol not in MULTI_PROTOCOLS:
        raise ValueError(f"params['protocol'] must be one of {sorted(MULTI_PROTOCOLS)}, got "
                         f"{protocol!r}.")
    oracle = params.get("oracle", "grr")
    if oracle not in MULTI_PROTOCOLS[protocol]:
        raise ValueError(f"params['oracle'] must be one of {MULTI_PROTOCOLS[protocol]} for "
                         f"protocol {protocol!r}, got {oracle!r}.")
    neighbourhood = params.get("neighbourhood", "record")
    if neighbourhood not in ("record", "attribute"):
        raise ValueError(f"params['neighbourhood'] must be 'record' or 'attribute', got "
                         f"{neighbourhood!r}.")
    if neighbourhood == "attribute" and protocol != "rsfd":
        raise ValueError("params['neighbourhood']='attribute' applies to protocol 'rsfd' only.")
    d = len(shape)
    unary = oracle != "grr"
    if protocol == "spl":  # the server's shares, exactly within epsilon together
        inner, oracles = _split_budget(epsilon, shape, unary)
    else:
        inner = epsilon
        if neighbourhood == "attribute":
            inner = _rsfd_attribute_epsilon(epsilon, shape, oracle)
        oracles = [_make_unary("oue", size, inner) if unary else
                   _make_randomized_response(size, inner) for size in shape]
        if neighbourhood == "attribute":
            _check_rsfd_attribute(epsilon, shape, oracle, inner, oracles)
    widths = [(size + 7) // 8 if unary else 1 for size in shape]

    def as_list(report):
        return report if isinstance(report, list) else [report]

    if protocol == "spl":
        def privatize_codes(codes, rng):
            row = []
            for oracle_i, code in zip(oracles, codes, strict=True):
                row += as_list(oracle_i(code, rng))
            return row
    elif protocol == "smp":
        widest = max(widths)

        def privatize_codes(codes, rng):
            chosen = rng.randrange(d)
            report = as_list(oracles[chosen](codes[chosen], rng))
            return [chosen] + report + [0] * (widest - len(report))
    else:
        q_numerators = [_unary_numerators("oue", inner)[1] if unary else None for _ in shape]

        def fake(i, rng):
            if oracle == "grr":
                return [rng.randrange(shape[i])]
            if oracle == "oue_z":  # unary encoding of no value: every bit 1 with q
                words = _uniform_words(rng, shape[i])
                return _packed([j for j, w in enumerate(words) if w < q_numerators[i]],
                               shape[i])
            return oracles[i](rng.randrange(shape[i]), rng)  # oue_r: of a uniform value

        def privatize_codes(codes, rng):
            chosen = rng.randrange(d)
            row = []
            for i in range(d):
                row += as_list(oracles[i](codes[i], rng)) if i == chosen else fake(i, rng)
            return row

    return shape, privatize_codes


def _check_rsfd_attribute(epsilon, shape, oracle, inner, oracles):
    """RS+FD between records that differ in one attribute: the worst ratio on the sampled
    ``p``, ``q`` (exact fractions) within ``e^eps``, decided on integers (the server's
    ``MultiAttributeMechanism._check_privacy``)."""
    if oracle == "grr":
        weights = [privatize.weights for privatize in oracles]
        pq = [(fractions.Fraction(a, a + (k - 1) * d), fractions.Fraction(d, a + (k - 1) * d))
              for (a, d), k in zip(weights, shape, strict=True)]
    else:
        p, q = _unary_numerators("oue", inner)
        pq = [(fractions.Fraction(p, _ONE), fractions.Fraction(q, _ONE))] * len(shape)
    worst = _rsfd_ratio(pq, shape, oracle)
    if not _within(worst.numerator, worst.denominator, epsilon):
        raise ValueError(f"the 'multi_attribute' specification's RS+FD worst ratio between "
                         f"records that differ in one attribute, {float(worst)!r}, is above "
                         f"e^epsilon for epsilon={epsilon!r}.")


def _multi_attribute(spec):
    shape, privatize_codes = _multi_attribute_parts(spec)
    holder = {"codes": None}

    def bind(categories):
        holder["codes"] = _ColumnCodes(categories, shape)

    def encode(record):
        if holder["codes"] is not None:
            return holder["codes"].codes(record)
        return _codes_or_check(record, shape, None, "'multi_attribute'")

    def privatize(value, rng, memo=None):
        return privatize_codes(encode(value), rng)

    return _ValueKind(len(shape), privatize, bind=bind, encode=encode)


def _multi_attribute_epsilon(spec, shape):
    """The record-level budget of a multi-attribute part (``MultiAttributeMechanism.epsilon``):
    the attribute budget, except RS+FD with neighbourhood "attribute" (its inner budget)."""
    epsilon = float(spec["epsilon"])
    params = spec.get("params") or {}
    if params.get("protocol") == "rsfd" and params.get("neighbourhood") == "attribute":
        return _rsfd_attribute_epsilon(epsilon, shape, params.get("oracle", "grr"))
    return epsilon
