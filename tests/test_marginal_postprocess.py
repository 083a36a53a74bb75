"""MarginalEstimator's ``postprocess`` option (issue 16, item 6): none, clip, consistent.

The default must return valid distributions (non-negative, summing to 1, total variation at
most 1, and for "consistent" agreeing on shared attributes to 1e-9); "none" is the unbiased
estimate itself; the deprecated ``consistency`` parameter warns and maps onto ``postprocess``.
"""

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from sklearn_ldp import LDPEncoder
from sklearn_ldp.estimators import MarginalEstimator
from sklearn_ldp.estimators.marginal import DEFAULT_POSTPROCESS, POSTPROCESS
from sklearn_ldp.mechanisms.marginals.base import MARGINAL_STRATEGIES
from sklearn_ldp.postprocess import consistent_marginals, marginalize

DOM = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"], "region": list("NESW"),
       "income": ["low", "mid", "high"]}
UNBIASED = tuple(s for s in MARGINAL_STRATEGIES if s != "inp_em")


def _data(n_users, seed):
    """Skewed, correlated records: smoking and income depend on age; region is skewed."""
    rng = np.random.default_rng(seed)
    age = rng.choice(3, n_users, p=[0.5, 0.3, 0.2])
    smoker = (rng.random(n_users) < 0.1 + 0.25 * age).astype(int)
    region = rng.choice(4, n_users, p=[0.55, 0.25, 0.15, 0.05])
    income = np.minimum(age + (rng.random(n_users) < 0.3), 2)
    codes = {"age": age, "smoker": smoker, "region": region, "income": income}
    return pd.DataFrame({c: np.asarray(DOM[c])[codes[c]] for c in DOM})


def _truth(df, columns):
    codes = [pd.Categorical(df[c], categories=DOM[c]).codes for c in columns]
    shape = [len(DOM[c]) for c in columns]
    flat = np.ravel_multi_index(codes, shape)
    return np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape) / len(df)


def _fit(strategy, epsilon, n_users=1500, seed=1, **params):
    """A small noisy collection (its unbiased tables have negative cells), fitted."""
    df = _data(n_users, seed)
    encoder = LDPEncoder(categories=DOM, strategy=strategy, epsilon=epsilon, max_order=2,
                         random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # inp_em at small eps
        return df, MarginalEstimator(**params).fit(encoder.fit_transform(df))


def _tv(a, b):
    return 0.5 * float(np.abs(a - b).sum())


# ---------------------------------------------------------------- the default is valid
@pytest.mark.parametrize("strategy", MARGINAL_STRATEGIES)
def test_default_output_is_a_set_of_consistent_distributions(strategy):
    df, est = _fit(strategy, epsilon=0.5)
    assert est.postprocess == DEFAULT_POSTPROCESS == est.postprocess_ == "consistent"
    if strategy != "inp_em":  # the input is invalid: the checks below have something to fix
        assert min(t.min() for t in est.unbiased_marginals_.values()) < 0
    for key, table in est.marginals_.items():
        assert table.min() >= 0.0, key
        assert abs(table.sum() - 1.0) <= 1e-9, key
        assert _tv(table, _truth(df, key)) <= 1.0
    # Every 2-way table's margins are the 1-way tables, so two pairs sharing an attribute
    # agree with each other.
    for key in (k for k in est.marginals_ if len(k) == 2):
        for column in key:
            np.testing.assert_allclose(marginalize(est.marginals_[key], key, (column,)),
                                       est.marginals_[(column,)], rtol=0, atol=1e-9)
    # Counts: the same tables times N (they sum to N).
    counts, = est.predict([("age", "region")], output="count")
    assert counts.min() >= 0 and counts.sum() == pytest.approx(len(df), abs=1e-6)


@pytest.mark.parametrize("strategy", ["inp_ps", "marg_rr", "inp_ht"])
def test_clip_is_clip_and_normalize_of_every_table(strategy):
    _, est = _fit(strategy, epsilon=0.5, postprocess="clip")
    negative = 0
    for key, table in est.marginals_.items():
        unbiased = est.unbiased_marginals_[key]
        negative += int((unbiased < 0).any())
        expected = np.clip(unbiased, 0, None) / np.clip(unbiased, 0, None).sum()
        np.testing.assert_allclose(table, expected, rtol=0, atol=1e-15)
        assert table.min() >= 0 and abs(table.sum() - 1) <= 1e-12
    assert negative > 0


def test_order_one_collections_are_valid_too():
    df = _data(800, 2)
    # A seed whose unbiased tables have a negative entry (11 of the seeds 0..11 do), so that
    # the projection has something to do.
    enc = LDPEncoder(categories=DOM, strategy="marg_ps", epsilon=0.5, max_order=1,
                     random_state=0)
    reports = enc.fit_transform(df)
    consistent = MarginalEstimator().fit(reports)
    clip = MarginalEstimator(postprocess="clip").fit(reports)
    assert min(t.min() for t in consistent.unbiased_marginals_.values()) < 0
    for key, table in consistent.marginals_.items():
        # One table per attribute, nothing shared: the projection of a distribution onto the
        # distributions is itself, so both options agree.
        assert table.min() >= 0 and abs(table.sum() - 1) <= 1e-9
        np.testing.assert_allclose(table, clip.marginals_[key], atol=1e-9)


# ---------------------------------------------------------------- "none" and the error table
@pytest.mark.parametrize("strategy", UNBIASED)
def test_none_is_the_unbiased_estimate_exactly(strategy):
    _, est = _fit(strategy, epsilon=1.0, postprocess="none")
    assert est.postprocess_ == "none"
    counts = est.statistic_
    for key, table in est.marginals_.items():
        positions = tuple(est.attributes_.index(c) for c in key)
        np.testing.assert_array_equal(table, est.mechanism_.estimate_marginal(counts, positions))
        np.testing.assert_array_equal(table, est.unbiased_marginals_[key])
    fractions, = est.predict([("smoker", "age")])
    np.testing.assert_array_equal(fractions.to_numpy(),
                                  est.unbiased_marginals_[("age", "smoker")].T.ravel())


def test_none_keeps_the_em_tables_of_inp_em():
    _, est = _fit("inp_em", epsilon=2.0, postprocess="none")
    for key, table in est.marginals_.items():
        np.testing.assert_array_equal(table, est.decoded_marginals_[key])
    assert any(not np.allclose(est.marginals_[k], est.unbiased_marginals_[k])
               for k in est.marginals_)


def test_expected_error_is_labelled_as_the_unbiased_tables_error():
    df = _data(2000, 4)
    reports = LDPEncoder(categories=DOM, strategy="marg_ps", epsilon=1.0,
                         random_state=5).fit_transform(df)
    tables = {option: MarginalEstimator(postprocess=option).fit(reports).expected_error_
              for option in POSTPROCESS}
    for option in POSTPROCESS:
        assert tables[option].columns.name == "error of unbiased_marginals_"
        assert list(tables[option].columns) == ["worst_case", "average_case", "order",
                                                "n_cells", "predicted_tv", "plug_in_tv"]
        pd.testing.assert_frame_equal(tables[option], tables["none"])  # same numbers


def test_chi2_test_ignores_postprocess():
    df = _data(3000, 6)
    reports = LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=1.0,
                         random_state=7).fit_transform(df)
    results = [MarginalEstimator(postprocess=option).fit(reports)
               .chi2_test("age", "smoker", n_simulations=200, random_state=0)
               for option in POSTPROCESS]
    assert results[0] == results[1] == results[2]


