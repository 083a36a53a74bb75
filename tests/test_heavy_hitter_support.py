"""Heavy hitters return only supported values: held-out estimates, Holm's test, warnings."""

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ldp import HeavyHitterEstimator, LDPEncoder, detectable_frequency
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.client.heavy_hitters import _bit_string
from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters
from sklearn_ldp.mechanisms.heavy_hitters.significance import holm_supported, round_critical_z
from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values

APPS = ["mail", "maps", "chat", "music"]


def _fit(values, declared="strings", epsilon=4.0, seed=7, estimator=None, **encoder):
    enc = LDPEncoder(categories={"c": declared}, strategy=encoder.pop("strategy", "pem"),
                     epsilon=epsilon, random_state=seed, **encoder)
    reports = enc.fit_transform(pd.DataFrame({"c": values}))
    return (estimator or HeavyHitterEstimator()).fit(reports)


@pytest.mark.parametrize("n", [20_000, 100_000])
def test_four_popular_strings_and_no_invented_value(n):
    # The data's generator is not the encoder's: seeds that share a stream would tie the
    # rounds to the values.
    apps = np.random.default_rng(12345).choice(APPS, size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # found: no "nothing detectable" warning
        est = _fit(apps)
    assert sorted(est.heavy_hitters_["value"]) == sorted(APPS)
    truth = pd.Series(apps).value_counts(normalize=True)
    table = est.heavy_hitters_
    assert np.all(np.abs(table["frequency"] - truth[table["value"]].to_numpy())
                  < 4 * table["std_error"])
    assert est.n_tested_ == len(table) + est.n_rejected_


@pytest.mark.parametrize("strategy", ["pem", "treehist"])
def test_small_population_returns_nothing_invented(strategy):
    rng = np.random.default_rng(5)
    values = np.where(rng.random(30_000) < 0.3, "popular",
                      np.array([f"u{i}" for i in rng.integers(10**6, size=30_000)]))
    est = _fit(values, epsilon=2.0, strategy=strategy, max_string_bytes=12,
               estimator=HeavyHitterEstimator(top_k=5))
    assert set(est.heavy_hitters_["value"]) <= {"popular"}


def test_nothing_detectable_gives_an_empty_frame_and_the_detectable_frequency():
    rng = np.random.default_rng(1)
    ids = rng.integers(2**20, size=3000)  # every value held by about nobody
    with pytest.warns(UserWarning, match="cannot be detected") as record:
        est = _fit(ids, declared=20, epsilon=1.0, n_users=3000)
    assert est.heavy_hitters_.empty and list(est.heavy_hitters_.columns)[0] == "value"
    expected = detectable_frequency(3000, 1.0, values=20)
    assert est.detectable_frequency_ == pytest.approx(expected)
    assert f"{expected:.3g}" in str(record[0].message)


@pytest.mark.parametrize("threshold", [1.0, 0.9, 0.5])
def test_thresholds_nothing_passes_warn_instead_of_crashing(threshold):
    apps = np.random.default_rng(3).choice(APPS, size=20_000)
    with pytest.warns(UserWarning, match=f"threshold={threshold!r}"):
        est = _fit(apps, estimator=HeavyHitterEstimator(threshold=threshold))
    assert est.heavy_hitters_.empty


def test_threshold_and_top_k_bound_the_answer():
    apps = np.random.default_rng(4).choice(APPS + ["rare"], p=[0.3, 0.3, 0.2, 0.15, 0.05],
                                           size=40_000)
    est = _fit(apps, estimator=HeavyHitterEstimator(threshold=0.1))
    assert set(est.heavy_hitters_["value"]) == set(APPS)
    est = _fit(apps, estimator=HeavyHitterEstimator(top_k=2))
    assert len(est.heavy_hitters_) == 2
    est = _fit(apps, estimator=HeavyHitterEstimator(top_k=50))  # fewer than k supported
    assert set(est.heavy_hitters_["value"]) <= set(APPS + ["rare"])


def test_holm_controls_the_family_wise_error_under_the_null():
    rng = np.random.default_rng(0)
    trials = 4000
    errors = sum(holm_supported(rng.standard_normal(20)).any() for _ in range(trials))
    # At most 5% (Bonferroni-exact for independent nulls: 1 - 0.9975^20 = 4.9%).
    sd = np.sqrt(0.05 * 0.95 / trials)
    assert errors / trials < 0.05 + 4 * sd
    assert holm_supported([8.0] * 3 + [-1.0]).tolist() == [True] * 3 + [False]
    assert holm_supported([]).tolist() == []


def test_round_cut_leaves_a_quarter_of_the_slots_to_noise():
    rng = np.random.default_rng(1)
    z = round_critical_z(4096, 20)
    passed = np.count_nonzero(rng.standard_normal((200, 4096)) > z, axis=1)
    assert abs(passed.mean() - 5) < 0.5


def test_held_out_estimates_are_unbiased_for_the_values_found():
    # The values returned are estimated on users who did not select them: over seeds, the
    # z-scores of the true values have mean about 0 and standard deviation about 1.
    rng = np.random.default_rng(9)
    planted = rng.choice(2**16, size=6, replace=False)
    z = []
    for seed in range(12):
        data_rng = np.random.default_rng(100 + seed)
        values = np.where(data_rng.random(40_000) < 0.36, planted[data_rng.integers(6,
                                                                               size=40_000)],
                          data_rng.integers(2**16, size=40_000))
        est = _fit(values, declared=16, epsilon=2.0, seed=seed, n_users=40_000)
        table = est.heavy_hitters_
        truth = np.array([np.mean(values == v) for v in table["value"]])
        z += ((table["frequency"] - truth) / table["std_error"]).tolist()
    z = np.asarray(z)
    assert len(z) >= 60
    assert abs(z.mean()) < 4 / np.sqrt(len(z)) and 0.7 < z.std() < 1.3


def test_detectable_frequency_falls_with_users_and_budget_and_refuses_nonsense():
    f = detectable_frequency
    assert f(10**6, 2.0) < f(10**5, 2.0) and f(10**6, 4.0) < f(10**6, 2.0)
    assert 0 < f(100, 0.1) <= 1
    assert f(10**6, 2.0, values="strings", max_string_bytes=8) \
        < f(10**6, 2.0, values="strings", max_string_bytes=64)
    for kwargs, name in (({"n_users": 0}, "n_users"), ({"epsilon": -1}, "epsilon"),
                         ({"values": "ints"}, "values"), ({"values": True}, "values"),
                         ({"max_string_bytes": 0, "values": "strings"}, "max_string_bytes"),
                         ({"strategy": "cms"}, "strategy"), ({"alpha": 2}, "alpha")):
        args = {"n_users": 1000, "epsilon": 1.0, **kwargs}
        with pytest.raises(ValueError, match=name):
            f(**args)


def test_version_one_specs_are_refused_by_server_and_client():
    spec = PrefixHeavyHitters(16, 2.0, n_candidates=4).to_dict()
    assert spec["version"] == 2
    old = {**spec, "version": 1}
    with pytest.raises(ValueError, match="version-1 .* no verification round"):
        PrefixHeavyHitters.from_dict(old)
    with pytest.raises(ValueError, match="version"):
        Randomizer(old)
    client = Randomizer(spec)
    rounds = {client.privatize(5)[0] for _ in range(400)}
    finder = PrefixHeavyHitters.from_dict(spec)
    assert rounds == set(range(finder.n_rounds))
    assert finder.lengths[-1] == finder.lengths[-2] == 16  # the verification round


@settings(max_examples=25, deadline=5000)
@given(top_k=st.one_of(st.integers(-3, 0), st.floats(allow_nan=True), st.booleans(),
                       st.text(max_size=3)),
       threshold=st.one_of(st.floats(allow_nan=True).filter(lambda t: not 0 < t <= 1),
                           st.booleans(), st.text(max_size=3)))
def test_fuzz_estimator_parameters_are_named(top_k, threshold):
    reports = LDPEncoder(categories={"c": 8}, strategy="pem", epsilon=2.0,
                         random_state=0).fit_transform(pd.DataFrame({"c": np.arange(50)}))
    with pytest.raises(ValueError, match="top_k"):
        HeavyHitterEstimator(top_k=top_k).fit(reports)
    with pytest.raises(ValueError, match="threshold"):
        HeavyHitterEstimator(threshold=threshold).fit(reports)


def test_identify_with_no_surviving_prefix_returns_nothing():
    finder = PrefixHeavyHitters(16, 1.0, n_candidates=4)
    rng = np.random.default_rng(2)
    reports = finder.randomize(encode_values(rng.integers(2**16, size=2000), 16), rng)
    found = finder.identify(reports, threshold=1.0)
    assert found["values"].shape == (0, 1) and found["counts"].size == 0
    assert len(found["rounds"]) == finder.n_rounds


# ---------------------------------------------------------------- strings of unknown length
def test_length_round_fits_the_prefix_rounds_to_the_lengths_found():
    rng = np.random.default_rng(6)
    short = rng.choice(["ab", "cde", "fghij"], size=30_000)
    enc = LDPEncoder(categories={"c": "strings"}, strategy="pem", epsilon=4.0,
                     max_string_bytes=64, random_state=1)
    reports = enc.fit_transform(pd.DataFrame({"c": short}))
    assert enc.string_bytes_ == 6  # the longest length found, 5, and its end
    oracle = enc.mechanism_.oracle
    assert oracle.bit_length == 48 and enc.mechanism_.max_string_bytes == 64
    length_rows = reports.reports[:, 0] >= oracle.n_rounds
    assert length_rows.sum() == 3000  # a tenth of the users reported their length only
    est = HeavyHitterEstimator().fit(reports)
    assert sorted(est.heavy_hitters_["value"]) == ["ab", "cde", "fghij"]
    # New users (other data): every one reports a prefix.
    again = enc.transform(pd.DataFrame({"c": short[:5000]}))
    assert (again.reports[:, 0] < oracle.n_rounds).all()


def test_values_longer_than_the_fitted_length_are_never_returned_truncated():
    rng = np.random.default_rng(7)
    long_tail = np.array([f"{'x' * 20}{i}" for i in range(40)])  # rare, 21-22 bytes
    values = np.where(rng.random(40_000) < 0.97, rng.choice(["abc", "defg"], size=40_000),
                      rng.choice(long_tail, size=40_000))
    est = _fit(values, max_string_bytes=32)
    assert set(est.heavy_hitters_["value"]) == {"abc", "defg"}
    with pytest.raises(ValueError, match="'" + "y" * 40 + "'.*more than the declared 32"):
        _fit(np.array(["ab"] * 3000 + ["y" * 40]), max_string_bytes=32)


def test_default_cap_takes_urls_and_the_rounds_cover_only_the_lengths_found():
    # Every default: 20-80-byte URLs are accepted, the rounds cover the longest length found
    # (not the 128-byte cap), and a value over the cap is refused naming its length and cap.
    rng = np.random.default_rng(9)
    urls = [f"https://www.site{i}.example/{'p' * (10 + 5 * i)}" for i in range(10)]
    values = rng.choice(urls, size=30_000)
    enc = LDPEncoder(categories={"c": "strings"}, strategy="pem", epsilon=4.0,
                     random_state=2)
    est = HeavyHitterEstimator().fit(enc.fit_transform(pd.DataFrame({"c": values})))
    longest = max(len(url) for url in urls)
    assert longest > 60 and enc.string_bytes_ == longest + 1
    assert enc.mechanism_.max_string_bytes == 128 and enc.max_string_bytes is None
    assert set(est.heavy_hitters_["value"]) <= set(urls) and len(est.heavy_hitters_) >= 3
    with pytest.raises(ValueError, match="takes 129 bytes in UTF-8, more than the declared "
                                         "128"):
        _fit(np.array(["ab"] * 3000 + ["y" * 129]))
    # Without a length round the declared width is 32 bytes: said in the message too.
    few = LDPEncoder(categories={"c": "strings"}, strategy="pem", epsilon=4.0)
    with pytest.raises(ValueError, match="takes 40 bytes in UTF-8, more than the declared 32"):
        few.fit_transform(pd.DataFrame({"c": ["ab", "y" * 40]}))


def test_client_truncates_as_the_server_and_refuses_above_the_declared_maximum():
    rng = np.random.default_rng(8)
    values = rng.choice(["hello", "world", "a" * 30], size=20_000)
    enc = LDPEncoder(categories={"c": "strings"}, strategy="pem", epsilon=2.0,
                     max_string_bytes=40, random_state=3).fit(pd.DataFrame({"c": values}))
    mechanism = enc.mechanism_
    spec = mechanism.client_dict()
    assert spec["max_string_bytes"] == 40 and mechanism.bit_length < 8 * 35
    words = mechanism.encode(["a" * 35])  # truncated to bit_length / 8 bytes, no end
    W = words.shape[1]
    server = int.from_bytes(words.astype(">u8").tobytes(), "big")
    assert _bit_string("a" * 35, mechanism.bit_length, 40) == server
    assert not mechanism.possible(words)[0]  # a truncated value is never a result
    client = Randomizer(spec)
    report = client.privatize("a" * 35)
    assert report[0] < mechanism.oracle.n_rounds and W >= 1
    with pytest.raises(ValueError, match="declared maximum of 40 bytes"):
        client.privatize("b" * 41)


def test_vectorized_possible_prefix_agrees_with_the_utf8_decoder():
    import codecs

    from sklearn_ldp.mechanisms.heavy_hitters.column import HeavyHitterMechanism
    mechanism = HeavyHitterMechanism(PrefixHeavyHitters(64, 2.0, "pem", 1, 1), "c",
                                     "strings", 64)
    # Starts no valid UTF-8 has (surrogates, overlong forms, above U+10FFFF), which
    # Python's incremental decoder only refuses once the character is complete.
    impossible = {bytes([a, b]) for a, lo, hi in ((0xED, 0xA0, 0xC0), (0xE0, 0x80, 0xA0),
                                                  (0xF0, 0x80, 0x90), (0xF4, 0x90, 0xC0))
                  for b in range(lo, hi)}

    def decodes(prefix, length):
        end = prefix.find(b"\0")
        if end >= 0 and prefix[end:].strip(b"\0"):
            return False
        complete = prefix[:end] if end >= 0 else prefix[:length // 8]
        try:
            codecs.getincrementaldecoder("utf-8")().decode(complete, final=end >= 0)
        except UnicodeDecodeError:
            return False
        return not any(complete[i:i + 2] in impossible for i in range(len(complete)))

    pool = np.array([0, 0x41, 0x7F, 0x80, 0x9F, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0, 0xED,
                     0xEF, 0xF0, 0xF4, 0xF5, 0xFF], dtype=np.uint8)
    raw = np.random.default_rng(0).choice(pool, size=(3000, 8))
    words = raw.view(">u8").astype(np.uint64)
    for length in (1, 8, 13, 16, 24, 31, 57, 64):
        masked = words & np.uint64(((1 << 64) - 1) ^ ((1 << (64 - length)) - 1))
        expected = [decodes(row.astype(">u8").tobytes()[:-(-length // 8)], length)
                    for row in masked]
        assert mechanism.possible_prefix(masked, length).tolist() == expected


def test_expected_error_follows_the_users_who_estimate_each_value():
    rng = np.random.default_rng(10)
    ids = np.where(rng.random(60_000) < 0.2, 4321, rng.integers(2**20, size=60_000))
    est = _fit(ids, declared=20, n_candidates=4)
    oracle = est.mechanism_.oracle
    assert est.heavy_hitters_["value"].tolist() == [4321]
    expected = est.expected_error_.loc[4321]
    # A 20-bit value is estimated by the verification round's users only.
    m = est.rounds_["users"].iloc[-1]
    assert expected["average_case"] == pytest.approx(oracle.frequency_variance(0.0, m, 60_000))
    f = est.heavy_hitters_["frequency"].iloc[0]
    assert expected["worst_case"] >= oracle.frequency_variance(f, m, 60_000)
    assert est.heavy_hitters_["std_error"].iloc[0] ** 2 == pytest.approx(
        oracle.frequency_variance(f, m, 60_000), rel=0.05)
