"""SVSM follow-up: the long-set correction (SVIM's update step) of the item and itemset
rounds, and the candidate budget ``n_candidates``."""

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.pipeline import make_pipeline

from sklearn_ldp import ItemsetEstimator, LDPEncoder, reports_from_client
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms.set_valued.padding import check_sets
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism
from sklearn_ldp.mechanisms.set_valued.svsm import (
    FrequentItemsets,
    ItemsetRoundMechanism,
    itemset_frequencies,
    itemset_round_mechanism,
    itemset_spec,
    select_users,
    size_correction_factor,
    size_round,
)

APPS = ["mail", "maps", "chat", "news", "games", "music", "photos", "video"]
# Independent items: item i of 0 .. 9 held w.p. HELD[i]; then 0-2 background items of 10 .. 29.
HELD = np.array([0.6, 0.55, 0.5, 0.45, 0.4, 0.35, 0.3, 0.25, 0.2, 0.15])
N_ITEMS = 30


def independent_sets(n_users, rng):
    """``(lengths, items)``: the planted items held independently, then background items."""
    held = rng.random((n_users, HELD.size)) < HELD
    extra = rng.integers(0, 3, size=n_users)
    background = HELD.size + np.argsort(rng.random((n_users, N_ITEMS - HELD.size)),
                                        axis=1)[:, :2]
    keep = np.arange(2) < extra[:, None]
    owners = np.concatenate([np.nonzero(held)[0], np.nonzero(keep)[0]])
    items = np.concatenate([np.nonzero(held)[1], background[keep]])
    order = np.argsort(owners, kind="stable")
    return (held.sum(axis=1) + extra).astype(np.int64), items[order].astype(np.int64)


def true_frequencies(lengths, items, itemsets):
    """The share of users whose set contains each itemset (items < 62 as bit masks)."""
    masks = np.zeros(lengths.size, dtype=np.int64)
    np.add.at(masks, np.repeat(np.arange(lengths.size), lengths), np.left_shift(1, items))
    wanted = np.array([sum(1 << item for item in itemset) for itemset in itemsets])
    return ((masks[:, None] & wanted) == wanted).mean(axis=0)


def test_size_correction_factor_is_the_papers_ratio():
    # sum_l g_l l / sum_l g_l min(l, L)
    assert size_correction_factor([0, 50, 30, 15, 5], 2) == pytest.approx(175 / 150)
    assert size_correction_factor([0, 50, 30, 15, 5], 4) == 1.0  # nobody above L
    # Negative estimates count as 0; a scale (renormalising) changes nothing.
    assert size_correction_factor([3, 50, 30, -15, 5], 2) == pytest.approx(
        size_correction_factor([0, 5, 3, 0, 0.5], 2))
    assert size_correction_factor([-1, -2, 0], 1) == 1.0  # nothing positive
    assert size_correction_factor([10, 0, 0], 1) == 1.0  # only empty sets


def test_size_round_keeps_the_sizes_held_and_cuts_the_noise_of_the_others():
    # Sizes held by many users are estimated without bias; a size no user has is 0 unless
    # its noise exceeds 4 standard errors (about 3 in 100,000).
    sizes = np.repeat([0, 1, 3, 5], [10_000, 25_000, 10_000, 5_000])
    estimates = np.array([size_round(sizes, 8, 2.0, np.random.default_rng(seed))[1]
                          for seed in range(20)])
    truth = np.bincount(sizes, minlength=9)
    held = truth > 0
    spread = estimates[:, held].std(axis=0, ddof=1)
    assert np.all(np.abs(estimates[:, held].mean(axis=0) - truth[held])
                  < 4.5 * spread / np.sqrt(20))
    assert np.all(estimates[:, ~held] == 0.0)
    assert size_round(np.zeros(0, dtype=np.int64), 5, 1.0, np.random.default_rng(0))[0] == 5


def test_itemset_round_mechanism_is_set_items_plus_the_size_estimate():
    plain = SetItemMechanism(4, 2, 1.0, "grr", 4)
    carried = ItemsetRoundMechanism(4, 2, 1.0, "grr", 4, size_counts=[0, 50, 30, 15, 5])
    # Clients see the same specification; reports of one are reports of the other.
    assert carried == plain and carried.to_dict() == plain.to_dict()
    assert carried.size_factor == pytest.approx(175 / 150)
    assert ItemsetRoundMechanism(4, 2, 1.0).size_factor == 1.0
    for bad in ([0, 1, 2], [0, 1, 2, 3, float("nan")], "01234", [[0, 1, 2, 3, 4]]):
        with pytest.raises(ValueError, match="size_counts must list 5 finite numbers"):
            ItemsetRoundMechanism(4, 2, 1.0, size_counts=bad)


