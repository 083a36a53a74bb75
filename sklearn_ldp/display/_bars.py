"""Bars with intervals: a histogram or marginal, heavy hitters, means."""

from collections.abc import Mapping

import numpy as np
import pandas as pd

from .._validation import store_params
from ..estimators import (
    AdaptiveQueryEstimator,
    AttributeHistogramEstimator,
    HeavyHitterEstimator,
    MarginalEstimator,
    MeanEstimator,
    WorkloadEstimator,
)
from ._common import Display, check_error_kind, check_same_length, fitted, std_errors_from

ERROR_KINDS = ("worst_case", "average_case")
# More bars than this cannot be read (and take matplotlib minutes to draw).
MAX_BARS = 500


def check_n_bars(n):
    if n > MAX_BARS:
        raise ValueError(
            f"{n} estimates are too many bars to draw (at most {MAX_BARS}): draw a selection, "
            "e.g. HistogramDisplay(est.predict(queries), est.predict_error(queries)"
            "['worst_case'] ** 0.5).plot(), or the CDF of an ordered domain with CDFDisplay.")


def _label(index_value):
    """A tick label: the categories of a marginal cell joined, anything else as text."""
    if isinstance(index_value, tuple):
        return ", ".join(str(part) for part in index_value)
    return str(index_value)


def _marginal_key(estimator, marginal):
    """The ``marginals_`` key of a marginal given by a name or a tuple of names."""
    if marginal is None:  # the first of the largest order: the joint table collected
        return max(estimator.marginals_, key=len)
    key = (marginal,) if isinstance(marginal, str) else tuple(marginal)
    if key not in estimator.marginals_:
        raise ValueError(f"marginal={marginal!r} is not a marginal of this estimator; it has "
                         f"{list(estimator.marginals_)[:10]!r} (attributes in column order).")
    return key


def _histogram_numbers(estimator, column, marginal, error):
    """``(estimates Series, standard errors, units)`` of a fitted histogram-like estimator."""
    fitted(estimator, (AttributeHistogramEstimator, WorkloadEstimator, MarginalEstimator,
                       AdaptiveQueryEstimator), "answers_" if isinstance(
        estimator, AttributeHistogramEstimator | AdaptiveQueryEstimator) else "n_users_")
    if isinstance(estimator, MarginalEstimator):
        if column is not None:
            raise ValueError("column= applies to AttributeHistogramEstimator; a "
                             "MarginalEstimator's table is chosen with marginal=.")
        # The mechanism's per-cell variance for users spread uniformly: the only per-cell
        # error it has (expected_error_ sums the cells of each table).
        if error not in (None, "average_case"):
            raise ValueError(f"error={error!r}: a MarginalEstimator's only per-cell error is "
                             "'average_case' (users spread uniformly; its expected_error_ "
                             "sums the cells of each table).")
        key = _marginal_key(estimator, marginal)
        estimates = estimator.predict([key])[0]
        positions = tuple(estimator.attributes_.index(name) for name in key)
        variances = estimator.mechanism_.marginal_variance(positions, estimator.n_users_)
        return estimates, std_errors_from(np.ravel(variances), "marginal_variance"), \
            "share of users"
    if marginal is not None:
        raise ValueError("marginal= applies to MarginalEstimator only.")
    error = check_error_kind(error or "worst_case", ERROR_KINDS)
    table = estimator.expected_error_
    if isinstance(estimator, WorkloadEstimator | AdaptiveQueryEstimator):
        if column is not None:
            raise ValueError(f"column= applies to AttributeHistogramEstimator; a "
                             f"{type(estimator).__name__} shows its queries' answers.")
        units = ("share of users" if getattr(estimator, "normalize", True)  # adaptive: shares
                 else "users")
        if isinstance(estimator, WorkloadEstimator):  # before answers_ builds every answer
            check_n_bars(estimator.workload_.n_queries)
        return estimator.answers_, std_errors_from(table[error], "expected_error_"), units
    units = "share of users" if estimator.output == "fraction" else "users"
    if column is None:
        return estimator.answers_, std_errors_from(table[error], "expected_error_"), units
    if column not in estimator.histograms_:
        raise ValueError(f"column={column!r} is not a histogram of this estimator; it has "
                         f"{list(estimator.histograms_)!r}.")
    histogram = estimator.histograms_[column]
    rows = [f"{column}={category}" for category in histogram.index]
    return histogram, std_errors_from(table.loc[rows, error], "expected_error_"), units


