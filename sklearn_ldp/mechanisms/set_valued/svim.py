"""SVIM item frequencies: how many users hold each item, from one padded-and-sampled item each.

:class:`SetItemMechanism` (kind ``"set_items"``) is the item round of SVIM (Wang, Li and Jha,
S&P 2018): each user pads its set to the public length ``L`` and reports one element of the
padded set through a frequency oracle over ``d + L`` values (:mod:`.padding`); the server
scales the oracle's count of each item by ``L``. :func:`pad_length_round` is the size round
that chooses ``L``: a share of the users report their set's size through a frequency oracle
over ``0 .. max_set_size``, and ``L`` is the 90th percentile of the estimated sizes (the
paper's rule). SVIM's first step, which narrows the items to ``2k`` candidates before the
size round, is not run here: the item domain is declared and the frequency of every item is
estimated (the candidate step, for top-``k`` mining, runs in
:class:`~.svsm.FrequentItemsets`).

References
----------
.. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset mining",
   IEEE S&P 2018.
.. [2] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols for
   frequency estimation", USENIX Security 2017 (the oracles).
"""

import numpy as np

from ..._validation import check_positive_int
from .._base.headers import check_spec_header
from .._base.mechanism import Mechanism
from ..oracles.local_hashing import OptimizedLocalHashing
from .padding import (
    MAX_SET_SIZE,
    PAD_QUANTILE,
    check_sets,
    check_size_cap,
    item_oracle,
    pad_length_from_sizes,
    padded_law,
    sample_padded,
    support_estimate,
    support_variance,
)

SET_ITEMS_KIND = "set_items"
SET_ITEMS_SPEC_VERSION = 1


