"""k-way marginals under LDP: the family base of the six mechanisms of Kulkarni's thesis, chapter 4.

The mechanisms live in :mod:`.input_perturbation` (``inp_rr``, ``inp_ps``, ``inp_ht``) and
:mod:`.marginal_perturbation` (``marg_rr``, ``marg_ps``, ``marg_ht``), the randomized Fourier sign
that ``inp_ht`` and ``marg_ht`` share in :mod:`.signs`, and the ``inp_em`` baseline in :mod:`.em`.
This module holds what they share: :class:`MarginalMechanism` (attribute sets, codes, the
variance and total variation of a marginal) and :func:`build_marginal_mechanism`.

Every user holds one record over ``d`` attributes (attribute ``i`` has ``r_i = shape[i] >= 2``
categories; the record is the flat C-order cell index of :class:`~sklearn_ldp.domain.Domain`).
One round of collection must answer every marginal over at most ``max_order = k`` attributes.
Attributes are referred to by position (0-based); a marginal is a sorted tuple of positions.

===========  =======================================================  ======================
kind         what one user sends                                       thesis name
===========  =======================================================  ======================
``inp_rr``   symmetric unary encoding of the whole record (``n`` bits)  InpRR
``inp_ps``   k-ary randomized response over the whole domain            InpPS
``inp_ht``   one Fourier coefficient of order <= k, one randomized bit  InpHT (recommended)
``marg_rr``  a sampled k-set and the unary encoding of its cell         MargRR
``marg_ps``  a sampled k-set and randomized response over its cells     MargPS
``marg_ht``  a sampled k-set, one Hadamard coefficient of its marginal  MargHT
``inp_em``   per-attribute randomized response (``eps/d`` each), EM     InpEM (module
                                                                       :mod:`.em`)
===========  =======================================================  ======================

Privacy. Each mechanism is exactly epsilon-LDP:

* ``inp_rr`` / ``marg_rr`` flip every bit of a one-hot vector independently, keeping it with
  ``p = e^{eps/2} / (1 + e^{eps/2})``. Two inputs' one-hot vectors differ in exactly two
  bits, each contributing a probability ratio of at most ``p / (1 - p) = e^{eps/2}``, so the
  ratio of any output is at most ``e^{eps/2} e^{eps/2} = e^eps`` (and no more: eps/2 per bit
  is the largest budget that keeps the pair of bits within eps).
* ``inp_ps`` / ``marg_ps``: randomized response over ``m`` cells, ratio ``p / q = e^eps``.
* ``inp_ht`` / ``marg_ht``: the sampled coefficient (and set) does not depend on the input;
  the bit is kept with ``p = e^eps / (1 + e^eps)``, ratio ``p / (1 - p) = e^eps``.
* Sampling the set for ``marg_*`` is independent of the data, so it multiplies every output
  probability by the same ``1 / K`` (``K = C(d, k)``).

Fourier coefficients (``inp_ht``, ``marg_ht``). Each attribute is binary-coded with
``b_i = ceil(log2 r_i)`` bits, attribute 0 in the most significant bits (for binary attributes
the code is the flat C-order index). For a set of attributes ``A`` with ``k2`` bits in total
and local code ``gamma`` (the concatenated codes, first attribute most significant),
``F[alpha] = sum_eta z[eta] (-1)^popcount(alpha & eta)`` (``F[0] = 1`` for fractions ``z``)
and the coded marginal is ``C[gamma] = 2^-k2 sum_{alpha within A} (-1)^popcount(alpha &
gamma) F[alpha]`` (one fast Walsh-Hadamard transform). Codes that map to no category (a field
``>= r_i``) are structural zeros: their estimated mass is folded evenly onto the ``V`` valid
cells, ``x_c = C[c] + sum_{j invalid} C[j] / V``. That is unbiased (``E C[j] = 0`` off the
support) and, when the cell errors are exchangeable, the best linear unbiased use of the
invalid cells.

Estimates and normalization. Every estimate is of the *fractions* of users per cell. A
sampled quantity (a coefficient, a set) is normalized by the number of users who actually
sampled it (the thesis's Algorithm 2, "debiased mean"): that is the better of the two unbiased
choices (the Horvitz-Thompson normalization by ``N / T`` adds ``(T - 1) F^2 / N`` of variance).
A coefficient or set that no user sampled (probability ``(1 - 1/T)^N``) is taken as
uninformative: coefficient 0, a uniform set table.

Variance (``marginal_variance``). The variance of ``estimate_marginal`` over the mechanism's
randomness, for a *fixed* population of ``N`` users whose marginal over the attributes is
``m`` (the error against those users' own marginal, which is what the total variation in the
benchmarks measures). For users drawn i.i.d. from a distribution ``m`` add ``m (1 - m) / N``.

* ``inp_rr``, ``inp_ps``: exact. A cell of an ``A``-marginal is a group of ``S = n / V_A``
  domain cells, and the per-user variance of the group sum depends only on whether the user is
  in the group: ``Var = (m z_in + (1 - m) z_out) / N`` with ``z`` the exact per-user variance
  of the frequency oracle (:mod:`.support`, including the known-total step of unary encoding).
  For binary attributes and ``inp_ps`` this is the thesis's ``[m P1 (1 - P1) + (1 - m) P0
  (1 - P0)] / (N (p - q)^2)``; for ``inp_rr`` without the known-total step it would be
  ``2^{d-k} e^{eps/2} / (N (e^{eps/2} - 1)^2)``.
* ``marg_rr``, ``marg_ps``: the users of set ``beta`` are a random ``1/K`` of the population;
  to first order (``N_beta = N / K`` users) an i.i.d. sample, so set ``beta``'s estimate has
  variance ``K (m z_in + (1 - m) z_out + m (1 - m)) / N`` (``z`` of the oracle over the
  ``m_beta`` cells of ``beta``, grouped by the ``A``-cell). A lower-order marginal is the equal
  average of the ``J`` sets that contain ``A`` (``1/J^2`` times the sum), and the fixed
  population removes ``m (1 - m) / N`` (the users are split between the sets, not drawn anew).
  For a k-set and binary attributes: ``[e^{eps/2} / (e^{eps/2} - 1)^2 (1 - 2^-k) + m (1 - m)]
  / N_beta - m (1 - m) / N`` for ``marg_rr`` and the thesis's
  ``[q (1 - q) + m (p - q)(1 - p - q)] / (N_beta (p - q)^2) + m (1 - m) / N_beta - m (1 - m)
  / N`` for ``marg_ps``.
* ``inp_ht``, ``marg_ht``: first order in ``1 / n_alpha`` (``n_alpha`` the expected number
  of users per coefficient: ``N / T`` for ``inp_ht``, ``N / (K (2^{k2_beta} - 1))`` per
  containing set for ``marg_ht``, pooled over the sets that contain ``A``). The coefficient
  estimates are then independent with ``v_alpha = (c^2 - F[alpha]^2) / n_alpha``, ``c = 1 /
  (2p - 1)``, and the folded cell ``c`` has variance

      (1 / K^2) sum_{alpha != 0} v_alpha (h_alpha(c) + g_alpha / V)^2  -  m_c (1 - m_c) / N,

  ``K = 2^k2``, ``h_alpha(c) = (-1)^popcount(alpha & c)``, ``g = H 1_invalid`` (``g = 0``
  without structural zeros). The last term is the fixed-population correction (the users are
  split between the coefficients). Without folding and for binary attributes it is the
  thesis's ``2^-2k sum_alpha T (c^2 - F[alpha]^2) / N`` minus ``m (1 - m) / N``. Folding
  adds ``(2/V) (H (v g))_c + sum v g^2 / V^2`` (over ``K^2``), which can lower or raise a
  cell's variance; the tests check it against simulation.

``expected_tv`` is ``0.5 sum_cells sqrt(2/pi) sqrt(Var)`` (Gaussian approximation of every
cell's error). Pure numpy; no scikit-learn here.
"""

