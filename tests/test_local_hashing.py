"""Local hashing (OLH, BLH): privacy audit, hash family, support counting, variance, JSON."""

import math

import numpy as np
import pytest
from _stats import check_unbiased, chi_square_p_value, variance_band

import sklearn_ldp.mechanisms.oracles.local_hashing as local_hashing
from sklearn_ldp import workloads
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.mechanisms._base.mechanism import mechanism_from_json
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.mechanisms.oracles.local_hashing import (
    BinaryLocalHashing,
    LocalHashing,
    OptimizedLocalHashing,
    character_sizes,
    hash_tables,
    splitmix64,
)

# Tabulation: OLH at eps = 1 (g = 4) and eps = 3 (g = 21), BLH (g = 2), and an explicit g = 3.
TABULATION = {"hash_family": "tabulation"}
MECHANISMS = [
    pytest.param(lambda n: OptimizedLocalHashing(n, 1.0, **TABULATION), id="olh-eps1-g4"),
    pytest.param(lambda n: OptimizedLocalHashing(n, 3.0, **TABULATION), id="olh-eps3-g21"),
    pytest.param(lambda n: BinaryLocalHashing(n, 1.0, **TABULATION), id="blh-eps1"),
    pytest.param(lambda n: OptimizedLocalHashing(n, 0.5, n_buckets=3), id="olh-eps0.5-g3"),
    # The linear family (GF(2) hash, Walsh-Hadamard decoding; the default): same checks, same
    # formulas.
    pytest.param(lambda n: OptimizedLocalHashing(n, 1.0), id="olh-linear-eps1-g4"),
    pytest.param(lambda n: OptimizedLocalHashing(n, 3.0), id="olh-linear-eps3-g16"),
    pytest.param(lambda n: BinaryLocalHashing(n, 1.0), id="blh-linear"),
]
# Significance level of each statistical check (the seeds are fixed; this sets the bands).
ALPHA = 1e-4


def _random_seeds(count, seed):
    return np.random.default_rng(seed).integers(0, 2**64, size=count, dtype=np.uint64,
                                                endpoint=False)


def _naive_support_counts(mechanism, reports):
    """C_j = #{i : H_{s_i}(j) = y_i}, by hashing every (user, cell) pair directly."""
    buckets = mechanism.hash_values(reports[:, :1], np.arange(mechanism.n_inputs)[None, :])
    return (buckets == reports[:, 1:]).sum(axis=0)


# ---------------------------------------------------------------- parameters
@pytest.mark.parametrize("epsilon, g", [(0.1, 2), (0.5, 3), (1.0, 4), (2.0, 8), (3.0, 21),
                                        (math.log(7.4), 8), (40.0, local_hashing.MAX_BUCKETS)])
def test_olh_buckets_round_e_eps_plus_one(epsilon, g):
    # With tabulation. log(7.4): round gives 7 + 1 = 8 where ceil would give 9; eps = 40 is
    # capped.
    mechanism = OptimizedLocalHashing(10, epsilon, hash_family="tabulation")
    assert mechanism.n_buckets == g
    assert mechanism.params == {"n_buckets": g}
    assert mechanism.p == pytest.approx(np.exp(epsilon) / (np.exp(epsilon) + g - 1))


@pytest.mark.parametrize("epsilon, g", [(0.1, 2), (0.5, 2), (1.0, 4), (2.0, 8), (3.0, 16)])
def test_the_default_family_is_linear_with_the_best_power_of_two(epsilon, g):
    for n in (1, 10, 2048):
        mechanism = OptimizedLocalHashing(n, epsilon)
        assert mechanism.n_buckets == g
        assert mechanism.params == {"n_buckets": g, "hash_family": "linear"}


def test_explicit_buckets_and_blh():
    # A g that is not a power of two can only be hashed by tabulation, which it then takes.
    seven = OptimizedLocalHashing(10, 1.0, n_buckets=7)
    assert seven.n_buckets == 7 and seven.hash_family == "tabulation"
    assert OptimizedLocalHashing(10, 1.0, n_buckets=8).hash_family == "linear"
    with pytest.raises(ValueError, match="power of two"):
        OptimizedLocalHashing(10, 1.0, n_buckets=7, hash_family="linear")
    blh = BinaryLocalHashing(10, 1.0)
    assert blh.n_buckets == 2 and blh.params == {"hash_family": "linear"} and blh.kind == "blh"
    assert BinaryLocalHashing(10, 1.0, hash_family="tabulation").params == {}


