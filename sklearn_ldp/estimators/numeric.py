"""Estimators of per-column quantities: means and distributions of numeric columns, histograms
of several categorical columns.

They decode the reports of :class:`~sklearn_ldp.LDPEncoder` for records of several columns
(``bounds=`` for numeric columns, ``strategy="spl"``/``"smp"``/``"rsfd"`` for categorical
ones, or a mixed record of both), whose mechanism is a
:class:`~sklearn_ldp.mechanisms.multi_attribute.columns.ColumnsMechanism`: each estimator reads
the parts of the record it knows (the means, the square-wave distributions, the categorical
histograms) and ignores the others, so the three can be fitted on the same reports. The math
is that of :mod:`sklearn_ldp.mechanisms.numeric` and
:mod:`sklearn_ldp.mechanisms.multi_attribute.mechanisms`.
"""

import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._validation import FreshEntropyMixin, check_nesting, store_params
from ..mechanisms._base.docstrings import shared_sections
from ..mechanisms.multi_attribute.columns import (
    ColumnsMechanism,
    _MeanPart,
    _MultiAttributePart,
    _OraclePart,
    _SampledMeanPart,
    _SquareWavePart,
)
from ..postprocess import clip_to_distribution
from ._base import (
    add_statistic,
    check_batch,
    checked_statistic,
    forget_fitted,
    record_invalid,
    reports_or_privatized,
    start_batches,
)
from ._docstrings import estimator_docstring

OUTPUTS = ("fraction", "count")
# AttributeHistogramEstimator's postprocess values (the first is the default).
HISTOGRAM_POSTPROCESS = ("clip", "none")
# Rows of a frequency oracle's per-cell variance computed at once by score (k x k entries
# in blocks of this many rows).
_VARIANCE_BLOCK = 256
# score of a categorical column through a frequency oracle builds its k x k per-user
# variances: refused past this many categories.
MAX_SCORE_CATEGORIES = 2**14

# The docstring sections the column estimators share, written once
# (:mod:`sklearn_ldp.mechanisms._base.docstrings`): classes and methods name them as
# ``<name>`` (or ``<name: argument>``) and ``@_numeric_docstring`` writes them in.
_numeric_docstring = shared_sections({
    "raw records parameters": lambda names: f"""\
{names} : optional
    Only for fitting on raw records: the estimator privatizes them itself with an
    :class:`~sklearn_ldp.LDPEncoder` of these parameters.
random_state : int, Generator or None, default=None
    Used only when privatizing raw records.
ledger, ledger_users : str, path or None; str, default=None, "all"
    Privacy budget ledger charged when the estimator privatizes raw records.""",
    "statistic attributes": """\
statistic_ : ndarray
    The reports' additive statistic.
mechanism_, domain_ : the objects the reports came with.""",
    # ``<columns parameter: ReturnType>``: the Parameters and the Returns' type of a method
    # that answers for some columns; the return's description follows the line.
    "columns parameter": lambda returns: f"""\
Parameters
----------
columns : str, list of str or None, default=None
    Column names (None: every column estimated).

Returns
-------
{returns}""",
    "held-out parameters": """\
Parameters
----------
X : LDPReports, AggregatedReports or DataFrame of report columns
    Held-out reports of the fitted mechanism (raw records with ``strategy`` set).
y : None
    Ignored.""",
    "column parameter": """\
column : str or None, default=None
    A square-wave column (default ``column_``).""",
    # A quantile method's parameters and the type it returns.
    "levels parameters": lambda name: f"""\
Parameters
----------
{name} : float or array-like of float in [0, 1]
    The levels.
column : str or None, default=None
    A square-wave column (default ``column_``).

Returns
-------
float or ndarray""",
})


