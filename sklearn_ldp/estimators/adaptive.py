"""AdaptiveQueryEstimator: Bassily's adaptive protocol for linear queries under LDP (§3.7).

The users are split into disjoint groups; round ``t`` asks the ``t``-th group one query
``q_t`` (a vector over the domain cells with entries in ``[-r, r]``), which may be chosen
after seeing the answers of the previous rounds. Each user of the group sends one bit about
``q_t[v_i]`` with the unbiased one-bit randomizer
(:class:`~sklearn_ldp.mechanisms.numeric.one_bit.OneBitRandomizer`, the math of
:mod:`sklearn_ldp.mechanisms.numeric.one_bit`), and the answer is the mean of the decoded bits,

    y_t = (1 / |S_t|) sum_{i in S_t} b_i c r,        c = (e^eps + 1) / (e^eps - 1),

an unbiased estimate of the group's mean ``(1/|S_t|) sum_i q_t[v_i]``, hence of the population
mean ``<q_t, p>`` when the groups are drawn at random. Every user answers a single query, so
the protocol is eps-LDP whatever the queries, and choosing a query from earlier answers is
harmless because those answers come from other users. Error ``O(r sqrt(d log d / (eps^2 N)))``
in the worst case over ``d`` adaptive queries (Bassily 2019, Table 1).

Answers are means (fractions of the group), not counts, matching the paper's target
``<q, p>``.

Expected error (decision). The exact variance of ``y_t`` given the group is
``sum_{i in S_t} ((c r)^2 - q_t[v_i]^2) / |S_t|^2``. It depends on the private values, and it
has no unbiased estimate from the reports: the expectation of any function of a bit is affine
in ``q_t[v_i]``, so ``q_t[v_i]^2`` cannot be estimated without bias from one bit. We therefore
report, as every estimator does, the two data-independent cases: ``worst_case``, every user in
the cell where ``|q_t|`` is least, ``((c r)^2 - min_v q_t[v]^2) / |S_t|``, which bounds the
exact variance for any data (it is ``(c r)^2 / |S_t|`` when the query has a zero entry, and
exceeds the exact variance by at most ``r^2 / |S_t|``, a factor at most ``c^2 / (c^2 - 1)``,
e.g. 1.27 at eps = 1); and ``average_case``, users spread evenly over the domain cells,
``((c r)^2 - mean_v q_t[v]^2) / |S_t|``.
"""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator

from .. import workloads
from .._glue import resolve_domain, validate_records
from .._validation import (
    FreshEntropyMixin,
    check_epsilon,
    check_nesting,
    check_positive_int,
    store_params,
)
from ..deploy.budget import charge_ledger, resolve_ledger
from ..mechanisms.numeric.one_bit import BOUND_RTOL, OneBitRandomizer, check_bound
from ._base import forget_fitted, with_tags


