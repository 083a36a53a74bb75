"""Range queries (thesis chapter 5): hierarchical histograms, HaarHRR, consistency, bounds,
RangeQueryEstimator and public bins."""

import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from _stats import replicated_statistics
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ldp import LDPEncoder, LDPReports, WorkloadEstimator, mechanism_from_json, workloads
from sklearn_ldp.binning import PublicBinsDiscretizer, interval_categories
from sklearn_ldp.estimators.range import RangeQueryEstimator
from sklearn_ldp.mechanisms import FactorizationMechanism
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.mechanisms.oracles._hrr_simulation import simulate_signed_hrr
from sklearn_ldp.mechanisms.ranges.bounds import (
    haar_variance_bound,
    hierarchical_variance_bound,
    oracle_variance,
    recommend_branching,
)
from sklearn_ldp.mechanisms.ranges.haar import HaarHRR
from sklearn_ldp.mechanisms.ranges.tree import HierarchicalHistogram
from sklearn_ldp.mechanisms.ranges.tree_structure import (
    level_sizes,
    range_matrix,
    tree_consistency,
    tree_height,
)
from sklearn_ldp.selection import build_mechanism

ORACLES = ("oue", "olh", "hrr")


def _cauchy_counts(n, n_users, rng):
    edges = np.arange(n + 1, dtype=float)
    cdf = np.arctan((edges - n / 2) / (n / 20)) / np.pi
    p = np.diff(cdf)
    return rng.multinomial(n_users, p / p.sum())


def _all_ranges(n):
    lo, hi = np.triu_indices(n)
    return lo, hi, range_matrix(lo, hi, n)


# ---------------------------------------------------------------- tree geometry
def test_tree_geometry_pads_to_a_power_of_the_branching():
    assert tree_height(1440, 4) == 6 and tree_height(1024, 4) == 5 and tree_height(5, 5) == 1
    assert level_sizes(1440, 4) == [2, 6, 23, 90, 360, 1440]
    mechanism = HierarchicalHistogram(1440, 1.1, branching=4)
    assert mechanism.widths == [1024, 256, 64, 16, 4, 1]
    # Every level's nodes cover all real cells and no node is only padding.
    for width, m in zip(mechanism.widths, mechanism.level_sizes, strict=True):
        assert (m - 1) * width < 1440 <= m * width


def test_decomposition_reproduces_the_thesis_example_and_covers_every_range():
    mechanism = HierarchicalHistogram(32, 1.0, branching=2)
    runs, root = mechanism.decompose([2], [22])
    blocks = sorted((t * w, (t + 1) * w - 1)
                    for w, (a, b, c, d) in zip(mechanism.widths, runs, strict=True)
                    for t in [*range(a[0], b[0]), *range(c[0], d[0])])
    assert blocks == [(2, 3), (4, 7), (8, 15), (16, 19), (20, 21), (22, 22)]
    # Padded tree: every range is the disjoint union of its blocks, at most 2 (B - 1) per level.
    n, branching = 23, 3
    mechanism = HierarchicalHistogram(n, 1.0, branching=branching)
    lo, hi, W = _all_ranges(n)
    runs, root = mechanism.decompose(lo, hi)
    cover = np.repeat(root[:, None], n, axis=1).astype(float)
    for width, (a, b, c, d) in zip(mechanism.widths, runs, strict=True):
        assert np.all((b - a) + (d - c) <= 2 * (branching - 1))
        node = np.arange(n) // width
        cover += ((node >= a[:, None]) & (node < b[:, None])) | (
            (node >= c[:, None]) & (node < d[:, None]))
    np.testing.assert_array_equal(cover, W)
    assert root.sum() == 1 and root[np.flatnonzero((lo == 0) & (hi == n - 1))[0]]