class _BarsWithIntervals(Display):
    """Bars, their intervals and the true values: what a histogram and heavy hitters share."""

    def _draw_bars(self, ax, estimates, std_errors, truth, horizontal, kwargs):
        """Draw on new or given axes; set ``bars_``, ``errorbars_``, ``lower_``, ``upper_``,
        ``truth_``; return the bars' positions. ``truth`` is ``(values or None, label)``."""
        std_errors = check_same_length("std_errors", std_errors, estimates.shape[0])
        center, self.lower_, self.upper_ = self._interval(estimates, std_errors)
        ax = self._axes(ax)
        positions = np.arange(estimates.shape[0])
        spread = [center - self.lower_, self.upper_ - center]

        def xy(values):  # (x, y) of points at the bars' positions
            return (values, positions) if horizontal else (positions, values)

        draw = ax.barh if horizontal else ax.bar
        self.bars_ = draw(positions, center, **{"color": "C0", "alpha": 0.8, **kwargs})
        self.errorbars_ = ax.errorbar(*xy(center), fmt="none", ecolor="black", capsize=3,
                                      label=self._level(),
                                      **{"xerr" if horizontal else "yerr": spread})
        self.truth_ = None
        values, label = truth
        if values is not None:
            (self.truth_,) = ax.plot(*xy(values), linestyle="none", marker="D", color="C3",
                                     label=label)
        return positions


class HistogramDisplay(_BarsWithIntervals):
    """A histogram, marginal or workload answers as bars with confidence intervals.

    Build it with :meth:`from_estimator`, or from numbers and call :meth:`plot`. Each bar is
    an estimate, each error bar its normal interval ``estimate +- z * std_error`` at the
    level ``confidence``. At most 500 bars are drawn: more are refused with a ValueError
    (draw a selection of the queries, or the CDF of an ordered domain).

    Parameters
    ----------
    estimates : pandas.Series
        The estimates as the estimator returned them (unbiased ones can be negative),
        indexed by their labels.
    std_errors : array-like of shape (n_estimates,)
        The standard error of each estimate.
    <confidence parameter>
    clip_negative : bool, default=True
        Draw a negative estimate as a bar of height 0 and cut every interval at 0: a share
        of users is never negative. ``False`` draws the estimates as they are. Either way
        ``estimates`` keeps the numbers returned by the estimator.
    true_values : array-like of shape (n_estimates,) or None, default=None
        The true values (in a simulation), drawn as markers over the bars.
    units : str, default="share of users"
        Label of the value axis.

    Attributes
    ----------
    <figure attributes>
    bars_ : matplotlib BarContainer
        The bars (heights: the estimates, at 0 where clipped).
    errorbars_ : matplotlib ErrorbarContainer
        The intervals.
    <interval attributes: n_estimates, true_values>

    See Also
    --------
    HeavyHitterDisplay : Heavy hitters as horizontal bars.
    sklearn_ldp.AttributeHistogramEstimator : Histograms of categorical columns.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ldp import AttributeHistogramEstimator, HistogramDisplay
    >>> df = pd.DataFrame({"browser": ["firefox"] * 2500 + ["chrome", "safari"] * 1250})
    >>> est = AttributeHistogramEstimator(
    ...     strategy="smp", epsilon=1.0,
    ...     categories={"browser": ["firefox", "chrome", "safari"]}, random_state=0).fit(df)
    >>> display = HistogramDisplay.from_estimator(est, column="browser")
    >>> len(display.bars_)
    3
    """

    _kwargs_to = "``Axes.bar``"

    def __init__(self, estimates, std_errors, *, confidence=0.95, clip_negative=True,
                 true_values=None, units="share of users"):
        store_params(self, locals())

    @classmethod
    def from_estimator(cls, estimator, *, column=None, marginal=None, error=None,
                       confidence=0.95, clip_negative=True, true_values=None, ax=None,
                       **kwargs):
        """Draw the estimates of a fitted histogram, marginal or workload estimator.

        Parameters
        ----------
        estimator : AttributeHistogramEstimator, MarginalEstimator, WorkloadEstimator or \
AdaptiveQueryEstimator
            Fitted. Its own numbers are drawn: ``answers_`` (or ``histograms_[column]``,
            or ``predict([marginal])``) and the variances of ``expected_error_``.
        column : str or None, default=None
            AttributeHistogramEstimator: one column's histogram; None: every answer.
        marginal : str, tuple of str or None, default=None
            MarginalEstimator: the table drawn (attributes in column order); None: the
            first of the largest order.
        error : {"worst_case", "average_case"} or None, default=None
            The column of ``expected_error_`` the intervals come from. None:
            ``"worst_case"`` (the largest variance over the data: intervals that hold
            whatever the data), except for MarginalEstimator, whose only per-cell error
            is ``"average_case"`` (the mechanism's ``marginal_variance`` for users spread
            uniformly).
        <confidence parameter>
        clip_negative : bool, default=True
            No negative share drawn (see the class).
        true_values : array-like or None, default=None
            The true values, drawn as markers.
        <drawing sections>
        """
        estimates, std_errors, units = _histogram_numbers(estimator, column, marginal, error)
        return cls(estimates, std_errors, confidence=confidence, clip_negative=clip_negative,
                   true_values=true_values, units=units).plot(ax=ax, **kwargs)

    def plot(self, ax=None, **kwargs):
        """Draw the bars and their intervals.

        <plot sections>
        """
        estimates = pd.Series(self.estimates)
        n = estimates.shape[0]
        check_n_bars(n)
        truth = (None if self.true_values is None
                 else check_same_length("true_values", self.true_values, n))
        x = self._draw_bars(ax, estimates.to_numpy(dtype=float), self.std_errors,
                            (truth, "true value"), horizontal=False, kwargs=kwargs)
        ax = self.ax_
        labels = [_label(value) for value in estimates.index]
        crowded = sum(len(label) + 2 for label in labels) > 60  # characters across the axis
        ax.set_xticks(x, labels, rotation=45 if crowded else 0,
                      horizontalalignment="right" if crowded else "center")
        return self._labelled(str(estimates.index.name) if estimates.index.name else None,
                              self.units, loc="best")


