"""Parity workloads (Fourier / Hadamard characters of binary attributes)."""

import itertools
import math
import numbers

import numpy as np

from .._fwht import fwht, is_power_of_two
from .._validation import check_positive_int, refuse_deep_nesting
from ..domain import Domain, _shorten, as_domain
from .base import _broadcast_stats, _check_query_entries, _Structured


class Parity(_Structured):
    """Parity queries ``(-1)^popcount(mask & u)`` over the ``d`` bits of the flat index,
    answered by one fast Walsh-Hadamard transform (``O(n log n)``).

    Parameters
    ----------
    n_cells : int
        The number of domain cells, ``2**d``.
    masks : array-like of int
        One bit mask per query, in ``[1, n_cells)``: the attributes whose parity it takes.
    bit_names : sequence of str
        The ``d`` attribute names, most significant bit first (used in the labels).
    domain : Domain, mapping or int, optional
        The domain (its size must be ``n_cells``).
    name : str, default="parity"
        A short name of the workload family.

    Raises
    ------
    ValueError
        If ``n`` is not ``2 ** len(bit_names)``, ``bit_names`` is not a sequence of strings,
        or ``masks`` is not a non-empty 1-D array of integers in ``[1, n)`` (mask 0 would be
        the total, not a parity; a mask ``>= n`` names bits the domain does not have).

    See Also
    --------
    parity : The builder of this workload from a binary domain.

    Examples
    --------
    >>> W = Parity(4, masks=[2, 1, 3], bit_names=["a", "b"])
    >>> W.labels.tolist()
    ['parity(a)', 'parity(b)', 'parity(a, b)']
    >>> W @ [1, 0, 0, 0]
    array([1., 1., 1.])
    """

    def __init__(self, n_cells, masks, bit_names, domain=None, name="parity"):
        # The one validation of parity workloads: direct construction and spec loading
        # (_from_spec, which reads these from a possibly tampered file) both go through it.
        n = check_positive_int(n_cells, "Parity: n_cells")
        if isinstance(bit_names, str | bytes | dict | set | frozenset) or not hasattr(
                bit_names, "__iter__"):
            raise ValueError(f"Parity: bit_names must be a sequence of strings (one per bit, "
                             f"most significant first), got {bit_names!r:.80}.")
        bit_names = list(bit_names)
        if not all(isinstance(b, str) for b in bit_names):
            raise ValueError(f"Parity: bit_names must be strings, got {_shorten(bit_names)}.")
        if n != 2 ** len(bit_names):
            raise ValueError(f"Parity: n = {n} cells must be 2 ** len(bit_names) (one bit name "
                             f"per bit of the flat index), got {len(bit_names)} bit_names "
                             f"{_shorten(bit_names)}.")
        masks = np.asarray(masks)
        if masks.ndim != 1 or masks.size == 0 or masks.dtype.kind not in "iu":
            raise ValueError(f"Parity: masks must be a non-empty 1-D array of integers, got "
                             f"{masks!r}.")
        bad = (masks < 1) | (masks >= n)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"Parity: masks must be integers in [1, {n}) (a non-empty set of the "
                f"{len(bit_names)} bits; 0 would be the total); masks[{i}] is {masks[i]} "
                f"({int(bad.sum())} such masks).")
        self.masks = masks.astype(np.int64)
        self.bit_names = bit_names
        self._setup(self.masks.shape[0], n, domain, name)

    def _matvec(self, X):
        return fwht(X, axis=0)[self.masks]

    def _rmatvec(self, Y):
        spread = np.zeros((self.n_cells, Y.shape[1]))
        np.add.at(spread, self.masks, Y)
        return fwht(spread, axis=0)  # H is symmetric

    def column_sq_norms(self):
        return np.full(self.n_cells, float(self.n_queries))

    def _query_stats(self):
        return _broadcast_stats(self.n_queries, self.n_cells, 0.0, -1.0, 1.0)

    def _make_labels(self):
        d = len(self.bit_names)
        return ["parity(" + ", ".join(self.bit_names[j] for j in range(d)
                                      if (int(m) >> (d - 1 - j)) & 1) + ")"
                for m in self.masks]

    def _spec(self):
        return ({"kind": "parity", "n": self.n_cells, "bit_names": self.bit_names},
                {"masks": self.masks})


# ---------------------------------------------------------------------- builder
@refuse_deep_nesting
def parity(domain, k=None):
    """Parity queries over binary attributes (Fourier / Hadamard characters).

    Parameters
    ----------
    domain : Domain, mapping or int
        Every column must have exactly 2 categories, or an int ``n`` that is a power of two
        (the attributes are then the bits of the flat index).
    k : int, optional
        Largest subset size; default all ``d`` attributes.

    Returns
    -------
    Workload
        For every subset S of attributes with ``1 <= |S| <= k`` (by size, then
        ``itertools.combinations`` order), the row ``(-1)^popcount(mask(S) & u)`` over flat
        indices ``u``, where attribute ``j`` is bit ``d-1-j`` of ``u`` (first column = most
        significant bit), answered by a fast Walsh-Hadamard transform. Labels
        ``"parity(age, smoker)"``; for an int domain the attributes are named ``bit{i}``
        after their place value ``2**i``.

    See Also
    --------
    marginals : Marginal counts; on binary attributes the ``k``-way marginals are linear
        combinations of the total and the parities of at most ``k`` attributes.
    Parity : The class of the result.

    Examples
    --------
    >>> parity({"a": [0, 1], "b": [0, 1]}).toarray()
    array([[ 1.,  1., -1., -1.],
           [ 1., -1.,  1., -1.],
           [ 1., -1., -1.,  1.]])
    """
    if isinstance(domain, numbers.Integral) and not isinstance(domain, bool):
        n = check_positive_int(domain, "domain (a number of cells)", minimum=2)
        if not is_power_of_two(n):
            raise ValueError(
                f"parity: an int domain must be a power of two (bits of the flat index), "
                f"got {n}."
            )
        d = n.bit_length() - 1
        names = [f"bit{d - 1 - j}" for j in range(d)]
        domain = Domain.from_size(n)
    else:
        domain = as_domain(domain)
        not_binary = [c for c, s in zip(domain.columns, domain.shape, strict=True) if s != 2]
        if not_binary:
            raise ValueError(
                f"parity needs binary attributes (exactly 2 categories each); column(s) "
                f"{not_binary!r} are not binary. Use marginals(...) for non-binary attributes."
            )
        d = domain.n_columns
        names = list(domain.columns)
        n = domain.size
    if k is None:
        k = d
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k <= d:
        raise ValueError(f"parity: k must be an integer in [1, {d}], got {k!r}.")
    n_subsets = sum(math.comb(d, size) for size in range(1, k + 1))
    _check_query_entries(n_subsets, 1, "The query list", "parity")
    masks = np.array([sum(1 << (d - 1 - j) for j in s) for size in range(1, k + 1)
                      for s in itertools.combinations(range(d), size)], dtype=np.int64)
    return Parity(n, masks, names, domain=domain)
