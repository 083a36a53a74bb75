"""LDPReports: what the server receives, together with the mechanism that produced it.

Both containers save to and load from a ``.npz`` file (:meth:`LDPReports.save`,
:meth:`AggregatedReports.save`) that holds the array, the mechanism's JSON specification, the
domain's categories and the workload (when present), so that another process, machine or
release of the package decodes them exactly. Aggregates merge exactly
(:meth:`AggregatedReports.merge`, ``a + b``): the statistics are additive integer counts,
summed with overflow checks.

Files
-----
The format, its SHA-256 checksum, its atomic one-writer saves and its size caps are those of
:mod:`sklearn_ldp.deploy.npz`.

Records of several columns
--------------------------
:class:`~sklearn_ldp.mechanisms.multi_attribute.columns.ColumnsMechanism` carries the reports
of records of several columns and
:class:`~sklearn_ldp.mechanisms.heavy_hitters.column.HeavyHitterMechanism` those of a
heavy-hitter column: files and frames hold them like any other reports;
:func:`~sklearn_ldp.mechanisms._base.specs.load_mechanism` rebuilds their specification.

Aggregates that cannot lie
--------------------------
:class:`AggregatedReports` validates its statistic when it is built, loaded and merged
(:func:`~sklearn_ldp.mechanisms._base.statistics.check_statistic`): integer counts for every
mechanism except the Gaussian ones (floats, bools and objects refused), never negative, at
most ``2**62`` reports, and totals consistent with each other where the mechanism records both
(support counts at most the number of reports, randomized-response counts summing to it, ...).
"""

import os

import numpy as np

# The .npz format sits with the other file formats in deploy/; it takes and returns arrays,
# mechanisms, domains and workloads, never these containers, so nothing there imports back.
from .deploy.npz import load_npz, save_npz
from .mechanisms._base.docstrings import shared_sections
from .mechanisms._base.mechanism import MAX_REPORTS, Mechanism
from .mechanisms._base.rows import empty_reports
from .mechanisms._base.statistics import check_statistic, sum_statistics

# The path parameters and the load error of the ``save``/``load`` methods, written once (lines
# ``<save path>``, ``<load path>``, ``<refused>`` (the start of a paragraph) and ``<load error>``;
# :mod:`sklearn_ldp.mechanisms._base.docstrings`).
_file_docstring = shared_sections({
    "save path": """\
Parameters
----------
path : str or os.PathLike
    The file to write (replaced atomically if it exists; no suffix is added).""",
    "load path": """\
Parameters
----------
path : str or os.PathLike
    A file written by :meth:`save`.""",
    "refused": """\
Refused: another kind of file, an unknown file or specification version or mechanism,
a checksum mismatch (the file was modified or truncated), declared sizes over the""",
    "load error": """\
Raises
------
ValueError
    If the file cannot be read or verified (the message names the file).""",
})