class HeavyHitterDisplay(_BarsWithIntervals):
    """Heavy hitters as horizontal bars with confidence intervals, the largest on top.

    Parameters
    ----------
    values : array-like of shape (n_values,)
        The values found (labels of the bars).
    frequencies : array-like of shape (n_values,)
        Their estimated shares of the users.
    std_errors : array-like of shape (n_values,)
        The standard error of each share.
    <confidence parameter>
    clip_negative : bool, default=True
        Draw negative estimates at 0 and cut the intervals at 0 (see
        :class:`HistogramDisplay`).
    true_frequency : mapping or pandas.Series or None, default=None
        Value -> its true share (in a simulation), drawn as markers; values it does not
        hold get no marker.

    Attributes
    ----------
    <figure attributes>
    bars_ : matplotlib BarContainer
        The bars (widths: the estimated shares).
    errorbars_ : matplotlib ErrorbarContainer
        The intervals.
    <interval attributes: n_values, true_frequency>

    See Also
    --------
    HistogramDisplay : Bars of a histogram or marginal.
    sklearn_ldp.HeavyHitterEstimator : Finds the heavy hitters.

    Examples
    --------
    >>> from sklearn_ldp import HeavyHitterDisplay
    >>> display = HeavyHitterDisplay(["a.com", "b.org"], [0.3, 0.1], [0.01, 0.01]).plot()
    >>> [round(float(bar.get_width()), 2) for bar in display.bars_]
    [0.3, 0.1]
    """

    _kwargs_to = "``Axes.barh``"

    def __init__(self, values, frequencies, std_errors, *, confidence=0.95,
                 clip_negative=True, true_frequency=None):
        store_params(self, locals())

    @classmethod
    def from_estimator(cls, estimator, *, confidence=0.95, clip_negative=True,
                       true_frequency=None, ax=None, **kwargs):
        """Draw ``heavy_hitters_`` of a fitted HeavyHitterEstimator.

        Parameters
        ----------
        estimator : HeavyHitterEstimator
            Fitted; its ``heavy_hitters_`` columns ``value``, ``frequency`` and
            ``std_error`` are drawn.
        <confidence parameter>
        clip_negative : bool, default=True
            No negative share drawn (see the class).
        true_frequency : mapping or pandas.Series or None, default=None
            Value -> its true share, drawn as markers.
        <drawing sections>
        """
        fitted(estimator, (HeavyHitterEstimator,), "heavy_hitters_")
        table = estimator.heavy_hitters_
        if table.empty:
            raise ValueError("heavy_hitters_ is empty: no value to draw (a sketch ranks only "
                             "the values of candidates=; PEM and TreeHist found none above "
                             "the threshold).")
        return cls(table["value"].to_numpy(), table["frequency"].to_numpy(),
                   table["std_error"].to_numpy(), confidence=confidence,
                   clip_negative=clip_negative, true_frequency=true_frequency
                   ).plot(ax=ax, **kwargs)

    def plot(self, ax=None, **kwargs):
        """Draw the bars, the intervals and the true shares if given.

        <plot sections>
        """
        values = list(self.values)
        check_n_bars(len(values))
        frequencies = check_same_length("frequencies", self.frequencies, len(values))
        truth = None
        if self.true_frequency is not None:
            if not isinstance(self.true_frequency, Mapping | pd.Series):
                raise TypeError(f"true_frequency must be a mapping value -> share or a "
                                f"pandas Series, got {type(self.true_frequency).__name__}.")
            truth = np.array([float(self.true_frequency.get(v, np.nan)) for v in values])
        y = self._draw_bars(ax, frequencies, self.std_errors, (truth, "true share"),
                            horizontal=True, kwargs=kwargs)
        ax = self.ax_
        ax.set_yticks(y, [str(v) for v in values])
        ax.invert_yaxis()  # the most frequent first, at the top
        return self._labelled("share of users", loc="lower right")


