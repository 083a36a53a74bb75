"""Hadamard response (Acharya, Sun, Zhang, AISTATS 2019) in its best layout, optimal decoder.

Strategy. The ``K = B b`` outputs are split into ``B`` blocks of size ``b`` (a power of two).
Each cell ``j`` lives in a block at a Hadamard column ``c >= 1`` (column 0, all ones, is not
used). It reports each of the ``b / 2`` outputs ``y`` of its block where ``H_b[y, c] = +1``
(its "favoured" outputs) with probability ``e^eps / Z`` and every other output with
probability ``1 / Z``, where

    Z = (b / 2) e^eps + K - b / 2.

Every output row holds only the values ``e^eps / Z`` and ``1 / Z``, so the strategy is exactly
epsilon-LDP, whatever the columns. Sampled exactly: the favoured outputs have the integer
weight ``a`` and the others ``d = 2^s`` (:func:`~._ratio.ratio_weights`, ``a / d <= e^eps``
decided on integers), so ``e^eps`` above is the realised ratio ``a / d`` and
``g = (a - d) / (2 d)`` everywhere below (the decoder and every variance use it).

Layout, ``(n_blocks, block_size, hole)``. The full blocks hold ``b - hole`` cells each, in
order, at the columns ``hole .. b - 1`` (``hole`` a power of two at most ``b / 2``; 1: every
column but 0); the cells left over (fewer) go to one partial block at the columns
``1, 2, ...``; the paper's layout may end with empty blocks. The paper's layout
(:func:`hadamard_shape`, ``"paper"``) takes ``B = 2^(ceil(log2 e^eps) - 1)`` blocks, hole 1.

Why it was not the best (issue 17: MSE * N 7.18 at d = 1024, eps = 1, against 4.67 for HRR).
A cell of a block holding the fraction ``f`` of the users has, to first order, the variance
``(B + g)(1 + g f) / g^2`` per user (``g = (e^eps - 1) / 2``: the block's share of the
reports over the squared gap between favoured and other outputs); with ``B`` equally loaded
blocks that is ``(B + g)^2 / (B g^2)``, least at ``B = g``, and ``B = 1`` beats ``B = 2`` while
``g < sqrt(2)``, i.e. ``e^eps < 1 + 2 sqrt(2)`` (``eps < 1.34``). The paper's rule compares
``e^eps`` (not ``g``) with the powers of two, so it takes two blocks from ``eps > ln 2``; and
filling blocks of ``b - 1`` cells in order leaves the last one nearly empty when ``n`` is a
power of two (1024 cells: blocks of 1023 and 1 cells), which costs a whole block's share of
noise: 7.18 where one block of 2048 outputs gives 4.675. Exact average variances
(``tests/test_hadamard_structured.py::test_the_chosen_layout_has_the_least_mean_variance``):

    d = 1024             eps = 0.5    1      2      3      4      5
    paper's layout        16.65      7.18   1.82   0.602  0.209  0.069
    chosen layout         16.65      4.675  1.262  0.416  0.145  0.048

Choosing the layout (:func:`hadamard_layout`). Every layout without empty blocks (``b`` a
power of two up to one block holding every cell, every hole) is scored by its exact mean
cell variance, ``(tr((Q^T D^-1 Q)^-1) - n) / n^2``, in ``O(B + b' log b')`` from the blockwise
closed forms below (blocks of more than ``EXACT_SCORE_BLOCK`` outputs, hundreds of cells each,
by the model above, within 0.1% there), and the best is taken among the layouts whose partial
block is small enough for the exact variance of every structured workload, when the paper's
layout is one of those (no ``(n, eps)`` loses its structured variances: 5000 or 10^4 cells at
eps = 1 keep two blocks, 5.62 instead of one block's 4.68, and 2^20 - 1 cells at eps = 2 take
1.44 instead of 1.27, both better than the paper's 6.21 and 1.83); otherwise the best overall,
unless such a layout is at most ``COMPUTABLE_TOLERANCE`` (2%) worse (10^6 cells at eps = 1:
one block, whose variances come from the rows only, as the paper's layout's did). The holes are
what makes equal loads possible: ``n = 2^k`` cells fill ``2^j`` blocks of ``2^(k-j+1)`` outputs
at their upper halves exactly (2^20 cells: one block of 2^21 outputs at eps = 1, four of 2^19
at eps = 2; 1024 cells: four blocks of 512 at eps = 2), with no partial block, whose variances
would otherwise need a dense ``m x b'`` part. No regime needs the paper's layout (it is never
better than the chosen one, but by the 2% above); it is kept for the specifications written
before the layout was recorded: a specification without a layout means the paper's, so old
specifications, saved reports and clients decode as before.

Client side, ``O(1)`` per user. One exactly uniform integer ``U`` in ``[0, (b/2) a + (K - b/2)
d)`` (:func:`~._ratio.sample_ratio_law`) picks a favoured output (the ``(U // a)``-th), one of
the ``b / 2`` unfavoured outputs of its own block, or one of the ``K - b`` outputs of the other
blocks (the ``((U - (b/2) a) // d)``-th of these ``K - b/2``), which gives exactly column ``j``
of the strategy matrix. The ``t``-th output of the block with a prescribed parity
``popcount(y & c) mod 2`` is ``t`` with a 0 inserted at the lowest set bit ``l`` of ``c``,
then bit ``l`` set if the parity is wrong: a bijection from ``[0, b/2)`` onto each half.

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

Blocks with a hole. A full block whose cells sit at the columns ``S = [h, b)`` (``h`` a power
of two, ``m = b - h`` cells) has the same closed forms as the full block above (``h = 1``)
with one more term. Its coordinates are ``R = {0} + S``, its row sums
``a(y) = nu + g (b [y = 0] - h [y = 0 mod h])`` (three values), and the complement
``C = [1, h)`` meets no difference of two columns of ``S`` of the same coset of ``[0, h)``, so
``X_CC = nu I`` and ``X_RC = g [0; J]``:

    b Sigma = [[nu, g 1^T], [g 1, nu I - g P + (g - kappa) J]],  kappa = g^2 (h - 1) / nu,

with ``P`` the indicator of "same coset of ``[0, h)``". ``P h_y = h [y = 0 mod h] h_y`` on
``S``, so ``Lambda h_y = lambda(y) h_S + rho(y) 1_S`` with ``lambda`` and ``rho`` taking one
value per class of ``y`` (0; multiples of ``h``; the rest), and step 5 is the full block's
with per-class weights. For ``h = b / 2`` every transform of the block runs at size ``b / 2``
(``H_b[y, h + j] = (-1)^[y >= h] H_h[y mod h, j]``).

Variance of one interval (:meth:`HadamardResponse.range_variance_summary`). For ``w`` the
indicator of a range, ``Pi_UU w`` is, on a full block, ``alpha 1_I + mu M + kappa_beta``
(``I`` the range's columns in the block, ``M`` its coset means), so the block's decoded
values are ``v(y) = P(y) + R(y) W(y)`` with ``P``, ``R`` constant on the classes of ``y``
and ``W = H 1_I``. Then ``(H v^2)(c)`` at a cell is a constant plus multiples of ``1_I(c)``,
``M(c)``, the dyadic correlation ``corr_I(c) = #{t in I : t ^ c in I}`` (``H W^2 = b
corr_I``) and its coset mean, each in closed form in ``O(log b)``
(:func:`~._hadamard_blocks.interval_correlation`). These depend on ``c`` only through the
longest common prefix of ``c`` with ``0, p, q`` and ``p ^ q`` (``I = [p, q)``), so the
largest over the block is among those four points and their one-bit flips. The blocks
between the range's ends and those outside it have one value each; the partial block,
small, takes two FWHTs per range that reaches it (a cached quadratic form otherwise). The
mean over the types is ``(w^T M^-1 w - |w|) / n``, from the same ``Pi_UU w``.

Costs. Construction ``O(b' log b')`` (the partial block), ``estimate`` and ``query_variance``
per row ``O(K log b)``, ``per_user_variance`` ``O(K log b)`` for the structured Grams plus
``O(m b' log b')`` for a partial block of ``m`` cells, ``range_variance_summary``
``O(log^2 b)`` per range plus ``O(b' log b')`` for those that reach the partial block.
Limits: that dense part is refused past ``PARTIAL_BLOCK_ENTRIES`` entries (``m b'``). The
chosen layout never needs it where the paper's layout did not (see "Choosing the layout");
it needs none for ``n = 2^k`` at any eps (the paper's layout did for ``eps <= ln 2``), but a
large ``n`` of another form often does, with either layout, when ``eps`` is small (one block
partly filled: ``'hrr'`` then has the same accuracy with closed forms). Grams without
closed-form Walsh diagonals (Kronecker marginals, chosen intervals, custom) are densified up
to ``DENSE_GRAM_CELLS`` cells. Past either limit the exact variance is summed over the
workload's rows when they are few (``ROW_FALLBACK_ENTRIES`` query-cell entries; a small dense
Gram is split into its eigenvectors), and refused otherwise, by a ValueError that says why.

Numerics. Checked against 60-digit arithmetic for eps from 1e-4 to 50 (the paper's layout):
the estimate agrees to 1e-15 (the dense solve loses up to 1e-7 at small eps), the variances as
well as or better than the dense mechanism. Layouts with blocks of more than two outputs keep
1e-9 up to eps = 20 (at eps = 30 their estimate loses 1e-5, the row sums spanning 13 orders
of magnitude; checked for n <= 128); the chosen layout has blocks of two outputs long before
(``B = g > n``).
Two identities keep large ``e^eps`` (``b = 2``, ``a(0) >> a(1)``) free of cancellation: the
all-ones part of ``Sigma H u`` uses ``1^T H u = b u_0``, and the favoured output of a
two-output block is read directly instead of as a half-sum of transforms.
The variance ``z = (second moment) - G_uu`` itself is a difference of nearly equal numbers once
``e^eps >> n`` (then ``z ~ n / e^eps``), for any decoder.

Exact simulation. Each user, independently: with probability ``K / Z`` an output uniform over
all ``K`` (``1/Z`` per output), with probability ``b g / Z`` one uniform on the favoured half
of its own block (``2 / b`` each, ``1/Z + 2g/Z = e/Z`` in total): exactly its column of ``Q``.
The first part is one multinomial over ``K``; the second a binomial per cell and
:func:`~._hadamard_blocks.hyperplane_counts` per block, ``O(K log b)`` draws whatever the
number of users.
"""

