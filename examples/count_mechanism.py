"""Private counts for small groups: GM, WM, EM and UM compared (dissertation chapter 6)
====================================================================================

Each group of ``n`` people releases how many of them have some private bit (e.g. smoke),
with epsilon-differential privacy. :class:`~sklearn_ldp.estimators.count.CountMechanism`
designs the mechanism for the properties you require:

* GM, the geometric mechanism: optimal error rate, but it piles mass on 0 and n;
* WM, weakly honest (WH: the true count is reported with probability >= 1/(n+1));
* EM, the explicit fair mechanism (F: every true count is reported with the same
  probability);
* UM, the uniform mechanism (ignores the data).

Part 1 prints the property table of Fig. 6.5, computed by ``check_properties``. Part 2
reproduces the synthetic experiment of §6.7: 10,000 people with bits ~ Bernoulli(p) in groups
of n = 8, error rate (fraction of groups whose released count is wrong) against p, 30
repeats, for alpha = e^-eps = 0.91 and 0.67. The plot is saved next to this script as
``count_mechanism.png``. Part 3 shows grouped DataFrames and decoding with ``predict``.

Run: ``python examples/count_mechanism.py`` (about 10 s).
"""

import math
import os
import sys

import numpy as np
import pandas as pd
from scipy.stats import binom

from sklearn_ldp.estimators.count import CountMechanism
from sklearn_ldp.mechanisms.central.count import check_properties, wh_threshold

MECHANISMS = {  # name -> CountMechanism parameters
    "GM": {"strategy": "GM"},
    "WM": {"properties": ("WH",)},  # strategy="auto": GM if it is WH already, else the LP
    "EM": {"strategy": "EM"},
    "UM": {"strategy": "UM"},
}
SHOWN = ["S", "RM", "CM", "F", "WH"]  # the rows of Fig. 6.5


def property_table(n, alpha):
    """Fig. 6.5 for one (n, alpha): Y/N per property, and the rescaled L0 error."""
    columns = {}
    for name, params in MECHANISMS.items():
        cm = CountMechanism(group_size=n, epsilon=-math.log(alpha), **params).fit()
        found = check_properties(cm.matrix_, cm.epsilon)
        columns[name] = ["Y" if found[prop] else "N" for prop in SHOWN] + [
            f"{cm.l0_error_:.4f}"]
    return pd.DataFrame(columns, index=SHOWN + ["L0"])


print("Part 1: properties of the mechanisms (Fig. 6.5), computed by check_properties")
for n, alpha in [(8, 0.9), (8, 0.4), (20, 0.9)]:
    print(f"\nn = {n}, alpha = {alpha}: GM is CM iff alpha <= 1/2, WH iff n >= "
          f"2 alpha / (1 - alpha) = {wh_threshold(-math.log(alpha)):.1f}; "
          f"L0(GM) = 2 alpha / (1 + alpha) = {2 * alpha / (1 + alpha):.4f}")
    print(property_table(n, alpha).to_string())

# ------------------------------------------------------------------------------- Part 2
N_PEOPLE, GROUP, REPEATS = 10_000, 8, 30
P_VALUES = np.round(np.arange(0.05, 1.0, 0.05), 2)
ALPHAS = [0.91, 0.67]
# Not the mechanisms' seed: the data and the privacy noise come from independent streams.
data_rng = np.random.default_rng(2024)

results = {}  # (alpha, name) -> (mean error rate per p, standard error per p)
for alpha in ALPHAS:
    mechanisms = {name: CountMechanism(group_size=GROUP, epsilon=-math.log(alpha),
                                       random_state=seed, **params).fit()
                  for seed, (name, params) in enumerate(MECHANISMS.items())}
    rates = {name: np.zeros((len(P_VALUES), REPEATS)) for name in mechanisms}
    for a, p in enumerate(P_VALUES):
        for r in range(REPEATS):
            bits = data_rng.random(N_PEOPLE) < p
            counts = bits.reshape(-1, GROUP).sum(axis=1)  # 1,250 groups of 8
            for name, cm in mechanisms.items():
                rates[name][a, r] = np.mean(cm.transform(counts) != counts)
    for name in mechanisms:
        results[alpha, name] = (rates[name].mean(axis=1),
                                rates[name].std(axis=1, ddof=1) / np.sqrt(REPEATS))

print(f"\nPart 2: error rate (released count != true count), groups of {GROUP}, "
      f"{N_PEOPLE:,} people, mean of {REPEATS} repeats")
for alpha in ALPHAS:
    table = pd.DataFrame({name: results[alpha, name][0] for name in MECHANISMS},
                         index=pd.Index(P_VALUES, name="p"))
    print(f"\nalpha = {alpha} (epsilon = {-math.log(alpha):.3f})")
    print(table.iloc[::2].round(3).to_string())
    worst_se = max(results[alpha, name][1].max() for name in MECHANISMS)
    print(f"(largest standard error: {worst_se:.4f})")

# ------------------------------------------------------------------------------- Part 3
print("\nPart 3: a DataFrame of people in households, and decoding")
p = 0.2
people = pd.DataFrame({"household": np.repeat([f"h{i:03d}" for i in range(400)], GROUP),
                       "smokes": data_rng.random(400 * GROUP) < p})
prior = binom.pmf(np.arange(GROUP + 1), GROUP, p)  # public knowledge: about 20% smoke
cm = CountMechanism(group_size=GROUP, epsilon=-math.log(0.67), properties=("F",),
                    prior=prior, group_column="household", random_state=0).fit()
noisy = cm.transform(people)  # labelled by household
estimate = cm.predict(noisy)  # posterior mean under the prior
truth = people.groupby("household")["smokes"].sum()
print(pd.DataFrame({"true": truth, "noisy": noisy, "posterior mean": estimate.round(2)}).head())
print(f"strategy: {cm.strategy_} ({cm.reason_})")
print(f"RMSE of the released counts: {np.sqrt(np.mean((noisy - truth) ** 2)):.3f}; of the "
      f"posterior means: {np.sqrt(np.mean((estimate - truth) ** 2)):.3f}")

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # the plot needs the "examples" extra
    print("matplotlib is not installed: skipping the plot (pip install -e '.[examples]').")
else:
    figure, axes = plt.subplots(1, len(ALPHAS), figsize=(10, 4), sharey=True)
    for axis, alpha in zip(axes, ALPHAS, strict=True):
        for name in MECHANISMS:
            mean, se = results[alpha, name]
            axis.errorbar(P_VALUES, mean, yerr=se, marker="o", markersize=3, capsize=2,
                          label=name)
        axis.set_title(f"n = {GROUP}, alpha = {alpha}")
        axis.set_xlabel("p (fraction of ones)")
    axes[0].set_ylabel("error rate (released != true count)")
    axes[0].legend()
    figure.tight_layout()
    # sys.argv[0], not __file__: the docs' gallery (sphinx-gallery) runs examples without it.
    path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "count_mechanism.png")
    figure.savefig(path, dpi=120)
    print(f"plot saved to {path}")
