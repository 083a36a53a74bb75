"""The exact variances of a hierarchical histogram, structured (no ``n x n`` matrix).

Notation: :mod:`.tree` (the estimator) and :mod:`.tree_structure` (the tree, the consistency).

Exact variance. The estimate is ``x = sum_l A_l yhat_l + a0 N``. For a query ``w`` let
``v_l = A_l^T w``, ``mu_l = mean(v_l)`` and ``c0 = a0 . w``. A user of cell ``u`` who reports
level ``l`` (node ``j``) adds ``h (v_l . e - mu_l) + sum_k mu_k + c0`` to the answer, where
``e`` is that report's oracle estimate (mean ``e_j``, and the oracle's exact covariance).
Averaging over the uniform level,

    z(w, u) = sum_l [ h V_l(v_l)[j_l(u)] + (h (v_l[j_l(u)] - mu_l) + sum_k mu_k + c0)^2 / h ]
              - w_u^2,

``V_l`` the level oracle's exact ``query_variance``. For the consistent estimator
``A_l^T w = H_l M w / s_l^2`` with ``M`` the (symmetric) constrained least-squares operator,
which :func:`~.tree_structure.tree_consistency` applies; ``M 1 = 0`` gives ``mu_l = 0``.

Structured error (no ``n x n`` matrix). Summed over a workload with Gram ``G``, ``z`` needs
``T_l G a0``, ``a0^T G a0`` (one product with ``G`` and one consistency pass) and, for every
node ``j``, ``D_l[j] = (M 1_j)^T G (M 1_j) / s_l^4``: the diagonal of the level Gram
``T_l G T_l^T`` (``T_l = H_l M / s_l^2``), whose row sums vanish (``M 1 = 0``), so the level
oracle's error needs nothing else. Levels ``l = 0`` (root) .. ``h``, nominal widths
``b_l = B^(h-l)``, actual node sizes ``|a|`` (only the last node of a level, the "spine" node,
can be short); ``C = sum_l s_l^-2 sum_{a in level l} 1_a 1_a^T`` is the information matrix
and ``M = C^-1 - C^-1 1 1^T C^-1 / (1^T C^-1 1)``.

* ``C0 = sum_l (b_l / s_l^2) E_l`` with ``E_l`` the averaging over level-``l`` nodes. Nested
  partitions make the ``E_l`` commuting projections, so ``C0 = sum_l lambda_l Delta_l`` with
  ``Delta_l = E_l - E_(l-1)`` and ``lambda_l = sum_(k >= max(l, 1)) b_k / s_k^2``, and for a node
  ``j`` of level ``k`` with ancestors ``a_l`` (``rho_a = 1_a / |a|``, ``mu = 1 / lambda``)

      C0^-1 1_j = |j| (sum_(l < k) (mu_l - mu_(l+1)) rho_(a_l) + mu_k rho_j).

  Its quadratic form ``Q0(j)`` follows down the tree from the parent's, with the block sums of
  the running vector ``Phi_k[x] = (G A_j)[x]`` (``A_j`` the ancestors' part), which is updated
  by one ``block_row_sums`` of ``G`` per level.
* ``C`` differs from ``C0`` only on the short spine nodes, which are suffixes ``[t_l, n)`` of
  the cells; they cut the cells into ``h + 1`` "regions" ``[t_r, t_(r+1))``. Woodbury's
  identity (rank ``<= h``, with the root for the constraint) gives
  ``M 1_j = C0^-1 1_j + |j| zeta_r`` for a node ``j`` off the spine inside region ``r``, where
  ``zeta_r`` is constant on every region (an ``(h+1) x (h+1)`` table). So
  ``D(j) = Q0(j) + 2 |j| zeta_r^T G C0^-1 1_j + |j|^2 zeta_r^T G zeta_r``: the middle term is
  a block-sum recursion of ``y[x] = (G zeta_(r(x)))[x]``, the last a table lookup. Spine
  nodes are constant on regions altogether: ``u^T Omega u`` with ``Omega`` the sums of ``G``
  over pairs of regions (``h + 1`` products with ``G``).

In all ``O(n h)`` for the closed-form Grams (histogram, prefix, all-range, their weighted
sums and aligned Kronecker products); other Grams are densified up to ``DENSE_GRAM_CELLS``
cells, or summed over the workload's rows, else refused. The tests check it against the
dense ``O(h n^2)`` computation for ``n`` not a power of ``B``.

Per-query error of intervals (no length-``n`` row). The worst and average of ``z(w, u)`` over
``u`` for one interval ``w = 1[lo, hi]``
(:meth:`~.tree.HierarchicalHistogram.range_variance_summary`) need neither ``w`` nor ``v_l`` as
vectors. Call *path nodes* the ancestors, at every level, of the cells ``lo`` and ``hi``, and
the short spine nodes. Every other node has a complete subtree that lies inside or outside
``[lo, hi]``. Exchanging two sibling subtrees of that kind with the same status (both inside or
both outside), or two siblings within one of them, maps the tree, the level variances and ``w``
onto themselves, so ``M w`` and every intermediate of :func:`~.tree_structure.tree_consistency`
take equal values on them, and a node's value spread evenly over its cells (its *density*) is
the same on all its descendants' cells. Hence at level ``k`` the densities are constant between
consecutive *breakpoints* of levels ``<= k`` (the root's ``0`` and ``n``, the starts and ends of
the path nodes of levels ``<= k``): each such *segment* is one path node, or a union of whole
nodes of equal value. There are at most ``4 (k + 1) + 2`` breakpoints at level ``k`` (plus the
short spine starts), and the segments of level ``k + 1`` refine those of level ``k``. The two
passes of :func:`~.tree_structure.tree_consistency` then run on segment densities
(:meth:`_TreeVariance._consistent_segment_weights`):

* bottom-up, a node's children sum is the finer level's density averaged over the node's
  segment (differences of one cumulative sum over the finer segments), and
  ``subtree_k = keep_k * (children sum)`` with ``keep_k = s_k^2 / (s_k^2 + children's
  variance)`` (the leaves carry ``s_h^2 w``, the other levels 0, as in ``M w``);
* top-down, ``consistent_(k+1) = subtree_(k+1) + share_(k+1) * (consistent_k - children
  sum_k)`` read at each finer segment's coarser segment, ``share`` the variance-proportional
  split scaled from the parent's density to the child's (for the root, the residual
  ``0 - sum(subtree_0)``).

``keep`` and ``share`` are the same on every node of a level but the last ``B`` (the spine node
and its siblings), so a small table per level holds them. ``v_k`` is the consistent density
times the node size over ``s_k^2``; per level, its sum, squared norm and mean over the nodes are
sums over the segments weighted by the number of nodes in each (``length / node size``, a
fraction inside a path node); ``z`` is then a quadratic in ``v_k`` per level plus terms shared
by the whole interval, accumulated down the levels onto the finest segments, where its maximum
(over the non-empty segments) and its length-weighted mean are read. The raw decomposition's
``v_k`` (1 on the decomposition's nodes, which are children of path nodes) is constant on the
same segments, so the same reading applies with ``c0`` the whole-domain indicator. In all
``O(h^2)`` per interval, vectorized over intervals in blocks (10^5 intervals over 2^20 cells,
``B = 4``: 1.3 to 1.9 s of processor time here). Single cells need less: the same exchanges map a
cell onto any other that leaves the spine at the same level, so a histogram costs ``h + 1``
intervals and ``O(n h)`` comparisons.
"""

