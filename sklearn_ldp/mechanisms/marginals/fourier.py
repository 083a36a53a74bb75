"""Fourier (Hadamard-coefficient) strategy for marginals (Cormode, Kulkarni, Srivastava "InpHT").

Each attribute is written in binary (``ceil(log2 r)`` bits for ``r`` categories); a user's
record becomes a bit string. The strategy samples one Fourier coefficient ``alpha`` uniformly
from those that involve at most ``max_order`` attributes (the constant coefficient is excluded:
it is known to be 1), and reports the sign ``(-1)^popcount(alpha & bits)`` through binary
randomized response. Every marginal over at most ``max_order`` attributes lies in the row space.
Codes that map to no category are simply not columns of the matrix.
"""

from itertools import product

import numpy as np

from ..._validation import check_dense_size, check_epsilon, check_positive_int
from .._base.ratio import sign_weights


def attribute_bits(shape):
    """Number of bits that encode each attribute: ``ceil(log2 r)`` (0 for one category)."""
    return [int(np.ceil(np.log2(size))) if size > 1 else 0 for size in shape]


def fourier_coefficients(shape, max_order):
    """Coefficient masks (ints over the concatenated bits) touching 1..max_order attributes."""
    bits = attribute_bits(shape)
    offsets = np.cumsum([0] + bits[::-1])[:-1][::-1]  # first attribute = most significant bits
    per_attribute = [
        [0] + [mask << int(offset) for mask in range(1, 2**n_bits)]
        for n_bits, offset in zip(bits, offsets, strict=True)
    ]
    masks = []
    for combination in product(*per_attribute):
        order = sum(mask != 0 for mask in combination)
        if 1 <= order <= max_order:
            masks.append(sum(combination))
    return np.array(sorted(masks), dtype=np.int64), offsets


def cell_bit_strings(shape, offsets):
    """The bit string (as an int) of every cell in C order."""
    codes = np.indices(shape).reshape(len(shape), -1)
    return np.sum(codes.astype(np.int64) << np.asarray(offsets, dtype=np.int64)[:, None], axis=0)


def fourier_strategy(shape, epsilon, max_order=None):
    """The ``2T x n`` strategy: row ``t`` / ``T + t`` = coefficient ``t`` reported as +1 / -1.

    Each user samples one of the ``T`` Fourier coefficients that touch 1 to ``max_order``
    attributes, uniformly, and reports its sign ``(-1)^popcount(alpha & bits)`` through
    binary randomized response (kept with probability ``a / (a + d)``, the integer weights of
    :func:`~._ratio.sign_weights`, nominally ``e^eps / (1 + e^eps)``): exactly epsilon-LDP,
    and every marginal over at most ``max_order`` attributes lies in the row space. The dense
    form of :class:`InpHT`, for the factorization baselines.

    Parameters
    ----------
    shape : tuple of int
        Category counts of the attributes (the domain shape, C order).
    epsilon : float
        The privacy budget.
    max_order : int, optional
        Largest number of attributes in a marginal that must be answerable (default: all).

    Returns
    -------
    ndarray of shape (2 * T, prod(shape))
        Column-stochastic: ``Q[t, u]`` is the probability that a user in cell ``u`` reports
        coefficient ``t`` as +1, ``Q[T + t, u]`` as -1.

    Raises
    ------
    ValueError
        If no attribute has two or more categories, an argument is invalid, or the matrix
        would exceed the dense-size cap.

    See Also
    --------
    InpHT : The same mechanism without a dense matrix, for large domains.
    FactorizationMechanism : Runs a strategy matrix.
    fourier_basis_strategy : The central-model Fourier strategy.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018 (InpHT).
    .. [2] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
       for linear queries under local differential privacy", PVLDB 13(11):1905-1918, 2020
       (the Fourier baseline as a strategy matrix).

    Examples
    --------
    >>> fourier_strategy((2, 2, 2), 1.0, max_order=2).shape
    (12, 8)

    It answers every 2-way marginal; only the order-3 coefficient is not measured:

    >>> from sklearn_ldp import workloads
    >>> from sklearn_ldp.mechanisms import FactorizationMechanism
    >>> mechanism = FactorizationMechanism(fourier_strategy((2, 2, 2), 1.0, 2), 1.0)
    >>> two_way = workloads.marginals({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, k=2)
    >>> bool(mechanism.supports(two_way)), mechanism.null_space_dim
    (True, 1)
    """
    epsilon = check_epsilon(epsilon)
    shape = tuple(check_positive_int(size, "number of categories") for size in shape)
    max_order = len(shape) if max_order is None else check_positive_int(max_order, "max_order")
    masks, offsets = fourier_coefficients(shape, max_order)
    n_cells = int(np.prod(shape))
    if masks.size == 0:
        raise ValueError("the domain has no attribute with two or more categories.")
    check_dense_size(2 * masks.size, n_cells, "fourier")
    cells = cell_bit_strings(shape, offsets)
    parity = np.bitwise_count(masks[:, None] & cells[None, :]) & 1
    # The realised law of the sign's randomized response: kept with the integer weight a,
    # flipped with d (a / d <= e^eps decided exactly), as HRR and Haar sample it.
    a, d = sign_weights(epsilon, "fourier")[0]
    plus = np.where(parity == 0, a, d) / ((a + d) * masks.size)
    return np.vstack([plus, 1.0 / masks.size - plus])
