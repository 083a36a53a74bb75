r"""Bassily's protocols for linear queries under LDP (AISTATS 2019): Gaussian randomizers.

The workload is a ``d x n`` matrix ``A`` (``d`` queries over ``n`` domain cells); ``a_u`` is
its column for cell ``u`` and ``r = max_u ||a_u||_2``. Both mechanisms send one real vector
of length ``d`` per user (real vectors are inherent to these protocols), so reports are an
``(N, d)`` float64 array.

Approximate LDP: :class:`GaussianMechanism` (Algorithms 1-2)
--------------------------------------------------------------
A user of type ``u`` reports ``a_u + g``, ``g ~ N(0, sigma^2 I_d)``. Any two inputs differ by
at most ``2 r`` in L2, so this is the Gaussian mechanism with sensitivity ``Delta = 2 r``.

* ``calibration="analytic"`` (default): the smallest sigma for which it is (eps, delta)-DP,
  from the exact condition of Balle & Wang (ICML 2018, Theorem 8)::

      Phi(Delta / (2 sigma) - eps sigma / Delta) - e^eps Phi(-Delta / (2 sigma) - eps sigma / Delta)
          <= delta,

  solved by bisection on sigma (the left side decreases in sigma).
* ``calibration="classic"``: the formula of the paper, ``sigma = 2 r sqrt(2 ln(2/delta)) /
  eps``. The reference notes mark ``2/delta`` vs ``1.25/delta`` as UNSURE: we use ``2/delta``
  (the paper's, and the LM12 convention); it is the larger sigma of the two, and on every
  setting we checked with ``eps <= 1`` it is at least the analytic sigma, so it is private.

The statistic is ``[sum of reports (d), N]``; ``E[sum] = A x``. The estimate is the
minimum-norm solution ``x_hat = A^+ sum`` (solves with ``A^T A`` or ``A A^T``, whichever is
smaller; never an explicit inverse). ``W x_hat`` is unbiased for every ``W`` in the row space
of ``A`` (in particular ``A`` itself), and its covariance is ``N sigma^2 W A^+ A^{+T} W^T``,
the same for every user: ``z_u = sigma^2 ||W A^+||_F^2``.

Projection (Bassily's Algorithm 2, step 3). The true answers ``A x / N`` lie in the symmetric
convex hull ``K = A B_1 = {A v : ||v||_1 <= 1}`` of the columns; the Euclidean projection of
the noisy mean onto ``K`` (:func:`project_onto_hull`, :meth:`GaussianMechanism.projected_answers`)
never moves it farther from the truth and, when ``N`` is small relative to ``d``, cuts the
error from ``sigma sqrt(d / N)`` to ``O((r sigma)^{1/2} (ln n / N)^{1/4})``. It is biased.
We always project when asked (the paper's threshold on ``N`` is UNSURE, and projecting is never
worse up to constants). The solver interleaves FISTA (fast for well-conditioned ``A``) and
Wolfe's exact active-set minimum-norm-point algorithm (fast when the projection lies on a
low-dimensional face, e.g. ill-conditioned prefix workloads), both with certified stopping.

Pure LDP: :class:`GaussianRejectionMechanism` (Algorithms 3-4)
--------------------------------------------------------------
A user draws ``v ~ N(0, sigma^2 I)`` (independent of the input), computes the privacy loss
``L = ln(phi_a(v) / phi_0(v)) = (2 <a, v> - ||a||^2) / (2 sigma^2)`` and keeps ``v`` with
probability ``h_a(v) = e^L / 2`` when ``|L| <= eps / 2``, else with probability ``1/2``;
otherwise the report is the symbol "bottom", encoded as a row of NaN.

* Privacy of a kept report: its density is ``phi_0(v) h_a(v)`` with ``h_a`` in
  ``[e^{-eps/2} / 2, e^{eps/2} / 2]``, so the ratio between two inputs is at most ``e^eps``.
  This needs ``e^{eps/2} / 2 <= 1``, i.e. ``eps <= 2 ln 2``; larger eps is refused.
* Privacy of "bottom": ``P(keep | a) = (P_a(G) + 1 - P_0(G)) / 2`` with ``G`` the window
  ``|L| <= eps/2``. The paper bounds it by ``(1 +- delta_0) / 2``. In fact the loss is
  ``N(rho, 2 rho)`` under ``phi_a`` and ``N(-rho, 2 rho)`` under ``phi_0`` (``rho = ||a||^2 /
  (2 sigma^2)``) and the window is symmetric, so ``P_a(G) = P_0(G)`` and **P(keep | a) = 1/2
  exactly, for every input and every sigma** (checked by 1-D integration in the tests). The
  mechanism is therefore exactly eps-LDP for any sigma; sigma only trades noise against the
  fraction of decisions that fall outside the window and carry no information.
* Calibration (delta_0 is UNSURE in the notes). ``calibration="paper"`` follows the paper's
  construction with ``delta_0 = tanh(eps / 2)``, the largest value with
  ``(1 + delta_0) / (1 - delta_0) <= e^eps``: sigma is the smallest value for which
  ``P(|L| <= eps/2) >= 1 - delta_0`` under both ``phi_a`` and ``phi_0`` for every column; the
  probability is ``Phi(eps/(2s) - s/2) - Phi(-eps/(2s) - s/2)`` with ``s = ||a|| / sigma``,
  decreasing in ``s``, so it binds at the largest column (bisection on ``s``).
  ``calibration="optimal"`` (default) picks the sigma that minimizes the per-user variance
  ``alpha / kappa^2 = r^2 / (2 E[t h(t)]^2)`` of the largest column instead, which is allowed
  because privacy does not depend on sigma (see above). Decision: "optimal" is the default
  because it is much more accurate: per-user variance of a unit column 491 ("paper") vs 58
  ("optimal") at eps = 1, 698 vs 30 at eps = 2 ln 2, 536 vs 232 at eps = 0.5 (for
  comparison the analytic Gaussian with delta = 1e-6 has 71 at eps = 1).

Exact unbiasedness (an improvement over the paper, whose mean of kept reports is only
approximately ``a``). Write ``v = sigma t a/||a|| + v_perp`` with ``t ~ N(0, 1)``
independent of ``v_perp``; the keep probability depends on ``t`` only, ``L = s t - s^2 / 2``.
Hence, with ``h(t)`` the keep probability,

    E[v 1(keep)]       = kappa(||a||) a,          kappa = sigma E[t h(t)] / ||a||
    E[v v^T 1(keep)]   = alpha I + beta a a^T,    alpha = sigma^2 E[h] = sigma^2 / 2,
                                                  beta  = sigma^2 (E[t^2 h] - 1/2) / ||a||^2

(closed forms with ``ndtr``; ``h(t) phi(t) = phi(t - s) / 2`` inside the window). The
statistic is ``[T (d), K, N]`` with ``T`` the sum of kept reports and ``K`` their number, so
``E[T] = A diag(kappa) x = B x`` and ``x_hat = B^+ T`` is exactly unbiased for every workload
in the row space of ``B``. The per-user covariance of ``T`` is ``alpha_u I + (beta_u -
kappa_u^2) a_u a_u^T``, which gives the exact variance of every query.

Decision (supported workloads). ``kappa`` decreases with the column norm, so the row space of
``B`` equals that of ``A`` when ``A`` has full column rank or equal column norms, but not in
general (e.g. a wide ``A`` with unequal norms would not support ``A`` itself). In that case
(``columns="auto"``) users plug in ``a_u`` rescaled to the norm ``m_u`` that makes ``kappa``
the same for all types (:func:`equalized_norms`; any input vector keeps the mechanism
eps-LDP), so that ``E[T] = lambda A x`` and every workload in the row space of ``A`` is
supported, at some cost in variance for the columns of smaller norm.

Pure numpy/scipy; nothing here knows about scikit-learn or pandas.
"""

