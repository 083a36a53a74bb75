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
"""

import numpy as np
from scipy import optimize

from .optimize.projection import project_bounded_simplex

POSTPROCESS = ("none", "clip", "norm_sub", "simplex", "wnnls")


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
    raise ValueError(f"postprocess must be one of {POSTPROCESS}, got {method!r}.")
