"""Strategy optimizers: LDP factorization, Eigen-Design (central), count mechanisms (LPs).

Numerical programs only: they take matrices (and operators) and return matrices, and import
no mechanism. Building a mechanism from their output is the selection layer's job
(:mod:`sklearn_ldp.selection`).

The Eigen-Design function is ``sklearn_ldp.optimize.eigen_design.eigen_design`` (not
re-exported here: the name is that of its module).
"""

from .count_lp import solve_mechanism_lp
from .eigen_design import (
    EigenDesign,
    optimal_error,
    program1,
    refine_strategy,
    singular_value_bound,
    strategy_error,
)
from .hull import project_onto_hull
from .ldp_factorization import OptimizationResult, optimize_strategy
from .projection import project_bounded_simplex

__all__ = [
    "EigenDesign",
    "OptimizationResult",
    "optimal_error",
    "optimize_strategy",
    "program1",
    "project_bounded_simplex",
    "project_onto_hull",
    "refine_strategy",
    "singular_value_bound",
    "solve_mechanism_lp",
    "strategy_error",
]
