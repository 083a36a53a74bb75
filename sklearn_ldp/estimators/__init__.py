"""Estimators that fit on LDP reports and answer queries."""

from .adaptive import AdaptiveQueryEstimator
from .workload import WorkloadEstimator

__all__ = ["AdaptiveQueryEstimator", "WorkloadEstimator"]
