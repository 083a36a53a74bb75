"""The ``"columns"`` kind: LDPEncoder's records, each column reported by its own part.
"""

import fractions
import math
from collections.abc import Mapping

from ._spec import (
    MAX_ATTRIBUTES,
    MAX_CELLS,
    _check_bounds,
    _check_budget,
    _check_fields,
    _spec_version,
    _ValueKind,
)
from .multi_attribute import _multi_attribute_epsilon, _multi_attribute_parts
from .numeric import MEAN_KINDS, _mean_kind, _sampled_mean, _square_wave
from .oracles import ORACLE_KINDS
from .records import _Categories

ORACLE_PART_KINDS = tuple(ORACLE_KINDS)


# Repeats the part checks of ColumnsMechanism.from_dict
# (sklearn_ldp.mechanisms.multi_attribute.columns; standard library
# only, so that a device can copy this folder alone: not imported from the server).
def _columns(spec):
    """The ``"columns"`` kind (``reports.ColumnsMechanism``): one row per record, the parts'
    reports side by side."""
    kind = "columns"
    _check_fields(spec, kind, ("epsilon", "n_inputs", "params"))
    epsilon = _check_budget(spec["epsilon"], "epsilon", kind)
    params = spec["params"]
    if not isinstance(params, Mapping) or set(params) != {"parts"} or not isinstance(
            params["parts"], list) or not 1 <= len(params["parts"]) <= MAX_ATTRIBUTES:
        raise ValueError(f"params of the 'columns' specification must be {{'parts': [...]}} "
                         f"with 1 to {MAX_ATTRIBUTES} parts, got {str(params)[:80]!r}.")
    parts, seen, budgets, declared = [], set(), [], 0
    for position, entry in enumerate(params["parts"]):
        where = f"part {position} of the 'columns' specification"
        if not isinstance(entry, Mapping) or set(entry) != {"columns", "spec"}:
            raise ValueError(f"{where} must be an object with 'columns' and 'spec', got "
                             f"{str(entry)[:80]!r}.")
        columns, part = entry["columns"], entry["spec"]
        if not isinstance(columns, list) or not columns or len(columns) > MAX_ATTRIBUTES \
                or not all(isinstance(column, str) for column in columns):
            raise ValueError(f"{where}: 'columns' must be a list of 1 to {MAX_ATTRIBUTES} "
                             f"column names, got {str(columns)[:80]!r}.")
        duplicated = sorted(seen.intersection(columns)) or sorted(
            {c for c in columns if columns.count(c) > 1})
        if duplicated:
            raise ValueError(f"{where}: the columns {duplicated} appear more than once.")
        seen.update(columns)
        if not isinstance(part, Mapping) or not isinstance(part.get("mechanism"), str):
            raise ValueError(f"{where}: 'spec' must be a mechanism specification, got "
                             f"{str(part)[:80]!r}.")
        sub = part["mechanism"]
        if part.get("version") != _spec_version(sub):
            raise ValueError(f"{where}: unsupported specification version "
                             f"{part.get('version')!r}.")
        part = dict(part)
        if sub in MEAN_KINDS + ("square_wave",):
            if len(columns) != 1:
                raise ValueError(f"{where}: the {sub!r} mechanism reports one column, got "
                                 f"{columns!r}.")
            built = (_square_wave if sub == "square_wave" else _mean_kind)(part)
            bounds = _check_bounds(part["bounds"], "bounds", sub)
            parts.append(("number", columns, built, [bounds]))
            budgets.append(_check_budget(part["epsilon"], "epsilon", sub))
        elif sub == "sampled_mean":
            built = _sampled_mean(part)
            if len(columns) != built.n_inputs:
                raise ValueError(f"{where}: a sampled-mean part over {built.n_inputs} "
                                 f"attributes needs as many columns, got {columns!r}.")
            bounds = [_check_bounds(pair, "bounds", sub) for pair in part["bounds"]]
            parts.append(("numbers", columns, built, bounds))
            budgets.append(_check_budget(part["epsilon"], "epsilon", sub))
        elif sub == "multi_attribute":
            shape, privatize_codes = _multi_attribute_parts(part)
            if len(columns) != len(shape):
                raise ValueError(f"{where}: a multi-attribute part over {len(shape)} "
                                 f"attributes needs as many columns, got {columns!r}.")
            declared += sum(shape)
            parts.append(("categories", columns, privatize_codes, shape))
            budgets.append(_multi_attribute_epsilon(part, shape))
        elif sub in ORACLE_PART_KINDS:
            if len(columns) != 1:
                raise ValueError(f"{where}: a frequency-oracle part reports one column, got "
                                 f"{columns!r}.")
            n, privatize_cell = ORACLE_KINDS[sub](part)
            declared += n
            parts.append(("categories", columns, _oracle_codes(privatize_cell), [n]))
            budgets.append(_check_budget(part["epsilon"], "epsilon", sub))
        else:
            raise ValueError(f"{where}: unknown mechanism {sub!r} for a column part (known: "
                             f"{MEAN_KINDS + ('square_wave', 'sampled_mean', 'multi_attribute')}"
                             f" and the frequency oracles {ORACLE_PART_KINDS}).")
        if declared > MAX_CELLS:
            raise ValueError(f"the 'columns' specification declares {declared} categories in "
                             f"all (part {position}), more than {MAX_CELLS}.")
    order = [column for _, columns, _, _ in parts for column in columns]
    if len(order) > MAX_ATTRIBUTES:
        raise ValueError(f"the 'columns' specification has {len(order)} columns, more than "
                         f"{MAX_ATTRIBUTES}.")
    # The server's ColumnsMechanism.epsilon: the smallest float at least the exact sum.
    spent = sum(fractions.Fraction(budget) for budget in budgets)
    total = float(spent)
    if fractions.Fraction(total) < spent:
        total = math.nextafter(total, math.inf)
    if epsilon != total:
        raise ValueError(f"the 'columns' specification claims epsilon={epsilon!r}, but its parts "
                         f"spend {total!r} (their sum).")
    if spec["n_inputs"] != len(order):
        raise ValueError(f"the 'columns' specification claims n_inputs={spec['n_inputs']!r}, "
                         f"but its parts hold {len(order)} columns.")
    lookups = {}

    def bind(categories):
        if not isinstance(categories, Mapping):
            raise ValueError("categories must be a mapping column -> list of categories.")
        categorical = {c: (part, i) for part in parts if part[0] == "categories"
                       for i, c in enumerate(part[1])}
        for column, values in categories.items():
            if column not in categorical:
                raise ValueError(f"categories name the column {column!r}, which is not a "
                                 f"categorical column of the specification "
                                 f"{sorted(categorical)}.")
            part, i = categorical[column]
            lookup = _Categories({column: values})
            if lookup.sizes[0] != part[3][i]:
                raise ValueError(f"column {column!r} has {lookup.sizes[0]} categories but the "
                                 f"specification declares {part[3][i]}.")
            lookups[column] = lookup

    def privatize(record, rng, memo=None):
        if not isinstance(record, Mapping):
            raise ValueError(f"a 'columns' record is a dict column -> value with the columns "
                             f"{order}, got {str(record)[:80]!r}.")
        missing = [column for column in order if column not in record]
        if missing:
            raise ValueError(f"the record has no value for column(s) {missing}.")
        extra = sorted(str(column) for column in record if column not in seen)
        if extra:
            raise ValueError(f"the record has columns {extra} that the specification does not "
                             f"know (it has {order}).")
        row = []
        for role, columns, randomize, sizes in parts:
            if role == "number":
                row.append(randomize.privatize(record[columns[0]], rng))
            elif role == "numbers":
                row += randomize.privatize([record[c] for c in columns], rng)
            else:
                codes = []
                for column, size in zip(columns, sizes, strict=True):
                    value = record[column]
                    if column in lookups:
                        codes.append(lookups[column].codes_of({column: value})[0])
                    elif isinstance(value, bool) or not isinstance(value, int) \
                            or not 0 <= value < size:
                        raise ValueError(f"column {column!r} has the value {value!r}: without "
                                         f"categories= for it, a category code in [0, {size}).")
                    else:
                        codes.append(value)
                row += randomize(codes, rng)
        return row

    built = _ValueKind(len(order), privatize, bind=bind)
    built.columns = order
    return built


def _oracle_codes(privatize_cell):
    def privatize_codes(codes, rng):
        report = privatize_cell(codes[0], rng)
        return report if isinstance(report, list) else [report]

    return privatize_codes
