"""The tree of a hierarchical histogram: its levels, node sums and consistency.

Tree. A complete ``B``-ary tree over the ordered domain ``[0, n)``: ``h`` is the least integer
with ``B^h >= n``; level ``l = 0`` is the root, level ``l`` has nodes of width ``B^(h-l)`` and
level ``h`` holds the leaves (the cells). When ``n`` is not a power of ``B`` the domain is
padded to ``B^h`` with virtual cells that nobody holds: a level only has the
``m_l = ceil(n / B^(h-l))`` nodes that cover a real cell (the last may be partial), and the
nodes made only of padding are known to be zero, so they are neither reported nor estimated.

Consistency (Hay, Rastogi, Miklau, Suciu 2010, adapted with the root known). The tree
measurements are weighted least squares: minimize ``sum_l ||yhat_l - H_l x||^2 / s_l^2`` over
the leaves ``x`` subject to ``sum(x) = N``, where ``H_l`` sums cells into level-``l`` nodes and
``s_l^2`` is the level's per-node noise variance. :func:`tree_consistency` solves it exactly
in two linear passes (bottom-up inverse-variance averaging of each node with the sum of its
children; top-down distribution of each parent's residual to its children in proportion to
their variances). With equal variances and a complete tree it is exactly the thesis's
formulas (weights ``(B^i - B^(i-1)) / (B^i - 1)`` and ``1/B``). Every range is then a sum of
consistent leaves, so ``estimate`` returns them: the unbiased leaf histogram. Without
consistency, :meth:`~.tree.HierarchicalHistogram.range_counts` answers a range by its B-adic
decomposition (at most ``2 (B - 1)`` nodes per level).

The mechanism is :class:`~.tree.HierarchicalHistogram`; its exact variances are in
:mod:`.tree_variance`.
"""


import numpy as np

from ..._validation import check_positive_int


def check_branching(branching):
    """Check the fan-out ``B`` of a tree: an int >= 2.

    Parameters
    ----------
    branching : int
        Children per node of the tree.

    Returns
    -------
    int
        ``branching`` as a Python int.

    Raises
    ------
    ValueError
        If ``branching`` is not an integer of at least 2 (the message names it).

    See Also
    --------
    tree_height : The height of the tree over ``n`` cells.

    Examples
    --------
    >>> check_branching(4)
    4
    """
    return check_positive_int(branching, "branching (the fan-out B of the tree)", minimum=2)


def tree_height(n, branching):
    """The height of a ``B``-ary tree over ``n`` cells: the least ``h >= 1`` with ``B^h >= n``.

    Parameters
    ----------
    n : int
        Number of cells (leaves that hold users), at least 1.
    branching : int
        Fan-out ``B`` of the tree, at least 2.

    Returns
    -------
    int
        ``h``: the tree reports levels ``1..h`` (the root, level 0, is the known total).

    See Also
    --------
    level_sizes : The nodes of each level.

    Examples
    --------
    >>> tree_height(1440, 4), tree_height(256, 2), tree_height(2, 16)
    (6, 8, 1)
    """
    n = check_positive_int(n, "n")
    branching = check_branching(branching)
    height, width = 1, branching
    while width < n:
        width *= branching
        height += 1
    return height


