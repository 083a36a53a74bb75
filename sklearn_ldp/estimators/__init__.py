"""Estimators that fit on LDP reports and answer queries."""

from .workload import WorkloadEstimator

__all__ = ["WorkloadEstimator"]
