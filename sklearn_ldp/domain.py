"""The public, finite domain of record types and its flat (row-major) index.

A :class:`Domain` is the product of the categories of a few chosen columns. Each record maps to
one *cell* of that product, and each cell has a *flat index* in ``range(domain.size)``: the
C-order (row-major) index of its category codes, first column slowest, exactly
``np.ravel_multi_index(codes, domain.shape)``.

The categories are public knowledge. They must be declared up front, never learned silently from
the private data (:meth:`Domain.from_data` exists for exploration and warns).
"""

import itertools
import math
import numbers
import warnings
from collections.abc import Mapping, Set, Sized

import numpy as np
import pandas as pd

from ._validation import check_positive_int, describe, refuse_deep_nesting
from .deploy.limits import check_size, get_limits

__all__ = ["Domain", "as_domain", "check_cells", "check_column_size"]

# Enumerating a domain (cells(), cell_labels()) allocates one row per cell; refuse beyond this.
MAX_ENUMERATED_CELLS = 2**22
# How many distinct offending values an error message shows.
_N_SHOWN = 5
# Most categories Domain.from_data reads from one column. Beyond it the column is almost surely
# an identifier or a measurement, not a category: a domain of one cell per distinct value makes
# every strategy slow (the issue that motivated it ran for many minutes) and its estimates
# useless (each cell holds a handful of users), and reading it from the private data leaks the
# values. Declared categories have no such limit.
MAX_CATEGORIES_FROM_DATA = 1000
_INT64_MAX = np.iinfo(np.int64).max


def _is_missing(value):
    """True for None, NaN, NaT, pd.NA (scalars only; containers are never "missing")."""
    if value is None:
        return True
    try:
        missing = pd.isna(value)
    except (TypeError, ValueError):
        return False
    return isinstance(missing, (bool, np.bool_)) and bool(missing)


def _to_python(value):
    """A numpy scalar as the matching python object; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value


def _object_array(values):
    """A 1-D object array holding ``values`` as they are (tuples are not unpacked)."""
    array = np.empty(len(values), dtype=object)
    for i, value in enumerate(values):
        array[i] = value
    return array


def _shorten(values, limit=_N_SHOWN):
    """A short text listing at most ``limit`` values."""
    values = list(values)
    text = ", ".join(repr(_to_python(v)) for v in values[:limit])
    if len(values) > limit:
        text += f", ... ({len(values)} in all)"
    return f"[{text}]"


def _product_strings(parts, sep):
    """All combinations of strings from ``parts`` (1-D arrays), joined by ``sep``, in C order.

    The first array varies slowest, like the rows of a Kronecker product or a flat index.
    """
    sizes = [len(p) for p in parts]
    codes = np.unravel_index(np.arange(math.prod(sizes)), sizes)
    result = np.asarray(parts[0], dtype=object)[codes[0]]
    for part, code in zip(parts[1:], codes[1:], strict=True):
        result = result + sep + np.asarray(part, dtype=object)[code]
    return result.tolist()


def check_column_size(column, categories, where="Domain", alternative=None):
    """Refuse a column of more than ``max_cells`` categories before anything is built.

    ``where`` and ``alternative`` (the scalable way, or None) go into the message.
    ``len`` of a list, a range or an array costs nothing; any other iterable (a generator)
    is read up to one past the cap, so that an endless one cannot hang. Returns the
    categories, read into a list when they had no length.
    """
    cap = get_limits()["max_cells"]
    field = f"the number of categories of column {column!r}"
    if isinstance(categories, range):  # len() overflows past sys.maxsize
        size = max(0, -((categories.start - categories.stop) // categories.step))
    elif isinstance(categories, np.ndarray) and categories.ndim != 1:
        raise ValueError(f"Categories of column {column!r} must be a sequence of category "
                         f"values (a 1-D array), got {describe(categories)}.")
    elif isinstance(categories, Sized):
        size = len(categories)
    elif isinstance(categories, str | bytes) or not hasattr(categories, "__iter__"):
        return categories  # refused with a message by _check_categories
    else:
        categories = list(itertools.islice(categories, cap + 1))
        size = len(categories)
        field += " (an iterator, read up to the limit)"
    if size > cap:
        try:
            check_size(size, field, "max_cells", where)
        except ValueError as exc:
            raise ValueError(f"{exc} {alternative}" if alternative else str(exc)) from None
    return categories


def check_cells(domain, where, alternative=None):
    """Refuse a domain whose product of category counts exceeds ``max_cells``.

    For the strategies that index or allocate one entry per cell of the joint domain
    (frequency oracles, ranges, matrices, marginal tables); the product is a Python
    integer, nothing is allocated. ``alternative`` is appended to the message: the scalable
    way to collect such records.

    Examples
    --------
    >>> check_cells(Domain({"a": range(4), "b": range(3)}), "LDPEncoder.categories")
    12
    """
    cells = domain.n_cells
    cap = get_limits()["max_cells"]
    if cells > cap:
        shape = " x ".join(str(size) for size in domain.shape[:8])
        if domain.n_columns > 8:
            shape += f" x ... ({domain.n_columns} columns)"
        try:
            check_size(cells, f"the cells of the domain (product of the category counts "
                              f"{shape})", "max_cells", where)
        except ValueError as exc:
            raise ValueError(f"{exc} {alternative}" if alternative else str(exc)) from None
    return cells


def _integer_categories(categories):
    """The categories as an int64 array when they come as a ``range`` or an integer array or
    Index within int64, else None: integers are hashable and never missing, so the per-value
    checks of :func:`_check_categories` (seconds at 2^20 values) have nothing to find."""
    if isinstance(categories, range):
        if categories and max(abs(categories[0]), abs(categories[-1])) <= _INT64_MAX:
            return np.arange(categories.start, categories.stop, categories.step,
                             dtype=np.int64)
        return None
    if isinstance(categories, (np.ndarray, pd.Index, pd.Series)) and (
            categories.dtype.kind in "iu" and categories.ndim == 1 and len(categories)):
        values = np.asarray(categories)
        if values.dtype.kind == "i" or values.max() <= _INT64_MAX:
            return values.astype(np.int64)
    return None


def _check_categories(column, categories):
    """Validate one column's categories; return them as a list of python objects."""
    if isinstance(categories, (str, bytes)) or isinstance(categories, Mapping):
        raise ValueError(
            f"Categories of column {column!r} must be a sequence of category values "
            f"(list, tuple, range, pandas Index...), got {describe(categories)}."
        )
    if isinstance(categories, Set):
        raise ValueError(
            f"Categories of column {column!r} were given as a set, which has no order; the "
            "order of the categories fixes the flat index, so pass a list or a tuple."
        )
    try:
        cats = [_to_python(c) for c in categories]
    except TypeError:
        raise ValueError(
            f"Categories of column {column!r} must be a sequence of category values, got "
            f"{describe(categories)}."
        ) from None
    if not cats:
        raise ValueError(f"Column {column!r} has no categories; give at least one.")
    missing = [c for c in cats if _is_missing(c)]
    if missing:
        raise ValueError(
            f"Column {column!r} has a missing value (NaN/None) among its categories; use an "
            "explicit category such as 'missing' instead."
        )
    for c in cats:
        try:
            hash(c)
        except TypeError:
            raise ValueError(
                f"Categories of column {column!r} must be hashable; {describe(c)} is not."
            ) from None
    return cats


