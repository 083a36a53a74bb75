"""LDPEncoder's set-valued columns: each user holds a set of declared items (SVIM), or a set
of key-value pairs (PCKV-GRR).

A column declared as ``categories={"apps": ("sets", items)}`` or
``("sets", items, max_set_size)`` holds, per user, a set of items (a ``set``, ``frozenset``,
``list``, ``tuple`` or 1-D array; an object column of a DataFrame). ``fit`` chooses the pad
length: when it sees at least ``SIZE_ROUND_MIN_USERS`` users, a share ``SIZE_SHARE`` of them
report their set's size (the size round of :func:`~sklearn_ldp.mechanisms.set_valued.svim.
pad_length_round`) and the pad length is the 90th percentile of the estimated sizes; those
users report nothing else, so :meth:`transform` on the same data privatizes only the others.
Without data, the pad length is ``max_set_size`` (no set is subsampled).

A key-value column, ``categories={"ratings": ("key_value", keys[, max_set_size[,
value_steps]])}``, holds per user a dict ``{key: value}`` or a list of ``(key, value)`` pairs,
values in ``[-1, 1]`` on the lattice ``j / value_steps`` (default 1000); it takes the same size
round (on the number of pairs) and is reported by PCKV-GRR
(:class:`~sklearn_ldp.mechanisms.set_valued.pckv.PCKVGRR`) or PCKV-UE
(:class:`~sklearn_ldp.mechanisms.set_valued.pckv_ue.PCKVUE`): ``oracle="grr"`` or ``"ue"``
forces one, ``"auto"`` takes the one whose analytic frequency variance (at a key nobody
holds, for the declared keys and the chosen pad length) is the smaller. A mixin of the
encoder: it uses the encoder's parameters and generator.
"""

import hashlib
import itertools
import numbers
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .mechanisms.set_valued.padding import (
    MAX_SET_SIZE,
    FlatSets,
    check_sets_order,
    check_size_cap,
)
from .mechanisms.set_valued.pckv import DEFAULT_VALUE_STEPS, PCKV_KIND, PCKVGRR
from .mechanisms.set_valued.pckv_ue import PCKV_UE_KIND, PCKVUE
from .mechanisms.set_valued.svim import SetItemMechanism, pad_length_round

SETS = "sets"
KEY_VALUE = "key_value"
# The mechanisms of the columns this module fits (transform sends their records here).
SET_MECHANISMS = (SetItemMechanism, PCKVGRR, PCKVUE)
# The oracles each kind of column takes (``"auto"``: the smaller analytic variance).
SET_ORACLES = {SETS: ("auto", "grr", "olh"), KEY_VALUE: ("auto", "grr", "ue")}
# The size round: the share of the users asked their set's size, and the fewest users for
# which it runs (below, the pad length is max_set_size).
SIZE_SHARE = 0.1
SIZE_ROUND_MIN_USERS = 2000
SET_STRATEGIES = {SETS: ("auto", "svim"), KEY_VALUE: ("auto", PCKV_KIND, PCKV_UE_KIND)}
# The oracle a key-value strategy names.
KEY_VALUE_ORACLES = {PCKV_KIND: "grr", PCKV_UE_KIND: "ue"}
# The longest declaration of each kind: (kind, items, max_set_size[, value_steps]).
DECLARATION_LENGTHS = {SETS: 3, KEY_VALUE: 4}
# What a cell of a set-valued column may be (a str is iterable but is one value, refused).
SET_TYPES = (set, frozenset, list, tuple, np.ndarray)
# What a cell of a key-value column may be: a dict, or a list of (key, value) pairs.
PAIRS_TYPES = (Mapping, list, tuple)
# The value types accepted without an abstract isinstance (a bool is neither).
EXACT_REALS = (float, int, np.float64, np.int64)
# The label types looked up by a dict (a bool would equal the label 1).
LABEL_TYPES = (str, int)


def is_set_declaration(value):
    """Whether a ``categories`` entry declares a set-valued column: ``("sets", items[,
    max_set_size])`` or ``("key_value", keys[, max_set_size[, value_steps]])``."""
    # A tuple of categories that happens to start with "sets" lists strings, not a list.
    return isinstance(value, tuple) and len(value) >= 2 and isinstance(value[0], str) \
        and value[0] in DECLARATION_LENGTHS and len(value) <= DECLARATION_LENGTHS[value[0]] \
        and not isinstance(value[1], str | bytes)


