"""Benchmark of ``sklearn_ldp.optimize.optimize_strategy`` (speed and quality).

Three modes:

default
    For each domain size ``n`` in ``--sizes``: optimize a strategy with ``m = 4n`` outputs
    from a random start for the chosen workload, and print iterations, seconds per
    iteration (total / n_iter and the median gap between ``history`` time stamps), total
    seconds, the final worst-case and average-case per-user variance, the best baseline's
    worst case and the SVD lower bound (all per user).
``--prefix128``
    The headline comparison: Prefix, n = 128, eps = 1 (unless overridden), random start,
    seeds 0..4: best worst case within the first 2 s, final worst case, and time to first
    reach a worst case <= 1911 (the authors' code) and <= 1850 (our aim).
``--iteration-timing``
    Seconds per iteration at one size only (default n = 1024, m = 4096) over
    ``--timing-iterations`` iterations (default 30), to keep the runtime bounded.
``--never-worse``
    ``strategy="optimized"`` against the best closed form on the grid of issue 17: n in
    {16, 64, 256} (``--grid-sizes``), eps in {0.5, 1, 2, 4} (``--grid-epsilons``), workloads
    histogram, prefix, all-range, 2-way marginals (4 x 4, 4 x 4 x 4, 4 x 4 x 4 x 4) and
    parity. Every closed form is rebuilt here and its worst case recomputed with
    ``per_user_variance(workload.gram())``, independently of the selection layer. Prints,
    per case, the optimizer's own worst case, the best closed form (which one), what
    ``"optimized"`` returned, and the ratios to the best closed form.
``--peers``
    The optimizer against the workload factorization mechanism (WFM) figures of
    ``/work/shared/reference/peer_figures.md`` (eps = 1, m = 4n): prefix n = 128, all-range
    n = 128, all 2-way marginals of 4 x 4 x 4 x 4, seeds 0..4 (``--seeds``). Prints the
    optimizer's worst case per seed from a random start (the run that ``"optimized"`` makes
    with ``init="best"`` besides the one from the best closed form) and what
    ``"optimized"`` returns, their medians and WFM median / ours (the aim: >= 1.15).

``--budgets``
    ``strategy="optimized"`` with its default settings (the default ``max_seconds``) and
    ``"auto"`` on the two-attribute workload of 105 x 12 cells (the 1-way marginals of both
    columns and the 2-way table, 1,260 cells, eps = 1): seconds, worst case, the pick; the
    optimizer's seconds per iteration there (``--budget-iterations`` iterations from a random
    start, m = 4n); and wall time / budget of ``"optimized"`` for ``--budget-list``.
``--hadamard-layouts``
    Prefix and all-range over 64 cells at eps = 4 (and 256 cells at eps = 1): the worst case
    of the Hadamard response in the histogram's layout, in the best equal-block layout, in the
    layout chosen for the workload, and of ``strategy="optimized"``, with the ratio
    optimized / equal blocks (the aim: <= 1).

The machine this was written for has 2 cores and other processes may run at the same time:
timings are wall-clock and can be noisy. Every mode prints the BLAS thread configuration.

Examples
--------
    python benchmarks/bench_optimizer.py --sizes 64,128 --max-iter 100
    python benchmarks/bench_optimizer.py --prefix128
    python benchmarks/bench_optimizer.py --iteration-timing
    python benchmarks/bench_optimizer.py --never-worse --max-iter 300 --seconds 30
    python benchmarks/bench_optimizer.py --peers --max-iter 1000
    PYTHONPATH=. python benchmarks/bench_optimizer.py --budgets
    PYTHONPATH=. python benchmarks/bench_optimizer.py --hadamard-layouts
"""

import argparse
import os
import platform
import statistics
import sys
import time

import numpy as np
from _common import print_table  # noqa: E402  (benchmarks/ is on sys.path when run)

import sklearn_ldp
from sklearn_ldp import workloads
from sklearn_ldp.mechanisms import svd_lower_bound
from sklearn_ldp.mechanisms.factorization.mechanism import FactorizationMechanism
from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism
from sklearn_ldp.mechanisms.marginals.fourier import fourier_strategy
from sklearn_ldp.mechanisms.oracles.hadamard import HadamardResponse
from sklearn_ldp.mechanisms.oracles.hadamard_workload import score_layouts
from sklearn_ldp.optimize import ldp_factorization, optimize_strategy
from sklearn_ldp.optimize.ldp_factorization import DEFAULT_MAX_SECONDS
from sklearn_ldp.selection import baseline_mechanism, build_mechanism

