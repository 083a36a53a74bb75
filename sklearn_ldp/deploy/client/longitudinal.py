"""The memoizing kinds: ``longitudinal`` (RAPPOR-style), ``dbitflip_pm``, ``1bitmean_pm``.

Their permanent responses are derived from the device's secret through the keyed PRF of
``memo`` (never stored); the numerators come in the specification and are checked exactly.
"""

import math

from ._exact import (
    _ONE,
    DECIMAL_CONTEXT,
    _decimal_exp,
    _dyadic_numerator,
    _packed,
    _ratio_at_most,
    _uniform_words,
    _within_both_ways,
)
from ._spec import MAX_CELLS, _check_budget, _check_choice, _check_fields, _check_value, _ValueKind
from .heavy_hitters import _sketch_flip_numerator
from .memo import _check_secret_state, _prf, _prf_below, _prf_bit, _prf_lanes

# Kinds with memoized client state (need Randomizer(..., state=path)).
STATEFUL_KINDS = ("longitudinal", "dbitflip_pm", "1bitmean_pm")
LONGITUDINAL_PROTOCOLS = {"l_grr": ("grr", "grr"), "l_sue": ("sue", "sue"),
                          "l_oue": ("oue", "oue"), "l_osue": ("oue", "sue"),
                          "l_soue": ("sue", "oue")}


def _check_cells_field(value, name, kind, minimum=2):
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_CELLS:
        raise ValueError(f"{name} of the {kind!r} specification must be an integer in "
                         f"[{minimum}, {MAX_CELLS}], got {value!r}.")
    return value


def _check_cell_value(value, k):
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < k:
        raise ValueError(f"the value must be a cell index, an integer in [0, {k}), got "
                         f"{value!r}.")
    return value


def _longitudinal_weights(unary, k, numerators):
    """``(own, other, total)`` of one report (``LongitudinalMechanism._report_weights``)."""
    if unary:
        p1, q1 = numerators["p_perm"], numerators["q_perm"]
        p2, q2 = numerators["p_instant"], numerators["q_instant"]
        return p1 * p2 + (_ONE - p1) * q2, q1 * p2 + (_ONE - q1) * q2, _ONE * _ONE
    keep1, keep2 = numerators["keep_perm"], numerators["keep_instant"]
    move1, move2 = _ONE - keep1, _ONE - keep2
    own = keep1 * keep2 * (k - 1) ** 2 + move1 * move2 * (k - 1)
    other = (move1 * keep2 + keep1 * move2) * (k - 1) + (k - 2) * move1 * move2
    return own, other, (_ONE * (k - 1)) ** 2


def _longitudinal_numerators(spec, k, permanent, instant, epsilon_perm, epsilon_1):
    """The shipped numerators, checked: integers in ``[0, 2^52]`` of the protocol's forms
    ("sue": ``p = 2^52 - q``; "oue": ``p = 2^51``), the permanent step within
    ``epsilon_perm`` and one report within ``epsilon_1``, exactly on the integers."""
    kind = "longitudinal"
    unary = permanent != "grr"
    names = ("p_perm", "q_perm", "p_instant", "q_instant") if unary \
        else ("keep_perm", "keep_instant")
    numerators = spec["numerators"]
    if not isinstance(numerators, dict) or set(numerators) != set(names):
        raise ValueError(f"numerators of the {kind!r} specification must hold exactly "
                         f"{sorted(names)}, got {str(numerators)[:80]!r}.")
    for name in names:
        value = numerators[name]
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _ONE:
            raise ValueError(f"numerators.{name} of the {kind!r} specification must be an "
                             f"integer in [0, 2^52], got {value!r}.")
    if unary:
        for step, suffix in ((permanent, "perm"), (instant, "instant")):
            p, q = numerators["p_" + suffix], numerators["q_" + suffix]
            expected = _ONE - q if step == "sue" else _ONE // 2
            if p != expected:
                raise ValueError(f"numerators.p_{suffix} of the {kind!r} specification is "
                                 f"{p}, not {expected} (the {step!r} step's form).")
        p1, q1 = numerators["p_perm"], numerators["q_perm"]
        permanent_pair = (p1 * (_ONE - q1), q1 * (_ONE - p1))
    else:
        keep = numerators["keep_perm"]
        if (_ONE - keep) % (k - 1) or keep == _ONE:
            raise ValueError(f"numerators.keep_perm of the {kind!r} specification must leave "
                             f"a positive multiple of n_cells - 1 = {k - 1} below 2^52 (every "
                             f"other value m / 2^52), got {keep}.")
        permanent_pair = (keep * (k - 1), _ONE - keep)
    if not _within_both_ways(*permanent_pair, epsilon_perm):
        raise ValueError(f"numerators of the {kind!r} specification make the permanent "
                         f"response exceed epsilon_perm={epsilon_perm!r} (exact check): "
                         f"{numerators}.")
    own, other, total = _longitudinal_weights(unary, k, numerators)
    report_pair = (own * (total - other), other * (total - own)) if unary else (own, other)
    if not _within_both_ways(*report_pair, epsilon_1):
        raise ValueError(f"numerators of the {kind!r} specification make one report exceed "
                         f"epsilon_1={epsilon_1!r} (exact check): {numerators}.")
    return numerators


