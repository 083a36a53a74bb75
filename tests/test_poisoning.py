"""The influence of one malicious report (sklearn_ldp.mechanisms._base.poisoning), checked exactly.

For every mechanism the computed extremes of ``w . estimate`` over the valid reports are
compared with (1) a brute-force search over every valid report (or the corners of the
Gaussian box, where a linear function is extreme), and (2) a simulation: the crafted report
is added to honest reports and the change of the estimate is measured. The estimates are
linear, so both must match to rounding.
"""

import itertools

import numpy as np
import pytest

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
    InpPS,
    InpRR,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
    SymmetricUnaryEncoding,
    hierarchical_strategy,
)
from sklearn_ldp.mechanisms._base.poisoning import (
    honest_liar_influence,
    max_malicious_influence,
    poisoning_row,
)

N_CELLS = 6


def _mechanisms(n, epsilon):
    return {
        "randomized_response": RandomizedResponse(n, epsilon),
        "rappor": SymmetricUnaryEncoding(n, epsilon),
        "oue": OptimizedUnaryEncoding(n, epsilon),
        "subset_selection": SubsetSelection(n, epsilon, subset_size=2),
        "hadamard": HadamardResponse(n, epsilon),
        "hrr": HadamardRandomizedResponse(n, epsilon),
        "haar": HaarHRR(n, epsilon),
        "hierarchical_oue": HierarchicalHistogram(n, epsilon, branching=2, oracle="oue"),
        "hierarchical_hrr": HierarchicalHistogram(n, epsilon, branching=2, oracle="hrr"),
        "factorization": FactorizationMechanism(hierarchical_strategy(n, epsilon, 2), epsilon),
        "gaussian": GaussianMechanism(n, epsilon, delta=1e-6, workload=np.eye(n)[:4] + 0.5),
        "gaussian_pure": GaussianRejectionMechanism(n, min(epsilon, 1.0)),
        "inp_rr": InpRR(n, epsilon, [2, n // 2], 2),
        "inp_ps": InpPS(n, epsilon, [2, n // 2], 2),
    }


KINDS = list(_mechanisms(N_CELLS, 1.0))


def _workload(mechanism):
    n = mechanism.n_inputs
    rng = np.random.default_rng(n)
    W = np.vstack([np.eye(n), workloads.prefix(n).toarray(), rng.normal(size=(3, n))])
    if isinstance(mechanism, GaussianMechanism):  # only the row space of A is supported
        W = np.vstack([mechanism.A, rng.normal(size=(2, mechanism.A.shape[0])) @ mechanism.A])
    return W


def _all_valid_reports(mechanism):
    """Every valid report (or, for the Gaussian mechanisms, every corner of the box)."""
    n = mechanism.n_inputs
    oracle = getattr(mechanism, "oracle", mechanism)  # the marginal mechanisms' oracle
    if isinstance(oracle, RandomizedResponse):
        return np.arange(n, dtype=np.uint8)
    if isinstance(oracle, SubsetSelection):
        return np.packbits(oracle.subset_outputs(), axis=1, bitorder="little")
    if isinstance(oracle, OptimizedUnaryEncoding | SymmetricUnaryEncoding):
        bits = (np.arange(2**n)[:, None] >> np.arange(n)[None, :]) & 1
        return np.packbits(bits.astype(bool), axis=1, bitorder="little")
    if isinstance(mechanism, HadamardRandomizedResponse):
        return np.arange(2, mechanism.n_outputs, dtype=np.uint16)
    if isinstance(mechanism, HaarHRR | HadamardResponse | FactorizationMechanism):
        return np.arange(mechanism.n_outputs, dtype=np.uint16)
    if isinstance(mechanism, HierarchicalHistogram):
        if mechanism.oracle == "hrr":
            outputs = np.arange(mechanism.n_outputs, dtype=np.uint16)
            return outputs[mechanism.report_validity(outputs).valid]
        rows = []
        for level, m in enumerate(mechanism.level_sizes, start=1):
            bits = ((np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1).astype(bool)
            packed = np.packbits(bits, axis=1, bitorder="little")
            block = np.zeros((packed.shape[0], mechanism.report_width), dtype=np.uint8)
            block[:, 0] = level
            block[:, 1:1 + packed.shape[1]] = packed
            rows.append(block)
        return np.vstack(rows)
    low, high = mechanism.report_bounds()
    corners = np.array(list(itertools.product([0, 1], repeat=low.shape[0])), dtype=bool)
    return np.where(corners, high, low)


def _answer_changes(mechanism, W, reports):
    """``W . estimate(statistic of one report)`` for each report: the change it makes."""
    return np.array([W @ mechanism.estimate(mechanism.aggregate(reports[i:i + 1]))
                     for i in range(reports.shape[0])]).T  # (p, n_reports)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("kind", KINDS)
def test_influence_is_the_extreme_over_every_valid_report(kind, epsilon):
    mechanism = _mechanisms(N_CELLS, epsilon)[kind]
    W = _workload(mechanism)
    influence = mechanism.report_influence(W)
    changes = _answer_changes(mechanism, W, _all_valid_reports(mechanism))
    scale = np.abs(changes).max()
    assert influence.exact
    np.testing.assert_allclose(influence.high, changes.max(axis=1), rtol=0, atol=1e-9 * scale)
    np.testing.assert_allclose(influence.low, changes.min(axis=1), rtol=0, atol=1e-9 * scale)
    # The crafted reports are valid and attain the extremes.
    for which, target in (("high_reports", influence.high), ("low_reports", influence.low)):
        crafted = getattr(influence, which)
        assert mechanism.report_validity(crafted).valid.all()
        attained = _answer_changes(mechanism, W, crafted)
        np.testing.assert_allclose(np.diagonal(attained), target, rtol=0, atol=1e-9 * scale)


@pytest.mark.parametrize("kind", KINDS)
def test_a_crafted_report_moves_the_estimate_by_exactly_the_bound(kind):
    """Simulation: honest users, then the worst report added; the estimate moves by the
    computed influence (the estimate is linear, so exactly, up to rounding)."""
    mechanism = _mechanisms(N_CELLS, 1.0)[kind]
    W = _workload(mechanism)
    influence = mechanism.report_influence(W)
    largest, exact = max_malicious_influence(mechanism, W)
    assert exact
    rng = np.random.default_rng(7)
    honest = mechanism.randomize(rng.integers(0, mechanism.n_inputs, 2000), rng)
    before = W @ mechanism.estimate(mechanism.aggregate(honest))
    for query in range(W.shape[0]):
        upward = influence.high[query] >= -influence.low[query]
        crafted = (influence.high_reports if upward else influence.low_reports)[query]
        poisoned = np.concatenate([honest, crafted[None]], axis=0)
        after = W @ mechanism.estimate(mechanism.aggregate(poisoned))
        moved = after[query] - before[query]
        assert abs(moved) == pytest.approx(largest[query], rel=1e-7, abs=1e-7)


@pytest.mark.parametrize("kind", ["randomized_response", "oue", "hrr", "factorization"])
def test_honest_liar_moves_the_expected_answer_by_its_query_entry(kind):
    """Decoding the expected statistic of one user of type u gives e_u (unbiasedness): an
    honest liar moves the expected answer by w_u, at most max |w_u|."""
    mechanism = _mechanisms(N_CELLS, 1.0)[kind]
    W = _workload(mechanism)
    Q = mechanism.strategy_matrix()
    for u in range(mechanism.n_inputs):
        expected = Q[:, u]
        if kind == "randomized_response":
            expected = np.append(expected, 1.0)
        elif kind == "hrr":
            expected = np.concatenate([[0.0, 0.0], expected])
        elif kind == "oue":
            bits = (np.arange(Q.shape[0])[:, None] >> np.arange(N_CELLS)[None, :]) & 1
            expected = np.append(bits.T @ Q[:, u], 1.0)
        np.testing.assert_allclose(W @ mechanism.estimate(expected), W[:, u], atol=1e-9)
    np.testing.assert_array_equal(honest_liar_influence(mechanism, W), np.abs(W).max(axis=1))


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_closed_forms_of_the_frequency_oracles(epsilon):
    n = 64
    rr, oue = RandomizedResponse(n, epsilon), OptimizedUnaryEncoding(n, epsilon)
    # k-RR: reporting cell j adds (1 - q) / (p - q) to it (the estimate already sums to N).
    assert max_malicious_influence(rr, np.eye(n))[0] == pytest.approx(
        np.full(n, (1 - rr.q) / (rr.p - rr.q)))
    # OUE: the one-hot report, (1 - 1/n) / (p - q) + 1/n.
    assert max_malicious_influence(oue, np.eye(n))[0] == pytest.approx(
        np.full(n, (1 - 1 / n) / (oue.p - oue.q) + 1 / n))
    row = poisoning_row(oue, np.eye(n))
    assert row["honest"] == 1.0 and row["ratio"] == pytest.approx(row["malicious"])
    assert row["ratio"] > 1.0


@pytest.mark.parametrize("mechanism", [OptimizedLocalHashing(16, 1.0),
                                       BinaryLocalHashing(16, 1.0)], ids=["olh", "blh"])
def test_local_hashing_influence_is_an_upper_bound(mechanism):
    """2^64 seeds cannot be searched: the bound treats every subset as a support set, so it
    is above what any of many seeds (every bucket) reaches."""
    W = np.vstack([np.eye(16), workloads.prefix(16).toarray()])
    influence = mechanism.report_influence(W)
    assert not influence.exact and influence.high_reports is None
    seeds = np.random.default_rng(3).integers(0, 2**63, 300, dtype=np.uint64)
    g = mechanism.n_buckets
    reports = np.stack([np.repeat(seeds, g), np.tile(np.arange(g, dtype=np.uint64), 300)],
                       axis=1)
    changes = _answer_changes(mechanism, W, reports)
    assert np.all(changes.max(axis=1) <= influence.high + 1e-9)
    assert np.all(changes.min(axis=1) >= influence.low - 1e-9)
    assert poisoning_row(mechanism, W)["exact"] is False


def test_sampled_marginal_mechanisms_do_not_claim_an_influence():
    from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism

    mechanism = build_marginal_mechanism("inp_ht", (2, 3), 1.0, 2)
    with pytest.raises(NotImplementedError, match="influence"):
        mechanism.report_influence(np.eye(6))


@pytest.mark.parametrize("cls", [RandomizedResponse, OptimizedUnaryEncoding,
                                 HadamardRandomizedResponse, HaarHRR])
def test_influence_grows_as_epsilon_shrinks(cls):
    # (Not true of every mechanism: Hadamard response changes its blocks with epsilon, and
    # its influence at eps = 4 exceeds that at eps = 2 for n = 64.)
    rows = [poisoning_row(cls(64, epsilon), np.eye(64))["malicious"]
            for epsilon in (4.0, 2.0, 1.0, 0.5)]
    assert rows == sorted(rows)