BASELINE_NAMES = ("hierarchical_matrix", "hadamard", "randomized_response")


# ---------------------------------------------------------------------------- helpers
class EvaluationCounter:
    """Counts objective evaluations of the optimizer (monkeypatched in).

    Each iteration costs one evaluation per line-search attempt (the gradient only for the
    accepted one), so evaluations per iteration tells how much time goes to backtracking.
    """

    def __init__(self):
        self.calls = 0
        self._original = None

    def __enter__(self):
        self._original = ldp_factorization.AverageCaseObjective.value

        def counted(objective, Qt):
            self.calls += 1
            return self._original(objective, Qt)

        ldp_factorization.AverageCaseObjective.value = counted
        return self

    def __exit__(self, *exc):
        ldp_factorization.AverageCaseObjective.value = self._original
        return False


def range_gram(n):
    """Gram of the all-range workload without the dense ``n(n+1)/2 x n`` matrix.

    ``(W^T W)[i, j]`` counts the ranges ``[a, b]`` holding both ``i`` and ``j``:
    ``(min(i, j) + 1) * (n - max(i, j))``.
    """
    idx = np.arange(n)
    low = np.minimum.outer(idx, idx)
    high = np.maximum.outer(idx, idx)
    return ((low + 1) * (n - high)).astype(float)


def workload_gram(name, n):
    """``(gram, W or None)``: ``W`` only where the dense matrix is allowed and small enough."""
    if name == "prefix":
        W = workloads.prefix(n).toarray()
    elif name == "histogram":
        W = workloads.histogram(n).toarray()
    elif name == "all_range":
        if n * (n + 1) // 2 * n <= 2**25:  # dense matrix only while it is cheap (n <= 512)
            W = workloads.all_range(n).toarray()
        else:
            return range_gram(n), None
    else:
        raise ValueError(name)
    return W.T @ W, W


def gram_lower_bound(gram, epsilon):
    """SVD lower bound from the Gram alone: ``||W||_* = sum sqrt(eig(W^T W))``."""
    eigenvalues = np.clip(np.linalg.eigvalsh(gram), 0.0, None)
    nuclear = np.sqrt(eigenvalues).sum()
    return float((np.exp(-epsilon) * nuclear**2 - np.trace(gram)) / gram.shape[0])


def lower_bound(gram, W, epsilon):
    return svd_lower_bound(W, epsilon) if W is not None else gram_lower_bound(gram, epsilon)


def best_baseline(gram, n, epsilon):
    """``(name, worst case)`` of the best baseline, plus every baseline's worst case."""
    results = {}
    for name in BASELINE_NAMES:
        try:
            mechanism = baseline_mechanism(name, (n,), epsilon)
        except ValueError as error:  # e.g. too large for a dense matrix
            results[name] = (np.nan, str(error))
            continue
        results[name] = (float(mechanism.per_user_variance(gram).max()), "")
    finite = {k: v[0] for k, v in results.items() if np.isfinite(v[0])}
    best = min(finite, key=finite.get) if finite else "none"
    return best, finite.get(best, np.nan), results


def step_seconds(history):
    """Median gap between consecutive ``history`` time stamps (cumulative seconds)."""
    stamps = [entry["seconds"] for entry in history]
    gaps = np.diff(stamps)
    return float(np.median(gaps)) if gaps.size else float("nan")


def first_below(history, threshold):
    """``(seconds, iteration)`` at which the worst case first reached ``threshold``."""
    for iteration, entry in enumerate(history, start=1):
        if entry["worst_case"] <= threshold:
            return entry["seconds"], iteration
    return None, None


def best_within(history, seconds):
    values = [entry["worst_case"] for entry in history if entry["seconds"] <= seconds]
    return min(values) if values else None


def fmt(value, spec=".1f", missing="-"):
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return missing
    return format(value, spec)




