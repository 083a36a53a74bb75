"""Choose how several categorical attributes share one user's budget, for their histograms.

When the workload is every attribute's histogram (the one-way marginals of ``d >= 2``
categorical columns), ``strategy="auto"`` also scores the protocols of
:mod:`sklearn_ldp.mechanisms.multi_attribute.mechanisms`: SPL (``eps / d`` per attribute), SMP (one
sampled attribute with the whole ``eps``) and RS+FD (one sampled attribute plus fake reports
of the others), each with every frequency oracle it takes, and the per-column oracles of a
record reported column by column (each column through its own frequency oracle at its share
of ``eps``). Every candidate is scored by the same number as the joint-domain candidates: the
worst case over the data of the total variance of the workload's count answers, per user
(``N`` users: ``N`` times it). RS+FD is scored with ``neighbourhood="record"`` (standard
LDP: ``eps`` is the guarantee of the whole record), as the other candidates are.

Pure numpy, no scikit-learn: the selection layer.
"""

import time

import numpy as np

from ..mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
from ..workloads import Identity, Kron, Stack, Total, histogram
from .baselines import baseline_mechanism, report_bytes, variances

# Every (protocol, oracle) pair that is a candidate, named "protocol/oracle".
PROTOCOL_CANDIDATES = (("spl", "grr"), ("spl", "oue"), ("smp", "grr"), ("smp", "oue"),
                       ("rsfd", "grr"), ("rsfd", "oue_z"), ("rsfd", "oue_r"))
PER_COLUMN = "per_column"


def candidate_name(protocol, oracle):
    """The name of a protocol candidate in ``selection_``: ``"protocol/oracle"``.

    Parameters
    ----------
    protocol : {"spl", "smp", "rsfd"}
        The multi-attribute protocol.
    oracle : str
        The frequency oracle inside.

    Returns
    -------
    str
        ``"protocol/oracle"``.

    See Also
    --------
    select_attribute_protocol : Scores the candidates.

    Examples
    --------
    >>> candidate_name("rsfd", "oue_z")
    'rsfd/oue_z'
    """
    return f"{protocol}/{oracle}"


def _one_way_block(block, shape):
    """The column whose histogram a workload block is (None: not such a block)."""
    n_columns = len(shape)
    if not isinstance(block, Kron) or len(block.factors) != n_columns \
            or [factor.shape[1] for factor in block.factors] != list(shape):
        return None
    identities = [j for j, factor in enumerate(block.factors) if type(factor) is Identity]
    totals = [j for j, factor in enumerate(block.factors) if type(factor) is Total]
    if len(identities) != 1 or len(totals) != n_columns - 1:
        return None
    return identities[0]


def is_one_way_marginals(workload, shape):
    """Whether ``workload`` is the histogram of every column of ``shape``, once each.

    Recognized from the workload's structure (as :func:`sklearn_ldp.workloads.marginals`
    builds it with ``k=1``, or with ``attributes`` naming every column once, in any order,
    with unit weights), never by forming its matrix.

    Parameters
    ----------
    workload : Workload
        The queries.
    shape : tuple of int
        Number of categories of each column (at least two columns).

    Returns
    -------
    bool
        True for the one-way marginals of every column.

    See Also
    --------
    sklearn_ldp.workloads.marginals : Builds them.

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> dom = {"a": [0, 1], "b": [0, 1, 2]}
    >>> is_one_way_marginals(workloads.marginals(dom, k=1), (2, 3))
    True
    >>> is_one_way_marginals(workloads.marginals(dom, k=2), (2, 3))
    False
    """
    shape = tuple(int(size) for size in shape)
    if len(shape) < 2 or not isinstance(workload, Stack):
        return False
    if not np.all(np.asarray(workload.weights) == 1.0):
        return False
    columns = [_one_way_block(block, shape) for block in workload.blocks]
    return None not in columns and sorted(columns) == list(range(len(shape)))


def _row(worst, average, seconds, reason="", size=np.nan):
    return {"worst_case": float(worst), "average_case": float(average), "report_bytes": size,
            "seconds": seconds, "status": "scored", "reason": reason}


def per_column_variance(oracles, shape, epsilons):
    """``(worst, average)`` per-user total variance of the histograms of columns reported
    each through its own frequency oracle.

    Parameters
    ----------
    oracles : sequence of str
        The frequency oracle of each column (names of :mod:`sklearn_ldp.selection.baselines`).
    shape : tuple of int
        Number of categories of each column.
    epsilons : sequence of float
        Each column's share of the budget.

    Returns
    -------
    worst, average : float
        Summed over the columns (their reports are independent): the worst case over the
        data, and for values spread uniformly.

    See Also
    --------
    select_attribute_protocol : Compares it with SPL, SMP and RS+FD.

    Examples
    --------
    >>> worst, average = per_column_variance(["randomized_response", "oue"], (2, 10),
    ...                                      [0.5, 0.5])
    >>> bool(worst >= average > 0)
    True
    """
    worst = average = 0.0
    for name, size, share in zip(oracles, shape, epsilons, strict=True):
        mechanism = baseline_mechanism(name, (int(size),), float(share))
        column_worst, column_average = variances(mechanism, histogram(int(size)).gram())
        worst += column_worst
        average += column_average
    return worst, average


