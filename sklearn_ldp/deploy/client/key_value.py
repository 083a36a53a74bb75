"""Key-value data (``pckv_grr``, ``pckv_ue``): pad the pairs, draw one, discretize, perturb.

The server's :class:`~sklearn_ldp.mechanisms.set_valued.pckv.PCKVGRR` and
:class:`~sklearn_ldp.mechanisms.set_valued.pckv_ue.PCKVUE`. The specification carries the
key labels and the integer weights; this client checks the labels (distinct strings or
integers) and the weights' privacy exactly instead of trusting them: for PCKV-GRR
``(a, d, b_k, b_f)`` every ratio of the three output weights ``2 a b_k``, ``2 a b_f`` and
``d (b_k + b_f)`` at most ``e^eps``; for PCKV-UE ``(b_k, b_f, q_num)`` the ratios
``b_k / b_f`` and ``2 b_k (2^52 - q_num) / ((b_k + b_f) q_num)``, decided on integers.
"""

import json
import math

from ._exact import _ONE, _exact_bound, _packed, _ratio_at_most, _ratio_draw, _uniform_words
from ._spec import _check_budget, _check_int, _spec_field, _ValueKind

KINDS = ("pckv_grr", "pckv_ue")
MAX_SET_SIZE = 4096
MAX_VALUE_STEPS = 2**30
# The longest key label (characters), as the server's.
MAX_LABEL_LENGTH = 256
PARAMS = {"pad_length", "value_steps", "max_set_size", "keys"}


def _common(spec, kind):
    """``(epsilon, n_keys, pad, cap, steps, weights, code_of)`` of a key-value specification,
    every field checked (``code_of`` maps a record's key to its code)."""
    params = _spec_field(spec, "params", kind)
    if not isinstance(params, dict) or set(params) != PARAMS:
        raise ValueError(f"malformed params of the {kind!r} specification: "
                         f"{str(params)[:80]!r}.")
    epsilon = _check_budget(_spec_field(spec, "epsilon", kind), "epsilon", kind)
    n_keys = _check_int(_spec_field(spec, "n_inputs", kind), f"n_inputs of {kind!r}")
    pad = _check_int(params["pad_length"], f"pad_length of {kind!r}")
    cap = _check_int(params["max_set_size"], f"max_set_size of {kind!r}")
    steps = _check_int(params["value_steps"], f"value_steps of {kind!r}")
    if pad > MAX_SET_SIZE or cap > MAX_SET_SIZE or steps > MAX_VALUE_STEPS:
        raise ValueError(f"pad_length, max_set_size (at most {MAX_SET_SIZE}) or value_steps "
                         f"(at most {MAX_VALUE_STEPS}) of {kind!r} too large.")
    weights = _spec_field(spec, "weights", kind)
    count = 4 if kind == "pckv_grr" else 3
    if not isinstance(weights, list) or len(weights) != count or not all(
            isinstance(w, int) and not isinstance(w, bool) and 1 <= w < 2**62
            for w in weights):
        raise ValueError(f"weights of the {kind!r} specification must be {count} positive "
                         f"integers below 2^62, got {str(weights)[:80]!r}.")
    return epsilon, n_keys, pad, cap, steps, weights, _key_codes(params["keys"], n_keys, kind)


def _key_codes(labels, n_keys, kind):
    """``code_of(key)``: the code of a record's key, by its label when the specification
    lists labels (distinct strings or integers, checked here), else an integer code."""
    if labels is None:
        def code_of(key):
            if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < n_keys:
                raise ValueError(f"the key {key!r} is not a key in [0, {n_keys}).")
            return key
        return code_of
    if not isinstance(labels, list) or len(labels) != n_keys:
        raise ValueError(f"keys of the {kind!r} specification must list {n_keys} labels, got "
                         f"{_json_text(labels)}.")
    index = {}
    for code, label in enumerate(labels):
        if isinstance(label, bool) or not isinstance(label, (str, int)) \
                or (isinstance(label, str) and len(label) > MAX_LABEL_LENGTH):
            raise ValueError(f"a key label of the {kind!r} specification is a string of at "
                             f"most {MAX_LABEL_LENGTH} characters or an integer, got "
                             f"{_json_text(label)}.")
        if (type(label), label) in index:
            raise ValueError(f"the key label {label!r} of the {kind!r} specification is "
                             "listed twice.")
        index[(type(label), label)] = code

    def code_of(key):
        code = index.get((type(key), key))
        if code is None:
            raise ValueError(f"the key {str(key)[:60]!r} is not among the declared keys.")
        return code
    return code_of


