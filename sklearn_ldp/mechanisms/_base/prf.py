"""A keyed pseudorandom function for memoized responses: SipHash-2-4, vectorized.

A memoized (permanent) response must never be drawn twice for one (user, value): restoring a
backup of the state, a second process on the same state or a state rebuilt after a loss would
otherwise give an observer two independent responses of the same value. So, as the RAPPOR
client does, the permanent response is not *stored*: it is *derived*, a deterministic function
of a per-user secret key and the value, through SipHash-2-4 (Aumasson and Bernstein 2012),
a PRF with a 128-bit key and 64-bit output. Whoever holds the same secret computes the same
response; without the secret the words are indistinguishable from uniform random words.

Messages. Every word is SipHash-2-4 of one 7-byte message, ``tag | value << 8 | counter
<< 32`` (little-endian): ``tag`` (one byte, :func:`tag`) separates the purposes, ``value`` is
the reported value (or a step index) and ``counter`` numbers the words one purpose needs, both
below ``2^24`` (:data:`FIELD_LIMIT`; the memoized mechanisms have at most ``2^24`` cells). The
encoding is injective, so distinct (purpose, value, counter) are distinct messages, and a
message under 8 bytes is SipHash's single final block: 2 compression and 4 finalization rounds
per word (a 24-byte message took 12).

Security argument. SipHash-2-4 is a PRF for messages of any length under a uniformly random
128-bit key (Aumasson and Bernstein 2012): its outputs on distinct messages are
indistinguishable from independent uniform 64-bit words for anyone without the key. Each user
has its own key (its secret) and each word it needs has its own message, so the words read by
the samplers below are, computationally, independent uniform words, and a sampler that is
exact on uniform words gives exactly the law that is checked. The exact samplers read them as
they read random words: a Bernoulli(``a / 2^52``) bit is ``(word >> 12) < a``, a uniform
integer in ``[0, m)`` is ``word % m`` for the first word of a counter sequence at or above
``2^64 mod m`` (rejection), and :func:`prf_bernoulli_lanes` compares the digits of bit-sliced
uniform integers with the numerators'. Nothing in a report depends on the words except through
those samplers, and nothing about the key is stored beyond the secret itself. Not used:
SipHash-1-3 (fewer rounds, a weaker analysis) and ad-hoc extensions of the output.

The standard-library client (``sklearn_ldp/deploy/client/memo.py``) computes the same function
in pure Python, bit for bit (tested against the paper's test vector and against this module).

References
----------
.. [1] J.-P. Aumasson and D. J. Bernstein, "SipHash: a fast short-input PRF",
   INDOCRYPT 2012.
.. [2] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", ACM CCS 2014 (permanent responses derived from a
   client secret).
"""

import secrets as _secrets

import numpy as np

_U64 = np.uint64
# "somepseudorandomlygeneratedbytes": SipHash's initialisation constants.
_INIT = (_U64(0x736F6D6570736575), _U64(0x646F72616E646F6D), _U64(0x6C7967656E657261),
         _U64(0x7465646279746573))
_SHIFTS = {r: (_U64(r), _U64(64 - r)) for r in (13, 16, 17, 21, 32)}
# Elements hashed at once (see siphash24).
_CHUNK = 2**14
# The purposes of the words (the message's tag byte is the position here plus one).
PURPOSES = ("grr-perm", "ue-plane", "dbf-bckt", "dbf-bits", "1bm-alph", "1bm-bits",
            "rap-chrt", "rap-perm")
FIELD_LIMIT = 2**24  # values and counters of a message lie in [0, FIELD_LIMIT)
_MESSAGE_LENGTH = _U64(7 << 56)  # SipHash's length byte of a 7-byte message
# The counters of prf_bernoulli_lanes: group * _GROUP_WORDS + word (a group reads at most 52
# words, one digit each), below FIELD_LIMIT for 2^24 lanes.
_GROUP_WORDS = 64


def tag(label):
    """The tag byte of a purpose (``PURPOSES``): its position plus one.

    Examples
    --------
    >>> tag("grr-perm"), tag("1bm-bits")
    (1, 6)
    """
    if label not in PURPOSES:
        raise ValueError(f"the PRF purpose must be one of {PURPOSES}, got {label!r}.")
    return PURPOSES.index(label) + 1