@pytest.mark.parametrize("oracle", ["grr", "olh"])
def test_corrected_itemset_estimates_have_calibrated_z_scores_on_independent_items(oracle):
    # The whole protocol on independent items at epsilon 4, where many users contain more
    # candidate itemsets than the pad length: with the correction the z-scores of the
    # candidates (four seeds) have mean within 0.2 of 0 and sd in [0.8, 1.25]; without it
    # the estimates are too small (this test fails for the uncorrected estimate).
    lengths, items = independent_sets(200_000, np.random.default_rng(0))
    corrected, raw = [], []
    for seed in range(4):
        protocol = FrequentItemsets(N_ITEMS, 12, 4.0, top_k=10, oracle=oracle)
        plan, reports = protocol.run((lengths, items), np.random.default_rng(seed))
        assert plan.mechanism.size_factor > 1.02  # long sets exist: the test has power
        truth = true_frequencies(lengths, items, plan.itemsets)
        statistic = plan.mechanism.aggregate(reports)
        for correct, scores in ((True, corrected), (False, raw)):
            frequencies, errors = itemset_frequencies(plan.mechanism, statistic, correct)
            scores.extend((frequencies - truth) / errors)
    corrected, raw = np.array(corrected), np.array(raw)
    assert abs(corrected.mean()) < 0.2, corrected.mean()
    assert 0.8 < corrected.std(ddof=1) < 1.25, corrected.std(ddof=1)
    assert raw.mean() < -0.5, raw.mean()


def test_item_round_counts_carry_their_size_factor():
    lengths, items = independent_sets(100_000, np.random.default_rng(1))
    plans = {correct: FrequentItemsets(N_ITEMS, 12, 4.0, size_correction=correct).plan(
        (lengths, items), np.random.default_rng(5)) for correct in (True, False)}
    on, off = plans[True], plans[False]
    assert off.item_size_factor == 1.0 and on.item_size_factor > 1.0
    np.testing.assert_allclose(on.item_counts, on.item_size_factor * off.item_counts)
    np.testing.assert_allclose(on.item_std_errors, on.item_size_factor * off.item_std_errors)
    # The ranking, hence the frequent items and the candidate itemsets, is the same.
    assert np.array_equal(on.frequent_items, off.frequent_items)
    assert on.itemsets == off.itemsets
    # The item round's corrected estimate of a frequent item is near its truth.
    shares = on.item_counts / on.n_item_reports
    truth = true_frequencies(*select_users_arrays(lengths, items, on.groups["items"]),
                             [(code,) for code in on.item_candidates])
    z = (shares - truth) / (on.item_std_errors / on.n_item_reports)
    assert abs(z.mean()) < 1.0 and np.all(np.abs(z) < 5), z


def select_users_arrays(lengths, items, users):
    flat = select_users(check_sets((lengths, items), N_ITEMS, 12), users)
    return flat.lengths, flat.items


def frame(lengths, items):
    cells = np.split(items, np.cumsum(lengths)[:-1])
    return pd.DataFrame({"apps": [set(cell.tolist()) for cell in cells]})


def test_the_estimator_applies_the_encoders_size_factor_and_can_leave_it_out():
    lengths, items = independent_sets(20_000, np.random.default_rng(2))
    encoder = LDPEncoder(categories={"apps": ("itemsets", list(range(N_ITEMS)), 12)},
                         epsilon=4.0, random_state=0)
    reports = encoder.fit_transform(frame(lengths, items))
    factor = encoder.mechanism_.size_factor
    assert factor > 1.0
    on = ItemsetEstimator().fit(reports)
    off = ItemsetEstimator(size_correction=False).fit(reports)
    assert on.size_factor_ == factor and off.size_factor_ == 1.0
    np.testing.assert_allclose(on.itemsets_["frequency"], factor * off.itemsets_["frequency"])
    np.testing.assert_allclose(on.itemsets_["std_error"], factor * off.itemsets_["std_error"])
    for bad in (1, "yes", None):
        with pytest.raises(ValueError, match=f"size_correction must be True or False, got "
                                             f"{bad!r}"):
            ItemsetEstimator(size_correction=bad).fit(reports)


