"""The renamed public names of issue 16, item 7 (one vocabulary), and their deprecations.

Each old name keeps working for one release with a FutureWarning that names the new one:

* the estimators' fitted ``counts_`` -> ``statistic_`` (the mechanism's aggregate);
* ``WorkloadEstimator(strategy_params={"branching" | "oracle" | "max_order": ...})`` -> the
  flat keywords, spelled as in ``LDPEncoder``;
* the size parameter ``n`` of the structured workloads -> ``n_cells``.

Also: ``MarginalEstimator.expected_error_`` starts with the package's ``worst_case`` /
``average_case`` columns, and ``FactorizationMechanism.fingerprint`` is the same in every
process.
"""

import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.estimator_checks import check_fit_check_is_fitted
from sklearn.utils.validation import check_is_fitted

from sklearn_ldp import (
    LDPEncoder,
    MarginalEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
    workloads,
)
from sklearn_ldp.mechanisms import FactorizationMechanism, HadamardResponse

DOM = {"x": list(range(8))}
MARGINAL_DOM = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"],
                "region": list("NESW")}


def _records(n, seed=0):
    return pd.DataFrame({"x": np.random.default_rng(seed).integers(0, 8, n)})


def _marginal_records(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: rng.choice(v, n) for c, v in MARGINAL_DOM.items()})


def _tree_reports(df):
    return LDPEncoder(categories=DOM, strategy="hierarchical", epsilon=1.0,
                      random_state=0).fit_transform(df)


def _marginal_reports(df, strategy="inp_ht"):
    return LDPEncoder(categories=MARGINAL_DOM, strategy=strategy, epsilon=1.1, max_order=2,
                      random_state=0).fit_transform(df)


def _fitted(kind, df):
    if kind == "marginal":
        return MarginalEstimator(), _marginal_reports(df)
    return (WorkloadEstimator() if kind == "workload" else RangeQueryEstimator()), \
        _tree_reports(df)


# ---------------------------------------------------------------------- counts_ -> statistic_
@pytest.mark.parametrize("kind", ["workload", "range", "marginal"])
def test_counts_warns_and_returns_the_statistic(kind):
    df = _marginal_records(3000) if kind == "marginal" else _records(3000)
    estimator, reports = _fitted(kind, df)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)  # fitting uses the new name only
        estimator.fit(reports)
    assert "counts_" not in vars(estimator)
    with pytest.warns(FutureWarning, match=r"counts_ is deprecated.*use statistic_"):
        old = estimator.counts_
    assert old is estimator.statistic_


@pytest.mark.parametrize("kind", ["workload", "range", "marginal"])
def test_unfitted_estimator_has_no_counts_and_is_not_fitted(kind):
    estimator = {"workload": WorkloadEstimator, "range": RangeQueryEstimator,
                 "marginal": MarginalEstimator}[kind]()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # hasattr on an unfitted estimator is silent
        assert not hasattr(estimator, "counts_")
        assert not hasattr(estimator, "statistic_")
    # The property is a class attribute: scikit-learn's fitted-ness test must not see it.
    with pytest.raises(NotFittedError):
        check_is_fitted(estimator)
    with pytest.raises(NotFittedError):
        check_is_fitted(estimator, "statistic_")


@pytest.mark.parametrize("estimator", [
    WorkloadEstimator(strategy="randomized_response", epsilon=1.0, random_state=0),
    RangeQueryEstimator(strategy="hierarchical", oracle="hrr", epsilon=1.0, random_state=0),
    MarginalEstimator(strategy="inp_ht", epsilon=1.0, random_state=0),
], ids=lambda e: type(e).__name__)
def test_sklearn_fit_check_is_fitted_check_passes(estimator):
    # The scikit-learn check that a property named like a fitted attribute could break:
    # unfitted, check_is_fitted raises; fitted on the check's own feature matrix (which
    # needs a strategy: a default estimator decodes reports only), it does not.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # categories read from the data
        check_fit_check_is_fitted(type(estimator).__name__, estimator)


