"""The stored reports of a collection as :class:`~sklearn_ldp.AggregatedReports`."""

from ...mechanisms._base.statistics import add_counts
from ...reports import AggregatedReports


def aggregate(store, collection, domain=None, workload=None):
    """Aggregate every stored batch of a collection, one batch in memory at a time.

    The batches stream from the database; each is unpacked, aggregated by the collection's
    mechanism (which checks the reports again) and added to the total with overflow checks.
    The result equals ``mechanism.aggregate`` of all the reports at once, exactly.

    Parameters
    ----------
    store : SQLiteStore or PostgresStore
        The collector's store.
    collection : str
        The collection's name.
    domain, workload : optional
        Attached to the result (for labelled answers).

    Returns
    -------
    AggregatedReports
        The statistic of all the stored reports; estimators fit on it.

    Raises
    ------
    ValueError
        No such collection, or stored reports the mechanism refuses (a database edited by
        hand).
    StoreUnavailable
        The database cannot be reached.

    See Also
    --------
    sklearn_ldp.deploy.io.aggregate_files : The same for report files.

    Examples
    --------
    >>> import os, tempfile, numpy as np
    >>> from sklearn_ldp.deploy.collector import SQLiteStore
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> store = SQLiteStore(os.path.join(tempfile.mkdtemp(), "reports.db"))
    >>> survey = store.add_collection("survey", RandomizedResponse(3, 1.0))
    >>> _ = store.put_batch(survey, "a", np.array([0, 2], dtype=np.uint8))
    >>> _ = store.put_batch(survey, "b", np.array([1, 1, 2], dtype=np.uint8))
    >>> aggregate(store, "survey").statistic.tolist()
    [1, 2, 2, 5]
    """
    found = store.collection(collection)
    if found is None:
        raise ValueError(f"the store {store!r} has no collection {collection!r}.")
    mechanism = found.mechanism
    total = mechanism.aggregate(found.template).copy()
    for n_reports, payload in store.iter_batches(collection):
        add_counts(total, mechanism.aggregate(found.unpack(payload, n_reports)), mechanism)
    return AggregatedReports(total, mechanism, domain, workload)
