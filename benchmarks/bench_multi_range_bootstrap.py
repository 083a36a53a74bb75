"""CPU seconds of MultiRangeEstimator's bootstrap standard errors (n_bootstrap=100) against
none (n_bootstrap=0), at 10^6 users with independent uniform columns, epsilon = 1, HDG.

Run from the repository root: ``PYTHONPATH=. python benchmarks/bench_multi_range_bootstrap.py``.
"""

import time

import numpy as np
import pandas as pd

from sklearn_ldp import LDPEncoder, MultiRangeEstimator

N_USERS = 10**6


def reports(n_columns, rng):
    frame = pd.DataFrame(rng.random((N_USERS, n_columns)),
                         columns=[f"c{j}" for j in range(n_columns)])
    encoder = LDPEncoder(bounds=dict.fromkeys(frame, (0, 1)), strategy="hdg", epsilon=1.0,
                         n_users=N_USERS, random_state=0).fit()
    return encoder.transform(frame)


def boxes(n_columns, sizes, n_boxes, rng):
    """``n_boxes`` random boxes of each number of columns in ``sizes``, sides 0.4."""
    chosen = []
    for size in sizes:
        for _ in range(n_boxes):
            columns = rng.choice(n_columns, size, replace=False)
            chosen.append({f"c{c}": (low, low + 0.4)
                           for c, low in zip(columns, rng.random(size) * 0.5, strict=True)})
    return chosen


def main():
    rng = np.random.default_rng(0)
    for n_columns, sizes, n_boxes in [(3, (1, 2, 3), 200), (4, (1, 2, 3, 4), 200), (6, (6,), 100)]:
        collected = reports(n_columns, rng)
        queries = boxes(n_columns, sizes, n_boxes, rng)
        for n_bootstrap in (0, 100):
            estimator = MultiRangeEstimator(n_bootstrap=n_bootstrap, random_state=0)
            start = time.process_time()
            estimator.fit(collected)
            fit = time.process_time() - start
            start = time.process_time()
            estimator.predict_error(queries)
            answer = time.process_time() - start
            print(f"d={n_columns} (g1={estimator.mechanism_.g1}, g2={estimator.mechanism_.g2}) "
                  f"n_bootstrap={n_bootstrap}: fit {fit:.2f} s, predict_error of "
                  f"{len(queries)} boxes of {sizes} columns {answer:.2f} s")


if __name__ == "__main__":
    main()
