"""Large domains through the public API: encoder, estimators, selection and files at sizes a
dense workload could never reach (no timing assertions: benchmarks/bench_large_domains.py
measures the time)."""

import logging
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning

from sklearn_ldp import (
    AggregatedReports,
    LDPEncoder,
    LDPReports,
    RangeQueryEstimator,
    WorkloadEstimator,
    workloads,
)
from sklearn_ldp.selection import BASELINES
from sklearn_ldp.selection.local import OPTIMIZED_MAX_CELLS


def _frame(n_cells, n_rows, seed=0):
    return pd.DataFrame({"t": np.random.default_rng(seed).integers(0, n_cells, n_rows)})


def test_hierarchical_over_2_16_cells_end_to_end():
    D = 2**16
    domain = {"t": range(D)}
    df = _frame(D, 20_000)
    encoder = LDPEncoder(categories=domain, strategy="hierarchical", oracle="hrr", epsilon=1.0,
                         workload=workloads.all_range(domain), random_state=0).fit(df)
    assert encoder.workload_.n_queries == D * (D + 1) // 2
    assert encoder.expected_total_error_["worst_case"] > 0
    estimator = RangeQueryEstimator().fit(encoder.transform(df))
    bounds = np.sort(np.random.default_rng(1).integers(0, D, (1000, 2)), axis=1)
    answers = estimator.predict(bounds)
    assert answers.shape == (1000,) and np.all(np.isfinite(answers))


def test_hierarchical_per_query_errors_of_a_cdf_over_2_16_cells():
    """The tree's per-query error table of the prefix workload (2^16 queries; dense rows
    would be 2^32 entries, refused before) comes from the structure and agrees with
    predict_error on a few prefixes; all ranges stay behind the table guard."""
    D = 2**16
    domain = {"t": range(D)}
    df = _frame(D, 5_000)
    encoder = LDPEncoder(categories=domain, strategy="hierarchical", oracle="hrr", epsilon=1.0,
                         workload=workloads.prefix(domain), random_state=0).fit(df)
    estimator = WorkloadEstimator().fit(encoder.transform(df))
    table = estimator.expected_error_
    assert table.shape == (D, 2)
    assert np.all(table["worst_case"] >= table["average_case"] * (1 - 1e-12))
    assert table["worst_case"].iloc[-1] < 1e-9 * table["worst_case"].max()  # the known total
    few = workloads.ranges(domain, [(0, 0), (0, 4095), (0, 40000)])
    np.testing.assert_allclose(estimator.predict_error(few).to_numpy(),
                               table.iloc[[0, 4095, 40000]].to_numpy(), rtol=1e-12)
    everything = WorkloadEstimator(workload=workloads.all_range(domain)).fit(
        encoder.transform(df))
    with pytest.raises(ValueError, match=r"2147516416 rows .*predict_error\(queries\)"):
        everything.expected_error_  # noqa: B018


@pytest.mark.parametrize("strategy", ["olh", "hrr", "randomized_response"])
def test_compact_oracles_over_2_18_cells(strategy):
    D = 2**18
    domain = {"t": range(D)}
    df = _frame(D, 4_000)  # OLH decoding hashes every cell for every report: O(N D)
    encoder = LDPEncoder(categories=domain, strategy=strategy, epsilon=1.0,
                         random_state=0).fit(df)
    estimator = WorkloadEstimator().fit(encoder.transform(df))
    assert estimator.data_vector_.shape == (D,)
    # The histogram's answers are the data vector; the table is built on first access.
    np.testing.assert_allclose(estimator.answers_.to_numpy(), estimator.data_vector_)
    total = estimator.expected_total_error_
    assert total["worst_case"] >= total["average_case"] * (1 - 1e-12) > 0
    intervals = workloads.ranges(domain, [(0, 99), (1000, 2000)])
    answers = estimator.predict(intervals)
    np.testing.assert_allclose(answers.to_numpy(), [estimator.data_vector_[:100].sum(),
                                                    estimator.data_vector_[1000:2001].sum()])
    errors = estimator.predict_error(intervals)
    assert list(errors.columns) == ["worst_case", "average_case"]
    assert np.all(errors["worst_case"] >= errors["average_case"] * (1 - 1e-12))


def test_huge_workload_answers_are_refused_with_the_alternative():
    D = 2**16
    domain = {"t": range(D)}
    df = _frame(D, 5_000)
    encoder = LDPEncoder(categories=domain, strategy="olh", epsilon=1.0,
                         workload=workloads.all_range(domain), random_state=0).fit(df)
    estimator = WorkloadEstimator().fit(encoder.transform(df))
    with pytest.raises(ValueError, match=r"2147516416 rows .*predict\(queries\)"):
        estimator.answers_  # noqa: B018
    with pytest.raises(ValueError, match="expected_total_error_"):
        estimator.expected_error_  # noqa: B018
    assert estimator.expected_total_error_["worst_case"] > 0
    # Held-out scoring goes through the Gram, never through the 2^31 answers.
    assert np.isfinite(estimator.score(encoder.transform(_frame(D, 2_000, seed=1))))


