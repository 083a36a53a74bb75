"""Frequency oracles of the "pure" family: each report *supports* a set of cells.

Wang, Blocki, Li, Jha (USENIX Security 2017) describe k-RR, unary encoding, local hashing
and subset selection the same way: a report ``y`` supports the cells ``S(y)``, with

    P(u in S(y) | type u) = p,        P(j in S(y) | type u) = q   for j != u.

The server counts ``C_j = #{reports supporting j}`` and ``N`` reports; ``(C - q N) / (p - q)``
is unbiased. We then use the known total ``N`` (every user has exactly one type) by
subtracting the mean excess from every cell, ``x = x - (sum(x) - N) / n``: still unbiased
(Wang et al. 2020 call it "Norm"), and on workloads with long queries much better (Prefix
n = 8, eps = 1, symmetric unary encoding: worst-case variance 141.0 -> 41.1; k-RR is unchanged, its
estimate already sums to ``N``).

Exact variance. With ``X = (s - q 1) / (p - q)`` the one-report estimate (``s`` the support
indicator vector), ``E[X X^T | u]`` depends only on ``p``, ``q`` and the two pair
probabilities

    r_own   = P(u in S and j in S | type u),          j != u
    r_other = P(j in S and k in S | type u),          j != k, both != u

which each mechanism supplies. The centered estimate is ``P X + 1/n`` with ``P = I - 11^T/n``,
so a query ``w`` has per-user variance ``w'^T Cov(X | u) w'`` with ``w' = P w``; because
``sum(w') = 0`` it reduces to

    z[w, u] = ((a0 - b0) ||w'||^2 + (a1 - a0 - 2 (b1 - b0)) w'_u^2) / (p - q)^2 - w'_u^2

with ``a0 = q(1-q)``, ``a1 = p(1-p) + (p-q)^2``, ``b0 = r_other - q^2``, ``b1 = r_own - p q``.
For a workload with Gram ``G`` the same holds with ``||w'||^2 -> tr(P G P)`` and
``w'_u^2 -> (P G P)_uu``. This is exact at every data distribution, not only for rare items.

Structure. ``(P G P)_uu = G_uu - 2 (G 1)_u / n + 1^T G 1 / n^2``: only ``diag(G)``, ``G 1`` and
``1^T G 1`` are needed, ``O(n)`` from a structured Gram (``n = 2^20`` and more). Per query,
``||w'||^2 = ||w||^2 - (w . 1)^2 / n`` and the extremes of ``w'_u^2`` over ``u`` come from the
row's norm, sum and extreme entries (``query_stats``), so the worst and average variance of
each query cost ``O(1)`` (:meth:`SupportOracle.query_variance_summary`).

Pure numpy; no scikit-learn here.
"""

import numpy as np

from .._base.counts import check_count_values, totals_differ
from .._base.docstrings import shared_sections
from .._base.influence import ReportInfluence
from .._base.mechanism import Mechanism, check_workload_matrix, chunks
from .._base.workload_ops import centered_square_extremes, check_gram, check_workload_width

# The docstring sections the oracles share: ``<oracle parameters: description of n_inputs>``
# and ``<wang17 reference>`` (the paper that describes the family).
oracle_docstring = shared_sections({
    "oracle parameters": lambda n_inputs: f"""\
Parameters
----------
n_inputs : int
    {n_inputs}
epsilon : float
    Privacy budget of one report, in ``(0, 50]``.""",
    "wang17 reference": """\
References
----------
.. [1] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
   for frequency estimation", USENIX Security 2017.""",
})


