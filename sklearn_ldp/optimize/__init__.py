"""Strategy optimizers: LDP factorization, Eigen-Design (central), count mechanisms (LPs).

The Eigen-Design function is ``sklearn_ldp.optimize.eigen_design.eigen_design`` (not
re-exported here: the name is that of its module).
"""

from .count_lp import (
    CountDesign,
    CountLPResult,
    design_count_mechanism,
    solve_count_lp,
    solve_ldp_lp,
)
from .eigen_design import (
    EigenDesign,
    optimal_error,
    program1,
    refine_strategy,
    singular_value_bound,
    strategy_error,
)
from .ldp_factorization import OptimizationResult, optimize_strategy
from .projection import project_bounded_simplex

__all__ = [
    "CountDesign",
    "CountLPResult",
    "EigenDesign",
    "OptimizationResult",
    "design_count_mechanism",
    "optimal_error",
    "optimize_strategy",
    "program1",
    "project_bounded_simplex",
    "refine_strategy",
    "singular_value_bound",
    "solve_count_lp",
    "solve_ldp_lp",
    "strategy_error",
]
