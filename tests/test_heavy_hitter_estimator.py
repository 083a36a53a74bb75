"""Heavy hitters through the usual door: LDPEncoder(strategy="pem" | "treehist" | "cms" |
"hcms") on a column declared as "strings" or a bit length, HeavyHitterEstimator on its
reports (the math layer is tested in test_heavy_hitters.py)."""

import json
import warnings
import zipfile

import numpy as np
import pandas as pd
import pytest
from _fuzzing import FUZZ, mutate, outcome
from _sklearn_checks import FITS_A_FEATURE_MATRIX
from _stats import check_unbiased_and_variance
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.pipeline import make_pipeline
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ldp import LDPEncoder, LDPReports, reports_from_client
from sklearn_ldp.deploy.budget import PrivacyLedger, register_ledger
from sklearn_ldp.estimators.heavy_hitters import TABLE_COLUMNS, HeavyHitterEstimator
from sklearn_ldp.mechanisms._base.specs import load_mechanism
from sklearn_ldp.mechanisms.heavy_hitters.column import HeavyHitterMechanism
from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters
from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle


def _planted(n, planted, share, bits, seed):
    """``n`` integers: each planted value with frequency ``share``, the rest uniform over
    ``[0, 2^bits)`` (so almost all distinct)."""
    rng = np.random.default_rng(seed)
    values = rng.integers(0, 2**bits, size=n, dtype=np.int64)
    slot = rng.random(n)
    for i, value in enumerate(planted):
        values[(slot >= i * share) & (slot < (i + 1) * share)] = value
    return values


# ---------------------------------------------------------------- end to end
def test_pem_recovers_planted_integers_through_a_pipeline():
    planted = [123_456_789, 2**32 - 1, 7, 3_000_000_000, 42]
    ids = _planted(300_000, planted, 0.03, 32, seed=1)
    pipe = make_pipeline(
        LDPEncoder(categories={"user_id": 32}, strategy="pem", epsilon=4.0, n_candidates=8,
                   n_users=300_000, random_state=0),
        HeavyHitterEstimator(top_k=5))
    pipe.fit(pd.DataFrame({"user_id": ids}))
    table = pipe[-1].heavy_hitters_
    assert list(table.columns) == TABLE_COLUMNS
    assert set(table["value"].tolist()) == set(planted)
    assert table["value"].dtype == np.int64
    assert np.all(np.diff(table["frequency"]) <= 0)  # sorted by the estimate
    truth = np.array([np.mean(ids == v) for v in table["value"]])
    assert np.all(np.abs(table["frequency"] - truth) < 4.5 * table["std_error"])
    assert len(pipe[-1].rounds_) == pipe[0].mechanism_.oracle.n_rounds
    assert pipe[-1].n_reports_ == ids.size
    assert list(pipe[-1].expected_error_.columns) == ["worst_case", "average_case"]


def test_pem_and_treehist_recover_planted_strings():
    rng = np.random.default_rng(2)
    words = np.array(["naïve", "日本", "emoji 😀", "ok"])
    background = np.char.add("w", rng.integers(10**6, size=150_000).astype(str))
    values = np.where(rng.random(150_000) < 0.6, words[rng.integers(4, size=150_000)],
                      background).astype(object)
    frame = pd.DataFrame({"word": values})
    for strategy, epsilon in (("pem", 4.0), ("treehist", 6.0)):
        enc = LDPEncoder(categories={"word": "strings"}, strategy=strategy, epsilon=epsilon,
                         max_string_bytes=12 if strategy == "pem" else 3, n_candidates=6,
                         random_state=0)
        if strategy == "treehist":  # 24 bits: the 3-byte prefix of every word
            frame_used = pd.DataFrame({"word": [v.encode()[:3].decode("utf-8", "ignore")
                                                for v in values]})
            expected = {w.encode()[:3].decode("utf-8", "ignore") for w in words}
        else:
            frame_used, expected = frame, set(words)
        est = HeavyHitterEstimator(top_k=4).fit(enc.fit_transform(frame_used))
        assert set(est.heavy_hitters_["value"]) == expected, (strategy, est.heavy_hitters_)
        guess = est.predict(list(expected))
        truth = np.array([np.mean(frame_used["word"] == v) for v in guess["value"]])
        assert np.all(np.abs(guess["frequency"] - truth) < 4.5 * guess["std_error"])


