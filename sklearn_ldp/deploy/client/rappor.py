"""RAPPOR on the device (``sklearn_ldp.mechanisms.heavy_hitters.rappor``), bit for bit.

The cohort and the permanent randomized response are derived from the device's secret (state
file) through the keyed PRF of ``memo``; the instantaneous response is fresh in every report.
Hashing is the count sketches' (SplitMix64 fingerprint of the UTF-8 bytes, one salt per
cohort and hash), and every probability is the server's multiple of ``2^-52``, with both
epsilons checked exactly against the specification's.
"""

from ._exact import _GOLDEN, _MASK64, _ONE, _dyadic_numerator, _mix64, _packed, _uniform_words
from ._exact import _within as _ratio_within
from ._spec import _check_budget, _check_fields, _ValueKind
from .heavy_hitters import _bit_string, _fingerprint
from .memo import FIELD_LIMIT, _check_secret_state, _prf, _prf_below, _prf_lanes

RAPPOR_FIELDS = ("n_bits", "n_hashes", "n_cohorts", "f", "p", "q", "max_string_bytes",
                 "hash_seed")
# The server's caps (sklearn_ldp.mechanisms.heavy_hitters.rappor).
_CAPS = {"n_bits": (1, 4096), "n_hashes": (1, 16), "n_cohorts": (1, 2**16),
         "max_string_bytes": (1, 128), "hash_seed": (0, 2**64 - 1)}
COIN_COUNTER = 2**20  # rappor.COIN_COUNTER: the PRF counters of the permanent coins


def _check_params(spec):
    params = spec["params"]
    if not isinstance(params, dict) or set(params) != set(RAPPOR_FIELDS):
        raise ValueError(f"params of the 'bloom_rappor' specification must have exactly the fields "
                         f"{list(RAPPOR_FIELDS)}, got {str(params)[:80]!r}.")
    for name, (low, high) in _CAPS.items():
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"params.{name} of the 'bloom_rappor' specification must be an "
                             f"integer in [{low}, {high}], got {value!r}.")
    for name in ("f", "p", "q"):
        value = params[name]
        if isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not 0 <= value <= 1:
            raise ValueError(f"params.{name} of the 'bloom_rappor' specification must be a "
                             f"probability, got {value!r}.")
    k, h, m = params["n_bits"], params["n_hashes"], params["n_cohorts"]
    if k ** h > FIELD_LIMIT or k * m > FIELD_LIMIT:
        raise ValueError(f"the 'bloom_rappor' specification's n_bits ** n_hashes and n_bits * "
                         f"n_cohorts must be at most 2^24, got {k}, {h}, {m}.")
    if not 0 < params["f"] < 1 or not params["p"] < params["q"]:
        raise ValueError(f"the 'bloom_rappor' specification needs 0 < f < 1 and p < q, got "
                         f"f={params['f']!r}, p={params['p']!r}, q={params['q']!r}.")
    return params


def _bloom_rappor(spec):
    """``RapporMechanism``: report ``[cohort >> 8, cohort & 255, packed bits...]``."""
    kind = "bloom_rappor"
    _check_fields(spec, kind, ("epsilon", "n_inputs", "params", "epsilon_inf"))
    params = _check_params(spec)
    k, h, m = params["n_bits"], params["n_hashes"], params["n_cohorts"]
    half_f = _dyadic_numerator(params["f"] / 2, "up")
    p_num = _dyadic_numerator(params["p"], "up")
    q_num = _dyadic_numerator(params["q"], "down")
    keep = _ONE - half_f
    one2 = _ONE * _ONE
    Q1, Q0 = keep * q_num + half_f * p_num, half_f * q_num + keep * p_num
    # The claimed epsilons must hold for the integers drawn with (exactly, as the server's).
    for name, numerator, denominator in (
            ("epsilon", (Q1 * (one2 - Q0)) ** h, (Q0 * (one2 - Q1)) ** h),
            ("epsilon_inf", keep ** (2 * h), half_f ** (2 * h))):
        claimed = _check_budget(spec[name], name, kind)
        if not _ratio_within(numerator, denominator, claimed):
            raise ValueError(f"{name} of the 'bloom_rappor' specification ({claimed!r}) is not "
                             "within the privacy loss its parameters realize: refused.")
    bit_length = 8 * params["max_string_bytes"]
    W = -(-bit_length // 64)
    hash_seed = params["hash_seed"]

    def positions(value, cohort):
        """The Bloom bits of ``value`` in ``cohort`` (the server's ``bloom_positions``)."""
        fingerprint = _fingerprint(_bit_string(value, bit_length), W)
        out = []
        for j in range(h):
            salt = _mix64((hash_seed + (cohort * h + j + 1) * _GOLDEN) & _MASK64)
            out.append(_mix64(fingerprint ^ salt) % k)
        return sorted(out)

    def permanent(value, secret):
        """``(cohort, permanent bits as an integer)``, derived from the secret."""
        if not isinstance(value, str):
            raise ValueError(f"a 'bloom_rappor' value is a string, got {value!r}.")
        cohort = _prf_below(secret, "rap-chrt", 0, m)
        bloom_positions = positions(value, cohort)
        code = sum(position * k**i for i, position in enumerate(bloom_positions))
        bloom = 0
        for position in bloom_positions:
            bloom |= 1 << position
        # Each bit replaced with probability f (lanes) by a coin (the bits of the words of
        # counters 2^20 + g, group g of 64 bits), as the server's permanent_words.
        replaced = _prf_lanes(secret, "rap-perm", code, k, 2 * half_f)
        coins = 0
        for group in range((k + 63) // 64):
            coins |= _prf(secret, "rap-perm", code, COIN_COUNTER + group) << (64 * group)
        coins &= (1 << k) - 1
        return cohort, (replaced & coins) | (bloom & ~replaced)

    def privatize(value, rng, memo):
        cohort, bits = permanent(value, memo.secret(rng))
        set_words, clear_words = _uniform_words(rng, k), _uniform_words(rng, k)
        ones = [i for i in range(k) if (set_words[i] < q_num if (bits >> i) & 1
                                        else clear_words[i] < p_num)]
        return [cohort >> 8, cohort & 0xFF] + _packed(ones, k)

    built = _ValueKind(None, privatize, stateful=True, check_state=_check_secret_state)
    built.derive = permanent  # (value, secret) -> (cohort, permanent bits) (parity tests)
    return built