class _ColumnsEstimator(FreshEntropyMixin, BaseEstimator):
    """Fitting shared by the per-column estimators (see the module docstring).

    Subclasses set ``_parts`` (the part classes they decode) and ``_what`` (for messages),
    and implement ``_decode(mechanism, domain, counts, n_reports)``, which returns the
    fitted attributes (computed before any is set, so a refused batch changes nothing).
    """

    _parts = ()
    _what = ""

    def _encoder_params(self):
        return {}

    def _check_params(self):
        pass

    def _as_reports(self, X, first_call):
        return reports_or_privatized(self, X, first_call, **self._encoder_params())

    def _positions(self, mechanism):
        """Positions of the parts this estimator decodes; a ValueError if there are none."""
        if not isinstance(mechanism, ColumnsMechanism):
            raise ValueError(
                f"{type(self).__name__} decodes the reports of records of several columns "
                f"(LDPEncoder with bounds= or strategy='spl'/'smp'/'rsfd'); these come from "
                f"{mechanism!r}: decode them with WorkloadEstimator, RangeQueryEstimator or "
                "MarginalEstimator.")
        positions = [position for position, part in enumerate(mechanism.parts)
                     if isinstance(part, self._parts)]
        if not positions:
            raise ValueError(f"{type(self).__name__} estimates {self._what}; the reports of "
                             f"{mechanism!r} hold none.")
        return positions

    @estimator_docstring
    def fit(self, X, y=None):
        """Aggregate the reports in ``X`` and estimate.

        Parameters
        ----------
        X : LDPReports, AggregatedReports, DataFrame of report columns, or raw records
            The reports (a DataFrame whose ``attrs`` carry the mechanism:
            ``LDPEncoder(...).set_output(transform="pandas")``), or raw records when
            ``strategy`` is set (the estimator then privatizes them itself, a simulation).
        <ignored y and self: object>
        """
        check_nesting(self, locals())
        forget_fitted(self, ("statistic_", "encoder_", "_first_batch", "n_invalid_reports_",
                             "_channels"))
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those fitted so far and estimate again.

        Parameters
        ----------
        X : LDPReports, AggregatedReports, DataFrame of report columns, or raw records
            More reports of the same mechanism (as in :meth:`fit`).
        y : None
            Ignored.

        Returns
        -------
        self : object
            The estimator, refitted on every report seen (chunked fits equal one fit, up to
            the rounding of the real-valued sums).
        """
        check_nesting(self, locals())
        self._check_params()
        first_call = not hasattr(self, "statistic_")
        reports = self._as_reports(X, first_call)
        if len(reports) == 0:
            raise ValueError("no reports to fit: X has 0 rows.")
        self._positions(reports.mechanism)
        if not first_call:
            check_batch(self, reports)
        statistic, n_reports = checked_statistic(self, reports)
        mechanism = reports.mechanism if first_call else self.mechanism_
        domain = reports.domain if first_call else self.domain_
        counts = statistic if first_call else add_statistic(self, statistic)
        total = n_reports if first_call else self.n_reports_ + n_reports
        fitted = self._decode(mechanism, domain, counts, total)  # may refuse: nothing set yet
        if first_call:
            self.mechanism_, self.domain_ = mechanism, domain
            start_batches(self, reports)
        self.statistic_ = counts
        self.n_reports_ = self.n_users_ = total
        for name, value in fitted.items():
            setattr(self, name, value)
        record_invalid(self, reports)
        return self

    def _held_out(self, X):
        """The statistic of held-out reports of the fitted mechanism, and their number."""
        check_is_fitted(self, "statistic_")
        reports = self._as_reports(X, first_call=False)
        if reports.mechanism != self.mechanism_:
            raise ValueError("held-out reports must come from the mechanism that was fitted.")
        statistic, n_reports = checked_statistic(self, reports)
        if n_reports < 2:
            raise ValueError("score needs at least 2 held-out reports.")
        return statistic, n_reports

    def _asked_columns(self, columns, fitted):
        """The ``columns`` argument of a prediction method, checked (after its nesting and
        the fit) against the columns of the fitted ``fitted`` (a Series or a dict by column):
        None for every column, else the list of names."""
        check_nesting(self, {"columns": columns})
        check_is_fitted(self, fitted)
        if columns is None:
            return None
        table = getattr(self, fitted)
        return self._column_list(columns, getattr(table, "index", table), "columns")

    def _column_list(self, columns, known, what):
        """``columns`` (a name or a list of names) checked against ``known``."""
        if isinstance(columns, str):
            names = [columns]
        elif isinstance(columns, list | tuple | pd.Index) and all(
                isinstance(name, str) for name in columns):
            names = list(columns)
        else:
            raise ValueError(f"{what} are given by name (a string or a list of strings) among "
                             f"{list(known)!r}; got {type(columns).__name__} "
                             f"{str(columns)[:60]!r}.")
        unknown = [name for name in names if name not in known]
        if unknown or not names:
            raise ValueError(f"{what} are among {list(known)!r}; got {columns!r}.")
        return names

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        tags.non_deterministic = True
        return tags


def _mean_parts(mechanism, positions, counts):
    """Per column of the mean parts: means, standard errors, per-user variances, bounds."""
    columns, means, errors, worst, average, bounds = [], [], [], [], [], []
    for position in positions:
        part = mechanism.parts[position]
        statistic = mechanism.part_statistic(counts, position)
        mean, error = part.means(statistic)
        part_worst, part_average = part.per_user_variance()
        columns += list(part.columns)
        means += list(mean)
        errors += list(error)
        worst += list(part_worst)
        average += list(part_average)
        bounds += part.bounds()
    return columns, np.asarray(means), np.asarray(errors), np.asarray(worst), \
        np.asarray(average), bounds


@_numeric_docstring
class MeanEstimator(_ColumnsEstimator):
    """Unbiased means of bounded numeric columns from LDP reports.

    Decodes the reports of :class:`~sklearn_ldp.LDPEncoder` with ``bounds=`` and a mean
    strategy (``"hybrid"``, ``"piecewise"``, ``"duchi"``; one column, several columns
    sampled ``k`` of ``d`` per user, or the numeric columns of a mixed record). Every mean
    comes with its estimated standard error (from the reports) and its analytic variance
    (before any data: the worst case over the bounds and the average for values spread
    uniformly over them).

    Parameters
    ----------
    strategy, epsilon, bounds, clip : optional
        Only for fitting on raw records: the estimator privatizes them itself with an
        :class:`~sklearn_ldp.LDPEncoder` of these parameters (a simulation convenience,
        identical to a Pipeline of the two).
    random_state : int, Generator or None, default=None
        Used only when privatizing raw records.
    ledger, ledger_users : str, path or None; str, default=None, "all"
        Privacy budget ledger charged when the estimator privatizes raw records (see
        :mod:`sklearn_ldp.deploy.budget`); fitting reports charges nothing here.

    Attributes
    ----------
    mean_ : pandas.Series
        The unbiased mean of every numeric column reported for the mean, in value units.
    mean_std_error_ : pandas.Series
        Each mean's standard error, estimated from the reports: the reports' sample
        standard deviation over ``sqrt(N)``. It estimates the error of the mean as an
        estimate of the *population* mean (users a random sample of it): the privacy noise
        plus the spread of the values between users, which ``expected_error_`` (the privacy
        noise alone, for the users fitted) leaves out.
    expected_error_ : pandas.DataFrame
        The analytic variance of each mean for the users fitted, one row per column:
        ``worst_case`` (every user at the value of largest report variance) and
        ``average_case`` (values spread uniformly over the bounds).
    n_reports_ : int
        Number of reports fitted (``n_users_`` is the same number).
    bounds_ : dict
        Column -> its public bounds.
    <statistic attributes>

    See Also
    --------
    sklearn_ldp.LDPEncoder : Privatizes numeric columns (``bounds=``).
    DistributionEstimator : The distribution of a ``"square_wave"`` column.
    AttributeHistogramEstimator : Histograms of categorical columns.

    References
    ----------
    .. [1] J. C. Duchi, M. I. Jordan and M. J. Wainwright, "Minimax optimal procedures for
       locally private estimation", Journal of the American Statistical Association, 2018.
    .. [2] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin and G. Yu,
       "Collecting and analyzing multidimensional data with local differential privacy",
       ICDE 2019.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_ldp import LDPEncoder, MeanEstimator
    >>> ages = pd.DataFrame({"age": np.random.default_rng(1).uniform(20, 60, 50_000)})
    >>> enc = LDPEncoder(bounds={"age": (0, 100)}, strategy="hybrid", epsilon=1.0,
    ...                  random_state=0)
    >>> est = MeanEstimator().fit(enc.fit_transform(ages))
    >>> bool(abs(est.mean_["age"] - 40) < 4 * est.mean_std_error_["age"])
    True
    >>> list(est.expected_error_.columns)
    ['worst_case', 'average_case']
    """

    _parts = (_MeanPart, _SampledMeanPart)
    _what = "means of numeric columns (strategies 'duchi', 'piecewise', 'hybrid')"

    def __init__(self, strategy=None, epsilon=None, bounds=None, clip=False, random_state=None,
                 ledger=None, ledger_users="all"):
        store_params(self, locals())

    def _encoder_params(self):
        return {"bounds": self.bounds, "clip": self.clip}

    def _decode(self, mechanism, domain, counts, n_reports):
        positions = self._positions(mechanism)
        columns, means, errors, worst, average, bounds = _mean_parts(mechanism, positions,
                                                                     counts)
        index = pd.Index(columns, name="column")
        return {
            "mean_": pd.Series(means, index=index, name="mean"),
            "mean_std_error_": pd.Series(errors, index=index, name="std_error"),
            "expected_error_": pd.DataFrame({"worst_case": worst / n_reports,
                                             "average_case": average / n_reports},
                                            index=index),
            "bounds_": dict(zip(columns, bounds, strict=True)),
        }

    @_numeric_docstring
    def predict(self, columns=None):
        """The estimated mean of each column asked for.

        <columns parameter: float or pandas.Series>
            The mean (a float for one column name), or a Series indexed by the columns.
        """
        names = self._asked_columns(columns, "mean_")
        if names is None:
            return self.mean_.copy()
        if isinstance(columns, str):
            return float(self.mean_[columns])
        return self.mean_.loc[names]

    @_numeric_docstring
    def predict_error(self, columns=None):
        """The analytic variance of each mean asked for (``expected_error_``'s rows).

        <columns parameter: pandas.DataFrame>
            Columns ``worst_case`` and ``average_case``, one row per column.
        """
        names = self._asked_columns(columns, "mean_")
        return self.expected_error_.copy() if names is None else self.expected_error_.loc[names]

    @_numeric_docstring
    def score(self, X, y=None):
        """Unbiased estimate of minus the mean squared error of the means, from held-out
        reports.

        With ``a`` the fitted mean and ``b`` the held-out reports' unbiased mean of a column
        (both divided by the width of its bounds), ``E(a - b)^2 = (a - mu)^2 + Var(b)``, and
        ``Var(b)`` is estimated without bias from the held-out reports: the score is minus
        the average over the columns of ``(a - b)^2 - Var_hat(b)`` (it may be slightly
        positive by chance). No raw value is read; the held-out reports spend their own
        budget when they are collected.

        <held-out parameters>

        Returns
        -------
        float
            The estimate of minus the mean squared error per column, in squared fractions
            of each column's range.
        """
        statistic, _ = self._held_out(X)
        positions = self._positions(self.mechanism_)
        columns, held_out, errors, _, _, bounds = _mean_parts(self.mechanism_, positions,
                                                              statistic)
        widths = np.array([high - low for low, high in bounds])
        fitted = self.mean_.loc[columns].to_numpy()
        squared = ((fitted - held_out) / widths) ** 2 - (errors / widths) ** 2
        return -float(np.mean(squared))


@_numeric_docstring
class DistributionEstimator(_ColumnsEstimator):
    """The distribution, CDF and quantiles of a bounded numeric column from Square Wave
    reports, by expectation maximization with smoothing (EMS).

    Decodes the ``"square_wave"`` columns of :class:`~sklearn_ldp.LDPEncoder` reports
    (``bounds=``, ``strategy="square_wave"``, or a column of a mixed record): the server's
    bucket counts are turned into a distribution over ``n_bins`` equal-width bins of the
    bounds by EM with the binomial smoothing step of Li et al. The answers are those of
    :class:`~sklearn_ldp.RangeQueryEstimator` on a numeric scale: the fraction of users in
    intervals (:meth:`predict`), the CDF and quantiles, with values spread uniformly within
    a bin. EM's estimate is biased (that is how it beats unbiased estimators on smooth
    distributions) and its error has no closed form: there is no ``expected_error_``;
    ``docs/numeric.md`` reports measured Wasserstein distances.

    Parameters
    ----------
    column : str or None, default=None
        The square-wave column ``distribution_``, :meth:`predict`, :meth:`cdf` and
        :meth:`quantiles` answer by default (None: the first one). Every square-wave column
        of the reports is estimated (``distributions_``).
    smoothing : bool, default=True
        Apply the smoothing step (EMS); False runs plain EM (maximum likelihood).
    max_iter : int, default=10000
        Most EM iterations.
    tol : float or None, default=None
        EM stops when the log-likelihood per report changes by less than ``tol``. None: the
        default of :meth:`SquareWaveMechanism.estimate_distribution
        <sklearn_ldp.mechanisms.numeric.square_wave.SquareWaveMechanism.estimate_distribution>`.
    <raw records parameters: strategy, epsilon, bounds, n_bins, clip>

    Attributes
    ----------
    distributions_ : dict
        Column -> its estimated distribution: a pandas Series of fractions indexed by the
        bins (a pandas IntervalIndex in value units).
    column_ : str
        The column answered by default.
    distribution_ : pandas.Series
        ``distributions_[column_]``.
    bin_edges_ : ndarray
        The ``n_bins + 1`` bin edges of ``column_``.
    cdf_ : ndarray
        The fraction of users at or below each right bin edge of ``column_``.
    n_reports_ : int
        Number of reports fitted.
    <statistic attributes>

    See Also
    --------
    sklearn_ldp.LDPEncoder : Privatizes numeric columns (``strategy="square_wave"``).
    MeanEstimator : Unbiased means of numeric columns.
    sklearn_ldp.RangeQueryEstimator : Ranges and quantiles of an ordered categorical column.

    References
    ----------
    .. [1] Z. Li, T. Wang, M. Lopuhaa-Zwakenberg, N. Li and B. Skoric, "Estimating numerical
       distributions under local differential privacy", SIGMOD 2020.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_ldp import DistributionEstimator, LDPEncoder
    >>> rng = np.random.default_rng(1)
    >>> df = pd.DataFrame({"hours": rng.beta(2, 5, 50_000) * 40})
    >>> enc = LDPEncoder(bounds={"hours": (0, 40)}, strategy="square_wave", n_bins=64,
    ...                  epsilon=2.0, random_state=0)
    >>> est = DistributionEstimator().fit(enc.fit_transform(df))
    >>> round(float(est.distribution_.sum()), 6), est.predict([[0, 40]]).round(6).tolist()
    (1.0, [1.0])
    >>> bool(8 < est.quantiles(0.5) < 14)
    True
    """

    _parts = (_SquareWavePart,)
    _what = "distributions of square-wave columns (strategy 'square_wave')"

    def __init__(self, column=None, smoothing=True, max_iter=10000, tol=None, strategy=None,
                 epsilon=None, bounds=None, n_bins=1024, clip=False, random_state=None, ledger=None,
                 ledger_users="all"):
        store_params(self, locals())

    def _encoder_params(self):
        return {"bounds": self.bounds, "clip": self.clip, "n_bins": self.n_bins}

    def _check_params(self):
        if not isinstance(self.smoothing, bool | np.bool_):
            raise ValueError(f"smoothing must be True or False, got {self.smoothing!r}.")
        if isinstance(self.max_iter, bool) or not isinstance(self.max_iter, numbers.Integral) \
                or self.max_iter < 1:
            raise ValueError(f"max_iter must be a positive integer, got {self.max_iter!r}.")
        if self.tol is not None and (isinstance(self.tol, bool)
                                     or not isinstance(self.tol, numbers.Real)
                                     or not self.tol >= 0):
            raise ValueError(f"tol must be a non-negative number, got {self.tol!r}.")
        if self.column is not None and not isinstance(self.column, str):
            raise ValueError(f"column must be a column name or None, got {self.column!r}.")

    def _decode(self, mechanism, domain, counts, n_reports):
        distributions, edges = {}, {}
        for position in self._positions(mechanism):
            part = mechanism.parts[position]
            sw = part.mechanism
            options = {} if self.tol is None else {"tol": float(self.tol)}
            x = sw.estimate_distribution(mechanism.part_statistic(counts, position),
                                         smoothing=bool(self.smoothing),
                                         max_iter=int(self.max_iter), **options)
            low, high = sw.bounds
            column = part.columns[0]
            edges[column] = np.linspace(low, high, sw.n_bins + 1)
            distributions[column] = pd.Series(
                x, index=pd.IntervalIndex.from_breaks(edges[column], closed="left",
                                                      name=column), name="fraction")
        column = self.column if self.column is not None else next(iter(distributions))
        if column not in distributions:
            raise ValueError(f"column={column!r} is not a square-wave column of these reports "
                             f"(they hold {list(distributions)!r}).")
        cdf = np.cumsum(distributions[column].to_numpy())
        return {"distributions_": distributions, "column_": column,
                "distribution_": distributions[column], "bin_edges_": edges[column],
                "cdf_": np.minimum(cdf / cdf[-1], 1.0)}

    def _curve(self, column):
        """``(edges, cdf at the edges)`` of a fitted column (the default: ``column_``)."""
        check_is_fitted(self, "distributions_")
        column = self.column_ if column is None else column
        if column not in self.distributions_:
            raise ValueError(f"column must be one of the square-wave columns "
                             f"{list(self.distributions_)!r}, got {column!r}.")
        distribution = self.distributions_[column]
        cdf = np.cumsum(distribution.to_numpy())
        cdf = np.concatenate([[0.0], np.minimum(cdf / cdf[-1], 1.0)])
        edges = np.concatenate([[distribution.index[0].left],
                                [interval.right for interval in distribution.index]])
        return edges, cdf

    @_numeric_docstring
    def cdf(self, values=None, column=None):
        """The estimated CDF: the fraction of users at or below each value.

        Parameters
        ----------
        values : array-like of float or None, default=None
            Where to evaluate it (linear within a bin); None: at every right bin edge.
        <column parameter>

        Returns
        -------
        pandas.Series or ndarray
            With ``values=None`` a Series indexed by the right bin edges, named ``"cdf"``;
            otherwise the CDF at each value (0 below the bounds, 1 above).
        """
        check_nesting(self, locals())
        edges, cdf = self._curve(column)
        if values is None:
            return pd.Series(cdf[1:], index=pd.Index(edges[1:], name="value"), name="cdf")
        values = _finite(values, "values")
        return np.interp(values, edges, cdf)

    @_numeric_docstring
    def predict(self, X, column=None):
        """The fraction of users in each closed interval ``[lo, hi]`` (value units).

        Parameters
        ----------
        X : array-like of shape (p, 2)
            One interval per row; bounds may lie outside the column's bounds.
        <column parameter>

        Returns
        -------
        ndarray of shape (p,)
            The estimated fraction of the users in each interval.
        """
        check_nesting(self, locals())
        edges, cdf = self._curve(column)
        intervals = _finite(X, "intervals")
        if intervals.ndim != 2 or intervals.shape[1] != 2 or intervals.shape[0] == 0:
            raise ValueError("intervals must be given as [[lo, hi], ...]: one pair of numbers "
                             "per row.")
        if np.any(intervals[:, 0] > intervals[:, 1]):
            row = int(np.flatnonzero(intervals[:, 0] > intervals[:, 1])[0])
            raise ValueError(f"interval {intervals[row].tolist()!r} has lo after hi; "
                             "intervals are [lo, hi] with lo <= hi.")
        return np.interp(intervals[:, 1], edges, cdf) - np.interp(intervals[:, 0], edges, cdf)

    @_numeric_docstring
    def quantiles(self, q, column=None):
        """The ``q``-quantiles: for each level, the least value whose CDF reaches it.

        <levels parameters: q>
            The quantile of each level (a float for a scalar ``q``), in value units.
        """
        check_nesting(self, locals())
        edges, cdf = self._curve(column)
        scalar = np.ndim(q) == 0
        levels = np.atleast_1d(_finite(q, "q"))
        if levels.ndim != 1 or np.any((levels < 0) | (levels > 1)):
            raise ValueError(f"q must hold numbers in [0, 1], got {q!r}.")
        # First edge whose CDF reaches the level, then linear within the bin before it.
        index = np.clip(np.searchsorted(cdf, levels, side="left"), 1, len(cdf) - 1)
        below, above = cdf[index - 1], cdf[index]
        span = np.where(above > below, above - below, 1.0)
        fraction = np.clip((levels - below) / span, 0.0, 1.0)
        values = edges[index - 1] + fraction * (edges[index] - edges[index - 1])
        values = np.where(levels <= 0, edges[0], values)
        return float(values[0]) if scalar else values

    @_numeric_docstring
    def score(self, X, y=None):
        """Mean log-likelihood of held-out reports under the fitted distributions.

        For each square-wave column, the held-out reports' bucket counts ``c`` score
        ``c . log(M x) / n``, with ``M`` the mechanism's channel (``P(bucket | bin)``) and
        ``x`` the fitted distribution: a proper scoring rule computed from privatized
        reports only (greater is better), averaged over the columns.

        <held-out parameters>

        Returns
        -------
        float
            The mean log-likelihood per held-out report.
        """
        statistic, n_reports = self._held_out(X)
        channels = self.__dict__.setdefault("_channels", {})
        scores = []
        for position in self._positions(self.mechanism_):
            part = self.mechanism_.parts[position]
            column = part.columns[0]
            if column not in channels:
                channels[column] = part.mechanism.channel()
            counts = self.mechanism_.part_statistic(statistic, position).astype(float)
            predicted = channels[column] @ self.distributions_[column].to_numpy()
            scores.append(float(counts @ np.log(np.maximum(predicted, 1e-300))) / n_reports)
        return float(np.mean(scores))

    def __getstate__(self):
        state = super().__getstate__()
        state.pop("_channels", None)  # a cache (n_buckets x n_bins floats per column)
        return state


def _finite(values, name):
    """``values`` as a float array of finite numbers, else a ValueError naming ``name``."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be numbers, got {values!r}.") from None
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite numbers (no NaN or inf).")
    return array