import functools
import math

import numpy as np
from scipy.linalg import hadamard

from ..._fwht import fwht, hadamard_parity
from ..._gram import DenseGram
from ..._validation import check_dense_size, check_epsilon, check_positive_int
from .._base.exact import ExactLaw, check_law_size
from .._base.mechanism import (
    SPEC_VERSION,
    Mechanism,
    OutputIndexMechanism,
    check_output_counts,
    check_type_counts,
    check_type_indices,
    check_workload_matrix,
    register,
    report_dtype,
)
from .._base.ratio import ratio_law_weights, ratio_weights, sample_ratio_law
from .._base.workload_ops import (
    DENSE_GRAM_CELLS,
    ROW_FALLBACK_ENTRIES,
    check_gram,
    check_workload_width,
    gram_with_blocks,
    is_workload,
    workload_row_blocks,
)
from ._hadamard_blocks import (
    coset_correlation,
    gram_block_product,
    hyperplane_counts,
    interval_correlation,
    interval_walsh,
    walsh_block_diagonals,
)

# Largest dense part of the exact per-user variance: the partial block's m x b' matrix.
PARTIAL_BLOCK_ENTRIES = 2**24
# Rows x outputs decoded at once by query_variance (bounds its temporaries).
ROW_CHUNK_ENTRIES = 2**22
# The per-query variance of intervals is structured when the partial block (transformed once
# per query) has at most this many outputs; otherwise it comes from the dense rows.
RANGE_PARTIAL_OUTPUTS = 2**16
# Intervals handled at once by range_variance_summary (bounds its temporaries).
RANGE_CHUNK = 1024


def hadamard_shape(n, epsilon):
    """``(n_blocks, block_size)`` of the paper's general-regime construction.

    ``B = 2^(ceil(log2 min(e^eps, 2n)) - 1)`` blocks of ``b = 2^ceil(log2(n / B + 1))``
    outputs each, so that the ``B (b - 1)`` usable Hadamard columns cover the ``n`` inputs,
    filled in order. This is the layout of the specifications written before the layout was
    recorded (``"paper"``); :func:`hadamard_layout` chooses a better one.

    Examples
    --------
    >>> hadamard_shape(16, 1.0), hadamard_shape(16, 3.0)
    ((2, 16), (16, 2))
    """
    # Exponents are rounded to 9 decimals before the ceiling: at eps = ln 4, say, e^eps lands
    # one ulp above or below 4 depending on the platform's exp, which would change the layout
    # a client (sklearn_ldp.deploy.client, the same formula) derives from the same specification.
    n_blocks = 2 ** (math.ceil(round(math.log2(min(math.exp(epsilon), 2 * n)), 9)) - 1)
    block_size = 2 ** math.ceil(round(math.log2(n / n_blocks + 1), 9))
    return n_blocks, block_size


def _paper_layout(n, epsilon):
    """The layout of :func:`hadamard_shape`: ``(n_blocks, block_size, hole = 1)``."""
    return (*hadamard_shape(n, epsilon), 1)


def _block_counts(n, block_size, hole):
    """``(full blocks, cells of the last, partial block)`` of a layout: full blocks hold
    ``b - hole`` cells each, the rest goes to one partial block."""
    load = block_size - hole
    n_full = n // load
    return n_full, n - n_full * load


def check_layout(n, layout):
    """Validate a layout ``(n_blocks, block_size, hole)`` for ``n`` cells; returns it as ints.

    ``block_size`` is a power of two, ``hole`` a power of two at most ``block_size / 2``;
    full blocks hold ``block_size - hole`` cells at the Hadamard columns
    ``hole .. block_size - 1``, the remaining cells (fewer than that) one more block at the
    columns ``1, 2, ...``, and ``n_blocks`` counts these and any empty blocks (only the paper's
    layout has some) after them. At most ``8 n`` outputs (the paper's layout has fewer than
    ``6 n``).

    Examples
    --------
    >>> check_layout(1024, (4, 512, 256))
    (4, 512, 256)
    """
    n = check_positive_int(n, "n")
    if isinstance(layout, str) or not hasattr(layout, "__len__") or len(layout) != 3:
        raise TypeError(f"layout must be a triple (n_blocks, block_size, hole), got "
                        f"{layout!r}.")
    values = []
    for name, value in zip(("n_blocks", "block_size", "hole"), layout, strict=True):
        if isinstance(value, bool) or not isinstance(value, int | np.integer):
            raise TypeError(f"the layout's {name} must be an integer, got {value!r}.")
        values.append(int(value))
    n_blocks, block_size, hole = values
    if block_size < 2 or block_size & (block_size - 1):
        raise ValueError(f"the layout's block_size must be a power of two, at least 2; got "
                         f"{block_size}.")
    if hole < 1 or hole & (hole - 1) or 2 * hole > block_size:
        raise ValueError(f"the layout's hole must be a power of two at most block_size / 2 = "
                         f"{block_size // 2}; got {hole}.")
    n_full, rest = _block_counts(n, block_size, hole)
    needed = n_full + (rest > 0)
    if n_blocks < needed or n_blocks * block_size > 8 * n:
        raise ValueError(f"the layout's n_blocks must be at least {needed} (the blocks "
                         f"of {block_size - hole} cells that {n} cells need) with at most "
                         f"{8 * n} outputs; got {n_blocks} blocks of {block_size}.")
    return n_blocks, block_size, hole


def _block_and_column(cells, block_size, hole, n_full):
    """Block and Hadamard column of each cell (integer arrays): cell ``j < F (b - hole)``
    sits in block ``j // (b - hole)`` at column ``hole + j % (b - hole)``, the cells after the
    full blocks in the partial block at columns ``1, 2, ...``."""
    load = block_size - hole
    block = cells // load
    column = cells % load + np.where(block < n_full, hole, 1)
    return block, column


