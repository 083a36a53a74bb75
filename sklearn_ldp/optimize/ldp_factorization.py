"""Optimize an LDP strategy for a workload (MMMM20, Algorithm 2, with a better step rule).

We minimize the average-case objective ``L(Q) = tr[(Q^T D^-1 Q)^-1 W^T W]`` over strategies
``Q`` whose rows lie in ``[z_o, e^eps z_o]`` and whose columns are probability vectors, by
projected gradient descent with the analytic gradient

    grad L = -2 D^-1 Q Y + s 1^T,   Y = M^-1 W^T W M^-1,  M = Q^T D^-1 Q,
    s_o = (D^-1 Q Y Q^T D^-1)_oo.

Differences from the authors' code, and why:

* The step is the spectral (Barzilai-Borwein) step with a non-monotone backtracking line
  search (spectral projected gradient, Birgin-Martinez-Raydan), instead of a fixed step
  halved every 50 iterations after a grid search. It adapts to the workload's scale, needs no
  tuning runs, and nearly every iteration costs one evaluation. Measured on Prefix n = 128,
  eps = 1: worst case 1605-1614 after <= 1000 iterations (about 3.5 s) for seeds 0-4, versus
  1617-1643 with a monotone search and 1910.87 for the authors' code.
* The row bounds ``z`` stay fixed at their starting value ``(1 + e^-eps) / 2m``, so the
  problem is a plain projected-gradient problem on a fixed convex set. The authors' heuristic
  for moving them was implemented and measured, and removed: on Prefix n = 128, eps = 1,
  seeds 0-4 it ended at 1830-1983 (1690 median with a monotone search) against 1608-1614
  with fixed bounds.
* The strategy is stored transposed (one row per user type), so the projection and the
  matrix products run over contiguous memory; the value is computed from a Cholesky factor
  and the gradient only for accepted iterates (see :class:`AverageCaseObjective`).
* The best iterate is chosen by the *worst-case* variance ``max_u z_u``, the quantity the
  user cares about (the average case is only the smooth surrogate that is optimized). It is
  free: ``z = Q^T s - diag(W^T W)`` falls out of the gradient computation. The surrogate is
  close: at n = 128, eps = 1 the final worst case is 0.3% (all-range) and 1.2% (prefix)
  above the average case, which bounds what optimizing the worst case directly could gain.
* Up to ``SINGLE_THREAD_MAX_CELLS`` cells the BLAS runs on one thread (threadpoolctl, when
  installed; scikit-learn depends on it). Each call is small there, and on a machine shared
  with other jobs the threads of OpenBLAS wait on each other: measured on the 2-core
  machine at load 10, seconds per iteration on prefix with one thread / the default two:
  0.016 / 0.29 (n = 64), 0.062 / 0.71 (128), 0.22 / 1.6 (256), 1.3 / 3.5 (512). On an idle
  machine one thread costs at most the parallel speed-up (at most 2x on 2 cores).
* The time budget holds inside iterations, not only between them: before each projection
  with its objective (a line-search trial) and before each gradient, the run stops if that
  step, at the longest it has taken so far, would end past ``max_seconds`` (the start's own
  evaluation always runs). Checked only between iterations, a run whose line search
  backtracks overshoots by up to ``MAX_BACKTRACKS`` evaluations.
* The strategy optimizer does not guarantee beating the closed-form strategies (it finds a
  local optimum of the surrogate with ``m`` outputs, where subset selection has ``C(n, k)``);
  ``strategy="optimized"`` gets that guarantee from the selection layer, which compares the
  optimizer's strategy with every closed form and returns the better.

Pure numpy/scipy; no scikit-learn here.
"""

import contextlib
import dataclasses
import time

import numpy as np
from scipy.linalg import blas, lapack

try:
    from threadpoolctl import threadpool_limits
except ImportError:  # pragma: no cover - installed with scikit-learn
    threadpool_limits = None

from .._logging import get_logger
from .._validation import check_epsilon, check_positive_int, check_random_state
from .projection import project_rows_by_newton

