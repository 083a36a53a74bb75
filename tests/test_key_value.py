"""PCKV-GRR key-value data: exact law and privacy, unbiasedness, variance, bad input."""

import numpy as np
import pytest
from _laws import assert_sampled_law
from _stats import check_unbiased

from sklearn_ldp.mechanisms import audit_privacy
from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR

# The worst pairs of inputs: the same key with opposite extreme values, disjoint keys, a
# full set against the empty set.
WORST = [[(0, 1.0), (1, -1.0)], [(0, -1.0), (1, 1.0)], [], [(2, 1.0), (3, -1.0)],
         [(3, 0.5)]]


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0, 8.0])
def test_exact_law_of_the_worst_inputs_is_private(epsilon):
    mechanism = PCKVGRR(4, 2, epsilon, value_steps=2, max_set_size=2)
    audit = audit_privacy(mechanism, WORST)
    assert audit.private, audit
    assert audit.realised <= epsilon * (1 + 1e-12)
    # The correlated budget is used, not wasted: one pair per user and no padding (the
    # sampling of one pair among several only lowers the realised epsilon), extreme values.
    single = PCKVGRR(4, 1, epsilon, value_steps=2, max_set_size=1)
    tight = audit_privacy(single, [[(0, 1.0)], [(1, -1.0)], [(0, -1.0)]])
    assert tight.private and tight.realised > 0.99 * epsilon, tight


def test_sampled_reports_follow_the_exact_law():
    mechanism = PCKVGRR(3, 2, 1.0, value_steps=4, max_set_size=2)
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


def test_unbiased_and_mse_within_5_percent_of_the_analytic_variance():
    rng = np.random.default_rng(20)
    n_keys, pad, n_users, replicates = 16, 3, 2000, 400
    keys, values = _data(rng, n_users, n_keys, pad)
    mechanism = PCKVGRR(n_keys, pad, 2.0, value_steps=100, max_set_size=pad)
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


def test_specification_round_trip_and_edited_weights():
    mechanism = PCKVGRR(5, 2, 1.5, value_steps=10)
    spec = mechanism.to_dict()
    assert PCKVGRR.from_dict(spec) == mechanism
    spec["weights"][0] += 1
    with pytest.raises(ValueError, match="edited weights"):
        PCKVGRR.from_dict(spec)


# ---------------------------------------------------------------- the standard-library client
def test_client_reports_decode_like_the_servers():
    import json

    from sklearn_ldp import KeyValueEstimator, reports_from_client
    from sklearn_ldp.deploy.client import Randomizer

    mechanism = PCKVGRR(4, 2, 3.0, value_steps=10, max_set_size=2)
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


def test_client_refuses_weights_that_are_not_private():
    from sklearn_ldp.deploy.client import Randomizer

    spec = PCKVGRR(4, 2, 1.0).to_dict()
    spec["weights"][0] *= 2
    with pytest.raises(ValueError, match="not 1.0-LDP"):
        Randomizer(spec)
