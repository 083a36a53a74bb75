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

from .._validation import check_epsilon, check_positive_int
from ._fwht import fwht
from .local_hashing import best_power_of_two_buckets, splitmix64

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MAX_BIT_LENGTH = 1024
# Candidates evaluated per round at most (k * 2^eta): bounds the round's work.
MAX_CANDIDATES = 2**16
PROTOCOLS = ("pem", "treehist")


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


def _parities(rows, strings):
    """``parity(rows . strings)`` bit by bit: rows ``(n, r, W)``, strings ``(c, W)`` ->
    ``(n, c)`` uint8 (bit ``k`` = parity of row ``k``)."""
    out = np.zeros((rows.shape[0], strings.shape[0]), dtype=np.uint8)
    for k in range(rows.shape[1]):
        bits = np.zeros((rows.shape[0], strings.shape[0]), dtype=np.uint8)
        for w in range(rows.shape[2]):
            bits += np.bitwise_count(rows[:, k, w, None] & strings[None, :, w])
        out |= (bits & np.uint8(1)) << np.uint8(k)
    return out


def _seed_rows(seeds, n_rows, length, W):
    """Each seed's ``n_rows`` random rows of ``length`` bits, ``(n, n_rows, W)`` uint64."""
    steps = np.arange(1, n_rows * W + 1, dtype=np.uint64) * _GOLDEN
    words = splitmix64(seeds[:, None] + steps).reshape(seeds.shape[0], n_rows, W)
    return words & _prefix_mask(length, W)


def _hash_own(rows, strings):
    """``h_u(x_u)`` per user: rows ``(n, r, W)``, strings ``(n, W)`` -> ``(n,)`` uint8."""
    out = np.zeros(rows.shape[0], dtype=np.uint8)
    for k in range(rows.shape[1]):
        bits = np.zeros(rows.shape[0], dtype=np.uint8)
        for w in range(rows.shape[2]):
            bits += np.bitwise_count(rows[:, k, w] & strings[:, w])
        out |= (bits & np.uint8(1)) << np.uint8(k)
    return out


