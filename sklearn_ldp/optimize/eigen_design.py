r"""Eigen-Design (Li & Miklau, PVLDB 2012): a central-model strategy adapted to the workload.

Everything here is in units where the strategy has L2 sensitivity 1 (its largest column norm
is 1) and the noise has variance 1 per measurement: the total squared error of a strategy
``A`` on the workload ``W`` is then

    err(A) = ||A||_2^2 tr(W^T W (A^T A)^+),   ||A||_2 = max column L2 norm (not spectral),

which is invariant to scaling ``A``; multiply by the squared noise multiplier of the Gaussian
calibration (``sigma / sensitivity``) to get counts squared (see
:mod:`sklearn_ldp.mechanisms.central.matrix`). Only ``W^T W`` matters, so every function takes
either
the workload (a matrix, or a structured :class:`~sklearn_ldp.workloads.Workload`, used
through its Gram operator and never as a ``p x n`` matrix) or its Gram matrix (dense or an
operator).

Cost at scale: the eigen-queries of the prefix and all-range Grams are closed-form sine bases
(``O(n^2)`` instead of an ``O(n^3)`` eigendecomposition, see
:func:`~sklearn_ldp._strategy_error.closed_form_eigensystem`); the rest is Program 1 and a
few ``O(n^3)`` dense products and factorizations (the strategy's ``A^T A``, its Cholesky
factor, the error), which :mod:`benchmarks/bench_eigen.py` (``--scale``) times up to
``n = 4096``.

Algorithm (Program 2 of the paper)
----------------------------------
1. Eigen-queries: ``W^T W = Q^T D Q``; the rows ``q_i`` of ``Q`` with a non-zero eigenvalue
   ``lambda_i`` are the design queries. Zero-eigenvalue queries are dropped: they carry no
   workload and an interior-point solver would give them weight that wastes sensitivity.
2. Program 1 on this design: choose weights ``u_i >= 0`` minimizing ``sum_i lambda_i / u_i``
   subject to ``sum_i u_i q_ij^2 <= 1`` for every cell ``j`` (the squared sensitivity of
   ``diag(sqrt(u)) Q``). The paper writes it as an SDP with 2x2 blocks ``[[u_i, 1], [1, v_i]]
   >= 0``; that constraint is ``u_i v_i >= 1``, so it is this SOCP, solved with cvxpy and an
   open-source conic solver (Clarabel by default, SCS as the alternative).
3. ``A' = diag(sqrt(u)) Q``.
4.-5. Column completion: one extra query ``sqrt(s - ||a'_j||^2) e_j`` for each cell ``j``
   whose column is shorter than the largest one ``s``. The sensitivity is unchanged and
   ``A^T A`` only grows, so the error can only drop.

Speed-ups (section 5.3 of the paper), chosen with ``speedup=``
--------------------------------------------------------------
* ``"separation"``: eigen-queries sorted by eigenvalue are cut into groups of ``group_size``;
  Program 1 runs on each group alone, then a second Program 1 chooses one scale per group
  (variables: the groups; design rows: each group's weighted squared columns).
* ``"principal"``: the ``n_principal`` largest eigen-queries get their own weight, the rest
  share one scale ``t``. ``tail="flat"`` is the paper (``u_i = t`` for every tail query);
  ``tail="sqrt"`` (our default) gives the tail the profile ``u_i = t sqrt(lambda_i /
  lambda_k)`` of the singular-value-bound strategy, which costs nothing and is far better:
  on all-range ``n = 1024`` the ratio to the bound is 1.030 with 2 % principal vectors (the
  full Program 1 gives 1.030 in 40 s) against 1.147 for the flat tail with 10 %.
* ``"auto"``: the full program up to 256 eigen-queries, else ``"principal"``.

Going beyond the paper
----------------------
:func:`refine_strategy` runs a few L-BFGS steps on the exact error over all strategies with
unit column norms (``A = B diag(1 / ||b_j||)``, a smooth unconstrained parameterization that
loses nothing: completing columns never hurts). On the Figure 1 workload Eigen-Design is at
1.0373 x the bound and 5 steps reach 1.0059, the exact optimum (an SDP, see
:func:`optimal_error`) being 1.00583.

Pure numpy/scipy plus cvxpy (imported when Program 1 is first solved).
"""

