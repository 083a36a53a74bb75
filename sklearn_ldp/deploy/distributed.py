"""Aggregate reports held in a Dask or Spark collection: per partition, then a tree of sums.

Every mechanism's statistic is additive over disjoint sets of reports, so a cluster needs
no special algorithm: each partition is aggregated where it lives with the mechanism's own
``aggregate`` (which validates the reports), and the small statistics are summed pairwise up
a tree (``split_every`` at a time) with
:func:`~sklearn_ldp.mechanisms._base.statistics.sum_statistics`, the overflow-checked sum of
:meth:`AggregatedReports.merge <sklearn_ldp.reports.AggregatedReports.merge>` (a total past
``2**62`` reports is a ValueError, never an int64 wraparound). The integer statistics (every
mechanism except the Gaussian randomizers) are int64 counts, whose sums do not depend on the
order: the result equals the single-machine aggregate **bit for bit**. (The Gaussian
mechanisms' float sums agree up to rounding.) The final statistic is validated like every
:class:`~sklearn_ldp.reports.AggregatedReports`
(:func:`~sklearn_ldp.mechanisms._base.statistics.check_statistic`).

:class:`DaskReports` wraps a Dask collection so that any estimator's ``fit`` /
``partial_fit`` accepts it directly; it is an :class:`~sklearn_ldp.reports.AggregatedReports`
whose statistic is computed (once) when an estimator first needs it.

:func:`aggregate_spark` does the same for a Spark DataFrame. Where the statistic is an
integer function of counts Spark can take on the JVM (identical reports when they are few;
(level, column, value) triples of bit vectors), only the counted table, checked by the
mechanism, reaches Python; otherwise ``mapInPandas`` computes each partition's statistic on
the executors (the same checks), and ``treeAggregate`` sums them.

Dask (``pip install sklearn_ldp[distributed]``) and PySpark (``pip install sklearn_ldp[spark]``)
are optional dependencies, imported only here and only when used.
"""

import re

import numpy as np
import pandas as pd

from ..mechanisms import Mechanism
from ..mechanisms._base.docstrings import shared_sections
from ..mechanisms._base.rows import empty_reports
from ..mechanisms._base.statistics import check_statistic, sum_statistics
from ..mechanisms.oracles.unary import UnaryEncoding
from ..mechanisms.ranges.tree import HierarchicalHistogram
from ..reports import AggregatedReports
from .io.frames import check_column_names, frame_to_reports, report_columns

__all__ = ["DaskReports", "aggregate_dask", "aggregate_spark", "partition_statistic"]

SPLIT_EVERY = 8

# The sections aggregate_dask and aggregate_spark share, written once.
_aggregate_docstring = shared_sections({
    "attached": """\
domain : Domain, optional
    Attached to the result (for labelled answers).
workload : Workload, optional
    Attached to the result.""",
    "aggregate returns": """\
Returns
-------
AggregatedReports
    The statistic of all the reports, equal to the single-machine aggregate.""",
})


def _import_dask():
    try:
        import dask
    except ImportError:
        raise ImportError("distributed aggregation needs dask: pip install "
                          "'dask[distributed,dataframe]' (or sklearn_ldp[distributed]).") from None
    return dask


def partition_statistic(partition, mechanism, where="partition"):
    """The statistic of one partition: a report array or a pandas DataFrame (file schema).

    DataFrames are converted and checked with :func:`~sklearn_ldp.deploy.io.frame_to_reports`
    (errors name ``where``, the row and the column); arrays are checked by the mechanism.
    This is also the function a Spark ``mapInPandas`` job runs on each partition.

    Parameters
    ----------
    partition : ndarray or pandas.DataFrame
        The reports of one partition: an array as ``mechanism.randomize`` returns them, or
        a DataFrame with the columns :func:`~sklearn_ldp.deploy.io.report_columns`.
    mechanism : Mechanism
        The mechanism the clients ran.
    where : str, default="partition"
        What the partition is, for the error messages.

    Returns
    -------
    ndarray
        ``mechanism.aggregate`` of the partition's reports: its additive statistic.

    Raises
    ------
    ValueError
        If the partition holds wrong columns or invalid reports (naming ``where``).

    See Also
    --------
    aggregate_dask : Aggregate every partition and sum the statistics.
    sklearn_ldp.deploy.io.frame_to_reports : The check of a DataFrame partition.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> partition_statistic(pd.DataFrame({"report": [0, 2, 2]}),
    ...                     RandomizedResponse(3, 1.0)).tolist()
    [1, 0, 2, 3]
    """
    if hasattr(partition, "columns"):
        partition = frame_to_reports(partition, mechanism, where)
    try:
        return mechanism.aggregate(partition)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None