@pytest.mark.parametrize("kind", ["workload", "range", "marginal"])
def test_partial_fit_accumulates_statistic(kind):
    df = _marginal_records(3000) if kind == "marginal" else _records(3000)
    whole, reports = _fitted(kind, df)
    whole.fit(reports)
    chunked, _ = _fitted(kind, df)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        for start in range(0, 3000, 1000):
            chunked.partial_fit(reports[start:start + 1000])
    np.testing.assert_array_equal(chunked.statistic_, whole.statistic_)
    assert chunked.n_users_ == whole.n_users_ == 3000


# ---------------------------------------------------------------------- flat keywords
def test_workload_estimator_flat_keywords_reach_the_encoder():
    df = _records(500)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        tree = WorkloadEstimator(strategy="hierarchical", epsilon=1.0, categories=DOM,
                                 random_state=0, branching=2, oracle="olh").fit(df)
    assert tree.encoder_.branching == 2 and tree.encoder_.oracle == "olh"
    dom = {"a": ["0", "1"], "b": ["0", "1", "2"], "c": ["0", "1"]}
    records = pd.DataFrame({c: np.random.default_rng(1).choice(v, 400) for c, v in dom.items()})
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        marginal = WorkloadEstimator(strategy="inp_rr", epsilon=1.0, categories=dom,
                                     random_state=0, max_order=1).fit(records)
    assert marginal.encoder_.max_order == 1
    assert marginal.mechanism_.params["max_order"] == 1


@pytest.mark.parametrize("key, value", [("branching", 2), ("oracle", "olh")])
def test_strategy_params_keys_warn_and_are_honoured(key, value):
    df = _records(500)
    settings = {"strategy": "hierarchical", "epsilon": 1.0, "categories": DOM,
                "random_state": 0}
    with pytest.warns(FutureWarning, match=rf"strategy_params=\{{'{key}'.*{key}=\.\.\."):
        old = WorkloadEstimator(strategy_params={key: value}, **settings).fit(df)
    new = WorkloadEstimator(**{key: value}, **settings).fit(df)
    assert getattr(old.encoder_, key) == value
    np.testing.assert_array_equal(old.statistic_, new.statistic_)
    np.testing.assert_array_equal(old.data_vector_, new.data_vector_)


def test_strategy_params_key_conflicting_with_the_keyword_is_refused():
    with pytest.warns(FutureWarning), pytest.raises(ValueError, match=r"branching=3 contradicts"):
        WorkloadEstimator(strategy="hierarchical", epsilon=1.0, categories=DOM, branching=3,
                          strategy_params={"branching": 2}).fit(_records(50))


def test_central_model_takes_the_flat_keywords():
    df = _records(400)
    settings = {"workload": workloads.prefix(8), "strategy": "hierarchical", "epsilon": 1.0,
                "delta": 1e-5, "categories": DOM, "random_state": 0}
    with pytest.warns(FutureWarning, match="branching"):
        old = WorkloadEstimator(strategy_params={"branching": 4}, **settings).fit(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new = WorkloadEstimator(branching=4, **settings).fit(df)
        default = WorkloadEstimator(**settings).fit(df)
    np.testing.assert_array_equal(old.strategy_matrix_, new.strategy_matrix_)
    # The central tree's default fan-out (2) is kept when the keyword is left at None.
    assert default.strategy_matrix_.shape[0] > new.strategy_matrix_.shape[0]
    with pytest.raises(ValueError, match="oracle='grr'.*central model"):
        WorkloadEstimator(oracle="grr", **settings).fit(df)


# ---------------------------------------------------------------------- workloads: n -> n_cells
@pytest.mark.parametrize("cls, extra", [
    (workloads.Identity, {}), (workloads.Total, {}), (workloads.Prefix, {}),
    (workloads.AllRange, {}), (workloads.Intervals, {"lo": [0, 2], "hi": [1, 3]}),
    (workloads.Parity, {"masks": [1, 2, 3], "bit_names": ["a", "b"]}),
])
def test_workload_n_keyword_warns_and_still_works(cls, extra):
    positional = cls(4, *extra.values())
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        keyword = cls(n_cells=4, **extra)
    with pytest.warns(FutureWarning, match=rf"{cls.__name__}\(\): the keyword 'n' is "
                                           r"deprecated.*use 'n_cells'"):
        old = cls(n=4, **extra)
    for workload in (keyword, old):
        assert workload.n_cells == 4
        np.testing.assert_array_equal(workload.toarray(), positional.toarray())
    with pytest.raises(TypeError, match="both 'n_cells' and its deprecated spelling 'n'"):
        cls(n=4, n_cells=4, **extra)


# ---------------------------------------------------------------------- mechanisms
def _mechanisms():
    Q = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])
    return [HadamardResponse(6, 1.0), FactorizationMechanism(Q, np.log(3))]


