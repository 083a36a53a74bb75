"""The input-perturbation marginal mechanisms: InpRR, InpPS and InpHT.

Each randomizes the user's whole record: InpRR and InpPS run a frequency oracle (symmetric
unary encoding, randomized response) on the full domain and sum its unbiased cell estimates
into marginals; InpHT reports the randomized sign of one low-order Fourier coefficient of the
record (:mod:`.signs`). The privacy argument, the coding and the variances of all six
mechanisms are in the :mod:`.base` docstring.
"""

import functools
import math
from itertools import combinations

import numpy as np

from ..._fwht import hadamard_parity
from ..._validation import check_dense_size
from .._base.exact import TABLE_PRECISION, ExactLaw, check_law_size
from .._base.mechanism import (
    check_output_counts,
    check_type_counts,
    check_type_indices,
    chunks,
    register,
    report_dtype,
)
from ..oracles.randomized_response import RandomizedResponse
from ..oracles.unary import SymmetricUnaryEncoding
from .base import (
    SIMULATION_ENTRIES,
    MarginalMechanism,
    _group_variance,
    _one_cell,
    marginal_docstring,
)
from .fourier import cell_bit_strings
from .signs import _FourierSignMechanism


def _oracle_method(name):
    """The method ``name`` of :class:`_FullDomainMechanism`: the oracle's, whose signature
    and documentation it keeps."""

    @functools.wraps(getattr(MarginalMechanism, name))
    def method(self, *args):
        return getattr(self.oracle, name)(*args)

    method.__qualname__ = f"_FullDomainMechanism.{name}"
    return method


class _FullDomainMechanism(MarginalMechanism):
    """A frequency oracle on the full domain; marginals sum its unbiased cell estimates."""

    def _build_oracle(self):
        raise NotImplementedError

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        self.oracle = self._build_oracle()

    # The oracle's reports, statistic and variances are the mechanism's own.
    randomize = _oracle_method("randomize")
    report_validity = _oracle_method("report_validity")
    report_influence = _oracle_method("report_influence")
    aggregate = _oracle_method("aggregate")
    estimate = _oracle_method("estimate")
    per_user_variance = _oracle_method("per_user_variance")
    query_variance = _oracle_method("query_variance")
    simulate_statistic = _oracle_method("simulate_statistic")
    strategy_matrix = _oracle_method("strategy_matrix")

    def exact_law(self, value):
        return self.oracle.exact_law(_one_cell(value, self.n_inputs))

    def n_reports(self, statistic):
        return self.oracle.n_reports(self.oracle._check_statistic(statistic))

    def estimate_marginal(self, statistic, attributes):
        attributes = self._check_attributes(attributes)
        n_users = self.n_reports(statistic)
        table_shape = tuple(self.shape[a] for a in attributes)
        if n_users == 0:
            return np.full(table_shape, 1.0 / math.prod(table_shape))
        cells = self.oracle.estimate(statistic).reshape(self.shape) / n_users
        others = tuple(a for a in range(self.n_attributes) if a not in attributes)
        return cells.sum(axis=others)

    def _cell_variance(self, attributes, n_users, table):
        group = self.n_inputs // table.size
        inside, outside = _group_variance(self.oracle, self.n_inputs, group)
        return (table * inside + (1.0 - table) * outside) / n_users


@register
@marginal_docstring
class InpRR(_FullDomainMechanism):
    """InpRR: symmetric unary encoding (basic RAPPOR) of the whole record, ``eps/2`` per bit.

    Reports: packed bit vectors, ``ceil(n / 8)`` bytes per user (``n = prod(shape)``), in the
    layout of ``np.packbits(bits, axis=1, bitorder="little")``; bit ``j`` (flat C-order cell
    ``j``) is 1 with probability ``p = e^{eps/2} / (1 + e^{eps/2})`` if ``j`` is the user's
    cell, else ``q = 1 - p`` (exactly the ``"rappor"`` mechanism, which this composes). Each
    bit uses ``eps/2``: two records differ in two bits, so the total is exactly ``eps``.

    Statistic: the ``"rappor"`` one, ``[C_0, ..., C_{n-1}, N]`` (support counts, reports).

    <marginal parameters>

    See Also
    --------
    SymmetricUnaryEncoding : The frequency oracle it runs on the whole domain.
    MargRR : The same encoding of a sampled set's cell (shorter reports).
    InpHT : Less error with one bit per user.
    <interface and marginal references: chapter 4 (InpRR)>
    .. [3] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: Randomized aggregatable
       privacy-preserving ordinal response", CCS 2014 (basic RAPPOR).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = InpRR(8, np.log(3), [2, 2, 2], 2)
    >>> reports = mechanism.randomize(np.arange(8), np.random.default_rng(0))
    >>> reports.shape
    (8, 1)
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (0, 2)).shape
    (2, 2)
    """

    kind = "inp_rr"

    def _build_oracle(self):
        oracle = SymmetricUnaryEncoding(self.n_inputs, self.epsilon)
        half = np.exp(self.epsilon / 2)
        if abs(oracle.p - half / (1 + half)) > 1e-12:  # the budget split documented above
            raise RuntimeError("symmetric unary encoding no longer uses eps/2 per bit.")
        return oracle


