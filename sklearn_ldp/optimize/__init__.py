"""Strategy optimizers: LDP factorization, Eigen-Design (central), count mechanisms (LPs).

Numerical programs only: they take matrices (and operators) and return matrices, and import
no mechanism. Building a mechanism from their output is the selection layer's job
(:mod:`sklearn_ldp.selection`).

The Eigen-Design function is ``sklearn_ldp.optimize.eigen_design.eigen_design`` (not
re-exported here: the name is that of its module).
"""

import warnings

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

# The count-mechanism design (validation, cost matrix, exact-privacy repair, closed form or
# LP) moved to the selection layer; importable from here until its removal.
_MOVED_TO_SELECTION = ("CountDesign", "CountLPResult", "design_count_mechanism",
                       "solve_count_lp", "solve_ldp_lp")


def __getattr__(name):
    """Deprecated names: imported lazily from :mod:`sklearn_ldp.selection`, with a warning."""
    if name not in _MOVED_TO_SELECTION:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from .. import selection

    warnings.warn(
        f"sklearn_ldp.optimize.{name} is deprecated: import it from sklearn_ldp.selection "
        "(sklearn_ldp.optimize holds the numerical programs only).",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(selection, name)