def test_score_through_the_gram_equals_the_dense_formula():
    domain = {"t": range(12)}
    workload = workloads.all_range(domain)
    encoder = LDPEncoder(categories=domain, strategy="oue", epsilon=1.0, workload=workload,
                         random_state=0).fit()
    train, test = encoder.transform(_frame(12, 3000)), encoder.transform(_frame(12, 500, 2))
    estimator = WorkloadEstimator().fit(train)
    W = workload.toarray()
    counts = test.aggregate().statistic
    n_test = len(test)
    fitted = W @ estimator.data_vector_ / estimator.n_users_
    held_out = W @ encoder.mechanism_.estimate(counts) / n_test
    squares = encoder.mechanism_.sum_of_squared_answers(counts, W.T @ W)
    sample_variance = (squares - n_test * held_out @ held_out) / (n_test - 1)
    expected = -(np.sum((fitted - held_out) ** 2) - sample_variance / n_test) / W.shape[0]
    assert estimator.score(test) == pytest.approx(expected, rel=1e-9)


def test_answers_and_errors_equal_the_dense_computation():
    domain = {"a": ["x", "y", "z"], "b": range(5)}
    workload = workloads.stack([workloads.marginals(domain, k=1), workloads.prefix(domain)])
    encoder = LDPEncoder(categories=domain, strategy="hrr", epsilon=0.7, workload=workload,
                         random_state=0).fit()
    df = pd.DataFrame({"a": ["x", "y", "z"] * 300, "b": list(range(5)) * 180})
    estimator = WorkloadEstimator().fit(encoder.transform(df))
    W = workload.toarray()
    np.testing.assert_allclose(estimator.answers_.to_numpy(), W @ estimator.data_vector_)
    z = encoder.mechanism_.query_variance(W)
    np.testing.assert_allclose(estimator.expected_error_["worst_case"], 900 * z.max(axis=1))
    np.testing.assert_allclose(estimator.expected_error_["average_case"], 900 * z.mean(axis=1))
    assert list(estimator.answers_.index) == list(workload.labels)


@pytest.mark.parametrize("name", ["histogram", "prefix", "all_range"])
def test_auto_over_2_20_cells_scores_what_it_can_and_says_why(name):
    D = 2**20
    domain = {"t": range(D)}
    encoder = LDPEncoder(categories=domain, strategy="auto", epsilon=1.0,
                         workload=getattr(workloads, name)(domain)).fit()
    table = encoder.selection_
    assert set(table.index) == set(BASELINES) | {"optimized"}
    assert (table["status"] == "chosen").sum() == 1
    scored = table[table["status"] != "skipped"]
    assert encoder.strategy_ == scored["worst_case"].idxmin()
    assert table.loc[encoder.strategy_, "status"] == "chosen"
    skipped = table[table["status"] == "skipped"]
    assert skipped["reason"].str.len().min() > 0
    assert {"hierarchical_matrix", "fourier", "optimized"} <= set(skipped.index)
    assert encoder.expected_total_error_["worst_case"] == pytest.approx(
        table.loc[encoder.strategy_, "worst_case"])
    if name != "histogram":
        assert encoder.strategy_ in ("hierarchical", "haar")


def test_auto_runs_the_optimizer_on_small_domains_and_never_loses_to_a_baseline():
    domain = {"t": range(8)}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        encoder = LDPEncoder(categories=domain, strategy="auto", epsilon=1.0,
                             workload=workloads.prefix(domain), max_iter=200,
                             random_state=0).fit()
    table = encoder.selection_
    assert table.loc["optimized", "status"] in ("scored", "chosen")
    best = table["worst_case"].min()
    assert encoder.expected_total_error_["worst_case"] == pytest.approx(best)


def test_optimized_refuses_at_once_past_its_size():
    n = OPTIMIZED_MAX_CELLS + 1
    with pytest.raises(ValueError, match=r"runs up to \d+ cells.*'hierarchical' or 'haar'"):
        LDPEncoder(categories={"t": range(n)}, strategy="optimized").fit()


def test_optimized_budget_returns_the_best_so_far_with_a_warning():
    domain = {"t": range(32)}
    # Too short to score any candidate: a ValueError names the least budget that does.
    with pytest.raises(ValueError, match=r"max_seconds=1e-09 is too short") as info:
        LDPEncoder(categories=domain, strategy="optimized", epsilon=1.0,
                   workload=workloads.prefix(domain), max_seconds=1e-9).fit()
    budget = float(str(info.value).split("pass max_seconds=")[1].split(" ")[0])
    with pytest.warns(ConvergenceWarning, match=r"max_seconds=.*best (found )?so far"):
        encoder = LDPEncoder(categories=domain, strategy="optimized", epsilon=1.0,
                             workload=workloads.prefix(domain), max_seconds=10 * budget,
                             max_iter=10**6, random_state=0).fit()
    assert np.isfinite(encoder.expected_total_error_["worst_case"])