import math
import numbers

import numpy as np
from scipy import linalg, special

from .._validation import check_delta, check_epsilon, check_positive_int
from .base import Mechanism, check_type_counts, check_type_indices, chunks, register
from .factorization import PseudoInverse, workload_in_row_space

# Largest epsilon for which the rejection-sampling window [e^{-eps/2}/2, e^{eps/2}/2] is a
# range of probabilities.
MAX_REJECTION_EPSILON = 2.0 * math.log(2.0)

# Users randomized at once (bounds the temporaries of randomize beyond the output itself).
RANDOMIZE_CHUNK = 2**16

_SQRT_2PI = math.sqrt(2.0 * math.pi)

# Projection: tolerances below this are not certifiable in double precision (the duality
# gaps are differences of terms of size ~scale^2), so they are raised to it.
MIN_PROJECTION_TOL = 1e-7
# FISTA gives up after this many blocks of iterations without a new lowest bound.
STALL_BLOCKS = 100


# ---------------------------------------------------------------------- calibration
def gaussian_delta(sigma, sensitivity, epsilon):
    """Smallest delta for which ``f(x) + N(0, sigma^2 I)`` is (epsilon, delta)-DP.

    The exact condition of Balle & Wang (2018, Theorem 8) for L2 sensitivity ``Delta``::

        Phi(Delta/(2 sigma) - eps sigma/Delta) - e^eps Phi(-Delta/(2 sigma) - eps sigma/Delta)

    The second term is evaluated in log space (``log_ndtr``) so a large ``eps`` does not
    overflow.

    Examples
    --------
    >>> round(gaussian_delta(1.0, 1.0, 1.0), 4)
    0.1269
    """
    ratio = sensitivity / sigma
    first = special.ndtr(ratio / 2 - epsilon / ratio)
    second = np.exp(epsilon + special.log_ndtr(-ratio / 2 - epsilon / ratio))
    return float(max(first - second, 0.0))


def analytic_gaussian_sigma(sensitivity, epsilon, delta, rtol=1e-12):
    """The smallest sigma with ``gaussian_delta(sigma, sensitivity, epsilon) <= delta``.

    Bisection in ``log(sigma)`` between a sigma that fails and one that holds; returns the
    upper (private) end once the bracket is narrower than ``rtol``.

    Examples
    --------
    >>> sigma = analytic_gaussian_sigma(1.0, 1.0, 1e-5)
    >>> round(sigma, 3), gaussian_delta(sigma, 1.0, 1.0) <= 1e-5
    (3.731, True)
    """
    high = sensitivity * max(1.0, math.sqrt(2 * math.log(2 / delta)) / epsilon)
    while gaussian_delta(high, sensitivity, epsilon) > delta:
        high *= 2.0
    low = high / 2.0
    while gaussian_delta(low, sensitivity, epsilon) <= delta:
        high, low = low, low / 2.0
    while high / low - 1.0 > rtol:
        middle = math.sqrt(low * high)
        if gaussian_delta(middle, sensitivity, epsilon) <= delta:
            high = middle
        else:
            low = middle
    return high


