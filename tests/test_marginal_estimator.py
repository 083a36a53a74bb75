"""MarginalEstimator and the marginal strategies of LDPEncoder (issue 5, thesis chapter 4)."""

import itertools
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ldp import LDPEncoder, LDPReports
from sklearn_ldp.estimators import MarginalEstimator
from sklearn_ldp.mechanisms.marginals.base import MARGINAL_STRATEGIES, build_marginal_mechanism
from sklearn_ldp.postprocess import consistent_marginals, marginalize
from sklearn_ldp.reports import AggregatedReports
from sklearn_ldp.selection import STRATEGIES, check_strategy_name

DOM = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW")}
SIX = ("inp_rr", "inp_ps", "inp_ht", "marg_rr", "marg_ps", "marg_ht")


def _data(n_users=20000, seed=101):
    """Smoking depends on age; the region is independent of both."""
    rng = np.random.default_rng(seed)
    age = rng.choice(3, n_users, p=[0.5, 0.3, 0.2])
    smoker = (rng.random(n_users) < 0.1 + 0.25 * age).astype(int)
    region = rng.choice(4, n_users, p=[0.4, 0.3, 0.2, 0.1])
    return pd.DataFrame({"age": np.array(DOM["age"])[age],
                         "smoker": np.array(DOM["smoker"])[smoker],
                         "region": np.array(DOM["region"])[region]})


def _true_table(df, columns):
    """The users' own marginal (fractions) over ``columns``, in declared category order."""
    codes = [pd.Categorical(df[c], categories=DOM[c]).codes for c in columns]
    shape = [len(DOM[c]) for c in columns]
    flat = np.ravel_multi_index(codes, shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape) / len(df)


def _binary_types(n_users, flips, seed):
    """Binary records from a tree: column j copies column parent[j], flipped w.p. p."""
    rng = np.random.default_rng(seed)
    columns = [rng.integers(0, 2, n_users)]
    for parent, p in flips:
        columns.append(columns[parent] ^ (rng.random(n_users) < p))
    return np.stack(columns, axis=1)


# ---------------------------------------------------------------- encoder wiring
def test_issue_contract_end_to_end():
    df = _data()
    enc = LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=1.1, max_order=2,
                     random_state=0)
    est = MarginalEstimator().fit(enc.fit_transform(df))
    age_smoker, region = est.predict([("age", "smoker"), ("region",)])
    assert age_smoker.index.names == ["age", "smoker"]
    assert list(age_smoker.index) == list(itertools.product(DOM["age"], DOM["smoker"]))
    assert list(region.index) == DOM["region"] and region.index.name == "region"
    # Every cell (of the default consistent tables) within 5 standard deviations of the
    # unbiased tables' noise from the users' own marginal.
    for table, columns, positions in [(age_smoker, ("age", "smoker"), (0, 1)),
                                      (region, ("region",), (2,))]:
        truth = _true_table(df, columns)
        sd = np.sqrt(est.mechanism_.marginal_variance(positions, len(df), marginal=truth))
        assert np.all(np.abs(table.to_numpy() - truth.ravel()) <= 5 * sd.ravel())
    assert est.chi2_test("age", "smoker").reject_noise_aware
    assert est.mutual_information("age", "smoker") > est.mutual_information("age", "region")
    assert len(est.chow_liu_tree()) == 2


def test_encoder_builds_marginal_strategies_without_a_workload():
    enc = LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=1.1, random_state=0).fit()
    assert enc.mechanism_.kind == "inp_ht" and enc.workload_ is None
    assert enc.mechanism_.params["max_order"] == 2  # default min(2, number of columns)
    assert enc.candidates_.empty
    table = enc.expected_error_
    assert list(table.index) == [("age",), ("smoker",), ("region",), ("age", "smoker"),
                                 ("age", "region"), ("smoker", "region")]
    # TV x sqrt(N) does not depend on N: it predicts the TV of any number of users.
    n_users = 12345
    predicted = enc.predict_marginal_tv(n_users)
    np.testing.assert_allclose(table["tv_sqrt_n"] / np.sqrt(n_users), predicted, rtol=1e-9)
    np.testing.assert_allclose(predicted[("age", "region")],
                               enc.mechanism_.expected_tv((0, 2), n_users), rtol=1e-12)
    np.testing.assert_allclose(
        table.loc[[("age", "smoker")], "per_user_variance"].iloc[0],
        n_users * enc.mechanism_.marginal_variance((0, 1), n_users).sum(), rtol=1e-9)
    one_column = LDPEncoder(categories={"age": DOM["age"]}, strategy="marg_ps").fit()
    assert one_column.mechanism_.params["max_order"] == 1
    with pytest.raises(ValueError, match="marginal strategy"):
        LDPEncoder(categories=DOM, strategy="randomized_response").fit().predict_marginal_tv(10)


