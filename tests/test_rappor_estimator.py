"""RAPPOR through the sklearn layer: LDPEncoder(strategy="rappor") on a "strings" column and
RapporEstimator."""

import math

import numpy as np
import pandas as pd
import pytest
from _sklearn_checks import FITS_A_FEATURE_MATRIX

from sklearn_ldp import (
    AggregatedReports,
    LDPEncoder,
    LDPReports,
    RapporEstimator,
    RapporMechanism,
)
from sklearn_ldp._encoder_rappor import rappor_for_epsilon
from sklearn_ldp.mechanisms import OptimizedUnaryEncoding

SITES = ["news.example", "mail.example", "video.example", "shop.example"]

# scikit-learn's checks fit a raw feature matrix; RapporEstimator decodes RAPPOR reports (and
# needs its candidates), so the checks that fit cannot apply (tests/test_check_estimator_all).
FIT_TAKES_RAPPOR_REPORTS = ("fit decodes the reports of a RAPPOR mechanism over a list of "
                            "candidate strings; a raw feature matrix is refused by design")
# The checks of malformed matrices (sparse, complex, empty) expect scikit-learn's own messages
# for them; RapporEstimator refuses every matrix with its own (it reads reports only).
EXPECTED_FAILED = dict.fromkeys(
    [*FITS_A_FEATURE_MATRIX, "check_complex_data", "check_estimator_sparse_array",
     "check_estimator_sparse_matrix", "check_estimator_sparse_tag",
     "check_estimators_empty_data_messages", "check_methods_sample_order_invariance",
     "check_methods_subset_invariance", "check_pipeline_consistency"],
    FIT_TAKES_RAPPOR_REPORTS)


def _frame(n=40_000, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"site": rng.choice(SITES, p=[0.5, 0.3, 0.15, 0.05], size=n)})


def test_strategy_rappor_on_strings_is_bloom_rappor_at_the_papers_parameters():
    encoder = LDPEncoder(categories={"site": "strings"}, strategy="rappor",
                         epsilon=4 * math.log(3), random_state=0).fit()
    mechanism = encoder.mechanism_
    assert isinstance(mechanism, RapporMechanism)
    assert (mechanism.n_bits, mechanism.n_hashes, mechanism.n_cohorts) == (128, 2, 64)
    assert (mechanism.f, mechanism.p, mechanism.q) == (0.5, 0.5, 0.75)
    assert encoder.strategy_ == "bloom_rappor"
    assert encoder.epsilon_ == mechanism.epsilon_inf <= 4 * math.log(3)
    # On listed categories, "rappor" stays symmetric unary encoding.
    listed = LDPEncoder(categories={"site": SITES}, strategy="rappor", epsilon=1.0).fit()
    assert listed.strategy_ == "rappor" and not isinstance(listed.mechanism_, RapporMechanism)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 4.0, 8.0])
def test_rappor_for_epsilon_is_within_and_tight(epsilon):
    mechanism = rappor_for_epsilon(epsilon)
    assert mechanism.epsilon_inf <= epsilon
    assert mechanism.epsilon_inf == pytest.approx(epsilon, rel=1e-9)


def test_encoder_and_estimator_find_the_sites():
    frame = _frame()
    encoder = LDPEncoder(categories={"site": "strings"}, strategy="rappor", epsilon=4.0,
                         random_state=1)
    reports = encoder.fit_transform(frame)
    assert isinstance(reports, LDPReports) and len(reports) == len(frame)
    candidates = [*SITES, "absent.example"]
    estimator = RapporEstimator(candidates=candidates).fit(reports)
    truth = frame["site"].value_counts(normalize=True).reindex(candidates, fill_value=0.0)
    errors = (estimator.frequencies_ - truth) / estimator.results_["std_error"].to_numpy()
    assert np.all(np.abs(errors) < 4.5)
    assert estimator.results_["detected"].tolist() == [True, True, True, True, False]
    assert estimator.heavy_hitters_["value"].tolist() == SITES
    assert estimator.n_reports_ == len(frame)
    assert estimator.bit_counts_.shape == (64, 128)


