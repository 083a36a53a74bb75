"""Large domains: the second of the day (86,400 values) and a port number (65,536 values)
======================================================================================

Two telemetry questions over domains far too large for a dense workload matrix:

1. *When* do users open the app, to the second? ``strategy="auto"`` with the all-range
   workload over 86,400 seconds scores every candidate that can be scored at that size from
   the workload's closed-form Gram (5.5 x 10^11 range queries, never listed) and picks a range
   mechanism; ``selection_`` says what it scored, what it skipped and why. 300,000 users
   privatize their second; ``RangeQueryEstimator`` answers 10^4 arbitrary intervals and the
   quartiles.
2. *Which* destination ports do they use? A histogram over 2^16 ports with OLH (one
   ``(seed, value)`` pair per user); the estimate of the well-known ports and the analytic
   error of any range of ports (``predict_error``), without the 2^16 x 2^16 identity ever
   being formed.

The script prints the tables and draws the true and private CDF of the second of the day with
its confidence band (:class:`~sklearn_ldp.CDFDisplay`).

Run: ``python examples/large_domains.py`` (about 40 s).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import CDFDisplay, LDPEncoder, RangeQueryEstimator, WorkloadEstimator, workloads

EPSILON = 1.0
SECONDS = 86_400

# The data and the privacy coins must come from different random streams.
data_rng = np.random.default_rng(2024)

# --------------------------------------------------------------------- 1. second of the day
n_users = 300_000
peaks = data_rng.choice(3, size=n_users, p=[0.4, 0.2, 0.4])
seconds = np.mod(data_rng.normal(np.array([8.0, 12.5, 20.5])[peaks] * 3600,
                                 np.array([2400.0, 1800.0, 4800.0])[peaks]), SECONDS)
df = pd.DataFrame({"second": seconds.astype(int)})
domain = {"second": range(SECONDS)}

encoder = LDPEncoder(categories=domain, strategy="auto", epsilon=EPSILON,
                     workload=workloads.all_range(domain), random_state=0).fit()
print(f"auto chose {encoder.strategy_!r} for {encoder.workload_.n_queries:,} range queries")
with pd.option_context("display.width", 140, "display.max_colwidth", 50,
                       "display.max_columns", 10):
    print(encoder.selection_[["worst_case", "seconds", "status", "reason"]])

estimator = RangeQueryEstimator().fit(encoder.transform(df))
bounds = np.sort(data_rng.integers(0, SECONDS, size=(10_000, 2)), axis=1)
private = estimator.predict(bounds)
cumulative = np.concatenate([[0], np.cumsum(np.bincount(df["second"], minlength=SECONDS))])
true = (cumulative[bounds[:, 1] + 1] - cumulative[bounds[:, 0]]) / n_users
print(f"10,000 random intervals: RMSE {np.sqrt(np.mean((private - true) ** 2)):.4f} "
      f"(fractions of users)")
quartiles = estimator.quantiles([0.25, 0.5, 0.75])
print("private quartiles (s):", [int(q) for q in quartiles],
      " true:", [int(q) for q in np.quantile(df["second"], [0.25, 0.5, 0.75])])

# --------------------------------------------------------------------- 2. destination ports
ports = np.where(data_rng.random(n_users) < 0.7,
                 data_rng.choice([80, 443, 8080, 22, 53], size=n_users,
                                 p=[0.3, 0.5, 0.1, 0.05, 0.05]),
                 data_rng.integers(1024, 2**16, n_users))
port_domain = {"port": range(2**16)}
port_encoder = LDPEncoder(categories=port_domain, strategy="olh", epsilon=EPSILON,
                          random_state=1).fit()
port_estimator = WorkloadEstimator().fit(port_encoder.transform(pd.DataFrame({"port": ports})))
known = [22, 53, 80, 443, 8080]
print(pd.DataFrame({"private": port_estimator.data_vector_[known].round(),
                    "true": np.bincount(ports, minlength=2**16)[known]},
                   index=pd.Index(known, name="port")))
ephemeral = workloads.ranges(port_domain, [(1024, 2**16 - 1), (49152, 2**16 - 1)])
print(pd.concat([port_estimator.predict(ephemeral).rename("private"),
                 np.sqrt(port_estimator.predict_error(ephemeral)["worst_case"]).rename(
                     "worst-case std")], axis=1).round())

# The private CDF of the second of the day with its 95% band and quartiles, and the truth.
display = CDFDisplay.from_estimator(estimator, label=f"private CDF ({encoder.strategy_})")
display.ax_.plot(cumulative[1:] / n_users, color="black", linewidth=1, label="true CDF")
display.ax_.legend(loc="upper left")
plt.show()