import math
import time
import warnings

import numpy as np
from scipy import linalg, optimize

from .._strategy_error import (
    ZERO_EIGENVALUE_RTOL,
    _clean_spectrum,
    _full_inverse,
    _gram,
    _trace_term,
    _workload_and_gram,
    canonical_sign_flips,
    query_matrix,
)
from .._strategy_error import singular_value_bound as singular_value_bound
from .._strategy_error import strategy_error as strategy_error

SPEEDUPS = ("auto", "none", "separation", "principal")
TAILS = ("sqrt", "flat")
ROW_SCALINGS = ("none", "unit")
# Beyond this many eigen-queries "auto" leaves the full Program 1 (about 1 s at 256 on two
# cores, 40 s at 1024) for the principal-vectors speed-up.
AUTO_FULL_LIMIT = 256
# Default cap on the principal vectors with the "sqrt" tail (see eigen_design).
MAX_SQRT_TAIL_PRINCIPAL = 128
# Completion rows shorter than this fraction of the sensitivity are omitted (they would only
# add measurements of negligible weight).
COMPLETION_RTOL = 1e-9


# ---------------------------------------------------------------------- workload helpers
def eigen_queries(workload=None, gram=None, rtol=ZERO_EIGENVALUE_RTOL):
    """Eigenvalues (descending) and eigen-queries (rows) of ``W^T W``, zero eigenvalues dropped.

    With a workload of fewer queries than cells the economy SVD of ``W`` is used (``O(p^2 n)``
    instead of ``O(n^3)``): its right singular vectors are the eigen-queries. The prefix and
    all-range Grams (workload objects or their Gram operators) have closed-form
    eigen-queries (``O(n^2)``); other Grams are decomposed densely. Every eigen-query gets the
    sign of :func:`~sklearn_ldp._strategy_error.canonical_sign_flips`, so the strategy does
    not depend on the route.

    Parameters
    ----------
    workload : array of shape (p, n) or Workload, optional
    gram : array of shape (n, n) or Gram operator, optional
        Give exactly one of ``workload`` and ``gram``.
    rtol : float
        Eigenvalues below ``rtol`` times the largest are dropped.

    Returns
    -------
    eigenvalues : ndarray of shape (k,)
    queries : ndarray of shape (k, n)
        Orthonormal rows.
    spectrum : ndarray of shape (n,)
        All eigenvalues of ``W^T W`` (zeros included, clipped at 0), for the bound.

    Examples
    --------
    >>> values, queries, _ = eigen_queries(np.array([[1.0, 1.0], [1.0, 1.0]]))
    >>> values.round(6).tolist(), queries.shape
    ([4.0], (1, 2))
    """
    return _eigen_queries(*_workload_and_gram(workload, gram), rtol)


def _eigen_queries(W, G, rtol=ZERO_EIGENVALUE_RTOL):
    """:func:`eigen_queries` of a resolved ``(W or None, G)`` pair."""
    n = G.n
    if W is not None and W.shape[0] < n:
        _, singular, Vt = np.linalg.svd(W, full_matrices=False)
        values, vectors = singular**2, Vt
        spectrum = np.concatenate([values, np.zeros(n - values.shape[0])])
    else:
        values, vectors = G.eigensystem()
        spectrum = values
    spectrum = _clean_spectrum(spectrum)
    if values.size == 0 or values[0] <= 0:
        raise ValueError("the workload is zero: it has no non-zero eigenvalue.")
    keep = values > rtol * values[0]
    queries = np.ascontiguousarray(vectors[keep])
    queries *= canonical_sign_flips(queries)[:, None]
    return values[keep], queries, spectrum


# ---------------------------------------------------------------------- Program 1
def _check_solver(solver):
    import cvxpy as cp

    installed = cp.installed_solvers()
    if not isinstance(solver, str) or solver.upper() not in installed:
        raise ValueError(
            f"solver {solver!r} is not an installed cvxpy solver; installed: {installed}. "
            "Clarabel ('CLARABEL') and SCS ('SCS') are open source and ship with cvxpy."
        )
    return solver.upper()


