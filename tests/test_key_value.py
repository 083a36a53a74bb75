"""PCKV-GRR and PCKV-UE key-value data: exact law and privacy, the budget split,
unbiasedness, variance, bad input."""

import numpy as np
import pandas as pd
import pytest
from _laws import assert_sampled_law
from _stats import check_unbiased

from sklearn_ldp.mechanisms import audit_privacy
from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR
from sklearn_ldp.mechanisms.set_valued.pckv_ue import PCKVUE

KINDS = [PCKVGRR, PCKVUE]

# The worst pairs of inputs: the same key with opposite extreme values, disjoint keys, a
# full set against the empty set.
WORST = [[(0, 1.0), (1, -1.0)], [(0, -1.0), (1, 1.0)], [], [(2, 1.0), (3, -1.0)],
         [(3, 0.5)]]


@pytest.mark.parametrize("cls", KINDS)
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0, 8.0])
def test_exact_law_of_the_worst_inputs_is_private(cls, epsilon):
    mechanism = cls(4, 2, epsilon, value_steps=2, max_set_size=2)
    audit = audit_privacy(mechanism, WORST)
    assert audit.private, audit
    assert audit.realised <= epsilon * (1 + 1e-12)
    # The correlated budget is used, not wasted: one pair per user and no padding (the
    # sampling of one pair among several only lowers the realised epsilon), extreme values.
    single = cls(4, 1, epsilon, value_steps=2, max_set_size=1)
    tight = audit_privacy(single, [[(0, 1.0)], [(1, -1.0)], [(0, -1.0)]])
    assert tight.private and tight.realised > 0.99 * epsilon, tight


@pytest.mark.parametrize("cls", KINDS)
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0, 8.0])
def test_budget_split_is_the_papers_and_its_realised_epsilon_is_exact(cls, epsilon):
    """eps_2 = eps and e^eps_1 = (e^eps + 1) / 2 (the paper's composition of the correlated
    perturbation with its allocation), realised by the integer weights within the declared
    epsilon, and the exact law's worst ratio is that composition."""
    mechanism = cls(3, 1, epsilon, value_steps=2, max_set_size=1)
    eps_1, eps_2, composed = mechanism.budget_split()
    assert eps_2 <= epsilon and abs(eps_2 - epsilon) < 1e-9
    assert abs(np.exp(eps_1) - (np.exp(epsilon) + 1) / 2) < 1e-9 * np.exp(epsilon)
    audit = audit_privacy(mechanism, [[(0, 1.0)], [(1, -1.0)], [(0, -1.0)], []])
    assert audit.private and audit.realised <= epsilon
    assert abs(audit.realised - composed) < 1e-9, (audit.realised, composed)


@pytest.mark.parametrize("cls", KINDS)
def test_sampled_reports_follow_the_exact_law(cls):
    mechanism = cls(3, 2, 1.0, value_steps=4, max_set_size=2)
    rng = np.random.default_rng(8)
    n = 40_000
    for pairs in ([(0, 0.25), (2, -1.0)], [(1, 0.75)], []):
        keys = (np.full(n, len(pairs)), np.tile([k for k, _ in pairs], n).astype(np.int64))
        values = np.tile([v for _, v in pairs], n).astype(float)
        reports = mechanism.randomize((*keys, values), rng)
        assert_sampled_law(mechanism.exact_law(pairs), reports)


def _data(rng, n_users, n_keys, pad):
    """1 .. pad pairs per user (distinct keys, the small ones the most frequent), values on
    the lattice of 1/100, their mean depending on the key."""
    lengths = rng.integers(1, pad + 1, size=n_users)
    first = rng.integers(0, n_keys, size=n_users) * rng.integers(0, 2, size=n_users)
    rank = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    keys = (np.repeat(first, lengths) + 3 * rank) % n_keys
    centre = np.linspace(-0.8, 0.8, n_keys)[keys]
    values = np.clip(np.round(centre + rng.uniform(-0.2, 0.2, size=keys.size), 2), -1, 1)
    return (lengths, keys), values


