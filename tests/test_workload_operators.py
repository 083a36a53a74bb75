"""Structured workloads: every operator method equals the dense matrix it stands for, large
domains never build the matrix, and bad input names the offending query."""

import time

import numpy as np
import pytest
import scipy.sparse
import scipy.sparse.linalg

import sklearn_ldp
from sklearn_ldp import workloads
from sklearn_ldp._gram import MinMaxGram, as_gram
from sklearn_ldp.workloads import (
    AllRange,
    Identity,
    Intervals,
    Prefix,
    Total,
    Workload,
    all_range,
    histogram,
    kron,
    marginals,
    parity,
    prefix,
    range_marginals,
    ranges,
    stack,
)
from sklearn_ldp.workloads.spec import workload_from_spec

DOMAIN = {"a": ["x", "y", "z"], "b": [0, 1], "c": ["p", "q", "r", "s"]}


def _cases():
    rng = np.random.default_rng(0)
    dense = rng.normal(size=(5, 7))
    sparse = scipy.sparse.random(6, 9, density=0.3, random_state=1, format="csr")
    return {
        "histogram": histogram(7),
        "total": workloads.total(5),
        "prefix": prefix(9),
        "all_range": all_range(8),
        "ranges": ranges(10, [(0, 3), (2, 2), (5, 9), (0, 9)]),
        "marginals_k1": marginals(DOMAIN, k=1),
        "marginals_k2": marginals(DOMAIN, k=2),
        "marginals_k0": marginals(DOMAIN, k=0),
        "range_marginals": range_marginals(DOMAIN, k=2),
        "parity": parity(16, k=2),
        "stack": stack([histogram(6), prefix(6), all_range(6)], name="union"),
        "weighted": stack([histogram(6), prefix(6)], weights=[2.0, 0.5]),
        "kron": kron([prefix(3), workloads.total(2), all_range(4)]),
        "dense": Workload(dense),
        "sparse": Workload(sparse),
        "predicates": workloads.from_predicates(
            DOMAIN, {"xy": "a in ['x', 'y']", "b1 and s": "b == 1 and c == 's'"}),
    }


CASES = _cases()


@pytest.fixture(params=sorted(CASES))
def case(request):
    return CASES[request.param]


def test_products_match_the_dense_matrix(case):
    rng = np.random.default_rng(1)
    A = case.toarray()
    p, n = A.shape
    assert case.shape == (p, n) and case.n_queries == p and case.n_cells == n
    x, X = rng.normal(size=n), rng.normal(size=(n, 3))
    y, Y = rng.normal(size=p), rng.normal(size=(p, 2))
    np.testing.assert_allclose(case.matvec(x), A @ x, atol=1e-10)
    np.testing.assert_allclose(case @ X, A @ X, atol=1e-10)
    np.testing.assert_allclose(case.rmatvec(y), A.T @ y, atol=1e-10)
    np.testing.assert_allclose(case.rmatvec(Y), A.T @ Y, atol=1e-10)
    operator = case.aslinearoperator()
    assert isinstance(operator, scipy.sparse.linalg.LinearOperator)
    np.testing.assert_allclose(operator @ x, A @ x, atol=1e-10)
    np.testing.assert_allclose(operator.T @ y, A.T @ y, atol=1e-10)


def test_gram_operator_matches_the_dense_gram(case):
    A = case.toarray()
    G = A.T @ A
    gram = case.gram()
    assert gram is case.gram()
    x = np.random.default_rng(2).normal(size=(A.shape[1], 2))
    np.testing.assert_allclose(gram.matvec(x), G @ x, atol=1e-9)
    np.testing.assert_allclose(gram.toarray(), G, atol=1e-9)
    np.testing.assert_allclose(np.asarray(gram), G, atol=1e-9)
    np.testing.assert_allclose(gram.diagonal(), np.diag(G), atol=1e-9)
    np.testing.assert_allclose(gram.row_sums(), G.sum(axis=1), atol=1e-9)
    assert gram.total() == pytest.approx(G.sum(), abs=1e-8)
    assert gram.trace() == pytest.approx(np.trace(G), abs=1e-8)
    np.testing.assert_allclose(case.column_sq_norms(), np.diag(G), atol=1e-9)