class LDPReports:
    """Privatized reports plus the mechanism (and domain) needed to decode them.

    Parameters
    ----------
    reports : array-like with one row per user
        The reports as the mechanism's ``randomize`` returns them: output indices (shape
        ``(n_users,)``), packed bit vectors (``(n_users, n_bytes)`` uint8) or
        ``(seed, value)`` pairs, depending on the mechanism.
    mechanism : Mechanism
        The mechanism the clients ran. Reports from real clients are wrapped with the
        mechanism rebuilt from its JSON: ``LDPReports(array, mechanism=mechanism_from_json(s))``.
    domain : Domain, optional
        The public domain the user types index into (for labelled answers).
    workload : Workload, optional
        The workload the strategy was built for; estimators use it when given none.
    n_invalid : int, default=0
        Reports dropped as invalid when these were collected
        (``reports_from_client(..., invalid="drop")``); estimators fitted on them add it to
        ``n_invalid_reports_``. Kept by :meth:`save`/:meth:`load` and summed by
        :meth:`concat`; a selection of rows (``reports[a:b]``) has 0, since the dropped
        reports belong to no row (fit the whole batch to count them once).

    See Also
    --------
    AggregatedReports : The sufficient statistic of many reports (mergeable).
    sklearn_ldp.LDPEncoder.transform : Privatizes a DataFrame into LDPReports.
    sklearn_ldp.reports_from_client : Wraps and validates the reports of real clients.
    sklearn_ldp.deploy.io.write_reports : Writes reports to Parquet or CSV files.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> mech = baseline_mechanism("randomized_response", (3,), 1.0)
    >>> reports = LDPReports(np.array([0, 2, 1, 1]), mech)
    >>> len(reports), len(reports[:2]), len(LDPReports.concat([reports, reports]))
    (4, 2, 8)
    """

    def __init__(self, reports, mechanism, domain=None, workload=None, n_invalid=0):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(
                f"mechanism must be a mechanism object (e.g. from mechanism_from_json), got "
                f"{type(mechanism).__name__}."
            )
        if isinstance(n_invalid, (bool, np.bool_)) or not isinstance(
                n_invalid, (int, np.integer)) or not 0 <= n_invalid <= MAX_REPORTS:
            raise ValueError(f"n_invalid must be an integer in [0, 2^62] (reports dropped "
                             f"at collection), got {n_invalid!r}.")
        self.reports = mechanism.check_reports(reports)
        self.mechanism = mechanism
        self.domain = domain
        self.workload = workload
        self.n_invalid = int(n_invalid)

    def __len__(self):
        return self.reports.shape[0]

    def shuffled_epsilon(self, delta):
        """The central epsilon of these reports if an anonymizing shuffler mixed them.

        Every report is ``mechanism.epsilon``-LDP; passed through a shuffler (which forwards
        them in a random order, without who sent them), all ``len(self)`` reports together are
        ``(shuffled_epsilon(delta), delta)``-DP: :func:`sklearn_ldp.shuffle_epsilon`.

        Parameters
        ----------
        delta : float
            The central delta (in (0, 1)).

        Returns
        -------
        float
            The amplified central epsilon (at most ``mechanism.epsilon``).

        Examples
        --------
        >>> import numpy as np
        >>> from sklearn_ldp.selection import baseline_mechanism
        >>> mech = baseline_mechanism("randomized_response", (3,), 2.0)
        >>> reports = LDPReports(np.zeros(10**4, dtype=int), mech)
        >>> round(reports.shuffled_epsilon(1e-6), 3)
        0.155
        """
        from .mechanisms.shuffle import shuffle_epsilon

        return shuffle_epsilon(self.mechanism.epsilon, len(self), delta)

    # As an array, reports are their table of report columns (one row per user, the columns
    # of ``LDPEncoder.get_feature_names_out``), so that a ColumnTransformer with its default
    # numpy output stacks them next to other transformers' blocks; :meth:`from_array` reads
    # such a block back exactly.
    ndim = 2

    @property
    def shape(self):
        """The shape of the table of report columns: ``(n_users, n_columns)`` (tuple)."""
        return (self.reports.shape[0], _n_columns(self.reports))

    def __getitem__(self, key):
        """Row selection (slice, integer array or boolean mask) keeps the mechanism."""
        if isinstance(key, (int, np.integer)):
            key = slice(key, key + 1 if key != -1 else None)
        return LDPReports(self.reports[key], self.mechanism, self.domain, self.workload)

    def __array__(self, dtype=None, copy=None):
        table = self.reports.reshape(self.reports.shape[0], -1)
        if dtype is None and table.dtype.kind in "iu" and table.dtype.itemsize == 8:
            # 64-bit reports (hash seeds) are not exact in float64, which numpy's stacking
            # with float columns would turn them into: Python integers stay exact.
            return table.astype(object)
        return table if dtype is None else table.astype(dtype)

    @classmethod
    def from_array(cls, array, mechanism, domain=None, workload=None):
        """Reports read back exactly from their table of report columns.

        The reverse of ``numpy.asarray(reports)``: for the encoder's block of a
        ColumnTransformer's numpy output (``Z[:, ct.output_indices_["ldp"]]``, see
        :meth:`LDPEncoder.reports_from_array
        <sklearn_ldp.encoder.LDPEncoder.reports_from_array>`), where numpy has cast the
        report columns to the common dtype of all blocks (float64, or object next to 64-bit
        reports). Every value must be exactly a report of ``mechanism``: nothing is rounded,
        clipped or dropped.

        Parameters
        ----------
        array : array-like of shape (n_users, n_columns)
            One row per user, the mechanism's report columns in order (a 1-D array for
            mechanisms with one report column).
        mechanism : Mechanism
            The mechanism the clients ran.
        domain : Domain, optional
            The public domain the user types index into (for labelled answers).
        workload : Workload, optional
            The workload the strategy was built for.

        Returns
        -------
        LDPReports
            The reports, one per row, equal to those that were stacked.

        Raises
        ------
        ValueError
            For another number of columns, values that are not integers of the report type
            (non-integral, out of range, NaN, or float64 for 64-bit reports, which float64
            cannot hold exactly), or reports the mechanism refuses.

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> mechanism = RandomizedResponse(3, 1.0)
        >>> reports = LDPReports(np.array([0, 2, 1]), mechanism)
        >>> block = np.asarray(reports).astype(float)   # as stacked next to float columns
        >>> LDPReports.from_array(block, mechanism).reports.tolist()
        [0, 2, 1]
        >>> LDPReports.from_array(block + 0.5, mechanism)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: array holds 0.5 (row 0, column 0), which is not a report of ...
        """
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a mechanism object, got "
                             f"{type(mechanism).__name__}.")
        empty = empty_reports(mechanism)
        width = _n_columns(empty)
        table = np.asarray(array)
        if table.ndim == 1 and width == 1:
            table = table[:, None]
        if table.ndim != 2 or table.shape[1] != width:
            raise ValueError(
                f"array must hold the {width} report column(s) of {mechanism!r} (shape "
                f"(n_users, {width})), got shape {table.shape}; from a ColumnTransformer's "
                "output Z pass the encoder's block, Z[:, ct.output_indices_[name]].")
        return cls(_exact_cast(table, empty.dtype, mechanism).reshape((-1,) + empty.shape[1:]),
                   mechanism, domain, workload)

    def aggregate(self):
        """The reports' sufficient statistic as :class:`AggregatedReports` (mergeable).

        Returns
        -------
        AggregatedReports
            ``mechanism.aggregate(reports)`` with the same mechanism, domain and workload
            (``n_invalid`` is not kept).

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> reports = LDPReports(np.array([0, 2, 1, 1]), RandomizedResponse(3, 1.0))
        >>> reports.aggregate().statistic.tolist()   # users per output, then their number
        [1, 2, 1, 4]
        """
        return AggregatedReports(self.mechanism.aggregate(self.reports), self.mechanism,
                                 self.domain, self.workload)

    @_file_docstring
    def save(self, path):
        """Write the reports, the mechanism's JSON spec, the domain and the workload to ``path``.

        A compressed ``.npz`` file without pickled objects (safe to load from others);
        :meth:`load` rebuilds equal reports.

        <save path>

        Raises
        ------
        sklearn_ldp.deploy.limits.FileLockedError
            If another writer (a save or a :class:`~sklearn_ldp.deploy.io.ReportWriter`, in this
            process or another) is writing ``path``; nothing is written.

        Notes
        -----
        The file is written to a hidden temporary file in the same directory, flushed to
        disk and renamed onto ``path`` (then the directory is flushed): a save that fails or
        is killed leaves the previous file at ``path`` loadable. The save holds the lock of
        ``path`` (:func:`sklearn_ldp.deploy.limits.writer_lock`) while it runs.

        Examples
        --------
        >>> import os, tempfile
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> reports = LDPReports(np.array([0, 2, 1, 1]), RandomizedResponse(3, 1.0))
        >>> path = os.path.join(tempfile.mkdtemp(), "reports.npz")
        >>> reports.save(path)
        >>> LDPReports.load(path).reports.tolist()
        [0, 2, 1, 1]
        """
        save_npz(path, "LDPReports", "reports", self.reports, self.mechanism, self.domain,
                  self.workload, self.n_invalid)

    @classmethod
    @_file_docstring
    def load(cls, path, *, allow_unverified=False):
        """Reports saved by :meth:`save`; a ValueError naming the file if they cannot be read.

        <refused>
        caps of :mod:`sklearn_ldp.deploy.limits`, reports the mechanism refuses, and a file saved by
        an earlier version (file version 1 or 2: no checksum) unless ``allow_unverified``.

        <load path>
        allow_unverified : bool, default=False
            Load a file without a checksum (file versions 1 and 2) with an
            :class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` instead of refusing it. Only
            for files whose origin you trust: their content cannot be verified.

        Returns
        -------
        LDPReports
            The reports with their mechanism, domain, workload and ``n_invalid``.

        <load error>
        """
        reports, mechanism, domain, workload, n_invalid = load_npz(
            path, "LDPReports", "reports", allow_unverified)
        try:
            return cls(reports, mechanism, domain, workload, n_invalid)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None

    @classmethod
    def concat(cls, parts):
        """Concatenate reports produced by the same mechanism (else a ValueError).

        Parameters
        ----------
        parts : iterable of LDPReports
            At least one; all from equal mechanisms.

        Returns
        -------
        LDPReports
            The rows of every part in order, with the first part's domain and workload and
            the sum of their ``n_invalid``.

        Raises
        ------
        ValueError
            If ``parts`` is empty or the mechanisms differ.
        """
        parts = list(parts)
        if not parts:
            raise ValueError("concat needs at least one LDPReports.")
        first = parts[0]
        for part in parts[1:]:
            if part.mechanism != first.mechanism:
                raise ValueError(
                    "cannot concatenate reports from different mechanisms "
                    f"({first.mechanism!r} vs {part.mechanism!r})."
                )
        return cls(
            np.concatenate([part.reports for part in parts]),
            first.mechanism,
            first.domain,
            first.workload,
            sum(part.n_invalid for part in parts),
        )

    def __repr__(self):
        return f"LDPReports(n_users={len(self)}, mechanism={self.mechanism!r})"


