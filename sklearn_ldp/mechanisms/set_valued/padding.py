"""Padding and sampling: one item of a user's set, drawn exactly, for a frequency oracle.

Wang, Li and Jha (S&P 2018) turn a set of items into one value that a frequency oracle can
report. A user whose set ``v`` has ``s`` items pads it with the dummy items
``d + s, ..., d + L - 1`` up to the public pad length ``L`` (nothing is padded when
``s >= L``), then reports one element of the padded set, chosen uniformly: each real item with
probability ``1 / max(s, L)``. The oracle runs over ``d + L`` values (the ``d`` items, then the
``L`` dummies); the count it estimates for item ``x``, times ``L``, is an unbiased estimate of
the number of users holding ``x`` when no set is longer than ``L``, and underestimates by the
users whose longer sets were subsampled otherwise (the paper's trade-off, which the pad length
rule of :func:`pad_length_from_sizes` balances).

Exactness. The position is one exactly uniform integer in ``[0, max(s, L))`` (Lemire's
method, :func:`~sklearn_ldp.mechanisms._base.exact.uniform_below`): position ``r < s`` is the
``r``-th item of the set, ``r >= s`` the dummy ``d + r``. The law of a report given a set is
then the mixture ``sum_j P_oracle(o | j) / max(s, L)`` over the padded set, whose integer
weights :func:`padded_law` sums exactly; every term satisfies the oracle's ``eps`` bound
against every other, so the mixture does too (each output's probability lies between the
smallest and the largest of its terms).

Layout. Sets travel as two flat arrays (:class:`FlatSets`): ``lengths`` (one per user) and
``items`` (the users' items, user after user), so that ``N`` users with few items each never
become an ``N x d`` array; a 2-D integer array whose rows are padded with ``-1`` is accepted
too (:func:`check_sets`).

References
----------
.. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset mining",
   IEEE S&P 2018 (padding and sampling, SVIM).
"""

import math
import numbers
from typing import NamedTuple

import numpy as np

from ..._validation import check_epsilon
from .._base.exact import ExactLaw, uniform_below
from ..oracles.local_hashing import OptimizedLocalHashing
from ..oracles.randomized_response import RandomizedResponse

# The largest declared set size (and pad length): the size round's oracle lists every size.
MAX_SET_SIZE = 4096
# The paper's rule: the pad length is the 90th percentile of the (estimated) set sizes.
PAD_QUANTILE = 0.9


class FlatSets(NamedTuple):
    """Users' sets as flat arrays: ``lengths[u]`` items for user ``u``, listed in ``items``
    user after user (int64 both)."""

    lengths: np.ndarray
    items: np.ndarray

    @property
    def starts(self):
        """Where each user's items begin in ``items``."""
        return np.concatenate(([0], np.cumsum(self.lengths)[:-1])).astype(np.int64)