def test_sixteen_binary_columns_build_no_dense_matrix():
    dom = {f"b{i}": [0, 1] for i in range(16)}
    enc = LDPEncoder(categories=dom, strategy="inp_ht", epsilon=1.1, random_state=0).fit()
    assert enc.workload_ is None and enc.mechanism_.n_inputs == 2**16
    assert len(enc.expected_error_) == 16 + 120
    records = pd.DataFrame(np.random.default_rng(3).integers(0, 2, (2000, 16)), columns=list(dom))
    est = MarginalEstimator().fit(enc.transform(records))
    assert len(est.marginals_) == 136


def test_marginal_strategy_names_and_bad_parameters():
    for name in MARGINAL_STRATEGIES:
        assert name in STRATEGIES and check_strategy_name(name) == name
    auto = LDPEncoder(categories={"age": DOM["age"]}, strategy="auto", epsilon=1.0).fit()
    assert not set(auto.candidates_.index) & set(MARGINAL_STRATEGIES)
    with pytest.raises(ValueError, match=r"max_order.*\(3\), got 4"):
        LDPEncoder(categories=DOM, strategy="inp_ht", max_order=4).fit()
    with pytest.raises(ValueError, match="max_order"):
        LDPEncoder(categories=DOM, strategy="marg_ps", max_order=0).fit()
    with pytest.raises(ValueError, match="'smoker' has a single category"):
        LDPEncoder(categories={**DOM, "smoker": ["no"]}, strategy="inp_ht").fit()
    with pytest.raises(ValueError, match="takes no workload"):
        LDPEncoder(categories=DOM, strategy="inp_ht", workload="histogram").fit()


# ---------------------------------------------------------------- tables
def test_predict_labels_counts_order_and_crosstab():
    df = _data(5000)
    enc = LDPEncoder(categories=DOM, strategy="marg_ps", epsilon=2.0, random_state=1)
    est = MarginalEstimator().fit(enc.fit_transform(df))
    fractions, = est.predict([("age", "region")])
    counts, = est.predict([("age", "region")], output="count")
    np.testing.assert_allclose(counts, 5000 * fractions)
    assert counts.name == "count" and fractions.name == "fraction"
    swapped, = est.predict([("region", "age")])
    assert swapped.index.names == ["region", "age"]
    np.testing.assert_allclose(swapped.to_numpy().reshape(4, 3),
                               fractions.to_numpy().reshape(3, 4).T)
    crosstab = est.crosstab("age", "region", output="count")
    assert list(crosstab.index) == DOM["age"] and list(crosstab.columns) == DOM["region"]
    np.testing.assert_allclose(crosstab.to_numpy().ravel(), counts.to_numpy())
    smoker, = est.predict(["smoker"])  # a bare column name is a 1-way marginal
    assert list(smoker.index) == ["no", "yes"] and smoker.sum() == pytest.approx(1.0)


def test_predict_refuses_bad_marginals_before_answering_any():
    est = MarginalEstimator().fit(
        LDPEncoder(categories=DOM, strategy="inp_ht", random_state=0).fit_transform(_data(500)))
    with pytest.raises(ValueError, match="'income' was not collected"):
        est.predict([("age",), ("income", "age")])
    with pytest.raises(ValueError, match="order 3.*max_order"):
        est.predict([("age", "smoker", "region")])
    with pytest.raises(ValueError, match="repeats"):
        est.predict([("age", "age")])
    with pytest.raises(ValueError, match="at least one attribute"):
        est.predict([()])
    with pytest.raises(ValueError, match="list of column names"):
        est.predict("age")
    with pytest.raises(ValueError, match="output"):
        est.predict([("age",)], output="percent")
    with pytest.raises(ValueError, match="'income' was not collected"):
        est.crosstab("age", "income")


