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

from ._base.exact import PrivacyAudit, audit_privacy
from ._base.mechanism import Mechanism, mechanism_from_dict, mechanism_from_json
from .bassily.gaussian import GaussianMechanism
from .bassily.rejection import GaussianRejectionMechanism
from .central.matrix import MatrixMechanism, lower_bound
from .central.strategies import fourier_basis_strategy, tree_strategy, wavelet_strategy
from .factorization.mechanism import (
    FactorizationMechanism,
    optimal_reconstruction,
    per_user_variance,
    sample_complexity,
    svd_lower_bound,
)
from .marginals.em import InpEM
from .marginals.fourier import fourier_strategy
from .marginals.mechanisms import InpHT, InpPS, InpRR, MargHT, MarginalMechanism, MargPS, MargRR
from .numeric.one_bit import OneBitRandomizer
from .oracles.hadamard import HadamardResponse
from .oracles.hadamard_coefficient import HadamardRandomizedResponse
from .oracles.hadamard_layout import hadamard_strategy
from .oracles.local_hashing import BinaryLocalHashing, OptimizedLocalHashing
from .oracles.randomized_response import RandomizedResponse, randomized_response_strategy
from .oracles.subset_selection import SubsetSelection
from .oracles.unary import OptimizedUnaryEncoding, SymmetricUnaryEncoding, rappor_strategy
from .ranges.bounds import (
    flat_variance,
    haar_variance_bound,
    hierarchical_variance_bound,
    oracle_variance,
    recommend_branching,
)
from .ranges.haar import HaarHRR
from .ranges.hierarchical import hierarchical_strategy
from .ranges.tree import HierarchicalHistogram

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
                     "uniform_mechanism", "verify_dp"), "central.count"),
    **dict.fromkeys(("check_strategy", "privacy_ratio"), "factorization.mechanism"),
    **dict.fromkeys(("exponential_mechanism", "select_strategy"), "central.private_selection"),
    "sample_discrete_gaussian": "central.discrete_gaussian",
    **dict.fromkeys(("noise_multiplier", "total_squared_error"), "central.matrix"),
    "tree_consistency": "ranges.tree_structure",
    **dict.fromkeys(("build_marginal_mechanism", "MARGINAL_STRATEGIES"), "marginals.mechanisms"),
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
