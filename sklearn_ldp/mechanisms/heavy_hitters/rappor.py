"""RAPPOR as deployed in Chrome: Bloom filters, cohorts, permanent and instantaneous response.

Erlingsson, Pihur and Korolova (CCS 2014). Every user belongs to one of ``m`` cohorts for
life; a cohort names ``h`` public hash functions. A client with string ``v`` in cohort ``c``

1. hashes ``v`` to a Bloom filter ``B`` of ``k`` bits: bits ``H_(c, 0)(v) .. H_(c, h-1)(v)``
   set (fewer when two hashes collide);
2. draws once, and memoizes, the *permanent randomized response* ``B'``: each bit is set with
   probability ``f / 2``, cleared with ``f / 2`` and left as ``B``'s with ``1 - f``, so
   ``P(B'_i = 1) = 1 - f/2`` where ``B_i = 1`` and ``f/2`` where ``B_i = 0``;
3. sends, every time it reports, the *instantaneous randomized response* ``S``: bit ``i`` is 1
   with probability ``q`` where ``B'_i = 1`` and ``p`` where ``B'_i = 0`` (fresh each report),
   with its cohort.

Privacy. Averaging any number of reports reveals at most ``B'``, which is
``eps_inf = 2 h ln((1 - f/2) / (f/2))``-LDP (two values' filters differ in at most ``2h``
bits). One report is ``eps_1 = h ln(q* (1 - p*) / (p* (1 - q*)))``-LDP, with ``q* = P(S_i = 1 |
B_i = 1) = f (p + q) / 2 + (1 - f) q`` and ``p* = f (p + q) / 2 + (1 - f) p``. Both are
computed from the integers the samplers use and checked exactly (:meth:`RapporMechanism.
exact_law` is the law actually sampled: the uniform cohort, then the product of the per-bit
laws given the Bloom bits).

Exactness. ``f / 2``, ``p`` and ``q`` are realized as multiples of ``2^-52`` (``f / 2`` and
``p`` rounded up, ``q`` down: towards less privacy loss), drawn by integer comparisons of
random bits (:func:`~sklearn_ldp.mechanisms._base.bits.bernoulli_packed`). The permanent
response is *derived*, not stored: bit ``i`` of ``B'`` is ``U_i < (1 - f/2)`` where ``B_i =
1`` and ``U_i < f/2`` where ``B_i = 0``, ``U_i`` a uniform 52-bit integer read from SipHash-2-4
words of the user's secret and the Bloom filter (:mod:`sklearn_ldp.mechanisms._base.prf`,
purpose ``rap-perm``). So a restored backup, a second process or a rebuilt state gives a user
the same ``B'`` for the same filter, never a second one. The cohort is derived the same way
(purpose ``rap-chrt``, uniform on ``[0, m)`` by rejection).

Hashing. A string is encoded as :func:`~.values.encode_values` does (UTF-8, at most
``max_string_bytes`` bytes), fingerprinted as the count sketches do (SplitMix64 over its
words), and hash ``j`` of cohort ``c`` is ``mix64(fingerprint ^ salt(c h + j)) mod k`` with
``salt(t) = mix64(hash_seed + (t + 1) * golden)``: the sketches' hash family, with one salt
per (cohort, hash). The standard-library client computes it bit for bit.

Reports are uint8 rows: the cohort in two bytes (big-endian), then ``S`` packed (bit ``i`` is
bit ``i % 8`` of byte ``2 + i // 8``). The statistic is per cohort ``j``: the number of reports
with bit ``i`` set, ``c_(j, i)``, and the number of reports ``N_j``; ``t_(j, i) = (c_(j, i) -
p* N_j) / (q* - p*)`` is an unbiased estimate of the number of users of cohort ``j`` whose
Bloom filter has bit ``i`` set. Decoding them into candidate frequencies is
:mod:`.rappor_decoder`.

References
----------
.. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", ACM CCS 2014.
"""

import math
import numbers

import numpy as np

