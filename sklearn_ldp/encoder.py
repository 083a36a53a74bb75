"""LDPEncoder: the client side of local differential privacy as a scikit-learn transformer."""

import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted, validate_data

from . import workloads
from ._validation import check_dense_size, check_epsilon, check_positive_int
from .domain import Domain
from .mechanisms.base import check_type_counts
from .mechanisms.range_tree import LEVEL_ORACLES
from .mechanisms.strategies import FACTORIZATION_BASELINES, build_mechanism, check_strategy_name
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
        candidate with the least analytic worst-case error on ``workload``).
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
        order that supports the workload).
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

    Attributes
    ----------
    domain_ : Domain
    workload_ : Workload
    mechanism_ : Mechanism
    strategy_ : str
        Name of the strategy built (the winner for ``"auto"``).
    candidates_ : pandas.Series
        Worst-case per-user variance on the workload of each candidate tried.
    expected_error_ : dict
        Worst-case and average-case per-user total variance on the workload.
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

    def fit(self, X=None, y=None):
        """Build the strategy from the public domain and the workload (data-independent)."""
        epsilon = check_epsilon(self.epsilon)
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
        self.workload_ = resolve_workload(self.workload, self.domain_)
        rng = np.random.default_rng(self.random_state)
        mechanism, report = build_mechanism(
            self.strategy,
            self.domain_.shape,
            epsilon,
            workload_matrix=self.workload_.matrix,
            branching=self.branching,
            max_order=self.max_order,
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
        reports = self.mechanism_.randomize(indices, self._rng)
        return LDPReports(reports, self.mechanism_, self.domain_, self.workload_)

    def simulate(self, X):
        """Simulate the clients of ``X`` and return only the server's aggregate.

        Statistically identical to aggregating ``transform(X)`` (the aggregate is drawn from
        its exact distribution given the number of users of each cell), but it costs
        ``O(n^2)`` or less instead of one draw per user. Available for mechanisms whose
        aggregate can be drawn exactly (randomized response, unary encoding, Hadamard
        response and HRR, ``"hierarchical"`` with OUE or HRR levels, ``"haar"``,
        factorization strategies, Gaussian); the others raise
        NotImplementedError. Returns :class:`~sklearn_ldp.reports.AggregatedReports`.
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
        statistic = self.mechanism_.simulate_statistic(counts, self._rng)
        return AggregatedReports(statistic, self.mechanism_, self.domain_, self.workload_)

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
