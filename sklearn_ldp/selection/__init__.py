"""The selection layer: build a mechanism from a strategy name (closed forms, optimizers, auto).

The only package that knows both :mod:`sklearn_ldp.mechanisms` (the math of each mechanism)
and :mod:`sklearn_ldp.optimize` (the numerical programs); no scikit-learn here.

* :mod:`.baselines`: the registry of local (LDP) strategy names and the closed forms they
  build (frequency oracles, range mechanisms, factorization baselines, Bassily's randomizers);
* :mod:`.local`: :func:`build_mechanism` (the closed forms, marginal strategies,
  ``"optimized"`` and ``"auto"``, which weigh each candidate's report size and skip those
  whose lower bound already loses);
* :mod:`.marginal_workloads`: the marginal strategies scored in closed form on a workload of
  marginals (candidates of ``"auto"`` and ``"optimized"`` at any size);
* :mod:`.multi_attribute`: SPL, SMP, RS+FD or per-column oracles for the one-way marginals
  of several columns;
* :mod:`.central`: the central-model strategies and :func:`build_central_mechanism`
  (closed forms, Eigen-Design, ``"auto"`` with optional private selection);
* :mod:`.count`: count mechanisms, :func:`design_count_mechanism` (closed form or LP) and the
  LPs with their exact-privacy repair (:func:`solve_count_lp`, :func:`solve_ldp_lp`).
"""

from .baselines import (
    BASELINES,
    DEFAULT_MAX_REPORT_BYTES,
    FACTORIZATION_BASELINES,
    MARGINAL_STRATEGIES,
    MAX_START_OUTPUTS_PER_CELL,
    ORACLES,
    RANGE_MECHANISMS,
    STRATEGIES,
    WORKLOAD_RANDOMIZERS,
    baseline_mechanism,
    check_max_report_bytes,
    check_strategy_name,
    marginal_order,
    report_bytes,
    workload_randomizer,
    worst_case_variance,
)
from .central import CENTRAL_STRATEGIES, build_central_mechanism, central_strategy
from .count import (
    CountDesign,
    CountLPResult,
    design_count_mechanism,
    solve_count_lp,
    solve_ldp_lp,
)
from .local import (
    SELECTION_COLUMNS,
    SELECTION_DTYPES,
    build_mechanism,
    candidate_list,
    check_optimized_size,
    lower_bound,
    workload_eigenpairs,
)
from .marginal_workloads import (
    MARGINAL_CANDIDATES,
    marginal_sets,
    marginal_workload_variance,
    score_marginal_strategies,
)

__all__ = [
    "BASELINES",
    "CENTRAL_STRATEGIES",
    "DEFAULT_MAX_REPORT_BYTES",
    "CountDesign",
    "CountLPResult",
    "FACTORIZATION_BASELINES",
    "MARGINAL_CANDIDATES",
    "MARGINAL_STRATEGIES",
    "MAX_START_OUTPUTS_PER_CELL",
    "ORACLES",
    "RANGE_MECHANISMS",
    "SELECTION_COLUMNS",
    "SELECTION_DTYPES",
    "STRATEGIES",
    "WORKLOAD_RANDOMIZERS",
    "baseline_mechanism",
    "build_central_mechanism",
    "build_mechanism",
    "candidate_list",
    "check_max_report_bytes",
    "check_optimized_size",
    "central_strategy",
    "check_strategy_name",
    "design_count_mechanism",
    "lower_bound",
    "marginal_order",
    "marginal_sets",
    "marginal_workload_variance",
    "report_bytes",
    "score_marginal_strategies",
    "solve_count_lp",
    "solve_ldp_lp",
    "workload_eigenpairs",
    "workload_randomizer",
    "worst_case_variance",
]
