"""Custom queries, post-processing, shipping the mechanism to clients, and streaming
=================================================================================

1. Build a workload from pandas predicates and optimize a strategy for it.
2. Answer *other* queries from the same reports with ``WorkloadEstimator.predict``.
3. Compare the unbiased answers (postprocess="none") with non-negative least squares ("wnnls");
   draw the unbiased ones with their intervals (:class:`~sklearn_ldp.HistogramDisplay`).
4. Ship the mechanism to clients as JSON, rebuild it, and wrap reports that "arrive from the
   clients" with ``LDPReports(array, mechanism=...)``.
5. Aggregate the reports in chunks with ``partial_fit`` (as on a stream or a cluster): the
   result equals one ``fit`` on all of them.

Run:  python examples/custom_queries.py      (a few seconds)
"""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

import sklearn_ldp
from sklearn_ldp import (
    Domain,
    HistogramDisplay,
    LDPEncoder,
    LDPReports,
    WorkloadEstimator,
    workloads,
)

warnings.filterwarnings("ignore", category=ConvergenceWarning)
pd.set_option("display.width", 120)

# ---------------------------------------------------------------- data and a predicate workload
dom = {"age": [20, 30, 40, 50, 60, 70], "smoker": ["no", "yes"], "sport": ["never", "weekly"]}
domain = Domain(dom)
rng = np.random.default_rng(7)
n_users = 20_000
df = pd.DataFrame({
    "age": rng.choice(dom["age"], size=n_users, p=[0.2, 0.2, 0.2, 0.15, 0.15, 0.1]),
    "smoker": rng.choice(dom["smoker"], size=n_users, p=[0.75, 0.25]),
    "sport": rng.choice(dom["sport"], size=n_users, p=[0.6, 0.4]),
})
x_true = np.bincount(domain.encode(df), minlength=domain.size)  # simulation only

W = workloads.from_predicates(dom, {
    "young smokers": "age < 40 and smoker == 'yes'",
    "older smokers": "age >= 40 and smoker == 'yes'",
    "sporty non-smokers": "smoker == 'no' and sport == 'weekly'",
    "60+": lambda cells: cells["age"] >= 60,   # a callable on the cells DataFrame also works
    "everyone": "age > 0",
})
enc = LDPEncoder(categories=dom, strategy="optimized", epsilon=1.0, workload=W, random_state=0)
reports = enc.fit_transform(df)  # client side: one randomized report per user
print(f"{len(reports)} reports from the {enc.strategy_!r} strategy "
      f"({enc.mechanism_.n_outputs} possible reports per user)\n")

# ---------------------------------------------------------------- answers, none vs wnnls
unbiased = WorkloadEstimator(workload=W, postprocess="none").fit(reports)
wnnls = WorkloadEstimator(workload=W, postprocess="wnnls").fit(reports)
print(pd.DataFrame({
    "none (unbiased)": unbiased.answers_.round(0),
    "wnnls": wnnls.answers_.round(0),
    "true": W.toarray() @ x_true,
    "expected_std": np.sqrt(unbiased.expected_error_["worst_case"]).round(0),
}).to_string())
# The unbiased answers with their 95% intervals (worst case over the data); truth: diamonds.
HistogramDisplay.from_estimator(unbiased, true_values=W.toarray() @ x_true)
print("negative cell estimates: none", int((unbiased.data_vector_ < 0).sum()),
      "| wnnls", int((wnnls.data_vector_ < -1e-9).sum()), "(wnnls is biased, lower variance)")

# ---------------------------------------------------------------- other queries, same reports
# predict answers any linear queries over the same domain (in the strategy's row space). The
# strategy was optimized for W, so queries far from W are answered, but with more noise: the
# analytic standard error comes from the mechanism (query_variance is per user and per type).
other = workloads.marginals(dom, attributes=[("age", "smoker")])
other_std = np.sqrt(n_users * unbiased.mechanism_.query_variance(other.toarray()).max(axis=1))
print("\nage x smoker marginal, answered from the same reports (not in the workload):")
print(pd.DataFrame({
    "none (unbiased)": unbiased.predict(other).round(0),
    "wnnls": wnnls.predict(other).round(0),
    "true": other.toarray() @ x_true,
    "expected_std": other_std.round(0),
}).to_string())
print("On the workload itself wnnls changes nothing here (a non-negative data vector fits the 5 "
      "answers exactly);\non other queries it removes negative counts, at the price of bias.")

# Point queries: how many users share each of these records?
records = pd.DataFrame({"age": [20, 70], "smoker": ["yes", "no"], "sport": ["weekly", "never"]})
print("\npoint queries:", unbiased.predict(records).round(0),
      "true:", x_true[domain.encode(records)])

# ---------------------------------------------------------------- ship the mechanism as JSON
spec = enc.mechanism_.to_json()  # what a client app downloads: strategy matrix, epsilon, name
client_mechanism = sklearn_ldp.mechanism_from_json(spec)
assert client_mechanism == enc.mechanism_
print(f"\nJSON spec: {len(spec)} characters; rebuilt mechanism equal: "
      f"{client_mechanism == enc.mechanism_}")

# Each client randomizes its own cell index; in deployment use fresh entropy (no seed).
client_rng = np.random.default_rng()  # random_state=None: OS entropy
arrived = client_mechanism.randomize(domain.encode(df), client_rng)  # uint array, one per user

# The server wraps what arrived, with the mechanism (and the public domain for labels).
server_reports = LDPReports(arrived, mechanism=client_mechanism, domain=domain)

# ---------------------------------------------------------------- streaming with partial_fit
streaming = WorkloadEstimator(workload=W)
for chunk in np.array_split(np.arange(len(server_reports)), 4):
    streaming.partial_fit(server_reports[chunk])
one_shot = WorkloadEstimator(workload=W).fit(server_reports)
print(f"partial_fit over 4 chunks: {streaming.n_users_} users; equal to one fit: "
      f"{np.allclose(streaming.answers_, one_shot.answers_)}")
print(streaming.answers_.round(0).to_string())
plt.show()
