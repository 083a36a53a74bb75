"""Linear programs that design count mechanisms (dissertation §6.3-6.5 and §6.8).

The variables are the entries of the mechanism matrix ``P[i, j] = Pr[output i | input j]``;
the objective and every constraint are linear (Ghosh et al.'s "BasicDP"):

* objective ``sum_j w_j sum_i C[i, j] P[i, j]`` (sum aggregation) or ``tau`` with
  ``w_j sum_i C[i, j] P[i, j] <= tau`` for every ``j`` (max aggregation, Gupte-Sundararajan);
* ``0 <= P <= 1`` and every column sums to 1;
* DP: ``P[i, j] >= alpha P[i, k]`` for neighbouring inputs ``j, k``: adjacent counts
  (:func:`~sklearn_ldp.selection.count.solve_count_lp`, central DP of a count) or every pair
  of items (:func:`~sklearn_ldp.selection.count.solve_ldp_lp`, the square local-DP LP of
  §6.8). For all pairs the ``k^3``
  inequalities are replaced by an equivalent ``O(k^2)`` set: per row, bounds ``lo_i <= P[i, :]
  <= hi_i`` with ``lo_i >= alpha hi_i``;
* any subset of the structural properties RH, RM, CH, CM, F, WH, S (see
  :data:`sklearn_ldp.mechanisms.central.count.PROPERTY_DESCRIPTIONS`). When RM is imposed RH is
  implied and dropped (likewise CM and CH), and so is the half of the DP inequalities that RM
  already implies, which keeps the LP small.

With a symmetric prior (``w_j = w_{n-j}``, e.g. uniform) the LP is solved over
centrosymmetric matrices only, one variable per pair ``(i, j) ~ (n-i, n-j)``: by Theorem 8
the average of an optimum and its mirror image is an optimum with the same properties, so
this halves the LP at no cost (``symmetric=False`` solves the full LP).

Two solvers, compared in ``benchmarks/bench_count.py``:

* ``"highs"`` builds the sparse constraint matrix directly and calls scipy's HiGHS interior
  point method with crossover, which returns an exact vertex. On these highly degenerate LPs
  it beat the dual simplex by about 2x (n = 100: 1.3-3.8 s with dual simplex, 0.6-1.9 s
  with the interior point).
* ``"cvxpy"`` states the same LP with cvxpy expressions (readable, and an independent
  formulation that the tests compare with the HiGHS one) and solves it with cvxpy's default
  LP solver (Clarabel, an interior point method with a sparse direct factorization). It is
  about 1e-9 accurate and 2-4x faster than HiGHS for n >= 50.
* ``"auto"`` (default) takes HiGHS up to ``n = 30`` (exact vertices, and as fast) and cvxpy
  above (falling back to HiGHS if cvxpy reports an inaccurate solution). This keeps every
  property set at n = 100 near 1 s, where HiGHS alone needs up to about 3 s.

Every subset of properties is feasible (the uniform mechanism has all of them), so an LP
that fails is a numerical failure; it is reported with the solver's status and the
properties.

This module takes the cost matrix, the prior and ``alpha`` and returns the solver's matrix
(:func:`solve_mechanism_lp`); it knows no mechanism. Validating the parameters, building the
cost matrix and repairing the solution into an exactly private mechanism is
:mod:`sklearn_ldp.selection.count`'s job.
"""

import warnings

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

SOLVERS = ("auto", "highs", "cvxpy")
# Largest matrix side solved by HiGHS under solver="auto": above it cvxpy's interior point
# (Clarabel, a direct sparse factorization) is faster (benchmarks/bench_count.py).
HIGHS_MAX_SIZE = 31
# HiGHS's default feasibility tolerance (1e-7) leaves DP violations that the exact repair
# then has to pay for in the objective (about 4e-6 at n = 100); 1e-9 costs nothing measurable.
HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}


def _check_solver(solver):
    if solver not in SOLVERS:
        raise ValueError(f"solver must be 'auto', 'highs' (scipy) or 'cvxpy', got {solver!r}.")
    return solver


def _effective_properties(properties):
    """Drop properties implied by others (RM implies RH, CM implies CH) to shrink the LP.

    ``properties`` are canonical names (validated, in the order of
    :data:`sklearn_ldp.mechanisms.central.count.PROPERTIES`); their order is kept.
    """
    kept = set(properties)
    if "RM" in kept:
        kept.discard("RH")
    if "CM" in kept:
        kept.discard("CH")
    return tuple(name for name in properties if name in kept)