def environment():
    print(f"# sklearn_ldp {getattr(sklearn_ldp, '__version__', '?')}, numpy {np.__version__}, "
          f"python {platform.python_version()}, {platform.machine()}")
    try:
        import threadpoolctl

        pools = threadpoolctl.threadpool_info()
        print("# thread pools: " + "; ".join(
            f"{p['internal_api']} {p.get('version')} x{p['num_threads']}" for p in pools))
    except ImportError:
        pass
    print("# wall-clock timings on a shared 2-core machine: expect noise; load average at start "
          + " ".join(f"{v:.2f}" for v in os.getloadavg()))
    sys.stdout.flush()


# ---------------------------------------------------------------------------- modes
def run_sizes(args):
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    max_iter = args.max_iter or 300
    print(f"# mode: sizes, workload={args.workload}, epsilon={args.epsilon}, "
          f"max_iter={max_iter}, seconds cap={args.seconds}, seed={args.seed}, m=4n, "
          "init=random")
    headers = ["n", "m", "iters", "conv", "evals/it", "s/it(tot)", "s/it(med)", "total s",
               "worst", "average", "best baseline", "base worst", "opt/base", "svd LB",
               "opt/LB"]
    rows = []
    details = []
    for n in sizes:
        gram, W = workload_gram(args.workload, n)
        with EvaluationCounter() as counter:
            start = time.perf_counter()
            result = optimize_strategy(gram, args.epsilon, n_outputs=4 * n, init="random",
                                       max_iter=max_iter, max_seconds=args.seconds,
                                       random_state=args.seed)
            total = time.perf_counter() - start
        base_name, base_worst, all_baselines = best_baseline(gram, n, args.epsilon)
        bound = lower_bound(gram, W, args.epsilon)
        iters = max(result.n_iter, 1)
        rows.append([
            n, 4 * n, result.n_iter, "yes" if result.converged else "no",
            fmt((counter.calls - 1) / iters, ".2f"),
            fmt(total / iters, ".4f"), fmt(step_seconds(result.history), ".4f"),
            fmt(total, ".1f"), fmt(result.worst_case, ".5g"), fmt(result.average_case, ".5g"),
            base_name, fmt(base_worst, ".5g"), fmt(result.worst_case / base_worst, ".3f"),
            fmt(bound, ".5g"), fmt(result.worst_case / bound, ".3f"),
        ])
        details.append((n, all_baselines, result))
        print(f"# n={n} done in {total:.1f}s "
              f"(worst {result.worst_case:.6g}, {result.n_iter} iterations)", flush=True)
    print()
    print_table(headers, rows)
    print()
    print("# all baselines (worst-case per-user variance):")
    for n, all_baselines, result in details:
        parts = [f"{k}={fmt(v[0], '.5g')}{' (' + v[1] + ')' if v[1] else ''}"
                 for k, v in all_baselines.items()]
        finite = [h for h in result.history if np.isfinite(h["worst_case"])]
        print(f"#   n={n}: " + ", ".join(parts)
              + f"; history entries {len(result.history)} ({len(finite)} finite)")
    print("# s/it(tot) = wall time of the optimize_strategy call / n_iter (includes the random "
          "start and first evaluation); s/it(med) = median gap of history seconds; evals/it = "
          "objective evaluations per iteration (line-search attempts).")