from .._base.bits import (
    PRECISION,
    bernoulli_packed,
    column_counts,
    dyadic_numerator,
    n_packed_bytes,
    packed_rule,
    unused_bits_clear,
)
from .._base.docstrings import shared_sections
from .._base.exact import ExactLaw, check_law_size, integer_ratio_at_most, uniform_mixture
from .._base.mechanism import Mechanism, ReportCheck, register
from .._base.prf import FIELD_LIMIT, prf_bernoulli_lanes, prf_uniform_below, prf_words
from ..longitudinal.mechanisms import MemoState
from ..oracles.local_hashing import splitmix64
from .sketches import _fingerprints
from .values import _GOLDEN, encode_values

_ONE = 2**PRECISION
MAX_RAPPOR_BITS = 4096
MAX_RAPPOR_HASHES = 16
MAX_COHORTS = 2**16  # two bytes of a report
MAX_RAPPOR_STRING_BYTES = 128
COHORT_BYTES = 2

# Docstring sections of RAPPOR, written once (the mechanism, its decoder and estimator).
rappor_docstring = shared_sections({
    "erlingsson14 reference": """\
References
----------
.. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", ACM CCS 2014.""",
    "statistic parameter": """\
Parameters
----------
statistic : array-like of int
    The statistic of :meth:`aggregate` (summed over batches).""",
    "reports parameter": """\
Parameters
----------
reports : ndarray of uint8, shape (n, report_width)
    Reports as :meth:`randomize` returns them.""",
})
# The PRF counters of the permanent response's coins (its lanes use counters below 2^12).
COIN_COUNTER = 2**20


def _check_int(value, name, low, high):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not low <= value <= high:
        raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}.")
    return int(value)


