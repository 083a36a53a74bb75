"""Exact sampling primitives and the exact privacy check of a sampled law.

A report protects its user only through the bits that leave the device, so every randomizer
of the package draws from a finite, public output set with exact probabilities, using integer
arithmetic on uniform random bits. Three primitives cover every mechanism:

* :func:`bernoulli_below` -- one bit per element, 1 with probability ``a_i / 2^K`` for an
  integer numerator ``a_i`` of its own: ``[U_i < a_i]`` for ``U_i`` the top ``K`` bits of a
  uniform 64-bit word, which is exactly Bernoulli(``a_i / 2^K``).
* :func:`uniform_below` -- uniform integers in ``[0, m)``. numpy's ``Generator.integers`` draws
  them with Lemire's multiply-and-reject method on the raw 64-bit output of the bit generator:
  exactly uniform (rejection, not a float scaled and rounded).
* :func:`sample_table` -- one output per element from its own column of an integer table
  ``W[o, u]`` whose columns all sum to ``2^K``: the output is the first ``o`` whose cumulative
  weight exceeds ``U``, ``U`` uniform on ``K`` bits, so ``P(o | u) = W[o, u] / 2^K`` exactly.

Floating point may compute a *probability* (a numerator, a table entry), but never decides
which outputs a value can reach: a mechanism clamps every numerator into the envelope that its
exact privacy check covers, so the law it samples is exactly the one that was checked.

The exact check. A law is integer weights ``w[o]`` over the public outputs (in one order,
the same for every input) and their total ``T``: ``P(o) = w[o] / T``. Two laws satisfy the
``eps`` bound when ``w_a[o] T_b <= e^eps w_b[o] T_a`` for every output, both ways; this is
decided on Python integers against ``e^eps`` to 80 significant digits (:func:`exp_decimal`).
``e^eps`` is transcendental for every float ``eps != 0``, so an integer ratio is never equal to
it; a ratio within ``10^-70`` of it is treated as a violation, which keeps the decision exact.

Pure numpy and the standard library; no scikit-learn here.
"""

import decimal
import fractions
import functools
import math
import numbers
from typing import NamedTuple

import numpy as np

# 80 significant digits: enough to decide ratios of integers below 2^128 against e^eps.
DECIMAL_CONTEXT = decimal.Context(prec=80)
# A ratio this close to e^eps (relative) counts as a violation: the decision stays exact.
_DECISION_MARGIN = decimal.Decimal("1e-70")

# Bits of the uniform integers that decide a table row or a Bernoulli bit.
TABLE_PRECISION = 52


def exp_decimal(epsilon):
    """``e^epsilon`` as a Decimal with 80 significant digits (``epsilon`` taken exactly).

    Examples
    --------
    >>> str(exp_decimal(1.0))[:12]
    '2.7182818284'
    """
    return DECIMAL_CONTEXT.exp(decimal.Decimal(float(epsilon)))


@functools.lru_cache(maxsize=256)
def _exact_bound(epsilon):
    return DECIMAL_CONTEXT.multiply(exp_decimal(epsilon),
                                    DECIMAL_CONTEXT.subtract(1, _DECISION_MARGIN))


def exact_bound(epsilon):
    """``e^epsilon (1 - 10^-70)`` with 80 significant digits: the bound a ratio is held to.

    Computed in the 80-digit context (the default context's 28 digits would round the
    margin away and ``e^epsilon`` itself to 28 digits).

    Examples
    --------
    >>> exact_bound(1.0) < exp_decimal(1.0)
    True
    """
    # Cached: an audit compares millions of ratios against the same few bounds.
    return _exact_bound(float(epsilon))


