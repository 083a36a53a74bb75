"""LDPEncoder: the client side of local differential privacy as a scikit-learn transformer."""

import math
import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from . import workloads
from ._validation import check_dense_size, check_epsilon, check_positive_int
from .budget import BudgetExceededError, charge_ledger, resolve_ledger
from .domain import Domain
from .mechanisms.base import check_type_counts
from .mechanisms.range_tree import LEVEL_ORACLES
from .mechanisms.strategies import (
    FACTORIZATION_BASELINES,
    MARGINAL_STRATEGIES,
    build_mechanism,
    check_strategy_name,
    marginal_order,
)
from .postprocess import clip_to_distribution
from .reports import AggregatedReports, LDPReports

# Strategies stored as dense matrices (the others are structured).
DENSE_STRATEGIES = FACTORIZATION_BASELINES + ("optimized",)

WORKLOAD_BY_NAME = {
    "histogram": workloads.histogram,
    "prefix": workloads.prefix,
    "all_range": workloads.all_range,
}


def resolve_domain(categories, X):
    """The public Domain: from ``categories``, or (with a warning) read from ``X``."""
    if categories is None or (isinstance(categories, str) and categories == "auto"):
        if X is None:
            raise ValueError("categories must be given when there is no data to read them from.")
        return Domain.from_data(X)
    if isinstance(categories, str):
        raise ValueError(f"categories must be a mapping column -> categories or 'auto', got "
                         f"{categories!r}.")
    return Domain(categories)


def resolve_workload(workload, domain):
    """A Workload over ``domain`` from a Workload, a matrix, a builder name or None (histogram)."""
    if workload is None:
        return workloads.histogram(domain)
    if isinstance(workload, str):
        if workload not in WORKLOAD_BY_NAME:
            raise ValueError(
                f"unknown workload name {workload!r}; use one of {sorted(WORKLOAD_BY_NAME)} or "
                "pass a Workload built with sklearn_ldp.workloads."
            )
        return WORKLOAD_BY_NAME[workload](domain)
    result = workloads.as_workload(workload)
    result.check_width(domain.size)
    return result


def validate_records(estimator, X, reset):
    """scikit-learn's checks of a 2-D table of records (sparse, complex, empty, width).

    Values are not converted: the Domain encodes them and names any bad column or value.
    A 1-D input (a single column) is left to the Domain.
    """
    if isinstance(X, pd.Series) or (not hasattr(X, "tocsr") and np.ndim(X) == 1):
        return
    # DataFrames: the Domain reports NaN by column name. Plain numeric arrays: refuse NaN and
    # inf here (inf would otherwise become a category when categories are read from data).
    numeric = not isinstance(X, pd.DataFrame) and np.asarray(X).dtype.kind in "fc"
    validate_data(estimator, X, reset=reset, dtype=None, ensure_all_finite=numeric)


def reports_or_privatized(estimator, X, first_call, strategy_params=None, **encoder_params):
    """``X`` if it holds reports, else raw records privatized by the estimator's own encoder.

    For estimators that accept raw records as a simulation convenience when their
    ``strategy`` is set: the first call fits ``estimator.encoder_ = LDPEncoder(strategy=...,
    epsilon=..., categories=..., random_state=..., ledger=..., ledger_users=...,
    **encoder_params, **strategy_params)`` on ``X`` (privatizing raw records is a collection,
    so the estimator's ledger is charged) and copies its ``n_features_in_`` /
    ``feature_names_in_``; every call returns ``encoder_.transform(X)``.
    """
    if isinstance(X, LDPReports | AggregatedReports):
        return X
    name = type(estimator).__name__
    if estimator.strategy is None:
        raise ValueError(
            f"{name}.fit expects LDPReports (the output of LDPEncoder.transform) or "
            "AggregatedReports (LDPEncoder.simulate). To fit on raw records, set strategy= and "
            "epsilon= so that the estimator privatizes them itself (a simulation of the "
            "clients)."
        )
    if first_call:
        try:
            encoder = LDPEncoder(strategy=estimator.strategy, epsilon=estimator.epsilon,
                                 categories=estimator.categories,
                                 random_state=estimator.random_state, ledger=estimator.ledger,
                                 ledger_users=estimator.ledger_users, **encoder_params,
                                 **(strategy_params or {}))
        except TypeError as exc:
            raise ValueError(f"strategy_params does not fit LDPEncoder: {exc}") from None
        estimator.encoder_ = encoder.fit(X)
        for attribute in ("n_features_in_", "feature_names_in_"):
            if hasattr(estimator.encoder_, attribute):
                setattr(estimator, attribute, getattr(estimator.encoder_, attribute))
    return estimator.encoder_.transform(X)


