"""Collection repeated over time: memoized (permanent) plus instantaneous randomization.

A telemetry client reports the same value every round. Fresh randomization each round would
let an observer average the reports and learn the value; memoization stops that: the client
has a *permanent* randomized response per value (budget ``eps_perm``) and every round sends a
fresh *instantaneous* randomization of it (RAPPOR's scheme, Erlingsson et al. 2014).

The permanent response is derived, never stored: it is a function of the user's 128-bit
secret and the value (SipHash-2-4 words read by the exact samplers, see
:mod:`sklearn_ldp.mechanisms._base.prf` and :class:`MemoState`), so a restored backup, a
second process or a rebuilt state gives a (user, value) the same permanent response, never
a second one. Every probability is an
integer numerator over ``2^52`` (GRR: keep numerators; unary: bit numerators), checked
exactly against ``eps_perm`` (the permanent step) and ``eps_1`` (one report) at
construction, and :meth:`LongitudinalMechanism.exact_law` gives the integer law of one report.

Averaging many rounds reveals at most the permanent response,
which is ``eps_perm``-LDP; one report alone is ``eps_1``-LDP (``eps_1 < eps_perm``).

The family (Arcolezi et al. 2022): the permanent and the instantaneous steps are each
generalized randomized response ("grr": report the value with probability ``p``, any other
with ``q``), symmetric unary encoding ("sue": every bit kept with ``p``, flipped with
``1 - p``) or optimized unary encoding ("oue": a 1 kept with probability 1/2, a 0 turned to
1 with ``q``). Names: ``l_grr`` (grr, grr), ``l_sue`` (sue, sue: basic RAPPOR), ``l_oue``
(oue, oue), ``l_osue`` (oue, sue), ``l_soue`` (sue, oue).

Chained, one report of a user of value ``v`` supports ``v`` with probability
``P1 = p1 p2 + (1 - p1) q2`` and any other value with ``P0 = q1 p2 + (1 - q1) q2`` (for grr,
the permanent value is that other value with ``q1`` and something else with ``1 - q1``). The
instantaneous step's
parameter is the one for which a single report is exactly ``eps_1``-LDP: ``P1 / P0 = e^eps_1``
(grr) or ``P1 (1 - P0) / (P0 (1 - P1)) = e^eps_1`` (unary), solved numerically (the ratio is
monotone in the free parameter). Estimates of each round are the usual support-count
estimates with ``P1, P0``, and their variance ``N [f P1 (1 - P1) + (1 - f) P0 (1 - P0)] /
(P1 - P0)^2`` holds round by round (each user's report in a round is one independent draw).

What memoization protects against, and what not: averaging the rounds of one unchanged value
(the permanent response is reused). It does not hide *when* a value changes: a new value
draws a new permanent response, and the rounds after a change reveal a second
``eps_perm``-LDP response, so ``c`` distinct values over time cost ``c * eps_perm``; and
reports of a changed value differ in law from the earlier rounds (the known leak of which
rounds changed).

References
----------
.. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", ACM CCS 2014.
.. [2] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Improving the utility of
   locally differentially private protocols for longitudinal and multidimensional frequency
   estimates", Digital Communications and Networks, 2022 (arXiv:2111.04636).
"""

import itertools
import math

import numpy as np
from scipy.optimize import brentq

from ..._validation import check_epsilon, check_positive_int
from .._base.bits import (
    DECIMAL_CONTEXT,
    PRECISION,
    bernoulli_packed,
    column_counts,
    dyadic_numerator,
    n_packed_bytes,
    random_words,
    ratio_at_most,
)
from .._base.exact import (
    ExactLaw,
    bernoulli_below,
    check_law_size,
    exp_decimal,
    integer_ratio_at_most,
    uniform_below,
)
from .._base.headers import FieldSpec, SpecEquality
from .._base.prf import (
    FIELD_LIMIT,
    new_secrets,
    prf_bernoulli,
    prf_bernoulli_lanes,
    prf_uniform_below,
    prf_words,
)

# 3: the permanent GRR step's keep numerator leaves a multiple of n_cells - 1 (one PRF word
# per permanent response), and the PRF messages are one block.
SPEC_VERSION = 3
# The memoized mechanisms' largest number of cells: a value (and a counter) of a PRF message
# is below 2^24 (see sklearn_ldp.mechanisms._base.prf).
MAX_MEMO_CELLS = FIELD_LIMIT
_ONE = 2**PRECISION

LONGITUDINAL_PROTOCOLS = {"l_grr": ("grr", "grr"), "l_sue": ("sue", "sue"),
                          "l_oue": ("oue", "oue"), "l_osue": ("oue", "sue"),
                          "l_soue": ("sue", "oue")}


def _check_memo_cells(n_cells):
    """``n_cells`` as an int in ``[2, MAX_MEMO_CELLS]``, or a ValueError naming it."""
    n_cells = check_positive_int(n_cells, "n_cells")
    if not 2 <= n_cells <= MAX_MEMO_CELLS:
        raise ValueError(f"n_cells must lie in [2, 2^24] for a memoized mechanism (the PRF's "
                         f"value field), got {n_cells!r}; hash or bucket larger domains first "
                         f"(e.g. a heavy-hitter or sketch mechanism).")
    return n_cells


def _step_probabilities(kind, k, epsilon):
    """``(p, q)`` of one randomization step with budget ``epsilon`` over ``k`` values."""
    e = math.exp(epsilon)
    if kind == "grr":
        return e / (e + k - 1), 1 / (e + k - 1)
    if kind == "sue":
        half = math.exp(epsilon / 2)
        return half / (half + 1), 1 / (half + 1)
    return 0.5, 1 / (e + 1)


def _chain(p1, q1, p2, q2):
    return p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2


def _report_epsilon(kind, P1, P0):
    if kind == "grr":
        return math.log(P1 / P0)
    return math.log(P1 * (1 - P0) / (P0 * (1 - P1)))


