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
* ``"base_cut"`` (Wang et al., NDSS 2020): every cell whose estimate is below the
  significance threshold ``Phi^-1(1 - alpha / n) sigma_j`` is set to 0, the others are kept
  (:func:`base_cut`). Non-negative; the total is not constrained (the paper's Base-Cut).
* ``"em"``: the maximum-likelihood distribution given the aggregated reports and the
  mechanism's channel, by EM / iterative Bayesian update (:func:`em_estimate`,
  :mod:`sklearn_ldp.mechanisms.oracles.em`): exact for k-RR, Hadamard response, HRR and
  factorization strategies, the composite (per-cell binomial) likelihood of the support
  counts for unary encoding, local hashing and subset selection.

Marginal tables (:func:`consistent_marginals`): the weighted least-squares projection of
noisy k-way marginals onto non-negative tables that sum to 1 and agree on every shared
lower-order marginal.
"""

import itertools
import math

import numpy as np
import scipy.sparse
import scipy.sparse.linalg
from scipy import optimize, stats

from .mechanisms.oracles.em import em_frequencies
from .optimize.hull import project_onto_hull
from .optimize.projection import project_bounded_simplex

POSTPROCESS = ("none", "clip", "norm_sub", "simplex", "wnnls", "hull", "base_cut", "em")
# The options of each post-processing that takes any (``params`` of :func:`postprocess`).
POSTPROCESS_PARAMS = {"base_cut": ("alpha",),
                      "em": ("max_iter", "tol", "solver", "accelerate", "verbose")}


def simplex_projection(x_hat, total):
    """Euclidean projection of ``x_hat`` onto ``{x >= 0, sum(x) = total}``.

    The fixed point of Wang et al.'s Norm-Sub (negatives to 0, a common amount subtracted
    from the positive cells until they sum to ``total``), ``"norm_sub"`` and ``"simplex"``
    of :func:`postprocess`.

    Parameters
    ----------
    x_hat : ndarray of shape (n,)
        The estimate (users per cell).
    total : float
        The known total (number of users), positive.

    Returns
    -------
    ndarray of shape (n,)
        ``max(x_hat - delta, 0)`` with ``delta`` such that it sums to ``total``.

    See Also
    --------
    postprocess : Every post-processing by name.
    em_estimate : The maximum-likelihood distribution.

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

    Parameters
    ----------
    x_hat : ndarray of shape (n,)
        The unbiased estimate (users per cell).
    gram : ndarray or Gram operator of shape (n, n)
        The workload's ``W^T W`` (anything with ``@`` against a vector).

    Returns
    -------
    ndarray of shape (n,)
        The non-negative data vector whose workload answers are closest to ``W x_hat``.

    See Also
    --------
    postprocess : Every post-processing by name.
    simplex_projection : The Euclidean projection with the known total.

    Examples
    --------
    >>> wnnls(np.array([3.0, -1.0]), np.eye(2)).round(6)
    array([3., 0.])
    """
    target = gram @ x_hat
    scale = max(float(np.abs(x_hat).sum()), 1.0)

    def objective(x):
        gx = gram @ x
        return (x @ gx - 2 * target @ x) / scale, 2 * (gx - target) / scale

    start = np.clip(x_hat, 0, None)
    result = optimize.minimize(
        objective, start, jac=True, method="L-BFGS-B", bounds=optimize.Bounds(0.0, np.inf),
        options={"maxiter": 5000, "ftol": 1e-12, "gtol": 1e-10},
    )
    return result.x


def hull_projection(x_hat, gram, total):
    """Bassily's projection of the answers ``W x_hat / total`` onto ``W B_1``, for any mechanism.

    Only the Gram matrix is needed: with any ``R`` such that ``R^T R = W^T W``,
    ``||W v - W x_hat / N|| = ||R v - R x_hat / N||``, so projecting ``R x_hat / N`` onto
    ``R B_1`` gives the same ``v*``. Returns the data vector ``total * v*`` (``||v*||_1 <= 1``),
    whose workload answers are the projected ones.

    Parameters
    ----------
    x_hat : ndarray of shape (n,)
        The unbiased estimate (users per cell).
    gram : ndarray of shape (n, n)
        The workload's ``W^T W`` (dense: it is diagonalized).
    total : float
        The number of users.

    Returns
    -------
    ndarray of shape (n,)
        ``total * v*`` with ``||v*||_1 <= 1``.

    See Also
    --------
    projected_answers : The same for Bassily's Gaussian randomizers, on the answers.
    postprocess : Every post-processing by name.

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