# ---------------------------------------------------------------- measured error
def test_post_processing_lowers_the_error_and_consistent_is_best():
    """Fixed seeds: the mean TV of the 2-way tables over 6 collections, per option."""
    df = _data(4000, 8)
    pairs = list(itertools.combinations(DOM, 2))
    truths = {pair: _truth(df, pair) for pair in pairs}
    for strategy in ("marg_ps", "inp_rr"):
        enc = LDPEncoder(categories=DOM, strategy=strategy, epsilon=1.0, max_order=2,
                         random_state=9).fit()
        tv = {option: [] for option in POSTPROCESS}
        for _ in range(6):
            statistic = enc.simulate(df)
            for option in POSTPROCESS:
                fitted = MarginalEstimator(postprocess=option).fit(statistic)
                tv[option] += [_tv(fitted.marginals_[p], truths[p]) for p in pairs]
        mean = {option: np.mean(values) for option, values in tv.items()}
        assert mean["consistent"] < mean["clip"] < mean["none"], (strategy, mean)
        assert max(tv["consistent"]) <= 1.0


# ---------------------------------------------------------------- parameters
def test_bad_postprocess_values_raise_naming_the_value():
    reports = LDPEncoder(categories=DOM, strategy="inp_ht",
                         random_state=0).fit_transform(_data(300, 10))
    for bad in ["Clip", "projected", "", None, True, 1, ("clip",)]:
        estimator = MarginalEstimator(postprocess=bad)  # stored, checked at fit
        assert estimator.get_params()["postprocess"] is bad
        with pytest.raises(ValueError, match=r"postprocess must be one of .*got "
                                             + _escaped(repr(bad))):
            estimator.fit(reports)
        assert not hasattr(estimator, "marginals_")


def _escaped(text):
    import re

    return re.escape(text)


