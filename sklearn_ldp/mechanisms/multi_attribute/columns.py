"""Records of several columns: one mechanism per part of the record, one report row per user.

Records of several columns (numeric columns with public bounds, categorical columns) are
privatized by one mechanism per *part* of the record, and every user's reports of all parts
form one row. :class:`ColumnsMechanism` (kind ``"columns"``) is a Mechanism (so every report
container, file and frame carries it) whose math is entirely that of the mechanisms of
:mod:`sklearn_ldp.mechanisms.numeric`,
:mod:`~sklearn_ldp.mechanisms.multi_attribute.mechanisms` and the frequency oracles. Its spec
kind is dispatched by :func:`~sklearn_ldp.mechanisms._base.specs.load_mechanism` rather than
registered (the client randomizers do not know it). The per-column tables of the encoder
(budget, answer errors) are DataFrames, built in :mod:`sklearn_ldp.column_tables`.
"""

import math
from fractions import Fraction

import numpy as np

from ...deploy.limits import check_size
from ...workloads import histogram
from .._base.docstrings import from_dict_docstring, shared_sections
from .._base.exact import product_law
from .._base.headers import check_spec_header
from .._base.mechanism import (
    MAX_REPORTS,
    Mechanism,
    ReportCheck,
    chunks,
    exact_total,
    mechanism_from_dict,
)
from .._base.rows import empty_reports
from .._base.statistics import check_statistic
from ..numeric.base import NUMERIC_MECHANISMS
from ..numeric.means import MeanMechanism, SampledMeanMechanism
from ..numeric.registry import numeric_mechanism_from_dict
from ..numeric.square_wave import SquareWaveMechanism
from .mechanisms import MAX_ATTRIBUTES, MultiAttributeMechanism, smp_groups

COLUMNS_KIND = "columns"
COLUMNS_SPEC_VERSION = 1
# Most columns of one record (the multi-attribute mechanisms' own cap).
MAX_COLUMNS = MAX_ATTRIBUTES
ORACLE_KINDS = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
                "subset_selection")
SAMPLED_MEAN_KIND = "sampled_mean"
# Integers that float64 holds exactly: integer reports and counts stored in a float row.
_FLOAT_EXACT = 2**53


def _integer_entries(block, dtype):
    """``(block as dtype, rows_ok)``: ``rows_ok[i]`` when every entry of row ``i`` is an
    integer that ``dtype`` holds (entries that are not become 0 in the cast copy)."""
    block = np.asarray(block)
    info = np.iinfo(dtype)
    if block.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            ok = (np.isfinite(block) & (block == np.floor(block)) & (block >= info.min)
                  & (block <= info.max))
    elif block.dtype.kind in "iu":
        ok = np.ones(block.shape, dtype=bool)
        source = np.iinfo(block.dtype)
        if source.min < info.min:
            ok &= block >= info.min
        if source.max > info.max:
            ok &= block <= info.max
    else:
        ok = np.zeros(block.shape, dtype=bool)
    rows_ok = ok.all(axis=tuple(range(1, ok.ndim))) if ok.ndim > 1 else ok
    safe = np.where(ok, block, 0).astype(dtype) if not ok.all() else block.astype(dtype)
    return safe, rows_ok


def _as_index(positions):
    """``positions`` as a slice when they are consecutive and ascending, else the list."""
    if positions == list(range(positions[0], positions[0] + len(positions))):
        return slice(positions[0], positions[0] + len(positions))
    return positions


class _Part:
    """One part of a record: its columns, its mechanism, the layout of its report columns.

    Subclasses set ``width`` (report columns), ``report_dtype`` (float64, or the unsigned
    type of the integer reports), ``statistic_size`` and ``float_statistic``, and implement
    the client side (``randomize``, given for one-column parts), the checks (``validity``,
    ``check_statistic``), the statistic (``aggregate``) and the spec.
    """

    kind = None

    def __init__(self, columns, mechanism):
        self.columns = tuple(columns)
        self.mechanism = mechanism

    @property
    def epsilon(self):
        """The record-level budget the part spends (standard LDP)."""
        return float(self.mechanism.epsilon)

    @property
    def float_reports(self):
        return np.dtype(self.report_dtype).kind == "f"

    @property
    def strategy(self):
        return self.kind

    def spec(self):
        return {"columns": list(self.columns), "spec": self.mechanism.to_dict()}

    def _check_one_column_per_attribute(self, what):
        """A ValueError unless the part has one column per attribute of its mechanism."""
        n_attributes = self.mechanism.n_attributes
        if len(self.columns) != n_attributes:
            raise ValueError(f"a {what} part over {n_attributes} attributes "
                             f"needs as many columns, got {list(self.columns)!r}.")

    def randomize(self, records, rng):
        """The mechanism's reports of the part's column, as one report column (one-column
        parts)."""
        return self.mechanism.randomize(records[:, 0], rng)[:, None]

    def exact_law(self, values):
        """The exact law of the part's report of one user's ``values`` (its columns of the
        record), outputs as the part writes its report columns (one-column parts)."""
        return self.mechanism.exact_law(values[0])

    def names(self):
        """Report column names (one per report column)."""
        if self.width == 1:
            return [f"report_{self.columns[0]}"]
        return [f"report_{self.columns[0]}_{j}" for j in range(self.width)]


