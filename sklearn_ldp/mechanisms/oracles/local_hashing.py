"""Local hashing (OLH and BLH, Wang, Blocki, Li, Jha, USENIX Security 2017), structured.

Protocol. Each user draws a random hash function ``H_s : [n] -> [g]`` (named by a 64-bit seed
``s``), hashes their type ``u`` and privatizes the bucket with g-ary randomized response:

    y = H_s(u)                                 with probability p = e^eps / (e^eps + g - 1),
    y = any one of the other g - 1 buckets     with probability 1 / (e^eps + g - 1) each,

and sends the pair ``(s, y)``. Reports are an ``(N, 2)`` uint64 array of ``[seed, y]`` rows.

Privacy. The seed is drawn independently of ``u`` (an exactly uniform 64-bit word), and for
*every* fixed seed ``P(y | u, s)`` is the exact two-weight law of :mod:`._ratio`: weight ``a``
on ``H_s(u)`` and ``d`` on each other bucket, ``a / d <= e^eps`` decided on integers, drawn
from one exactly uniform integer in ``[0, a + (g - 1) d)``: the mechanism is eps-LDP whatever
the hash function (its quality only affects accuracy). There is no finite strategy matrix
(``2^64 g`` outputs); :meth:`LocalHashing.exact_law` gives the exact law of the report
conditional on the seed lying in a given (small) set of seeds, uniform on it, which is the
law of every seed at once since the seed does not depend on the value. The realised
``p = a / (a + (g - 1) d)`` is what the estimator and the variances use.

Estimation (``SupportOracle``). A report supports ``S(y) = {j : H_s(j) = y}``; the server
counts ``C_j = #{i : H_{s_i}(j) = y_i}`` and estimates ``(C_j - N/g) / (p - 1/g)``, then uses
the known total. With an ideal (3-wise independent, exactly uniform) hash,

    P(u in S) = p,   q = P(j in S) = 1/g,   r_own = P(u, j in S) = p/g,
    r_other = P(j, k in S) = 1/g^2,

which give the exact variance of any workload (see ``support.py``); on the histogram, for rare
items, ``(e^eps + g - 1)^2 / ((e^eps - 1)^2 (g - 1))`` per user, ``4 e^eps / (e^eps - 1)^2``
at ``g = e^eps + 1``.

Number of buckets. OLH with the tabulation family takes ``g = round(e^eps) + 1`` (decision: the
references differ between round and ceil; we round, as Wang et al.'s code does; both give
``g = 4`` at eps = 1; the default linear family takes a power of two, see below), capped to
``[2, MAX_BUCKETS]``; ``n_buckets`` overrides it and is stored in ``params``, so the JSON pins
``g``. BLH takes ``g = 2``.

Hash family (a decision of this module). Additive simple tabulation with two characters:
the type ``u`` is split as ``u = u_hi n_lo + u_lo`` with ``n_lo = ceil(sqrt(n))`` and

    h_s(u) = (A_s[u_lo] + B_s[u_hi]) mod 2^32,        H_s(u) = floor(h_s(u) g / 2^32),

where ``A_s[v]`` and ``B_s[v]`` are the high and the low 32 bits of the ``(v + 1)``-th output
``mix64(s + (v + 1) * 0x9E3779B97F4A7C15)`` of the SplitMix64 generator seeded with ``s``
(Steele, Lea, Flood 2014; ``mix64`` is its finalizer). The client evaluates two table entries.

* If the table entries are independent and uniform, ``h_s`` is 3-wise independent over
  ``Z_{2^32}``. Of three distinct keys, either one character takes three different values
  (each key then adds its own independent uniform entry), or in one character exactly two
  keys agree, say ``y_lo = z_lo != x_lo``: then ``h(x)`` holds the only copy of ``A[x_lo]``,
  so it is uniform and independent of ``(h(y), h(z))``, which differ in ``B[y_hi]`` and
  ``B[z_hi]`` (``y_hi != z_hi``), independent uniform entries. (Not 4-wise independent: keys
  (0,0), (0,1), (1,0), (1,1) have ``h1 + h4 = h2 + h3``.) Pairwise independence makes
  ``E[C]`` and each cell's variance exact; 3-wise independence makes ``r_other`` (the
  covariance of two cells' estimates) exact, which long queries (prefix, range) need.
* We do *not* use Dietzfelbinger's multiply-add-shift family ``((a x + b) mod 2^64) >> 32``:
  it is pairwise independent but not 3-wise: three types in arithmetic progression
  ``u, u + d, u + 2d`` fall in one bucket with probability about ``1/(2g)`` instead of
  ``1/g^2`` (measured 0.125 against 0.0625 at g = 4), so the estimates of cells in such
  triples are correlated and the analytic variance is wrong for long queries: with n = 64,
  5000 repetitions, the prefix workload's empirical / analytic variance was 1.21 +- 0.015 for
  OLH at eps = 3 (g = 21), 1.03 +- 0.01 at eps = 1, 0.98 +- 0.01 for BLH (tabulation: 0.995,
  1.002, 0.996, each +- 0.011), and even the histogram's was 0.983 +- 0.002 at g = 21.
* The bucket map ("fastrange") gives bucket ``y`` the ``w_y = ceil((y+1) 2^32/g) - ceil(y
  2^32/g)`` values of ``h``, so ``pi_y = w_y / 2^32`` differs from ``1/g`` by
  ``|delta_y| < 2^-32``. ``P(u in S) = p`` stays exact; ``q``, ``r_own`` and ``r_other``
  change only at second order (``q = 1/g + (p - (1-p)/(g-1)) sum_y delta_y^2``, likewise the
  others), a relative error below ``g^2 2^-64 <= 2^-24`` for ``g <= MAX_BUCKETS = 2^20``:
  the formulas above are exact to that precision.

Support counting, ``O(N n)`` work, vectorized: for a block of ``b`` users (columns) the
tables are ``(n_lo, b)`` and ``(n_hi, b)`` arrays. Bucket ``y`` is the interval ``[L_y, L_y +
w_y)`` of ``h`` values, ``L_y = ceil(y 2^32 / g)``, so ``H_s(j) = y`` exactly when
``(A_s[j_lo] - L_y + B_s[j_hi]) mod 2^32 < w_y`` (no wrap-around can fake a match because
``L_y + w_y <= 2^32``). With ``A' = A - L_y`` precomputed per user this is one broadcast
uint32 addition ``(n_hi, n_lo, b)`` and one comparison per (cell, user); the boolean matches
of up to 2040 users are summed 8 at a time as the bytes of uint64 words (no byte exceeds 255,
so nothing carries). Blocks are cache-sized (``GRID_BLOCK`` uint32 values); memory stays a
few MB beyond the reports. One thread: splitting the blocks over two threads (numpy releases
the GIL) was measured slower on the 2-core machine (aggregate of 10^6 users, n = 1024: 0.54 s
with one thread, 0.67-1.0 s with two), so it was removed.

Linear hash family (``hash_family="linear"``, the default at every domain size).
Tabulation decodes in ``O(N n)``: at ``n = 2^16`` and 10^6 users that is 127 s, and ``2^20``
is out of reach. With ``g = 2^r`` buckets and ``L = ceil(log2 n)`` bits per cell, the seed
names ``r`` rows ``m_1 .. m_r`` of ``L`` bits, ``m_k = mix64(s + k * 0x9E37...) mod 2^L`` (the
SplitMix64 outputs, as above), and

    H_s(x) = sum_k parity(m_k & x) 2^(k-1),        i.e. H_s(x) = M_s x over GF(2).

* Moments, exactly (not to 2^-24). For distinct ``x, v`` the vector ``x xor v`` is non-zero, so
  ``M (x xor v)`` is uniform on ``GF(2)^r`` when ``M`` is: ``q = 1/g``, ``r_own = p/g``. For
  three distinct ``j, k, u`` the vectors ``j xor u`` and ``k xor u`` are distinct and
  non-zero, hence linearly independent over GF(2) (the only scalars are 0 and 1), so
  ``(M (j xor u), M (k xor u))`` is uniform on ``GF(2)^2r``: ``r_other = 1/g^2``. The
  variance formulas of ``support.py`` hold exactly. (Over GF(q), q > 2, two distinct
  differences can be multiples of each other, and 3-wise independence fails.)
* Decoding by one Walsh-Hadamard transform, ``O(N g + n log n)``. With ``T`` ranging over the
  ``g`` subsets of the rows, ``[M x = y] = (1/g) sum_T (-1)^(T . y) (-1)^((xor_{k in T} m_k) . x)``:
  each report adds ``(-1)^(T . y)`` to the spectrum at ``xor_{k in T} m_k`` for its ``g``
  subsets (a Gray-code walk: one xor per subset), and the support counts are the Walsh-Hadamard
  transform of the summed spectrum divided by ``g``, integers computed exactly in float64
  (every partial sum is an integer below ``N g <= 2^53``).
* Cost in accuracy: ``g`` must be a power of two, so OLH takes the power of two that minimizes
  the rare-item variance ``(e^eps + g - 1)^2 / (g - 1)``: at most 7.1% more variance than the
  best integer ``g`` (the worst case is near eps = 0.55, between g = 2 and 4; none at eps = 1,
  where both give 4). ``hash_family="tabulation"`` keeps the integer ``g``; specs without a
  ``hash_family`` (written before this family existed) mean tabulation.

Choice of family. The linear family is the default at every domain size: its law is exact at
any ``n >= 1`` (the moment argument above needs only distinct cells, and ``L >= 1`` bits), and
its server work per user does not grow with ``n``, while tabulation's grows linearly. Aggregate
time per user, 2 x 10^5 users at eps = 1 (``g = 4``), one run on a shared, loaded 2-core
machine (``benchmarks/bench_oracles.py --olh-support --users 200000 --repeats 5``): tabulation
0.73, 3.0, 8.6, 15.7, 38 microseconds at ``n`` = 64, 256, 1024, 2048, 4096; linear 0.45 to
0.65 at each. With many buckets and few cells tabulation can still be faster (eps = 3,
``n = 64``: 1.1 microseconds with ``g = 21`` against 2.4 with ``g = 16``, about the linear
family's time at 4096 cells). The price is the power-of-two ``g``: against tabulation's
``g = round(e^eps) + 1`` the rare-item variance is the same at eps = 1 and 2, at most 3.4%
higher for eps above 2.5, and up to 7.2% higher near eps = 0.55 (``hash_family="tabulation"``
avoids it; at some eps the power of two is up to 0.4% better).

Pure numpy; no scikit-learn here.
"""