@pytest.mark.parametrize("cls", KINDS)
def test_unbiased_and_mse_within_5_percent_of_the_analytic_variance(cls):
    rng = np.random.default_rng(20)
    n_keys, pad, n_users, replicates = 16, 3, 2000, 400
    keys, values = _data(rng, n_users, n_keys, pad)
    mechanism = cls(n_keys, pad, 2.0, value_steps=100, max_set_size=pad)
    held = np.bincount(keys[1], minlength=n_keys)
    sums = np.bincount(keys[1], weights=values, minlength=n_keys) / n_users
    squares = np.bincount(keys[1], weights=values ** 2, minlength=n_keys)
    tiled = (np.tile(keys[0], replicates), np.tile(keys[1], replicates))
    reports = mechanism.randomize((*tiled, np.tile(values, replicates)), rng)
    frequencies, value_sums = [], []
    for block in np.split(reports, replicates):
        statistic = mechanism.aggregate(block)
        frequencies.append(mechanism.estimate(statistic)[0])
        value_sums.append(mechanism.value_sums(statistic))
    frequencies, value_sums = np.array(frequencies), np.array(value_sums)
    var_f = mechanism.frequency_variance(n_users, held)
    var_s = mechanism.value_sum_variance(n_users, held, squares)
    check_unbiased(frequencies, held / n_users, var_f)
    check_unbiased(value_sums, sums, var_s)
    # 6,400 terms each: a standard error of about 1.8%, so 5% is near 3 standard errors.
    for estimates, truth, variance in ((frequencies, held / n_users, var_f),
                                       (value_sums, sums, var_s)):
        ratio = float(np.mean((estimates - truth) ** 2 / variance))
        assert abs(ratio - 1) < 0.05, ratio


def test_means_and_their_standard_errors():
    rng = np.random.default_rng(4)
    keys, values = _data(rng, 200_000, 8, 2)
    mechanism = PCKVGRR(8, 2, 4.0, value_steps=100, max_set_size=2)
    statistic = mechanism.aggregate(mechanism.randomize((*keys, values), rng))
    frequency, mean = mechanism.estimate(statistic)
    f_err, m_err = mechanism.std_errors(statistic)
    held = np.bincount(keys[1], minlength=8)
    truth = np.bincount(keys[1], weights=values, minlength=8) / np.maximum(held, 1)
    assert np.all(np.abs(mean - truth) < 5 * m_err), (mean, truth, m_err)
    assert np.all(np.abs(frequency - held / 200_000) < 5 * f_err)
    assert np.all((mean >= -1) & (mean <= 1))


@pytest.mark.parametrize("keys, values, message", [
    ((np.array([1]), np.array([5])), [0.5], "holds the item 5, outside"),
    ((np.array([2]), np.array([1, 1])), [0.5, 0.1], "lists the item 1 twice"),
    ((np.array([1]), np.array([1])), [1.5], "the value 1.5 for key 1"),
    ((np.array([1]), np.array([1])), [np.nan], "the value nan"),
    ((np.array([1]), np.array([1])), [0.3333], "lattice j / 1000"),
    ((np.array([3]), np.array([0, 1, 2])), [0, 0, 0], "more than max_set_size=2"),
    ((np.array([1]), np.array([1])), [0.5, 0.5], "one per key"),
])
def test_bad_keys_and_values_are_refused(keys, values, message):
    mechanism = PCKVGRR(4, 2, 1.0, max_set_size=2)
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        mechanism.randomize((*keys, np.asarray(values, dtype=float)),
                            np.random.default_rng(0))


def test_million_users_in_seconds():
    rng = np.random.default_rng(0)
    keys, values = _data(rng, 10**6, 500, 4)
    mechanism = PCKVGRR(500, 4, 2.0, value_steps=100, max_set_size=4)
    statistic = mechanism.aggregate(mechanism.randomize((*keys, values), rng))
    frequency, mean = mechanism.estimate(statistic)
    assert statistic[-1] == 10**6 and frequency.shape == mean.shape == (500,)


