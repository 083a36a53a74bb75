"""Build a local (LDP) mechanism by strategy name: the registry of names, and the optimizer.

The selection layer: the only place that knows both :mod:`sklearn_ldp.mechanisms` and
:mod:`sklearn_ldp.optimize` (pure numpy; no scikit-learn here).

Names:

* frequency oracles (structured, any domain size): ``randomized_response``, ``rappor``
  (symmetric unary encoding), ``oue``, ``olh``, ``blh``, ``hadamard``, ``hrr``,
  ``subset_selection`` (the "flat" methods for range queries);
* structured range mechanisms (any domain size, thesis chapter 5): ``hierarchical`` (a B-ary
  tree, one sampled level per user through the frequency oracle ``oracle`` in {"oue", "olh",
  "hrr"}) and ``haar`` (HaarHRR);
* factorization baselines (dense strategy matrices): ``hierarchical_matrix`` (the same tree
  with Hadamard response per level, as one matrix with its optimal decoder), ``fourier``;
* Bassily's randomizers for the workload's columns: ``gaussian`` ((epsilon, delta)-LDP) and
  ``gaussian_pure`` (epsilon-LDP by rejection sampling);
* marginal strategies (thesis chapter 4; every marginal of order <= ``max_order``, no
  workload): ``inp_rr``, ``inp_ps``, ``inp_ht``, ``marg_rr``, ``marg_ps``, ``marg_ht`` and the
  ``inp_em`` baseline (:mod:`sklearn_ldp.mechanisms.marginals`). They are not candidates of
  ``auto``, whose selection compares errors on a workload matrix;
* ``optimized`` (strategy optimized for the workload) and ``auto`` (the candidate with the
  least analytic worst-case error on the workload among the epsilon-LDP frequency oracles,
  the range mechanisms, the factorization baselines and ``optimized``).
"""

import numbers
import time

import numpy as np

from .._logging import get_logger
from ..mechanisms.base import mechanism_class
from ..mechanisms.factorization import FactorizationMechanism
from ..mechanisms.fourier import fourier_strategy
from ..mechanisms.hierarchical import hierarchical_strategy
from ..mechanisms.marginals import MARGINAL_STRATEGIES, build_marginal_mechanism
from ..optimize.ldp_factorization import optimize_strategy
from ..workloads import as_workload, histogram

ORACLES = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
           "subset_selection")
RANGE_MECHANISMS = ("hierarchical", "haar")
FACTORIZATION_BASELINES = ("hierarchical_matrix", "fourier")
BASELINES = ORACLES + RANGE_MECHANISMS + FACTORIZATION_BASELINES
WORKLOAD_RANDOMIZERS = ("gaussian", "gaussian_pure")
STRATEGIES = BASELINES + WORKLOAD_RANDOMIZERS + MARGINAL_STRATEGIES + ("optimized", "auto")

# Dense strategy matrices (the factorization baselines, "optimized") have at least n x n
# entries and their error takes O(n^3): "auto" scores them up to this many cells, and
# "optimized" (O(m n^2) per iteration, m = 4n outputs) runs up to OPTIMIZED_MAX_CELLS.
AUTO_DENSE_MAX_CELLS = 256
AUTO_OPTIMIZE_MAX_CELLS = 64
OPTIMIZED_MAX_CELLS = 2048
# oracle="auto" of the "hierarchical" tree: OUE (least variance, one bit per node of the
# level) up to this many cells, HRR (one integer per report) beyond.
AUTO_OUE_MAX_CELLS = 4096
# Bassily's randomizers privatize a dense column of the workload (p entries per user).
WORKLOAD_RANDOMIZER_MAX_ENTRIES = 2**24
# Strategies that scale to any domain, named in the errors of those that do not.
SCALABLE_ADVICE = ("for histograms 'olh', 'hadamard' or 'hrr'; for ranges, prefixes and "
                   "quantiles 'hierarchical' or 'haar'; for marginals the marginal strategies "
                   "('inp_ht') with MarginalEstimator; or strategy='auto'")

