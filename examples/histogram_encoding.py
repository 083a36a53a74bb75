"""Histogram encoding: SHE and THE next to unary encoding, with exact noise
=========================================================================

Summation histogram encoding (SHE) sends the one-hot vector plus discrete Laplace noise
(exact two-sided geometric integers); thresholding histogram encoding (THE) sends one bit
per cell, the noisy coordinate above a threshold. Both estimate the same histogram as
unary encoding; we compare their empirical and analytic errors and report sizes on 100,000
users over 64 values, and audit SHE's exact law.

Run: ``python examples/histogram_encoding.py`` (a few seconds).
"""

import numpy as np
import pandas as pd

from sklearn_ldp import LDPEncoder, WorkloadEstimator
from sklearn_ldp.mechanisms import SummationHistogramEncoding, audit_privacy

N_VALUES, N_USERS, EPSILON = 64, 100_000, 1.0
domain = {"value": list(range(N_VALUES))}
rng = np.random.default_rng(2024)  # the data's seed, not the encoder's
weights = 1.0 / np.arange(1, N_VALUES + 1) ** 1.1
df = pd.DataFrame({"value": rng.choice(N_VALUES, size=N_USERS, p=weights / weights.sum())})
truth = np.bincount(df["value"], minlength=N_VALUES)

rows = []
for strategy in ("she", "the", "rappor", "oue"):
    encoder = LDPEncoder(categories=domain, strategy=strategy, epsilon=EPSILON, random_state=0)
    reports = encoder.fit_transform(df)
    estimator = WorkloadEstimator().fit(reports)
    error = estimator.answers_.to_numpy() - truth
    rows.append({
        "strategy": strategy,
        "report bytes": reports.reports.nbytes // N_USERS,
        "empirical RMSE": round(float(np.sqrt(np.mean(error**2))), 1),
        "analytic RMSE": round(float(np.sqrt(estimator.expected_error_["average_case"].mean())),
                               1),
    })
print(pd.DataFrame(rows).to_string(index=False))
print("THE at its best threshold is symmetric unary encoding ('rappor'); SHE has about twice "
      "OUE's variance.")

# The exact privacy check of the law SHE samples (3 cells: a window of outputs listed with
# integer weights, every other output bounded by the ratio r^-2).
audit = audit_privacy(SummationHistogramEncoding(3, EPSILON), [0, 2, 1])
print(f"SHE audit: private={audit.private}, realised epsilon={audit.realised:.6f}")