@pytest.mark.parametrize("strategy", ["inp_ht", "marg_rr", "inp_em"])
def test_partial_fit_equals_one_fit(strategy):
    reports = LDPEncoder(categories=DOM, strategy=strategy, epsilon=1.5,
                         random_state=2).fit_transform(_data(3000))
    whole = MarginalEstimator(postprocess="consistent").fit(reports)
    chunked = MarginalEstimator(postprocess="consistent")
    for rows in (slice(0, 1000), slice(1000, 1001), slice(1001, 3000)):
        chunked.partial_fit(reports[rows])
    assert chunked.n_users_ == 3000
    np.testing.assert_array_equal(whole.statistic_, chunked.statistic_)
    for key in whole.marginals_:
        np.testing.assert_array_equal(whole.marginals_[key], chunked.marginals_[key])
    pd.testing.assert_frame_equal(whole.expected_error_, chunked.expected_error_)


def test_reports_of_another_mechanism_are_refused():
    df = _data(500)
    est = MarginalEstimator().fit(
        LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=1.0).fit_transform(df))
    other = LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=2.0).fit_transform(df)
    with pytest.raises(ValueError, match="different mechanism"):
        est.partial_fit(other)
    with pytest.raises(ValueError, match="different mechanism"):
        est.score(other)
    histogram = LDPEncoder(categories=DOM, strategy="randomized_response").fit_transform(df)
    with pytest.raises(ValueError, match="marginal strategy"):
        MarginalEstimator().fit(histogram)
    with pytest.raises(ValueError, match="LDPReports"):
        MarginalEstimator().fit(df)


def test_raw_records_are_privatized_like_a_pipeline():
    df = _data(2000)
    direct = MarginalEstimator(strategy="marg_ht", epsilon=1.0, categories=DOM, max_order=2,
                               random_state=4).fit(df)
    pipe = make_pipeline(LDPEncoder(categories=DOM, strategy="marg_ht", epsilon=1.0,
                                    max_order=2, random_state=4), MarginalEstimator()).fit(df)
    np.testing.assert_array_equal(direct.statistic_, pipe[-1].statistic_)
    assert direct.n_features_in_ == 3


@pytest.mark.parametrize("strategy", MARGINAL_STRATEGIES)
def test_every_strategy_is_unbiased_within_its_variance(strategy):
    df = _data(20000, seed=7)
    enc = LDPEncoder(categories=DOM, strategy=strategy, epsilon=1.5, random_state=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # inp_em: EM may stop early
        est = MarginalEstimator(postprocess="none").fit(enc.fit_transform(df))
    for positions in itertools.combinations(range(3), 2):
        columns = [list(DOM)[a] for a in positions]
        truth = _true_table(df, columns)
        table = est.unbiased_marginals_[tuple(columns)]
        sd = np.sqrt(est.mechanism_.marginal_variance(positions, len(df), marginal=truth))
        assert np.all(np.abs(table - truth) <= 5 * sd), (strategy, columns)
        if strategy == "inp_em":  # EM tables are distributions
            em = est.marginals_[tuple(columns)]
            assert em.min() >= 0 and em.sum() == pytest.approx(1.0)
        else:
            np.testing.assert_array_equal(est.marginals_[tuple(columns)], table)


# ---------------------------------------------------------------- errors and scores
def test_expected_error_predicts_the_realized_total_variation():
    df = _data(2**14, seed=8)
    enc = LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=1.0, random_state=6).fit()
    truths = {key: _true_table(df, list(key)) for key in enc.expected_error_.index}
    realized, plug_in = [], []
    for _ in range(60):  # the prediction is that of the unbiased tables
        est = MarginalEstimator(postprocess="none").fit(enc.simulate(df))
        realized.append(sum(0.5 * np.abs(est.marginals_[key] - truth).sum()
                            for key, truth in truths.items()))
        plug_in.append(est.expected_error_["plug_in_tv"].sum())
    np.testing.assert_allclose(est.expected_error_["predicted_tv"],
                               enc.predict_marginal_tv(len(df)), rtol=1e-12)
    # Gaussian approximation of every cell's error: the summed TV of the six marginals
    # matches it (the ratio's standard deviation over seeds is 2.8% at 60 repeats).
    assert np.mean(realized) == pytest.approx(np.mean(plug_in), rel=0.12)
    np.testing.assert_allclose(est.predict_tv(len(df)), enc.predict_marginal_tv(len(df)))


