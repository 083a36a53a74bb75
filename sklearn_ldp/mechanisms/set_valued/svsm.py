"""Frequent itemsets of set-valued data (SVSM), after SVIM's candidate narrowing.

Wang, Li and Jha (S&P 2018) find the itemsets (pairs, triples ... of items held together)
that most users hold, in rounds over disjoint groups of users; each user reports once, with
the whole budget, in the one round of its group, so the protocol is ``epsilon``-LDP.

1. **Candidates** (SVIM): each user pads its set to length 1 and reports one item
   (:class:`~.svim.SetItemMechanism` with ``pad_length=1``); the ``2k`` items of largest
   estimate are the candidates.
2. **Item sizes**: each user reports how many candidates its set holds; the pad length of the
   next round is the 90th percentile of the estimated sizes (:func:`~.svim.pad_length_round`).
3. **Items**: each user reports its set intersected with the candidates (padded and sampled,
   over the ``2k`` candidates): the counts of the candidates, whose ``k`` largest are the
   frequent items.
4. **Itemset sizes**: from the frequent items, the candidate itemsets of
   :func:`candidate_itemsets` (the paper's rule: each frequent item ``x`` gets the guess
   ``0.9 f(x) / max f``, an itemset the product of its items' guesses, and the ``2k`` itemsets
   of size ``>= 2`` with the largest products are kept); each user reports how many of them
   its set contains, and the itemsets' pad length is their 90th percentile.
5. **Itemsets**: each user pads the list of candidate itemsets its set contains and reports
   one of them, drawn exactly uniformly, through randomized response or optimized local
   hashing over the candidate-itemset indices and the dummies: exactly
   :class:`~.svim.SetItemMechanism` over that index domain (the "set" of a user is the set of
   candidate indices it contains), so its exact law and privacy audit are those of
   ``set_items``. The server's estimate of each itemset's count is unbiased when no user
   contains more candidate itemsets than the pad length, with the analytic variance of
   :meth:`~.svim.SetItemMechanism.count_variance`.

**The long-set correction** (SVIM's "update" step, which SVSM uses too): a user holding
``l > L`` elements reports each w.p. ``1 / l`` instead of ``1 / L``, so the estimates of
steps 3 and 5 are too small. Each is multiplied by :func:`size_correction_factor` ``u_L =
sum_l g_l l / sum_l g_l min(l, L)`` of the size round that chose ``L`` (``g_l``: its
estimated number of users with ``l`` elements). The corrected estimate is unbiased when
the chance that a user's set holds a given element is proportional to its size ``l`` (each
of its ``l`` elements is drawn from one distribution, whatever ``l``); otherwise it is an
approximation. Standard errors are multiplied by the same factor; the factor's own noise
(from the size round, on other users) is left out, a second-order term.

The shares of the users (:data:`SVSM_SHARES`): half the users run SVIM (steps 1-3, split 50%,
10%, 40% of that half, as the paper splits SVIM), a tenth report their itemset size and the
remaining 40% their itemset (the paper's 10% / 40% of SVSM).

References
----------
.. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset mining",
   IEEE S&P 2018 (SVIM, SVSM).
"""

import heapq
import numbers
from typing import NamedTuple

import numpy as np

from ..._validation import check_epsilon, check_positive_int
from .padding import FlatSets, check_sets, check_size_cap, support_estimate, support_variance
from .svim import SetItemMechanism, pad_length_round, size_oracle

# The rounds, in order, and the share of all users in each (see the module docstring).
SVSM_SHARES = {"candidates": 0.25, "item_sizes": 0.05, "items": 0.20,
               "itemset_sizes": 0.10, "itemsets": 0.40}
# The paper's scale of the item guesses: 0.9 f / max f, so that a longer itemset's guess is
# smaller than each of its subsets'.
GUESS_SCALE = 0.9
# The frequent items of one user are a bit mask in an int64.
MAX_TOP_K = 62
DEFAULT_TOP_K = 10
# Users per block when testing which candidate itemsets a set contains (a block x 2k bools).
CONTAINMENT_BLOCK = 1 << 16
# A size round's estimate of a size is kept only above this many standard errors of a size
# no user has (the noise floor): otherwise noise on the many empty large sizes, weighted by
# their size, inflates the long-set correction (see size_round).
SIZE_CUT = 4.0


def check_n_candidates(value, top_k, name="n_candidates"):
    """The number of candidate itemsets: ``2 top_k`` (the paper's) for None, else an integer
    in ``[1, MAX_SET_SIZE]`` (a ValueError naming ``name`` and the value)."""
    if value is None:
        return 2 * top_k
    return check_size_cap(value, name)