class MeanDisplay(Display):
    """Means of numeric columns with their confidence intervals, one row per column.

    Parameters
    ----------
    means : pandas.Series or dict
        The estimated means, indexed by column (column -> mean).
    std_errors : array-like of shape (n_columns,)
        The standard error of each mean.
    <confidence parameter>
    true_means : array-like of shape (n_columns,) or None, default=None
        The true means (in a simulation), drawn as markers.

    Attributes
    ----------
    <figure attributes>
    errorbars_ : matplotlib ErrorbarContainer
        The means and their intervals.
    <interval attributes: n_columns, true_means>

    See Also
    --------
    sklearn_ldp.MeanEstimator : Estimates the means.

    Examples
    --------
    >>> from sklearn_ldp import MeanDisplay
    >>> display = MeanDisplay({"age": 41.0}, [0.5]).plot()
    >>> [round(float(v), 2) for v in display.lower_]
    [40.02]
    """

    _kwargs_to = "``Axes.errorbar``"

    def __init__(self, means, std_errors, *, confidence=0.95, true_means=None):
        store_params(self, locals())

    @classmethod
    def from_estimator(cls, estimator, *, error="std_error", confidence=0.95,
                       true_means=None, ax=None, **kwargs):
        """Draw ``mean_`` of a fitted MeanEstimator with its intervals.

        Parameters
        ----------
        estimator : MeanEstimator
            Fitted.
        error : {"std_error", "worst_case", "average_case"}, default="std_error"
            ``"std_error"``: ``mean_std_error_``, the error of the mean as an estimate of
            the population mean (privacy noise and spread of the values). The others: a
            column of ``expected_error_``, the privacy noise alone for the users fitted.
        <confidence parameter>
        true_means : array-like or None, default=None
            The true means, drawn as markers.
        <drawing sections>
        """
        fitted(estimator, (MeanEstimator,), "mean_")
        check_error_kind(error, ("std_error", *ERROR_KINDS))
        std_errors = (estimator.mean_std_error_.to_numpy() if error == "std_error" else
                      std_errors_from(estimator.expected_error_[error], "expected_error_"))
        return cls(estimator.mean_, std_errors, confidence=confidence,
                   true_means=true_means).plot(ax=ax, **kwargs)

    def plot(self, ax=None, **kwargs):
        """Draw each mean as a point with its interval.

        <plot sections>
        """
        means = pd.Series(self.means)
        n = means.shape[0]
        std_errors = check_same_length("std_errors", self.std_errors, n)
        center, self.lower_, self.upper_ = self._interval(means.to_numpy(dtype=float),
                                                          std_errors)
        ax = self._axes(ax)
        y = np.arange(n)
        self.errorbars_ = ax.errorbar(center, y, xerr=[center - self.lower_,
                                                       self.upper_ - center],
                                      **{"fmt": "o", "capsize": 4, "label":
                                         f"mean, {self._level()}", **kwargs})
        self.truth_ = None
        if self.true_means is not None:
            truth = check_same_length("true_means", self.true_means, n)
            (self.truth_,) = ax.plot(truth, y, linestyle="none", marker="D", color="C3",
                                     label="true mean")
        ax.set_yticks(y, [str(c) for c in means.index])
        ax.set_ylim(-0.5, n - 0.5)
        ax.invert_yaxis()
        return self._labelled("mean (value units)", loc="best")
