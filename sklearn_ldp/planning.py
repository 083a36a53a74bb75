"""How many users do I need? Margins of error in the units of the answers.

A survey statistician plans a collection with two numbers: the margin of error she can accept
on each answer ("+-1 point", i.e. 0.01 of the users, for a share; the column's unit for a
mean) and the confidence she wants (95%). :func:`users_needed` turns them into a number of
users for a strategy, :func:`margin_of_error` does the converse.

Both read the analytic, data-independent variance the package already computes for every
strategy (``LDPEncoder.expected_error_``, ``Mechanism.query_variance_summary``, the
marginal mechanisms' ``marginal_variance``, the longitudinal mechanisms' ``count_variance``):
one user contributes a variance ``v`` to an answer in the answer's unit (a share's variance
``v / N`` for ``N`` users, a mean's likewise), so the margin of one answer is

    margin = z * sqrt(v / N),        N = ceil(z^2 v / margin^2)

with ``z`` the two-sided normal quantile of the confidence (1.96 at 95%). ``v`` is the worst
case over the data (every user of the type that adds the most variance; ``kind=
"average_case"`` for users spread evenly), and the margin of a set of answers is the largest
of theirs. With ``simultaneous=True`` the confidence covers all the answers at once
(Bonferroni: ``z`` at ``1 - (1 - confidence) / p`` for ``p`` answers), which holds whatever
their correlations.
"""

import math
import numbers

import numpy as np
import pandas as pd
from scipy.special import ndtri
from sklearn.base import clone

from . import workloads
from ._glue import all_attribute_sets, resolve_workload
from ._validation import describe
from .column_tables import column_answer_errors
from .domain import Domain
from .encoder import LDPEncoder
from .longitudinal import LongitudinalEncoder
from .mechanisms._base.docstrings import shared_sections
from .mechanisms._base.mechanism import Mechanism
from .mechanisms.central.matrix import MatrixMechanism
from .mechanisms.heavy_hitters.column import HeavyHitterMechanism
from .mechanisms.longitudinal.mechanisms import OneBitMeanPM
from .mechanisms.marginals.base import MarginalMechanism
from .mechanisms.multi_attribute.columns import ColumnsMechanism
from .mechanisms.shuffle import local_epsilon_for

KINDS = ("worst_case", "average_case")
# The most reports one aggregate counts (the statistics' overflow guard).
MAX_USERS = 2**62

# Number of users at which marginal variances are evaluated before being scaled to one user
# (every marginal cell variance is proportional to 1 / N).
_REFERENCE_USERS = 2**20


# ---------------------------------------------------------------------- validation
# The reference both planning functions cite, written once.
_planning_docstring = shared_sections({"references": """\
References
----------
.. [1] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
   for linear queries under local differential privacy", PVLDB 13(11), 2020 (per-user
   variance and sample complexity)."""})


def _check_confidence(confidence):
    if isinstance(confidence, bool) or not isinstance(confidence, numbers.Real) \
            or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number in (0, 1), e.g. 0.95; got "
                         f"{describe(confidence)}.")
    return float(confidence)


def _check_margin(margin):
    if isinstance(margin, bool) or not isinstance(margin, numbers.Real) \
            or not math.isfinite(margin) or margin <= 0:
        raise ValueError(f"margin must be a positive number in the unit of the answers (0.01 "
                         f"for +-1 point on a share of users), got {describe(margin)}.")
    return float(margin)


def _check_n_users(n_users):
    if isinstance(n_users, bool) or not isinstance(n_users, numbers.Integral) or n_users < 1:
        raise ValueError(f"n_users must be an integer >= 1, got {describe(n_users)}.")
    return int(n_users)


def _check_kind(kind):
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {describe(kind)}.")
    return kind


def z_value(confidence, n_answers=1, simultaneous=False):
    """The two-sided normal quantile of ``confidence`` (Bonferroni over ``n_answers``).

    Parameters
    ----------
    confidence : float in (0, 1)
        The coverage wanted, e.g. 0.95.
    n_answers : int, default=1
        The number of answers covered at once when ``simultaneous``.
    simultaneous : bool, default=False
        Cover all ``n_answers`` answers together: ``z`` at ``1 - (1 - confidence) / (2 p)``.

    Returns
    -------
    float
        ``z`` such that an unbiased, normal answer is within ``z`` standard errors of the
        truth with probability ``confidence`` (all of them at once when ``simultaneous``).

    Examples
    --------
    >>> round(z_value(0.95), 3)
    1.96
    >>> round(z_value(0.95, n_answers=10, simultaneous=True), 3)
    2.807
    """
    confidence = _check_confidence(confidence)
    alpha = 1.0 - confidence
    if simultaneous:
        alpha /= n_answers
    return max(0.0, float(-ndtri(alpha / 2)))  # -ndtri: accurate for small alpha; 0.0, not -0.0


