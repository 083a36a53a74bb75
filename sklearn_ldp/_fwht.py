"""Fast Walsh-Hadamard transform and Hadamard signs (pure numpy).

The Sylvester Hadamard matrix of order ``K = 2^k`` has entries

    H[i, j] = (-1)^popcount(i & j),

the same matrix as ``scipy.linalg.hadamard(K)``. It is symmetric and ``H H = K I``. The
transform ``y = H x`` is computed in ``O(K log K)`` by the butterfly recursion

    H_{2h} = [[H_h, H_h], [H_h, -H_h]]:   (a, b) -> (a + b, a - b)

applied on pairs ``(i, i + h)`` inside blocks of ``2h`` entries, for ``h = 1, 2, ..., K/2``.
Each level is one vectorized numpy operation over every block and every leading axis, so the
only Python loop is over the ``log2 K`` levels.
"""

import numpy as np


def is_power_of_two(value):
    """Whether ``value`` is a positive integer power of two (``1`` included).

    Examples
    --------
    >>> is_power_of_two(8), is_power_of_two(12), is_power_of_two(1)
    (True, False, True)
    """
    value = int(value)
    return value >= 1 and value & (value - 1) == 0


def fwht(values, axis=-1):
    """Unnormalized fast Walsh-Hadamard transform ``H @ x`` along one axis.

    Parameters
    ----------
    values : array-like
        Real values; the length along ``axis`` must be a power of two ``K``. Any number of
        other (leading or trailing) axes is transformed independently.
    axis : int, default=-1
        The axis to transform.

    Returns
    -------
    ndarray of float64
        A new array of the same shape; ``values`` is not modified.

    Examples
    --------
    >>> fwht([1.0, 0.0, 0.0, 0.0])
    array([1., 1., 1., 1.])
    >>> fwht([[1, 2], [3, 4]])
    array([[ 3., -1.],
           [ 7., -1.]])
    """
    array = np.asarray(values)
    if array.ndim == 0:
        raise ValueError("fwht needs at least one axis to transform.")
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool) or np.iscomplexobj(
        array
    ):
        raise ValueError(f"fwht transforms real numbers, got dtype {array.dtype}.")
    # A C-contiguous float64 copy with the transformed axis last: every level below is then a
    # reshape (no copy) and two in-place updates.
    moved = np.ascontiguousarray(np.moveaxis(array, axis, -1), dtype=np.float64)
    if moved is array or np.shares_memory(moved, array):
        moved = moved.copy()
    length = moved.shape[-1]
    if not is_power_of_two(length):
        raise ValueError(
            f"fwht needs a power-of-two length along the transformed axis, got {length}."
        )
    leading = moved.shape[:-1]
    flat = moved.reshape(-1, length)
    half = 1
    while half < length:
        pairs = flat.reshape(flat.shape[0], length // (2 * half), 2, half)
        first = pairs[:, :, 0, :]
        second = pairs[:, :, 1, :]
        difference = first - second
        first += second
        second[...] = difference
        half *= 2
    return np.moveaxis(flat.reshape(leading + (length,)), -1, axis)


def hadamard_parity(rows, columns):
    """``popcount(rows & columns) mod 2`` elementwise: 0 where ``H[row, col] = +1``, else 1.

    Parameters
    ----------
    rows, columns : array-like of non-negative integers (broadcast together)

    Returns
    -------
    ndarray of uint8

    Examples
    --------
    >>> hadamard_parity([1, 3, 3], [1, 1, 3])
    array([1, 1, 0], dtype=uint8)
    """
    both = np.bitwise_and(np.asarray(rows, dtype=np.int64), np.asarray(columns, dtype=np.int64))
    return (np.bitwise_count(both) & 1).astype(np.uint8)


def hadamard_signs(rows, columns):
    """Entries ``H[row, col] = (-1)^popcount(row & col)`` as float64 (+1 or -1).

    Examples
    --------
    >>> hadamard_signs(np.arange(4)[:, None], np.arange(4)[None, :])
    array([[ 1.,  1.,  1.,  1.],
           [ 1., -1.,  1., -1.],
           [ 1.,  1., -1., -1.],
           [ 1., -1., -1.,  1.]])
    """
    return 1.0 - 2.0 * hadamard_parity(rows, columns)
