"""The marginal-perturbation mechanisms: MargRR, MargPS and MargHT.

Every user samples one set of ``max_order`` attributes uniformly (independently of the
record) and randomizes only the record's cell in that set's table: MargRR and MargPS run a
frequency oracle (symmetric unary encoding, randomized response) over the set's cells, MargHT
reports the randomized sign of one Hadamard coefficient of the set's coded marginal
(:mod:`.signs`). A marginal over fewer attributes averages (or pools) the sets that contain
it. The privacy argument, the coding and the variances are in the :mod:`.base` docstring.
"""

import numpy as np

from ..._fwht import hadamard_parity
from ..._validation import check_dense_size
from .._base.bits import n_packed_bytes, prefixed_report_layout
from .._base.exact import TABLE_PRECISION, ExactLaw, check_law_size, uniform_mixture
from .._base.mechanism import (
    AGGREGATE_CHUNK,
    ReportCheck,
    check_output_counts,
    check_type_counts,
    check_type_indices,
    chunks,
    count_outputs,
    index_report_validity,
    register,
    report_count,
    report_dtype,
)
from ..oracles.randomized_response import RandomizedResponse
from ..oracles.unary import SymmetricUnaryEncoding
from .base import (
    SIMULATION_ENTRIES,
    _group_variance,
    _MarginalsOnlyMechanism,
    _one_cell,
    marginal_docstring,
)
from .signs import _FourierSignMechanism


class _SampledSetMechanism(_MarginalsOnlyMechanism):
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
        # A uniform set (1 / K, independent of the record), then the set's oracle law of the
        # record's cell in it; every set's outputs in set order, encoded as randomize does.
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
        # The users are split over the sets exactly (one multinomial per type), then each
        # set's users go through its oracle's exact simulation: O(n K) work plus the
        # oracles' (one call per set), whatever the number of users.
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
        # The oracle's matrix of each set, over the user's cell, times 1 / K; rows: the sets
        # in order, each with its oracle's outputs.
        cells = np.arange(self.n_inputs)
        blocks = []
        for index in range(self.n_sets):
            own = self._weighted_codes(cells, np.full(self.n_inputs, index), self._strides)
            Q = self.oracles[int(self.set_cells[index])].strategy_matrix()
            blocks.append(Q[:, own] / self.n_sets)
        return np.vstack(blocks)


