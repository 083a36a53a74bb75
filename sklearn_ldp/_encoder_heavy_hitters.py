"""LDPEncoder's heavy hitters: a column declared as strings or as a bit length.

The part of :class:`~sklearn_ldp.encoder.LDPEncoder` that fits and encodes a column too large
to list (``categories={"url": "strings"}`` or ``{"user_id": 32}``) through the prefix-tree
heavy-hitter protocol or a sketch frequency oracle. A mixin of the encoder: it uses the
encoder's parameters and its ``_check_handling``.
"""

import hashlib
import numbers
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ._validation import (
    check_positive_int,
    short_repr,
)
from .mechanisms.heavy_hitters.column import (
    HEAVY_HITTER_STRATEGIES,
    MAX_INTEGER_BITS,
    MAX_STRING_BYTES,
    HeavyHitterMechanism,
)
from .mechanisms.heavy_hitters.prefix import (
    LENGTH_ROUND_FIRST,
    PrefixHeavyHitters,
    length_oracle,
    string_bytes_from_lengths,
)
from .mechanisms.heavy_hitters.sketches import SketchFrequencyOracle
from .mechanisms.heavy_hitters.values import encode_values

# Strings: the share of the users asked their length when fit sees the data, and the fewest
# users for which the length round runs (below, the schedule covers max_string_bytes).
LENGTH_SHARE = 0.1
LENGTH_ROUND_MIN_USERS = 2000
# max_string_bytes=None: PEM / TreeHist with a length round accept strings up to the largest
# length the encoding holds (the rounds cover the lengths found, so short strings pay
# nothing); without one (no data, fewer than LENGTH_ROUND_MIN_USERS users, or the sketches,
# which hash every value at the declared width) the values are declared this long at most.
FIXED_STRING_BYTES = 32


def is_value_declaration(value):
    """Whether a ``categories`` entry declares values instead of listing them: ``"strings"``
    or a bit length (an int, not a bool)."""
    return isinstance(value, str) or (isinstance(value, numbers.Integral)
                                      and not isinstance(value, bool | np.bool_))


