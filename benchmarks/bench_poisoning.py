"""Poisoning table: how far one malicious report moves an answer, against one honest liar.

For every mechanism at domain size ``n`` (default 64) and epsilon in {0.5, 1, 2, 4}:

* ``hist mal``: the largest change of one histogram answer (a cell's count) that one valid,
  crafted report makes (:func:`~sklearn_ldp.mechanisms._base.poisoning.max_malicious_influence`,
  exact: the extreme over the mechanism's whole valid-report set; ``<=`` marks an upper
  bound, for local hashing);
* ``hist liar``: the same for an honest liar, who picks its type and randomizes honestly
  (it moves the expected answer by ``max_u |w_u| = 1``);
* ``hist ratio``: the ratio of the two (``m`` colluding malicious clients move an answer
  ``ratio`` times as far as ``m`` liars);
* ``prefix mal`` / ``prefix ratio``: the same for the prefix workload (the CDF, range
  queries).

Answers are counts of users. The Gaussian mechanisms measure the histogram (``A = I``) with
their reports bounded by the noise tail (probability below 1e-12 per honest report);
``gaussian`` uses delta = 1e-6, ``gaussian_pure`` needs epsilon <= 2 ln 2 (others: "-").
Mechanisms whose estimates are ratios of counts (the sampled marginal strategies inp_ht,
marg_*, inp_em) are not tabulated: their influence depends on the number of reports.

No randomness: the table is computed, not simulated (``tests/test_poisoning.py`` checks it
against brute force over every valid report and against simulation).

Examples
--------
    python benchmarks/bench_poisoning.py
    python benchmarks/bench_poisoning.py --cells 256 --epsilons 1,2 --markdown
"""

import argparse
import math

import numpy as np
from _common import print_table

from sklearn_ldp import workloads
from sklearn_ldp.mechanisms import (
    BinaryLocalHashing,
    FactorizationMechanism,
    GaussianMechanism,
    GaussianRejectionMechanism,
    HaarHRR,
    HadamardRandomizedResponse,
    HadamardResponse,
    HierarchicalHistogram,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
    SymmetricUnaryEncoding,
    hierarchical_strategy,
)
from sklearn_ldp.mechanisms._base.poisoning import poisoning_row
from sklearn_ldp.mechanisms.bassily.rejection import MAX_REJECTION_EPSILON

HEADERS = ["mechanism", "eps", "n", "hist mal", "hist liar", "hist ratio", "prefix mal",
           "prefix liar", "prefix ratio"]


def mechanisms(n, epsilon):
    """``(label, mechanism or None)`` for every mechanism of the table."""
    yield "randomized_response (= inp_ps)", RandomizedResponse(n, epsilon)
    yield "rappor (SUE, = inp_rr)", SymmetricUnaryEncoding(n, epsilon)
    yield "oue", OptimizedUnaryEncoding(n, epsilon)
    yield "subset_selection", SubsetSelection(n, epsilon)
    yield "olh", OptimizedLocalHashing(n, epsilon)
    yield "blh", BinaryLocalHashing(n, epsilon)
    yield "hadamard", HadamardResponse(n, epsilon)
    yield "hrr", HadamardRandomizedResponse(n, epsilon)
    yield "haar", HaarHRR(n, epsilon)
    yield "hierarchical (oue, B=4)", HierarchicalHistogram(n, epsilon, 4, "oue")
    yield "hierarchical (hrr, B=4)", HierarchicalHistogram(n, epsilon, 4, "hrr")
    yield "factorization (tree, B=4)", FactorizationMechanism(
        hierarchical_strategy(n, epsilon, 4), epsilon, "hierarchical")
    yield "gaussian (delta=1e-6)", GaussianMechanism(n, epsilon, delta=1e-6)
    yield "gaussian_pure", (GaussianRejectionMechanism(n, epsilon)
                            if epsilon <= MAX_REJECTION_EPSILON else None)


def table(n, epsilons):
    """The rows of the table (strings), mechanism by mechanism, epsilon by epsilon."""
    queries = {"hist": np.eye(n), "prefix": workloads.prefix(n).toarray()}
    rows = []
    labels = [label for label, _ in mechanisms(n, epsilons[0])]
    by_epsilon = {epsilon: dict(mechanisms(n, epsilon)) for epsilon in epsilons}
    for label in labels:
        for epsilon in epsilons:
            mechanism = by_epsilon[epsilon][label]
            row = [label, f"{epsilon:g}", str(n)]
            if mechanism is None:
                rows.append(row + ["-"] * (len(HEADERS) - 3))
                continue
            for name in ("hist", "prefix"):
                result = poisoning_row(mechanism, queries[name])
                bound = "" if result["exact"] else "<= "
                row += [f"{bound}{result['malicious']:.3g}", f"{result['honest']:.3g}",
                        f"{bound}{result['ratio']:.3g}"]
            rows.append(row)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=64, help="domain size n (default 64)")
    parser.add_argument("--epsilons", default="0.5,1,2,4",
                        help="comma-separated epsilons (default 0.5,1,2,4)")
    parser.add_argument("--markdown", action="store_true", help="print a Markdown table")
    args = parser.parse_args()
    epsilons = [float(value) for value in args.epsilons.split(",")]
    if not all(math.isfinite(e) and e > 0 for e in epsilons):
        parser.error("epsilons must be positive numbers.")
    rows = table(args.cells, epsilons)
    if args.markdown:
        print("| " + " | ".join(HEADERS) + " |")
        print("|" + "|".join("---" if i == 0 else "--:" for i in range(len(HEADERS))) + "|")
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        print_table(HEADERS, rows)


if __name__ == "__main__":
    main()