def check_top_k(value, name="top_k"):
    """An integer in ``[1, MAX_TOP_K]``, or a ValueError naming ``name`` and the value."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) \
            or not 1 <= value <= MAX_TOP_K:
        raise ValueError(f"{name} must be an integer in [1, {MAX_TOP_K}], got {value!r}.")
    return int(value)


def split_users(n_users, rng, shares=SVSM_SHARES):
    """The users of each round: a uniformly random split of ``0 .. n_users - 1`` into groups of
    sizes ``round(share * n_users)`` (the last takes the rest), each sorted.

    Examples
    --------
    >>> groups = split_users(20, np.random.default_rng(0))
    >>> {name: len(users) for name, users in groups.items()}
    {'candidates': 5, 'item_sizes': 1, 'items': 4, 'itemset_sizes': 2, 'itemsets': 8}
    """
    order = np.asarray(rng.permutation(n_users), dtype=np.int64)
    cuts = np.round(np.cumsum(list(shares.values()))[:-1] * n_users).astype(np.int64)
    return {name: np.sort(part) for name, part in zip(shares, np.split(order, cuts),
                                                      strict=True)}


def select_users(flat, users):
    """The sets of ``users`` (sorted indices) as :class:`FlatSets`."""
    keep = np.zeros(flat.lengths.size, dtype=bool)
    keep[users] = True
    return FlatSets(flat.lengths[users], flat.items[np.repeat(keep, flat.lengths)])


def restrict_sets(flat, kept_items, n_items):
    """Each user's set intersected with ``kept_items``, each item recoded to its position in
    ``kept_items``.

    Examples
    --------
    >>> flat = FlatSets(np.array([2, 1, 0]), np.array([0, 3, 2]))
    >>> restricted = restrict_sets(flat, np.array([3, 0]), 4)
    >>> restricted.lengths.tolist(), restricted.items.tolist()
    ([2, 0, 0], [1, 0])
    """
    position = np.full(n_items, -1, dtype=np.int64)
    position[np.asarray(kept_items, dtype=np.int64)] = np.arange(len(kept_items))
    mapped = position[flat.items]
    owners = np.repeat(np.arange(flat.lengths.size), flat.lengths)
    inside = mapped >= 0
    return FlatSets(np.bincount(owners[inside], minlength=flat.lengths.size).astype(np.int64),
                    mapped[inside])


def top_indices(estimates, n):
    """The indices of the ``n`` largest estimates, largest first (ties: the smaller index)."""
    return np.argsort(-np.asarray(estimates, dtype=float), kind="stable")[:n].astype(np.int64)


def size_round(sizes, max_set_size, epsilon, rng):
    """A size round (:func:`~.svim.pad_length_round`): the pad length and the estimated number
    of users of each size ``0 .. max_set_size``, for :func:`size_correction_factor`.

    An estimate not above ``SIZE_CUT = 4`` standard errors of a size no user has is set to 0
    (hard thresholding): the factor weights each size's estimate by the size, so the noise
    of the many large sizes no user has would inflate it. A true but small share of long
    sets may be cut too, which leaves the estimates under-corrected (nearer the plain ones).

    Examples
    --------
    >>> sizes = np.repeat([1, 2, 6], [5000, 4500, 500])
    >>> pad, counts = size_round(sizes, 6, 4.0, np.random.default_rng(0))
    >>> pad, counts.round(-2).tolist()  # truly 0, 5000, 4500, 0, 0, 0, 500
    (2, [0.0, 5000.0, 4500.0, 0.0, 0.0, 0.0, 500.0])
    """
    if not np.asarray(sizes).size:
        return max_set_size, np.zeros(max_set_size + 1)
    pad, reports = pad_length_round(sizes, max_set_size, epsilon, rng)
    oracle = size_oracle(max_set_size, epsilon)
    counts, n_users = support_estimate(oracle, oracle.aggregate(reports))
    floor = np.sqrt(support_variance(oracle, n_users, 0.0, 1))
    return pad, np.where(counts > SIZE_CUT * floor, counts, 0.0)


def size_correction_factor(size_counts, pad_length):
    """SVIM's long-set correction ``u_L = sum_l g_l l / sum_l g_l min(l, L)``.

    A user whose list holds ``l > L`` elements reports each with probability ``1 / l``
    instead of ``1 / L``: ``L`` times the count of an element sums ``min(l, L) / l`` over its
    holders. When the chance of holding an element is proportional to ``l``, the estimate's
    mean is ``u_L`` times too small and multiplying by ``u_L`` makes it unbiased.

    Parameters
    ----------
    size_counts : array-like of float
        Entry ``l``: the (estimated) number of users whose list holds ``l`` elements
        (:func:`size_round`'s, where insignificant sizes are already 0). Negative estimates
        count as 0 (renormalising them into a distribution would change nothing: the
        factor is a ratio).
    pad_length : int
        ``L``.

    Returns
    -------
    float
        ``u_L >= 1``; 1 when no positive count is above ``L`` or none is positive.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset
       mining", IEEE S&P 2018 (SVIM's update step).

    Examples
    --------
    >>> size_correction_factor([0, 50, 30, 15, 5], 2)  # (50 + 60 + 45 + 20) / (50 + 60 + 40)
    1.1666666666666667
    """
    counts = np.clip(np.asarray(size_counts, dtype=float), 0.0, None)
    sizes = np.arange(counts.size)
    kept = float(counts @ np.minimum(sizes, pad_length))
    return float(counts @ sizes) / kept if kept > 0 else 1.0


class ItemsetRoundMechanism(SetItemMechanism):
    """The itemset round's mechanism on the server: ``set_items`` over the candidate-itemset
    indices, and the estimate of the size round that chose its pad length.

    Reports, exact law, specification and equality are those of
    :class:`~.svim.SetItemMechanism` (clients never see ``size_counts``); ``size_factor`` is
    :func:`size_correction_factor` of ``size_counts`` at ``pad_length`` (1 without them),
    which :func:`itemset_frequencies` applies.

    Parameters
    ----------
    n_items, pad_length, epsilon, oracle, max_set_size, items
        As :class:`~.svim.SetItemMechanism` (``items``: the itemsets' labels).
    size_counts : array-like of float, optional
        Entry ``l`` (``0 .. max_set_size``): the estimated number of users containing ``l``
        candidate itemsets.

    Examples
    --------
    >>> mechanism = ItemsetRoundMechanism(4, 2, 1.0, size_counts=[0, 50, 30, 15, 5])
    >>> round(mechanism.size_factor, 4)
    1.1667
    """

    def __init__(self, n_items, pad_length, epsilon, oracle="auto", max_set_size=None,
                 items=None, size_counts=None):
        super().__init__(n_items, pad_length, epsilon, oracle, max_set_size, items)
        self.size_counts, self.size_factor = None, 1.0
        if size_counts is not None:
            counts = np.asarray(size_counts, dtype=float) \
                if isinstance(size_counts, list | tuple | np.ndarray) else np.zeros(0)
            if counts.shape != (self.max_set_size + 1,) or not np.all(np.isfinite(counts)):
                raise ValueError(f"size_counts must list {self.max_set_size + 1} finite "
                                 f"numbers (users of each size 0 .. {self.max_set_size}), got "
                                 f"{str(size_counts)[:60]}.")
            self.size_counts = counts
            self.size_factor = size_correction_factor(counts, self.pad_length)


def candidate_itemsets(frequencies, n_candidates, max_size):
    """The paper's candidate itemsets: the ``n_candidates`` itemsets of ``2 .. max_size``
    frequent items whose product of guesses ``0.9 f(x) / max f`` is the largest.

    Parameters
    ----------
    frequencies : array-like of float
        The estimated frequency of each frequent item (negative estimates count as 0).
    n_candidates : int
        How many itemsets to keep (``2k`` in the paper); fewer when fewer exist.
    max_size : int
        The largest itemset (the cap on a set's size: a longer itemset is in no set).

    Returns
    -------
    list of tuple of int
        Itemsets as increasing positions in ``frequencies``, the largest guess first (ties:
        the lexicographically smaller itemset of the ranks first).

    Notes
    -----
    Every guess is below 1, so removing an itemset's last item (in the order of decreasing
    guesses) gives a larger product: a best-first walk from the pairs, extending each popped
    itemset by the items after its last, pops the itemsets in decreasing order of products
    without listing the ``2^k`` subsets.

    Examples
    --------
    >>> candidate_itemsets([0.5, 0.4, 0.1], 4, 3)
    [(0, 1), (0, 2), (1, 2), (0, 1, 2)]
    """
    frequencies = np.clip(np.asarray(frequencies, dtype=float), 0.0, None)
    k = frequencies.size
    largest = frequencies.max() if k else 0.0
    guesses = GUESS_SCALE * frequencies / largest if largest > 0 else np.zeros(k)
    order = top_indices(guesses, k)  # ranks: rank r is the item order[r]
    ranked = guesses[order]
    heap = [(-ranked[a] * ranked[b], (a, b)) for a in range(k) for b in range(a + 1, k)]
    heapq.heapify(heap)
    chosen = []
    while heap and len(chosen) < n_candidates:
        negative, ranks = heapq.heappop(heap)
        chosen.append(tuple(sorted(int(order[r]) for r in ranks)))
        if len(ranks) < max_size:
            for nxt in range(ranks[-1] + 1, k):
                heapq.heappush(heap, (negative * ranked[nxt], ranks + (nxt,)))
    return chosen


def contained_itemsets(flat, itemsets):
    """For each user, the indices of the itemsets its set contains.

    Parameters
    ----------
    flat : FlatSets
        Sets over positions ``0 .. 61`` (the frequent items, :func:`restrict_sets`).
    itemsets : list of tuple of int
        Itemsets over the same positions.

    Returns
    -------
    FlatSets
        Per user, the increasing indices of the contained itemsets.

    Examples
    --------
    >>> flat = FlatSets(np.array([3, 1]), np.array([0, 1, 2, 1]))
    >>> found = contained_itemsets(flat, [(0, 1), (1, 2), (0, 3)])
    >>> found.lengths.tolist(), found.items.tolist()
    ([2, 0], [0, 1])
    """
    n_users = flat.lengths.size
    masks = np.zeros(n_users, dtype=np.int64)
    # A set lists each item once, so the sum of its bits is their OR.
    np.add.at(masks, np.repeat(np.arange(n_users), flat.lengths),
              np.left_shift(np.int64(1), flat.items))
    wanted = np.array([sum(1 << item for item in itemset) for itemset in itemsets],
                      dtype=np.int64)
    lengths, items = [], []
    for start in range(0, n_users, CONTAINMENT_BLOCK):
        block = masks[start:start + CONTAINMENT_BLOCK, None]
        hits = (block & wanted) == wanted
        lengths.append(hits.sum(axis=1))
        items.append(np.nonzero(hits)[1])  # row-major: user after user, increasing
    if not lengths:
        return FlatSets(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    return FlatSets(np.concatenate(lengths).astype(np.int64),
                    np.concatenate(items).astype(np.int64))


class ItemsetPlan(NamedTuple):
    """What the server learns before the itemset round (steps 1-4 of the module docstring).

    ``item_candidates``: the ``2k`` candidate item codes; ``item_pad_length``; ``item_counts``:
    the estimated users (of the item round) holding each candidate, and ``item_std_errors``
    (both times ``item_size_factor``, the long-set correction of the item round, 1 without
    it); ``n_item_reports``; ``frequent_items``: the ``k`` codes of largest count;
    ``itemsets``: the candidate itemsets as tuples of item codes; ``mechanism``: the
    :class:`ItemsetRoundMechanism` of the itemset round (with its size round's estimate);
    ``groups``: the users of each round."""

    item_candidates: np.ndarray
    item_pad_length: int
    item_counts: np.ndarray
    item_std_errors: np.ndarray
    item_size_factor: float
    n_item_reports: int
    frequent_items: np.ndarray
    itemsets: list
    mechanism: SetItemMechanism
    groups: dict


class FrequentItemsets:
    """SVSM: the frequent itemsets of set-valued data, in rounds over disjoint users.

    Parameters
    ----------
    n_items : int
        The number of declared items ``d`` (items are codes ``0 .. d - 1``).
    max_set_size : int
        The cap on a set's size (a longer set is refused).
    epsilon : float
        Each user's budget: every user reports once, in its group's round.
    top_k : int, default=10
        ``k``: the frequent items and the itemsets sought; ``2k`` candidate items.
    oracle : {"auto", "grr", "olh"}, default="auto"
        The frequency oracle of the padded rounds.
    items : list, optional
        The items' labels; the itemset round's mechanism labels each itemset by the tuple of
        its items' labels.
    n_candidates : int, optional
        The number of candidate itemsets (the paper's ``2k`` by default). More candidates
        raise the ceiling on recall (an itemset the rule ranks lower can be found) but make
        the itemset round's domain larger and users contain more of them, so each itemset's
        estimate is noisier (a longer pad length, or more subsampled users).
    size_correction : bool, default=True
        Multiply the item round's counts and standard errors by the long-set correction
        :func:`size_correction_factor` of its size round (the itemset round's factor is
        carried by ``plan.mechanism`` and applied by :func:`itemset_frequencies`). The
        ranking of the items, hence the candidates, is the same either way.

    See Also
    --------
    sklearn_ldp.ItemsetEstimator : Decodes the itemset round's reports.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset
       mining", IEEE S&P 2018 (SVIM, SVSM).

    Examples
    --------
    >>> sets = [[0, 1, 2]] * 20_000 + [[0, 1]] * 10_000 + [[3, 4]] * 10_000
    >>> lengths = np.array([len(s) for s in sets])
    >>> protocol = FrequentItemsets(6, 3, epsilon=4.0, top_k=3)
    >>> plan, reports = protocol.run((lengths, np.concatenate(sets)), np.random.default_rng(0))
    >>> sorted(plan.frequent_items.tolist()), sorted(plan.itemsets)
    ([0, 1, 2], [(0, 1), (0, 1, 2), (0, 2), (1, 2)])
    >>> frequencies, _ = itemset_frequencies(plan.mechanism, plan.mechanism.aggregate(reports))
    >>> dict(zip(plan.itemsets, frequencies.round(2).tolist()))  # truly 0.75, 0.5, 0.5, 0.5
    {(0, 1): 0.73, (0, 2): 0.5, (1, 2): 0.49, (0, 1, 2): 0.52}
    """

    def __init__(self, n_items, max_set_size, epsilon, top_k=DEFAULT_TOP_K, oracle="auto",
                 items=None, n_candidates=None, size_correction=True):
        self.n_items = check_positive_int(n_items, "n_items")
        if self.n_items < 2:
            raise ValueError(f"itemsets need at least 2 items, got n_items={n_items!r}.")
        self.max_set_size = check_size_cap(max_set_size)
        if self.max_set_size < 2:
            raise ValueError(f"itemsets hold at least 2 items: max_set_size must be at least "
                             f"2, got {max_set_size!r}.")
        self.epsilon = check_epsilon(epsilon)
        self.top_k = check_top_k(top_k)
        if oracle not in ("auto", "grr", "olh"):
            raise ValueError(f"oracle must be 'auto', 'grr' or 'olh', got {oracle!r}.")
        self.oracle = oracle
        self.items = None if items is None else list(items)
        if self.items is not None and len(self.items) != self.n_items:
            raise ValueError(f"items must list {self.n_items} labels, got {len(self.items)}.")
        self.n_candidates = check_n_candidates(n_candidates, self.top_k)
        if not isinstance(size_correction, bool):
            raise ValueError(f"size_correction must be True or False, got {size_correction!r}.")
        self.size_correction = size_correction

    def _rounds_oracle(self, n_values, pad):
        return SetItemMechanism(n_values, pad, self.epsilon, self.oracle,
                                min(self.max_set_size, n_values))

    def plan(self, sets, rng):
        """The server's steps 1-4 on the users of their groups (see the module docstring).

        Parameters
        ----------
        sets : FlatSets, tuple (lengths, items) or 2-D array of int
            Every user's set.
        rng : numpy.random.Generator
            The split and the reports.

        Returns
        -------
        ItemsetPlan
        """
        flat = check_sets(sets, self.n_items, self.max_set_size)
        groups = split_users(flat.lengths.size, rng)
        # 1. Candidates: one item per user (pad length 1), the 2k largest counts.
        n_item_candidates = min(2 * self.top_k, self.n_items)
        first = SetItemMechanism(self.n_items, 1, self.epsilon, self.oracle, self.max_set_size)
        counts = first.estimate(first.aggregate(
            first.randomize(select_users(flat, groups["candidates"]), rng)))
        candidates = top_indices(counts, n_item_candidates)
        # 2. Sizes of the intersections with the candidates: the pad length.
        cap = min(self.max_set_size, n_item_candidates)
        sized = restrict_sets(select_users(flat, groups["item_sizes"]), candidates,
                              self.n_items)
        pad, sizes = size_round(sized.lengths, cap, self.epsilon, rng)
        item_factor = size_correction_factor(sizes, pad) if self.size_correction else 1.0
        # 3. Items: the candidates' counts from the intersections, the k largest.
        second = self._rounds_oracle(n_item_candidates, pad)
        statistic = second.aggregate(second.randomize(
            restrict_sets(select_users(flat, groups["items"]), candidates, self.n_items), rng))
        # The uncorrected counts choose (a common factor could only flip float near-ties).
        item_counts = second.estimate(statistic)
        n_reports = second.n_reports(statistic)
        best = top_indices(item_counts, min(self.top_k, n_item_candidates))
        frequent = candidates[best]
        # 4. Candidate itemsets and their sizes.
        shares = item_counts[best] / max(n_reports, 1)
        positions = candidate_itemsets(shares, self.n_candidates, self.max_set_size)
        if not positions:
            raise ValueError(f"no itemset of 2 items can be formed from top_k={self.top_k} "
                             "frequent item: raise top_k to at least 2.")
        itemsets = [tuple(sorted(int(frequent[p]) for p in itemset)) for itemset in positions]
        held = contained_itemsets(restrict_sets(select_users(flat, groups["itemset_sizes"]),
                                                frequent, self.n_items), positions)
        cap = len(itemsets)
        itemset_pad, itemset_sizes = size_round(held.lengths, cap, self.epsilon, rng)
        labels = [tuple(self.items[code] if self.items is not None else code
                        for code in itemset) for itemset in itemsets]
        mechanism = ItemsetRoundMechanism(cap, itemset_pad, self.epsilon, self.oracle, cap,
                                          labels, itemset_sizes)
        return ItemsetPlan(candidates, pad, item_factor * item_counts,
                           item_factor * second.std_errors(statistic), item_factor,
                           n_reports, frequent, itemsets, mechanism, groups)

    def itemset_records(self, plan, sets):
        """The "sets" the itemset round reports: per user, the indices of ``plan``'s candidate
        itemsets its set contains (checked sets of this protocol's items)."""
        flat = check_sets(sets, self.n_items, self.max_set_size)
        position = {code: p for p, code in enumerate(plan.frequent_items.tolist())}
        local = [tuple(position[code] for code in itemset) for itemset in plan.itemsets]
        return contained_itemsets(restrict_sets(flat, plan.frequent_items, self.n_items),
                                  local)

    def run(self, sets, rng):
        """The whole protocol: :meth:`plan`, then the itemset round's reports of its users.

        Returns
        -------
        plan : ItemsetPlan
        reports : ndarray
            The reports of ``plan.mechanism`` (one per user of the itemset group).
        """
        flat = check_sets(sets, self.n_items, self.max_set_size)
        plan = self.plan(flat, rng)
        records = self.itemset_records(plan, select_users(flat, plan.groups["itemsets"]))
        return plan, plan.mechanism.randomize(records, rng)


def applied_size_factor(mechanism, size_correction=True):
    """The long-set correction :func:`itemset_frequencies` applies: ``mechanism.size_factor``
    (1 for a mechanism without one), or 1 when ``size_correction`` is False."""
    return float(getattr(mechanism, "size_factor", 1.0)) if size_correction else 1.0


def itemset_frequencies(mechanism, statistic, size_correction=True):
    """The estimated frequency of each candidate itemset and its standard error.

    Parameters
    ----------
    mechanism : SetItemMechanism
        The itemset round's mechanism; an :class:`ItemsetRoundMechanism` carries its size
        round's long-set correction ``size_factor``.
    statistic : array-like of int
        Its aggregate of the itemset reports.
    size_correction : bool, default=True
        Multiply both outputs by ``mechanism.size_factor`` (1 for a mechanism without it).

    Returns
    -------
    frequencies, std_errors : ndarray
        The count over ``N`` (without the correction: unbiased when no user contains more
        candidates than the pad length; with it: see :func:`size_correction_factor`), and
        the analytic standard error at the uncorrected estimate, times the same factor
        (the factor's own noise is left out, a second-order term).

    Examples
    --------
    >>> mechanism = ItemsetRoundMechanism(4, 2, 1.0, size_counts=[0, 50, 30, 15, 5])
    >>> statistic = mechanism.aggregate(mechanism.randomize(
    ...     (np.full(100, 2), np.tile([0, 1], 100)), np.random.default_rng(0)))
    >>> plain, _ = itemset_frequencies(mechanism, statistic, size_correction=False)
    >>> corrected, _ = itemset_frequencies(mechanism, statistic)
    >>> bool(np.allclose(corrected, plain * mechanism.size_factor))
    True
    """
    _, n_users = support_estimate(mechanism.oracle, statistic)
    n = max(n_users, 1)
    factor = applied_size_factor(mechanism, size_correction)
    return (factor * mechanism.estimate(statistic) / n,
            factor * mechanism.std_errors(statistic) / n)


# ---------------------------------------------------------------------- deployment (phase 2)
ITEMSETS_KIND = "itemsets"
ITEMSETS_SPEC_VERSION = 1


def itemset_spec(item_frequencies, items, max_set_size, epsilon, top_k=DEFAULT_TOP_K,
                 pad_length=None, oracle="auto", n_candidates=None):
    """The specification of the itemset round, built from a phase-1 estimate of the items.

    The ``top_k`` items of largest estimated frequency are the frequent items and the
    candidate itemsets are :func:`candidate_itemsets` of their frequencies (``n_candidates``
    of them, each of at most ``max_set_size`` items), listed by their items' labels. Clients
    (``Randomizer.from_json`` of :mod:`sklearn_ldp.deploy.client`, or the JavaScript client)
    take it, compute which candidates their set contains and report one of them through
    the ``"set_items"`` specification it carries.

    Parameters
    ----------
    item_frequencies : pandas.Series or dict
        The estimated frequency of items (labels -> float), e.g.
        ``SetFrequencyEstimator().frequencies_`` or ``LDPEncoder.item_frequencies_
        ["frequency"]``; every label must be among ``items``.
    items : list
        Every declared item's label (JSON values): a client refuses a set holding another.
    max_set_size : int
        The cap on a set's size.
    epsilon : float
        The budget of an itemset report.
    top_k : int, default=10
        The number of frequent items; ``2 top_k`` candidate itemsets.
    pad_length : int, optional
        The pad length (a size round's 90th percentile, :func:`~.svim.pad_length_round`);
        default: the number of candidates (no user's list is subsampled).
    oracle : {"auto", "grr", "olh"}, default="auto"
        The frequency oracle over the candidates and the dummies.
    n_candidates : int, optional
        The number of candidate itemsets (default ``2 top_k``, the paper's; see
        :class:`FrequentItemsets` for the trade-off).

    Returns
    -------
    dict
        ``{"version", "mechanism": "itemsets", "epsilon", "n_inputs", "params": {"items",
        "max_set_size", "candidates"}, "set_items"}``: JSON-serializable.

    Raises
    ------
    ValueError
        A label of ``item_frequencies`` outside ``items``, a frequency that is not a finite
        number, ``top_k`` outside ``[1, 62]``, fewer than 2 items.

    Examples
    --------
    >>> spec = itemset_spec({"mail": 0.6, "maps": 0.5, "chat": 0.2},
    ...                     ["mail", "maps", "chat", "news"], 3, epsilon=2.0, top_k=3)
    >>> spec["params"]["candidates"]
    [['mail', 'maps'], ['mail', 'chat'], ['maps', 'chat'], ['mail', 'maps', 'chat']]
    >>> itemset_round_mechanism(spec).items[0]
    ('mail', 'maps')
    """
    items = list(items)
    top_k = check_top_k(top_k)
    labels = list(item_frequencies.keys())
    values = np.array([item_frequencies[label] for label in labels], dtype=float)
    if not np.all(np.isfinite(values)):
        bad = labels[int(np.argmin(np.isfinite(values)))]
        raise ValueError(f"item_frequencies: the frequency of {bad!r} is "
                         f"{item_frequencies[bad]!r}, not a finite number.")
    codes = _codes_of(labels, items, "item_frequencies")
    best = top_indices(values, min(top_k, len(labels)))
    positions = candidate_itemsets(values[best], check_n_candidates(n_candidates, top_k),
                                   check_size_cap(max_set_size))
    candidates = [[items[codes[best[p]]] for p in itemset] for itemset in positions]
    n_candidates = len(candidates)
    if n_candidates == 0:
        raise ValueError("no itemset of 2 items can be formed: item_frequencies must list at "
                         "least 2 items and top_k be at least 2.")
    pad = n_candidates if pad_length is None else pad_length
    return itemset_round_spec(items, max_set_size, candidates, SetItemMechanism(
        n_candidates, pad, epsilon, oracle, n_candidates))


def itemset_round_spec(items, max_set_size, candidates, mechanism):
    """The specification of an itemset round: ``candidates`` (lists of item labels) reported
    through ``mechanism`` (a :class:`~.svim.SetItemMechanism` over their indices), checked
    by :func:`check_itemset_spec` before it is returned (a ValueError names a fault)."""
    inner = SetItemMechanism(mechanism.n_inputs, mechanism.pad_length, mechanism.epsilon,
                             mechanism.oracle_name, mechanism.max_set_size)  # without labels
    spec = {"version": ITEMSETS_SPEC_VERSION, "mechanism": ITEMSETS_KIND,
            "epsilon": inner.epsilon, "n_inputs": inner.n_inputs,
            "params": {"items": list(items), "max_set_size": int(max_set_size),
                       "candidates": [list(itemset) for itemset in candidates]},
            "set_items": inner.to_dict()}
    check_itemset_spec(spec)
    return spec


def _codes_of(labels, items, name):
    """The positions of ``labels`` among ``items`` (labels compared with their types, as
    JSON keeps them), or a ValueError naming the first unknown label."""
    index = {}
    for code, item in enumerate(items):
        if item is not None and not isinstance(item, str | numbers.Number):
            raise ValueError(f"{name}: the item {str(item)[:40]} is not a JSON label (a "
                             "string, number, boolean or null).")
        if (type(item), item) in index:
            raise ValueError(f"{name}: the item {item!r} is listed twice in items.")
        index[(type(item), item)] = code
    codes = []
    for label in labels:
        code = index.get((type(label), label)) if not isinstance(label, list | dict) else None
        if code is None:
            raise ValueError(f"{name}: the item {label!r} is not among the declared items "
                             f"({str(items)[:60]}).")
        codes.append(code)
    return codes


def check_itemset_spec(spec):
    """The checked parts of an itemset specification, or a ValueError naming the fault.

    Parameters
    ----------
    spec : dict
        :func:`itemset_spec`'s output, possibly from another party.

    Returns
    -------
    items : list
        The declared items.
    max_set_size : int
    candidates : list of tuple of int
        Each candidate itemset as increasing item codes.
    mechanism : SetItemMechanism
        The ``"set_items"`` mechanism over the candidate indices.

    Raises
    ------
    ValueError
        A wrong kind or version, an item listed twice, a candidate with an unknown item, an
        item listed twice in it, fewer than 2 items or more than ``max_set_size``, a
        candidate listed twice, or a ``"set_items"`` part that is not over the candidates.

    Examples
    --------
    >>> spec = itemset_spec({"a": 0.5, "b": 0.4}, ["a", "b", "c"], 2, 1.0, top_k=2)
    >>> spec["params"]["candidates"].append(["b", "a"])
    >>> check_itemset_spec(spec)
    Traceback (most recent call last):
    ...
    ValueError: itemset spec: the candidate ['b', 'a'] is listed twice.
    """
    if not isinstance(spec, dict) or spec.get("mechanism") != ITEMSETS_KIND \
            or spec.get("version") != ITEMSETS_SPEC_VERSION:
        raise ValueError(f"not an {ITEMSETS_KIND!r} specification of version "
                         f"{ITEMSETS_SPEC_VERSION}: {str(spec)[:80]!r}.")
    params = spec.get("params")
    if not isinstance(params, dict) or set(params) != {"items", "max_set_size", "candidates"}:
        raise ValueError(f"malformed params of the {ITEMSETS_KIND!r} specification: "
                         f"{str(params)[:80]!r}.")
    items, cap, listed = params["items"], params["max_set_size"], params["candidates"]
    if not isinstance(items, list) or len(items) < 2:
        raise ValueError(f"itemset spec: items must list at least 2 labels, got "
                         f"{str(items)[:60]!r}.")
    _codes_of([], items, "itemset spec")  # an item listed twice is refused
    cap = check_size_cap(cap)
    if not isinstance(listed, list) or not listed:
        raise ValueError(f"itemset spec: candidates must be a non-empty list, got "
                         f"{str(listed)[:60]!r}.")
    candidates, seen = [], set()
    for itemset in listed:
        if not isinstance(itemset, list) or not 2 <= len(itemset) <= cap:
            raise ValueError(f"itemset spec: the candidate {str(itemset)[:60]} must list 2 to "
                             f"max_set_size={cap} items.")
        codes = tuple(sorted(_codes_of(itemset, items, "itemset spec")))
        if len(set(codes)) != len(codes):
            raise ValueError(f"itemset spec: the candidate {itemset!r} lists an item twice.")
        if codes in seen:
            raise ValueError(f"itemset spec: the candidate {itemset!r} is listed twice.")
        seen.add(codes)
        candidates.append(codes)
    mechanism = SetItemMechanism.from_dict(spec.get("set_items"))
    if mechanism.n_inputs != len(candidates) or mechanism.items is not None \
            or mechanism.max_set_size != len(candidates) or spec.get("n_inputs") != len(
                candidates) or spec.get("epsilon") != mechanism.epsilon:
        raise ValueError(f"itemset spec: the 'set_items' part of the {ITEMSETS_KIND!r} "
                         f"specification must be over its {len(candidates)} candidates "
                         "(n_inputs and max_set_size), without labels, at its epsilon.")
    return items, cap, candidates, mechanism


def itemset_round_mechanism(spec, size_counts=None):
    """The itemset round's mechanism of a (checked) specification, each candidate labelled by
    the tuple of its items: what :class:`~sklearn_ldp.ItemsetEstimator` decodes (the
    reports of clients are ``reports_from_client(sent, mechanism)``).

    ``size_counts``: the server's estimate of the size round that chose the pad length
    (:func:`size_round`'s second output: users containing ``0 .. n_candidates`` candidates),
    for the long-set correction of :func:`itemset_frequencies`; without it, no correction.
    """
    mechanism = check_itemset_spec(spec)[3]
    # The labels as the spec lists them, in its order (the clients' candidate indices).
    labels = [tuple(itemset) for itemset in spec["params"]["candidates"]]
    return ItemsetRoundMechanism(mechanism.n_inputs, mechanism.pad_length, mechanism.epsilon,
                                 mechanism.oracle_name, mechanism.max_set_size, labels,
                                 size_counts)
