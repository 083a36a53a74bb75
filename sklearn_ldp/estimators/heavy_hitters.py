"""HeavyHitterEstimator: the popular values of a column too large to list, and the frequency
of any value, from the reports of ``LDPEncoder(strategy="pem" | "treehist" | "cms" |
"hcms")``.

The math is that of :mod:`sklearn_ldp.mechanisms.heavy_hitters`; this module
only keeps the reports (PEM and TreeHist choose each round's candidates from the previous
round's estimates, so the server keeps every report) or the sketch (CMS and HCMS are
additive), runs the rounds and labels the results.
"""

import numbers
import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import FreshEntropyMixin, check_nesting, check_positive_int
from ..mechanisms.heavy_hitters.column import (
    MAX_INTEGER_BITS,
    MAX_STRING_BYTES,
    HeavyHitterMechanism,
)
from ..mechanisms.heavy_hitters.prefix import PROTOCOLS, PrefixHeavyHitters
from ..mechanisms.heavy_hitters.significance import (
    DEFAULT_ALPHA,
    check_alpha,
    holm_supported,
    upper_quantile,
)
from ..reports import AggregatedReports
from ._base import check_batch, forget_fitted, record_invalid, reports_or_privatized, start_batches

# Columns of heavy_hitters_ and of predict's table.
TABLE_COLUMNS = ["value", "frequency", "std_error", "count", "count_std_error"]


