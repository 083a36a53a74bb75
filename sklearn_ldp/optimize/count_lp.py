"""Linear programs that design count mechanisms (dissertation §6.3-6.5 and §6.8).

The variables are the entries of the mechanism matrix ``P[i, j] = Pr[output i | input j]``;
the objective and every constraint are linear (Ghosh et al.'s "BasicDP"):

* objective ``sum_j w_j sum_i C[i, j] P[i, j]`` (sum aggregation) or ``tau`` with
  ``w_j sum_i C[i, j] P[i, j] <= tau`` for every ``j`` (max aggregation, Gupte-Sundararajan);
* ``0 <= P <= 1`` and every column sums to 1;
* DP: ``P[i, j] >= alpha P[i, k]`` for neighbouring inputs ``j, k``: adjacent counts
  (:func:`solve_count_lp`, central DP of a count) or every pair of items
  (:func:`solve_ldp_lp`, the square local-DP LP of §6.8). For all pairs the ``k^3``
  inequalities are replaced by an equivalent ``O(k^2)`` set: per row, bounds ``lo_i <= P[i, :]
  <= hi_i`` with ``lo_i >= alpha hi_i``;
* any subset of the structural properties RH, RM, CH, CM, F, WH, S (see
  :data:`sklearn_ldp.mechanisms.count.PROPERTY_DESCRIPTIONS`). When RM is imposed RH is
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
properties. Optima are often not unique: compare objective values, not matrices. The
solution is repaired into an exactly private matrix with
:func:`~sklearn_ldp.mechanisms.count.enforce_dp` (a mixture with the uniform mechanism of
weight about the solver tolerance, reported as ``repair_weight``; mixing with the uniform
mechanism keeps every property).
"""

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linprog

from .._validation import check_epsilon, check_positive_int
from ..mechanisms.count import (
    PROPERTIES,
    alpha_of,
    check_aggregation,
    check_d,
    check_group_size,
    check_loss,
    check_mechanism_name,
    check_prior,
    check_properties,
    check_property_names,
    choose_mechanism,
    closed_form_mechanism,
    cost_matrix,
    enforce_dp,
    expected_loss,
    is_symmetric_prior,
)

SOLVERS = ("auto", "highs", "cvxpy")
# Largest matrix side solved by HiGHS under solver="auto": above it cvxpy's interior point
# (Clarabel, a direct sparse factorization) is faster (benchmarks/bench_count.py).
HIGHS_MAX_SIZE = 31
# HiGHS's default feasibility tolerance (1e-7) leaves DP violations that the exact repair
# then has to pay for in the objective (about 4e-6 at n = 100); 1e-9 costs nothing measurable.
HIGHS_OPTIONS = {"primal_feasibility_tolerance": 1e-9, "dual_feasibility_tolerance": 1e-9}


@dataclass
class CountLPResult:
    """A solved count LP.

    Attributes
    ----------
    matrix : ndarray of shape (k, k)
        The mechanism, repaired to be exactly private (and symmetrized if asked).
    objective : float
        Objective of ``matrix`` recomputed from its entries
        (:func:`~sklearn_ldp.mechanisms.count.expected_loss`).
    solver_objective : float
        The optimum the solver reported (before repair and symmetrization).
    properties : tuple of str
        The properties imposed.
    solver : str
    status : str
        The solver's status message.
    repair_weight : float
        Weight of the uniform mechanism mixed in to make the matrix exactly private.
    solve_time : float
        Seconds spent building and solving.
    """

    matrix: np.ndarray
    objective: float
    solver_objective: float
    properties: tuple
    solver: str
    status: str
    repair_weight: float
    solve_time: float = field(default=0.0, repr=False)


def _check_solver(solver):
    if solver not in SOLVERS:
        raise ValueError(f"solver must be 'auto', 'highs' (scipy) or 'cvxpy', got {solver!r}.")
    return solver


def _effective_properties(properties):
    """Drop properties implied by others (RM implies RH, CM implies CH) to shrink the LP."""
    kept = set(properties)
    if "RM" in kept:
        kept.discard("RH")
    if "CM" in kept:
        kept.discard("CH")
    return tuple(name for name in PROPERTIES if name in kept)


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
def _check_symmetric(symmetric):
    if symmetric not in ("auto", True, False):
        raise ValueError(f"symmetric must be 'auto', True or False, got {symmetric!r}.")
    return symmetric