# ---------------------------------------------------------------------------- HiGHS (sparse)
class _Rows:
    """Accumulates sparse constraint rows ``sum_k coef_k x[var_k] (<= or ==) rhs``."""

    def __init__(self):
        self.rows, self.cols, self.vals, self.rhs = [], [], [], []
        self.count = 0

    def add(self, columns, coefficients, rhs=0.0):
        """Add ``m`` rows at once: ``columns`` and ``coefficients`` have shape (m, terms)."""
        columns = np.atleast_2d(np.asarray(columns, dtype=np.int64))
        if columns.size == 0:
            return
        coefficients = np.broadcast_to(np.asarray(coefficients, dtype=float), columns.shape)
        m = columns.shape[0]
        self.rows.append(np.repeat(np.arange(self.count, self.count + m), columns.shape[1]))
        self.cols.append(columns.ravel())
        self.vals.append(coefficients.ravel())
        self.rhs.append(np.broadcast_to(np.asarray(rhs, dtype=float), (m,)))
        self.count += m

    def matrix(self, n_vars):
        if self.count == 0:
            return None, None
        A = sp.csr_array(
            (np.concatenate(self.vals), (np.concatenate(self.rows), np.concatenate(self.cols))),
            shape=(self.count, n_vars),
        )
        return A, np.concatenate(self.rhs)


def _monotone_pairs(k):
    """(far, near) index pairs of adjacent entries, for every position's diagonal.

    For line ``i`` (a row for RM, a column for CM) and adjacent positions ``(j, j + 1)``, the
    entry farther from ``i`` must not exceed the nearer one.
    """
    line, j = np.meshgrid(np.arange(k), np.arange(k - 1), indexing="ij")
    left_of_diagonal = j + 1 <= line
    far = np.where(left_of_diagonal, j, j + 1)
    near = np.where(left_of_diagonal, j + 1, j)
    return line.ravel(), far.ravel(), near.ravel()


def _build_highs(k, alpha, neighbours, C, w, aggregation, properties):
    """Sparse LP ``min c x, A_ub x <= b_ub, A_eq x = b_eq, bounds`` over ``x = vec(P)``."""
    n_cells = k * k
    var = np.arange(n_cells).reshape(k, k)  # var[i, j] = index of P[i, j] (row-major)
    extra = 0
    upper, equal = _Rows(), _Rows()
    if neighbours == "adjacent" and "RM" in properties:
        # RM already says P[i, far] <= P[i, near], which implies alpha P[i, far] <= P[i, near]:
        # only the other direction of each adjacent pair is needed.
        line, far, near = _monotone_pairs(k)
        upper.add(np.column_stack([var[line, near], var[line, far]]), [alpha, -1.0])
    elif neighbours == "adjacent":
        left, right = var[:, :-1].ravel(), var[:, 1:].ravel()
        upper.add(np.column_stack([right, left]), [alpha, -1.0])  # alpha P[i,j+1] <= P[i,j]
        upper.add(np.column_stack([left, right]), [alpha, -1.0])  # alpha P[i,j] <= P[i,j+1]
    else:
        # Row bounds lo_i <= P[i, j] <= hi_i and alpha hi_i <= lo_i: equivalent to all pairs.
        lo, hi = n_cells + np.arange(k), n_cells + k + np.arange(k)
        extra = 2 * k
        rows = np.repeat(np.arange(k), k)
        upper.add(np.column_stack([lo[rows], var.ravel()]), [1.0, -1.0])
        upper.add(np.column_stack([var.ravel(), hi[rows]]), [1.0, -1.0])
        upper.add(np.column_stack([hi, lo]), [alpha, -1.0])
    diagonal = np.diag(var)
    i, j = np.nonzero(~np.eye(k, dtype=bool))
    if "RH" in properties:
        upper.add(np.column_stack([var[i, j], var[i, i]]), [1.0, -1.0])
    if "CH" in properties:
        upper.add(np.column_stack([var[i, j], var[j, j]]), [1.0, -1.0])
    if "RM" in properties:
        line, far, near = _monotone_pairs(k)
        upper.add(np.column_stack([var[line, far], var[line, near]]), [1.0, -1.0])
    if "CM" in properties:
        line, far, near = _monotone_pairs(k)
        upper.add(np.column_stack([var[far, line], var[near, line]]), [1.0, -1.0])
    if "F" in properties:
        equal.add(np.column_stack([diagonal[1:], np.full(k - 1, diagonal[0])]), [1.0, -1.0])
    if "S" in properties:
        mirror = var[::-1, ::-1].ravel()
        first = var.ravel() < mirror  # each pair once; the centre cell is its own mirror
        equal.add(np.column_stack([var.ravel()[first], mirror[first]]), [1.0, -1.0])
    equal.add(var.T, 1.0, rhs=1.0)  # column j: sum_i P[i, j] = 1

    weighted = (w[np.newaxis, :] * C).ravel()  # coefficient of P[i, j] in the objective
    if aggregation == "max":
        tau = n_cells + extra
        extra += 1
        # w_j sum_i C[i, j] P[i, j] - tau <= 0 for every column j
        upper.add(np.column_stack([var.T, np.full(k, tau)]),
                  np.column_stack([weighted.reshape(k, k).T, -np.ones(k)]))
        c = np.zeros(n_cells + extra)
        c[tau] = 1.0
    else:
        c = np.concatenate([weighted, np.zeros(extra)])
    n_vars = n_cells + extra
    lower = np.zeros(n_vars)
    upper_bound = np.ones(n_vars)
    if "WH" in properties:
        lower[diagonal] = 1.0 / k
    if aggregation == "max":
        upper_bound[-1] = np.inf
    A_ub, b_ub = upper.matrix(n_vars)
    A_eq, b_eq = equal.matrix(n_vars)
    return c, A_ub, b_ub, A_eq, b_eq, np.column_stack([lower, upper_bound])


