"""Hadamard response (Acharya, Sun, Zhang 2019), general privacy regime, as a strategy matrix.

The ``K`` outputs are split into ``B`` blocks of size ``b`` (powers of two). Input ``j`` lives
in block ``j // (b - 1)`` at Hadamard column ``c = j % (b - 1) + 1`` (column 0, all ones, is
not used). It reports each of the ``b / 2`` outputs of its block where ``H[y, c] = +1`` with
probability ``e^eps / Z`` and every other output with probability ``1 / Z``.
"""

import numpy as np
from scipy.linalg import hadamard

from .._validation import check_dense_size, check_epsilon, check_positive_int


def hadamard_shape(n, epsilon):
    """``(n_blocks, block_size)`` of the general-regime construction."""
    n_blocks = 2 ** (int(np.ceil(np.log2(min(np.exp(epsilon), 2 * n)))) - 1)
    block_size = 2 ** int(np.ceil(np.log2(n / n_blocks + 1)))
    return n_blocks, block_size


def hadamard_strategy(n, epsilon):
    """The ``K x n`` Hadamard response strategy matrix.

    Examples
    --------
    >>> hadamard_strategy(16, 1.0).shape
    (32, 16)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    n_blocks, block_size = hadamard_shape(n, epsilon)
    n_outputs = n_blocks * block_size
    check_dense_size(n_outputs, n, "hadamard")
    inputs = np.arange(n)
    block = inputs // (block_size - 1)
    column = inputs % (block_size - 1) + 1
    signs = hadamard(block_size)[:, column]  # (block_size, n): +1 where the output is favoured
    Q = np.ones((n_outputs, n))
    rows = block[None, :] * block_size + np.arange(block_size)[:, None]
    Q[rows, inputs[None, :]] = np.where(signs > 0, np.exp(epsilon), 1.0)
    return Q / Q.sum(axis=0)