class _MeanPart(_Part):
    """One bounded number, Duchi / Piecewise / Hybrid (one report value per user)."""

    kind = "mean"
    width = 1
    statistic_size = 3
    float_statistic = True

    @property
    def report_dtype(self):
        return np.dtype(np.uint8) if self.mechanism.kind == "duchi" else np.dtype(np.float64)

    @property
    def strategy(self):
        return self.mechanism.kind

    def _native(self, block):
        column = block[:, 0]
        return column.astype(np.uint8) if self.mechanism.kind == "duchi" else \
            column.astype(np.float64)

    def validity(self, block):
        column = block[:, 0]
        if self.mechanism.kind == "duchi":
            return (column == 0) | (column == 1)
        if block.dtype.kind != "f":
            return np.zeros(block.shape[0], dtype=bool)
        return np.asarray(self.mechanism.report_validity(column.astype(np.float64)), dtype=bool)

    def aggregate(self, block):
        return self.mechanism.aggregate(self._native(block))

    def check_statistic(self, statistic):
        if not np.any(statistic):
            return 0  # the aggregate of no reports
        self.mechanism.check_statistic(statistic)
        return int(statistic[0])

    # decoding (value units)
    def means(self, statistic):
        """``(means, standard errors)`` of the part's columns from its statistic."""
        mean = self.mechanism.estimate_mean(statistic)
        return np.array([mean]), np.array([math.sqrt(
            self.mechanism.estimate_mean_variance(statistic))])

    def per_user_variance(self):
        """``(worst, average)`` variance of one user's report, per column (value units)."""
        variance = self.mechanism.unit_variance(np.array([0.0, 1.0])) \
            * self.mechanism.half_width ** 2
        # Every Var[y | t] here is a + b t^2 (plus the grid's rounding bump, which the
        # mechanism's worst case includes): its mean over t uniform in [-1, 1] is about
        # a + b / 3 = (2 f(0) + f(1)) / 3.
        return (np.array([self.mechanism.worst_case_variance()]),
                np.array([(2 * variance[0] + variance[1]) / 3]))

    def bounds(self):
        return [self.mechanism.bounds]


class _SampledMeanPart(_Part):
    """``d`` bounded numbers, each user reporting ``k`` of them (Wang et al. 2019).

    Report row: the ``k`` sampled attribute positions, then their ``k`` reports. Statistic:
    ``[N, sum y_1 .. sum y_d, sum y_1^2 .. sum y_d^2]`` (the mechanism's ``[N, sums]`` plus
    the sums of squares, for the estimated standard errors).
    """

    kind = SAMPLED_MEAN_KIND
    float_statistic = True

    def __init__(self, columns, mechanism):
        super().__init__(columns, mechanism)
        self._check_one_column_per_attribute("sampled-mean")
        self.width = 2 * mechanism.n_sampled
        self.statistic_size = 1 + 2 * mechanism.n_attributes

    @property
    def report_dtype(self):
        if self.mechanism.base != "duchi":
            return np.dtype(np.float64)
        return np.result_type(np.min_scalar_type(self.mechanism.n_attributes - 1), np.uint8)

    @property
    def strategy(self):
        return self.mechanism.base

    def spec(self):
        return {"columns": list(self.columns), "spec": self.mechanism.to_dict()}

    def names(self):
        k = self.mechanism.n_sampled
        return ([f"report_sampled_attribute_{j}" for j in range(k)]
                + [f"report_sampled_value_{j}" for j in range(k)])

    def exact_law(self, values):
        return self.mechanism.exact_law(values)  # rows [attributes..., reports...]

    def randomize(self, records, rng):
        attributes, values = self.mechanism.randomize(records, rng)
        return np.hstack([attributes.astype(self.report_dtype),
                          values.astype(self.report_dtype)])

    def validity(self, block):
        k, d = self.mechanism.n_sampled, self.mechanism.n_attributes
        attributes, ok = _integer_entries(block[:, :k], np.int64)
        ok &= ((attributes >= 0) & (attributes < d)).all(axis=1)
        if k > 1:  # sampled without replacement
            ok &= (np.diff(np.sort(attributes, axis=1), axis=1) != 0).all(axis=1)
        values = block[:, k:]
        randomizer = self.mechanism.randomizer
        if randomizer.kind == "duchi":
            ok &= ((values == 0) | (values == 1)).all(axis=1)
        elif block.dtype.kind != "f":
            ok[:] = False
        else:
            ok &= np.asarray(randomizer.report_validity(values.astype(np.float64).ravel()),
                             dtype=bool).reshape(values.shape).all(axis=1)
        return ok

    def aggregate(self, block):
        k, d = self.mechanism.n_sampled, self.mechanism.n_attributes
        attributes = block[:, :k].astype(np.int64).ravel()
        values = block[:, k:]
        randomizer = self.mechanism.randomizer
        native = values.astype(np.uint8 if randomizer.kind == "duchi" else np.float64).ravel()
        y = randomizer.report_values(native)
        sums = np.bincount(attributes, weights=y, minlength=d)
        squares = np.bincount(attributes, weights=np.square(y), minlength=d)
        return np.concatenate([[float(block.shape[0])], sums, squares])

    def check_statistic(self, statistic):
        d = self.mechanism.n_attributes
        n = statistic[0]
        if n == 0 and not np.any(statistic):
            return 0
        sums, squares = statistic[1:d + 1], statistic[d + 1:]
        magnitude = self.mechanism.randomizer.report_magnitude()
        slack = 1e-9 * max(n, 1.0) * magnitude ** 2
        if (n < 1 or n != math.floor(n) or n > _FLOAT_EXACT
                or np.any(np.abs(sums) > n * magnitude * (1 + 1e-12))
                or np.any(squares < -slack) or np.any(squares > n * magnitude ** 2 + slack)
                or np.any(sums ** 2 > n * squares + slack * n)):
            raise ValueError(f"the sampled-mean statistic {statistic.tolist()!r} cannot come "
                             f"from valid reports (|y| <= {magnitude:.6g} each).")
        return int(n)

    def means(self, statistic):
        mechanism = self.mechanism
        d = mechanism.n_attributes
        means = mechanism.estimate_means(statistic[:d + 1])
        n = statistic[0]
        half = np.array([(high - low) / 2 for low, high in mechanism.bounds])
        if n < 2:
            return means, np.full(d, np.inf)
        # Each user's contribution to attribute j's unit-scale estimate is z = (d / k) y when
        # j was sampled, else 0; the estimate is the mean of z over the N users, so its
        # variance is estimated without bias by the sample variance of z over N.
        ratio = d / mechanism.n_sampled
        total, squares = ratio * statistic[1:d + 1], ratio ** 2 * statistic[d + 1:]
        sample_variance = np.maximum(squares - total ** 2 / n, 0.0) / (n - 1)
        return means, np.sqrt(sample_variance / n) * half

    def per_user_variance(self):
        mechanism = self.mechanism
        half = np.array([(high - low) / 2 for low, high in mechanism.bounds])
        at_zero, at_one = mechanism.unit_variance(np.array([0.0, 1.0]))
        worst = max(at_zero, at_one) * half ** 2
        return worst, (2 * at_zero + at_one) / 3 * half ** 2

    def bounds(self):
        return list(self.mechanism.bounds)


