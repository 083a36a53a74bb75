"""sklearn_ldp: workloads of counting queries under (local) differential privacy.

Quick start::

    from sklearn.pipeline import make_pipeline
    from sklearn_ldp import LDPEncoder, WorkloadEstimator, workloads

    dom = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}
    W = workloads.marginals(dom, k=2)
    pipe = make_pipeline(LDPEncoder(categories=dom, strategy="optimized", epsilon=1.0,
                                    workload=W, random_state=0),
                         WorkloadEstimator(workload=W))

The public names are loaded on first use (PEP 562): ``import sklearn_ldp`` imports neither
scikit-learn, SciPy, pandas nor the optional dependencies, so that a script or a command line
that needs one estimator does not pay for all of them. ``from sklearn_ldp import X``,
``sklearn_ldp.X`` and ``dir(sklearn_ldp)`` work as for eagerly imported names.
"""

import importlib
import sys

__version__ = "0.1.0"

# The public subpackages and modules -> their module (relative to this package), and each other
# public name -> the module that defines it. To add a public name, add its line here.
_MODULES = {
    "binning": ".binning",
    "budget": ".deploy.budget",
    "distributed": ".deploy.distributed",
    "io": ".deploy.io",
    "longitudinal": ".longitudinal",
    "mechanisms": ".mechanisms",
    "workloads": ".workloads",
}
_OBJECTS = {
    "StrategyComparisonDisplay": ".display",
    "MeanDisplay": ".display",
    "LongitudinalDisplay": ".display",
    "HistogramDisplay": ".display",
    "HeavyHitterDisplay": ".display",
    "CDFDisplay": ".display",
    "AdaptiveQueryEstimator": ".estimators",
    "AggregatedReports": ".reports",
    "AttributeHistogramEstimator": ".estimators",
    "BudgetExceededError": ".deploy.budget",
    "CountMechanism": ".estimators",
    "DistributionEstimator": ".estimators",
    "Domain": ".domain",
    "FileLockedError": ".deploy.limits",
    "HeavyHitterEstimator": ".estimators",
    "LDPEncoder": ".encoder",
    "LDPReports": ".reports",
    "LongitudinalEncoder": ".longitudinal",
    "LongitudinalEstimator": ".estimators",
    "MarginalEstimator": ".estimators",
    "MeanEstimator": ".estimators",
    "MultiRangeEstimator": ".estimators",
    "PrivacyLedger": ".deploy.budget",
    "RangeQueryEstimator": ".estimators",
    "UnverifiedFileWarning": ".deploy.limits",
    "WorkloadEstimator": ".estimators",
    "detectable_frequency": ".estimators",
    "expected_error_scorer": ".model_selection",
    "get_limits": ".deploy.limits",
    "limits": ".deploy.limits",
    "local_epsilon_for": ".mechanisms.shuffle",
    "margin_of_error": ".planning",
    "mechanism_from_json": ".mechanisms",
    "reports_from_client": ".deploy.collect",
    "set_limits": ".deploy.limits",
    "shuffle_epsilon": ".mechanisms.shuffle",
    "stack_client_reports": ".deploy.collect",
    "users_needed": ".planning",
    # Set-valued data (SVIM)
    "SetFrequencyEstimator": ".estimators",
    "KeyValueEstimator": ".estimators",
    # RAPPOR on strings (Bloom filters, cohorts): the estimator and the explicit parameters.
    "RapporEstimator": ".estimators.rappor",
    "RapporMechanism": ".mechanisms.heavy_hitters.rappor",
    # Frequent itemsets of set-valued data (SVSM)
    "ItemsetEstimator": ".estimators.itemsets",
}

__all__ = sorted([*_MODULES, *_OBJECTS])


def __getattr__(name):
    """Import the module behind a public name on first use, and keep the result."""
    if name in _MODULES:
        value = importlib.import_module(_MODULES[name], __name__)
    elif name in _OBJECTS:
        value = getattr(importlib.import_module(_OBJECTS[name], __name__), name)
    else:
        # name and obj let Python's traceback suggest the nearest public name
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}", name=name,
                             obj=sys.modules[__name__])
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
