"""Frequent itemsets (SVSM): the paper's candidate rule, containment, the user split, the
itemset estimates against their analytic variance, and the LDPEncoder / ItemsetEstimator door."""

import itertools
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _laws import assert_sampled_law
from _sklearn_checks import FITS_A_FEATURE_MATRIX
from _stats import check_unbiased_and_variance
from sklearn.pipeline import make_pipeline

from sklearn_ldp import (
    ItemsetEstimator,
    LDPEncoder,
    LDPReports,
    SetFrequencyEstimator,
    reports_from_client,
)
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms.set_valued.padding import FlatSets
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism
from sklearn_ldp.mechanisms.set_valued.svsm import (
    GUESS_SCALE,
    SVSM_SHARES,
    FrequentItemsets,
    candidate_itemsets,
    check_itemset_spec,
    contained_itemsets,
    itemset_frequencies,
    itemset_round_mechanism,
    itemset_spec,
    restrict_sets,
    split_users,
)

# check_estimator from the default constructor: fit takes the itemset round's reports.
EXPECTED_FAILED_DEFAULT = dict.fromkeys(
    FITS_A_FEATURE_MATRIX, "fit takes LDP reports (the itemset round of an LDPEncoder over an "
    "'itemsets' column), not a raw feature matrix")

APPS = ["mail", "maps", "chat", "news", "games", "music", "photos", "video"]


def planted_frame(n_users, seed=0):
    """Users holding planted itemsets: {mail, maps, chat} (30%), {mail, maps} (20%),
    {news, games} (20%), {photos, video, music} (10%), a single random app (20%)."""
    rng = np.random.default_rng(seed)
    kinds = rng.choice(5, size=n_users, p=[0.3, 0.2, 0.2, 0.1, 0.2])
    patterns = [("mail", "maps", "chat"), ("mail", "maps"), ("news", "games"),
                ("photos", "video", "music")]
    singles = rng.choice(APPS, size=n_users)
    return pd.DataFrame({"apps": [set(patterns[k]) if k < 4 else {singles[u]}
                                  for u, k in enumerate(kinds)]})


def brute_force_candidates(frequencies, n_candidates, max_size):
    """Every itemset of 2 .. max_size items, ranked by the product of 0.9 f / max f."""
    guesses = GUESS_SCALE * np.clip(frequencies, 0, None) / max(frequencies)
    everything = [combo for size in range(2, max_size + 1)
                  for combo in itertools.combinations(range(len(frequencies)), size)]
    return sorted(everything, key=lambda combo: -np.prod(guesses[list(combo)]))[:n_candidates]


@pytest.mark.parametrize("seed", range(5))
def test_candidate_itemsets_are_the_papers_top_products(seed):
    rng = np.random.default_rng(seed)
    frequencies = rng.uniform(-0.05, 0.8, size=8)
    found = candidate_itemsets(frequencies, 16, 4)
    expected = brute_force_candidates(frequencies, 16, 4)
    guesses = GUESS_SCALE * np.clip(frequencies, 0, None) / frequencies.max()
    # The same products in the same order (ties may list equal products in either order).
    assert [np.prod(guesses[list(s)]) for s in found] == pytest.approx(
        [np.prod(guesses[list(s)]) for s in expected])
    assert all(2 <= len(s) <= 4 and list(s) == sorted(set(s)) for s in found)
    assert len(set(found)) == 16


def test_candidate_itemsets_stop_when_none_are_left():
    assert candidate_itemsets([0.5, 0.3], 10, 5) == [(0, 1)]
    assert candidate_itemsets([0.5], 10, 5) == []
    assert candidate_itemsets([0.5, 0.4, 0.3], 10, 2) == [(0, 1), (0, 2), (1, 2)]


def test_contained_itemsets_match_a_brute_force():
    rng = np.random.default_rng(3)
    sets = [sorted(rng.choice(10, size=rng.integers(0, 6), replace=False).tolist())
            for _ in range(300)]
    itemsets = [(0, 1), (2, 5, 7), (3, 4), (1, 9), (0, 1, 2, 3)]
    flat = FlatSets(np.array([len(s) for s in sets]),
                    np.array([i for s in sets for i in s], dtype=np.int64))
    found = contained_itemsets(flat, itemsets)
    starts = np.concatenate(([0], np.cumsum(found.lengths)))
    for user, held in enumerate(sets):
        expected = [j for j, itemset in enumerate(itemsets) if set(itemset) <= set(held)]
        assert found.items[starts[user]:starts[user + 1]].tolist() == expected


