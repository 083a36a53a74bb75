"""Unary encoding (basic RAPPOR, symmetric) as an exact strategy matrix.

Each user sends a bit vector of length ``n``: bit ``u`` (their type) is 1 with probability
``p = e^{eps/2} / (1 + e^{eps/2})`` and every other bit is 1 with probability ``1 - p``. As a
strategy matrix the outputs are all ``2^n`` bit vectors, so this exact form is only for small
domains.
"""

import numpy as np

from .._validation import check_epsilon, check_positive_int

MAX_EXACT_RAPPOR_CELLS = 16


def rappor_strategy(n, epsilon):
    """The ``2^n x n`` strategy of symmetric unary encoding (outputs indexed by bit vectors).

    Output ``y`` (an integer whose bit ``u`` is bit ``u`` of the report) has probability
    ``p^(n-h) (1-p)^h`` for a user of type ``u``, ``h`` the Hamming distance from ``y`` to the
    one-hot vector of ``u``.

    Examples
    --------
    >>> rappor_strategy(3, 1.0).shape
    (8, 3)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    if n > MAX_EXACT_RAPPOR_CELLS:
        raise ValueError(
            f"the exact 'rappor' strategy matrix has 2^n rows and is limited to n <= "
            f"{MAX_EXACT_RAPPOR_CELLS} cells (got {n}); use 'hadamard' or 'optimized' instead."
        )
    p = np.exp(epsilon / 2) / (1 + np.exp(epsilon / 2))
    outputs = np.arange(2**n)[:, None]
    bits = (outputs >> np.arange(n)[None, :]) & 1  # bits[y, u] = bit u of output y
    ones = bits.sum(axis=1, keepdims=True)
    hamming = ones + 1 - 2 * bits  # distance from y to the one-hot vector e_u
    return p ** (n - hamming) * (1 - p) ** hamming
