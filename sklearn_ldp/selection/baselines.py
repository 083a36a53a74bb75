"""The registry of local strategy names and the closed-form (baseline) mechanisms they build.

Below :mod:`sklearn_ldp.selection.local` (``"optimized"``, ``"auto"``) and
:mod:`sklearn_ldp.selection.multi_attribute` (per-column oracles), which both build baselines
here: the frequency oracles, the range mechanisms, the factorization baselines and Bassily's
workload randomizers, with the per-user variances that score them. The names are listed in
:mod:`sklearn_ldp.selection.local`'s docstring.
"""

import math
import numbers

import numpy as np

from .._validation import describe, did_you_mean
from ..mechanisms._base.bits import n_packed_bytes
from ..mechanisms._base.mechanism import mechanism_class
from ..mechanisms._base.rows import empty_reports
from ..mechanisms.factorization.mechanism import FactorizationMechanism
from ..mechanisms.marginals.base import MARGINAL_STRATEGIES, build_marginal_mechanism
from ..mechanisms.marginals.fourier import fourier_strategy
from ..mechanisms.multi_attribute.columns import column_part
from ..mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
from ..mechanisms.oracles.hadamard_workload import workload_hadamard
from ..mechanisms.ranges.hierarchical import hierarchical_strategy
from ..workloads import as_workload, histogram

ORACLES = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
           "subset_selection")
# Histogram encoding (SHE, THE): named strategies, never "auto" candidates (SHE has twice
# OUE's variance in 8x its bytes; THE at its best threshold is symmetric unary encoding).
HISTOGRAM_ENCODINGS = ("she", "the")
RANGE_MECHANISMS = ("hierarchical", "haar")
# The marginal strategies whose randomizer is scored (and can be built) as one matrix.
MARGINAL_MATRIX_BASELINES = ("marg_ps_matrix", "marg_ht_matrix")
FACTORIZATION_BASELINES = ("hierarchical_matrix", "fourier") + MARGINAL_MATRIX_BASELINES
BASELINES = ORACLES + RANGE_MECHANISMS + FACTORIZATION_BASELINES
WORKLOAD_RANDOMIZERS = ("gaussian", "gaussian_pure")
STRATEGIES = (BASELINES + HISTOGRAM_ENCODINGS + WORKLOAD_RANDOMIZERS + MARGINAL_STRATEGIES
              + ("optimized", "auto"))

# oracle="auto" of the "hierarchical" tree: OUE (least variance, one bit per node of the
# level) up to this many cells, HRR (one integer per report) beyond.
AUTO_OUE_MAX_CELLS = 4096
# Bassily's randomizers privatize a dense column of the workload (p entries per user).
WORKLOAD_RANDOMIZER_MAX_ENTRIES = 2**24
# Strategies that scale to any domain, named in the errors of those that do not.
SCALABLE_ADVICE = ("for histograms 'olh', 'hadamard' or 'hrr'; for ranges, prefixes and "
                   "quantiles 'hierarchical' or 'haar'; for marginals the marginal strategies "
                   "('inp_ht') with MarginalEstimator; or strategy='auto'")

# "auto" and "optimized" leave out candidates whose reports take more bytes a user than this
# (max_report_bytes): one report then fits in one network packet (an Ethernet or mobile MTU
# of 1280-1500 bytes, with room for headers), which keeps unary encodings and subset selection
# (a bit per cell) to domains of at most 8192 cells unless a larger limit is asked for.
DEFAULT_MAX_REPORT_BYTES = 1024
# Reports that are a packed bitmap of one bit per cell (the layout of bits.n_packed_bytes):
# their size is known without sampling one (subset selection's sampler prepares tables that
# took 4 s at 2^20 cells).
PACKED_BITMAP_ORACLES = ("rappor", "oue", "subset_selection")

# A baseline strategy matrix may start the optimizer when it has at most this many outputs
# per cell (unary encoding and subset selection have exponentially many).
MAX_START_OUTPUTS_PER_CELL = 16


def check_strategy_name(name):
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}.{did_you_mean(name, STRATEGIES)} Choose one "
                         f"of {', '.join(STRATEGIES)}.")
    return name