def test_partial_fit_and_aggregates_equal_one_fit():
    frame = _frame(6000)
    encoder = LDPEncoder(categories={"site": "strings"}, strategy="rappor", epsilon=4.0,
                         random_state=2).fit()
    reports = encoder.transform(frame)
    whole = RapporEstimator(candidates=SITES).fit(reports)
    parts = RapporEstimator(candidates=SITES).partial_fit(reports[:2500]).partial_fit(
        reports[2500:])
    pd.testing.assert_frame_equal(whole.results_, parts.results_)
    mechanism = encoder.mechanism_
    aggregated = AggregatedReports(mechanism.aggregate(reports.reports), mechanism)
    pd.testing.assert_frame_equal(whole.results_,
                                  RapporEstimator(candidates=SITES).fit(aggregated).results_)


def test_explicit_parameter_set():
    mechanism = RapporMechanism(n_bits=32, n_hashes=2, n_cohorts=8, f=0.25, p=0.25, q=0.75)
    encoder = LDPEncoder(categories={"site": "strings"}, strategy=mechanism, random_state=3)
    reports = encoder.fit_transform(_frame(20_000))
    assert encoder.mechanism_ == mechanism
    found = RapporEstimator(candidates=SITES).fit(reports)
    assert found.results_["detected"].all()


def test_hostile_inputs_name_the_value():
    reports = LDPEncoder(categories={"site": "strings"}, strategy="rappor", epsilon=4.0,
                         random_state=4).fit_transform(_frame(3000))
    with pytest.raises(ValueError, match="candidates=\\[...\\]"):
        RapporEstimator().fit(reports)
    with pytest.raises(ValueError, match="candidates\\[1\\] = 'x' is a duplicate"):
        RapporEstimator(candidates=["x", "x"]).fit(reports)
    with pytest.raises(ValueError, match="more than the 4096"):
        RapporEstimator(candidates=[str(i) for i in range(5000)]).fit(reports)
    with pytest.raises(ValueError, match="alpha"):
        RapporEstimator(candidates=["x"], alpha=0).fit(reports)
    other = LDPReports(np.zeros((3, 1), dtype=np.uint8), OptimizedUnaryEncoding(4, 1.0))
    with pytest.raises(ValueError, match="RapporMechanism"):
        RapporEstimator(candidates=["x"]).fit(other)
    with pytest.raises(ValueError, match="RapporMechanism"):
        RapporEstimator(candidates=["x"]).fit(np.zeros((3, 18), dtype=np.uint8))
    estimator = RapporEstimator(candidates=["x"]).fit(reports)
    second = LDPEncoder(categories={"site": "strings"}, strategy="rappor", epsilon=4.0,
                        random_state=5).fit_transform(_frame(100))  # another hash seed
    with pytest.raises(ValueError, match="not from the"):
        estimator.partial_fit(second)
    encoder = LDPEncoder(categories={"site": 32}, strategy="rappor", epsilon=4.0)
    with pytest.raises(ValueError, match="RAPPOR reports strings"):
        encoder.fit()
    encoder = LDPEncoder(categories={"site": "strings"}, strategy="rappor", epsilon=4.0,
                         sketch_width=64)
    with pytest.raises(ValueError, match="sketch_width=64"):
        encoder.fit()
    encoder = LDPEncoder(categories={"site": "strings"}, strategy="rappor", epsilon=4.0,
                         random_state=0).fit()
    with pytest.raises(ValueError, match="missing values"):
        encoder.transform(pd.DataFrame({"site": ["a", None]}))
    with pytest.raises(ValueError, match="more than max_string_bytes=64"):
        encoder.transform(pd.DataFrame({"site": ["a" * 65]}))
    with pytest.raises(TypeError, match="values\\[0\\] = 5"):
        encoder.transform(pd.DataFrame({"site": [5]}))
