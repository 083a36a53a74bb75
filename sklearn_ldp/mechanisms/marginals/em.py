"""InpEM: the baseline of thesis chapter 4 (Fanti et al., RAPPOR joint distributions).

Client. Every attribute goes independently through k-ary randomized response with budget
``eps / d`` (``d`` the number of attributes): attribute ``i`` keeps its category with
probability ``p_i = e^{eps/d} / (e^{eps/d} + r_i - 1)``, else reports each other category
with ``q_i = 1 / (e^{eps/d} + r_i - 1)``. The report is the noisy record. By sequential
composition over the ``d`` attributes the whole record is exactly ``eps``-LDP (the channel
is the Kronecker product of the per-attribute channels, so the ratio of any output is the
product of ``d`` ratios, each at most ``e^{eps/d}``). Splitting the budget ``d`` ways is what
makes this baseline weak (digest section 0, "sample, don't split").

Server. The statistic holds the noisy counts of every ``max_order``-set's table; a
lower-order table is the sum of any containing set's table (all are the same reports).

* :meth:`InpEM.estimate_marginal` is the unbiased inverse decoder: the noisy fractions with
  every axis ``a`` mapped by the inverse of its channel, ``x = (y - q_a sum_a y) / (p_a -
  q_a)`` (one vectorized step per axis, the Kronecker structure).
* :meth:`InpEM.em_marginal` is the thesis's expectation-maximization (Algorithm 3): from the
  uniform prior, iterate ``P <- P * Q^T (observed / (Q P))`` (``Q`` the Kronecker channel,
  applied axis by axis; it is symmetric) until ``max |P_new - P| <= tol`` or ``max_iter``.
  The failure mode the thesis reports (Table 4.2): at small ``eps / d`` the first step moves
  the uniform prior by less than ``tol``, so EM stops at once and returns (almost) the prior;
  ``info["stuck_at_prior"]`` flags it.

Exact variance of the unbiased decoder (fixed population). One user's contribution to cell
``c`` is ``Z = prod_a (1[y_a = c_a] - q_a) / (p_a - q_a)``, a product of independent factors
with ``E Z = 1[u = c]`` and second moment ``s1_a = (p_a (1 - q_a)^2 + (1 - p_a) q_a^2) / (p_a
- q_a)^2`` per attribute where ``u_a = c_a``, ``s0_a = q_a (1 - q_a) / (p_a - q_a)^2`` where
not. Hence

    Var(x_c) = ( sum_e m_e prod_a K_a[e_a, c_a] - m_c ) / N,   K_a = s0_a 1 1^T + (s1_a - s0_a) I,

the true marginal ``m`` mapped axis by axis: exact, and computed from the marginal alone.

Pure numpy; no scikit-learn here.
"""

import math

import numpy as np

from ..._validation import check_dense_size, check_positive_int
from .._base.counts import report_count
from .._base.exact import ExactLaw, check_law_size
from .._base.mechanism import (
    check_output_counts,
    check_type_indices,
    chunks,
    index_report_validity,
    register,
    report_dtype,
)
from ..multi_attribute.mechanisms import check_composed_budget, oracle_worst_ratio, split_budget
from ..oracles.randomized_response import RandomizedResponse
from .base import _MarginalsOnlyMechanism, _one_cell, marginal_docstring


def _apply_per_axis(table, diagonal, off_diagonal):
    """``table`` with every axis ``j`` mapped by ``off_diagonal[j] 1 1^T + (diagonal[j] -
    off_diagonal[j]) I`` (a Kronecker product of symmetric per-axis matrices)."""
    for axis, (same, other) in enumerate(zip(diagonal, off_diagonal, strict=True)):
        table = other * table.sum(axis=axis, keepdims=True) + (same - other) * table
    return table