def _category_index(categories):
    """A pandas Index over the categories, used for vectorized lookups (never a MultiIndex)."""
    if all(type(c) is int for c in categories) and (
            -_INT64_MAX - 1 <= min(categories) and max(categories) <= _INT64_MAX):
        # Python ints (bool excluded; most often a range): the int64 index infer_objects
        # would build from the object array, without filling the object array one by one.
        return pd.Index(np.array(categories, dtype=np.int64))
    return pd.Index(_object_array(categories)).infer_objects()


# Integer categories within this bound take the integer fast path: ``value - low`` computed in
# int64 (wrapping around on overflow) can then only land in ``[0, n)`` for a value within
# ``[low, low + n)``, for any int64 value and any number of categories n < 2**62.
_INT_FAST_BOUND = 2**62
# Largest span (max - min + 1) of non-contiguous integer categories looked up in a dense table.
_MAX_DENSE_TABLE = 2**22
# Float data match integer categories through int64 only while every category is exact in float64.
_FLOAT_EXACT_BOUND = 2**53


def _is_arrow_string_dtype(dtype):
    """True for pandas string dtypes stored as Arrow strings (``str``, ``string[pyarrow]``...)."""
    if isinstance(dtype, pd.StringDtype):
        return str(dtype.storage).startswith("pyarrow")  # "pyarrow_numpy" in pandas 2.x
    if isinstance(dtype, pd.ArrowDtype):
        import pyarrow as pa

        return pa.types.is_string(dtype.pyarrow_dtype) or pa.types.is_large_string(
            dtype.pyarrow_dtype)
    return False


