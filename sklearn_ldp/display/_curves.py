"""Curves with bands: a CDF with its quantiles, a series over rounds."""

import numpy as np
import pandas as pd

from .._validation import store_params
from ..estimators import DistributionEstimator, LongitudinalEstimator, RangeQueryEstimator
from ._common import Display, check_error_kind, check_same_length, fitted, std_errors_from


def _levels(quantiles):
    levels = np.atleast_1d(np.asarray(quantiles if quantiles is not None else [], dtype=float))
    if levels.ndim != 1 or np.any(~np.isfinite(levels)) or np.any((levels < 0) | (levels > 1)):
        raise ValueError(f"quantiles must be levels in [0, 1], got {quantiles!r}.")
    return levels


def _range_numbers(estimator, error, levels):
    """x positions, CDF, band points and quantile positions of a RangeQueryEstimator."""
    error = check_error_kind(error, ("worst_case", "average_case"))
    labels = estimator.labels_
    numeric = pd.api.types.is_numeric_dtype(labels.dtype)
    x = labels.to_numpy(dtype=float) if numeric else np.arange(labels.shape[0], dtype=float)
    # expected_error_ holds the CDF's variance at evenly spaced prefixes (labelled by the
    # prefix's last cell): the band is drawn there.
    points = labels.get_indexer(estimator.expected_error_.index)
    std = std_errors_from(estimator.expected_error_[error], "expected_error_")
    found = labels.get_indexer(estimator.quantiles(levels)) if levels.size else []
    domain = estimator.domain_
    name = labels.name or (domain.columns[0] if domain is not None and domain.n_columns == 1
                           else "cell")
    return {"x": x, "cdf": estimator.cdf_, "band_x": x[points],
            "band_std": std, "band_cdf": estimator.cdf_[points],
            "quantile_values": x[np.asarray(found, dtype=np.int64)],
            "tick_labels": None if numeric else [str(v) for v in labels],
            "xlabel": name}


def _distribution_numbers(estimator, column, levels):
    """The CDF of a DistributionEstimator's column at its bin edges (no analytic band)."""
    column = estimator.column_ if column is None else column
    curve = estimator.cdf(column=column)  # refuses an unknown column
    left = estimator.distributions_[column].index[0].left
    return {"x": np.concatenate([[left], curve.index.to_numpy(dtype=float)]),
            "cdf": np.concatenate([[0.0], curve.to_numpy()]), "band_x": None,
            "band_std": None, "band_cdf": None,
            "quantile_values": (np.asarray(estimator.quantiles(levels, column=column))
                                if levels.size else np.empty(0)),
            "tick_labels": None, "xlabel": column}


