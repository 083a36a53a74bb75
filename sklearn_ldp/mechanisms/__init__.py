"""Mechanisms: the mathematics of each strategy family, one module per family (no sklearn)."""

from .base import Mechanism, mechanism_from_dict, mechanism_from_json
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
from .gaussian import GaussianMechanism, GaussianRejectionMechanism, project_onto_hull
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
from .matrix import (
    CENTRAL_STRATEGIES,
    MatrixMechanism,
    build_central_mechanism,
    central_strategy,
    exponential_mechanism,
    fourier_basis_strategy,
    lower_bound,
    noise_multiplier,
    sample_discrete_gaussian,
    select_strategy,
    total_squared_error,
    tree_strategy,
    wavelet_strategy,
)
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
from .strategies import BASELINES, STRATEGIES, baseline_mechanism, build_mechanism
from .subset_selection import SubsetSelection
from .unary import OptimizedUnaryEncoding, SymmetricUnaryEncoding, rappor_strategy

__all__ = [
    "BASELINES",
    "BinaryLocalHashing",
    "CENTRAL_STRATEGIES",
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
    "STRATEGIES",
    "SubsetSelection",
    "SymmetricUnaryEncoding",
    "baseline_mechanism",
    "build_central_mechanism",
    "build_marginal_mechanism",
    "build_mechanism",
    "central_strategy",
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
    "project_onto_hull",
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
