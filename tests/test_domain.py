import json
import pickle
import re

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


# ---------------------------------------------------------------- fast encoding paths
# Domain.encode answers common inputs without hashing every row (integer ranges, lookup tables,
# pandas Categorical codes, Arrow string lookups). Each fast path must give exactly the codes of
# the general lookup and leave every error to it (same messages, nothing dropped or wrapped).
def _slow_encode(domain, frame):
    """The general algorithm: one pandas hashed lookup per column, then the flat index."""
    codes = []
    for index, column in zip(domain._indexes, domain.columns, strict=True):
        code = index.get_indexer(frame[column].to_numpy())
        assert (code >= 0).all()
        codes.append(code)
    return np.ravel_multi_index(codes, domain.shape)


def _general_error(domain, values):
    """The message of the general path's error for a one-column domain."""
    with pytest.raises(ValueError) as info:
        domain._general_codes(0, values)
    return str(info.value)


def _assert_fast(domain, values, expected=None):
    """The fast path takes ``values`` (1-column domain) and agrees with the general path."""
    fast = domain._codec(0).codes(values)[0]
    assert fast is not None, "the fast path was not taken"
    general = domain._general_codes(0, values)
    np.testing.assert_array_equal(fast, general)
    got = domain.encode(values)
    assert got.dtype == np.int64
    np.testing.assert_array_equal(got, general)
    if expected is not None:
        assert got.tolist() == list(expected)


def _assert_same_error(domain, values, match):
    """The fast path declines ``values``; encode raises the general path's error."""
    assert domain._codec(0).codes(values)[0] is None
    message = _general_error(domain, values)
    assert re.search(match, message), message
    with pytest.raises(ValueError) as info:
        domain.encode(values)
    assert str(info.value) == message


@pytest.mark.parametrize("categories", [range(5), range(7, 19), range(-6, 3), [-3, 10, 4, 0, 7]])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint16", "uint64", "float64",
                                   "float32", "object"])
def test_fast_integer_paths_match_general(categories, dtype):
    d = Domain({"x": categories})
    cats = np.array(list(categories))
    if dtype.startswith("u") and cats.min() < 0:
        cats = cats[cats >= 0]
    rng = np.random.default_rng(len(cats))
    values = rng.choice(cats, 2000)
    array = values.astype(dtype) if dtype != "object" else np.array(values.tolist(), dtype=object)
    expected = [list(categories).index(v) for v in values.tolist()]
    _assert_fast(d, array, expected)
    _assert_fast(d, pd.Series(array), expected)
    np.testing.assert_array_equal(d.encode(pd.DataFrame({"x": array})), expected)


@pytest.mark.parametrize("categories", [range(5), range(7, 19), range(-6, 3), [-3, 10, 4, 0, 7]])
def test_fast_integer_paths_refuse_values_just_outside(categories):
    d = Domain({"x": categories})
    low, high = min(categories), max(categories)
    outside = [low - 1, high + 1] + ([5] if 5 not in categories and low < 5 < high else [])
    for value in outside:
        for dtype in ("int64", "int32", "float64", "object"):
            array = np.array([low, value, high], dtype=dtype)
            if dtype == "object":
                array = np.array([low, value, high], dtype=object)
            _assert_same_error(d, array, rf"'x' has 1 rows .* not among .*\[{value}(\.0)?\]")
            with pytest.raises(ValueError, match=rf"'x' has 1 rows .*\[{value}(\.0)?\]"):
                d.encode(pd.DataFrame({"x": array}))


def test_fast_integer_path_small_dtypes_and_huge_values():
    d = Domain({"x": range(-5, 5)})
    _assert_fast(d, np.array([-5, 0, 4], dtype=np.int8), [0, 5, 9])
    _assert_fast(d, np.array([0, 4], dtype=np.uint8), [5, 9])
    # uint64 values beyond int64 must not wrap around into the categories' range
    huge = np.array([0, 2**64 - 3], dtype=np.uint64)
    _assert_same_error(d, huge, r"not among .*\[18446744073709551613\]")
    # int64 extremes: value - low must not wrap around either
    extremes = np.array([0, np.iinfo(np.int64).min, np.iinfo(np.int64).max], dtype=np.int64)
    _assert_same_error(d, extremes, r"'x' has 2 rows")
    big = np.array([1, 2**70], dtype=object)  # beyond int64: refused, never truncated
    _assert_same_error(d, big, r"not among .*\[1180591620717411303424\]")


def test_fast_integer_paths_for_wide_categories():
    # a sparse, wide set of integers (no dense table) and categories near the int64 limits
    for categories in ([0, 10**12, -(10**12), 7], [2**62, -(2**62), 0], [2**63 - 1, 0]):
        d = Domain({"x": categories})
        values = np.array(categories * 3, dtype=np.int64)
        np.testing.assert_array_equal(d.encode(values), list(range(len(categories))) * 3)
        with pytest.raises(ValueError, match=r"not among .*\[1\]"):
            d.encode(np.array(categories + [1], dtype=np.int64))