# ---------------------------------------------------------------- consistency
@pytest.mark.parametrize("n, branching", [(10, 2), (13, 3), (16, 4), (50, 4)])
def test_consistency_is_the_constrained_weighted_least_squares(n, branching):
    rng = np.random.default_rng(n)
    height, sizes = tree_height(n, branching), level_sizes(n, branching)
    widths = [branching ** (height - level) for level in range(1, height + 1)]
    variances = rng.uniform(0.5, 2.0, size=height)
    noisy = [rng.normal(size=m) for m in sizes]
    total = 3.7
    H = [(np.arange(n)[None, :] // w == np.arange(m)[:, None]).astype(float)
         for w, m in zip(widths, sizes, strict=True)]
    A = np.vstack([h / np.sqrt(v) for h, v in zip(H, variances, strict=True)])
    b = np.concatenate([y / np.sqrt(v) for y, v in zip(noisy, variances, strict=True)])
    kkt = np.block([[A.T @ A, np.ones((n, 1))], [np.ones((1, n)), np.zeros((1, 1))]])
    leaves = np.linalg.solve(kkt, np.concatenate([A.T @ b, [total]]))[:n]
    consistent = tree_consistency(noisy, total, branching, variances)
    for h, level in zip(H, consistent, strict=True):
        np.testing.assert_allclose(level, h @ leaves, atol=1e-12)


def test_consistency_equals_the_thesis_formulas_on_a_complete_tree():
    """Hay et al.'s stage 1 weights (B^i - B^(i-1)) / (B^i - 1), stage 2 the 1/B split."""
    branching, height = 3, 3
    rng = np.random.default_rng(1)
    noisy = [rng.normal(size=branching**level) for level in range(1, height + 1)]
    total = 2.5
    averaged = [None] * height
    averaged[-1] = noisy[-1]
    for k in range(height - 2, -1, -1):
        i = height - k  # height of the nodes of level k + 1 (leaves: 1)
        children = averaged[k + 1].reshape(-1, branching).sum(axis=1)
        averaged[k] = ((branching**i - branching ** (i - 1)) * noisy[k]
                       + (branching ** (i - 1) - 1) * children) / (branching**i - 1)
    expected = [averaged[0] + (total - averaged[0].sum()) / branching]
    for k in range(height - 1):
        children = averaged[k + 1].reshape(-1, branching)
        residual = expected[k] - children.sum(axis=1)
        expected.append((children + residual[:, None] / branching).ravel())
    for mine, thesis in zip(tree_consistency(noisy, total, branching), expected, strict=True):
        np.testing.assert_allclose(mine, thesis, atol=1e-12)


@pytest.mark.parametrize("n, branching, oracle", [(64, 4, "oue"), (50, 3, "hrr"),
                                                   (81, 3, "olh"), (40, 2, "oue")])
def test_consistency_never_increases_the_analytic_error(n, branching, oracle):
    """Per range: worst case (all users in one cell) and average case (users spread evenly)."""
    lo, hi, _ = _all_ranges(n)
    for epsilon in (0.5, 1.1, 3.0):
        mechanism = HierarchicalHistogram(n, epsilon, branching, oracle)
        consistent = mechanism.range_variance(lo, hi, consistency=True)
        raw = mechanism.range_variance(lo, hi, consistency=False)
        assert np.all(consistent.max(axis=1) <= raw.max(axis=1) + 1e-9)
        assert np.all(consistent.mean(axis=1) <= raw.mean(axis=1) + 1e-9)
        assert consistent.mean() < 0.7 * raw.mean()  # the thesis's "2-4x lower MSE"


def test_consistency_lowers_the_simulated_error_on_skewed_data():
    n, n_users = 256, 2**20
    rng = np.random.default_rng(7)
    counts = _cauchy_counts(n, n_users, rng)
    mechanism = HierarchicalHistogram(n, 1.1, branching=4)
    lo, hi, W = _all_ranges(n)
    truth = W @ counts
    for _ in range(8):
        statistic = mechanism.simulate_statistic(counts, rng)
        consistent = mechanism.range_counts(statistic, lo, hi, consistency=True)
        raw = mechanism.range_counts(statistic, lo, hi, consistency=False)
        assert np.mean((consistent - truth) ** 2) < 0.8 * np.mean((raw - truth) ** 2)


# ---------------------------------------------------------------- privacy and sampling
@pytest.mark.parametrize("make", [
    lambda eps: HierarchicalHistogram(12, eps, branching=4, oracle="oue"),
    lambda eps: HierarchicalHistogram(7, eps, branching=2, oracle="oue"),
    lambda eps: HierarchicalHistogram(27, eps, branching=3, oracle="hrr"),
    lambda eps: HierarchicalHistogram(10, eps, branching=16, oracle="hrr"),
    lambda eps: HaarHRR(11, eps),
    lambda eps: HaarHRR(2, eps),
])
@pytest.mark.parametrize("epsilon", [0.3, 1.1, 4.0])
def test_strategy_matrices_are_exactly_private(make, epsilon):
    Q = make(epsilon).strategy_matrix()
    assert np.all(Q >= 0)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-12)
    assert privacy_ratio(Q) <= np.exp(epsilon) * (1 + 1e-9)


