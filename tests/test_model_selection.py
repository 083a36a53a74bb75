"""expected_error_scorer: strategy selection by analytic expected error (issue 16, item 5)."""

import functools
import pickle

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_ldp import LDPEncoder, WorkloadEstimator, expected_error_scorer, workloads
from sklearn_ldp.deploy.budget import PrivacyLedger, register_ledger, unregister_ledger
from sklearn_ldp.model_selection import ExpectedErrorScorer

DOMAIN = {"x": [f"v{i:02d}" for i in range(16)]}
PREFIX = workloads.prefix(DOMAIN)
STRATEGIES = ["randomized_response", "oue", "hadamard", "hrr", "hierarchical", "haar"]


def _records(n, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"x": rng.choice(DOMAIN["x"], n)})


def _encoder(strategy="haar", epsilon=1.0, workload=PREFIX, **params):
    return LDPEncoder(categories=DOMAIN, strategy=strategy, epsilon=epsilon, workload=workload,
                      random_state=0, **params)


def _independent_variances(strategy, epsilon=1.0, workload=PREFIX):
    """Per-user variance of each user type, summed query by query from the dense rows of
    the workload (``query_variance``), not through the Gram operator the scorer uses."""
    mechanism = _encoder(strategy, epsilon, workload).fit().mechanism_
    return mechanism.query_variance(workload.toarray()).sum(axis=0)


@functools.lru_cache(maxsize=None)
def _fitted_encoders():
    return tuple(_encoder(name).fit() for name in STRATEGIES)


@pytest.mark.parametrize("kind, reduce", [("worst_case", np.max), ("average_case", np.mean)])
def test_grid_search_picks_the_least_analytic_error(kind, reduce):
    expected = {name: float(reduce(_independent_variances(name))) for name in STRATEGIES}
    search = GridSearchCV(_encoder(), {"strategy": STRATEGIES}, cv=2, error_score="raise",
                          scoring=expected_error_scorer(epsilon=1.0, kind=kind))
    search.fit(_records(20))
    assert search.best_params_["strategy"] == min(expected, key=expected.get)
    # Every candidate's score is minus its error, the same on every fold.
    scores = dict(zip(search.cv_results_["param_strategy"],
                      search.cv_results_["mean_test_score"], strict=True))
    for name in STRATEGIES:
        assert scores[name] == pytest.approx(-expected[name], rel=1e-9)
    assert np.all(search.cv_results_["std_test_score"] == 0.0)


def test_the_choice_differs_by_workload():
    """The scorer reads the workload: on the histogram the least error is OUE's, not Haar's."""
    search = GridSearchCV(_encoder(workload="histogram"), {"strategy": STRATEGIES}, cv=2,
                          scoring=expected_error_scorer(epsilon=1.0), error_score="raise")
    expected = {name: _independent_variances(name, workload=workloads.histogram(DOMAIN)).max()
                for name in STRATEGIES}
    assert search.fit(_records(20)).best_params_["strategy"] == min(expected, key=expected.get)
    assert min(expected, key=expected.get) != "haar"


def test_pipeline_value_equals_the_fitted_expected_total_error():
    records = _records(3000)
    pipe = make_pipeline(_encoder("hierarchical"), WorkloadEstimator()).fit(records)
    estimator = pipe[-1]
    z = _independent_variances("hierarchical")
    assert expected_error_scorer(epsilon=1.0)(pipe, records) == pytest.approx(-z.max(), rel=1e-9)
    scored = expected_error_scorer(epsilon=1.0, n_users=estimator.n_users_)(pipe, records)
    assert scored == pytest.approx(-estimator.expected_total_error_["worst_case"], rel=1e-9)
    mean = expected_error_scorer(epsilon=1.0, kind="average_case", per_query=True)(pipe)
    assert mean == pytest.approx(-z.mean() / PREFIX.n_queries, rel=1e-9)
    ranges = workloads.all_range(DOMAIN)  # 136 queries over 16 cells
    z_ranges = _independent_variances("hierarchical", workload=ranges)
    mean = expected_error_scorer(epsilon=1.0, workload=ranges, per_query=True)(pipe)
    assert mean == pytest.approx(-z_ranges.max() / 136, rel=1e-9)
    # The estimator fitted on the reports alone holds the same mechanism.
    assert expected_error_scorer(epsilon=1.0)(estimator) == pytest.approx(-z.max(), rel=1e-9)