@register
@marginal_docstring
class InpPS(_FullDomainMechanism):
    """InpPS ("preferential sampling"): k-ary randomized response over the whole domain.

    Reports: one flat C-order cell index per user (the smallest unsigned integer type): the
    user's own cell with probability ``p = e^eps / (e^eps + n - 1)``, each other cell with
    ``q = 1 / (e^eps + n - 1)`` (exactly the ``"randomized_response"`` mechanism).

    Statistic: ``[C_0, ..., C_{n-1}, N]``.

    <marginal parameters>

    See Also
    --------
    RandomizedResponse : The frequency oracle it runs on the whole domain.
    MargPS : The same over a sampled set's cells (much less error on large domains).
    InpHT : One Fourier coefficient per user.
    <interface and marginal references: chapter 4 (InpPS)>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = InpPS(12, np.log(3), [2, 3, 2], 2)
    >>> reports = mechanism.randomize(np.arange(12), np.random.default_rng(0))
    >>> reports.dtype
    dtype('uint8')
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (1,)).shape
    (3,)
    """

    kind = "inp_ps"

    def _build_oracle(self):
        return RandomizedResponse(self.n_inputs, self.epsilon)


@register
@marginal_docstring
class InpHT(_FourierSignMechanism):
    """InpHT: one Fourier coefficient of order at most ``max_order``, one randomized bit.

    The recommended marginal mechanism (thesis Algorithms 1-2). Coefficients: the nonzero
    masks over the binary-coded record (module docstring) whose nonzero bits touch 1 to
    ``max_order`` attributes, in the order: by number of attributes, then attribute sets in
    ``itertools.combinations`` order, then the product of each attribute's nonzero masks
    ``1 .. 2^{b_i} - 1`` in C order (``coefficient_masks`` holds them). ``T`` of them.

    Reports: one integer ``o = 2 t + bit`` per user (smallest unsigned integer type): ``t``
    uniform in ``[0, T)``, ``bit = 1`` for ``+1``, the true sign
    ``(-1)^popcount(coefficient_masks[t] & code)`` kept with probability
    ``p = e^eps / (1 + e^eps)``.

    Statistic: the count of each output ``o`` in ``[0, 2T)`` (int64).

    Exact law (:meth:`exact_law`): outputs ``0 .. 2T - 1``, weight ``a`` (the sign's numerator)
    for the true sign of each coefficient and ``2^52 - a`` for the other, total ``T 2^52``.

    <marginal parameters>

    Attributes
    ----------
    coefficient_masks : ndarray of int64, shape (T,)
        The coefficients, as bit masks over the concatenated attribute codes.
    n_coefficients : int
        ``T``.
    p : float
        The probability of reporting the true sign, ``e^eps / (1 + e^eps)``.

    See Also
    --------
    MargHT : The same idea within a sampled set of attributes.
    fourier_strategy : This mechanism as a dense strategy matrix.
    HadamardRandomizedResponse : One Hadamard coefficient of the whole record.
    <interface and marginal references: chapter 4, Algorithms 1-2 (InpHT)>
    .. [3] B. Barak, K. Chaudhuri, C. Dwork, S. Kale, F. McSherry and K. Talwar, "Privacy,
       accuracy, and consistency too: a holistic solution to contingency table release",
       PODS 2007 (marginals from low-order Fourier coefficients).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = InpHT(12, np.log(3), [2, 3, 2], 2)
    >>> mechanism.n_coefficients     # 1 + 3 + 1 of order 1, 3 + 1 + 3 of order 2
    12
    >>> reports = mechanism.randomize(np.arange(12), np.random.default_rng(0))
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (0, 1)).shape
    (2, 3)
    >>> law = InpHT(4, 1.0, [2, 2], 1).exact_law(3)
    >>> law.outputs.tolist(), law.total == 2 * 2**52
    ([0, 1, 2, 3], True)
    """

    kind = "inp_ht"

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        everything = tuple(range(self.n_attributes))
        self._check_code_bits(sum(self.attribute_bits), "the binary codes of the record")
        _, self._shifts = self._code_layout(everything)
        masks = []
        for order in range(1, self.max_order + 1):
            for members in combinations(everything, order):
                parts = [np.arange(1, 2 ** self.attribute_bits[a], dtype=np.int64)
                         << self._shifts[a] for a in members]
                grids = np.meshgrid(*parts, indexing="ij")
                masks.append(np.sum(grids, axis=0).ravel())  # disjoint bits: sum = or
        self.coefficient_masks = np.concatenate(masks)
        self.n_coefficients = int(self.coefficient_masks.shape[0])
        self.n_outputs = 2 * self.n_coefficients
        self._mask_order = np.argsort(self.coefficient_masks)
        self._codes_are_indices = all(2**b == r for b, r in
                                      zip(self.attribute_bits, self.shape, strict=True))

    def _record_codes(self, indices):
        if self._codes_are_indices:
            return indices
        codes = np.zeros_like(indices)
        for position, code in self._attribute_codes(indices):
            codes |= code << self._shifts[position]
        return codes

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        coefficient = rng.integers(0, self.n_coefficients, size=n_users)  # exact (Lemire)
        parity = hadamard_parity(self.coefficient_masks[coefficient], self._record_codes(indices))
        bits = self._reported_bits(rng, parity)
        return (2 * coefficient + bits).astype(report_dtype(self.n_outputs))

    def exact_law(self, value):
        check_law_size(self.n_outputs, self.name)
        code = self._record_codes(np.array([_one_cell(value, self.n_inputs)]))
        positive = hadamard_parity(self.coefficient_masks, code) == 0
        return ExactLaw(np.arange(self.n_outputs).astype(report_dtype(self.n_outputs)),
                        self._sign_weights(positive),
                        self.n_coefficients * 2**TABLE_PRECISION)

    # ------------------------------------------------------------------ server side
    def coefficient_estimates(self, statistic):
        """``F_hat[t]``: the debiased mean sign of the users who sampled coefficient ``t``.

        Parameters
        ----------
        statistic : array-like of shape (2 * n_coefficients,)
            The output of :meth:`aggregate`, or a sum of several.

        Returns
        -------
        ndarray of shape (n_coefficients,)
            ``(plus - minus) / ((plus + minus) (2p - 1))`` per coefficient: an unbiased
            estimate of the Fourier coefficient ``F[coefficient_masks[t]]`` of the users'
            distribution, 0 for a coefficient that no user sampled.
        """
        statistic = check_output_counts(statistic, self.n_outputs, self.name).astype(float)
        return self._debiased(statistic[1::2], statistic[0::2])

    def estimate_marginal(self, statistic, attributes):
        attributes = self._check_attributes(attributes)
        estimates = self.coefficient_estimates(statistic)
        local = np.arange(2 ** sum(self.attribute_bits[a] for a in attributes), dtype=np.int64)
        masks = self._embed_codes(local[1:], attributes, tuple(range(self.n_attributes)))
        sorted_masks = self.coefficient_masks[self._mask_order]
        coefficients = np.ones(local.shape[0])
        coefficients[1:] = estimates[self._mask_order[np.searchsorted(sorted_masks, masks)]]
        return self._hadamard_table(coefficients, attributes)

    def _cell_variance(self, attributes, n_users, table):
        return self._hadamard_variance(attributes, n_users, table,
                                       n_users / self.n_coefficients)

    def simulate_statistic(self, type_counts, rng):
        # The users of each type are split over the T coefficients by one multinomial draw
        # (in blocks of types), then each coefficient's true signs go through binomial
        # randomized response: O(n T) work, whatever the number of users.
        counts = check_type_counts(type_counts, self.n_inputs)
        types = np.flatnonzero(counts)
        true_plus = np.zeros(self.n_coefficients, dtype=np.int64)
        true_minus = np.zeros(self.n_coefficients, dtype=np.int64)
        uniform = np.full(self.n_coefficients, 1.0 / self.n_coefficients)
        block = max(1, SIMULATION_ENTRIES // self.n_coefficients)
        for rows in chunks(types.shape[0], block):
            chosen = types[rows]
            split = rng.multinomial(counts[chosen], uniform)  # (types, T)
            negative = hadamard_parity(self.coefficient_masks[None, :],
                                       self._record_codes(chosen)[:, None]).astype(bool)
            plus, minus = self._true_signs(split, negative)
            true_plus += plus
            true_minus += minus
        statistic = np.empty(self.n_outputs, dtype=np.int64)
        statistic[1::2], statistic[0::2] = self._reported_signs(true_plus, true_minus, rng)
        return statistic

    def strategy_matrix(self):
        check_dense_size(self.n_outputs, self.n_inputs, self.name)
        codes = cell_bit_strings(self.shape, self._shifts)
        positive = hadamard_parity(self.coefficient_masks[:, None], codes[None, :]) == 0
        return self._sign_rows(positive, self.n_coefficients)