logger = get_logger("selection")

# A baseline strategy matrix may start the optimizer when it has at most this many outputs
# per cell (unary encoding and subset selection have exponentially many).
MAX_START_OUTPUTS_PER_CELL = 16


def check_strategy_name(name):
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}.")
    return name


def marginal_order(shape, max_order=None, columns=None):
    """The ``max_order`` of a marginal strategy over ``shape``, checked (default ``min(2, d)``).

    ``columns`` (the attributes' names) make the errors name the column at fault.

    Examples
    --------
    >>> marginal_order((2, 3, 2)), marginal_order((4,))
    (2, 1)
    """
    names = list(columns) if columns is not None else [f"at position {i}"
                                                      for i in range(len(shape))]
    for name, size in zip(names, shape, strict=True):
        if size < 2:
            label = name if columns is None else repr(name)
            raise ValueError(f"column {label} has a single category: a marginal strategy "
                             "needs at least 2 categories per column (drop constant columns).")
    if max_order is None:
        return min(2, len(shape))
    if (isinstance(max_order, bool) or not isinstance(max_order, numbers.Integral)
            or not 1 <= max_order <= len(shape)):
        raise ValueError(f"max_order must be an integer between 1 and the number of columns "
                         f"({len(shape)}), got {max_order!r}.")
    return int(max_order)


def _fourier_for(shape, epsilon, workload, max_order):
    """Fourier strategy of the given order, or of the least order that supports the workload."""
    if max_order is not None:
        return fourier_strategy(shape, epsilon, max_order), {"max_order": max_order}
    for order in range(1, len(shape) + 1):
        Q = fourier_strategy(shape, epsilon, order)
        if workload is None or order == len(shape):
            break
        if FactorizationMechanism(Q, epsilon, "fourier").supports(workload):
            break
    return Q, {"max_order": order}


def _coerce_workload(workload, workload_matrix):
    """The workload from the new ``workload`` or the former ``workload_matrix`` argument."""
    if workload is None and workload_matrix is not None:
        workload = workload_matrix
    return None if workload is None else as_workload(workload)


def baseline_mechanism(name, shape, epsilon, workload=None, branching=4, max_order=None,
                       oracle="auto", workload_matrix=None):
    """The named baseline strategy over a domain of the given shape, as a mechanism.

    ``branching`` and ``oracle`` (the frequency oracle of each level, or ``"auto"``: OUE up
    to ``AUTO_OUE_MAX_CELLS`` cells, HRR beyond) configure ``"hierarchical"``;
    ``branching`` also ``"hierarchical_matrix"``. ``workload`` (a Workload or a matrix;
    ``workload_matrix`` is its former name) chooses the order of ``"fourier"``.
    """
    workload = _coerce_workload(workload, workload_matrix)
    n = int(np.prod(shape))
    if name in ORACLES:
        return mechanism_class(name)(n, epsilon)
    if name == "hierarchical":
        if oracle == "auto":
            oracle = "oue" if n <= AUTO_OUE_MAX_CELLS else "hrr"
        return mechanism_class("hierarchical")(n, epsilon, branching=branching, oracle=oracle)
    if name == "haar":
        return mechanism_class("haar")(n, epsilon)
    if name == "hierarchical_matrix":
        Q, params = hierarchical_strategy(n, epsilon, branching), {"branching": branching}
    elif name == "fourier":
        Q, params = _fourier_for(shape, epsilon, workload, max_order)
    else:
        raise ValueError(f"{name!r} is not a baseline strategy; choose one of {BASELINES}.")
    return FactorizationMechanism(Q, epsilon, name, params)