def test_pipeline_search_matches_the_encoder_search():
    records = _records(600)
    pipe = make_pipeline(_encoder(), WorkloadEstimator())
    scorer = expected_error_scorer(epsilon=1.0)
    by_pipe = GridSearchCV(pipe, {"ldpencoder__strategy": STRATEGIES}, cv=2, scoring=scorer,
                           error_score="raise").fit(records)
    by_encoder = GridSearchCV(_encoder(), {"strategy": STRATEGIES}, cv=2, scoring=scorer,
                              error_score="raise").fit(records)
    assert by_pipe.best_params_["ldpencoder__strategy"] == by_encoder.best_params_["strategy"]
    np.testing.assert_allclose(by_pipe.cv_results_["mean_test_score"],
                               by_encoder.cv_results_["mean_test_score"], rtol=1e-12)


def test_the_final_estimator_workload_is_scored_by_default():
    """The Pipeline answers the histogram though the encoder was built for prefixes."""
    records = _records(500)
    pipe = make_pipeline(_encoder("oue"), WorkloadEstimator(workload="histogram")).fit(records)
    histogram = workloads.histogram(DOMAIN)
    expected = -_independent_variances("oue", workload=histogram).max()
    assert expected_error_scorer(epsilon=1.0)(pipe) == pytest.approx(expected, rel=1e-9)
    # An explicit workload wins, by name, as a Workload or as a matrix.
    prefix_error = -_independent_variances("oue").max()
    for workload in ("prefix", PREFIX, PREFIX.toarray()):
        value = expected_error_scorer(epsilon=1.0, workload=workload)(pipe)
        assert value == pytest.approx(prefix_error, rel=1e-9)


def test_varying_epsilon_is_refused():
    scorer = expected_error_scorer(epsilon=1.0)
    with pytest.raises(ValueError, match=r"epsilon=2\.0.*policy"):
        scorer(_encoder(epsilon=2.0).fit())
    grid = {"strategy": ["oue", "haar"], "epsilon": [0.5, 1.0, 2.0]}
    with pytest.raises(ValueError, match="not a hyperparameter"):
        GridSearchCV(_encoder(), grid, cv=2, scoring=scorer,
                     error_score="raise").fit(_records(20))


@pytest.mark.filterwarnings("ignore:One or more of the test scores are non-finite")
def test_varying_epsilon_warns_under_the_default_error_score():
    """scikit-learn turns the refusal into a NaN score and a warning naming the reason; only
    the declared budget's candidates are ranked, never the largest epsilon."""
    grid = {"strategy": ["oue", "haar"], "epsilon": [1.0, 4.0]}
    search = GridSearchCV(_encoder(), grid, cv=2, scoring=expected_error_scorer(epsilon=1.0))
    with pytest.warns(UserWarning, match="privacy policy"):
        search.fit(_records(20))
    assert search.best_params_ == {"epsilon": 1.0, "strategy": "haar"}
    refused = np.asarray(search.cv_results_["param_epsilon"], dtype=float) == 4.0
    assert np.isnan(search.cv_results_["mean_test_score"][refused]).all()


def test_delta_may_be_smaller_than_declared_never_larger():
    gaussian = _encoder("gaussian", delta=1e-6).fit()
    with pytest.raises(ValueError, match="delta=1e-06"):
        expected_error_scorer(epsilon=1.0)(gaussian)
    lenient = expected_error_scorer(epsilon=1.0, delta=1e-6)
    assert np.isfinite(lenient(gaussian))
    assert np.isfinite(lenient(_encoder("haar").fit()))  # pure epsilon-LDP meets the policy
    with pytest.raises(ValueError, match="delta"):
        expected_error_scorer(epsilon=1.0, delta=1e-9)(gaussian)


def test_a_candidate_that_cannot_answer_scores_minus_infinity():
    dom = {"a": ["0", "1"], "b": ["0", "1", "2"], "c": ["0", "1"]}
    first_order = LDPEncoder(categories=dom, strategy="fourier", max_order=1,
                             workload=workloads.marginals(dom, k=1)).fit()
    scorer = expected_error_scorer(epsilon=1.0, workload=workloads.marginals(dom, k=2))
    assert scorer(first_order) == -np.inf
    assert np.isfinite(expected_error_scorer(epsilon=1.0)(first_order))


@settings(max_examples=60, deadline=None)
@given(n_users=st.integers(min_value=1, max_value=10**12), per_query=st.booleans(),
       kind=st.sampled_from(["worst_case", "average_case"]))