class _SquareWavePart(_Part):
    """One bounded number for its distribution: Square Wave (one float per user)."""

    kind = "square_wave"
    width = 1
    report_dtype = np.dtype(np.float64)
    float_statistic = False

    @property
    def statistic_size(self):
        return self.mechanism.n_buckets

    def validity(self, block):
        if block.dtype.kind != "f":
            return np.zeros(block.shape[0], dtype=bool)
        return np.asarray(self.mechanism.report_validity(block[:, 0].astype(np.float64)),
                          dtype=bool)

    def aggregate(self, block):
        return self.mechanism.aggregate(block[:, 0].astype(np.float64))

    def check_statistic(self, statistic):
        return exact_total(statistic)

    def bounds(self):
        return [self.mechanism.bounds]


def _native_dtype(oracle):
    """``(dtype, ndim)`` of a frequency oracle's reports."""
    probe = np.asarray(oracle.randomize(np.zeros(1, dtype=np.int64), np.random.default_rng(0)))
    return probe.dtype, probe.ndim


class _MultiAttributePart(_Part):
    """Several categorical columns by SPL, SMP or RS+FD (Arcolezi et al. 2021).

    Report row: SPL and RS+FD, every attribute's oracle report in column order (one index,
    or the packed bits); SMP, the chosen attribute then its report, padded with zeros to the
    widest attribute's report.
    """

    kind = "multi_attribute"
    float_statistic = False

    def __init__(self, columns, mechanism):
        super().__init__(columns, mechanism)
        self._check_one_column_per_attribute("multi-attribute")
        layouts = [_native_dtype(oracle) for oracle in mechanism.oracles]
        self._dtypes = [dtype for dtype, _ in layouts]
        self._packed = [ndim == 2 for _, ndim in layouts]
        self._widths = [(size + 7) // 8 if packed else 1
                        for size, packed in zip(mechanism.shape, self._packed, strict=True)]
        self._smp = mechanism.protocol == "smp"
        self._attribute_dtype = np.min_scalar_type(mechanism.n_attributes - 1)
        dtypes = self._dtypes + ([self._attribute_dtype] if self._smp else [])
        self.report_dtype = np.result_type(*dtypes)
        self.width = 1 + max(self._widths) if self._smp else sum(self._widths)
        self._offsets = np.cumsum([0] + self._widths)
        self.statistic_size = sum(mechanism.shape) + mechanism.n_attributes

    @property
    def strategy(self):
        return self.mechanism.protocol

    def names(self):
        if self._smp:
            return ["report_attribute"] + [f"report_value_{j}" for j in range(self.width - 1)]
        names = []
        for column, width in zip(self.columns, self._widths, strict=True):
            names += [f"report_{column}"] if width == 1 else [f"report_{column}_{j}"
                                                             for j in range(width)]
        return names

    def exact_law(self, values):
        # Rows of report_rows: the layout of this part's report columns (padded for SMP).
        return self.mechanism.exact_law(np.asarray(values).astype(np.int64))

    def randomize(self, records, rng):
        return self.mechanism.randomize_rows(records.astype(np.int64, copy=False), rng,
                                             self.report_dtype)

    def _oracle_validity(self, i, sub):
        native, ok = _integer_entries(sub, self._dtypes[i])
        native = native if self._packed[i] else native[:, 0]
        return ok & np.asarray(self.mechanism.oracles[i].report_validity(native).valid,
                               dtype=bool)

    def validity(self, block):
        if not self._smp:
            ok = np.ones(block.shape[0], dtype=bool)
            for i, width in enumerate(self._widths):
                start = self._offsets[i]
                ok &= self._oracle_validity(i, block[:, start:start + width])
            return ok
        attribute, ok = _integer_entries(block[:, :1], np.int64)
        attribute = attribute[:, 0]
        d = self.mechanism.n_attributes
        ok &= (attribute >= 0) & (attribute < d)
        # Rows grouped by attribute, the invalid ones in an extra group d (never read).
        grouped = np.where(ok, attribute, d).astype(np.min_scalar_type(d))
        order, bounds = smp_groups(grouped, d + 1)
        rest = block[:, 1:]
        for i, width in enumerate(self._widths):
            rows = order[bounds[i]:bounds[i + 1]]
            if not rows.size:
                continue
            valid = self._oracle_validity(i, rest[rows, :width])
            valid &= (rest[rows, width:] == 0).all(axis=1)  # the padding
            ok[rows] = valid
        return ok

    def _native(self, block):
        reports = []
        if not self._smp:
            for i, width in enumerate(self._widths):
                start = self._offsets[i]
                sub = block[:, start:start + width].astype(self._dtypes[i])
                reports.append(sub if self._packed[i] else sub[:, 0])
            return {"attribute": None, "reports": reports}
        attribute = block[:, 0].astype(self._attribute_dtype)
        order, bounds = smp_groups(attribute, self.mechanism.n_attributes)
        for i, width in enumerate(self._widths):
            # The rows of attribute i in user order, as randomize returns them.
            sub = block[order[bounds[i]:bounds[i + 1]], 1:1 + width].astype(self._dtypes[i])
            reports.append(sub if self._packed[i] else sub[:, 0])
        return {"attribute": attribute, "reports": reports}

    def aggregate(self, block):
        return self.mechanism.aggregate(self._native(block))

    def check_statistic(self, statistic):
        parts = self.mechanism._split(statistic)
        if self._smp:
            return sum(int(part[-1]) for part in parts)
        return int(parts[0][-1])

    def counts(self, statistic):
        """Unbiased user counts of every category, one array per column."""
        return self.mechanism.estimate(statistic)

    def count_variance(self, i, frequencies, n_users):
        """Variance of column ``i``'s count estimates at the given frequencies (the
        mechanism's formula: exact for SPL and RS+FD, SMP up to ``O(d / N)``)."""
        return self.mechanism.count_variance(i, frequencies, n_users)

    def per_user_variance(self):
        """Per column, ``(worst, average)`` variance of one category's count, per user: the
        worst over the category's frequency in ``[0, 1]``, and at uniform frequencies."""
        grid = np.linspace(0.0, 1.0, 1001)  # each variance is a quadratic in f
        return [(float(self.count_variance(i, grid, 1).max()),
                 float(self.count_variance(i, np.full(size, 1 / size), 1).mean()))
                for i, size in enumerate(self.mechanism.shape)]

    def sizes(self):
        return list(self.mechanism.shape)


