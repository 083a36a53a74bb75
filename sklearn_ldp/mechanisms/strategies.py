"""Build a mechanism by strategy name (pure numpy; no scikit-learn here).

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
  ``inp_em`` baseline (:mod:`.marginals`). They are not candidates of ``auto``, whose
  selection compares errors on a workload matrix;
* ``optimized`` (strategy optimized for the workload) and ``auto`` (the candidate with the
  least analytic worst-case error on the workload among the epsilon-LDP frequency oracles,
  the range mechanisms, the factorization baselines and ``optimized``).
"""

import numbers

import numpy as np

from .._validation import MAX_DENSE_ENTRIES
from ..optimize.ldp_factorization import optimize_strategy
from .base import mechanism_class
from .factorization import FactorizationMechanism
from .fourier import fourier_strategy
from .hierarchical import hierarchical_strategy
from .marginals import MARGINAL_STRATEGIES, build_marginal_mechanism

ORACLES = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard", "hrr",
           "subset_selection")
RANGE_MECHANISMS = ("hierarchical", "haar")
FACTORIZATION_BASELINES = ("hierarchical_matrix", "fourier")
BASELINES = ORACLES + RANGE_MECHANISMS + FACTORIZATION_BASELINES
WORKLOAD_RANDOMIZERS = ("gaussian", "gaussian_pure")
STRATEGIES = BASELINES + WORKLOAD_RANDOMIZERS + MARGINAL_STRATEGIES + ("optimized", "auto")

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


def baseline_mechanism(name, shape, epsilon, workload_matrix=None, branching=4, max_order=None,
                       oracle="oue"):
    """The named baseline strategy over a domain of the given shape, as a mechanism.

    ``branching`` and ``oracle`` (the frequency oracle of each level) configure
    ``"hierarchical"``; ``branching`` also ``"hierarchical_matrix"``.
    """
    n = int(np.prod(shape))
    if name in ORACLES:
        return mechanism_class(name)(n, epsilon)
    if name == "hierarchical":
        return mechanism_class("hierarchical")(n, epsilon, branching=branching, oracle=oracle)
    if name == "haar":
        return mechanism_class("haar")(n, epsilon)
    if name == "hierarchical_matrix":
        Q, params = hierarchical_strategy(n, epsilon, branching), {"branching": branching}
    elif name == "fourier":
        Q, params = _fourier_for(shape, epsilon, workload_matrix, max_order)
    else:
        raise ValueError(f"{name!r} is not a baseline strategy; choose one of {BASELINES}.")
    return FactorizationMechanism(Q, epsilon, name, params)


def workload_randomizer(name, n, epsilon, workload_matrix, delta=None):
    """Bassily's Gaussian randomizers, which privatize the workload's column of each user."""
    if workload_matrix is None:
        raise ValueError(f"the {name!r} strategy privatizes the workload's columns: pass a "
                         "workload.")
    matrix = np.asarray(workload_matrix, dtype=float)
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
    delta=None,
    oracle="oue",
):
    """Build the named strategy for a domain of the given shape and an optional workload.

    Returns
    -------
    mechanism : Mechanism
    report : dict
        ``candidates`` (strategy name -> worst-case per-user variance; all tried candidates
        for ``"auto"``, ``inf`` for a candidate that cannot answer the workload), and for
        optimized strategies ``n_iter``, ``history``, ``converged``.
    """
    check_strategy_name(name)
    shape = tuple(int(size) for size in shape)
    if name in MARGINAL_STRATEGIES:  # no workload: every marginal up to max_order
        mechanism = build_marginal_mechanism(name, shape, epsilon, marginal_order(shape,
                                                                                  max_order))
        return mechanism, {"candidates": {}}
    n = int(np.prod(shape))
    W = None if workload_matrix is None else np.asarray(workload_matrix, dtype=float)
    gram = np.eye(n) if W is None else W.T @ W
    report = {"candidates": {}}

    def baseline(strategy):
        return baseline_mechanism(strategy, shape, epsilon, W, branching, max_order, oracle)

    if name in BASELINES or name in WORKLOAD_RANDOMIZERS:
        if name in BASELINES:
            mechanism = baseline(name)
        else:
            mechanism = workload_randomizer(name, n, epsilon, W, delta)
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
            try:
                candidate = baseline(strategy)
            except ValueError:
                continue  # e.g. too large for a dense matrix at this domain size
            candidates[strategy] = (worst_case_variance(candidate, gram), candidate)
    # The optimized strategy is a dense (4n x n) matrix: "auto" skips it past that size.
    m = 4 * n if n_outputs is None else int(n_outputs)
    if name == "auto" and m * n > MAX_DENSE_ENTRIES:
        best = min(candidates, key=lambda key: candidates[key][0])
        report["candidates"] = {key: value[0] for key, value in candidates.items()}
        return candidates[best][1], report
    if not isinstance(init, str):
        starts = [init]
    else:
        starts = ["random"] if init in ("random", "best") else []
        # Start from the best baseline whose strategy matrix can seed the optimizer.
        seeds = [(value[0], _start_matrix(value[1])) for value in candidates.values()]
        seeds = [seed for seed in seeds if seed[1] is not None]
        if from_baseline and seeds:
            starts.append(min(seeds, key=lambda seed: seed[0])[1])
        if not starts:
            starts = ["random"]
    # Several starts: keep the run with the least worst-case variance. Starting from the best
    # baseline guarantees the result is never worse than its strategy matrix with the optimal
    # reconstruction (the start is a kept iterate).
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
