"""Numeric columns as ordered categories with *public* bin edges.

LDP needs a public, finite domain, so a numeric column (a duration, an age, a time of day in
seconds) is declared by bin edges chosen without looking at the private data. Like
scikit-learn's ``KBinsDiscretizer``, but the edges are given, never learned.

:func:`interval_categories` turns edges into ``pandas.Interval`` categories. A
:class:`~sklearn_ldp.domain.Domain` built from them encodes the *raw numbers* directly (each
value goes to the bin that contains it), so an encoder needs no separate binning step::

    categories = {"duration": interval_categories([0, 60, 300, 900, 3600, np.inf])}
    LDPEncoder(categories=categories, strategy="hierarchical").fit_transform(df)

and :class:`~sklearn_ldp.estimators.range.RangeQueryEstimator` takes numeric range bounds and
returns bins as quantiles. :class:`PublicBinsDiscretizer` is the transformer form, for
pipelines that want the bins (or their ordinal codes) as data.
"""

import numbers

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._validation import check_nesting, refuse_deep_nesting

__all__ = ["PublicBinsDiscretizer", "interval_categories"]


def _check_edges(edges, column="edges"):
    """Edges as a float array: at least 2, strictly increasing, finite except at the ends."""
    if isinstance(edges, str) or not np.iterable(edges):
        raise ValueError(f"{column}: bin edges must be a sequence of numbers, got {edges!r}.")
    values = list(edges)
    if any(isinstance(v, bool) or not isinstance(v, numbers.Real) for v in values):
        raise ValueError(f"{column}: bin edges must be real numbers, got {values!r}.")
    array = np.asarray(values, dtype=float)
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"{column}: give at least 2 bin edges (one bin), got {array.size}.")
    if np.any(np.isnan(array)) or np.any(np.isinf(array[1:-1])):
        raise ValueError(f"{column}: bin edges must be finite (only the first may be -inf and "
                         f"the last +inf), got {values!r}.")
    if np.any(np.diff(array) <= 0):
        raise ValueError(f"{column}: bin edges must be strictly increasing, got {values!r}.")
    return array


@refuse_deep_nesting
def interval_categories(edges):
    """Ordered categories ``[e_0, e_1), [e_1, e_2), ...`` (left-closed) from public edges.

    Parameters
    ----------
    edges : sequence of float
        At least two strictly increasing edges; the first may be ``-inf`` and the last
        ``+inf`` (open-ended bins). A value equal to the last finite edge lies *outside* the
        last bin: end with a larger edge (or ``inf``) to include it.

    Returns
    -------
    list of pandas.Interval
        One left-closed interval per pair of consecutive edges, in order.

    Raises
    ------
    ValueError
        If there are fewer than two edges, they are not strictly increasing, or an inner
        edge is not finite.

    See Also
    --------
    PublicBinsDiscretizer : Replace numeric columns by their bins in a DataFrame.
    sklearn_ldp.domain.Domain : A domain whose interval categories encode raw numbers.

    Examples
    --------
    >>> interval_categories([0, 60, 120])
    [Interval(0.0, 60.0, closed='left'), Interval(60.0, 120.0, closed='left')]
    """
    array = _check_edges(edges)
    return list(pd.IntervalIndex.from_breaks(array, closed="left"))