def test_n_users_scales_every_score_and_never_the_ranking(n_users, per_query, kind):
    encoders = _fitted_encoders()
    base = np.array([expected_error_scorer(epsilon=1.0, kind=kind)(e) for e in encoders])
    scaled = np.array([expected_error_scorer(epsilon=1.0, kind=kind, n_users=n_users,
                                             per_query=per_query)(e) for e in encoders])
    factor = n_users / (PREFIX.n_queries if per_query else 1)
    np.testing.assert_allclose(scaled, factor * base, rtol=1e-12)
    np.testing.assert_array_equal(np.argsort(-scaled, kind="stable"),
                                  np.argsort(-base, kind="stable"))


def test_errors_name_the_field_and_value():
    with pytest.raises(TypeError):
        expected_error_scorer()  # the budget must be stated
    with pytest.raises(ValueError, match="epsilon"):
        expected_error_scorer(epsilon=0)
    with pytest.raises(ValueError, match="kind.*'median'"):
        expected_error_scorer(epsilon=1.0, kind="median")
    with pytest.raises(ValueError, match="n_users.*0"):
        expected_error_scorer(epsilon=1.0, n_users=0)
    with pytest.raises(ValueError, match="delta.*1.5"):
        expected_error_scorer(epsilon=1.0, delta=1.5)
    with pytest.raises(ValueError, match="workload.*'ranges'"):
        expected_error_scorer(epsilon=1.0, workload="ranges")
    with pytest.raises(TypeError, match="per_query"):
        expected_error_scorer(epsilon=1.0, per_query="yes")


def test_what_cannot_be_scored_is_refused():
    scorer = expected_error_scorer(epsilon=1.0)
    with pytest.raises(NotFittedError):
        scorer(_encoder())
    with pytest.raises(NotFittedError):
        scorer(make_pipeline(_encoder(), WorkloadEstimator()))
    with pytest.raises(TypeError, match="DataFrame"):
        scorer(pd.DataFrame())
    dom = {"a": ["0", "1"], "b": ["0", "1"]}
    marginal = LDPEncoder(categories=dom, strategy="inp_ht", max_order=2).fit()
    with pytest.raises(ValueError, match="workload="):
        scorer(marginal)
    with pytest.raises(ValueError, match="width|cells|columns"):
        expected_error_scorer(epsilon=1.0, workload=np.ones((2, 3)))(_encoder().fit())
    central = WorkloadEstimator(strategy="identity", epsilon=1.0, delta=1e-6,
                                categories=DOMAIN, random_state=0).fit(_records(100))
    with pytest.raises(ValueError, match="central"):
        scorer(central)


def test_the_scorer_is_stateless_picklable_and_readable():
    scorer = expected_error_scorer(epsilon=1.0, workload="prefix", n_users=10)
    assert isinstance(scorer, ExpectedErrorScorer)
    copy = pickle.loads(pickle.dumps(scorer))
    encoder = _encoder().fit()
    assert copy(encoder) == scorer(encoder)
    # Reused across budgets through one scorer per budget; a search does not change it.
    assert scorer(encoder) == scorer(encoder, _records(5), None)
    assert repr(scorer) == ("expected_error_scorer(epsilon=1.0, workload='prefix', "
                            "kind='worst_case', n_users=10)")


def test_searching_the_encoder_alone_spends_no_budget():
    """The encoder's fit is data-independent and the scorer reads no report: a search over
    the encoder alone collects nothing, while the same search over the Pipeline privatizes
    every training fold (charged to the ledger)."""
    ledger = PrivacyLedger(total_epsilon=100.0)
    register_ledger("test-model-selection", ledger, replace=True)
    try:
        scorer = expected_error_scorer(epsilon=1.0)
        encoder = _encoder(ledger="test-model-selection")
        search = GridSearchCV(encoder, {"strategy": ["oue", "haar"]}, cv=2, scoring=scorer,
                              error_score="raise").fit(_records(10))
        assert search.best_estimator_.strategy_ == "haar"
        assert ledger.spent().epsilon == 0.0
        pipe = make_pipeline(encoder, WorkloadEstimator())
        GridSearchCV(pipe, {"ldpencoder__strategy": ["oue", "haar"]}, cv=2, scoring=scorer,
                     error_score="raise", refit=False).fit(_records(10))
        assert ledger.spent().epsilon == pytest.approx(4.0)  # 2 candidates x 2 folds
    finally:
        unregister_ledger("test-model-selection")