def _other_solver(solver):
    return "SCS" if solver != "SCS" else "CLARABEL"


def _solve_weights(squared_design, costs, solver, solver_options=None):
    """Program 1 on a squared design ``S`` (k x m, ``S_ij = q_ij^2``): the weights ``u``.

    ``min sum_i c_i / u_i  s.t.  S^T u <= 1``. Costs are rescaled to a maximum of 1 (the
    minimizer does not change) so the solver sees well-scaled numbers; zero costs get zero
    weight without entering the problem.
    """
    import cvxpy as cp

    costs = np.asarray(costs, dtype=float)
    weights = np.zeros(costs.shape[0])
    active = costs > 0
    if not active.any():
        return weights
    S = squared_design[active]
    # Cells that no active design query touches carry no constraint.
    S = S[:, S.max(axis=0) > 0]
    u = cp.Variable(S.shape[0], pos=True)
    scaled = costs[active] / costs[active].max()
    problem = cp.Problem(cp.Minimize(scaled @ cp.inv_pos(u)), [S.T @ u <= 1])
    options = dict(solver_options or {})
    if solver == "CLARABEL":
        # Clarabel's "auto" picks the multithreaded faer factorization, which is 2-15 times
        # slower than QDLDL on this KKT system (a dense k x m block; measured at m = 64 to
        # 1024 cells on 2 cores, same optimum to 1e-15 relative).
        options.setdefault("direct_solve_method", "qdldl")
    try:
        problem.solve(solver=solver, **options)
    except cp.error.SolverError as exc:
        raise ValueError(
            f"Program 1 failed in the solver {solver}: {exc}. Try solver={_other_solver(solver)!r}."
        ) from None
    if problem.status == "optimal_inaccurate":
        warnings.warn(
            f"the solver {solver} solved Program 1 only inaccurately; the strategy is still "
            "private (its sensitivity is computed from the final matrix) but may be less "
            f"accurate. solver={_other_solver(solver)!r} may do better.",
            RuntimeWarning,
            stacklevel=3,
        )
    elif problem.status != "optimal" or u.value is None:
        raise ValueError(
            f"Program 1 could not be solved by {solver} (status {problem.status!r}). Try "
            f"solver={_other_solver(solver)!r}, or pass solver_options."
        )
    weights[active] = np.clip(u.value, 0.0, None)
    return weights


def program1(design, costs, solver="CLARABEL", solver_options=None):
    r"""Li & Miklau's Program 1: optimal non-negative weights ``u`` for a design set.

    ``min_u sum_i c_i / u_i``  subject to  ``sum_i u_i Q_ij^2 <= 1`` for every cell ``j``.
    With ``Q`` invertible and ``c_i`` the squared norm of column ``i`` of ``W Q^+``,
    ``diag(sqrt(u)) Q`` is the best weighting of the design (Theorem 1); for eigen-queries
    ``c_i`` is the eigenvalue.

    Parameters
    ----------
    design : array of shape (k, n)
        Design queries (rows).
    costs : array of shape (k,)
        Non-negative ``c_i``; zero-cost queries get weight 0.
    solver : str, default="CLARABEL"
        An installed cvxpy conic solver (``"CLARABEL"`` or ``"SCS"`` ship with cvxpy).
    solver_options : dict, optional
        Passed to ``cvxpy.Problem.solve``.

    Returns
    -------
    ndarray of shape (k,)
        The weights ``u`` (the strategy is ``diag(sqrt(u)) Q``).

    Examples
    --------
    >>> u = program1(np.eye(2), np.array([1.0, 4.0]))
    >>> u.round(4).tolist()
    [1.0, 1.0]
    """
    Q = np.asarray(design, dtype=float)
    return _solve_weights(Q * Q, costs, _check_solver(solver), solver_options)