class SetEncoderMixin:
    """Fitting and encoding a set-valued column (see the module docstring)."""

    def fit_transform(self, X, y=None, **fit_params):
        """``fit(X).transform(X)``; for a set-valued or key-value column, the cells are read
        once (``X`` cannot change between the two steps of one call), the reports the same
        as by the two calls.

        Parameters
        ----------
        X : DataFrame, Series, list or None
            The data (as for :meth:`fit` and :meth:`transform`).
        y : None
            Ignored.
        **fit_params : dict
            Passed to :meth:`fit`.

        Returns
        -------
        LDPReports or DataFrame
            What :meth:`transform` returns.

        Examples
        --------
        >>> import pandas as pd
        >>> from sklearn_ldp import LDPEncoder
        >>> df = pd.DataFrame({"r": [{"a": 0.5}, {"b": -1.0}] * 50})
        >>> encoder = LDPEncoder(categories={"r": ("key_value", ["a", "b"], 1, 2)},
        ...                      random_state=0)
        >>> len(encoder.fit_transform(df))
        100
        """
        if X is None or not self._set_mode():
            return super().fit_transform(X, y, **fit_params)
        self._records_of = []  # fit leaves (X, records) here for the transform that follows
        try:
            return self.fit(X, y, **fit_params).transform(X)
        finally:
            del self._records_of

    def _set_mode(self):
        """Whether ``categories`` declares a set-valued column."""
        return isinstance(self.categories, Mapping) and any(
            is_set_declaration(value) for value in self.categories.values())

    def _set_declaration(self):
        """``(column, kind, items, max_set_size, value_steps)`` of the declaration, or a
        ValueError (``value_steps`` is None for a set of items)."""
        if len(self.categories) != 1:
            raise ValueError(f"a set-valued column is reported alone, got the columns "
                             f"{list(self.categories)!r}: use one LDPEncoder per column (each "
                             "with its share of the budget).")
        (column, declaration), = self.categories.items()
        kind, items = declaration[0], declaration[1]
        if isinstance(items, str | bytes) or not hasattr(items, "__len__") or len(items) < 1:
            raise ValueError(f"categories[{column!r}] = ({kind!r}, items...): items must be a "
                             f"non-empty list of the possible {_NOUNS[kind]}s, got "
                             f"{str(items)[:60]!r}.")
        items = list(items)
        index = pd.Index(items)
        if index.has_duplicates:
            duplicate = index[index.duplicated()][0]
            raise ValueError(f"categories[{column!r}]: the {_NOUNS[kind]} {duplicate!r} is "
                             "listed twice.")
        if index.hasnans:
            raise ValueError(f"categories[{column!r}]: an {_NOUNS[kind]} is missing "
                             "(None/NaN).")
        cap = declaration[2] if len(declaration) >= 3 else min(len(items), MAX_SET_SIZE)
        steps = None
        if kind == KEY_VALUE:
            steps = declaration[3] if len(declaration) == 4 else DEFAULT_VALUE_STEPS
        return column, kind, items, check_size_cap(cap, f"max_set_size of column {column!r}"), \
            steps

    def _fit_sets(self, X, epsilon):
        """``fit`` for a set-valued column: the size round (with data), then the
        :class:`SetItemMechanism` (sets) or :class:`PCKVGRR` (key-value pairs)."""
        column, kind, items, cap, steps = self._set_declaration()
        strategies = SET_STRATEGIES[kind]
        if not isinstance(self.strategy, str) or self.strategy not in strategies:
            raise ValueError(f"a {kind!r} column is reported by strategy {strategies[1]!r} (or "
                             f"'auto'), got strategy={self.strategy!r}.")
        oracles = SET_ORACLES[kind]
        if not isinstance(self.oracle, str) or self.oracle not in oracles:
            raise ValueError(f"oracle must be one of {oracles} for a {kind!r} column, got "
                             f"{self.oracle!r}.")
        for name, default in (("bounds", None), ("workload", None), ("handle_unknown", "error"),
                              ("handle_missing", "error")):
            if getattr(self, name) != default:
                raise ValueError(f"{name}={getattr(self, name)!r} does not apply to the "
                                 f"set-valued column {column!r}; leave {name}={default!r}.")
        rng = np.random.default_rng(self._random_state())
        self._size_round = None
        pad, records = cap, None
        if X is not None:
            cells = self._set_cells(X, column, reset=True)
            records = _flat_sets(cells, items, column, cap) if kind == SETS \
                else _flat_pairs(cells, items, column, cap)
            if getattr(self, "_records_of", None) is not None:
                self._records_of.append((X, records))
            lengths = records[0]
            if lengths.size >= SIZE_ROUND_MIN_USERS:
                asked = np.sort(rng.choice(lengths.size, size=round(SIZE_SHARE * lengths.size),
                                           replace=False))
                pad, self.size_reports_ = pad_length_round(lengths[asked], cap, epsilon, rng)
                self._size_round = (_digest(records), asked)
        if kind == SETS:
            mechanism = SetItemMechanism(len(items), pad, epsilon, self.oracle, cap, items)
            worst, average = mechanism.per_user_variance()
            answer = f"count of one {column} item"
        else:
            oracle = KEY_VALUE_ORACLES.get(self.strategy, self.oracle)
            if self.oracle not in ("auto", oracle):
                raise ValueError(f"strategy={self.strategy!r} reports with oracle={oracle!r}, "
                                 f"got oracle={self.oracle!r}.")
            mechanism = _key_value_mechanism(oracle, (len(items), pad, epsilon, steps, cap,
                                                      items))
            if records is not None:  # values off the lattice are refused at fit, not later
                _check_values(mechanism, records, column)
            # One user's contribution to a key's frequency: a key every user holds, none.
            worst, average = (float(mechanism.frequency_variance(1, held)) for held in (1, 0))
            answer = f"frequency of one {column} key"
        self.pad_length_ = pad
        strategy = strategies[1] if kind == SETS else mechanism.kind
        self._one_column_attributes(X, column, mechanism, strategy, mechanism.epsilon,
                                    (worst, average), answer, rng)
        return self

    def _set_cells(self, X, column, reset=False):
        """The set-valued column of ``X`` (a DataFrame holding it, a Series or a list)."""
        if isinstance(X, pd.DataFrame):
            if column not in X.columns:
                raise ValueError(f"The data is missing the column {column!r} (it has "
                                 f"{list(X.columns)[:10]!r}).")
            cells = X[column]
        elif isinstance(X, pd.Series):
            cells = X
        elif isinstance(X, list | tuple):
            cells = pd.Series(list(X), dtype=object)
        else:
            raise ValueError(f"a set-valued column ({column!r}) is read from a DataFrame, a "
                             f"Series or a list of sets, got {type(X).__name__}.")
        if len(cells) == 0:
            raise ValueError("X has no rows; there is nothing to encode.")
        if reset:
            self.n_features_in_ = 1
            self.feature_names_in_ = np.asarray([column], dtype=object)
        return cells

    def _transform_sets(self, X):
        """The reports of ``X``'s users (without the size round's, on ``fit``'s data)."""
        mechanism = self.mechanism_
        column = self.feature_names_in_[0]
        cells = self._set_cells(X, column)
        key_value = isinstance(mechanism, (PCKVGRR, PCKVUE))
        parsed = getattr(self, "_records_of", None)
        if parsed and parsed[0][0] is X:  # inside fit_transform: fit read these cells
            records = parsed.pop()[1]
        elif key_value:
            records = _flat_pairs(cells, mechanism.keys, column, mechanism.max_set_size)
        else:
            records = _flat_sets(cells, mechanism.items, column, mechanism.max_set_size)
        if self._size_round is not None and _digest(records) == self._size_round[0]:
            keep = np.ones(records[0].size, dtype=bool)
            keep[self._size_round[1]] = False  # these users reported their size at fit
            records = _select_users(records, keep)
        # The values are checked before anything is charged, and only once.
        checked = _check_values(mechanism, records, column) if key_value else None
        self._charge_collection(records[0].size, "transform")
        if key_value:
            return mechanism.randomize_checked(*checked, self._generator())
        return mechanism.randomize(records, self._generator())


