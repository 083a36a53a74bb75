"""The exact discrete Gaussian sampler (table path, tail, refinement, CKS20 path, client).

Every path must draw ``P(y) ~ exp(-y^2 / (2 sigma2))`` exactly; the tests compare each with
that law by chi-square on equal-probability bins (the pmf in float64, for the test only),
force the rare paths (the tail beyond the table, the comparisons the 62-bit bounds cannot
decide) with a small table and widened bounds, and check the table's integers exactly.
"""

import math
import random
import time

import numpy as np
import pytest
from _stats import chi_square_p_value

from sklearn_ldp.mechanisms.central import discrete_gaussian as dg
from sklearn_ldp.mechanisms.central.discrete_gaussian import sample_discrete_gaussian

SIGMA2S = [1, 2, 7, 10**4, 10**8]


def _pmf(sigma2, support):
    """``N_Z(0, sigma2)`` on ``support`` (normalized over it: the support reaches 12 sigma)."""
    weights = np.exp(-support.astype(float) ** 2 / (2.0 * sigma2))
    return weights / weights.sum()


def _p_value(draws, sigma2, n_bins=80):
    """Chi-square p-value of ``draws`` against ``N_Z(0, sigma2)``, on bins of about equal
    probability (single values for a small sigma)."""
    reach = math.ceil(12 * math.sqrt(sigma2)) + 2
    support = np.arange(-reach, reach + 1)
    cumulative = np.cumsum(_pmf(sigma2, support))
    edges = np.unique(np.searchsorted(cumulative, np.linspace(0, 1, n_bins + 1)[1:-1]))
    expected = np.diff(np.concatenate([[0.0], cumulative[edges], [1.0]])) * draws.size
    observed = np.bincount(np.searchsorted(support[edges], draws, side="left"),
                           minlength=expected.size)
    assert observed.sum() == draws.size
    return chi_square_p_value(observed, expected)


@pytest.mark.parametrize("sigma2", SIGMA2S)
def test_table_sampler_has_the_discrete_gaussian_law(sigma2):
    draws = sample_discrete_gaussian(sigma2, 200_000, np.random.default_rng(sigma2))
    assert draws.dtype == np.int64 and draws.shape == (200_000,)
    assert _p_value(draws, sigma2) > 1e-4
    # Symmetric, variance about sigma2 (the discrete Gaussian's is within 1e-10 of it for
    # sigma2 >= 2, and smaller for sigma2 = 1).
    assert abs(draws.mean()) < 5 * math.sqrt(sigma2 / draws.size)


@pytest.mark.parametrize("sigma2", [2, 7, 10**4])
def test_cks_arrays_have_the_same_law(sigma2):
    draws = dg._sample_cks(sigma2, 60_000, np.random.default_rng(3))
    assert _p_value(draws, sigma2, n_bins=40) > 1e-4


def test_small_sizes_use_cks_and_large_sizes_the_table():
    rng = np.random.default_rng(0)
    assert sample_discrete_gaussian(50, 10, rng).shape == (10,)
    assert sample_discrete_gaussian(50, 0, rng).shape == (0,)
    draws = sample_discrete_gaussian(50, dg._MIN_TABLE_SIZE, rng)
    assert dg._gaussian_table.cache_info().currsize >= 1 and draws.shape == (4096,)


def test_tail_and_refinement_paths_have_the_same_law():
    # A table of magnitudes up to 12 for sigma = 10 (23% of draws go to the tail) with bounds
    # widened by 2^60 of 2^62: most comparisons go to the exact refinement.
    sigma2 = 100
    table = dg._gaussian_table(sigma2, core=12, slack=2**60)
    assert table.core == 12 and table.threshold < 2**14 * 0.8
    draws = dg._sample_table(table, 6_000, np.random.default_rng(11))
    assert np.abs(draws).max() > 30  # the tail was drawn
    assert _p_value(draws, sigma2, n_bins=20) > 1e-4
    # Same seed, same draws.
    again = dg._sample_table(table, 6_000, np.random.default_rng(11))
    assert np.array_equal(draws, again)


def test_tail_alone_has_the_law_beyond_the_table():
    sigma2, core = 25, 5
    table = dg._gaussian_table(sigma2, core=core)
    draws = dg._sample_table(table, 8_000, np.random.default_rng(2))
    tail = np.abs(draws[np.abs(draws) > core])
    support = np.arange(core + 1, core + 40)
    expected = _pmf(sigma2, support) / _pmf(sigma2, support).sum() * tail.size
    observed = np.bincount(tail - core - 1, minlength=support.size)[:support.size]
    assert observed.sum() == tail.size
    assert chi_square_p_value(observed, expected) > 1e-4


