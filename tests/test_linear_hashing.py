"""Local hashing with the linear (GF(2)) hash family: decoding by one Walsh-Hadamard
transform, exact moments, the client's copy, specs, and the choice of family and buckets.

Privacy per seed, unbiasedness and variance against the analytic formula run for the linear
family in tests/test_local_hashing.py (its MECHANISMS list)."""

import itertools
import json
import math
import random

import numpy as np
import pytest

import sklearn_ldp.deploy.client as client_module
import sklearn_ldp.mechanisms._base.mechanism as mechanisms_base
import sklearn_ldp.mechanisms.oracles.local_hashing as local_hashing
from sklearn_ldp.mechanisms._base.mechanism import mechanism_from_dict, mechanism_from_json
from sklearn_ldp.mechanisms.oracles.local_hashing import (
    BinaryLocalHashing,
    LocalHashing,
    OptimizedLocalHashing,
    best_power_of_two_buckets,
    linear_hash,
    linear_hash_rows,
)


def _seeds(count, seed):
    return np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64,
                                                endpoint=False)


def _naive_support_counts(mechanism, reports, cells=None):
    cells = np.arange(mechanism.n_inputs) if cells is None else cells
    buckets = mechanism.hash_values(reports[:, :1], cells[None, :])
    return (buckets == reports[:, 1:]).sum(axis=0)


# ---------------------------------------------------------------- the hash
def test_linear_hash_is_a_matrix_product_over_gf2():
    rows = linear_hash_rows(_seeds(30, 1), 3, 6)
    assert rows.dtype == np.uint64 and rows.shape == (30, 3) and rows.max() < 64
    cells = np.arange(64, dtype=np.uint64)
    hashed = linear_hash(rows[:, None, :], cells[None, :])
    bits = (cells[:, None] >> np.arange(6, dtype=np.uint64)) & np.uint64(1)  # (64, 6)
    for i in range(30):
        M = (rows[i][:, None] >> np.arange(6, dtype=np.uint64)) & np.uint64(1)  # (3, 6)
        expected = ((bits @ M.T) % 2) @ (np.uint64(1) << np.arange(3, dtype=np.uint64))
        np.testing.assert_array_equal(hashed[i], expected)
    # Linear: H(x xor z) = H(x) xor H(z).
    np.testing.assert_array_equal(hashed[:, 5 ^ 9], hashed[:, 5] ^ hashed[:, 9])


@pytest.mark.parametrize("g", [2, 4, 16])
def test_pairs_and_triples_collide_at_the_ideal_rates(g):
    """q = 1/g and r_other = 1/g^2 rest on: for distinct x, v the bucket difference is uniform,
    and for distinct j, k, u the two differences are independent. Counted exactly over all
    (M x, M z) with M ranging over every r x L matrix would take too long; instead 200,000
    seeds, within 4.5 standard errors, on cells in arithmetic progression, sharing bits, and
    far apart."""
    count = 200000
    mechanism = LocalHashing(1024, 1.0, n_buckets=g, hash_family="linear")
    cells = np.array([0, 1, 2, 3, 7, 11, 512, 513, 1023])
    buckets = mechanism.hash_values(_seeds(count, 2)[:, None], cells[None, :]).astype(np.int64)
    sd_pair = math.sqrt((1 / g) * (1 - 1 / g) / count)
    sd_triple = math.sqrt(g**-2 * (1 - g**-2) / count)
    for a, b in itertools.combinations(range(len(cells)), 2):
        rate = np.mean(buckets[:, a] == buckets[:, b])
        assert abs(rate - 1 / g) <= 4.5 * sd_pair, (cells[a], cells[b], rate)
    for a, b, c in [(0, 1, 2), (1, 2, 3), (0, 3, 6), (4, 5, 8), (6, 7, 8)]:
        rate = np.mean((buckets[:, a] == buckets[:, b]) & (buckets[:, b] == buckets[:, c]))
        assert abs(rate - g**-2) <= 4.5 * sd_triple, (cells[[a, b, c]], rate)