def integer_ratio_at_most(numerator, denominator, epsilon):
    """Whether ``numerator / denominator <= e^epsilon``, decided exactly (integers >= 0).

    A zero denominator is allowed only with a zero numerator (``0 / 0``: an output neither
    input reaches).

    Examples
    --------
    >>> integer_ratio_at_most(27, 10, 1.0), integer_ratio_at_most(28, 10, 1.0)
    (True, False)
    >>> integer_ratio_at_most(0, 0, 0.5), integer_ratio_at_most(1, 0, 0.5)
    (True, False)
    """
    numerator, denominator = int(numerator), int(denominator)
    if denominator == 0:
        return numerator == 0
    bound = exact_bound(epsilon)
    ratio = DECIMAL_CONTEXT.divide(decimal.Decimal(numerator), decimal.Decimal(denominator))
    return ratio <= bound


def largest_numerator_within(denominator, epsilon):
    """The largest integer ``a`` with ``a / denominator <= e^epsilon`` (decided exactly).

    Examples
    --------
    >>> largest_numerator_within(10, 1.0)
    27
    """
    denominator = int(denominator)
    bound = exact_bound(epsilon)
    candidate = int(DECIMAL_CONTEXT.multiply(bound, decimal.Decimal(denominator))
                    .to_integral_value(rounding=decimal.ROUND_FLOOR))
    while candidate > 0 and not integer_ratio_at_most(candidate, denominator, epsilon):
        candidate -= 1
    return candidate


# ---------------------------------------------------------------------- random integers
def random_words(rng, size):
    """``size`` independent uniform 64-bit words (the bit generator's raw output).

    ``Generator.integers`` over the full uint64 range returns the raw 64-bit outputs of the
    bit generator; measured 2x faster than ``bit_generator.random_raw``.

    Examples
    --------
    >>> random_words(np.random.default_rng(0), 3).dtype
    dtype('uint64')
    """
    return rng.integers(0, 2**64 - 1, size=size, dtype=np.uint64, endpoint=True)


def uniform_bits(rng, size, precision):
    """``size`` uniform integers on ``precision`` bits (``0 <= U < 2^precision``), uint64.

    Examples
    --------
    >>> bool((uniform_bits(np.random.default_rng(0), 100, 4) < 16).all())
    True
    """
    if not 1 <= int(precision) <= 64:
        raise ValueError(f"precision must lie in [1, 64], got {precision!r}.")
    return random_words(rng, size) >> np.uint64(64 - int(precision))


def uniform_below(rng, high, size):
    """``size`` exactly uniform integers in ``[0, high)`` (int64; ``high`` scalar or array).

    Examples
    --------
    >>> values = uniform_below(np.random.default_rng(0), 3, 1000)
    >>> sorted(set(values.tolist()))
    [0, 1, 2]
    """
    return rng.integers(0, high, size=size, dtype=np.int64)


def bernoulli_below(rng, numerators, precision=TABLE_PRECISION):
    """Independent bits, bit ``i`` equal to 1 with probability ``numerators[i] / 2^precision``.

    Parameters
    ----------
    rng : numpy.random.Generator
    numerators : array-like of int
        Each in ``[0, 2^precision]``.
    precision : int, default=TABLE_PRECISION
        At most 63.

    Returns
    -------
    bits : ndarray of bool, the shape of ``numerators``

    Examples
    --------
    >>> bits = bernoulli_below(np.random.default_rng(0), np.full(10_000, 2**50))  # 1/4
    >>> bool(abs(bits.mean() - 0.25) < 0.02)
    True
    """
    numerators = np.asarray(numerators, dtype=np.int64)
    if not 1 <= int(precision) <= 63:
        raise ValueError(f"precision must lie in [1, 63], got {precision!r}.")
    if numerators.size and (numerators.min() < 0 or numerators.max() > 2**int(precision)):
        raise ValueError(f"numerators must lie in [0, 2**{precision}].")
    draws = uniform_bits(rng, numerators.shape, precision).astype(np.int64)
    return draws < numerators


