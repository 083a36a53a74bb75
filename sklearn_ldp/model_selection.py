"""Choose a strategy from its analytic expected error: a scikit-learn scorer that spends no
privacy budget.

Every strategy in this package is an unbiased linear estimator whose error is known in
closed form before any report is collected: one user of type ``u`` adds ``z_u`` to the total
variance of the workload answers (``Mechanism.per_user_variance``), so ``N`` users give
``N max_u z_u`` in the worst case and ``N mean_u z_u`` for users spread uniformly over the
domain. :func:`expected_error_scorer` scores a fitted :class:`~sklearn_ldp.LDPEncoder` (or a
Pipeline or estimator holding its mechanism) by minus that error, with the function
``strategy="auto"`` ranks its candidates by, so ``GridSearchCV`` over strategies picks the one
with the least error, exactly and deterministically, from the public domain and workload only.

The held-out score of :meth:`~sklearn_ldp.WorkloadEstimator.score` is unbiased but its
standard deviation is of the order of the error it estimates at every number of users, so a
few folds rank strategies little better than chance (``docs/model_selection.md`` has the
measured pick rates), and every fold privatizes real users again.
"""

import math
import numbers

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._glue import WORKLOAD_BY_NAME, resolve_workload
from ._validation import check_epsilon, check_positive_int, refuse_deep_nesting
from .encoder import LDPEncoder
from .estimators import WorkloadEstimator
from .mechanisms.central.matrix import MatrixMechanism
from .mechanisms.multi_attribute.columns import ColumnsMechanism
from .selection.baselines import variances
from .workloads import Workload, as_workload, histogram

KINDS = ("worst_case", "average_case")

# Two budgets closer than this (relative) are the same budget: 1 and 1.0, or a value that
# went through a JSON round trip.
_EPSILON_RTOL = 1e-9


