"""Hierarchical histograms HH_B for range queries under LDP (Cormode, Kulkarni, Srivastava).
Client ("sample, don't split"). A user of cell ``x`` samples one level ``l`` uniformly from
``{1..h}`` (the thesis's optimum, Lemma 9), and reports the node ``x // B^(h-l)`` through a
frequency oracle over the ``m_l`` nodes of that level with the *full* epsilon: ``"oue"``
(optimized unary encoding, the thesis's default), ``"olh"`` (optimized local hashing) or
``"hrr"`` (one Hadamard coefficient, one bit). The level is drawn independently of the data,
so the report is epsilon-LDP exactly when the level's oracle is.

Reports (one array per batch, one row per user):

* ``"oue"``: uint8 rows ``[l, packed bits...]``, as wide as the leaf level's packed report;
  a level-``l`` row uses the first ``ceil(m_l / 8)`` bytes after the level, the rest are 0;
* ``"olh"``: uint64 rows ``[l, seed, bucket]``;
* ``"hrr"``: one integer, the level's HRR output ``2 j + bit`` shifted by the level's offset
  (so the levels' outputs do not overlap and aggregation is one ``bincount``).

Statistic. The concatenation of the levels' statistics (each oracle's own: support counts
and ``N_l`` for OUE/OLH, output counts for HRR), additive over reports.

Estimator (linear, unbiased). Let ``y_l`` be level ``l``'s oracle estimate: unbiased counts
of the ``N_l`` users who reported that level (it sums to ``N_l``). We scale it to the whole
population by the expected, not the realized, sampling rate (Horvitz-Thompson) and restore
the known total ``N``:

    yhat_l = h y_l - (h N_l - N) / m_l,

so every level sums to ``N`` and the estimate stays *linear* in the statistic: its variance is
exactly the sum over users of a per-user term, as for every mechanism of the package. (The
thesis divides by the realized ``N_l`` instead, a ratio estimator; the two differ by the
users' level-sampling noise, which the consistency step below makes irrelevant for the
``N_l`` total of each level: at D = 2^8, N = 2^26 the RMSE over all ranges differs by at most
0.3%, ``python benchmarks/bench_ranges.py --sizes 8 --repeats 40 --ratio-check``.)

The tree, its levels and the consistency step are in :mod:`.tree_structure`; the exact
variances in :mod:`.tree_variance`.

Pure numpy; no scikit-learn here.
"""

import math

import numpy as np

from ..._validation import check_epsilon, check_positive_int
from .._base.bits import (
    check_packed_report_memory,
    column_counts,
    n_packed_bytes,
    prefixed_report_layout,
    unused_bits_clear,
)
from .._base.counts import check_count_values
from .._base.docstrings import shared_sections
from .._base.exact import ExactLaw, check_law_size
from .._base.influence import ReportInfluence
from .._base.mechanism import (
    ReportCheck,
    check_type_counts,
    check_type_indices,
    check_workload_matrix,
    chunks,
    index_report_validity,
    register,
    report_dtype,
)
from ..oracles._hrr_simulation import simulate_signed_hrr
from ..oracles.hadamard_coefficient import HadamardRandomizedResponse
from ..oracles.local_hashing import OptimizedLocalHashing
from ..oracles.unary import OptimizedUnaryEncoding
from .tree_structure import (
    check_branching,
    level_sizes,
    node_sums,
    range_bounds,
    tree_consistency,
    tree_height,
)
from .tree_variance import _TreeVariance

LEVEL_ORACLES = {
    "oue": OptimizedUnaryEncoding,
    "olh": OptimizedLocalHashing,
    "hrr": HadamardRandomizedResponse,
}

# The ``statistic`` parameter of the methods that decode one, written in at
# ``<statistic parameter>``.
_statistic_parameter = shared_sections({"statistic parameter": """\
Parameters
----------
statistic : ndarray of int64
    The output of :meth:`aggregate` (or a sum of such outputs); checked first."""})


