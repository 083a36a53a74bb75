"""Consistent grids and range-query answers of TDG and HDG (Yang et al., VLDB 2020).

From the unbiased grid frequencies of
:class:`~sklearn_ldp.mechanisms.multi_range.grids.GridRangeMechanism`, in the paper's order:

1. **Non-negativity** (Norm-Sub, Wang et al. NDSS 2020): every grid's fractions shifted by
   one constant and cut at 0 so that they are non-negative and sum to 1.
2. **Consistency**: every grid that holds an attribute gives that attribute's distribution at
   the ``g2`` cells of the 2-D grids; they are replaced by their weighted average, the weight
   of a grid ``1 / C`` where ``C`` is the number of its cells summed into one ``g2`` cell
   (``g1 / g2`` for a 1-D grid, ``g2`` for a 2-D grid: the inverse of the variance's scale),
   and each grid's cells move by their share of the difference. Steps 1 and 2 alternate
   ``n_rounds`` times and end with step 1.
3. **Response matrices** (HDG): for each pair of attributes, a ``g1 x g1`` table of
   fractions, fitted to both attributes' 1-D grids and to the pair's 2-D grid by iterative
   proportional scaling (the paper's "weighted update") from the uniform table. TDG uses the
   2-D grid itself (``g2 x g2``).

Answers assume the values spread uniformly within a cell: a range covers each cell by the
fraction of its width inside the range. A query of one attribute is answered by its 1-D
grid (HDG) or the mean of the pairs' marginals (TDG); of two, by the pair's table; of
``lambda > 2`` attributes, by the maximum-entropy table of the ``2^lambda`` in/out
combinations whose every pair of attributes has the 2 x 2 table (in/out of each) that the
pair's answers give, fitted by iterative proportional scaling (the paper's weighted update,
which fits the in/in cell of each pair; fitting the whole 2 x 2 table of each pair also
keeps each attribute's own fraction).
"""

from itertools import combinations

import numpy as np

# Rounds of Norm-Sub and consistency (the paper alternates them a few times).
N_ROUNDS = 5
# Iterative proportional scaling: at most this many sweeps, until the table moves less than
# TOLERANCE in total (as a fraction of the users).
MAX_SWEEPS = 200
TOLERANCE = 1e-7
# Boxes of more columns than this are refused (their table has 2^lambda cells per box), and
# the boxes of one call are fitted in chunks of at most TABLE_CELLS cells.
MAX_BOX_COLUMNS = 16
TABLE_CELLS = 2**22


def norm_sub(frequencies):
    """Non-negative fractions summing to 1: ``max(f - delta, 0)`` with the one ``delta``
    that makes them sum to 1 (Wang et al.'s Norm-Sub).

    Parameters
    ----------
    frequencies : ndarray
        Estimated fractions (any shape; some may be negative), summing to about 1.

    Returns
    -------
    ndarray
        Same shape, non-negative, summing to 1.

    References
    ----------
    .. [1] T. Wang, M. Lopuhaa-Zwakenberg, Z. Li, B. Skoric and N. Li, "Locally
       differentially private frequency estimation with consistency", NDSS 2020.

    Examples
    --------
    >>> norm_sub(np.array([0.7, 0.5, -0.2])).tolist()
    [0.6, 0.4, 0.0]
    """
    flat = np.asarray(frequencies, dtype=float).ravel()
    ordered = np.sort(flat)[::-1]
    shifts = (np.cumsum(ordered) - 1.0) / np.arange(1, flat.size + 1)
    # The largest k whose k-th largest fraction stays positive after the k-top shift.
    k = np.flatnonzero(ordered - shifts > 0)
    delta = shifts[k[-1]] if k.size else shifts[-1]
    return np.maximum(flat - delta, 0.0).reshape(np.shape(frequencies))


def coverage(bounds, resolution, low, high):
    """Fraction of each of ``resolution`` equal cells of ``bounds`` inside ``[low, high]``.

    Parameters
    ----------
    bounds : (float, float)
    resolution : int
    low, high : ndarray of shape (n_queries,)

    Returns
    -------
    ndarray of shape (n_queries, resolution)

    Examples
    --------
    >>> coverage((0.0, 1.0), 4, np.array([0.1]), np.array([0.5])).round(3).tolist()
    [[0.6, 1.0, 0.0, 0.0]]
    """
    edges = bounds[0] + (bounds[1] - bounds[0]) * np.arange(resolution + 1) / resolution
    width = (bounds[1] - bounds[0]) / resolution
    inside = (np.minimum(np.asarray(high, dtype=float)[:, None], edges[1:])
              - np.maximum(np.asarray(low, dtype=float)[:, None], edges[:-1]))
    return np.clip(inside / width, 0.0, 1.0)


def _axis_sums(grid, axis):
    """Per ``g2`` cell of the attribute on ``axis`` of a 2-D grid: its fraction."""
    return grid.sum(axis=1 - axis)