# ---------------------------------------------------------------- KeyValueEstimator
def test_estimator_fits_batches_like_one_fit_and_labels_keys():
    from sklearn_ldp import KeyValueEstimator, LDPReports

    rng = np.random.default_rng(6)
    keys, values = _data(rng, 20_000, 6, 2)
    mechanism = PCKVGRR(6, 2, 2.0, value_steps=100, max_set_size=2)
    reports = LDPReports(mechanism.randomize((*keys, values), rng), mechanism)
    whole = KeyValueEstimator(keys=list("abcdef")).fit(reports)
    split = KeyValueEstimator(keys=list("abcdef")).partial_fit(reports[:7000]).partial_fit(
        reports[7000:])
    np.testing.assert_array_equal(whole.statistic_, split.statistic_)
    assert list(whole.means_.index) == list("abcdef") and whole.n_reports_ == 20_000
    frequency, mean = mechanism.estimate(whole.statistic_)
    np.testing.assert_allclose(whole.means_.to_numpy(), mean)
    assert whole.std_errors_.shape == (6, 2)
    with pytest.raises(ValueError, match="must list the mechanism's 6 keys"):
        KeyValueEstimator(keys=["a"]).fit(reports)


@pytest.mark.parametrize("cls", KINDS)
def test_specification_round_trip_and_edited_weights(cls):
    mechanism = cls(5, 2, 1.5, value_steps=10, keys=["a", "b", 3, "d", "e"])
    spec = mechanism.to_dict()
    assert cls.from_dict(spec) == mechanism
    assert cls.from_dict(spec).keys == ["a", "b", 3, "d", "e"]
    spec["weights"][0] += 1
    with pytest.raises(ValueError, match="edited weights"):
        cls.from_dict(spec)


@pytest.mark.parametrize("keys, message", [
    (["a", "a", "b"], "'a' is listed twice"),
    (["a", 1.5, "b"], "got '1.5'"),
    (["a", None, "b"], "got 'None'"),
    (["a", True, "b"], "got 'True'"),
    (["a", "b", "c", "d"], "must list 3 labels, got 4"),
    (["a", "b", "x" * 300], "at most 256 characters"),
    ("abc", "a list of 3 labels"),
])
def test_hostile_key_labels_are_refused(keys, message):
    with pytest.raises(ValueError, match=message):
        PCKVUE(3, 1, 1.0, keys=keys)


# ---------------------------------------------------------------- the standard-library client
@pytest.mark.parametrize("cls", KINDS)
def test_client_reports_decode_like_the_servers(cls):
    import json

    from sklearn_ldp import KeyValueEstimator, reports_from_client
    from sklearn_ldp.deploy.client import Randomizer

    mechanism = cls(4, 2, 3.0, value_steps=10, max_set_size=2)
    with pytest.warns(UserWarning, match="seed"):
        client = Randomizer.from_json(json.dumps(mechanism.to_dict()), seed=2)
    records = [{0: 0.5, 2: -1.0}, {1: 0.3}, [[3, 1.0], [0, 0.5]]] * 3000
    sent = [json.loads(json.dumps(client.privatize(record))) for record in records]
    estimator = KeyValueEstimator().fit(reports_from_client(sent, mechanism))
    truth = np.array([0.5, 0.3, -1.0, 1.0])
    errors = estimator.std_errors_["mean"].to_numpy()
    assert np.all(np.abs(estimator.means_.to_numpy() - truth) < 5 * errors + 1e-9)


@pytest.mark.parametrize("record, message", [
    ({0: 0.5, 1: 0.5, 2: 0.5}, "more than max_set_size=2"),
    ({7: 0.5}, "not a key in"),
    ([[1, 0.5], [1, 0.2]], "listed twice"),
    ({0: 1.5}, "not a number in"),
    ({0: 0.25}, "not on the lattice"),
    ("x", "dict key -> value"),
])
def test_client_refuses_bad_records(record, message):
    import json

    from sklearn_ldp.deploy.client import Randomizer

    client = Randomizer.from_json(json.dumps(PCKVGRR(4, 2, 1.0, value_steps=10,
                                                     max_set_size=2).to_dict()))
    with pytest.raises(ValueError, match=message):
        client.privatize(record)


