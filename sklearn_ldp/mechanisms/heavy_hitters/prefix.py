"""Heavy hitters over domains too large to list by prefix extension: PEM and TreeHist.

Values are bit strings (:mod:`.values`). The users are split into ``g`` groups, one per round.
Round ``i`` asks its group for the prefix of ``l_i`` bits of their value through a frequency
oracle, and the server estimates the counts of the candidate prefixes only: in round 1 every
prefix of ``l_1`` bits, afterwards the prefixes kept in round ``i - 1`` extended by every
``l_i - l_(i-1)``-bit suffix. It keeps at most the ``k`` largest among those significantly
above zero; the last selection round has ``l = L``. One more round, the verification round,
asks its group for whole values: the values the selection rounds found are estimated on the
users who did not select them (:mod:`.significance` tests them), so the estimates carry no
winner's curse and noise values are dropped.

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

The papers (Wang, Li and Jha's PEM; Bassily, Nissim, Stemmer and Thakurta's TreeHist) are the
References of :class:`~sklearn_ldp.HeavyHitterEstimator`.
"""

import math
import numbers

import numpy as np

from ..._fwht import fwht
from ..._validation import check_epsilon, check_positive_int
from .._base.bits import (
    PRECISION,
    bernoulli_bits,
)
from .._base.docstrings import shared_sections
from .._base.exact import (
    ExactLaw,
    check_law_size,
    integer_ratio_at_most,
    keep_numerator,
    randomized_response_weights,
    uniform_below,
    uniform_mixture,
)
from .._base.headers import SpecEquality
from ..oracles.local_hashing import best_power_of_two_buckets, splitmix64
from .significance import (
    DEFAULT_ALPHA,
    ROUND_NOISE_SHARE,
    check_alpha,
    holm_supported,
    round_critical_z,
    upper_quantile,
)
from .values import (
    _GOLDEN,
    DEFAULT_USERS,
    _one_value_words,
    _prefix_mask,
    check_bit_length,
    encode_values,
    n_words,
)

# Candidates evaluated per round at most (k * 2^eta): bounds the round's work.
MAX_CANDIDATES = 2**16
PROTOCOLS = ("pem", "treehist")
# Complete values kept by a selection round are at least this many null standard errors
# above zero (the final test on held-out users decides).
FINAL_CUT_Z = 1.0
# Version 2: a verification round of whole values follows the selection rounds.
PREFIX_SPEC_VERSION = 2
# Server work (comparisons, 2-3 ns each on a 2-core test machine) that the default eta may
# use: about 1.5 s of one core, or this many comparisons per user when there are more users.
WORK_BUDGET = 2**29
WORK_PER_USER = 256
# Values of more bits than this get a proportionally larger work budget.
BUDGET_BITS = 32
# The Walsh-Hadamard path costs about this many comparisons per kept prefix and bucket.
FOURIER_COST = 10
# Report rows of a string column's length round are numbered from this round on (after any
# prefix schedule, whose rounds are fewer), so a device can send its length before the
# server has fitted the prefix rounds.
LENGTH_ROUND_FIRST = 2**16


# The reference these docstrings share, written once
# (:mod:`sklearn_ldp.mechanisms._base.docstrings`).
pem_reference = shared_sections({"pem reference": """\
References
----------
.. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
   identification", IEEE TDSC, 2019."""})


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
    """``h(x)`` bit by bit: rows ``(r, W, n)``, strings ``(c, W)`` -> ``(c, n)`` hash values
    (bit ``k`` = parity of ``row_k & x``).

    The users run along the last axis, so every operation is one long contiguous loop per
    candidate (the candidates' words are scalars of that loop).
    """
    dtype = _hash_dtype(rows.shape[0])
    out = np.zeros((strings.shape[0], rows.shape[2]), dtype=dtype)
    folded = np.empty(out.shape, dtype=np.uint64)
    for k in range(rows.shape[0]):
        # parity(a) ^ parity(b) = parity(a ^ b): XOR the words first, one popcount after.
        np.bitwise_and(strings[:, 0, None], rows[k, 0][None, :], out=folded)
        for w in range(1, rows.shape[1]):
            folded ^= strings[:, w, None] & rows[k, w][None, :]
        bit = np.bitwise_count(folded)
        bit &= np.uint8(1)
        out |= bit.astype(dtype, copy=False) << dtype(k)
    return out


