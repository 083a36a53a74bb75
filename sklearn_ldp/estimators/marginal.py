"""MarginalEstimator: k-way marginal tables from LDP reports (thesis chapter 4).

The reports come from one of the marginal strategies of
:mod:`sklearn_ldp.mechanisms.marginals` (``inp_rr``, ``inp_ps``, ``inp_ht``, ``marg_rr``,
``marg_ps``, ``marg_ht``, and the ``inp_em`` baseline). One collection answers every marginal
of order up to the ``max_order`` chosen at collection time; this module turns the mechanism's
unbiased tables into labelled pandas tables, post-processes them into valid distributions
(``postprocess=``: clipped and renormalized, or the consistent projection of
:func:`~sklearn_ldp.postprocess.consistent_marginals`), predicts and scores their error, and
runs the thesis's applications on them: the chi-square independence test, mutual information
and the Chow-Liu tree.
"""

import itertools
import math
import numbers
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats
from scipy.sparse.csgraph import minimum_spanning_tree
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._glue import all_attribute_sets, marginal_error_table
from .._validation import (
    FreshEntropyMixin,
    check_nesting,
    check_positive_int,
    check_random_state,
    store_params,
)
from ..mechanisms.marginals.base import MarginalMechanism
from ..postprocess import (
    clip_to_distribution,
    consistent_marginals,
    marginalize,
    preferred_qp_solver,
)
from ..reports import check_same_mechanism, statistic_of
from ._base import (
    add_batch,
    forget_fitted,
    reports_or_privatized,
    with_tags,
)
from ._docstrings import estimator_docstring

OUTPUTS = ("fraction", "count")
# What ``postprocess`` accepts; the default is chosen by measured error
# (benchmarks/bench_marginal_postprocess.py, docs/marginals.md).
POSTPROCESS = ("none", "clip", "consistent")
DEFAULT_POSTPROCESS = "consistent"
# What expected_error_ describes (``expected_error_kind_``, also in the table's
# ``.attrs["expected_error_kind"]``): the tables predict returns ("output": the unbiased
# tables with postprocess="none"), or the unbiased tables they were post-processed from
# ("unbiased_estimate": clipped or projected tables, or InpEM's EM tables).
ERROR_OF_OUTPUT = "output"
ERROR_OF_UNBIASED = "unbiased_estimate"


def _attribute_names(mechanism, domain):
    """Names of the mechanism's attributes: the domain's columns, else their positions."""
    n_attributes = len(mechanism.params["shape"])
    if domain is not None and domain.n_columns == n_attributes:
        return list(domain.columns)
    return list(range(n_attributes))


def _chi2_statistics(tables, n_users):
    """Pearson's chi-square statistic of independence for 2-way tables of fractions.

    ``tables`` has shape ``(..., r_a, r_b)``; each is clipped and renormalized, and the
    expected cells are the products of its own row and column sums, scaled to ``n_users``
    counts. Cells whose expected count is 0 (an empty row or column) add nothing.
    """
    joint = clip_to_distribution(tables, axes=(-2, -1))
    expected = joint.sum(axis=-1, keepdims=True) * joint.sum(axis=-2, keepdims=True)
    terms = np.divide((joint - expected) ** 2, expected, out=np.zeros_like(joint),
                      where=expected > 0)
    return n_users * terms.sum(axis=(-2, -1))


def _mutual_information(table):
    """Mutual information (nats) of a 2-way table, clipped and renormalized first."""
    joint = clip_to_distribution(table)
    independent = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
    positive = joint > 0
    return float(np.sum(joint[positive] * np.log(joint[positive] / independent[positive])))


@dataclass(frozen=True)
class IndependenceTest:
    """Result of :meth:`MarginalEstimator.chi2_test`.

    ``statistic`` is Pearson's chi-square on the private 2-way table (in counts);
    ``p_value``, ``critical_value`` and ``reject`` use the classic chi-square distribution
    with ``dof`` degrees of freedom, which ignores the privacy noise; the ``*_noise_aware``
    fields use the statistic's simulated null distribution including that noise.
    """

    attributes: tuple
    statistic: float
    dof: int
    alpha: float
    p_value: float
    critical_value: float
    reject: bool
    p_value_noise_aware: float
    critical_value_noise_aware: float
    reject_noise_aware: bool


