"""users_needed / margin_of_error: margins in the answers' units, checked by simulation.

Coverage tests: ``R`` replications of a collection (fixed seeds); the share of replications
whose answer lies within the stated 95% margin of the truth is 0.95 up to
``4 sqrt(0.95 * 0.05 / R)`` (the binomial standard deviation of the coverage), plus 0.01
for the normal approximation at these sizes. The data are those the margin is computed for:
every user of the type with the largest variance for the worst case, users spread evenly for
the average case.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ldp import (
    Domain,
    LDPEncoder,
    LDPReports,
    LongitudinalEncoder,
    MeanEstimator,
    WorkloadEstimator,
    workloads,
)
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.planning import margin_of_error, per_user_variance, users_needed, z_value

REPLICATIONS = 600
TOLERANCE = 4 * math.sqrt(0.95 * 0.05 / REPLICATIONS) + 0.01


def _coverage(hits):
    return float(np.mean(hits))


def _worst_type_coverage(encoder, queries, n_users, query=0, seed=0):
    """Coverage of query ``query``'s margin with every user of its worst type."""
    workload = queries
    margins = margin_of_error(encoder, n_users, queries=workload, per_query=True)
    W = workload.toarray()
    variances = encoder.mechanism_.query_variance(W[query:query + 1])[0]
    worst_type = int(np.argmax(variances))
    counts = np.zeros(encoder.mechanism_.n_inputs, dtype=np.int64)
    counts[worst_type] = n_users
    truth = W[query] @ counts / n_users
    rng = np.random.default_rng(seed)
    hits = []
    for _ in range(REPLICATIONS):
        statistic = encoder.mechanism_.simulate_statistic(counts, rng)
        answer = W[query] @ encoder.mechanism_.estimate(statistic) / n_users
        hits.append(abs(answer - truth) <= margins.iloc[query])
    return _coverage(hits)


def test_histogram_coverage_at_95_percent():
    encoder = LDPEncoder(categories={"a": list("abcde")}, strategy="randomized_response",
                         epsilon=1.0).fit()
    W = workloads.histogram(encoder.domain_)
    assert abs(_worst_type_coverage(encoder, W, 3000) - 0.95) <= TOLERANCE


def test_range_workload_coverage_at_95_percent():
    encoder = LDPEncoder(categories={"m": list(range(32))}, strategy="hierarchical",
                         oracle="oue", epsilon=1.0).fit()
    W = workloads.ranges(encoder.domain_, [(3, 20), (0, 31), (10, 11)])
    assert abs(_worst_type_coverage(encoder, W, 3000, query=0, seed=1) - 0.95) <= TOLERANCE


