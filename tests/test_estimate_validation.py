"""Aggregates are checked where they are decoded (issue 15): shape, counts that are
non-negative integers up to 2^62, consistent totals; simulations refuse more than 2^62
users and never wrap; partial_fit refuses batches of another mechanism, domain or workload."""

import numpy as np
import pytest

from sklearn_ldp import Domain, MarginalEstimator, RangeQueryEstimator, WorkloadEstimator, workloads
from sklearn_ldp.mechanisms import (
    GaussianMechanism,
    GaussianRejectionMechanism,
    HaarHRR,
    HadamardRandomizedResponse,
    HadamardResponse,
    HierarchicalHistogram,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
    SymmetricUnaryEncoding,
)
from sklearn_ldp.mechanisms._base.counts import MAX_REPORTS, add_counts, exact_total
from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism
from sklearn_ldp.reports import AggregatedReports, LDPReports

COUNT_MECHANISMS = {
    "randomized_response": RandomizedResponse(5, 1.0),
    "oue": OptimizedUnaryEncoding(5, 1.0),
    "subset_selection": SubsetSelection(5, 1.0, subset_size=2),
    "hadamard": HadamardResponse(5, 1.0),
    "hrr": HadamardRandomizedResponse(5, 1.0),
    "haar": HaarHRR(5, 1.0),
    "hierarchical": HierarchicalHistogram(5, 1.0, branching=2, oracle="hrr"),
    "inp_ht": build_marginal_mechanism("inp_ht", (2, 3), 1.0, 2),
}


def _statistic(mechanism, n_users=50, seed=0):
    rng = np.random.default_rng(seed)
    return mechanism.aggregate(mechanism.randomize(rng.integers(0, mechanism.n_inputs,
                                                                n_users), rng))


def _decode(mechanism, statistic):
    if hasattr(mechanism, "estimate_marginal"):
        return mechanism.estimate_marginal(statistic, (0, 1))
    return mechanism.estimate(statistic)


@pytest.mark.parametrize("kind", list(COUNT_MECHANISMS))
def test_count_statistics_are_validated_where_they_are_decoded(kind):
    mechanism = COUNT_MECHANISMS[kind]
    statistic = _statistic(mechanism)
    _decode(mechanism, statistic)  # a real aggregate decodes
    assert mechanism.n_reports(statistic) == 50
    index = int(np.flatnonzero(statistic)[-1])
    negative = statistic.copy()
    negative[index] = -3
    with pytest.raises(ValueError, match=rf"entry {index} is -3|non-negative|inconsistent"):
        _decode(mechanism, negative)
    with pytest.raises(ValueError):
        mechanism.n_reports(negative)
    with pytest.raises(ValueError, match="shape|entries|output counts"):
        _decode(mechanism, statistic[:-1])
    huge = statistic.copy()
    huge[index] = MAX_REPORTS + 1
    with pytest.raises(ValueError, match="2\\^62|inconsistent|supported by"):
        _decode(mechanism, huge)
    for bad in (statistic.astype(object), statistic.astype(bool)):
        with pytest.raises(ValueError, match="integer counts|holds counts"):
            _decode(mechanism, bad)
    nan = statistic.astype(float)
    nan[index] = np.nan
    with pytest.raises(ValueError, match=f"entry {index} is nan"):
        _decode(mechanism, nan)


def test_support_counts_must_be_consistent_with_the_number_of_reports():
    oue = OptimizedUnaryEncoding(4, 1.0)
    with pytest.raises(ValueError, match=r"counts 3 reports, but cell 1 is supported by 5"):
        oue.estimate(np.array([0, 5, 1, 0, 3]))
    oue.estimate(np.array([3, 3, 0, 3, 3]))  # every bit set in every report: consistent
    rr = RandomizedResponse(4, 1.0)
    with pytest.raises(ValueError, match=r"counts 5 reports, but its support counts sum to 4"):
        rr.estimate(np.array([1, 1, 1, 1, 5]))
    subset = SubsetSelection(4, 1.0, subset_size=2)
    with pytest.raises(ValueError, match=r"sum to 5, not 6"):
        subset.estimate(np.array([2, 2, 1, 0, 3]))
    # An expected statistic (floats, for exact unbiasedness checks) decodes when consistent.
    expected = np.append(rr.strategy_matrix() @ np.array([1.0, 2.0, 0.0, 1.0]), 4.0)
    np.testing.assert_allclose(rr.estimate(expected), [1, 2, 0, 1], atol=1e-12)
    with pytest.raises(ValueError, match="sum to"):
        rr.estimate(expected * np.array([1, 1, 1, 1.5, 1]))


