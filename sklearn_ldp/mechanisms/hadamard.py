"""Hadamard response (Acharya, Sun, Zhang, AISTATS 2019), general privacy regime.

Strategy. The ``K = B b`` outputs are split into ``B`` blocks of size ``b`` (powers of two,
from :func:`hadamard_shape`). Input ``j`` lives in block ``j // (b - 1)`` at Hadamard column
``c = j % (b - 1) + 1`` (column 0, all ones, is not used). It reports each of the ``b / 2``
outputs ``y`` of its block where ``H_b[y mod b, c] = +1`` (its "favoured" outputs) with
probability ``e^eps / Z`` and every other output with probability ``1 / Z``, where

    Z = (b / 2) e^eps + K - b / 2.

Every output row holds only the values ``e^eps / Z`` and ``1 / Z``, so the strategy is exactly
epsilon-LDP.

Client side, ``O(1)`` per user. A user draws one of three events: a favoured output (probability
``(b/2) e^eps / Z``), one of the ``b / 2`` unfavoured outputs of its own block (``(b/2) / Z``),
or one of the ``K - b`` outputs of the other blocks (``(K - b) / Z``); inside each event the
output is uniform, which gives exactly column ``j`` of the strategy matrix. A uniform output of
the block with a prescribed parity ``popcount(y' & c) mod 2`` is drawn as a uniform
``y'`` in ``[0, b)`` whose parity is then fixed, if wrong, by flipping the lowest set bit of
``c`` in ``y'``: that flip is a bijection between the even and odd halves of ``[0, b)``, so the
result is uniform on the wanted half.

Server side. Decision (not from the paper): the reports are decoded with the optimal linear
decoder of the strategy, ``V* = (Q^T D^-1 Q)^-1 Q^T D^-1`` (see :mod:`.factorization`),
instead of ASZ's block-wise estimator. Measured: on the Prefix workload ASZ's worst-case
variance is 3-25x that of ``V*`` (n = 16, eps = 1: 3.7x; n = 64, eps = 3: 24.7x; n = 1024,
eps = 1: 3.0x), on the Histogram 0.2-45% higher
(``tests/test_hadamard.py::test_optimal_decoder_beats_the_block_estimator``). The decoder,
its estimate and its exact variances are those of the dense
:class:`~.factorization.FactorizationMechanism` on :func:`hadamard_strategy`, computed from
the block-Hadamard structure below without any ``K x n`` or ``n x n`` matrix.

Derivation. Write ``e = e^eps``, ``g = (e - 1) / 2`` (so ``Z = K + b g``) and ``A = Z Q`` (entries
1 and ``e = 1 + 2g``). Block ``beta`` holds ``m`` inputs (``b - 1`` in the full blocks, fewer in
at most one partial block, none in the empty blocks at the end) at columns ``1 .. m``; let
``L = m + 1`` and ``H = I_B (x) H_b`` (one Hadamard matrix per block).

1. Hadamard coordinates. Column ``u`` of ``A`` is ``1_K + g (1_beta + h_c)``, i.e. ``H A~ e_u``
   with ``A~ e_u = sum_beta e_(beta,0) + g e_(beta_u,0) + g e_(beta_u,c_u)``: only the
   ``n + B`` coordinates ``R = {(beta, c): c < L_beta}`` are used, and ``A~`` restricted to
   them, ``E``, is ``g I`` on the input coordinates ``U`` plus ``B`` rows
   ``1 + g [beta_u = beta]``. The row sums are ``a = A 1 = H s`` with
   ``s_beta = nu e_0 + g 1_[1, L)``, ``nu = n + g m``: ``a(y) = nu + g sum_{c=1}^{m} H[y, c]``.
2. With ``Wt = Diag(1/a)``: ``Q^T D^-1 Q = A^T Wt A / Z`` and ``Q^T D^-1 = A^T Wt``, so
   ``x_hat = Z M^-1 E^T y~`` with ``M = E^T Wh E``, ``Wh = (H^T Wt H)`` restricted to ``R``, and
   ``y~ = (H^T Wt y)`` on ``R`` (one FWHT per block).
3. One block. ``H_b Diag(H_b s) H_b = b Conv(s)`` with ``Conv(s)[c, c'] = s(c ^ c')``, so
   ``H_b Wt H_b = b Conv(s)^-1``. Coordinates ``c < b' = 2^ceil(log2 L)`` see only
   ``y mod b'``, so a block folds to size ``b'``. The inverse of the principal submatrix on
   ``[0, L)`` comes from the inverse of the whole, ``Conv(s)``: with ``X = Conv(s)`` and
   ``C = [L, b')``,

       Sigma = (Wh_beta)^-1 = (1/b) (X_RR - X_RC X_CC^-1 X_CR),

   ``X[c, c'] = nu [c = c'] + g [c ^ c' in [1, L)]``. On ``C`` every ``c`` has the top bit of
   ``b'`` (``L > b'/2``), so ``c ^ c' < L`` and ``X_CC = (nu - g) I + g J``: inverted in closed
   form, and ``Sigma v`` costs four FWHTs of size ``b'``. A full block has ``C`` empty:
   ``Sigma = ((nu - g) I + g J) / b``; an empty block ``Sigma = n / b``.
4. The ``B`` coupling rows. ``E^T N = 0`` for the ``B`` columns
   ``N_beta = e_(beta,0) - 1_(U_beta) - 1_U / g``, and ``[E N]`` is square, so
   ``E M^-1 E^T = Pi := Sigma - Sigma N Delta^-1 N^T Sigma`` with ``Delta = N^T Sigma N``; the
   rows ``U`` of ``E`` are ``g I``, hence ``x_hat = (Z / g) (Pi y~)_U``. With the block-local
   ``psi_beta = Sigma (e_0 - 1_U)`` and ``phi = Sigma 1_U``, ``Sigma N = Psi - phi 1^T / g`` and
   ``Delta = Diag(delta) - (t 1^T + 1 t^T) / g + (S / g^2) 1 1^T`` (``delta_beta``, ``t_beta``,
   ``S`` the corresponding inner products): a diagonal plus rank two, solved by Woodbury in
   ``O(B)``. Expanded, ``Pi = blockdiag(Sigma_beta - psi psi^T / delta) - Gv K Gv^T`` with the
   three global vectors ``Gv = [phi, Psi / delta, Psi t / delta]`` and a ``3 x 3`` ``K``.
5. Exact variance. Report ``o = (beta, y)`` decodes to ``v_o = (Z / (g a_o)) F h_y`` with
   ``F = Pi_(U, R_beta)`` and ``h_y`` row ``y`` of ``H_b`` on ``R_beta``. For a workload Gram
   ``G``, ``r_o = v_o^T G v_o = (Z / (g a_o))^2 h_y^T Phi h_y`` with ``Phi = F^T G F``, and
   ``h_y^T Phi h_y = (H corr_Phi)(y)``, ``corr_Phi(d) = sum_c Phi[c, c ^ d]``.
   ``F = Lambda_beta (block rows) - Omega Gv_beta^T`` with ``Omega = Gv_U K``. In a full block
   ``Lambda = l [0 | I] + 1_U rho^T`` (``l = (nu - g) / b``), so ``Phi`` is ``l^2 G_beta,beta``
   plus rank-one terms built from the block row sums and block sums of ``G`` (width
   ``b - 1``) and from ``G Omega`` (three products with ``G``), whose Walsh diagonals are
   products of FWHTs. ``h_y^T G_beta,beta h_y`` is the Walsh transform of the dyadic
   correlation of ``G``'s diagonal block (:mod:`._hadamard_blocks`: closed forms for the
   histogram, total, prefix, all-range and dense Grams and their weighted sums). The partial
   block's ``Lambda`` is dense, ``m x L``, built by applying ``Sigma`` to ``L`` unit vectors.
   Finally ``z_u = sum_o Q[o, u] r_o - G_uu = (sum_o r_o + g sum_(o in beta_u) r_o
   + g (H_b r_beta_u)(c_u)) / Z - G_uu``: one more FWHT per block.
6. One query ``w``: ``V*^T w = (Z / g^2) Wt H E Pi_UU w`` and
   ``z[u] = (Q^T (V*^T w)^2)_u - w_u^2``, the same transforms per row.

Costs. Construction ``O(b' log b')`` (the partial block), ``estimate`` and ``query_variance``
per row ``O(K log b)``, ``per_user_variance`` ``O(K log b)`` for the structured Grams plus
``O(m b' log b')`` for a partial block of ``m`` cells. Limits: that dense part is refused past
``PARTIAL_BLOCK_ENTRIES`` entries (``m b'``). It never is for ``eps > ln 2`` and
``n = 2^k <= 2^23`` (the partial block then holds at most ``min(B, b) / 2`` cells) nor for
``n = 2^k - 1`` and ``eps <= ln 2`` (one full block), but it is for most large ``n`` when
``eps <= ln 2`` (a single block, partly filled). Grams without closed-form Walsh diagonals
(Kronecker marginals, chosen intervals, custom) are densified up to ``DENSE_GRAM_CELLS``
cells. Past either limit the exact variance is summed over the workload's rows when they are
few (``ROW_FALLBACK_ENTRIES`` query-cell entries; a small dense Gram is split into its
eigenvectors), and refused otherwise, by a ValueError that says why.

Numerics. Checked against 60-digit arithmetic for eps from 1e-4 to 50: the estimate agrees
to 1e-15 (the dense solve loses up to 1e-7 at small eps), the variances as well as or better
than the dense mechanism. Two identities keep large ``e^eps`` (``b = 2``, ``a(0) >> a(1)``)
free of cancellation: the all-ones part of ``Sigma H u`` uses ``1^T H u = b u_0``, and the
favoured output of a two-output block is read directly instead of as a half-sum of
transforms. The variance ``z = (second moment) - G_uu`` itself is a difference of nearly equal
numbers once ``e^eps >> n`` (then ``z ~ n / e^eps``), for any decoder.

Exact simulation. Each user, independently: with probability ``K / Z`` an output uniform over
all ``K`` (``1/Z`` per output), with probability ``b g / Z`` one uniform on the favoured half
of its own block (``2 / b`` each, ``1/Z + 2g/Z = e/Z`` in total): exactly its column of ``Q``.
The first part is one multinomial over ``K``; the second a binomial per cell and
:func:`~._hadamard_blocks.hyperplane_counts` per block, ``O(K log b)`` draws whatever the
number of users.
"""