def test_restrict_sets_recodes_to_positions():
    flat = FlatSets(np.array([3, 0, 2]), np.array([0, 4, 5, 1, 4]))
    restricted = restrict_sets(flat, np.array([4, 1]), 6)
    assert restricted.lengths.tolist() == [1, 0, 2]
    assert restricted.items.tolist() == [0, 1, 0]


def test_split_users_is_a_random_partition_with_the_papers_shares():
    groups = split_users(10_000, np.random.default_rng(0))
    assert list(groups) == list(SVSM_SHARES)
    everyone = np.concatenate(list(groups.values()))
    assert np.array_equal(np.sort(everyone), np.arange(10_000))
    for name, share in SVSM_SHARES.items():
        assert abs(groups[name].size - share * 10_000) <= 1
    # SVIM takes half the users: 50% / 10% / 40% of that half.
    assert sum(SVSM_SHARES[name] for name in ("candidates", "item_sizes", "items")) == 0.5


@pytest.mark.parametrize("oracle, replications", [("grr", 6000), ("olh", 400)])
def test_itemset_frequencies_unbiased_with_the_analytic_variance(oracle, replications):
    # Six candidate itemsets, pad length 3, no user containing more than 3 of them.
    labels = [("a", "b"), ("a", "c"), ("b", "c"), ("a", "b", "c"), ("d", "e"), ("a", "d")]
    mechanism = SetItemMechanism(6, 3, 1.0, oracle, 6, labels)
    contained = [[0, 1, 2], [0, -1, -1], [4, -1, -1], [-1, -1, -1], [0, 5, -1]]
    users = np.array(contained * 100)  # 500 users per replication
    held = np.bincount(users[users >= 0], minlength=6).astype(float)
    n = users.shape[0]
    rng = np.random.default_rng(11)
    # One draw for all replications (each user's report is independent), cut into blocks.
    reports = mechanism.randomize(np.tile(users, (replications, 1)), rng)
    statistics = [mechanism.aggregate(block) for block in np.split(reports, replications)]
    estimates = np.array([itemset_frequencies(mechanism, s)[0] for s in statistics])
    variance = mechanism.count_variance(n, held) / n ** 2
    check_unbiased_and_variance(estimates, held / n, variance)
    if oracle == "grr":  # enough replications: the MSE within 5% of the analytic variance
        ratio = ((estimates - held / n) ** 2).mean(axis=0) / variance
        assert abs(ratio.mean() - 1) < 0.05, ratio


def test_std_errors_are_the_analytic_ones_at_the_estimate():
    mechanism = SetItemMechanism(3, 2, 2.0, "grr", 3, [("a", "b"), ("a", "c"), ("b", "c")])
    reports = mechanism.randomize(np.array([[0, 1], [2, -1]] * 1000), np.random.default_rng(0))
    statistic = mechanism.aggregate(reports)
    frequencies, errors = itemset_frequencies(mechanism, statistic)
    held = np.clip(frequencies * 2000, 0, 2000)
    assert errors == pytest.approx(np.sqrt(mechanism.count_variance(2000, held)) / 2000)


