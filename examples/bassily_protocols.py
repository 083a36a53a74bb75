"""Bassily's protocols: Gaussian and pure randomizers, the hull projection, adaptive queries
=========================================================================================

1. A survey with few users per query: the Gaussian randomizer's unbiased answers against
   the same answers projected onto the workload's hull (``postprocess="hull"``), and the pure
   epsilon-LDP rejection sampler.
2. ``AdaptiveQueryEstimator``: the next question depends on the previous answer ("if most
   users are under 30, ask about the youngest; otherwise about the oldest"), each answered
   by a fresh group of users sending one bit; the answers are drawn with their 95% intervals
   (:class:`~sklearn_ldp.HistogramDisplay`).

Run: ``python examples/bassily_protocols.py`` (a few seconds).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import (
    AdaptiveQueryEstimator,
    HistogramDisplay,
    LDPEncoder,
    WorkloadEstimator,
    workloads,
)

domain = {"age": ["<20", "20-30", "30-40", "40-50", "50-60", "60+"],
          "region": ["north", "south", "east", "west", "centre"],
          "device": ["phone", "tablet", "laptop", "desktop"]}
rng = np.random.default_rng(42)
n_users = 2000
df = pd.DataFrame({
    "age": rng.choice(domain["age"], n_users, p=[0.1, 0.3, 0.25, 0.15, 0.1, 0.1]),
    "region": rng.choice(domain["region"], n_users),
    "device": rng.choice(domain["device"], n_users, p=[0.6, 0.1, 0.2, 0.1]),
})
W = workloads.marginals(domain, k=2)  # 74 two-way marginal counts over 120 cells
truth = W.toarray() @ np.bincount(LDPEncoder(categories=domain).fit().domain_.encode(df),
                               minlength=120)

print(f"{n_users} users, {W.n_queries} two-way marginal queries, eps = 1")
for strategy, extra in [("gaussian", {"delta": 1e-6}), ("gaussian_pure", {})]:
    for method in ("none", "hull"):
        encoder = LDPEncoder(categories=domain, strategy=strategy, epsilon=1.0, workload=W,
                             random_state=0, **extra)
        estimator = WorkloadEstimator(workload=W, postprocess=method)
        estimator.fit(encoder.fit_transform(df))
        rmse = np.sqrt(np.mean((estimator.answers_.to_numpy() - truth) ** 2))
        analytic = np.sqrt(estimator.expected_error_["average_case"].mean())
        print(f"  {strategy:14s} postprocess={method:5s} RMSE {rmse:8.1f}   "
              f"(analytic RMSE of the unbiased answers {analytic:.1f})")


def next_query(answers):
    """Round 1: share of users under 30. Round 2: depends on the answer."""
    ages = domain["age"]
    query = np.zeros((len(ages), len(domain["region"]), len(domain["device"])))
    if len(answers) == 0:
        query[:2] = 1.0
    elif answers.iloc[0] > 0.5:
        query[0] = 1.0  # mostly young: how many are under 20?
    else:
        query[-1] = 1.0  # mostly older: how many are over 60?
    return query.ravel()


adaptive = AdaptiveQueryEstimator(categories=domain, epsilon=1.0, queries=next_query,
                                  n_rounds=2, random_state=0).fit(df)
print("\nadaptive queries (answers are fractions of users):")
print(pd.DataFrame({"answer": adaptive.answers_,
                    "standard error": np.sqrt(adaptive.expected_error_["worst_case"])}))
print(f"true share under 30: {df['age'].isin(['<20', '20-30']).mean():.3f}")
HistogramDisplay.from_estimator(adaptive)  # the two answers with their 95% intervals
plt.show()
