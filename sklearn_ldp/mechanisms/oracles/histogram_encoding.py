"""Histogram encoding (Wang et al. 2017): summation (SHE) and thresholding (THE), exactly.

The paper adds continuous Laplace noise of scale ``2 / eps`` to every coordinate of the
user's one-hot vector (the vector's L1 sensitivity is 2). A float sample leaks its low bits,
so here the noise lives on a lattice and is drawn exactly from random words.

The noise. On the lattice ``Z / s`` (the one-hot vector scaled to ``s``), each coordinate
gets the two-sided geometric noise ``P(Z = z) = (1 - r) / (1 + r) r^{|z|}`` on the integers,
with the rational ratio ``r = R / 2^20`` (:data:`NOISE_BITS`): ``R`` is the least integer
with ``(2^20 / R)^{2 s} <= e^eps``, decided exactly (:func:`noise_ratio_numerator`). Two
users of types ``u`` and ``u'`` differ in two coordinates, by ``s`` lattice steps each, so
every report's probability ratio is at most ``r^{-2 s} <= e^eps``: exactly epsilon-LDP. The
variance of one coordinate is ``2 r / (1 - r)^2`` lattice steps squared.

SHE. A report is the ``d`` integers ``y = e_u + Z`` (``s = 1``): the server sums them, and
``sum(y_j)`` is an unbiased count of cell ``j``. The integer lattice is the best one: per
unit of the count the variance ``1 / (2 s^2 sinh^2(eps / (4 s)))`` grows with ``s`` towards
the continuous Laplace's ``8 / eps^2`` (``sinh(x) / x`` increases), so the discrete
mechanism is slightly *better* than the paper's (7.84 against 8 at ``eps = 1``).

The sampler (:func:`sample_two_sided_geometric`). ``|Z| = #{k >= 1 : U < t_k}`` with
``t_k = P(|Z| >= k) = 2 r^k / (1 + r)``, exact fractions, and ``U`` uniform. Each draw takes
16 uniform bits: 15 bits of ``U`` name a bucket of width ``2^-15`` and one more is the sign;
where no threshold falls inside the bucket, a table gives ``Z`` (one lookup per draw, the
common case). The other draws complete ``U`` to 63 bits with 48 fresh ones and compare them
with ``floor(t_k 2^63)``; below the last listed threshold ``t_K``, ``|Z| - K`` is a fresh
one-sided geometric (memoryless), drawn from words compared with ``R^j 2^{20 (3 - j)}``; a
tie at 63 bits draws more bits. No float is involved. The client
(``deploy/client/histogram_encoding.py``) draws the same law by the one-sided geometric's
words, a sign bit, and a redrawn negative zero.

Bounded reports. The law has every integer vector as an output; the reports are stored in the
smallest signed type (``int8``, ``int16``, else ``int32``) whose largest value ``m`` makes
``2 r^m <= 2^-128`` (decided on integers). A draw with a coordinate outside ``[-m, m]``
(probability below ``2^-128`` per coordinate) raises instead of being clipped: the
overflow is then one more public outcome, an event of the exact law, so the mechanism stays
exactly epsilon-LDP. The valid-report set is ``[-m, m]^d``. The audit
(:meth:`SummationHistogramEncoding.exact_law`) lists a window of outputs with their exact
integer weights and bounds every other output (and the overflow) by the envelope
``r^{-2}``: a :class:`~.._base.exact.RatioLaw`.

THE. Each coordinate of the SHE report on the lattice ``Z / s`` is thresholded at ``theta = k
/ s`` (bit ``j`` is 1 when ``y_j > theta``): unary encoding with ``p = P(s + Z > k) = P(Z >=
k + 1 - s)`` and ``q = P(Z >= k + 1)``, rational numbers (``P(Z >= g) = r^g / (1 + r)`` for
``g >= 1``). :class:`ThresholdingHistogramEncoding` is the unary encoding of those ``p`` and
``q`` (rounded to the unary sampler's dyadic ``p`` down and ``q`` up, so the law sampled and
audited is :class:`~.unary.UnaryEncoding`'s, and at least as private). The threshold
minimises ``q (1 - q) / (p - q)^2`` over the lattices ``s <= THE_MAX_SCALE`` and the
thresholds ``k < 2 s``. The paper's optimum lies in ``(0.5, 1)`` for continuous noise; on
the lattices the search always ends at ``s = 1``, ``k = 0`` (bit ``j`` is ``y_j >= 1``),
where ``p = 1 / (1 + r)``, ``q = r / (1 + r)``: symmetric unary encoding (basic RAPPOR),
whose variance is below the continuous THE's (3.92 against 4.81 at ``eps = 1``).

Pure numpy; no scikit-learn here.
"""