def test_linear_moments_are_the_ideal_ones_exactly():
    mechanism = OptimizedLocalHashing(5000, 1.0)
    assert mechanism.hash_family == "linear" and mechanism.n_buckets == 4
    assert mechanism.q == 1 / 4 and mechanism.pair_own == mechanism.p / 4
    assert mechanism.pair_other == 1 / 16


# ---------------------------------------------------------------- decoding
@pytest.mark.parametrize("n, g, n_users", [(1, 2, 7), (2, 4, 1), (10, 4, 0), (10, 4, 5),
                                           (37, 2, 2041), (100, 8, 3000), (1000, 32, 700),
                                           (5, 64, 2000), (3000, 4, 500)])
def test_walsh_hadamard_decoding_equals_naive_support_counts(n, g, n_users):
    mechanism = LocalHashing(n, 1.0, n_buckets=g, hash_family="linear")
    rng = np.random.default_rng(n * 1000 + n_users)
    reports = mechanism.randomize(rng.integers(0, n, n_users), rng)
    statistic = mechanism.aggregate(reports)
    assert statistic.dtype == np.int64 and statistic.shape == (n + 1,)
    assert statistic[-1] == n_users
    np.testing.assert_array_equal(statistic[:-1], _naive_support_counts(mechanism, reports))
    np.testing.assert_array_equal(mechanism._support_counts(reports), statistic[:-1])


def test_decoding_at_a_million_cells_matches_naive_on_sampled_cells():
    n = 2**20
    mechanism = OptimizedLocalHashing(n, 2.0)
    assert mechanism.hash_family == "linear" and mechanism.n_buckets == 8
    rng = np.random.default_rng(3)
    reports = mechanism.randomize(rng.integers(0, n, 3000), rng)
    statistic = mechanism.aggregate(reports)
    cells = np.concatenate([[0, 1, n - 1], rng.integers(0, n, 200)])
    np.testing.assert_array_equal(statistic[cells],
                                  _naive_support_counts(mechanism, reports, cells))


def test_aggregate_is_additive_over_chunks(monkeypatch):
    mechanism = OptimizedLocalHashing(3000, 1.0)
    rng = np.random.default_rng(4)
    reports = mechanism.randomize(rng.integers(0, 3000, 5000), rng)
    whole = mechanism.aggregate(reports)
    monkeypatch.setattr(mechanisms_base, "AGGREGATE_CHUNK", 777)  # many spectrum chunks
    np.testing.assert_array_equal(mechanism.aggregate(reports), whole)
    parts = mechanism.aggregate(reports[:1234]) + mechanism.aggregate(reports[1234:])
    np.testing.assert_array_equal(parts, whole)


# ---------------------------------------------------------------- choice of family and g
def test_default_family_is_linear_at_every_size():
    for n in (1, 2, 64, 2048, 2049):
        assert OptimizedLocalHashing(n, 1.0).hash_family == "linear"
        assert BinaryLocalHashing(n, 1.0).params == {"hash_family": "linear"}
    assert BinaryLocalHashing(8, 1.0, hash_family="tabulation").params == {}
    explicit = OptimizedLocalHashing(10, 0.5, hash_family="linear")
    assert explicit.n_buckets == 2 and explicit.params == {"n_buckets": 2,
                                                            "hash_family": "linear"}


def _rare_item_variance(epsilon, g):
    e = math.exp(epsilon)
    return (e + g - 1) ** 2 / ((e - 1) ** 2 * (g - 1))


def test_best_power_of_two_loses_at_most_7_point_2_percent():
    worst = 0.0
    for epsilon in np.linspace(0.05, 10.0, 400):
        g = best_power_of_two_buckets(epsilon)
        assert g & (g - 1) == 0
        others = [2**r for r in range(1, 21)]
        assert _rare_item_variance(epsilon, g) == min(_rare_item_variance(epsilon, h)
                                                      for h in others)
        integer_g = max(2, round(math.exp(epsilon)) + 1)
        worst = max(worst, _rare_item_variance(epsilon, g)
                    / _rare_item_variance(epsilon, integer_g) - 1)
    assert 0.06 < worst <= 0.072  # the figure in the module docstring
    assert best_power_of_two_buckets(1.0) == 4  # e + 1 = 3.7: no loss at eps = 1


