"""scikit-learn glue shared by the encoder and the estimators (no estimator imports here).

Resolving the public domain and the workload from the parameters, scikit-learn's checks of a
table of records, and the predicted error table of a marginal mechanism. Below both
:mod:`sklearn_ldp.encoder` and :mod:`sklearn_ldp.estimators`; the glue that only estimators
need (and that builds an :class:`~sklearn_ldp.encoder.LDPEncoder`) is in
:mod:`sklearn_ldp.estimators._base`.
"""

import math

import numpy as np
import pandas as pd
from sklearn.utils.validation import check_array, validate_data

from . import workloads
from .domain import MAX_CATEGORIES_FROM_DATA, Domain
from .postprocess import clip_to_distribution

WORKLOAD_BY_NAME = {
    "histogram": workloads.histogram,
    "prefix": workloads.prefix,
    "all_range": workloads.all_range,
}


# answers_ and expected_error_ hold one row per query: past these many queries they are
# refused (with the alternatives named) instead of exhausting memory.
MAX_ANSWER_QUERIES = 2**24
MAX_ERROR_TABLE_QUERIES = 2**22


def check_table_size(workload, limit, attribute, alternative):
    """Refuse a table of one row per query past ``limit`` rows, naming ``alternative``."""
    if workload.n_queries > limit:
        raise ValueError(
            f"{attribute} would hold one row per query of the {workload.name!r} workload: "
            f"{workload.n_queries} rows (limit {limit}). Use {alternative}.")


# The ``categories`` values that read the categories from the data: "auto" (and None) only
# from columns that are not floats; "observed" from every column, numbers included.
READ_FROM_DATA = ("auto", "observed")


def _integral_float_columns(X):
    """Names (as Domain.from_data gives them) of the float columns of ``X`` whose values are
    all whole numbers. Other float columns are refused by Domain.from_data itself (continuous
    values, missing values) with its binning advice."""
    if isinstance(X, pd.DataFrame):
        columns = {name: X[name] for name in X.columns}
    elif isinstance(X, pd.Series):
        columns = {X.name if isinstance(X.name, str) else "x0": X}
    else:
        array = X if isinstance(X, np.ndarray) else np.asarray(X)
        if array.dtype.kind != "f" or array.ndim > 2:
            return []
        array = array.reshape(array.shape[0], -1)
        columns = {f"x{j}": array[:, j] for j in range(array.shape[1])}
    found = []
    for name, values in columns.items():
        if isinstance(values, pd.DataFrame) or not pd.api.types.is_float_dtype(values.dtype):
            continue
        values = np.asarray(values, dtype=float) if isinstance(values, np.ndarray) else \
            values.to_numpy(dtype=float, na_value=np.nan)
        with np.errstate(invalid="ignore"):
            if values.size and np.all(np.isfinite(values) & (values == np.round(values))):
                found.append(name)
    return found


def refuse_numeric_columns(X):
    """Refuse a float column of whole numbers when the categories are read from the data.

    A float column is a number (a distance, a price): reading its distinct values as the
    categories would turn it into a histogram of the values seen, and publish them in the
    domain. The user says which it is: public bounds for a number, declared
    categories, or ``categories="observed"`` for a histogram of the observed values.
    """
    floats = _integral_float_columns(X)
    if floats:
        column = floats[0]
        raise ValueError(
            f"Column {column!r} holds numbers (a float column) and has neither bounds nor "
            "categories: its distinct values would become the categories. For a number (its "
            f"mean, quantiles, ranges) give public bounds, bounds={{{column!r}: (low, high)}}; "
            f"for a histogram declare the public values, categories={{{column!r}: [...]}}, or "
            "pass categories='observed' to read them from the data (the observed values then "
            "become public: the fitted domain, which report files and frames carry, lists "
            "them).")


def resolve_domain(categories, X):
    """The public Domain: from ``categories``, or (with a warning) read from ``X``.

    ``None`` and ``"auto"`` read the categories of columns that are not floats (a float
    column is refused by :func:`refuse_numeric_columns`); ``"observed"`` reads every column.

    Read from the data, only categorical columns are accepted: a column of non-integral
    floats or with more than ``MAX_CATEGORIES_FROM_DATA`` distinct values is a ValueError
    that points to public binning and declared categories (one category per distinct
    measurement made ``LDPEncoder().fit`` run for many minutes, for useless estimates).
    """
    if categories is None or (isinstance(categories, str) and categories in READ_FROM_DATA):
        if X is None:
            raise ValueError("categories must be given when there is no data to read them from.")
        if categories != "observed":
            refuse_numeric_columns(X)
        return Domain.from_data(X, max_categories=MAX_CATEGORIES_FROM_DATA,
                                allow_continuous=False)
    if isinstance(categories, str):
        raise ValueError(f"categories must be a mapping column -> categories, 'auto' or "
                         f"'observed', got {categories!r}.")
    return Domain(categories)


