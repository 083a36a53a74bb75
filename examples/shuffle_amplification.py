"""The shuffle model: how much privacy an anonymizing shuffler adds
=================================================================

Each user's report is ``epsilon_0``-LDP. If a shuffler forwards the reports in a random order
without who sent them, the whole collection is ``(epsilon, delta)``-DP in the central sense
for an ``epsilon`` that falls like ``e^(epsilon_0 / 2) / sqrt(n)`` (Feldman, McMillan and
Talwar, FOCS 2021).

The script:

1. draws the central epsilon against the number of users for several local epsilons (the
   numerical bound, solid, and the closed form of the same paper, dashed, where it holds);
2. picks the local epsilon that meets a central target of 0.5 at delta = 1e-6 for 20,000
   users, collects a histogram with it and reads the amplified epsilon off the reports.

Run: ``python examples/shuffle_amplification.py`` (under a minute; a window shows the
figure, or ``MPLBACKEND=Agg`` to skip it).
"""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from sklearn_ldp import LDPEncoder, local_epsilon_for, shuffle_epsilon

DELTA = 1e-6
users = [int(n) for n in np.unique(np.logspace(3, 6, 7).astype(int))]

# %%
# Central epsilon against the number of users
# -------------------------------------------
fig, ax = plt.subplots(figsize=(6, 4))
for epsilon_local, color in zip((1.0, 2.0, 4.0, 8.0), ("C0", "C1", "C2", "C3"), strict=True):
    numerical = [shuffle_epsilon(epsilon_local, n, DELTA) for n in users]
    ax.plot(users, numerical, color=color, marker="o", label=f"local epsilon {epsilon_local:g}")
    # The closed form holds only for epsilon_local <= log(n / (16 log(4 / delta))).
    valid = [n for n in users if epsilon_local <= np.log(n / (16 * np.log(2 / DELTA)))]
    if valid:
        closed = [shuffle_epsilon(epsilon_local, n, DELTA, bound="closed_form") for n in valid]
        ax.plot(valid, closed, color=color, linestyle="--")
    print(f"epsilon_local={epsilon_local:g}: central epsilon "
          + ", ".join(f"{e:.3f}" for e in numerical) + f" at n = {users}")
ax.set(xscale="log", yscale="log", xlabel="number of users n",
       ylabel=f"central epsilon (delta = {DELTA:g})",
       title="Shuffled LDP reports: numerical (solid) and closed-form (dashed) bounds")
ax.legend()
fig.tight_layout()

# %%
# Choosing the local epsilon for a central target
# -----------------------------------------------
n_users, target = 20_000, 0.5
epsilon_local = local_epsilon_for(target, n_users, DELTA)
print(f"local epsilon {epsilon_local:.3f} meets central ({target}, {DELTA:g}) for "
      f"{n_users} users")

rng = np.random.default_rng(0)
data = pd.DataFrame({"color": rng.choice(["red", "green", "blue"], size=n_users)})
encoder = LDPEncoder(categories={"color": ["red", "green", "blue"]}, epsilon=epsilon_local,
                     random_state=0)
reports = encoder.fit(data).transform(data)
print(f"reports: local epsilon {reports.mechanism.epsilon:.3f}, shuffled central epsilon "
      f"{reports.shuffled_epsilon(DELTA):.3f} at delta {DELTA:g}")
assert reports.shuffled_epsilon(DELTA) <= target * (1 + 1e-6)

plt.show()
