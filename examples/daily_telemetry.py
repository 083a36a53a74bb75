"""Daily app-usage telemetry over two weeks, with memoization and the ledger
==========================================================================

200,000 users report every day for 14 days which of six apps they used most. Habits are
sticky: each day 5% of the users switch app, and on day 8 a new release makes "maps" more
popular. The clients memoize (:class:`~sklearn_ldp.longitudinal.LongitudinalEncoder`,
L-OSUE, ``epsilon_perm = 2``, ``epsilon_1 = 1``), so a user who keeps the same app reveals no
more than one permanent response (epsilon 2) however many days pass; a user may report at
most ``max_values = 3`` distinct apps in the collection (a user who would report a fourth
is refused that day: here users switch only among their three favourite apps), so the
ledger charges ``epsilon_perm = 2`` on each of the first three days and nothing after:
``3 x 2 = 6`` for the whole collection, however long it runs. The server's simulation
keeps the clients' state between days and saves it to a sealed file each night (the next
day reloads it, as a long simulation would).

The script prints each day's estimate next to the truth, the ledger's entries (one per day:
``min(epsilon_perm, 6 - charged so far)``), and plots the estimated daily share of each app
with its 95% band against the truth (:class:`~sklearn_ldp.LongitudinalDisplay`).

Run: ``python examples/daily_telemetry.py`` (about 15 s).
"""

import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np

from sklearn_ldp import LongitudinalDisplay, LongitudinalEncoder, LongitudinalEstimator
from sklearn_ldp.deploy.budget import PrivacyLedger

APPS = ["mail", "maps", "news", "chat", "music", "photos"]
N_USERS, N_DAYS = 200_000, 14
rng = np.random.default_rng(2024)

# Each user has three favourite apps (public knowledge of nobody: private data) and uses the
# first of them on day 1.
favourites = np.argsort(rng.random((N_USERS, len(APPS))) + np.array(
    [0.0, 0.3, 0.1, 0.2, 0.4, 0.5]), axis=1)[:, :3]
current = np.zeros(N_USERS, dtype=np.int64)  # index into the user's favourites


def today(day):
    """The app each user uses most on ``day`` (0-based): sticky, with a drift to "maps"."""
    switch = rng.random(N_USERS) < 0.05
    current[switch] = rng.integers(3, size=int(switch.sum()))
    if day == 7:  # the release: a third of the users whose favourites include maps move to it
        has_maps = (favourites == 1)
        moved = has_maps.any(axis=1) & (rng.random(N_USERS) < 1 / 3)
        current[moved] = np.argmax(has_maps[moved], axis=1)
    return favourites[np.arange(N_USERS), current]


directory = tempfile.mkdtemp()
ledger_path = os.path.join(directory, "telemetry_ledger.json")
PrivacyLedger.create(ledger_path, total_epsilon=6.0)
encoder = LongitudinalEncoder(categories=APPS, strategy="l_osue", epsilon_perm=2.0,
                              epsilon_1=1.0, max_values=3, ledger=ledger_path,
                              random_state=7).fit()
estimator = LongitudinalEstimator(normalize=True)
state_path = os.path.join(directory, "clients.npz")
encoder.new_state(N_USERS).save(state_path)

truth = []
for day in range(N_DAYS):
    apps = today(day)
    truth.append(np.bincount(apps, minlength=len(APPS)) / N_USERS)
    with encoder.load_state(state_path) as state:  # checked; the file locked till the end
        reports = encoder.transform(np.array(APPS, dtype=object)[apps], state=state)
        state.save(state_path)
    estimator.partial_fit(reports)                # the server decodes the day
truth = np.array(truth)

print("day  app      estimate  truth   (standard error)")
for day in (0, 7, 13):
    for j, app in enumerate(APPS[:3]):
        print(f"{day + 1:>3}  {app:<7}  {estimator.estimates_.iloc[day, j]:.4f}    "
              f"{truth[day, j]:.4f}  ({estimator.standard_errors_.iloc[day, j]:.4f})")

ledger = PrivacyLedger.open(ledger_path)
print("\nledger charges per day:", [round(e["epsilon"], 3) for e in ledger.entries])
print("spent:", ledger.spent().epsilon, "of", ledger.total_epsilon,
      "(max_values x epsilon_perm = 3 x 2.0, reached on day 3)")
z = (estimator.estimates_.to_numpy() - truth) / estimator.standard_errors_.to_numpy()
print(f"errors within 3 standard errors: {np.mean(np.abs(z) < 3):.1%} of {z.size}")

# The figure: each app's daily estimate with its 95% band, the truth dashed.
display = LongitudinalDisplay.from_estimator(estimator, true_values=truth)
display.ax_.set_title("Daily app usage (L-OSUE): estimates with 95% bands, truth dashed")
plt.show()