def resolve_workload(workload, domain):
    """A Workload over ``domain`` from a Workload, a matrix, a builder name or None (histogram)."""
    if workload is None:
        return workloads.histogram(domain)
    if isinstance(workload, str):
        if workload not in WORKLOAD_BY_NAME:
            raise ValueError(
                f"unknown workload name {workload!r}; use one of {sorted(WORKLOAD_BY_NAME)} or "
                "pass a Workload built with sklearn_ldp.workloads."
            )
        return WORKLOAD_BY_NAME[workload](domain)
    try:
        result = workloads.as_workload(workload)
    except ValueError as exc:
        raise ValueError(f"workload: {exc}") from None
    result.check_width(domain.size)
    return result


def check_declared_columns(X, declared):
    """Refuse, at fit, a DataFrame of records that lacks a column named in ``categories`` or
    ``bounds`` (a misspelled key), rather than fitting and failing at the first transform.

    ``declared``: parameter name -> the columns it names. Arrays and Series are positional
    records: nothing to check by name.
    """
    if not isinstance(X, pd.DataFrame):
        return
    for param, columns in declared.items():
        missing = [column for column in columns if column not in X.columns]
        if missing:
            shown = list(X.columns[:10]) + (["..."] if len(X.columns) > 10 else [])
            raise ValueError(f"{param} names the column(s) {missing!r}, which the data lacks "
                             f"(it has columns {shown!r}); the keys of {param} are column "
                             "names of the records.")


def validate_records(estimator, X, reset, allow_nan=False):
    """scikit-learn's checks of a 2-D table of records (sparse, complex, empty, width).

    Values are not converted: the Domain encodes them and names any bad column or value.
    A 1-D input (a single column) is left to the Domain. ``allow_nan``: missing values are
    mapped to a declared category afterwards (``LDPEncoder(handle_missing="category")``), so
    a numeric array may hold NaN (never inf).
    """
    if isinstance(X, pd.Series):
        return
    if isinstance(X, pd.DataFrame):
        # The Domain reports NaN by column name. sklearn's checks of a DataFrame (sparse or
        # complex columns, no rows or columns, width, column names) read its dtypes, shape and
        # column names, not its values: run them on its first row, which spares converting a
        # big frame to a numpy array. If they fail, run them on the whole frame so that the
        # error is exactly sklearn's.
        try:
            validate_data(estimator, X.iloc[:1], reset=reset, dtype=None,
                          ensure_all_finite=False)
        except (TypeError, ValueError):
            validate_data(estimator, X, reset=reset, dtype=None, ensure_all_finite=False)
        return
    if not hasattr(X, "tocsr"):
        # np.asarray, not np.ndim: array-likes that only implement __array__ (sklearn's
        # _NotAnArray refuses every other numpy function) are records too.
        ndim = X.ndim if isinstance(X, np.ndarray) else np.asarray(X, dtype=object).ndim
        if ndim == 1:
            return
    # Plain numeric arrays: refuse NaN and inf here (inf would otherwise become a category
    # when categories are read from data).
    numeric = np.asarray(X).dtype.kind in "fc"
    finite = ("allow-nan" if allow_nan else True) if numeric else False
    validate_data(estimator, X, reset=reset, dtype=None, ensure_all_finite=finite)


# Number of users at which the data-independent TV prediction is evaluated before it is
# rescaled to "TV x sqrt(N)" (every marginal variance is proportional to 1 / N).
_REFERENCE_USERS = 2**20


def all_attribute_sets(mechanism):
    """Every marginal a marginal mechanism answers: sorted position tuples, orders 1 to k."""
    return [s for order in range(1, mechanism.params["max_order"] + 1)
            for s in mechanism.attribute_sets(order)]