NONMONOTONE_MEMORY = 10
SUFFICIENT_DECREASE = 1e-4
MAX_BACKTRACKS = 40  # halvings before declaring a stationary point
# Up to this many cells the optimizer's BLAS calls run on one thread (module docstring).
SINGLE_THREAD_MAX_CELLS = 512
# Default wall-clock budget (seconds) of one optimizer run and of strategy="optimized".
DEFAULT_MAX_SECONDS = 30.0


def limit_blas_threads(n):
    """Context that keeps the BLAS on one thread for small problems (module docstring)."""
    if threadpool_limits is None or n > SINGLE_THREAD_MAX_CELLS:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def cubic_seconds(n):
    """Seconds that ``n^3`` floating-point operations of dense BLAS take now on this machine.

    Measured on two ``256 x 256`` products through scipy's BLAS (about 70 ms under load), so
    it follows the machine's current load: the unit in which the selection layer predicts
    the dense steps it may not have time for. For the objective of the optimizer at ``m = 4n``
    outputs, one value, one gradient and the factorization of ``W^T W`` each took about one
    unit at 1,260 cells on the loaded 2-core machine (``benchmarks/bench_optimizer.py``).

    Parameters
    ----------
    n : int
        The size of the cube.

    Returns
    -------
    float
        Predicted seconds for ``n^3`` operations at the measured rate.

    Examples
    --------
    >>> bool(cubic_seconds(100) > 0)
    True
    """
    size = 256
    matrix = np.random.default_rng(0).random((size, size))
    blas.dgemm(1.0, matrix, matrix)  # warm the thread pool
    began = time.perf_counter()
    blas.dgemm(1.0, matrix, matrix)
    blas.dgemm(1.0, matrix, matrix)
    rate = 4.0 * size**3 / max(time.perf_counter() - began, 1e-9)
    return float(n) ** 3 / rate


@dataclasses.dataclass(eq=False, repr=False)
class OptimizationResult:
    """What :func:`optimize_strategy` returns.

    Attributes
    ----------
    Q : ndarray of shape (m, n)
        Best strategy found (by worst-case variance).
    worst_case, average_case : float
        Per-user worst-case and average-case variance of ``Q`` with the optimal reconstruction.
    n_iter : int
        Iterations run.
    converged : bool
        Whether the relative-improvement tolerance was met before ``max_iter``.
    history : list of dict
        Per iteration: ``objective`` (``L(Q)``), ``worst_case``, ``average_case``, ``step``,
        ``n_outputs``, ``seconds`` since the start.
    stopped_by_budget : bool
        Whether the run stopped because its next step would have ended past ``max_seconds``.
    """

    # The fields are __init__'s parameters, in order; identity equality and the short repr
    # below are kept (eq=False, repr=False).
    Q: np.ndarray
    worst_case: float
    average_case: float
    n_iter: int
    converged: bool
    history: list
    stopped_by_budget: bool = False

    def __repr__(self):
        return (
            f"OptimizationResult(shape={self.Q.shape}, worst_case={self.worst_case:.6g}, "
            f"average_case={self.average_case:.6g}, n_iter={self.n_iter}, "
            f"converged={self.converged})"
        )