def _check_probability(value, name, low_open=True, high_open=True):
    """A float probability in its interval, or a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value):
        raise ValueError(f"{name} must be a probability, got {value!r}.")
    value = float(value)
    if (value <= 0 if low_open else value < 0) or (value >= 1 if high_open else value > 1):
        interval = f"{'(' if low_open else '['}0, 1{')' if high_open else ']'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}.")
    return value


def _epsilon_of(numerator, denominator):
    """The smallest float ``eps`` with ``numerator / denominator <= e^eps``, decided exactly
    (``log`` of a float can round below the exact ratio's logarithm)."""
    epsilon = math.log(numerator) - math.log(denominator)
    while not integer_ratio_at_most(numerator, denominator, epsilon):
        epsilon = math.nextafter(epsilon, math.inf)
    return epsilon


@register
@rappor_docstring
class RapporMechanism(Mechanism):
    """RAPPOR: Bloom filter, cohorts, permanent and instantaneous randomized response.

    Defaults are the parameters of the paper's Chrome collections and simulations
    (``k = 128`` bits, ``h = 2`` hashes, ``m = 64`` cohorts, ``f = 0.5``, ``p = 0.5``,
    ``q = 0.75``): ``eps_inf = 4 ln 3 = 4.39`` for everything a user ever sends about one
    value, and ``eps_1 = 2 ln(77 / 45) = 1.07`` for one report.

    Parameters
    ----------
    n_bits : int, default=128
        Bloom filter size ``k`` (at most 4096).
    n_hashes : int, default=2
        Hash functions per cohort ``h`` (``k^h <= 2^24``: the filter names the permanent
        response in the PRF's value field).
    n_cohorts : int, default=64
        Cohorts ``m`` (at most ``2^16``).
    f : float, default=0.5
        Permanent randomized response: a bit is replaced by a fair coin with probability ``f``,
        in ``(0, 1)``.
    p, q : float, default=0.5, 0.75
        Instantaneous randomized response: a report bit is 1 with probability ``q`` where the
        permanent bit is 1 and ``p`` where it is 0; ``0 <= p < q <= 1``.
    max_string_bytes : int, default=64
        Longest value, in UTF-8 bytes (at most 128).
    hash_seed : int, default=0
        Public seed of the hash functions, in ``[0, 2^64)``.

    Attributes
    ----------
    epsilon_inf : float
        Privacy of the permanent response (all reports of one value), from the realized
        integers.
    epsilon_1 : float
        Privacy of one report.
    p_star, q_star : float
        ``P(S_i = 1)`` where the Bloom bit is 0 / 1.

    See Also
    --------
    sklearn_ldp.mechanisms.heavy_hitters.rappor_decoder.decode_candidates : The decoder.

    <erlingsson14 reference>

    Examples
    --------
    >>> import numpy as np
    >>> rappor = RapporMechanism()
    >>> round(rappor.epsilon_inf, 4), round(rappor.epsilon_1, 4)
    (4.3944, 1.0743)
    >>> rng = np.random.default_rng(0)
    >>> values = np.array(["a", "b", "a", "c"], dtype=object)
    >>> state = rappor.new_state(4, rng)  # seeded secrets: simulation only
    >>> rappor.randomize(values, rng, state).shape
    (4, 18)
    """

    kind = "bloom_rappor"
    spec_fields = ("n_bits", "n_hashes", "n_cohorts", "f", "p", "q", "max_string_bytes",
                   "hash_seed")

    def __init__(self, n_bits=128, n_hashes=2, n_cohorts=64, f=0.5, p=0.5, q=0.75,
                 max_string_bytes=64, hash_seed=0):
        self.n_bits = _check_int(n_bits, "n_bits", 1, MAX_RAPPOR_BITS)
        self.n_hashes = _check_int(n_hashes, "n_hashes", 1, MAX_RAPPOR_HASHES)
        if self.n_bits ** self.n_hashes > FIELD_LIMIT:
            raise ValueError(f"n_bits ** n_hashes must be at most 2^24 (a Bloom filter names "
                             f"its permanent response in the PRF's value field), got "
                             f"{n_bits}^{n_hashes}; use fewer bits or hashes.")
        self.n_cohorts = _check_int(n_cohorts, "n_cohorts", 1, MAX_COHORTS)
        if self.n_bits * self.n_cohorts > FIELD_LIMIT:
            raise ValueError(f"n_bits * n_cohorts (the statistic's bit counts) must be at most "
                             f"2^24, got {n_bits} * {n_cohorts}.")
        self.f = _check_probability(f, "f")
        self.p = _check_probability(p, "p", low_open=False)
        self.q = _check_probability(q, "q", low_open=False, high_open=False)
        if not self.p < self.q:
            raise ValueError(f"p must be below q (a set bit must be reported more often than "
                             f"a clear one), got p={p!r}, q={q!r}.")
        self.max_string_bytes = _check_int(max_string_bytes, "max_string_bytes", 1,
                                           MAX_RAPPOR_STRING_BYTES)
        self.hash_seed = _check_int(hash_seed, "hash_seed", 0, 2**64 - 1)
        self._realize()
        self.epsilon = self.epsilon_1  # what one report reveals (Mechanism's budget)
        # The estimate's cells: one unbiased count per (cohort, Bloom bit).
        self.n_inputs = self.n_bits * self.n_cohorts
        self._memo = BloomMemoKeys(self)
        self.name = self.kind
        self.params = {name: getattr(self, name) for name in self.spec_fields}

    def to_dict(self):
        """The specification: ``epsilon`` (one report's, as realized), ``epsilon_inf`` and
        the parameters; :meth:`from_dict` refuses epsilons that are not the realized ones.

        Returns
        -------
        dict
            ``version``, ``mechanism`` (``"bloom_rappor"``), ``epsilon``, ``n_inputs``,
            ``params`` and ``epsilon_inf``.
        """
        return {**super().to_dict(), "epsilon_inf": self.epsilon_inf}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field.

        Parameters
        ----------
        spec : dict
            The specification :meth:`to_dict` wrote.

        Returns
        -------
        RapporMechanism
        """
        params = spec.get("params") if isinstance(spec, dict) else None
        if not isinstance(params, dict) or set(params) != set(cls.spec_fields):
            raise ValueError(f"the 'bloom_rappor' specification's params must have exactly the "
                             f"fields {list(cls.spec_fields)}, got {str(params)[:80]!r}.")
        mechanism = cls(**params)
        for name in ("epsilon", "epsilon_inf", "n_inputs"):
            if spec.get(name) != getattr(mechanism, name):
                raise ValueError(f"{name} of the 'bloom_rappor' specification is "
                                 f"{spec.get(name)!r}, not the {getattr(mechanism, name)!r} "
                                 f"its parameters realize (edited?).")
        return mechanism

    def __repr__(self):
        arguments = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.spec_fields)
        return f"RapporMechanism({arguments})"

    def _realize(self):
        """The integer numerators over ``2^52`` and the epsilons they give."""
        self._half_f = dyadic_numerator(self.f / 2, "up")
        self._p = dyadic_numerator(self.p, "up")
        self._q = dyadic_numerator(self.q, "down")
        if not self._p < self._q:
            raise ValueError(f"p={self.p!r} and q={self.q!r} round to the same multiple of "
                             f"2^-52.")
        keep = _ONE - self._half_f  # P(B'_i = 1 | B_i = 1), over 2^52
        # Over 2^104: P(S_i = 1 | B_i = 1) and P(S_i = 1 | B_i = 0).
        self._Q1 = keep * self._q + self._half_f * self._p
        self._Q0 = self._half_f * self._q + keep * self._p
        h, one2 = self.n_hashes, _ONE * _ONE
        self.epsilon_inf = _epsilon_of(keep ** (2 * h), self._half_f ** (2 * h))
        self.epsilon_1 = _epsilon_of((self._Q1 * (one2 - self._Q0)) ** h,
                                     (self._Q0 * (one2 - self._Q1)) ** h)
        self.q_star, self.p_star = self._Q1 / one2, self._Q0 / one2

    @property
    def report_width(self):
        """Bytes per report: the cohort's two and the packed bits."""
        return COHORT_BYTES + n_packed_bytes(self.n_bits)

    # ------------------------------------------------------------------ hashing
    def fingerprints(self, values):
        """``(distinct fingerprints, inverse)``: each distinct string hashed once.

        Parameters
        ----------
        values : array-like of str, shape (n,)
            The users' strings.

        Returns
        -------
        fingerprints : ndarray of uint64
            One per distinct value.
        inverse : ndarray of int, shape (n,)
            Each value's index into ``fingerprints``.

        Raises
        ------
        ValueError
            Naming the first value with a NUL character or longer than
            ``max_string_bytes`` (a TypeError for a value that is not a string).
        """
        values = np.asarray(values, dtype=object)
        if values.ndim != 1:
            raise ValueError(f"values must be one-dimensional, got shape {values.shape}.")
        if set(map(type, values.tolist())) - {str}:
            for row, value in enumerate(values.tolist()):
                if not isinstance(value, str):
                    raise TypeError(f"values[{row}] = {value!r} is a {type(value).__name__}, "
                                    f"not a string (RAPPOR reports strings).")
        # A numpy string array sorts in C (an object array compares Python strings), but
        # drops trailing NUL characters: a value that loses length held one.
        text = values.astype(str)
        lengths = np.fromiter(map(len, values.tolist()), dtype=np.int64, count=values.size)
        shortened = np.char.str_len(text) != lengths
        if shortened.any():
            row = int(np.argmax(shortened))
            raise ValueError(f"values[{row}] = {values[row]!r} holds a NUL character, which "
                             "the zero padding of the encoding cannot tell apart.")
        distinct, inverse = np.unique(text, return_inverse=True)
        distinct = distinct.astype(object)
        for value in distinct.tolist():
            if "\0" in value:
                raise ValueError(f"the value {value!r} holds a NUL character, which the zero "
                                 "padding of the encoding cannot tell apart.")
            try:
                encoded = value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(f"the value {value!r} has no UTF-8 encoding ({exc.reason})."
                                 ) from None
            if len(encoded) > self.max_string_bytes:
                raise ValueError(f"the value {value[:40]!r} takes {len(encoded)} bytes in "
                                 f"UTF-8, more than max_string_bytes={self.max_string_bytes}.")
        words = encode_values(distinct, 8 * self.max_string_bytes)
        return _fingerprints(words), inverse.reshape(-1)

    def bloom_positions(self, fingerprints, cohorts):
        """``(n, h)`` int64: the Bloom bit of each hash, for fingerprints in cohorts.

        Parameters
        ----------
        fingerprints : array-like of uint64, shape (n,)
            The values' fingerprints (:meth:`fingerprints`).
        cohorts : array-like of int, shape (n,)
            Each value's cohort.

        Returns
        -------
        ndarray of int64, shape (n, n_hashes)
            Bit ``H(c, j, v)`` of each hash ``j``.
        """
        fingerprints = np.asarray(fingerprints, dtype=np.uint64)[:, None]
        which = (np.asarray(cohorts, dtype=np.uint64)[:, None] * np.uint64(self.n_hashes)
                 + np.arange(self.n_hashes, dtype=np.uint64))
        with np.errstate(over="ignore"):  # arithmetic modulo 2^64, as intended
            salt = splitmix64(np.uint64(self.hash_seed) + (which + np.uint64(1)) * _GOLDEN)
        return (splitmix64(fingerprints ^ salt) % np.uint64(self.n_bits)).astype(np.int64)

    def _codes(self, positions):
        """The permanent-response key of each filter: its sorted positions in base ``k``."""
        positions = np.sort(positions, axis=1)
        powers = self.n_bits ** np.arange(self.n_hashes, dtype=np.int64)
        return positions @ powers

    def _positions(self, codes):
        """Inverse of :meth:`_codes` (positions sorted)."""
        codes = np.asarray(codes, dtype=np.int64)
        powers = self.n_bits ** np.arange(self.n_hashes, dtype=np.int64)
        return (codes[:, None] // powers) % self.n_bits

    def bloom_words(self, positions):
        """``(n, ceil(k / 64))`` uint64: the Bloom filters with the given bits set.

        Parameters
        ----------
        positions : ndarray of int, shape (n, n_hashes)
            The set bits of each filter.

        Returns
        -------
        ndarray of uint64
            Bit ``i`` is bit ``i % 64`` of word ``i // 64``.
        """
        n = positions.shape[0]
        words = np.zeros((n, -(-self.n_bits // 64)), dtype=np.uint64)
        rows = np.repeat(np.arange(n), positions.shape[1])
        flat = positions.reshape(-1)
        np.bitwise_or.at(words, (rows, flat >> 6), np.uint64(1) << (flat & 63).astype(np.uint64))
        return words

    # ------------------------------------------------------------------ client side
    def new_state(self, n_users, rng=None, secrets=None):
        """The users' secrets and records (:class:`MemoState`).

        Parameters
        ----------
        n_users : int
            Number of users.
        rng : numpy.random.Generator, default=None
            Where new secrets come from: None is the operating system's entropy
            (deployment); a Generator is for simulation only.
        secrets : ndarray of uint64, shape (n_users, 2), default=None
            The users' secrets (a restored state); new ones when None.

        Returns
        -------
        MemoState
            Their secrets and the (user, filter) pairs reported.
        """
        return MemoState(self._memo, n_users, secrets=secrets, rng=rng)

    def cohorts(self, secrets):
        """Each user's cohort, uniform on ``[0, m)``, derived from its secret.

        Parameters
        ----------
        secrets : ndarray of uint64, shape (n, 2)
            The users' 128-bit secrets.

        Returns
        -------
        ndarray of int64, shape (n,)
            Each user's cohort.
        """
        return prf_uniform_below(secrets, "rap-chrt", np.zeros(secrets.shape[0], np.int64),
                                 self.n_cohorts)

    def permanent_words(self, codes, secrets):
        """The permanent responses ``B'`` of the filters named by ``codes``.

        As the paper states it: each bit is replaced, with probability ``f``, by a fair coin.
        ``R_i`` (replace) are PRF lanes of purpose ``rap-perm`` and value the code, 1 with
        ``2 (f/2)`` exactly (:func:`prf_bernoulli_lanes`); the coins ``C_i`` are the bits of
        the PRF words of counters ``2^20 + g`` (group ``g`` of 64 bits; the lanes use counters
        below ``2^12``, so the messages differ). ``B' = R C + (1 - R) B``: 1 with ``1 - f/2``
        where ``B_i = 1`` and ``f/2`` where ``B_i = 0``.

        Parameters
        ----------
        codes : ndarray of int64, shape (n,)
            The Bloom filters' keys (sorted positions in base ``k``).
        secrets : ndarray of uint64, shape (n, 2)
            The users' secrets.

        Returns
        -------
        ndarray of uint64, shape (n, ceil(n_bits / 64))
            Bit ``i`` is bit ``i % 64`` of word ``i // 64``.
        """
        k = self.n_bits
        bloom = self.bloom_words(self._positions(codes))
        replaced = prf_bernoulli_lanes(secrets, "rap-perm", codes, k, 2 * self._half_f)
        coins = np.column_stack([prf_words(secrets, "rap-perm", codes, COIN_COUNTER + group)
                                 for group in range(bloom.shape[1])])
        return (replaced & coins) | (~replaced & bloom)

    def permanent_response(self, values, state):
        """Each user's permanent response to its value, and its cohort.

        Parameters
        ----------
        values : array-like of str, shape (n_users,)
            Each user's value.
        state : MemoState
            The users' state (:meth:`new_state`); records the (user, filter) pairs.

        Returns
        -------
        permanent : ndarray of uint8, shape (n_users, ceil(n_bits / 8))
            Packed bits (bit ``i`` is bit ``i % 8`` of byte ``i // 8``).
        cohorts : ndarray of int64, shape (n_users,)
            Each user's cohort.
        """
        values = np.asarray(values, dtype=object)
        if not isinstance(state, MemoState) or state.mechanism != self._memo:
            raise ValueError("the state must be a MemoState of this mechanism "
                             "(RapporMechanism.new_state).")
        if values.ndim != 1 or values.shape[0] != state.n_users:
            raise ValueError(f"values must be {state.n_users} strings (one per user of the "
                             f"state), got shape {values.shape}.")
        fingerprints, inverse = self.fingerprints(values)
        cohorts = state.user_constant("rappor-cohort", self.cohorts)
        codes = self._codes(self.bloom_positions(fingerprints[inverse], cohorts))
        words = state.permanent(
            codes, lambda users, points: self.permanent_words(points, state.secrets[users]))
        width = n_packed_bytes(self.n_bits)
        packed = words.astype("<u8", copy=False).view(np.uint8)[:, :width]
        return packed, cohorts

    def instantaneous(self, permanent, rng):
        """One report's bits from the permanent ones: 1 with ``q`` where set, ``p`` where
        clear (fresh exact Bernoulli bits).

        Parameters
        ----------
        permanent : ndarray of uint8, shape (n, ceil(n_bits / 8))
            Packed permanent responses.
        rng : numpy.random.Generator
            Source of the fresh random bits.

        Returns
        -------
        ndarray of uint8, shape (n, ceil(n_bits / 8))
            Packed report bits.
        """
        n = permanent.shape[0]
        set_bits = bernoulli_packed(rng, n, self.n_bits, self._q)
        clear_bits = bernoulli_packed(rng, n, self.n_bits, self._p)
        return (set_bits & permanent) | (clear_bits & ~permanent)

    def randomize(self, values, rng, state=None):
        """One report per user: cohort (2 bytes, big-endian) and the instantaneous bits.

        Parameters
        ----------
        values : array-like of str, shape (n_users,)
            Each user's value; user ``i`` is row ``i`` of the state.
        rng : numpy.random.Generator
            Source of the instantaneous step's fresh randomness.
        state : MemoState, default=None
            The users' secrets (:meth:`new_state`); records the (user, filter) pairs. None:
            fresh users, whose secrets come from ``rng`` (a one-off collection, simulated;
            devices derive theirs from their own secret).

        Returns
        -------
        ndarray of uint8, shape (n_users, 2 + ceil(n_bits / 8))
            One row per user.
        """
        values = np.asarray(values, dtype=object)
        if values.ndim == 1 and values.size == 0:
            return self.empty_reports()
        if state is None:
            state = self.new_state(values.shape[0] if values.ndim else 0, rng)
        permanent, cohorts = self.permanent_response(values, state)
        reports = np.empty((permanent.shape[0], self.report_width), dtype=np.uint8)
        reports[:, 0] = cohorts >> 8
        reports[:, 1] = cohorts & 0xFF
        reports[:, COHORT_BYTES:] = self.instantaneous(permanent, rng)
        return reports

    def exact_law(self, value):
        """The exact law of one report of ``value`` by a fresh user.

        A uniform cohort, then the product over the ``k`` bits of the per-bit laws given the
        Bloom bits (``q*`` or ``p*``, exact fractions over ``2^104``). Enumerates ``m 2^k``
        outputs: small instances only.

        Parameters
        ----------
        value : str
            The user's string.

        Returns
        -------
        ExactLaw
            Outputs as report rows (uint8).
        """
        k, m = self.n_bits, self.n_cohorts
        check_law_size(m * 2**k, self.kind)
        fingerprints, _ = self.fingerprints(np.array([value], dtype=object))
        codes = np.arange(2**k, dtype=np.int64)
        bits = ((codes[:, None] >> np.arange(k)) & 1).astype(bool)
        packed = np.packbits(bits, axis=1, bitorder="little")
        one2 = _ONE * _ONE
        laws, outputs = [], []
        for cohort in range(m):
            positions = self.bloom_positions(fingerprints, [cohort])[0]
            bloom = np.zeros(k, dtype=bool)
            bloom[positions] = True
            weights = []
            for row in bits:
                weight = 1
                for bit, own in zip(row.tolist(), bloom.tolist(), strict=True):
                    one = self._Q1 if own else self._Q0
                    weight *= one if bit else one2 - one
                weights.append(weight)
            laws.append(ExactLaw(None, weights, one2**k))
            head = np.tile(np.array([[cohort >> 8, cohort & 0xFF]], np.uint8), (2**k, 1))
            outputs.append(np.hstack([head, packed]))
        return uniform_mixture(laws, np.vstack(outputs))

    # ------------------------------------------------------------------ server side
    @rappor_docstring
    def report_validity(self, reports):
        """Per report: whether it is a row this mechanism produces (cohort below ``m``, no
        bit set past bit ``k - 1``).

        <reports parameter>

        Returns
        -------
        ReportCheck
            The reports, whether each is valid, and that rule in words.

        Raises
        ------
        ValueError
            If the array is not uint8 rows of :attr:`report_width` bytes.
        """
        reports = self._layout(reports)
        cohorts = reports[:, 0].astype(np.int64) * 256 + reports[:, 1]
        valid = (cohorts < self.n_cohorts) & unused_bits_clear(reports[:, COHORT_BYTES:],
                                                                self.n_bits)
        return ReportCheck(reports, valid, f"a cohort below {self.n_cohorts} in two bytes, "
                           f"then {packed_rule(self.n_bits)}")

    def empty_reports(self):
        """A zero-row array of the reports' layout.

        Returns
        -------
        ndarray of uint8, shape (0, report_width)
            No rows.
        """
        return np.zeros((0, self.report_width), dtype=np.uint8)

    def _layout(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.dtype != np.uint8 \
                or reports.shape[1] != self.report_width:
            raise ValueError(f"RAPPOR reports are uint8 rows of {self.report_width} bytes "
                             f"(cohort, then {self.n_bits} packed bits), got {reports.dtype} "
                             f"of shape {reports.shape}.")
        return reports

    @rappor_docstring
    def aggregate(self, reports):
        """The statistic: per cohort ``j``, ``[c_(j, 0) .. c_(j, k-1), N_j]``.

        <reports parameter>

        Returns
        -------
        ndarray of int64, shape (n_cohorts * (n_bits + 1),)
            Flat and additive over disjoint sets of reports.

        Raises
        ------
        ValueError
            If a report is not one this mechanism produces (naming the first one).
        """
        reports = self.check_reports(reports)
        k, m = self.n_bits, self.n_cohorts
        cohorts = reports[:, 0].astype(np.int64) * 256 + reports[:, 1]
        order = np.argsort(cohorts, kind="stable")
        sizes = np.bincount(cohorts, minlength=m)
        bits = reports[order, COHORT_BYTES:]
        statistic = np.zeros((m, k + 1), dtype=np.int64)
        statistic[:, k] = sizes
        # One pass per non-empty cohort (m is small next to the users), each vectorized.
        stops = np.cumsum(sizes)
        for cohort in np.flatnonzero(sizes):
            stop = stops[cohort]
            statistic[cohort, :k] = column_counts(bits[stop - sizes[cohort]:stop], k)
        return statistic.reshape(-1)

    @rappor_docstring
    def check_statistic(self, statistic):
        """The statistic as a flat int64 array, or a ValueError naming the problem.

        <statistic parameter>

        Returns
        -------
        ndarray of int64, shape (n_cohorts * (n_bits + 1),)
            The statistic, checked.

        Raises
        ------
        ValueError
            A wrong length or dtype, a negative count or a bit count above its cohort's
            reports.
        """
        return self.statistic_table(statistic).reshape(-1)

    @rappor_docstring
    def statistic_table(self, statistic):
        """The checked statistic as an ``(m, k + 1)`` table (see :meth:`check_statistic`).

        <statistic parameter>

        Returns
        -------
        ndarray of int64, shape (n_cohorts, n_bits + 1)
            Row ``j``: cohort ``j``'s bit counts, then its reports.
        """
        statistic = np.asarray(statistic)
        k, m = self.n_bits, self.n_cohorts
        if statistic.shape != (m * (k + 1),) or statistic.dtype.kind not in "iu":
            raise ValueError(f"a RAPPOR statistic is {m * (k + 1)} integer counts ({m} cohorts "
                             f"of {k} bit counts and the cohort's reports), got "
                             f"{statistic.dtype} of shape {statistic.shape}.")
        table = statistic.astype(np.int64).reshape(m, k + 1)
        if (table < 0).any() or (table[:, :k] > table[:, k:]).any():
            cohort = int(np.flatnonzero((table < 0).any(axis=1)
                                        | (table[:, :k] > table[:, k:]).any(axis=1))[0])
            raise ValueError(f"cohort {cohort} of the RAPPOR statistic has a negative count or "
                             f"a bit count above its {table[cohort, k]} reports.")
        return table

    @rappor_docstring
    def n_reports(self, statistic):
        """Number of reports summed in ``statistic``.

        <statistic parameter>

        Returns
        -------
        int
            The number of reports.
        """
        return int(self.statistic_table(statistic)[:, self.n_bits].sum())

    @rappor_docstring
    def estimate(self, statistic):
        """The unbiased Bloom bit counts (:meth:`bit_count_estimates`), flat.

        RAPPOR has no listed domain; candidate frequencies come from
        :func:`~.rappor_decoder.decode_candidates`.

        <statistic parameter>

        Returns
        -------
        ndarray of float, shape (n_cohorts * n_bits,)
            Cohort ``j``'s bit ``i`` at ``j k + i``.
        """
        return self.bit_count_estimates(statistic).reshape(-1)

    @rappor_docstring
    def bit_count_estimates(self, statistic):
        """Unbiased estimates of the users of each cohort whose Bloom bit is set.

        ``(c - p* N_j) / (q* - p*)``.

        <statistic parameter>

        Returns
        -------
        ndarray of float, shape (n_cohorts, n_bits)
            Row ``j``, column ``i``: cohort ``j``'s users with bit ``i`` set.
        """
        table = self.statistic_table(statistic)
        k = self.n_bits
        return ((table[:, :k] - self.p_star * table[:, k:]) / (self.q_star - self.p_star))

    def bit_count_variance(self, true_counts, cohort_sizes):
        """Variance of :meth:`bit_count_estimates` given the true counts.

        ``(T q*(1 - q*) + (N_j - T) p*(1 - p*)) / (q* - p*)^2``.

        Parameters
        ----------
        true_counts : array-like of shape (n_cohorts, n_bits)
            Users of each cohort whose Bloom bit is set, ``T``.
        cohort_sizes : array-like of shape (n_cohorts,)
            Users of each cohort, ``N_j``.

        Returns
        -------
        ndarray of float, shape (n_cohorts, n_bits)
            The variance of each estimate.
        """
        T = np.asarray(true_counts, dtype=float)
        N = np.asarray(cohort_sizes, dtype=float).reshape(-1, 1)
        qs, ps = self.q_star, self.p_star
        return (T * qs * (1 - qs) + (N - T) * ps * (1 - ps)) / (qs - ps) ** 2


class BloomMemoKeys:
    """What a :class:`MemoState` of a :class:`RapporMechanism` keys its records by: the
    ``k^h`` permanent-response keys (sorted Bloom positions in base ``k``), as its
    ``n_cells``. Equal for equal mechanisms, so a state outlives a rebuilt mechanism."""

    def __init__(self, mechanism):
        self.rappor = mechanism
        self.n_cells = mechanism.n_bits ** mechanism.n_hashes

    def __eq__(self, other):
        return isinstance(other, BloomMemoKeys) and other.rappor == self.rappor

    def __hash__(self):
        return hash(self.rappor)
