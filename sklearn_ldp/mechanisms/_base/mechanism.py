"""The interface every LDP mechanism implements, and the registry that rebuilds them from JSON.

A mechanism has a client side and a server side:

* ``randomize(indices, rng)``: privatize one record per user (``indices`` are flat domain
  cells) and return the reports as one compact array (output indices, packed bits, or
  ``(seed, value)`` pairs; never a float matrix of one-hot rows).
* ``aggregate(reports)``: the sufficient statistic, a 1-D array that is *additive* over
  disjoint sets of reports (so chunked and distributed aggregation just sums). It works in
  bounded memory on any number of reports (it processes them in chunks of
  ``AGGREGATE_CHUNK`` users) and counts in int64, so it cannot overflow.
* ``estimate(statistic)``: an unbiased estimate of the data vector (users per cell). It
  validates the statistic first (length, counts that are non-negative integers up to
  ``MAX_REPORTS = 2^62``, totals that some set of reports can produce), so that a corrupted
  or crafted aggregate is refused, not decoded.
* ``report_validity(reports)``: the mechanism's valid-report set (the outputs its randomizer
  produces; for the Gaussian mechanisms, a box the noise leaves with probability below
  ``1e-12``), row by row; ``check_reports`` refuses reports outside it naming the mechanism,
  the row and the value, ``drop_invalid_reports`` removes and counts them.
* ``report_influence(W)``: how far one valid report can move each answer (the poisoning
  bound, :mod:`.poisoning`).
* ``per_user_variance(gram)`` and ``query_variance(W)``: the exact variance of the workload
  answers that one user of each type contributes (the answers' variance is the sum over
  users), so errors are known before any data is collected. ``gram`` is ``W^T W`` as a
  :class:`~sklearn_ldp._gram.Gram` operator, a workload (its ``gram()``) or a dense array;
  the frequency oracles and range mechanisms use only its structure (diagonal, row sums,
  block sums), so large domains never form an ``n x n`` matrix, while mechanisms built on a
  dense strategy (small ``n`` by construction) densify it. ``query_variance(W)`` takes dense
  rows and returns the ``(p, n)`` matrix; ``query_variance_summary(workload)`` returns its
  per-query maximum and mean over the user types without forming it.
* ``supports(workload)`` / ``check_supports(workload)``: whether the queries can be answered
  without bias (a dense matrix or a workload).

Everything here is pure numpy; nothing knows about scikit-learn or pandas.
"""

import importlib
import json
from typing import NamedTuple

import numpy as np

from ..._validation import MAX_DENSE_ENTRIES, check_epsilon, check_positive_int
from ...deploy.limits import check_mechanism_spec_sizes
from .counts import MAX_REPORTS, check_count_values, exact_total, report_count
from .docstrings import shared_sections
from .influence import ReportInfluence
from .workload_ops import (
    DENSE_GRAM_CELLS,
    ROW_FALLBACK_ENTRIES,
    check_gram,
    check_workload_width,
    dense_gram,
    dense_workload,
    is_workload,
    workload_n_queries,
    workload_row_blocks,
)

SPEC_VERSION = 1

# Users processed at once by `aggregate` (bounds the memory of the temporaries).
AGGREGATE_CHUNK = 2**18


_REGISTRY = {}


# The docstring sections that the contract's methods share, written in at ``<name>`` lines.
_contract_docstring = shared_sections({
    "reports parameter": """\
Parameters
----------
reports : array-like
    Reports in the format :meth:`randomize` produces.""",
    "layout raises": """\
Raises
------
ValueError
    If the array's layout (dimension, dtype, width) is not the mechanism's.""",
    "rows parameter": """\
Parameters
----------
workload_matrix : array-like of shape (n_queries, n_cells)
    The queries, one dense row each (a 1-D array is one query).""",
    "workload parameter": """\
Parameters
----------
workload_matrix : workload or array-like of shape (n_queries, n_cells)
    A query matrix or a workload.""",
})


def register(cls):
    """Class decorator: make ``mechanism_from_dict`` able to rebuild ``cls`` by its ``kind``."""
    _REGISTRY[cls.kind] = cls
    return cls


def mechanism_class(kind):
    """The registered mechanism class of the given kind."""
    _import_all_mechanisms()
    if kind not in _REGISTRY:
        raise ValueError(f"unknown mechanism {kind!r}; known: {sorted(_REGISTRY)}.")
    return _REGISTRY[kind]


# Modules that define registered mechanisms.
MECHANISM_MODULES = ("factorization.mechanism", "bassily.gaussian", "bassily.rejection",
                     "ranges.haar", "oracles.hadamard", "oracles.hadamard_coefficient",
                     "oracles.local_hashing", "marginals.em", "marginals.input_perturbation",
                     "marginals.marginal_perturbation",
                     "oracles.randomized_response", "ranges.tree", "oracles.subset_selection",
                     "oracles.unary",
                     "multi_range.grids", "oracles.histogram_encoding",
                     "heavy_hitters.rappor")


def _import_all_mechanisms():
    """Import every mechanism module once, so that all of them are registered."""
    for module in MECHANISM_MODULES:
        importlib.import_module(f"sklearn_ldp.mechanisms.{module}")


