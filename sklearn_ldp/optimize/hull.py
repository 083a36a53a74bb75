r"""Euclidean projection onto the symmetric convex hull ``K = A B_1`` (Bassily, AISTATS 2019).

Projection (Bassily's Algorithm 2, step 3). The true answers ``A x / N`` lie in the symmetric
convex hull ``K = A B_1 = {A v : ||v||_1 <= 1}`` of the columns; the Euclidean projection of
the noisy mean onto ``K`` (:func:`project_onto_hull`, applied by
:func:`sklearn_ldp.postprocess.projected_answers` and ``postprocess="hull"``)
never moves it farther from the truth and, when ``N`` is small relative to ``d``, cuts the
error from ``sigma sqrt(d / N)`` to ``O((r sigma)^{1/2} (ln n / N)^{1/4})``. It is biased.
We always project when asked (decision: the paper's threshold on ``N`` is not pinned down,
and projecting is never worse up to constants). The solver interleaves FISTA (fast for
well-conditioned ``A``) and Wolfe's exact active-set minimum-norm-point algorithm (fast when
the projection lies on a low-dimensional face, e.g. ill-conditioned prefix workloads), both
with certified stopping.

Takes a matrix and a point, returns a point and coefficients; pure numpy/scipy.
"""

import math

import numpy as np
from scipy import linalg

from .._validation import check_positive_int

# Projection: tolerances below this are not certifiable in double precision (the duality
# gaps are differences of terms of size ~scale^2), so they are raised to it.
MIN_PROJECTION_TOL = 1e-7
# FISTA gives up after this many blocks of iterations without a new lowest bound.
STALL_BLOCKS = 100


# ---------------------------------------------------------------------- projection onto A B_1
def project_l1_ball(v, radius=1.0):
    """Euclidean projection of ``v`` onto ``{w : ||w||_1 <= radius}`` in ``O(J log J)``.

    Sort-based (Duchi, Shalev-Shwartz, Singer, Chandra, ICML 2008): outside the ball the
    projection is the soft threshold ``sign(v) max(|v| - theta, 0)`` with ``theta`` found
    from the sorted magnitudes.

    Examples
    --------
    >>> project_l1_ball(np.array([2.0, -1.0, 0.1]))
    array([ 1., -0.,  0.])
    """
    v = np.asarray(v, dtype=float)
    magnitude = np.abs(v)
    if magnitude.sum() <= radius:
        return v.copy()
    ordered = np.sort(magnitude)[::-1]
    excess = np.cumsum(ordered) - radius
    positions = np.arange(1, ordered.size + 1)
    # The last position where the sorted value still exceeds the running threshold.
    count = np.flatnonzero(ordered * positions > excess)[-1] + 1
    theta = excess[count - 1] / count
    return np.sign(v) * np.maximum(magnitude - theta, 0.0)


def _largest_eigenvalue_bound(A, rng, n_iter=30):
    """Power-iteration estimate of ``||A||_2^2`` (a lower bound; backtracking fixes it)."""
    vector = rng.standard_normal(A.shape[1])
    estimate = 0.0
    for _ in range(n_iter):
        image = A.T @ (A @ vector)
        norm = np.linalg.norm(image)
        if norm == 0.0:
            return 0.0
        previous, estimate = estimate, norm / np.linalg.norm(vector)
        vector = image / norm
        if abs(estimate - previous) <= 1e-3 * estimate:
            break
    return estimate


