"""Popular URLs among a million users, without listing the URLs
=================================================================

A browser vendor wants the most visited sites of its users, but the set of possible URLs is
far too large to list as categories, and each user's URL is private. Each user sends one
report about their URL under epsilon = 4 local differential privacy:

1. ``LDPEncoder(categories={"url": "strings"}, strategy="pem")`` declares the column as UTF-8
   strings (of at most ``max_string_bytes`` bytes, 128 by default) instead of a category
   list. A tenth of the users report their URL's length, which sets how many bytes the
   rounds cover; PEM (prefix extension, Wang et al.) splits the other users into rounds,
   each reporting a longer prefix of their URL, and ``HeavyHitterEstimator`` grows the
   popular prefixes round by round into the popular URLs. Every URL it returns is
   supported: estimated again on users who did not select it and significantly above
   frequency 0 (Holm's test at 5%), so no returned URL is held by nobody, except with
   probability at most 5%.
2. Apple's Hadamard count-mean sketch (``strategy="hcms"``) estimates the frequency of any
   candidate URL, here those PEM found plus two guesses, from one bit per user.

The script prints both tables and saves ``popular_urls.png`` (estimated against true
frequencies, with two standard errors; needs matplotlib) next to itself.

Run: ``python examples/popular_urls.py`` (about 30 s).
"""

import os
import sys

import numpy as np
import pandas as pd

from sklearn_ldp import HeavyHitterEstimator, LDPEncoder

# The data's generator is not the encoder's (random_state below): generators that share a
# seed would tie each user's round to their URL.
rng = np.random.default_rng(2024)
n_users = 10**6

# Ten popular sites (5% down to 1% of the users) and a long tail of 10^5 pages whose
# frequencies fall as a Zipf law (the most visited holds about 0.4%).
popular = np.array(["news.example/today", "mail.example", "video.example/watch",
                    "shop.example/deals", "maps.example", "wiki.example/Main",
                    "social.example/feed", "music.example/top", "docs.example",
                    "weather.example/now"])
shares = np.linspace(0.05, 0.01, popular.size)
tail = np.char.add("blog", np.arange(10**5).astype(str))
tail = np.char.add(tail, ".example/post")
tail_weights = 1.0 / (np.arange(tail.size) + 60.0)
tail_weights *= (1 - shares.sum()) / tail_weights.sum()
urls = np.concatenate([popular, tail])
weights = np.concatenate([shares, tail_weights])
visits = pd.DataFrame({"url": urls[rng.choice(urls.size, size=n_users, p=weights)]})
true_share = visits["url"].value_counts(normalize=True)

# 1. The popular URLs, no candidate list and no length to tune: the length round finds how
# many bytes the popular URLs take. n_candidates = 32 prefixes are kept per round although
# ten sites are sought: the tail's shared prefixes ("blog1", "blog2", ...) are popular in
# the early rounds and would crowd the smaller sites out of fewer slots.
encoder = LDPEncoder(categories={"url": "strings"}, strategy="pem", epsilon=4.0,
                     n_candidates=32, n_users=n_users, random_state=0)
reports = encoder.fit_transform(visits)
finder = HeavyHitterEstimator(top_k=12).fit(reports)
found = finder.heavy_hitters_.assign(true=lambda t: t["value"].map(true_share).fillna(0.0))
print(f"PEM, epsilon = 4: rounds over {encoder.string_bytes_} bytes, "
      f"{len(finder.rounds_)} rounds of about {int(finder.rounds_['users'].mean())} users "
      f"each; {finder.n_rejected_} of the {finder.n_tested_} values tested not supported")
print(found[["value", "frequency", "std_error", "true"]].round(4).to_string(index=False))
recall = np.isin(popular, found["value"]).mean()
print(f"the ten popular sites found: {recall:.0%}; returned but held by nobody: "
      f"{int((found['true'] == 0).sum())}\n")

# 2. Frequencies of given candidates from a sketch (another collection, another budget).
sketch = LDPEncoder(categories={"url": "strings"}, strategy="hcms", epsilon=4.0,
                    max_string_bytes=24, n_users=n_users, random_state=1)
candidates = list(found["value"]) + ["search.example", "blog7.example/post"]
oracle = HeavyHitterEstimator(candidates=candidates).fit(sketch.fit_transform(visits))
table = oracle.predict(candidates).assign(
    true=lambda t: t["value"].map(true_share).fillna(0.0))
print("HCMS, epsilon = 4 (one bit per user):")
print(table[["value", "frequency", "std_error", "true"]].round(4).to_string(index=False))

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:  # the plot is optional
    plt = None
if plt is not None:
    figure, axis = plt.subplots(figsize=(6, 5))
    for frame, label, marker in ((found, "PEM (found)", "o"), (table, "HCMS (candidates)", "s")):
        axis.errorbar(frame["true"], frame["frequency"], yerr=2 * frame["std_error"],
                      fmt=marker, alpha=0.8, label=label)
    top = float(max(found["true"].max(), found["frequency"].max())) * 1.1
    axis.plot([0, top], [0, top], color="grey", linewidth=1, label="estimate = truth")
    axis.set_xlabel("true frequency")
    axis.set_ylabel("estimated frequency (+- 2 standard errors)")
    axis.set_title(f"Popular URLs among {n_users:,} users, epsilon = 4")
    axis.legend()
    figure.tight_layout()
    # sys.argv[0], not __file__: the docs' gallery (sphinx-gallery) runs examples without it.
    path = os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "popular_urls.png")
    figure.savefig(path, dpi=100)
    print("saved", path)
