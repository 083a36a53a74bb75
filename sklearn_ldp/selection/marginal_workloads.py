"""The marginal strategies as candidates of ``"auto"`` on workloads of marginals, at any size.

A workload of marginals (:func:`sklearn_ldp.workloads.marginals`: one block per attribute
set ``A``, the Kronecker product of the identity on the columns of ``A`` and a row of ones on
the others, with a weight ``w_A``) is answered by the marginal strategies of
:mod:`sklearn_ldp.mechanisms.marginals` of order ``k = max |A|``, decoded by
``MarginalEstimator`` into one table per marginal. Their error on the workload has a closed
form built from the mechanisms' own per-marginal variances, so it costs one small table per
marginal, never a matrix over the joint domain:

* the per-user variance of the workload's count answers for data ``x`` is
  ``sum_A w_A^2 N sum_cells Var(fraction)`` (``N`` users; the count of a cell is ``N`` times
  its fraction, and ``N Var(count) / N^2`` is ``N Var(fraction)``);
* ``average_case``: users spread uniformly; ``worst_case``: the larger of that and every user
  in one cell, the convention of ``MarginalEstimator.expected_error_``
  (:meth:`~sklearn_ldp.mechanisms.marginals.base.MarginalMechanism.total_variance`; every
  user in one cell is one cell of every marginal at once, so the sums over the marginals of
  the two extremes are the two extremes of the workload).

``inp_ps`` and ``inp_rr`` decode through their frequency oracle summed over each marginal's
cells, a linear decoder, so their scores equal the dense scoring of ``randomized_response``
and ``rappor`` on the same workload (tested). The sampled strategies (``inp_ht``,
``marg_rr``, ``marg_ps``, ``marg_ht``) normalize each coefficient or set by the users who
sampled it; their variance is first order in the users per coefficient or set (module
docstring of :mod:`sklearn_ldp.mechanisms.marginals.base`), checked against simulation in the
mechanisms' tests. ``inp_em`` is not a candidate (its EM tables are biased).

Pure numpy, no scikit-learn: the selection layer.
"""

import math
import time

import numpy as np

from ..mechanisms.marginals.base import build_marginal_mechanism
from ..workloads import Identity, Kron, Stack, Total

# The marginal strategies scored on a workload of marginals, in the order they are listed
# (and win ties): the thesis's recommended InpHT first.
MARGINAL_CANDIDATES = ("inp_ht", "marg_ht", "marg_ps", "marg_rr", "inp_ps", "inp_rr")
# Users at which the per-user variances are read from the mechanisms' formulas (first order
# in 1/N, so N times the variance does not depend on N; _glue uses the same reference).
REFERENCE_USERS = 2**20
# inp_ps and inp_rr randomize the whole record through a frequency oracle over the joint
# domain: their error grows with it (and scoring them holds a vector over its cells), so they
# are scored up to this many cells, as the joint-domain candidates of "auto" on marginals.
WHOLE_RECORD = ("inp_ps", "inp_rr")
WHOLE_RECORD_MAX_CELLS = 2**16


def _block_attributes(block, shape):
    """The sorted attribute set of a marginal block (None: not a marginal block)."""
    if isinstance(block, Identity) and type(block) is Identity and len(shape) == 1 \
            and block.n_cells == shape[0]:
        return (0,)
    if not isinstance(block, Kron) or len(block.factors) != len(shape) \
            or [factor.shape[1] for factor in block.factors] != list(shape):
        return None
    attributes = []
    for position, factor in enumerate(block.factors):
        if type(factor) is Identity:
            attributes.append(position)
        elif type(factor) is not Total:
            return None
    return tuple(attributes) if attributes else None


def marginal_sets(workload, shape):
    """The marginals a workload asks for, with their weights (None: not only marginals).

    Recognized from the workload's structure (as :func:`sklearn_ldp.workloads.marginals`
    builds it, one block or a weighted stack of them), never by forming its matrix. The
    total (a block of ones only) is not a marginal.

    Parameters
    ----------
    workload : Workload
        The queries.
    shape : tuple of int
        Number of categories of each column.

    Returns
    -------
    list of (tuple of int, float) or None
        ``(attributes, weight)`` per block: the sorted column positions of the marginal and
        the weight of its rows.

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> dom = {"a": [0, 1], "b": [0, 1, 2], "c": [0, 1]}
    >>> marginal_sets(workloads.marginals(dom, k=2), (2, 3, 2))
    [((0, 1), 1.0), ((0, 2), 1.0), ((1, 2), 1.0)]
    >>> marginal_sets(workloads.prefix(12), (2, 3, 2)) is None
    True
    """
    shape = tuple(int(size) for size in shape)
    if isinstance(workload, Stack):
        blocks, weights = workload.blocks, [float(w) for w in workload.weights]
    else:
        blocks, weights = [workload], [1.0]
    sets = [_block_attributes(block, shape) for block in blocks]
    if None in sets:
        return None
    return list(zip(sets, weights, strict=True))