def test_olh_levels_have_no_finite_matrix_but_private_levels():
    mechanism = HierarchicalHistogram(9, 1.0, branching=3, oracle="olh")
    with pytest.raises(ValueError, match="no finite strategy matrix"):
        mechanism.strategy_matrix()
    # Given the (data-independent) level and hash function, each level is g-ary RR.
    for oracle in mechanism.level_oracles:
        Q = oracle.conditional_strategy(np.arange(5, dtype=np.uint64))
        assert max(privacy_ratio(q) for q in Q) <= np.exp(1.0) * (1 + 1e-9)


@pytest.mark.parametrize("mechanism", [HierarchicalHistogram(12, 1.0, 4, "hrr"), HaarHRR(6, 1.0)],
                         ids=["tree-hrr", "haar"])
def test_reports_follow_the_strategy_matrix(mechanism):
    """Chi-square of each type's report counts against its column of Q."""
    Q = mechanism.strategy_matrix()
    n_per_type = 20_000
    types = np.repeat(np.arange(mechanism.n_inputs), n_per_type)
    reports = mechanism.randomize(types, np.random.default_rng(3)).astype(np.int64)
    live = np.flatnonzero(Q.sum(axis=1) > 0)
    offset = 2 if isinstance(mechanism, HierarchicalHistogram) else 0
    # Tree-HRR rows are the levels' outputs 2..2K-1; map the reports to strategy rows.
    if offset:
        level = np.searchsorted(mechanism._report_offsets, reports, side="right") - 1
        row_start = np.concatenate([[0], np.cumsum([2 * (o.n_coefficients - 1)
                                                    for o in mechanism.level_oracles])])
        reports = row_start[level] + reports - mechanism._report_offsets[level] - 2
    counts = np.zeros(Q.shape)
    np.add.at(counts, (reports, types), 1)
    expected = Q[live] * n_per_type
    chi2 = ((counts[live] - expected) ** 2 / expected).sum(axis=0)
    df = live.size - 1
    assert np.all(chi2 < df + 6 * np.sqrt(2 * df))


@pytest.mark.parametrize("mechanism", [HierarchicalHistogram(10, 1.0, 3, "oue"),
                                       HierarchicalHistogram(10, 1.0, 3, "hrr"),
                                       HaarHRR(10, 1.0)], ids=["tree-oue", "tree-hrr", "haar"])
def test_simulated_statistic_matches_the_clients(mechanism):
    """simulate_statistic and aggregate(randomize) have the same mean and variance."""
    counts = np.array([400, 0, 30, 150, 7, 0, 90, 13, 250, 60])
    types = np.repeat(np.arange(10), counts)
    rng = np.random.default_rng(11)
    repetitions = 600
    simulated = np.array([mechanism.simulate_statistic(counts, rng) for _ in range(repetitions)])
    clients = replicated_statistics(mechanism, types, repetitions, rng)
    mean_gap = simulated.mean(axis=0) - clients.mean(axis=0)
    pooled = (simulated.var(axis=0, ddof=1) + clients.var(axis=0, ddof=1)) / 2
    live = pooled > 0
    assert np.all(np.abs(mean_gap[live]) < 4.5 * np.sqrt(2 * pooled[live] / repetitions))
    np.testing.assert_array_equal(mean_gap[~live], 0)
    ratio = simulated.var(axis=0, ddof=1)[live] / clients.var(axis=0, ddof=1)[live]
    assert np.all(np.abs(np.log(ratio)) < 4.5 * np.sqrt(4 / (repetitions - 1)))


def test_signed_hrr_simulation_keeps_every_user_and_the_signs():
    rng = np.random.default_rng(0)
    plus, minus = np.array([7, 0, 3, 1]), np.array([0, 5, 0, 2])
    sent_plus, sent_minus = simulate_signed_hrr(plus, minus, 1.0, rng, exclude_zero=True)
    assert sent_plus.sum() + sent_minus.sum() == 18 and sent_plus[0] == sent_minus[0] == 0
    # p = 1 and coefficient j: +e_u sends H[j, u], -e_u sends -H[j, u]; totals per j add up.
    with pytest.raises(ValueError, match="power-of-two"):
        simulate_signed_hrr([1, 2, 3], [0, 0, 0], 0.7, rng)