def test_fast_float_path_keeps_pandas_matching():
    d = Domain({"x": range(3, 8)})
    _assert_fast(d, np.array([3.0, 7.0, -0.0 + 5]), [0, 4, 2])
    _assert_same_error(d, np.array([3.0, 4.5]), r"not among .*\[4\.5\]")
    _assert_same_error(d, np.array([3.0, np.inf]), r"not among .*\[inf\]")
    _assert_same_error(d, np.array([3.0, np.nan, np.nan]), "'x' has 2 missing values")
    _assert_same_error(d, np.array([3.0, 1e30]), r"not among .*\[1e\+30\]")
    # float16 is left to the general lookup (pandas 3 refuses it): the behaviour is unchanged
    assert d._codec(0).codes(np.array([3.0, 4.0], dtype=np.float16))[0] is None


def test_fast_object_path_declines_anything_but_plain_integers():
    d = Domain({"x": [0, 1, 2]})
    _assert_same_error(d, np.array([0, "1"], dtype=object), r"not among .*\['1'\]")
    _assert_same_error(d, np.array([0, None], dtype=object), "'x' has 1 missing values")
    _assert_same_error(d, np.array([0, 1.5], dtype=object), r"not among .*\[1\.5\]")
    # the existing (pandas) behaviour for mixed bool/int objects is kept, whatever it is
    mixed = np.array([True, 1, 2], dtype=object)
    assert d._codec(0).codes(mixed)[0] is None
    np.testing.assert_array_equal(d.encode(mixed), d._general_codes(0, mixed))


def test_fast_nullable_integers():
    d = Domain({"x": range(10, 20)})
    _assert_fast(d, pd.Series(pd.array([10, 19, 12], dtype="Int64")), [0, 9, 2])
    _assert_fast(d, pd.Series(pd.array([10, 19, 12], dtype="UInt8")), [0, 9, 2])
    values = pd.Series(pd.array([10, None, 12, None], dtype="Int64"))
    _assert_same_error(d, values, "'x' has 2 missing values")
    with pytest.raises(ValueError, match="'x' has 2 missing values"):
        d.encode(pd.DataFrame({"x": values}))
    with pytest.raises(ValueError, match=r"not among .*\[20\]"):
        d.encode(pd.DataFrame({"x": pd.array([10, 20], dtype="Int64")}))


def test_fast_bool_paths():
    d = Domain({"b": [True, False]})
    _assert_fast(d, np.array([False, True, True]), [1, 0, 0])
    _assert_fast(d, pd.Series([True, False]), [0, 1])
    _assert_same_error(Domain({"b": [True]}), np.array([True, False]), r"not among .*\[False\]")
    _assert_same_error(d, pd.Series(pd.array([True, None], dtype="boolean")), "1 missing")
    # bool data over integer categories (and the reverse) keep the general behaviour: refused
    _assert_same_error(Domain({"b": [0, 1]}), np.array([True, False]), r"'b' has 2 rows")
    _assert_same_error(d, np.array([1, 0]), r"'b' has 2 rows")


STRINGS = [f"s{i:03d}" for i in range(100)]


@pytest.mark.parametrize("kind", ["str", "string[pyarrow]", "arrow", "object", "numpy"])
def test_fast_string_paths_match_general(kind):
    pytest.importorskip("pyarrow")
    d = Domain({"s": STRINGS[::-1]})  # not sorted: codes follow the declared order
    values = np.array(STRINGS, dtype=object)[np.random.default_rng(3).integers(0, 100, 5000)]
    series = {
        "str": lambda v: pd.Series(v, dtype="str"),
        "string[pyarrow]": lambda v: pd.Series(v, dtype="string[pyarrow]"),
        "arrow": lambda v: pd.Series(v, dtype="large_string[pyarrow]"),
        "object": lambda v: np.array(v, dtype=object),
        "numpy": lambda v: np.array(v, dtype=str),
    }[kind]
    expected = [99 - int(v[1:]) for v in values]
    _assert_fast(d, series(values), expected)
    bad = values.copy()
    bad[[3, 7, 9]] = ["nope", "s999", "nope"]
    _assert_same_error(d, series(bad), r"'s' has 3 rows .* not among .*\['nope', 's999'\]")
    if kind != "numpy":
        missing = values.copy()
        missing[[1, 2]] = None
        _assert_same_error(d, series(missing), "'s' has 2 missing values")