# ---------------------------------------------------------------------- Eigen-Design
class EigenDesign:
    """The result of :func:`eigen_design`.

    Attributes
    ----------
    strategy : ndarray of shape (r, n)
        The strategy ``A``, scaled to sensitivity 1: the weighted eigen-queries, then one
        completion row per deficient cell (or, after refinement, a dense ``n x n`` matrix).
    strategy_gram : ndarray of shape (n, n)
        ``A^T A`` (computed without stacking ``A``).
    error : float
        ``tr(W^T W (A^T A)^+)`` at sensitivity 1 (the total squared error per unit noise).
    bound : float
        The singular value bound ``svdb(W)``; ``ratio = error / bound >= 1``.
    approximation_bound : float
        The paper's guarantee ``(n lambda_1 / svdb)^{1/4}``, squared (a bound on ``ratio``).
    eigenvalues, eigen_queries : ndarrays
        Non-zero eigenvalues of the design Gram matrix and their eigen-queries (rows).
    weights : ndarray of shape (k,)
        Program 1's ``u`` (at sensitivity 1, before completion).
    completion : ndarray of shape (n,)
        Squared weight of each cell's completion row (0: none).
    speedup, n_principal, group_size, tail, solver : the options used.
    seconds : dict
        Wall time of the stages (``eigen``, ``program1``, ``refine``).
    refine_history : list of float
        Ratio to the bound after each refinement step (empty without refinement).
    """

    def __init__(self, gram, eigenvalues, queries, weights, spectrum, options, seconds,
                 root=None):
        self.eigenvalues = eigenvalues
        self.eigen_queries = queries
        self.n_cells = queries.shape[1]
        self._gram = gram
        self.__dict__.update(options)
        self.seconds = seconds
        self.refine_history = []
        # Sensitivity 1: the largest column of diag(sqrt(u)) Q has norm 1.
        column_norms2 = weights @ (queries * queries)
        largest = float(column_norms2.max())
        self.weights = weights / largest
        deficit = 1.0 - column_norms2 / largest
        self.completion = np.where(deficit > COMPLETION_RTOL, deficit, 0.0)
        self._dense = None
        self._strategy_gram = None
        self._strategy_gram_lower = None
        self.bound = float(np.sqrt(spectrum).sum() ** 2 / self.n_cells)
        self.approximation_bound = float(
            math.sqrt(self.n_cells * spectrum.max() / self.bound)) if self.bound > 0 else 1.0
        self.error = self._design_error(root)
        # The workload's Gram (n x n) is only needed for the error: do not keep it alive.
        self._gram = None

    def _design_error(self, root):
        """``tr(G X^+)`` for ``X = Q^T diag(u) Q + diag(completion)`` = ``C^T C``, by the
        cheaper of two routes (``root``: ``R`` with ``R^T R = G``, or None).

        Fewer stacked rows ``r`` than cells (low-rank workloads, e.g. marginals): with
        ``K = C C^T = U S U^T``, ``X^+ = C^T K^+ K^+ C`` and ``tr(G X^+) = sum_i (U^T C G C^T
        U)_ii / s_i^2``, all ``r x r``. Otherwise ``X`` is factored (Cholesky, ``n^3 / 3``) and
        ``tr(G X^-1) = ||L^-1 R^T||_F^2`` (one triangular solve).
        """
        used = self.weights > 0
        C = np.sqrt(self.weights[used])[:, None] * self.eigen_queries[used]
        cells = np.flatnonzero(self.completion)
        if C.shape[0] + cells.size < self.n_cells:
            extra = np.zeros((cells.size, self.n_cells))
            extra[np.arange(cells.size), cells] = np.sqrt(self.completion[cells])
            C = np.vstack([C, extra])
            s, U = np.linalg.eigh(C @ C.T)
            keep = s > 1e-12 * s.max()
            P = U[:, keep].T @ C  # rows: orthogonal directions of the row space, norm^2 s_i
            GP = P @ _gram(self._gram) if root is None else (P @ root.T) @ root
            return float(np.sum(np.einsum("ij,ij->i", GP, P) / s[keep] ** 2))
        # C^T C, lower triangle only; C.T is Fortran-ordered, so BLAS reads it without a copy.
        X = linalg.blas.dsyrk(1.0, C.T, trans=0, lower=1)
        X[np.diag_indices_from(X)] += self.completion
        # Kept (lower triangle) as the strategy Gram: the mechanism that measures this
        # strategy needs A^T A, which would otherwise cost another n^3 product.
        self._strategy_gram_lower = X
        try:
            L = linalg.cholesky(X, lower=True, check_finite=False)
        except linalg.LinAlgError:
            return _trace_term(self.strategy_gram, _gram(self._gram))
        if root is None:
            return float(np.vdot(_gram(self._gram), _full_inverse(L)))
        solved = linalg.solve_triangular(L, root.T, lower=True, check_finite=False)
        return float(np.sum(solved * solved))

    @property
    def strategy_gram(self):
        if self._strategy_gram is None:
            if self._dense is not None:
                self._strategy_gram = self._dense.T @ self._dense
            elif self._strategy_gram_lower is not None:
                lower = self._strategy_gram_lower
                self._strategy_gram = np.tril(lower) + np.tril(lower, -1).T
                self._strategy_gram_lower = None
            else:
                Q = self.eigen_queries
                X = (Q.T * self.weights) @ Q
                X[np.diag_indices_from(X)] += self.completion
                self._strategy_gram = X
        return self._strategy_gram

    @property
    def strategy(self):
        if self._dense is not None:
            return self._dense
        used = self.weights > 0
        rows = np.sqrt(self.weights[used])[:, None] * self.eigen_queries[used]
        cells = np.flatnonzero(self.completion)
        extra = np.zeros((cells.size, self.n_cells))
        extra[np.arange(cells.size), cells] = np.sqrt(self.completion[cells])
        return np.vstack([rows, extra])

    @property
    def ratio(self):
        return self.error / self.bound

    def __repr__(self):
        return (
            f"EigenDesign(n_cells={self.n_cells}, n_eigen_queries={self.eigenvalues.size}, "
            f"speedup={self.speedup!r}, ratio={self.ratio:.4f})"
        )