def test_pipeline_recovers_the_planted_itemsets():
    df = planted_frame(60_000)
    pipe = make_pipeline(LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 4)},
                                    epsilon=4.0, random_state=0), ItemsetEstimator(top_k=3))
    estimator = pipe.fit(df)[-1]
    encoder = pipe[0]
    # mail, maps, chat (0.5, 0.5, 0.3), then news or games (0.2 + 0.025 each).
    frequent = set(encoder.frequent_items_)
    assert {"mail", "maps", "chat"} < frequent and frequent - {"mail", "maps", "chat"} in (
        {"news"}, {"games"})
    top = estimator.top_itemsets_
    # The truth: {mail, maps} 0.5, then {mail, chat}, {maps, chat}, {mail, maps, chat} 0.3.
    assert top["itemset"].iloc[0] == ("mail", "maps")
    assert set(top["itemset"].iloc[1:]) <= {("mail", "chat"), ("maps", "chat"),
                                            ("mail", "maps", "chat")}
    truth = {("mail", "maps"): 0.5, ("mail", "chat"): 0.3, ("maps", "chat"): 0.3,
             ("mail", "maps", "chat"): 0.3, ("news", "games"): 0.2}
    for row in estimator.itemsets_.itertuples():
        expected = truth.get(row.itemset, 0.0)
        assert abs(row.frequency - expected) < 5 * row.std_error + 0.01, row
    assert estimator.n_reports_ == round(0.4 * 60_000)


def test_transform_of_new_users_reports_every_row():
    df = planted_frame(20_000)
    encoder = LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 3)}, epsilon=2.0,
                         random_state=1).fit(df)
    assert len(encoder.transform(df)) == round(0.4 * 20_000)  # fit's users: the last group
    new = planted_frame(500, seed=5)
    reports = encoder.transform(new)
    assert len(reports) == 500 and reports.mechanism is encoder.mechanism_
    assert encoder.candidate_itemsets_ == list(encoder.mechanism_.items)
    assert list(encoder.item_frequencies_.columns) == ["frequency", "std_error"]


def test_partial_fit_equals_one_fit():
    df = planted_frame(20_000)
    reports = LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 3)}, epsilon=2.0,
                         random_state=1).fit_transform(df)
    whole = ItemsetEstimator().fit(reports)
    half = len(reports) // 2
    parts = ItemsetEstimator().partial_fit(reports[:half]).partial_fit(reports[half:])
    pd.testing.assert_frame_equal(whole.itemsets_, parts.itemsets_)


def test_the_same_seed_reproduces_the_protocol():
    df = planted_frame(10_000)

    def run():
        encoder = LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 3)}, epsilon=1.0,
                             random_state=7)
        return encoder.fit_transform(df).reports, encoder.candidate_itemsets_

    first, second = run(), run()
    assert np.array_equal(first[0], second[0]) and first[1] == second[1]


@pytest.mark.parametrize("categories, message", [
    ({"apps": ("itemsets", APPS, 3, 0)}, "top_k of column 'apps' must be an integer in [1, 62]"),
    ({"apps": ("itemsets", APPS, 3, 63)}, "got 63"),
    ({"apps": ("itemsets", APPS, 3, 2.5)}, "got 2.5"),
    ({"apps": ("itemsets", ["mail", "mail", "maps"], 2)}, "the item 'mail' is listed twice"),
    ({"apps": ("itemsets", ["mail"], 1)}, "at least 2 possible items"),
    ({"apps": ("itemsets", APPS, 0)}, "max_set_size of column 'apps'"),
    ({"apps": ("itemsets", APPS, 1)}, "max_set_size must be at least 2, got 1"),
    ({"apps": ("itemsets", APPS, 3), "b": ["x"]}, "reported alone"),
])
def test_bad_declarations_are_refused_naming_the_value(categories, message):
    with pytest.raises(ValueError) as error:
        LDPEncoder(categories=categories, epsilon=1.0, random_state=0).fit(planted_frame(100))
    assert message in str(error.value)


@pytest.mark.parametrize("cell, message", [
    ({"mail", "maps", "chat", "news"}, "row 3 holds 4 items, more than max_set_size=3"),
    ({"mail", "tetris"}, "the item 'tetris' is not among the declared items"),
    (["mail", "mail"], "lists the item 'mail' twice"),
    ("mail", "is not a set of items"),
])
def test_bad_sets_are_refused_naming_the_value(cell, message):
    df = pd.DataFrame({"apps": [{"mail"}, {"maps"}, {"chat"}, cell]})
    encoder = LDPEncoder(categories={"apps": ("itemsets", APPS, 3)}, epsilon=1.0,
                         random_state=0)
    with pytest.raises(ValueError) as error:
        encoder.fit(df)
    assert message in str(error.value)
    fitted = encoder.fit(planted_frame(1000))
    with pytest.raises(ValueError) as error:
        fitted.transform(df)
    assert message in str(error.value)