import math

import numpy as np

from ..._fwht import fwht
from ..._validation import MAX_DENSE_ENTRIES, check_epsilon, check_positive_int
from .._base.exact import ExactLaw, check_law_size
from .._base.mechanism import ReportCheck, check_type_indices, chunks, register
from .._base.ratio import ratio_law_weights, ratio_weights, sample_ratio_law
from .support import SupportOracle, oracle_docstring

MAX_BUCKETS = 2**20
HASH_FAMILIES = ("tabulation", "linear")
# The default hash family at every domain size: its support counts cost O(N g + n log n)
# against tabulation's O(N n) (module docstring, "Choice of family").
DEFAULT_HASH_FAMILY = "linear"

# uint32 grid values computed per block (cells x users): 2^20 * 4 bytes = 4 MB per thread, in
# the L3 cache with the matching boolean block (2^18 measured 30% slower).
GRID_BLOCK = 2**20
# Users per block: >= 256 keeps numpy's inner loops long; <= 2040 keeps every byte lane of the
# uint64 match sums <= 255 (2040 / 8), so no carry crosses into the next lane.
MIN_BLOCK_USERS, MAX_BLOCK_USERS = 256, 2040

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)
_LOW32 = np.uint64(0xFFFFFFFF)


def splitmix64(state):
    """The SplitMix64 finalizer ``mix64`` (a bijection of 64-bit words), elementwise.

    Parameters
    ----------
    state : array_like of uint64

    Returns
    -------
    ndarray of uint64 (at least 1-D)

    Examples
    --------
    >>> int(splitmix64(np.uint64(0x9E3779B97F4A7C15))[0])  # first output of SplitMix64(0)
    16294208416658607535
    """
    z = np.array(state, dtype=np.uint64, ndmin=1)  # a fresh array: arrays wrap silently
    z ^= z >> np.uint64(30)
    z *= _MIX1
    z ^= z >> np.uint64(27)
    z *= _MIX2
    z ^= z >> np.uint64(31)
    return z