import math
from itertools import combinations

import numpy as np

from ..._validation import check_epsilon, check_positive_int, did_you_mean
from .._base.docstrings import shared_sections
from .._base.mechanism import Mechanism, check_type_indices, mechanism_class
from .fourier import attribute_bits

MARGINAL_STRATEGIES = ("inp_rr", "inp_ps", "inp_ht", "marg_rr", "marg_ps", "marg_ht", "inp_em")

# Entries of the (types x coefficients) multinomial block drawn at once by the simulation.
SIMULATION_ENTRIES = 2**22


# Docstring sections every marginal mechanism shares, written once. A class docstring names
# one by a line ``<marginal parameters>`` (the whole Parameters section),
# ``<marginal parameters, sampled sets>``, ``<marginal references: the part of the thesis>``
# or ``<interface and marginal references: the part>`` (the See Also entry of
# MarginalMechanism, then the References), and ``@marginal_docstring`` writes it in
# (:mod:`sklearn_ldp.mechanisms._base.docstrings`).
_PARAMETERS = """\
Parameters
----------
n_inputs : int
    Number of domain cells, ``prod(shape)``.
epsilon : float
    The privacy budget: each user's report is exactly epsilon-LDP.
shape : sequence of int
    Categories of each attribute (each at least 2), in domain (C) order.
max_order : int
    Largest number of attributes of a marginal to answer,
    ``1 <= max_order <= len(shape)``."""