def hadamard_strategy(n, epsilon, layout=None):
    """The ``K x n`` Hadamard response strategy matrix.

    Parameters
    ----------
    n : int
        Number of cells.
    epsilon : float
        The privacy budget.
    layout : tuple of int, optional
        ``(n_blocks, block_size, hole)`` (see :func:`check_layout`); by default the paper's
        layout of :func:`hadamard_shape` (the strategy of the ``"hierarchical_matrix"``
        levels), ``mechanism.layout`` for a :class:`HadamardResponse`.

    Returns
    -------
    ndarray of shape (n_blocks * block_size, n)
        Column ``j``: ``e^eps / Z`` on the favoured half of its block (where the Hadamard
        column of ``j`` is ``+1``), ``1 / Z`` elsewhere.

    See Also
    --------
    HadamardResponse : The mechanism, structured (no dense matrix).
    hadamard_layout : The layout with the least average variance.

    Examples
    --------
    >>> hadamard_strategy(16, 1.0).shape
    (32, 16)
    >>> hadamard_strategy(16, 1.0, layout=(1, 32, 16)).shape   # one block, upper half
    (32, 16)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    n_blocks, block_size, hole = check_layout(
        n, _paper_layout(n, epsilon) if layout is None else layout)
    n_outputs = n_blocks * block_size
    check_dense_size(n_outputs, n, "hadamard")
    inputs = np.arange(n)
    block, column = _block_and_column(inputs, block_size, hole,
                                      _block_counts(n, block_size, hole)[0])
    signs = hadamard(block_size)[:, column]  # (block_size, n): +1 where the output is favoured
    # The realised law: favoured weight a, others d (the integers the mechanism samples).
    half = block_size // 2
    a, d = ratio_weights(epsilon, half, n_outputs - half, "hadamard")
    Q = np.full((n_outputs, n), float(d))
    rows = block[None, :] * block_size + np.arange(block_size)[:, None]
    Q[rows, inputs[None, :]] = np.where(signs > 0, float(a), float(d))
    return Q / (half * a + (n_outputs - half) * d)


def _candidate_layouts(n):
    """Every layout without empty blocks: block sizes ``b = 2, 4, ...`` up to one block
    holding all ``n`` cells, holes ``1, 2, ..., b / 2`` (a layout whose only block is partial
    is listed once, with hole 1)."""
    layouts = []
    block_size = 2
    while True:
        hole = 1
        while 2 * hole <= block_size:
            n_full, rest = _block_counts(n, block_size, hole)
            if n_full or hole == 1:
                layouts.append((n_full + (rest > 0), block_size, hole))
            hole *= 2
        if block_size > n:
            return layouts
        block_size *= 2


# Layouts whose blocks have at most this many outputs are scored by their exact variance when
# a layout is chosen; larger blocks (hundreds of cells each) by the block model, within 0.1%
# of the exact value there and O(1) to evaluate.
EXACT_SCORE_BLOCK = 2**12
# A layout whose exact per-user variance is computable for every structured workload (no large
# partial block) is preferred to a more accurate one that is not, when at most this much worse
# -- and always when the paper's layout was computable, so that no (n, eps) loses its
# structured variances.
COMPUTABLE_TOLERANCE = 0.02


def _model_variance(n, epsilon, layout):
    """The block model of a layout's mean cell variance: a cell of a block that holds the
    fraction ``f`` of the cells (uniform types) has variance about ``(B + g)(1 + g f) / g^2``
    (the block's share of reports over the squared favoured gap), averaged over the cells."""
    n_blocks, block_size, hole = layout
    g = 0.5 * math.expm1(epsilon)
    n_full, rest = _block_counts(n, block_size, hole)
    squares = (n_full * (block_size - hole) ** 2 + rest * rest) / (n * n)
    return (n_blocks + g) * (1 + g * squares) / (g * g)


def _partial_entries(n, layout):
    """Entries of the dense part of the exact variance (the partial block's ``m x b'``)."""
    _n_blocks, block_size, hole = layout
    rest = _block_counts(n, block_size, hole)[1]
    return rest * (1 << rest.bit_length()) if rest else 0


@functools.lru_cache(maxsize=256)
def _chosen_layout(n, epsilon):
    scored = []
    for layout in _candidate_layouts(n):
        if layout[1] <= EXACT_SCORE_BLOCK:
            score = HadamardResponse(n, epsilon, layout=layout)._mean_cell_variance()
        else:
            score = _model_variance(n, epsilon, layout)
        computable = _partial_entries(n, layout) <= PARTIAL_BLOCK_ENTRIES
        # Ties go to the layout without a hole, then to fewer outputs.
        scored.append((score, layout[2], layout[0] * layout[1], computable, layout))
    best = min(scored)
    best_computable = min((entry for entry in scored if entry[3]), default=None)
    if best_computable is not None and (
            _partial_entries(n, _paper_layout(n, epsilon)) <= PARTIAL_BLOCK_ENTRIES
            or best_computable[0] <= (1 + COMPUTABLE_TOLERANCE) * best[0]):
        return best_computable[-1]
    return best[-1]


def hadamard_layout(n, epsilon):
    """The layout ``(n_blocks, block_size, hole)`` with the least average variance.

    Every layout without empty blocks is scored by the mean over the cells and the user
    types of a cell's per-user variance, ``(tr((Q^T D^-1 Q)^-1) - n) / n^2`` for the optimal
    decoder (exact for blocks of at most ``EXACT_SCORE_BLOCK`` outputs, else the block model,
    within 0.1% there), and the best is returned, among the layouts whose exact variance is
    computable for every structured workload (no large partial block) when the paper's
    layout is, else overall unless such a layout is at most ``COMPUTABLE_TOLERANCE`` worse.
    See the module docstring, "Choosing the layout".

    Parameters
    ----------
    n : int
        Number of cells.
    epsilon : float
        The privacy budget.

    Returns
    -------
    tuple of int
        ``(n_blocks, block_size, hole)``, for :class:`HadamardResponse` and
        :func:`hadamard_strategy`.

    See Also
    --------
    hadamard_shape : The paper's layout, that of specifications without a layout.

    References
    ----------
    .. [1] J. Acharya, Z. Sun and H. Zhang, "Hadamard response: Estimating distributions
       privately, efficiently, and with little communication", AISTATS 2019.

    Examples
    --------
    >>> hadamard_layout(1024, 1.0)    # one block, as in the high-privacy regime
    (1, 2048, 1)
    >>> hadamard_layout(1024, 2.0)    # four blocks of 256 cells, in their upper halves
    (4, 512, 256)
    """
    n = check_positive_int(n, "n")
    return _chosen_layout(n, float(check_epsilon(epsilon)))


class _NoClosedForm(Exception):
    """The structured variance needs something this Gram cannot give;
    :meth:`HadamardResponse._norms` then falls back to a dense Gram or the workload's rows.
    ``args``: what is missing, and what the user can do about it."""


# What to do when a Gram has no closed-form Walsh diagonals or block sums.
_WORKLOAD_ADVICE = ("Use a histogram, total, prefix or all-range workload (or weighted stacks "
                    "of them), or fewer queries.")


@register
class HadamardResponse(OutputIndexMechanism):
    """Hadamard response (Acharya, Sun and Zhang) with the optimal decoder, in the layout of
    blocks with the least error.

    The ``K`` outputs are cut into blocks of ``b`` (a power of two); the cells of a block are
    Hadamard columns of it, and a user reports an output of the favoured half of their block
    with ``e^eps`` times the probability of any other output (exactly epsilon-LDP). The
    layout, ``(n_blocks, block_size, hole)``, is by default the one with the least average
    variance (:func:`hadamard_layout`): one block while ``e^eps < 1 + 2 sqrt(2)``
    (``eps < 1.34``), as in the paper's high-privacy regime, else about ``(e^eps - 1) / 2``
    equally loaded blocks. ``randomize`` draws each user's output in ``O(1)`` from exactly their
    column of the strategy; the estimate is the optimal linear decoder ``V*`` of the
    strategy and every variance is exact, all computed from the block-Hadamard structure in
    ``O(K log b)`` without the dense strategy (see the module docstring). The specification
    is ``n``, ``eps`` and the layout.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n`` (``2^20`` cells and more).
    epsilon : float
        The privacy budget, ``> 0``.
    layout : None, "paper" or tuple of int, default=None
        None: :func:`hadamard_layout` (the least average variance). ``"paper"``: the
        paper's general-regime layout (:func:`hadamard_shape`), which a specification
        without a layout means. Or ``(n_blocks, block_size, hole)`` (see
        :func:`check_layout`).

    Attributes
    ----------
    layout : tuple of int
        ``(n_blocks, block_size, hole)``.
    n_blocks, block_size, hole : int
        ``B``, ``b`` and the hole of the full blocks (their cells are at the Hadamard
        columns ``hole .. b - 1``); ``n_outputs = B b``.
    Q : ndarray of shape (n_outputs, n_inputs)
        The dense strategy matrix, built on access for small domains only (refused past the
        dense size guard); the mechanism itself never uses it.

    See Also
    --------
    HadamardRandomizedResponse : One Hadamard coefficient per report (the same accuracy as
        one block, closed forms at any size).
    hadamard_strategy : The dense strategy of a layout.

    References
    ----------
    .. [1] J. Acharya, Z. Sun and H. Zhang, "Hadamard response: Estimating distributions
       privately, efficiently, and with little communication", AISTATS 2019.
    .. [2] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
       for linear queries under local differential privacy", PVLDB 13(11), 2020 (the
       optimal decoder of a strategy).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = HadamardResponse(1024, 1.0)
    >>> mechanism.layout                      # one block of 2048 outputs
    (1, 2048, 1)
    >>> z = mechanism.per_user_variance(np.eye(1024))  # per user of each type, all cells
    >>> round(float(z.mean()) / 1024, 3)                 # MSE * N per cell, uniform types
    4.675
    >>> HadamardResponse(1024, 1.0, layout="paper").layout   # specifications without a layout
    (2, 1024, 1)
    >>> reports = mechanism.randomize(np.array([0, 3, 5, 5]), np.random.default_rng(0))
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (1024,)
    """

    kind = "hadamard"

    def __init__(self, n_inputs, epsilon, layout=None):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.epsilon = check_epsilon(epsilon)
        self.name = "hadamard"
        paper = _paper_layout(self.n_inputs, self.epsilon)
        if layout is None:
            layout = hadamard_layout(self.n_inputs, self.epsilon)
        elif isinstance(layout, str):
            if layout != "paper":
                raise ValueError(f"layout must be None, 'paper' or a triple (n_blocks, "
                                 f"block_size, hole); got {layout!r}.")
            layout = paper
        self.layout = check_layout(self.n_inputs, layout)
        self.n_blocks, self.block_size, self.hole = self.layout
        # A specification without a layout means the paper's (every specification written
        # before the layout was recorded): that one is kept implicit, so that those
        # specifications, their fingerprints and the clients that read them stay valid.
        self.params = {} if self.layout == paper else dict(
            zip(("n_blocks", "block_size", "hole"), self.layout, strict=True))
        self.n_outputs = self.n_blocks * self.block_size
        half = self.block_size // 2
        # Integer weights of a favoured output (a) and of any other (d): the exact privacy
        # check of the integers sampled runs in ratio_weights.
        self.weights = ratio_weights(self.epsilon, half, self.n_outputs - half, self.name)
        self._dense_strategy = None
        self._set_up_decoder()

    # ------------------------------------------------------------------ decoder set-up
    def _set_up_decoder(self):
        """The blockwise quantities of the module docstring (steps 3-4): closed forms for the
        full and empty blocks, a few FWHTs for the partial block, O(B) for the coupling."""
        n, b, B, hole = self.n_inputs, self.block_size, self.n_blocks, self.hole
        # The realised g = (a / d - 1) / 2, one correctly rounded quotient of integers.
        a, d = self.weights
        g = self._g = (a - d) / (2 * d)
        self._Z = self.n_outputs + b * g
        self._load = b - hole  # cells of a full block
        self._n_full, self._partial_size = _block_counts(n, b, hole)
        self._has_partial = int(self._partial_size > 0)
        self._n_empty = B - self._n_full - self._has_partial
        if hole == 1:
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
        else:
            delta_full, t_full, s_full = self._set_up_holed_blocks()
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

    def _set_up_holed_blocks(self):
        """Closed forms of a full block with a hole (module docstring, "Blocks with a
        hole"): ``b Sigma = [[nu, g 1^T], [g 1, nu I - g P + (g - kappa) J]]`` on ``{0} + S``,
        its ``psi``, ``phi``, ``delta``, ``t``, ``1^T phi`` and the row sums. Returns
        ``(delta, t, s)``; every difference is written without cancellation."""
        n, b, hole, m, g = self.n_inputs, self.block_size, self.hole, self._load, self._g
        nu = n + g * m
        # The coefficients of Sigma v (divided by b): v_0, the cells' own values split into
        # their coset means (factor nu - g hole = n + g (m - hole)) and the rest (nu), the
        # sums over S (g - kappa = g (n + g (m - hole + 1)) / nu, kappa = g^2 (hole - 1) / nu).
        self._hole_terms = (nu / b, (n + g * (m - hole)) / b, nu / b,
                            g * (n + g * (m - hole + 1)) / nu / b, g / b)
        psi_inside = -(n * n + g * n * (3 * m - hole - 1) + 2 * g * g * m * (m - hole)) / nu / b
        omega = n + g * (m - hole) + g * m * (n + g * (m - hole + 1)) / nu
        self._psi_full = np.zeros(b)
        self._psi_full[0], self._psi_full[hole:] = n / b, psi_inside
        self._phi_full = np.zeros(b)
        self._phi_full[0], self._phi_full[hole:] = g * m / b, omega / b
        frequencies = np.arange(b)
        self._weights_full = 1.0 / np.where(frequencies % hole == 0, n + g * (m - hole), nu)
        self._weights_full[0] = 1.0 / (n + 2 * g * m)
        return n / b - m * psi_inside, m * psi_inside, m * omega / b

    def _hole_sigma(self, full, inside):
        """``Sigma v`` on full blocks with a hole, ``v`` of shape ``(..., F, b)`` with zeros at
        the hole's coordinates ``1 .. hole - 1`` and ``inside = sum_S v``."""
        hole = self.hole
        origin, coset, rest, ones, cross = self._hole_terms
        cells = full[..., hole:]
        grouped = cells.reshape(cells.shape[:-1] + (-1, hole))
        means = grouped.mean(axis=-1, keepdims=True)
        result = np.zeros_like(full)
        result[..., 0] = origin * full[..., 0] + cross * inside
        result[..., hole:] = (coset * means + rest * (grouped - means)).reshape(cells.shape) + (
            cross * full[..., 0] + ones * inside)[..., None]
        return result

    def _mean_cell_variance(self):
        """Per-user variance of one cell's estimate, averaged over the cells and over the
        user types: ``(tr((Q^T D^-1 Q)^-1) - n) / n^2``, the histogram's ``mean(z) / n``.

        ``tr((Q^T D^-1 Q)^-1) = (Z / g^2) tr(Pi_UU)`` (module docstring, step 4) from the
        blockwise closed forms in ``O(B)``, plus ``O(b' log b')`` for the diagonal of the
        partial block's ``Sigma`` (``b Sigma_cc = s(0) - (X_RC X_CC^-1 X_CR)_cc`` with
        ``X_CC^-1 = (I - g J / (d + g |C|)) / d`` and ``X[c, t] = g`` for the ``N_c`` cells
        ``t`` of ``C`` with ``c ^ t < L``): no dense matrix, whatever the layout.
        """
        n, b, g, hole = self.n_inputs, self.block_size, self._g, self.hole
        F, width = self._n_full, self._load
        trace = 0.0
        gamma = np.zeros((3, 3))
        if F:
            if hole == 1:
                diagonal = (n + g * (b - 1)) / b
            else:
                _origin, coset, rest, ones, _mixed = self._hole_terms
                diagonal = coset / hole + rest * (1.0 - 1.0 / hole) + ones
            psi_inside = self._psi_full[hole]
            trace += F * width * (diagonal - psi_inside * psi_inside / self._delta[0])
            inside = self._global_full[hole]
            gamma += F * width * np.outer(inside, inside)
        if self._has_partial:
            L, width_p, m = self._partial_length, self._partial_width, self._partial_size
            walsh = interval_walsh(L, width_p).astype(float)
            # N_c = #{t in C : c ^ t < L} = L - #{c' < L : c ^ c' < L}.
            counts = L - np.rint(fwht(walsh * walsh)[:L] / width_p)
            d = n + g * (m - 1)
            removed = (g * g * counts - g**3 * counts * counts / (d + g * (width_p - L))) / d
            sigma_diagonal = (n + g * m - removed[1:]) / b
            psi = self._psi_partial[1:]
            trace += float(np.sum(sigma_diagonal) - psi @ psi / self._delta[F])
            cells = self._global_partial[1:]
            gamma += cells.T @ cells
        trace -= float(np.sum(self._global_kernel * gamma))
        return ((self._Z / (g * g)) * trace - n) / (n * n)

    def _cell_transform(self, cells, axis=-1):
        """``H_b`` of values on the cells of full blocks (at the columns ``hole .. b - 1``,
        zero elsewhere): ``cells`` of length ``b - hole`` along ``axis``, the result of length
        ``b``. For ``hole = b / 2``, ``H_b[y, hole + j] = (-1)^[y >= hole] H_hole[y mod hole,
        j]``: one transform of half the size."""
        b, hole = self.block_size, self.hole
        cells = np.moveaxis(np.asarray(cells, dtype=float), axis, -1)
        if 2 * hole == b:
            half = fwht(cells, axis=-1)
            result = np.concatenate([half, -half], axis=-1)
        else:
            padded = np.zeros(cells.shape[:-1] + (b,))
            padded[..., hole:] = cells
            result = fwht(padded, axis=-1)
        return np.moveaxis(result, -1, axis)

    def _transform_at_cells(self, values):
        """``(H_b v)(c)`` at the cells' columns ``c = hole .. b - 1`` of full blocks, for
        ``values (..., b)``: ``H_hole (v_low - v_high)`` when ``hole = b / 2``."""
        b, hole = self.block_size, self.hole
        if 2 * hole == b:
            return fwht(values[..., :hole] - values[..., hole:], axis=-1)
        return fwht(values, axis=-1)[..., hole:]

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
        g, F, P, hole = self._g, self._n_full, self._has_partial, self.hole
        psi, phi = self._psi_full, self._phi_full
        if hole == 1:
            if full_sums is None:
                full_sums = full.sum(axis=-1)
            sums = full_sums[..., None]
            sigma_full = self._full_scale * full + (g / self.block_size) * sums
            # N^T Sigma v = Psi^T v - (phi^T v / g) 1; on a full block psi and phi are
            # (value at 0 - value elsewhere) e_0 + (value elsewhere) 1.
            dots = [psi[1] * full_sums + (psi[0] - psi[1]) * full[..., 0]]
            phi_dot = (phi[1] * full_sums + (phi[0] - phi[1]) * full[..., 0]).sum(axis=-1)
        else:
            # Only the coordinates R = {0} + S are used: the hole's are dropped (a transform
            # fills them).
            full = full.copy()
            full[..., 1:hole] = 0.0
            inside = full[..., hole:].sum(axis=-1)
            sigma_full = self._hole_sigma(full, inside)
            dots = [psi[0] * full[..., 0] + psi[hole] * inside]
            phi_dot = (phi[0] * full[..., 0] + phi[hole] * inside).sum(axis=-1)
        sigma_partial = self._sigma_partial(partial) if P else partial
        sigma_empty = self._psi_empty * empty  # Sigma = n / b = psi in an empty block
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
        b, F, hole, load = self.block_size, self._n_full, self.hole, self._load
        lead = values.shape[:-1]
        full = np.zeros(lead + (F, b))
        full[..., hole:] = values[..., :F * load].reshape(lead + (F, load))
        partial = np.zeros(lead + (self._partial_length,))
        partial[..., 1:] = values[..., F * load:]
        return full, partial, np.zeros(lead + (self._n_empty,))

    def _join_inputs(self, full, partial):
        """The input coordinates ``U`` of an ``R`` vector, as ``(..., n)``."""
        lead = full.shape[:-2]
        return np.concatenate([full[..., self.hole:].reshape(lead + (-1,)), partial[..., 1:]],
                              axis=-1)

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Privatize user types ``indices``: one output index per user, ``O(1)`` work each.

        Draws exactly from column ``u`` of the strategy (:func:`hadamard_strategy` with this
        layout; see the module docstring): one exactly uniform integer per user, no loop
        over users or outputs.

        Parameters
        ----------
        indices : array-like of int, shape (n_users,)
            Each user's cell, in ``[0, n_inputs)``.
        rng : numpy.random.Generator
            The randomness (seeded only for simulation).

        Returns
        -------
        ndarray of shape (n_users,)
            Each user's output index, in the smallest unsigned integer type that holds
            ``n_outputs``.
        """
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        b, n_outputs = self.block_size, self.n_outputs
        block, column = _block_and_column(indices, b, self.hole, self._n_full)
        start = block * b  # first output of the user's block; column: never 0
        half = b // 2
        favoured, index = sample_ratio_law(rng, n_users, half, n_outputs - half,
                                           *self.weights)
        # The wanted parity of popcount(position & column): 0 (favoured, H = +1) or 1; the
        # index-th position of that parity (index < b / 2 inside the block).
        wanted = (~favoured).astype(np.uint8)
        low = column & -column  # the lowest set bit of the column
        position = ((index & -low) << 1) | (index & (low - 1))  # a 0 inserted at that bit
        wrong = hadamard_parity(position, column) != wanted
        position |= wrong * low
        reports = start + position
        if n_outputs > b:
            outside = index - half  # the others past the block's own b / 2
            outside += b * (outside >= start)  # skip the user's own block
            reports = np.where(favoured | (index < half), reports, outside)
        return reports.astype(report_dtype(n_outputs))

    def exact_law(self, value):
        """The exact law of one user's report: weight ``a`` on the favoured half of its
        block, ``d`` on every other output, over ``Z = (b/2) a + (K - b/2) d``.

        Parameters
        ----------
        value : int
            The user's cell, in ``[0, n)``.

        Returns
        -------
        ExactLaw
            Outputs ``0 .. K - 1`` (report dtype), integer weights and their total.

        Examples
        --------
        >>> mechanism = HadamardResponse(3, 1.0)
        >>> law = mechanism.exact_law(0)
        >>> law.outputs.tolist(), sorted(set(law.weights)) == sorted(mechanism.weights)
        ([0, 1, 2, 3], True)
        """
        value = int(check_type_indices([value], self.n_inputs)[0])
        check_law_size(self.n_outputs, self.name)
        b = self.block_size
        block, column = _block_and_column(np.array([value]), b, self.hole, self._n_full)
        favoured = np.zeros(self.n_outputs, dtype=bool)
        positions = np.arange(b)
        favoured[int(block[0]) * b + positions] = hadamard_parity(positions, column[0]) == 0
        weights = ratio_law_weights(favoured, *self.weights)
        return ExactLaw(np.arange(self.n_outputs).astype(report_dtype(self.n_outputs)),
                        weights, sum(weights))

    # ------------------------------------------------------------------ server side
    def estimate(self, statistic):
        """The optimal decoder's unbiased estimate ``V* y`` of the users per cell, in
        ``O(K log b)``: one FWHT per block, then ``(Z / g) Pi`` (module docstring).

        Parameters
        ----------
        statistic : array-like of int, shape (n_outputs,)
            The number of reports of each output (``aggregate(reports)``).

        Returns
        -------
        ndarray of shape (n_inputs,)
            The estimated number of users per cell (unbiased; it sums to the number of
            reports).
        """
        counts = check_output_counts(statistic, self.n_outputs, self.name)
        full, partial, empty = self._split_outputs(np.asarray(counts, dtype=float))
        weighted = full * self._weights_full
        if self.hole == 1:
            full = fwht(weighted, axis=-1)
        else:  # only the coordinates 0 and S are used
            full = np.zeros_like(weighted)
            full[..., 0] = weighted.sum(axis=-1)
            full[..., self.hole:] = self._transform_at_cells(weighted)
        if self._has_partial:
            partial = fwht(partial / self._partial_rowsums)[: self._partial_length]
        empty = empty / self.n_inputs
        full, partial, _ = self._project(full, partial, empty,
                                         full_sums=self.block_size * weighted[..., 0])
        return (self._Z / self._g) * self._join_inputs(full, partial)

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of the output counts (module docstring): per user, an output uniform
        over all ``K`` or one uniform on the favoured half of its block. A simulation (no
        report leaves a device): numpy's floating-point binomial with the realised
        ``b g / Z``, not the integer sampler of :meth:`randomize`. Both parts are drawn
        per user when they have at most ``K`` users (``O(N)``), else as a multinomial and by
        :func:`~._hadamard_blocks.hyperplane_counts`: ``O(K log b)`` whatever the number of
        users ``N``.

        Parameters
        ----------
        type_counts : array-like of int, shape (n_inputs,)
            The number of users of each cell.
        rng : numpy.random.Generator
            The randomness.

        Returns
        -------
        ndarray of int64, shape (n_outputs,)
            Output counts with exactly the law of ``aggregate(randomize(users))``.
        """
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
            block, column = _block_and_column(cells, b, self.hole, self._n_full)
            position = rng.integers(0, b, size=n_favoured)
            position ^= hadamard_parity(position, column) * (column & -column)
            statistic += np.bincount(block * b + position, minlength=K)
        else:
            block, column = _block_and_column(np.arange(self.n_inputs), b, self.hole,
                                              self._n_full)
            columns = np.zeros(K, dtype=np.int64)
            columns[block * b + column] = favoured
            statistic += hyperplane_counts(columns.reshape(self.n_blocks, b), rng).ravel()
        return statistic.astype(np.int64)

    def strategy_matvec(self, x):
        """``Q x`` without the dense strategy: the probability of each output when the users'
        types have the distribution (or counts) ``x``, in ``O(K log b)``.

        ``(Q x)_o = (sum(x) + g x(beta) + g (H_b x_beta)(y)) / Z`` for output ``o`` = output
        ``y`` of block ``beta``, ``x_beta`` the block's cells at their Hadamard columns (the
        channel of a maximum-likelihood estimate, for any layout).

        Parameters
        ----------
        x : array-like of shape (n_inputs,)
            Weights of the user types.

        Returns
        -------
        ndarray of shape (n_outputs,)
            ``Q x``.

        See Also
        --------
        strategy_rmatvec : The transpose, ``Q^T r``.

        Examples
        --------
        >>> mechanism = HadamardResponse(6, 1.0)
        >>> x = np.array([0.5, 0.1, 0.1, 0.1, 0.1, 0.1])
        >>> bool(np.allclose(mechanism.strategy_matvec(x), mechanism.Q @ x))
        True
        """
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n_inputs,):
            raise ValueError(f"x must have shape ({self.n_inputs},), got {x.shape}.")
        g, b, hole = self._g, self.block_size, self.hole
        full, partial, _ = self._split_inputs(x)
        total = x.sum()
        transformed = (fwht(full, axis=-1) if hole == 1
                       else self._cell_transform(full[:, hole:]))
        parts = [((total + g * full[:, hole:].sum(axis=1, keepdims=True))
                  + g * transformed).ravel()]
        if self._has_partial:
            padded = np.zeros(self._partial_width)
            padded[:self._partial_length] = partial
            folded = total + g * partial[1:].sum() + g * fwht(padded)
            parts.append(np.tile(folded, b // self._partial_width))
        parts.append(np.full(self._n_empty * b, total))
        return np.concatenate(parts) / self._Z

    def strategy_rmatvec(self, r):
        """``Q^T r`` without the dense strategy, in ``O(K log b)``.

        Parameters
        ----------
        r : array-like of shape (n_outputs,)
            One value per output.

        Returns
        -------
        ndarray of shape (n_inputs,)
            ``Q^T r``: for each type, the expectation of ``r`` at its report.

        See Also
        --------
        strategy_matvec : ``Q x``.

        Examples
        --------
        >>> mechanism = HadamardResponse(6, 1.0)
        >>> r = np.arange(mechanism.n_outputs, dtype=float)
        >>> bool(np.allclose(mechanism.strategy_rmatvec(r), mechanism.Q.T @ r))
        True
        """
        r = np.asarray(r, dtype=float)
        if r.shape != (self.n_outputs,):
            raise ValueError(f"r must have shape ({self.n_outputs},), got {r.shape}.")
        full, partial, empty = self._split_outputs(r)
        # _from_norms takes the partial block's outputs folded (the value of each of the
        # b / b' outputs that share a row of H_b', here their mean) and one value for every
        # output of the empty blocks (every type reports each with probability 1 / Z).
        if self._has_partial:
            partial = partial / (self.block_size // self._partial_width)
        mean_empty = empty.sum() / (self._n_empty * self.block_size) if self._n_empty else 0.0
        return self._from_norms(full, partial, mean_empty)

    def strategy_matrix(self):
        """The dense ``K x n`` strategy (small domains only; the exact privacy tests).

        Returns
        -------
        ndarray of shape (n_outputs, n_inputs)
            :func:`hadamard_strategy` with this mechanism's layout (a new array).
        """
        return np.array(hadamard_strategy(self.n_inputs, self.epsilon, self.layout))

    @property
    def Q(self):
        """The dense strategy matrix, built once on first access (small domains only)."""
        if self._dense_strategy is None:
            Q = hadamard_strategy(self.n_inputs, self.epsilon, self.layout)
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
        """Always True: the strategy has full column rank, every query is answered.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries (not inspected).

        Returns
        -------
        bool
            True.
        """
        return True

    def supports_gram(self, gram):
        return True

    def per_user_variance(self, gram):
        """Exact ``z_u = tr(G Cov_u)`` of the optimal decoder for the workload with Gram
        ``G = W^T W`` (operator, workload or array): ``sum_o Q[o, u] ||W V* e_o||^2 - G_uu``
        from the structure (module docstring, step 5).

        Parameters
        ----------
        gram : Gram operator, workload or array-like of shape (n_inputs, n_inputs)
            The workload's Gram matrix ``W^T W`` (or the workload itself).

        Returns
        -------
        ndarray of shape (n_inputs,)
            For each cell, the variance of the workload's answers (summed over the queries)
            that one user of that cell contributes.

        Raises
        ------
        ValueError
            If the Gram has no structure this mechanism can use and is too large for its
            dense form or its rows (the message says what to use instead).
        """
        rows = gram if is_workload(gram) else None  # kept for the row fallback
        gram = check_gram(gram, self.n_inputs)
        return self._from_norms(*self._norms(gram, rows)) - gram.diagonal()

    def sum_of_squared_answers(self, statistic, gram):
        """``sum_o y_o ||W V* e_o||^2``: the squared answers of each report's own
        decoded contribution, summed (as the dense factorization mechanism computes it).

        Parameters
        ----------
        statistic : array-like of int, shape (n_outputs,)
            Output counts ``y`` (``aggregate(reports)``).
        gram : Gram operator, workload or array-like of shape (n_inputs, n_inputs)
            The workload's Gram matrix.

        Returns
        -------
        float
            The sum.
        """
        counts = check_output_counts(statistic, self.n_outputs, self.name)
        full, partial, empty = self._split_outputs(np.asarray(counts, dtype=float))
        rows = gram if is_workload(gram) else None
        norms = self._norms(check_gram(gram, self.n_inputs), rows)
        norms_full, norms_partial, norm_empty = norms
        return float(np.sum(full * norms_full) + partial @ norms_partial
                     + norm_empty * empty.sum())

    def query_variance(self, workload_matrix):
        """Per-user variance of each query for each type: ``(p, n)`` matrix ``z[i, u]``
        (``O(K log b)`` per query, in chunks of rows).

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries, one dense row each.

        Returns
        -------
        ndarray of shape (n_queries, n_inputs)
            Entry ``[i, u]``: the variance of query ``i``'s answer that one user of cell
            ``u`` contributes.
        """
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        z = np.empty_like(W)
        step = max(1, ROW_CHUNK_ENTRIES // self.n_outputs)
        for start in range(0, W.shape[0], step):
            rows = W[start:start + step]
            norms = [part * part for part in self._decode_rows(rows)]
            z[start:start + step] = self._from_norms(*norms) - rows * rows
        return z

    def query_variance_summary(self, workload):
        """``(worst, average)`` per query of ``query_variance`` over the user types.

        Workloads of intervals (``workload.intervals()``: ranges, prefix, histogram, total,
        all-range when listable) go through :meth:`range_variance_summary`, structured (no
        dense row); a weighted stack block by block; other workloads are reduced from their
        dense rows (refused past ``2^24`` query-cell entries).

        Parameters
        ----------
        workload : Workload or array-like of shape (n_queries, n_inputs)
            The queries.

        Returns
        -------
        worst : ndarray of shape (n_queries,)
            Per query, the largest per-user variance over the user types.
        average : ndarray of shape (n_queries,)
            Per query, the mean over the user types.
        """
        check_workload_width(workload, self.n_inputs)
        if is_workload(workload) and self._ranges_are_structured():
            try:
                intervals = workload.intervals()
            except ValueError:  # too many to list
                intervals = None
            if intervals is not None:
                return self.range_variance_summary(*intervals)
            blocks, weights = (getattr(workload, "blocks", None),
                               getattr(workload, "weights", None))
            if blocks is not None and weights is not None and len(blocks) == len(weights):
                # A weighted union (workloads.Stack): its rows are its blocks' rows, scaled.
                parts = [self.query_variance_summary(block) for block in blocks]
                return tuple(np.concatenate([w * w * part[i] for w, part in
                                             zip(weights, parts, strict=True)])
                             for i in (0, 1))
        return super().query_variance_summary(workload)

    def _ranges_are_structured(self):
        """The structured range summary transforms the partial block once per query: only
        when that block is small (a large one holds most cells of a one-block layout)."""
        return not self._has_partial or self._partial_width <= RANGE_PARTIAL_OUTPUTS

    def range_variance_summary(self, lo, hi):
        """Worst and average per-user variance of the closed ranges ``[lo[i], hi[i]]``.

        Structured (module docstring, "Variance of one interval"): ``O(log^2 b)`` per range
        for the full blocks, plus ``O(b' log b')`` for the partial block, if any; no dense
        row. 10^4 ranges over 2^20 cells take a few seconds.

        Parameters
        ----------
        lo, hi : array-like of int, shape (n_queries,)
            First and last cell of each range, ``0 <= lo <= hi < n_inputs``.

        Returns
        -------
        worst : ndarray of shape (n_queries,)
            Per range, the largest per-user variance over the user types.
        average : ndarray of shape (n_queries,)
            Per range, the mean over the user types.

        Raises
        ------
        ValueError
            If a bound is out of range or ``lo > hi``.
        """
        lo = np.atleast_1d(np.asarray(lo))
        hi = np.atleast_1d(np.asarray(hi))
        for name, bound in (("lo", lo), ("hi", hi)):
            if bound.ndim != 1 or not np.issubdtype(bound.dtype, np.integer):
                raise ValueError(f"{name} must be a 1-D array of integer cells, got "
                                 f"{bound.dtype} of shape {bound.shape}.")
        if lo.shape != hi.shape:
            raise ValueError(f"lo and hi must have the same shape, got {lo.shape} and "
                             f"{hi.shape}.")
        bad = (lo < 0) | (hi >= self.n_inputs) | (lo > hi)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"range {i} = [{lo[i]}, {hi[i]}] is not within [0, "
                             f"{self.n_inputs - 1}] with lo <= hi.")
        lo, hi = lo.astype(np.int64), hi.astype(np.int64)
        worst, average = np.empty(lo.size), np.empty(lo.size)
        for start in range(0, lo.size, RANGE_CHUNK):
            chunk = slice(start, start + RANGE_CHUNK)
            worst[chunk], average[chunk] = self._range_summary_chunk(lo[chunk], hi[chunk])
        return worst, average

    def _range_summary_chunk(self, lo, hi):
        """:meth:`range_variance_summary` for one chunk of ranges (module docstring, "Variance
        of one interval")."""
        n, b, hole, g, Z = self.n_inputs, self.block_size, self.hole, self._g, self._Z
        width, F, P = self._load, self._n_full, self._has_partial
        scale = Z / (g * g)
        kernel = self._global_kernel
        full_end = F * width
        # The cells of each range in the full blocks, and in the partial block (its columns).
        last_full = np.minimum(hi, full_end - 1)
        count_full = np.maximum(last_full - lo + 1, 0)
        inside = self._global_full[hole]  # Gv on every cell of a full block
        zeta = count_full[:, None] * inside
        if P:
            touched = hi >= full_end
            first_col = np.maximum(lo, full_end) - full_end + 1
            last_col = np.where(touched, hi - full_end + 1, 0)
            cells = self._global_partial[1:]
            cumulative = np.vstack([np.zeros(3), np.cumsum(cells, axis=0)])
            zeta = zeta + np.where(touched[:, None], cumulative[last_col]
                                   - cumulative[np.maximum(first_col - 1, 0)], 0.0)
        kappa = zeta @ kernel  # K zeta, K symmetric
        omega = kappa @ inside  # Gv K zeta on a full block's cell
        # Sigma on a full block: alpha w + mu (coset means of w) + ones (sum of w).
        if hole == 1:
            alpha, mu, ones = self._full_scale, 0.0, g / b
            weights = self._weights_full[[0, 1, 1]]
        else:
            _origin, coset, rest, ones, _mixed = self._hole_terms
            alpha, mu = rest, coset - rest
            weights = self._weights_full[[0, hole, 1]]
        psi_inside = self._psi_full[hole]
        per_cell = ones - psi_inside * psi_inside / self._delta[0]
        # Slots 0 and 1: the full blocks holding lo and hi (one when they coincide), as
        # column intervals [p, q); blocks strictly between are covered, the others untouched.
        has_full = count_full > 0
        first_block = np.where(has_full, lo // width, 0)
        last_block = np.where(has_full, last_full // width, 0)
        two = has_full & (last_block > first_block)
        p = np.stack([hole + lo - first_block * width, np.full(lo.shape, hole)], axis=1)
        q = np.stack([hole + np.minimum(last_full, first_block * width + width - 1)
                      - first_block * width + 1, hole + last_full - last_block * width + 1],
                     axis=1)
        used = np.stack([has_full, two], axis=1)
        p, q = np.where(used, p, hole), np.where(used, q, hole)  # unused: empty intervals
        counts = q - p
        n_covered = np.where(two, last_block - first_block - 1, 0)
        n_untouched = F - has_full - two - n_covered
        kappa_slot = per_cell * counts - omega[:, None]
        sigma_slot = np.where(used, (alpha + mu) * counts + kappa_slot * width, 0.0)
        kappa_untouched, kappa_covered = -omega, per_cell * width - omega
        sigma_untouched = kappa_untouched * width
        sigma_covered = (alpha + mu) * width + kappa_covered * width
        shift = hole.bit_length() - 1
        # Sum over the range of the coset means, sum_cosets |I and coset|^2 / hole.
        first_coset, last_coset = p >> shift, (q - 1) >> shift
        head = np.minimum(q, (first_coset + 1) << shift) - p
        tail = q - np.maximum(p, last_coset << shift)
        coset_squares = np.where(
            first_coset == last_coset, counts * counts,
            head * head + tail * tail + np.maximum(last_coset - first_coset - 1, 0) * hole**2)
        coset_squares = np.where(counts > 0, coset_squares / hole, 0.0)
        in_range = (alpha + kappa_slot) * counts + mu * coset_squares
        total = (n_untouched * sigma_untouched + n_covered * sigma_covered
                 + sigma_slot.sum(axis=1))
        quadratic = (n_covered * (alpha + mu + kappa_covered) * width + in_range.sum(axis=1))
        if P:
            partial = self._range_partial(touched, first_col, last_col, kappa)
            total = total + partial["sigma"]
            quadratic = quadratic + partial["in_range"]
            self._range_partial_outputs(partial, total)
        n_cells = (hi - lo + 1).astype(float)
        average = (scale * quadratic - n_cells) / n

        # Output values per class of y (0; multiples of the hole; the rest), for a block
        # with (kappa, sigma, count): P + R W(y) with W the transform of the interval.
        def classes(kappa_b, sigma_b):
            base = total if np.ndim(kappa_b) == 1 else total[:, None]
            base = base + g * sigma_b
            factors = [g * kappa_b * width, -g * kappa_b * hole, 0.0 * kappa_b]
            p_values = [scale * weights[k] * (base + factors[k]) for k in range(3)]
            r_values = [scale * weights[k] * g * (alpha + (mu if k < 2 else 0.0))
                        for k in range(3)]
            return p_values, r_values

        def sums(p_values, r_values, count, cm0):
            """sum_y r(y) and the constant part of (H r)(c) on the cells."""
            (p0, p1, p2), (r0, r1, r2) = p_values, r_values
            at_zero = (p0 + r0 * count) ** 2
            block = (at_zero + p1 * p1 * (b // hole - 1) - 2 * p1 * r1 * count
                     + r1 * r1 * (b * cm0 - count * count))
            if hole > 1:
                block = block + p2 * p2 * (b - b // hole) + r2 * r2 * b * (count - cm0)
            constant = at_zero - p1 * p1 - 2 * p1 * r1 * count - r1 * r1 * count * count
            return block, constant

        def varying(p_values, r_values, indicator, means, corr, coset_mean):
            """The part of (H r)(c) that depends on the cell."""
            (_p0, p1, p2), (_r0, r1, r2) = p_values, r_values
            value = 2 * b * p1 * r1 * means + b * r1 * r1 * coset_mean
            if hole > 1:
                value = value + (2 * b * p2 * r2 * (indicator - means)
                                 + b * r2 * r2 * (corr - coset_mean))
            return value

        pv_u, rv_u = classes(kappa_untouched, sigma_untouched)
        block_u, const_u = sums(pv_u, rv_u, 0.0, 0.0)
        pv_c, rv_c = classes(kappa_covered, sigma_covered)
        block_c, const_c = sums(pv_c, rv_c, float(width), float(width))
        cover_corr = float(width - hole)
        var_c = varying(pv_c, rv_c, 1.0, 1.0, cover_corr, cover_corr)
        pv_s, rv_s = classes(kappa_slot, sigma_slot)
        cm0 = coset_correlation(p, q, 0, hole) / hole
        block_s, const_s = sums(pv_s, rv_s, counts, cm0)
        everything = (n_untouched * block_u + n_covered * block_c
                      + np.where(used, block_s, 0.0).sum(axis=1))
        if P:
            everything = everything + partial["block"]
        everything = everything + self._n_empty * b * (scale * total / n) ** 2
        candidates = [np.full(lo.shape, -np.inf)]
        if F:
            candidates.append(np.where(n_untouched > 0, (everything + g * block_u
                                                         + g * const_u) / Z, -np.inf))
            candidates.append(np.where(n_covered > 0, (everything + g * block_c + g * const_c
                                                       + g * var_c) / Z - 1.0, -np.inf))
            # A boundary block: the largest over its cells, among the candidates of the
            # module docstring (where the cell functions take each of their values).
            cells = self._range_candidates(p, q)  # (p, 2, C)
            valid = (cells >= hole) & used[..., None]
            pe, qe = p[..., None], q[..., None]
            indicator = ((cells >= pe) & (cells < qe)).astype(float)
            coset_start = (cells >> shift) << shift
            means = np.clip(np.minimum(qe, coset_start + hole) - np.maximum(pe, coset_start),
                            0, hole) / hole
            corr = interval_correlation(pe, qe, cells).astype(float)
            coset_mean = coset_correlation(pe, qe, cells, hole) / hole
            expand = [value[..., None] for value in pv_s], [value[..., None] for value in rv_s]
            z = (everything[:, None, None] + g * block_s[..., None] + g * const_s[..., None]
                 + g * varying(*expand, indicator, means, corr, coset_mean)) / Z - indicator
            candidates.append(np.where(valid, z, -np.inf).max(axis=(1, 2)))
        if P:
            z = (everything[:, None] + g * partial["block"][:, None]
                 + g * partial["transform"]) / Z
            z[partial["rows"]] -= partial["indicator"]
            candidates.append(z.max(axis=1))
        worst = np.max(np.stack(candidates), axis=0)
        return worst, average

    def _range_candidates(self, p, q):
        """Cells where the functions of a boundary block take all their values: the
        references ``0, p, q, p ^ q`` (inside the block) and each with one bit flipped."""
        b = self.block_size
        references = np.stack([np.zeros_like(p), p, q, p ^ q], axis=-1)
        references = np.where(references < b, references, 0)
        flips = np.int64(1) << np.arange(b.bit_length() - 1, dtype=np.int64)
        flipped = references[..., None] ^ flips
        return np.concatenate([references, flipped.reshape(flipped.shape[:-2] + (-1,))],
                              axis=-1)

    def _range_partial(self, touched, first_col, last_col, kappa):
        """The partial block's part of a range's ``pi = Pi_UU w``: ``-Gv K zeta`` on its
        cells, plus ``Sigma w - psi (psi^T w) / delta`` (four FWHTs) for the ranges that
        reach the block. Returns its sum and its sum over the range, and for the ranges that
        reach the block their rows, that second part and their indicator on the cells."""
        L = self._partial_length
        cells = self._global_partial[1:]
        sigma = -(kappa @ cells.sum(axis=0))
        in_range = np.zeros(kappa.shape[0])
        rows = np.flatnonzero(touched)
        extra = indicator = np.zeros((0, L - 1))
        if rows.size:
            columns = np.arange(L)
            weights = ((columns >= first_col[rows, None])
                       & (columns <= last_col[rows, None])).astype(float)
            weights[:, 0] = 0.0
            psi = self._psi_partial
            extra = (self._sigma_partial(weights)[:, 1:]
                     - np.outer(weights @ psi, psi[1:]) / self._delta[self._n_full])
            indicator = weights[:, 1:]
            sigma[rows] += extra.sum(axis=1)
            in_range[rows] = np.einsum("ij,ij->i", extra - kappa[rows] @ cells.T, indicator)
        return {"sigma": sigma, "in_range": in_range, "kappa": kappa, "rows": rows,
                "extra": extra, "indicator": indicator}

    def _range_partial_basis(self):
        """The partial block's output values as ``v = sum_k c_k U_k`` with ``c = (total,
        K zeta)`` for a range that does not reach the block, and what ``r = v^2`` needs:
        ``U (4, b')``, ``sum_y U_k U_l`` and ``(H U_k U_l)`` at the cells (cached)."""
        if getattr(self, "_partial_basis", None) is None:
            L, width, g = self._partial_length, self._partial_width, self._g
            scale = self._Z / (g * g)
            coords = np.zeros((width, 3))
            coords[0] = -self._global_partial[1:].sum(axis=0)
            coords[1:L] = -self._global_partial[1:]
            basis = np.empty((4, width))
            basis[0] = scale / self._partial_rowsums
            basis[1:] = (scale * g) * fwht(coords, axis=0).T / self._partial_rowsums
            pairs = [(k, j) for k in range(4) for j in range(k, 4)]
            products = np.array([basis[k] * basis[j] for k, j in pairs])
            self._partial_basis = (basis, pairs, products.sum(axis=1),
                                   fwht(products, axis=-1)[:, 1:L])
        return self._partial_basis

    def _range_partial_outputs(self, partial, total):
        """Given the total of ``pi``: ``sum_o r_o`` over the partial block's ``b`` outputs and
        ``(H_b r)(c)`` at its cells, ``r = v^2`` (quadratic forms in the cached basis; one
        FWHT pair per range that reaches the block)."""
        L, width, g = self._partial_length, self._partial_width, self._g
        fold = self.block_size // width
        basis, pairs, sums, transforms = self._range_partial_basis()
        factors = np.column_stack([total, partial["kappa"]])  # (p, 4)
        weights = np.array([factors[:, k] * factors[:, j] * (1 if k == j else 2)
                            for k, j in pairs]).T  # (p, 10)
        block = weights @ sums
        transform = weights @ transforms
        rows = partial["rows"]
        if rows.size:
            # v = (the basis part) + scale g H(extra) / a: r recomputed directly.
            coords = np.zeros((rows.size, width))
            coords[:, 1:L] = partial["extra"]
            coords[:, 0] = partial["extra"].sum(axis=1)
            values = factors[rows] @ basis + (self._Z / g) * fwht(coords, axis=-1) / (
                self._partial_rowsums)
            squares = values * values
            block[rows] = squares.sum(axis=1)
            transform[rows] = fwht(squares, axis=-1)[:, 1:L]
        partial["block"] = fold * block
        partial["transform"] = fold * transform

    def output_answers(self, workload_matrix):
        """``(p, K)``: ``W V* e_o`` for every output ``o``, the change of each answer when one
        report names ``o`` (step 6: ``V*^T w`` per query), in output order.

        The partial block's outputs ``y`` take the folded value at ``y mod b'`` and every
        output of an empty block the same value.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries.

        Returns
        -------
        ndarray of shape (n_queries, n_outputs)
            Each query's answer to one report of each output.
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
        inputs_full, inputs_partial = full[..., self.hole:], partial[..., 1:]
        block_full = inputs_full.sum(axis=-1)  # (p, F)
        block_partial = inputs_partial.sum(axis=-1)
        total = block_full.sum(axis=-1) + block_partial  # (p,)
        # E t: coordinate 0 of each block gets sum(t) + g (the block's sum), the others g t.
        # Its transform is sum(t) 1 + g H (block sum, t): added after the transform, so that
        # no large g t cancels out of it (b = 2 with e^eps >> n).
        coords = np.zeros_like(full)  # the hole's coordinates stay 0
        coords[..., 0] = block_full
        coords[..., self.hole:] = inputs_full
        scale = self._Z / (g * g)
        if self.hole == 1:
            transformed = fwht(coords, axis=-1)
        else:
            transformed = coords[..., :1] + self._cell_transform(coords[..., self.hole:])
        decoded_full = scale * self._weights_full * (total[:, None, None] + g * transformed)
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
            favoured = block_full[..., None] + self._transform_at_cells(full)
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
        Walsh diagonals or block sums at the width of a full block, or the partial block is
        too big."""
        n, b, g = self.n_inputs, self.block_size, self._g
        F, width = self._n_full, self._load
        if F:
            blocks = gram_with_blocks(gram, [width])
            if blocks is None:
                raise _NoClosedForm(f"it has no block sums over {width} consecutive cells.",
                                    _WORKLOAD_ADVICE)
            if 2 * self.hole == b:
                # h_y on the upper half is +-(row y mod hole of H_hole): half the size.
                diagonals = walsh_block_diagonals(blocks, F, width, offset=0)
                if diagonals is not None:
                    diagonals = np.concatenate([diagonals, diagonals], axis=-1)
            else:
                diagonals = walsh_block_diagonals(blocks, F, width, offset=self.hole)
            if diagonals is None:
                raise _NoClosedForm(
                    f"the Walsh transform of its diagonal blocks of {width} cells has no "
                    "closed form.", _WORKLOAD_ADVICE)
        if self._has_partial and (self._partial_size * self._partial_width
                                  > PARTIAL_BLOCK_ENTRIES):
            raise _NoClosedForm(
                f"the last block holds {self._partial_size} of its {b - 1} cells, and its "
                f"exact variance needs a dense {self._partial_size} x {self._partial_width} "
                f"matrix (limit {PARTIAL_BLOCK_ENTRIES} entries).",
                "The last block is full or small for n = 2^k - 1 cells, or n = 2^k (up to "
                "2^23) with epsilon > ln 2; otherwise use fewer queries (their rows are "
                "summed) or another frequency oracle ('olh', 'hrr').")
        # The three global vectors on the inputs, and Omega = Gv_U K with its products.
        omega = np.empty((n, 3))
        # Constant on the cells of the full blocks.
        omega[:F * width] = self._global_full[self.hole] @ self._global_kernel
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
        if self.hole > 1:
            return self._holed_phi(blocks, diagonals, g_omega, cross)
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

    def _holed_phi(self, blocks, diagonals, g_omega, cross):
        """:meth:`_full_phi` for full blocks with a hole (module docstring, "Blocks with a
        hole"): ``Lambda h_y = lambda(y) h_S + rho(y) 1_S`` and ``Gv^T h_y`` depend on ``y``
        only through ``T(y) = sum_S h_y`` and whether ``y`` is a multiple of the hole, so the
        row sums and ``G Omega`` take one FWHT each and are weighted per ``y``."""
        b, F, hole, width = self.block_size, self._n_full, self.hole, self._load
        _origin, coset, rest, ones, mixed = self._hole_terms
        aligned = np.arange(b) % hole == 0
        sums = np.where(aligned, -float(hole), 0.0)  # T(y) = b [y = 0] - hole [y = 0 mod hole]
        sums[0] += b
        lam = np.where(aligned, coset, rest)
        ratio = self._psi_full[hole] / self._delta[0]
        rho = (mixed - ratio * self._psi_full[0]) + (ones - ratio * self._psi_full[hole]) * sums
        walsh_global = self._global_full[0] + np.outer(sums, self._global_full[hole])  # (b, 3)
        g_omega_full = g_omega[:F * width].reshape(F, width, 3)
        placed = np.zeros((F, b, 4))  # the row sums and G Omega at the cells' columns
        placed[:, hole:, 0] = blocks.block_row_sums(width)[:F * width].reshape(F, width)
        placed[:, hole:, 1:] = g_omega_full
        walsh = self._cell_transform(placed[:, hole:], axis=1)
        block_sums = blocks.block_sums(width)[:F]
        omega_sums = g_omega_full.sum(axis=1)  # (F, 3)
        phi = (lam * lam * diagonals + 2 * lam * rho * walsh[..., 0]
               + rho * rho * block_sums[:, None]
               - 2 * lam * np.einsum("kyj,yj->ky", walsh[..., 1:], walsh_global)
               - 2 * rho * (omega_sums @ walsh_global.T)
               + np.einsum("yj,jl,yl->y", walsh_global, cross, walsh_global))
        # y = 0, where h_S = 1_S: (lam + rho)^2 S - 2 (lam + rho) (1^T G Omega) Gv + ..., summed
        # directly.
        first, gv = lam[0] + rho[0], walsh_global[0]
        phi[:, 0] = (first * first * block_sums - 2 * first * (omega_sums @ gv)
                     + gv @ cross @ gv)
        return phi

    def _partial_phi(self, gram, g_omega, cross):
        """``h_y^T Phi h_y`` for the partial block (dense ``Lambda``, step 5)."""
        L, width, m = self._partial_length, self._partial_width, self._partial_size
        first = self._n_full * self._load
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
        """``n_inputs``, ``epsilon`` and the layout: ``params`` holds ``n_blocks``,
        ``block_size`` and ``hole``, or nothing for the paper's layout (so that a
        specification written before the layout was recorded keeps meaning the same
        mechanism, with the same fingerprint).

        Returns
        -------
        dict
            ``"version"``, ``"mechanism"``, ``"epsilon"``, ``"n_inputs"`` and ``"params"``.
        """
        return Mechanism.to_dict(self)

    @classmethod
    def from_dict(cls, spec):
        if spec.get("mechanism") != cls.kind or spec.get("version") != SPEC_VERSION:
            raise ValueError(f"not a version-{SPEC_VERSION} {cls.kind!r} specification: "
                             f"{str(spec)[:80]!r}.")
        params = spec.get("params") or {}
        keys = ("n_blocks", "block_size", "hole")
        if not isinstance(params, dict) or (params and set(params) != set(keys)):
            raise ValueError(f"the {cls.kind!r} mechanism takes no parameters besides "
                             f"n_inputs, epsilon and its layout {keys} (all three, or none "
                             f"for the paper's layout), got {params!r}.")
        layout = tuple(params[key] for key in keys) if params else "paper"
        return cls(spec["n_inputs"], spec["epsilon"], layout=layout)

    def fingerprint(self):
        """Equal for two Hadamard responses with the same ``n``, ``eps`` and layout.

        Returns
        -------
        str
            The specification as JSON with sorted keys.
        """
        return Mechanism.fingerprint(self)

    def __eq__(self, other):
        return isinstance(other, HadamardResponse) and self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        return (f"HadamardResponse(n_inputs={self.n_inputs}, epsilon={self.epsilon}, "
                f"layout={self.layout})")