def test_parameters_are_stored_unchanged_and_set_params_refits():
    reports = LDPEncoder(categories=DOM, strategy="marg_ps", epsilon=0.5,
                         random_state=11).fit_transform(_data(1000, 12))
    estimator = MarginalEstimator(postprocess="clip")
    params = estimator.get_params()
    assert params["postprocess"] == "clip" and "consistency" not in params
    assert clone(estimator).get_params() == params
    estimator.fit(reports)
    assert estimator.get_params() == params  # fit changes no parameter
    clipped = {k: v.copy() for k, v in estimator.marginals_.items()}
    estimator.set_params(postprocess="none").fit(reports)
    assert estimator.postprocess_ == "none"
    assert any(not np.allclose(clipped[k], estimator.marginals_[k]) for k in clipped)


# ---------------------------------------------------------------- the projection itself
def test_consistent_marginals_polish_makes_the_constraints_exact():
    rng = np.random.default_rng(0)
    shape = (3, 2, 4, 3, 6)
    joint = rng.dirichlet(np.full(int(np.prod(shape)), 0.3)).reshape(shape)
    keys = list(itertools.combinations(range(5), 2))
    noisy = {k: marginalize(joint, tuple(range(5)), k)
             + rng.normal(0.0, 1.0, [shape[a] for a in k]) for k in keys}

    def violation(tables):
        shared = max(float(np.abs(marginalize(tables[k], k, (a,))
                                  - marginalize(tables[j], j, (a,))).max())
                     for k, j in itertools.combinations(keys, 2) for a in set(k) & set(j))
        return max(shared, max(abs(float(t.sum()) - 1.0) for t in tables.values()))

    # OSQP (cvxpy's default quadratic solver) stops at its 1e-5 tolerance on this input.
    raw = consistent_marginals(noisy, solver="OSQP", polish=False)
    polished = consistent_marginals(noisy, solver="OSQP")
    assert violation(raw) > 1e-7
    assert violation(polished) <= 1e-12
    assert min(t.min() for t in polished.values()) >= 0.0
    # Polishing moves the solution by about the solver's tolerance, not more.
    assert max(np.abs(raw[k] - polished[k]).max() for k in keys) < 1e-3


def test_polish_falls_back_to_a_feasible_point_when_the_active_set_is_wrong():
    from sklearn_ldp.postprocess import _consistency_system, _polish

    rng = np.random.default_rng(1)
    shape = (2, 3, 2)
    joint = rng.dirichlet(np.ones(12)).reshape(shape)
    keys = list(itertools.combinations(range(3), 2))
    sets, offsets, A, b = _consistency_system(keys, dict(enumerate(shape)))
    x = np.concatenate([marginalize(joint, (0, 1, 2), s).ravel() for s in sets])
    n_observed = sum(int(np.prod([shape[a] for a in key])) for key in keys)
    near = x + np.where(np.arange(x.size) < n_observed, 1e-6 * rng.standard_normal(x.size), 0)
    assert np.abs(A @ near - b).max() > 1e-8
    y = near[:n_observed]
    # Multipliers above every cell claim all cells belong at 0: infeasible, so the polish
    # must return the solver's point made feasible instead.
    result = _polish(near, A, b, y, n_observed, np.ones(n_observed),
                     multipliers=np.full(n_observed, 10.0))
    assert np.abs(A @ result - b).max() <= 1e-12
    assert result[:n_observed].min() >= 0.0
    assert np.abs(result - near).max() < 1e-5
    # With the solver's true multipliers (none active: every cell is positive) the polish
    # finds the exact optimum: the projection of y, here the point itself up to 1e-6.
    exact = _polish(near, A, b, y, n_observed, np.ones(n_observed),
                    multipliers=np.zeros(n_observed))
    assert np.abs(A @ exact - b).max() <= 1e-12
    assert np.sum((exact[:n_observed] - y) ** 2) <= np.sum((result[:n_observed] - y) ** 2)


# ---------------------------------------------------------------- what expected_error_ describes
@pytest.mark.parametrize("strategy, option, kind", [
    ("inp_ht", "none", "output"),            # the unbiased tables are returned
    ("inp_ht", "clip", "unbiased_estimate"),
    ("marg_rr", "consistent", "unbiased_estimate"),
    ("inp_em", "none", "unbiased_estimate"),  # predict returns EM's tables, not the unbiased
    ("inp_em", "consistent", "unbiased_estimate"),
])
def test_expected_error_kind(strategy, option, kind):
    _, est = _fit(strategy, 1.0, postprocess=option)
    assert est.expected_error_kind_ == kind
    assert est.expected_error_.attrs["expected_error_kind"] == kind
    assert est.expected_error_.columns.name == "error of unbiased_marginals_"
    returns_unbiased = all(np.array_equal(est.marginals_[key], est.unbiased_marginals_[key])
                           for key in est.marginals_)
    assert returns_unbiased == (kind == "output")