def run_prefix128(args):
    n = 128
    max_iter = args.max_iter or 1000
    seeds = range(5)
    gram, W = workload_gram("prefix", n)
    base_name, base_worst, _ = best_baseline(gram, n, args.epsilon)
    bound = svd_lower_bound(W, args.epsilon)
    print(f"# mode: prefix128, Prefix n={n}, m={4 * n}, epsilon={args.epsilon}, init=random, "
          f"max_iter={max_iter}, seconds cap={args.seconds}")
    print(f"# best baseline {base_name}: worst case {base_worst:.6g};  SVD lower bound "
          f"{bound:.6g}")
    headers = ["seed", "iters", "conv", "evals/it", "total s", "s/it(med)", "best@2s",
               "final worst", "t(<=1911) s", "it(<=1911)", "t(<=1850) s", "it(<=1850)"]
    rows = []
    values = []
    for seed in seeds:
        with EvaluationCounter() as counter:
            start = time.perf_counter()
            result = optimize_strategy(gram, args.epsilon, n_outputs=4 * n, init="random",
                                       max_iter=max_iter, max_seconds=args.seconds,
                                       random_state=seed)
            total = time.perf_counter() - start
        at2 = best_within(result.history, 2.0)
        t1911, i1911 = first_below(result.history, 1911.0)
        t1850, i1850 = first_below(result.history, 1850.0)
        rows.append([seed, result.n_iter, "yes" if result.converged else "no",
                     fmt((counter.calls - 1) / max(result.n_iter, 1), ".2f"),
                     fmt(total, ".2f"), fmt(step_seconds(result.history), ".4f"),
                     fmt(at2, ".6g"), fmt(result.worst_case, ".6g"),
                     fmt(t1911, ".2f", "never"), fmt(i1911, "d", "never"),
                     fmt(t1850, ".2f", "never"), fmt(i1850, "d", "never")])
        values.append((at2, result.worst_case, t1850))
        print(f"# seed {seed} done in {total:.1f}s", flush=True)
    print()
    print_table(headers, rows)
    print()
    at2 = [v[0] for v in values if v[0] is not None]
    final = [v[1] for v in values]
    reached = [v[2] for v in values if v[2] is not None]
    print(f"# best@2s median {fmt(statistics.median(at2) if at2 else None, '.6g')}, "
          f"final median {statistics.median(final):.6g} (min {min(final):.6g}, "
          f"max {max(final):.6g}), reached <=1850 in {len(reached)}/{len(values)} runs")


def run_iteration_timing(args):
    n = args.timing_n
    iterations = args.timing_iterations
    gram, _ = workload_gram(args.workload, n)
    print(f"# mode: iteration-timing, workload={args.workload}, n={n}, m={4 * n}, "
          f"epsilon={args.epsilon}, {iterations} iterations, seed={args.seed}")
    with EvaluationCounter() as counter:
        start = time.perf_counter()
        result = optimize_strategy(gram, args.epsilon, n_outputs=4 * n, init="random",
                                   max_iter=iterations, tol=0.0, random_state=args.seed)
        total = time.perf_counter() - start
    first = result.history[0]["seconds"] if result.history else float("nan")
    # Time the pieces once outside the optimizer for reference: start + one evaluation.
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    Qt, _ = ldp_factorization._random_start(n, 4 * n, args.epsilon, rng)
    t1 = time.perf_counter()
    objective = ldp_factorization.AverageCaseObjective(gram)
    objective.gradient(objective.value(Qt))
    t2 = time.perf_counter()
    headers = ["n", "m", "iters", "evals", "total s", "s/it(tot)", "s/it(med)", "1st it s",
               "start s", "1 eval s", "worst"]
    print()
    print_table(headers, [[
        n, 4 * n, result.n_iter, counter.calls, fmt(total, ".2f"),
        fmt(total / max(result.n_iter, 1), ".3f"), fmt(step_seconds(result.history), ".3f"),
        fmt(first, ".3f"), fmt(t1 - t0, ".3f"), fmt(t2 - t1, ".3f"),
        fmt(result.worst_case, ".6g"),
    ]])
    print("# evals = objective evaluations in total (1 initial + line-search attempts); "
          "'start s' = random start + projection; "
          "'1 eval s' = one objective + gradient evaluation with the Gram factorization")


# ---------------------------------------------------------------------------- never worse
# Closed forms rebuilt directly (not through the selection layer): the structured ones by
# name, the dense ones from their matrices.
STRUCTURED_CLOSED_FORMS = ("randomized_response", "rappor", "oue", "olh", "blh", "hadamard",
                           "hrr", "subset_selection", "hierarchical", "haar",
                           "hierarchical_matrix")
MARGINAL_SHAPES = {16: (4, 4), 64: (4, 4, 4), 256: (4, 4, 4, 4)}
GRID_WORKLOADS = ("histogram", "prefix", "all_range", "marginals2", "parity")
# WFM's median worst case (peer_figures.md, eps = 1, m = 4n, 5 seeds).
WFM_MEDIANS = {"prefix128": 1899.9, "all_range128": 181280.0, "marginals2_4x4x4x4": 2057.6}