def test_a_table_too_small_for_the_tail_proposal_is_refused():
    with pytest.raises(ValueError, match="magnitudes up to"):
        dg._gaussian_table(10**4, core=50)


@pytest.mark.parametrize("sigma2", [1, 7, 2**24])
def test_table_integers_are_exact(sigma2):
    table = dg._gaussian_table(sigma2)
    total = 1 << dg._PROPOSAL_BITS
    weights = table.weights + [table.tail_weight]
    assert sum(weights) <= total and min(table.weights) >= 1 << dg._ACCEPT_BITS
    # The alias table gives every entry exactly its weight.
    bins = 1 << table.bin_bits
    capacity = total // bins
    probability = (table.coin_limits >> np.uint64(dg._ACCEPT_BITS + 1)).astype(object)
    alias = table.alias
    recovered = np.zeros(bins, dtype=object)
    for j in range(bins):
        recovered[j] += probability[j]
        recovered[alias[j]] += capacity - probability[j]
    assert list(recovered[:len(weights)]) == weights
    assert sum(recovered[len(weights):]) == total - sum(weights)
    # Acceptance bounds: ordered, at most 1, the threshold below each.
    assert np.all(table.low <= table.high) and np.all(table.high <= 1 << dg._BOUND_BITS)
    assert table.threshold << (dg._BOUND_BITS - dg._ACCEPT_BITS) <= table.low.min()
    # The bounds hold: a(m) from float64 (for the test) lies between them.
    m = np.arange(table.core + 1)
    c = np.where(m == 0, 1.0, 2.0)
    a = (c * np.exp(-(m.astype(float) ** 2) / (2.0 * sigma2)) * table.scale
         / (2.0**dg._SCALE_BITS * np.array(table.weights, dtype=float)))
    scaled = a * 2.0**dg._BOUND_BITS
    assert np.all(table.low <= scaled * (1 + 1e-12)) and np.all(scaled * (1 - 1e-12) <= table.high)
    assert np.all(a <= 1.0) and a.min() > 1 - 2.0**-(dg._ACCEPT_BITS - 1)


@pytest.mark.parametrize("numerator, denominator", [(0, 1), (1, 2), (7, 3), (10**6, 7)])
def test_exp_bracket_holds_and_is_tight(numerator, denominator):
    for bits in (8, 62, 200):
        low, high = dg._exp_bracket(numerator, denominator, bits)
        value = math.exp(-numerator / denominator) * 2.0**bits
        assert low <= value * (1 + 1e-12) and value * (1 - 1e-12) <= high
        assert high - low <= 4 + high // 2**50


def test_refinement_decides_by_exact_comparison():
    generator = random.Random(0)

    def bounds(bits):  # a = 1/3 exactly
        return (1 << bits) // 3, -(-(1 << bits) // 3)

    hits = sum(dg._uniform_below_value(generator.getrandbits(4), 4, bounds, generator)
               for _ in range(30_000))
    assert abs(hits / 30_000 - 1 / 3) < 5 * math.sqrt(2 / 9 / 30_000)

    def too_large(bits):
        return (1 << bits) + 1, (1 << bits) + 2

    with pytest.raises(RuntimeError, match="exceeds 1"):
        dg._uniform_below_value(0, 1, too_large, generator)


@pytest.mark.parametrize("sigma2", [1, 7])
def test_client_sampler_has_the_same_law(sigma2):
    from sklearn_ldp.deploy.client.bassily import _discrete_gaussian

    rng = random.Random(sigma2)
    draws = np.array([_discrete_gaussian(sigma2, rng) for _ in range(20_000)])
    assert _p_value(draws, sigma2, n_bins=20) > 1e-4


@pytest.mark.parametrize("bad", [0, -3, 2.5, 0.5, True, "7", None])
def test_bad_sigma2_is_refused(bad):
    with pytest.raises(ValueError, match="sigma2"):
        sample_discrete_gaussian(bad, 10, np.random.default_rng(0))


def test_table_sampler_is_much_faster_than_cks_arrays():
    # A ratio within one run (the machine's load cancels): the table draws at least 4 times
    # as fast as CKS20's Algorithm 3 on arrays (about 20 times when idle).
    sigma2, size = 2**25, 200_000
    dg._gaussian_table(sigma2)  # built once per process
    rng = np.random.default_rng(0)
    table_time = cks_time = math.inf
    for _ in range(2):
        start = time.perf_counter()
        sample_discrete_gaussian(sigma2, size, rng)
        table_time = min(table_time, time.perf_counter() - start)
        start = time.perf_counter()
        dg._sample_cks(sigma2, size, rng)
        cks_time = min(cks_time, time.perf_counter() - start)
    assert cks_time > 4 * table_time