class _ColumnCodec:
    """Lookup structures of one domain column for :meth:`Domain.encode`, built on first use.

    Every fast path returns the category codes of the values as a new integer array, or
    ``None`` when it does not apply to them *or* when some value is not among the categories
    (or is missing): :meth:`Domain.encode` then runs the general lookup (``Index.get_indexer``),
    which gives the same codes and raises the error that names the column and the offending
    values. A fast path never decides what is valid; it only answers quickly when all is.
    """

    def __init__(self, categories, index):
        self.index = index
        self.n = len(categories)
        # Python ints, bool excluded: bool data and integer categories are left to pandas's
        # own matching rules (the general lookup), whatever they are. The index is int64
        # exactly when every category is a python int within int64 (_category_index), which
        # spares three loops over the categories (0.3 s at 2^20).
        ints = index.dtype == np.int64
        values = index.to_numpy() if ints else None
        self.low = None  # integer categories (within the fast bound): their minimum
        self.contiguous = False  # categories == range(low, low + n)
        self.table = None  # non-contiguous, small span: code of low + i, or -1
        self.float_exact = False
        if ints and -_INT_FAST_BOUND <= values.min() and values.max() <= _INT_FAST_BOUND:
            low, high = int(values.min()), int(values.max())
            span = high - low + 1
            self.low = low
            self.contiguous = span == self.n and bool(
                np.array_equal(values, np.arange(low, high + 1, dtype=np.int64)))
            if not self.contiguous and span <= min(max(8 * self.n, 2**16), _MAX_DENSE_TABLE):
                self.table = np.full(span, -1, dtype=np.int32)
                self.table[values - low] = np.arange(self.n, dtype=np.int32)
            self.float_exact = max(-low, high) <= _FLOAT_EXACT_BOUND
        self.bool_table = None  # bool categories: code of False and of True, or -1
        if not ints and all(type(c) is bool for c in categories):
            self.bool_table = np.full(2, -1, dtype=np.intp)
            for code, c in enumerate(categories):
                self.bool_table[int(c)] = code
        self.strings = not ints and all(type(c) is str for c in categories)
        self._strings = list(categories) if self.strings else None
        self._value_sets = {}  # Arrow type -> Arrow array of the categories

    # ------------------------------------------------------------ dispatch
    def codes(self, data):
        """``(codes or None, data)`` for a pandas Series or a 1-D numpy array (see class doc).

        A Series without a fast path of its own comes back converted to numpy, so that the
        general lookup does not convert it again.
        """
        if isinstance(data, pd.Series):
            dtype = data.dtype
            if isinstance(dtype, pd.CategoricalDtype):
                return self._categorical_codes(data.array), data
            if self.strings and _is_arrow_string_dtype(dtype):
                return self._arrow_codes(data.array.__arrow_array__()), data
            data = data.to_numpy()
        return self._array_codes(data), data

    def _array_codes(self, data):
        if not isinstance(data, np.ndarray) or data.ndim != 1:
            return None
        kind = data.dtype.kind
        if kind in "iu":
            return None if self.low is None else self._int_codes(data)
        if kind == "b":
            return None if self.bool_table is None else self._bool_codes(data)
        if kind == "f" and data.dtype.itemsize >= 4:  # pandas refuses float16 lookups: kept
            return None if self.low is None or not self.float_exact else self._float_codes(data)
        if kind == "U":
            return self._arrow_codes(data) if self.strings else None
        if kind == "O" and (self.low is not None or self.strings):
            inferred = pd.api.types.infer_dtype(data, skipna=False)
            if inferred == "integer" and self.low is not None:
                try:
                    data = data.astype(np.int64)
                except (OverflowError, TypeError, ValueError):
                    return None
                return self._int_codes(data)
            if inferred == "string" and self.strings:
                return self._arrow_codes(data)
        return None

    # ------------------------------------------------------------ fast paths
    def _int_codes(self, values):
        """Integer data: ``value - low`` after one bounds check (a table if not contiguous)."""
        if values.dtype == np.uint64 and values.size and values.max() > _INT64_MAX:
            return None  # would wrap around in int64
        offset = values.astype(np.int64)  # a copy, whatever the input dtype
        offset -= self.low
        if self.contiguous:
            if (offset.view(np.uint64) >= self.n).any():
                return None
            return offset
        if self.table is None:
            return None  # wide sparse integers: the general (hashed) lookup is as fast
        if (offset.view(np.uint64) >= len(self.table)).any():
            return None
        codes = self.table[offset]
        return None if (codes < 0).any() else codes

    def _float_codes(self, values):
        """Float data holding integral values, matched with integer categories as pandas does."""
        with np.errstate(invalid="ignore"):
            integers = values.astype(np.int64)
        if not (integers == values).all():  # NaN, inf and non-integral values
            return None
        return self._int_codes(integers)

    def _bool_codes(self, values):
        codes = self.bool_table[values.view(np.uint8)]
        return None if (codes < 0).any() else codes

    def _categorical_codes(self, categorical):
        """A pandas Categorical: its codes mapped through a table over its own categories."""
        # The values of the column are np.asarray(categorical), i.e. its categories taken by
        # code: looking the categories up once is the same lookup as looking up every row.
        table = self.index.get_indexer(np.asarray(categorical.categories))
        table = np.append(table, -1)  # code -1 (a missing value) picks this last entry
        codes = table[categorical.codes]
        return None if (codes < 0).any() else codes

    def _arrow_codes(self, data):
        """Strings (Arrow-backed, or numpy str/object arrays of str) via Arrow's hash lookup."""
        try:
            import pyarrow as pa
            import pyarrow.compute as pc
        except ImportError:
            return None
        try:
            if isinstance(data, np.ndarray):
                data = pa.array(data, type=pa.string())
            value_set = self._value_sets.get(data.type)
            if value_set is None:
                value_set = pa.array(self._strings, type=data.type)
                self._value_sets[data.type] = value_set
            result = pc.index_in(data, value_set=value_set)
        except (pa.ArrowException, TypeError, ValueError):
            return None
        if result.null_count:  # missing values, or strings not among the categories
            return None
        return result.to_numpy()