class AggregatedReports:
    """The server's sufficient statistic of many reports, with the mechanism that made them.

    What :meth:`LDPEncoder.simulate <sklearn_ldp.encoder.LDPEncoder.simulate>` returns: the
    aggregate drawn directly from its exact distribution, statistically identical to
    ``mechanism.aggregate(encoder.transform(X).reports)`` but without one draw per user, so
    simulations with 10^8 or more users are cheap. Estimators fit on it like on
    :class:`LDPReports`. (It is also what a deployment would keep after aggregating the
    reports of one partition.)

    Parameters
    ----------
    statistic : ndarray
        The mechanism's additive statistic (see ``Mechanism.aggregate``). Validated by
        :func:`check_statistic`: a statistic that no set of reports can produce (negative or
        float counts, inconsistent totals, more than ``2**62`` reports) is a ValueError.
    mechanism : Mechanism
        The mechanism that produced the reports.
    domain : Domain, optional
        The public domain the user types index into (for labelled answers).
    workload : Workload, optional
        The workload the strategy was built for; estimators use it when given none.

    See Also
    --------
    LDPReports : The reports themselves.
    sklearn_ldp.LDPEncoder.simulate : Draws an aggregate without one report per user.
    sklearn_ldp.deploy.io.aggregate_files : Aggregates report files chunk by chunk.
    sklearn_ldp.deploy.distributed.aggregate_dask : Aggregates reports on a Dask cluster.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> statistic = mechanism.simulate_statistic(np.array([10**8, 0, 0]),
    ...                                          np.random.default_rng(0))
    >>> len(AggregatedReports(statistic, mechanism))
    100000000
    >>> AggregatedReports(np.array([1, -1, 0, 0]), mechanism)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: the statistic of RandomizedResponse(...) holds a negative count (-1 at ...
    """

    def __init__(self, statistic, mechanism, domain=None, workload=None):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a mechanism object, got "
                             f"{type(mechanism).__name__}.")
        self.statistic = check_statistic(statistic, mechanism)
        self.mechanism = mechanism
        self.domain = domain
        self.workload = workload

    def __len__(self):
        return self.mechanism.n_reports(self.statistic)

    def __repr__(self):
        return f"{type(self).__name__}(n_users={len(self)}, mechanism={self.mechanism!r})"

    # ------------------------------------------------------------------ merging
    @classmethod
    def merge(cls, parts):
        """The aggregate of the union of disjoint shards: the sum of their statistics.

        Exact (integer counts; the Gaussian mechanisms' float sums up to rounding). All parts
        must come from the same mechanism and carry the same domain (or none), else a
        ValueError and nothing is merged. The domain and workload of the first part that has
        one are kept. Every part's statistic is validated again (:func:`check_statistic`),
        and a sum that would pass ``2**62`` reports is a ValueError, never an int64
        wraparound (:func:`sum_statistics`).

        Parameters
        ----------
        parts : iterable of AggregatedReports
            At least one aggregate, all of the same mechanism.

        Returns
        -------
        AggregatedReports
            The aggregate of all the parts' reports.

        Raises
        ------
        ValueError
            If ``parts`` is empty, holds something else, or mixes mechanisms or domains.

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> mechanism = RandomizedResponse(3, 1.0)
        >>> a = LDPReports(np.array([0, 2]), mechanism).aggregate()
        >>> b = LDPReports(np.array([1, 1]), mechanism).aggregate()
        >>> AggregatedReports.merge([a, b]).statistic.tolist(), len(a + b)
        ([1, 2, 1, 4], 4)
        """
        parts = list(parts)
        if not parts:
            raise ValueError("merge needs at least one AggregatedReports.")
        for position, part in enumerate(parts):
            if not isinstance(part, AggregatedReports):
                raise ValueError(f"merge combines AggregatedReports; part {position} is a "
                                 f"{type(part).__name__} (aggregate LDPReports with "
                                 ".aggregate() first).")
        first = parts[0]
        domain = next((part.domain for part in parts if part.domain is not None), None)
        workload = next((part.workload for part in parts if part.workload is not None), None)
        for position, part in enumerate(parts):
            if part.mechanism != first.mechanism:
                raise ValueError(
                    f"cannot merge aggregates of different mechanisms: part {position} comes "
                    f"from {part.mechanism!r}, part 0 from {first.mechanism!r}."
                )
            if part.domain is not None and part.domain != domain:
                raise ValueError(f"cannot merge aggregates over different domains: part "
                                 f"{position} has {part.domain!r}, another {domain!r}.")
        total = sum_statistics([part.statistic for part in parts], first.mechanism)
        return AggregatedReports(total, first.mechanism, domain, workload)

    def __add__(self, other):
        if not isinstance(other, AggregatedReports):
            return NotImplemented
        return AggregatedReports.merge([self, other])

    def __radd__(self, other):
        # sum(parts) starts from 0.
        if isinstance(other, int) and other == 0:
            return AggregatedReports.merge([self])
        return NotImplemented

    # ------------------------------------------------------------------ files
    @_file_docstring
    def save(self, path):
        """Write the statistic, the mechanism's JSON spec, the domain and the workload.

        A compressed ``.npz`` file without pickled objects, with a SHA-256 checksum of its
        content; :meth:`load` reads it back.

        <save path>

        Raises
        ------
        sklearn_ldp.deploy.limits.FileLockedError
            If another writer is writing ``path`` (nothing is written); one writer at a
            time and atomic, as :meth:`LDPReports.save`.

        Examples
        --------
        >>> import os, tempfile
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> aggregate = LDPReports(np.array([0, 2, 1]), RandomizedResponse(3, 1.0)).aggregate()
        >>> path = os.path.join(tempfile.mkdtemp(), "aggregate.npz")
        >>> aggregate.save(path)
        >>> AggregatedReports.load(path).statistic.tolist()
        [1, 1, 1, 3]
        """
        save_npz(path, "AggregatedReports", "statistic", self.statistic, self.mechanism,
                  self.domain, self.workload)

    @classmethod
    @_file_docstring
    def load(cls, path, *, allow_unverified=False):
        """An aggregate saved by :meth:`save`; a ValueError naming the file if it cannot be read.

        <refused>
        caps of :mod:`sklearn_ldp.deploy.limits`, a statistic that
        :func:`~sklearn_ldp.mechanisms._base.statistics.check_statistic` refuses
        (wrong shape or type, negative counts, inconsistent totals), and a file saved by an
        earlier version (file version 1 or 2: no checksum) unless ``allow_unverified``.

        <load path>
        allow_unverified : bool, default=False
            Load a file without a checksum, with a warning, as :meth:`LDPReports.load`.

        Returns
        -------
        AggregatedReports
            The statistic with its mechanism, domain and workload.

        <load error>
        """
        statistic, mechanism, domain, workload, _ = load_npz(
            path, "AggregatedReports", "statistic", allow_unverified)
        try:
            statistic = check_statistic(statistic, mechanism)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None
        return cls(statistic, mechanism, domain, workload)


