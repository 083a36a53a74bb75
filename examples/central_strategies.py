"""Central model: compare matrix-mechanism strategies on three workloads
=====================================================================

A trusted curator answers a workload with the matrix mechanism (Gaussian noise on a strategy
``A``, least-squares answers). The total squared error of every strategy is known before
any data is seen; dividing it by Li & Miklau's singular value bound (no strategy can do
better) gives a number that does not depend on epsilon or delta: 1 is optimal.

Workloads: all ranges over 128 ordered cells, all 2-way marginals of four attributes with 4
categories (256 cells), and 400 random ranges over 128 cells. Strategies: identity,
the workload itself, hierarchical (binary tree), Haar wavelet, Fourier, Eigen-Design, and
Eigen-Design refined by 10 L-BFGS steps on the exact error.

The table is printed and drawn (one :class:`~sklearn_ldp.StrategyComparisonDisplay` a
workload), the plot saved as ``central_strategies.png`` next to this script. Then the
curator's release itself is shown with ``WorkloadEstimator(strategy="auto", epsilon=...,
delta=...)`` on simulated records.

Run: ``python examples/central_strategies.py``
"""

import sys
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import StrategyComparisonDisplay, WorkloadEstimator, workloads
from sklearn_ldp.optimize.eigen_design import singular_value_bound, strategy_error
from sklearn_ldp.selection import central_strategy

STRATEGIES = ["identity", "workload", "hierarchical", "wavelet", "fourier", "eigen"]


def build_workloads(rng):
    ages = {"age": list(range(128))}
    survey = {f"q{i}": ["a", "b", "c", "d"] for i in range(4)}
    pairs = {tuple(sorted(rng.integers(0, 128, size=2).tolist())) for _ in range(400)}
    return {
        "all-range (n=128)": (workloads.all_range(ages), (128,)),
        "2-way marginals (n=256)": (workloads.marginals(survey, k=2), (4, 4, 4, 4)),
        "random ranges (n=128)": (workloads.ranges(128, sorted(pairs)), (128,)),
    }


def ratios_to_bound(W, shape):
    """Total squared error / singular value bound of every strategy on workload ``W``."""
    bound = singular_value_bound(W.toarray())
    result = {}
    for name in STRATEGIES:
        A, _ = central_strategy(name, W.toarray(), shape)
        result[name] = strategy_error(A, W.toarray()) / bound
    A, _ = central_strategy("eigen", W.toarray(), shape, refine_iter=10)
    result["eigen + refine"] = strategy_error(A, W.toarray()) / bound
    return result


def plot(table, path):
    """One panel per workload: the strategies' ratios to the bound, the least highlighted."""
    figure, axes = plt.subplots(1, len(table.index), figsize=(13, 4), layout="constrained")
    for axis, (workload, ratios) in zip(axes, table.iterrows(), strict=True):
        StrategyComparisonDisplay(ratios.index, ratios.to_numpy(), log_scale=False,
                                  error_label="total squared error / bound (1 = optimal)"
                                  ).plot(ax=axis)
        axis.axvline(1.0, color="black", linewidth=0.8, linestyle="--")  # the bound
        axis.set_title(workload)
    figure.suptitle("Central matrix mechanism: error relative to the lower bound")
    figure.savefig(path, dpi=120)
    print(f"plot saved to {path}")


def curator_release():
    """The user-facing side: a trusted curator's (0.5, 1e-4)-DP release of 2-way marginals."""
    rng = np.random.default_rng(1)
    dom = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW")}
    df = pd.DataFrame({column: rng.choice(values, 20_000) for column, values in dom.items()})
    W = workloads.marginals(dom, k=2)
    est = WorkloadEstimator(workload=W, strategy="auto", epsilon=0.5, delta=1e-4,
                            categories=dom, random_state=0).fit(df)
    total = est.expected_error_["worst_case"].sum()
    print(f"\n'auto' chose {est.strategy_!r}; candidates (expected total squared error):")
    print(est.candidates_.round(1).to_string())
    print(f"expected total squared error {total:.1f}, lower bound {est.lower_bound_:.1f} "
          f"(ratio {total / est.lower_bound_:.3f})")
    print(est.answers_.head(4).round(1).to_string())


def main():
    rng = np.random.default_rng(0)
    table = pd.DataFrame({name: ratios_to_bound(W, shape)
                          for name, (W, shape) in build_workloads(rng).items()}).T
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(table.round(3))
    # sys.argv[0], not __file__: the docs' gallery (sphinx-gallery) runs examples without it.
    plot(table, Path(sys.argv[0]).resolve().with_name("central_strategies.png"))
    curator_release()


if __name__ == "__main__":
    main()
    plt.show()