def _partition_task(partition, mechanism, number):
    return partition_statistic(partition, mechanism, f"partition {number}")


def _sum_statistics(mechanism, *statistics):
    """One node of the tree of sums: the same overflow-checked sum as a merge."""
    return sum_statistics(statistics, mechanism)


def _partitions(collection, mechanism):
    """One delayed object per row block of a Dask array or partition of a Dask DataFrame."""
    _import_dask()
    if hasattr(collection, "columns") and hasattr(collection, "to_delayed"):
        # A Dask DataFrame of pandas partitions: its columns are known without computing.
        check_column_names(list(collection.columns), report_columns(mechanism),
                           "the Dask DataFrame", mechanism)
        return list(collection.to_delayed())
    if hasattr(collection, "chunks") and hasattr(collection, "to_delayed"):  # a Dask array
        empty = empty_reports(mechanism)
        if collection.ndim != empty.ndim or collection.shape[1:] != empty.shape[1:]:
            raise ValueError(f"the reports of {mechanism!r} are arrays of shape "
                             f"(n_reports, {', '.join(map(str, empty.shape[1:]))}), got a Dask "
                             f"array of shape {collection.shape}.")
        if collection.ndim == 2 and len(collection.chunks[1]) > 1:
            collection = collection.rechunk({1: -1})  # whole reports in every block
        return list(collection.to_delayed().ravel())
    raise ValueError(f"expected a Dask array or DataFrame of reports, got "
                     f"{type(collection).__name__}.")


def _lazy_statistic(collection, mechanism, split_every=SPLIT_EVERY):
    """A ``dask.delayed`` statistic: partitions aggregated, then summed up a tree."""
    dask = _import_dask()
    if isinstance(split_every, bool) or not isinstance(split_every, int) or split_every < 2:
        raise ValueError(f"split_every must be an integer >= 2, got {split_every!r}.")
    shared = dask.delayed(mechanism)  # one graph key: shipped once, not once per task
    task = dask.delayed(_partition_task)
    level = [task(part, shared, number)
             for number, part in enumerate(_partitions(collection, mechanism))]
    if not level:
        return dask.delayed(mechanism.aggregate(empty_reports(mechanism)))
    add = dask.delayed(_sum_statistics)
    while len(level) > 1:
        level = [add(shared, *level[start:start + split_every])
                 for start in range(0, len(level), split_every)]
    return level[0]


@_aggregate_docstring
def aggregate_dask(collection, mechanism, domain=None, workload=None, split_every=SPLIT_EVERY):
    """Aggregate reports held in a Dask array or DataFrame now; returns AggregatedReports.

    Runs on the current Dask scheduler (a ``dask.distributed.Client`` if one is active).

    Parameters
    ----------
    collection : dask.array.Array or dask.dataframe.DataFrame
        Arrays hold the mechanism's report array split by rows; DataFrames have the columns
        of :func:`~sklearn_ldp.deploy.io.report_columns` (e.g. ``dd.read_parquet`` of files written
        by :func:`~sklearn_ldp.deploy.io.write_reports`).
    mechanism : Mechanism
        The mechanism the clients ran; every partition is checked against it.
    <attached>
    split_every : int, default=8
        Fan-in of the tree of sums.

    <aggregate returns>

    Raises
    ------
    ValueError
        If the collection has the wrong columns or shape, a partition holds invalid
        reports, ``split_every`` is below 2, or the total passes ``2**62`` reports.
    ImportError
        If dask is not installed.

    See Also
    --------
    DaskReports : The same, computed lazily when an estimator needs it.
    partition_statistic : The statistic of one partition.
    sklearn_ldp.deploy.io.aggregate_files : Aggregate report files on one machine.

    Examples
    --------
    >>> import dask.array as da
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> reports = da.from_array(np.array([0, 2, 2, 1, 0], dtype=np.uint8), chunks=2)
    >>> aggregate_dask(reports, mechanism).statistic.tolist()
    [2, 1, 2, 5]
    """
    statistic = _lazy_statistic(collection, mechanism, split_every).compute()
    return AggregatedReports(statistic, mechanism, domain, workload)