def mechanism_from_dict(spec):
    """Rebuild any registered mechanism from the dict its ``to_dict()`` returned.

    A spec may come from another party: its declared sizes are compared with the caps of
    :mod:`sklearn_ldp.deploy.limits` (``n_inputs <= max_cells`` ...) before any constructor runs,
    and a missing or malformed field is a ValueError naming it (never a KeyError).

    Parameters
    ----------
    spec : dict
        The specification: ``"version"`` (1), ``"mechanism"`` (the kind, e.g.
        ``"randomized_response"``), ``"epsilon"`` and the fields of that kind, as
        :meth:`Mechanism.to_dict` writes them.

    Returns
    -------
    Mechanism
        The mechanism of that kind, equal to the one that wrote ``spec``; its constructor
        has validated every field (and checked a strategy matrix's privacy exactly).

    Raises
    ------
    ValueError
        If the kind is unknown, the version unsupported, a declared size above its cap, or
        a field missing or malformed.

    See Also
    --------
    mechanism_from_json : The same from JSON text.
    Mechanism.to_dict : The specification this reads.

    Examples
    --------
    >>> mechanism_from_dict({"version": 1, "mechanism": "randomized_response",
    ...                      "epsilon": 1.0, "n_inputs": 3, "params": {}})
    RandomizedResponse(n_inputs=3, epsilon=1.0)
    """
    _import_all_mechanisms()
    if not isinstance(spec, dict) or not isinstance(spec.get("mechanism"), str) \
            or spec["mechanism"] not in _REGISTRY:
        raise ValueError(
            f"not a mechanism specification (known mechanisms: {sorted(_REGISTRY)}): "
            f"{str(spec)[:80]!r}."
        )
    kind = spec["mechanism"]
    check_mechanism_spec_sizes(spec)  # before anything of the declared sizes is allocated
    # A kind whose format changed on its own declares its version (factorization: 2).
    expected = getattr(_REGISTRY[kind], "spec_version", SPEC_VERSION)
    if spec.get("version") != expected:
        raise ValueError(
            f"unsupported specification version {spec.get('version')!r}; this sklearn_ldp "
            f"reads version {expected} of {kind!r}."
        )
    try:
        return _REGISTRY[kind].from_dict(spec)
    except KeyError as exc:
        raise ValueError(f"the {kind!r} specification has no field {exc}.") from None
    except (AttributeError, IndexError, OverflowError, RecursionError) as exc:
        # A field of the wrong JSON type (a number where a list is expected, ...).
        raise ValueError(f"malformed {kind!r} specification: {type(exc).__name__}: "
                         f"{exc}.") from None


def mechanism_from_json(text):
    """Rebuild a mechanism from the JSON its ``to_json()`` wrote.

    Parameters
    ----------
    text : str
        JSON text, as :meth:`Mechanism.to_json` writes it.

    Returns
    -------
    Mechanism
        The mechanism it describes (see :func:`mechanism_from_dict` for the checks).

    Raises
    ------
    ValueError
        If the text is not JSON or not a valid specification.

    See Also
    --------
    mechanism_from_dict : The same from the decoded dict.
    Mechanism.to_json : The JSON this reads.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> text = RandomizedResponse(3, 1.0).to_json()
    >>> mechanism = mechanism_from_json(text)
    >>> type(mechanism).__name__, mechanism.epsilon, mechanism == RandomizedResponse(3, 1.0)
    ('RandomizedResponse', 1.0, True)
    """
    return mechanism_from_dict(json.loads(text))


def check_type_indices(indices, n_inputs):
    """User types as an int64 array, or a ValueError if any lies outside ``[0, n_inputs)``."""
    indices = np.asarray(indices)
    if indices.ndim != 1 or (indices.size and not np.issubdtype(indices.dtype, np.integer)):
        raise ValueError(f"user types must be a 1-D array of integer cell indices, got an "
                         f"array of shape {indices.shape} and dtype {indices.dtype}.")
    indices = indices.astype(np.int64, copy=False)
    if indices.size and (indices.min() < 0 or indices.max() >= n_inputs):
        # Name the first offending entry, so a user can find the bad record.
        position = int(np.argmax((indices < 0) | (indices >= n_inputs)))
        raise ValueError(f"user types must be integers in [0, {n_inputs}); entry {position} "
                         f"is {int(indices[position])}.")
    return indices


def check_workload_matrix(workload_matrix, n_inputs):
    """A dense query matrix as a 2-D float array with ``n_inputs`` columns (1-D: one query)."""
    W = np.asarray(workload_matrix, dtype=float)
    if W.ndim == 1:
        W = W[None, :]
    if W.ndim != 2 or W.shape[1] != n_inputs:
        raise ValueError(f"the workload must have {n_inputs} columns (one per cell), got "
                         f"shape {W.shape}.")
    return W


def check_type_counts(type_counts, n_inputs):
    """Users per cell as an int64 array of length ``n_inputs`` (for simulation).

    At most ``MAX_REPORTS = 2^62`` users in all, so that every count a simulation draws (each
    at most the total) and every sum of two of them fits in int64: a larger total is refused
    before anything is drawn, never wrapped.
    """
    counts = np.asarray(type_counts)
    if counts.shape != (n_inputs,) or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"type_counts must be {n_inputs} integer counts, one per cell.")
    if np.any(counts < 0):
        cell = int(np.flatnonzero(counts < 0)[0])
        raise ValueError(f"type_counts must be non-negative; cell {cell} has {counts[cell]}.")
    if counts.size and counts.max() > MAX_REPORTS:  # also catches uint64 beyond int64
        cell = int(np.argmax(counts))
        raise ValueError(f"type_counts holds at most 2^62 users; cell {cell} has "
                         f"{counts[cell]}.")
    counts = counts.astype(np.int64)
    total = exact_total(counts)
    if total > MAX_REPORTS:
        raise ValueError(f"type_counts holds at most 2^62 = {MAX_REPORTS} users in all (so "
                         f"that the simulated counts fit in int64); got {total}.")
    return counts


