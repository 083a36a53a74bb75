"""Benchmark of the k-way marginal mechanisms in the setting of thesis chapter 4 (Figs 4.3-4.6).

Setting (digest section 3.7): d in {4, 8, 16} binary attributes, k in {1, 2, 3}, N = 2^18
users, e^eps = 3; the error of one collection is the mean total variation distance
``0.5 ||m_hat - m||_1`` over all C(d, k) marginals of order k, each method's collection built
for ``max_order = k``. Printed per (d, k): the mean TV over repetitions (with its spread), the
analytic prediction ``mean_A expected_tv(A, N, true marginal of A)`` (Gaussian approximation of
``marginal_variance``), their ratio with its standard error over the repetitions, and the rank
of each method (1 = least TV). Estimates are the raw unbiased ones (not clipped or projected),
so a TV above 1 is possible for the noisiest methods (inp_ps and inp_em at large d).

Data (synthetic, "lightly skewed" and correlated, documented here because the thesis's NYC
taxi / Movielens data are not shipped): a latent class ``h`` in {0, 1, 2} with probabilities
(0.5, 0.3, 0.2); given ``h``, attribute ``j`` is 1 independently with probability
``theta[h, j] = clip(base[h] + 0.15 sin(j + h), 0.02, 0.98)``, ``base = (0.15, 0.5, 0.8)``.
Every pair of attributes is therefore dependent (through ``h``) and the marginals are far from
uniform. One population of N users per d (seed 0) is shared by all methods and repetitions.

Privatization: every method runs its client ``randomize`` on all N users, then ``aggregate``,
except ``inp_rr`` (symmetric unary encoding of the 2^d cells: 2^d bits per user, 2 GiB of
reports at d = 16), whose aggregate is drawn from its exact distribution
(``simulate_statistic``, "simulation mode": independent binomials per cell). ``inp_em``
(per-attribute randomized response with eps/d each) is decoded with the unbiased inverse, so its
TV is comparable with the others' and has an analytic prediction.

``--target``: d = 16 binary attributes, k = 2, N = 2^22 users, inp_ht: wall-clock seconds to
privatize + aggregate + estimate all 120 two-way marginals (target <= 10 s), and the mean TV
next to the analytic prediction from the true marginals (target: within 10%).

``--target`` also runs the same collection once through the public API (a DataFrame of
records, ``LDPEncoder.fit_transform``, ``MarginalEstimator.fit`` and ``predict`` of the 120
tables) and prints its time and mean TV against the estimator's plug-in prediction.

``--simulation``: seconds of one exact simulated collection (``simulate_statistic``) of 2^30
users, d = 16, k = 2, for every method that has one.

``--em-failures``: the InpEM failure count of thesis Table 4.2 on the synthetic data: the number
of the C(d, 2) two-way marginals where EM (tol 1e-5) stops after its first step at the uniform
prior, for the thesis's (N, d, eps) rows with d <= 16.

Examples
--------
    python benchmarks/bench_marginals.py                    # default table (a few minutes)
    python benchmarks/bench_marginals.py --dims 4,8 --repeats 2
    python benchmarks/bench_marginals.py --target
    python benchmarks/bench_marginals.py --em-failures
    python benchmarks/bench_marginals.py --simulation
"""

import argparse
import os
import sys
import time
from itertools import combinations

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism  # noqa: E402

METHODS = ("inp_rr", "inp_ps", "inp_ht", "marg_rr", "marg_ps", "marg_ht", "inp_em")
SIMULATED = ("inp_rr",)  # aggregate drawn exactly instead of privatizing every user
EPSILON = float(np.log(3))


def correlated_binary_population(d, n_users, rng):
    """Flat C-order cell of each user (attribute 0 most significant); see the module docstring."""
    latent = rng.choice(3, size=n_users, p=[0.5, 0.3, 0.2])
    base = np.array([0.15, 0.5, 0.8])
    theta = np.clip(base[:, None] + 0.15 * np.sin(np.arange(d)[None, :] + np.arange(3)[:, None]),
                    0.02, 0.98)
    bits = rng.random((n_users, d)) < theta[latent]
    return bits.astype(np.int64) @ (1 << np.arange(d - 1, -1, -1, dtype=np.int64))


def true_marginals(indices, d, sets):
    """True marginal (fractions, shape (2,)*k) of every attribute set."""
    table = np.bincount(indices, minlength=2**d).reshape((2,) * d) / indices.shape[0]
    return {attributes: table.sum(axis=tuple(a for a in range(d) if a not in attributes))
            for attributes in sets}


def collect(mechanism, indices, counts, rng):
    """The aggregate of one collection (privatized, or simulated for SIMULATED methods)."""
    if mechanism.kind in SIMULATED:
        return mechanism.simulate_statistic(counts, rng)
    return mechanism.aggregate(mechanism.randomize(indices, rng))


