"""Numeric columns: means and an income distribution from a private survey
=========================================================================

A statistics office surveys 100,000 households: age, weekly working hours, yearly income,
smoker, region. Nobody's answers leave their device in the clear: every household's record
is privatized with epsilon = 2 in all (a *mixed* record: each column reported by its own
mechanism with a share of the budget, here twice as much for the income). The office then
estimates

* the mean age and working hours (Hybrid mechanism, unbiased, with their standard errors
  and analytic variances),
* the income distribution, its quartiles and deciles (Square Wave with EM and smoothing),
* the smoker and region frequencies (randomized response),

all from the same reports, compared with the truth; and draws them with their intervals
(:class:`~sklearn_ldp.MeanDisplay`, :class:`~sklearn_ldp.CDFDisplay`,
:class:`~sklearn_ldp.HistogramDisplay`).

Run: ``python examples/numeric_survey.py`` (a few seconds).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import (
    AttributeHistogramEstimator,
    CDFDisplay,
    DistributionEstimator,
    HistogramDisplay,
    LDPEncoder,
    MeanDisplay,
    MeanEstimator,
)

N_USERS, EPSILON = 100_000, 2.0


def survey(n_users, rng):
    """A survey-like frame: income log-normal (skewed), hours bimodal (part/full time)."""
    full_time = rng.random(n_users) < 0.7
    return pd.DataFrame({
        "age": rng.uniform(18, 80, n_users).round(),
        "hours": np.where(full_time, rng.normal(40, 4, n_users), rng.normal(20, 5, n_users))
        .clip(0, 80),
        "income": np.exp(rng.normal(10.4, 0.55, n_users)).clip(0, 300_000),
        "smoker": rng.choice(["no", "yes"], n_users, p=[0.78, 0.22]),
        "region": rng.choice(["north", "south", "east", "west"], n_users,
                             p=[0.3, 0.3, 0.25, 0.15]),
    })


# Not the encoder's seed: the data and the privacy coins must not share a random stream.
df = survey(N_USERS, np.random.default_rng(2024))

encoder = LDPEncoder(
    bounds={"age": (0, 100), "hours": (0, 80), "income": (0, 300_000)},  # public bounds
    categories={"smoker": ["no", "yes"], "region": ["north", "south", "east", "west"]},
    strategy={"age": "hybrid", "hours": "hybrid", "income": "square_wave"},
    budget_weights={"age": 1, "hours": 1, "income": 2, "smoker": 1, "region": 1},
    n_bins=256, epsilon=EPSILON, random_state=0)
reports = encoder.fit_transform(df)
print(f"{len(reports)} reports of {reports.shape[1]} columns; record epsilon "
      f"{encoder.epsilon_:g}, split as:")
print(encoder.column_budget_.to_string())

means = MeanEstimator().fit(reports)
print("\nmeans (private, standard error estimated from the reports, analytic worst case):")
print(pd.DataFrame({
    "private": means.mean_.round(2),
    "std error": means.mean_std_error_.round(3),
    "analytic sd (worst)": np.sqrt(means.expected_error_["worst_case"]).round(3),
    "true": df[means.mean_.index].mean().round(2),
}).to_string())

incomes = DistributionEstimator().fit(reports)
levels = [0.1, 0.25, 0.5, 0.75, 0.9]
print("\nincome quantiles:")
print(pd.DataFrame({"private": incomes.quantiles(levels).round(-2),
                    "true": np.quantile(df["income"], levels).round(-2)},
                   index=pd.Index(levels, name="level")).to_string())
brackets = [[0, 20_000], [20_000, 50_000], [50_000, 100_000], [100_000, 300_000]]
print("\nincome brackets (fraction of households):")
print(pd.DataFrame({
    "bracket": [f"{lo:,}-{hi:,}" for lo, hi in brackets],
    "private": incomes.predict(brackets).round(3),
    "true": [float(df["income"].between(lo, hi).mean().round(3)) for lo, hi in brackets],
}).to_string(index=False))

histograms = AttributeHistogramEstimator().fit(reports)
truth = pd.concat([df[column].value_counts(normalize=True).rename(lambda v, c=column: f"{c}={v}")
                   for column in ("smoker", "region")])
print("\ncategorical columns (private, analytic sd, true):")
print(pd.DataFrame({"private": histograms.answers_.round(3),
                    "analytic sd": np.sqrt(histograms.expected_error_["worst_case"]).round(4),
                    "true": truth.reindex(histograms.answers_.index).round(3)}).to_string())

# The figure, one display a panel: the means with their 95% intervals, the income CDF with
# its quantiles, the categorical shares with their intervals; the truth in each.
figure, (left, middle, right) = plt.subplots(1, 3, figsize=(14, 4.2), layout="constrained")
MeanDisplay.from_estimator(means, true_means=df[means.mean_.index].mean(), ax=left)
CDFDisplay.from_estimator(incomes, quantiles=levels, ax=middle)
middle.plot(np.sort(df["income"]), np.arange(1, N_USERS + 1) / N_USERS, color="black",
            linewidth=1, label="true CDF")
middle.set_xlim(0, 150_000)
middle.set_xticks([0, 50_000, 100_000, 150_000])
middle.legend(loc="lower right")
HistogramDisplay.from_estimator(histograms, ax=right,
                                true_values=truth.reindex(histograms.answers_.index))
figure.suptitle(f"{N_USERS:,} households, epsilon = {EPSILON:g} per record")
plt.show()