# ---------------------------------------------------------------------- per-user variances
def _fitted(model):
    """``(mechanism, domain, workload, encoder)`` of an encoder (fitted here on its public
    domain when it is not yet), a mechanism, reports that carry one, or a fitted
    estimator."""
    if isinstance(model, LDPEncoder | LongitudinalEncoder):
        if not hasattr(model, "mechanism_"):
            # fit is data-independent when the categories (or bounds) are declared.
            model = clone(model).fit()
        if isinstance(model, LongitudinalEncoder):
            return model.mechanism_, None, None, model
        return model.mechanism_, model.domain_, model.workload_, model
    if isinstance(model, Mechanism):
        return model, None, None, None
    for suffix in ("", "_"):  # reports (mechanism), fitted estimators (mechanism_)
        mechanism = getattr(model, f"mechanism{suffix}", None)
        if isinstance(mechanism, Mechanism | MatrixMechanism):  # central: refused with why
            return (mechanism, getattr(model, f"domain{suffix}", None),
                    getattr(model, f"workload{suffix}", None), None)
    raise TypeError(f"model must be an LDPEncoder, a LongitudinalEncoder, a mechanism, "
                    f"reports that carry one or a fitted estimator, got {describe(model)}.")


def per_user_variance(model, queries=None, kind="worst_case"):
    """Variance one user adds to each answer, in the answer's unit squared.

    With ``N`` users an answer's variance is this over ``N``: for a share of users
    (histogram cells, workload queries over shares, ranges, marginal cells, a CDF point) and
    for a mean in the column's unit alike.

    Parameters
    ----------
    model : LDPEncoder, LongitudinalEncoder, Mechanism, LDPReports, AggregatedReports or \
fitted estimator
        The strategy. An unfitted encoder is fitted on its declared public domain (no data).
    queries : optional
        What the matching estimator answers (default: every answer of the strategy, see
        :func:`margin_of_error`).
    kind : {"worst_case", "average_case"}, default="worst_case"
        Worst case over the data, or users spread evenly over the types.

    Returns
    -------
    variance : pandas.Series
        Per answer, indexed by its label.
    n_answers : int
        The number of answers they summarize (each cell of a marginal counts).

    Examples
    --------
    >>> from sklearn_ldp import LDPEncoder
    >>> encoder = LDPEncoder(categories={"a": ["x", "y", "z"]}, strategy="randomized_response",
    ...                      epsilon=1.0)
    >>> variance, n_answers = per_user_variance(encoder)
    >>> n_answers, round(float(variance.max()), 3)
    (3, 1.841)
    """
    kind = _check_kind(kind)
    mechanism, domain, workload, encoder = _fitted(model)
    if isinstance(mechanism, MatrixMechanism):
        raise ValueError("the central model adds its noise once to the counts, not per user: "
                         "a share's standard error is the count's (the estimator's "
                         "expected_error_, in counts squared) square root over N.")
    if isinstance(mechanism, MarginalMechanism):
        return _marginal_variances(mechanism, domain, queries, kind)
    if isinstance(mechanism, ColumnsMechanism):
        categories = None if domain is None else domain.categories
        table = column_answer_errors(mechanism, categories)
        return _selected_rows(table, queries, kind)
    if isinstance(mechanism, HeavyHitterMechanism):
        _no_queries(queries, "a heavy-hitter strategy (the count of one value)")
        worst, average = mechanism.per_user_variance()
        value = worst if kind == "worst_case" else average
        return pd.Series([value], index=pd.Index(["share of one value"], name="answer")), 1
    if hasattr(mechanism, "count_variance") or isinstance(mechanism, OneBitMeanPM):
        return _longitudinal_variances(mechanism, encoder, queries, kind)
    return _workload_variances(mechanism, domain, workload, queries, kind)


def _no_queries(queries, what):
    if queries is not None:
        raise ValueError(f"queries must be None for {what}, got {describe(queries)}.")