class CDFDisplay(Display):
    """An estimated CDF with its confidence band and chosen quantiles.

    Build it with :meth:`from_estimator`. The band is ``cdf +- z * std_error`` at the
    points where the estimator gives the CDF's analytic error, cut to ``[0, 1]`` (a CDF
    lies there). A DistributionEstimator's CDF comes from an EM fit, which has no analytic
    error: it is drawn without a band.

    Parameters
    ----------
    x : array-like of shape (n_points,)
        Where the CDF is known: values, or cell positions for categories.
    cdf : array-like of shape (n_points,)
        The estimated fraction of users at or below each point.
    band_x, band_cdf, band_std : array-like of shape (n_band,) or None, default=None
        Points of the band, the CDF there and its standard error; None: no band.
    confidence : float, default=0.95
        Level of the band, in (0, 1).
    quantile_levels : array-like of float, default=()
        Levels of the quantiles marked.
    quantile_values : array-like of float, default=()
        The estimated quantile of each level, on the x axis.
    tick_labels : list of str or None, default=None
        Labels of the cells when ``x`` holds cell positions.
    xlabel : str, default=""
        Label of the x axis.

    Attributes
    ----------
    <figure attributes>
    line_ : matplotlib Line2D
        The CDF.
    band_ : matplotlib PolyCollection or None
        The band.
    lower_, upper_ : ndarray of shape (n_band,) or None
        The band's ends, in ``[0, 1]``.
    quantile_lines_ : list of matplotlib Line2D
        One vertical line per quantile.

    See Also
    --------
    sklearn_ldp.RangeQueryEstimator : CDF and quantiles of an ordered column.
    sklearn_ldp.DistributionEstimator : Distribution of a numeric column.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ldp import CDFDisplay, RangeQueryEstimator
    >>> df = pd.DataFrame({"minute": list(range(60)) * 80})
    >>> est = RangeQueryEstimator(strategy="hierarchical", epsilon=1.0,
    ...                           categories={"minute": range(60)}, random_state=0).fit(df)
    >>> display = CDFDisplay.from_estimator(est, quantiles=[0.5])
    >>> len(display.quantile_lines_)
    1
    """

    _kwargs_to = "``Axes.plot`` (the CDF line)"

    def __init__(self, x, cdf, *, band_x=None, band_cdf=None, band_std=None, confidence=0.95,
                 quantile_levels=(), quantile_values=(), tick_labels=None, xlabel=""):
        store_params(self, locals())

    @classmethod
    def from_estimator(cls, estimator, *, column=None, error="worst_case", confidence=0.95,
                       quantiles=(0.25, 0.5, 0.75), ax=None, **kwargs):
        """Draw the CDF of a fitted RangeQueryEstimator or DistributionEstimator.

        Parameters
        ----------
        estimator : RangeQueryEstimator or DistributionEstimator
            Fitted. RangeQueryEstimator: ``cdf_``, the band from ``expected_error_``, the
            quantiles from :meth:`~sklearn_ldp.RangeQueryEstimator.quantile`.
            DistributionEstimator: :meth:`~sklearn_ldp.DistributionEstimator.cdf` and
            :meth:`~sklearn_ldp.DistributionEstimator.quantiles`, no band.
        column : str or None, default=None
            DistributionEstimator: the column (None: ``column_``).
        error : {"worst_case", "average_case"}, default="worst_case"
            RangeQueryEstimator: the column of ``expected_error_`` of the band.
            ``"worst_case"`` holds whatever the data.
        confidence : float, default=0.95
            Level of the band.
        quantiles : array-like of float, default=(0.25, 0.5, 0.75)
            Levels of the quantiles marked by vertical lines; empty for none.
        <drawing sections>
        """
        fitted(estimator, (RangeQueryEstimator, DistributionEstimator), "cdf_")
        levels = _levels(quantiles)
        if isinstance(estimator, RangeQueryEstimator):
            if column is not None:
                raise ValueError("column= applies to DistributionEstimator; a "
                                 "RangeQueryEstimator answers one ordered column.")
            numbers = _range_numbers(estimator, error, levels)
        else:
            numbers = _distribution_numbers(estimator, column, levels)
        return cls(numbers["x"], numbers["cdf"], band_x=numbers["band_x"],
                   band_cdf=numbers["band_cdf"], band_std=numbers["band_std"],
                   confidence=confidence, quantile_levels=levels,
                   quantile_values=numbers["quantile_values"],
                   tick_labels=numbers["tick_labels"], xlabel=numbers["xlabel"]
                   ).plot(ax=ax, **kwargs)

    def plot(self, ax=None, **kwargs):
        """Draw the CDF, its band and the quantiles.

        <plot sections>
        """
        x = np.asarray(self.x, dtype=float)
        cdf = check_same_length("cdf", self.cdf, x.shape[0])
        levels = _levels(self.quantile_levels)
        values = check_same_length("quantile_values", self.quantile_values, levels.shape[0])
        ax = self._axes(ax)
        step = self.tick_labels is not None or self.band_x is not None
        (self.line_,) = ax.plot(x, cdf, **{"drawstyle": "steps-post" if step else "default",
                                           "label": "estimated CDF", **kwargs})
        self.band_ = self.lower_ = self.upper_ = None
        if self.band_x is not None:
            band_x = np.asarray(self.band_x, dtype=float)
            band_cdf = check_same_length("band_cdf", self.band_cdf, band_x.shape[0])
            band_std = check_same_length("band_std", self.band_std, band_x.shape[0])
            _, lower, upper = self._interval(band_cdf, band_std)
            self.lower_, self.upper_ = np.clip(lower, 0, 1), np.clip(upper, 0, 1)
            self.band_ = ax.fill_between(band_x, self.lower_, self.upper_, step="post",
                                         alpha=0.25, color=self.line_.get_color(),
                                         label=self._level())
        self.quantile_lines_ = [
            ax.axvline(value, color="gray", linestyle="--", linewidth=1)
            for value in values]
        for level, value in zip(levels, values, strict=True):
            ax.annotate(f"q{level:g}", (value, 0.02), xytext=(3, 0),
                        textcoords="offset points", color="gray", fontsize=8)
        if self.tick_labels is not None and len(self.tick_labels) <= 20:
            ax.set_xticks(x, self.tick_labels)
        ax.set_ylim(0, 1.02)
        return self._labelled(str(self.xlabel), "share of users at or below", loc="upper left")