@estimator_docstring
class MarginalEstimator(FreshEntropyMixin, BaseEstimator):
    """Every k-way marginal, from one collection of LDP reports (thesis chapter 4).

    Fit it on the reports of a marginal strategy (``LDPEncoder(strategy="inp_ht", ...)``
    or ``"inp_rr"``, ``"inp_ps"``, ``"marg_rr"``, ``"marg_ps"``, ``"marg_ht"``, ``"inp_em"``).
    Every marginal of order up to the collection's ``max_order`` is estimated at fit time;
    ``predict`` returns them as labelled pandas tables (fractions of users or counts).

    Parameters
    ----------
    postprocess : {"consistent", "clip", "none"}, default="consistent"
        What ``predict`` returns, from the decoder's tables (the mechanism's unbiased tables;
        the EM tables for ``"inp_em"``):

        * ``"consistent"`` (default): the highest-order tables, clipped and renormalized as
          with ``"clip"``, replaced by their weighted least-squares projection onto
          non-negative tables summing to 1 that agree on every shared lower-order marginal
          (weights: the inverse of the predicted per-cell variance for uniform data;
          :func:`~sklearn_ldp.postprocess.consistent_marginals` with Clarabel, polished so
          that the constraints hold to ~1e-13); the lower orders are summed from them. The
          truth satisfies the constraints, so the result is never farther from it than the
          clipped tables in that weighted norm. The lowest mean total variation of the three
          for every unbiased strategy and epsilon of the benchmark (docs/marginals.md),
          hence the default (16% below ``"clip"`` on average; for ``"inp_em"``, whose EM
          tables are already distributions, the three are within 0.0004); costs one
          quadratic program per fit (~0.1 s for fifteen 2-way tables).
        * ``"clip"``: each table, of every order, on its own: negative cells set to 0 and the
          table renormalized to sum to 1 (to ``n_users_`` with ``output="count"``; a table
          without a positive cell becomes uniform). Valid distributions, but two tables may
          disagree on a shared attribute.
        * ``"none"``: the decoder's tables as they are: unbiased (six strategies), but they
          may hold negative cells, need not sum to 1 and can have a total variation above 1.

        All three are post-processing, free in privacy terms; the first two are biased.
    em_tol, em_max_iter : float, int, default=1e-5, 10000
        Stopping rule of the EM decoder of ``"inp_em"`` reports (the thesis's
        ``||Pr^{t+1} - Pr^t||_inf <= 1e-5``). Ignored by the other strategies.
    <simulation parameters: strategy, epsilon, categories, max_order>

    Attributes
    ----------
    mechanism_, domain_ : the objects the reports came with.
    statistic_ : ndarray
        The mechanism's additive statistic of all reports fitted.
    n_users_ : int
    attributes_ : list
        The collected attributes (the domain's column names, else their positions).
    max_order_ : int
        Largest order of the marginals the collection answers.
    postprocess_ : str
        The post-processing applied (``postprocess``).
    marginals_ : dict
        Tuple of attribute names (in column order) -> estimated table of fractions (ndarray,
        one axis per attribute), for every marginal of order <= ``max_order_``: what
        ``predict`` returns, after ``postprocess_``.
    decoded_marginals_ : dict
        The decoder's tables before post-processing, same keys: ``unbiased_marginals_`` for
        the six unbiased strategies, the EM tables for ``"inp_em"``. Equal to
        ``marginals_`` with ``postprocess="none"``.
    unbiased_marginals_ : dict
        The mechanism's unbiased tables, same keys.
    expected_error_ : pandas.DataFrame
        **The error of the unbiased tables** (``unbiased_marginals_``, i.e. of
        ``postprocess="none"`` for the six unbiased strategies), not of the post-processed
        ``marginals_``, whose error has no closed form; the columns' name,
        ``"error of unbiased_marginals_"``, says so in every printout. One row per marginal,
        with the columns of every estimator's ``expected_error_`` first: ``worst_case`` and
        ``average_case``, the variance of the table of fractions summed over its cells for
        ``n_users_`` users (users spread uniformly for ``average_case``; for ``worst_case``
        the larger of that and every user in one cell: the maximum over all data, exactly
        or, for the Hadamard strategies with category counts that are not powers of two,
        within 0.1 %); then ``order``,
        ``n_cells``, ``predicted_tv`` (expected total variation of the unbiased
        table for ``n_users_`` users, predicted for uniform data: the data-independent
        prediction) and ``plug_in_tv`` (the same with the estimated marginal plugged into the
        variance formula). In the benchmark the post-processed tables' measured total
        variation was below the unbiased tables' for every unbiased strategy and epsilon
        (docs/marginals.md), so it is a conservative reference for them, not a prediction.
        For ``"inp_em"`` it is the error of the unbiased inverse decoder, not of the EM
        tables ``predict`` returns (with a square invertible channel the converged MLE
        equals the unbiased table whenever that table is a distribution, but EM stops at
        ``em_tol`` and often near its uniform start: docs/marginals.md).
    expected_error_kind_ : {"output", "unbiased_estimate"}
        What ``expected_error_`` describes: ``"output"`` when it is the error of the tables
        ``predict`` returns (``postprocess="none"`` with an unbiased strategy),
        ``"unbiased_estimate"`` when ``predict`` returns post-processed tables or InpEM's
        EM tables and the error is that of ``unbiased_marginals_``. The table's
        ``.attrs["expected_error_kind"]`` holds the same value.
    em_report_ : pandas.DataFrame (``"inp_em"`` only)
        One row per marginal: ``n_iter``, ``converged``, ``stuck_at_prior`` (EM stopped
        after one step at the uniform prior, the failure the thesis reports). A
        ConvergenceWarning names the marginals where EM failed.

    See Also
    --------
    LDPEncoder : Privatizes the records with a marginal strategy (``max_order``).
    WorkloadEstimator : Linear queries from the reports of the other strategies.
    sklearn_ldp.postprocess.consistent_marginals : The ``"consistent"`` projection.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018; T. Kulkarni, "Answering Range Queries Under Local
       Differential Privacy", PhD thesis, University of Warwick, 2019, chapter 4.
    .. [2] T. Wang, M. Lopuhaa-Zwakenberg, Z. Li, B. Skoric and N. Li, "Locally
       Differentially Private Frequency Estimation with Consistency", NDSS 2020
       (post-processing of LDP estimates into distributions).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from sklearn_ldp import LDPEncoder, MarginalEstimator
    >>> rng = np.random.default_rng(0)
    >>> dom = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW")}
    >>> df = pd.DataFrame({column: rng.choice(values, 20000) for column, values in dom.items()})
    >>> enc = LDPEncoder(categories=dom, strategy="inp_ht", epsilon=1.1, max_order=2,
    ...                  random_state=0)
    >>> est = MarginalEstimator().fit(enc.fit_transform(df))
    >>> age_smoker, region = est.predict([("age", "smoker"), ("region",)])
    >>> age_smoker.index.names, len(region)
    (FrozenList(['age', 'smoker']), 4)
    >>> bool(age_smoker.min() >= 0), round(float(age_smoker.sum()), 9)
    (True, 1.0)
    >>> est.crosstab("age", "smoker").shape
    (3, 2)
    >>> raw = MarginalEstimator(postprocess="none").fit(enc.transform(df))
    >>> all(np.array_equal(raw.marginals_[key], raw.unbiased_marginals_[key])
    ...     for key in raw.marginals_)
    True
    """

    # Renamed statistic_ (issue 16, item 7): the old name warns for one release.

    def __init__(self, postprocess=DEFAULT_POSTPROCESS, em_tol=1e-5, em_max_iter=10000,
                 strategy=None, epsilon=None, categories=None, max_order=None, random_state=None,
                 ledger=None, ledger_users="all"):
        store_params(self, locals())

    # ------------------------------------------------------------------ fitting
    def _as_reports(self, X, first_call):
        return reports_or_privatized(self, X, first_call, max_order=self.max_order)

    @estimator_docstring
    def fit(self, X, y=None):
        """Aggregate the reports in ``X`` and estimate every marginal up to ``max_order``.

        Parameters
        ----------
        X : LDPReports, AggregatedReports, DataFrame of report columns, or raw records
            Reports of a marginal strategy (raw records only with ``strategy`` set: the
            estimator then privatizes them itself).
        <ignored y and self: MarginalEstimator>
        """
        check_nesting(self, locals())
        forget_fitted(self, ("statistic_", "encoder_", "em_report_", "_first_batch",
                             "n_invalid_reports_"))
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those seen so far (chunked fits equal one fit).

        Parameters
        ----------
        X : LDPReports, AggregatedReports, DataFrame of report columns, or raw records
            The next batch of reports, as for :meth:`fit`.
        y : None
            Ignored.

        Returns
        -------
        MarginalEstimator
            The estimator, updated.
        """
        check_nesting(self, locals())
        method = self._check_params()
        first_call = not hasattr(self, "statistic_")
        reports = self._as_reports(X, first_call)
        if first_call and len(reports) and not isinstance(reports.mechanism, MarginalMechanism):
            raise ValueError(
                f"MarginalEstimator decodes reports of a marginal strategy (inp_rr, inp_ps, "
                f"inp_ht, marg_rr, marg_ps, marg_ht, inp_em); these come from "
                f"{reports.mechanism!r}. Use WorkloadEstimator for other strategies."
            )

        def on_first(reports):
            self.attributes_ = _attribute_names(self.mechanism_, self.domain_)
            self.max_order_ = int(self.mechanism_.params["max_order"])

        add_batch(self, reports, first_call, on_first)
        self.postprocess_ = method
        self._reconstruct()
        return self

    def _resolve_postprocess(self):
        """The post-processing to apply: ``postprocess``, checked."""
        method = self.postprocess
        if not isinstance(method, str) or method not in POSTPROCESS:
            raise ValueError(f"postprocess must be one of {POSTPROCESS}, got {method!r}.")
        return method

    def _check_params(self):
        """Check the parameters (scikit-learn validates in fit); return the post-processing."""
        method = self._resolve_postprocess()
        if (isinstance(self.em_tol, bool) or not isinstance(self.em_tol, numbers.Real)
                or not 0 < self.em_tol < np.inf):
            raise ValueError(f"em_tol must be a positive number, got {self.em_tol!r}.")
        if (isinstance(self.em_max_iter, bool) or not isinstance(self.em_max_iter,
                                                                 numbers.Integral)
                or self.em_max_iter < 1):
            raise ValueError(f"em_max_iter must be an integer >= 1, got {self.em_max_iter!r}.")
        return method

    def _name_key(self, positions):
        return tuple(self.attributes_[a] for a in positions)

    def _reconstruct(self):
        mechanism = self.mechanism_
        sets = all_attribute_sets(self.mechanism_)
        unbiased = {s: mechanism.estimate_marginal(self.statistic_, s) for s in sets}
        decoded = self._em_tables(sets) if hasattr(mechanism, "em_marginal") else unbiased
        if self.postprocess_ == "consistent":
            tables = self._consistent(decoded, sets)
        elif self.postprocess_ == "clip":
            tables = {s: clip_to_distribution(table) for s, table in decoded.items()}
        else:
            tables = decoded
        self.unbiased_marginals_ = {self._name_key(s): table for s, table in unbiased.items()}
        self.decoded_marginals_ = {self._name_key(s): table for s, table in decoded.items()}
        self.marginals_ = {self._name_key(s): table for s, table in tables.items()}
        error = marginal_error_table(mechanism, self.attributes_, self.n_users_, unbiased)
        # Printed above the columns: these predict the unbiased tables, not marginals_.
        error.columns.name = "error of unbiased_marginals_"
        returns_unbiased = self.postprocess_ == "none" and decoded is unbiased
        self.expected_error_kind_ = ERROR_OF_OUTPUT if returns_unbiased else ERROR_OF_UNBIASED
        error.attrs["expected_error_kind"] = self.expected_error_kind_
        self.expected_error_ = error

    def _consistent(self, tables, sets):
        """The projection of the clipped ``max_order`` tables; lower orders summed from them."""
        top = [s for s in sets if len(s) == self.max_order_]
        # Weights: inverse predicted cell variances for uniform data (data-independent).
        weights = {s: 1.0 / self.mechanism_.marginal_variance(s, self.n_users_) for s in top}
        # Clipped and renormalized first: projecting the raw tables onto non-negative ones
        # subtracts a common amount from every cell and zeroes many (the Euclidean simplex
        # projection), which is worse than clipping when the noise is large; projecting the
        # clipped tables had a lower TV than both in every setting of the benchmark. The
        # truth is feasible, so the result is never farther from it than the clipped tables
        # in the weighted norm. Clarabel (interior point) meets the constraints to ~1e-12
        # where cvxpy's default OSQP stops at 1e-5; polishing then solves the KKT system on
        # the cells it leaves positive: the exact optimum, constraints held to rounding.
        projected = consistent_marginals({s: clip_to_distribution(tables[s]) for s in top},
                                         weights, solver=preferred_qp_solver())
        result = {}
        for s in sets:  # any table containing the attributes will do: they all agree
            parent = next(t for t in top if set(s) <= set(t))
            result[s] = marginalize(projected[parent], parent, s)
        return result

    def _em_tables(self, sets):
        """EM tables of every marginal, with ``em_report_`` and a warning where EM failed."""
        tables, rows = {}, []
        for s in sets:
            tables[s], info = self.mechanism_.em_marginal(self.statistic_, s, tol=self.em_tol,
                                                          max_iter=self.em_max_iter)
            rows.append({"n_iter": int(info["n_iter"]), "converged": bool(info["converged"]),
                         "stuck_at_prior": bool(info["stuck_at_prior"])})
        index = pd.Index([self._name_key(s) for s in sets], tupleize_cols=False,
                         name="marginal")
        self.em_report_ = pd.DataFrame(rows, index=index)
        failed = self.em_report_[~self.em_report_["converged"]
                                 | self.em_report_["stuck_at_prior"]]
        if len(failed):
            stuck = int(failed["stuck_at_prior"].sum())
            shown = ", ".join(map(str, failed.index[:5])) + (", ..." if len(failed) > 5 else "")
            warnings.warn(
                f"EM failed on {len(failed)} of {len(sets)} marginals ({shown}): {stuck} stopped "
                f"at the uniform prior after one step and {int((~failed['converged']).sum())} did "
                f"not converge within em_max_iter={self.em_max_iter}. Their tables are kept as "
                "EM returned them (see em_report_); the unbiased tables are in "
                "unbiased_marginals_, and 'inp_ht' avoids the problem.",
                ConvergenceWarning,
                stacklevel=4,
            )
        return tables

    # ------------------------------------------------------------------ queries
    def _resolve(self, marginal):
        """``(names, positions)`` of one marginal given as a column name or a sequence of them.

        ``names`` and ``positions`` keep the order given by the user.
        """
        parts = [marginal] if isinstance(marginal, str | numbers.Integral) else marginal
        try:
            parts = list(parts)
        except TypeError:
            raise ValueError(f"a marginal is a column name or a tuple of column names, got "
                             f"{marginal!r}.") from None
        if not parts:
            raise ValueError("a marginal needs at least one attribute, got an empty one.")
        positions = []
        for name in parts:
            if isinstance(name, bool) or name not in self.attributes_:
                raise ValueError(f"attribute {name!r} was not collected: the reports cover "
                                 f"{self.attributes_}.")
            positions.append(self.attributes_.index(name))
        if len(set(positions)) != len(positions):
            raise ValueError(f"the marginal {tuple(parts)!r} repeats an attribute.")
        if len(positions) > self.max_order_:
            raise ValueError(
                f"the marginal {tuple(parts)!r} has order {len(positions)}, but the reports "
                f"answer marginals of order <= {self.max_order_} (max_order at collection); "
                "collect with a larger max_order to answer it."
            )
        return tuple(self.attributes_[a] for a in positions), tuple(positions)

    def _table(self, positions, tables=None):
        """The fitted table of fractions with its axes in the order of ``positions``.

        From ``marginals_``, or from ``tables`` (another dict of the same keys).
        """
        key = tuple(sorted(positions))
        table = (self.marginals_ if tables is None else tables)[self._name_key(key)]
        return np.transpose(table, [key.index(a) for a in positions])

    def _categories(self, position):
        if self.domain_ is not None and self.domain_.n_columns == len(self.attributes_):
            return list(self.domain_.categories[self.attributes_[position]])
        return list(range(self.mechanism_.params["shape"][position]))

    def _scale(self, output):
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}.")
        return 1.0 if output == "fraction" else float(self.n_users_)

    def predict(self, marginals, output="fraction"):
        """Estimated marginal tables, labelled by the declared categories.

        Parameters
        ----------
        marginals : list
            Each entry a column name or a tuple of column names (order at most
            ``max_order_``); the table's levels follow the order given.
        output : {"fraction", "count"}, default="fraction"
            Fractions of users, or counts (fractions times ``n_users_``).

        Returns
        -------
        list of pandas.Series
            One per marginal, indexed by the product of the attributes' categories (a
            MultiIndex named by the attributes; a plain Index for one attribute).
        """
        check_nesting(self, locals())
        check_is_fitted(self, "statistic_")
        scale = self._scale(output)
        if isinstance(marginals, str) or not hasattr(marginals, "__iter__"):
            raise ValueError("marginals must be a list of column names or tuples of them, e.g. "
                             f"[('age', 'smoker'), ('region',)]; got {marginals!r}.")
        resolved = [self._resolve(marginal) for marginal in marginals]  # all checked first
        result = []
        for names, positions in resolved:
            categories = [self._categories(a) for a in positions]
            if len(names) == 1:
                index = pd.Index(categories[0], name=names[0])
            else:
                index = pd.MultiIndex.from_product(categories, names=list(names))
            result.append(pd.Series(scale * self._table(positions).ravel(), index=index,
                                    name=output))
        return result

    def crosstab(self, a, b, output="fraction"):
        """The 2-way marginal of columns ``a`` (rows) and ``b`` (columns) as a DataFrame.

        Parameters
        ----------
        a, b : str or int
            Two collected columns.
        output : {"fraction", "count"}, default="fraction"
            Fractions of users, or counts.

        Returns
        -------
        pandas.DataFrame
            Rows labelled by ``a``'s categories, columns by ``b``'s.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "statistic_")
        scale = self._scale(output)
        _, (i, j) = self._resolve((a, b))
        return pd.DataFrame(scale * self._table((i, j)),
                            index=pd.Index(self._categories(i), name=self.attributes_[i]),
                            columns=pd.Index(self._categories(j), name=self.attributes_[j]))

    # ------------------------------------------------------------------ errors and scores
    def predict_tv(self, n_users):
        """Predicted total variation of every unbiased marginal for ``n_users`` users.

        Data-independent (uniform data), like the encoder's ``expected_error_`` before
        collection; use it to choose how many users to collect.

        Parameters
        ----------
        n_users : int
            The number of users to predict for.

        Returns
        -------
        pandas.Series
            The predicted total variation of each marginal's unbiased table.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "statistic_")
        n_users = check_positive_int(n_users, "n_users")
        table = marginal_error_table(self.mechanism_, self.attributes_, n_users)
        return table["predicted_tv"]

    def score(self, X, y=None):
        """Estimate of minus the mean squared error per cell of the fitted marginals.

        Uses held-out *reports* only (privacy-preserving). Over the ``K`` marginals of order
        ``max_order_``, with ``a`` the fitted tables and ``b`` the held-out reports' unbiased
        tables, ``E||a - b||^2 = ||a - p||^2 + tr Cov(b)`` (``a`` and ``b`` independent,
        ``p`` the held-out users' true marginals). The score is
        ``-(||a - b||^2 - tr Cov(b)) / n_cells`` with ``tr Cov(b)`` from the analytic
        per-cell variance (``marginal_variance``) evaluated at the fitted unbiased tables,
        clipped to non-negative and renormalized (independent of ``b``). The variance
        formulas are linear in the marginal except for second-order terms (the sampling
        term ``m (1 - m)`` of the Marg* methods, the squared coefficients of InpHT), and
        the clipping moves only cells near 0, so the score is unbiased up to a small
        relative error (``O(1 / N)``; the tests measure it). It may be slightly positive
        by chance.

        Parameters
        ----------
        X : LDPReports, AggregatedReports or DataFrame of report columns
            Held-out reports of the fitted mechanism.
        y : None
            Ignored.

        Returns
        -------
        float
            The estimate of minus the mean squared error per cell.
        """
        check_is_fitted(self, "statistic_")
        reports = self._as_reports(X, first_call=False)
        check_same_mechanism(reports, self.mechanism_)
        n_test = len(reports)
        if n_test < 1:
            raise ValueError("score needs at least 1 held-out report.")
        counts = statistic_of(reports)
        squared_distance = variance = 0.0
        n_cells = 0
        for s in itertools.combinations(range(len(self.attributes_)), self.max_order_):
            key = self._name_key(s)
            held_out = self.mechanism_.estimate_marginal(counts, s)
            squared_distance += float(np.sum((self.marginals_[key] - held_out) ** 2))
            variance += float(np.sum(self.mechanism_.marginal_variance(
                s, n_test, marginal=clip_to_distribution(self.unbiased_marginals_[key]))))
            n_cells += held_out.size
        return -(squared_distance - variance) / n_cells

    # ------------------------------------------------------------------ applications
    def _check_pairs(self, what):
        if self.max_order_ < 2:
            raise ValueError(f"{what} needs 2-way marginals, but the reports were collected "
                             "with max_order=1.")

    def _pair(self, a, b, what):
        self._check_pairs(what)
        _, positions = self._resolve((a, b))
        return positions

    def chi2_test(self, a, b, alpha=0.05, n_simulations=2000, random_state=None):
        """Chi-square test of independence of columns ``a`` and ``b`` on the private marginal.

        The statistic is Pearson's ``N sum (p_ab - p_a p_b)^2 / (p_a p_b)`` on the decoder's
        2-way table (``decoded_marginals_``: the unbiased table, or EM's for ``"inp_em"``),
        clipped to non-negative and renormalized (``p_a``, ``p_b`` its own margins), as in
        the thesis (section 4.5). It ignores ``postprocess``: the noise-aware null
        distribution below models the noise of that table, and a consistent projection
        would shrink the statistic but not the simulated noise, making the test lose power.

        * Classic: compared with the chi-square distribution with ``(r_a - 1)(r_b - 1)``
          degrees of freedom (3.841 at 1 dof and ``alpha=0.05``). **Caveat**: this ignores
          the privacy noise, which inflates the statistic, so the classic test rejects a
          true independence far more often than ``alpha`` unless ``N`` is large enough for
          the noise to be negligible.
        * Noise-aware (a parametric bootstrap, in the spirit of Gaboardi et al.): the null
          table ``p_a p_b`` is resampled as a multinomial sample of ``N`` users (the
          sampling the classic test accounts for) plus Gaussian noise with the mechanism's
          analytic per-cell variance at that table (recentred when the mechanism's tables
          sum exactly to 1); the statistic of each replicate gives the null distribution,
          hence the p-value and critical value. Its level is close to ``alpha`` whatever
          ``N`` and epsilon (the Gaussian approximation needs enough users per cell).

        Parameters
        ----------
        a, b : str or int
            Two collected columns.
        alpha : float in (0, 1), default=0.05
            The level of the test.
        n_simulations : int, default=2000
            Replicates of the noise-aware null distribution.
        random_state : int, Generator or None, default=None
            Seed of those replicates.

        Returns
        -------
        IndependenceTest
            The statistic, both p-values, critical values and decisions.
        """
        check_is_fitted(self, "statistic_")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}.")
        n_simulations = int(n_simulations)
        if n_simulations < 1:
            raise ValueError(f"n_simulations must be >= 1, got {n_simulations!r}.")
        i, j = self._pair(a, b, "the chi-square test")
        table = self._table((i, j), self.decoded_marginals_)
        statistic = float(_chi2_statistics(table, self.n_users_))
        dof = (table.shape[0] - 1) * (table.shape[1] - 1)
        critical = float(stats.chi2.ppf(1 - alpha, dof))
        p_value = float(stats.chi2.sf(statistic, dof))
        # Null distribution with the privacy noise.
        joint = clip_to_distribution(table)
        null = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
        key = tuple(sorted((i, j)))
        null_sorted = null if key == (i, j) else null.T
        variance = self.mechanism_.marginal_variance(key, self.n_users_, marginal=null_sorted)
        if key != (i, j):
            variance = variance.T
        rng = np.random.default_rng(check_random_state(random_state))
        n = int(self.n_users_)
        sampled = rng.multinomial(n, null.ravel(), size=n_simulations) / n
        noise = rng.standard_normal(sampled.shape) * np.sqrt(variance.ravel())
        unbiased = self.unbiased_marginals_[self._name_key(key)]
        if abs(float(np.sum(unbiased)) - 1.0) < 1e-9:
            # The mechanism's tables sum to exactly 1: so do the replicates (centring
            # c i.i.d. cells scales their variance by (c - 1) / c; undo it).
            cells = noise.shape[1]
            noise = (noise - noise.mean(axis=1, keepdims=True)) * math.sqrt(cells / (cells - 1))
        replicates = (sampled + noise).reshape((n_simulations,) + table.shape)
        null_statistics = _chi2_statistics(replicates, self.n_users_)
        p_noise = float((1 + np.sum(null_statistics >= statistic)) / (1 + n_simulations))
        critical_noise = float(np.quantile(null_statistics, 1 - alpha))
        return IndependenceTest(
            attributes=(self.attributes_[i], self.attributes_[j]), statistic=statistic,
            dof=dof, alpha=alpha, p_value=p_value, critical_value=critical,
            reject=statistic > critical, p_value_noise_aware=p_noise,
            critical_value_noise_aware=critical_noise, reject_noise_aware=p_noise <= alpha,
        )

    def mutual_information(self, a, b):
        """Mutual information (nats) of columns ``a`` and ``b`` from the fitted 2-way table.

        The noisy table is clipped to non-negative cells and renormalized first (the
        thesis's practice; logarithms of negative cells are undefined), and the margins are
        the table's own. The clipping biases small MI values upwards: independent columns
        get a small positive MI of the order of the noise.

        Parameters
        ----------
        a, b : str or int
            Two collected columns.

        Returns
        -------
        float
            The mutual information in nats.
        """
        check_is_fitted(self, "statistic_")
        return _mutual_information(self._table(self._pair(a, b, "mutual information")))

    def pairwise_mutual_information(self):
        """Mutual information of every pair of columns, as a symmetric DataFrame (nats).

        Returns
        -------
        pandas.DataFrame
            Symmetric, indexed and labelled by the columns, 0 on the diagonal.
        """
        check_is_fitted(self, "statistic_")
        self._check_pairs("pairwise mutual information")
        d = len(self.attributes_)
        matrix = np.zeros((d, d))
        for i, j in itertools.combinations(range(d), 2):
            matrix[i, j] = matrix[j, i] = _mutual_information(self._table((i, j)))
        labels = pd.Index(self.attributes_, name="attribute")
        return pd.DataFrame(matrix, index=labels, columns=labels.rename(None))

    def chow_liu_tree(self):
        """The Chow-Liu tree: the maximum-weight spanning tree over pairwise mutual information.

        Returns
        -------
        pandas.DataFrame
            One row per edge (``n_attributes - 1``), columns ``attribute_a``,
            ``attribute_b``, ``mutual_information``, by decreasing mutual information.
        """
        check_is_fitted(self, "statistic_")
        self._check_pairs("the Chow-Liu tree")
        mi = self.pairwise_mutual_information().to_numpy()
        # A maximum spanning tree of mi is a minimum one of (c - mi) for any constant c; with
        # c above every weight all edges stay present (csgraph drops zero weights).
        weights = np.triu(mi.max() + 1.0 - mi, k=1)
        tree = minimum_spanning_tree(weights).tocoo()
        edges = pd.DataFrame({
            "attribute_a": [self.attributes_[i] for i in tree.row],
            "attribute_b": [self.attributes_[j] for j in tree.col],
            "mutual_information": mi[tree.row, tree.col],
        })
        return edges.sort_values("mutual_information", ascending=False, ignore_index=True)

    def __sklearn_tags__(self):
        return with_tags(super().__sklearn_tags__(), categorical=True, string=True,
                         requires_fit=True, non_deterministic=True)
