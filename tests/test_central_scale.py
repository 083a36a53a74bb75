"""Central model on workload operators: the same results as the dense path, at any size.

The matrix mechanism, Eigen-Design, ``"auto"`` and the private selection take a structured
workload and use only its Gram (never the ``p x n`` matrix of, e.g., all ranges). Each test
compares the structured path with the dense computation it replaces (the legacy dense input
of :func:`build_central_mechanism` and ``W @`` products), then checks the all-range workload at
``n = 1024`` (524800 queries) end to end through :class:`WorkloadEstimator`.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import linalg

from sklearn_ldp import WorkloadEstimator, workloads
from sklearn_ldp._strategy_error import (
    closed_form_eigensystem,
    closed_form_spectrum,
    dense_gram_matrix,
)
from sklearn_ldp.mechanisms.central.matrix import MatrixMechanism, gaussian_mechanism_error
from sklearn_ldp.mechanisms.central.private_selection import relative_error_utilities
from sklearn_ldp.optimize.eigen_design import eigen_queries, singular_value_bound
from sklearn_ldp.selection.central import build_central_mechanism, central_strategy
from sklearn_ldp.workloads import base as workload_base

LINE = {"t": [f"v{i}" for i in range(12)]}
CUBE = {"a": ["x", "y"], "b": ["p", "q", "r", "s"], "c": ["u", "v", "w"]}
STRATEGIES = ["identity", "workload", "hierarchical", "wavelet", "fourier", "eigen", "auto"]


def _custom(domain):
    rng = np.random.default_rng(11)
    matrix = rng.integers(-2, 3, size=(7, 12)).astype(float)  # signed entries, 7 < 12 rows
    return workloads.Workload(matrix, domain=domain, name="custom")


def _line_ranges(pairs):
    return workloads.ranges(LINE, [(f"v{lo}", f"v{hi}") for lo, hi in pairs])


WORKLOADS = {
    "histogram": lambda: workloads.histogram(LINE),
    "prefix": lambda: workloads.prefix(LINE),
    "all_range": lambda: workloads.all_range(LINE),
    "ranges": lambda: _line_ranges([(0, 3), (2, 9), (5, 5), (0, 11), (7, 10)]),
    "marginals": lambda: workloads.marginals(CUBE, k=2),
    "custom dense": lambda: _custom(LINE),
}


def _records(domain, n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.choice(v, n) for c, v in domain.items()})


def _dense_reference(strategy, W, df, random_state=0):
    """What the estimator computed before workloads were operators: the legacy dense call
    of build_central_mechanism, then answers and variances from the p x n matrix."""
    domain = W.domain
    dense = W.toarray()
    counts = np.bincount(domain.encode(df), minlength=domain.size)
    rng = np.random.default_rng(random_state)
    mechanism, report = build_central_mechanism(strategy, dense, domain.shape, 1.0, 1e-6,
                                                data_vector=counts, rng=rng)
    x_hat = mechanism.estimate(mechanism.measure(counts, rng))
    variance = mechanism.query_variance(dense)
    return {"mechanism": mechanism, "report": report, "answers": dense @ x_hat,
            "variance": variance, "total": variance.sum(),
            "lower_bound": mechanism.lower_bound(dense.T @ dense)}


# ---------------------------------------------------------------------- structured == dense
@pytest.mark.parametrize("kind", list(WORKLOADS))
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_structured_workload_gives_the_dense_results(strategy, kind):
    W = WORKLOADS[kind]()
    domain = {c: list(v) for c, v in W.domain.categories.items()}
    df = _records(domain, 3000)
    est = WorkloadEstimator(workload=W, strategy=strategy, epsilon=1.0, delta=1e-6,
                            categories=domain, random_state=0).fit(df)
    ref = _dense_reference(strategy, W, df)
    assert est.strategy_ == ref["report"]["strategy"]
    np.testing.assert_allclose(est.strategy_matrix_, ref["mechanism"].A, rtol=1e-5, atol=1e-7)
    scale = np.abs(ref["answers"]).max()
    np.testing.assert_allclose(est.answers_.to_numpy(), ref["answers"], rtol=1e-6,
                               atol=1e-6 * scale)
    assert list(est.answers_.index) == list(W.labels)
    np.testing.assert_allclose(est.expected_error_["worst_case"], ref["variance"], rtol=1e-6)
    np.testing.assert_allclose(est.expected_error_["average_case"], ref["variance"], rtol=1e-6)
    assert est.expected_total_error_["worst_case"] == pytest.approx(ref["total"], rel=1e-6)
    assert est.lower_bound_ == pytest.approx(ref["lower_bound"], rel=1e-6)
    if strategy == "auto":
        candidates = ref["report"]["candidates"]
        for name, value in est.candidates_.items():
            assert value == pytest.approx(candidates[name], rel=1e-6)


@pytest.mark.parametrize("kind", list(WORKLOADS))
def test_per_query_variances_match_the_dense_formula(kind):
    W = WORKLOADS[kind]()
    for name in ("hierarchical", "eigen"):
        A, _ = central_strategy(name, W, W.domain.shape)
        mechanism = MatrixMechanism(A, 1.0, 1e-6)
        dense = mechanism.query_variance(W.toarray())  # solves, no covariance yet
        worst, average = mechanism.query_variance_summary(W)
        # Eigen-Design on the 5 chosen ranges completes some cells by 1e-9 only: A^T A has
        # condition ~1e16 there, and any two ways of computing w (A^T A)^-1 w (solve or
        # covariance) differ at 1e-7. Elsewhere they agree to rounding.
        rtol = 1e-6 if kind == "ranges" and name == "eigen" else 1e-9
        np.testing.assert_allclose(worst, dense, rtol=rtol)
        np.testing.assert_array_equal(worst, average)  # data-independent
        assert mechanism.total_squared_error(W.gram()) == pytest.approx(dense.sum(), rel=rtol)
        assert mechanism.total_squared_error(W) == pytest.approx(dense.sum(), rel=rtol)


def test_predict_error_and_score_through_the_gram():
    W = workloads.all_range(LINE)
    df = _records(LINE, 2000)
    est = WorkloadEstimator(workload=W, strategy="eigen", epsilon=1.0, delta=1e-6,
                            categories=LINE, random_state=1, normalize=True).fit(df)
    assert est._answers is None and est._expected_error is None  # built on first access
    queries = _line_ranges([(0, 11), (3, 4)])
    error = est.predict_error(queries)
    dense = est.mechanism_.query_variance(queries.toarray()) / est.n_users_**2
    np.testing.assert_allclose(error["worst_case"], dense, rtol=1e-9)
    assert list(error.index) == list(queries.labels)
    np.testing.assert_allclose(est.expected_error_["worst_case"].sum(),
                               est.expected_total_error_["worst_case"], rtol=1e-9)
    held_out = _records(LINE, 500, seed=5)
    truth = W.toarray() @ np.bincount(W.domain.encode(held_out), minlength=12) / 500
    expected = -np.mean((est.answers_.to_numpy() - truth) ** 2)
    assert est.score(held_out) == pytest.approx(expected, rel=1e-9)


def test_private_selection_from_the_operator_equals_the_dense_one():
    for W in (workloads.stack([workloads.prefix(LINE), workloads.histogram(LINE)]),
              _custom(LINE)):  # 0/1 rows (transposed product) and signed rows (blocks)
        mechanisms = [MatrixMechanism(central_strategy(name, W)[0], 0.9, 1e-5)
                      for name in ("identity", "wavelet", "eigen")]
        x = np.random.default_rng(3).integers(0, 300, 12)
        u, sensitivity = relative_error_utilities(x, W, mechanisms, 20.0)
        u_dense, sensitivity_dense = relative_error_utilities(x, W.toarray(), mechanisms, 20.0)
        np.testing.assert_allclose(u, u_dense, rtol=1e-9)
        assert sensitivity == pytest.approx(sensitivity_dense, rel=1e-9)
    df = _records(LINE, 2000)
    params = {"selection": "relative_error", "selection_epsilon": 0.2, "sanity_bound": 30,
              "candidates": ["identity", "wavelet", "eigen"]}
    est = WorkloadEstimator(workload=workloads.all_range(LINE), strategy="auto", epsilon=1.0,
                            delta=1e-6, categories=LINE, random_state=0,
                            strategy_params=params).fit(df)
    assert est.strategy_ == est.selection_.choice
    assert est.privacy_budget_["measurement_epsilon"] == pytest.approx(0.8)


# ---------------------------------------------------------------------- support checks
def test_support_checks_on_operators(monkeypatch):
    W = workloads.prefix(LINE)
    partial = MatrixMechanism(np.eye(12)[:11], 1.0, 1e-6, name="eleven cells")
    np.testing.assert_array_equal(partial.supports(W), partial.supports(W.toarray()))
    with pytest.raises(ValueError, match=r"1 of 12 queries \(e.g. t <= v11\)"):
        partial.check_supports(W)
    full = MatrixMechanism(np.eye(12), 1.0, 1e-6)
    full.check_supports(workloads.all_range(LINE))
    # Past the size of W N the whole workload is checked through its Gram instead.
    monkeypatch.setattr(workload_base, "MAX_QUERY_ENTRIES", 1)
    with pytest.raises(ValueError, match="fraction .* lies outside the row space"):
        partial.check_supports(workloads.all_range(LINE))
    spanning = MatrixMechanism(np.vstack([np.eye(12), np.eye(12)[:1]]), 1.0, 1e-6)
    spanning.check_supports(workloads.all_range(LINE))
    singular = MatrixMechanism(np.eye(12)[:11], 1.0, 1e-6)
    singular.check_supports(_line_ranges([(0, 3), (4, 10)]))


def test_strategy_gram_is_checked_against_the_strategy():
    A = central_strategy("wavelet", np.eye(8))[0]
    with pytest.raises(ValueError, match="strategy_gram is not A"):
        MatrixMechanism(A, 1.0, 1e-6, strategy_gram=np.eye(8))
    mechanism = MatrixMechanism(A, 1.0, 1e-6, strategy_gram=A.T @ A)
    assert mechanism.query_variance(np.eye(8)) == pytest.approx(
        MatrixMechanism(A, 1.0, 1e-6).query_variance(np.eye(8)))


# ---------------------------------------------------------------------- Gram closed forms
@pytest.mark.parametrize("n", [1, 2, 7, 50])
@pytest.mark.parametrize("kind", ["prefix", "all_range"])
def test_closed_form_eigen_queries_match_the_dense_decomposition(kind, n):
    W = getattr(workloads, kind)(n)
    values, vectors = closed_form_eigensystem(W.gram())
    G = W.toarray().T @ W.toarray()
    np.testing.assert_allclose(values, np.sort(np.linalg.eigvalsh(G))[::-1], rtol=1e-10)
    np.testing.assert_allclose((vectors.T * values) @ vectors, G, atol=1e-10 * G.max())
    structured = eigen_queries(W)
    dense = eigen_queries(W.toarray())
    np.testing.assert_allclose(structured[0], dense[0], rtol=1e-10)
    np.testing.assert_allclose(structured[1], dense[1], atol=1e-8)  # same signs


def test_closed_form_spectra_and_bounds():
    cases = [workloads.histogram(9), workloads.total(9), workloads.prefix(9),
             workloads.all_range(9), workloads.marginals(CUBE, k=2),
             workloads.range_marginals(CUBE, k=1),
             workloads.stack([workloads.all_range(9)], weights=[3.0])]
    for W in cases:
        dense = W.toarray()
        G = dense.T @ dense
        spectrum = closed_form_spectrum(W.gram())
        if spectrum is not None:
            np.testing.assert_allclose(np.sort(spectrum), np.linalg.eigvalsh(G),
                                       atol=1e-9 * np.abs(G).max())
        assert singular_value_bound(W) == pytest.approx(singular_value_bound(dense), rel=1e-9)
        assert singular_value_bound(gram=W.gram()) == pytest.approx(
            singular_value_bound(gram=G), rel=1e-9)
        assert gaussian_mechanism_error(W) == pytest.approx(gaussian_mechanism_error(dense))


def test_dense_grams_never_pass_through_the_query_matrix():
    W = workloads.ranges(40, [(0, 3), (2, 39), (5, 5), (0, 39), (7, 30), (7, 30)])
    dense = W.toarray()
    np.testing.assert_array_equal(dense_gram_matrix(W.gram()), dense.T @ dense)
    parity = workloads.parity({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, k=2)
    dense = parity.toarray()
    np.testing.assert_allclose(dense_gram_matrix(parity.gram()), dense.T @ dense, atol=1e-12)


def test_workload_strategy_of_many_queries_is_an_equivalent_root():
    W = workloads.all_range(256)  # 32896 x 256: measured through a root of its Gram
    A, _ = central_strategy("workload", W)
    assert A.shape == (256, 256)
    G = W.gram().toarray()
    np.testing.assert_allclose(A.T @ A, G, rtol=1e-10, atol=1e-8)
    dense_error = MatrixMechanism(W.toarray(), 1.0, 1e-6).total_squared_error(G)
    assert MatrixMechanism(A, 1.0, 1e-6).total_squared_error(G) == pytest.approx(
        dense_error, rel=1e-8)


# ---------------------------------------------------------------------- scale
def test_all_range_at_1024_cells_through_the_estimator():
    n = 1024
    categories = {"t": list(range(n))}
    df = pd.DataFrame({"t": np.random.default_rng(0).integers(0, n, 20000)})
    W = workloads.all_range(categories)
    est = WorkloadEstimator(strategy="eigen", epsilon=1.0, delta=1e-6, workload=W,
                            categories=categories, random_state=0).fit(df)
    p = n * (n + 1) // 2
    assert est.answers_.shape == (p,) and np.all(np.isfinite(est.answers_.to_numpy()))
    error = est.expected_error_
    assert error.shape == (p, 2) and np.all(error.to_numpy() > 0)
    # The total from the closed-form Gram, recomputed densely: sigma^2 tr(G (A^T A)^-1).
    cells = np.arange(n)
    G = ((np.minimum.outer(cells, cells) + 1) * (n - np.maximum.outer(cells, cells))).astype(
        float)
    A = est.strategy_matrix_
    trace = np.trace(linalg.cho_solve(linalg.cho_factor(A.T @ A), G))
    total = est.mechanism_.sigma**2 * trace
    assert est.expected_total_error_["worst_case"] == pytest.approx(total, rel=1e-8)
    assert error["worst_case"].sum() == pytest.approx(total, rel=1e-8)
    assert total == pytest.approx(est.mechanism_.sigma**2 * est.design_.error, rel=1e-8)
    svdb = np.sqrt(np.clip(np.linalg.eigvalsh(G), 0, None)).sum() ** 2 / n
    unit = (est.mechanism_.sigma / est.mechanism_.sensitivity) ** 2
    assert est.lower_bound_ == pytest.approx(unit * svdb, rel=1e-9)
    assert 1.0 <= total / est.lower_bound_ <= 1.04  # all-range: about 1.03 (bench_eigen)
    # A few intervals: answers and variances consistent with the dense rows.
    chosen = workloads.ranges(categories, [(0, n - 1), (100, 611), (7, 7)])
    rows = chosen.toarray()
    np.testing.assert_allclose(est.predict(chosen).to_numpy(), rows @ est.data_vector_)
    np.testing.assert_allclose(est.predict_error(chosen)["worst_case"],
                               est.mechanism_.query_variance(rows), rtol=1e-8)
    lo, hi = W.intervals()
    index = np.flatnonzero((lo == 100) & (hi == 611))[0]
    assert est.answers_.iloc[index] == pytest.approx(est.data_vector_[100:612].sum())