@pytest.mark.parametrize("width", [1, 2, 3, 4])
@pytest.mark.parametrize("offset", [0, 1, 2])
def test_block_sums(case, width, offset):
    G = case.toarray().T @ case.toarray()
    n = G.shape[0]
    n_blocks = -(-n // width)
    blocks = np.zeros((n_blocks, n))
    blocks[np.arange(n) // width, np.arange(n)] = 1.0
    expected = np.diagonal(blocks @ G @ blocks.T, offset=offset)
    np.testing.assert_allclose(case.gram().block_sums(width, offset), expected, atol=1e-8)


def test_query_stats(case):
    A = case.toarray()
    stats = case.query_stats()
    np.testing.assert_allclose(stats.sq_norms, np.sum(A * A, axis=1), atol=1e-10)
    np.testing.assert_allclose(stats.sums, A.sum(axis=1), atol=1e-10)
    np.testing.assert_allclose(stats.mins, A.min(axis=1), atol=1e-12)
    np.testing.assert_allclose(stats.maxs, A.max(axis=1), atol=1e-12)


def test_intervals_describe_the_rows(case):
    found = case.intervals()
    if found is None:
        return
    lo, hi = found
    cells = np.arange(case.n_cells)
    dense = (cells >= lo[:, None]) & (cells <= hi[:, None])
    np.testing.assert_array_equal(dense.astype(float), case.toarray())


def test_row_blocks_cover_the_matrix(case):
    blocks = [block for _rows, block in case.row_blocks(max_entries=case.n_cells * 2)]
    np.testing.assert_allclose(np.vstack(blocks), case.toarray(), atol=1e-12)


def test_labels_are_unique_and_lazy(case):
    labels = case.labels
    assert len(labels) == case.n_queries and labels.is_unique


def test_spec_round_trip(case):
    spec, arrays = case.to_spec()
    import json

    rebuilt = workload_from_spec(json.loads(json.dumps(spec)), arrays, domain=case.domain)
    assert type(rebuilt) is type(case) and rebuilt.name == case.name
    np.testing.assert_allclose(rebuilt.toarray(), case.toarray())
    assert rebuilt.labels.equals(case.labels)


def test_structured_labels_match_the_former_dense_builders():
    dom = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}
    assert marginals(dom, k=2).labels[0] == "age=<30 & smoker=no"
    assert marginals(dom, k=0).labels.tolist() == ["total"]
    assert range_marginals(dom, k=2).labels[1] == "age in [<30, <30] & smoker in [no, yes]"
    assert parity({"a": [0, 1], "b": [0, 1]}).labels.tolist() == [
        "parity(a)", "parity(b)", "parity(a, b)"]
    assert all_range(dom).labels[1] == "cells[0..1]"


def test_closed_form_grams():
    n = 50
    cells = np.arange(n)
    i, j = np.meshgrid(cells, cells, indexing="ij")
    np.testing.assert_allclose(MinMaxGram.prefix(n).toarray(), n - np.maximum(i, j))
    np.testing.assert_allclose(MinMaxGram.all_range(n).toarray(),
                               (np.minimum(i, j) + 1) * (n - np.maximum(i, j)))
    assert as_gram(np.eye(3)).trace() == 3.0


@pytest.mark.parametrize("builder", [histogram, prefix, all_range])
def test_million_cell_workloads_are_operators(builder):
    n = 2**20
    start = time.perf_counter()
    W = builder(n)
    x = np.random.default_rng(0).random(n)
    gram = W.gram()
    assert gram.diagonal().shape == (n,) and gram.row_sums().shape == (n,)
    assert np.isfinite(gram.total())
    if W.n_queries == n:
        assert (W @ x).shape == (n,)
    else:
        with pytest.raises(ValueError, match="549756338176 queries"):
            W @ x
    assert isinstance(W.gram().block_sums(2**10), np.ndarray)
    with pytest.raises(ValueError, match="GiB"):
        W.toarray()
    # No dense n x n work: the whole check is far below what one dense product would take.
    assert time.perf_counter() - start < 60


def test_prefix_gram_matvec_is_exact_at_scale():
    n = 2**16
    x = np.random.default_rng(3).random(n)
    W = prefix(n)
    np.testing.assert_allclose(W.gram() @ x, W.rmatvec(W @ x), rtol=1e-10)
    A = all_range(n).gram()
    # (G x)_0 = sum_j (0 + 1) (n - j) x_j
    assert A.matvec(x)[0] == pytest.approx(float(np.sum((n - np.arange(n)) * x)), rel=1e-10)


def test_interval_answers_in_linear_time():
    n = 2**20
    rng = np.random.default_rng(0)
    lo = rng.integers(0, n, 10**5)
    hi = np.minimum(lo + rng.integers(0, 1000, lo.size), n - 1)
    W = Intervals(n, lo, hi)
    x = rng.random(n)
    cumulative = np.concatenate([[0.0], np.cumsum(x)])
    np.testing.assert_allclose(W @ x, cumulative[hi + 1] - cumulative[lo])


def test_bad_intervals_name_the_query():
    with pytest.raises(ValueError, match=r"interval \(3, 1\) has lo after hi"):
        ranges(5, [(0, 1), (3, 1)])
    with pytest.raises(ValueError, match=r"not among the categories of column 'age': \['old'\]"):
        ranges({"age": ["<30", ">=30"]}, [("<30", "old")])
    with pytest.raises(ValueError, match=r"interval 1 = \[4, 9\] is not inside \[0, 4\]"):
        Intervals(5, [0, 4], [1, 9])


def test_bad_interval_bounds_over_several_columns():
    with pytest.raises(ValueError, match=r"integers in \[0, 6\); got 6"):
        ranges({"a": [0, 1], "b": [0, 1, 2]}, [(0, 6)])


def test_stack_weights_and_checks():
    W = stack([histogram(3), prefix(3)], weights=[2.0, 1.0])
    np.testing.assert_allclose(W.toarray()[:3], 2 * np.eye(3))
    with pytest.raises(ValueError, match="weights must be 2 finite positive"):
        stack([histogram(3), prefix(3)], weights=[1.0, -1.0])
    with pytest.raises(ValueError, match="different widths"):
        stack([histogram(3), prefix(4)])


def test_too_many_labels_is_a_clear_error():
    with pytest.raises(ValueError, match="too many to label"):
        all_range(2**13).labels  # noqa: B018


def test_builder_classes():
    assert isinstance(histogram(4), Identity) and isinstance(prefix(4), Prefix)
    assert isinstance(all_range(4), AllRange) and isinstance(workloads.total(4), Total)


def test_tampered_specs_are_refused():
    with pytest.raises(ValueError, match="'n' must be a positive integer"):
        workload_from_spec({"kind": "prefix", "n": -3})
    # Sizes past the configurable cap are refused before anything is built.
    with pytest.raises(ValueError, match=r"exceeds the limit max_cells = 16777216 .*set_limits"):
        workload_from_spec({"kind": "all_range", "n": 2**40})
    with sklearn_ldp.limits(max_cells=2**25):
        assert workload_from_spec({"kind": "prefix", "n": 2**25}).n_cells == 2**25
    with pytest.raises(ValueError, match="unknown kind"):
        workload_from_spec({"kind": "nope"})
    with pytest.raises(ValueError, match="missing"):
        workload_from_spec({"kind": "ranges", "n": 4})
    with pytest.raises(ValueError, match="not inside"):
        workload_from_spec({"kind": "ranges", "n": 4}, {"lo": np.array([0]),
                                                          "hi": np.array([7])})
