"""Set-valued data (``set_items``, SVIM): pad the set, draw one element exactly, run the oracle.

The server's :class:`~sklearn_ldp.mechanisms.set_valued.svim.SetItemMechanism`: a set of
``s`` items is padded with the dummies ``d + s .. d + L - 1`` to the pad length ``L``, one
position in ``[0, max(s, L))`` is drawn exactly uniformly (``randrange``: rejection on random
bits), and the element there is reported through the specification's frequency oracle over
``d + L`` values (randomized response or optimized local hashing, the oracles' own client).
"""

from ._spec import _check_int, _spec_field, _ValueKind
from .oracles import ORACLE_KINDS

KIND = "set_items"
MAX_SET_SIZE = 4096  # sklearn_ldp.mechanisms.set_valued.padding.MAX_SET_SIZE
SET_ORACLES = ("randomized_response", "olh")


def _set_items(spec):
    params = _spec_field(spec, "params", KIND)
    if not isinstance(params, dict) or set(params) != {"pad_length", "oracle",
                                                       "max_set_size", "items"}:
        raise ValueError(f"malformed params of the {KIND!r} specification: "
                         f"{str(params)[:80]!r}.")
    n_items = _check_int(_spec_field(spec, "n_inputs", KIND), f"n_inputs of {KIND!r}")
    pad = _check_int(params["pad_length"], f"pad_length of {KIND!r}")
    cap = _check_int(params["max_set_size"], f"max_set_size of {KIND!r}")
    if pad > MAX_SET_SIZE or cap > MAX_SET_SIZE:
        raise ValueError(f"pad_length and max_set_size of {KIND!r} are at most {MAX_SET_SIZE}, "
                         f"got {pad} and {cap}.")
    oracle = _spec_field(spec, "oracle", KIND)
    if not isinstance(oracle, dict) or oracle.get("mechanism") not in SET_ORACLES \
            or oracle.get("n_inputs") != n_items + pad or oracle.get("epsilon") != spec.get(
                "epsilon"):
        raise ValueError(f"the oracle of the {KIND!r} specification must be one of "
                         f"{SET_ORACLES} over n_inputs + pad_length = {n_items + pad} values "
                         f"at the same epsilon, got {str(oracle)[:80]!r}.")
    _, privatize_value = ORACLE_KINDS[oracle["mechanism"]](oracle)
    labels = params["items"]
    if labels is not None:
        if not isinstance(labels, list) or len(labels) != n_items:
            raise ValueError(f"items of the {KIND!r} specification must list {n_items} labels.")
        index = {(type(label), label): code for code, label in enumerate(labels)}

    def code_of(item):
        if labels is None:
            if isinstance(item, bool) or not isinstance(item, int) or not 0 <= item < n_items:
                raise ValueError(f"the item {item!r} is not an item code in [0, {n_items}).")
            return item
        code = index.get((type(item), item))
        if code is None:
            raise ValueError(f"the item {item!r} is not among the declared items.")
        return code

    def privatize(value, rng, memo=None):
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise ValueError(f"a set-valued record is a set or list of items, got {value!r}.")
        codes = sorted(code_of(item) for item in value)
        if len(codes) > cap:
            raise ValueError(f"the set holds {len(codes)} items, more than max_set_size={cap} "
                             "(never truncated).")
        for first, second in zip(codes, codes[1:], strict=False):
            if first == second:
                raise ValueError(f"the item {labels[first] if labels else first!r} is listed "
                                 "twice; a set holds each item once.")
        position = rng.randrange(max(len(codes), pad))
        element = codes[position] if position < len(codes) else n_items + position
        return privatize_value(element, rng)

    return _ValueKind(n_items, privatize)
