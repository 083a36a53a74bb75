"""CountMechanism: release private counts of small groups (dissertation chapter 6), sklearn API.

The math lives in :mod:`sklearn_ldp.mechanisms.central.count` (closed forms, properties, sampling,
decoding), :mod:`sklearn_ldp.optimize.count_lp` (the linear programs) and
:mod:`sklearn_ldp.selection.count` (the design: closed form or LP); this module is the
scikit-learn glue: parameters, validation of count tables and grouped DataFrames, and pandas
labels.
"""


import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._validation import FreshEntropyMixin, check_nesting, store_params
from ..deploy.budget import charge_ledger, resolve_ledger
from ..mechanisms.central.count import (
    MECHANISMS,
    alpha_of,
    check_count_matrix,
    check_counts,
    check_group_size,
    check_prior,
    cost_matrix,
    decode,
    l0_error,
    sample_outputs,
)
from ..selection.count import design_count_mechanism
from ._base import forget_fitted, with_tags

DECODERS = ("mean", "map")


class CountMechanism(FreshEntropyMixin, TransformerMixin, BaseEstimator):
    """Epsilon-DP noisy counts for groups of ``group_size`` users, optimal for a loss.

    Each group of ``n = group_size`` users has a true count ``j`` in ``0..n`` (say, how many
    earn a high income); the mechanism releases a noisy count ``i`` in the same range, drawn
    from column ``j`` of the ``(n+1) x (n+1)`` matrix ``matrix_``. One user changes the count
    by at most one, so the release is epsilon-differentially private (central model, or
    equivalently (epsilon, 1)-limited-precision LDP of the group).

    ``fit`` is data-independent: it designs the matrix for the loss, prior and required
    properties (a closed form where the thesis proves one optimal, else a linear program).
    ``transform`` privatizes counts (vectorized sampling), ``predict`` decodes noisy counts
    (posterior mean or MAP under the prior) and ``score`` gives the negative expected loss on
    held-out true counts.

    Parameters
    ----------
    group_size : int, default=8
        ``n``, the number of users in a group (>= 1).
    epsilon : float, default=1.0
        Privacy budget; ``alpha = e^-epsilon``.
    loss : {"L0", "L0_d", "L1", "L2"}, default="L0"
        Cost of releasing ``i`` for true ``j``: ``1[i != j]``, ``1[|i - j| > d]``, ``|i - j|``
        or ``(i - j)^2``.
    d : int, default=1
        Tolerance of ``L0_d``.
    aggregation : {"sum", "max"}, default="sum"
        Minimize the prior-weighted expected cost, or the worst weighted true count.
    prior : array-like of shape (n+1,) or None, default=None
        Weights of the true counts, used by the design and by ``predict``; ``None`` is uniform.
    properties : sequence of str, default=()
        Required structural properties, any subset of ``"RH"`` (row honesty), ``"RM"`` (row
        monotone), ``"CH"`` (column honesty), ``"CM"`` (column monotone), ``"F"`` (fair:
        equal diagonal), ``"WH"`` (weak honesty: diagonal >= 1/(n+1)), ``"S"`` (symmetric).
    strategy : {"auto", "LP", "GM", "EM", "UM", "RR"}, default="auto"
        The matrix to release with. ``"auto"`` follows the thesis (Fig. 6.4): geometric (GM)
        or explicit fair (EM) mechanism where optimal, else the LP; or force one (a closed
        form that lacks a required property raises a ValueError). Spelled ``strategy`` as in
        every other estimator (``mechanism`` is the mechanism object elsewhere).
    solver : {"auto", "highs", "cvxpy"}, default="auto"
        LP solver (see :func:`~sklearn_ldp.selection.count.solve_count_lp`).
    symmetric : {"auto", True, False}, default="auto"
        Restrict the LP to symmetric mechanisms when that is free (symmetric prior).
    decode : {"mean", "map"}, default="mean"
        ``predict``'s estimate: posterior mean (least squared error) or the most probable
        count (least probability of a wrong count).
    group_column, value_column : str or None, default=None
        For DataFrames of records: the column naming each row's group and the binary (0/1 or
        bool) column to count. ``value_column=None`` takes the one other column. Groups may
        hold at most ``group_size`` rows.
    random_state : int, numpy.random.Generator or None, default=None
        Seeds the sampling of ``transform``. A seeded generator reproduces a simulation,
        in every copy of the estimator too; a real deployment must use ``None``: fresh
        operating-system entropy, drawn again in every copy (pickle, fork, Dask worker), so
        that the noise cannot be replayed.
    ledger : str, path or None, default=None
        Privacy budget ledger to charge (see :mod:`sklearn_ldp.deploy.budget`): the path of a
        ledger file or the name of a ledger registered with
        :func:`~sklearn_ldp.deploy.budget.register_ledger`. Every ``transform`` is a release: each
        user is in one group, whose count spends ``epsilon``, so a 1-D array of counts (or
        grouped records) charges ``epsilon`` and a 2-D table charges ``epsilon`` times its
        number of columns (a row is one group, every column another count about it). The
        charge precedes the sampling: a refused charge
        (:class:`~sklearn_ldp.deploy.budget.BudgetExceededError`) releases nothing.
    ledger_users : str, default="all"
        Group of users covered by the charges: ``"all"`` or a cohort declared in the ledger.

    Attributes
    ----------
    matrix_ : ndarray of shape (n+1, n+1)
        ``matrix_[i, j] = Pr[release i | true count j]``.
    strategy_ : str
        The matrix built: ``"GM"``, ``"EM"``, ``"UM"``, ``"RR"`` or ``"LP"`` (the winner for
        ``strategy="auto"``).
    reason_ : str
        Why this strategy (the thesis's rule under ``strategy="auto"``).
    expected_error_ : pandas.DataFrame
        Expected squared error of :meth:`predict`'s estimate of a group's count (counts
        squared), ``E[(predict(release) - j)^2]`` for true count ``j``, exact (no sampling):
        ``worst_case`` (the worst true count) and ``average_case`` (averaged over the true
        counts with the weights ``prior_``). One row, ``"estimated_count"``: every group's
        answer has the same error distribution. The type and columns of every estimator's
        ``expected_error_``.
    objective_ : float
        The loss of ``matrix_`` under the prior and aggregation (what the design minimized).
    l0_error_ : float
        The thesis's rescaled L0 error (1 for the uniform mechanism).
    properties_ : dict
        ``valid``, ``DP`` and the seven properties of ``matrix_`` (from
        :func:`~sklearn_ldp.mechanisms.central.count.check_properties`).
    prior_ : ndarray of shape (n+1,)
        The normalized prior.
    alpha_ : float
        ``e^-epsilon``.
    lp_ : CountLPResult or None
        Solver details when an LP was solved.
    n_features_in_ : int
        Width of the count table passed to ``fit`` (only when one was passed).

    See Also
    --------
    sklearn_ldp.LDPEncoder : Local differential privacy for categorical records.
    sklearn_ldp.WorkloadEstimator : Linear queries over a domain (local or central model).
    sklearn_ldp.PrivacyLedger : Records the budget every ``transform`` spends.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Constrained private mechanisms for
       count data", ICDE 2018 (extended in IEEE TKDE 2019); chapter 6 of T. Kulkarni's PhD
       dissertation, University of Warwick (the properties, the LPs, GM and EM).
    .. [2] A. Ghosh, T. Roughgarden and M. Sundararajan, "Universally utility-maximizing
       privacy mechanisms", STOC 2009 (the range-restricted geometric mechanism).

    Examples
    --------
    >>> import numpy as np
    >>> cm = CountMechanism(group_size=8, epsilon=0.1, properties=("F",), random_state=0)
    >>> cm = cm.fit(None)
    >>> cm.strategy_, cm.matrix_.shape
    ('EM', (9, 9))
    >>> noisy = cm.transform(np.array([0, 3, 8]))
    >>> bool(np.all((0 <= noisy) & (noisy <= 8)))
    True
    >>> cm.predict(noisy).shape
    (3,)
    """

    def __init__(self, group_size=8, epsilon=1.0, loss="L0", d=1, aggregation="sum", prior=None,
                 properties=(), strategy="auto", solver="auto", symmetric="auto", decode="mean",
                 group_column=None, value_column=None, random_state=None, ledger=None,
                 ledger_users="all"):
        store_params(self, locals())

    # ------------------------------------------------------------------ fitting
    def fit(self, X=None, y=None):
        """Design the mechanism (data-independent); ``X``, if given, is only validated.

        Parameters
        ----------
        X : None, array-like of true counts, or DataFrame of records
            Not used by the design (it must not depend on private data). A count table fixes
            ``n_features_in_`` for later calls; a DataFrame with ``group_column`` is checked.
        y : None
            Ignored.

        Returns
        -------
        self : CountMechanism
            The fitted estimator (``matrix_``, ``strategy_``, ``expected_error_`` ... set).
        """
        check_nesting(self, locals())
        n = check_group_size(self.group_size)
        resolve_ledger(self.ledger, self.ledger_users)  # a bad ledger fails here, not later
        if self.decode not in DECODERS:
            raise ValueError(
                f"decode must be 'mean' (posterior mean) or 'map', got {self.decode!r}.")
        design = design_count_mechanism(
            n, self.epsilon, loss=self.loss, d=self.d, aggregation=self.aggregation,
            prior=self.prior, properties=self.properties, mechanism=self._checked_strategy(),
            solver=self.solver, symmetric=self.symmetric,
        )
        forget_fitted(self, ("n_features_in_", "feature_names_in_"))
        if X is not None:
            if self._is_grouped(X):
                self._group_counts(X)
            else:
                self._validate_counts(X, reset=True)
        self.matrix_ = design.matrix
        self.strategy_ = design.mechanism
        self.reason_ = design.reason
        self.objective_ = design.objective
        self.l0_error_ = l0_error(check_count_matrix(design.matrix, self.epsilon))
        self.properties_ = design.properties
        self.prior_ = check_prior(self.prior, n)
        self.alpha_ = alpha_of(self.epsilon)
        self.lp_ = design.lp
        self.expected_error_ = self._error_table()
        self._set_generator(np.random.default_rng(self._random_state()))
        return self

    def _checked_strategy(self):
        """The strategy to design, refused with a message naming the parameter given."""
        strategy = self.strategy
        if isinstance(strategy, str) and strategy in MECHANISMS:
            return strategy
        raise ValueError(
            f"unknown strategy {strategy!r}; allowed: 'auto' (the thesis's choice), 'LP' (linear "
            "program), 'GM' (geometric), 'EM' (explicit fair), 'UM' (uniform), 'RR' "
            "(randomized response, group_size=1 only).")

    def _error_table(self):
        """``expected_error_``: the exact squared error of ``predict`` for each true count,
        reduced to its worst case and its prior-weighted mean."""
        matrix = self._sampled_matrix()
        n = matrix.shape[0] - 1
        # predict of every possible release, then E[(estimate - j)^2 | j] by one product.
        estimates = np.asarray(decode(matrix, np.arange(n + 1), self.prior_, self.decode),
                               dtype=float)
        squared = (estimates[:, np.newaxis] - np.arange(n + 1)[np.newaxis, :]) ** 2
        per_count = np.sum(matrix * squared, axis=0)
        return pd.DataFrame({"worst_case": [float(per_count.max())],
                             "average_case": [float(per_count @ self.prior_)]},
                            index=pd.Index(["estimated_count"], name="answer"))

    def _sampled_matrix(self):
        """The law ``transform`` samples: ``W / 2^52`` of the exact integer table of
        ``matrix_`` (exact in float64, about 1e-11 off the designed float matrix).

        Decoding and scoring use it, not ``matrix_``, so that ``predict`` is the posterior
        of the law actually released and ``score`` its exact expected loss. It is recomputed
        from ``matrix_`` on each call (a public attribute, which a pickle or a user may
        replace): a matrix weaker than ``epsilon`` is refused here as in ``transform``.
        """
        return check_count_matrix(self.matrix_, self.epsilon, name="CountMechanism's matrix_")

    # ------------------------------------------------------------------ validation
    def _is_grouped(self, X):
        return isinstance(X, pd.DataFrame) and self.group_column is not None

    def _validate_counts(self, X, reset, name="counts"):
        """A count table as an int array (1-D or 2-D), checked to lie in 0..group_size."""
        n = check_group_size(self.group_size)
        # A 1-D list/array of counts is one group per entry; tables go through scikit-learn's
        # checks (sparse, complex, object data, NaN, width consistency).
        one_d = isinstance(X, pd.Series) or (
            isinstance(X, list | tuple | np.ndarray) and np.ndim(X) == 1)
        if one_d:
            if not reset and hasattr(self, "n_features_in_"):
                raise ValueError(
                    f"Expected a 2-D table of {name} with {self.n_features_in_} columns, as in "
                    "fit; got a 1-D array. Reshape your data, or fit without a table."
                )
            return check_counts(np.asarray(X), n, name=name)
        if reset or hasattr(self, "n_features_in_"):
            array = validate_data(self, X, reset=reset, dtype="numeric", ensure_all_finite=True)
        else:  # fitted without a table: any width is fine
            array = check_array(X, dtype="numeric", ensure_all_finite=True, ensure_2d=False,
                                allow_nd=False)
        return check_counts(array, n, name=name)

    def _group_counts(self, X):
        """True count of ``value_column`` per ``group_column`` value, as a labelled Series."""
        n = check_group_size(self.group_size)
        if self.group_column not in X.columns:
            raise ValueError(
                f"group_column {self.group_column!r} is not a column of X; columns: "
                f"{list(X.columns)}."
            )
        value_column = self.value_column
        if value_column is None:
            others = [column for column in X.columns if column != self.group_column]
            if len(others) != 1:
                raise ValueError(
                    "value_column=None needs exactly one column besides group_column "
                    f"{self.group_column!r}; got {others}. Set value_column."
                )
            value_column = others[0]
        elif value_column not in X.columns:
            raise ValueError(
                f"value_column {value_column!r} is not a column of X; columns: "
                f"{list(X.columns)}."
            )
        groups, values = X[self.group_column], X[value_column]
        if groups.isna().any():
            raise ValueError(
                f"group_column {self.group_column!r} has missing values; every row needs a "
                "group (nothing is dropped silently)."
            )
        if values.isna().any():
            raise ValueError(f"value_column {value_column!r} has missing values.")
        if values.dtype == bool:
            bits = values.astype(np.int64)
        else:
            bad = ~values.isin([0, 1])
            if bad.any():
                raise ValueError(
                    f"value_column {value_column!r} must be binary (0/1 or bool); found "
                    f"{sorted(map(repr, values[bad].unique()[:5]))}."
                )
            bits = values.astype(np.int64)
        grouped = bits.groupby(groups, sort=False)
        sizes = grouped.size()
        if sizes.max() > n:
            group = sizes.idxmax()
            raise ValueError(
                f"group {group!r} has {sizes.max()} rows, more than group_size={n}; a count "
                f"must lie in 0..{n}. Split large groups or raise group_size."
            )
        counts = grouped.sum().astype(np.int64)
        counts.index.name = self.group_column
        return counts.rename(f"{value_column}_count")

    # ------------------------------------------------------------------ client side
    def transform(self, X):
        """Privatize true counts: one noisy count per entry, drawn from ``matrix_``.

        Parameters
        ----------
        X : array-like of true counts (any of 1-D or 2-D), Series, DataFrame of counts, or
            DataFrame of records with ``group_column``.

        Returns
        -------
        ndarray of int, or pandas Series / DataFrame with the labels of ``X``
            For grouped records: a Series of noisy counts indexed by group, named
            ``"noisy_count"``.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "matrix_")
        # matrix_ is a public attribute (and a pickle can carry any): it is checked against
        # epsilon again, before the charge, so that a refused matrix releases and charges
        # nothing; the matrix returned is the realised law of its exact integer table.
        matrix = self._sampled_matrix()
        if self._is_grouped(X):
            counts = self._group_counts(X)
            self._charge_release(counts.to_numpy())
            noisy = sample_outputs(matrix, counts.to_numpy(), self._generator(),
                                   epsilon=self.epsilon)
            return pd.Series(noisy, index=counts.index, name="noisy_count")
        counts = self._validate_counts(X, reset=False)
        self._charge_release(counts)
        noisy = sample_outputs(matrix, counts, self._generator(), epsilon=self.epsilon)
        return _like(X, noisy, "noisy_count")

    def _charge_release(self, counts):
        """Charge the ledger (if any): epsilon per count released about each group."""
        counts_per_group = 1 if counts.ndim == 1 else counts.shape[1]
        charge_ledger(
            self.ledger, counts_per_group * float(self.epsilon), kind="release",
            users=self.ledger_users,
            description=f"CountMechanism.transform: {counts.size} noisy counts "
                        f"({counts_per_group} per group), groups of {self.group_size}")

    # ------------------------------------------------------------------ server side
    def predict(self, X):
        """Estimate true counts from noisy ones (posterior mean or MAP under ``prior_``).

        Parameters
        ----------
        X : array-like, Series or DataFrame of noisy counts in ``0..group_size``
            E.g. the output of :meth:`transform`.

        Returns
        -------
        ndarray or pandas.Series or pandas.DataFrame
            The estimated true counts (float for ``decode="mean"``, int for ``"map"``), with
            the labels of ``X`` when it is a pandas object.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "matrix_")
        if self._is_grouped(X) and self.group_column in X.columns:
            raise ValueError(
                "predict takes noisy counts (the output of transform), not records with a "
                f"{self.group_column!r} column."
            )
        noisy = self._validate_counts(X, reset=False, name="noisy counts")
        # The posterior of the law sampled (the integer table / 2^52), not of the designed
        # float matrix.
        estimate = decode(self._sampled_matrix(), noisy, self.prior_, self.decode)
        return _like(X, estimate, "estimated_count")

    def score(self, X, y=None):
        """Negative expected loss of the released counts on held-out *true* counts.

        For each held-out count ``j`` the expected cost of its release,
        ``sum_i P[i, j] C[i, j]`` with ``P`` the law sampled (the integer table of
        ``matrix_`` over ``2^52``), is computed exactly (no sampling noise), then
        averaged over the entries (``aggregation="sum"``) or maximized (``"max"``). Greater is
        better, as scikit-learn expects. It reads true counts: use it where the curator holds
        them (the central model of this mechanism).

        Parameters
        ----------
        X : array-like of int, or DataFrame
            Held-out true counts in ``0..group_size``, or a DataFrame of records with
            ``group_column``.
        y : None
            Ignored.

        Returns
        -------
        float
            Minus the mean (``aggregation="sum"``) or the largest (``"max"``) expected loss.
        """
        check_is_fitted(self, "matrix_")
        if self._is_grouped(X):
            counts = self._group_counts(X).to_numpy()
        else:
            counts = self._validate_counts(X, reset=False)
        if counts.size == 0:
            raise ValueError("score needs at least one held-out count.")
        matrix = self._sampled_matrix()
        n = matrix.shape[0] - 1
        per_count = np.sum(cost_matrix(n, self.loss, self.d) * matrix, axis=0)
        losses = per_count[counts]
        return -float(losses.max() if self.aggregation == "max" else losses.mean())

    def __sklearn_tags__(self):
        # Counts are non-negative integers: scikit-learn's checks then feed rounded data.
        return with_tags(super().__sklearn_tags__(), categorical=True, positive_only=True,
                         requires_fit=True)


def _like(X, values, name):
    """``values`` with the labels of ``X`` when ``X`` is a pandas object."""
    if isinstance(X, pd.DataFrame):
        return pd.DataFrame(values, index=X.index, columns=X.columns)
    if isinstance(X, pd.Series):
        return pd.Series(values, index=X.index, name=name)
    return values