def classic_gaussian_sigma(sensitivity, epsilon, delta):
    """The paper's ``sigma = Delta sqrt(2 ln(2 / delta)) / eps`` (see the module on 2/delta).

    Examples
    --------
    >>> round(classic_gaussian_sigma(2.0, 1.0, 1e-5), 3)
    9.882
    """
    return sensitivity * math.sqrt(2.0 * math.log(2.0 / delta)) / epsilon


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


# ---------------------------------------------------------------------- shared linear algebra
class _MinimumNorm:
    """Minimum-norm solutions with a ``d x n`` matrix ``M``: ``M^+ b`` by solves.

    Works with the smaller of the Gram matrices ``M^T M`` (``n x n``, tall ``M``) and
    ``M M^T`` (``d x d``, wide ``M``), factored once by :class:`PseudoInverse` (Cholesky
    when positive definite, else an eigendecomposition that drops the null space).
    """

    def __init__(self, M):
        self.M = M
        d, n = M.shape
        self.tall = d >= n
        self._solver = PseudoInverse(M.T @ M if self.tall else M @ M.T)
        self.rank = self._solver.rank
        self._pinv = None

    def solve(self, b):
        """``M^+ b`` for a vector (or matrix of columns) ``b`` of length ``d``."""
        if self.tall:
            return self._solver.solve(self.M.T @ b)
        return self.M.T @ self._solver.solve(b)

    @property
    def pinv(self):
        """``M^+`` (``n x d``), computed once by solves, for the variance formulas."""
        if self._pinv is None:
            if self.tall:
                self._pinv = self._solver.solve(self.M.T)
            else:
                self._pinv = self._solver.solve(self.M).T
            self._pinv.setflags(write=False)
        return self._pinv

    @property
    def null_space_dim(self):
        return self.M.shape[1] - self.rank

    def in_row_space(self, rows):
        """Whether every row of ``rows`` (width ``n``) lies in the row space of ``M``."""
        rows = np.atleast_2d(np.asarray(rows, dtype=float))
        if self.tall:
            return workload_in_row_space(rows, self._solver.null_space)
        if self.null_space_dim == 0:
            return True
        residual = rows - (rows @ self.pinv) @ self.M
        return np.linalg.norm(residual) <= 1e-8 * max(np.linalg.norm(rows), 1.0)


def _as_workload_matrix(workload, n_inputs):
    """The strategy workload ``A`` (``d x n``) as a finite float64 array, checked."""
    if workload is None:
        workload = np.eye(n_inputs)
    matrix = getattr(workload, "matrix", workload)  # a sklearn_ldp Workload carries .matrix
    try:
        A = np.array(matrix, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"workload must be a numeric d x n matrix: {exc}") from None
    if A.ndim == 1:
        A = A[np.newaxis, :]
    if A.ndim != 2 or A.shape[0] == 0:
        raise ValueError(f"workload must be a 2-D d x n matrix, got shape {A.shape}.")
    if A.shape[1] != n_inputs:
        raise ValueError(f"the workload has {A.shape[1]} columns but the domain has {n_inputs} "
                         "cells.")
    if not np.all(np.isfinite(A)):
        raise ValueError("the workload contains NaN or infinite entries.")
    norms = np.sqrt((A * A).sum(axis=0))
    if norms.max() == 0.0:
        raise ValueError("the workload is all zeros: there is nothing to measure.")
    A.setflags(write=False)
    return A


class _VectorReportMechanism(Mechanism):
    """Common parts of the two Gaussian mechanisms: workload, reports of width ``d``."""

    def _setup_workload(self, n_inputs, workload):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.A = _as_workload_matrix(workload, self.n_inputs)
        self.n_queries = self.A.shape[0]
        self.column_norms = np.sqrt((self.A * self.A).sum(axis=0))
        self.radius = float(self.column_norms.max())

    def _check_report_shape(self, reports):
        reports = np.asarray(reports)
        if reports.ndim != 2 or reports.shape[1] != self.n_queries:
            raise ValueError(
                f"reports of the {self.kind!r} mechanism are real vectors of length "
                f"{self.n_queries} (one row per user, an (N, {self.n_queries}) array); got an "
                f"array of shape {reports.shape}: they come from another mechanism or workload."
            )
        if not np.issubdtype(reports.dtype, np.floating):
            raise ValueError(
                f"reports of the {self.kind!r} mechanism are float vectors, got dtype "
                f"{reports.dtype}."
            )
        return reports

    def _check_statistic(self, statistic, extra):
        statistic = np.asarray(statistic, dtype=float)
        if statistic.shape != (self.n_queries + extra,):
            raise ValueError(
                f"the statistic of the {self.kind!r} mechanism has {self.n_queries + extra} "
                f"entries, got shape {statistic.shape}."
            )
        return statistic

    def n_reports(self, statistic):
        return int(round(float(statistic[-1])))

    def supports(self, workload_matrix):
        """Whether every query lies in the row space of the measured matrix."""
        return self._solver.in_row_space(workload_matrix)

    def supports_gram(self, gram):
        """Whether the workload with Gram ``W^T W`` lies in that row space (same row space)."""
        return self._solver.in_row_space(gram)

    @property
    def null_space_dim(self):
        return self._solver.null_space_dim

    def projected_answers(self, statistic, tol=1e-6, max_iter=20000):
        """Answers to the workload ``A`` projected onto ``N K``, ``K = A B_1`` (biased).

        The unbiased answers ``A x_hat`` divided by ``N`` estimate the mean ``A x / N``, which
        lies in ``K``; their projection onto ``K`` (:func:`project_onto_hull`) is never
        farther from it, and much closer when ``N`` is small relative to ``d``.
        Returns counts (the projected mean times ``N``).
        """
        n_users = self.n_reports(statistic)
        if n_users == 0:
            raise ValueError("no reports: the statistic summarizes 0 users.")
        mean = self.A @ self.estimate(statistic) / n_users
        point, _ = project_onto_hull(self.A, mean, tol=tol, max_iter=max_iter)
        return n_users * point

    def fingerprint(self):
        params = {key: value for key, value in self._scalar_params().items()}
        return (self.kind, self.epsilon, self.A.shape, hash(self.A.tobytes()),
                tuple(sorted(params.items())))

    def __eq__(self, other):
        return (type(other) is type(self) and self.fingerprint() == other.fingerprint()
                and np.array_equal(self.A, other.A))

    def __hash__(self):
        return hash(self.fingerprint())

    @property
    def params(self):
        """Constructor parameters as plain JSON values (the workload as nested lists)."""
        return {"workload": self.A.tolist(), **self._scalar_params()}

    def __repr__(self):
        params = "".join(f", {key}={value!r}" for key, value in self._scalar_params().items())
        return (f"{type(self).__name__}(n_inputs={self.n_inputs}, epsilon={self.epsilon}, "
                f"workload=<{self.n_queries} x {self.n_inputs}>{params})")


