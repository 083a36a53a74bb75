"""Integer tables for sampled probability matrices: quantizer and exact privacy check.

A strategy matrix ``Q[o, u] = P(output o | input u)`` (a factorization strategy, a count
mechanism) is sampled from an integer table ``W`` whose columns sum to ``2^K``
(:func:`~sklearn_ldp.mechanisms._base.exact.sample_table`): ``P(o | u) = W[o, u] / 2^K`` exactly.
Privacy is decided on ``W``, never on the floats it came from:

* ``"all"`` neighbours (local DP: any two inputs): every row has
  ``max_u W[o, u] <= e^eps min_u W[o, u]``;
* ``"adjacent"`` neighbours (counts ``j`` and ``j + 1``): every row has
  ``W[o, j] <= e^eps W[o, j+1]`` and ``W[o, j+1] <= e^eps W[o, j]``.

:func:`table_ratio_violation` decides this on integers (:func:`integer_ratio_at_most`, 80-digit
decimal arithmetic); a float pre-filter only lets through, without the exact test, the pairs
whose ratio is provably below ``e^eps`` (margin ``2^-50``, far above the float errors), so
the decision is exact and the common case is vectorized.

:func:`quantize_table` turns a float matrix into such a table. It is guaranteed to pass the
exact check, and it stays within a few units of ``2^-K`` of the float matrix whenever that
matrix satisfies its claim up to float rounding (proof in the comments of the function).

``K = TABLE_PRECISION = 52``: every ``W / 2^52`` is an exact float64, so estimators and
variances computed from the realised matrix ``W / 2^52`` use exactly the probabilities that
are sampled; the cumulative columns reach ``2^52`` and the uniform draws are 52-bit
integers, far inside int64 (``sample_table`` searches one column at a time, so no offsets
are added and no headroom beyond ``2^52`` is needed).

Pure numpy and the standard library; no scikit-learn here.
"""

import math

import numpy as np

from .exact import TABLE_PRECISION, check_table, integer_ratio_at_most

NEIGHBOURS = ("all", "adjacent")

# floor(x * e^eps * (1 - 2^-49)) in float64 is at most x e^eps for every integer x below 2^62
# (math.exp is within one ulp, each product rounds by 2^-53 relative: the margin covers
# (1 + 2^-52)(1 + 2^-53)^2 < 1 + 2^-50): the quantizer's caps are below e^eps without an
# exact test, and its tables pass the checker's float pre-filter (margin 2^-50).
_QUANTIZER_MARGIN = 2.0**-49
_FILTER_MARGIN = 2.0**-50


def _check_neighbours(neighbours):
    if neighbours not in NEIGHBOURS:
        raise ValueError(f"neighbours must be 'all' (any two inputs) or 'adjacent' (counts j "
                         f"and j + 1), got {neighbours!r}.")
    return neighbours


def _row_pairs(W, neighbours):
    """``(high, low, u_high, u_low)``: for every row (``"all"``) or every adjacent pair of
    columns (``"adjacent"``), the larger and the smaller entry and their columns."""
    if neighbours == "all":
        u_high, u_low = np.argmax(W, axis=1), np.argmin(W, axis=1)
        rows = np.arange(W.shape[0])
        return (W[rows, u_high][:, None], W[rows, u_low][:, None], u_high[:, None],
                u_low[:, None])
    left, right = W[:, :-1], W[:, 1:]
    columns = np.arange(W.shape[1] - 1)[None, :]
    left_high = left >= right
    return (np.maximum(left, right), np.minimum(left, right),
            np.where(left_high, columns, columns + 1), np.where(left_high, columns + 1, columns))


