"""PCKV-GRR: key-value data, each key's frequency and the mean of its values (Gu et al. 2020).

:class:`KeyValueMechanism` holds what PCKV-GRR and PCKV-UE (:mod:`.pckv_ue`) share: the
pairs' checks, padding and sampling, the discretization, the estimators and their variances,
the specification with the key labels; :class:`PCKVGRR` adds the randomized response.

Each user holds a set of key-value pairs, keys in ``[0, d)``, values in ``[-1, 1]`` on the
public lattice of step ``1 / M`` (a value is ``j / M`` for an integer ``j``). The user pads its
keys with the dummy keys ``d + s .. d + L - 1`` (value 0) to the pad length ``L`` and draws one
pair exactly uniformly (:mod:`.padding`, the same core as SVIM), then:

1. discretizes the value to ``v* = +1`` with probability ``(1 + v) / 2 = (M + j) / 2M``
   exactly (one uniform integer in ``[0, 2M)`` compared with ``M + j``), ``-1`` otherwise;
2. perturbs the pair ``<k, v*>`` with PCKV-GRR over ``d' = d + L`` keys: the key is kept with
   weight ``a`` and replaced by each other key with weight ``d_w`` (randomized response on
   keys); a kept key keeps its value with weight ``b_k`` and flips it with ``b_f``; a
   replaced key gets a uniform value. The report is ``2 key + [v* = +1]``.

Correlated budget (the paper's privacy analysis of the correlated perturbation). The worst
ratio of two inputs' laws is ``2 a b_k / (d_w (b_k + b_f))`` (a kept pair against a
replaced key), i.e.
``eps = max(eps_2, eps_1 + ln(2 e^eps_2 / (e^eps_2 + 1)))`` with ``e^eps_1 = a / d_w`` and
``e^eps_2 = b_k / b_f``: key and value share one ``epsilon`` instead of adding two. The
weights take ``eps_2 = eps`` and ``e^eps_1 = (e^eps + 1) / 2``, the largest key budget this
composition leaves: ``b_k / b_f <= e^eps`` and ``a`` the largest integer with
``2 a b_k <= e^eps d_w (b_k + b_f)``, both decided exactly on integers, so the realised
``epsilon`` is at most the declared one (:meth:`KeyValueMechanism.budget_split`).

Estimators (``n_1``, ``n_2``: reports ``<k, +1>``, ``<k, -1>``; ``N`` reports; realised
``p = a / A``, ``q = d_w / A``, ``A = a + (d' - 1) d_w``, ``b = b_k / (b_k + b_f)``):

* frequency ``f_k = L ((n_1 + n_2) / N - q) / (p - q)`` (unbiased when no set exceeds
  ``L``);
* value sum per user ``s_k = L (n_1 - n_2) / (N p (2b - 1))``: unbiased for
  ``(1 / N) sum over holders of v``;
* mean ``m_k = s_k / f_k`` with ``f_k`` clipped to ``[1 / N, 1]`` and ``m_k`` to
  ``[-1, 1]``: the paper's correction; the mean is then a ratio estimator (biased for small
  ``f_k``); its standard error is the delta method's.

References
----------
.. [1] X. Gu, M. Li, Y. Cheng, L. Xiong and Y. Cao, "PCKV: Locally differentially private
   correlated key-value data collection with optimized utility", USENIX Security 2020.
"""

import math
import numbers

import numpy as np

from ..._validation import check_epsilon, check_positive_int
from .._base.docstrings import shared_sections
from .._base.exact import ExactLaw, largest_numerator_within, uniform_below
from .._base.headers import check_spec_header
from .._base.mechanism import Mechanism, index_report_validity
from .._base.ratio import ratio_weights, sample_ratio_law
from .padding import check_sets_order, check_size_cap, padded_law, support_variance

PCKV_KIND = "pckv_grr"
# The default value lattice: values j / 1000.
DEFAULT_VALUE_STEPS = 1000
MAX_VALUE_STEPS = 2**30
# The longest key label the specification carries (characters).
MAX_LABEL_LENGTH = 256
# The keys of the params of a key-value specification.
PARAM_KEYS = {"pad_length", "value_steps", "max_set_size", "keys"}


