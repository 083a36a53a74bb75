"""The layouts of the Hadamard response: its blocks, the cells' columns and the dense strategy.

Strategy. The ``K = B b`` outputs are split into ``B`` blocks of size ``b`` (a power of two).
Each cell ``j`` lives in a block at a Hadamard column ``c >= 1`` (column 0, all ones, is not
used). It reports each of the ``b / 2`` outputs ``y`` of its block where ``H_b[y, c] = +1``
(its "favoured" outputs) with probability ``e^eps / Z`` and every other output with
probability ``1 / Z``, where

    Z = (b / 2) e^eps + K - b / 2.

Every output row holds only the values ``e^eps / Z`` and ``1 / Z``, so the strategy is exactly
epsilon-LDP, whatever the columns. Sampled exactly: the favoured outputs have the integer
weight ``a`` and the others ``d = 2^s`` (:func:`~._ratio.ratio_weights`, ``a / d <= e^eps``
decided on integers), so ``e^eps`` above is the realised ratio ``a / d`` and
``g = (a - d) / (2 d)`` everywhere below (the decoder and every variance use it).

Layout, ``(n_blocks, block_size, hole)``. The full blocks hold ``b - hole`` cells each, in
order, at the columns ``hole .. b - 1`` (``hole`` a power of two at most ``b / 2``; 1: every
column but 0); the cells left over (fewer) go to one partial block at the columns
``1, 2, ...``; the paper's layout may end with empty blocks. The paper's layout
(:func:`hadamard_shape`, ``"paper"``) takes ``B = 2^(ceil(log2 e^eps) - 1)`` blocks, hole 1.


The mechanism is :class:`~.hadamard.HadamardResponse` (which also chooses the layout,
:func:`~.hadamard.hadamard_layout`); its decoder is in :mod:`.hadamard_decoder`, its exact
variances in :mod:`.hadamard_variance`.
"""

import math

import numpy as np
from scipy.linalg import hadamard

from ..._validation import check_dense_size, check_epsilon, check_positive_int
from .._base.docstrings import shared_sections
from .._base.ratio import ratio_weights


def hadamard_shape(n, epsilon):
    """``(n_blocks, block_size)`` of the paper's general-regime construction.

    ``B = 2^(ceil(log2 min(e^eps, 2n)) - 1)`` blocks of ``b = 2^ceil(log2(n / B + 1))``
    outputs each, so that the ``B (b - 1)`` usable Hadamard columns cover the ``n`` inputs,
    filled in order. This is the layout of the specifications written before the layout was
    recorded (``"paper"``); :func:`~.hadamard.hadamard_layout` chooses a better one.

    Examples
    --------
    >>> hadamard_shape(16, 1.0), hadamard_shape(16, 3.0)
    ((2, 16), (16, 2))
    """
    # Exponents are rounded to 9 decimals before the ceiling: at eps = ln 4, say, e^eps lands
    # one ulp above or below 4 depending on the platform's exp, which would change the layout
    # a client (sklearn_ldp.deploy.client, the same formula) derives from the same specification.
    n_blocks = 2 ** (math.ceil(round(math.log2(min(math.exp(epsilon), 2 * n)), 9)) - 1)
    block_size = 2 ** math.ceil(round(math.log2(n / n_blocks + 1), 9))
    return n_blocks, block_size


def paper_layout(n, epsilon):
    """The layout of :func:`hadamard_shape`: ``(n_blocks, block_size, hole = 1)``."""
    return (*hadamard_shape(n, epsilon), 1)


def block_counts(n, block_size, hole):
    """``(full blocks, cells of the last, partial block)`` of a layout: full blocks hold
    ``b - hole`` cells each, the rest goes to one partial block."""
    load = block_size - hole
    n_full = n // load
    return n_full, n - n_full * load