_BINNING_ADVICE = (
    "Bin it at public edges chosen without the data (sklearn_ldp.binning."
    "PublicBinsDiscretizer, or categories={{{column!r}: interval_categories(edges)}} with "
    "sklearn_ldp.binning.interval_categories), or declare its categories explicitly "
    "(categories={{{column!r}: [...]}})."
)


def _check_not_continuous(column, distinct, dtype):
    """Refuse a column of non-integral floats when categories are read from the data.

    ``distinct`` holds the column's distinct values. Every distinct measurement would become
    a category (thousands of cells, each holding a user or two). Integral floats (codes such
    as 0.0/1.0, e.g. an integer column that pandas stored as float) are categories like
    integers, within the cardinality limit.
    """
    distinct = np.asarray(distinct)
    if distinct.dtype.kind == "c":
        bad = np.ones(distinct.shape, dtype=bool)
    elif distinct.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(distinct) | (distinct != np.round(distinct))
    elif distinct.dtype.kind == "O":
        bad = np.array([isinstance(v, float | np.floating | complex | np.complexfloating)
                        and not (np.isfinite(v) and float(np.real(v)).is_integer()
                                 and np.imag(v) == 0)
                        for v in distinct], dtype=bool)
    else:
        return
    if bad.any():
        raise ValueError(
            f"Column {column!r} holds continuous values (dtype {dtype}, e.g. "
            f"{_shorten(distinct[bad][:3], 3)}); reading categories from the data would make "
            "every distinct value a category. " + _BINNING_ADVICE.format(column=column)
        )


def _check_cardinality(column, n_distinct, max_categories):
    """Refuse a column with more than ``max_categories`` (if not None) distinct values."""
    if max_categories is not None and n_distinct > max_categories:
        raise ValueError(
            f"Column {column!r} has {n_distinct} distinct values, more than max_categories="
            f"{max_categories} read from the data: it looks like an identifier or a "
            "measurement, and one category per value would make the domain too large to "
            "collect and estimate well. " + _BINNING_ADVICE.format(column=column)
        )