class ExpectedErrorScorer:
    """Minus the analytic expected error of a fitted LDP strategy on a workload.

    Build it with :func:`expected_error_scorer`, which documents the parameters. It is a
    scikit-learn scorer: ``scorer(estimator, X, y=None)`` returns a float, greater is
    better, and ``X`` and ``y`` are ignored (the error does not depend on the data). It holds
    no state between calls, so it is safe with ``n_jobs > 1`` and reusable across searches.
    """

    def __init__(self, *, epsilon, delta=None, workload=None, kind="worst_case",
                 n_users=None, per_query=False):
        self.epsilon = check_epsilon(epsilon)
        if delta is None:
            self.delta = 0.0
        elif (isinstance(delta, bool) or not isinstance(delta, numbers.Real)
              or not 0.0 <= delta < 1.0):
            raise ValueError(f"delta must be None or a number in [0, 1), got {delta!r}.")
        else:
            self.delta = float(delta)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
        self.kind = kind
        self.n_users = None if n_users is None else check_positive_int(n_users, "n_users")
        if not isinstance(per_query, bool | np.bool_):
            raise TypeError(f"per_query must be True or False, got {per_query!r}.")
        self.per_query = bool(per_query)
        if isinstance(workload, str) and workload not in WORKLOAD_BY_NAME:
            raise ValueError(f"workload must be a Workload, a query matrix, None or one of "
                             f"{sorted(WORKLOAD_BY_NAME)}, got {workload!r}.")
        self.workload = workload

    def __call__(self, estimator, X=None, y=None, **kwargs):
        """Minus the expected error of the fitted strategy in ``estimator`` (``X``, ``y`` and
        any scoring keyword are ignored)."""
        mechanism, fitted_workload, domain = _fitted_parts(estimator)
        self._check_privacy(mechanism)
        if isinstance(mechanism, ColumnsMechanism):
            return self._score_columns(mechanism)
        workload = self._workload(mechanism, fitted_workload, domain)
        try:
            worst, average = variances(mechanism, workload.gram())
        except NotImplementedError as exc:
            # The marginal strategies have per-marginal variances only.
            raise ValueError(
                f"the {mechanism.name!r} strategy has no per-user variance on a workload "
                f"matrix ({exc}); score marginal strategies with MarginalEstimator or "
                "compare the per_user_variance column of LDPEncoder.expected_error_.") from exc
        error = worst if self.kind == "worst_case" else average
        # A positive factor common to every candidate: it sets the units, never the ranking.
        scale = 1.0 if self.n_users is None else float(self.n_users)
        if self.per_query:
            scale /= workload.n_queries
        return -scale * error

    def _score_columns(self, mechanism):
        """Minus the error of a record of several columns: its per-column answers."""
        if self.workload is not None:
            raise ValueError(
                "a record of several columns (LDPEncoder with bounds= or 'spl'/'smp'/'rsfd') "
                "answers per-column means and histograms, not a workload over joint cells: "
                f"leave workload=None in expected_error_scorer (got {self.workload!r}).")
        index = 0 if self.kind == "worst_case" else 1
        counts, means, n_answers = columns_error(mechanism)
        n = 1.0 if self.n_users is None else float(self.n_users)
        # A count's variance grows with N, a mean's falls with it (per-user units at N = 1).
        error = counts[index] * n + means[index] / n
        return -(error / n_answers if self.per_query else error)

    def _check_privacy(self, mechanism):
        """Refuse a candidate whose guarantee is not the declared (epsilon, delta)."""
        epsilon = float(mechanism.epsilon)
        if not math.isclose(epsilon, self.epsilon, rel_tol=_EPSILON_RTOL):
            raise ValueError(
                f"expected_error_scorer(epsilon={self.epsilon!r}) was given a candidate with "
                f"epsilon={epsilon!r} (strategy {mechanism.name!r}). The error always falls "
                "as epsilon grows, so ranking candidates across budgets just picks the "
                "largest: epsilon is a privacy policy, not a hyperparameter. Fix it in the "
                "encoder, leave it out of the parameter grid, and search strategies at that "
                "budget (one scorer per budget).")
        # A pure epsilon-LDP mechanism also meets every (epsilon, delta) policy: delta may be
        # smaller than declared, never larger.
        delta = float(getattr(mechanism, "delta", None) or 0.0)
        if delta > self.delta * (1.0 + _EPSILON_RTOL):
            raise ValueError(
                f"expected_error_scorer(delta={self.delta!r}) was given a candidate with "
                f"delta={delta!r} (strategy {mechanism.name!r}): its guarantee is weaker than "
                "the declared one. Pass the delta your policy allows to the scorer.")

    def _workload(self, mechanism, fitted_workload, domain):
        """The workload to score: the scorer's, else the one the estimator answers."""
        if self.workload is None:
            if fitted_workload is None:
                raise ValueError(
                    f"no workload to score the {mechanism.name!r} strategy on: the estimator "
                    "keeps none (a marginal strategy, or RangeQueryEstimator alone); pass "
                    "workload= to expected_error_scorer.")
            return fitted_workload
        if domain is not None:
            return resolve_workload(self.workload, domain)
        if isinstance(self.workload, str):
            return WORKLOAD_BY_NAME[self.workload](mechanism.n_inputs)
        workload = self.workload if isinstance(self.workload, Workload) else as_workload(
            self.workload)
        workload.check_width(mechanism.n_inputs)
        return workload

    def __repr__(self):
        parts = [f"epsilon={self.epsilon!r}"]
        if self.delta:
            parts.append(f"delta={self.delta!r}")
        if self.workload is not None:
            label = self.workload if isinstance(self.workload, str) else getattr(
                self.workload, "name", type(self.workload).__name__)
            parts.append(f"workload={label!r}")
        parts.append(f"kind={self.kind!r}")
        if self.n_users is not None:
            parts.append(f"n_users={self.n_users!r}")
        if self.per_query:
            parts.append("per_query=True")
        return f"expected_error_scorer({', '.join(parts)})"


