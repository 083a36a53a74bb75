"""Multi-dimensional range queries from TDG / HDG reports: :class:`MultiRangeEstimator`.

The mechanism and its grids are :mod:`sklearn_ldp.mechanisms.multi_range.grids`; consistency
and the answers :mod:`sklearn_ldp.mechanisms.multi_range.answers`."""

import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .._glue import refuse_malformed
from .._validation import check_nesting, check_positive_int, check_random_state, did_you_mean
from ..deploy.io import reports_from_frame
from ..deploy.io.formats import SPEC_KEY
from ..mechanisms.multi_range.answers import (
    N_ROUNDS,
    GridAnswers,
    check_bootstrap_size,
    check_bootstrap_work,
)
from ..mechanisms.multi_range.grids import GridRangeMechanism, multi_range_docstring
from ..reports import AggregatedReports, LDPReports
from ._base import add_batch, forget_fitted, with_tags
from ._docstrings import estimator_docstring

# Most queries of one predict call (each is a few dense rows of the finest grid).
MAX_QUERIES = 10**6
# Bootstrap replicates of the standard errors (each then has a relative error of about
# 1 / sqrt(2 * 100) = 7%), and the most accepted.
N_BOOTSTRAP, MAX_BOOTSTRAP = 100, 10**4


@multi_range_docstring
class MultiRangeEstimator(BaseEstimator):
    """Answer range queries over several numeric columns from TDG or HDG reports.

    Fit on the reports of ``LDPEncoder(bounds={...}, strategy="hdg")`` (or ``"tdg"``);
    :meth:`predict` gives the estimated fraction of the users inside boxes such as
    ``{"age": (30, 40), "income": (0, 5e4)}`` (closed ranges; columns not named are not
    constrained). The grids are made non-negative and consistent, HDG's pairs fitted to
    their 1-D grids (response matrices), and boxes of more than two columns answered by the
    maximum-entropy combination of their pairs (see ``docs/multi_range.md``).
    :meth:`predict_error` adds each answer's standard error (a parametric bootstrap of the
    whole post-processing) and a bound on its error from the uniformity assumption.

    Parameters
    ----------
    n_rounds : int, default=5
        Rounds of non-negativity and consistency between the grids.
    n_bootstrap : int, default=100
        Replicates of the parametric bootstrap that gives every answer's standard error: the
        grids' unbiased fractions redrawn at the fitted grids (Gaussian with their exact
        covariance), post-processed and answered again. 0 skips it: the standard error is
        then the analytic one of the grid serving a box of one or two columns (its
        unbiased, not post-processed, answer) and NaN for three or more. At most
        ``2^23 / resolution^2`` (``resolution`` the finest grid's cells per column).
    random_state : int, Generator or None, default=None
        Seeds the bootstrap's draws (the reports' noise is the encoder's).

    Attributes
    ----------
    mechanism_ : GridRangeMechanism
        The mechanism of the reports.
    columns_ : list of str
        The numeric columns, in the order of the mechanism's attributes.
    statistic_ : ndarray
        The aggregated statistic (sums over :meth:`partial_fit` batches).
    n_users_ : int
        Reports fitted.
    grids_ : dict
        Group (a tuple of column names) -> its consistent grid of fractions (a Series for a
        1-D grid, a DataFrame for a 2-D grid, labelled by the cells' lower edges).

    See Also
    --------
    sklearn_ldp.LDPEncoder : ``strategy="hdg"`` or ``"tdg"`` produces the reports.
    sklearn_ldp.RangeQueryEstimator : Ranges of one ordered column.

    <yang20 reference>

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_ldp import LDPEncoder
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"x": rng.random(100_000), "y": rng.random(100_000)})
    >>> enc = LDPEncoder(bounds={"x": (0, 1), "y": (0, 1)}, strategy="hdg", epsilon=2.0,
    ...                  n_users=100_000, random_state=0).fit()
    >>> est = MultiRangeEstimator().fit(enc.transform(df))
    >>> box = {"x": (0.0, 0.5), "y": (0.0, 0.5)}
    >>> answer = est.predict_error([box])
    >>> list(answer.columns)
    ['estimate', 'std_error', 'bias_bound']
    >>> bool(abs(answer["estimate"].iloc[0] - 0.25) < 5 * answer["std_error"].iloc[0])
    True
    """

    def __init__(self, n_rounds=N_ROUNDS, n_bootstrap=N_BOOTSTRAP, random_state=None):
        self.n_rounds = n_rounds
        self.n_bootstrap = n_bootstrap
        self.random_state = random_state

    @estimator_docstring
    def fit(self, X, y=None):
        """Aggregate TDG / HDG reports (forgetting earlier fits).

        Parameters
        ----------
        X : LDPReports or AggregatedReports
            Reports of a :class:`GridRangeMechanism`.
        <ignored y and self: MultiRangeEstimator>
        """
        check_nesting(self, locals())
        forget_fitted(self, ("mechanism_", "statistic_", "n_users_", "grids_", "columns_",
                             "_answers", "_replicates", "_first_batch"))
        return self.partial_fit(X)

    @estimator_docstring
    def partial_fit(self, X, y=None):
        """Add a batch of reports of the same mechanism.

        Parameters
        ----------
        X : LDPReports or AggregatedReports
            Reports of the mechanism already fitted (the first batch sets it).
        <ignored y and self: MultiRangeEstimator>

        Raises
        ------
        ValueError
            ``X`` holds no TDG / HDG reports, reports of another mechanism, or no report.
        """
        check_nesting(self, locals())
        check_positive_int(self.n_rounds, "n_rounds", minimum=0, maximum=1000)
        check_positive_int(self.n_bootstrap, "n_bootstrap", minimum=0, maximum=MAX_BOOTSTRAP)
        if self.n_bootstrap == 1:
            raise ValueError("n_bootstrap must be 0 (no bootstrap) or at least 2 (a spread "
                             "needs two replicates), got 1.")
        rng = np.random.default_rng(check_random_state(self.random_state))
        if isinstance(X, pd.DataFrame) and X.attrs.get(SPEC_KEY) is not None:
            X = reports_from_frame(X)  # LDPEncoder's set_output(transform="pandas") frames
        if not isinstance(X, LDPReports | AggregatedReports):
            refuse_malformed(X)
            raise ValueError(f"{type(self).__name__} fits the reports of LDPEncoder(bounds="
                             "..., strategy='hdg' or 'tdg').transform(X) (LDPReports or "
                             f"AggregatedReports), got {type(X).__name__}.")
        if not isinstance(X.mechanism, GridRangeMechanism):
            raise ValueError(f"{type(self).__name__} decodes TDG / HDG reports "
                             f"(strategy='hdg' or 'tdg'), got reports of {X.mechanism!r}.")
        check_bootstrap_size(X.mechanism, self.n_bootstrap)
        add_batch(self, X, first_call=not hasattr(self, "statistic_"))
        self.columns_ = list(self.mechanism_.columns)
        self._answers = GridAnswers(self.mechanism_, self.statistic_, n_rounds=self.n_rounds)
        # Drawn here, so that predict is deterministic; the tables are fitted when asked.
        self._replicates = (self._answers.bootstrap(self.n_bootstrap, rng)
                            if self.n_bootstrap else None)
        self.grids_ = self._labelled_grids()
        return self

    def _labelled_grids(self):
        mechanism = self.mechanism_
        grids = {}
        for group, grid in zip(mechanism.groups, self._answers.grids, strict=True):
            names = tuple(self.columns_[a] for a in group)
            edges = [self._edges(a, grid.shape[0]) for a in group]
            if len(group) == 1:
                grids[names] = pd.Series(grid, index=pd.Index(edges[0], name=names[0]),
                                         name="fraction")
            else:
                grids[names] = pd.DataFrame(grid, index=pd.Index(edges[0], name=names[0]),
                                            columns=pd.Index(edges[1], name=names[1]))
        return grids

    def _edges(self, attribute, cells):
        low, high = self.mechanism_.bounds[attribute]
        return low + (high - low) * np.arange(cells) / cells

    # ------------------------------------------------------------------ queries
    def _queries(self, X):
        """``X`` as a list of ``{column: (low, high)}`` boxes, each checked."""
        if isinstance(X, Mapping):
            boxes = [X]
        elif isinstance(X, pd.DataFrame):
            boxes = [{column: value for column, value in row.items()
                      if not (value is None or (isinstance(value, float) and np.isnan(value)))}
                     for row in X.to_dict(orient="records")]
        elif isinstance(X, (list, tuple)):
            boxes = list(X)
        else:
            raise ValueError(f"queries must be a dict column -> (low, high), a list of them or "
                             f"a DataFrame of (low, high) cells, got {type(X).__name__}.")
        if not boxes:
            raise ValueError("no query: give at least one dict column -> (low, high).")
        if len(boxes) > MAX_QUERIES:
            raise ValueError(f"{len(boxes)} queries in one call; at most {MAX_QUERIES} (split "
                             "them).")
        checked = []
        for i, box in enumerate(boxes):
            if not isinstance(box, Mapping) or not box:
                raise ValueError(f"query {i} must be a non-empty dict column -> (low, high), "
                                 f"got {box!r}.")
            ranges = {}
            for column, pair in box.items():
                if column not in self.columns_:
                    raise ValueError(f"query {i} names the column {column!r}, which the "
                                     f"reports do not hold (columns: {self.columns_})."
                                     f"{did_you_mean(str(column), self.columns_)}")
                ranges[self.columns_.index(column)] = _checked_range(pair, column, i)
            checked.append(ranges)
        return checked

    def _answer(self, X, errors=False):
        """Estimates of the boxes of ``X`` and, with ``errors``, their standard errors and
        bias bounds."""
        boxes = self._queries(X)
        estimate, std, bias = (np.empty(len(boxes)) for _ in range(3))
        by_attributes = {}
        for i, box in enumerate(boxes):
            by_attributes.setdefault(tuple(sorted(box)), []).append(i)
        if errors and self._replicates is not None:
            for attributes, rows in by_attributes.items():  # before any work
                check_bootstrap_work(len(attributes), len(rows), self.n_bootstrap,
                                     self.mechanism_.resolution)
        for attributes, rows in by_attributes.items():
            low = np.array([[boxes[i][a][0] for a in attributes] for i in rows])
            high = np.array([[boxes[i][a][1] for a in attributes] for i in rows])
            if not errors:
                estimate[rows] = self._answers.answer_batch(attributes, low, high)[0]
                continue
            estimate[rows], std[rows] = self._answers.answer(attributes, low, high)
            if self._replicates is not None:
                std[rows] = self._replicates.answer_batch(attributes, low, high).std(
                    axis=0, ddof=1)
            bias[rows] = self._answers.bias_bound(attributes, low, high)
        return estimate, std, bias

    def predict(self, X):
        """Estimated fraction of the users inside each box.

        Parameters
        ----------
        X : dict, list of dict or DataFrame
            One box ``{column: (low, high)}`` (closed ranges; unnamed columns are free), a
            list of them, or a DataFrame with one row per box and one column per numeric
            column, each cell a ``(low, high)`` pair or None.

        Returns
        -------
        ndarray of shape (n_queries,)
            The estimated fraction of the users in each box, in ``[0, 1]``.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "_answers")
        return self._answer(X)[0]

    def predict_error(self, X):
        """Each box's estimated fraction, its standard error and a bound on its bias.

        ``std_error`` is the spread of the answer over ``n_bootstrap`` replicates of the
        collection drawn at the fitted grids and post-processed like it (every box, of any
        number of columns); with ``n_bootstrap=0``, the analytic standard error of the
        unbiased answer of the grid serving the box (one column: HDG's 1-D grid, TDG's
        pairs; two: the pair's 2-D grid), NaN for three or more columns. It is noise only.
        ``bias_bound`` bounds the error of assuming values spread uniformly within a cell
        the box cuts (0 for boxes on the grid lines), from the fitted fractions of those
        cells (:meth:`GridAnswers.bias_bound
        <sklearn_ldp.mechanisms.multi_range.answers.GridAnswers.bias_bound>`); for three or
        more columns it does not cover the maximum-entropy step.

        Parameters
        ----------
        X : dict, list of dict or DataFrame
            The boxes, as :meth:`predict` takes them.

        Returns
        -------
        pandas.DataFrame
            Columns ``estimate``, ``std_error`` and ``bias_bound``, one row per box.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "_answers")
        estimate, std, bias = self._answer(X, errors=True)
        return pd.DataFrame({"estimate": estimate, "std_error": std, "bias_bound": bias})

    def __sklearn_tags__(self):
        return with_tags(super().__sklearn_tags__(), requires_fit=True)


def _checked_range(pair, column, i):
    """``(low, high)`` as floats, or a ValueError naming the query, column and value."""
    if isinstance(pair, (str, bytes)) or not hasattr(pair, "__len__") or len(pair) != 2:
        raise ValueError(f"query {i}: the range of {column!r} must be a pair (low, high), got "
                         f"{pair!r}.")
    values = []
    for value in pair:
        if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                or np.isnan(float(value)):
            raise ValueError(f"query {i}: the range of {column!r} must hold two numbers, got "
                             f"{pair!r}.")
        values.append(float(value))
    low, high = values
    if low > high:
        raise ValueError(f"query {i}: the range of {column!r} has low > high: {pair!r}.")
    return low, high