class HeavyHitterEstimator(FreshEntropyMixin, BaseEstimator):
    """Heavy hitters (the most frequent values) and frequencies of any value, under LDP.

    Decodes the reports of :class:`~sklearn_ldp.LDPEncoder` on one column declared as
    ``"strings"`` or by a bit length (``categories={"url": "strings"}``):

    * ``"pem"`` and ``"treehist"`` (prefix extension): every user reported a prefix of their
      value in one of the rounds (the rounds split the users at random, as the protocols
      specify); :meth:`fit` runs the rounds and finds the values without any candidate list.
    * ``"cms"`` and ``"hcms"`` (Apple's sketches): :meth:`fit` sums the sketch;
      ``heavy_hitters_`` ranks the values of ``candidates`` (a sketch cannot list values by
      itself), and :meth:`predict` estimates any value's frequency.

    Only **supported** values are returned: PEM and TreeHist estimate every value their
    rounds found again on users who took no part in finding it (the verification round's,
    and for a string that ended early every later round's), and keep it only if that
    held-out estimate is significantly above frequency 0 by Holm's test at ``alpha`` over
    all the values tested. So with probability at least ``1 - alpha`` (95% by default) no
    returned value is held by nobody, and the estimates carry no selection bias (winner's
    curse) beyond the final test's own (values near the detectable frequency). The held-out
    users are a uniform sample of all of them: ``std_error`` includes that sampling.
    Sketches test the given ``candidates`` the same way.
    When nothing passes, ``heavy_hitters_`` is empty and a warning states the smallest
    frequency these users and budget can detect (:func:`detectable_frequency`).

    Parameters
    ----------
    top_k : int or None, default=None
        Most values kept in ``heavy_hitters_``, the largest first; fewer when fewer are
        supported. None: every supported value.
    threshold : float or None, default=None
        Keep only the values whose estimated frequency (share of the users) is at least
        this, in ``(0, 1]``. PEM and TreeHist also apply it in every round (a prefix below
        it is dropped, as Wang et al. describe). None: no threshold.
    alpha : float, default=0.05
        Family-wise error rate of the final test, in ``(0, 1)``: the probability that any
        returned value has frequency 0.
    candidates : array-like or None, default=None
        Sketches: the values ``heavy_hitters_`` ranks (duplicates are dropped with a
        warning); None leaves ``heavy_hitters_`` empty (use :meth:`predict`). PEM and
        TreeHist ignore it.
    strategy, epsilon, categories : optional
        Only for fitting on raw values: the estimator privatizes them itself with an
        :class:`~sklearn_ldp.LDPEncoder` of these parameters (a simulation convenience).
    random_state : int, Generator or None, default=None
        Used only when privatizing raw values.
    ledger, ledger_users : str, path or None; str, default=None, "all"
        Privacy budget ledger charged when the estimator privatizes raw values.

    Attributes
    ----------
    heavy_hitters_ : pandas.DataFrame
        One row per value found, by decreasing estimate: ``value``, ``frequency`` (the
        estimated share of the users), ``std_error`` (its standard error), ``count`` and
        ``count_std_error`` (the same in users). Integers of up to 63 bits are int64, of 64
        bits uint64; strings are str.
    expected_error_ : pandas.DataFrame
        The analytic variance of the estimated frequency of one value for the users fitted,
        one row per value of ``heavy_hitters_``: ``worst_case`` (the largest over the
        value's frequency) and ``average_case`` (a value of frequency 0, the typical
        candidate). PEM and TreeHist: from the users who estimate that value (the
        verification round's, and every later round's for a string that ended early), with
        the variance of which users those are
        (:meth:`~sklearn_ldp.mechanisms.heavy_hitters.prefix.PrefixHeavyHitters.frequency_variance`).
        Sketches include the hash collisions, with the second moment of the counts
        estimated from the fitted sketch.
    n_tested_ : int
        Values tested by the final test (PEM, TreeHist: those the rounds found; sketches:
        the candidates).
    n_rejected_ : int
        Values tested but not supported (or below ``threshold``), left out of
        ``heavy_hitters_``.
    detectable_frequency_ : float
        The smallest frequency these reports can detect (:func:`detectable_frequency` for
        PEM and TreeHist; for sketches, the final test's cut over the candidates).
    n_impossible_ : int
        PEM and TreeHist on strings: values the last round kept that no user can hold (not
        valid UTF-8 as a whole, e.g. a character cut at the last byte; prefixes that cannot
        start a value are already dropped in every round), left out of
        ``heavy_hitters_``. 0 for integers and sketches.
    rounds_ : pandas.DataFrame
        PEM and TreeHist: one row per round, its prefix ``length``, ``users``, the
        ``candidates`` it scored and those it ``kept``; the last row is the verification
        round (the values tested). Empty for the sketches.
    n_reports_ : int
        Number of reports fitted (``n_users_`` is the same number).
    mechanism_ : HeavyHitterMechanism
        The mechanism of the reports.
    domain_ : None
        No domain is listed (kept for the estimators' shared batch checks).
    statistic_ : ndarray or None
        Sketches: the additive statistic. None for PEM and TreeHist.

    See Also
    --------
    sklearn_ldp.LDPEncoder : Privatizes the values (``strategy="pem"``, ...).
    sklearn_ldp.mechanisms.heavy_hitters.prefix.PrefixHeavyHitters : PEM and TreeHist.
    sklearn_ldp.mechanisms.heavy_hitters.sketches.SketchFrequencyOracle : CMS and HCMS.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
       identification", IEEE Transactions on Dependable and Secure Computing, 2019.
    .. [2] R. Bassily, K. Nissim, U. Stemmer and A. Thakurta, "Practical locally private heavy
       hitters", NeurIPS 2017.
    .. [3] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine
       Learning Journal, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_ldp import HeavyHitterEstimator, LDPEncoder
    >>> rng = np.random.default_rng(0)
    >>> ids = np.where(rng.random(200_000) < 0.3, 123456, rng.integers(2**20, size=200_000))
    >>> enc = LDPEncoder(categories={"user_id": 20}, strategy="pem", epsilon=4.0,
    ...                  n_candidates=4, random_state=1)
    >>> reports = enc.fit_transform(pd.DataFrame({"user_id": ids}))
    >>> top = HeavyHitterEstimator(top_k=1).fit(reports).heavy_hitters_
    >>> int(top["value"][0]), bool(abs(top["frequency"][0] - 0.3) < 4 * top["std_error"][0])
    (123456, True)
    """

    def __init__(self, top_k=None, threshold=None, alpha=DEFAULT_ALPHA, candidates=None,
                 strategy=None, epsilon=None, categories=None, random_state=None, ledger=None,
                 ledger_users="all"):
        self.top_k = top_k
        self.threshold = threshold
        self.alpha = alpha
        self.candidates = candidates
        self.strategy = strategy
        self.epsilon = epsilon
        self.categories = categories
        self.random_state = random_state
        self.ledger = ledger
        self.ledger_users = ledger_users

    # ------------------------------------------------------------------ parameters
    def _check_params(self):
        if self.top_k is not None and (isinstance(self.top_k, bool) or not isinstance(
                self.top_k, numbers.Integral) or self.top_k < 1):
            raise ValueError(f"top_k must be a positive integer or None, got {self.top_k!r}.")
        if self.threshold is not None and (isinstance(self.threshold, bool) or not isinstance(
                self.threshold, numbers.Real) or not 0 < self.threshold <= 1):
            raise ValueError(f"threshold must be a frequency in (0, 1] or None, got "
                             f"{self.threshold!r}.")
        check_alpha(self.alpha)

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None):
        """Decode the reports in ``X``: the heavy hitters and their frequencies.

        Parameters
        ----------
        X : LDPReports, DataFrame, AggregatedReports or array-like
            The reports (a DataFrame of report columns whose ``attrs`` carry the mechanism;
            an aggregate for the sketches only), or raw values when ``strategy`` is set (the
            estimator then privatizes them itself, a simulation).
        y : None
            Ignored.

        Returns
        -------
        self : HeavyHitterEstimator
            The fitted estimator.
        """
        check_nesting(self, locals())
        forget_fitted(self, ("mechanism_", "domain_", "_reports", "statistic_", "encoder_",
                             "_first_batch", "n_invalid_reports_"))
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those fitted so far and decode again.

        Parameters
        ----------
        X : LDPReports, DataFrame or AggregatedReports
            More reports of the same mechanism (as in :meth:`fit`).
        y : None
            Ignored.

        Returns
        -------
        self : HeavyHitterEstimator
            The estimator, refitted on every report seen (equal to one fit on them all).
        """
        check_nesting(self, locals())
        self._check_params()
        first_call = not hasattr(self, "mechanism_")
        reports = reports_or_privatized(self, X, first_call)
        mechanism = reports.mechanism
        if not isinstance(mechanism, HeavyHitterMechanism):
            raise ValueError(
                f"HeavyHitterEstimator decodes the reports of LDPEncoder(strategy='pem', "
                f"'treehist', 'cms' or 'hcms') on a column declared as 'strings' or a bit "
                f"length; these come from {mechanism!r}.")
        if len(reports) == 0:
            raise ValueError("no reports to fit: X has 0 rows.")
        if not first_call:
            check_batch(self, reports)
        if mechanism.prefix:
            if isinstance(reports, AggregatedReports):
                raise ValueError(f"{mechanism.strategy!r} reports have no aggregate: fit the "
                                 "LDPReports themselves.")
            stored = reports.reports if first_call else np.concatenate(
                [self._reports, reports.reports])
            fitted = self._identify(mechanism, stored)  # may refuse: nothing set yet
            counts = None
        else:
            statistic = mechanism.check_statistic(
                reports.statistic if isinstance(reports, AggregatedReports)
                else mechanism.aggregate(reports.reports))
            counts = statistic if first_call else self.statistic_ + statistic
            counts = mechanism.check_statistic(counts)
            stored = None
            fitted = self._rank_candidates(mechanism, counts)
        if first_call:
            self.mechanism_, self.domain_ = mechanism, None  # no listed domain
            start_batches(self, reports)
        self._reports, self.statistic_ = stored, counts
        for name, value in fitted.items():
            setattr(self, name, value)
        record_invalid(self, reports)
        return self

    def _identify(self, mechanism, reports):
        """PEM / TreeHist: run the rounds, test the values found; the fitted attributes."""
        oracle = mechanism.oracle
        strings = mechanism.value_type == "strings"
        n = reports.shape[0]
        # The users of the length round (strings) reported no prefix: the others are a
        # uniform sample of all the users, whose frequencies they estimate.
        reports = mechanism.prefix_reports(reports)
        if reports.shape[0] == 0:
            raise ValueError("no report of the prefix rounds: collect more users.")
        found = oracle.identify(reports, self.threshold,
                                possible_prefix=mechanism.possible_prefix if strings else None,
                                ended_prefix=mechanism.ended_prefix if strings else None,
                                n_population=n)
        # A string no user can hold (a character cut at the last byte) is a false positive
        # of the last round: left out before the test, and counted.
        possible = mechanism.possible(found["values"])
        words, counts, errors, users = (found[key][possible]
                                        for key in ("values", "counts", "std_errors", "users"))
        fitted = self._supported(mechanism, words, counts, errors,
                                 found["z"][possible], n,
                                 oracle.detectable_frequency(reports.shape[0], self.alpha),
                                 estimating=users)
        rounds = pd.DataFrame(found["rounds"], columns=["length", "users", "candidates",
                                                        "kept"])
        return {**fitted, "rounds_": rounds, "n_impossible_": int(np.count_nonzero(~possible))}

    def _supported(self, mechanism, words, counts, errors, z, n, detectable, warn=True,
                   per_user=None, estimating=None):
        """The values that pass Holm's test (and ``threshold``), at most ``top_k`` of them,
        largest first; a warning naming ``detectable`` when none does (and ``warn``: a
        sketch given no candidates has nothing to detect). ``per_user``, ``estimating``:
        see ``_expected``."""
        supported = holm_supported(z, self.alpha) if z.size else np.zeros(0, dtype=bool)
        if self.threshold is not None:
            supported &= counts >= self.threshold * n
        keep = np.flatnonzero(supported)
        keep = keep[np.argsort(-counts[keep], kind="stable")]
        if self.top_k is not None:
            keep = keep[:self.top_k]
        if keep.size == 0 and warn:
            warnings.warn(
                f"no value is supported by the {n} reports: none is significantly above "
                f"frequency 0 at alpha={self.alpha!r}"
                f"{'' if self.threshold is None else f' and threshold={self.threshold!r}'}. "
                f"With {n} users at epsilon={mechanism.epsilon:g}, frequencies below about "
                f"{detectable:.3g} cannot be detected (detectable_frequency).", UserWarning,
                stacklevel=4)
        table = self._table(mechanism, words[keep], counts[keep], errors[keep], n)
        return {"heavy_hitters_": table, "n_tested_": int(z.size),
                "n_rejected_": int(z.size - np.count_nonzero(supported)),
                "detectable_frequency_": float(detectable), "n_reports_": n, "n_users_": n,
                "expected_error_": self._expected(
                    mechanism, table, n, per_user,
                    None if estimating is None else estimating[keep])}

    def _rank_candidates(self, mechanism, counts):
        """CMS / HCMS: the candidates' estimates, tested; the fitted attributes."""
        n = mechanism.n_reports(counts)
        if self.candidates is None:
            words = np.zeros((0, mechanism.n_words), dtype=np.uint64)
        else:
            words = self._candidate_words(mechanism, self.candidates, "candidates")
        estimates, errors = mechanism.oracle.estimate_counts(counts, words)
        # A value of share 0 is the worst case here too; its collisions use the fitted data.
        oracle = mechanism.oracle
        variance = float(oracle.count_variance_per_user(
            0.0, n, min(oracle.second_moment(counts) / max(n, 1) ** 2, 1.0)))
        null = np.sqrt(max(n, 1) * variance)
        m = max(words.shape[0], 1)
        detectable = min(1.0, upper_quantile(check_alpha(self.alpha) / m) * null / max(n, 1))
        fitted = self._supported(mechanism, words, estimates, errors, estimates / null, n,
                                 detectable, warn=words.shape[0] > 0,
                                 per_user=(variance, variance))
        rounds = pd.DataFrame(columns=["length", "users", "candidates", "kept"])
        return {**fitted, "rounds_": rounds, "n_impossible_": 0}

    @staticmethod
    def _table(mechanism, words, counts, errors, n):
        values = mechanism.decode(words)
        frame = pd.DataFrame({
            "value": pd.Series(values, dtype=object if mechanism.value_type == "strings"
                               else np.asarray(values).dtype),
            "frequency": counts / n, "std_error": errors / n,
            "count": counts, "count_std_error": errors})
        return frame[TABLE_COLUMNS]

    @staticmethod
    def _expected(mechanism, table, n, per_user=None, estimating=None):
        """Analytic variance of each value's frequency for ``n`` users (see Attributes).
        ``estimating`` (PEM, TreeHist): the users who estimate each value, a uniform sample
        of the ``n`` (:meth:`PrefixHeavyHitters.frequency_variance`: the rounds' noise and
        the sampling); otherwise ``per_user`` is ``(worst, average)`` per user, the
        mechanism's by default."""
        if estimating is not None:
            variance = mechanism.oracle.frequency_variance
            shares = np.linspace(0.0, 1.0, 101)[:, None]
            worst = np.max(variance(shares, estimating[None, :], n), axis=0)
            average = variance(0.0, estimating, n)
        else:
            worst, average = mechanism.per_user_variance() if per_user is None else per_user
            worst, average = np.full(len(table), worst / n), np.full(len(table), average / n)
        return pd.DataFrame({"worst_case": worst, "average_case": average},
                            index=pd.Index(table["value"], name="value"))

    def _candidate_words(self, mechanism, values, name):
        """Candidates de-duplicated (with a warning) and encoded; a ValueError names a bad
        value."""
        if isinstance(values, str | bytes) or np.ndim(values) != 1:
            raise ValueError(f"{name} must be a 1-D list of values, got {str(values)[:60]!r}.")
        words = mechanism.encode(values, f"{mechanism.column} ({name})")
        unique, first = np.unique(words, axis=0, return_index=True)
        if unique.shape[0] < words.shape[0]:
            warnings.warn(f"{name} holds {words.shape[0] - unique.shape[0]} duplicate "
                          f"value(s); each value is estimated once.", UserWarning,
                          stacklevel=3)
            words = words[np.sort(first)]  # the first occurrences, in the given order
        return words

    # ------------------------------------------------------------------ answers
    def predict(self, candidates):
        """The estimated frequency (and count) of any values, with standard errors.

        PEM and TreeHist estimate from the users of the last two rounds (those who reported
        the whole value): unbiased for every value, found or not; ``std_error`` includes
        which users those are (a uniform sample of all). Sketches estimate from the whole
        sketch.

        Parameters
        ----------
        candidates : array-like of shape (n_values,)
            Values of the column (strings, or integers within the bit length). Duplicates
            are estimated once, with a UserWarning.

        Returns
        -------
        pandas.DataFrame
            One row per distinct value, in the given order: ``value``, ``frequency``,
            ``std_error``, ``count`` and ``count_std_error``.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "heavy_hitters_")
        mechanism = self.mechanism_
        words = self._candidate_words(mechanism, candidates, "candidates")
        if mechanism.prefix:
            n = self._reports.shape[0]
            prefix = mechanism.prefix_reports(self._reports)
            counts, errors = mechanism.oracle.estimate_counts(prefix, words, n)
        else:
            counts, errors = mechanism.oracle.estimate_counts(self.statistic_, words)
            n = mechanism.n_reports(self.statistic_)
        return self._table(mechanism, words, counts, errors, n)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.non_deterministic = True
        tags.input_tags.string = True
        return tags


def detectable_frequency(n_users, epsilon, values=32, max_string_bytes=32, strategy="pem",
                         n_candidates=20, alpha=DEFAULT_ALPHA):
    """The smallest frequency a heavy-hitter collection can detect, before collecting.

    The frequency at which a value is found by the rounds of prefix extension and passes
    :class:`HeavyHitterEstimator`'s final test (Holm at ``alpha``) about half of the time,
    for the encoder's defaults at ``n_users`` users: the larger of the last selection
    round's cut and the final test's cut, in frequency. Values well above it are found
    almost always; values below it are rarely returned, and a fit that returns nothing
    warns with this number.

    Parameters
    ----------
    n_users : int
        Users who will report.
    epsilon : float
        Each user's privacy budget.
    values : "strings" or int, default=32
        The column's declaration in ``LDPEncoder(categories=...)``: ``"strings"`` or a bit
        length.
    max_string_bytes : int, default=32
        For strings: the encoder's ``max_string_bytes``.
    strategy : {"pem", "treehist"}, default="pem"
        The prefix-extension protocol.
    n_candidates : int, default=20
        The encoder's ``n_candidates``.
    alpha : float, default=0.05
        The estimator's family-wise error rate.

    Returns
    -------
    float
        A frequency in ``(0, 1]``.

    See Also
    --------
    HeavyHitterEstimator : Warns with this number when it returns nothing.

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
       identification", IEEE TDSC, 2019.

    Examples
    --------
    >>> f = [detectable_frequency(n, 2.0) for n in (10**5, 10**6)]
    >>> bool(f[1] < f[0] < 0.1)
    True
    """
    if strategy not in PROTOCOLS:
        raise ValueError(f"strategy must be one of {PROTOCOLS} (the sketches rank given "
                         f"candidates), got {strategy!r}.")
    if values == "strings":
        bytes_ = check_positive_int(max_string_bytes, "max_string_bytes")
        if bytes_ > MAX_STRING_BYTES:
            raise ValueError(f"max_string_bytes must be at most {MAX_STRING_BYTES}, got "
                             f"{max_string_bytes!r}.")
        bit_length = 8 * bytes_
    elif isinstance(values, numbers.Integral) and not isinstance(values, bool) \
            and 1 <= values <= MAX_INTEGER_BITS:
        bit_length = int(values)
    else:
        raise ValueError(f"values must be 'strings' or a bit length in [1, "
                         f"{MAX_INTEGER_BITS}], got {values!r}.")
    n_users = check_positive_int(n_users, "n_users")
    oracle = PrefixHeavyHitters(bit_length, epsilon, strategy, n_candidates, None, n_users)
    return oracle.detectable_frequency(n_users, alpha)


__all__ = ["HeavyHitterEstimator", "detectable_frequency"]