import numpy as np

from ..._gram import SummaryGram
from .._base.mechanism import (
    Mechanism,
    check_gram,
    check_workload_matrix,
    check_workload_width,
    chunks,
    is_workload,
)
from .._base.workload_ops import gram_with_blocks
from ..oracles.hadamard_coefficient import HadamardRandomizedResponse
from .tree_structure import node_sums, range_bounds, range_matrix, tree_consistency

# Query rows x cells handled at once by the variance computations (bounds temporaries).
VARIANCE_BLOCK = 2**22
# Ranges x breakpoints handled at once by range_variance_summary: its per-level (ranges x
# segments) arrays stay near the processor's cache (2^14 to 2^17 measured: 2^16 to 2^17 are
# the fastest at 2^20 cells, 2^24 takes about twice as long).
INTERVAL_BLOCK = 2**16

def _tail_tables(arrays, branching):
    """Per-node arrays of one level (equal lengths ``m``) as ``(table, tail)``: row ``i`` of
    ``table`` is ``[common value, values of the last tail nodes]`` of ``arrays[i]``, with
    ``tail = branching`` when every node but the last ``branching`` holds the same value in
    every array (true of the consistency factors: only the spine node and its siblings
    differ), else ``tail = m`` (all the values). Read with :func:`_tail_index`."""
    arrays = np.atleast_2d(np.asarray(arrays, dtype=float))
    m = arrays.shape[1]
    tail = min(branching, m)
    if np.any(arrays[:, :m - tail] != arrays[:, :1]):
        tail = m
    return np.concatenate([arrays[:, :1], arrays[:, m - tail:]], axis=1), tail


def _tail_index(nodes, n_nodes, tail):
    """Column of a :func:`_tail_tables` table for each node index in ``nodes``."""
    return np.maximum(nodes - (n_nodes - tail - 1), 0)


def _level_quadratic(oracle):
    """``(a, b, c, d)`` with ``oracle.query_variance(v)[j] = a ||v||^2 + b s^2 + c v_j^2
    + d s v_j`` (``s = sum(v)``, ``m`` nodes): the level oracle's exact per-user variance of
    a query on its nodes, as a function of the query's norm, sum and entry at the user's
    node.

    Support oracles (OUE, OLH): ``c_norm (||v||^2 - s^2/m) + c_own (v_j - s/m)^2``;
    HRR: ``(K-1) c^2 / K (||v||^2 - s^2/m) + (2 s v_j - s^2/m) / m - v_j^2``.
    """
    m = oracle.n_inputs
    if isinstance(oracle, HadamardRandomizedResponse):
        K = oracle.n_coefficients
        spread = (K - 1) * oracle.debias**2 / K
        return spread, -spread / m - 1.0 / m**2, -1.0, 2.0 / m
    c_norm, c_own = oracle._variance_coefficients()
    return c_norm, -c_norm / m + c_own / m**2, c_own, -2.0 * c_own / m