@register
class HierarchicalHistogram(_TreeVariance):
    """Hierarchical histogram HH_B: one sampled tree level per user, full epsilon on it.

    Structured (no dense matrix): clients cost the level oracle's report, aggregation is
    per level (``column_counts``, hashing, or one ``bincount``), and the estimate is the level
    oracles' estimates plus two linear passes. See the module docstring for the mathematics.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n``, the cells in their order.
    epsilon : float
        Privacy parameter (> 0); each user's one report is ``epsilon``-LDP.
    branching : int, default=4
        Fan-out ``B`` (>= 2). :func:`~sklearn_ldp.mechanisms.ranges.bounds.recommend_branching`
        suggests one.
    oracle : {"oue", "olh", "hrr"}, default="oue"
        Frequency oracle of every level.
    olh_hash : {"by_size", "tabulation"} or None
        With ``oracle="olh"``: ``"by_size"`` (the default for new trees) gives each level
        :class:`OptimizedLocalHashing`'s default hash family (linear at every size, decoded
        in ``O(N g + m log m)``); ``"tabulation"`` hashes
        every level by tabulation, as specs written before the linear family (which lack
        the parameter) did. Recorded in ``params`` for ``oracle="olh"`` only.

    Attributes
    ----------
    height : int
        ``h``: levels ``1..h`` are reported (the root is the known total).
    level_sizes : list of int
        Nodes of each level, coarsest first.
    widths : list of int
        Cells per node of each level (``B^(h-l)``).
    level_oracles : list of Mechanism
        The frequency oracle of each level.
    level_variances : ndarray
        Noise variance of one node of each level (weights of the consistency step).

    See Also
    --------
    HaarHRR : The other range mechanism of the same paper (Haar coefficients).
    tree_consistency : The constrained least-squares step behind :meth:`estimate`.
    hierarchical_variance_bound : The paper's bound on the variance of a range.

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Answering range queries under local
       differential privacy", PVLDB 12(10), 2019 (hierarchical histograms with a sampled
       level; also chapter 5 of T. Kulkarni's PhD dissertation, University of Warwick).
    .. [2] M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the accuracy of differentially
       private histograms through consistency", PVLDB 3(1), 2010 (the consistency step).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = HierarchicalHistogram(10, 1.0, branching=2)
    >>> mechanism.height, mechanism.level_sizes
    (4, [2, 3, 5, 10])
    >>> rng = np.random.default_rng(0)
    >>> reports = mechanism.randomize(rng.integers(0, 10, 1000), rng)
    >>> statistic = mechanism.aggregate(reports)
    >>> round(float(mechanism.estimate(statistic).sum()), 6)   # the known total
    1000.0
    >>> mechanism.range_counts(statistic, [0], [9]).tolist()
    [1000.0]

    An exact draw of the aggregate of many users (:meth:`simulate_statistic`):

    >>> mechanism = HierarchicalHistogram(8, 1.0, branching=2)
    >>> statistic = mechanism.simulate_statistic(np.full(8, 1000), np.random.default_rng(0))
    >>> mechanism.n_reports(statistic)
    8000
    """

    kind = "hierarchical"

    def __init__(self, n_inputs, epsilon, branching=4, oracle="oue", olh_hash=None):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.epsilon = check_epsilon(epsilon)
        self.branching = check_branching(branching)
        if oracle not in LEVEL_ORACLES:
            raise ValueError(f"oracle must be one of {sorted(LEVEL_ORACLES)} (the frequency "
                             f"oracle of each tree level), got {oracle!r}.")
        self.oracle = oracle
        self.name = self.kind
        self.params = {"branching": self.branching, "oracle": oracle}
        level_options = {}
        if oracle == "olh":
            olh_hash = "by_size" if olh_hash is None else olh_hash
            if olh_hash not in ("by_size", "tabulation"):
                raise ValueError(f"olh_hash must be 'by_size' or 'tabulation', got "
                                 f"{olh_hash!r}.")
            self.params["olh_hash"] = olh_hash
            if olh_hash == "tabulation":
                level_options = {"hash_family": "tabulation"}
        elif olh_hash is not None:
            raise ValueError(f"olh_hash applies to oracle='olh' only, got oracle={oracle!r}.")
        self.height = tree_height(self.n_inputs, self.branching)
        self.level_sizes = level_sizes(self.n_inputs, self.branching)
        self.widths = [self.branching ** (self.height - level)
                       for level in range(1, self.height + 1)]
        self.level_oracles = [LEVEL_ORACLES[oracle](m, self.epsilon, **level_options)
                              for m in self.level_sizes]
        lengths = [self._statistic_length(level) for level in self.level_oracles]
        self._statistic_offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        if oracle == "oue":
            self._level_bytes = np.array([n_packed_bytes(m) for m in self.level_sizes])
            self.report_width = 1 + int(self._level_bytes[-1])
        elif oracle == "hrr":
            # HRR outputs of level k live in [offset_k, offset_k + 2 K_k).
            self._report_offsets = self._statistic_offsets
            self.n_outputs = int(self._statistic_offsets[-1])
        self.level_variances = np.array([self._node_variance(level)
                                         for level in self.level_oracles])
        self._root_weights = None
        self._interval_cache = None

    @classmethod
    def from_dict(cls, spec):
        """Rebuild a tree from its :meth:`~Mechanism.to_dict` specification.

        Specifications with ``oracle="olh"`` written before the linear hash family (without
        ``olh_hash``) keep the tabulation hash they were written with.

        Parameters
        ----------
        spec : dict
            ``"n_inputs"``, ``"epsilon"`` and ``"params"`` (``branching``, ``oracle`` and,
            for OLH levels, ``olh_hash``), as :meth:`~Mechanism.to_dict` writes them.

        Returns
        -------
        HierarchicalHistogram
            The tree the specification describes (every field validated by the
            constructor).
        """
        params = dict(spec.get("params", {}))
        if params.get("oracle") == "olh":
            params.setdefault("olh_hash", "tabulation")  # specs from before the linear family
        return cls(spec["n_inputs"], spec["epsilon"], **params)

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _statistic_length(oracle):
        if isinstance(oracle, HadamardRandomizedResponse):
            return oracle.n_outputs
        return oracle.n_inputs + 1  # support counts and the number of reports

    @staticmethod
    def _node_variance(oracle):
        """Per-node noise variance ``s^2`` of one level: a contrast ``e_0 - e_1`` has
        variance ``2 s^2`` under the model ``s^2 (I - J/m)`` of a level with a known total
        (averaged over the user types)."""
        if oracle.n_inputs == 1:
            return 1.0  # a single node is the root itself: known, any weight will do
        contrast = np.zeros((1, oracle.n_inputs))
        contrast[0, :2] = [1.0, -1.0]
        return float(oracle.query_variance(contrast).mean() / 2.0)

    def _segments(self, statistic):
        """The statistic split into the levels' statistics."""
        offsets = self._statistic_offsets
        return [statistic[offsets[k]:offsets[k + 1]] for k in range(self.height)]

    def _check_statistic(self, statistic):
        """The statistic as int64 counts, or a ValueError (wrong length, entries that are no
        counts); each level's part is checked by its oracle where it is read."""
        statistic = np.asarray(statistic)
        if statistic.shape != (int(self._statistic_offsets[-1]),):
            raise ValueError(
                f"the statistic of {self.name!r} holds {int(self._statistic_offsets[-1])} "
                f"entries (the levels' statistics), got shape {statistic.shape}: it comes from "
                "another mechanism, epsilon, branching, oracle or domain."
            )
        return check_count_values(statistic, self.name)

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        # A uniform level, then that level's oracle on the user's node: one row (OUE, OLH) or one
        # integer (HRR) per user, laid out as in the module docstring.
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        levels = rng.integers(0, self.height, size=n_users)
        order = np.argsort(levels, kind="stable")
        bounds = np.searchsorted(levels[order], np.arange(self.height + 1))
        if self.oracle == "oue":
            # Every row is as wide as the leaf level's report: refuse before allocating.
            check_packed_report_memory(n_users, 8 * (self.report_width - 1), self.name)
            reports = np.zeros((n_users, self.report_width), dtype=np.uint8)
        elif self.oracle == "olh":
            reports = np.zeros((n_users, 3), dtype=np.uint64)
        else:
            reports = np.zeros(n_users, dtype=report_dtype(self.n_outputs))
        for k, oracle in enumerate(self.level_oracles):
            rows = order[bounds[k]:bounds[k + 1]]
            if rows.size == 0:
                continue
            part = oracle.randomize(indices[rows] // self.widths[k], rng)
            if self.oracle == "oue":
                reports[rows, 0] = k + 1
                reports[rows, 1:1 + part.shape[1]] = part
            elif self.oracle == "olh":
                reports[rows, 0] = k + 1
                reports[rows, 1:] = part
            else:
                reports[rows] = part.astype(np.int64) + self._report_offsets[k]
        return reports

    def exact_law(self, value, seeds=None):
        """The exact law of one user's report: a uniform level, then that level's oracle.

        Each level's :meth:`exact_law` (of the user's node) is brought to a common total
        ``L`` (the least common multiple of the levels' totals) and weighted ``1 / h``: the
        law has total ``h L`` and lists every level's outputs, encoded as :meth:`randomize`
        encodes them (the level tag, then the level's report).

        Parameters
        ----------
        value : int
            The user's cell, in ``[0, n)``.
        seeds : array-like of uint64, optional
            OLH levels only: the law is conditional on the hash seed lying in ``seeds``
            (uniform on them; see :meth:`LocalHashing.exact_law`).

        Returns
        -------
        ExactLaw
            Every level's outputs (encoded as reports), integer weights and their total.

        Examples
        --------
        >>> tree = HierarchicalHistogram(4, 1.0, branching=2, oracle="hrr")
        >>> law = tree.exact_law(3)
        >>> law.outputs.size, sum(law.weights) == law.total
        (8, True)
        """
        value = int(check_type_indices([value], self.n_inputs)[0])
        options = {"seeds": seeds} if self.oracle == "olh" else {}
        laws = [oracle.exact_law(value // width, **options)
                for oracle, width in zip(self.level_oracles, self.widths, strict=True)]
        common = math.lcm(*(int(law.total) for law in laws))
        check_law_size(sum(len(law.weights) for law in laws), self.name)
        outputs, weights = [], []
        for k, law in enumerate(laws):  # h levels
            rows = np.asarray(law.outputs)
            if self.oracle == "oue":
                encoded = np.zeros((rows.shape[0], self.report_width), dtype=np.uint8)
                encoded[:, 0] = k + 1
                encoded[:, 1:1 + rows.shape[1]] = rows
            elif self.oracle == "olh":
                encoded = np.empty((rows.shape[0], 3), dtype=np.uint64)
                encoded[:, 0] = k + 1
                encoded[:, 1:] = rows
            else:
                encoded = rows.astype(np.int64) + self._report_offsets[k]
            outputs.append(encoded)
            scale = common // int(law.total)
            weights += [int(w) * scale for w in law.weights]
        outputs = np.concatenate(outputs)
        if self.oracle == "hrr":
            outputs = outputs.astype(report_dtype(self.n_outputs))
        return ExactLaw(outputs, weights, self.height * common)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # A valid report names a level in [1, h] and is a valid report of that level's oracle (HRR:
        # coefficient >= 1; OUE: no bit past the level's nodes; OLH: a bucket in [0, g)).
        reports = np.asarray(reports)
        if self.oracle == "hrr":
            check = index_report_validity(reports, self.n_outputs, self.name)
            inside = np.where(check.valid, reports, 0).astype(np.int64)
            level = np.searchsorted(self._report_offsets, inside, side="right") - 1
            valid = check.valid & (inside - self._report_offsets[level] >= 2)
            return ReportCheck(reports, valid,
                               f"indices in [0, {self.n_outputs}) naming a level's HRR "
                               "coefficient j >= 1 (coefficient 0 is never sent)")
        if self.oracle == "olh":
            if reports.ndim != 2 or reports.shape[1] != 3 or reports.dtype != np.uint64:
                raise ValueError(
                    f"reports of the {self.name!r} mechanism (oracle 'olh') are an (N, 3) uint64 "
                    f"array of [level, seed, bucket] rows, got shape {reports.shape} and dtype "
                    f"{reports.dtype}: they come from another mechanism."
                )
            levels = reports[:, 0]
            valid = (levels >= 1) & (levels <= self.height)
            buckets = np.array([oracle.n_buckets for oracle in self.level_oracles],
                               dtype=np.uint64)
            level_index = np.where(valid, levels - 1, 0).astype(np.int64)
            valid &= reports[:, 2] < buckets[level_index]
            return ReportCheck(reports, valid,
                               f"[level, seed, bucket] rows with a level in [1, {self.height}] "
                               f"and a bucket in [0, {int(buckets.min())})")
        reports = prefixed_report_layout(reports, self.report_width,
                                         f"{self.name!r} mechanism (oracle 'oue')",
                                         "the level, then packed bits", rows="N")
        valid = np.zeros(reports.shape[0], dtype=bool)
        for rows in chunks(reports.shape[0]):
            block = reports[rows]
            levels = block[:, 0]
            part = valid[rows]  # a view: filled level by level
            for k in range(self.height):
                mine = np.flatnonzero(levels == k + 1)
                if not mine.size:
                    continue
                used = int(self._level_bytes[k])
                bits = block[mine, 1:]
                part[mine] = (unused_bits_clear(bits[:, :used], self.level_sizes[k])
                              & ~np.any(bits[:, used:], axis=1))
        return ReportCheck(reports, valid,
                           f"[level in [1, {self.height}], then the level's packed bits] rows "
                           "with no bit set past bit m_l - 1 of level l (m_l its nodes)")

    def report_influence(self, workload_matrix):
        # The answer is sum_l v_l . yhat_l + c0 N (module docstring); a report of level l whose
        # oracle estimate is e adds h (v_l . e - mu_l) + sum_k mu_k + c0. v_l . e ranges over the
        # level oracle's own influence on the query v_l, so the extremes are the level oracles'
        # extremes, scaled by h and shifted, over the levels.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        weights = self._level_weights(W)
        means = [v.mean(axis=1) for v in weights]
        shared = sum(means) + W @ self.root_weights()
        p = W.shape[0]
        low, high = np.full(p, np.inf), np.full(p, -np.inf)
        low_level, high_level = np.zeros(p, dtype=np.int64), np.zeros(p, dtype=np.int64)
        inner = [oracle.report_influence(v) for oracle, v in
                 zip(self.level_oracles, weights, strict=True)]
        for k, level in enumerate(inner):
            shift = shared - self.height * means[k]
            candidate_low = self.height * level.low + shift
            candidate_high = self.height * level.high + shift
            low_level = np.where(candidate_low < low, k, low_level)
            high_level = np.where(candidate_high > high, k, high_level)
            low, high = np.minimum(low, candidate_low), np.maximum(high, candidate_high)
        exact = all(level.exact for level in inner)
        if any(level.low_reports is None for level in inner):
            return ReportInfluence(low, high, None, None, exact)
        return ReportInfluence(low, high, self._level_reports(inner, low_level, "low_reports"),
                               self._level_reports(inner, high_level, "high_reports"), exact)

    def _level_reports(self, inner, chosen, which):
        """Row ``i``: the level ``chosen[i]`` oracle's report ``which`` for query ``i``, in this
        mechanism's layout (level byte and packed bits, or the shifted HRR output)."""
        rows = np.arange(chosen.shape[0])
        if self.oracle == "hrr":
            result = np.zeros(chosen.shape[0], dtype=np.int64)
            for k, level in enumerate(inner):
                mine = rows[chosen == k]
                result[mine] = getattr(level, which)[mine].astype(np.int64) + (
                    self._report_offsets[k])
            return result.astype(report_dtype(self.n_outputs))
        result = np.zeros((chosen.shape[0], self.report_width), dtype=np.uint8)
        for k, level in enumerate(inner):
            mine = rows[chosen == k]
            bits = getattr(level, which)[mine]
            result[mine, 0] = k + 1
            result[mine, 1:1 + bits.shape[1]] = bits
        return result

    def aggregate(self, reports):
        # The levels' statistics, concatenated, coarsest level first, computed in chunks of users.
        reports = self.check_reports(reports)
        statistic = np.zeros(int(self._statistic_offsets[-1]), dtype=np.int64)
        if self.oracle == "hrr":
            for rows in chunks(reports.shape[0]):
                statistic += np.bincount(reports[rows], minlength=statistic.shape[0])
            return statistic
        segments = self._segments(statistic)  # views: filled in place
        for rows in chunks(reports.shape[0]):
            block = reports[rows]
            levels = block[:, 0].astype(np.int64)
            for k, oracle in enumerate(self.level_oracles):
                mine = block[levels == k + 1]
                if not mine.shape[0]:
                    continue
                if self.oracle == "oue":
                    segments[k][:-1] += column_counts(mine[:, 1:1 + self._level_bytes[k]],
                                                      oracle.n_inputs)
                    segments[k][-1] += mine.shape[0]
                else:
                    segments[k] += oracle.aggregate(np.ascontiguousarray(mine[:, 1:]))
        return statistic

    def n_reports(self, statistic):
        statistic = self._check_statistic(statistic)
        return int(sum(oracle.n_reports(segment)
                       for oracle, segment in zip(self.level_oracles, self._segments(statistic),
                                                  strict=True)))

    def simulate_statistic(self, type_counts, rng):
        # Users of each cell are split over the levels by sequential binomials (a multinomial), each
        # level's node counts are summed, and the level oracle's statistic is drawn from its exact
        # law: binomials for OUE, the bit-splitting of simulate_signed_hrr for HRR (O(K log K)). OLH
        # has no exact simulation (its statistic depends on every user's hash function):
        # NotImplementedError, use randomize.
        if self.oracle == "olh":
            raise NotImplementedError(
                "the 'hierarchical' mechanism with oracle 'olh' has no exact simulation of its "
                "aggregate (every user hashes with their own function); use oracle='oue' or "
                "'hrr', or privatize the records with randomize."
            )
        counts = check_type_counts(type_counts, self.n_inputs)
        statistic = np.zeros(int(self._statistic_offsets[-1]), dtype=np.int64)
        segments = self._segments(statistic)
        remaining = counts.copy()
        for k, oracle in enumerate(self.level_oracles):
            left = self.height - k
            at_level = remaining if left == 1 else rng.binomial(remaining, 1.0 / left)
            remaining = remaining - at_level
            nodes = node_sums(at_level, self.widths[k], oracle.n_inputs)
            if self.oracle == "oue":
                segments[k][:] = oracle.simulate_statistic(nodes, rng)
                continue
            plus = np.zeros(oracle.n_coefficients, dtype=np.int64)
            plus[:nodes.shape[0]] = nodes
            sent_plus, sent_minus = simulate_signed_hrr(plus, np.zeros_like(plus), oracle.p, rng,
                                                        exclude_zero=True)
            segments[k][1::2] = sent_plus  # output 2 j + 1: sent +1
            segments[k][0::2] = sent_minus
        return statistic

    # ------------------------------------------------------------------ estimation
    @_statistic_parameter
    def level_estimates(self, statistic):
        """Unbiased population counts of every node, level by level (coarsest first), before
        consistency: ``h y_l - (h N_l - N) / m_l`` (each level sums to ``N``).

        <statistic parameter>

        Returns
        -------
        list of h ndarray
            Level ``l`` holds one unbiased count per node (``level_sizes[l]`` of them).

        Examples
        --------
        >>> mechanism = HierarchicalHistogram(4, 1.0, branching=2)
        >>> statistic = mechanism.simulate_statistic(np.array([10, 0, 0, 30]),
        ...                                          np.random.default_rng(0))
        >>> [round(float(level.sum()), 6) for level in mechanism.level_estimates(statistic)]
        [40.0, 40.0]
        """
        statistic = self._check_statistic(statistic)
        segments = self._segments(statistic)
        reported = np.array([oracle.n_reports(segment)
                             for oracle, segment in zip(self.level_oracles, segments, strict=True)],
                            dtype=float)
        total = reported.sum()
        levels = []
        for k, (oracle, segment) in enumerate(zip(self.level_oracles, segments, strict=True)):
            estimate = oracle.estimate(segment)
            levels.append(self.height * estimate
                          - (self.height * reported[k] - total) / oracle.n_inputs)
        return levels

    @_statistic_parameter
    def consistent_levels(self, statistic):
        """All levels after the consistency step (each parent = the sum of its children).

        <statistic parameter>

        Returns
        -------
        list of h ndarray
            The constrained least-squares node counts
            (:func:`~.tree_structure.tree_consistency` with the levels' noise variances),
            coarsest level first; the first level sums to ``N``.
        """
        statistic = self._check_statistic(statistic)
        return tree_consistency(self.level_estimates(statistic), self.n_reports(statistic),
                                self.branching, self.level_variances)

    def estimate(self, statistic):
        # The leaves of the consistent tree (they sum to N).
        return self.consistent_levels(statistic)[-1]

    @_statistic_parameter
    def range_counts(self, statistic, lo, hi, consistency=True):
        """Estimated number of users in each closed range ``[lo_i, hi_i]`` of cells.

        With ``consistency`` (default) the sums of consistent leaves (prefix sums); without,
        the B-adic decomposition of the raw level estimates (the thesis's TreeOUE, TreeOLH,
        TreeHRR without "CI"). Both are unbiased.

        <statistic parameter>
        lo, hi : array-like of int
            First and last cell of each range, ``0 <= lo_i <= hi_i < n``.
        consistency : bool, default=True
            Answer from the consistent leaves (True) or the raw decomposition (False).

        Returns
        -------
        ndarray of shape (p,)
            The estimated number of users in each range.
        """
        lo, hi = range_bounds(lo, hi, self.n_inputs)
        if consistency:
            cumulative = np.concatenate([[0.0], np.cumsum(self.estimate(statistic))])
            return cumulative[hi + 1] - cumulative[lo]
        levels = self.level_estimates(statistic)
        runs, root = self.decompose(lo, hi)
        answers = np.where(root, float(self.n_reports(statistic)), 0.0)
        for level, (a, b, c, d) in zip(levels, runs, strict=True):
            cumulative = np.concatenate([[0.0], np.cumsum(level)])
            answers += (cumulative[b] - cumulative[a]) + (cumulative[d] - cumulative[c])
        return answers

    def strategy_matrix(self):
        """The exact ``P(report | cell)`` for small levels: the levels' strategies, each on
        the nodes of the cells, divided by ``h`` (the level is uniform).

        OUE levels need ``2^m`` rows (``m <= 16`` nodes per level); OLH has no finite matrix.

        Returns
        -------
        ndarray of shape (n_outputs, n)
            Column ``u``: the distribution of the report of a user of cell ``u`` (each
            level's outputs in turn).

        Raises
        ------
        ValueError
            With ``oracle="olh"`` (``2^64`` hash functions), or levels too large for the
            level oracle's matrix.
        """
        if self.oracle == "olh":
            raise ValueError("the 'hierarchical' mechanism with oracle 'olh' has no finite "
                             "strategy matrix (2^64 hash functions).")
        blocks = []
        for k, oracle in enumerate(self.level_oracles):
            Q = oracle.strategy_matrix()
            blocks.append(Q[:, np.arange(self.n_inputs) // self.widths[k]] / self.height)
        return np.vstack(blocks)
