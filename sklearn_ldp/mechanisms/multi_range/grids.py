"""TDG and HDG: grids of numeric attributes for multi-dimensional range queries.

Protocol (Yang, Wang, Li, Cheng, Su, Hu, VLDB 2020). ``d`` numeric attributes with public
bounds. Every attribute's bounds are cut into equal cells; each user is assigned one *group*
uniformly at random (an exactly uniform integer, independent of the record) and reports,
with the whole budget ``epsilon``, the cell of their record in that group's grid through
optimized local hashing (OLH, :class:`~sklearn_ldp.mechanisms.OptimizedLocalHashing`):

* TDG ("two-dimensional grids"): one group per pair of attributes, each a ``g2 x g2`` grid;
* HDG ("hybrid-dimensional grids"): those ``C(d, 2)`` groups and, before them, one group per
  attribute, a 1-D grid of ``g1`` cells (``g1`` a multiple of ``g2``: both are powers of two).

Cells. With ``r`` the finest resolution (``g1`` for HDG, ``g2`` for TDG), a value ``v`` of
bounds ``[lo, hi]`` has the code ``min(floor((v - lo) * r / (hi - lo)), r - 1)`` (IEEE double
arithmetic in this order, which the client repeats); its cell in a ``g2`` grid is ``code //
(r / g2)``, and the cell of a pair ``(a, b)`` is ``cell_a * g2 + cell_b``. A value outside its
bounds is a ValueError: nothing is clipped.

Reports are ``(N, 3)`` uint64 rows ``[group, seed, bucket]``: the group, then OLH's ``[seed,
bucket]`` over the group's cells. The law of one report is OLH's on the grid cell, given the
group, and the group does not depend on the record: the report is ``epsilon``-LDP exactly
when OLH's is (checked on the sampled integers at construction). :meth:`exact_law` lists it
given the seed among a small set, as OLH's does.

Estimation. The statistic is, per group, OLH's support counts and the group's number of
reports. :meth:`GridRangeMechanism.grid_frequencies` gives every grid's unbiased cell
frequencies (fractions of the group's users; the groups are random samples of the users, so
these estimate the fractions of all users); their variance is OLH's on ``N_g`` users
(:meth:`GridRangeMechanism.linear_variance`). Consistency, non-negativity and the answers to
range queries are in :mod:`.answers`.

Grid sizes (the paper's guideline, section 5): with ``m`` groups, ``N`` users,

    g1 = (N (e^eps - 1)^2 alpha1^2 / (2 m e^eps))^(1/3),   alpha1 = 0.7,
    g2 = sqrt(2 alpha2 (e^eps - 1) sqrt(N / (m e^eps))),     alpha2 = 0.03,

each rounded to the nearest power of two (at least 2), capped by :data:`MAX_G1` and
:data:`MAX_G2`; HDG takes ``g1 >= g2``.
"""

import math
import numbers
from itertools import combinations

import numpy as np

from ..._validation import check_epsilon
from .._base.docstrings import shared_sections
from .._base.exact import ExactLaw
from .._base.mechanism import Mechanism, ReportCheck, register
from ..multi_attribute.mechanisms import check_composed_budget, oracle_worst_ratio, smp_groups
from ..oracles.local_hashing import OptimizedLocalHashing

KIND = "multi_range"
METHODS = ("hdg", "tdg")
# The paper's constants of the guideline (alpha1 for 1-D grids, alpha2 for 2-D grids).
ALPHA_1D, ALPHA_2D = 0.7, 0.03
# Largest grids: 1-D of 2^12 cells (the response matrices are g1 x g1 floats per pair),
# 2-D of 2^8 x 2^8 cells.
MAX_G1, MAX_G2 = 2**12, 2**8
# Attributes of one record: every pair is a group (2016 grids at 64 attributes).
MAX_RANGE_ATTRIBUTES = 64