def table_ratio_violation(W, epsilon, neighbours="all"):
    """The first ratio of an integer table above ``e^epsilon``, decided exactly.

    Parameters
    ----------
    W : ndarray of int64, shape (n_outputs, n_inputs)
        Non-negative weights (the columns' sums are checked by ``check_table``).
    epsilon : float
    neighbours : {"all", "adjacent"}, default="all"
        Which inputs must be indistinguishable: any two, or adjacent columns.

    Returns
    -------
    None or tuple
        ``None`` when every row (``"all"``) or adjacent pair (``"adjacent"``) has
        ``high <= e^epsilon low``; else ``(row, u_high, u_low, high, low)`` of the first
        violation (a row that is 0 for ``u_low`` only counts: an infinite ratio). Rows that
        are 0 for every input never violate.

    Examples
    --------
    >>> W = np.array([[3, 1], [1, 3]])
    >>> table_ratio_violation(W, math.log(3.0)) is None
    True
    >>> table_ratio_violation(W, 1.0)
    (0, 0, 1, 3, 1)
    """
    _check_neighbours(neighbours)
    W = np.asarray(W, dtype=np.int64)
    high, low, u_high, u_low = _row_pairs(W, neighbours)
    # Float pre-filter: entries are integers below 2^53 (exact in float64); the pairs with
    # high <= fl(low * e^eps (1 - 2^-50)) are provably within e^eps and skip the exact test.
    with np.errstate(over="ignore"):
        clear = high.astype(float) <= low.astype(float) * (math.exp(epsilon)
                                                          * (1.0 - _FILTER_MARGIN))
    for o, k in np.argwhere(~clear).tolist():  # row-major: the first violation is reported
        a, b = int(high[o, k]), int(low[o, k])
        if not integer_ratio_at_most(a, b, epsilon):
            return (o, int(u_high[o, k]), int(u_low[o, k]), a, b)
    return None


def _describe_violation(violation, name, precision=TABLE_PRECISION):
    """The ValueError message of a :func:`table_ratio_violation`, naming the field and row."""
    o, u, v, a, b = violation
    ratio = "infinite (0 weight)" if b == 0 else f"{a / b!r} (log {math.log(a / b)!r})"
    return (f"row {o} of the {name} has weight {a} for input {u} and {b} for input {v} "
            f"(out of 2**{precision}): its realised ratio is {ratio}")


def check_exact_table(W, epsilon, neighbours="all", name="table",
                      precision=TABLE_PRECISION):
    """An integer table with columns summing to ``2^precision`` whose every ratio is within
    ``e^epsilon`` (decided exactly), as int64; a ValueError naming ``name`` otherwise.

    Examples
    --------
    >>> check_exact_table([[3, 1], [1, 3]], math.log(3.0), precision=2).tolist()
    [[3, 1], [1, 3]]
    """
    W = check_table(W, precision, name)
    violation = table_ratio_violation(W, epsilon, neighbours)
    if violation is not None:
        model = "LDP" if neighbours == "all" else "DP"
        raise ValueError(_describe_violation(violation, name, precision)
                         + f" > e^{epsilon!r}: the table is not {epsilon}-{model}.")
    return W


def _caps(W, factor, neighbours, live):
    """The largest value each entry may take, the other entries of its row fixed:
    ``floor(factor * m)`` with ``m`` the row's minimum (``"all"``) or the smaller adjacent
    entry (``"adjacent"``); ``factor < e^eps`` by the float margin (module comment)."""
    W = W.astype(float)
    if neighbours == "all":
        bound = np.broadcast_to(W.min(axis=1, keepdims=True), W.shape)
    else:
        bound = np.full(W.shape, np.inf)
        bound[:, 1:] = W[:, :-1]
        bound[:, :-1] = np.minimum(bound[:, :-1], W[:, 1:])
    return np.where(live[:, None], np.floor(bound * factor), 0.0)