# 100 repeats each: the power check below holds with room (the held-out variance is about 18
# standard errors of the mean difference, for each strategy), and the bias band stays 4 of them.
@pytest.mark.parametrize("strategy, n_repeats", [("inp_ht", 100), ("inp_ps", 100),
                                                 ("marg_ps", 100)])
def test_score_is_an_unbiased_estimate_of_minus_the_mse(strategy, n_repeats):
    rng = np.random.default_rng(9)
    train, test = _data(4000, seed=10), _data(3000, seed=11)
    truth = {key: _true_table(test, list(key)) for key in itertools.combinations(DOM, 2)}
    enc = LDPEncoder(categories=DOM, strategy=strategy, epsilon=1.0, random_state=rng).fit()
    mechanism, domain = enc.mechanism_, enc.domain_

    def collect(records):  # an exact simulation where the mechanism has one
        types = domain.encode(records)
        if strategy == "marg_ps":
            return LDPReports(mechanism.randomize(types, rng), mechanism, domain)
        return enc.simulate_counts(np.bincount(types, minlength=domain.size))

    differences, held_out_variance = [], []
    for _ in range(n_repeats):
        est = MarginalEstimator().fit(collect(train))
        mse = np.mean(np.concatenate([(est.marginals_[key] - table).ravel()
                                      for key, table in truth.items()]) ** 2)
        held_out = collect(test)
        differences.append(est.score(held_out) + mse)
        held_out_variance.append(np.mean(np.concatenate([
            mechanism.marginal_variance(tuple(list(DOM).index(c) for c in key), len(test),
                                        marginal=table).ravel()
            for key, table in truth.items()])))
    differences = np.asarray(differences)
    standard_error = differences.std(ddof=1) / np.sqrt(n_repeats)
    assert abs(differences.mean()) <= 4 * standard_error
    # The test has power: omitting the held-out variance would be a bias of many errors.
    assert np.mean(held_out_variance) > 10 * standard_error


def test_grid_search_chooses_an_accurate_strategy():
    dom = {f"b{i}": [0, 1] for i in range(8)}
    records = pd.DataFrame(_binary_types(2**15, [(0, 0.1), (1, 0.2), (0, 0.3), (3, 0.1),
                                                 (2, 0.4), (5, 0.2), (6, 0.1)], seed=12),
                           columns=list(dom))
    # Unbiased tables: the score then ranks the strategies like their analytic variance (the
    # projection's gain differs between strategies, so the default would not).
    pipe = make_pipeline(LDPEncoder(categories=dom, epsilon=1.1, max_order=2, random_state=0),
                         MarginalEstimator(postprocess="none"))
    search = GridSearchCV(pipe, {"ldpencoder__strategy": list(SIX)}, cv=3).fit(records)
    scores = pd.Series(search.cv_results_["mean_test_score"],
                       index=search.cv_results_["param_ldpencoder__strategy"])
    # Analytic per-user squared error of the 2-way tables, strategy by strategy.
    analytic = pd.Series({s: LDPEncoder(categories=dom, strategy=s, epsilon=1.1).fit()
                          .expected_error_.query("order == 2")["per_user_variance"].mean()
                          for s in SIX})
    best = search.best_params_["ldpencoder__strategy"]
    assert analytic[best] <= 1.5 * analytic.min()
    assert scores.idxmin() == "inp_ps" == analytic.idxmax()  # 256 cells: far the worst


