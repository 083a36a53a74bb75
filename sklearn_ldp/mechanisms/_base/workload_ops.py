"""Workloads and Gram operators as the mechanisms' variance methods see them.

Duck-typed structured workloads (:func:`is_workload`), their row blocks and widths, dense
fallbacks bounded by ``DENSE_GRAM_CELLS`` and ``ROW_FALLBACK_ENTRIES``, and the checks of a
Gram operator against a mechanism's domain: shared by
:meth:`~sklearn_ldp.mechanisms._base.mechanism.Mechanism.per_user_variance` and the
structured forms of the frequency oracles and range mechanisms.
"""

import numpy as np

from ..._gram import DenseGram, IntervalGram, as_gram

# Range mechanisms without a structured Gram fall back to the dense Gram up to this many
# cells, and to the workload's rows up to this many query-cell entries.
DENSE_GRAM_CELLS = 4096
ROW_FALLBACK_ENTRIES = 2**24


def is_workload(obj):
    """Whether ``obj`` is a structured workload (duck-typed: it has ``row_blocks``,
    ``query_stats`` and ``gram``), as opposed to a dense or sparse query matrix."""
    return all(hasattr(obj, name) for name in ("row_blocks", "query_stats", "gram"))


def workload_width(workload):
    """Number of columns (cells) of a workload or a query matrix."""
    if is_workload(workload):
        return workload.shape[1]
    return np.shape(workload)[-1]


def check_workload_width(workload, n_inputs):
    """Raise a ValueError unless the workload (or query matrix) has ``n_inputs`` columns."""
    width = workload_width(workload)
    if width != n_inputs:
        raise ValueError(f"the workload has {width} columns but the mechanism covers "
                         f"{n_inputs} cells.")


def _dense_rows(workload):
    """A query matrix (dense or scipy sparse, 1-D for one query) as a dense 2-D array."""
    if hasattr(workload, "toarray"):
        workload = workload.toarray()
    return np.atleast_2d(np.asarray(workload, dtype=float))


def workload_row_blocks(workload):
    """``(rows, dense block)`` over consecutive row slices of a workload (its
    ``row_blocks()``), or one block holding all of a query matrix."""
    if is_workload(workload):
        yield from workload.row_blocks()
        return
    W = _dense_rows(workload)
    yield slice(0, W.shape[0]), W


def workload_n_queries(workload):
    """Number of queries (rows) of a workload or a query matrix."""
    if is_workload(workload):
        return workload.shape[0]
    return _dense_rows(workload).shape[0]


def dense_workload(workload):
    """The dense ``p x n`` matrix of a workload (refused past its size guard) or of a query
    matrix."""
    if is_workload(workload):
        return workload.toarray()
    return _dense_rows(workload)


def check_gram(gram, n_inputs):
    """``gram`` (a Gram operator, a workload or a dense square array) as a
    :class:`~sklearn_ldp._gram.Gram` over ``n_inputs`` cells, or a ValueError."""
    gram = as_gram(gram)
    if gram.n != n_inputs:
        raise ValueError(f"the Gram matrix must be {n_inputs} x {n_inputs} (one row and column "
                         f"per cell), got shape {gram.shape}.")
    return gram


def dense_gram(gram, n_inputs):
    """``gram`` as a dense ``n x n`` array (for mechanisms whose ``n`` is small by
    construction; a Gram operator refuses past ``MAX_DENSE_ENTRIES`` entries)."""
    if isinstance(gram, np.ndarray):
        dense = np.asarray(gram, dtype=float)
        if dense.shape != (n_inputs, n_inputs):
            raise ValueError(f"the Gram matrix must be {n_inputs} x {n_inputs} (one row and "
                             f"column per cell), got shape {dense.shape}.")
        return dense
    return check_gram(gram, n_inputs).toarray()


def gram_with_blocks(gram, widths):
    """A Gram whose ``block_sums`` and ``block_row_sums`` at every width in ``widths`` are
    exact and cheap: ``gram`` itself when its structure provides them, an
    :class:`~sklearn_ldp._gram.IntervalGram` when it is the product Gram of a workload of
    0/1 intervals (chosen ranges), its dense form up to ``DENSE_GRAM_CELLS`` cells, else None
    (the caller then works from the workload's rows or refuses)."""
    if all(gram.supports_blocks(width) for width in widths):
        return gram
    workload = getattr(gram, "workload", None)
    if workload is not None and is_workload(workload):
        try:
            bounds = workload.intervals()
        except ValueError:  # too many intervals to list
            bounds = None
        if bounds is not None:
            return IntervalGram(gram.n, *bounds)
    if gram.n <= DENSE_GRAM_CELLS:
        return DenseGram(gram.toarray())
    return None


def centered_square_extremes(workload):
    """Per query ``w``, with ``d_u = (w_u - mean(w))^2`` over the cells ``u``: the arrays
    ``(largest, smallest, mean)`` of ``d``, from ``query_stats()`` in ``O(p)``.

    ``d`` is convex in ``w_u``, so its largest value is at the row's smallest or largest entry.
    Its smallest value needs the entry nearest the mean, known only when the row takes just
    its two extreme values (0/1 rows, +-1 parities, ...): entries in ``[a, b]`` with sum ``s``
    have ``||w||^2 <= (a + b) s - n a b``, with equality exactly when every entry is ``a`` or
    ``b``. Elsewhere ``smallest`` is NaN.
    """
    if is_workload(workload):
        stats = workload.query_stats()
        sq_norms, sums, low, high = stats.sq_norms, stats.sums, stats.mins, stats.maxs
        n = workload.shape[1]
    else:
        W = _dense_rows(workload)
        sq_norms, sums = np.einsum("ij,ij->i", W, W), W.sum(axis=1)
        low, high, n = W.min(axis=1), W.max(axis=1), W.shape[1]
    mean = sums / n
    to_low, to_high = (low - mean) ** 2, (high - mean) ** 2
    largest = np.maximum(to_low, to_high)
    average = np.maximum(sq_norms - sums * mean, 0.0) / n
    chord = (low + high) * sums - n * low * high
    scale = n * np.maximum(low * low, high * high) + np.abs(sq_norms)
    two_valued = np.abs(chord - sq_norms) <= 1e-12 * scale
    smallest = np.where(two_valued, np.minimum(to_low, to_high), np.nan)
    return largest, smallest, average