class DaskReports(AggregatedReports):
    """Reports held in a Dask array or DataFrame, aggregated when first needed.

    An :class:`~sklearn_ldp.reports.AggregatedReports` whose ``statistic`` is computed on the
    cluster (once, then kept) the first time an estimator or ``len`` asks for it, so every
    estimator's ``fit`` and ``partial_fit`` accept it directly.

    Parameters
    ----------
    collection : dask.array.Array or dask.dataframe.DataFrame
        As in :func:`aggregate_dask`.
    mechanism : Mechanism
        The mechanism the clients ran.
    domain : Domain, optional
        The public domain the user types index into (for labelled answers).
    workload : Workload, optional
        The workload the strategy was built for; estimators use it when given none.
    split_every : int, default=8
        Fan-in of the tree of sums.

    Attributes
    ----------
    statistic : ndarray
        The aggregate of all the reports, computed on first access.

    See Also
    --------
    aggregate_dask : Aggregate now.
    sklearn_ldp.AggregatedReports : The base class.

    Examples
    --------
    >>> import dask.array as da
    >>> from sklearn_ldp.estimators.workload import WorkloadEstimator
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> rng = np.random.default_rng(0)
    >>> array = da.from_array(mechanism.randomize(rng.integers(0, 3, 1000), rng), chunks=300)
    >>> WorkloadEstimator().fit(DaskReports(array, mechanism)).n_users_
    1000
    """

    def __init__(self, collection, mechanism, domain=None, workload=None,
                 split_every=SPLIT_EVERY):
        # A valid placeholder (the empty aggregate), which the statistic setter discards; a
        # non-mechanism gets AggregatedReports' own error.
        placeholder = (mechanism.aggregate(empty_reports(mechanism))
                       if isinstance(mechanism, Mechanism) else np.zeros(0))
        super().__init__(placeholder, mechanism, domain, workload)
        self.collection = collection
        self.split_every = split_every
        self._lazy = _lazy_statistic(collection, mechanism, split_every)  # checks now
        self._statistic = None

    @property
    def statistic(self):
        """The aggregate of the reports (ndarray), computed on the cluster on first access."""
        if self._statistic is None:
            self._statistic = check_statistic(self._lazy.compute(), self.mechanism)
        return self._statistic

    @statistic.setter
    def statistic(self, value):
        # Only AggregatedReports.__init__ assigns (a placeholder): the value is computed lazily.
        self._statistic = None

    def compute(self):
        """An AggregatedReports holding the computed statistic.

        Returns
        -------
        AggregatedReports
            The statistic (computed now if it was not yet), mechanism, domain and workload.
        """
        return AggregatedReports(self.statistic, self.mechanism, self.domain, self.workload)

    def __repr__(self):
        state = "computed" if self._statistic is not None else "not computed yet"
        return f"DaskReports({state}, mechanism={self.mechanism!r})"


def _import_pyspark():
    try:
        import pyspark
    except ImportError:
        raise ImportError("aggregation of a Spark DataFrame needs pyspark: pip install pyspark "
                          "(or sklearn_ldp[spark]).") from None
    return pyspark


