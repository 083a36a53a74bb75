"""One vocabulary across the package (issue 16, item 7).

* ``sklearn_ldp.mechanisms`` exports what users need; the internal math that left its
  ``__all__`` imports from the submodule that defines it only (no shim left behind).
* ``n_cells`` is the public name of the number of domain cells everywhere (``Domain.size`` and
  the mechanisms' ``n_inputs`` are aliases).
* ``expected_error_`` is a pandas DataFrame, one row per answer, with the columns
  ``worst_case`` and ``average_case``, in every estimator that answers queries.
"""

import warnings

import numpy as np
import pandas as pd
import pytest

import sklearn_ldp.mechanisms as mechanisms
from sklearn_ldp import (
    AdaptiveQueryEstimator,
    CountMechanism,
    Domain,
    LDPEncoder,
    RangeQueryEstimator,
    WorkloadEstimator,
    workloads,
)

# The public surface decided in issue 16, item 7.
PUBLIC = {
    "Mechanism", "FactorizationMechanism", "RandomizedResponse", "SymmetricUnaryEncoding",
    "OptimizedUnaryEncoding", "OptimizedLocalHashing", "BinaryLocalHashing",
    "HadamardResponse", "HadamardRandomizedResponse", "SubsetSelection",
    "HierarchicalHistogram", "HaarHRR", "GaussianMechanism", "GaussianRejectionMechanism",
    "OneBitRandomizer", "MarginalMechanism", "InpRR", "InpPS", "InpHT", "MargRR", "MargPS",
    "MargHT", "InpEM", "MatrixMechanism",
    "SummationHistogramEncoding", "ThresholdingHistogramEncoding",
    "mechanism_from_dict", "mechanism_from_json", "audit_privacy", "PrivacyAudit",
    "sample_complexity", "svd_lower_bound", "lower_bound", "per_user_variance",
    "optimal_reconstruction", "recommend_branching", "hierarchical_variance_bound",
    "haar_variance_bound", "flat_variance", "oracle_variance",
    "randomized_response_strategy", "rappor_strategy", "hadamard_strategy",
    "hierarchical_strategy", "fourier_strategy", "tree_strategy", "wavelet_strategy",
    "fourier_basis_strategy",
}

# Name that left __all__ -> the submodule that defines it (its new home).
REMOVED = {
    **dict.fromkeys(["check_properties", "choose_mechanism", "enforce_dp", "expected_loss",
                     "explicit_fair_mechanism", "geometric_mechanism", "l0_error",
                     "privacy_loss", "randomized_response_count", "symmetrize",
                     "uniform_mechanism", "verify_dp"], "sklearn_ldp.mechanisms.central.count"),
    "check_strategy": "sklearn_ldp.mechanisms.factorization.mechanism",
    "privacy_ratio": "sklearn_ldp.mechanisms.factorization.mechanism",
    "exponential_mechanism": "sklearn_ldp.mechanisms.central.private_selection",
    "select_strategy": "sklearn_ldp.mechanisms.central.private_selection",
    "sample_discrete_gaussian": "sklearn_ldp.mechanisms.central.discrete_gaussian",
    "noise_multiplier": "sklearn_ldp.mechanisms.central.matrix",
    "total_squared_error": "sklearn_ldp.mechanisms.central.matrix",
    "tree_consistency": "sklearn_ldp.mechanisms.ranges.tree_structure",
    "build_marginal_mechanism": "sklearn_ldp.mechanisms.marginals.base",
    "MARGINAL_STRATEGIES": "sklearn_ldp.mechanisms.marginals.base",
}


def test_mechanisms_exports_exactly_the_public_surface():
    assert set(mechanisms.__all__) == PUBLIC
    assert len(mechanisms.__all__) == len(PUBLIC)  # no duplicates
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the public names import without any warning
        for name in mechanisms.__all__:
            assert getattr(mechanisms, name) is not None
    assert not set(REMOVED) & set(mechanisms.__all__)