def _workload_variances(mechanism, domain, workload, queries, kind):
    """Histogram cells, workload queries and ranges: ``query_variance_summary`` (per user,
    counts squared, i.e. a share's variance times ``N``)."""
    if domain is None:
        domain = Domain.from_size(mechanism.n_inputs)
    if queries is None:
        queries = workload
    elif isinstance(queries, list | tuple) and queries and all(
            isinstance(q, tuple) and len(q) == 2 for q in queries):
        queries = workloads.ranges(domain, list(queries))  # [(lo, hi), ...]: closed ranges
    try:
        queries = resolve_workload(queries, domain)
    except ValueError as exc:
        if np.ndim(queries) == 2 and np.shape(queries)[1] == 2:
            # [[lo, hi], ...] as RangeQueryEstimator.predict takes them reads as a matrix.
            raise ValueError(f"{exc} For closed ranges give (lo, hi) tuples, e.g. "
                             "queries=[(lo, hi), ...], or workloads.ranges(...).") from None
        raise
    mechanism.check_supports(queries)
    worst, average = mechanism.query_variance_summary(queries)
    values = np.asarray(worst if kind == "worst_case" else average, dtype=float)
    return pd.Series(values, index=pd.Index(queries.labels, name="query")), values.shape[0]


def _selected_rows(table, queries, kind):
    """Rows of a ``column_answer_errors`` table: every answer, or those of the columns (or
    answer labels) in ``queries``."""
    if queries is not None:
        names = [queries] if isinstance(queries, str) else list(queries)
        known = set(table["column"]) | set(table["answer"])
        unknown = [name for name in names if name not in known]
        if unknown:
            raise ValueError(f"queries {unknown!r} are not answered by this strategy, which "
                             f"answers {sorted(set(table['column']))!r} (square-wave columns "
                             "have no analytic error: their EM estimate has no closed form; "
                             "bin the column and plan a 'hierarchical' strategy for its CDF).")
        table = table[table["column"].isin(names) | table["answer"].isin(names)]
    if table.empty:
        raise ValueError("this strategy has no answer with an analytic error (square-wave "
                         "columns: bin the column and plan a 'hierarchical' strategy for its "
                         "CDF and quantiles).")
    series = pd.Series(table[kind].to_numpy(dtype=float),
                       index=pd.Index(table["answer"], name="answer"))
    return series, series.shape[0]


def _marginal_variances(mechanism, domain, queries, kind):
    """Per marginal, the largest cell variance of its table of shares (worst case: the larger
    of users spread evenly and every user in one cell, as the estimators' error tables)."""
    names = (list(domain.columns) if domain is not None
             else [str(a) for a in range(mechanism.n_attributes)])
    if queries is None:
        sets = all_attribute_sets(mechanism)
    else:
        chosen = [queries] if isinstance(queries, str) or (
            isinstance(queries, tuple) and all(isinstance(q, str) for q in queries)) \
            else list(queries)
        sets = []
        for marginal in chosen:
            marginal = (marginal,) if isinstance(marginal, str) else tuple(marginal)
            missing = [c for c in marginal if c not in names]
            if missing:
                raise ValueError(f"marginal {marginal!r} names columns {missing!r} that are not "
                                 f"in the domain {names!r}.")
            sets.append(tuple(sorted(names.index(c) for c in marginal)))
    values, n_answers = [], 0
    for attributes in sets:
        cells = mechanism.marginal_variance(attributes, _REFERENCE_USERS)
        if kind == "worst_case":
            point = np.zeros(cells.shape)
            point.flat[0] = 1.0
            cells = np.maximum(cells, mechanism.marginal_variance(attributes, _REFERENCE_USERS,
                                                                  marginal=point))
        values.append(float(cells.max()) * _REFERENCE_USERS)
        n_answers += cells.size
    labels = pd.Index([tuple(names[a] for a in s) for s in sets], tupleize_cols=False,
                      name="marginal")
    return pd.Series(values, index=labels), n_answers


