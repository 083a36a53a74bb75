"""Mechanisms: the mathematics of each strategy family, one module per family (no sklearn).

Nothing here runs an optimizer or builds a mechanism from a strategy name: that is the
selection layer, :mod:`sklearn_ldp.selection`. The names that moved there (and the hull
projection, now in :mod:`sklearn_ldp.optimize.hull`) are still importable from here, with a
DeprecationWarning (see ``__getattr__`` below), and so are the internal helpers that left
``__all__`` (the count-mechanism math, private selection, discrete Gaussian sampling...):
import those from their submodule.
"""

import importlib
import warnings

from ._exact import PrivacyAudit, audit_privacy
from .base import Mechanism, mechanism_from_dict, mechanism_from_json
from .central_strategies import fourier_basis_strategy, tree_strategy, wavelet_strategy
from .factorization import (
    FactorizationMechanism,
    optimal_reconstruction,
    per_user_variance,
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
from .marginals import InpHT, InpPS, InpRR, MargHT, MarginalMechanism, MargPS, MargRR
from .matrix import MatrixMechanism, lower_bound
from .randomized_response import RandomizedResponse, randomized_response_strategy
from .range_bounds import (
    flat_variance,
    haar_variance_bound,
    hierarchical_variance_bound,
    oracle_variance,
    recommend_branching,
)
from .range_tree import HierarchicalHistogram
from .scalar import OneBitRandomizer
from .subset_selection import SubsetSelection
from .unary import OptimizedUnaryEncoding, SymmetricUnaryEncoding, rappor_strategy

# What users need: the mechanism classes, loading a specification, the analysis to run before
# collecting, and the strategy matrices (issue 16, item 7). The rest is internal math, reached
# from its submodule (or through the estimators and the selection layer).
__all__ = [
    # mechanism classes
    "Mechanism",
    "FactorizationMechanism",
    "RandomizedResponse",
    "SymmetricUnaryEncoding",
    "OptimizedUnaryEncoding",
    "OptimizedLocalHashing",
    "BinaryLocalHashing",
    "HadamardResponse",
    "HadamardRandomizedResponse",
    "SubsetSelection",
    "HierarchicalHistogram",
    "HaarHRR",
    "GaussianMechanism",
    "GaussianRejectionMechanism",
    "OneBitRandomizer",
    "MarginalMechanism",
    "InpRR",
    "InpPS",
    "InpHT",
    "MargRR",
    "MargPS",
    "MargHT",
    "InpEM",
    "MatrixMechanism",
    # loading a specification
    "mechanism_from_dict",
    "mechanism_from_json",
    # the exact privacy audit of the law a mechanism samples
    "audit_privacy",
    "PrivacyAudit",
    # analysis before collecting
    "sample_complexity",
    "svd_lower_bound",
    "lower_bound",
    "per_user_variance",
    "optimal_reconstruction",
    "recommend_branching",
    "hierarchical_variance_bound",
    "haar_variance_bound",
    "flat_variance",
    "oracle_variance",
    # strategy matrices
    "randomized_response_strategy",
    "rappor_strategy",
    "hadamard_strategy",
    "hierarchical_strategy",
    "fourier_strategy",
    "tree_strategy",
    "wavelet_strategy",
    "fourier_basis_strategy",
]

# Names that moved out of this package, importable from here until their removal.
_MOVED_TO_SELECTION = ("BASELINES", "CENTRAL_STRATEGIES", "STRATEGIES", "baseline_mechanism",
                       "build_central_mechanism", "build_mechanism", "central_strategy")
_MOVED_TO_OPTIMIZE_HULL = ("project_onto_hull",)
# Names that left the public surface of this package (issue 16, item 7): internal math, still
# importable from here with a DeprecationWarning for one release, and without warning from
# the submodule that defines it.
_PRIVATE_HOME = {
    **dict.fromkeys(("check_properties", "choose_mechanism", "enforce_dp", "expected_loss",
                     "explicit_fair_mechanism", "geometric_mechanism", "l0_error",
                     "privacy_loss", "randomized_response_count", "symmetrize",
                     "uniform_mechanism", "verify_dp"), "count"),
    **dict.fromkeys(("check_strategy", "privacy_ratio"), "factorization"),
    **dict.fromkeys(("exponential_mechanism", "select_strategy"), "private_selection"),
    "sample_discrete_gaussian": "discrete_gaussian",
    **dict.fromkeys(("noise_multiplier", "total_squared_error"), "matrix"),
    "tree_consistency": "range_tree",
    **dict.fromkeys(("build_marginal_mechanism", "MARGINAL_STRATEGIES"), "marginals"),
}


def __getattr__(name):
    """Deprecated names: imported lazily from their new home, with a DeprecationWarning.

    Lazily, so that importing the mechanisms never imports the optimizers (the layering of
    ``DESIGN.md`` section 3; ``tests/test_layering.py`` allows imports only in this shim).
    """
    if name in _PRIVATE_HOME:
        home = importlib.import_module(f"{__name__}.{_PRIVATE_HOME[name]}")
        warnings.warn(
            f"sklearn_ldp.mechanisms.{name} is deprecated and will be removed from "
            f"sklearn_ldp.mechanisms in the next release: import it from {home.__name__} "
            "(internal math; sklearn_ldp.mechanisms exports the mechanisms and the analysis "
            "users need).",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(home, name)
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