def _mechanism_of(mechanism_or_encoder, domain, workload):
    """The mechanism, domain and workload of a mechanism or of a fitted LDPEncoder."""
    mechanism = getattr(mechanism_or_encoder, "mechanism_", None)
    if mechanism is None:
        if hasattr(mechanism_or_encoder, "fit") and hasattr(mechanism_or_encoder, "transform"):
            raise ValueError(f"{type(mechanism_or_encoder).__name__} is not fitted: fit the "
                             "encoder (or pass its mechanism_) before aggregating its reports.")
        return mechanism_or_encoder, domain, workload
    encoder = mechanism_or_encoder
    return (mechanism, encoder.domain_ if domain is None else domain,
            getattr(encoder, "workload_", None) if workload is None else workload)


COUNT_COLUMN = "__sklearn_ldp_count"
# The "count" method collects at most this many distinct reports (with their counts) to the
# driver; "auto" uses it when the report columns' types allow no more distinct values.
MAX_COUNTED = 2**20
# Arrow batch size of the "partitions" method when the session leaves Spark's default.
ARROW_BATCH_ROWS = 2**17
ARROW_BATCH_KEY = "spark.sql.execution.arrow.maxRecordsPerBatch"
_ROW_BITS = 33  # monotonically_increasing_id(): partition index << 33 | row within partition
METHODS = ("auto", "count", "partitions")


def _counted_statistic(mechanism, reports, counts):
    """The statistic of ``reports[i]`` repeated ``counts[i]`` times, exactly.

    The statistic is additive, so it is the sum over the bits ``b`` of the counts of ``2**b``
    times the statistic of the reports whose count has bit ``b`` set: at most 63 vectorized
    aggregates, never the repeated rows.
    """
    total = mechanism.aggregate(reports[:0])
    for bit in range(int(counts.max()).bit_length() if counts.size else 0):
        rows = (counts >> bit) & 1 == 1
        if rows.any():
            part = mechanism.aggregate(reports[rows]) * (1 << bit)
            total = sum_statistics([total, part], mechanism)
    return total


def _spark_columns(frame, mechanism):
    """The report columns as Spark expressions Python reads exactly, or a ValueError.

    Integer reports: Spark's integer types (``byte``, ``short``, ``int``, ``long``); 64-bit
    unsigned reports (the seeds of ``olh`` / ``blh``) also as ``long`` holding the same 64 bits
    (two's complement) or as ``decimal(p, 0)`` with ``p <= 20`` (Parquet ``uint64``), converted
    to those bits exactly (a value outside ``[0, 2**64)`` becomes null, which the checks
    refuse). Float reports (the Gaussian mechanisms): any integer or floating type. Anything
    else is refused here, before any job runs, naming the column and its type.
    """
    from pyspark.sql import functions, types

    empty = empty_reports(mechanism)
    integers = (types.ByteType, types.ShortType, types.IntegerType, types.LongType)
    accepted = integers + ((types.FloatType, types.DoubleType) if empty.dtype.kind == "f" else ())
    fields = {field.name: field.dataType for field in frame.schema.fields}
    columns = []
    for name in report_columns(mechanism):
        kind, column = fields[name], frame[name]
        if isinstance(kind, accepted):
            columns.append(column.alias(name))
        elif (empty.dtype == np.uint64 and isinstance(kind, types.DecimalType)
              and kind.scale == 0 and kind.precision <= 20):
            # Exact decimal arithmetic: v < 2**63 stays, v >= 2**63 becomes v - 2**64 (the same
            # 64 bits as a signed long). Never through a float.
            wrap = functions.expr("CAST('18446744073709551616' AS DECIMAL(21, 0))")  # 2**64
            half = functions.expr("CAST('9223372036854775808' AS DECIMAL(20, 0))")  # 2**63
            bits = functions.when(column >= half, column - wrap).otherwise(column)
            inside = (column >= 0) & (column < wrap)
            columns.append(functions.when(inside, bits.cast("long")).alias(name))
        else:
            allowed = ("byte, short, int, long, float or double" if empty.dtype.kind == "f" else
                       "byte, short, int or long; for 64-bit seeds also decimal(20,0)"
                       if empty.dtype == np.uint64 else "byte, short, int or long")
            raise ValueError(f"the Spark DataFrame, column {name!r}: Spark type "
                             f"{kind.simpleString()}, but reports of {mechanism!r} are "
                             f"{empty.dtype} values ({allowed}).")
    return frame.select(*columns)