@pytest.mark.parametrize("cls", KINDS)
def test_labelled_spec_decodes_client_reports_with_labels(cls):
    """The key labels travel in the specification: the client takes labelled records and
    the reports rebuilt from the JSON decode with labelled keys, no keys= needed."""
    import json

    from sklearn_ldp import KeyValueEstimator, reports_from_client
    from sklearn_ldp.deploy.client import Randomizer

    text = json.dumps(cls(3, 1, 4.0, value_steps=10, keys=["x", "y", 7]).to_dict())
    client = Randomizer.from_json(text)
    sent = [client.privatize({"x": 0.5}) for _ in range(3000)]
    estimator = KeyValueEstimator().fit(reports_from_client(sent, text))
    assert estimator.frequencies_.index.tolist() == ["x", "y", 7]
    assert abs(estimator.frequencies_["x"] - 1) < 0.2
    with pytest.raises(ValueError, match="'z' is not among the declared keys"):
        client.privatize({"z": 0.5})


@pytest.mark.parametrize("cls", KINDS)
@pytest.mark.parametrize("labels, message", [
    (["a", "a", "b"], "'a' of the 'pckv_.*' specification is listed twice"),
    (["a", 1.5, "b"], "string of at most 256 characters or an integer, got 1.5"),
    (["a", True, "b"], "got true"),
    (["a", None, "b"], "got null"),
    (["a", "b"], "must list 3 labels"),
    (["a", "b", "c", "d"], "must list 3 labels"),
    (["a", "b", "x" * 300], "at most 256 characters"),
    ("abc", "must list 3 labels"),
])
def test_client_refuses_hostile_key_labels(cls, labels, message):
    from sklearn_ldp.deploy.client import Randomizer

    spec = cls(3, 1, 1.0).to_dict()
    spec["params"]["keys"] = labels
    with pytest.raises(ValueError, match=message):
        Randomizer(spec)


def test_client_refuses_weights_that_are_not_private():
    from sklearn_ldp.deploy.client import Randomizer

    spec = PCKVGRR(4, 2, 1.0).to_dict()
    spec["weights"][0] *= 2
    with pytest.raises(ValueError, match="not 1.0-LDP"):
        Randomizer(spec)
    spec = PCKVUE(4, 2, 1.0).to_dict()
    spec["weights"][2] //= 2  # fewer fake entries: the key's entry says too much
    with pytest.raises(ValueError, match="not 1.0-LDP"):
        Randomizer(spec)


# ---------------------------------------------------------------- LDPEncoder's key-value columns
KEYS = ["a", "b", "c", "d"]


def _frame(n_users, rng):
    """Key-value cells, dicts and lists of pairs: key a held by all (value 0.5), b by half
    (values -1 and 0.2), c by a quarter (1.0), d by none; 1 to 3 pairs per user."""
    cells = []
    for user in range(n_users):
        pairs = [("a", 0.5)]
        if user % 2:
            pairs.append(("b", -1.0 if user % 4 == 1 else 0.2))
        if user % 4 == 2:
            pairs.append(("c", 1.0))
        cells.append(dict(pairs) if user % 3 else pairs)
    return pd.DataFrame({"ratings": cells, "other": rng.integers(0, 5, n_users)})


TRUE_FREQUENCY = np.array([1.0, 0.5, 0.25, 0.0])
TRUE_SUM = np.array([0.5, 0.25 * (-1.0 + 0.2), 0.25, 0.0])  # (1 / N) sum of each key's values


