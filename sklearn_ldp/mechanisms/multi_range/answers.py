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

from .grids import multi_range_docstring

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
# A bootstrap's response matrices: n_bootstrap * resolution^2 floats per pair, fitted
# together; more is refused (64 MB, about a second per pair and sweep budget).
BOOTSTRAP_CELLS = 2**23
# Work of one call answering boxes with a bootstrap's replicates (replicates x boxes x cells):
# for one or two columns the cells of a grid or a pair's table (resolution or resolution^2,
# one pass); for more, the
# cells one sweep of the maximum-entropy fit updates (2^lambda per pair of columns, tens of
# sweeps). Past these, the call is refused (each is a few seconds of CPU).
MAX_BOOTSTRAP_PAIR_WORK = 2**31
MAX_BOOTSTRAP_SWEEP_WORK = 2**25
# Cached response matrices (floats, over the pairs and a bootstrap's replicates): past this,
# the cache is emptied and a pair asked for again is fitted again.
CACHED_CELLS = 2**25


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
    frequencies = np.asarray(frequencies, dtype=float)
    return _norm_sub_rows(frequencies.reshape(1, -1)).reshape(frequencies.shape)


def _norm_sub_rows(batch):
    """:func:`norm_sub` of every row of ``batch`` (its first axis), each on its own."""
    flat = batch.reshape(batch.shape[0], -1)
    ordered = -np.sort(-flat, axis=1)
    shifts = (np.cumsum(ordered, axis=1) - 1.0) / np.arange(1, flat.shape[1] + 1)
    # The largest k whose k-th largest fraction stays positive after the k-top shift (the
    # last k when none does).
    positive = ordered - shifts > 0
    last = flat.shape[1] - 1
    k = np.where(positive.any(axis=1), last - np.argmax(positive[:, ::-1], axis=1), last)
    delta = shifts[np.arange(flat.shape[0]), k]
    return np.maximum(flat - delta[:, None], 0.0).reshape(batch.shape)


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


def check_bootstrap_size(mechanism, n_bootstrap):
    """Refuse a bootstrap whose replicates of one pair's table pass :data:`BOOTSTRAP_CELLS`.

    Parameters
    ----------
    mechanism : GridRangeMechanism
    n_bootstrap : int

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.multi_range.grids import GridRangeMechanism
    >>> check_bootstrap_size(GridRangeMechanism(1.0, [(0, 1)] * 2, g1=4096, g2=4), 100)
    ... # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: n_bootstrap=100 replicates of the 4096 x 4096 tables of a pair hold ...
    """
    cells = n_bootstrap * mechanism.resolution**2
    if cells > BOOTSTRAP_CELLS:
        side = mechanism.resolution
        raise ValueError(
            f"n_bootstrap={n_bootstrap} replicates of the {side} x {side} tables of a pair hold "
            f"{cells} cells, more than {BOOTSTRAP_CELLS}: lower n_bootstrap to at most "
            f"{BOOTSTRAP_CELLS // side**2} (the standard error's own relative error is about "
            "1 / sqrt(2 n_bootstrap)), or set n_bootstrap=0 (the analytic standard error of "
            "the grid serving the box, NaN for three or more columns).")


def check_bootstrap_work(n_columns, n_queries, n_bootstrap, resolution):
    """Refuse answering ``n_queries`` boxes of ``n_columns`` columns with ``n_bootstrap``
    replicates past :data:`MAX_BOOTSTRAP_PAIR_WORK` / :data:`MAX_BOOTSTRAP_SWEEP_WORK`.

    Parameters
    ----------
    n_columns, n_queries, n_bootstrap, resolution : int

    Examples
    --------
    >>> check_bootstrap_work(3, 1000, 100, 32)
    >>> check_bootstrap_work(8, 1000, 100, 16)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: 1000 boxes of 8 columns with n_bootstrap=100 replicates: at most 46 ...
    """
    if n_columns <= 2:
        per_box, limit = n_bootstrap * resolution**n_columns, MAX_BOOTSTRAP_PAIR_WORK
    else:
        pairs = n_columns * (n_columns - 1) // 2
        per_box, limit = n_bootstrap * pairs * 2**n_columns, MAX_BOOTSTRAP_SWEEP_WORK
    if per_box * n_queries > limit:
        raise ValueError(
            f"{n_queries} boxes of {n_columns} columns with n_bootstrap={n_bootstrap} "
            f"replicates: at most {max(limit // max(per_box, 1), 1)} such boxes per call (the "
            "bootstrap answers every box once per replicate); split the boxes over calls, "
            "lower n_bootstrap, or set n_bootstrap=0 (no standard error for three or more "
            "columns).")