@register
@marginal_docstring
class InpEM(_MarginalsOnlyMechanism):
    """InpEM: per-attribute randomized response with ``eps / d`` each; EM or unbiased decoding.

    Reports: one integer per user (smallest unsigned integer type), the flat C-order index of
    the noisy record (every attribute randomized independently, see the module docstring).

    Statistic: the noisy counts of every ``max_order``-set's table (C order over the set's
    attributes), concatenated in ``attribute_sets(max_order)`` order (``cell_offsets``).

    <marginal parameters>

    Attributes
    ----------
    attribute_oracles : list of RandomizedResponse
        The channel of each attribute (``eps / d``).

    See Also
    --------
    InpHT : The recommended marginal mechanism (much less error).
    InpPS : Randomized response over the whole record, with the full budget.
    MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

    References
    ----------
    .. [1] G. Fanti, V. Pihur and U. Erlingsson, "Building a RAPPOR with the unknown:
       privacy-preserving learning of associations and data dictionaries", Proceedings on
       Privacy Enhancing Technologies (PoPETs) 2016(3) (joint distributions by EM).
    .. [2] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018 (InpEM as the baseline).
    .. [3] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4, Algorithm 3.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = InpEM(12, 3.0, [2, 3, 2], 2)
    >>> rng = np.random.default_rng(0)
    >>> statistic = mechanism.aggregate(mechanism.randomize(np.zeros(5000, int), rng))
    >>> table, info = mechanism.em_marginal(statistic, (0, 1))
    >>> table.shape, info["converged"], info["stuck_at_prior"]
    ((2, 3), True, False)
    >>> bool(np.allclose(mechanism.estimate_marginal(statistic, (0, 1))[0], [1, 0, 0], atol=0.1))
    True
    """

    kind = "inp_em"

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        # eps / d per attribute, lowered by float steps until the product of the sampled
        # worst ratios is within e^eps, decided on the integers (split_budget), then checked.
        self.share, self.attribute_oracles = split_budget(
            self.epsilon, self.n_attributes,
            lambda share: [RandomizedResponse(size, share) for size in self.shape])
        check_composed_budget([oracle_worst_ratio(oracle) for oracle in self.attribute_oracles],
                              self.epsilon, "InpEM over every attribute")
        self.sets = self.attribute_sets(self.max_order)
        self.set_cells, self._strides = self._set_tables(self.sets)
        self.cell_offsets = np.concatenate([[0], np.cumsum(self.set_cells)]).astype(np.int64)
        record_strides = [math.prod(self.shape[a + 1:]) for a in range(self.n_attributes)]
        self._record_strides = np.array(record_strides, dtype=np.int64)

    def attribute_channel(self, position):
        """The ``r x r`` channel ``P(noisy category | category)`` of one attribute.

        Parameters
        ----------
        position : int
            The attribute's position, in ``[0, n_attributes)``.

        Returns
        -------
        ndarray of shape (r, r)
            ``p_i`` on the diagonal and ``q_i`` elsewhere (``r = shape[position]``).
        """
        return self.attribute_oracles[position].strategy_matrix()

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        indices = check_type_indices(indices, self.n_inputs)
        noisy = np.zeros(indices.shape[0], dtype=np.int64)
        for position, code in self._attribute_codes(indices):
            reported = self.attribute_oracles[position].randomize(code, rng)
            noisy += reported.astype(np.int64) * self._record_strides[position]
        return noisy.astype(report_dtype(self.n_inputs))

    def exact_law(self, value):
        # The product of the attributes' exact randomized-response laws: outputs the flat
        # noisy cells 0 .. n - 1, weights the products of the attributes' integer weights.
        check_law_size(self.n_inputs, self.name)
        codes = np.unravel_index(_one_cell(value, self.n_inputs), self.shape)
        laws = [oracle.exact_law(int(code)) for oracle, code in
                zip(self.attribute_oracles, codes, strict=True)]
        weights = np.array([1], dtype=object)
        for law in laws:  # C order: the last attribute varies fastest
            weights = np.multiply.outer(weights, np.array([int(w) for w in law.weights],
                                                          dtype=object)).ravel()
        return ExactLaw(np.arange(self.n_inputs).astype(report_dtype(self.n_inputs)),
                        [int(w) for w in weights], math.prod(int(law.total) for law in laws))

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        return index_report_validity(reports, self.n_inputs, self.name)

    def aggregate(self, reports):
        reports = self.check_reports(reports)
        total_cells = int(self.cell_offsets[-1])
        counts = np.zeros(total_cells, dtype=np.int64)
        for rows in chunks(reports.shape[0]):
            codes = np.empty((self.n_attributes, rows.stop - rows.start), dtype=np.int64)
            for position, code in self._attribute_codes(reports[rows].astype(np.int64)):
                codes[position] = code
            for index in range(len(self.sets)):  # one bincount per attribute set
                cells = self._strides[index] @ codes
                counts[self.cell_offsets[index]:self.cell_offsets[index + 1]] += np.bincount(
                    cells, minlength=int(self.set_cells[index]))
        return counts

    def _check_statistic(self, statistic):
        return check_output_counts(statistic, int(self.cell_offsets[-1]), self.name)

    def n_reports(self, statistic):
        return report_count(self._check_statistic(statistic)[: self.cell_offsets[1]])

    def noisy_marginal(self, statistic, attributes):
        """Noisy counts over ``attributes`` (from the first ``max_order``-set containing them).

        Parameters
        ----------
        statistic : array-like of shape (cell_offsets[-1],)
            The output of :meth:`aggregate`, or a sum of several.
        attributes : tuple of int
            Sorted distinct attribute positions, ``1 <= len <= max_order``.

        Returns
        -------
        ndarray of shape ``tuple(shape[a] for a in attributes)``
            The number of noisy records in each cell of the marginal (before decoding).
        """
        attributes = self._check_attributes(attributes)
        statistic = self._check_statistic(statistic)
        wanted = set(attributes)
        index = next(i for i, members in enumerate(self.sets) if wanted <= set(members))
        members = self.sets[index]
        table = statistic[self.cell_offsets[index]:self.cell_offsets[index + 1]].reshape(
            tuple(self.shape[a] for a in members))
        return table.sum(axis=tuple(j for j, a in enumerate(members) if a not in wanted))

    def _channel_terms(self, attributes):
        return ([self.attribute_oracles[a].p for a in attributes],
                [self.attribute_oracles[a].q for a in attributes])

    def estimate_marginal(self, statistic, attributes):
        # The unbiased inverse decoder: every axis mapped by its channel's inverse (uniform
        # when the statistic counts no report).
        attributes = self._check_attributes(attributes)
        noisy = self.noisy_marginal(statistic, attributes).astype(float)
        n_users = noisy.sum()
        if n_users == 0:
            return np.full(noisy.shape, 1.0 / noisy.size)
        p, q = self._channel_terms(attributes)
        # (p - q)^-1 (I - q 1 1^T) inverts p I + q (1 1^T - I) on each axis.
        scale = [1.0 / (pa - qa) for pa, qa in zip(p, q, strict=True)]
        return _apply_per_axis(noisy / n_users,
                               [(1 - qa) * s for qa, s in zip(q, scale, strict=True)],
                               [-qa * s for qa, s in zip(q, scale, strict=True)])

    def em_marginal(self, statistic, attributes, tol=1e-5, max_iter=10000):
        """Expectation-maximization estimate of the marginal (thesis Algorithm 3).

        Parameters
        ----------
        statistic : ndarray
            The output of :meth:`aggregate`, or a sum of several.
        attributes : tuple of int
            Sorted distinct attribute positions, ``1 <= len <= max_order``.
        tol : float, default=1e-5
            Stop when no cell moves by more than ``tol`` in one iteration.
        max_iter : int, default=10000
            The largest number of iterations.

        Returns
        -------
        table : ndarray of the marginal's shape
            The estimated fractions: non-negative and summing to 1, but biased (towards the
            uniform prior when the noise is large).
        info : dict
            ``n_iter``; ``converged`` (the change fell below ``tol``); ``stuck_at_prior``
            (EM stopped after its first step, so the table is within ``tol`` of the uniform
            prior: the failure the thesis reports at small epsilon).
        """
        attributes = self._check_attributes(attributes)
        if not (isinstance(tol, (int, float)) and tol > 0 and math.isfinite(tol)):
            raise ValueError(f"tol must be a positive number, got {tol!r}.")
        max_iter = check_positive_int(max_iter, "max_iter")
        noisy = self.noisy_marginal(statistic, attributes).astype(float)
        table = np.full(noisy.shape, 1.0 / noisy.size)
        if noisy.sum() == 0:
            return table, {"n_iter": 0, "converged": False, "stuck_at_prior": True}
        observed = noisy / noisy.sum()
        p, q = self._channel_terms(attributes)
        converged, n_iter = False, 0
        while n_iter < max_iter:
            n_iter += 1
            predicted = _apply_per_axis(table, p, q)
            ratio = np.divide(observed, predicted, out=np.zeros_like(observed),
                              where=predicted > 0)
            updated = table * _apply_per_axis(ratio, p, q)  # the channel is symmetric
            change = np.max(np.abs(updated - table))
            table = updated
            if change <= tol:
                converged = True
                break
        return table, {"n_iter": n_iter, "converged": converged,
                       "stuck_at_prior": converged and n_iter == 1}

    def _cell_variance(self, attributes, n_users, table):
        p, q = self._channel_terms(attributes)
        same = [(pa * (1 - qa) ** 2 + (1 - pa) * qa**2) / (pa - qa) ** 2
                for pa, qa in zip(p, q, strict=True)]
        other = [qa * (1 - qa) / (pa - qa) ** 2 for pa, qa in zip(p, q, strict=True)]
        return (_apply_per_axis(table, same, other) - table) / n_users

    def strategy_matrix(self):
        """``P(noisy record | record)``: the Kronecker product of the attribute channels.

        Returns
        -------
        ndarray of shape (n_inputs, n_inputs)
            Column-stochastic and symmetric: entry ``[y, u]`` is the probability that the
            record in cell ``u`` is reported as cell ``y``.

        Raises
        ------
        ValueError
            If the dense matrix would exceed the size cap.
        """
        check_dense_size(self.n_inputs, self.n_inputs, self.name)
        Q = np.ones((1, 1))
        for position in range(self.n_attributes):
            Q = np.kron(Q, self.attribute_channel(position))
        return Q
