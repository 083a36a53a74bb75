"""A privacy budget ledger shared by a Pipeline, GridSearchCV and a central release
================================================================================

A survey team has promised every respondent a total budget of epsilon = 4 (delta = 1e-6).
The script:

1. creates a ledger file with two disjoint cohorts, ``"selection"`` and ``"production"``;
2. chooses a strategy with GridSearchCV on the ``"selection"`` cohort (every fit and every
   held-out score is a collection, all charged to the same file through cloned estimators);
3. collects from the ``"production"`` cohort with the chosen strategy (parallel composition:
   the cohorts' budgets do not add up) and draws its answers with their 95% intervals;
4. has a trusted curator release central-model marginals of everyone, (epsilon, delta)-DP;
5. shows the refusal once a cohort's budget is exhausted, and prints the ledger.

Run: ``python examples/privacy_budget.py`` (a few seconds). The ledger file is written to a
temporary directory, removed at the end.
"""

import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_ldp import HistogramDisplay, LDPEncoder, WorkloadEstimator, workloads
from sklearn_ldp.deploy.budget import BudgetExceededError, PrivacyLedger

DOMAIN = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW")}


def population(n_users, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.choice(DOMAIN["age"], n_users, p=[0.5, 0.3, 0.2]),
        "smoker": rng.choice(DOMAIN["smoker"], n_users, p=[0.8, 0.2]),
        "region": rng.choice(DOMAIN["region"], n_users),
    })


def main(directory):
    path = os.path.join(directory, "survey_budget.json")
    PrivacyLedger.create(path, total_epsilon=4.0, total_delta=1e-6,
                         groups=["selection", "production"])
    selection_users, production_users = population(3000, 0), population(20000, 1)
    W = workloads.marginals(DOMAIN, k=1)

    # 2. model selection on its own cohort: 2 candidates x 3 splits x (fit + score) + refit,
    #    13 collections at epsilon 0.25
    pipe = make_pipeline(
        LDPEncoder(categories=DOMAIN, workload=W, epsilon=0.25, ledger=path,
                   ledger_users="selection", random_state=0),
        WorkloadEstimator(workload=W),
    )
    search = GridSearchCV(pipe, {"ldpencoder__strategy": ["randomized_response", "hadamard"]},
                          cv=3, error_score="raise").fit(selection_users)
    best = search.best_params_["ldpencoder__strategy"]
    ledger = PrivacyLedger.open(path)
    print(f"selection: best strategy {best!r}; cohort 'selection' spent "
          f"{ledger.spent('selection').epsilon:g} of 4")

    # 3. the production collection, on other people: parallel composition
    encoder = LDPEncoder(categories=DOMAIN, strategy=best, workload=W, epsilon=1.0,
                         ledger=path, ledger_users="production", random_state=1).fit()
    production = WorkloadEstimator(workload=W).fit(encoder.transform(production_users))
    HistogramDisplay.from_estimator(production)  # the answers, with 95% intervals
    print(f"production: {len(production.answers_)} answers; cohort 'production' spent "
          f"{ledger.spent('production').epsilon:g}")

    # 4. a central release about everyone (both cohorts): (epsilon, delta) of each of them
    everyone = pd.concat([selection_users, production_users], ignore_index=True)
    WorkloadEstimator(workload=workloads.marginals(DOMAIN, k=2), strategy="eigen", epsilon=0.5,
                      delta=5e-7, categories=DOMAIN, ledger=path, random_state=2).fit(everyone)
    print(f"after the central release: most charged person {ledger.spent()}")

    # 5. the selection cohort has 4 - 3.25 - 0.5 = 0.25 left: a collection at 1.0 is refused
    try:
        encoder.set_params(ledger_users="selection").transform(selection_users)
    except BudgetExceededError as error:
        print(f"refused: {error}")

    frame = ledger.to_frame()
    print(frame[["kind", "users", "epsilon", "delta"]].groupby(["kind", "users"]).sum())
    print(f"{len(frame)} entries in {path}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        main(scratch)
    plt.show()
