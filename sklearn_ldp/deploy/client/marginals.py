"""The marginal kinds (``inp_rr``, ``inp_ps``, ``inp_em``, ``inp_ht``, ``marg_rr``,
``marg_ps``, ``marg_ht``), their Hadamard sign flip, and the budget split that InpEM shares
with SPL (``multi_attribute``).
"""

import itertools
import math

from ._exact import _ONE, _keep_numerator, _parity, _uniform_words, _within
from ._spec import _check_int, _common
from .oracles import _make_randomized_response, _make_unary, _unary_numerators


def _sign_flip(epsilon):
    """``privatize``'s flip test of InpHT / MargHT / TreeHist: the sign is flipped when a
    uniform 52-bit word is ``>= a`` (probability ``(2^52 - a) / 2^52``, exactly)."""
    a = _keep_numerator(epsilon, 2)

    def flipped(rng):
        return _uniform_words(rng, 1)[0] >= a

    return flipped


def _split_budget(epsilon, sizes, unary):
    """``(share, oracles)``: the server's ``multi_attribute.split_budget`` for SPL and InpEM.
    ``eps / d`` per attribute, lowered by one float step while the product of the sampled
    worst ratios (randomized response ``a / d``; "oue" ``p (1 - q) / (q (1 - p))`` on its
    numerators) is not within ``e^eps``, decided on integers."""
    share = epsilon / len(sizes)
    for _ in range(64):
        if unary:
            oracles = [_make_unary("oue", size, share) for size in sizes]
            p, q = _unary_numerators("oue", share)
            ratios = [(p * (_ONE - q), q * (_ONE - p))] * len(sizes)
        else:
            oracles = [_make_randomized_response(size, share) for size in sizes]
            ratios = [oracle.weights for oracle in oracles]
        if _within(math.prod(n for n, _ in ratios), math.prod(d for _, d in ratios), epsilon):
            return share, oracles
        share = math.nextafter(share, 0.0)
    raise ValueError(f"no budget share near epsilon / {len(sizes)} composes within "
                     f"epsilon={epsilon!r}.")


def _marginal_spec(spec):
    """``(n, epsilon, shape, max_order)`` of a marginal mechanism's spec, checked."""
    n, epsilon, params = _common(spec, ("shape", "max_order"))
    kind = spec["mechanism"]
    shape = params.get("shape")
    if not isinstance(shape, list) or not shape or any(
            isinstance(size, bool) or not isinstance(size, int) or size < 2 for size in shape):
        raise ValueError(f"params['shape'] of the {kind!r} specification must be a list of "
                         f"category counts >= 2, got {shape!r}.")
    if math.prod(shape) != n:
        raise ValueError(f"n_inputs={n} of the {kind!r} specification does not match its shape "
                         f"{shape}.")
    max_order = _check_int(params.get("max_order"), "max_order")
    if max_order > len(shape):
        raise ValueError(f"max_order must be at most {len(shape)}, got {max_order}.")
    return n, epsilon, shape, max_order


def _attribute_codes(cell, shape):
    """Category code of every attribute of a flat C-order cell."""
    codes = [0] * len(shape)
    for position in range(len(shape) - 1, -1, -1):
        cell, codes[position] = divmod(cell, shape[position])
    return codes


def _binary_code(codes, members, shape):
    """Concatenated ``ceil(log2 r)``-bit codes of ``members``, the first most significant."""
    code = 0
    for a in members:
        code = (code << (shape[a] - 1).bit_length()) | codes[a]
    return code


def _set_cell(codes, members, shape):
    """C-order cell of the record in the table of the attribute set ``members``."""
    cell = 0
    for a in members:
        cell = cell * shape[a] + codes[a]
    return cell


def _inp_rr(spec):
    n, epsilon, _, _ = _marginal_spec(spec)
    return n, _make_unary("rappor", n, epsilon)


def _inp_ps(spec):
    n, epsilon, _, _ = _marginal_spec(spec)
    return n, _make_randomized_response(n, epsilon)


def _inp_em(spec):
    n, epsilon, shape, _ = _marginal_spec(spec)
    _, attributes = _split_budget(epsilon, shape, unary=False)  # the server's shares

    def privatize(cell, rng):
        noisy = 0
        for size, oracle, code in zip(shape, attributes, _attribute_codes(cell, shape),
                                      strict=True):
            noisy = noisy * size + oracle(code, rng)
        return noisy

    return n, privatize


def _inp_ht(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    everything = range(len(shape))
    shifts = [sum((shape[b] - 1).bit_length() for b in everything if b > a) for a in everything]
    masks = []  # the server's order: by order, attribute set, then C order of the masks
    for order in range(1, max_order + 1):
        for members in itertools.combinations(everything, order):
            parts = [[mask << shifts[a] for mask in range(1, 2 ** (shape[a] - 1).bit_length())]
                     for a in members]
            masks.extend(sum(combination) for combination in itertools.product(*parts))
    flip = _sign_flip(epsilon)

    def privatize(cell, rng):
        code = _binary_code(_attribute_codes(cell, shape), everything, shape)
        t = rng.randrange(len(masks))  # exact: rejection on random bits
        return 2 * t + (1 ^ _parity(masks[t], code) ^ flip(rng))

    return n, privatize


def _attribute_sets(shape, max_order):
    sets = list(itertools.combinations(range(len(shape)), max_order))
    return sets, [math.prod(shape[a] for a in members) for members in sets]


def _marg_ps(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    sets, cells = _attribute_sets(shape, max_order)
    offsets = [sum(cells[:index]) for index in range(len(sets))]
    oracles = {size: _make_randomized_response(size, epsilon) for size in set(cells)}

    def privatize(cell, rng):
        s = rng.randrange(len(sets))
        local = _set_cell(_attribute_codes(cell, shape), sets[s], shape)
        return offsets[s] + oracles[cells[s]](local, rng)

    return n, privatize


def _marg_rr(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    sets, cells = _attribute_sets(shape, max_order)
    # The set index in the bytes of the smallest unsigned type that holds it (1, 2, 4 or 8).
    set_bytes = next(size for size in (1, 2, 4, 8) if len(sets) <= 256**size)
    bit_bytes = (max(cells) + 7) // 8
    oracles = {size: _make_unary("rappor", size, epsilon) for size in set(cells)}

    def privatize(cell, rng):
        s = rng.randrange(len(sets))
        local = _set_cell(_attribute_codes(cell, shape), sets[s], shape)
        packed = oracles[cells[s]](local, rng)
        return (list(s.to_bytes(set_bytes, "little")) + packed
                + [0] * (bit_bytes - len(packed)))

    return n, privatize


def _marg_ht(spec):
    n, epsilon, shape, max_order = _marginal_spec(spec)
    sets, _ = _attribute_sets(shape, max_order)
    coefficients = [2 ** sum((shape[a] - 1).bit_length() for a in members) - 1
                    for members in sets]
    offsets = [sum(coefficients[:index]) for index in range(len(sets))]
    flip = _sign_flip(epsilon)

    def privatize(cell, rng):
        s = rng.randrange(len(sets))
        code = _binary_code(_attribute_codes(cell, shape), sets[s], shape)
        alpha = rng.randrange(1, coefficients[s] + 1)
        return 2 * (offsets[s] + alpha - 1) + (1 ^ _parity(alpha, code) ^ flip(rng))

    return n, privatize