def _fista(A, y, rng, block=10):
    """FISTA on ``min_{||v||_1 <= 1} ||A v - y||^2 / 2``; yields ``(bound, A v, v, cost)``.

    Step ``1 / L`` with ``L`` from power iteration, doubled by backtracking whenever the
    quadratic upper bound fails; gradient-based adaptive restart (O'Donoghue & Candes 2015).
    ``bound = 2 g`` with ``g = <grad, v> + ||grad||_inf`` the Frank-Wolfe duality gap, which
    bounds ``f(v) - f*``; since ``A v*`` is a projection onto a convex set,
    ``||A v - A v*||^2 <= 2 (f(v) - f*) <= bound``. Returns when the bound has not reached a
    new low for ``STALL_BLOCKS`` blocks (rounding floor reached).
    """
    lipschitz = max(_largest_eigenvalue_bound(A, rng), np.finfo(float).tiny)
    best_bound, stalled = np.inf, 0
    rounding = 1e-13 * max(float(y @ y), lipschitz)
    x = np.zeros(A.shape[1])
    Ax = np.zeros(A.shape[0])
    z, Az = x, Ax
    momentum = 1.0
    while True:
        for _ in range(block):
            residual_z = Az - y
            gradient = A.T @ residual_z
            f_z = 0.5 * residual_z @ residual_z
            while True:
                x_new = project_l1_ball(z - gradient / lipschitz)
                Ax_new = A @ x_new
                step = x_new - z
                residual_new = Ax_new - y
                # Backtracking: the quadratic upper bound must hold at the step taken; the
                # slack absorbs rounding (f_new and f_z are computed along different paths).
                bound = f_z + gradient @ step + 0.5 * lipschitz * (step @ step)
                if 0.5 * residual_new @ residual_new <= bound + rounding:
                    break
                lipschitz *= 2.0
            change = x_new - x
            if (z - x_new) @ change > 0:  # restart: the momentum points uphill
                momentum = 1.0
                z, Az = x_new, Ax_new
            else:
                next_momentum = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * momentum**2))
                weight = (momentum - 1.0) / next_momentum
                z = x_new + weight * change
                Az = Ax_new + weight * (Ax_new - Ax)
                momentum = next_momentum
            x, Ax = x_new, Ax_new
        residual = Ax - y
        grad_x = A.T @ residual
        gap = float(grad_x @ x + np.abs(grad_x).max())
        bound = 2.0 * max(gap, 0.0)
        yield bound, Ax, x, (2 * block + 1) * A.size
        if bound < (1 - 1e-3) * best_bound:
            best_bound, stalled = bound, 0
        else:
            stalled += 1
            if stalled >= STALL_BLOCKS:
                return


