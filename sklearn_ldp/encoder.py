"""LDPEncoder: the client side of local differential privacy as a scikit-learn transformer.

Its parts for records of several columns and for heavy-hitter columns are the mixins of
:mod:`sklearn_ldp._encoder_columns` and :mod:`sklearn_ldp._encoder_heavy_hitters`; the
strategies it builds come from :mod:`sklearn_ldp.selection`.
"""

import json
import numbers
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._set_output import _get_output_config
from sklearn.utils.validation import _check_feature_names_in, _num_features, check_is_fitted

from ._encoder_columns import (
    ColumnsEncoderMixin,
    as_frame,
)
from ._encoder_heavy_hitters import HeavyHitterEncoderMixin
from ._encoder_itemsets import ItemsetEncoderMixin
from ._encoder_multi_range import MultiRangeEncoderMixin
from ._encoder_rappor import RapporEncoderMixin
from ._encoder_sets import SET_MECHANISMS, SetEncoderMixin
from ._glue import (
    MAX_ERROR_TABLE_QUERIES,
    READ_FROM_DATA,
    check_declared_columns,
    check_table_size,
    marginal_error_table,
    resolve_domain,
    resolve_workload,
    validate_records,
)
from ._validation import (
    FreshEntropyMixin,
    check_dense_size,
    check_epsilon,
    check_nesting,
    check_positive_int,
    check_real,
    describe,
    short_repr,
    store_params,
)
from .deploy.budget import BudgetExceededError, charge_ledger, resolve_ledger
from .deploy.io import report_columns, reports_frame, reports_from_frame
from .deploy.limits import get_limits
from .domain import Domain, _is_missing, check_cells, check_column_size
from .mechanisms._base.mechanism import check_type_counts
from .mechanisms.heavy_hitters.column import HeavyHitterMechanism
from .mechanisms.heavy_hitters.rappor import RapporMechanism
from .mechanisms.marginals.base import MarginalMechanism
from .mechanisms.multi_attribute.columns import ColumnsMechanism
from .mechanisms.ranges.tree import LEVEL_ORACLES
from .reports import AggregatedReports, LDPReports
from .selection import (
    DEFAULT_MAX_REPORT_BYTES,
    FACTORIZATION_BASELINES,
    MARGINAL_STRATEGIES,
    SELECTION_COLUMNS,
    SELECTION_DTYPES,
    build_mechanism,
    check_max_report_bytes,
    check_optimized_size,
    check_strategy_name,
    marginal_order,
)

# Strategies stored as dense matrices (the others are structured).
DENSE_STRATEGIES = FACTORIZATION_BASELINES + ("optimized",)
# What transform does with a value outside the categories, and with a missing value.
HANDLE_UNKNOWN = ("error", "other")
HANDLE_MISSING = ("error", "category")
_NO_IGNORE = (
    "handle_unknown='ignore' is not offered: OneHotEncoder encodes an unknown value as a row of "
    "zeros, but every LDP user must send a report of some cell, and dropping the user's report "
    "would change the number of users N and reveal that the value was unknown. Use "
    "handle_unknown='other' with unknown_category=<a category declared for the column> (every "
    "unknown value then counts in that cell), or 'error'."
)


# What to do with a domain past max_cells (appended to the refusal).
DOMAIN_ADVICE = (
    "Use fewer or coarser categories (sklearn_ldp.binning), collect the columns in separate "
    "encoders each with a share of the budget, or, for a column too large to list, declare "
    "it for heavy hitters: categories={'url': 'strings'} or {'user_id': 32}.")