def _bit_columns(rows, start, count):
    """Bits ``start .. start+count-1`` of every row, ``(r, count, n)`` uint64 0/1, bit ``b``
    of the last axis' order being string bit ``start + count - 1 - b`` (the order of
    :func:`_suffixes`)."""
    positions = start + count - 1 - np.arange(count)
    words, offsets = np.divmod(positions, 64)
    return (rows[:, words, :] >> (63 - offsets).astype(np.uint64)[None, :, None]) \
        & np.uint64(1)


def _suffix_hashes(rows, start, count):
    """``h(S)`` of the ``2^count`` suffixes of :func:`_suffixes`, ``(2^count, n)``.

    The hash is linear, so ``h(S)`` is the XOR of ``h(e_b)`` over the set bits ``b`` of ``S``,
    and ``h(e_b)`` (one set bit, at string bit ``start + count - 1 - b``) is that bit of every
    row: ``count`` bit extractions and ``2^count`` XORs per user, no popcount.
    """
    n_rows, _, n = rows.shape
    dtype = _hash_dtype(n_rows)
    bits = _bit_columns(rows, start, count)
    basis = np.zeros((count, n), dtype=dtype)
    for k in range(n_rows):
        basis |= bits[k].astype(dtype) << dtype(k)
    table = np.zeros((1 << count, n), dtype=dtype)
    for b in range(count):  # suffixes with bit b set = those without, XOR h(e_b)
        table[1 << b:2 << b] = table[:1 << b] ^ basis[b]
    return table


def _suffix_rows(rows, start, count):
    """Each row's bits ``start .. start+count-1`` as a ``count``-bit integer ``(n, r)``, in
    the bit order of :func:`_suffixes` (string bit ``start + count - 1 - b`` is bit ``b``)."""
    bits = _bit_columns(rows, start, count) << np.arange(count, dtype=np.uint64)[:, None]
    return bits.sum(axis=1, dtype=np.uint64).T.astype(np.int64)


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
    # The parities are spanned as bytes (8 times less memory to double), then widened once.
    keys = _xor_span(target_bits, np.uint8).astype(np.int64)  # (n, k, 2^r), 1 = minus
    # One integer bincount over (P, z, sign) instead of a weighted one: F = plus - minus.
    # The key (P << (count + 1)) | (z << 1) | parity is built in place (no (n, k, 2^r)
    # temporaries).
    keys |= z[:, None, :] << 1
    keys |= np.arange(k, dtype=np.int64)[None, :, None] << (count + 1)
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
    """Each seed's ``n_rows`` random rows of ``length`` bits, ``(n_rows, W, n)`` uint64 (the
    users along the last axis)."""
    steps = np.arange(1, n_rows * W + 1, dtype=np.uint64) * _GOLDEN
    words = splitmix64(steps[:, None] + seeds[None, :]).reshape(n_rows, W, seeds.shape[0])
    return words & _prefix_mask(length, W)[None, :, None]


def _hash_own(rows, strings):
    """``h_u(x_u)`` per user: rows ``(r, W, n)``, strings ``(n, W)`` -> ``(n,)`` hash values."""
    dtype = _hash_dtype(rows.shape[0])
    out = np.zeros(rows.shape[2], dtype=dtype)
    strings = strings.T
    for k in range(rows.shape[0]):
        folded = rows[k, 0] & strings[0]
        for w in range(1, rows.shape[1]):
            folded ^= rows[k, w] & strings[w]
        out |= (np.bitwise_count(folded) & np.uint8(1)).astype(dtype) << dtype(k)
    return out


def _sampling_variance(frequency, n_sample, n_population):
    """Variance of the share of a value among ``n_sample`` users drawn uniformly without
    replacement from ``n_population`` among whom its share is ``frequency``:
    ``f (1 - f) (N - m) / ((N - 1) m)``."""
    f = np.clip(frequency, 0.0, 1.0)
    return f * (1 - f) * (n_population - n_sample) \
        / (np.maximum(n_population - 1, 1) * n_sample)