def projected_answers(mechanism, statistic, tol=1e-6, max_iter=20000):
    """Answers to the workload ``A`` projected onto ``N K``, ``K = A B_1`` (biased).

    For Bassily's Gaussian randomizers (``mechanism.A`` is the workload whose columns the
    users send). The unbiased answers ``A x_hat`` divided by ``N`` estimate the mean
    ``A x / N``, which lies in ``K``; their projection onto ``K`` (:func:`project_onto_hull`)
    is never farther from it, and much closer when ``N`` is small relative to ``d``.

    Parameters
    ----------
    mechanism : GaussianMechanism or GaussianRejectionMechanism
        A Bassily randomizer (it has the workload ``A``).
    statistic : ndarray
        Its aggregate of the reports.
    tol : float, default=1e-6
        Tolerance of :func:`~sklearn_ldp.optimize.hull.project_onto_hull`.
    max_iter : int, default=20000
        Iterations of the projection.

    Returns
    -------
    ndarray of shape (n_queries,)
        The projected answers, in counts (the projected mean times ``N``).

    See Also
    --------
    hull_projection : The same projection for any mechanism, through the Gram matrix.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import GaussianMechanism
    >>> mechanism = GaussianMechanism(3, 1.0, 1e-6, np.eye(3))
    >>> rng = np.random.default_rng(0)
    >>> statistic = mechanism.aggregate(mechanism.randomize(np.zeros(50, int), rng))
    >>> answers = projected_answers(mechanism, statistic)
    >>> bool(np.abs(answers).sum() <= 50 * (1 + 1e-5))
    True
    """
    n_users = mechanism.n_reports(statistic)
    if n_users == 0:
        raise ValueError("no reports: the statistic summarizes 0 users.")
    mean = mechanism.A @ mechanism.estimate(statistic) / n_users
    point, _ = project_onto_hull(mechanism.A, mean, tol=tol, max_iter=max_iter)
    return n_users * point


def base_cut(x_hat, std, alpha=0.05):
    """Wang et al.'s Base-Cut: estimates below the significance threshold set to 0.

    Cell ``j`` is kept when ``x_hat[j] > Phi^-1(1 - alpha / n) std[j]`` and set to 0
    otherwise (``n`` cells, ``Phi`` the standard normal distribution function). Under the
    Gaussian approximation of each cell's noise, an empty cell (true count 0) passes the
    threshold with probability ``alpha / n``, so all the empty cells together pass it with
    probability at most ``alpha`` (Bonferroni): the kept cells are the significantly
    non-empty ones, and every cell that cannot be told from 0 is 0. Kept cells are unchanged,
    so the output is non-negative but its total is not constrained (it is usually below the
    number of users: the small cells' mass is dropped).

    Parameters
    ----------
    x_hat : ndarray of shape (n,)
        Unbiased estimate (counts or fractions).
    std : float or ndarray of shape (n,)
        Standard deviation of each cell's estimate when the cell is empty, in the units of
        ``x_hat`` (the paper uses the oracle's variance for rare items; estimators pass the
        analytic variance of each cell with the users spread uniformly).
    alpha : float in (0, 1), default=0.05
        Family-wise probability that some empty cell is kept.

    Returns
    -------
    ndarray of shape (n,)
        ``x_hat`` with the cells below the threshold set to 0.

    See Also
    --------
    postprocess : Every post-processing by name.
    em_estimate : The maximum-likelihood distribution (also non-negative, and sums to N).

    References
    ----------
    .. [1] T. Wang, M. Lopuhaa-Zwakenberg, Z. Li, B. Skoric and N. Li, "Locally
       Differentially Private Frequency Estimation with Consistency", NDSS 2020 (Base-Cut).

    Examples
    --------
    >>> base_cut(np.array([500.0, 30.0, -20.0, 90.0]), std=20.0)
    array([500.,   0.,   0.,  90.])
    """
    x_hat = np.asarray(x_hat, dtype=float)
    if x_hat.ndim != 1 or x_hat.size == 0 or not np.all(np.isfinite(x_hat)):
        raise ValueError(f"x_hat must be a non-empty 1-D array of finite numbers, got shape "
                         f"{x_hat.shape}.")
    std = np.asarray(std, dtype=float)
    if std.shape not in ((), x_hat.shape) or not np.all(np.isfinite(std)) or np.any(std < 0):
        raise ValueError(f"std must be a non-negative finite number or one per cell "
                         f"({x_hat.shape[0]}), got shape {std.shape}.")
    if (isinstance(alpha, bool) or not isinstance(alpha, int | float | np.floating)
            or not 0 < alpha < 1):
        raise ValueError(f"alpha must lie in (0, 1), got {alpha!r}.")
    threshold = stats.norm.isf(alpha / x_hat.shape[0]) * std
    return np.where(x_hat > threshold, x_hat, 0.0)


