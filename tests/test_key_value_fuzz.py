"""Property tests of LDPEncoder's key-value cells: every cell ends accepted (each user one
report) or in a ValueError/TypeError with a message, within the fuzz time limit per case."""

import pandas as pd
from _fuzzing import FUZZ, outcome
from hypothesis import given
from hypothesis import strategies as st

from sklearn_ldp import LDPEncoder

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


@FUZZ
@given(st.lists(CELLS, min_size=1, max_size=6))
def test_encoder_key_value_cells(cells):
    encoder = LDPEncoder(categories={"r": ("key_value", KEYS, 3, 10)}, random_state=0).fit()
    reports = outcome(encoder.transform, pd.DataFrame({"r": pd.Series(cells, dtype=object)}))
    if reports is not None:
        assert len(reports) == len(cells)