def _key_value_mechanism(oracle, arguments):
    """PCKV-GRR (``oracle="grr"``), PCKV-UE (``"ue"``) or, for ``"auto"``, the one whose
    frequency variance at a key nobody holds is the smaller (GRR on a tie)."""
    if oracle == "grr":
        return PCKVGRR(*arguments)
    if oracle == "ue":
        return PCKVUE(*arguments)
    grr, ue = PCKVGRR(*arguments), PCKVUE(*arguments)
    return ue if ue.frequency_variance(1, 0) < grr.frequency_variance(1, 0) else grr


# What a declaration's list holds, for the messages.
_NOUNS = {SETS: "item", KEY_VALUE: "key"}


def _flat_pairs(cells, keys, column, cap):
    """The cells of a key-value column as ``(lengths, key codes, values)``, flat, user after
    user (each user's pairs sorted by key code); a cell that is neither a dict nor a list of
    pairs, a pair that is not ``(key, value)``, a value that is not a real number, an unknown
    key, a key listed twice or too many pairs is a ValueError naming the row and the value
    (the values' lattice is the mechanism's check, :func:`_check_values`)."""
    cells = _typed_cells(cells, PAIRS_TYPES, column,
                         "a dict {key: value} or a list of (key, value) pairs")
    if _only_types(cells, (dict,)):
        # The common case, each cell read once at C speed: a dict's pairs are pairs.
        lengths = np.fromiter(map(len, cells), dtype=np.int64, count=len(cells))
        flat_keys = list(itertools.chain.from_iterable(map(dict.keys, cells)))
        numbers = list(itertools.chain.from_iterable(map(dict.values, cells)))
        if not _only_types(numbers, EXACT_REALS):
            position = next(i for i, number in enumerate(numbers) if not _is_pair((0, number)))
            _not_a_pair(column, position, lengths, (flat_keys[position], numbers[position]))
    else:
        rows = [cell if isinstance(cell, list | tuple) else list(cell.items()) for cell in cells]
        lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
        pairs = list(itertools.chain.from_iterable(rows))
        # The exact types first: the isinstance of an abstract class (numbers.Real) on every
        # pair would dominate the time.
        ok = np.fromiter(((type(pair) is tuple and len(pair) == 2
                           and type(pair[1]) in EXACT_REALS) or _is_pair(pair)
                          for pair in pairs), dtype=bool, count=len(pairs))
        if not ok.all():
            position = int(np.argmin(ok))
            _not_a_pair(column, position, lengths, pairs[position])
        flat_keys, numbers = [pair[0] for pair in pairs], [pair[1] for pair in pairs]
    codes = _item_codes(flat_keys, keys, lengths, column, "key")
    flat, order = _checked_sets(lengths, codes, keys, cap, column, "key")  # cap, repeats
    try:
        values = np.array(numbers, dtype=float)
    except OverflowError:  # an int beyond the floats: outside [-1, 1] (the lattice's check)
        position = next(i for i, number in enumerate(numbers) if abs(number) > 1)
        raise ValueError(f"column {column!r}, row {_row_of(position, lengths)} has the value "
                         f"{str(numbers[position])[:40]} for the key {flat_keys[position]!r}; "
                         "values must lie in [-1, 1].") from None
    # Each user's pairs sorted by key (the mechanism's order: its check then finds them sorted).
    return flat.lengths, flat.items, values if order is None else values[order]


