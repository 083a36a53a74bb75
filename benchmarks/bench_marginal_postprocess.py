"""Measured error of MarginalEstimator's post-processing options: none, clip, consistent.

For every marginal strategy of LDPEncoder (``inp_rr``, ``inp_ps``, ``inp_ht``, ``marg_rr``,
``marg_ps``, ``marg_ht``, ``inp_em``) and eps in {0.5, 1, 2}: one collection of 2-way marginals
(``max_order=2``) per repetition, decoded by ``MarginalEstimator(postprocess=...)`` with each
of the three options **on the same reports**, and the total variation distance
``0.5 ||m_hat - m||_1`` of each of the 15 two-way tables to the users' own marginal. Printed per
(strategy, eps): the mean TV over tables and repetitions, and the largest single-table TV (a
TV above 1 is possible only without post-processing). ``none`` is the decoder's output: the
unbiased tables, except for ``inp_em``, whose decoder is EM (already non-negative and summing
to 1, but the tables of two pairs need not agree).

Data (synthetic; a survey-like population, skewed and correlated, fixed by ``--seed``): six
attributes, N users (default 50,000):

* ``segment``-driven: a latent segment ``h`` in {0, 1, 2} with probabilities (0.55, 0.3, 0.15);
* ``sex`` (2 categories, weakly tied to ``h``), ``age`` (4 bands, shifted by ``h``),
  ``education`` (3 levels, depending on ``h`` and ``age``), ``employment`` (3: employed,
  unemployed, retired; retired mostly in the oldest band), ``region`` (8, Zipf-like skew
  whose order depends on ``h``), ``income`` (5 bands, depending on ``education`` and
  ``employment``).

2 x 4 x 3 x 3 x 8 x 5 = 2880 domain cells; the smallest true 2-way cells are a few users.

Every strategy but ``inp_em`` draws the server's aggregate from its exact distribution
(``LDPEncoder.simulate``, identical in law to privatizing every user); ``inp_em`` privatizes
every user (``transform``). Repetition ``r`` uses ``random_state=r`` for the encoder; the
population is the same for all. Also printed: the mean seconds of one ``fit`` per option
(EM included for ``inp_em``), and a summary of which option wins how often. Progress goes to
stderr; ``benchmarks/results/bench_marginal_postprocess.txt`` is the stdout of the default
run.

Examples
--------
    python benchmarks/bench_marginal_postprocess.py                 # about 3-4 minutes
    python benchmarks/bench_marginal_postprocess.py --repeats 2 --strategies inp_ht,marg_ps
"""

import argparse
import itertools
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import print_table  # noqa: E402

from sklearn_ldp import LDPEncoder  # noqa: E402
from sklearn_ldp.estimators import MarginalEstimator  # noqa: E402

STRATEGIES = ("inp_rr", "inp_ps", "inp_ht", "marg_rr", "marg_ps", "marg_ht", "inp_em")
EPSILONS = (0.5, 1.0, 2.0)
OPTIONS = ("none", "clip", "consistent")
CATEGORIES = {
    "sex": ["f", "m"],
    "age": ["18-29", "30-44", "45-64", "65+"],
    "education": ["basic", "secondary", "tertiary"],
    "employment": ["employed", "unemployed", "retired"],
    "region": [f"r{i}" for i in range(8)],
    "income": ["q1", "q2", "q3", "q4", "q5"],
}


def _draw(rng, probabilities):
    """One category per row of ``probabilities`` (rows sum to 1), by inverse CDF."""
    cumulative = np.cumsum(probabilities, axis=1)
    cumulative[:, -1] = 1.0  # guard the last edge against rounding
    return (rng.random(probabilities.shape[0])[:, None] > cumulative).sum(axis=1)


def _normalized(rows):
    rows = np.asarray(rows, dtype=float)
    return rows / rows.sum(axis=-1, keepdims=True)


def population(n_users, seed):
    """The synthetic survey population described in the module docstring (a DataFrame)."""
    rng = np.random.default_rng(seed)
    segment = rng.choice(3, size=n_users, p=[0.55, 0.3, 0.15])
    sex = _draw(rng, _normalized([[0.52, 0.48], [0.45, 0.55], [0.6, 0.4]])[segment])
    age = _draw(rng, _normalized([[0.30, 0.35, 0.25, 0.10], [0.10, 0.25, 0.40, 0.25],
                                  [0.05, 0.10, 0.25, 0.60]])[segment])
    # Education: younger and segment-0 users more educated.
    education_logits = (np.array([[0.0, 1.0, 1.4], [0.0, 0.9, 0.6], [0.0, 0.3, -0.6]])[segment]
                        - 0.35 * age[:, None] * np.array([0.0, 0.5, 1.0]))
    education = _draw(rng, _normalized(np.exp(education_logits)))
    # Employment: mostly retired in the 65+ band; unemployment falls with education.
    employment_rows = np.where(
        (age == 3)[:, None], [[0.12, 0.03, 0.85]],
        _normalized(np.stack([np.full(n_users, 0.9), 0.16 - 0.05 * education,
                              np.where(age == 2, 0.06, 0.005)], axis=1)))
    employment = _draw(rng, employment_rows)
    # Region: Zipf-like (a capital region), the ranks rotated by the segment.
    ranks = (np.arange(8)[None, :] + 3 * np.arange(3)[:, None]) % 8
    region = _draw(rng, _normalized(1.0 / (1.0 + ranks) ** 1.2)[segment])
    # Income: up with education, down for the unemployed and retired.
    shift = 1.1 * education - np.array([0.0, 2.0, 0.8])[employment]
    income = _draw(rng, _normalized(np.exp(-0.5 * (np.arange(5)[None, :] - 1.0
                                                   - shift[:, None]) ** 2)))
    codes = {"sex": sex, "age": age, "education": education, "employment": employment,
             "region": region, "income": income}
    return pd.DataFrame({name: np.asarray(CATEGORIES[name])[codes[name]]
                         for name in CATEGORIES})