# Docstring sections of this family, written once.
multi_range_docstring = shared_sections({
    "yang20 reference": """\
References
----------
.. [1] J. Yang, T. Wang, N. Li, X. Cheng and S. Su, "Answering multi-dimensional range
   queries under local differential privacy", PVLDB 14(3), 2020.""",
    "statistic parameter": """\
Parameters
----------
statistic : array-like
    :meth:`aggregate`'s output, or a sum of several.""",
    "box parameters": """\
Parameters
----------
attributes : tuple of int
    The attributes the queries constrain (distinct, ascending).
low, high : ndarray of shape (n_queries, len(attributes))
    Each query's closed range per attribute (``low <= high``, within the bounds).""",
})


def _nearest_power_of_two(value, cap):
    """The power of two nearest ``value`` (ties down, at least 2), at most ``cap``."""
    if not value > 2:
        return 2
    low = 2 ** math.floor(math.log2(value))
    best = low if value - low <= 2 * low - value else 2 * low
    return int(min(best, cap))


def n_groups(n_attributes, method):
    """Number of user groups: ``C(d, 2)`` for TDG, ``d + C(d, 2)`` for HDG.

    Examples
    --------
    >>> n_groups(3, "tdg"), n_groups(3, "hdg")
    (3, 6)
    """
    pairs = n_attributes * (n_attributes - 1) // 2
    return pairs + (n_attributes if method == "hdg" else 0)


@multi_range_docstring
def grid_sizes(n_users, epsilon, n_attributes, method="hdg"):
    """The paper's grid sizes ``(g1, g2)`` for ``n_users`` users (``g1`` None for TDG).

    Parameters
    ----------
    n_users : int
        Users expected in the collection, ``N``.
    epsilon : float
        The budget of each report.
    n_attributes : int
        Number of attributes ``d`` (at least 2).
    method : {"hdg", "tdg"}, default="hdg"

    Returns
    -------
    g1 : int or None
        Cells of each 1-D grid (HDG), a power of two, at least ``g2``.
    g2 : int
        Cells per side of each 2-D grid, a power of two.

    <yang20 reference>

    Examples
    --------
    >>> grid_sizes(10**6, 1.0, 3, "hdg")
    (32, 4)
    >>> grid_sizes(10**6, 1.0, 3, "tdg")
    (None, 8)
    """
    if isinstance(n_users, bool) or not isinstance(n_users, numbers.Integral) or n_users < 1:
        raise ValueError(f"n_users must be a positive integer, got {n_users!r}.")
    epsilon = check_epsilon(epsilon)
    _check_method(method)
    _check_n_attributes(n_attributes)
    m = n_groups(n_attributes, method)
    e = math.exp(epsilon)
    g2 = math.sqrt(2 * ALPHA_2D * (e - 1) * math.sqrt(n_users / (m * e)))
    g2 = _nearest_power_of_two(g2, MAX_G2)
    if method == "tdg":
        return None, g2
    g1 = (n_users * (e - 1) ** 2 * ALPHA_1D**2 / (2 * m * e)) ** (1 / 3)
    return max(_nearest_power_of_two(g1, MAX_G1), g2), g2


def _check_method(method):
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}.")


def _check_n_attributes(n_attributes):
    if isinstance(n_attributes, bool) or not isinstance(n_attributes, numbers.Integral) \
            or not 2 <= n_attributes <= MAX_RANGE_ATTRIBUTES:
        raise ValueError(f"multi-dimensional range queries need 2 to {MAX_RANGE_ATTRIBUTES} "
                         f"numeric attributes, got {n_attributes!r}.")


def _check_grid(value, name, cap):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 2 \
            or value > cap or value & (value - 1):
        raise ValueError(f"{name} must be a power of two in [2, {cap}], got {value!r}.")
    return int(value)


def _check_columns(columns, n_attributes):
    if columns is None:
        return [f"x{i}" for i in range(n_attributes)]
    if not isinstance(columns, (list, tuple)) or len(columns) != n_attributes or any(
            not isinstance(c, str) for c in columns) or len(set(columns)) != n_attributes:
        raise ValueError(f"columns must be {n_attributes} distinct names (str), one per "
                         f"attribute of bounds, got {str(columns)[:80]!r}.")
    return list(columns)