def marginal_total_variance(mechanism, attributes, n_users):
    """``(worst_case, average_case)``: the summed cell variance of a marginal's unbiased
    table of fractions for ``n_users`` users.

    ``average_case``: users spread uniformly over the domain (the data-independent
    prediction). ``worst_case``: the larger of the two extreme data sets, every user in one
    cell (all cells give the same value) or spread uniformly. The summed variance depends on
    the data only through ``sum m^2`` for every strategy except the Hadamard ones with a
    category count that is not a power of two, so it is the maximum over all data there;
    for ``inp_ht`` / ``marg_ht`` with such categories the maximum found by numerical
    search was at most 0.065 % above it (shapes up to 5 x 6 x 7).

    Parameters
    ----------
    mechanism : MarginalMechanism
    attributes : tuple of int
        Sorted attribute positions of the marginal.
    n_users : int
        Number of users.

    Returns
    -------
    tuple of float
    """
    worst, average, _ = mechanism.total_variance(attributes, n_users)
    return worst, average


def marginal_error_table(mechanism, names, n_users=None, marginals=None):
    """Predicted error of every marginal a mechanism answers, one row per marginal.

    Parameters
    ----------
    mechanism : MarginalMechanism
    names : list
        Name of each attribute (position order).
    n_users : int or None
        ``None``: the data-independent prediction made before collection, in a form that
        does not need the number of users (columns ``per_user_variance`` and ``tv_sqrt_n``).
        An int: first ``worst_case`` and ``average_case``, the summed cell variance of the
        unbiased table of fractions for that many users (as every estimator's
        ``expected_error_``; see :func:`marginal_total_variance`), then the predicted total
        variation (``predicted_tv``, for uniform data) and, with ``marginals``, the plug-in
        prediction ``plug_in_tv``.
    marginals : dict or None
        Sorted position tuple -> estimated table (fractions), for the plug-in prediction.

    Returns
    -------
    pandas.DataFrame indexed by the marginals (tuples of attribute names)

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism
    >>> mechanism = build_marginal_mechanism("inp_ht", (2, 3), 1.0, 2)
    >>> table = marginal_error_table(mechanism, ["smoker", "age"])
    >>> list(table.index)
    [('smoker',), ('age',), ('smoker', 'age')]
    >>> list(table.columns)
    ['order', 'n_cells', 'per_user_variance', 'tv_sqrt_n']
    >>> list(marginal_error_table(mechanism, ["smoker", "age"], n_users=1000).columns)
    ['worst_case', 'average_case', 'order', 'n_cells', 'predicted_tv']
    """
    sets = all_attribute_sets(mechanism)
    index = pd.Index([tuple(names[a] for a in s) for s in sets], tupleize_cols=False,
                     name="marginal")
    table = pd.DataFrame({"order": [len(s) for s in sets],
                          "n_cells": [math.prod(mechanism.params["shape"][a] for a in s)
                                      for s in sets]}, index=index)
    if n_users is None:
        reference = _REFERENCE_USERS
        table["per_user_variance"] = [
            reference * float(np.sum(mechanism.marginal_variance(s, reference))) for s in sets]
        table["tv_sqrt_n"] = [mechanism.expected_tv(s, reference) * math.sqrt(reference)
                              for s in sets]
        return table
    worst, average = zip(*(marginal_total_variance(mechanism, s, n_users) for s in sets),
                         strict=True)
    # The package's two error columns first, as in every estimator's expected_error_.
    table.insert(0, "average_case", np.asarray(average))
    table.insert(0, "worst_case", np.asarray(worst))
    table["predicted_tv"] = [mechanism.expected_tv(s, n_users) for s in sets]
    if marginals is not None:
        table["plug_in_tv"] = [mechanism.expected_tv(s, n_users, marginal=clip_to_distribution(
            marginals[s])) for s in sets]
    return table


def refuse_malformed(X):
    """scikit-learn's own error for what no input of an estimator can be, whatever it takes.

    Sparse (TypeError), complex, empty (0 sample(s), 0 feature(s)) and, in a numeric array,
    NaN or inf: the messages scikit-learn's conventions expect. Strings and other objects are
    left to the caller, which refuses or decodes them with its own message, and so is what is
    not array-like at all (a scalar, a dict, None). ``X`` is not converted.
    """
    sparse = hasattr(X, "tocsr")
    if not sparse and np.ndim(np.asarray(X, dtype=object)) == 0:
        return
    numeric = not sparse and np.asarray(X).dtype.kind in "fc"
    check_array(X, accept_sparse=False, dtype=None, ensure_2d=False,
                ensure_all_finite=numeric, input_name="X")
