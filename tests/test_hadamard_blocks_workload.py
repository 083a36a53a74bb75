"""The Hadamard response in the layout best for a workload: its scores, exact privacy, unbiased
estimates, and its place in the selection (a candidate and a start of ``"optimized"``)."""

import numpy as np
import pytest
from _stats import check_unbiased_and_variance

from sklearn_ldp import workloads
from sklearn_ldp.mechanisms.factorization.mechanism import FactorizationMechanism
from sklearn_ldp.mechanisms.oracles.hadamard import (
    HadamardResponse,
    _candidate_layouts,
    hadamard_layout,
)
from sklearn_ldp.mechanisms.oracles.hadamard_layout import hadamard_strategy
from sklearn_ldp.mechanisms.oracles.hadamard_workload import (
    WORKLOAD_LAYOUT_MAX_CELLS,
    block_law_violation,
    score_layouts,
    workload_hadamard,
)
from sklearn_ldp.selection import baseline_mechanism, build_mechanism


def _worst(mechanism, workload):
    return float(mechanism.per_user_variance(workload.gram()).max())


@pytest.mark.parametrize("name, best, worst", [("prefix", (11, 8, 2), 23.1201655795),
                                               ("all_range", (16, 8, 4), 832.217558190)])
def test_the_workload_layout_beats_the_histogram_layout(name, best, worst):
    workload = getattr(workloads, name)(64)
    mechanism = workload_hadamard(64, 4.0, workload.gram())
    assert mechanism.layout == best
    assert _worst(mechanism, workload) == pytest.approx(worst, rel=1e-9)
    histogram_layout = HadamardResponse(64, 4.0)
    assert histogram_layout.layout == hadamard_layout(64, 4.0) == (22, 4, 1)
    assert _worst(mechanism, workload) < 0.93 * _worst(histogram_layout, workload)


@pytest.mark.parametrize("layout", [(16, 8, 4), (11, 8, 2), (8, 16, 8), (64, 2, 1)])
def test_scores_agree_with_the_dense_optimal_decoder(layout):
    gram = workloads.prefix(64).gram()
    scored = {entry[2]: entry[:2] for entry in score_layouts(64, 4.0, gram)}
    dense = FactorizationMechanism(hadamard_strategy(64, 4.0, layout), 4.0)
    z = dense.per_user_variance(gram.toarray())
    assert scored[layout] == pytest.approx((z.max(), z.mean()), rel=1e-7)


def test_marginal_grams_are_scored_dense_once():
    dom = {"a": list(range(6)), "b": list(range(5))}
    workload = workloads.marginals(dom, attributes=["a", "b", ("a", "b")])
    scored = score_layouts(30, 2.0, workload.gram())
    assert len(scored) == len(_candidate_layouts(30))
    best = workload_hadamard(30, 2.0, workload.gram())
    assert _worst(best, workload) == pytest.approx(scored[0][0], rel=1e-12)


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
def test_every_layout_is_exactly_private(epsilon):
    for layout in _candidate_layouts(64):
        assert block_law_violation(HadamardResponse(64, epsilon, layout=layout)) is None


def test_the_law_check_catches_a_ratio_above_e_eps():
    mechanism = HadamardResponse(16, 1.0, layout=(4, 8, 4))
    a, d = mechanism.weights
    mechanism.weights = (a + d, d)  # favoured weight past e^eps times the others
    assert "ratio above e^1.0" in block_law_violation(mechanism)


def test_simulated_estimates_are_unbiased_with_the_analytic_variance():
    workload = workloads.prefix(16)
    mechanism = workload_hadamard(16, 3.0, workload.gram())
    rng = np.random.default_rng(0)
    counts = rng.integers(0, 40, 16)
    W = workload.toarray()[:-1]  # the last prefix is the total: exact (every report counts)
    answers = np.array([W @ mechanism.estimate(mechanism.simulate_statistic(counts, rng))
                        for _ in range(2000)])
    # Variance of each prefix answer: the sum over users of their per-type variances.
    per_query = np.array([counts @ mechanism.per_user_variance(np.outer(row, row))
                          for row in W])
    check_unbiased_and_variance(answers, W @ counts, per_query)


def test_histograms_and_large_domains_keep_the_histogram_layout():
    assert workload_hadamard(64, 4.0).layout == hadamard_layout(64, 4.0)
    assert workload_hadamard(64, 4.0, workloads.histogram(64).gram()).layout == (22, 4, 1)
    table = workloads.marginals({"a": range(8), "b": range(8)}, k=2).gram()  # Kronecker
    assert workload_hadamard(64, 4.0, table).layout == (22, 4, 1)
    n = WORKLOAD_LAYOUT_MAX_CELLS + 1
    assert workload_hadamard(n, 2.0, workloads.prefix(n).gram()).layout == hadamard_layout(n,
                                                                                           2.0)


def test_the_selection_builds_hadamard_in_the_workload_layout():
    workload = workloads.all_range(64)
    assert baseline_mechanism("hadamard", (64,), 4.0, workload).layout == (16, 8, 4)
    assert baseline_mechanism("hadamard", (64,), 4.0).layout == (22, 4, 1)


@pytest.mark.parametrize("name", ["prefix", "all_range"])
def test_optimized_is_no_worse_than_the_equal_block_layout(name):
    workload = getattr(workloads, name)(64)
    equal_blocks = min(_worst(HadamardResponse(64, 4.0, layout=layout), workload)
                       for layout in [(16, 8, 4), (8, 16, 8), (32, 4, 2)])
    mechanism, report = build_mechanism("optimized", (64,), 4.0, workload, random_state=0)
    assert report["selection"]["hadamard"]["worst_case"] <= equal_blocks
    assert _worst(mechanism, workload) <= equal_blocks
    assert report["optimizer"]["start"] == "hadamard"  # started from the workload's layout