def true_tables(frame):
    """The users' own 2-way marginals (fractions, declared category order)."""
    codes = {name: pd.Categorical(frame[name], categories=values).codes
             for name, values in CATEGORIES.items()}
    tables = {}
    for a, b in itertools.combinations(CATEGORIES, 2):
        shape = (len(CATEGORIES[a]), len(CATEGORIES[b]))
        flat = np.ravel_multi_index((codes[a], codes[b]), shape)
        tables[(a, b)] = np.bincount(flat, minlength=shape[0] * shape[1]).reshape(shape)
        tables[(a, b)] = tables[(a, b)] / len(frame)
    return tables


def run(n_users, repeats, strategies, seed):
    frame = population(n_users, seed)
    truths = true_tables(frame)
    smallest = min(t[t > 0].min() for t in truths.values()) * n_users
    print(f"Population: N = {n_users}, {len(CATEGORIES)} attributes with "
          f"{[len(v) for v in CATEGORIES.values()]} categories, {len(truths)} two-way "
          f"marginals, smallest non-empty true cell {smallest:.0f} users; "
          f"{repeats} repetitions.\n")
    rows, records = [], []
    for strategy in strategies:
        for epsilon in EPSILONS:
            tv = {option: [] for option in OPTIONS}
            seconds = {option: 0.0 for option in OPTIONS}
            for repeat in range(repeats):
                encoder = LDPEncoder(categories=CATEGORIES, strategy=strategy, epsilon=epsilon,
                                     max_order=2, random_state=repeat).fit()
                reports = (encoder.transform(frame) if strategy == "inp_em"
                           else encoder.simulate(frame))
                for option in OPTIONS:
                    start = time.perf_counter()
                    with warnings.catch_warnings():
                        # InpEM at small eps: EM stopping at the prior is part of what is
                        # measured here, not news.
                        warnings.simplefilter("ignore", ConvergenceWarning)
                        fitted = MarginalEstimator(postprocess=option).fit(reports)
                    seconds[option] += time.perf_counter() - start
                    tv[option] += [0.5 * float(np.abs(fitted.marginals_[key] - truth).sum())
                                   for key, truth in truths.items()]
            means = {option: float(np.mean(tv[option])) for option in OPTIONS}
            row = [strategy, epsilon]
            for option in OPTIONS:
                row += [f"{means[option]:.4f}", f"{max(tv[option]):.4f}"]
            row += [min(OPTIONS, key=means.get)]
            row += [f"{seconds[option] / repeats:.3f}" for option in OPTIONS]
            rows.append(row)
            records.append({"strategy": strategy, "epsilon": epsilon, **means})
            # Progress on stderr: stdout holds only the results.
            print(f"{strategy} eps={epsilon}: " + ", ".join(
                f"{option} {means[option]:.4f}" for option in OPTIONS), file=sys.stderr)
    print("\nMean TV of the 2-way marginals (mean over tables and repetitions; max = largest "
          "single table):\n")
    print_table(["strategy", "eps", "none", "max", "clip", "max", "consistent", "max", "best",
                 "s none", "s clip", "s cons"], rows)
    results = pd.DataFrame(records)
    unbiased = results[results["strategy"] != "inp_em"]
    wins = int((results["consistent"] < results["clip"]).sum())
    print(f"\nconsistent < clip in {wins} of {len(results)} settings; mean ratio consistent / "
          f"clip {(results['consistent'] / results['clip']).mean():.3f} (range "
          f"{(results['consistent'] / results['clip']).min():.3f} to "
          f"{(results['consistent'] / results['clip']).max():.3f}). Mean over the settings of "
          f"the six unbiased strategies: none {unbiased['none'].mean():.4f}, clip "
          f"{unbiased['clip'].mean():.4f}, consistent {unbiased['consistent'].mean():.4f}.")

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--strategies", default=",".join(STRATEGIES))
    parser.add_argument("--seed", type=int, default=0, help="seed of the population")
    args = parser.parse_args()
    strategies = [s for s in args.strategies.split(",") if s]
    unknown = sorted(set(strategies) - set(STRATEGIES))
    if unknown:
        parser.error(f"unknown strategies {unknown}; choose from {STRATEGIES}")
    start = time.perf_counter()
    run(args.users, args.repeats, strategies, args.seed)
    print(f"\nTotal {time.perf_counter() - start:.0f} s.")


if __name__ == "__main__":
    main()
