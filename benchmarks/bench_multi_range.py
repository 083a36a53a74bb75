"""Multi-dimensional range queries by HDG and TDG: mean absolute error and time.

For ``d`` in {2, 3, 4} numeric attributes and N users (default 10^6), one collection per
method (``LDPEncoder(bounds=..., strategy="hdg"|"tdg", n_users=N)``, the paper's grid sizes
for N, eps and d), decoded by ``MultiRangeEstimator``; then random boxes of ``lambda``
attributes (2, and 3 and 4 where ``d`` allows) and volume ``omega`` (the fraction of the
domain they cover: each side ``omega^(1/lambda)`` of its attribute's range, placed uniformly),
200 boxes per (lambda, omega), and the mean absolute error of the estimated fractions against
the users' own. Printed per (d, method): the grid sizes, CPU seconds of ``transform``
(privatize every user), ``fit`` (aggregate and make the grids consistent) and ``predict``
(all boxes, HDG's response matrices built on first use), then the MAE per (lambda, omega).

Data (synthetic, fixed by ``--seed``): the paper's correlated Gaussian -- every attribute
``0.5 + 0.15 (sqrt(rho) z + sqrt(1 - rho) e_j)`` with a common ``z`` (``rho`` = 0.5), clipped
to [0, 1] -- and, with ``--data uniform``, independent uniform values.

Examples
--------
    PYTHONPATH=. python benchmarks/bench_multi_range.py                  # a few minutes
    PYTHONPATH=. python benchmarks/bench_multi_range.py --users 100000 --dims 2,3 --epsilon 2
"""

import argparse
import time

import numpy as np
import pandas as pd

from sklearn_ldp import LDPEncoder, MultiRangeEstimator

VOLUMES = (0.05, 0.2, 0.5)


def synthetic(n, d, kind, rng):
    """``n`` records of ``d`` values in [0, 1] (see the module docstring)."""
    if kind == "uniform":
        return rng.random((n, d))
    common = rng.normal(size=(n, 1))
    values = 0.5 + 0.15 * (np.sqrt(0.5) * common + np.sqrt(0.5) * rng.normal(size=(n, d)))
    return np.clip(values, 0.0, 1.0)


def random_boxes(columns, lam, volume, n_boxes, rng):
    """``n_boxes`` boxes of ``lam`` of the columns, each of the given volume."""
    side = volume ** (1 / lam)
    boxes = []
    for _ in range(n_boxes):
        chosen = rng.choice(len(columns), size=lam, replace=False)
        low = rng.uniform(0, 1 - side, size=lam)
        boxes.append({columns[j]: (float(a), float(a + side))
                      for j, a in zip(chosen, low, strict=True)})
    return boxes


def true_fractions(values, columns, boxes):
    index = {name: j for j, name in enumerate(columns)}
    out = np.empty(len(boxes))
    for i, box in enumerate(boxes):
        inside = np.ones(values.shape[0], dtype=bool)
        for name, (low, high) in box.items():
            column = values[:, index[name]]
            inside &= (column >= low) & (column <= high)
        out[i] = inside.mean()
    return out


def run(args):
    rng = np.random.default_rng(args.seed)
    rows = []
    for d in args.dims:
        values = synthetic(args.users, d, args.data, rng)
        columns = [f"x{j}" for j in range(d)]
        frame = pd.DataFrame(values, columns=columns)
        workloads = {(lam, volume): random_boxes(columns, lam, volume, args.boxes, rng)
                     for lam in range(2, d + 1) for volume in VOLUMES}
        truths = {key: true_fractions(values, columns, boxes)
                  for key, boxes in workloads.items()}
        for method in ("hdg", "tdg"):
            encoder = LDPEncoder(bounds=dict.fromkeys(columns, (0.0, 1.0)), strategy=method,
                                 epsilon=args.epsilon, n_users=args.users,
                                 random_state=args.seed).fit()
            start = time.process_time()
            reports = encoder.transform(frame)
            privatize = time.process_time() - start
            start = time.process_time()
            estimator = MultiRangeEstimator().fit(reports)
            fit = time.process_time() - start
            start = time.process_time()
            answers = {key: estimator.predict(boxes) for key, boxes in workloads.items()}
            predict = time.process_time() - start
            mechanism = encoder.mechanism_
            print(f"d={d} {method}: g1={mechanism.g1} g2={mechanism.g2}  CPU s: transform "
                  f"{privatize:.2f}, fit {fit:.2f}, predict {predict:.2f} "
                  f"({len(workloads) * args.boxes} boxes)", flush=True)
            for key, answer in answers.items():
                mae = float(np.abs(answer - truths[key]).mean())
                rows.append({"d": d, "method": method, "lambda": key[0], "volume": key[1],
                             "mae": mae})
    table = pd.DataFrame(rows).pivot_table(index=["d", "lambda", "volume"], columns="method",
                                           values="mae")
    table["hdg / tdg"] = table["hdg"] / table["tdg"]
    print(f"\nMAE of the estimated fractions, N={args.users}, eps={args.epsilon}, "
          f"{args.data} data, {args.boxes} boxes each")
    print(table.round(4).to_string())


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=10**6)
    parser.add_argument("--dims", type=lambda s: [int(x) for x in s.split(",")],
                        default=[2, 3, 4])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--boxes", type=int, default=200)
    parser.add_argument("--data", choices=["gaussian", "uniform"], default="gaussian")
    parser.add_argument("--seed", type=int, default=0)
    run(parser.parse_args())


if __name__ == "__main__":
    main()
