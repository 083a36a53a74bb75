"""Fitted estimators pickle with identical predictions; reports and aggregates save and load."""

import json
import pickle

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp import LDPEncoder, workloads
from sklearn_ldp.binning import interval_categories
from sklearn_ldp.deploy.npz import _members_digest
from sklearn_ldp.estimators.adaptive import AdaptiveQueryEstimator
from sklearn_ldp.estimators.count import CountMechanism
from sklearn_ldp.estimators.range import RangeQueryEstimator
from sklearn_ldp.estimators.workload import WorkloadEstimator
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.reports import AggregatedReports, LDPReports

DOMAIN = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}


def records(n=2000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"age": rng.choice(DOMAIN["age"], n),
                         "smoker": rng.choice(DOMAIN["smoker"], n)})


def round_trip(estimator):
    return pickle.loads(pickle.dumps(estimator))


# ---------------------------------------------------------------------- pickling
def test_local_workload_estimator_pickles():
    W = workloads.marginals(DOMAIN, k=1)
    encoder = LDPEncoder(categories=DOMAIN, strategy="optimized", workload=W, max_iter=500,
                         random_state=0)
    reports = encoder.fit_transform(records())
    estimator = WorkloadEstimator(postprocess="wnnls").fit(reports)
    restored = round_trip(estimator)
    pd.testing.assert_series_equal(restored.answers_, estimator.answers_)
    pd.testing.assert_series_equal(restored.predict(W), estimator.predict(W))
    np.testing.assert_array_equal(restored.predict(records(5, 1)), estimator.predict(records(5, 1)))
    held_out = encoder.transform(records(500, 2))
    assert restored.score(held_out) == estimator.score(held_out)
    # Streaming continues identically after a restart from the pickle.
    more = encoder.transform(records(300, 3))
    pd.testing.assert_series_equal(restored.partial_fit(more).answers_,
                                   estimator.partial_fit(more).answers_)


def test_central_workload_estimator_pickles():
    estimator = WorkloadEstimator(strategy="eigen", epsilon=1.0, delta=1e-6, categories=DOMAIN,
                                  workload=workloads.marginals(DOMAIN, k=2),
                                  random_state=0).fit(records())
    restored = round_trip(estimator)
    pd.testing.assert_series_equal(restored.answers_, estimator.answers_)
    queries = workloads.marginals(DOMAIN, k=1)
    pd.testing.assert_series_equal(restored.predict(queries), estimator.predict(queries))
    pd.testing.assert_frame_equal(restored.expected_error_, estimator.expected_error_)


def test_range_estimator_pickles():
    encoder = LDPEncoder(categories={"t": list(range(32))}, strategy="hierarchical",
                         random_state=0)
    rng = np.random.default_rng(0)
    reports = encoder.fit_transform(pd.DataFrame({"t": rng.integers(0, 32, 3000)}))
    estimator = RangeQueryEstimator(monotone="isotonic").fit(reports)
    restored = round_trip(estimator)
    ranges = [[0, 5], [3, 31], [7, 7]]
    np.testing.assert_array_equal(restored.predict(ranges), estimator.predict(ranges))
    np.testing.assert_array_equal(restored.quantiles([0.1, 0.5, 0.9]),
                                  estimator.quantiles([0.1, 0.5, 0.9]))
    pd.testing.assert_frame_equal(restored.predict_error(ranges), estimator.predict_error(ranges))


def test_count_mechanism_pickles():
    estimator = CountMechanism(group_size=6, epsilon=0.5, loss="L1", random_state=0).fit()
    restored = round_trip(estimator)
    noisy = np.array([0, 3, 6, 2])
    np.testing.assert_array_equal(restored.predict(noisy), estimator.predict(noisy))
    np.testing.assert_array_equal(restored.matrix_, estimator.matrix_)
    counts = np.array([1, 2, 3, 4, 5, 6])
    np.testing.assert_array_equal(restored.transform(counts), estimator.transform(counts))


def test_adaptive_estimator_pickles():
    queries = np.array([[1.0, 0, 0, 0, 0, 0], [0, 1, 0, 1, 0, 1], [0.5, 0.5, 0, 0, 0, 0]])
    estimator = AdaptiveQueryEstimator(categories=DOMAIN, queries=queries, random_state=0)
    estimator.fit(records())
    restored = round_trip(estimator)
    pd.testing.assert_series_equal(restored.answers_, estimator.answers_)
    pd.testing.assert_frame_equal(restored.expected_error_, estimator.expected_error_)
    # The generator state travels with the pickle: the next round is identical.
    next_query = np.full(6, 0.25)
    pd.testing.assert_series_equal(
        restored.partial_fit(records(400, 5), query=next_query).answers_,
        estimator.partial_fit(records(400, 5), query=next_query).answers_)