def _floors(W, factor, neighbours, live, keep):
    """The smallest value each entry may take, the other entries of its row fixed:
    ``ceil(M / factor)`` with ``M`` the row's maximum or the larger adjacent entry, and never
    below ``min(W, keep)`` (a live entry never reaches 0)."""
    W = W.astype(float)
    if neighbours == "all":
        bound = np.broadcast_to(W.max(axis=1, keepdims=True), W.shape)
    else:
        bound = np.zeros(W.shape)
        bound[:, 1:] = W[:, :-1]
        bound[:, :-1] = np.maximum(bound[:, :-1], W[:, 1:])
    low = np.maximum(np.ceil(bound / factor), np.minimum(W, keep))
    return np.where(live[:, None], np.minimum(low, W), W)


def _move(room, amount, priority):
    """Per column, up to ``amount[u]`` units spread over the entries' ``room`` (>= 0), the
    entries of highest ``priority`` first; returns the units given to each entry (int64).

    The running sums of the sorted rooms are floats: while below 2^53 they are exact
    integers, and once past it they stay past it (``np.cumsum`` adds in order and rounding is
    monotone), so every comparison with ``amount <= 2^52`` is exact.
    """
    order = np.argsort(-priority, axis=0, kind="stable")
    sorted_room = np.take_along_axis(room, order, axis=0).astype(float)
    before = np.zeros_like(sorted_room)
    before[1:] = np.cumsum(sorted_room, axis=0)[:-1]
    given_sorted = np.clip(amount[None, :].astype(float) - before, 0.0, sorted_room)
    given = np.zeros(room.shape, dtype=np.int64)
    np.put_along_axis(given, order, given_sorted.astype(np.int64), axis=0)
    return given


def _settle(room, amount, shortfall):
    """Units moved per entry so that each column moves by ``amount`` (>= 0), within ``room``:
    first one unit to each entry whose ``shortfall`` (how far it is from its target, in the
    direction of the move) is positive, largest first (largest-remainder rounding), then
    whatever is left, again largest shortfall first."""
    room = np.where(amount[None, :] > 0, room, 0)
    first = _move(np.minimum(room, np.ceil(np.maximum(shortfall, 0.0)).astype(np.int64)),
                  amount, shortfall)
    rest = amount - first.sum(axis=0)
    if (rest > 0).any():
        first += _move(room - first, rest, shortfall - first)
    return first


def lift_units(epsilon):
    """Units of ``2^-K`` added to every entry of a live row before rounding (see
    :func:`quantize_table`): ``ceil(64 / (1 - e^-eps))``.

    Examples
    --------
    >>> lift_units(1.0)
    102
    """
    return math.ceil(64.0 / -math.expm1(-epsilon))