def test_fit_needs_the_data_and_the_strategy_svsm():
    with pytest.raises(ValueError, match="is fitted on the users' sets"):
        LDPEncoder(categories={"apps": ("itemsets", APPS, 3)}, epsilon=1.0).fit(None)
    with pytest.raises(ValueError, match="strategy 'svsm'"):
        LDPEncoder(categories={"apps": ("itemsets", APPS, 3)}, epsilon=1.0,
                   strategy="hadamard").fit(planted_frame(100))


def test_estimator_refuses_reports_of_items_and_a_bad_top_k():
    df = pd.DataFrame({"apps": [{"mail", "maps"}, {"chat"}] * 50})
    reports = LDPEncoder(categories={"apps": ("sets", APPS, 3)}, epsilon=1.0,
                         random_state=0).fit_transform(df)
    with pytest.raises(ValueError, match="are not itemsets of 2 or more items"):
        ItemsetEstimator().fit(reports)
    itemset_reports = LDPEncoder(categories={"apps": ("itemsets", APPS, 3)}, epsilon=1.0,
                                 random_state=0).fit_transform(planted_frame(500))
    for top_k in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match=f"top_k must be a positive integer, got {top_k!r}"):
            ItemsetEstimator(top_k=top_k).fit(itemset_reports)
    assert SetFrequencyEstimator  # the item estimator stays the one for "sets" columns


def test_protocol_refuses_bad_parameters():
    for kwargs, message in [
        (dict(n_items=1, max_set_size=2, epsilon=1.0), "at least 2 items"),
        (dict(n_items=4, max_set_size=2, epsilon=1.0, top_k=0), "top_k must be"),
        (dict(n_items=4, max_set_size=2, epsilon=0.0), "epsilon"),
        (dict(n_items=4, max_set_size=2, epsilon=1.0, items=["a"]), "items must list 4"),
        (dict(n_items=4, max_set_size=2, epsilon=1.0, oracle="oue"), "got 'oue'"),
        (dict(n_items=4, max_set_size=1, epsilon=1.0), "max_set_size must be at least 2"),
    ]:
        with pytest.raises(ValueError, match=message):
            FrequentItemsets(**kwargs)
    with pytest.raises(ValueError, match="raise top_k to at least 2"):
        FrequentItemsets(4, 2, 1.0, top_k=1).plan(np.array([[0, 1]] * 50),
                                                  np.random.default_rng(0))


def test_reports_carry_the_itemset_labels():
    reports = LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 2)}, epsilon=1.0,
                         random_state=0).fit_transform(planted_frame(2000))
    assert isinstance(reports, LDPReports)
    assert all(isinstance(label, tuple) and len(label) >= 2
               for label in reports.mechanism.items)


# ---------------------------------------------------------------- deployment (phase 2)
PHASE1 = {"mail": 0.6, "maps": 0.5, "chat": 0.3, "news": 0.1}


def phase2_spec(**kwargs):
    return json.loads(json.dumps(itemset_spec(PHASE1, APPS, 3, 2.0, top_k=3, **kwargs)))


def test_spec_lists_the_papers_candidates_by_label():
    spec = phase2_spec(pad_length=2)
    assert spec["params"]["candidates"] == [["mail", "maps"], ["mail", "chat"],
                                            ["maps", "chat"], ["mail", "maps", "chat"]]
    mechanism = itemset_round_mechanism(spec)
    assert mechanism.pad_length == 2 and mechanism.items[-1] == ("mail", "maps", "chat")


