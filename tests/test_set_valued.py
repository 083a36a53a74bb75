"""SVIM item frequencies: padding and sampling, its exact law, unbiasedness and variance."""

import numpy as np
import pytest
from _laws import assert_sampled_law
from _stats import check_unbiased

from sklearn_ldp.mechanisms import audit_privacy
from sklearn_ldp.mechanisms.set_valued.padding import (
    FlatSets,
    check_sets,
    pad_length_from_sizes,
    sample_padded,
)
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism, pad_length_round

# The worst pairs of sets: disjoint sets at the cap, a full set against the empty set,
# a short set against a long one.
WORST_SETS = [[0, 1, 2], [3, 4, 5], [], [5, 6, 7], [0, -1, -1], [1, 2, 3]]


@pytest.mark.parametrize("bad, message", [
    (np.array([[0, 1, 2, 3]]), "user 0 holds 4 items, more than max_set_size=3"),
    (np.array([[0, 9]]), "holds the item 9, outside the declared items"),
    (np.array([[0, -2]]), "holds the item -2"),
    (np.array([[1, 1]]), "lists the item 1 twice"),
    (np.array([[0, 1], [-1, 2]]), "row 1 is [-1, 2]"),
    ((np.array([2, 1]), np.array([0, 1])), "the lengths add up to 3 items"),
    ((np.array([-1]), np.array([], dtype=int)), "negative length"),
    (np.array([[0.5, 1.0]]), "integer array"),
])
def test_bad_sets_are_refused_naming_the_value(bad, message):
    with pytest.raises(ValueError) as error:
        check_sets(bad, n_items=8, max_set_size=3)
    assert message in str(error.value)


def test_flat_and_padded_layouts_agree():
    rows = np.array([[3, 1, -1], [-1, -1, -1], [0, 2, 4]])
    flat = check_sets(rows, 8, 3)
    assert flat.lengths.tolist() == [2, 0, 3]
    assert flat.items.tolist() == [1, 3, 0, 2, 4]  # each user's items in increasing order
    same = check_sets((flat.lengths, flat.items), 8, 3)
    assert same.items.tolist() == flat.items.tolist()


def test_padding_samples_each_element_uniformly():
    # A set of 2 items padded to L = 4: items 5 and 1 and dummies d + 2, d + 3, each 1/4; a
    # set of 5 > L items: each 1/5; the empty set: the dummies d .. d + 3.
    n = 40_000
    rng = np.random.default_rng(1)
    for items, expected in (([5, 1], [1, 5, 10, 11]), ([0, 1, 2, 3, 4], [0, 1, 2, 3, 4]),
                            ([], [8, 9, 10, 11])):
        flat = FlatSets(np.full(n, len(items)), np.tile(np.array(items, dtype=np.int64), n))
        values = sample_padded(flat, 8, 4, rng)
        assert sorted(set(values.tolist())) == expected
        counts = np.bincount(values, minlength=12)[expected]
        z = (counts - n / len(expected)) / np.sqrt(n / len(expected))
        assert np.all(np.abs(z) < 5), z


@pytest.mark.parametrize("oracle", ["grr", "olh"])
@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0, 8.0])
def test_exact_law_of_the_worst_sets_is_private(oracle, epsilon):
    mechanism = SetItemMechanism(8, 3, epsilon, oracle=oracle, max_set_size=3)
    audit = audit_privacy(mechanism, WORST_SETS)
    assert audit.private, audit
    assert audit.realised <= epsilon * (1 + 1e-12)


def test_sampled_reports_follow_the_exact_law():
    mechanism = SetItemMechanism(8, 3, 1.0, oracle="grr", max_set_size=3)
    rng = np.random.default_rng(5)
    for row in ([0, 1, 2], [5, -1, -1], [-1, -1, -1]):
        reports = mechanism.randomize(np.tile(np.array(row), (20_000, 1)), rng)
        assert_sampled_law(mechanism.exact_law(row), reports)


def _random_sets(rng, n_users, n_items, max_size):
    """Sets of 1 .. max_size distinct items, skewed towards the small items."""
    sizes = rng.integers(1, max_size + 1, size=n_users)
    weights = 1.0 / np.arange(1, n_items + 1)
    rows = np.full((n_users, max_size), -1, dtype=np.int64)
    for size in range(1, max_size + 1):
        users = np.flatnonzero(sizes == size)
        keys = rng.random((users.size, n_items)) ** (1.0 / weights)  # weighted sampling
        rows[users, :size] = np.argsort(-keys, axis=1)[:, :size]
    return rows