def test_a_deployment_decodes_with_the_servers_size_estimate():
    spec = itemset_spec({"mail": 0.6, "maps": 0.5, "chat": 0.3}, APPS, 3, 2.0, top_k=3,
                        pad_length=1)
    # The server's size round: 60% contain 1 candidate, 40% all 4 (pad length 1).
    mechanism = itemset_round_mechanism(spec, size_counts=[0, 600, 0, 0, 400])
    assert mechanism.size_factor == pytest.approx((600 + 1600) / 1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = Randomizer(spec, seed=1)
        sent = [client.privatize(["mail", "maps", "chat"]) for _ in range(4000)] + [
            client.privatize(["mail", "maps"]) for _ in range(6000)]
    reports = reports_from_client(sent, mechanism)
    on, off = (ItemsetEstimator(size_correction=correct).fit(reports)
               for correct in (True, False))
    assert on.size_factor_ == mechanism.size_factor
    np.testing.assert_allclose(on.itemsets_["frequency"],
                               mechanism.size_factor * off.itemsets_["frequency"])
    # Uncorrected, {mail, maps} (held by every user) is near 0.6 + 0.4 / 4 = 0.7. The
    # correction assumes containing it is proportional to the number of candidates held,
    # which is false here (it is held by all): it over-corrects, to near 1.54.
    raw = off.predict([("mail", "maps")]).iloc[0]
    assert abs(raw["frequency"] - 0.7) < 5 * raw["std_error"]
    plain = ItemsetEstimator().fit(reports_from_client(sent, itemset_round_mechanism(spec)))
    assert plain.size_factor_ == 1.0
    assert json.loads(json.dumps(spec)) == spec


# ------------------------------------------------------------------ the candidate budget
def test_the_candidate_budget_sets_the_number_of_candidate_itemsets():
    lengths, items = independent_sets(20_000, np.random.default_rng(3))
    default = FrequentItemsets(N_ITEMS, 12, 2.0, top_k=5).plan(
        (lengths, items), np.random.default_rng(0))
    larger = FrequentItemsets(N_ITEMS, 12, 2.0, top_k=5, n_candidates=25).plan(
        (lengths, items), np.random.default_rng(0))
    assert len(default.itemsets) == 10  # the paper's 2k
    assert len(larger.itemsets) == 25 and larger.itemsets[:10] == default.itemsets
    assert larger.mechanism.n_inputs == 25
    everything = FrequentItemsets(N_ITEMS, 12, 2.0, top_k=3, n_candidates=4096).plan(
        (lengths, items), np.random.default_rng(0))
    assert len(everything.itemsets) == 4  # every itemset of 3 frequent items


def test_the_candidate_budget_in_the_declaration_and_the_spec():
    lengths, items = independent_sets(20_000, np.random.default_rng(4))
    encoder = LDPEncoder(categories={"apps": ("itemsets", list(range(N_ITEMS)), 12, 5, 20)},
                         epsilon=2.0, random_state=0).fit(frame(lengths, items))
    assert len(encoder.candidate_itemsets_) == 20  # of the 26 itemsets of 5 items
    spec = itemset_spec(encoder.item_frequencies_["frequency"], list(range(N_ITEMS)), 12,
                        2.0, top_k=5, pad_length=encoder.pad_length_, n_candidates=20)
    assert [tuple(sorted(c)) for c in spec["params"]["candidates"]] \
        == encoder.candidate_itemsets_


@pytest.mark.parametrize("budget", [0, -1, 4097, 2.5, True, "20"])
def test_bad_candidate_budgets_are_refused_naming_the_value(budget):
    with pytest.raises(ValueError, match=f"n_candidates must be an integer in \\[1, 4096\\], "
                                         f"got {budget!r}"):
        FrequentItemsets(N_ITEMS, 12, 1.0, n_candidates=budget)
    with pytest.raises(ValueError, match=f"n_candidates of column 'apps' must be an integer "
                                         f"in \\[1, 4096\\], got {budget!r}"):
        LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 3, budget)}, epsilon=1.0,
                   random_state=0).fit(pd.DataFrame({"apps": [{"mail", "maps"}] * 10}))
    with pytest.raises(ValueError, match="n_candidates must be an integer"):
        itemset_spec({"mail": 0.6, "maps": 0.5}, APPS, 3, 1.0, n_candidates=budget)
    with pytest.raises(ValueError, match="size_correction must be True or False"):
        FrequentItemsets(N_ITEMS, 12, 1.0, size_correction=1)


def test_the_pipeline_with_a_larger_budget_finds_the_planted_itemsets():
    lengths, items = independent_sets(30_000, np.random.default_rng(6))
    pipe = make_pipeline(
        LDPEncoder(categories={"apps": ("itemsets", list(range(N_ITEMS)), 12, 4, 16)},
                   epsilon=4.0, random_state=0), ItemsetEstimator(top_k=1))
    top = pipe.fit(frame(lengths, items))[-1].top_itemsets_.iloc[0]
    assert top["itemset"] == (0, 1)  # 0.6 * 0.55, the most frequent pair