# ---------------------------------------------------------------- unbiasedness, variance
@pytest.mark.parametrize("oracle, simulate, repetitions", [("oue", True, 1200),
                                                           ("hrr", True, 1200),
                                                           ("olh", False, 400)])
def test_tree_answers_are_unbiased_with_the_exact_variance(oracle, simulate, repetitions):
    n = 10
    mechanism = HierarchicalHistogram(n, 1.0, branching=3, oracle=oracle)
    counts = np.array([50, 0, 10, 200, 3, 0, 40, 7, 90, 100])
    types = np.repeat(np.arange(n), counts)
    lo, hi, W = _all_ranges(n)
    rng = np.random.default_rng(5)
    answers, raw = [], []
    statistics = ([mechanism.simulate_statistic(counts, rng) for _ in range(repetitions)]
                  if simulate else replicated_statistics(mechanism, types, repetitions, rng))
    for statistic in statistics:
        answers.append(W @ mechanism.estimate(statistic))
        raw.append(mechanism.range_counts(statistic, lo, hi, consistency=False))
    for values, z in ((np.array(answers), mechanism.query_variance(W)),
                      (np.array(raw), mechanism.range_variance(lo, hi, consistency=False))):
        variance = z @ counts
        live = variance > 1e-9  # the whole domain: the known total, exactly
        np.testing.assert_allclose(values[:, ~live], np.tile((W @ counts)[~live], (repetitions, 1)),
                                   atol=1e-6)
        error = values.mean(axis=0)[live] - (W @ counts)[live]
        assert np.all(np.abs(error) < 4.5 * np.sqrt(variance[live] / repetitions))
        ratio = values.var(axis=0, ddof=1)[live] / variance[live]
        assert np.all(np.abs(ratio - 1) < 4.5 * np.sqrt(2 / (repetitions - 1)))
        assert abs(ratio.mean() - 1) < 0.05


def test_haar_answers_are_unbiased_with_the_exact_variance():
    n, repetitions = 11, 1500
    mechanism = HaarHRR(n, 1.1)
    counts = np.arange(1, n + 1) ** 2
    _, _, W = _all_ranges(n)
    rng = np.random.default_rng(8)
    answers = np.array([W @ mechanism.estimate(mechanism.simulate_statistic(counts, rng))
                        for _ in range(repetitions)])
    variance = mechanism.query_variance(W) @ counts
    error = answers.mean(axis=0) - W @ counts
    assert np.all(np.abs(error) < 4.5 * np.sqrt(variance / repetitions))
    ratio = answers.var(axis=0, ddof=1) / variance
    assert np.all(np.abs(ratio - 1) < 4.5 * np.sqrt(2 / (repetitions - 1)))


@pytest.mark.parametrize("mechanism", [HierarchicalHistogram(20, 0.7, 3, "oue"),
                                       HierarchicalHistogram(20, 2.0, 4, "hrr"),
                                       HierarchicalHistogram(16, 1.0, 2, "olh"),
                                       HaarHRR(20, 0.7)], ids=["oue", "hrr", "olh", "haar"])
