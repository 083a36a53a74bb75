"""A keyed pseudorandom function for memoized responses: SipHash-2-4, vectorized.

A memoized (permanent) response must never be drawn twice for one (user, value): restoring a
backup of the state, a second process on the same state or a state rebuilt after a loss would
otherwise give an observer two independent responses of the same value. So, as the RAPPOR
client does, the permanent response is not *stored*: it is *derived*, a deterministic function
of a per-user secret key and the value, through SipHash-2-4 (Aumasson and Bernstein 2012),
a PRF with a 128-bit key and 64-bit output. Whoever holds the same secret computes the same
response; without the secret the words are indistinguishable from uniform random words.

The messages are always three 64-bit words ``(tag, value, counter)`` (24 bytes): ``tag``
separates the purposes (an 8-character ASCII label read as a little-endian integer, see
:func:`tag`), ``value`` is the reported value (or a step index) and ``counter`` numbers the
words one purpose needs. The exact samplers then read those words as they read random words:
a Bernoulli(``a / 2^52``) bit is ``(word >> 12) < a``, a uniform integer in ``[0, m)`` is
``word % m`` for the first word of a counter sequence at or above ``2^64 mod m`` (rejection),
so the law of a derived response is exactly the law that is checked (for a secret drawn
uniformly at random and SipHash taken as a PRF).

The standard-library client (``sklearn_ldp/deploy/client.py``) computes the same function in pure
Python, bit for bit (tested against the paper's test vector and against this module).

Speed, without changing the function. SipHash absorbs a message block by block, so the
state after the first blocks ``(tag, value)`` is shared by every counter of that user and
value: :func:`prf_absorb` computes it once and :func:`prf_finish` continues from it for each
counter (8 of the 12 rounds of a 24-byte message). This is an evaluation order, not a new
construction: every word is exactly SipHash-2-4 of its full message under the user's key,
so the security argument above (a PRF under a uniformly random 128-bit key, distinct
messages for distinct words) is unchanged, and the client, which hashes each message whole,
derives identical words. The cached states are as secret as the keys (they determine every
word of that prefix) and live only in memory, never in a saved state. Not done: SipHash-1-3
(fewer rounds, weaker analysis) and several words per output (SipHash's 128-bit-output
variant); either would change the words and the state format.

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
# The last block of a 24-byte message: no trailing bytes, the length (24) in the top byte.
_LENGTH_24 = _U64(24 << 56)
# Elements hashed at once (see siphash24).
_CHUNK = 2**14


def tag(label):
    """The domain-separation word of an 8-character ASCII label (little-endian).

    Examples
    --------
    >>> hex(tag("grr-keep"))
    '0x7065656b2d727267'
    """
    raw = label.encode("ascii")
    if len(raw) != 8:
        raise ValueError(f"a tag is 8 ASCII characters, got {label!r}.")
    return int.from_bytes(raw, "little")


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
    # Chunks that stay in the processor's cache; the state starts from the key slices
    # directly (no (4, n) state array: measured 0.125 s per 10^6 words against 0.16 s).
    for start in range(0, out.shape[0], _CHUNK):
        part = slice(start, start + _CHUNK)
        a, b = k0[part], k1[part]
        v0, v1, v2, v3 = a ^ _INIT[0], b ^ _INIT[1], a ^ _INIT[2], b ^ _INIT[3]
        scratch = np.empty_like(v0)
        _compress(v0, v1, v2, v3, [block[part] for block in blocks], scratch)
        _finalize(v0, v1, v2, v3, scratch, out[part])
    return out.reshape(shape)


def _finalize(v0, v1, v2, v3, scratch, out):
    """SipHash-2-4's finalization of ``v0..v3`` into ``out``."""
    v2 ^= _U64(0xFF)
    for _ in range(4):
        _sip_round(v0, v1, v2, v3, scratch)
    v0 ^= v1
    v2 ^= v3
    np.bitwise_xor(v0, v2, out=out)


def _initial_state(k0, k1):
    """``(4, n)`` uint64: SipHash's state ``v0..v3`` after the key, before any block."""
    return np.stack([k0 ^ _INIT[0], k1 ^ _INIT[1], k0 ^ _INIT[2], k1 ^ _INIT[3]])