class LDPEncoder(ColumnsEncoderMixin, HeavyHitterEncoderMixin, MultiRangeEncoderMixin,
                 SetEncoderMixin, RapporEncoderMixin, FreshEntropyMixin, TransformerMixin,
                 BaseEstimator, ItemsetEncoderMixin):
    """Privatize categorical records with an epsilon-LDP strategy (the client side).

    ``fit`` is data-independent: it reads the public domain and the workload and builds (or
    optimizes) the strategy. ``transform`` privatizes every row and returns
    :class:`~sklearn_ldp.reports.LDPReports`, which carry the mechanism so that any estimator
    can decode them.

    Parameters
    ----------
    categories : dict, "auto" or "observed", default=None
        The public domain: column -> list of categories. ``None``/``"auto"`` reads the
        categories from the data passed to ``fit`` and warns that this leaks information
        about the private data; production code passes them explicitly. A float column is
        a number and is refused there (give its ``bounds``, or its categories);
        ``"observed"`` reads every column's observed values, whole-number floats included,
        as categories (the values seen then become public: the fitted ``domain_``, which
        report files and frames carry, lists them). A domain too large to list (heavy
        hitters, ``docs/heavy_hitters.md``) is declared for one column as
        ``{"url": "strings"}`` (UTF-8 strings of at most ``max_string_bytes`` bytes) or
        ``{"user_id": 32}`` (integers in ``[0, 2^32)``, a bit length from 1 to 64).
    strategy : str or RapporMechanism, default="auto"
        Frequency oracles (structured, any domain size): ``"randomized_response"``,
        ``"rappor"`` (symmetric unary encoding; on a column declared as ``"strings"``,
        RAPPOR with Bloom filters and cohorts, as is an explicit
        :class:`~sklearn_ldp.mechanisms.heavy_hitters.rappor.RapporMechanism`, see
        ``docs/rappor.md``), ``"oue"``, ``"olh"``, ``"blh"``,
        ``"hadamard"``, ``"hrr"``, ``"subset_selection"``; histogram encoding ``"she"``,
        ``"the"`` (not ``"auto"`` candidates). Range mechanisms over the ordered
        (flat) domain, structured: ``"hierarchical"`` (a tree of fan-out ``branching``, one
        sampled level per user through ``oracle``) and ``"haar"`` (HaarHRR). Factorization
        baselines: ``"hierarchical_matrix"`` (the tree as a dense matrix with Hadamard
        response per level), ``"fourier"``. Bassily's randomizers of the workload's columns:
        ``"gaussian"`` ((epsilon, delta)-LDP, needs ``delta``) and ``"gaussian_pure"``.
        ``"optimized"`` (optimized for ``workload``) or ``"auto"`` (the epsilon-LDP
        candidate with the least analytic worst-case error on ``workload``; when the workload
        is the one-way marginals of several columns, ``workloads.marginals(categories, k=1)``,
        with or without ``bounds``, the candidates include ``"spl"``, ``"smp"`` and
        ``"rsfd"`` with each inner oracle, and the comparison is in ``selection_``). Marginal
        strategies (thesis chapter 4, decoded by
        :class:`~sklearn_ldp.estimators.MarginalEstimator`; every marginal of order up to
        ``max_order``, no workload): ``"inp_ht"`` (recommended), ``"inp_rr"``,
        ``"inp_ps"``, ``"marg_rr"``, ``"marg_ps"``, ``"marg_ht"`` and the ``"inp_em"``
        baseline (see ``docs/marginals.md``). Several categorical columns, one histogram
        each (decoded by :class:`~sklearn_ldp.AttributeHistogramEstimator`; see
        ``docs/numeric.md``): ``"spl"`` (the budget split between the columns), ``"smp"``
        (each user reports one sampled column with the whole budget) and ``"rsfd"`` (random
        sampling plus fake data), with the frequency oracle ``oracle``. Numeric columns
        (``bounds``): ``"hybrid"``, ``"piecewise"``, ``"duchi"`` (means) and
        ``"square_wave"`` (the distribution); for a record of numeric and categorical
        columns also a dict column -> strategy (see ``bounds``). Heavy hitters of one
        column of strings or integers (``categories={"url": "strings"}``; decoded by
        :class:`~sklearn_ldp.HeavyHitterEstimator`): ``"pem"`` (prefix extension with local
        hashing, Wang et al.; also ``"auto"``), ``"treehist"`` (one bit per user, Bassily et
        al.), ``"cms"`` and ``"hcms"`` (Apple's count-mean sketches: frequencies of given
        candidates). Range queries over several numeric columns at once (``bounds`` of two or
        more columns; decoded by :class:`~sklearn_ldp.MultiRangeEstimator`, see
        ``docs/multi_range.md``): ``"hdg"`` (hybrid 1-D and 2-D grids) and ``"tdg"`` (2-D
        grids), Yang et al.'s grids sized for ``n_users``.
    epsilon : float, default=1.0
        Privacy budget of every user's report (epsilon-LDP).
    workload : Workload, array, {"histogram", "prefix", "all_range"} or None, default=None
        Queries the strategy should serve (default: the histogram).
    delta : float, default=None
        Only for ``strategy="gaussian"``: the delta of (epsilon, delta)-LDP, in (0, 1).
    branching : int, default=4
        Fan-out ``B >= 2`` of the ``"hierarchical"`` and ``"hierarchical_matrix"`` trees
        (:func:`~sklearn_ldp.mechanisms.ranges.bounds.recommend_branching` suggests one).
    oracle : {"auto", "oue", "olh", "hrr", "grr", "oue_z", "oue_r"}, default="auto"
        ``"spl"``, ``"smp"``, ``"rsfd"``: the frequency oracle inside, ``"grr"`` (generalized
        randomized response, ``"auto"``) or ``"oue"`` (``"oue_z"`` or ``"oue_r"`` for
        ``"rsfd"``: the fake reports of unary encoding). Otherwise the frequency oracle of
        every level of the ``"hierarchical"`` tree (``"oue"`` is the
        thesis's choice; ``"hrr"`` has the most compact reports; ``"olh"`` has no exact
        simulation, so ``simulate`` needs ``"oue"`` or ``"hrr"``). ``"auto"``: ``"oue"`` up
        to 4096 cells (a report of at most 512 bytes, the least variance), ``"hrr"`` beyond
        (one integer per report: OUE's leaf reports over 2^16 cells are 8 KiB per user, and
        10^6 of them took 44 s and 9 GB against 1.7 s and 0.4 GB with HRR, for about 27%
        more variance at epsilon = 1).
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
        Progress of ``"optimized"`` (iteration, objective, worst case, elapsed seconds) and
        of ``"auto"`` (each candidate scored or skipped) through :mod:`logging` (logger
        ``"sklearn_ldp"``, INFO; printed on stderr when the application configured no
        logging).
    max_seconds : float, default=None
        Time budget of ``"optimized"`` (the optimizer starts no step that would end past it
        and returns the best strategy found so far, with a ConvergenceWarning) and of
        ``"auto"`` (candidates not scored by then are skipped and listed in
        ``selection_``). None: 30 s for ``"optimized"``
        (``sklearn_ldp.optimize.ldp_factorization.DEFAULT_MAX_SECONDS``), no time limit for
        ``"auto"`` (``max_iter`` still applies).
    max_report_bytes : int or None, default=1024
        ``"auto"`` and ``"optimized"``: leave out the candidates whose report takes more
        bytes a user (each candidate's size is in ``selection_``); None: no limit. 1024 keeps
        one report within one network packet (unary encodings and subset selection send a
        bit per cell); a ValueError names the smallest size that would do when no candidate
        fits. A strategy asked for by name is built whatever its size.
    random_state : int, numpy Generator, RandomState or None, default=None
        Seeds the optimizer and the randomization. A seeded generator is for reproducible
        *simulation* only: a deployed client must use fresh operating-system entropy
        (``random_state=None``), or its reports could be re-derived. With ``None`` every
        copy of a fitted encoder (unpickled, e.g. on a Dask or joblib worker, or inherited
        by a forked process) draws its own entropy, never the original's noise; an int
        seed's copies repeat its draws, and :meth:`client_spec` warns about it. A Generator
        or RandomState counts as a seed for that warning (nothing tells how it was seeded),
        but its copies never replay it: an unpickled, deep-copied or forked copy draws a new
        generator from operating-system entropy, and each ``sklearn.base.clone`` gets an
        independent child stream (see ``FreshEntropyMixin``).
    ledger : str, path or None, default=None
        Privacy budget ledger to charge (see :mod:`sklearn_ldp.deploy.budget`): the path of a
        ledger file or the name of a ledger registered with
        :func:`~sklearn_ldp.deploy.budget.register_ledger` (plain values, so clones and
        GridSearchCV's copies charge the same ledger). Every ``transform`` is a collection
        that spends the mechanism's epsilon (and delta) of the users ``ledger_users``; it is
        charged before any randomization, so a refused charge
        (:class:`~sklearn_ldp.deploy.budget.BudgetExceededError`) produces no reports.
        ``simulate``/``simulate_counts`` charge the same (their aggregate is distributed as
        that of a real collection, so on real records it spends as much); simulations on
        synthetic data should leave ``ledger=None``.
    ledger_users : str, default="all"
        Group of users covered by the charges: ``"all"`` (everyone) or a cohort declared in
        the ledger (cohorts are disjoint and compose in parallel).
    handle_unknown : {"error", "other"}, default="error"
        A value of ``transform`` (or ``simulate``) that is not among its column's categories:
        ``"error"`` raises a ValueError naming the column and values; ``"other"`` encodes it
        as ``unknown_category``, which must be a declared category of the column (with
        categories read from the data it is appended to every column). There is no
        ``"ignore"``: every user must send a report of some cell, and dropping a report would
        change the number of users and reveal that the value was unknown.
    unknown_category : hashable or dict, default=None
        With ``handle_unknown="other"``: the category unknown values become, the same for
        every column or a dict column -> category (columns not in the dict raise on unknown
        values). Must be None with ``"error"``.
    handle_missing : {"error", "category"}, default="error"
        A missing value (None, NaN, NaT, pd.NA) in ``fit`` data read for categories or in
        ``transform``: ``"error"`` raises a ValueError naming the column; ``"category"``
        encodes it as ``missing_category``, declared like ``unknown_category``. Missing
        values are never treated as unknown ones. For a numeric column (``bounds``) "missing"
        is NaN, None or pd.NA, and ``"category"`` replaces it by a declared *number* within
        the column's bounds (``missing_category={"age": 40}``): a public value the estimates
        then count, as a missing category is counted.
    missing_category : hashable or dict, default=None
        With ``handle_missing="category"``: the category missing values become (one for
        every column, or a dict column -> category). Must be None with ``"error"``.
    bounds : dict, "auto" or None, default=None
        Numeric columns and their public bounds: column -> ``(low, high)`` (see
        ``docs/numeric.md``). ``strategy`` then names how the numbers are privatized:
        ``"hybrid"`` (also ``"auto"``: the least worst-case variance of the mean at every
        epsilon), ``"piecewise"``, ``"duchi"`` (means, decoded by
        :class:`~sklearn_ldp.MeanEstimator`) or ``"square_wave"`` (the distribution, decoded
        by :class:`~sklearn_ldp.DistributionEstimator`). Several numeric columns with a mean
        strategy: each user reports ``k`` of the ``d`` columns with ``epsilon / k`` each
        (Wang et al.'s optimal ``k``), unless ``budget_weights`` asks for a split. Declared
        ``categories`` next to them make a *mixed* record: every column is reported by its
        own mechanism with its share of ``epsilon`` (``budget_weights``); ``strategy`` may
        then be a dict column -> strategy (numeric strategies for numeric columns, frequency
        oracles for categorical ones, ``"auto"``: ``"hybrid"``, and randomized response or
        OUE by Wang et al.'s rule). ``"auto"`` as a column's bounds, or ``bounds="auto"``
        (every column of ``X`` not in ``categories``), reads the bounds from the data passed
        to ``fit`` (its minimum and maximum), with a UserWarning: that reveals the extremes
        of the private data exactly; production code declares public bounds.
    clip : bool, default=False
        A numeric value outside its bounds: ``False`` raises a ValueError naming the column,
        the row and the value; ``True`` clips it to the bounds and counts it in
        ``n_clipped_``. Infinite values are refused either way.
    budget_weights : dict or None, default=None
        The split of ``epsilon`` between the columns of a record reported column by column:
        column -> positive weight (every column named; normalized to sum 1). None: equal
        shares. Not for ``"spl"``, ``"smp"``, ``"rsfd"`` (their protocol shares the budget);
        given for several numeric columns with a mean strategy, it splits the budget instead
        of sampling ``k`` of ``d`` columns.
    n_bins : int, default=1024
        ``"square_wave"``: the equal-width bins of the bounds over which
        :class:`~sklearn_ldp.DistributionEstimator` estimates the distribution, in
        ``[2, 4096]`` (Li et al.'s 1024 by default; EM costs ``O(n_bins)`` per iteration).
    neighbourhood : {"record", "attribute"}, default="record"
        ``"rsfd"`` only. ``"attribute"`` uses Arcolezi et al.'s amplified inner budget, which
        is ``epsilon``-LDP only between records that differ in *one* attribute: the
        record-level guarantee (``epsilon_``, what the ledger is charged) is then larger than
        ``epsilon`` (see ``docs/numeric.md``).
    max_string_bytes : int or None, default=None
        Heavy hitters of a ``"strings"`` column: the declared maximum of UTF-8 bytes of a
        value, in ``[1, 128]`` (a longer value is a ValueError naming its length and the
        cap). PEM and TreeHist fitted on data first ask a tenth of the users their value's
        length (the length round) and cover the lengths found (``string_bytes_``); without
        data, they cover ``max_string_bytes``. None: 128 with a length round, else 32.
    n_candidates : int, default=20
        ``"pem"``, ``"treehist"``: prefixes kept per round, ``k``: the most heavy hitters the
        collection can find (``ceil(1 / theta)`` for a frequency threshold ``theta``).
    extension_bits : int or None, default=None
        ``"pem"``: bits added per round, ``eta``. None: the fewest rounds whose server work
        stays within about ``max(2^29, 256 N)`` comparisons
        (:func:`~sklearn_ldp.mechanisms.heavy_hitters.prefix.default_extension_bits`; 5 for
        32-bit
        values, ``k = 20``, ``N = 10^6``).
    sketch_width : int or None, default=None
        ``"cms"``, ``"hcms"``: the sketch width ``m`` (a power of two for HCMS); None: 1024
        (Apple's).
    n_hashes : int or None, default=None
        ``"cms"``, ``"hcms"``: the number of hash functions ``k``; None: the smallest power of
        two (at least 16) for which collisions add at most 10% to the variance when the
        squared frequencies sum to at most 1%
        (:func:`~sklearn_ldp.mechanisms.heavy_hitters.sketches.default_sketch_hashes`).
    n_users : int or None, default=None
        Heavy hitters: the expected number of users, read only by the defaults of
        ``extension_bits`` and ``n_hashes`` (None: ``10^6``). ``"hdg"``, ``"tdg"``: the
        users the grid sizes are chosen for (None: ``10^6``; docs/multi_range.md).

    Attributes
    ----------
    domain_ : Domain
        The public domain the records are encoded over.
    workload_ : Workload
        ``None`` for the marginal strategies.
    mechanism_ : Mechanism
        The strategy built: it randomizes the records and decodes the reports.
    string_bytes_ : int or None
        Heavy hitters of a ``"strings"`` column: the bytes the prefix rounds cover (the
        longest length the length round found, plus its end; ``max_string_bytes`` without
        a length round). Set by heavy-hitter fits only (None for an integer column).
    strategy_ : str
        Name of the strategy built (the winner for ``"auto"``).
    candidates_ : pandas.Series
        Worst-case per-user variance on the workload of each candidate scored.
    selection_ : pandas.DataFrame
        One row per candidate considered (``"auto"``: every baseline and ``"optimized"``):
        ``worst_case`` and ``average_case`` per-user variance, ``report_bytes`` (bytes of one
        user's report), ``lower_bound`` (a bound on ``worst_case`` computed before it, NaN if
        none), ``seconds`` spent on it, ``status`` ("chosen", "scored" or "skipped") and the
        ``reason`` of a skip (reports over ``max_report_bytes``, a lower bound already above
        the best, a dense strategy past the size where its error can be computed quickly).
    expected_total_error_ : dict or None
        ``worst_case`` and ``average_case`` per-user total variance on the workload (summed
        over its queries; the keys and type of ``WorkloadEstimator.expected_total_error_``).
        ``None`` for the marginal strategies.
    expected_error_ : pandas.DataFrame
        Marginal strategies: a DataFrame with one row per marginal (tuples of column names,
        every order up to ``max_order``), predicted before collection for uniform data and in
        forms that do not depend on the number of users ``N``: ``per_user_variance`` (``N``
        times the summed cell variances of the table of fractions) and ``tv_sqrt_n``
        (expected total variation times ``sqrt(N)``, so ``tv_sqrt_n / sqrt(N)`` predicts it
        for ``N`` users; :meth:`predict_marginal_tv` does that). Records of several columns
        (``bounds``, ``"spl"``, ``"smp"``, ``"rsfd"``): a DataFrame with one row per answer
        (the mean of each numeric column, each category of each categorical column; none
        for ``"square_wave"`` columns, whose EM estimate has no closed-form error), columns
        ``worst_case`` and ``average_case``, per user: divide by ``N`` for a mean's variance,
        multiply by ``N`` for a count's. Other strategies: one row per workload query, columns
        ``worst_case`` and ``average_case`` per user, as ``WorkloadEstimator.predict_error``
        (computed on first access).
    n_iter_, history_ : int, list
        Optimizer iterations and per-iteration record (optimized strategies only).
    bounds_ : dict
        Numeric columns -> their bounds ``(low, high)`` (empty without numeric columns).
    column_budget_ : pandas.DataFrame or None
        Records of several columns (``bounds`` or ``"spl"``/``"smp"``/``"rsfd"``): one row
        per column, its part's ``strategy``, ``epsilon`` (the columns of one part share it)
        and ``part``. None otherwise.
    epsilon_ : float
        The record-level epsilon one report spends: what the ledger is charged (the sum of
        the parts' budgets; for ``"rsfd"`` with ``neighbourhood="attribute"`` the larger
        record-level epsilon).
    n_clipped_ : dict
        Numeric column -> how many of its values ``transform`` clipped (``clip=True``) since
        ``fit``.
    n_features_in_ : int
        Number of columns of the records (the domain columns when fitted without data).
    feature_names_in_ : ndarray of str
        Names of those columns (when fitted on a DataFrame, or without data).

    See Also
    --------
    sklearn_ldp.WorkloadEstimator : Decodes the reports into workload answers.
    sklearn_ldp.MarginalEstimator : Decodes the marginal strategies' reports.
    sklearn_ldp.LDPReports : What ``transform`` returns.
    sklearn_ldp.expected_error_scorer : Chooses a strategy by its analytic error.
    sklearn_ldp.binning.PublicBinsDiscretizer : Bins numeric columns at public edges first.

    Notes
    -----
    **Categories read from the data** (``categories=None``) are for exploration: they leak
    which values occur (a UserWarning says so). Only categorical columns are read: a column
    of non-integral floats, or with more than 1000 distinct values
    (:data:`~sklearn_ldp.domain.MAX_CATEGORIES_FROM_DATA`), is refused with a ValueError
    that points to :class:`~sklearn_ldp.binning.PublicBinsDiscretizer` and to declaring the
    categories, never turned into one category per value.

    **pandas output.** With ``set_output(transform="pandas")``, ``transform`` returns a
    DataFrame of the report columns (:func:`~sklearn_ldp.deploy.io.report_columns`, the names of
    :meth:`get_feature_names_out`) whose ``attrs`` carry the mechanism, the domain and the
    workload (:func:`~sklearn_ldp.deploy.io.reports_frame`); the estimators accept it as reports,
    also after ``DataFrame.to_parquet`` / ``pandas.read_parquet`` and inside a
    ColumnTransformer (see ``docs/encoder.md``). With the default output a ColumnTransformer
    stacks the report columns as numbers; :meth:`reports_from_array` reads them back.

    References
    ----------
    .. [1] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
       for linear queries under local differential privacy", PVLDB 13(11):1905-1918, 2020
       (factorization strategies, ``"optimized"``, and the analytic error behind
       ``"auto"``).
    .. [2] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
       for frequency estimation", USENIX Security 2017 (``"oue"``, ``"olh"``, ``"blh"``).
    .. [3] G. Cormode, T. Kulkarni and D. Srivastava, "Answering range queries under local
       differential privacy", PVLDB 12(10), 2019 (``"hierarchical"``, ``"haar"``).
    .. [4] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal release under local
       differential privacy", ACM SIGMOD 2018 (the marginal strategies).
    .. [5] R. Bassily, "Linear queries estimation with local differential privacy", AISTATS
       2019 (``"gaussian"``, ``"gaussian_pure"``).
    .. [6] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin and G. Yu,
       "Collecting and analyzing multidimensional data with local differential privacy",
       ICDE 2019 (``"piecewise"``, ``"hybrid"``, sampling ``k`` of ``d`` numeric columns).
    .. [7] Z. Li, T. Wang, M. Lopuhaa-Zwakenberg, N. Li and B. Skoric, "Estimating numerical
       distributions under local differential privacy", SIGMOD 2020 (``"square_wave"``).
    .. [8] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Random sampling plus fake
       data: multidimensional frequency estimates with local differential privacy", CIKM
       2021 (``"spl"``, ``"smp"``, ``"rsfd"``).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"smoker": ["no", "yes", "no", "no"]})
    >>> enc = LDPEncoder(categories={"smoker": ["no", "yes"]},
    ...                  strategy="randomized_response", epsilon=1.0, random_state=0)
    >>> reports = enc.fit_transform(df)
    >>> len(reports)
    4

    A numeric column with public bounds (its mean by the Hybrid mechanism):

    >>> ages = pd.DataFrame({"age": [23.0, 41.5, 67.0, 35.0]})
    >>> enc = LDPEncoder(bounds={"age": (0, 100)}, strategy="hybrid", random_state=0)
    >>> enc.fit_transform(ages).shape
    (4, 1)
    """

    def __init__(self, categories=None, strategy="auto", epsilon=1.0, workload=None, delta=None,
                 branching=4, oracle="auto", max_order=None, n_outputs=None, init="best",
                 max_iter=500, tol=1e-5, verbose=0, max_seconds=None,
                 max_report_bytes=DEFAULT_MAX_REPORT_BYTES, random_state=None,
                 ledger=None, ledger_users="all", handle_unknown="error", unknown_category=None,
                 handle_missing="error", missing_category=None, bounds=None, clip=False,
                 budget_weights=None, n_bins=1024, neighbourhood="record", max_string_bytes=None,
                 n_candidates=20, extension_bits=None, sketch_width=None, n_hashes=None,
                 n_users=None):
        store_params(self, locals())

    def fit(self, X=None, y=None):
        """Build the strategy from the public domain and the workload (data-independent).

        Parameters
        ----------
        X : DataFrame, array-like or None, default=None
            Only read when ``categories`` is None or ``"auto"`` (the categories then come
            from it, with a warning that this leaks information); otherwise only its shape
            and column names are checked (and recorded as ``n_features_in_`` and
            ``feature_names_in_``). May be None when the categories are declared.
        y : None
            Ignored.

        Returns
        -------
        self : LDPEncoder
            The fitted encoder (``mechanism_``, ``domain_``, ``expected_error_`` ... set).

        Raises
        ------
        ValueError
            For an invalid parameter, a domain too large for a dense strategy, or a ledger
            that cannot be resolved.

        Warns
        -----
        ConvergenceWarning
            When ``"optimized"`` stops at ``max_iter`` or ``max_seconds`` before ``tol``.
        """
        check_nesting(self, locals())
        epsilon = check_epsilon(self.epsilon)
        if not isinstance(self.ledger_users, str):
            raise ValueError(f"ledger_users must be 'all' or the name of a cohort of the "
                             f"ledger (a str), got {describe(self.ledger_users)}.")
        resolve_ledger(self.ledger, self.ledger_users)  # a bad ledger fails here, not later
        self._check_optimizer_parameters()
        for attribute in ("n_clipped_", "column_budget_", "bounds_", "epsilon_"):
            if hasattr(self, attribute):
                delattr(self, attribute)
        if self._itemsets_mode():  # frequent itemsets, SVSM (_encoder_itemsets)
            return self._fit_itemsets(X, epsilon)
        if self._set_mode():  # a set-valued column (_encoder_sets)
            return self._fit_sets(X, epsilon)
        if self._rappor_mode():  # RAPPOR on a "strings" column (_encoder_rappor)
            return self._fit_rappor(X, epsilon)
        if self._heavy_hitter_mode():
            return self._fit_heavy_hitters(X, epsilon)
        if self._multi_range_mode():  # TDG / HDG over numeric columns (docs/multi_range.md)
            return self._fit_multi_range(X, epsilon)
        if self._columns_mode():
            return self._fit_columns(X, epsilon)
        check_strategy_name(self.strategy)
        check_positive_int(self.branching, "branching", minimum=2,
                           maximum=get_limits()["max_cells"])
        if not isinstance(self.oracle, str) or (self.oracle != "auto"
                                                and self.oracle not in LEVEL_ORACLES):
            raise ValueError(f"oracle must be 'auto' or one of {sorted(LEVEL_ORACLES)} (the "
                             "frequency oracle of each level of the 'hierarchical' tree), got "
                             f"{self.oracle!r}.")
        self._check_handling()
        if X is not None:
            validate_records(self, X, reset=True, allow_nan=self.handle_missing == "category")
        self.domain_ = self._resolve_domain(X)
        check_declared_columns(X, {"categories": self.domain_.columns})
        if self.strategy not in MARGINAL_STRATEGIES and not (
                self.strategy == "auto" and self.workload is not None):
            # The strategies that index the joint domain (and "auto" for its histogram) need
            # its product within max_cells: refused here, before any strategy is built. The
            # marginal strategies, and "auto" on one-way marginals (the multi-attribute
            # protocols), never allocate the product.
            check_cells(self.domain_, "LDPEncoder: categories", DOMAIN_ADVICE)
        if self.strategy == "optimized":
            check_optimized_size(self.domain_.size, self.n_outputs)  # refuse at once, no hang
        elif self.strategy in DENSE_STRATEGIES:
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
        rng = np.random.default_rng(self._random_state())
        mechanism, report = build_mechanism(
            self.strategy,
            self.domain_.shape,
            epsilon,
            workload=self.workload_,
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
            max_seconds=self.max_seconds,
            multi_attribute=self.strategy == "auto",
            max_report_bytes=self.max_report_bytes,
        )
        if "protocol" in report:
            # One-way marginals of several columns, where SPL, SMP or RS+FD had the least
            # error: those report one histogram per column (a ColumnsMechanism).
            return self._fit_columns(X, epsilon, selection=report)
        self.mechanism_ = mechanism
        self.strategy_ = mechanism.name
        # "auto" on marginals may pick a marginal strategy: MarginalEstimator decodes it.
        marginal = marginal or isinstance(mechanism, MarginalMechanism)
        self.candidates_ = pd.Series(report["candidates"], name="worst_case_per_user_variance",
                                     dtype=float)
        self.selection_ = pd.DataFrame.from_dict(
            report["selection"], orient="index", columns=SELECTION_COLUMNS).astype(SELECTION_DTYPES)
        self.selection_.index.name = "strategy"
        if marginal:
            self._expected_error = marginal_error_table(mechanism, list(self.domain_.columns))
            self.expected_total_error_ = None
        else:
            self.mechanism_.check_supports(self.workload_)
            # Computed once by the selection (a tree over 2^20 cells takes about a second).
            self.expected_total_error_ = dict(report["expected_error"])
            self._expected_error = None  # per query, on first access
        self.n_iter_ = report.get("n_iter", 0)  # 0: no optimizer ran for this strategy
        self.history_ = report.get("history", [])
        if "n_iter" in report:
            if not report["converged"] and self.strategy == "optimized":
                cap = (f"max_seconds={self.max_seconds}" if report.get("stopped_by_budget")
                       else f"max_iter={self.max_iter}")
                warnings.warn(
                    f"the strategy optimizer stopped at {cap} before reaching tol={self.tol}; "
                    "the strategy returned is the better of the optimizer's best so far and "
                    "every closed form (see selection_), and may improve with a larger budget.",
                    ConvergenceWarning,
                    stacklevel=2,
                )
        if X is None:
            self.n_features_in_ = self.domain_.n_columns
            self.feature_names_in_ = np.asarray(self.domain_.columns, dtype=object)
        self.bounds_, self.column_budget_ = {}, None
        self.epsilon_ = float(self.mechanism_.epsilon)
        self._set_generator(rng)
        return self

    def _check_optimizer_parameters(self):
        """Refuse a bad ``max_iter``, ``tol``, ``max_seconds``, ``n_outputs`` or ``init``
        before any strategy is built (whatever the strategy: a typo must not wait for the
        day ``"optimized"`` is chosen)."""
        # 2^31: far past any useful run, and within every integer counter of the optimizer.
        check_positive_int(self.max_iter, "max_iter", maximum=2**31 - 1)
        check_real(self.tol, "tol", minimum=0)
        if isinstance(self.verbose, bool) or not isinstance(self.verbose, numbers.Integral) \
                or self.verbose < 0:
            raise ValueError(f"verbose must be an integer >= 0, got {short_repr(self.verbose)}.")
        check_real(self.max_seconds, "max_seconds", minimum=0, strict=True, allow_none=True)
        check_max_report_bytes(self.max_report_bytes)
        if self.n_outputs is not None:
            check_positive_int(self.n_outputs, "n_outputs",
                               maximum=get_limits()["max_matrix_entries"])
        if isinstance(self.init, str):
            return  # the names are checked by the selection
        try:
            init = np.asarray(self.init, dtype=float)
        except (TypeError, ValueError, OverflowError):
            init = None
        if init is None or init.ndim != 2 or init.size == 0 or not np.isfinite(init).all():
            raise ValueError(f"init must be 'random', 'baseline', 'best' or a strategy matrix "
                             f"(a 2-D array of finite probabilities), got {describe(self.init)}.")


    # ------------------------------------------------------------------ unknown / missing
    @property
    def expected_error_(self):
        """The strategy's analytic error (see the class's Attributes).

        Returns
        -------
        pandas.DataFrame
            One row per answer (per workload query for the workload strategies, computed on
            first access), columns ``worst_case`` and ``average_case``.
        """
        state = vars(self)
        if "_expected_error" not in state:
            if "expected_error_" in state:  # an encoder pickled before the property existed
                return state["expected_error_"]
            raise AttributeError("'LDPEncoder' object has no attribute 'expected_error_'")
        if state["_expected_error"] is None:
            # Per query, as WorkloadEstimator.predict_error; expected_total_error_ holds the
            # totals, computed by the selection.
            check_table_size(self.workload_, MAX_ERROR_TABLE_QUERIES, "expected_error_",
                             "expected_total_error_ (the sums over all queries)")
            worst, average = self.mechanism_.query_variance_summary(self.workload_)
            self._expected_error = pd.DataFrame(
                {"worst_case": np.asarray(worst, dtype=float),
                 "average_case": np.asarray(average, dtype=float)},
                index=self.workload_.labels)
        return self._expected_error

    def _check_handling(self):
        """Validate handle_unknown / handle_missing and their categories (before the domain)."""
        if self.handle_unknown == "ignore":
            raise ValueError(_NO_IGNORE)
        for handle, allowed, category, name in (
                ("handle_unknown", HANDLE_UNKNOWN, "unknown_category", self.unknown_category),
                ("handle_missing", HANDLE_MISSING, "missing_category", self.missing_category)):
            value = getattr(self, handle)
            if not isinstance(value, str) or value not in allowed:
                raise ValueError(f"{handle} must be one of {allowed}, got {value!r}.")
            if value == "error":
                if name is not None:
                    raise ValueError(f"{category}={name!r} is only used with {handle}="
                                     f"{allowed[1]!r}; {handle} is 'error'.")
                continue
            if name is None:
                raise ValueError(f"{handle}={value!r} needs {category}: the declared category "
                                 f"the values become (e.g. {category}='other').")
            for column, cat in (name.items() if isinstance(name, dict) else [(None, name)]):
                where = category if column is None else f"{category}[{column!r}]"
                try:
                    hash(cat)
                except TypeError:
                    raise ValueError(f"{where} must be a hashable category, got "
                                     f"{cat!r}.") from None
                if _is_missing(cat):
                    raise ValueError(f"{where} must be a category, not a missing value "
                                     f"({cat!r}).")

    def _replacements(self, param, columns, numeric=()):
        """Column -> category for ``unknown_category`` / ``missing_category`` (None: none).

        ``numeric``: the numeric columns of a record (``bounds``), whose missing values
        ``missing_category`` may name (a number; see ``_numeric_replacements``) and which
        have no unknown values.
        """
        value = getattr(self, param)
        if value is None:
            return {}
        if isinstance(value, dict):
            if param == "unknown_category":
                named = [c for c in value if c in numeric]
                if named:
                    raise ValueError(
                        f"unknown_category names the numeric column(s) {named!r}: a number "
                        "outside its bounds is refused, or clipped with clip=True.")
            extra = [c for c in value if c not in columns and c not in numeric]
            if extra:
                raise ValueError(f"{param} names columns {extra!r} that are not in the domain "
                                 f"{list(columns)!r}.")
            return {c: v for c, v in value.items() if c in columns}
        return dict.fromkeys(columns, value)

    def _resolve_domain(self, X, numeric=()):
        """The public domain, with the other/missing categories (see handle_unknown); each
        column within ``max_cells`` (its product is checked by the strategies that index it).

        ``numeric``: the numeric columns of a record (``bounds``), left out of the domain.
        """

        reading = self.categories is None or (isinstance(self.categories, str)
                                              and self.categories in READ_FROM_DATA)
        if not reading:
            categories = self.categories
            if isinstance(categories, Mapping):  # each column before anything is built
                categories = {column: check_column_size(column, values, "LDPEncoder",
                                                        DOMAIN_ADVICE)
                              for column, values in categories.items()}
            domain = resolve_domain(categories, None)
            # Declared categories must hold the replacements (a cell of their own in the
            # public domain): checked here, at fit, not at the first unknown value.
            for param in ("unknown_category", "missing_category"):
                for column, category in self._replacements(param, domain.columns,
                                                           numeric).items():
                    if not domain.has_category(column, category):
                        raise ValueError(
                            f"{param}={getattr(self, param)!r}: {category!r} is not a declared "
                            f"category of column {column!r}; add it to categories[{column!r}] "
                            "(the domain is public, so the other/missing cell is declared "
                            "like any other).")
            return domain
        if X is None or self.missing_category is None:
            domain = resolve_domain(self.categories, X)
        else:
            # Missing values become their category before the categories are read.
            frame = as_frame(X)
            missing = self._replacements("missing_category", list(frame.columns), numeric)
            filled = frame.copy()
            for column, category in missing.items():
                filled[column] = frame[column].astype(object).where(frame[column].notna(),
                                                                     category)
            domain = resolve_domain(self.categories, filled)
        # Read categories cannot hold what the data lacks: the replacements are appended
        # (after the sorted values), so that transform can always use them.
        categories = domain.categories
        for param in ("unknown_category", "missing_category"):
            for column, category in self._replacements(param, domain.columns,
                                                       numeric).items():
                if not domain.has_category(column, category):
                    categories[column].append(category)
                    domain = Domain(categories)
        return domain

    def _encode(self, X):
        """Flat cell indices of ``X``, unknown and missing values replaced as configured."""
        columns = self.domain_.columns
        X = self.domain_.substitute(
            X, unknown=self._replacements("unknown_category", columns),
            missing=self._replacements("missing_category", columns))
        return self.domain_.encode(X)

    def transform(self, X):
        """Privatize every row of ``X``: one report per row.

        Parameters
        ----------
        X : DataFrame, 2-D array-like, or 1-D array-like / Series
            Records over the domain columns (a DataFrame may hold other columns).

        Returns
        -------
        LDPReports or pandas.DataFrame
            LDPReports (the reports with their mechanism, domain and workload); with
            ``set_output(transform="pandas")`` a DataFrame of the report columns, indexed
            like ``X``, whose ``attrs`` carry the mechanism (see
            :func:`~sklearn_ldp.deploy.io.reports_frame`).
        """
        check_nesting(self, locals())
        check_is_fitted(self, "mechanism_")
        output = _get_output_config("transform", self)["dense"]
        if output not in ("default", "pandas"):
            # Checked before any charge or draw: a refused call collects nothing.
            raise ValueError(f"set_output(transform={output!r}) is not supported: reports are "
                             "returned as LDPReports or, with 'pandas', as a DataFrame whose "
                             "attrs carry the mechanism needed to decode them.")
        if (getattr(self, "_columns_without_data", False) and isinstance(X, pd.DataFrame)
                and set(self.feature_names_in_) <= set(X.columns)):
            # Fitted without data, the record's columns were declared in two dicts (bounds,
            # categories) whose relative order says nothing of the frame's: take them by name.
            X = X[list(self.feature_names_in_)]
        if self._fitted_itemsets():  # rows: the itemset round's users (_encoder_itemsets)
            reports = LDPReports(self._transform_itemsets(X), self.mechanism_)
            return reports if output == "default" else reports_frame(reports)
        if isinstance(self.mechanism_, SET_MECHANISMS):  # rows: the item round's users
            reports = LDPReports(self._transform_sets(X), self.mechanism_)
            return reports if output == "default" else reports_frame(reports)
        if isinstance(self.mechanism_, RapporMechanism):
            reports = self._transform_rappor(X)
            return reports if output == "default" else _aligned_frame(reports, X)
        if isinstance(self.mechanism_, HeavyHitterMechanism):
            words = self._heavy_hitter_words(X)
            self._charge_collection(words.shape[0], "transform")
            reports = LDPReports(self._with_length_reports(
                words, self.mechanism_.randomize(words, self._generator())), self.mechanism_)
            return reports if output == "default" else _aligned_frame(reports, X)
        try:
            validate_records(self, X, reset=False, allow_nan=self.handle_missing == "category")
        except ValueError as exc:
            raise ValueError(f"{exc}{_pipeline_hint(self, X)}") from None
        clipped = None
        if isinstance(self.mechanism_, ColumnsMechanism):
            indices, clipped = self._encode_columns(X)  # rows of values and category codes
        elif self._fitted_multi_range():
            indices, clipped = self._multi_range_records(X)  # rows of numbers (TDG / HDG)
        else:
            indices = self._encode(X)
        self._charge_collection(indices.shape[0], "transform")
        reports = LDPReports(self.mechanism_.randomize(indices, self._generator()),
                             self.mechanism_, self.domain_, self.workload_)
        if clipped is not None:
            # Counted since fit, in place (transform rebinds no attribute).
            for column, count in clipped.items():
                self.n_clipped_[column] += int(count)
        if output == "default":
            return reports
        frame = reports_frame(reports)
        if isinstance(X, pd.DataFrame | pd.Series):
            frame.index = X.index  # one report per record, as scikit-learn's outputs align
        return frame

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

        Parameters
        ----------
        X : DataFrame, 2-D array-like, or 1-D array-like / Series
            Records over the domain columns, as for :meth:`transform`.

        Returns
        -------
        AggregatedReports
            The aggregate of one report per row, with the mechanism, domain and workload.
            The ledger (if any) is charged as for :meth:`transform`.

        Raises
        ------
        NotImplementedError
            If the mechanism has no exact simulation of its aggregate.
        """
        check_nesting(self, locals())
        check_is_fitted(self, "mechanism_")
        self._check_simulation()
        validate_records(self, X, reset=False, allow_nan=self.handle_missing == "category")
        counts = np.bincount(self._encode(X), minlength=self.domain_.size)
        return self.simulate_counts(counts)

    def simulate_counts(self, type_counts):
        """Like :meth:`simulate`, from the number of users of each domain cell (flat order).

        Use it for populations too large to hold as records (e.g. 10^9 users).

        Parameters
        ----------
        type_counts : array-like of int of shape (n_cells,)
            The number of users of each cell, non-negative, at most ``2**62`` in all.

        Returns
        -------
        AggregatedReports
            The aggregate of one report per user, drawn from its exact distribution.

        Raises
        ------
        NotImplementedError
            If the mechanism has no exact simulation of its aggregate.
        BudgetExceededError
            If the ledger refuses the charge (the encoder's generator is then rewound).

        Examples
        --------
        >>> enc = LDPEncoder(categories={"smoker": ["no", "yes"]},
        ...                  strategy="randomized_response", random_state=0).fit()
        >>> len(enc.simulate_counts([7 * 10**8, 3 * 10**8]))
        1000000000
        """
        check_nesting(self, locals())
        check_is_fitted(self, "mechanism_")
        self._check_simulation()
        counts = check_type_counts(type_counts, self.domain_.size)
        # Charged after the draw (a mechanism without exact simulation raises first, charging
        # nothing) and before anything is returned. A refused charge releases nothing and
        # rewinds the generator, so the encoder is left exactly as it was.
        rng = self._generator()
        generator_state = rng.bit_generator.state
        statistic = self.mechanism_.simulate_statistic(counts, rng)
        try:
            self._charge_collection(int(counts.sum()), "simulate")
        except BudgetExceededError:
            rng.bit_generator.state = generator_state
            raise
        return AggregatedReports(statistic, self.mechanism_, self.domain_, self.workload_)

    def _check_simulation(self):
        if isinstance(self.mechanism_, (HeavyHitterMechanism, *SET_MECHANISMS)):
            what = "heavy hitters" if isinstance(self.mechanism_, HeavyHitterMechanism) else \
                "set-valued and key-value columns"
            raise NotImplementedError(
                f"{what} ({self.strategy_!r}) have no exact simulation of their "
                "aggregate: privatize the values with transform.")
        if isinstance(self.mechanism_, ColumnsMechanism) or self._fitted_multi_range():
            raise NotImplementedError(
                "records of several columns (bounds=, 'spl', 'smp', 'rsfd', 'hdg', 'tdg') have no "
                "exact simulation of their aggregate: privatize the records with transform.")

    def _charge_collection(self, n_users, method):
        """Charge the ledger (if any) for one report of each of ``n_users`` users.

        Records of several columns are one charge of the record-level epsilon (the parts'
        budgets add up), its description listing what each part spends.
        """
        detail = ""
        if isinstance(self.mechanism_, ColumnsMechanism):
            detail = " (" + ", ".join(
                f"{'+'.join(part.columns)}: {part.strategy} epsilon={part.epsilon:.6g}"
                for part in self.mechanism_.parts) + ")"
        charge_ledger(
            self.ledger, self.mechanism_.epsilon, getattr(self.mechanism_, "delta", None) or 0.0,
            kind="collection", users=self.ledger_users,
            description=f"LDPEncoder.{method}: {n_users} users, strategy {self.strategy_!r}"
                        f"{detail}")

    def predict_marginal_tv(self, n_users):
        """Marginal strategies: predicted total variation of every marginal for ``n_users``.

        The data-independent prediction (uniform data) of the expected TV of each unbiased
        table, a pandas Series indexed by the marginals: use it to choose ``N`` before
        collecting.

        Parameters
        ----------
        n_users : int
            The number of users who would report.

        Returns
        -------
        pandas.Series
            The predicted total variation of each marginal table, indexed by the marginals
            (tuples of column names).

        Raises
        ------
        ValueError
            If the strategy is not a marginal strategy.
        """
        check_is_fitted(self, "mechanism_")
        if self.workload_ is not None or isinstance(self.mechanism_, ColumnsMechanism
                                                     | HeavyHitterMechanism):
            raise ValueError(f"predict_marginal_tv needs a marginal strategy, not "
                             f"{self.strategy_!r}.")
        return marginal_error_table(self.mechanism_, list(self.domain_.columns),
                                    n_users)["predicted_tv"]

    def client_spec(self):
        """The JSON specification devices rebuild the randomizer from.

        ``sklearn_ldp.deploy.client.Randomizer.from_json(encoder.client_spec())`` on a device
        privatizes records exactly as :meth:`transform` (see ``docs/client.md``). The
        specification carries no seed and no generator state; the device draws its own
        entropy.

        Returns
        -------
        str
            ``mechanism_.to_json()``; for heavy hitters the protocol's own specification
            (:meth:`~sklearn_ldp.mechanisms.heavy_hitters.prefix.PrefixHeavyHitters.to_dict` or
            :meth:`~sklearn_ldp.mechanisms.heavy_hitters.sketches.SketchFrequencyOracle.to_dict`).

        Warns
        -----
        UserWarning
            When ``random_state`` is set: this encoder's noise is seeded, which is for
            simulation only; deployed noise must not be seeded.
        """
        check_is_fitted(self, "mechanism_")
        if self.random_state is not None:
            warnings.warn(
                f"exporting the client specification of an encoder with random_state="
                f"{self.random_state!r}: its noise is seeded, for simulation only. Deployed "
                "noise must not be seeded: devices must randomize with operating-system "
                "entropy (Randomizer(spec) without seed, or random_state=None).",
                UserWarning,
                stacklevel=2,
            )
        if self._fitted_itemsets():  # the "itemsets" kind of the clients (_encoder_itemsets)
            return json.dumps(self._itemset_client_spec())
        if isinstance(self.mechanism_, HeavyHitterMechanism):
            # The protocol's own specification (the clients know no column or encoding
            # wrapper): strings are UTF-8, zero-padded to bit_length / 8 bytes.
            return json.dumps(self.mechanism_.client_dict())
        return self.mechanism_.to_json()

    def reports_from_frame(self, frame):
        """This encoder's reports read back from a table of its report columns.

        For the encoder's block of a ``ColumnTransformer`` (with
        ``set_output(transform="pandas")``, whose output keeps no ``attrs``): the columns
        :meth:`get_feature_names_out` names, alone or with a ``"<name>__"`` prefix among other
        transformers' columns, become :class:`~sklearn_ldp.reports.LDPReports` with this
        encoder's mechanism, domain and workload, checked value by value
        (:func:`~sklearn_ldp.deploy.io.reports_from_frame`).

        Parameters
        ----------
        frame : pandas.DataFrame
            A table holding the report columns once each (other columns are ignored).

        Returns
        -------
        LDPReports
            The reports, one per row, ready for any estimator's ``fit``.

        Raises
        ------
        ValueError
            ``frame`` is not a DataFrame, lacks a report column or holds one twice (two
            prefixes: pass ``frame.filter(like="<name>__")``), or holds values that are not
            reports of the mechanism.

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn.compose import ColumnTransformer
        >>> from sklearn.preprocessing import StandardScaler
        >>> df = pd.DataFrame({"city": ["a", "b", "a", "c"], "age": [31, 45, 27, 60]})
        >>> ct = ColumnTransformer([
        ...     ("ldp", LDPEncoder(categories={"city": ["a", "b", "c"]}, epsilon=1.0,
        ...                        strategy="randomized_response", random_state=0), ["city"]),
        ...     ("scale", StandardScaler(), ["age"])]).set_output(transform="pandas")
        >>> Z = ct.fit_transform(df)
        >>> list(Z.columns)
        ['ldp__report', 'scale__age']
        >>> reports = ct.named_transformers_["ldp"].reports_from_frame(Z)
        >>> len(reports), reports.domain == ct.named_transformers_["ldp"].domain_
        (4, True)
        """
        check_is_fitted(self, "mechanism_")
        if not isinstance(frame, pd.DataFrame):
            raise ValueError(f"frame must be a pandas DataFrame holding the report columns "
                             f"{list(self.get_feature_names_out())}, got {type(frame).__name__}"
                             " (a ColumnTransformer gives one with set_output(transform="
                             "'pandas')).")
        chosen = []
        for name in self.get_feature_names_out():
            found = [c for c in frame.columns
                     if isinstance(c, str) and (c == name or c.endswith("__" + name))]
            if len(found) != 1:
                raise ValueError(
                    f"frame must hold the report column {name!r} once (alone or as "
                    f"'<transformer>__{name}'), found {found[:5]!r}; with several encoders "
                    "pass this encoder's block, e.g. frame.filter(like='ldp__').")
            chosen.append(found[0])
        return reports_from_frame(frame[chosen], mechanism=self.mechanism_,
                                  domain=getattr(self, "domain_", None),
                                  workload=getattr(self, "workload_", None))

    def reports_from_array(self, array):
        """This encoder's reports read back from its block of a ColumnTransformer's numpy
        output, ``Z[:, ct.output_indices_[name]]``, with its mechanism, domain and workload,
        every value checked (:meth:`LDPReports.from_array
        <sklearn_ldp.reports.LDPReports.from_array>`: nothing rounded or clipped).

        Parameters
        ----------
        array : array-like of shape (n_users, n_report_columns)
            The encoder's block (the columns :meth:`get_feature_names_out` names).

        Returns
        -------
        LDPReports
            The reports, one per row, ready for any estimator's ``fit``.

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn.compose import ColumnTransformer
        >>> df = pd.DataFrame({"city": ["a", "b", "a", "c"], "age": [31, 45, 27, 60]})
        >>> ct = ColumnTransformer([("ldp", LDPEncoder(categories={"city": ["a", "b", "c"]},
        ...                         random_state=0), ["city"])], remainder="passthrough")
        >>> Z = ct.fit_transform(df)
        >>> len(ct.named_transformers_["ldp"].reports_from_array(Z[:, ct.output_indices_["ldp"]]))
        4
        """
        check_is_fitted(self, "mechanism_")
        return LDPReports.from_array(array, self.mechanism_, getattr(self, "domain_", None),
                                     getattr(self, "workload_", None))

    def get_feature_names_out(self, input_features=None):
        """Names of the report columns of the pandas output (and of report files).

        Parameters
        ----------
        input_features : array-like of str or None, default=None
            Checked against the input features seen in ``fit`` (scikit-learn convention);
            the output names do not depend on them.

        Returns
        -------
        ndarray of str
            :func:`~sklearn_ldp.deploy.io.report_columns` of the fitted mechanism: ``["report"]``
            for one integer per user, ``["report_0", ..., "report_{w-1}"]`` otherwise.
        """
        check_is_fitted(self, "mechanism_")
        _check_feature_names_in(self, input_features)
        return np.asarray(report_columns(self.mechanism_), dtype=object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = self.handle_missing == "category"
        tags.non_deterministic = True
        tags.requires_fit = True
        # Reports are integer output indices (or the Gaussian coordinates), whatever the
        # input dtype: no input dtype is preserved.
        tags.transformer_tags.preserves_dtype = []
        return tags


def _pipeline_hint(encoder, X):
    """Advice for input of another width than the records: ``Pipeline.predict(queries)``
    pushes the queries through ``transform`` before the last step sees them."""
    try:
        width = _num_features(X)
    except (TypeError, ValueError, KeyError, IndexError):  # not array-like: no hint
        return ""
    if width == getattr(encoder, "n_features_in_", width):
        return ""
    fitted = list(getattr(encoder, "feature_names_in_", []))
    if isinstance(X, pd.DataFrame) and fitted and set(fitted) <= set(X.columns):
        # Records with more columns than the encoder was fitted on: select its columns.
        return f" Pass only the columns seen in fit: X[{fitted!r}]."
    return (" If these are queries for the estimator after the encoder in a Pipeline (predict "
            "and score first pass X through transform, which privatizes records), ask the last "
            "step directly: pipeline[-1].predict(queries).")


def _aligned_frame(reports, X):
    """The reports as a DataFrame (``reports_frame``), indexed like ``X`` when it has one."""
    frame = reports_frame(reports)
    if isinstance(X, pd.DataFrame | pd.Series):
        frame.index = X.index
    return frame