# ---------------------------------------------------------------- specs
def test_json_round_trip_pins_the_family():
    mechanism = OptimizedLocalHashing(5000, 1.5)
    spec = json.loads(mechanism.to_json())
    assert spec["params"] == {"n_buckets": mechanism.n_buckets, "hash_family": "linear"}
    rebuilt = mechanism_from_json(mechanism.to_json())
    assert rebuilt == mechanism and rebuilt.hash_family == "linear"
    blh = BinaryLocalHashing(5000, 1.0)
    assert mechanism_from_json(blh.to_json()) == blh


def test_a_spec_without_family_means_tabulation_at_any_size():
    # Specs written before the linear family pinned only n_buckets: they keep their hash.
    legacy = {"version": 1, "mechanism": "olh", "epsilon": 1.0, "n_inputs": 5000,
              "params": {"n_buckets": 4}}
    mechanism = mechanism_from_dict(legacy)
    assert mechanism.hash_family == "tabulation" and mechanism.params == {"n_buckets": 4}
    blh = mechanism_from_dict({"version": 1, "mechanism": "blh", "epsilon": 1.0,
                               "n_inputs": 5000, "params": {}})
    assert blh.hash_family == "tabulation"
    _, privatize = client_module.RANDOMIZERS["olh"](legacy)
    seeds = _seeds(20, 5)
    expected = mechanism.hash_values(seeds[:, None], np.arange(50)[None, :])
    computed = [[privatize.bucket(int(s), c) for c in range(50)] for s in seeds]
    np.testing.assert_array_equal(np.array(computed, dtype=np.uint64), expected)


# ---------------------------------------------------------------- the client's copy
@pytest.mark.parametrize("make", [lambda: OptimizedLocalHashing(3000, 1.0),
                                  lambda: OptimizedLocalHashing(37, 3.0, hash_family="linear"),
                                  lambda: BinaryLocalHashing(4097, 0.5)],
                         ids=["olh-3000", "olh-37-g16", "blh-4097"])
def test_client_hash_equals_the_servers(make):
    server = make()
    _, privatize = client_module.RANDOMIZERS[server.kind](server.to_dict())
    seeds = _seeds(100, 6)
    cells = np.unique(np.concatenate([[0, server.n_inputs - 1],
                                      np.random.default_rng(7).integers(0, server.n_inputs,
                                                                        60)]))
    expected = server.hash_values(seeds[:, None], cells[None, :])
    computed = [[privatize.bucket(int(seed), int(cell)) for cell in cells] for seed in seeds]
    np.testing.assert_array_equal(np.array(computed, dtype=np.uint64), expected)


def test_client_reports_decode_on_the_server():
    server = OptimizedLocalHashing(4096 + 5, 2.0)
    _, privatize = client_module.RANDOMIZERS["olh"](server.to_dict())
    rng = random.Random(8)
    reports = np.array([privatize(7, rng) for _ in range(4000)], dtype=np.uint64)
    statistic = server.aggregate(reports)
    # Cell 7 is supported by the kept reports (p) and by chance (1/g) otherwise.
    expected = 4000 * server.p
    sd = math.sqrt(4000 * server.p * (1 - server.p))
    assert abs(statistic[7] - expected) <= 4.5 * sd
    assert abs(server.estimate(statistic)[7] - 4000) <= 4.5 * math.sqrt(
        4000 * server.query_variance(np.eye(server.n_inputs)[7:8])[0, 7])


