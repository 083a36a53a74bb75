"""Randomized response (k-RR, direct encoding): the strategy matrix and the structured oracle.

A user of type ``u`` reports ``u`` with probability ``e^eps / (e^eps + n - 1)`` and each other
type with probability ``1 / (e^eps + n - 1)``: nominally. The mechanism samples the exact
two-weight law of :mod:`._ratio` (own cell weight ``a``, every other cell ``d = 2^s``,
``a / d <= e^eps`` decided on integers) from one exactly uniform integer per user, and its
estimator and variances use the realised ``p = a / Z`` and ``q = d / Z``, ``Z = a + (n-1) d``.
"""

import numpy as np

from ..._validation import check_dense_size, check_epsilon, check_positive_int
from .._base.counts import count_total, totals_differ
from .._base.exact import ExactLaw, check_law_size
from .._base.mechanism import (
    check_type_counts,
    check_type_indices,
    chunks,
    index_report_validity,
    register,
    report_dtype,
)
from .._base.ratio import ratio_law_weights, ratio_weights, sample_ratio_law
from .support import SupportOracle, oracle_docstring

# Types whose users are spread at once by the exact simulation (memory O(n * block)).
SIMULATION_BLOCK = 256


def randomized_response_strategy(n, epsilon):
    """The ``n x n`` randomized response strategy ``(1 1^T + (e^eps - 1) I) / (e^eps + n - 1)``.

    Entry ``Q[y, u]`` is the probability that a user of type ``u`` reports ``y``: ``e^eps``
    times more likely on the diagonal than anywhere else, so every ratio within a row is at
    most ``e^eps``.

    Parameters
    ----------
    n : int
        Domain size (the number of cells), at least 1.
    epsilon : float
        Privacy budget of one report, in ``(0, 50]``.

    Returns
    -------
    Q : ndarray of shape (n, n)
        The strategy matrix; each column is a probability distribution over the reports.

    Raises
    ------
    ValueError
        If ``n`` or ``epsilon`` is invalid, or the dense ``n x n`` matrix is too large.

    See Also
    --------
    RandomizedResponse : The mechanism itself, structured (no dense matrix, any ``n``).
    rappor_strategy : The strategy of symmetric unary encoding.
    hadamard_strategy : The strategy of Hadamard response.

    References
    ----------
    .. [1] S. L. Warner, "Randomized response: a survey technique for eliminating evasive
       answer bias", Journal of the American Statistical Association 60(309), 1965.
    .. [2] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
       for frequency estimation", USENIX Security 2017 (direct encoding).

    Examples
    --------
    >>> Q = randomized_response_strategy(3, np.log(2.0))
    >>> Q.round(2)
    array([[0.5 , 0.25, 0.25],
           [0.25, 0.5 , 0.25],
           [0.25, 0.25, 0.5 ]])
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    check_dense_size(n, n, "randomized_response")
    Q = np.full((n, n), 1.0 / (np.exp(epsilon) + n - 1))
    np.fill_diagonal(Q, np.exp(epsilon) / (np.exp(epsilon) + n - 1))
    return Q


def randomized_response_histogram_variance(n, epsilon):
    """Per-user variance of randomized response on the Histogram workload (closed form).

    ``(n - 1)(n + 2 e^eps - 2) / (e^eps - 1)^2``, the same for every user type.
    """
    e = np.exp(epsilon)
    return (n - 1) * (n + 2 * e - 2) / (e - 1) ** 2


@register
@oracle_docstring
class RandomizedResponse(SupportOracle):
    """Randomized response over ``n`` values (k-RR, direct encoding), for any domain size.

    A user of type ``u`` reports ``u`` with probability ``p = e^eps / (e^eps + n - 1)`` and
    each other type with probability ``q = 1 / (e^eps + n - 1)``; a report is one cell index
    (the smallest unsigned integer type that holds it). The report supports its own cell
    only, so ``r_own = r_other = 0``, and the estimate ``(C - q N) / (p - q)`` is the
    inverse of the strategy matrix applied to the counts (the optimal reconstruction).

    <oracle parameters: Domain size ``n``, at least 1.>

    Attributes
    ----------
    weights : tuple of int or None
        ``(a, d)``: the integer weights of one's own cell and of each other cell
        (:func:`~._ratio.ratio_weights`, ``a / d <= e^eps`` exactly); None when ``n = 1``.
    p : float
        Probability of reporting one's own cell, ``a / (a + (n - 1) d)`` (nominally
        ``e^eps / (e^eps + n - 1)``).
    q : float
        Probability of reporting each other cell, ``d / (a + (n - 1) d)``.
    pair_own, pair_other : float
        Both 0: a report supports a single cell.

    See Also
    --------
    randomized_response_strategy : The same mechanism as a dense ``n x n`` matrix.
    OptimizedUnaryEncoding : Less variance than randomized response on large domains.
    OptimizedLocalHashing : Unary encoding's variance with reports of two integers.
    SubsetSelection : Reports a set of ``k`` cells; order optimal when
        ``1 << e^eps << n``.

    References
    ----------
    .. [1] S. L. Warner, "Randomized response: a survey technique for eliminating evasive
       answer bias", Journal of the American Statistical Association 60(309), 1965.
    .. [2] P. Kairouz, K. Bonawitz and D. Ramage, "Discrete distribution estimation under
       local privacy", ICML 2016 (k-RR).
    .. [3] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
       for frequency estimation", USENIX Security 2017 (direct encoding, and the unbiased
       estimator of the pure protocols).

    Examples
    --------
    Ten thousand users in four cells; each sends one cell index.

    >>> import numpy as np
    >>> mechanism = RandomizedResponse(4, 1.0)
    >>> users = np.repeat([0, 1, 2, 3], [4000, 3000, 2000, 1000])
    >>> reports = mechanism.randomize(users, np.random.default_rng(0))
    >>> reports.dtype, reports[:6].tolist()
    (dtype('uint8'), [1, 0, 0, 2, 3, 1])
    >>> statistic = mechanism.aggregate(reports)  # reports per cell, then their number
    >>> statistic.tolist()
    [2954, 2659, 2336, 2051, 10000]
    >>> mechanism.estimate(statistic).round(-1)  # unbiased users per cell
    array([4010., 3030., 1950., 1010.])

    The standard deviation of each estimate, known before collecting (``per_user_variance``
    of the histogram, summed over the 10000 users):

    >>> float(np.sqrt(10000 * mechanism.per_user_variance(np.eye(4))[0]).round(1))
    274.9

    The exact law of one report (:meth:`exact_law`):

    >>> law = RandomizedResponse(3, 1.0).exact_law(2)
    >>> law.outputs.tolist(), law.weights[2] > law.weights[0] == law.weights[1]
    ([0, 1, 2], True)
    """

    kind = "randomized_response"

    def __init__(self, n_inputs, epsilon):
        self._set_domain_and_budget(n_inputs, epsilon)
        if self.n_inputs == 1:
            self.weights = None  # one output, reported by everybody
            self.p, self.q = 1.0, float(1.0 / np.exp(self.epsilon))
        else:
            # The exact privacy check of the integers sampled runs in ratio_weights.
            self.weights = ratio_weights(self.epsilon, 1, self.n_inputs - 1, self.name)
            a, d = self.weights
            total = a + (self.n_inputs - 1) * d
            self.p, self.q = a / total, d / total  # correctly rounded quotients of integers
        self.pair_own = 0.0  # a report supports a single cell
        self.pair_other = 0.0

    def randomize(self, indices, rng):
        # Keep the type with probability p, else a uniform other: one uniform integer in [0, a + (n
        # - 1) d) per user decides the report exactly (sample_ratio_law).
        indices = check_type_indices(indices, self.n_inputs)
        if self.n_inputs == 1:
            return np.zeros(indices.shape[0], dtype=np.uint8)
        a, d = self.weights
        keep, other = sample_ratio_law(rng, indices.shape[0], 1, self.n_inputs - 1, a, d)
        other += other >= indices  # uniform over the n - 1 cells other than the user's own
        return np.where(keep, indices, other).astype(report_dtype(self.n_inputs))

    def exact_law(self, value):
        # Every cell, in the report dtype: weight a for the user's own cell and d for the others,
        # total a + (n - 1) d.
        value = int(check_type_indices([value], self.n_inputs)[0])
        check_law_size(self.n_inputs, self.name)
        outputs = np.arange(self.n_inputs).astype(report_dtype(self.n_inputs))
        if self.weights is None:
            return ExactLaw(outputs, [1], 1)
        a, d = self.weights
        weights = ratio_law_weights(np.arange(self.n_inputs) == value, a, d)
        return ExactLaw(outputs, weights, sum(weights))

    def report_validity(self, reports):
        # Every cell index in [0, n) is a valid report, and nothing else.
        return index_report_validity(reports, self.n_inputs, self.name)

    def _support_counts(self, reports):
        return np.bincount(reports, minlength=self.n_inputs).astype(np.int64)

    def _check_support_totals(self, support, total):
        """Every report supports exactly one cell: the support counts sum to ``N``."""
        supported = count_total(support)
        if totals_differ(supported, total):
            raise ValueError(
                f"the statistic of {self.name!r} counts {total} reports, but its support "
                f"counts sum to {supported}: each report names exactly one cell, so the counts "
                "are inconsistent (corrupted or crafted)."
            )

    def _support_extremes(self, centered):
        """A report supports one cell: the extremes are the row's smallest and largest
        entries, attained by reporting that cell."""
        low_cells, high_cells = np.argmin(centered, axis=1), np.argmax(centered, axis=1)
        rows = np.arange(centered.shape[0])
        dtype = report_dtype(self.n_inputs)
        return (centered[rows, low_cells], centered[rows, high_cells], low_cells.astype(dtype),
                high_cells.astype(dtype), True)

    def simulate_statistic(self, type_counts, rng):
        # Kept reports are binomial, the others multinomial. A simulation (no report leaves a
        # device): numpy's floating-point binomial and multinomial draws with the realised p, not
        # the integer sampler of randomize. O(n^2) time (users of each type spread over the other n
        # - 1 cells), in blocks of types so that memory stays O(n * SIMULATION_BLOCK).
        counts = check_type_counts(type_counts, self.n_inputs)
        n = self.n_inputs
        kept = rng.binomial(counts, self.p)
        support = kept.astype(np.int64)
        if n > 1:
            moved = counts - kept
            uniform = np.full(n - 1, 1.0 / (n - 1))
            for block in chunks(n, SIMULATION_BLOCK):
                types = np.arange(n)[block]
                spread = rng.multinomial(moved[block], uniform)  # (block, n - 1)
                # Slot s of type t is cell s + [s >= t] (each type skips its own cell): cell c
                # receives slot c of the types above it and slot c - 1 of those below, summed
                # in int64 (a float bincount would round counts past 2^53).
                above = types[:, None] > np.arange(n - 1)[None, :]
                support[:n - 1] += np.sum(np.where(above, spread, 0), axis=0)
                support[1:] += np.sum(np.where(above, 0, spread), axis=0)
        # Every count is at most the total, at most 2^62 (check_type_counts): no sum wraps.
        return np.append(support, np.int64(counts.sum()))

    def strategy_matrix(self):
        """The ``n x n`` matrix of the realised law (``p`` on the diagonal, ``q`` elsewhere).

        Returns
        -------
        Q : ndarray of shape (n, n)
            ``Q[y, u]``, the probability that a user of type ``u`` reports ``y``.
        """
        check_dense_size(self.n_inputs, self.n_inputs, self.name)
        Q = np.full((self.n_inputs, self.n_inputs), self.q)
        np.fill_diagonal(Q, self.p)
        return Q