_SAMPLED_SETS = """; every user samples one of the
    ``K = C(len(shape), max_order)`` sets of that many attributes."""
_REFERENCES = """\
.. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
   Differential Privacy", SIGMOD 2018.
.. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
   (local) differential privacy, University of Warwick, {}."""
marginal_docstring = shared_sections({
    "marginal parameters": _PARAMETERS,
    "marginal parameters, sampled sets": _PARAMETERS[:-1] + _SAMPLED_SETS,
    "marginal references": _REFERENCES.format,
    # The last See Also entry of a mechanism, then its References.
    "interface and marginal references": lambda chapter: """\
MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

References
----------
""" + _REFERENCES.format(chapter),
})


def _one_cell(value, n_inputs):
    """One record (a flat cell index) as an int, or the error of ``check_type_indices``."""
    return int(check_type_indices(np.asarray([value]), n_inputs)[0])


def build_marginal_mechanism(name, shape, epsilon, max_order):
    """The marginal mechanism ``name`` (one of ``MARGINAL_STRATEGIES``) over ``shape``.

    Parameters
    ----------
    name : str
    shape : sequence of int
        Categories of each attribute (each >= 2), in domain (C) order.
    epsilon : float
    max_order : int
        Largest number of attributes of a marginal to answer.

    Examples
    --------
    >>> mechanism = build_marginal_mechanism("inp_ht", (2, 2, 2), 1.0, 2)
    >>> mechanism.kind, mechanism.n_inputs, mechanism.n_coefficients
    ('inp_ht', 8, 6)
    """
    if name not in MARGINAL_STRATEGIES:
        raise ValueError(f"unknown marginal strategy {name!r}."
                         f"{did_you_mean(name, MARGINAL_STRATEGIES)} Choose one of "
                         f"{', '.join(MARGINAL_STRATEGIES)}.")
    shape = _check_shape(shape)
    return mechanism_class(name)(math.prod(shape), epsilon, list(shape), max_order)


def _check_shape(shape):
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__len__") or len(shape) == 0:
        raise ValueError(f"shape must be a non-empty sequence of category counts, got {shape!r}.")
    checked = []
    for position, size in enumerate(shape):
        if isinstance(size, (bool, np.bool_)) or not isinstance(size, (int, np.integer)):
            raise ValueError(f"shape[{position}] must be an integer number of categories, got "
                             f"{size!r}.")
        if size < 2:
            raise ValueError(f"attribute at position {position} has {size} categorie(s); every "
                             "attribute of a marginal mechanism needs at least 2 (drop constant "
                             "columns first).")
        checked.append(int(size))
    return tuple(checked)


