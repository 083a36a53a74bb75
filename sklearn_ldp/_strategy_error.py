r"""Total squared error of a strategy on a workload, and the singular value bound.

Shared numerics of the central model, below both :mod:`sklearn_ldp.mechanisms` (the matrix
mechanism's error and lower bound) and :mod:`sklearn_ldp.optimize` (Eigen-Design): in units
where the strategy has L2 sensitivity 1 and the noise variance 1 per measurement,

    err(A) = ||A||_2^2 tr(W^T W (A^T A)^+),   ||A||_2 = max column L2 norm (not spectral),

and no strategy beats Li & Miklau's ``svdb(W) = (sum_i sqrt(lambda_i))^2 / n``. Only ``W^T W``
matters, so every function takes the workload (a query matrix or a structured
:class:`~sklearn_ldp.workloads.Workload`) or its Gram matrix (a dense array or a
:class:`~sklearn_ldp._gram.Gram` operator). A structured workload is never written down as a
``p x n`` matrix here (all ranges over 1024 cells are 524800 queries): its Gram operator is,
as a dense ``n x n`` array when a computation needs one, and the prefix and all-range Grams
have closed-form eigenvalues and eigenvectors (the discrete sine bases of the second
difference operator), so their spectrum and eigen-queries cost ``O(n)`` and ``O(n^2)``
instead of an ``O(n^3)`` eigendecomposition. Public through
:mod:`sklearn_ldp.optimize.eigen_design` (and :mod:`sklearn_ldp.optimize`).

Pure numpy/scipy.
"""

import numpy as np
from scipy import linalg

from ._gram import (
    DenseGram,
    Gram,
    IdentityGram,
    IntervalGram,
    KronGram,
    MinMaxGram,
    OnesGram,
    ScaledGram,
    WorkloadGram,
)
from ._validation import MAX_DENSE_ENTRIES

# Eigenvalues below this fraction of the largest are zero (rounding noise of W^T W).
ZERO_EIGENVALUE_RTOL = 1e-9
# Sign convention of an eigen-query: its first entry of at least this fraction of its largest
# magnitude is positive. Any fixed rule makes the strategy, hence the noise each cell gets
# from a given seed, independent of the route (dense eigh, SVD, closed form); a fraction well
# below 1 keeps rounding from moving the chosen entry between two near-equal extremes.
SIGN_ENTRY_FRACTION = 0.75
# A strategy supports a workload given only by its Gram when ||W N||_F^2 = tr(N^T G N) (N: the
# null space of A^T A) is at most this fraction of ||W||_F^2 = tr(G). Looser than a per-query
# residual of 1e-8 squared: tr(N^T G N) carries rounding of order eps n ||G||_2 where
# ||W N||_F^2 itself would be exactly zero; a workload outside the row space leaks O(1).
GRAM_SUPPORT_RTOL = 1e-10
# Columns of the identity pushed through a Gram operator at once when it has no dense form
# of its own (bounds the ``p x chunk`` answers a generic workload produces on the way).
_GRAM_COLUMN_CHUNK = 256


def is_structured_workload(obj):
    """Whether ``obj`` is a :class:`~sklearn_ldp.workloads.Workload` (duck-typed) rather than
    a query matrix or a Gram."""
    return not isinstance(obj, Gram) and all(
        hasattr(obj, name) for name in ("gram", "row_blocks", "query_stats"))


def query_matrix(workload):
    """A query matrix (dense, scipy sparse or 1-D for one query) as a dense 2-D array."""
    if hasattr(workload, "toarray"):
        workload = workload.toarray()
    W = np.asarray(workload, dtype=float)
    if W.ndim == 1:
        W = W[np.newaxis, :]
    if W.ndim != 2 or not np.all(np.isfinite(W)):
        raise ValueError("the workload must be a finite 2-D matrix (queries x cells).")
    return W


def workload_gram(workload):
    """``W^T W`` as a :class:`~sklearn_ldp._gram.Gram` operator, from a Workload (its
    ``gram()``), a Gram operator (itself) or a query matrix (``p x n``, dense or sparse).

    A square array is a query matrix here, never a Gram: use :func:`as_gram_argument` for
    arguments documented as Gram matrices.
    """
    if isinstance(workload, Gram):
        return workload
    if is_structured_workload(workload):
        return workload.gram()
    W = query_matrix(workload)
    return DenseGram(W.T @ W)


