"""Post-processing of estimated data vectors (biased, lower variance; pure numpy/scipy).

Only the raw estimate (``"none"``) is unbiased; every method here trades bias for variance
and is free in privacy terms (post-processing of private output):

* ``"clip"``: negative counts set to zero (the total then exceeds the number of users).
* ``"norm_sub"`` (Wang et al., NDSS 2020): negatives set to zero and a common amount
  subtracted from the positive counts until they sum to the number of users. Its fixed point
  ``max(x - delta, 0)`` with ``sum = N`` is exactly the Euclidean projection onto the scaled
  simplex, so it is computed by :func:`simplex_projection` (``"simplex"`` is the same method
  under the name used by Bassily and by MMMM20).
* ``"wnnls"``: non-negative least squares in the workload's metric (MMMM20, appendix A).
* ``"hull"`` (Bassily 2019): the answers, as fractions, projected onto the symmetric convex
  hull ``W B_1`` of the workload's columns, where the true answers lie. Never farther from
  the truth than the unbiased answers, and much closer when there are few users per query.
"""

import numpy as np
from scipy import optimize

from .mechanisms.gaussian import project_onto_hull
from .optimize.projection import project_bounded_simplex

POSTPROCESS = ("none", "clip", "norm_sub", "simplex", "wnnls", "hull")


def simplex_projection(x_hat, total):
    """Euclidean projection of ``x_hat`` onto ``{x >= 0, sum(x) = total}``.

    Examples
    --------
    >>> simplex_projection(np.array([3.0, -1.0, 0.5]), 2.0).round(2)
    array([2., 0., 0.])
    """
    n = x_hat.shape[0]
    fraction = project_bounded_simplex((x_hat / total)[:, None], np.zeros(n), np.ones(n))
    return total * fraction[:, 0]


def wnnls(x_hat, gram):
    """Workload non-negative least squares (MMMM20 appendix A).

    ``argmin_{x >= 0} ||W x - W x_hat||^2``, written with the Gram matrix as
    ``x^T G x - 2 (G x_hat)^T x`` and solved by L-BFGS-B with non-negativity bounds.
    """
    target = gram @ x_hat
    scale = max(float(np.abs(x_hat).sum()), 1.0)

    def objective(x):
        gx = gram @ x
        return (x @ gx - 2 * target @ x) / scale, 2 * (gx - target) / scale

    start = np.clip(x_hat, 0, None)
    result = optimize.minimize(
        objective, start, jac=True, method="L-BFGS-B", bounds=[(0, None)] * x_hat.shape[0],
        options={"maxiter": 5000, "ftol": 1e-12, "gtol": 1e-10},
    )
    return result.x


def hull_projection(x_hat, gram, total):
    """Bassily's projection of the answers ``W x_hat / total`` onto ``W B_1``, for any mechanism.

    Only the Gram matrix is needed: with any ``R`` such that ``R^T R = W^T W``,
    ``||W v - W x_hat / N|| = ||R v - R x_hat / N||``, so projecting ``R x_hat / N`` onto
    ``R B_1`` gives the same ``v*``. Returns the data vector ``total * v*`` (``||v*||_1 <= 1``),
    whose workload answers are the projected ones.

    Examples
    --------
    >>> x = hull_projection(np.array([30.0, -20.0]), np.eye(2), 10.0)
    >>> bool(np.abs(x).sum() <= 10.0 + 1e-6)
    True
    """
    values, vectors = np.linalg.eigh(gram)
    keep = values > values.max() * 1e-12
    root = np.sqrt(values[keep])[:, None] * vectors[:, keep].T
    _, coefficients = project_onto_hull(root, root @ x_hat / total)
    return total * coefficients


def postprocess(x_hat, method, gram, total):
    """Apply the named post-processing to the data-vector estimate ``x_hat``."""
    if method == "none":
        return x_hat
    if method == "clip":
        return np.clip(x_hat, 0.0, None)
    if method in ("norm_sub", "simplex"):
        return simplex_projection(x_hat, total)
    if method == "wnnls":
        return wnnls(x_hat, gram)
    if method == "hull":
        return hull_projection(x_hat, gram, total)
    raise ValueError(f"postprocess must be one of {POSTPROCESS}, got {method!r}.")
