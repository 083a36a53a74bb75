"""Property tests of key-value data: LDPEncoder's cells (PCKV-GRR and PCKV-UE), the
mechanisms' constructors, and the standard-library client on hostile specifications and
records: every input ends accepted or in a ValueError/TypeError with a message, within the
fuzz time limit per case."""

import json

import pandas as pd
import pytest
from _fuzzing import FUZZ, mutate, outcome
from hypothesis import given
from hypothesis import strategies as st

from sklearn_ldp import LDPEncoder
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR
from sklearn_ldp.mechanisms.set_valued.pckv_ue import PCKVUE

KEYS = ["a", "b", "c", "d"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-2**1100, 2**1100),
                   st.floats(allow_nan=True), st.sampled_from([0.5, -1.0, 0.1, 1, 0]),
                   st.text(max_size=3))
KEYS_OR_NOT = st.sampled_from(KEYS + ["z", 1, None])
CELLS = st.one_of(
    st.none(), st.text(max_size=3), st.integers(), st.floats(),
    st.dictionaries(KEYS_OR_NOT, VALUES, max_size=5),
    st.lists(st.tuples(KEYS_OR_NOT, VALUES), max_size=5),
    st.lists(st.lists(st.one_of(KEYS_OR_NOT, VALUES), max_size=3), max_size=3),
    st.frozensets(st.sampled_from(KEYS), max_size=3))


@pytest.mark.parametrize("oracle", ["grr", "ue"])
@FUZZ
@given(cells=st.lists(CELLS, min_size=1, max_size=6))
def test_encoder_key_value_cells(oracle, cells):
    encoder = LDPEncoder(categories={"r": ("key_value", KEYS, 3, 10)}, oracle=oracle,
                         random_state=0).fit()
    reports = outcome(encoder.transform, pd.DataFrame({"r": pd.Series(cells, dtype=object)}))
    if reports is not None:
        assert len(reports) == len(cells)


LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                   st.text(max_size=4), st.lists(st.integers(-3, 5), max_size=5),
                   st.lists(st.text(max_size=2), max_size=5))
ARGUMENTS = st.one_of(st.integers(-2, 8), st.floats(), st.none(), st.text(max_size=2),
                      st.booleans())


@pytest.mark.parametrize("cls", [PCKVGRR, PCKVUE])
@FUZZ
@given(arguments=st.tuples(ARGUMENTS, ARGUMENTS, ARGUMENTS, ARGUMENTS),
       keys=st.one_of(st.none(), LEAVES))
def test_constructors(cls, arguments, keys):
    outcome(cls, *arguments, keys=keys)


@pytest.mark.parametrize("cls", [PCKVGRR, PCKVUE])
@FUZZ
@given(data=st.data(), record=CELLS)
def test_client_on_hostile_specs_and_records(cls, data, record):
    spec = mutate(cls(4, 2, 1.0, value_steps=10, keys=KEYS).to_dict(), data, LEAVES)
    client = outcome(Randomizer, json.loads(json.dumps(spec)))
    if client is not None:
        outcome(client.privatize, record)