def _unsigned_bits(batch, mechanism):
    """A pandas batch whose signed 64-bit columns are read as the unsigned reports they hold."""
    if empty_reports(mechanism).dtype == np.uint64:
        for name in batch.columns:
            if batch[name].dtype == np.int64:  # with nulls it is float: refused by the checks
                batch[name] = batch[name].to_numpy().view(np.uint64)
    return batch


def _spark_statistics(mechanism):
    """The ``mapInPandas`` function: one row holding the statistic of each partition's reports.

    Arrow hands a partition over in batches; each batch is checked like a file chunk (errors
    name the partition, the row within it and the column), and the batches are added with the
    overflow-checked sum.
    """
    def statistics(batches):
        from pyspark import TaskContext

        context = TaskContext.get()
        where = f"Spark partition {context.partitionId() if context else 0}"
        total, first_row = None, 0
        for batch in batches:
            reports = frame_to_reports(_unsigned_bits(batch, mechanism), mechanism, where,
                                       first_row)
            statistic = mechanism.aggregate(reports)
            total = statistic if total is None else sum_statistics([total, statistic], mechanism)
            first_row += len(batch)
        if total is not None:
            yield pd.DataFrame({"statistic": [total]})

    return statistics


def _refused(error):
    """The ValueError a Spark job failed with (the last one in its Python traceback), or None."""
    found = re.findall(r"^ValueError: (.+)$", str(error), flags=re.MULTILINE)
    return ValueError(found[-1]) if found else None


def _partitions_statistic(reports, mechanism, zero, depth):
    """Each partition aggregated in Python (``mapInPandas``), summed by ``treeAggregate``."""
    element = "double" if zero.dtype.kind == "f" else "long"
    parts = reports.mapInPandas(_spark_statistics(mechanism), schema=f"statistic array<{element}>")

    def add(total, statistic):
        return sum_statistics([total, np.asarray(statistic, dtype=zero.dtype)], mechanism)

    conf = reports.sparkSession.conf
    previous = conf.get(ARROW_BATCH_KEY, None)
    if previous is None or previous == "10000":  # Spark's default: far too small for counting
        conf.set(ARROW_BATCH_KEY, str(ARROW_BATCH_ROWS))
    try:
        return parts.rdd.map(lambda row: row.statistic).treeAggregate(zero, add, add, depth)
    except Exception as error:  # Spark wraps the executor's ValueError in its own exception
        refused = _refused(error)
        if refused is None:
            raise
        raise refused from None
    finally:
        if previous is None:
            conf.unset(ARROW_BATCH_KEY)
        else:
            conf.set(ARROW_BATCH_KEY, previous)


def _distinct_bound(mechanism, zero):
    """How many distinct valid reports the column types allow (None: not a counted kind).

    Counting identical reports is exact for integer statistics only (a float sum of repeated
    values is not the count times the value, bit for bit).
    """
    if zero.dtype.kind == "f":
        return None
    empty = empty_reports(mechanism)
    n_columns = 1 if empty.ndim == 1 else empty.shape[1]
    bound = 2 ** (8 * empty.dtype.itemsize * n_columns)
    n_outputs = getattr(mechanism, "n_outputs", None)  # one index per report
    if n_columns == 1 and isinstance(n_outputs, int | np.integer):
        bound = min(bound, int(n_outputs))
    return bound


def _bit_keys(mechanism):
    """How many leading report columns are keys of a report of separable bit columns, or None.

    For a unary encoding (0 keys) and a range tree on the ``"oue"`` oracle (1 key: the level),
    the statistic of a report is a sum over its other columns of a term of (keys, that
    column's value), and the report is valid exactly when each (keys, column value) is: so the
    counts of (keys, column, value) determine the statistic and the validity of every row.
    """
    if isinstance(mechanism, UnaryEncoding):
        return 0
    if isinstance(mechanism, HierarchicalHistogram) and mechanism.oracle == "oue":
        return 1
    return None