# ---------------------------------------------------------------------------- prefix trees

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
        Prefixes kept per round, ``k`` (the number of heavy hitters sought).
    extension_bits : int or None, default=None
        Bits added per round, ``eta`` (PEM; TreeHist uses 1). Default: the largest with
        ``k 2^eta <= 1024``.

    Attributes
    ----------
    lengths : list of int
        Prefix length of each round (the last is ``bit_length``).

    See Also
    --------
    SketchFrequencyOracle : frequencies of given candidates (CMS, HCMS).

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
                 extension_bits=None):
        self.bit_length = check_bit_length(bit_length)
        self.epsilon = check_epsilon(epsilon)
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
        self.protocol = protocol
        self.n_candidates = check_positive_int(n_candidates, "n_candidates")
        if protocol == "treehist":
            eta = 1
        elif extension_bits is None:
            eta = max(1, int(math.floor(math.log2(max(1024 // self.n_candidates, 2)))))
        else:
            eta = check_positive_int(extension_bits, "extension_bits")
        if self.n_candidates << eta > MAX_CANDIDATES:
            raise ValueError(f"n_candidates * 2^extension_bits = {self.n_candidates << eta} "
                             f"candidates per round exceeds {MAX_CANDIDATES}.")
        self.extension_bits = eta
        first = min(self.bit_length, max(1, math.ceil(math.log2(self.n_candidates))) + eta)
        self.lengths = list(range(first, self.bit_length, eta)) + [self.bit_length]
        self.W = n_words(self.bit_length)
        e = math.exp(self.epsilon)
        if protocol == "pem":
            self.g = best_power_of_two_buckets(self.epsilon)
            self.n_rows = self.g.bit_length() - 1
            self.p, self.q = e / (e + self.g - 1), 1.0 / self.g
        else:
            self.n_rows = 1
            self.c = (e + 1) / (e - 1)
            self.p = e / (e + 1)  # probability that the bit is sent unflipped

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
        rounds = rng.integers(self.n_rounds, size=n)
        seeds = rng.integers(0, 2**64 - 1, size=n, dtype=np.uint64, endpoint=True)
        y = np.zeros(n, dtype=np.uint64)
        for index, length in enumerate(self.lengths):
            members = np.flatnonzero(rounds == index)
            prefixes = words[members] & _prefix_mask(length, self.W)
            own = _hash_own(_seed_rows(seeds[members], self.n_rows, length, self.W), prefixes)
            if self.protocol == "pem":  # g-ary randomized response of the bucket
                other = rng.integers(self.g - 1, size=members.size).astype(np.uint8)
                other += other >= own
                keep = rng.random(members.size) < self.p
                y[members] = np.where(keep, own, other)
            else:
                flip = rng.random(members.size) >= self.p
                y[members] = own ^ flip.astype(np.uint8)
        return np.column_stack([rounds.astype(np.uint64), seeds, y])

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
        scores = np.zeros((kept.shape[0], suffixes.shape[0]))
        for first in range(0, n, 8192):  # bounded (chunk, k, 2^eta) temporaries
            chunk = reports[first:first + 8192]
            rows = _seed_rows(chunk[:, 1], self.n_rows, length, self.W)
            combined = _parities(rows, kept)[:, :, None] ^ _parities(rows, suffixes)[:, None]
            y = chunk[:, 2].astype(np.uint8)[:, None, None]
            if self.protocol == "pem":
                scores += (combined == y).sum(axis=0)
            else:  # sum of (-1)^(b + s.c)
                scores += (1 - 2 * (combined ^ y).astype(np.int64)).sum(axis=0)
        candidates = (kept[:, None, :] | suffixes[None, :, :]).reshape(-1, self.W)
        scores = scores.ravel()
        if self.protocol == "pem":
            counts = (scores - n * self.q) / (self.p - self.q)
            f = np.clip(counts / max(n, 1), 0.0, 1.0)
            variance = n * (f * self.p * (1 - self.p) + (1 - f) * self.q * (1 - self.q)) \
                / (self.p - self.q) ** 2
        else:
            counts = self.c * scores
            f = np.clip(counts / max(n, 1), 0.0, 1.0)
            variance = n * (self.c ** 2 - f)
        return counts, np.sqrt(variance), candidates

    def identify(self, reports, threshold=None):
        """Run the rounds: the heavy hitters and their estimated counts.

        Parameters
        ----------
        reports : ndarray of uint64, shape (n, 3)
            :meth:`randomize`'s reports (every round's group).
        threshold : float or None, default=None
            Keep, in every round, the candidates whose estimated share of the users is at
            least this (at most ``n_candidates`` of them); None keeps the ``n_candidates``
            largest.

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
            order = np.argsort(-counts, kind="stable")[:self.n_candidates]
            if threshold is not None:
                order = order[counts[order] >= threshold * group.shape[0]]
            history.append({"length": length, "users": int(group.shape[0]),
                            "candidates": int(candidates.shape[0])})
            kept, start = candidates[order], length
            scale = total / group.shape[0]
            final_counts, final_errors = counts[order] * scale, errors[order] * scale
        return {"values": kept, "counts": final_counts, "std_errors": final_errors,
                "rounds": history}

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

def _fingerprints(words):
    """One 64-bit fingerprint per value (SplitMix64 over the words, chained)."""
    state = np.zeros(words.shape[0], dtype=np.uint64)
    for w in range(words.shape[1]):
        state = splitmix64(state ^ words[:, w]) + _GOLDEN * np.uint64(w + 1)
    return state


class SketchFrequencyOracle:
    """Apple's count-mean sketch (CMS) and its Hadamard variant (HCMS).

    Parameters
    ----------
    epsilon : float
        Privacy budget of each report.
    n_hashes : int, default=256
        Number of public hash functions ``k``.
    width : int, default=1024
        Sketch width ``m`` (a power of two for HCMS).
    hadamard : bool, default=False
        HCMS (one bit per report) instead of CMS (``m`` bits per report).
    hash_seed : int, default=0
        Public seed naming the hash functions (pick a fresh one per collection: the
        estimates are unbiased over the hash functions' choice).

    See Also
    --------
    PrefixHeavyHitters : find the heavy hitters without candidates.

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

    def __init__(self, epsilon, n_hashes=256, width=1024, hadamard=False, hash_seed=0):
        self.epsilon = check_epsilon(epsilon)
        self.n_hashes = check_positive_int(n_hashes, "n_hashes")
        self.width = check_positive_int(width, "width")
        if self.width < 2 or self.n_hashes > 2**16 or self.width > 2**20:
            raise ValueError(f"width must be in [2, 2^20] and n_hashes at most 2^16, got "
                             f"width={width!r}, n_hashes={n_hashes!r}.")
        if hadamard and self.width & (self.width - 1):
            raise ValueError(f"HCMS needs a power-of-two width, got {width!r}.")
        self.hadamard = bool(hadamard)
        if isinstance(hash_seed, bool) or not isinstance(hash_seed, numbers.Integral) \
                or not 0 <= hash_seed < 2**64:
            raise ValueError(f"hash_seed must be an integer in [0, 2^64), got {hash_seed!r}.")
        self.hash_seed = int(hash_seed)
        half = math.exp(self.epsilon / (1 if self.hadamard else 2))
        self.c = (half + 1) / (half - 1)
        self.keep = half / (half + 1)  # probability that an entry / the bit is not flipped

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
            # +1 at h_j(x), -1 elsewhere, every entry flipped with probability 1 - keep:
            # bit a is 1 with probability keep at a = h_j(x), 1 - keep elsewhere.
            bits = rng.random((n, self.width)) >= self.keep
            bits[np.arange(n), position] = ~bits[np.arange(n), position]
            return j.astype(np.uint32), np.packbits(bits, axis=1, bitorder="little")
        coordinate = rng.integers(self.width, size=n)
        sign_bit = (np.bitwise_count((coordinate & position).astype(np.uint64))
                    & np.uint8(1)) == 0
        flip = rng.random(n) >= self.keep
        return (j.astype(np.uint32), coordinate.astype(np.uint32),
                (sign_bit ^ flip).astype(np.uint8))

    def aggregate(self, reports):
        """Integer sketch statistic: CMS ``[ones (k x m), n_j (k)]``; HCMS ``[plus (k x m),
        total (k x m)]``, flattened (int64, additive)."""
        k, m = self.n_hashes, self.width
        if not self.hadamard:
            j, packed = (np.asarray(part) for part in reports)
            if j.ndim != 1 or j.dtype.kind not in "iu" or (j.size and j.max() >= k) \
                    or packed.shape != (j.shape[0], (m + 7) // 8) or packed.dtype != np.uint8:
                raise ValueError(f"CMS reports are (j < {k}, packed {m}-bit rows).")
            bits = np.unpackbits(packed, axis=1, bitorder="little")
            if bits[:, m:].any():
                raise ValueError("a CMS report sets a bit past the sketch width.")
            ones = np.zeros((k, m), dtype=np.int64)
            np.add.at(ones, j.astype(np.int64), bits[:, :m].astype(np.int64))
            return np.concatenate([ones.ravel(), np.bincount(j.astype(np.int64),
                                                             minlength=k)])
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
