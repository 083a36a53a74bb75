"""Choosing strategies for numeric and many-attribute records (issue 19): ``auto`` among SPL,
SMP, RS+FD and the joint-domain candidates on one-way marginals, the expected-error scorer on
records of several columns, and what GridSearchCV charges to the ledger."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _stats import check_unbiased_and_variance
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_ldp import (
    AttributeHistogramEstimator,
    LDPEncoder,
    MeanEstimator,
    expected_error_scorer,
    workloads,
)
from sklearn_ldp.deploy.budget import PrivacyLedger
from sklearn_ldp.mechanisms.multi_attribute.mechanisms import ORACLES, MultiAttributeMechanism
from sklearn_ldp.mechanisms.numeric.registry import numeric_mechanism
from sklearn_ldp.model_selection import columns_error
from sklearn_ldp.selection import build_mechanism
from sklearn_ldp.selection.local import ONE_WAY_JOINT_MAX_CELLS
from sklearn_ldp.selection.multi_attribute import (
    PROTOCOL_CANDIDATES,
    is_one_way_marginals,
    select_attribute_protocol,
)

SURVEY = (2, 3, 5, 8, 10, 15, 20, 30, 40, 50)


def domain_of(shape):
    return {f"a{i}": list(range(k)) for i, k in enumerate(shape)}


def exact_histogram_variance(mechanism):
    """Worst case over the data of the summed count variances, the slow way: each cell's
    variance at every frequency of a grid (SPL / RS+FD: linear in f) or, for SMP, the
    direct formula N d [f z_own + (1 - f) z_other] + N (d - 1) f (1 - f) summed at uniform."""
    total = 0.0
    d = mechanism.n_attributes
    for i, k in enumerate(mechanism.shape):
        if mechanism.protocol == "smp":
            oracle = mechanism.oracles[i]
            if mechanism.oracle == "grr":
                p, q = oracle.p, oracle.q
                own = p * (1 - p) / (p - q) ** 2
                other = q * (1 - q) / (p - q) ** 2
            else:  # OUE's estimate uses the known total: read its own per-user variances
                first = np.zeros((1, k))
                first[0, 0] = 1.0
                own, other = oracle.query_variance(first)[0, :2]
            f = 1.0 / k
            total += k * (d * (f * own + (1 - f) * other) + (d - 1) * f * (1 - f))
        else:
            ends = mechanism.count_variance(i, np.array([0.0, 1.0]), 1)
            # One user of value v: its own cell at f = 1, the k - 1 others at f = 0.
            total += ends[1] + (k - 1) * ends[0]
    return total


@pytest.mark.parametrize("protocol,oracle", PROTOCOL_CANDIDATES)
def test_histogram_variance_is_the_worst_case_over_the_data(protocol, oracle):
    mechanism = MultiAttributeMechanism((2, 5, 7), 1.5, protocol=protocol, oracle=oracle)
    worst = mechanism.histogram_variance()
    assert worst == pytest.approx(exact_histogram_variance(mechanism), rel=1e-12)
    rng = np.random.default_rng(3)
    for _ in range(20):
        total = sum(mechanism.count_variance(i, rng.dirichlet(np.full(k, 0.3)), 1).sum()
                    for i, k in enumerate(mechanism.shape))
        assert total <= worst * (1 + 1e-12)
        if protocol != "smp":  # linear in f: the same for every data set
            assert total == pytest.approx(worst, rel=1e-12)
    assert mechanism.histogram_variance(1000) == pytest.approx(1000 * worst, rel=1e-12)


def test_one_way_marginals_are_recognized_from_their_structure():
    dom = domain_of((2, 3, 4))
    assert is_one_way_marginals(workloads.marginals(dom, k=1), (2, 3, 4))
    assert is_one_way_marginals(workloads.marginals(dom, attributes=["a2", "a0", "a1"]),
                                (2, 3, 4))
    assert not is_one_way_marginals(workloads.marginals(dom, attributes=["a0", "a1"]),
                                    (2, 3, 4))
    assert not is_one_way_marginals(workloads.marginals(dom, k=2), (2, 3, 4))
    assert not is_one_way_marginals(workloads.histogram(dom), (2, 3, 4))
    assert not is_one_way_marginals(workloads.marginals({"a": [0, 1]}, k=1), (2,))


# Joint domains of at most 64 cells keep the joint candidates (and the optimizer) quick; the
# larger shapes are past ONE_WAY_JOINT_MAX_CELLS, where only the protocols are scored.
GRID = [(2, 2), (4, 4), (2, 3, 5), (2, 2, 2, 2, 2, 2), (5,) * 8, (4,) * 10, SURVEY]


@pytest.mark.parametrize("shape", GRID)
def test_auto_picks_the_least_analytic_error_on_one_way_marginals(shape):
    W = workloads.marginals(domain_of(shape), k=1)
    joint_scored = math.prod(shape) <= ONE_WAY_JOINT_MAX_CELLS
    for epsilon in (0.5, 1.0, 2.0, 4.0):
        # A short optimizer run keeps the test quick: it is one more candidate either way.
        mechanism, report = build_mechanism("auto", shape, epsilon, workload=W,
                                            multi_attribute=True, random_state=0, max_iter=20)
        rows = report["selection"]
        scored = {key: row["worst_case"] for key, row in rows.items()
                  if row["status"] != "skipped"}
        for protocol, oracle in PROTOCOL_CANDIDATES:
            name = f"{protocol}/{oracle}"
            independent = MultiAttributeMechanism(shape, epsilon, protocol=protocol,
                                                  oracle=oracle)
            assert scored[name] == pytest.approx(exact_histogram_variance(independent),
                                                 rel=1e-10)
        assert ("randomized_response" in scored) == joint_scored
        best = report["chosen"]
        assert rows[best]["status"] == "chosen"
        assert scored[best] <= min(scored.values()) * (1 + 1e-9)
        if "protocol" in report:
            assert isinstance(mechanism, MultiAttributeMechanism)
            assert f"{mechanism.protocol}/{mechanism.oracle}" == best
            assert mechanism.epsilon == pytest.approx(epsilon)  # record-level, standard LDP


def test_smp_with_grr_equals_the_marginal_strategy_matrix():
    # marg_ps over the one-way marginals is SMP with randomized response inside: its matrix
    # with the optimal decoder must score exactly what SMP's own formula gives.
    for shape, epsilon in [((3, 3, 3), 2.0), ((2, 2), 0.5), ((2, 4), 1.0)]:
        W = workloads.marginals(domain_of(shape), k=1)
        _, report = build_mechanism("auto", shape, epsilon, workload=W, multi_attribute=True,
                                    random_state=0, max_iter=5)
        rows = report["selection"]
        assert rows["smp/grr"]["worst_case"] == pytest.approx(
            rows["marg_ps_matrix"]["worst_case"], rel=1e-6)


def test_auto_without_the_flag_or_on_other_workloads_is_unchanged():
    shape = (2, 3)
    for kwargs in ({"workload": workloads.marginals(domain_of(shape), k=1)},
                   {"workload": workloads.histogram(domain_of(shape)),
                    "multi_attribute": True}):
        _, report = build_mechanism("auto", shape, 1.0, random_state=0, **kwargs)
        assert not any("/" in key for key in report["selection"])
    # A constant column: no protocol can report it, the joint candidates still answer.
    W = workloads.marginals({"a": [0], "b": [0, 1, 2]}, k=1)
    _, report = build_mechanism("auto", (1, 3), 1.0, workload=W, multi_attribute=True,
                                max_iter=5)
    assert not any("/" in key for key in report["selection"])


def simulate_histograms(mechanism, records, repeats, seed):
    estimates = []
    for repeat in range(repeats):
        rng = np.random.default_rng(seed + repeat)
        counts = mechanism.estimate(mechanism.aggregate(mechanism.randomize(records, rng)))
        estimates.append(np.concatenate(counts))
    return np.array(estimates)


@pytest.mark.parametrize("shape,epsilon", [((5,) * 8, 1.0), ((4,) * 10, 0.5), (SURVEY, 2.0)])
def test_the_pick_has_its_analytic_error_in_simulation(shape, epsilon):
    W = workloads.marginals(domain_of(shape), k=1)
    mechanism, report = build_mechanism("auto", shape, epsilon, workload=W,
                                        multi_attribute=True)
    assert "protocol" in report
    n = 4000
    rng = np.random.default_rng(11)
    records = np.column_stack([rng.choice(k, size=n, p=rng.dirichlet(np.ones(k)))
                               for k in shape])
    truth = np.concatenate([np.bincount(records[:, i], minlength=k)
                            for i, k in enumerate(shape)])
    variance = np.concatenate([mechanism.count_variance(i, np.bincount(records[:, i],
                                                                       minlength=k) / n, n)
                               for i, k in enumerate(shape)])
    answers = simulate_histograms(mechanism, records, 200, 100)
    check_unbiased_and_variance(answers, truth, variance)
    # The total, the number auto compared, at the worst case for these data.
    total = answers.var(axis=0, ddof=1).sum()
    assert total <= report["expected_error"]["worst_case"] * n * 1.1
    assert total == pytest.approx(variance.sum(), rel=0.1)


# ---------------------------------------------------------------------- the encoder
CATEGORIES = {f"c{i}": list(range(k)) for i, k in enumerate(SURVEY)}
ONE_WAY = workloads.marginals(CATEGORIES, k=1)


def mixed_encoder(**params):
    return LDPEncoder(categories=CATEGORIES, bounds={"age": (0, 100)}, **params)


def test_mixed_record_auto_reports_the_categorical_columns_by_the_best_protocol():
    encoder = mixed_encoder(strategy="auto", epsilon=2.0, workload=ONE_WAY).fit()
    selection = encoder.selection_
    assert set(selection.index) == {"per_column"} | {f"{p}/{o}" for p in ORACLES
                                                     for o in ORACLES[p]}
    best = selection["worst_case"].idxmin()
    assert selection.loc[best, "status"] == "chosen"
    assert (selection["status"] == "chosen").sum() == 1
    protocol, oracle = best.split("/")
    budget = encoder.column_budget_
    assert set(budget.loc[[f"c{i}" for i in range(10)], "strategy"]) == {protocol}
    assert budget.loc["age", "strategy"] == "hybrid"
    # Equal shares: the ten categorical columns together get 10/11 of epsilon.
    assert budget.loc["c0", "epsilon"] == pytest.approx(2.0 * 10 / 11)
    assert encoder.epsilon_ == pytest.approx(2.0)
    assert encoder.strategy_ == "mixed"
    counts, _, _ = columns_error(encoder.mechanism_)
    assert counts[0] == pytest.approx(selection.loc[best, "worst_case"], rel=1e-12)
    # The reports decode.
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({f"c{i}": rng.integers(k, size=500) for i, k in enumerate(SURVEY)})
    frame["age"] = rng.uniform(0, 100, 500)
    histograms = AttributeHistogramEstimator().fit(encoder.transform(frame))
    assert len(histograms.histograms_) == 10


def test_mixed_record_keeps_the_users_split():
    weights = {f"c{i}": 1.0 for i in range(10)} | {"age": 5.0}
    cases = [{"strategy": "auto", "budget_weights": weights, "workload": ONE_WAY},
             {"strategy": {"age": "duchi"}, "workload": ONE_WAY},
             {"strategy": "auto"},  # no declared workload: one oracle per column, as ever
             {"strategy": "auto", "workload": workloads.marginals(CATEGORIES, k=2)}]
    for params in cases:
        encoder = mixed_encoder(epsilon=2.0, **params).fit()
        assert encoder.selection_.empty
        assert encoder.candidates_.empty
        assert set(encoder.column_budget_["strategy"]) <= {"randomized_response", "oue",
                                                          "duchi", "hybrid"}


def test_categorical_record_takes_the_protocol_auto_chose():
    # What fit does once it routes a protocol win of "auto" to the columns path.
    categories = domain_of((4,) * 10)
    W = workloads.marginals(categories, k=1)
    _, report = build_mechanism("auto", (4,) * 10, 1.0, workload=W, multi_attribute=True)
    encoder = LDPEncoder(categories=categories, strategy="auto", epsilon=1.0)
    encoder._fit_columns(None, 1.0, selection=report)
    protocol, oracle = report["protocol"]
    assert encoder.strategy_ == protocol
    part = encoder.mechanism_.parts[0]
    assert (part.mechanism.protocol, part.mechanism.oracle) == (protocol, oracle)
    assert encoder.selection_.loc[report["chosen"], "status"] == "chosen"
    assert encoder.candidates_.idxmin() == report["chosen"]
    assert encoder.selection_.loc["oue", "status"] == "skipped"  # the joint domain: 4^10
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({c: rng.integers(4, size=300) for c in categories})
    histograms = AttributeHistogramEstimator().fit(encoder.transform(frame))
    assert [round(float(h.sum())) for h in histograms.histograms_.values()] == [1] * 10


@pytest.mark.parametrize("shape, epsilon", [((4,) * 6, 0.5), ((4,) * 6, 4.0), ((2, 2), 4.0),
                                            ((3, 5, 2), 1.0)])
def test_fit_with_auto_routes_one_way_marginals_to_the_least_error_candidate(shape, epsilon):
    # Through LDPEncoder.fit itself: the chosen candidate is the least-error row of
    # selection_, and a protocol win reports one histogram per column.
    categories = domain_of(shape)
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({c: rng.integers(k, size=400)
                          for c, k in zip(categories, shape, strict=True)})
    encoder = LDPEncoder(categories=categories, workload=workloads.marginals(categories, k=1),
                         epsilon=epsilon, random_state=0).fit(frame)
    scored = encoder.selection_[encoder.selection_["status"].isin(["chosen", "scored"])]
    assert scored["worst_case"].idxmin() == scored.index[scored["status"] == "chosen"][0]
    chosen = scored.index[scored["status"] == "chosen"][0]
    reports = encoder.transform(frame)
    if "/" in chosen:  # a protocol/oracle pair
        assert encoder.strategy_ == chosen.split("/")[0]
        histograms = AttributeHistogramEstimator().fit(reports).histograms_
        assert len(histograms) == len(shape)
    else:
        assert encoder.strategy_ == chosen


# ---------------------------------------------------------------------- the scorer
def mean_variance(name, epsilon, bounds=(0, 100)):
    """Worst-case variance of one user's report of the mean, from the math layer (the grid
    law's: its quadratic's worst case plus the rounding step's, ``worst_case_variance``)."""
    mechanism = numeric_mechanism(name, epsilon, bounds)
    half = (bounds[1] - bounds[0]) / 2
    quadratic = float(mechanism.unit_variance(np.array([0.0, 1.0])).max()) * half ** 2
    worst = mechanism.worst_case_variance()
    assert quadratic <= worst <= quadratic * (1 + 1e-6)
    return worst


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 4.0])
def test_grid_search_picks_the_best_mean_strategy(epsilon):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"age": rng.uniform(0, 100, 300)})
    pipeline = make_pipeline(LDPEncoder(bounds={"age": (0, 100)}, epsilon=epsilon,
                                        random_state=0), MeanEstimator())
    strategies = ["duchi", "piecewise", "hybrid"]
    search = GridSearchCV(pipeline, {"ldpencoder__strategy": strategies},
                          scoring=expected_error_scorer(epsilon=epsilon), cv=2,
                          error_score="raise").fit(frame)
    analytic = {name: mean_variance(name, epsilon) for name in strategies}
    scores = dict(zip(strategies, search.cv_results_["mean_test_score"], strict=True))
    for name in strategies:
        assert scores[name] == pytest.approx(-analytic[name], rel=1e-9)
    assert analytic[search.best_params_["ldpencoder__strategy"]] == min(analytic.values())


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_grid_search_picks_the_best_protocol(epsilon):
    categories = domain_of((2, 3, 5, 8, 10))
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({c: rng.integers(len(v), size=300) for c, v in categories.items()})
    pipeline = make_pipeline(LDPEncoder(categories=categories, epsilon=epsilon,
                                        random_state=0), AttributeHistogramEstimator())
    grid = [{"ldpencoder__strategy": [protocol], "ldpencoder__oracle": list(oracles)}
            for protocol, oracles in ORACLES.items()]
    search = GridSearchCV(pipeline, grid, scoring=expected_error_scorer(epsilon=epsilon),
                          cv=2, error_score="raise").fit(frame)
    chosen, rows, _ = select_attribute_protocol((2, 3, 5, 8, 10), epsilon)
    best = search.best_params_
    assert f"{best['ldpencoder__strategy']}/{best['ldpencoder__oracle']}" == chosen
    assert search.best_score_ == pytest.approx(-rows[chosen]["worst_case"], rel=1e-12)