def test_gaussian_statistics_are_bounded_by_their_number_of_reports():
    mechanism = GaussianMechanism(3, 1.0, delta=1e-6)
    statistic = _statistic(mechanism)
    mechanism.estimate(statistic)
    for entry, value, message in ((3, -1.0, "entry 3 is -1.0"), (3, 2.5, "entry 3 is 2.5"),
                                  (0, np.inf, "entry 0 is inf"),
                                  (1, 1e9, "coordinate 1 of the sum is 1000000000.0")):
        bad = statistic.copy()
        bad[entry] = value
        with pytest.raises(ValueError, match=message):
            mechanism.estimate(bad)
    pure = GaussianRejectionMechanism(3, 1.0)
    statistic = _statistic(pure)
    pure.estimate(statistic)
    bad = statistic.copy()
    bad[-2] = bad[-1] + 1
    with pytest.raises(ValueError, match="more kept than sent"):
        pure.estimate(bad)
    with pytest.raises(ValueError, match="more kept than sent"):
        pure.n_kept(bad)


# ---------------------------------------------------------------------- simulation
def test_simulations_refuse_more_than_2_to_the_62_users():
    mechanism = OptimizedUnaryEncoding(3, 1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="at most 2\\^62 = 4611686018427387904 users in all"):
        mechanism.simulate_statistic(np.array([2**62, 1, 0]), rng)
    with pytest.raises(ValueError, match="at most 2\\^62 users; cell 0"):
        mechanism.simulate_statistic(np.array([2**63 - 1, 0, 0]), rng)
    with pytest.raises(ValueError, match="non-negative; cell 2 has -1"):
        mechanism.simulate_statistic(np.array([1, 1, -1]), rng)
    # uint64 counts past int64 are refused, not wrapped to negative numbers.
    with pytest.raises(ValueError, match="at most 2\\^62"):
        mechanism.simulate_statistic(np.array([2**64 - 1, 0, 0], dtype=np.uint64), rng)
    # Three counts of 2^61 each sum to 1.5 * 2^62: refused, although int64 holds each.
    with pytest.raises(ValueError, match="got 6917529027641081856"):
        RandomizedResponse(3, 1.0).simulate_statistic(np.full(3, 2**61), rng)


@pytest.mark.parametrize("mechanism", [RandomizedResponse(5, 1.0), SymmetricUnaryEncoding(5, 1.0),
                                       HadamardResponse(5, 1.0), HaarHRR(5, 1.0),
                                       HadamardRandomizedResponse(5, 1.0)],
                         ids=lambda m: m.kind)
def test_simulating_2_to_the_62_users_counts_exactly(mechanism):
    """At the limit every count fits in int64 and totals are exact: the statistic is
    consistent (randomized response: its support counts sum to N exactly, which a float
    accumulation would round)."""
    counts = np.array([2**61, 2**60, 2**60 - 5, 3, 2])
    assert exact_total(counts) == 2**62
    statistic = mechanism.simulate_statistic(counts, np.random.default_rng(1))
    assert statistic.dtype == np.int64 and statistic.min() >= 0
    assert mechanism.n_reports(statistic) == 2**62
    estimate = mechanism.estimate(statistic)
    assert abs(estimate.sum() / 2**62 - 1) < 1e-9
    assert abs(estimate[0] / 2**61 - 1) < 1e-6  # within many standard errors of 2^-31


def test_add_counts_refuses_instead_of_wrapping():
    a = np.array([MAX_REPORTS - 1, 5])
    assert add_counts(a, np.array([1, 5]), "x").tolist() == [MAX_REPORTS, 10]
    with pytest.raises(ValueError, match="more than 2\\^62 reports in entry 0"):
        add_counts(a, np.array([2, 0]), "x")
    assert exact_total(np.full(4, MAX_REPORTS)) == 4 * MAX_REPORTS  # no int64 wrap


# ---------------------------------------------------------------------- estimators
def _aggregate(mechanism, statistic):
    return AggregatedReports(np.asarray(statistic), mechanism)


