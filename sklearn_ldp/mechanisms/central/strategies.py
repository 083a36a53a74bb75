r"""Closed-form strategies of the central matrix mechanism (:mod:`.matrix`).

Each is a dense ``r x n`` measurement matrix built per attribute and combined by a Kronecker
product: the hierarchical tree of Hay et al. (:func:`tree_strategy`), the Haar wavelet of
Xiao et al. (:func:`wavelet_strategy`) and the Fourier parities of Barak et al.
(:func:`fourier_basis_strategy`). Choosing among them by name, and the optimized
Eigen-Design strategy, belong to :mod:`sklearn_ldp.selection.central`.

Pure numpy; no scikit-learn here.
"""

import math

import numpy as np

from ..._gram import Gram
from ..._strategy_error import (
    GRAM_SUPPORT_RTOL,
    dense_gram_matrix,
    gram_leak,
    is_structured_workload,
    query_matrix,
    workload_gram,
)
from ..._validation import check_dense_size, check_positive_int
from ..factorization.mechanism import PseudoInverse
from ..marginals.fourier import cell_bit_strings, fourier_coefficients

__all__ = [
    "fourier_basis_strategy",
    "tree_strategy",
    "wavelet_strategy",
]


# ---------------------------------------------------------------------- strategies
def _haar_1d(n):
    """Unnormalized +-1 Haar matrix over ``n`` cells (padded to a power of two, then cut)."""
    levels = max(0, math.ceil(math.log2(n))) if n > 1 else 0
    size = 2**levels
    rows = [np.ones(size)]
    for level in range(levels):
        width = size >> level
        block = np.zeros((size // width, size))
        for node in range(size // width):
            block[node, node * width:node * width + width // 2] = 1.0
            block[node, node * width + width // 2:(node + 1) * width] = -1.0
        rows.append(block)
    H = np.vstack(rows)[:, :n]
    return H[np.any(H != 0, axis=1)]


def _tree_1d(n, branching):
    """Node indicators of a ``branching``-ary tree over ``n`` cells, leaves to root."""
    rows = []
    width = 1
    while True:
        nodes = -(-n // width)
        rows.append((np.arange(n)[None, :] // width == np.arange(nodes)[:, None]).astype(float))
        if nodes == 1:
            break
        width *= branching
    return np.vstack(rows)


def _kron(factors):
    result = np.ones((1, 1))
    for factor in factors:
        result = np.kron(result, factor)
    return result


def _shape_of(shape, n_cells):
    shape = (n_cells,) if shape is None else tuple(int(s) for s in shape)
    if math.prod(shape) != n_cells:
        raise ValueError(f"the domain shape {shape} does not match the {n_cells} cells.")
    return shape


def tree_strategy(shape, branching=2):
    """Hierarchical (Hay et al.) strategy: tree node counts per attribute, Kronecker product.

    Every level including the root is measured (in the central model the total is not known).
    Column norm ``sqrt(number of levels)`` per attribute.

    Parameters
    ----------
    shape : sequence of int
        Categories of each attribute (the domain shape, C order); one attribute for a 1-D
        domain.
    branching : int, default=2
        The fan-out of each attribute's tree (at least 2). A level whose cells do not divide
        evenly ends with a smaller node.

    Returns
    -------
    ndarray of shape (n_measurements, prod(shape))
        The 0/1 strategy: per attribute, one row per tree node (leaves first, root last),
        combined by a Kronecker product over the attributes.

    Raises
    ------
    ValueError
        If ``branching`` is below 2, a category count is not a positive integer, or the
        matrix would exceed the dense-size cap.

    See Also
    --------
    MatrixMechanism : Measures the strategy with Gaussian noise.
    wavelet_strategy : The Haar wavelet strategy, also for range queries.
    hierarchical_strategy : The local-model tree, as a strategy matrix.

    References
    ----------
    .. [1] M. Hay, V. Rastogi, G. Miklau and D. Suciu, "Boosting the accuracy of
       differentially private histograms through consistency", PVLDB 3(1), 2010.

    Examples
    --------
    >>> tree_strategy((4,)).shape   # 4 leaves, 2 nodes, the root
    (7, 4)
    >>> tree_strategy((4,)).sum(axis=0).tolist()  # every cell is in 3 nodes
    [3.0, 3.0, 3.0, 3.0]
    >>> tree_strategy((4, 4)).shape  # two attributes: 7 x 7 node pairs
    (49, 16)
    """
    branching = check_positive_int(branching, "branching", minimum=2)
    shape = tuple(check_positive_int(s, "number of categories") for s in shape)
    rows = math.prod(_tree_1d(s, branching).shape[0] for s in shape)
    check_dense_size(rows, math.prod(shape), "hierarchical")
    return _kron([_tree_1d(s, branching) for s in shape])


def wavelet_strategy(shape):
    """Haar wavelet (Xiao et al.) strategy: +-1 Haar per attribute, Kronecker product.

    Squared sensitivity ``log2(n) + 1`` per attribute of ``n`` (a power of two; otherwise
    padded to the next one and cut to the real cells).

    Parameters
    ----------
    shape : sequence of int
        Categories of each attribute (the domain shape, C order).

    Returns
    -------
    ndarray of shape (n_measurements, prod(shape))
        The strategy: per attribute the total row and the unnormalized +-1 Haar rows (rows
        left empty by the cut are dropped), combined by a Kronecker product.

    Raises
    ------
    ValueError
        If a category count is not a positive integer, or the matrix would exceed the
        dense-size cap.

    See Also
    --------
    MatrixMechanism : Measures the strategy with Gaussian noise.
    tree_strategy : The hierarchical strategy, also for range queries.
    HaarHRR : The local-model Haar mechanism.

    References
    ----------
    .. [1] X. Xiao, G. Wang and J. Gehrke, "Differential privacy via wavelet transforms",
       ICDE 2010.

    Examples
    --------
    >>> wavelet_strategy((4,)).astype(int).tolist()
    [[1, 1, 1, 1], [1, 1, -1, -1], [1, -1, 0, 0], [0, 0, 1, -1]]
    >>> from sklearn_ldp.mechanisms.central.matrix import l2_sensitivity
    >>> wavelet_strategy((8,)).shape, round(l2_sensitivity(wavelet_strategy((8,))) ** 2)
    ((8, 8), 4)
    """
    shape = tuple(check_positive_int(s, "number of categories") for s in shape)
    check_dense_size(math.prod(_haar_1d(s).shape[0] for s in shape), math.prod(shape), "wavelet")
    return _kron([_haar_1d(s) for s in shape])


def _supports(A, W, rtol=1e-8):
    """Boolean per query (row of ``W``): is it in the row space of ``A``?"""
    null = PseudoInverse(A.T @ A).null_space
    W = np.atleast_2d(W)
    if null.shape[1] == 0:
        return np.ones(W.shape[0], dtype=bool)
    residual = np.linalg.norm(W @ null, axis=1)
    return residual <= rtol * np.maximum(np.linalg.norm(W, axis=1), 1e-300)


def _gram_supports(A, G):
    """Whether the workload of Gram ``G`` (dense) lies in the row space of ``A``."""
    null = PseudoInverse(A.T @ A).null_space
    return null.shape[1] == 0 or gram_leak(null, G) <= GRAM_SUPPORT_RTOL


def fourier_basis_strategy(shape, workload_matrix=None, max_order=None):
    """Fourier (Barak et al.) strategy: +-1 parity queries over the records' bit strings.

    Each attribute is written in ``ceil(log2 r)`` bits; the rows are the characters
    ``(-1)^popcount(alpha & bits(cell))`` for the total (``alpha = 0``) and the coefficients
    touching at most ``max_order`` attributes. Unnecessary rows are removed (LM12): when
    every attribute has a power-of-two number of categories the characters are orthogonal and
    exactly those with ``W chi != 0`` are kept; otherwise (``max_order=None``) the least
    order that supports the workload is used. Sensitivity ``sqrt(rows)``.

    ``workload_matrix`` is a query matrix, a Workload or a Gram operator: only ``W^T W`` is
    needed (``||W chi||^2 = chi^T G chi``, and the row space of ``W`` is the range of ``G``),
    so a structured workload is never written down as ``p x n``.

    Parameters
    ----------
    shape : sequence of int
        Categories of each attribute (the domain shape, C order).
    workload_matrix : workload, Gram or array-like of shape (n_queries, prod(shape)), optional
        The workload to answer: rows it does not need are removed. None keeps every
        character up to ``max_order``.
    max_order : int, optional
        Keep the characters that touch at most this many attributes (default: all, or with
        a workload and attributes whose category counts are not powers of two, the least
        order that supports it).

    Returns
    -------
    ndarray of shape (n_measurements, prod(shape))
        The +-1 strategy, one character per row (the total first when it is kept).

    Raises
    ------
    ValueError
        If a category count or ``max_order`` is not a positive integer, or the matrix would
        exceed the dense-size cap.

    See Also
    --------
    MatrixMechanism : Measures the strategy with Gaussian noise.
    fourier_strategy : The local-model Fourier strategy for marginals.

    References
    ----------
    .. [1] B. Barak, K. Chaudhuri, C. Dwork, S. Kale, F. McSherry and K. Talwar, "Privacy,
       accuracy, and consistency too: a holistic solution to contingency table release",
       PODS 2007.
    .. [2] C. Li and G. Miklau, "An adaptive mechanism for accurate query answering under
       differential privacy", PVLDB 5(6), 2012 (the unnecessary rows removed).

    Examples
    --------
    >>> fourier_basis_strategy((2, 2)).shape
    (4, 4)

    For the one-way marginals of three binary attributes only the total and the three
    order-1 characters are needed:

    >>> from sklearn_ldp import workloads
    >>> one_way = workloads.marginals({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, k=1)
    >>> fourier_basis_strategy((2, 2, 2), one_way).shape
    (4, 8)
    """
    shape = tuple(check_positive_int(s, "number of categories") for s in shape)
    n = math.prod(shape)
    orders = [len(shape)] if max_order is None else [check_positive_int(max_order, "max_order")]
    power_of_two = all(s & (s - 1) == 0 for s in shape)
    if max_order is None and workload_matrix is not None and not power_of_two:
        orders = list(range(1, len(shape) + 1))
    if workload_matrix is None:
        W = G = None
    elif isinstance(workload_matrix, Gram) or is_structured_workload(workload_matrix):
        W, G = None, dense_gram_matrix(workload_gram(workload_matrix))
    else:
        W, G = query_matrix(workload_matrix), None
    for order in orders:
        masks, offsets = fourier_coefficients(shape, order)
        masks = np.concatenate([[0], masks]).astype(np.int64)
        check_dense_size(masks.size, n, "fourier")
        cells = cell_bit_strings(shape, offsets)
        A = 1.0 - 2.0 * (np.bitwise_count(masks[:, None] & cells[None, :]) & 1)
        if workload_matrix is None:
            return A
        if power_of_two:
            if W is not None:
                weight = np.sum((W @ A.T) ** 2, axis=0)
            else:
                weight = np.einsum("ij,ij->i", A @ G, A)
            A = A[weight > 1e-12 * max(weight.max(), 1e-300)]
        supported = _supports(A, W).all() if W is not None else _gram_supports(A, G)
        if supported or order == orders[-1]:
            return A
    return A
