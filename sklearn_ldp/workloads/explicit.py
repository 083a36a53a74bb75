"""Workloads from explicit queries: a query matrix or predicates over the cells."""

import numpy as np
import pandas as pd
import scipy.sparse

from .._validation import describe, refuse_deep_nesting
from ..deploy.limits import check_size
from ..domain import as_domain
from .base import Workload, _builder


@_builder
def from_predicates(domain, predicates):
    """Counting queries defined by predicates over the domain cells.

    {domain_parameter}
    predicates : dict or list
        ``{label: predicate}`` or a list of predicates (labelled by the expression string, or
        ``"q{i}"`` for callables). A predicate is a pandas expression string evaluated with
        ``domain.cells().eval(expr)`` (e.g. ``"age == '<30' and smoker == 'yes'"``), or a
        callable taking the cells DataFrame (it must not modify it) and returning a boolean
        mask of length ``n``.

    Returns
    -------
    Workload
        One 0/1 row per predicate, stored sparse.

    See Also
    --------
    custom : A workload from an explicit matrix.
    sklearn_ldp.domain.Domain.cells : The cells DataFrame the predicates are evaluated on.

    Examples
    --------
    >>> dom = {"age": [20, 40, 60], "smoker": ["no", "yes"]}
    >>> W = from_predicates(dom, {"young smokers": "age < 30 and smoker == 'yes'",
    ...                           "60+": lambda c: c["age"] >= 60})
    >>> W.toarray()
    array([[0., 1., 0., 0., 0., 0.],
           [0., 0., 0., 0., 1., 1.]])
    """
    domain = as_domain(domain)
    if isinstance(predicates, dict):
        items = [(str(label), pred) for label, pred in predicates.items()]
    elif isinstance(predicates, (str, bytes)) or callable(predicates) \
            or not hasattr(predicates, "__iter__") \
            or (isinstance(predicates, np.ndarray) and predicates.ndim == 0):
        raise ValueError(f"predicates must be a dict label -> predicate or a list of "
                         f"predicates, got {describe(predicates)}.")
    else:
        items = [
            (pred if isinstance(pred, str) else f"q{i}", pred)
            for i, pred in enumerate(predicates)
        ]
    if not items:
        raise ValueError("from_predicates: no predicates were given.")
    n = domain.size
    # One dense mask of n cells per predicate: refused before the cells are enumerated.
    check_size(len(items) * n, f"the entries of the masks ({len(items)} predicates x {n} "
               "cells)", "max_matrix_entries", "from_predicates")
    cells = domain.cells()
    rows = []
    for label, pred in items:
        if isinstance(pred, str):
            try:
                mask = cells.eval(pred)
            except Exception as exc:
                raise ValueError(
                    f"Predicate {label!r} could not be evaluated over the domain columns "
                    f"{domain.columns!r}: {type(exc).__name__}: {exc}"
                ) from exc
        elif callable(pred):
            try:
                mask = pred(cells)
            except Exception as exc:
                raise ValueError(
                    f"Predicate {label!r} raised {type(exc).__name__}: {exc}"
                ) from exc
        else:
            raise ValueError(
                f"Predicate {label!r} must be an expression string or a callable, got "
                f"{type(pred).__name__}."
            )
        if isinstance(mask, (pd.Series, pd.Index)) and pd.api.types.is_bool_dtype(mask.dtype):
            if mask.isna().any():
                raise ValueError(
                    f"Predicate {label!r} gave missing values instead of True/False."
                )
            mask = mask.to_numpy(dtype=bool)
        try:
            mask = np.asarray(mask)
        except (TypeError, ValueError):
            mask = None
        if mask is None or mask.dtype != bool or mask.shape != (n,):
            got = "an unreadable result" if mask is None else (
                f"dtype {mask.dtype}, shape {mask.shape}"
            )
            raise ValueError(
                f"Predicate {label!r} must give a boolean mask of length {n} (one per cell), "
                f"got {got}."
            )
        rows.append(scipy.sparse.csr_array(mask[np.newaxis, :].astype(float)))
    return Workload(
        scipy.sparse.vstack(rows, format="csr"), labels=[label for label, _ in items],
        domain=domain, name="predicates",
    )


@refuse_deep_nesting
def custom(matrix, domain=None, labels=None):
    """A workload from an explicit query matrix (dense, or scipy sparse kept sparse).

    Parameters
    ----------
    matrix : array-like or scipy sparse matrix of shape (p, n)
        One row per query, one column per domain cell (flat-index order). Must be finite.
    domain : Domain, mapping or int, optional
        The domain the queries range over; ``n`` must equal its number of cells.
    labels : sequence of str, optional
        One unique label per query. Default ``"q0", ..., "q{p-1}"``.

    Returns
    -------
    Workload
        ``Workload(matrix, labels, domain, name="custom")``.

    See Also
    --------
    from_predicates : 0/1 queries defined by predicates over the cells.
    as_workload : Coerce a matrix or a workload to a Workload.

    Examples
    --------
    >>> custom([[1, 0, 1]], labels=["odd cells"]).labels.tolist()
    ['odd cells']
    """
    if domain is not None:
        domain = as_domain(domain)
    return Workload(matrix, labels=labels, domain=domain, name="custom")