def workload_randomizer(name, n, epsilon, workload, delta=None):
    """Bassily's Gaussian randomizers, which privatize the workload's column of each user."""
    if workload is None:
        raise ValueError(f"the {name!r} strategy privatizes the workload's columns: pass a "
                         "workload.")
    workload = as_workload(workload)
    if workload.n_queries * workload.n_cells > WORKLOAD_RANDOMIZER_MAX_ENTRIES:
        raise ValueError(
            f"the {name!r} strategy privatizes a dense column of the workload for every user "
            f"and holds the {workload.n_queries} x {workload.n_cells} workload densely "
            f"(limit {WORKLOAD_RANDOMIZER_MAX_ENTRIES} entries). Use fewer queries, or a "
            f"strategy that scales: {SCALABLE_ADVICE}.")
    matrix = workload.toarray()
    if name == "gaussian":
        if delta is None:
            raise ValueError("the 'gaussian' strategy is (epsilon, delta)-LDP: pass delta, a "
                             "probability in (0, 1) such as 1e-6.")
        return mechanism_class("gaussian")(n, epsilon, delta, matrix)
    return mechanism_class("gaussian_pure")(n, epsilon, matrix)


def _start_matrix(mechanism):
    """The mechanism's strategy matrix if it can start the optimizer, else None."""
    if mechanism.null_space_dim != 0:
        return None  # the optimizer needs Q^T D^-1 Q invertible
    try:
        Q = mechanism.strategy_matrix()
    except ValueError:
        return None
    return Q if Q.shape[0] <= MAX_START_OUTPUTS_PER_CELL * Q.shape[1] else None


def _variances(mechanism, gram):
    """``(worst, average)`` per-user variance of the workload, inf if it cannot be answered."""
    if not mechanism.supports_gram(gram):
        return np.inf, np.inf
    z = mechanism.per_user_variance(gram)
    return float(z.max()), float(z.mean())


def _expected_error(row):
    """The ``expected_error`` dict of one user from a selection row (computed once)."""
    return {"worst_case": row["worst_case"], "average_case": row["average_case"]}


def worst_case_variance(mechanism, gram):
    """Worst-case per-user variance of the workload, or inf if the mechanism cannot answer it.

    ``gram`` is a Gram operator, a dense ``W^T W``, or None (the histogram).
    """
    if gram is None:
        gram = histogram(mechanism.n_inputs).gram()
    return _variances(mechanism, gram)[0]


def _skip_reason(name, n):
    """Why ``auto`` does not score the candidate ``name`` at ``n`` cells (None: it does)."""
    if name in FACTORIZATION_BASELINES and n > AUTO_DENSE_MAX_CELLS:
        return (f"dense strategy matrix: its error costs O(n^3), scored up to "
                f"{AUTO_DENSE_MAX_CELLS} cells")
    return None


def _score_candidates(build, names, gram, n, deadline):
    """Score each named candidate on the workload; returns ``(rows, mechanisms)``.

    ``rows`` maps every name to a dict (``worst_case``, ``average_case``, ``seconds``,
    ``status`` "scored" or "skipped", ``reason``); ``mechanisms`` the scored ones.
    """
    rows, mechanisms = {}, {}
    for name in names:
        reason = _skip_reason(name, n)
        if reason is None and time.perf_counter() > deadline:
            reason = "selection time budget used up"
        if reason is not None:
            rows[name] = {"worst_case": np.nan, "average_case": np.nan, "seconds": 0.0,
                          "status": "skipped", "reason": reason}
            logger.info("auto: skipped %s (%s)", name, reason)
            continue
        start = time.perf_counter()
        try:
            mechanism = build(name)
            worst, average = _variances(mechanism, gram)
        except (ValueError, NotImplementedError, MemoryError) as exc:
            rows[name] = {"worst_case": np.nan, "average_case": np.nan,
                          "seconds": time.perf_counter() - start, "status": "skipped",
                          "reason": f"{type(exc).__name__}: {exc}"}
            logger.info("auto: skipped %s (%s)", name, exc)
            continue
        seconds = time.perf_counter() - start
        rows[name] = {"worst_case": worst, "average_case": average, "seconds": seconds,
                      "status": "scored", "reason": "" if np.isfinite(worst) else
                      "cannot answer the workload without bias"}
        mechanisms[name] = mechanism
        logger.info("auto: scored %s: worst-case per-user variance %.6g (%.2f s)", name,
                    worst, seconds)
    return rows, mechanisms