def _json_text(value):
    """A label's JSON text, at most 60 characters (as the JavaScript client writes it)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=repr)[:60]


def _parser(n_keys, cap, steps, code_of):
    """``parse(record)``: the record's ``(code, j)`` pairs sorted by code, or a ValueError
    naming the fault (a value is ``j / steps`` in ``[-1, 1]``)."""

    def parse(value):
        pairs = list(value.items()) if isinstance(value, dict) else value
        if isinstance(pairs, (str, bytes)) or not hasattr(pairs, "__iter__"):
            raise ValueError(f"a key-value record is a dict key -> value or a list of "
                             f"[key, value] pairs, got {value!r}.")
        pairs = [tuple(pair) for pair in pairs]
        if len(pairs) > cap:
            raise ValueError(f"the record holds {len(pairs)} pairs, more than max_set_size="
                             f"{cap} (never truncated).")
        seen = set()
        parsed = []
        for pair in pairs:
            if len(pair) != 2:
                raise ValueError(f"a pair is [key, value], got {pair!r}.")
            key, number = pair
            code = code_of(key)
            if code in seen:
                raise ValueError(f"the key {key!r} is listed twice.")
            seen.add(code)
            if isinstance(number, bool) or not isinstance(number, (int, float)) \
                    or not math.isfinite(number) or not -1.0 <= number <= 1.0:
                raise ValueError(f"the value {number!r} of key {key!r} is not a number in "
                                 "[-1, 1].")
            scaled = float(number) * steps
            if abs(scaled - round(scaled)) > 1e-6:
                raise ValueError(f"the value {number!r} of key {key!r} is not on the lattice "
                                 f"j / {steps}.")
            parsed.append((code, int(round(scaled))))
        return sorted(parsed)

    return parse


def _sampled_pair(parse, value, rng, n_keys, pad, steps):
    """The padded-and-sampled pair of a record: ``(key code, v* = +1)``, exactly."""
    pairs = parse(value)
    position = rng.randrange(max(len(pairs), pad))
    key, j = pairs[position] if position < len(pairs) else (n_keys + position, 0)
    return key, rng.randrange(2 * steps) < steps + j  # P(+1) = (1 + v) / 2 exactly


def _pckv_grr(spec):
    kind = "pckv_grr"
    epsilon, n_keys, pad, cap, steps, weights, code_of = _common(spec, kind)
    a, d, keep, flip = weights
    n_values = n_keys + pad
    outputs = (2 * a * keep, 2 * a * flip, d * (keep + flip))
    bound = _exact_bound(epsilon)
    if a + (n_values - 1) * d > 2**62 or keep + flip > 2**62 or not (a > d and keep > flip) \
            or not _ratio_at_most(max(outputs), min(outputs), bound):
        raise ValueError(f"the weights of the {kind!r} specification {weights} are not "
                         f"{epsilon}-LDP (or carry no information): refused.")
    parse = _parser(n_keys, cap, steps, code_of)

    def privatize(value, rng, memo=None):
        key, positive = _sampled_pair(parse, value, rng, n_keys, pad, steps)
        kept, other = _ratio_draw(rng, 1, n_values - 1, a, d)
        if kept:
            same = _ratio_draw(rng, 1, 1, keep, flip)[0]
            return 2 * key + int(positive == same)
        return 2 * (other + (other >= key)) + rng.randrange(2)

    return _ValueKind(n_keys, privatize)


def _pckv_ue(spec):
    kind = "pckv_ue"
    epsilon, n_keys, pad, cap, steps, weights, code_of = _common(spec, kind)
    keep, flip, q_num = weights
    bound = _exact_bound(epsilon)
    if not (keep > flip and 2 * q_num < _ONE and keep + flip <= 2**62) \
            or not _ratio_at_most(keep, flip, bound) \
            or not _ratio_at_most(2 * keep * (_ONE - q_num), (keep + flip) * q_num, bound):
        raise ValueError(f"the weights of the {kind!r} specification {weights} are not "
                         f"{epsilon}-LDP (or carry no information): refused.")
    parse = _parser(n_keys, cap, steps, code_of)
    n_values = n_keys + pad

    def privatize(value, rng, memo=None):
        key, positive = _sampled_pair(parse, value, rng, n_keys, pad, steps)
        # Every other entry: non-zero with q_num / 2^52, its sign a uniform bit.
        words = _uniform_words(rng, n_values)
        signs = rng.getrandbits(n_values)
        plus = [i for i in range(n_values) if i != key and words[i] < q_num and signs >> i & 1]
        minus = [i for i in range(n_values)
                 if i != key and words[i] < q_num and not signs >> i & 1]
        # The held key's entry: non-zero with probability 1/2, its sign v* kept with b.
        if rng.randrange(2):
            up = positive == _ratio_draw(rng, 1, 1, keep, flip)[0]
            (plus if up else minus).append(key)
        return _packed(plus, n_values) + _packed(minus, n_values)

    return _ValueKind(n_keys, privatize)