def em_estimate(mechanism, statistic, max_iter=10000, tol=1e-2, solver="auto",
                accelerate=True, verbose=0):
    """Maximum-likelihood users per cell of a frequency oracle (EM / iterative Bayesian update).

    The distribution ``pi`` maximizing the likelihood of the aggregated reports under the
    mechanism's channel ``P(report | type)``, times the number of reports: non-negative and
    summing to it. Exact for k-RR, Hadamard response, HRR and factorization strategies, whose
    aggregate is the histogram of the reports; for unary encoding, local hashing and subset
    selection the aggregate keeps only the support counts, and what is maximized is their
    composite likelihood (each count binomial, the dependence between cells within a report
    ignored), an approximation of the MLE. Details in :mod:`sklearn_ldp.mechanisms.oracles.em`
    and ``docs/postprocessing.md``.

    Parameters
    ----------
    mechanism : Mechanism
        ``randomized_response``, ``rappor``, ``oue``, ``olh``, ``blh``, ``hadamard``, ``hrr``,
        ``subset_selection`` or a factorization strategy (``optimized``, ...).
    statistic : ndarray
        The mechanism's aggregate of the reports.
    max_iter : int, default=10000
        Most EM iterations (each one up to three EM updates with SQUAREM acceleration).
    tol : float, default=1e-2
        Stop when the log-likelihood is certainly within ``tol`` nats of its maximum (its
        duality gap; the estimate is then within ``sqrt(2 tol)`` standard deviations of the
        maximum-likelihood estimate), or when ten iterations gain less than ``tol / 100``
        together (EM creeping towards cells near 0; ``info["duality_gap"]`` says how close).
    solver : {"auto", "em"}, default="auto"
        ``"auto"``: for the support oracles (k-RR, unary encoding, local hashing, subset
        selection) the likelihood separates over cells and its maximum is computed directly
        (the fixed point of EM, to rounding); EM for the others. ``"em"``: EM everywhere.
    accelerate : bool, default=True
        SQUAREM extrapolation (safeguarded: the likelihood never decreases); ``False`` runs
        plain EM.
    verbose : int, default=0
        Log EM's progress about once a second (logger ``sklearn_ldp.oracle_em``).

    Returns
    -------
    counts : ndarray of shape (n_inputs,)
        Estimated users per cell, non-negative, summing to the number of reports.
    info : dict
        ``model`` (``"exact"`` or ``"composite"``), ``solver`` (``"closed_form"`` or
        ``"em"``), ``n_iter``, ``converged``, ``log_likelihood``, ``duality_gap`` (the
        log-likelihood is within this many nats of its maximum) and ``history`` (the
        log-likelihood after each iteration, non-decreasing).

    Raises
    ------
    TypeError
        The mechanism has no channel here (range trees, Gaussian, marginal mechanisms).
    ValueError
        Bad ``max_iter``, ``tol`` or ``solver``, an invalid statistic, or no reports.

    See Also
    --------
    postprocess : Every post-processing by name (``"em"`` calls this function).
    base_cut : Zero the cells that cannot be told from 0.

    References
    ----------
    .. [1] R. Agrawal and C. C. Aggarwal, "On the design and quantification of privacy
       preserving data mining algorithms", PODS 2001 (EM for randomized data).
    .. [2] P. Kairouz, K. Bonawitz and D. Ramage, "Discrete distribution estimation under
       local privacy", ICML 2016 (maximum likelihood for k-RR and RAPPOR).
    .. [3] E. ElSalamouny and C. Palamidessi, "Generalized iterative Bayesian update and
       applications to mechanisms for privacy protection", EuroS&P 2020.
    .. [4] R. Varadhan and C. Roland, "Simple and globally convergent methods for
       accelerating the convergence of any EM algorithm", Scand. J. Statist. 35, 2008
       (SQUAREM).

    Examples
    --------
    >>> from sklearn_ldp.mechanisms import OptimizedUnaryEncoding
    >>> mechanism = OptimizedUnaryEncoding(8, 1.0)
    >>> users = np.repeat([0, 1, 2], [600, 300, 100])
    >>> statistic = mechanism.aggregate(mechanism.randomize(users, np.random.default_rng(0)))
    >>> counts, info = em_estimate(mechanism, statistic)
    >>> bool(counts.min() >= 0), round(float(counts.sum()), 6), info["model"]
    (True, 1000.0, 'composite')
    """
    return em_frequencies(mechanism, statistic, max_iter=max_iter, tol=tol, solver=solver,
                          accelerate=accelerate, verbose=verbose)