def _longitudinal(spec):
    """``LongitudinalMechanism`` (l_grr, l_sue, l_oue, l_osue, l_soue): a permanent response
    per value, derived from the client's secret (state file), and a fresh instantaneous
    randomization of it in every report, with the server's shipped numerators."""
    kind = "longitudinal"
    _check_fields(spec, kind, ("n_cells", "epsilon_perm", "epsilon_1", "protocol",
                               "numerators"))
    k = _check_cells_field(spec["n_cells"], "n_cells", kind)
    epsilon_perm = _check_budget(spec["epsilon_perm"], "epsilon_perm", kind)
    epsilon_1 = _check_budget(spec["epsilon_1"], "epsilon_1", kind)
    if not epsilon_1 < epsilon_perm:
        raise ValueError(f"epsilon_1 of the 'longitudinal' specification must be below "
                         f"epsilon_perm, got {epsilon_1!r} >= {epsilon_perm!r}.")
    protocol = _check_choice(spec["protocol"], sorted(LONGITUDINAL_PROTOCOLS), "protocol", kind)
    permanent, instant = LONGITUDINAL_PROTOCOLS[protocol]
    unary = permanent != "grr"
    numerators = _longitudinal_numerators(spec, k, permanent, instant, epsilon_perm,
                                          epsilon_1)
    n_bytes = (k + 7) // 8
    share = None if unary else (_ONE - numerators["keep_perm"]) // (k - 1)

    def draw_permanent(value, secret):
        if not unary:
            # One word (the server's permanent_response): its top 52 bits below (k - 1) m
            # name another value, m each; the others keep the value.
            other = (_prf(secret, "grr-perm", value, 0) >> 12) // share
            return other + (other >= value) if other < k - 1 else value
        # The value's own bit with p_perm, every other bit with q_perm (bit-sliced lanes).
        bits = _prf_lanes(secret, "ue-plane", value, k, numerators["q_perm"],
                          numerators["p_perm"])
        return list(bits.to_bytes(n_bytes, "little"))

    def instantaneous(response, rng):
        if not unary:
            if _uniform_words(rng, 1)[0] < numerators["keep_instant"]:
                return response
            other = rng.randrange(k - 1)  # exact: rejection on random bits
            return other + (other >= response)
        words = _uniform_words(rng, k)
        q2 = numerators["q_instant"]
        report = _packed([j for j, word in enumerate(words) if word < q2], k)
        if instant == "sue":  # a set permanent bit is 1 with 1 - q2 = p2
            return [r ^ b for r, b in zip(report, response, strict=True)]
        # "oue": a set permanent bit becomes a fair coin (p2 = 1/2), as the server XORs one.
        coins = list(rng.getrandbits(8 * n_bytes).to_bytes(n_bytes, "little"))
        return [r ^ (c & b) for r, c, b in zip(report, coins, response, strict=True)]

    def privatize(value, rng, memo):
        value = _check_cell_value(value, k)
        return instantaneous(draw_permanent(value, memo.secret(rng)), rng)

    built = _ValueKind(k, privatize, stateful=True, check_state=_check_secret_state)
    built.derive = draw_permanent  # (value, secret) -> permanent response (parity tests)
    return built