def check_size_cap(value, name="max_set_size"):
    """An integer in ``[1, MAX_SET_SIZE]``, or a ValueError naming ``name`` and the value."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not 1 <= value <= MAX_SET_SIZE:
        raise ValueError(f"{name} must be an integer in [1, {MAX_SET_SIZE}], got {value!r}.")
    return int(value)


def check_sets(sets, n_items, max_set_size, name="sets"):
    """Sets as :class:`FlatSets`, every one checked, or a ValueError naming the first fault.

    Parameters
    ----------
    sets : FlatSets, tuple (lengths, items) or 2-D array of int
        The users' sets: flat arrays, or one row per user padded with ``-1`` at its end.
    n_items : int
        Items are integers in ``[0, n_items)``.
    max_set_size : int
        The declared cap: a longer set is refused, never truncated.
    name : str, default="sets"
        What the messages call the sets.

    Returns
    -------
    FlatSets
        ``lengths`` and ``items`` as int64.

    Raises
    ------
    ValueError
        A set longer than the cap, an item outside ``[0, n_items)``, an item listed twice in
        one set, a ``-1`` before an item in a padded row, or arrays of the wrong layout.

    Examples
    --------
    >>> flat = check_sets(np.array([[2, 0], [1, -1]]), n_items=3, max_set_size=2)
    >>> flat.lengths.tolist(), flat.items.tolist()
    ([2, 1], [0, 2, 1])
    """
    return check_sets_order(sets, n_items, max_set_size, name)[0]


def check_sets_order(sets, n_items, max_set_size, name="sets"):
    """:func:`check_sets`, and the permutation that sorted the items (None when they were
    sorted already): data aligned with the items (a key's value) follows it.

    Examples
    --------
    >>> flat, order = check_sets_order((np.array([2]), np.array([2, 0])), 3, 2)
    >>> flat.items.tolist(), order.tolist()
    ([0, 2], [1, 0])
    """
    if isinstance(sets, tuple) and len(sets) == 2:
        lengths, items = (np.asarray(part) for part in sets)
        for part, label in ((lengths, "lengths"), (items, "items")):
            if part.ndim != 1 or (part.size and part.dtype.kind not in "iu"):
                raise ValueError(f"{name}: {label} must be a 1-D integer array, got shape "
                                 f"{part.shape} and dtype {part.dtype}.")
        lengths, items = lengths.astype(np.int64), items.astype(np.int64)
        if lengths.size and lengths.min() < 0:
            user = int(np.argmax(lengths < 0))
            raise ValueError(f"{name}: user {user} has a negative length {lengths[user]}.")
        if int(lengths.sum()) != items.size:
            raise ValueError(f"{name}: the lengths add up to {int(lengths.sum())} items, but "
                             f"{items.size} items are given.")
    else:
        rows = np.asarray(sets)
        if rows.size == 0 and rows.ndim <= 2 and rows.dtype.kind in "iuf":
            rows = np.zeros((rows.shape[0] if rows.ndim == 2 else 0, 0), dtype=np.int64)
        if rows.ndim != 2 or (rows.size and rows.dtype.kind not in "iu"):
            raise ValueError(f"{name} must be a 2-D integer array (one row per user, padded "
                             f"with -1) or a pair (lengths, items), got shape {rows.shape} "
                             f"and dtype {rows.dtype}.")
        rows = rows.astype(np.int64)
        present = rows != -1
        lengths = present.sum(axis=1)
        # Padding only at the end of a row: an item after a -1 is a malformed row.
        misplaced = present[:, 1:] & ~present[:, :-1]
        if misplaced.any():
            user = int(np.flatnonzero(misplaced.any(axis=1))[0])
            raise ValueError(f"{name}: row {user} is {rows[user].tolist()[:20]}; the -1 "
                             "padding must come after the items.")
        items = rows[present]
    if lengths.size and lengths.max() > max_set_size:
        user = int(np.argmax(lengths > max_set_size))
        raise ValueError(f"{name}: user {user} holds {int(lengths[user])} items, more than "
                         f"max_set_size={max_set_size} (sets are never truncated: raise the "
                         "cap or split the data).")
    if items.size and (items.min() < 0 or items.max() >= n_items):
        position = int(np.argmax((items < 0) | (items >= n_items)))
        user = int(np.searchsorted(np.cumsum(lengths), position, side="right"))
        raise ValueError(f"{name}: user {user} holds the item {int(items[position])}, "
                         f"outside the declared items [0, {n_items}).")
    items, order = _sorted_without_duplicates(lengths, items, name)
    return FlatSets(lengths, items), order


def _sorted_without_duplicates(lengths, items, name):
    """Each user's items in increasing order (a set has no order: a seeded simulation then
    reproduces whatever order the sets were listed in) and the sorting permutation (None if
    they were sorted), refusing an item listed twice (equal neighbours once sorted)."""
    if items.size < 2:
        return items, None
    users = np.repeat(np.arange(lengths.size), lengths)
    new_user = users[1:] != users[:-1]
    if np.all(new_user | (items[1:] > items[:-1])):
        return items, None  # sorted, so no item twice: one pass, no sort
    span = int(items.max()) + 1
    if lengths.size * span < 2**62:
        # One int64 key (user, item): a plain sort, several times faster than a lexsort.
        order = np.argsort(users * span + items, kind="stable")
    else:
        order = np.lexsort((items, users))
    users, items = users[order], items[order]
    same = (users[1:] == users[:-1]) & (items[1:] == items[:-1])
    if same.any():
        first = int(np.argmax(same))
        raise ValueError(f"{name}: user {int(users[first])} lists the item "
                         f"{int(items[first])} twice; a set holds each item once.")
    return items, order


def sample_padded(flat, n_items, pad_length, rng):
    """One element of each user's padded set, exactly uniform (the client's step).

    Parameters
    ----------
    flat : FlatSets
        Checked sets (:func:`check_sets`).
    n_items : int
        The number of real items ``d``; dummies are ``d .. d + pad_length - 1``.
    pad_length : int
        The public pad length ``L``.
    rng : numpy.random.Generator
        The source of the uniform integers.

    Returns
    -------
    ndarray of int64 of shape (n_users,)
        A value in ``[0, d + L)`` per user: the sampled item, or the dummy ``d + r``.

    Examples
    --------
    >>> flat = FlatSets(np.array([1, 0]), np.array([2]))
    >>> sample_padded(flat, 3, 1, np.random.default_rng(0)).tolist()
    [2, 3]
    """
    lengths = flat.lengths
    positions = uniform_below(rng, np.maximum(lengths, pad_length), lengths.size)
    real = positions < lengths
    # A sentinel item so that users with an empty set index something (their value is a dummy).
    items = np.append(flat.items, 0)
    index = np.where(real, flat.starts + positions, items.size - 1)
    return np.where(real, items[index], n_items + positions)


def padded_values(items, n_items, pad_length):
    """The padded set of one user: its items, then the dummies ``d + s .. d + L - 1``.

    Examples
    --------
    >>> padded_values([4, 1], 5, 4)
    [4, 1, 7, 8]
    """
    items = [int(item) for item in items]
    return items + list(range(n_items + len(items), n_items + pad_length))


def padded_law(oracle_law, items, n_items, pad_length):
    """The exact law of one user's report: the uniform mixture of ``oracle_law`` over the
    padded set (integer weights summed over its elements, total ``max(s, L) T``).

    Parameters
    ----------
    oracle_law : callable
        ``value -> ExactLaw`` of the oracle over ``d + L`` values; every law lists the same
        outputs in the same order with the same total ``T``.
    items : sequence of int
        The user's set.
    n_items, pad_length : int
        ``d`` and ``L``.

    Returns
    -------
    ExactLaw
        The law of the report given the set.

    Examples
    --------
    >>> oracle = RandomizedResponse(4, 1.0)
    >>> law = padded_law(oracle.exact_law, [0], 2, 2)  # the set {0}, padded with dummy 3
    >>> law.total == 2 * sum(oracle.weights[:1]) + 2 * 3 * oracle.weights[1]
    True
    """
    laws = [oracle_law(value) for value in padded_values(items, n_items, pad_length)]
    totals = {int(law.total) for law in laws}
    if len(totals) != 1:
        raise ValueError("the oracle's laws must share one total to be mixed exactly.")
    weights = [sum(int(law.weights[o]) for law in laws) for o in range(len(laws[0].weights))]
    return ExactLaw(laws[0].outputs, weights, len(laws) * totals.pop())


def item_oracle(n_values, epsilon, oracle="auto"):
    """The frequency oracle over ``n_values``: randomized response (``"grr"``) or optimized
    local hashing (``"olh"``); ``"auto"`` takes randomized response when
    ``n_values < 3 e^eps + 2``, where its variance is the smaller (Wang et al. 2017).

    Examples
    --------
    >>> type(item_oracle(5, 2.0)).__name__, type(item_oracle(500, 2.0)).__name__
    ('RandomizedResponse', 'OptimizedLocalHashing')
    """
    epsilon = check_epsilon(epsilon)
    if oracle == "auto":
        oracle = "grr" if n_values < 3 * math.exp(epsilon) + 2 else "olh"
    if oracle == "grr":
        return RandomizedResponse(n_values, epsilon)
    if oracle == "olh":
        return OptimizedLocalHashing(n_values, epsilon)
    raise ValueError(f"oracle must be 'auto', 'grr' or 'olh', got {oracle!r}.")


def support_estimate(oracle, statistic):
    """``(C - q N) / (p - q)`` per value of the oracle (without the known-total step, so that
    each value's estimate has the closed-form variance of :func:`support_variance`), and
    ``N``."""
    statistic = oracle._check_statistic(statistic)
    support, total = statistic[:-1].astype(float), float(statistic[-1])
    return (support - oracle.q * total) / (oracle.p - oracle.q), int(statistic[-1])


def support_variance(oracle, n_users, held, scale):
    """Variance of ``scale`` times the support estimate of one value, when ``held`` of the
    ``n_users`` reports come from users who sample that value with probability
    ``1 / scale`` each (and the others never): ``sum_u P_u (1 - P_u) scale^2 / (p - q)^2``
    with ``P_u = q + (p - q) [u holds it] / scale``.

    Examples
    --------
    >>> oracle = RandomizedResponse(10, 1.0)
    >>> bool(support_variance(oracle, 100, 0, 1) > 0)
    True
    """
    p, q = oracle.p, oracle.q
    delta = p - q
    held = np.asarray(held, dtype=float)
    return (scale ** 2 * n_users * q * (1 - q) / delta ** 2
            + scale * held * (1 - 2 * q) / delta - held)


def pad_length_from_sizes(size_counts, quantile=PAD_QUANTILE):
    """The smallest ``L >= 1`` such that at least ``quantile`` of the (estimated) users have a
    set of at most ``L`` items (negative estimates count as 0).

    Parameters
    ----------
    size_counts : array-like of float
        Entry ``k``: the (estimated) number of users whose set has ``k`` items.
    quantile : float, default=0.9
        The paper's 90th percentile.

    Returns
    -------
    int
        The pad length; ``len(size_counts) - 1`` (the cap) when nothing is positive.

    Examples
    --------
    >>> pad_length_from_sizes([0, 50, 30, 15, 5])
    3
    """
    counts = np.clip(np.asarray(size_counts, dtype=float), 0, None)
    cap = max(counts.size - 1, 1)
    if not counts.sum() > 0:
        return cap
    covered = np.cumsum(counts) / counts.sum()
    return int(min(max(int(np.argmax(covered >= quantile - 1e-12)), 1), cap))
