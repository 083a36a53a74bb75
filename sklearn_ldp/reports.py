"""LDPReports: what the server receives, together with the mechanism that produced it.

Both containers save to and load from a ``.npz`` file (:meth:`LDPReports.save`,
:meth:`AggregatedReports.save`) that holds the array, the mechanism's JSON specification, the
domain's categories and the workload (when present), so that another process, machine or
release of the package decodes them exactly. Aggregates merge exactly
(:meth:`AggregatedReports.merge`, ``a + b``): the statistics are additive integer counts.
"""

import json
import os

import numpy as np
import pandas as pd

from .domain import Domain
from .mechanisms import Mechanism, mechanism_from_dict
from .workloads import Workload, workload_from_spec

# Version of the layout of the files written by `save` (not of the mechanism specification).
FILE_VERSION = 2
# Version 1 files (dense workload matrix) are still read.
READABLE_FILE_VERSIONS = (1, 2)
FILE_KINDS = ("LDPReports", "AggregatedReports")


def empty_reports(mechanism):
    """A zero-row array with the shape and dtype of ``mechanism``'s reports.

    Learned from one report of cell 0 (the layout is fixed by the mechanism), so readers of
    files and partitions know the expected columns and dtype before seeing any data.

    Examples
    --------
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> empty_reports(baseline_mechanism("olh", (5,), 1.0)).shape
    (0, 2)
    """
    probe = mechanism.randomize(np.zeros(1, dtype=np.int64), np.random.default_rng(0))
    return np.asarray(probe)[:0]