import math

import numpy as np
from scipy.linalg import hadamard

from .._gram import DenseGram
from .._validation import check_dense_size, check_epsilon, check_positive_int
from ._fwht import fwht, hadamard_parity
from ._hadamard_blocks import (
    gram_block_product,
    hyperplane_counts,
    interval_walsh,
    walsh_block_diagonals,
)
from .base import (
    DENSE_GRAM_CELLS,
    ROW_FALLBACK_ENTRIES,
    SPEC_VERSION,
    Mechanism,
    OutputIndexMechanism,
    check_gram,
    check_output_counts,
    check_type_counts,
    check_type_indices,
    check_workload_matrix,
    gram_with_blocks,
    is_workload,
    register,
    report_dtype,
    workload_row_blocks,
)

# Largest dense part of the exact per-user variance: the partial block's m x b' matrix.
PARTIAL_BLOCK_ENTRIES = 2**24
# Rows x outputs decoded at once by query_variance (bounds its temporaries).
ROW_CHUNK_ENTRIES = 2**22


def hadamard_shape(n, epsilon):
    """``(n_blocks, block_size)`` of the general-regime construction.

    ``B = 2^(ceil(log2 min(e^eps, 2n)) - 1)`` blocks of ``b = 2^ceil(log2(n / B + 1))``
    outputs each, so that the ``B (b - 1)`` usable Hadamard columns cover the ``n`` inputs.

    Examples
    --------
    >>> hadamard_shape(16, 1.0), hadamard_shape(16, 3.0)
    ((2, 16), (16, 2))
    """
    # Exponents are rounded to 9 decimals before the ceiling: at eps = ln 4, say, e^eps lands
    # one ulp above or below 4 depending on the platform's exp, which would change the layout
    # a client (sklearn_ldp.client, the same formula) derives from the same specification.
    n_blocks = 2 ** (math.ceil(round(math.log2(min(math.exp(epsilon), 2 * n)), 9)) - 1)
    block_size = 2 ** math.ceil(round(math.log2(n / n_blocks + 1), 9))
    return n_blocks, block_size