# Number of users at which the data-independent TV prediction is evaluated before it is
# rescaled to "TV x sqrt(N)" (every marginal variance is proportional to 1 / N).
_REFERENCE_USERS = 2**20


def all_attribute_sets(mechanism):
    """Every marginal a marginal mechanism answers: sorted position tuples, orders 1 to k."""
    return [s for order in range(1, mechanism.params["max_order"] + 1)
            for s in mechanism.attribute_sets(order)]


def marginal_error_table(mechanism, names, n_users=None, marginals=None):
    """Predicted error of every marginal a mechanism answers, one row per marginal.

    Parameters
    ----------
    mechanism : MarginalMechanism
    names : list
        Name of each attribute (position order).
    n_users : int or None
        ``None``: the data-independent prediction made before collection, in a form that
        does not need the number of users (columns ``per_user_variance`` and ``tv_sqrt_n``).
        An int: the predicted total variation for that many users (``predicted_tv``, for
        uniform data) and, with ``marginals``, the plug-in prediction ``plug_in_tv``.
    marginals : dict or None
        Sorted position tuple -> estimated table (fractions), for the plug-in prediction.

    Returns
    -------
    pandas.DataFrame indexed by the marginals (tuples of attribute names)

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.marginals import build_marginal_mechanism
    >>> mechanism = build_marginal_mechanism("inp_ht", (2, 3), 1.0, 2)
    >>> table = marginal_error_table(mechanism, ["smoker", "age"])
    >>> list(table.index)
    [('smoker',), ('age',), ('smoker', 'age')]
    >>> list(table.columns)
    ['order', 'n_cells', 'per_user_variance', 'tv_sqrt_n']
    """
    sets = all_attribute_sets(mechanism)
    index = pd.Index([tuple(names[a] for a in s) for s in sets], tupleize_cols=False,
                     name="marginal")
    table = pd.DataFrame({"order": [len(s) for s in sets],
                          "n_cells": [math.prod(mechanism.params["shape"][a] for a in s)
                                      for s in sets]}, index=index)
    if n_users is None:
        reference = _REFERENCE_USERS
        table["per_user_variance"] = [
            reference * float(np.sum(mechanism.marginal_variance(s, reference))) for s in sets]
        table["tv_sqrt_n"] = [mechanism.expected_tv(s, reference) * math.sqrt(reference)
                              for s in sets]
        return table
    table["predicted_tv"] = [mechanism.expected_tv(s, n_users) for s in sets]
    if marginals is not None:
        table["plug_in_tv"] = [mechanism.expected_tv(s, n_users, marginal=clip_to_distribution(
            marginals[s])) for s in sets]
    return table