def _broadcast_blocks(blocks, n):
    return [np.broadcast_to(np.asarray(block, dtype=_U64), (n,)) for block in blocks]


def siphash24_absorb(key0, key1, blocks):
    """SipHash-2-4's internal state after the key and the first message ``blocks``.

    The hash of a message is a function of this state and the remaining blocks only
    (:func:`siphash24_finish`), so words whose messages share their first blocks (one user's
    ``(tag, value)`` with many counters) compute those blocks' rounds once. The output is
    bit for bit SipHash-2-4 of the whole message: this is the same function, evaluated in
    two steps.

    Parameters
    ----------
    key0, key1 : ndarray of uint64, shape (n,)
        The two halves of each key.
    blocks : sequence of array-like of uint64
        The first blocks of the messages (none of them the length block).

    Returns
    -------
    ndarray of uint64, shape (4, n)

    Examples
    --------
    >>> keys = np.array([3, 4], dtype=np.uint64)
    >>> state = siphash24_absorb(keys[:1], keys[1:], [np.uint64(7)])
    >>> bool(siphash24_finish(state, [np.uint64(8 << 56)])[0]
    ...      == siphash24(keys[0], keys[1], [np.uint64(7), np.uint64(8 << 56)]))
    True
    """
    k0 = np.asarray(key0, dtype=_U64).reshape(-1)
    k1 = np.asarray(key1, dtype=_U64).reshape(-1)
    state = _initial_state(k0, k1)
    blocks = _broadcast_blocks(blocks, k0.shape[0])
    for start in range(0, k0.shape[0], _CHUNK):
        part = slice(start, start + _CHUNK)
        v0, v1, v2, v3 = (row.copy() for row in state[:, part])
        _compress(v0, v1, v2, v3, [block[part] for block in blocks], np.empty_like(v0))
        state[:, part] = v0, v1, v2, v3
    return state


def siphash24_finish(state, blocks):
    """SipHash-2-4 outputs from states of :func:`siphash24_absorb` and the messages' last
    ``blocks`` (the final one holding the length byte); ``state`` is not modified.

    Parameters
    ----------
    state : ndarray of uint64, shape (4, n)
    blocks : sequence of array-like of uint64, each broadcast to ``(n,)``

    Returns
    -------
    ndarray of uint64, shape (n,)

    Examples
    --------
    >>> state = siphash24_absorb(np.zeros(1, np.uint64), np.zeros(1, np.uint64), [])
    >>> bool(siphash24_finish(state, [np.uint64(0)])[0]
    ...      == siphash24(np.uint64(0), np.uint64(0), [np.uint64(0)]))
    True
    """
    n = state.shape[1]
    blocks = _broadcast_blocks(blocks, n)
    out = np.empty(n, dtype=_U64)
    # Chunks that stay in the processor's cache: the ~200 array operations of a hash then
    # run on cached data (about 3.5x faster than whole arrays of 10^6 words).
    for start in range(0, n, _CHUNK):
        part = slice(start, start + _CHUNK)
        v0, v1, v2, v3 = (row.copy() for row in state[:, part])
        scratch = np.empty_like(v0)
        _compress(v0, v1, v2, v3, [block[part] for block in blocks], scratch)
        _finalize(v0, v1, v2, v3, scratch, out[part])
    return out


def _compress(v0, v1, v2, v3, blocks, scratch):
    """SipHash-2-4's compression of message blocks into ``v0..v3`` (in place)."""
    for block in blocks:
        v3 ^= block
        _sip_round(v0, v1, v2, v3, scratch)
        _sip_round(v0, v1, v2, v3, scratch)
        v0 ^= block


