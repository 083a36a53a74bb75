"""Build a factorization mechanism by strategy name (pure numpy; no scikit-learn here).

Names: the baselines ``randomized_response``, ``rappor``, ``hadamard``, ``hierarchical``,
``fourier``; ``optimized`` (strategy optimized for the workload); ``auto`` (the candidate with
the least analytic worst-case error on the workload).
"""

import numpy as np

from ..optimize.ldp_factorization import optimize_strategy
from .factorization import FactorizationMechanism
from .fourier import fourier_strategy
from .hadamard import hadamard_strategy
from .hierarchical import hierarchical_strategy
from .randomized_response import randomized_response_strategy
from .unary import MAX_EXACT_RAPPOR_CELLS, rappor_strategy

BASELINES = ("randomized_response", "rappor", "hadamard", "hierarchical", "fourier")
STRATEGIES = BASELINES + ("optimized", "auto")

# "auto" tries the exact RAPPOR matrix only where it is small (2^n outputs).
AUTO_RAPPOR_MAX_CELLS = 10


def check_strategy_name(name):
    if name not in STRATEGIES:
        raise ValueError(f"unknown strategy {name!r}; choose one of {', '.join(STRATEGIES)}.")
    return name


def _fourier_for(shape, epsilon, workload_matrix, max_order):
    """Fourier strategy of the given order, or of the least order that supports the workload."""
    if max_order is not None:
        return fourier_strategy(shape, epsilon, max_order), {"max_order": max_order}
    for order in range(1, len(shape) + 1):
        Q = fourier_strategy(shape, epsilon, order)
        if workload_matrix is None or order == len(shape):
            break
        if FactorizationMechanism(Q, epsilon, "fourier").supports(workload_matrix):
            break
    return Q, {"max_order": order}


def baseline_mechanism(name, shape, epsilon, workload_matrix=None, branching=4, max_order=None):
    """The named baseline strategy over a domain of the given shape, as a mechanism."""
    n = int(np.prod(shape))
    params = {}
    if name == "randomized_response":
        Q = randomized_response_strategy(n, epsilon)
    elif name == "rappor":
        Q = rappor_strategy(n, epsilon)
    elif name == "hadamard":
        Q = hadamard_strategy(n, epsilon)
    elif name == "hierarchical":
        Q = hierarchical_strategy(n, epsilon, branching)
        params = {"branching": branching}
    elif name == "fourier":
        Q, params = _fourier_for(shape, epsilon, workload_matrix, max_order)
    else:
        raise ValueError(f"{name!r} is not a baseline strategy; choose one of {BASELINES}.")
    return FactorizationMechanism(Q, epsilon, name, params)


def worst_case_variance(mechanism, gram):
    """Worst-case per-user variance of the workload, or inf if the mechanism cannot answer it."""
    if gram is None:
        gram = np.eye(mechanism.n_inputs)
    if not mechanism.supports_gram(gram):
        return np.inf
    return float(mechanism.per_user_variance(gram).max())


def build_mechanism(
    name,
    shape,
    epsilon,
    workload_matrix=None,
    branching=4,
    max_order=None,
    n_outputs=None,
    init="random",
    max_iter=500,
    tol=1e-6,
    random_state=None,
    verbose=0,
):
    """Build the named strategy for a domain of the given shape and an optional workload.

    Returns
    -------
    mechanism : FactorizationMechanism
    report : dict
        ``candidates`` (strategy name -> worst-case per-user variance; all tried candidates
        for ``"auto"``), and for optimized strategies ``n_iter``, ``history``, ``converged``.
    """
    check_strategy_name(name)
    shape = tuple(int(size) for size in shape)
    n = int(np.prod(shape))
    W = None if workload_matrix is None else np.asarray(workload_matrix, dtype=float)
    gram = np.eye(n) if W is None else W.T @ W
    report = {"candidates": {}}

    def baseline(strategy):
        return baseline_mechanism(strategy, shape, epsilon, W, branching, max_order)

    if name in BASELINES:
        mechanism = baseline(name)
        report["candidates"][name] = worst_case_variance(mechanism, gram)
        return mechanism, report

    if isinstance(init, str) and init not in ("random", "baseline", "best"):
        raise ValueError(
            f"init must be 'random', 'baseline', 'best' or a strategy matrix, got {init!r}."
        )
    from_baseline = isinstance(init, str) and init in ("baseline", "best")
    candidates = {}
    if name == "auto" or from_baseline:
        for strategy in BASELINES:
            if strategy == "rappor" and n > min(AUTO_RAPPOR_MAX_CELLS, MAX_EXACT_RAPPOR_CELLS):
                continue
            try:
                candidate = baseline(strategy)
            except ValueError:
                continue  # e.g. too large for a dense matrix at this domain size
            candidates[strategy] = (worst_case_variance(candidate, gram), candidate)
    if not isinstance(init, str):
        starts = [init]
    else:
        starts = ["random"] if init in ("random", "best") else []
        # The optimizer needs Q^T D^-1 Q invertible: start from the best full-rank baseline.
        full_rank = [item for item in candidates.values() if item[1].null_space_dim == 0]
        if from_baseline and full_rank:
            starts.append(min(full_rank, key=lambda item: item[0])[1].Q)
        if not starts:
            starts = ["random"]
    # Several starts: keep the run with the least worst-case variance. Starting from the best
    # baseline guarantees the result is never worse than it (the start is a kept iterate).
    result = min(
        (
            optimize_strategy(
                gram, epsilon, n_outputs=n_outputs, init=start, max_iter=max_iter, tol=tol,
                random_state=random_state, verbose=verbose,
            )
            for start in starts
        ),
        key=lambda run: run.worst_case,
    )
    optimized = FactorizationMechanism(result.Q, epsilon, "optimized")
    candidates["optimized"] = (worst_case_variance(optimized, gram), optimized)
    report.update(n_iter=result.n_iter, history=result.history, converged=result.converged)
    report["candidates"] = {key: value[0] for key, value in candidates.items()}
    if name == "optimized":
        return optimized, report
    best = min(candidates, key=lambda key: candidates[key][0])
    return candidates[best][1], report