def check_key_labels(keys, n_keys):
    """The key labels as a list of str or int, or a ValueError naming the first fault: not a
    list of ``n_keys`` labels, a label that is neither a string (at most ``MAX_LABEL_LENGTH``
    characters) nor an integer, or a label listed twice.

    Examples
    --------
    >>> check_key_labels(["a", 2], 2)
    ['a', 2]
    """
    if isinstance(keys, str | bytes | dict) or not hasattr(keys, "__len__"):
        raise ValueError(f"keys must be a list of {n_keys} labels, got {str(keys)[:60]!r}.")
    keys = list(keys)
    if len(keys) != n_keys:
        raise ValueError(f"keys must list {n_keys} labels, got {len(keys)} "
                         f"({str(keys)[:60]}).")
    labels, seen = [], set()
    for key in keys:
        if isinstance(key, np.integer):
            key = int(key)
        if isinstance(key, bool) or not isinstance(key, str | int) \
                or (isinstance(key, str) and len(key) > MAX_LABEL_LENGTH):
            raise ValueError(f"a key label is a string of at most {MAX_LABEL_LENGTH} "
                             f"characters or an integer, got {str(key)[:60]!r}.")
        if (type(key), key) in seen:
            raise ValueError(f"the key label {key!r} is listed twice.")
        seen.add((type(key), key))
        labels.append(key)
    return labels


# Docstring sections of the key-value family, written once (PCKV-GRR, PCKV-UE, the estimator).
key_value_docstring = shared_sections({
    "gu20 reference": """\
References
----------
.. [1] X. Gu, M. Li, Y. Cheng, L. Xiong and Y. Cao, "PCKV: Locally differentially
   private correlated key-value data collection with optimized utility", USENIX
   Security 2020.""",
    "key-value parameters": """\
n_keys : int
    The number of declared keys ``d``.
pad_length : int
    The public pad length ``L`` (keys per user before sampling).
epsilon : float
    The budget of the whole report (key and value together).
value_steps : int, default=1000
    ``M``: values are ``j / M``, ``-M <= j <= M``.
max_set_size : int, optional
    The cap on the pairs per user (default ``min(n_keys, 4096)``).
keys : list of str or int, optional
    The keys' labels (default ``0 .. d-1``), carried by the specification: reports rebuilt
    from it decode with labelled keys.""",
})