def grid_case(name, n):
    """``(shape, workload, marginal order)`` of a grid case (order None: not marginals)."""
    if name == "marginals2":
        shape = MARGINAL_SHAPES[n]
        domain = {f"a{i}": list(range(size)) for i, size in enumerate(shape)}
        return shape, workloads.marginals(domain, k=2), 2
    return (n,), getattr(workloads, name)(n), None


def closed_form_worst_cases(shape, epsilon, workload, order):
    """Worst-case per-user variance of every closed form, recomputed independently.

    ``inf`` for a strategy that cannot answer the workload (or cannot be built).
    """
    n = int(np.prod(shape))
    gram = workload.gram()
    dense = np.asarray(gram.toarray())
    mechanisms = {}
    for name in STRUCTURED_CLOSED_FORMS:
        mechanisms[name] = baseline_mechanism(name, (n,), epsilon)
    full = len(shape) if order is None else order
    mechanisms["fourier"] = FactorizationMechanism(fourier_strategy(shape, epsilon, full),
                                                   epsilon)
    if order is not None and len(shape) > order:
        for kind in ("marg_ps", "marg_ht"):
            Q = build_marginal_mechanism(kind, shape, epsilon, order).strategy_matrix()
            mechanisms[f"{kind}_matrix"] = FactorizationMechanism(Q, epsilon)
    result = {}
    for name, mechanism in mechanisms.items():
        if not mechanism.supports_gram(dense):
            result[name] = np.inf
            continue
        result[name] = float(mechanism.per_user_variance(gram).max())
    return result


def run_never_worse(args):
    sizes = [int(s) for s in args.grid_sizes.split(",") if s.strip()]
    epsilons = [float(e) for e in args.grid_epsilons.split(",") if e.strip()]
    max_iter = args.max_iter or 300
    print(f"# mode: never-worse, sizes={sizes}, epsilons={epsilons}, max_iter={max_iter}, "
          f"max_seconds={args.seconds} per case, init=best, seed={args.seed}")
    headers = ["workload", "n", "eps", "optimizer", "best closed form", "closed worst",
               "returned", "returned worst", "opt/closed", "returned/closed", "iters", "s"]
    rows, ratios = [], []
    for name in GRID_WORKLOADS:
        for n in sizes:
            shape, workload, order = grid_case(name, n)
            for epsilon in epsilons:
                start = time.perf_counter()
                mechanism, report = build_mechanism(
                    "optimized", shape, epsilon, workload, init="best", max_iter=max_iter,
                    max_seconds=args.seconds, random_state=args.seed)
                seconds = time.perf_counter() - start
                returned = float(mechanism.per_user_variance(workload.gram()).max())
                closed = closed_form_worst_cases(shape, epsilon, workload, order)
                best = min(closed, key=closed.get)
                optimizer = report["optimizer"]["worst_case"]
                ratios.append(returned / closed[best])
                rows.append([name, n, epsilon, fmt(optimizer, ".6g"), best,
                             fmt(closed[best], ".6g"), report["chosen"], fmt(returned, ".6g"),
                             fmt(optimizer / closed[best], ".4f"),
                             fmt(returned / closed[best], ".6f"), report["n_iter"],
                             fmt(seconds, ".1f")])
                print(f"# {name} n={n} eps={epsilon}: returned {report['chosen']} "
                      f"({returned:.6g}), best closed form {best} ({closed[best]:.6g}), "
                      f"optimizer {optimizer:.6g}, {seconds:.1f} s", flush=True)
    print()
    print_table(headers, rows)
    worst_ratio = max(ratios)
    print(f"# cases: {len(ratios)}; returned <= best closed form * (1 + 1e-6) in "
          f"{sum(r <= 1 + 1e-6 for r in ratios)}; largest returned/closed {worst_ratio:.9f}; "
          f"optimizer's own strategy beats every closed form in "
          f"{sum(row[6] == 'optimized' for row in rows)}")