def check_table(table, precision=TABLE_PRECISION, name="table"):
    """An integer table ``W[o, u]`` whose every column sums to ``2^precision``, as int64.

    Examples
    --------
    >>> check_table([[3, 1], [1, 3]], precision=2).tolist()
    [[3, 1], [1, 3]]
    """
    table = np.asarray(table)
    if table.ndim != 2 or table.dtype.kind not in "iu" or table.size == 0:
        raise ValueError(f"the {name} must be a non-empty 2-D array of integers, got shape "
                         f"{table.shape} and dtype {table.dtype}.")
    if (table < 0).any():
        o, u = (int(k) for k in np.argwhere(table < 0)[0])
        raise ValueError(f"the {name} has a negative weight {int(table[o, u])} at output {o}, "
                         f"input {u}.")
    table = table.astype(np.int64)
    sums = table.sum(axis=0)
    off = np.flatnonzero(sums != 2**int(precision))
    if off.size:
        u = int(off[0])
        raise ValueError(f"column {u} of the {name} sums to {int(sums[u])}, not "
                         f"2**{precision}: every input's weights must sum to the same power "
                         "of two.")
    return table


def sample_table(rng, table, columns, precision=TABLE_PRECISION):
    """One output per element: row ``o`` with probability ``table[o, columns[i]] / 2^K``.

    Parameters
    ----------
    rng : numpy.random.Generator
    table : ndarray of int64, shape (n_outputs, n_inputs)
        Every column sums to ``2^precision`` (see :func:`check_table`).
    columns : ndarray of int
        The input of each element.
    precision : int, default=TABLE_PRECISION

    Returns
    -------
    outputs : ndarray of int64, the shape of ``columns``

    Examples
    --------
    >>> table = np.array([[4, 0], [0, 2], [0, 2]])
    >>> sample_table(np.random.default_rng(0), table, np.array([0, 0, 0]), precision=2).tolist()
    [0, 0, 0]
    """
    columns = np.asarray(columns, dtype=np.int64)
    cumulative = np.cumsum(table, axis=0)  # (n_outputs, n_inputs), last row 2^K
    draws = uniform_bits(rng, columns.shape, precision).astype(np.int64)
    outputs = np.empty(columns.shape, dtype=np.int64)
    # Users grouped by input: one vectorized search per input that occurs (at most n_inputs
    # searches, each over the users of that input).
    order = np.argsort(columns, kind="stable")
    present, starts = np.unique(columns[order], return_index=True)
    bounds = np.append(starts, order.size)
    for u, start, stop in zip(present.tolist(), bounds[:-1].tolist(), bounds[1:].tolist(),
                              strict=True):
        users = order[start:stop]
        outputs[users] = np.searchsorted(cumulative[:, u], draws[users], side="right")
    return outputs


# ---------------------------------------------------------------------- exact laws
class ExactLaw(NamedTuple):
    """The exact law of one input's report: ``P(outputs[o]) = weights[o] / total``.

    ``outputs`` lists the whole public output set in the mechanism's canonical order (the same
    for every input), encoded as reports are (one row of ``outputs`` is one report);
    ``weights`` are non-negative Python integers (an object array or a list) and ``total``
    their sum.
    """

    outputs: np.ndarray
    weights: list
    total: int


def law_from_table_column(table, u, outputs=None):
    """The :class:`ExactLaw` of input ``u`` of an integer table (outputs ``0..m-1`` unless
    given)."""
    column = [int(w) for w in np.asarray(table)[:, u]]
    if outputs is None:
        outputs = np.arange(len(column))
    return ExactLaw(outputs, column, sum(column))