def character_sizes(n):
    """``(n_lo, n_hi)``: the two tabulation characters of a domain of ``n`` cells.

    Cell ``j`` is the pair ``(j mod n_lo, j div n_lo)``, ``n_lo = ceil(sqrt(n))`` and
    ``n_hi = ceil(n / n_lo) <= n_lo``.

    Examples
    --------
    >>> character_sizes(1024), character_sizes(10)
    ((32, 32), (4, 3))
    """
    n_lo = math.isqrt(n - 1) + 1 if n > 1 else 1
    return n_lo, -(-n // n_lo)


def hash_tables(seeds, n_lo, n_hi):
    """Tabulation tables of each seed, one column per seed: ``(n_lo, m)`` and ``(n_hi, m)``.

    ``A[v, i]`` and ``B[v, i]`` are the high and low 32 bits of the ``(v + 1)``-th output of
    SplitMix64 seeded with ``seeds[i]`` (``n_hi <= n_lo``, so one output serves both).

    Examples
    --------
    >>> A, B = hash_tables(np.array([1, 2], dtype=np.uint64), 3, 2)
    >>> A.shape, B.shape, A.dtype
    ((3, 2), (2, 2), dtype('uint32'))
    """
    seeds = np.asarray(seeds, dtype=np.uint64)
    steps = np.arange(1, max(n_lo, n_hi) + 1, dtype=np.uint64) * _GOLDEN
    words = splitmix64(seeds[None, :] + steps[:, None])
    return (words[:n_lo] >> np.uint64(32)).astype(np.uint32), words[:n_hi].astype(np.uint32)


def linear_hash_rows(seeds, n_rows, n_bits):
    """The rows ``m_1 .. m_r`` of each seed's GF(2) matrix: an ``(len(seeds), r)`` uint64 array.

    ``m_k`` is the ``k``-th output of SplitMix64 seeded with the seed, reduced to ``n_bits``
    bits.

    Examples
    --------
    >>> rows = linear_hash_rows(np.array([0, 1], dtype=np.uint64), 2, 5)
    >>> rows.shape, bool(rows.max() < 32)
    ((2, 2), True)
    """
    seeds = np.asarray(seeds, dtype=np.uint64)
    steps = np.arange(1, n_rows + 1, dtype=np.uint64) * _GOLDEN
    mask = np.uint64((1 << n_bits) - 1)
    return splitmix64(seeds[..., None] + steps).reshape(seeds.shape + (n_rows,)) & mask


def linear_hash(rows, cells):
    """``H(x) = sum_k parity(m_k & x) 2^(k-1)`` for ``rows`` ``(..., r)`` and cells ``(...)``
    broadcast against each other (uint64).

    Examples
    --------
    >>> int(linear_hash(np.array([[0b011, 0b110]], dtype=np.uint64), np.uint64(0b010))[0])
    3
    """
    rows = np.asarray(rows, dtype=np.uint64)
    cells = np.asarray(cells, dtype=np.uint64)
    hashed = np.zeros(np.broadcast_shapes(rows.shape[:-1], cells.shape), dtype=np.uint64)
    for k in range(rows.shape[-1]):
        parity = np.bitwise_count(rows[..., k] & cells) & np.uint8(1)
        hashed |= parity.astype(np.uint64) << np.uint64(k)
    return hashed


def best_power_of_two_buckets(epsilon):
    """The ``g = 2^r`` minimizing OLH's rare-item variance ``(e^eps + g - 1)^2 / (g - 1)``.

    Examples
    --------
    >>> best_power_of_two_buckets(1.0), best_power_of_two_buckets(3.0)
    (4, 16)
    """
    e = math.exp(epsilon)
    candidates = [2**r for r in range(1, MAX_BUCKETS.bit_length())]
    return min(candidates, key=lambda g: (e + g - 1) ** 2 / (g - 1))


@oracle_docstring
class LocalHashing(SupportOracle):
    """Local hashing with ``g`` buckets (base of :class:`OptimizedLocalHashing` and
    :class:`BinaryLocalHashing`; see the module docstring for the math).

    <oracle parameters: Domain size ``n``.>
    n_buckets : int
        ``g``, in ``[2, MAX_BUCKETS]``; a power of two for the linear family.
    hash_family : {"tabulation", "linear"}, default="tabulation"
        The hash functions the seeds name (see the module docstring). Recorded in ``params``
        when linear (a spec without it means tabulation).

    Examples
    --------
    >>> mechanism = LocalHashing(8, 1.0, n_buckets=3)
    >>> reports = mechanism.randomize(np.array([0, 5, 5]), np.random.default_rng(0))
    >>> reports.shape, reports.dtype
    ((3, 2), dtype('uint64'))
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (8,)
    """

    def __init__(self, n_inputs, epsilon, n_buckets, hash_family="tabulation"):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.epsilon = check_epsilon(epsilon)
        g = check_positive_int(n_buckets, "n_buckets", minimum=2)
        if g > MAX_BUCKETS:
            raise ValueError(f"n_buckets must be at most {MAX_BUCKETS} (2^20; the bucket "
                             f"probabilities would drift from 1/g), got {g}.")
        if hash_family not in HASH_FAMILIES:
            raise ValueError(f"hash_family must be one of {HASH_FAMILIES}, got "
                             f"{hash_family!r}.")
        if hash_family == "linear" and g & (g - 1):
            raise ValueError(f"the linear hash family needs n_buckets a power of two "
                             f"(H(x) = M x over GF(2)), got n_buckets={g}.")
        self.n_buckets = g
        self.hash_family = hash_family
        self.name = self.kind or "local_hashing"
        self.params = {"n_buckets": g}
        if hash_family == "linear":
            self.params["hash_family"] = "linear"
        self._n_bits = max(1, (self.n_inputs - 1).bit_length())
        self._n_rows = g.bit_length() - 1
        # g-ary randomized response on the bucket, on integers (exact privacy check inside).
        self.weights = ratio_weights(self.epsilon, 1, g - 1, self.name)
        a, d = self.weights
        self.p = a / (a + (g - 1) * d)  # realised: the estimator stays exactly unbiased
        self.q = 1.0 / g
        self.pair_own = self.p / g  # y = H(u) and H(j) = H(u): p * P(H(j) = H(u))
        self.pair_other = 1.0 / g**2  # H(j), H(k) independent of each other and of y
        self._n_lo, self._n_hi = character_sizes(self.n_inputs)
        # Bucket y is the interval [lower[y], lower[y] + width[y]) of 32-bit hash values.
        edges = (np.arange(g + 1, dtype=np.uint64) << np.uint64(32)) + np.uint64(g - 1)
        edges //= np.uint64(g)  # ceil(y 2^32 / g), exact in uint64 since g <= 2^20
        self._lower = edges[:-1].astype(np.uint32)
        self._width = np.diff(edges).astype(np.uint32)

    # ------------------------------------------------------------------ hashing
    def hash_values(self, seeds, cells):
        """``H_s(j)`` (the bucket) for seeds and cells broadcast against each other.

        Parameters
        ----------
        seeds : ndarray of uint64
            Hash seeds (the first column of the reports).
        cells : array-like of int
            Cells in ``[0, n)``, broadcast against ``seeds``.

        Returns
        -------
        buckets : ndarray of uint64
            ``H_s(j)`` in ``[0, g)``, of the broadcast shape.

        Raises
        ------
        ValueError
            If the seeds are not uint64 or a cell lies outside ``[0, n)``.

        Examples
        --------
        >>> mechanism = BinaryLocalHashing(5, 1.0)
        >>> buckets = mechanism.hash_values(np.array([[7], [8]], dtype=np.uint64), np.arange(5))
        >>> buckets.shape, bool(buckets.max() < 2)
        ((2, 5), True)
        """
        seeds = np.asarray(seeds)
        if seeds.size and seeds.dtype != np.uint64:
            raise ValueError(f"seeds must be uint64, got dtype {seeds.dtype}.")
        cells = np.asarray(cells)
        if cells.size and (not np.issubdtype(cells.dtype, np.integer) or cells.min() < 0
                           or cells.max() >= self.n_inputs):
            raise ValueError(f"cells must be integers in [0, {self.n_inputs}).")
        if self.hash_family == "linear":
            rows = linear_hash_rows(seeds.astype(np.uint64), self._n_rows, self._n_bits)
            return linear_hash(rows, cells.astype(np.uint64))
        seeds, cells = np.broadcast_arrays(seeds.astype(np.uint64), cells.astype(np.uint64))
        shape = seeds.shape
        seeds, cells = seeds.ravel(), cells.ravel()
        n_lo = np.uint64(self._n_lo)
        low = splitmix64(seeds + (cells % n_lo + np.uint64(1)) * _GOLDEN) >> np.uint64(32)
        high = splitmix64(seeds + (cells // n_lo + np.uint64(1)) * _GOLDEN) & _LOW32
        h = (low + high) & _LOW32
        return ((h * np.uint64(self.n_buckets)) >> np.uint64(32)).reshape(shape)

    def conditional_strategy(self, seeds):
        """``P(y | u, seed)`` for each seed: a ``(len(seeds), g, n)`` array.

        For a fixed seed the mechanism is g-ary randomized response on ``H_seed(u)``; each
        ``(g, n)`` slice is that seed's exact strategy matrix (used by the privacy audit).

        Parameters
        ----------
        seeds : ndarray of uint64 of shape (n_seeds,)
            Hash seeds.

        Returns
        -------
        Q : ndarray of shape (n_seeds, n_buckets, n_inputs)
            ``Q[i, y, u]``, the probability of bucket ``y`` for a user of cell ``u`` who drew
            seed ``seeds[i]``.

        Raises
        ------
        ValueError
            If ``seeds`` is not 1-D or the result would have more than
            ``MAX_DENSE_ENTRIES`` entries.

        Examples
        --------
        >>> Q = OptimizedLocalHashing(6, 1.0).conditional_strategy(np.arange(3, dtype=np.uint64))
        >>> Q.shape, bool(np.allclose(Q.sum(axis=1), 1.0))
        ((3, 4, 6), True)
        """
        seeds = np.atleast_1d(np.asarray(seeds))
        g, n = self.n_buckets, self.n_inputs
        if seeds.ndim != 1 or seeds.size * g * n > MAX_DENSE_ENTRIES:
            raise ValueError(f"conditional_strategy takes a 1-D array of seeds with "
                             f"len(seeds) * g * n <= {MAX_DENSE_ENTRIES}.")
        buckets = self.hash_values(seeds[:, None], np.arange(n)[None, :])
        hit = buckets[:, None, :] == np.arange(g, dtype=np.uint64)[None, :, None]
        return np.where(hit, self.p, (1 - self.p) / (g - 1))

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        # One [seed, bucket] row per user: a fresh uniform 64-bit seed and the privatized bucket of
        # the user's type.
        indices = check_type_indices(indices, self.n_inputs)
        seeds = rng.integers(0, 2**64, size=indices.shape[0], dtype=np.uint64, endpoint=False)
        return self._randomize_given_seeds(indices, seeds, rng)

    def _randomize_given_seeds(self, indices, seeds, rng):
        """Randomized response on ``H_seed(u)`` with the seeds given (audits fix them)."""
        hashed = self.hash_values(seeds, indices)
        keep, other = sample_ratio_law(rng, indices.shape[0], 1, self.n_buckets - 1,
                                       *self.weights)
        # Uniform over the g - 1 buckets other than H(u): an index in [0, g - 1), past H(u).
        other = other.astype(np.uint64)
        other += other >= hashed
        reports = np.empty((indices.shape[0], 2), dtype=np.uint64)
        reports[:, 0] = seeds
        reports[:, 1] = np.where(keep, hashed, other)
        return reports

    def exact_law(self, value, seeds=None):
        """The exact law of one user's report given that the seed lies in ``seeds``.

        The seed is a uniform 64-bit word drawn independently of the value, so the law of
        ``(seed, bucket)`` conditional on the seed being uniform on any set of seeds is
        private exactly when the law of every seed is; this enumerates a small set.

        Parameters
        ----------
        value : int
            The user's cell, in ``[0, n)``.
        seeds : array-like of uint64, optional
            The seeds (default: ``0 .. 7``).

        Returns
        -------
        ExactLaw
            Outputs ``[seed, bucket]`` (uint64 rows, seed-major), weight ``a`` where the
            bucket is ``H_seed(value)`` and ``d`` elsewhere, total ``len(seeds) Z``.

        Examples
        --------
        >>> mechanism = OptimizedLocalHashing(6, 1.0)
        >>> law = mechanism.exact_law(2, seeds=np.array([5, 9], dtype=np.uint64))
        >>> law.outputs.shape, law.total == 2 * sum(mechanism.weights) + 4 * mechanism.weights[1]
        ((8, 2), True)
        """
        value = int(check_type_indices([value], self.n_inputs)[0])
        seeds = np.arange(8, dtype=np.uint64) if seeds is None else np.asarray(seeds)
        if seeds.ndim != 1 or seeds.dtype != np.uint64 or seeds.size == 0:
            raise ValueError("seeds must be a non-empty 1-D uint64 array.")
        g = self.n_buckets
        check_law_size(seeds.size * g, self.name)
        buckets = np.arange(g, dtype=np.uint64)
        outputs = np.stack([np.repeat(seeds, g), np.tile(buckets, seeds.size)], axis=1)
        hashed = self.hash_values(seeds, np.full(seeds.size, value))
        weights = ratio_law_weights((buckets[None, :] == hashed[:, None]).ravel(),
                                    *self.weights)
        return ExactLaw(outputs, weights, sum(weights))

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Rows [seed, bucket] are valid when the bucket is in [0, g): every 64-bit seed is possible.
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != 2:
            raise ValueError(
                f"reports of the {self.name!r} mechanism are an (N, 2) array of [seed, bucket] "
                f"rows, got an array of shape {reports.shape}: they come from another "
                "mechanism."
            )
        if reports.dtype != np.uint64:
            raise ValueError(
                f"reports of the {self.name!r} mechanism are uint64 [seed, bucket] rows (64-bit "
                f"seeds), got dtype {reports.dtype}: they come from another mechanism or were "
                "converted; keep them as uint64."
            )
        return ReportCheck(reports, reports[:, 1] < np.uint64(self.n_buckets),
                           f"[seed, bucket] rows with buckets in [0, {self.n_buckets}) "
                           f"(g = {self.n_buckets}; from local hashing with another number of "
                           "buckets, or another mechanism?)")

    @classmethod
    def from_dict(cls, spec):
        """Rebuild the mechanism from the dict ``to_dict()`` returned.

        A spec without ``hash_family`` (written before the linear family existed) means
        tabulation.

        Parameters
        ----------
        spec : dict
            A specification from ``to_dict()``.

        Returns
        -------
        mechanism : LocalHashing
            The mechanism the spec describes.
        """
        params = dict(spec.get("params", {}))
        params.setdefault("hash_family", "tabulation")  # specs from before the linear family
        return cls(spec["n_inputs"], spec["epsilon"], **params)

    def aggregate(self, reports):
        # C_j counts the reports whose bucket is H_s(j). Tabulation hashes decode in O(N n), the
        # linear family by one Walsh-Hadamard transform in O(N g + n log n) (module docstring).
        if self.hash_family == "tabulation":
            return super().aggregate(reports)
        reports = self.check_reports(reports)
        spectrum = np.zeros(2**self._n_bits, dtype=np.int64)
        for rows in chunks(reports.shape[0]):
            spectrum += self._linear_spectrum(reports[rows])
        return np.append(self._spectrum_to_counts(spectrum), np.int64(reports.shape[0]))

    def _linear_spectrum(self, reports):
        """Sum over the reports of ``(-1)^(T . y)`` at ``xor_{k in T} m_k``, every subset ``T``
        of the rows, walked in Gray-code order (one row flips per step)."""
        rows = linear_hash_rows(reports[:, 0], self._n_rows, self._n_bits)
        buckets = reports[:, 1]
        point = np.zeros(reports.shape[0], dtype=np.uint64)
        sign = np.zeros(reports.shape[0], dtype=np.uint64)
        size = 2**self._n_bits
        spectrum = np.zeros(size, dtype=np.int64)
        for step in range(self.n_buckets):
            if step:
                k = (step & -step).bit_length() - 1  # the bit that flips in the Gray code
                point ^= rows[:, k]
                sign ^= (buckets >> np.uint64(k)) & np.uint64(1)
            # One bincount per subset: entry 2 u + sign counts the +1s and the -1s at u.
            signed = np.bincount(point * np.uint64(2) + sign, minlength=2 * size)
            spectrum += signed[0::2] - signed[1::2]
        return spectrum

    def _spectrum_to_counts(self, spectrum):
        transformed = fwht(spectrum.astype(np.float64))[:self.n_inputs]
        return np.rint(transformed / self.n_buckets).astype(np.int64)

    def _support_counts(self, reports):
        if self.hash_family == "linear":
            return self._spectrum_to_counts(self._linear_spectrum(reports))
        return self._tabulation_support_counts(reports)

    def _block_users(self):
        grid = self._n_lo * self._n_hi
        users = max(MIN_BLOCK_USERS, GRID_BLOCK // grid) // 8 * 8
        return min(users, MAX_BLOCK_USERS)

    def _tabulation_support_counts(self, reports):
        """Support counts of a chunk of reports, block by block (see the module docstring)."""
        seeds = np.ascontiguousarray(reports[:, 0])
        lower, width = self._lower[reports[:, 1]], self._width[reports[:, 1]]
        n_lo, n_hi, block = self._n_lo, self._n_hi, self._block_users()
        tile = min(n_hi, max(1, GRID_BLOCK // (n_lo * block)))  # high characters per pass
        counts = np.zeros(n_lo * n_hi, dtype=np.int64)
        grid = np.empty((tile, n_lo, block), dtype=np.uint32)
        matches = np.zeros((tile * n_lo, block), dtype=bool)
        for start in range(0, seeds.shape[0], block):
            users = slice(start, min(start + block, seeds.shape[0]))
            b = users.stop - users.start
            padded = -(-b // 8) * 8
            A, B = hash_tables(seeds[users], n_lo, n_hi)
            A -= lower[users]  # A' = A - L_y (wrapping), so the test is (A' + B) < w_y
            if padded > b:  # the partial block's padding columns must count nothing
                matches[:, b:padded] = False
            for first in range(0, n_hi, tile):
                t = min(tile, n_hi - first)
                np.add(A[None, :, :], B[first:first + t, None, :], out=grid[:t, :, :b])
                np.less(grid[:t, :, :b], width[users],
                        out=matches[:t * n_lo].reshape(t, n_lo, block)[:, :, :b])
                # 8 users per uint64 word: each byte counts <= padded / 8 <= 255 matches.
                lanes = np.add.reduce(matches[:t * n_lo, :padded].view(np.uint64), axis=1)
                cells = slice(first * n_lo, (first + t) * n_lo)
                counts[cells] += lanes.view(np.uint8).reshape(-1, 8).sum(axis=1, dtype=np.int64)
        return counts[:self.n_inputs]

    def strategy_matrix(self):
        """Refused: the outputs are ``(seed, bucket)`` pairs over ``2^64`` seeds.

        Use :meth:`conditional_strategy` for the exact matrix of given seeds.

        Raises
        ------
        ValueError
            Always.
        """
        raise ValueError(
            f"the {self.name!r} mechanism has no finite strategy matrix: its outputs are "
            f"(seed, bucket) pairs over 2^64 seeds. Its privacy is audited seed by seed instead "
            "(conditional_strategy(seeds) gives each seed's exact g x n matrix)."
        )


def _default_family(hash_family, n_buckets=2):
    # An explicit g that is not a power of two can only be hashed by tabulation.
    if hash_family is not None:
        return hash_family
    if isinstance(n_buckets, (int, np.integer)) and n_buckets > 1 and n_buckets & (n_buckets - 1):
        return "tabulation"
    return DEFAULT_HASH_FAMILY


@register
@oracle_docstring
class OptimizedLocalHashing(LocalHashing):
    """Optimized local hashing (OLH): ``g`` near ``e^eps + 1`` buckets.

    Each user draws a random hash function ``H_s`` of the domain into ``g`` buckets (named by
    a 64-bit seed ``s``), and sends ``s`` with the bucket ``H_s(u)`` of their cell through
    ``g``-ary randomized response. A report supports every cell that hashes to its bucket;
    the server counts the support of each cell and debiases as for unary encoding, whose
    variance OLH matches (for rare cells, at ``g = e^eps + 1``) with reports of two integers
    instead of ``n`` bits.

    <oracle parameters: Domain size ``n``, at least 1.>
    n_buckets : int or None, default=None
        ``g``; default ``round(e^eps) + 1`` capped to ``[2, MAX_BUCKETS]`` (round rather than
        ceil, as in Wang et al.'s code) for tabulation, and the power of two of least variance
        (:func:`best_power_of_two_buckets`) for the linear family. Stored in ``params``.
    hash_family : {"tabulation", "linear"} or None, default=None
        Default: linear at every domain size (support counts in ``O(N g + n log n)``, where
        tabulation takes ``O(N n)``), or tabulation when ``n_buckets`` is given and is not a
        power of two, which the linear family cannot hash to (module docstring, "Choice of
        family").

    Attributes
    ----------
    n_buckets : int
        ``g``, the number of buckets.
    hash_family : {"tabulation", "linear"}
        The hash functions the seeds name.
    p : float
        Probability of sending the true bucket, ``e^eps / (e^eps + g - 1)``.
    q, pair_own, pair_other : float
        ``1/g``, ``p/g`` and ``1/g^2``: the support probabilities of the estimator.

    See Also
    --------
    BinaryLocalHashing : Two buckets: one bit of bucket per report, more variance.
    OptimizedUnaryEncoding : The same variance with ``n`` bits per report.
    HadamardResponse : One index per report, decoded by a fast transform.

    <wang17 reference>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = OptimizedLocalHashing(16, 1.0)
    >>> mechanism.n_buckets, mechanism.params
    (4, {'n_buckets': 4, 'hash_family': 'linear'})
    >>> reports = mechanism.randomize(np.arange(16), np.random.default_rng(0))
    >>> reports.shape, reports.dtype  # [seed, bucket] rows
    ((16, 2), dtype('uint64'))
    >>> round(float(mechanism.estimate(mechanism.aggregate(reports)).sum()), 6)  # known N
    16.0
    >>> OptimizedLocalHashing(2**20, 3.0).params
    {'n_buckets': 16, 'hash_family': 'linear'}

    Ten thousand users in eight cells:

    >>> users = np.repeat(np.arange(8), [3000, 2000, 1500, 1000, 1000, 800, 400, 300])
    >>> mechanism = OptimizedLocalHashing(8, 2.0)
    >>> reports = mechanism.randomize(users, np.random.default_rng(0))
    >>> mechanism.estimate(mechanism.aggregate(reports)).round(-1)
    array([3020., 1910., 1540., 1010.,  990.,  840.,  510.,  170.])
    >>> float(np.sqrt(10000 * mechanism.per_user_variance(np.eye(8))[0]).round(1))  # its sd
    242.6
    """

    kind = "olh"

    def __init__(self, n_inputs, epsilon, n_buckets=None, hash_family=None):
        hash_family = _default_family(hash_family, 2 if n_buckets is None else n_buckets)
        if n_buckets is None:
            epsilon = check_epsilon(epsilon)
            if hash_family == "linear":
                n_buckets = best_power_of_two_buckets(epsilon)
            else:
                n_buckets = int(min(max(round(math.exp(epsilon)) + 1, 2), MAX_BUCKETS))
        super().__init__(n_inputs, epsilon, n_buckets, hash_family)


@register
@oracle_docstring
class BinaryLocalHashing(LocalHashing):
    """Binary local hashing (BLH): ``g = 2`` buckets, one bit of ``y`` per report.

    Local hashing (see :class:`OptimizedLocalHashing`) with the number of buckets fixed to
    two: each user sends a hash seed and one randomized bit. Simpler than OLH, but less
    accurate at larger epsilon, where OLH uses more buckets (``g > 2`` once
    ``e^eps >= 1.5``).

    <oracle parameters: Domain size ``n``, at least 1.>
    hash_family : {"tabulation", "linear"} or None, default=None
        As for :class:`OptimizedLocalHashing`.

    Attributes
    ----------
    n_buckets : int
        2.
    hash_family : {"tabulation", "linear"}
        The hash functions the seeds name.
    p : float
        Probability of sending the true bit, ``e^eps / (e^eps + 1)``.

    See Also
    --------
    OptimizedLocalHashing : Local hashing with ``g`` near ``e^eps + 1`` buckets.
    RandomizedResponse : Randomized response on the cells themselves.

    <wang17 reference>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = BinaryLocalHashing(16, 1.0)
    >>> reports = mechanism.randomize(np.arange(16), np.random.default_rng(0))
    >>> int(reports[:, 1].max()) <= 1
    True

    Per-user variance of a cell's count on 64 cells at ``epsilon = 2``, against OLH:

    >>> [round(float(M(64, 2.0).per_user_variance(np.eye(64))[0]), 1)
    ...  for M in (BinaryLocalHashing, OptimizedLocalHashing)]
    [107.6, 46.6]
    """

    kind = "blh"

    def __init__(self, n_inputs, epsilon, hash_family=None):
        super().__init__(n_inputs, epsilon, 2, _default_family(hash_family))
        # g = 2 is fixed by the kind
        self.params = {"hash_family": "linear"} if self.hash_family == "linear" else {}