# ---------------------------------------------------------------------- (eps, delta): Gaussian
@register
class GaussianMechanism(_VectorReportMechanism):
    """Bassily's Gaussian randomizer: report ``a_u + N(0, sigma^2 I_d)``, (eps, delta)-LDP.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n``.
    epsilon : float
    delta : float in (0, 1)
        Required: the Gaussian randomizer is only approximately private.
    workload : array of shape (d, n), Workload or None, default=None
        The matrix ``A`` whose columns users send (default: the identity, i.e. the
        histogram). Stored as nested lists in ``params`` for JSON.
    calibration : {"analytic", "classic"}, default="analytic"
        ``"analytic"``: smallest exact sigma (Balle & Wang); ``"classic"``: the paper's
        ``2 r sqrt(2 ln(2/delta)) / eps``.

    Attributes
    ----------
    sigma : float
        Noise standard deviation per coordinate.
    radius : float
        ``r``, the largest column norm; the sensitivity is ``2 r``.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = GaussianMechanism(3, 1.0, delta=1e-6, workload=[[1, 1, 0], [0, 1, 1]])
    >>> reports = mechanism.randomize(np.array([0, 1, 2, 2]), np.random.default_rng(0))
    >>> reports.shape
    (4, 2)
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (3,)
    """

    kind = "gaussian"
    CALIBRATIONS = ("analytic", "classic")

    def __init__(self, n_inputs, epsilon, delta=None, workload=None, calibration="analytic"):
        self.epsilon = check_epsilon(epsilon)
        if delta is None:
            raise ValueError(
                "the Gaussian randomizer needs delta: it is (epsilon, delta)-LDP, not "
                "epsilon-LDP. Pass delta in (0, 1) (e.g. 1e-6), or use the pure-LDP "
                "'gaussian_pure' (rejection sampling) mechanism."
            )
        self.delta = check_delta(delta)
        if calibration not in self.CALIBRATIONS:
            raise ValueError(f"calibration must be one of {self.CALIBRATIONS}, got "
                             f"{calibration!r}.")
        self.calibration = calibration
        self._setup_workload(n_inputs, workload)
        self.name = "gaussian"
        sensitivity = 2.0 * self.radius
        if calibration == "analytic":
            self.sigma = analytic_gaussian_sigma(sensitivity, self.epsilon, self.delta)
        else:
            self.sigma = classic_gaussian_sigma(sensitivity, self.epsilon, self.delta)
        self._solver_cache = None

    def _scalar_params(self):
        return {"delta": self.delta, "calibration": self.calibration}

    @property
    def _solver(self):
        # Built on first server-side use: clients only need A and sigma.
        if self._solver_cache is None:
            self._solver_cache = _MinimumNorm(self.A)
        return self._solver_cache

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """One report per user: ``a_u + N(0, sigma^2 I)`` as an ``(N, d)`` float64 array."""
        indices = check_type_indices(indices, self.n_inputs)
        reports = rng.standard_normal((indices.shape[0], self.n_queries))
        columns = self.A.T
        for rows in chunks(indices.shape[0], RANDOMIZE_CHUNK):
            block = reports[rows]
            block *= self.sigma
            block += columns[indices[rows]]
        return reports

    # ------------------------------------------------------------------ server side
    def check_reports(self, reports):
        """Reports as an ``(N, d)`` float array, or a ValueError (width, dtype, NaN/inf)."""
        reports = self._check_report_shape(reports)
        if not np.all(np.isfinite(reports)):
            raise ValueError(f"reports of the {self.kind!r} mechanism must be finite; found NaN "
                             "or infinite entries.")
        return reports

    def aggregate(self, reports):
        """``[sum of the reports (d), N]`` as float64 (additive over chunks)."""
        reports = self.check_reports(reports)
        total = np.zeros(self.n_queries)
        for rows in chunks(reports.shape[0]):
            total += reports[rows].sum(axis=0)
        return np.append(total, float(reports.shape[0]))

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of the statistic: ``A x + N(0, N sigma^2 I)`` (the sum of N Gaussians)."""
        counts = check_type_counts(type_counts, self.n_inputs)
        n_users = int(counts.sum())
        noise = math.sqrt(n_users) * self.sigma * rng.standard_normal(self.n_queries)
        return np.append(self.A @ counts + noise, float(n_users))

    def estimate(self, statistic):
        """``x_hat = A^+ sum``: unbiased for every workload in the row space of ``A``."""
        statistic = self._check_statistic(statistic, 1)
        return self._solver.solve(statistic[:-1])

    # ------------------------------------------------------------------ analysis
    def per_user_variance(self, gram):
        """``z_u = sigma^2 tr(G A^+ A^{+T})``, the same for every type."""
        gram = np.asarray(gram, dtype=float)
        pinv = self._solver.pinv
        total = self.sigma**2 * float(np.sum((gram @ pinv) * pinv))
        return np.full(self.n_inputs, total)

    def query_variance(self, workload_matrix):
        """``z[i, u] = sigma^2 ||w_i A^+||^2`` for every type ``u``."""
        W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
        per_query = self.sigma**2 * np.sum((W @ self._solver.pinv) ** 2, axis=1)
        return np.repeat(per_query[:, None], self.n_inputs, axis=1)


# ---------------------------------------------------------------------- pure eps: rejection
def _window(s, epsilon):
    """Bounds ``(t_lo, t_hi)`` of the window ``|s t - s^2/2| <= eps/2`` in ``t`` (``s > 0``)."""
    return s / 2 - epsilon / (2 * s), s / 2 + epsilon / (2 * s)


def _normal_pdf(t):
    return np.exp(-0.5 * np.square(t)) / _SQRT_2PI


def window_probability(s, epsilon):
    """``P(|L| <= eps/2)`` under ``phi_a`` (equal under ``phi_0``), ``s = ||a|| / sigma``.

    ``L ~ N(s^2/2, s^2)``, so the probability is ``Phi(eps/(2s) - s/2) - Phi(-eps/(2s) - s/2)``.

    Examples
    --------
    >>> round(float(window_probability(0.5, 1.0)), 4)
    0.6677
    """
    s = np.asarray(s, dtype=float)
    with np.errstate(divide="ignore"):
        half_width = np.where(s > 0, epsilon / (2 * np.where(s > 0, s, 1.0)), np.inf)
    return special.ndtr(half_width - s / 2) - special.ndtr(-half_width - s / 2)


def rejection_moments(norms, sigma, epsilon):
    """Exact ``(p_keep, kappa, alpha, beta)`` of the rejection sampler for columns of given norm.

    For a column ``a`` with ``||a|| = norms[u]``: ``P(keep) = 1/2``; ``E[v 1(keep)] = kappa a``;
    ``E[v v^T 1(keep)] = alpha I + beta a a^T`` (see the module docstring). Columns of norm 0
    are kept with probability 1/2 and then ``v ~ N(0, sigma^2 I)``: ``kappa = beta = 0``.

    Examples
    --------
    >>> p_keep, kappa, alpha, beta = rejection_moments(np.array([1.0]), 2.0, 1.0)
    >>> float(p_keep[0]), round(float(kappa[0]), 4)
    (0.5, 0.0969)
    """
    norms = np.asarray(norms, dtype=float)
    positive = norms > 0
    s = np.where(positive, norms / sigma, 1.0)
    low, high = _window(s, epsilon)
    # Inside the window h(t) phi(t) = phi(t - s) / 2; outside h = 1/2. Truncated moments:
    # int_l^h phi = dPhi; int_l^h t phi = phi(l) - phi(h); int_l^h t^2 phi = dPhi + l phi(l)
    # - h phi(h).
    shifted_low, shifted_high = low - s, high - s
    mass_in = special.ndtr(shifted_high) - special.ndtr(shifted_low)
    first_in = _normal_pdf(shifted_low) - _normal_pdf(shifted_high)
    second_in = (mass_in + shifted_low * _normal_pdf(shifted_low)
                 - shifted_high * _normal_pdf(shifted_high))
    # Moments of t = u + s with u standard normal restricted to [low - s, high - s].
    window_t = s * mass_in + first_in
    window_t2 = second_in + 2 * s * first_in + s * s * mass_in
    mass_g = special.ndtr(high) - special.ndtr(low)
    first_g = _normal_pdf(low) - _normal_pdf(high)
    second_g = mass_g + low * _normal_pdf(low) - high * _normal_pdf(high)
    p_keep = 0.5 * mass_in + 0.5 * (1.0 - mass_g)
    mean_t = 0.5 * window_t + 0.5 * (0.0 - first_g)  # outside-window part: -int_G t phi
    mean_t2 = 0.5 * window_t2 + 0.5 * (1.0 - second_g)
    safe = np.where(positive, norms, 1.0)
    kappa = np.where(positive, sigma * mean_t / safe, 0.0)
    alpha = sigma**2 * np.where(positive, p_keep, 0.5)
    beta = np.where(positive, sigma**2 * (mean_t2 - p_keep) / safe**2, 0.0)
    return np.where(positive, p_keep, 0.5), kappa, alpha, beta


def _mean_t(s, epsilon):
    """``E[t h(t)]`` for ``s = ||a|| / sigma`` (``sigma = 1``): the signal of one report."""
    s = np.asarray(s, dtype=float)
    _, kappa, _, _ = rejection_moments(s, 1.0, epsilon)
    return kappa * s


def equalized_norms(norms, sigma, epsilon):
    """Norms ``m_u`` that give every column the same mean factor ``kappa`` (the largest one's).

    A user plugs ``a_u m_u / ||a_u||`` into the sampler instead of ``a_u``, with ``m_u`` the
    solution of ``E[t h](m_u / sigma) = E[t h](r / sigma) ||a_u|| / r`` on the increasing
    branch of ``E[t h]`` (bisection, all columns at once). Then ``E[report | u] = lambda a_u``
    with one ``lambda`` for all types, so the estimate is unbiased on the row space of ``A``
    itself, whatever the column norms.

    Examples
    --------
    >>> m = equalized_norms(np.array([0.5, 1.0]), 4.0, 1.0)
    >>> bool(m[1] == 1.0 and m[0] < 0.5)
    True
    """
    norms = np.asarray(norms, dtype=float)
    radius = norms.max()
    s_max = radius / sigma
    # The increasing branch ends at the maximizer of E[t h]; search up to it (or s_max).
    s_peak = radius / optimal_rejection_sigma(radius, epsilon)
    upper = min(s_max, s_peak)
    target = _mean_t(s_max, epsilon) * norms / radius
    low = np.zeros_like(norms)
    high = np.full_like(norms, upper)
    for _ in range(100):
        middle = 0.5 * (low + high)
        below = _mean_t(middle, epsilon) < target
        low = np.where(below, middle, low)
        high = np.where(below, high, middle)
    result = sigma * 0.5 * (low + high)
    result[norms == radius] = radius
    result[norms == 0] = 0.0
    return result


def paper_rejection_sigma(radius, epsilon, delta0=None):
    """Sigma of the paper's construction: the smallest with window probability >= 1 - delta0.

    ``window_probability(r / sigma, eps)`` decreases in ``r / sigma``; the largest ``s`` with
    probability at least ``1 - delta0`` is found by bisection and ``sigma = r / s``.
    Default ``delta0 = tanh(eps / 2)``.

    Examples
    --------
    >>> round(paper_rejection_sigma(1.0, 1.0), 4)
    1.5486
    """
    if delta0 is None:
        delta0 = math.tanh(epsilon / 2)
    target = 1.0 - delta0
    low, high = 0.0, 1.0
    while window_probability(high, epsilon) >= target:
        low, high = high, 2 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        if window_probability(middle, epsilon) >= target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-14 * high:
            break
    return radius / low


def optimal_rejection_sigma(radius, epsilon):
    """Sigma minimizing the per-user variance ``alpha / kappa^2`` of the largest column.

    ``alpha / kappa^2 = r^2 / (2 E[t h(t)]^2)`` depends on ``s = r / sigma`` only; the
    maximizer of ``E[t h(t)]`` is found by a golden-section search on ``log s``.

    Examples
    --------
    >>> round(optimal_rejection_sigma(1.0, 1.0) / paper_rejection_sigma(1.0, 1.0), 2)
    2.77
    """

    def gain(log_s):
        s = math.exp(log_s)
        _, kappa, _, _ = rejection_moments(np.array([s]), 1.0, epsilon)
        return float(kappa[0]) * s  # = E[t h(t)] with sigma = 1, ||a|| = s

    low, high = math.log(1e-3), math.log(1e2)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    left, right = high - ratio * (high - low), low + ratio * (high - low)
    gain_left, gain_right = gain(left), gain(right)
    while high - low > 1e-10:
        if gain_left < gain_right:
            low, left, gain_left = left, right, gain_right
            right = low + ratio * (high - low)
            gain_right = gain(right)
        else:
            high, right, gain_right = right, left, gain_left
            left = high - ratio * (high - low)
            gain_left = gain(left)
    return radius / math.exp(0.5 * (low + high))


@register
class GaussianRejectionMechanism(_VectorReportMechanism):
    """Bassily's pure eps-LDP randomizer: a Gaussian draw kept by rejection sampling.

    A user of type ``u`` draws ``v ~ N(0, sigma^2 I_d)`` and keeps it with probability
    ``exp(L) / 2`` if the privacy loss ``L = (2 <a_u, v> - ||a_u||^2) / (2 sigma^2)`` lies in
    ``[-eps/2, eps/2]``, else with probability ``1/2``. A kept report is ``v``; a dropped one
    ("bottom") is a row of NaN. The estimate ``(A diag(kappa))^+ T`` is exactly unbiased (see
    the module docstring).

    With ``columns="equalized"`` a user of type ``u`` plugs ``a_u m_u / ||a_u||`` into the
    sampler instead of ``a_u`` (:func:`equalized_norms`), chosen so that ``kappa`` is the same
    for every type: ``E[T] = lambda A x``, and every workload in the row space of ``A`` is
    supported. With raw columns, ``kappa`` decreases with the column norm and the supported
    row space is that of ``A diag(kappa)``, which differs from that of ``A`` when ``A`` is rank
    deficient and its columns have different norms; raw columns have the smaller variance
    when both are possible (columns of smaller norm keep more signal).

    Parameters
    ----------
    n_inputs : int
        Domain size ``n``.
    epsilon : float in (0, 2 ln 2]
        The acceptance probabilities ``e^{+-eps/2} / 2`` must be at most 1.
    workload : array of shape (d, n), Workload or None, default=None
        The matrix ``A`` (default: the identity).
    calibration : {"optimal", "paper"}, default="optimal"
        How sigma is chosen; privacy does not depend on it (``P(bottom) = 1/2`` exactly).
        ``"optimal"``: least variance for the largest column; ``"paper"``: the paper's
        construction with ``delta_0 = tanh(eps/2)`` (several times more variance).
    columns : {"auto", "raw", "equalized"}, default="auto"
        ``"auto"`` resolves (and is stored as) ``"raw"`` when ``A`` has full column rank or
        all its nonzero columns have the same norm (the two row spaces agree), else
        ``"equalized"``.

    Attributes
    ----------
    sigma : float
    kappa, alpha, beta : ndarray of shape (n,)
        Exact moments of one report per type, relative to the column ``a_u``:
        ``E[r] = kappa a``, ``E[r r^T] = alpha I + beta a a^T`` (``P(keep) = 1/2``).
    effective_norms : ndarray of shape (n,)
        Norm of the vector each type plugs into the sampler.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = GaussianRejectionMechanism(3, 1.0)
    >>> reports = mechanism.randomize(np.array([0, 1, 2, 2]), np.random.default_rng(0))
    >>> reports.shape
    (4, 3)
    >>> statistic = mechanism.aggregate(reports)
    >>> mechanism.n_reports(statistic), mechanism.estimate(statistic).shape
    (4, (3,))
    """

    kind = "gaussian_pure"
    CALIBRATIONS = ("optimal", "paper")

    COLUMNS = ("auto", "raw", "equalized")

    def __init__(self, n_inputs, epsilon, workload=None, calibration="optimal", columns="auto"):
        if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool) and (
            float(epsilon) > MAX_REJECTION_EPSILON
        ):
            raise ValueError(
                f"epsilon={epsilon!r} is too large for the rejection-sampling randomizer: it "
                f"needs epsilon <= 2 ln 2 = {MAX_REJECTION_EPSILON:.6f} (the acceptance "
                "probability e^(epsilon/2)/2 must not exceed 1). Use a smaller epsilon, or the "
                "'gaussian' mechanism with a delta."
            )
        self.epsilon = check_epsilon(epsilon)
        if calibration not in self.CALIBRATIONS:
            raise ValueError(f"calibration must be one of {self.CALIBRATIONS}, got "
                             f"{calibration!r}.")
        self.calibration = calibration
        if columns not in self.COLUMNS:
            raise ValueError(f"columns must be one of {self.COLUMNS}, got {columns!r}.")
        self._setup_workload(n_inputs, workload)
        self.name = "gaussian_pure"
        if columns == "auto":
            nonzero = self.column_norms[self.column_norms > 0]
            equal = np.all(np.abs(nonzero - self.radius) <= 1e-12 * self.radius)
            columns = "raw" if equal or _MinimumNorm(self.A).null_space_dim == 0 else "equalized"
        self.columns = columns
        if calibration == "paper":
            self.delta0 = math.tanh(self.epsilon / 2)
            self.sigma = paper_rejection_sigma(self.radius, self.epsilon, self.delta0)
        else:
            self.delta0 = None
            self.sigma = optimal_rejection_sigma(self.radius, self.epsilon)
        if columns == "equalized":
            self.effective_norms = equalized_norms(self.column_norms, self.sigma, self.epsilon)
        else:
            self.effective_norms = self.column_norms.copy()
        self.p_keep, kappa, self.alpha, beta = rejection_moments(
            self.effective_norms, self.sigma, self.epsilon)
        # Moments relative to a_u: the sampler sees a_u scaled by m_u / ||a_u||.
        ratio = self.effective_norms / np.where(self.column_norms > 0, self.column_norms, 1.0)
        self.kappa = kappa * ratio
        self.beta = beta * ratio**2
        self._effective = np.ascontiguousarray((self.A * ratio[None, :]).T)  # rows: plugged in
        self._solver_cache = None

    def _scalar_params(self):
        return {"calibration": self.calibration, "columns": self.columns}

    @property
    def _solver(self):
        if self._solver_cache is None:
            self._solver_cache = _MinimumNorm(self.A * self.kappa[None, :])  # B = A diag(kappa)
        return self._solver_cache

    def keep_probability(self, indices, draws):
        """Probability that users of types ``indices`` keep their draws ``v`` (rows).

        ``exp(L) / 2`` inside the window ``|L| <= eps/2``, ``1/2`` outside; always within
        ``[e^{-eps/2} / 2, e^{eps/2} / 2]``.
        """
        columns = self._effective[indices]
        loss = (2.0 * np.einsum("ij,ij->i", columns, draws)
                - self.effective_norms[indices] ** 2)
        loss /= 2.0 * self.sigma**2
        inside = np.abs(loss) <= self.epsilon / 2
        return np.where(inside, 0.5 * np.exp(np.clip(loss, -self.epsilon, self.epsilon)), 0.5)

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Kept draws as rows of an ``(N, d)`` float64 array; dropped users are NaN rows."""
        indices = check_type_indices(indices, self.n_inputs)
        reports = rng.standard_normal((indices.shape[0], self.n_queries))
        reports *= self.sigma
        for rows in chunks(indices.shape[0], RANDOMIZE_CHUNK):
            keep = rng.random(rows.stop - rows.start) < self.keep_probability(
                indices[rows], reports[rows])
            reports[rows][~keep] = np.nan
        return reports

    # ------------------------------------------------------------------ server side
    def check_reports(self, reports):
        """Reports as an ``(N, d)`` float array whose rows are finite or entirely NaN."""
        reports = self._check_report_shape(reports)
        for rows in chunks(reports.shape[0]):
            block = reports[rows]
            missing = np.isnan(block)
            dropped = missing.all(axis=1)
            if np.any(missing.any(axis=1) & ~dropped) or np.any(np.isinf(block)):
                raise ValueError(
                    f"reports of the {self.kind!r} mechanism are finite vectors or rows of NaN "
                    "(a dropped report); found a row with some NaN or infinite entries."
                )
        return reports

    def aggregate(self, reports):
        """``[sum of kept reports (d), number kept, N]`` as float64 (additive over chunks)."""
        reports = self.check_reports(reports)
        total = np.zeros(self.n_queries)
        kept = 0
        for rows in chunks(reports.shape[0]):
            block = reports[rows]
            keep = ~np.isnan(block[:, 0]) if self.n_queries else np.ones(block.shape[0], bool)
            total += block[keep].sum(axis=0)
            kept += int(keep.sum())
        return np.concatenate([total, [float(kept), float(reports.shape[0])]])

    def n_kept(self, statistic):
        """Number of kept (non-bottom) reports in ``statistic``."""
        return int(round(float(statistic[-2])))

    def estimate(self, statistic):
        """``x_hat = (A diag(kappa))^+ T``: exactly unbiased on the supported row space."""
        statistic = self._check_statistic(statistic, 2)
        return self._solver.solve(statistic[:-2])

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of ``[T, K, N]`` with one scalar draw per kept user (not one vector).

        Along ``a_u/||a_u||`` a kept draw has density ``h(t) phi(t)`` (times ``sigma``): with
        probability ``P_a(G)/2`` a normal ``N(s, 1)`` truncated to the window, with
        probability ``(1 - P_0(G))/2`` a standard normal truncated to the two tails; the
        component orthogonal to ``a_u`` is ``N(0, sigma^2 (I - a a^T/||a||^2))`` whatever
        happens, so the sum of ``K_u`` of them is one Gaussian draw per type. Categories
        (window, tails, dropped) are multinomial per type; truncated normals are drawn by
        inverse CDF. Memory: ``O(n d)`` plus the kept scalars in blocks.
        """
        counts = check_type_counts(type_counts, self.n_inputs)
        positive = self.effective_norms > 0
        s = np.where(positive, self.effective_norms / self.sigma, 1.0)
        low, high = _window(s, self.epsilon)
        in_mass = special.ndtr(high - s) - special.ndtr(low - s)  # P_a(G)
        lower_tail, upper_tail = special.ndtr(low), special.ndtr(-high)  # P_0(G^c) parts
        probabilities = np.stack([0.5 * in_mass, 0.5 * (lower_tail + upper_tail)], axis=1)
        probabilities[~positive] = [0.5, 0.0]  # zero column: kept w.p. 1/2, v ~ N(0, sigma^2 I)
        probabilities = np.column_stack([probabilities, 1.0 - probabilities.sum(axis=1)])
        categories = rng.multinomial(counts, np.clip(probabilities, 0.0, 1.0))
        in_window = np.where(positive, categories[:, 0], 0)
        in_tails = categories[:, 1]
        kept = categories[:, 0] + categories[:, 1]
        along = np.zeros(self.n_inputs)  # sum of t over the kept users of each type
        for start, stop in _scalar_blocks(in_window + in_tails):
            types = np.arange(start, stop)
            owners = np.repeat(types, in_window[types])
            lo = special.ndtr(low[owners] - s[owners])
            hi = special.ndtr(high[owners] - s[owners])
            uniform = 1.0 - rng.random(owners.size)  # in (0, 1]: ndtri stays finite
            draws = s[owners] + special.ndtri(lo + uniform * (hi - lo))
            along += np.bincount(owners, weights=draws, minlength=self.n_inputs)
            # Standard normal restricted to (-inf, low] U [high, inf), by inverse CDF.
            owners = np.repeat(types, in_tails[types])
            below, above = lower_tail[owners], upper_tail[owners]
            pick = (1.0 - rng.random(owners.size)) * (below + above)
            upper = np.clip(pick - below, np.finfo(float).tiny, above)
            draws = np.where(pick <= below, special.ndtri(np.minimum(pick, below)),
                             -special.ndtri(upper))
            along += np.bincount(owners, weights=draws, minlength=self.n_inputs)
        # Orthogonal parts, all kept users of a type at once (for zero columns: the whole
        # N(0, sigma^2 I) draws, nothing is removed).
        noise = rng.standard_normal((self.n_inputs, self.n_queries))
        noise *= (self.sigma * np.sqrt(kept))[:, None]
        unit = self._effective / np.where(positive, self.effective_norms, 1.0)[:, None]
        noise -= unit * np.sum(noise * unit, axis=1, keepdims=True)
        T = self.sigma * (along @ unit) + noise.sum(axis=0)
        return np.concatenate([T, [float(kept.sum()), float(counts.sum())]])

    # ------------------------------------------------------------------ analysis
    def per_user_variance(self, gram):
        """``z_u = alpha_u ||W B^+||_F^2 + (beta_u - kappa_u^2) ||W B^+ a_u||^2``."""
        gram = np.asarray(gram, dtype=float)
        pinv = self._solver.pinv  # B^+, n x d
        frobenius = float(np.sum((gram @ pinv) * pinv))
        mapped = pinv @ self.A  # B^+ A, n x n
        along = np.sum((gram @ mapped) * mapped, axis=0)  # ||W B^+ a_u||^2
        return self.alpha * frobenius + (self.beta - self.kappa**2) * along

    def query_variance(self, workload_matrix):
        """``z[i, u] = alpha_u ||c_i||^2 + (beta_u - kappa_u^2) (c_i . a_u)^2``, ``c = W B^+``."""
        W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
        coefficients = W @ self._solver.pinv  # p x d
        norms = np.sum(coefficients**2, axis=1)
        along = (coefficients @ self.A) ** 2  # p x n
        return norms[:, None] * self.alpha[None, :] + along * (self.beta - self.kappa**2)


def _scalar_blocks(per_type, block=2**20):
    """Ranges of types whose total number of scalar draws stays near ``block``."""
    bounds = np.searchsorted(np.cumsum(per_type), np.arange(block, int(per_type.sum()), block))
    edges = np.unique(np.concatenate([[0], bounds + 1, [per_type.shape[0]]]))
    edges = np.minimum(edges, per_type.shape[0])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]