class PublicBinsDiscretizer(TransformerMixin, BaseEstimator):
    """Bin numeric columns at public edges (``KBinsDiscretizer`` with given edges).

    ``fit`` is data-independent: it only checks the edges. ``transform`` replaces every
    binned column of a DataFrame by its bins (``encode="interval"``: ``pandas.Interval``
    values, the categories of :attr:`categories_`) or by the bin numbers
    (``encode="ordinal"``: ``0 .. k-1``); other columns pass through unchanged. Values outside
    the edges (or missing) raise a ValueError naming the column; nothing is dropped.

    Parameters
    ----------
    edges : dict
        Column name -> bin edges (see :func:`interval_categories`).
    encode : {"interval", "ordinal"}, default="interval"
        What replaces a binned value: its ``pandas.Interval`` (``"interval"``) or the number
        of its bin, ``0 .. k-1`` (``"ordinal"``).

    Attributes
    ----------
    edges_ : dict
        Column name -> its checked edges (float ndarray).
    categories_ : dict
        Column name -> its bins in order (for ``LDPEncoder(categories=...)``: the intervals,
        or ``list(range(k))`` with ``encode="ordinal"``).

    See Also
    --------
    interval_categories : The bins of one column as categories.
    sklearn_ldp.LDPEncoder : Privatizes the binned columns (pass it ``categories_``).
    sklearn.preprocessing.KBinsDiscretizer : The scikit-learn transformer that learns edges.

    Examples
    --------
    >>> df = pd.DataFrame({"age": [23.0, 41.5, 67.0]})
    >>> binner = PublicBinsDiscretizer({"age": [0, 30, 50, 120]}, encode="ordinal")
    >>> binner.fit_transform(df)["age"].tolist()
    [0, 1, 2]
    >>> binner.categories_
    {'age': [0, 1, 2]}
    """

    def __init__(self, edges, encode="interval"):
        self.edges = edges
        self.encode = encode

    def fit(self, X=None, y=None):
        """Check the edges (the data are not read).

        Parameters
        ----------
        X : object, optional
            Ignored: the edges are public, so fitting reads no data.
        y : None
            Ignored.

        Returns
        -------
        self : PublicBinsDiscretizer
            The fitted transformer (``edges_`` and ``categories_`` set).

        Raises
        ------
        ValueError
            If ``edges`` is not a non-empty dict of valid edges or ``encode`` is unknown.
        """
        check_nesting(self, locals())
        if not isinstance(self.edges, dict) or not self.edges:
            raise ValueError("edges must be a non-empty dict column -> bin edges, e.g. "
                             "{'age': [0, 30, 50, 120]}.")
        if self.encode not in ("interval", "ordinal"):
            raise ValueError(f"encode must be 'interval' or 'ordinal', got {self.encode!r}.")
        self.edges_ = {column: _check_edges(edges, repr(column))
                       for column, edges in self.edges.items()}
        self.categories_ = {
            column: (list(pd.IntervalIndex.from_breaks(edges, closed="left"))
                     if self.encode == "interval" else list(range(edges.size - 1)))
            for column, edges in self.edges_.items()
        }
        return self

    def transform(self, X):
        """The DataFrame with every binned column replaced by its bins.

        Parameters
        ----------
        X : DataFrame
            The data; it must hold every column of ``edges``. Other columns pass through.

        Returns
        -------
        DataFrame
            A copy of ``X`` whose binned columns hold ``pandas.Interval`` values
            (``encode="interval"``) or bin numbers (``encode="ordinal"``).

        Raises
        ------
        ValueError
            If ``X`` is not a DataFrame, lacks a binned column, or has a missing, non-numeric
            or out-of-bins value in one (the column is named).
        """
        check_nesting(self, locals())
        check_is_fitted(self, "edges_")
        if not isinstance(X, pd.DataFrame):
            raise ValueError("PublicBinsDiscretizer transforms a pandas DataFrame (the binned "
                             "columns are found by name).")
        missing = [column for column in self.edges_ if column not in X.columns]
        if missing:
            raise ValueError(f"the data has no column(s) {missing!r} to bin.")
        result = X.copy()
        for column, edges in self.edges_.items():
            values = pd.to_numeric(X[column], errors="coerce").to_numpy(dtype=float)
            bad = np.isnan(values) | (values < edges[0]) | (values >= edges[-1])
            if bad.any():
                shown = X[column].to_numpy()[bad][:5].tolist()
                raise ValueError(
                    f"column {column!r} has {int(bad.sum())} values outside the public bins "
                    f"[{edges[0]}, {edges[-1]}) or not numbers, e.g. {shown}; widen the edges "
                    "(the first may be -inf, the last inf)."
                )
            codes = np.searchsorted(edges, values, side="right") - 1
            if self.encode == "ordinal":
                result[column] = codes
            else:
                intervals = np.asarray(self.categories_[column], dtype=object)
                result[column] = pd.Series(intervals[codes], index=X.index, dtype=object)
        return result

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = True
        return tags