def _symmetric_basis(k, n_extra):
    """Sparse ``T`` with ``x = T z``: one variable per orbit of ``(i, j) -> (k-1-i, k-1-j)``.

    Restricting the LP to centrosymmetric matrices (Theorem 8: with a symmetric prior the
    optimum value is unchanged) halves the number of variables; auxiliary variables (row
    bounds, ``tau``) are kept as they are.
    """
    cells = np.arange(k * k)
    mirror = cells.reshape(k, k)[::-1, ::-1].ravel()
    _, orbit = np.unique(np.minimum(cells, mirror), return_inverse=True)
    n_orbits = orbit.max() + 1
    rows = np.concatenate([cells, k * k + np.arange(n_extra)])
    cols = np.concatenate([orbit, n_orbits + np.arange(n_extra)])
    return sp.csr_array((np.ones(rows.size), (rows, cols)), shape=(k * k + n_extra,
                                                                     n_orbits + n_extra))


def _solve_highs(k, alpha, neighbours, C, w, aggregation, properties, symmetric):
    c, A_ub, b_ub, A_eq, b_eq, bounds = _build_highs(k, alpha, neighbours, C, w, aggregation,
                                                     properties)
    if symmetric:
        T = _symmetric_basis(k, c.size - k * k)
        first = np.asarray(T.argmax(axis=0)).ravel()  # one original variable per orbit
        c, bounds = T.T @ c, bounds[first]
        A_ub = None if A_ub is None else (A_ub @ T).tocsr()
        A_eq = (A_eq @ T).tocsr()
    # Interior point with crossover: an exact vertex, and faster than the simplex methods
    # on these highly degenerate LPs (measured in benchmarks/bench_count.py).
    result = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds,
                     method="highs-ipm", options=HIGHS_OPTIONS)
    if result.status != 0:
        _fail(result.message, properties, "highs")
    x = T @ result.x if symmetric else result.x
    return x[: k * k].reshape(k, k), float(result.fun), result.message