def mean_tv(mechanism, statistic, truths):
    return float(np.mean([0.5 * np.abs(mechanism.estimate_marginal(statistic, attributes)
                                       - truth).sum() for attributes, truth in truths.items()]))


def predicted_tv(mechanism, n_users, truths):
    return float(np.mean([mechanism.expected_tv(attributes, n_users, truth)
                          for attributes, truth in truths.items()]))


def ranks(values):
    order = np.argsort(values)
    result = np.empty(len(values), dtype=int)
    result[order] = np.arange(1, len(values) + 1)
    return result


def run_table(dims, orders, n_users, repeats, methods):
    summary = []
    for d in dims:
        rng = np.random.default_rng(0)
        indices = correlated_binary_population(d, n_users, rng)
        counts = np.bincount(indices, minlength=2**d)
        for k in orders:
            truths = true_marginals(indices, d, list(combinations(range(d), k)))
            rows, measured = [], []
            for method in methods:
                mechanism = build_marginal_mechanism(method, (2,) * d, EPSILON, k)
                start = time.perf_counter()
                errors = [mean_tv(mechanism, collect(mechanism, indices, counts, rng), truths)
                          for _ in range(repeats)]
                seconds = (time.perf_counter() - start) / repeats
                prediction = predicted_tv(mechanism, n_users, truths)
                measured.append(np.mean(errors))
                # Standard error of the ratio: spread of the repetitions' mean TV.
                ratio_se = np.std(errors, ddof=1) / np.sqrt(repeats) / prediction
                rows.append([method, f"{np.mean(errors):.5f}", f"{np.std(errors, ddof=1):.5f}",
                             f"{prediction:.5f}", f"{np.mean(errors) / prediction:.3f}",
                             f"{ratio_se:.3f}", f"{seconds:.2f}"])
            for row, rank in zip(rows, ranks(measured), strict=True):
                row.insert(6, rank)
            print(f"\nd = {d}, k = {k}: {len(truths)} marginals, N = 2^{int(np.log2(n_users))}, "
                  f"e^eps = 3, {repeats} repetitions")
            print_table(["method", "mean TV", "sd", "predicted", "ratio", "+-se", "rank",
                         "s/rep"], rows)
            summary.append([d, k] + [f"{value:.4f}" for value in measured]
                           + [methods[int(np.argmin(measured))]])
    print("\nSummary: mean TV (measured) per method; best method")
    print_table(["d", "k", *methods, "best"], summary)


def run_target(n_users, repeats):
    d, k = 16, 2
    rng = np.random.default_rng(1)
    indices = correlated_binary_population(d, n_users, rng)
    sets = list(combinations(range(d), k))
    truths = true_marginals(indices, d, sets)
    mechanism = build_marginal_mechanism("inp_ht", (2,) * d, EPSILON, k)
    prediction = predicted_tv(mechanism, n_users, truths)
    uniform_prediction = float(np.mean([mechanism.expected_tv(a, n_users) for a in sets]))
    rows = []
    for repeat in range(repeats):
        start = time.perf_counter()
        reports = mechanism.randomize(indices, rng)
        privatized = time.perf_counter()
        statistic = mechanism.aggregate(reports)
        aggregated = time.perf_counter()
        estimates = {attributes: mechanism.estimate_marginal(statistic, attributes)
                     for attributes in sets}
        done = time.perf_counter()
        tv = float(np.mean([0.5 * np.abs(estimates[a] - truths[a]).sum() for a in sets]))
        rows.append([repeat, f"{privatized - start:.2f}", f"{aggregated - privatized:.2f}",
                     f"{done - aggregated:.3f}", f"{done - start:.2f}", f"{tv:.6f}",
                     f"{prediction:.6f}", f"{tv / prediction:.3f}"])
    print(f"\nTarget: inp_ht, d = {d} binary, k = {k} ({len(sets)} marginals), "
          f"N = 2^{int(np.log2(n_users))}, e^eps = 3 (targets: total <= 10 s, ratio within 10%)")
    print_table(["rep", "privatize s", "aggregate s", "estimate s", "total s", "mean TV",
                 "predicted", "ratio"], rows)
    ratios = np.array([float(row[-1]) for row in rows])
    totals = np.array([float(row[4]) for row in rows])
    print(f"mean over repetitions: total {totals.mean():.2f} s (max {totals.max():.2f} s); "
          f"TV ratio {ratios.mean():.3f} +- {ratios.std(ddof=1) / np.sqrt(len(rows)):.3f} (se), "
          f"single repetitions {ratios.min():.3f} .. {ratios.max():.3f}")
    print(f"(data-independent prediction, uniform marginals: {uniform_prediction:.6f})")
    end_to_end(indices, d, k, sets, truths)


