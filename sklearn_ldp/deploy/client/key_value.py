"""Key-value data (``pckv_grr``, PCKV-GRR): pad the pairs, draw one, discretize, perturb.

The server's :class:`~sklearn_ldp.mechanisms.set_valued.pckv.PCKVGRR`. The specification
carries the integer weights ``(a, d, b_k, b_f)``; this client checks their privacy exactly
(every ratio of the three output weights ``2 a b_k``, ``2 a b_f`` and ``d (b_k + b_f)`` at most
``e^eps``, decided on integers) instead of trusting them.
"""

import math

from ._exact import _exact_bound, _ratio_at_most, _ratio_draw
from ._spec import _check_budget, _check_int, _spec_field, _ValueKind

KIND = "pckv_grr"
MAX_SET_SIZE = 4096
MAX_VALUE_STEPS = 2**30


def _pckv_grr(spec):
    params = _spec_field(spec, "params", KIND)
    if not isinstance(params, dict) or set(params) != {"pad_length", "value_steps",
                                                       "max_set_size"}:
        raise ValueError(f"malformed params of the {KIND!r} specification: "
                         f"{str(params)[:80]!r}.")
    epsilon = _check_budget(_spec_field(spec, "epsilon", KIND), "epsilon", KIND)
    n_keys = _check_int(_spec_field(spec, "n_inputs", KIND), f"n_inputs of {KIND!r}")
    pad = _check_int(params["pad_length"], f"pad_length of {KIND!r}")
    cap = _check_int(params["max_set_size"], f"max_set_size of {KIND!r}")
    steps = _check_int(params["value_steps"], f"value_steps of {KIND!r}")
    if pad > MAX_SET_SIZE or cap > MAX_SET_SIZE or steps > MAX_VALUE_STEPS:
        raise ValueError(f"pad_length, max_set_size (at most {MAX_SET_SIZE}) or value_steps "
                         f"(at most {MAX_VALUE_STEPS}) of {KIND!r} too large.")
    weights = _spec_field(spec, "weights", KIND)
    if not isinstance(weights, list) or len(weights) != 4 or not all(
            isinstance(w, int) and not isinstance(w, bool) and 1 <= w < 2**62
            for w in weights):
        raise ValueError(f"weights of the {KIND!r} specification must be 4 positive integers "
                         f"below 2^62, got {str(weights)[:80]!r}.")
    a, d, keep, flip = weights
    n_values = n_keys + pad
    outputs = (2 * a * keep, 2 * a * flip, d * (keep + flip))
    bound = _exact_bound(epsilon)
    if a + (n_values - 1) * d > 2**62 or keep + flip > 2**62 or not (a > d and keep > flip) \
            or not _ratio_at_most(max(outputs), min(outputs), bound):
        raise ValueError(f"the weights of the {KIND!r} specification {weights} are not "
                         f"{epsilon}-LDP (or carry no information): refused.")

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
            if isinstance(key, bool) or not isinstance(key, int) or not 0 <= key < n_keys:
                raise ValueError(f"the key {key!r} is not a key in [0, {n_keys}).")
            if key in seen:
                raise ValueError(f"the key {key!r} is listed twice.")
            seen.add(key)
            if isinstance(number, bool) or not isinstance(number, (int, float)) \
                    or not math.isfinite(number) or not -1.0 <= number <= 1.0:
                raise ValueError(f"the value {number!r} of key {key} is not a number in "
                                 "[-1, 1].")
            scaled = float(number) * steps
            if abs(scaled - round(scaled)) > 1e-6:
                raise ValueError(f"the value {number!r} of key {key} is not on the lattice "
                                 f"j / {steps}.")
            parsed.append((key, int(round(scaled))))
        return sorted(parsed)

    def privatize(value, rng, memo=None):
        pairs = parse(value)
        position = rng.randrange(max(len(pairs), pad))
        key, j = pairs[position] if position < len(pairs) else (n_keys + position, 0)
        positive = rng.randrange(2 * steps) < steps + j  # P(+1) = (1 + v) / 2 exactly
        kept, other = _ratio_draw(rng, 1, n_values - 1, a, d)
        if kept:
            same = _ratio_draw(rng, 1, 1, keep, flip)[0]
            return 2 * key + int(positive == same)
        return 2 * (other + (other >= key)) + rng.randrange(2)

    return _ValueKind(n_keys, privatize)