def laws_within(first, second, epsilon):
    """Whether two exact laws satisfy the ``epsilon`` bound on every output, both ways.

    Returns ``(ok, worst)``: ``ok`` decided exactly on integers, ``worst`` the largest
    ``log(P_a(o) / P_b(o))`` over outputs and both directions, as a float for reports
    (``inf`` when one law reaches an output the other cannot).

    Examples
    --------
    >>> a = ExactLaw(np.arange(2), [3, 1], 4)
    >>> b = ExactLaw(np.arange(2), [1, 3], 4)
    >>> ok, worst = laws_within(a, b, math.log(3))
    >>> ok, round(worst, 6)
    (True, 1.098612)
    >>> laws_within(a, b, 1.0)[0]
    False
    """
    if len(first.weights) != len(second.weights):
        raise ValueError("the two laws list different output sets.")
    ok, worst = True, 0.0
    ta, tb = int(first.total), int(second.total)
    bound = _fixed_point_bound(epsilon)
    for wa, wb in zip(first.weights, second.weights, strict=True):
        wa, wb = int(wa), int(wb)
        if wa == 0 and wb == 0:
            continue
        if wa == 0 or wb == 0:
            return False, math.inf
        left, right = wa * tb, wb * ta
        # left / right <= e^eps and back, on integers: bound / 2^FIXED_POINT_BITS is below
        # e^eps (1 - 1e-70), so this never accepts a ratio above e^eps.
        if bound is not None and ((left << FIXED_POINT_BITS) > bound * right
                                  or (right << FIXED_POINT_BITS) > bound * left):
            ok = False
        # log(larger / smaller) as log1p of a correctly rounded integer quotient: the
        # difference of two logs of large integers would lose about 1e-13.
        low, high = min(left, right), max(left, right)
        worst = max(worst, math.log1p((high - low) / low))
    return ok, worst


class RatioLaw(NamedTuple):
    """A law known up to a factor common to every input, for pure epsilon-DP on an infinite
    output set (a draw independent of the value, kept with an integer probability).

    ``P(outputs[o] | x) = c(o) weights[o] / total``: ``c(o) > 0`` is the same for every input
    (for example a discrete Gaussian's transcendental weight), so the ratio of two inputs'
    probabilities of a listed output is ``weights`` against ``total`` exactly, as for an
    :class:`ExactLaw`. Every output that is not listed has, between any two inputs, a ratio
    at most one of the integer ratios ``envelope`` (pairs ``(numerator, denominator)``).
    """

    outputs: np.ndarray
    weights: list
    total: int
    envelope: tuple


class BracketedLaw(NamedTuple):
    """A law with transcendental weights, bracketed by integers, for (epsilon, delta)-DP.

    ``low[o] / total_high <= P(outputs[o]) <= high[o] / total_low`` for each listed output,
    and the outputs that are not listed have total probability at most ``tail /
    total_low``. ``low``, ``high`` are object arrays of Python integers; the four others
    Python integers.
    """

    outputs: np.ndarray
    low: np.ndarray
    high: np.ndarray
    total_low: int
    total_high: int
    tail: int


def hockey_stick_bound(first, second, epsilon):
    """An upper bound, exact as a fraction, on ``sup_S P_a(S) - e^eps P_b(S)``.

    The hockey-stick divergence of two :class:`BracketedLaw` s over the same outputs: the
    smallest ``delta`` with ``P_a(S) <= e^eps P_b(S) + delta`` for every event ``S``. Each
    listed output adds ``max(0, high_a / total_low_a - E low_b / total_high_b)`` with ``E <=
    e^eps`` (a 256-bit fixed-point bound below it), and the unlisted outputs of ``a`` add
    their whole mass bound, so the result is never below the true divergence. Integer
    arithmetic only.

    Parameters
    ----------
    first, second : BracketedLaw
        The laws of two inputs (``P_a`` and ``P_b``), listing the same outputs.
    epsilon : float
        The epsilon at which the divergence is measured.

    Returns
    -------
    fractions.Fraction

    Examples
    --------
    >>> a = BracketedLaw(np.arange(2), np.array([3, 1], dtype=object),
    ...                  np.array([3, 1], dtype=object), 4, 4, 0)
    >>> b = BracketedLaw(np.arange(2), np.array([1, 3], dtype=object),
    ...                  np.array([1, 3], dtype=object), 4, 4, 0)
    >>> float(hockey_stick_bound(a, b, 0.0))
    0.5
    >>> float(hockey_stick_bound(a, b, math.log(3))) < 1e-60
    True
    """
    if len(first.outputs) != len(second.outputs) or not np.array_equal(
            np.asarray(first.outputs), np.asarray(second.outputs)):
        raise ValueError("the two laws list different output sets.")
    bound = _fixed_point_bound(epsilon)
    if bound is None:  # an infinite epsilon bounds every ratio
        return fractions.Fraction(0)
    # An output adds high_a / Tl_a - E low_b / Th_b over the common denominator
    # 2^F Tl_a Th_b, with E = bound / 2^F <= e^eps (F = _HOCKEY_STICK_BITS).
    bound >>= FIXED_POINT_BITS - _HOCKEY_STICK_BITS  # still below e^eps
    scale_a = int(second.total_high) << _HOCKEY_STICK_BITS
    scale_b = bound * int(first.total_low)
    # Only outputs whose ratio comes within 1e-6 of E can add anything. The screen is in
    # float64 (relative error below 1e-14 on these positive numbers, far inside the margin);
    # the terms it keeps are then summed exactly.
    high = np.asarray(first.high, dtype=object)
    low = np.asarray(second.low, dtype=object)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        ratio = (high.astype(float) * float(scale_a)) / (low.astype(float) * float(scale_b))
    keep = ~(ratio < 1.0 - 1e-6)  # NaN (0 / 0 in float) kept too: summed exactly
    terms = high[keep] * scale_a - low[keep] * scale_b
    excess = sum(int(t) for t in terms if t > 0)
    denominator = (int(first.total_low) * int(second.total_high)) << _HOCKEY_STICK_BITS
    return (fractions.Fraction(excess, denominator)
            + fractions.Fraction(int(first.tail), int(first.total_low)))