def as_gram_argument(gram):
    """A ``gram=`` argument (Gram operator, Workload, or dense square array) as an operator."""
    if isinstance(gram, Gram):
        return gram
    if is_structured_workload(gram):
        return gram.gram()
    G = np.asarray(gram, dtype=float)
    if G.ndim != 2 or G.shape[0] != G.shape[1] or not np.all(np.isfinite(G)):
        raise ValueError("gram must be a finite square n x n matrix (W^T W).")
    if not np.allclose(G, G.T, rtol=1e-10, atol=1e-12 * max(np.abs(G).max(), 1.0)):
        raise ValueError("gram must be symmetric (it is W^T W).")
    return DenseGram(G)


# ---------------------------------------------------------------------- dense Grams
def _interval_gram_matrix(n, lo, hi):
    """Dense ``G[x, y]`` = number of intervals ``[lo, hi]`` holding both cells, in ``O(n^2 +
    p)``: with ``H[a, b]`` the intervals from ``a`` to ``b``, ``G[x, y] = sum_{a <= x, b >= y}
    H[a, b]`` for ``x <= y`` (a 2-D cumulative sum), mirrored below the diagonal."""
    H = np.bincount(lo * n + hi, minlength=n * n).reshape(n, n).astype(float)
    upper = np.cumsum(np.cumsum(H, axis=0)[:, ::-1], axis=1)[:, ::-1]
    return np.triu(upper) + np.triu(upper, 1).T


def dense_gram_matrix(gram):
    """The dense ``n x n`` array of a Gram operator (refused past ``MAX_DENSE_ENTRIES``).

    Closed-form Grams build themselves; interval Grams, and Grams known only through their
    workload's products when that workload lists intervals, come from a 2-D cumulative sum
    (``O(n^2 + p)``); other workload products run on chunks of identity columns, so no
    ``p x n`` array appears.
    """
    if isinstance(gram, np.ndarray):
        return np.asarray(gram, dtype=float)
    n = gram.n
    if n * n > MAX_DENSE_ENTRIES:
        return gram.toarray()  # refused there, with the message naming the size
    if isinstance(gram, IntervalGram):  # its own products would pass through p x n
        return _interval_gram_matrix(n, gram.lo, gram.hi)
    if not isinstance(gram, WorkloadGram):
        return np.asarray(gram.toarray(), dtype=float)
    workload = gram.workload
    try:
        bounds = workload.intervals()
    except ValueError:  # too many intervals to list
        bounds = None
    if bounds is not None:
        return _interval_gram_matrix(n, *bounds)
    dense = np.empty((n, n))
    for start in range(0, n, _GRAM_COLUMN_CHUNK):
        stop = min(start + _GRAM_COLUMN_CHUNK, n)
        columns = np.zeros((n, stop - start))
        columns[np.arange(start, stop), np.arange(stop - start)] = 1.0
        dense[:, start:stop] = gram.matvec(columns)
    return dense


# ---------------------------------------------------------------------- closed forms
def _minmax_kind(gram):
    """``"prefix"`` or ``"all_range"`` for the closed-form Grams of those workloads, else
    None (checked on the stored ``f``, ``g`` rather than trusted from a name)."""
    if not isinstance(gram, MinMaxGram):
        return None
    n = gram.n
    cells = np.arange(n, dtype=float)
    if np.array_equal(gram.g, n - cells):
        if np.array_equal(gram.f, np.ones(n)):
            return "prefix"
        if np.array_equal(gram.f, cells + 1.0):
            return "all_range"
    return None


def _unscaled(gram):
    """``(scale, base)`` with ``gram = scale * base`` through nested :class:`ScaledGram`."""
    scale = 1.0
    while isinstance(gram, ScaledGram):
        scale *= gram.scale
        gram = gram.gram
    return scale, gram