# ---------------------------------------------------------------- privacy audit
@pytest.mark.parametrize("make", MECHANISMS)
def test_every_seed_is_exactly_private(make):
    """For each fixed seed, P(y | u, seed) is a g x n randomized-response matrix on H_seed(u);
    its ratio over all pairs (u, u') and outputs y is at most e^eps, exactly."""
    mechanism = make(12)
    eps = mechanism.epsilon
    Q = mechanism.conditional_strategy(_random_seeds(400, 1))  # (seeds, g, n)
    np.testing.assert_allclose(Q.sum(axis=1), 1.0, atol=1e-12)
    # One output per seed and type carries p, the others (1 - p) / (g - 1).
    assert np.all(np.sum(Q == mechanism.p, axis=1) == 1)
    # The seed is independent of u, so the ratio of P(seed, y | u) is that of P(y | u, seed).
    stacked = Q.reshape(-1, mechanism.n_inputs) / Q.shape[0]
    assert privacy_ratio(stacked) <= np.exp(eps) * (1 + 1e-9)
    # ... and it is attained (some seed separates two types): the bound is tight.
    assert privacy_ratio(stacked) == pytest.approx(np.exp(eps), rel=1e-9)


@pytest.mark.parametrize("make", MECHANISMS)
def test_sampled_buckets_given_fixed_seeds_match_the_exact_distribution(make):
    """randomize with a fixed seed follows P(y | u, seed): chi-square for a worst-case pair
    (u, u') of types hashed to different buckets, and the empirical likelihood ratio at
    y = H(u) is e^eps within its sampling error."""
    mechanism = make(12)
    g, eps = mechanism.n_buckets, mechanism.epsilon
    rng = np.random.default_rng(2)
    draws = 100000
    for seed in _random_seeds(3, 3):
        buckets = mechanism.hash_values(np.full(12, seed), np.arange(12))
        u = 0
        u_other = int(np.flatnonzero(buckets != buckets[u])[0])
        Q = mechanism.conditional_strategy(np.array([seed]))[0]
        frequencies = {}
        for t in (u, u_other):
            reports = mechanism._randomize_given_seeds(
                np.full(draws, t), np.full(draws, seed, dtype=np.uint64), rng)
            assert np.all(reports[:, 0] == seed)
            counts = np.bincount(reports[:, 1].astype(np.int64), minlength=g)
            assert chi_square_p_value(counts, draws * Q[:, t]) > ALPHA
            frequencies[t] = counts / draws
        y = int(buckets[u])
        log_ratio = np.log(frequencies[u][y] / frequencies[u_other][y])
        # delta method: Var(log f) ~ (1 - P) / (draws P)
        se = math.sqrt(sum((1 - Q[y, t]) / (draws * Q[y, t]) for t in (u, u_other)))
        assert abs(log_ratio - eps) <= 4 * se


@pytest.mark.parametrize("make", MECHANISMS)
def test_randomize_reports_hashed_bucket_with_probability_p(make):
    """Over random seeds: y = H_seed(u) with probability p, else uniform over the other
    g - 1 buckets (the offset (y - H(u)) mod g is uniform over 1..g-1)."""
    mechanism = make(50)
    g, p = mechanism.n_buckets, mechanism.p
    rng = np.random.default_rng(4)
    types = rng.integers(0, 50, 40000)
    reports = mechanism.randomize(types, rng)
    assert reports.dtype == np.uint64 and reports.shape == (40000, 2)
    assert np.unique(reports[:, 0]).size == 40000  # fresh 64-bit seeds
    hashed = mechanism.hash_values(reports[:, 0], types).astype(np.int64)
    offset = (reports[:, 1].astype(np.int64) - hashed) % g
    kept = np.mean(offset == 0)
    assert abs(kept - p) <= 4 * math.sqrt(p * (1 - p) / 40000)
    if g > 2:
        moved = np.bincount(offset[offset != 0], minlength=g)[1:]
        assert chi_square_p_value(moved, np.full(g - 1, moved.sum() / (g - 1))) > ALPHA


