"""Aggregates that cannot lie: statistics validated at construction, load and merge.

A statistic crosses trust boundaries (shards, files, Dask partitions): negative or float
counts, totals that disagree with the number of reports, and sums past int64 are refused
with a ValueError, never wrapped into a wrong answer.
"""

import numpy as np
import pytest

from sklearn_ldp.deploy import distributed
from sklearn_ldp.deploy.npz import _members_digest
from sklearn_ldp.mechanisms import (
    BinaryLocalHashing,
    FactorizationMechanism,
    GaussianMechanism,
    GaussianRejectionMechanism,
    HaarHRR,
    HadamardRandomizedResponse,
    HadamardResponse,
    OptimizedLocalHashing,
    RandomizedResponse,
)
from sklearn_ldp.mechanisms._base.statistics import add_counts, check_statistic, sum_statistics
from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism
from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
from sklearn_ldp.mechanisms.oracles.subset_selection import SubsetSelection
from sklearn_ldp.mechanisms.oracles.unary import OptimizedUnaryEncoding, SymmetricUnaryEncoding
from sklearn_ldp.mechanisms.ranges.tree import HierarchicalHistogram
from sklearn_ldp.reports import AggregatedReports, LDPReports

MAX = 2**62
N_CELLS = 24


def every_mechanism():
    """One small mechanism of every registered kind (and of each hierarchical oracle)."""
    mechanisms = [
        RandomizedResponse(N_CELLS, 1.0), SymmetricUnaryEncoding(N_CELLS, 1.0),
        OptimizedUnaryEncoding(N_CELLS, 1.0), OptimizedLocalHashing(N_CELLS, 1.0),
        BinaryLocalHashing(N_CELLS, 1.0), SubsetSelection(N_CELLS, 1.0),
        HadamardResponse(N_CELLS, 1.0), HadamardRandomizedResponse(N_CELLS, 1.0),
        HaarHRR(32, 1.0), FactorizationMechanism(randomized_response_strategy(5, 1.0), 1.0),
        GaussianMechanism(N_CELLS, 1.0, delta=1e-6), GaussianRejectionMechanism(N_CELLS, 1.0),
    ]
    mechanisms += [HierarchicalHistogram(N_CELLS, 1.0, branching=2, oracle=oracle)
                   for oracle in ("oue", "olh", "hrr")]
    mechanisms += [build_marginal_mechanism(kind, [3, 2, 4], 1.0, 2)
                   for kind in ("inp_rr", "inp_ps", "inp_ht", "inp_em", "marg_rr", "marg_ps",
                                "marg_ht")]
    return mechanisms


MECHANISMS = every_mechanism()
IDS = [f"{m.kind}-{m.params.get('oracle', '')}" for m in MECHANISMS]


def aggregate_of(mechanism, n_users=400, seed=0):
    rng = np.random.default_rng(seed)
    reports = mechanism.randomize(rng.integers(0, mechanism.n_inputs, n_users), rng)
    return LDPReports(reports, mechanism).aggregate()


# ---------------------------------------------------------------------- valid statistics
@pytest.mark.parametrize("mechanism", MECHANISMS, ids=IDS)
def test_real_statistics_pass_construction_merge_and_files(mechanism, tmp_path):
    a, b = aggregate_of(mechanism, seed=0), aggregate_of(mechanism, 150, seed=1)
    merged = a + b
    assert len(merged) == 550
    np.testing.assert_allclose(merged.statistic, a.statistic + b.statistic)
    merged.save(tmp_path / "a.npz")
    assert AggregatedReports.load(tmp_path / "a.npz").statistic.tobytes() == \
        merged.statistic.tobytes()
    try:
        simulated = mechanism.simulate_statistic(np.full(mechanism.n_inputs, 10**6),
                                                 np.random.default_rng(2))
    except NotImplementedError:
        return
    assert len(AggregatedReports(simulated, mechanism)) == 10**6 * mechanism.n_inputs


