"""sklearn_ldp: workloads of counting queries under (local) differential privacy.

Quick start::

    from sklearn.pipeline import make_pipeline
    from sklearn_ldp import LDPEncoder, WorkloadEstimator, workloads

    dom = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}
    W = workloads.marginals(dom, k=2)
    pipe = make_pipeline(LDPEncoder(categories=dom, strategy="optimized", epsilon=1.0,
                                    workload=W, random_state=0),
                         WorkloadEstimator(workload=W))
"""

from . import binning, longitudinal, mechanisms, workloads
from .deploy import budget, distributed, io
from .deploy.budget import BudgetExceededError, PrivacyLedger
from .deploy.collect import reports_from_client, stack_client_reports
from .deploy.limits import FileLockedError, UnverifiedFileWarning, get_limits, limits, set_limits
from .domain import Domain
from .encoder import LDPEncoder
from .estimators import (
    AdaptiveQueryEstimator,
    AttributeHistogramEstimator,
    CountMechanism,
    DistributionEstimator,
    HeavyHitterEstimator,
    LongitudinalEstimator,
    MarginalEstimator,
    MeanEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
    detectable_frequency,
)
from .longitudinal import LongitudinalEncoder
from .mechanisms import mechanism_from_json
from .model_selection import expected_error_scorer
from .reports import AggregatedReports, LDPReports

__version__ = "0.1.0"

__all__ = [
    "AdaptiveQueryEstimator",
    "AggregatedReports",
    "AttributeHistogramEstimator",
    "BudgetExceededError",
    "CountMechanism",
    "DistributionEstimator",
    "Domain",
    "FileLockedError",
    "HeavyHitterEstimator",
    "LDPEncoder",
    "LDPReports",
    "LongitudinalEncoder",
    "LongitudinalEstimator",
    "MarginalEstimator",
    "MeanEstimator",
    "PrivacyLedger",
    "RangeQueryEstimator",
    "UnverifiedFileWarning",
    "WorkloadEstimator",
    "binning",
    "budget",
    "detectable_frequency",
    "distributed",
    "expected_error_scorer",
    "get_limits",
    "io",
    "limits",
    "longitudinal",
    "mechanism_from_json",
    "mechanisms",
    "reports_from_client",
    "set_limits",
    "stack_client_reports",
    "workloads",
]
