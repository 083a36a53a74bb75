"""Block-Hadamard helpers of the structured Hadamard response (:mod:`.hadamard`; its
variances, :mod:`.hadamard_variance`, use most of them).

Four pure-numpy pieces, each ``O(size log size)`` on the structured inputs:

* :func:`walsh_block_diagonals`: for a Gram matrix ``G`` cut into diagonal blocks of ``w``
  consecutive cells, each block placed at the Walsh coordinates ``s .. s + w - 1`` of a block
  of ``b = s + w`` (``s = 1``: coordinate 0 left empty; ``s = b / 2``: the upper half), the
  diagonal of the block's two-sided Walsh transform, ``D[k, y] = h_y^T G_k h_y`` with ``h_y``
  row ``y`` of ``H_b``. Written with the dyadic correlation ``corr_k(d) = sum_c G_k[c, c ^ d]``
  it is ``D = H corr``.
* :func:`gram_block_product`: ``G[s:t, s:t] @ X`` without the rest of ``G``.
* :func:`interval_walsh`: the Walsh transform of ``1_[0, L)`` in closed form;
  :func:`interval_correlation` and :func:`coset_correlation`: the dyadic correlation of an
  interval (``H`` of its squared transform) at one point, in ``O(log b)``.
* :func:`hyperplane_counts`: per block, the counts of users who each draw an output ``y``
  uniformly from the hyperplane ``popcount(y & c) even`` of their own column ``c``.

Dyadic correlation of a min/max Gram. For ``G[i, j] = f(min(i, j)) g(max(i, j))`` (prefix,
all ranges; :class:`~sklearn_ldp._gram.MinMaxGram`) and ``d != 0`` with top bit ``h``, the
pair ``{c, c ^ d}`` has its smaller member where bit ``h`` is 0, so

    corr(d) = 2 sum_{c: bit h of c is 0} f(c) g(c ^ d).

Write ``c = (hi, 0, lo)`` and ``c ^ d = (hi, 1, lo ^ d_lo)`` (``lo, d_lo < 2^h``): for every
``d`` in ``[2^h, 2^(h+1))`` this is the sum over ``hi`` of the dyadic correlations, at size
``2^h``, of the lower half of chunk ``hi`` of ``f`` with the upper half of chunk ``hi`` of
``g`` (chunks of ``2^(h+1)`` cells). A dyadic correlation is ``(1/N) H (H u * H v)``, and the
transforms of every aligned chunk of size ``2^h`` are exactly the state of the fast
Walsh-Hadamard transform after its first ``h`` levels. So one pass of the transform over
``f`` and ``g``, with a product summed over the chunks and one small transform per level,
gives ``corr`` for every ``d``: ``O(b log b)`` per block instead of ``O(b^2)``.

Uniform draws on hyperplanes. A draw uniform on ``{y : popcount(y & c) = s mod 2}`` is
built bit by bit from the top bit of ``y`` down. After the bits above ``q`` are chosen, what
is left of the constraint is ``popcount(y_low & c_low) = s'`` over the bits ``<= q``. If
``c`` has a set bit below ``q``, both values of bit ``q`` leave ``2^(q-1)`` solutions, so
the bit is a fair coin; if bit ``q`` is the lowest set bit of ``c``, it is forced to ``s'``;
if ``c_low = 0`` (then ``s' = 0``) it is a fair coin too. Choosing ``y_q = 1`` when
``c_q = 1`` flips ``s'``. So the users only need to be grouped by (bits of ``y`` chosen,
bits of ``c`` not yet used, ``s'``): ``2 b`` groups at every level, split by binomial draws,
as in :mod:`._hrr_simulation` (whose splits are all fair or "zero excluded").
"""

import numpy as np

from ..._fwht import fwht
from ..._gram import DenseGram, IdentityGram, MinMaxGram, OnesGram, ScaledGram, SumGram
from ..._validation import MAX_DENSE_ENTRIES

# Entries of the temporaries built at once by the chunked dense paths below.
_CHUNK_ENTRIES = 2**22


