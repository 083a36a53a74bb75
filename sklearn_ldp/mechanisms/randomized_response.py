"""Randomized response (k-RR, direct encoding) as a strategy matrix.

A user of type ``u`` reports ``u`` with probability ``e^eps / (e^eps + n - 1)`` and each other
type with probability ``1 / (e^eps + n - 1)``.
"""

import numpy as np

from .._validation import check_dense_size, check_epsilon, check_positive_int


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