class _OraclePart(_Part):
    """One categorical column through a frequency oracle of the package."""

    kind = "oracle"

    def __init__(self, columns, mechanism):
        super().__init__(columns, mechanism)
        if len(self.columns) != 1:
            raise ValueError(f"a frequency-oracle part reports one column, got "
                             f"{list(self.columns)!r}.")
        if mechanism.kind not in ORACLE_KINDS:
            raise ValueError(f"a categorical column is reported through a frequency oracle "
                             f"({', '.join(ORACLE_KINDS)}), not {mechanism.kind!r}.")
        empty = empty_reports(mechanism)
        self.report_dtype = empty.dtype
        self._ndim = empty.ndim
        self.width = 1 if empty.ndim == 1 else empty.shape[1]
        self.statistic_size = mechanism.aggregate(empty).shape[0]

    float_statistic = False

    @property
    def strategy(self):
        return self.mechanism.kind

    def exact_law(self, values):
        # The code as randomize reads it; local-hashing oracles give their law conditional
        # on a small set of public seeds (their exact_law's default).
        return self.mechanism.exact_law(int(np.asarray(values[:1]).astype(np.int64)[0]))

    def randomize(self, records, rng):
        reports = np.asarray(self.mechanism.randomize(records[:, 0].astype(np.int64), rng))
        return reports.reshape(reports.shape[0], -1)

    def _native(self, block):
        native = block.astype(self.report_dtype)
        return native[:, 0] if self._ndim == 1 else native

    def validity(self, block):
        native, ok = _integer_entries(block, self.report_dtype)
        native = native[:, 0] if self._ndim == 1 else native
        return ok & np.asarray(self.mechanism.report_validity(native).valid, dtype=bool)

    def aggregate(self, block):
        return self.mechanism.aggregate(self._native(block))

    def check_statistic(self, statistic):
        return self.mechanism.n_reports(check_statistic(statistic, self.mechanism))

    def counts(self, statistic):
        return [self.mechanism.estimate(statistic)]

    def per_user_variance(self):
        worst, average = self.mechanism.query_variance_summary(histogram(
            self.mechanism.n_inputs))
        return [(float(np.max(worst)), float(np.mean(average)))]

    def sizes(self):
        return [self.mechanism.n_inputs]


def _sampled_mean_from_spec(spec):
    """A SampledMeanMechanism from the spec ``_SampledMeanPart.spec`` writes (its
    ``to_dict``), its number of attributes capped before anything is built."""
    bounds = spec.get("bounds")
    if not isinstance(bounds, list) or not 1 <= len(bounds) <= MAX_COLUMNS:
        raise ValueError(f"a sampled-mean specification has 'bounds': a list of 1 to "
                         f"{MAX_COLUMNS} pairs, got {str(bounds)[:80]!r}.")
    return SampledMeanMechanism.from_dict(spec)


