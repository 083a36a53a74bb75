"""Gram matrices ``G = W^T W`` of workloads as structured ``n x n`` operators.

Everything a mechanism needs to know about a workload to compute its error lives in
``G``: the total variance contributed by a user of type ``u`` is ``tr(G Cov_u)``. A frequency
oracle needs only ``diag(G)``, ``G 1`` and ``1^T G 1``; range mechanisms also need sums of
``G`` over blocks of consecutive cells (``block_sums``) and each cell's row of ``G`` summed over
its own block (``block_row_sums``); ``supports_blocks(width)`` says whether a Gram computes these
from its structure. Each class below computes those from the structure
(HDMM's implicit matrices, McKenna et al., VLDB 2018), so nothing ``n x n`` is formed for the
workloads users have at ``n = 2^20``.

Closed forms (0-based cells, ``n`` cells):

* histogram: ``G = I``;
* total (one query summing every cell): ``G = 1 1^T``;
* prefix (rows ``[0, i]``): ``G[i, j] = n - max(i, j)``;
* all ranges ``[a, b]``: ``G[i, j] = (min(i, j) + 1) (n - max(i, j))``.

The last two have the form ``f(min(i, j)) g(max(i, j))`` (:class:`MinMaxGram`), whose products
and block sums take cumulative sums only. Kronecker products (marginals) and weighted sums
(unions of workloads) combine factor Grams without forming them; Kronecker block sums are
structured when the blocks do not cut across the factors (``KronGram._aligned``). Chosen
intervals have :class:`IntervalGram` (``G[i, j]`` counts the intervals holding both cells),
and :class:`SummaryGram` carries only the diagonal, row sums and total that a frequency
oracle's error needs.

Pure numpy; no scikit-learn here.
"""

import numpy as np
import scipy.sparse.linalg

from ._validation import MAX_DENSE_ENTRIES


def _as_columns(x, n):
    """``(X, was_vector)``: ``x`` as an ``(n, k)`` float array."""
    X = np.asarray(x, dtype=float)
    if X.ndim == 1:
        if X.shape[0] != n:
            raise ValueError(f"expected a vector of length {n}, got length {X.shape[0]}.")
        return X[:, np.newaxis], True
    if X.ndim != 2 or X.shape[0] != n:
        raise ValueError(f"expected an array of shape ({n},) or ({n}, k), got {X.shape}.")
    return X, False


def check_dense_entries(n_rows, n_columns, what, advice):
    """Refuse a dense ``n_rows x n_columns`` array past ``MAX_DENSE_ENTRIES`` entries."""
    if n_rows * n_columns > MAX_DENSE_ENTRIES:
        raise ValueError(
            f"{what} would be a dense {n_rows} x {n_columns} matrix ({n_rows * n_columns} "
            f"float64 entries, {8 * n_rows * n_columns / 2**30:.1f} GiB; limit "
            f"{MAX_DENSE_ENTRIES} entries). {advice}"
        )