def test_threshold_keeps_only_frequent_values():
    ids = _planted(200_000, [11, 22, 33], 0.05, 24, seed=3)
    ids[:10_000] = 44  # a fourth value at 5% (the others lose about 5% of their users)
    reports = LDPEncoder(categories={"id": 24}, strategy="pem", epsilon=4.0, n_candidates=10,
                         random_state=1).fit_transform(pd.DataFrame({"id": ids}))
    table = HeavyHitterEstimator(threshold=0.03).fit(reports).heavy_hitters_
    assert set(table["value"]) <= {11, 22, 33, 44} and {11, 22, 33} <= set(table["value"])
    assert np.all(table["frequency"] >= 0.03)


def test_sketch_candidates_ranked_and_partial_fit_equals_fit():
    ids = _planted(40_000, [5, 6], 0.1, 32, seed=4)
    enc = LDPEncoder(categories={"id": 32}, strategy="hcms", epsilon=3.0, n_hashes=32,
                     sketch_width=256, random_state=2).fit()
    reports = enc.transform(pd.DataFrame({"id": ids}))
    one = HeavyHitterEstimator(candidates=[9, 6, 5]).fit(reports)
    assert one.heavy_hitters_["value"].tolist()[:2] in ([5, 6], [6, 5])
    two = HeavyHitterEstimator(candidates=[9, 6, 5]).partial_fit(reports[:10_000])
    two.partial_fit(reports[10_000:])
    pd.testing.assert_frame_equal(one.heavy_hitters_, two.heavy_hitters_)
    # The aggregate fits too (sketches are additive), and so does a saved file.
    agg = HeavyHitterEstimator(candidates=[9, 6, 5]).fit(reports.aggregate())
    pd.testing.assert_frame_equal(one.heavy_hitters_, agg.heavy_hitters_)


def test_encoder_charges_the_ledger_and_exports_the_protocol_spec():
    ledger = PrivacyLedger(10.0)
    register_ledger("heavy hitters test", ledger)
    enc = LDPEncoder(categories={"url": "strings"}, strategy="cms", epsilon=2.0, n_hashes=16,
                     sketch_width=64, ledger="heavy hitters test")
    enc.fit_transform(pd.DataFrame({"url": ["a", "b", "c"]}))
    assert ledger.spent().epsilon == pytest.approx(2.0)
    spec = json.loads(enc.client_spec())
    # The math layer's format, plus the values' bit length a device needs to encode them.
    assert spec.pop("bit_length") == enc.mechanism_.bit_length
    assert spec == enc.mechanism_.oracle.to_dict()
    assert SketchFrequencyOracle.from_dict(spec) == enc.mechanism_.oracle
    pem = LDPEncoder(categories={"id": 16}, strategy="pem", epsilon=1.0).fit()
    assert PrefixHeavyHitters.from_dict(json.loads(pem.client_spec())) == pem.mechanism_.oracle