def level_sizes(n, branching):
    """Nodes per level ``l = 1..h`` that cover a real cell: ``ceil(n / B^(h-l))``.

    Parameters
    ----------
    n : int
        Number of cells, at least 1.
    branching : int
        Fan-out ``B`` of the tree, at least 2.

    Returns
    -------
    list of int
        The number of nodes of each level, coarsest first (the last is ``n``). Nodes made
        only of padding cells (when ``n`` is not a power of ``B``) are left out.

    See Also
    --------
    tree_height : The number of levels.

    Examples
    --------
    >>> level_sizes(10, 2)   # padded to 16 leaves
    [2, 3, 5, 10]
    """
    height = tree_height(n, branching)
    return [-(-n // branching ** (height - level)) for level in range(1, height + 1)]


def node_sums(values, width, n_nodes):
    """Sums of consecutive blocks of ``width`` entries along the last axis (zero-padded).

    Parameters
    ----------
    values : array-like of shape (..., m)
        Values of the nodes (or cells) of one level, along the last axis.
    width : int
        Entries per block (children per parent).
    n_nodes : int
        Number of blocks; ``values`` is padded with zeros to ``n_nodes * width`` entries.

    Returns
    -------
    ndarray of shape (..., n_nodes)
        The block sums (the parents' values), in the dtype of ``values``.

    See Also
    --------
    tree_consistency : Uses it to sum children into their parents.

    Examples
    --------
    >>> node_sums(np.arange(5), 2, 3)
    array([1, 5, 4])
    """
    values = np.asarray(values)
    missing = n_nodes * width - values.shape[-1]
    if missing:
        padding = np.zeros(values.shape[:-1] + (missing,), dtype=values.dtype)
        values = np.concatenate([values, padding], axis=-1)
    return values.reshape(values.shape[:-1] + (n_nodes, width)).sum(axis=-1)


def _spread(parent_values, branching, n_children):
    """Each parent's value repeated for its children (last axis)."""
    return np.repeat(parent_values, branching, axis=-1)[..., :n_children]


def tree_consistency(levels, total, branching, level_variances=None):
    """Constrained least-squares (BLUE) node values of a B-ary tree with a known root.

    Parameters
    ----------
    levels : sequence of h arrays
        Noisy node values, coarsest level first; ``levels[k]`` has shape ``(..., m_k)`` with
        ``m_k = ceil(m_{k+1} / branching)`` (the nodes that cover real cells; the missing ones
        are known zeros) and the same leading (batch) axes for every level.
    total : float or array
        The root's known value (the number of users), one per batch entry.
    branching : int
        Fan-out ``B`` of the tree (children per node; the first level has at most ``B``).
    level_variances : sequence of h floats, optional
        Noise variance of one node of each level (default: all equal, Hay et al.'s case).

    Returns
    -------
    list of h arrays
        Consistent node values: every parent equals the sum of its children and the first
        level sums to ``total``.

    Raises
    ------
    ValueError
        If there is no level, a level's size does not match the level below, or the
        variances are not one positive number per level.

    See Also
    --------
    HierarchicalHistogram.consistent_levels : The step applied to a tree's estimates.

    References
    ----------
    .. [1] M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the accuracy of differentially
       private histograms through consistency", PVLDB 3(1), 2010.

    Examples
    --------
    >>> levels = [np.array([5.0, 6.0]), np.array([2.0, 2.0, 3.0, 2.0])]
    >>> [level.round(3).tolist() for level in tree_consistency(levels, 10.0, 2)]
    [[4.5, 5.5], [2.25, 2.25, 3.25, 2.25]]
    """
    levels = [np.asarray(level, dtype=float) for level in levels]
    height = len(levels)
    if height == 0:
        raise ValueError("tree_consistency needs at least one level.")
    variances = np.ones(height) if level_variances is None else np.asarray(level_variances, float)
    if variances.shape != (height,) or np.any(variances <= 0):
        raise ValueError("level_variances must be one positive number per level.")
    if levels[0].shape[-1] > branching:
        raise ValueError("the first level has more nodes than the root's branching.")
    # Stage 1 (bottom-up): subtree estimates and their variances (the same for every batch).
    subtree = [None] * height
    subtree_variance = [None] * height
    subtree[-1] = levels[-1]
    subtree_variance[-1] = np.full(levels[-1].shape[-1], variances[-1])
    for k in range(height - 2, -1, -1):
        n_nodes = levels[k].shape[-1]
        if -(-levels[k + 1].shape[-1] // branching) != n_nodes:
            raise ValueError(f"level {k + 1} has {n_nodes} nodes, which does not match the "
                             f"{levels[k + 1].shape[-1]} nodes of the level below.")
        children_variance = node_sums(subtree_variance[k + 1], branching, n_nodes)
        children_sum = node_sums(subtree[k + 1], branching, n_nodes)
        own = variances[k]
        # Inverse-variance average of the node's own value and the sum of its children.
        combined = own + children_variance
        subtree[k] = (children_variance * levels[k] + own * children_sum) / combined
        subtree_variance[k] = own * children_variance / combined
    # Stage 2 (top-down): each parent's residual goes to its children in proportion to their
    # variances; the root is known exactly.
    consistent = [None] * height
    residual = np.asarray(total, dtype=float) - subtree[0].sum(axis=-1)
    consistent[0] = subtree[0] + (subtree_variance[0] / subtree_variance[0].sum()) * residual[
        ..., None]
    for k in range(height - 1):
        n_parents, n_children = levels[k].shape[-1], levels[k + 1].shape[-1]
        children_variance = node_sums(subtree_variance[k + 1], branching, n_parents)
        residual = consistent[k] - node_sums(subtree[k + 1], branching, n_parents)
        share = subtree_variance[k + 1] / _spread(children_variance, branching, n_children)
        consistent[k + 1] = subtree[k + 1] + share * _spread(residual, branching, n_children)
    return consistent


def range_bounds(lo, hi, n):
    """Closed ranges as two int64 arrays, or a ValueError (lo > hi, outside ``[0, n)``)."""
    lo = np.atleast_1d(np.asarray(lo))
    hi = np.atleast_1d(np.asarray(hi))
    if lo.shape != hi.shape or lo.ndim != 1:
        raise ValueError("lo and hi must be 1-D arrays of the same length.")
    for bound in (lo, hi):
        if bound.size and not np.issubdtype(bound.dtype, np.integer):
            raise ValueError("range bounds must be integer cell indices.")
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    bad = (lo < 0) | (hi >= n) | (lo > hi)
    if np.any(bad):
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"range [{lo[i]}, {hi[i]}] is not a closed range of cells: bounds must satisfy "
            f"0 <= lo <= hi < {n} ({int(bad.sum())} bad ranges)."
        )
    return lo, hi


def range_matrix(lo, hi, n):
    """Dense 0/1 rows of the closed ranges ``[lo_i, hi_i]`` over ``n`` cells.

    Parameters
    ----------
    lo, hi : array-like of int
        First and last cell of each range, ``0 <= lo_i <= hi_i < n``.
    n : int
        Number of cells.

    Returns
    -------
    ndarray of shape (p, n)
        Row ``i`` is 1 on the cells ``lo_i..hi_i`` and 0 elsewhere.

    Raises
    ------
    ValueError
        If a range is not inside ``[0, n)`` with ``lo <= hi`` (the first one is named).

    See Also
    --------
    sklearn_ldp.workloads.ranges : The same queries as a structured workload (no dense rows).

    Examples
    --------
    >>> range_matrix([0, 2], [1, 2], 4)
    array([[1., 1., 0., 0.],
           [0., 0., 1., 0.]])
    """
    lo, hi = range_bounds(lo, hi, n)
    cells = np.arange(n)
    return ((cells >= lo[:, None]) & (cells <= hi[:, None])).astype(float)