def test_pipeline_on_a_frame_of_dicts_and_pairs():
    from sklearn.pipeline import Pipeline

    from sklearn_ldp import KeyValueEstimator, LDPEncoder

    df = _frame(40_000, np.random.default_rng(1))
    encoder = LDPEncoder(categories={"ratings": ("key_value", KEYS, 3, 10)}, epsilon=3.0,
                         random_state=0)
    pipe = Pipeline([("ldp", encoder), ("kv", KeyValueEstimator())]).fit(df)
    estimator = pipe.named_steps["kv"]
    assert encoder.strategy_ == "pckv_grr" and isinstance(encoder.mechanism_, PCKVGRR)
    assert list(estimator.frequencies_.index) == KEYS
    # The size round's 4,000 users report their number of pairs only.
    assert estimator.n_reports_ == 36_000
    errors = estimator.std_errors_
    assert np.all(np.abs(estimator.frequencies_.to_numpy() - TRUE_FREQUENCY)
                  < 5 * errors["frequency"].to_numpy())
    held = TRUE_FREQUENCY > 0
    true_mean = TRUE_SUM[held] / TRUE_FREQUENCY[held]
    assert np.all(np.abs(estimator.means_.to_numpy()[held] - true_mean)
                  < 5 * errors["mean"].to_numpy()[held])


@pytest.mark.parametrize("params, kind", [
    ({"oracle": "ue"}, "pckv_ue"), ({"oracle": "grr"}, "pckv_grr"),
    ({"strategy": "pckv_ue"}, "pckv_ue"), ({}, "pckv_grr"),
])
def test_encoder_oracle_choice_and_decoding(params, kind):
    """oracle= (or the strategy's kind) forces PCKV-GRR or PCKV-UE; "auto" takes the smaller
    analytic frequency variance (GRR for 4 keys at epsilon 3); KeyValueEstimator decodes
    both."""
    from sklearn.pipeline import make_pipeline

    from sklearn_ldp import KeyValueEstimator, LDPEncoder

    df = _frame(8_000, np.random.default_rng(2))
    encoder = LDPEncoder(categories={"ratings": ("key_value", KEYS, 3, 10)}, epsilon=3.0,
                         random_state=0, **params)
    estimator = make_pipeline(encoder, KeyValueEstimator()).fit(df)[-1]
    assert encoder.mechanism_.kind == kind and encoder.strategy_ == kind
    errors = estimator.std_errors_["frequency"].to_numpy()
    assert np.all(np.abs(estimator.frequencies_.to_numpy() - TRUE_FREQUENCY) < 5 * errors)


def test_encoder_auto_takes_ue_for_many_keys():
    from sklearn_ldp import LDPEncoder

    keys = [f"k{i}" for i in range(64)]
    encoder = LDPEncoder(categories={"r": ("key_value", keys, 2)}, epsilon=1.0).fit()
    assert encoder.mechanism_.kind == "pckv_ue"
    with pytest.raises(ValueError, match="reports with oracle='grr', got oracle='ue'"):
        LDPEncoder(categories={"r": ("key_value", keys, 2)}, strategy="pckv_grr",
                   oracle="ue").fit()


def test_size_round_chooses_the_pad_length_and_its_users_report_nothing_else():
    from sklearn_ldp import LDPEncoder

    df = _frame(5000, np.random.default_rng(2))
    encoder = LDPEncoder(categories={"ratings": ("key_value", KEYS)}, epsilon=4.0,
                         random_state=3).fit(df)
    # 1, 2 or 3 pairs (a third, a half, a sixth... of the users): the 90th percentile is 2.
    assert encoder.pad_length_ == 2 and encoder.mechanism_.pad_length == 2
    assert encoder.size_reports_.shape == (500,)
    assert len(encoder.transform(df)) == 4500  # fit's data: without the size round's users
    assert len(encoder.transform(df.iloc[:100])) == 100  # other data: every user
    # Without data, the pad length is the cap and no size round runs.
    empty = LDPEncoder(categories={"ratings": ("key_value", KEYS, 3)}, epsilon=4.0).fit(None)
    assert empty.pad_length_ == 3 and empty.mechanism_.value_steps == 1000


