r"""Total squared error of a strategy on a workload, and the singular value bound.

Shared numerics of the central model, below both :mod:`sklearn_ldp.mechanisms` (the matrix
mechanism's error and lower bound) and :mod:`sklearn_ldp.optimize` (Eigen-Design): in units
where the strategy has L2 sensitivity 1 and the noise variance 1 per measurement,

    err(A) = ||A||_2^2 tr(W^T W (A^T A)^+),   ||A||_2 = max column L2 norm (not spectral),

and no strategy beats Li & Miklau's ``svdb(W) = (sum_i sqrt(lambda_i))^2 / n``. Only ``W^T W``
matters, so every function takes either the workload matrix or its Gram matrix. Public
through :mod:`sklearn_ldp.optimize.eigen_design` (and :mod:`sklearn_ldp.optimize`).

Pure numpy/scipy.
"""

import numpy as np
from scipy import linalg

# Eigenvalues below this fraction of the largest are zero (rounding noise of W^T W).
ZERO_EIGENVALUE_RTOL = 1e-9


class _Gram:
    """``W^T W``, computed on first use (a wide workload's eigen-queries come from its SVD,
    and computing the ``n x n`` Gram matrix would then dominate the cost)."""

    def __init__(self, W, gram_of=None):
        self._W, self._gram_of, self._value = W, gram_of, None

    def get(self):
        if self._value is None:
            self._value = np.asarray(self._gram_of() if callable(self._gram_of)
                                     else self._W.T @ self._W)
        return self._value


def _gram(G):
    return G.get() if isinstance(G, _Gram) else G


def _workload_and_gram(workload, gram):
    """``(W or None, G)`` from a workload (matrix or Workload) or a Gram matrix.

    For a workload ``G`` is a lazy :class:`_Gram` (resolve it with :func:`_gram`).
    """
    if (workload is None) == (gram is None):
        raise ValueError("give exactly one of workload (the p x n query matrix) or gram (W^T W).")
    if workload is not None:
        W = np.asarray(workload.toarray() if hasattr(workload, "toarray") else workload,
                       dtype=float)
        if W.ndim == 1:
            W = W[np.newaxis, :]
        if W.ndim != 2 or not np.all(np.isfinite(W)):
            raise ValueError("the workload must be a finite 2-D matrix (queries x cells).")
        return W, _Gram(W, getattr(workload, "gram", None))
    G = np.asarray(gram, dtype=float)
    if G.ndim != 2 or G.shape[0] != G.shape[1] or not np.all(np.isfinite(G)):
        raise ValueError("gram must be a finite square n x n matrix (W^T W).")
    if not np.allclose(G, G.T, rtol=1e-10, atol=1e-12 * max(np.abs(G).max(), 1.0)):
        raise ValueError("gram must be symmetric (it is W^T W).")
    return None, G


def singular_value_bound(workload=None, gram=None):
    r"""Li & Miklau's singular value bound ``svdb(W) = (sum_i sqrt(lambda_i))^2 / n``.

    ``lambda_i`` are the eigenvalues of ``W^T W`` (squared singular values of ``W``) and
    ``n`` the number of cells: ``||W||_*^2 / n``. No strategy of sensitivity 1 has a total
    squared error ``tr(W^T W (A^T A)^+)`` below it (``tr(A^T A) <= n`` and the minimum of
    ``tr(G X^-1)`` over ``tr X <= n`` is ``(tr G^{1/2})^2 / n``).

    Examples
    --------
    >>> round(singular_value_bound(np.eye(4)), 6)
    4.0
    """
    W, G = _workload_and_gram(workload, gram)
    if W is not None and W.shape[0] < W.shape[1]:
        spectrum = np.linalg.svd(W, compute_uv=False) ** 2
    else:
        spectrum = np.linalg.eigvalsh(_gram(G))
    n = W.shape[1] if W is not None else G.shape[0]
    return float(np.sqrt(_clean_spectrum(spectrum)).sum() ** 2 / n)


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


def _trace_term(X, G):
    """``tr(G X^+)``, refusing a Gram ``G`` with mass outside the range of ``X``."""
    try:
        factor = linalg.cho_factor(X, lower=True, check_finite=False)
        diag = np.diag(factor[0])
        if diag.min() ** 2 > 1e-12 * diag.max() ** 2:
            return float(np.trace(linalg.cho_solve(factor, G, check_finite=False)))
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