def closed_form_eigensystem(gram, top=None):
    """``(eigenvalues descending, eigenvectors as rows)`` of the prefix and all-range Grams
    (possibly scaled) in ``O(n^2)`` (``O(top n)`` for the ``top`` largest only), else None.

    All ranges: ``G[i, j] = (min + 1)(n - max) = (n + 1) T^-1`` with ``T = tridiag(-1, 2,
    -1)``, whose eigenvectors are the DST-I basis ``sqrt(2 / (n + 1)) sin(pi k a / (n + 1))``
    (``a = i + 1``) with eigenvalues ``4 sin^2(pi k / (2 (n + 1)))``. Prefix:
    ``G[i, j] = min(a_i, a_j)`` with ``a = n - i``, the covariance of a random walk, whose
    inverse is ``T`` with a last diagonal entry of 1; its eigenvectors are
    ``2 / sqrt(2 n + 1) sin(pi (2 k - 1) a / (2 n + 1))`` with eigenvalues
    ``1 / (4 sin^2(pi (2 k - 1) / (2 (2 n + 1))))``. The spectra are simple, so these are
    the eigen-queries up to sign. Sine arguments are reduced modulo a period in integers
    first, which keeps them exact at any ``n``.
    """
    scale, base = _unscaled(gram)
    kind = _minmax_kind(base)
    if kind is None:
        return None
    n = base.n
    k = np.arange(1, (n if top is None else min(int(top), n)) + 1, dtype=np.int64)
    if kind == "all_range":
        period = 2 * (n + 1)  # sin(pi m / (n + 1)) has period 2 (n + 1) in m
        values = (n + 1) / (4.0 * np.sin(np.pi * k / period) ** 2)
        phase = np.outer(k, np.arange(1, n + 1, dtype=np.int64)) % period
        vectors = np.sqrt(2.0 / (n + 1)) * np.sin(np.pi * phase / (n + 1))
    else:
        period = 2 * (2 * n + 1)
        values = 1.0 / (4.0 * np.sin(np.pi * (2 * k - 1) / period) ** 2)
        phase = np.outer(2 * k - 1, n - np.arange(n, dtype=np.int64)) % period
        vectors = (2.0 / np.sqrt(2 * n + 1)) * np.sin(np.pi * phase / (2 * n + 1))
    return scale * values, vectors  # both formulas are decreasing in k


def closed_form_spectrum(gram):
    """All eigenvalues of a structured Gram (any order) without an ``n x n`` matrix, or None.

    Identity, ones, prefix and all-range Grams have closed forms; a scaled Gram scales them
    and a Kronecker product multiplies its factors' spectra (each factor small, so a factor
    without a closed form is decomposed densely).
    """
    scale, base = _unscaled(gram)
    if isinstance(base, IdentityGram):
        return scale * np.full(base.n, base.scale)
    if isinstance(base, OnesGram):
        values = np.zeros(base.n)
        values[0] = base.scale * base.n
        return scale * values
    closed = closed_form_eigensystem(base)
    if closed is not None:
        return scale * closed[0]
    if isinstance(base, KronGram):
        result = np.ones(1)
        for factor in base.factors:
            values = closed_form_spectrum(factor)
            if values is None:
                values = np.linalg.eigvalsh(dense_gram_matrix(factor))
            result = np.kron(result, values)
        return scale * result
    return None


def gram_leak(null, gram):
    """``tr(N^T G N) / tr(G)``: the share of the workload's squared norm in the span of the
    columns of ``null`` (0 when the workload lies in their orthogonal complement)."""
    G = workload_gram(gram) if not isinstance(gram, np.ndarray) else DenseGram(gram)
    trace = G.trace()
    return float(np.sum(null * G.matvec(null))) / trace if trace > 0 else 0.0


def canonical_sign_flips(rows):
    """``+-1`` per row: multiplying by it makes the row's first entry of at least
    ``SIGN_ENTRY_FRACTION`` of its largest magnitude positive (eigenvectors are defined up
    to sign)."""
    magnitude = np.abs(rows)
    chosen = np.argmax(magnitude >= SIGN_ENTRY_FRACTION * magnitude.max(axis=1, keepdims=True),
                       axis=1)
    return np.where(rows[np.arange(rows.shape[0]), chosen] < 0, -1.0, 1.0)


# ---------------------------------------------------------------------- workload and Gram
class _Gram:
    """``W^T W`` in the forms the central numerics need, each computed on first use.

    ``operator`` is the Gram operator (closed forms), ``get()`` the dense ``n x n`` array:
    the query matrix's product when the query matrix is at hand (legacy matrix input, or a
    workload with fewer queries than cells), else the operator's dense form.
    """

    def __init__(self, n, operator=None, dense=None, W=None):
        self.n = int(n)
        self.operator, self._value, self._W = operator, dense, W

    def get(self):
        if self._value is None:
            if self._W is not None:
                self._value = self._W.T @ self._W
            else:
                self._value = dense_gram_matrix(self.operator)
        return self._value

    def spectrum(self):
        """All eigenvalues (any order; closed form when the operator has one)."""
        if self.operator is not None:
            values = closed_form_spectrum(self.operator)
            if values is not None:
                return values
        return np.linalg.eigvalsh(self.get())

    def eigensystem(self):
        """``(eigenvalues descending, eigenvectors as rows)``; closed form when known."""
        if self.operator is not None:
            closed = closed_form_eigensystem(self.operator)
            if closed is not None:
                return closed
        values, columns = np.linalg.eigh(self.get())
        return values[::-1], columns[:, ::-1].T


def _gram(G):
    return G.get() if isinstance(G, _Gram) else G