def columns_error(mechanism):
    """The analytic error of a record of several columns, per user, by kind of answer.

    Categorical columns: the total variance of every category's count, at its worst over the
    data and for uniform data (a protocol's :meth:`histogram_variance
    <sklearn_ldp.mechanisms.multi_attribute.mechanisms.MultiAttributeMechanism.histogram_variance>`,
    an
    oracle's total over its cells: the numbers ``strategy="auto"`` compares). Numeric columns:
    the summed variance of one user's contribution to the means (value units), at its worst
    over the values and for values uniform over the bounds.

    Parameters
    ----------
    mechanism : ColumnsMechanism
        The fitted encoder's ``mechanism_``.

    Returns
    -------
    counts : tuple of float
        ``(worst, average)`` per-user variance of the counts (``N`` users: times ``N``).
    means : tuple of float
        ``(worst, average)`` per-user variance of the means (``N`` users: divided by ``N``).
    n_answers : int
        Number of answers (categories and means).

    Raises
    ------
    ValueError
        For a ``"square_wave"`` column, whose EM estimate has no closed-form error.

    See Also
    --------
    expected_error_scorer : Scores with these numbers.

    References
    ----------
    .. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Random sampling plus
       fake data: multidimensional frequency estimates with local differential privacy",
       CIKM 2021.
    .. [2] N. Wang et al., "Collecting and analyzing multidimensional data with local
       differential privacy", ICDE 2019.

    Examples
    --------
    >>> from sklearn_ldp import LDPEncoder
    >>> encoder = LDPEncoder(categories={"a": [0, 1, 2], "b": [0, 1]}, strategy="smp",
    ...                      epsilon=1.0).fit()
    >>> counts, means, n_answers = columns_error(encoder.mechanism_)
    >>> n_answers, means
    (5, (0.0, 0.0))
    """
    counts, means, n_answers = np.zeros(2), np.zeros(2), 0
    for part in mechanism.parts:
        if part.kind == "square_wave":
            raise ValueError(
                f"the 'square_wave' column(s) {list(part.columns)!r} are decoded by EM, whose "
                "error has no closed form: expected_error_scorer cannot score them (compare "
                "a distribution's error on held-out data, or score the mean strategies).")
        if part.kind == "multi_attribute":
            variance = part.mechanism.histogram_variance()
            counts += variance
            n_answers += sum(part.mechanism.shape)
        elif part.kind == "oracle":
            size = part.mechanism.n_inputs
            counts += variances(part.mechanism, histogram(size).gram())
            n_answers += size
        else:  # one mean, or d means sampled k at a time
            worst, average = part.per_user_variance()
            means += (float(np.sum(worst)), float(np.sum(average)))
            n_answers += len(part.columns)
    return (float(counts[0]), float(counts[1])), (float(means[0]), float(means[1])), n_answers


def _fitted_parts(estimator):
    """``(mechanism, workload or None, domain or None)`` of a fitted LDP estimator.

    A Pipeline is searched from its last step back: the workload is the one its final
    estimator answers (else the encoder's), the mechanism any step's ``mechanism_``.
    """
    steps = [estimator]
    if hasattr(estimator, "steps"):
        steps = [step for _, step in reversed(estimator.steps)
                 if step is not None and step != "passthrough"]
    mechanism = workload = domain = None
    for step in steps:
        if mechanism is None and getattr(step, "mechanism_", None) is not None:
            mechanism = step.mechanism_
        if workload is None:
            workload = getattr(step, "workload_", None)
        if domain is None:
            domain = getattr(step, "domain_", None)
    if mechanism is None:
        for step in steps:
            if isinstance(step, LDPEncoder | WorkloadEstimator):
                check_is_fitted(step, "mechanism_")  # NotFittedError naming the step
        raise TypeError(
            f"expected_error_scorer scores a fitted LDPEncoder, an estimator fitted on its "
            f"reports (WorkloadEstimator) or a Pipeline holding one; got "
            f"{type(estimator).__name__}, which has no fitted mechanism_.")
    if isinstance(mechanism, MatrixMechanism):
        raise ValueError(
            "expected_error_scorer compares local (LDP) strategies; this estimator runs the "
            "central model (delta given or a central-only strategy), whose "
            "expected_total_error_ does not depend on the number of records: compare it, or "
            "use WorkloadEstimator(strategy='auto').")
    return mechanism, workload, domain


