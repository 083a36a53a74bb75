"""LDPEncoder's itemset columns: the frequent itemsets of set-valued data (SVSM).

A column declared as ``categories={"apps": ("itemsets", items, max_set_size[, top_k[,
n_candidates]])}`` holds,
per user, a set of declared items, as a ``("sets", ...)`` column does. ``fit`` needs the data:
it splits the users at random (``random_state``) into the rounds of
:class:`~sklearn_ldp.mechanisms.set_valued.svsm.FrequentItemsets` and runs the rounds that
choose what the last one asks (SVIM's candidate items, their size round and item round, the
candidate itemsets and their size round), each server step on the reports alone, as the
server would. ``mechanism_`` is then the itemset round's mechanism (``set_items`` over the
candidate-itemset indices, each labelled by the tuple of its items), and :meth:`transform` of
the same data privatizes the users of the itemset group; on other data, every row reports
its itemsets through that round (new users of a deployed phase 2). ``top_k`` (default 10) is
the ``k`` of the protocol: ``2k`` candidate items, ``k`` frequent items, and ``n_candidates``
(default ``2k``) candidate itemsets. ``mechanism_`` carries the itemset size round's
estimate, from which ``ItemsetEstimator`` applies the long-set correction; the item round's
correction is in ``item_frequencies_``. A mixin of the encoder: it uses the encoder's
parameters and generator.
"""

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ._encoder_sets import _digest, _flat_sets, _select_users
from .mechanisms.set_valued.padding import MAX_SET_SIZE, check_size_cap
from .mechanisms.set_valued.svsm import (
    DEFAULT_TOP_K,
    FrequentItemsets,
    check_n_candidates,
    check_top_k,
    itemset_round_spec,
)

ITEMSETS = "itemsets"
ITEMSET_STRATEGIES = ("auto", "svsm")


def is_itemset_declaration(value):
    """Whether a ``categories`` entry declares an itemset column: ``("itemsets", items[,
    max_set_size[, top_k[, n_candidates]]])``."""
    return isinstance(value, tuple) and 2 <= len(value) <= 5 and value[0] == ITEMSETS \
        and not isinstance(value[1], str | bytes)