def marginal_order(shape, max_order=None, columns=None):
    """The ``max_order`` of a marginal strategy over ``shape``, checked (default ``min(2, d)``).

    ``columns`` (the attributes' names) make the errors name the column at fault.

    Examples
    --------
    >>> marginal_order((2, 3, 2)), marginal_order((4,))
    (2, 1)
    """
    names = list(columns) if columns is not None else [f"at position {i}"
                                                      for i in range(len(shape))]
    for name, size in zip(names, shape, strict=True):
        if size < 2:
            label = name if columns is None else repr(name)
            raise ValueError(f"column {label} has a single category: a marginal strategy "
                             "needs at least 2 categories per column (drop constant columns).")
    if max_order is None:
        return min(2, len(shape))
    if (isinstance(max_order, bool) or not isinstance(max_order, numbers.Integral)
            or not 1 <= max_order <= len(shape)):
        raise ValueError(f"max_order must be an integer between 1 and the number of columns "
                         f"({len(shape)}), got {max_order!r}.")
    return int(max_order)


def _fourier_for(shape, epsilon, workload, max_order):
    """Fourier strategy of the given order, or of the least order that supports the workload."""
    if max_order is None:
        max_order = least_marginal_order(shape, epsilon, workload)
    return fourier_strategy(shape, epsilon, max_order), {"max_order": max_order}


def _column_bases(shape):
    """Per column, an orthonormal basis of its functions (rows) whose first row is constant."""
    bases = []
    for size in shape:
        spanning = np.eye(size)
        spanning[:, 0] = 1.0
        basis = np.linalg.qr(spanning)[0].T  # row 0 is +-1/sqrt(size): the constant
        bases.append(basis)
    return bases


def least_marginal_order(shape, epsilon, workload):
    """The least ``k`` such that the workload only asks about marginals over ``<= k`` columns.

    The Fourier coefficients of order ``<= k`` span exactly the functions of at most ``k``
    columns, as do the cells of every ``k``-way marginal table, so the least Fourier order
    that supports the workload is the marginal order of the marginal strategies that answer
    it (``len(shape)`` for a workload that needs the full table, e.g. the histogram, or
    for no workload: None).

    Found from the Gram ``G = W^T W`` in a product basis of the columns' functions (each
    column's first basis vector constant; a basis vector's order is the number of columns
    where it is not): ``W`` lies in the span of the order ``<= k`` vectors iff ``G`` vanishes
    on the others, tested as :meth:`FactorizationMechanism.supports_gram` does (Frobenius
    norm of ``G`` on them at most ``1e-8`` of ``G``'s). One pass costs ``O(n^2 sum(shape))``
    for ``n`` cells, instead of a Fourier strategy and its null space per order.

    Parameters
    ----------
    shape : tuple of int
        Number of categories of each column.
    epsilon : float
        Kept for the callers' signature; it does not change the answer.
    workload : Workload, array-like or None
        The queries; None: the whole table.

    Returns
    -------
    int
        The least marginal order, between 1 and ``len(shape)``.

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> dom = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}
    >>> least_marginal_order((2, 3, 2), 1.0, workloads.marginals(dom, k=2))
    2
    >>> least_marginal_order((2, 3, 2), 1.0, workloads.histogram(dom))
    3
    """
    shape = tuple(int(size) for size in shape)
    if workload is None or len(shape) < 2:
        return len(shape)
    n = int(np.prod(shape))
    gram = coerce_workload(workload, None).gram()
    gram = np.asarray(gram.toarray() if hasattr(gram, "toarray") else gram, dtype=float)
    # Columns of G B^T: G applied to every product basis vector, one column axis at a time.
    transformed = gram.reshape((n,) + shape)
    for axis, basis in enumerate(_column_bases(shape), start=1):
        transformed = np.moveaxis(np.tensordot(transformed, basis, axes=([axis], [1])),
                                  -1, axis)
    mass = np.einsum("i...,i...->...", transformed, transformed)  # squared column norms
    orders = sum(index > 0 for index in np.ix_(*[np.arange(size) for size in shape]))
    by_order = np.bincount(np.ravel(orders), weights=np.ravel(mass), minlength=len(shape) + 1)
    above = np.cumsum(by_order[::-1])[::-1]  # above[k]: mass of the orders >= k
    tolerance = (1e-8 * max(np.linalg.norm(gram), 1.0)) ** 2
    for order in range(1, len(shape)):
        if above[order + 1] <= tolerance:
            return order
    return len(shape)


