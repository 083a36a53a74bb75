"""Large domains through the public API: time and peak memory against the domain size.

Every row runs in a fresh Python process (so ``ru_maxrss`` is that row's peak) through the
public API only: ``LDPEncoder.fit`` (data-independent, builds the strategy and its expected
error), ``transform`` of ``N`` records (encoding plus randomization), the estimator's ``fit``
and ``predict`` of 10^4 random intervals. Families:

* frequency oracles with compact reports (``olh``, ``hadamard``, ``hrr``,
  ``randomized_response``) with the histogram workload and ``WorkloadEstimator``;
* range mechanisms (``hierarchical`` with OUE levels, the thesis's choice, and
  ``hierarchical_hrr`` with HRR levels, compact reports; ``haar``) with the all-range workload
  and ``RangeQueryEstimator``, and ``hierarchical`` with the prefix workload and
  ``WorkloadEstimator``;
* ``auto``: ``LDPEncoder(strategy="auto").fit()`` alone (selection among the candidates that
  can be scored at that size), for the histogram, prefix and all-range workloads;
* ``marginals``: the three-attribute 24 x 24 x 12 domain, 2-way marginals, ``auto``, 10^5
  records encoded and estimated;
* ``eigen``: the central matrix mechanism with Eigen-Design on all ranges (or prefix) through
  ``WorkloadEstimator(strategy="eigen", delta=...)``;
* ``errors_*``: the per-query error of chosen intervals (a second table): a
  ``WorkloadEstimator`` over ``workloads.ranges`` of 10^4 random intervals, fitted on the
  reports of ``hierarchical`` (HRR levels, ``branching`` 4, the encoder's default, or 2, the
  recommended one) or ``haar``; then the time of ``expected_error_`` (10^4 intervals) and of
  ``predict_error`` on 10^5 other intervals, wall-clock and processor time (the machine is
  shared: processor time is what the computation costs). Before the structured form the tree
  refused these tables past 2^24 query-cell entries (256 intervals at 2^16, 16 at 2^20).

Data are Zipf-like over the cells. Wall-clock times on a shared 2-core machine are noisy.

Examples
--------
    python benchmarks/bench_large_domains.py                  # the whole table (~10 min)
    python benchmarks/bench_large_domains.py --families olh hierarchical --sizes 10 16 20
    python benchmarks/bench_large_domains.py --one olh 16     # one row, printed as JSON
    python benchmarks/bench_large_domains.py --families errors_hierarchical \
        errors_hierarchical_b2 errors_haar --sizes 16 20      # per-query errors only
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

ORACLES = ("olh", "hadamard", "hrr", "randomized_response")
RANGES = ("hierarchical", "hierarchical_hrr", "haar", "hierarchical_prefix")
AUTO = ("auto_histogram", "auto_prefix", "auto_all_range")
ERRORS = ("errors_hierarchical", "errors_hierarchical_b2", "errors_haar")
FAMILIES = ORACLES + RANGES + AUTO + ("marginals", "eigen_all_range", "eigen_prefix") + ERRORS
N_PREDICTIONS = 10**4
N_ERROR_QUERIES = (10**4, 10**5)


def peak_megabytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def zipf_cells(rng, n_cells, n_users):
    weights = 1.0 / np.arange(1, n_cells + 1) ** 1.1
    return rng.choice(n_cells, size=n_users, p=weights / weights.sum())


def random_intervals(rng, n_cells, count):
    """``count`` distinct random intervals (fewer if the domain has fewer)."""
    bounds = np.unique(np.sort(rng.integers(0, n_cells, size=(count, 2)), axis=1), axis=0)
    return bounds


def run_one(family, log2_size, n_users, epsilon):
    """One measurement; returns a dict of timings (seconds) and the peak memory."""
    import pandas as pd

    from sklearn_ldp import LDPEncoder, RangeQueryEstimator, WorkloadEstimator, workloads

    rng = np.random.default_rng(0)
    row = {"family": family, "cells": 2**log2_size}
    start = time.perf_counter()
    if family in AUTO:
        n = 2**log2_size
        domain = {"t": range(n)}
        workload = getattr(workloads, family.removeprefix("auto_"))(domain)
        encoder = LDPEncoder(categories=domain, strategy="auto", epsilon=epsilon,
                             workload=workload, random_state=0).fit()
        row["encoder_fit"] = time.perf_counter() - start
        row["chosen"] = encoder.strategy_
    elif family == "marginals":
        domain = {"a": range(24), "b": range(24), "c": range(12)}
        row["cells"] = 24 * 24 * 12
        frame = pd.DataFrame({column: rng.integers(0, len(values), 10**5)
                              for column, values in domain.items()})
        workload = workloads.marginals(domain, k=2)
        encoder = LDPEncoder(categories=domain, strategy="auto", epsilon=epsilon,
                             workload=workload, random_state=0).fit()
        row["encoder_fit"] = time.perf_counter() - start
        row["chosen"] = encoder.strategy_
        mark = time.perf_counter()
        reports = encoder.transform(frame)
        row["transform"] = time.perf_counter() - mark
        mark = time.perf_counter()
        WorkloadEstimator(workload=workload).fit(reports)
        row["estimator_fit"] = time.perf_counter() - mark
    elif family in ERRORS:
        n = 2**log2_size
        domain = {"t": range(n)}
        frame = pd.DataFrame({"t": zipf_cells(rng, n, n_users)})
        strategy = "haar" if family == "errors_haar" else "hierarchical"
        options = {"branching": 2} if family.endswith("_b2") else {}
        encoder = LDPEncoder(categories=domain, strategy=strategy, epsilon=epsilon,
                             oracle="hrr", random_state=0, **options).fit()
        reports = encoder.transform(frame)
        row["encoder_fit"] = time.perf_counter() - start
        few, many = (random_intervals(rng, n, count) for count in N_ERROR_QUERIES)
        estimator = WorkloadEstimator(workload=workloads.ranges(domain, few)).fit(reports)
        others = workloads.ranges(domain, many)  # built before the clock starts
        for count, key, compute in (
                (few.shape[0], "errors_few", lambda: estimator.expected_error_),
                (many.shape[0], "errors_many", lambda: estimator.predict_error(others))):
            mark, cpu = time.perf_counter(), time.process_time()
            table = compute()
            row[key] = time.perf_counter() - mark
            row[key + "_cpu"] = time.process_time() - cpu
            row[key + "_count"] = count
            if table.shape != (count, 2) or not np.isfinite(table.to_numpy()).all():
                raise RuntimeError(f"{family}: the error table is not {count} finite rows")
        branching = getattr(encoder.mechanism_, "branching", None)
        row["chosen"] = strategy if branching is None else f"{strategy} B={branching}"
    elif family.startswith("eigen"):
        n = 2**log2_size
        domain = {"t": range(n)}
        workload = (workloads.all_range(domain) if family == "eigen_all_range"
                    else workloads.prefix(domain))
        frame = pd.DataFrame({"t": zipf_cells(rng, n, n_users)})
        estimator = WorkloadEstimator(strategy="eigen", epsilon=epsilon, delta=1e-6,
                                      workload=workload, categories=domain, random_state=0)
        estimator.fit(frame)
        row["estimator_fit"] = time.perf_counter() - start
        mark = time.perf_counter()
        estimator.predict(workloads.ranges(domain, random_intervals(rng, n, N_PREDICTIONS)))
        row["predict"] = time.perf_counter() - mark
        row["chosen"] = "eigen"
    else:
        n = 2**log2_size
        domain = {"t": range(n)}
        frame = pd.DataFrame({"t": zipf_cells(rng, n, n_users)})
        strategy = family.removesuffix("_prefix").removesuffix("_hrr")
        oracle = "hrr" if family.endswith("_hrr") else "oue"
        if family in ORACLES:
            workload = workloads.histogram(domain)
        elif family == "hierarchical_prefix":
            workload = workloads.prefix(domain)
        else:
            workload = workloads.all_range(domain)
        encoder = LDPEncoder(categories=domain, strategy=strategy, epsilon=epsilon,
                             workload=workload, oracle=oracle, random_state=0).fit()
        row["encoder_fit"] = time.perf_counter() - start
        mark = time.perf_counter()
        reports = encoder.transform(frame)
        row["transform"] = time.perf_counter() - mark
        mark = time.perf_counter()
        if family in ("hierarchical", "hierarchical_hrr", "haar"):
            estimator = RangeQueryEstimator().fit(reports)
        else:
            estimator = WorkloadEstimator().fit(reports)
        row["estimator_fit"] = time.perf_counter() - mark
        mark = time.perf_counter()
        intervals = random_intervals(rng, n, N_PREDICTIONS)
        if family in ("hierarchical", "hierarchical_hrr", "haar"):
            estimator.predict(intervals)
        else:
            estimator.predict(workloads.ranges(domain, [tuple(b) for b in intervals]))
        row["predict"] = time.perf_counter() - mark
        row["chosen"] = encoder.strategy_
    row["total"] = time.perf_counter() - start
    row["peak_mb"] = peak_megabytes()
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=FAMILIES)
    parser.add_argument("--sizes", nargs="+", type=int, default=[10, 12, 14, 16, 18, 20],
                        help="log2 of the domain sizes")
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per row before it is reported as a timeout")
    parser.add_argument("--one", nargs=2, metavar=("FAMILY", "LOG2_SIZE"))
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_one(args.one[0], int(args.one[1]), args.users, args.epsilon)))
        return
    rows, error_rows = [], []
    for family in args.families:
        sizes = args.sizes
        if family == "marginals":
            sizes = [0]
        elif family.startswith("eigen"):
            sizes = [s for s in (8, 10, 12) if s in args.sizes or s == 10]
        for size in sizes:
            command = [sys.executable, os.path.abspath(__file__), "--one", family, str(size),
                       "--users", str(args.users), "--epsilon", str(args.epsilon)]
            try:
                done = subprocess.run(command, capture_output=True, text=True,
                                      timeout=args.timeout, check=False)
            except subprocess.TimeoutExpired:
                rows.append([family, 2**size, "", "", "", "", f"> {args.timeout:.0f} s", "",
                             "timeout"])
                continue
            if done.returncode != 0:
                reason = done.stderr.strip().splitlines()[-1][:60] if done.stderr else "?"
                rows.append([family, 2**size, "", "", "", "", "", "", f"error: {reason}"])
                continue
            row = json.loads(done.stdout.strip().splitlines()[-1])

            def cell(key, row=row):
                return f"{row[key]:.2f}" if key in row else "-"

            if family in ERRORS:
                error_rows.append([row["chosen"], row["cells"], cell("errors_few"),
                                   cell("errors_few_cpu"), cell("errors_many"),
                                   cell("errors_many_cpu"), f"{row['peak_mb']:.0f}"])
                print(f"  done {family} 2^{size}", file=sys.stderr)
                continue

            rows.append([row["family"], row["cells"], cell("encoder_fit"), cell("transform"),
                         cell("estimator_fit"), cell("predict"), cell("total"),
                         f"{row['peak_mb']:.0f}", row.get("chosen", "")])
            print(f"  done {family} 2^{size}: {row['total']:.2f} s", file=sys.stderr)
    if rows:
        print(f"N = {args.users} users, epsilon = {args.epsilon}, {N_PREDICTIONS} interval "
              "predictions; seconds; peak resident memory of the row's process in MB")
        print_table(["family", "cells", "enc.fit", "transform", "est.fit", "predict", "total",
                     "peak MB", "strategy"], rows)
    if error_rows:
        print(f"Per-query error of chosen intervals (WorkloadEstimator over workloads.ranges): "
              f"expected_error_ of {N_ERROR_QUERIES[0]} intervals, predict_error of "
              f"{N_ERROR_QUERIES[1]}; seconds, wall-clock and processor; N = {args.users} "
              f"users, epsilon = {args.epsilon}")
        print_table(["strategy", "cells", "10^4 wall", "10^4 cpu", "10^5 wall", "10^5 cpu",
                     "peak MB"], error_rows)


if __name__ == "__main__":
    main()