def _principal_weights(eigenvalues, S, n_principal, tail, solver, solver_options):
    """Top ``n_principal`` weights free, the tail scaled by one common factor."""
    k = eigenvalues.size
    top = min(max(int(n_principal), 1), k)
    if top >= k:
        return _solve_weights(S, eigenvalues, solver, solver_options)
    tail_values = eigenvalues[top:]
    # The tail's shape: flat (paper) or the singular-value-bound profile sqrt(lambda).
    profile = np.ones(k - top) if tail == "flat" else np.sqrt(tail_values / tail_values[0])
    design = np.vstack([S[:top], profile @ S[top:]])
    costs = np.concatenate([eigenvalues[:top], [np.sum(tail_values / profile)]])
    u = _solve_weights(design, costs, solver, solver_options)
    return np.concatenate([u[:top], u[top] * profile])


def _separated_weights(eigenvalues, S, group_size, solver, solver_options):
    """Program 1 per group of ``group_size`` eigen-queries, then one scale per group."""
    k = eigenvalues.size
    groups = [np.arange(start, min(start + group_size, k)) for start in range(0, k, group_size)]
    inner = [_solve_weights(S[g], eigenvalues[g], solver, solver_options) for g in groups]
    group_design = np.vstack([u @ S[g] for u, g in zip(inner, groups, strict=True)])
    group_costs = np.array([
        np.sum(eigenvalues[g][u > 0] / u[u > 0]) for u, g in zip(inner, groups, strict=True)
    ])
    scales = _solve_weights(group_design, group_costs, solver, solver_options)
    return np.concatenate([t * u for t, u in zip(scales, inner, strict=True)])


def _check_fraction_or_count(value, name):
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"{name} must be a count >= 1 or a fraction in (0, 1], got {value!r}.")
    return value