# ---------------------------------------------------------------- bad input
def test_bad_family_and_buckets_are_refused():
    with pytest.raises(ValueError, match=r"power of two .*n_buckets=3"):
        OptimizedLocalHashing(10, 1.0, n_buckets=3, hash_family="linear")
    with pytest.raises(ValueError, match=r"hash_family must be one of .*'cuckoo'"):
        OptimizedLocalHashing(10, 1.0, hash_family="cuckoo")
    bad = {"version": 1, "mechanism": "olh", "epsilon": 1.0, "n_inputs": 10,
           "params": {"n_buckets": 4, "hash_family": "xor"}}
    with pytest.raises(ValueError, match="hash_family"):
        mechanism_from_dict(bad)
    with pytest.raises(ValueError, match="hash_family"):
        client_module.RANDOMIZERS["olh"](bad)
    bad["params"] = {"n_buckets": 6, "hash_family": "linear"}
    with pytest.raises(ValueError, match="power of two"):
        client_module.RANDOMIZERS["olh"](bad)
    linear = OptimizedLocalHashing(5000, 1.0)
    with pytest.raises(ValueError, match=r"buckets in \[0, 4\)"):
        linear.aggregate(np.array([[1, 4]], dtype=np.uint64))
    assert local_hashing.HASH_FAMILIES == ("tabulation", "linear")


# ---------------------------------------------------------------- trees of OLH levels
def test_hierarchical_olh_levels_take_the_default_family():
    from sklearn_ldp.mechanisms import HierarchicalHistogram

    tree = HierarchicalHistogram(2**13, 1.0, branching=8, oracle="olh")
    assert tree.params["olh_hash"] == "by_size"
    families = [level.hash_family for level in tree.level_oracles]
    assert families == ["linear"] * len(tree.level_sizes)
    assert mechanism_from_dict(tree.to_dict()) == tree
    # A spec from before the linear family: every level by tabulation, on both sides.
    legacy = tree.to_dict()
    del legacy["params"]["olh_hash"]
    old = mechanism_from_dict(legacy)
    assert {level.hash_family for level in old.level_oracles} == {"tabulation"}
    with pytest.raises(ValueError, match="olh_hash applies to oracle='olh' only"):
        HierarchicalHistogram(64, 1.0, oracle="oue", olh_hash="tabulation")
    with pytest.raises(ValueError, match="olh_hash must be"):
        HierarchicalHistogram(64, 1.0, oracle="olh", olh_hash="linear")


@pytest.mark.parametrize("legacy", [False, True], ids=["by_size", "legacy"])
def test_hierarchical_olh_client_reports_decode_like_the_servers(legacy):
    from sklearn_ldp.mechanisms import HierarchicalHistogram

    tree = HierarchicalHistogram(2**12 + 3, 2.0, branching=16, oracle="olh",
                                 olh_hash="tabulation" if legacy else None)
    spec = tree.to_dict()
    if legacy:
        del spec["params"]["olh_hash"]
    _, privatize = client_module.RANDOMIZERS["hierarchical"](spec)
    rng = random.Random(9)
    cell = 4000
    reports = np.array([privatize(cell, rng) for _ in range(3000)], dtype=np.uint64)
    estimate = tree.estimate(tree.aggregate(reports))
    # All 3000 users hold one cell: its leaf and every ancestor carry the whole mass.
    answer = tree.range_counts(tree.aggregate(reports), [cell], [cell])[0]
    sd = math.sqrt(3000 * tree.query_variance(np.eye(tree.n_inputs)[cell:cell + 1])[0, cell])
    assert abs(answer - 3000) <= 4.5 * sd
    assert abs(estimate.sum() - 3000) < 1e-6


def test_invalid_buckets_are_refused_by_row_or_dropped_and_counted():
    from sklearn_ldp.deploy.collect import reports_from_client

    mechanism = OptimizedLocalHashing(3000, 1.0)
    reports = np.array([[1, 2], [5, 9], [7, 3]], dtype=np.uint64)
    with pytest.raises(ValueError, match=r"report 1 .*\[5, 9\].*buckets in \[0, 4\)"):
        mechanism.aggregate(reports)
    kept = reports_from_client(reports.tolist(), mechanism, invalid="drop")
    assert len(kept) == 2 and kept.n_invalid == 1
    np.testing.assert_array_equal(mechanism.aggregate(kept.reports),
                                  mechanism.aggregate(reports[[0, 2]]))