# ---------------------------------------------------------------------- stable fingerprint
def test_factorization_fingerprint_is_the_same_in_every_process():
    code = ("import numpy as np; from sklearn_ldp.mechanisms import FactorizationMechanism; "
            "Q = np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]); "
            "print(FactorizationMechanism(Q, np.log(3)).fingerprint())")
    # Different hash seeds: Python's hash() of bytes would differ between these processes.
    outputs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={"PYTHONHASHSEED": seed, "PATH": ""}).stdout
               for seed in ("1", "2")]
    assert outputs[0] == outputs[1]
    assert outputs[0].strip() == str(_mechanisms()[1].fingerprint())


# ---------------------------------------------------------------------- marginal expected_error_
@pytest.mark.parametrize("strategy", ["inp_ht", "inp_rr", "marg_ps", "marg_ht", "inp_em"])
def test_marginal_expected_error_has_the_package_columns_first(strategy):
    reports = _marginal_reports(_marginal_records(4000), strategy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=UserWarning)  # inp_em: EM's own warnings
        est = MarginalEstimator().fit(reports)
    table = est.expected_error_
    assert list(table.columns[:2]) == ["worst_case", "average_case"]
    assert list(table.columns[2:]) == ["order", "n_cells", "predicted_tv", "plug_in_tv"]
    assert bool(np.all(table["worst_case"] >= table["average_case"]))
    mechanism = est.mechanism_
    for key, positions in zip(table.index, _sets(mechanism), strict=True):
        uniform = float(np.sum(mechanism.marginal_variance(positions, est.n_users_)))
        assert table.loc[[key], "average_case"].item() == pytest.approx(uniform, rel=1e-12)


def _sets(mechanism):
    return [s for order in range(1, mechanism.params["max_order"] + 1)
            for s in mechanism.attribute_sets(order)]


def test_marginal_worst_case_matches_simulation_with_all_users_in_one_cell():
    # InpRR's variance is exact and the same for every data set: worst = average, and the
    # summed variance of the simulated tables with every user in cell 0 matches it.
    reports = _marginal_reports(_marginal_records(2000), "inp_rr")
    est = MarginalEstimator(postprocess="none").fit(reports)
    mechanism, n_users = est.mechanism_, est.n_users_
    np.testing.assert_allclose(est.expected_error_["worst_case"],
                               est.expected_error_["average_case"], rtol=1e-12)
    type_counts = np.zeros(mechanism.n_cells, dtype=np.int64)
    type_counts[0] = n_users
    rng = np.random.default_rng(7)
    replicates = 600
    tables = np.array([mechanism.estimate_marginal(
        mechanism.simulate_statistic(type_counts, rng), (0, 2)).ravel()
        for _ in range(replicates)])
    summed = float(tables.var(axis=0, ddof=1).sum())
    predicted = est.expected_error_.loc[[("age", "region")], "worst_case"].item()
    # Each cell's sample variance has relative sd sqrt(2 / (R - 1)); so has their sum at most
    # (perfectly correlated cells): a 5-sd band.
    assert abs(summed / predicted - 1) < 5 * np.sqrt(2 / (replicates - 1))
