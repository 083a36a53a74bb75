"""LDPEncoder's set-valued columns: each user holds a set of declared items (SVIM).

A column declared as ``categories={"apps": ("sets", items)}`` or
``("sets", items, max_set_size)`` holds, per user, a set of items (a ``set``, ``frozenset``,
``list``, ``tuple`` or 1-D array; an object column of a DataFrame). ``fit`` chooses the pad
length: when it sees at least ``SIZE_ROUND_MIN_USERS`` users, a share ``SIZE_SHARE`` of them
report their set's size (the size round of :func:`~sklearn_ldp.mechanisms.set_valued.svim.
pad_length_round`) and the pad length is the 90th percentile of the estimated sizes; those
users report nothing else, so :meth:`transform` on the same data privatizes only the others.
Without data, the pad length is ``max_set_size`` (no set is subsampled). A mixin of the
encoder: it uses the encoder's parameters and generator.
"""

import hashlib
import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .mechanisms.set_valued.padding import MAX_SET_SIZE, FlatSets, check_sets, check_size_cap
from .mechanisms.set_valued.svim import SetItemMechanism, pad_length_round

SETS = "sets"
# The size round: the share of the users asked their set's size, and the fewest users for
# which it runs (below, the pad length is max_set_size).
SIZE_SHARE = 0.1
SIZE_ROUND_MIN_USERS = 2000
SET_STRATEGIES = ("auto", "svim")
# What a cell of a set-valued column may be (a str is iterable but is one value, refused).
SET_TYPES = (set, frozenset, list, tuple, np.ndarray)


def is_set_declaration(value):
    """Whether a ``categories`` entry declares a set-valued column: ``("sets", items[,
    max_set_size])``."""
    # A tuple of categories that happens to start with "sets" lists strings, not a list.
    return isinstance(value, tuple) and len(value) in (2, 3) and isinstance(value[0], str) \
        and value[0] == SETS and not isinstance(value[1], str | bytes)


class SetEncoderMixin:
    """Fitting and encoding a set-valued column (see the module docstring)."""

    def _set_mode(self):
        """Whether ``categories`` declares a set-valued column."""
        return isinstance(self.categories, Mapping) and any(
            is_set_declaration(value) for value in self.categories.values())

    def _set_declaration(self):
        """``(column, items, max_set_size)`` of the declaration, or a ValueError."""
        if len(self.categories) != 1:
            raise ValueError(f"a set-valued column is reported alone, got the columns "
                             f"{list(self.categories)!r}: use one LDPEncoder per column (each "
                             "with its share of the budget).")
        (column, declaration), = self.categories.items()
        items = declaration[1]
        if isinstance(items, str | bytes) or not hasattr(items, "__len__") or len(items) < 1:
            raise ValueError(f"categories[{column!r}] = ('sets', items...): items must be a "
                             f"non-empty list of the possible items, got {str(items)[:60]!r}.")
        items = list(items)
        index = pd.Index(items)
        if index.has_duplicates:
            duplicate = index[index.duplicated()][0]
            raise ValueError(f"categories[{column!r}]: the item {duplicate!r} is listed "
                             "twice.")
        if index.hasnans:
            raise ValueError(f"categories[{column!r}]: an item is missing (None/NaN).")
        cap = declaration[2] if len(declaration) == 3 else min(len(items), MAX_SET_SIZE)
        return column, items, check_size_cap(cap, f"max_set_size of column {column!r}")

    def _fit_sets(self, X, epsilon):
        """``fit`` for a set-valued column: the size round (with data), then the
        :class:`SetItemMechanism`."""
        column, items, cap = self._set_declaration()
        if not isinstance(self.strategy, str) or self.strategy not in SET_STRATEGIES:
            raise ValueError(f"a set-valued column is reported by strategy 'svim' (or 'auto'), "
                             f"got strategy={self.strategy!r}.")
        if self.oracle not in ("auto", "grr", "olh"):
            raise ValueError(f"oracle must be 'auto', 'grr' or 'olh' for a set-valued column, "
                             f"got {self.oracle!r}.")
        for name, default in (("bounds", None), ("workload", None), ("handle_unknown", "error"),
                              ("handle_missing", "error")):
            if getattr(self, name) != default:
                raise ValueError(f"{name}={getattr(self, name)!r} does not apply to the "
                                 f"set-valued column {column!r}; leave {name}={default!r}.")
        rng = np.random.default_rng(self._random_state())
        self._size_round = None
        pad = cap
        if X is not None:
            flat = _flat_sets(self._set_cells(X, column, reset=True), items, column, cap)
            n_users = flat.lengths.size
            if n_users >= SIZE_ROUND_MIN_USERS:
                asked = np.sort(rng.choice(n_users, size=round(SIZE_SHARE * n_users),
                                           replace=False))
                pad, self.size_reports_ = pad_length_round(flat.lengths[asked], cap, epsilon,
                                                           rng)
                self._size_round = (_digest(flat), asked)
        else:
            self.n_features_in_ = 1
            self.feature_names_in_ = np.asarray([column], dtype=object)
        mechanism = SetItemMechanism(len(items), pad, epsilon, self.oracle, cap, items)
        self.mechanism_, self.domain_, self.workload_ = mechanism, None, None
        self.strategy_, self.pad_length_ = "svim", pad
        self.bounds_, self.column_budget_ = {}, None
        self.epsilon_ = float(mechanism.epsilon)
        self.candidates_ = pd.Series(dtype=float, name="worst_case_per_user_variance")
        self.selection_ = pd.DataFrame(
            columns=["worst_case", "average_case", "seconds", "status", "reason"])
        self.selection_.index.name = "strategy"
        worst, average = mechanism.per_user_variance()
        self._expected_error = pd.DataFrame(
            {"worst_case": [worst], "average_case": [average]},
            index=pd.Index([f"count of one {column} item"], name="answer"))
        self.expected_total_error_ = None
        self.n_iter_, self.history_ = 0, []
        self._set_generator(rng)
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
        """The item reports of ``X``'s users (without the size round's, on ``fit``'s data)."""
        mechanism = self.mechanism_
        column = self.feature_names_in_[0]
        flat = _flat_sets(self._set_cells(X, column), mechanism.items, column,
                          mechanism.max_set_size)
        if self._size_round is not None and _digest(flat) == self._size_round[0]:
            keep = np.ones(flat.lengths.size, dtype=bool)
            keep[self._size_round[1]] = False  # these users reported their size at fit
            flat = _select_users(flat, keep)
        self._charge_collection(flat.lengths.size, "transform")
        return mechanism.randomize(flat, self._generator())