class AverageCaseObjective:
    """``L(Q) = tr[(Q^T D^-1 Q)^-1 G]`` and its gradient, evaluated in two phases.

    The line search only needs the value; the gradient (twice the work) is computed only for
    accepted iterates. With a factor ``G = R R^T`` and the Cholesky factor ``M = U^T U``:

        L = ||U^-T R||_F^2,     Y = M^-1 G M^-1 = B B^T with B = U^-1 U^-T R.

    Every dense product goes through scipy's BLAS/LAPACK wrappers, none through numpy's:
    the two libraries ship separate OpenBLAS builds, and alternating between them makes
    their thread pools fight over the cores (measured: 15x slower per evaluation at n = 128,
    15% slower at n = 1024). The symmetric products use ``syrk``/``symm``, half a ``gemm``.

    Parameters
    ----------
    gram : array of shape (n, n)
        ``W^T W``; factored once here (Cholesky, or eigendecomposition when singular).
    """

    def __init__(self, gram):
        self.gram = np.asarray(gram, dtype=float)
        self.gram_diagonal = np.diag(self.gram).copy()
        factor, info = lapack.dpotrf(self.gram, lower=1, clean=1)
        if info != 0:  # singular Gram (e.g. marginals): keep the positive eigen-directions
            values, vectors = np.linalg.eigh(self.gram)
            keep = values > values.max() * 1e-12
            factor = vectors[:, keep] * np.sqrt(values[keep])
        self.factor = np.asfortranarray(factor)  # R with G = R R^T, shape (n, rank)

    def value(self, Qt):
        """Objective at ``Q = Qt.T``, with what the gradient needs; None if ``M`` is singular."""
        row_sums = Qt.sum(axis=0)
        if np.any(row_sums <= 0):
            return None
        inverse_root = 1.0 / np.sqrt(row_sums)
        scaled = Qt * inverse_root  # (D^-1/2 Q)^T, C-ordered (n, m)
        M = blas.dsyrk(1.0, scaled.T, trans=1)  # upper triangle of Q^T D^-1 Q
        U, info = lapack.dpotrf(M, lower=0, overwrite_a=1)
        if info != 0:
            return None
        A, info = lapack.dtrtrs(U, self.factor, lower=0, trans=1)  # U^-T R
        objective = float(np.einsum("ij,ij->", A, A))
        if info != 0 or not np.isfinite(objective) or objective <= 0:
            return None
        return _Evaluation(Qt, objective, scaled, inverse_root, U, A)

    def gradient(self, evaluation):
        """Fill in the gradient (transposed, ``(n, m)``) and the per-user variances."""
        B, _ = lapack.dtrtrs(evaluation.U, evaluation.A, lower=0)  # M^-1 R
        Y = blas.dsyrk(1.0, B)  # upper triangle of M^-1 G M^-1
        # Work with D^-1/2 Q (kept from value()) and rescale once: saves a pass over (n, m).
        Pt = blas.dsymm(1.0, Y, evaluation.scaled.T, side=1).T  # (D^-1/2 Q Y)^T
        root = evaluation.inverse_root
        s = np.einsum("uo,uo->o", Pt, evaluation.scaled) * root**2  # ||V*_{:,o}||^2
        Pt *= -2.0 * root
        Pt += s
        evaluation.gradient = Pt  # s 1^T - 2 D^-1 Q Y, transposed
        evaluation.per_user = blas.dgemv(1.0, evaluation.Qt.T, s, trans=1) - self.gram_diagonal
        return evaluation


@dataclasses.dataclass(eq=False, repr=False)
class _Evaluation:
    """One point of the optimization: the iterate, its objective and cached factors."""

    Qt: np.ndarray
    objective: float
    scaled: np.ndarray
    inverse_root: np.ndarray
    U: np.ndarray
    A: np.ndarray
    gradient: np.ndarray = dataclasses.field(default=None, init=False)
    per_user: np.ndarray = dataclasses.field(default=None, init=False)


def _inner(a, b):
    """Frobenius inner product through scipy's BLAS (see AverageCaseObjective)."""
    return float(blas.ddot(a.ravel(), b.ravel()))


def _random_start(n, m, epsilon, rng):
    """Uniform random matrix projected onto the feasible set with ``z = (1 + e^-eps) / 2m``."""
    z = np.full(m, (1.0 + np.exp(-epsilon)) / (2.0 * m))
    Rt = rng.random((n, m))
    return _project(Rt, z, epsilon), z


def _project(Rt, z, epsilon):
    return project_rows_by_newton(Rt, z, np.exp(epsilon) * z)