def test_encoder_reports_are_unbiased_within_5_standard_errors():
    from sklearn_ldp import LDPEncoder

    n_users, replicates = 1000, 200
    df = _frame(n_users, np.random.default_rng(4))
    encoder = LDPEncoder(categories={"ratings": ("key_value", KEYS, 3, 10)}, epsilon=2.0,
                         random_state=5).fit(None)  # pad length 3: nothing is subsampled
    mechanism = encoder.mechanism_
    statistics = [mechanism.aggregate(encoder.transform(df).reports) for _ in range(replicates)]
    frequencies = np.array([mechanism.estimate(s)[0] for s in statistics])
    value_sums = np.array([mechanism.value_sums(s) for s in statistics])
    held = TRUE_FREQUENCY * n_users
    squares = n_users * np.array([0.25, 0.25 * (1.0 + 0.04), 0.25, 0.0])
    check_unbiased(frequencies, TRUE_FREQUENCY, mechanism.frequency_variance(n_users, held),
                   z_max=5)
    check_unbiased(value_sums, TRUE_SUM,
                   mechanism.value_sum_variance(n_users, held, squares), z_max=5)


@pytest.mark.parametrize("cell, message", [
    ("a", "row 1: 'a' is not a dict {key: value}"),
    (None, "row 1: None is not a dict"),
    ({"e": 0.5}, "row 1: the key 'e' is not among the declared keys"),
    ({"a": 1.5}, "row 1 has the value 1.5 for the key 'a'; values must lie in"),
    ({"a": -0.25}, "row 1 has the value -0.25 for the key 'a'.*lattice j / 10"),
    ({"a": float("nan")}, "row 1 has the value nan for the key 'a'"),
    ({"a": 10**400}, "row 1 has the value 1000.* for the key 'a'; values must lie in"),
    (frozenset({"a"}), "row 1: frozenset.* is not a dict"),
    ({"a": None}, r"row 1: \('a', None\) is not a pair"),
    ({"a": True}, r"row 1: \('a', True\) is not a pair"),
    ({"a": "0.5"}, r"row 1: \('a', '0.5'\) is not a pair"),
    ([("a", 0.5, 1)], r"row 1: \('a', 0.5, 1\) is not a pair"),
    ([("a", 0.5), ("a", 0.1)], "row 1 lists the key 'a' twice"),
    ({"a": 0.1, "b": 0.1, "c": 0.1}, "row 1 holds 3 items, more than max_set_size=2"),
    ({"b": 0.5, 1: 0.5}, "row 1: the key 1 is not among the declared keys"),
    ({"b": 0.5, True: 0.5}, "row 1: the key True is not among the declared keys"),
    ({"b": 0.5, ("a",): 0.5}, r"row 1: the key \('a',\) is not among the declared keys"),
])
def test_bad_cells_are_refused_naming_row_and_value(cell, message):
    from sklearn_ldp import LDPEncoder

    df = pd.DataFrame({"ratings": [{"a": 0.5}, cell]})
    encoder = LDPEncoder(categories={"ratings": ("key_value", KEYS, 2, 10)}, epsilon=1.0)
    with pytest.raises(ValueError, match=message):
        encoder.fit(df)
    fitted = LDPEncoder(categories={"ratings": ("key_value", KEYS, 2, 10)},
                        epsilon=1.0).fit(None)
    with pytest.raises(ValueError, match=message):
        fitted.transform(df)


@pytest.mark.parametrize("params, message", [
    ({"strategy": "svim"}, "reported by strategy 'pckv_grr'"),
    ({"oracle": "olh"}, "oracle must be one of"),
    ({"categories": {"r": ("key_value", KEYS, 2, 0)}}, "value_steps must be an integer"),
    ({"categories": {"r": ("key_value", ["a", "a"])}}, "the key 'a' is listed twice"),
    ({"categories": {"r": ("key_value", KEYS, 2, 10, 1)}}, ""),
])
def test_bad_declarations_are_refused(params, message):
    from sklearn_ldp import LDPEncoder

    params = {"categories": {"r": ("key_value", KEYS, 2, 10)}, "epsilon": 1.0, **params}
    with pytest.raises(ValueError, match=message):
        LDPEncoder(**params).fit(None)