def _check_params(method, params):
    """The options of ``method`` from ``params`` (a dict or None), unknown keys refused."""
    params = {} if params is None else params
    if not isinstance(params, dict):
        raise ValueError(f"postprocess_params must be a dict or None, got {params!r}.")
    allowed = POSTPROCESS_PARAMS.get(method, ())
    unknown = sorted(set(params) - set(allowed))
    if unknown:
        raise ValueError(f"postprocess_params {unknown} do not apply to postprocess="
                         f"{method!r}, which takes {list(allowed) or 'no options'}.")
    return params


def postprocess(x_hat, method, gram, total, *, std=None, mechanism=None, statistic=None,
                params=None):
    """Apply the named post-processing to the data-vector estimate ``x_hat``.

    Parameters
    ----------
    x_hat : ndarray of shape (n,)
        The unbiased estimate (users per cell).
    method : str
        One of ``POSTPROCESS``: ``"none"``, ``"clip"``, ``"norm_sub"``, ``"simplex"``,
        ``"wnnls"``, ``"hull"``, ``"base_cut"``, ``"em"`` (module docstring).
    gram : Gram operator, ndarray or None
        The workload's ``W^T W`` (``"wnnls"``, ``"hull"``).
    total : float
        The number of users (``"norm_sub"``, ``"simplex"``, ``"hull"``).
    std : float or ndarray, optional
        Standard deviation of each cell's estimate when empty (``"base_cut"``).
    mechanism, statistic : optional
        The mechanism and its aggregate (``"em"``).
    params : dict or None, optional
        Options: ``alpha`` for ``"base_cut"``; ``max_iter``, ``tol``, ``solver``,
        ``accelerate``, ``verbose`` for ``"em"`` (see :func:`em_estimate`). Keys that do
        not apply raise a ValueError.

    Returns
    -------
    ndarray of shape (n,)
        The post-processed estimate. For ``"em"``, ``(counts, info)`` is returned instead
        by :func:`em_estimate`; here only the counts.

    Raises
    ------
    ValueError
        Unknown ``method``, options that do not apply, or a missing input.

    See Also
    --------
    simplex_projection, wnnls, hull_projection, base_cut, em_estimate : The methods.

    Examples
    --------
    >>> postprocess(np.array([3.0, -1.0, 0.5]), "clip", None, 2.5)
    array([3. , 0. , 0.5])
    """
    if method not in POSTPROCESS:
        raise ValueError(f"postprocess must be one of {POSTPROCESS}, got {method!r}.")
    params = _check_params(method, params)
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
    if method == "base_cut":
        if std is None:
            raise ValueError("postprocess='base_cut' needs std, the standard deviation of "
                             "each cell's estimate.")
        return base_cut(x_hat, std, **params)
    if mechanism is None or statistic is None:
        raise ValueError("postprocess='em' needs the mechanism and its statistic.")
    return em_estimate(mechanism, statistic, **params)[0]