class ItemsetEncoderMixin:
    """Fitting and encoding an itemset column (see the module docstring)."""

    def _itemsets_mode(self):
        """Whether ``categories`` declares an itemset column."""
        return isinstance(self.categories, Mapping) and any(
            is_itemset_declaration(value) for value in self.categories.values())

    def _fitted_itemsets(self):
        """Whether the fitted mechanism is the itemset round of :meth:`_fit_itemsets`."""
        plan = getattr(self, "_itemset_plan", None)
        return plan is not None and plan.mechanism is getattr(self, "mechanism_", None)

    def _itemset_declaration(self):
        """``(column, items, max_set_size, top_k, n_candidates)`` of the declaration, or a
        ValueError."""
        if len(self.categories) != 1:
            raise ValueError(f"an itemset column is reported alone, got the columns "
                             f"{list(self.categories)!r}: use one LDPEncoder per column.")
        (column, declaration), = self.categories.items()
        items = declaration[1]
        if not hasattr(items, "__len__") or len(items) < 2:
            raise ValueError(f"categories[{column!r}] = ('itemsets', items, ...): items must "
                             f"list at least 2 possible items, got {str(items)[:60]!r}.")
        items = list(items)
        index = pd.Index(items)
        if index.has_duplicates:
            raise ValueError(f"categories[{column!r}]: the item "
                             f"{index[index.duplicated()][0]!r} is listed twice.")
        if index.hasnans:
            raise ValueError(f"categories[{column!r}]: an item is missing (None/NaN).")
        cap = declaration[2] if len(declaration) >= 3 else min(len(items), MAX_SET_SIZE)
        top_k = check_top_k(declaration[3] if len(declaration) >= 4 else DEFAULT_TOP_K,
                            f"top_k of column {column!r}")
        n_candidates = check_n_candidates(declaration[4] if len(declaration) == 5 else None,
                                          top_k, f"n_candidates of column {column!r}")
        return (column, items, check_size_cap(cap, f"max_set_size of column {column!r}"),
                top_k, n_candidates)

    def _fit_itemsets(self, X, epsilon):
        """``fit`` for an itemset column: the rounds before the itemset round, on ``X``."""
        column, items, cap, top_k, n_candidates = self._itemset_declaration()
        if not isinstance(self.strategy, str) or self.strategy not in ITEMSET_STRATEGIES:
            raise ValueError(f"an 'itemsets' column is reported by strategy 'svsm' (or "
                             f"'auto'), got strategy={self.strategy!r}.")
        if self.oracle not in ("auto", "grr", "olh"):
            raise ValueError(f"oracle must be one of ('auto', 'grr', 'olh') for an 'itemsets' "
                             f"column, got {self.oracle!r}.")
        for name, default in (("bounds", None), ("workload", None), ("handle_unknown", "error"),
                              ("handle_missing", "error")):
            if getattr(self, name) != default:
                raise ValueError(f"{name}={getattr(self, name)!r} does not apply to the "
                                 f"itemset column {column!r}; leave {name}={default!r}.")
        if X is None:
            raise ValueError(f"an 'itemsets' column ({column!r}) is fitted on the users' sets: "
                             "the first rounds choose the candidate itemsets the last one "
                             "reports (call fit(X) or fit_transform(X)).")
        protocol = FrequentItemsets(len(items), cap, epsilon, top_k, self.oracle, items,
                                    n_candidates)
        records = _flat_sets(self._set_cells(X, column, reset=True), items, column, cap)
        rng = np.random.default_rng(self._random_state())
        plan = protocol.plan(records, rng)
        self._itemset_protocol, self._itemset_plan = protocol, plan
        self._itemset_data = (_digest(records), plan.groups["itemsets"])
        mechanism = plan.mechanism
        labels = pd.Index([items[code] for code in plan.item_candidates], name="item")
        n_items = max(plan.n_item_reports, 1)
        self.item_frequencies_ = pd.DataFrame(
            {"frequency": plan.item_counts / n_items,
             "std_error": plan.item_std_errors / n_items}, index=labels)
        self.frequent_items_ = [items[code] for code in plan.frequent_items]
        self.candidate_itemsets_ = list(mechanism.items)
        self.item_pad_length_ = int(plan.item_pad_length)
        self.pad_length_ = int(mechanism.pad_length)
        self._one_column_attributes(X, column, mechanism, "svsm", mechanism.epsilon,
                                    mechanism.per_user_variance(),
                                    f"count of one {column} itemset", rng)
        return self

    def _transform_itemsets(self, X):
        """The itemset round's reports of ``X``'s users (on fit's data: its itemset group)."""
        protocol, plan = self._itemset_protocol, self._itemset_plan
        column = self.feature_names_in_[0]
        records = _flat_sets(self._set_cells(X, column), protocol.items, column,
                             protocol.max_set_size)
        if _digest(records) == self._itemset_data[0]:
            keep = np.zeros(records.lengths.size, dtype=bool)
            keep[self._itemset_data[1]] = True  # the others reported in fit's rounds
            records = _select_users(records, keep)
        # One charge per collection: every user reports once, in one round (as for "sets",
        # fit's rounds and this one are one epsilon-LDP collection of disjoint users).
        self._charge_collection(records.lengths.size, "transform")
        return self.mechanism_.randomize(protocol.itemset_records(plan, records),
                                         self._generator())

    def _itemset_client_spec(self):
        """The itemset round's specification for devices (``client_spec``): the candidates
        by their items' labels, the ``"itemsets"`` kind of the clients."""
        protocol = self._itemset_protocol
        return itemset_round_spec(protocol.items, protocol.max_set_size,
                                  self.mechanism_.items, self.mechanism_)