def eigen_design(
    workload=None,
    *,
    gram=None,
    speedup="auto",
    n_principal=None,
    tail="sqrt",
    group_size=None,
    row_scaling="none",
    refine_iter=0,
    solver="CLARABEL",
    solver_options=None,
    verbose=False,
):
    """Li & Miklau's Eigen-Design strategy for a workload (Program 2, with completion).

    Parameters
    ----------
    workload : array of shape (p, n) or Workload, optional
        The queries. Give this or ``gram``; ``row_scaling="unit"`` needs the queries.
    gram : array of shape (n, n) or Gram operator, optional
        ``W^T W``, when the workload is too large to write down (all-range at n = 4096). A
        structured workload is also used through its Gram only (its dense ``n x n`` form,
        or closed-form eigen-queries for prefix and all-range), unless it has fewer queries
        than cells.
    speedup : {"auto", "none", "separation", "principal"}, default="auto"
        ``"none"``: Program 1 over all eigen-queries (paper-exact). ``"separation"``:
        eigen-query separation in groups of ``group_size``. ``"principal"``: principal
        vectors. ``"auto"``: ``"none"`` up to 256 eigen-queries, else ``"principal"``.
    n_principal : int, float or None, default=None
        Principal vectors kept with their own weight: a count, or a fraction of the non-zero
        eigen-queries. None: 10 % (the paper's choice), at most 128 with the ``"sqrt"`` tail
        (which needs few: the ratio on all-range n = 4096 is the same with 2 % as with 10 %,
        and Program 1's cost grows like the cube of this number).
    tail : {"sqrt", "flat"}, default="sqrt"
        Weights of the non-principal eigen-queries: ``"flat"`` is the paper's common weight;
        ``"sqrt"`` one common scale of the profile ``sqrt(lambda_i)`` (far more accurate at the
        same cost; see the module notes).
    group_size : int, optional
        Group size of the separation speed-up; default ``max(2, round(k^(1/3)))`` for ``k``
        eigen-queries (the paper's ``O(n^{1/3})``).
    row_scaling : {"none", "unit"}, default="none"
        ``"unit"`` scales every query to unit L2 norm before designing (the paper's heuristic
        for relative error: small queries count as much as large ones). ``error`` and
        ``bound`` are always those of the original workload.
    refine_iter : int, default=0
        L-BFGS steps of :func:`refine_strategy` on the exact error after the design (0: the
        paper's method only). Each step costs ``O(n^3)``.
    solver : str, default="CLARABEL"
        cvxpy solver for Program 1 (``"CLARABEL"`` or ``"SCS"``). A failure raises a
        ValueError naming it; there is no silent fallback.
    solver_options : dict, optional
        Passed to the solver.
    verbose : bool, default=False
        Print the stages and their times.

    Returns
    -------
    EigenDesign

    Examples
    --------
    >>> W = np.array([[1.0, 1, 0, 0], [0, 0, 1, 1], [1, 1, 1, 1]])
    >>> design = eigen_design(W)
    >>> bool(design.ratio >= 1.0), design.strategy.shape[1]
    (True, 4)
    """
    if speedup not in SPEEDUPS:
        raise ValueError(f"speedup must be one of {SPEEDUPS}, got {speedup!r}.")
    if tail not in TAILS:
        raise ValueError(f"tail must be one of {TAILS}, got {tail!r}.")
    if row_scaling not in ROW_SCALINGS:
        raise ValueError(f"row_scaling must be one of {ROW_SCALINGS}, got {row_scaling!r}.")
    if isinstance(refine_iter, bool) or not isinstance(refine_iter, int) or refine_iter < 0:
        raise ValueError(f"refine_iter must be an integer >= 0, got {refine_iter!r}.")
    if n_principal is not None:
        _check_fraction_or_count(n_principal, "n_principal")
    solver = _check_solver(solver)
    W, G = _workload_and_gram(workload, gram)
    seconds = {}
    start = time.perf_counter()
    if row_scaling == "unit":
        if workload is None:
            raise ValueError("row_scaling='unit' needs the workload matrix, not only its gram.")
        # The rows themselves are needed (a structured workload's dense form is size-guarded).
        rows = W if W is not None else query_matrix(workload)
        norms = np.linalg.norm(rows, axis=1)
        design_workload = rows[norms > 0] / norms[norms > 0, None]
        design_gram = design_workload.T @ design_workload
        eigenvalues, queries, _ = eigen_queries(design_workload)
        if W is not None and W.shape[0] < W.shape[1]:
            spectrum = eigen_queries(workload=W)[2]
        else:
            spectrum = _clean_spectrum(G.spectrum())
    else:
        design_gram = G
        eigenvalues, queries, spectrum = _eigen_queries(W, G)
    seconds["eigen"] = time.perf_counter() - start
    k = eigenvalues.size
    if speedup == "auto":
        speedup = "none" if k <= AUTO_FULL_LIMIT else "principal"
    if n_principal is None:
        count = max(1, math.ceil(0.1 * k))
        count = min(count, MAX_SQRT_TAIL_PRINCIPAL) if tail == "sqrt" else count
    else:
        count = n_principal if n_principal >= 1 else max(1, math.ceil(n_principal * k))
    if group_size is None:
        group_size = max(2, round(k ** (1 / 3)))
    elif isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
        raise ValueError(f"group_size must be an integer >= 1, got {group_size!r}.")
    if verbose:
        print(f"eigen_design: {k} eigen-queries over {queries.shape[1]} cells, speedup "
              f"{speedup!r} ({seconds['eigen']:.2f} s for the eigen-queries)")
    start = time.perf_counter()
    S = queries * queries
    if speedup == "none":
        weights = _solve_weights(S, eigenvalues, solver, solver_options)
    elif speedup == "principal":
        weights = _principal_weights(eigenvalues, S, count, tail, solver, solver_options)
    else:
        weights = _separated_weights(eigenvalues, S, group_size, solver, solver_options)
    seconds["program1"] = time.perf_counter() - start
    options = {"speedup": speedup, "n_principal": int(count), "group_size": int(group_size),
               "tail": tail, "solver": solver, "row_scaling": row_scaling}
    # R with R^T R = G from the eigen-queries (unless they are those of a rescaled workload)
    root = None if row_scaling == "unit" else np.sqrt(eigenvalues)[:, None] * queries
    design = EigenDesign(G, eigenvalues, queries, weights, spectrum, options, seconds, root)
    if verbose:
        print(f"eigen_design: Program 1 in {seconds['program1']:.2f} s, error / bound "
              f"{design.ratio:.4f}")
    if refine_iter:
        start = time.perf_counter()
        design_gram, G = _gram(design_gram), _gram(G)
        refined, history = refine_strategy(design.strategy_gram, design_gram,
                                           max_iter=refine_iter)
        seconds["refine"] = time.perf_counter() - start
        X = refined.T @ refined
        # Never return something worse than Program 2 on the objective that was designed for.
        if history and history[-1] < _trace_term(design.strategy_gram, design_gram):
            design._dense, design._strategy_gram = refined, X
            design.error = _trace_term(X, G)
            if design_gram is G:
                design.refine_history = [h / design.bound for h in history]
        if verbose:
            print(f"eigen_design: {len(history)} refinement steps in {seconds['refine']:.2f} s,"
                  f" error / bound {design.ratio:.4f}")
    return design