def test_estimators_validate_aggregated_statistics():
    """Refused whether AggregatedReports checks them on construction or the estimator when
    it reads them (both do: an aggregate may also be built before either check existed)."""
    mechanism = RandomizedResponse(3, 1.0)
    with pytest.raises(ValueError, match=r"negative.*-2|-2.*negative|entry 1 is -2"):
        WorkloadEstimator().fit(_aggregate(mechanism, [5, -2, 1, 4]))
    with pytest.raises(ValueError, match="sum to 6|exceeds the number of reports"):
        WorkloadEstimator().fit(_aggregate(mechanism, [5, 0, 1, 4]))
    with pytest.raises(ValueError, match="sum to 3"):
        WorkloadEstimator().fit(_aggregate(mechanism, [1, 1, 1, 4]))
    with pytest.raises(ValueError, match="integer counts"):
        WorkloadEstimator().fit(_aggregate(mechanism, [2.0, 1.0, 1.0, 4.0]))
    with pytest.raises(ValueError, match="negative"):
        RangeQueryEstimator().fit(_aggregate(HaarHRR(4, 1.0), [-1] + [0] * 5))
    # Two aggregates whose sum would count more than 2^62 reports: refused, not wrapped.
    big = [MAX_REPORTS - 10, 0, 0, MAX_REPORTS - 10]
    estimator = WorkloadEstimator().fit(_aggregate(mechanism, big))
    with pytest.raises(ValueError, match="more than 2\\^62 reports"):
        estimator.partial_fit(_aggregate(mechanism, big))
    assert estimator.n_users_ == MAX_REPORTS - 10  # the refused batch changed nothing


def test_partial_fit_refuses_another_mechanism_domain_or_workload():
    domain = Domain({"x": list("abcd")})
    other_domain = Domain({"y": list("abcd")})
    mechanism = OptimizedUnaryEncoding(4, 1.0)
    rng = np.random.default_rng(0)
    rows = mechanism.randomize(rng.integers(0, 4, 100), rng)
    first = LDPReports(rows, mechanism, domain, workloads.histogram(4))
    estimator = WorkloadEstimator().fit(first)
    with pytest.raises(ValueError, match=r"partial_fit: these reports come from a different "
                                         r"mechanism .*fingerprint"):
        estimator.partial_fit(LDPReports(rows, OptimizedUnaryEncoding(4, 2.0), domain))
    with pytest.raises(ValueError, match=r"partial_fit: these reports are over the domain "
                                         r"Domain.*'y'.* the first batch over"):
        estimator.partial_fit(LDPReports(rows, mechanism, other_domain))
    with pytest.raises(ValueError, match=r"partial_fit: these reports carry the workload "
                                         r".*prefix.*the first batch .*histogram"):
        estimator.partial_fit(LDPReports(rows, mechanism, domain, workloads.prefix(4)))
    assert estimator.n_users_ == 100  # nothing was added
    estimator.partial_fit(LDPReports(rows, mechanism, domain, workloads.histogram(4)))
    estimator.partial_fit(LDPReports(rows, mechanism))  # no claim about the cells: accepted
    assert estimator.n_users_ == 300
    # The same checks in the other estimators.
    ranges = RangeQueryEstimator().fit(first)
    with pytest.raises(ValueError, match="over the domain"):
        ranges.partial_fit(LDPReports(rows, mechanism, other_domain))
    marginal = build_marginal_mechanism("inp_ps", (2, 2), 1.0, 2)
    both = Domain({"a": [0, 1], "b": [0, 1]})
    marginal_rows = marginal.randomize(rng.integers(0, 4, 50), rng)
    fitted = MarginalEstimator().fit(LDPReports(marginal_rows, marginal, both))
    with pytest.raises(ValueError, match="over the domain"):
        fitted.partial_fit(LDPReports(marginal_rows, marginal,
                                      Domain({"a": [0, 1], "c": [0, 1]})))
    with pytest.raises(ValueError, match="different mechanism"):
        fitted.partial_fit(LDPReports(marginal_rows,
                                      build_marginal_mechanism("inp_ps", (2, 2), 2.0, 2), both))


def test_factorization_sum_of_squared_answers_refuses_an_impossible_statistic():
    from sklearn_ldp.mechanisms import FactorizationMechanism, randomized_response_strategy
    mechanism = FactorizationMechanism(randomized_response_strategy(3, 1.0), 1.0)
    with pytest.raises(ValueError, match="non-negative"):
        mechanism.sum_of_squared_answers(np.array([-5, 2, 1]), np.eye(3))
