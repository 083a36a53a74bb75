"""Design a count mechanism: a closed form where the thesis proves it optimal, else an LP.

The selection layer of count mechanisms (dissertation chapter 6): it validates the design
parameters, builds the cost matrix (:mod:`sklearn_ldp.mechanisms.central.count`), solves the linear
program (:func:`sklearn_ldp.optimize.count_lp.solve_mechanism_lp`) and repairs its solution.

Optima are often not unique: compare objective values, not matrices. The
solution is repaired into an exactly private matrix with
:func:`~sklearn_ldp.mechanisms.central.count.enforce_dp` (a mixture with the uniform mechanism of
weight about the solver tolerance, reported as ``repair_weight``; mixing with the uniform
mechanism keeps every property).
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._validation import check_epsilon, check_positive_int
from ..mechanisms.central.count import (
    alpha_of,
    check_group_size,
    check_mechanism_name,
    check_objective,
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
from ..optimize.count_lp import _check_solver, solve_mechanism_lp

__all__ = [
    "CountDesign",
    "CountLPResult",
    "design_count_mechanism",
    "solve_count_lp",
    "solve_ldp_lp",
]


@dataclass
class CountLPResult:
    """A solved count LP.

    Attributes
    ----------
    matrix : ndarray of shape (k, k)
        The mechanism, repaired to be exactly private (and symmetrized if asked).
    objective : float
        Objective of ``matrix`` recomputed from its entries
        (:func:`~sklearn_ldp.mechanisms.central.count.expected_loss`).
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


def _check_symmetric(symmetric):
    if symmetric not in ("auto", True, False):
        raise ValueError(f"symmetric must be 'auto', True or False, got {symmetric!r}.")
    return symmetric


def _solve(k, epsilon, loss, d, aggregation, prior, properties, solver, symmetric, neighbours):
    start = time.perf_counter()
    epsilon = check_epsilon(epsilon)
    alpha = math.exp(-epsilon)
    loss, d, aggregation = check_objective(loss, d, aggregation)
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
    C = cost_matrix(n, loss, d)
    raw, solver_objective, status, solver = solve_mechanism_lp(
        C, w, alpha, neighbours, aggregation, properties, solver, reduce)
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
        :func:`~sklearn_ldp.mechanisms.central.count.check_properties` of ``matrix`` (with "DP").
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
        ``"auto"`` applies :func:`~sklearn_ldp.mechanisms.central.count.choose_mechanism`; a closed
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
    loss, d, aggregation = check_objective(loss, d, aggregation)
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
