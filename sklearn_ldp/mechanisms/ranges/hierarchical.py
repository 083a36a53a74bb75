"""Hierarchical strategy for range queries (Cormode, Kulkarni, Srivastava), as a matrix.

A tree of fan-out ``B`` over the ordered domain: level ``L`` groups ``B^L`` consecutive cells
into one node (level 0 = the leaves; the root, which every range knows to be the total, is not
measured). Each user samples one level uniformly and reports their node at that level through
Hadamard response with the full budget. Domains that are not a power of ``B`` are padded: the
last node of a level simply covers fewer cells.

This dense form is the ``"hierarchical_matrix"`` strategy (a factorization baseline with the
optimal decoder, for small domains). The structured ``"hierarchical"`` strategy (any domain
size, OUE/OLH/HRR levels, consistency step) is
:class:`~sklearn_ldp.mechanisms.ranges.tree.HierarchicalHistogram`.
"""

import numpy as np

from ..._validation import check_dense_size, check_epsilon, check_positive_int
from ..oracles.hadamard_layout import hadamard_strategy


def hierarchical_levels(n, branching):
    """Node counts per level, leaves first, for levels with ``branching^L < n``."""
    levels = []
    width = 1
    while width < n:
        levels.append(-(-n // width))  # ceil(n / width)
        width *= branching
    return levels or [1]


def hierarchical_strategy(n, epsilon, branching=4):
    """Stacked per-level Hadamard response strategies, divided by the number of levels.

    Each user samples one level of the tree uniformly (leaves first, root excluded) and
    reports their node at that level by Hadamard response with the whole budget: exactly
    epsilon-LDP. The dense ``"hierarchical_matrix"`` baseline, for small domains.

    Parameters
    ----------
    n : int
        Number of cells of the ordered domain.
    epsilon : float
        The privacy budget.
    branching : int, default=4
        The fan-out of the tree (at least 2); level ``L`` groups ``branching^L`` consecutive
        cells (the last node of a level may cover fewer).

    Returns
    -------
    ndarray of shape (n_outputs, n)
        Column-stochastic: the levels' Hadamard response strategies (each mapped to its
        nodes), stacked and divided by the number of levels.

    Raises
    ------
    ValueError
        If an argument is invalid, or the matrix would exceed the dense-size cap.

    See Also
    --------
    HierarchicalHistogram : The structured tree mechanism (any domain size).
    hadamard_strategy : The frequency oracle at each level.
    FactorizationMechanism : Runs a strategy matrix.
    tree_strategy : The central-model tree.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Answering Range Queries Under Local
       Differential Privacy", PVLDB 12(10), 2019.
    .. [2] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
       for linear queries under local differential privacy", PVLDB 13(11):1905-1918, 2020
       (the hierarchical baseline as a strategy matrix).

    Examples
    --------
    >>> hierarchical_strategy(128, 1.0).shape
    (340, 128)

    Over 16 cells it answers every prefix sum (a CDF) without bias:

    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import FactorizationMechanism
    >>> mechanism = FactorizationMechanism(hierarchical_strategy(16, 1.0), 1.0)
    >>> prefix = np.tril(np.ones((16, 16)))
    >>> bool(mechanism.supports(prefix))
    True
    >>> round(mechanism.expected_error(prefix.T @ prefix)["worst_case"], 1)  # per user
    201.6
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    branching = check_positive_int(branching, "branching", minimum=2)
    levels = hierarchical_levels(n, branching)
    blocks = []
    for level, n_nodes in enumerate(levels):
        node_of_cell = np.arange(n) // branching**level
        if n_nodes == 1:
            blocks.append(np.ones((1, n)))  # a single node: the report carries nothing
        else:
            blocks.append(hadamard_strategy(n_nodes, epsilon)[:, node_of_cell])
    check_dense_size(sum(block.shape[0] for block in blocks), n, "hierarchical")
    return np.vstack(blocks) / len(levels)
