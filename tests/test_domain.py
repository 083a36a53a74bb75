import json

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp.domain import Domain, as_domain

CATS = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "n": [1, 2]}


@pytest.fixture
def dom():
    return Domain(CATS)


# ---------------------------------------------------------------- construction
def test_basic_properties(dom):
    assert dom.columns == ["age", "smoker", "n"]
    assert dom.categories == CATS
    assert dom.shape == (3, 2, 2)
    assert dom.size == 12 and isinstance(dom.size, int)
    assert dom.n_columns == 3


def test_accepts_various_sequences():
    d = Domain({"a": range(3), "b": pd.Index(["u", "v"]), "c": np.array([1.5, 2.5]), "d": ("z",)})
    assert d.categories == {"a": [0, 1, 2], "b": ["u", "v"], "c": [1.5, 2.5], "d": ["z"]}
    assert all(type(v) is float for v in d.categories["c"])
    assert d.shape == (3, 2, 2, 1)


def test_copy_and_equality(dom):
    copy = Domain(dom)
    assert copy == dom and copy is not dom
    assert hash(copy) == hash(dom)
    assert Domain(dom.to_dict()) == dom
    assert dom != Domain({"age": ["<30", "30-50", ">50"]})
    assert dom != Domain({"n": [1, 2], "smoker": ["no", "yes"], "age": ["<30", "30-50", ">50"]})
    assert dom != "not a domain"
    assert len({dom, copy}) == 1


def test_attributes_are_copies(dom):
    dom.categories["age"].append("oops")
    dom.columns.append("oops")
    assert dom.shape == (3, 2, 2)


def test_to_dict_is_json(dom):
    assert json.loads(json.dumps(dom.to_dict())) == CATS


def test_repr(dom):
    assert repr(dom) == f"Domain({CATS!r})"
    assert "100 categories" in repr(Domain.from_size(100))


def test_huge_size_not_allocated():
    d = Domain({f"c{i}": range(100) for i in range(20)})
    assert d.size == 100**20


@pytest.mark.parametrize(
    "categories, match",
    [
        ({}, "empty"),
        ({"age": []}, "'age' has no categories"),
        ({"age": ["a", "b", "a"]}, r"'age' has duplicate categories: \['a'\]"),
        ({"n": [1, 1.0]}, "'n' has duplicate categories"),
        ({"age": ["a", None]}, "'age' has a missing value"),
        ({"age": ["a", np.nan]}, "'age' has a missing value"),
        ({"age": [1.0, float("nan")]}, "'age' has a missing value"),
        ({"age": "abc"}, "'age' must be a sequence"),
        ({"age": {"a", "b"}}, "'age' were given as a set"),
        ({"age": 3}, "'age' must be a sequence"),
        ({"age": [["a"], ["b"]]}, "'age' must be hashable"),
        ({1: ["a"]}, "Column names must be strings"),
        (["age"], "must be a mapping"),
    ],
)
def test_invalid_categories(categories, match):
    with pytest.raises(ValueError, match=match):
        Domain(categories)


def test_single_category_allowed():
    d = Domain({"const": ["only"]})
    assert d.size == 1
    assert d.encode(["only", "only"]).tolist() == [0, 0]


# ---------------------------------------------------------------- from_size / as_domain
def test_from_size():
    d = Domain.from_size(5, column="v")
    assert d.columns == ["v"] and d.categories["v"] == [0, 1, 2, 3, 4]
    assert Domain.from_size(5) == Domain({"x": range(5)})
    for bad in (0, -1, 2.0, True):
        with pytest.raises(ValueError, match="n must be an integer"):
            Domain.from_size(bad)


def test_as_domain(dom):
    assert as_domain(dom) is dom
    assert as_domain(CATS) == dom
    assert as_domain(4) == Domain.from_size(4)
    assert as_domain(np.int64(4)) == Domain.from_size(4)
    for bad in ("abc", 2.5, None, [1, 2], True):
        with pytest.raises(ValueError, match="Expected a domain"):
            as_domain(bad)