def _group_variance(oracle, n_cells, group_size):
    """Per-user variance of a sum of ``group_size`` cells of a frequency oracle's estimate.

    Returns ``(z_in, z_out)`` for a user inside / outside the group (by symmetry of the
    oracle these are the only two values), from the oracle's exact ``query_variance``.
    """
    group = np.zeros(n_cells)
    group[:group_size] = 1.0
    z = oracle.query_variance(group[None, :])[0]
    return z[0], z[-1]


@marginal_docstring
class MarginalMechanism(Mechanism):
    """Base class of the marginal mechanisms (see the module docstring).

    One round of collection answers every marginal over at most ``max_order`` attributes:
    :meth:`estimate_marginal` gives the unbiased fractions of users in each cell of a
    marginal, :meth:`marginal_variance` and :meth:`expected_tv` their error, known before
    collecting. This class is abstract: use one of the seven mechanisms (See Also).
    Subclasses implement ``randomize``, ``exact_law``, ``report_validity``, ``aggregate``,
    ``n_reports``, ``estimate_marginal`` and ``_cell_variance``; the methods of the
    :class:`~sklearn_ldp.mechanisms.Mechanism` contract carry their docstrings here and
    there, and a subclass documents only what it adds (its report layout goes in its class
    docstring).

    <marginal parameters>

    Attributes
    ----------
    shape : tuple of int
        Categories of each attribute.
    n_attributes : int
        Number of attributes, ``len(shape)``.
    max_order : int
        Largest number of attributes of an answerable marginal.

    See Also
    --------
    InpHT : One Fourier coefficient per user: the recommended mechanism.
    InpRR : Unary encoding of the whole record.
    InpPS : Randomized response over the whole domain.
    MargRR : A sampled set of attributes, unary encoding of its cell.
    MargPS : A sampled set of attributes, randomized response over its cells.
    MargHT : A sampled set of attributes, one Hadamard coefficient of its marginal.
    InpEM : Per-attribute randomized response and expectation-maximization.
    MarginalEstimator : The scikit-learn estimator built on these mechanisms.

    References
    ----------
    <marginal references: chapter 4>

    Examples
    --------
    Predicted error before collecting: the expected total variation of a 2-way marginal
    over three binary attributes, for 10000 users at ``e^eps = 3``.

    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import InpHT, InpRR, MargPS
    >>> for cls in (InpHT, MargPS, InpRR):
    ...     mechanism = cls(8, np.log(3), [2, 2, 2], max_order=2)
    ...     print(mechanism.kind, round(mechanism.expected_tv((0, 1), n_users=10000), 3))
    inp_ht 0.033
    marg_ps 0.035
    inp_rr 0.035

    Collecting and estimating with InpHT (the records are flat cell indices):

    >>> mechanism = InpHT(8, np.log(3), [2, 2, 2], max_order=2)
    >>> users = np.repeat(np.arange(8), [3000, 500, 500, 1000, 500, 1000, 500, 3000])
    >>> reports = mechanism.randomize(users, np.random.default_rng(0))
    >>> statistic = mechanism.aggregate(reports)
    >>> mechanism.estimate_marginal(statistic, (0, 1)).round(2).tolist()  # truth .35 .15 / .15 .35
    [[0.33, 0.15], [0.13, 0.38]]
    """

    kind = None

    def __init__(self, n_inputs, epsilon, shape, max_order):
        if self.kind is None:
            raise TypeError("MarginalMechanism is abstract: use one of "
                            f"{', '.join(MARGINAL_STRATEGIES)}.")
        self.epsilon = check_epsilon(epsilon)
        self.shape = _check_shape(shape)
        self.n_attributes = len(self.shape)
        if (isinstance(max_order, (bool, np.bool_)) or not isinstance(max_order, (int, np.integer))
                or not 1 <= max_order <= self.n_attributes):
            raise ValueError(f"max_order must be an integer in [1, {self.n_attributes}] (the "
                             f"number of attributes), got {max_order!r}.")
        self.max_order = int(max_order)
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        if self.n_inputs != math.prod(self.shape):
            raise ValueError(f"n_inputs={self.n_inputs} does not match shape {list(self.shape)} "
                             f"({math.prod(self.shape)} cells).")
        self.name = self.kind
        self.params = {"shape": list(self.shape), "max_order": self.max_order}
        self.attribute_bits = attribute_bits(self.shape)

    # ------------------------------------------------------------------ attribute sets
    def attribute_sets(self, order):
        """All sorted tuples of ``order`` attribute positions, in ``itertools.combinations`` order.

        Parameters
        ----------
        order : int
            The number of attributes per set, in ``[1, n_attributes]``.

        Returns
        -------
        list of tuple of int
            The ``C(n_attributes, order)`` sets of attribute positions.

        Examples
        --------
        >>> build_marginal_mechanism("marg_ps", (2, 3, 2), 1.0, 2).attribute_sets(2)
        [(0, 1), (0, 2), (1, 2)]
        """
        order = check_positive_int(order, "order")
        if order > self.n_attributes:
            raise ValueError(f"order must be at most {self.n_attributes} (the number of "
                             f"attributes), got {order}.")
        return list(combinations(range(self.n_attributes), order))

    def marginal_shape(self, attributes):
        """Shape of the marginal table over ``attributes``.

        Parameters
        ----------
        attributes : tuple of int
            Sorted distinct attribute positions, ``1 <= len <= max_order``.

        Returns
        -------
        tuple of int
            The number of categories of each of those attributes.

        Raises
        ------
        ValueError
            If ``attributes`` is not a valid set of positions.
        """
        return tuple(self.shape[a] for a in self._check_attributes(attributes))

    def _check_attributes(self, attributes):
        if isinstance(attributes, (str, bytes)) or not hasattr(attributes, "__len__"):
            raise ValueError(f"attributes must be a sorted tuple of attribute positions, got "
                             f"{attributes!r}.")
        positions = tuple(attributes)
        for a in positions:
            if isinstance(a, (bool, np.bool_)) or not isinstance(a, (int, np.integer)):
                raise ValueError(f"attribute positions must be integers, got {a!r} in "
                                 f"{attributes!r}.")
        positions = tuple(int(a) for a in positions)
        if not 1 <= len(positions) <= self.max_order:
            raise ValueError(f"a marginal needs 1 to max_order={self.max_order} attributes; got "
                             f"{len(positions)}: {positions}.")
        for a in positions:
            if not 0 <= a < self.n_attributes:
                raise ValueError(f"attribute position {a} is out of range: the domain has "
                                 f"{self.n_attributes} attributes (positions 0 to "
                                 f"{self.n_attributes - 1}).")
        if any(b <= a for a, b in zip(positions, positions[1:], strict=False)):
            raise ValueError(f"attributes must be sorted and distinct, got {positions}; use "
                             f"{tuple(sorted(set(positions)))}.")
        return positions

    def _set_tables(self, sets):
        """Cells of each set's table, and ``strides[s, a]``: the C-order stride of attribute
        ``a`` in set ``s``'s table (0 if ``a`` is not in ``s``)."""
        cells = np.array([math.prod(self.shape[a] for a in members) for members in sets],
                         dtype=np.int64)
        strides = np.zeros((len(sets), self.n_attributes), dtype=np.int64)
        for index, members in enumerate(sets):
            sizes = [self.shape[a] for a in members]
            for j, a in enumerate(members):
                strides[index, a] = math.prod(sizes[j + 1:])
        return cells, strides

    def _containing_sets(self, attributes):
        """The ``max_order``-sets that contain ``attributes`` (indices into the set list)."""
        wanted = set(attributes)
        return [index for index, members in enumerate(self.sets) if wanted <= set(members)]

    def _check_marginal(self, attributes, marginal):
        """The true marginal as a float array of the marginal's shape (uniform for None)."""
        shape = tuple(self.shape[a] for a in attributes)
        if marginal is None:
            return np.full(shape, 1.0 / math.prod(shape))
        table = np.asarray(marginal, dtype=float)
        if table.shape != shape:
            raise ValueError(f"marginal must be a table of shape {shape} (fractions of users "
                             f"per cell of attributes {attributes}), got shape {table.shape}.")
        if not np.all(np.isfinite(table)) or np.any(table < 0):
            raise ValueError("marginal must hold non-negative finite fractions.")
        if abs(table.sum() - 1.0) > 1e-6:
            raise ValueError(f"marginal must hold fractions summing to 1, got {table.sum()!r}.")
        return table

    def _attribute_codes(self, indices):
        """``(position, codes)`` of every attribute, from the last one (one divmod each)."""
        rest = indices
        for position in range(self.n_attributes - 1, -1, -1):
            rest, code = np.divmod(rest, self.shape[position])
            yield position, code

    def _weighted_codes(self, indices, set_index, weights):
        """``sum_a code_a * weights[set_index, a]`` per user (cell or code of its set)."""
        total = np.zeros(indices.shape[0], dtype=np.int64)
        for position, code in self._attribute_codes(indices):
            total += code * weights[set_index, position]
        return total

    # ------------------------------------------------------------------ binary codes
    def _code_layout(self, attributes):
        """Bits and shifts of each attribute in the concatenated code (first = most significant)."""
        bits = [self.attribute_bits[a] for a in attributes]
        shifts = np.cumsum([0] + bits[::-1])[:-1][::-1]
        return bits, [int(s) for s in shifts]

    def _embed_codes(self, codes, inner, outer):
        """Codes over the attributes ``inner`` rewritten as codes over ``outer`` (a superset)."""
        inner_bits, inner_shifts = self._code_layout(inner)
        outer_shifts = dict(zip(outer, self._code_layout(outer)[1], strict=True))
        result = np.zeros_like(codes)
        for a, bits, shift in zip(inner, inner_bits, inner_shifts, strict=True):
            result |= ((codes >> shift) & ((1 << bits) - 1)) << outer_shifts[a]
        return result

    def _valid_codes(self, attributes):
        """Which local codes of ``attributes`` name a cell (others are structural zeros)."""
        bits = [self.attribute_bits[a] for a in attributes]
        valid = np.zeros([2**b for b in bits], dtype=bool)
        valid[tuple(slice(0, self.shape[a]) for a in attributes)] = True
        return valid.ravel()

    def exact_law(self, value):
        """The exact law of one user's report (``P(o) = weights[o] / total``).

        Parameters
        ----------
        value : int
            The user's record, a flat C-order cell in ``[0, n_inputs)``.

        Returns
        -------
        ExactLaw
            The outputs one user can send, encoded as :meth:`randomize` returns them, with
            their integer weights over a common integer total.
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ marginals
    def estimate_marginal(self, statistic, attributes):
        """Unbiased estimate of the fractions of users in each cell of the marginal.

        Parameters
        ----------
        statistic : ndarray
            The output of :meth:`aggregate` (or a sum of several).
        attributes : tuple of int
            Sorted distinct attribute positions, ``1 <= len <= max_order``.

        Returns
        -------
        ndarray of shape ``tuple(shape[a] for a in attributes)``
            The estimated fraction of users in each cell; unbiased, so entries may be
            negative and need not sum to exactly 1 (post-process with
            :func:`~sklearn_ldp.postprocess.consistent_marginals` for distributions).
        """
        raise NotImplementedError

    def marginal_variance(self, attributes, n_users, marginal=None):
        """Per-cell variance of :meth:`estimate_marginal` for ``n_users`` users.

        Parameters
        ----------
        attributes : tuple of int
            Sorted distinct attribute positions, ``1 <= len <= max_order``.
        n_users : int
            The number of users who report.
        marginal : array-like, optional
            The users' true marginal over ``attributes`` (fractions, the table's shape);
            ``None`` uses the uniform marginal (the prediction made before collection).

        Returns
        -------
        ndarray of the marginal's shape
            Variance over the mechanism's randomness for this fixed population (see the module
            docstring for which formulas are exact and which first order).
        """
        attributes = self._check_attributes(attributes)
        n_users = check_positive_int(n_users, "n_users")
        table = self._check_marginal(attributes, marginal)
        return self._cell_variance(attributes, n_users, table)

    def _cell_variance(self, attributes, n_users, table):
        raise NotImplementedError

    def total_variance(self, attributes, n_users):
        """Summed cell variance of a marginal's table of fractions at the two extreme data.

        The summed variance depends on the data only through ``sum m^2`` for every strategy
        except the Hadamard ones with a category count that is not a power of two, so the
        larger of its values for users spread uniformly and for every user in one cell (all
        cells give the same value) is its maximum over all data; for ``inp_ht`` /
        ``marg_ht`` with such categories the maximum found by numerical search was at most
        0.065 % above it (shapes up to 5 x 6 x 7).

        Parameters
        ----------
        attributes, n_users : tuple of int, int
            The marginal and the number of users, as for :meth:`marginal_variance`.

        Returns
        -------
        worst, uniform, point : float
            The larger of the two, then the summed variance for uniform data and for every
            user in one cell.

        Examples
        --------
        >>> mechanism = build_marginal_mechanism("marg_ps", (2, 3, 2), 1.0, 2)
        >>> worst, uniform, point = mechanism.total_variance((0, 1), 1000)
        >>> worst == max(uniform, point)
        True
        """
        uniform = float(np.sum(self.marginal_variance(attributes, n_users)))
        one_cell = np.zeros(self.marginal_shape(attributes))
        one_cell.flat[0] = 1.0
        point = float(np.sum(self.marginal_variance(attributes, n_users, marginal=one_cell)))
        return max(uniform, point), uniform, point

    def expected_tv(self, attributes, n_users, marginal=None):
        """Predicted expected total variation ``0.5 sum sqrt(2/pi) sqrt(Var)`` of the marginal.

        A Gaussian approximation of each cell's error, from :meth:`marginal_variance`.

        Parameters
        ----------
        attributes, n_users, marginal : tuple of int, int, array-like or None
            The marginal, the number of users and their true marginal (``None``: uniform),
            as for :meth:`marginal_variance`.

        Returns
        -------
        float
            The predicted expected total variation distance between the estimated and the
            true marginal, in ``[0, 1]`` for errors that are not too large.

        Examples
        --------
        >>> mechanism = build_marginal_mechanism("inp_ht", (2,) * 8, np.log(3), 5)
        >>> round(mechanism.expected_tv((0, 1, 2, 3, 4), 2**18), 3)  # thesis Fig 4.4: 0.125
        0.128
        """
        variance = self.marginal_variance(attributes, n_users, marginal)
        return float(0.5 * np.sqrt(2.0 / np.pi) * np.sqrt(np.maximum(variance, 0.0)).sum())


class _MarginalsOnlyMechanism(MarginalMechanism):
    """Base of the mechanisms that estimate marginals only, not the users per domain cell.

    All but ``InpRR`` and ``InpPS`` (which randomize the whole record through a frequency
    oracle): their reports sample a part of the record (a coefficient, a set of attributes)
    or decode only through the marginal tables, so :meth:`estimate` and the per-cell
    variances refuse, naming the per-marginal methods to use instead.
    """

    def _refuse(self, what, instead):
        raise NotImplementedError(
            f"the {self.name!r} mechanism {what}: use {instead} or MarginalEstimator.")

    def estimate(self, statistic):
        """Not available: use :meth:`estimate_marginal`.

        Parameters
        ----------
        statistic : ndarray
            The output of :meth:`aggregate`.

        Raises
        ------
        NotImplementedError
            Always: these mechanisms estimate marginals, not the users per domain cell.
        """
        self._refuse("estimates marginals, not the users per domain cell",
                     "estimate_marginal(statistic, attributes)")

    def per_user_variance(self, gram):
        """Not available: use :meth:`marginal_variance`.

        Parameters
        ----------
        gram : Gram, workload or ndarray
            ``W^T W`` for a workload (unused).

        Raises
        ------
        NotImplementedError
            Always: these mechanisms have per-marginal variances only.
        """
        self._refuse("has per-marginal variances only", "marginal_variance(attributes, n_users)")

    def query_variance(self, workload_matrix):
        """Not available either (as :meth:`per_user_variance`): no per-query variance.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries (unused).

        Raises
        ------
        NotImplementedError
            Always; :meth:`marginal_variance` gives the variance of each marginal's cells.
        """
        self.per_user_variance(None)