# ---------------------------------------------------------------------------- cvxpy
def _solve_cvxpy(k, alpha, neighbours, C, w, aggregation, properties, symmetric):
    import cvxpy as cp

    if symmetric:
        # P is centrosymmetric by construction: one variable per pair (i, j) ~ (n-i, n-j).
        T = _symmetric_basis(k, 0)
        z = cp.Variable(T.shape[1], nonneg=True)
        P = cp.reshape(T @ z, (k, k), order="C")
    else:
        P = cp.Variable((k, k), nonneg=True)
    ones = np.ones((1, k))
    diag = cp.diag(P)
    constraints = [cp.sum(P, axis=0) == 1, P <= 1]
    if neighbours == "adjacent":
        constraints += [P[:, :-1] >= alpha * P[:, 1:], P[:, 1:] >= alpha * P[:, :-1]]
    else:
        lo, hi = cp.Variable(k), cp.Variable(k)
        constraints += [P >= cp.reshape(lo, (k, 1), order="F") @ ones,
                        P <= cp.reshape(hi, (k, 1), order="F") @ ones,
                        lo >= alpha * hi]
    index = np.arange(k)
    if "RH" in properties:
        constraints.append(P <= cp.reshape(diag, (k, 1), order="F") @ ones)
    if "CH" in properties:
        constraints.append(P <= ones.T @ cp.reshape(diag, (1, k), order="F"))
    if "RM" in properties:
        # sign * (P[i, j+1] - P[i, j]) >= 0: rising left of the diagonal, falling right of it.
        sign = np.where(index[np.newaxis, :-1] + 1 <= index[:, np.newaxis], 1.0, -1.0)
        constraints.append(cp.multiply(sign, P[:, 1:] - P[:, :-1]) >= 0)
    if "CM" in properties:
        sign = np.where(index[:-1, np.newaxis] + 1 <= index[np.newaxis, :], 1.0, -1.0)
        constraints.append(cp.multiply(sign, P[1:, :] - P[:-1, :]) >= 0)
    if "F" in properties:
        constraints.append(diag[1:] == P[0, 0])
    if "WH" in properties:
        constraints.append(diag >= 1.0 / k)
    if "S" in properties and not symmetric:
        constraints.append(P == P[::-1, ::-1])
    column_loss = cp.multiply(w, cp.sum(cp.multiply(C, P), axis=0))
    objective = cp.max(column_loss) if aggregation == "max" else cp.sum(column_loss)
    problem = cp.Problem(cp.Minimize(objective), constraints)
    try:
        problem.solve()
    except cp.error.SolverError as error:
        _fail(str(error), properties, "cvxpy")
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        _fail(problem.status, properties, "cvxpy")
    return np.asarray(P.value), float(problem.value), problem.status


def _fail(status, properties, solver):
    # Every property subset is feasible (the uniform mechanism has all of them), so this is
    # a numerical failure, not a modelling one.
    raise RuntimeError(
        f"the count LP with properties {list(properties) or 'none'} failed in solver "
        f"{solver!r}: {status}. Every property combination is feasible (the uniform mechanism "
        "satisfies all of them), so this is numerical: try the other solver or a smaller "
        "epsilon."
    )


# ---------------------------------------------------------------------------- public
def solve_mechanism_lp(C, w, alpha, neighbours="adjacent", aggregation="sum", properties=(),
                       solver="auto", symmetric=False):
    """Solve the LP of a ``k x k`` mechanism matrix: the solver's optimum, not yet repaired.

    Parameters
    ----------
    C : array of shape (k, k)
        Cost ``C[i, j]`` of releasing ``i`` when the truth is ``j``.
    w : array of shape (k,)
        Weights of the true values (normalized).
    alpha : float
        ``e^-epsilon``: DP asks ``P[i, j] >= alpha P[i, l]`` for neighbouring inputs.
    neighbours : {"adjacent", "all"}, default="adjacent"
        Adjacent inputs (a count) or every pair of inputs (items, local DP).
    aggregation : {"sum", "max"}, default="sum"
    properties : tuple of str
        Canonical names of the structural properties to impose (validated).
    solver : {"auto", "highs", "cvxpy"}, default="auto"
    symmetric : bool, default=False
        Search centrosymmetric matrices only (one variable per orbit of
        ``(i, j) -> (k-1-i, k-1-j)``).

    Returns
    -------
    matrix : ndarray of shape (k, k)
        The solver's solution (private up to the solver's tolerance).
    solver_objective : float
    status : str
        The solver's status message.
    solver : str
        The solver that produced ``matrix`` (``"auto"`` resolved, fallback included).
    """
    solver = _check_solver(solver)
    k = C.shape[0]
    automatic = solver == "auto"
    if automatic:
        solver = "highs" if k <= HIGHS_MAX_SIZE else "cvxpy"
    problem = (k, alpha, neighbours, C, w, aggregation, _effective_properties(properties),
               symmetric)
    if solver == "highs":
        raw, solver_objective, status = _solve_highs(*problem)
    else:
        with warnings.catch_warnings():
            if automatic:  # an inaccurate interior point is re-solved below: stay quiet
                warnings.simplefilter("ignore", UserWarning)
            try:
                raw, solver_objective, status = _solve_cvxpy(*problem)
            except RuntimeError:
                if not automatic:
                    raise
                status = "failed"
        if automatic and status != "optimal":
            solver = "highs"
            raw, solver_objective, status = _solve_highs(*problem)
    return raw, solver_objective, status, solver