def select_attribute_protocol(shape, epsilon, per_column=None, per_column_epsilons=None,
                              candidates=PROTOCOL_CANDIDATES, max_report_bytes=None,
                              per_column_bytes=None):
    """Score SPL, SMP and RS+FD (and optionally per-column oracles) on every column's
    histogram; the one with the least worst-case error.

    Parameters
    ----------
    shape : tuple of int
        Number of categories of each column (``>= 2`` each).
    epsilon : float
        The budget of the whole record (record-level LDP).
    per_column : sequence of str or None, default=None
        The frequency oracle each column would take if reported on its own (the
        ``"per_column"`` candidate), or None to leave that candidate out.
    per_column_epsilons : sequence of float or None, default=None
        Each column's share of ``epsilon`` for ``per_column`` (default equal shares).
    candidates : sequence of (str, str), default=PROTOCOL_CANDIDATES
        The ``(protocol, oracle)`` pairs scored.
    max_report_bytes : int or None, default=None
        Candidates whose report row takes more bytes a user are listed as skipped (not
        chosen); None: no limit. A ValueError names the smallest size when none fits.
    per_column_bytes : int or None, default=None
        Bytes a user of the ``"per_column"`` candidate (the columns' rows side by side);
        None: unknown (NaN, never skipped for its size).

    Returns
    -------
    chosen : str
        ``"per_column"`` or ``"protocol/oracle"``: the least worst case, ties going to the
        earlier candidate (``"per_column"`` first).
    rows : dict
        Name -> ``worst_case``, ``average_case`` (per-user total variance of the counts; NaN
        when skipped), ``report_bytes``, ``seconds``, ``status`` ("chosen", "scored" or
        "skipped") and ``reason``.
    mechanisms : dict
        ``"protocol/oracle"`` -> its
        :class:`~sklearn_ldp.mechanisms.multi_attribute.mechanisms.MultiAttributeMechanism`.

    See Also
    --------
    sklearn_ldp.mechanisms.multi_attribute.mechanisms.MultiAttributeMechanism.histogram_variance :
        The error of a protocol.
    per_column_variance : The error of the per-column oracles.

    References
    ----------
    .. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Random sampling plus
       fake data: multidimensional frequency estimates with local differential privacy",
       CIKM 2021.
    .. [2] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols
       for frequency estimation", USENIX Security 2017.

    Examples
    --------
    >>> chosen, rows, _ = select_attribute_protocol((2, 3, 5, 8, 10, 15, 20, 30, 40, 50), 1.0)
    >>> chosen
    'smp/oue'
    >>> bool(rows["smp/oue"]["worst_case"] < rows["spl/grr"]["worst_case"])
    True
    """
    shape = tuple(int(size) for size in shape)
    rows, mechanisms = {}, {}
    if per_column is not None:
        start = time.perf_counter()
        shares = per_column_epsilons
        if shares is None:
            shares = [epsilon / len(shape)] * len(shape)
        worst, average = per_column_variance(per_column, shape, shares)
        rows[PER_COLUMN] = _row(worst, average, time.perf_counter() - start,
                                "each column through its own oracle: " + ", ".join(per_column),
                                np.nan if per_column_bytes is None else int(per_column_bytes))
    for protocol, oracle in candidates:
        start = time.perf_counter()
        mechanism = MultiAttributeMechanism(shape, epsilon, protocol=protocol, oracle=oracle)
        # Both cases at once: uniform values are the worst case (histogram_variance).
        variance = mechanism.histogram_variance()
        name = candidate_name(protocol, oracle)
        rows[name] = _row(variance, variance, time.perf_counter() - start,
                          size=report_bytes(mechanism))
        mechanisms[name] = mechanism
    if max_report_bytes is not None:
        for row in rows.values():
            if row["report_bytes"] > max_report_bytes:  # NaN (unknown) is never over
                row.update(worst_case=np.nan, average_case=np.nan, status="skipped",
                           reason=f"reports of {row['report_bytes']} bytes a user, over "
                                  f"max_report_bytes={max_report_bytes}")
    fitting = [key for key, row in rows.items() if row["status"] == "scored"]
    if not fitting:
        size, name = min((row["report_bytes"], key) for key, row in rows.items())
        raise ValueError(f"max_report_bytes={max_report_bytes} leaves no way to report these "
                         f"columns; the smallest reports take {size} bytes a user ({name!r}): "
                         f"pass max_report_bytes={size} or more.")
    chosen = min(fitting, key=lambda key: rows[key]["worst_case"])  # first of equals
    rows[chosen]["status"] = "chosen"
    return chosen, rows, mechanisms