def test_verbose_progress_goes_through_logging(caplog):
    domain = {"t": range(16)}
    with caplog.at_level(logging.INFO, logger="sklearn_ldp"), warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        LDPEncoder(categories=domain, strategy="auto", epsilon=1.0, verbose=10, max_iter=30,
                   workload=workloads.prefix(domain), random_state=0).fit()
    messages = [record.getMessage() for record in caplog.records]
    assert any(m.startswith("auto: scored hierarchical") for m in messages)
    assert any(m.startswith("iteration 10") and "objective" in m for m in messages)
    assert any(m.startswith("auto: chose") for m in messages)


def test_unary_oracles_are_not_refused_by_the_workload_layer():
    D = 2**20
    domain = {"t": range(D)}
    encoder = LDPEncoder(categories=domain, strategy="oue", epsilon=1.0, random_state=0).fit()
    counts = np.zeros(D, dtype=np.int64)
    counts[:1000] = 10**6  # a billion users, simulated exactly
    aggregate = encoder.simulate_counts(counts)
    estimate = WorkloadEstimator().fit(aggregate).data_vector_
    assert estimate.shape == (D,) and abs(estimate.sum() - 10**9) < 1e-3 * 10**9
    reports = encoder.transform(_frame(D, 100))
    assert reports.shape == (100, D // 8)
    with pytest.raises(ValueError, match=r"GiB .*'olh', 'hadamard' or 'hrr'"):
        encoder.transform(_frame(D, 40_000))


def test_structured_workload_survives_save_and_load(tmp_path):
    D = 2**16
    domain = {"t": range(D)}
    encoder = LDPEncoder(categories=domain, strategy="hrr", epsilon=1.0,
                         workload=workloads.all_range(domain), random_state=0).fit()
    aggregate = encoder.simulate(_frame(D, 1000))
    aggregate.save(tmp_path / "agg.npz")
    loaded = AggregatedReports.load(tmp_path / "agg.npz")
    assert isinstance(loaded.workload, workloads.AllRange)
    assert loaded.workload.n_queries == D * (D + 1) // 2
    reports = encoder.transform(_frame(D, 100))
    reports.save(tmp_path / "reports.npz")
    assert LDPReports.load(tmp_path / "reports.npz").workload.name == "all_range"


def test_point_queries_read_the_data_vector():
    domain = {"t": range(2**16)}
    encoder = LDPEncoder(categories=domain, strategy="olh", random_state=0).fit()
    estimator = WorkloadEstimator().fit(encoder.transform(_frame(2**16, 1000)))
    records = pd.DataFrame({"t": [5, 70, 5]})
    np.testing.assert_allclose(estimator.predict(records),
                               estimator.data_vector_[[5, 70, 5]])


def test_hierarchical_unary_reports_are_refused_before_allocation():
    """The tree with OUE levels writes every row as wide as the leaf level's report: 10^6
    users over 2^18 cells would take 30.5 GiB, refused by name with the alternatives."""
    from sklearn_ldp.mechanisms import HierarchicalHistogram

    tree = HierarchicalHistogram(2**18, 1.0, oracle="oue")
    with pytest.raises(ValueError, match=r"262144 bits per user: 1000000 reports would take "
                                         r"30\.5 GiB.*simulate"):
        tree.randomize(np.zeros(10**6, dtype=np.int64), np.random.default_rng(0))


def test_per_query_errors_without_a_closed_form_are_refused_at_once_and_fit_still_works():
    """1000 chosen ranges over 2^16 cells (dense rows: 6.5e7 entries). The hierarchical tree
    and Hadamard response, both refused before, now compute the per-query table from their
    structure (tests/test_tree_interval_variance.py and tests/test_hadamard_structured.py
    check the values); a workload without such structure is still refused at once."""
    n = 2**16
    domain = {"t": range(n)}
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"t": rng.integers(0, n, 2000)})
    bounds = np.sort(rng.integers(0, n, size=(1000, 2)), axis=1)
    queries = workloads.ranges(domain, [tuple(b) for b in bounds])
    few = workloads.ranges(domain, [tuple(b) for b in bounds[:3]])
    for strategy in ("hierarchical", "hadamard"):
        encoder = LDPEncoder(categories=domain, strategy=strategy, epsilon=1.0,
                             random_state=0).fit(frame)
        estimator = WorkloadEstimator(workload=queries).fit(encoder.transform(frame))
        assert estimator.answers_.shape == (1000,)
        table = estimator.expected_error_
        assert table.shape == (1000, 2)
        np.testing.assert_allclose(estimator.predict_error(few).to_numpy(),
                                   table.iloc[:3].to_numpy(), rtol=1e-9)