# ---------------------------------------------------------------------------- marginal tables
def marginalize(table, attributes, subset):
    """Sum a marginal table over the attributes that are not in ``subset``.

    Parameters
    ----------
    table : ndarray with one axis per attribute of ``attributes``
        The marginal table to sum.
    attributes : tuple of int
        The attributes (positions) of the axes of ``table``, in axis order.
    subset : tuple of int
        Attributes to keep, each one of ``attributes``; the result's axes follow their order
        in ``subset``.

    Returns
    -------
    ndarray
        The table over ``subset``, one axis per attribute in ``subset``'s order.

    See Also
    --------
    consistent_marginals : Tables that agree on every shared marginal.

    Examples
    --------
    >>> marginalize(np.array([[0.1, 0.2], [0.3, 0.4]]), (0, 3), (3,)).round(2)
    array([0.4, 0.6])
    """
    attributes, subset = tuple(attributes), tuple(subset)
    unknown = [a for a in subset if a not in attributes]
    if unknown or len(set(subset)) != len(subset):
        raise ValueError(f"subset {subset} must list distinct attributes of {attributes}.")
    dropped = tuple(axis for axis, a in enumerate(attributes) if a not in subset)
    summed = np.sum(table, axis=dropped)
    kept = [a for a in attributes if a in subset]
    return np.transpose(summed, [kept.index(a) for a in subset])


def _marginalization_matrix(shape, attributes, subset):
    """Sparse 0/1 matrix mapping a flat (C-order) table over ``attributes`` to its ``subset``."""
    sizes = [shape[a] for a in attributes]
    n_cells = math.prod(sizes)
    codes = np.unravel_index(np.arange(n_cells), sizes)
    kept = [codes[attributes.index(a)] for a in subset]
    rows = np.ravel_multi_index(kept, [shape[a] for a in subset])
    return scipy.sparse.csr_matrix(
        (np.ones(n_cells), (rows, np.arange(n_cells))),
        shape=(math.prod(shape[a] for a in subset), n_cells),
    )


def preferred_qp_solver():
    """``"CLARABEL"`` when cvxpy has it (it ships with cvxpy >= 1.4), else ``None``.

    For :func:`consistent_marginals`: Clarabel, an interior point method, meets the
    constraints to ~1e-12 where cvxpy's default quadratic solver (OSQP, an ADMM method with
    tolerance 1e-5) stops at 1e-5, in less time on noisy inputs, and its multipliers identify
    the cells at 0 for the polishing step. ``None`` lets cvxpy choose.

    Returns
    -------
    str or None
        The solver name to pass to :func:`consistent_marginals`.

    See Also
    --------
    consistent_marginals : The projection that uses it.

    Examples
    --------
    >>> preferred_qp_solver() in ("CLARABEL", None)
    True
    """
    import cvxpy as cp

    return "CLARABEL" if "CLARABEL" in cp.installed_solvers() else None


def _consistency_system(keys, shape):
    """The variables and equality constraints ``A x = b`` of :func:`consistent_marginals`.

    Returns ``(sets, offsets, A, b)``: every set of variables (the given ``keys`` first, then
    all their proper non-empty subsets), the offset of each set's cells in ``x``, and the
    sparse constraints: each 1-way table sums to 1, and the marginal of every table over each
    of its subsets of one attribute fewer equals that subset's table.
    """
    order = len(keys[0])
    subsets = sorted({s for key in keys for size in range(1, order)
                      for s in itertools.combinations(key, size)}, key=lambda s: (len(s), s))
    given = set(keys)
    sets = list(keys) + [s for s in subsets if s not in given]
    sizes = [math.prod(shape[a] for a in s) for s in sets]
    offsets = dict(zip(sets, np.cumsum([0] + sizes[:-1]).tolist(), strict=True))
    # Equality constraints A x = b as COO triplets, one block of rows per (set, parent).
    rows, columns, values, rhs = [], [], [], []
    n_rows = 0
    for s in sets:
        n_cells = math.prod(shape[a] for a in s)
        if len(s) == 1:  # each 1-way table sums to 1 (hence every table does)
            rows.append(np.full(n_cells, n_rows))
            columns.append(offsets[s] + np.arange(n_cells))
            values.append(np.ones(n_cells))
            rhs.append(np.ones(1))
            n_rows += 1
            continue
        for parent in itertools.combinations(s, len(s) - 1):
            margin = _marginalization_matrix(shape, s, parent).tocoo()
            n_parent = margin.shape[0]
            rows += [n_rows + margin.row, n_rows + np.arange(n_parent)]
            columns += [offsets[s] + margin.col, offsets[parent] + np.arange(n_parent)]
            values += [margin.data, -np.ones(n_parent)]
            rhs.append(np.zeros(n_parent))
            n_rows += n_parent
    A = scipy.sparse.csr_matrix(
        (np.concatenate(values), (np.concatenate(rows), np.concatenate(columns))),
        shape=(n_rows, sum(sizes)))
    return sets, offsets, A, np.concatenate(rhs)


