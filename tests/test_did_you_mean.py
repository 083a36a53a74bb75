"""A mistyped strategy name is refused with the closest valid name."""

import pandas as pd
import pytest

from sklearn_ldp import LDPEncoder, LongitudinalEncoder


@pytest.mark.parametrize("params, frame, suggestion", [
    ({"categories": {"a": ["x", "y"]}, "strategy": "hadamrd"}, {"a": ["x", "y"]}, "hadamard"),
    ({"categories": {"a": ["x", "y"]}, "strategy": "subset_selectoin"}, {"a": ["x", "y"]},
     "subset_selection"),
    ({"bounds": {"a": (0, 1)}, "strategy": "piecewse"}, {"a": [0.5]}, "piecewise"),
    ({"bounds": {"a": (0, 1)}, "strategy": {"a": "hybird"}}, {"a": [0.5]}, "hybrid"),
    ({"bounds": {"a": (0, 1), "b": (0, 1)}, "strategy": "hgd"}, {"a": [0.5], "b": [0.5]},
     "hdg"),
])
def test_encoder_suggests_the_closest_strategy(params, frame, suggestion):
    with pytest.raises(ValueError, match=f"Did you mean '{suggestion}'"):
        LDPEncoder(epsilon=1.0, **params).fit(pd.DataFrame(frame))


def test_longitudinal_encoder_suggests_the_closest_strategy():
    with pytest.raises(ValueError, match="Did you mean 'l_grr'"):
        LongitudinalEncoder(categories=["a", "b"], strategy="l_gr").fit()


def test_no_suggestion_when_nothing_is_close():
    with pytest.raises(ValueError) as error:
        LDPEncoder(categories={"a": ["x", "y"]}, strategy="zzzz", epsilon=1.0).fit(
            pd.DataFrame({"a": ["x"]}))
    assert "Did you mean" not in str(error.value)