def _flat_sets(cells, items, column, cap):
    """The cells of a set-valued column as flat item codes, every value checked: a cell that
    is not a set or list, an unknown item, a set over the cap or an item listed twice is a
    ValueError naming the row and the value."""
    values = cells.to_numpy(dtype=object)
    kinds = np.fromiter((isinstance(cell, SET_TYPES) for cell in values), dtype=bool,
                        count=values.size)
    if not kinds.all():
        row = int(np.argmin(kinds))
        raise ValueError(f"column {column!r}, row {row}: {repr(values[row])[:60]} is not a set "
                         "of items (a set, frozenset, list, tuple or 1-D array).")
    lengths = np.fromiter((len(cell) for cell in values), dtype=np.int64, count=values.size)
    flat_items = list(itertools.chain.from_iterable(values))
    codes = pd.Index(items).get_indexer(pd.Index(flat_items, dtype=object)) if flat_items \
        else np.zeros(0, dtype=np.int64)
    if codes.size and codes.min() < 0:
        position = int(np.argmin(codes))
        row = int(np.searchsorted(np.cumsum(lengths), position, side="right"))
        raise ValueError(f"column {column!r}, row {row}: the item {flat_items[position]!r} is "
                         f"not among the declared items ({str(items)[:60]}...).")
    try:
        return check_sets((lengths, codes.astype(np.int64)), len(items), cap,
                          f"column {column!r}")
    except ValueError as exc:  # name the item, not its code
        message = str(exc)
        for code in _codes_in(message):
            message = message.replace(f"the item {code} ", f"the item {items[code]!r} ")
        raise ValueError(message.replace("user ", "row ")) from None


def _codes_in(message):
    """The item codes a check_sets message names (``the item 3 ...``)."""
    words = message.split()
    return [int(words[i + 2]) for i in range(len(words) - 2)
            if words[i] == "the" and words[i + 1] == "item" and words[i + 2].isdigit()]


def _select_users(flat, keep):
    """The sets of the users where ``keep`` is True."""
    owners = np.repeat(keep, flat.lengths)
    return FlatSets(flat.lengths[keep], flat.items[owners])


def _digest(flat):
    """A hash of the encoded sets: whether transform sees fit's data."""
    digest = hashlib.sha256(flat.lengths.tobytes())
    digest.update(flat.items.tobytes())
    return digest.hexdigest()

