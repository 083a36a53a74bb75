"""Mechanisms: the mathematics of each strategy family, one module per family (no sklearn).

Nothing here runs an optimizer or builds a mechanism from a strategy name: that is the
selection layer, :mod:`sklearn_ldp.selection` (the hull projection is in
:mod:`sklearn_ldp.optimize.hull`). The internal helpers (the count-mechanism math, private
selection, discrete Gaussian sampling...) are imported from their submodule.
"""

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
from .marginals.base import MarginalMechanism
from .marginals.em import InpEM
from .marginals.fourier import fourier_strategy
from .marginals.input_perturbation import InpHT, InpPS, InpRR
from .marginals.marginal_perturbation import MargHT, MargPS, MargRR
from .numeric.one_bit import OneBitRandomizer
from .oracles.hadamard import HadamardResponse
from .oracles.hadamard_coefficient import HadamardRandomizedResponse
from .oracles.hadamard_layout import hadamard_strategy
from .oracles.histogram_encoding import (
    SummationHistogramEncoding,
    ThresholdingHistogramEncoding,
)
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
    "SummationHistogramEncoding",
    "ThresholdingHistogramEncoding",
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
