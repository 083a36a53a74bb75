"""How many users does each strategy need to answer the Prefix (empirical CDF) workload?
=====================================================================================

For the Prefix workload over n = 64 ordered cells (``workloads.prefix(64)``: query i counts the
users in cells 0..i) we compute, for every strategy and privacy budget, the worst-case sample
complexity: the number of users N for which the normalized variance of an average query is
alpha = 0.01,

    N = max_u z_u / (p * alpha),

where ``z_u`` is the total workload variance contributed by one user of type ``u`` and ``p`` is
the number of queries. The figure is data-independent (nothing is collected) and mirrors
Figure 1 of McKenna, Maity, Mazumdar & Miklau, "A workload-adaptive mechanism for linear
queries under local differential privacy", PVLDB 2020. The dashed line is the SVD lower bound
on any epsilon-LDP factorization mechanism.

Run:  python examples/plot_sample_complexity.py   (about 30 s; writes
examples/sample_complexity_prefix.png)
"""

import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from sklearn_ldp import workloads  # noqa: E402
from sklearn_ldp.mechanisms import sample_complexity, svd_lower_bound  # noqa: E402
from sklearn_ldp.selection import build_mechanism  # noqa: E402

n = 64
alpha = 0.01
epsilons = [0.5, 1, 1.5, 2, 2.5, 3, 4]
strategies = ["randomized_response", "hadamard", "hierarchical_matrix", "fourier", "optimized"]

W = workloads.prefix(n)
gram = W.gram()
p = W.n_queries

rows = {}
for name in strategies:
    column = []
    for eps in epsilons:
        try:
            mech, _ = build_mechanism(name, (n,), eps, workload_matrix=W.toarray(),
                                      random_state=0, max_iter=300)
            if not mech.supports(W.toarray()):
                raise ValueError("strategy cannot answer the Prefix workload")
        except ValueError as exc:  # a strategy that does not apply to this workload
            print(f"skipping {name}: {exc}")
            break
        worst = mech.per_user_variance(gram).max()
        column.append(sample_complexity(worst, p, alpha))
    else:
        rows[name] = column

# SVD lower bound: a bound on the worst-case per-user variance, normalized the same way.
# At large epsilon it can become non-positive (then it says nothing and is not drawn).
bound = [sample_complexity(svd_lower_bound(W.toarray(), eps), p, alpha) for eps in epsilons]
rows["lower bound (SVD)"] = bound

table = pd.DataFrame(rows, index=pd.Index(epsilons, name="epsilon"))
pd.set_option("display.width", 120)
print(f"Worst-case sample complexity N (users) for the Prefix workload, n={n}, alpha={alpha}")
print(table.round(0).to_string())
print("(a non-positive lower bound is vacuous: it is left out of the plot)")

fig, ax = plt.subplots(figsize=(7, 4.5))
markers = dict(zip(strategies, "osD^v", strict=True))
for name in strategies:
    if name in table:
        ax.plot(epsilons, table[name], marker=markers[name], label=name,
                linewidth=2.5 if name == "optimized" else 1.5)
positive = table["lower bound (SVD)"] > 0
ax.plot(np.array(epsilons)[positive], table["lower bound (SVD)"][positive], "k--",
        label="lower bound (SVD)")
ax.set_yscale("log")
ax.set_xlabel("epsilon")
ax.set_ylabel(f"users needed (alpha = {alpha})")
ax.set_title(f"Worst-case sample complexity, Prefix workload, n = {n}")
ax.grid(True, which="both", alpha=0.3)
ax.legend()
fig.tight_layout()
# sys.argv[0], not __file__: the docs' gallery (sphinx-gallery) runs examples without it.
out = Path(sys.argv[0]).resolve().with_name("sample_complexity_prefix.png")
fig.savefig(out, dpi=120)
print(f"saved {out}")