def _rotate(x, r, scratch):
    """``x`` rotated left by ``r`` bits, in place (``scratch`` is overwritten)."""
    left, right = _SHIFTS[r]
    np.right_shift(x, right, out=scratch)
    np.left_shift(x, left, out=x)
    np.bitwise_or(x, scratch, out=x)


def _sip_round(v0, v1, v2, v3, scratch):
    v0 += v1
    _rotate(v1, 13, scratch)
    v1 ^= v0
    _rotate(v0, 32, scratch)
    v2 += v3
    _rotate(v3, 16, scratch)
    v3 ^= v2
    v0 += v3
    _rotate(v3, 21, scratch)
    v3 ^= v0
    v2 += v1
    _rotate(v1, 17, scratch)
    v1 ^= v2
    _rotate(v2, 32, scratch)


def siphash24(key0, key1, blocks):
    """SipHash-2-4 of messages given as their 64-bit blocks, vectorized (uint64).

    Parameters
    ----------
    key0, key1 : array-like of uint64
        The two little-endian halves of each 128-bit key (broadcast together with the
        blocks).
    blocks : sequence of array-like of uint64
        The message's little-endian 8-byte words, the last one already holding the trailing
        bytes and the length byte (``length % 256`` in the top byte), as in the paper.

    Returns
    -------
    ndarray of uint64
        One 64-bit output per element of the broadcast shape.

    Examples
    --------
    The paper's test vector (key ``00 01 .. 0f``, message ``00 01 .. 0e``, 15 bytes):

    >>> key = bytes(range(16))
    >>> k0, k1 = (np.uint64(int.from_bytes(key[i:i + 8], "little")) for i in (0, 8))
    >>> message = bytes(range(15))
    >>> m0 = np.uint64(int.from_bytes(message[:8], "little"))
    >>> m1 = np.uint64(int.from_bytes(message[8:], "little") | (15 << 56))
    >>> hex(int(siphash24(k0, k1, [m0, m1])))
    '0xa129ca6149be45e5'
    """
    k0 = np.asarray(key0, dtype=_U64)
    k1 = np.asarray(key1, dtype=_U64)
    blocks = [np.asarray(block, dtype=_U64) for block in blocks]
    shape = np.broadcast_shapes(k0.shape, k1.shape, *(block.shape for block in blocks))
    k0, k1, *blocks = (np.broadcast_to(part, shape).reshape(-1)
                       for part in (k0, k1, *blocks))
    out = np.empty(k0.shape[0], dtype=_U64)
    # Chunks that stay in the processor's cache: the ~170 array operations of a one-block
    # hash then run on cached data; the state starts from the key slices directly.
    for start in range(0, out.shape[0], _CHUNK):
        part = slice(start, start + _CHUNK)
        _hash_chunk(k0[part], k1[part], [block[part] for block in blocks], out[part])
    return out.reshape(shape)


def _hash_chunk(a, b, blocks, out):
    """SipHash-2-4 of one cache-sized chunk: keys ``a, b``, message ``blocks``, into ``out``
    (1-D uint64 arrays of one length; none of the inputs is modified)."""
    v0, v1, v2, v3 = a ^ _INIT[0], b ^ _INIT[1], a ^ _INIT[2], b ^ _INIT[3]
    scratch = np.empty_like(v0)
    for block in blocks:
        v3 ^= block
        _sip_round(v0, v1, v2, v3, scratch)
        _sip_round(v0, v1, v2, v3, scratch)
        v0 ^= block
    v2 ^= _U64(0xFF)
    for _ in range(4):
        _sip_round(v0, v1, v2, v3, scratch)
    v0 ^= v1
    v2 ^= v3
    np.bitwise_xor(v0, v2, out=out)
    return out


def _field(values, name):
    """``values`` as uint64, or a ValueError naming the field if one is outside
    ``[0, FIELD_LIMIT)``."""
    values = np.asarray(values)
    if values.dtype.kind not in "iu":
        raise ValueError(f"PRF {name}s must be integers, got {values.dtype}.")
    if values.size and (values.min() < 0 or values.max() >= FIELD_LIMIT):
        raise ValueError(f"PRF {name}s must lie in [0, 2^24), got {values.min()} .. "
                         f"{values.max()}.")
    return values.astype(_U64)