def prf_words(secrets, label, values, counters):
    """The PRF word of each ``(secret, label, value, counter)`` (uint64).

    Parameters
    ----------
    secrets : ndarray of uint64, shape (n, 2)
        One 128-bit secret per element (the two key halves).
    label : str
        The purpose (an 8-character tag, see :func:`tag`).
    values, counters : array-like of int
        Broadcast to ``(n,)``; non-negative, below ``2^63``.

    Returns
    -------
    ndarray of uint64, shape (n,)

    Examples
    --------
    >>> keys = np.array([[1, 2], [1, 2]], dtype=np.uint64)
    >>> words = prf_words(keys, "grr-keep", [5, 5], [0, 1])
    >>> bool(words[0] != words[1])
    True
    """
    secrets = np.asarray(secrets, dtype=_U64)
    values = np.asarray(values).astype(_U64)
    counters = np.asarray(counters).astype(_U64)
    return siphash24(secrets[:, 0], secrets[:, 1],
                     [_U64(tag(label)), values, counters, _LENGTH_24])


def prf_absorb(secrets, label, values):
    """SipHash-2-4 states of each ``(secret, label, value)`` message prefix, shape (4, n).

    :func:`prf_finish` then gives the word of any counter: ``prf_finish(prf_absorb(s, l, v),
    c)`` equals ``prf_words(s, l, v, c)`` bit for bit, the ``(tag, value)`` rounds being
    computed once for all the counters one user needs.

    Examples
    --------
    >>> keys = np.array([[1, 2], [3, 4]], dtype=np.uint64)
    >>> state = prf_absorb(keys, "ue-plane", [5, 6])
    >>> bool((prf_finish(state, 3) == prf_words(keys, "ue-plane", [5, 6], 3)).all())
    True
    """
    secrets = np.asarray(secrets, dtype=_U64)
    values = np.broadcast_to(np.asarray(values).astype(_U64), (secrets.shape[0],))
    return siphash24_absorb(secrets[:, 0], secrets[:, 1], [_U64(tag(label)), values])


def prf_finish(state, counters):
    """The PRF words of counters ``counters`` from :func:`prf_absorb` states (uint64).

    Examples
    --------
    >>> state = prf_absorb(np.array([[1, 2]], dtype=np.uint64), "grr-othr", [0])
    >>> prf_finish(state, 0).shape
    (1,)
    """
    counters = np.asarray(counters).astype(_U64)
    return siphash24_finish(state, [counters, _LENGTH_24])


def prf_uniform_below(secrets, label, values, high):
    """Exactly uniform integers in ``[0, high)`` (int64), one per secret, from PRF words.

    The word of counter ``c`` is accepted when it is at least ``2^64 mod high`` (so the
    accepted words are a whole number of copies of ``[0, high)``) and gives ``word % high``;
    a rejected word moves on to counter ``c + 1`` (probability below ``high / 2^64``).

    Examples
    --------
    >>> keys = np.arange(20, dtype=np.uint64).reshape(10, 2)
    >>> values = prf_uniform_below(keys, "grr-othr", np.zeros(10, dtype=np.int64), 3)
    >>> bool(((values >= 0) & (values < 3)).all())
    True
    """
    high = int(high)
    if not 1 <= high < 2**63:
        raise ValueError(f"high must lie in [1, 2^63), got {high!r}.")
    values = np.asarray(values)
    limit = _U64((2**64) % high)
    out = np.empty(values.shape[0], dtype=np.int64)
    pending = np.arange(values.shape[0])
    counter = 0
    while pending.size:
        # Whole hashes: a second counter is rare (below high / 2^64), so caching the
        # (tag, value) state would cost more than it saves (measured 0.20 s vs 0.17 s).
        words = prf_words(secrets[pending] if counter else secrets, label,
                          values[pending] if counter else values, counter)
        accepted = words >= limit
        out[pending[accepted]] = (words[accepted] % _U64(high)).astype(np.int64)
        pending = pending[~accepted]
        counter += 1
    return out


def prf_bernoulli(secrets, label, values, counters, numerators):
    """Bits ``(word >> 12) < a``: 1 with probability ``a / 2^52`` exactly (bool).

    Examples
    --------
    >>> keys = np.arange(2000, dtype=np.uint64).reshape(1000, 2)
    >>> bits = prf_bernoulli(keys, "grr-keep", np.zeros(1000, np.int64), 0, 2**51)
    >>> bool(0.4 < bits.mean() < 0.6)
    True
    """
    words = prf_words(secrets, label, values, counters)
    return (words >> _U64(12)).astype(np.int64) < np.asarray(numerators, dtype=np.int64)


