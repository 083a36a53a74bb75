"""The optimal linear decoder of the Hadamard response, from its block-Hadamard structure.

Server side. Decision (not from the paper): the reports are decoded with the optimal linear
decoder of the strategy, ``V* = (Q^T D^-1 Q)^-1 Q^T D^-1`` (see :mod:`.factorization`),
instead of ASZ's block-wise estimator. Measured: on the Prefix workload ASZ's worst-case
variance is 3-25x that of ``V*`` (n = 16, eps = 1: 3.7x; n = 64, eps = 3: 24.7x; n = 1024,
eps = 1: 3.0x), on the Histogram 0.2-45% higher
(``tests/test_hadamard.py::test_optimal_decoder_beats_the_block_estimator``). The decoder,
its estimate and its exact variances are those of the dense
:class:`~.factorization.FactorizationMechanism` on
:func:`~.hadamard_layout.hadamard_strategy`, computed from
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


Steps 5 and 6 (the exact variances) are in :mod:`.hadamard_variance`; the strategy and its
layouts in :mod:`.hadamard_layout`.
"""

import numpy as np

from ..._fwht import fwht
from .._base.mechanism import OutputIndexMechanism, check_output_counts
from ._hadamard_blocks import interval_walsh
from .hadamard_layout import block_counts


class _HadamardDecoder(OutputIndexMechanism):
    """The blockwise set-up of the optimal decoder ``V*`` (steps 1-4 above), the estimate
    and the products with the strategy. :class:`~.hadamard.HadamardResponse` sets the
    layout and the integer weights, then calls :meth:`_set_up_decoder`."""

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
        self._n_full, self._partial_size = block_counts(n, b, hole)
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

    # ------------------------------------------------------------------ server side
    def estimate(self, statistic):
        # The optimal decoder's V* y in O(K log b): one FWHT per block, then (Z / g) Pi (module
        # docstring).
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
        >>> from sklearn_ldp.mechanisms import HadamardResponse
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
        >>> from sklearn_ldp.mechanisms import HadamardResponse
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