@refuse_deep_nesting
def expected_error_scorer(*, epsilon, delta=None, workload=None, kind="worst_case",
                          n_users=None, per_query=False):
    """A scorer ranking fitted LDP strategies by their analytic expected error.

    ``scorer(estimator, X, y=None)`` returns minus the expected total variance of the
    workload answers of the strategy fitted in ``estimator``: an
    :class:`~sklearn_ldp.LDPEncoder`, a :class:`~sklearn_ldp.WorkloadEstimator` fitted on its
    reports, or a Pipeline holding them. It reads the fitted mechanism only: it uses no
    reports, costs no privacy budget, and gives every cross-validation fold the same value.
    The error is the one ``strategy="auto"`` minimizes (the same function computes it), so a
    ``GridSearchCV`` over strategies with this scorer picks exactly the candidate with the
    least analytic error; it is exact for the unbiased estimates (``postprocess="none"``).

    Records of several columns (an encoder with ``bounds=`` or ``strategy="spl"``,
    ``"smp"``, ``"rsfd"``, and Pipelines ending in ``MeanEstimator`` or
    ``AttributeHistogramEstimator``) are scored on their per-column answers
    (:func:`columns_error`): the worst-case total variance of the categorical columns' counts
    (what ``strategy="auto"`` compares for one-way marginals) plus that of one user's
    contribution to the means; ``kind="average_case"`` takes uniform data instead.

    Parameters
    ----------
    epsilon : float
        The privacy budget of every candidate, a policy decision stated once (keyword-only,
        required). A candidate at any other epsilon is refused with a ValueError: the
        expected error always falls as epsilon grows, so a search across budgets would
        choose the largest one. In ``GridSearchCV`` a scorer's ValueError becomes a NaN
        score and a "Scoring failed" UserWarning unless ``error_score="raise"``, which stops
        the search at the first refusal. Compare strategies at each budget with one scorer
        per budget, then choose the budget as policy.
    delta : float or None, default=None
        The delta of the policy (``None``: 0, pure epsilon-LDP). A candidate may have a
        smaller delta (a pure mechanism meets any (epsilon, delta) policy), never a larger.
    workload : Workload, query matrix, {"histogram", "prefix", "all_range"} or None, \
default=None
        Queries whose error is scored. ``None``: the workload the estimator answers (the
        Pipeline's final estimator's ``workload_``, else the encoder's). Must be None for
        records of several columns (they answer per-column queries).
    kind : {"worst_case", "average_case"}, default="worst_case"
        ``"worst_case"``: every user of the type with the largest variance (``max_u z_u``),
        a bound for any data and the objective of ``strategy="auto"`` and ``"optimized"``.
        ``"average_case"``: users spread uniformly over the domain (``mean_u z_u``).
    n_users : int or None, default=None
        Report the error for this many users: the total variance of the count answers is
        ``n_users`` times the per-user one (answers as fractions, and means of numeric
        columns: divided by ``n_users``).
        ``None`` reports the per-user value. It is a positive factor common to every
        candidate, so it sets the units of the score and never changes the ranking; it is
        there to compare the score with ``expected_total_error_``.
    per_query : bool, default=False
        Divide by the number of queries (mean instead of total variance), as
        :meth:`~sklearn_ldp.WorkloadEstimator.score` is per query. Ranking unchanged too.

    Returns
    -------
    ExpectedErrorScorer
        The scorer. A candidate that cannot answer the workload without bias scores
        ``-inf`` (it is ranked last).

    Raises
    ------
    ValueError
        At construction, for a bad ``epsilon``, ``delta``, ``kind``, ``n_users`` or
        workload name. When scoring, for a candidate at another budget, a marginal strategy
        scored without ``workload``, a central-model estimator, or a record of several
        columns with a ``workload`` or a ``"square_wave"`` column.
    TypeError
        When scoring an estimator that holds no fitted LDP mechanism.

    See Also
    --------
    sklearn_ldp.LDPEncoder : ``strategy="auto"`` makes the same choice among all baselines.
    sklearn_ldp.WorkloadEstimator.score : The held-out private score (unbiased, noisy).

    Notes
    -----
    Why ``n_users`` does not change the ranking: users randomize independently, so the total
    variance of the unbiased answers is ``sum_u x_u z_u`` for ``x_u`` users of type ``u``;
    the worst case over ``N`` users is ``N max_u z_u`` and the uniform case ``N mean_u z_u``.
    ``N`` multiplies every candidate's error by the same positive number.

    Measured (``benchmarks/bench_model_selection.py``): on 48 settings (histogram, prefix,
    all-range and 2-way marginal workloads over 16 to 256 cells, epsilon 0.5 to 4), the
    worst-case scorer picked the strategy with the least error on the data in 46 (the two
    misses within 10%) and the average-case scorer in all 48; the held-out private score
    picked it in 31% of the trials, its picks 10 times worse than the best on average
    (``docs/model_selection.md``).

    References
    ----------
    .. [1] R. McKenna, R. K. Maity, A. Mazumdar, G. Miklau. "A workload-adaptive mechanism
       for linear queries under local differential privacy." PVLDB 13(11), 2020.
    .. [2] J. Liu, K. Talwar. "Private selection from private candidates." STOC 2019
       (selecting on private scores spends budget of its own).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn_ldp import LDPEncoder, workloads
    >>> dom = {"x": [str(i) for i in range(16)]}
    >>> df = pd.DataFrame({"x": ["3"] * 10})        # only its columns are read
    >>> encoder = LDPEncoder(categories=dom, epsilon=1.0, workload=workloads.prefix(dom))
    >>> search = GridSearchCV(
    ...     encoder, {"strategy": ["randomized_response", "oue", "hierarchical", "haar"]},
    ...     scoring=expected_error_scorer(epsilon=1.0), cv=2).fit(df)
    >>> search.best_params_
    {'strategy': 'haar'}
    >>> bool(search.best_score_ == -search.best_estimator_.expected_total_error_["worst_case"])
    True
    """
    return ExpectedErrorScorer(epsilon=epsilon, delta=delta, workload=workload, kind=kind,
                               n_users=n_users, per_query=per_query)