class _Budget:
    """The wall-clock budget of one run: a step is started only if, at the longest that kind
    of step has taken so far, it ends before the deadline."""

    def __init__(self, max_seconds):
        self.start = time.perf_counter()
        self.deadline = np.inf if max_seconds is None else self.start + max_seconds
        self.longest = {}

    def elapsed(self):
        return time.perf_counter() - self.start

    def allows(self, kind):
        return time.perf_counter() + self.longest.get(kind, 0.0) <= self.deadline

    def run(self, kind, function, *args):
        """``function(*args)``, its duration recorded under ``kind``."""
        began = time.perf_counter()
        result = function(*args)
        self.longest[kind] = max(self.longest.get(kind, 0.0), time.perf_counter() - began)
        return result


def _line_search(objective_function, Qt, current, step, reference, z, epsilon, budget):
    """Non-monotone Armijo backtracking from ``Qt`` along the projected gradient.

    Returns ``(status, candidate_Qt, candidate, fraction, slope, difference)`` with status
    "accepted", "stationary" (no step of ``MAX_BACKTRACKS`` halvings makes progress) or
    "budget" (the next trial would end past the deadline).
    """
    def trial(fraction):
        candidate_Qt = _project(Qt - fraction * step * current.gradient, z, epsilon)
        return candidate_Qt, objective_function.value(candidate_Qt)

    for attempt in range(MAX_BACKTRACKS):
        if not budget.allows("trial"):
            return "budget", None, None, None, None, None
        fraction = 0.5**attempt
        candidate_Qt, candidate = budget.run("trial", trial, fraction)
        difference = candidate_Qt - Qt
        slope = _inner(current.gradient, difference)  # directional derivative (negative)
        if candidate is not None and (
            candidate.objective <= reference + SUFFICIENT_DECREASE * slope
        ):
            return "accepted", candidate_Qt, candidate, fraction, slope, difference
    return "stationary", None, None, None, None, None


def optimize_strategy(
    gram,
    epsilon,
    n_outputs=None,
    init="random",
    max_iter=1000,
    tol=1e-6,
    max_seconds=DEFAULT_MAX_SECONDS,
    random_state=None,
    verbose=0,
):
    """Find an epsilon-LDP strategy with low variance on the workload with Gram ``gram``.

    Parameters
    ----------
    gram : array of shape (n, n)
        ``W^T W`` of the workload.
    epsilon : float
    n_outputs : int, optional
        Number of outputs ``m`` of the strategy (default ``4 n``, the paper's sweet spot).
        Ignored when ``init`` is a matrix.
    init : "random" or array of shape (m, n)
        Random feasible start, or a starting strategy (e.g. the best baseline), which must be
        epsilon-LDP and column-stochastic.
    max_iter : int
        Iteration cap.
    tol : float
        Stop when the objective improved by less than ``tol`` (relative) over 20 iterations.
    max_seconds : float or None, default=DEFAULT_MAX_SECONDS (30)
        Wall-clock budget from the call, kept inside iterations: no line-search trial or
        gradient is started that would end past it (judged by the longest such step so far),
        so the run ends within the budget plus the error of that estimate; the start's own
        evaluation always runs. The best iterate so far is returned
        (``stopped_by_budget``). None: no limit.
    random_state : int, numpy Generator or None
    verbose : int
        Log progress (iteration, objective, worst case, elapsed seconds) every
        ``max(1, 100 // verbose)`` iterations, and why the run stopped, when > 0, to the
        logger ``"sklearn_ldp.optimize"`` (INFO; shown on stderr if logging is not
        configured).

    Returns
    -------
    OptimizationResult

    Examples
    --------
    >>> import numpy as np
    >>> result = optimize_strategy(np.eye(8), 1.0, max_iter=50, random_state=0)
    >>> result.Q.shape[1], bool(result.worst_case < 27.12)   # beats randomized response
    (8, True)
    """
    budget = _Budget(None if max_seconds is None else float(max_seconds))
    gram = np.asarray(gram, dtype=float)
    with limit_blas_threads(gram.shape[0] if gram.ndim == 2 else 0):
        return _optimize_strategy(gram, epsilon, n_outputs, init, max_iter, tol, budget,
                                  random_state, verbose)