def _population(n_population, n_reports):
    """The users the estimates count among: ``n_population`` (at least the ``n_reports``
    reports, which are a uniform sample of them) or, when None, the reports."""
    if n_population is None:
        return n_reports
    n_population = check_positive_int(n_population, "n_population")
    if n_population < n_reports:
        raise ValueError(f"n_population must be at least the {n_reports} reports, got "
                         f"{n_population}.")
    return n_population


# ---------------------------------------------------------------------------- prefix trees

@pem_reference
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

    <pem reference>

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


@pem_reference
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

    <pem reference>

    Examples
    --------
    >>> [default_extension_bits(32, 4.0, 20, n) for n in (10**5, 10**6, 10**7)]
    [11, 5, 3]
    """
    g = best_power_of_two_buckets(epsilon)
    # Longer values need more rounds: the work allowed grows with the bits to find.
    budget = max(WORK_BUDGET, WORK_PER_USER * n_users) * max(1.0, bit_length / BUDGET_BITS)
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


def length_oracle(epsilon):
    """The length round's protocol: a string's length in bytes as an 8-bit value, whole in
    both of its rounds (one selection round of 8 bits and the verification round), so its
    :meth:`~PrefixHeavyHitters.estimate_counts` is optimized local hashing over the lengths.

    Examples
    --------
    >>> length_oracle(2.0).lengths
    [8, 8]
    """
    return PrefixHeavyHitters(8, epsilon, "pem", n_candidates=1, extension_bits=8)


def length_round_spec(epsilon, max_string_bytes):
    """The specification a deployment ships to the devices of a string column's length round.

    :func:`length_oracle`'s specification with a ``"length_round"`` field: a device given a
    string (at most ``max_string_bytes`` bytes in UTF-8, refused above) privatizes its
    length in bytes, and its report row names round ``LENGTH_ROUND_FIRST + j`` (``j`` the
    length oracle's round), the row a
    :class:`~sklearn_ldp.mechanisms.heavy_hitters.column.HeavyHitterMechanism` with
    ``max_string_bytes`` reads among its prefix rounds' rows. The server fits the bytes the
    prefix rounds cover with :func:`string_bytes_from_lengths`, then publishes those rounds.

    Parameters
    ----------
    epsilon : float
        The length round's budget (each device reports once: the prefix rounds' budget).
    max_string_bytes : int
        The declared maximum length in bytes, in ``[1, 255]``.

    Returns
    -------
    dict

    Examples
    --------
    >>> spec = length_round_spec(2.0, 64)
    >>> spec["bit_length"], spec["length_round"]
    (8, {'first_round': 65536, 'max_string_bytes': 64})

    References
    ----------
    .. [1] Wang, Blocki, Li, Jha, "Locally differentially private protocols for frequency
       estimation", USENIX Security 2017 (optimized local hashing).
    """
    cap = check_positive_int(max_string_bytes, "max_string_bytes", maximum=255)
    return dict(length_oracle(epsilon).to_dict(),
                length_round={"first_round": LENGTH_ROUND_FIRST, "max_string_bytes": cap})


def string_bytes_from_lengths(reports, epsilon, max_string_bytes, default=32):
    """The bytes a collection's prefix rounds cover, from its length round's reports: the
    longest length (in bytes) that Holm's test finds held by some users, plus one byte for
    its end, at most ``max_string_bytes``; ``min(default, max_string_bytes)`` when no length
    is supported (too few users for this budget).

    A deployment runs the length round first (devices privatize ``len(value.encode())`` with
    the specification ``length_oracle(epsilon).to_dict()``), then publishes prefix rounds
    of this many bytes. ``LDPEncoder.fit`` does the same on the users it asks.

    Parameters
    ----------
    reports : ndarray of uint64, shape (n, 3)
        The length round's reports (:func:`length_oracle`'s ``randomize``, or devices' rows
        of :func:`length_round_spec`, numbered from ``LENGTH_ROUND_FIRST``).
    epsilon : float
        The length round's budget.
    max_string_bytes : int
        The declared maximum length in bytes, in ``[1, 255]``.
    default : int, default=32
        The bytes covered when no length is supported.

    Returns
    -------
    int

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values
    >>> lengths = np.repeat([3, 5], 2000)
    >>> reports = length_oracle(4.0).randomize(encode_values(lengths, 8),
    ...                                       np.random.default_rng(0))
    >>> string_bytes_from_lengths(reports, 4.0, 64)
    6

    References
    ----------
    .. [1] Wang, Blocki, Li, Jha, "Locally differentially private protocols for frequency
       estimation", USENIX Security 2017 (optimized local hashing).
    .. [2] Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
       Journal of Statistics 6 (1979).
    """
    cap = check_positive_int(max_string_bytes, "max_string_bytes", maximum=255)
    default = check_positive_int(default, "default")
    oracle = length_oracle(epsilon)
    reports = np.asarray(reports)
    if reports.ndim == 2 and reports.shape[1:] == (3,) and reports.dtype == np.uint64:
        # Rows of length_round_spec's devices: the length oracle's rounds, renumbered.
        shifted = reports[:, 0] >= LENGTH_ROUND_FIRST
        if shifted.any():
            reports = reports.copy()
            reports[shifted, 0] -= np.uint64(LENGTH_ROUND_FIRST)
    reports = oracle.check_reports(reports)
    if reports.shape[0] == 0:
        raise ValueError("the length round has no reports.")
    counts, _ = oracle.estimate_counts(reports, encode_values(np.arange(cap + 1), 8))
    supported = np.flatnonzero(holm_supported(
        counts / np.sqrt(oracle._null_variance(reports.shape[0]))))
    return min(cap, int(supported.max()) + 1 if supported.size else default)


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


@pem_reference
class PrefixHeavyHitters(SpecEquality):
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
        Prefix length of each round: the selection rounds (:func:`prefix_schedule`; the last
        is ``bit_length``), then the verification round (``bit_length``), whose users only
        estimate the values the selection rounds found.
    g : int
        Hash buckets of PEM's local hashing (2 for TreeHist's one bit).

    See Also
    --------
    SketchFrequencyOracle : Frequencies of given candidates (CMS, HCMS).

    <pem reference>
    .. [2] R. Bassily, K. Nissim, U. Stemmer and A. Thakurta, "Practical locally private heavy
       hitters", NeurIPS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.heavy_hitters.values import decode_values, encode_values
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
        # The selection rounds, then one verification round of whole values: its users
        # estimate the values the others selected (held out, so no winner's curse).
        self.lengths = prefix_schedule(self.bit_length, self.n_candidates, eta) \
            + [self.bit_length]
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

    @property
    def n_slots(self):
        """Prefixes (and complete values) a round keeps at most: ``k`` plus the share of
        the slots the round's cut leaves to null prefixes,
        ``k + ceil(ROUND_NOISE_SHARE k)`` (25 for ``k = 20``), so that null prefixes above
        the cut do not push out the weakest of ``k`` real ones."""
        return self.n_candidates + math.ceil(ROUND_NOISE_SHARE * self.n_candidates)

    def to_dict(self):
        """A JSON-ready specification (rebuilt by :meth:`from_dict`)."""
        return {"version": PREFIX_SPEC_VERSION, "mechanism": self.kind,
                "bit_length": self.bit_length, "epsilon": self.epsilon, "protocol": self.protocol,
                "n_candidates": self.n_candidates, "extension_bits": self.extension_bits}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field."""
        fields = {"bit_length", "epsilon", "protocol", "n_candidates", "extension_bits"}
        if isinstance(spec, dict) and spec.get("mechanism") == cls.kind \
                and spec.get("version") == 1:
            raise ValueError(f"a version-1 {cls.kind!r} specification has no verification "
                             f"round; this version reads version {PREFIX_SPEC_VERSION}: "
                             "collect again with a current encoder.")
        if not isinstance(spec, dict) or spec.get("mechanism") != cls.kind \
                or spec.get("version") != PREFIX_SPEC_VERSION or not fields <= set(spec):
            raise ValueError(f"not a version-{PREFIX_SPEC_VERSION} {cls.kind!r} specification "
                             f"with fields {sorted(fields)}: {str(spec)[:80]!r}.")
        return cls(spec["bit_length"], spec["epsilon"], spec["protocol"],
                   spec["n_candidates"], spec["extension_bits"])

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
        ((8, 3), True)
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
            target = _parities(rows, kept)
            target ^= block[:, 2].astype(dtype)[None, :]
            # The comparisons run with the users first (long loops over k 2^eta pairs).
            target = np.ascontiguousarray(target.T)
            if fourier:
                bits = (target[:, :, None] >> np.arange(self.n_rows, dtype=dtype)) & dtype(1)
                spectrum += _fourier_spectrum(rows, bits, start, count)
                continue
            table = np.ascontiguousarray(_suffix_hashes(rows, start, count).T)
            equal = target[:, :, None] == table[:, None, :]
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

    def _null_variance(self, n):
        """Variance of a candidate's estimated count among ``n`` reports when no user holds
        it: ``n q (1 - q) / (p - q)^2`` (PEM), ``n c^2`` (TreeHist)."""
        if self.protocol == "pem":
            return n * self.q * (1 - self.q) / (self.p - self.q) ** 2
        return n * self.c ** 2

    def _groups(self, reports):
        """Each round's reports (a ValueError when a round has none)."""
        # One stable sort by round (a radix sort of small integers), then slices: the
        # groups keep the reports' order, as one boolean mask per round would.
        rounds = reports[:, 0].astype(np.uint16)
        ordered = reports[np.argsort(rounds, kind="stable")]
        bounds = np.cumsum(np.bincount(rounds, minlength=self.n_rounds))
        groups = np.split(ordered, bounds[:-1])
        for index, group in enumerate(groups):
            if group.shape[0] == 0:
                raise ValueError(f"round {index} has no reports: collect more users.")
        return groups

    def _pooled_counts(self, groups, words, rounds_of, n_population=None, return_users=False):
        """Counts of complete values estimated on the pooled groups of the rounds each may
        use: ``rounds_of(j)`` is a boolean mask of the values round ``j`` may score.

        A complete value is its own prefix of any length at least its own (strings end with
        zero bytes), so every such round's users estimate its count without bias; the sums
        of the groups' counts and variances are those of the pooled users. Those ``m`` users
        are a uniform sample of the ``N`` users (the rounds are drawn uniformly), so the
        count among all of them, ``N / m`` times the pooled estimate, also varies with which
        users the sample holds: the standard error adds the variance of a sample share
        without replacement, ``N^2 f (1 - f) (N - m) / ((N - 1) m)``.

        Returns
        -------
        counts, errors, z : ndarray of float
            Estimated counts among the ``n_population`` users (None: the reports), their
            standard errors, and the pooled estimate over its standard error under
            frequency 0 (NaN for a value no round may score).
        users : ndarray of float
            With ``return_users``: the users ``m`` who estimate each value.
        """
        m = words.shape[0]
        sums, variance, null, users = (np.zeros(m) for _ in range(4))
        for j, group in enumerate(groups):
            index = np.flatnonzero(rounds_of(j))
            length = self.lengths[j]
            for first in range(0, index.size, 256):
                block = index[first:first + 256]
                c, e, _ = self._round_counts(group, length, words[block], length)
                sums[block] += c
                variance[block] += e ** 2
                null[block] += self._null_variance(group.shape[0])
                users[block] += group.shape[0]
        total = _population(n_population, sum(group.shape[0] for group in groups))
        with np.errstate(divide="ignore", invalid="ignore"):
            scale = np.where(users > 0, total / users, np.nan)
            counts = sums * scale
            sampling = total ** 2 * _sampling_variance(counts / total, users, total)
            errors = np.sqrt(variance * scale ** 2 + sampling)
            if return_users:
                return counts, errors, sums / np.sqrt(null), users
            return counts, errors, sums / np.sqrt(null)

    def identify(self, reports, threshold=None, possible_prefix=None, ended_prefix=None,
                 n_population=None):
        """Run the rounds: the candidate heavy hitters and their held-out estimates.

        Every selection round keeps the growing prefixes whose estimate exceeds
        :func:`~.significance.round_critical_z` null standard errors (and ``threshold``),
        at most ``n_slots`` of them, and at most ``n_slots`` complete values above
        ``FINAL_CUT_Z`` null standard errors (the final test decides on those). A
        candidate is complete in the last selection round, or earlier when
        ``ended_prefix`` says its value ended (a string's zero byte). Each complete value is
        then estimated on the users of the later rounds only (the last round, which reports
        whole values, is held out for this), so its estimate and standard error do not
        carry the selection: no winner's curse.

        Parameters
        ----------
        reports : ndarray of uint64, shape (n, 3)
            :meth:`randomize`'s reports (every round's group).
        threshold : float or None, default=None
            Keep, in every round, only the candidates whose estimated share of the round's
            users is at least this, in ``(0, 1]``. None: no threshold.
        possible_prefix : callable or None, default=None
            ``possible_prefix(candidates, length)``: a boolean mask of the ``(c, W)``
            candidate prefixes of ``length`` bits that some user's value can start with
            (e.g. valid UTF-8, nothing but zero bytes after a zero byte). The others are
            dropped. None keeps every candidate.
        ended_prefix : callable or None, default=None
            ``ended_prefix(candidates, length)``: a boolean mask of the candidates that are
            whole values already. None: only the last selection round's are.
        n_population : int or None, default=None
            The users the reports are a uniform sample of (e.g. all the users, when some
            reported in a length round instead): the counts are estimated among them and
            the standard errors include that sampling. None: the reports' users.

        Returns
        -------
        result : dict
            ``values`` (``(h, W)`` uint64 words), their held-out ``counts`` (estimated
            users among ``n_population``), ``std_errors`` and ``z`` (count over its standard
            error under frequency 0) and ``users`` (the held-out users who estimate it),
            sorted by decreasing count; ``rounds`` (per selection round: prefix length,
            users, candidates scored, candidates kept).
        """
        reports = self.check_reports(reports)
        if threshold is not None and (isinstance(threshold, bool) or not isinstance(
                threshold, numbers.Real) or not 0 < threshold <= 1):
            raise ValueError(f"threshold must be a share in (0, 1], got {threshold!r}.")
        groups = self._groups(reports)
        kept = np.zeros((1, self.W), dtype=np.uint64)
        start, history, finals, selected = 0, [], [], []
        for index, length in enumerate(self.lengths[:-1]):
            group = groups[index]
            if kept.shape[0] == 0:  # nothing left to extend
                history.append({"length": length, "users": int(group.shape[0]),
                                "candidates": 0, "kept": 0})
                continue
            counts, _, candidates = self._round_counts(group, length, kept, start)
            z = counts / np.sqrt(self._null_variance(group.shape[0]))
            keep = z > FINAL_CUT_Z
            if threshold is not None:
                keep &= counts >= threshold * group.shape[0]
            if possible_prefix is not None:
                # Only the candidates that passed the cut are checked: the check steps
                # through every byte of every candidate, and most candidates fail the cut.
                passed = np.flatnonzero(keep)
                if passed.size:
                    keep[passed] = possible_prefix(candidates[passed], length)
            order = np.flatnonzero(keep)
            order = order[np.argsort(-counts[order], kind="stable")]
            if index == self.n_rounds - 2:
                done = np.ones(order.size, dtype=bool)
            elif ended_prefix is not None:
                done = ended_prefix(candidates[order], length)
            else:
                done = np.zeros(order.size, dtype=bool)
            # Prefixes still growing pass the round's cut and take the slots; complete
            # values take no slot in later rounds and face the final test on held-out
            # users, so a milder cut keeps a real value that this round's noise pushed
            # down. The cut lets null prefixes take about a quarter of k slots: k real
            # prefixes keep their slots only when that many more are kept.
            cut = round_critical_z(candidates.shape[0], self.n_candidates)
            growing = order[~done & (z[order] > cut)][:self.n_slots]
            complete = order[done][:self.n_slots]
            finals.append(candidates[complete])
            selected += [index] * complete.size
            kept, start = candidates[growing], length
            history.append({"length": length, "users": int(group.shape[0]),
                            "candidates": int(candidates.shape[0]),
                            "kept": int(complete.size + kept.shape[0])})
        values = np.concatenate(finals)
        selected = np.asarray(selected, dtype=np.int64)
        history.append({"length": self.bit_length, "users": int(groups[-1].shape[0]),
                        "candidates": int(values.shape[0]), "kept": int(values.shape[0])})
        counts, errors, z, users = self._pooled_counts(
            groups, values, lambda j: selected < j, n_population, return_users=True)
        order = np.argsort(-counts, kind="stable")
        return {"values": values[order], "counts": counts[order],
                "std_errors": errors[order], "z": z[order], "users": users[order],
                "rounds": history}

    def count_variance_per_user(self, frequency):
        """Variance of the estimated count of a value of share ``frequency`` among ``N``
        users, divided by ``N``, from one round's group of ``N / rounds`` users (the
        verification round's, for a value of ``bit_length`` bits): ``rounds (f p (1 - p) +
        (1 - f) q (1 - q)) / (p - q)^2`` (PEM), ``rounds (c^2 - f)`` (TreeHist)."""
        f = np.clip(np.asarray(frequency, dtype=float), 0.0, 1.0)
        if self.protocol == "pem":
            per_report = (f * self.p * (1 - self.p) + (1 - f) * self.q * (1 - self.q)) \
                / (self.p - self.q) ** 2
        else:
            per_report = self.c ** 2 - f
        return self.n_rounds * per_report

    def frequency_variance(self, frequency, n_estimating, n_population):
        """Variance of a value's estimated frequency among ``n_population`` users when
        ``n_estimating`` of them (a uniform sample, e.g. the verification round's users and,
        for a string that ended early, every later round's) report on it: the reports'
        noise, ``v(f) / m`` with ``v(f) = (f p (1 - p) + (1 - f) q (1 - q)) / (p - q)^2``
        (PEM) or ``c^2 - f`` (TreeHist), plus which users the sample holds,
        ``f (1 - f) (N - m) / ((N - 1) m)``.

        Examples
        --------
        >>> finder = PrefixHeavyHitters(32, 2.0, n_users=10**6)
        >>> m = 10**6 / finder.n_rounds  # a 32-bit value: the verification round's users
        >>> bool(np.isclose(finder.frequency_variance(0.0, m, 10**6) * 10**6,
        ...                 finder.count_variance_per_user(0.0)))
        True
        """
        f = np.clip(np.asarray(frequency, dtype=float), 0.0, 1.0)
        noise = self.count_variance_per_user(f) / self.n_rounds
        return noise / n_estimating + _sampling_variance(f, n_estimating, n_population)

    def detectable_frequency(self, n_users, alpha=DEFAULT_ALPHA):
        """The smallest frequency the rounds find and the final test supports half of the
        time, for ``n_users`` users (``N / rounds`` per round): the larger of the last
        selection round's cut and the final test's Bonferroni cut over ``n_slots``
        values, in frequency (a value of ``bit_length`` bits, estimated on the verification
        round only; shorter strings are estimated on more users)."""
        n_users = check_positive_int(n_users, "n_users")
        alpha = check_alpha(alpha)
        group = n_users / self.n_rounds
        previous = self.lengths[-3] if self.n_rounds > 2 else 0
        scored = (self.n_slots if previous else 1) << (self.lengths[-2] - previous)
        cut = max(round_critical_z(scored, self.n_candidates),
                  upper_quantile(alpha / self.n_slots))
        return float(min(1.0, cut * np.sqrt(self._null_variance(group)) / group))

    def estimate_counts(self, reports, words, n_population=None):
        """Estimated user counts (among the ``n_population`` users the reports sample; None:
        among the reports) of any values, from the rounds whose users reported whole values
        (the last two), with their standard errors (noise and sampling)."""
        reports = self.check_reports(reports)
        words = np.asarray(words, dtype=np.uint64)
        groups = self._groups(reports)
        whole = [j for j, length in enumerate(self.lengths) if length == self.bit_length]
        counts, errors, _ = self._pooled_counts(
            groups, words, lambda j: np.full(words.shape[0], j in whole), n_population)
        return counts, errors