@pytest.mark.parametrize("edit, message", [
    (lambda s: s["params"]["candidates"].append(["maps", "mail"]),
     "the candidate ['maps', 'mail'] is listed twice"),
    (lambda s: s["params"]["candidates"][0].__setitem__(0, "tetris"), "'tetris'"),
    (lambda s: s["params"]["candidates"][0].extend(["news", "games"]),
     "must list 2 to max_set_size=3 items"),
    (lambda s: s["params"]["candidates"][0].pop(), "must list 2 to max_set_size=3 items"),
    (lambda s: s["params"]["candidates"][0].__setitem__(1, "mail"), "lists an item twice"),
    (lambda s: s["params"]["items"].append("mail"), "'mail' is listed twice in items"),
    (lambda s: s["params"]["candidates"].pop(), "over its 3 candidates"),
    (lambda s: s.__setitem__("epsilon", 9.0), "at its epsilon"),
])
def test_hostile_specs_are_refused_by_server_and_client(edit, message):
    spec = phase2_spec()
    edit(spec)
    for load in (check_itemset_spec, Randomizer):
        with pytest.raises(ValueError) as error:
            load(spec)
        assert message in str(error.value), (load, str(error.value))


def test_spec_builder_refuses_bad_estimates():
    with pytest.raises(ValueError, match="the item 'tetris' is not among the declared items"):
        itemset_spec({"mail": 0.5, "tetris": 0.4}, APPS, 3, 1.0)
    with pytest.raises(ValueError, match="the frequency of 'maps' is nan"):
        itemset_spec({"mail": 0.5, "maps": float("nan")}, APPS, 3, 1.0)
    with pytest.raises(ValueError, match="top_k must be an integer in \\[1, 62\\], got 0"):
        itemset_spec(PHASE1, APPS, 3, 1.0, top_k=0)
    with pytest.raises(ValueError, match="no itemset of 2 items"):
        itemset_spec({"mail": 0.5}, APPS, 3, 1.0)


@pytest.mark.parametrize("value, message", [
    (["mail", "tetris"], "the item 'tetris' is not among the declared items"),
    (["mail", "mail"], "the item 'mail' is listed twice"),
    (["mail", "maps", "chat", "news"], "holds 4 items, more than max_set_size=3"),
    ("mail", "is a set or list of items"),
])
def test_client_refuses_bad_sets(value, message):
    with pytest.raises(ValueError) as error:
        Randomizer(phase2_spec()).privatize(value)
    assert message in str(error.value)


@pytest.mark.parametrize("oracle", ["grr", "olh"])
def test_client_reports_follow_the_servers_exact_law(oracle):
    spec = phase2_spec(pad_length=2, oracle=oracle)
    mechanism = itemset_round_mechanism(spec)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded on purpose
        client = Randomizer(spec, seed=4)
        # {mail, maps, chat} contains all 4 candidates; {chat, news} none.
        for value, contained in ((["mail", "maps", "chat"], [0, 1, 2, 3]),
                                 (["chat", "news"], [])):
            sent = [client.privatize(value) for _ in range(20_000)]
            reports = reports_from_client(sent, mechanism).reports
            if oracle == "grr":
                assert_sampled_law(mechanism.exact_law(contained), reports)
            else:  # olh: the sampled candidate is the one the bucket counts; compare counts
                counts = mechanism.oracle.aggregate(reports)[:-1]
                expected = mechanism.oracle.aggregate(mechanism.randomize(
                    np.array([contained + [-1] * (4 - len(contained))] * 20_000),
                    np.random.default_rng(0)))[:-1]
                assert np.all(np.abs(counts - expected) < 6 * np.sqrt(expected + 1)), (
                    counts, expected)


def test_deployed_phase2_is_decoded_by_the_estimator():
    spec = phase2_spec()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        client = Randomizer(spec, seed=1)
        sent = [client.privatize(["mail", "maps"]) for _ in range(4000)] + [
            client.privatize(["chat"]) for _ in range(4000)]
    estimator = ItemsetEstimator(top_k=1).fit(
        reports_from_client(sent, itemset_round_mechanism(spec)))
    top = estimator.top_itemsets_.iloc[0]
    assert top["itemset"] == ("mail", "maps")
    assert abs(top["frequency"] - 0.5) < 5 * top["std_error"]


