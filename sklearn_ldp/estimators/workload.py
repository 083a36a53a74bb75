"""WorkloadEstimator: answer any linear counting queries from LDP reports (the server side).

Local model: the reports' mechanism (any family of :mod:`sklearn_ldp.mechanisms`: the
frequency oracles of :mod:`~sklearn_ldp.mechanisms.oracles`, the range mechanisms of
:mod:`~sklearn_ldp.mechanisms.ranges`, the dense strategies of
:mod:`~sklearn_ldp.mechanisms.factorization`, the randomizers of
:mod:`~sklearn_ldp.mechanisms.bassily`) estimates the data vector; strategies are built by
:mod:`sklearn_ldp.selection`. Central model: :mod:`sklearn_ldp.mechanisms.central.matrix`
(the matrix mechanism) with the strategies of :mod:`sklearn_ldp.selection.central`. This
module answers the workload's queries, post-processes and labels them."""

import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from .. import workloads
from .._glue import (
    MAX_ANSWER_QUERIES,
    MAX_ERROR_TABLE_QUERIES,
    check_table_size,
    resolve_domain,
    resolve_workload,
    validate_records,
)
from .._validation import FreshEntropyMixin, as_float_matrix, check_nesting, store_params
from ..deploy.budget import charge_ledger, resolve_ledger
from ..mechanisms.central.matrix import MatrixMechanism
from ..postprocess import POSTPROCESS, POSTPROCESS_PARAMS, em_estimate, postprocess
from ..reports import AggregatedReports, LDPReports, statistic_of
from ..selection.central import build_central_mechanism
from ._base import (
    add_batch,
    forget_fitted,
    reports_or_privatized,
    with_tags,
)
from ._docstrings import estimator_docstring

# What expected_error_ describes (``expected_error_kind_``): the answers returned, or the
# unbiased estimate when the returned answers are post-processed (their error has no
# closed form). Also the column index's name and ``.attrs["expected_error_kind"]``.
ERROR_OF_OUTPUT = "output"
ERROR_OF_UNBIASED = "unbiased_estimate"
_UNBIASED_LABEL = "error of the unbiased estimate (postprocess='none'), not of answers_"


def _check_postprocess(estimator):
    """The ``postprocess`` option, checked (the parameters are validated at fit)."""
    if estimator.postprocess not in POSTPROCESS:
        raise ValueError(f"postprocess must be one of {POSTPROCESS}, got "
                         f"{estimator.postprocess!r}.")
    params = estimator.postprocess_params
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"postprocess_params must be a dict or None, got {params!r}.")
    allowed = POSTPROCESS_PARAMS.get(estimator.postprocess, ())
    unknown = sorted(set(params or {}) - set(allowed))
    if unknown:
        raise ValueError(f"postprocess_params {unknown} do not apply to postprocess="
                         f"{estimator.postprocess!r}, which takes "
                         f"{list(allowed) or 'no options'}.")


# Strategies that exist only in the central model; "hierarchical", "fourier" and "auto" are
# central when delta is given (the LDP versions are pure epsilon-LDP and take no delta).
CENTRAL_ONLY_STRATEGIES = ("identity", "workload", "wavelet", "eigen")


def _is_central(estimator):
    """Whether ``fit`` runs the central matrix mechanism on raw records (trusted curator)."""
    strategy = estimator.strategy
    if strategy is None:
        return False
    if not isinstance(strategy, str):
        return True  # a custom strategy matrix
    if strategy in CENTRAL_ONLY_STRATEGIES:
        return True
    return estimator.delta is not None and strategy != "gaussian"  # "gaussian": (eps, delta)-LDP


def _local_model_only(estimator):
    """partial_fit exists only in the local model (checked by ``available_if``)."""
    if _is_central(estimator):
        raise AttributeError(
            "partial_fit is not available in the central model: every fit is a new release "
            "that spends epsilon again. Collect all records and call fit once."
        )
    return True


# The encoder's options, flat keywords spelled as in LDPEncoder (issue 16, item 7).
ENCODER_OPTIONS = ("branching", "oracle", "max_order")


def _strategy_options(estimator):
    """``strategy_params`` with the flat ``branching`` / ``oracle`` / ``max_order`` merged in.

    A flat keyword left at None is not passed (the strategy's own default applies: the
    encoder's fan-out 4, the central tree's 2). These options are keywords only: as keys of
    ``strategy_params`` they are a ValueError naming the keyword.
    """
    params = estimator.strategy_params
    if params is not None and not isinstance(params, dict):
        raise ValueError(f"strategy_params must be a dict or None, got {params!r}.")
    options = dict(params or {})
    for key in ENCODER_OPTIONS:
        flat = getattr(estimator, key)
        if key in options:
            raise ValueError(f"strategy_params has no key {key!r}: use the keyword "
                             f"WorkloadEstimator({key}=...), spelled as in LDPEncoder.")
        if flat is not None:
            options[key] = flat
    return options