class GridAnswers:
    """The consistent grids of one collection and their answers to range queries.

    Parameters
    ----------
    mechanism : GridRangeMechanism
        The mechanism the users ran.
    statistic : ndarray
        Its aggregate (:meth:`GridRangeMechanism.aggregate`).
    n_rounds : int, default=5
        Rounds of Norm-Sub and consistency.

    Attributes
    ----------
    raw : list of ndarray
        Unbiased fractions of every grid (1-D grids of ``g1``, 2-D grids ``(g2, g2)``).
    grids : list of ndarray
        The same after non-negativity and consistency.
    group_reports : ndarray
        Users of each group.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.multi_range.grids import GridRangeMechanism
    >>> mechanism = GridRangeMechanism(2.0, [(0, 1), (0, 1), (0, 1)], g1=16, g2=4)
    >>> rng = np.random.default_rng(0)
    >>> records = rng.random((60_000, 3))
    >>> answers = GridAnswers(mechanism, mechanism.aggregate(mechanism.randomize(records, rng)))
    >>> estimate, std = answers.answer((0, 2), np.array([[0.0, 0.0]]), np.array([[0.5, 0.5]]))
    >>> abs(float(estimate[0]) - 0.25) < 5 * float(std[0])
    True
    """

    def __init__(self, mechanism, statistic, n_rounds=N_ROUNDS):
        self.mechanism = mechanism
        self.group_reports = mechanism.group_reports(statistic)
        self.n_users = int(self.group_reports.sum())
        g2 = mechanism.g2
        self.raw = [f if len(group) == 1 else f.reshape(g2, g2) for f, group in
                    zip(mechanism.grid_frequencies(statistic), mechanism.groups, strict=True)]
        self.tolerance = min(TOLERANCE, 0.1 / max(int(self.group_reports.sum()), 1))
        grids = [norm_sub(grid) for grid in self.raw]
        for _ in range(n_rounds):
            for attribute in range(mechanism.n_attributes):
                self._make_consistent(grids, attribute)
            grids = [norm_sub(grid) for grid in grids]
        self.grids = grids
        self._pair_index = {group: k for k, group in enumerate(mechanism.groups)}
        self._tables = {}

    # ------------------------------------------------------------------ post-processing
    def _make_consistent(self, grids, attribute):
        """Step 2 for one attribute, in place."""
        mechanism, g2 = self.mechanism, self.mechanism.g2
        sums, weights, places = [], [], []
        for k, group in enumerate(mechanism.groups):
            if attribute not in group:
                continue
            if len(group) == 1:
                size = mechanism.g1 // g2
                sums.append(grids[k].reshape(g2, size).sum(axis=1))
            else:
                size = g2
                sums.append(_axis_sums(grids[k], group.index(attribute)))
            weights.append(1.0 / size)
            places.append((k, group, size))
        target = np.average(np.array(sums), axis=0, weights=weights)
        for (k, group, size), current in zip(places, sums, strict=True):
            change = (target - current) / size
            if len(group) == 1:
                grids[k] = (grids[k].reshape(g2, size) + change[:, None]).ravel()
            elif group.index(attribute) == 0:
                grids[k] = grids[k] + change[:, None]
            else:
                grids[k] = grids[k] + change[None, :]

    def table(self, a, b):
        """The table of the pair ``a < b``: ``(resolution, resolution)`` fractions (HDG's
        response matrix of ``g1 x g1`` cells, TDG's consistent 2-D grid)."""
        if (a, b) in self._tables:
            return self._tables[a, b]
        grid = self.grids[self._pair_index[a, b]]
        if self.mechanism.method == "tdg":
            self._tables[a, b] = grid
            return grid
        g1, g2 = self.mechanism.g1, self.mechanism.g2
        size = g1 // g2
        rows, columns = self.grids[self._pair_index[(a,)]], self.grids[self._pair_index[(b,)]]
        table = np.full((g1, g1), 1.0 / (g1 * g1))
        for _ in range(MAX_SWEEPS):
            before = table.copy()
            table *= _ratio(rows, table.sum(axis=1))[:, None]
            table *= _ratio(columns, table.sum(axis=0))[None, :]
            blocks = table.reshape(g2, size, g2, size).sum(axis=(1, 3))
            table = (table.reshape(g2, size, g2, size)
                     * _ratio(grid, blocks)[:, None, :, None]).reshape(g1, g1)
            table /= table.sum()
            if np.abs(table - before).sum() < self.tolerance:
                break
        self._tables[a, b] = table
        return table

    # ------------------------------------------------------------------ answers
    def _coverage(self, attribute, low, high, resolution=None):
        resolution = resolution or self.mechanism.resolution
        return coverage(self.mechanism.bounds[attribute], resolution, low, high)

    def answer(self, attributes, low, high):
        """Estimated fraction of the users inside each box, and its standard error.

        Parameters
        ----------
        attributes : tuple of int
            The attributes the queries constrain (distinct, ascending).
        low, high : ndarray of shape (n_queries, len(attributes))
            Each query's closed range per attribute (``low <= high``, within the bounds).

        Returns
        -------
        estimate : ndarray of shape (n_queries,)
        std_error : ndarray of shape (n_queries,)
            The analytic standard deviation of the unbiased answer of the grid that serves
            the query (1 attribute: HDG's 1-D grid, the mean of TDG's pairs; 2: the pair's
            2-D grid) at the estimated fractions; NaN for more than 2 attributes, whose
            maximum-entropy answer has no closed-form variance.
        """
        low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        if len(attributes) > MAX_BOX_COLUMNS:
            raise ValueError(f"a box constrains {len(attributes)} columns; at most "
                             f"{MAX_BOX_COLUMNS} (its maximum-entropy table has 2^columns "
                             "cells per box).")
        if len(attributes) == 1:
            return self._one(attributes[0], low[:, 0], high[:, 0])
        if len(attributes) == 2:
            a, b = attributes
            estimate = self._pair(a, b, low[:, 0], high[:, 0], low[:, 1], high[:, 1])
            return estimate, self._pair_std(a, b, low[:, 0], high[:, 0], low[:, 1],
                                            high[:, 1])
        step = max(1, TABLE_CELLS >> len(attributes))
        estimate = np.concatenate([self._many(attributes, low[i:i + step], high[i:i + step])
                                   for i in range(0, low.shape[0], step)])
        return estimate, np.full(low.shape[0], np.nan)

    def _one(self, a, low, high):
        mechanism = self.mechanism
        if mechanism.method == "hdg":
            k = self._pair_index[(a,)]
            weights = self._coverage(a, low, high)
            variance = mechanism.linear_variance(k, weights, self.grids[k],
                                                 self.group_reports[k], self.n_users)
            return weights @ self.grids[k], np.sqrt(variance)
        weights = self._coverage(a, low, high, mechanism.g2)
        estimates, variance = [], 0.0
        others = [b for b in range(mechanism.n_attributes) if b != a]
        for b in others:
            pair = (min(a, b), max(a, b))
            k = self._pair_index[pair]
            axis = pair.index(a)
            estimates.append(weights @ _axis_sums(self.grids[k], axis))
            full = np.ones(mechanism.g2)
            rows = (weights[:, :, None] * full[None, None, :] if axis == 0
                    else full[None, :, None] * weights[:, None, :])
            variance = variance + mechanism.linear_variance(
                k, rows.reshape(len(low), -1), self.grids[k].ravel(), self.group_reports[k],
                self.n_users)
        return np.mean(estimates, axis=0), np.sqrt(variance) / len(others)

    def _pair(self, a, b, low_a, high_a, low_b, high_b):
        table = self.table(a, b)
        weights_a = self._coverage(a, low_a, high_a, table.shape[0])
        weights_b = self._coverage(b, low_b, high_b, table.shape[0])
        return np.einsum("qi,ij,qj->q", weights_a, table, weights_b)

    def _pair_std(self, a, b, low_a, high_a, low_b, high_b):
        g2 = self.mechanism.g2
        k = self._pair_index[a, b]
        weights = (self._coverage(a, low_a, high_a, g2)[:, :, None]
                   * self._coverage(b, low_b, high_b, g2)[:, None, :])
        return np.sqrt(self.mechanism.linear_variance(
            k, weights.reshape(len(low_a), -1), self.grids[k].ravel(), self.group_reports[k],
            self.n_users))

    def _many(self, attributes, low, high):
        """Maximum-entropy answers of boxes of more than 2 attributes (module docstring)."""
        n_queries, lam = low.shape
        table = np.full((n_queries,) + (2,) * lam, 0.5**lam)  # axis value 0: inside
        targets = []
        for i, j in combinations(range(lam), 2):
            a, b = attributes[i], attributes[j]
            pair = self.table(a, b)
            weights_a = self._coverage(a, low[:, i], high[:, i], pair.shape[0])
            weights_b = self._coverage(b, low[:, j], high[:, j], pair.shape[0])
            both = np.einsum("qi,ij,qj->q", weights_a, pair, weights_b)
            in_a = weights_a @ pair.sum(axis=1)
            in_b = weights_b @ pair.sum(axis=0)
            two = np.empty((n_queries, 2, 2))  # [query, a out?, b out?]
            two[:, 0, 0], two[:, 0, 1] = both, in_a - both
            two[:, 1, 0], two[:, 1, 1] = in_b - both, 1 - in_a - in_b + both
            two = np.maximum(two, 0.0)
            two /= np.maximum(two.sum(axis=(1, 2), keepdims=True), np.finfo(float).tiny)
            targets.append((i, j, two))
        for _ in range(MAX_SWEEPS):
            before = table.copy()
            for i, j, target in targets:
                others = tuple(1 + axis for axis in range(lam) if axis not in (i, j))
                margin = table.sum(axis=others, keepdims=True)
                shape = [n_queries] + [2 if axis in (i, j) else 1 for axis in range(lam)]
                table = table * _ratio(target.reshape(shape), margin)
            if np.abs(table - before).sum(axis=tuple(range(1, lam + 1))).max() \
                    < self.tolerance:
                break
        return table[(slice(None),) + (0,) * lam]


def _ratio(target, current):
    """``target / current`` where ``current > 0``, else 0 (an empty cell stays empty)."""
    return np.divide(target, current, out=np.zeros(np.broadcast(target, current).shape),
                     where=current > 0)
