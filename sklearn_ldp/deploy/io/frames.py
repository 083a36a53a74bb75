"""Reports as DataFrames: the column schema, report frames and their conversion back.

:func:`report_columns` names the columns of a mechanism's reports (the schema of
:mod:`sklearn_ldp.deploy.io`); :func:`reports_frame` and :func:`reports_from_frame` carry
reports with their mechanism, domain and workload through pandas; :func:`frame_to_reports`
converts and checks the rows of a frame, a file's chunk or a distributed partition.
"""

import json

import numpy as np
import pandas as pd

from ...mechanisms import Mechanism
from ...mechanisms._base.rows import empty_reports
from ...mechanisms._base.specs import load_mechanism_json
from ...mechanisms.multi_attribute.columns import ColumnsMechanism
from ...reports import LDPReports
from ...workloads.spec import workload_from_spec
from ..npz import _category_to_json, _domain_from_header, _workload_spec_cells
from .formats import SPEC_KEY

# DataFrame.attrs keys of a report frame (reports_frame): JSON text only, so that pandas keeps
# them through copies, slices and DataFrame.to_parquet / pandas.read_parquet (which stores
# attrs in the file's metadata).
DOMAIN_ATTR = "sklearn_ldp.domain"
WORKLOAD_ATTR = "sklearn_ldp.workload"


def report_columns(mechanism):
    """Column names of ``mechanism``'s reports in files and DataFrames.

    The column schema of :mod:`sklearn_ldp.deploy.io`.

    Parameters
    ----------
    mechanism : Mechanism
        The mechanism whose reports are stored.

    Returns
    -------
    list of str
        ``["report"]`` for one integer per user, else ``["report_0", ..., "report_{w-1}"]``
        for a row of ``w`` values per user.

    See Also
    --------
    reports_frame : Reports as a DataFrame with these columns.
    write_reports : Reports to a CSV or Parquet file with these columns.

    Examples
    --------
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> report_columns(baseline_mechanism("randomized_response", (4,), 1.0))
    ['report']
    >>> report_columns(baseline_mechanism("olh", (4,), 1.0))
    ['report_0', 'report_1']
    """
    if isinstance(mechanism, ColumnsMechanism):
        # Records of several columns: one name per report column, after the record's columns.
        return mechanism.report_columns()
    empty = empty_reports(mechanism)
    if empty.ndim == 1:
        return ["report"]
    return [f"report_{j}" for j in range(empty.shape[1])]


def _frame_attrs(reports):
    """The ``DataFrame.attrs`` that let :func:`reports_from_frame` rebuild ``reports``.

    The mechanism's JSON specification always; the domain when its categories are JSON-able
    (str, numbers, bools, tuples and intervals, as :meth:`LDPReports.save` stores them); the
    workload when its structure needs no arrays (histogram, prefix, all ranges, their
    products and stacks; a custom query matrix is left out: pass ``workload=`` again).
    """
    attrs = {SPEC_KEY: reports.mechanism.to_json()}
    domain = getattr(reports, "domain", None)
    if domain is not None:
        try:
            attrs[DOMAIN_ATTR] = json.dumps(
                {column: [_category_to_json(v, column) for v in values]
                 for column, values in domain.categories.items()})
        except ValueError:
            pass  # categories JSON cannot hold: answers are then labelled by cell index
    workload = getattr(reports, "workload", None)
    if workload is not None:
        spec, arrays = workload.to_spec()
        if not arrays:
            attrs[WORKLOAD_ATTR] = json.dumps(spec)
    return attrs


def reports_frame(reports, attrs=True):
    """LDPReports as a pandas DataFrame with the file schema (e.g. for ``dd.from_pandas``).

    Parameters
    ----------
    reports : LDPReports
        The reports to convert.
    attrs : bool, default=True
        Store the mechanism's JSON specification (and the domain and workload when they can
        be written as JSON) in ``DataFrame.attrs``, so that :func:`reports_from_frame` and
        the estimators decode the frame without being told the mechanism. pandas keeps
        ``attrs`` through copies and slices and through ``to_parquet`` / ``read_parquet``;
        CSV files do not hold them (use :func:`write_reports`, whose files carry the
        specification).

    Returns
    -------
    pandas.DataFrame
        One row per report, columns :func:`report_columns`.

    See Also
    --------
    reports_from_frame : The reverse conversion.
    report_columns : The column names.
    sklearn_ldp.deploy.distributed.aggregate_dask : Aggregates such frames on a Dask cluster.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> frame = reports_frame(LDPReports(np.array([0, 2]), RandomizedResponse(3, 1.0)))
    >>> frame
       report
    0       0
    1       2
    >>> reports_from_frame(frame).mechanism
    RandomizedResponse(n_inputs=3, epsilon=1.0)
    """
    array = np.asarray(reports.reports)
    columns = report_columns(reports.mechanism)
    if array.ndim == 1:
        frame = pd.DataFrame({columns[0]: array})
    else:
        frame = pd.DataFrame({name: array[:, j] for j, name in enumerate(columns)})
    if attrs:
        frame.attrs.update(_frame_attrs(reports))
    return frame