@pytest.mark.parametrize("name, home", sorted(REMOVED.items()))
def test_removed_names_import_from_their_home_only(name, home):
    assert not hasattr(mechanisms, name)
    with pytest.raises(ImportError):
        exec(f"from sklearn_ldp.mechanisms import {name}", {})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        exec(f"from {home} import {name}", {})


def test_unknown_names_still_raise_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        mechanisms.no_such_name  # noqa: B018


# ---------------------------------------------------------------------- sizes
def test_n_cells_is_the_public_size_everywhere():
    dom = Domain({"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]})
    assert dom.n_cells == dom.size == 6
    assert workloads.marginals(dom, k=1).n_cells == 6
    for mechanism in (mechanisms.RandomizedResponse(6, 1.0),
                      mechanisms.HierarchicalHistogram(6, 1.0),
                      mechanisms.InpHT(6, 1.0, (3, 2), 2)):
        assert mechanism.n_cells == mechanism.n_inputs == 6
    encoder = LDPEncoder(categories=dom.categories, strategy="oue").fit()
    assert encoder.mechanism_.n_cells == encoder.domain_.n_cells == encoder.workload_.n_cells
    with pytest.raises(AttributeError):
        mechanisms.RandomizedResponse(6, 1.0).n_cells = 7  # read-only: n_inputs is stored


# ---------------------------------------------------------------------- expected_error_
def _is_error_table(table, n_rows):
    return (isinstance(table, pd.DataFrame) and table.shape == (n_rows, 2)
            and list(table.columns) == ["worst_case", "average_case"]
            and bool(np.all(table["worst_case"] >= table["average_case"] * (1 - 1e-12))))


def test_expected_error_is_one_type_in_every_estimator():
    dom = {"x": list(range(8))}
    df = pd.DataFrame({"x": np.random.default_rng(0).integers(0, 8, 2000)})
    encoder = LDPEncoder(categories=dom, strategy="hierarchical", epsilon=1.0, random_state=0)
    reports = encoder.fit_transform(df)
    workload = WorkloadEstimator(workload=workloads.prefix(8)).fit(reports)
    assert _is_error_table(workload.expected_error_, 8)
    assert workload.expected_error_.index.equals(workload.answers_.index)
    ranges = RangeQueryEstimator().fit(reports)
    assert _is_error_table(ranges.expected_error_, 8)
    adaptive = AdaptiveQueryEstimator(categories=dom, random_state=0).fit(df)
    assert _is_error_table(adaptive.expected_error_, 8)
    assert adaptive.expected_error_.index.equals(adaptive.answers_.index)
    count = CountMechanism(group_size=4).fit()
    assert _is_error_table(count.expected_error_, 1)


def test_encoder_totals_have_the_workload_estimators_name_and_type():
    dom = {"x": list(range(8))}
    encoder = LDPEncoder(categories=dom, strategy="oue", workload="prefix").fit()
    totals = encoder.expected_total_error_
    assert isinstance(totals, dict) and set(totals) == {"worst_case", "average_case"}
    assert totals["worst_case"] == pytest.approx(
        encoder.mechanism_.expected_error(encoder.workload_.gram(), n_users=1)["worst_case"])
    # expected_error_ is per query (as in WorkloadEstimator); the average cases add up.
    assert _is_error_table(encoder.expected_error_, 8)
    assert encoder.expected_error_.index.equals(encoder.workload_.labels)
    assert encoder.expected_error_["average_case"].sum() == pytest.approx(totals["average_case"])
    marginal = LDPEncoder(categories={"a": [0, 1], "b": [0, 1]}, strategy="inp_ht").fit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the marginal table is not deprecated
        assert isinstance(marginal.expected_error_, pd.DataFrame)
    assert marginal.expected_total_error_ is None


def test_matrix_mechanism_has_n_cells():
    import numpy as np

    from sklearn_ldp.mechanisms import MatrixMechanism
    assert MatrixMechanism(np.eye(3), 1.0, 1e-6).n_cells == 3
