"""Per-round estimates of a longitudinal collection: :class:`LongitudinalEstimator`.

The mechanisms (memoized randomized response, the one-bit mean of dBitFlipPM...) are the math
of :mod:`sklearn_ldp.mechanisms.longitudinal.mechanisms`; the collection and its state files
are :mod:`sklearn_ldp.longitudinal`."""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._glue import refuse_malformed
from .._validation import check_nesting
from ..longitudinal import LongitudinalReports, longitudinal_references
from ..mechanisms.longitudinal.mechanisms import OneBitMeanPM
from ._base import forget_fitted
from ._docstrings import estimator_docstring

# Points of the grid that averages a counter's per-user variance over uniform values.
_AVERAGE_GRID = 4097


@longitudinal_references
class LongitudinalEstimator(BaseEstimator):
    """Decode rounds of memoized reports, one estimate per round.

    Each :meth:`partial_fit` adds one round's :class:`~sklearn_ldp.longitudinal.
    LongitudinalReports` (from :meth:`LongitudinalEncoder.transform
    <sklearn_ldp.longitudinal.LongitudinalEncoder.transform>`); :meth:`fit` starts over
    with one round. Every round is estimated on its own, unbiased, with the analytic
    variance of that round (a user's report in one round is one draw of the chained
    randomization; the rounds of one user are *not* independent, so averaging rounds does
    not shrink the error of what stays the same, see ``docs/longitudinal.md``).

    Parameters
    ----------
    normalize : bool, default=False
        Estimate fractions of the round's users instead of counts (``1bitmean``: always the
        mean counter).

    Attributes
    ----------
    mechanism_ : LongitudinalMechanism, DBitFlipPM or OneBitMeanPM
        The mechanism of the first round (every round must match its specification).
    spec_ : dict
        The encoder specification of the rounds fitted.
    estimates_ : pandas.DataFrame
        One row per round (index ``round``), one column per category (``"mean"`` for a
        counter): unbiased counts, fractions with ``normalize=True``, or means.
    standard_errors_ : pandas.DataFrame
        Plug-in standard error of every estimate (the analytic variance at the estimated
        frequencies, clipped to ``[0, 1]``; for counters at the worst value).
    expected_error_ : pandas.DataFrame
        Analytic, data-independent variance of each category's estimate (same units as
        ``estimates_``, squared), one row per round: ``worst_case`` (the worst frequency of
        the category, 0 or 1; for counters every user at the worst value) and
        ``average_case`` (users spread uniformly over the categories, or counters uniform
        over ``[0, max_value]``). The type and columns of every estimator's
        ``expected_error_``.
    n_reports_ : pandas.Series
        Users per round.
    statistics_ : dict
        The aggregated statistic of every round (``round -> ndarray``).
    n_rounds_ : int
        Rounds fitted.

    See Also
    --------
    sklearn_ldp.longitudinal.LongitudinalEncoder : Produces the rounds.

    <longitudinal references>

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.longitudinal import LongitudinalEncoder
    >>> enc = LongitudinalEncoder(categories=["mail", "maps"], random_state=0).fit()
    >>> state = enc.new_state(10_000)
    >>> est = LongitudinalEstimator(normalize=True)
    >>> rng = np.random.default_rng(1)
    >>> for day in range(3):
    ...     est = est.partial_fit(enc.transform(rng.choice(["mail", "maps"], 10_000,
    ...                                                    p=[0.7, 0.3]), state=state))
    >>> est.estimates_.shape, list(est.expected_error_.columns)
    ((3, 2), ['worst_case', 'average_case'])
    >>> bool((abs(est.estimates_["mail"] - 0.7) < 5 * est.standard_errors_["mail"]).all())
    True
    """

    def __init__(self, normalize=False):
        self.normalize = normalize

    @estimator_docstring
    def fit(self, X, y=None):
        """Fit one round (forgetting the rounds fitted before).

        Parameters
        ----------
        X : LongitudinalReports
            One round's reports.
        <ignored y and self: LongitudinalEstimator>
        """
        check_nesting(self, locals())
        forget_fitted(self, ("mechanism_", "spec_", "_rows", "statistics_"))
        return self.partial_fit(X)

    @estimator_docstring
    def partial_fit(self, X, y=None):
        """Add one round.

        Parameters
        ----------
        X : LongitudinalReports
            One round's reports, of the same encoder specification as the rounds already
            fitted, with a round number not fitted yet.
        <ignored y and self: LongitudinalEstimator>

        Raises
        ------
        ValueError
            ``X`` is not LongitudinalReports, is of another specification, repeats a round
            already fitted, or holds no report.
        """
        check_nesting(self, locals())
        if not isinstance(self.normalize, bool | np.bool_):
            raise ValueError(f"normalize must be True or False, got {self.normalize!r}.")
        if not isinstance(X, LongitudinalReports):
            refuse_malformed(X)  # scikit-learn's message for sparse, complex, empty, NaN
            raise ValueError(
                f"{type(self).__name__} fits LongitudinalReports (the output of "
                "LongitudinalEncoder.transform(X_round, state=state)), one round per "
                f"partial_fit; got {type(X).__name__}.")
        if not hasattr(self, "spec_"):
            self.mechanism_, self.spec_ = X.mechanism, X.spec
            self._rows, self.statistics_ = [], {}
        elif X.spec != self.spec_:
            raise ValueError(
                f"{type(self).__name__}.partial_fit: round {X.round} comes from another "
                f"specification ({X.mechanism!r}, categories {X.spec.get('categories')!r}) "
                f"than the rounds fitted ({self.mechanism_!r}); rounds of different "
                "encoders cannot form one series.")
        if X.round in self.statistics_:
            raise ValueError(f"round {X.round} is already fitted: fit each round once "
                             "(reports of one round from several shards are one "
                             "LongitudinalReports).")
        if X.n_reports == 0:
            raise ValueError(f"round {X.round} holds no report.")
        self.statistics_[X.round] = X.statistic
        self._rows.append(self._round_row(X.round, X.statistic))
        self._rows.sort(key=lambda row: row[0])
        self._publish()
        return self

    def _labels(self):
        categories = self.spec_["categories"]
        return ["mean"] if categories is None else list(categories)

    def _round_row(self, round_, statistic):
        """(round, estimate, plug-in variance, worst, average, n) of one round."""
        mechanism, n = self.mechanism_, int(statistic[-1])
        estimate = np.atleast_1d(mechanism.estimate(statistic)).astype(float)
        if isinstance(mechanism, OneBitMeanPM):
            worst = mechanism.worst_case_variance(n)
            grid = np.linspace(0.0, mechanism.max_value, _AVERAGE_GRID)
            average = float(mechanism.user_variance(grid).mean()) / n
            # The plug-in of a counter needs the values' spread: the worst case bounds it.
            return round_, estimate, np.array([worst]), worst, average, n
        k = mechanism.n_cells
        frequency = np.clip(estimate / n, 0.0, 1.0)
        plug_in = mechanism.count_variance(frequency, n)
        # The variance is linear in the frequency: its worst case is at f = 0 or f = 1.
        worst = float(max(mechanism.count_variance(0.0, n), mechanism.count_variance(1.0, n)))
        average = float(mechanism.count_variance(1.0 / k, n))
        scale = 1.0 / n if self.normalize else 1.0
        return (round_, estimate * scale, plug_in * scale**2, worst * scale**2,
                average * scale**2, n)

    def _publish(self):
        labels = self._labels()
        index = pd.Index([row[0] for row in self._rows], name="round")
        self.estimates_ = pd.DataFrame(np.array([row[1] for row in self._rows]), index=index,
                                       columns=labels)
        self.standard_errors_ = pd.DataFrame(np.sqrt(np.array([row[2] for row in self._rows])),
                                             index=index, columns=labels)
        self.expected_error_ = pd.DataFrame({"worst_case": [row[3] for row in self._rows],
                                             "average_case": [row[4] for row in self._rows]},
                                            index=index)
        self.n_reports_ = pd.Series([row[5] for row in self._rows], index=index,
                                    name="n_reports")
        self.n_rounds_ = len(self._rows)

    def predict(self, X=None):
        """The estimates of the rounds fitted, or of the rounds listed in ``X``.

        Parameters
        ----------
        X : list of int or None, default=None
            Round numbers; None for every round.

        Returns
        -------
        pandas.DataFrame
            Rows of :attr:`estimates_`.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "estimates_")
        if X is None:
            return self.estimates_.copy()
        rounds = list(np.atleast_1d(X))
        missing = [r for r in rounds if r not in self.estimates_.index]
        if missing:
            raise ValueError(f"rounds {missing[:5]!r} are not fitted (fitted: "
                             f"{list(self.estimates_.index)[:10]!r}).")
        return self.estimates_.loc[rounds]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        return tags