import decimal
import fractions
import functools

import numpy as np

from ..._validation import check_epsilon
from .._base.bits import DECIMAL_CONTEXT, MAX_PACKED_REPORT_BYTES
from .._base.exact import (
    RatioLaw,
    check_law_size,
    exp_decimal,
    integer_ratio_at_most,
    random_words,
)
from .._base.mechanism import (
    MAX_REPORTS,
    ReportCheck,
    all_valid,
    check_type_counts,
    check_type_indices,
    chunks,
    register,
)
from .support import SupportOracle, oracle_docstring
from .unary import UnaryEncoding

# The noise ratio is r = R / 2^NOISE_BITS; one 64-bit word decides up to NOISE_BLOCK steps
# of the geometric (NOISE_BITS * NOISE_BLOCK <= 63 bits, the lowest bit being the sign).
NOISE_BITS = 20
NOISE_BLOCK = 3
# A coordinate leaves the report's integer type with probability at most 2^-TAIL_BITS.
TAIL_BITS = 128
# Noise values drawn at once (memory: a few arrays of this many 64-bit words).
NOISE_CHUNK = 2**20
# Largest lattice scale s that THE's threshold search tries.
THE_MAX_SCALE = 16
# Cells a side of the window of outputs that the exact law lists (around 0 and 1).
LAW_WINDOW = 3


def noise_ratio_numerator(epsilon, scale=1):
    """``R`` with noise ratio ``r = R / 2^20``: the least ``R`` with ``(2^20 / R)^{2 s}
    <= e^eps`` (decided on integers), so that moving one coordinate by ``s`` lattice steps
    changes a report's probability by at most ``e^{eps / 2}``.

    Parameters
    ----------
    epsilon : float
        Privacy budget of one report.
    scale : int, default=1
        Lattice steps ``s`` of a one-hot entry.

    Returns
    -------
    int
        ``R`` in ``[1, 2^20)``.

    Raises
    ------
    ValueError
        If ``epsilon / s`` is so small that ``R`` would be ``2^20`` (no noise ratio below 1).

    Examples
    --------
    >>> R = noise_ratio_numerator(1.0)
    >>> R, round(R / 2**20, 6)  # e^{-1/2} = 0.606531
    (635994, 0.606531)
    """
    one = 2**NOISE_BITS
    with decimal.localcontext(DECIMAL_CONTEXT):
        nominal = exp_decimal(-epsilon / (2 * scale)) * one
    # The float -eps / (2 s) is rounded: start below and step up to the least R that passes.
    R = max(1, int(nominal.to_integral_value(rounding=decimal.ROUND_CEILING)) - 2)
    while not integer_ratio_at_most(one ** (2 * scale), R ** (2 * scale), epsilon):
        R += 1
    if R >= one:
        raise ValueError(
            f"epsilon={epsilon!r} is too small for histogram encoding on a lattice of {scale} "
            f"steps: the noise ratio e^(-eps/(2 s)) rounds to 1 at precision 2^-{NOISE_BITS}; "
            "use epsilon >= 1e-5."
        )
    return R


def noise_variance(R):
    """Variance ``2 r / (1 - r)^2`` of the two-sided geometric of ratio ``r = R / 2^20``
    (a float of the exact rational).

    Examples
    --------
    >>> round(noise_variance(noise_ratio_numerator(1.0)), 4)
    7.8354
    """
    one = 2**NOISE_BITS
    return float(fractions.Fraction(2 * R * one, (one - R) ** 2))


@functools.lru_cache(maxsize=64)
def report_bound_dtype(R):
    """The smallest of int8, int16, int32 whose largest value ``m`` has ``2 r^m <= 2^-128``.

    Decided on integers (``2 R^m <= 2^{20 m - 128}``); int32 always suffices, since ``R <
    2^20`` gives ``r^{2^31 - 1} < e^{-2047}``.

    Examples
    --------
    >>> report_bound_dtype(noise_ratio_numerator(4.0)), report_bound_dtype(
    ...     noise_ratio_numerator(1.0))
    (<class 'numpy.int8'>, <class 'numpy.int16'>)
    """
    for dtype in (np.int8, np.int16):
        m = int(np.iinfo(dtype).max)
        if 2 * R**m <= 2 ** (NOISE_BITS * m - TAIL_BITS):
            return dtype
    return np.int32


def _geometric_thresholds(R):
    """``R^j 2^{20 (3 - j)}`` for ``j = 1..3``: ``G >= j`` iff the word's 60 bits are below."""
    return np.array([R**j << (NOISE_BITS * (NOISE_BLOCK - j)) for j in range(1, NOISE_BLOCK + 1)],
                    dtype=np.uint64)


