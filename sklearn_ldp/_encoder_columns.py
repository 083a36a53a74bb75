"""LDPEncoder's records of several columns: numeric bounds, multi-attribute protocols, parts.

The part of :class:`~sklearn_ldp.encoder.LDPEncoder` that fits and encodes a record of
several columns reported together (``bounds`` for numeric columns, the multi-attribute
protocols ``"spl"`` / ``"smp"`` / ``"rsfd"``, or one strategy per column with a share of the
budget; docs/numeric.md). A mixin of the encoder: it uses the encoder's parameters and its
``_check_handling``, ``_replacements`` and ``_resolve_domain``.
"""

import math
import numbers
import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ._glue import (
    READ_FROM_DATA,
    check_declared_columns,
    validate_records,
)
from ._validation import did_you_mean
from .column_tables import column_answer_errors, column_budget
from .domain import Domain
from .mechanisms.multi_attribute.columns import ColumnsMechanism, column_part
from .mechanisms.multi_attribute.mechanisms import (
    NEIGHBOURHOODS,
    PROTOCOLS,
    MultiAttributeMechanism,
)
from .mechanisms.multi_attribute.mechanisms import ORACLES as PROTOCOL_ORACLES
from .mechanisms.multi_range.grids import METHODS as MULTI_RANGE_METHODS
from .mechanisms.numeric.base import NUMERIC_MECHANISMS, check_bounds
from .mechanisms.numeric.means import MEAN_MECHANISMS, SampledMeanMechanism
from .mechanisms.numeric.registry import numeric_mechanism
from .selection import (
    ORACLES,
    SELECTION_COLUMNS,
    SELECTION_DTYPES,
    baseline_mechanism,
    report_bytes,
)
from .selection.baselines import bitmap_report_bytes
from .selection.multi_attribute import is_one_way_marginals, select_attribute_protocol

# Records of several columns (docs/numeric.md): numeric strategies (``bounds``), the
# multi-attribute protocols over categorical columns, and the default of each kind of column
# in a record reported column by column.
NUMERIC_STRATEGIES = NUMERIC_MECHANISMS
MEAN_STRATEGIES = tuple(MEAN_MECHANISMS)
MULTI_ATTRIBUTE_STRATEGIES = PROTOCOLS
DEFAULT_NUMERIC_STRATEGY = "hybrid"
# Frequency oracles a categorical column of a mixed record can take (its reports share a
# row with real-valued ones: local hashing's 64-bit seeds are refused there).
COLUMN_ORACLES = ORACLES


def numeric_values(values, column):
    """A numeric column's values as float64, NaN where missing; a ValueError naming the
    column and the first value that is not a number (booleans and text are refused)."""
    if isinstance(values, pd.Series) and pd.api.types.is_bool_dtype(values.dtype) or (
            not isinstance(values, pd.Series) and np.asarray(values).dtype.kind == "b"):
        raise ValueError(f"Column {column!r} holds booleans, not numbers: declare it as a "
                         "categorical column (categories) instead of giving it bounds.")
    if isinstance(values, pd.Series) and pd.api.types.is_numeric_dtype(values.dtype):
        return values.to_numpy(dtype=np.float64, na_value=np.nan)
    array = values.to_numpy() if isinstance(values, pd.Series) else np.asarray(values)
    if array.dtype.kind in "iuf":
        return array.astype(np.float64)
    numeric = pd.to_numeric(pd.Series(array, dtype=object), errors="coerce").to_numpy(
        dtype=np.float64, na_value=np.nan)
    bad = np.isnan(numeric) & ~np.asarray(pd.isna(array), dtype=bool)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(f"Column {column!r} holds {array[row]!r} at row {row}, not a number "
                         "(it has bounds, so it is numeric).")
    return numeric
def as_frame(X):
    """``X`` as a DataFrame with the column names Domain.from_data gives it."""
    if isinstance(X, pd.DataFrame):
        return X
    if isinstance(X, pd.Series):
        return X.to_frame(X.name if isinstance(X.name, str) else "x0")
    array = np.asarray(X) if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
    if array.ndim == 1:
        array = array[:, np.newaxis]
    return pd.DataFrame(array, columns=[f"x{j}" for j in range(array.shape[1])])


