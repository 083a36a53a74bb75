"""Quick start: all 2-way marginals of a survey under 1.0-LDP, in a scikit-learn Pipeline.

Each simulated user privatizes their own record with a strategy optimized for the workload;
the server only aggregates the randomized reports. We compare the private answers with the
true ones (known here only because the data are synthetic) and with the analytic error that
the library predicts *before* any data are collected. Then GridSearchCV compares strategies
and privacy budgets, scoring on privatized held-out folds only.

Run:  python examples/quickstart.py      (about 10 s)
"""

import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_ldp import Domain, LDPEncoder, WorkloadEstimator, workloads

# The optimizer may stop on its iteration cap; the strategy is still valid (see docs/encoder.md).
warnings.filterwarnings("ignore", category=ConvergenceWarning)

# ---------------------------------------------------------------- synthetic private data
dom = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW")}
rng = np.random.default_rng(42)
n_users = 50_000
age = rng.choice(dom["age"], size=n_users, p=[0.30, 0.45, 0.25])
# smoking depends on age, so the age x smoker marginal is not a product of its margins
p_smoker = np.select([age == "<30", age == "30-50"], [0.30, 0.20], default=0.10)
df = pd.DataFrame({
    "age": age,
    "smoker": np.where(rng.random(n_users) < p_smoker, "yes", "no"),
    "region": rng.choice(dom["region"], size=n_users, p=[0.2, 0.3, 0.35, 0.15]),
})

# ---------------------------------------------------------------- the workload and pipeline
W = workloads.marginals(dom, k=2)  # every 2-way marginal: 26 counting queries over 24 cells
pipe = make_pipeline(
    LDPEncoder(categories=dom, strategy="optimized", epsilon=1.0, workload=W, random_state=0),
    WorkloadEstimator(workload=W),
)
pipe.fit(df)
estimator = pipe[-1]

# Ground truth (simulation only: a real server never sees the raw records).
n_cells = Domain(dom).size
x_true = np.bincount(Domain(dom).encode(df), minlength=n_cells)
truth = W.toarray() @ x_true

table = pd.DataFrame({
    "private": estimator.answers_.round(0),
    "true": truth,
    "error": (estimator.answers_ - truth).round(0),
    "expected_std": np.sqrt(estimator.expected_error_["worst_case"]).round(0),
})
pd.set_option("display.width", 120)
print(f"{n_users} users, strategy={pipe[0].strategy_!r}, epsilon=1.0, "
      f"{W.n_queries} queries over {n_cells} cells\n")
print(table.to_string())

observed_rmse = float(np.sqrt(np.mean((estimator.answers_ - truth) ** 2)))
expected_rmse = float(np.sqrt(estimator.expected_error_["worst_case"].mean()))
print(f"\nRMSE per query: observed {observed_rmse:.0f}, expected (worst case) "
      f"{expected_rmse:.0f}, i.e. {expected_rmse / n_users:.2%} of the population.")

# ---------------------------------------------------------------- compare strategies and budgets
param_grid = {
    "ldpencoder__strategy": ["randomized_response", "hierarchical", "optimized"],
    "ldpencoder__epsilon": [0.5, 1, 2],
}
search = GridSearchCV(pipe, param_grid, cv=3)
search.fit(df)  # each candidate is scored on privatized held-out folds only
print("\nGridSearchCV best_params_:", search.best_params_)
scores = pd.DataFrame(search.cv_results_["params"])
scores["mean_score"] = search.cv_results_["mean_test_score"]
scores["std_score"] = search.cv_results_["std_test_score"]
scores["rank"] = search.cv_results_["rank_test_score"]
# The analytic counterpart, known before collecting anything: minus the worst-case variance of
# one query (in fractions of users) for a training fold of 2/3 of the users.
n_train = n_users * 2 // 3
scores["expected_worst"] = [
    -pipe[0].set_params(**{k.split("__")[1]: v for k, v in params.items()}).fit()
    .expected_error_["worst_case"] / (W.n_queries * n_train)
    for params in search.cv_results_["params"]
]
print("score = unbiased but noisy estimate of minus the mean squared error per query, in squared\n"
      "fractions of users (higher is better), from held-out reports; expected_worst = analytic:")
print(scores.sort_values(["ldpencoder__epsilon", "rank"]).to_string(index=False,
      float_format=lambda v: f"{v:.2e}"))
