"""SetFrequencyEstimator (how often each item occurs in the users' sets, from the reports of
an ``LDPEncoder`` over a set-valued column, SVIM) and KeyValueEstimator (each key's frequency
and mean from PCKV-GRR reports).

The math is that of :mod:`sklearn_ldp.mechanisms.set_valued`; this module sums the additive
statistics over batches, decodes them and labels the items.
"""

import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import check_nesting
from ..mechanisms.set_valued.pckv import KeyValueMechanism, key_value_docstring
from ..mechanisms.set_valued.svim import SetItemMechanism
from ..reports import AggregatedReports
from ._base import check_batch, forget_fitted, record_invalid, reports_or_privatized, start_batches


class _AdditiveEstimator(BaseEstimator):
    """``fit`` / ``partial_fit`` of an estimator whose reports have an additive statistic:
    subclasses set ``_mechanism_class`` and ``_expects`` and implement ``_decode``."""

    _mechanism_class = None
    _expects = ""

    def fit(self, X, y=None):
        """Decode the reports in ``X``.

        Parameters
        ----------
        X : LDPReports, DataFrame or AggregatedReports
            The reports (or raw records when ``strategy`` is set: a simulation).
        y : None
            Ignored.

        Returns
        -------
        self : estimator
            The fitted estimator.
        """
        check_nesting(self, locals())
        forget_fitted(self, ("mechanism_", "domain_", "statistic_", "encoder_", "_first_batch",
                             "n_invalid_reports_"))
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those fitted so far and decode again.

        Parameters
        ----------
        X : LDPReports, DataFrame or AggregatedReports
            More reports of the same mechanism.
        y : None
            Ignored.

        Returns
        -------
        self : estimator
            The estimator, equal to one fit on every report seen.
        """
        check_nesting(self, locals())
        self._check_params()
        first_call = not hasattr(self, "mechanism_")
        reports = reports_or_privatized(self, X, first_call)
        mechanism = reports.mechanism
        if not isinstance(mechanism, self._mechanism_class):
            raise ValueError(f"{type(self).__name__} decodes {self._expects}; these come from "
                             f"{mechanism!r}.")
        if len(reports) == 0:
            raise ValueError("no reports to fit: X has 0 rows.")
        if not first_call:
            check_batch(self, reports)
        statistic = mechanism.check_statistic(
            reports.statistic if isinstance(reports, AggregatedReports)
            else mechanism.aggregate(reports.reports))
        if not first_call:
            statistic = mechanism.check_statistic(self.statistic_ + statistic)
        if first_call:
            self.mechanism_, self.domain_ = mechanism, None  # the items label the answers
            start_batches(self, reports)
        self.statistic_ = statistic
        self._decode()
        record_invalid(self, reports)
        return self

    def _check_params(self):
        pass

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.non_deterministic = True
        return tags


class SetFrequencyEstimator(_AdditiveEstimator):
    """Item frequencies of set-valued data under LDP (SVIM's padding and sampling).

    Each user holds a set of items (apps installed, pages visited) and sends one report: one
    element of its set padded to the public length ``L``, through a frequency oracle. The
    estimator returns, for every declared item, the share of users whose set holds it, its
    standard error and the most frequent items.

    Parameters
    ----------
    top_k : int, default=10
        The number of items in :attr:`top_items_`.
    strategy : str or None, default=None
        With ``"svim"`` (or ``"auto"``), ``fit`` takes raw sets and privatizes them itself
        (a simulation of the clients); None: ``fit`` takes reports.
    epsilon : float or None, default=None
        The budget of that simulation.
    categories : dict or None, default=None
        The declaration of that simulation, ``{"apps": ("sets", items[, max_set_size])}``.
    random_state : int, Generator or None, default=None
        Seeds that simulation.
    ledger : PrivacyLedger, str or None, default=None
        A ledger the simulation charges (as ``LDPEncoder``).
    ledger_users : str, default="all"
        The cohort the simulation charges.

    Attributes
    ----------
    mechanism_ : SetItemMechanism
        The mechanism of the reports.
    statistic_ : ndarray of int64
        The additive statistic of every report fitted.
    n_reports_ : int
        The number of item reports ``N``.
    counts_ : pandas.Series
        Estimated users holding each item (indexed by item); unbiased when no set is longer
        than the pad length.
    count_std_errors_ : pandas.Series
        Their standard errors (the analytic variance at the estimated counts).
    frequencies_ : pandas.Series
        ``counts_ / N``: the share of users holding each item.
    std_errors_ : pandas.Series
        The standard errors of ``frequencies_``.
    top_items_ : pandas.DataFrame
        The ``top_k`` items of largest estimated frequency: ``frequency``, ``std_error``.
    n_invalid_reports_ : int
        Reports dropped as invalid at collection.

    See Also
    --------
    sklearn_ldp.LDPEncoder : Privatizes a set-valued column (``("sets", items)``).
    HeavyHitterEstimator : Frequent values of one value per user.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private frequent itemset
       mining", IEEE S&P 2018 (padding and sampling, SVIM).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_ldp import LDPEncoder
    >>> apps = ["mail", "maps", "chat", "news", "games"]
    >>> df = pd.DataFrame({"apps": [{"mail", "maps"}, {"mail", "maps"},
    ...                             {"chat", "news", "mail"}, {"games"}] * 5000})
    >>> pipe = make_pipeline(
    ...     LDPEncoder(categories={"apps": ("sets", apps, 3)}, epsilon=2.0, random_state=0),
    ...     SetFrequencyEstimator(top_k=2))
    >>> estimator = pipe.fit(df)[-1]
    >>> pipe[0].pad_length_   # the 90th percentile of the estimated set sizes
    3
    >>> estimator.top_items_.round(2)  # truly 0.75 and 0.5  # doctest: +NORMALIZE_WHITESPACE
          frequency  std_error
    item
    mail       0.75       0.02
    maps       0.49       0.02
    """

    def __init__(self, top_k=10, strategy=None, epsilon=None, categories=None,
                 random_state=None, ledger=None, ledger_users="all"):
        self.top_k = top_k
        self.strategy = strategy
        self.epsilon = epsilon
        self.categories = categories
        self.random_state = random_state
        self.ledger = ledger
        self.ledger_users = ledger_users

    _mechanism_class = SetItemMechanism
    _expects = ("the reports of an LDPEncoder over a set-valued column (categories={'apps': "
                "('sets', items)})")

    def _check_params(self):
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, numbers.Integral) \
                or self.top_k < 1:
            raise ValueError(f"top_k must be a positive integer, got {self.top_k!r}.")

    def _decode(self):
        mechanism, statistic = self.mechanism_, self.statistic_
        labels = pd.Index(mechanism.items if mechanism.items is not None
                          else range(mechanism.n_inputs), name="item")
        self.n_reports_ = n = mechanism.n_reports(statistic)
        self.counts_ = pd.Series(mechanism.estimate(statistic), index=labels, name="count")
        self.count_std_errors_ = pd.Series(mechanism.std_errors(statistic), index=labels,
                                           name="count_std_error")
        self.frequencies_ = (self.counts_ / n).rename("frequency")
        self.std_errors_ = (self.count_std_errors_ / n).rename("std_error")
        order = np.argsort(-self.frequencies_.to_numpy(), kind="stable")[:self.top_k]
        self.top_items_ = pd.DataFrame({"frequency": self.frequencies_.iloc[order],
                                        "std_error": self.std_errors_.iloc[order]})

    def predict(self, items):
        """The estimated frequency of each of ``items`` (declared items only).

        Parameters
        ----------
        items : list
            Items of the declaration.

        Returns
        -------
        pandas.DataFrame
            ``frequency`` and ``std_error`` per item.

        Raises
        ------
        ValueError
            For an item that was not declared.
        """
        check_is_fitted(self, "mechanism_")
        items = list(items)
        unknown = [item for item in items if item not in self.frequencies_.index]
        if unknown:
            raise ValueError(f"the item {unknown[0]!r} is not among the declared items.")
        return pd.DataFrame({"frequency": self.frequencies_.loc[items],
                             "std_error": self.std_errors_.loc[items]})


@key_value_docstring
class KeyValueEstimator(_AdditiveEstimator):
    """Each key's frequency and the mean of its values, from PCKV-GRR or PCKV-UE reports.

    Every user holds key-value pairs (values in ``[-1, 1]``) and sends one report of
    :class:`~sklearn_ldp.mechanisms.set_valued.pckv.PCKVGRR` or
    :class:`~sklearn_ldp.mechanisms.set_valued.pckv_ue.PCKVUE`: one padded-and-sampled pair,
    its value discretized to a sign, key and sign perturbed together under one epsilon.

    Parameters
    ----------
    keys : list or None, default=None
        Labels of the keys; default: the mechanism's (those an ``LDPEncoder`` key-value column
        declares, carried by its specification, so reports rebuilt from it are labelled
        too), else ``0 .. d-1``.

    Attributes
    ----------
    mechanism_ : PCKVGRR or PCKVUE
        The mechanism of the reports.
    statistic_ : ndarray of int64
        The additive statistic of every report fitted.
    n_reports_ : int
        The number of reports ``N``.
    frequencies_ : pandas.Series
        The share of users holding each key (unbiased when no user holds more pairs than
        the pad length).
    means_ : pandas.Series
        The mean of each key's values: the value sum over the frequency, the frequency
        clipped to ``[1/N, 1]`` and the mean to ``[-1, 1]`` (the paper's correction).
    std_errors_ : pandas.DataFrame
        ``frequency`` and ``mean`` standard errors (the mean's by the delta method).
    n_invalid_reports_ : int
        Reports dropped as invalid at collection.

    See Also
    --------
    sklearn_ldp.LDPEncoder : Privatizes a key-value column (``("key_value", keys)``).
    SetFrequencyEstimator : Item frequencies of sets without values.

    <gu20 reference>

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp import LDPReports
    >>> from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR
    >>> mechanism = PCKVGRR(3, pad_length=1, epsilon=4.0, value_steps=10)
    >>> lengths, keys = np.ones(30000, dtype=int), np.repeat([0, 1, 2], 10000)
    >>> values = np.repeat([0.5, -0.5, 0.0], 10000)
    >>> rng = np.random.default_rng(0)
    >>> reports = LDPReports(mechanism.randomize((lengths, keys, values), rng), mechanism)
    >>> estimator = KeyValueEstimator(keys=["a", "b", "c"]).fit(reports)
    >>> estimator.means_.round(1).tolist()
    [0.5, -0.5, 0.0]

    Through an ``LDPEncoder`` over a column of dicts:

    >>> import pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_ldp import LDPEncoder
    >>> df = pd.DataFrame({"ratings": [{"a": 0.5}, {"a": 0.5, "b": -1.0}] * 10000})
    >>> pipe = make_pipeline(
    ...     LDPEncoder(categories={"ratings": ("key_value", ["a", "b", "c"], 2, 10)},
    ...                epsilon=4.0, random_state=0),
    ...     KeyValueEstimator())
    >>> estimator = pipe.fit(df)[-1]
    >>> estimator.frequencies_[["a", "b"]].round(1).tolist()  # truly 1 and 0.5
    [1.0, 0.5]
    >>> estimator.means_[["a", "b"]].round(1).tolist()  # truly 0.5 and -1
    [0.5, -1.0]
    """

    _mechanism_class = KeyValueMechanism
    _expects = "the reports of a PCKV-GRR or PCKV-UE mechanism (key-value pairs)"
    strategy = None  # fit takes reports (privatize records with LDPEncoder)

    def __init__(self, keys=None):
        self.keys = keys

    def _decode(self):
        mechanism, statistic = self.mechanism_, self.statistic_
        keys = list(self.keys) if self.keys is not None else (
            mechanism.keys if mechanism.keys is not None else range(mechanism.n_keys))
        if len(keys) != mechanism.n_keys:
            raise ValueError(f"keys must list the mechanism's {mechanism.n_keys} keys, got "
                             f"{len(keys)}.")
        labels = pd.Index(keys, name="key")
        self.n_reports_ = mechanism.n_reports(statistic)
        frequency, mean = mechanism.estimate(statistic)
        frequency_error, mean_error = mechanism.std_errors(statistic)
        self.frequencies_ = pd.Series(frequency, index=labels, name="frequency")
        self.means_ = pd.Series(mean, index=labels, name="mean")
        self.std_errors_ = pd.DataFrame({"frequency": frequency_error, "mean": mean_error},
                                        index=labels)