class AdaptiveQueryEstimator(FreshEntropyMixin, BaseEstimator):
    """Answer (possibly adaptively chosen) linear queries, one fresh group of users per query.

    ``fit(X)`` splits the users (rows of ``X``) into ``d`` disjoint groups uniformly at random
    and answers the queries in order, group ``t`` answering query ``t``; with a callable
    ``queries`` each query is chosen from the answers so far. ``partial_fit(X, query=...)``
    treats ``X`` as a fresh group and answers the next query. Each user's record is privatized
    here with a one-bit eps-LDP randomizer (a simulation of the clients).

    Parameters
    ----------
    categories : dict or "auto", default=None
        The public domain: column -> list of categories. ``None``/``"auto"`` reads them from
        the data with a warning (it leaks information); production code passes them.
    epsilon : float, default=1.0
        Privacy budget of every user's single bit.
    bound : float, default=1.0
        ``r``: every query entry must lie in ``[-r, r]``.
    queries : None, Workload, array of shape (d, n_cells) or callable, default=None
        ``None``: the 1-way marginals (one indicator query per category of each column),
        which need ``r >= 1``. A matrix or Workload: ``d`` queries answered in order. A
        callable ``next_query(answers)`` receives the answers so far (a pandas Series, empty
        at the first round) and returns the next query, a vector of length ``n_cells`` (use
        ``n_rounds`` to say how many rounds ``fit`` runs).
    n_rounds : int, default=None
        Number of rounds of ``fit``: required for a callable ``queries``; for a matrix, the
        first ``n_rounds`` queries are answered (default all).
    random_state : int, numpy Generator or None, default=None
        Seeds the split into groups and the randomization. A seeded generator is for
        reproducible *simulation* only (its copies repeat its draws); a deployed client must
        use ``None``: fresh operating-system entropy, drawn again in every copy (pickle,
        fork, Dask worker), so that two copies never send the same noise.
    ledger : str, path or None, default=None
        Privacy budget ledger to charge (see :mod:`sklearn_ldp.deploy.budget`): the path of a
        ledger file or the name of a ledger registered with
        :func:`~sklearn_ldp.deploy.budget.register_ledger`. The rounds' groups are disjoint, so
        they compose in parallel: ``fit`` is one collection that spends ``epsilon`` of the
        users ``ledger_users`` whatever the number of rounds, and so does the first
        ``partial_fit``; later ``partial_fit`` rounds (fresh users of the same cohort, by
        their contract) are recorded with epsilon 0. Charged before any randomization: a
        refused charge (:class:`~sklearn_ldp.deploy.budget.BudgetExceededError`) answers nothing.
    ledger_users : str, default="all"
        Group of users covered by the charges: ``"all"`` or a cohort declared in the ledger.

    Attributes
    ----------
    answers_ : pandas.Series
        One answer per round (a mean over the round's group), indexed by the query labels.
    expected_error_ : pandas.DataFrame
        Variance of each answer (fractions squared, as ``answers_``), one row per round
        indexed like ``answers_``: ``worst_case`` (every user of the group in the cell where
        the query's magnitude is least: a bound for any data) and ``average_case`` (users
        spread evenly over the cells). See the module docstring for why not the
        data-dependent exact value. (It was a Series of the worst case alone in 0.1:
        ``expected_error_["worst_case"]`` holds the same values for queries with a zero
        entry, such as the default marginals.)
    group_sizes_ : ndarray of int64
        Number of users of each round.
    queries_ : ndarray of shape (n_rounds_, n_cells)
        The queries answered, in order.
    n_rounds_ : int
        Rounds answered so far.
    domain_ : Domain
        The public domain the records are encoded over.
    randomizer_ : OneBitRandomizer
        The one-bit randomizer of every user (``epsilon``, ``bound``).
    n_features_in_ : int
        Number of columns of the records.
    feature_names_in_ : ndarray of str
        Names of those columns (when fitted on a DataFrame).

    See Also
    --------
    sklearn_ldp.mechanisms.OneBitRandomizer : The randomizer every user runs.
    sklearn_ldp.WorkloadEstimator : A fixed workload answered from one collection.
    sklearn_ldp.PrivacyLedger : Records the budget the rounds spend.

    References
    ----------
    .. [1] R. Bassily, "Linear queries estimation with local differential privacy", AISTATS
       2019 (PMLR 89), section 3.7 (the adaptive protocol and its error bound).
    .. [2] J. C. Duchi, M. I. Jordan and M. J. Wainwright, "Local privacy and statistical
       minimax rates", FOCS 2013 (the one-bit randomizer of bounded values).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"smoker": rng.choice(["no", "yes"], 20000, p=[0.7, 0.3])})
    >>> estimator = AdaptiveQueryEstimator(categories={"smoker": ["no", "yes"]},
    ...                                    epsilon=1.0, random_state=0).fit(df)
    >>> estimator.answers_.round(1).tolist()
    [0.7, 0.3]
    >>> adaptive = AdaptiveQueryEstimator(
    ...     categories={"smoker": ["no", "yes"]}, random_state=0,
    ...     queries=lambda answers: [1.0, 0.0] if len(answers) == 0 else [0.0, 1.0],
    ...     n_rounds=2).fit(df)
    >>> adaptive.n_rounds_
    2
    """

    def __init__(self, categories=None, epsilon=1.0, bound=1.0, queries=None, n_rounds=None,
                 random_state=None, ledger=None, ledger_users="all"):
        store_params(self, locals())

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None):
        """Split the users of ``X`` into one random group per query and answer every query.

        Parameters
        ----------
        X : DataFrame or 2-D array of records
            One row per user, over the columns of ``categories``; at least one user per
            round.
        y : None
            Ignored.

        Returns
        -------
        self : AdaptiveQueryEstimator
            The fitted estimator (``answers_``, ``expected_error_`` ... set).
        """
        check_nesting(self, locals())
        self._check_params()
        self._reset()
        validate_records(self, X, reset=True)
        domain = resolve_domain(self.categories, X)
        indices = domain.encode(X)
        self._start(domain)
        n_rounds = self._planned_rounds()
        if indices.shape[0] < n_rounds:
            raise ValueError(
                f"fit needs at least one user per query: {n_rounds} queries but only "
                f"{indices.shape[0]} users (n_samples={indices.shape[0]}). Ask fewer queries "
                "(n_rounds=) or collect more users."
            )
        self._charge(self.epsilon, f"fit: {n_rounds} rounds on disjoint groups of "
                                   f"{indices.shape[0]} users (parallel composition)")
        groups = np.array_split(self._generator().permutation(indices.shape[0]), n_rounds)
        for group in groups:
            query, label = self._next_query(None)
            self._answer(indices[group], query, label)
        return self

    def partial_fit(self, X, y=None, query=None):
        """Answer the next query with the users of ``X``, a fresh group.

        Parameters
        ----------
        X : DataFrame or 2-D array of records
            Users who have not answered any earlier query.
        y : None
            Ignored.
        query : array of shape (n_cells,), optional
            The query to answer; default the next one from ``queries`` (the next row, or the
            callable applied to the answers so far).

        Returns
        -------
        self : AdaptiveQueryEstimator
            The estimator, with one more round in ``answers_`` and ``expected_error_``.
        """
        check_nesting(self, locals())
        first_call = not self.__sklearn_is_fitted__()
        if first_call:
            self._check_params()
            self._reset()
        validate_records(self, X, reset=first_call)
        if first_call:
            self._start(resolve_domain(self.categories, X))
        indices = self.domain_.encode(X)
        query, label = self._next_query(query)
        if indices.shape[0] > 0:  # an empty group is refused by _answer, uncharged
            round_epsilon = self.epsilon if first_call else 0.0  # fresh users: parallel
            self._charge(round_epsilon, f"partial_fit: round {self.n_rounds_} on a fresh "
                                        f"group of {indices.shape[0]} users")
        self._answer(indices, query, label)
        return self

    # ------------------------------------------------------------------ internals
    def _charge(self, epsilon, description):
        charge_ledger(self.ledger, epsilon, kind="collection", users=self.ledger_users,
                      description=f"AdaptiveQueryEstimator.{description}")

    def _check_params(self):
        check_epsilon(self.epsilon)
        resolve_ledger(self.ledger, self.ledger_users)  # a bad ledger fails here, not later
        check_bound(self.bound)
        if self.n_rounds is not None:
            check_positive_int(self.n_rounds, "n_rounds")
        if isinstance(self.queries, (str, bytes, dict)):
            raise ValueError(
                "queries must be None, a Workload, a query matrix (d x n_cells) or a callable "
                f"next_query(answers) -> vector; got {type(self.queries).__name__}."
            )

    def _reset(self):
        forget_fitted(self, ("answers_", "n_features_in_", "feature_names_in_"))

    def _start(self, domain):
        """Fresh fitted state for ``domain``: randomizer, generator, empty answers."""
        self.domain_ = domain
        self.randomizer_ = OneBitRandomizer(self.epsilon, self.bound)
        self._set_generator(np.random.default_rng(self._random_state()))
        if not hasattr(self, "n_features_in_"):
            self.n_features_in_ = domain.n_columns  # 1-D input is not seen by validate_data
        self._source = self._resolve_queries(domain)
        self._labels, self._answers, self._sizes = [], [], []
        self._worst, self._average = [], []
        self._queries = []
        self._publish()

    def _resolve_queries(self, domain):
        """(matrix, labels) for a fixed workload, or the callable."""
        if callable(self.queries) and not isinstance(self.queries, workloads.Workload):
            return self.queries
        if self.queries is None:
            workload = workloads.marginals(domain, k=1)
        else:
            workload = workloads.as_workload(self.queries)
            workload.check_width(domain.size)
        matrix = workload.toarray()
        outside = np.abs(matrix) > self.randomizer_.bound * (1 + BOUND_RTOL)
        if np.any(outside):
            row = int(np.flatnonzero(outside.any(axis=1))[0])
            raise ValueError(
                f"query {workload.labels[row]!r} has entries outside [-bound, bound] = "
                f"[{-self.randomizer_.bound}, {self.randomizer_.bound}] (largest magnitude "
                f"{np.abs(matrix[row]).max():g}); scale the queries or raise bound."
            )
        return matrix, list(workload.labels)

    def _planned_rounds(self):
        if callable(self._source):
            if self.n_rounds is None:
                raise ValueError("with a callable queries, fit needs n_rounds (the number of "
                                 "adaptive rounds to run).")
            return int(self.n_rounds)
        n_queries = self._source[0].shape[0]
        if self.n_rounds is None:
            return n_queries
        if self.n_rounds > n_queries:
            raise ValueError(f"n_rounds={self.n_rounds} but only {n_queries} queries were given.")
        return int(self.n_rounds)

    def _next_query(self, query):
        """The next query vector (checked) and its label."""
        t = len(self._answers)
        label = None
        if query is None:
            if callable(self._source):
                query = self._source(self.answers_.copy())
            else:
                matrix, labels = self._source
                if t >= matrix.shape[0]:
                    raise ValueError(
                        f"all {matrix.shape[0]} queries have been answered; pass query=... to "
                        "partial_fit to ask another one."
                    )
                query, label = matrix[t], labels[t]
        if label is None or label in self._labels:
            label = f"q{t}"
        return self._check_query(query, label), label

    def _check_query(self, query, label):
        n_cells = self.domain_.size
        try:
            vector = np.asarray(query, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"query {label!r} must be a numeric vector of length {n_cells}, got "
                             f"{type(query).__name__}.") from None
        if vector.shape != (n_cells,):
            raise ValueError(f"query {label!r} must be a vector of length {n_cells} (one entry "
                             f"per domain cell), got shape {vector.shape}.")
        if not np.all(np.isfinite(vector)):
            raise ValueError(f"query {label!r} contains NaN or infinite entries.")
        bound = self.randomizer_.bound
        if np.any(np.abs(vector) > bound * (1 + BOUND_RTOL)):
            raise ValueError(
                f"query {label!r} has entries outside [-bound, bound] = [{-bound}, {bound}] "
                f"(largest magnitude {np.abs(vector).max():g}); scale the query or raise bound."
            )
        return np.clip(vector, -bound, bound)

    def _answer(self, indices, query, label):
        """One round: the group's bits about ``query`` and the resulting answer."""
        if indices.shape[0] == 0:
            raise ValueError("a round needs at least one user; X has no rows.")
        bits = self.randomizer_.randomize(query[indices], self._generator())
        self._answers.append(self.randomizer_.estimate_mean(bits))
        # Var(c r b_i) = (c r)^2 - q[v_i]^2 per user: worst for the cell of least |q|.
        squares = query**2
        self._worst.append((self.randomizer_.scale**2 - squares.min()) / indices.shape[0])
        self._average.append((self.randomizer_.scale**2 - squares.mean()) / indices.shape[0])
        self._sizes.append(indices.shape[0])
        self._labels.append(label)
        self._queries.append(query)
        self._publish()

    def _publish(self):
        index = pd.Index(self._labels, name="query", dtype=object)
        self.answers_ = pd.Series(self._answers, index=index, name="answer", dtype=float)
        self.expected_error_ = pd.DataFrame(
            {"worst_case": np.asarray(self._worst, dtype=float),
             "average_case": np.asarray(self._average, dtype=float)}, index=index)
        self.group_sizes_ = np.asarray(self._sizes, dtype=np.int64)
        self.queries_ = (np.vstack(self._queries) if self._queries
                         else np.zeros((0, self.domain_.size)))
        self.n_rounds_ = len(self._answers)

    def __sklearn_tags__(self):
        return with_tags(super().__sklearn_tags__(), categorical=True, string=True,
                         non_deterministic=True, requires_fit=True)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "answers_") and len(self.answers_) > 0