def sample_one_sided_geometric(rng, size, R):
    """``size`` exact draws of ``P(G >= g) = r^g``, ``r = R / 2^20`` (int64).

    ``G >= j`` for ``j <= 3`` exactly when the top 60 bits of a uniform word are below
    ``R^j 2^{20 (3 - j)}``; from ``G >= 3`` on, a fresh word continues (memoryless).

    Examples
    --------
    >>> g = sample_one_sided_geometric(np.random.default_rng(0), 100_000, 2**19)  # r = 1/2
    >>> round(float(g.mean()), 1)  # r / (1 - r)
    1.0
    """
    thresholds = _geometric_thresholds(R)
    shift = np.uint64(64 - NOISE_BITS * NOISE_BLOCK)
    out = np.zeros(size, dtype=np.int64)
    alive = np.arange(size)
    while alive.size:
        bits = random_words(rng, alive.size) >> shift
        steps = np.searchsorted(thresholds[::-1], bits, side="right")  # thresholds <= bits
        steps = NOISE_BLOCK - steps
        out[alive] += steps
        alive = alive[steps == NOISE_BLOCK]
    return out


# The magnitude |Z| of the two-sided geometric is read from TABLE_BITS bits of U
# (a table lookup), except where a threshold of |Z| falls inside the bucket those bits name.
TABLE_BITS = 15
# Thresholds listed at most (below the last one, |Z| - K is a fresh one-sided geometric).
MAX_THRESHOLDS = 4096
_LOW_BITS = 63 - TABLE_BITS  # the bits of U below the table's bucket
_AMBIGUOUS = np.iinfo(np.int16).min


@functools.lru_cache(maxsize=32)
def _magnitude_tables(R):
    """The lookup tables of :func:`sample_two_sided_geometric` for ratio ``R / 2^20``.

    ``t_k = P(|Z| >= k) = 2 r^k / (1 + r)`` (``k >= 1``). With the 63 uniform bits ``V`` of
    a word (``U = V / 2^63``), ``|Z| = #{k : U < t_k}``. Returns ``(table, floors, exact)``:
    ``table[i]`` the signed value of the 16-bit draw ``i`` (15 bits of ``U``, then the
    sign), or ``_AMBIGUOUS`` where a listed threshold lies inside the bucket or the
    bucket lies below ``t_K``; ``floors[k - 1] = floor(t_k 2^63)`` (uint64, decreasing) and
    ``exact[k - 1]`` whether ``t_k 2^63`` is an integer, for ``k <= K``.
    """
    one = 2**NOISE_BITS
    numerator, denominator = 2 * R, one + R  # t_1
    floors, exact = [], []
    while len(floors) < MAX_THRESHOLDS:
        value, remainder = divmod(numerator << 63, denominator)
        if floors and value >> _LOW_BITS == 0:  # t_k below 2^-15: the deep buckets start
            break
        floors.append(value)
        exact.append(remainder == 0)
        numerator, denominator = numerator * R, denominator * one
    floors_array = np.array(floors, dtype=np.uint64)
    # Bucket h holds U in [h, h + 1) / 2^16: |Z| = #{k : t_k 2^16 >= h + 1} unless some
    # t_k 2^16 lies strictly inside (h, h + 1), or h + 1 <= t_K 2^16 (thresholds beyond K).
    buckets = np.arange(2**TABLE_BITS, dtype=np.uint64)
    high = (buckets + np.uint64(1)) << np.uint64(_LOW_BITS)
    ascending = floors_array[::-1]
    magnitude = floors_array.size - np.searchsorted(ascending, high, side="left")
    ambiguous = np.zeros(buckets.size, dtype=bool)
    for value, is_exact in zip(floors, exact, strict=True):
        h, inside = divmod(value, 2**_LOW_BITS)
        if inside or not is_exact:
            ambiguous[h] = True
    ambiguous[: floors[-1] >> _LOW_BITS] = True  # below t_K: |Z| > K possible
    # Index = 15 bits of U then the sign bit: +|Z| for sign 0, -|Z| for sign 1 (t_1 is always
    # listed, so K >= 1 and |Z| <= K = MAX_THRESHOLDS fits int16 off the ambiguous buckets).
    table = np.stack([np.where(ambiguous, _AMBIGUOUS, magnitude),
                      np.where(ambiguous, _AMBIGUOUS, -magnitude)], axis=1).ravel()
    return table.astype(np.int16), floors_array, np.array(exact, dtype=bool)