class KeyValueMechanism(Mechanism):
    """What PCKV-GRR and PCKV-UE share: the pairs' checks, padding, sampling and
    discretization, and the estimators given the realised ``p``, ``q``, ``b`` (module
    docstring). Subclasses set ``weights``, ``p``, ``q``, ``b`` in :meth:`_derive` and give
    the perturbation, the exact law of one pair and the reports' layout."""

    kind = None

    def __init__(self, n_keys, pad_length, epsilon, value_steps=DEFAULT_VALUE_STEPS,
                 max_set_size=None, keys=None):
        self.n_keys = check_positive_int(n_keys, "n_keys")
        self.keys = None if keys is None else check_key_labels(keys, self.n_keys)
        self.pad_length = check_size_cap(pad_length, "pad_length")
        self.max_set_size = check_size_cap(min(self.n_keys, 4096) if max_set_size is None
                                           else max_set_size)
        self.epsilon = check_epsilon(epsilon)
        if isinstance(value_steps, bool) or not isinstance(value_steps, numbers.Integral) \
                or not 1 <= value_steps <= MAX_VALUE_STEPS:
            raise ValueError(f"value_steps must be an integer in [1, {MAX_VALUE_STEPS}], got "
                             f"{value_steps!r}.")
        self.value_steps = int(value_steps)
        self.n_outputs_keys = self.n_keys + self.pad_length
        # The Mechanism attributes (LDPReports carry the reports): the keys are the cells.
        self.n_inputs, self.name = self.n_keys, self.kind
        self.params = {"pad_length": self.pad_length, "value_steps": self.value_steps,
                       "max_set_size": self.max_set_size, "keys": self.keys}
        self._derive()

    def _derive(self):
        raise NotImplementedError

    # ------------------------------------------------------------------ client side
    def check_pairs(self, keys, values):
        """``(FlatSets of keys sorted per user, lattice integers j aligned with them)``, or a
        ValueError naming the first key or value at fault."""
        lengths, keys = (np.asarray(part) for part in keys)
        values = np.asarray(values)
        if values.shape != keys.shape or values.dtype.kind not in "iuf":
            raise ValueError(f"values must be numbers, one per key ({keys.shape[0]} keys), got "
                             f"shape {values.shape} and dtype {values.dtype}.")
        flat, order = check_sets_order((lengths, keys), self.n_keys, self.max_set_size, "keys")
        # The keys were sorted within each user: the values follow the same order.
        users = np.repeat(np.arange(flat.lengths.size), flat.lengths)
        values = values.astype(float) if order is None else values.astype(float)[order]
        bad = ~(np.abs(values) <= 1.0)
        scaled = values * self.value_steps
        steps = np.rint(scaled)
        bad |= np.abs(scaled - steps) > 1e-6
        if bad.any():
            position = int(np.argmax(bad))
            raise ValueError(f"values: user {int(users[position])} has the value "
                             f"{float(values[position])!r} for key "
                             f"{int(flat.items[position])}; values must lie in [-1, 1] on "
                             f"the lattice j / {self.value_steps}.")
        return flat, steps.astype(np.int64)

    def randomize(self, pairs, rng):
        """Privatize each user's key-value pairs: one report ``2 key + [v* = +1]`` each.

        Parameters
        ----------
        pairs : tuple (lengths, keys, values)
            Flat layout: each user's number of pairs, then their keys user after user, and
            the values aligned with the keys (an empty array: no users).
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray
            One report per user (PCKV-GRR: an int64 in ``[0, 2 (d + L))``; PCKV-UE: a
            packed uint8 row).
        """
        if not isinstance(pairs, tuple) and np.asarray(pairs).size == 0:
            return self.empty_reports()  # no users (the collectors' template)
        if not isinstance(pairs, tuple) or len(pairs) != 3:
            raise ValueError("pairs must be a tuple (lengths, keys, values) of flat arrays.")
        return self.randomize_checked(*self.check_pairs(pairs[:2], pairs[2]), rng)

    def randomize_checked(self, flat, steps, rng):
        """:meth:`randomize` of the pairs :meth:`check_pairs` returned (a caller that checked
        them already does not pay for the check twice)."""
        lengths, n = flat.lengths, flat.lengths.size
        positions = uniform_below(rng, np.maximum(lengths, self.pad_length), n)
        real = positions < lengths
        # A sentinel pair for the users whose draw is a dummy (value 0).
        padded_keys, padded_steps = np.append(flat.items, 0), np.append(steps, 0)
        index = np.where(real, flat.starts + positions, padded_keys.size - 1)
        key = np.where(real, padded_keys[index], self.n_keys + positions)
        j = np.where(real, padded_steps[index], 0)  # dummies: value 0
        positive = uniform_below(rng, 2 * self.value_steps, n) < self.value_steps + j
        return self._perturb(key, positive, rng)

    def exact_law(self, value):
        """The exact law of one user's report given its pairs ``[(key, value), ...]``."""
        pairs = list(value)
        keys = np.array([k for k, _ in pairs], dtype=np.int64)
        flat, steps = self.check_pairs((np.array([len(pairs)]), keys),
                                       np.array([v for _, v in pairs], dtype=float))
        value_of = dict(zip(flat.items.tolist(), steps.tolist(), strict=True))
        return padded_law(lambda key: self.pair_law(key, value_of.get(key, 0)),
                          flat.items, self.n_keys, self.pad_length)

    def budget_split(self):
        """``(eps_1, eps_2)``: the realised key and value budgets of the weights, and the
        composed ``epsilon`` of the paper's correlated perturbation,
        ``max(eps_2, eps_1 + ln(2 e^eps_2 / (e^eps_2 + 1)))`` (at most :attr:`epsilon`).

        Examples
        --------
        >>> eps_1, eps_2, composed = PCKVGRR(4, 2, 1.0).budget_split()
        >>> round(eps_2, 9), round(float(np.exp(eps_1)), 6), composed <= 1.0
        (1.0, 1.859141, True)
        """
        key_ratio, keep, flip = self._budget_weights()
        eps_1, eps_2 = math.log(key_ratio), math.log(keep / flip)
        return eps_1, eps_2, max(eps_2, eps_1 + math.log(2 * keep / (keep + flip)))

    # ------------------------------------------------------------------ server side
    def _counts(self, statistic):
        """``(plus, minus, N)`` of the ``d`` real keys from the statistic (counts of
        ``<k, -1>``, ``<k, +1>`` over the ``d + L`` keys, then ``N``), or a ValueError."""
        statistic = np.asarray(statistic)
        if statistic.shape != (2 * self.n_outputs_keys + 1,) or statistic.dtype.kind not in "iu" \
                or statistic.min() < 0 or not self._counts_consistent(statistic):
            raise ValueError(f"not a statistic of {self.kind!r} over {self.n_keys} keys (pad "
                             f"{self.pad_length}): shape {statistic.shape}.")
        counts = statistic[:-1].reshape(-1, 2)[:self.n_keys].astype(float)
        return counts[:, 1], counts[:, 0], float(statistic[-1])

    def check_statistic(self, statistic):
        """The statistic as int64, or a ValueError (wrong length, not counts, or counts that
        no set of ``N`` reports gives)."""
        self._counts(statistic)
        return np.asarray(statistic).astype(np.int64)

    def n_reports(self, statistic):
        return int(self._counts(statistic)[2])

    def estimate(self, statistic):
        """``(frequency, mean)`` of each key (module docstring; the mean clipped as the
        paper does)."""
        plus, minus, n = self._counts(statistic)
        frequency = self.pad_length * ((plus + minus) / n - self.q) / (self.p - self.q)
        value_sum = self.value_sums(statistic)
        mean = np.clip(value_sum / np.clip(frequency, 1.0 / n, 1.0), -1.0, 1.0)
        return frequency, mean

    def value_sums(self, statistic):
        """``s_k``: the unbiased estimate of ``(1 / N)`` times the sum of key ``k``'s values."""
        plus, minus, n = self._counts(statistic)
        return self.pad_length * (plus - minus) / (n * self.p * (2 * self.b - 1))

    def frequency_variance(self, n_users, held):
        """Variance of the frequency estimate when ``held`` of ``n_users`` hold the key."""
        return support_variance(self, n_users, held, self.pad_length) / n_users ** 2

    def value_sum_variance(self, n_users, held, sum_of_squares):
        """Variance of ``s_k`` when ``held`` users hold the key with values whose squares sum
        to ``sum_of_squares`` (every set at most ``L`` long)."""
        scale = self.pad_length / (self.p * (2 * self.b - 1))
        signal = self.p * (2 * self.b - 1) / self.pad_length
        second = n_users * self.q + (self.p - self.q) * np.asarray(held) / self.pad_length
        return scale ** 2 * (second - signal ** 2 * np.asarray(sum_of_squares)) / n_users ** 2

    def std_errors(self, statistic):
        """``(frequency, mean)`` standard errors at the estimates (the mean's by the delta
        method, its variance from the frequency's and the value sum's)."""
        _, _, n = self._counts(statistic)
        frequency, mean = self.estimate(statistic)
        f = np.clip(frequency, 1.0 / n, 1.0)
        held = f * n
        var_f = self.frequency_variance(n, held)
        var_s = self.value_sum_variance(n, held, held * mean ** 2)
        # Cov(s, f) per user: E[Y] (1 - P) scaled, Y the signed indicator, P its support.
        support = self.q + (self.p - self.q) / self.pad_length
        cov = (self.pad_length ** 2 / (self.p * (2 * self.b - 1) * (self.p - self.q))
               * held * (self.p * (2 * self.b - 1) * mean / self.pad_length) * (1 - support)
               / n ** 2)
        var_m = (var_s + mean ** 2 * var_f - 2 * mean * cov) / f ** 2
        return np.sqrt(np.maximum(var_f, 0)), np.sqrt(np.maximum(var_m, 0))

    def to_dict(self):
        """The specification (the kind, the params with the key labels, the integer
        weights)."""
        return {"version": 1, "mechanism": self.kind, "epsilon": self.epsilon,
                "n_inputs": self.n_keys, "params": dict(self.params),
                "weights": [int(w) for w in self.weights]}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`; weights that differ from the derived ones are
        refused."""
        check_spec_header(spec, cls.kind, 1)
        params = spec.get("params")
        if not isinstance(params, dict) or set(params) != PARAM_KEYS:
            raise ValueError(f"malformed params of the {cls.kind!r} specification: "
                             f"{str(params)[:80]!r}.")
        mechanism = cls(spec.get("n_inputs"), params["pad_length"], spec.get("epsilon"),
                        params["value_steps"], params["max_set_size"], params["keys"])
        if spec.get("weights") != [int(w) for w in mechanism.weights]:
            raise ValueError(f"the weights of the {cls.kind!r} specification differ from "
                             "those its epsilon and params give: edited weights are refused.")
        return mechanism


@key_value_docstring
class PCKVGRR(KeyValueMechanism):
    """PCKV-GRR over ``n_keys`` keys with values on the lattice ``j / value_steps``.

    Parameters
    ----------
    <key-value parameters>

    Attributes
    ----------
    weights : tuple of int
        ``(a, d_w, b_k, b_f)``: the integer weights of the sampled law.
    p, q, b : float
        The realised probabilities (module docstring).

    <gu20 reference>

    Examples
    --------
    >>> mechanism = PCKVGRR(3, pad_length=1, epsilon=4.0)
    >>> keys = (np.ones(20000, dtype=int), np.zeros(20000, dtype=int))   # one pair each
    >>> values = np.full(20000, 0.5)
    >>> counts = mechanism.aggregate(mechanism.randomize((*keys, values), np.random.default_rng(0)))
    >>> frequency, mean = mechanism.estimate(counts)
    >>> frequency.round(2).tolist(), mean.round(1).tolist()[0]
    ([1.0, -0.0, -0.0], 0.5)
    """

    kind = PCKV_KIND

    def _derive(self):
        keep, flip = ratio_weights(self.epsilon, 1, 1, self.kind)
        a, d = ratio_weights(np.log((np.exp(self.epsilon) + 1) / 2), 1,
                             max(self.n_outputs_keys - 1, 1), self.kind)
        # The exact bound 2 a b_k <= e^eps d (b_k + b_f), decided on integers.
        a = min(a, largest_numerator_within(d * (keep + flip), self.epsilon) // (2 * keep))
        if a <= d:
            raise ValueError(f"epsilon={self.epsilon} is too small for PCKV-GRR: the key would "
                             "carry no information.")
        self.weights = (a, d, keep, flip)
        total = a + (self.n_outputs_keys - 1) * d
        self.p, self.q, self.b = a / total, d / total, keep / (keep + flip)

    def _budget_weights(self):
        a, d, keep, flip = self.weights
        return a / d, keep, flip

    def _perturb(self, key, positive, rng):
        a, d, keep, flip = self.weights
        kept, other = sample_ratio_law(rng, key.size, 1, self.n_outputs_keys - 1, a, d)
        other += other >= key  # uniform over the other keys
        same_value, _ = sample_ratio_law(rng, key.size, 1, 1, keep, flip)
        random_sign = uniform_below(rng, 2, key.size).astype(bool)
        sign = np.where(kept, positive == same_value, random_sign)
        return 2 * np.where(kept, key, other) + sign.astype(np.int64)

    def pair_law(self, key, j):
        """The exact law of the report of the pair ``<key, j / M>`` (after sampling)."""
        a, d, keep, flip = self.weights
        m = self.value_steps
        weights = []
        for output in range(2 * self.n_outputs_keys):
            out_key, out_sign = divmod(output, 2)
            if out_key == key:
                plus, minus = 2 * a * keep, 2 * a * flip  # given v* = +1, -1 (sign kept)
                given_plus = plus if out_sign else minus
                given_minus = minus if out_sign else plus
                weights.append((m + j) * given_plus + (m - j) * given_minus)
            else:
                weights.append(2 * m * d * (keep + flip))
        total = 2 * m * 2 * (keep + flip) * (a + (self.n_outputs_keys - 1) * d)
        return ExactLaw(np.arange(2 * self.n_outputs_keys), weights, total)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Every output 2 key + sign over the d + L keys.
        return index_report_validity(reports, 2 * self.n_outputs_keys, self.kind)

    def empty_reports(self):
        """Zero reports (int64 output indices)."""
        return np.zeros(0, dtype=np.int64)

    def aggregate(self, reports):
        """Counts of each output ``2 key + sign`` over the ``d + L`` keys, then ``N``."""
        reports = self.check_reports(reports)
        counts = np.bincount(reports, minlength=2 * self.n_outputs_keys).astype(np.int64)
        return np.append(counts, np.int64(reports.shape[0]))

    def _counts_consistent(self, statistic):
        # One output per report: the counts add up to N.
        return statistic[:-1].sum() == statistic[-1]

    def __repr__(self):
        return (f"PCKVGRR(n_keys={self.n_keys}, pad_length={self.pad_length}, "
                f"epsilon={self.epsilon})")

