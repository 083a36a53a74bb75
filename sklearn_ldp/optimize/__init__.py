"""Strategy optimizers (pure numpy/scipy)."""

from .ldp_factorization import OptimizationResult, optimize_strategy
from .projection import project_bounded_simplex

__all__ = ["OptimizationResult", "optimize_strategy", "project_bounded_simplex"]