def _row_blocks(n_rows, n_cells):
    """Slices of rows such that one block holds about ``VARIANCE_BLOCK`` entries."""
    return chunks(n_rows, max(1, VARIANCE_BLOCK // max(n_cells, 1)))


class _TreeVariance(Mechanism):
    """The exact per-user variances of :class:`~.tree.HierarchicalHistogram` (the module
    docstring): per query, per interval in closed form, and summed over a Gram, with the
    linear estimator's operators they need (the consistency operator ``M``, the root weights
    ``a0``, the B-adic decomposition), which the estimator shares. It reads the tree and the
    level oracles that the mechanism sets up."""

    def _consistency_operator(self, rows):
        """The consistent tree of ``M w`` for each row ``w`` (last axis: cells), ``M`` the
        symmetric least-squares operator of the module docstring: its leaves are ``M w`` and
        its level ``l`` is ``H_l M w``."""
        rows = np.asarray(rows, dtype=float)
        batch = rows.shape[:-1]
        levels = [np.zeros(batch + (m,)) for m in self.level_sizes[:-1]]
        levels.append(self.level_variances[-1] * rows)
        return tree_consistency(levels, np.zeros(batch), self.branching, self.level_variances)

    def root_weights(self):
        """``a0``: the leaves' coefficients on the known total ``N`` (cached).

        Returns
        -------
        ndarray of shape (n,)
            The consistent leaves when every level measures zero and the root is 1: the
            estimate is ``sum_l A_l yhat_l + a0 N``.
        """
        if self._root_weights is None:
            levels = [np.zeros(m) for m in self.level_sizes]
            self._root_weights = tree_consistency(levels, 1.0, self.branching,
                                                  self.level_variances)[-1]
        return self._root_weights

    def decompose(self, lo, hi):
        """B-adic decomposition of closed ranges: the nodes fully inside each range whose
        parent is not.

        Parameters
        ----------
        lo, hi : array-like of int
            Closed ranges ``[lo_i, hi_i]`` of cells.

        Returns
        -------
        runs : list of h tuples ``(first_start, first_stop, second_start, second_stop)``
            Per level, at most two runs of node indices (half-open, possibly empty), as
            int64 arrays over the ranges.
        root : ndarray of bool
            Ranges that are the whole domain (answered by the known total).

        Examples
        --------
        The thesis's example, ``[2, 22]`` over 32 cells with ``B = 2``:

        >>> from sklearn_ldp.mechanisms import HierarchicalHistogram
        >>> mechanism = HierarchicalHistogram(32, 1.0, branching=2)
        >>> runs, root = mechanism.decompose([2], [22])
        >>> sorted((int(t) * w, (int(t) + 1) * w - 1) for w, (a, b, c, d)
        ...        in zip(mechanism.widths, runs) for t in [*range(a[0], b[0]), *range(c[0], d[0])])
        [(2, 3), (4, 7), (8, 15), (16, 19), (20, 21), (22, 22)]
        """
        lo, hi = range_bounds(lo, hi, self.n_inputs)
        padded = self.branching ** self.height
        # A range ending at the last cell also covers the padding (known zeros): nodes that
        # straddle the end of the domain are then inside it.
        end = np.where(hi == self.n_inputs - 1, padded, hi + 1)
        parent_width = padded
        parent_start = -(-lo // parent_width)
        parent_stop = end // parent_width
        root = parent_start < parent_stop
        runs = []
        for k, width in enumerate(self.widths):
            start = np.minimum(-(-lo // width), self.level_sizes[k])
            stop = np.minimum(end // width, self.level_sizes[k])
            covered = parent_start < parent_stop
            split_start = np.where(covered, np.minimum(parent_start * self.branching, stop), stop)
            split_stop = np.where(covered, np.minimum(parent_stop * self.branching, stop), stop)
            runs.append((start, np.maximum(split_start, start), np.maximum(split_stop, start),
                         np.maximum(stop, start)))
            parent_start, parent_stop = -(-lo // width), end // width
        return runs, root

    def range_variance(self, lo, hi, consistency=True):
        """Exact per-user variance of each range answer for each user type: ``(p, n)``.

        Multiply by the number of users (worst case: all of the worst type) or take
        ``z @ counts`` for given data. Dense (``O(p n)``); :meth:`range_variance_summary`
        gives the worst and average per range from the structure.

        Parameters
        ----------
        lo, hi : array-like of int
            First and last cell of each range, ``0 <= lo_i <= hi_i < n``.
        consistency : bool, default=True
            The consistent estimate (True) or the raw decomposition (False).

        Returns
        -------
        ndarray of shape (p, n)
            Entry ``[i, u]``: the variance of range ``i``'s answer contributed by one user of
            cell ``u``.
        """
        lo, hi = range_bounds(lo, hi, self.n_inputs)
        if consistency:
            return self.query_variance(range_matrix(lo, hi, self.n_inputs))
        runs, root = self.decompose(lo, hi)
        result = np.empty((lo.shape[0], self.n_inputs))
        for rows in _row_blocks(lo.shape[0], self.n_inputs):
            weights = []
            for k, (a, b, c, d) in enumerate(runs):
                marks = np.zeros((a[rows].shape[0], self.level_sizes[k] + 1))
                for start, stop in ((a, b), (c, d)):
                    index = np.arange(marks.shape[0])
                    np.add.at(marks, (index, start[rows]), 1.0)
                    np.add.at(marks, (index, stop[rows]), -1.0)
                weights.append(np.cumsum(marks, axis=1)[:, :-1])
            W = range_matrix(lo[rows], hi[rows], self.n_inputs)
            result[rows] = self._variance_from_weights(weights, root[rows].astype(float), W)
        return result

    def range_variance_summary(self, lo, hi, consistency=True):
        """Worst and average per-user variance of each range answer, from the tree's
        structure.

        The maximum and the mean over the user types of :meth:`range_variance`, without a
        length-``n`` row: ``O(h^2)`` per range, vectorized over the ranges (module docstring,
        "Per-query error of intervals"), so ``10^5`` ranges over ``2^20`` cells take seconds.

        Parameters
        ----------
        lo, hi : array-like of int
            Closed ranges ``[lo_i, hi_i]`` of cells, ``0 <= lo_i <= hi_i < n``.
        consistency : bool, default=True
            The consistent estimate (the one :meth:`estimate` returns) if True, else the
            B-adic decomposition of the raw level estimates.

        Returns
        -------
        worst : ndarray of shape (p,)
            Per range, the largest per-user variance over the user types (multiply by the
            number of users: all of them of the worst type).
        average : ndarray of shape (p,)
            Per range, the mean over the user types (users spread evenly over the cells).

        See Also
        --------
        range_variance : The same variances for every user type, a ``(p, n)`` matrix.
        query_variance_summary : The same for a workload of intervals.

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import HierarchicalHistogram
        >>> mechanism = HierarchicalHistogram(10, 1.0, branching=2)
        >>> worst, average = mechanism.range_variance_summary([0, 3], [9, 6])
        >>> z = mechanism.range_variance([0, 3], [9, 6])
        >>> bool(np.allclose(worst, z.max(axis=1)) and np.allclose(average, z.mean(axis=1)))
        True
        """
        lo, hi = range_bounds(lo, hi, self.n_inputs)
        if not isinstance(consistency, bool | np.bool_):
            raise ValueError(f"consistency must be True or False, got {consistency!r}.")
        worst, average = np.empty(lo.shape[0]), np.empty(lo.shape[0])
        # Single cells (a histogram): exchanging complete sibling subtrees maps a cell onto
        # every other cell that leaves the spine at the same level, with the same worst and
        # average (module docstring), so one cell per such class is computed.
        single = np.flatnonzero(lo == hi)
        if single.size > self.height + 1:
            cells = lo[single]
            leaves = np.full(cells.shape, self.height)
            for k in range(self.height - 1, -1, -1):
                off_spine = cells // self.widths[k] != self.level_sizes[k] - 1
                leaves = np.where(off_spine, k, leaves)
            _, first, inverse = np.unique(leaves, return_index=True, return_inverse=True)
            represented = single[first]
            computed = np.concatenate([np.flatnonzero(lo != hi), represented])
            found = self.range_variance_summary(lo[computed], hi[computed], consistency)
            worst[computed], average[computed] = found
            worst[single] = worst[represented][inverse]
            average[single] = average[represented][inverse]
            return worst, average
        if not lo.size:
            return worst, average
        tables = self._interval_tables()
        # a0 . w for every range: differences of one cumulative sum of the root weights.
        root = np.concatenate([[0.0], np.cumsum(self.root_weights())]) if consistency else None
        n_breakpoints = 2 + 4 * self.height + len(tables["spine_starts"])
        rows_per_block = max(1, INTERVAL_BLOCK // n_breakpoints)
        for rows in chunks(lo.shape[0], rows_per_block):
            worst[rows], average[rows] = self._interval_summary_block(
                lo[rows], hi[rows], consistency, tables, root)
        # The whole domain is answered by the known total (the consistent leaves sum to N):
        # its variance is exactly 0, which the sums above reach only up to rounding.
        whole = (lo == 0) & (hi == self.n_inputs - 1)
        worst[whole], average[whole] = 0.0, 0.0
        return worst, average

    def query_variance_summary(self, workload):
        # For the consistent estimate. Workloads of intervals (workload.intervals(): ranges, prefix,
        # all-range, histogram, total, unweighted stacks of these) go through range_variance_summary
        # (O(h^2) per query); a weighted stack block by block (a query scaled by c has c^2 times the
        # variance); other workloads are reduced from their dense rows.
        check_workload_width(workload, self.n_inputs)
        if not is_workload(workload):
            return super().query_variance_summary(workload)
        intervals = workload.intervals()
        if intervals is not None:
            return self.range_variance_summary(*intervals)
        blocks, weights = getattr(workload, "blocks", None), getattr(workload, "weights", None)
        if blocks is not None and weights is not None and len(blocks) == len(weights):
            # A weighted union (workloads.Stack): its rows are its blocks' rows, scaled.
            parts = [self.query_variance_summary(block) for block in blocks]
            return tuple(np.concatenate([w * w * part[i] for w, part in
                                         zip(weights, parts, strict=True)]) for i in (0, 1))
        return super().query_variance_summary(workload)

    def _interval_tables(self):
        """What :meth:`range_variance_summary` needs of the tree, independent of the ranges
        (cached): the starts of the short spine nodes, and per level the per-node factors of
        the two consistency passes on densities and the level oracle's variance coefficients.

        A factor is the same on every node but the last ``B`` of a level (the spine node and
        its siblings, whose subtrees may be short), so each is kept as a table
        ``[common value, last B nodes...]`` read through :func:`_tail_index`.
        """
        if self._interval_cache is not None:
            return self._interval_cache
        n, B, h = self.n_inputs, self.branching, self.height
        s2 = np.asarray(self.level_variances, dtype=float)
        sizes = [np.minimum(width, n - np.arange(m) * width).astype(float)
                 for width, m in zip(self.widths, self.level_sizes, strict=True)]
        # Stage 1 of tree_consistency on the variances (as there): subtree = keep * (children
        # sum) when the node's own measurement is zero.
        subtree_variance = [None] * h
        subtree_variance[-1] = np.full(self.level_sizes[-1], s2[-1])
        keep = [None] * h
        for k in range(h - 2, -1, -1):
            children = node_sums(subtree_variance[k + 1], B, self.level_sizes[k])
            keep[k] = s2[k] / (s2[k] + children)
            subtree_variance[k] = s2[k] * children / (s2[k] + children)
        # Stage 2: a child's density gains share * (its parent's residual density).
        share = [subtree_variance[0] / subtree_variance[0].sum() / sizes[0]]
        for k in range(h - 1):
            parent = np.arange(self.level_sizes[k + 1]) // B
            totals = node_sums(subtree_variance[k + 1], B, self.level_sizes[k])
            share.append(subtree_variance[k + 1] / totals[parent] * sizes[k][parent]
                         / sizes[k + 1])
        spine_starts = [(k, (m - 1) * width) for k, (width, m) in
                        enumerate(zip(self.widths, self.level_sizes, strict=True))
                        if n - (m - 1) * width < width]
        keep[-1] = np.ones(self.level_sizes[-1])  # unused: the leaves have no children
        self._interval_cache = {
            "spine_starts": spine_starts,
            # Per level: rows node size, keep, share.
            "factors": [_tail_tables([size, kept, shared], B) for size, kept, shared in
                        zip(sizes, keep, share, strict=True)],
            "quadratic": [_level_quadratic(oracle) for oracle in self.level_oracles],
        }
        return self._interval_cache

    def _interval_summary_block(self, lo, hi, consistency, tables, root):
        """``(worst, average)`` of :meth:`range_variance_summary` for one block of ranges
        (module docstring, "Per-query error of intervals")."""
        n, h = self.n_inputs, self.height
        p = lo.shape[0]
        # Breakpoints and the level that contributes each (-1: the root's 0 and n): the
        # starts and ends of the ancestors of lo and hi, and the starts of the short spine
        # nodes. Level k's segments lie between the sorted breakpoints of levels <= k.
        points = [np.zeros(p, dtype=np.int64), np.full(p, n, dtype=np.int64)]
        origins = [-1, -1]
        for k, width in enumerate(self.widths):
            for cell in (lo, hi):
                start = cell - cell % width
                points += [start, np.minimum(start + width, n)]
                origins += [k, k]
        for k, start in tables["spine_starts"]:
            points.append(np.full(p, start, dtype=np.int64))
            origins.append(k)
        # A breakpoint equal in every range of the block to one of a coarser (or the same)
        # level only adds empty segments: drop it (prefixes: the starts of lo's ancestors).
        first_of_value = {}  # constant columns: the coarsest one of each value
        for index in sorted(range(len(points)), key=origins.__getitem__):
            column = points[index]
            if column[0] == column.min() == column.max():
                first_of_value.setdefault(int(column[0]), index)
        kept = [index for index, column in enumerate(points)
                if not (column[0] == column.min() == column.max())
                or first_of_value[int(column[0])] == index]
        points = [points[index] for index in kept]
        origins = [origins[index] for index in kept]
        bounds = np.stack(points, axis=1)
        order = np.argsort(bounds, axis=1)
        bounds = np.take_along_axis(bounds, order, axis=1)
        origins = np.asarray(origins)[order]
        levels = self._level_segments(bounds, origins, tables)
        finest = levels[-1]
        inside = ((finest["starts"] >= lo[:, None])
                  & (finest["starts"] <= hi[:, None])).astype(float)
        if consistency:
            values = self._consistent_segment_weights(levels, inside, tables)
            c0 = root[hi + 1] - root[lo]
        else:
            values, c0 = self._decomposition_segment_weights(lo, hi, levels)
        # Per level, the count of its nodes in each segment (a part of one inside a node),
        # then v_l's sum, squared norm and mean over the level's nodes.
        stats = []
        for k, (level, v) in enumerate(zip(levels, values, strict=True)):
            counts = level["length"] / level["sizes"]
            total = np.einsum("ij,ij->i", counts, v)
            stats.append((total, np.einsum("ij,ij->i", counts * v, v), total / self.level_sizes[k]))
        shift = sum(mean for _total, _square, mean in stats) + c0  # sum_k mu_k + c0
        # z (module docstring) expanded: per level a quadratic in v_l, accumulated down the
        # levels on the segments; the terms shared by all the cells of a range apart.
        constant = shift * shift
        z = 0.0
        for k, (level, v, (total, square, mean)) in enumerate(zip(levels, values, stats,
                                                                  strict=True)):
            a, b, c, d = tables["quadratic"][k]
            constant += h * (a * square + b * total * total + mean * mean) - 2 * shift * mean
            linear = h * (d * total - 2.0 * mean) + 2.0 * shift
            here = v * (h * (c + 1.0) * v + linear[:, None])
            z = here if k == 0 else np.take(z, level["parent"]) + here
        z = z + (constant[:, None] - inside)
        length = finest["length"]
        worst = np.where(length > 0, z, -np.inf).max(axis=1)
        average = np.einsum("ij,ij->i", length, z) / n
        return worst, average

    def _level_segments(self, bounds, origins, tables):
        """Per level ``k`` (coarsest first) the segments between the breakpoints of levels
        ``<= k`` (``bounds`` sorted per row, ``origins`` their levels): each is one path node
        or a union of whole nodes of equal value. Returns dicts with ``starts`` and ``length``
        (per segment), ``sizes`` (cells of the node holding it), ``columns`` (its node's column
        in the factor tables), ``ends_at`` (flat indices of the level's breakpoints among the
        next finer level's, for sums over a segment) and ``parent`` (flat index of the
        coarser level's segment holding each segment)."""
        n_rows = bounds.shape[0]
        levels = [None] * self.height
        for k in range(self.height - 1, -1, -1):
            level = {}
            if k < self.height - 1:
                # Keep the breakpoints of levels <= k (the same number in every row).
                finer = levels[k + 1]
                keep = origins <= k
                flat = np.flatnonzero(keep)
                width = flat.shape[0] // n_rows
                # Among equal breakpoints the order is arbitrary: the empty segments before
                # the first 0 or after the last n are clipped to the row's first or last.
                parent = np.clip(np.cumsum(keep, axis=1)[:, :-1] - 1, 0, width - 2)
                finer["parent"] = parent + (width - 1) * np.arange(n_rows)[:, None]
                level["ends_at"] = flat
                bounds = bounds.ravel()[flat].reshape(n_rows, width)
                origins = origins.ravel()[flat].reshape(n_rows, width)
            starts = bounds[:, :-1]
            nodes = np.minimum(starts // self.widths[k], self.level_sizes[k] - 1)
            table, tail = tables["factors"][k]
            level["starts"] = starts
            level["length"] = np.diff(bounds, axis=1).astype(float)
            level["columns"] = _tail_index(nodes, self.level_sizes[k], tail)
            level["sizes"] = np.take(table[0], level["columns"])
            level["nodes"] = nodes
            levels[k] = level
        return levels

    def _consistent_segment_weights(self, levels, inside, tables):
        """``v_l = H_l M w / s_l^2`` of the consistent estimate on level ``l``'s segments:
        :func:`~.tree_structure.tree_consistency` on densities (module docstring)."""
        h = self.height
        s2 = self.level_variances
        factors = [table for table, _tail in tables["factors"]]
        subtree = [None] * h  # densities of stage 1
        averaged = [None] * h  # level k: the children's densities averaged over each node
        subtree[-1] = s2[-1] * inside
        for k in range(h - 2, -1, -1):
            finer, level = levels[k + 1], levels[k]
            cumulative = np.zeros((finer["length"].shape[0], finer["length"].shape[1] + 1))
            np.cumsum(subtree[k + 1] * finer["length"], axis=1, out=cumulative[:, 1:])
            at = np.take(cumulative, level["ends_at"]).reshape(level["length"].shape[0], -1)
            # Empty segments (length 0) have a zero sum.
            averaged[k] = np.diff(at, axis=1) / np.maximum(level["length"], 1.0)
            subtree[k] = np.take(factors[k][1], level["columns"]) * averaged[k]
        # Stage 2 with the root known (0 for M w): the residual goes down the tree.
        residual = -np.einsum("ij,ij->i", subtree[0], levels[0]["length"])
        consistent = subtree[0] + np.take(factors[0][2], levels[0]["columns"]) * residual[:, None]
        values = [consistent * levels[0]["sizes"] / s2[0]]
        for k in range(1, h):
            level = levels[k]
            consistent = subtree[k] + np.take(factors[k][2], level["columns"]) * np.take(
                consistent - averaged[k - 1], level["parent"])
            values.append(consistent * level["sizes"] / s2[k])
        return values

    def _decomposition_segment_weights(self, lo, hi, levels):
        """``v_l`` (1 on the B-adic decomposition's nodes) on level ``l``'s segments, and
        ``c0`` (1 for the whole domain, answered by the known total)."""
        runs, root = self.decompose(lo, hi)
        values = []
        for level, (a, b, c, d) in zip(levels, runs, strict=True):
            node = level["nodes"]
            chosen = ((node >= a[:, None]) & (node < b[:, None])) | (
                (node >= c[:, None]) & (node < d[:, None]))
            values.append(chosen.astype(float))
        return values, root.astype(float)

    # ------------------------------------------------------------------ analysis
    def _per_node_terms(self, weights, c0):
        """Per level, ``h V_l(v_l) + (h (v_l - mu_l) + sum_k mu_k + c0)^2 / h`` for every
        node (the module docstring's ``z`` before it is read at each cell's node)."""
        height = self.height
        means = [v.mean(axis=1) for v in weights]
        shift = sum(means) + c0
        terms = []
        for k, (v, oracle) in enumerate(zip(weights, self.level_oracles, strict=True)):
            centered = height * (v - means[k][:, None]) + shift[:, None]
            terms.append(height * oracle.query_variance(v) + centered * centered / height)
        return terms

    def _variance_from_weights(self, weights, c0, W):
        """Per-user variance ``z`` of the answers ``sum_l v_l . yhat_l + c0 N`` (module
        docstring); ``weights[k]`` is ``(p, m_k)``, ``W`` the queries on the cells."""
        z = -(W * W)
        cells = np.arange(self.n_inputs)
        for k, per_node in enumerate(self._per_node_terms(weights, c0)):
            z += per_node[:, cells // self.widths[k]]
        return z

    def query_variance(self, workload_matrix):
        # For the consistent estimate that estimate returns, from dense rows, O(p n h);
        # query_variance_summary is structured for interval workloads.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        result = np.empty(W.shape)
        root = self.root_weights()
        for rows in _row_blocks(W.shape[0], self.n_inputs):
            block = W[rows]
            result[rows] = self._variance_from_weights(self._level_weights(block), block @ root,
                                                       block)
        return result

    def _level_weights(self, block):
        """``v_l = H_l M w / s_l^2`` of the consistent estimate, for rows ``w`` of ``block``."""
        return [level / s2 for level, s2 in
                zip(self._consistency_operator(block), self.level_variances, strict=True)]

    def average_query_variance(self, workload_matrix):
        """Mean over the user types of each query's per-user variance, from dense rows.

        ``query_variance(W).mean(axis=1)`` (users spread evenly over the cells) without
        forming the ``(p, n)`` matrix: each level's per-node terms are averaged with the
        number of cells of each node as weights.

        Parameters
        ----------
        workload_matrix : array-like of shape (p, n)
            The queries, one dense row per query.

        Returns
        -------
        ndarray of shape (p,)
            The average-case per-user variance of each query.
        """
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        result = np.empty(W.shape[0])
        root = self.root_weights()
        for rows in _row_blocks(W.shape[0], self.n_inputs):
            block = W[rows]
            weights = self._level_weights(block)
            total = -np.sum(block * block, axis=1)
            for k, per_node in enumerate(self._per_node_terms(weights, block @ root)):
                cells_per_node = node_sums(np.ones(self.n_inputs), self.widths[k],
                                           self.level_sizes[k])
                total += per_node @ cells_per_node
            result[rows] = total / self.n_inputs
        return result

    def per_user_variance(self, gram):
        # With v_l = T_l w (T_l = H_l M / s_l^2) and mu_l = 0, summing the module's z(w, u) over the
        # queries needs only the diagonal of T_l G T_l^T (given to the level oracle's own
        # per_user_variance), T_l G a0 and a0^T G a0: O(n h) (module docstring, "Structured error").
        gram = check_gram(gram, self.n_inputs)
        structured = gram_with_blocks(gram, self.widths[:-1])
        if structured is None:
            return self._per_user_variance_fallback(gram)
        n, height = self.n_inputs, self.height
        diagonals = self._level_gram_diagonals(structured)
        root = self.root_weights()
        toward = structured.matvec(root)
        toward_root = self._consistency_operator(toward)
        root_term = float(root @ toward)
        z = -structured.diagonal()
        for k, (oracle, width, m, s2) in enumerate(zip(
                self.level_oracles, self.widths, self.level_sizes, self.level_variances,
                strict=True)):
            # T_l G T_l^T 1 = T_l G M 1 / s_l^2 = 0: the level Gram's row sums vanish.
            level_gram = SummaryGram(diagonals[k], np.zeros(m), 0.0)
            cross = toward_root[k] / s2
            per_node = (height * oracle.per_user_variance(level_gram)
                        + height * diagonals[k] + 2 * cross + root_term / height)
            z += np.repeat(per_node, width)[:n]
        return z

    def _level_gram_diagonals(self, gram):
        """``diag(T_l G T_l^T)`` for ``l = 1..h``, i.e. ``(M 1_j)^T G (M 1_j) / s_l^4`` for
        every node ``j`` (module docstring, "Structured error"). ``gram`` must offer
        ``block_row_sums`` at the widths of levels ``1..h-1`` and ``matvec``."""
        n, B, h = self.n_inputs, self.branching, self.height
        s2 = np.asarray(self.level_variances, dtype=float)
        # Levels 0 (the root) .. h (the leaves): nominal widths and node counts.
        widths = np.array([B**h, *self.widths], dtype=np.int64)
        counts = np.array([1, *self.level_sizes], dtype=np.int64)
        lam = np.empty(h + 1)
        lam[1:] = np.cumsum((widths[1:] / s2)[::-1])[::-1]
        lam[0] = lam[1]  # C0 has no root term
        mu = 1.0 / lam
        c = mu[:-1] - mu[1:]  # ancestor weights c_l, l = 0..h-1
        starts = (counts - 1) * widths  # spine node of level l: cells [starts[l], n)
        spine_sizes = (n - starts).astype(float)
        bounds = np.append(starts, n)
        region_sizes = np.diff(bounds).astype(float)
        n_regions = h + 1

        # C0^-1 1_(spine_k) on the regions (column k): its ancestors are spine nodes too.
        prefix = np.cumsum(c / spine_sizes[:-1])  # sum_(l <= r) c_l / |spine_l|
        r, k = np.arange(n_regions)[:, None], np.arange(n_regions)[None, :]
        last = np.minimum(r, k - 1)
        spine_inverse = (spine_sizes[None, :] * np.where(last >= 0, prefix[np.maximum(last, 0)],
                                                         0.0)
                         + np.where(r >= k, mu[None, :], 0.0))

        # Woodbury: C = C0 - sum_l sigma_l 1_sp 1_sp^T over the short spine nodes, then the
        # constraint 1^T x = N; the root indicator is the last column of V.
        short = [level for level in range(1, h) if spine_sizes[level] < widths[level]]
        columns = [*short, 0]
        Z = spine_inverse[:, columns]  # C0^-1 V on the regions
        # suffix[a] = 1_(spine_a)^T C0^-1 V (spine_a is the union of the regions r >= a).
        suffix = np.cumsum((region_sizes[:, None] * Z)[::-1], axis=0)[::-1]
        psi = suffix[columns]  # V^T C0^-1 V
        K = np.zeros((len(columns), len(columns)))
        if short:
            levels = np.array(short)
            sigma = (widths[levels] - spine_sizes[levels]) / (spine_sizes[levels]
                                                                * s2[levels - 1])
            # At most h x h: the explicit inverse is the clearest way to build K.
            L = np.linalg.inv(np.diag(1.0 / sigma) - psi[:-1, :-1])
            K[:-1, :-1] = L
            along = np.append(L @ psi[:-1, -1], 1.0)
            rho = psi[-1, -1] + psi[-1, :-1] @ L @ psi[:-1, -1]
        else:
            along, rho = np.ones(1), psi[-1, -1]
        K -= np.outer(along, along) / rho
        table = Z @ K @ Z.T  # column r: zeta_r on the regions

        # Products with G of the region indicators: Omega and y[x] = (G zeta_(r(x)))[x].
        region = np.repeat(np.arange(n_regions), np.diff(bounds))
        omega = np.zeros((n_regions, n_regions))
        y = np.zeros(n)
        for index in range(n_regions):
            if region_sizes[index] == 0:
                continue
            indicator = np.zeros(n)
            indicator[bounds[index]:bounds[index + 1]] = 1.0
            product = gram.matvec(indicator)
            omega[:, index] = np.bincount(region, weights=product, minlength=n_regions)
            y += product * table[index, region]
        # The spine ancestors' part of zeta_r^T G C0^-1 1_j, and zeta_r^T G zeta_r.
        through = np.cumsum((omega @ table)[::-1], axis=0)[::-1]  # 1_(spine_l)^T G zeta_r
        ancestor_weights = np.where(np.arange(h)[:, None] <= np.arange(n_regions)[None, :],
                                    (c / spine_sizes[:-1])[:, None], 0.0)
        spine_cross = np.sum(ancestor_weights * through[:h], axis=0)
        zeta_norms = np.einsum("ir,ij,jr->r", table, omega, table)

        # Down the tree: parent quantities -> children (vectors over the nodes of a level).
        quadratic = np.zeros(1)  # A_j^T G A_j
        running = np.zeros(1)  # A_j^T G 1_j
        own = np.array([gram.total()])  # 1_j^T G 1_j
        cross_state = np.zeros(1)  # ancestors' part of zeta_r^T G C0^-1 1_j / |j|
        y_sums = np.array([y.sum()])
        region_of = np.zeros(1, dtype=np.int64)  # region of the nodes off the spine
        sizes = np.array([float(n)])
        phi = np.zeros(n)
        rows_prev = gram.row_sums()  # block_row_sums at the root's width
        diagonals = []
        for level in range(1, h + 1):
            width, m = int(widths[level]), int(counts[level])
            parent = np.arange(m) // B
            under_spine = parent == counts[level - 1] - 1
            node_sizes = np.minimum(width, n - np.arange(m) * width).astype(float)
            weight = c[level - 1]
            quadratic = (quadratic[parent] + 2 * weight * running[parent] / sizes[parent]
                         + weight**2 * own[parent] / sizes[parent] ** 2)
            phi += weight * rows_prev / np.repeat(sizes, widths[level - 1])[:n]
            rows = gram.diagonal() if level == h else gram.block_row_sums(width)
            running_next = node_sums(phi, width, m)
            own_next = node_sums(rows, width, m)
            y_next = node_sums(y, width, m)
            cross_state = np.where(under_spine, spine_cross[level - 1],
                                   cross_state[parent] + weight * y_sums[parent] / sizes[parent])
            region_of = np.where(under_spine, level - 1, region_of[parent])
            q0 = (node_sizes**2 * quadratic + 2 * node_sizes * mu[level] * running_next
                  + mu[level] ** 2 * own_next)
            cross = node_sizes * cross_state + mu[level] * y_next
            diagonal = q0 + 2 * node_sizes * cross + node_sizes**2 * zeta_norms[region_of]
            # The spine node is constant on the regions: u^T Omega u.
            u = spine_inverse[:, level] + Z @ (K @ suffix[level])
            diagonal[-1] = u @ omega @ u
            diagonals.append(diagonal / s2[level - 1] ** 2)
            running, own, y_sums = running_next, own_next, y_next
            sizes, rows_prev = node_sizes, rows
        return diagonals