def _declared_cells(entry):
    """The categories a part's spec declares (0 when it declares none or is malformed: the
    part's own loader then refuses it)."""
    spec = entry.get("spec") if isinstance(entry, dict) else None
    if not isinstance(spec, dict):
        return 0
    sizes = spec.get("shape") if spec.get("mechanism") == MultiAttributeMechanism.kind \
        else [spec.get("n_inputs")] if spec.get("mechanism") in ORACLE_KINDS else []
    if not isinstance(sizes, list):
        return 0
    return sum(size for size in sizes
               if isinstance(size, int) and not isinstance(size, bool) and size > 0)


def _part_from_spec(entry, position):
    """One part from its ``{"columns": [...], "spec": {...}}`` entry (ValueError if bad)."""
    where = f"part {position}"
    if not isinstance(entry, dict) or set(entry) != {"columns", "spec"}:
        raise ValueError(f"{where} must be an object with 'columns' and 'spec', got "
                         f"{str(entry)[:80]!r}.")
    columns, spec = entry["columns"], entry["spec"]
    if not isinstance(columns, list) or not columns or len(columns) > MAX_COLUMNS \
            or not all(isinstance(column, str) for column in columns):
        raise ValueError(f"{where}: 'columns' must be a list of 1 to {MAX_COLUMNS} column "
                         f"names (strings), got {str(columns)[:80]!r}.")
    if not isinstance(spec, dict) or not isinstance(spec.get("mechanism"), str):
        raise ValueError(f"{where}: 'spec' must be a mechanism specification, got "
                         f"{str(spec)[:80]!r}.")
    kind = spec["mechanism"]
    if kind in NUMERIC_MECHANISMS:
        if len(columns) != 1:
            raise ValueError(f"{where}: the {kind!r} mechanism reports one column, got "
                             f"{columns!r}.")
        mechanism = numeric_mechanism_from_dict(spec)
        return (_SquareWavePart if kind == "square_wave" else _MeanPart)(columns, mechanism)
    if kind == SAMPLED_MEAN_KIND:
        return _SampledMeanPart(columns, _sampled_mean_from_spec(spec))
    if kind == MultiAttributeMechanism.kind:
        shape = spec.get("shape")
        if not isinstance(shape, list) or not 1 <= len(shape) <= MAX_COLUMNS:
            raise ValueError(f"{where}: a multi-attribute 'shape' is a list of 1 to "
                             f"{MAX_COLUMNS} category counts, got {str(shape)[:80]!r}.")
        for size in shape:
            check_size(size, "a number of categories", "max_cells", where)
        return _MultiAttributePart(columns, MultiAttributeMechanism.from_dict(spec))
    if kind in ORACLE_KINDS:
        return _OraclePart(columns, mechanism_from_dict(spec))
    known = NUMERIC_MECHANISMS + (SAMPLED_MEAN_KIND, MultiAttributeMechanism.kind) + ORACLE_KINDS
    raise ValueError(f"{where}: unknown mechanism {kind!r} for a column part (known: "
                     f"{', '.join(known)}).")


# The sections of the methods ColumnsMechanism refuses (lines ``<any queries>`` and
# ``<always raises: ErrorType>``; :mod:`sklearn_ldp.mechanisms._base.docstrings`).
_refusal_docstring = shared_sections({
    "any queries": """\
Parameters
----------
workload_matrix : workload or array-like
    Any queries.""",
    "always raises": lambda error: f"""\
Raises
------
{error}
    Always.""",
})