class ColumnsEncoderMixin:
    """Fitting and encoding records of several columns (see the module docstring)."""

    # ------------------------------------------------------------------ several columns
    def _columns_mode(self):
        """Whether the records are reported column by column (numeric columns, a mixed
        record or a multi-attribute protocol) rather than as one cell of a joint domain."""
        strategy = self.strategy
        return (self.bounds is not None or isinstance(strategy, Mapping)
                or (isinstance(strategy, str)
                    and strategy in NUMERIC_STRATEGIES + MULTI_ATTRIBUTE_STRATEGIES))
    def _fit_columns(self, X, epsilon, selection=None):
        """``fit`` for records of several columns: one :class:`ColumnsMechanism`.

        ``selection``: the report of ``build_mechanism("auto", multi_attribute=True)`` when
        it chose SPL, SMP or RS+FD (``report["protocol"]``) for the one-way marginals of the
        categorical columns; that protocol is built and its comparison kept in
        ``selection_``.
        """
        self._check_handling()
        if not isinstance(self.clip, bool | np.bool_):
            raise ValueError(f"clip must be True or False, got {self.clip!r}.")
        if not isinstance(self.neighbourhood, str) or self.neighbourhood not in NEIGHBOURHOODS:
            raise ValueError(f"neighbourhood must be one of {NEIGHBOURHOODS}, got "
                             f"{self.neighbourhood!r}.")
        strategy = self.strategy
        if not isinstance(strategy, str | Mapping):
            raise ValueError(f"strategy must be a strategy name or, for a record of numeric "
                             f"and categorical columns, a dict column -> strategy; got "
                             f"{strategy!r}.")
        if isinstance(strategy, str) and strategy in NUMERIC_STRATEGIES and self.bounds is None:
            raise ValueError(f"strategy={strategy!r} privatizes numeric columns: declare their "
                             "public bounds, e.g. bounds={'age': (0, 100)}.")
        if X is not None:
            validate_records(self, X, reset=True, allow_nan=self.handle_missing == "category")
        frame = None if X is None else as_frame(X)
        bounds = self._resolve_bounds(frame)
        domain = self._categorical_domain(X, frame, bounds)
        categorical = [] if domain is None else list(domain.columns)
        check_declared_columns(X, {"bounds": list(bounds), "categories": categorical})
        if not bounds and not categorical:
            raise ValueError("no column to report: declare bounds (numeric columns) or "
                             "categories.")
        order = list(frame.columns) if frame is not None else categorical + list(bounds)
        order = [column for column in order if column in bounds or column in categorical]
        self._numeric_missing = self._numeric_replacements(bounds)
        self._column_domains = {}
        self._column_selection = None  # set by _column_parts when "auto" compares parts
        parts, name = self._column_parts(epsilon, order, bounds, domain, selection)
        self.mechanism_ = ColumnsMechanism(parts)
        self.domain_ = domain
        self.workload_ = None
        self.bounds_ = bounds
        self.strategy_ = name
        self.epsilon_ = float(self.mechanism_.epsilon)
        self.column_budget_ = column_budget(self.mechanism_)
        rows = selection["selection"] if selection is not None else self._column_selection
        del self._column_selection
        # The comparison "auto" made (per-user total variance of the categorical columns'
        # histograms), or none.
        self.candidates_ = pd.Series(
            {key: row["worst_case"] for key, row in (rows or {}).items()
             if row["status"] != "skipped"}, name="worst_case_per_user_variance", dtype=float)
        self.selection_ = pd.DataFrame.from_dict(
            rows or {}, orient="index", columns=SELECTION_COLUMNS).astype(SELECTION_DTYPES)
        self.selection_.index.name = "strategy"
        errors = column_answer_errors(self.mechanism_,
                                      None if domain is None else domain.categories)
        self._expected_error = errors.set_index("answer")[["worst_case", "average_case"]]
        self.expected_total_error_ = None
        self.n_iter_, self.history_ = 0, []
        self.n_clipped_ = dict.fromkeys(bounds, 0)
        self._columns_without_data = X is None
        if X is None:
            self.n_features_in_ = len(self.mechanism_.columns)
            self.feature_names_in_ = np.asarray(self.mechanism_.columns, dtype=object)
        self._set_generator(np.random.default_rng(self._random_state()))
        return self
    def _resolve_bounds(self, frame):
        """Numeric column -> ``(low, high)``: declared, or read from the data (warned)."""
        bounds = self.bounds
        if bounds is None:
            return {}
        declared = self.categories if isinstance(self.categories, Mapping) else {}
        if isinstance(bounds, str):
            if bounds != "auto":
                raise ValueError(f"bounds must be a dict column -> (low, high), 'auto' or None, "
                                 f"got {bounds!r}.")
            if frame is None:
                raise ValueError("bounds='auto' reads the bounds from the data passed to fit; "
                                 "pass X, or declare bounds={'column': (low, high)}.")
            bounds = {column: "auto" for column in frame.columns if column not in declared}
            if not bounds:
                raise ValueError("bounds='auto': every column of X is declared categorical.")
        elif not isinstance(bounds, Mapping) or not bounds:
            raise ValueError(f"bounds must be a non-empty dict column -> (low, high), 'auto' "
                             f"or None, got {bounds!r}.")
        result, inferred = {}, []
        for column, pair in bounds.items():
            if not isinstance(column, str):
                raise ValueError(f"bounds: column names must be strings, got {column!r}.")
            if column in declared:
                raise ValueError(f"column {column!r} is in both bounds (numeric) and "
                                 "categories (categorical): declare it once.")
            if isinstance(pair, str) and pair == "auto":
                if frame is None or column not in frame.columns:
                    raise ValueError(f"bounds[{column!r}]='auto' reads the bounds from the data "
                                     "passed to fit, which has no such column.")
                values = numeric_values(frame[column], column)
                values = values[~np.isnan(values)]
                values = values[np.isfinite(values)]
                if values.size == 0 or values.min() == values.max():
                    raise ValueError(f"bounds[{column!r}]='auto' needs at least two distinct "
                                     f"finite values in the data (n_samples = {values.size}); "
                                     "declare the bounds.")
                result[column] = (float(values.min()), float(values.max()))
                inferred.append(column)
            else:
                result[column] = check_bounds(pair, f"bounds[{column!r}]")
        if inferred:
            warnings.warn(
                f"the bounds of the numeric column(s) {inferred!r} were read from the data "
                "(its minimum and maximum): this reveals the private data's extreme values "
                "exactly, outside any privacy guarantee. Production code declares public "
                "bounds, e.g. bounds={'age': (0, 120)}.", UserWarning, stacklevel=3)
        return result
    def _categorical_domain(self, X, frame, bounds):
        """The Domain of the categorical columns (None if there are none)."""
        categories = self.categories
        reading = categories is None or (isinstance(categories, str)
                                         and categories in READ_FROM_DATA)
        if not bounds:
            return self._resolve_domain(X)  # the multi-attribute protocols: as ever
        if categories is None:
            return None  # with bounds, columns are categorical only when declared or "auto"
        if reading:
            if frame is None:
                raise ValueError("categories='auto' reads the categories from the data passed "
                                 "to fit; pass X or declare them.")
            rest = [column for column in frame.columns if column not in bounds]
            return self._resolve_domain(frame[rest], numeric=tuple(bounds)) if rest else None
        return self._resolve_domain(None, numeric=tuple(bounds))
    def _numeric_replacements(self, bounds):
        """Numeric column -> the declared number its missing values become."""
        if self.handle_missing != "category":
            return {}
        value = self.missing_category
        items = (value.items() if isinstance(value, Mapping)
                 else [(column, value) for column in bounds])
        result = {}
        for column, replacement in items:
            if column not in bounds:
                continue
            low, high = bounds[column]
            if isinstance(replacement, bool) or not isinstance(replacement, numbers.Real) \
                    or not low <= replacement <= high:
                raise ValueError(
                    f"missing_category for the numeric column {column!r} must be a number "
                    f"within its bounds [{low}, {high}] (the public value missing numbers "
                    f"become), got {replacement!r}; pass a dict column -> value.")
            result[column] = float(replacement)
        return result
    def _column_parts(self, epsilon, order, bounds, domain, selection=None):
        """``(parts, strategy_)`` of the record's mechanism (see the ``bounds`` docs).

        ``selection``: see :meth:`_fit_columns` (the protocol "auto" chose). With
        ``strategy="auto"``, equal budget shares, two or more categorical columns and the
        declared workload ``workloads.marginals(categories, k=1)`` (their histograms), the
        categorical columns are reported either each through its own oracle or together by
        the protocol with the least worst-case error of their histograms
        (``select_attribute_protocol``); the comparison goes to ``_column_selection``.
        """
        strategy = self.strategy
        numeric = [column for column in order if column in bounds]
        categorical = [column for column in order if column not in bounds]
        protocol = isinstance(strategy, str) and strategy in MULTI_ATTRIBUTE_STRATEGIES
        if self.neighbourhood != "record" and not (protocol and strategy == "rsfd"):
            raise ValueError("neighbourhood='attribute' applies to strategy='rsfd' only.")
        if self.oracle != "auto" and not protocol:
            raise ValueError(f"oracle={self.oracle!r} applies to 'hierarchical' and to 'spl', "
                             "'smp', 'rsfd'; a record reported column by column takes each "
                             "column's frequency oracle from strategy={'column': 'oue', ...}.")
        if selection is not None and not numeric:
            # "auto" scored SPL / SMP / RS+FD (record-level epsilon) against the joint-domain
            # candidates and chose this one.
            strategy, oracle = selection["protocol"]
            mechanism = MultiAttributeMechanism(domain.shape, epsilon, protocol=strategy,
                                                oracle=oracle)
            return [column_part(list(domain.columns), mechanism)], strategy
        if protocol:
            if numeric:
                raise ValueError(f"strategy={strategy!r} reports categorical columns; with "
                                 "numeric columns (bounds) every column is reported by its own "
                                 "mechanism: pass strategy={'column': name, ...} or a numeric "
                                 "strategy.")
            if self.budget_weights is not None:
                raise ValueError(f"budget_weights splits epsilon between columns reported "
                                 f"separately; strategy={strategy!r} shares it by its protocol.")
            oracle = "grr" if self.oracle == "auto" else self.oracle
            if oracle not in PROTOCOL_ORACLES[strategy]:
                raise ValueError(f"oracle must be 'auto' or one of {PROTOCOL_ORACLES[strategy]} "
                                 f"for strategy={strategy!r}, got {self.oracle!r}.")
            columns = list(domain.columns)
            for column, size in zip(columns, domain.shape, strict=True):
                if size < 2:
                    raise ValueError(f"column {column!r} has a single category: "
                                     f"strategy={strategy!r} needs at least 2 categories per "
                                     "column (drop constant columns).")
            mechanism = MultiAttributeMechanism(domain.shape, epsilon, protocol=strategy,
                                                oracle=oracle, neighbourhood=self.neighbourhood)
            return [column_part(columns, mechanism)], strategy
        chosen = self._column_strategies(strategy, numeric, categorical, domain, epsilon,
                                         order)
        names = {chosen[column] for column in order}
        if not categorical and len(numeric) > 1 and self.budget_weights is None \
                and len(names) == 1 and names <= set(MEAN_STRATEGIES):
            # Several numbers, one mean strategy: each user reports k of the d columns.
            base = names.pop()
            mechanism = SampledMeanMechanism(epsilon, [bounds[c] for c in numeric], base=base)
            return [column_part(numeric, mechanism)], base
        weights = self._weights(order)
        group = None
        # Kept here: the module's import block is edited by others at the same time.

        if isinstance(strategy, str) and strategy == "auto" and len(categorical) >= 2 \
                and self.budget_weights is None and self.workload is not None \
                and not isinstance(self.workload, str) \
                and is_one_way_marginals(self.workload, domain.shape) \
                and min(domain.shape) >= 2:
            # The declared workload is every categorical column's histogram: report those
            # columns together by SPL, SMP or RS+FD at their summed share when that has a
            # smaller worst-case error than one oracle per column (a dict of strategies or
            # budget_weights: the user's split).
            shares = [epsilon * weights[column] for column in categorical]
            per_column_bytes = sum(report_bytes(baseline_mechanism(
                chosen[column], (len(domain.categories[column]),), share))
                for column, share in zip(categorical, shares, strict=True))
            best, rows, mechanisms = select_attribute_protocol(
                tuple(len(domain.categories[column]) for column in categorical),
                math.fsum(shares), per_column=[chosen[column] for column in categorical],
                per_column_epsilons=shares, max_report_bytes=self.max_report_bytes,
                per_column_bytes=per_column_bytes)
            self._column_selection = rows
            group = mechanisms.get(best)
        parts = []
        for column in order:
            share = epsilon * weights[column]
            name = chosen[column]
            if group is not None and column in categorical:
                if column == categorical[0]:  # the protocol's part, where its first column is
                    parts.append(column_part(categorical, group))
                continue
            if column in bounds:
                params = {"n_bins": self.n_bins} if name == "square_wave" else {}
                mechanism = numeric_mechanism(name, share, bounds[column], **params)
            else:
                mechanism = baseline_mechanism(name, (len(domain.categories[column]),), share)
            parts.append(column_part([column], mechanism))
        if group is not None:
            return parts, group.protocol if not numeric else "mixed"
        return parts, (names.pop() if len(names) == 1 else "mixed")
    def _column_strategies(self, strategy, numeric, categorical, domain, epsilon, order):
        """Column -> strategy name for a record reported column by column."""
        if isinstance(strategy, Mapping):
            unknown = [column for column in strategy if column not in numeric + categorical]
            if unknown:
                raise ValueError(f"strategy names columns {unknown!r} that are not in the "
                                 f"record {numeric + categorical!r}.")
            given = dict(strategy)
        elif strategy == "auto":
            given = {}
        elif strategy in NUMERIC_STRATEGIES:
            given = dict.fromkeys(numeric, strategy)
        elif strategy in COLUMN_ORACLES:
            if not categorical:
                raise ValueError(f"strategy={strategy!r} is a frequency oracle for categorical "
                                 f"columns; numeric columns take {NUMERIC_STRATEGIES}.")
            given = dict.fromkeys(categorical, strategy)
        else:
            raise ValueError(
                f"strategy={strategy!r} cannot report a record with numeric columns: numeric "
                f"columns take {NUMERIC_STRATEGIES}, categorical columns next to them a "
                f"frequency oracle {COLUMN_ORACLES} (or 'auto'), e.g. strategy={{'age': "
                "'hybrid', 'smoker': 'oue'}; range queries over several numeric columns take "
                f"{MULTI_RANGE_METHODS}."
                + did_you_mean(strategy, (*NUMERIC_STRATEGIES, *COLUMN_ORACLES,
                                          *MULTI_RANGE_METHODS)))
        chosen = {}
        for column in numeric:
            name = given.get(column, "auto")
            name = DEFAULT_NUMERIC_STRATEGY if name == "auto" else name
            if name not in NUMERIC_STRATEGIES:
                raise ValueError(f"strategy for the numeric column {column!r} must be one of "
                                 f"{NUMERIC_STRATEGIES} or 'auto', got {name!r}."
                                 f"{did_you_mean(name, NUMERIC_STRATEGIES)}")
            chosen[column] = name
        for column in categorical:
            name = given.get(column, "auto")
            if name == "auto":
                size = len(domain.categories[column])
                # Wang et al. (2017): randomized response has the least variance while
                # k < 3 e^eps + 2, optimized unary encoding beyond (at the column's share).
                share = epsilon * self._weights(order)[column]
                name = "randomized_response" if size < 3 * math.exp(share) + 2 else "oue"
                if name == "oue" and self.max_report_bytes is not None \
                        and bitmap_report_bytes("oue", size) > self.max_report_bytes:
                    # Over the size limit: HRR's one integer fits any record row (OLH's
                    # 64-bit seeds do not fit a row with numeric columns).
                    name = "hrr"
            if name not in COLUMN_ORACLES:
                raise ValueError(f"strategy for the categorical column {column!r} must be a "
                                 f"frequency oracle {COLUMN_ORACLES} or 'auto', got {name!r}.")
            chosen[column] = name
        return chosen
    def _weights(self, columns):
        """Column -> its share of epsilon (``budget_weights`` normalized, or equal)."""
        weights = self.budget_weights
        if weights is None:
            return dict.fromkeys(columns, 1.0 / len(columns))
        if not isinstance(weights, Mapping):
            raise ValueError(f"budget_weights must be a dict column -> positive weight or None, "
                             f"got {weights!r}.")
        missing = [column for column in columns if column not in weights]
        extra = [column for column in weights if column not in columns]
        if missing or extra:
            raise ValueError(f"budget_weights must name every column of the record {columns!r} "
                             f"once; missing {missing!r}, unknown {extra!r}.")
        for column, weight in weights.items():
            if isinstance(weight, bool) or not isinstance(weight, numbers.Real) \
                    or not math.isfinite(weight) or weight <= 0:
                raise ValueError(f"budget_weights[{column!r}] must be a positive finite number, "
                                 f"got {weight!r}.")
        total = math.fsum(float(weights[column]) for column in columns)
        return {column: float(weights[column]) / total for column in columns}
    def _encode_columns(self, X):
        """The records of ``X`` as the rows ColumnsMechanism.randomize takes, and the
        number of values clipped per numeric column."""
        columns = self.mechanism_.columns
        if len(columns) > 1 and not isinstance(X, pd.DataFrame | pd.Series) \
                and np.ndim(X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)) == 1:
            raise ValueError(f"1-D data holds a single column, but the record has the columns "
                             f"{list(columns)!r}. Reshape your data: pass a DataFrame or a 2-D "
                             "array with one column per record column.")
        frame = as_frame(X)
        n_rows = frame.shape[0]
        if n_rows == 0:
            raise ValueError("X has no rows; there is nothing to encode.")
        missing = [column for column in columns if column not in frame.columns]
        if missing:
            raise ValueError(f"The data is missing the column(s) {missing!r} of the record "
                             f"{list(columns)!r}.")
        # Category codes stay integers when every column is categorical; column-major, so
        # that each column is written (and read by its part) contiguously.
        records = np.empty((n_rows, len(columns)), order="F",
                           dtype=np.float64 if self.bounds_ else np.int64)
        clipped = {}
        categorical = [] if self.domain_ is None else list(self.domain_.columns)
        unknown = self._replacements("unknown_category", categorical, tuple(self.bounds_))
        missing_categories = self._replacements("missing_category", categorical,
                                                tuple(self.bounds_))
        for j, column in enumerate(columns):
            if column in self.bounds_:
                records[:, j], clipped[column] = self._numeric_column(frame[column], column)
                continue
            single = self._column_domain(column)
            data = single.substitute(
                frame[[column]], unknown={k: v for k, v in unknown.items() if k == column},
                missing={k: v for k, v in missing_categories.items() if k == column})
            records[:, j] = single.encode(data)
        return records, pd.Series(clipped, index=list(self.bounds_), dtype=np.int64,
                                  name="n_clipped")
    def _column_domain(self, column):
        """The one-column Domain of a categorical column (kept: it caches its lookups)."""
        cache = self.__dict__.setdefault("_column_domains", {})
        if column not in cache:
            cache[column] = Domain({column: self.domain_.categories[column]})
        return cache[column]
    def _numeric_column(self, values, column):
        """One numeric column as floats within its bounds (missing values replaced, values
        outside the bounds refused or clipped), and how many were clipped."""
        x = numeric_values(values, column)
        absent = np.isnan(x)
        if absent.any():
            replacement = getattr(self, "_numeric_missing", {}).get(column)
            if replacement is None:
                raise ValueError(
                    f"Column {column!r} has {int(absent.sum())} missing values (NaN/None). "
                    "Every record needs a value: fill them, or pass handle_missing='category' "
                    f"with missing_category={{{column!r}: <a number within its bounds>}} (a "
                    "public value they become).")
            x = np.where(absent, replacement, x)
        if np.isinf(x).any():
            row = int(np.flatnonzero(np.isinf(x))[0])
            raise ValueError(f"Column {column!r} holds {float(x[row])} at row {row}: infinite "
                             "values are not numbers within bounds (refused even with "
                             "clip=True).")
        low, high = self.bounds_[column]
        outside = (x < low) | (x > high)
        n_outside = int(np.count_nonzero(outside))
        if n_outside and not self.clip:
            row = int(np.flatnonzero(outside)[0])
            raise ValueError(
                f"Column {column!r} has {n_outside} values outside its declared bounds "
                f"[{low}, {high}] (first: {float(x[row])!r} at row {row}). Declare bounds that "
                "hold every value, or pass clip=True to clip them to the bounds (counted in "
                "n_clipped_).")
        if n_outside:
            x = np.clip(x, low, high)
        return x, n_outside