def test_gram_variance_equals_the_sum_of_query_variances(mechanism):
    n = mechanism.n_inputs
    for W in (workloads.all_range(n).toarray(), workloads.prefix(n).toarray(),
              np.random.default_rng(0).normal(size=(7, n)), np.diag(np.arange(n) + 1.0)):
        z = mechanism.query_variance(W)
        np.testing.assert_allclose(mechanism.per_user_variance(W.T @ W), z.sum(axis=0),
                                   rtol=1e-9, atol=1e-9)
        if isinstance(mechanism, HierarchicalHistogram):
            np.testing.assert_allclose(mechanism.average_query_variance(W), z.mean(axis=1),
                                       rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- bounds
def test_analytic_bounds_of_the_thesis():
    e3 = np.log(3.0)
    assert oracle_variance(e3) == pytest.approx(3.0) and oracle_variance(e3, "hrr") == \
        pytest.approx(4.0)
    assert hierarchical_variance_bound(2**15, e3, 8, range_length=2**15) == pytest.approx(
        0.5 * 15 * 15 * 3.0)  # eq. 5.2 at B = 8: 1/2 log2 r log2 D V_F
    # With padding the height is an integer: 2^16 cells need 6 levels of fan-out 8.
    assert hierarchical_variance_bound(2**16, e3, 8, range_length=2**16) == pytest.approx(
        9 / 2 * 16 / 3 * 6 * 3.0)
    assert hierarchical_variance_bound(256, e3, 4, range_length=20, consistency=False) == \
        pytest.approx(2 * 3 * 4 * 3 * 3.0)  # eq. 5.1: 2 (B-1) h ceil(log_B r) V_F
    n = 64
    lo, hi, W = _all_ranges(n)
    for epsilon in (0.5, 1.1, 3.0):
        # eq. 5.3 bounds the exact HaarHRR variance of every range for every user type.
        z = HaarHRR(n, epsilon).query_variance(W)
        assert z.max() <= haar_variance_bound(n, epsilon) * (1 + 1e-12)
        # eq. 5.1 is a rare-item bound: it holds for users spread evenly at moderate eps.
        if epsilon <= 1.1:
            raw = HierarchicalHistogram(n, epsilon, 4).range_variance(lo, hi, consistency=False)
            bounds = np.array([hierarchical_variance_bound(n, epsilon, 4, range_length=int(r),
                                                           consistency=False)
                               for r in hi - lo + 1])
            assert np.all(raw.mean(axis=1) <= bounds)


def test_recommend_branching():
    # Bound (no consistency): B ln B - 2B + 2 = 0 gives 4.92; with integer heights 4 at 2^16.
    assert recommend_branching(2**16, consistency=False) == 4
    best, scores = recommend_branching(64, epsilon=1.1, candidates=[2, 4, 8],
                                       return_scores=True)
    _, _, W = _all_ranges(64)
    for branching in (2, 4, 8):
        exact = HierarchicalHistogram(64, 1.1, branching).query_variance(W).mean()
        assert scores[branching] == pytest.approx(exact, rel=1e-9)
    assert best == min(scores, key=scores.get)
    assert recommend_branching(300, 1.1, workload="prefix") in range(2, 17)
    # Sampled ranges on a larger domain pick a B close to the thesis's empirical best.
    assert recommend_branching(2**12, 1.1, candidates=[2, 4, 16]) in (2, 4)
    with pytest.raises(ValueError, match="branching"):
        recommend_branching(100, candidates=[1, 4])


# ---------------------------------------------------------------- encoder and estimators
def _minutes(n_users, seed=0):
    """A realistic time-of-day column: a morning and an evening peak."""
    rng = np.random.default_rng(seed)
    peak = rng.random(n_users) < 0.6
    minutes = np.where(peak, rng.normal(8.5 * 60, 50, n_users), rng.normal(19 * 60, 90, n_users))
    return pd.DataFrame({"minute": np.mod(minutes, 1440).astype(int)})


def test_issue_snippet():
    df = _minutes(60_000)
    enc = LDPEncoder(categories={"minute": range(1440)}, strategy="hierarchical", branching=4,
                     epsilon=1.1, random_state=0)
    est = RangeQueryEstimator().fit(enc.fit_transform(df))
    assert isinstance(enc.mechanism_, HierarchicalHistogram)
    assert enc.mechanism_.branching == 4 and enc.mechanism_.oracle == "oue"
    ranges = [[0, 59], [600, 720], [0, 1439]]
    answers = est.predict(ranges)
    truth = np.array([df.minute.between(lo, hi).mean() for lo, hi in ranges])
    sd = np.sqrt(est.predict_error(ranges)["worst_case"].to_numpy())
    assert sd[-1] == pytest.approx(0, abs=1e-8) and answers[-1] == pytest.approx(1.0)
    assert np.all(np.abs(answers - truth) <= 5 * sd + 1e-12)
    cdf = est.cdf()
    assert cdf.shape == (1440,) and cdf.index[0] == 0 and cdf.iloc[-1] == pytest.approx(1.0)
    quartiles = est.quantiles([0.25, 0.5, 0.75])
    true_quartiles = np.quantile(df.minute, [0.25, 0.5, 0.75])
    assert np.all(np.abs(quartiles - true_quartiles) < 60)
    assert est.expected_error_.shape == (1440, 2)


def test_hierarchical_matrix_is_still_reachable():
    encoder = LDPEncoder(categories={"x": list(range(16))}, strategy="hierarchical_matrix",
                         random_state=0).fit()
    assert isinstance(encoder.mechanism_, FactorizationMechanism)
    assert encoder.strategy_ == "hierarchical_matrix" and encoder.mechanism_.n_outputs == 40


def test_auto_compares_range_mechanisms_with_the_optimized_strategy():
    mechanism, report = build_mechanism("auto", (16,), 1.1, workloads.prefix(16).toarray(),
                                        max_iter=100, random_state=0)
    candidates = report["candidates"]
    assert {"hierarchical", "haar", "hierarchical_matrix", "optimized"} <= set(candidates)
    assert mechanism.name == min(candidates, key=candidates.get)
    gram = workloads.prefix(16).gram()
    tree = HierarchicalHistogram(16, 1.1, 4)
    assert candidates["hierarchical"] == pytest.approx(tree.per_user_variance(gram).max())


@pytest.mark.parametrize("strategy", ["hierarchical", "haar"])
def test_workload_estimator_answers_range_workloads(strategy):
    n = 40
    W = workloads.all_range(n)
    rng = np.random.default_rng(2)
    df = pd.DataFrame({"x": rng.integers(0, n, 20_000) // 2 * 2})  # even cells only
    reports = LDPEncoder(categories={"x": list(range(n))}, strategy=strategy, epsilon=1.0,
                         random_state=0).fit_transform(df)
    estimator = WorkloadEstimator(workload=W).fit(reports)
    truth = W.toarray() @ np.bincount(df.x, minlength=n)
    sd = np.sqrt(estimator.expected_error_["worst_case"].to_numpy())
    assert np.all(np.abs(estimator.answers_.to_numpy() - truth) <= 5 * sd + 1e-6)
    # The whole domain's variance is 0 (the known total): dense rows reach it up to rounding.
    dense = 20_000 * reports.mechanism.query_variance(W.toarray()).mean(axis=1)
    np.testing.assert_allclose(estimator.expected_error_["average_case"], dense,
                               rtol=1e-9, atol=1e-12 * dense.max())


@pytest.mark.parametrize("strategy, options", [("hierarchical", {"oracle": "hrr"}),
                                               ("haar", {}), ("oue", {})])
def test_medians_within_one_percent_of_the_domain(strategy, options):
    n = 2**10
    counts = _cauchy_counts(n, 2**22, np.random.default_rng(4))
    encoder = LDPEncoder(categories={"x": range(n)}, strategy=strategy, epsilon=1.1,
                         random_state=1, **options).fit()
    estimator = RangeQueryEstimator().fit(encoder.simulate_counts(counts))
    true_median = np.searchsorted(np.cumsum(counts) / counts.sum(), 0.5)
    assert abs(estimator.quantiles(0.5) - true_median) <= 0.01 * n


def test_partial_fit_equals_fit_and_reports_round_trip_through_json():
    df = _minutes(5_000, seed=3)
    encoder = LDPEncoder(categories={"minute": range(1440)}, strategy="hierarchical",
                         oracle="olh", branching=8, random_state=2).fit()
    reports = encoder.transform(df)
    whole = RangeQueryEstimator().fit(reports)
    chunked = RangeQueryEstimator()
    for start in range(0, 5_000, 1_300):
        chunked.partial_fit(reports[start:start + 1_300])
    np.testing.assert_array_equal(whole.statistic_, chunked.statistic_)
    np.testing.assert_allclose(whole.cdf_, chunked.cdf_)
    rebuilt = mechanism_from_json(encoder.mechanism_.to_json())
    again = RangeQueryEstimator().fit(LDPReports(reports.reports, rebuilt))
    np.testing.assert_allclose(again.cdf_, whole.cdf_)
    restored = pickle.loads(pickle.dumps(whole))
    np.testing.assert_array_equal(restored.predict([[0, 99]]), whole.predict([[0, 99]]))
    other = LDPEncoder(categories={"minute": range(1440)}, strategy="hierarchical",
                       branching=4, random_state=2).fit_transform(df)
    with pytest.raises(ValueError, match="different mechanism"):
        whole.partial_fit(other)


def test_monotone_fixes_give_a_cdf_and_isotonic_never_increases_its_error():
    n = 512
    counts = _cauchy_counts(n, 20_000, np.random.default_rng(6))
    true_cdf = np.cumsum(counts) / counts.sum()
    encoder = LDPEncoder(categories={"x": range(n)}, strategy="oue", epsilon=0.5,
                         random_state=0).fit()
    for seed in range(5):
        encoder.set_params(random_state=seed)
        aggregated = encoder.fit().simulate_counts(counts)
        raw = RangeQueryEstimator().fit(aggregated)
        assert np.any(np.diff(raw.cdf_) < 0)  # noisy: not monotone
        for monotone in ("isotonic", "cumulative"):
            fixed = RangeQueryEstimator(monotone=monotone).fit(aggregated)
            assert np.all(np.diff(fixed.cdf_) >= 0)
            assert fixed.cdf_.min() >= 0 and fixed.cdf_.max() <= 1
            assert np.all(fixed.predict([[0, 10], [100, 300]]) >= 0)
        isotonic = RangeQueryEstimator(monotone="isotonic").fit(aggregated)
        assert np.sum((isotonic.cdf_ - true_cdf) ** 2) <= np.sum((raw.cdf_ - true_cdf) ** 2)


def test_quantile_is_the_first_cell_reaching_phi():
    encoder = LDPEncoder(categories={"grade": list("ABCDE")}, strategy="haar",
                         random_state=0).fit()
    estimator = RangeQueryEstimator().fit(encoder.simulate_counts(np.array([10, 0, 0, 0, 0])))
    estimator.cdf_ = np.array([0.1, 0.3, 0.5, 0.9, 1.0])
    assert list(estimator.quantiles([0.0, 0.1, 0.2, 0.3, 0.5, 0.95, 1.0])) == list("AABBCEE")
    assert estimator.quantiles(0.15) == "B"
    assert estimator.predict([["B", "D"]])[0] == pytest.approx(0.8)
    # A non-monotone CDF (as noise can make it): the binary search stops at a crossing.
    estimator.cdf_ = np.array([0.2, 0.1, 0.5, 0.4, 1.0])
    cdf = estimator.cdf_
    for phi in np.linspace(0, 1, 21):
        index = "ABCDE".index(estimator.quantiles(phi))
        assert cdf[index] >= phi and (index == 0 or cdf[index - 1] < phi)


def test_numeric_column_with_public_bins():
    edges = [0, 60, 300, 900, 3600, np.inf]
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"seconds": rng.exponential(400, 20_000)})
    categories = {"seconds": interval_categories(edges)}
    reports = LDPEncoder(categories=categories, strategy="hierarchical", branching=2,
                         epsilon=2.0, random_state=0).fit_transform(df)
    estimator = RangeQueryEstimator().fit(reports)
    # A number stands for the bin containing it; labels (intervals) work too.
    first = categories["seconds"][0]
    np.testing.assert_allclose(estimator.predict([[10, 100.5]]),
                               estimator.predict([[first, categories["seconds"][1]]]))
    assert estimator.quantiles(0.5) in categories["seconds"]
    binner = PublicBinsDiscretizer({"seconds": edges}, encode="ordinal").fit()
    codes = binner.transform(df)["seconds"]
    assert codes.min() >= 0 and codes.max() <= 4
    np.testing.assert_array_equal(codes, reports.domain.encode(df))
    with pytest.raises(ValueError, match="outside the public bins"):
        binner.transform(pd.DataFrame({"seconds": [-1.0]}))
    with pytest.raises(ValueError, match="strictly increasing"):
        interval_categories([0, 10, 5])
    with pytest.raises(ValueError, match="at least 2"):
        interval_categories([3])


# ---------------------------------------------------------------- bad input
def _fitted():
    encoder = LDPEncoder(categories={"x": list(range(8))}, strategy="hierarchical",
                         branching=2, random_state=0).fit()
    return RangeQueryEstimator().fit(encoder.simulate_counts(np.full(8, 100)))


@pytest.mark.parametrize("ranges, message", [
    ([[5, 3]], "lo after hi"),
    ([[0, 8]], "inside the domain"),
    ([[-1, 3]], "inside the domain"),
    ([[0, "z"]], "inside the domain"),
    ([[0, 1, 2]], r"\[\[lo, hi\]"),
    ([3, 4], r"\[\[lo, hi\]"),
    ([[np.nan, 3.0]], "NaN"),
])
def test_bad_ranges_are_refused(ranges, message):
    with pytest.raises(ValueError, match=message):
        _fitted().predict(ranges)


@pytest.mark.parametrize("probabilities", [-0.1, 1.5, [0.5, np.nan], "half"])
def test_bad_probabilities_are_refused(probabilities):
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        _fitted().quantiles(probabilities)


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="branching"):
        HierarchicalHistogram(16, 1.0, branching=1)
    with pytest.raises(ValueError, match="branching"):
        LDPEncoder(categories={"x": list(range(8))}, strategy="hierarchical", branching=1).fit()
    with pytest.raises(ValueError, match="oracle"):
        LDPEncoder(categories={"x": list(range(8))}, strategy="hierarchical",
                   oracle="grr").fit()
    aggregated = LDPEncoder(categories={"x": [0, 1]}, strategy="haar").fit().simulate_counts(
        np.array([1, 2]))
    with pytest.raises(ValueError, match="monotone"):
        RangeQueryEstimator(monotone="sorted").fit(aggregated)
    with pytest.raises(ValueError, match="consistency"):
        RangeQueryEstimator(consistency="yes").fit(aggregated)
    with pytest.raises(ValueError, match="LDPReports"):
        RangeQueryEstimator().fit(pd.DataFrame({"x": [1, 2]}))
    with pytest.raises(NotImplementedError, match="olh"):
        HierarchicalHistogram(8, 1.0, oracle="olh").simulate_statistic(np.ones(8, dtype=int),
                                                                       np.random.default_rng())
    with pytest.raises(ValueError, match="lo <= hi"):
        HierarchicalHistogram(8, 1.0).range_counts(np.zeros(100, dtype=np.int64), [3], [2])


