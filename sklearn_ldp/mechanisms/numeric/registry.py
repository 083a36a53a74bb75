"""The numeric kinds by name: build one, or rebuild one from its specification (a ValueError
names a bad field)."""

from ..._validation import did_you_mean
from .base import (
    NUMERIC_MECHANISMS,
    SPEC_VERSION,
    _check_grid_spec,
)
from .means import MEAN_MECHANISMS, SampledMeanMechanism
from .square_wave import SquareWaveMechanism

NUMERIC_CLASSES = {**MEAN_MECHANISMS, "square_wave": SquareWaveMechanism}
# The params each kind's specification may carry.
_PARAMS = {"duchi": set(), "piecewise": {"grid_size"}, "hybrid": {"grid_size"},
           "square_wave": {"n_bins", "n_buckets", "grid_size"}}


def numeric_mechanism(kind, epsilon, bounds, **params):
    """The numeric mechanism named ``kind`` (one of ``NUMERIC_MECHANISMS``)."""
    if kind not in NUMERIC_CLASSES:
        raise ValueError(f"unknown numeric strategy {kind!r}."
                         f"{did_you_mean(kind, NUMERIC_MECHANISMS)} Choose one of "
                         f"{', '.join(NUMERIC_MECHANISMS)}.")
    return NUMERIC_CLASSES[kind](epsilon, bounds, **params)


def numeric_mechanism_from_dict(spec):
    """Rebuild a numeric mechanism from its ``to_dict()``; a ValueError names a bad field
    (an edited grid included: the grid is re-derived and compared)."""
    if isinstance(spec, dict) and spec.get("mechanism") == SampledMeanMechanism.kind:
        return SampledMeanMechanism.from_dict(spec)
    if not isinstance(spec, dict) or spec.get("mechanism") not in NUMERIC_CLASSES:
        raise ValueError(f"not a numeric mechanism specification (known: "
                         f"{', '.join(NUMERIC_MECHANISMS)}): {str(spec)[:80]!r}.")
    kind = spec["mechanism"]
    if spec.get("version") != SPEC_VERSION:
        raise ValueError(f"unsupported numeric specification version "
                         f"{spec.get('version')!r}; this sklearn_ldp reads {SPEC_VERSION}.")
    params = spec.get("params", {})
    if not isinstance(params, dict) or not set(params) <= _PARAMS[kind]:
        raise ValueError(f"malformed params of the {kind!r} specification: {params!r}.")
    if "epsilon" not in spec or "bounds" not in spec:
        raise ValueError(f"the {kind!r} specification needs 'epsilon' and 'bounds'.")
    mechanism = numeric_mechanism(kind, spec["epsilon"], spec["bounds"], **params)
    _check_grid_spec(spec, mechanism.grid_spec(), kind)
    return mechanism