def test_fitted_estimator_pickles():
    est = MarginalEstimator(postprocess="consistent").fit(
        LDPEncoder(categories=DOM, strategy="inp_ht", random_state=0).fit_transform(_data(800)))
    restored = pickle.loads(pickle.dumps(est))
    pd.testing.assert_frame_equal(restored.crosstab("age", "smoker"),
                                  est.crosstab("age", "smoker"))
    assert restored.mechanism_ == est.mechanism_


def test_em_failure_is_reported_not_hidden():
    rng = np.random.default_rng(13)
    mechanism = build_marginal_mechanism("inp_em", (2,) * 8, 0.1, 2)
    types = np.ravel_multi_index(_binary_types(2**14, [(0, 0.1)] * 7, seed=14).T, (2,) * 8)
    statistic = mechanism.aggregate(mechanism.randomize(types, rng))
    # Epsilon / d = 0.0125 per attribute: EM stops at the prior or crawls (thesis Table 4.2).
    with pytest.warns(ConvergenceWarning, match="EM failed on .* marginals"):
        est = MarginalEstimator(em_max_iter=300).fit(AggregatedReports(statistic, mechanism))
    report = est.em_report_
    assert list(report.columns) == ["n_iter", "converged", "stuck_at_prior"]
    assert len(report) == 8 + 28 and report["stuck_at_prior"].any()
    assert (~report["converged"]).any() and report["n_iter"].max() == 300
    stuck = report.index[report["stuck_at_prior"]][0]
    np.testing.assert_allclose(est.decoded_marginals_[stuck], 1.0 / 2 ** len(stuck), atol=1e-4)
    strong = build_marginal_mechanism("inp_em", (2,) * 3, 6.0, 2)
    types = np.ravel_multi_index(_binary_types(5000, [(0, 0.1), (1, 0.2)], seed=15).T,
                                 (2,) * 3)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        est = MarginalEstimator().fit(LDPReports(strong.randomize(types, rng), strong))
    assert est.em_report_["converged"].all() and not est.em_report_["stuck_at_prior"].any()
    with pytest.raises(ValueError, match="em_max_iter"):
        MarginalEstimator(em_max_iter=0).fit(LDPReports(strong.randomize(types, rng), strong))


# ---------------------------------------------------------------- consistency
def test_consistency_gives_non_negative_consistent_tables():
    df = _data(1500, seed=16)
    est = MarginalEstimator(postprocess="consistent").fit(
        LDPEncoder(categories=DOM, strategy="inp_ps", epsilon=0.5, random_state=3)
        .fit_transform(df))
    assert min(table.min() for table in est.unbiased_marginals_.values()) < 0  # noisy input
    tables = est.marginals_
    for table in tables.values():
        assert table.min() >= 0 and table.sum() == pytest.approx(1.0, abs=1e-6)
    # Shared attributes agree across tables, and lower orders are their marginals.
    pairs = [key for key in tables if len(key) == 2]
    for column in DOM:
        for key in pairs:
            if column in key:
                np.testing.assert_allclose(marginalize(tables[key], key, (column,)),
                                           tables[(column,)], atol=1e-6)


def test_consistency_does_not_increase_the_error_on_average():
    df = _data(3000, seed=17)
    enc = LDPEncoder(categories=DOM, strategy="inp_ps", epsilon=1.0, random_state=18).fit()
    truths = {key: _true_table(df, list(key)) for key in itertools.combinations(DOM, 2)}
    raw_tv, consistent_tv = [], []
    for _ in range(15):
        statistic = enc.simulate(df)
        raw = MarginalEstimator(postprocess="none").fit(statistic)
        consistent = MarginalEstimator(postprocess="consistent").fit(statistic)
        raw_tv.append(np.mean([0.5 * np.abs(raw.marginals_[k] - t).sum()
                               for k, t in truths.items()]))
        consistent_tv.append(np.mean([0.5 * np.abs(consistent.marginals_[k] - t).sum()
                                      for k, t in truths.items()]))
    assert np.mean(consistent_tv) < np.mean(raw_tv)