# ---------------------------------------------------------------- from_data
def test_from_data_dataframe_warns_and_sorts():
    df = pd.DataFrame({"b": [3, 1, 3], "a": ["y", "x", "y"], "other": [0.5, 0.1, 0.2]})
    with pytest.warns(UserWarning, match="leaks information.*explicitly"):
        d = Domain.from_data(df, columns=["a", "b"])
    assert d.to_dict() == {"a": ["x", "y"], "b": [1, 3]}
    assert all(type(v) is int for v in d.categories["b"])
    with pytest.warns(UserWarning):
        assert Domain.from_data(df).columns == ["b", "a", "other"]


def test_from_data_categorical_keeps_declared_categories():
    df = pd.DataFrame({"s": pd.Categorical(["yes"], categories=["yes", "no", "maybe"])})
    with pytest.warns(UserWarning):
        d = Domain.from_data(df)
    assert d.categories["s"] == ["yes", "no", "maybe"]


def test_from_data_arrays():
    with pytest.warns(UserWarning):
        d = Domain.from_data(np.array([[1, 20], [3, 10], [1, 10]]))
    assert d.to_dict() == {"x0": [1, 3], "x1": [10, 20]}
    with pytest.warns(UserWarning):
        d = Domain.from_data(np.array([[1, 20]]), columns=["p", "q"])
    assert d.columns == ["p", "q"]
    with pytest.warns(UserWarning):
        assert Domain.from_data(["b", "a", "b"]).to_dict() == {"x0": ["a", "b"]}
    with pytest.warns(UserWarning):
        assert Domain.from_data(pd.Series([2, 1], name="s")).to_dict() == {"s": [1, 2]}


def test_from_data_errors():
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="'a' has 1 missing"):
        Domain.from_data(pd.DataFrame({"a": ["x", None], "b": [1, 2]}))
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="'x1' has 1 missing"):
        Domain.from_data(np.array([[1.0, 2.0], [1.0, np.nan]]))
    with pytest.warns(UserWarning), pytest.raises(ValueError, match=r"\['zz'\] are not in"):
        Domain.from_data(pd.DataFrame({"a": [1]}), columns=["zz"])
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="no rows"):
        Domain.from_data(pd.DataFrame({"a": []}))
    with pytest.warns(UserWarning), pytest.raises(ValueError, match="columns has 1 names"):
        Domain.from_data(np.zeros((2, 2)), columns=["a"])


# ---------------------------------------------------------------- encode / decode
def test_flat_order_matches_ravel_multi_index(dom):
    codes = np.indices(dom.shape).reshape(dom.n_columns, -1)
    rows = {
        c: np.array(dom.categories[c], dtype=object)[k]
        for c, k in zip(dom.columns, codes, strict=True)
    }
    expected = np.ravel_multi_index(tuple(codes), dom.shape)
    got = dom.encode(pd.DataFrame(rows))
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, expected)
    np.testing.assert_array_equal(got, np.arange(dom.size))


def test_encode_decode_round_trip(dom):
    rng = np.random.default_rng(0)
    idx = rng.integers(0, dom.size, 1000)
    df = dom.decode(idx)
    assert list(df.columns) == dom.columns
    np.testing.assert_array_equal(dom.encode(df), idx)
    np.testing.assert_array_equal(dom.encode(df.to_numpy()), idx)
    np.testing.assert_array_equal(dom.encode(df.values.tolist()), idx)
    np.testing.assert_array_equal(dom.encode(df.astype("category")), idx)
    # extra columns are ignored, column order does not matter
    shuffled = df[["n", "age", "smoker"]].assign(extra=1.0)
    np.testing.assert_array_equal(dom.encode(shuffled), idx)


def test_decode_dtypes_follow_categories(dom):
    df = dom.decode([0, 11])
    assert df["n"].dtype == np.int64
    assert df.to_dict("list") == {"age": ["<30", ">50"], "smoker": ["no", "yes"], "n": [1, 2]}


