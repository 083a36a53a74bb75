"""Strategy optimizers: LDP workload factorization, constrained count mechanisms (LPs)."""

from .count_lp import (
    CountDesign,
    CountLPResult,
    design_count_mechanism,
    solve_count_lp,
    solve_ldp_lp,
)
from .ldp_factorization import OptimizationResult, optimize_strategy
from .projection import project_bounded_simplex

__all__ = [
    "CountDesign",
    "CountLPResult",
    "OptimizationResult",
    "design_count_mechanism",
    "optimize_strategy",
    "project_bounded_simplex",
    "solve_count_lp",
    "solve_ldp_lp",
]