def quantize_table(P, epsilon, neighbours="all", precision=TABLE_PRECISION,
                   name="strategy matrix"):
    """An integer table ``W`` (columns summing to ``2^precision``) close to ``P`` that passes
    the exact ``epsilon`` check (:func:`check_exact_table`).

    Parameters
    ----------
    P : ndarray of float, shape (n_outputs, n_inputs)
        Finite, non-negative, columns summing to 1 up to rounding, no row zero for some inputs
        only (the caller checks and normalizes: ``check_ldp_strategy``,
        ``check_count_matrix``).
    epsilon : float
        The claim. The quantizer never loosens it: a matrix that exceeds it is capped into it
        (the callers refuse matrices that exceed it by more than rounding, so the result is
        close to ``P``).
    neighbours : {"all", "adjacent"}, default="all"
    precision : int, default=TABLE_PRECISION
        ``K``, at most 52.
    name : str
        How error messages name the matrix.

    Returns
    -------
    W : ndarray of int64, the shape of ``P``
        ``W / 2^K`` is the law sampled; rows zero in ``P`` are zero in ``W``. A matrix that
        is already such a table (``P 2^K`` integers, columns summing to ``2^K``, every ratio
        exactly within ``e^eps``) is returned as it is: quantizing a realised matrix
        ``W / 2^K`` gives ``W`` back.

    Raises
    ------
    ValueError
        When no table at this precision satisfies the claim near ``P`` (``epsilon`` so small
        that the lift below takes the whole column, or ``P`` far outside its claim).

    Notes
    -----
    ``S = 2^K``, ``L = ceil(64 / (1 - e^-eps))`` units (:func:`lift_units`), ``m`` rows and
    ``b = e^eps (1 - 2^-49)``, so that ``floor(b x) <= e^eps x`` for integers ``x`` (module
    comment). The steps:

    1. Target ``T = P (S - L m) + L`` on the rows of ``P`` that are not all zero: the mixture
       of ``P`` with weight ``L m / S`` of the uniform law. It moves each probability by at
       most ``L m 2^-K`` (``1.4e-12`` per thousand rows at ``eps = 1``), keeps every live
       entry at least ``L`` units (an entry below ``2^-K``, e.g. the far tail of the
       geometric mechanism, would otherwise round to 0: an infinite ratio), and gives every
       ratio slack: if ``x <= e^eps y (1 + 1e-15)`` for the entries of ``P``, the targets
       satisfy ``T_x <= b (T_y - 1)``, since the difference ``(b - 1) L - b`` outweighs the
       ``e^eps (2^-49 + 1e-15) S`` that rounding and the margin take. So ``W = floor(T)``
       already satisfies every ratio, with no cascade of corrections.
    2. Safety for inputs further from their claim (the callers accept a relative ``1e-9``):
       lower entries until every ratio holds. ``"all"``: cap each row at ``floor(b min)``
       (only entries above the cap move, the minimum stays). ``"adjacent"``: one pass left
       to right, ``W[j] = min(W[j], floor(b W[j-1]))``, and one right to left with
       ``W[j+1]``; after the first ``W[j] <= b W[j-1]``; the second lowers ``W[j]`` to at
       least ``floor(b W[j+1]) >= W[j+1]``, and ``W[j+1] <= b floor(b W[j+1])``, so both
       directions hold, and no entry goes below the row's smallest (never 0).
    3. Columns summing past ``S`` are lowered, each entry to no less than ``ceil(M / b)``,
       ``M`` the largest entry it is compared with (nor below 1): every constraint on it
       holds, and lowering several at once is safe since each bound uses the old, larger,
       values.
    4. Columns short of ``S`` (the floors, the caps) are raised, each entry to no more than
       ``floor(b m)``, ``m`` the smallest entry it is compared with (the row's minimum, or
       its adjacent entries): raising never lowers any ``m``, so raising several entries at
       once keeps every constraint. One unit first to each entry furthest below its target
       (largest remainder), then the rest.

    Steps 3 and 4 are sorted cumulative sums per column (no iteration), so the quantizer
    terminates; after step 1 alone the deficit is under ``m`` units per column and every
    entry has that room (``floor(b m) - W >= L - 1`` by the slack of step 1), so the result
    is within one unit of ``T``. If a column still misses ``S`` (no room: ``P`` far from its
    claim, or ``L m > S``), a ValueError. The table is then checked exactly
    (:func:`check_exact_table`): soundness never rests on the float arguments above.

    Examples
    --------
    >>> P = np.array([[0.7, 0.3], [0.3, 0.7]])
    >>> W = quantize_table(P, 1.0, precision=12)  # L = 102 units: a visible mixture
    >>> W.tolist()
    [[2826, 1270], [1270, 2826]]
    >>> quantize_table(W / 2**12, 1.0, precision=12).tolist()  # already a table: unchanged
    [[2826, 1270], [1270, 2826]]
    """
    _check_neighbours(neighbours)
    precision = int(precision)
    if not 1 <= precision <= TABLE_PRECISION:
        raise ValueError(f"precision must lie in [1, {TABLE_PRECISION}], got {precision!r}.")
    one = 2**precision
    P = np.asarray(P, dtype=float)
    scaled = P * float(one)
    if (np.floor(scaled) == scaled).all() and (scaled.sum(axis=0) == one).all():
        W = scaled.astype(np.int64)
        if table_ratio_violation(W, epsilon, neighbours) is None:
            return W
    live = P.max(axis=1) > 0
    lift = lift_units(epsilon)
    if lift * int(live.sum()) * 2 > one:
        raise ValueError(
            f"the {name} cannot be sampled exactly at epsilon={epsilon!r}: its "
            f"{int(live.sum())} outputs need {lift} units of 2**-{precision} each to keep "
            "every ratio exact, more than half of the probability; use a larger epsilon or "
            "fewer outputs.")
    target = np.where(live[:, None], P * float(one - lift * int(live.sum())) + lift, 0.0)
    factor = math.exp(epsilon) * (1.0 - _QUANTIZER_MARGIN)
    W = np.minimum(np.floor(target), float(one))
    if neighbours == "all":
        W = np.minimum(W, _caps(W, factor, neighbours, live))
    else:
        # One vectorized step per column (over all rows), on the transpose so that each
        # column is contiguous; the passes are a chain, so they cannot be one numpy call.
        columns = np.ascontiguousarray(W.T)
        for j in range(1, columns.shape[0]):
            np.minimum(columns[j], np.floor(columns[j - 1] * factor), out=columns[j])
        for j in range(columns.shape[0] - 2, -1, -1):
            np.minimum(columns[j], np.floor(columns[j + 1] * factor), out=columns[j])
        W = columns.T
    W = W.astype(np.int64)
    surplus = W.sum(axis=0) - one
    if (surplus > 0).any():
        room = W - _floors(W, factor, neighbours, live, 1.0).astype(np.int64)
        W = W - _settle(room, np.maximum(surplus, 0), W - target)
    deficit = one - W.sum(axis=0)
    if (deficit > 0).any():
        cap = np.minimum(_caps(W, factor, neighbours, live), float(one)).astype(np.int64)
        W = W + _settle(np.maximum(cap - W, 0), np.maximum(deficit, 0), target - W)
    sums = W.sum(axis=0)
    off = np.flatnonzero(sums != one)
    if off.size:
        u = int(off[0])
        raise ValueError(
            f"the {name} cannot be sampled exactly at epsilon={epsilon!r}: column {u} of its "
            f"integer table sums to {int(sums[u])}, not 2**{precision}, once every ratio is "
            "within e^eps (no room left): the matrix is too far from its claim.")
    return check_exact_table(W, epsilon, neighbours, f"quantized {name}", precision)