def test_consistent_marginals_keeps_consistent_tables_and_checks_input():
    rng = np.random.default_rng(19)
    joint = rng.dirichlet(np.ones(12)).reshape(2, 3, 2)
    tables = {key: marginalize(joint, (0, 1, 2), key) for key in [(0, 1), (0, 2), (1, 2)]}
    fixed = consistent_marginals(tables)
    for key in tables:
        np.testing.assert_allclose(fixed[key], tables[key], atol=1e-6)
    with pytest.raises(ValueError, match="one order"):
        consistent_marginals({(0, 1): tables[(0, 1)], (2,): np.ones(2) / 2})
    with pytest.raises(ValueError, match="attribute 1 has 2 categories .* but 3"):
        consistent_marginals({(0, 1): tables[(0, 1)], (1, 2): np.ones((2, 2)) / 4})
    with pytest.raises(ValueError, match="positive"):
        consistent_marginals(tables, weights={key: 0.0 for key in tables})


# ---------------------------------------------------------------- applications
def test_chi2_noise_aware_test_keeps_its_level_and_the_classic_one_does_not():
    rng = np.random.default_rng(20)
    df = _data(4000, seed=21)
    enc = LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=1.0, random_state=rng).fit()
    classic, noise_aware = [], []
    for _ in range(30):
        est = MarginalEstimator().fit(enc.simulate(df))
        result = est.chi2_test("age", "region", n_simulations=400, random_state=rng)
        classic.append(result.reject)
        noise_aware.append(result.reject_noise_aware)
    assert result.dof == 6 and result.critical_value == pytest.approx(12.5916, abs=1e-4)
    # Independent columns: about 5% false rejections at most for the noise-aware test
    # (P[>= 6 of 30] < 0.02 at 5%), almost always for the classic one at this N.
    assert sum(noise_aware) <= 5
    assert sum(classic) >= 20
    # Dependent columns: with enough users both tests reject.
    large = MarginalEstimator().fit(enc.simulate(_data(2**16, seed=22)))
    dependent = large.chi2_test("age", "smoker", random_state=0)
    assert dependent.reject and dependent.reject_noise_aware
    assert dependent.p_value_noise_aware < 0.01


def test_chi2_critical_value_of_a_binary_pair():
    records = pd.DataFrame(_binary_types(2**14, [(0, 0.1), (0, 0.5)], seed=22),
                           columns=["a", "b", "c"])
    est = MarginalEstimator(strategy="inp_ht", epsilon=2.0, categories={c: [0, 1] for c in "abc"},
                            random_state=0).fit(records)
    result = est.chi2_test("a", "b")
    assert result.dof == 1 and result.critical_value == pytest.approx(3.841, abs=1e-3)
    assert result.reject and result.attributes == ("a", "b")
    with pytest.raises(ValueError, match="alpha"):
        est.chi2_test("a", "b", alpha=1.5)
    one_way = MarginalEstimator(strategy="inp_ht", epsilon=2.0, max_order=1,
                                categories={c: [0, 1] for c in "abc"}).fit(records)
    for method, arguments in [("chi2_test", ("a", "b")), ("mutual_information", ("a", "b")),
                              ("chow_liu_tree", ())]:
        with pytest.raises(ValueError, match="max_order=1"):
            getattr(one_way, method)(*arguments)