class LongitudinalMechanism(SpecEquality):
    """Memoized frequency oracle for rounds of collection (RAPPOR-style chaining).

    Parameters
    ----------
    n_cells : int
        Number of values ``k``.
    epsilon_perm : float
        Budget of the permanent (memoized) response: what averaging any number of rounds of
        an unchanged value can reveal.
    epsilon_1 : float
        Budget of one round's report, ``< epsilon_perm``.
    protocol : {"l_grr", "l_sue", "l_oue", "l_osue", "l_soue"}, default="l_grr"
        The permanent and instantaneous steps (module docstring).

    Attributes
    ----------
    p1, q1, p2, q2 : float
        Probabilities of the permanent and the instantaneous steps.
    P1, P0 : float
        Probability that one report supports the user's value / another value.

    See Also
    --------
    MemoState : The clients' memoized permanent responses.

    References
    ----------
    .. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
       privacy-preserving ordinal response", ACM CCS 2014.
    .. [2] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Improving the utility of
       locally differentially private protocols for longitudinal and multidimensional
       frequency estimates", Digital Communications and Networks, 2022.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = LongitudinalMechanism(4, epsilon_perm=2.0, epsilon_1=0.5)
    >>> rng = np.random.default_rng(0)
    >>> values = rng.integers(4, size=50_000)
    >>> state = MemoState(mechanism, values.size, rng=rng)  # seeded secrets: simulation only
    >>> reports = mechanism.randomize(values, state, rng)
    >>> counts = mechanism.estimate(mechanism.aggregate(reports))
    >>> truth = np.bincount(values)
    >>> sd = np.sqrt(mechanism.count_variance(truth / values.size, values.size))
    >>> bool(np.all(np.abs(counts - truth) < 4 * sd))
    True
    """

    kind = "longitudinal"

    def __init__(self, n_cells, epsilon_perm, epsilon_1, protocol="l_grr"):
        self.n_cells = _check_memo_cells(n_cells)
        self.epsilon_perm = check_epsilon(epsilon_perm, "epsilon_perm")
        self.epsilon_1 = check_epsilon(epsilon_1, "epsilon_1")
        if not self.epsilon_1 < self.epsilon_perm:
            raise ValueError(f"epsilon_1 (one round) must be below epsilon_perm (the permanent "
                             f"response), got {epsilon_1!r} >= {epsilon_perm!r}.")
        if protocol not in LONGITUDINAL_PROTOCOLS:
            raise ValueError(f"protocol must be one of {sorted(LONGITUDINAL_PROTOCOLS)}, got "
                             f"{protocol!r}.")
        self.protocol = protocol
        self.permanent, self.instant = LONGITUDINAL_PROTOCOLS[protocol]
        k = self.n_cells
        self.p1, self.q1 = _step_probabilities(self.permanent, k, self.epsilon_perm)
        # The instantaneous step's budget a2 makes one report exactly epsilon_1-LDP; the
        # chained ratio grows with a2 towards the permanent step's own ratio (> e^eps_1).

        def excess(a2):
            p2, q2 = _step_probabilities(self.instant, k, a2)
            return _report_epsilon("grr" if not self.unary else "unary",
                                   *_chain(self.p1, self.q1, p2, q2)) - self.epsilon_1

        if excess(60.0) <= 0:  # the instantaneous step cannot add less noise than none
            raise ValueError(
                f"epsilon_1={epsilon_1!r} is too large for {protocol!r} with epsilon_perm="
                f"{epsilon_perm!r}: one report is at most "
                f"{excess(60.0) + self.epsilon_1:.4g}-LDP here; lower epsilon_1.")
        self.epsilon_instant = brentq(excess, 1e-12, 60.0, xtol=1e-14)
        self.p2, self.q2 = _step_probabilities(self.instant, k, self.epsilon_instant)
        if self.unary:
            self._realize_unary()
        else:
            self._realize_grr()
        self._check_numerators()
        own, other, total = self._report_weights()
        self.P1, self.P0 = own / total, other / total

    def _realize_grr(self):
        """Integer keep numerators over ``2^52`` for both GRR steps, within both budgets.

        A step keeps the value with probability ``keep / 2^52`` and otherwise reports one of
        the ``k - 1`` others uniformly (``(2^52 - keep) / (2^52 (k - 1))`` each). The nominal
        ``p`` is rounded down (towards ``1 / k``, which lowers the ratio) and lowered by
        ``2^-52`` steps until the exact checks pass. The permanent step's ``2^52 - keep`` is
        moreover a multiple of ``k - 1`` (``keep`` lowered by less than ``k - 1`` units,
        lowering the ratio again): every other value then has the dyadic probability
        ``m / 2^52``, ``m = (2^52 - keep) / (k - 1)``, and one PRF word decides the whole
        permanent response (:meth:`permanent_response`).
        """
        k1, eps_perm = self.n_cells - 1, self.epsilon_perm
        self._keep1 = dyadic_numerator(self.p1, "down")
        self._keep1 -= (self._keep1 - _ONE) % k1  # 2^52 - keep1 up to a multiple of k - 1
        for _ in range(64):
            if integer_ratio_at_most(self._keep1 * k1, _ONE - self._keep1, eps_perm):
                break
            self._keep1 -= k1
        self._keep2 = dyadic_numerator(self.p2, "down")
        for _ in range(64):
            own, other, _ = self._report_weights()
            if integer_ratio_at_most(own, other, self.epsilon_1):
                break
            self._keep2 -= 1
        self.p1, self.q1 = self._keep1 / _ONE, (_ONE - self._keep1) / (_ONE * k1)
        self.p2, self.q2 = self._keep2 / _ONE, (_ONE - self._keep2) / (_ONE * k1)

    def _report_weights(self):
        """``(own, other, total)``: Python integers with ``P(a report supports the user's
        value) = own / total`` and ``P(it supports another given value) = other / total``.

        GRR: over ``(2^52 (k - 1))^2``, a report is the value if both steps keep it, or the
        permanent step moved and the instantaneous step moved back. Unary: per bit over
        ``2^104``, ``P1 = p1 p2 + (1 - p1) q2`` and ``P0 = q1 p2 + (1 - q1) q2``.
        """
        if self.unary:
            p1, q1, p2, q2 = self._p1, self._q1, self._p2, self._q2
            return (p1 * p2 + (_ONE - p1) * q2, q1 * p2 + (_ONE - q1) * q2, _ONE * _ONE)
        k, keep1, keep2 = self.n_cells, self._keep1, self._keep2
        move1, move2 = _ONE - keep1, _ONE - keep2
        own = keep1 * keep2 * (k - 1) ** 2 + move1 * move2 * (k - 1)
        other = (move1 * keep2 + keep1 * move2) * (k - 1) + (k - 2) * move1 * move2
        return own, other, (_ONE * (k - 1)) ** 2

    def numerators(self):
        """The integers the randomizer draws with (over ``2^52``), as a dict.

        ``l_grr``: ``keep_perm``, ``keep_instant`` (keep probabilities of the two steps);
        unary: ``p_perm``, ``q_perm``, ``p_instant``, ``q_instant`` (bit probabilities).
        """
        if self.unary:
            return {"p_perm": self._p1, "q_perm": self._q1, "p_instant": self._p2,
                    "q_instant": self._q2}
        return {"keep_perm": self._keep1, "keep_instant": self._keep2}

    def _check_numerators(self):
        """The exact privacy check of the integers actually drawn with (ValueError naming the
        budget): the permanent response within ``epsilon_perm``, one report within
        ``epsilon_1``, both ways."""
        if self.unary:
            pairs = [(self._p1 * (_ONE - self._q1), self._q1 * (_ONE - self._p1))]
        else:
            pairs = [(self._keep1 * (self.n_cells - 1), _ONE - self._keep1)]
        for budget, name in ((self.epsilon_perm, "epsilon_perm"), (self.epsilon_1, "epsilon_1")):
            for a, b in pairs:
                if not (integer_ratio_at_most(a, b, budget)
                        and integer_ratio_at_most(b, a, budget)):
                    raise ValueError(f"the realized numerators {self.numerators()} exceed "
                                     f"{name}={budget!r} (exact check).")
            own, other, total = self._report_weights()
            pairs = ([(own * (total - other), other * (total - own))] if self.unary
                     else [(own, other)])

    def _realize_unary(self):
        """Round the bit probabilities to multiples of ``2^-52`` (drawn exactly by
        :func:`bernoulli_packed`) without exceeding either budget, checked exactly.

        Each step keeps its form: "sue" has ``p = 1 - q``, "oue" has ``p = 1/2`` (exact), so
        only ``q`` is rounded, up (towards 1/2, which lowers the odds ratio); the
        instantaneous ``q2`` is then raised by ``2^-52`` steps until the chained odds ratio of
        one report, computed exactly, is at most ``e^eps_1`` (the solver's value attains it,
        so rounding may overshoot by ~1e-16). The forms also make a round cheap: an
        instantaneous "sue" step flips each permanent bit with ``q2``, an "oue" step replaces
        each set bit by a fair coin (see :meth:`instantaneous`).
        """
        one = 2**PRECISION

        def complement(kind, q):
            return one - q if kind == "sue" else one // 2

        self._q1 = dyadic_numerator(self.q1, "up")
        self._p1 = complement(self.permanent, self._q1)
        # The float q1 may lie just below its exact value: raise it (towards 1/2) until the
        # permanent step is within epsilon_perm on the integers.
        for _ in range(64):
            if integer_ratio_at_most(self._p1 * (one - self._q1), self._q1 * (one - self._p1),
                                     self.epsilon_perm):
                break
            self._q1 += 1
            self._p1 = complement(self.permanent, self._q1)
        self._q2 = dyadic_numerator(self.q2, "up")
        bound = exp_decimal(self.epsilon_1)
        for _ in range(64):
            self._p2 = complement(self.instant, self._q2)
            # P1, P0 as exact fractions over one^2: one report's odds ratio for two values.
            P1 = self._p1 * self._p2 + (one - self._p1) * self._q2
            P0 = self._q1 * self._p2 + (one - self._q1) * self._q2
            if ratio_at_most(P1 * (one * one - P0), P0 * (one * one - P1), bound):
                break
            self._q2 += 1
        else:  # pragma: no cover - the rounding moves the ratio by ~1e-16 only
            raise ArithmeticError("could not realize the instantaneous step within epsilon_1.")
        self.p1, self.q1 = self._p1 / one, self._q1 / one
        self.p2, self.q2 = self._p2 / one, self._q2 / one

    @property
    def unary(self):
        """Whether reports are bit vectors (every protocol but ``l_grr``)."""
        return self.permanent != "grr"

    def to_dict(self):
        """A JSON-ready specification (rebuilt by :meth:`from_dict`)."""
        return {"version": SPEC_VERSION, "mechanism": self.kind, "n_cells": self.n_cells,
                "epsilon_perm": self.epsilon_perm, "epsilon_1": self.epsilon_1,
                "protocol": self.protocol,
                # The integers the randomizer draws with: devices use them as shipped (no
                # re-solving) after checking them exactly against both budgets.
                "numerators": self.numerators()}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field.

        The shipped ``numerators`` must be the ones this package realizes for the budgets
        (an edited numerator is refused, naming it).
        """
        fields = {"n_cells", "epsilon_perm", "epsilon_1", "protocol", "numerators"}
        if not isinstance(spec, dict) or spec.get("mechanism") != cls.kind \
                or spec.get("version") != SPEC_VERSION or not fields <= set(spec):
            raise ValueError(f"not a version-{SPEC_VERSION} {cls.kind!r} specification with "
                             f"fields {sorted(fields)}: {str(spec)[:80]!r}.")
        mechanism = cls(spec["n_cells"], spec["epsilon_perm"], spec["epsilon_1"],
                        spec["protocol"])
        _check_shipped_numerators(spec["numerators"], mechanism.numerators(), cls.kind)
        return mechanism

    def __repr__(self):
        return (f"LongitudinalMechanism(n_cells={self.n_cells}, epsilon_perm="
                f"{self.epsilon_perm}, epsilon_1={self.epsilon_1}, protocol="
                f"{self.protocol!r})")

    # ------------------------------------------------------------------ client side
    def permanent_response(self, values, secrets):
        """The permanent responses of ``values``, derived from the users' ``secrets``.

        A function of (secret, value) only (SipHash-2-4 words read by exact samplers,
        :mod:`sklearn_ldp.mechanisms._base.prf`): the same user and value always give the same
        response, whatever was saved or restored. A value (GRR: kept with ``keep_perm /
        2^52``, else one of the ``k - 1`` others, each with ``m / 2^52``, from one word of
        tag ``grr-perm``) or packed bit rows (uint8, ``ceil(n_cells / 8)`` bytes, bit ``j`` of
        byte ``j // 8`` is value ``j``: the value's own bit 1 with ``p_perm / 2^52``, every
        other bit with ``q_perm / 2^52``, bit-sliced lanes of tag ``ue-plane``).

        Parameters
        ----------
        values : ndarray of int, shape (n,)
        secrets : ndarray of uint64, shape (n, 2)
            Each user's secret (the rows of :attr:`MemoState.secrets`).

        Returns
        -------
        ndarray
        """
        values = np.asarray(values, dtype=np.int64)
        k = self.n_cells
        if not self.unary:
            # One word: its top 52 bits U are uniform on [0, 2^52); the first (k - 1) m of
            # them name the other values, m each (U // m, skipping the value), the rest
            # (keep of them) keep the value.
            top = prf_words(secrets, "grr-perm", values, 0) >> np.uint64(12)
            share = np.uint64((_ONE - self._keep1) // (k - 1))
            other = (top // share).astype(np.int64)
            return np.where(other < k - 1, other + (other >= values), values)
        # The value's own lane with p_perm, every other lane with q_perm, in one pass.
        words = prf_bernoulli_lanes(secrets, "ue-plane", values, k, self._q1,
                                    own_numerator=self._p1)
        return words.astype("<u8", copy=False).view(np.uint8)[:, :n_packed_bytes(k)].copy()

    def instantaneous(self, permanent, rng):
        """One round's report of memoized permanent responses (fresh randomness, exact
        samplers): GRR keeps the permanent value with ``keep_instant / 2^52``, else a uniform
        other; unary bits are 1 with ``p_instant`` where the permanent bit is set and
        ``q_instant`` where it is not."""
        if not self.unary:
            n, k = permanent.shape[0], self.n_cells
            keep = bernoulli_below(rng, np.full(n, self._keep2, dtype=np.int64))
            other = uniform_below(rng, k - 1, n)
            other = other + (other >= permanent)
            return np.where(keep, permanent, other)
        # Every bit 1 with q2 (the law of a clear permanent bit), then for set permanent bits:
        # "sue" (p2 = 1 - q2) flips it, giving 1 with 1 - q2; "oue" (p2 = 1/2) XORs a fair
        # coin, giving 1/2. One Bernoulli matrix per round instead of two.
        report = bernoulli_packed(rng, permanent.shape[0], self.n_cells, self._q2)
        if self.instant == "sue":
            report ^= permanent
        else:
            coins = random_words(rng, -(-permanent.size // 8)).view(np.uint8)
            report ^= coins[:permanent.size].reshape(permanent.shape) & permanent
        return report

    def check_values(self, values, n_users=None):
        """``values`` as int64 cell indices, or a ValueError naming the first bad one."""
        return _check_codes(values, self.n_cells, n_users)

    def memo_points(self, values, state):
        """What a user's permanent response is memoized by: its value."""
        return values

    def randomize(self, values, state, rng):
        """One round: each user's report of its value, from its permanent response.

        Parameters
        ----------
        values : array-like of int, shape (n_users,)
            Each user's value this round, in ``[0, n_cells)``; user ``i`` is row ``i`` of
            the state.
        state : MemoState
            The users' secrets and the values they have reported (updated in place).
        rng : numpy.random.Generator
            Source of the instantaneous step's fresh randomness.

        Returns
        -------
        reports : ndarray
            One value per user (``l_grr``) or one packed bit vector per user.
        """
        values = self.check_values(values, _state_users(state, self))
        permanent = state.permanent(
            values, lambda users, points: self.permanent_response(points, state.secrets[users]))
        return self.instantaneous(permanent, rng)

    def exact_law(self, value):
        """The exact law of one round's report of ``value`` (permanent then instantaneous).

        Parameters
        ----------
        value : int
            A cell index.

        Returns
        -------
        ExactLaw
            GRR: outputs ``0 .. k - 1``; unary: all ``2^k`` packed bit vectors (row ``i`` has
            bit ``j`` equal to bit ``j`` of ``i``), small ``k`` only.
        """
        value = int(self.check_values(np.array([value]))[0])
        own, other, total = self._report_weights()
        k = self.n_cells
        if not self.unary:
            weights = [own if o == value else other for o in range(k)]
            return ExactLaw(np.arange(k), weights, total)
        check_law_size(2**k, self.kind)
        codes = np.arange(2**k, dtype=np.int64)
        bits = ((codes[:, None] >> np.arange(k)) & 1).astype(bool)
        outputs = np.packbits(bits, axis=1, bitorder="little")
        weights = []
        for row in bits.tolist():
            weight = 1
            for j, bit in enumerate(row):
                one = own if j == value else other
                weight *= one if bit else total - one
            weights.append(weight)
        return ExactLaw(outputs, weights, total**k)

    # ------------------------------------------------------------------ server side
    def aggregate(self, reports):
        """``[C_0 .. C_(k-1), N]``: support counts and the number of reports (int64)."""
        reports = np.asarray(reports)
        k = self.n_cells
        if not self.unary:
            if reports.ndim != 1 or reports.dtype.kind not in "iu" or (
                    reports.size and (reports.min() < 0 or reports.max() >= k)):
                raise ValueError(f"{self.protocol!r} reports are values in [0, {k}).")
            counts = np.bincount(reports.astype(np.int64), minlength=k)
        else:
            width = n_packed_bytes(k)
            if reports.ndim != 2 or reports.shape[1] != width or reports.dtype != np.uint8:
                raise ValueError(f"{self.protocol!r} reports are packed uint8 rows of {width} "
                                 f"bytes, got {reports.dtype} of shape {reports.shape}.")
            if k % 8:
                past = (reports[:, -1] >> np.uint8(k % 8)) != 0
                if past.any():
                    raise ValueError(f"report {int(np.argmax(past))} sets a bit past value "
                                     f"{k - 1}.")
            counts = column_counts(reports, k)
        return np.append(counts.astype(np.int64), np.int64(reports.shape[0]))

    def estimate(self, statistic):
        """Unbiased estimate of one round's user counts per value."""
        statistic = np.asarray(statistic)
        k = self.n_cells
        if statistic.shape != (k + 1,) or statistic.dtype.kind not in "iu" \
                or (statistic < 0).any() or statistic[:-1].max() > statistic[-1] \
                or (not self.unary and statistic[:-1].sum() != statistic[-1]):
            raise ValueError(f"a {self.protocol!r} statistic is {k} support counts and the "
                             "number of reports, consistent with each other.")
        n = float(statistic[-1])
        return (statistic[:-1] - self.P0 * n) / (self.P1 - self.P0)

    def count_variance(self, frequencies, n_users):
        """Variance of one round's count estimates for the given value frequencies."""
        f = np.asarray(frequencies, dtype=float)
        P1, P0 = self.P1, self.P0
        return n_users * (f * P1 * (1 - P1) + (1 - f) * P0 * (1 - P0)) / (P1 - P0) ** 2


