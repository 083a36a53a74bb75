import itertools

import numpy as np
import pandas as pd
import pytest
import scipy.sparse

from sklearn_ldp import workloads
from sklearn_ldp.domain import Domain
from sklearn_ldp.workloads import (
    Workload,
    all_range,
    as_workload,
    custom,
    from_predicates,
    histogram,
    marginals,
    parity,
    prefix,
    range_marginals,
    ranges,
    stack,
)

DOM = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": ["n", "s", "e", "w"]}


# ---------------------------------------------------------------- Workload
def test_workload_basics():
    W = Workload([[1, 0, 1], [0, 1, 0]], name="mine")
    assert W.toarray().dtype == np.float64
    assert W.n_queries == len(W) == 2 and W.n_cells == 3
    assert isinstance(W.labels, pd.Index) and W.labels.tolist() == ["q0", "q1"]
    assert W.domain is None and W.name == "mine"
    assert "n_queries=2" in repr(W) and "'mine'" in repr(W)


def test_workload_matrix_is_protected():
    source = np.eye(3)
    W = Workload(source)
    source[0, 0] = 5.0
    assert W.toarray()[0, 0] == 1.0
    W.toarray()[0, 0] = 2.0  # toarray() is a copy: the workload cannot be changed through it
    assert W.toarray()[0, 0] == 1.0


def test_workload_gram_cached_readonly():
    W = Workload([[1, 2], [3, 4]])
    G = W.gram()
    np.testing.assert_allclose(G, W.toarray().T @ W.toarray())
    assert W.gram() is G
    with pytest.raises(TypeError):
        G[0, 0] = 1.0


def test_workload_sparse_and_1d():
    W = Workload(scipy.sparse.eye(3, format="csr"))
    np.testing.assert_array_equal(W.toarray(), np.eye(3))
    assert Workload([1, 2, 3]).toarray().shape == (1, 3)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"matrix": [[1, np.nan]]}, "NaN or infinite"),
        ({"matrix": np.zeros((2, 2, 2))}, "2-D matrix"),
        ({"matrix": np.zeros((0, 3))}, "at least one query"),
        ({"matrix": np.eye(2), "labels": ["a", "a"]}, r"unique; repeated: \['a'\]"),
        ({"matrix": np.eye(2), "labels": ["a"]}, "2 queries but 1 labels"),
        ({"matrix": np.eye(2), "labels": "ab"}, "not a str"),
        ({"matrix": np.eye(3), "domain": 4}, "workload has 3 columns but the domain has 4 cells"),
    ],
)
def test_workload_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        Workload(**kwargs)


def test_check_width():
    W = Workload(np.eye(3), name="id")
    W.check_width(3)
    with pytest.raises(ValueError, match="'id' has 3 columns but the domain has 5 cells"):
        W.check_width(5)


def test_as_workload():
    W = histogram(3)
    assert as_workload(W) is W
    assert as_workload(W, domain=3) is W
    with pytest.raises(ValueError, match="has 3 columns but the domain has 4 cells"):
        as_workload(W, domain=4)
    assert as_workload(np.ones((2, 3))).name == "custom"
    assert as_workload([1, 0, 1]).n_queries == 1
    assert as_workload(np.eye(6), domain=DOM | {"region": ["n"]}).domain is not None
    for bad in ("abc", None, {"a": 1}, [["a", "b"]], np.zeros((1, 1, 1))):
        with pytest.raises(ValueError):
            as_workload(bad)


def test_stack():
    W = stack([histogram(3), prefix(3)])
    assert W.n_queries == 6 and W.name == "histogram+prefix"
    np.testing.assert_array_equal(W.toarray(), np.vstack([np.eye(3), np.tril(np.ones((3, 3)))]))
    assert W.domain == Domain.from_size(3)
    assert stack([histogram(3), np.ones((1, 3))], name="both").name == "both"
    with pytest.raises(ValueError, match=r"repeated: \['x=0', 'x=1', 'x=2'\]"):
        stack([histogram(3), histogram(3)])
    with pytest.raises(ValueError, match="workload 1 .* has 4"):
        stack([histogram(3), histogram(4)])
    with pytest.raises(ValueError, match="different domains"):
        stack([histogram(2), histogram({"s": ["no", "yes"]})])
    with pytest.raises(ValueError, match="at least one"):
        stack([])