def walsh_block_diagonals(gram, n_blocks, width, offset=1):
    """``D[k, y] = h_y^T G_k h_y`` for the first ``n_blocks`` diagonal blocks of ``width``
    cells, each at Walsh coordinates ``offset .. offset + width - 1`` of a block of
    ``b = offset + width`` (a power of two; ``offset`` 0 or a power of two); ``None`` when the
    Gram's structure gives no closed form.

    Identity, total (all-ones), min/max (prefix, all ranges), dense Grams and scaled sums of
    these are handled in ``O(n_blocks b log b)`` (dense: ``O(n_blocks b^2)``).

    Examples
    --------
    >>> from sklearn_ldp._gram import IdentityGram
    >>> walsh_block_diagonals(IdentityGram(6), 2, 3)   # ||h_y restricted to 1..3||^2 = 3
    array([[3., 3., 3., 3.],
           [3., 3., 3., 3.]])
    """
    size = offset + width
    if isinstance(gram, IdentityGram):
        return np.full((n_blocks, size), gram.scale * width)
    if isinstance(gram, OnesGram):
        # (sum_{c >= offset} H[y, c])^2 = (b [y = 0] - offset [y = 0 mod offset])^2, offset
        # being 0 or a power of two (the sum over c < offset is offset where y's low bits
        # vanish).
        sums = np.zeros(size)
        if offset:
            sums[np.arange(0, size, offset)] = -offset
        sums[0] += size
        return np.broadcast_to(gram.scale * sums * sums, (n_blocks, size)).copy()
    if isinstance(gram, ScaledGram):
        inner = walsh_block_diagonals(gram.gram, n_blocks, width, offset)
        return None if inner is None else gram.scale * inner
    if isinstance(gram, SumGram):
        total = np.zeros((n_blocks, size))
        for term in gram.terms:
            part = walsh_block_diagonals(term, n_blocks, width, offset)
            if part is None:
                return None
            total += part
        return total
    if isinstance(gram, MinMaxGram):
        cells = n_blocks * width
        f = np.zeros((n_blocks, size))
        g = np.zeros((n_blocks, size))
        # Coordinates below the offset stay 0 in f and g: a pair holding one has it as its
        # smaller member (f = 0), and the order of the cells is kept.
        f[:, offset:] = gram.f[:cells].reshape(n_blocks, width)
        g[:, offset:] = gram.g[:cells].reshape(n_blocks, width)
        return _minmax_walsh_diagonals(f, g)
    if isinstance(gram, DenseGram):
        return _dense_walsh_diagonals(gram.toarray(), n_blocks, width, offset)
    return None


def _butterfly(chunks):
    """One in-place level of the fast Walsh-Hadamard transform on ``(..., 2, half)`` pairs."""
    first, second = chunks[..., 0, :], chunks[..., 1, :]
    difference = first - second
    first += second
    second[...] = difference