@register
@marginal_docstring
class MargPS(_SetOracleMechanism):
    """MargPS: a sampled ``max_order``-set and randomized response over its cells.

    Reports: one integer per user (smallest unsigned integer type),
    ``o = cell_offsets[s] + y``: ``s`` uniform over the ``K = C(d, max_order)`` sets (in
    ``attribute_sets(max_order)`` order), ``y`` the reported cell of set ``s``'s table (C
    order over the set's attributes): the user's own cell with probability
    ``p = e^eps / (e^eps + m_s - 1)``, each other with ``1 / (e^eps + m_s - 1)``,
    ``m_s = prod(shape[a] for a in s)``; ``cell_offsets`` are the cumulative ``m_s``.

    Statistic: the count of each output (int64, length ``sum_s m_s``).

    <marginal parameters, sampled sets>

    See Also
    --------
    InpPS : Randomized response over the whole domain.
    MargRR : Unary encoding of the sampled set's cell.
    MargHT : One Hadamard coefficient of the sampled set's marginal.
    <interface and marginal references: chapter 4 (MargPS)>

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
@marginal_docstring
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

    <marginal parameters, sampled sets>

    See Also
    --------
    InpRR : Unary encoding of the whole record.
    MargPS : Randomized response over the sampled set's cells (one integer per user).
    SymmetricUnaryEncoding : The frequency oracle run on each set.
    <interface and marginal references: chapter 4 (MargRR)>

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
        reports = prefixed_report_layout(reports, self._set_bytes + self._bit_bytes,
                                         f"{self.name!r} mechanism",
                                         "set index, then packed bits")
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
@marginal_docstring
class MargHT(_SampledSetMechanism, _FourierSignMechanism):
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

    Exact law (:meth:`exact_law`): a uniform set ``s`` (``1 / K``), a uniform coefficient of it
    (``1 / (2^{k2_s} - 1)``), the true sign kept with ``a / 2^52``: integer weights over the
    common total ``K lcm_s(2^{k2_s} - 1) 2^52``, outputs ``0 .. n_outputs - 1``.

    <marginal parameters, sampled sets>

    See Also
    --------
    InpHT : One coefficient of the whole record (less error for low orders).
    MargPS : Randomized response over the sampled set's cells.
    <interface and marginal references: chapter 4 (MargHT)>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = MargHT(12, np.log(3), [2, 3, 2], 2)
    >>> mechanism.coefficient_offsets.tolist()
    [0, 7, 10, 17]
    >>> reports = mechanism.randomize(np.arange(12), np.random.default_rng(0))
    >>> mechanism.estimate_marginal(mechanism.aggregate(reports), (0, 1)).shape
    (2, 3)
    >>> law = MargHT(8, 1.0, [2, 2, 2], 2).exact_law(5)
    >>> len(law.weights), sum(law.weights) == law.total
    (18, True)
    """

    kind = "marg_ht"

    def __init__(self, n_inputs, epsilon, shape, max_order):
        super().__init__(n_inputs, epsilon, shape, max_order)
        set_bits = np.array([sum(self.attribute_bits[a] for a in members)
                             for members in self.sets], dtype=np.int64)
        self._check_code_bits(int(set_bits.max()), "a set's binary codes")
        self.set_coefficients = (1 << set_bits) - 1
        self.coefficient_offsets = np.concatenate(
            [[0], np.cumsum(self.set_coefficients)]).astype(np.int64)
        self.n_outputs = 2 * int(self.coefficient_offsets[-1])
        # shifts[s, a] = 2^(local shift of attribute a in set s's code), 0 if a not in s.
        self._shifts = np.zeros((self.n_sets, self.n_attributes), dtype=np.int64)
        for index, members in enumerate(self.sets):
            for a, shift in zip(members, self._code_layout(members)[1], strict=True):
                self._shifts[index, a] = 1 << shift

    def randomize(self, indices, rng):
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        chosen = rng.integers(0, self.n_sets, size=n_users)
        codes = self._weighted_codes(indices, chosen, self._shifts)
        alpha = rng.integers(1, self.set_coefficients[chosen] + 1)  # exact (Lemire)
        bit = self._reported_bits(rng, hadamard_parity(alpha, codes))
        output = 2 * (self.coefficient_offsets[chosen] + alpha - 1) + bit
        return output.astype(report_dtype(self.n_outputs))

    def exact_law(self, value):
        check_law_size(self.n_outputs, self.name)
        cell = np.array([_one_cell(value, self.n_inputs)])
        laws = []
        for index in range(self.n_sets):
            code = self._weighted_codes(cell, np.array([index]), self._shifts)
            alpha = np.arange(1, int(self.set_coefficients[index]) + 1, dtype=np.int64)
            positive = hadamard_parity(alpha, code) == 0
            laws.append(ExactLaw(None, self._sign_weights(positive),
                                 alpha.shape[0] * 2**TABLE_PRECISION))
        return uniform_mixture(laws, np.arange(self.n_outputs).astype(
            report_dtype(self.n_outputs)))

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
        coefficients = self._debiased(plus, minus)
        coefficients[0] = 1.0
        return self._hadamard_table(coefficients, attributes)

    def simulate_statistic(self, type_counts, rng):
        # The users are split over the sets exactly (one multinomial per type) and counted by
        # their local code; each set's users of each code are spread over its nonzero
        # coefficients (one multinomial per code), and the true signs go through binomial
        # randomized response.
        code_offsets = np.concatenate([[0], np.cumsum(self.set_coefficients + 1)])
        code_counts = self._users_per_set_cell(type_counts, rng, self._shifts, code_offsets)
        statistic = np.empty(self.n_outputs, dtype=np.int64)
        for index in range(self.n_sets):
            n_alpha = int(self.set_coefficients[index])
            codes = np.arange(n_alpha + 1)
            split = rng.multinomial(code_counts[code_offsets[index]:code_offsets[index + 1]],
                                    np.full(n_alpha, 1.0 / n_alpha))  # (codes, alphas)
            negative = hadamard_parity(codes[1:][None, :], codes[:, None]).astype(bool)
            outputs = 2 * (self.coefficient_offsets[index] + codes[1:] - 1)
            statistic[outputs + 1], statistic[outputs] = self._reported_signs(
                *self._true_signs(split, negative), rng)
        return statistic

    def _cell_variance(self, attributes, n_users, table):
        containing = self._containing_sets(attributes)
        users = sum(n_users / (self.n_sets * self.set_coefficients[index])
                    for index in containing)
        return self._hadamard_variance(attributes, n_users, table, users)

    def strategy_matrix(self):
        check_dense_size(self.n_outputs, self.n_inputs, self.name)
        cells = np.arange(self.n_inputs)
        Q = np.empty((self.n_outputs, self.n_inputs))
        for index in range(self.n_sets):
            codes = self._weighted_codes(cells, np.full(self.n_inputs, index), self._shifts)
            alpha = np.arange(1, self.set_coefficients[index] + 1)
            positive = hadamard_parity(alpha[:, None], codes[None, :]) == 0
            rows = slice(2 * self.coefficient_offsets[index],
                         2 * self.coefficient_offsets[index + 1])
            Q[rows] = self._sign_rows(positive, self.n_sets * self.set_coefficients[index])
        return Q