# ---------------------------------------------------------------------- beyond the paper
def _normalized_error(flat, G, n):
    """Error of ``A = B diag(1/||b_j||)`` and its gradient in ``B`` (``B`` is ``n x n``)."""
    B = flat.reshape(n, n)
    c = 1.0 / np.linalg.norm(B, axis=0)
    N = B * c
    X = N.T @ N
    factor = linalg.cho_factor(X, lower=True, check_finite=False)
    solved = linalg.cho_solve(factor, G, check_finite=False)  # X^-1 G
    value = float(np.trace(solved))
    Y = linalg.cho_solve(factor, solved.T, check_finite=False)  # X^-1 G X^-1
    # d tr(G X^-1) = -tr(Y dX), X = C M C, M = B^T B, dc_j = -c_j^3 b_j^T db_j.
    M = B.T @ B
    d = np.einsum("ij,ji->i", M * c[None, :], Y)  # (M C Y)_jj
    gradient = -2.0 * (N @ (Y * c[None, :])) + 2.0 * B * (c**3 * d)[None, :]
    return value, gradient.ravel()


def refine_strategy(strategy_gram, gram, max_iter=10, regularization=1e-3):
    """Refine a strategy by L-BFGS on its exact error, keeping the sensitivity at 1.

    Minimizes ``tr(G X^-1)`` with ``X = C B^T B C``, ``C = diag(1 / ||b_j||)``: every column
    of the strategy ``B C`` has norm exactly 1, which loses nothing (completing a short
    column never raises the error) and makes the problem smooth and unconstrained.

    Parameters
    ----------
    strategy_gram : array of shape (n, n)
        ``A^T A`` of the starting strategy (e.g. :attr:`EigenDesign.strategy_gram`).
    gram : array of shape (n, n)
        ``W^T W``.
    max_iter : int, default=10
        L-BFGS iterations (each costs a few ``O(n^3)`` factorizations).
    regularization : float, default=1e-3
        The start is ``(1 - r) X + r I`` on the unit-diagonal scale: a completed
        Eigen-Design can be singular, where the parameterization has no useful gradient.

    Returns
    -------
    strategy : ndarray of shape (n, n)
        The refined strategy, columns of unit norm.
    history : list of float
        ``tr(G X^-1)`` after each iteration.

    Examples
    --------
    >>> G = np.array([[2.0, 1.0], [1.0, 2.0]])
    >>> A, history = refine_strategy(np.eye(2), G, max_iter=5)
    >>> bool(history[-1] <= 4.0 + 1e-9)
    True
    """
    X = np.asarray(strategy_gram, dtype=float)
    G = np.asarray(gram, dtype=float)
    n = X.shape[0]
    scale = np.sqrt(np.diag(X).clip(min=1e-300))
    X = X / np.outer(scale, scale)
    X = (1.0 - regularization) * X + regularization * np.eye(n)
    start = linalg.cholesky(X, lower=False)  # B^T B = X, unit columns
    history = []
    result = optimize.minimize(
        _normalized_error, start.ravel(), args=(G, n), jac=True, method="L-BFGS-B",
        callback=lambda xk: history.append(_normalized_error(xk, G, n)[0]),
        options={"maxiter": int(max_iter), "ftol": 1e-15, "gtol": 1e-12},
    )
    B = result.x.reshape(n, n)
    return B / np.linalg.norm(B, axis=0), history