def test_encode_one_column_inputs():
    d = Domain({"v": [1, 2, 3]})
    assert d.encode([3, 1]).tolist() == [2, 0]
    assert d.encode(np.array([3.0, 1.0])).tolist() == [2, 0]  # 1.0 matches 1, as in pandas
    assert d.encode(pd.Series([2])).tolist() == [1]
    assert d.encode(np.array([[2], [3]])).tolist() == [1, 2]
    with pytest.raises(ValueError, match=r"'v' has 1 rows .* not among .*\[2\.5\]"):
        d.encode([2.5, 1])
    with pytest.raises(ValueError, match=r"not among .*\['1'\]"):
        d.encode(["1"])


def test_encode_missing_columns(dom):
    with pytest.raises(ValueError, match=r"missing the domain column\(s\) \['smoker', 'n'\]"):
        dom.encode(pd.DataFrame({"age": ["<30"]}))


def test_encode_missing_values(dom):
    df = pd.DataFrame({"age": ["<30", None, np.nan], "smoker": ["no"] * 3, "n": [1, 1, 2]})
    with pytest.raises(ValueError, match="'age' has 2 missing values"):
        dom.encode(df)
    with pytest.raises(ValueError, match="'v' has 1 missing"):
        Domain({"v": [1.0, 2.0]}).encode(np.array([1.0, np.nan]))


def test_encode_unknown_values_are_listed(dom):
    bad = [f"b{i}" for i in range(8)] + ["<30", "b0"]
    df = pd.DataFrame({"age": bad, "smoker": ["no"] * 10, "n": [1] * 10})
    with pytest.raises(ValueError) as info:
        dom.encode(df)
    message = str(info.value)
    assert "'age' has 9 rows" in message
    assert "'b0', 'b1', 'b2', 'b3', 'b4', ... (8 in all)" in message
    assert "b5" not in message


def test_encode_shape_errors(dom):
    with pytest.raises(ValueError, match="X has 2 columns but the domain has 3 columns"):
        dom.encode([["<30", "no"]])
    with pytest.raises(ValueError, match="1-D data can only be encoded"):
        dom.encode(["<30", "no", 1])
    with pytest.raises(ValueError, match="no rows"):
        dom.encode(pd.DataFrame({"age": [], "smoker": [], "n": []}))
    with pytest.raises(ValueError, match="no rows"):
        Domain.from_size(3).encode([])
    with pytest.raises(ValueError, match="3 dimensions"):
        dom.encode(np.zeros((2, 3, 1)))
    with pytest.raises(ValueError, match="appears more than once"):
        Domain({"a": [1]}).encode(pd.DataFrame([[1, 1]], columns=["a", "a"]))


def test_decode_errors(dom):
    with pytest.raises(ValueError, match=r"outside \[0, 12\): \[-1, 12\]"):
        dom.decode([0, 12, -1])
    with pytest.raises(ValueError, match="must be integers"):
        dom.decode([0.0, 1.5])
    with pytest.raises(ValueError, match="must be 1-D"):
        dom.decode([[0, 1]])


# ---------------------------------------------------------------- cells / labels
def test_cells(dom):
    cells = dom.cells()
    assert cells.shape == (12, 3)
    assert cells.iloc[0].tolist() == ["<30", "no", 1]
    assert cells.iloc[1].tolist() == ["<30", "no", 2]
    assert cells.iloc[-1].tolist() == [">50", "yes", 2]
    np.testing.assert_array_equal(dom.encode(cells), np.arange(12))


def test_cell_labels(dom):
    labels = dom.cell_labels()
    assert len(labels) == 12
    assert labels[:2] == ["age=<30, smoker=no, n=1", "age=<30, smoker=no, n=2"]
    assert Domain({"age": ["<30", ">=30"]}).cell_labels() == ["age=<30", "age=>=30"]


def test_too_large_to_enumerate():
    d = Domain({"a": range(2**12), "b": range(2**11)})
    with pytest.raises(ValueError, match="too large to enumerate"):
        d.cells()
    with pytest.raises(ValueError, match="too large to enumerate"):
        d.cell_labels()


def test_tuple_categories():
    d = Domain({"pair": [(0, 1), (1, 0)]})
    assert d.encode(pd.Series([(1, 0), (0, 1)])).tolist() == [1, 0]
    assert d.decode([1])["pair"].tolist() == [(1, 0)]
