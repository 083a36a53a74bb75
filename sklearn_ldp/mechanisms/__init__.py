"""Mechanisms: the mathematics of each strategy family, one module per family (no sklearn).

Nothing here runs an optimizer or builds a mechanism from a strategy name: that is the
selection layer, :mod:`sklearn_ldp.selection`. The names that moved there (and the hull
projection, now in :mod:`sklearn_ldp.optimize.hull`) are still importable from here, with a
DeprecationWarning (see ``__getattr__`` below).
"""

import warnings

from .base import Mechanism, mechanism_from_dict, mechanism_from_json
from .central_strategies import fourier_basis_strategy, tree_strategy, wavelet_strategy
from .count import (
    check_properties,
    choose_mechanism,
    enforce_dp,
    expected_loss,
    explicit_fair_mechanism,
    geometric_mechanism,
    l0_error,
    privacy_loss,
    randomized_response_count,
    symmetrize,
    uniform_mechanism,
    verify_dp,
)
from .discrete_gaussian import sample_discrete_gaussian
from .factorization import (
    FactorizationMechanism,
    check_strategy,
    optimal_reconstruction,
    per_user_variance,
    privacy_ratio,
    sample_complexity,
    svd_lower_bound,
)
from .fourier import fourier_strategy
from .gaussian import GaussianMechanism
from .gaussian_rejection import GaussianRejectionMechanism
from .haar import HaarHRR
from .hadamard import HadamardResponse, hadamard_strategy
from .hadamard_coefficient import HadamardRandomizedResponse
from .hierarchical import hierarchical_strategy
from .local_hashing import BinaryLocalHashing, OptimizedLocalHashing
from .marginal_em import InpEM
from .marginals import (
    MARGINAL_STRATEGIES,
    InpHT,
    InpPS,
    InpRR,
    MargHT,
    MarginalMechanism,
    MargPS,
    MargRR,
    build_marginal_mechanism,
)
from .matrix import MatrixMechanism, lower_bound, noise_multiplier, total_squared_error
from .private_selection import exponential_mechanism, select_strategy
from .randomized_response import RandomizedResponse, randomized_response_strategy
from .range_bounds import (
    flat_variance,
    haar_variance_bound,
    hierarchical_variance_bound,
    oracle_variance,
    recommend_branching,
)
from .range_tree import HierarchicalHistogram, tree_consistency
from .scalar import OneBitRandomizer
from .subset_selection import SubsetSelection
from .unary import OptimizedUnaryEncoding, SymmetricUnaryEncoding, rappor_strategy

__all__ = [
    "BinaryLocalHashing",
    "FactorizationMechanism",
    "GaussianMechanism",
    "GaussianRejectionMechanism",
    "HaarHRR",
    "HadamardRandomizedResponse",
    "HadamardResponse",
    "HierarchicalHistogram",
    "InpEM",
    "InpHT",
    "InpPS",
    "InpRR",
    "MARGINAL_STRATEGIES",
    "MargHT",
    "MargPS",
    "MargRR",
    "MarginalMechanism",
    "MatrixMechanism",
    "Mechanism",
    "OneBitRandomizer",
    "OptimizedLocalHashing",
    "OptimizedUnaryEncoding",
    "RandomizedResponse",
    "SubsetSelection",
    "SymmetricUnaryEncoding",
    "build_marginal_mechanism",
    "check_properties",
    "check_strategy",
    "choose_mechanism",
    "enforce_dp",
    "expected_loss",
    "explicit_fair_mechanism",
    "exponential_mechanism",
    "flat_variance",
    "fourier_basis_strategy",
    "fourier_strategy",
    "geometric_mechanism",
    "haar_variance_bound",
    "hadamard_strategy",
    "hierarchical_strategy",
    "hierarchical_variance_bound",
    "l0_error",
    "lower_bound",
    "mechanism_from_dict",
    "mechanism_from_json",
    "noise_multiplier",
    "optimal_reconstruction",
    "oracle_variance",
    "per_user_variance",
    "privacy_loss",
    "privacy_ratio",
    "randomized_response_count",
    "randomized_response_strategy",
    "rappor_strategy",
    "recommend_branching",
    "sample_complexity",
    "sample_discrete_gaussian",
    "select_strategy",
    "svd_lower_bound",
    "symmetrize",
    "total_squared_error",
    "tree_consistency",
    "tree_strategy",
    "uniform_mechanism",
    "verify_dp",
    "wavelet_strategy",
]

# Names that moved out of this package, importable from here until their removal.
_MOVED_TO_SELECTION = ("BASELINES", "CENTRAL_STRATEGIES", "STRATEGIES", "baseline_mechanism",
                       "build_central_mechanism", "build_mechanism", "central_strategy")
_MOVED_TO_OPTIMIZE_HULL = ("project_onto_hull",)


def __getattr__(name):
    """Deprecated names: imported lazily from their new home, with a DeprecationWarning.

    Lazily, so that importing the mechanisms never imports the optimizers (the layering of
    ``DESIGN.md`` section 3; ``tests/test_layering.py`` allows imports only in this shim).
    """
    if name in _MOVED_TO_SELECTION:
        from .. import selection as home
    elif name in _MOVED_TO_OPTIMIZE_HULL:
        from ..optimize import hull as home
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"sklearn_ldp.mechanisms.{name} is deprecated: import it from {home.__name__} "
        "(sklearn_ldp.mechanisms holds the mechanisms' math only).",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(home, name)
