"""Constrained mechanisms for count data (dissertation chapter 6): the math, no sklearn.

A group of ``n`` users each holds one private bit; the true count is ``j`` in ``0..n``. A count
mechanism releases a noisy count ``i`` in the same range and is the ``(n+1) x (n+1)`` matrix
``P[i, j] = Pr[output i | true count j]`` (column-stochastic). With ``alpha = e^-epsilon`` it is
epsilon-differentially private (one user changes the count by at most 1) when every row obeys
``alpha <= P[i, j] / P[i, j+1] <= 1 / alpha`` for adjacent inputs ``j, j+1``.

This module holds:

* validation of the design parameters (group size, loss, properties, prior, counts);
* the cost matrices and objectives ``O_{t,sum/max}(P) = (+/max)_j w_j sum_i C[i, j] P[i, j]``
  for the losses ``L0`` (wrong answer), ``L0_d`` (more than ``d`` away), ``L1`` and ``L2``,
  and the rescaled error ``L0 = (n+1)/n * O_{0,sum}`` of the thesis (the uniform mechanism
  scores 1);
* the closed forms: geometric (GM), explicit fair (EM), uniform (UM) and randomized response
  for one user (RR);
* :func:`check_properties` (RH, RM, CH, CM, F, WH, S) and the DP verifier :func:`verify_dp`;
* :func:`check_count_matrix`, the privacy check of a matrix that is about to be sampled (or
  decoded with): columns within ``COLUMN_SUM_ATOL`` of 1 whatever their length, normalized,
  the normalized matrix compared with the claimed epsilon up to rounding, then quantized
  into the integer table that is sampled (:func:`count_table`, columns summing to ``2^52``)
  and that table checked exactly between adjacent counts;
* :func:`choose_mechanism`, the thesis's decision logic (Fig. 6.4) behind ``mechanism="auto"``;
* exact sampling of noisy counts from the integer table (:func:`sample_outputs`, integer
  inverse CDF on 52 random bits; :func:`count_law` is one count's exact law) and Bayesian
  decoding (posterior mean / MAP).

The linear programs live in :mod:`sklearn_ldp.optimize.count_lp`, and the design of a
mechanism from them (closed form or LP, exact-privacy repair) in
:mod:`sklearn_ldp.selection.count`.

Decisions where the dissertation is ambiguous or silent (each one is tested):

* **WM** (the "weak honesty mechanism") is the L0-optimal LP with WH only, as Figs 6.5 and
  6.8 imply; the text's "WH+RM+CM" cannot converge to GM when ``alpha > 1/2`` (GM then
  lacks CM). Both are available: ``LP(WH)`` and ``LP(WH, CM)``.
* ``mechanism="auto"`` follows Fig. 6.4 for the L0 loss with a uniform prior and sum
  aggregation, where the thesis proves it. When it picks an LP, it also imposes the
  properties that cost nothing there (``S``, ``RM``, ``RH`` with WH; every property but F
  with CH or CM), so the answer is the "nice" optimum; the tests check, for all 128
  property subsets, that the objective equals that of the LP with only the requested
  properties. With F required the explicit fair mechanism is optimal for any prior and for
  both aggregations (every fair mechanism has L0 ``1 - y`` in every column, and EM has the
  largest ``y``, Lemma 15). With a uniform prior and max aggregation (minimax L0) EM is
  also optimal for every property set: not stated in the thesis, checked against the LP
  for ``2 <= n <= 25`` and alpha in {0.2, 0.5, 0.62, 0.76, 0.9, 0.99} and re-checked by the
  tests. For ``n = 1`` randomized response is chosen for any loss with
  sum aggregation whenever ``alpha < w_1 / w_0 < 1 / alpha`` (Theorem 10). Everything else
  is solved by the LP.
* Symmetrization ``(P + P^S) / 2`` keeps the objective only when the prior is symmetric
  (``w_j = w_{n-j}``). The LP searches symmetric mechanisms only in that case (or when S is
  required); ``solve_count_lp(..., symmetric=True)`` with an asymmetric prior is refused.
* ``L1_d`` / ``L2_d`` of §6.7.4 are read as the ``L0_d`` tail metric evaluated on L1/L2
  optimal mechanisms, not as separate losses: ``expected_loss(P, "L0_d", d)``.
* The estimator's ``score`` is the exact expected loss of the releases given the held-out
  true counts (no sampling noise), averaged (``sum``) or maximized (``max``) over them.
* The float DP verifier :func:`verify_dp` (analysis of a designed matrix) checks every
  inequality with a relative slack ``rtol`` (default ``1e-9``); a positive entry next to a
  zero one is an infinite privacy loss, ``0 / 0`` is allowed. What is sampled is decided
  without slack: the integer table of :func:`count_table`, checked exactly on integers.
* Decoding an output that has probability zero under the prior (possible with zero prior
  weights or an LP solution with gaps) falls back to the prior itself: the output carries
  no usable evidence.
"""

import math
from dataclasses import dataclass

import numpy as np

from ..._validation import (
    COLUMN_SUM_ATOL,
    check_column_sums,
    check_dense_size,
    check_epsilon,
    check_positive_int,
    describe,
)
from .._base.exact import TABLE_PRECISION, check_law_size, law_from_table_column, sample_table
from .._base.tables import quantize_table, realised_matrix, round_table

PROPERTIES = ("RH", "RM", "CH", "CM", "F", "WH", "S")
PROPERTY_DESCRIPTIONS = {
    "RH": "row honesty: P[i, i] >= P[i, j]",
    "RM": "row monotone: each row decreases away from its diagonal entry",
    "CH": "column honesty: P[j, j] >= P[i, j]",
    "CM": "column monotone: each column decreases away from its diagonal entry",
    "F": "fairness: every diagonal entry is equal",
    "WH": "weak honesty: P[i, i] >= 1 / (n + 1)",
    "S": "symmetry: P[i, j] = P[n - i, n - j]",
}
LOSSES = ("L0", "L0_d", "L1", "L2")
AGGREGATIONS = ("sum", "max")
CLOSED_FORMS = ("GM", "EM", "UM", "RR")
MECHANISMS = ("auto", "LP") + CLOSED_FORMS