def round_table(P, precision=TABLE_PRECISION):
    """``P`` rounded to an integer table with columns summing to ``2^precision``, no privacy
    claim: largest-remainder rounding of ``P 2^K`` within each column, an entry that is 0 in
    ``P`` stays 0 (an entry below ``2^-K`` may round to 0: nothing is claimed).

    For sampling a matrix that makes no privacy claim (``sample_outputs`` without epsilon).

    Examples
    --------
    >>> round_table(np.array([[1 / 3, 1.0], [2 / 3, 0.0]]), precision=4).tolist()
    [[5, 16], [11, 0]]
    """
    one = 2**int(precision)
    target = np.asarray(P, dtype=float) * float(one)
    W = np.minimum(np.floor(target), float(one)).astype(np.int64)
    deficit = one - W.sum(axis=0)
    if (deficit > 0).any():
        room = np.where(target > 0, one - W, 0)
        W = W + _settle(room, np.maximum(deficit, 0), target - W)
    if (deficit < 0).any():
        W = W - _settle(W, np.maximum(-deficit, 0), W - target)
    return check_table(W, precision, "rounded matrix")


def realised_matrix(W, precision=TABLE_PRECISION):
    """``W / 2^precision`` as float64 (exact: the law that is sampled).

    Examples
    --------
    >>> realised_matrix(np.array([[3, 1], [1, 3]]), precision=2).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    return np.asarray(W, dtype=np.int64).astype(float) / float(2**int(precision))