def _n_columns(reports):
    """The number of report columns of a report array (one per value of a row)."""
    return int(np.prod(reports.shape[1:], dtype=np.int64))


def _is_finite_number(value):
    """Whether an element of an object array can be a report value (a bool is not)."""
    return (isinstance(value, int | float | np.integer | np.floating)
            and not isinstance(value, bool | np.bool_) and np.isfinite(float(value)))


def _same_values(cast, table):
    """Elementwise: ``cast`` holds exactly the values of ``table``."""
    if table.dtype.kind == "O" or cast.dtype.itemsize == 8:
        # Python integers compare exactly with 64-bit integers and floats alike.
        return np.asarray(cast.astype(object) == table.astype(object), dtype=bool)
    return cast == table


def _exact_cast(table, dtype, mechanism):
    """``table`` as ``dtype``, or a ValueError naming the first value that does not convert
    exactly (a cast that rounds, wraps or overflows would change the reports)."""
    kind = table.dtype.kind
    if kind not in "iufO":
        raise ValueError(f"array must hold numbers (reports of {mechanism!r}), got dtype "
                         f"{table.dtype}.")
    if dtype.kind in "iu" and dtype.itemsize == 8 and kind == "f":
        raise ValueError(f"array holds float64 values, which cannot carry the 64-bit reports "
                         f"of {mechanism!r} exactly; keep the block as numpy stacks it "
                         "(object dtype) or use set_output(transform='pandas').")
    try:
        if kind == "O" and not {bool, np.bool_}.isdisjoint(map(type, table.ravel().tolist())):
            raise TypeError  # True == 1: a bool would pass the comparison below
        with np.errstate(all="ignore"):
            cast = table.astype(dtype)
    except (OverflowError, ValueError, TypeError):
        cast = None  # some value does not convert: found one by one below
    if cast is not None and _same_values(cast, table).all():
        return cast
    # Slow path, only to name the first bad value: which values are numbers, in range and
    # unchanged by the cast.
    if kind == "O":
        ok = np.frompyfunc(_is_finite_number, 1, 1)(table).astype(bool)
    elif kind == "f":
        ok = np.isfinite(table)
    else:
        ok = np.ones(table.shape, dtype=bool)
    source = np.where(ok, table, 0).astype(table.dtype)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        ok &= np.asarray((source >= info.min) & (source <= info.max), dtype=bool)
        source = np.where(ok, source, 0).astype(table.dtype)
    with np.errstate(all="ignore"):
        ok &= _same_values(source.astype(dtype), source)
    row, column = (int(i[0]) for i in np.nonzero(~ok))
    value = table[row, column]
    value = value.item() if isinstance(value, np.generic) else value
    raise ValueError(f"array holds {value!r} (row {row}, column {column}), which is not a "
                     f"report of {mechanism!r} (its reports are {dtype} values).")


def statistic_of(reports):
    """The additive statistic of LDPReports (aggregated now) or AggregatedReports.

    A :class:`~sklearn_ldp.deploy.distributed.DaskReports` is an AggregatedReports whose statistic
    is computed on the Dask cluster the first time it is asked for, here.
    """
    if isinstance(reports, AggregatedReports):
        return reports.statistic
    return reports.mechanism.aggregate(reports.reports)


def check_same_mechanism(reports, mechanism):
    """Refuse reports that another mechanism (strategy, epsilon or domain) produced."""
    if reports.mechanism != mechanism:
        raise ValueError(
            "these reports come from a different mechanism than the ones already fitted "
            f"({reports.mechanism!r} vs {mechanism!r}); a different strategy, epsilon "
            "or domain cannot be mixed into one estimate."
        )
