"""Frequent itemsets (``itemsets``, SVSM's itemset round): report one contained candidate.

The server's :func:`~sklearn_ldp.mechanisms.set_valued.svsm.itemset_spec`: the declared items,
the cap on a set's size and the candidate itemsets (lists of item labels). A device checks its
set (known items, each once, at most the cap), lists the indices of the candidates its set
contains, and reports that list through the ``"set_items"`` specification the spec carries
(padding to the pad length, one position drawn exactly uniformly, the frequency oracle).
The spec is refused, naming the fault, when an item or a candidate is listed twice, a
candidate holds an unknown item, fewer than 2 items or more than the cap, or the
``"set_items"`` part is not over exactly the candidates.
"""

from ._spec import _check_int, _spec_field, _ValueKind
from .set_valued import MAX_SET_SIZE, _set_items

KIND = "itemsets"


def _index_of(items, where):
    """Label -> code, labels compared with their types (1 and True and 1.0 differ)."""
    index = {}
    for code, label in enumerate(items):
        if label is not None and not isinstance(label, (str, int, float)):
            raise ValueError(f"items of the {KIND!r} specification must be strings, numbers, "
                             f"booleans or null, got {label!r}.")
        if (type(label), label) in index:
            raise ValueError(f"the {KIND!r} specification: the item {label!r} is listed "
                             f"twice in {where}.")
        index[(type(label), label)] = code
    return index


def _itemsets(spec):
    params = _spec_field(spec, "params", KIND)
    if not isinstance(params, dict) or set(params) != {"items", "max_set_size", "candidates"}:
        raise ValueError(f"malformed params of the {KIND!r} specification: "
                         f"{str(params)[:80]!r}.")
    items, listed = params["items"], params["candidates"]
    cap = _check_int(params["max_set_size"], f"max_set_size of {KIND!r}")
    if cap > MAX_SET_SIZE:
        raise ValueError(f"max_set_size of {KIND!r} is at most {MAX_SET_SIZE}, got {cap}.")
    if not isinstance(items, list) or len(items) < 2:
        raise ValueError(f"items of the {KIND!r} specification must list at least 2 labels.")
    index = _index_of(items, "items")
    if not isinstance(listed, list) or not listed:
        raise ValueError(f"candidates of the {KIND!r} specification must be a non-empty list.")
    candidates, seen = [], set()
    for itemset in listed:
        if not isinstance(itemset, list) or not 2 <= len(itemset) <= cap:
            raise ValueError(f"the candidate {str(itemset)[:60]} of the {KIND!r} "
                             f"specification must list 2 to max_set_size={cap} items.")
        codes = []
        for label in itemset:
            code = None if isinstance(label, (list, dict)) else index.get((type(label), label))
            if code is None:
                raise ValueError(f"the candidate {itemset!r} holds the item {label!r}, not "
                                 "among the declared items.")
            codes.append(code)
        key = frozenset(codes)
        if len(key) != len(codes):
            raise ValueError(f"the candidate {itemset!r} lists an item twice.")
        if key in seen:
            raise ValueError(f"the candidate {itemset!r} is listed twice.")
        seen.add(key)
        candidates.append(key)
    inner = _spec_field(spec, "set_items", KIND)
    if not isinstance(inner, dict) or inner.get("mechanism") != "set_items" \
            or inner.get("n_inputs") != len(candidates) \
            or spec.get("n_inputs") != len(candidates) \
            or inner.get("epsilon") != spec.get("epsilon") \
            or not isinstance(inner.get("params"), dict) \
            or inner["params"].get("items") is not None \
            or inner["params"].get("max_set_size") != len(candidates):
        raise ValueError(f"the 'set_items' part of the {KIND!r} specification must be over "
                         f"its {len(candidates)} candidates (n_inputs and max_set_size), "
                         "without labels, at its epsilon.")
    report = _set_items(inner).privatize

    def privatize(value, rng, memo=None):
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise ValueError(f"a set-valued record is a set or list of items, got {value!r}.")
        held = set()
        for label in value:
            code = None if isinstance(label, (list, dict, set)) else index.get(
                (type(label), label))
            if code is None:
                raise ValueError(f"the item {label!r} is not among the declared items.")
            if code in held:
                raise ValueError(f"the item {label!r} is listed twice; a set holds each item "
                                 "once.")
            held.add(code)
        if len(held) > cap:
            raise ValueError(f"the set holds {len(held)} items, more than max_set_size={cap} "
                             "(never truncated).")
        contained = [j for j, itemset in enumerate(candidates) if itemset <= held]
        return report(contained, rng)

    return _ValueKind(len(candidates), privatize)
