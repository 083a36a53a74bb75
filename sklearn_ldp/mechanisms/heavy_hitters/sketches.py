"""Frequencies over domains too large to list with sketches: Apple's CMS and HCMS.

Values are bit strings (:mod:`.values`). The client picks one of ``k`` public hash functions
``h_j`` into ``[m]``. CMS sends the ``+-1`` one-hot vector of ``h_j(x)`` with every entry
flipped with probability ``1 / (e^(eps/2) + 1)``; HCMS sends one uniformly chosen coordinate of
its Hadamard transform, flipped with probability ``1 / (e^eps + 1)``. The server accumulates a
``k x m`` sketch and estimates any candidate's count as ``m / (m - 1) ((1/k) sum_j M[j, h_j(c)]
- n / m)``: unbiased over the random choice of the hash functions (a given sketch carries the
collisions of its hashes).

Variance of the estimate (over the reports' randomness and the hash functions), for a
candidate ``c`` held by ``n_c`` of the ``N`` users::

    Var = (m / (m - 1))^2 (n_c v_own + (N - n_c) v_other) + (F_2 - n_c^2) / (k (m - 1))

* Report noise: per report the summand ``W`` has variance ``(c^2 - 1) / 4 + rho (1 - rho)``
  (CMS, ``c = c_(eps/2)``) or ``c^2 - rho^2`` (HCMS, ``c = c_eps``), ``rho`` the fraction of
  the hashes where the report's value collides with the candidate: 1 for the candidate itself
  (``v_own``); for another value ``rho`` is Binomial(k, 1/m) / k over the hash functions, so
  ``v_other`` uses ``E[rho] = 1/m`` and ``E[rho^2] = 1/m^2 + (1/m)(1 - 1/m)/k``.
* Hash collisions: given the hash functions the estimate is off by ``m / (m - 1) sum_(v != c)
  n_v (rho_v - 1/m)``, whose variance over the hash functions is ``sum_(v != c) n_v^2 / (k (m -
  1))`` (``F_2 = sum_v n_v^2``, the second moment of the counts). The server estimates ``F_2``
  from the sketch itself (:meth:`SketchFrequencyOracle.second_moment`): per row ``j``, ``sum_a
  M[j, a]^2`` has mean ``sum_a Y[j, a]^2`` (the bucket counts) plus the noise, known in closed
  form, and ``sum_a Y[j, a]^2`` has mean ``F_2 + (N^2 - F_2) / m`` over the hash functions.

The papers (Apple's; Cormode and Muthukrishnan's count-min sketch; Cormode, Maddock and
Maple's analysis of CMS and HCMS) are the References of :class:`SketchFrequencyOracle`.
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
from .._base.docstrings import shared_sections
from .._base.exact import (
    ExactLaw,
    check_law_size,
    integer_ratio_at_most,
    keep_numerator,
    uniform_mixture,
)
from .._base.headers import SpecEquality, check_version_one_fields
from ..oracles.local_hashing import splitmix64
from .values import (
    _GOLDEN,
    DEFAULT_USERS,
    _one_value_words,
)

# Sketch defaults: Apple's width, and the squared frequency mass the number of hash
# functions is sized for (see default_sketch_hashes).
DEFAULT_SKETCH_WIDTH = 1024
SKETCH_SQUARED_MASS = 0.01


# The reference these docstrings share, written once
# (:mod:`sklearn_ldp.mechanisms._base.docstrings`).
apple_reference = shared_sections({"apple reference": """\
References
----------
.. [1] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine
   Learning Journal, 2017.
.. [2] G. Cormode and S. Muthukrishnan, "An improved data stream summary: the count-min sketch
   and its applications", Journal of Algorithms 55(1), 2005.
.. [3] G. Cormode, S. Maddock and C. Maple, "Frequency estimation under local differential
   privacy", PVLDB 14(11), 2021."""})


@apple_reference
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

    <apple reference>

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