def check_layout(n, layout):
    """Validate a layout ``(n_blocks, block_size, hole)`` for ``n`` cells; returns it as ints.

    ``block_size`` is a power of two, ``hole`` a power of two at most ``block_size / 2``;
    full blocks hold ``block_size - hole`` cells at the Hadamard columns
    ``hole .. block_size - 1``, the remaining cells (fewer than that) one more block at the
    columns ``1, 2, ...``, and ``n_blocks`` counts these and any empty blocks (only the paper's
    layout has some) after them. At most ``8 n`` outputs (the paper's layout has fewer than
    ``6 n``).

    Examples
    --------
    >>> check_layout(1024, (4, 512, 256))
    (4, 512, 256)
    """
    n = check_positive_int(n, "n")
    if isinstance(layout, str) or not hasattr(layout, "__len__") or len(layout) != 3:
        raise TypeError(f"layout must be a triple (n_blocks, block_size, hole), got "
                        f"{layout!r}.")
    values = []
    for name, value in zip(("n_blocks", "block_size", "hole"), layout, strict=True):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"the layout's {name} must be an integer, got {value!r}.")
        values.append(int(value))
    n_blocks, block_size, hole = values
    if block_size < 2 or block_size & (block_size - 1):
        raise ValueError(f"the layout's block_size must be a power of two, at least 2; got "
                         f"{block_size}.")
    if hole < 1 or hole & (hole - 1) or 2 * hole > block_size:
        raise ValueError(f"the layout's hole must be a power of two at most block_size / 2 = "
                         f"{block_size // 2}; got {hole}.")
    n_full, rest = block_counts(n, block_size, hole)
    needed = n_full + (rest > 0)
    if n_blocks < needed or n_blocks * block_size > 8 * n:
        raise ValueError(f"the layout's n_blocks must be at least {needed} (the blocks "
                         f"of {block_size - hole} cells that {n} cells need) with at most "
                         f"{8 * n} outputs; got {n_blocks} blocks of {block_size}.")
    return n_blocks, block_size, hole


def block_and_column(cells, block_size, hole, n_full):
    """Block and Hadamard column of each cell (integer arrays): cell ``j < F (b - hole)``
    sits in block ``j // (b - hole)`` at column ``hole + j % (b - hole)``, the cells after the
    full blocks in the partial block at columns ``1, 2, ...``."""
    load = block_size - hole
    block = cells // load
    column = cells % load + np.where(block < n_full, hole, 1)
    return block, column


# The parameters ``n`` and ``epsilon`` of the layout functions, written in at
# ``<cells and budget>``.
cells_and_budget = shared_sections({"cells and budget": """\
Parameters
----------
n : int
    Number of cells.
epsilon : float
    The privacy budget."""})


@cells_and_budget
def hadamard_strategy(n, epsilon, layout=None):
    """The ``K x n`` Hadamard response strategy matrix.

    <cells and budget>
    layout : tuple of int, optional
        ``(n_blocks, block_size, hole)`` (see :func:`check_layout`); by default the paper's
        layout of :func:`hadamard_shape` (the strategy of the ``"hierarchical_matrix"``
        levels), ``mechanism.layout`` for a :class:`~.hadamard.HadamardResponse`.

    Returns
    -------
    ndarray of shape (n_blocks * block_size, n)
        Column ``j``: ``e^eps / Z`` on the favoured half of its block (where the Hadamard
        column of ``j`` is ``+1``), ``1 / Z`` elsewhere.

    See Also
    --------
    sklearn_ldp.mechanisms.oracles.hadamard.HadamardResponse : The mechanism, structured (no
        dense matrix).
    sklearn_ldp.mechanisms.oracles.hadamard.hadamard_layout : The layout with the least
        average variance.

    Examples
    --------
    >>> hadamard_strategy(16, 1.0).shape
    (32, 16)
    >>> hadamard_strategy(16, 1.0, layout=(1, 32, 16)).shape   # one block, upper half
    (32, 16)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    n_blocks, block_size, hole = check_layout(
        n, paper_layout(n, epsilon) if layout is None else layout)
    n_outputs = n_blocks * block_size
    check_dense_size(n_outputs, n, "hadamard")
    inputs = np.arange(n)
    block, column = block_and_column(inputs, block_size, hole,
                                      block_counts(n, block_size, hole)[0])
    signs = hadamard(block_size)[:, column]  # (block_size, n): +1 where the output is favoured
    # The realised law: favoured weight a, others d (the integers the mechanism samples).
    half = block_size // 2
    a, d = ratio_weights(epsilon, half, n_outputs - half, "hadamard")
    Q = np.full((n_outputs, n), float(d))
    rows = block[None, :] * block_size + np.arange(block_size)[:, None]
    Q[rows, inputs[None, :]] = np.where(signs > 0, float(a), float(d))
    return Q / (half * a + (n_outputs - half) * d)