# Constraint residual (in fractions) below which polishing stops: far below the 1e-9 to which
# the estimator promises agreement, and a few hundred ulps of the largest cell.
_POLISH_TOL = 1e-13
# Without the solver's multipliers, cells at or below this are taken as belonging at 0.
_ACTIVE_TOL = 1e-9
# Regularization of the KKT system (removed by iterative refinement).
_KKT_DELTA = 1e-10


def _restore_feasibility(x, A, b, n_observed, w, max_rounds=50):
    """Make a near-feasible point satisfy ``A x = b`` and ``x_obs >= 0`` to ~1e-13.

    Each round fixes the cells at 0 and moves the others by the smallest correction in the
    weighted norm ``sum d_i^2 w_i`` (the objective's metric) that removes the residual; cells
    pushed below 0 join the fixed ones. The correction is of the order of the residual.
    """
    x = np.array(x, dtype=float)
    x[:n_observed] = np.maximum(x[:n_observed], 0.0)
    # Scale of each variable in the correction: 1 / sqrt(w) for the observed cells; the
    # auxiliary lower-order tables carry no weight in the objective, and scale 1 lets them
    # move as freely as an average observed cell (weights are normalized to mean 1).
    scale = np.ones(x.shape[0])
    scale[:n_observed] = 1.0 / np.sqrt(w)
    for _ in range(max_rounds):
        residual = b - A @ x
        negative = x[:n_observed] < 0
        if np.max(np.abs(residual)) <= _POLISH_TOL and not negative.any():
            break
        x[:n_observed][negative] = 0.0
        free = np.ones(x.shape[0], dtype=bool)
        free[:n_observed] = x[:n_observed] > 0
        residual = b - A @ x
        scaled = A[:, free] @ scipy.sparse.diags(scale[free])
        # LSQR from 0 converges to the minimum-norm solution of a consistent system.
        step = scipy.sparse.linalg.lsqr(scaled, residual, atol=1e-16, btol=1e-16,
                                        iter_lim=10 * scaled.shape[1])[0]
        x[free] += scale[free] * step
    return x


def _solve_on_face(A, b, y, w, n_observed, zero):
    """The equality-constrained weighted least squares with the ``zero`` cells fixed at 0.

    ``min sum_free w (x - y)^2  s.t.  A x = b, x[zero] = 0``: its KKT system, regularized by
    ``_KKT_DELTA`` (the constraints are redundant, so the unregularized one is singular) and
    solved by one sparse LU factorization plus iterative refinement on the unregularized
    system. Returns ``(x, multipliers)``.
    """
    n_variables = A.shape[1]
    free = np.ones(n_variables, dtype=bool)
    free[:n_observed] = ~zero
    A_free = A[:, free].tocsc()
    hessian = np.zeros(n_variables)
    hessian[:n_observed] = w
    hessian = hessian[free]
    n_free, n_rows = int(free.sum()), A.shape[0]

    def kkt(delta):
        return scipy.sparse.bmat([
            [scipy.sparse.diags(hessian + delta), A_free.T],
            [A_free, -delta * scipy.sparse.identity(n_rows)],
        ], format="csc")

    exact = kkt(0.0)
    factor = scipy.sparse.linalg.splu(kkt(_KKT_DELTA))
    target = np.zeros(n_variables)
    target[:n_observed] = w * y
    rhs = np.concatenate([target[free], b])
    solution = factor.solve(rhs)
    for _ in range(20):
        residual = rhs - exact @ solution
        if np.max(np.abs(residual)) <= _POLISH_TOL * 1e-2:
            break
        solution += factor.solve(residual)
    x = np.zeros(n_variables)
    x[free] = solution[:n_free]
    return x, solution[n_free:]