class Domain:
    """A public, finite domain: the product of the categories of the chosen columns.

    Parameters
    ----------
    categories : mapping or Domain
        Column name (str) -> sequence of its categories (list, tuple, range, pandas Index...),
        in the order that fixes the flat index. Another ``Domain`` is copied.

    Attributes
    ----------
    columns : list of str
        The column names, in mapping order.
    categories : dict
        Column name -> list of its categories (python objects, order kept).

    See Also
    --------
    as_domain : Coerce a Domain, a mapping or an int to a Domain.
    sklearn_ldp.binning.interval_categories : Public bins of a numeric column as categories.
    sklearn_ldp.LDPEncoder : Privatizes the rows of a DataFrame over a domain.
    sklearn_ldp.workloads.marginals : Queries over the columns of a domain.

    Notes
    -----
    Cells are numbered by their C-order (row-major) flat index, first column slowest:
    ``np.ravel_multi_index(codes, domain.shape)``.

    Examples
    --------
    >>> dom = Domain({"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]})
    >>> dom.shape, dom.size
    ((3, 2), 6)
    >>> dom.encode([["<30", "yes"], [">50", "no"]]).tolist()
    [1, 4]
    """

    @refuse_deep_nesting
    def __init__(self, categories):
        if isinstance(categories, Domain):
            categories = categories._categories
        if not isinstance(categories, Mapping):
            raise ValueError(
                "categories must be a mapping column name -> sequence of categories, e.g. "
                f"{{'smoker': ['no', 'yes']}}, got {describe(categories)}."
            )
        if not categories:
            raise ValueError("categories is empty; a domain needs at least one column.")
        self._columns = []
        self._categories = {}
        self._indexes = []
        for column, cats in categories.items():
            if not isinstance(column, str):
                raise ValueError(f"Column names must be strings, got {column!r}.")
            cats = check_column_size(column, cats)
            integers = _integer_categories(cats)
            if integers is not None:  # the index straight from the array
                cats, index = integers.tolist(), pd.Index(integers)
            else:
                cats = _check_categories(column, cats)
                index = _category_index(cats)
            if not index.is_unique:
                raise ValueError(
                    f"Column {column!r} has duplicate categories: "
                    f"{_shorten(index[index.duplicated()].unique())}."
                )
            self._columns.append(column)
            self._categories[column] = cats
            self._indexes.append(index)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_size(cls, n, column="x"):
        """A single-column domain with categories ``range(n)``.

        Parameters
        ----------
        n : int
            Number of cells (>= 1).
        column : str, default="x"
            Name of the column.

        Returns
        -------
        Domain
            The domain ``{column: range(n)}``.

        Examples
        --------
        >>> Domain.from_size(4)
        Domain({'x': [0, 1, 2, 3]})
        """
        n = check_positive_int(n, "n")
        check_size(n, "n", "max_cells", "Domain.from_size")  # before range(n) is indexed
        return cls({column: range(n)})

    @classmethod
    def from_data(cls, X, columns=None, max_categories=None, allow_continuous=True):
        """Read the categories from data (sorted unique values per column). Leaks information.

        Reading the categories from the private data reveals which values occur (rare values in
        particular). Use it to explore; production code should pass the categories explicitly.
        A column with a pandas categorical dtype keeps its declared categories and their order.

        Estimators and encoders that read categories from data (``categories=None``) call it
        with ``max_categories=MAX_CATEGORIES_FROM_DATA`` (1000) and
        ``allow_continuous=False``: a column of non-integral floats (a measurement) and a
        column with more than 1000 distinct values (an identifier, a timestamp) are refused
        there, since one category per distinct value gives a domain too large to collect and
        estimate well. Bin such a column at public edges
        (:class:`~sklearn_ldp.binning.PublicBinsDiscretizer`,
        :func:`~sklearn_ldp.binning.interval_categories`) or declare its categories.

        Parameters
        ----------
        X : DataFrame, 2-D array-like or 1-D array-like
            The data. A 2-D numpy array gets the column names ``"x0", "x1", ...``.
        columns : list of str, optional
            For a DataFrame: the columns to use (default all). For an array: the column names.
        max_categories : int or None, default=None
            Most distinct values read from one column (None: no limit); declared categories
            never have a limit.
        allow_continuous : bool, default=True
            False refuses a column of non-integral (or infinite, or complex) floats instead
            of making each distinct value a category. Integral floats (0.0, 1.0, ...) are read
            like integers.

        Returns
        -------
        Domain
            One column per data column, with its sorted distinct values as categories (or
            the declared categories of a categorical column).

        Raises
        ------
        ValueError
            A column with missing values, with continuous values (``allow_continuous=False``)
            or with more than ``max_categories`` distinct values; no rows; unknown or
            duplicated columns.

        Warns
        -----
        UserWarning
            Always: reading categories from the data leaks information about it.

        Examples
        --------
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     Domain.from_data(pd.DataFrame({"smoker": ["yes", "no", "no"]}))
        Domain({'smoker': ['no', 'yes']})
        """
        warnings.warn(
            "Domain.from_data reads the categories from the data, which leaks information "
            "about the private data (for instance which rare values occur). Production code "
            "should pass the categories explicitly, e.g. Domain({'smoker': ['no', 'yes']}).",
            UserWarning,
            stacklevel=2,
        )
        if isinstance(X, pd.DataFrame):
            names = list(X.columns) if columns is None else list(columns)
            missing = [c for c in names if c not in X.columns]
            if missing:
                raise ValueError(f"Columns {missing!r} are not in the data.")
            series = {name: X[name] for name in names}
        else:
            if isinstance(X, pd.Series):
                default = [X.name if isinstance(X.name, str) else "x0"]
                array = X.to_numpy()[:, np.newaxis]
            else:
                array = np.asarray(X) if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
                if array.ndim == 1:
                    array = array[:, np.newaxis]
                if array.ndim != 2:
                    raise ValueError(f"X must be 1-D or 2-D, got {array.ndim} dimensions.")
                default = [f"x{j}" for j in range(array.shape[1])]
            names = default if columns is None else list(columns)
            if len(names) != array.shape[1]:
                raise ValueError(
                    f"columns has {len(names)} names but the data has {array.shape[1]} columns."
                )
            series = {name: pd.Series(array[:, j]) for j, name in enumerate(names)}
        if not series:
            raise ValueError("The data has no columns.")
        if max_categories is not None:
            max_categories = check_positive_int(max_categories, "max_categories")
        categories = {}
        for name, values in series.items():
            if isinstance(values, pd.DataFrame):
                raise ValueError(f"Column {name!r} appears more than once in the data.")
            if len(values) == 0:
                raise ValueError("The data has no rows; cannot read categories from it.")
            n_missing = int(values.isna().sum())
            if n_missing:
                raise ValueError(
                    f"Column {name!r} has {n_missing} missing values (NaN/None); fill or drop "
                    "them explicitly first."
                )
            if isinstance(values.dtype, pd.CategoricalDtype):
                _check_cardinality(name, len(values.cat.categories), max_categories)
                categories[name] = list(values.cat.categories)
                continue
            distinct = values.unique()
            if not allow_continuous:
                _check_not_continuous(name, distinct, values.dtype)
            _check_cardinality(name, len(distinct), max_categories)
            uniques = [_to_python(v) for v in distinct]
            try:
                uniques = sorted(uniques)
            except TypeError:  # mixed types: sort by their text, deterministically
                uniques = sorted(uniques, key=lambda v: (type(v).__name__, str(v)))
            categories[name] = uniques
        return cls(categories)

    # ------------------------------------------------------------------ properties
    @property
    def columns(self):
        """List of the column names (a copy)."""
        return list(self._columns)

    @property
    def categories(self):
        """Dict column name -> list of categories (a copy)."""
        return {c: list(self._categories[c]) for c in self._columns}

    @property
    def shape(self):
        """Tuple of the number of categories of each column."""
        return tuple(len(self._categories[c]) for c in self._columns)

    @property
    def n_cells(self):
        """Number of cells (python int; may be huge, nothing is allocated).

        The package's one public name for the domain size (``Workload.n_cells``,
        ``Mechanism.n_cells``); :attr:`size` is an alias.

        Returns
        -------
        int
            The product of the numbers of categories of the columns.
        """
        return math.prod(self.shape)

    @property
    def size(self):
        """Number of cells: an alias of :attr:`n_cells` (python int; nothing is allocated)."""
        return self.n_cells

    @property
    def n_columns(self):
        """Number of columns."""
        return len(self._columns)

    # ------------------------------------------------------------------ encoding
    def _codec(self, j):
        """The lookup structures of column ``j``, built on first use and kept (immutable domain)."""
        cache = self.__dict__.get("_codecs")
        if cache is None:
            cache = self.__dict__["_codecs"] = [None] * len(self._columns)
        codec = cache[j]
        if codec is None:
            codec = cache[j] = _ColumnCodec(self._categories[self._columns[j]], self._indexes[j])
        return codec

    def __getstate__(self):
        # The lookup structures are a cache: rebuilt on first use after unpickling.
        state = self.__dict__.copy()
        state.pop("_codecs", None)
        return state

    def _columns_of(self, X):
        """Split ``X`` into one 1-D pandas Series or numpy array of values per domain column."""
        if isinstance(X, pd.DataFrame):
            missing = [c for c in self._columns if c not in X.columns]
            if missing:
                raise ValueError(
                    f"The data is missing the domain column(s) {missing!r}; it has columns "
                    f"{_shorten(X.columns, 10)}."
                )
            values = []
            for c in self._columns:
                col = X[c]
                if isinstance(col, pd.DataFrame):
                    raise ValueError(f"Column {c!r} appears more than once in the data.")
                values.append(col)
            return values
        if isinstance(X, pd.Series):
            array = X
        elif isinstance(X, np.ndarray):
            array = X
        else:
            try:
                array = np.asarray(X, dtype=object)
            except ValueError as exc:
                raise ValueError(f"Cannot read the data as a 1-D or 2-D array: {exc}") from None
        if array.ndim == 0:
            raise ValueError("X must be 1-D or 2-D data, got a scalar.")
        if array.ndim == 1:
            if self.n_columns != 1:
                raise ValueError(
                    f"1-D data can only be encoded over a single-column domain, but the domain "
                    f"has {self.n_columns} columns {self._columns!r}. Reshape your data: pass a "
                    "DataFrame or a 2-D array with one column per domain column."
                )
            return [array]
        if array.ndim != 2:
            raise ValueError(f"X must be 1-D or 2-D, got {array.ndim} dimensions.")
        if array.shape[1] != self.n_columns:
            raise ValueError(
                f"X has {array.shape[1]} columns but the domain has {self.n_columns} columns "
                f"{self._columns!r}."
            )
        return [array[:, j] for j in range(array.shape[1])]

    def encode(self, X):
        """Flat cell indices of the rows of ``X``.

        Parameters
        ----------
        X : DataFrame, 2-D array-like, or 1-D array-like / Series
            A DataFrame must hold every domain column (extra columns are ignored). A 2-D array
            must have exactly ``n_columns`` columns, in domain order. 1-D data is accepted when
            the domain has a single column.

        Returns
        -------
        ndarray of int64, shape (n_rows,)
            ``np.ravel_multi_index(codes, self.shape)``, first column slowest.

        Raises
        ------
        ValueError
            Missing columns, wrong number of columns, no rows, missing values (NaN/None), or
            values that are not among the declared categories. Nothing is silently dropped.

        Examples
        --------
        >>> dom = Domain({"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]})
        >>> df = pd.DataFrame({"smoker": ["yes", "no"], "age": ["30-50", "<30"]})
        >>> dom.encode(df).tolist()
        [3, 0]
        """
        if self.size > _INT64_MAX:
            raise ValueError(
                f"The domain has {self.size} cells, too many for int64 flat indices."
            )
        values = self._columns_of(X)
        n_rows = len(values[0])
        if n_rows == 0:
            raise ValueError("X has no rows; there is nothing to encode.")
        flat = None
        for j, (vals, n_categories) in enumerate(zip(values, self.shape, strict=True)):
            code, vals = self._codec(j).codes(vals)
            if code is None:
                code = self._general_codes(j, vals)
            # Flat index, first column slowest: flat * n_j + code_j, in place.
            if flat is None:
                flat = code.astype(np.int64, copy=False)
                if not flat.flags.writeable:
                    flat = flat.copy()
            else:
                flat *= n_categories
                flat += code
        return flat

    def has_category(self, column, value):
        """Whether ``value`` is a declared category of ``column`` (as :meth:`encode` matches).

        Parameters
        ----------
        column : str
            A column of the domain.
        value : object
            The value to look up.

        Returns
        -------
        bool
            True if :meth:`encode` would match ``value`` to a category of ``column``.

        Raises
        ------
        ValueError
            If ``column`` is not a column of the domain.

        Examples
        --------
        >>> Domain({"smoker": ["no", "yes"]}).has_category("smoker", "yes")
        True
        """
        if column not in self._categories:
            raise ValueError(f"{column!r} is not a column of the domain {self._columns!r}.")
        index = self._indexes[self._columns.index(column)]
        try:
            return bool(index.get_indexer(_object_array([value]))[0] >= 0)
        except (TypeError, ValueError):
            return False

    def substitute(self, X, unknown=None, missing=None):
        """The domain columns of ``X`` with missing and unknown values replaced by categories.

        The step before :meth:`encode` of ``LDPEncoder(handle_unknown="other",
        handle_missing="category")``: every record keeps a cell (nothing is dropped), so the
        number of reports stays the number of users.

        Parameters
        ----------
        X : DataFrame, 2-D array-like, or 1-D array-like / Series
            As for :meth:`encode`.
        unknown : dict, optional
            Column -> declared category that replaces the values of that column that are not
            among its categories (missing values excepted). Other columns are unchanged.
        missing : dict, optional
            Column -> declared category that replaces the missing values (None, NaN, NaT,
            pd.NA) of that column.

        Returns
        -------
        DataFrame or X
            ``X`` itself when nothing is replaced, else a DataFrame of the domain columns.

        Raises
        ------
        ValueError
            A replacement category that is not declared for its column, or an unknown column.

        Examples
        --------
        >>> dom = Domain({"smoker": ["no", "yes", "other", "missing"]})
        >>> dom.substitute(pd.DataFrame({"smoker": ["yes", "maybe", None]}),
        ...                unknown={"smoker": "other"}, missing={"smoker": "missing"}
        ...                )["smoker"].tolist()
        ['yes', 'other', 'missing']
        """
        unknown, missing = dict(unknown or {}), dict(missing or {})
        for what, mapping in (("unknown", unknown), ("missing", missing)):
            for column, category in mapping.items():
                if not self.has_category(column, category):
                    raise ValueError(
                        f"the {what} category {category!r} of column {column!r} is not among "
                        f"its declared categories {_shorten(self._categories[column], 10)}; "
                        "declare it (the domain is public: it needs a cell of its own).")
        if not unknown and not missing:
            return X
        values = self._columns_of(X)
        result, changed = {}, False
        for j, (column, vals) in enumerate(zip(self._columns, values, strict=True)):
            if column in unknown or column in missing:
                array = vals.to_numpy() if isinstance(vals, pd.Series) else np.asarray(vals)
                is_missing = np.asarray(pd.isna(array), dtype=bool)
                replace_unknown = np.zeros(array.shape[0], dtype=bool)
                if column in unknown:
                    known = self._indexes[j].get_indexer(array) >= 0
                    replace_unknown = ~known & ~is_missing
                replace_missing = is_missing if column in missing else np.zeros_like(is_missing)
                if replace_unknown.any() or replace_missing.any():
                    array = array.astype(object)  # a copy: the caller's data is not modified
                    array[replace_unknown] = unknown.get(column)
                    array[replace_missing] = missing.get(column)
                    vals, changed = array, True
            if isinstance(vals, pd.Series):
                vals = vals.reset_index(drop=True)  # aligned by position with the arrays
            result[column] = vals
        if not changed:
            return X
        return pd.DataFrame(result, columns=self._columns, copy=False)

    def _general_codes(self, j, vals):
        """Codes of column ``j`` by hashed lookup; raises on missing or unknown values."""
        column, index = self._columns[j], self._indexes[j]
        if isinstance(vals, pd.Series):
            vals = vals.to_numpy()
        code = index.get_indexer(vals)
        bad = code < 0
        if bad.any():
            vals = np.asarray(vals, dtype=object)
            missing = bad & pd.isna(vals)
            if missing.any():
                raise ValueError(
                    f"Column {column!r} has {int(missing.sum())} missing values "
                    "(NaN/None). Every record needs a category: fill them with an explicit "
                    "category (e.g. 'missing', declared in the domain) or drop those rows."
                )
            offending = pd.unique(vals[bad])
            raise ValueError(
                f"Column {column!r} has {int(bad.sum())} rows with values that are not "
                f"among its categories: {_shorten(offending)}. Declared categories: "
                f"{_shorten(self._categories[column], 10)}."
            )
        return code

    def _check_indices(self, indices):
        indices = np.atleast_1d(np.asarray(indices))
        if indices.ndim != 1:
            raise ValueError(f"indices must be 1-D, got {indices.ndim} dimensions.")
        if indices.size and not np.issubdtype(indices.dtype, np.integer):
            raise ValueError(f"indices must be integers, got dtype {indices.dtype}.")
        indices = indices.astype(np.int64, copy=False)
        bad = (indices < 0) | (indices >= self.size)
        if bad.any():
            raise ValueError(
                f"{int(bad.sum())} indices are outside [0, {self.size}): "
                f"{_shorten(np.unique(indices[bad]))}."
            )
        return indices

    def decode(self, indices):
        """The rows (one per flat index) as a DataFrame with the domain columns.

        Parameters
        ----------
        indices : array-like of int
            Flat cell indices in ``[0, size)``.

        Returns
        -------
        DataFrame
            One column per domain column, holding the category values (dtype inferred from the
            categories, e.g. int64 for integer categories).

        Examples
        --------
        >>> dom = Domain({"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]})
        >>> dom.decode([3, 0]).values.tolist()
        [['30-50', 'yes'], ['<30', 'no']]
        """
        indices = self._check_indices(indices)
        codes = np.unravel_index(indices, self.shape)
        data = {
            column: index.take(code)
            for column, index, code in zip(self._columns, self._indexes, codes, strict=True)
        }
        return pd.DataFrame(data, columns=self._columns)

    def _check_enumerable(self):
        if self.size > MAX_ENUMERATED_CELLS:
            raise ValueError(
                f"The domain is too large to enumerate: {self.size} cells (limit "
                f"{MAX_ENUMERATED_CELLS}). Use fewer or coarser categories."
            )

    def cells(self):
        """All cells as a DataFrame, one row per cell in flat-index order.

        Returns
        -------
        DataFrame of shape (size, n_columns)
            One row per cell: its category in each domain column.

        Raises
        ------
        ValueError
            If the domain has more than ``2**22`` cells.

        Examples
        --------
        >>> Domain({"a": [0, 1], "b": ["u", "v"]}).cells().values.tolist()
        [[0, 'u'], [0, 'v'], [1, 'u'], [1, 'v']]
        """
        self._check_enumerable()
        return self.decode(np.arange(self.size))

    def cell_labels(self):
        """One label per cell, in flat-index order, like ``"age=<30, smoker=no"``.

        Returns
        -------
        list of str
            ``size`` labels ``"column=value"`` joined by ``", "``.

        Raises
        ------
        ValueError
            If the domain has more than ``2**22`` cells (too many to label one by one).

        Examples
        --------
        >>> Domain({"age": ["<30", ">=30"], "smoker": ["no", "yes"]}).cell_labels()[:2]
        ['age=<30, smoker=no', 'age=<30, smoker=yes']
        """
        self._check_enumerable()
        parts = [[f"{c}={v}" for v in self._categories[c]] for c in self._columns]
        return _product_strings(parts, ", ")

    # ------------------------------------------------------------------ misc
    def to_dict(self):
        """Plain dict column name -> list of categories (JSON-serializable if they are).

        ``Domain(domain.to_dict()) == domain``.

        Returns
        -------
        dict
            Column name -> list of its categories, in domain order (a copy).

        Examples
        --------
        >>> Domain({"smoker": ("no", "yes")}).to_dict()
        {'smoker': ['no', 'yes']}
        """
        return self.categories

    def __eq__(self, other):
        if not isinstance(other, Domain):
            return NotImplemented
        return self._columns == other._columns and self._categories == other._categories

    def __hash__(self):
        return hash(tuple((c, tuple(self._categories[c])) for c in self._columns))

    def __repr__(self):
        parts = []
        for c in self._columns:
            cats = self._categories[c]
            if len(cats) > 6:
                shown = ", ".join(repr(v) for v in cats[:3])
                text = f"[{shown}, ..., {cats[-1]!r}] ({len(cats)} categories)"
            else:
                text = repr(cats)
            parts.append(f"{c!r}: {text}")
        return "Domain({" + ", ".join(parts) + "})"


@refuse_deep_nesting
def as_domain(obj):
    """Coerce ``obj`` to a :class:`Domain`.

    Parameters
    ----------
    obj : Domain, mapping or int
        A Domain is returned as is; a mapping column -> categories builds one; an int ``n``
        gives ``Domain.from_size(n)``.

    Returns
    -------
    Domain
        ``obj`` itself if it is a Domain, else a new Domain.

    Raises
    ------
    ValueError
        If ``obj`` is none of these.

    See Also
    --------
    Domain : The class of the result.

    Examples
    --------
    >>> as_domain(3)
    Domain({'x': [0, 1, 2]})
    >>> as_domain({"smoker": ["no", "yes"]}).size
    2
    """
    if isinstance(obj, Domain):
        return obj
    if isinstance(obj, Mapping):
        return Domain(obj)
    if isinstance(obj, numbers.Integral) and not isinstance(obj, bool):
        return Domain.from_size(check_positive_int(obj, "domain (a number of cells)"))
    raise ValueError(
        "Expected a domain: a Domain, a mapping column -> categories (e.g. "
        f"{{'smoker': ['no', 'yes']}}) or an int number of cells, got {describe(obj)}."
    )