def _axis_sums(grid, axis):
    """Per ``g2`` cell of the attribute on ``axis`` of batched 2-D grids ``(B, g2, g2)``."""
    return grid.sum(axis=2 - axis)


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
    >>> replicates = answers.bootstrap(50, rng)
    >>> low, high = np.zeros((1, 3)), np.full((1, 3), 0.5)
    >>> spread = replicates.answer_batch((0, 1, 2), low, high).std(axis=0, ddof=1)
    >>> bool(0.0 < spread[0] < 0.02)
    True
    """

    def __init__(self, mechanism, statistic, n_rounds=N_ROUNDS):
        group_reports = mechanism.group_reports(statistic)
        raw = [f[None] for f in mechanism.grid_frequencies(statistic)]
        self._post_process(mechanism, raw, group_reports, n_rounds)

    @classmethod
    def from_frequencies(cls, mechanism, frequencies, group_reports, n_rounds=N_ROUNDS):
        """The consistent grids of a batch of collections given their unbiased fractions.

        Parameters
        ----------
        mechanism : GridRangeMechanism
        frequencies : list of ndarray
            Per group, ``(n_batch, n_group_cells)``: each collection's unbiased fractions of
            the group's grid (flat, as :meth:`GridRangeMechanism.grid_frequencies`).
        group_reports : ndarray of int
            Users of each group (the same in every collection).
        n_rounds : int, default=5

        Returns
        -------
        GridAnswers
            :meth:`answer_batch` gives one row per collection.
        """
        answers = cls.__new__(cls)
        answers._post_process(mechanism, frequencies, np.asarray(group_reports), n_rounds)
        return answers

    def _post_process(self, mechanism, raw, group_reports, n_rounds):
        """Steps 1 and 2 on a batch of collections: ``raw[k]`` holds ``B`` draws of grid
        ``k``'s unbiased fractions (flat), one per row."""
        self.mechanism = mechanism
        self.n_rounds = n_rounds
        self.group_reports = group_reports
        self.n_users = int(group_reports.sum())
        g2 = mechanism.g2
        self._raw = [f if len(group) == 1 else f.reshape(-1, g2, g2)
                     for f, group in zip(raw, mechanism.groups, strict=True)]
        self.tolerance = min(TOLERANCE, 0.1 / max(self.n_users, 1))
        grids = [_norm_sub_rows(grid) for grid in self._raw]
        for _ in range(n_rounds):
            for attribute in range(mechanism.n_attributes):
                self._make_consistent(grids, attribute)
            grids = [_norm_sub_rows(grid) for grid in grids]
        self._grids = grids
        self._pair_index = {group: k for k, group in enumerate(mechanism.groups)}
        self._tables = {}

    @property
    def raw(self):
        """Unbiased fractions of every grid (of the first collection of a batch)."""
        return [grid[0] for grid in self._raw]

    @property
    def grids(self):
        """Every grid after non-negativity and consistency (of the first collection)."""
        return [grid[0] for grid in self._grids]

    @property
    def n_batch(self):
        """Collections held: 1, or the replicates of :meth:`bootstrap`."""
        return self._grids[0].shape[0]

    def bootstrap(self, n_bootstrap, rng):
        """Replicates of this collection for a parametric bootstrap of its answers.

        Each replicate's unbiased grids are drawn at this collection's consistent grids
        (:meth:`GridRangeMechanism.sample_grid_frequencies`, the same numbers of users per
        group) and post-processed as this collection's were, so the spread of a query's
        answers over the replicates is that of its post-processed answer.

        Parameters
        ----------
        n_bootstrap : int
            Replicates.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        GridAnswers
            ``n_bootstrap`` collections: :meth:`answer_batch` gives one row per replicate.
        """
        check_bootstrap_size(self.mechanism, n_bootstrap)
        raw = self.mechanism.sample_grid_frequencies(
            [grid.ravel() for grid in self.grids], self.group_reports, n_bootstrap, rng)
        return GridAnswers.from_frequencies(self.mechanism, raw, self.group_reports,
                                            self.n_rounds)

    # ------------------------------------------------------------------ post-processing
    def _make_consistent(self, grids, attribute):
        """Step 2 for one attribute, in place (every collection of the batch on its own)."""
        mechanism, g2 = self.mechanism, self.mechanism.g2
        sums, weights, places = [], [], []
        for k, group in enumerate(mechanism.groups):
            if attribute not in group:
                continue
            if len(group) == 1:
                size = mechanism.g1 // g2
                sums.append(grids[k].reshape(-1, g2, size).sum(axis=2))
            else:
                size = g2
                sums.append(_axis_sums(grids[k], group.index(attribute)))
            weights.append(1.0 / size)
            places.append((k, group, size))
        target = np.average(np.array(sums), axis=0, weights=weights)
        for (k, group, size), current in zip(places, sums, strict=True):
            change = (target - current) / size
            if len(group) == 1:
                grids[k] = (grids[k].reshape(-1, g2, size) + change[:, :, None]).reshape(
                    grids[k].shape)
            elif group.index(attribute) == 0:
                grids[k] = grids[k] + change[:, :, None]
            else:
                grids[k] = grids[k] + change[:, None, :]

    def table(self, a, b):
        """The table of the pair ``a < b``: ``(resolution, resolution)`` fractions (HDG's
        response matrix of ``g1 x g1`` cells, TDG's consistent 2-D grid)."""
        return self._table(a, b)[0]

    def _table(self, a, b):
        """:meth:`table` of every collection of the batch, ``(B, resolution, resolution)``."""
        if (a, b) in self._tables:
            return self._tables[a, b]
        grid = self._grids[self._pair_index[a, b]]
        if self.mechanism.method == "tdg":
            self._tables[a, b] = grid
            return grid
        g1, g2 = self.mechanism.g1, self.mechanism.g2
        size, n_batch = g1 // g2, grid.shape[0]
        rows = self._grids[self._pair_index[(a,)]]
        columns = self._grids[self._pair_index[(b,)]]
        table = np.full((n_batch, g1, g1), 1.0 / (g1 * g1))
        for _ in range(MAX_SWEEPS):
            before = table.copy()
            table *= _ratio(rows, table.sum(axis=2))[:, :, None]
            table *= _ratio(columns, table.sum(axis=1))[:, None, :]
            blocks = table.reshape(n_batch, g2, size, g2, size).sum(axis=(2, 4))
            table = (table.reshape(n_batch, g2, size, g2, size)
                     * _ratio(grid, blocks)[:, :, None, :, None]).reshape(n_batch, g1, g1)
            table /= table.sum(axis=(1, 2), keepdims=True)
            if np.abs(table - before).sum(axis=(1, 2)).max() < self.tolerance:
                break
        if sum(t.size for t in self._tables.values()) + table.size > CACHED_CELLS:
            self._tables.clear()  # bounded memory: a pair not cached is fitted again
        self._tables[a, b] = table
        return table

    # ------------------------------------------------------------------ answers
    def _coverage(self, attribute, low, high, resolution=None):
        resolution = resolution or self.mechanism.resolution
        return coverage(self.mechanism.bounds[attribute], resolution, low, high)

    @multi_range_docstring
    def answer(self, attributes, low, high):
        """Estimated fraction of the users inside each box, and its standard error.

        <box parameters>

        Returns
        -------
        estimate : ndarray of shape (n_queries,)
        std_error : ndarray of shape (n_queries,)
            The analytic standard deviation of the unbiased answer of the grid that serves
            the query (1 attribute: HDG's 1-D grid, the mean of TDG's pairs; 2: the pair's
            2-D grid) at the estimated fractions; NaN for more than 2 attributes, whose
            maximum-entropy answer has no closed-form variance (:meth:`bootstrap` gives the
            spread of every post-processed answer).
        """
        low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        estimate = self.answer_batch(attributes, low, high)[0]
        if len(attributes) == 1:
            return estimate, self._one_std(attributes[0], low[:, 0], high[:, 0])
        if len(attributes) == 2:
            a, b = attributes
            return estimate, self._pair_std(a, b, low[:, 0], high[:, 0], low[:, 1],
                                            high[:, 1])
        return estimate, np.full(low.shape[0], np.nan)

    @multi_range_docstring
    def answer_batch(self, attributes, low, high):
        """Every collection's estimated fraction of the users inside each box.

        <box parameters>

        Returns
        -------
        ndarray of shape (n_batch, n_queries)
            One row per collection (:meth:`bootstrap`'s replicates).
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
            return self._pair(a, b, low[:, 0], high[:, 0], low[:, 1], high[:, 1])
        step = max(1, (TABLE_CELLS >> len(attributes)) // self.n_batch)
        return np.concatenate([self._many(attributes, low[i:i + step], high[i:i + step])
                               for i in range(0, low.shape[0], step)], axis=1)

    @multi_range_docstring
    def bias_bound(self, attributes, low, high):
        """A bound on each box's error from assuming values uniform within a cell.

        With ``c`` the fraction of a cell's width inside a column's range and ``f`` the
        users in that cell, between 0 and ``f`` of them are inside the range where the
        answer counts ``c f``: at most ``max(c, 1 - c) f`` apart. A box's indicator is the
        product of its columns' indicators ``1_i``, the answer's that of their coverages
        ``c_i``, all in ``[0, 1]``; ``prod 1 - prod c = sum_i (prod_{k<i} c_k) (1_i - c_i)
        (prod_{k>i} 1_k)``, and each term vanishes outside the cells that any other column
        ``j``'s range touches. So the error is at most, summed over the columns ``i``, the
        smallest over the other columns ``j`` of ``sum max(c, 1 - c) f`` over the cells of
        the pair's table that ``i``'s range cuts (``0 < c < 1``) and ``j``'s range touches
        (one column: over its own cut cells). From the fitted fractions: 0 for a box on the
        grid lines; it bounds the uniformity assumption only, not the noise (``std_error``),
        and for three or more columns not the maximum-entropy step either.

        <box parameters>

        Returns
        -------
        ndarray of shape (n_queries,)

        Examples
        --------
        >>> from sklearn_ldp.mechanisms.multi_range.grids import GridRangeMechanism
        >>> mechanism = GridRangeMechanism(1.0, [(0, 1), (0, 1)], g1=8, g2=2)
        >>> uniform = [np.full((1, size), 1 / size) for size in mechanism.group_sizes]
        >>> answers = GridAnswers.from_frequencies(mechanism, uniform, [100, 100, 100])
        >>> bound = answers.bias_bound((0, 1), [[0.0, 0.0], [0.1, 0.0]], [[0.5, 0.5],
        ...                                                               [0.5, 0.5]])
        >>> bound.tolist()  # on the grid lines; cutting one cell of column 0 (0.2 inside)
        [0.0, 0.05]
        """
        low, high = np.asarray(low, dtype=float), np.asarray(high, dtype=float)
        cut = []
        for i, a in enumerate(attributes):
            weights = self._coverage(a, low[:, i], high[:, i])
            cut.append(np.where((weights > 0) & (weights < 1),
                                np.maximum(weights, 1 - weights), 0.0))
        if len(attributes) == 1:
            return cut[0] @ self._marginal(attributes[0])
        bound = np.zeros(low.shape[0])
        for i, a in enumerate(attributes):
            within = []
            for j, b in enumerate(attributes):
                if j != i:
                    touched = self._coverage(b, low[:, j], high[:, j]) > 0
                    table = self.table(a, b) if a < b else self.table(b, a).T  # rows: a
                    within.append(_bilinear(cut[i], table[None], touched)[0])
            bound += np.min(within, axis=0)
        return bound

    def _marginal(self, a):
        """Attribute ``a``'s consistent fractions at the finest resolution."""
        if self.mechanism.method == "hdg":
            return self.grids[self._pair_index[(a,)]]
        return np.mean([_axis_sums(self._grids[self._pair_index[pair]], pair.index(a))[0]
                        for pair in self.mechanism.groups if a in pair], axis=0)

    def _one(self, a, low, high):
        mechanism = self.mechanism
        if mechanism.method == "hdg":
            return self._grids[self._pair_index[(a,)]] @ self._coverage(a, low, high).T
        weights = self._coverage(a, low, high, mechanism.g2)
        pairs = [pair for pair in mechanism.groups if a in pair]
        return np.mean([_axis_sums(self._grids[self._pair_index[pair]], pair.index(a))
                        @ weights.T for pair in pairs], axis=0)

    def _one_std(self, a, low, high):
        mechanism = self.mechanism
        if mechanism.method == "hdg":
            k = self._pair_index[(a,)]
            variance = mechanism.linear_variance(k, self._coverage(a, low, high),
                                                 self.grids[k], self.group_reports[k],
                                                 self.n_users)
            return np.sqrt(variance)
        weights = self._coverage(a, low, high, mechanism.g2)
        pairs = [pair for pair in mechanism.groups if a in pair]
        variance = 0.0
        full = np.ones(mechanism.g2)
        for pair in pairs:
            k = self._pair_index[pair]
            rows = (weights[:, :, None] * full[None, None, :] if pair.index(a) == 0
                    else full[None, :, None] * weights[:, None, :])
            variance = variance + mechanism.linear_variance(
                k, rows.reshape(len(low), -1), self.grids[k].ravel(), self.group_reports[k],
                self.n_users)
        return np.sqrt(variance) / len(pairs)

    def _pair(self, a, b, low_a, high_a, low_b, high_b):
        table = self._table(a, b)
        weights_a = self._coverage(a, low_a, high_a, table.shape[1])
        weights_b = self._coverage(b, low_b, high_b, table.shape[1])
        return _bilinear(weights_a, table, weights_b)

    def _pair_std(self, a, b, low_a, high_a, low_b, high_b):
        g2 = self.mechanism.g2
        k = self._pair_index[a, b]
        weights = (self._coverage(a, low_a, high_a, g2)[:, :, None]
                   * self._coverage(b, low_b, high_b, g2)[:, None, :])
        return np.sqrt(self.mechanism.linear_variance(
            k, weights.reshape(len(low_a), -1), self.grids[k].ravel(), self.group_reports[k],
            self.n_users))

    def _many(self, attributes, low, high):
        """Maximum-entropy answers of boxes of more than 2 attributes (module docstring),
        ``(n_batch, n_queries)``: the batch's boxes are fitted together."""
        n_queries, lam = low.shape
        n_batch = self.n_batch
        size = n_batch * n_queries
        table = np.full((size,) + (2,) * lam, 0.5**lam)  # axis value 0: inside
        targets = []
        for i, j in combinations(range(lam), 2):
            a, b = attributes[i], attributes[j]
            pair = self._table(a, b)
            weights_a = self._coverage(a, low[:, i], high[:, i], pair.shape[1])
            weights_b = self._coverage(b, low[:, j], high[:, j], pair.shape[1])
            both = _bilinear(weights_a, pair, weights_b).ravel()
            in_a = (pair.sum(axis=2) @ weights_a.T).ravel()
            in_b = (pair.sum(axis=1) @ weights_b.T).ravel()
            two = np.empty((size, 2, 2))  # [box, a out?, b out?]
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
                shape = [size] + [2 if axis in (i, j) else 1 for axis in range(lam)]
                table = table * _ratio(target.reshape(shape), margin)
            if np.abs(table - before).sum(axis=tuple(range(1, lam + 1))).max() \
                    < self.tolerance:
                break
        return table[(slice(None),) + (0,) * lam].reshape(n_batch, n_queries)


def _bilinear(weights_a, tables, weights_b):
    """``weights_a[q] . tables[b] . weights_b[q]`` for every table ``b`` and query ``q``,
    ``(n_tables, n_queries)``, in chunks of queries of at most :data:`TABLE_CELLS` floats."""
    n_tables, side = tables.shape[0], tables.shape[1]
    step = max(1, TABLE_CELLS // (n_tables * side))
    return np.concatenate([((weights_a[i:i + step] @ tables) * weights_b[i:i + step]).sum(axis=2)
                           for i in range(0, weights_a.shape[0], step)], axis=1)


def _ratio(target, current):
    """``target / current`` where ``current > 0``, else 0 (an empty cell stays empty)."""
    return np.divide(target, current, out=np.zeros(np.broadcast(target, current).shape),
                     where=current > 0)