def _strip_prefix(columns, expected):
    """``columns`` without a common ``"<name>__"`` prefix, if that leaves ``expected``.

    A ColumnTransformer prefixes its transformers' column names (verbose feature names:
    ``"ldp__report_0"``); the report columns are still recognized, in their order.
    """
    if len(columns) != len(expected) or not all(isinstance(c, str) for c in columns):
        return columns
    first = columns[0]
    if not first.endswith("__" + expected[0]):
        return columns
    prefix = first[:len(first) - len(expected[0])]
    if all(c == prefix + e for c, e in zip(columns, expected, strict=True)):
        return list(expected)
    return columns


def reports_from_frame(frame, mechanism=None, domain=None, workload=None):
    """LDPReports from a DataFrame of report columns (the reverse of :func:`reports_frame`).

    Accepts the output of ``LDPEncoder`` with ``set_output(transform="pandas")`` (alone or
    in a ColumnTransformer, whose ``"<name>__"`` column prefix is recognized) and frames
    read back with ``pandas.read_parquet`` after ``DataFrame.to_parquet``.

    Parameters
    ----------
    frame : pandas.DataFrame
        Exactly the columns :func:`report_columns` of the mechanism, in any order.
    mechanism : Mechanism, optional
        Default: rebuilt from ``frame.attrs`` (set by :func:`reports_frame`). Given and the
        frame carries another one, a ValueError.
    domain, workload : Domain, Workload, optional
        Default: those of ``frame.attrs``, if any.

    Returns
    -------
    LDPReports
        The reports of every row, in order, with their mechanism, domain and workload.

    Raises
    ------
    ValueError
        No mechanism (neither ``mechanism=`` nor in ``attrs``), a different mechanism in
        ``attrs``, wrong columns, or values that are not reports of the mechanism (naming
        the row and column).

    See Also
    --------
    reports_frame : The reverse conversion.
    frame_to_reports : Only the checked report array.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> frame = pd.DataFrame({"report": [0, 2, 1]})
    >>> reports_from_frame(frame, mechanism=RandomizedResponse(3, 1.0)).reports.tolist()
    [0, 2, 1]
    """
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"frame must be a pandas DataFrame of report columns, got "
                         f"{type(frame).__name__}.")
    where = "DataFrame.attrs"
    spec = frame.attrs.get(SPEC_KEY)
    if spec is not None and not isinstance(spec, str):
        raise ValueError(f"{where}[{SPEC_KEY!r}] must be the mechanism's JSON text, got "
                         f"{type(spec).__name__}.")
    carried = None if spec is None else load_mechanism_json(spec)
    if mechanism is None:
        if carried is None:
            raise ValueError(
                "the DataFrame carries no mechanism (no DataFrame.attrs[" + repr(SPEC_KEY)
                + "]: e.g. it was read from CSV, or rebuilt by an operation that drops "
                "attrs); pass mechanism= (e.g. mechanism_from_json(encoder.client_spec())).")
        mechanism = carried
    elif not isinstance(mechanism, Mechanism):
        raise ValueError(f"mechanism must be a mechanism object (e.g. from "
                         f"mechanism_from_json), got {type(mechanism).__name__}.")
    elif carried is not None and carried != mechanism:
        raise ValueError(f"the DataFrame holds reports of {carried!r} ({where}), not of "
                         f"{mechanism!r}.")
    if domain is None and frame.attrs.get(DOMAIN_ATTR) is not None:
        domain = _domain_from_header(json.loads(frame.attrs[DOMAIN_ATTR]), where,
                                     mechanism)
    if workload is None and frame.attrs.get(WORKLOAD_ATTR) is not None:
        workload_spec = json.loads(frame.attrs[WORKLOAD_ATTR])
        _workload_spec_cells(workload_spec, where)
        workload = workload_from_spec(workload_spec, None, domain)
    expected = report_columns(mechanism)
    columns = _strip_prefix(list(frame.columns), expected)
    if columns != list(frame.columns):
        frame = frame.set_axis(columns, axis=1)
    array = frame_to_reports(frame, mechanism)
    return LDPReports(array, mechanism, domain, workload)


def _python(value):
    """A numpy scalar as the python value, for readable messages."""
    return value.item() if isinstance(value, np.generic) else value


def first_bad(mask):
    """Position of the first True entry of ``mask`` (which has one)."""
    return int(np.flatnonzero(mask)[0])


def _integer_column(values, dtype, where, first_row, column):
    """An integer column as ``dtype``, or a ValueError naming the first bad row and value."""
    info = np.iinfo(dtype)
    if values.dtype.kind not in "iu":
        numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
        bad = ~np.isfinite(numeric) | (numeric != np.round(numeric))
        if bad.any():
            row = first_bad(bad)
            raise ValueError(f"{where}, row {first_row + row + 1}, column {column!r}: "
                             f"{_python(values[row])!r} is not an integer (reports of this "
                             f"mechanism are {np.dtype(dtype)} integers).")
        # Integral floats would be exact only below 2**53 (not 64-bit seeds): never convert.
        raise ValueError(f"{where}, column {column!r}: dtype {values.dtype}, but reports of "
                         f"this mechanism are {np.dtype(dtype)} integers; store them as "
                         "integers.")
    source = np.iinfo(values.dtype)
    outside = np.zeros(values.shape[0], dtype=bool)
    if source.min < info.min:
        outside |= values < info.min
    if source.max > info.max:
        outside |= values > info.max
    if outside.any():
        row = first_bad(outside)
        raise ValueError(f"{where}, row {first_row + row + 1}, column {column!r}: value "
                         f"{values[row]} is outside [{info.min}, {info.max}], the range of this "
                         "mechanism's reports: they come from another mechanism or domain.")
    return values.astype(dtype, copy=False)


