"""Planning a survey: how many respondents for a margin of error of +-2 points?
============================================================================

A health survey asks 5 questions under local differential privacy (epsilon = 1 per
respondent): age group, smoker, region, and a yearly income bounded by 0 and 200,000. The
team wants every share within +-2 percentage points at 95% confidence, and the mean income
within +-2,000.

The script:

1. compares the users needed by three strategies for the histogram of the joint domain;
2. plans the one-way shares and the mean income of a record of columns (one report per
   respondent);
3. draws the margin of error against the number of respondents for each strategy (the
   figure), with the target margin;
4. checks the plan by simulating the chosen collection at the planned size.

Run: ``python examples/plan_survey.py`` (a few seconds; a window shows the figure, or
``MPLBACKEND=Agg`` to skip it).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import (
    AttributeHistogramEstimator,
    LDPEncoder,
    MeanEstimator,
    margin_of_error,
    users_needed,
)

DOMAIN = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW")}
MARGIN, CONFIDENCE = 0.02, 0.95

# %%
# 1. The joint histogram (24 cells): users needed per strategy
# ------------------------------------------------------------
strategies = ["randomized_response", "oue", "hadamard"]
needed = pd.Series({s: users_needed(LDPEncoder(categories=DOMAIN, strategy=s, epsilon=1.0),
                                    MARGIN, CONFIDENCE) for s in strategies},
                   name=f"users for +-{MARGIN:.0%} at {CONFIDENCE:.0%}")
print(needed.to_string(), "\n")

# %%
# 2. One-way shares and the mean income, one report per respondent
# ----------------------------------------------------------------
record = LDPEncoder(categories=DOMAIN, bounds={"income": (0, 200_000)}, epsilon=1.0,
                    strategy={"age": "oue", "smoker": "oue", "region": "oue",
                              "income": "hybrid"})
shares = users_needed(record, MARGIN, CONFIDENCE, queries=list(DOMAIN))
income = users_needed(record, 2_000, CONFIDENCE, queries="income")
n_plan = max(shares, income)
print(f"one-way shares +-{MARGIN:.0%}: {shares:,} respondents; mean income +-2,000: "
      f"{income:,}; plan {n_plan:,}\n")

# %%
# 3. The margin against the number of respondents
# -----------------------------------------------
sizes = np.geomspace(1_000, 1_000_000, 40).astype(int)
fig, ax = plt.subplots(figsize=(6, 4))
for strategy in strategies:
    encoder = LDPEncoder(categories=DOMAIN, strategy=strategy, epsilon=1.0).fit()
    ax.plot(sizes, [margin_of_error(encoder, n, CONFIDENCE) for n in sizes], label=strategy)
ax.axhline(MARGIN, color="grey", linestyle="--", label=f"target +-{MARGIN:.0%}")
ax.set(xscale="log", yscale="log", xlabel="respondents",
       ylabel="margin of error (share of users, 95%)",
       title="Joint histogram of 24 cells, epsilon = 1")
ax.legend()
fig.tight_layout()

# %%
# 4. Check: simulate the record collection at the planned size
# ------------------------------------------------------------
rng = np.random.default_rng(0)
people = pd.DataFrame({
    "age": rng.choice(DOMAIN["age"], n_plan, p=[0.5, 0.3, 0.2]),
    "smoker": rng.choice(DOMAIN["smoker"], n_plan, p=[0.8, 0.2]),
    "region": rng.choice(DOMAIN["region"], n_plan),
    "income": rng.uniform(10_000, 120_000, n_plan),
})
reports = record.set_params(random_state=1).fit(people).transform(people)
histograms = AttributeHistogramEstimator().fit(reports).answers_
truth = pd.concat([people[c].value_counts(normalize=True).rename(lambda v, c=c: f"{c}={v}")
                   for c in DOMAIN])
errors = (histograms - truth.reindex(histograms.index)).abs()
mean_error = abs(MeanEstimator().fit(reports).mean_["income"] - people["income"].mean())
print(f"largest share error {errors.max():.4f} (margin {MARGIN}); share of answers within "
      f"the margin {np.mean(errors <= MARGIN):.0%}; mean income error {mean_error:,.0f} "
      "(margin 2,000)")
plt.show()