def report_dtype(n_values):
    """The smallest unsigned integer type that holds every value in ``[0, n_values)``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_values <= np.iinfo(dtype).max + 1:
            return dtype
    return np.uint64


class ReportCheck(NamedTuple):
    """What :meth:`Mechanism.report_validity` found.

    Attributes
    ----------
    reports : ndarray
        The reports, checked for their layout (dimension, dtype, width).
    valid : ndarray of bool
        One entry per report: whether it lies in the mechanism's valid-report set.
    rule : str
        That set in words ("output indices in [0, 8)"), for error messages.
    """

    reports: np.ndarray
    valid: np.ndarray
    rule: str


def report_text(reports, row):
    """Report ``row`` as short text for messages (rows of many entries are truncated)."""
    value = np.asarray(reports)[row]
    text = repr(value.tolist() if isinstance(value, np.ndarray) else value.item())
    return text if len(text) <= 60 else text[:57] + "..."


def invalid_reports_error(name, check):
    """The ValueError for reports outside the valid set: mechanism, first row and value."""
    invalid = np.flatnonzero(~check.valid)
    row = int(invalid[0])
    return ValueError(
        f"report {row} of the {name!r} mechanism is {report_text(check.reports, row)}, but its "
        f"reports must be {check.rule} ({invalid.shape[0]} of {check.valid.shape[0]} reports "
        "are not): they come from another mechanism or domain, or were crafted. To drop and "
        "count them instead, collect with reports_from_client(..., invalid='drop')."
    )


def raise_invalid_reports(name, check):
    """``check.reports`` if every report is valid, else :func:`invalid_reports_error`."""
    if not np.all(check.valid):
        raise invalid_reports_error(name, check)
    return check.reports


def index_report_validity(reports, n_values, name, low=0):
    """:class:`ReportCheck` of reports that are one index in ``[low, n_values)`` per user.

    A ValueError (not a mask) when the array is not 1-D integer: its layout, not one report,
    is wrong.
    """
    reports = np.asarray(reports)
    if reports.ndim != 1 or not np.issubdtype(reports.dtype, np.integer):
        raise ValueError(
            f"reports of the {name!r} mechanism must be a 1-D array of integer output indices, "
            f"got an array of shape {reports.shape} and dtype {reports.dtype}."
        )
    rule = f"indices in [{low}, {n_values})"
    if not reports.size or (reports.min() >= low and reports.max() < n_values):
        return ReportCheck(reports, all_valid(reports.shape[0]), rule)
    return ReportCheck(reports, (reports >= low) & (reports < n_values), rule)


def all_valid(n_reports):
    """A read-only mask of ``n_reports`` True values that takes no memory (a broadcast view):
    the common case of reports that are all valid, without a mask as long as the reports."""
    return np.broadcast_to(np.True_, (n_reports,))


def check_index_reports(reports, n_values, name, low=0):
    """Reports that are one index in ``[low, n_values)`` per user, as a 1-D integer array;
    a ValueError naming the first report outside."""
    return raise_invalid_reports(name, index_report_validity(reports, n_values, name, low))


def count_outputs(reports, n_outputs):
    """How many reports name each output index, as int64, counted in chunks."""
    counts = np.zeros(n_outputs, dtype=np.int64)
    for rows in chunks(reports.shape[0]):
        counts += np.bincount(reports[rows], minlength=n_outputs)
    return counts


def check_output_counts(counts, n_outputs, name):
    """A statistic of ``n_outputs`` output counts as int64, or a ValueError: wrong length
    (another mechanism, epsilon or domain), or an entry that is no count of reports
    (:func:`check_count_values`)."""
    counts = np.asarray(counts)
    if counts.shape != (n_outputs,):
        raise ValueError(
            f"the statistic of {name!r} holds {n_outputs} output counts, got shape "
            f"{counts.shape}: it comes from another mechanism, epsilon or domain."
        )
    return check_count_values(counts, name)


def chunks(n_rows, chunk=None):
    """Slices covering ``range(n_rows)`` in blocks of ``chunk`` rows (``AGGREGATE_CHUNK``)."""
    chunk = AGGREGATE_CHUNK if chunk is None else chunk
    return [slice(start, min(start + chunk, n_rows)) for start in range(0, n_rows, chunk)]


class Mechanism:
    """Base class of LDP mechanisms (see the module docstring for the contract).

    A mechanism turns one record into one privatized report on the client
    (:meth:`randomize`); the server sums the reports into an additive statistic
    (:meth:`aggregate`) and decodes it into an unbiased estimate of the users per domain cell
    (:meth:`estimate`). Its error on a workload is known before any data is collected
    (:meth:`per_user_variance`, :meth:`expected_error`), and :meth:`to_dict` /
    :func:`mechanism_from_dict` carry it between server and clients. This class is abstract:
    use one of the mechanisms listed under See Also.

    Subclasses set ``kind`` (registry key), and in ``__init__`` the attributes ``epsilon``,
    ``n_inputs``, ``name`` and ``params`` (the plain-valued constructor arguments other than
    ``n_inputs`` and ``epsilon``, used by :meth:`to_dict`), and implement ``randomize``,
    ``report_validity`` (or only ``check_reports``, when reports cannot be dropped one by
    one), ``aggregate``, ``estimate`` and ``n_reports`` (both validating the statistic),
    ``per_user_variance`` and ``query_variance``, and where they can ``report_influence``.
    ``per_user_variance`` must accept a Gram operator (convert with
    :func:`check_gram`; use only the operator methods it needs, or densify with
    ``_dense_gram`` when ``n`` is small by construction). ``query_variance_summary`` (per-query
    worst and average) and ``supports`` work from the dense rows by default; override them
    where a closed form avoids the ``(p, n)`` matrix.

    Attributes
    ----------
    kind : str
        The registry key, written as ``"mechanism"`` by :meth:`to_dict`.
    epsilon : float
        The privacy budget of one report: ``epsilon``-LDP (``(epsilon, delta)``-LDP for
        the Gaussian randomizer).
    n_inputs : int
        Number of domain cells (user types); :attr:`n_cells` is the same number under
        the package's common name.
    name : str
        Name for display and messages.
    params : dict
        The constructor arguments other than ``n_inputs`` and ``epsilon`` (plain values).

    See Also
    --------
    FactorizationMechanism : A mechanism given by an explicit strategy matrix.
    RandomizedResponse : The simplest frequency oracle.
    HadamardResponse : A frequency oracle for large domains.
    HierarchicalHistogram : A tree of frequency oracles for range queries.
    MarginalMechanism : The mechanisms for k-way marginals.
    mechanism_from_dict : Rebuild any mechanism from its specification.

    References
    ----------
    .. [1] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
       for linear queries under local differential privacy", PVLDB 13(11):1905-1918, 2020
       (strategy matrices, the unbiased reconstruction and its per-user variance).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(4, epsilon=2.0)
    >>> isinstance(mechanism, Mechanism)
    True
    >>> users = np.repeat([0, 1, 2, 3], [5000, 3000, 1500, 500])  # one flat cell per user
    >>> reports = mechanism.randomize(users, np.random.default_rng(0))  # on the clients
    >>> statistic = mechanism.aggregate(reports)                       # on the server
    >>> mechanism.n_reports(statistic)
    10000
    >>> mechanism.estimate(statistic).round().tolist()  # users per cell, unbiased
    [5037.0, 2996.0, 1519.0, 448.0]

    The error is known before collecting: the histogram's total variance for 10000 users,
    and its standard deviation per cell.

    >>> error = mechanism.expected_error(np.eye(4), n_users=10000)
    >>> round(error["worst_case"]), round(float(np.sqrt(error["worst_case"] / 4)))
    (12331, 56)
    """

    kind = None

    def _set_domain_and_budget(self, n_inputs, epsilon):
        """Check and set ``n_inputs`` and ``epsilon``; ``name`` is the kind, ``params`` empty
        (the common start of the ``__init__`` of a mechanism without other parameters)."""
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.epsilon = check_epsilon(epsilon)
        self.name = self.kind
        self.params = {}

    @property
    def n_cells(self):
        """Number of domain cells (user types), the package's one public name for it.

        ``Domain.n_cells`` and ``Workload.n_cells`` count the same cells. ``n_inputs``, the
        constructor argument and stored attribute, is an alias kept for the specification
        format and existing code (read-only here: set ``n_inputs`` in ``__init__``).

        Returns
        -------
        int
            The length of :meth:`estimate`'s output and the width of the workloads.
        """
        return self.n_inputs

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Privatize one record per user: the client side of the protocol.

        Parameters
        ----------
        indices : array-like of int of shape (n_users,)
            Each user's record, as a flat domain cell in ``[0, n_cells)``.
        rng : numpy.random.Generator
            The source of randomness. A seeded generator reproduces a simulation; a deployed
            client draws from fresh OS entropy (``np.random.default_rng()``).

        Returns
        -------
        reports : ndarray
            One report per user (one entry or one row each) in the mechanism's compact
            format: output indices, packed bits or ``(seed, value)`` pairs, never a float
            matrix of one-hot rows. :meth:`aggregate` reads this format.

        Raises
        ------
        ValueError
            If ``indices`` is not a 1-D array of integers in ``[0, n_cells)``.
        """
        raise NotImplementedError

    # ------------------------------------------------------------------ server side
    @_contract_docstring
    def report_validity(self, reports):
        """Which reports lie in the mechanism's valid-report set, as a :class:`ReportCheck`.

        The layout of the array (dimension, dtype, width) is checked first and a wrong one
        raises a ValueError: no single report is at fault. Then every report is tested
        against the set of values the randomizer can produce (for the Gaussian mechanisms:
        with probability at least ``1e-12``), vectorized. Subclasses implement this; the
        default serves mechanisms that only implement ``check_reports`` (every report is
        then valid or the whole array is refused, so none can be dropped one by one).

        <reports parameter>

        Returns
        -------
        ReportCheck
            ``reports`` (as an array), ``valid`` (a boolean per report) and ``rule`` (the
            valid set in words, for messages).

        <layout raises>
        """
        if type(self).check_reports is Mechanism.check_reports:
            raise NotImplementedError(f"the {self.name!r} mechanism does not check its reports.")
        reports = self.check_reports(reports)
        return ReportCheck(reports, np.ones(np.shape(reports)[0], dtype=bool),
                           "accepted as a whole")

    @_contract_docstring
    def check_reports(self, reports):
        """The reports as an array, or a ValueError if any lies outside the valid-report set.

        <reports parameter>

        Returns
        -------
        ndarray
            The reports as an array, when every one is valid.

        Raises
        ------
        ValueError
            Naming the mechanism, the first report outside the valid-report set and its
            value (see :meth:`report_validity`), or a wrong array layout.
        """
        return raise_invalid_reports(self.name, self.report_validity(reports))

    @_contract_docstring
    def drop_invalid_reports(self, reports):
        """The reports without those outside the valid-report set, and how many were dropped.

        For servers that collect with ``invalid="drop"``: a report that no client of this
        mechanism can send is removed and counted rather than refused (a wrong array layout
        still raises).

        <reports parameter>

        Returns
        -------
        valid_reports : ndarray
            The valid reports, in their order.
        n_dropped : int
            The number of reports removed.

        <layout raises>
        """
        check = self.report_validity(reports)
        n_invalid = int(check.valid.shape[0] - np.count_nonzero(check.valid))
        if n_invalid == 0:
            return check.reports, 0
        return check.reports[check.valid], n_invalid

    def report_influence(self, workload_matrix):
        """How far one report can move each answer: a :class:`ReportInfluence`.

        For every query ``w`` (rows of ``workload_matrix``), the smallest and largest change
        of the unbiased answer ``w . estimate(statistic)`` that adding one valid report to
        any statistic makes (the estimates are linear, so the change does not depend on the
        other reports; the count of reports it adds is part of it), and the reports that
        attain them. :mod:`sklearn_ldp.mechanisms._base.poisoning` tabulates it.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_cells)
            The queries, one row each (a 1-D array is one query).

        Returns
        -------
        ReportInfluence
            Per query, the smallest and largest change one report makes (``low``,
            ``high``), the reports that attain them, and whether the bounds are exact.

        Raises
        ------
        NotImplementedError
            If the mechanism does not compute the influence of one report.
        """
        raise NotImplementedError(
            f"the {self.name!r} mechanism does not compute the influence of one report.")

    def aggregate(self, reports):
        """Sum reports into the mechanism's sufficient statistic: the server side.

        The statistic is additive: the statistics of disjoint sets of reports sum to the
        statistic of their union, so chunked, streaming and distributed aggregation just add
        them. It is computed in bounded memory whatever the number of reports; counts are
        int64 (the Gaussian mechanisms sum their real-valued reports in float64).

        Parameters
        ----------
        reports : array-like
            Reports in the format :meth:`randomize` produces (checked with
            :meth:`check_reports`).

        Returns
        -------
        statistic : ndarray of shape (n_statistic,)
            What :meth:`estimate` decodes, in the mechanism's layout (output counts, support
            counts followed by the number of reports, sums of Gaussian reports and their
            number, ...).

        Raises
        ------
        ValueError
            If a report lies outside the valid-report set, or the array's layout is wrong.
        """
        raise NotImplementedError

    def estimate(self, statistic):
        """Unbiased estimate of the data vector: the number of users in each domain cell.

        Parameters
        ----------
        statistic : array-like of shape (n_statistic,)
            The output of :meth:`aggregate`, or a sum of several. It is validated first
            (its length, and for counts: non-negative integers up to ``2^62`` whose totals
            some set of reports can produce), so a corrupted or crafted statistic is refused.

        Returns
        -------
        ndarray of shape (n_cells,)
            Estimated users per cell (floats, unbiased, so some may be negative). A
            mechanism that does not measure every direction of the data returns the
            estimate's component in the space it measures (see :attr:`null_space_dim`).

        Raises
        ------
        ValueError
            If the statistic is not one this mechanism's reports can produce.
        """
        raise NotImplementedError

    def n_reports(self, statistic):
        """Number of reports summarized by ``statistic``.

        Parameters
        ----------
        statistic : array-like of shape (n_statistic,)
            The output of :meth:`aggregate`, or a sum of several.

        Returns
        -------
        int
            The number of reports (users) counted in the statistic.
        """
        raise NotImplementedError

    def simulate_statistic(self, type_counts, rng):
        """Draw ``aggregate(randomize(users))`` directly from its exact distribution.

        ``type_counts[u]`` users of type ``u``. Only mechanisms whose aggregate has a
        distribution that can be sampled without one draw per user implement this.

        Parameters
        ----------
        type_counts : array-like of int of shape (n_cells,)
            The number of users of each type (domain cell), at most ``2^62`` in all.
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        statistic : ndarray of shape (n_statistic,)
            A statistic distributed exactly as the aggregate of those users' reports.

        Raises
        ------
        NotImplementedError
            If the mechanism has no exact simulation of its aggregate.
        """
        raise NotImplementedError(
            f"the {self.name!r} mechanism has no exact simulation of its aggregate; "
            "privatize the records with randomize (or LDPEncoder.transform) instead."
        )

    def exact_law(self, value):
        """The exact law of one user's report, as :meth:`randomize` samples it.

        Every report the randomizer can produce, with integer weights, so that privacy is
        checked on the laws exactly (:mod:`sklearn_ldp.mechanisms._base.exact`). The class
        docstring gives the law of each mechanism.

        Parameters
        ----------
        value : int
            The user's record, a domain cell in ``[0, n_cells)``.

        Returns
        -------
        ExactLaw
            ``outputs`` (every report, encoded as :meth:`randomize` encodes them, in the
            mechanism's canonical order), their integer ``weights`` and ``total``.

        Raises
        ------
        NotImplementedError
            If the mechanism's reports have no finite exact law here.
        """
        raise NotImplementedError(f"the {self.name!r} mechanism has no finite exact law.")

    def sum_of_squared_answers(self, statistic, gram):
        """Unbiased estimate of ``sum_i ||W x_i||^2`` over the users in ``statistic``.

        ``x_i`` is user ``i``'s one-report contribution to the estimate, whose second moment
        for a user of type ``u`` is ``z_u + ||w_u||^2``; that is linear in the user types, so
        plugging in the unbiased data-vector estimate keeps it unbiased. Held-out scoring
        uses it to subtract the held-out answers' own variance.

        Parameters
        ----------
        statistic : array-like of shape (n_statistic,)
            The output of :meth:`aggregate`.
        gram : Gram, workload or ndarray of shape (n_cells, n_cells)
            The workload's Gram matrix ``W^T W``.

        Returns
        -------
        float
            The unbiased estimate of ``sum_i ||W x_i||^2``.
        """
        gram = check_gram(gram, self.n_inputs)
        second_moments = self.per_user_variance(gram) + gram.diagonal()
        return float(self.estimate(statistic) @ second_moments)

    # ------------------------------------------------------------------ analysis
    def per_user_variance(self, gram):
        """``z_u``: total variance of the workload answers contributed by one user of type u.

        The answers' variance is the sum over users, so ``N`` users of type ``u`` give
        ``N z_u`` (data-independent; known before any data is collected).

        Parameters
        ----------
        gram : Gram, workload or ndarray of shape (n_cells, n_cells)
            ``W^T W`` for the workload ``W``: a Gram operator, a workload (its ``gram()``)
            or a dense array.

        Returns
        -------
        ndarray of shape (n_cells,)
            ``z_u`` for every user type ``u``, in squared counts per user.

        Raises
        ------
        ValueError
            If the Gram is not ``n_cells x n_cells``, or (structured mechanisms) has no
            structure the mechanism can use and is too large for its dense form or for the
            workload's rows (the message says what to use instead).
        """
        raise NotImplementedError

    def query_variance(self, workload_matrix):
        """Per-user variance of each query for each user type.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_cells)
            The queries, one dense row each.

        Returns
        -------
        ndarray of shape (n_queries, n_cells)
            Entry ``[i, u]``: the variance of query ``i``'s answer that one user of type
            ``u`` contributes.

        Raises
        ------
        ValueError
            If ``workload_matrix`` does not have ``n_cells`` columns.
        """
        raise NotImplementedError

    def query_variance_summary(self, workload):
        """``(worst, average)``: per query, the largest and the mean over user types ``u`` of
        ``query_variance(W)[i, u]``, without forming the ``(p, n)`` matrix.

        ``workload`` is a workload or a query matrix. This default reduces
        ``query_variance`` over the workload's dense row blocks (exact for every mechanism,
        ``O(p n)``); mechanisms with closed forms override it.

        Parameters
        ----------
        workload : workload or array-like of shape (n_queries, n_cells)
            The queries.

        Returns
        -------
        worst : ndarray of shape (n_queries,)
            Per query, the largest per-user variance over the user types.
        average : ndarray of shape (n_queries,)
            Per query, the mean per-user variance over the user types.

        Raises
        ------
        ValueError
            If the workload has the wrong width, or has no closed form here and more than
            ``2^24`` query-cell entries.
        """
        return self._summary_from_rows(workload)

    def _summary_from_rows(self, workload, only=None):
        """``query_variance_summary`` from dense row blocks, for the rows where ``only`` (a
        boolean mask over the queries) is True (all by default; NaN elsewhere)."""
        check_workload_width(workload, self.n_inputs)
        n_queries = workload_n_queries(workload)
        n_rows = n_queries if only is None else int(np.count_nonzero(only))
        if n_rows * self.n_inputs > ROW_FALLBACK_ENTRIES:
            # Dense rows cost O(p n) (the hierarchical tree: about 25 s for 1000 ranges over
            # 2^16 cells): refuse at once rather than run for minutes or hours.
            raise ValueError(
                f"the per-query error of the {self.name!r} mechanism has no closed form for "
                f"these queries: it is computed from their dense rows, {n_rows} queries x "
                f"{self.n_inputs} cells = {n_rows * self.n_inputs} entries, more than "
                f"{ROW_FALLBACK_ENTRIES} (2^24). Ask predict_error for at most "
                f"{max(1, ROW_FALLBACK_ENTRIES // self.n_inputs)} queries at a time, read "
                "expected_total_error_ (the sum over the workload, from its Gram), or use a "
                "mechanism with a closed form per query (frequency oracles, 'haar').")
        worst, average = np.full(n_queries, np.nan), np.full(n_queries, np.nan)
        for rows, block in workload_row_blocks(workload):
            chosen = np.arange(rows.start, rows.stop)
            if only is not None:
                keep = only[rows]
                if not keep.any():
                    continue
                block, chosen = block[keep], chosen[keep]
            z = self.query_variance(block)
            worst[chosen], average[chosen] = z.max(axis=1), z.mean(axis=1)
        return worst, average

    def _per_user_variance_from_rows(self, workload):
        """``z_u`` as the sum over queries of ``query_variance`` (exact, ``O(p n)``): the
        fallback for a Gram without the structure a mechanism needs."""
        z = np.zeros(self.n_inputs)
        for _rows, block in workload_row_blocks(workload):
            z += self.query_variance(block).sum(axis=0)
        return z

    def _per_user_variance_fallback(self, gram):
        """``per_user_variance`` for a Gram without the block structure a range mechanism
        needs (and too large to densify): summed over the rows of the workload behind it
        when they are few enough, else a ValueError saying why (a strategy selection then
        skips this mechanism with that reason)."""
        workload = getattr(gram, "workload", None)
        if workload is not None and workload.shape[0] * workload.shape[1] <= ROW_FALLBACK_ENTRIES:
            return self._per_user_variance_from_rows(workload)
        raise ValueError(
            f"the {self.name!r} mechanism needs block sums of the Gram matrix; {gram!r} has no "
            f"closed form for them, and with {self.n_inputs} cells (more than "
            f"{DENSE_GRAM_CELLS}) neither its dense form nor the workload's rows are small "
            "enough. Use a structured workload (histogram, prefix, all_range, marginals with "
            "block-aligned widths, stack of these) or fewer queries."
        )

    def _dense_gram(self, gram):
        """``gram`` (operator, workload or array) as a dense ``n x n`` array: for mechanisms
        whose ``n`` is small by construction (a dense strategy or measured matrix)."""
        return dense_gram(gram, self.n_inputs)

    def _support_rows(self, workload):
        """Dense rows spanning the workload's row space: its matrix when that has at most
        ``MAX_DENSE_ENTRIES`` entries, else its ``n x n`` Gram matrix (``W^T W`` has the row
        space of ``W``), for the row-space checks of dense-strategy mechanisms."""
        check_workload_width(workload, self.n_inputs)
        if is_workload(workload) and workload.shape[0] * workload.shape[1] > MAX_DENSE_ENTRIES:
            return self._dense_gram(workload.gram())
        return dense_workload(workload)

    def expected_error(self, gram, n_users=1):
        """Worst-case and average-case total variance of the workload for ``n_users``.

        Data-independent: ``n_users * max_u z_u`` (every user of the worst type) and
        ``n_users * mean_u z_u`` (users spread uniformly over the types), with ``z`` from
        :meth:`per_user_variance`. Choosing a mechanism by it spends no privacy.

        Parameters
        ----------
        gram : Gram, workload or ndarray of shape (n_cells, n_cells)
            ``W^T W`` for the workload ``W`` (an operator, a workload or a dense array).
        n_users : int, default=1
            The number of users who report.

        Returns
        -------
        dict
            ``{"worst_case": float, "average_case": float}``: the expected squared error
            ``E ||W x_hat - W x||^2`` summed over the queries, in squared counts.
        """
        z = self.per_user_variance(gram)
        return {"worst_case": n_users * float(z.max()), "average_case": n_users * float(z.mean())}

    @_contract_docstring
    def supports(self, workload_matrix):
        """Whether every query can be answered without bias (frequency oracles: always).

        <workload parameter>

        Returns
        -------
        bool
            True when every query lies in the space the mechanism measures.
        """
        return True

    def supports_gram(self, gram):
        """Whether the workload with Gram ``W^T W`` (operator or array) can be answered.

        Parameters
        ----------
        gram : Gram or ndarray of shape (n_cells, n_cells)
            ``W^T W`` for the workload ``W``.

        Returns
        -------
        bool
            True when the workload can be answered without bias.
        """
        return True

    @property
    def null_space_dim(self):
        """Dimension of the data directions the mechanism cannot measure (0: full rank)."""
        return 0

    @_contract_docstring
    def check_supports(self, workload_matrix):
        """Raise a ValueError if the workload has the wrong width or cannot be answered.

        <workload parameter>

        Raises
        ------
        ValueError
            If the workload does not have ``n_cells`` columns, or some query lies outside
            the row space of the strategy (:meth:`supports` is False).
        """
        check_workload_width(workload_matrix, self.n_inputs)
        if not self.supports(workload_matrix):
            raise ValueError(
                f"the {self.name!r} strategy cannot answer this workload without bias: the "
                "queries are not in the row space of its strategy matrix. Choose a strategy "
                "built for this workload (e.g. strategy='optimized' with workload=...)."
            )

    def strategy_matrix(self):
        """The exact ``m x n`` matrix ``P(report | type)``, for mechanisms small enough.

        Used by the exact privacy check in the tests and to start the optimizer.

        Returns
        -------
        ndarray of shape (n_outputs, n_cells)
            Column-stochastic: entry ``[o, u]`` is the probability that a user of type ``u``
            sends output ``o``.

        Raises
        ------
        ValueError
            If the mechanism has no finite strategy matrix, or it is too large to form.
        """
        raise ValueError(f"the {self.name!r} mechanism has no finite strategy matrix here.")

    # ------------------------------------------------------------------ serialization
    def to_dict(self):
        """The mechanism's specification, as plain JSON-compatible values.

        Everything a client needs to randomize and a server needs to decode, and nothing
        about any data; :func:`mechanism_from_dict` rebuilds the mechanism from it.

        Returns
        -------
        dict
            ``"version"``, ``"mechanism"`` (the kind), ``"epsilon"`` and the fields of the
            kind (``"n_inputs"`` and ``"params"``, or a strategy's integer ``"table"``).
        """
        return {
            "version": SPEC_VERSION,
            "mechanism": self.kind,
            "epsilon": self.epsilon,
            "n_inputs": self.n_inputs,
            "params": dict(self.params),
        }

    def to_json(self):
        """A JSON string from which ``mechanism_from_json`` rebuilds the same mechanism.

        Returns
        -------
        str
            :meth:`to_dict` written as JSON.
        """
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, spec):
        """Rebuild a mechanism of this class from its :meth:`to_dict` specification.

        The constructor validates every field and, for strategies given as a matrix, checks
        the privacy of the matrix exactly. Specifications from another party should go
        through :func:`mechanism_from_dict`, which also checks the declared sizes and the
        version first.

        Parameters
        ----------
        spec : dict
            The specification, as :meth:`to_dict` returned it.

        Returns
        -------
        Mechanism
            A mechanism equal to the one that wrote ``spec``.
        """
        return cls(spec["n_inputs"], spec["epsilon"], **spec.get("params", {}))

    @classmethod
    def from_json(cls, text):
        """Rebuild from JSON; a ValueError if the JSON describes another kind of mechanism.

        Parameters
        ----------
        text : str
            JSON written by :meth:`to_json`.

        Returns
        -------
        Mechanism
            The mechanism, an instance of this class.

        Raises
        ------
        ValueError
            If the JSON is not a valid specification, or describes another kind of
            mechanism.
        """
        mechanism = mechanism_from_json(text)
        if not isinstance(mechanism, cls):
            raise ValueError(f"the JSON describes a {mechanism.kind!r} mechanism, not "
                             f"{cls.kind!r}.")
        return mechanism

    def fingerprint(self):
        """A value equal for two mechanisms exactly when their reports are interchangeable.

        Returns
        -------
        str
            The specification as JSON with sorted keys (used by ``==`` and ``hash``).
        """
        return json.dumps(self.to_dict(), sort_keys=True)

    def __eq__(self, other):
        return isinstance(other, Mechanism) and self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        params = "".join(f", {key}={value!r}" for key, value in self.params.items())
        return (f"{type(self).__name__}(n_inputs={self.n_inputs}, epsilon={self.epsilon}"
                f"{params})")


