"""Estimators that fit on LDP reports (or, for the central model, raw data) and answer queries."""

from .adaptive import AdaptiveQueryEstimator
from .count import CountMechanism
from .heavy_hitters import HeavyHitterEstimator
from .longitudinal import LongitudinalEstimator
from .marginal import MarginalEstimator
from .numeric import AttributeHistogramEstimator, DistributionEstimator, MeanEstimator
from .range import RangeQueryEstimator
from .workload import WorkloadEstimator

__all__ = [
    "AdaptiveQueryEstimator",
    "AttributeHistogramEstimator",
    "CountMechanism",
    "DistributionEstimator",
    "HeavyHitterEstimator",
    "LongitudinalEstimator",
    "MarginalEstimator",
    "MeanEstimator",
    "RangeQueryEstimator",
    "WorkloadEstimator",
]