class SupportOracle(Mechanism):
    """Base class: subclasses set ``p``, ``q``, ``pair_own``, ``pair_other`` in ``__init__``
    and implement ``randomize``, ``check_reports`` and ``_support_counts(reports)``.

    The statistic is ``[C_0, ..., C_{n-1}, N]`` (int64).
    """

    def _support_counts(self, reports):
        """``C_j`` for a chunk of (already checked) reports, as int64."""
        raise NotImplementedError

    def aggregate(self, reports):
        # Checked against the valid-report set first, then counted in chunks of AGGREGATE_CHUNK rows
        # (bounded memory): [C_0, ..., C_{n-1}, N], C_j the number of reports whose support set
        # contains cell j.
        reports = self.check_reports(reports)
        counts = np.zeros(self.n_inputs, dtype=np.int64)
        for rows in chunks(reports.shape[0]):
            counts += self._support_counts(reports[rows])
        return np.append(counts, np.int64(reports.shape[0]))

    def n_reports(self, statistic):
        # The statistic's last entry, N (rounded to the nearest integer for an expected,
        # floating-point statistic).
        return int(round(self._check_statistic(statistic)[-1].item()))

    def _check_statistic(self, statistic):
        """The statistic as int64, or a ValueError: wrong length, entries that are no counts
        (:func:`~.base.check_count_values`), or support counts that no set of ``N`` reports
        can produce (:meth:`_check_support_totals`)."""
        statistic = np.asarray(statistic)
        if statistic.shape != (self.n_inputs + 1,):
            raise ValueError(
                f"the statistic of {self.name!r} has {self.n_inputs + 1} entries (support "
                f"counts and the number of reports), got shape {statistic.shape}."
            )
        statistic = check_count_values(statistic, self.name)
        self._check_support_totals(statistic[:-1], statistic[-1].item())
        return statistic

    def _check_support_totals(self, support, total):
        """Refuse support counts inconsistent with ``total`` reports: a report supports a
        cell at most once, so no count exceeds the number of reports. Subclasses whose
        reports support a fixed number of cells check the sum too."""
        if support.size and support.max() > total and totals_differ(support.max().item(), total):
            cell = int(np.argmax(support))
            raise ValueError(
                f"the statistic of {self.name!r} counts {total} reports, but cell {cell} is "
                f"supported by {support[cell]} of them: a report supports a cell at most once, "
                "so the counts are inconsistent (corrupted or crafted)."
            )

    # ------------------------------------------------------------------ poisoning
    def _support_extremes(self, centered):
        """Per row ``c`` of ``centered`` (zero-mean queries), the smallest and largest
        ``c . s`` over the support indicators ``s`` of the valid reports, and reports that
        attain them: ``(low, high, low_reports, high_reports, exact)``.

        This default lets ``s`` be any subset of the cells, an upper bound for every oracle
        (its own valid set is a family of subsets), with no report constructed. Oracles
        whose valid set is known exactly override it.
        """
        low = np.minimum(centered, 0.0).sum(axis=1)
        high = np.maximum(centered, 0.0).sum(axis=1)
        return low, high, None, None, False

    def report_influence(self, workload_matrix):
        # A report with support set S adds 1_S to the support counts and 1 to N; through (C - q N) /
        # (p - q) and the known-total step it changes w . x_hat by (w' . 1_S) / (p - q) + mean(w),
        # w' = w - mean(w) (the q N terms cancel against the known-total correction). So the
        # extremes are those of w' . 1_S over the valid reports' support sets; exact is False where
        # they are bounds over every subset of the cells.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        mean = W.mean(axis=1)
        low, high, low_reports, high_reports, exact = self._support_extremes(W - mean[:, None])
        scale = self.p - self.q
        return ReportInfluence(low / scale + mean, high / scale + mean, low_reports,
                               high_reports, exact)

    def estimate(self, statistic):
        """Unbiased estimate of the number of users in each cell.

        ``(C - q N) / (p - q)`` is unbiased for the data vector; every user has exactly one
        type, so the excess of its sum over ``N`` is then subtracted evenly from every cell
        (``x - (sum(x) - N) / n``), which keeps it unbiased, makes it sum to ``N`` and lowers
        the variance of long queries (Wang et al. 2020, "Norm").

        Parameters
        ----------
        statistic : array-like of shape (n_cells + 1,)
            The output of :meth:`aggregate`, or a sum of several: support counts followed by
            the number of reports. Integer counts, or finite non-negative floats for an
            expected statistic.

        Returns
        -------
        ndarray of shape (n_cells,)
            Estimated users per cell (floats summing to ``N``; some may be negative).

        Raises
        ------
        ValueError
            If the statistic has the wrong length, holds entries that are not counts
            (negative, non-finite, non-integer dtype, above ``2^62``), or a support count
            exceeds the number of reports (or, for oracles whose reports support a fixed
            number of cells, the counts do not sum to that number times ``N``).

        References
        ----------
        .. [1] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private
           protocols for frequency estimation", USENIX Security 2017 (the support-count
           estimator).
        .. [2] T. Wang, M. Lopuhaä-Zwakenberg, Z. Li, B. Skoric and N. Li, "Locally
           differentially private frequency estimation with consistency", NDSS 2020 (the
           known-total step, "Norm").
        """
        statistic = self._check_statistic(statistic)
        support, total = statistic[:-1].astype(float), float(statistic[-1])
        x_hat = (support - self.q * total) / (self.p - self.q)
        return x_hat - (x_hat.sum() - total) / self.n_inputs

    # ------------------------------------------------------------------ exact variance
    def _variance_coefficients(self):
        """``(c_norm, c_own)`` with ``z = c_norm ||w'||^2 + c_own w'_u^2`` (see the module)."""
        p, q = self.p, self.q
        a0, a1 = q * (1 - q), p * (1 - p) + (p - q) ** 2
        b0, b1 = self.pair_other - q * q, self.pair_own - p * q
        scale = (p - q) ** 2
        return (a0 - b0) / scale, (a1 - a0 - 2 * (b1 - b0)) / scale - 1.0

    def per_user_variance(self, gram):
        # z_u = c_norm tr(P G P) + c_own (P G P)_uu with P = I - 11^T/n (module docstring), in O(n)
        # from diag(G), G 1 and 1^T G 1 only, so a structured Gram over millions of cells is never
        # densified.
        gram = check_gram(gram, self.n_inputs)
        n = self.n_inputs
        # Diagonal and trace of P G P without forming it: (PGP)_uu = G_uu - 2 mean_u + mean.
        row_means = gram.row_sums() / n
        centered_diagonal = gram.diagonal() - 2 * row_means + gram.total() / (n * n)
        c_norm, c_own = self._variance_coefficients()
        return c_norm * centered_diagonal.sum() + c_own * centered_diagonal

    def query_variance_summary(self, workload):
        # From query_stats() in O(p): z = c_norm ||w'||^2 + c_own w'_u^2 is largest where w'_u^2 is
        # (c_own >= 0) or smallest (otherwise); rows whose smallest w'_u^2 the statistics do not
        # determine (c_own < 0 and a row with more than two distinct values) are reduced from their
        # dense rows.
        check_workload_width(workload, self.n_inputs)
        c_norm, c_own = self._variance_coefficients()
        largest, smallest, average = centered_square_extremes(workload)
        spread = c_norm * self.n_inputs * average  # c_norm ||w'||^2
        # c_own is 0 for symmetric unary encoding up to rounding: a negative rounding error
        # changes z by at most 1e-12 of c_norm ||w'||^2 >= c_norm w'_u^2, so use the extremes.
        increasing = c_own >= -1e-12 * abs(c_norm)
        worst = spread + c_own * (largest if increasing else smallest)
        mean = spread + c_own * average
        unresolved = np.isnan(worst)
        if unresolved.any():
            worst[unresolved] = self._summary_from_rows(workload, only=unresolved)[0][unresolved]
        return worst, mean

    def query_variance(self, workload_matrix):
        # Entry [i, u] is c_norm ||w'||^2 + c_own w'_u^2 with w' = w - mean(w) the centered query i
        # (module docstring).
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        centered = W - W.mean(axis=1, keepdims=True)
        c_norm, c_own = self._variance_coefficients()
        return c_norm * np.sum(centered**2, axis=1, keepdims=True) + c_own * centered**2