def prf_bernoulli_lanes(secrets, label, values, n_bits, numerator, precision=52):
    """``(n, ceil(n_bits / 64))`` uint64 words of bits, bit ``j`` of word ``g`` (value
    ``64 g + j``) equal to 1 with probability ``numerator / 2^precision``, independently.

    Bit-sliced comparison: lane ``j`` of group ``g`` compares the integer ``U_j`` whose binary
    digits (from the top) are read from PRF words with ``numerator``, and is 1 when
    ``U_j < numerator``: exactly Bernoulli(``numerator / 2^precision``). A group of ``w``
    lanes (64, or fewer in the last group) uses ``L`` bits of a word per digit, ``L`` the
    power of two ``>= w``, so one word holds ``P = 64 / L`` digits: digit ``t`` of lane ``j``
    is bit ``(t mod P) L + j`` of the word of counter ``g * 256 + t div P``. A lane is
    decided at the first digit where ``U_j`` and the numerator differ, so a group stops
    asking for words once all its lanes are decided (on average about ``log2(w) + 1.3``
    digits); the result does not depend on when it stops (a word is a function of its
    counter only). Lanes ``>= n_bits`` are 0.

    Examples
    --------
    >>> keys = np.arange(200, dtype=np.uint64).reshape(100, 2)
    >>> words = prf_bernoulli_lanes(keys, "ue-plane", np.zeros(100, np.int64), 10, 2**51)
    >>> words.shape, bool((words >> np.uint64(10) == 0).all())
    ((100, 1), True)
    """
    numerator, precision = int(numerator), int(precision)
    if not 0 <= numerator <= 2**precision or not 1 <= precision <= 64:
        raise ValueError(f"numerator must lie in [0, 2**{precision}], got {numerator!r}.")
    n = secrets.shape[0]
    groups = -(-n_bits // 64)
    result = np.zeros((n, groups), dtype=_U64)
    widths = [min(64, n_bits - 64 * group) for group in range(groups)]
    if numerator == 2**precision:  # every lane 1, no word needed
        for group, width in enumerate(widths):
            result[:, group] = _U64(2**width - 1)
        return result
    # The (tag, value) blocks of every word of a user are the same: absorbed once, then each
    # word costs its counter block and the finalization (8 of SipHash's 12 rounds).
    state = prf_absorb(secrets, label, values)
    digits = [(numerator >> (precision - 1 - t)) & 1 for t in range(precision)]
    for group, width in enumerate(widths):
        lane_bits = 1 << (width - 1).bit_length()
        per_word = 64 // lane_bits
        # Dense over the users whose group still has an undecided lane (one array
        # operation per digit, no per-pair indexing); rows decided are written out and
        # dropped before each new word is hashed.
        rows, rows_state = np.arange(n), state
        pending = np.full(n, _U64(2**width - 1))
        bits = np.zeros(n, dtype=_U64)
        stored = words = None
        for t in range(precision):
            step = t % per_word
            if step == 0:
                keep = pending != 0
                if not keep.all():
                    done = ~keep
                    result[rows[done], group] = bits[done]
                    rows, rows_state = rows[keep], rows_state[:, keep]
                    pending, bits = pending[keep], bits[keep]
                if not rows.size:
                    break
                stored = prf_finish(rows_state, group * 256 + t // per_word)
                words = stored
            else:
                # This digit of every lane in the low bits (the bits above belong to other
                # digits and meet no pending lane).
                words = stored >> _U64(step * lane_bits)
            # Lanes whose digit differs from the numerator's are decided now: below it (1)
            # where the numerator's digit is 1.
            if digits[t]:
                decided = pending & ~words
                bits |= decided
            else:
                decided = pending & words
            pending &= ~decided
        result[rows, group] = bits
    # Lanes equal to the numerator on every digit are U_j == numerator: not below, 0.
    return result


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