# Bits of the lower bound on e^eps in hockey_stick_bound: 2^-64 relative adds at most
# e^eps 2^-64 to a divergence bound.
_HOCKEY_STICK_BITS = 64


# Bits of the fixed-point bound of laws_within (256 bits: far below the 1e-70 margin).
FIXED_POINT_BITS = 256


@functools.lru_cache(maxsize=256)
def _fixed_point_bound(epsilon):
    """``floor(exact_bound(eps) 2^256)`` as an integer (None for an infinite epsilon)."""
    if math.isinf(epsilon):
        return None
    scaled = DECIMAL_CONTEXT.multiply(exact_bound(epsilon),
                                      DECIMAL_CONTEXT.power(2, FIXED_POINT_BITS))
    return int(scaled.to_integral_value(rounding=decimal.ROUND_FLOOR))


def worst_pair_ratio(first, second):
    """The largest ``P_a(o) / P_b(o)`` over outputs and both directions, as integers
    ``(numerator, denominator)`` (``(1, 0)`` when one law reaches an output the other cannot).

    Examples
    --------
    >>> worst_pair_ratio(ExactLaw(None, [3, 1], 4), ExactLaw(None, [1, 3], 4))
    (12, 4)
    """
    best = (1, 1)
    ta, tb = int(first.total), int(second.total)
    for wa, wb in zip(first.weights, second.weights, strict=True):
        wa, wb = int(wa), int(wb)
        if wa == 0 and wb == 0:
            continue
        if wa == 0 or wb == 0:
            return 1, 0
        for num, den in ((wa * tb, wb * ta), (wb * ta, wa * tb)):
            if num * best[1] > best[0] * den:
                best = (num, den)
    return best


def uniform_mixture(laws, outputs):
    """The law of a uniform choice of one of ``laws`` (independent of the value), then a draw
    from it: ``ExactLaw(outputs, ...)`` over the concatenated output sets, the weights scaled
    to one common total ``len(laws) lcm(totals)`` (exact integers).

    Examples
    --------
    >>> law = uniform_mixture([ExactLaw(None, [1, 1], 2), ExactLaw(None, [1, 2], 3)],
    ...                       np.arange(4))
    >>> law.weights, law.total
    ([3, 3, 2, 4], 12)
    """
    common = math.lcm(*(int(law.total) for law in laws))
    weights = []
    for law in laws:
        scale = common // int(law.total)
        weights += [int(w) * scale for w in law.weights]
    return ExactLaw(outputs, weights, len(laws) * common)