def test_no_finite_strategy_matrix_and_no_simulation():
    mechanism = OptimizedLocalHashing(8, 1.0)
    with pytest.raises(ValueError, match="no finite strategy matrix"):
        mechanism.strategy_matrix()
    with pytest.raises(NotImplementedError, match="no exact simulation"):
        mechanism.simulate_statistic(np.ones(8, dtype=int), np.random.default_rng(0))


# ---------------------------------------------------------------- hash family
def test_splitmix64_reference_values():
    # The first outputs of SplitMix64 seeded with 0 (Steele, Lea, Flood 2014; also Java's
    # SplittableRandom and Vigna's reference C code).
    steps = np.arange(1, 4, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    assert splitmix64(steps).tolist() == [0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4,
                                          0x06C45D188009454F]


def test_character_sizes_cover_the_domain():
    for n in (1, 2, 3, 10, 1023, 1024, 1025, 5000):
        n_lo, n_hi = character_sizes(n)
        assert n_hi <= n_lo and n_lo * n_hi >= n and n_lo * (n_hi - 1) < n


def _hash_samples(g, cells, count=200000, seed=5):
    mechanism = LocalHashing(1024, 1.0, n_buckets=g)
    return mechanism.hash_values(_random_seeds(count, seed)[:, None],
                                 np.asarray(cells)[None, :]).astype(np.int64)


@pytest.mark.parametrize("g", [2, 4, 21])
def test_buckets_are_uniform(g):
    count = 200000
    buckets = _hash_samples(g, [0, 1, 33, 1023], count)
    for column in buckets.T:
        frequencies = np.bincount(column, minlength=g) / count
        assert np.all(np.abs(frequencies - 1 / g) <= 4.5 * math.sqrt((1 / g) * (1 - 1 / g)
                                                                     / count))


@pytest.mark.parametrize("g", [2, 4, 21])
def test_pairwise_collisions_happen_with_probability_one_over_g(g):
    count = 200000
    # Neighbours, same low or high character (n_lo = 32), far apart.
    pairs = [(0, 1), (0, 32), (5, 37), (0, 1023), (100, 900)]
    cells = sorted({c for pair in pairs for c in pair})
    buckets = _hash_samples(g, cells, count)
    column = {c: i for i, c in enumerate(cells)}
    sd = math.sqrt((1 / g) * (1 - 1 / g) / count)
    for j, k in pairs:
        rate = np.mean(buckets[:, column[j]] == buckets[:, column[k]])
        assert abs(rate - 1 / g) <= 4.5 * sd, (j, k, rate)


@pytest.mark.parametrize("g", [2, 4, 21])
def test_triples_are_independent(g):
    """3-wise independence, which the exact covariance r_other = 1/g^2 needs: triples in
    arithmetic progression (where multiply-add-shift hashing collides with probability about
    1/(2g)) and triples sharing characters fall in one bucket with probability 1/g^2, and
    the joint distribution of the three buckets is uniform over g^3 cells (chi-square)."""
    count = 200000
    triples = [(0, 1, 2), (3, 7, 11), (0, 32, 64), (0, 1, 32), (1, 33, 34), (10, 500, 990)]
    cells = sorted({c for triple in triples for c in triple})
    buckets = _hash_samples(g, cells, count, seed=6)
    column = {c: i for i, c in enumerate(cells)}
    sd = math.sqrt(g**-2 * (1 - g**-2) / count)
    for triple in triples:
        a, b, c = (buckets[:, column[cell]] for cell in triple)
        rate = np.mean((a == b) & (b == c))
        assert abs(rate - g**-2) <= 4.5 * sd, (triple, rate)
        if g**3 <= 1000:
            joint = np.bincount((a * g + b) * g + c, minlength=g**3)
            assert chi_square_p_value(joint, np.full(g**3, count / g**3)) > ALPHA, triple


def test_hash_tables_match_client_hashing():
    seeds = _random_seeds(50, 7)
    mechanism = LocalHashing(30, 1.0, n_buckets=5)
    n_lo, n_hi = character_sizes(30)
    A, B = hash_tables(seeds, n_lo, n_hi)
    cells = np.arange(30)
    h = (A[cells % n_lo].astype(np.uint64) + B[cells // n_lo]) % 2**32  # (cells, seeds)
    np.testing.assert_array_equal((h * 5) >> 32,
                                  mechanism.hash_values(seeds[None, :], cells[:, None]))


# ---------------------------------------------------------------- support counting
@pytest.mark.parametrize("n, g, n_users", [(1, 2, 7), (2, 3, 1), (10, 4, 0), (10, 4, 5),
                                           (37, 2, 2041), (100, 7, 3000), (1000, 5, 700),
                                           (5, 21, 20000)])
def test_support_counts_equal_naive_reference(n, g, n_users):
    mechanism = LocalHashing(n, 1.0, n_buckets=g)
    rng = np.random.default_rng(n * 1000 + n_users)
    reports = mechanism.randomize(rng.integers(0, n, n_users), rng)
    statistic = mechanism.aggregate(reports)
    assert statistic.dtype == np.int64 and statistic[-1] == n_users
    np.testing.assert_array_equal(statistic[:-1], _naive_support_counts(mechanism, reports))


@pytest.mark.parametrize("g", [2, 3, 4, 7, 21, 1000, local_hashing.MAX_BUCKETS])
def test_bucket_intervals_are_the_fastrange_buckets(g):
    """Bucket y is [L_y, L_y + w_y) for H = (h g) >> 32: check both ends of every bucket,
    and that w_y is floor or ceil of 2^32 / g (|P(bucket) - 1/g| < 2^-32)."""
    mechanism = LocalHashing(5, 1.0, n_buckets=g)
    lower = mechanism._lower.astype(np.uint64)
    width = mechanism._width.astype(np.uint64)
    buckets = np.arange(g, dtype=np.uint64)
    assert lower[0] == 0 and lower[-1] + width[-1] == 2**32
    np.testing.assert_array_equal(lower[1:], lower[:-1] + width[:-1])
    np.testing.assert_array_equal((lower * np.uint64(g)) >> np.uint64(32), buckets)
    np.testing.assert_array_equal(((lower + width - np.uint64(1)) * np.uint64(g))
                                  >> np.uint64(32), buckets)
    assert set(np.unique(width).tolist()) <= {2**32 // g, -(-2**32 // g)}


def test_support_counting_at_the_bucket_boundaries(monkeypatch):
    """Tables crafted so that the four cells of each user hash to L_y - 1, L_y + w_y - 1
    (cell 1), L_y (cell 2) and L_y + w_y (mod 2^32): exactly cells 1 and 2 match, also where
    L_y - 1 or L_y + w_y wraps around 2^32 (y = 0, y = g - 1)."""
    mechanism = LocalHashing(4, 1.0, n_buckets=5)
    assert character_sizes(4) == (2, 2)  # cell j = (j mod 2, j div 2)

    def crafted_tables(seeds, n_lo, n_hi):
        y = seeds.astype(np.int64)  # the crafted reports carry their bucket as seed
        lower, width = mechanism._lower[y], mechanism._width[y]
        A = np.stack([np.zeros_like(width), width])  # h = A[j mod 2] + B[j div 2]
        B = np.stack([lower - np.uint32(1), lower])  # wraps at y = 0
        return A, B

    monkeypatch.setattr(local_hashing, "hash_tables", crafted_tables)
    y = np.arange(3000, dtype=np.uint64) % np.uint64(5)
    reports = np.stack([y, y], axis=1)
    assert mechanism.aggregate(reports).tolist() == [0, 3000, 3000, 0, 3000]


def test_support_counts_with_tiled_cells(monkeypatch):
    # Small grid blocks force several passes over the high characters per block of users.
    monkeypatch.setattr(local_hashing, "GRID_BLOCK", 2**12)
    mechanism = OptimizedLocalHashing(300, 1.0, hash_family="tabulation")
    rng = np.random.default_rng(8)
    reports = mechanism.randomize(rng.integers(0, 300, 1000), rng)
    np.testing.assert_array_equal(mechanism.aggregate(reports)[:-1],
                                  _naive_support_counts(mechanism, reports))


@pytest.mark.parametrize("family", ["tabulation", "linear"])
def test_aggregate_is_additive_over_chunks(family):
    mechanism = BinaryLocalHashing(40, 1.0, hash_family=family)
    rng = np.random.default_rng(9)
    reports = mechanism.randomize(rng.integers(0, 40, 3000), rng)
    whole = mechanism.aggregate(reports)
    parts = mechanism.aggregate(reports[:1234]) + mechanism.aggregate(reports[1234:])
    np.testing.assert_array_equal(whole, parts)
    np.testing.assert_array_equal(whole[:-1], _naive_support_counts(mechanism, reports))


# ---------------------------------------------------------------- unbiasedness and variance
def _repeated_estimates(mechanism, types, repetitions, seed):
    rng = np.random.default_rng(seed)
    return np.array([mechanism.estimate(mechanism.aggregate(mechanism.randomize(types, rng)))
                     for _ in range(repetitions)])


@pytest.mark.parametrize("make", MECHANISMS)
def test_unbiased_and_variance_matches_analytic(make):
    """R = 1500 repetitions of N = 2000 users on n = 32 cells (Zipf-like types).

    Mean: every cell within 4.5 standard errors (analytic variance / R). Variance: for the
    histogram and prefix workloads, T_r = mean_q err_rq^2 / var_q has mean 1 when the
    analytic variance is right; the mean of the R values must be within 4 of its standard
    errors (estimated from the T_r). Also each query's variance lies in a chi-square band."""
    n, n_users, repetitions = 32, 2000, 1500
    mechanism = make(n)
    weights = 1.0 / np.arange(1, n + 1) ** 1.1
    types = np.random.default_rng(10).choice(n, n_users, p=weights / weights.sum())
    x = np.bincount(types, minlength=n)
    estimates = _repeated_estimates(mechanism, types, repetitions, seed=11)
    errors = estimates - x

    cell_variance = x @ mechanism.query_variance(np.eye(n)).T
    check_unbiased(errors, 0.0, cell_variance)

    for W in (np.eye(n), workloads.prefix(n).toarray()):
        variance = x @ mechanism.query_variance(W).T
        # The last prefix (all cells) is exactly N: zero variance, and zero error.
        live = variance > 1e-9 * variance.max()
        answers = errors @ W.T
        np.testing.assert_allclose(answers[:, ~live], 0.0, atol=1e-6)
        T = np.mean(answers[:, live] ** 2 / variance[live], axis=1)
        assert abs(T.mean() - 1.0) <= 4 * T.std(ddof=1) / math.sqrt(repetitions)
        # Per query: (R - 1) s^2 / var ~ chi2(R - 1), two-sided band at ALPHA / n_queries.
        assert variance_band(answers[:, live].var(axis=0, ddof=1), variance[live],
                             repetitions, level=ALPHA / live.sum())
        # The per-user variance of the workload is the sum of its queries' variances.
        np.testing.assert_allclose(mechanism.per_user_variance(W.T @ W),
                                   mechanism.query_variance(W).sum(axis=0), rtol=1e-10)


def test_histogram_variance_for_rare_items_matches_wang_et_al():
    # Wang et al.: a user not of type j adds q (1 - q) / (p - q)^2 = (e^eps + g - 1)^2 /
    # ((e^eps - 1)^2 (g - 1)) to Var(C_j estimate), 4 e^eps / (e^eps - 1)^2 at g = e^eps + 1;
    # the centering step changes it by O(1/n), below 0.1% at n = 4096.
    n = 4096
    for mechanism in (OptimizedLocalHashing(n, 1.0), BinaryLocalHashing(n, 1.0),
                      OptimizedLocalHashing(n, 2.0, n_buckets=5, hash_family="tabulation")):
        e, g = math.exp(mechanism.epsilon), mechanism.n_buckets
        leading = (e + g - 1) ** 2 / ((e - 1) ** 2 * (g - 1))
        per_cell = mechanism.query_variance(np.eye(n)[:1])[0, 1:]  # users not of type 0
        np.testing.assert_allclose(per_cell, leading, rtol=1e-3)
    mechanism = OptimizedLocalHashing(n, math.log(3.0))  # e^eps = 3, g = 4 = e^eps + 1
    assert mechanism.n_buckets == 4
    np.testing.assert_allclose(mechanism.query_variance(np.eye(n)[:1])[0, 1:],
                               4 * 3 / (3 - 1) ** 2, rtol=1e-3)


# ---------------------------------------------------------------- JSON
@pytest.mark.parametrize("mechanism", [OptimizedLocalHashing(20, 1.0),
                                       OptimizedLocalHashing(20, 2.5, n_buckets=7),
                                       BinaryLocalHashing(20, 0.7)],
                         ids=["olh", "olh-g7", "blh"])
def test_json_round_trip(mechanism):
    rebuilt = mechanism_from_json(mechanism.to_json())
    assert type(rebuilt) is type(mechanism) and rebuilt == mechanism
    assert rebuilt.n_buckets == mechanism.n_buckets and rebuilt.p == mechanism.p
    assert type(mechanism).from_json(mechanism.to_json()) == mechanism
    rng = np.random.default_rng(12)
    reports = mechanism.randomize(rng.integers(0, 20, 500), rng)
    np.testing.assert_array_equal(rebuilt.aggregate(reports), mechanism.aggregate(reports))


def test_json_pins_the_number_of_buckets():
    spec = OptimizedLocalHashing(20, 1.0).to_dict()
    assert spec["mechanism"] == "olh"
    assert spec["params"] == {"n_buckets": 4, "hash_family": "linear"}
    assert OptimizedLocalHashing(20, 1.0) != OptimizedLocalHashing(20, 1.0, n_buckets=5)
    with pytest.raises(ValueError, match="not 'blh'"):
        BinaryLocalHashing.from_json(OptimizedLocalHashing(20, 1.0).to_json())


# ---------------------------------------------------------------- bad input
def test_reports_of_other_mechanisms_are_refused():
    olh, blh = OptimizedLocalHashing(16, 1.0), BinaryLocalHashing(16, 1.0)
    rng = np.random.default_rng(13)
    indices = RandomizedResponse(16, 1.0).randomize(np.arange(16), rng)
    with pytest.raises(ValueError, match=r"\(N, 2\) array .*shape \(16,\).*another mechanism"):
        olh.aggregate(indices)
    with pytest.raises(ValueError, match=r"shape \(4, 3\)"):
        olh.aggregate(np.zeros((4, 3), dtype=np.uint64))
    reports = olh.randomize(np.arange(16).repeat(10), rng)
    with pytest.raises(ValueError, match="uint64.*int64"):
        olh.aggregate(reports.astype(np.int64))
    with pytest.raises(ValueError, match=r"buckets in \[0, 2\).*another number of buckets"):
        blh.aggregate(reports)  # g = 4 reports given to g = 2
    with pytest.raises(ValueError, match=r"statistic .* 17 entries"):
        olh.estimate(np.zeros(5))


def test_bad_parameters_and_types_are_refused():
    with pytest.raises(ValueError, match="n_buckets must be an integer >= 2"):
        OptimizedLocalHashing(8, 1.0, n_buckets=1)
    with pytest.raises(ValueError, match="n_buckets must be an integer"):
        OptimizedLocalHashing(8, 1.0, n_buckets=2.5)
    with pytest.raises(ValueError, match="at most 1048576"):
        OptimizedLocalHashing(8, 1.0, n_buckets=2**21)
    with pytest.raises(ValueError, match="epsilon"):
        OptimizedLocalHashing(8, -1.0)
    with pytest.raises(ValueError, match="n_inputs"):
        BinaryLocalHashing(0, 1.0)
    with pytest.raises(TypeError):
        BinaryLocalHashing(8, 1.0, n_buckets=4)  # g = 2 is fixed for BLH
    mechanism = OptimizedLocalHashing(8, 1.0)
    rng = np.random.default_rng(14)
    with pytest.raises(ValueError, match=r"integers in \[0, 8\)"):
        mechanism.randomize(np.array([0, 8]), rng)
    with pytest.raises(ValueError, match="seeds must be uint64"):
        mechanism.hash_values(np.array([1, 2]), np.array([0, 1]))
    with pytest.raises(ValueError, match=r"cells must be integers in \[0, 8\)"):
        mechanism.hash_values(np.array([1], dtype=np.uint64), np.array([9]))