def _workload_and_gram(workload, gram):
    """``(W or None, G)`` from a workload (query matrix or Workload) or a Gram (dense array,
    operator or Workload); ``G`` is a lazy :class:`_Gram` (resolve it with :func:`_gram`).

    ``W`` is the dense query matrix: the matrix given, or the matrix of a structured workload
    with fewer queries than cells (smaller than its Gram: its SVD gives the eigen-queries in
    ``O(p^2 n)``); None otherwise, so that all-range-sized workloads stay operators.
    """
    if (workload is None) == (gram is None):
        raise ValueError("give exactly one of workload (the p x n query matrix) or gram (W^T W).")
    if isinstance(gram, _Gram):
        return None, gram
    if workload is None:
        operator = as_gram_argument(gram)
        dense = operator.toarray() if isinstance(operator, DenseGram) else None
        return None, _Gram(operator.n, operator=operator, dense=dense)
    if is_structured_workload(workload):
        p, n = workload.shape
        W = workload.toarray() if p < n and p * n <= MAX_DENSE_ENTRIES else None
        return W, _Gram(n, operator=workload.gram(), W=W)
    W = query_matrix(workload)
    return W, _Gram(W.shape[1], W=W)


def singular_value_bound(workload=None, gram=None):
    r"""Li & Miklau's singular value bound ``svdb(W) = (sum_i sqrt(lambda_i))^2 / n``.

    ``lambda_i`` are the eigenvalues of ``W^T W`` (squared singular values of ``W``) and
    ``n`` the number of cells: ``||W||_*^2 / n``. No strategy of sensitivity 1 has a total
    squared error ``tr(W^T W (A^T A)^+)`` below it (``tr(A^T A) <= n`` and the minimum of
    ``tr(G X^-1)`` over ``tr X <= n`` is ``(tr G^{1/2})^2 / n``). Structured Grams (prefix,
    all-range, identity, Kronecker products) give their eigenvalues in closed form.

    Examples
    --------
    >>> round(singular_value_bound(np.eye(4)), 6)
    4.0
    """
    W, G = _workload_and_gram(workload, gram)
    if W is not None and W.shape[0] < W.shape[1]:
        spectrum = np.linalg.svd(W, compute_uv=False) ** 2
    else:
        spectrum = G.spectrum()
    return float(np.sqrt(_clean_spectrum(spectrum)).sum() ** 2 / G.n)


def _clean_spectrum(values):
    """Eigenvalues of ``W^T W`` with rounding noise around zero set to exactly zero.

    Without this, ``sqrt(1e-15)`` terms of the zero eigenvalues would bias the bound upward.
    """
    values = np.asarray(values, dtype=float)
    return np.where(values > ZERO_EIGENVALUE_RTOL * max(values.max(), 0.0), values, 0.0)


def strategy_error(strategy, workload=None, gram=None):
    """``||A||_2^2 tr(W^T W (A^T A)^+)``: the total squared error per unit noise multiplier.

    Raises a ValueError if the strategy does not support the workload (some query is not in
    its row space), since the error is then unbounded.

    Examples
    --------
    >>> strategy_error(np.eye(3), workload=np.ones((1, 3)))
    3.0
    """
    _, G = _workload_and_gram(workload, gram)
    A = np.asarray(strategy, dtype=float)
    sensitivity2 = float(np.max(np.sum(A * A, axis=0)))
    return sensitivity2 * _trace_term(A.T @ A, _gram(G))


def _full_inverse(factor):
    """``X^-1`` (full symmetric) from a lower Cholesky factor: ``2 n^3 / 3`` flops, a third
    of a solve against ``n`` right-hand sides."""
    inverse, info = linalg.lapack.dpotri(factor, lower=1)
    if info != 0:
        raise linalg.LinAlgError(f"dpotri failed (info {info}).")
    return np.tril(inverse) + np.tril(inverse, -1).T


def _trace_term(X, G):
    """``tr(G X^+)``, refusing a Gram ``G`` with mass outside the range of ``X``."""
    try:
        factor = linalg.cholesky(X, lower=True, check_finite=False)
        diag = np.diag(factor)
        if diag.min() ** 2 > 1e-12 * diag.max() ** 2:
            return float(np.vdot(G, _full_inverse(factor)))
    except linalg.LinAlgError:
        pass
    values, vectors = np.linalg.eigh(X)
    keep = values > 1e-10 * values.max()
    null = vectors[:, ~keep]
    if null.shape[1] and np.trace(null.T @ G @ null) > 1e-8 * max(np.trace(G), 1e-300):
        raise ValueError(
            "the strategy does not support the workload: some queries are not in the row "
            "space of the strategy, so their error is unbounded."
        )
    basis = vectors[:, keep]
    return float(np.sum((basis.T @ G @ basis).diagonal() / values[keep]))
