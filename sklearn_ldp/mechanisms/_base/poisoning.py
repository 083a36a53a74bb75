"""Poisoning: how far one malicious report moves an answer, against one honest liar.

A server cannot tell a crafted report from an honest one as long as it lies in the
mechanism's valid-report set (:meth:`~.base.Mechanism.report_validity`). Two adversaries:

* a **malicious** client sends any valid report ``r``. Every estimate here is linear in the
  statistic, ``x_hat = L s``, and the statistic is additive over reports, so adding ``r``
  changes the answer to a query ``w`` by ``w . L s(r)`` (``s(r)`` the report's own statistic,
  with the count of reports it adds: the ``q N`` terms of the frequency oracles, the known
  totals of the range mechanisms), whatever the other reports are. Its influence is the
  largest ``|w . L s(r)|`` over the valid reports, which each mechanism computes from its
  structure (:meth:`~.base.Mechanism.report_influence`, vectorized over the queries: no
  enumeration of users or reports);
* an **honest liar** picks a type ``u`` of its choice and randomizes honestly. The estimate
  is unbiased, so adding it changes the expected answer by ``w_u``: its influence is
  ``max_u |w_u|`` (1 for counting queries). Its report is random: what it can force is the
  expectation, while the malicious client forces the extreme every time, so ``m`` colluding
  clients move an answer by ``m`` times the malicious influence, against about ``m`` for
  liars (plus noise that averages out).

The ratio of the two is the price of local privacy against poisoning (Cheu, Smith and
Ullman, "Manipulation attacks in local differential privacy", 2021: it grows like
``1 / epsilon`` and with the domain for these mechanisms). The answers are counts; for
answers normalized by the number of reports ``N`` the change is ``(influence + |answer| /
N) / (N + 1)`` at most.

For the local hashing oracles the valid reports are ``2^64`` seeds times ``g`` buckets; the
influence reported is then an upper bound (every subset of cells as the support set),
flagged ``exact=False``.

Pure numpy; no scikit-learn here.
"""

import numpy as np

from .mechanism import check_workload_matrix

__all__ = ["honest_liar_influence", "max_malicious_influence", "poisoning_row"]


def max_malicious_influence(mechanism, workload_matrix):
    """Per query, the largest change of its unbiased answer that one valid report makes.

    Parameters
    ----------
    mechanism : Mechanism
    workload_matrix : array of shape (p, n) or (n,)
        The queries (rows), over the mechanism's ``n`` cells.

    Returns
    -------
    influence : ndarray of shape (p,)
        ``max_r |w . L s(r)|`` over the valid reports ``r`` (module docstring), in counts.
    exact : bool
        False when the value is an upper bound (local hashing).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> influence, exact = max_malicious_influence(RandomizedResponse(4, 1.0), np.eye(4))
    >>> influence.round(3).tolist(), exact
    ([2.746, 2.746, 2.746, 2.746], True)
    """
    W = check_workload_matrix(workload_matrix, mechanism.n_inputs)
    influence = mechanism.report_influence(W)
    return influence.largest, bool(influence.exact)


def honest_liar_influence(mechanism, workload_matrix):
    """Per query, the largest change of its *expected* answer that one honest liar makes.

    The liar chooses its type ``u`` and randomizes honestly; the estimate is unbiased on the
    workloads the mechanism supports (checked), so the expected answer moves by ``w_u``.

    Returns
    -------
    ndarray of shape (p,)
        ``max_u |w_u|``.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> honest_liar_influence(RandomizedResponse(3, 1.0), np.tril(np.ones((3, 3)))).tolist()
    [1.0, 1.0, 1.0]
    """
    W = check_workload_matrix(workload_matrix, mechanism.n_inputs)
    mechanism.check_supports(W)
    return np.abs(W).max(axis=1)


def poisoning_row(mechanism, workload_matrix):
    """One row of the poisoning table for ``mechanism`` on a workload.

    Returns
    -------
    dict
        ``malicious`` (the largest influence of one malicious report over the queries),
        ``honest`` (of one honest liar), ``ratio`` (the largest per-query ratio of the two,
        over the queries an honest liar can move) and ``exact`` (False: ``malicious`` is an
        upper bound).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import OptimizedUnaryEncoding
    >>> row = poisoning_row(OptimizedUnaryEncoding(64, 1.0), np.eye(64))
    >>> round(row["malicious"], 2), row["honest"], round(row["ratio"], 2), row["exact"]
    (4.28, 1.0, 4.28, True)
    """
    malicious, exact = max_malicious_influence(mechanism, workload_matrix)
    honest = honest_liar_influence(mechanism, workload_matrix)
    movable = honest > 0
    ratio = float(np.max(malicious[movable] / honest[movable])) if movable.any() else np.inf
    return {"malicious": float(malicious.max()), "honest": float(honest.max()),
            "ratio": ratio, "exact": exact}