def test_scorer_on_mixed_records_and_its_refusals():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({f"c{i}": rng.integers(k, size=200) for i, k in enumerate(SURVEY)})
    frame["age"] = rng.uniform(0, 100, 200)
    scorer = expected_error_scorer(epsilon=2.0)
    scores = {}
    for name in ("duchi", "piecewise", "hybrid"):
        encoder = mixed_encoder(strategy={"age": name}, epsilon=2.0).fit(frame)
        counts, means, n_answers = columns_error(encoder.mechanism_)
        assert n_answers == sum(SURVEY) + 1
        scores[name] = scorer(encoder)
        assert scores[name] == pytest.approx(-(counts[0] + means[0]), rel=1e-12)
        # n_users: counts grow with N, means shrink.
        assert expected_error_scorer(epsilon=2.0, n_users=100)(encoder) == pytest.approx(
            -(100 * counts[0] + means[0] / 100), rel=1e-12)
    share = 2.0 / 11
    assert max(scores, key=scores.get) == min(
        ("duchi", "piecewise", "hybrid"), key=lambda name: mean_variance(name, share))
    encoder = mixed_encoder(strategy="auto", epsilon=2.0, workload=ONE_WAY).fit(frame)
    with pytest.raises(ValueError, match="workload=None"):
        expected_error_scorer(epsilon=2.0, workload="histogram")(encoder)
    with pytest.raises(ValueError, match="epsilon=2.0"):
        expected_error_scorer(epsilon=1.0)(encoder)
    square = LDPEncoder(bounds={"age": (0, 100)}, strategy="square_wave", epsilon=1.0).fit()
    with pytest.raises(ValueError, match="square_wave"):
        expected_error_scorer(epsilon=1.0)(square)