class SetItemMechanism(Mechanism):
    """Item frequencies of set-valued data by padding and sampling (SVIM's item round).

    A user's record is a set of items in ``[0, n_items)`` with at most ``max_set_size``
    items. It is padded with dummy items to ``pad_length`` elements, one element is drawn
    exactly uniformly, and that value in ``[0, n_items + pad_length)`` is reported through
    randomized response (``"grr"``) or optimized local hashing (``"olh"``). ``estimate``
    returns ``pad_length`` times the oracle's unbiased count of each item: the number of
    users holding it, unbiased when no set is longer than ``pad_length`` (a longer set's
    items are each reported with probability ``1 / s`` instead of ``1 / L``, so they are
    undercounted by the factor ``L / s``).

    Parameters
    ----------
    n_items : int
        The number of declared items ``d``.
    pad_length : int
        The public pad length ``L``, in ``[1, 4096]`` (:func:`pad_length_round` chooses it).
    epsilon : float
        The privacy budget of the report (``epsilon``-LDP for the whole set).
    oracle : {"auto", "grr", "olh"}, default="auto"
        The frequency oracle over ``d + L`` values; ``"auto"`` takes randomized response
        when ``d + L < 3 e^eps + 2``, optimized local hashing otherwise.
    max_set_size : int, optional
        The cap on a set's size (longer sets are refused); default ``min(n_items, 4096)``.
    items : list, optional
        The items' public labels (JSON values), for labelled answers; default ``0 .. d-1``.

    Attributes
    ----------
    oracle : Mechanism
        The frequency oracle over ``n_items + pad_length`` values.
    n_inputs : int
        ``n_items`` (the length of :meth:`estimate`).

    See Also
    --------
    pad_length_round : The size round that chooses ``pad_length``.
    sklearn_ldp.SetFrequencyEstimator : The estimator of these reports.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset
       mining", IEEE S&P 2018 (padding and sampling, SVIM).

    Examples
    --------
    >>> mechanism = SetItemMechanism(4, pad_length=2, epsilon=2.0)
    >>> sets = np.array([[0, 1], [0, -1], [2, 3]] * 2000)   # rows padded with -1
    >>> reports = mechanism.randomize(sets, np.random.default_rng(0))
    >>> counts = mechanism.estimate(mechanism.aggregate(reports))
    >>> counts.round(-2).tolist()   # truly 4000, 2000, 2000, 2000 users hold them
    [4000.0, 2000.0, 1900.0, 2200.0]
    >>> mechanism.std_errors(mechanism.aggregate(reports)).round(-1).tolist()
    [130.0, 110.0, 110.0, 110.0]
    """

    kind = SET_ITEMS_KIND

    def __init__(self, n_items, pad_length, epsilon, oracle="auto", max_set_size=None,
                 items=None):
        self.n_inputs = check_positive_int(n_items, "n_items")
        self.pad_length = check_size_cap(pad_length, "pad_length")
        if max_set_size is None:
            max_set_size = min(self.n_inputs, MAX_SET_SIZE)
        self.max_set_size = check_size_cap(max_set_size)
        self.oracle = item_oracle(self.n_inputs + self.pad_length, epsilon, oracle)
        self.epsilon = self.oracle.epsilon
        self.oracle_name = "olh" if isinstance(self.oracle, OptimizedLocalHashing) else "grr"
        if items is not None:
            items = list(items)
            if len(items) != self.n_inputs or len(set(map(repr, items))) != len(items):
                raise ValueError(f"items must list {self.n_inputs} distinct labels, got "
                                 f"{len(items)} ({str(items)[:60]}).")
        self.items = items
        self.name = self.kind
        self.params = {"pad_length": self.pad_length, "oracle": self.oracle_name,
                       "max_set_size": self.max_set_size, "items": items}

    # ------------------------------------------------------------------ client side
    def randomize(self, sets, rng):
        """Privatize one set per user: pad, sample one element exactly, run the oracle.

        Parameters
        ----------
        sets : FlatSets, tuple (lengths, items) or 2-D array of int
            One set per user (:func:`~.padding.check_sets`), items in ``[0, n_items)``.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray
            The oracle's reports (cell indices for ``"grr"``, ``[seed, bucket]`` rows for
            ``"olh"``), one per user.
        """
        flat = check_sets(sets, self.n_inputs, self.max_set_size)
        values = sample_padded(flat, self.n_inputs, self.pad_length, rng)
        return self.oracle.randomize(values, rng)

    def exact_law(self, value, **oracle_options):
        """The exact law of one user's report given its set (a list of items, ``-1``
        padding allowed): the oracle's laws mixed over the padded set (``olh``: given the
        seeds of ``oracle_options``, default ``0 .. 7``)."""
        row = np.asarray(value, dtype=np.int64).reshape(1, -1)
        flat = check_sets(row, self.n_inputs, self.max_set_size)
        return padded_law(lambda v: self.oracle.exact_law(v, **oracle_options),
                          flat.items, self.n_inputs, self.pad_length)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # The oracle's valid reports over n_items + pad_length values.
        return self.oracle.report_validity(reports)

    def empty_reports(self):
        """Zero reports in the oracle's layout."""
        return np.asarray(self.oracle.randomize(np.zeros(1, dtype=np.int64),
                                                np.random.default_rng(0)))[:0]

    def aggregate(self, reports):
        """The oracle's statistic: support counts of the ``d + L`` values, then ``N``."""
        return self.oracle.aggregate(reports)

    def check_statistic(self, statistic):
        """The statistic as int64 after the oracle's checks (a ValueError otherwise)."""
        return self.oracle._check_statistic(statistic)

    def n_reports(self, statistic):
        return self.oracle.n_reports(statistic)

    def estimate(self, statistic):
        """Estimated number of users holding each item: ``L`` times the oracle's unbiased
        support estimate of the item (unbiased when no set exceeds ``L``).

        Parameters
        ----------
        statistic : array-like of int
            :meth:`aggregate`'s output, or a sum of several.

        Returns
        -------
        ndarray of shape (n_items,)
            Users per item (floats; some may be negative).
        """
        counts, _ = support_estimate(self.oracle, statistic)
        return self.pad_length * counts[:self.n_inputs]

    def count_variance(self, n_users, held):
        """The variance of :meth:`estimate` for each item when ``held`` of the ``n_users``
        hold it, every set at most ``pad_length`` long (exact, analytic).

        Parameters
        ----------
        n_users : int
            The number of reports.
        held : array-like of float
            Users holding each item.

        Returns
        -------
        ndarray
            ``L^2 N q (1 - q) / (p - q)^2 + L n_x (1 - 2q) / (p - q) - n_x`` per item.
        """
        return support_variance(self.oracle, n_users, held, self.pad_length)

    def std_errors(self, statistic):
        """Standard errors of :meth:`estimate`: :meth:`count_variance` at the estimated
        counts (clipped to ``[0, N]``)."""
        n_users = self.n_reports(statistic)
        held = np.clip(self.estimate(statistic), 0, n_users)
        return np.sqrt(np.maximum(self.count_variance(n_users, held), 0.0))

    def per_user_variance(self, gram=None):
        """``(worst, average)`` variance that one user adds to an item's count: an item no
        user holds, and one every user holds (the count's variance is ``N`` times it)."""
        return (float(self.count_variance(1, 1.0)), float(self.count_variance(1, 0.0)))

    # ------------------------------------------------------------------ specification
    def to_dict(self):
        """The specification: the oracle's own (what clients run on the sampled value) in
        ``"oracle"``, and the padding parameters."""
        return {"version": SET_ITEMS_SPEC_VERSION, "mechanism": self.kind,
                "epsilon": self.epsilon, "n_inputs": self.n_inputs, "params": dict(self.params),
                "oracle": self.oracle.to_dict()}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`; an oracle specification that differs from the one
        the parameters give is refused."""
        check_spec_header(spec, SET_ITEMS_KIND, SET_ITEMS_SPEC_VERSION)
        params = spec.get("params")
        if not isinstance(params, dict) or set(params) != {"pad_length", "oracle",
                                                           "max_set_size", "items"}:
            raise ValueError(f"malformed params of the 'set_items' specification: "
                             f"{str(params)[:80]!r}.")
        mechanism = cls(spec.get("n_inputs"), params["pad_length"], spec.get("epsilon"),
                        params["oracle"], params["max_set_size"], params["items"])
        if spec.get("oracle") != mechanism.oracle.to_dict():
            raise ValueError("the 'oracle' of the 'set_items' specification differs from the "
                             "one its epsilon and params give: an edited oracle is refused.")
        return mechanism

    def __repr__(self):
        return (f"SetItemMechanism(n_items={self.n_inputs}, pad_length={self.pad_length}, "
                f"epsilon={self.epsilon}, oracle={self.oracle_name!r})")


def size_oracle(max_set_size, epsilon):
    """The frequency oracle of the size round, over the sizes ``0 .. max_set_size``."""
    return item_oracle(check_size_cap(max_set_size) + 1, epsilon)


def pad_length_round(sizes, max_set_size, epsilon, rng, quantile=PAD_QUANTILE):
    """The size round: each user reports its set's size; ``L`` is the estimated percentile.

    Parameters
    ----------
    sizes : array-like of int
        The set sizes of the users of this round, in ``[0, max_set_size]``.
    max_set_size : int
        The declared cap.
    epsilon : float
        The budget of each size report (these users report nothing else).
    rng : numpy.random.Generator
        The source of randomness.
    quantile : float, default=0.9
        The paper's 90th percentile.

    Returns
    -------
    pad_length : int
        The smallest ``L >= 1`` whose estimated share of sets of at most ``L`` items
        reaches ``quantile``.
    reports : ndarray
        The size reports (the size oracle's layout).

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset
       mining", IEEE S&P 2018 (the 90th-percentile rule).

    Examples
    --------
    >>> sizes = np.repeat([1, 2, 3, 8], [4000, 3000, 2500, 500])
    >>> pad_length_round(sizes, 10, 4.0, np.random.default_rng(0))[0]
    3
    """
    oracle = size_oracle(max_set_size, epsilon)
    sizes = np.asarray(sizes)
    if sizes.ndim != 1 or (sizes.size and sizes.dtype.kind not in "iu"):
        raise ValueError(f"sizes must be a 1-D integer array, got shape {sizes.shape}.")
    if sizes.size and (sizes.min() < 0 or sizes.max() > max_set_size):
        bad = int(np.argmax((sizes < 0) | (sizes > max_set_size)))
        raise ValueError(f"sizes: user {bad} has the size {int(sizes[bad])}, outside "
                         f"[0, {max_set_size}].")
    reports = oracle.randomize(sizes, rng)
    counts, _ = support_estimate(oracle, oracle.aggregate(reports))
    return pad_length_from_sizes(counts, quantile), reports