def end_to_end(indices, d, k, sets, truths):
    """The same collection through the public API, from a DataFrame of records to tables."""
    import pandas as pd

    from sklearn_ldp import LDPEncoder, MarginalEstimator

    bits = (indices[:, None] >> np.arange(d - 1, -1, -1)) & 1
    columns = [f"a{j}" for j in range(d)]
    frame = pd.DataFrame(bits, columns=columns)
    start = time.perf_counter()
    encoder = LDPEncoder(categories={c: [0, 1] for c in columns}, strategy="inp_ht",
                         epsilon=EPSILON, max_order=k, random_state=np.random.default_rng(7))
    reports = encoder.fit_transform(frame)
    privatized = time.perf_counter()
    # The unbiased tables: plug_in_tv predicts their error (the default post-processes them).
    estimator = MarginalEstimator(postprocess="none").fit(reports)
    tables = estimator.predict([tuple(columns[a] for a in s) for s in sets])
    done = time.perf_counter()
    tv = np.mean([0.5 * np.abs(t.to_numpy() - truths[s].ravel()).sum()
                  for s, t in zip(sets, tables, strict=True)])
    plug_in = estimator.expected_error_.query("order == 2")["plug_in_tv"].mean()
    print(f"public API (DataFrame -> LDPEncoder.fit_transform -> MarginalEstimator.fit -> "
          f"predict {len(sets)} tables): {privatized - start:.2f} s + {done - privatized:.2f} s "
          f"= {done - start:.2f} s; mean TV {tv:.6f}, plug-in prediction {plug_in:.6f}, "
          f"ratio {tv / plug_in:.3f} (one collection: its ratio varies like a single repetition's)")


def run_simulation_timing(log2_users=30, d=16, k=2):
    """Seconds of one exact simulated collection (``simulate_statistic``) of 2^log2_users users."""
    counts = np.random.default_rng(3).multinomial(2**log2_users, np.full(2**d, 2.0**-d))
    rows = []
    for name in METHODS:
        mechanism = build_marginal_mechanism(name, (2,) * d, EPSILON, k)
        start = time.perf_counter()
        try:
            statistic = mechanism.simulate_statistic(counts, np.random.default_rng(4))
        except NotImplementedError:
            rows.append([name, "-", "no exact simulation"])
            continue
        seconds = time.perf_counter() - start
        rows.append([name, f"{seconds:.2f}", f"{mechanism.n_reports(statistic):,} users"])
    print(f"\nExact simulation of one collection: N = 2^{log2_users} users, d = {d} binary, "
          f"k = {k}, e^eps = 3")
    print_table(["method", "seconds", "aggregate of"], rows)


# Thesis Table 4.2 rows with d <= 16: (N, d, eps, failed, total) on NYC taxi data.
EM_ROWS = [(2**16, 8, 0.2, 3, 28), (2**18, 8, 0.1, 15, 28), (2**16, 12, 0.2, 19, 66),
           (2**18, 16, 0.1, 120, 120), (2**18, 16, 0.2, 72, 120)]


def run_em_failures():
    rows = []
    for n_users, d, epsilon, failed, total in EM_ROWS:
        rng = np.random.default_rng(2)
        indices = correlated_binary_population(d, n_users, rng)
        mechanism = build_marginal_mechanism("inp_em", (2,) * d, epsilon, 2)
        statistic = mechanism.aggregate(mechanism.randomize(indices, rng))
        start = time.perf_counter()
        infos = [mechanism.em_marginal(statistic, attributes)[1]
                 for attributes in combinations(range(d), 2)]
        seconds = time.perf_counter() - start
        stuck = sum(info["stuck_at_prior"] for info in infos)
        unconverged = sum(not info["converged"] for info in infos)
        iterations = np.median([info["n_iter"] for info in infos])
        rows.append([f"2^{int(np.log2(n_users))}", d, epsilon, f"{stuck}/{len(infos)}",
                     f"{failed}/{total}", unconverged, int(iterations), f"{seconds:.1f}"])
    print("\nInpEM failures (EM stops after one step at the uniform prior), two-way marginals, "
          "tol 1e-5, max_iter 10000")
    print_table(["N", "d", "eps", "stuck (ours)", "thesis (taxi)", "not converged",
                 "median iters", "EM s"], rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="4,8,16")
    parser.add_argument("--orders", default="1,2,3")
    parser.add_argument("--log2-users", type=int, default=18)
    parser.add_argument("--repeats", type=int, default=10)
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--target", action="store_true")
    parser.add_argument("--em-failures", action="store_true")
    parser.add_argument("--simulation", action="store_true")
    args = parser.parse_args()
    if args.simulation:
        run_simulation_timing()
    elif args.target:
        run_target(2**22, args.repeats)
    elif args.em_failures:
        run_em_failures()
    else:
        run_table([int(d) for d in args.dims.split(",")],
                  [int(k) for k in args.orders.split(",")], 2**args.log2_users, args.repeats,
                  tuple(args.methods.split(",")))


if __name__ == "__main__":
    main()