class LongitudinalDisplay(Display):
    """Estimates over collection rounds, one line per category, with confidence bands.

    Parameters
    ----------
    estimates : pandas.DataFrame
        One row per round (the index), one column per category.
    standard_errors : pandas.DataFrame
        The standard error of every estimate, same shape.
    confidence : float, default=0.95
        Level of the bands, in (0, 1).
    clip_negative : bool, default=True
        Draw negative estimates and band ends at 0 (counts, shares and the counters' means
        are never negative); ``estimates`` keeps the numbers as estimated.
    units : str, default="estimate"
        Label of the value axis.
    true_values : pandas.DataFrame, array-like of the shape of ``estimates`` or None, \
default=None
        The true values (in a simulation), drawn as dashed lines.

    Attributes
    ----------
    <figure attributes>
    lines_ : dict
        Category -> its matplotlib Line2D.
    bands_ : dict
        Category -> its band (matplotlib PolyCollection).
    lower_, upper_ : pandas.DataFrame
        The bands' ends, as drawn.
    truth_ : dict
        Category -> the Line2D of its true values (empty without ``true_values``).

    See Also
    --------
    sklearn_ldp.LongitudinalEstimator : Estimates every round.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ldp import LongitudinalDisplay
    >>> estimates = pd.DataFrame({"mail": [0.70, 0.72], "maps": [0.30, 0.28]})
    >>> errors = pd.DataFrame({"mail": [0.02, 0.02], "maps": [0.02, 0.02]})
    >>> display = LongitudinalDisplay(estimates, errors).plot()
    >>> sorted(display.lines_)
    ['mail', 'maps']
    """

    _kwargs_to = "``Axes.plot`` (every line)"

    def __init__(self, estimates, standard_errors, *, confidence=0.95, clip_negative=True,
                 units="estimate", true_values=None):
        store_params(self, locals())

    @classmethod
    def from_estimator(cls, estimator, *, columns=None, confidence=0.95, clip_negative=True,
                       true_values=None, ax=None, **kwargs):
        """Draw ``estimates_`` of a fitted LongitudinalEstimator with bands from
        ``standard_errors_``.

        Parameters
        ----------
        estimator : LongitudinalEstimator
            Fitted (one or more rounds).
        columns : list or None, default=None
            The categories drawn; None: every column of ``estimates_``.
        confidence : float, default=0.95
            Level of the bands.
        clip_negative : bool, default=True
            No negative estimate drawn.
        true_values : pandas.DataFrame, array-like or None, default=None
            The true values of the columns drawn, one row per round, as dashed lines.
        <drawing sections>
        """
        fitted(estimator, (LongitudinalEstimator,), "estimates_")
        estimates, errors = estimator.estimates_, estimator.standard_errors_
        if columns is not None:
            missing = [c for c in columns if c not in estimates.columns]
            if missing or len(columns) == 0:
                raise ValueError(f"columns must be a non-empty list of columns of estimates_ "
                                 f"{list(estimates.columns)!r}; not there: {missing!r}.")
            estimates, errors = estimates[list(columns)], errors[list(columns)]
        if list(estimator.estimates_.columns) == ["mean"]:  # a counter's mean (1bitmean)
            units = "mean"
        else:
            units = "share of users" if estimator.normalize else "users"
        return cls(estimates, errors, confidence=confidence, clip_negative=clip_negative,
                   units=units, true_values=true_values).plot(ax=ax, **kwargs)

    def plot(self, ax=None, **kwargs):
        """Draw one line and one band per category.

        <plot sections>
        """
        estimates = pd.DataFrame(self.estimates)
        errors = pd.DataFrame(self.standard_errors)
        if errors.shape != estimates.shape or list(errors.columns) != list(estimates.columns):
            raise ValueError(f"standard_errors must have the shape and columns of estimates "
                             f"{estimates.shape}, got {errors.shape}.")
        truth = None
        if self.true_values is not None:
            truth = np.asarray(self.true_values, dtype=float)
            if truth.shape != estimates.shape or not np.all(np.isfinite(truth)):
                raise ValueError(f"true_values must hold finite numbers in the shape of "
                                 f"estimates {estimates.shape}, got shape {truth.shape}.")
        # Column -> (center, lower, upper): every input checked before anything is drawn.
        intervals = {column: self._interval(estimates[column], check_same_length(
            f"standard_errors[{column!r}]", errors[column], estimates.shape[0]))
            for column in estimates.columns}
        ax = self._axes(ax)
        from matplotlib.ticker import MaxNLocator  # matplotlib: only when drawing

        rounds = estimates.index.to_numpy()
        self.truth_ = {}
        self.lines_, self.bands_ = {}, {}
        for column, (center, lower, upper) in intervals.items():
            (line,) = ax.plot(rounds, center, **{"marker": "o", "label": str(column),
                                                 **kwargs})
            self.lines_[column] = line
            self.bands_[column] = ax.fill_between(rounds, lower, upper, alpha=0.2,
                                                  color=line.get_color())
            if truth is not None:
                (self.truth_[column],) = ax.plot(
                    rounds, truth[:, estimates.columns.get_loc(column)], linestyle="--",
                    linewidth=1, color=line.get_color())
        self.lower_, self.upper_ = (
            pd.DataFrame({column: ends[side] for column, ends in intervals.items()},
                         index=estimates.index) for side in (1, 2))
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # rounds are whole numbers
        return self._labelled(str(estimates.index.name or "round"),
                              f"{self.units} ({self._level()})", loc="best",
                              ncol=min(3, len(self.lines_)), fontsize="small")
