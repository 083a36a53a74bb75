"""ItemsetEstimator: the frequency of each candidate itemset (pairs, triples ... of items held
together), from the itemset round of SVSM.

The reports are those of :class:`~sklearn_ldp.mechanisms.set_valued.svim.SetItemMechanism`
over the candidate-itemset indices, each labelled by the tuple of its items (an
``LDPEncoder`` over an ``("itemsets", items, ...)`` column, or
:func:`~sklearn_ldp.mechanisms.set_valued.svsm.itemset_round_mechanism` of a deployed
phase 2); the math is :func:`~sklearn_ldp.mechanisms.set_valued.svsm.itemset_frequencies`.
"""

import numbers

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_is_fitted

from ..mechanisms.set_valued.svim import SetItemMechanism
from ..mechanisms.set_valued.svsm import applied_size_factor, itemset_frequencies
from .set_valued import _AdditiveEstimator


class ItemsetEstimator(_AdditiveEstimator):
    """Frequent itemsets of set-valued data under LDP (SVSM's itemset round).

    Every user holds a set of items; the users of the itemset round each report one of the
    candidate itemsets their set contains (padded with dummies to the public pad length and
    sampled exactly uniformly) through a frequency oracle. The estimator returns the share of
    users whose set contains each candidate itemset, its standard error and the ``top_k``
    itemsets.

    Parameters
    ----------
    top_k : int, default=10
        The number of itemsets in :attr:`top_itemsets_`.
    size_correction : bool, default=True
        Multiply each frequency and standard error by the long-set correction ``u_L =
        sum_l g_l l / sum_l g_l min(l, L)`` of the size round that chose the pad length ``L``
        (``g_l``: its estimated number of users containing ``l`` candidates), which the
        mechanism carries (an ``LDPEncoder``'s, or ``itemset_round_mechanism(spec,
        size_counts)`` of a deployment); a mechanism without it is decoded uncorrected.
        The corrected estimate is unbiased when the chance of containing an itemset is
        proportional to the number ``l`` of candidates a user contains.

    Attributes
    ----------
    mechanism_ : SetItemMechanism
        The itemset round's mechanism (its ``items`` are the candidate itemsets).
    statistic_ : ndarray of int64
        The additive statistic of every report fitted.
    n_reports_ : int
        The number of itemset reports ``N``.
    size_factor_ : float
        The long-set correction applied (1 when ``size_correction=False`` or the mechanism
        carries no size estimate).
    itemsets_ : pandas.DataFrame
        One row per candidate itemset: ``itemset`` (a tuple of item labels), ``frequency``
        (the share of users containing it, times ``size_factor_``: uncorrected, unbiased when
        no user contains more candidate itemsets than the pad length) and ``std_error`` (the
        analytic one, at the estimate, times ``size_factor_``).
    top_itemsets_ : pandas.DataFrame
        The ``top_k`` rows of :attr:`itemsets_` of largest frequency, largest first.
    n_invalid_reports_ : int
        Reports dropped as invalid at collection.

    See Also
    --------
    sklearn_ldp.LDPEncoder : Runs the rounds of an ``("itemsets", items, max_set_size)``
        column.
    SetFrequencyEstimator : Item frequencies of set-valued data (SVIM).

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset
       mining", IEEE S&P 2018 (SVSM).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_ldp import LDPEncoder
    >>> apps = ["mail", "maps", "chat", "news", "games", "music"]
    >>> df = pd.DataFrame({"apps": [{"mail", "maps", "chat"}] * 20_000
    ...                    + [{"mail", "maps"}] * 10_000 + [{"news", "games"}] * 10_000})
    >>> pipe = make_pipeline(
    ...     LDPEncoder(categories={"apps": ("itemsets", apps, 3, 3)}, epsilon=4.0,
    ...                random_state=0),
    ...     ItemsetEstimator(top_k=2))
    >>> estimator = pipe.fit(df)[-1]
    >>> estimator.top_itemsets_.round(2)  # truly 0.75 and 0.5  # doctest: +NORMALIZE_WHITESPACE
                  itemset  frequency  std_error
    0        (mail, maps)       0.73       0.01
    1  (mail, maps, chat)       0.52       0.01
    """

    _mechanism_class = SetItemMechanism  # whose items are itemsets (checked in _decode)
    _expects = ("the itemset round's reports (an LDPEncoder over categories={'apps': "
                "('itemsets', items, max_set_size)})")
    strategy = None  # fit takes reports (the rounds run in LDPEncoder)

    def __init__(self, top_k=10, size_correction=True):
        self.top_k = top_k
        self.size_correction = size_correction

    def _check_params(self):
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, numbers.Integral) \
                or self.top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {self.top_k!r}.")
        if not isinstance(self.size_correction, bool):
            raise ValueError(f"size_correction must be True or False, got "
                             f"{self.size_correction!r}.")

    def _decode(self):
        mechanism, statistic = self.mechanism_, self.statistic_
        labels = mechanism.items
        if labels is None or not all(isinstance(label, tuple | list) and len(label) >= 2
                                     for label in labels):
            raise ValueError(f"ItemsetEstimator decodes {self._expects}; the mechanism's items "
                             f"{str(labels)[:60]} are not itemsets of 2 or more items.")
        self.n_reports_ = mechanism.n_reports(statistic)
        frequencies, std_errors = itemset_frequencies(mechanism, statistic,
                                                      self.size_correction)
        self.size_factor_ = applied_size_factor(mechanism, self.size_correction)
        self.itemsets_ = pd.DataFrame({"itemset": [tuple(label) for label in labels],
                                       "frequency": frequencies, "std_error": std_errors})
        order = np.argsort(-frequencies, kind="stable")[:self.top_k]
        self.top_itemsets_ = self.itemsets_.iloc[order].reset_index(drop=True)

    def predict(self, itemsets):
        """The estimated frequency of each of ``itemsets`` (candidate itemsets only).

        Parameters
        ----------
        itemsets : list of tuple
            Itemsets as tuples (or lists, sets) of item labels, in any order.

        Returns
        -------
        pandas.DataFrame
            ``itemset`` (as :attr:`itemsets_` lists it), ``frequency`` and ``std_error``, one
            row per requested itemset.

        Raises
        ------
        ValueError
            For an itemset that is not a candidate (its frequency was not collected).
        """
        check_is_fitted(self, "mechanism_")
        rows = {frozenset(map(repr, itemset)): i
                for i, itemset in enumerate(self.itemsets_["itemset"])}
        chosen = []
        for itemset in itemsets:
            key = frozenset(map(repr, itemset)) if not isinstance(itemset, str) else None
            if key not in rows:
                raise ValueError(f"the itemset {itemset!r} is not among the candidate itemsets "
                                 f"({str(list(self.itemsets_['itemset']))[:80]}...).")
            chosen.append(rows[key])
        return self.itemsets_.iloc[chosen].reset_index(drop=True)