@pytest.mark.parametrize("oracle", ["grr", "olh"])
def test_unbiased_and_mse_within_5_percent_of_the_analytic_variance(oracle):
    rng = np.random.default_rng(32)
    n_items, pad, n_users, replicates = 32, 3, 1000, 400
    rows = _random_sets(rng, n_users, n_items, pad)
    truth = np.bincount(rows[rows >= 0], minlength=n_items)
    mechanism = SetItemMechanism(n_items, pad, 1.0, oracle=oracle, max_set_size=pad)
    reports = mechanism.randomize(np.tile(rows, (replicates, 1)), rng)
    estimates = np.array([mechanism.estimate(mechanism.aggregate(block))
                          for block in np.split(reports, replicates)])
    variance = mechanism.count_variance(n_users, truth)
    check_unbiased(estimates, truth, variance)
    # The pooled ratio of squared errors to the analytic variance: 12,800 terms, standard
    # error about 1.3%, so a 5% band is about 4 standard errors.
    ratio = float(np.mean((estimates - truth) ** 2 / variance))
    assert abs(ratio - 1) < 0.05, ratio


def test_std_errors_plug_in_the_estimate():
    mechanism = SetItemMechanism(5, 2, 2.0, oracle="grr")
    rows = np.array([[0, 1], [2, -1]] * 5000)
    statistic = mechanism.aggregate(mechanism.randomize(rows, np.random.default_rng(3)))
    held = np.clip(mechanism.estimate(statistic), 0, 10_000)
    assert np.allclose(mechanism.std_errors(statistic) ** 2,
                       mechanism.count_variance(10_000, held))


def test_pad_length_rule_and_round():
    assert pad_length_from_sizes([0, 90, 10]) == 1
    assert pad_length_from_sizes([0, 89, 11]) == 2
    assert pad_length_from_sizes([5, -3, 0, 0]) == 1  # at least 1
    assert pad_length_from_sizes([0, 0, 0]) == 2  # nothing estimated: the cap
    sizes = np.repeat([1, 2, 3, 4, 10], [30_000, 30_000, 20_000, 15_000, 5_000])
    pad, reports = pad_length_round(sizes, 12, 2.0, np.random.default_rng(0))
    assert pad == 4 and len(reports) == sizes.size
    with pytest.raises(ValueError, match="size 13, outside"):
        pad_length_round(np.array([1, 13]), 12, 2.0, np.random.default_rng(0))


def test_specification_round_trip_and_edits_refused():
    mechanism = SetItemMechanism(6, 2, 1.5, items=list("abcdef"))
    spec = mechanism.to_dict()
    assert SetItemMechanism.from_dict(spec) == mechanism
    edited = dict(spec, oracle=dict(spec["oracle"], epsilon=3.0))
    with pytest.raises(ValueError, match="edited oracle"):
        SetItemMechanism.from_dict(edited)
    with pytest.raises(ValueError, match="pad_length must be an integer"):
        SetItemMechanism(6, 0, 1.0)
    with pytest.raises(ValueError, match="distinct labels"):
        SetItemMechanism(2, 1, 1.0, items=["a", "a"])


def test_million_users_in_seconds():
    # One million users with sets of up to 8 of 1,000 items: padding, sampling, OLH and
    # its aggregation run vectorized (the benchmark reports the times).
    rng = np.random.default_rng(0)
    n_users = 10**6
    lengths = rng.integers(0, 9, size=n_users)
    items = rng.integers(0, 1000, size=int(lengths.sum()))
    # Distinct items per user: offset each user's items by its rank (mod 1000).
    rank = np.arange(items.size) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    items = (np.repeat(rng.integers(0, 1000, size=n_users), lengths) + rank * 7) % 1000
    mechanism = SetItemMechanism(1000, 4, 2.0, max_set_size=8)
    statistic = mechanism.aggregate(mechanism.randomize((lengths, items), rng))
    assert mechanism.n_reports(statistic) == n_users