def _polish(x, A, b, y, n_observed, w, multipliers=None, max_rounds=50):
    """The exact optimum near a solver's output; its constraints hold to ~1e-13.

    Interior-point and ADMM solvers meet the constraints only to their tolerance (1e-5 for
    cvxpy's default OSQP settings), and an interior point method's cells that belong at 0
    (degenerate ones: clipped inputs have many) converge only like the square root of its
    tolerance. This takes as active (at 0) the cells whose multiplier of ``x >= 0``
    (``multipliers``, the solver's dual values) exceeds their value, the usual
    identification from an interior point or ADMM solution, or without multipliers the
    cells below ``_ACTIVE_TOL``; it solves the KKT system of the remaining
    equality-constrained least squares exactly, and a cell that goes negative joins the
    active set. If the active set is right, that is the exact optimum; if the result is not
    feasible or has a larger objective than the solver's point made feasible by the smallest
    weighted correction (:func:`_restore_feasibility`), the latter is returned.
    """
    start = np.array(x, dtype=float)
    fallback = _restore_feasibility(start, A, b, n_observed, w)

    def objective(point):
        return float(np.sum(w * (point[:n_observed] - y) ** 2))

    if multipliers is None:
        zero = start[:n_observed] <= _ACTIVE_TOL
    else:
        zero = start[:n_observed] < np.asarray(multipliers, dtype=float)
    for _ in range(max_rounds):
        try:
            candidate, _ = _solve_on_face(A, b, y, w, n_observed, zero)
        except RuntimeError:  # a singular factorization: keep the solver's point
            return fallback
        # Below -1e-15: a real sign change, not the rounding of a cell at 0.
        negative = ~zero & (candidate[:n_observed] < -1e-15)
        if not negative.any():
            break
        zero |= negative
    else:
        return fallback
    candidate[:n_observed] = np.maximum(candidate[:n_observed], 0.0)
    feasible = np.max(np.abs(b - A @ candidate)) <= _POLISH_TOL
    slack = 1e-12 * max(1.0, objective(fallback))
    if feasible and objective(candidate) <= objective(fallback) + slack:
        return candidate
    return fallback