def product_law(laws, dtype, name):
    """The law of independent reports, one drawn from each of ``laws``: rows of their
    outputs side by side (each law's outputs as rows of their own width), weights the
    products of the parts' weights over the product of the totals (exact integers).

    The order is canonical: the first law's output varies slowest (``itertools.product``
    order), so it is the same for every input when each part's order is.

    Parameters
    ----------
    laws : sequence of ExactLaw
        The parts' laws, in report order.
    dtype : numpy dtype
        The dtype of the report rows (each part's outputs are converted to it, as the
        mechanism writes its report row).
    name : str
        The mechanism, named when the product has more than ``MAX_LAW_OUTPUTS`` outputs.

    Returns
    -------
    ExactLaw

    Examples
    --------
    >>> law = product_law([ExactLaw(np.arange(2), [3, 1], 4), ExactLaw(np.arange(2), [1, 1], 2)],
    ...                   np.int64, "example")
    >>> law.outputs.tolist(), law.weights, law.total
    ([[0, 0], [0, 1], [1, 0], [1, 1]], [3, 3, 1, 1], 8)
    """
    sizes = [len(law.weights) for law in laws]
    check_law_size(math.prod(sizes), name)
    # Row r of the product takes output index[i][r] of law i (C order: the last law varies
    # fastest); a numpy outer product of object arrays keeps the weights exact integers.
    index = np.unravel_index(np.arange(math.prod(sizes)), sizes)
    outputs = np.hstack([np.asarray(law.outputs).reshape(size, -1).astype(dtype)[rows]
                         for law, size, rows in zip(laws, sizes, index, strict=True)])
    weights = functools.reduce(np.multiply.outer, [np.array([int(w) for w in law.weights],
                                                            dtype=object) for law in laws])
    return ExactLaw(outputs, np.ravel(weights).tolist(),
                    math.prod(int(law.total) for law in laws))


def realized_epsilon_of_laws(laws):
    """The largest ``log`` probability ratio over every pair of the given laws (a float).

    Examples
    --------
    >>> laws = [ExactLaw(np.arange(2), [3, 1], 4), ExactLaw(np.arange(2), [1, 3], 4)]
    >>> round(realized_epsilon_of_laws(laws), 6)
    1.098612
    """
    worst = 0.0
    for i, first in enumerate(laws):
        for second in laws[i + 1:]:
            worst = max(worst, laws_within(first, second, math.inf)[1])
    return worst


# Largest output set an exact law enumerates (audits use small instances of each kind).
MAX_LAW_OUTPUTS = 2**20


def check_law_size(n_outputs, name):
    """Refuse to enumerate more than ``MAX_LAW_OUTPUTS`` outputs, naming the mechanism."""
    if n_outputs > MAX_LAW_OUTPUTS:
        raise ValueError(f"the {name!r} mechanism has {n_outputs} outputs, more than an exact "
                         f"law enumerates ({MAX_LAW_OUTPUTS}); audit a smaller instance.")


class PrivacyAudit(NamedTuple):
    """What :func:`audit_privacy` found.

    Parameters
    ----------
    claimed : float
        The epsilon checked.
    realised : float
        The largest log probability ratio over the outputs and the pairs of inputs audited
        (a float, for reading; ``inf`` when an output is reachable from one input only). An
        upper bound where a law has an envelope (:class:`RatioLaw`); the claimed epsilon for
        (epsilon, delta) laws (:class:`BracketedLaw`), whose delta is measured at it.
    private : bool
        Whether every pair satisfies the claim exactly (decided on integers).
    worst_pair : tuple
        The pair of inputs whose laws came closest to (or past) the claim.
    delta : float
        The delta checked (0 for pure epsilon-DP).
    realised_delta : float
        The largest hockey-stick divergence at ``claimed`` over the pairs (both directions),
        an upper bound rounded up to a float; 0 for pure laws.

    See Also
    --------
    audit_privacy : The audit that returns it.

    Examples
    --------
    >>> audit = PrivacyAudit(1.0, 0.99, True, (0, 1))
    >>> audit.private, audit.delta
    (True, 0.0)
    """

    claimed: float
    realised: float
    private: bool
    worst_pair: tuple
    delta: float = 0.0
    realised_delta: float = 0.0