def test_mean_coverage_at_95_percent():
    # Values spread evenly over the bounds: the average case is then the exact variance.
    n_users = 2000
    encoder = LDPEncoder(bounds={"x": (0.0, 10.0)}, strategy="hybrid", epsilon=1.0,
                         random_state=3).fit()
    margin = margin_of_error(encoder, n_users, kind="average_case")
    values = pd.DataFrame({"x": (np.arange(n_users) + 0.5) * 10.0 / n_users})
    truth = float(values["x"].mean())
    hits = []
    for _ in range(REPLICATIONS // 2):  # per-user draws: fewer replications, same tolerance
        mean = MeanEstimator().fit(encoder.transform(values)).mean_["x"]
        hits.append(abs(mean - truth) <= margin)
    tolerance = 4 * math.sqrt(0.95 * 0.05 / (REPLICATIONS // 2)) + 0.01
    assert abs(_coverage(hits) - 0.95) <= tolerance


@pytest.mark.parametrize("margin", [0.05, 0.01, 0.003])
@pytest.mark.parametrize("simultaneous", [False, True])
def test_users_needed_reaches_the_margin(margin, simultaneous):
    encoder = LDPEncoder(categories={"m": list(range(16))}, strategy="hierarchical",
                         epsilon=1.0)
    n = users_needed(encoder, margin, queries="prefix", simultaneous=simultaneous)
    assert margin_of_error(encoder, n, queries="prefix", simultaneous=simultaneous) <= margin
    assert margin_of_error(encoder, n - 1, queries="prefix",
                           simultaneous=simultaneous) > margin


def test_margin_is_z_times_the_analytic_standard_error():
    encoder = LDPEncoder(categories={"a": list("abc")}, strategy="randomized_response",
                         epsilon=1.0).fit()
    n_users = 5000
    worst = encoder.expected_error_["worst_case"]  # per user, counts squared
    expected = 1.959964 * np.sqrt(worst.to_numpy() / n_users)
    got = margin_of_error(encoder, n_users, per_query=True)
    np.testing.assert_allclose(got.to_numpy(), expected, rtol=1e-6)
    assert list(got.index) == list(worst.index)


def test_simultaneous_is_bonferroni():
    assert z_value(0.95, 20, simultaneous=True) == pytest.approx(z_value(1 - 0.05 / 20))
    assert z_value(0.95, 20) == pytest.approx(1.959964, abs=1e-6)


def test_unfitted_encoder_is_fitted_on_its_domain_and_left_unchanged():
    encoder = LDPEncoder(categories={"a": list("abc")}, epsilon=1.0)
    margin_of_error(encoder, 1000)
    assert not hasattr(encoder, "mechanism_")


def test_mechanism_and_reports_models():
    mechanism = RandomizedResponse(4, 1.0)
    assert margin_of_error(mechanism, 1000) == pytest.approx(
        1.959964 * math.sqrt(float(mechanism.query_variance(np.eye(4)).max()) / 1000),
        rel=1e-6)
    reports = LDPReports(np.array([0, 1, 3]), mechanism, domain=Domain.from_size(4))
    fitted = WorkloadEstimator(workload="prefix").fit(reports)
    assert margin_of_error(reports.aggregate(), 1000) == margin_of_error(mechanism, 1000)
    assert margin_of_error(fitted, 1000) == margin_of_error(mechanism, 1000, queries="prefix")


def test_marginals_columns_heavy_hitters_longitudinal():
    marginal = LDPEncoder(categories={"a": list("ab"), "b": list("xyz")}, strategy="inp_ht",
                          epsilon=1.0)
    table = margin_of_error(marginal, 10_000, per_query=True)
    assert list(table.index) == [("a",), ("b",), ("a", "b")]
    assert margin_of_error(marginal, 10_000, queries=("a", "b")) == table[("a", "b")]
    numeric = LDPEncoder(bounds={"x": (0, 10)}, strategy="hybrid", epsilon=1.0)
    assert margin_of_error(numeric, 100, queries="x") == pytest.approx(
        10 * margin_of_error(numeric, 10_000, queries="x"))
    strings = LDPEncoder(categories={"url": "strings"}, strategy="pem", epsilon=2.0)
    assert 0 < margin_of_error(strings, 10_000) < 1
    rounds = LongitudinalEncoder(categories=list("abc"))
    assert margin_of_error(rounds, 10_000, per_query=True).shape == (3,)


@pytest.mark.parametrize("call, match", [
    (lambda e: users_needed(e, margin=0), "margin must be a positive number.*0"),
    (lambda e: users_needed(e, margin=-0.01), "margin.*-0.01"),
    (lambda e: users_needed(e, margin=float("nan")), "margin.*nan"),
    (lambda e: users_needed(e, margin=1e-300), "margin=1e-300 would need more than 2\\^62"),
    (lambda e: users_needed(e, margin=float("inf")), "margin.*inf"),
    (lambda e: users_needed(e, confidence=1.0), "confidence.*1.0"),
    (lambda e: users_needed(e, confidence=0), "confidence.*0"),
    (lambda e: users_needed(e, confidence=95), "confidence.*95"),
    (lambda e: margin_of_error(e, 0), "n_users must be an integer >= 1.*0"),
    (lambda e: margin_of_error(e, 2.5), "n_users.*2.5"),
    (lambda e: margin_of_error(e, 10, kind="best"), "kind.*best"),
    (lambda e: margin_of_error(e, 10, queries="cdf"), "unknown workload name 'cdf'"),
    (lambda e: margin_of_error(e, 10, queries=[("a", "z")]), "z"),
    (lambda e: margin_of_error(e, 10, queries=[["a", "b"]]), r"\(lo, hi\) tuples"),
    (lambda e: margin_of_error(e, 10, queries=[[0, 1]]), r"\(lo, hi\) tuples"),
])
def test_hostile_input_names_the_value(call, match):
    encoder = LDPEncoder(categories={"a": list("abc")}, epsilon=1.0)
    with pytest.raises(ValueError, match=match):
        call(encoder)


def test_refuses_what_has_no_analytic_error():
    square = LDPEncoder(bounds={"x": (0, 1)}, strategy="square_wave", epsilon=1.0)
    with pytest.raises(ValueError, match="square-wave"):
        margin_of_error(square, 100)
    with pytest.raises(TypeError, match="model must be"):
        margin_of_error("histogram", 100)
    central = WorkloadEstimator(strategy="identity", epsilon=1.0, delta=1e-6,
                                categories={"a": list("abc")}, random_state=0)
    central.fit(pd.DataFrame({"a": list("abcab")}))
    with pytest.raises(ValueError, match="central model"):
        margin_of_error(central, 100)


@settings(max_examples=40, deadline=2000)
@given(margin=st.floats(1e-4, 0.5), confidence=st.floats(0.5, 0.999),
       simultaneous=st.booleans())
def test_round_trip_property(margin, confidence, simultaneous):
    mechanism = RandomizedResponse(6, 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        n = users_needed(mechanism, margin, confidence, simultaneous=simultaneous)
    assert margin_of_error(mechanism, n, confidence, simultaneous=simultaneous) <= margin
    if n > 1:
        assert margin_of_error(mechanism, n - 1, confidence,
                               simultaneous=simultaneous) > margin


def test_per_user_variance_counts_marginal_cells():
    encoder = LDPEncoder(categories={"a": list("ab"), "b": list("xyz")}, strategy="inp_ht",
                         epsilon=1.0)
    _, n_answers = per_user_variance(encoder)
    assert n_answers == 2 + 3 + 6


@settings(max_examples=80, deadline=2000)
@given(margin=st.floats() | st.integers() | st.none() | st.text(max_size=3),
       confidence=st.floats() | st.integers(-2, 2) | st.booleans(),
       n_users=st.integers(-5, 2**70) | st.floats() | st.booleans())
def test_any_number_is_an_answer_or_a_value_error(margin, confidence, n_users):
    mechanism = RandomizedResponse(3, 1.0)
    for call in (lambda: users_needed(mechanism, margin, confidence),
                 lambda: margin_of_error(mechanism, n_users, confidence)):
        try:
            result = call()
        except ValueError:
            continue
        assert isinstance(result, int | float) and result >= 0  # 0: confidence near 0