# ---------------------------------------------------------------------- types and signs
@pytest.mark.parametrize("mechanism", [m for m in MECHANISMS if "gaussian" not in m.kind],
                         ids=[i for i in IDS if "gaussian" not in i])
def test_negative_float_bool_and_object_counts_are_refused(mechanism):
    statistic = aggregate_of(mechanism).statistic
    for bad, message in [(statistic.astype(float), "integer counts, got dtype float64"),
                         (statistic.astype(bool), "integer counts, got dtype bool"),
                         (statistic.astype(object), "integer counts, got dtype object"),
                         (statistic[:-1], "has shape")]:
        with pytest.raises(ValueError, match=message):
            AggregatedReports(bad, mechanism)
    negative = statistic.copy()
    negative[np.flatnonzero(negative)[0]] = -1
    with pytest.raises(ValueError, match="negative count"):
        AggregatedReports(negative, mechanism)
    unsigned = statistic.astype(np.uint64)  # unsigned counts are fine: converted to int64
    assert AggregatedReports(unsigned, mechanism).statistic.dtype == np.int64


def test_gaussian_statistics_keep_finite_sums_and_integer_counts():
    for mechanism in (GaussianMechanism(4, 1.0, delta=1e-6), GaussianRejectionMechanism(4, 1.0)):
        statistic = aggregate_of(mechanism).statistic
        with pytest.raises(ValueError, match="finite floats"):
            AggregatedReports(np.where(np.arange(statistic.size) == 0, np.nan, statistic),
                              mechanism)
        for count in (-1.0, 2.5, 2.0**60):
            bad = statistic.copy()
            bad[-1] = count
            with pytest.raises(ValueError, match=r"integers in \[0, 2\^53\]"):
                AggregatedReports(bad, mechanism)
    mechanism = GaussianRejectionMechanism(4, 1.0)
    bad = aggregate_of(mechanism).statistic
    bad[-2] = bad[-1] + 1  # more reports kept than received
    with pytest.raises(ValueError, match="keeps .* inconsistent"):
        AggregatedReports(bad, mechanism)


# ---------------------------------------------------------------------- consistent totals
def _tampered(mechanism, change):
    statistic = aggregate_of(mechanism).statistic.copy()
    change(statistic)
    return statistic


@pytest.mark.parametrize("mechanism, change, message", [
    (RandomizedResponse(N_CELLS, 1.0), lambda s: s.__setitem__(-1, s[-1] + 1),
     "counts sum to 400, but 401 reports"),
    (RandomizedResponse(N_CELLS, 1.0), lambda s: s.__setitem__(0, s[0] + 5),
     "sum to 405, but 400"),
    (OptimizedUnaryEncoding(N_CELLS, 1.0), lambda s: s.__setitem__(3, 401),
     "support count 401 of cell 3 exceeds the number of reports 400"),
    (OptimizedLocalHashing(N_CELLS, 1.0), lambda s: s.__setitem__(-1, 0),
     "exceeds the number of reports 0"),
    (SubsetSelection(N_CELLS, 1.0), lambda s: s.__setitem__(0, s[0] + 1),
     r"reports support \d+ cells"),
    (HadamardRandomizedResponse(N_CELLS, 1.0), lambda s: s.__setitem__(0, 3),
     "coefficient 0"),
    (HierarchicalHistogram(N_CELLS, 1.0, branching=2), lambda s: s.__setitem__(0, 10**6),
     r"\(level 1\).* exceeds the number of reports"),
    (build_marginal_mechanism("marg_rr", [3, 2, 4], 1.0, 2),
     lambda s: s.__setitem__(0, 10**6), "exceeds the .* reports of its attribute set"),
    (build_marginal_mechanism("inp_em", [3, 2, 4], 1.0, 2),
     lambda s: s.__setitem__(0, s[0] + 1), "count different numbers of users"),
], ids=["rr-total", "rr-cell", "oue", "olh", "subset", "hrr", "tree", "marg_rr", "inp_em"])
def test_inconsistent_totals_are_refused(mechanism, change, message):
    with pytest.raises(ValueError, match=message):
        AggregatedReports(_tampered(mechanism, change), mechanism)
    with pytest.raises(ValueError, match=message):
        check_statistic(_tampered(mechanism, change), mechanism)