def _check_codes(values, n_cells, n_users=None):
    """``values`` as int64 codes in ``[0, n_cells)`` (one per user when ``n_users`` is given),
    or a ValueError naming the first bad one."""
    values = np.asarray(values)
    if values.ndim != 1 or values.dtype.kind not in "iu":
        raise ValueError("values must be a 1-D array of integer codes.")
    if n_users is not None and values.shape[0] != n_users:
        raise ValueError(f"values must be {n_users} integer codes (one per user of the "
                         f"state), got {values.shape[0]}.")
    if values.size and (values.min() < 0 or values.max() >= n_cells):
        row = int(np.argmax((values < 0) | (values >= n_cells)))
        raise ValueError(f"values[{row}] = {values[row]} is not in [0, {n_cells}).")
    return values.astype(np.int64)


def _state_users(state, mechanism):
    """The number of users of a :class:`MemoState` of ``mechanism`` (ValueError otherwise)."""
    if not isinstance(state, MemoState) or state.mechanism != mechanism:
        raise ValueError("the state must be a MemoState of this mechanism.")
    return state.n_users


def _check_shipped_numerators(shipped, expected, kind):
    """Refuse shipped numerators that are not the ones realized for the budgets."""
    if not isinstance(shipped, dict) or set(shipped) != set(expected):
        raise ValueError(f"numerators of the {kind!r} specification must be {sorted(expected)},"
                         f" got {str(shipped)[:80]!r}.")
    for name, value in expected.items():
        if shipped[name] != value or isinstance(shipped[name], bool):
            raise ValueError(f"numerators.{name} of the {kind!r} specification is "
                             f"{shipped[name]!r}, not the realized {value} (edited?).")