def check_optimized_size(n, n_outputs=None):
    """Refuse ``"optimized"`` at once past ``OPTIMIZED_MAX_CELLS`` cells, naming what scales."""
    if n > OPTIMIZED_MAX_CELLS:
        raise ValueError(
            f"strategy='optimized' optimizes a dense {4 * n if n_outputs is None else n_outputs}"
            f" x {n} strategy matrix (O(m n^2) per iteration) and runs up to "
            f"{OPTIMIZED_MAX_CELLS} cells; this domain has {n}. Use a structured strategy: "
            f"{SCALABLE_ADVICE}.")


def build_mechanism(
    name,
    shape,
    epsilon,
    workload=None,
    branching=4,
    max_order=None,
    n_outputs=None,
    init="random",
    max_iter=500,
    tol=1e-6,
    random_state=None,
    verbose=0,
    delta=None,
    oracle="auto",
    max_seconds=None,
    workload_matrix=None,
):
    """Build the named strategy for a domain of the given shape and an optional workload.

    Parameters
    ----------
    workload : Workload, array or None
        The queries (default the histogram); ``workload_matrix`` is its former name.
    max_seconds : float or None
        Time budget of ``"optimized"`` (the optimizer returns its best iterate when it runs
        out) and of ``"auto"`` (candidates not scored by then are skipped, and the optimizer
        gets what is left).
    verbose : int
        Progress of the optimizer and of the selection through :mod:`logging` (logger
        ``"sklearn_ldp"``): > 0 sets it to INFO level if it has no level yet.

    Returns
    -------
    mechanism : Mechanism
    report : dict
        ``candidates`` (strategy name -> worst-case per-user variance of every scored
        candidate, ``inf`` if it cannot answer the workload), ``selection`` (one dict per
        candidate considered: ``worst_case``, ``average_case``, ``seconds``, ``status`` in
        {"scored", "skipped", "chosen"} and the ``reason`` of a skip), and for optimized
        strategies ``n_iter``, ``history``, ``converged``.
    """
    check_strategy_name(name)
    shape = tuple(int(size) for size in shape)
    if name in MARGINAL_STRATEGIES:  # no workload: every marginal up to max_order
        mechanism = build_marginal_mechanism(name, shape, epsilon, marginal_order(shape,
                                                                                  max_order))
        return mechanism, {"candidates": {}, "selection": {}}
    n = int(np.prod(shape))
    workload = _coerce_workload(workload, workload_matrix)
    if workload is None:
        workload = histogram(n)
    workload.check_width(n)
    gram = workload.gram()
    start = time.perf_counter()
    deadline = np.inf if max_seconds is None else start + float(max_seconds)
    get_logger("selection", verbose)

    def baseline(strategy):
        return baseline_mechanism(strategy, shape, epsilon, workload, branching, max_order,
                                  oracle)

    if name in BASELINES or name in WORKLOAD_RANDOMIZERS:
        if name in BASELINES:
            mechanism = baseline(name)
        else:
            mechanism = workload_randomizer(name, n, epsilon, workload, delta)
        worst, average = _variances(mechanism, gram)
        row = {"worst_case": worst, "average_case": average,
               "seconds": time.perf_counter() - start, "status": "chosen", "reason": ""}
        return mechanism, {"candidates": {name: worst}, "selection": {name: row},
                           "expected_error": _expected_error(row)}

    if isinstance(init, str) and init not in ("random", "baseline", "best"):
        raise ValueError(
            f"init must be 'random', 'baseline', 'best' or a strategy matrix, got {init!r}."
        )
    if name == "optimized":
        check_optimized_size(n, n_outputs)
    from_baseline = isinstance(init, str) and init in ("baseline", "best")
    rows, mechanisms = {}, {}
    if name == "auto" or from_baseline:
        rows, mechanisms = _score_candidates(baseline, BASELINES, gram, n, deadline)
    run_optimizer = name == "optimized" or n <= AUTO_OPTIMIZE_MAX_CELLS
    if name == "auto" and not run_optimizer:
        rows["optimized"] = {"worst_case": np.nan, "average_case": np.nan, "seconds": 0.0,
                             "status": "skipped",
                             "reason": f"the optimizer runs in 'auto' up to "
                                       f"{AUTO_OPTIMIZE_MAX_CELLS} cells; ask for "
                                       "strategy='optimized' explicitly (up to "
                                       f"{OPTIMIZED_MAX_CELLS} cells)"}
    report = {}
    if run_optimizer:
        optimized, report = _optimize(gram, epsilon, n_outputs, init, mechanisms, max_iter, tol,
                                      random_state, deadline, verbose)
        worst, average = _variances(optimized, gram)
        rows["optimized"] = {"worst_case": worst, "average_case": average,
                             "seconds": sum(h["seconds"] for h in report["history"][-1:]),
                             "status": "scored", "reason": ""}
        mechanisms["optimized"] = optimized
        if name == "optimized":
            rows = {"optimized": rows["optimized"]}
            mechanisms = {"optimized": optimized}
    scored = {key: row["worst_case"] for key, row in rows.items() if row["status"] == "scored"}
    if not scored:
        raise ValueError(f"no candidate strategy could be scored on this workload: "
                         f"{ {key: row['reason'] for key, row in rows.items()} }")
    best = min(scored, key=scored.get)
    rows[best]["status"] = "chosen"
    logger.info("%s: chose %s (worst-case per-user variance %.6g) in %.2f s", name, best,
                scored[best], time.perf_counter() - start)
    report["candidates"] = scored
    report["selection"] = rows
    report["expected_error"] = _expected_error(rows[best])
    return mechanisms[best], report