def audit_privacy(mechanism, values, epsilon=None, delta=None):
    """Check a mechanism's exact output laws over every pair of ``values``.

    Each law is the one the mechanism samples (its ``exact_law``). Three kinds of law:

    * :class:`ExactLaw`, integer weights over the whole public output set: every output's
      ratio is decided exactly (integers against ``e^epsilon``);
    * :class:`RatioLaw`, integer weights up to a factor common to every input, and an
      envelope of integer ratios for the outputs not listed (pure epsilon on an infinite
      output set): the same exact decision, and the envelope's ratios against ``e^epsilon``;
    * :class:`BracketedLaw`, transcendental weights bracketed by integers with a bounded
      tail ((epsilon, delta)-DP, the discrete Gaussian): an upper bound on the hockey-stick
      divergence at ``epsilon`` (:func:`hockey_stick_bound`), both ways, held to ``delta``
      exactly (as fractions).

    The realised epsilon (and delta) are reported as floats.

    Parameters
    ----------
    mechanism : object with ``exact_law(value)`` and ``epsilon``
        A small instance (laws of at most ``MAX_LAW_OUTPUTS`` outputs).
    values : sequence
        The inputs to compare, as ``randomize`` takes them for one user (cells, numbers,
        records): include the adversarial ones (neighbouring floats, the bounds, the
        largest and smallest categories).
    epsilon : float, optional
        The claim to check (default: ``mechanism.epsilon``).
    delta : float, optional
        The delta of an (epsilon, delta) claim (default: ``mechanism.delta`` when the
        mechanism has one, else 0).

    Returns
    -------
    PrivacyAudit
        The claim, the realised epsilon (and delta), the exact decision and the closest pair.

    Raises
    ------
    ValueError
        With fewer than two values, when a law has more than ``MAX_LAW_OUTPUTS`` outputs,
        or when the laws mix bracketed and exact kinds.

    See Also
    --------
    PrivacyAudit : What it returns.
    hockey_stick_bound : The (epsilon, delta) check of two bracketed laws.

    References
    ----------
    .. [1] I. Mironov, "On significance of the least significant bits for differential
       privacy", ACM CCS 2012.
    .. [2] C. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
       privacy", NeurIPS 2020 (the hockey-stick divergence of the discrete Gaussian).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> audit = audit_privacy(RandomizedResponse(4, 1.0), [0, 1, 2, 3])
    >>> audit.private, audit.realised <= 1.0
    (True, True)
    """
    claimed = _audit_number(mechanism.epsilon if epsilon is None else epsilon, "epsilon",
                            math.inf)
    if delta is None:
        delta = getattr(mechanism, "delta", None) or 0.0
    claimed_delta = _audit_number(delta, "delta", 1.0)
    values = list(values)
    if len(values) < 2:
        raise ValueError(f"audit_privacy compares pairs of inputs: give at least two values, "
                         f"got {len(values)}.")
    laws = [mechanism.exact_law(value) for value in values]
    bracketed = {isinstance(law, BracketedLaw) for law in laws}
    if len(bracketed) > 1:
        raise ValueError("the laws mix bracketed (epsilon, delta) laws and exact ones.")
    if bracketed == {True}:
        return _audit_bracketed(laws, values, claimed, claimed_delta)
    private, realised, worst_pair = True, 0.0, (values[0], values[1])
    for numerator, denominator in getattr(laws[0], "envelope", ()):
        private = private and integer_ratio_at_most(numerator, denominator, claimed)
        realised = max(realised, math.log(numerator / denominator))
    for i, first in enumerate(laws):
        for j in range(i + 1, len(laws)):
            ok, worst = laws_within(first, laws[j], claimed)
            private = private and ok
            if worst >= realised:
                realised, worst_pair = worst, (values[i], values[j])
    return PrivacyAudit(claimed, realised, private, worst_pair, claimed_delta, 0.0)