def hadamard_strategy(n, epsilon):
    """The ``K x n`` Hadamard response strategy matrix.

    Examples
    --------
    >>> hadamard_strategy(16, 1.0).shape
    (32, 16)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    n_blocks, block_size = hadamard_shape(n, epsilon)
    n_outputs = n_blocks * block_size
    check_dense_size(n_outputs, n, "hadamard")
    inputs = np.arange(n)
    block = inputs // (block_size - 1)
    column = inputs % (block_size - 1) + 1
    signs = hadamard(block_size)[:, column]  # (block_size, n): +1 where the output is favoured
    Q = np.ones((n_outputs, n))
    rows = block[None, :] * block_size + np.arange(block_size)[:, None]
    Q[rows, inputs[None, :]] = np.where(signs > 0, np.exp(epsilon), 1.0)
    return Q / Q.sum(axis=0)


class _NoClosedForm(Exception):
    """The structured variance needs something this Gram cannot give;
    :meth:`HadamardResponse._norms` then falls back to a dense Gram or the workload's rows.
    ``args``: what is missing, and what the user can do about it."""


# What to do when a Gram has no closed-form Walsh diagonals or block sums.
_WORKLOAD_ADVICE = ("Use a histogram, total, prefix or all-range workload (or weighted stacks "
                    "of them), or fewer queries.")


@register
class HadamardResponse(OutputIndexMechanism):
    """Hadamard response (Acharya-Sun-Zhang, general regime) with the optimal decoder.

    ``randomize`` draws each user's output in ``O(1)`` from exactly its column of
    :func:`hadamard_strategy`; the estimate is the optimal linear decoder ``V*`` of that
    strategy and every variance is exact, all computed from the block-Hadamard structure in
    ``O(K log b)`` without the dense strategy (see the module docstring). The specification
    is just ``n`` and ``eps``.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n`` (``2^20`` cells and more).
    epsilon : float

    Attributes
    ----------
    n_blocks, block_size : int
        ``B`` and ``b`` of the construction; ``n_outputs = B b``.
    Q : ndarray of shape (n_outputs, n_inputs)
        The dense strategy matrix, built on access for small domains only (refused past the
        dense size guard); the mechanism itself never uses it.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = HadamardResponse(6, 1.0)
    >>> mechanism.n_outputs, mechanism.n_blocks, mechanism.block_size
    (8, 2, 4)
    >>> reports = mechanism.randomize(np.array([0, 3, 5, 5]), np.random.default_rng(0))
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (6,)
    """

    kind = "hadamard"

    def __init__(self, n_inputs, epsilon):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.epsilon = check_epsilon(epsilon)
        self.name = "hadamard"
        self.params = {}
        self.n_blocks, self.block_size = hadamard_shape(self.n_inputs, self.epsilon)
        self.n_outputs = self.n_blocks * self.block_size
        half = self.block_size // 2
        e = np.exp(self.epsilon)
        normalizer = half * e + self.n_outputs - half
        # Thresholds on one uniform draw: [0, t0) favoured, [t0, t1) the block's unfavoured
        # outputs, [t1, 1) the outputs of the other blocks.
        self._favoured_threshold = half * e / normalizer
        self._block_threshold = (half * e + half) / normalizer
        self._dense_strategy = None
        self._set_up_decoder()

    # ------------------------------------------------------------------ decoder set-up
    def _set_up_decoder(self):
        """The blockwise quantities of the module docstring (steps 3-4): closed forms for the
        full and empty blocks, a few FWHTs for the partial block, O(B) for the coupling."""
        n, b, B = self.n_inputs, self.block_size, self.n_blocks
        # g = (e - 1) / 2 through expm1: accurate for small epsilon.
        g = self._g = 0.5 * np.expm1(self.epsilon)
        self._Z = self.n_outputs + b * g
        self._n_full = n // (b - 1)
        self._partial_size = n - self._n_full * (b - 1)
        self._has_partial = int(self._partial_size > 0)
        self._n_empty = B - self._n_full - self._has_partial
        # Full blocks (nu = n + g (b - 1)); every difference nu - g is written without the
        # cancellation it would suffer for large epsilon.
        self._full_scale = (n + g * (b - 2)) / b  # Sigma = full_scale I + (g / b) J
        self._psi_full = np.full(b, -(n + 2 * g * (b - 2)) / b)
        self._psi_full[0] = n / b
        self._phi_full = np.full(b, (n + g * (2 * b - 3)) / b)
        self._phi_full[0] = g * (b - 1) / b
        delta_full = n + 2 * g * (b - 1) * (b - 2) / b
        t_full = -(b - 1) / b * (n + 2 * g * (b - 2))
        s_full = (b - 1) / b * (n + g * (2 * b - 3))
        self._weights_full = np.full(b, 1.0 / (n + g * (b - 2)))  # 1 / a(y), y != 0
        self._weights_full[0] = 1.0 / (n + 2 * g * (b - 1))
        # The partial block, folded to b' outputs.
        m = self._partial_size
        self._partial_length = m + 1 if m else 0  # L
        self._partial_width = 1 << m.bit_length() if m else 0  # b' = 2^ceil(log2 L)
        deltas = [np.full(self._n_full, delta_full)]
        ts = [np.full(self._n_full, t_full)]
        s_total = self._n_full * s_full
        if m:
            L, width = self._partial_length, self._partial_width
            walsh = interval_walsh(L, width).astype(float)  # H 1_[0, L)
            self._partial_rowsums = (n + g * m) + g * (walsh - 1.0)  # a = H s
            # Sigma e_0 = s_R / b: X e_0 = s vanishes on C, so the complement adds nothing.
            on_first = np.full(L, g / self.block_size)
            on_first[0] = (n + g * m) / self.block_size
            # X 1_R = g N + (nu - g) 1_R, N(c) = #{c' < L : c ^ c' < L} = (1/b') H (H 1_R)^2
            # (an integer count, so rounded).
            mixed = g * np.rint(fwht(walsh * walsh) / width)
            mixed[:L] += n + g * (m - 1)
            on_ones = self._complement_partial(mixed)  # Sigma 1_R
            self._psi_partial = 2 * on_first - on_ones  # Sigma (e_0 - 1_U) = Sigma (2 e_0 - 1_R)
            self._phi_partial = on_ones - on_first  # Sigma 1_U
            first_minus_inputs = np.full(L, -1.0)
            first_minus_inputs[0] = 1.0
            delta_partial = float(first_minus_inputs @ self._psi_partial)
            t_partial = float(first_minus_inputs @ self._phi_partial)
            deltas.append([delta_partial])
            ts.append([t_partial])
            s_total += float(self._phi_partial[1:].sum())
        else:
            self._partial_rowsums = np.zeros(0)
            self._psi_partial = self._phi_partial = np.zeros(0)
            delta_partial, t_partial = 1.0, 0.0  # unused: no partial block
        self._psi_empty = n / b
        deltas.append(np.full(self._n_empty, n / b))
        ts.append(np.zeros(self._n_empty))
        self._delta = np.concatenate(deltas).astype(float)
        self._t = np.concatenate(ts).astype(float)
        self._S = s_total
        # Woodbury for Delta = Diag(delta) + V C V^T, V = [1, t],
        # C = [[S/g^2, -1/g], [-1/g, 0]], C^-1 = [[0, -g], [-g, -S]].
        inv_delta = 1.0 / self._delta
        p1, p2 = inv_delta.sum(), (self._t * inv_delta).sum()
        p3 = (self._t * self._t * inv_delta).sum()
        inner = np.array([[p1, p2 - g], [p2 - g, p3 - s_total]])
        self._woodbury = np.linalg.inv(inner)
        # Pi = blockdiag(Sigma - psi psi^T / delta) - Gv K Gv^T (module docstring, step 4).
        cv = np.array([[-p1 / g, -p2 / g], [1.0, 0.0], [0.0, 1.0]])
        K = -cv @ self._woodbury @ cv.T
        K[0, 1] -= 1.0 / g
        K[1, 0] -= 1.0 / g
        K[0, 0] += p1 / (g * g)
        self._global_kernel = 0.5 * (K + K.T)
        self._global_full = np.stack(
            [self._phi_full, self._psi_full / delta_full, self._psi_full * t_full / delta_full],
            axis=1)
        self._global_partial = np.stack(
            [self._phi_partial, self._psi_partial / delta_partial,
             self._psi_partial * t_partial / delta_partial], axis=1)
        # In an empty block phi = 0 and psi / delta = 1.
        self._global_empty = np.array([0.0, 1.0, 0.0])

    # ------------------------------------------------------------------ block algebra
    def _conv_partial(self, values):
        """``Conv(s) v`` on the folded partial block, for vectors along the last axis."""
        return fwht(self._partial_rowsums * fwht(values, axis=-1), axis=-1) / self._partial_width

    def _sigma_partial(self, values):
        """``Sigma v`` on the partial block's ``L`` coordinates (step 3): four FWHTs."""
        values = np.asarray(values, dtype=float)
        padded = np.zeros(values.shape[:-1] + (self._partial_width,))
        padded[..., :self._partial_length] = values
        return self._complement_partial(self._conv_partial(padded))

    def _complement_partial(self, mixed):
        """``(X_RR v - X_RC X_CC^-1 X_CR v) / b`` from ``mixed = X v`` (``v`` on ``R``)."""
        L, width, n, g = self._partial_length, self._partial_width, self.n_inputs, self._g
        result = mixed[..., :L].copy()
        if width > L:
            outside = mixed[..., L:]
            # X_CC^-1 = (I - g / (nu - g + g |C|) J) / (nu - g), nu - g = n + g (m - 1).
            diagonal = n + g * (self._partial_size - 1)
            solved = (outside - g / (diagonal + g * (width - L))
                      * outside.sum(axis=-1, keepdims=True)) / diagonal
            padded = np.zeros(mixed.shape)
            padded[..., L:] = solved
            result -= self._conv_partial(padded)[..., :L]
        return result / self.block_size

    def _dense_sigma_partial(self):
        """``Sigma`` of the partial block as a dense ``L x L`` matrix: ``X[c, c'] =
        s(c ^ c')`` gathered, and the complement as one product (several times faster than
        applying :meth:`_sigma_partial` to ``L`` unit vectors)."""
        L, width, n, g = self._partial_length, self._partial_width, self.n_inputs, self._g
        symbol = np.zeros(width)
        symbol[0], symbol[1:L] = n + g * self._partial_size, g
        inside = np.arange(L)
        result = symbol[inside[:, None] ^ inside[None, :]]
        if width > L:
            outside = np.arange(L, width)
            crossing = symbol[outside[:, None] ^ inside[None, :]]  # X_CR
            diagonal = n + g * (self._partial_size - 1)
            solved = (crossing - g / (diagonal + g * (width - L))
                      * crossing.sum(axis=0)) / diagonal  # X_CC^-1 X_CR
            result -= crossing.T @ solved
        return result / self.block_size

    def _delta_solve(self, rhs):
        """``Delta^-1 q`` for ``q`` of shape ``(..., B)``: Woodbury, then one step of
        iterative refinement (the rank-two part can dominate for small epsilon)."""
        solution = self._woodbury_solve(rhs)
        return solution + self._woodbury_solve(rhs - self._delta_product(solution))

    def _woodbury_solve(self, rhs):
        scaled = rhs / self._delta
        moments = np.stack([scaled.sum(axis=-1), (scaled * self._t).sum(axis=-1)], axis=-1)
        coefficients = moments @ self._woodbury  # symmetric
        return scaled - (coefficients[..., :1] + coefficients[..., 1:] * self._t) / self._delta

    def _delta_product(self, x):
        g = self._g
        total = x.sum(axis=-1, keepdims=True)
        along_t = (x * self._t).sum(axis=-1, keepdims=True)
        return (self._delta * x - (self._t * total + along_t) / g
                + (self._S / (g * g)) * total)

    def _project(self, full, partial, empty, full_sums=None):
        """``Pi v`` (step 4) for ``v`` given by block: ``full (..., F, b)``, ``partial
        (..., L)`` and ``empty (..., E)``; any leading (batch) axes. ``full_sums``: each full
        block's ``1^T v`` when the caller knows it more accurately than by summing ``v`` (a
        transform ``v = H u`` has ``1^T v = b u_0``, free of the cancellation that a sum of
        the transform suffers when ``e^eps`` is huge)."""
        g, F, P = self._g, self._n_full, self._has_partial
        if full_sums is None:
            full_sums = full.sum(axis=-1)
        sums = full_sums[..., None]
        sigma_full = self._full_scale * full + (g / self.block_size) * sums
        sigma_partial = self._sigma_partial(partial) if P else partial
        sigma_empty = self._psi_empty * empty  # Sigma = n / b = psi in an empty block
        # N^T Sigma v = Psi^T v - (phi^T v / g) 1; on a full block psi and phi are
        # (value at 0 - value elsewhere) e_0 + (value elsewhere) 1.
        psi, phi = self._psi_full, self._phi_full
        dots = [psi[1] * full_sums + (psi[0] - psi[1]) * full[..., 0]]
        phi_dot = (phi[1] * full_sums + (phi[0] - phi[1]) * full[..., 0]).sum(axis=-1)
        if P:
            dots.append((partial @ self._psi_partial)[..., None])
            phi_dot = phi_dot + partial @ self._phi_partial
        dots.append(self._psi_empty * empty)
        kappa = self._delta_solve(np.concatenate(dots, axis=-1) - (phi_dot / g)[..., None])
        # Pi v = Sigma v - (Psi kappa - phi sum(kappa) / g).
        spread = (kappa.sum(axis=-1) / g)[..., None]
        sigma_full = (sigma_full - kappa[..., :F, None] * psi
                      + spread[..., None] * phi)
        if P:
            sigma_partial = (sigma_partial - kappa[..., F:F + 1] * self._psi_partial
                             + spread * self._phi_partial)
        sigma_empty = sigma_empty - kappa[..., F + P:] * self._psi_empty
        return sigma_full, sigma_partial, sigma_empty

    def _split_outputs(self, values):
        """Per-output values ``(..., K)`` as ``(full (..., F, b), partial folded
        (..., b'), empty block totals (..., E))``."""
        b, F, P = self.block_size, self._n_full, self._has_partial
        lead = values.shape[:-1]
        full = values[..., :F * b].reshape(lead + (F, b))
        start = (F + P) * b
        empty = values[..., start:].reshape(lead + (self._n_empty, b)).sum(axis=-1)
        if P:
            width = self._partial_width
            block = values[..., F * b:start].reshape(lead + (b // width, width))
            return full, block.sum(axis=-2), empty
        return full, values[..., :0], empty

    def _split_inputs(self, values):
        """Per-input values ``(..., n)`` on the coordinates ``R`` (0 at each block's
        coordinate 0): ``(full (..., F, b), partial (..., L), empty (..., E))``."""
        b, F = self.block_size, self._n_full
        lead = values.shape[:-1]
        full = np.zeros(lead + (F, b))
        full[..., 1:] = values[..., :F * (b - 1)].reshape(lead + (F, b - 1))
        partial = np.zeros(lead + (self._partial_length,))
        partial[..., 1:] = values[..., F * (b - 1):]
        return full, partial, np.zeros(lead + (self._n_empty,))

    @staticmethod
    def _join_inputs(full, partial):
        """The input coordinates ``U`` of an ``R`` vector, as ``(..., n)``."""
        lead = full.shape[:-2]
        return np.concatenate([full[..., 1:].reshape(lead + (-1,)), partial[..., 1:]], axis=-1)

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Privatize user types ``indices``: one output index per user, ``O(1)`` work each.

        Draws exactly from column ``u`` of :func:`hadamard_strategy` (see the module
        docstring); three random numbers per user, no loop over users or outputs.
        """
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        b, n_outputs = self.block_size, self.n_outputs
        start = (indices // (b - 1)) * b  # first output of the user's block
        column = indices % (b - 1) + 1  # the user's Hadamard column, never 0
        event = rng.random(n_users)
        position = rng.integers(0, b, size=n_users)
        # The wanted parity of popcount(position & column): 0 (favoured, H = +1) or 1.
        wanted = (event >= self._favoured_threshold).astype(np.uint8)
        wrong = hadamard_parity(position, column) != wanted
        position ^= wrong * (column & -column)  # flip the lowest set bit of the column
        reports = start + position
        if n_outputs > b:
            outside = rng.integers(0, n_outputs - b, size=n_users)
            outside += b * (outside >= start)  # skip the user's own block
            reports = np.where(event >= self._block_threshold, outside, reports)
        return reports.astype(report_dtype(n_outputs))

    # ------------------------------------------------------------------ server side
    def estimate(self, counts):
        """The optimal decoder's unbiased estimate ``V* y`` of the users per cell, in
        ``O(K log b)``: one FWHT per block, then ``(Z / g) Pi`` (module docstring)."""
        counts = check_output_counts(counts, self.n_outputs, self.name)
        full, partial, empty = self._split_outputs(np.asarray(counts, dtype=float))
        weighted = full * self._weights_full
        full = fwht(weighted, axis=-1)
        if self._has_partial:
            partial = fwht(partial / self._partial_rowsums)[: self._partial_length]
        empty = empty / self.n_inputs
        full, partial, _ = self._project(full, partial, empty,
                                         full_sums=self.block_size * weighted[..., 0])
        return (self._Z / self._g) * self._join_inputs(full, partial)

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of the output counts (module docstring): per user, an output uniform
        over all ``K`` or one uniform on the favoured half of its block. Both parts are drawn
        per user when they have at most ``K`` users (``O(N)``), else as a multinomial and by
        :func:`~._hadamard_blocks.hyperplane_counts`: ``O(K log b)`` whatever the number of
        users ``N``."""
        counts = check_type_counts(type_counts, self.n_inputs)
        b, K = self.block_size, self.n_outputs
        favoured = rng.binomial(counts, b * self._g / self._Z)
        uniform = int(counts.sum() - favoured.sum())
        if uniform <= K:
            statistic = np.bincount(rng.integers(0, K, size=uniform), minlength=K)
        else:
            statistic = rng.multinomial(uniform, np.full(K, 1.0 / K))
        n_favoured = int(favoured.sum())
        if n_favoured <= K:
            # As in randomize: a uniform position whose parity is fixed, if odd, by flipping
            # the lowest set bit of the column (a bijection between the two halves).
            cells = np.repeat(np.arange(self.n_inputs), favoured)
            column = cells % (b - 1) + 1
            position = rng.integers(0, b, size=n_favoured)
            position ^= hadamard_parity(position, column) * (column & -column)
            statistic += np.bincount((cells // (b - 1)) * b + position, minlength=K)
        else:
            cells = np.arange(self.n_inputs)
            columns = np.zeros(K, dtype=np.int64)
            columns[(cells // (b - 1)) * b + cells % (b - 1) + 1] = favoured
            statistic += hyperplane_counts(columns.reshape(self.n_blocks, b), rng).ravel()
        return statistic.astype(np.int64)

    def strategy_matrix(self):
        """The dense ``K x n`` strategy (small domains only; the exact privacy tests)."""
        return np.array(hadamard_strategy(self.n_inputs, self.epsilon))

    @property
    def Q(self):
        """The dense strategy matrix, built once on first access (small domains only)."""
        if self._dense_strategy is None:
            Q = hadamard_strategy(self.n_inputs, self.epsilon)
            Q.setflags(write=False)
            self._dense_strategy = Q
        return self._dense_strategy

    # ------------------------------------------------------------------ analysis
    @property
    def null_space_dim(self):
        """0: ``Q^T D^-1 Q`` is positive definite (the Hadamard columns of a block are
        independent, and orthogonal to its all-ones column)."""
        return 0

    def supports(self, workload_matrix):
        """Always True: the strategy has full column rank, every query is answered."""
        return True

    def supports_gram(self, gram):
        return True

    def per_user_variance(self, gram):
        """Exact ``z_u = tr(G Cov_u)`` of the optimal decoder for the workload with Gram
        ``G = W^T W`` (operator, workload or array): ``sum_o Q[o, u] ||W V* e_o||^2 - G_uu``
        from the structure (module docstring, step 5)."""
        rows = gram if is_workload(gram) else None  # kept for the row fallback
        gram = check_gram(gram, self.n_inputs)
        return self._from_norms(*self._norms(gram, rows)) - gram.diagonal()

    def sum_of_squared_answers(self, counts, gram):
        """``sum_o counts_o ||W V* e_o||^2``: the squared answers of each report's own
        decoded contribution, summed (as the dense factorization mechanism computes it)."""
        counts = check_output_counts(counts, self.n_outputs, self.name)
        full, partial, empty = self._split_outputs(np.asarray(counts, dtype=float))
        rows = gram if is_workload(gram) else None
        norms = self._norms(check_gram(gram, self.n_inputs), rows)
        norms_full, norms_partial, norm_empty = norms
        return float(np.sum(full * norms_full) + partial @ norms_partial
                     + norm_empty * empty.sum())

    def query_variance(self, workload_matrix):
        """Per-user variance of each query for each type: ``(p, n)`` matrix ``z[i, u]``
        (``O(K log b)`` per query, in chunks of rows)."""
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        z = np.empty_like(W)
        step = max(1, ROW_CHUNK_ENTRIES // self.n_outputs)
        for start in range(0, W.shape[0], step):
            rows = W[start:start + step]
            norms = [part * part for part in self._decode_rows(rows)]
            z[start:start + step] = self._from_norms(*norms) - rows * rows
        return z

    def output_answers(self, workload_matrix):
        """``(p, K)``: ``W V* e_o`` for every output ``o``, the change of each answer when one
        report names ``o`` (step 6: ``V*^T w`` per query), in output order.

        The partial block's outputs ``y`` take the folded value at ``y mod b'`` and every
        output of an empty block the same value.
        """
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        full, partial, empty = self._decode_rows(W)
        parts = [full.reshape(W.shape[0], -1)]
        if self._has_partial:
            parts.append(np.tile(partial, (1, self.block_size // self._partial_width)))
        parts.append(np.repeat(empty[:, None], self._n_empty * self.block_size, axis=1))
        return np.concatenate(parts, axis=1)

    def _decode_rows(self, rows):
        """``V*^T w`` for each row ``w`` of ``rows (p, n)`` (step 6), per output in block
        form: ``(full (p, F, b), partial (p, b'), empty (p,))``; an empty block's outputs all
        take the same value."""
        g = self._g
        full, partial, _ = self._project(*self._split_inputs(rows))
        inputs_full, inputs_partial = full[..., 1:], partial[..., 1:]
        block_full = inputs_full.sum(axis=-1)  # (p, F)
        block_partial = inputs_partial.sum(axis=-1)
        total = block_full.sum(axis=-1) + block_partial  # (p,)
        # E t: coordinate 0 of each block gets sum(t) + g (the block's sum), the others g t.
        # Its transform is sum(t) 1 + g H (block sum, t): added after the transform, so that
        # no large g t cancels out of it (b = 2 with e^eps >> n).
        coords = np.empty_like(full)
        coords[..., 0] = block_full
        coords[..., 1:] = inputs_full
        scale = self._Z / (g * g)
        decoded_full = scale * self._weights_full * (
            total[:, None, None] + g * fwht(coords, axis=-1))
        if self._has_partial:
            padded = np.zeros((rows.shape[0], self._partial_width))
            padded[:, 0] = block_partial
            padded[:, 1:self._partial_length] = inputs_partial
            decoded_partial = scale * (total[:, None] + g * fwht(padded, axis=-1)) / (
                self._partial_rowsums)
        else:
            decoded_partial = np.zeros((rows.shape[0], 0))
        return decoded_full, decoded_partial, scale * total / self.n_inputs

    def _from_norms(self, full, partial, empty):
        """``(Q^T r)_u`` from per-output values ``r`` in block form (``full (..., F, b)``,
        folded ``partial (..., b')``, one value per empty block output ``(...)``):
        ``(sum_o r_o + g sum_(o in beta_u) r_o + g (H_b r_beta_u)(c_u)) / Z``."""
        g, b = self._g, self.block_size
        fold = b // self._partial_width if self._has_partial else 0
        block_full = full.sum(axis=-1)  # (..., F)
        block_partial = fold * partial.sum(axis=-1)  # (...,)
        total = block_full.sum(axis=-1) + block_partial + self._n_empty * b * empty
        lead = full.shape[:-2]
        if b == 2:
            # The favoured output of the block's one cell is y = 0: its sum read directly, not
            # as (r_0 + r_1) + (r_0 - r_1), which cancels when e^eps >> n.
            favoured = 2 * full[..., :1]
        else:
            favoured = block_full[..., None] + fwht(full, axis=-1)[..., 1:]
        on_full = (total[..., None, None] + g * favoured).reshape(lead + (-1,))
        parts = [on_full]
        if self._has_partial:
            parts.append(total[..., None] + g * block_partial[..., None]
                         + g * fold * fwht(partial, axis=-1)[..., 1:self._partial_length])
        return np.concatenate(parts, axis=-1) / self._Z

    # ------------------------------------------------------------------ exact variance
    def _norms(self, gram, workload=None):
        """``r_o = ||W V* e_o||^2`` per output, in the block form of :meth:`_from_norms`:
        structured when the Gram allows it, else from its dense form (small ``n``), else
        summed over the rows of ``workload`` (or of the workload behind the Gram), else a
        ValueError saying why."""
        try:
            return self._structured_norms(gram)
        except _NoClosedForm as error:
            reason, advice = error.args
        dense = None
        if gram.n <= DENSE_GRAM_CELLS:
            dense = gram if isinstance(gram, DenseGram) else DenseGram(gram.toarray())
            try:
                return self._structured_norms(dense)
            except _NoClosedForm:
                pass  # only the partial block can still be too large
        if workload is None:
            workload = getattr(gram, "workload", None)
        if workload is not None and (workload.shape[0] * workload.shape[1]
                                     <= ROW_FALLBACK_ENTRIES):
            blocks = ((block, None) for _rows, block in workload_row_blocks(workload))
            return self._norms_from_rows(blocks)
        if dense is not None:
            # G = sum_k s_k q_k q_k^T (s_k = +-1), and r is linear in G.
            values, vectors = np.linalg.eigh(dense.toarray())
            rows = (vectors * np.sqrt(np.abs(values))).T
            return self._norms_from_rows([(rows, np.sign(values))])
        raise ValueError(
            f"the exact variance of the 'hadamard' mechanism (n = {self.n_inputs}, epsilon = "
            f"{self.epsilon}; B = {self.n_blocks} blocks of b = {self.block_size} outputs) "
            f"cannot be computed for {gram!r}: {reason} With more than {DENSE_GRAM_CELLS} "
            f"cells, and no workload of at most {ROW_FALLBACK_ENTRIES} query-cell entries "
            f"behind it, neither the dense Gram nor the rows are an option. {advice}"
        )

    def _norms_from_rows(self, blocks):
        """``r`` summed over workload rows ``w`` (``r_o = sum_w (V*^T w)_o^2``), each block of
        rows with optional signs (``G = sum sign w w^T``)."""
        sums = None
        for rows, signs in blocks:
            rows = np.atleast_2d(np.asarray(rows, dtype=float))
            step = max(1, ROW_CHUNK_ENTRIES // self.n_outputs)
            for start in range(0, rows.shape[0], step):
                chunk = rows[start:start + step]
                weight = np.ones(chunk.shape[0]) if signs is None else signs[start:start + step]
                decoded = self._decode_rows(chunk)
                part = [np.tensordot(weight, value * value, axes=1) for value in decoded]
                sums = part if sums is None else [s + p for s, p in zip(sums, part, strict=True)]
        if sums is None:  # no queries
            return (np.zeros((self._n_full, self.block_size)),
                    np.zeros(self._partial_width), 0.0)
        return tuple(sums)

    def _structured_norms(self, gram):
        """Step 5 of the module docstring; raises :class:`_NoClosedForm` when the Gram lacks
        Walsh diagonals or block sums at width ``b - 1``, or the partial block is too big."""
        n, b, g = self.n_inputs, self.block_size, self._g
        F, width = self._n_full, self.block_size - 1
        if F:
            blocks = gram_with_blocks(gram, [width])
            if blocks is None:
                raise _NoClosedForm(f"it has no block sums over {width} consecutive cells.",
                                    _WORKLOAD_ADVICE)
            diagonals = walsh_block_diagonals(blocks, F, width)
            if diagonals is None:
                raise _NoClosedForm(
                    f"the Walsh transform of its diagonal blocks of {width} cells has no "
                    "closed form.", _WORKLOAD_ADVICE)
        if self._has_partial and (self._partial_size * self._partial_width
                                  > PARTIAL_BLOCK_ENTRIES):
            raise _NoClosedForm(
                f"the last block holds {self._partial_size} of its {width} cells, and its "
                f"exact variance needs a dense {self._partial_size} x {self._partial_width} "
                f"matrix (limit {PARTIAL_BLOCK_ENTRIES} entries).",
                "The last block is full or small for n = 2^k - 1 cells, or n = 2^k (up to "
                "2^23) with epsilon > ln 2; otherwise use fewer queries (their rows are "
                "summed) or another frequency oracle ('olh', 'hrr').")
        # The three global vectors on the inputs, and Omega = Gv_U K with its products.
        omega = np.empty((n, 3))
        omega[:F * width] = self._global_full[1] @ self._global_kernel  # constant on full blocks
        omega[F * width:] = self._global_partial[1:] @ self._global_kernel
        g_omega = np.asarray(gram.matvec(omega), dtype=float).reshape(n, 3)
        cross = omega.T @ g_omega
        cross = 0.5 * (cross + cross.T)
        squared = (self._Z / g) ** 2
        if F:
            phi_full = self._full_phi(blocks, diagonals, g_omega, cross)
        else:
            phi_full = np.zeros((0, b))
        norms_full = squared * phi_full * self._weights_full ** 2
        if self._has_partial:
            norms_partial = squared * self._partial_phi(gram, g_omega, cross) / (
                self._partial_rowsums ** 2)
        else:
            norms_partial = np.zeros(0)
        norm_empty = squared * cross[1, 1] / n**2
        return norms_full, norms_partial, norm_empty

    def _full_phi(self, blocks, diagonals, g_omega, cross):
        """``h_y^T Phi h_y`` for every full block ``(F, b)`` (step 5): ``Phi`` is
        ``l^2 G_bb + l (x rho^T + rho x^T) + S rho rho^T - (P Gv^T + Gv P^T)
        + Gv (Omega^T G Omega) Gv^T`` with ``x`` the block's row sums, ``S`` its sum and
        ``P = Lambda^T (G Omega)_U``. ``rho`` and the global vectors are ``alpha e_0 + beta 1``
        on a full block, whose transform is ``alpha`` off ``y = 0``: so every term but the
        first takes one FWHT together, and ``y = 0`` is summed directly."""
        b, g, F = self.block_size, self._g, self._n_full
        width, scale = b - 1, self._full_scale
        rho = g / b - (self._psi_full[1] / self._delta[0]) * self._psi_full
        rho_step, rho_sum = rho[0] - rho[1], rho[0] + width * rho[1]  # H rho at y != 0, 0
        step = self._global_full[0] - self._global_full[1]  # H Gv at y != 0, (3,)
        total = self._global_full[0] + width * self._global_full[1]  # H Gv at y = 0
        row_sums = blocks.block_row_sums(width)[:F * width].reshape(F, width)
        block_sums = blocks.block_sums(width)[:F]
        g_omega_full = g_omega[:F * width].reshape(F, width, 3)
        omega_sums = g_omega_full.sum(axis=1)  # (F, 3)
        combined = np.zeros((F, b))
        combined[:, 1:] = 2 * scale * (rho_step * row_sums - g_omega_full @ step)
        phi = scale * scale * diagonals + fwht(combined, axis=-1)
        phi += (block_sums * rho_step**2 - 2 * rho_step * (omega_sums @ step)
                + step @ cross @ step)[:, None]
        phi[:, 0] = (scale * scale * diagonals[:, 0] + 2 * scale * block_sums * rho_sum
                     + block_sums * rho_sum**2 - 2 * (scale + rho_sum) * (omega_sums @ total)
                     + total @ cross @ total)
        return phi

    def _partial_phi(self, gram, g_omega, cross):
        """``h_y^T Phi h_y`` for the partial block (dense ``Lambda``, step 5)."""
        L, width, m = self._partial_length, self._partial_width, self._partial_size
        first = self._n_full * (self.block_size - 1)
        sigma = self._dense_sigma_partial()
        psi = self._psi_partial
        lam = sigma[1:] - np.outer(psi[1:], psi) / self._delta[self._n_full]  # (m, L)
        padded = np.zeros((m, width))
        padded[:, :L] = lam
        theta = fwht(padded, axis=1)  # Lambda h_y for every y
        main = np.einsum("iy,iy->y", theta, gram_block_product(gram, first, self.n_inputs,
                                                                theta))
        products = np.zeros((width, 3))
        products[:L] = lam.T @ g_omega[first:]
        walsh_global = np.zeros((width, 3))
        walsh_global[:L] = self._global_partial
        walsh_global = fwht(walsh_global, axis=0)
        return (main - 2 * np.einsum("yj,yj->y", fwht(products, axis=0), walsh_global)
                + np.einsum("yj,jl,yl->y", walsh_global, cross, walsh_global))

    # ------------------------------------------------------------------ serialization
    def to_dict(self):
        """``n_inputs`` and ``epsilon`` only: the strategy is rebuilt from them."""
        return Mechanism.to_dict(self)

    @classmethod
    def from_dict(cls, spec):
        if spec.get("mechanism") != cls.kind or spec.get("version") != SPEC_VERSION:
            raise ValueError(f"not a version-{SPEC_VERSION} {cls.kind!r} specification: "
                             f"{str(spec)[:80]!r}.")
        if spec.get("params"):
            raise ValueError(f"the {cls.kind!r} mechanism takes no parameters besides "
                             f"n_inputs and epsilon, got {spec['params']!r}.")
        return cls(spec["n_inputs"], spec["epsilon"])

    def fingerprint(self):
        """Equal for two Hadamard responses with the same ``n`` and ``eps``."""
        return Mechanism.fingerprint(self)

    def __eq__(self, other):
        return isinstance(other, HadamardResponse) and self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        return f"HadamardResponse(n_inputs={self.n_inputs}, epsilon={self.epsilon})"
