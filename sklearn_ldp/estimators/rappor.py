"""RapporEstimator: candidate strings' frequencies from RAPPOR reports, with detection.

Decodes the reports of ``LDPEncoder(categories={"url": "strings"}, strategy="rappor")`` (or
of devices running the ``bloom_rappor`` client) as the RAPPOR paper does: the per-cohort Bloom
bit counts are regressed on the candidates' Bloom bits, and each candidate is tested against
frequency 0 (:mod:`sklearn_ldp.mechanisms.heavy_hitters.rappor_decoder`). The statistic is
additive, so ``partial_fit`` on batches equals one ``fit`` on all of them.
"""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from .._validation import check_nesting
from ..mechanisms.heavy_hitters.rappor import RapporMechanism, rappor_docstring
from ..mechanisms.heavy_hitters.rappor_decoder import check_candidates, decode_candidates
from ..mechanisms.heavy_hitters.significance import DEFAULT_ALPHA, check_alpha
from ..reports import AggregatedReports, LDPReports

# Columns of results_ (heavy_hitters_ has the first five, as HeavyHitterEstimator's).
RESULT_COLUMNS = ["value", "frequency", "std_error", "count", "count_std_error", "p_value",
                  "detected"]


@rappor_docstring
class RapporEstimator(BaseEstimator):
    """Frequencies of candidate strings from RAPPOR reports, and which are detected.

    Parameters
    ----------
    candidates : list of str
        The strings to estimate (distinct; at most 4096). Values outside the list are not
        invented; their users bias the candidates that share their Bloom bits, so the list
        should cover the values users hold.
    alpha : float, default=0.05
        Family-wise error rate of the detection (Holm's test of "frequency 0", one-sided):
        with probability at least ``1 - alpha`` no detected candidate has frequency 0.

    Attributes
    ----------
    results_ : pandas.DataFrame
        One row per candidate, in the given order: ``value``, ``frequency`` (estimated share
        of the reports), ``std_error``, ``count``, ``count_std_error``, ``p_value`` and
        ``detected``.
    heavy_hitters_ : pandas.DataFrame
        The detected candidates by decreasing frequency, with the columns of
        :class:`~sklearn_ldp.HeavyHitterEstimator`'s ``heavy_hitters_``.
    frequencies_ : pandas.Series
        ``frequency`` indexed by candidate.
    covariance_ : ndarray of shape (n_candidates, n_candidates)
        The estimated covariance of the frequencies: the reports' noise given the cohorts
        plus the random split of the users into cohorts.
    bit_counts_ : ndarray of shape (n_cohorts, n_bits)
        Unbiased estimates of the users of each cohort with each Bloom bit set.
    statistic_ : ndarray
        The summed statistic of the reports fitted.
    n_reports_ : int
    mechanism_ : RapporMechanism

    See Also
    --------
    sklearn_ldp.LDPEncoder : Privatizes a "strings" column with ``strategy="rappor"``.
    sklearn_ldp.HeavyHitterEstimator : Finds frequent strings without a candidate list.

    <erlingsson14 reference>

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_ldp import LDPEncoder, RapporEstimator
    >>> rng = np.random.default_rng(0)
    >>> sites = rng.choice(["a.com", "b.org", "c.net"], p=[0.6, 0.3, 0.1], size=100_000)
    >>> encoder = LDPEncoder(categories={"site": "strings"}, strategy="rappor",
    ...                      epsilon=4.0, random_state=0)
    >>> reports = encoder.fit_transform(pd.DataFrame({"site": sites}))
    >>> estimator = RapporEstimator(candidates=["a.com", "b.org", "c.net", "d.io"])
    >>> estimator.fit(reports).results_["detected"].tolist()
    [True, True, True, False]
    """

    def __init__(self, candidates=None, alpha=DEFAULT_ALPHA):
        self.candidates = candidates
        self.alpha = alpha

    def fit(self, X, y=None):
        """Decode the reports in ``X``.

        Parameters
        ----------
        X : LDPReports or AggregatedReports
            Reports (or their aggregate) of a
            :class:`~sklearn_ldp.mechanisms.heavy_hitters.rappor.RapporMechanism`.
        y : None
            Ignored.

        Returns
        -------
        self : RapporEstimator
            The fitted estimator.
        """
        check_nesting(self, locals())
        for name in ("mechanism_", "statistic_"):
            if hasattr(self, name):
                delattr(self, name)
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those fitted so far and decode again.

        Parameters
        ----------
        X : LDPReports or AggregatedReports
            More reports of the same mechanism.
        y : None
            Ignored.

        Returns
        -------
        self : RapporEstimator
            Equal to one fit on every report seen.
        """
        check_nesting(self, locals())
        if self.candidates is None:
            raise ValueError("RapporEstimator needs candidates=[...]: the strings whose "
                             "frequencies RAPPOR's regression estimates.")
        candidates = check_candidates(self.candidates)
        alpha = check_alpha(self.alpha)
        if not isinstance(X, (LDPReports, AggregatedReports)) \
                or not isinstance(X.mechanism, RapporMechanism):
            raise ValueError(
                "RapporEstimator decodes the reports of LDPEncoder(categories={'col': "
                "'strings'}, strategy='rappor') (LDPReports or AggregatedReports of a "
                f"RapporMechanism), got {type(X).__name__}"
                f"{'' if not hasattr(X, 'mechanism') else f' of {X.mechanism!r}'}.")
        mechanism = X.mechanism
        if hasattr(self, "mechanism_") and mechanism != self.mechanism_:
            raise ValueError(f"these reports come from {mechanism!r}, not from the "
                             f"{self.mechanism_!r} fitted so far.")
        statistic = (X.statistic if isinstance(X, AggregatedReports)
                     else mechanism.aggregate(X.reports))
        statistic = np.asarray(statistic, dtype=np.int64)
        if hasattr(self, "statistic_"):
            statistic = self.statistic_ + statistic
        found = decode_candidates(mechanism, statistic, candidates, alpha)
        n = found.n_reports
        self.mechanism_, self.statistic_, self.n_reports_ = mechanism, statistic, n
        self.bit_counts_ = mechanism.bit_count_estimates(statistic)
        self.covariance_ = found.covariance
        self.results_ = pd.DataFrame({
            "value": pd.Series(found.candidates, dtype=object),
            "frequency": found.frequencies, "std_error": found.std_errors,
            "count": found.counts, "count_std_error": found.std_errors * n,
            "p_value": found.p_values, "detected": found.detected})
        self.frequencies_ = pd.Series(found.frequencies, index=pd.Index(
            found.candidates, dtype=object, name="value"), name="frequency")
        detected = self.results_[self.results_["detected"]]
        self.heavy_hitters_ = detected.sort_values("frequency", ascending=False,
                                                   kind="stable").iloc[:, :5].reset_index(
                                                       drop=True)
        return self