# ---------------------------------------------------------------------------- validation
def check_group_size(group_size):
    """Return ``group_size`` as an int >= 1, or raise a ValueError.

    At most ``sqrt(max_matrix_entries) - 1``: the mechanism is a dense
    ``(group_size + 1) x (group_size + 1)`` matrix.
    """
    from ...deploy.limits import get_limits  # a leaf module: no cycle

    largest = math.isqrt(get_limits()["max_matrix_entries"]) - 1
    return check_positive_int(group_size, "group_size", minimum=1, maximum=largest)


def alpha_of(epsilon):
    """``alpha = e^-epsilon``, the privacy parameter of chapter 6 (near 1: strong privacy).

    Examples
    --------
    >>> round(alpha_of(np.log(2.0)), 6)
    0.5
    """
    return math.exp(-check_epsilon(epsilon))


def check_property_names(properties):
    """Canonical tuple of property names (order of :data:`PROPERTIES`), or a ValueError.

    ``properties`` is a sequence of names, or one name as a string; case is ignored.

    Examples
    --------
    >>> check_property_names(["wh", "S", "WH"])
    ('WH', 'S')
    """
    if properties is None:
        return ()
    if isinstance(properties, str):
        properties = (properties,)
    if isinstance(properties, bytes):
        raise ValueError(f"properties must be a sequence of names from {PROPERTIES}, got "
                         f"{describe(properties)}.")
    try:
        names = list(properties)
    except TypeError:
        raise ValueError(
            f"properties must be a sequence of names from {PROPERTIES}, got {properties!r}."
        ) from None
    wanted = set()
    for name in names:
        key = name.upper() if isinstance(name, str) else name
        if key not in PROPERTIES:
            raise ValueError(
                f"unknown property {name!r} in properties; allowed: {', '.join(PROPERTIES)} "
                "(" + "; ".join(f"{k}: {v}" for k, v in PROPERTY_DESCRIPTIONS.items()) + ")."
            )
        wanted.add(key)
    return tuple(name for name in PROPERTIES if name in wanted)


def check_loss(loss):
    """Canonical loss name (``"L0"``, ``"L0_d"``, ``"L1"`` or ``"L2"``), or a ValueError."""
    if isinstance(loss, str):
        for name in LOSSES:
            if loss.upper() == name.upper():
                return name
    raise ValueError(
        f"unknown loss {loss!r}; allowed: 'L0' (probability of a wrong count), 'L0_d' "
        "(probability of being more than d away), 'L1' (absolute error), 'L2' (squared error)."
    )


def check_aggregation(aggregation):
    """``"sum"`` or ``"max"``, or a ValueError."""
    if aggregation not in AGGREGATIONS:
        raise ValueError(
            f"aggregation must be 'sum' (prior-weighted average over true counts) or 'max' "
            f"(worst true count), got {aggregation!r}."
        )
    return aggregation


def check_d(d):
    """The tolerance ``d`` of the ``L0_d`` loss: an integer >= 0."""
    return check_positive_int(d, "d", minimum=0)


def check_objective(loss, d, aggregation):
    """``(loss, d, aggregation)``, each checked: what a count mechanism's design minimizes."""
    return check_loss(loss), check_d(d), check_aggregation(aggregation)


def check_prior(prior, n):
    """Prior weights over the true counts ``0..n`` as a float array summing to 1.

    ``None`` is the uniform prior ``1 / (n + 1)``. Otherwise ``n + 1`` finite non-negative
    numbers, not all zero; they are normalized.

    Examples
    --------
    >>> check_prior([1, 2, 1], 2)
    array([0.25, 0.5 , 0.25])
    """
    if prior is None:
        return np.full(n + 1, 1.0 / (n + 1))
    try:
        weights = np.asarray(prior, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"prior must be {n + 1} non-negative numbers, got {describe(prior)}."
                         ) from None
    if weights.shape != (n + 1,):
        raise ValueError(
            f"prior must hold one weight per true count 0..{n} ({n + 1} values), got an array "
            f"of shape {weights.shape}: {describe(prior)}."
        )
    if not np.all(np.isfinite(weights)) or np.any(weights < 0) or weights.sum() <= 0:
        raise ValueError("prior weights must be finite, non-negative and not all zero.")
    return weights / weights.sum()