def _optimize(gram, epsilon, n_outputs, init, mechanisms, max_iter, tol, random_state,
              deadline, verbose):
    """Run the LDP factorization optimizer from each start; the best run by worst case."""
    if not isinstance(init, str):
        starts = [init]
    else:
        starts = ["random"] if init in ("random", "best") else []
        # Start from the best baseline whose strategy matrix can seed the optimizer.
        seeds = [(worst_case_variance(m, gram), _start_matrix(m)) for m in mechanisms.values()]
        seeds = [seed for seed in seeds if seed[1] is not None and np.isfinite(seed[0])]
        if isinstance(init, str) and init in ("baseline", "best") and seeds:
            starts.append(min(seeds, key=lambda seed: seed[0])[1])
        if not starts:
            starts = ["random"]
    dense_gram = np.asarray(gram.toarray())
    runs = []
    for start in starts:
        remaining = None if not np.isfinite(deadline) else max(deadline - time.perf_counter(),
                                                               0.0) / max(len(starts), 1)
        runs.append(optimize_strategy(dense_gram, epsilon, n_outputs=n_outputs, init=start,
                                      max_iter=max_iter, tol=tol, max_seconds=remaining,
                                      random_state=random_state, verbose=verbose))
    # Several starts: keep the run with the least worst-case variance. Starting from the best
    # baseline guarantees the result is never worse than its strategy matrix with the optimal
    # reconstruction (the start is a kept iterate).
    result = min(runs, key=lambda run: run.worst_case)
    optimized = FactorizationMechanism(result.Q, epsilon, "optimized")
    return optimized, {"n_iter": result.n_iter, "history": result.history,
                       "converged": result.converged,
                       "stopped_by_budget": not result.converged and result.n_iter < max_iter}
