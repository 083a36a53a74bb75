"""``RANDOMIZERS``: every kind this client rebuilds, by its specification name.
"""

from .bassily import _gaussian, _gaussian_pure
from .columns import _columns
from .heavy_hitters import _prefix_heavy_hitters, _sketch
from .histogram_encoding import _she, _the
from .itemsets import _itemsets
from .key_value import _pckv_grr, _pckv_ue
from .longitudinal import _dbitflip_pm, _longitudinal, _one_bit_mean_pm
from .marginals import _inp_em, _inp_ht, _inp_ps, _inp_rr, _marg_ht, _marg_ps, _marg_rr
from .multi_attribute import _multi_attribute
from .multi_range import _multi_range
from .numeric import _mean_kind, _sampled_mean, _square_wave
from .oracles import ORACLE_KINDS
from .ranges import _factorization, _haar, _hierarchical
from .rappor import _bloom_rappor
from .set_valued import _set_items

RANDOMIZERS = {
    **ORACLE_KINDS,
    "factorization": _factorization,
    "hierarchical": _hierarchical,
    "haar": _haar,
    "gaussian": _gaussian,
    "gaussian_pure": _gaussian_pure,
    "inp_rr": _inp_rr,
    "inp_ps": _inp_ps,
    "inp_ht": _inp_ht,
    "inp_em": _inp_em,
    "marg_rr": _marg_rr,
    "marg_ps": _marg_ps,
    "marg_ht": _marg_ht,
    # Kinds of the math layer (sklearn_ldp.mechanisms.numeric, multi_attribute,
    # heavy_hitters, longitudinal) and the "columns" records of LDPEncoder: not registered
    # Mechanism classes on the server, but randomized on devices all the same.
    "duchi": _mean_kind,
    "piecewise": _mean_kind,
    "hybrid": _mean_kind,
    "square_wave": _square_wave,
    "sampled_mean": _sampled_mean,
    "multi_attribute": _multi_attribute,
    "columns": _columns,
    "prefix_heavy_hitters": _prefix_heavy_hitters,
    "sketch": _sketch,
    "longitudinal": _longitudinal,
    "dbitflip_pm": _dbitflip_pm,
    "1bitmean_pm": _one_bit_mean_pm,
    "multi_range": _multi_range,
    # Histogram encoding (Wang et al. 2017): noisy one-hot integers, and their threshold.
    "she": _she,
    "the": _the,
    # Set-valued data (SVIM): a set of items per user; key-value pairs (PCKV-GRR).
    "set_items": _set_items,
    "pckv_grr": _pckv_grr,
    "pckv_ue": _pckv_ue,
    "bloom_rappor": _bloom_rappor,
    # Frequent itemsets (SVSM's itemset round): the contained candidates, through set_items.
    "itemsets": _itemsets,
}