def _minmax_walsh_diagonals(f, g):
    """``H corr`` for ``G_k[c, c'] = f[k, min] g[k, max]`` (``f[:, 0] = 0``), by the level
    recursion of the module docstring."""
    n_blocks, size = f.shape
    corr = np.empty((n_blocks, size))
    corr[:, 0] = np.sum(f * g, axis=1)
    f_levels, g_levels = f.copy(), g.copy()  # transforms of every aligned chunk so far
    half = 1
    while half < size:
        f_chunks = f_levels.reshape(n_blocks, size // (2 * half), 2, half)
        g_chunks = g_levels.reshape(n_blocks, size // (2 * half), 2, half)
        product = np.einsum("kjs,kjs->ks", f_chunks[:, :, 0, :], g_chunks[:, :, 1, :])
        corr[:, half:2 * half] = (2.0 / half) * fwht(product, axis=-1)
        _butterfly(f_chunks)
        _butterfly(g_chunks)
        half *= 2
    return fwht(corr, axis=-1)


def _dense_walsh_diagonals(matrix, n_blocks, width, offset=1):
    """``H corr`` of the diagonal blocks of a stored matrix, ``corr`` gathered in chunks of
    rows (``O(n_blocks b^2)``; dense Grams are small)."""
    size = offset + width
    cells = n_blocks * width
    blocks = matrix[:cells, :cells].reshape(n_blocks, width, n_blocks, width)
    blocks = blocks[np.arange(n_blocks), :, np.arange(n_blocks), :]  # (n_blocks, w, w)
    padded = np.zeros((n_blocks, size, size))
    padded[:, offset:, offset:] = blocks
    corr = np.zeros((n_blocks, size))
    shifts = np.arange(size)
    step = max(1, _CHUNK_ENTRIES // (n_blocks * size))
    for start in range(0, size, step):
        rows = np.arange(start, min(start + step, size))
        partners = rows[:, None] ^ shifts[None, :]  # column c ^ d of row c, for every d
        corr += padded[:, rows[:, None], partners].sum(axis=1)
    return fwht(corr, axis=-1)


def gram_block_product(gram, start, stop, X):
    """``G[start:stop, start:stop] @ X`` for ``X`` of shape ``(stop - start, k)``.

    Closed forms for identity, total, min/max and dense Grams and scaled sums of these
    (``O((stop - start) k)``, dense ``O((stop - start)^2 k)``); any other Gram through its
    products with ``X`` padded to ``n`` rows, in chunks of columns.
    """
    X = np.asarray(X, dtype=float)
    if isinstance(gram, IdentityGram):
        return gram.scale * X
    if isinstance(gram, OnesGram):
        return np.broadcast_to(gram.scale * X.sum(axis=0), X.shape).copy()
    if isinstance(gram, ScaledGram):
        return gram.scale * gram_block_product(gram.gram, start, stop, X)
    if isinstance(gram, SumGram):
        return sum(gram_block_product(term, start, stop, X) for term in gram.terms)
    if isinstance(gram, MinMaxGram):
        # A diagonal block of f(min) g(max) is f(min) g(max) on the sliced f and g.
        return MinMaxGram(gram.f[start:stop], gram.g[start:stop], gram.name).matvec(X)
    if isinstance(gram, DenseGram):
        return gram.toarray()[start:stop, start:stop] @ X
    columns = max(1, MAX_DENSE_ENTRIES // (8 * gram.n))
    result = np.empty_like(X)
    for first in range(0, X.shape[1], columns):
        last = min(first + columns, X.shape[1])
        padded = np.zeros((gram.n, last - first))
        padded[start:stop] = X[:, first:last]
        result[:, first:last] = gram.matvec(padded)[start:stop]
    return result


def interval_walsh(length, size):
    """``H_size 1_[0, length)``: the Walsh transform of an interval starting at 0, in ``O(size)``.

    Cutting ``[0, length)`` into the dyadic intervals of the bits of ``length``, only those of
    bits ``k <= t`` survive at a frequency ``s != 0`` whose lowest set bit is ``t``, with sign
    ``(-1)^popcount(s & (length without its bits below t))`` for ``k < t`` and the opposite
    one for ``k = t``: the transform is ``sign (length mod 2^t - [bit t of length] 2^t)``.

    Examples
    --------
    >>> interval_walsh(3, 4)    # rows of H_4 summed over columns 0, 1, 2
    array([ 3,  1,  1, -1])
    """
    frequencies = np.arange(size, dtype=np.int64)
    lowest = frequencies & -frequencies  # 2^t (0 at s = 0, overwritten below)
    below = length & (lowest - 1)
    at = length & lowest
    above = length & ~(lowest - 1)
    sign = 1 - 2 * (np.bitwise_count(frequencies & above).astype(np.int64) & 1)
    walsh = sign * (below - at)
    walsh[0] = length
    return walsh


def prefix_pair_counts(a, b, c):
    """``#{t < a : t ^ c < b}`` elementwise (non-negative int64 arrays, broadcast), in
    ``O(log max(b))`` vectorized steps.

    ``[0, b)`` is the union of the aligned blocks ``[(b >> (k+1)) << (k+1), ... + 2^k)``
    over the set bits ``k`` of ``b``; XOR with ``c`` maps each onto the aligned block at
    ``(start ^ c)`` with its low ``k`` bits cleared, whose overlap with ``[0, a)`` is a clip.
    With it the dyadic correlation of an interval ``I = [p, q)``,
    ``#{t in I : t ^ c in I}``, is ``C(q, q) - 2 C(p, q) + C(p, p)``.

    Examples
    --------
    >>> int(prefix_pair_counts(5, 3, 1))   # t in {0..4} with t ^ 1 < 3: t = 0, 1, 3
    3
    """
    a, b, c = (np.asarray(value, dtype=np.int64) for value in (a, b, c))
    total = np.zeros(np.broadcast_shapes(a.shape, b.shape, c.shape), dtype=np.int64)
    top = int(b.max()).bit_length() if b.size else 0
    for k in range(top):
        size = np.int64(1) << k
        start = (((b >> (k + 1)) << (k + 1)) ^ c) & ~(size - 1)
        total += ((b >> k) & 1) * np.clip(a - start, 0, size)
    return total


def interval_correlation(p, q, c):
    """``#{t in [p, q) : t ^ c in [p, q)}``: the dyadic correlation of an interval at ``c``
    (broadcast int64 arrays).

    Examples
    --------
    >>> int(interval_correlation(2, 6, 1))   # {2, 3, 4, 5} is closed under t ^ 1
    4
    """
    return (prefix_pair_counts(q, q, c) - 2 * prefix_pair_counts(p, q, c)
            + prefix_pair_counts(p, p, c))


def coset_correlation(p, q, c, hole):
    """``sum_(t < hole) #{s in [p, q) : s ^ c ^ t in [p, q)}`` (``hole`` a power of two):
    the dyadic correlation of ``[p, q)`` summed over the coset of ``c``.

    Per pair of prefixes ``[0, a)``, ``[0, b)``: with ``A, alpha`` the quotient and remainder
    of ``a`` by ``hole`` (``B, beta`` of ``b``) and ``d = c // hole``, the count is
    ``hole^2 C(A, B)(d) + hole beta [B ^ d < A] + alpha hole [A ^ d < B] + alpha beta
    [A ^ d = B]`` (a coset meets ``[0, a)`` in ``hole``, ``alpha`` or no cells).

    Examples
    --------
    >>> int(coset_correlation(2, 6, 1, 2))   # lags 1 and 0: {2..5} is closed under both
    8
    """
    p, q, c = (np.asarray(value, dtype=np.int64) for value in (p, q, c))
    shift = int(hole).bit_length() - 1
    d = c >> shift

    def pair(a, b):
        big_a, alpha = a >> shift, a & (hole - 1)
        big_b, beta = b >> shift, b & (hole - 1)
        return (hole * hole * prefix_pair_counts(big_a, big_b, d)
                + hole * beta * ((big_b ^ d) < big_a) + alpha * hole * ((big_a ^ d) < big_b)
                + alpha * beta * ((big_a ^ d) == big_b))

    return pair(q, q) - 2 * pair(p, q) + pair(p, p)


def _nonzero_binomial(counts, probability, rng):
    """``rng.binomial(counts, probability)`` drawn only where ``counts > 0`` (most groups of
    a sparse population are empty)."""
    result = np.zeros_like(counts)
    where = np.flatnonzero(counts)
    if where.size:
        result.flat[where] = rng.binomial(counts.flat[where], probability)
    return result


def hyperplane_counts(column_counts, rng):
    """Counts of outputs ``y`` drawn uniformly on ``{y : popcount(y & c) even}``.

    Parameters
    ----------
    column_counts : ndarray of int64, shape (n_blocks, b)
        ``column_counts[k, c]``: users of block ``k`` with column ``c``; ``b`` a power of
        two; column 0 must hold no users (its hyperplane is the whole block).
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int64, shape (n_blocks, b)
        Per block, how many of its users drew each ``y``. Exactly the law of independent
        per-user draws (module docstring), with ``2 b log2 b`` binomial draws per block at
        most (only non-empty groups are drawn).

    Examples
    --------
    >>> counts = np.zeros((1, 4), dtype=np.int64)
    >>> counts[0, 3] = 10            # column 3: y in {0, 3}
    >>> drawn = hyperplane_counts(counts, np.random.default_rng(0))
    >>> int(drawn.sum()), int(drawn[0, 1] + drawn[0, 2])
    (10, 0)
    """
    counts = np.asarray(column_counts, dtype=np.int64)
    n_blocks, size = counts.shape
    # groups[k, prefix, suffix, parity]: users of block k whose chosen top bits of y are
    # `prefix`, whose unused low bits of c are `suffix`, and whose remaining bits of y must
    # have `parity` (popcount of y_low & suffix, mod 2).
    groups = np.zeros((n_blocks, 1, size, 2), dtype=np.int64)
    groups[:, 0, :, 0] = counts
    while groups.shape[2] > 1:
        n_prefixes, half = groups.shape[1], groups.shape[2] // 2
        low, high = groups[:, :, :half, :], groups[:, :, half:, :]  # next bit of c: 0, 1
        low_one = _nonzero_binomial(low, 0.5, rng)
        high_one = _nonzero_binomial(high, 0.5, rng)
        # Suffix exactly 2^q (first of the high half): bit q of y is forced to the parity.
        high_one[:, :, 0, 0] = 0
        high_one[:, :, 0, 1] = high[:, :, 0, 1]
        zero_branch = (low - low_one) + (high - high_one)
        one_branch = low_one + high_one[..., ::-1]  # y_q = 1 with c_q = 1 flips the parity
        groups = np.stack([zero_branch, one_branch], axis=2).reshape(
            n_blocks, 2 * n_prefixes, half, 2)
    return groups[:, :, 0, 0]