class MemoState:
    """The users' memory of a memoized mechanism: a secret per user, the values reported.

    Permanent responses are *derived*, not stored: user ``i``'s permanent response to value
    ``v`` is a function of ``secrets[i]`` and ``v`` (SipHash-2-4, see
    :mod:`sklearn_ldp.mechanisms._base.prf`), so restoring an old copy of the state, running a
    second process on it or rebuilding it with the same secrets never gives a (user, value)
    a second permanent response. ``keys`` (sorted ``user * n_cells + value``) lists the
    (user, value) pairs reported so far: the ledger's bookkeeping (distinct values per
    user), not draws. Derived responses are cached in memory for the next rounds (never
    saved: they are recomputed from the secrets).

    Parameters
    ----------
    mechanism : LongitudinalMechanism, DBitFlipPM or OneBitMeanPM
        The mechanism whose responses are memoized.
    n_users : int
        Number of users.
    secrets : ndarray of uint64, shape (n_users, 2), default=None
        The users' 128-bit secrets; new ones when None (see ``rng``).
    keys : ndarray of int64, default=None
        Sorted distinct (user, value) keys reported so far; none when None.
    rng : numpy.random.Generator, default=None
        Where new secrets come from: None is the operating system's entropy (deployment);
        a Generator derives them from its seed, for reproducible simulation only (whoever
        knows the seed can recompute every permanent response).

    See Also
    --------
    LongitudinalMechanism, DBitFlipPM, OneBitMeanPM

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = LongitudinalMechanism(3, 2.0, 1.0)
    >>> state = MemoState(mechanism, 2)
    >>> first = mechanism.permanent_response(np.array([0, 2]), state.secrets)
    >>> _ = mechanism.randomize(np.array([0, 2]), state, np.random.default_rng(0))
    >>> rebuilt = MemoState(mechanism, 2, secrets=state.secrets)
    >>> again = mechanism.permanent_response(np.array([0, 2]), rebuilt.secrets)
    >>> bool((first == again).all()), state.n_entries
    (True, 2)
    """

    def __init__(self, mechanism, n_users, secrets=None, keys=None, rng=None):
        self.mechanism = mechanism
        self.n_users = check_positive_int(n_users, "n_users", minimum=0)
        secrets = new_secrets(self.n_users, rng) if secrets is None else np.array(secrets)
        if secrets.dtype != np.uint64 or secrets.shape != (self.n_users, 2):
            raise ValueError(f"secrets must be a ({self.n_users}, 2) uint64 array (128 bits per "
                             f"user), got {secrets.dtype} of shape {secrets.shape}.")
        secrets.setflags(write=False)  # the cache below is only valid for these secrets
        self.secrets = secrets
        self.keys = np.zeros(0, dtype=np.int64) if keys is None else np.asarray(keys)
        self._cache_keys = np.zeros(0, dtype=np.int64)
        self._cache = None
        self._per_user = {}

    @property
    def n_entries(self):
        """Number of (user, value) pairs reported so far."""
        return int(self.keys.size)

    def values_per_user(self):
        """Distinct values (or rounded points) each user has reported so far (int64)."""
        return np.bincount(self.keys // self.mechanism.n_cells, minlength=self.n_users)

    def user_constant(self, name, derive):
        """A per-user quantity derived from the secrets once (dBitFlipPM's buckets,
        1BitMean's alpha), cached in memory."""
        if name not in self._per_user:
            self._per_user[name] = derive(self.secrets)
        return self._per_user[name]

    def _record(self, keys):
        """Add ``keys`` (distinct: one per user) to :attr:`keys`."""
        position = np.searchsorted(self.keys, keys)
        known = position < self.keys.size
        known[known] = self.keys[position[known]] == keys[known]
        if not known.all():
            # One key per user, so the new keys are distinct: a sort merges them (np.union1d
            # hashes, measured 5x slower at 10^6 keys). Both parts are sorted (keys grow with
            # the user), and the stable sort (timsort) merges two runs in linear time:
            # 0.036 s instead of quicksort's 0.117 s for 1.1 x 10^6 keys.
            merged = np.concatenate([self.keys, keys[~known]])
            merged.sort(kind="stable")
            self.keys = merged

    def permanent(self, points, derive):
        """The permanent response of user ``i`` for ``points[i]`` (one per user), recording
        the pairs in :attr:`keys`.

        Parameters
        ----------
        points : ndarray of int64, shape (n_users,)
            Each user's value (or rounded point).
        derive : callable
            ``derive(users, points)``: the mechanism's derivation for some users (indices,
            or ``slice(None)`` for all of them).

        Returns
        -------
        ndarray
            One response row per user.
        """
        keys = np.arange(points.shape[0], dtype=np.int64) * self.mechanism.n_cells + points
        if self._cache is None and not self.keys.size:
            # The first round: every pair is new and the keys, one per user in user order,
            # are already sorted, so they are the record and the cache as they are (no
            # search, merge or sort).
            fresh = derive(slice(None), points)  # every user: views, no gathers
            self.keys, self._cache_keys, self._cache = keys, keys, fresh
            return fresh.copy()  # the caller's reports, not the cache itself
        position = np.searchsorted(self._cache_keys, keys)
        known = position < self._cache_keys.size
        known[known] = self._cache_keys[position[known]] == keys[known]
        if not known.all():
            new = np.flatnonzero(~known)
            # Every cached key was recorded when it was cached: only the others can be new.
            self._record(keys[new])
            fresh = derive(new, points[new])
            cached = fresh[:0] if self._cache is None else self._cache
            merged = np.concatenate([self._cache_keys, keys[new]])
            order = np.argsort(merged, kind="stable")
            self._cache_keys = merged[order]
            self._cache = np.concatenate([cached, fresh])[order]
            position = np.searchsorted(self._cache_keys, keys)
        return self._cache[position]


def _derived_subsets(secrets, k, d):
    """``(n, d)`` int64: each user's uniformly random ``d``-subset of ``range(k)``, sorted,
    derived from its secret.

    Floyd's algorithm, vectorized over the users: for ``j = k - d .. k - 1`` take ``t``
    uniform in ``[0, j]`` (PRF words of tag ``dbf-bckt``, value ``j``, by rejection), or
    ``j`` if ``t`` is already taken; every ``d``-subset comes out with the same probability.
    ``O(n d^2)`` work and ``O(n d)`` memory.
    """
    n = secrets.shape[0]
    out = np.empty((n, d), dtype=np.int64)
    for i, j in enumerate(range(k - d, k)):
        t = prf_uniform_below(secrets, "dbf-bckt", j, j + 1)
        out[:, i] = np.where((out[:, :i] == t[:, None]).any(axis=1), j, t) if i else t
    return np.sort(out, axis=1) if d > 1 else out


class DBitFlipPM(FieldSpec):
    """Microsoft's dBitFlipPM: histograms over time with permanent memoization.

    Each user samples ``d`` of the ``k`` buckets once (kept), and for each sampled bucket
    ``j`` sends a bit that is 1 with probability ``e^(eps/2) / (e^(eps/2) + 1)`` if its value
    is ``j`` and ``1 / (e^(eps/2) + 1)`` otherwise. Two values change at most two bits'
    laws, each by ``e^(eps/2)``: a report is ``eps``-LDP. The bits are memoized per (user,
    value): while a value does not change, every round repeats the same report, so the
    rounds together reveal no more than one report (``eps``); a change of value shows.

    Count estimate of bucket ``j``: ``(k / d) ((e + 1) S_j - T_j) / (e - 1)`` with
    ``e = e^(eps/2)``, ``S_j`` the sum of the bits sent for ``j`` and ``T_j`` the number of
    users who sampled ``j``; unbiased, with per-user variance ``(k/d) e / (e - 1)^2`` (other
    values) or ``(k/d) (e^2 - e + 1) / (e - 1)^2 - 1`` (value ``j``).

    Parameters
    ----------
    n_cells : int
        Number of buckets ``k``.
    epsilon : float
        Budget of one report (and of all the rounds of an unchanged value).
    n_sampled : int, default=1
        Buckets each user samples, ``d`` (``1 <= d <= k``).

    See Also
    --------
    LongitudinalMechanism : Memoization plus fresh noise every round.

    References
    ----------
    .. [1] B. Ding, J. Kulkarni and S. Yekhanin, "Collecting telemetry data privately",
       NeurIPS 2017.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mechanism = DBitFlipPM(8, 2.0, n_sampled=2)
    >>> values = rng.integers(8, size=40_000)
    >>> state = mechanism.new_state(len(values), rng)
    >>> counts = mechanism.estimate(mechanism.aggregate(mechanism.randomize(values, state,
    ...                                                                     rng)))
    >>> truth = np.bincount(values)
    >>> sd = np.sqrt(mechanism.count_variance(truth / len(values), len(values)))
    >>> bool(np.all(np.abs(counts - truth) < 4 * sd))
    True
    """

    kind = "dbitflip_pm"
    spec_fields = ("n_cells", "epsilon", "n_sampled")

    def __init__(self, n_cells, epsilon, n_sampled=1):
        self.n_cells = _check_memo_cells(n_cells)
        self.epsilon = check_epsilon(epsilon)
        self.n_sampled = check_positive_int(n_sampled, "n_sampled")
        if self.n_sampled > self.n_cells:
            raise ValueError(f"n_sampled must be at most n_cells={self.n_cells}, got "
                             f"{n_sampled!r}.")
        # A bit is 1 with own / 2^52 (own bucket) or other / 2^52, other = 1 / (e + 1)
        # rounded up (towards 1/2, lowering the ratio) and own = 2^52 - other; checked exactly.
        self._other = dyadic_numerator(DECIMAL_CONTEXT.divide(
            1, DECIMAL_CONTEXT.add(exp_decimal(self.epsilon / 2), 1)), "up")
        self._own = _ONE - self._other
        if not integer_ratio_at_most(self._own, self._other, self.epsilon / 2):
            raise ValueError(f"epsilon={epsilon!r}: the realized bit numerators {self._own} / "
                             f"{self._other} exceed e^(epsilon / 2) (exact check).")
        # The realized ratio: every formula in e (estimate, variance) is then exact for the
        # probabilities drawn, own / 2^52 = e / (e + 1).
        self.e = self._own / self._other

    def new_state(self, n_users, rng=None):
        """The users' memory: a :class:`MemoState` (a secret per user; ``rng`` None draws the
        secrets from the operating system, a Generator is for simulation only)."""
        return MemoState(self, n_users, rng=rng)

    def buckets(self, secrets):
        """Each user's ``d`` sampled buckets (sorted, int64), derived from its secret."""
        return _derived_subsets(secrets, self.n_cells, self.n_sampled)

    def permanent_bits(self, values, buckets, secrets):
        """The memoized bits (uint8, ``(n, d)``) of ``values``: bit ``i`` is 1 with
        ``own / 2^52`` if bucket ``i`` is the value, ``other / 2^52`` otherwise, derived from
        the secrets (PRF words of tag ``dbf-bits``, value, counter ``i``)."""
        bits = np.empty(buckets.shape, dtype=np.uint8)
        for i in range(self.n_sampled):
            numerators = np.where(buckets[:, i] == values, self._own, self._other)
            bits[:, i] = prf_bernoulli(secrets, "dbf-bits", values, i, numerators)
        return bits

    def check_values(self, values, n_users=None):
        """``values`` as int64 cell indices, or a ValueError naming the first bad one."""
        return _check_codes(values, self.n_cells, n_users)

    def memo_points(self, values, state):
        """What a user's report is memoized by: its value."""
        return values

    def randomize(self, values, state, rng=None):
        """One round: ``(buckets, bits)``, each ``(n_users, d)``; a function of each user's
        secret and value (``rng`` is not used: nothing is fresh)."""
        values = self.check_values(values, _state_users(state, self))
        buckets = state.user_constant("buckets", self.buckets)
        bits = state.permanent(values, lambda users, points: self.permanent_bits(
            points, buckets[users], state.secrets[users]))
        return buckets, bits

    def exact_law(self, value):
        """The exact law of one report of ``value``: outputs are rows ``buckets + bits``
        (every sorted ``d``-subset, in lexicographic order, with every bit vector), over
        the uniform subset of a random secret.

        Returns
        -------
        ExactLaw
        """
        value = int(self.check_values(np.array([value]))[0])
        k, d = self.n_cells, self.n_sampled
        check_law_size(math.comb(k, d) * 2**d, self.kind)
        outputs, weights = [], []
        for subset in itertools.combinations(range(k), d):
            for bits in itertools.product((0, 1), repeat=d):
                weight = 1
                for bucket, bit in zip(subset, bits, strict=True):
                    one = self._own if bucket == value else self._other
                    weight *= one if bit else _ONE - one
                outputs.append(list(subset) + list(bits))
                weights.append(weight)
        return ExactLaw(np.array(outputs, dtype=np.int64), weights,
                        math.comb(k, d) * _ONE**d)

    def aggregate(self, reports):
        """``[S_0 .. S_(k-1), T_0 .. T_(k-1), N]`` (int64): per bucket the bits sent and the
        users who sampled it, and the number of reports."""
        buckets, bits = (np.asarray(part) for part in reports)
        if buckets.ndim != 2 or buckets.shape != bits.shape \
                or buckets.shape[1] != self.n_sampled:
            raise ValueError(f"reports are two (n_users, {self.n_sampled}) arrays, got "
                             f"shapes {buckets.shape} and {bits.shape}.")
        if buckets.dtype.kind not in "iu" or (buckets.size and (
                buckets.min() < 0 or buckets.max() >= self.n_cells)):
            raise ValueError(f"report buckets must be in [0, {self.n_cells}).")
        if bits.dtype.kind not in "iub" or (bits.size and (bits.min() < 0 or bits.max() > 1)):
            raise ValueError("report bits must be 0 or 1.")
        if self.n_sampled > 1 and (np.diff(np.sort(buckets, axis=1), axis=1) == 0).any():
            raise ValueError("a report names the same bucket twice.")
        flat = buckets.ravel().astype(np.int64)
        sums = np.bincount(flat, weights=bits.ravel(), minlength=self.n_cells)
        samplers = np.bincount(flat, minlength=self.n_cells)
        return np.concatenate([sums.astype(np.int64), samplers.astype(np.int64),
                               [np.int64(buckets.shape[0])]])

    def estimate(self, statistic):
        """Unbiased estimate of the user count of every bucket."""
        statistic = np.asarray(statistic)
        k = self.n_cells
        if statistic.shape != (2 * k + 1,) or statistic.dtype.kind not in "iu" \
                or (statistic < 0).any() or (statistic[:k] > statistic[k:2 * k]).any() \
                or statistic[k:2 * k].sum() != self.n_sampled * statistic[-1]:
            raise ValueError(f"a {self.kind!r} statistic is {k} bit sums, {k} sampler counts "
                             f"and the number of reports, consistent with each other.")
        S, T = statistic[:k].astype(float), statistic[k:2 * k].astype(float)
        return (k / self.n_sampled) * ((self.e + 1) * S - T) / (self.e - 1)

    def count_variance(self, frequencies, n_users):
        """Variance of the count estimates for the given value frequencies."""
        f = np.asarray(frequencies, dtype=float)
        e, ratio = self.e, self.n_cells / self.n_sampled
        other = ratio * e / (e - 1) ** 2
        own = ratio * (e * e - e + 1) / (e - 1) ** 2 - 1
        return n_users * ((1 - f) * other + f * own)


class OneBitMeanPM(FieldSpec):
    """Ding et al.'s 1BitMean for counters over time, with alpha-point rounding memoized.

    A user's counter ``x`` lies in ``[0, m]``. The range is cut into ``s`` equal segments;
    the points ``j m / s`` (``j = 0 .. s``) are the only values a report ever describes.
    Each user draws ``alpha`` uniform in ``[0, 1)`` once (kept in its state) and rounds ``x``
    to the point above it when the fraction of a segment that ``x`` has covered plus
    ``alpha`` reaches 1, to the point below otherwise: over ``alpha`` the rounded value has
    mean ``x`` exactly. For a point ``j`` the user sends one bit, 1 with probability
    ``p_j = p_0 + (j / s)(p_s - p_0)``, ``p_0 = 1 / (e^eps + 1)``, ``p_s = 1 - p_0``
    (1BitMean), and memoizes it per (user, point): while the rounded value does not change,
    every round repeats the same bit. Any two points give a bit's two outcomes a ratio at
    most ``p_s / p_0 = e^eps``, so one report is ``eps``-LDP and the rounds of one rounded
    value reveal no more than that report; each further rounded value a user reaches is one
    more ``eps`` (and shows as a change, see the module docstring). A counter that
    oscillates within one segment keeps one rounded value (the reason for alpha rounding:
    a fresh rounding each round would reveal ``x`` by averaging).

    The bit probabilities are multiples of ``2^-52`` (``p_0`` rounded up, ``p_s = 1 - p_0``,
    the points between rounded to the nearest), drawn exactly, and the ratio of the realized
    ``p_s / p_0`` is checked against ``e^eps`` exactly at construction. Mean estimate of a
    round: ``m (S / N - p_0) / (p_s - p_0)`` with ``S`` the bits set among ``N`` reports.
    Per user, ``Var = m^2 E[p_r (1 - p_r)] / (p_s - p_0)^2 + (m / s)^2 u (1 - u)`` with ``u``
    the fraction of its segment ``x`` covers (the second term is the rounding's own variance);
    see :meth:`mean_variance`.

    Parameters
    ----------
    max_value : float
        ``m``, the largest counter value (values lie in ``[0, m]``).
    epsilon : float
        Budget of one report (and of all the rounds of an unchanged rounded value).
    n_segments : int, default=8
        ``s``: segments of the rounding grid (``s + 1`` points). More segments lower the
        rounding variance but let a drifting counter reach more points (each one more
        ``eps``).

    Attributes
    ----------
    p : ndarray of shape (n_segments + 1,)
        ``P(bit = 1)`` for every point (realized, dyadic).

    See Also
    --------
    DBitFlipPM : The same memoization for histograms.
    LongitudinalMechanism : Memoization plus fresh noise every round.

    References
    ----------
    .. [1] B. Ding, J. Kulkarni and S. Yekhanin, "Collecting telemetry data privately",
       NeurIPS 2017 (1BitMean, alpha-point rounding, memoization).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mechanism = OneBitMeanPM(max_value=24.0, epsilon=1.0)
    >>> hours = rng.uniform(0, 24, size=100_000)
    >>> state = mechanism.new_state(hours.size, rng)
    >>> bits = mechanism.randomize(hours, state, rng)
    >>> estimate = mechanism.estimate(mechanism.aggregate(bits))
    >>> sd = np.sqrt(mechanism.mean_variance(hours))
    >>> bool(abs(estimate - hours.mean()) < 4 * sd)
    True
    """

    kind = "1bitmean_pm"
    spec_fields = ("max_value", "epsilon", "n_segments")

    def __init__(self, max_value, epsilon, n_segments=8):
        if isinstance(max_value, bool) or not isinstance(max_value, int | float | np.number) \
                or not math.isfinite(max_value) or max_value <= 0:
            raise ValueError(f"max_value must be a finite number > 0, got {max_value!r}.")
        self.max_value = float(max_value)
        self.epsilon = check_epsilon(epsilon)
        self.n_segments = check_positive_int(n_segments, "n_segments")
        if self.n_segments > 2**20:
            raise ValueError(f"n_segments must be at most 2**20, got {n_segments!r}.")
        one = 2**PRECISION
        e = exp_decimal(self.epsilon)
        low = dyadic_numerator(1 / (e + 1), "up")  # rounding p_0 up lowers p_s / p_0
        high = one - low
        if not (ratio_at_most(high, low, e) and ratio_at_most(one - low, one - high, e)):
            raise ArithmeticError("the realized 1BitMean probabilities exceed epsilon.")
        s = self.n_segments
        # p_j on the straight line between p_0 and p_s (nearest multiple of 2^-52): every
        # p_j lies in [p_0, p_s], so the exact check above bounds every pair of points.
        self._numerators = low + (np.arange(s + 1, dtype=object) * (high - low) + s // 2) // s
        self._numerators = self._numerators.astype(np.int64)
        self.p = self._numerators / one
        self.p_low, self.p_high = low / one, high / one

    @property
    def n_cells(self):
        """Number of rounding points, ``n_segments + 1`` (the values a report can describe)."""
        return self.n_segments + 1

    def new_state(self, n_users, rng=None):
        """The users' memory: a :class:`MemoState` (a secret per user; ``rng`` None draws the
        secrets from the operating system, a Generator is for simulation only)."""
        return MemoState(self, n_users, rng=rng)

    @staticmethod
    def alpha(secrets):
        """Each user's rounding offset ``A / 2^52`` (float64, exact), ``A`` the top 52 bits of
        a PRF word of its secret (tag ``1bm-alph``): uniform on the ``2^52`` multiples of
        ``2^-52`` in ``[0, 1)``."""
        words = prf_words(secrets, "1bm-alph", 0, 0)  # value 0 for every user: broadcast
        return (words >> np.uint64(12)).astype(np.float64) / _ONE

    def check_values(self, values, n_users=None):
        """``values`` as float64, or a ValueError naming the first bad one."""
        values = np.asarray(values)
        if values.ndim != 1 or values.dtype.kind not in "iuf":
            raise ValueError(f"values must be a 1-D array of numbers in [0, {self.max_value}].")
        if n_users is not None and values.shape[0] != n_users:
            raise ValueError(f"values must hold {n_users} counters (one per user of the "
                             f"state), got {values.shape[0]}.")
        values = values.astype(float)
        bad = ~((values >= 0) & (values <= self.max_value))  # NaN is bad too
        if bad.any():
            row = int(np.argmax(bad))
            raise ValueError(f"values[{row}] = {float(values[row])!r} is not in [0, "
                             f"{self.max_value}].")
        return values

    def rounded_points(self, values, alpha):
        """Index ``j`` of the point each value is rounded to with the users' ``alpha``."""
        scaled = values * (self.n_segments / self.max_value)
        lower = np.minimum(np.floor(scaled), self.n_segments)
        # Clipped to the last point: a counter at max_value may scale to just above n_segments.
        return np.minimum(lower + (scaled - lower + alpha >= 1.0), self.n_segments).astype(
            np.int64)

    def memo_points(self, values, state):
        """What a user's bit is memoized by: the point its value rounds to."""
        return self.rounded_points(values, state.user_constant("alpha", self.alpha))

    def permanent_bits(self, points, secrets):
        """The memoized bit (uint8) of each point: 1 with ``numerators[point] / 2^52``,
        derived from the secrets (PRF word of tag ``1bm-bits``, value ``point``)."""
        return prf_bernoulli(secrets, "1bm-bits", points, 0,
                             self._numerators[points]).astype(np.uint8)

    def randomize(self, values, state, rng=None):
        """One round: one memoized bit per user (uint8), for its alpha-rounded value (a
        function of the user's secret and rounded value; ``rng`` is not used)."""
        values = self.check_values(values, _state_users(state, self))
        points = self.memo_points(values, state)
        return state.permanent(points, lambda users, chosen: self.permanent_bits(
            chosen, state.secrets[users]))

    def exact_law(self, value):
        """The exact law of one report of the counter ``value`` (outputs ``[0, 1]``), over a
        random secret: ``alpha = A / 2^52`` rounds up for the ``A`` (a contiguous range,
        found by bisection on the same float comparison :meth:`rounded_points` makes) that
        reach 1, then the bit of the point.

        Returns
        -------
        ExactLaw
        """
        x = float(self.check_values(np.array([value], dtype=float))[0])
        scaled = x * (self.n_segments / self.max_value)
        lower = min(math.floor(scaled), self.n_segments)
        fraction = scaled - lower
        low, high = 0, _ONE  # the smallest A with fraction + A / 2^52 >= 1 (or 2^52: none)
        while low < high:
            middle = (low + high) // 2
            if fraction + middle / _ONE >= 1.0:
                high = middle
            else:
                low = middle + 1
        up = _ONE - low
        numerators = [int(a) for a in self._numerators]
        upper = min(lower + 1, self.n_segments)
        one = up * numerators[upper] + (_ONE - up) * numerators[lower]
        return ExactLaw(np.arange(2), [_ONE * _ONE - one, one], _ONE * _ONE)

    def aggregate(self, reports):
        """``[S, N]`` (int64): the bits set and the number of reports."""
        reports = np.asarray(reports)
        if reports.ndim != 1 or reports.dtype.kind not in "iub" or (
                reports.size and (reports.min() < 0 or reports.max() > 1)):
            raise ValueError("1BitMean reports are a 1-D array of bits (0 or 1).")
        return np.array([int(reports.sum()), reports.shape[0]], dtype=np.int64)

    def estimate(self, statistic):
        """Unbiased estimate of the mean counter of one round."""
        statistic = np.asarray(statistic)
        if statistic.shape != (2,) or statistic.dtype.kind not in "iu" \
                or statistic.min() < 0 or statistic[0] > statistic[1] or statistic[1] == 0:
            raise ValueError("a 1BitMean statistic is [bits set, number of reports], with at "
                             "least one report.")
        mean_bit = statistic[0] / statistic[1]
        return float(self.max_value * (mean_bit - self.p_low) / (self.p_high - self.p_low))

    def user_variance(self, values):
        """Variance of one user's term ``m (b - p_0) / (p_s - p_0)`` for each value (over
        ``alpha`` and the bit)."""
        values = self.check_values(values)
        s, m = self.n_segments, self.max_value
        scaled = values * (s / m)
        lower = np.minimum(np.floor(scaled), s).astype(np.int64)
        up = scaled - lower
        upper = np.minimum(lower + 1, s)
        p_lo, p_up = self.p[lower], self.p[upper]
        bit = (1 - up) * p_lo * (1 - p_lo) + up * p_up * (1 - p_up)
        return m * m * bit / (self.p_high - self.p_low) ** 2 + (m / s) ** 2 * up * (1 - up)

    def mean_variance(self, values):
        """Variance of one round's mean estimate for the users' true ``values``."""
        variance = self.user_variance(values)
        return float(variance.sum() / variance.size ** 2)

    def worst_case_variance(self, n_users):
        """A bound on the mean estimate's variance over any data: every user at the worst
        value, ``(m^2 / (4 (p_s - p_0)^2) + (m / s)^2 / 4) / N``."""
        m, s = self.max_value, self.n_segments
        return (m * m / (4 * (self.p_high - self.p_low) ** 2) + (m / s) ** 2 / 4) / n_users