def _refuse_first(reports, lookup, mechanism, error, marker):
    """Raise the checks' error of the first row of ``reports`` with the values ``lookup``.

    The row is found on the JVM (``monotonically_increasing_id`` holds the partition index in
    its upper bits and the row within the partition in its lower 33 bits) and checked again
    alone, so the message names its partition, row, column and value as the ``"partitions"``
    method does. Without such a row, ``error`` names the DataFrame.
    """
    from pyspark.sql import functions

    condition = None
    for name, value in lookup.items():
        value = None if pd.isna(value) else value.item() if hasattr(value, "item") else value
        equal = reports[name].eqNullSafe(value)
        condition = equal if condition is None else condition & equal
    key = "__sklearn_ldp_row"
    first = (reports.withColumn(key, functions.monotonically_increasing_id()).filter(condition)
             .orderBy(key).limit(1).toPandas())
    if len(first):
        number = int(first.pop(key).iloc[0])
        frame_to_reports(_unsigned_bits(first, mechanism), mechanism,
                         f"Spark partition {number >> _ROW_BITS}",
                         number & ((1 << _ROW_BITS) - 1))
    raise ValueError(str(error).replace(marker, "the Spark DataFrame")) from None


def _checked_counted(table, reports, mechanism, lookup):
    """The report array of the counted table (each row a report or a stand-in for one), or the
    ValueError of the first refused row of ``reports``.

    A report is valid or not by its values alone, so checking the distinct reports (with the
    file readers' checks, the mechanism's own ``report_validity``) checks every row; a
    refused one is looked up in ``reports`` by ``lookup(index of the table's row)``.
    """
    marker = "<counted reports>"
    try:
        return frame_to_reports(_unsigned_bits(table, mechanism), mechanism, marker)
    except ValueError as error:
        found = re.match(rf"^{re.escape(marker)}, row (\d+)", str(error))
        if found is None:
            raise ValueError(str(error).replace(marker, "the Spark DataFrame")) from None
        _refuse_first(reports, lookup(int(found.group(1)) - 1), mechanism, error, marker)


def _count_on_spark(frame, by, limit):
    """``frame.groupBy(by).count()`` of at most ``limit + 1`` groups, as pandas."""
    from pyspark.sql import functions

    return (frame.groupBy(*by).agg(functions.count(functions.lit(1)).alias(COUNT_COLUMN))
            .limit(limit + 1).toPandas())


def _counted(reports, mechanism, limit):
    """The statistic from the identical reports Spark counted, or None if more than ``limit``
    distinct reports are all valid (too many to bring to the driver)."""
    distinct = _count_on_spark(reports, reports.columns, limit)
    counts = distinct.pop(COUNT_COLUMN).to_numpy(dtype=np.int64)
    checked = _checked_counted(distinct.copy(), reports, mechanism,
                               lambda row: distinct.iloc[row].to_dict())
    if len(distinct) > limit:
        return None
    return _counted_statistic(mechanism, checked, counts)


