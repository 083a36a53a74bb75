"""Randomized response (k-RR, direct encoding): the strategy matrix and the structured oracle.

A user of type ``u`` reports ``u`` with probability ``e^eps / (e^eps + n - 1)`` and each other
type with probability ``1 / (e^eps + n - 1)``.
"""

import numpy as np

from .._validation import check_dense_size, check_epsilon, check_positive_int
from .base import (
    check_type_counts,
    check_type_indices,
    chunks,
    count_total,
    index_report_validity,
    register,
    report_dtype,
    totals_differ,
)
from .support import SupportOracle

# Types whose users are spread at once by the exact simulation (memory O(n * block)).
SIMULATION_BLOCK = 256


def randomized_response_strategy(n, epsilon):
    """The ``n x n`` randomized response strategy ``(1 1^T + (e^eps - 1) I) / (e^eps + n - 1)``.

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
class RandomizedResponse(SupportOracle):
    """k-ary randomized response (direct encoding), structured: any domain size.

    A user of type ``u`` reports ``u`` with probability ``p = e^eps / (e^eps + n - 1)`` and
    each other type with probability ``q = 1 / (e^eps + n - 1)``; a report is one cell index
    (the smallest unsigned integer type that holds it). The report supports its own cell
    only, so ``r_own = r_other = 0``, and the estimate ``(C - q N) / (p - q)`` is the
    inverse of the strategy matrix applied to the counts (the optimal reconstruction).

    Parameters
    ----------
    n_inputs : int
        Domain size ``n``.
    epsilon : float

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = RandomizedResponse(4, 1.0)
    >>> reports = mechanism.randomize(np.array([0, 1, 1, 3]), np.random.default_rng(0))
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (4,)
    """

    kind = "randomized_response"

    def __init__(self, n_inputs, epsilon):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.epsilon = check_epsilon(epsilon)
        self.name = "randomized_response"
        self.params = {}
        e = np.exp(self.epsilon)
        self.p = e / (e + self.n_inputs - 1)
        self.q = 1.0 / (e + self.n_inputs - 1)
        self.pair_own = 0.0  # a report supports a single cell
        self.pair_other = 0.0

    def randomize(self, indices, rng):
        """One report per user: keep the type with probability ``p``, else a uniform other."""
        indices = check_type_indices(indices, self.n_inputs)
        if self.n_inputs == 1:
            return np.zeros(indices.shape[0], dtype=np.uint8)
        keep = rng.random(indices.shape[0]) < self.p
        other = rng.integers(0, self.n_inputs - 1, size=indices.shape[0])
        other += other >= indices  # uniform over the n - 1 cells other than the user's own
        return np.where(keep, indices, other).astype(report_dtype(self.n_inputs))

    def report_validity(self, reports):
        """Every cell index in ``[0, n)`` is a valid report, and nothing else."""
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
        """Exact draw of the counts: kept reports are binomial, the others multinomial.

        ``O(n^2)`` time (users of each type spread over the other ``n - 1`` cells), in
        blocks of types so that memory stays ``O(n * SIMULATION_BLOCK)``.
        """
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
        return randomized_response_strategy(self.n_inputs, self.epsilon)