def check_bounds_list(bounds):
    """``bounds`` as a list of ``(low, high)`` float pairs, finite with ``low < high``."""
    if not isinstance(bounds, (list, tuple)):
        raise ValueError(f"bounds must be a list of (low, high) pairs, one per attribute, got "
                         f"{bounds!r}.")
    _check_n_attributes(len(bounds))
    pairs = []
    for i, pair in enumerate(bounds):
        if not isinstance(pair, (list, tuple)) or len(pair) != 2 or any(
                isinstance(x, bool) or not isinstance(x, numbers.Real) for x in pair):
            raise ValueError(f"bounds[{i}] must be a pair of numbers (low, high), got {pair!r}.")
        low, high = float(pair[0]), float(pair[1])
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise ValueError(f"bounds[{i}] must be finite with low < high, got {pair!r}.")
        pairs.append((low, high))
    return pairs


@register
@multi_range_docstring
class GridRangeMechanism(Mechanism):
    """TDG or HDG: each user reports the cell of one grid (a random group) by OLH.

    Parameters
    ----------
    epsilon : float
        The budget of each user's report.
    bounds : sequence of (float, float)
        Public bounds of each of the ``d >= 2`` numeric attributes.
    method : {"hdg", "tdg"}, default="hdg"
        HDG: 1-D grids of ``g1`` cells and 2-D grids of ``g2 x g2`` cells; TDG: 2-D grids only.
    g2 : int, default=8
        Cells per side of every 2-D grid (a power of two; :func:`grid_sizes` gives the
        paper's choice).
    g1 : int or None, default=None
        HDG: cells of every 1-D grid (a power of two, at least ``g2``; None: ``8 g2``). Must
        be None for TDG.
    columns : sequence of str or None, default=None
        The attributes' names (None: ``"x0"``, ``"x1"``, ...), by which queries and client
        records name them.

    Attributes
    ----------
    groups : list of tuple
        The attributes of each group's grid, 1-D groups first (HDG), then the pairs.
    resolution : int
        Cells per attribute at the finest grid (``g1`` for HDG, ``g2`` for TDG).
    oracle_1d, oracle_2d : OptimizedLocalHashing
        The frequency oracles over a 1-D grid (None for TDG) and over a 2-D grid.

    See Also
    --------
    sklearn_ldp.mechanisms.multi_range.answers.GridAnswers : Consistent grids and answers.

    <yang20 reference>

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = GridRangeMechanism(1.0, [(0, 1), (0, 1)], method="hdg", g1=16, g2=4)
    >>> mechanism.groups, mechanism.n_cells
    ([(0,), (1,), (0, 1)], 48)
    >>> rng = np.random.default_rng(0)
    >>> reports = mechanism.randomize(rng.random((30_000, 2)), rng)
    >>> reports.shape, reports.dtype
    ((30000, 3), dtype('uint64'))
    >>> grids = mechanism.grid_frequencies(mechanism.aggregate(reports))
    >>> [round(float(g.sum()), 6) for g in grids]
    [1.0, 1.0, 1.0]
    """

    kind = KIND

    def __init__(self, epsilon, bounds, method="hdg", g2=8, g1=None, columns=None):
        self.epsilon = check_epsilon(epsilon)
        _check_method(method)
        self.bounds = check_bounds_list(bounds)
        self.columns = _check_columns(columns, len(self.bounds))
        self.method = method
        self.g2 = _check_grid(g2, "g2", MAX_G2)
        d = len(self.bounds)
        if method == "tdg":
            if g1 is not None:
                raise ValueError(f"g1 is for method='hdg' (TDG has no 1-D grids), got {g1!r}.")
            self.g1 = None
        else:
            self.g1 = _check_grid(8 * self.g2 if g1 is None else g1, "g1", MAX_G1)
            if self.g1 < self.g2:
                raise ValueError(f"g1 must be at least g2 (HDG's 1-D grids refine its 2-D "
                                 f"grids), got g1={self.g1}, g2={self.g2}.")
        self.resolution = self.g1 if method == "hdg" else self.g2
        pairs = list(combinations(range(d), 2))
        self.groups = ([(a,) for a in range(d)] if method == "hdg" else []) + pairs
        self.oracle_2d = OptimizedLocalHashing(self.g2 * self.g2, self.epsilon)
        self.oracle_1d = (OptimizedLocalHashing(self.g1, self.epsilon) if method == "hdg"
                          else None)
        self.group_sizes = [self.oracle_of(k).n_inputs for k in range(len(self.groups))]
        self.offsets = np.concatenate([[0], np.cumsum(self.group_sizes)]).astype(np.int64)
        self.n_inputs = int(self.offsets[-1])
        self.name = f"multi_range({method})"
        self.params = {"method": method, "bounds": [list(pair) for pair in self.bounds],
                       "g1": self.g1, "g2": self.g2, "columns": list(self.columns)}
        for oracle in (o for o in (self.oracle_1d, self.oracle_2d) if o is not None):
            # The group is drawn independently of the record: the report's worst ratio is
            # the oracle's, decided on the sampled integers.
            check_composed_budget([oracle_worst_ratio(oracle)], self.epsilon,
                                  f"{self.name}'s report")

    @property
    def n_attributes(self):
        """Number of attributes ``d``."""
        return len(self.bounds)

    @property
    def n_groups(self):
        """Number of groups (grids)."""
        return len(self.groups)

    def oracle_of(self, k):
        """The frequency oracle of group ``k``'s grid."""
        return self.oracle_1d if len(self.groups[k]) == 1 else self.oracle_2d

    def to_dict(self):
        """The specification: ``{"version", "mechanism", "epsilon", "n_inputs", "params"}``.

        Returns
        -------
        dict
            ``params`` holds ``method``, ``bounds``, ``g1`` and ``g2``.
        """
        return super().to_dict()

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field.

        Parameters
        ----------
        spec : dict
            The specification.

        Returns
        -------
        GridRangeMechanism
        """
        params = spec.get("params") if isinstance(spec, dict) else None
        if not isinstance(params, dict) or not set(params) <= {
                "method", "bounds", "g1", "g2", "columns"} or "bounds" not in params:
            raise ValueError(f"params of a {KIND!r} specification must hold 'bounds' and "
                             f"'method', 'g1', 'g2', 'columns', got {str(params)[:80]!r}.")
        mechanism = cls(spec.get("epsilon"), params["bounds"],
                        method=params.get("method", "hdg"), g2=params.get("g2", 8),
                        g1=params.get("g1"), columns=params.get("columns"))
        if spec.get("n_inputs") != mechanism.n_inputs:
            raise ValueError(f"n_inputs of the {KIND!r} specification must be "
                             f"{mechanism.n_inputs} (the cells of its grids), got "
                             f"{spec.get('n_inputs')!r}.")
        return mechanism

    def __repr__(self):
        return (f"GridRangeMechanism(epsilon={self.epsilon}, bounds={self.bounds}, "
                f"method={self.method!r}, g2={self.g2}, g1={self.g1}, columns={self.columns})")

    # ------------------------------------------------------------------ client side
    def codes(self, records):
        """Each value's cell at the finest resolution, ``(N, d)`` int64; a ValueError names
        the first value outside its bounds (or not a finite number).

        Parameters
        ----------
        records : array-like of shape (n_users, n_attributes)
            The users' values.

        Returns
        -------
        ndarray of int64, shape (n_users, n_attributes)
        """
        try:
            values = np.asarray(records, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"records must be an (n_users, {self.n_attributes}) array of "
                             "numbers.") from None
        if values.size == 0:  # no users (the report template of deploy.collect)
            values = values.reshape(0, self.n_attributes)
        if values.ndim != 2 or values.shape[1] != self.n_attributes:
            raise ValueError(f"records must be an (n_users, {self.n_attributes}) array, got "
                             f"shape {values.shape}.")
        low = np.array([pair[0] for pair in self.bounds])
        high = np.array([pair[1] for pair in self.bounds])
        with np.errstate(invalid="ignore"):
            bad = ~((values >= low) & (values <= high))
        if bad.any():
            row, column = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f"{self.columns[column]!r} of record {row} is "
                             f"{values[row, column]!r}, outside its bounds "
                             f"{list(self.bounds[column])}.")
        r = self.resolution
        codes = np.floor((values - low) * r / (high - low)).astype(np.int64)
        return np.minimum(codes, r - 1)

    def group_cells(self, codes, k):
        """The cell of group ``k``'s grid of each row of finest-resolution ``codes``."""
        group = self.groups[k]
        if len(group) == 1:
            return codes[:, group[0]]
        step = self.resolution // self.g2
        return (codes[:, group[0]] // step) * self.g2 + codes[:, group[1]] // step

    def randomize(self, records, rng):
        """Privatize one record of ``d`` numbers per user: ``[group, seed, bucket]`` rows.

        Parameters
        ----------
        records : array-like of shape (n_users, n_attributes)
            Values within the bounds.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray of uint64, shape (n_users, 3)
        """
        codes = self.codes(records)
        n = codes.shape[0]
        group = rng.integers(self.n_groups, size=n).astype(np.min_scalar_type(self.n_groups))
        order, bounds = smp_groups(group, self.n_groups)
        reports = np.empty((n, 3), dtype=np.uint64)
        reports[:, 0] = group
        for k in range(self.n_groups):
            users = order[bounds[k]:bounds[k + 1]]
            cells = self.group_cells(codes[users], k)
            reports[users, 1:] = self.oracle_of(k).randomize(cells, rng)
        return reports

    def exact_law(self, record, seeds=None):
        """The exact law of one user's report given that the seed lies in ``seeds``.

        A uniform group (``1 / n_groups``), then OLH's law of the record's cell in that
        group's grid given the seed (:meth:`OptimizedLocalHashing.exact_law`).

        Parameters
        ----------
        record : sequence of float
            One user's ``d`` values.
        seeds : array-like of uint64, optional
            The seeds (default ``0 .. 7``).

        Returns
        -------
        ExactLaw
            Outputs ``[group, seed, bucket]`` rows, integer weights.
        """
        codes = self.codes(np.asarray(record, dtype=np.float64).reshape(1, -1))
        laws = [self.oracle_of(k).exact_law(int(self.group_cells(codes, k)[0]), seeds)
                for k in range(self.n_groups)]
        common = math.lcm(*(law.total for law in laws))  # the same probability per group
        outputs, weights = [], []
        for k, law in enumerate(laws):
            rows = np.empty((law.outputs.shape[0], 3), dtype=np.uint64)
            rows[:, 0] = k
            rows[:, 1:] = law.outputs
            outputs.append(rows)
            weights += [int(w) * (common // law.total) for w in law.weights]
        return ExactLaw(np.concatenate(outputs), weights, common * self.n_groups)

    # ------------------------------------------------------------------ server side
    def empty_reports(self):
        """No reports, in the layout of :meth:`randomize`'s."""
        return np.empty((0, 3), dtype=np.uint64)

    def report_validity(self, reports):
        # Rows [group, seed, bucket] with a group of this mechanism and a bucket of its oracle.
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != 3 or reports.dtype != np.uint64:
            raise ValueError(f"reports of the {self.name!r} mechanism are an (N, 3) uint64 "
                             f"array of [group, seed, bucket] rows, got shape {reports.shape} "
                             f"and dtype {reports.dtype}: they come from another mechanism.")
        buckets = np.array([self.oracle_of(k).n_buckets for k in range(self.n_groups)],
                           dtype=np.uint64)
        in_groups = reports[:, 0] < np.uint64(self.n_groups)
        group = np.where(in_groups, reports[:, 0], 0).astype(np.int64)
        valid = in_groups & (reports[:, 2] < buckets[group])
        return ReportCheck(reports, valid, f"[group, seed, bucket] rows with a group in [0, "
                                           f"{self.n_groups}) and its oracle's bucket")

    def aggregate(self, reports):
        # Per group: OLH's support counts of its cells, then its number of reports.
        reports = self.check_reports(reports)
        group = reports[:, 0].astype(np.min_scalar_type(self.n_groups))
        order, bounds = smp_groups(group, self.n_groups)
        parts = [self.oracle_of(k).aggregate(reports[order[bounds[k]:bounds[k + 1]], 1:])
                 for k in range(self.n_groups)]
        return np.concatenate(parts)

    def _split(self, statistic):
        """The statistic's part of each group (OLH statistics), each checked by its oracle."""
        statistic = np.asarray(statistic)
        size = self.n_inputs + self.n_groups
        if statistic.shape != (size,):
            raise ValueError(f"the statistic of {self.name!r} has {size} entries (each grid's "
                             f"support counts and number of reports), got shape "
                             f"{statistic.shape}.")
        stops = self.offsets[1:] + np.arange(1, self.n_groups + 1)
        starts = np.concatenate([[0], stops[:-1]])
        # Each part as its oracle checks a statistic (int64 counts, supports within totals).
        return [self.oracle_of(k)._check_statistic(statistic[start:stop])
                for k, (start, stop) in enumerate(zip(starts, stops, strict=True))]

    @multi_range_docstring
    def check_statistic(self, statistic):
        """The statistic as int64 counts, or a ValueError naming what is wrong (its length,
        or a group's part that no reports can produce).

        <statistic parameter>

        Returns
        -------
        ndarray of int64
        """
        return np.concatenate(self._split(statistic))

    def n_reports(self, statistic):
        # The sum of the groups' numbers of reports.
        return sum(self.oracle_of(k).n_reports(part)
                   for k, part in enumerate(self._split(statistic)))

    def group_reports(self, statistic):
        """Number of reports of each group, ``N_g``."""
        return np.array([self.oracle_of(k).n_reports(part)
                         for k, part in enumerate(self._split(statistic))], dtype=np.int64)

    @multi_range_docstring
    def grid_frequencies(self, statistic):
        """Every grid's unbiased cell frequencies (fractions of its group's users).

        <statistic parameter>

        Returns
        -------
        list of ndarray
            Per group, its cells' estimated fractions (a 1-D grid: ``g1`` entries; a 2-D grid
            of attributes ``(a, b)``: ``g2 * g2`` entries, ``cell_a * g2 + cell_b``), each
            summing to 1, unbiased (some may be negative).

        Raises
        ------
        ValueError
            If a group has no report (its grid cannot be estimated), or the statistic is not
            one these reports can produce.
        """
        parts = self._split(statistic)
        grids = []
        for k, part in enumerate(parts):
            total = self.oracle_of(k).n_reports(part)
            if total == 0:
                raise ValueError(f"group {k} (attributes {self.groups[k]}) has no report: "
                                 "collect more users (every grid needs some).")
            grids.append(self.oracle_of(k).estimate(part) / total)
        return grids

    @multi_range_docstring
    def estimate(self, statistic):
        """Every grid's estimated users per cell, concatenated in group order.

        The unbiased fractions of :meth:`grid_frequencies` times the number of reports of
        all groups: each grid estimates the whole population.

        <statistic parameter>

        Returns
        -------
        ndarray of shape (n_cells,)
        """
        return np.concatenate(self.grid_frequencies(statistic)) * self.n_reports(statistic)

    def linear_variance(self, k, weights, frequencies, n_group, n_users=None):
        """Variance of ``weights . f_hat`` for group ``k``'s estimated cell fractions.

        OLH's exact variance (:class:`~sklearn_ldp.mechanisms.oracles.support.SupportOracle`):
        a user of cell ``u`` adds ``c_norm ||w'||^2 + c_own w'_u^2`` with ``w' = w -
        mean(w)``; summed over the cells' true fractions and divided by ``N_g``. That is the
        variance about the group's own fractions. With ``n_users``, the variance about the
        fractions of all ``n_users`` users: the group is a uniformly random subset of
        ``N_g`` of them, which adds ``(sum f w^2 - (sum f w)^2) / N_g (N - N_g) / (N - 1)``
        (sampling without replacement).

        Parameters
        ----------
        k : int
            The group.
        weights : ndarray of shape (n_queries, n_group_cells)
            One linear query per row (coverage of each cell, in ``[0, 1]``).
        frequencies : ndarray of shape (n_group_cells,)
            The cells' true fractions (or a plug-in estimate, clipped to ``[0, 1]``).
        n_group : int
            Users of the group.
        n_users : int or None, default=None
            Users of the whole collection, to include the sampling of the group.

        Returns
        -------
        ndarray of shape (n_queries,)
        """
        c_norm, c_own = self.oracle_of(k)._variance_coefficients()
        centered = weights - weights.mean(axis=1, keepdims=True)
        squares = centered**2
        variance = (c_norm * squares.sum(axis=1) + c_own * squares @ frequencies) / n_group
        if n_users is None or n_users <= 1:
            return variance
        spread = weights**2 @ frequencies - (weights @ frequencies) ** 2
        return variance + np.maximum(spread, 0.0) / n_group * (n_users - n_group) / (n_users - 1)

    def sample_grid_frequencies(self, frequencies, group_reports, n_draws, rng):
        """Draws of every grid's unbiased fractions (:meth:`grid_frequencies`) for a
        collection whose cells hold ``frequencies``, for a parametric bootstrap.

        OLH's support counts have no exact sampler short of one report per user; a group's
        fractions are an average of ``N_g`` independent reports, so each draw is Gaussian
        with their exact covariance given ``N_g`` (:meth:`linear_variance`'s: OLH's
        ``C diag(c_norm + c_own f) C / N_g`` with ``C`` the centering, plus the group's
        sampling from all users, ``(diag(f) - f f^T) / N_g (N - N_g) / (N - 1)``). Each draw
        sums to 1, as the estimates do.

        Parameters
        ----------
        frequencies : list of ndarray
            Per group, its cells' fractions (flat; clipped to non-negative and normalised).
        group_reports : array-like of int
            Users of each group, ``N_g`` (their sum is ``N``).
        n_draws : int
            Draws of every grid.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        list of ndarray
            Per group, ``(n_draws, n_group_cells)`` draws.

        Examples
        --------
        >>> mechanism = GridRangeMechanism(1.0, [(0, 1), (0, 1)], g1=8, g2=2)
        >>> uniform = [np.full(size, 1 / size) for size in mechanism.group_sizes]
        >>> draws = mechanism.sample_grid_frequencies(uniform, [1000, 1000, 1000], 5000,
        ...                                           np.random.default_rng(0))
        >>> [d.shape for d in draws], bool(np.allclose(draws[2].sum(axis=1), 1.0))
        ([(5000, 8), (5000, 8), (5000, 4)], True)
        >>> weights = np.array([[1.0, 1.0, 0.0, 0.0]])  # the first half of the pair's grid
        >>> variance = mechanism.linear_variance(2, weights, uniform[2], 1000, 3000)
        >>> bool(abs((draws[2] @ weights[0]).var() / variance[0] - 1) < 0.1)
        True
        """
        n_users = int(np.sum(group_reports))
        draws = []
        for k, fractions in enumerate(frequencies):
            f = np.maximum(np.ravel(np.asarray(fractions, dtype=float)), 0.0)
            f = f / f.sum()
            n_group = int(group_reports[k])
            c_norm, c_own = self.oracle_of(k)._variance_coefficients()
            noise = rng.standard_normal((n_draws, f.size)) * np.sqrt(
                np.maximum(c_norm + c_own * f, 0.0) / n_group)
            noise -= noise.mean(axis=1, keepdims=True)
            if n_users > max(n_group, 1):
                # sqrt(f) z - f (sqrt(f) . z) has covariance diag(f) - f f^T.
                spread = rng.standard_normal((n_draws, f.size)) * np.sqrt(f)
                spread -= spread.sum(axis=1, keepdims=True) * f
                noise += spread * math.sqrt((n_users - n_group) / ((n_users - 1) * n_group))
            draws.append(f + noise)
        return draws
