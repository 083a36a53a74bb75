"""Set-valued columns through LDPEncoder and SetFrequencyEstimator (SVIM)."""

import json

import numpy as np
import pandas as pd
import pytest
from _sklearn_checks import FITS_A_FEATURE_MATRIX
from sklearn.pipeline import make_pipeline

from sklearn_ldp import LDPEncoder, LDPReports, SetFrequencyEstimator
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism

ITEMS = [f"app{i}" for i in range(12)]
# scikit-learn's checks that fit a raw feature matrix: the default estimator decodes reports
# (tests/test_check_estimator_all.py).
EXPECTED_FAILED_DEFAULT = dict.fromkeys(
    FITS_A_FEATURE_MATRIX, "fit takes LDP reports (the output of LDPEncoder over a set-valued "
    "column), not a raw feature matrix")


def _frame(n_users, seed=0, max_size=4):
    """Sets of 1 .. max_size distinct items, the small items the most popular (weighted
    sampling without replacement by exponential keys); their codes in ``frame.attrs``."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, max_size + 1, size=n_users)
    popularity = np.linspace(2.0, 0.2, len(ITEMS))
    keys = rng.exponential(size=(n_users, len(ITEMS))) / popularity
    ranked = np.argsort(keys, axis=1)
    chosen = np.arange(len(ITEMS))[None, :] < sizes[:, None]
    labels = np.asarray(ITEMS, dtype=object)
    cells = [set(labels[row[keep]]) for row, keep in zip(ranked, chosen, strict=True)]
    frame = pd.DataFrame({"apps": cells})
    frame.attrs["truth"] = np.bincount(ranked[chosen], minlength=len(ITEMS)) / n_users
    return frame


def _truth(frame):
    return pd.Series(frame.attrs["truth"], index=pd.Index(ITEMS, name="item"))


def test_pipeline_estimates_every_item_within_its_standard_error():
    frame = _frame(30_000)
    pipe = make_pipeline(LDPEncoder(categories={"apps": ("sets", ITEMS, 6)}, epsilon=2.0,
                                    random_state=1), SetFrequencyEstimator(top_k=3))
    estimator = pipe.fit(frame)[-1]
    encoder = pipe[0]
    assert encoder.strategy_ == "svim" and 1 <= encoder.pad_length_ <= 6
    # The size round's users (10%) report nothing else.
    assert estimator.n_reports_ == 30_000 - 3_000
    truth = _truth(frame)
    z = (estimator.frequencies_ - truth) / estimator.std_errors_
    # Sets longer than the pad length are undercounted (the paper's bias): only when the
    # pad length covers every set is the estimate unbiased.
    if encoder.pad_length_ >= 4:
        assert np.all(np.abs(z) < 5), z
    assert list(estimator.top_items_.index[:1]) == ["app0"]
    assert estimator.predict(["app3"]).shape == (1, 2)


def test_without_data_the_pad_length_is_the_cap_and_every_user_reports():
    frame = _frame(3000)
    encoder = LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}, epsilon=1.0,
                         random_state=0).fit()
    assert encoder.pad_length_ == 4
    reports = encoder.transform(frame)
    assert len(reports) == 3000
    estimator = SetFrequencyEstimator().fit(reports)
    z = (estimator.frequencies_ - _truth(frame)) / estimator.std_errors_
    assert np.all(np.abs(z) < 5), z


def test_new_users_all_report_items():
    encoder = LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}, random_state=0)
    encoder.fit(_frame(5000))
    assert len(encoder.transform(_frame(5000))) == 4500  # fit's users: the size round's out
    assert len(encoder.transform(_frame(700, seed=9))) == 700


def test_partial_fit_equals_one_fit():
    encoder = LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}, random_state=0).fit()
    first, second = encoder.transform(_frame(800, 1)), encoder.transform(_frame(900, 2))
    split = SetFrequencyEstimator().partial_fit(first).partial_fit(second)
    whole = SetFrequencyEstimator().fit(LDPReports.concat([first, second]))
    np.testing.assert_array_equal(split.statistic_, whole.statistic_)
    pd.testing.assert_series_equal(split.frequencies_, whole.frequencies_)


def test_client_spec_rebuilds_the_mechanism():
    encoder = LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}).fit()
    mechanism = SetItemMechanism.from_dict(json.loads(encoder.client_spec()))
    assert mechanism == encoder.mechanism_ and mechanism.items == ITEMS


def test_the_estimator_simulates_clients_with_a_strategy():
    frame = _frame(4000)
    estimator = SetFrequencyEstimator(strategy="svim", epsilon=2.0, random_state=0,
                                      categories={"apps": ("sets", ITEMS, 4)}).fit(frame)
    assert estimator.n_reports_ == 3600


@pytest.mark.parametrize("cells, message", [
    ([{"app0", "app1", "app2", "app3", "app4"}], "row 0 holds 5 items, more than max_set_size=4"),
    ([{"app0"}, {"app0", "nope"}], "row 1: the item 'nope' is not among the declared items"),
    ([["app1", "app2", "app1"]], "row 0 lists the item 'app1' twice"),
    ([{"app0"}, "app1"], "row 1: 'app1' is not a set of items"),
    ([{"app0"}, None], "row 1: None is not a set of items"),
])
def test_bad_cells_are_refused_naming_the_row_and_value(cells, message):
    encoder = LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}).fit()
    with pytest.raises(ValueError) as error:
        encoder.transform(pd.DataFrame({"apps": cells}))
    assert message in str(error.value)


@pytest.mark.parametrize("params, message", [
    ({"categories": {"apps": ("sets", ["a", "a"])}}, "the item 'a' is listed twice"),
    ({"categories": {"apps": ("sets", [])}}, "non-empty list"),
    ({"categories": {"apps": ("sets", ["a"], 0)}}, "max_set_size of column 'apps'"),
    ({"categories": {"apps": ("sets", ["a"], 5000)}}, "max_set_size of column 'apps'"),
    ({"categories": {"apps": ("sets", ["a"]), "b": ["x"]}}, "reported alone"),
    ({"categories": {"apps": ("sets", ["a"])}, "strategy": "oue"}, "strategy 'svim'"),
    ({"categories": {"apps": ("sets", ["a"])}, "oracle": "hrr"}, "oracle must be"),
    ({"categories": {"apps": ("sets", ["a"])}, "bounds": {"x": (0, 1)}}, "bounds="),
])
def test_bad_declarations_are_refused(params, message):
    with pytest.raises(ValueError) as error:
        LDPEncoder(**params).fit()
    assert message in str(error.value)


def test_the_estimator_refuses_other_reports():
    encoder = LDPEncoder(categories={"c": ["a", "b"]}, strategy="randomized_response").fit()
    reports = encoder.transform(pd.DataFrame({"c": ["a", "b"]}))
    with pytest.raises(ValueError, match="set-valued column"):
        SetFrequencyEstimator().fit(reports)


# ---------------------------------------------------------------- the standard-library client
def test_client_reports_decode_like_the_servers():
    from sklearn_ldp import reports_from_client
    from sklearn_ldp.deploy.client import Randomizer

    frame = _frame(4000, seed=3)
    encoder = LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}, epsilon=2.0).fit()
    with pytest.warns(UserWarning, match="seed"):
        client = Randomizer.from_json(encoder.client_spec(), seed=1)
    sent = [json.loads(json.dumps(client.privatize(cell))) for cell in frame["apps"]]
    estimator = SetFrequencyEstimator().fit(reports_from_client(sent, encoder.mechanism_))
    z = (estimator.frequencies_ - _truth(frame)) / estimator.std_errors_
    assert np.all(np.abs(z) < 5), z


@pytest.mark.parametrize("value, message", [
    (["app0", "app1", "app2", "app3", "app4"], "more than max_set_size=4"),
    (["app0", "nope"], "the item 'nope' is not among the declared items"),
    (["app1", "app1"], "the item 'app1' is listed twice"),
    ("app1", "a set or list of items"),
    (None, "a set or list of items"),
])
def test_client_refuses_bad_sets(value, message):
    from sklearn_ldp.deploy.client import Randomizer

    encoder = LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}).fit()
    client = Randomizer.from_json(encoder.client_spec())
    with pytest.raises(ValueError, match=message):
        client.privatize(value)


def test_client_refuses_an_edited_oracle():
    from sklearn_ldp.deploy.client import Randomizer

    spec = json.loads(LDPEncoder(categories={"apps": ("sets", ITEMS, 4)}).fit().client_spec())
    spec["oracle"]["n_inputs"] += 1
    with pytest.raises(ValueError, match="n_inputs \\+ pad_length"):
        Randomizer(spec)