@pytest.mark.parametrize("strategy", ["pem", "cms", "hcms"])
def test_stdlib_client_reports_decode(strategy):
    # Devices run sklearn_ldp.deploy.client from client_spec(); their rows, stacked, are the
    # encoder's report layout (a sketch's device also gets the bit length of the encoding).
    from sklearn_ldp.deploy.client import Randomizer

    # Hash collisions of "maps" with "mail" add about a quarter to the CMS variance at
    # 64 x 256 (the standard error leaves them out): the seeds are fixed.
    enc = LDPEncoder(categories={"app": "strings"}, strategy=strategy, epsilon=3.0,
                     max_string_bytes=5, n_candidates=4, random_state=0,
                     **({"n_hashes": 64, "sketch_width": 256} if "cms" in strategy else {}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # seeded: for tests only
        enc.fit()
        randomizer = Randomizer.from_json(enc.client_spec(), seed=1)
    values = ["mail"] * 3000 + ["maps"] * 1000 + [f"x{i}" for i in range(6000)]
    bits = enc.mechanism_.bit_length
    rows = [randomizer.privatize(v) for v in values]
    if "cms" in strategy:  # the pair form of a bare math-layer spec agrees with the declared
        assert len(randomizer.privatize(["mail", bits])) == len(rows[0])
        with pytest.raises(ValueError, match="bit_length"):
            randomizer.privatize(["mail", bits + 8])
    reports = LDPReports(np.asarray(rows, dtype=enc.mechanism_.empty_reports().dtype),
                         enc.mechanism_)
    est = HeavyHitterEstimator(top_k=2, candidates=["maps", "mail", "zzz"]).fit(reports)
    table = est.predict(["mail", "maps"])
    assert np.all(np.abs(table["frequency"] - [0.3, 0.1]) < 4.5 * table["std_error"])
    assert set(est.heavy_hitters_["value"]) == {"mail", "maps"}


def test_length_round_deploys_through_the_stdlib_client():
    # A deployment's length round: devices given length_round_spec privatize their value's
    # UTF-8 length, the server fits the bytes the prefix rounds cover and publishes them;
    # reports_from_client takes both kinds of rows for the estimator.
    from sklearn_ldp import reports_from_client
    from sklearn_ldp.deploy.client import Randomizer
    from sklearn_ldp.mechanisms.heavy_hitters.column import HeavyHitterMechanism
    from sklearn_ldp.mechanisms.heavy_hitters.prefix import (
        PrefixHeavyHitters,
        length_oracle,
        length_round_spec,
        string_bytes_from_lengths,
    )
    from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values

    randomizer = Randomizer.from_json(json.dumps(length_round_spec(4.0, 64)), seed=2)
    values = ["mail"] * 1500 + ["café au lait"] * 1000 + ["x"] * 500
    length_rows = [randomizer.privatize(v) for v in values]
    rows = np.asarray(length_rows, dtype=np.uint64)
    # The checked route (the collector's) reads the same rows, and refuses prefix rows.
    from sklearn_ldp.deploy.collect import stack_client_reports
    np.testing.assert_array_equal(
        stack_client_reports(length_rows, json.dumps(length_round_spec(4.0, 64))), rows)
    with pytest.raises(ValueError, match=r"report 1 .*65536 <= round < 65538"):
        stack_client_reports([length_rows[0], [0, 5, 1]], length_round_spec(4.0, 64))
    with pytest.raises(ValueError, match="length_round must be"):
        stack_client_reports(length_rows, dict(length_round_spec(4.0, 64),
                                               length_round={"first_round": 0}))
    assert string_bytes_from_lengths(rows, 4.0, 64) == 14  # 13 bytes, and the end
    assert string_bytes_from_lengths(rows, 4.0, 4) == 4  # at most the declared maximum
    # The plain length oracle's rows (a device computing its length itself) read the same.
    plain = Randomizer.from_json(json.dumps(length_oracle(4.0).to_dict()), seed=2)
    plain_rows = np.asarray([plain.privatize(len(v.encode())) for v in values],
                            dtype=np.uint64)
    assert string_bytes_from_lengths(plain_rows, 4.0, 64) == 14
    spread = length_oracle(0.5).randomize(
        encode_values(np.arange(200) % 60, 8), np.random.default_rng(0))
    assert string_bytes_from_lengths(spread, 0.5, 64, default=32) == 32  # nothing supported
    for bad, match in [(0, "max_string_bytes"), (256, "max_string_bytes"),
                       (True, "max_string_bytes")]:
        with pytest.raises(ValueError, match=match):
            string_bytes_from_lengths(rows, 4.0, bad)
    with pytest.raises(ValueError, match="invalid"):
        string_bytes_from_lengths(rows + np.array([0, 0, 300], dtype=np.uint64), 4.0, 64)
    with pytest.raises(ValueError, match="reports must be"):
        string_bytes_from_lengths(rows[:, :2], 4.0, 64)
    # Then the prefix rounds for that many bytes, the declared maximum kept (a longer value
    # is sent truncated), published to the other devices.
    covered = string_bytes_from_lengths(rows, 4.0, 64)
    mechanism = HeavyHitterMechanism(
        PrefixHeavyHitters(8 * covered, 4.0, n_candidates=4, n_users=11_000), "app",
        "strings", 8 * covered, max_string_bytes=64)
    device = Randomizer.from_json(json.dumps(mechanism.client_dict()))
    others = ["mail"] * 4000 + ["café au lait"] * 3000 + ["x"] * 1000 \
        + ["a rare value longer than fourteen bytes"] * 5
    prefix_rows = [device.privatize(v) for v in others]
    reports = reports_from_client(prefix_rows + length_rows, mechanism)
    assert reports.shape[0] == len(others) + len(values)
    est = HeavyHitterEstimator(top_k=3).fit(reports)
    assert set(est.heavy_hitters_["value"]) == {"mail", "café au lait", "x"}
    # A length row outside the length oracle's outputs, or of a round neither kind has.
    g = length_oracle(4.0).g
    for row in ([65536, 1, g], [65538, 1, 0], [70000, 1, 0]):
        with pytest.raises(ValueError, match="length rounds 65536 to 65537"):
            reports_from_client(prefix_rows[:5] + [row], mechanism)


def test_pandas_output_and_saved_reports_round_trip(tmp_path):
    frame = pd.DataFrame({"id": np.arange(500) % 7}, index=np.arange(500) + 10)
    for strategy in ("pem", "treehist", "cms", "hcms"):
        enc = LDPEncoder(categories={"id": 8}, strategy=strategy, epsilon=2.0,
                         random_state=0, **({"n_hashes": 16} if "cms" in strategy else {}))
        reports = enc.fit_transform(frame)
        path = tmp_path / f"{strategy}.npz"
        reports.save(path)
        loaded = LDPReports.load(path)
        assert loaded.mechanism == reports.mechanism
        np.testing.assert_array_equal(loaded.reports, reports.reports)
        out = clone(enc).set_output(transform="pandas").fit_transform(frame)
        assert out.index.equals(frame.index)
        assert list(out.columns) == list(enc.get_feature_names_out())
        HeavyHitterEstimator(candidates=[1, 2]).fit(out)  # the frame is reports


def test_missing_values_become_the_declared_value():
    frame = pd.DataFrame({"app": ["mail", None, "maps", np.nan]})
    with pytest.raises(ValueError, match="'app' has 2 missing values"):
        LDPEncoder(categories={"app": "strings"}, strategy="hcms").fit_transform(frame)
    enc = LDPEncoder(categories={"app": "strings"}, strategy="hcms", handle_missing="category",
                     missing_category={"app": "(none)"}, random_state=0)
    assert len(enc.fit_transform(frame)) == 4
    with pytest.raises(ValueError, match="takes 40 bytes"):
        LDPEncoder(categories={"app": "strings"}, strategy="hcms", handle_missing="category",
                   missing_category="x" * 40).fit()


# ---------------------------------------------------------------- statistics
@pytest.mark.parametrize("strategy", ["cms", "hcms"])
def test_sketch_counts_unbiased_with_their_analytic_variance(strategy):
    # A candidate with 5% of the users and one with none; the other values are distinct, so
    # the collisions of a report with a candidate are the rho (1 - rho) term of the formula
    # (over the fresh hash seed each collection draws), and the 5% candidate's collisions
    # with the absent one add about 0.2% to its variance.
    n, replicates = 10_000, 200
    ids = _planted(n, [77], 0.05, 32, seed=5)
    ids[ids == 78] = 79
    truth = np.array([np.sum(ids == 77), 0])
    frame = pd.DataFrame({"id": ids})
    answers, errors = np.empty((replicates, 2)), np.empty((replicates, 2))
    for r in range(replicates):
        enc = LDPEncoder(categories={"id": 32}, strategy=strategy, epsilon=2.0, n_hashes=64,
                         sketch_width=256, random_state=1000 + r)
        table = HeavyHitterEstimator().fit(enc.fit_transform(frame)).predict([77, 78])
        answers[r], errors[r] = table["count"], table["count_std_error"]
    mechanism = enc.mechanism_
    _, held = np.unique(ids, return_counts=True)
    variance = n * mechanism.oracle.count_variance_per_user(truth / n, n, np.sum((held / n) ** 2))
    check_unbiased_and_variance(answers, truth, variance)
    # The reported standard errors (from the estimated frequency) match the analytic one.
    assert np.all(np.abs(errors.mean(axis=0) / np.sqrt(variance) - 1) < 0.1)


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("params, match", [
    ({"categories": {"url": "string"}, "strategy": "pem"}, "declared as 'strings'"),
    ({"categories": {"url": "abc"}, "strategy": "oue"}, "categories are a list"),
    ({"categories": {"url": "strings", "id": 32}, "strategy": "pem"}, "one column"),
    ({"categories": {"id": 0}, "strategy": "pem"}, r"categories\['id'\] = 0"),
    ({"categories": {"id": 65}, "strategy": "cms"}, r"categories\['id'\] = 65"),
    ({"categories": {"id": True}, "strategy": "pem"}, r"categories\['id'\] = 'True'"),
    ({"categories": {"id": ["a", "b"]}, "strategy": "treehist"}, "a list of categories"),
    ({"categories": None, "strategy": "pem"}, "categories=None"),
    ({"categories": {"url": "strings"}, "strategy": "oue"}, "strategy='oue'"),
    ({"categories": {"url": "strings"}, "max_string_bytes": 0}, "max_string_bytes"),
    ({"categories": {"url": "strings"}, "max_string_bytes": 129}, "max_string_bytes"),
    ({"categories": {"id": 8}, "strategy": "pem", "n_hashes": 16}, "n_hashes=16"),
    ({"categories": {"id": 8}, "strategy": "cms", "extension_bits": 2}, "extension_bits"),
    ({"categories": {"id": 8}, "strategy": "hcms", "sketch_width": 100}, "power-of-two"),
    ({"categories": {"id": 8}, "handle_unknown": "other", "unknown_category": 0},
     "no value is unknown"),
    ({"categories": {"id": 8}, "n_users": 0}, "n_users"),
    ({"categories": {"id": 8}, "epsilon": -1.0}, "epsilon"),
])
def test_encoder_refuses_nonsense(params, match):
    with pytest.raises(ValueError, match=match):
        LDPEncoder(**params).fit()


@pytest.mark.parametrize("declared, values, match", [
    ("strings", ["ok", "bad \ud800 surrogate"], r"'bad \\ud800 surrogate' at row 1 is not "
                                                 "valid in UTF-8"),
    ("strings", ["ok", "é" * 20], "takes 40 bytes in UTF-8, more than the declared 32"),
    ("strings", ["ok", 5], "row 1 is 5"),
    (16, [1, 2**16], "65536 at row 1 is outside"),
    (16, [1, -3], "-3 at row 1 is outside"),
    (16, [1.0, 2.5], "2.5 at row 1 is not an integer"),
    (16, ["1", "x"], "row 0 is '1'"),
    (16, [True, False], "row 0 is True"),
])
def test_bad_values_are_named(declared, values, match):
    enc = LDPEncoder(categories={"col": declared}, strategy="hcms", n_hashes=16,
                     sketch_width=64).fit()
    with pytest.raises(ValueError, match=match):
        enc.transform(pd.DataFrame({"col": pd.Series(values, dtype=object)}))
    est = HeavyHitterEstimator().fit(enc.transform(pd.DataFrame(
        {"col": ["a"] if declared == "strings" else [1]})))
    with pytest.raises(ValueError, match=match.replace("at row 1", "at row 1")):
        est.predict(values)


@pytest.mark.parametrize("bad, match", [
    ("x\0y", "'x.x00y' at row 2501 holds a NUL"),
    ("\ud800", "at row 2501 is not valid in UTF-8"),
    (7, "row 2501 is 7"),
    ("é" * 70, "at row 2501 takes 140 bytes"),
])
def test_repeated_strings_checked_once_and_the_first_row_named(bad, match):
    # The encoder checks each distinct string once (fit's length round and transform): the
    # message still names the first user holding the bad value.
    column = pd.Series(["ok", "fine"] * 1250 + ["ok", bad, "ok", bad], dtype=object)
    frame = pd.DataFrame({"c": column})
    with pytest.raises(ValueError, match=match):
        LDPEncoder(categories={"c": "strings"}, random_state=0).fit(frame)
    enc = LDPEncoder(categories={"c": "strings"}, random_state=0).fit(frame.iloc[:2500])
    if not isinstance(bad, str) or len(bad) < 70:  # longer than the fitted rounds: truncated
        with pytest.raises(ValueError, match=match):
            enc.transform(frame)


def test_strings_encoded_once_per_distinct_value_give_the_same_words():
    # Same words, so the same reports for the same seed (the randomizer sees only words).
    rng = np.random.default_rng(5)
    vocabulary = np.array(["", "a", "é", "ab" * 5, "z" * 20, "日本"], dtype=object)
    column = vocabulary[rng.integers(vocabulary.size, size=3000)]
    mechanism = HeavyHitterMechanism(PrefixHeavyHitters(8 * 20, 2.0), "c", "strings", 160)
    distinct, inverse = np.unique(column.astype(str), return_inverse=True)
    np.testing.assert_array_equal(mechanism.encode(distinct.astype(object), inverse=inverse),
                                  mechanism.encode(column))
    for first, second in zip(mechanism.utf8(distinct, inverse=inverse), mechanism.utf8(column),
                             strict=True):
        np.testing.assert_array_equal(first, second)
    with pytest.raises(ValueError, match="inverse must be 1-D integers in \\[0, 6\\)"):
        mechanism.encode(distinct, inverse=inverse + 1)


def test_duplicate_candidates_warn_and_are_estimated_once():
    enc = LDPEncoder(categories={"col": 16}, strategy="hcms", n_hashes=16, sketch_width=64,
                     random_state=0)
    reports = enc.fit_transform(pd.DataFrame({"col": np.arange(100) % 5}))
    with pytest.warns(UserWarning, match="2 duplicate"):
        est = HeavyHitterEstimator(candidates=[3, 1, 3, 2, 1]).fit(reports)
    assert est.n_tested_ == 3
    with pytest.warns(UserWarning, match="1 duplicate"):
        assert est.predict([4, 4, 0])["value"].tolist() == [4, 0]


def test_estimator_refuses_bad_parameters_and_foreign_reports():
    enc = LDPEncoder(categories={"col": 16}, strategy="pem", n_candidates=4, random_state=0)
    reports = enc.fit_transform(pd.DataFrame({"col": np.arange(2000) % 5}))
    for params in ({"top_k": 0}, {"top_k": 2.0}, {"top_k": True}, {"threshold": 1.5},
                   {"threshold": 0}, {"threshold": True}, {"threshold": float("nan")},
                   {"alpha": 0}, {"alpha": 1.0}, {"alpha": "0.05"}):
        with pytest.raises(ValueError, match=next(iter(params))):
            HeavyHitterEstimator(**params).fit(reports)
    other = LDPEncoder(categories={"a": ["x", "y"]}, strategy="oue").fit_transform(
        pd.DataFrame({"a": ["x", "y"]}))
    with pytest.raises(ValueError, match="HeavyHitterEstimator decodes"):
        HeavyHitterEstimator().fit(other)
    est = HeavyHitterEstimator().fit(reports)
    with pytest.raises(ValueError, match="different mechanism"):
        est.partial_fit(LDPEncoder(categories={"col": 16}, strategy="pem", epsilon=2.0)
                        .fit_transform(pd.DataFrame({"col": [1, 2]})))
    with pytest.raises(NotImplementedError, match="no exact simulation"):
        enc.simulate(pd.DataFrame({"col": [1]}))


def test_tampered_report_file_is_refused(tmp_path):
    enc = LDPEncoder(categories={"url": "strings"}, strategy="pem", random_state=0)
    reports = enc.fit_transform(pd.DataFrame({"url": ["a", "b"] * 50}))
    path = tmp_path / "reports.npz"
    reports.save(path)
    # Edit the reports member and rewrite the archive with valid CRCs: only the SHA-256 of
    # the contents can tell.
    tampered = tmp_path / "tampered.npz"
    with np.load(path) as contents:
        arrays = {key: contents[key] for key in contents.files}
    arrays["reports"] = arrays["reports"].copy()
    arrays["reports"][0, 2] ^= np.uint64(1)
    with open(tampered, "wb") as file:
        np.savez_compressed(file, **arrays)
    with pytest.raises(ValueError, match="checksum mismatch"):
        LDPReports.load(tampered)
    # A header whose mechanism spec lies about epsilon, checksum recomputed by an editor.
    from sklearn_ldp.deploy.npz import _members_digest
    arrays = dict(np.load(path))
    header = json.loads(str(arrays["header"]))
    header["mechanism"]["epsilon"] = 9.0
    arrays["header"] = np.array(json.dumps(header))
    arrays["sha256"] = np.array(_members_digest(arrays))
    with open(tampered, "wb") as file:
        np.savez_compressed(file, **arrays)
    with pytest.raises(ValueError, match="tampered.npz: cannot rebuild the mechanism.*epsilon"):
        LDPReports.load(tampered)
    # Truncated.
    data = path.read_bytes()
    (tmp_path / "short.npz").write_bytes(data[:len(data) // 2])
    with pytest.raises(ValueError, match="short.npz"):
        LDPReports.load(tmp_path / "short.npz")
    assert zipfile.is_zipfile(path)


@pytest.mark.parametrize("strategy", ["pem", "treehist", "cms", "hcms"])
def test_client_reports_validated_or_dropped(strategy):
    enc = LDPEncoder(categories={"id": 16}, strategy=strategy, random_state=0,
                     **({"n_hashes": 16} if "cms" in strategy else {}))
    reports = enc.fit_transform(pd.DataFrame({"id": np.arange(300) % 5}))  # every round
    bad = reports.reports.copy()
    bad[0, 0] = 200  # a round, or a hash index, that does not exist
    with pytest.raises(ValueError, match=f"report 0 of the '{strategy}' mechanism"):
        reports_from_client(bad, enc.mechanism_.to_json())
    kept = reports_from_client(bad, enc.mechanism_.to_json(), invalid="drop")  # logged
    assert len(kept) == 299 and kept.n_invalid == 1
    assert HeavyHitterEstimator().fit(kept).n_invalid_reports_ == 1


def test_sketch_spec_sizes_are_capped_before_allocation():
    spec = LDPEncoder(categories={"id": 8}, strategy="cms", n_hashes=16).fit() \
        .mechanism_.to_dict()
    spec["params"]["oracle"].update(n_hashes=2**16, width=2**20)
    with pytest.raises(ValueError, match="max_matrix_entries"):
        load_mechanism(spec)


# ---------------------------------------------------------------- pruning inside the rounds
def _prefix_words(mechanism, text_bytes, length):
    """The (1, W) words of the first ``length`` bits of ``text_bytes`` (zero-padded)."""
    padded = text_bytes.ljust(mechanism.bit_length // 8, b"\0")
    words = np.frombuffer(padded.ljust(mechanism.n_words * 8, b"\0"), dtype=">u8")
    words = words.astype(np.uint64)[None, :]
    bits = np.arange(mechanism.n_words * 64) < length  # keep the first `length` bits
    mask = np.packbits(bits).view(">u8").astype(np.uint64)
    return words & mask


def test_possible_prefix_rules_for_strings():
    mechanism = LDPEncoder(categories={"url": "strings"}, strategy="pem", epsilon=2.0,
                           max_string_bytes=8).fit().mechanism_
    cases = [(b"abc", 24, True), (b"abc", 20, True), (b"ab\0c", 32, False),  # NUL inside
             (b"ab", 40, True),  # the padding: zeros after the end of the string
             ("é".encode(), 8, True),  # the first byte of a two-byte character
             (b"\xc3(", 16, False),  # a lead byte followed by a non-continuation byte
             (b"\xff", 8, False), (b"a\x80", 16, False)]  # never valid in UTF-8
    for text, length, expected in cases:
        assert mechanism.possible_prefix(_prefix_words(mechanism, text, length),
                                         length)[0] == expected, (text, length)
    integers = LDPEncoder(categories={"id": 16}, strategy="pem", epsilon=2.0).fit().mechanism_
    assert integers.possible_prefix(np.zeros((3, 1), dtype=np.uint64), 8).all()


def test_pruned_rounds_return_no_string_nobody_holds():
    # Long strings, few users per round: every round drops the prefixes no user can hold (a
    # NUL inside, invalid UTF-8) and the insignificant ones, and the final test drops the
    # values not supported on held-out users.
    rng = np.random.default_rng(0)
    names = np.array([f"site{i}.com" for i in range(2000)])
    weights = 1 / np.arange(1, 2001) ** 1.2
    frame = pd.DataFrame({"url": rng.choice(names, size=60_000, p=weights / weights.sum())})
    enc = LDPEncoder(categories={"url": "strings"}, strategy="pem", epsilon=4.0,
                     max_string_bytes=16, random_state=2)
    reports = enc.fit_transform(frame)
    mechanism = enc.mechanism_
    found = mechanism.oracle.identify(mechanism.prefix_reports(reports.reports),
                                      possible_prefix=mechanism.possible_prefix,
                                      ended_prefix=mechanism.ended_prefix)
    assert mechanism.possible_prefix(found["values"], mechanism.bit_length).all()
    est = HeavyHitterEstimator().fit(reports)
    values = est.heavy_hitters_["value"].tolist()
    assert set(values) <= set(frame["url"]) and len(values) >= 3
    assert set(values[:3]) <= set(frame["url"].value_counts().index[:5])


# ---------------------------------------------------------------- scikit-learn checks
FIT_TAKES_REPORTS = ("fit decodes LDP reports: the default estimator (strategy=None) refuses a "
                     "raw feature matrix by design (privatizing raw records is a collection)")


@parametrize_with_checks([HeavyHitterEstimator()],
                         expected_failed_checks=lambda est: dict.fromkeys(
                             FITS_A_FEATURE_MATRIX, FIT_TAKES_REPORTS))
def test_sklearn_compatible_estimator(estimator, check):
    name = getattr(check, "func", check).__name__
    try:
        check(estimator)
    except Exception as error:
        if name not in FITS_A_FEATURE_MATRIX:
            raise
        raise AssertionError(f"{name}: {type(error).__name__}: {error}") from None


# ---------------------------------------------------------------- fuzzing


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
              st.text(max_size=6), st.sampled_from(["pem", "treehist", "strings", "integers",
                                                    "sketch", "prefix_heavy_hitters"])),
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=10)


def _valid_specs():
    return [LDPEncoder(categories=categories, strategy=strategy, random_state=0,
                       **extra).fit().mechanism_.to_dict()
            for categories, strategy, extra in (
                ({"url": "strings"}, "pem", {"max_string_bytes": 4}),
                ({"id": 20}, "treehist", {}),
                ({"id": 32}, "cms", {"n_hashes": 16, "sketch_width": 64}),
                ({"url": "strings"}, "hcms", {"n_hashes": 16, "sketch_width": 64}))]


@FUZZ
@given(data=st.data())
def test_fuzz_edited_heavy_hitter_specs(data):
    spec = data.draw(st.sampled_from(_valid_specs()))
    mechanism = outcome(load_mechanism, mutate(spec, data, json_values))
    if mechanism is not None:  # what loads claims its oracle's epsilon, and works
        assert isinstance(mechanism, HeavyHitterMechanism)
        assert mechanism.epsilon == mechanism.oracle.epsilon
        sample = ["a", "bc"] if mechanism.value_type == "strings" else [0, 1]
        reports = outcome(mechanism.randomize, sample, np.random.default_rng(0))
        if reports is not None:
            assert LDPReports(reports, mechanism).shape[0] == 2


@FUZZ
@given(categories=st.one_of(json_values, st.dictionaries(
           st.sampled_from(["a", "b"]), st.one_of(json_values, st.integers(-5, 70)),
           max_size=2)),
       strategy=st.sampled_from(["pem", "treehist", "cms", "hcms", "auto"]),
       max_string_bytes=st.one_of(json_values, st.integers(-2, 200)),
       n_candidates=st.one_of(st.none(), st.integers(-2, 10**6), st.floats()),
       extension_bits=st.one_of(st.none(), st.integers(-2, 40)),
       sketch_width=st.one_of(st.none(), st.integers(-2, 2**22)),
       n_hashes=st.one_of(st.none(), st.integers(-2, 2**17)))
def test_fuzz_encoder_constructor(categories, strategy, max_string_bytes, n_candidates,
                                  extension_bits, sketch_width, n_hashes):
    if n_candidates is None:
        n_candidates = 20
    enc = LDPEncoder(categories=categories, strategy=strategy,
                     max_string_bytes=max_string_bytes, n_candidates=n_candidates,
                     extension_bits=extension_bits, sketch_width=sketch_width,
                     n_hashes=n_hashes, random_state=0)
    fitted = outcome(enc.fit)
    if fitted is not None and isinstance(fitted.mechanism_, HeavyHitterMechanism):
        column = fitted.mechanism_.column
        sample = ["x", "y"] if fitted.mechanism_.value_type == "strings" else [0, 1]
        reports = outcome(fitted.transform, pd.DataFrame({column: sample}))
        assert reports is not None and len(reports) == 2


_SAVED = {}


def _saved_file(tmp_path_factory):
    """The bytes of one saved report file (written once)."""
    if "bytes" not in _SAVED:
        path = tmp_path_factory.mktemp("saved") / "reports.npz"
        LDPEncoder(categories={"id": 12}, strategy="hcms", n_hashes=16, sketch_width=64,
                   random_state=0).fit_transform(pd.DataFrame({"id": [1, 2, 3]})).save(path)
        _SAVED["bytes"] = path.read_bytes()
    return _SAVED["bytes"]


@FUZZ
@given(data=st.binary(max_size=400), cut=st.integers(0, 4000))
def test_fuzz_damaged_report_files(tmp_path_factory, data, cut):
    directory = tmp_path_factory.mktemp("files")
    original = _saved_file(tmp_path_factory)
    damaged = original[:cut] + data + original[cut + len(data):]
    (directory / "damaged.npz").write_bytes(damaged)
    loaded = outcome(LDPReports.load, directory / "damaged.npz")
    if loaded is not None:  # only an unchanged file loads (the SHA-256 covers the content)
        assert damaged == original or loaded.shape[0] == 3
