"""Estimators that fit on LDP reports (or, for the central model, raw data) and answer queries.

One module per estimator; each module's docstring names the mechanism modules whose math it
uses (a reader goes README -> estimator -> the family folder of :mod:`sklearn_ldp.mechanisms`):

* :mod:`.workload` (``WorkloadEstimator``): any family; central model in
  :mod:`sklearn_ldp.mechanisms.central`;
* :mod:`.range` (``RangeQueryEstimator``): :mod:`sklearn_ldp.mechanisms.ranges`;
* :mod:`.marginal` (``MarginalEstimator``): :mod:`sklearn_ldp.mechanisms.marginals`;
* :mod:`.heavy_hitters` (``HeavyHitterEstimator``): :mod:`sklearn_ldp.mechanisms.heavy_hitters`;
* :mod:`.numeric` (``MeanEstimator``, ``DistributionEstimator``, ``AttributeHistogramEstimator``):
  :mod:`sklearn_ldp.mechanisms.numeric`, :mod:`sklearn_ldp.mechanisms.multi_attribute`;
* :mod:`.longitudinal` (``LongitudinalEstimator``): :mod:`sklearn_ldp.mechanisms.longitudinal`;
* :mod:`.adaptive` (``AdaptiveQueryEstimator``): :mod:`sklearn_ldp.mechanisms.numeric.one_bit`;
* :mod:`.count` (``CountMechanism``): :mod:`sklearn_ldp.mechanisms.central.count`;
* :mod:`.multi_range` (``MultiRangeEstimator``): :mod:`sklearn_ldp.mechanisms.multi_range`.
* :mod:`.set_valued` (``SetFrequencyEstimator``, ``KeyValueEstimator``):
  :mod:`sklearn_ldp.mechanisms.set_valued`."""

from .adaptive import AdaptiveQueryEstimator
from .count import CountMechanism
from .heavy_hitters import HeavyHitterEstimator, detectable_frequency
from .longitudinal import LongitudinalEstimator
from .marginal import MarginalEstimator
from .multi_range import MultiRangeEstimator
from .numeric import AttributeHistogramEstimator, DistributionEstimator, MeanEstimator
from .range import RangeQueryEstimator
from .set_valued import KeyValueEstimator, SetFrequencyEstimator
from .workload import WorkloadEstimator

__all__ = [
    "AdaptiveQueryEstimator",
    "AttributeHistogramEstimator",
    "CountMechanism",
    "DistributionEstimator",
    "HeavyHitterEstimator",
    "KeyValueEstimator",
    "detectable_frequency",
    "LongitudinalEstimator",
    "MarginalEstimator",
    "MeanEstimator",
    "MultiRangeEstimator",
    "RangeQueryEstimator",
    "SetFrequencyEstimator",
    "WorkloadEstimator",
]