def _not_a_pair(column, position, lengths, pair):
    """The ValueError of a pair that is not ``(key, value)`` with a number value."""
    raise ValueError(f"column {column!r}, row {_row_of(position, lengths)}: "
                     f"{repr(pair)[:60]} is not a pair (key, value) with a number value.")


def _only_types(values, types):
    """Whether every one of ``values`` has one of exactly ``types`` (one pass in C: the
    cheap check before any per-value one)."""
    return set(map(type, values)) <= set(types)


def _is_pair(pair):
    """Whether ``pair`` is ``(key, value)`` with a real number value (a bool is not one)."""
    return isinstance(pair, list | tuple) and len(pair) == 2 \
        and isinstance(pair[1], numbers.Real) and not isinstance(pair[1], bool)


def _check_values(mechanism, records, column):
    """The mechanism's check of the values (in ``[-1, 1]`` on its lattice): what
    :meth:`check_pairs` returns, or its ValueError naming the row and the key's label."""
    try:
        return mechanism.check_pairs(records[:2], records[2])
    except ValueError as exc:
        message = re.sub(r"for key (\d+)", lambda match: f"for the key "
                         f"{mechanism.keys[int(match.group(1))]!r}", str(exc))
        raise ValueError(message.replace("values: user ", f"column {column!r}, row ")) from None