@apple_reference
class SketchFrequencyOracle(SpecEquality):
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

    <apple reference>

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values
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
        # The number of users the sketch was built for: count_variance_per_user's default N
        # (not part of the specification: the reports do not depend on it).
        self.n_users = DEFAULT_USERS if n_users is None else n_users
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
        check_version_one_fields(spec, cls.kind, fields)
        return cls(spec["epsilon"], spec["n_hashes"], spec["width"], spec["hadamard"],
                   spec["hash_seed"])

    def hash(self, words, which):
        """``h_j(x)`` in ``[0, m)`` for values ``words`` ``(n, W)`` and hash indices
        ``which`` ``(n,)``."""
        return self._hash_keys(_fingerprints(np.asarray(words, dtype=np.uint64)), which)

    def _hash_keys(self, key, which):
        """:meth:`hash` from the values' fingerprints ``key`` (broadcast against ``which``)."""
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

    def _report_variance(self, frequency):
        """``(m / (m - 1))^2`` times the variance of one report's summand for a candidate of
        share ``frequency`` (``v_own`` for its holders, ``v_other`` for the others, averaged
        over the hash functions; module docstring)."""
        f = np.clip(np.asarray(frequency, dtype=float), 0.0, 1.0)
        m, k = self.width, self.n_hashes
        rho, rho_squared = 1.0 / m, 1.0 / m**2 + (1.0 / m) * (1 - 1.0 / m) / k
        if self.hadamard:
            own, other = self.c**2 - 1, self.c**2 - rho_squared
        else:
            own, other = (self.c**2 - 1) / 4, (self.c**2 - 1) / 4 + rho - rho_squared
        return (m / (m - 1)) ** 2 * ((1 - f) * other + f * own)

    def _collision_variance(self, second_moment, counts):
        """Variance of a candidate's count from the other values' collisions, over the hash
        functions: ``(F_2 - n_c^2) / (k (m - 1))`` (never negative)."""
        others = np.maximum(second_moment - np.square(counts), 0.0)
        return others / (self.n_hashes * (self.width - 1))

    def count_variance_per_user(self, frequency, n_users=None, squared_mass=None):
        """Variance of the estimated count of a value of share ``frequency`` among ``N``
        users, divided by ``N``: the reports' noise plus the hash collisions.

        Parameters
        ----------
        frequency : float or array-like
            The value's share of the users, in ``[0, 1]``.
        n_users : int or None, default=None
            ``N`` (the collisions' variance per user grows with it). None: the ``n_users``
            the sketch was built for (``10^6`` when it was not given).
        squared_mass : float or None, default=None
            ``sum_v f_v^2``, the squared shares of all the values (the candidate's
            included). None: ``SKETCH_SQUARED_MASS`` (1%), the mass the default ``n_hashes``
            is sized for; a fitted sketch estimates it with :meth:`second_moment`.

        Returns
        -------
        ndarray
            ``(m / (m - 1))^2 ((1 - f) v_other + f v_own) + N (squared_mass - f^2) / (k (m -
            1))`` (module docstring).

        Examples
        --------
        >>> sketch = SketchFrequencyOracle(2.0, n_hashes=64, width=256)
        >>> noise = sketch.count_variance_per_user(0.0, squared_mass=0.0)
        >>> bool(sketch.count_variance_per_user(0.0, n_users=10**6) > noise)
        True
        """
        f = np.clip(np.asarray(frequency, dtype=float), 0.0, 1.0)
        n = self.n_users if n_users is None else check_positive_int(n_users, "n_users")
        mass = SKETCH_SQUARED_MASS if squared_mass is None else float(squared_mass)
        if not 0.0 <= mass <= 1.0:
            raise ValueError(f"squared_mass must be in [0, 1], got {squared_mass!r}.")
        # In shares: F_2 = N^2 mass and n_c = N f, over N.
        return self._report_variance(f) + n * self._collision_variance(mass, f)

    def second_moment(self, statistic):
        """Estimated ``F_2 = sum_v n_v^2``, the sum over the values of their squared user
        counts, from the sketch itself (never below 0).

        Per row ``j`` (the reports of hash ``j``, each weighted ``k``), ``sum_a M[j, a]^2``
        has mean ``sum_a Y[j, a]^2 + N (k m v + k - 1)`` (CMS: ``v = (c^2 - 1) / 4``, the
        ``k - 1`` from each report's own bucket) or ``sum_a Y[j, a]^2 + N (k m c^2 - 1)``
        (HCMS), ``Y[j, a]`` the users whose value hashes to ``a``; over the hash functions
        ``sum_a Y[j, a]^2`` has mean ``F_2 + (N^2 - F_2) / m``. The rows are averaged.

        Parameters
        ----------
        statistic : ndarray
            :meth:`aggregate`'s statistic.

        Returns
        -------
        float
            The estimate of ``F_2`` (users squared).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values
        >>> rng = np.random.default_rng(0)
        >>> values = rng.integers(4, size=100_000)  # four values of 25%: F_2 = N^2 / 4
        >>> sketch = SketchFrequencyOracle(4.0, n_hashes=16, width=64, hadamard=True)
        >>> statistic = sketch.aggregate(sketch.randomize(encode_values(values, 32), rng))
        >>> bool(abs(sketch.second_moment(statistic) / 100_000**2 - 0.25) < 0.02)
        True
        """
        M, n = self._sketch(statistic)
        k, m = self.n_hashes, self.width
        if self.hadamard:
            noise = n * (k * m * self.c**2 - 1)
        else:
            noise = n * (k * m * (self.c**2 - 1) / 4 + k - 1)
        buckets = float(np.mean(np.sum(np.square(M), axis=1))) - noise
        return max((buckets - n * n / m) / (1 - 1 / m), 0.0)

    def estimate_counts(self, statistic, words):
        """Estimated user counts of the given values and their standard errors.

        The standard error is that of the module docstring at the estimated counts (clipped
        to ``[0, N]``) and the estimated second moment (:meth:`second_moment`): the
        reports' noise and the other values' hash collisions.

        Parameters
        ----------
        statistic : ndarray
            :meth:`aggregate`'s statistic.
        words : ndarray of uint64 of shape (n_values, W)
            The values, encoded.

        Returns
        -------
        counts, std_errors : ndarray of shape (n_values,)
        """
        M, n = self._sketch(statistic)
        k, m = self.n_hashes, self.width
        key = _fingerprints(np.asarray(words, dtype=np.uint64))
        rows = np.arange(k)
        # Candidates in blocks of at most 2^22 (candidate, hash) cells: a vocabulary of 10^5
        # candidates times 1024 hashes is never materialised at once.
        mean = np.empty(key.shape[0])
        block = max(1, 2**22 // k)
        for start in range(0, key.shape[0], block):
            positions = self._hash_keys(key[start:start + block, None], rows[None, :])
            mean[start:start + block] = M[rows[None, :], positions].mean(axis=1)
        counts = m / (m - 1) * (mean - n / m)
        held = np.clip(counts, 0.0, n)
        variance = n * self._report_variance(held / max(n, 1)) + self._collision_variance(
            self.second_moment(statistic) if key.shape[0] else 0.0, held)
        return counts, np.sqrt(variance)