class ColumnsMechanism(Mechanism):
    """Records of several columns, each part of the record privatized by its own mechanism.

    The mechanism of :class:`~sklearn_ldp.LDPEncoder` with ``bounds`` (numeric columns) or a
    multi-attribute strategy (``"spl"``, ``"smp"``, ``"rsfd"``). A part is one numeric column
    (Duchi, Piecewise, Hybrid or Square Wave), several numeric columns sampled ``k`` of ``d``
    per user, several categorical columns (SPL, SMP or RS+FD), or one categorical column
    through a frequency oracle. Every user sends one row: the parts' reports side by side.
    The parts' budgets add up (sequential composition): ``epsilon`` is their sum, the
    record-level guarantee (for RS+FD declared with ``neighbourhood="attribute"``, its larger
    record-level epsilon).

    The statistic is the parts' statistics concatenated (float64 when a part sums real
    reports, else int64 counts): additive, so partial fits, merges and files work as for
    any mechanism. It estimates per-column quantities, not the cells of a joint domain:
    :class:`~sklearn_ldp.MeanEstimator`, :class:`~sklearn_ldp.DistributionEstimator` and
    :class:`~sklearn_ldp.AttributeHistogramEstimator` decode it.

    Parameters
    ----------
    parts : list
        The parts (built by the encoder, or by :meth:`from_dict`).

    Attributes
    ----------
    columns : tuple of str
        Every column of the record, part by part.
    epsilon : float
        The record-level budget: the sum of the parts' budgets.
    report_dtype : numpy.dtype
        float64 when a part reports real numbers, else the unsigned type of the reports.
    """

    kind = COLUMNS_KIND

    def __init__(self, parts):
        parts = list(parts)
        if not parts or len(parts) > MAX_COLUMNS:
            raise ValueError(f"a record needs 1 to {MAX_COLUMNS} parts, got {len(parts)}.")
        columns = [column for part in parts for column in part.columns]
        if len(columns) > MAX_COLUMNS:
            raise ValueError(f"a record has at most {MAX_COLUMNS} columns, got {len(columns)}.")
        duplicated = sorted({column for column in columns if columns.count(column) > 1})
        if duplicated:
            raise ValueError(f"the columns {duplicated!r} appear in more than one part.")
        self.parts = parts
        self.columns = tuple(columns)
        self.n_inputs = len(columns)
        # Sequential composition: the smallest float at least the exact sum of the parts'
        # budgets (a correctly rounded sum can fall half a unit below it).
        total = sum(Fraction(part.epsilon) for part in parts)
        self.epsilon = float(total)
        if Fraction(self.epsilon) < total:
            self.epsilon = math.nextafter(self.epsilon, math.inf)
        self.name = COLUMNS_KIND
        self.params = {}
        if any(part.float_reports for part in parts):
            self.report_dtype = np.dtype(np.float64)
            for part in parts:
                if not part.float_reports and np.dtype(part.report_dtype).itemsize >= 8:
                    raise ValueError(
                        f"the {part.strategy!r} reports of column(s) {list(part.columns)!r} "
                        "are 64-bit integers (hash seeds), which a row of real-valued reports "
                        "cannot hold exactly; report that column with another frequency "
                        "oracle ('oue', 'randomized_response', 'hadamard', 'hrr').")
        else:
            self.report_dtype = np.result_type(*[part.report_dtype for part in parts])
        widths = np.cumsum([0] + [part.width for part in parts])
        self._report_slices = [slice(a, b) for a, b in zip(widths[:-1], widths[1:],
                                                           strict=True)]
        self.width = int(widths[-1])
        sizes = np.cumsum([0] + [part.statistic_size for part in parts])
        self._statistic_slices = [slice(a, b) for a, b in zip(sizes[:-1], sizes[1:],
                                                              strict=True)]
        self.statistic_size = int(sizes[-1])
        self.float_statistic = any(part.float_statistic for part in parts)
        # A part over a run of consecutive columns takes them as a slice (a view: no copy of
        # the records on the client's path).
        self._positions = [_as_index([columns.index(column) for column in part.columns])
                           for part in parts]

    # ------------------------------------------------------------------ description
    def __repr__(self):
        parts = ", ".join(f"{part.strategy}({', '.join(part.columns)})" for part in self.parts)
        return f"ColumnsMechanism([{parts}], epsilon={self.epsilon:g})"

    def report_columns(self):
        """Names of the report columns (in files and DataFrames), part by part."""
        names = [name for part in self.parts for name in part.names()]
        if len(set(names)) != len(names):  # column names that collide once prefixed
            names = [f"report_{j}" for j in range(len(names))]
        return names

    def part_statistic(self, statistic, position):
        """The segment of ``statistic`` that belongs to part ``position`` (its own dtype)."""
        segment = np.asarray(statistic)[self._statistic_slices[position]]
        if self.float_statistic and not self.parts[position].float_statistic:
            segment = segment.astype(np.int64)
        return segment

    # ------------------------------------------------------------------ spec
    def to_dict(self):
        """The specification: the parts' columns and mechanisms, and the total epsilon.

        Returns
        -------
        dict
            ``"version"``, ``"mechanism"`` (``"columns"``), ``"epsilon"`` (the sum of the
            parts'), ``"n_inputs"`` (the number of columns) and ``"params"``: ``"parts"``,
            a list of ``{"columns": [...], "spec": {...}}``.
        """
        return {"version": COLUMNS_SPEC_VERSION, "mechanism": COLUMNS_KIND,
                "epsilon": self.epsilon, "n_inputs": self.n_inputs,
                "params": {"parts": [part.spec() for part in self.parts]}}

    @classmethod
    @from_dict_docstring
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`; every problem is a ValueError naming the field.

        Each part's mechanism is rebuilt and validated by its own loader (with the caps of
        :mod:`sklearn_ldp.deploy.limits` and the exact privacy checks of the frequency oracles),
        and the declared total epsilon must equal the sum of the parts' budgets.

        <from dict: ColumnsMechanism>
            The mechanism it describes.
        """
        check_spec_header(spec, COLUMNS_KIND, COLUMNS_SPEC_VERSION)
        params = spec.get("params")
        if not isinstance(params, dict) or set(params) != {"parts"} \
                or not isinstance(params["parts"], list):
            raise ValueError(f"the {COLUMNS_KIND!r} specification's params must be "
                             "{'parts': [...]}.")
        entries = params["parts"]
        if not 1 <= len(entries) <= MAX_COLUMNS:
            raise ValueError(f"the {COLUMNS_KIND!r} specification has 1 to {MAX_COLUMNS} "
                             f"parts, got {len(entries)}.")
        # Every part's declared cells are counted before any is built (building one probes
        # its oracle's report layout): together at most max_cells.
        declared = 0
        for position, entry in enumerate(entries):
            declared += _declared_cells(entry)
            check_size(max(declared, 1), "the categories of its parts, in all", "max_cells",
                       f"the {COLUMNS_KIND!r} specification (part {position})")
        try:
            parts = [_part_from_spec(entry, position)
                     for position, entry in enumerate(entries)]
        except (KeyError, IndexError, AttributeError, OverflowError, RecursionError) as exc:
            raise ValueError(f"malformed {COLUMNS_KIND!r} specification: "
                             f"{type(exc).__name__}: {exc}.") from None
        mechanism = cls(parts)
        claimed = spec.get("epsilon")
        if isinstance(claimed, bool) or not isinstance(claimed, int | float) \
                or claimed != mechanism.epsilon:  # exactly the composed budget
            raise ValueError(f"the {COLUMNS_KIND!r} specification claims epsilon={claimed!r}, "
                             f"but its parts spend {mechanism.epsilon!r} (their sum).")
        if spec.get("n_inputs") != mechanism.n_inputs:
            raise ValueError(f"the {COLUMNS_KIND!r} specification claims n_inputs="
                             f"{spec.get('n_inputs')!r}, but its parts hold "
                             f"{mechanism.n_inputs} columns.")
        return mechanism

    # ------------------------------------------------------------------ client side
    def empty_reports(self):
        """Zero reports with the layout of this mechanism's report rows."""
        return np.zeros((0, self.width), dtype=self.report_dtype)

    def randomize(self, records, rng):
        """Privatize one record per user: one row of report columns each.

        Parameters
        ----------
        records : ndarray of shape (n_users, n_columns)
            The values of :attr:`columns`, in that order: numbers within each numeric
            column's bounds, category codes (integers) of categorical columns.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of shape (n_users, n_report_columns)
            The parts' reports side by side (:meth:`report_columns`).
        """
        records = np.asarray(records)
        if records.ndim == 1 and records.size == 0:
            return self.empty_reports()  # no users (how collect probes the report layout)
        if records.ndim != 2 or records.shape[1] != self.n_inputs:
            raise ValueError(f"records must be an (n_users, {self.n_inputs}) array of the "
                             f"columns {list(self.columns)!r}, got shape {records.shape}.")
        out = np.empty((records.shape[0], self.width), dtype=self.report_dtype)
        for part, positions, rows in zip(self.parts, self._positions, self._report_slices,
                                         strict=True):
            out[:, rows] = part.randomize(records[:, positions], rng)
        return out

    def exact_law(self, record):
        """The exact law of one user's report row: the product of the parts' exact laws.

        The parts draw independently, so the probability of a row is the product of its
        parts' probabilities; rows list every combination of the parts' outputs (the first
        part's output varying slowest), encoded as :meth:`randomize` writes a report row.
        The ratio of two records' laws is the product of the parts' ratios, so
        ``audit_privacy(mechanism, records)`` checks the record as a whole against
        :attr:`epsilon` (the sum of the parts' budgets), exactly. Small instances only: the
        outputs multiply across parts.

        Parameters
        ----------
        record : array-like of shape (n_columns,)
            One user's values of :attr:`columns`, as a row of :meth:`randomize`'s records.

        Returns
        -------
        ExactLaw
            Report rows (dtype :attr:`report_dtype`), integer weights and their total.

        Raises
        ------
        ValueError
            If the record does not hold one value per column, or the product has more than
            ``MAX_LAW_OUTPUTS`` outputs.

        Examples
        --------
        >>> from sklearn_ldp.mechanisms import RandomizedResponse
        >>> from sklearn_ldp.mechanisms.numeric.means import DuchiMechanism
        >>> mechanism = ColumnsMechanism([
        ...     column_part(["x"], DuchiMechanism(0.5, (0.0, 10.0))),
        ...     column_part(["c"], RandomizedResponse(3, 0.5))])
        >>> law = mechanism.exact_law([10.0, 2])
        >>> law.outputs.tolist()
        [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
        >>> from sklearn_ldp.mechanisms import audit_privacy
        >>> audit_privacy(mechanism, [[0.0, 0], [10.0, 2]]).private
        True
        """
        record = np.asarray(record)
        if record.shape != (self.n_inputs,):
            raise ValueError(f"a record holds one value per column {list(self.columns)!r}, "
                             f"got shape {record.shape}.")
        laws = [part.exact_law(record[positions])
                for part, positions in zip(self.parts, self._positions, strict=True)]
        return product_law(laws, self.report_dtype, COLUMNS_KIND)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        """Which rows are valid reports of every part.

        Parameters
        ----------
        reports : array-like of shape (n_reports, n_report_columns)
            Report rows.

        Returns
        -------
        ReportCheck
            The rows (in the report dtype when all are valid), a mask, and the rule.

        Raises
        ------
        ValueError
            If the array is not 2-D with one column per report column, or not numeric.
        """
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.width \
                or reports.dtype.kind not in ("f" if self.report_dtype.kind == "f" else "iu"):
            kind = "real numbers" if self.report_dtype.kind == "f" else "integers"
            raise ValueError(f"reports of {self!r} are rows of {self.width} {kind} (columns "
                             f"{self.report_columns()}), got an array of shape "
                             f"{reports.shape} and dtype {reports.dtype}.")
        valid = np.ones(reports.shape[0], dtype=bool)
        for part, rows in zip(self.parts, self._report_slices, strict=True):
            valid &= part.validity(reports[:, rows])
        if valid.all() and reports.dtype != self.report_dtype:
            reports = reports.astype(self.report_dtype)
        rule = "rows of the parts' valid reports (" + "; ".join(
            f"{part.strategy} of {', '.join(part.columns)}" for part in self.parts) + ")"
        return ReportCheck(reports, valid, rule)

    def aggregate(self, reports):
        """The parts' statistics, concatenated (additive over disjoint sets of reports).

        Parameters
        ----------
        reports : array-like of shape (n_reports, n_report_columns)
            Report rows (checked first).

        Returns
        -------
        ndarray
            float64 when a part sums real-valued reports, else int64 counts.
        """
        reports = self.check_reports(reports)
        dtype = np.float64 if self.float_statistic else np.int64
        total = np.zeros(self.statistic_size, dtype=dtype)
        for rows in chunks(reports.shape[0]) or [slice(0, 0)]:
            block = reports[rows]
            for part, columns, segment in zip(self.parts, self._report_slices,
                                              self._statistic_slices, strict=True):
                total[segment] += part.aggregate(block[:, columns])
        return total

    def check_statistic(self, statistic):
        """``statistic`` checked as this mechanism's, else a ValueError saying why.

        Parameters
        ----------
        statistic : array-like
            A statistic of :meth:`aggregate` (or a sum of several).

        Returns
        -------
        ndarray
            The statistic (float64 or int64).
        """
        return self._checked(statistic)[0]

    def _checked(self, statistic):
        statistic = np.asarray(statistic)
        where = f"the statistic of {self!r}"
        if statistic.shape != (self.statistic_size,):
            raise ValueError(f"{where} has shape ({self.statistic_size},), got "
                             f"{statistic.shape}: it comes from another mechanism.")
        if self.float_statistic:
            if statistic.dtype.kind not in "iuf":
                raise ValueError(f"{where} holds numbers, got dtype {statistic.dtype}.")
            statistic = statistic.astype(np.float64)
            if not np.all(np.isfinite(statistic)):
                raise ValueError(f"{where} holds finite numbers; got NaN or inf.")
        else:
            if statistic.dtype.kind not in "iu":
                raise ValueError(f"{where} holds integer counts, got dtype {statistic.dtype}.")
            if statistic.size and statistic.dtype.kind == "i" and statistic.min() < 0:
                raise ValueError(f"{where} holds a negative count: no reports produce it.")
            if statistic.size and statistic.max() > MAX_REPORTS:
                raise ValueError(f"{where} holds a count above 2^62: refused.")
            statistic = statistic.astype(np.int64)
        totals = []
        for position, part in enumerate(self.parts):
            segment = statistic[self._statistic_slices[position]]
            label = f"{where}, part {position} ({part.strategy} of {', '.join(part.columns)})"
            if self.float_statistic and not part.float_statistic:
                if np.any(segment < 0) or np.any(segment != np.floor(segment)) \
                        or np.any(segment > _FLOAT_EXACT):
                    raise ValueError(f"{label} holds counts: integers in [0, 2^53].")
                segment = segment.astype(np.int64)
            try:
                totals.append(part.check_statistic(segment))
            except ValueError as exc:
                raise ValueError(f"{label}: {exc}") from None
        if len(set(totals)) > 1:
            raise ValueError(f"{where} counts {totals} reports in its parts: every user "
                             "reports every part, so the totals are inconsistent.")
        if totals[0] > (_FLOAT_EXACT if self.float_statistic else MAX_REPORTS):
            raise ValueError(f"{where} counts {totals[0]} reports, more than it can hold "
                             "exactly: refused.")
        return statistic, totals[0]

    def n_reports(self, statistic):
        """Number of reports (users) counted by ``statistic`` (checked).

        Parameters
        ----------
        statistic : array-like
            A statistic of :meth:`aggregate`.

        Returns
        -------
        int
            The number of users.
        """
        return self._checked(statistic)[1]

    @_refusal_docstring
    def estimate(self, statistic):
        """Not a data vector: raises a ValueError naming the estimators that decode it.

        Parameters
        ----------
        statistic : array-like
            A statistic of :meth:`aggregate`.

        <always raises: ValueError>
        """
        raise ValueError(_COLUMNS_DECODERS)

    @_refusal_docstring
    def supports(self, workload_matrix):
        """False: no workload over joint cells is answered (see :meth:`estimate`).

        <any queries>

        Returns
        -------
        bool
            False.
        """
        return False

    @_refusal_docstring
    def check_supports(self, workload_matrix):
        """Raise the ValueError of :meth:`estimate`.

        <any queries>

        <always raises: ValueError>
        """
        raise ValueError(_COLUMNS_DECODERS)

    @_refusal_docstring
    def per_user_variance(self, gram):
        """Not defined on joint cells (see :meth:`estimate`).

        Parameters
        ----------
        gram : Gram or array-like
            Any Gram matrix.

        <always raises: NotImplementedError>
        """
        raise NotImplementedError(_COLUMNS_DECODERS)


_COLUMNS_DECODERS = (
    "these reports carry per-column statistics of a record of numeric and/or categorical "
    "columns (LDPEncoder with bounds= or strategy='spl'/'smp'/'rsfd'), not a data vector over "
    "joint cells: decode them with MeanEstimator (means of numeric columns), "
    "DistributionEstimator (square_wave columns) or AttributeHistogramEstimator (histograms "
    "of categorical columns).")


def column_part(columns, mechanism):
    """The part of a record that ``mechanism`` privatizes over ``columns``.

    Parameters
    ----------
    columns : sequence of str
        The record's columns the mechanism reports (one, or one per attribute).
    mechanism : object
        A numeric mechanism (Duchi, Piecewise, Hybrid, Square Wave, SampledMean), a
        MultiAttributeMechanism or a frequency oracle.

    Returns
    -------
    object
        The part, for :class:`ColumnsMechanism`.
    """
    if isinstance(mechanism, SquareWaveMechanism):
        return _SquareWavePart(columns, mechanism)
    if isinstance(mechanism, MeanMechanism):
        return _MeanPart(columns, mechanism)
    if isinstance(mechanism, SampledMeanMechanism):
        return _SampledMeanPart(columns, mechanism)
    if isinstance(mechanism, MultiAttributeMechanism):
        return _MultiAttributePart(columns, mechanism)
    if isinstance(mechanism, Mechanism):
        return _OraclePart(columns, mechanism)
    raise ValueError(f"no column part for {type(mechanism).__name__}.")