def prf_message(label, values, counters):
    """The one-block messages ``tag | value << 8 | counter << 32``, length byte included
    (uint64).

    Examples
    --------
    >>> hex(int(prf_message("grr-perm", 5, 2)))
    '0x700000200000501'
    """
    values, counters = _field(values, "value"), _field(counters, "counter")
    return (_U64(tag(label)) | (values << _U64(8)) | (counters << _U64(32))) | _MESSAGE_LENGTH


def prf_words(secrets, label, values, counters):
    """The PRF word of each ``(secret, label, value, counter)`` (uint64).

    Parameters
    ----------
    secrets : ndarray of uint64, shape (n, 2)
        One 128-bit secret per element (the two key halves).
    label : str
        The purpose (one of ``PURPOSES``, see :func:`tag`).
    values, counters : array-like of int
        Broadcast to ``(n,)``; in ``[0, 2^24)``.

    Returns
    -------
    ndarray of uint64, shape (n,)

    Examples
    --------
    >>> keys = np.array([[1, 2], [1, 2]], dtype=np.uint64)
    >>> words = prf_words(keys, "ue-plane", [5, 5], [0, 1])
    >>> bool(words[0] != words[1])
    True
    """
    secrets = np.asarray(secrets, dtype=_U64)
    message = np.broadcast_to(prf_message(label, values, counters), (secrets.shape[0],))
    return siphash24(secrets[:, 0], secrets[:, 1], [message])


def prf_uniform_below(secrets, label, values, high):
    """Exactly uniform integers in ``[0, high)`` (int64), one per secret, from PRF words.

    The word of counter ``c`` is accepted when it is at least ``2^64 mod high`` (so the
    accepted words are a whole number of copies of ``[0, high)``) and gives ``word % high``;
    a rejected word moves on to counter ``c + 1`` (probability below ``high / 2^64``).

    Examples
    --------
    >>> keys = np.arange(20, dtype=np.uint64).reshape(10, 2)
    >>> values = prf_uniform_below(keys, "dbf-bckt", np.zeros(10, dtype=np.int64), 3)
    >>> bool(((values >= 0) & (values < 3)).all())
    True
    """
    high = int(high)
    if not 1 <= high < 2**63:
        raise ValueError(f"high must lie in [1, 2^63), got {high!r}.")
    values = np.broadcast_to(np.asarray(values), (secrets.shape[0],))
    limit = _U64((2**64) % high)
    out = np.empty(values.shape[0], dtype=np.int64)
    pending = np.arange(values.shape[0])
    counter = 0
    while pending.size:
        words = prf_words(secrets[pending] if counter else secrets, label,
                          values[pending] if counter else values, counter)
        accepted = words >= limit
        if not counter and accepted.all():  # the usual case: no word rejected, no gathers
            return (words % _U64(high)).astype(np.int64)
        out[pending[accepted]] = (words[accepted] % _U64(high)).astype(np.int64)
        pending = pending[~accepted]
        counter += 1
    return out


def prf_bernoulli(secrets, label, values, counters, numerators):
    """Bits ``(word >> 12) < a``: 1 with probability ``a / 2^52`` exactly (bool).

    Examples
    --------
    >>> keys = np.arange(2000, dtype=np.uint64).reshape(1000, 2)
    >>> bits = prf_bernoulli(keys, "1bm-bits", np.zeros(1000, np.int64), 0, 2**51)
    >>> bool(0.4 < bits.mean() < 0.6)
    True
    """
    words = prf_words(secrets, label, values, counters)
    return (words >> _U64(12)).astype(np.int64) < np.asarray(numerators, dtype=np.int64)


