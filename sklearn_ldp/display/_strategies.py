"""The expected error of several strategies side by side."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from .._validation import store_params
from ..model_selection import ExpectedErrorScorer, expected_error_scorer
from ._common import Display


def _describe(scorer):
    """Axis label of the errors a scorer gives."""
    label = f"expected {scorer.kind.replace('_', '-')} error\n(total variance"
    if scorer.per_query:
        label += " per query"
    label += ", per user)" if scorer.n_users is None else f", {scorer.n_users:,} users)"
    return label


def _candidate_name(params):
    """``hadamard`` from ``{"ldpencoder__strategy": "hadamard"}``; ``strategy=hadamard,
    branching=4`` when the grid has several parameters."""
    if len(params) == 1:
        return str(next(iter(params.values())))
    return ", ".join(f"{key.rpartition('__')[2]}={value}" for key, value in params.items())


class StrategyComparisonDisplay(Display):
    """The expected error of several strategies as horizontal bars, the least highlighted.

    The errors are the analytic ones of :func:`~sklearn_ldp.expected_error_scorer`: known
    before any report is collected, exact, the same at every run.

    Parameters
    ----------
    names : list of str
        One name per strategy.
    errors : array-like of shape (n_strategies,)
        The expected error of each (non-negative; ``inf`` for a strategy that cannot answer
        the workload without bias, drawn as a missing bar).
    error_label : str, default="expected error"
        Label of the error axis.
    log_scale : bool or None, default=None
        A logarithmic error axis; None: when the errors span more than a factor 100.

    Attributes
    ----------
    <figure attributes>
    bars_ : matplotlib BarContainer
        One bar per strategy.
    best_ : str
        The name of the strategy with the least error.

    See Also
    --------
    sklearn_ldp.expected_error_scorer : The scorer of the errors.

    Examples
    --------
    >>> from sklearn_ldp import LDPEncoder, StrategyComparisonDisplay
    >>> encoders = [LDPEncoder(categories={"day": range(7)}, strategy=s, epsilon=1.0).fit()
    ...             for s in ("randomized_response", "hadamard")]
    >>> display = StrategyComparisonDisplay.from_encoders(encoders, workload="prefix")
    >>> display.best_
    'randomized_response'
    """

    _kwargs_to = "``Axes.barh``"

    def __init__(self, names, errors, *, error_label="expected error", log_scale=None):
        store_params(self, locals())

    @classmethod
    def from_search(cls, search, *, ax=None, **kwargs):
        """Draw the candidates of a fitted search scored by ``expected_error_scorer``.

        Parameters
        ----------
        search : GridSearchCV or RandomizedSearchCV
            Fitted with ``scoring=expected_error_scorer(...)``; the error of each candidate
            is minus its ``mean_test_score``.
        <drawing sections>
        """
        check_is_fitted(search, "cv_results_")
        scorer = getattr(search, "scorer_", None)
        if not isinstance(scorer, ExpectedErrorScorer):
            raise TypeError(f"the search must be scored by expected_error_scorer (its scores "
                            f"are minus errors); it was scored by {scorer!r}.")
        results = search.cv_results_
        names = [_candidate_name(params) for params in results["params"]]
        errors = -np.asarray(results["mean_test_score"], dtype=float)
        return cls(names, errors, error_label=_describe(scorer)).plot(ax=ax, **kwargs)

    @classmethod
    def from_encoders(cls, encoders, *, workload=None, kind="worst_case", n_users=None,
                      names=None, ax=None, **kwargs):
        """Draw the expected error of fitted encoders (or pipelines) on a workload.

        Parameters
        ----------
        encoders : list
            Fitted :class:`~sklearn_ldp.LDPEncoder` objects (or estimators and Pipelines
            holding one), all at the same epsilon.
        workload : Workload, query matrix, str or None, default=None
            The queries scored, as in :func:`~sklearn_ldp.expected_error_scorer`. None:
            each encoder's own workload.
        kind : {"worst_case", "average_case"}, default="worst_case"
            Which error, as in :func:`~sklearn_ldp.expected_error_scorer`.
        n_users : int or None, default=None
            The error for this many users; None: per user.
        names : list of str or None, default=None
            One name per encoder; None: the strategy of each (``strategy_``).
        <drawing sections>
        """
        encoders = list(encoders)
        if not encoders:
            raise ValueError("encoders must hold at least one fitted encoder.")
        if names is None:
            names = [str(getattr(e, "strategy_", getattr(e, "strategy", type(e).__name__)))
                     for e in encoders]
        elif len(names) != len(encoders):
            raise ValueError(f"names must hold one name per encoder ({len(encoders)}), got "
                             f"{len(names)}.")
        for encoder in encoders:
            check_is_fitted(encoder)
        epsilon = encoders[0].epsilon_ if hasattr(encoders[0], "epsilon_") else None
        if epsilon is None:
            raise TypeError(f"encoders must be fitted LDPEncoder objects; got "
                            f"{type(encoders[0]).__name__}.")
        scorer = expected_error_scorer(epsilon=epsilon, workload=workload, kind=kind,
                                       n_users=n_users)
        errors = [-scorer(encoder) for encoder in encoders]
        return cls(names, errors, error_label=_describe(scorer)).plot(ax=ax, **kwargs)

    def plot(self, ax=None, **kwargs):
        """Draw one bar per strategy, the least error highlighted.

        <plot sections>
        """
        names = [str(name) for name in self.names]
        errors = np.asarray(self.errors, dtype=float)
        if errors.shape != (len(names),) or not names:
            raise ValueError(f"errors must hold one number per name ({len(names)}), got "
                             f"shape {errors.shape}.")
        if np.any(np.isnan(errors)) or np.any(errors < 0):
            raise ValueError("errors must be non-negative numbers (inf for a strategy that "
                             "cannot answer); got NaN or a negative value. A search whose "
                             "scorer refused a candidate reports NaN: see its warning.")
        finite = np.isfinite(errors)
        if not finite.any():
            raise ValueError("no strategy has a finite error: nothing to compare.")
        best = int(np.argmin(errors))
        self.best_ = names[best]
        ax = self._axes(ax)
        y = np.arange(len(names))
        colors = ["C2" if i == best else "C0" for i in range(len(names))]
        self.bars_ = ax.barh(y, np.where(finite, errors, 0.0), **{"color": colors, **kwargs})
        log = self.log_scale
        if log is None:
            shown = errors[finite & (errors > 0)]
            log = shown.size > 0 and shown.max() > 100 * shown.min()
        if log:
            ax.set_xscale("log")
        labels = [name if finite[i] else f"{name} (cannot answer)"
                  for i, name in enumerate(names)]
        ax.set_yticks(y, labels)
        ax.invert_yaxis()
        ax.set_title(f"least error: {self.best_}", fontsize=10)
        return self._labelled(str(self.error_label))