# ---------------------------------------------------------------------- files
def _category_to_json(value, column):
    """One category as a JSON value; tuples and intervals are tagged so they come back."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, tuple):
        return {"tuple": [_category_to_json(v, column) for v in value]}
    if isinstance(value, pd.Interval):
        return {"interval": [_category_to_json(value.left, column),
                             _category_to_json(value.right, column), value.closed]}
    raise ValueError(
        f"cannot save the category {value!r} of column {column!r}: only str, int, float, bool, "
        "tuples of them and pandas.Interval are stored; save without the domain (domain=None) "
        "and pass it again after loading."
    )


def _category_from_json(value):
    if isinstance(value, dict) and "tuple" in value:
        return tuple(_category_from_json(v) for v in value["tuple"])
    if isinstance(value, dict) and "interval" in value:
        left, right, closed = value["interval"]
        return pd.Interval(_category_from_json(left), _category_from_json(right), closed=closed)
    return value


def _save_npz(path, kind, array_name, array, mechanism, domain, workload):
    """Write ``array`` and everything needed to decode it (no pickled objects)."""
    categories = None
    if domain is not None:
        categories = {column: [_category_to_json(v, column) for v in values]
                      for column, values in domain.categories.items()}
    header = {"format": "sklearn_ldp", "kind": kind, "file_version": FILE_VERSION,
              "mechanism": mechanism.to_dict(), "categories": categories,
              "workload": None}
    arrays = {array_name: np.asarray(array)}
    if workload is not None:
        # The workload's structure, not its matrix (all ranges over 2^16 cells are 2^31 rows).
        header["workload"], workload_arrays = workload.to_spec()
        arrays.update({f"workload.{key}": value for key, value in workload_arrays.items()})
    arrays["header"] = np.array(json.dumps(header))
    with open(os.fspath(path), "wb") as file:  # np.savez would append ".npz" to other names
        np.savez_compressed(file, **arrays)


def _load_npz(path, kind, array_name):
    """``(array, mechanism, domain, workload)`` from a file written by ``_save_npz``."""
    name = os.fspath(path)
    try:
        with np.load(name, allow_pickle=False) as data:
            contents = {key: data[key] for key in data.files}
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"{name}: not a file saved by sklearn_ldp ({exc}).") from None
    try:
        header = json.loads(str(contents["header"]))
        if header.get("format") != "sklearn_ldp":
            raise KeyError("format")
    except (KeyError, ValueError, TypeError):
        raise ValueError(f"{name}: not a file saved by sklearn_ldp (no valid header).") from None
    if header.get("file_version") not in READABLE_FILE_VERSIONS:
        raise ValueError(f"{name}: unsupported file version {header.get('file_version')!r}; "
                         f"this sklearn_ldp reads versions {list(READABLE_FILE_VERSIONS)}.")
    if header.get("kind") != kind:
        raise ValueError(f"{name} holds {header.get('kind')}, not {kind}; load it with "
                         f"{header.get('kind')}.load.")
    try:
        mechanism = mechanism_from_dict(header["mechanism"])
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{name}: cannot rebuild the mechanism: {exc}") from None
    domain = None
    if header["categories"] is not None:
        domain = Domain({column: [_category_from_json(v) for v in values]
                         for column, values in header["categories"].items()})
    workload = None
    if "workload_matrix" in contents:  # file version 1 stored the dense matrix
        workload = Workload(contents["workload_matrix"], labels=contents["workload_labels"],
                            domain=domain, name=header["workload_name"])
    elif header.get("workload") is not None:
        try:
            workload = workload_from_spec(
                header["workload"],
                {key[len("workload."):]: value for key, value in contents.items()
                 if key.startswith("workload.")}, domain)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name}: cannot rebuild the workload: {exc}") from None
    return contents[array_name], mechanism, domain, workload


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

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.selection import baseline_mechanism
    >>> mech = baseline_mechanism("randomized_response", (3,), 1.0)
    >>> reports = LDPReports(np.array([0, 2, 1, 1]), mech)
    >>> len(reports), len(reports[:2]), len(LDPReports.concat([reports, reports]))
    (4, 2, 8)
    """

    def __init__(self, reports, mechanism, domain=None, workload=None):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(
                f"mechanism must be a mechanism object (e.g. from mechanism_from_json), got "
                f"{type(mechanism).__name__}."
            )
        self.reports = mechanism.check_reports(reports)
        self.mechanism = mechanism
        self.domain = domain
        self.workload = workload

    def __len__(self):
        return self.reports.shape[0]

    @property
    def shape(self):
        return self.reports.shape

    def __getitem__(self, key):
        """Row selection (slice, integer array or boolean mask) keeps the mechanism."""
        if isinstance(key, (int, np.integer)):
            key = slice(key, key + 1 if key != -1 else None)
        return LDPReports(self.reports[key], self.mechanism, self.domain, self.workload)

    def __array__(self, dtype=None, copy=None):
        return self.reports if dtype is None else self.reports.astype(dtype)

    def aggregate(self):
        """The reports' sufficient statistic as :class:`AggregatedReports` (mergeable).

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> reports = LDPReports(np.array([0, 2, 1, 1]), RandomizedResponse(3, 1.0))
        >>> reports.aggregate().statistic.tolist()   # users per output, then their number
        [1, 2, 1, 4]
        """
        return AggregatedReports(self.mechanism.aggregate(self.reports), self.mechanism,
                                 self.domain, self.workload)

    def save(self, path):
        """Write the reports, the mechanism's JSON spec, the domain and the workload to ``path``.

        A compressed ``.npz`` file without pickled objects (safe to load from others);
        :meth:`load` rebuilds equal reports.

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
        _save_npz(path, "LDPReports", "reports", self.reports, self.mechanism, self.domain,
                  self.workload)

    @classmethod
    def load(cls, path):
        """Reports saved by :meth:`save`; a ValueError naming the file if they cannot be read
        (another kind of file, an unknown specification version or mechanism, bad reports)."""
        reports, mechanism, domain, workload = _load_npz(path, "LDPReports", "reports")
        try:
            return cls(reports, mechanism, domain, workload)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None

    @classmethod
    def concat(cls, parts):
        """Concatenate reports produced by the same mechanism (else a ValueError)."""
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
        The mechanism's additive statistic (see ``Mechanism.aggregate``).
    mechanism : Mechanism
    domain, workload : optional, as in :class:`LDPReports`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> statistic = mechanism.simulate_statistic(np.array([10**8, 0, 0]),
    ...                                          np.random.default_rng(0))
    >>> len(AggregatedReports(statistic, mechanism))
    100000000
    """

    def __init__(self, statistic, mechanism, domain=None, workload=None):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a mechanism object, got "
                             f"{type(mechanism).__name__}.")
        self.statistic = np.asarray(statistic)
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
        one are kept.

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
        statistics = [np.asarray(part.statistic) for part in parts]
        for position, (part, statistic) in enumerate(zip(parts, statistics, strict=True)):
            if part.mechanism != first.mechanism:
                raise ValueError(
                    f"cannot merge aggregates of different mechanisms: part {position} comes "
                    f"from {part.mechanism!r}, part 0 from {first.mechanism!r}."
                )
            if part.domain is not None and part.domain != domain:
                raise ValueError(f"cannot merge aggregates over different domains: part "
                                 f"{position} has {part.domain!r}, another {domain!r}.")
            if statistic.shape != statistics[0].shape:
                raise ValueError(f"part {position} has a statistic of shape {statistic.shape}, "
                                 f"part 0 of shape {statistics[0].shape}.")
        total = statistics[0].copy()
        for statistic in statistics[1:]:
            total += statistic
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
    def save(self, path):
        """Write the statistic, the mechanism's JSON spec, the domain and the workload.

        A compressed ``.npz`` file without pickled objects; :meth:`load` reads it back.

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
        _save_npz(path, "AggregatedReports", "statistic", self.statistic, self.mechanism,
                  self.domain, self.workload)

    @classmethod
    def load(cls, path):
        """An aggregate saved by :meth:`save`; a ValueError naming the file if it cannot be read
        (another kind of file, an unknown specification version or mechanism, a statistic of
        the wrong shape or type)."""
        statistic, mechanism, domain, workload = _load_npz(path, "AggregatedReports",
                                                           "statistic")
        try:
            statistic = check_statistic(statistic, mechanism)
        except ValueError as exc:
            raise ValueError(f"{os.fspath(path)}: {exc}") from None
        return cls(statistic, mechanism, domain, workload)


def check_statistic(statistic, mechanism):
    """``statistic`` if it has the shape and type of ``mechanism``'s, else a ValueError."""
    statistic = np.asarray(statistic)
    zero = mechanism.aggregate(empty_reports(mechanism))
    if statistic.shape != zero.shape:
        raise ValueError(f"the statistic of {mechanism!r} has shape {zero.shape}, got "
                         f"{statistic.shape}: it comes from another mechanism.")
    if np.issubdtype(zero.dtype, np.integer):
        if not np.issubdtype(statistic.dtype, np.integer):
            raise ValueError(f"the statistic of {mechanism!r} holds integer counts, got dtype "
                             f"{statistic.dtype}.")
        return statistic.astype(zero.dtype, copy=False)
    if not np.issubdtype(statistic.dtype, np.floating) or not np.all(np.isfinite(statistic)):
        raise ValueError(f"the statistic of {mechanism!r} holds finite floats, got dtype "
                         f"{statistic.dtype} or non-finite entries.")
    return statistic


def statistic_of(reports):
    """The additive statistic of LDPReports (aggregated now) or AggregatedReports.

    A :class:`~sklearn_ldp.distributed.DaskReports` is an AggregatedReports whose statistic
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
