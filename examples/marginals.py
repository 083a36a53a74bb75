"""Marginals under LDP on real data: the six algorithms of thesis chapter 4 and InpEM
==================================================================================

Data: scikit-learn's breast cancer table (569 tumours, 30 numeric features). Eight features
are binarized at their medians (1 = above the median; the diagnosis is a ninth column for the
independence tests). As in the thesis's experiments, the 569 rows are **resampled with
replacement** to N = 2^18 = 262,144 "users", so the privacy noise, not the small sample, is
what we measure. (The resampled users are copies of real rows: fine for comparing mechanisms,
not a claim about 262,144 patients.)

1. Every algorithm collects once per epsilon in {0.4, ..., 1.4} with ``max_order=2``; the
   figure shows the mean total variation (TV) over all 28 two-way marginals of the eight
   binarized features, with the analytic prediction (``expected_error_["plug_in_tv"]``,
   dashed). Saved next to this script as ``marginals.png`` (needs matplotlib).
2. At epsilon = ln 3 with InpHT: a labelled table, the chi-square test (classic and
   noise-aware), mutual information and the Chow-Liu tree over the nine columns.

Run: ``python examples/marginals.py`` (about 40 s on a laptop core).
"""

# The documentation does not run this example (too slow): its card shows the figure the
# script writes, kept in docs/figures.
# sphinx_gallery_thumbnail_path = "figures/marginals_tv_vs_epsilon.png"

import os
import sys
import warnings

import numpy as np
import pandas as pd
from sklearn.datasets import load_breast_cancer
from sklearn.exceptions import ConvergenceWarning

from sklearn_ldp import LDPEncoder
from sklearn_ldp.estimators import MarginalEstimator

N_USERS = 2**18
N_REPEATS = 3
EPSILONS = [0.4, 0.6, 0.8, 1.0, 1.2, 1.4]
ALGORITHMS = ["inp_rr", "inp_ps", "inp_ht", "marg_rr", "marg_ps", "marg_ht", "inp_em"]
FEATURES = ["mean radius", "mean texture", "mean smoothness", "mean compactness",
            "mean concavity", "mean symmetry", "mean fractal dimension", "worst smoothness"]

data = load_breast_cancer(as_frame=True)
binary = (data.data[FEATURES] > data.data[FEATURES].median()).astype(int)
binary.columns = [name.replace("mean ", "").replace(" ", "_") for name in FEATURES]
binary["malignant"] = (data.target == 0).astype(int)  # sklearn codes malignant as 0
# Resample the rows to N users (thesis: "sampled with replacement"); not the encoder's seed.
users = binary.sample(N_USERS, replace=True, random_state=2024).reset_index(drop=True)
features = list(binary.columns[:8])
categories = {column: [0, 1] for column in features}


def true_table(records, pair):
    return pd.crosstab(records[pair[0]], records[pair[1]], normalize=True).to_numpy()


truth = {pair: true_table(users, pair) for pair in
         [(a, b) for i, a in enumerate(features) for b in features[i + 1:]]}


def collect(encoder, records):
    """An exact simulation of the aggregate where the mechanism has one, else real reports."""
    try:
        return encoder.simulate(records)
    except NotImplementedError:
        return encoder.transform(records)


rows = []
for algorithm in ALGORITHMS:
    for epsilon in EPSILONS:
        for repeat in range(N_REPEATS):
            encoder = LDPEncoder(categories=categories, strategy=algorithm, epsilon=epsilon,
                                 max_order=2, random_state=repeat).fit()
            with warnings.catch_warnings():
                # InpEM's failures are counted from em_report_ below instead.
                warnings.simplefilter("ignore", ConvergenceWarning)
                # The unbiased tables: the thesis's comparison, which plug_in_tv predicts
                # (the default postprocess="consistent" returns valid, more accurate ones).
                estimator = MarginalEstimator(postprocess="none").fit(
                    collect(encoder, users[features]))
            tv = np.mean([0.5 * np.abs(estimator.marginals_[pair] - table).sum()
                          for pair, table in truth.items()])
            predicted = estimator.expected_error_.query("order == 2")["plug_in_tv"].mean()
            failed = (int((estimator.em_report_["stuck_at_prior"]
                           | ~estimator.em_report_["converged"]).sum())
                      if algorithm == "inp_em" else 0)
            rows.append({"algorithm": algorithm, "epsilon": epsilon, "mean_tv": tv,
                         "predicted_tv": predicted, "em_failures": failed})
