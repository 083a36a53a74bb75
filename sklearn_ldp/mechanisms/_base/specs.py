"""Any mechanism a report file, frame or client message may carry, from its specification.

The registry of :mod:`sklearn_ldp.mechanisms._base.mechanism` rebuilds every registered kind
(:func:`~sklearn_ldp.mechanisms.mechanism_from_dict`); :func:`load_mechanism` adds the two
kinds the client randomizers do not know and so are not registered: records of several
columns (``"columns"``, :class:`~sklearn_ldp.mechanisms.multi_attribute.columns.ColumnsMechanism`)
and heavy-hitter values (``"heavy_hitters"``,
:class:`~sklearn_ldp.mechanisms.heavy_hitters.column.HeavyHitterMechanism`).
"""

import json

from ..heavy_hitters.column import HEAVY_HITTERS_KIND, HeavyHitterMechanism
from ..multi_attribute.columns import COLUMNS_KIND, ColumnsMechanism
from ..set_valued.pckv import PCKV_KIND, PCKVGRR
from ..set_valued.pckv_ue import PCKV_UE_KIND, PCKVUE
from ..set_valued.svim import SET_ITEMS_KIND, SetItemMechanism
from .mechanism import mechanism_from_dict


def load_mechanism(spec):
    """Any mechanism a report file or frame may carry, from its specification.

    ``"columns"`` specifications (records of several columns) are rebuilt by
    :meth:`ColumnsMechanism.from_dict`, every other kind by
    :func:`~sklearn_ldp.mechanisms.mechanism_from_dict`.

    Parameters
    ----------
    spec : dict
        A mechanism specification (``to_dict()``).

    Returns
    -------
    Mechanism
        The mechanism it describes.

    Raises
    ------
    ValueError
        If the specification is not valid.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> load_mechanism(RandomizedResponse(3, 1.0).to_dict())
    RandomizedResponse(n_inputs=3, epsilon=1.0)
    """
    if isinstance(spec, dict) and spec.get("mechanism") == COLUMNS_KIND:
        return ColumnsMechanism.from_dict(spec)
    if isinstance(spec, dict) and spec.get("mechanism") == HEAVY_HITTERS_KIND:
        return HeavyHitterMechanism.from_dict(spec)
    if isinstance(spec, dict) and spec.get("mechanism") == SET_ITEMS_KIND:
        return SetItemMechanism.from_dict(spec)
    if isinstance(spec, dict) and spec.get("mechanism") == PCKV_KIND:
        return PCKVGRR.from_dict(spec)
    if isinstance(spec, dict) and spec.get("mechanism") == PCKV_UE_KIND:
        return PCKVUE.from_dict(spec)
    return mechanism_from_dict(spec)


def load_mechanism_json(text):
    """:func:`load_mechanism` of JSON text (a ValueError if it is not JSON)."""
    try:
        spec = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ValueError(f"the mechanism specification is not valid JSON: {exc}") from None
    return load_mechanism(spec)