def test_the_encoders_round_is_reproduced_by_the_spec_builder():
    # Deploying the encoder's phase 2 to new devices: itemset_spec on its item estimate gives
    # the same candidates, in the same order, and the same pad length.
    encoder = LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 4)}, epsilon=2.0,
                         random_state=3).fit(planted_frame(20_000))
    spec = itemset_spec(encoder.item_frequencies_["frequency"], APPS, 3, 2.0, top_k=4,
                        pad_length=encoder.pad_length_)
    mechanism = itemset_round_mechanism(json.loads(json.dumps(spec)))
    assert mechanism.items == encoder.candidate_itemsets_
    assert mechanism.to_dict()["oracle"] == encoder.mechanism_.to_dict()["oracle"]


def test_one_ledger_charge_per_collection(tmp_path):
    from sklearn_ldp import PrivacyLedger

    path = str(tmp_path / "ledger.json")
    PrivacyLedger.create(path, total_epsilon=1.0)
    encoder = LDPEncoder(categories={"apps": ("itemsets", APPS, 3)}, epsilon=1.0,
                         random_state=0, ledger=path)
    encoder.fit_transform(planted_frame(2000))  # every user once, in one of the rounds
    assert PrivacyLedger.open(path).spent().epsilon == pytest.approx(1.0)


def test_predict_answers_candidate_itemsets_in_any_order():
    reports = LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 3)}, epsilon=2.0,
                         random_state=1).fit_transform(planted_frame(20_000))
    estimator = ItemsetEstimator().fit(reports)
    first = estimator.itemsets_["itemset"].iloc[0]
    answer = estimator.predict([tuple(reversed(first)), set(first)])
    assert list(answer["itemset"]) == [first, first]
    assert answer["frequency"].iloc[0] == estimator.itemsets_["frequency"].iloc[0]
    for bad in [("mail", "tetris"), "mail", ("mail",)]:
        with pytest.raises(ValueError, match="is not among the candidate itemsets"):
            estimator.predict([bad])


def test_the_whole_protocol_is_unbiased_with_calibrated_std_errors():
    # Twenty runs of the whole protocol (random split, every round) on data where no user
    # contains more candidates than the pad length: the z-scores of the planted itemsets'
    # estimates have mean 0 and variance 1.
    df = planted_frame(20_000)
    truth = {("mail", "maps"): 0.5, ("mail", "chat"): 0.3, ("maps", "chat"): 0.3,
             ("mail", "maps", "chat"): 0.3}
    held = {itemset: sum(set(itemset) <= cell for cell in df["apps"]) / len(df)
            for itemset in truth}
    scores = []
    for seed in range(20):
        pipe = make_pipeline(LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 4)},
                                        epsilon=2.0, random_state=seed), ItemsetEstimator())
        estimator = pipe.fit(df)[-1]
        assert pipe[0].pad_length_ >= 4  # {mail, maps, chat} contains the 4 itemsets above
        table = estimator.predict(list(truth))
        scores.append((table["frequency"] - [held[s] for s in truth]) / table["std_error"])
    scores = np.array(scores)
    assert np.all(np.abs(scores.mean(axis=0)) < 4.5 / np.sqrt(len(scores))), scores.mean(axis=0)
    assert 0.5 < scores.var(ddof=1) < 1.6, scores.var(ddof=1)


def test_client_spec_is_the_itemsets_kind_and_clients_report_like_transform():
    df = planted_frame(20_000)
    encoder = LDPEncoder(categories={"apps": ("itemsets", APPS, 3, 3)}, epsilon=2.0,
                         random_state=2).fit(df)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded for this simulation
        text = encoder.client_spec()
        client = Randomizer.from_json(text, seed=0)
        sent = [client.privatize(sorted(map(str, cell))) for cell in df["apps"][:5000]]
    spec = json.loads(text)
    assert spec["mechanism"] == "itemsets"
    mechanism = itemset_round_mechanism(spec)
    assert mechanism.items == encoder.candidate_itemsets_
    assert mechanism.pad_length == encoder.pad_length_
    client_side = ItemsetEstimator().fit(reports_from_client(sent, mechanism))
    server_side = ItemsetEstimator().fit(encoder.transform(df[:5000]))
    difference = client_side.itemsets_["frequency"] - server_side.itemsets_["frequency"]
    spread = np.hypot(client_side.itemsets_["std_error"], server_side.itemsets_["std_error"])
    assert np.all(np.abs(difference) < 5 * spread)