class Gram:
    """A symmetric ``n x n`` operator ``W^T W`` (base class).

    Subclasses implement ``_matvec`` (on an ``(n, k)`` array) and ``diagonal``; they may
    override the other methods with closed forms. :meth:`Workload.gram
    <sklearn_ldp.workloads.Workload.gram>` returns one.

    Parameters
    ----------
    n : int
        The number of domain cells (rows and columns of ``G``).

    See Also
    --------
    sklearn_ldp.workloads.Workload.gram : The Gram of a workload.

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> G = workloads.all_range(4).gram()
    >>> G.diagonal(), G.total()
    (array([4., 6., 6., 4.]), 50.0)
    """

    # Whether block sums come from the structure at every width (subclasses whose answer
    # depends on the width override supports_blocks instead).
    _blocks_from_structure = False

    def __init__(self, n):
        self.n = int(n)

    @property
    def shape(self):
        """``(n, n)`` (tuple of int)."""
        return (self.n, self.n)

    def _matvec(self, X):
        raise NotImplementedError

    def matvec(self, x):
        """``G x`` for a vector ``(n,)`` or a block of vectors ``(n, k)``.

        Parameters
        ----------
        x : array-like of shape (n,) or (n, k)
            One vector, or ``k`` vectors as columns.

        Returns
        -------
        ndarray of shape (n,) or (n, k)
            The product, shaped like ``x``.
        """
        X, vector = _as_columns(x, self.n)
        result = self._matvec(X)
        return result[:, 0] if vector else result

    def __matmul__(self, x):
        return self.matvec(x)

    def diagonal(self):
        """``diag(G)``: the squared norm of each workload column.

        Returns
        -------
        ndarray of shape (n,)
            ``G[u, u]`` for every cell ``u``.
        """
        raise NotImplementedError

    def trace(self):
        """``tr(G)``: the squared Frobenius norm of the workload.

        Returns
        -------
        float
            The sum of :meth:`diagonal`.
        """
        return float(self.diagonal().sum())

    def row_sums(self):
        """``G 1`` (computed once: every candidate of a selection asks for it).

        Returns
        -------
        ndarray of shape (n,)
            The sum of each row of ``G`` (a copy).
        """
        cached = getattr(self, "_row_sums_cache", None)
        if cached is None:
            cached = self._row_sums_cache = self.matvec(np.ones(self.n))
        return cached.copy()

    def total(self):
        """``1^T G 1``: the squared norm of the answers on the all-ones data vector.

        Returns
        -------
        float
            The sum of every entry of ``G``.
        """
        return float(self.row_sums().sum())

    def toarray(self):
        """The dense ``n x n`` matrix (refused past ``MAX_DENSE_ENTRIES`` entries).

        Returns
        -------
        ndarray of shape (n, n)
            ``W^T W``, dense.

        Raises
        ------
        ValueError
            If ``n * n`` exceeds ``MAX_DENSE_ENTRIES``.
        """
        check_dense_entries(self.n, self.n, "The Gram matrix",
                            "Use its operator methods (matvec, diagonal, row_sums) instead.")
        return self._matvec(np.eye(self.n))

    def __array__(self, dtype=None, copy=None):
        # np.asarray(W.gram()) keeps working for small workloads (gram() was a dense array).
        dense = self.toarray()
        return dense if dtype is None else dense.astype(dtype)

    def block_sums(self, width, offset=0):
        """Sums of ``G`` over pairs of blocks of ``width`` consecutive cells.

        Cells are cut into ``ceil(n / width)`` blocks (the last one may be short); entry ``b``
        is ``1_b^T G 1_{b + offset}``, for every ``b`` with ``b + offset`` a block. Range
        mechanisms (Haar, trees) need these for ``offset`` 0 and 1.

        Parameters
        ----------
        width : int
            The number of consecutive cells per block.
        offset : int, default=0
            Which block pairs: block ``b`` with block ``b + offset``.

        Returns
        -------
        ndarray of shape (ceil(n / width) - offset,)
            One sum per block pair.
        """
        dense = self.toarray()
        n_blocks = -(-self.n // width)
        pad = n_blocks * width - self.n
        padded = np.pad(dense, ((0, pad), (0, pad)))
        sums = padded.reshape(n_blocks, width, n_blocks, width).sum(axis=(1, 3))
        return np.diagonal(sums, offset=offset).copy()

    def block_row_sums(self, width):
        """``R[x] = sum_{y in block(x)} G[x, y]``: each cell's row summed over its own block.

        Blocks are those of :meth:`block_sums` (``width`` consecutive cells, the last one
        possibly short), so summing ``R`` over a block gives that block's ``block_sums``
        entry. A consistent range tree needs these at every level width.

        Parameters
        ----------
        width : int
            The number of consecutive cells per block.

        Returns
        -------
        ndarray of shape (n,)
            ``R[x]`` for every cell ``x``.
        """
        dense = self.toarray()
        n_blocks = -(-self.n // width)
        padded = np.pad(dense, ((0, 0), (0, n_blocks * width - self.n)))
        per_block = padded.reshape(self.n, n_blocks, width).sum(axis=2)
        return per_block[np.arange(self.n), np.arange(self.n) // width]

    def supports_blocks(self, width):
        """Whether ``block_sums(width, 0)`` and ``block_row_sums(width)`` come from the
        structure (or a stored matrix) rather than from forming the dense ``n x n`` matrix.

        Parameters
        ----------
        width : int
            The block width, as in :meth:`block_sums`.

        Returns
        -------
        bool
            True if they are computed without the dense matrix.
        """
        return self._blocks_from_structure

    def aslinearoperator(self):
        """A :class:`scipy.sparse.linalg.LinearOperator` (symmetric).

        Returns
        -------
        scipy.sparse.linalg.LinearOperator
            An ``n x n`` operator whose products call :meth:`matvec`.
        """
        return scipy.sparse.linalg.LinearOperator(
            self.shape, matvec=self.matvec, rmatvec=self.matvec, matmat=self.matvec,
            dtype=float)

    def __repr__(self):
        return f"{type(self).__name__}(n={self.n})"


class DenseGram(Gram):
    """A Gram held as an explicit (small) matrix."""

    _blocks_from_structure = True  # the matrix is stored: O(n^2) per width, no new n x n array

    def __init__(self, matrix):
        matrix = np.asarray(matrix, dtype=float)
        super().__init__(matrix.shape[0])
        matrix.flags.writeable = False
        self._matrix = matrix

    def _matvec(self, X):
        return self._matrix @ X

    def diagonal(self):
        return np.diagonal(self._matrix).copy()

    def toarray(self):
        return self._matrix.copy()

    def block_sums(self, width, offset=0):
        n_blocks = -(-self.n // width)
        pad = n_blocks * width - self.n
        padded = np.pad(self._matrix, ((0, pad), (0, pad)))
        sums = padded.reshape(n_blocks, width, n_blocks, width).sum(axis=(1, 3))
        return np.diagonal(sums, offset=offset).copy()

    def block_row_sums(self, width):
        n_blocks = -(-self.n // width)
        padded = np.pad(self._matrix, ((0, 0), (0, n_blocks * width - self.n)))
        per_block = padded.reshape(self.n, n_blocks, width).sum(axis=2)
        return per_block[np.arange(self.n), np.arange(self.n) // width]


def _block_sizes(n, width):
    """Cells in each of the ``ceil(n / width)`` blocks (the last one may be short)."""
    n_blocks = -(-n // width)
    sizes = np.full(n_blocks, float(width))
    sizes[-1] = n - width * (n_blocks - 1)
    return sizes


class _ScaledPatternGram(Gram):
    """``scale`` times a fixed 0/1 pattern whose diagonal is all ones (identity, all ones):
    block sums are closed forms of the block sizes."""

    _blocks_from_structure = True

    def __init__(self, n, scale=1.0):
        super().__init__(n)
        self.scale = float(scale)

    def diagonal(self):
        return np.full(self.n, self.scale)


class IdentityGram(_ScaledPatternGram):
    """``scale * I`` (the histogram, possibly weighted)."""

    def _matvec(self, X):
        return self.scale * X

    def row_sums(self):
        return self.diagonal()

    def total(self):
        return self.scale * self.n

    def block_sums(self, width, offset=0):
        n_blocks = -(-self.n // width)
        if offset:
            return np.zeros(max(n_blocks - offset, 0))
        return self.scale * _block_sizes(self.n, width)

    def block_row_sums(self, width):
        return np.full(self.n, self.scale)


class OnesGram(_ScaledPatternGram):
    """``scale * 1 1^T`` (the single query "total")."""

    def _matvec(self, X):
        return np.broadcast_to(self.scale * X.sum(axis=0), X.shape).copy()

    def row_sums(self):
        return np.full(self.n, self.scale * self.n)

    def total(self):
        return self.scale * self.n * self.n

    def block_sums(self, width, offset=0):
        sizes = _block_sizes(self.n, width)
        return self.scale * sizes[: sizes.shape[0] - offset] * sizes[offset:]

    def block_row_sums(self, width):
        sizes = _block_sizes(self.n, width)
        return self.scale * sizes[np.arange(self.n) // width]


class MinMaxGram(Gram):
    """``G[i, j] = f(min(i, j)) g(max(i, j))``: prefix and all-range workloads.

    ``G x`` is ``g(i) sum_{j <= i} f(j) x_j + f(i) sum_{j > i} g(j) x_j``: two cumulative
    sums. A block sum over one block ``B`` is ``sum_{j in B} g(j) (2 F_B(j) + f(j))`` with
    ``F_B(j) = sum_{i in B, i < j} f(i)`` (cumulated inside the block, so no large numbers
    cancel), and over two blocks with ``B`` before ``C`` it is
    ``(sum_B f) (sum_C g)``.
    """

    _blocks_from_structure = True

    def __init__(self, f, g, name):
        f = np.asarray(f, dtype=float)
        super().__init__(f.shape[0])
        self.f, self.g, self.name = f, np.asarray(g, dtype=float), name

    @classmethod
    def prefix(cls, n):
        return cls(np.ones(n), n - np.arange(n, dtype=float), "prefix")

    @classmethod
    def all_range(cls, n):
        cells = np.arange(n, dtype=float)
        return cls(cells + 1.0, n - cells, "all_range")

    def _matvec(self, X):
        f, g = self.f[:, None], self.g[:, None]
        lower = np.cumsum(f * X, axis=0)
        upper = np.cumsum((g * X)[::-1], axis=0)[::-1]
        above = np.zeros_like(upper)
        above[:-1] = upper[1:]
        return g * lower + f * above

    def diagonal(self):
        return self.f * self.g

    def _blocks(self, values, width):
        n_blocks = -(-self.n // width)
        return np.pad(values, (0, n_blocks * width - self.n)).reshape(n_blocks, width)

    def block_sums(self, width, offset=0):
        f, g = self._blocks(self.f, width), self._blocks(self.g, width)
        if offset == 0:
            inside = np.cumsum(f, axis=1) - f  # F_B(j): f summed over earlier cells of B
            return np.sum(g * (2.0 * inside + f), axis=1)
        f_sums, g_sums = f.sum(axis=1), g.sum(axis=1)
        return f_sums[: f_sums.shape[0] - offset] * g_sums[offset:]

    def block_row_sums(self, width):
        # Inside a block: g(x) sum_{y <= x} f(y) + f(x) sum_{y > x} g(y), both cumulated
        # within the block only (padding cells carry f = g = 0).
        f, g = self._blocks(self.f, width), self._blocks(self.g, width)
        lower = np.cumsum(f, axis=1)
        upper = np.cumsum(g[:, ::-1], axis=1)[:, ::-1] - g
        return (g * lower + f * upper).ravel()[: self.n]

    def __repr__(self):
        return f"MinMaxGram({self.name}, n={self.n})"


def kron_vectors(vectors):
    """The Kronecker product of 1-D arrays, first slowest (``[1.0]`` for none): the diagonal
    or row sums of a Kronecker product from those of its factors."""
    result = np.ones(1)
    for vector in vectors:
        result = np.kron(result, vector)
    return result


class KronGram(Gram):
    """``G_1 (x) G_2 (x) ... (x) G_d`` (marginal-type workloads; first factor slowest)."""

    def __init__(self, factors):
        self.factors = list(factors)
        super().__init__(int(np.prod([g.n for g in self.factors])))

    def _matvec(self, X):
        k = X.shape[1]
        sizes = [g.n for g in self.factors]
        result = X.reshape(*sizes, k)
        for axis, factor in enumerate(self.factors):
            moved = np.moveaxis(result, axis, 0)
            rest = moved.shape[1:]
            applied = factor._matvec(moved.reshape(sizes[axis], -1))
            result = np.moveaxis(applied.reshape(sizes[axis], *rest), 0, axis)
        return result.reshape(self.n, k)

    def diagonal(self):
        return kron_vectors(factor.diagonal() for factor in self.factors)

    def row_sums(self):
        return kron_vectors(factor.row_sums() for factor in self.factors)

    def total(self):
        return float(np.prod([factor.total() for factor in self.factors]))

    def trace(self):
        return float(np.prod([factor.trace() for factor in self.factors]))

    def _aligned(self, width):
        """``(i, a)`` when blocks of ``width`` flat cells are "cell of each factor before
        ``i``, a block of ``a`` cells of factor ``i``, everything after": ``width = a T_i``
        with ``T_i`` the product of the later factors' sizes and ``a`` dividing factor ``i``'s
        size. None when the blocks cut across the Kronecker structure."""
        trailing = 1
        for i in range(len(self.factors) - 1, -1, -1):
            size = self.factors[i].n
            if width % trailing == 0 and (size * trailing) % width == 0:
                return i, width // trailing
            trailing *= size
        return None

    def _kron_with(self, i, middle, before, after):
        """``before(f) (x) ... (x) middle (x) ... (x) after(f)``: vectors of the factors before
        and after factor ``i`` around ``middle``."""
        result = np.ones(1)
        for factor in self.factors[:i]:
            result = np.kron(result, before(factor))
        result = np.kron(result, middle)
        for factor in self.factors[i + 1:]:
            result = np.kron(result, after(factor))
        return result

    def block_sums(self, width, offset=0):
        if width >= self.n and offset == 0:
            return np.array([self.total()])
        aligned = self._aligned(width) if offset == 0 else None
        if aligned is None:
            return super().block_sums(width, offset)
        i, a = aligned
        # A block is one cell of each earlier factor (their diagonal), a block of factor i,
        # and the whole of each later factor (its total).
        return self._kron_with(i, self.factors[i].block_sums(a, 0),
                               lambda f: f.diagonal(), lambda f: np.array([f.total()]))

    def block_row_sums(self, width):
        if width >= self.n:
            return self.row_sums()
        aligned = self._aligned(width)
        if aligned is None:
            return super().block_row_sums(width)
        i, a = aligned
        return self._kron_with(i, self.factors[i].block_row_sums(a),
                               lambda f: f.diagonal(), lambda f: f.row_sums())

    def supports_blocks(self, width):
        if width >= self.n:
            return True
        aligned = self._aligned(width)
        return aligned is not None and self.factors[aligned[0]].supports_blocks(aligned[1])

    def __repr__(self):
        return f"KronGram({self.factors!r})"


class SumGram(Gram):
    """``sum_k G_k`` (a union of workloads; weights are folded into the terms)."""

    def __init__(self, terms):
        self.terms = list(terms)
        super().__init__(self.terms[0].n)

    def _matvec(self, X):
        return sum(term._matvec(X) for term in self.terms)

    def diagonal(self):
        return sum(term.diagonal() for term in self.terms)

    def row_sums(self):
        return sum(term.row_sums() for term in self.terms)

    def total(self):
        return float(sum(term.total() for term in self.terms))

    def block_sums(self, width, offset=0):
        return sum(term.block_sums(width, offset) for term in self.terms)

    def block_row_sums(self, width):
        return sum(term.block_row_sums(width) for term in self.terms)

    def supports_blocks(self, width):
        return all(term.supports_blocks(width) for term in self.terms)

    def __repr__(self):
        return f"SumGram({self.terms!r})"


class ScaledGram(Gram):
    """``c G`` (a weighted workload)."""

    def __init__(self, gram, scale):
        super().__init__(gram.n)
        self.gram, self.scale = gram, float(scale)

    def _matvec(self, X):
        return self.scale * self.gram._matvec(X)

    def diagonal(self):
        return self.scale * self.gram.diagonal()

    def row_sums(self):
        return self.scale * self.gram.row_sums()

    def total(self):
        return self.scale * self.gram.total()

    def block_sums(self, width, offset=0):
        return self.scale * self.gram.block_sums(width, offset)

    def block_row_sums(self, width):
        return self.scale * self.gram.block_row_sums(width)

    def supports_blocks(self, width):
        return self.gram.supports_blocks(width)


class IntervalGram(Gram):
    """``sum_i 1_[lo_i, hi_i] 1_[lo_i, hi_i]^T``: ``G[x, y]`` counts the intervals holding both
    cells (chosen range queries, ``workloads.ranges``).

    Products are one cumulative sum and one difference array (``O(n + p)``). Block sums
    split each interval into the partial blocks at its ends and the whole blocks between
    them, which a difference array over the blocks counts: ``O(n + p)`` per width.
    """

    _blocks_from_structure = True

    def __init__(self, n, lo, hi):
        super().__init__(n)
        self.lo = np.asarray(lo, dtype=np.int64).ravel()
        self.hi = np.asarray(hi, dtype=np.int64).ravel()
        if self.lo.shape != self.hi.shape or np.any(self.lo > self.hi) or (
                self.lo.size and (self.lo.min() < 0 or self.hi.max() >= self.n)):
            raise ValueError(f"intervals must satisfy 0 <= lo <= hi < {self.n}.")

    def _spread(self, values, starts, stops):
        """Add ``values[i]`` (rows ``(p, k)`` or ``(p,)``) to every cell of
        ``[starts_i, stops_i]`` (a difference array, then a cumulative sum)."""
        marks = np.zeros((self.n + 1,) + values.shape[1:])
        np.add.at(marks, starts, values)
        np.add.at(marks, stops + 1, -values)
        return np.cumsum(marks, axis=0)[:-1]

    def _matvec(self, X):
        cumulative = np.zeros((self.n + 1, X.shape[1]))
        np.cumsum(X, axis=0, out=cumulative[1:])
        return self._spread(cumulative[self.hi + 1] - cumulative[self.lo], self.lo, self.hi)

    def diagonal(self):
        return self._spread(np.ones(self.lo.shape[0]), self.lo, self.hi)

    def _pieces(self, width):
        """Per interval: first and last block, and its cells in each of them."""
        first, last = self.lo // width, self.hi // width
        in_first = np.minimum(self.hi, (first + 1) * width - 1) - self.lo + 1
        in_last = self.hi - np.maximum(self.lo, last * width) + 1
        return first, last, in_first.astype(float), in_last.astype(float)

    def _whole_blocks(self, first, last, n_blocks):
        """How many intervals cover each block whole (the blocks strictly between their ends,
        all of full width since the last block of the domain is never strictly inside)."""
        marks = np.zeros(n_blocks + 1)
        between = last > first + 1
        np.add.at(marks, first[between] + 1, 1.0)
        np.add.at(marks, last[between], -1.0)
        return np.cumsum(marks)[:-1]

    def block_sums(self, width, offset=0):
        if offset:
            return super().block_sums(width, offset)
        n_blocks = -(-self.n // width)
        first, last, in_first, in_last = self._pieces(width)
        split = first != last
        sums = width * width * self._whole_blocks(first, last, n_blocks)
        np.add.at(sums, first, in_first**2)
        np.add.at(sums, last[split], in_last[split] ** 2)
        return sums

    def block_row_sums(self, width):
        n_blocks = -(-self.n // width)
        first, last, in_first, in_last = self._pieces(width)
        split = first != last
        # Cells of a whole block see all of it; cells of an end block see the piece there.
        whole = width * self._whole_blocks(first, last, n_blocks)
        result = whole[np.arange(self.n) // width]
        result += self._spread(in_first, self.lo, np.minimum(self.hi, (first + 1) * width - 1))
        result += self._spread(in_last[split], (last * width)[split], self.hi[split])
        return result

    def __repr__(self):
        return f"IntervalGram(n={self.n}, intervals={self.lo.shape[0]})"


class WorkloadGram(Gram):
    """``W^T W`` through the workload's own products (any structured workload)."""

    def __init__(self, workload):
        super().__init__(workload.n_cells)
        self.workload = workload

    def _matvec(self, X):
        return self.workload._rmatvec(self.workload._matvec(X))

    def diagonal(self):
        return self.workload.column_sq_norms()

    def __repr__(self):
        return f"WorkloadGram({self.workload!r})"


class SummaryGram(Gram):
    """A Gram known only through ``diag(G)``, ``G 1`` and ``1^T G 1``.

    That is all a frequency oracle's error needs; a range tree hands one per level to the
    level's oracle (the level Gram ``T_l G T_l^T`` itself would be ``m_l x m_l``). Products
    and dense forms are not available.
    """

    def __init__(self, diagonal, row_sums, total):
        diagonal = np.asarray(diagonal, dtype=float)
        super().__init__(diagonal.shape[0])
        self._diagonal = diagonal
        self._row_sums = np.asarray(row_sums, dtype=float)
        self._total = float(total)

    def _matvec(self, X):
        raise ValueError("a SummaryGram knows only its diagonal, row sums and total; it has "
                         "no products.")

    def diagonal(self):
        return self._diagonal.copy()

    def row_sums(self):
        return self._row_sums.copy()

    def total(self):
        return self._total


def as_gram(obj):
    """A :class:`Gram` from a Gram, a workload (its ``gram()``) or a dense square matrix."""
    if isinstance(obj, Gram):
        return obj
    if hasattr(obj, "gram") and callable(obj.gram):
        return obj.gram()
    matrix = np.asarray(obj, dtype=float)
    if matrix.ndim != 2 or matrix.shape[0] != matrix.shape[1]:
        raise ValueError(f"a Gram matrix must be square, got shape {matrix.shape}.")
    return DenseGram(matrix)
