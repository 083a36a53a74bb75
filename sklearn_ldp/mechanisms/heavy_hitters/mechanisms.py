"""Heavy hitters over domains too large to list: prefix extension (PEM, TreeHist) and sketches
(Apple's CMS and HCMS).

Values are bit strings of a public length ``L``: integers below ``2^L`` or byte strings of at
most ``L / 8`` bytes (padded with zero bytes), held as ``(n, W)`` uint64 words, most
significant bit first (bit 0 of the value is the top bit of word 0), so that a prefix of
``l`` bits is the value with its other bits cleared.

Prefix extension. The users are split into ``g`` groups, one per round. Round ``i`` asks its
group for the prefix of ``l_i`` bits of their value through a frequency oracle, and the
server estimates the counts of the candidate prefixes only: in round 1 every prefix of
``l_1`` bits, afterwards the prefixes kept in round ``i - 1`` extended by every ``l_i -
l_(i-1)``-bit suffix. It keeps the ``k`` largest (or those above a threshold); the last round
has ``l_g = L`` and gives the heavy hitters with their estimated counts.

* **PEM** (Wang, Li & Jha 2019): optimized local hashing with a linear hash over GF(2),
  ``H(x) = M x`` for a ``r x l`` bit matrix ``M`` named by the report's seed, ``g = 2^r``
  buckets; ``l_1 = ceil(log2 k) + eta``, ``eta`` bits per round after.
* **TreeHist** (Bassily, Nissim, Stemmer & Thakurta 2017): one bit per round (``eta = 1``) and
  one bit per report, Hadamard randomized response over the prefixes: the user draws a
  uniform ``l``-bit row ``s`` and sends ``b = (-1)^(s . x)``, flipped with probability
  ``1 / (e^eps + 1)``; ``c_eps sum_u b_u (-1)^(s_u . c)`` estimates the count of ``c``
  (``c_eps = (e^eps + 1) / (e^eps - 1)``), with per-user variance ``c_eps^2 - [x = c]``.

Both hashes are linear, so a candidate ``c = (P, S)`` (kept prefix, new suffix) hashes as
``h(P) XOR h(S)``: a round costs ``O(n (k + 2^eta))`` hash evaluations and ``O(n k 2^eta)``
byte comparisons, never the ``2^l`` cells of the level.

Sketches (Apple 2017). The client picks one of ``k`` public hash functions ``h_j`` into
``[m]``. CMS sends the ``+-1`` one-hot vector of ``h_j(x)`` with every entry flipped with
probability ``1 / (e^(eps/2) + 1)``; HCMS sends one uniformly chosen coordinate of its
Hadamard transform, flipped with probability ``1 / (e^eps + 1)``. The server accumulates a
``k x m`` sketch and estimates any candidate's count as ``m / (m - 1) ((1/k) sum_j
M[j, h_j(c)] - n / m)``: unbiased over the random choice of the hash functions (a given
sketch carries the collisions of its hashes). Per report and candidate ``c`` the summand
``W`` has variance ``(c^2 - 1) / 4 + rho (1 - rho)`` (CMS, ``c = c_(eps/2)``) or ``c^2 -
rho^2`` (HCMS, ``c = c_eps``), ``rho`` the fraction of hashes where the report's value
collides with ``c`` (1 for ``c`` itself, about ``1 / m`` otherwise).

References
----------
.. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
   identification", IEEE Transactions on Dependable and Secure Computing, 2019.
.. [2] R. Bassily, K. Nissim, U. Stemmer and A. Thakurta, "Practical locally private heavy
   hitters", NeurIPS 2017.
.. [3] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine
   Learning Journal, 2017.
"""

import math
import numbers

import numpy as np

from ..._fwht import fwht
from ..._validation import check_epsilon, check_positive_int
from .._base.bits import (
    PRECISION,
    bernoulli_bits,
    bernoulli_packed,
    column_counts,
)
from .._base.exact import (
    ExactLaw,
    check_law_size,
    integer_ratio_at_most,
    keep_numerator,
    randomized_response_weights,
    uniform_below,
    uniform_mixture,
)
from ..oracles.local_hashing import best_power_of_two_buckets, splitmix64

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MAX_BIT_LENGTH = 1024
# Candidates evaluated per round at most (k * 2^eta): bounds the round's work.
MAX_CANDIDATES = 2**16
PROTOCOLS = ("pem", "treehist")
# Server work (comparisons, 2-3 ns each on a 2-core test machine) that the default eta may
# use: about 1.5 s of one core, or this many comparisons per user when there are more users.
WORK_BUDGET = 2**29
WORK_PER_USER = 256
# Users assumed by the default eta when the number of users is not given.
DEFAULT_USERS = 10**6
# Sketch defaults: Apple's width, and the squared frequency mass the number of hash
# functions is sized for (see default_sketch_hashes).
DEFAULT_SKETCH_WIDTH = 1024
SKETCH_SQUARED_MASS = 0.01
# The Walsh-Hadamard path costs about this many comparisons per kept prefix and bucket.
FOURIER_COST = 10


# ---------------------------------------------------------------------------- bit strings

