"""k-way marginals under LDP: the six collection mechanisms of Kulkarni's thesis, chapter 4.

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
                                                                       :mod:`.marginal_em`)
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

from ..._fwht import fwht, hadamard_parity
from ..._validation import check_dense_size, check_epsilon, check_positive_int
from .._base.bits import bernoulli_bits, n_packed_bytes
from .._base.counts import report_count
from .._base.exact import (
    TABLE_PRECISION,
    ExactLaw,
    check_law_size,
    integer_ratio_at_most,
    keep_numerator,
    uniform_mixture,
)
from .._base.mechanism import (
    AGGREGATE_CHUNK,
    Mechanism,
    ReportCheck,
    check_output_counts,
    check_type_counts,
    check_type_indices,
    chunks,
    count_outputs,
    index_report_validity,
    mechanism_class,
    register,
    report_dtype,
)
from ..oracles.randomized_response import RandomizedResponse
from ..oracles.unary import SymmetricUnaryEncoding
from .fourier import attribute_bits, cell_bit_strings

MARGINAL_STRATEGIES = ("inp_rr", "inp_ps", "inp_ht", "marg_rr", "marg_ps", "marg_ht", "inp_em")

# Fourier coefficients are int64 masks over the concatenated attribute codes.
MAX_CODE_BITS = 62

# Entries of the (types x coefficients) multinomial block drawn at once by the simulation.
SIMULATION_ENTRIES = 2**22


def sign_numerator(epsilon):
    """``(a, p, debias)`` of the randomized sign of InpHT / MargHT, checked exactly.

    The true sign is kept with probability ``p = a / 2^52``, ``a`` the largest integer with
    ``a / (2^52 - a) <= e^eps`` (:func:`~._exact.keep_numerator`, decided on integers), so
    the realised ratio never exceeds the claim. ``p`` and ``debias = 1 / (2p - 1)`` are the
    realised values (exact float64: ``a < 2^53``), so the estimates stay unbiased for what is
    sampled.

    Examples
    --------
    >>> a, p, debias = sign_numerator(1.0)
    >>> a, round(p, 12), round(debias, 9)
    (3292395142304094, 0.73105857863, 2.163953414)
    """
    one = 2**TABLE_PRECISION
    numerator = keep_numerator(epsilon, 2, TABLE_PRECISION)
    check_sign_numerator(numerator, epsilon)
    return numerator, numerator / one, one / (2 * numerator - one)


def check_sign_numerator(numerator, epsilon, name="the sign's numerator"):
    """Refuse a kept-sign numerator ``a`` unless ``1/2 < a / 2^52 < 1`` and ``a / (2^52 - a)
    <= e^eps``, decided exactly (a ValueError naming the value)."""
    one = 2**TABLE_PRECISION
    if isinstance(numerator, bool) or not isinstance(numerator, (int, np.integer)) \
            or not one // 2 < numerator < one \
            or not integer_ratio_at_most(numerator, one - numerator, epsilon):
        raise ValueError(f"{name} {numerator!r} is not a probability a / 2^{TABLE_PRECISION} "
                         f"in (1/2, 1) with a / (2^{TABLE_PRECISION} - a) <= e^{epsilon!r}.")


def _one_cell(value, n_inputs):
    """One record (a flat cell index) as an int, or the error of ``check_type_indices``."""
    return int(check_type_indices(np.asarray([value]), n_inputs)[0])


def _sign_weights(positive, numerator):
    """Integer weights of the outputs ``2 t + bit`` of the randomized signs of coefficients
    whose true sign is ``positive[t]`` (``+1``): the true bit has weight ``a``, the other
    ``2^52 - a``."""
    kept, flipped = int(numerator), 2**TABLE_PRECISION - int(numerator)
    weights = []
    for plus in np.asarray(positive, dtype=bool).tolist():
        weights += [flipped, kept] if plus else [kept, flipped]
    return weights


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
        raise ValueError(f"unknown marginal strategy {name!r}; choose one of "
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


class MarginalMechanism(Mechanism):
    """Base class of the marginal mechanisms (see the module docstring).

    One round of collection answers every marginal over at most ``max_order`` attributes:
    :meth:`estimate_marginal` gives the unbiased fractions of users in each cell of a
    marginal, :meth:`marginal_variance` and :meth:`expected_tv` their error, known before
    collecting. This class is abstract: use one of the seven mechanisms (See Also).
    Subclasses implement ``randomize``, ``check_reports``, ``aggregate``, ``n_reports``,
    ``estimate_marginal`` and ``_cell_variance``.

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
        ``1 <= max_order <= len(shape)``.

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
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018.
    .. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4.

    Examples
    --------
    Predicted error before collecting: the expected total variation of a 2-way marginal
    over three binary attributes, for 10000 users at ``e^eps = 3``.

    >>> import numpy as np
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

    def _hadamard_table(self, coefficients, attributes):
        """Marginal fractions from the coefficients ``F`` over ``attributes``' codes (folded)."""
        coded = fwht(coefficients) / coefficients.shape[0]
        valid = self._valid_codes(attributes)
        table = coded[valid] + coded[~valid].sum() / valid.sum()
        return table.reshape(tuple(self.shape[a] for a in attributes))

    def _hadamard_variance(self, attributes, n_users, table, users_per_coefficient):
        """Per-cell variance of ``_hadamard_table`` (module docstring; first order)."""
        valid = self._valid_codes(attributes)
        size = valid.shape[0]
        coded = np.zeros(size)
        coded[valid] = table.ravel()
        coefficients = fwht(coded)  # F[alpha] of the true marginal, F[0] = 1
        debias = self.debias  # the realised 1 / (2p - 1) (InpHT and MargHT)
        variances = (debias**2 - coefficients**2) / users_per_coefficient
        variances[0] = 0.0  # F[0] = 1 is known
        folded = fwht((~valid).astype(float))  # g = H 1_invalid
        n_valid = valid.sum()
        cross = fwht(variances * folded)[valid]
        cell = (variances.sum() + 2.0 * cross / n_valid
                + np.sum(variances * folded**2) / n_valid**2) / size**2
        cell = cell - table.ravel() * (1.0 - table.ravel()) / n_users
        return cell.reshape(table.shape)

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

    def expected_tv(self, attributes, n_users, marginal=None):
        """Predicted expected total variation ``0.5 sum sqrt(2/pi) sqrt(Var)`` of the marginal.

        A Gaussian approximation of each cell's error, from :meth:`marginal_variance`.

        Parameters
        ----------
        attributes : tuple of int
            Sorted distinct attribute positions, ``1 <= len <= max_order``.
        n_users : int
            The number of users who report.
        marginal : array-like, optional
            The users' true marginal over ``attributes`` (fractions); ``None`` uses the
            uniform marginal.

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

    # ------------------------------------------------------------------ not per cell
    def estimate(self, statistic):
        """Not available for the sampled mechanisms: use :meth:`estimate_marginal`.

        The mechanisms that randomize the whole record (``InpRR``, ``InpPS``) override it
        with the unbiased users per domain cell.

        Parameters
        ----------
        statistic : ndarray
            The output of :meth:`aggregate`.

        Raises
        ------
        NotImplementedError
            Always: these mechanisms estimate marginals, not the users per domain cell.
        """
        raise NotImplementedError(
            f"the {self.name!r} mechanism estimates marginals, not the users per domain cell: "
            "use estimate_marginal(statistic, attributes) or MarginalEstimator."
        )

    def per_user_variance(self, gram):
        """Not available for the sampled mechanisms: use :meth:`marginal_variance`.

        Parameters
        ----------
        gram : Gram, workload or ndarray
            ``W^T W`` for a workload (unused).

        Raises
        ------
        NotImplementedError
            Always, except for ``InpRR`` and ``InpPS``, which override it.
        """
        raise NotImplementedError(
            f"the {self.name!r} mechanism has per-marginal variances only: use "
            "marginal_variance(attributes, n_users) or MarginalEstimator."
        )

    def query_variance(self, workload_matrix):
        """Not available for the sampled mechanisms: use :meth:`marginal_variance`.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries (unused).

        Raises
        ------
        NotImplementedError
            Always, except for ``InpRR`` and ``InpPS``, which override it.
        """
        self.per_user_variance(None)


class _FullDomainMechanism(MarginalMechanism):
    """A frequency oracle on the full domain; marginals sum its unbiased cell estimates."""

    def _build_oracle(self):
        raise NotImplementedError

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        self.oracle = self._build_oracle()

    def randomize(self, indices, rng):
        return self.oracle.randomize(indices, rng)

    def exact_law(self, value):
        """The exact law of one user's report: the oracle's, over the whole domain.

        Parameters
        ----------
        value : int
            The user's record, a flat C-order cell in ``[0, n_inputs)``.

        Returns
        -------
        ExactLaw
            The oracle's law (its outputs encoded as :meth:`randomize` returns them).
        """
        return self.oracle.exact_law(_one_cell(value, self.n_inputs))

    def report_validity(self, reports):
        """The oracle's valid reports (the whole record goes through it).

        Parameters
        ----------
        reports : array-like
            Reports in the oracle's format (packed bits for InpRR, cell indices for InpPS).

        Returns
        -------
        ReportCheck
            The reports, whether each is valid, and the rule in words.

        Raises
        ------
        ValueError
            If the array's layout is not the oracle's.
        """
        return self.oracle.report_validity(reports)

    def report_influence(self, workload_matrix):
        """The oracle's influence of one report on queries over the domain's cells.

        The marginals are sums of the oracle's cell estimates, divided by ``N``.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            Queries over the domain's cells, one dense row each.

        Returns
        -------
        ReportInfluence
            Per query, the smallest and largest change one valid report makes to the
            unbiased answer (in users), and the reports that attain them.
        """
        return self.oracle.report_influence(workload_matrix)

    def aggregate(self, reports):
        return self.oracle.aggregate(reports)

    def n_reports(self, statistic):
        return self.oracle.n_reports(self.oracle._check_statistic(statistic))

    def estimate(self, statistic):
        """Unbiased users per domain cell (the oracle's estimate).

        Parameters
        ----------
        statistic : array-like of shape (n_inputs + 1,)
            The output of :meth:`aggregate` (support counts, then the number of reports).

        Returns
        -------
        ndarray of shape (n_inputs,)
            Estimated users in each domain cell (unbiased; entries may be negative).
        """
        return self.oracle.estimate(statistic)

    def per_user_variance(self, gram):
        """The oracle's per-user variance of a workload over the domain's cells.

        Parameters
        ----------
        gram : Gram, workload or ndarray of shape (n_inputs, n_inputs)
            ``W^T W`` for the workload ``W``.

        Returns
        -------
        ndarray of shape (n_inputs,)
            ``z_u``: the total variance of the workload's answers (in users) that one user
            of type ``u`` contributes.
        """
        return self.oracle.per_user_variance(gram)

    def query_variance(self, workload_matrix):
        """The oracle's per-user variance of each query for each user type.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries, one dense row each.

        Returns
        -------
        ndarray of shape (n_queries, n_inputs)
            Entry ``[i, u]``: the variance of query ``i``'s answer that one user of type
            ``u`` contributes.
        """
        return self.oracle.query_variance(workload_matrix)

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of ``aggregate(randomize(users))`` (the oracle's simulation).

        Parameters
        ----------
        type_counts : array-like of int of shape (n_inputs,)
            The number of users in each domain cell.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of int64 of shape (n_inputs + 1,)
            Support counts and the number of reports, distributed exactly as
            ``aggregate(randomize(users))``.
        """
        return self.oracle.simulate_statistic(type_counts, rng)

    def strategy_matrix(self):
        """The oracle's ``P(report | record)`` over the whole domain.

        Returns
        -------
        ndarray of shape (n_outputs, n_inputs)
            Column-stochastic: ``2^n`` bit vectors for InpRR, ``n`` cells for InpPS.

        Raises
        ------
        ValueError
            If the dense matrix would exceed the size cap.
        """
        return self.oracle.strategy_matrix()

    def estimate_marginal(self, statistic, attributes):
        attributes = self._check_attributes(attributes)
        n_users = self.n_reports(statistic)
        table_shape = tuple(self.shape[a] for a in attributes)
        if n_users == 0:
            return np.full(table_shape, 1.0 / math.prod(table_shape))
        cells = self.oracle.estimate(statistic).reshape(self.shape) / n_users
        others = tuple(a for a in range(self.n_attributes) if a not in attributes)
        return cells.sum(axis=others)

    def _cell_variance(self, attributes, n_users, table):
        group = self.n_inputs // table.size
        inside, outside = _group_variance(self.oracle, self.n_inputs, group)
        return (table * inside + (1.0 - table) * outside) / n_users


@register
class InpRR(_FullDomainMechanism):
    """InpRR: symmetric unary encoding (basic RAPPOR) of the whole record, ``eps/2`` per bit.

    Reports: packed bit vectors, ``ceil(n / 8)`` bytes per user (``n = prod(shape)``), in the
    layout of ``np.packbits(bits, axis=1, bitorder="little")``; bit ``j`` (flat C-order cell
    ``j``) is 1 with probability ``p = e^{eps/2} / (1 + e^{eps/2})`` if ``j`` is the user's
    cell, else ``q = 1 - p`` (exactly the ``"rappor"`` mechanism, which this composes). Each
    bit uses ``eps/2``: two records differ in two bits, so the total is exactly ``eps``.

    Statistic: the ``"rappor"`` one, ``[C_0, ..., C_{n-1}, N]`` (support counts, reports).

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
        ``1 <= max_order <= len(shape)``.

    See Also
    --------
    SymmetricUnaryEncoding : The frequency oracle it runs on the whole domain.
    MargRR : The same encoding of a sampled set's cell (shorter reports).
    InpHT : Less error with one bit per user.
    MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018.
    .. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4 (InpRR).
    .. [3] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: Randomized aggregatable
       privacy-preserving ordinal response", CCS 2014 (basic RAPPOR).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = InpRR(8, np.log(3), [2, 2, 2], 2)
    >>> reports = mechanism.randomize(np.arange(8), np.random.default_rng(0))
    >>> reports.shape
    (8, 1)
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (0, 2)).shape
    (2, 2)
    """

    kind = "inp_rr"

    def _build_oracle(self):
        oracle = SymmetricUnaryEncoding(self.n_inputs, self.epsilon)
        half = np.exp(self.epsilon / 2)
        if abs(oracle.p - half / (1 + half)) > 1e-12:  # the budget split documented above
            raise RuntimeError("symmetric unary encoding no longer uses eps/2 per bit.")
        return oracle


@register
class InpPS(_FullDomainMechanism):
    """InpPS ("preferential sampling"): k-ary randomized response over the whole domain.

    Reports: one flat C-order cell index per user (the smallest unsigned integer type): the
    user's own cell with probability ``p = e^eps / (e^eps + n - 1)``, each other cell with
    ``q = 1 / (e^eps + n - 1)`` (exactly the ``"randomized_response"`` mechanism).

    Statistic: ``[C_0, ..., C_{n-1}, N]``.

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
        ``1 <= max_order <= len(shape)``.

    See Also
    --------
    RandomizedResponse : The frequency oracle it runs on the whole domain.
    MargPS : The same over a sampled set's cells (much less error on large domains).
    InpHT : One Fourier coefficient per user.
    MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018.
    .. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4 (InpPS).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = InpPS(12, np.log(3), [2, 3, 2], 2)
    >>> reports = mechanism.randomize(np.arange(12), np.random.default_rng(0))
    >>> reports.dtype
    dtype('uint8')
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (1,)).shape
    (3,)
    """

    kind = "inp_ps"

    def _build_oracle(self):
        return RandomizedResponse(self.n_inputs, self.epsilon)


@register
class InpHT(MarginalMechanism):
    """InpHT: one Fourier coefficient of order at most ``max_order``, one randomized bit.

    The recommended marginal mechanism (thesis Algorithms 1-2). Coefficients: the nonzero
    masks over the binary-coded record (module docstring) whose nonzero bits touch 1 to
    ``max_order`` attributes, in the order: by number of attributes, then attribute sets in
    ``itertools.combinations`` order, then the product of each attribute's nonzero masks
    ``1 .. 2^{b_i} - 1`` in C order (``coefficient_masks`` holds them). ``T`` of them.

    Reports: one integer ``o = 2 t + bit`` per user (smallest unsigned integer type): ``t``
    uniform in ``[0, T)``, ``bit = 1`` for ``+1``, the true sign
    ``(-1)^popcount(coefficient_masks[t] & code)`` kept with probability
    ``p = e^eps / (1 + e^eps)``.

    Statistic: the count of each output ``o`` in ``[0, 2T)`` (int64).

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
        ``1 <= max_order <= len(shape)``.

    Attributes
    ----------
    coefficient_masks : ndarray of int64, shape (T,)
        The coefficients, as bit masks over the concatenated attribute codes.
    n_coefficients : int
        ``T``.
    p : float
        The probability of reporting the true sign, ``e^eps / (1 + e^eps)``.

    See Also
    --------
    MargHT : The same idea within a sampled set of attributes.
    fourier_strategy : This mechanism as a dense strategy matrix.
    HadamardRandomizedResponse : One Hadamard coefficient of the whole record.
    MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018.
    .. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4, Algorithms 1-2 (InpHT).
    .. [3] B. Barak, K. Chaudhuri, C. Dwork, S. Kale, F. McSherry and K. Talwar, "Privacy,
       accuracy, and consistency too: a holistic solution to contingency table release",
       PODS 2007 (marginals from low-order Fourier coefficients).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = InpHT(12, np.log(3), [2, 3, 2], 2)
    >>> mechanism.n_coefficients     # 1 + 3 + 1 of order 1, 3 + 1 + 3 of order 2
    12
    >>> reports = mechanism.randomize(np.arange(12), np.random.default_rng(0))
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (0, 1)).shape
    (2, 3)
    """

    kind = "inp_ht"

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        everything = tuple(range(self.n_attributes))
        total_bits = sum(self.attribute_bits)
        if total_bits > MAX_CODE_BITS:
            raise ValueError(f"the binary codes of the record need {total_bits} bits; the "
                             f"Hadamard mechanisms handle at most {MAX_CODE_BITS}.")
        _, self._shifts = self._code_layout(everything)
        masks = []
        for order in range(1, self.max_order + 1):
            for members in combinations(everything, order):
                parts = [np.arange(1, 2 ** self.attribute_bits[a], dtype=np.int64)
                         << self._shifts[a] for a in members]
                grids = np.meshgrid(*parts, indexing="ij")
                masks.append(np.sum(grids, axis=0).ravel())  # disjoint bits: sum = or
        self.coefficient_masks = np.concatenate(masks)
        self.n_coefficients = int(self.coefficient_masks.shape[0])
        self.n_outputs = 2 * self.n_coefficients
        self._mask_order = np.argsort(self.coefficient_masks)
        # Realised p = a / 2^52 (exact) and 1 / (2p - 1): see sign_numerator.
        self.sign_numerator, self.p, self.debias = sign_numerator(self.epsilon)
        self._codes_are_indices = all(2**b == r for b, r in
                                      zip(self.attribute_bits, self.shape, strict=True))

    def _record_codes(self, indices):
        if self._codes_are_indices:
            return indices
        codes = np.zeros_like(indices)
        for position, code in self._attribute_codes(indices):
            codes |= code << self._shifts[position]
        return codes

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """One report ``2 t + bit`` per user (vectorized; see the class docstring).

        Parameters
        ----------
        indices : array-like of int of shape (n_users,)
            Each user's record, as a flat C-order domain cell in ``[0, n_inputs)``.
        rng : numpy.random.Generator
            The source of randomness (seeded for simulations only).

        Returns
        -------
        ndarray of shape (n_users,)
            Each user's output ``2 t + bit`` in ``[0, 2T)``: the sampled coefficient ``t``
            and its randomized sign, in the smallest unsigned integer type that holds them.
        """
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        coefficient = rng.integers(0, self.n_coefficients, size=n_users)  # exact (Lemire)
        flipped = bernoulli_bits(rng, n_users, 2**TABLE_PRECISION - self.sign_numerator)
        parity = hadamard_parity(self.coefficient_masks[coefficient], self._record_codes(indices))
        return (2 * coefficient + (1 ^ parity ^ flipped)).astype(report_dtype(self.n_outputs))

    def exact_law(self, value):
        """The exact law of one user's report (``P(o) = weights[o] / total``).

        Parameters
        ----------
        value : int
            The user's record, a flat C-order cell in ``[0, n_inputs)``.

        Returns
        -------
        ExactLaw
            Outputs ``0 .. 2T - 1`` (as :meth:`randomize` encodes them), weight ``a`` for the
            true sign of each coefficient and ``2^52 - a`` for the other, total ``T 2^52``.

        Examples
        --------
        >>> law = InpHT(4, 1.0, [2, 2], 1).exact_law(3)
        >>> law.outputs.tolist(), law.total == 2 * 2**52
        ([0, 1, 2, 3], True)
        """
        check_law_size(self.n_outputs, self.name)
        code = self._record_codes(np.array([_one_cell(value, self.n_inputs)]))
        positive = hadamard_parity(self.coefficient_masks, code) == 0
        weights = _sign_weights(positive, self.sign_numerator)
        return ExactLaw(np.arange(self.n_outputs).astype(report_dtype(self.n_outputs)), weights,
                        self.n_coefficients * 2**TABLE_PRECISION)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        """Every output index in ``[0, n_outputs)`` is a valid report.

        Parameters
        ----------
        reports : array-like of int of shape (n_reports,)
            One output index per user.

        Returns
        -------
        ReportCheck
            The reports, whether each lies in ``[0, n_outputs)``, and that rule in words.

        Raises
        ------
        ValueError
            If ``reports`` is not a 1-D integer array.
        """
        return index_report_validity(reports, self.n_outputs, self.name)

    def aggregate(self, reports):
        """Count of each output in ``[0, 2T)`` (int64, chunked).

        Parameters
        ----------
        reports : array-like of int of shape (n_reports,)
            One output index per user (:meth:`randomize`).

        Returns
        -------
        ndarray of int64 of shape (2 * n_coefficients,)
            Entry ``2 t + 1`` counts the users who reported ``+1`` for coefficient ``t``,
            entry ``2 t`` those who reported ``-1``.

        Raises
        ------
        ValueError
            If a report lies outside ``[0, 2T)``.
        """
        return count_outputs(self.check_reports(reports), self.n_outputs)

    def n_reports(self, statistic):
        return report_count(check_output_counts(statistic, self.n_outputs, self.name))

    def coefficient_estimates(self, statistic):
        """``F_hat[t]``: the debiased mean sign of the users who sampled coefficient ``t``.

        Parameters
        ----------
        statistic : array-like of shape (2 * n_coefficients,)
            The output of :meth:`aggregate`, or a sum of several.

        Returns
        -------
        ndarray of shape (n_coefficients,)
            ``(plus - minus) / ((plus + minus) (2p - 1))`` per coefficient: an unbiased
            estimate of the Fourier coefficient ``F[coefficient_masks[t]]`` of the users'
            distribution, 0 for a coefficient that no user sampled.
        """
        statistic = check_output_counts(statistic, self.n_outputs, self.name).astype(float)
        plus, minus = statistic[1::2], statistic[0::2]
        return self.debias * (plus - minus) / np.maximum(plus + minus, 1.0)

    def estimate_marginal(self, statistic, attributes):
        attributes = self._check_attributes(attributes)
        estimates = self.coefficient_estimates(statistic)
        local = np.arange(2 ** sum(self.attribute_bits[a] for a in attributes), dtype=np.int64)
        masks = self._embed_codes(local[1:], attributes, tuple(range(self.n_attributes)))
        sorted_masks = self.coefficient_masks[self._mask_order]
        coefficients = np.ones(local.shape[0])
        coefficients[1:] = estimates[self._mask_order[np.searchsorted(sorted_masks, masks)]]
        return self._hadamard_table(coefficients, attributes)

    def _cell_variance(self, attributes, n_users, table):
        return self._hadamard_variance(attributes, n_users, table,
                                       n_users / self.n_coefficients)

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of ``aggregate(randomize(users))`` without one draw per user.

        The users of each type are split over the ``T`` coefficients by one multinomial
        draw (in blocks of types), then each coefficient's true signs go through binomial
        randomized response: ``O(n T)`` work, whatever the number of users.

        Parameters
        ----------
        type_counts : array-like of int of shape (n_inputs,)
            The number of users in each domain cell.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of int64 of shape (n_outputs,)
            Output counts distributed exactly as ``aggregate(randomize(users))``.
        """
        counts = check_type_counts(type_counts, self.n_inputs)
        types = np.flatnonzero(counts)
        true_plus = np.zeros(self.n_coefficients, dtype=np.int64)
        true_minus = np.zeros(self.n_coefficients, dtype=np.int64)
        uniform = np.full(self.n_coefficients, 1.0 / self.n_coefficients)
        block = max(1, SIMULATION_ENTRIES // self.n_coefficients)
        for rows in chunks(types.shape[0], block):
            chosen = types[rows]
            split = rng.multinomial(counts[chosen], uniform)  # (types, T)
            negative = hadamard_parity(self.coefficient_masks[None, :],
                                       self._record_codes(chosen)[:, None]).astype(bool)
            true_minus += np.where(negative, split, 0).sum(axis=0)
            true_plus += np.where(negative, 0, split).sum(axis=0)
        kept_plus = rng.binomial(true_plus, self.p)
        kept_minus = rng.binomial(true_minus, self.p)
        statistic = np.empty(self.n_outputs, dtype=np.int64)
        statistic[1::2] = kept_plus + (true_minus - kept_minus)
        statistic[0::2] = kept_minus + (true_plus - kept_plus)
        return statistic

    def strategy_matrix(self):
        """``P(o | u)``, ``2T x n``: row ``o = 2 t + bit``.

        Returns
        -------
        ndarray of shape (2 * n_coefficients, n_inputs)
            Column-stochastic: entry ``[2 t + bit, u]`` is the probability that a user in
            cell ``u`` reports sign ``bit`` for coefficient ``t``.

        Raises
        ------
        ValueError
            If the dense matrix would exceed the size cap.
        """
        check_dense_size(self.n_outputs, self.n_inputs, self.name)
        codes = cell_bit_strings(self.shape, self._shifts)
        positive = hadamard_parity(self.coefficient_masks[:, None], codes[None, :]) == 0
        Q = np.empty((self.n_outputs, self.n_inputs))
        Q[1::2] = np.where(positive, self.p, 1.0 - self.p) / self.n_coefficients
        Q[0::2] = 1.0 / self.n_coefficients - Q[1::2]
        return Q


class _SampledSetMechanism(MarginalMechanism):
    """Base of MargRR / MargPS / MargHT: every user samples one ``max_order``-set uniformly."""

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        self.sets = self.attribute_sets(self.max_order)
        self.n_sets = len(self.sets)
        self.set_cells, self._strides = self._set_tables(self.sets)

    def _set_table_axes(self, index, attributes):
        """Axes of set ``index``'s table that are not in ``attributes`` (summed out)."""
        return tuple(j for j, a in enumerate(self.sets[index]) if a not in attributes)

    def _users_per_set_cell(self, type_counts, rng, weights, offsets):
        """Exact split of the users over the sets they sample, counted per cell of each set.

        Every type's users are spread over the ``K`` sets by one multinomial draw (in blocks
        of types); a user of type ``u`` who samples set ``s`` lands on position
        ``offsets[s] + sum_a code_a(u) weights[s, a]`` (its cell or its code in ``s``).
        """
        counts = check_type_counts(type_counts, self.n_inputs)
        types = np.flatnonzero(counts)
        uniform = np.full(self.n_sets, 1.0 / self.n_sets)
        every_set = np.arange(self.n_sets)
        result = np.zeros(int(offsets[-1]), dtype=np.int64)
        for rows in chunks(types.shape[0], max(1, SIMULATION_ENTRIES // self.n_sets)):
            chosen = types[rows]
            split = rng.multinomial(counts[chosen], uniform)  # (types, K)
            positions = offsets[every_set][None, :] + self._weighted_codes(
                np.repeat(chosen, self.n_sets), np.tile(every_set, chosen.shape[0]),
                weights).reshape(chosen.shape[0], self.n_sets)
            result += np.bincount(positions.ravel(), weights=split.ravel(),
                                  minlength=result.shape[0]).astype(np.int64)
        return result


class _SetOracleMechanism(_SampledSetMechanism):
    """MargRR / MargPS: a frequency oracle over the cells of the sampled set."""

    def _oracle_class(self, n_cells, epsilon):
        raise NotImplementedError

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        self.oracles = {int(size): self._oracle_class(int(size), self.epsilon)
                        for size in np.unique(self.set_cells)}
        self.cell_offsets = np.concatenate([[0], np.cumsum(self.set_cells)]).astype(np.int64)

    def _sample(self, indices, rng):
        """Sampled set of every user and the user's cell in it."""
        indices = check_type_indices(indices, self.n_inputs)
        chosen = rng.integers(0, self.n_sets, size=indices.shape[0])
        return chosen, self._weighted_codes(indices, chosen, self._strides)

    def _set_counts(self, statistic):
        """``(support counts per set cell (concatenated), reports per set)``."""
        raise NotImplementedError

    def _set_outputs(self, index, outputs):
        """The oracle outputs of set ``index`` encoded as this mechanism's reports."""
        raise NotImplementedError

    def exact_law(self, value):
        """The exact law of one user's report: a uniform set (``1 / K``, independent of the
        record), then the set's oracle law of the record's cell in it.

        Parameters
        ----------
        value : int
            The user's record, a flat C-order cell in ``[0, n_inputs)``.

        Returns
        -------
        ExactLaw
            Every set's outputs, in set order, encoded as :meth:`randomize` encodes them.
        """
        cell = np.array([_one_cell(value, self.n_inputs)])
        laws, outputs = [], []
        for index in range(self.n_sets):
            local = int(self._weighted_codes(cell, np.array([index]), self._strides)[0])
            law = self.oracles[int(self.set_cells[index])].exact_law(local)
            laws.append(law)
            outputs.append(self._set_outputs(index, np.asarray(law.outputs)))
        check_law_size(sum(len(law.weights) for law in laws), self.name)
        return uniform_mixture(laws, np.concatenate(outputs))

    def _statistic_from(self, support, per_set):
        """The statistic from support counts per set cell and reports per set."""
        raise NotImplementedError

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of ``aggregate(randomize(users))`` without one draw per user.

        The users are split over the sets exactly (one multinomial per type), then each
        set's users go through its oracle's exact simulation: ``O(n K)`` work plus the
        oracles' (one call per set), whatever the number of users.

        Parameters
        ----------
        type_counts : array-like of int of shape (n_inputs,)
            The number of users in each domain cell.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of int64
            A statistic in :meth:`aggregate`'s layout, distributed exactly as
            ``aggregate(randomize(users))``.
        """
        cell_counts = self._users_per_set_cell(type_counts, rng, self._strides,
                                               self.cell_offsets)
        support = np.zeros_like(cell_counts)
        per_set = np.zeros(self.n_sets, dtype=np.int64)
        for index in range(self.n_sets):
            cells = slice(self.cell_offsets[index], self.cell_offsets[index + 1])
            drawn = self.oracles[int(self.set_cells[index])].simulate_statistic(
                cell_counts[cells], rng)
            support[cells], per_set[index] = drawn[:-1], drawn[-1]
        return self._statistic_from(support, per_set)

    def n_reports(self, statistic):
        return report_count(self._set_counts(statistic)[1])

    def set_estimate(self, statistic, index):
        """Unbiased fractions over the cells of set ``index`` (uniform if no user chose it).

        Parameters
        ----------
        statistic : array-like
            The output of :meth:`aggregate`, or a sum of several.
        index : int
            The set's position in ``attribute_sets(max_order)``.

        Returns
        -------
        ndarray of shape ``tuple(shape[a] for a in attribute_sets(max_order)[index])``
            The estimated fraction of the set's users in each cell of its table, from the
            reports of the users who sampled it.
        """
        support, per_set = self._set_counts(statistic)
        size, users = int(self.set_cells[index]), per_set[index]
        shape = tuple(self.shape[a] for a in self.sets[index])
        if users == 0:
            return np.full(shape, 1.0 / size)
        counts = support[self.cell_offsets[index]:self.cell_offsets[index + 1]]
        return (self.oracles[size].estimate(np.append(counts, users)) / users).reshape(shape)

    def estimate_marginal(self, statistic, attributes):
        attributes = self._check_attributes(attributes)
        containing = self._containing_sets(attributes)
        tables = [self.set_estimate(statistic, index).sum(
            axis=self._set_table_axes(index, attributes)) for index in containing]
        return np.mean(tables, axis=0)

    def _cell_variance(self, attributes, n_users, table):
        containing = self._containing_sets(attributes)
        total = np.zeros_like(table)
        for index in containing:
            size = int(self.set_cells[index])
            inside, outside = _group_variance(self.oracles[size], size, size // table.size)
            total += self.n_sets * (table * inside + (1 - table) * outside
                                    + table * (1 - table)) / n_users
        return total / len(containing) ** 2 - table * (1 - table) / n_users

    def strategy_matrix(self):
        """``P(o | u)``: the oracle's matrix of each set, over the user's cell, times ``1/K``.

        Rows: the sets in order, each with its oracle's outputs.

        Returns
        -------
        ndarray of shape (n_outputs, n_inputs)
            Column-stochastic: the probability of each (set, oracle output) for a user in
            each domain cell.
        """
        cells = np.arange(self.n_inputs)
        blocks = []
        for index in range(self.n_sets):
            own = self._weighted_codes(cells, np.full(self.n_inputs, index), self._strides)
            Q = self.oracles[int(self.set_cells[index])].strategy_matrix()
            blocks.append(Q[:, own] / self.n_sets)
        return np.vstack(blocks)


@register
class MargPS(_SetOracleMechanism):
    """MargPS: a sampled ``max_order``-set and randomized response over its cells.

    Reports: one integer per user (smallest unsigned integer type),
    ``o = cell_offsets[s] + y``: ``s`` uniform over the ``K = C(d, max_order)`` sets (in
    ``attribute_sets(max_order)`` order), ``y`` the reported cell of set ``s``'s table (C
    order over the set's attributes): the user's own cell with probability
    ``p = e^eps / (e^eps + m_s - 1)``, each other with ``1 / (e^eps + m_s - 1)``,
    ``m_s = prod(shape[a] for a in s)``; ``cell_offsets`` are the cumulative ``m_s``.

    Statistic: the count of each output (int64, length ``sum_s m_s``).

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
        ``1 <= max_order <= len(shape)``; every user samples one of the
        ``K = C(len(shape), max_order)`` sets of that many attributes.

    See Also
    --------
    InpPS : Randomized response over the whole domain.
    MargRR : Unary encoding of the sampled set's cell.
    MargHT : One Hadamard coefficient of the sampled set's marginal.
    MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018.
    .. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4 (MargPS).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = MargPS(12, np.log(3), [2, 3, 2], 2)
    >>> mechanism.cell_offsets.tolist()
    [0, 6, 10, 16]
    >>> reports = mechanism.randomize(np.arange(12), np.random.default_rng(0))
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (1, 2)).shape
    (3, 2)
    """

    kind = "marg_ps"

    def _oracle_class(self, n_cells, epsilon):
        return RandomizedResponse(n_cells, epsilon)

    def randomize(self, indices, rng):
        chosen, cells = self._sample(indices, rng)
        reports = np.empty(chosen.shape[0], dtype=report_dtype(self.cell_offsets[-1]))
        for size, oracle in self.oracles.items():  # one pass per distinct table size
            users = self.set_cells[chosen] == size
            reports[users] = oracle.randomize(cells[users], rng) + self.cell_offsets[chosen[users]]
        return reports

    def report_validity(self, reports):
        """Every (set, cell) index in ``[0, total cells of the sets)`` is a valid report.

        Parameters
        ----------
        reports : array-like of int of shape (n_reports,)
            One output ``cell_offsets[s] + y`` per user.

        Returns
        -------
        ReportCheck
            The reports, whether each lies in ``[0, cell_offsets[-1])``, and that rule in
            words.

        Raises
        ------
        ValueError
            If ``reports`` is not a 1-D integer array.
        """
        return index_report_validity(reports, int(self.cell_offsets[-1]), self.name)

    def aggregate(self, reports):
        return count_outputs(self.check_reports(reports), int(self.cell_offsets[-1]))

    def _set_counts(self, statistic):
        statistic = check_output_counts(statistic, int(self.cell_offsets[-1]), self.name)
        return statistic, np.add.reduceat(statistic, self.cell_offsets[:-1])

    def _set_outputs(self, index, outputs):
        dtype = report_dtype(self.cell_offsets[-1])
        return (outputs.astype(np.int64) + self.cell_offsets[index]).astype(dtype)

    def _statistic_from(self, support, per_set):
        return support


@register
class MargRR(_SetOracleMechanism):
    """MargRR: a sampled ``max_order``-set and the unary encoding of its cell (``eps/2`` a bit).

    Reports: a 2-D uint8 array, one row per user: the first ``B`` bytes hold the set index
    ``s`` (little-endian, ``B`` the bytes of the smallest unsigned type that holds
    ``K - 1``), the next ``ceil(max_s m_s / 8)`` bytes the ``m_s`` bits of set ``s``'s table
    (C order), packed as ``np.packbits(bits, bitorder="little")`` with the unused bits 0.
    Bit ``j`` is 1 with probability ``p = e^{eps/2} / (1 + e^{eps/2})`` if ``j`` is the
    user's cell, else ``q = 1 - p`` (the ``"rappor"`` mechanism over ``m_s`` cells; eps/2 per
    bit, exactly eps-LDP as two one-hot vectors differ in two bits).

    Statistic: ``sum_s m_s`` support counts (concatenated by set), then ``K`` report counts.

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
        ``1 <= max_order <= len(shape)``; every user samples one of the
        ``K = C(len(shape), max_order)`` sets of that many attributes.

    See Also
    --------
    InpRR : Unary encoding of the whole record.
    MargPS : Randomized response over the sampled set's cells (one integer per user).
    SymmetricUnaryEncoding : The frequency oracle run on each set.
    MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018.
    .. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4 (MargRR).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = MargRR(8, np.log(3), [2, 2, 2], 2)
    >>> reports = mechanism.randomize(np.arange(8), np.random.default_rng(0))
    >>> reports.shape, reports.dtype
    ((8, 2), dtype('uint8'))
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (0,)).shape
    (2,)
    """

    kind = "marg_rr"

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        self._set_bytes = np.dtype(report_dtype(self.n_sets)).itemsize
        self._bit_bytes = n_packed_bytes(int(self.set_cells.max()))
        # used[s]: the bytes of a report of set s with every used bit set.
        bits = np.arange(8 * self._bit_bytes)[None, :] < self.set_cells[:, None]
        self._used_bits = np.packbits(bits, axis=1, bitorder="little")

    def _oracle_class(self, n_cells, epsilon):
        return SymmetricUnaryEncoding(n_cells, epsilon)

    def randomize(self, indices, rng):
        chosen, cells = self._sample(indices, rng)
        reports = np.zeros((chosen.shape[0], self._set_bytes + self._bit_bytes), dtype=np.uint8)
        reports[:, :self._set_bytes] = (chosen[:, None] >> (8 * np.arange(self._set_bytes))) & 255
        for size, oracle in self.oracles.items():
            users = np.flatnonzero(self.set_cells[chosen] == size)
            packed = oracle.randomize(cells[users], rng)
            reports[users, self._set_bytes:self._set_bytes + packed.shape[1]] = packed
        return reports

    def _set_outputs(self, index, outputs):
        rows = np.zeros((outputs.shape[0], self._set_bytes + self._bit_bytes), dtype=np.uint8)
        rows[:, :self._set_bytes] = (index >> (8 * np.arange(self._set_bytes))) & 255
        rows[:, self._set_bytes:self._set_bytes + outputs.shape[1]] = outputs
        return rows

    def _decode_sets(self, reports):
        weights = 256 ** np.arange(self._set_bytes, dtype=np.int64)
        return reports[:, :self._set_bytes].astype(np.int64) @ weights

    def report_validity(self, reports):
        """Valid rows name a set in ``[0, K)`` and set no bit past that set's cells.

        Parameters
        ----------
        reports : ndarray of uint8 of shape (n_reports, n_bytes)
            One row per user: the set index, then the packed bits (class docstring).

        Returns
        -------
        ReportCheck
            The reports, whether each row is valid, and that rule in words.

        Raises
        ------
        ValueError
            If the array is not 2-D uint8 of this mechanism's width (its layout is checked
            before any row).
        """
        reports = np.asarray(reports)
        width = self._set_bytes + self._bit_bytes
        if reports.ndim != 2 or reports.dtype != np.uint8 or reports.shape[1] != width:
            raise ValueError(
                f"reports of the {self.name!r} mechanism are a 2-D uint8 array of shape "
                f"(n_reports, {width}) (set index, then packed bits), got shape "
                f"{reports.shape} and dtype {reports.dtype}: they come from another mechanism "
                "or domain."
            )
        valid = np.empty(reports.shape[0], dtype=bool)
        for rows in chunks(reports.shape[0]):
            chosen = self._decode_sets(reports[rows])
            known = chosen < self.n_sets
            used = self._used_bits[np.where(known, chosen, 0)]
            valid[rows] = known & ~np.any(reports[rows, self._set_bytes:] & ~used, axis=1)
        return ReportCheck(reports, valid,
                           f"rows naming an attribute set in [0, {self.n_sets}) with no bits set "
                           "past their set's cells")

    def aggregate(self, reports):
        reports = self.check_reports(reports)
        total_cells = int(self.cell_offsets[-1])
        support = np.zeros(total_cells, dtype=np.int64)
        per_set = np.zeros(self.n_sets, dtype=np.int64)
        width = int(self.set_cells.max())
        # The unpacked bits take width bytes per report: keep a chunk's temporaries bounded.
        for rows in chunks(reports.shape[0], max(1, AGGREGATE_CHUNK * 8 // width)):
            chosen = self._decode_sets(reports[rows])
            bits = np.unpackbits(reports[rows, self._set_bytes:], axis=1,
                                 bitorder="little")[:, :width].astype(bool)
            positions = self.cell_offsets[chosen][:, None] + np.arange(width)[None, :]
            support += np.bincount(positions[bits], minlength=total_cells)
            per_set += np.bincount(chosen, minlength=self.n_sets)
        return np.concatenate([support, per_set])

    def _set_counts(self, statistic):
        total_cells = int(self.cell_offsets[-1])
        statistic = check_output_counts(statistic, total_cells + self.n_sets, self.name)
        return statistic[:total_cells], statistic[total_cells:]

    def _statistic_from(self, support, per_set):
        return np.concatenate([support, per_set])

    def report_rows(self, reports):
        """Row of :meth:`strategy_matrix` of each report (for tests of the sampler).

        Parameters
        ----------
        reports : ndarray of uint8 of shape (n_reports, n_bytes)
            Valid reports (:meth:`randomize`).

        Returns
        -------
        ndarray of int64 of shape (n_reports,)
            For a report of set ``s`` with bits ``b``: the sum of ``2^{m_r}`` over the sets
            ``r < s`` plus the bits read as a little-endian integer.

        Raises
        ------
        ValueError
            If a report is not valid.
        """
        reports = self.check_reports(reports)
        chosen = self._decode_sets(reports)
        bits = np.unpackbits(reports[:, self._set_bytes:], axis=1, bitorder="little")
        values = bits.astype(np.int64) @ (1 << np.arange(bits.shape[1], dtype=np.int64))
        starts = np.concatenate([[0], np.cumsum(2**self.set_cells)])
        return starts[chosen] + values


@register
class MargHT(_SampledSetMechanism):
    """MargHT: a sampled ``max_order``-set and one Hadamard coefficient of its coded marginal.

    Set ``s`` has ``k2_s`` code bits (its attributes' ``ceil(log2 r_i)``, first attribute most
    significant) and ``2^{k2_s} - 1`` nonzero coefficients ``alpha``. Reports: one integer per
    user (smallest unsigned integer type), ``o = 2 (coefficient_offsets[s] + alpha - 1) +
    bit``: ``s`` uniform over the ``K`` sets, ``alpha`` uniform in ``[1, 2^{k2_s})``,
    ``bit = 1`` for ``+1``, the true sign ``(-1)^popcount(alpha & code_s)`` (``code_s`` the
    user's local code) kept with probability ``p = e^eps / (1 + e^eps)``.
    ``coefficient_offsets`` are the cumulative ``2^{k2_s} - 1``.

    Statistic: the count of each output (int64). A marginal over ``A`` pools, per coefficient
    of ``A``, the reports of every set that contains ``A`` (a weighted average of their
    independent unbiased estimates, by number of users), then folds structural zeros.

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
        ``1 <= max_order <= len(shape)``; every user samples one of the
        ``K = C(len(shape), max_order)`` sets of that many attributes.

    See Also
    --------
    InpHT : One coefficient of the whole record (less error for low orders).
    MargPS : Randomized response over the sampled set's cells.
    MarginalMechanism : The common interface (estimate_marginal, marginal_variance).

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018.
    .. [2] T. Kulkarni, PhD dissertation on marginal, range and count queries under
       (local) differential privacy, University of Warwick, chapter 4 (MargHT).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = MargHT(12, np.log(3), [2, 3, 2], 2)
    >>> mechanism.coefficient_offsets.tolist()
    [0, 7, 10, 17]
    >>> reports = mechanism.randomize(np.arange(12), np.random.default_rng(0))
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (0, 1)).shape
    (2, 3)
    """

    kind = "marg_ht"

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        set_bits = np.array([sum(self.attribute_bits[a] for a in members)
                             for members in self.sets], dtype=np.int64)
        if set_bits.max() > MAX_CODE_BITS:
            raise ValueError(f"a set's binary codes need {set_bits.max()} bits; the Hadamard "
                             f"mechanisms handle at most {MAX_CODE_BITS}.")
        self.set_coefficients = (1 << set_bits) - 1
        self.coefficient_offsets = np.concatenate(
            [[0], np.cumsum(self.set_coefficients)]).astype(np.int64)
        self.n_outputs = 2 * int(self.coefficient_offsets[-1])
        # shifts[s, a] = 2^(local shift of attribute a in set s's code), 0 if a not in s.
        self._shifts = np.zeros((self.n_sets, self.n_attributes), dtype=np.int64)
        for index, members in enumerate(self.sets):
            for a, shift in zip(members, self._code_layout(members)[1], strict=True):
                self._shifts[index, a] = 1 << shift
        self.sign_numerator, self.p, self.debias = sign_numerator(self.epsilon)

    def randomize(self, indices, rng):
        """One report per user (vectorized; see the class docstring).

        Parameters
        ----------
        indices : array-like of int of shape (n_users,)
            Each user's record, as a flat C-order domain cell in ``[0, n_inputs)``.
        rng : numpy.random.Generator
            The source of randomness (seeded for simulations only).

        Returns
        -------
        ndarray of shape (n_users,)
            Each user's output ``2 (coefficient_offsets[s] + alpha - 1) + bit``: the sampled
            set ``s``, coefficient ``alpha`` and randomized sign, in the smallest unsigned
            integer type that holds them.
        """
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        chosen = rng.integers(0, self.n_sets, size=n_users)
        codes = self._weighted_codes(indices, chosen, self._shifts)
        alpha = rng.integers(1, self.set_coefficients[chosen] + 1)  # exact (Lemire)
        flipped = bernoulli_bits(rng, n_users, 2**TABLE_PRECISION - self.sign_numerator)
        bit = 1 ^ hadamard_parity(alpha, codes) ^ flipped
        output = 2 * (self.coefficient_offsets[chosen] + alpha - 1) + bit
        return output.astype(report_dtype(self.n_outputs))

    def exact_law(self, value):
        """The exact law of one user's report (``P(o) = weights[o] / total``).

        A uniform set ``s`` (``1 / K``), a uniform coefficient of it (``1 / (2^{k2_s} -
        1)``), the true sign kept with ``a / 2^52``: integer weights over the common total
        ``K lcm_s(2^{k2_s} - 1) 2^52``.

        Parameters
        ----------
        value : int
            The user's record, a flat C-order cell in ``[0, n_inputs)``.

        Returns
        -------
        ExactLaw
            Outputs ``0 .. n_outputs - 1`` as :meth:`randomize` encodes them.

        Examples
        --------
        >>> law = MargHT(8, 1.0, [2, 2, 2], 2).exact_law(5)
        >>> len(law.weights), sum(law.weights) == law.total
        (18, True)
        """
        check_law_size(self.n_outputs, self.name)
        cell = np.array([_one_cell(value, self.n_inputs)])
        laws = []
        for index in range(self.n_sets):
            code = self._weighted_codes(cell, np.array([index]), self._shifts)
            alpha = np.arange(1, int(self.set_coefficients[index]) + 1, dtype=np.int64)
            positive = hadamard_parity(alpha, code) == 0
            weights = _sign_weights(positive, self.sign_numerator)
            laws.append(ExactLaw(None, weights, alpha.shape[0] * 2**TABLE_PRECISION))
        return uniform_mixture(laws, np.arange(self.n_outputs).astype(
            report_dtype(self.n_outputs)))

    def report_validity(self, reports):
        """Every output index in ``[0, n_outputs)`` is a valid report.

        Parameters
        ----------
        reports : array-like of int of shape (n_reports,)
            One output index per user.

        Returns
        -------
        ReportCheck
            The reports, whether each lies in ``[0, n_outputs)``, and that rule in words.

        Raises
        ------
        ValueError
            If ``reports`` is not a 1-D integer array.
        """
        return index_report_validity(reports, self.n_outputs, self.name)

    def aggregate(self, reports):
        return count_outputs(self.check_reports(reports), self.n_outputs)

    def n_reports(self, statistic):
        return report_count(check_output_counts(statistic, self.n_outputs, self.name))

    def _pooled_signs(self, statistic, attributes):
        """Reported ``+1`` and ``-1`` per coefficient of ``attributes``, over containing sets."""
        statistic = check_output_counts(statistic, self.n_outputs, self.name)
        local = np.arange(1, 2 ** sum(self.attribute_bits[a] for a in attributes),
                          dtype=np.int64)
        plus = np.zeros(local.shape[0] + 1)
        minus = np.zeros(local.shape[0] + 1)
        for index in self._containing_sets(attributes):
            alpha = self._embed_codes(local, attributes, self.sets[index])
            outputs = 2 * (self.coefficient_offsets[index] + alpha - 1)
            plus[1:] += statistic[outputs + 1]
            minus[1:] += statistic[outputs]
        return plus, minus

    def estimate_marginal(self, statistic, attributes):
        attributes = self._check_attributes(attributes)
        plus, minus = self._pooled_signs(statistic, attributes)
        coefficients = self.debias * (plus - minus) / np.maximum(plus + minus, 1)
        coefficients[0] = 1.0
        return self._hadamard_table(coefficients, attributes)

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of ``aggregate(randomize(users))`` without one draw per user.

        The users are split over the sets exactly (one multinomial per type) and counted by
        their local code; each set's users of each code are spread over its nonzero
        coefficients (one multinomial per code), and the true signs go through binomial
        randomized response.

        Parameters
        ----------
        type_counts : array-like of int of shape (n_inputs,)
            The number of users in each domain cell.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of int64 of shape (n_outputs,)
            Output counts distributed exactly as ``aggregate(randomize(users))``.
        """
        code_offsets = np.concatenate([[0], np.cumsum(self.set_coefficients + 1)])
        code_counts = self._users_per_set_cell(type_counts, rng, self._shifts, code_offsets)
        statistic = np.empty(self.n_outputs, dtype=np.int64)
        for index in range(self.n_sets):
            n_alpha = int(self.set_coefficients[index])
            codes = np.arange(n_alpha + 1)
            split = rng.multinomial(code_counts[code_offsets[index]:code_offsets[index + 1]],
                                    np.full(n_alpha, 1.0 / n_alpha))  # (codes, alphas)
            negative = hadamard_parity(codes[1:][None, :], codes[:, None]).astype(bool)
            true_minus = np.where(negative, split, 0).sum(axis=0)
            true_plus = np.where(negative, 0, split).sum(axis=0)
            kept_plus = rng.binomial(true_plus, self.p)
            kept_minus = rng.binomial(true_minus, self.p)
            outputs = 2 * (self.coefficient_offsets[index] + codes[1:] - 1)
            statistic[outputs + 1] = kept_plus + (true_minus - kept_minus)
            statistic[outputs] = kept_minus + (true_plus - kept_plus)
        return statistic

    def _cell_variance(self, attributes, n_users, table):
        containing = self._containing_sets(attributes)
        users = sum(n_users / (self.n_sets * self.set_coefficients[index])
                    for index in containing)
        return self._hadamard_variance(attributes, n_users, table, users)

    def strategy_matrix(self):
        """``P(o | u)``: row ``o = 2 (coefficient_offsets[s] + alpha - 1) + bit``.

        Returns
        -------
        ndarray of shape (n_outputs, n_inputs)
            Column-stochastic: the probability of each output for a user in each cell.

        Raises
        ------
        ValueError
            If the dense matrix would exceed the size cap.
        """
        check_dense_size(self.n_outputs, self.n_inputs, self.name)
        cells = np.arange(self.n_inputs)
        Q = np.empty((self.n_outputs, self.n_inputs))
        for index in range(self.n_sets):
            codes = self._weighted_codes(cells, np.full(self.n_inputs, index), self._shifts)
            alpha = np.arange(1, self.set_coefficients[index] + 1)
            positive = hadamard_parity(alpha[:, None], codes[None, :]) == 0
            scale = self.n_sets * self.set_coefficients[index]
            rows = slice(2 * self.coefficient_offsets[index],
                         2 * self.coefficient_offsets[index + 1])
            plus = np.where(positive, self.p, 1.0 - self.p) / scale
            block = np.empty((2 * alpha.shape[0], self.n_inputs))
            block[1::2], block[0::2] = plus, 1.0 / scale - plus
            Q[rows] = block
        return Q