def optimal_error(workload=None, gram=None, solver="CLARABEL"):
    """The exact optimum ``min tr(G X^-1)`` over ``diag(X) <= 1``, as an SDP (small n only).

    The error depends on the strategy only through ``X = A^T A`` and the sensitivity is
    ``max diag(X)``, so OptStrat is this convex program (``matrix_frac`` in cvxpy). Its cost
    grows like ``n^6``: it is a reference for tests and small domains (``n <= 64``).

    Examples
    --------
    >>> round(optimal_error(np.eye(3)), 4)
    3.0
    """
    import cvxpy as cp

    _, G = _workload_and_gram(workload, gram)
    G = _gram(G)
    n = G.shape[0]
    if n > 64:
        raise ValueError(f"optimal_error solves an SDP over n x n matrices; n = {n} > 64 is "
                         "too large. Use eigen_design(...).error instead.")
    solver = _check_solver(solver)
    values, vectors = np.linalg.eigh(G)
    keep = values > ZERO_EIGENVALUE_RTOL * values.max()
    root = (vectors[:, keep] * np.sqrt(values[keep])).T  # root^T root = G
    X = cp.Variable((n, n), PSD=True)
    problem = cp.Problem(cp.Minimize(cp.matrix_frac(root.T, X)), [cp.diag(X) <= 1])
    try:
        problem.solve(solver=solver)
    except cp.error.SolverError as exc:
        raise ValueError(f"the SDP failed in {solver}: {exc}. Try solver="
                         f"{_other_solver(solver)!r}.") from None
    if problem.status != "optimal":
        raise ValueError(f"the SDP was not solved by {solver} (status {problem.status!r}). "
                         f"Try solver={_other_solver(solver)!r}.")
    return float(problem.value)
