"""Home pages of 200,000 browsers with RAPPOR, over a candidate list
===================================================================

A browser vendor wants to know how many users have each of a few hundred suspected home
pages (some planted by unwanted software), with the guarantee RAPPOR gives in Chrome: every
report ever sent about one home page reveals at most ``epsilon_inf = 4 ln 3 = 4.39``, and one
report ``epsilon_1 = 1.07``.

1. ``LDPEncoder(categories={"home_page": "strings"}, strategy="rappor")`` hashes each user's
   home page into a 128-bit Bloom filter (2 hash functions chosen by the user's cohort, one of
   64), randomizes it once for life (``f = 0.5``) and sends a fresh randomization of that
   (``p = 0.5``, ``q = 0.75``).
2. ``RapporEstimator(candidates=...)`` regresses the cohorts' Bloom bit counts on the
   candidates' Bloom bits: a frequency and a standard error per candidate, and which are
   detected by Holm's test at 5% (no detected candidate has frequency 0, except with
   probability at most 5%).
3. The same users report again the next day: their permanent responses are reused, so the
   second day's reports add no information about a home page beyond ``epsilon_inf``.

The script prints the detected candidates with their true frequencies, and the detected ones
nobody holds (Holm's test allows any in a collection with probability at most 5%).

Run: ``python examples/rappor_strings.py`` (about 20 s).
"""

import math

import numpy as np
import pandas as pd

from sklearn_ldp import LDPEncoder, RapporEstimator, RapporMechanism

N_USERS = 200_000
rng = np.random.default_rng(0)  # the data's generator, not the encoder's random_state
popular = [f"portal-{i}.example" for i in range(20)]
suspected = [f"search-hijack-{i}.example" for i in range(200)]
weights = np.concatenate([1.0 / np.arange(1, 21), np.full(3, 0.1), np.zeros(197)])
home_pages = rng.choice(popular + suspected, p=weights / weights.sum(), size=N_USERS)
frame = pd.DataFrame({"home_page": home_pages})

encoder = LDPEncoder(categories={"home_page": "strings"}, strategy="rappor",
                     epsilon=4 * math.log(3), random_state=1)
reports = encoder.fit_transform(frame)
mechanism = encoder.mechanism_
print(f"RAPPOR: k={mechanism.n_bits} bits, h={mechanism.n_hashes}, m={mechanism.n_cohorts} "
      f"cohorts, f={mechanism.f}, p={mechanism.p}, q={mechanism.q}: epsilon_inf="
      f"{mechanism.epsilon_inf:.3f}, epsilon_1={mechanism.epsilon_1:.3f}")

estimator = RapporEstimator(candidates=popular + suspected).fit(reports)
truth = frame["home_page"].value_counts(normalize=True)
found = estimator.heavy_hitters_.assign(
    true_frequency=lambda table: table["value"].map(truth).fillna(0.0))
print(f"\n{len(found)} of {len(popular) + len(suspected)} candidates detected "
      f"({(truth > 0).sum()} held by someone):")
print(found[["value", "frequency", "std_error", "true_frequency"]].round(4).to_string())
# Holm's test allows a detection of a value nobody holds with probability at most 5% per
# collection; this run has the seed's share of them, listed here.
print("detected but held by nobody:", found.loc[found["true_frequency"] == 0, "value"].tolist())

# The same users on a second day: the permanent responses are derived from each user's
# secret and reused (a seeded generator: simulation only; devices keep a state file).
rappor = RapporMechanism()
state = rappor.new_state(N_USERS, np.random.default_rng(2))
values = home_pages.astype(object)
day_1 = rappor.randomize(values, rng, state)
day_2 = rappor.randomize(values, rng, state)
again, _ = rappor.permanent_response(values, state)  # every user's, as reused on day 2
restored = rappor.new_state(3, secrets=state.secrets[:3])  # three devices restored
first, _ = rappor.permanent_response(values[:3], restored)
print("\nsame permanent responses on day 2 and after a restore:",
      bool((first == again[:3]).all()))
