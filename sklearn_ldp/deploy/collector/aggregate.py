"""The stored reports of a collection as what the estimators read."""

import numpy as np

from ...mechanisms._base.statistics import add_counts
from ...mechanisms.heavy_hitters.prefix import PrefixHeavyHitters
from ...reports import AggregatedReports


def aggregate(store, collection, domain=None, workload=None):
    """Aggregate every stored batch of a collection, one batch in memory at a time.

    The batches stream from the database; each is unpacked, checked again and aggregated by
    the collection's mechanism, and added to the total with overflow checks. The result
    equals the mechanism's aggregation of all the reports at once (float statistics up to
    the order of the sums).

    Parameters
    ----------
    store : SQLiteStore or PostgresStore
        The collector's store.
    collection : str
        The collection's name.
    domain, workload : optional
        Attached to the result (for labelled answers); registered mechanisms only.

    Returns
    -------
    AggregatedReports or ndarray
        Registered mechanisms and ``"columns"`` records: :class:`AggregatedReports`, which
        the estimators fit on. Math-layer kinds (``store.collection(name).mechanism`` is
        the mechanism): the statistic of its ``aggregate`` (read by ``estimate``,
        ``estimate_mean``, ``estimate_means``, ``estimate_counts`` or
        ``estimate_distribution``), except ``prefix_heavy_hitters``, whose rounds are not
        additive: every stored report, the ``(N, 3)`` uint64 array ``identify`` reads
        (24 bytes a report).

    Raises
    ------
    ValueError
        No such collection, domain or workload given for a math-layer kind, or stored
        reports the mechanism refuses (a database edited by hand).
    StoreUnavailable
        The database cannot be reached.

    See Also
    --------
    sklearn_ldp.deploy.io.aggregate_files : The same for report files.
    sklearn_ldp.deploy.collect.stack_client_reports : Reads the math-layer reports.

    Examples
    --------
    >>> import json, os, tempfile, numpy as np
    >>> from sklearn_ldp.deploy.collector import SQLiteStore
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> store = SQLiteStore(os.path.join(tempfile.mkdtemp(), "reports.db"))
    >>> survey = store.add_collection("survey", RandomizedResponse(3, 1.0))
    >>> _ = store.put_batch(survey, "a", np.array([0, 2], dtype=np.uint8))
    >>> _ = store.put_batch(survey, "b", np.array([1, 1, 2], dtype=np.uint8))
    >>> aggregate(store, "survey").statistic.tolist()
    [1, 2, 2, 5]

    A math-layer kind (one bit per device, the mean of a bounded number):

    >>> from sklearn_ldp.mechanisms.numeric.means import DuchiMechanism
    >>> duchi = DuchiMechanism(1.0, bounds=(0, 10))
    >>> scores = store.add_collection("scores", json.dumps(duchi.to_dict()))
    >>> _ = store.put_batch(scores, "a", scores.check([1, 0, 1]))
    >>> statistic = aggregate(store, "scores")  # [n, sum y, sum y^2]
    >>> round(float(duchi.estimate_mean(statistic)), 3)
    8.607
    """
    found = store.collection(collection)
    if found is None:
        raise ValueError(f"the store {store!r} has no collection {collection!r}.")
    mechanism = found.mechanism
    if found.math_layer:
        if domain is not None or workload is not None:
            raise ValueError(f"collection {collection!r} is of the math-layer kind "
                             f"{mechanism.kind!r}: its statistic carries no domain or "
                             "workload; leave both None.")
        return _aggregate_math_layer(store, found)
    total = mechanism.aggregate(found.template).copy()
    for n_reports, payload in store.iter_batches(collection):
        add_counts(total, mechanism.aggregate(found.unpack(payload, n_reports)), mechanism)
    return AggregatedReports(total, mechanism, domain, workload)


def _aggregate_math_layer(store, found):
    """The summed statistic of a math-layer collection (PEM: its stacked reports)."""
    mechanism = found.mechanism
    empty = found.unpack(b"[]", 0)
    if isinstance(mechanism, PrefixHeavyHitters):
        # identify chooses each round's candidates from the previous round: it needs the
        # reports themselves, not a sum.
        parts = [empty] + [found.unpack(payload, n_reports)
                           for n_reports, payload in store.iter_batches(found.name)]
        return np.concatenate(parts)
    total = np.array(mechanism.aggregate(empty), copy=True)
    for n_reports, payload in store.iter_batches(found.name):
        add_counts(total, mechanism.aggregate(found.unpack(payload, n_reports)), mechanism)
    return total