def _longitudinal_variances(mechanism, encoder, queries, kind):
    """One round of a longitudinal collection: each value's share (or the counter's mean)."""
    _no_queries(queries, "a longitudinal strategy (every value of one round)")
    if isinstance(mechanism, OneBitMeanPM):
        if kind == "worst_case":
            value = mechanism.worst_case_variance(1)
        else:
            value = float(mechanism.user_variance(
                np.linspace(0.0, mechanism.max_value, 1001)).mean())
        return pd.Series([value], index=pd.Index(["mean"], name="answer")), 1
    # A count's variance is linear in the value's share: its worst case is at 0 or 1.
    k = mechanism.n_cells
    share = 1.0 / k if kind == "average_case" else None
    value = (float(mechanism.count_variance(share, 1)) if share is not None else
             float(max(mechanism.count_variance(0.0, 1), mechanism.count_variance(1.0, 1))))
    labels = (list(encoder.categories_) if encoder is not None
              and getattr(encoder, "categories_", None) is not None else list(range(k)))
    return pd.Series(np.full(k, value), index=pd.Index(labels, name="value")), k


# ---------------------------------------------------------------------- the public answers
@_planning_docstring
def margin_of_error(model, n_users, confidence=0.95, queries=None, *, simultaneous=False,
                    kind="worst_case", per_query=False, shuffle=None):
    """The margin of error of the answers for ``n_users`` users, in the answers' unit.

    The margin of one answer is ``z`` times its analytic standard error, ``sqrt(v / N)``,
    with ``v`` the variance one user adds to it (see the module docstring): the answer is
    within the margin of the truth with probability ``confidence`` (a normal approximation
    of an unbiased estimate; good from a few hundred users). The margin of several answers
    is the largest of theirs.

    Parameters
    ----------
    model : LDPEncoder, LongitudinalEncoder, Mechanism, LDPReports, AggregatedReports or \
fitted estimator
        The strategy. An unfitted encoder is fitted on its declared public domain (no data
        is read, no budget is spent); a fitted estimator gives the margin its mechanism and
        workload would have for ``n_users`` users.
    n_users : int
        The number of users who report.
    confidence : float in (0, 1), default=0.95
        The coverage of the margin.
    queries : optional
        What the matching estimator answers. Default: every answer of the strategy (the
        histogram's cells, the encoder's workload, every marginal, every numeric column's
        mean and every category's share of a record of columns, every value of one
        longitudinal round). Otherwise: a workload, a workload name (``"histogram"``,
        ``"prefix"`` for the CDF and so quantiles, ``"all_range"``), a query matrix, or a
        list of ``(lo, hi)`` closed ranges (category labels of a one-column domain, else
        cell indices; :class:`~sklearn_ldp.RangeQueryEstimator`); for marginal strategies
        a marginal (tuple of column names) or a list of them
        (:class:`~sklearn_ldp.MarginalEstimator`); for columns a column name or a list of
        names or answer labels such as ``"smoker=yes"`` (:class:`~sklearn_ldp.MeanEstimator`,
        :class:`~sklearn_ldp.AttributeHistogramEstimator`).
    simultaneous : bool, default=False
        Margins that hold for all the answers at once (Bonferroni over the answers; each cell
        of a marginal table counts).
    kind : {"worst_case", "average_case"}, default="worst_case"
        The variance in the worst case over the data, or for users spread evenly.
    per_query : bool, default=False
        Return every answer's margin (a Series) instead of the largest.
    shuffle : (float, float), optional
        ``(central_epsilon, delta)`` for reports passed through an anonymizing shuffler: the
        model (an :class:`~sklearn_ldp.LDPEncoder`) is planned at the largest local epsilon
        whose ``n_users`` shuffled reports are ``(central_epsilon, delta)``-DP
        (:func:`~sklearn_ldp.local_epsilon_for`), in place of its own ``epsilon``.

    Returns
    -------
    float or pandas.Series
        The margin in the answers' unit: a share of the users (0.01 = 1 point) for
        frequencies, ranges, CDF points and marginal cells; the column's unit for a mean.

    Raises
    ------
    ValueError
        For ``n_users < 1``, ``confidence`` outside (0, 1), queries the strategy does not
        answer, or a strategy whose error has no closed form (square-wave distributions).

    See Also
    --------
    users_needed : The converse: users for a margin.
    sklearn_ldp.LDPEncoder.expected_error_ : The per-user variances behind it.

    <references>

    Examples
    --------
    >>> from sklearn_ldp import LDPEncoder
    >>> encoder = LDPEncoder(categories={"answer": ["yes", "no", "unsure"]}, epsilon=1.0)
    >>> round(margin_of_error(encoder, n_users=10_000), 4)   # +-2.7 points at 95%
    0.0266
    >>> margin_of_error(encoder, 10_000, per_query=True).round(4).tolist()
    [0.0266, 0.0266, 0.0266]

    Through a shuffler, a central epsilon of 0.5 (delta 1e-6) allows a local epsilon of
    about 4.3 for 20,000 users:

    >>> round(margin_of_error(encoder, 20_000, shuffle=(0.5, 1e-6)), 4)
    0.0023
    """
    n_users = _check_n_users(n_users)
    if shuffle is not None:
        model = _shuffled_model(model, n_users, shuffle)
    variance, n_answers = per_user_variance(model, queries, kind)
    z = z_value(confidence, n_answers, simultaneous)
    margins = z * np.sqrt(variance / n_users)
    margins.name = "margin"
    return margins if per_query else float(margins.max())