def _marginal_matrix(name, shape, epsilon, workload, max_order):
    """``(Q, params)`` of ``marg_ps_matrix`` / ``marg_ht_matrix``: the randomizer of the
    marginal strategy ``marg_ps`` / ``marg_ht`` of order ``max_order`` (default the least
    order that answers the workload), as one column-stochastic matrix."""
    if max_order is None:
        max_order = least_marginal_order(shape, epsilon, workload)
    order = marginal_order(shape, max_order)
    kind = name[: -len("_matrix")]
    Q = build_marginal_mechanism(kind, shape, epsilon, order).strategy_matrix()
    return Q, {"max_order": order}


def coerce_workload(workload, workload_matrix):
    """The workload from the new ``workload`` or the former ``workload_matrix`` argument."""
    if workload is None and workload_matrix is not None:
        workload = workload_matrix
    return None if workload is None else as_workload(workload)


def baseline_mechanism(name, shape, epsilon, workload=None, branching=4, max_order=None,
                       oracle="auto", workload_matrix=None):
    """The named baseline strategy over a domain of the given shape, as a mechanism.

    ``branching`` and ``oracle`` (the frequency oracle of each level, or ``"auto"``: OUE up
    to ``AUTO_OUE_MAX_CELLS`` cells, HRR beyond) configure ``"hierarchical"``;
    ``branching`` also ``"hierarchical_matrix"``. ``workload`` (a Workload or a matrix;
    ``workload_matrix`` is its former name) chooses the order of ``"fourier"``,
    ``"marg_ps_matrix"`` and ``"marg_ht_matrix"`` (the least that answers it), unless
    ``max_order`` is given, and the layout of ``"hadamard"`` (the least worst case on it).
    """
    workload = coerce_workload(workload, workload_matrix)
    n = int(np.prod(shape))
    if name == "hadamard" and workload is not None:  # the layout best for the workload
        return workload_hadamard(n, epsilon, workload.gram())
    if name in ORACLES or name in HISTOGRAM_ENCODINGS:
        return mechanism_class(name)(n, epsilon)
    if name == "hierarchical":
        if oracle == "auto":
            oracle = "oue" if n <= AUTO_OUE_MAX_CELLS else "hrr"
        return mechanism_class("hierarchical")(n, epsilon, branching=branching, oracle=oracle)
    if name == "haar":
        return mechanism_class("haar")(n, epsilon)
    if name == "hierarchical_matrix":
        Q, params = hierarchical_strategy(n, epsilon, branching), {"branching": branching}
    elif name == "fourier":
        Q, params = _fourier_for(shape, epsilon, workload, max_order)
    elif name in MARGINAL_MATRIX_BASELINES:
        Q, params = _marginal_matrix(name, shape, epsilon, workload, max_order)
    else:
        raise ValueError(f"{name!r} is not a baseline strategy; choose one of {BASELINES}.")
    return FactorizationMechanism(Q, epsilon, name, params)


def workload_randomizer(name, n, epsilon, workload, delta=None):
    """Bassily's Gaussian randomizers, which privatize the workload's column of each user."""
    if workload is None:
        raise ValueError(f"the {name!r} strategy privatizes the workload's columns: pass a "
                         "workload.")
    workload = as_workload(workload)
    if workload.n_queries * workload.n_cells > WORKLOAD_RANDOMIZER_MAX_ENTRIES:
        raise ValueError(
            f"the {name!r} strategy privatizes a dense column of the workload for every user "
            f"and holds the {workload.n_queries} x {workload.n_cells} workload densely "
            f"(limit {WORKLOAD_RANDOMIZER_MAX_ENTRIES} entries). Use fewer queries, or a "
            f"strategy that scales: {SCALABLE_ADVICE}.")
    matrix = workload.toarray()
    if name == "gaussian":
        if delta is None:
            raise ValueError("the 'gaussian' strategy is (epsilon, delta)-LDP: pass delta, a "
                             "probability in (0, 1) such as 1e-6.")
        return mechanism_class("gaussian")(n, epsilon, delta, matrix)
    return mechanism_class("gaussian_pure")(n, epsilon, matrix)