def run_peers(args):
    max_iter = args.max_iter or 1000
    seeds = range(args.seeds)
    cases = {
        "prefix128": ((128,), workloads.prefix(128)),
        "all_range128": ((128,), workloads.all_range(128)),
        "marginals2_4x4x4x4": ((4, 4, 4, 4), grid_case("marginals2", 256)[1]),
    }
    print(f"# mode: peers, eps={args.epsilon}, m=4n, max_iter={max_iter}, "
          f"max_seconds={args.seconds} per run, seeds={list(seeds)}, init=best")
    headers = ["workload", "seed", "random start", "iters (kept run)", "'optimized' returns",
               "chosen", "kept run's start", "s"]
    rows, summary = [], []
    for label, (shape, workload) in cases.items():
        gram = np.asarray(workload.gram().toarray())
        alone, returned = [], []
        for seed in seeds:
            # init="best": the run from a random start (seeded by `seed`, as a plain
            # optimize_strategy call would be) and the run from the best closed form that
            # can start it, each with max_seconds; then the comparison with every closed form.
            start = time.perf_counter()
            mechanism, report = build_mechanism(
                "optimized", shape, args.epsilon, workload, init="best", max_iter=max_iter,
                max_seconds=2 * args.seconds, random_state=seed)
            seconds = time.perf_counter() - start
            random_start = report["optimizer"]["runs"]["random"]
            worst = float(mechanism.per_user_variance(gram).max())
            alone.append(random_start)
            returned.append(worst)
            rows.append([label, seed, fmt(random_start, ".6g"), report["n_iter"],
                         fmt(worst, ".6g"), report["chosen"], report["optimizer"]["start"],
                         fmt(seconds, ".1f")])
            print(f"# {label} seed {seed}: random start {random_start:.6g}, "
                  f"'optimized' {worst:.6g} ({report['chosen']})", flush=True)
        wfm = WFM_MEDIANS[label] if args.epsilon == 1.0 else float("nan")
        summary.append([label, fmt(wfm, ".6g"), fmt(statistics.median(alone), ".6g"),
                        fmt(wfm / statistics.median(alone), ".3f"),
                        fmt(statistics.median(returned), ".6g"),
                        fmt(wfm / statistics.median(returned), ".3f")])
    print()
    print_table(headers, rows)
    print()
    print_table(["workload", "WFM median", "ours random start (median)", "WFM/ours",
                 "'optimized' (median)", "WFM/'optimized'"], summary)
    print("# aim (issue 17): WFM/ours >= 1.15 on each workload")


def two_attribute_workload():
    """The 1-way marginals of both columns and the 2-way table of a 105 x 12 domain."""
    domain = {"route": list(range(105)), "month": list(range(12))}
    return (105, 12), workloads.marginals(domain, attributes=["route", "month",
                                                              ("route", "month")])


def run_budgets(args):
    shape, workload = two_attribute_workload()
    gram = workload.gram()
    print(f"# mode: budgets, 105 x 12 (1,260 cells), 1- and 2-way marginals, "
          f"eps={args.epsilon}, default max_seconds={DEFAULT_MAX_SECONDS}")
    rows = []
    for name, max_seconds in [("auto", None), ("optimized", None)] + [
            ("optimized", float(b)) for b in args.budget_list.split(",") if b.strip()]:
        start = time.perf_counter()
        mechanism, report = build_mechanism(name, shape, args.epsilon, workload,
                                            max_seconds=max_seconds, random_state=args.seed)
        seconds = time.perf_counter() - start
        budget = DEFAULT_MAX_SECONDS if name == "optimized" and max_seconds is None else (
            max_seconds)
        rows.append([name, fmt(max_seconds, ".0f", "default"), fmt(seconds, ".1f"),
                     fmt(seconds / budget if budget else None, ".2f"),
                     fmt(report["expected_error"]["worst_case"], ".6g"), report["chosen"],
                     report.get("n_iter", "-"), report.get("stopped_by_budget", "-")])
        print(f"# {name} max_seconds={max_seconds}: {seconds:.1f} s, chose {report['chosen']}",
              flush=True)
    print_table(["strategy", "max_seconds", "wall s", "wall / budget", "worst case", "chosen",
                 "iters", "stopped by budget"], rows)
    dense = np.asarray(gram.toarray())
    result = optimize_strategy(dense, args.epsilon, max_iter=args.budget_iterations,
                               max_seconds=None, random_state=args.seed)
    gaps = np.diff([0.0] + [entry["seconds"] for entry in result.history])
    print(f"# optimizer at 1,260 cells, m = 4n, random start: seconds per iteration "
          f"{' '.join(f'{gap:.2f}' for gap in gaps)} (median {np.median(gaps):.2f}; the first "
          f"includes the start), worst case after {result.n_iter} iterations "
          f"{result.worst_case:.6g}")