def _solve(k, epsilon, loss, d, aggregation, prior, properties, solver, symmetric, neighbours):
    start = time.perf_counter()
    epsilon = check_epsilon(epsilon)
    alpha = math.exp(-epsilon)
    loss = check_loss(loss)
    d = check_d(d)
    aggregation = check_aggregation(aggregation)
    properties = check_property_names(properties)
    solver = _check_solver(solver)
    symmetric = _check_symmetric(symmetric)
    n = k - 1
    w = check_prior(prior, n)
    symmetric_prior = is_symmetric_prior(w)
    if symmetric is True and not symmetric_prior:
        raise ValueError(
            "symmetric=True needs a symmetric prior (w_j = w_{n-j}): with this prior, "
            "restricting to symmetric mechanisms can raise the optimum. Pass properties "
            "including 'S' to impose symmetry anyway, or symmetric='auto'."
        )
    # Searching among centrosymmetric matrices is exact when S is required, and free when the
    # prior is symmetric (Theorem 8); it halves the LP.
    reduce = "S" in properties or (symmetric is not False and symmetric_prior)
    automatic = solver == "auto"
    if automatic:
        solver = "highs" if k <= HIGHS_MAX_SIZE else "cvxpy"
    C = cost_matrix(n, loss, d)
    problem = (k, alpha, neighbours, C, w, aggregation, _effective_properties(properties),
               reduce)
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
    matrix, repair = enforce_dp(raw, epsilon, neighbours)
    objective = expected_loss(matrix, loss, d, aggregation, w)
    return CountLPResult(matrix, objective, solver_objective, properties, solver, str(status),
                         repair, time.perf_counter() - start)


def solve_count_lp(group_size, epsilon, loss="L0", d=1, aggregation="sum", prior=None,
                   properties=(), solver="auto", symmetric="auto"):
    """The optimal epsilon-DP count mechanism for a loss, a prior and a set of properties.

    Parameters
    ----------
    group_size : int
        ``n``: the true count lies in ``0..n``; the matrix is ``(n+1) x (n+1)``.
    epsilon : float
        DP between adjacent counts (one user changes the count by one).
    loss : {"L0", "L0_d", "L1", "L2"}, default="L0"
    d : int, default=1
        Tolerance of ``L0_d`` (ignored by the other losses).
    aggregation : {"sum", "max"}, default="sum"
    prior : array of shape (n+1,) or None
        Weights ``w`` of the true counts (normalized); ``None`` is uniform.
    properties : sequence of str
        Any subset of ``RH, RM, CH, CM, F, WH, S``.
    solver : {"auto", "highs", "cvxpy"}, default="auto"
        ``"highs"``: scipy's HiGHS (interior point + crossover: an exact vertex);
        ``"cvxpy"``: the cvxpy formulation with cvxpy's default LP solver (Clarabel; about
        1e-9 accurate, faster for large groups); ``"auto"``: HiGHS up to ``group_size = 30``,
        cvxpy above, falling back to HiGHS if cvxpy reports an inaccurate solution.
    symmetric : {"auto", True, False}, default="auto"
        Search only centrosymmetric mechanisms (property S): by Theorem 8 this keeps the
        optimum when the prior is symmetric, halves the LP and returns a "nicer" optimum.
        ``"auto"``: when the prior is symmetric; ``True`` insists (ValueError otherwise);
        ``False``: the full LP, any optimal vertex (still S-constrained if S is required).

    Returns
    -------
    CountLPResult

    Examples
    --------
    >>> result = solve_count_lp(4, -np.log(0.9), properties=["F"])
    >>> round(result.objective, 4)   # the explicit fair mechanism's 1 - y
    0.7738
    """
    n = check_group_size(group_size)
    return _solve(n + 1, epsilon, loss, d, aggregation, prior, properties, solver, symmetric,
                  "adjacent")