def _float_column(values, where, first_row, column):
    if values.dtype.kind not in "iuf":
        numeric = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype=float)
        bad = np.isnan(numeric) & ~pd.isna(values)
        if bad.any():
            row = first_bad(bad)
            raise ValueError(f"{where}, row {first_row + row + 1}, column {column!r}: "
                             f"{_python(values[row])!r} is not a number.")
        return numeric
    return values.astype(np.float64, copy=False)


def columns_to_array(columns, empty, where, first_row):
    """Convert ``{name: 1-D values}`` (already in schema order) to the mechanism's report array."""
    names = list(columns)
    convert = (_float_column if np.issubdtype(empty.dtype, np.floating) else
               lambda v, w, r, c: _integer_column(v, empty.dtype, w, r, c))
    arrays = [convert(np.asarray(columns[name]), where, first_row, name) for name in names]
    if empty.ndim == 1:
        return arrays[0]
    n_rows = arrays[0].shape[0] if arrays else 0
    result = np.empty((n_rows, len(arrays)), dtype=empty.dtype)
    for j, array in enumerate(arrays):
        result[:, j] = array
    return result


def check_column_names(found, expected, where, mechanism):
    """A ValueError naming ``where`` unless the columns are exactly ``expected``."""
    missing = [name for name in expected if name not in found]
    extra = [name for name in found if name not in expected]
    if missing or extra:
        raise ValueError(
            f"{where}: the reports of {mechanism!r} have the columns {expected}; "
            + (f"missing {missing}" if missing else "")
            + ("; " if missing and extra else "")
            + (f"unexpected {extra}" if extra else "")
            + " (another mechanism's reports, or not a report file)."
        )


def frame_to_reports(frame, mechanism, where="DataFrame", first_row=0):
    """The report array of a DataFrame with the file schema, checked against ``mechanism``.

    Wrong or missing columns, values that are not integers of the report type, and reports the
    mechanism refuses raise a ValueError naming ``where``, the row (counted from 1, plus
    ``first_row``) and the column. Used for every chunk of a file and every partition of a
    Dask or Spark DataFrame.

    Parameters
    ----------
    frame : pandas.DataFrame
        Exactly the columns :func:`report_columns` of ``mechanism`` (in any order).
    mechanism : Mechanism
        The mechanism the reports must come from.
    where : str, default="DataFrame"
        What the frame is (a file name, a partition), for the error messages.
    first_row : int, default=0
        The number of rows before this frame in its source, for the error messages.

    Returns
    -------
    ndarray
        The reports as ``mechanism.randomize`` returns them: shape ``(n_rows,)`` or
        ``(n_rows, w)``, of the mechanism's report dtype.

    Raises
    ------
    ValueError
        For wrong columns, values that are not reports of the mechanism.

    See Also
    --------
    reports_from_frame : The same, wrapped as LDPReports.
    sklearn_ldp.deploy.distributed.partition_statistic : Aggregates one partition.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> frame_to_reports(pd.DataFrame({"report": [0, 2, 1]}), RandomizedResponse(3, 1.0))
    array([0, 2, 1], dtype=uint8)
    """
    empty = empty_reports(mechanism)
    expected = report_columns(mechanism)
    check_column_names(list(frame.columns), expected, where, mechanism)
    array = columns_to_array({name: frame[name].to_numpy() for name in expected}, empty,
                              where, first_row)
    return checked_reports(mechanism, array, where, first_row)


def _locate(mechanism, array, where, first_row, error):
    """Re-raise ``error`` naming the first report that ``mechanism`` refuses (by bisection)."""
    passes, fails = 0, array.shape[0]  # check_reports(array[:passes]) passes; [:fails] fails
    while fails - passes > 1:
        middle = (passes + fails) // 2
        try:
            mechanism.check_reports(array[:middle])
            passes = middle
        except ValueError:
            fails = middle
    try:
        mechanism.check_reports(array[fails - 1:fails])
    except ValueError as single:
        error = single
    raise ValueError(f"{where}, row {first_row + fails}: {error}") from None


def checked_reports(mechanism, array, where, first_row):
    try:
        return mechanism.check_reports(array)
    except ValueError as exc:
        _locate(mechanism, array, where, first_row, exc)


def aggregate_checked(mechanism, array, where, first_row):
    """``mechanism.aggregate(array)`` (which validates), naming the bad row on failure."""
    try:
        return mechanism.aggregate(array)
    except ValueError as exc:
        _locate(mechanism, array, where, first_row, exc)