def test_tampered_statistic_in_a_file_is_refused_naming_the_file(tmp_path):
    """A crafted file (valid checksum) still cannot carry a statistic no reports produce."""
    mechanism = RandomizedResponse(4, 1.0)
    path = tmp_path / "forged.npz"
    aggregate_of(mechanism).save(path)
    with np.load(path, allow_pickle=False) as data:
        contents = {key: data[key] for key in data.files}
    contents["statistic"] = np.array([5, -5, 0, 0, 0])
    contents["sha256"] = np.array(_members_digest(contents))
    with open(path, "wb") as file:
        np.savez(file, **contents)
    with pytest.raises(ValueError, match=r"forged\.npz: .*negative count"):
        AggregatedReports.load(path)


# ---------------------------------------------------------------------- overflow
def test_merge_refuses_int64_overflow_instead_of_wrapping():
    mechanism = RandomizedResponse(3, 1.0)
    half = AggregatedReports(np.array([2**61, 0, 0, 2**61]), mechanism)
    assert len(half + half) == MAX  # exactly 2^62 reports: allowed
    before = half.statistic.copy()
    with pytest.raises(ValueError, match="more than 2\\^62 reports"):
        AggregatedReports.merge([half, half, half])
    with pytest.raises(ValueError, match="more than 2\\^62 reports"):
        sum([half, half, half])
    np.testing.assert_array_equal(half.statistic, before)  # nothing applied
    # A sum that int64 would wrap to a small positive number (2 x 2^62 + 2 x 2^62 = 2^64).
    with pytest.raises(ValueError, match="2\\^62"):
        AggregatedReports(np.array([MAX, 0, 0, MAX]), mechanism) + \
            AggregatedReports(np.array([MAX, 0, 0, MAX]), mechanism)


def test_counts_past_two_to_the_62_are_refused_at_construction():
    rr = RandomizedResponse(3, 1.0)
    with pytest.raises(ValueError, match="more than 2\\^62 reports"):
        AggregatedReports(np.array([MAX + 1, 0, 0, MAX + 1], dtype=np.uint64), rr)
    # Plain counts whose int64 sum would wrap: every entry fits, the exact total does not.
    hadamard = HadamardResponse(4, 1.0)
    statistic = np.full(hadamard.aggregate(np.zeros(0, np.uint8)).shape, MAX)
    with pytest.raises(ValueError, match="summarizes \\d+ reports, more than 2\\^62"):
        AggregatedReports(statistic, hadamard)


def test_shared_sums_of_files_and_dask_check_overflow():
    mechanism = RandomizedResponse(3, 1.0)
    full = np.array([MAX, 0, 0, MAX])
    with pytest.raises(ValueError, match="2\\^62"):
        add_counts(full.copy(), np.array([1, 0, 0, 1]), mechanism)
    with pytest.raises(ValueError, match="2\\^62"):
        sum_statistics([full, np.array([1, 0, 0, 1])], mechanism)
    # The Dask tree of sums uses the same checked sum (called here without a cluster).
    with pytest.raises(ValueError, match="2\\^62"):
        distributed._sum_statistics(mechanism, full, np.array([0, 1, 0, 1]))
    with pytest.raises(ValueError, match="negative count"):
        distributed._sum_statistics(mechanism, np.array([1, 0, 0, 1]), np.array([-1, 0, 0, 0]))
    assert distributed._sum_statistics(mechanism, np.array([1, 0, 0, 1]),
                                       np.array([0, 2, 0, 2])).tolist() == [1, 2, 0, 3]