@_numeric_docstring
class AttributeHistogramEstimator(_ColumnsEstimator):
    """The histogram of every categorical column of a record from LDP reports, with its
    analytic error.

    Decodes the categorical columns of :class:`~sklearn_ldp.LDPEncoder` reports of several
    columns: ``strategy="spl"`` (the budget split between the columns), ``"smp"`` (each user
    reports one sampled column), ``"rsfd"`` (random sampling plus fake data), each with GRR
    or OUE inside, and the categorical columns of a mixed record (one frequency oracle
    each). The decoded frequencies are unbiased, with a variance known in closed form
    before any data is collected; unbiased estimates of rare categories may be negative,
    so each column's histogram is by default clipped to non-negative frequencies and
    renormalized (``postprocess="clip"``); ``postprocess="none"`` keeps them unbiased.

    Parameters
    ----------
    output : {"fraction", "count"}, default="fraction"
        Answer in fractions of the users, or in counts.
    postprocess : {"clip", "none"}, default="clip"
        ``"clip"``: each column's histogram with negative frequencies set to 0 and the rest
        renormalized to the users' total (a distribution: slightly biased, never a negative
        share). ``"none"``: the unbiased decoded frequencies (some may be negative or above
        1). ``expected_error_`` is the variance of the unbiased frequencies either way.
    <raw records parameters: strategy, epsilon, categories, oracle>

    Attributes
    ----------
    histograms_ : dict
        Column -> a pandas Series of its categories' frequencies (indexed by the categories
        when the reports carry the domain, else by the codes).
    answers_ : pandas.Series
        Every frequency, indexed ``"column=category"``, in fractions of the users by default
        (counts with ``output="count"``; ``WorkloadEstimator.answers_`` is in counts unless
        ``normalize=True``).
    expected_error_ : pandas.DataFrame
        The analytic variance of every answer for the users fitted (same index as
        ``answers_``, same units): ``worst_case`` (the worst frequency of the category, in
        ``[0, 1]``) and ``average_case`` (users spread uniformly over the categories).
    n_reports_ : int
        Number of reports fitted.
    <statistic attributes>

    See Also
    --------
    sklearn_ldp.LDPEncoder : ``strategy="spl"``, ``"smp"``, ``"rsfd"``.
    sklearn_ldp.MarginalEstimator : Joint (k-way) tables of the columns.
    MeanEstimator : Means of the numeric columns of a mixed record.

    References
    ----------
    .. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Random sampling plus fake
       data: multidimensional frequency estimates with local differential privacy", CIKM
       2021.
    .. [2] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
       for frequency estimation", USENIX Security 2017.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ldp import AttributeHistogramEstimator, LDPEncoder
    >>> df = pd.DataFrame({"smoker": ["no"] * 16_000 + ["yes"] * 4_000,
    ...                    "region": ["north", "south", "east", "north"] * 5_000})
    >>> enc = LDPEncoder(categories={"smoker": ["no", "yes"],
    ...                              "region": ["north", "south", "east"]},
    ...                  strategy="smp", epsilon=2.0, random_state=0)
    >>> est = AttributeHistogramEstimator().fit(enc.fit_transform(df))
    >>> est.histograms_["smoker"].round(1).tolist()
    [0.8, 0.2]
    >>> list(est.expected_error_.index[:2])
    ['smoker=no', 'smoker=yes']
    """

    _parts = (_MultiAttributePart, _OraclePart)
    _what = "histograms of categorical columns"

    def __init__(self, output="fraction", postprocess="clip", strategy=None, epsilon=None,
                 categories=None, oracle="auto", random_state=None, ledger=None,
                 ledger_users="all"):
        store_params(self, locals())

    def _encoder_params(self):
        return {"oracle": self.oracle}

    def _check_params(self):
        if not isinstance(self.output, str) or self.output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {self.output!r}.")
        if not isinstance(self.postprocess, str) or self.postprocess not in HISTOGRAM_POSTPROCESS:
            raise ValueError(f"postprocess must be one of {HISTOGRAM_POSTPROCESS}, got "
                             f"{self.postprocess!r}.")

    def _columns_of(self, mechanism, domain, counts, n_reports):
        """Per categorical column: ``(column, labels, unbiased counts, worst, average,
        part, attribute position)`` with the per-user count variances."""
        result = []
        for position in self._positions(mechanism):
            part = mechanism.parts[position]
            statistic = mechanism.part_statistic(counts, position)
            estimates = part.counts(statistic)
            for i, (column, size, (worst, average), estimate) in enumerate(zip(
                    part.columns, part.sizes(), part.per_user_variance(), estimates,
                    strict=True)):
                labels = None
                if domain is not None and column in domain.columns:
                    labels = domain.categories[column]
                if labels is None or len(labels) != size:
                    labels = list(range(size))
                result.append((column, labels, np.asarray(estimate, dtype=float), worst,
                               average, position, i))
        return result

    def _decode(self, mechanism, domain, counts, n_reports):
        scale = 1.0 / n_reports if self.output == "fraction" else 1.0
        variance_scale = 1.0 / n_reports if self.output == "fraction" else float(n_reports)
        histograms, answers, labels, worst, average = {}, [], [], [], []
        for column, categories, estimate, part_worst, part_average, _, _ in \
                self._columns_of(mechanism, domain, counts, n_reports):
            if self.postprocess == "clip":
                # A distribution over the column's categories, in counts of the n users.
                estimate = n_reports * clip_to_distribution(estimate)
            histograms[column] = pd.Series(scale * estimate,
                                           index=pd.Index(categories, name=column),
                                           name=self.output)
            answers += list(scale * estimate)
            labels += [f"{column}={category}" for category in categories]
            worst += [variance_scale * part_worst] * len(categories)
            average += [variance_scale * part_average] * len(categories)
        index = pd.Index(labels, name="answer")
        return {"histograms_": histograms,
                "answers_": pd.Series(answers, index=index, name=self.output),
                "expected_error_": pd.DataFrame({"worst_case": worst,
                                                 "average_case": average}, index=index)}

    @_numeric_docstring
    def predict(self, columns=None):
        """The histogram of each column asked for.

        <columns parameter: pandas.Series or list of pandas.Series>
            The histogram (indexed by the categories) of one column, or a list of them.
        """
        names = self._asked_columns(columns, "histograms_")
        if names is None:
            return [histogram.copy() for histogram in self.histograms_.values()]
        if isinstance(columns, str):
            return self.histograms_[columns].copy()
        return [self.histograms_[name].copy() for name in names]

    @_numeric_docstring
    def predict_error(self, columns=None):
        """The analytic variance of every frequency of the columns asked for.

        <columns parameter: pandas.DataFrame>
            ``expected_error_``'s rows of those columns.
        """
        names = self._asked_columns(columns, "histograms_")
        if names is None:
            return self.expected_error_.copy()
        keep = [label for name in names for label in
                (f"{name}={category}" for category in self.histograms_[name].index)]
        return self.expected_error_.loc[keep]

    @_numeric_docstring
    def score(self, X, y=None):
        """Unbiased estimate of minus the mean squared error per frequency, from held-out
        reports.

        With ``a`` the fitted and ``b`` the held-out unbiased fractions of a category,
        ``E(a - b)^2 = (a - f)^2 + Var(b)``; ``Var(b)`` is estimated from the held-out
        reports by plugging their unbiased frequencies into its closed form (linear in the
        frequencies, hence unbiased, for SPL, RS+FD and the frequency oracles; SMP's has a
        term ``f (1 - f)``, biased by ``O(d / N)``). The score is minus the average over the
        categories of ``(a - b)^2 - Var_hat(b)``.

        <held-out parameters>

        Returns
        -------
        float
            The estimate of minus the mean squared error per category, in squared
            fractions.
        """
        statistic, n_test = self._held_out(X)
        n_fit = self.n_reports_
        terms = []
        for column, _, estimate, _, _, position, i in self._columns_of(
                self.mechanism_, self.domain_, statistic, n_test):
            part = self.mechanism_.parts[position]
            held_out = estimate / n_test
            if isinstance(part, _MultiAttributePart):
                variance = part.count_variance(i, held_out, n_test) / n_test ** 2
            else:
                variance = _oracle_count_variance(part.mechanism, estimate) / n_test ** 2
            fitted = self.histograms_[column].to_numpy()
            fitted = fitted if self.output == "fraction" else fitted / n_fit
            terms.append((fitted - held_out) ** 2 - variance)
        return -float(np.mean(np.concatenate(terms)))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        return tags


def _oracle_count_variance(mechanism, estimate):
    """Unbiased estimate of the variance of each cell's count estimate of a frequency
    oracle: ``sum_u x_u z[v, u]`` with the unbiased counts ``x`` (the variance is linear in
    the users of each type)."""
    size = mechanism.n_inputs
    if size > MAX_SCORE_CATEGORIES:
        raise ValueError(f"score of a column with {size} categories needs their {size} x "
                         f"{size} per-user variances (limit {MAX_SCORE_CATEGORIES} "
                         "categories); compare expected_error_ instead.")
    variance = np.empty(size)
    for start in range(0, size, _VARIANCE_BLOCK):
        stop = min(start + _VARIANCE_BLOCK, size)
        rows = np.zeros((stop - start, size))
        rows[np.arange(stop - start), np.arange(start, stop)] = 1.0
        variance[start:stop] = mechanism.query_variance(rows) @ estimate
    return variance