def check_counts(counts, n, name="counts"):
    """Counts as an int64 array of the same shape, or a ValueError naming the bad value.

    Every entry must be an integer (``3.0`` is accepted, ``2.5`` is not) in ``0..n``.

    Examples
    --------
    >>> check_counts([0, 3.0, 2], 3)
    array([0, 3, 2])
    """
    array = np.asarray(counts)
    if array.dtype == object:
        try:
            array = array.astype(float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be numeric counts in 0..{n}.") from None
    if array.dtype.kind == "b":
        array = array.astype(np.int64)
    if array.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be numeric counts in 0..{n}, got dtype {array.dtype}.")
    if array.dtype.kind == "f":
        bad = ~np.isfinite(array) | (array != np.round(array))
        if np.any(bad):
            value = array[bad].flat[0].item()
            raise ValueError(
                f"{name} must be integers in 0..{n} (the group_size), got the non-integer value "
                f"{value!r}."
            )
    if array.size and array.min() < 0:
        raise ValueError(
            f"Negative values in data: {name} must lie in 0..{n} (the group_size), got "
            f"{array.min().item()!r}."
        )
    if array.size and array.max() > n:
        raise ValueError(
            f"{name} must lie in 0..{n} (the group_size), got {array.max().item()!r}."
        )
    return array.astype(np.int64)


def check_mechanism_name(mechanism):
    """One of :data:`MECHANISMS`, or a ValueError."""
    if mechanism not in MECHANISMS:
        raise ValueError(
            f"unknown mechanism {mechanism!r}; allowed: 'auto' (the thesis's choice), 'LP' "
            "(linear program), 'GM' (geometric), 'EM' (explicit fair), 'UM' (uniform), 'RR' "
            "(randomized response, group_size=1 only)."
        )
    return mechanism


def _check_matrix(P):
    """A square finite float matrix with at least 2 rows (counts 0..n, n >= 1), or a ValueError.

    Probabilities are checked by :func:`check_count_matrix`, which also normalizes.
    """
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[0] != P.shape[1] or P.shape[0] < 2:
        raise ValueError(
            f"a count mechanism must be a square (n+1) x (n+1) matrix with n >= 1, got shape "
            f"{P.shape}."
        )
    if not np.all(np.isfinite(P)):
        raise ValueError("the mechanism matrix contains NaN or infinite entries.")
    return P


def _normalized_count_matrix(P, epsilon, neighbours, name):
    """Steps 1-3 of :func:`check_count_matrix` (the float gate); the normalized matrix."""
    P = _check_matrix(P)
    negative = P < 0
    if negative.any():
        i, j = (int(k) for k in np.argwhere(negative)[0])
        raise ValueError(f"the {name} has a negative entry {float(P[i, j])!r} at row {i}, "
                         f"column {j}; it must hold probabilities.")
    normalized = P / check_column_sums(P, name)
    if epsilon is not None:
        verdict = verify_dp(normalized, epsilon, neighbours)
        if not verdict:
            u, v = verdict.inputs
            raise ValueError(
                f"the {name} is not {epsilon}-DP: its realised epsilon (largest "
                f"log P[i, u] / P[i, v] over {neighbours} counts u, v of the normalized "
                f"matrix) is {verdict.epsilon!r} > {epsilon}, reached at output "
                f"{verdict.output}, counts {u} and {v}."
            )
    return normalized


def count_table(P, epsilon, neighbours="adjacent", name="count mechanism matrix"):
    """The integer table sampled for a count mechanism ``P`` claiming ``epsilon``.

    The float gate of :func:`check_count_matrix` (square, finite, non-negative, columns within
    ``COLUMN_SUM_ATOL`` of 1 and normalized, the normalized matrix ``epsilon``-DP between
    ``neighbours`` up to a relative ``1e-9``), then the quantizer
    (:func:`sklearn_ldp.mechanisms._base.tables.quantize_table`): int64 weights whose columns sum
    to ``2^52``, ``W[i, j] <= e^eps W[i, j']`` for neighbouring counts decided exactly on the
    integers. A tail below ``2^-52`` (the geometric mechanism far from the diagonal) is not
    rounded to 0, which would be an infinite loss: the table mixes in about ``L (n+1) 2^-52``
    of the uniform mechanism (``L = ceil(64 / (1 - e^-eps))``, see the quantizer), which keeps
    every property of chapter 6 up to that rounding. A matrix that already is such a table
    (``W / 2^52``, e.g. the result of :func:`check_count_matrix`) gives the same ``W`` back.

    Parameters
    ----------
    P : array-like of shape (n+1, n+1)
    epsilon : float
    neighbours : {"adjacent", "all"}, default="adjacent"
    name : str, default="count mechanism matrix"

    Returns
    -------
    ndarray of int64 of shape (n+1, n+1)

    Examples
    --------
    >>> W = count_table(geometric_mechanism(40, 1.0), 1.0)
    >>> bool((W.sum(axis=0) == 2**52).all()), int(W.min()) > 0
    (True, True)
    """
    epsilon = check_epsilon(epsilon)
    normalized = _normalized_count_matrix(P, epsilon, neighbours, name)
    return quantize_table(normalized, epsilon, neighbours, name=name)


def count_law(P, epsilon, count, neighbours="adjacent"):
    """The exact law of the noisy count released for the true ``count``: outputs ``0..n``,
    integer weights the column ``count`` of :func:`count_table`, total ``2^52``.

    Examples
    --------
    >>> law = count_law(randomized_response_count(np.log(3.0)), np.log(3.0) + 1e-9, 0)
    >>> law.outputs.tolist(), law.total == 2**52
    ([0, 1], True)
    """
    table = count_table(P, epsilon, neighbours)
    check_law_size(table.shape[0], "count")
    (count,) = check_counts([count], table.shape[0] - 1)
    return law_from_table_column(table, int(count))


def check_count_matrix(P, epsilon=None, neighbours="adjacent", name="count mechanism matrix"):
    """The privacy check of a count mechanism matrix; returns the matrix to sample.

    ``P[i, j] = Pr[output i | true count j]``. An inverse-CDF sampler gives whatever mass a
    column lacks (or takes whatever it has in excess) to its last outputs, so a matrix whose
    columns do not sum to 1 is not the distribution it displays, and its entries alone do not
    show its privacy. Hence, in order:

    1. the matrix is square, finite, with non-negative entries;
    2. each column sum (added down the rows in order) is within ``COLUMN_SUM_ATOL`` of 1,
       an absolute tolerance whatever ``n`` (a tolerance growing with the number of rows let
       a column of 1001 rows lack 9e-5 of its mass), and the column is divided by its sum
       (:func:`~sklearn_ldp._validation.check_column_sums`);
    3. if ``epsilon`` is given, the privacy loss of the *normalized* matrix between
       ``neighbours`` (:func:`verify_dp`) is at most ``epsilon`` up to a relative ``1e-9``
       (float rounding of the design), and the matrix is quantized into the integer table
       that is sampled (:func:`count_table`), checked exactly on the integers.

    Count mechanisms are private between adjacent counts only, so this cannot be
    :func:`~sklearn_ldp._validation.check_ldp_strategy`, which compares all pairs of inputs.

    Parameters
    ----------
    P : array-like of shape (n+1, n+1)
    epsilon : float or None, default=None
        The claimed epsilon; ``None`` skips step 3 (decoding only: nothing is sampled).
    neighbours : {"adjacent", "all"}, default="adjacent"
        As in :func:`verify_dp`.
    name : str, default="count mechanism matrix"
        How error messages name the matrix.

    Returns
    -------
    ndarray of shape (n+1, n+1)
        With ``epsilon``: the realised matrix ``W / 2^52`` of the integer table (exact
        float64), the law sampled, to decode with. Without: the normalized matrix.

    Raises
    ------
    ValueError
        Naming the negative entry, the column and its sum, or the realised epsilon and where
        it is reached.

    Examples
    --------
    >>> P = check_count_matrix([[0.75, 0.25], [0.25, 0.75 - 1e-12]], np.log(3.0) + 1e-9)
    >>> P.sum(axis=0).tolist(), bool(abs(P[0, 0] - 0.75) < 1e-13)
    ([1.0, 1.0], True)
    """
    if epsilon is None:
        return _normalized_count_matrix(P, None, neighbours, name)
    return realised_matrix(count_table(P, epsilon, neighbours, name))


# ---------------------------------------------------------------------------- objectives
def cost_matrix(n, loss="L0", d=1):
    """Cost ``C[i, j]`` of releasing ``i`` when the true count is ``j``.

    ``L0``: ``1[i != j]``; ``L0_d``: ``1[|i - j| > d]``; ``L1``: ``|i - j|``; ``L2``:
    ``(i - j)^2``.

    Examples
    --------
    >>> cost_matrix(2, "L1")
    array([[0., 1., 2.],
           [1., 0., 1.],
           [2., 1., 0.]])
    """
    n = check_group_size(n)
    loss = check_loss(loss)
    distance = np.abs(np.subtract.outer(np.arange(n + 1), np.arange(n + 1))).astype(float)
    if loss == "L0":
        return (distance > 0).astype(float)
    if loss == "L0_d":
        return (distance > check_d(d)).astype(float)
    if loss == "L1":
        return distance
    return distance**2


def expected_loss(P, loss="L0", d=1, aggregation="sum", prior=None):
    """The objective ``O(P) = (+/max)_j w_j sum_i C[i, j] P[i, j]`` that the LP minimizes.

    Parameters
    ----------
    P : array of shape (n+1, n+1)
        Column-stochastic mechanism matrix.
    loss : {"L0", "L0_d", "L1", "L2"}
    d : int, default=1
        Only for ``L0_d``.
    aggregation : {"sum", "max"}
        Weighted sum over the true counts, or the worst weighted column.
    prior : array of shape (n+1,) or None
        The weights ``w`` (normalized to sum 1); ``None`` is uniform.

    Examples
    --------
    >>> expected_loss(uniform_mechanism(3))   # n / (n + 1)
    0.75
    """
    P = _check_matrix(P)
    n = P.shape[0] - 1
    per_count = check_prior(prior, n) * np.sum(cost_matrix(n, loss, d) * P, axis=0)
    return float(per_count.max() if check_aggregation(aggregation) == "max" else per_count.sum())


def l0_error(P, d=0, prior=None):
    """The thesis's rescaled error ``L0_d = (n+1)/n * sum_j w_j Pr[|output - j| > d]``.

    With ``d = 0`` this is ``L0 = (n + 1 - trace P) / n`` for the uniform prior: the uniform
    mechanism scores 1, a perfect (non-private) one 0.

    Examples
    --------
    >>> alpha = 0.5
    >>> round(l0_error(geometric_mechanism(6, -np.log(alpha))), 6)  # 2 alpha / (1 + alpha)
    0.666667
    """
    P = _check_matrix(P)
    n = P.shape[0] - 1
    loss = "L0" if check_d(d) == 0 else "L0_d"
    return (n + 1) / n * expected_loss(P, loss, d=max(d, 1), prior=prior)


# ---------------------------------------------------------------------------- closed forms
def _alpha_powers(exponents, epsilon):
    # alpha^k computed as exp(-k eps): no repeated rounding and no overflow for large k.
    return np.exp(-np.asarray(exponents, dtype=float) * epsilon)


def geometric_mechanism(n, epsilon):
    """The range-restricted geometric mechanism (GM, Ghosh et al.): ``clip(j + X, 0, n)``.

    ``Pr[X = k] = (1 - alpha) / (1 + alpha) * alpha^|k|``. It is the unique L0-optimal
    epsilon-DP count mechanism (Theorem 12), with ``L0 = 2 alpha / (1 + alpha)`` for every
    ``n``; it is S, RM and RH, CM/CH iff ``alpha <= 1/2``, WH iff ``n >= 2 alpha / (1 - alpha)``,
    and never F for ``n >= 2``.

    Examples
    --------
    >>> geometric_mechanism(2, np.log(2.0)).round(4)
    array([[0.6667, 0.3333, 0.1667],
           [0.1667, 0.3333, 0.1667],
           [0.1667, 0.3333, 0.6667]])
    """
    n = check_group_size(n)
    epsilon = check_epsilon(epsilon)
    check_dense_size(n + 1, n + 1, "GM")
    alpha = math.exp(-epsilon)
    counts = np.arange(n + 1)
    one_minus_alpha = -math.expm1(-epsilon)  # no cancellation for tiny epsilon
    P = one_minus_alpha / (1 + alpha) * _alpha_powers(np.abs(np.subtract.outer(counts, counts)),
                                                      epsilon)
    # The clipped tails: all the mass of X <= -j lands on 0, of X >= n - j on n.
    P[0] = _alpha_powers(counts, epsilon) / (1 + alpha)
    P[n] = _alpha_powers(n - counts, epsilon) / (1 + alpha)
    return P


def explicit_fair_y(n, epsilon):
    """The common diagonal ``y`` of the explicit fair mechanism (the largest possible, Lemma 15).

    ``n`` even: ``(1 - alpha) / (1 + alpha - 2 alpha^(n/2 + 1))``; ``n`` odd:
    ``(1 - alpha) / ((1 + alpha)(1 - alpha^((n+1)/2)))``.

    Examples
    --------
    >>> round(explicit_fair_y(7, -np.log(0.9)), 6)
    0.153043
    """
    n = check_group_size(n)
    epsilon = check_epsilon(epsilon)
    alpha = math.exp(-epsilon)

    def one_minus_alpha_to(k):  # 1 - alpha^k without cancellation when epsilon is tiny
        return -math.expm1(-k * epsilon)

    if n % 2 == 0:
        m = n // 2 + 1
        # 1 + alpha - 2 alpha^m = (1 - alpha^m) + alpha (1 - alpha^(m-1))
        return one_minus_alpha_to(1) / (one_minus_alpha_to(m) + alpha * one_minus_alpha_to(m - 1))
    return one_minus_alpha_to(1) / ((1 + alpha) * one_minus_alpha_to((n + 1) // 2))


def explicit_fair_exponents(n):
    """Exponent ``e[i, j]`` of ``alpha`` in the explicit fair mechanism (eq. 6.15).

    ``|i - j|`` within ``m_j = min(j, n - j)`` of the diagonal, ``ceil((|i - j| + m_j) / 2)``
    beyond: the column decays at rate alpha until it hits the nearer edge, then at rate
    ``sqrt(alpha)``, which keeps every column's sum equal.

    Examples
    --------
    >>> explicit_fair_exponents(3)
    array([[0, 1, 2, 2],
           [1, 0, 1, 1],
           [1, 1, 0, 1],
           [2, 2, 1, 0]])
    """
    n = check_group_size(n)
    counts = np.arange(n + 1)
    distance = np.abs(np.subtract.outer(counts, counts))
    m = np.minimum(counts, n - counts)[np.newaxis, :]
    return np.where(distance <= m, distance, (distance + m + 1) // 2)


def explicit_fair_mechanism(n, epsilon):
    """The explicit fair mechanism (EM): ``P[i, j] = y * alpha^e[i, j]``, equal diagonal ``y``.

    L0-optimal among fair mechanisms for every prior, with ``L0 = (n+1)/n * (1 - y)``; it
    satisfies all seven properties (Theorem 13).

    Examples
    --------
    >>> P = explicit_fair_mechanism(4, -np.log(0.9))
    >>> np.round(np.diag(P), 4)
    array([0.2262, 0.2262, 0.2262, 0.2262, 0.2262])
    """
    n = check_group_size(n)
    epsilon = check_epsilon(epsilon)
    check_dense_size(n + 1, n + 1, "EM")
    return explicit_fair_y(n, epsilon) * _alpha_powers(explicit_fair_exponents(n), epsilon)


def uniform_mechanism(n):
    """The uniform mechanism (UM): output uniform on ``0..n`` whatever the input (L0 = 1).

    Examples
    --------
    >>> uniform_mechanism(1)
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    n = check_group_size(n)
    check_dense_size(n + 1, n + 1, "UM")
    return np.full((n + 1, n + 1), 1.0 / (n + 1))


def randomized_response_count(epsilon):
    """Randomized response for one user (``n = 1``): keep the bit w.p. ``1 / (1 + alpha)``.

    The unique non-trivial optimum for every loss when ``alpha < w_1 / w_0 < 1 / alpha``
    (Theorem 10).

    Examples
    --------
    >>> randomized_response_count(np.log(3.0))
    array([[0.75, 0.25],
           [0.25, 0.75]])
    """
    keep = 1.0 / (1.0 + alpha_of(epsilon))
    return np.array([[keep, 1.0 - keep], [1.0 - keep, keep]])


def closed_form_mechanism(name, n, epsilon):
    """The closed form ``"GM"``, ``"EM"``, ``"UM"`` or ``"RR"`` (``n = 1`` only)."""
    if name == "GM":
        return geometric_mechanism(n, epsilon)
    if name == "EM":
        return explicit_fair_mechanism(n, epsilon)
    if name == "UM":
        return uniform_mechanism(n)
    if name == "RR":
        if check_group_size(n) != 1:
            raise ValueError(
                f"mechanism 'RR' (randomized response) is for group_size=1, got group_size={n}; "
                "use 'GM', 'EM', 'UM', 'LP' or 'auto'."
            )
        return randomized_response_count(epsilon)
    raise ValueError(f"unknown closed form {name!r}; allowed: {', '.join(CLOSED_FORMS)}.")


def symmetrize(P):
    """``(P + P^S) / 2`` with ``P^S[i, j] = P[n - i, n - j]`` (Theorem 8).

    The result is S and keeps every other property and DP; its objective is unchanged when
    the prior is symmetric.

    Examples
    --------
    >>> symmetrize(np.array([[1.0, 0.5], [0.0, 0.5]]))
    array([[0.75, 0.25],
           [0.25, 0.75]])
    """
    P = _check_matrix(P)
    return 0.5 * (P + P[::-1, ::-1])


# ---------------------------------------------------------------------------- privacy
@dataclass(frozen=True)
class DPVerification:
    """Result of :func:`verify_dp`; true in a boolean context iff the matrix is private.

    Attributes
    ----------
    satisfied : bool
        Every ratio is within ``e^epsilon`` (up to the relative slack ``rtol``).
    epsilon : float
        The exact privacy loss of the matrix, ``max ln(P[o, u] / P[o, u'])`` over outputs and
        neighbouring inputs (``inf`` if a positive entry faces a zero one).
    output, inputs : int, tuple of int
        Where that maximum is reached (row, and the pair of columns).
    """

    satisfied: bool
    epsilon: float
    output: int
    inputs: tuple

    def __bool__(self):
        return bool(self.satisfied)


def privacy_loss(P, neighbours="adjacent"):
    """Exact privacy loss of a mechanism matrix, with where it is reached.

    Parameters
    ----------
    P : array of shape (n_outputs, n_inputs)
        ``P[o, u] = Pr[output o | input u]``.
    neighbours : {"adjacent", "all"}
        ``"adjacent"``: inputs ``u`` and ``u + 1`` (counts; central DP with sensitivity 1);
        ``"all"``: every pair of inputs (local DP).

    Returns
    -------
    epsilon, output, (u, u') : float, int, tuple
        ``0 / 0`` counts as ratio 1; a positive entry facing a zero gives ``inf``.

    Examples
    --------
    >>> round(privacy_loss(geometric_mechanism(4, 0.7))[0], 12)
    0.7
    """
    P = np.asarray(P, dtype=float)
    if P.ndim != 2 or P.shape[1] < 2:
        raise ValueError(f"P must be a matrix with at least 2 inputs, got shape {P.shape}.")
    if np.any(P < 0) or not np.all(np.isfinite(P)):
        raise ValueError("P must hold finite non-negative probabilities.")
    if neighbours == "adjacent":
        first, second = np.arange(P.shape[1] - 1), np.arange(1, P.shape[1])
        a, b = P[:, first], P[:, second]
        # Both directions of each adjacent pair: the larger over the smaller entry.
        high, low = np.maximum(a, b), np.minimum(a, b)
        pair_first = np.where(a >= b, first[np.newaxis, :], second[np.newaxis, :])
        pair_second = np.where(a >= b, second[np.newaxis, :], first[np.newaxis, :])
    elif neighbours == "all":
        # For "all pairs" the worst ratio of a row is its maximum over its minimum.
        high, low = P.max(axis=1, keepdims=True), P.min(axis=1, keepdims=True)
        pair_first = np.argmax(P, axis=1)[:, np.newaxis]
        pair_second = np.argmin(P, axis=1)[:, np.newaxis]
    else:
        raise ValueError(f"neighbours must be 'adjacent' or 'all', got {neighbours!r}.")
    with np.errstate(divide="ignore", invalid="ignore"):
        loss = np.where(high == 0, 0.0, np.log(high) - np.log(low))
    flat = int(np.argmax(loss))
    row, column = np.unravel_index(flat, loss.shape)
    return (float(loss[row, column]), int(row),
            (int(pair_first[row, column]), int(pair_second[row, column])))


def verify_dp(P, epsilon, neighbours="adjacent", rtol=1e-9):
    """Exact epsilon-DP check of a mechanism matrix (every ratio, no sampling).

    Checks ``P[o, u] <= e^epsilon * P[o, u'] * (1 + rtol)`` for every output ``o`` and every
    pair of neighbouring inputs; ``rtol`` only absorbs floating-point rounding (GM and EM
    meet their inequalities with equality).

    Parameters
    ----------
    P : array of shape (n_outputs, n_inputs)
    epsilon : float
    neighbours : {"adjacent", "all"}
        Adjacent counts (central DP of a count, the chapter-6 setting) or every pair of inputs
        (local DP).
    rtol : float, default=1e-9

    Returns
    -------
    DPVerification
        Truthy iff private; also carries the exact privacy loss and where it is reached.

    Examples
    --------
    >>> bool(verify_dp(geometric_mechanism(5, 1.0), 1.0))
    True
    >>> bool(verify_dp(geometric_mechanism(5, 1.0), 0.9))
    False
    """
    epsilon = check_epsilon(epsilon)
    loss, output, inputs = privacy_loss(P, neighbours)
    satisfied = loss <= epsilon + math.log1p(rtol)
    return DPVerification(bool(satisfied), loss, output, inputs)


def enforce_dp(P, epsilon, neighbours="adjacent", rtol=1e-9):
    """Repair a numerically almost-private matrix (e.g. a solver's output) into an exact one.

    Clips to ``[0, 1]``, renormalizes the columns, and mixes in the smallest weight
    ``lam`` of the uniform mechanism that makes every ratio at most ``e^epsilon``:
    ``(1 - lam) P + lam U``. The uniform mechanism has every property and mixing is linear,
    so all properties survive; the objective moves by at most ``lam`` times its range.
    Returns ``(matrix, lam)``; ``lam`` is about the solver tolerance over ``e^eps - 1``.

    Examples
    --------
    >>> P = geometric_mechanism(3, 1.0)
    >>> P[0, 0] += 1e-9    # a solver's rounding
    >>> repaired, lam = enforce_dp(P, 1.0)
    >>> bool(verify_dp(repaired, 1.0, rtol=0.0)), lam < 1e-7
    (True, True)
    """
    epsilon = check_epsilon(epsilon)
    if neighbours not in ("adjacent", "all"):
        raise ValueError(f"neighbours must be 'adjacent' or 'all', got {neighbours!r}.")
    P = np.clip(np.asarray(P, dtype=float), 0.0, 1.0)
    sums = P.sum(axis=0)
    if np.any(sums <= 0):
        raise ValueError("a column of the mechanism matrix sums to zero.")
    P = P / sums
    n_outputs = P.shape[0]
    uniform = 1.0 / n_outputs
    ratio = math.exp(epsilon)
    if neighbours == "adjacent":
        pairs = [(P[:, :-1], P[:, 1:]), (P[:, 1:], P[:, :-1])]
    else:
        pairs = [(P.max(axis=1), P.min(axis=1))]
    # For a, b: (1-lam) a + lam u <= e^eps ((1-lam) b + lam u)  <=>  lam >= v / (v + u (e^eps-1))
    # with v = a - e^eps b the violation; the largest bound over all pairs is the answer.
    excess = max(float(np.max(a - ratio * b)) for a, b in pairs)
    lam = 0.0
    if excess > 0 or not verify_dp(P, epsilon, neighbours, rtol=rtol * 0.5):
        lam = max(excess, 1e-16) / (max(excess, 1e-16) + uniform * (ratio - 1.0))
        lam = min(1.0, lam * (1.0 + 1e-6) + 1e-15)  # margin for the rounding of the mixture
        P = (1.0 - lam) * P + lam * uniform
    return P, lam


# ---------------------------------------------------------------------------- properties
def _property_violations(P):
    """Largest violation (>= 0 when violated) of each structural property."""
    n = P.shape[0] - 1
    diag = np.diag(P)
    idx = np.arange(n + 1)
    violations = {}
    violations["RH"] = float(np.max(P - diag[:, np.newaxis]))
    violations["CH"] = float(np.max(P - diag[np.newaxis, :]))
    # Row i: P[i, j] - P[i, j+1] for adjacent columns; must be <= 0 left of the diagonal
    # (j + 1 <= i) and >= 0 right of it.
    step = P[:, :-1] - P[:, 1:]
    left = (idx[np.newaxis, :-1] + 1) <= idx[:, np.newaxis]
    violations["RM"] = float(np.max(np.where(left, step, -step)))
    step = P[:-1, :] - P[1:, :]
    above = (idx[:-1, np.newaxis] + 1) <= idx[np.newaxis, :]
    violations["CM"] = float(np.max(np.where(above, step, -step)))
    violations["F"] = float(diag.max() - diag.min())
    violations["WH"] = float(1.0 / (n + 1) - diag.min())
    violations["S"] = float(np.max(np.abs(P - P[::-1, ::-1])))
    return violations


def check_properties(P, epsilon=None, tol=1e-7):
    """Which of the chapter-6 properties a count mechanism has (Fig. 6.5 of the thesis).

    Parameters
    ----------
    P : array of shape (n+1, n+1)
        ``P[i, j] = Pr[output i | true count j]``.
    epsilon : float or None
        If given, the dict also reports ``"DP"`` (exact check of :func:`verify_dp`).
    tol : float, default=1e-7
        Absolute slack for the entries and the linear properties (LP solutions meet their
        constraints only to the solver's tolerance, 1e-9 here, and Clarabel's is similar).
        Column sums are held to ``COLUMN_SUM_ATOL`` instead, whatever ``tol`` and ``n``: the
        sampler gives a column's missing mass to its last output, so a looser sum is not the
        matrix that is sampled.

    Returns
    -------
    dict
        ``"valid"`` (entries in [0, 1], columns sum to 1), ``"DP"`` if epsilon is given (valid,
        non-negative, and the normalized matrix, the one sampled, passes :func:`verify_dp`),
        then ``RH, RM, CH, CM, F, WH, S`` (see :data:`PROPERTY_DESCRIPTIONS`), each a bool.

    Examples
    --------
    >>> props = check_properties(geometric_mechanism(4, -np.log(0.9)), -np.log(0.9))
    >>> [name for name, ok in props.items() if not ok]
    ['CH', 'CM', 'F', 'WH']
    """
    P = _check_matrix(P)
    # Same sums and tolerance as the sampler's check (check_count_matrix), so that "valid"
    # and "DP" describe the matrix that would be sampled.
    sums = np.cumsum(P, axis=0)[-1]
    sums_ok = bool(np.all(np.abs(sums - 1.0) <= COLUMN_SUM_ATOL))
    result = {"valid": bool(np.all(P >= -tol) and np.all(P <= 1 + tol) and sums_ok)}
    if epsilon is not None:
        result["DP"] = bool(sums_ok and np.all(P >= 0) and verify_dp(P / sums, epsilon))
    violations = _property_violations(P)
    result.update({name: violations[name] <= tol for name in PROPERTIES})
    return result


# ---------------------------------------------------------------------------- choosing
@dataclass(frozen=True)
class MechanismChoice:
    """What :func:`choose_mechanism` decided.

    Attributes
    ----------
    name : {"GM", "EM", "RR", "LP"}
    lp_properties : tuple of str
        The properties to impose when ``name == "LP"`` (the requested ones plus those that are
        free at the optimum); empty otherwise.
    reason : str
        The rule of the thesis that applied.
    """

    name: str
    lp_properties: tuple
    reason: str


def is_symmetric_prior(w):
    """True if ``w_j = w_{n-j}`` (to rounding)."""
    w = np.asarray(w, dtype=float)
    return bool(np.allclose(w, w[::-1], rtol=1e-12, atol=1e-15))


def wh_threshold(epsilon):
    """GM is weakly honest iff ``n >= 2 alpha / (1 - alpha)`` (Lemma 13)."""
    alpha = alpha_of(epsilon)
    return 2 * alpha / (1 - alpha)


def choose_mechanism(n, epsilon, properties=(), loss="L0", d=1, aggregation="sum", prior=None):
    """The thesis's choice of mechanism for the requested properties (Fig. 6.4, extended).

    For L0 with a uniform prior and sum aggregation (where the thesis proves its rules):

    * F required: EM (also for any prior and for max aggregation);
    * max aggregation (the worst true count): EM, which has the largest smallest diagonal
      entry (not in the thesis; checked against the LP for ``n <= 25`` and six alphas);
    * ``alpha <= 1/2``: GM (it then has every property but F);
    * CH or CM required: the LP with every property except F (same cost as with the
      requested ones);
    * WH required: GM if ``n >= 2 alpha / (1 - alpha)``, else the LP with WH, RH, RM and S
      (WM);
    * otherwise (any subset of S, RM, RH): GM.

    For ``n = 1`` and sum aggregation, randomized response whenever
    ``alpha < w_1 / w_0 < 1 / alpha`` and the loss charges a wrong answer (Theorem 10).
    Anything else: the LP with the requested properties.

    Examples
    --------
    >>> choose_mechanism(8, -np.log(0.9), ["WH"]).name   # 8 < 2 * 0.9 / 0.1 = 18
    'LP'
    >>> choose_mechanism(20, -np.log(0.9), ["WH"]).name
    'GM'
    """
    n = check_group_size(n)
    alpha = alpha_of(epsilon)
    properties = check_property_names(properties)
    loss, d, aggregation = check_objective(loss, d, aggregation)
    w = check_prior(prior, n)
    wrong_answer_loss = loss in ("L0", "L1", "L2") or d == 0  # all equal 1[i != j] for n = 1
    if n == 1 and aggregation == "sum" and wrong_answer_loss and alpha * w[0] < w[1] < w[0] / alpha:
        return MechanismChoice("RR", (), "n = 1: randomized response (Theorem 10)")
    is_l0 = loss == "L0" or (loss == "L0_d" and d == 0)
    if not is_l0:
        return MechanismChoice("LP", properties, f"{loss}: no closed form; linear program")
    if "F" in properties:
        return MechanismChoice(
            "EM", (), "F required: the explicit fair mechanism is optimal (Theorem 13)")
    uniform = bool(np.allclose(w, w[0], rtol=1e-12, atol=0.0))
    if not uniform:
        return MechanismChoice("LP", properties, "L0 with a non-uniform prior: linear program")
    if aggregation == "max":
        return MechanismChoice(
            "EM", (), "L0, worst true count: EM maximizes the smallest diagonal entry "
            "(verified against the LP; not in the thesis)")
    if alpha <= 0.5:
        return MechanismChoice(
            "GM", (), "alpha <= 1/2: GM is optimal and has every property but F (Fig. 6.4)")
    if "CH" in properties or "CM" in properties:
        free = tuple(name for name in PROPERTIES if name != "F")
        return MechanismChoice(
            "LP", free, "CH or CM with alpha > 1/2: LP(WH, CM), all other properties but F free")
    if "WH" in properties:
        # Relative slack: at n = 2 alpha / (1 - alpha) exactly, GM's diagonal equals 1/(n+1)
        # and alpha = e^-eps carries rounding.
        if n >= wh_threshold(epsilon) * (1 - 1e-12):
            return MechanismChoice(
                "GM", (), "WH with n >= 2 alpha / (1 - alpha): GM is weakly honest (Lemma 13)")
        return MechanismChoice(
            "LP", ("RH", "RM", "WH", "S"), "WH with n < 2 alpha / (1 - alpha): WM = LP(WH)")
    return MechanismChoice("GM", (), "no property GM lacks: GM is optimal (Theorem 12)")


# ---------------------------------------------------------------------------- sampling
def sample_outputs(P, counts, rng, epsilon=None):
    """Draw one noisy count per true count from the integer table of ``P`` (vectorized).

    With ``epsilon``, the table is :func:`count_table` (``P`` checked, quantized, and the
    table checked exactly between adjacent counts): the law sampled is exactly
    ``epsilon``-DP. Without, ``P`` is only checked as a distribution per column
    (:func:`check_count_matrix`) and rounded to ``2^-52`` (largest remainder): no privacy is
    claimed or checked. Either way each draw is an integer inverse CDF on 52 random bits
    (:func:`~sklearn_ldp.mechanisms._base.exact.sample_table`): ``Pr[i | j] = W[i, j] / 2^52``
    exactly.

    Parameters
    ----------
    P : array of shape (n+1, n+1)
    counts : int array of any shape
        True counts in ``0..n`` (validated).
    rng : numpy.random.Generator
    epsilon : float or None, default=None
        The epsilon ``P`` claims; pass it whenever the release must be private.

    Returns
    -------
    int64 array of the shape of ``counts``.

    Examples
    --------
    >>> out = sample_outputs(np.eye(3), np.array([[0, 2], [1, 1]]), np.random.default_rng(0))
    >>> out.tolist()
    [[0, 2], [1, 1]]
    """
    if epsilon is None:
        table = round_table(check_count_matrix(P))
    else:
        table = count_table(P, epsilon)
    counts = check_counts(counts, table.shape[0] - 1)
    return sample_table(rng, table, counts.ravel(), TABLE_PRECISION).reshape(counts.shape)


def posterior(P, prior=None):
    """``R[i, j] = Pr[true count j | output i]`` under the prior (Bayes' rule).

    An output of probability zero under the prior gets the prior as its posterior.

    Examples
    --------
    >>> posterior(randomized_response_count(np.log(3.0))).round(2)
    array([[0.75, 0.25],
           [0.25, 0.75]])
    """
    P = check_count_matrix(P)
    w = check_prior(prior, P.shape[0] - 1)
    joint = P * w[np.newaxis, :]
    evidence = joint.sum(axis=1, keepdims=True)
    safe = np.where(evidence > 0, evidence, 1.0)
    return np.where(evidence > 0, joint / safe, w[np.newaxis, :])


def decode(P, outputs, prior=None, method="mean"):
    """Estimate the true counts from noisy ones: posterior mean or MAP under the prior.

    Parameters
    ----------
    P : array of shape (n+1, n+1)
    outputs : int array of any shape
        Noisy counts in ``0..n``.
    prior : array of shape (n+1,) or None
        ``None`` is uniform.
    method : {"mean", "map"}
        ``"mean"`` minimizes the expected squared error (float output); ``"map"`` the
        probability of a wrong count (int output; ties go to the smaller count).

    Examples
    --------
    >>> P = geometric_mechanism(4, 1.0)
    >>> decode(P, [0, 4], method="map").tolist()
    [0, 4]
    """
    P = check_count_matrix(P)
    n = P.shape[0] - 1
    outputs = check_counts(outputs, n, name="noisy counts")
    R = posterior(P, prior)
    if method == "mean":
        table = R @ np.arange(n + 1, dtype=float)
    elif method == "map":
        table = np.argmax(R, axis=1).astype(np.int64)
    else:
        raise ValueError(f"decode must be 'mean' (posterior mean) or 'map', got {method!r}.")
    return table[outputs]
