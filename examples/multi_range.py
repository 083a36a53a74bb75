"""Multi-dimensional range queries: HDG against TDG
==================================================

A mobility survey asks 300,000 people for three numbers: their age, their yearly income and
the length of their commute. The analysts want the fraction of people inside *boxes* such as
"aged 30 to 45, earning 20k to 60k, commuting under 15 km" -- ranges over several columns
at once. Every device privatizes its record with epsilon = 1 by Yang et al.'s grids:

* TDG: each user reports the cell of one pair of columns in a 2-D grid;
* HDG: the users are spread over the pairs and the single columns; the server combines the
  fine 1-D grids with the coarse 2-D grids.

Both collections are decoded by :class:`~sklearn_ldp.MultiRangeEstimator`, and their mean
absolute error over random boxes of growing volume (the fraction of the domain a box covers)
is plotted, for boxes of one, two and three columns.

Run: ``python examples/multi_range.py`` (about a minute).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import LDPEncoder, MultiRangeEstimator

N_USERS, EPSILON = 300_000, 1.0
rng = np.random.default_rng(0)
age = rng.uniform(18, 80, N_USERS)
income = np.clip(25_000 + 900 * (age - 18) + rng.normal(0, 20_000, N_USERS), 0, 150_000)
km = np.clip(rng.gamma(2.0, 6.0, N_USERS) * (1 + income / 150_000), 0, 80)
df = pd.DataFrame({"age": age, "income": income, "km": km})
bounds = {"age": (18, 80), "income": (0, 150_000), "km": (0, 80)}


def random_boxes(n_columns, volume, n_boxes=100):
    """Boxes over ``n_columns`` random columns covering ``volume`` of the domain."""
    side = volume ** (1 / n_columns)
    boxes = []
    for _ in range(n_boxes):
        columns = rng.choice(list(bounds), size=n_columns, replace=False)
        box = {}
        for column in columns:
            low, high = bounds[column]
            start = rng.uniform(0, 1 - side)
            box[column] = (low + start * (high - low), low + (start + side) * (high - low))
        boxes.append(box)
    return boxes


def truth(boxes):
    out = []
    for box in boxes:
        inside = np.ones(N_USERS, dtype=bool)
        for column, (low, high) in box.items():
            inside &= (df[column] >= low) & (df[column] <= high)
        out.append(inside.mean())
    return np.array(out)


estimators = {}
for strategy in ("hdg", "tdg"):
    encoder = LDPEncoder(bounds=bounds, strategy=strategy, epsilon=EPSILON, n_users=N_USERS,
                         random_state=1).fit()
    estimators[strategy] = MultiRangeEstimator().fit(encoder.transform(df))
    mechanism = encoder.mechanism_
    one_d = f"1-D grids of {mechanism.g1} cells, " if mechanism.g1 else ""
    print(f"{strategy}: {one_d}2-D grids of {mechanism.g2} x {mechanism.g2}")

# One box of two and one of three columns: the estimate, its standard error (a bootstrap of
# the post-processing) and the bound on the error of assuming values uniform within the
# cells the box cuts, from each collection.
boxes = [{"age": (30, 45), "income": (20_000, 60_000)},
         {"age": (30, 45), "income": (20_000, 60_000), "km": (0, 10)}]
for strategy, estimator in estimators.items():
    for (_, row), true in zip(estimator.predict_error(boxes).iterrows(), truth(boxes),
                              strict=True):
        print(f"{strategy}: {row['estimate']:.4f} +- {row['std_error']:.4f}, bias at most "
              f"{row['bias_bound']:.4f} (true {true:.4f})")

volumes = [0.02, 0.05, 0.1, 0.2, 0.4, 0.6]
figure, axes = plt.subplots(1, 3, figsize=(11, 3.6), layout="constrained", sharey=True)
for axis, n_columns in zip(axes, (1, 2, 3), strict=True):
    workloads = [random_boxes(n_columns, volume) for volume in volumes]
    truths = [truth(boxes) for boxes in workloads]
    for strategy, estimator in estimators.items():
        errors = [np.abs(estimator.predict(boxes) - true).mean()
                  for boxes, true in zip(workloads, truths, strict=True)]
        axis.plot(volumes, errors, marker="o", label=strategy.upper())
        print(f"{n_columns} column(s), {strategy}: MAE "
              + " ".join(f"{e:.4f}" for e in errors))
    axis.set_title(f"boxes of {n_columns} column(s)")
    axis.set_xlabel("volume of the box")
axes[0].set_ylabel("mean absolute error")
axes[0].legend()
figure.suptitle(f"{N_USERS} users, eps = {EPSILON}")
plt.show()