def _optimize_strategy(gram, epsilon, n_outputs, init, max_iter, tol, budget, random_state,
                       verbose):
    """The body of :func:`optimize_strategy` (run with the BLAS threads limited)."""
    epsilon = check_epsilon(epsilon)
    logger = get_logger("optimize", verbose)
    n = gram.shape[0]
    max_iter = check_positive_int(max_iter, "max_iter")
    rng = np.random.default_rng(check_random_state(random_state))
    if isinstance(init, str):
        if init != "random":
            raise ValueError(f"init must be 'random' or a strategy matrix, got {init!r}.")
        m = 4 * n if n_outputs is None else check_positive_int(n_outputs, "n_outputs", 2)
        Qt, z = _random_start(n, m, epsilon, rng)
    else:
        Qt = np.array(init, dtype=float).T
        if Qt.shape[0] != n:
            raise ValueError(f"init has {Qt.shape[0]} columns, the workload {n}.")
        Qt = Qt[:, Qt.max(axis=0) > 0]
        z = Qt.min(axis=0)
    objective_function = AverageCaseObjective(gram)

    current = budget.run("trial", objective_function.value, Qt)
    if current is None:
        raise ValueError(
            "the starting strategy cannot answer the workload (Q^T D^-1 Q is singular)."
        )
    budget.run("gradient", objective_function.gradient, current)
    best = (float(current.per_user.max()), Qt, float(current.per_user.mean()))
    history = []
    recent = [current.objective]  # objectives of accepted iterates
    step = 1e-3 / (Qt.shape[1] * max(np.abs(current.gradient).max(), 1e-300))
    for iteration in range(1, max_iter + 1):
        # Non-monotone Armijo test (Grippo-Lampariello-Lucidi, as in spectral projected
        # gradient): compare with the worst of the last NONMONOTONE_MEMORY objectives, so
        # that most spectral steps are accepted at the first try.
        reference = max(recent[-NONMONOTONE_MEMORY:])
        status, candidate_Qt, candidate, fraction, slope, difference = _line_search(
            objective_function, Qt, current, step, reference, z, epsilon, budget)
        if status == "accepted" and not budget.allows("gradient"):
            status = "budget"  # the accepted point's worst case needs its gradient
        if status != "accepted":
            break
        budget.run("gradient", objective_function.gradient, candidate)
        # Barzilai-Borwein step for the next iteration.
        curvature = _inner(difference, candidate.gradient) - slope
        if curvature > 0:
            step = _inner(difference, difference) / curvature
        else:
            step = fraction * step  # negative curvature: keep the step that worked
        Qt, current = candidate_Qt, candidate
        recent.append(current.objective)
        worst = float(current.per_user.max())
        if worst < best[0]:
            best = (worst, Qt, float(current.per_user.mean()))
        elapsed = budget.elapsed()
        history.append(
            {
                "objective": current.objective,
                "worst_case": worst,
                "average_case": float(current.per_user.mean()),
                "step": float(step),
                "seconds": elapsed,
            }
        )
        if verbose and iteration % max(1, 100 // verbose) == 0:
            logger.info("iteration %d  objective %.6g  worst-case %.6g  best %.6g  %.2f s",
                        iteration, current.objective, worst, best[0], elapsed)
        if len(recent) > 20 and min(recent[:-20]) - min(recent[-20:]) <= tol * min(recent):
            status = "converged"
            break
    else:
        status = "max_iter"
    reasons = {"converged": f"converged (tol={tol:g})",
               "stationary": "no step makes progress (a stationary point)",
               "budget": "stopped by the time budget",
               "max_iter": f"reached max_iter={max_iter}"}
    logger.info("%s after %d iterations, %.2f s: best worst-case %.6g", reasons[status],
                len(history), budget.elapsed(), best[0])
    worst, Qt, average = best
    return OptimizationResult(np.ascontiguousarray(Qt.T), worst, average, len(history),
                              status in ("converged", "stationary"), history,
                              stopped_by_budget=status == "budget")