def test_fast_categorical_path():
    d = Domain({"s": ["a", "b", "c"]})
    extra = pd.Categorical(["c", "a", "c", "b"], categories=["zz", "b", "a", "c", "d"])
    _assert_fast(d, pd.Series(extra), [2, 0, 2, 1])  # unused, undeclared categories are fine
    used = pd.Categorical(["c", "zz", "a", "zz"], categories=["zz", "b", "a", "c"])
    _assert_same_error(d, pd.Series(used), r"'s' has 2 rows .* not among .*\['zz'\]")
    nan = pd.Categorical(["c", None, "a"], categories=["a", "c"])
    _assert_same_error(d, pd.Series(nan), "'s' has 1 missing values")
    numbers = pd.Categorical([5, 3, 5], categories=[5, 4, 3])
    _assert_fast(Domain({"s": range(3, 6)}), pd.Series(numbers), [2, 0, 2])
    _assert_same_error(Domain({"s": [3, 4]}), pd.Series(numbers), r"not among .*\[5\]")
    # a categorical column in a DataFrame, with a second column
    frame = pd.DataFrame({"s": extra, "t": [1, 0, 1, 1]})
    two = Domain({"t": [0, 1], "s": ["a", "b", "c"]})
    np.testing.assert_array_equal(two.encode(frame), _slow_encode(two, frame))


def test_fast_paths_on_random_frames():
    rng = np.random.default_rng(7)
    letters = [f"c{i}" for i in range(24)]
    d = Domain({"a": letters, "b": range(-4, 8), "c": [9, 2, 5, 100], "e": [False, True]})
    n = 3000
    frame = pd.DataFrame({
        "a": np.array(letters, dtype=object)[rng.integers(0, 24, n)],
        "b": rng.integers(-4, 8, n).astype(np.int16),
        "c": rng.choice([9, 2, 5, 100], n).astype(float),
        "e": rng.integers(0, 2, n).astype(bool),
    })
    expected = _slow_encode(d, frame)
    for variant in (frame, frame.astype({"a": "category"}), frame.astype({"a": object}),
                    frame.astype({"b": "Int64", "c": "int32"}), frame[::-1].reset_index(drop=True)):
        np.testing.assert_array_equal(d.encode(variant), _slow_encode(d, variant))
    np.testing.assert_array_equal(d.encode(frame.to_numpy()), expected)
    np.testing.assert_array_equal(d.encode(frame.to_numpy().tolist()), expected)
    # the first bad column is named, in domain order
    bad = frame.assign(b=frame["b"].where(np.arange(n) != 5, 8), a=frame["a"].astype(object))
    bad.loc[9, "a"] = "zz"
    with pytest.raises(ValueError, match=r"'a' has 1 rows .*\['zz'\]"):
        d.encode(bad)
    with pytest.raises(ValueError, match=r"'b' has 1 rows .*\[8\]"):
        d.encode(bad.assign(a=frame["a"]))


def test_encode_returns_a_new_array():
    d = Domain({"x": range(4)})
    values = np.array([0, 1, 2, 3])
    out = d.encode(values)
    out[:] = 0
    assert values.tolist() == [0, 1, 2, 3]
    strings = Domain({"s": ["a", "b"]}).encode(pd.Series(["b", "a"], dtype="str"))
    assert strings.tolist() == [1, 0] and strings.dtype == np.int64 and strings.flags.writeable


def test_cached_lookups_do_not_change_pickling_equality_or_hash():
    d = Domain({"x": range(-3, 3), "s": ["u", "v"]})
    before = pickle.dumps(d)
    frame = pd.DataFrame({"x": [-3, 2], "s": pd.Series(["v", "u"], dtype="str")})
    assert d.encode(frame).tolist() == [1, 10]
    assert "_codecs" in d.__dict__  # the lookups are cached...
    assert pickle.dumps(d) == before  # ...but never pickled
    copy = pickle.loads(pickle.dumps(d))
    assert copy == d and hash(copy) == hash(d) and copy == Domain(d.to_dict())
    assert copy.encode(frame).tolist() == [1, 10]


@pytest.mark.parametrize("categories", [range(5), range(10, -10, -3),
                                        np.arange(7, dtype=np.uint8), np.array([5, -2, 9]),
                                        pd.Index([4, 2, 8]), pd.Series([3, 1]),
                                        range(2**63 - 3, 2**63)])
def test_integer_categories_take_the_fast_path_with_the_same_result(categories):
    """A range or an integer array skips the per-value checks: same categories, index and
    codes as the plain list of python ints."""
    fast = Domain({"t": categories})
    plain = Domain({"t": [int(c) for c in categories]})
    assert fast.categories["t"] == plain.categories["t"]
    assert all(type(c) is int for c in fast.categories["t"])
    assert fast == plain
    values = list(categories)[::-1]
    np.testing.assert_array_equal(fast.encode(pd.DataFrame({"t": values})),
                                  plain.encode(pd.DataFrame({"t": values})))


def test_integer_fast_path_still_refuses_bad_categories():
    with pytest.raises(ValueError, match="no categories"):
        Domain({"t": range(0)})
    with pytest.raises(ValueError, match=r"duplicate categories: \[1\]"):
        Domain({"t": np.array([1, 2, 1])})
    # Beyond int64, and bools among ints, go through the general path.
    big = Domain({"t": np.array([2**64 - 1, 0], dtype=np.uint64)})
    assert big.categories["t"] == [2**64 - 1, 0]
    assert big.encode(pd.DataFrame({"t": [0]})).tolist() == [1]
    with pytest.raises(ValueError, match="duplicate"):
        Domain({"t": [1, True]})