def _flat_sets(cells, items, column, cap):
    """The cells of a set-valued column as flat item codes, every value checked: a cell that
    is not a set or list, an unknown item, a set over the cap or an item listed twice is a
    ValueError naming the row and the value."""
    values = _typed_cells(cells, SET_TYPES, column,
                          "a set of items (a set, frozenset, list, tuple or 1-D array)")
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    codes = _item_codes(list(itertools.chain.from_iterable(values)), items, lengths, column,
                        "item")
    return _checked_sets(lengths, codes, items, cap, column)[0]


def _typed_cells(cells, types, column, what):
    """The cells as a list, or a ValueError naming the first row whose cell is not one of
    ``types``."""
    values = cells.to_numpy(dtype=object).tolist()
    exact = tuple(kind for kind in (dict, list, tuple, set, frozenset) if issubclass(kind, types))
    if _only_types(values, exact):
        return values
    kinds = np.fromiter((type(cell) in exact or isinstance(cell, types) for cell in values),
                        dtype=bool, count=len(values))
    if not kinds.all():
        row = int(np.argmin(kinds))
        raise ValueError(f"column {column!r}, row {row}: {repr(values[row])[:60]} is not "
                         f"{what}.")
    return values


def _item_codes(flat_items, items, lengths, column, noun):
    """The codes of ``flat_items`` among the declared ``items``, or a ValueError naming the
    row and the first unknown one."""
    if not flat_items:
        codes = np.zeros(0, dtype=np.int64)
    elif _only_types(items, LABEL_TYPES) and _only_types(flat_items, LABEL_TYPES):
        # Strings and integers (no bools) look up as they compare: a dict, read in C.
        index = {item: code for code, item in enumerate(items)}
        codes = np.fromiter(map(index.get, flat_items, itertools.repeat(-1)), dtype=np.int64,
                            count=len(flat_items))
    else:
        codes = pd.Index(items).get_indexer(pd.Index(flat_items, dtype=object))
    if codes.size and codes.min() < 0:
        position = int(np.argmin(codes))
        raise ValueError(f"column {column!r}, row {_row_of(position, lengths)}: the {noun} "
                         f"{flat_items[position]!r} is not among the declared {noun}s "
                         f"({str(items)[:60]}...).")
    return codes.astype(np.int64)


def _row_of(position, lengths):
    """The row holding the ``position``-th flat element."""
    return int(np.searchsorted(np.cumsum(lengths), position, side="right"))


def _checked_sets(lengths, codes, items, cap, column, noun="item"):
    """:func:`check_sets_order` of the codes (the checked sets and the sorting permutation),
    its message naming rows and the items' (or keys') labels."""
    try:
        return check_sets_order((lengths, codes), len(items), cap, f"column {column!r}")
    except ValueError as exc:  # name the item, not its code
        message = str(exc)
        for code in _codes_in(message):
            message = message.replace(f"the item {code} ", f"the {noun} {items[code]!r} ")
        raise ValueError(message.replace("user ", "row ")) from None


def _codes_in(message):
    """The item codes a check_sets message names (``the item 3 ...``)."""
    words = message.split()
    return [int(words[i + 2]) for i in range(len(words) - 2)
            if words[i] == "the" and words[i + 1] == "item" and words[i + 2].isdigit()]


def _select_users(records, keep):
    """The records (``FlatSets``, or ``(lengths, keys, values)``) of the users where ``keep``
    is True."""
    owners = np.repeat(keep, records[0])
    selected = (records[0][keep], *(part[owners] for part in records[1:]))
    return FlatSets(*selected) if isinstance(records, FlatSets) else selected


def _digest(records):
    """A hash of the encoded records: whether transform sees fit's data."""
    digest = hashlib.blake2b()  # a cryptographic hash, about twice as fast as SHA-256 here
    for part in records:
        digest.update(np.ascontiguousarray(part).tobytes())
    return digest.hexdigest()