def test_encoder_pickles_and_privatizes_identically():
    encoder = LDPEncoder(categories=DOMAIN, strategy="olh", random_state=0).fit()
    restored = round_trip(encoder)
    assert restored.mechanism_ == encoder.mechanism_
    np.testing.assert_array_equal(restored.transform(records(50)).reports,
                                  encoder.transform(records(50)).reports)


# ---------------------------------------------------------------------- save / load
@pytest.mark.parametrize("strategy", ["randomized_response", "olh", "hierarchical", "optimized"])
def test_reports_save_and_load_with_domain_and_workload(strategy, tmp_path):
    W = workloads.prefix(DOMAIN)
    encoder = LDPEncoder(categories=DOMAIN, strategy=strategy, workload=W, max_iter=500,
                         random_state=0)
    reports = encoder.fit_transform(records(300))
    path = tmp_path / "reports.npz"
    reports.save(path)
    loaded = LDPReports.load(path)
    np.testing.assert_array_equal(loaded.reports, reports.reports)
    assert loaded.reports.dtype == reports.reports.dtype
    assert loaded.mechanism == reports.mechanism and loaded.domain == reports.domain
    np.testing.assert_array_equal(loaded.workload.toarray(), W.toarray())
    pd.testing.assert_index_equal(loaded.workload.labels, W.labels)
    aggregate = reports.aggregate()
    aggregate.save(tmp_path / "aggregate.npz")
    back = AggregatedReports.load(tmp_path / "aggregate.npz")
    assert back.statistic.tobytes() == aggregate.statistic.tobytes()
    pd.testing.assert_series_equal(WorkloadEstimator().fit(back).answers_,
                                   WorkloadEstimator().fit(reports).answers_)


def test_categories_of_every_kind_survive(tmp_path):
    categories = {"duration": interval_categories([0, 60, 300, np.inf]),
                  "pair": [(0, "a"), (1, "b")], "flag": [True, False], "x": [0.5, 2]}
    encoder = LDPEncoder(categories=categories, strategy="randomized_response").fit()
    aggregate = encoder.simulate_counts(np.arange(24))
    aggregate.save(tmp_path / "a.npz")
    assert AggregatedReports.load(tmp_path / "a.npz").domain == encoder.domain_
    odd = LDPEncoder(categories={"x": [object(), 1]}, strategy="randomized_response").fit()
    with pytest.raises(ValueError, match="cannot save the category"):
        odd.simulate_counts(np.ones(2, int)).save(tmp_path / "b.npz")


def _rewrite_header(path, change):
    """Edit the header and store a matching checksum: the content checks run past it."""
    with np.load(path, allow_pickle=False) as data:
        contents = {key: data[key] for key in data.files}
    header = json.loads(str(contents["header"]))
    change(header)
    contents["header"] = np.array(json.dumps(header))
    contents["sha256"] = np.array(_members_digest(contents))
    with open(path, "wb") as file:
        np.savez(file, **contents)


def test_load_refuses_unknown_versions_mechanisms_and_kinds(tmp_path):
    mechanism = RandomizedResponse(4, 1.0)
    reports = LDPReports(np.array([0, 3, 2]), mechanism)
    path = tmp_path / "r.npz"
    cases = [
        (lambda h: h["mechanism"].update(version=2), "unsupported specification version 2"),
        (lambda h: h["mechanism"].update(mechanism="teleport"), "not a mechanism specification"),
        (lambda h: h.update(file_version=7), "unsupported file version 7"),
        (lambda h: h.update(kind="AggregatedReports"), "holds AggregatedReports, not "
                                                       "LDPReports"),
        (lambda h: h["mechanism"].update(n_inputs=2), r"indices in \[0, 2\)"),
    ]
    for change, message in cases:
        reports.save(path)
        _rewrite_header(path, change)
        with pytest.raises(ValueError, match=r"r\.npz.*" + message):
            LDPReports.load(path)
    reports.save(path)
    with pytest.raises(ValueError, match="holds LDPReports, not AggregatedReports"):
        AggregatedReports.load(path)
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match=r"junk\.npz: not a file saved by sklearn_ldp"):
        LDPReports.load(tmp_path / "junk.npz")
    aggregate_path = tmp_path / "a.npz"
    reports.aggregate().save(aggregate_path)
    _rewrite_header(aggregate_path, lambda h: h["mechanism"].update(n_inputs=6))
    with pytest.raises(ValueError, match=r"a\.npz: the statistic .* has shape \(7,\)"):
        AggregatedReports.load(aggregate_path)


def test_float_statistics_save_exactly(tmp_path):
    encoder = LDPEncoder(categories={"t": list(range(8))}, strategy="gaussian_pure",
                         random_state=0).fit()
    aggregate = encoder.simulate_counts(np.full(8, 100))
    aggregate.save(tmp_path / "g.npz")
    assert AggregatedReports.load(tmp_path / "g.npz").statistic.tobytes() == \
        aggregate.statistic.tobytes()