def solve_ldp_lp(n_items, epsilon, loss="L0", d=1, aggregation="sum", prior=None,
                 properties=(), solver="auto", symmetric="auto"):
    """The square local-DP LP of §6.8: ``k x k`` mechanism, DP between *all* pairs of items.

    Under L0 the optimum is generalized randomized response, diagonal ``e^eps / (e^eps + k -
    1)``. The output space equals the input space; that restriction is why GRR is "optimal"
    here while mechanisms with other output spaces (OUE, OLH, HRR) beat it for large ``k``.

    Parameters
    ----------
    n_items : int
        ``k >= 2``.
    epsilon, loss, d, aggregation, prior, properties, solver, symmetric
        As in :func:`solve_count_lp` (the items play the role of the counts ``0..k-1`` for the
        L1/L2 costs and the properties).

    Returns
    -------
    CountLPResult

    Examples
    --------
    >>> result = solve_ldp_lp(5, np.log(2.0))
    >>> np.round(np.diag(result.matrix), 4)   # 2 / (2 + 4)
    array([0.3333, 0.3333, 0.3333, 0.3333, 0.3333])
    """
    k = check_positive_int(n_items, "n_items", minimum=2)
    return _solve(k, epsilon, loss, d, aggregation, prior, properties, solver, symmetric, "all")


@dataclass
class CountDesign:
    """A designed count mechanism (what :func:`design_count_mechanism` returns).

    Attributes
    ----------
    matrix : ndarray of shape (n+1, n+1)
    mechanism : {"GM", "EM", "UM", "RR", "LP"}
        What was used.
    objective : float
        The requested loss of ``matrix`` under the prior and aggregation.
    properties : dict
        :func:`~sklearn_ldp.mechanisms.count.check_properties` of ``matrix`` (with "DP").
    reason : str
        Why this mechanism (the thesis's rule for ``"auto"``).
    lp : CountLPResult or None
        The LP details when an LP was solved.
    """

    matrix: np.ndarray
    mechanism: str
    objective: float
    properties: dict
    reason: str
    lp: CountLPResult | None = None


def design_count_mechanism(group_size, epsilon, loss="L0", d=1, aggregation="sum", prior=None,
                           properties=(), mechanism="auto", solver="auto", symmetric="auto"):
    """Design a count mechanism: a closed form where the thesis proves it optimal, else the LP.

    Parameters
    ----------
    group_size, epsilon, loss, d, aggregation, prior, properties, solver, symmetric
        As in :func:`solve_count_lp`.
    mechanism : {"auto", "LP", "GM", "EM", "UM", "RR"}, default="auto"
        ``"auto"`` applies :func:`~sklearn_ldp.mechanisms.count.choose_mechanism`; a closed
        form is checked against the required properties (ValueError naming those it lacks).

    Returns
    -------
    CountDesign

    Examples
    --------
    >>> design = design_count_mechanism(8, 0.1, properties=("F",))
    >>> design.mechanism, design.properties["F"]
    ('EM', True)
    """
    n = check_group_size(group_size)
    epsilon = check_epsilon(epsilon)
    mechanism = check_mechanism_name(mechanism)
    required = check_property_names(properties)
    loss, d, aggregation = check_loss(loss), check_d(d), check_aggregation(aggregation)
    _check_solver(solver)
    _check_symmetric(symmetric)
    w = check_prior(prior, n)
    lp = None
    if mechanism == "auto":
        choice = choose_mechanism(n, epsilon, required, loss, d, aggregation, w)
        name, reason = choice.name, choice.reason
        lp_properties = choice.lp_properties
    else:
        name, reason, lp_properties = mechanism, f"mechanism={mechanism!r} requested", required
    if name == "LP":
        lp = solve_count_lp(n, epsilon, loss, d, aggregation, w, lp_properties, solver,
                            symmetric)
        matrix = lp.matrix
    else:
        matrix = closed_form_mechanism(name, n, epsilon)
    found = check_properties(matrix, epsilon)
    if not found["DP"]:
        # Only reachable when alpha^n underflows (epsilon * n beyond about 700): entries that
        # should be tiny become 0 next to positive ones.
        raise ValueError(
            f"the {name} matrix for group_size={n}, epsilon={epsilon!r} is not exactly "
            f"epsilon-DP in floating point (alpha^k underflows: epsilon * group_size = "
            f"{epsilon * n:.0f}); use a smaller epsilon or group_size."
        )
    missing = [prop for prop in required if not found[prop]]
    if missing:
        raise ValueError(
            f"mechanism {name!r} does not satisfy the required properties {missing} for "
            f"group_size={n}, epsilon={epsilon!r} (alpha={alpha_of(epsilon):.4g}); use "
            "mechanism='auto' or 'LP'."
        )
    objective = expected_loss(matrix, loss, d, aggregation, w)
    return CountDesign(matrix, name, objective, found, reason, lp)