results = pd.DataFrame(rows).groupby(["algorithm", "epsilon"], as_index=False).mean()
print(f"Mean TV over the 28 two-way marginals, N = 2^18 (resampled breast cancer data), "
      f"average of {N_REPEATS} collections:\n")
print(results.pivot(index="epsilon", columns="algorithm", values="mean_tv")[ALGORITHMS]
      .round(4).to_string())
em = results[results["algorithm"] == "inp_em"]
failures = ", ".join(f"{e}: {n:.1f}" for e, n in zip(em["epsilon"], em["em_failures"],
                                                     strict=True))
print("\nInpEM (EM decoder; its prediction is for the unbiased decoder): marginals where EM "
      f"failed (of 36, mean per collection) per epsilon: {failures}")

# ---------------------------------------------------------------- applications at eps = ln 3
encoder = LDPEncoder(categories={column: [0, 1] for column in binary.columns},
                     strategy="inp_ht", epsilon=np.log(3), max_order=2, random_state=1)
estimator = MarginalEstimator().fit(encoder.fit(users).simulate(users))
print("\nInpHT, eps = ln 3: radius x malignant (fractions)")
print(estimator.crosstab("radius", "malignant").round(3).to_string())
for pair in [("radius", "malignant"), ("texture", "fractal_dimension")]:
    test = estimator.chi2_test(*pair, random_state=0)
    # The same statistic without privacy (on the resampled users, so N is inflated too).
    exact = pd.crosstab(users[pair[0]], users[pair[1]], normalize=True).to_numpy()
    independent = np.outer(exact.sum(axis=1), exact.sum(axis=0))
    exact_statistic = N_USERS * np.sum((exact - independent) ** 2 / independent)
    print(f"chi2 {pair}: private statistic {test.statistic:.1f} (non-private "
          f"{exact_statistic:.1f}); classic critical value {test.critical_value:.3f} -> "
          f"reject={test.reject}; noise-aware critical value "
          f"{test.critical_value_noise_aware:.1f} (p = {test.p_value_noise_aware:.3f}) -> "
          f"reject={test.reject_noise_aware}; private MI "
          f"{estimator.mutual_information(*pair):.4f} nats")
print("\nChow-Liu tree from the private 2-way marginals:")
print(estimator.chow_liu_tree().round(4).to_string(index=False))

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    print("\n(matplotlib not installed: no figure)")
else:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for algorithm in ALGORITHMS:
        part = results[results["algorithm"] == algorithm]
        line, = ax.plot(part["epsilon"], part["mean_tv"], marker="o", label=algorithm)
        if algorithm != "inp_em":  # the prediction describes unbiased decoders
            ax.plot(part["epsilon"], part["predicted_tv"], linestyle="--",
                    color=line.get_color(), linewidth=1)
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_ylabel("mean TV over all 2-way marginals")
    ax.set_title("Breast cancer, 8 binarized features, N = 2^18 users (resampled)\n"
                 "solid: measured (mean of 3); dashed: analytic plug-in prediction",
                 fontsize=10)
    ax.legend(ncol=2, fontsize=8)
    fig.tight_layout()
    # sys.argv[0], not __file__: the docs' gallery (sphinx-gallery) runs examples without it.
    path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "marginals.png")
    fig.savefig(path, dpi=120)
    print(f"\nfigure saved to {path}")