def test_reports_from_elsewhere_are_refused():
    rng = np.random.default_rng(0)
    tree = HierarchicalHistogram(20, 1.0, branching=4, oracle="oue")
    reports = tree.randomize(rng.integers(0, 20, 50), rng)
    bad = reports.copy()
    bad[0, 0] = 7  # no level 7
    with pytest.raises(ValueError, match="level"):
        tree.aggregate(bad)
    bad = reports.copy()
    row = np.flatnonzero(reports[:, 0] == 1)[0]  # level 1 has 2 nodes: 1 byte, 2 bits
    bad[row, 1] |= 0x80
    with pytest.raises(ValueError, match="past bit"):
        tree.aggregate(bad)
    hrr_tree = HierarchicalHistogram(20, 1.0, branching=4, oracle="hrr")
    with pytest.raises(ValueError, match="coefficient 0"):
        hrr_tree.aggregate(np.array([0, 1], dtype=np.uint16))
    with pytest.raises(ValueError, match="indices in"):
        HaarHRR(20, 1.0).aggregate(np.array([62], dtype=np.uint16))
    with pytest.raises(ValueError, match="uint64"):
        HierarchicalHistogram(20, 1.0, oracle="olh").aggregate(np.zeros((2, 3), dtype=np.int64))
    for mechanism in (HaarHRR(20, 1.0), HierarchicalHistogram(20, 1.0, 3, "hrr")):
        assert mechanism_from_json(mechanism.to_json()) == mechanism
    assert mechanism_from_json(tree.to_json()) != HierarchicalHistogram(20, 1.0, 4, "hrr")


# ---------------------------------------------------------------- scikit-learn conformance
PREDICT_TAKES_RANGES = "predict takes ranges [[lo, hi], ...], not records like those fitted"
EXPECTED_FAILED = {
    "check_fit2d_predict1d": PREDICT_TAKES_RANGES,
    "check_n_features_in_after_fitting": PREDICT_TAKES_RANGES,
    "check_estimators_dtypes": PREDICT_TAKES_RANGES,
    "check_dtype_object": PREDICT_TAKES_RANGES,
    "check_estimators_pickle": PREDICT_TAKES_RANGES + " (pickling is tested above)",
    "check_f_contiguous_array_estimator": PREDICT_TAKES_RANGES,
    "check_dict_unchanged": PREDICT_TAKES_RANGES,
    "check_fit_idempotent": PREDICT_TAKES_RANGES,
}


@parametrize_with_checks(
    [RangeQueryEstimator(strategy="hierarchical", oracle="hrr", epsilon=1.0, random_state=0),
     RangeQueryEstimator(strategy="haar", epsilon=1.0, random_state=0)],
    expected_failed_checks=lambda estimator: EXPECTED_FAILED,
)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)