def _counted_bits(reports, mechanism, n_keys, limit):
    """The statistic from Spark's counts of (keys, column, value), or None if too many.

    Each counted triple stands for the report with those keys, that value in that column and
    zeros elsewhere (a valid report: no bit set). With ``S(r)`` the statistic of a report,
    additive over its columns given the keys, the statistic of ``n_k`` reports of keys ``k``
    is ``sum_(j, v) count(k, j, v) * S(k; j = v) - (w - 1) * n_k * S(k; zeros)`` over the
    ``w`` non-key columns. No row goes to Python.
    """
    from pyspark.sql import functions

    names = list(reports.columns)
    keys, columns = names[:n_keys], names[n_keys:]
    index, value = "__sklearn_ldp_column", "__sklearn_ldp_value"
    pairs = functions.explode(functions.array(*[
        functions.struct(functions.lit(j).alias(index), reports[name].cast("long").alias(value))
        for j, name in enumerate(columns)]))
    exploded = reports.select(*keys, pairs.alias("pair")).select(*keys, f"pair.{index}",
                                                                  f"pair.{value}")
    table = _count_on_spark(exploded, keys + [index, value], limit)
    if len(table) * len(names) > MAX_COUNTED * 16:  # stand-ins too large for the driver
        return None
    at = table[index].to_numpy(dtype=np.int64)
    stand_ins = pd.DataFrame({name: table[name] for name in keys})
    for j, name in enumerate(columns):
        stand_ins[name] = table[value].where(at == j, 0)
    stand_ins = stand_ins[names]

    def lookup(row):
        return {**{name: table[name].iloc[row] for name in keys},
                columns[at[row]]: table[value].iloc[row]}

    checked = _checked_counted(stand_ins, reports, mechanism, lookup)
    if len(table) > limit:
        return None
    counts = table[COUNT_COLUMN].to_numpy(dtype=np.int64)
    total = _counted_statistic(mechanism, checked, counts)
    # Every report was counted once per column: remove the zeros' share w - 1 times over.
    if n_keys:
        bases, key_of = np.unique(checked[:, :n_keys], axis=0, return_inverse=True)
    else:  # one key: the empty one
        bases, key_of = np.zeros((1, 0), dtype=checked.dtype), np.zeros(len(counts), dtype=int)
    n_reports = np.zeros(len(bases), dtype=np.int64)
    np.add.at(n_reports, key_of.ravel(), counts)
    zeros = np.zeros((len(bases), len(names)), dtype=checked.dtype)
    zeros[:, :n_keys] = bases
    surplus = _counted_statistic(mechanism, zeros, n_reports // len(columns) * (len(columns) - 1))
    return total - surplus
@_aggregate_docstring
def aggregate_spark(frame, mechanism, domain=None, workload=None, depth=2, method="auto"):
    """Aggregate reports held in a Spark DataFrame; returns AggregatedReports.

    Two methods compute the same statistic. ``"count"``: Spark counts on the JVM and no row
    goes to Python: identical reports (``groupBy(columns).count()``) or, for bit vectors
    (unary encodings, range trees on the ``"oue"`` oracle), the (level, column, value)
    triples of the exploded columns. The counted table (at most ``MAX_COUNTED`` rows) comes
    to the driver, is checked with the mechanism's own ``report_validity`` (which decides by
    a report's values alone, and for bit vectors by each column's value given the level, so
    this checks every row) and turned into the statistic with the counts, exactly.
    ``"partitions"``: each partition's reports are checked and aggregated in Python on the
    executors (``mapInPandas`` in Arrow batches, with the checks of
    :func:`~sklearn_ldp.deploy.io.frame_to_reports`) and the per-partition statistics are
    summed up a tree (``RDD.treeAggregate``) with the overflow-checked sum of
    :meth:`AggregatedReports.merge <sklearn_ldp.reports.AggregatedReports.merge>`. Either way
    the integer statistics equal the single-machine aggregate bit for bit, and a refused
    report is named by its partition, row, column and value. Needs a classic Spark session
    (not Spark Connect).

    Parameters
    ----------
    frame : pyspark.sql.DataFrame
        Exactly the columns of :func:`~sklearn_ldp.deploy.io.report_columns` (any order), of
        Spark integer types (``byte``, ``short``, ``int``, ``long``; floats too for the
        Gaussian mechanisms), e.g. ``spark.read.parquet`` of files written by
        :func:`~sklearn_ldp.deploy.io.write_reports`. The unsigned 64-bit seeds of ``olh`` /
        ``blh`` reports are read from a ``long`` column holding the same 64 bits (two's
        complement: seeds from ``2**63`` are negative longs) or from a ``decimal(20,0)``
        column (how Spark reads Parquet ``uint64``), converted exactly.
    mechanism : Mechanism or LDPEncoder
        The mechanism the clients ran, or the fitted encoder whose ``mechanism_`` it is (its
        ``domain_`` and ``workload_`` are then attached unless given).
    <attached>
    depth : int, default=2
        Depth of the tree of sums of the ``"partitions"`` method (``treeAggregate``).
    method : {"auto", "count", "partitions"}, default="auto"
        ``"auto"``: ``"count"`` when the statistic is integer and the report columns' types
        allow at most ``MAX_COUNTED`` distinct reports (an output index of k-RR, Hadamard,
        HRR, Haar or a range tree, a marginal's set and cell), and ``"partitions"`` for the
        rest (bit vectors, whose exploded columns count slower on the JVM than numpy sums
        them; hash seeds, sketch rows, float reports) or when the data hold more distinct
        valid reports than that. ``"count"`` on a
        float statistic, or on more distinct valid reports, is a ValueError.

    <aggregate returns>

    Raises
    ------
    ValueError
        If the DataFrame has the wrong columns or column types (before any job runs), holds a
        value that is not a report of the mechanism (naming the partition, the row within it,
        the column and the value), ``depth`` is below 1, ``method`` is unknown or ``"count"``
        cannot be used, the encoder is not fitted, or the total passes ``2**62`` reports.
    ImportError
        If pyspark is not installed.

    See Also
    --------
    aggregate_dask : The same for a Dask collection.
    partition_statistic : The statistic of one partition.
    sklearn_ldp.deploy.io.aggregate_files : Aggregate report files on one machine.

    Examples
    --------
    >>> from pyspark.sql import SparkSession  # doctest: +SKIP
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> spark = SparkSession.builder.master("local[2]").getOrCreate()  # doctest: +SKIP
    >>> frame = spark.createDataFrame([(0,), (2,), (2,), (1,)], "report long")  # doctest: +SKIP
    >>> aggregate_spark(frame, RandomizedResponse(3, 1.0)).statistic.tolist()  # doctest: +SKIP
    [1, 1, 2, 4]
    """
    _import_pyspark()
    mechanism, domain, workload = _mechanism_of(mechanism, domain, workload)
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth must be an integer >= 1, got {depth!r}.")
    if not isinstance(method, str) or method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")
    check_column_names(list(frame.columns), report_columns(mechanism), "the Spark DataFrame",
                       mechanism)
    reports = _spark_columns(frame, mechanism)
    zero = mechanism.aggregate(empty_reports(mechanism))
    bound = _distinct_bound(mechanism, zero)
    if method == "count" and bound is None:
        raise ValueError(f"method='count' counts identical reports, which is exact for integer "
                         f"statistics only; {mechanism!r} sums floats: use method='partitions'.")
    n_keys = _bit_keys(mechanism)
    if n_keys is not None and method == "count":
        # Not "auto": exploding w columns makes w rows each, which measured slower than
        # numpy on the executors (benchmarks/results/bench_spark.txt).
        statistic = _counted_bits(reports, mechanism, n_keys, MAX_COUNTED)
        if statistic is not None:
            return AggregatedReports(statistic, mechanism, domain, workload)
        raise ValueError(f"the Spark DataFrame holds more than {MAX_COUNTED:,} distinct "
                         f"(column, value) pairs of {mechanism!r}: too many to count on "
                         "the driver; use method='partitions'.")
    if n_keys is None and (method == "count" or (method == "auto" and bound is not None
                                                 and bound <= MAX_COUNTED)):
        statistic = _counted(reports, mechanism, MAX_COUNTED)
        if statistic is not None:
            return AggregatedReports(statistic, mechanism, domain, workload)
        if method == "count":
            raise ValueError(f"the Spark DataFrame holds more than {MAX_COUNTED:,} distinct "
                             f"reports of {mechanism!r}: too many to count on the driver; use "
                             "method='partitions'.")
    statistic = _partitions_statistic(reports, mechanism, zero, depth)
    return AggregatedReports(statistic, mechanism, domain, workload)