def test_mutual_information_and_chow_liu_tree_recover_a_known_tree():
    flips = [(0, 0.1), (1, 0.15), (1, 0.2), (3, 0.1)]  # edges 0-1, 1-2, 1-3, 3-4
    types = _binary_types(2**16, flips, seed=23)
    dom = {f"x{i}": [0, 1] for i in range(5)}
    enc = LDPEncoder(categories=dom, strategy="inp_ht", epsilon=2.0, random_state=24)
    est = MarginalEstimator().fit(enc.fit(pd.DataFrame(types, columns=list(dom)))
                                  .simulate(pd.DataFrame(types, columns=list(dom))))
    tree = est.chow_liu_tree()
    assert list(tree.columns) == ["attribute_a", "attribute_b", "mutual_information"]
    edges = {frozenset(edge) for edge in zip(tree["attribute_a"], tree["attribute_b"],
                                             strict=True)}
    assert edges == {frozenset(("x0", "x1")), frozenset(("x1", "x2")),
                     frozenset(("x1", "x3")), frozenset(("x3", "x4"))}
    # MI of x0, x1 (one flip at 10%): log 2 - H(0.1).
    exact = np.log(2) + 0.1 * np.log(0.1) + 0.9 * np.log(0.9)
    assert est.mutual_information("x0", "x1") == pytest.approx(exact, abs=0.02)
    matrix = est.pairwise_mutual_information()
    np.testing.assert_allclose(matrix.to_numpy(), matrix.to_numpy().T)
    independent = MarginalEstimator().fit(
        enc.simulate(pd.DataFrame(_binary_types(2**16, [(0, 0.5)] * 4, seed=25),
                                  columns=list(dom))))
    assert independent.mutual_information("x0", "x1") < 0.005


# ---------------------------------------------------------------- scikit-learn conformance
PREDICT_TAKES_MARGINALS = "predict takes marginals (column names), not records like those fitted"
EXPECTED_FAILED = {
    "check_fit2d_1sample": "one record makes every column read from the data a single "
                           "category, refused with an error naming the column",
    "check_fit2d_predict1d": PREDICT_TAKES_MARGINALS,
    "check_n_features_in_after_fitting": PREDICT_TAKES_MARGINALS,
    "check_estimators_dtypes": PREDICT_TAKES_MARGINALS,
    "check_dtype_object": PREDICT_TAKES_MARGINALS,
    "check_estimators_nan_inf": PREDICT_TAKES_MARGINALS,
    "check_estimators_pickle": PREDICT_TAKES_MARGINALS + " (pickling is tested above)",
    "check_f_contiguous_array_estimator": PREDICT_TAKES_MARGINALS,
    "check_dict_unchanged": PREDICT_TAKES_MARGINALS,
    "check_fit_idempotent": PREDICT_TAKES_MARGINALS,
}


# The default constructor has no strategy: it decodes reports (LDPReports, or a DataFrame of
# reports whose attrs carry the mechanism) and refuses a raw feature matrix, with an error
# saying what fit expects. Every check that fits such a matrix therefore fails by design;
# the same checks run on records with strategy="inp_ht" above.
FIT_TAKES_REPORTS = ("MarginalEstimator() decodes reports and refuses a raw feature matrix by "
                     "design (the check runs with strategy='inp_ht')")
DEFAULT_EXPECTED_FAILED = dict.fromkeys(
    ["check_fit_score_takes_y", "check_estimators_overwrite_params",
     "check_dont_overwrite_parameters", "check_estimators_fit_returns_self",
     "check_readonly_memmap_input", "check_n_features_in_after_fitting",
     "check_positive_only_tag_during_fit", "check_estimators_dtypes", "check_dtype_object",
     "check_estimators_nan_inf", "check_estimators_pickle",
     "check_f_contiguous_array_estimator", "check_fit2d_1sample", "check_fit2d_1feature",
     "check_dict_unchanged", "check_fit_idempotent", "check_fit_check_is_fitted",
     "check_n_features_in", "check_fit2d_predict1d"], FIT_TAKES_REPORTS)


@parametrize_with_checks(
    [MarginalEstimator(strategy="inp_ht", epsilon=1.0, random_state=0),
     MarginalEstimator()],  # the default constructor
    expected_failed_checks=lambda estimator: (
        EXPECTED_FAILED if estimator.strategy is not None else DEFAULT_EXPECTED_FAILED),
)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


def test_domain_free_reports_use_attribute_positions():
    mechanism = build_marginal_mechanism("marg_ps", (2, 3), 1.0, 2)
    types = np.random.default_rng(26).integers(0, 6, 1000)
    est = MarginalEstimator().fit(LDPReports(mechanism.randomize(types, np.random.default_rng(27)),
                                             mechanism))
    assert est.attributes_ == [0, 1]
    table, = est.predict([(0, 1)])
    assert table.index.names == [0, 1] and len(table) == 6
