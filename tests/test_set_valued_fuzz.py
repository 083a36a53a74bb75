"""Property tests of the set-valued loaders and constructors: every input ends accepted or in
a ValueError/TypeError with a message, within the fuzz time limit per case."""

import json

import numpy as np
import pandas as pd
from _fuzzing import FUZZ, mutate, outcome
from hypothesis import given
from hypothesis import strategies as st

from sklearn_ldp import LDPEncoder
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms._base.specs import load_mechanism
from sklearn_ldp.mechanisms.set_valued.padding import check_sets
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism

ITEMS = ["a", "b", "c", "d"]
LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                   st.text(max_size=5), st.lists(st.integers(-3, 9), max_size=4))
CELLS = st.one_of(st.none(), st.text(max_size=3), st.integers(),
                  st.lists(st.sampled_from(ITEMS + ["z", 1, None]), max_size=6),
                  st.frozensets(st.sampled_from(ITEMS), max_size=4))


@FUZZ
@given(st.lists(CELLS, min_size=1, max_size=6))
def test_encoder_cells(cells):
    encoder = LDPEncoder(categories={"s": ("sets", ITEMS, 3)}, random_state=0).fit()
    reports = outcome(encoder.transform, pd.DataFrame({"s": pd.Series(cells, dtype=object)}))
    if reports is not None:
        assert len(reports) == len(cells)


@FUZZ
@given(st.lists(st.lists(st.integers(-3, 9), min_size=3, max_size=3), min_size=1,
                max_size=5))
def test_padded_rows(rows):
    flat = outcome(check_sets, np.array(rows), 8, 3)
    if flat is not None:
        assert flat.items.size == flat.lengths.sum() and np.all(flat.items < 8)


@FUZZ
@given(st.data())
def test_specifications(data):
    spec = json.loads(json.dumps(SetItemMechanism(4, 2, 1.0, items=ITEMS).to_dict()))
    edited = mutate(spec, data, LEAVES)
    outcome(load_mechanism, edited)
    outcome(Randomizer, edited)


@FUZZ
@given(st.data())
def test_key_value_specifications(data):
    from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR

    spec = json.loads(json.dumps(PCKVGRR(4, 2, 1.0, value_steps=10).to_dict()))
    edited = mutate(spec, data, LEAVES)
    outcome(load_mechanism, edited)
    outcome(Randomizer, edited)


@FUZZ
@given(st.lists(st.tuples(st.integers(-2, 6), st.floats(allow_nan=True)), max_size=4))
def test_key_value_records(pairs):
    from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR

    mechanism = PCKVGRR(4, 2, 1.0, value_steps=10, max_set_size=3)
    keys = np.array([k for k, _ in pairs], dtype=np.int64)
    values = np.array([v for _, v in pairs], dtype=float)
    reports = outcome(mechanism.randomize, (np.array([len(pairs)]), keys, values),
                      np.random.default_rng(0))
    if reports is not None:
        assert reports.shape == (1,) and 0 <= reports[0] < 12
    client = Randomizer(mechanism.to_dict())
    outcome(client.privatize, [list(pair) for pair in pairs])