def test_grid_search_charges_the_ledger_once_per_fit(tmp_path):
    path = str(tmp_path / "ledger.json")
    PrivacyLedger.create(path, total_epsilon=100.0)
    categories = domain_of((2, 3, 5))
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({c: rng.integers(len(v), size=120) for c, v in categories.items()})
    pipeline = make_pipeline(LDPEncoder(categories=categories, epsilon=1.0, ledger=path,
                                        random_state=0), AttributeHistogramEstimator())
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no scoring failure hidden as a NaN score
        GridSearchCV(pipeline, {"ldpencoder__strategy": ["spl", "smp", "rsfd"]},
                     scoring=expected_error_scorer(epsilon=1.0), cv=3).fit(frame)
    entries = PrivacyLedger.open(path).to_frame()
    # Every fit privatizes its training fold once (3 candidates x 3 folds + the refit);
    # scoring reads the analytic error only and charges nothing.
    assert len(entries) == 3 * 3 + 1
    assert (entries["kind"] == "collection").all()
    assert np.allclose(entries["epsilon"], 1.0)
    # RS+FD declared at the attribute level charges its larger record-level epsilon.
    PrivacyLedger.create(str(tmp_path / "attribute.json"), total_epsilon=100.0)
    encoder = LDPEncoder(categories=categories, strategy="rsfd", neighbourhood="attribute",
                         epsilon=1.0, ledger=str(tmp_path / "attribute.json")).fit()
    encoder.transform(frame)
    charged = PrivacyLedger.open(str(tmp_path / "attribute.json")).to_frame()["epsilon"]
    assert charged.iloc[0] == pytest.approx(encoder.epsilon_) and encoder.epsilon_ > 1.0
