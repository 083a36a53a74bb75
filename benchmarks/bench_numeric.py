"""Benchmark of the bounded numeric mechanisms against their formulas (issue 19).

No installable peer library implements Duchi's, the Piecewise, the Hybrid or the Square Wave
mechanism (multi-freq-ldpy and pure-LDP are categorical; see
``/work/shared/reference/peer_figures.md``), so every comparison here is against the
analytic formulas of the papers (module docstring of
``sklearn_ldp/mechanisms/numeric/``)
and, for Square Wave, against optimized unary encoding on the same bins.

1. **Mean estimation** at N = 10^6 (default), epsilon = 1, on an age-like column (Beta(2, 5)
   scaled to the public bounds [0, 100]). For Duchi, Piecewise and Hybrid: the mean estimate's
   MSE over ``--repeats`` collections (default 200; the ratio to the analytic variance then has
   a standard error of about ``sqrt(2 / repeats)``, printed), and the same MSE measured without
   the cross terms: ``sum_i (y_i - t_i)^2 / N^2`` (scaled to value units), which has the same
   expectation (the users' reports are independent with ``E[y_i] = t_i``) and a standard
   error of about 0.2% at N = 10^6. The analytic variance is ``sum_i Var[y | t_i] / N^2``.
   Target: within 5%. Seconds per collection (privatize + aggregate + estimate).
2. **Worst case over epsilon**: the largest per-user variance over the bounds of Duchi,
   Piecewise and Hybrid at epsilon from 0.05 to 10, analytic (Hybrid must never be above
   either, as Wang et al. prove), and Hybrid's measured: the per-report variance at ``t = -1,
   0, 1`` (where the variance of each mechanism is largest, being even and quadratic in
   ``t``) from ``--worst-users`` reports each.
3. **Distribution**: Square Wave with EM and smoothing (EMS, the default) and plain EM against
   optimized unary encoding (OUE) on 1024 equal-width bins, epsilon = 1, N = 10^5, on a
   log-normal column (``exp(Z)``, Z standard normal, public bounds [0, e^4]; the values beyond
   e^4, 3 in 10^5, redrawn). OUE's histogram estimate is unbiased but has negative cells; it
   is shown raw, after Norm-Sub (the projection onto the simplex) and after the package's EM
   (``postprocess.em_estimate``). Metric: the Wasserstein-1 distance between the estimated and
   the true distribution of the users' values over the 1024 bins, in units of the range
   (``sum |CDF difference| / 1024``), mean and standard deviation over ``--sw-seeds``
   collections. Target: Square Wave's smaller than OUE's.

4. **Throughput** (issue 26): seconds to privatize ``N`` values (``randomize``, one call) for
   each kind at N = 10^6 and 10^7 (``--throughput-users``), best CPU time (robust to other
   jobs on the machine) of ``--throughput-repeats``,
   with this checkout and with a clean checkout of the previous package given by
   ``--before DIR`` (a directory holding its ``sklearn_ldp``, e.g. ``git archive main
   sklearn_ldp | tar -x -C DIR``), measured in a subprocess of the same run; the table prints
   the ratio now / before. Target: within 2x.

Examples
--------
    python benchmarks/bench_numeric.py
    python benchmarks/bench_numeric.py --sections 4 --before /tmp/num_before
    python benchmarks/bench_numeric.py --users 100000 --repeats 50 --sw-seeds 2
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from _common import fmt, machine_note, print_table  # noqa: E402

from sklearn_ldp.mechanisms.numeric.means import (  # noqa: E402
    HYBRID_EPSILON_STAR,
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
)
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism  # noqa: E402
from sklearn_ldp.mechanisms.oracles.unary import OptimizedUnaryEncoding  # noqa: E402
from sklearn_ldp.postprocess import simplex_projection  # noqa: E402

MEAN_CLASSES = (DuchiMechanism, PiecewiseMechanism, HybridMechanism)
BOUNDS = (0.0, 100.0)


def mean_section(n_users, epsilon, repeats):
    rng = np.random.default_rng(0)
    values = BOUNDS[0] + (BOUNDS[1] - BOUNDS[0]) * rng.beta(2, 5, size=n_users)
    rows = []
    for cls in MEAN_CLASSES:
        mechanism = cls(epsilon, bounds=BOUNDS)
        analytic = mechanism.variance(values).sum() / n_users ** 2
        half = mechanism.half_width
        t = (values - sum(BOUNDS) / 2) / half
        errors, diagonal, seconds, cpu = [], [], [], []
        for _ in range(repeats):
            wall, clock = time.perf_counter(), time.process_time()
            reports = mechanism.randomize(values, rng)
            estimate = mechanism.estimate_mean(mechanism.aggregate(reports))
            seconds.append(time.perf_counter() - wall)
            cpu.append(time.process_time() - clock)
            errors.append(estimate - values.mean())
            y = mechanism.report_values(reports)
            diagonal.append(np.sum((y - t) ** 2) * half ** 2 / n_users ** 2)
        mse = float(np.mean(np.square(errors)))
        ratio_se = math.sqrt(2.0 / repeats)
        diag = float(np.mean(diagonal))
        # The diagonal estimator's standard error, from its spread over the collections.
        diag_se = float(np.std(diagonal, ddof=1) / math.sqrt(repeats)) if repeats > 1 else \
            float("nan")
        rows.append([cls.kind, fmt(analytic, 4), fmt(mse, 4),
                     f"{mse / analytic:.3f} +- {ratio_se * mse / analytic:.3f}",
                     fmt(diag, 5), f"{diag / analytic:.4f} +- {diag_se / analytic:.4f}",
                     f"{np.mean(seconds):.3f}", f"{np.mean(cpu):.3f}"])
    print(f"1. Mean of an age-like column (Beta(2, 5) on {BOUNDS}), N = {n_users}, epsilon = "
          f"{epsilon}, {repeats} collections:")
    print_table(["mechanism", "analytic var", "MSE (repeats)", "MSE / analytic",
                 "MSE (diagonal)", "diagonal / analytic", "s per run", "CPU s"], rows)


def worst_section(n_users):
    rng = np.random.default_rng(1)
    epsilons = sorted({0.05, 0.1, 0.25, 0.5, round(HYBRID_EPSILON_STAR, 4), 0.75, 1.0, 1.5,
                       2.0, 3.0, 4.0, 6.0, 8.0, 10.0})
    rows, never_above = [], True
    grid = np.geomspace(0.01, 20, 2000)
    for eps in grid:  # the claim on a fine grid (analytic)
        hybrid = HybridMechanism(eps).worst_case_variance()
        piecewise = PiecewiseMechanism(eps)
        step = 1.0 / piecewise.law.span ** 2  # the variance of one grid rounding step
        never_above &= hybrid <= min(DuchiMechanism(eps).worst_case_variance(),
                                     piecewise.worst_case_variance()) * (1 + 1e-12) + step
    for eps in epsilons:
        duchi = DuchiMechanism(eps).worst_case_variance()
        piecewise = PiecewiseMechanism(eps).worst_case_variance()
        mechanism = HybridMechanism(eps)
        hybrid = mechanism.worst_case_variance()
        measured = []
        for t in (-1.0, 0.0, 1.0):
            y = mechanism.report_values(mechanism.randomize(np.full(n_users, t), rng))
            measured.append(np.mean((y - t) ** 2))
        worst = max(measured)
        rows.append([f"{eps:g}", fmt(duchi, 4), fmt(piecewise, 4), fmt(hybrid, 4),
                     f"{hybrid / min(duchi, piecewise):.4f}", fmt(worst, 4),
                     f"{worst / hybrid:.4f}"])
    print(f"\n2. Worst-case variance of one report (unit scale, t in [-1, 1]); Hybrid measured "
          f"from {n_users} reports at each of t = -1, 0, 1:")
    print_table(["epsilon", "Duchi", "Piecewise", "Hybrid", "Hybrid / min", "Hybrid measured",
                 "measured / analytic"], rows)
    print(f"Hybrid's worst case <= min(Duchi, Piecewise) + (1 / (M - L))^2 (one rounding step of "
          f"the grid) at all 2000 epsilons of a log grid "
          f"[0.01, 20]: {bool(never_above)} (eps* = {HYBRID_EPSILON_STAR:.6f}).")


def lognormal_column(n_users, rng):
    high = math.exp(4.0)
    values = rng.lognormal(0.0, 1.0, size=n_users)
    while (values > high).any():  # the public bound: redraw the few values beyond it
        beyond = values > high
        values[beyond] = rng.lognormal(0.0, 1.0, size=int(beyond.sum()))
    return values, high


def wasserstein(estimate, truth):
    """W1 between two distributions over equal bins of [0, 1] (signed estimates allowed)."""
    return float(np.abs(np.cumsum(estimate - truth)).sum() / truth.size)


def distribution_section(n_users, epsilon, n_bins, seeds):
    try:
        from sklearn_ldp.postprocess import em_estimate
    except ImportError:  # pragma: no cover - an older package
        em_estimate = None
    results = {}
    for seed in range(seeds):
        rng = np.random.default_rng(100 + seed)
        values, high = lognormal_column(n_users, rng)
        truth = np.histogram(values, bins=n_bins, range=(0.0, high))[0] / n_users
        sw = SquareWaveMechanism(epsilon, bounds=(0.0, high), n_bins=n_bins)
        wall, cpu = time.perf_counter(), time.process_time()
        counts = sw.aggregate(sw.randomize(values, rng))
        client = (time.perf_counter() - wall, time.process_time() - cpu)
        for name, smoothing in (("Square Wave + EMS", True), ("Square Wave + EM", False)):
            wall, cpu = time.perf_counter(), time.process_time()
            estimate = sw.estimate_distribution(counts, smoothing=smoothing)
            elapsed = (client[0] + time.perf_counter() - wall,
                       client[1] + time.process_time() - cpu)
            results.setdefault(name, []).append((wasserstein(estimate, truth), *elapsed))
        oue = OptimizedUnaryEncoding(n_bins, epsilon)
        cells = np.minimum((values / high * n_bins).astype(np.int64), n_bins - 1)
        wall, cpu = time.perf_counter(), time.process_time()
        statistic = oue.aggregate(oue.randomize(cells, rng))
        raw = oue.estimate(statistic) / n_users
        elapsed = (time.perf_counter() - wall, time.process_time() - cpu)
        results.setdefault("OUE (unbiased, signed)", []).append(
            (wasserstein(raw, truth), *elapsed))
        projected = simplex_projection(raw * n_users, n_users) / n_users
        results.setdefault("OUE + Norm-Sub", []).append(
            (wasserstein(projected, truth), *elapsed))
        if em_estimate is not None:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                em_counts, _ = em_estimate(oue, statistic)
                entry = (wasserstein(em_counts / n_users, truth),
                         elapsed[0] + time.perf_counter() - wall,
                         elapsed[1] + time.process_time() - cpu)
            except Exception as error:  # noqa: BLE001 - report, do not stop the benchmark
                entry = (float("nan"), float("nan"), float("nan"))
                print(f"(OUE + EM failed: {error})")
            results.setdefault("OUE + EM (postprocess.em_estimate)", []).append(entry)
    rows = []
    for name, entries in results.items():
        entries = np.array(entries)
        rows.append([name, f"{entries[:, 0].mean():.5f} +- {entries[:, 0].std():.5f}",
                     f"{entries[:, 1].mean():.2f}", f"{entries[:, 2].mean():.2f}"])
    print(f"\n3. Distribution of a log-normal column on {n_bins} equal bins of [0, e^4], "
          f"N = {n_users}, epsilon = {epsilon}, {seeds} collections (W1 in units of the "
          "range; seconds privatize + estimate):")
    print_table(["method", "W1 mean +- sd", "s", "CPU s"], rows)
    return results


THROUGHPUT_KINDS = ("duchi", "piecewise", "hybrid", "square_wave", "sampled_mean")


def throughput_timings(sizes, repeats):
    """``{kind: {n: best CPU seconds}}`` of ``randomize`` with the ``sklearn_ldp`` on
    sys.path."""
    from sklearn_ldp.mechanisms.numeric.means import SampledMeanMechanism
    from sklearn_ldp.mechanisms.numeric.registry import numeric_mechanism
    timings = {}
    for kind in THROUGHPUT_KINDS:
        timings[kind] = {}
        for n in sizes:
            rng = np.random.default_rng(0)
            if kind == "sampled_mean":
                mechanism = SampledMeanMechanism(4.0, [BOUNDS] * 4, base="hybrid")
                values = BOUNDS[1] * rng.beta(2, 5, size=(n // 4, 4))
            else:
                params = {"n_bins": 1024} if kind == "square_wave" else {}
                mechanism = numeric_mechanism(kind, 1.0, BOUNDS, **params)
                values = BOUNDS[1] * rng.beta(2, 5, size=n)
            best = math.inf
            for _ in range(repeats):
                # CPU time of this process: robust to other jobs on a shared machine
                # (randomize runs on one thread, so it equals wall time on an idle one).
                start = time.process_time()
                mechanism.randomize(values, rng)
                best = min(best, time.process_time() - start)
            timings[kind][n] = best
    return timings


def throughput_section(sizes, repeats, before):
    now = throughput_timings(sizes, repeats)
    previous = None
    if before:
        code = ("import json, sys; sys.path.insert(0, sys.argv[1]); sys.path.insert(0, "
                "sys.argv[2]); import bench_numeric as b; print(json.dumps(b.throughput_timings("
                "json.loads(sys.argv[3]), int(sys.argv[4]))))")
        here = os.path.dirname(os.path.abspath(__file__))
        output = subprocess.run([sys.executable, "-c", code, here, os.path.abspath(before),
                                 json.dumps(sizes), str(repeats)], capture_output=True,
                                text=True, check=True, cwd=os.path.abspath(before)).stdout
        previous = json.loads(output.strip().splitlines()[-1])
    rows = []
    for kind in THROUGHPUT_KINDS:
        for n in sizes:
            seconds = now[kind][n]
            row = [kind, f"{n:.0e}", f"{seconds:.3f}", f"{n / seconds / 1e6:.1f}"]
            if previous is not None:
                old = previous[kind][str(n)]
                row += [f"{old:.3f}", f"{seconds / old:.2f}"]
            rows.append(row)
    print(f"\n4. Throughput of randomize (values; sampled_mean: records of 4 values, N / 4 "
          f"records), best CPU seconds of {repeats}:")
    header = ["kind", "N", "s now", "M values/s now"]
    if previous is not None:
        header += ["s before", "now / before"]
    print_table(header, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=200)
    parser.add_argument("--worst-users", type=int, default=10**6)
    parser.add_argument("--sw-users", type=int, default=10**5)
    parser.add_argument("--sw-bins", type=int, default=1024)
    parser.add_argument("--sw-seeds", type=int, default=5)
    parser.add_argument("--sections", default="1,2,3,4")
    parser.add_argument("--throughput-users", default="1000000,10000000")
    parser.add_argument("--throughput-repeats", type=int, default=3)
    parser.add_argument("--before", default=None,
                        help="directory holding the previous sklearn_ldp (section 4)")
    args = parser.parse_args()
    print(machine_note())
    sections = set(args.sections.split(","))
    if "1" in sections:
        mean_section(args.users, args.epsilon, args.repeats)
    if "2" in sections:
        worst_section(args.worst_users)
    if "3" in sections:
        distribution_section(args.sw_users, args.epsilon, args.sw_bins, args.sw_seeds)
    if "4" in sections:
        sizes = [int(n) for n in args.throughput_users.split(",")]
        throughput_section(sizes, args.throughput_repeats, args.before)


if __name__ == "__main__":
    main()
