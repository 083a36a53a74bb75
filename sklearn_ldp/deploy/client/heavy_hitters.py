"""Heavy hitters on the device: PEM/TreeHist prefixes and the count sketches.
"""

import math

from ._exact import (
    _GOLDEN,
    _MASK64,
    _ONE,
    _keep_numerator,
    _mix64,
    _packed,
    _parity,
    _uniform_words,
    _within,
)
from ._spec import _check_budget, _check_fields, _check_int, _ValueKind
from .oracles import _olh_buckets

MAX_BIT_LENGTH = 1024  # heavy_hitters.MAX_BIT_LENGTH
MAX_CANDIDATES = 2**16  # heavy_hitters.MAX_CANDIDATES
MAX_SKETCH_WIDTH = 2**20
MAX_SKETCH_HASHES = 2**16
LENGTH_ROUND_FIRST = 2**16  # heavy_hitters.prefix.LENGTH_ROUND_FIRST


def _bit_string(value, bit_length, max_string_bytes=None):
    """The value as the server's bit string (``heavy_hitters.encode_values``): an integer of
    ``W * 64`` bits, word 0 most significant; ``W = ceil(bit_length / 64)``. A string of up
    to ``max_string_bytes`` bytes (default ``bit_length / 8``) is truncated to
    ``bit_length / 8`` bytes, as the server's ``HeavyHitterMechanism.encode``."""
    W = -(-bit_length // 64)
    if isinstance(value, int) and not isinstance(value, bool):
        if not 0 <= value < 1 << bit_length:
            raise ValueError(f"the value {value!r} is not in [0, 2^{bit_length}).")
        return value << (W * 64 - bit_length)  # the L-bit string at the top
    if isinstance(value, str):
        if "\0" in value:  # the zero padding could not tell "a" and "a\0" apart
            raise ValueError(f"the value {value!r} holds a NUL character, which the zero "
                             "padding of the encoding cannot tell apart.")
        try:
            data = value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise ValueError(f"the value {value!r} is not a valid Unicode string ({exc.reason} "
                             f"at position {exc.start}): it has no UTF-8 encoding.") from None
    elif isinstance(value, (bytes, bytearray)):
        data = bytes(value)
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"the value {value!r} is not valid UTF-8 ({exc.reason} at byte "
                             f"{exc.start}).") from None
        if b"\0" in data:
            raise ValueError(f"the value {value!r} holds a NUL byte, which the zero padding "
                             "of the encoding cannot tell apart.")
    else:
        raise ValueError(f"the value must be an integer or a string, got {value!r}.")
    if bit_length % 8:
        raise ValueError(f"string values need a bit_length that is a multiple of 8, got "
                         f"{bit_length}; the value {value!r} cannot be encoded.")
    cap = bit_length // 8 if max_string_bytes is None else max_string_bytes
    if len(data) > cap:
        raise ValueError(f"the value {value!r} takes {len(data)} bytes in UTF-8, more than "
                         f"the declared maximum of {cap} bytes.")
    return int.from_bytes(data[:bit_length // 8].ljust(W * 8, b"\0"), "big")


# Repeats sklearn_ldp.mechanisms.heavy_hitters.prefix.prefix_schedule (standard library only,
# so that a
# device can copy this folder alone: not imported from the server).
def _prefix_schedule(bit_length, n_candidates, extension_bits):
    """``heavy_hitters.prefix_schedule``, same formula."""
    first = min(bit_length, max(1, math.ceil(math.log2(n_candidates))) + extension_bits)
    rest = bit_length - first
    steps = -(-rest // extension_bits)
    lengths = [first]
    for i in range(steps):
        lengths.append(lengths[-1] + rest // steps + (i < rest % steps))
    return lengths


def _prefix_heavy_hitters(spec):
    """``PrefixHeavyHitters`` (PEM, TreeHist): a uniform round, a 64-bit seed naming the
    round's linear hash (SplitMix64 rows, bit for bit the server's), and the randomized hash
    of the value's prefix. Report ``[round, seed, y]``."""
    kind = "prefix_heavy_hitters"
    fields = ("bit_length", "epsilon", "protocol", "n_candidates", "extension_bits")
    _check_fields(spec, kind, fields, ("max_string_bytes", "length_round"))
    L = spec["bit_length"]
    if isinstance(L, bool) or not isinstance(L, int) or not 1 <= L <= MAX_BIT_LENGTH:
        raise ValueError(f"bit_length of the {kind!r} specification must be an integer in "
                         f"[1, {MAX_BIT_LENGTH}], got {L!r}.")
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    protocol = spec["protocol"]
    if protocol not in ("pem", "treehist"):
        raise ValueError(f"protocol of the {kind!r} specification must be 'pem' or 'treehist', "
                         f"got {protocol!r}.")
    n_candidates = _check_int(spec["n_candidates"], f"n_candidates of the {kind!r} "
                              "specification")
    eta = _check_int(spec["extension_bits"], f"extension_bits of the {kind!r} specification")
    if protocol == "treehist" and eta != 1:
        raise ValueError(f"extension_bits of a 'treehist' specification is 1, got {eta!r}.")
    if n_candidates > MAX_CANDIDATES or eta > 16 or n_candidates << eta > MAX_CANDIDATES:
        raise ValueError(f"n_candidates * 2^extension_bits of the {kind!r} specification must "
                         f"be at most {MAX_CANDIDATES}, got n_candidates={n_candidates}, "
                         f"extension_bits={eta}.")
    # The selection rounds, then the server's verification round of whole values.
    cap = spec.get("max_string_bytes")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int)
                            or not L // 8 <= cap <= MAX_BIT_LENGTH // 8):
        raise ValueError(f"max_string_bytes of the {kind!r} specification must be an integer "
                         f"in [{L // 8}, {MAX_BIT_LENGTH // 8}], got {cap!r}.")
    length_cap = _length_round(spec, kind, L, protocol, n_candidates, eta, cap)
    lengths = _prefix_schedule(L, n_candidates, eta) + [L]
    W = -(-L // 64)
    if protocol == "pem":
        g = _olh_buckets(epsilon, "linear")  # best_power_of_two_buckets
        n_rows = g.bit_length() - 1
    else:
        g, n_rows = 2, 1
    # The own bucket is kept when a 52-bit word is below the server's numerator (the largest
    # with a (g - 1) / (2^52 - a) <= e^eps, decided exactly): exactly its law.
    keep = _keep_numerator(epsilon, g)
    top = W * 64

    def own_hash(seed, prefix, length):
        mask = ((1 << length) - 1) << (top - length)
        hashed = 0
        for row in range(n_rows):
            # Row `row` is words row * W + 1 .. row * W + W of SplitMix64 from the seed.
            bits = 0
            for w in range(W):
                step = (row * W + w + 1) * _GOLDEN
                bits = (bits << 64) | _mix64((seed + step) & _MASK64)
            hashed |= _parity(bits & mask, prefix) << row
        return hashed

    def privatize(value, rng, memo=None):
        if length_cap is not None:  # the length round: the string's UTF-8 length
            value = _utf8_length(value, length_cap)
        x = _bit_string(value, L, cap)
        round_index = rng.randrange(len(lengths))
        seed = rng.getrandbits(64)
        length = lengths[round_index]
        prefix = x & (((1 << length) - 1) << (top - length))
        own = own_hash(seed, prefix, length)
        kept = _uniform_words(rng, 1)[0] < keep
        if protocol == "pem":  # g-ary randomized response of the bucket
            other = rng.randrange(g - 1)  # exact: rejection on random bits
            other += other >= own
            y = own if kept else other
        else:
            y = own ^ (not kept)
        first = 0 if length_cap is None else LENGTH_ROUND_FIRST
        return [first + round_index, seed, int(y)]

    privatize.keep_numerator = keep  # exposed for the tests (the server's integer)

    privatize.own_hash = own_hash  # exposed for the tests (agreement with the server)
    return _ValueKind(None, privatize)


def _length_round(spec, kind, L, protocol, n_candidates, eta, cap):
    """The declared maximum of a length round's specification (``heavy_hitters.prefix.
    length_round_spec``), or None for prefix rounds; a ValueError names a bad field."""
    if "length_round" not in spec:
        return None
    round_spec = spec["length_round"]
    if not isinstance(round_spec, dict) or set(round_spec) != {"first_round",
                                                                "max_string_bytes"}:
        raise ValueError(f"length_round of the {kind!r} specification must be an object with "
                         f"the fields first_round and max_string_bytes, got {round_spec!r}.")
    if round_spec["first_round"] != LENGTH_ROUND_FIRST \
            or isinstance(round_spec["first_round"], bool):
        raise ValueError(f"length_round.first_round of the {kind!r} specification must be "
                         f"{LENGTH_ROUND_FIRST}, got {round_spec['first_round']!r}.")
    length_cap = round_spec["max_string_bytes"]
    if isinstance(length_cap, bool) or not isinstance(length_cap, int) \
            or not 1 <= length_cap <= 255:
        raise ValueError(f"length_round.max_string_bytes of the {kind!r} specification must "
                         f"be an integer in [1, 255], got {length_cap!r}.")
    # The length oracle of the server: one 8-bit round of PEM, then its verification round.
    if (L, protocol, n_candidates, eta, cap) != (8, "pem", 1, 8, None):
        raise ValueError(f"a {kind!r} specification with a length_round reports an 8-bit "
                         "length through PEM (bit_length 8, protocol 'pem', n_candidates 1, "
                         f"extension_bits 8, no max_string_bytes), got bit_length={L!r}, "
                         f"protocol={protocol!r}, n_candidates={n_candidates!r}, "
                         f"extension_bits={eta!r}, max_string_bytes={cap!r}.")
    return length_cap


def _utf8_length(value, cap):
    """The length in bytes of a string's UTF-8 encoding, refused as ``_bit_string`` refuses
    the value (not a string, NUL, no UTF-8 encoding, more than ``cap`` bytes)."""
    if not isinstance(value, (str, bytes, bytearray)):
        raise ValueError(f"a length round's value is the string itself (its UTF-8 length is "
                         f"reported), got {value!r}.")
    _bit_string(value, 8 * cap)  # the same checks as the prefix rounds' encoding
    return len(value.encode("utf-8") if isinstance(value, str) else value)


def _fingerprint(x, W):
    """``heavy_hitters._fingerprints`` of one bit string."""
    state = 0
    for w in range(W):
        word = (x >> (64 * (W - 1 - w))) & _MASK64
        state = (_mix64(state ^ word) + _GOLDEN * (w + 1)) & _MASK64
    return state


def _sketch(spec):
    """``SketchFrequencyOracle``: CMS report ``[j // 256, j % 256, packed bits...]`` (the
    ``+-1`` vector, bit 1 = +1), HCMS report ``[j, l, bit]``; the flip bits exact (dyadic, as
    the server)."""
    kind = "sketch"
    _check_fields(spec, kind, ("epsilon", "n_hashes", "width", "hadamard", "hash_seed"),
                  ("bit_length",))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    # The encoder's client_spec() adds the values' bit length; a bare math-layer spec has
    # none, and then every value comes as a pair [value, bit_length].
    declared = spec.get("bit_length")
    if declared is not None and (isinstance(declared, bool) or not isinstance(declared, int)
                                 or not 1 <= declared <= MAX_BIT_LENGTH):
        raise ValueError(f"bit_length of the 'sketch' specification must be an integer in "
                         f"[1, {MAX_BIT_LENGTH}], got {declared!r}.")
    k = spec["n_hashes"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SKETCH_HASHES:
        raise ValueError(f"n_hashes of the 'sketch' specification must be an integer in "
                         f"[1, {MAX_SKETCH_HASHES}], got {k!r}.")
    m = spec["width"]
    if isinstance(m, bool) or not isinstance(m, int) or not 2 <= m <= MAX_SKETCH_WIDTH:
        raise ValueError(f"width of the 'sketch' specification must be an integer in "
                         f"[2, {MAX_SKETCH_WIDTH}], got {m!r}.")
    hadamard = spec["hadamard"]
    if not isinstance(hadamard, bool):
        raise ValueError(f"hadamard of the 'sketch' specification must be true or false, got "
                         f"{hadamard!r}.")
    if hadamard and m & (m - 1):
        raise ValueError(f"width of an HCMS 'sketch' specification must be a power of two, got "
                         f"{m!r}.")
    hash_seed = spec["hash_seed"]
    if isinstance(hash_seed, bool) or not isinstance(hash_seed, int) \
            or not 0 <= hash_seed < 2**64:
        raise ValueError(f"hash_seed of the 'sketch' specification must be an integer in "
                         f"[0, 2^64), got {hash_seed!r}.")
    flip_num = _sketch_flip_numerator(epsilon, hadamard)
    salts = {}

    def position(x, W, j):
        if j not in salts:
            salts[j] = _mix64((hash_seed + (j + 1) * _GOLDEN) & _MASK64)
        return _mix64(_fingerprint(x, W) ^ salts[j]) % m

    def privatize(value, rng, memo=None):
        # The hash covers the W words of encode_values(values, bit_length), and the bit
        # length (not in the spec) moves an integer within them: the value comes with it.
        x, W = _sketch_words(value, declared)
        j = rng.randrange(k)
        h = position(x, W, j)
        if not hadamard:
            words = _uniform_words(rng, m)
            ones = {i for i, word in enumerate(words) if word < flip_num}
            ones ^= {h}
            # j in two big-endian bytes (j < 2^16), then the packed bits: every entry a
            # byte, the row layout of the encoder's heavy-hitter reports.
            return [j >> 8, j & 0xFF] + _packed(sorted(ones), m)
        coordinate = rng.randrange(m)
        flip = _uniform_words(rng, 1)[0] < flip_num
        return [j, coordinate, int((_parity(coordinate, h) == 0) ^ flip)]

    privatize.position = position  # exposed for the tests
    return _ValueKind(None, privatize)


def _sketch_words(value, declared=None):
    """``(bit string, W)`` of a sketch value encoded as the server's
    ``encode_values(values, bit_length)``: a plain value when the specification declares the
    bit length, else a pair ``[value, bit_length]`` (which must agree with a declared one)."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        item, bit_length = value
        if isinstance(bit_length, bool) or not isinstance(bit_length, int) \
                or not 1 <= bit_length <= MAX_BIT_LENGTH:
            raise ValueError(f"the bit_length of the value must be an integer in "
                             f"[1, {MAX_BIT_LENGTH}], got {bit_length!r}.")
        if declared is not None and bit_length != declared:
            raise ValueError(f"the value's bit_length {bit_length} is not the specification's "
                             f"{declared}.")
    elif declared is not None:
        item, bit_length = value, declared
    else:
        raise ValueError(f"a 'sketch' value is a pair [value, bit_length] (the bit_length the "
                         f"server passes to encode_values), got {value!r}.")
    return _bit_string(item, bit_length), -(-bit_length // 64)


def _sketch_flip_numerator(epsilon, hadamard):
    """``SketchFrequencyOracle._flip_numerator``: ``f = 2^52 - a``, ``a`` the largest keep
    numerator with ``a / f <= e^eps'`` (``eps' = eps / 2`` for CMS), then the whole report's
    ratio checked on the integers (``(a / f)^2`` for CMS: two entries differ)."""
    flip = _ONE - _keep_numerator(epsilon / (1 if hadamard else 2), 2)
    power = 1 if hadamard else 2
    if not 0 < flip < _ONE // 2 or not _within((_ONE - flip) ** power, flip ** power, epsilon):
        raise ValueError(f"epsilon of the 'sketch' specification gives the flip numerator "
                         f"{flip}, whose ratio is not within e^{epsilon!r}.")
    return flip
