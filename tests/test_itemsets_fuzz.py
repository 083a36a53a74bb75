"""Property tests of the itemset (SVSM) loaders and constructors: every input ends accepted or
in a ValueError/TypeError with a message, within the fuzz time limit per case."""

import json

import numpy as np
import pandas as pd
from _fuzzing import FUZZ, mutate, outcome
from hypothesis import given
from hypothesis import strategies as st

from sklearn_ldp import LDPEncoder
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms.set_valued.svsm import (
    FrequentItemsets,
    check_itemset_spec,
    itemset_spec,
)

ITEMS = ["a", "b", "c", "d", "e"]
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                   st.text(max_size=5), st.lists(st.sampled_from(ITEMS + ["z", 1]), max_size=4))
CELLS = st.one_of(st.none(), st.text(max_size=3), st.integers(),
                  st.lists(st.sampled_from(ITEMS + ["z", 1, None]), max_size=6),
                  st.frozensets(st.sampled_from(ITEMS), max_size=4))
SPEC = itemset_spec({"a": 0.5, "b": 0.4, "c": 0.3}, ITEMS, 3, 1.0, top_k=3)


@FUZZ
@given(st.lists(CELLS, min_size=1, max_size=8))
def test_encoder_cells(cells):
    frame = pd.DataFrame({"s": pd.Series(cells, dtype=object)})
    encoder = LDPEncoder(categories={"s": ("itemsets", ITEMS, 3, 2)}, random_state=0)
    fitted = outcome(encoder.fit, frame)
    if fitted is not None:
        reports = outcome(fitted.transform, frame)
        assert reports is None or len(reports) <= len(cells)


@FUZZ
@given(st.data())
def test_specifications(data):
    edited = mutate(json.loads(json.dumps(SPEC)), data, LEAVES)
    outcome(check_itemset_spec, edited)
    outcome(Randomizer, edited)


@FUZZ
@given(st.lists(st.sampled_from(ITEMS + ["z", 0, None, True]), max_size=6))
def test_client_sets(value):
    client = Randomizer(SPEC)
    report = outcome(client.privatize, value)
    if report is not None:
        assert isinstance(report, int) and 0 <= report < SPEC["set_items"]["oracle"]["n_inputs"]


@FUZZ
@given(st.dictionaries(st.sampled_from(ITEMS + ["z", 3]),
                       st.one_of(st.floats(allow_nan=True), st.integers(-5, 5)), max_size=6),
       st.one_of(st.integers(-2, 70), st.floats(), st.none()))
def test_spec_builder(frequencies, top_k):
    spec = outcome(itemset_spec, frequencies, ITEMS, 3, 1.0, top_k)
    if spec is not None:
        check_itemset_spec(json.loads(json.dumps(spec)))


@FUZZ
@given(st.lists(st.lists(st.integers(-2, 7), max_size=4), min_size=1, max_size=30),
       st.integers(-1, 70))
def test_protocol_parameters_and_sets(rows, top_k):
    width = max(len(row) for row in rows)
    padded = np.array([row + [-1] * (width - len(row)) for row in rows], dtype=np.int64)
    protocol = outcome(FrequentItemsets, 6, 3, 1.0, top_k)
    if protocol is not None:
        outcome(protocol.run, padded, np.random.default_rng(0))