def n_words(bit_length):
    """uint64 words that hold ``bit_length`` bits."""
    return -(-bit_length // 64)


def check_bit_length(bit_length):
    """The bit length as an int in ``[1, MAX_BIT_LENGTH]``, or a ValueError."""
    if isinstance(bit_length, bool) or not isinstance(bit_length, numbers.Integral) \
            or not 1 <= bit_length <= MAX_BIT_LENGTH:
        raise ValueError(f"bit_length must be an integer in [1, {MAX_BIT_LENGTH}], got "
                         f"{bit_length!r}.")
    return int(bit_length)


def encode_values(values, bit_length):
    """Values as ``(n, W)`` uint64 words, most significant bit first.

    Integers must lie in ``[0, 2^bit_length)``; strings (or bytes) must encode in UTF-8 to at
    most ``bit_length / 8`` bytes (``bit_length`` a multiple of 8); they are padded with zero
    bytes, so strings that differ only by trailing NUL characters are not told apart.
    """
    bit_length = check_bit_length(bit_length)
    values = np.asarray(values)
    W = n_words(bit_length)
    if values.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {values.shape}.")
    if values.dtype.kind in "iu":
        if values.size and (values.min() < 0 or (bit_length < 64 and int(values.max())
                                                 >= 1 << bit_length)):
            row = int(np.argmax((values < 0) | (values >= (1 << min(bit_length, 63)) * 2
                                                if bit_length < 64 else values < 0)))
            raise ValueError(f"values[{row}] = {values[row]} is not in [0, 2^{bit_length}).")
        words = np.zeros((values.size, W), dtype=np.uint64)
        # The integer sits in the lowest bits of the L-bit string: shift it to the top.
        pad = W * 64 - bit_length
        low = values.astype(np.uint64)
        if pad == 0:
            words[:, -1] = low
        else:
            words[:, -1] = low << np.uint64(pad)
            if W > 1:
                words[:, -2] = low >> np.uint64(64 - pad)
        return words
    if values.dtype.kind in "OUS":
        if bit_length % 8:
            raise ValueError(f"string values need a bit_length that is a multiple of 8, got "
                             f"{bit_length}.")
        n_bytes = bit_length // 8
        encoded = [value.encode("utf-8") if isinstance(value, str) else value
                   for value in values.tolist()]
        for row, value in enumerate(encoded):
            if not isinstance(value, bytes):
                raise TypeError(f"values[{row}] is a {type(value).__name__}, not a string.")
            if len(value) > n_bytes:
                raise ValueError(f"values[{row}] takes {len(value)} bytes in UTF-8, more than "
                                 f"the {n_bytes} of bit_length={bit_length}.")
        buffer = np.frombuffer(b"".join(value.ljust(W * 8, b"\0") for value in encoded),
                               dtype=">u8")
        return buffer.reshape(len(encoded), W).astype(np.uint64)
    raise TypeError(f"values must be integers or strings, got dtype {values.dtype}.")


def decode_values(words, bit_length, as_strings):
    """The inverse of :func:`encode_values` (strings lose their trailing NUL bytes)."""
    words = np.asarray(words, dtype=np.uint64)
    if as_strings:
        raw = words.astype(">u8").tobytes()
        width = words.shape[1] * 8
        return [raw[i * width:(i + 1) * width][:bit_length // 8].rstrip(b"\0")
                .decode("utf-8", errors="replace") for i in range(words.shape[0])]
    pad = words.shape[1] * 64 - bit_length
    value = words[:, -1] >> np.uint64(pad) if pad else words[:, -1].copy()
    if words.shape[1] > 1 and pad:
        value |= words[:, -2] << np.uint64(64 - pad)
    return value


def _prefix_mask(length, W):
    """``(W,)`` uint64 mask of the first ``length`` bits."""
    mask = np.zeros(W, dtype=np.uint64)
    full, rest = divmod(length, 64)
    mask[:full] = np.uint64(0xFFFFFFFFFFFFFFFF)
    if rest:
        mask[full] = np.uint64(((1 << rest) - 1) << (64 - rest))
    return mask


def _suffixes(start, count, W):
    """The ``2^count`` bit strings whose only set bits are bits ``start .. start+count-1``."""
    values = np.arange(1 << count, dtype=np.uint64)
    words = np.zeros((1 << count, W), dtype=np.uint64)
    end = start + count  # bits [start, end): value bit b goes to string bit end - 1 - b
    for b in range(count):
        position = end - 1 - b
        word, offset = divmod(position, 64)
        words[:, word] |= ((values >> np.uint64(b)) & np.uint64(1)) << np.uint64(63 - offset)
    return words


def _hash_dtype(n_rows):
    """The smallest unsigned dtype that holds an ``n_rows``-bit hash value."""
    return np.uint8 if n_rows <= 8 else np.uint16 if n_rows <= 16 else np.uint32


def _parities(rows, strings):
    """``h(x)`` bit by bit: rows ``(n, r, W)``, strings ``(c, W)`` -> ``(n, c)`` hash values
    (bit ``k`` = parity of ``row_k & x``)."""
    dtype = _hash_dtype(rows.shape[1])
    out = np.zeros((rows.shape[0], strings.shape[0]), dtype=dtype)
    for k in range(rows.shape[1]):
        # parity(a) ^ parity(b) = parity(a ^ b): XOR the words first, one popcount after.
        folded = rows[:, k, 0, None] & strings[None, :, 0]
        for w in range(1, rows.shape[2]):
            folded ^= rows[:, k, w, None] & strings[None, :, w]
        out |= (np.bitwise_count(folded) & np.uint8(1)).astype(dtype) << dtype(k)
    return out


def _suffix_hashes(rows, start, count):
    """``h(S)`` of the ``2^count`` suffixes of :func:`_suffixes`, ``(n, 2^count)``.

    The hash is linear, so ``h(S)`` is the XOR of ``h(e_b)`` over the set bits ``b`` of ``S``,
    and ``h(e_b)`` (one set bit, at string bit ``start + count - 1 - b``) is that bit of every
    row: ``count`` bit extractions and ``2^count`` XORs per user, no popcount.
    """
    n, n_rows, _ = rows.shape
    dtype = _hash_dtype(n_rows)
    positions = start + count - 1 - np.arange(count)
    words, offsets = np.divmod(positions, 64)
    shifts = (63 - offsets).astype(np.uint64)
    bits = (rows[:, :, words] >> shifts) & np.uint64(1)  # (n, r, count)
    basis = np.zeros((n, count), dtype=dtype)
    for k in range(n_rows):
        basis |= bits[:, k, :].astype(dtype) << dtype(k)
    table = np.zeros((n, 1 << count), dtype=dtype)
    for b in range(count):  # suffixes with bit b set = those without, XOR h(e_b)
        table[:, 1 << b:2 << b] = table[:, :1 << b] ^ basis[:, b, None]
    return table


def _suffix_rows(rows, start, count):
    """Each row's bits ``start .. start+count-1`` as a ``count``-bit integer ``(n, r)``, in
    the bit order of :func:`_suffixes` (string bit ``start + count - 1 - b`` is bit ``b``)."""
    positions = start + count - 1 - np.arange(count)
    words, offsets = np.divmod(positions, 64)
    bits = (rows[:, :, words] >> (63 - offsets).astype(np.uint64)) & np.uint64(1)
    return (bits << np.arange(count, dtype=np.uint64)).sum(axis=2, dtype=np.uint64) \
        .astype(np.int64)


def _xor_span(generators, dtype):
    """``out[..., a]`` = XOR of ``generators[..., j]`` over the set bits ``j`` of ``a``, for
    every ``a < 2^J`` (``J`` = last axis of ``generators``), by doubling."""
    count = generators.shape[-1]
    out = np.zeros(generators.shape[:-1] + (1 << count,), dtype=dtype)
    for j in range(count):
        out[..., 1 << j:2 << j] = out[..., :1 << j] ^ generators[..., j, None].astype(dtype)
    return out


def _fourier_spectrum(rows, target_bits, start, count):
    """``F[P, z]`` such that ``2^-r H F[P]`` (``H`` the Walsh-Hadamard matrix) counts, for
    every suffix ``S``, the users with ``h(S) == t[:, P]``.

    By the identity ``[B S = t] = 2^-r sum_a (-1)^(a . (B S + t))`` for users whose suffix
    hash is the linear map ``B`` (``r x count``), with ``t = y XOR h(P)`` given as ``(n, k, r)``
    bits, and ``a . B S = (B^T a) . S``: ``F[P, z] = sum_u sum_a (-1)^(a . t_uP) [B_u^T a = z]``.
    ``O(n k 2^r)`` work, plus one ``O(k count 2^count)`` transform per round, which beats
    comparing every candidate when ``2^r`` is well below ``2^count``.
    """
    k = target_bits.shape[1]
    # z_u(a) = B_u^T a: the XOR of the suffix bits of the rows that a selects.
    z = _xor_span(_suffix_rows(rows, start, count), np.int64)  # (n, 2^r)
    # (-1)^(a . t) = product of (-1)^(t_j) over the set bits j of a: XOR of the bits, doubled.
    parity = _xor_span(target_bits, np.int64)  # (n, k, 2^r), 1 = minus
    # One integer bincount over (P, z, sign) instead of a weighted one: F = plus - minus.
    keys = (((np.arange(k, dtype=np.int64)[None, :, None] << count) | z[:, None, :]) << 1) \
        | parity
    signed = np.bincount(keys.ravel(), minlength=k << (count + 1)).reshape(k, 1 << count, 2)
    return signed[:, :, 0] - signed[:, :, 1]


def _column_sums(flags):
    """Column sums (int64) of a ``(n, c)`` 0/1 uint8 array: blocks of 255 rows are summed in
    uint8 (no overflow), then the blocks in int64 (about twice as fast as one int64 sum)."""
    full = flags.shape[0] - flags.shape[0] % 255
    total = flags[full:].sum(axis=0, dtype=np.int64)
    if full:
        blocks = np.add.reduce(flags[:full].reshape(-1, 255, flags.shape[1]), axis=1,
                               dtype=np.uint8)
        total += blocks.sum(axis=0, dtype=np.int64)
    return total


def _seed_rows(seeds, n_rows, length, W):
    """Each seed's ``n_rows`` random rows of ``length`` bits, ``(n, n_rows, W)`` uint64."""
    steps = np.arange(1, n_rows * W + 1, dtype=np.uint64) * _GOLDEN
    words = splitmix64(seeds[:, None] + steps).reshape(seeds.shape[0], n_rows, W)
    return words & _prefix_mask(length, W)


def _hash_own(rows, strings):
    """``h_u(x_u)`` per user: rows ``(n, r, W)``, strings ``(n, W)`` -> ``(n,)`` hash values."""
    dtype = _hash_dtype(rows.shape[1])
    out = np.zeros(rows.shape[0], dtype=dtype)
    for k in range(rows.shape[1]):
        folded = rows[:, k, 0] & strings[:, 0]
        for w in range(1, rows.shape[2]):
            folded ^= rows[:, k, w] & strings[:, w]
        out |= (np.bitwise_count(folded) & np.uint8(1)).astype(dtype) << dtype(k)
    return out


# ---------------------------------------------------------------------------- prefix trees

def prefix_schedule(bit_length, n_candidates, extension_bits):
    """Prefix length of every round of prefix extension.

    ``l_1 = ceil(log2 k) + eta`` (Wang et al.), then the remaining ``L - l_1`` bits spread as
    evenly as possible over the fewest rounds that add at most ``eta`` bits each (larger
    steps first). Spreading keeps the number of rounds of the plain schedule ``l_1, l_1 +
    eta, ..., L`` (so as many users per round) while no round is a short tail with a full
    share of the users.

    Parameters
    ----------
    bit_length : int
        Bits of a value, ``L``.
    n_candidates : int
        Prefixes kept per round, ``k``.
    extension_bits : int
        Most bits added per round, ``eta``.

    Returns
    -------
    list of int
        Increasing prefix lengths; the last is ``bit_length``.

    See Also
    --------
    PrefixHeavyHitters : Uses this schedule (its ``lengths``).
    default_extension_bits : The default ``eta``.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
       identification", IEEE TDSC, 2019.

    Examples
    --------
    >>> prefix_schedule(32, 20, 5)
    [10, 15, 20, 24, 28, 32]
    """
    first = min(bit_length, max(1, math.ceil(math.log2(n_candidates))) + extension_bits)
    rest = bit_length - first
    steps = -(-rest // extension_bits)
    lengths = [first]
    for i in range(steps):
        lengths.append(lengths[-1] + rest // steps + (i < rest % steps))
    return lengths


def _comparison_path(kept, count, g):
    """Whether a round with ``kept`` prefixes and ``count`` new bits compares every candidate
    (per user: ``(kept + 1) 2^count``, the comparisons and the suffix hash table) rather than
    take the Walsh-Hadamard path (about ``FOURIER_COST kept g``)."""
    return (kept + 1) << count <= FOURIER_COST * kept * g


def _round_work(lengths, n_candidates, g):
    """Server work per user of a schedule (in comparisons): each round's cheaper path, divided
    by the number of rounds (each round has ``1 / rounds`` of the users)."""
    work, kept, start = 0, 1, 0
    for length in lengths:
        work += min((kept + 1) << (length - start), FOURIER_COST * kept * g)
        kept, start = n_candidates, length
    return work / len(lengths)


def default_extension_bits(bit_length, epsilon, n_candidates, n_users):
    """PEM's default number of bits added per round, ``eta``.

    Among the ``eta`` whose server work (``n_users`` times the work per user of the schedule,
    in comparisons) stays within ``max(WORK_BUDGET, WORK_PER_USER n_users)`` (``2^29`` and
    256) and whose rounds have at most ``MAX_CANDIDATES`` candidates (twice that in the
    first), the one with the fewest rounds, then the least work. Fewer rounds give each round
    more users: the estimates' standard error scales as ``sqrt(rounds / N)``, while the
    largest noise among the ``k 2^eta`` candidates of a round grows only as
    ``sqrt(2 ln(k 2^eta))``; the work grows as ``2^eta``. So ``eta`` is set by the work
    allowed and depends on ``N`` (the budget per user), on ``epsilon`` (through the buckets
    ``g``: the Walsh-Hadamard path makes a round cost ``k g`` rather than ``k 2^eta``) and on
    ``k``.

    Parameters
    ----------
    bit_length : int
        Bits of a value, ``L``.
    epsilon : float
        Privacy budget of each report.
    n_candidates : int
        Prefixes kept per round, ``k``.
    n_users : int
        Expected number of users ``N``.

    Returns
    -------
    int
        ``eta``, at least 1.

    See Also
    --------
    prefix_schedule : The rounds an ``eta`` gives.
    PrefixHeavyHitters : The protocol.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
       identification", IEEE TDSC, 2019.

    Examples
    --------
    >>> [default_extension_bits(32, 4.0, 20, n) for n in (10**5, 10**6, 10**7)]
    [11, 5, 3]
    """
    g = best_power_of_two_buckets(epsilon)
    budget = max(WORK_BUDGET, WORK_PER_USER * n_users)
    best = None
    for eta in range(1, 17):
        if n_candidates << eta > MAX_CANDIDATES:
            break
        lengths = prefix_schedule(bit_length, n_candidates, eta)
        if 1 << lengths[0] > 2 * MAX_CANDIDATES:  # the first round's 2^l_1 candidates
            break
        work = n_users * _round_work(lengths, n_candidates, g)
        key = (len(lengths), work)
        if work <= budget and (best is None or key < best[0]):
            best = (key, eta)
    return 1 if best is None else best[1]


def _one_value_words(value, bit_length):
    """One value as ``(1, W)`` uint64 words: already encoded words, or :func:`encode_values`
    of an integer or a string."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint64 and value.ndim == 2:
        if value.shape != (1, n_words(bit_length)):
            raise ValueError(f"encoded words of one value have shape (1, "
                             f"{n_words(bit_length)}), got {value.shape}.")
        return value
    values = np.array([value], dtype=object if isinstance(value, (str, bytes)) else None)
    return encode_values(values, bit_length)


def check_prefix_numerator(numerator, n_buckets, epsilon):
    """Refuse a kept-bucket numerator ``a`` of PEM / TreeHist unless ``1 / g <= a / 2^52 < 1``
    and ``a (g - 1) / (2^52 - a) <= e^eps``, decided exactly on integers."""
    one = 2**PRECISION
    if isinstance(numerator, bool) or not isinstance(numerator, numbers.Integral) \
            or not one <= numerator * n_buckets or not numerator < one \
            or not integer_ratio_at_most(numerator * (n_buckets - 1), one - numerator, epsilon):
        raise ValueError(f"the kept-bucket numerator {numerator!r} of {n_buckets}-ary "
                         f"randomized response is not within e^{epsilon!r} (or not a "
                         "probability of at least 1/g).")


class PrefixHeavyHitters:
    """Heavy hitters by prefix extension: PEM (local hashing) or TreeHist (one bit).

    Parameters
    ----------
    bit_length : int
        Bits of a value, ``L`` (a multiple of 8 for strings).
    epsilon : float
        Privacy budget of each user's single report.
    protocol : {"pem", "treehist"}, default="pem"
        The frequency oracle and the schedule of prefix lengths (module docstring).
    n_candidates : int, default=20
        Prefixes kept per round, ``k`` (the number of heavy hitters sought; for a frequency
        threshold ``theta``, ``ceil(1 / theta)`` suffices, as at most that many values reach
        it).
    extension_bits : int or None, default=None
        Bits added per round at most, ``eta`` (PEM; TreeHist uses 1). Default
        (:func:`default_extension_bits`): the fewest rounds whose server work stays within
        about ``max(2^29, 256 N)`` comparisons; e.g. 32-bit values, ``k = 20``: ``eta = 5``
        (6 rounds) at ``N = 10^6``, ``eta = 9`` to ``11`` (3 rounds) at ``N = 10^5``,
        ``eta = 3`` (9 rounds) at ``N = 10^7``.
    n_users : int or None, default=None
        Expected number of users, for the default ``eta`` only (None: ``10^6``).

    Attributes
    ----------
    lengths : list of int
        Prefix length of each round (:func:`prefix_schedule`; the last is ``bit_length``).
    g : int
        Hash buckets of PEM's local hashing (2 for TreeHist's one bit).

    See Also
    --------
    SketchFrequencyOracle : Frequencies of given candidates (CMS, HCMS).

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
       identification", IEEE TDSC, 2019.
    .. [2] R. Bassily, K. Nissim, U. Stemmer and A. Thakurta, "Practical locally private heavy
       hitters", NeurIPS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> values = np.where(rng.random(200_000) < 0.3, 123456, rng.integers(2**20, size=200_000))
    >>> finder = PrefixHeavyHitters(20, 4.0, n_candidates=4)
    >>> reports = finder.randomize(encode_values(values, 20), rng)
    >>> found = finder.identify(reports)
    >>> int(decode_values(found["values"], 20, False)[0])
    123456
    """

    kind = "prefix_heavy_hitters"

    def __init__(self, bit_length, epsilon, protocol="pem", n_candidates=20,
                 extension_bits=None, n_users=None):
        self.bit_length = check_bit_length(bit_length)
        self.epsilon = check_epsilon(epsilon)
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
        self.protocol = protocol
        self.n_candidates = check_positive_int(n_candidates, "n_candidates")
        if n_users is not None:
            n_users = check_positive_int(n_users, "n_users")
        if protocol == "pem":
            self.g = best_power_of_two_buckets(self.epsilon)
            self.n_rows = self.g.bit_length() - 1
        else:
            self.g, self.n_rows = 2, 1
        if protocol == "treehist":
            eta = 1
        elif extension_bits is None:
            eta = default_extension_bits(self.bit_length, self.epsilon, self.n_candidates,
                                         DEFAULT_USERS if n_users is None else n_users)
        else:
            eta = check_positive_int(extension_bits, "extension_bits")
        if self.n_candidates << eta > MAX_CANDIDATES:
            raise ValueError(f"n_candidates * 2^extension_bits = {self.n_candidates} * 2^{eta} "
                             f"= {self.n_candidates << eta} candidates per round exceeds "
                             f"{MAX_CANDIDATES}.")
        self.extension_bits = eta
        self.lengths = prefix_schedule(self.bit_length, self.n_candidates, eta)
        self.W = n_words(self.bit_length)
        # The own bucket (bit) is kept with probability a / 2^52, every other one drawn
        # uniformly: g-ary randomized response with the largest a whose ratio a (g - 1) /
        # (2^52 - a) is within e^eps, decided exactly (checked again below). p is the realised
        # probability (exact float64); q = 1/g is exact whatever p (a value that is not the
        # candidate hashes to it with probability 1/g over the seed), so the estimates stay
        # unbiased for what is sampled.
        self.keep_numerator = keep_numerator(self.epsilon, self.g, PRECISION)
        check_prefix_numerator(self.keep_numerator, self.g, self.epsilon)
        self.p = self.keep_numerator / 2**PRECISION
        if protocol == "pem":
            self.q = 1.0 / self.g
        else:
            self.c = 1.0 / (2 * self.p - 1)  # (e^eps + 1) / (e^eps - 1) at the realised p

    @property
    def n_rounds(self):
        """Number of rounds (user groups)."""
        return len(self.lengths)

    def to_dict(self):
        """A JSON-ready specification (rebuilt by :meth:`from_dict`)."""
        return {"version": 1, "mechanism": self.kind, "bit_length": self.bit_length,
                "epsilon": self.epsilon, "protocol": self.protocol,
                "n_candidates": self.n_candidates, "extension_bits": self.extension_bits}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field."""
        fields = {"bit_length", "epsilon", "protocol", "n_candidates", "extension_bits"}
        if not isinstance(spec, dict) or spec.get("mechanism") != cls.kind \
                or spec.get("version") != 1 or not fields <= set(spec):
            raise ValueError(f"not a version-1 {cls.kind!r} specification with fields "
                             f"{sorted(fields)}: {str(spec)[:80]!r}.")
        return cls(spec["bit_length"], spec["epsilon"], spec["protocol"],
                   spec["n_candidates"], spec["extension_bits"])

    def __eq__(self, other):
        return type(other) is type(self) and other.to_dict() == self.to_dict()

    def __hash__(self):
        return hash(repr(self.to_dict()))

    # ------------------------------------------------------------------ client side
    def randomize(self, words, rng):
        """Each user's report: its round (group, uniform), a seed and one small integer.

        Parameters
        ----------
        words : ndarray of uint64, shape (n_users, W)
            Values from :func:`encode_values`.
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        reports : ndarray of uint64, shape (n_users, 3)
            Rows ``[round, seed, y]``: ``y`` the privatized bucket (PEM) or bit (TreeHist).
        """
        words = np.asarray(words)
        if words.ndim != 2 or words.shape[1] != self.W or words.dtype != np.uint64:
            raise ValueError(f"words must be an (n_users, {self.W}) uint64 array from "
                             "encode_values.")
        n = words.shape[0]
        rounds = uniform_below(rng, self.n_rounds, n)
        seeds = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
        own = self.own_hashes(words, rounds, seeds)
        if self.protocol == "pem":  # g-ary randomized response of the bucket
            # Uniform over the g - 1 other buckets (exact integers; int64: g may exceed 256).
            other = uniform_below(rng, self.g - 1, n)
            other += other >= own
            keep = bernoulli_bits(rng, n, self.keep_numerator).astype(bool)
            y = np.where(keep, own, other).astype(np.uint64)
        else:
            flip = bernoulli_bits(rng, n, 2**PRECISION - self.keep_numerator)
            y = (own ^ flip).astype(np.uint64)
        return np.column_stack([rounds.astype(np.uint64), seeds, y])

    def own_hashes(self, words, rounds, seeds):
        """Each user's hashed prefix ``h_seed(prefix of round)`` (before randomization).

        Parameters
        ----------
        words : ndarray of uint64, shape (n, W)
        rounds : ndarray of int, shape (n,)
        seeds : ndarray of uint64, shape (n,)

        Returns
        -------
        ndarray of int64, shape (n,)
        """
        own = np.zeros(words.shape[0], dtype=np.int64)
        for index, length in enumerate(self.lengths):
            members = np.flatnonzero(rounds == index)
            prefixes = words[members] & _prefix_mask(length, self.W)
            own[members] = _hash_own(_seed_rows(seeds[members], self.n_rows, length, self.W),
                                     prefixes)
        return own

    def exact_law(self, value, seed=0):
        """The exact law of one user's report given its (public, uniform) hash seed.

        The seed is drawn independently of the value and sent in the clear: the law of the
        report is the seed's uniform law times this conditional law, and the privacy ratio
        of two values is the ratio of their conditional laws at the same seed.

        Parameters
        ----------
        value : int, str or ndarray of uint64 of shape (1, W)
            A value of ``bit_length`` bits (as :func:`encode_values` takes it), or its words.
        seed : int, default=0
            The report's hash seed, in ``[0, 2^64)``.

        Returns
        -------
        ExactLaw
            Outputs ``[round, seed, y]`` (uint64 rows) for every round and every ``y``: the
            round uniform, ``y`` the own hash with weight ``a (g - 1)``, every other bucket
            ``2^52 - a``.

        Examples
        --------
        >>> finder = PrefixHeavyHitters(4, 1.0, protocol="treehist", n_candidates=2)
        >>> law = finder.exact_law(5, seed=7)
        >>> law.outputs.shape, sum(law.weights) == law.total
        ((6, 3), True)
        """
        check_law_size(self.n_rounds * self.g, self.kind)
        words = _one_value_words(value, self.bit_length)
        seeds = np.array([seed], dtype=np.uint64)
        kept, other, total = randomized_response_weights(self.keep_numerator, self.g,
                                                         PRECISION)
        laws, outputs = [], []
        for index in range(self.n_rounds):
            own = int(self.own_hashes(words, np.array([index]), seeds)[0])
            laws.append(ExactLaw(None, [kept if y == own else other for y in range(self.g)],
                                 total))
            outputs += [[index, int(seed), y] for y in range(self.g)]
        return uniform_mixture(laws, np.array(outputs, dtype=np.uint64))

    # ------------------------------------------------------------------ server side
    def check_reports(self, reports):
        """The reports as a ``(n, 3)`` uint64 array, or a ValueError naming the first bad row."""
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != 3 or reports.dtype != np.uint64:
            raise ValueError("reports must be an (n, 3) uint64 array of [round, seed, y] rows.")
        limit = self.g if self.protocol == "pem" else 2
        bad = (reports[:, 0] >= self.n_rounds) | (reports[:, 2] >= limit)
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"report {row} is invalid: {reports[row].tolist()} (rounds < "
                             f"{self.n_rounds}, y < {limit}).")
        return reports

    def _round_counts(self, reports, length, kept, start):
        """Estimated user counts in this round's group of every candidate ``kept x suffix``,
        their standard errors, and the candidates ``(c, W)``."""
        suffixes = _suffixes(start, length - start, self.W)
        n = reports.shape[0]
        n_suffixes = suffixes.shape[0]
        # matches[P, S]: reports whose bucket equals h(P) XOR h(S), i.e. h(S) == y XOR h(P).
        matches = np.zeros((kept.shape[0], n_suffixes), dtype=np.int64)
        # Users per chunk: bounded (chunk, k, 2^eta) boolean temporaries (about 4 MiB).
        chunk = max(256, (1 << 22) // (kept.shape[0] * n_suffixes))
        count = length - start
        # Compare every candidate (n k 2^eta) or go through the Walsh-Hadamard identity
        # (n k g): whichever costs less.
        fourier = not _comparison_path(kept.shape[0], count, self.g)
        if fourier:
            chunk = max(256, (1 << 18) // (kept.shape[0] << self.n_rows))
        dtype = _hash_dtype(self.n_rows)
        spectrum = np.zeros_like(matches)
        for first in range(0, n, chunk):
            block = reports[first:first + chunk]
            rows = _seed_rows(block[:, 1], self.n_rows, length, self.W)
            target = _parities(rows, kept) ^ block[:, 2].astype(dtype)[:, None]
            if fourier:
                bits = (target[:, :, None] >> np.arange(self.n_rows, dtype=dtype)) & dtype(1)
                spectrum += _fourier_spectrum(rows, bits, start, count)
                continue
            equal = target[:, :, None] == _suffix_hashes(rows, start, count)[:, None, :]
            matches += _column_sums(equal.view(np.uint8).reshape(equal.shape[0], -1)) \
                .reshape(matches.shape)
        if fourier:  # exact: the transform of integers, divided by 2^r, is an integer
            matches = np.rint(fwht(spectrum, axis=1) / (1 << self.n_rows)).astype(np.int64)
        scores = matches.ravel()
        candidates = (kept[:, None, :] | suffixes[None, :, :]).reshape(-1, self.W)
        if self.protocol == "pem":
            counts = (scores - n * self.q) / (self.p - self.q)
            f = np.clip(counts / max(n, 1), 0.0, 1.0)
            variance = n * (f * self.p * (1 - self.p) + (1 - f) * self.q * (1 - self.q)) \
                / (self.p - self.q) ** 2
        else:  # sum over the reports of (-1)^(b + h(c)) = matches - mismatches
            counts = self.c * (2 * scores - n)
            f = np.clip(counts / max(n, 1), 0.0, 1.0)
            variance = n * (self.c ** 2 - f)
        return counts, np.sqrt(variance), candidates

    def identify(self, reports, threshold=None, possible_prefix=None):
        """Run the rounds: the heavy hitters and their estimated counts.

        Parameters
        ----------
        reports : ndarray of uint64, shape (n, 3)
            :meth:`randomize`'s reports (every round's group).
        threshold : float or None, default=None
            Keep, in every round, the candidates whose estimated share of the users is at
            least this (at most ``n_candidates`` of them); None keeps the ``n_candidates``
            largest.
        possible_prefix : callable or None, default=None
            ``possible_prefix(candidates, length)``: a boolean mask of the ``(c, W)``
            candidate prefixes of ``length`` bits that some user's value can start with
            (e.g. valid UTF-8 without a NUL byte before the padding). The others are
            dropped in the round, before the ``n_candidates`` are chosen, so noise cannot
            fill the kept set with prefixes no user holds. None keeps every candidate.

        Returns
        -------
        result : dict
            ``values`` (``(h, W)`` uint64 words), ``counts`` (estimated users among all the
            reports) and ``std_errors``, sorted by decreasing count, and ``rounds`` (per
            round: prefix length, users, candidates).
        """
        reports = self.check_reports(reports)
        if threshold is not None and not (isinstance(threshold, numbers.Real)
                                          and 0 < threshold < 1):
            raise ValueError(f"threshold must be a share in (0, 1), got {threshold!r}.")
        total = reports.shape[0]
        kept = np.zeros((1, self.W), dtype=np.uint64)
        start, history = 0, []
        for index, length in enumerate(self.lengths):
            group = reports[reports[:, 0] == index]
            if group.shape[0] == 0:
                raise ValueError(f"round {index} has no reports: collect more users.")
            counts, errors, candidates = self._round_counts(group, length, kept, start)
            ranked = counts
            if possible_prefix is not None:
                # An impossible prefix ranks below every possible one (kept only if fewer
                # than n_candidates are possible, which no real value can be then).
                ranked = np.where(possible_prefix(candidates, length), counts, -np.inf)
            order = np.argsort(-ranked, kind="stable")[:self.n_candidates]
            order = order[np.isfinite(ranked[order])] if possible_prefix is not None else order
            if threshold is not None:
                order = order[counts[order] >= threshold * group.shape[0]]
            history.append({"length": length, "users": int(group.shape[0]),
                            "candidates": int(candidates.shape[0])})
            kept, start = candidates[order], length
            scale = total / group.shape[0]
            final_counts, final_errors = counts[order] * scale, errors[order] * scale
        return {"values": kept, "counts": final_counts, "std_errors": final_errors,
                "rounds": history}

    def count_variance_per_user(self, frequency):
        """Variance of the estimated count of a value of share ``frequency`` among ``N``
        users, divided by ``N``, with the groups of equal size ``N / rounds`` (the final
        count is the last group's count times ``rounds``): ``rounds (f p (1 - p) + (1 - f)
        q (1 - q)) / (p - q)^2`` (PEM), ``rounds (c^2 - f)`` (TreeHist)."""
        f = np.clip(np.asarray(frequency, dtype=float), 0.0, 1.0)
        if self.protocol == "pem":
            per_report = (f * self.p * (1 - self.p) + (1 - f) * self.q * (1 - self.q)) \
                / (self.p - self.q) ** 2
        else:
            per_report = self.c ** 2 - f
        return self.n_rounds * per_report

    def estimate_counts(self, reports, words):
        """Estimated user counts (among all the reports) of the given values, from the last
        round's group, with their standard errors."""
        reports = self.check_reports(reports)
        words = np.asarray(words, dtype=np.uint64)
        group = reports[reports[:, 0] == self.n_rounds - 1]
        if group.shape[0] == 0:
            raise ValueError("the last round has no reports: collect more users.")
        scale = reports.shape[0] / group.shape[0]
        counts, errors = np.empty(words.shape[0]), np.empty(words.shape[0])
        start = self.lengths[-1]  # no suffix bits: score the values themselves
        for i in range(0, words.shape[0], 256):
            block = words[i:i + 256]
            c, e, _ = self._round_counts(group, self.bit_length, block, start)
            counts[i:i + 256], errors[i:i + 256] = c * scale, e * scale
        return counts, errors


# ---------------------------------------------------------------------------- sketches

def default_sketch_hashes(epsilon, width, hadamard, n_users):
    """The default number of hash functions ``k`` of a CMS or HCMS sketch.

    For a candidate, collisions with the other values add (over the choice of the hash
    functions) about ``sum_v x_v^2 / (k m)`` to the estimate's variance, against the noise
    ``N v`` (``v`` the per-report variance of the module docstring). ``k`` is the smallest
    power of two (at least 16) with ``N^2 SKETCH_SQUARED_MASS / (k m) <= 0.1 N v``: collisions
    then add at most 10% to the variance whenever the squared frequencies of the values sum
    to at most ``SKETCH_SQUARED_MASS`` (1%: e.g. no value above 1%, or a few of a few
    percent). At most ``2^22 / m`` (4 Mi cells) and ``2^16``.

    Parameters
    ----------
    epsilon : float
        Privacy budget of each report.
    width : int
        Sketch width ``m``.
    hadamard : bool
        HCMS (True) or CMS.
    n_users : int
        Expected number of users ``N``.

    Returns
    -------
    int
        ``k``, a power of two.

    See Also
    --------
    SketchFrequencyOracle : The sketches.

    References
    ----------
    .. [1] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine
       Learning Journal, 2017.

    Examples
    --------
    >>> default_sketch_hashes(4.0, 1024, False, 10**6), default_sketch_hashes(4.0, 1024, True,
    ...                                                                       10**6)
    (1024, 128)
    """
    half = math.exp(epsilon / (1 if hadamard else 2))
    c = (half + 1) / (half - 1)
    per_report = c * c - 1 / width ** 2 if hadamard else (c * c - 1) / 4 + 1 / width
    needed = n_users * SKETCH_SQUARED_MASS / (0.1 * per_report * width)
    k = 1 << max(4, math.ceil(math.log2(max(needed, 1.0))))
    return int(min(k, 2**16, max(16, 2**22 // width)))


def _fingerprints(words):
    """One 64-bit fingerprint per value (SplitMix64 over the words, chained)."""
    state = np.zeros(words.shape[0], dtype=np.uint64)
    for w in range(words.shape[1]):
        with np.errstate(over="ignore"):  # arithmetic modulo 2^64, as intended
            step = _GOLDEN * np.uint64(w + 1)
        state = splitmix64(state ^ words[:, w]) + step
    return state


def check_sketch_numerator(flip_numerator, epsilon, hadamard):
    """Refuse a sketch's flip numerator ``f`` unless ``0 < f < 2^51`` and the report's worst
    ratio is within ``e^eps``, decided exactly: ``((2^52 - f) / f)^2`` for CMS (two values
    differ in two entries of the one-hot vector), ``(2^52 - f) / f`` for HCMS."""
    one = 2**PRECISION
    if isinstance(flip_numerator, bool) or not isinstance(flip_numerator, numbers.Integral) \
            or not 0 < flip_numerator < one // 2:
        raise ValueError(f"the sketch's flip numerator must be an integer in (0, 2^51), got "
                         f"{flip_numerator!r}.")
    kept, power = one - int(flip_numerator), 1 if hadamard else 2
    if not integer_ratio_at_most(kept**power, int(flip_numerator)**power, epsilon):
        raise ValueError(f"the sketch's flip numerator {flip_numerator!r} gives a ratio above "
                         f"e^{epsilon!r}.")


class SketchFrequencyOracle:
    """Apple's count-mean sketch (CMS) and its Hadamard variant (HCMS).

    Parameters
    ----------
    epsilon : float
        Privacy budget of each report.
    n_hashes : int or None, default=None
        Number of public hash functions ``k``. Default (:func:`default_sketch_hashes`): the
        smallest power of two (at least 16) for which collisions add at most 10% to the
        variance of data whose squared frequencies sum to at most 1%, given ``N``, ``epsilon``
        and the width; e.g. at ``N = 10^6``: CMS 128 (``epsilon = 2``), 1024 (4); HCMS 64, 128.
    width : int or None, default=None
        Sketch width ``m`` (a power of two for HCMS); default 1024 (Apple's).
    hadamard : bool, default=False
        HCMS (one bit per report) instead of CMS (``m`` bits per report).
    hash_seed : int, default=0
        Public seed naming the hash functions (pick a fresh one per collection: the
        estimates are unbiased over the hash functions' choice).
    n_users : int or None, default=None
        Expected number of users, for the default ``n_hashes`` only (None: ``10^6``).

    See Also
    --------
    PrefixHeavyHitters : Find the heavy hitters without candidates.

    References
    ----------
    .. [1] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine
       Learning Journal, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> values = np.where(rng.random(100_000) < 0.2, 7, rng.integers(1000, size=100_000))
    >>> sketch = SketchFrequencyOracle(4.0, n_hashes=16, width=256, hadamard=True)
    >>> words = encode_values(values, 32)
    >>> statistic = sketch.aggregate(sketch.randomize(words, rng))
    >>> counts, errors = sketch.estimate_counts(statistic, encode_values(np.array([7]), 32))
    >>> bool(abs(counts[0] - np.sum(values == 7)) < 4 * errors[0])
    True
    """

    kind = "sketch"

    def __init__(self, epsilon, n_hashes=None, width=None, hadamard=False, hash_seed=0,
                 n_users=None):
        self.epsilon = check_epsilon(epsilon)
        self.hadamard = bool(hadamard)
        if n_users is not None:
            n_users = check_positive_int(n_users, "n_users")
        width = DEFAULT_SKETCH_WIDTH if width is None else width
        self.width = check_positive_int(width, "width")
        if n_hashes is None:
            n_hashes = default_sketch_hashes(self.epsilon, self.width, self.hadamard,
                                             DEFAULT_USERS if n_users is None else n_users)
        self.n_hashes = check_positive_int(n_hashes, "n_hashes")
        if self.width < 2 or self.n_hashes > 2**16 or self.width > 2**20:
            raise ValueError(f"width must be in [2, 2^20] and n_hashes at most 2^16, got "
                             f"width={width!r}, n_hashes={n_hashes!r}.")
        if hadamard and self.width & (self.width - 1):
            raise ValueError(f"HCMS needs a power-of-two width, got {width!r}.")
        if isinstance(hash_seed, bool) or not isinstance(hash_seed, numbers.Integral) \
                or not 0 <= hash_seed < 2**64:
            raise ValueError(f"hash_seed must be an integer in [0, 2^64), got {hash_seed!r}.")
        self.hash_seed = int(hash_seed)
        # The flip probability 1 / (e^eps' + 1) (eps' = eps / 2 for CMS, eps for HCMS) as
        # f / 2^52, f = 2^52 - a with a the largest keep numerator whose ratio a / f is within
        # e^eps' (decided exactly), so the bits are drawn exactly; check_sketch_numerator
        # checks the whole report's ratio (two entries for CMS) on the integers. The estimator
        # uses the realized probability.
        self._flip_numerator = 2**PRECISION - keep_numerator(
            self.epsilon / (1 if self.hadamard else 2), 2, PRECISION)
        check_sketch_numerator(self._flip_numerator, self.epsilon, self.hadamard)
        self.keep = 1.0 - self._flip_numerator / 2**PRECISION  # an entry is not flipped
        self.c = 1.0 / (2 * self.keep - 1)  # (e^eps' + 1) / (e^eps' - 1) at the realized keep

    def to_dict(self):
        """A JSON-ready specification (rebuilt by :meth:`from_dict`)."""
        return {"version": 1, "mechanism": self.kind, "epsilon": self.epsilon,
                "n_hashes": self.n_hashes, "width": self.width, "hadamard": self.hadamard,
                "hash_seed": self.hash_seed}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field."""
        fields = {"epsilon", "n_hashes", "width", "hadamard", "hash_seed"}
        if not isinstance(spec, dict) or spec.get("mechanism") != cls.kind \
                or spec.get("version") != 1 or not fields <= set(spec):
            raise ValueError(f"not a version-1 {cls.kind!r} specification with fields "
                             f"{sorted(fields)}: {str(spec)[:80]!r}.")
        return cls(spec["epsilon"], spec["n_hashes"], spec["width"], spec["hadamard"],
                   spec["hash_seed"])

    def __eq__(self, other):
        return type(other) is type(self) and other.to_dict() == self.to_dict()

    def __hash__(self):
        return hash(repr(self.to_dict()))

    def hash(self, words, which):
        """``h_j(x)`` in ``[0, m)`` for values ``words`` ``(n, W)`` and hash indices
        ``which`` ``(n,)``."""
        key = _fingerprints(np.asarray(words, dtype=np.uint64))
        salt = splitmix64(np.uint64(self.hash_seed)
                          + (np.asarray(which, dtype=np.uint64) + np.uint64(1)) * _GOLDEN)
        return (splitmix64(key ^ salt) % np.uint64(self.width)).astype(np.int64)

    def randomize(self, words, rng):
        """Reports: CMS ``(j, packed bits of the +-1 vector)``; HCMS ``(j, l, bit)``.

        Returns
        -------
        reports : tuple of ndarray
            CMS: ``(j, bits)`` with bits ``(n, ceil(m / 8))`` uint8 (1 = +1). HCMS:
            ``(j, l, bit)``, bit 1 = +1.
        """
        words = np.asarray(words, dtype=np.uint64)
        n = words.shape[0]
        j = rng.integers(self.n_hashes, size=n)
        position = self.hash(words, j)
        if not self.hadamard:
            # +1 at h_j(x), -1 elsewhere, every entry flipped with probability 1 - keep: bits
            # that are 1 with probability 1 - keep, the one at h_j(x) then inverted.
            bits = bernoulli_packed(rng, n, self.width, self._flip_numerator)
            rows = np.arange(n)
            bits[rows, position >> 3] ^= (np.uint8(1) << (position & 7).astype(np.uint8))
            return j.astype(np.uint32), bits
        coordinate = rng.integers(self.width, size=n)
        sign_bit = (np.bitwise_count((coordinate & position).astype(np.uint64))
                    & np.uint8(1)) == 0
        flip = bernoulli_bits(rng, n, self._flip_numerator).astype(bool)
        return (j.astype(np.uint32), coordinate.astype(np.uint32),
                (sign_bit ^ flip).astype(np.uint8))

    def report_rows(self, reports):
        """:meth:`randomize`'s reports as one int64 row each, the rows of :meth:`exact_law`:
        CMS ``[j, packed bytes...]``, HCMS ``[j, l, bit]``."""
        return np.column_stack([np.asarray(part, dtype=np.int64).reshape(len(reports[0]), -1)
                                for part in reports])

    def exact_law(self, value, bit_length=None):
        """The exact law of one report given the public hash functions (``hash_seed``).

        Parameters
        ----------
        value : int, str or ndarray of uint64 of shape (1, W)
            The user's value, or its encoded words.
        bit_length : int or None, default=None
            The bit length the values are encoded with (:func:`encode_values`; default 64).

        Returns
        -------
        ExactLaw
            Rows as :meth:`report_rows` gives them. CMS: every hash ``j`` and every ``m``-bit
            vector (``k 2^m`` outputs: small sketches only), weight ``prod`` over the entries
            of ``a`` (the entry agrees with the one-hot vector of ``h_j(x)``) or ``f``; HCMS:
            every ``(j, l, bit)``, weight ``a`` for the true sign ``(-1)^(l . h_j(x))``, else
            ``f``.

        Examples
        --------
        >>> sketch = SketchFrequencyOracle(2.0, n_hashes=2, width=4, hadamard=True)
        >>> law = sketch.exact_law(9)
        >>> law.outputs.shape, sum(law.weights) == law.total
        ((16, 3), True)
        """
        k, m, one = self.n_hashes, self.width, 2**PRECISION
        f = int(self._flip_numerator)
        a = one - f
        words = _one_value_words(value, 64 if bit_length is None else bit_length)
        positions = self.hash(np.repeat(words, k, axis=0), np.arange(k)).tolist()
        laws, outputs = [], []
        if self.hadamard:
            check_law_size(2 * k * m, self.kind)
            for j, h in enumerate(positions):
                weights = []
                for coordinate in range(m):
                    plus = bin(coordinate & h).count("1") % 2 == 0  # true bit 1 for +1
                    weights += [a, f] if not plus else [f, a]
                    outputs += [[j, coordinate, 0], [j, coordinate, 1]]
                laws.append(ExactLaw(None, weights, m * one))
            return uniform_mixture(laws, np.array(outputs, dtype=np.int64))
        check_law_size(k << m, self.kind)
        n_bytes = (m + 7) // 8
        for j, h in enumerate(positions):
            weights = []
            for bits in range(1 << m):
                agree = (bits >> h) & 1  # the entry at h_j(x) is +1 (bit 1), the others -1
                ones_elsewhere = bin(bits & ~(1 << h)).count("1")
                flipped = (1 - agree) + ones_elsewhere
                weights.append(a ** (m - flipped) * f ** flipped)
                outputs.append([j] + list(bits.to_bytes(n_bytes, "little")))
            laws.append(ExactLaw(None, weights, one ** m))
        return uniform_mixture(laws, np.array(outputs, dtype=np.int64))

    def aggregate(self, reports):
        """Integer sketch statistic: CMS ``[ones (k x m), n_j (k)]``; HCMS ``[plus (k x m),
        total (k x m)]``, flattened (int64, additive)."""
        k, m = self.n_hashes, self.width
        if not self.hadamard:
            j, packed = (np.asarray(part) for part in reports)
            if j.ndim != 1 or j.dtype.kind not in "iu" or (j.size and j.max() >= k) \
                    or packed.shape != (j.shape[0], (m + 7) // 8) or packed.dtype != np.uint8:
                raise ValueError(f"CMS reports are (j < {k}, packed {m}-bit rows).")
            if m % 8 and (packed[:, -1] >> np.uint8(m % 8)).any():
                raise ValueError("a CMS report sets a bit past the sketch width.")
            # Reports grouped by hash (a stable sort), then each group's column counts on the
            # packed bits (never unpacked).
            n_j = np.bincount(j.astype(np.int64), minlength=k)
            grouped = packed[np.argsort(j, kind="stable")]
            ones = np.zeros((k, m), dtype=np.int64)
            bounds = np.concatenate([[0], np.cumsum(n_j)])
            for index in np.flatnonzero(n_j):
                ones[index] = column_counts(grouped[bounds[index]:bounds[index + 1]], m)
            return np.concatenate([ones.ravel(), n_j])
        j, coordinate, bit = (np.asarray(part) for part in reports)
        if not (j.shape == coordinate.shape == bit.shape and j.ndim == 1) or any(
                part.dtype.kind not in "iu" for part in (j, coordinate, bit)) or (j.size and (
                j.max() >= k or coordinate.max() >= m or bit.max() > 1)):
            raise ValueError(f"HCMS reports are (j < {k}, l < {m}, bit in {{0, 1}}).")
        cell = j.astype(np.int64) * m + coordinate.astype(np.int64)
        plus = np.bincount(cell, weights=bit, minlength=k * m).astype(np.int64)
        total = np.bincount(cell, minlength=k * m).astype(np.int64)
        return np.concatenate([plus, total])

    def _sketch(self, statistic):
        """The de-biased ``k x m`` sketch ``M`` and the number of reports."""
        k, m = self.n_hashes, self.width
        statistic = np.asarray(statistic)
        expected = k * m + k if not self.hadamard else 2 * k * m
        if statistic.shape != (expected,) or statistic.dtype.kind not in "iu" \
                or (statistic < 0).any():
            raise ValueError(f"a {'HCMS' if self.hadamard else 'CMS'} statistic has "
                             f"{expected} non-negative integer counts.")
        if not self.hadamard:
            ones, n_j = statistic[:k * m].reshape(k, m), statistic[k * m:]
            if (ones > n_j[:, None]).any():
                raise ValueError("a CMS statistic counts more ones than reports.")
            # x~ = k (c/2 v~ + 1/2) summed over the reports of hash j, v~ = 2 bit - 1.
            M = k * (self.c / 2 * (2 * ones - n_j[:, None]) + n_j[:, None] / 2)
            return M, int(n_j.sum())
        plus, total = statistic[:k * m].reshape(k, m), statistic[k * m:].reshape(k, m)
        if (plus > total).any():
            raise ValueError("an HCMS statistic counts more +1 bits than reports.")
        signed = k * self.c * (2 * plus - total).astype(float)
        # Back from the Hadamard coordinates l to the buckets a: M[j, a] = sum_l x[j, l] H[l, a].
        return fwht(signed, axis=1), int(total.sum())

    def count_variance_per_user(self, frequency):
        """Variance of the estimated count of a value of share ``frequency`` among ``N``
        users, divided by ``N`` (the noise of :meth:`estimate_counts`'s standard error; the
        other values collide with ``1 / m`` of the hashes)."""
        f = np.clip(np.asarray(frequency, dtype=float), 0.0, 1.0)
        rho = 1.0 / self.width
        if self.hadamard:
            per_user = (1 - f) * (self.c ** 2 - rho ** 2) + f * (self.c ** 2 - 1)
        else:
            per_user = (self.c ** 2 - 1) / 4 + (1 - f) * rho * (1 - rho)
        return (self.width / (self.width - 1)) ** 2 * per_user

    def estimate_counts(self, statistic, words):
        """Estimated user counts of the given values and their standard errors (for a value
        whose own share is estimated, other values counted as colliding with ``1 / m``)."""
        M, n = self._sketch(statistic)
        k, m = self.n_hashes, self.width
        words = np.asarray(words, dtype=np.uint64)
        positions = self.hash(np.repeat(words, k, axis=0),
                              np.tile(np.arange(k), words.shape[0])).reshape(-1, k)
        mean = M[np.arange(k)[None, :], positions].mean(axis=1)
        counts = m / (m - 1) * (mean - n / m)
        f = np.clip(counts / max(n, 1), 0.0, 1.0)
        rho = 1.0 / m
        if self.hadamard:
            per_user = (1 - f) * (self.c ** 2 - rho ** 2) + f * (self.c ** 2 - 1)
        else:
            per_user = (self.c ** 2 - 1) / 4 + (1 - f) * rho * (1 - rho)
        return counts, m / (m - 1) * np.sqrt(n * per_user)
