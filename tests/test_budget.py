"""Privacy budget ledger: composition arithmetic, refusal, persistence, sharing, hooks."""

import json
import math
import subprocess
import sys
import textwrap
import time

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sklearn_ldp import (
    AdaptiveQueryEstimator,
    CountMechanism,
    LDPEncoder,
    MarginalEstimator,
    RangeQueryEstimator,
    WorkloadEstimator,
)
from sklearn_ldp.deploy.budget import (
    LEDGER_VERSION,
    Budget,
    BudgetExceededError,
    PrivacyLedger,
    _sealed,
    register_ledger,
    resolve_ledger,
    unregister_ledger,
)

DOM = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}


def _records(n_users=400, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({column: rng.choice(values, n_users) for column, values in DOM.items()})


@pytest.fixture
def ledger_path(tmp_path):
    """A fresh file ledger (total epsilon 10, delta 1e-3); returns its path as a string."""
    path = str(tmp_path / "budget.json")
    PrivacyLedger.create(path, total_epsilon=10.0, total_delta=1e-3, groups=["wave1", "wave2"])
    return path


def _spent_epsilons(path):
    return [entry["epsilon"] for entry in PrivacyLedger.open(path).entries]


# ---------------------------------------------------------------------- arithmetic
def test_sequential_composition_adds_epsilons_and_deltas():
    ledger = PrivacyLedger(total_epsilon=1.0, total_delta=1e-5)
    ledger.charge(0.25, description="first collection")
    ledger.charge(0.5, 4e-6, kind="release", description="a central release")
    assert ledger.spent() == Budget(0.75, 4e-6)
    assert ledger.remaining() == pytest.approx(Budget(0.25, 6e-6))
    ledger.charge(0.25, 6e-6, kind="release")  # exactly the rest: accepted
    assert ledger.remaining() == pytest.approx(Budget(0.0, 0.0))
    with pytest.raises(BudgetExceededError):
        ledger.charge(1e-6)
    with pytest.raises(BudgetExceededError):
        ledger.charge(0.0, 1e-9)  # delta alone can exhaust the budget
    assert [entry["kind"] for entry in ledger.entries] == ["collection", "release", "release"]


def test_float_rounding_does_not_refuse_an_exact_split_of_the_total():
    ledger = PrivacyLedger(total_epsilon=1.0)
    for _ in range(10):
        ledger.charge(0.1)  # sum() of ten 0.1 is 0.9999999999999999, fsum 1.0
    assert ledger.spent().epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        ledger.charge(1e-6)  # the tolerance is relative 1e-9, nothing more
    small = PrivacyLedger(total_epsilon=0.3)
    for _ in range(3):
        small.charge(0.1)  # 0.1 + 0.1 + 0.1 > 0.3 in binary floating point


def test_parallel_composition_over_disjoint_groups():
    ledger = PrivacyLedger(total_epsilon=1.0, groups=["a", "b"])
    ledger.charge(0.8, users="a")
    ledger.charge(0.8, users="b")  # another cohort: parallel, not 1.6
    assert ledger.spent("a") == Budget(0.8, 0.0)
    assert ledger.spent() == Budget(0.8, 0.0)  # the most charged person
    ledger.charge(0.2)  # everyone: a and b reach 1.0
    assert ledger.spent("a").epsilon == pytest.approx(1.0)
    assert ledger.remaining("b").epsilon == pytest.approx(0.0)
    with pytest.raises(BudgetExceededError):
        ledger.charge(0.1, users="a")
    with pytest.raises(BudgetExceededError):
        ledger.charge(0.1)  # everyone includes a and b
    ledger.add_groups("c")  # a new cohort has only the charges on everyone
    assert ledger.spent("c") == Budget(0.2, 0.0)
    ledger.charge(0.8, users="c")
    with pytest.raises(BudgetExceededError):
        ledger.charge(0.1, users="c")


def test_refusal_records_nothing_and_says_what_was_asked_spent_and_remaining():
    ledger = PrivacyLedger(total_epsilon=1.0, total_delta=1e-6, groups=["a"])
    ledger.charge(0.7, users="a", description="survey")
    before = ledger.to_dict()
    with pytest.raises(BudgetExceededError, match="asked epsilon=0.5") as caught:
        ledger.charge(0.5, users="a", description="second survey")
    message = str(caught.value)
    assert "already spent epsilon=0.7" in message and "remaining epsilon=0.3" in message
    assert "Nothing was recorded" in message and "'second survey'" in message
    assert isinstance(caught.value, ValueError)
    assert caught.value.requested == Budget(0.5, 0.0)
    assert caught.value.remaining == pytest.approx(Budget(0.3, 1e-6))
    assert caught.value.users == "a"
    assert ledger.to_dict() == before


def test_zero_charges_are_recorded_and_bad_charges_refused():
    ledger = PrivacyLedger(total_epsilon=1.0, groups=["a"])
    entry = ledger.charge(0.0, description="audit only")
    assert entry["epsilon"] == 0.0 and entry["id"] == 0 and entry["users"] == "all"
    assert entry["timestamp"].endswith("+00:00")  # UTC
    for bad, match in [(-0.1, ">= 0"), (math.nan, "finite"), (math.inf, "finite"),
                       ("1", "real number"), (True, "real number")]:
        with pytest.raises(ValueError, match=match):
            ledger.charge(bad)
    with pytest.raises(ValueError, match="delta must be < 1"):
        ledger.charge(0.1, 1.0)
    with pytest.raises(ValueError, match="kind must be one of"):
        ledger.charge(0.1, kind="query")
    with pytest.raises(ValueError, match=r"unknown group of users 'b'.*\['a'\]"):
        ledger.charge(0.1, users="b")  # a typo must not open a fresh budget
    with pytest.raises(ValueError, match="unknown group of users 'b'"):
        ledger.spent("b")
    assert len(ledger.entries) == 1


@pytest.mark.parametrize("kwargs, match", [
    ({"total_epsilon": 0}, "total_epsilon must be > 0"),
    ({"total_epsilon": -1}, "total_epsilon must be a finite number >= 0"),
    ({"total_epsilon": math.inf}, "total_epsilon must be a finite"),
    ({"total_epsilon": 1, "total_delta": 1.0}, "total_delta must be < 1"),
    ({"total_epsilon": 1, "groups": "ab"}, "list of group names"),
    ({"total_epsilon": 1, "groups": ["all"]}, "means everyone"),
    ({"total_epsilon": 1, "groups": ["a", "a"]}, "distinct"),
    ({"total_epsilon": 1, "groups": [""]}, "non-empty string"),
])
def test_bad_ledger_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PrivacyLedger(**kwargs)


# ---------------------------------------------------------------------- persistence
def test_file_ledger_round_trip(tmp_path):
    path = tmp_path / "ledger.json"
    ledger = PrivacyLedger.create(path, total_epsilon=2.0, total_delta=1e-6, groups=["a"])
    ledger.charge(0.5, users="a", description="wave 1")
    ledger.charge(0.5, 1e-7, kind="release", description="central")
    reopened = PrivacyLedger.open(path)  # another object, same file
    assert reopened.entries == ledger.entries and reopened.groups == ["a"]
    reopened.charge(0.25, users="a")
    assert len(ledger.entries) == 3  # the first object sees the file, not a stale copy
    stored = json.loads(path.read_text())
    assert stored["format"] == "sklearn_ldp.privacy_ledger"
    assert stored["version"] == LEDGER_VERSION
    assert [entry["description"] for entry in stored["entries"]] == ["wave 1", "central", ""]
    copy = PrivacyLedger.from_dict(ledger.to_dict())
    assert copy.path is None and copy.to_dict() == ledger.to_dict()
    assert copy.spent("a") == pytest.approx(Budget(1.25, 1e-7))
    frame = ledger.to_frame()
    assert list(frame.columns) == ["timestamp", "kind", "users", "epsilon", "delta",
                                   "description"]
    assert frame["epsilon"].sum() == pytest.approx(1.25)


def test_create_never_overwrites_an_existing_ledger(ledger_path):
    PrivacyLedger.open(ledger_path).charge(1.0)
    with pytest.raises(ValueError, match="already exists"):
        PrivacyLedger.create(ledger_path, total_epsilon=5.0)
    assert _spent_epsilons(ledger_path) == [1.0]


def _write_and_open(tmp_path, content):
    """Write ``content`` (a dict gets a matching checksum, so its content checks run)."""
    path = tmp_path / "ledger.json"
    path.write_text(content if isinstance(content, str) else json.dumps(_sealed(content)))
    return PrivacyLedger.open(path)


def test_version_format_and_corruption_errors(tmp_path):
    good = PrivacyLedger(total_epsilon=1.0).to_dict()
    with pytest.raises(ValueError, match="version 3, newer"):
        _write_and_open(tmp_path, {**good, "version": 3})
    with pytest.raises(ValueError, match="invalid ledger version"):
        _write_and_open(tmp_path, {**good, "version": "1"})
    with pytest.raises(ValueError, match="is not a privacy ledger"):
        _write_and_open(tmp_path, {**good, "format": "something else"})
    with pytest.raises(ValueError, match="not valid JSON"):
        _write_and_open(tmp_path, "{truncated")
    with pytest.raises(ValueError, match="malformed"):
        _write_and_open(tmp_path, {key: v for key, v in good.items() if key != "entries"})
    entry = {"id": 0, "timestamp": "t", "kind": "collection", "users": "all", "epsilon": 0.6,
             "delta": 0.0, "description": ""}
    with pytest.raises(ValueError, match="exceed the totals"):
        _write_and_open(tmp_path, {**good, "entries": [entry, {**entry, "id": 1}]})
    with pytest.raises(ValueError, match="unknown group"):
        _write_and_open(tmp_path, {**good, "entries": [{**entry, "users": "x"}]})
    with pytest.raises(ValueError, match="exceed the totals"):
        PrivacyLedger.from_dict({**good, "entries": [entry, {**entry, "id": 1}]})
    with pytest.raises(ValueError, match="no privacy ledger file"):
        PrivacyLedger.open(tmp_path / "missing.json")


CHARGER = textwrap.dedent("""
    import sys, time
    from sklearn_ldp.deploy.budget import PrivacyLedger
    path, start, name = sys.argv[1], float(sys.argv[2]), sys.argv[3]
    ledger = PrivacyLedger.open(path)
    while time.time() < start:
        time.sleep(0.001)
    for i in range(40):
        ledger.charge(0.001, description=f"{name} {i}")
""")


def test_concurrent_processes_lose_no_entry(ledger_path):
    start = time.time() + 3.0  # both processes are imported and waiting by then
    processes = [subprocess.Popen([sys.executable, "-c", CHARGER, ledger_path, str(start), name])
                 for name in ("first", "second")]
    for process in processes:
        assert process.wait(timeout=60) == 0
    entries = PrivacyLedger.open(ledger_path).entries
    assert len(entries) == 80
    assert [entry["id"] for entry in entries] == list(range(80))
    assert {entry["description"] for entry in entries} == {
        f"{name} {i}" for name in ("first", "second") for i in range(40)}


# ---------------------------------------------------------------------- sharing by value
def test_registry_and_plain_value_rules(tmp_path):
    ledger = PrivacyLedger(total_epsilon=1.0, groups=["a"])
    register_ledger("test-registry", ledger)
    try:
        assert resolve_ledger("test-registry") is ledger
        assert resolve_ledger("test-registry", users="a") is ledger
        with pytest.raises(ValueError, match="unknown group of users 'b'"):
            resolve_ledger("test-registry", users="b")
        with pytest.raises(ValueError, match="already registered"):
            register_ledger("test-registry", PrivacyLedger(total_epsilon=1.0))
    finally:
        unregister_ledger("test-registry")
    assert resolve_ledger(None) is None
    with pytest.raises(ValueError, match="neither a ledger registered"):
        resolve_ledger("test-registry")
    with pytest.raises(ValueError, match="not a PrivacyLedger object"):
        resolve_ledger(ledger)
    with pytest.raises(ValueError, match="got int"):
        resolve_ledger(3)
    with pytest.raises(ValueError, match="no ledger is registered"):
        unregister_ledger("test-registry")


def test_bad_ledger_parameter_fails_at_fit(tmp_path):
    missing = str(tmp_path / "missing.json")
    with pytest.raises(ValueError, match="neither a ledger registered"):
        LDPEncoder(categories=DOM, strategy="randomized_response", ledger=missing).fit()
    with pytest.raises(ValueError, match="not a PrivacyLedger object"):
        LDPEncoder(categories=DOM, strategy="randomized_response",
                   ledger=PrivacyLedger(total_epsilon=1.0)).fit()
    with pytest.raises(ValueError, match="neither a ledger registered"):
        CountMechanism(ledger=missing).fit(None)
    with pytest.raises(ValueError, match="neither a ledger registered"):
        AdaptiveQueryEstimator(categories=DOM, ledger=missing).fit(_records())
    with pytest.raises(ValueError, match="neither a ledger registered"):
        WorkloadEstimator(strategy="identity", epsilon=1.0, delta=1e-6, categories=DOM,
                          ledger=missing).fit(_records())


def test_clone_charges_the_same_ledger(ledger_path):
    encoder = LDPEncoder(categories=DOM, strategy="randomized_response", epsilon=0.5,
                         ledger=ledger_path, random_state=0)
    copy = clone(encoder)
    assert copy.get_params()["ledger"] == ledger_path
    encoder.fit_transform(_records())
    copy.fit_transform(_records())
    assert _spent_epsilons(ledger_path) == [0.5, 0.5]


def test_grid_search_charges_every_collection_of_the_shared_ledger(ledger_path):
    pipe = make_pipeline(
        LDPEncoder(categories=DOM, strategy="randomized_response", random_state=0,
                   ledger=ledger_path),
        WorkloadEstimator(),
    )
    search = GridSearchCV(pipe, {"ldpencoder__epsilon": [0.5, 1.0]}, cv=2).fit(_records())
    # per candidate and split: one collection to fit, one to score; then the refit
    best = search.best_params_["ldpencoder__epsilon"]
    spent = sorted(_spent_epsilons(ledger_path))
    assert spent == sorted([0.5] * 4 + [1.0] * 4 + [best])
    descriptions = [entry["description"] for entry in PrivacyLedger.open(ledger_path).entries]
    assert all(d.startswith("LDPEncoder.transform") for d in descriptions)


def test_grid_search_is_refused_once_the_total_is_reached(tmp_path):
    path = str(tmp_path / "small.json")
    PrivacyLedger.create(path, total_epsilon=2.5)
    register_ledger("test-grid", PrivacyLedger(total_epsilon=2.5))
    try:
        for ledger in (path, "test-grid"):  # a file and an in-process name alike
            pipe = make_pipeline(LDPEncoder(categories=DOM, strategy="randomized_response",
                                            random_state=0, ledger=ledger),
                                 WorkloadEstimator())
            search = GridSearchCV(pipe, {"ldpencoder__epsilon": [0.5, 1.0]}, cv=2,
                                  error_score="raise")
            with pytest.raises(BudgetExceededError, match="asked epsilon=1"):
                search.fit(_records())
            resolved = resolve_ledger(ledger)
            assert resolved.spent().epsilon == pytest.approx(2.0)  # 4 collections at 0.5
            assert len(resolved.entries) == 4
    finally:
        unregister_ledger("test-grid")


# ---------------------------------------------------------------------- estimator hooks
def test_encoder_charges_each_transform_before_randomizing(tmp_path):
    path = str(tmp_path / "ledger.json")
    PrivacyLedger.create(path, total_epsilon=1.0, total_delta=1e-5, groups=["wave1"])
    encoder = LDPEncoder(categories=DOM, strategy="hadamard", epsilon=0.4, ledger=path,
                         ledger_users="wave1", random_state=0).fit()
    reports = encoder.transform(_records(100))
    (entry,) = PrivacyLedger.open(path).entries
    assert entry["kind"] == "collection" and entry["users"] == "wave1"
    assert entry["epsilon"] == 0.4 and entry["delta"] == 0.0
    assert "100 users" in entry["description"] and "'hadamard'" in entry["description"]
    with pytest.raises(ValueError, match="not among its categories"):
        encoder.transform(pd.DataFrame({"age": ["?"], "smoker": ["no"]}))  # bad input: no charge
    assert _spent_epsilons(path) == [0.4]
    statistic = encoder.simulate(_records(100))  # simulations spend as much
    assert _spent_epsilons(path) == [0.4, 0.4]
    state = encoder._rng.bit_generator.state
    with pytest.raises(BudgetExceededError):
        encoder.transform(_records(100))
    assert encoder._rng.bit_generator.state == state  # transform drew no randomness
    with pytest.raises(BudgetExceededError):
        encoder.simulate_counts(np.full(6, 10))  # drawn, then refused: nothing returned
    assert encoder._rng.bit_generator.state == state  # ... and the generator rewound
    assert _spent_epsilons(path) == [0.4, 0.4]
    assert len(reports) == 100 and statistic is not None
    gaussian = LDPEncoder(categories=DOM, strategy="gaussian", epsilon=0.1, delta=1e-6,
                          ledger=path, random_state=0).fit()
    gaussian.transform(_records(10))
    assert PrivacyLedger.open(path).entries[-1]["delta"] == 1e-6
    with pytest.raises(ValueError, match="unknown group of users 'wave2'"):
        clone(encoder).set_params(ledger_users="wave2").fit()


def test_workload_estimator_central_release_and_local_model(ledger_path):
    records = _records(300)
    central = WorkloadEstimator(strategy="identity", epsilon=2.0, delta=1e-4, categories=DOM,
                                ledger=ledger_path, random_state=0).fit(records)
    (entry,) = PrivacyLedger.open(ledger_path).entries
    assert entry["kind"] == "release"
    assert (entry["epsilon"], entry["delta"]) == (2.0, 1e-4)
    assert "'identity'" in entry["description"]
    assert central.answers_.shape == (6,)
    # local model: reports were charged by their encoder; the estimator charges nothing
    encoder = LDPEncoder(categories=DOM, strategy="randomized_response", epsilon=1.0,
                         ledger=ledger_path, random_state=0).fit()
    WorkloadEstimator(ledger=ledger_path).fit(encoder.transform(records))
    assert _spent_epsilons(ledger_path) == [2.0, 1.0]
    # raw records privatized by the estimator itself: a collection, charged by its encoder
    WorkloadEstimator(strategy="randomized_response", epsilon=0.5, categories=DOM,
                      ledger=ledger_path, random_state=0).fit(records)
    assert _spent_epsilons(ledger_path) == [2.0, 1.0, 0.5]


def test_range_and_marginal_estimators_charge_when_they_privatize_raw_records(ledger_path):
    records = _records(300)
    RangeQueryEstimator(strategy="haar", epsilon=0.3, categories={"age": DOM["age"]},
                        ledger=ledger_path, random_state=0).fit(records[["age"]])
    MarginalEstimator(strategy="inp_ht", epsilon=0.4, categories=DOM, ledger=ledger_path,
                      random_state=0).fit(records)
    assert _spent_epsilons(ledger_path) == [0.3, 0.4]
    encoder = LDPEncoder(categories=DOM, strategy="inp_ht", epsilon=0.2, random_state=0).fit()
    MarginalEstimator(ledger=ledger_path).fit(encoder.transform(records))  # reports: no charge
    assert _spent_epsilons(ledger_path) == [0.3, 0.4]


def test_refused_central_release_releases_nothing(tmp_path):
    path = str(tmp_path / "ledger.json")
    PrivacyLedger.create(path, total_epsilon=1.0, total_delta=1e-6)
    estimator = WorkloadEstimator(strategy="identity", epsilon=0.5, delta=1e-4, categories=DOM,
                                  ledger=path, random_state=0)
    with pytest.raises(BudgetExceededError, match="delta=0.0001"):
        estimator.fit(_records())
    assert not hasattr(estimator, "statistic_") and not hasattr(estimator, "mechanism_")
    assert PrivacyLedger.open(path).entries == []


def test_count_mechanism_charges_epsilon_per_count_of_a_group(ledger_path):
    cm = CountMechanism(group_size=4, epsilon=0.5, ledger=ledger_path, random_state=0).fit(None)
    cm.transform(np.array([0, 2, 4]))  # three disjoint groups: parallel
    cm.transform(np.array([[0, 1, 2], [4, 3, 2]]))  # two groups, three counts about each
    grouped = CountMechanism(group_size=4, epsilon=0.25, group_column="household",
                             ledger=ledger_path, random_state=0).fit(None)
    grouped.transform(pd.DataFrame({"household": [1, 1, 2], "smoker": [0, 1, 1]}))
    entries = PrivacyLedger.open(ledger_path).entries
    assert [entry["epsilon"] for entry in entries] == [0.5, 1.5, 0.25]
    assert {entry["kind"] for entry in entries} == {"release"}
    strict = CountMechanism(group_size=4, epsilon=9.0, ledger=ledger_path).fit(None)
    with pytest.raises(BudgetExceededError):
        strict.transform(np.array([1]))
    assert len(PrivacyLedger.open(ledger_path).entries) == 3


def test_adaptive_rounds_compose_in_parallel(ledger_path):
    records = _records(600)
    AdaptiveQueryEstimator(categories=DOM, epsilon=0.75, ledger=ledger_path,
                           random_state=0).fit(records)  # 5 rounds, one epsilon
    assert _spent_epsilons(ledger_path) == [0.75]
    streaming = AdaptiveQueryEstimator(categories=DOM, epsilon=0.5, ledger=ledger_path,
                                       ledger_users="wave2", random_state=0)
    for start in range(0, 300, 100):
        streaming.partial_fit(records[start:start + 100])  # fresh users each round
    entries = PrivacyLedger.open(ledger_path).entries[1:]
    assert [entry["epsilon"] for entry in entries] == [0.5, 0.0, 0.0]
    assert {entry["users"] for entry in entries} == {"wave2"}
    assert PrivacyLedger.open(ledger_path).spent("wave2").epsilon == pytest.approx(1.25)
    greedy = AdaptiveQueryEstimator(categories=DOM, epsilon=9.5, ledger=ledger_path)
    with pytest.raises(BudgetExceededError):
        greedy.fit(records)
    assert not greedy.__sklearn_is_fitted__()