# ---------------------------------------------------------------- histogram, prefix, ranges
def test_histogram():
    W = histogram(DOM)
    assert W.name == "histogram"
    np.testing.assert_array_equal(W.toarray(), np.eye(24))
    assert W.labels[0] == "age=<30, smoker=no, region=n"


def test_prefix():
    W = prefix({"age": ["<30", "30-50", ">50"]})
    assert W.toarray().shape == (3, 3)
    np.testing.assert_array_equal(W.toarray(), np.tril(np.ones((3, 3))))
    assert W.labels.tolist() == ["age <= <30", "age <= 30-50", "age <= >50"]
    multi = prefix(DOM)
    assert multi.toarray().shape == (24, 24)
    assert multi.labels[5] == "cells[0..5]"


def test_all_range_order_and_labels():
    W = all_range({"age": ["<30", "30-50", ">50"]})
    assert W.labels.tolist() == [
        "age in [<30, <30]", "age in [<30, 30-50]", "age in [<30, >50]",
        "age in [30-50, 30-50]", "age in [30-50, >50]", "age in [>50, >50]",
    ]
    np.testing.assert_array_equal(
        W.toarray(), [[1, 0, 0], [1, 1, 0], [1, 1, 1], [0, 1, 0], [0, 1, 1], [0, 0, 1]]
    )
    assert all_range({"a": [0, 1], "b": [0, 1]}).labels[1] == "cells[0..1]"


@pytest.mark.parametrize("n", [1, 2, 7, 16])
def test_all_range_gram_closed_form(n):
    W = all_range(n)
    assert W.n_queries == n * (n + 1) // 2
    i = np.arange(1, n + 1)
    expected = np.minimum.outer(i, i) * (n + 1 - np.maximum.outer(i, i))
    np.testing.assert_array_equal(W.gram(), expected)


def test_all_range_is_structured_and_dense_on_request_only():
    W = all_range(700)  # 245,350 queries: no dense matrix is built
    assert W.n_queries == 700 * 701 // 2
    with pytest.raises(ValueError, match=r"dense 536887296 x 32768 matrix .*limit"):
        all_range(2**15).toarray()


def test_ranges():
    W = ranges({"age": ["<30", "30-50", ">50"]}, [("<30", "30-50"), (">50", ">50")])
    np.testing.assert_array_equal(W.toarray(), [[1, 1, 0], [0, 0, 1]])
    assert W.labels.tolist() == ["age in [<30, 30-50]", "age in [>50, >50]"]
    W = ranges(DOM, [(0, 23), (5, 6)])
    assert W.toarray().sum(axis=1).tolist() == [24, 2]
    assert W.labels.tolist() == ["cells[0..23]", "cells[5..6]"]
    W = ranges({"v": [10, 20, 30]}, [(20, 30)])  # category values, not positions
    np.testing.assert_array_equal(W.toarray(), [[0, 1, 1]])


def test_ranges_errors():
    age = {"age": ["<30", "30-50", ">50"]}
    with pytest.raises(ValueError, match=r"interval \('>50', '<30'\) has lo after hi"):
        ranges(age, [(">50", "<30")])
    with pytest.raises(ValueError, match=r"categories of column 'age': \['old'\]"):
        ranges(age, [("<30", "old")])
    with pytest.raises(ValueError, match=r"integers in \[0, 24\); got 24"):
        ranges(DOM, [(0, 24)])
    with pytest.raises(ValueError, match=r"got -1"):
        ranges(DOM, [(-1, 2)])
    with pytest.raises(ValueError, match=r"interval \(3, 2\) has lo after hi"):
        ranges(DOM, [(3, 2)])
    with pytest.raises(ValueError, match="pair"):
        ranges(DOM, [(1, 2, 3)])
    with pytest.raises(ValueError, match="empty"):
        ranges(DOM, [])