def _matrix_rows(mechanism):
    """Rows of the mechanism's strategy matrix, known without building it (None: unknown,
    or no finite matrix)."""
    rows = getattr(mechanism, "n_outputs", None)
    if rows is not None:
        return int(rows)
    n = mechanism.n_inputs
    if mechanism.name == "randomized_response":
        return n
    if mechanism.name == "subset_selection":
        return math.comb(n, mechanism.subset_size)
    if mechanism.name in ("rappor", "oue"):
        return 2**n
    return None  # e.g. a tree of OUE levels: measured 6 s to build and drop at n = 256


def start_matrix(mechanism):
    """The mechanism's strategy matrix if it can start the optimizer, else None."""
    if mechanism.null_space_dim != 0:
        return None  # the optimizer needs Q^T D^-1 Q invertible
    rows = _matrix_rows(mechanism)
    if rows is None or rows > MAX_START_OUTPUTS_PER_CELL * mechanism.n_inputs:
        return None  # too many outputs: do not even build it
    try:
        Q = mechanism.strategy_matrix()
    except ValueError:
        return None
    return Q if Q.shape[0] <= MAX_START_OUTPUTS_PER_CELL * Q.shape[1] else None


def variances(mechanism, gram):
    """``(worst, average)`` per-user variance of the workload, inf if it cannot be answered."""
    if not mechanism.supports_gram(gram):
        return np.inf, np.inf
    z = mechanism.per_user_variance(gram)
    return float(z.max()), float(z.mean())


def worst_case_variance(mechanism, gram):
    """Worst-case per-user variance of the workload, or inf if the mechanism cannot answer it.

    ``gram`` is a Gram operator, a dense ``W^T W``, or None (the histogram).
    """
    if gram is None:
        gram = histogram(mechanism.n_inputs).gram()
    return variances(mechanism, gram)[0]


def check_max_report_bytes(max_report_bytes):
    """``max_report_bytes`` checked: a positive integer, or None (no limit).

    Examples
    --------
    >>> check_max_report_bytes(64), check_max_report_bytes(None)
    (64, None)
    """
    if max_report_bytes is None:
        return None
    if isinstance(max_report_bytes, bool) or not isinstance(max_report_bytes, numbers.Integral):
        raise ValueError(f"max_report_bytes must be a positive integer (bytes a user) or None, "
                         f"got {describe(max_report_bytes)}.")
    if max_report_bytes <= 0:
        raise ValueError(f"max_report_bytes must be a positive integer (bytes a user), got "
                         f"{describe(max_report_bytes)}.")
    return int(max_report_bytes)


def bitmap_report_bytes(name, n):
    """Bytes a user of the oracle ``name`` over ``n`` cells if its report is a packed bitmap
    (``PACKED_BITMAP_ORACLES``: ``ceil(n / 8)``), else None; known before building it.

    Examples
    --------
    >>> bitmap_report_bytes("oue", 1000), bitmap_report_bytes("olh", 1000)
    (125, None)
    """
    return n_packed_bytes(n) if name in PACKED_BITMAP_ORACLES else None


def report_bytes(mechanism):
    """Bytes one user's report takes: the row ``transform`` produces and the files store.

    The width times the item size of the mechanism's report rows
    (:func:`~sklearn_ldp.mechanisms._base.rows.empty_reports`, learned from one report), or,
    for the oracles whose report is a packed bitmap of one bit per cell, ``ceil(n / 8)``
    without sampling one.

    Parameters
    ----------
    mechanism : Mechanism
        Any local mechanism.

    Returns
    -------
    int
        Bytes per user.

    Examples
    --------
    >>> report_bytes(baseline_mechanism("olh", (2**20,), 1.0))
    16
    >>> report_bytes(baseline_mechanism("subset_selection", (2**20,), 1.0))
    131072
    """
    if isinstance(mechanism, MultiAttributeMechanism):
        # SPL, SMP, RS+FD: the row of the record part the encoder reports them in.
        part = column_part([str(j) for j in range(mechanism.n_attributes)], mechanism)
        return int(np.dtype(part.report_dtype).itemsize * part.width)
    known = bitmap_report_bytes(mechanism.kind, mechanism.n_inputs)
    if known is not None:
        return known
    empty = empty_reports(mechanism)
    return int(empty.dtype.itemsize * math.prod(empty.shape[1:]))