def consistent_marginals(tables, weights=None, solver=None, polish=True):
    """Non-negative, mutually consistent marginals closest to noisy ones (weighted least squares).

    Solves, with cvxpy,

    ``min sum_b sum_cells w_b (x_b - y_b)^2``  subject to  ``x_b >= 0``, ``sum(x_b) = 1`` and,
    for every two tables ``b, b'``, equal marginals over the attributes they share,

    where ``y_b`` are the noisy tables (fractions). Consistency is stated through one
    auxiliary table ``x_S`` per proper subset ``S`` of a table's attributes: the marginal of
    every table of ``|S| + 1`` attributes containing ``S`` must equal ``x_S``, so by
    induction every shared marginal of any order agrees.

    The true marginals satisfy every constraint, so (the feasible set being convex) the
    result is never farther from the truth than ``y`` in the weighted norm, whatever the
    noise; with ``w = 1 / variance`` it is the generalized least-squares fit ignoring the
    correlation between cells. The projection is biased (non-negativity), and usually
    more accurate.

    Parameters
    ----------
    tables : dict
        Sorted tuple of attribute positions -> ndarray with one axis per attribute (the
        noisy fractions). Every tuple has the same length ``k``; two tables give the same
        size to an attribute.
    weights : dict or None, default=None
        Same keys -> positive weights per cell (e.g. inverse variances); ``None``: all 1.
    solver : str or None, default=None
        A cvxpy solver name (default: cvxpy's choice for a quadratic program, OSQP, whose
        default tolerance is 1e-5; ``"CLARABEL"``, an interior point method, is about as fast
        here and much more accurate).
    polish : bool, default=True
        Refine the solver's output into the exact optimum (a solve of the KKT system with
        the solver's zero cells held at 0), so that the constraints hold to about 1e-13:
        cells exactly non-negative, sums 1 and shared marginals equal up to rounding. If
        that does not settle, the solver's output is made feasible by the smallest weighted
        correction instead. Solvers meet the constraints, and approach cells that belong at
        0, only to their tolerance; ``False`` returns their output with negative cells
        clipped to 0 (then the tables agree and sum to 1 only to that tolerance).

    Returns
    -------
    dict
        The projected tables, same keys and shapes.

    Raises
    ------
    ValueError
        Inconsistent keys, shapes or weights (naming the offending table).
    RuntimeError
        The solver failed.

    See Also
    --------
    marginalize : Sum a table over some of its attributes.
    clip_to_distribution : The clipped and renormalized tables (the usual input).

    References
    ----------
    .. [1] G. Cormode, T. Kulkarni and D. Srivastava, "Marginal Release Under Local
       Differential Privacy", SIGMOD 2018 (the marginal mechanisms and their consistency).
    .. [2] T. Wang, M. Lopuhaa-Zwakenberg, Z. Li, B. Skoric and N. Li, "Locally
       Differentially Private Frequency Estimation with Consistency", NDSS 2020.

    Examples
    --------
    >>> noisy = {(0, 1): np.array([[0.6, -0.1], [0.2, 0.3]]),
    ...          (0, 2): np.array([[0.4, 0.2], [0.1, 0.3]])}
    >>> fixed = consistent_marginals(noisy)
    >>> bool(np.allclose(fixed[(0, 1)].sum(axis=1), fixed[(0, 2)].sum(axis=1), atol=1e-12))
    True
    >>> bool(fixed[(0, 1)].min() >= 0.0)
    True
    """
    import cvxpy as cp

    keys = [tuple(int(a) for a in key) for key in tables]
    if not keys:
        raise ValueError("consistent_marginals needs at least one table.")
    order = len(keys[0])
    shape = {}
    for key in keys:
        table = np.asarray(tables[key])
        if len(key) != order or list(key) != sorted(set(key)):
            raise ValueError(f"tables must be keyed by sorted tuples of distinct attributes of "
                             f"one order; got {key} next to order {order}.")
        if table.ndim != order:
            raise ValueError(f"the table of {key} has {table.ndim} axes, expected {order}.")
        for a, size in zip(key, table.shape, strict=True):
            if shape.setdefault(a, size) != size:
                raise ValueError(f"attribute {a} has {size} categories in the table of {key} "
                                 f"but {shape[a]} in another table.")
    _, offsets, A, b = _consistency_system(keys, shape)
    n_variables = A.shape[1]
    n_observed = sum(math.prod(shape[a] for a in key) for key in keys)
    observed = np.concatenate([np.asarray(tables[key], dtype=float).ravel() for key in keys])
    if weights is None:
        w = np.ones(n_observed)
    else:
        w = np.concatenate([np.broadcast_to(np.asarray(weights[key], dtype=float),
                                            np.shape(tables[key])).ravel() for key in keys])
        if not np.all(np.isfinite(w)) or np.any(w <= 0):
            raise ValueError("weights must be finite and positive.")
    w = w / w.mean()  # the solver's tolerances are relative: keep the objective near 1
    x = cp.Variable(n_variables)
    objective = cp.sum_squares(cp.multiply(np.sqrt(w), x[:n_observed] - observed))
    # Non-negativity of the given tables implies it for their marginals.
    non_negative = x[:n_observed] >= 0
    problem = cp.Problem(cp.Minimize(objective), [A @ x == b, non_negative])
    problem.solve(solver=solver)
    if problem.status not in ("optimal", "optimal_inaccurate") or x.value is None:
        raise RuntimeError(f"the consistency projection failed (cvxpy status "
                           f"{problem.status!r}).")
    solution = np.asarray(x.value)
    if polish:
        solution = _polish(solution, A, b, observed, n_observed, w,
                           multipliers=non_negative.dual_value)
    result = {}
    for key in keys:
        table = solution[offsets[key]:offsets[key] + math.prod(shape[a] for a in key)]
        # Interior-point solutions can dip below zero by the solver tolerance (without
        # polishing; after it, this only removes signed zeros).
        result[key] = np.maximum(table, 0.0).reshape([shape[a] for a in key])
    return result


def clip_to_distribution(tables, axes=None):
    """Noisy tables as distributions: negative cells clipped to 0, then renormalized.

    Renormalized over ``axes`` (default: all; ``(-2, -1)`` for a stack of 2-way tables). The
    plug-in variance formulas, the chi-square statistic and the mutual information need
    probability tables; a table with no positive cell becomes uniform.

    Parameters
    ----------
    tables : array-like
        One table, or a stack of tables.
    axes : int, tuple of int or None, default=None
        The axes of one table (default: all).

    Returns
    -------
    ndarray of float
        Non-negative tables summing to 1 over ``axes``.

    See Also
    --------
    consistent_marginals : Clipped tables projected onto mutually consistent ones.

    Examples
    --------
    >>> clip_to_distribution(np.array([0.6, -0.2, 0.6]))
    array([0.5, 0. , 0.5])
    """
    clipped = np.clip(np.asarray(tables, dtype=float), 0.0, None)
    total = clipped.sum(axis=axes, keepdims=True)
    n_cells = clipped.size // total.size
    return np.where(total > 0, clipped / np.where(total > 0, total, 1.0), 1.0 / n_cells)