# ---------------------------------------------------------------- marginals
def _brute_force_marginals(domain, subsets):
    cells = domain.cells()
    rows = []
    for subset in subsets:
        for values in itertools.product(*(domain.categories[a] for a in subset)):
            mask = np.ones(domain.size, dtype=bool)
            for a, v in zip(subset, values, strict=True):
                mask &= (cells[a] == v).to_numpy()
            rows.append(mask.astype(float))
    return np.array(rows)


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_marginals_match_brute_force(k):
    domain = Domain(DOM)
    W = marginals(domain, k=k)
    subsets = list(itertools.combinations(domain.columns, k))
    np.testing.assert_array_equal(W.toarray(), _brute_force_marginals(domain, subsets))
    assert W.name == "marginals" and W.domain == domain


def test_marginals_labels():
    assert marginals(DOM, k=0).labels.tolist() == ["total"]
    W = marginals(DOM, k=2)
    assert W.labels[0] == "age=<30 & smoker=no"
    assert W.n_queries == 3 * 2 + 3 * 4 + 2 * 4


def test_marginals_attributes():
    domain = Domain(DOM)
    W = marginals(DOM, attributes=["smoker", ("region", "age"), []])
    expected = _brute_force_marginals(domain, [("smoker",), ("age", "region"), ()])
    np.testing.assert_array_equal(W.toarray(), expected)
    assert W.labels[2] == "age=<30 & region=n"
    assert W.labels[-1] == "total"
    assert marginals(DOM, attributes="smoker").n_queries == 2


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, "exactly one of k or attributes"),
        ({"k": 1, "attributes": ["age"]}, "exactly one"),
        ({"k": 4}, r"k must be an integer in \[0, 3\]"),
        ({"k": -1}, "k must be an integer"),
        ({"k": 1.0}, "k must be an integer"),
        ({"attributes": [("age", "income")]}, r"unknown column\(s\) \['income'\]"),
        ({"attributes": [("age", "age")]}, "repeats a column"),
        ({"attributes": []}, "attributes is empty"),
    ],
)
def test_marginals_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        marginals(DOM, **kwargs)


def test_range_marginals():
    domain = Domain(DOM)
    W = range_marginals(DOM)  # default k=1
    assert W.n_queries == 6 + 3 + 10
    assert W.labels[1] == "age in [<30, 30-50]"
    # one-attribute range marginal = all_range of that attribute pushed through the marginal
    age = marginals(domain, attributes=["age"]).toarray()
    np.testing.assert_array_equal(W.toarray()[:6], all_range(3).toarray() @ age)

    W2 = range_marginals(DOM, k=2)
    assert W2.labels[0] == "age in [<30, <30] & smoker in [no, no]"
    assert W2.n_queries == 6 * 3 + 6 * 10 + 3 * 10
    # brute force for one row: age in [<30, 30-50] & smoker in [no, yes]
    cells = domain.cells()
    mask = cells["age"].isin(["<30", "30-50"]) & cells["smoker"].isin(["no", "yes"])
    row = W2.labels.get_loc("age in [<30, 30-50] & smoker in [no, yes]")
    np.testing.assert_array_equal(W2.toarray()[row], mask.to_numpy(dtype=float))

    W3 = range_marginals(DOM, attributes=[("region",)])
    assert W3.n_queries == 10
    assert range_marginals(DOM, k=0).labels.tolist() == ["total"]
    with pytest.raises(ValueError, match="unknown column"):
        range_marginals(DOM, attributes=["nope"])


# ---------------------------------------------------------------- parity
def test_parity_int_domain_orthogonal():
    W = parity(8)
    assert W.n_queries == 7
    np.testing.assert_allclose(W.toarray() @ W.toarray().T, 8 * np.eye(7))
    assert W.labels[0] == "parity(bit2)"
    # bit 0 of the flat index alternates
    np.testing.assert_array_equal(W.toarray()[W.labels.get_loc("parity(bit0)")], [1, -1] * 4)