def _dbitflip_numerators(epsilon):
    """``(own, other)`` over ``2^52``: ``other = 1 / (e^(eps/2) + 1)`` rounded up in 80-digit
    decimals, ``own = 2^52 - other`` (``DBitFlipPM``), checked exactly."""
    other = _dyadic_numerator(DECIMAL_CONTEXT.divide(
        1, DECIMAL_CONTEXT.add(_decimal_exp(epsilon / 2), 1)), "up")
    own = _ONE - other
    if not _within_both_ways(own, other, epsilon / 2):
        raise ValueError(f"epsilon={epsilon!r} of the 'dbitflip_pm' specification cannot be "
                         "realized at precision 2^-52.")
    return own, other


def _dbitflip_pm(spec):
    """``DBitFlipPM``: ``d`` buckets and one bit per bucket, memoized per value: both derived
    from the client's secret (state file), so an unchanged value repeats its report."""
    kind = "dbitflip_pm"
    _check_fields(spec, kind, ("n_cells", "epsilon", "n_sampled"))
    k = _check_cells_field(spec["n_cells"], "n_cells", kind)
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    d = spec["n_sampled"]
    if isinstance(d, bool) or not isinstance(d, int) or not 1 <= d <= k:
        raise ValueError(f"n_sampled of the 'dbitflip_pm' specification must be an integer in "
                         f"[1, {k}], got {d!r}.")
    own, other = _dbitflip_numerators(epsilon)

    def buckets(secret):
        # Floyd's algorithm on PRF words (the server's _derived_subsets).
        chosen = []
        for j in range(k - d, k):
            t = _prf_below(secret, "dbf-bckt", j, j + 1)
            chosen.append(j if t in chosen else t)
        return sorted(chosen)

    def derive(value, secret):
        sampled = buckets(secret)
        bits = [_prf_bit(secret, "dbf-bits", value, i, own if bucket == value else other)
                for i, bucket in enumerate(sampled)]
        return sampled + bits

    def privatize(value, rng, memo):
        return derive(_check_cell_value(value, k), memo.secret(rng))

    built = _ValueKind(k, privatize, stateful=True, check_state=_check_secret_state)
    built.derive = derive  # (value, secret) -> report (parity tests)
    return built


def _one_bit_mean_pm(spec):
    """``OneBitMeanPM`` (Ding et al.'s 1BitMean with alpha-point rounding): the client's
    ``alpha`` and the bit of every rounding point are derived from its secret (state file);
    the bit probabilities are the server's exact ``2^-52`` numerators."""
    kind = "1bitmean_pm"
    _check_fields(spec, kind, ("max_value", "epsilon", "n_segments"))
    m = spec["max_value"]
    if isinstance(m, bool) or not isinstance(m, (int, float)) or not math.isfinite(m) \
            or m <= 0:
        raise ValueError(f"max_value of the {kind!r} specification must be a finite number "
                         f"> 0, got {m!r}.")
    m = float(m)
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    s = spec["n_segments"]
    if isinstance(s, bool) or not isinstance(s, int) or not 1 <= s <= 2**20:
        raise ValueError(f"n_segments of the {kind!r} specification must be an integer in "
                         f"[1, 2^20], got {s!r}.")
    # p_0 = 1 / (e^eps + 1) rounded up (the server divides in the default 28-digit decimal
    # context, as for the sketch), p_s = 1 - p_0, the points between on the straight line.
    low = _sketch_flip_numerator(epsilon, True)
    high = _ONE - low
    bound = _decimal_exp(epsilon)
    if not (_ratio_at_most(high, low, bound) and _ratio_at_most(_ONE - low, _ONE - high,
                                                                 bound)):
        raise ValueError(f"epsilon={epsilon!r} of the {kind!r} specification cannot be "
                         "realized at precision 2^-52.")

    def numerator(point):
        return low + (point * (high - low) + s // 2) // s

    def derive(value, secret):
        alpha = (_prf(secret, "1bm-alph", 0, 0) >> 12) / _ONE  # exact: A / 2^52
        scaled = value * (s / m)
        lower = min(math.floor(scaled), s)
        point = min(lower + (scaled - lower + alpha >= 1.0), s)
        return _prf_bit(secret, "1bm-bits", point, 0, numerator(point))

    def privatize(value, rng, memo):
        return derive(_check_value(value, (0.0, m), "the counter"), memo.secret(rng))

    built = _ValueKind(1, privatize, stateful=True, check_state=_check_secret_state)
    built.derive = derive  # (value, secret) -> report (parity tests)
    return built