def _audit_number(value, name, high):
    """``value`` as a float in ``[0, high)`` (epsilon may be ``inf``), or a ValueError naming
    the field."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"audit_privacy's {name} must be a real number, got {value!r}.")
    value = float(value)
    if not (0.0 <= value < high or value == high == math.inf):
        raise ValueError(f"audit_privacy's {name} must lie in [0, {high}), got {value!r}.")
    return value


def _audit_bracketed(laws, values, claimed, claimed_delta):
    """:func:`audit_privacy` on :class:`BracketedLaw` s: the hockey-stick bound, both ways."""
    allowed = fractions.Fraction(claimed_delta)  # the float's exact value
    private, worst, worst_pair = True, fractions.Fraction(0), (values[0], values[1])
    for i, first in enumerate(laws):
        for j in range(i + 1, len(laws)):
            divergence = max(hockey_stick_bound(first, laws[j], claimed),
                             hockey_stick_bound(laws[j], first, claimed))
            private = private and divergence <= allowed
            if divergence >= worst:
                worst, worst_pair = divergence, (values[i], values[j])
    # Rounded up, so the float reported is an upper bound too.
    realised_delta = float(worst)
    if fractions.Fraction(realised_delta) < worst:
        realised_delta = math.nextafter(realised_delta, math.inf)
    return PrivacyAudit(claimed, claimed, private, worst_pair, claimed_delta, realised_delta)


# ---------------------------------------------------------------------- randomized response
def keep_numerator(epsilon, n_outputs=2, precision=TABLE_PRECISION):
    """The numerator ``a`` of ``n_outputs``-ary randomized response at ``epsilon``.

    The true output is kept with probability ``a / 2^K`` and each of the ``n_outputs - 1``
    others is reported with ``(2^K - a) / ((n_outputs - 1) 2^K)`` (a kept-or-not bit, then a
    uniform other: both exact). ``a`` is the largest integer whose ratio
    ``a (n_outputs - 1) / (2^K - a)`` is at most ``e^epsilon``, decided exactly: the nominal
    ``e^eps / (e^eps + n - 1)`` rounded down, so the realised mechanism is never less private
    than the claim. Estimators use ``a / 2^K``.

    Parameters
    ----------
    epsilon : float
    n_outputs : int, default=2
        At least 2.
    precision : int, default=TABLE_PRECISION

    Returns
    -------
    int
        ``a`` with ``2^K / n_outputs <= a < 2^K``.

    Examples
    --------
    >>> a = keep_numerator(math.log(3), 2, precision=8)   # p = 3/4 (float log 3 > ln 3)
    >>> a, integer_ratio_at_most(a, 2**8 - a, math.log(3))
    (192, True)
    >>> keep_numerator(1.0, 4, precision=8)   # e / (e + 3) = 0.4754...
    121
    """
    n_outputs, one = int(n_outputs), 2**int(precision)
    if n_outputs < 2:
        raise ValueError(f"randomized response needs at least 2 outputs, got {n_outputs}.")
    e = exp_decimal(epsilon)
    nominal = DECIMAL_CONTEXT.divide(DECIMAL_CONTEXT.multiply(e, one),
                                     DECIMAL_CONTEXT.add(e, n_outputs - 1))
    candidate = min(one - 1, int(nominal.to_integral_value(rounding=decimal.ROUND_FLOOR)))
    while candidate > 0 and not integer_ratio_at_most(candidate * (n_outputs - 1),
                                                      one - candidate, epsilon):
        candidate -= 1
    if candidate * n_outputs < one:
        raise ValueError(f"epsilon={epsilon!r} is too small for {n_outputs}-ary randomized "
                         f"response at precision 2^-{precision}.")
    return candidate


def randomized_response_weights(numerator, n_outputs, precision=TABLE_PRECISION):
    """Integer weights ``(kept, other, total)`` of :func:`keep_numerator`'s law: the true
    output has weight ``kept``, every other one ``other``, over ``total``.

    Examples
    --------
    >>> randomized_response_weights(191, 2, precision=8)
    (191, 65, 256)
    """
    one, others = 2**int(precision), int(n_outputs) - 1
    return int(numerator) * others, one - int(numerator), one * others