def test_parity_binary_domain():
    dom = {"age": ["young", "old"], "smoker": ["no", "yes"], "male": [0, 1]}
    W = parity(dom)
    np.testing.assert_allclose(W.toarray() @ W.toarray().T, 8 * np.eye(7))
    cells = Domain(dom).cells()
    # first column = most significant bit
    age_bit = (cells["age"] == "old").to_numpy()
    np.testing.assert_array_equal(W.toarray()[0], np.where(age_bit, -1.0, 1.0))
    assert W.labels[3] == "parity(age, smoker)"
    smoker_bit = (cells["smoker"] == "yes").to_numpy()
    np.testing.assert_array_equal(W.toarray()[3], np.where(age_bit ^ smoker_bit, -1.0, 1.0))
    W1 = parity(dom, k=1)
    assert W1.labels.tolist() == ["parity(age)", "parity(smoker)", "parity(male)"]


def test_parity_errors():
    with pytest.raises(ValueError, match=r"\['age'\] are not binary.*marginals"):
        parity({"age": [1, 2, 3], "smoker": ["no", "yes"]})
    with pytest.raises(ValueError, match="power of two"):
        parity(6)
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 2\]"):
        parity(4, k=3)
    with pytest.raises(ValueError, match="k must be"):
        parity(4, k=0)


# ---------------------------------------------------------------- predicates
def test_from_predicates_strings_and_callables():
    dom = {"age": [20, 40, 60], "smoker": ["no", "yes"]}
    W = from_predicates(
        dom,
        {
            "young smoker": "age < 30 and smoker == 'yes'",
            "old": lambda c: c["age"] >= 60,
            "all": lambda c: np.ones(len(c), dtype=bool),
        },
    )
    np.testing.assert_array_equal(
        W.toarray(), [[0, 1, 0, 0, 0, 0], [0, 0, 0, 0, 1, 1], [1, 1, 1, 1, 1, 1]]
    )
    assert W.labels.tolist() == ["young smoker", "old", "all"]
    assert W.name == "predicates"

    W2 = from_predicates(dom, ["smoker == 'no'", lambda c: c["age"] == 40])
    assert W2.labels.tolist() == ["smoker == 'no'", "q1"]
    np.testing.assert_array_equal(W2.toarray(), [[1, 0, 1, 0, 1, 0], [0, 0, 1, 1, 0, 0]])


def test_from_predicates_nullable_boolean():
    W = from_predicates(2, [lambda c: pd.array([True, False], dtype="boolean")])
    np.testing.assert_array_equal(W.toarray(), [[1, 0]])
    with pytest.raises(ValueError, match="'q0' gave missing values"):
        from_predicates(2, [lambda c: pd.Series([True, None], dtype="boolean")])


@pytest.mark.parametrize(
    "predicate, match",
    [
        ("income > 3", "'income > 3' could not be evaluated"),
        ("age +", "'age \\+' could not be evaluated"),
        ("age", "'age' must give a boolean mask of length 6"),
        (lambda c: [True, False], "'q0' must give a boolean mask of length 6"),
        (lambda c: c["nope"], "'q0' raised KeyError"),
        (3, "must be an expression string or a callable"),
    ],
)
def test_from_predicates_errors(predicate, match):
    with pytest.raises(ValueError, match=match):
        from_predicates({"age": [20, 40, 60], "smoker": ["no", "yes"]}, [predicate])


def test_from_predicates_bad_container():
    with pytest.raises(ValueError, match="no predicates"):
        from_predicates(3, [])
    with pytest.raises(ValueError, match="dict label"):
        from_predicates(3, "x > 1")


# ---------------------------------------------------------------- custom
def test_custom():
    W = custom([[1, 0, 1]], domain=3, labels=["odd"])
    assert W.name == "custom" and W.labels.tolist() == ["odd"]
    assert W.domain == Domain.from_size(3)
    with pytest.raises(ValueError, match="3 columns but the domain has 2 cells"):
        custom([[1, 0, 1]], domain=2)


def test_builders_accept_domain_forms():
    for form in (DOM, Domain(DOM)):
        assert workloads.histogram(form).domain == Domain(DOM)
    assert workloads.prefix(4).domain == Domain.from_size(4)
    with pytest.raises(ValueError, match="Expected a domain"):
        workloads.histogram("age")