def sample_two_sided_geometric(rng, size, R, out=None):
    """``size`` exact draws of ``P(Z = z) = (1 - r) / (1 + r) r^{|z|}``, ``r = R / 2^20``.

    16 uniform bits per draw: the top 15 (of ``U``) and the lowest (the sign) index a table
    of ``|Z| = #{k : U < t_k}`` (``t_k = P(|Z| >= k)``) wherever no threshold falls inside the
    bucket; the few draws of the other buckets complete ``U`` to 63 bits and compare them
    with ``floor(t_k 2^63)``, and below the last
    listed threshold ``t_K`` add a fresh one-sided geometric to ``K`` (memoryless). Integer
    comparisons only; a tie at 63 bits (probability below ``2^-50``) draws more bits.

    Parameters
    ----------
    rng : numpy.random.Generator
    size : int
    R : int
        The ratio's numerator, in ``[1, 2^20)``.
    out : ndarray of signed integers, shape (size,), optional
        Where to write the draws (int8 or int16 for speed); a draw beyond its type raises
        OverflowError. Default: a new int64 array.

    Returns
    -------
    ndarray, shape (size,)

    Examples
    --------
    >>> z = sample_two_sided_geometric(np.random.default_rng(0), 100_000, 2**19)  # r = 1/2
    >>> round(float(z.var()), 1)  # 2 r / (1 - r)^2 = 4
    4.0
    """
    table, floors, exact = _magnitude_tables(R)
    if out is None:
        out = np.empty(size, dtype=np.int64)
    limits = np.iinfo(out.dtype)
    if floors.size >= limits.max:
        raise ValueError(f"the draws of ratio {R} / 2^{NOISE_BITS} reach {floors.size}, beyond "
                         f"{out.dtype}: write them to a wider type.")
    typed = _typed_table(R, out.dtype.str)
    # Four draws per 64-bit word: 16 bits each, the top 15 the bucket of U and the lowest the
    # sign, which is the table's index as it is. mode="clip": the indices are in range, and
    # "raise" would buffer the output.
    words = random_words(rng, (size + 3) // 4).view(np.uint16)[:size]
    np.take(typed, words, out=out, mode="clip")
    pending = np.flatnonzero(out == limits.min)
    if pending.size:
        # U's 63 bits: the word's 15 and 48 fresh ones.
        word = words[pending].astype(np.uint64)
        V = (((word >> np.uint64(1)) << np.uint64(_LOW_BITS))
             | (random_words(rng, pending.size) >> np.uint64(64 - _LOW_BITS)))
        negative = (word & np.uint64(1)) == 1
        resolved = _resolve(rng, V, negative, R, floors, exact)
        if resolved.max() > limits.max or resolved.min() <= limits.min:
            raise OverflowError(f"a draw of the two-sided geometric is beyond {out.dtype} "
                                f"(|Z| = {int(np.abs(resolved).max())}).")
        out[pending] = resolved
    return out


@functools.lru_cache(maxsize=32)
def _typed_table(R, dtype):
    """The table of :func:`_magnitude_tables` in ``dtype``, its ambiguous entries that type's
    smallest value (no value in the table reaches it: ``|Z| <= K`` below the largest)."""
    table = _magnitude_tables(R)[0]
    typed = table.astype(dtype)
    typed[table == _AMBIGUOUS] = np.iinfo(dtype).min
    return typed


def _resolve(rng, V, negative, R, floors, exact):
    """The signed draws whose bucket does not decide ``|Z|``, from the 63 bits ``V`` of
    their ``U`` (uint64) and their signs (see :func:`sample_two_sided_geometric`)."""
    # U < t_k for certain iff V + 1 <= floor(t_k 2^63); U >= t_k iff V >= t_k 2^63.
    ascending = floors[::-1]
    certain = floors.size - np.searchsorted(ascending, V + np.uint64(1), side="left")
    magnitude = certain.astype(np.int64)
    # A tie: V = floor(t_k 2^63) with t_k 2^63 not an integer (more bits decide).
    position = np.searchsorted(ascending, V, side="left")
    tie = (position < floors.size) & (ascending[np.minimum(position, floors.size - 1)] == V)
    tie &= ~exact[::-1][np.minimum(position, floors.size - 1)]
    deep = (magnitude == floors.size) & ~tie
    if deep.any():  # U < t_K: |Z| = K + a fresh one-sided geometric (memoryless)
        magnitude[deep] += sample_one_sided_geometric(rng, int(deep.sum()), R)
    for i in np.flatnonzero(tie):
        magnitude[i] = _magnitude_from_bits(rng, int(V[i]), R)
    return np.where(negative, -magnitude, magnitude)


def _magnitude_from_bits(rng, V, R):
    """``|Z|`` from the 63 bits ``V`` of ``U`` and as many more as the comparisons need
    (exact rational thresholds, Python integers; reached with probability below 2^-50)."""
    one, bits = 2**NOISE_BITS, 63
    k, numerator, denominator = 0, 2 * R, one + R
    while True:  # is U < t_{k+1}?
        while True:
            low, high = V * denominator, (V + 1) * denominator
            target = numerator << bits
            if high <= target:
                below = True
                break
            if low >= target:
                below = False
                break
            V = (V << 64) | int(random_words(rng, 1)[0])
            bits += 64
        if not below:
            return k
        k += 1
        numerator, denominator = numerator * R, denominator * one


@register
@oracle_docstring
class SummationHistogramEncoding(SupportOracle):
    """Summation histogram encoding (SHE): the one-hot vector plus exact discrete Laplace noise.

    A user of type ``u`` sends ``d = n_inputs`` integers ``y_j = [j = u] + Z_j``, the
    ``Z_j`` independent two-sided geometric ``P(z) ~ r^{|z|}`` with ``r = R / 2^20 >=
    e^{-eps / 2}`` (exact integers, module
    :mod:`~sklearn_ldp.mechanisms.oracles.histogram_encoding`). The server sums the reports:
    ``sum(y_j)`` is an unbiased count of cell ``j``, then the known total ``N`` is used as for
    the other oracles. Each count's per-user variance is ``2 r / (1 - r)^2``, independent
    across cells (7.84 at ``eps = 1``; the continuous Laplace of the paper has 8).

    Reports are rows of ``d`` signed integers (int8 from ``eps`` about 1.41, int16 down to
    about 0.0055, int32 below): ``d`` or ``2 d`` bytes a user, so ``"auto"`` never picks it
    (optimized unary encoding has half its variance in ``d / 8`` bytes).

    <oracle parameters: Domain size ``d``, at least 1.>

    Attributes
    ----------
    ratio_numerator : int
        ``R``: the noise ratio is ``r = R / 2^20``.
    noise_variance : float
        ``2 r / (1 - r)^2``, the variance of one coordinate.
    report_dtype : numpy dtype
        The reports' integer type; valid reports have every entry in ``[-m, m]``, ``m`` its
        largest value.
    p, q : float
        1 and 0: ``E[y_j] = [j = u]``.

    See Also
    --------
    ThresholdingHistogramEncoding : The same reports thresholded to bits.
    OptimizedUnaryEncoding : Half the variance, one bit a cell.

    <wang17 reference>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = SummationHistogramEncoding(4, 2.0)
    >>> users = np.repeat([0, 1, 2, 3], [4000, 3000, 2000, 1000])
    >>> reports = mechanism.randomize(users, np.random.default_rng(0))
    >>> reports.shape, reports.dtype
    ((10000, 4), dtype('int8'))
    >>> mechanism.estimate(mechanism.aggregate(reports)).round(-2)
    array([4000., 3200., 1900.,  900.])
    >>> round(mechanism.noise_variance, 4)  # per user and cell
    1.8414
    """

    kind = "she"

    def __init__(self, n_inputs, epsilon):
        self._set_domain_and_budget(n_inputs, epsilon)
        self.ratio_numerator = noise_ratio_numerator(self.epsilon)
        self.noise_variance = noise_variance(self.ratio_numerator)
        self.report_dtype = report_bound_dtype(self.ratio_numerator)
        self.report_bound = int(np.iinfo(self.report_dtype).max)
        self.p, self.q = 1.0, 0.0  # the sums are unbiased counts as they are
        self.pair_own = self.pair_other = 0.0  # unused: the variance is given directly

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        # The noise of a block of users at a time is written into their rows (bounded memory),
        # then +1 at each user's cell. A coordinate beyond +-m (probability below 2^-128) is
        # a public outcome of its own, never a clipped value: OverflowError, no report.
        indices = check_type_indices(indices, self.n_inputs)
        d, bound = self.n_inputs, self.report_bound
        needed = indices.shape[0] * d * np.dtype(self.report_dtype).itemsize
        if needed > MAX_PACKED_REPORT_BYTES:
            raise ValueError(
                f"the {self.name!r} mechanism sends {d} integers per user: "
                f"{indices.shape[0]} reports would take {needed / 2**30:.1f} GiB (limit "
                f"{MAX_PACKED_REPORT_BYTES / 2**30:.0f} GiB per call). Privatize the records in "
                "chunks, use LDPEncoder.simulate, or a frequency oracle with compact reports: "
                "'oue' (one bit a cell), 'olh', 'hadamard' or 'hrr'.")
        reports = np.empty((indices.shape[0], d), dtype=self.report_dtype)
        flat = reports.reshape(-1)
        for rows in chunks(indices.shape[0], max(1, NOISE_CHUNK // d)):
            users = indices[rows]
            try:
                sample_two_sided_geometric(rng, users.shape[0] * d, self.ratio_numerator,
                                           out=flat[rows.start * d:rows.stop * d])
            except OverflowError:
                raise OverflowError(f"a {self.name!r} report has a coordinate beyond +-{bound} "
                                    f"(probability below 2^-{TAIL_BITS}); no report is sent."
                                    ) from None
            block = reports[rows]
            own = block[np.arange(users.shape[0]), users]
            if own.size and own.max() >= bound:
                raise OverflowError(f"a {self.name!r} report has a coordinate beyond +-{bound} "
                                    f"(probability below 2^-{TAIL_BITS}); no report is sent.")
            block[np.arange(users.shape[0]), users] = own + 1
        return reports

    def exact_law(self, value):
        # The outputs whose coordinates all lie in [-W, W + 1] (W = LAW_WINDOW), each with the
        # weight prod_j R^|z_j| 2^(20 (K - |z_j|)), z = y - e_value and K = W + 1: the law up to
        # the factor ((1 - r) / (1 + r))^d 2^(-20 K d), the same for every value. Any other
        # output changes by at most r^-2 between two values (the envelope).
        value = int(check_type_indices([value], self.n_inputs)[0])
        d, K, R = self.n_inputs, LAW_WINDOW + 1, self.ratio_numerator
        side = np.arange(-LAW_WINDOW, LAW_WINDOW + 2)
        check_law_size(side.size**d, self.name)
        grids = np.meshgrid(*([side] * d), indexing="ij")
        outputs = np.stack([g.ravel() for g in grids], axis=1)
        distance = np.abs(outputs - (np.arange(d) == value)).tolist()
        step = 2**NOISE_BITS
        weights = []
        for row in distance:
            weight = 1
            for z in row:
                weight *= R**z * step ** (K - z)
            weights.append(weight)
        envelope = ((step**2, R**2),)
        return RatioLaw(outputs.astype(self.report_dtype), weights, step ** (K * d), envelope)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Rows of d integers of the report type, each in [-m, m].
        reports = np.asarray(reports)
        if (reports.ndim != 2 or reports.shape[1] != self.n_inputs
                or not np.issubdtype(reports.dtype, np.integer)):
            raise ValueError(
                f"reports of the {self.name!r} mechanism must be a 2-D integer array of "
                f"{self.n_inputs} columns (one row of noisy one-hot counts a user), got shape "
                f"{reports.shape} and dtype {reports.dtype}.")
        bound = self.report_bound
        rule = f"rows of {self.n_inputs} integers in [-{bound}, {bound}]"
        # Two reductions decide the common case (all valid) without a mask as large as the
        # reports.
        if not reports.size or (reports.min() >= -bound and reports.max() <= bound):
            return ReportCheck(reports, all_valid(reports.shape[0]), rule)
        return ReportCheck(reports, ((reports >= -bound) & (reports <= bound)).all(axis=1), rule)

    def _support_counts(self, reports):
        return reports.sum(axis=0, dtype=np.int64)

    def _check_statistic(self, statistic):
        """The statistic ``[S_0, ..., S_{d-1}, N]`` as int64 (float for an expected one), or
        a ValueError: wrong length or dtype, ``N`` not a count of reports, or a sum beyond
        what ``N`` valid reports reach (``|S_j| <= m N``)."""
        statistic = np.asarray(statistic)
        if statistic.shape != (self.n_inputs + 1,):
            raise ValueError(
                f"the statistic of {self.name!r} has {self.n_inputs + 1} entries (sums of the "
                f"reports and their number), got shape {statistic.shape}.")
        floating = np.issubdtype(statistic.dtype, np.floating)
        if not (floating or np.issubdtype(statistic.dtype, np.integer)):
            raise ValueError(f"the statistic of {self.name!r} holds integer sums, got dtype "
                             f"{statistic.dtype}.")
        if floating and not np.all(np.isfinite(statistic)):
            index = int(np.flatnonzero(~np.isfinite(statistic))[0])
            raise ValueError(f"the statistic of {self.name!r} holds sums of reports; entry "
                             f"{index} is {statistic[index].item()!r}.")
        total, most = statistic[-1].item(), MAX_REPORTS // self.report_bound
        if not 0 <= total <= most:
            # At most 2^62 / m reports: then no sum of them (|S_j| <= m N) can wrap in int64.
            raise ValueError(f"the statistic of {self.name!r} ends with the number of reports, "
                             f"a count in [0, {most}]; got {total!r}.")
        sums = np.abs(statistic[:-1].astype(float))
        if sums.size and sums.max() > self.report_bound * total:
            cell = int(np.argmax(sums))
            raise ValueError(
                f"the statistic of {self.name!r} counts {total} reports, but the sum of cell "
                f"{cell} is {statistic[cell].item()!r}: each report adds at most "
                f"{self.report_bound} in absolute value (corrupted or crafted).")
        return statistic.astype(float if floating else np.int64)

    def empty_reports(self):
        """No reports, in the layout of :meth:`randomize` (rows of ``d`` signed integers).

        Returns
        -------
        ndarray of shape (0, n_inputs)
            An empty array of the reports' integer type.
        """
        return np.zeros((0, self.n_inputs), dtype=self.report_dtype)

    def check_statistic(self, statistic):
        """The statistic of reports read from a file or a merge, checked (signed sums).

        Parameters
        ----------
        statistic : array-like of shape (n_cells + 1,)
            Integer sums of the reports and their number.

        Returns
        -------
        ndarray of int64
            The statistic, checked.

        Raises
        ------
        ValueError
            If it is not an integer array, or no set of valid reports produces it.
        """
        statistic = np.asarray(statistic)
        if statistic.dtype.kind not in "iu":
            raise ValueError(f"the statistic of {self.name!r} holds integer sums, got dtype "
                             f"{statistic.dtype}.")
        return self._check_statistic(statistic)

    def _variance_coefficients(self):
        """``(noise_variance, 0)``: the coordinates are independent, each with the noise's
        variance, and the known-total step projects them (see :mod:`.support`)."""
        return self.noise_variance, 0.0

    def _support_extremes(self, centered):
        """Any row of integers in ``[-m, m]`` is a valid report: the extremes are ``-+m``
        times the sum of ``|c_j|``, attained by ``-+m sign(c)``."""
        bound = self.report_bound
        size = np.abs(centered).sum(axis=1) * bound
        sign = np.sign(centered).astype(self.report_dtype)
        return -size, size, -bound * sign, bound * sign, True

    def simulate_statistic(self, type_counts, rng):
        # The sum of N two-sided geometrics is the difference of two independent negative
        # binomials NB(N, 1 - r) (each geometric the difference of two one-sided ones). A
        # simulation (no report leaves a device): numpy's float-driven draws with the realised r.
        counts = check_type_counts(type_counts, self.n_inputs)
        total = int(counts.sum())
        success = 1.0 - self.ratio_numerator / 2**NOISE_BITS
        if total == 0:
            return np.zeros(self.n_inputs + 1, dtype=np.int64)
        noise = (rng.negative_binomial(total, success, size=self.n_inputs)
                 - rng.negative_binomial(total, success, size=self.n_inputs))
        return np.append(counts + noise.astype(np.int64), np.int64(total))


def _tail(R, g):
    """``P(Z >= g)`` for the two-sided geometric of ratio ``r = R / 2^20``, as a Fraction:
    ``r^g / (1 + r)`` for ``g >= 1``, ``1 - r^{1 - g} / (1 + r)`` otherwise."""
    r = fractions.Fraction(R, 2**NOISE_BITS)
    if g >= 1:
        return r**g / (1 + r)
    return 1 - r ** (1 - g) / (1 + r)


def threshold_probabilities(epsilon, scale, threshold):
    """``(p, q)`` of THE on the lattice ``Z / scale`` at ``theta = threshold / scale``, exact.

    ``p = P(Z >= threshold + 1 - scale)``, ``q = P(Z >= threshold + 1)`` for the noise of
    :func:`noise_ratio_numerator` ``(epsilon, scale)``.

    Parameters
    ----------
    epsilon : float
    scale : int
        Lattice steps of a one-hot entry, at least 1.
    threshold : int
        ``k`` in ``[0, 2 scale)``: bit ``j`` is ``y_j > k`` on the lattice.

    Returns
    -------
    p, q : fractions.Fraction

    Examples
    --------
    >>> p, q = threshold_probabilities(1.0, 1, 0)
    >>> round(float(p), 6), round(float(q), 6)  # symmetric unary encoding's
    (0.622459, 0.377541)
    """
    R = noise_ratio_numerator(epsilon, scale)
    return _tail(R, threshold + 1 - scale), _tail(R, threshold + 1)


def best_threshold(epsilon):
    """``(scale, threshold)`` minimising ``q (1 - q) / (p - q)^2`` over ``scale <= 16`` and
    ``threshold < 2 scale`` (ties: the smallest scale, then threshold).

    Examples
    --------
    >>> best_threshold(1.0), best_threshold(4.0)
    ((1, 0), (1, 0))
    """
    best = None
    for scale in range(1, THE_MAX_SCALE + 1):
        try:
            R = noise_ratio_numerator(epsilon, scale)
        except ValueError:
            break  # a finer lattice has no noise ratio below 1 either
        for threshold in range(2 * scale):
            p, q = (float(_tail(R, g)) for g in (threshold + 1 - scale, threshold + 1))
            variance = q * (1 - q) / (p - q) ** 2
            if best is None or variance < best[0] * (1 - 1e-12):
                best = (variance, scale, threshold)
    if best is None:
        noise_ratio_numerator(epsilon, 1)  # raises the error naming epsilon
    return best[1], best[2]


def _check_lattice(scale, threshold):
    """``(scale, threshold)`` as ints, or a ValueError naming the field and value."""
    for name, value in (("scale", scale), ("threshold", threshold)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            raise ValueError(f"THE's {name} must be an integer, got {value!r}.")
    if not 1 <= scale <= THE_MAX_SCALE:
        raise ValueError(f"THE's scale must lie in [1, {THE_MAX_SCALE}], got {scale!r}.")
    if not 0 <= threshold < 2 * scale:
        raise ValueError(f"THE's threshold must lie in [0, 2 * scale) = [0, {2 * scale}), got "
                         f"{threshold!r}.")
    return int(scale), int(threshold)


@register
@oracle_docstring
class ThresholdingHistogramEncoding(UnaryEncoding):
    """Thresholding histogram encoding (THE): SHE's report thresholded to one bit a cell.

    Bit ``j`` is 1 when the SHE coordinate ``y_j`` (on the lattice ``Z / scale``) exceeds
    ``theta = threshold / scale``: unary encoding with the exact ``p = P(1 + noise > theta)``
    and ``q = P(noise > theta)`` (:func:`threshold_probabilities`, then the unary sampler's
    dyadic rounding, ``p`` down and ``q`` up). By default the threshold minimises the
    variance (:func:`best_threshold`): ``scale = 1``, ``threshold = 0`` at every epsilon, where
    THE's law is symmetric unary encoding's (see the module docstring).

    Parameters
    ----------
    n_inputs : int
        Domain size ``n`` (bits per report), at least 1.
    epsilon : float
        Privacy budget of one report, in ``(0, 50]``.
    scale : int, optional
        Lattice steps ``s`` of a one-hot entry, in ``[1, 16]``; with ``threshold``, or
        neither (the optimum).
    threshold : int, optional
        ``k`` in ``[0, 2 s)``: ``theta = k / s``.

    Attributes
    ----------
    scale, threshold : int
        The lattice and threshold used (the optimum's when not given).
    p, q : float
        Realized probabilities (multiples of ``2^-52``) of bit ``u`` and of every other bit.
    p_numerator, q_numerator : int
        ``p = p_numerator / 2^52``, ``q = q_numerator / 2^52``.

    See Also
    --------
    SummationHistogramEncoding : The integer reports before thresholding.
    SymmetricUnaryEncoding : The same law at the optimal threshold.

    <wang17 reference>

    Examples
    --------
    >>> mechanism = ThresholdingHistogramEncoding(8, 1.0)
    >>> mechanism.params, round(mechanism.p, 6), round(mechanism.q, 6)
    ({'scale': 1, 'threshold': 0}, 0.622459, 0.377541)

    The best threshold on a fine lattice (``theta = 9 / 16``, near the paper's continuous
    optimum) has more variance:

    >>> paper = ThresholdingHistogramEncoding(8, 1.0, scale=16, threshold=9)
    >>> [round(float(m.per_user_variance(np.eye(8))[0]), 2) for m in (mechanism, paper)]
    [27.42, 33.78]
    """

    kind = "the"

    def __init__(self, n_inputs, epsilon, scale=None, threshold=None):
        if (scale is None) != (threshold is None):
            raise ValueError(f"THE takes both scale and threshold, or neither (the optimum); "
                             f"got scale={scale!r}, threshold={threshold!r}.")
        if scale is None:
            scale, threshold = best_threshold(check_epsilon(epsilon))
        self.scale, self.threshold = _check_lattice(scale, threshold)
        super().__init__(n_inputs, epsilon)
        self.params = {"scale": self.scale, "threshold": self.threshold}

    def _nominal_probabilities(self, e):
        # Called by UnaryEncoding.__init__ (epsilon checked): the exact p and q of the lattice,
        # as 80-digit Decimals for the unary sampler's dyadic rounding.
        p, q = threshold_probabilities(self.epsilon, self.scale, self.threshold)
        return (DECIMAL_CONTEXT.divide(decimal.Decimal(p.numerator), p.denominator),
                DECIMAL_CONTEXT.divide(decimal.Decimal(q.numerator), q.denominator))