@pytest.mark.parametrize("bad, message", [
    ({"a": "x"}, r"row 70000: \('a', 'x'\) is not a pair"),
    ({"z": 0.5}, "row 70000: the key 'z' is not among the declared keys"),
    ({"a": 0.55}, "row 70000 has the value 0.55 for the key 'a'.*lattice j / 10"),
])
def test_first_bad_row_among_many_dict_cells(bad, message):
    """The flat fast path over a column of dicts still names the first bad row and value."""
    from sklearn_ldp import LDPEncoder

    cells = [{"a": 0.5, "b": -0.2}] * 100_000
    cells[70_000] = bad
    cells[90_000] = bad
    encoder = LDPEncoder(categories={"r": ("key_value", KEYS, 2, 10)}, random_state=0)
    with pytest.raises(ValueError, match=message):
        encoder.fit(pd.DataFrame({"r": cells}))


@pytest.mark.parametrize("report, valid", [
    ([0b001, 0b010], True),     # key 0 is +1, key 1 is -1
    ([0, 0], True),             # every entry 0
    ([0b001, 0b001], False),    # key 0 both +1 and -1
    ([0b1000, 0], False),       # a bit past the 3 keys (d + L = 3)
    ([0, 0b10000000], False),
])
def test_ue_report_validity(report, valid):
    from sklearn_ldp import reports_from_client

    mechanism = PCKVUE(2, 1, 1.0)
    assert bool(mechanism.report_validity(np.array([report], dtype=np.uint8)).valid[0]) == valid
    if not valid:
        with pytest.raises(ValueError, match="report 0"):
            reports_from_client([report], mechanism)


def test_python_client_refuses_the_js_hostile_key_value_specs():
    """The hostile pckv_grr / pckv_ue specifications the JavaScript client is tested on are
    refused by the standard-library client too, naming the same field."""
    import json
    from pathlib import Path

    from sklearn_ldp.deploy.client import Randomizer

    path = Path(__file__).parents[1] / "clients" / "js" / "test" / "fixtures" / "hostile.json"
    cases = [case for case in json.loads(path.read_text())
             if isinstance(case["spec"], dict)
             and str(case["spec"].get("mechanism")).startswith("pckv")]
    assert {case["spec"]["mechanism"] for case in cases} == {"pckv_grr", "pckv_ue"}
    for case in cases:
        with pytest.raises(ValueError, match=case["field"]):
            Randomizer(case["spec"])


@pytest.mark.parametrize("oracle", ["grr", "ue"])
def test_reports_frame_decodes_with_labelled_keys(oracle):
    """The DataFrame of set_output(transform="pandas") carries the specification, and with it
    the key labels: no keys= needed."""
    from sklearn_ldp import KeyValueEstimator, LDPEncoder

    df = _frame(4_000, np.random.default_rng(3))
    encoder = LDPEncoder(categories={"ratings": ("key_value", KEYS, 3, 10)}, epsilon=3.0,
                         oracle=oracle, random_state=0).set_output(transform="pandas")
    frame = encoder.fit(df).transform(df)
    estimator = KeyValueEstimator().fit(frame)
    assert list(estimator.frequencies_.index) == KEYS


@pytest.mark.parametrize("declaration", [("key_value", KEYS, 3, 10), ("sets", KEYS, 3)])
def test_fit_transform_reads_the_cells_once_and_reports_as_fit_then_transform(
        declaration, monkeypatch):
    import sklearn_ldp._encoder_sets as encoder_sets
    from sklearn_ldp import LDPEncoder

    df = _frame(5_000, np.random.default_rng(4))
    if declaration[0] == "sets":
        df["ratings"] = [set(dict(cell)) for cell in df["ratings"]]
    two_steps = LDPEncoder(categories={"ratings": declaration}, random_state=0)
    expected = np.asarray(two_steps.fit(df).transform(df).reports)
    reads = []
    for name in ("_flat_pairs", "_flat_sets"):
        original = getattr(encoder_sets, name)
        monkeypatch.setattr(encoder_sets, name,
                            lambda *args, f=original: reads.append(1) or f(*args))
    encoder = LDPEncoder(categories={"ratings": declaration}, random_state=0)
    np.testing.assert_array_equal(np.asarray(encoder.fit_transform(df).reports), expected)
    assert len(reads) == 1
    encoder.transform(df)  # a later transform reads the cells again (they may have changed)
    assert len(reads) == 2
