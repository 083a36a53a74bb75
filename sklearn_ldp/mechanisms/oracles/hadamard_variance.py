"""The exact variances of the Hadamard response's optimal decoder, from its structure.

Notation and steps 1-4 of the derivation: :mod:`.hadamard_decoder`.

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

"""

import numpy as np

from ..._fwht import fwht
from ..._gram import DenseGram
from .._base.mechanism import (
    DENSE_GRAM_CELLS,
    ROW_FALLBACK_ENTRIES,
    check_gram,
    check_output_counts,
    check_workload_matrix,
    check_workload_width,
    is_workload,
    workload_row_blocks,
)
from .._base.workload_ops import gram_with_blocks
from ._hadamard_blocks import (
    coset_correlation,
    gram_block_product,
    interval_correlation,
    walsh_block_diagonals,
)
from .hadamard_decoder import _HadamardDecoder

PARTIAL_BLOCK_ENTRIES = 2**24
# Rows x outputs decoded at once by query_variance (bounds its temporaries).
ROW_CHUNK_ENTRIES = 2**22
# The per-query variance of intervals is structured when the partial block (transformed once
# per query) has at most this many outputs; otherwise it comes from the dense rows.
RANGE_PARTIAL_OUTPUTS = 2**16
# Intervals handled at once by range_variance_summary (bounds its temporaries).
RANGE_CHUNK = 1024
class _NoClosedForm(Exception):
    """The structured variance needs something this Gram cannot give;
    :meth:`HadamardResponse._norms` then falls back to a dense Gram or the workload's rows.
    ``args``: what is missing, and what the user can do about it."""


# What to do when a Gram has no closed-form Walsh diagonals or block sums.
_WORKLOAD_ADVICE = ("Use a histogram, total, prefix or all-range workload (or weighted stacks "
                    "of them), or fewer queries.")



class _HadamardVariance(_HadamardDecoder):
    """The exact per-user variances of the decoder (steps 5 and 6, intervals in closed form,
    the fallbacks past the dense limits)."""

    def per_user_variance(self, gram):
        # z_u = sum_o Q[o, u] ||W V* e_o||^2 - G_uu from the structure (module docstring, step 5).
        rows = gram if is_workload(gram) else None  # kept for the row fallback
        gram = check_gram(gram, self.n_inputs)
        return self._from_norms(*self._norms(gram, rows)) - gram.diagonal()

    def sum_of_squared_answers(self, statistic, gram):
        # sum_o y_o ||W V* e_o||^2, as the dense factorization mechanism computes it, from the
        # structure.
        counts = check_output_counts(statistic, self.n_outputs, self.name)
        full, partial, empty = self._split_outputs(np.asarray(counts, dtype=float))
        rows = gram if is_workload(gram) else None
        norms = self._norms(check_gram(gram, self.n_inputs), rows)
        norms_full, norms_partial, norm_empty = norms
        return float(np.sum(full * norms_full) + partial @ norms_partial
                     + norm_empty * empty.sum())

    def query_variance(self, workload_matrix):
        # O(K log b) per query, in chunks of rows.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        z = np.empty_like(W)
        step = max(1, ROW_CHUNK_ENTRIES // self.n_outputs)
        for start in range(0, W.shape[0], step):
            rows = W[start:start + step]
            norms = [part * part for part in self._decode_rows(rows)]
            z[start:start + step] = self._from_norms(*norms) - rows * rows
        return z

    def query_variance_summary(self, workload):
        # Workloads of intervals (workload.intervals(): ranges, prefix, histogram, total, all-range
        # when listable) go through range_variance_summary, structured (no dense row); a weighted
        # stack block by block; other workloads are reduced from their dense rows.
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