def marginal_workload_variance(mechanism, sets):
    """``(worst, average)`` per-user variance of a workload of marginals, answered by a
    marginal strategy through its own decoder (what ``MarginalEstimator`` returns with
    ``postprocess="none"``).

    Parameters
    ----------
    mechanism : MarginalMechanism
        A marginal strategy whose ``max_order`` covers every set.
    sets : list of (tuple of int, float)
        The marginals and their weights (:func:`marginal_sets`).

    Returns
    -------
    worst, average : float
        ``sum_A w_A^2 N sum_cells Var`` for every user in one cell (the larger of that and
        uniform data) and for users spread uniformly; see the module docstring.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism
    >>> mechanism = build_marginal_mechanism("marg_ps", (2, 3, 2), 1.0, 2)
    >>> worst, average = marginal_workload_variance(mechanism, [((0, 1), 1.0), ((1, 2), 1.0)])
    >>> bool(worst >= average > 0)
    True
    """
    uniform = point = 0.0
    for attributes, weight in sets:
        table_worst, table_uniform, table_point = mechanism.total_variance(attributes,
                                                                           REFERENCE_USERS)
        uniform += weight**2 * table_uniform
        point += weight**2 * table_point
    return REFERENCE_USERS * max(uniform, point), REFERENCE_USERS * uniform


def score_marginal_strategies(shape, epsilon, sets, report_bytes, max_report_bytes=None,
                              candidates=MARGINAL_CANDIDATES):
    """Score the marginal strategies on a workload of marginals, each in milliseconds.

    Parameters
    ----------
    shape : tuple of int
        Number of categories of each column (each at least 2).
    epsilon : float
        The privacy budget.
    sets : list of (tuple of int, float)
        The workload's marginals and weights (:func:`marginal_sets`); the strategies are
        built with ``max_order`` the largest set.
    report_bytes : callable
        Bytes a user of a mechanism's reports
        (:func:`sklearn_ldp.selection.baselines.report_bytes`).
    max_report_bytes : int or None, default=None
        Candidates over this many bytes a user are skipped (listed with their size).
    candidates : sequence of str, default=MARGINAL_CANDIDATES
        The strategies scored.

    Returns
    -------
    rows : dict
        Name -> ``worst_case``, ``average_case``, ``report_bytes``, ``lower_bound`` (NaN),
        ``seconds``, ``status`` ("scored" or "skipped") and ``reason``, as the other
        candidates of :func:`~sklearn_ldp.selection.local.build_mechanism`.
    mechanisms : dict
        Name -> the mechanism, for the scored candidates.
    oversized : dict
        Name -> the mechanism, for those over ``max_report_bytes``. ``inp_ps`` and ``inp_rr``
        are skipped past ``WHOLE_RECORD_MAX_CELLS`` cells (listed with the reason).

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> from sklearn_ldp.selection.baselines import report_bytes
    >>> dom = {"a": list(range(6)), "b": list(range(9)), "c": list(range(12))}
    >>> sets = marginal_sets(workloads.marginals(dom, k=2), (6, 9, 12))
    >>> rows, _, _ = score_marginal_strategies((6, 9, 12), 1.0, sets, report_bytes)
    >>> min(rows, key=lambda name: rows[name]["worst_case"])
    'marg_rr'
    """
    order = max(len(attributes) for attributes, _ in sets)
    cells = math.prod(int(size) for size in shape)
    rows, mechanisms, oversized = {}, {}, {}
    for name in candidates:
        start = time.perf_counter()
        if name in WHOLE_RECORD and cells > WHOLE_RECORD_MAX_CELLS:
            rows[name] = {"worst_case": np.nan, "average_case": np.nan, "report_bytes": np.nan,
                          "lower_bound": np.nan, "seconds": 0.0, "status": "skipped",
                          "reason": f"randomizes the whole record over {cells} cells: scored "
                                    f"up to {WHOLE_RECORD_MAX_CELLS} cells"}
            continue
        mechanism = build_marginal_mechanism(name, shape, epsilon, order)
        size = report_bytes(mechanism)
        reason = (f"reports of {size} bytes a user, over max_report_bytes={max_report_bytes}"
                  if max_report_bytes is not None and size > max_report_bytes else "")
        if reason:
            worst = average = np.nan
            oversized[name] = mechanism
        else:
            worst, average = marginal_workload_variance(mechanism, sets)
            mechanisms[name] = mechanism
            reason = (f"marginal strategy of order {order}, decoded by MarginalEstimator "
                      f"(error of its unbiased tables)")
        rows[name] = {"worst_case": worst, "average_case": average, "report_bytes": size,
                      "lower_bound": np.nan, "seconds": time.perf_counter() - start,
                      "status": "skipped" if name in oversized else "scored",
                      "reason": reason}
    return rows, mechanisms, oversized