def _as_reports(estimator, X, first_call):
    """LDP reports from ``X``: passed through, or (raw records) privatized by the estimator."""
    # The options only matter to the encoder built on the first call (and are checked then).
    options = None
    if first_call and estimator.strategy is not None:
        options = _strategy_options(estimator)
    return reports_or_privatized(estimator, X, first_call, workload=estimator.workload,
                                 delta=estimator.delta, strategy_params=options)


class WorkloadEstimator(FreshEntropyMixin, BaseEstimator):
    """Unbiased answers to a workload of linear queries from LDP reports.

    ``fit`` aggregates the reports (LDPReports, or an AggregatedReports from a simulation)
    into the mechanism's sufficient statistic and reconstructs the unbiased data vector
    (for factorization mechanisms with the optimal linear reconstruction); ``partial_fit``
    adds reports (chunked fits equal one fit exactly); ``predict`` answers any linear queries
    in the strategy's row space; ``score`` estimates the workload error from held-out
    *reports* only.

    With ``delta`` (or a central-only strategy such as ``"eigen"``) it is instead the trusted
    curator of the central model: ``fit`` measures a strategy of the raw records with Gaussian
    noise and answers by least squares (see ``docs/central_model.md``).

    Parameters
    ----------
    workload : Workload, array, {"histogram", "prefix", "all_range"} or None, default=None
        Queries to answer in ``answers_``. Default: the workload carried by the reports (the
        one the encoder optimized for), else the histogram.
    postprocess : {"none", "clip", "norm_sub", "simplex", "wnnls", "hull", "base_cut", "em"}, \
default="none"
        Only ``"none"`` is unbiased. ``"clip"`` (negatives to zero), ``"norm_sub"`` /
        ``"simplex"`` (the same projection onto non-negative counts with the known total;
        Wang et al.'s Norm-Sub), ``"wnnls"`` (non-negative least squares on the workload),
        ``"hull"`` (Bassily: the answers projected onto the workload's symmetric hull
        ``W B_1``), ``"base_cut"`` (Wang et al.'s Base-Cut: cells below the significance
        threshold ``Phi^-1(1 - alpha / n)`` standard deviations set to 0, the others kept)
        and ``"em"`` (the maximum-likelihood distribution by EM / iterative Bayesian update,
        for the frequency oracles and factorization strategies; local model only) lower the
        variance at the price of bias (measured in ``docs/postprocessing.md``). With any of
        them ``expected_error_`` still describes the unbiased estimate, and says so
        (``expected_error_kind_``).
    normalize : bool, default=False
        Answer in fractions of users instead of counts.
    strategy, epsilon, categories : optional
        Only for fitting on raw records. Local model: the estimator privatizes them itself
        with an :class:`~sklearn_ldp.encoder.LDPEncoder` of these parameters (a simulation
        convenience, identical to a Pipeline of the two). Central model (trusted curator):
        ``strategy`` in ``{"identity", "workload", "hierarchical", "wavelet", "fourier",
        "eigen", "auto"}`` or a strategy matrix, with ``delta``; see below.
    random_state : int, Generator or None, default=None
        Used only when privatizing raw records (local) or drawing the noise (central).
    delta : float in (0, 1), default=None
        Giving ``delta`` selects the **central model** (except for the local ``"gaussian"``
        strategy, whose delta it is): ``fit`` measures the strategy ``A`` of the raw
        records' counts with Gaussian noise calibrated to ``A``'s largest column norm and
        (epsilon, delta)-DP, and answers the workload by least squares
        (:mod:`sklearn_ldp.mechanisms.central.matrix`). ``"identity"``, ``"workload"``,
        ``"wavelet"`` and ``"eigen"`` are central-only and need it.
    strategy_params : dict, default=None
        Options of the strategy that have no flat keyword. Local: extra LDPEncoder
        parameters. Central: for ``"eigen"`` the options of
        :func:`~sklearn_ldp.optimize.eigen_design.eigen_design` (``speedup``,
        ``n_principal``, ``tail``, ``group_size``, ``row_scaling``, ``refine_iter``,
        ``solver``, ``solver_options``); noise: ``calibration`` (``"analytic"``, default, or
        ``"classic"``), ``noise`` (``"gaussian"`` or the floating-point-safe
        ``"discrete"``), ``resolution``; for ``"auto"``: ``candidates``, and ``selection=
        "relative_error"`` with ``selection_epsilon`` (taken out of ``epsilon``) and
        ``sanity_bound`` to choose from the data with the exponential mechanism. The options
        ``branching``, ``oracle`` and ``max_order`` are the flat keywords below, not keys.
    ledger : str, path or None, default=None
        Privacy budget ledger to charge (see :mod:`sklearn_ldp.deploy.budget`): the path of a
        ledger file or the name of a ledger registered with
        :func:`~sklearn_ldp.deploy.budget.register_ledger`. Central model: every ``fit`` is a
        release that spends ``(epsilon, delta)`` (private selection included) of the users
        ``ledger_users``, charged after the strategy is built and before the noisy
        measurement; a refused charge (:class:`~sklearn_ldp.deploy.budget.BudgetExceededError`)
        releases nothing. Local model: fitting reports charges nothing (the encoder that
        produced them did); fitting raw records charges the collection through the internal
        encoder. ``score`` charges nothing (central: it reads the held-out records in the
        clear, a simulation tool).
    ledger_users : str, default="all"
        Group of users covered by the charges: ``"all"`` or a cohort declared in the ledger.
    postprocess_params : dict or None, default=None
        Options of the post-processing: ``{"alpha": 0.05}`` for ``"base_cut"``;
        ``max_iter`` (10000), ``tol`` (0.01 nats), ``solver`` (``"auto"``), ``accelerate``
        (True) and ``verbose`` (0) for ``"em"`` (see
        :func:`~sklearn_ldp.postprocess.em_estimate`). Keys that do not apply raise a
        ValueError at fit.
    branching : int or None, default=None
        Fan-out ``B >= 2`` of the ``"hierarchical"`` tree, spelled as in
        :class:`~sklearn_ldp.encoder.LDPEncoder`. None: the strategy's default (the
        encoder's 4 in the local model, 2 for the central ``"hierarchical"`` strategy).
    oracle : str or None, default=None
        Local model only: the frequency oracle of the ``"hierarchical"`` tree's levels (or
        of ``"spl"`` / ``"smp"`` / ``"rsfd"``), as ``LDPEncoder(oracle=...)``. None: the
        encoder's ``"auto"``.
    max_order : int or None, default=None
        Largest marginal order: of the marginal strategies in the local model (as
        ``LDPEncoder(max_order=...)``), of the central ``"fourier"`` strategy's
        coefficients. None: the strategy's default.

    Attributes
    ----------
    answers_ : pandas.Series
        Answer of every workload query, indexed by the query labels, in counts of users
        (fractions of the users with ``normalize=True``; ``AttributeHistogramEstimator``
        answers in fractions by default, counts with ``output="count"``). Built on first access
        (a workload over a large domain can have billions of queries: past 2**24 queries it
        is refused; ask :meth:`predict` for the queries you need).
    expected_error_ : pandas.DataFrame
        Analytic variance of each answer for the number of users fitted: columns
        ``worst_case`` (all users of the worst type for that query) and ``average_case``
        (users spread uniformly over the domain). Same units as ``answers_``. Like
        ``answers_`` it is built on first access, from the workload's structure, and refused
        past 2**22 queries (use ``expected_total_error_`` or :meth:`predict_error`).
        It is always the error of the **unbiased** estimate: with ``postprocess="none"``
        that is ``answers_``; otherwise ``answers_`` is post-processed (biased, its error has
        no closed form; measured in ``docs/postprocessing.md``) and the table says so: its
        column index is named ``"error of the unbiased estimate (postprocess='none'), not of
        answers_"`` and ``.attrs["expected_error_kind"]`` holds ``expected_error_kind_``.
    expected_error_kind_ : {"output", "unbiased_estimate"}
        What ``expected_error_``, ``expected_total_error_`` and :meth:`predict_error`
        describe: ``"output"`` when they are the error of the answers returned
        (``postprocess="none"``), ``"unbiased_estimate"`` when the answers are
        post-processed and the errors are those of the unbiased estimate they came from.
    postprocess_info_ : dict or None
        For ``postprocess="em"``: ``model`` (``"exact"`` or ``"composite"`` likelihood),
        ``solver``, ``n_iter``, ``converged``, ``log_likelihood``, ``duality_gap`` and the
        likelihood's ``history`` (a ConvergenceWarning is raised when EM stops at
        ``max_iter``); None otherwise.
    expected_total_error_ : dict
        ``worst_case`` and ``average_case`` total variance summed over all workload queries
        (from the Gram operator, at any workload size).
    statistic_ : ndarray
        The mechanism's sufficient statistic of all reports fitted (for factorization
        mechanisms the number of users who sent each output; for frequency oracles the
        support count of every cell followed by the number of reports).
    n_users_ : int
    data_vector_ : ndarray
        Estimated count of users per domain cell (post-processed if requested).
    unbiased_data_vector_ : ndarray
        The unbiased estimate before post-processing (the same array as ``data_vector_``
        with ``postprocess="none"``).
    mechanism_, domain_, workload_ : the objects the reports came with.
    strategy_, strategy_matrix_, lower_bound_ : central model only
        Name of the strategy measured (the winner for ``"auto"``), the matrix ``A`` measured,
        and the singular value bound: no strategy has a total squared error (the sum of
        ``expected_error_["worst_case"]``) below it at this budget.
    candidates_, selection_, design_, privacy_budget_ : central model only
        Analytic total squared error of each ``"auto"`` candidate (or None), the private
        selection (or None), the Eigen-Design result (or None), and the split of epsilon.
        In the central model ``statistic_`` holds the noisy measurements ``A x + noise`` (the
        raw counts are not kept), ``expected_error_`` is data-independent (both columns
        equal) and ``n_users_`` is the *private estimate* of the number of records (the
        exact number is itself private), or NaN if the strategy cannot estimate the total.

    See Also
    --------
    LDPEncoder : Privatizes the records into the reports this estimator decodes.
    MarginalEstimator : Every k-way marginal from the reports of a marginal strategy.
    sklearn_ldp.postprocess.em_estimate : The ``"em"`` post-processing.
    sklearn_ldp.postprocess.base_cut : The ``"base_cut"`` post-processing.

    References
    ----------
    .. [1] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
       for linear queries under local differential privacy", PVLDB 13(11), 2020 (the
       factorization mechanism, optimal reconstruction and WNNLS).
    .. [2] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
       for frequency estimation", USENIX Security 2017 (the frequency oracles).
    .. [3] T. Wang, M. Lopuhaa-Zwakenberg, Z. Li, B. Skoric and N. Li, "Locally
       Differentially Private Frequency Estimation with Consistency", NDSS 2020 (Norm-Sub,
       Base-Cut).
    .. [4] P. Kairouz, K. Bonawitz and D. Ramage, "Discrete distribution estimation under
       local privacy", ICML 2016 (maximum likelihood / EM).
    .. [5] R. Bassily, "Linear queries estimation with local differential privacy", AISTATS
       2019 (the hull projection).
    .. [6] C. Li, G. Miklau, M. Hay, A. McGregor and V. Rastogi, "The matrix mechanism:
       optimizing linear counting queries under differential privacy", VLDB Journal 2015
       (the central model).

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_ldp import LDPEncoder
    >>> df = pd.DataFrame({"smoker": ["no", "yes"] * 500})
    >>> pipe = make_pipeline(
    ...     LDPEncoder(categories={"smoker": ["no", "yes"]},
    ...                strategy="randomized_response", random_state=0),
    ...     WorkloadEstimator())
    >>> answers = pipe.fit(df)[-1].answers_
    >>> list(answers.index)
    ['smoker=no', 'smoker=yes']

    Central model (a trusted curator holds ``df``):

    >>> est = WorkloadEstimator(strategy="eigen", epsilon=0.5, delta=1e-4,
    ...                         categories={"smoker": ["no", "yes"]}, random_state=0).fit(df)
    >>> est.strategy_matrix_.shape, bool(est.expected_error_["worst_case"].sum()
    ...                                  >= est.lower_bound_ * (1 - 1e-9))
    ((2, 2), True)
    """

    # Renamed statistic_ (issue 16, item 7): the old name warns for one release.

    def __init__(self, workload=None, postprocess="none", normalize=False, strategy=None,
                 epsilon=None, categories=None, random_state=None, delta=None, strategy_params=None,
                 ledger=None, ledger_users="all", postprocess_params=None, branching=None,
                 oracle=None, max_order=None):
        store_params(self, locals())

    # ------------------------------------------------------------------ fitting
    @estimator_docstring
    def fit(self, X, y=None):
        """Aggregate the reports in ``X`` and reconstruct the workload answers.

        ``X``: LDPReports, AggregatedReports, or a DataFrame of report columns whose
        ``attrs`` carry the mechanism (``LDPEncoder`` with ``set_output(transform="pandas")``,
        also after ``to_parquet`` / ``read_parquet``; see
        :func:`~sklearn_ldp.deploy.io.reports_from_frame`); raw records with ``strategy`` set. In
        the central model (see ``delta``), measure the raw records in ``X`` instead.

        Parameters
        ----------
        X : LDPReports, AggregatedReports, DataFrame of report columns, or raw records
            The reports (local model), or the records (central model, or local with
            ``strategy`` set: the estimator privatizes them itself).
        <ignored y and self: WorkloadEstimator>
        """
        check_nesting(self, locals())
        forget_fitted(self, ("statistic_", "data_vector_", "encoder_", "strategy_",
                             "strategy_matrix_", "lower_bound_", "candidates_", "selection_",
                             "design_", "privacy_budget_", "_first_batch",
                             "n_invalid_reports_", "unbiased_data_vector_",
                             "postprocess_info_", "expected_error_kind_"))
        resolve_ledger(self.ledger, self.ledger_users)  # a bad ledger fails before any work
        if _is_central(self):
            return self._fit_central(X)
        return self.partial_fit(X)

    def _fit_central(self, X):
        """The trusted curator's release: the matrix mechanism on the records' counts."""
        if not isinstance(self.strategy, str):  # a strategy matrix: refused if it is none
            as_float_matrix(self.strategy, "strategy (a strategy matrix)")
        _check_postprocess(self)
        if self.postprocess == "em":
            raise ValueError("postprocess='em' is the maximum likelihood of LDP reports under "
                             "a frequency oracle's channel; the central model's Gaussian "
                             "measurements have none. Use 'wnnls', 'simplex' or 'base_cut'.")
        if isinstance(X, LDPReports | AggregatedReports):
            raise ValueError("the central model (strategy with delta) measures raw records, not "
                             "LDP reports; to decode reports leave delta=None.")
        validate_records(self, X, reset=True)
        self.domain_ = resolve_domain(self.categories, X)
        self.n_features_in_ = self.domain_.n_columns
        self.workload_ = resolve_workload(self.workload, self.domain_)
        counts = np.bincount(self.domain_.encode(X), minlength=self.domain_.size)
        rng = np.random.default_rng(self.random_state)
        options = _strategy_options(self)
        if options.get("oracle") is not None:
            raise ValueError(f"oracle={options['oracle']!r} chooses the frequency oracle of an "
                             "LDP strategy; the central model (delta given, or a central-only "
                             "strategy) adds Gaussian noise and has none: leave oracle=None.")
        options.pop("oracle", None)
        # The workload goes in as an operator: strategies and errors need only its Gram, so
        # all ranges over 1024 cells (524800 queries) never become a dense matrix.
        mechanism, report = build_central_mechanism(
            self.strategy, self.workload_, self.domain_.shape, self.epsilon,
            self.delta, data_vector=counts, rng=rng, params=options)
        mechanism.check_supports(self.workload_)
        # Charged before the measurement and before the (possibly data-selected) strategy is
        # stored: a refused charge releases nothing.
        charge_ledger(self.ledger, self.epsilon, self.delta, kind="release",
                      users=self.ledger_users,
                      description=f"WorkloadEstimator.fit (central): strategy "
                                  f"{report['strategy']!r}, {self.workload_.n_queries} queries")
        self.mechanism_ = mechanism
        self.statistic_ = self.mechanism_.measure(counts, rng)  # the release; counts are dropped
        self.strategy_, self.strategy_matrix_ = report["strategy"], self.mechanism_.A
        self.candidates_ = (None if report["candidates"] is None else
                            pd.Series(report["candidates"], name="total_squared_error"))
        self.selection_, self.design_ = report["selection"], report["design"]
        self.privacy_budget_ = report["budget"]
        raw = self.mechanism_.estimate(self.statistic_)
        total = np.ones(self.domain_.size)
        self.n_users_ = float(total @ raw) if self.mechanism_.supports(total)[0] else np.nan
        if (self.normalize or self.postprocess in ("norm_sub", "simplex", "hull")) and not (
                self.n_users_ > 0):
            raise ValueError(
                "normalize=True and the simplex/hull post-processing need the number of records,"
                f" and its private estimate is {self.n_users_} (NaN: the strategy cannot "
                "estimate the total; <= 0: too few records for this budget). Use "
                "normalize=False or a strategy that measures the total."
            )
        gram = self.workload_.gram()
        self._postprocess(raw, gram)
        # As in the local model, answers_ and expected_error_ (one row per query) are built
        # on first access (answers through the operator, variances through
        # MatrixMechanism.query_variance_summary); the totals come from the Gram:
        # sum_i Var(w_i x_hat) = sigma^2 tr(G (A^T A)^+), the same at every query.
        self._answers = self._expected_error = None
        scale2 = self._answer_scale() ** 2
        total = scale2 * self.mechanism_.total_squared_error(gram)
        self._expected_total_error = {"worst_case": total, "average_case": total}
        design = report["design"]
        self.lower_bound_ = scale2 * self.mechanism_.lower_bound(
            gram, svdb=None if design is None else design.bound)
        return self

    @available_if(_local_model_only)
    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those seen so far and update the answers.

        Parameters
        ----------
        X : LDPReports, AggregatedReports, DataFrame of report columns, or raw records
            As for :meth:`fit`: the next batch of reports (raw records only when the
            estimator privatizes them itself, with ``strategy`` set).
        y : None
            Ignored.

        Returns
        -------
        WorkloadEstimator
            The estimator, updated: chunked fits give exactly the result of one fit.
        """
        check_nesting(self, locals())
        _check_postprocess(self)
        first_call = not hasattr(self, "statistic_")
        reports = _as_reports(self, X, first_call)

        def on_first(reports):
            self.workload_ = self._workload_for(reports)
            self.mechanism_.check_supports(self.workload_)

        add_batch(self, reports, first_call, on_first)
        self._reconstruct()
        return self

    def _workload_for(self, reports):
        domain = reports.domain
        if self.workload is None and reports.workload is not None:
            return reports.workload
        if domain is None:
            if self.workload is None:
                return workloads.histogram(self.mechanism_.n_inputs)
            result = workloads.as_workload(self.workload)
            result.check_width(self.mechanism_.n_inputs)
            return result
        return resolve_workload(self.workload, domain)

    def _postprocess(self, raw, gram):
        """``data_vector_`` from the unbiased ``raw``, with ``postprocess_info_`` and
        ``expected_error_kind_``."""
        method, params = self.postprocess, dict(self.postprocess_params or {})
        self.unbiased_data_vector_ = raw
        self.postprocess_info_ = None
        self.expected_error_kind_ = ERROR_OF_OUTPUT if method == "none" else ERROR_OF_UNBIASED
        if method == "em":
            try:
                counts, info = em_estimate(self.mechanism_, self.statistic_, **params)
            except TypeError as error:  # a mechanism without a channel (a range tree...)
                raise ValueError(f"postprocess='em': {error}") from None
            self.postprocess_info_ = info
            if not info["converged"]:
                warnings.warn(
                    f"EM stopped after max_iter={info['n_iter']} iterations with its "
                    f"log-likelihood up to {info['duality_gap']:.3g} nats below the maximum "
                    "(tol not reached); data_vector_ is EM's last iterate (see "
                    "postprocess_info_; raise postprocess_params['max_iter']).",
                    ConvergenceWarning, stacklevel=4)
            self.data_vector_ = counts
            return
        std = None
        if method == "base_cut":
            # Standard deviation of each cell's count with the users spread uniformly: for
            # a large domain the variance of an empty cell's estimate (Wang et al.'s
            # threshold), and data-independent.
            _, average = self.mechanism_.query_variance_summary(
                workloads.histogram(self.mechanism_.n_inputs))
            scale = 1.0 if isinstance(self.mechanism_, MatrixMechanism) else self.n_users_
            std = np.sqrt(np.maximum(scale * np.asarray(average, dtype=float), 0.0))
        self.data_vector_ = postprocess(raw, method, gram, self.n_users_, std=std,
                                        params=params)

    def _reconstruct(self):
        raw = self.mechanism_.estimate(self.statistic_)
        gram = self.workload_.gram()
        self._postprocess(raw, gram)
        # Answers and per-query errors have one row per query (all ranges over 2^16 cells
        # are 2^31 of them): they are built on first access; the totals come from the Gram.
        self._answers = self._expected_error = None
        # The total error too is computed on first access: a mechanism without a structured
        # form for this workload's Gram (Hadamard response on chosen ranges over 2^16 cells)
        # still fits and answers; only asking for its error says why it cannot be had.
        self._expected_total_error = None

    @property
    def expected_total_error_(self):
        """Sum over the workload's queries of the answers' variance (``worst_case``,
        ``average_case``), from the Gram; computed on first access."""
        check_is_fitted(self, "data_vector_")
        if self._expected_total_error is None:
            total = self.mechanism_.expected_error(self.workload_.gram())
            self._expected_total_error = {key: self._variance_scale() * value
                                          for key, value in total.items()}
        return self._expected_total_error

    def _answer_scale(self):
        return 1.0 / self.n_users_ if self.normalize else 1.0

    def _variance_scale(self):
        return 1.0 / self.n_users_ if self.normalize else float(self.n_users_)

    @property
    def answers_(self):
        """Answer of every workload query (pandas Series indexed by the query labels)."""
        check_is_fitted(self, "data_vector_")
        if self._answers is None:
            check_table_size(self.workload_, MAX_ANSWER_QUERIES, "answers_",
                              "predict(queries) for the queries you need")
            answers = self._answer_scale() * (self.workload_ @ self.data_vector_)
            self._answers = pd.Series(answers, index=self.workload_.labels, name="answer")
        return self._answers

    @property
    def expected_error_(self):
        """Analytic variance of each answer (columns ``worst_case``, ``average_case``)."""
        check_is_fitted(self, "data_vector_")
        if self._expected_error is None:
            check_table_size(self.workload_, MAX_ERROR_TABLE_QUERIES, "expected_error_",
                              "expected_total_error_ (the sums over all queries) or "
                              "predict_error(queries)")
            self._expected_error = self.predict_error(self.workload_)
        return self._expected_error

    def predict_error(self, queries):
        """Analytic variance of the unbiased answer to each query, before post-processing.

        Parameters
        ----------
        queries : Workload or array of shape (p, n_cells) or (n_cells,)
            Linear queries over the domain's cells.

        Returns
        -------
        pandas.DataFrame
            Columns ``worst_case`` (all users of the worst type for that query) and
            ``average_case`` (users spread uniformly over the domain), one row per query, in
            the units of the answers. Computed from the workload's structure (e.g. per-query
            norms for the frequency oracles), never from a dense ``p x n`` product where the
            mechanism has a structured form. With a ``postprocess`` other than ``"none"``
            these are not the errors of :meth:`predict`'s answers: the column index is then
            named ``"error of the unbiased estimate (postprocess='none'), not of answers_"``,
            and ``.attrs["expected_error_kind"]`` is ``expected_error_kind_`` in every case.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "data_vector_")
        workload, labels = self._as_workload(queries)
        worst, average = self.mechanism_.query_variance_summary(workload)
        if isinstance(self.mechanism_, MatrixMechanism):
            scale = self._answer_scale() ** 2  # central: variances of counts, not per user
        else:
            scale = self._variance_scale()
        index = labels if labels is not None else pd.RangeIndex(workload.n_queries,
                                                                name="query")
        table = pd.DataFrame({"worst_case": scale * np.asarray(worst),
                              "average_case": scale * np.asarray(average)}, index=index)
        # Post-processed answers have no closed-form error: say in every printout that these
        # are the unbiased estimate's (the analytic error is exact for it).
        kind = getattr(self, "expected_error_kind_",
                       ERROR_OF_OUTPUT if self.postprocess == "none" else ERROR_OF_UNBIASED)
        if kind == ERROR_OF_UNBIASED:
            table.columns.name = _UNBIASED_LABEL
        table.attrs["expected_error_kind"] = kind
        return table

    # ------------------------------------------------------------------ answering
    def _as_workload(self, queries):
        """``(workload, labels or None)`` for a Workload or a query matrix."""
        n = self.mechanism_.n_inputs
        if isinstance(queries, workloads.Workload):
            queries.check_width(n)
            return queries, queries.labels
        workload = workloads.as_workload(queries)
        workload.check_width(n)
        return workload, None

    def _point_query_cells(self, queries):
        """Cells of the records in ``queries`` if it holds records, else None."""
        try:
            shape = np.shape(queries)
        except (TypeError, ValueError):  # ragged: refused as a query matrix below
            shape = ()
        if hasattr(self, "n_features_in_") and shape and shape[-1] != self.mechanism_.n_inputs:
            validate_records(self, queries, reset=False)  # records: check their width
        if isinstance(queries, pd.DataFrame) or (
            self.domain_ is not None
            and len(shape) == 2
            and np.shape(queries)[1] == self.domain_.n_columns
            and self.domain_.n_columns != self.mechanism_.n_inputs
        ):
            if self.domain_ is None:
                raise ValueError("point queries need the domain; these reports carry none.")
            return self.domain_.encode(queries)
        return None

    def predict(self, queries):
        """Answer linear queries over the same domain.

        Parameters
        ----------
        queries : Workload, array of shape (p, n_cells) or (n_cells,), or records
            A workload or query matrix returns a labelled Series (one answer per query). A
            DataFrame (or 2-D array) of records over the domain columns asks, for each
            record, how many users share its cell, and returns an array of one answer per
            record.

        Returns
        -------
        pandas.Series or ndarray
            The answers, from ``data_vector_`` (post-processed when ``postprocess`` is set),
            in counts or, with ``normalize=True``, fractions of users.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "statistic_")
        scale = self._answer_scale()
        if not isinstance(queries, workloads.Workload):
            cells = self._point_query_cells(queries)
            if cells is not None:  # one indicator query per record: its cell's count
                return scale * self.data_vector_[cells]
        workload, labels = self._as_workload(queries)
        if self.postprocess == "none":
            self.mechanism_.check_supports(workload)
        answers = scale * (workload @ self.data_vector_)
        if labels is not None:
            return pd.Series(answers, index=labels, name="answer")
        return answers

    def score(self, X, y=None):
        """Unbiased estimate of the negative mean squared error per workload query.

        Computed from held-out *privatized* reports only: with ``a`` the fitted answers and
        ``b`` the unbiased answers of the held-out reports (both as fractions of users),
        ``E||a - b||^2 = ||a - W p||^2 + tr Cov(b)``, and ``tr Cov(b)`` is estimated without
        bias from the spread of the held-out users' one-report estimates. The score is
        ``-(||a - b||^2 - tr Cov(b)) / p``; it may be slightly positive by chance.

        To *choose a strategy*, prefer :func:`~sklearn_ldp.model_selection.expected_error_scorer`
        (``GridSearchCV(..., scoring=expected_error_scorer(epsilon=...))``): it ranks by the
        analytic expected error, spends no privacy budget, and picked the least-error strategy
        in 96% of 48 settings against 31% for this held-out score, whose own noise grows with
        the candidate's error (``docs/model_selection.md``). This score is the one that sees
        the bias of post-processing.

        Parameters
        ----------
        X : LDPReports, AggregatedReports or DataFrame of report columns
            Held-out reports of the fitted mechanism (central model: held-out records).
        y : None
            Ignored.

        Returns
        -------
        float
            The estimate of minus the mean squared error per workload query (in fractions).
        """
        check_is_fitted(self, "statistic_")
        if _is_central(self):
            return self._score_central(X)
        reports = _as_reports(self, X, first_call=False)
        if reports.mechanism != self.mechanism_:
            raise ValueError("held-out reports must come from the mechanism that was fitted.")
        n_test = len(reports)
        if n_test < 2:
            raise ValueError("score needs at least 2 held-out reports.")
        counts = statistic_of(reports)
        gram = self.workload_.gram()
        # Squared norms of answers through the Gram, ||W v||^2 = v^T G v: no p-sized vector.
        fitted = self.data_vector_ / self.n_users_
        held_out = self.mechanism_.estimate(counts) / n_test
        sum_of_squares = self.mechanism_.sum_of_squared_answers(counts, gram)
        sample_variance = (sum_of_squares - n_test * held_out @ (gram @ held_out)) / (n_test - 1)
        difference = fitted - held_out
        squared_distance = float(difference @ (gram @ difference))
        return -(squared_distance - sample_variance / n_test) / self.workload_.n_queries

    def _score_central(self, X):
        """Central model: ``-||a - b||^2 / p`` against the exact held-out answers ``b``.

        The held-out records are read in the clear, so this score is for simulations; to
        choose a strategy from data privately use ``strategy_params={"selection": ...}``.
        """
        validate_records(self, X, reset=False)
        if not self.n_users_ > 0:
            raise ValueError("score compares fractions of records and needs the private "
                             f"estimate of their number, which is {self.n_users_}.")
        cells = self.domain_.encode(X)
        if cells.size < 1:
            raise ValueError("score needs at least 1 held-out record.")
        # ||W v||^2 = v^T G v for v = fitted - held-out data vector: no p-sized vector.
        held_out = np.bincount(cells, minlength=self.domain_.size) / cells.size
        difference = self.data_vector_ / self.n_users_ - held_out
        gram = self.workload_.gram()
        return -float(difference @ gram.matvec(difference)) / self.workload_.n_queries

    def __sklearn_tags__(self):
        return with_tags(super().__sklearn_tags__(), categorical=True, string=True,
                         requires_fit=True)