def _wolfe(A, y, target, block=10):
    """Wolfe's minimum-norm-point algorithm on ``conv{+-a_j} - y``; yields per ``block`` steps.

    Active-set and exact: a *corral* of vertices ``p_i = s_i a_{j_i} - y`` with weights
    ``lambda > 0`` summing to one; each major step adds the vertex minimizing ``<x, p>``
    (``x`` the current point) and minor steps move to the affine minimizer of the corral,
    dropping vertices whose weight would turn negative. The affine minimizer is
    ``mu = M^-1 1 / (1^T M^-1 1)`` with ``M = 1 1^T + P^T P``, kept as a Cholesky factor
    ``R`` updated in ``O(k^2)`` per added or dropped vertex. Its gap
    ``||x||^2 - min_p <x, p>`` bounds ``||x - x*||^2`` (``x*`` the minimum-norm point), so
    ``bound`` is directly the squared distance to the exact projection. Fast when the
    projection lies on a low-dimensional face (large noise, the case where projecting pays).
    Stops (after yielding) once ``bound <= target`` or when rounding prevents progress.
    """
    col_sq = np.einsum("ij,ij->j", A, A)
    Aty = A.T @ y
    yy = float(y @ y)
    AT = np.ascontiguousarray(A.T)
    # Start at the vertex closest to y.
    j = int(np.argmin(col_sq - 2 * np.abs(Aty)))
    sign = 1.0 if Aty[j] >= 0 else -1.0
    cols, signs = [j], [sign]
    # The corral's columns a_{j_i} as rows, in corral order, in a buffer that grows rarely.
    buffer = np.empty((min(A.shape[0] + 2, 2 * A.shape[1] + 1), A.shape[0]))
    buffer[0] = AT[j]
    weights = np.array([1.0])
    # Upper Cholesky factor R of M; solves use R.T (Fortran-contiguous, so no copies).
    R = np.array([[math.sqrt(1.0 + col_sq[j] - 2 * sign * Aty[j] + yy)]])
    x = sign * AT[j] - y
    n_steps = 0
    cost = 0
    while True:
        k = R.shape[0]
        c = AT @ x
        cost += A.size + 2 * k * A.shape[0] + 4 * k * k  # flops of one step, roughly
        new = int(np.argmax(np.abs(c)))
        gap = max(float(x @ x + abs(c[new]) + x @ y), 0.0)  # bound for the current x
        if n_steps % block == 0 or gap <= target:
            yield gap, x + y, _coefficients(A.shape[1], cols, signs, weights), cost
            cost = 0
        if gap <= target:
            return
        n_steps += 1
        new_sign = -1.0 if c[new] > 0 else 1.0
        # Column of M for the new vertex: 1 + <p_i, p_new>.
        s = np.asarray(signs)
        cross = (1.0 + s * new_sign * (buffer[:k] @ AT[new]) - s * Aty[cols]
                 - new_sign * Aty[new] + yy)
        norm_new = 1.0 + col_sq[new] - 2 * new_sign * Aty[new] + yy
        r = linalg.solve_triangular(R.T, cross, lower=True, check_finite=False)
        pivot = norm_new - r @ r
        if pivot <= 1e-13 * norm_new:  # numerically inside the affine hull: no progress
            yield gap, x + y, _coefficients(A.shape[1], cols, signs, weights), cost
            return
        grown = np.empty((k + 1, k + 1))
        grown[:k, :k] = R
        grown[k, :k] = 0.0
        grown[:k, k] = r
        grown[k, k] = math.sqrt(pivot)
        R = grown
        if k == buffer.shape[0]:
            buffer = np.concatenate([buffer, np.empty_like(buffer)])
        buffer[k] = AT[new]
        cols.append(new)
        signs.append(new_sign)
        weights = np.append(weights, 0.0)
        while True:  # minor steps
            nu = linalg.cho_solve((R.T, True), np.ones(R.shape[0]), check_finite=False)
            mu = nu / nu.sum()
            if np.all(mu > 0):
                weights = mu
                break
            negative = mu <= 0
            theta = float(np.min(weights[negative] / (weights[negative] - mu[negative])))
            weights = (1 - theta) * weights + theta * mu
            drop = np.flatnonzero(weights <= 1e-15)
            if drop.size == 0:
                drop = np.array([int(np.argmin(weights))])
            for i in drop[::-1].tolist():
                cost += 3 * R.size
                R = _cholesky_drop(R, i)
                size = len(cols)
                buffer[i:size - 1] = buffer[i + 1:size].copy()
                del cols[i], signs[i]
            keep = np.ones(weights.size, dtype=bool)
            keep[drop] = False
            weights = np.maximum(weights[keep], 0.0)
            weights /= weights.sum()
        previous = float(x @ x)
        x = (np.asarray(signs) * weights) @ buffer[:len(cols)] - y
        if x @ x >= previous * (1 - 1e-15):  # ||x|| must fall at every step: rounding floor
            gap = max(float(x @ x + np.abs(AT @ x).max() + x @ y), 0.0)
            yield gap, x + y, _coefficients(A.shape[1], cols, signs, weights), cost
            return


def _coefficients(n_cols, cols, signs, weights):
    v = np.zeros(n_cols)
    np.add.at(v, np.asarray(cols), np.asarray(signs) * weights)
    return v


def _cholesky_drop(R, i):
    """Upper Cholesky factor of ``M`` without row and column ``i`` (Givens, ``O(k^2)``)."""
    R = np.delete(R, i, axis=1)
    for m in range(i, R.shape[1]):
        a, b = R[m, m], R[m + 1, m]
        radius = math.hypot(a, b)
        if radius == 0.0:
            continue
        cos, sin = a / radius, b / radius
        top, bottom = R[m, m:].copy(), R[m + 1, m:]
        R[m, m:] = cos * top + sin * bottom
        R[m + 1, m:] = -sin * top + cos * bottom
    return R[:-1]