class OutputIndexMechanism(Mechanism):
    """Base of mechanisms whose report is one output index in ``[0, n_outputs)`` per user and
    whose statistic counts the users of each output (factorization strategies, Hadamard
    response). Subclasses set ``n_outputs``."""

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
        """Sufficient statistic: how many users sent each output (additive over chunks).

        Parameters
        ----------
        reports : array-like of int of shape (n_reports,)
            One output index per user (:meth:`randomize`).

        Returns
        -------
        ndarray of int64 of shape (n_outputs,)
            The number of reports of each output.

        Raises
        ------
        ValueError
            If a report lies outside ``[0, n_outputs)``.
        """
        return count_outputs(self.check_reports(reports), self.n_outputs)

    def n_reports(self, statistic):
        return report_count(check_output_counts(statistic, self.n_outputs, self.name))

    @_contract_docstring
    def output_answers(self, workload_matrix):
        """``(p, n_outputs)``: the change of each query's answer when one report names each
        output, i.e. ``W V`` for the linear decoder ``V`` (``estimate(y) = V y``).

        This default uses the mechanism's dense ``reconstruction(W)`` (factorization
        strategies); structured mechanisms override it.

        <rows parameter>

        Returns
        -------
        ndarray of shape (n_queries, n_outputs)
            Entry ``[i, o]``: how much one report of output ``o`` adds to query ``i``'s
            answer.

        Raises
        ------
        NotImplementedError
            If the mechanism has neither a dense reconstruction nor an override.
        """
        if not hasattr(self, "reconstruction"):
            raise NotImplementedError(
                f"the {self.name!r} mechanism does not give the answer of each output.")
        return np.atleast_2d(self.reconstruction(check_workload_matrix(workload_matrix,
                                                                       self.n_inputs)))

    @_contract_docstring
    def report_influence(self, workload_matrix):
        """Influence of one report: the extremes of each row of :meth:`output_answers`.

        Every output index is a valid report, so the smallest and largest change one report
        makes to a query's answer are the smallest and largest entries of its row (see
        :meth:`Mechanism.report_influence`).

        <rows parameter>

        Returns
        -------
        ReportInfluence
            Per query, ``low`` and ``high`` (exact) and the output indices that attain them.
        """
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        low, high = np.empty(W.shape[0]), np.empty(W.shape[0])
        low_reports = np.empty(W.shape[0], dtype=np.int64)
        high_reports = np.empty(W.shape[0], dtype=np.int64)
        # Rows in blocks: the (rows, n_outputs) answers stay bounded in memory.
        step = max(1, 2**22 // self.n_outputs)
        for start in range(0, W.shape[0], step):
            rows = slice(start, start + step)
            answers = self.output_answers(W[rows])
            low_reports[rows] = np.argmin(answers, axis=1)
            high_reports[rows] = np.argmax(answers, axis=1)
            low[rows] = np.min(answers, axis=1)
            high[rows] = np.max(answers, axis=1)
        dtype = report_dtype(self.n_outputs)
        return ReportInfluence(low, high, low_reports.astype(dtype), high_reports.astype(dtype))