def run_hadamard_layouts(args):
    cases = [("prefix", 64, 4.0), ("all_range", 64, 4.0), ("prefix", 256, 1.0),
             ("all_range", 256, 1.0)]
    print("# mode: hadamard-layouts; worst-case per-user variance, optimal decoder")
    rows = []
    for name, n, epsilon in cases:
        workload = getattr(workloads, name)(n)
        gram = workload.gram()
        histogram_layout = HadamardResponse(n, epsilon)
        histogram_worst = float(histogram_layout.per_user_variance(gram).max())
        scored = score_layouts(n, epsilon, gram)
        # Equal blocks: every block full (no partial block), hole = half the block.
        equal = [entry for entry in scored
                 if n % (entry[2][1] - entry[2][2]) == 0 and 2 * entry[2][2] == entry[2][1]]
        start = time.perf_counter()
        mechanism, report = build_mechanism("optimized", (n,), epsilon, workload,
                                            random_state=args.seed)
        seconds = time.perf_counter() - start
        optimized = float(mechanism.per_user_variance(gram).max())
        rows.append([f"{name}-{n}", epsilon,
                     f"{histogram_layout.layout}: {histogram_worst:.6g}",
                     f"{equal[0][2]}: {equal[0][0]:.6g}", f"{scored[0][2]}: {scored[0][0]:.6g}",
                     fmt(optimized, ".6g"), report["chosen"], fmt(optimized / equal[0][0], ".3f"),
                     fmt(seconds, ".1f")])
        print(f"# {name}-{n} eps {epsilon}: optimized {optimized:.6g}", flush=True)
    print_table(["workload", "eps", "histogram's layout", "best equal blocks",
                 "workload's layout", "'optimized'", "chosen", "optimized / equal", "s"], rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="64,128,256,512,1024")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--workload", choices=("prefix", "histogram", "all_range"),
                        default="prefix")
    parser.add_argument("--max-iter", type=int, default=None,
                        help="iteration cap (default 300; 1000 with --prefix128)")
    parser.add_argument("--seconds", type=float, default=120.0,
                        help="wall-clock cap per optimization (max_seconds)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--prefix128", action="store_true",
                        help="Prefix n=128 headline, seeds 0..4")
    parser.add_argument("--iteration-timing", action="store_true",
                        help="seconds per iteration at --timing-n over --timing-iterations")
    parser.add_argument("--timing-n", type=int, default=1024)
    parser.add_argument("--timing-iterations", type=int, default=30)
    parser.add_argument("--never-worse", action="store_true",
                        help="'optimized' against the best closed form on the issue-17 grid")
    parser.add_argument("--grid-sizes", default="16,64,256")
    parser.add_argument("--grid-epsilons", default="0.5,1,2,4")
    parser.add_argument("--peers", action="store_true",
                        help="the optimizer against WFM's figures (prefix, all-range, "
                             "marginals)")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of --peers")
    parser.add_argument("--budgets", action="store_true",
                        help="'optimized' with its default budget on 1,260 cells")
    parser.add_argument("--budget-list", default="10,20",
                        help="max_seconds values of --budgets")
    parser.add_argument("--budget-iterations", type=int, default=4)
    parser.add_argument("--hadamard-layouts", action="store_true",
                        help="Hadamard layouts per workload against 'optimized'")
    args = parser.parse_args(argv)
    environment()
    if args.budgets:
        run_budgets(args)
    elif args.hadamard_layouts:
        run_hadamard_layouts(args)
    elif args.never_worse:
        run_never_worse(args)
    elif args.peers:
        run_peers(args)
    elif args.prefix128:
        run_prefix128(args)
    elif args.iteration_timing:
        run_iteration_timing(args)
    else:
        run_sizes(args)


if __name__ == "__main__":
    main()