def project_onto_hull(A, y, tol=1e-6, max_iter=100000, return_n_iter=False):
    """Euclidean projection of ``y`` onto the symmetric convex hull ``K = A B_1``.

    ``K = {A v : ||v||_1 <= 1}`` is the convex hull of the columns of ``A`` and their
    negatives; the projection is ``A v*`` with ``v* = argmin_{||v||_1 <= 1} ||A v - y||^2``.

    Two certified solvers run interleaved (blocks of 10 iterations, the one that has done less
    work so far runs next), and the first to certify wins:

    * FISTA (accelerated projected gradient) with the exact ``O(J log J)`` L1-ball projection
      (Duchi et al. 2008), step ``1 / ||A||_2^2`` (power iteration + backtracking) and
      adaptive restart. Fast when ``A`` is well conditioned (the identity converges in one
      step), slow on ill-conditioned ``A`` such as prefix sums.
    * Wolfe's minimum-norm-point algorithm on the polytope ``conv{+-a_j}`` (an exact
      active-set method). Fast when the projection lies on a low-dimensional face, which is
      the large-noise regime where projecting pays, whatever the conditioning of ``A``.

    Both give a bound on ``||A v - P_K(y)||^2`` (duality gaps, see ``_fista`` and
    ``_wolfe``); the loop stops when it is at most ``(tol * scale)^2`` with
    ``scale = max(||y||, max column norm)``, i.e. the returned point is within
    ``tol * scale`` of the exact projection. After ``max_iter`` iterations in all, the
    point with the smaller bound is returned.

    Parameters
    ----------
    A : array of shape (d, J)
    y : array of shape (d,)
    tol : float, default=1e-6
        Relative accuracy of the projected point (see above); values below ``1e-7`` are
        raised to ``1e-7``, the limit of the certificates in double precision.
    max_iter : int, default=100000
        Cap on the iterations of the two solvers together.
    return_n_iter : bool, default=False
        Also return the number of iterations run (both solvers).

    Returns
    -------
    projection : ndarray of shape (d,)
        ``A v``, the point of ``K`` closest to ``y`` (within the tolerance).
    v : ndarray of shape (J,)
        Coefficients with ``||v||_1 <= 1``.
    n_iter : int
        Only if ``return_n_iter``.

    Examples
    --------
    >>> A = np.eye(3)
    >>> point, v = project_onto_hull(A, np.array([2.0, 0.5, 0.0]))
    >>> point.round(6)
    array([1., 0., 0.])
    """
    A = np.asarray(A, dtype=float)
    y = np.asarray(y, dtype=float)
    if A.ndim != 2 or y.shape != (A.shape[0],):
        raise ValueError(f"y must be a vector with one entry per row of A "
                         f"({A.shape[0] if A.ndim == 2 else '?'}), got shape {y.shape}.")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(y))):
        raise ValueError("A and y must be finite.")
    max_iter = check_positive_int(max_iter, "max_iter")
    column_norms = np.sqrt(np.einsum("ij,ij->j", A, A))
    scale = max(float(np.linalg.norm(y)), float(column_norms.max(initial=0.0)))
    if column_norms.max(initial=0.0) == 0.0:  # K = {0}
        result = (np.zeros(A.shape[0]), np.zeros(A.shape[1]))
        return (*result, 0) if return_n_iter else result
    target = (max(tol, MIN_PROJECTION_TOL) * scale) ** 2
    block = 10
    # Each solver's work so far (in flops, roughly); the one that has used less runs next, so
    # the total work is at most about twice that of the faster solver.
    solvers = {"fista": _fista(A, y, np.random.default_rng(0), block),
               "wolfe": _wolfe(A, y, target, block)}
    work = {"fista": 0, "wolfe": 0}
    best = (np.inf, None, None)
    n_iter = 0
    while solvers and n_iter < max_iter:
        name = min(solvers, key=work.get)
        try:
            bound, point, v, cost = next(solvers[name])
        except StopIteration:
            del solvers[name]
            continue
        work[name] += cost
        n_iter += block
        if bound < best[0]:
            best = (bound, point, v)
        if bound <= target:
            break
    _, point, v = best
    return (point, v, n_iter) if return_n_iter else (point, v)
