"""Records to cells: the public categories of the server's domain, as ``Domain.encode``.
"""

import math
from collections.abc import Mapping


def _is_missing(value):
    return value is None or (isinstance(value, float) and math.isnan(value))


# Repeats the checks of the server's Domain and LDPEncoder categories (standard library only, so
# that a device can copy this folder alone: not imported from the server): a device refuses what
# the server would refuse.
class _Categories:
    """Column -> category code lookups, encoding a record like ``Domain.encode``."""

    def __init__(self, categories):
        if not isinstance(categories, Mapping) or not categories:
            raise ValueError("categories must be a non-empty mapping column -> list of "
                             "categories, as the server's Domain was built with.")
        self.columns, self.codes, self.sizes, self.has_bool = [], [], [], []
        for column, values in categories.items():
            if not isinstance(column, str):
                raise ValueError(f"column names must be strings, got {column!r}.")
            if isinstance(values, (str, bytes, Mapping, set, frozenset)):
                raise ValueError(f"the categories of column {column!r} must be a list (their "
                                 f"order fixes the cell index), got {values!r}.")
            values = list(values)
            if not values:
                raise ValueError(f"column {column!r} has no categories.")
            lookup = {}
            for code, value in enumerate(values):
                try:
                    hash(value)
                except TypeError:
                    raise ValueError(f"the categories of column {column!r} must be hashable; "
                                     f"{value!r} is not.") from None
                if _is_missing(value):
                    raise ValueError(f"column {column!r} has a missing value among its "
                                     "categories.")
                if value in lookup:
                    raise ValueError(f"column {column!r} has the duplicate category {value!r}.")
                lookup[value] = code
            self.columns.append(column)
            self.codes.append(lookup)
            self.sizes.append(len(values))
            self.has_bool.append(any(isinstance(value, bool) for value in values))
        self.size = math.prod(self.sizes)

    def encode(self, record):
        """The flat C-order cell index of one record (first column slowest)."""
        cell = 0
        for size, code in zip(self.sizes, self.codes_of(record), strict=True):
            cell = cell * size + code
        return cell

    def codes_of(self, record):
        """The category code of each column of one record, in column order."""
        if isinstance(record, Mapping):
            missing = [c for c in self.columns if c not in record]
            if missing:
                raise ValueError(f"the record has no value for column(s) {missing}; it has "
                                 f"{sorted(map(str, record))}.")
            values = [record[c] for c in self.columns]
        elif isinstance(record, (list, tuple)):
            if len(record) != len(self.columns):
                raise ValueError(f"the record has {len(record)} values but the domain has "
                                 f"{len(self.columns)} columns {self.columns}.")
            values = list(record)
        elif len(self.columns) == 1:
            values = [record]
        else:
            raise ValueError(f"a record must be a dict column -> value or a list of "
                             f"{len(self.columns)} values in the order {self.columns}, got "
                             f"{record!r}.")
        codes = []
        for column, lookup, has_bool, value in zip(
                self.columns, self.codes, self.has_bool, values, strict=True):
            if _is_missing(value):
                raise ValueError(f"column {column!r} has a missing value (None/NaN); every "
                                 "record needs one of the declared categories.")
            try:
                code = lookup.get(value)
            except TypeError:  # unhashable
                code = None
            if code is None or (isinstance(value, bool) and not has_bool):
                shown = list(lookup)[:10]
                raise ValueError(f"column {column!r} has the value {value!r}, which is not "
                                 f"among its categories {shown}"
                                 f"{' ...' if len(lookup) > 10 else ''}.")
            codes.append(code)
        return codes