def prf_bernoulli_lanes(secrets, label, values, n_bits, numerator, precision=52,
                        own_numerator=None):
    """``(n, ceil(n_bits / 64))`` uint64 words of bits, bit ``j`` of word ``g`` (lane
    ``64 g + j``) equal to 1 with probability ``numerator / 2^precision``, independently;
    with ``own_numerator``, lane ``values[i]`` of row ``i`` uses it instead.

    Bit-sliced comparison: lane ``j`` of group ``g`` compares the integer ``U_j`` whose binary
    digits (from the top) are read from PRF words with its numerator, and is 1 when
    ``U_j < numerator``: exactly Bernoulli(``numerator / 2^precision``). A group of ``w``
    lanes (64, or fewer in the last group) uses ``L`` bits of a word per digit, ``L`` the
    power of two ``>= w``, so one word holds ``P = 64 / L`` digits: digit ``t`` of lane ``j``
    is bit ``(t mod P) L + j`` of the word of counter ``64 g + t div P``. A lane is
    decided at the first digit where ``U_j`` and its numerator differ, so a group stops
    asking for words once all its lanes are decided (on average about ``log2(w) + 1.3``
    digits); the result does not depend on when it stops (a word is a function of its
    counter only). A lane whose numerator is ``2^precision`` is 1 without digits. Lanes
    ``>= n_bits`` are 0.

    Examples
    --------
    >>> keys = np.arange(200, dtype=np.uint64).reshape(100, 2)
    >>> words = prf_bernoulli_lanes(keys, "ue-plane", np.zeros(100, np.int64), 10, 2**51)
    >>> words.shape, bool((words >> np.uint64(10) == 0).all())
    ((100, 1), True)
    >>> own = prf_bernoulli_lanes(keys, "ue-plane", np.zeros(100, np.int64), 10, 0,
    ...                           own_numerator=2**52)
    >>> bool((own == 1).all())
    True
    """
    numerator, precision = int(numerator), int(precision)
    own = numerator if own_numerator is None else int(own_numerator)
    for name, a in (("numerator", numerator), ("own_numerator", own)):
        if not 0 <= a <= 2**precision or not 1 <= precision <= 64:
            raise ValueError(f"{name} must lie in [0, 2**{precision}], got {a!r}.")
    values = np.asarray(values, dtype=np.int64)
    n = secrets.shape[0]
    groups = -(-n_bits // 64)
    if groups * _GROUP_WORDS > FIELD_LIMIT:
        raise ValueError(f"n_bits must be at most 2^24 (the PRF's counter field), got "
                         f"{n_bits!r}.")
    result = np.zeros((n, groups), dtype=_U64)
    # Validated once; a word's message is then this base with its counter OR-ed in.
    base = np.broadcast_to(prf_message(label, values, 0), (n,))
    k0, k1 = (np.ascontiguousarray(secrets[:, i], dtype=_U64) for i in (0, 1))
    lanes = [_LaneDigits(numerator, precision), _LaneDigits(own, precision)]
    for group in range(groups):
        width = min(64, n_bits - 64 * group)
        # The own lane's bit in this group, per row (0 where the value is elsewhere).
        own_bit = np.zeros(n, _U64) if own == numerator else np.where(
            (values >> 6) == group, _U64(1) << (values & 63).astype(_U64), _U64(0))
        column = result[:, group]
        # The first digits row chunk by row chunk, in the processor's cache; the few rows
        # still undecided then (about a fifth) together, so that the last digits are not
        # many small chunks (each array operation has a fixed cost).
        tails = []
        for start in range(0, n, _CHUNK):
            part = slice(start, start + _CHUNK)
            rows = _LaneRows(np.arange(start, min(start + _CHUNK, n)), k0[part], k1[part],
                             base[part], own_bit[part], width, lanes)
            tails.append(rows.decide(column, group * _GROUP_WORDS, 0, _DENSE_DIGITS))
        _LaneRows.concatenate(tails).decide(column, group * _GROUP_WORDS, _DENSE_DIGITS,
                                            precision)
        result[:, group] = column
    # Lanes equal to their numerator on every digit are U_j == numerator: not below, 0.
    return result


# Digits decided chunk by chunk before the undecided rows are pooled (a multiple of every
# group's digits per word, 64 // lane_bits, up to 8; narrower groups finish in one phase).
_DENSE_DIGITS = 8


class _LaneDigits:
    """A numerator's binary digits from the top (``None`` for ``2^precision``: 1 at once)."""

    def __init__(self, numerator, precision):
        self.numerator = numerator
        self.digits = None if numerator == 2**precision else [
            (numerator >> (precision - 1 - t)) & 1 for t in range(precision)]

    def digit(self, t):
        return 0 if self.digits is None else self.digits[t]


class _LaneRows:
    """Rows of one group whose lanes are being decided (see :func:`prf_bernoulli_lanes`):
    their indices, keys, base messages, own-lane bits, decided bits and undecided lanes."""

    def __init__(self, rows, k0, k1, base, own_bit, width, lanes, bits=None, pending=None):
        self.rows, self.k0, self.k1, self.base, self.own_bit = rows, k0, k1, base, own_bit
        self.width, self.lanes = width, lanes
        self.valid = _U64(2**width - 1)
        if bits is None:
            common, special = lanes
            # Lanes that are 1 without digits (a numerator of 2^precision); the others wait.
            bits = (_U64(0) if common.digits is not None else self.valid) & ~own_bit
            if special.digits is None:
                bits |= own_bit
            pending = self.valid & ~bits
        self.bits, self.pending = bits, pending

    @classmethod
    def concatenate(cls, parts):
        first = parts[0]
        joined = [np.concatenate([getattr(part, name) for part in parts]) for name in
                  ("rows", "k0", "k1", "base", "own_bit", "bits", "pending")]
        rows, k0, k1, base, own_bit, bits, pending = joined
        return cls(rows, k0, k1, base, own_bit, first.width, first.lanes, bits, pending)

    def _keep(self, keep):
        kept = np.flatnonzero(keep)  # once, instead of once per array
        for name in ("rows", "k0", "k1", "base", "own_bit", "bits", "pending"):
            setattr(self, name, getattr(self, name).take(kept))

    def decide(self, column, first_counter, start, stop):
        """Digits ``start .. stop - 1``; rows decided are written to ``column`` and dropped.
        Returns ``self`` (the rows still undecided)."""
        common, special = self.lanes
        lane_bits = 1 << (self.width - 1).bit_length()
        per_word = 64 // lane_bits
        stop = min(stop, len(common.digits or special.digits or []))
        stored = None
        for t in range(start, stop):
            step = t % per_word
            if step == 0 or stored is None:
                # Rows with every lane decided are written out and dropped, once they are
                # an eighth of the rows still hashed (each drop costs a few gathers).
                done = self.pending == 0
                count = int(np.count_nonzero(done))
                if count and (8 * count >= done.size or count == done.size):
                    column[self.rows[done]] = self.bits[done]
                    self._keep(~done)
                if not self.rows.size:
                    break
                message = self.base | _U64((first_counter + t // per_word) << 32)
                stored = siphash24(self.k0, self.k1, [message])
                words = stored >> _U64(step * lane_bits) if step else stored
            else:
                # This digit of every lane in the low bits (the bits above belong to other
                # digits and meet no pending lane).
                words = stored >> _U64(step * lane_bits)
            # The numerators' digit t per lane: the common one, the own lane's where it
            # differs. A lane is decided where its digit of U differs, and is 1 where its
            # numerator's digit is 1.
            digit = self.valid if common.digit(t) else _U64(0)
            if special.digit(t) != common.digit(t):
                digit = self.own_bit ^ digit
            decided = self.pending & (words ^ digit)
            self.bits |= decided & digit
            self.pending &= ~decided
        if stop == len(common.digits or special.digits or []):
            column[self.rows] = self.bits
        return self


def new_secrets(n_users, rng=None):
    """``(n_users, 2)`` uint64: a 128-bit secret per user.

    From the operating system's entropy (:mod:`secrets`) when ``rng`` is None (deployment);
    from ``rng`` (a numpy Generator) otherwise, for reproducible simulation only: whoever
    knows the seed can recompute every permanent response.

    Examples
    --------
    >>> new_secrets(3).shape
    (3, 2)
    """
    n_users = int(n_users)
    if rng is None:
        raw = _secrets.token_bytes(16 * n_users)
        return np.frombuffer(raw, dtype="<u8").astype(_U64).reshape(n_users, 2)
    return rng.integers(0, 2**64 - 1, size=(n_users, 2), dtype=_U64, endpoint=True)