class LDPEncoder(TransformerMixin, BaseEstimator):
    """Privatize categorical records with an epsilon-LDP strategy (the client side).

    ``fit`` is data-independent: it reads the public domain and the workload and builds (or
    optimizes) the strategy. ``transform`` privatizes every row and returns
    :class:`~sklearn_ldp.reports.LDPReports`, which carry the mechanism so that any estimator
    can decode them.

    Parameters
    ----------
    categories : dict or "auto", default=None
        The public domain: column -> list of categories. ``None``/``"auto"`` reads the
        categories from the data passed to ``fit`` and warns that this leaks information
        about the private data; production code passes them explicitly.
    strategy : str, default="auto"
        Frequency oracles (structured, any domain size): ``"randomized_response"``,
        ``"rappor"`` (symmetric unary encoding), ``"oue"``, ``"olh"``, ``"blh"``,
        ``"hadamard"``, ``"hrr"``, ``"subset_selection"``. Range mechanisms over the ordered
        (flat) domain, structured: ``"hierarchical"`` (a tree of fan-out ``branching``, one
        sampled level per user through ``oracle``) and ``"haar"`` (HaarHRR). Factorization
        baselines: ``"hierarchical_matrix"`` (the tree as a dense matrix with Hadamard
        response per level), ``"fourier"``. Bassily's randomizers of the workload's columns:
        ``"gaussian"`` ((epsilon, delta)-LDP, needs ``delta``) and ``"gaussian_pure"``.
        ``"optimized"`` (optimized for ``workload``) or ``"auto"`` (the epsilon-LDP
        candidate with the least analytic worst-case error on ``workload``). Marginal
        strategies (thesis chapter 4, decoded by
        :class:`~sklearn_ldp.estimators.MarginalEstimator`; every marginal of order up to
        ``max_order``, no workload): ``"inp_ht"`` (recommended), ``"inp_rr"``,
        ``"inp_ps"``, ``"marg_rr"``, ``"marg_ps"``, ``"marg_ht"`` and the ``"inp_em"``
        baseline (see ``docs/marginals.md``).
    epsilon : float, default=1.0
        Privacy budget of every user's report (epsilon-LDP).
    delta : float, default=None
        Only for ``strategy="gaussian"``: the delta of (epsilon, delta)-LDP, in (0, 1).
    workload : Workload, array, {"histogram", "prefix", "all_range"} or None, default=None
        Queries the strategy should serve (default: the histogram).
    branching : int, default=4
        Fan-out ``B >= 2`` of the ``"hierarchical"`` and ``"hierarchical_matrix"`` trees
        (:func:`~sklearn_ldp.mechanisms.range_bounds.recommend_branching` suggests one).
    oracle : {"oue", "olh", "hrr"}, default="oue"
        Frequency oracle of every level of the ``"hierarchical"`` tree (``"oue"`` is the
        thesis's choice; ``"hrr"`` has the most compact reports; ``"olh"`` has no exact
        simulation, so ``simulate`` needs ``"oue"`` or ``"hrr"``).
    max_order : int, default=None
        Largest marginal order the ``"fourier"`` strategy must answer (default: the least
        order that supports the workload), or that a marginal strategy collects (default
        ``min(2, number of columns)``; at most the number of columns).
    n_outputs : int, default=None
        Number of outputs of the ``"optimized"`` strategy (default ``4 n``).
    init : {"best", "random", "baseline"}, default="best"
        Start of the optimizer: a random feasible strategy, the best baseline for the
        workload, or both, keeping the better result ("best": never worse than any
        baseline; the random start wins in the medium-privacy regime, the baseline start
        can win at large epsilon).
    max_iter : int, default=500
        Iteration cap of the optimizer.
    tol : float, default=1e-5
        Relative-improvement tolerance of the optimizer.
    verbose : int, default=0
        Optimizer progress printing.
    random_state : int, numpy Generator or None, default=None
        Seeds the optimizer and the randomization. A seeded generator is for reproducible
        *simulation* only: a deployed client must use fresh operating-system entropy
        (``random_state=None``), or its reports could be re-derived.
    ledger : str, path or None, default=None
        Privacy budget ledger to charge (see :mod:`sklearn_ldp.budget`): the path of a
        ledger file or the name of a ledger registered with
        :func:`~sklearn_ldp.budget.register_ledger` (plain values, so clones and
        GridSearchCV's copies charge the same ledger). Every ``transform`` is a collection
        that spends the mechanism's epsilon (and delta) of the users ``ledger_users``; it is
        charged before any randomization, so a refused charge
        (:class:`~sklearn_ldp.budget.BudgetExceededError`) produces no reports.
        ``simulate``/``simulate_counts`` charge the same (their aggregate is distributed as
        that of a real collection, so on real records it spends as much); simulations on
        synthetic data should leave ``ledger=None``.
    ledger_users : str, default="all"
        Group of users covered by the charges: ``"all"`` (everyone) or a cohort declared in
        the ledger (cohorts are disjoint and compose in parallel).

    Attributes
    ----------
    domain_ : Domain
    workload_ : Workload
        ``None`` for the marginal strategies.
    mechanism_ : Mechanism
    strategy_ : str
        Name of the strategy built (the winner for ``"auto"``).
    candidates_ : pandas.Series
        Worst-case per-user variance on the workload of each candidate tried.
    expected_error_ : dict or pandas.DataFrame
        Worst-case and average-case per-user total variance on the workload. Marginal
        strategies: a DataFrame with one row per marginal (tuples of column names, every
        order up to ``max_order``), predicted before collection for uniform data and in
        forms that do not depend on the number of users ``N``: ``per_user_variance`` (``N``
        times the summed cell variances of the table of fractions) and ``tv_sqrt_n``
        (expected total variation times ``sqrt(N)``, so ``tv_sqrt_n / sqrt(N)`` predicts it
        for ``N`` users; :meth:`predict_marginal_tv` does that).
    n_iter_, history_ : int, list
        Optimizer iterations and per-iteration record (optimized strategies only).
    n_features_in_ : int
    feature_names_in_ : ndarray (when fitted on a DataFrame)

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"smoker": ["no", "yes", "no", "no"]})
    >>> enc = LDPEncoder(categories={"smoker": ["no", "yes"]},
    ...                  strategy="randomized_response", epsilon=1.0, random_state=0)
    >>> reports = enc.fit_transform(df)
    >>> len(reports)
    4
    """

    def __init__(
        self,
        categories=None,
        strategy="auto",
        epsilon=1.0,
        workload=None,
        delta=None,
        branching=4,
        oracle="oue",
        max_order=None,
        n_outputs=None,
        init="best",
        max_iter=500,
        tol=1e-5,
        verbose=0,
        random_state=None,
        ledger=None,
        ledger_users="all",
    ):
        self.categories = categories
        self.strategy = strategy
        self.epsilon = epsilon
        self.workload = workload
        self.delta = delta
        self.branching = branching
        self.oracle = oracle
        self.max_order = max_order
        self.n_outputs = n_outputs
        self.init = init
        self.max_iter = max_iter
        self.tol = tol
        self.verbose = verbose
        self.random_state = random_state
        self.ledger = ledger
        self.ledger_users = ledger_users

    def fit(self, X=None, y=None):
        """Build the strategy from the public domain and the workload (data-independent)."""
        epsilon = check_epsilon(self.epsilon)
        resolve_ledger(self.ledger, self.ledger_users)  # a bad ledger fails here, not later
        check_strategy_name(self.strategy)
        check_positive_int(self.branching, "branching", minimum=2)
        if self.oracle not in LEVEL_ORACLES:
            raise ValueError(f"oracle must be one of {sorted(LEVEL_ORACLES)} (the frequency "
                             f"oracle of each level of the 'hierarchical' tree), got "
                             f"{self.oracle!r}.")
        check_positive_int(self.max_iter, "max_iter")
        if X is not None:
            validate_records(self, X, reset=True)
        self.domain_ = resolve_domain(self.categories, X)
        if self.strategy in DENSE_STRATEGIES:
            # A dense strategy has at least n outputs: refuse early with advice.
            check_dense_size(self.domain_.size, self.domain_.size, self.strategy)
        marginal = self.strategy in MARGINAL_STRATEGIES
        max_order = self.max_order
        if marginal:
            # Every marginal up to max_order from one collection: no workload matrix (the
            # histogram of 16 binary columns alone would be a dense 65536 x 65536 matrix).
            if self.workload is not None:
                raise ValueError(f"the marginal strategy {self.strategy!r} answers every "
                                 "marginal up to max_order and takes no workload; leave "
                                 "workload=None.")
            max_order = marginal_order(self.domain_.shape, self.max_order, self.domain_.columns)
        self.workload_ = None if marginal else resolve_workload(self.workload, self.domain_)
        rng = np.random.default_rng(self.random_state)
        mechanism, report = build_mechanism(
            self.strategy,
            self.domain_.shape,
            epsilon,
            workload_matrix=None if marginal else self.workload_.matrix,
            branching=self.branching,
            max_order=max_order,
            n_outputs=self.n_outputs,
            init=self.init,
            max_iter=self.max_iter,
            tol=self.tol,
            random_state=rng,
            verbose=self.verbose,
            delta=self.delta,
            oracle=self.oracle,
        )
        self.mechanism_ = mechanism
        self.strategy_ = mechanism.name
        self.candidates_ = pd.Series(report["candidates"], name="worst_case_per_user_variance")
        if marginal:
            self.expected_error_ = marginal_error_table(mechanism, list(self.domain_.columns))
        else:
            self.mechanism_.check_supports(self.workload_.matrix)
            self.expected_error_ = mechanism.expected_error(self.workload_.gram())
        self.n_iter_ = report.get("n_iter", 0)  # 0: no optimizer ran for this strategy
        self.history_ = report.get("history", [])
        if "n_iter" in report:
            if not report["converged"] and self.strategy_ == "optimized":
                warnings.warn(
                    f"the strategy optimizer stopped at max_iter={self.max_iter} before "
                    f"reaching tol={self.tol}; the strategy is usable but may improve with more "
                    "iterations.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
        if X is None:
            self.n_features_in_ = self.domain_.n_columns
            self.feature_names_in_ = np.asarray(self.domain_.columns, dtype=object)
        self._rng = rng
        return self

    def transform(self, X):
        """Privatize every row of ``X``; returns LDPReports (one report per row)."""
        check_is_fitted(self, "mechanism_")
        validate_records(self, X, reset=False)
        indices = self.domain_.encode(X)
        self._charge_collection(indices.shape[0], "transform")
        reports = self.mechanism_.randomize(indices, self._rng)
        return LDPReports(reports, self.mechanism_, self.domain_, self.workload_)

    def simulate(self, X):
        """Simulate the clients of ``X`` and return only the server's aggregate.

        Statistically identical to aggregating ``transform(X)`` (the aggregate is drawn from
        its exact distribution given the number of users of each cell), but it costs
        ``O(n^2)`` or less instead of one draw per user. Available for mechanisms whose
        aggregate can be drawn exactly (randomized response, unary encoding, Hadamard
        response and HRR, ``"hierarchical"`` with OUE or HRR levels, ``"haar"``,
        factorization strategies, Gaussian, and the marginal strategies except
        ``"inp_em"``); the others raise NotImplementedError. Returns
        :class:`~sklearn_ldp.reports.AggregatedReports`.
        """
        check_is_fitted(self, "mechanism_")
        validate_records(self, X, reset=False)
        counts = np.bincount(self.domain_.encode(X), minlength=self.domain_.size)
        return self.simulate_counts(counts)

    def simulate_counts(self, type_counts):
        """Like :meth:`simulate`, from the number of users of each domain cell (flat order).

        Use it for populations too large to hold as records (e.g. 10^9 users).
        """
        check_is_fitted(self, "mechanism_")
        counts = check_type_counts(type_counts, self.domain_.size)
        # Charged after the draw (a mechanism without exact simulation raises first, charging
        # nothing) and before anything is returned. A refused charge releases nothing and
        # rewinds the generator, so the encoder is left exactly as it was.
        generator_state = self._rng.bit_generator.state
        statistic = self.mechanism_.simulate_statistic(counts, self._rng)
        try:
            self._charge_collection(int(counts.sum()), "simulate")
        except BudgetExceededError:
            self._rng.bit_generator.state = generator_state
            raise
        return AggregatedReports(statistic, self.mechanism_, self.domain_, self.workload_)

    def _charge_collection(self, n_users, method):
        """Charge the ledger (if any) for one report of each of ``n_users`` users."""
        charge_ledger(
            self.ledger, self.mechanism_.epsilon, getattr(self.mechanism_, "delta", None) or 0.0,
            kind="collection", users=self.ledger_users,
            description=f"LDPEncoder.{method}: {n_users} users, strategy {self.strategy_!r}")

    def predict_marginal_tv(self, n_users):
        """Marginal strategies: predicted total variation of every marginal for ``n_users``.

        The data-independent prediction (uniform data) of the expected TV of each unbiased
        table, a pandas Series indexed by the marginals: use it to choose ``N`` before
        collecting.
        """
        check_is_fitted(self, "mechanism_")
        if self.workload_ is not None:
            raise ValueError(f"predict_marginal_tv needs a marginal strategy, not "
                             f"{self.strategy_!r}.")
        return marginal_error_table(self.mechanism_, list(self.domain_.columns),
                                    n_users)["predicted_tv"]

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self, "mechanism_")
        return np.asarray(["report"], dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.non_deterministic = True
        tags.requires_fit = True
        return tags