def _shuffled_model(model, n_users, shuffle):
    """The encoder ``model`` at the local epsilon that meets ``shuffle = (central epsilon,
    delta)`` for ``n_users`` shuffled reports."""
    if not isinstance(model, LDPEncoder):
        raise ValueError(f"shuffle= plans an LDPEncoder (its epsilon is replaced), got "
                         f"{type(model).__name__}.")
    if not isinstance(shuffle, tuple) or len(shuffle) != 2:
        raise ValueError(f"shuffle must be a (central_epsilon, delta) pair, got "
                         f"{describe(shuffle)}.")
    central_epsilon, delta = shuffle
    return clone(model).set_params(epsilon=local_epsilon_for(central_epsilon, n_users, delta))


@_planning_docstring
def users_needed(model, margin=0.01, confidence=0.95, queries=None, *, simultaneous=False,
                 kind="worst_case"):
    """The least number of users for which every answer's margin of error is ``margin``.

    ``N = ceil(z^2 max_i v_i / margin^2)`` with ``v_i`` the variance one user adds to answer
    ``i`` (see :func:`margin_of_error`, whose parameters these are):
    ``margin_of_error(model, users_needed(model, m)) <= m``.

    Parameters
    ----------
    model : LDPEncoder, LongitudinalEncoder, Mechanism, LDPReports or AggregatedReports
        The strategy (an unfitted encoder is fitted on its declared public domain).
    margin : float, default=0.01
        The margin of error wanted, in the answers' unit (0.01: +-1 point on a share).
    confidence : float in (0, 1), default=0.95
        The coverage of the margin.
    queries : optional
        The answers to plan for, as in :func:`margin_of_error`.
    simultaneous : bool, default=False
        The margin holds for all the answers at once (Bonferroni).
    kind : {"worst_case", "average_case"}, default="worst_case"
        The variance in the worst case over the data, or for users spread evenly.

    Returns
    -------
    int
        The number of users.

    Raises
    ------
    ValueError
        For ``margin <= 0``, ``confidence`` outside (0, 1), or queries the strategy does not
        answer.

    See Also
    --------
    margin_of_error : The converse: the margin for a number of users.
    sklearn_ldp.mechanisms.sample_complexity : Users for a normalized variance per query.

    <references>

    Examples
    --------
    >>> from sklearn_ldp import LDPEncoder
    >>> encoder = LDPEncoder(categories={"answer": ["yes", "no", "unsure"]}, epsilon=1.0)
    >>> users_needed(encoder, margin=0.01)          # +-1 point at 95% on every share
    70735
    """
    margin = _check_margin(margin)
    variance, n_answers = per_user_variance(model, queries, kind)
    if margin >= 1 and not isinstance(_fitted(model)[0], ColumnsMechanism):
        # Every answer is a share of users, in [0, 1]: a margin of 1 or more asks nothing
        # (it is how +-5 points is mistyped as 5).
        raise ValueError(f"margin={margin!r} is at least the whole range of a share of users "
                         f"(answers are in [0, 1]); for +-{margin:g} points pass "
                         f"margin={margin / 100:g}.")
    z = z_value(confidence, n_answers, simultaneous)
    worst = float(variance.max())
    ratio = z * math.sqrt(worst) / margin  # not z^2 v / m^2: m^2 may underflow to 0
    exact = ratio * ratio  # inf, not OverflowError, past the float range
    if not exact <= MAX_USERS:  # also NaN / inf from a margin near 0
        raise ValueError(f"margin={margin!r} would need more than 2^62 users (the most one "
                         "aggregate can count); ask for a larger margin.")
    n_users = max(1, math.ceil(exact))
    while z * math.sqrt(worst / n_users) > margin:  # floating-point rounding of the ceil
        n_users += 1
    return n_users


__all__ = ["margin_of_error", "per_user_variance", "users_needed", "z_value"]