class HeavyHitterEncoderMixin:
    """Fitting and encoding a heavy-hitter column (see the module docstring)."""

    # ------------------------------------------------------------------ heavy hitters
    def _heavy_hitter_mode(self):
        """Whether the encoder reports one column of a domain too large to list (a strategy
        of HEAVY_HITTER_STRATEGIES, or a column declared as "strings" or a bit length)."""
        if isinstance(self.strategy, str) and self.strategy in HEAVY_HITTER_STRATEGIES:
            return True
        return isinstance(self.categories, Mapping) and any(
            is_value_declaration(value) for value in self.categories.values())
    def _heavy_hitter_column(self, length_round=False):
        """``(column, value_type, bit_length)`` of the declared column, or a ValueError;
        ``length_round``: a length round may fit the strings' rounds (the cap of
        ``max_string_bytes=None`` is then ``MAX_STRING_BYTES``)."""
        categories = self.categories
        if not isinstance(categories, Mapping):
            raise ValueError(
                f"strategy={self.strategy!r} finds heavy hitters of one column whose values "
                "are declared, not listed: pass categories={'url': 'strings'} (UTF-8 strings "
                "of at most max_string_bytes bytes) or categories={'user_id': 32} (integers "
                f"of 32 bits); got categories={categories!r}.")
        for column, value in categories.items():
            if not is_value_declaration(value):
                raise ValueError(
                    f"categories[{column!r}] = {str(value)[:60]!r}: heavy hitters report one "
                    "column declared as 'strings' or a bit length (e.g. 32); a list of "
                    "categories goes with a frequency oracle (strategy='oue', ...).")
        if len(categories) != 1:
            raise ValueError(f"heavy hitters report one column of categories, got the columns "
                             f"{list(categories)!r}: use one LDPEncoder per column (each "
                             "with its share of the budget).")
        (column, value), = categories.items()
        if not isinstance(column, str):
            raise ValueError(f"the column name must be a str, got {column!r}.")
        if isinstance(value, str):
            if value != "strings":
                raise ValueError(f"categories[{column!r}] = {value!r}: a column's categories "
                                 "are a list (e.g. ['no', 'yes']); a domain too large to list "
                                 "is declared as 'strings' (UTF-8 strings) or a bit length (an "
                                 "int), for the heavy-hitter strategies.")
            size = self.max_string_bytes
            if size is None:
                size = MAX_STRING_BYTES if length_round else FIXED_STRING_BYTES
            if isinstance(size, bool) or not isinstance(size, numbers.Integral) \
                    or not 1 <= size <= MAX_STRING_BYTES:
                raise ValueError(f"max_string_bytes must be an integer in [1, "
                                 f"{MAX_STRING_BYTES}] or None (column {column!r}), got "
                                 f"{size!r}.")
            return column, "strings", 8 * int(size)
        if not 1 <= value <= MAX_INTEGER_BITS:
            raise ValueError(f"categories[{column!r}] = {value!r}: the bit length of an "
                             f"integer column must be in [1, {MAX_INTEGER_BITS}].")
        return column, "integers", int(value)
    def _fit_heavy_hitters(self, X, epsilon):
        """``fit`` for heavy hitters: one :class:`HeavyHitterMechanism`."""
        # The declaration first (its cap depends on whether a length round may run).
        column, value_type, bit_length = self._heavy_hitter_column(
            X is not None and self.strategy in ("pem", "treehist", "auto"))
        strategy = self.strategy
        if not isinstance(strategy, str) or strategy not in HEAVY_HITTER_STRATEGIES + ("auto",):
            raise ValueError(f"a column declared as 'strings' or a bit length is reported by "
                             f"one of the heavy-hitter strategies {HEAVY_HITTER_STRATEGIES} (or "
                             f"'auto': 'pem'), got strategy={strategy!r}.")
        strategy = "pem" if strategy == "auto" else strategy
        if self.handle_unknown != "error" or self.unknown_category is not None:
            raise ValueError(f"handle_unknown={self.handle_unknown!r}: the column {column!r} "
                             "has no list of categories, so no value is unknown; leave "
                             "handle_unknown='error' and unknown_category=None.")
        self._check_handling()
        if self.bounds is not None:
            raise ValueError("bounds declares numeric columns, which heavy hitters do not "
                             "report; leave bounds=None.")
        n_users = self.n_users
        if n_users is not None:
            n_users = check_positive_int(n_users, "n_users")
        if self.extension_bits is not None:
            # 2^16 candidates per round at most (MAX_CANDIDATES): more bits cannot be valid,
            # and 2^extension_bits is built before that check.
            check_positive_int(self.extension_bits, "extension_bits", maximum=16)
        rng = np.random.default_rng(self._random_state())
        cap = bit_length // 8  # strings: the declared maximum
        self._length_round = None
        self.string_bytes_ = cap if value_type == "strings" else None
        if strategy in ("pem", "treehist"):
            for name in ("sketch_width", "n_hashes"):
                if getattr(self, name) is not None:
                    raise ValueError(f"{name}={getattr(self, name)!r} is a parameter of the "
                                     f"sketches ('cms', 'hcms'), not of {strategy!r}.")
            if strategy == "treehist" and self.extension_bits is not None:
                raise ValueError(f"extension_bits={self.extension_bits!r}: TreeHist adds one "
                                 "bit per round; leave extension_bits=None.")
            if value_type == "strings" and X is not None:
                bit_length = self._fit_string_length(X, column, epsilon, rng, cap)
                cap = self._string_cap
            oracle = PrefixHeavyHitters(bit_length, epsilon, strategy, self.n_candidates,
                                        self.extension_bits, n_users)
        else:
            if self.extension_bits is not None:
                raise ValueError(f"extension_bits={self.extension_bits!r} is a parameter of "
                                 f"'pem', not of {strategy!r}.")
            # A fresh public hash seed per collection (the estimates are unbiased over it).
            try:
                oracle = SketchFrequencyOracle(epsilon, self.n_hashes, self.sketch_width,
                                               strategy == "hcms", int(rng.integers(2**63)),
                                               n_users)
            except ValueError as exc:  # the sketch names them width and n_hashes
                raise ValueError(f"sketch_width={short_repr(self.sketch_width)}, n_hashes="
                                 f"{short_repr(self.n_hashes)}: {exc}") from None
        mechanism = HeavyHitterMechanism(oracle, column, value_type, bit_length,
                                         None if self._length_round is None else cap)
        if self._length_round is not None:  # the length reports, in the prefix rounds' rows
            encoded, asked, lengths = self._length_round
            lengths[:, 0] += np.uint64(LENGTH_ROUND_FIRST)
            words = mechanism.encode_utf8(encoded)  # what transform encodes
            self._length_round = (hashlib.sha256(words.tobytes()).hexdigest(), asked, lengths)
        self._check_missing_category(column, lambda value: mechanism.encode(
            [value], f"{column} (missing_category)"))
        if X is not None:
            self._heavy_hitter_values(X, column, reset=True)
        self._one_column_attributes(X, column, mechanism, strategy, mechanism.epsilon,
                                    mechanism.per_user_variance(),
                                    f"count of one {column} value", rng)
        return self

    def _check_missing_category(self, column, check):
        """``_missing_value``: with ``handle_missing="category"`` the declared stand-in for a
        missing value of ``column`` (``check(value)`` refuses one the mechanism cannot
        report), else None."""
        self._missing_value = None
        if self.handle_missing == "category":
            value = self.missing_category
            if isinstance(value, dict):
                extra = [c for c in value if c != column]
                if extra or column not in value:
                    raise ValueError(f"missing_category must name the column {column!r} "
                                     f"(only), got {value!r}.")
                value = value[column]
            check(value)  # valid, or refused
            self._missing_value = value

    def _one_column_attributes(self, X, column, mechanism, strategy, epsilon, errors, answer,
                               rng):
        """The fitted attributes every one-column kind shares (heavy hitters, RAPPOR, sets):
        no domain or workload, nothing selected, the per-user variance ``errors = (worst,
        average)`` of one ``answer``."""
        if X is None:
            self.n_features_in_ = 1
            self.feature_names_in_ = np.asarray([column], dtype=object)
        self.mechanism_ = mechanism
        self.domain_ = None
        self.workload_ = None
        self.strategy_ = strategy
        self.bounds_, self.column_budget_ = {}, None
        self.epsilon_ = float(epsilon)
        self.candidates_ = pd.Series(dtype=float, name="worst_case_per_user_variance")
        self.selection_ = pd.DataFrame(
            columns=["worst_case", "average_case", "seconds", "status", "reason"])
        self.selection_.index.name = "strategy"
        worst, average = errors
        # Per user (times N: a count's variance; over N: a frequency's).
        self._expected_error = pd.DataFrame(
            {"worst_case": [worst], "average_case": [average]},
            index=pd.Index([answer], name="answer"))
        self.expected_total_error_ = None
        self.n_iter_, self.history_ = 0, []
        self._set_generator(rng)

    def _fit_string_length(self, X, column, epsilon, rng, cap):
        """The length round: a share of the users of ``X`` report their value's length in
        bytes (at most ``cap``, refused above) through optimized local hashing; the prefix
        rounds then cover the longest length supported by Holm's test, plus one byte for its
        end. Those users' length reports replace their prefix reports when
        :meth:`transform` is given the same data, so every user reports once. Sets
        ``_string_cap``, the declared maximum (``FIXED_STRING_BYTES`` for
        ``max_string_bytes=None`` when too few users run no length round)."""
        self._missing_value = self.missing_category if not isinstance(
            self.missing_category, dict) else self.missing_category.get(column)
        values = self._heavy_hitter_values(X, column, reset=True)
        probe = HeavyHitterMechanism(PrefixHeavyHitters(8, epsilon, "pem", 1, 1),
                                     column, "strings", 8, cap)
        # Bytes and lengths (refusing what cannot be encoded): no (N, cap) array of words.
        distinct, inverse = _distinct(values)
        encoded, all_lengths = probe.utf8(distinct, column, inverse)
        n = all_lengths.shape[0]
        self._string_cap = cap
        if n < LENGTH_ROUND_MIN_USERS:
            if self.max_string_bytes is None:
                self._string_cap = FIXED_STRING_BYTES
            self.string_bytes_ = self._string_cap
            return 8 * self._string_cap
        asked = np.sort(rng.choice(n, size=round(LENGTH_SHARE * n), replace=False))
        lengths = all_lengths[asked]
        reports = length_oracle(epsilon).randomize(encode_values(lengths, 8), rng)
        # No length supported (too few users for this budget): the fixed width, at most.
        self.string_bytes_ = string_bytes_from_lengths(reports, epsilon, cap,
                                                       FIXED_STRING_BYTES)
        self._length_round = (encoded, asked, reports)
        return 8 * self.string_bytes_

    def _with_length_reports(self, words, reports):
        """``reports`` with the length round's reports in the rows of its users, when
        ``words`` are the data ``fit`` saw."""
        if self._length_round is None:
            return reports
        digest, asked, lengths = self._length_round
        if words.shape[0] != reports.shape[0] \
                or hashlib.sha256(words.tobytes()).hexdigest() != digest:
            return reports  # other users: every one reports a prefix
        reports = reports.copy()
        reports[asked] = lengths
        return reports

    def _heavy_hitter_values(self, X, column, reset=False):
        """The values of the heavy-hitter column of ``X`` (a DataFrame holding it, a Series,
        a 1-D array or a one-column 2-D array), missing values replaced as configured."""
        if isinstance(X, pd.DataFrame):
            if column not in X.columns:
                raise ValueError(f"The data is missing the column {column!r} (it has "
                                 f"{list(X.columns)[:10]!r}).")
            values = X[column]
        elif isinstance(X, pd.Series):
            values = X
        else:
            array = X if isinstance(X, np.ndarray) else np.asarray(X, dtype=object)
            if array.ndim == 2 and array.shape[1] == 1:
                array = array[:, 0]
            if array.ndim != 1:
                raise ValueError(f"heavy hitters read one column ({column!r}): pass a "
                                 f"DataFrame, a Series or a 1-D array, got shape "
                                 f"{array.shape}.")
            values = pd.Series(array, dtype=object if array.dtype.kind in "OUS" else None)
        if reset:
            self.n_features_in_ = 1
            self.feature_names_in_ = np.asarray([column], dtype=object)
        if len(values) == 0:
            raise ValueError("X has no rows; there is nothing to encode.")
        absent = values.isna()
        if absent.any():
            if self.handle_missing != "category":
                raise ValueError(
                    f"Column {column!r} has {int(absent.sum())} missing values (None/NaN, first "
                    f"at row {int(np.flatnonzero(absent.to_numpy())[0])}). Every user sends a "
                    "report: fill them, or pass handle_missing='category' with "
                    f"missing_category=<a value of {column!r}> (what they become).")
            values = values.astype(object).where(~absent, self._missing_value)
        return values
    def _heavy_hitter_words(self, X):
        """The encoded values of ``X`` for the heavy-hitter mechanism."""
        column = self.mechanism_.column
        values = self._heavy_hitter_values(X, column)
        if self.mechanism_.value_type != "strings":
            return self.mechanism_.encode(values, column)
        distinct, inverse = _distinct(values)
        return self.mechanism_.encode(distinct, column, inverse)


def _distinct(values):
    """A column of strings as its distinct values and each user's index into them (pandas'
    hash table): each distinct string is then checked and encoded once. Only for strings:
    the hash table takes ``1``, ``1.0`` and ``True`` for one value, which an integer column
    must tell apart (a boolean is refused)."""
    inverse, distinct = pd.factorize(values)
    if inverse.size and inverse.min() < 0:  # a missing value: checked (and named) per user
        return values, None
    return np.asarray(distinct, dtype=object), inverse
