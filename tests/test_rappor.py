"""RAPPOR (Erlingsson et al. 2014): exact laws, privacy, memoization, unbiased bit counts and
candidate frequencies with the regression's variance, hostile inputs."""

import json
import math
import warnings

import numpy as np
import pytest
from _fuzzing import FUZZ, mutate, outcome
from _laws import assert_private, assert_sampled_law
from _stats import check_unbiased, variance_band
from hypothesis import given
from hypothesis import strategies as st

import sklearn_ldp.deploy.client as client_module
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.collect import reports_from_client
from sklearn_ldp.mechanisms import mechanism_from_dict
from sklearn_ldp.mechanisms._base.exact import ExactLaw, audit_privacy, laws_within
from sklearn_ldp.mechanisms.heavy_hitters.rappor import RapporMechanism
from sklearn_ldp.mechanisms.heavy_hitters.rappor_decoder import (
    MAX_RAPPOR_CANDIDATES,
    candidate_variance,
    decode_candidates,
)

SMALL = dict(n_bits=6, n_hashes=2, n_cohorts=2, f=0.5, p=0.25, q=0.75)


def test_default_parameters_and_epsilons_are_the_papers():
    rappor = RapporMechanism()
    assert (rappor.n_bits, rappor.n_hashes, rappor.n_cohorts) == (128, 2, 64)
    assert (rappor.f, rappor.p, rappor.q) == (0.5, 0.5, 0.75)
    # eps_inf = 2h ln((1 - f/2) / (f/2)) = 4 ln 3; eps_1 = h ln(q*(1-p*) / (p*(1-q*))).
    assert rappor.epsilon_inf == pytest.approx(4 * math.log(3), rel=1e-14)
    assert rappor.epsilon_inf >= 4 * math.log(3) * (1 - 1e-15)
    qs, ps = 0.6875, 0.5625
    assert (rappor.q_star, rappor.p_star) == (qs, ps)
    assert rappor.epsilon_1 == pytest.approx(2 * math.log(qs * (1 - ps) / (ps * (1 - qs))))


@pytest.mark.parametrize("epsilon_name", ["epsilon_1"])
def test_exact_law_is_private_at_the_reported_epsilon(epsilon_name):
    rappor = RapporMechanism(**SMALL)
    values = ["a", "b", "c", "zz", ""]
    realised = assert_private(rappor, values, rappor.epsilon_1)
    assert realised <= rappor.epsilon_1
    # Some pair of values with disjoint filters in a cohort attains (nearly) the bound: the
    # reported epsilon is not loose.
    assert realised > 0.5 * rappor.epsilon_1
    # A claim just below the realised value is refused, exactly.
    assert not audit_privacy(rappor, values, realised * (1 - 1e-9)).private


def test_permanent_response_within_epsilon_inf_exactly():
    rappor = RapporMechanism(**SMALL)
    one = 2**52
    keep, flip = one - rappor._half_f, rappor._half_f
    # Two filters differing in 2h bits: the worst ratio of the permanent response.
    first = ExactLaw(np.arange(2), [keep**4, flip**4], (keep + flip) ** 4)
    second = ExactLaw(np.arange(2), [flip**4, keep**4], (keep + flip) ** 4)
    assert laws_within(first, second, rappor.epsilon_inf)[0]
    assert not laws_within(first, second, rappor.epsilon_inf * (1 - 1e-12))[0]


def test_sampled_reports_follow_the_exact_law():
    rappor = RapporMechanism(**SMALL)
    rng = np.random.default_rng(1)
    n = 40_000
    for value in ("a", "zz"):
        reports = rappor.randomize(np.full(n, value, dtype=object), rng)
        assert_sampled_law(rappor.exact_law(value), reports)


def test_permanent_response_is_memoized_and_derived_from_the_secret():
    rappor = RapporMechanism()
    rng = np.random.default_rng(2)
    values = np.array(["x", "y", "x"], dtype=object)
    state = rappor.new_state(3, rng)
    first, cohorts = rappor.permanent_response(values, state)
    rebuilt = rappor.new_state(3, secrets=state.secrets)  # a restore / a second process
    again, cohorts_again = rappor.permanent_response(values, rebuilt)
    assert (first == again).all() and (cohorts == cohorts_again).all()
    # Many rounds of one value: every report bit's mean tends to q or p of the permanent bit,
    # never to the Bloom bit itself.
    many = np.array(["x"] * 2000, dtype=object)
    state = rappor.new_state(1, rng)
    reports = np.vstack([rappor.randomize(many[:1], rng, state) for _ in range(400)])
    permanent, _ = rappor.permanent_response(many[:1], state)
    bits = np.unpackbits(reports[:, 2:], axis=1, bitorder="little")[:, :128].mean(axis=0)
    expected = np.where(np.unpackbits(permanent, bitorder="little")[:128], 0.75, 0.5)
    assert np.abs(bits - expected).max() < 5 * math.sqrt(0.25 / 400)


def _simulate(rappor, values, rng):
    state = rappor.new_state(values.size, rng)
    return rappor.aggregate(rappor.randomize(values, rng, state)), state


def test_bit_count_estimates_are_unbiased_with_the_analytic_variance():
    rappor = RapporMechanism(n_bits=16, n_hashes=2, n_cohorts=4)
    rng = np.random.default_rng(3)
    values = np.array(["alpha"] * 3000 + ["beta"] * 1500 + ["gamma"] * 500, dtype=object)
    z = []
    for _ in range(100):
        statistic, state = _simulate(rappor, values, rng)
        fingerprints, inverse = rappor.fingerprints(values)
        cohorts = rappor.cohorts(state.secrets)
        positions = rappor.bloom_positions(fingerprints[inverse], cohorts)
        truth = np.zeros((4, 16))
        bloom = np.zeros((values.size, 16))
        bloom[np.arange(values.size)[:, None], positions] = 1
        np.add.at(truth, cohorts, bloom)
        variance = rappor.bit_count_variance(truth, np.bincount(cohorts, minlength=4))
        z.append((rappor.bit_count_estimates(statistic) - truth) / np.sqrt(variance))
    z = np.array(z).reshape(-1)  # 6400 standardized errors
    assert abs(z.mean()) < 4.5 / math.sqrt(z.size)
    assert variance_band(z.var(), 1.0, z.size)


def _fixed_cohort_users(rappor, table, rng):
    """Fresh secrets whose cohorts hold ``table[j, s]`` users of candidate ``s``: the
    decoder's covariance is given the cohort assignment."""
    sizes = table.sum(axis=1)
    pool = rappor.new_state(int(3 * sizes.sum()), rng).secrets
    cohorts = rappor.cohorts(pool)
    chosen = np.concatenate([np.flatnonzero(cohorts == j)[:size] for j, size in
                             enumerate(sizes)])
    assert chosen.size == sizes.sum()
    codes = np.concatenate([np.repeat(np.arange(table.shape[1]), row) for row in table])
    return pool[chosen], codes


def test_candidate_frequencies_unbiased_and_variance_within_5_percent():
    rappor = RapporMechanism(n_bits=32, n_hashes=2, n_cohorts=8)
    candidates = [f"site-{i}.example" for i in range(10)]
    shares = np.array([30, 20, 15, 10, 8, 6, 5, 3, 2, 1])
    table = np.tile(shares * 5, (8, 1))  # 500 users per cohort, 4000 in all
    truth = shares / shares.sum()
    covariance = candidate_variance(rappor, candidates, table)
    rng = np.random.default_rng(4)
    estimates = []
    for _ in range(400):
        secrets, codes = _fixed_cohort_users(rappor, table, rng)
        values = np.array(candidates, dtype=object)[codes]
        state = rappor.new_state(values.size, secrets=secrets)
        statistic = rappor.aggregate(rappor.randomize(values, rng, state))
        estimates.append(decode_candidates(rappor, statistic, candidates).frequencies)
    estimates = np.array(estimates)
    variance = np.diag(covariance)
    z = (estimates.mean(axis=0) - truth) / np.sqrt(variance / len(estimates))
    assert np.all(np.abs(z) < 4.5), z
    ratio = estimates.var(axis=0, ddof=1) / variance
    assert variance_band(estimates.var(axis=0, ddof=1), variance, len(estimates))
    # Pooled over the candidates (4000 squared errors): within 5% of the analytic variance.
    assert abs(ratio.mean() - 1) < 0.05, ratio


@pytest.mark.parametrize("params", [dict(), dict(f=0.05, p=0.0, q=1.0)])
def test_reported_variance_includes_the_random_split_into_cohorts(params):
    """Fresh users, each in a random cohort, 400 collections of 4000 users: the variance of
    every candidate's estimate is within the chi-square band of the mean reported variance
    (which adds the split into cohorts to the variance given the cohorts), and, pooled over
    the 10 candidates, within 10% of it. At f = 0.05 without instantaneous noise the split is
    most of the variance (the variance given the cohorts alone is 2.4 times too small)."""
    rappor = RapporMechanism(n_bits=32, n_hashes=2, n_cohorts=8, **params)
    candidates = [f"site-{i}.example" for i in range(10)]
    shares = np.array([30, 20, 15, 10, 8, 6, 5, 3, 2, 1])
    values = np.array(candidates, dtype=object)[np.repeat(np.arange(10), shares * 40)]
    rng = np.random.default_rng(9)
    estimates, reported = [], []
    for _ in range(400):
        statistic, _ = _simulate(rappor, values, rng)
        found = decode_candidates(rappor, statistic, candidates)
        estimates.append(found.frequencies)
        reported.append(np.diag(found.covariance))
    variance = np.mean(reported, axis=0)
    spread = np.var(estimates, axis=0, ddof=1)
    check_unbiased(np.array(estimates), shares / shares.sum(), variance)
    assert variance_band(spread, variance, len(estimates), level=1e-4), spread / variance
    assert abs((spread / variance).mean() - 1) < 0.1, spread / variance


def test_decoder_detects_the_present_candidates_only():
    rappor = RapporMechanism()
    rng = np.random.default_rng(5)
    values = np.array(["a"] * 50_000 + ["b"] * 30_000 + ["c"] * 20_000, dtype=object)
    statistic, _ = _simulate(rappor, values, rng)
    absent = [f"absent-{i}" for i in range(40)]
    found = decode_candidates(rappor, statistic, ["a", "b", "c", *absent])
    assert found.detected[:3].all() and not found.detected[3:].any()
    assert found.n_reports == 100_000
    assert np.all(np.abs(found.frequencies[:3] - [0.5, 0.3, 0.2]) < 4.5 * found.std_errors[:3])
    assert found.p_values[:3].max() < 1e-6


def test_statistic_is_additive_over_batches():
    rappor = RapporMechanism(n_bits=16, n_cohorts=4)
    rng = np.random.default_rng(6)
    values = np.array(["a", "b", "c"] * 100, dtype=object)
    reports = rappor.randomize(values, rng)
    whole = rappor.aggregate(reports)
    assert (rappor.aggregate(reports[:120]) + rappor.aggregate(reports[120:]) == whole).all()
    assert whole.reshape(4, 17)[:, -1].sum() == 300


# ---------------------------------------------------------------------- hostile inputs
@pytest.mark.parametrize("kwargs, match", [
    (dict(f=0.0), "f must lie in"), (dict(f=1.0), "f must lie in"),
    (dict(f=float("nan")), "f must be a probability"), (dict(f="0.5"), "f must be"),
    (dict(p=-0.1), "p must lie in"), (dict(q=1.5), "q must lie in"),
    (dict(p=0.75, q=0.5), "p must be below q"), (dict(p=0.5, q=0.5), "p must be below q"),
    (dict(n_cohorts=0), "n_cohorts must be"), (dict(n_cohorts=2**16 + 1), "n_cohorts"),
    (dict(n_cohorts=2.5), "n_cohorts"), (dict(n_cohorts=True), "n_cohorts"),
    (dict(n_bits=0), "n_bits"), (dict(n_hashes=0), "n_hashes"),
    (dict(n_bits=4096, n_hashes=3), "n_bits \\*\\* n_hashes"),
    (dict(n_bits=4096, n_hashes=1, n_cohorts=4097), "n_bits \\* n_cohorts"),
    (dict(hash_seed=-1), "hash_seed"), (dict(max_string_bytes=0), "max_string_bytes"),
])
def test_bad_parameters_name_the_value(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RapporMechanism(**kwargs)


def test_bad_candidates_name_the_value():
    rappor = RapporMechanism()
    statistic = np.zeros(64 * 129, dtype=np.int64)
    statistic[128] = 10
    with pytest.raises(ValueError, match="candidates\\[2\\] = 'a' is a duplicate"):
        decode_candidates(rappor, statistic, ["a", "b", "a"])
    with pytest.raises(TypeError, match="candidates\\[1\\] = 3"):
        decode_candidates(rappor, statistic, ["a", 3])
    with pytest.raises(ValueError, match="more than the 4096"):
        decode_candidates(rappor, statistic, [str(i) for i in range(MAX_RAPPOR_CANDIDATES + 1)])
    with pytest.raises(ValueError, match="at least one"):
        decode_candidates(rappor, statistic, [])
    with pytest.raises(ValueError, match="alpha"):
        decode_candidates(rappor, statistic, ["a"], alpha=1.5)
    tiny = RapporMechanism(n_bits=2, n_hashes=1, n_cohorts=1)
    tiny_statistic = np.array([3, 4, 10])
    with pytest.raises(ValueError, match="at most one candidate per count|same Bloom bits"):
        decode_candidates(tiny, tiny_statistic, ["a", "b", "c"])
    with pytest.raises(ValueError, match="no reports"):
        decode_candidates(rappor, np.zeros(64 * 129, dtype=np.int64), ["a"])


def test_bad_values_reports_and_statistics_are_refused():
    rappor = RapporMechanism(n_bits=12, n_cohorts=3)
    rng = np.random.default_rng(7)
    state = rappor.new_state(2, rng)
    with pytest.raises(TypeError, match="values\\[1\\] = None"):
        rappor.randomize(np.array(["a", None], dtype=object), rng, state)
    with pytest.raises(ValueError, match="NUL"):
        rappor.randomize(np.array(["a", "b\0"], dtype=object), rng, state)
    with pytest.raises(ValueError, match="more than max_string_bytes=64"):
        rappor.randomize(np.array(["a", "x" * 65], dtype=object), rng, state)
    with pytest.raises(ValueError, match="2 strings"):
        rappor.randomize(np.array(["a"], dtype=object), rng, state)
    reports = rappor.randomize(np.array(["a", "b"], dtype=object), rng, state)
    bad_cohort = reports.copy()
    bad_cohort[1, :2] = [0, 3]
    with pytest.raises(ValueError, match="report 1 .*a cohort below 3"):
        rappor.aggregate(bad_cohort)
    bad_bits = reports.copy()
    bad_bits[0, -1] |= 0x80
    with pytest.raises(ValueError, match="report 0"):
        rappor.aggregate(bad_bits)
    assert rappor.report_validity(bad_bits).valid.tolist() == [False, True]
    with pytest.raises(ValueError, match="uint8 rows of 4 bytes"):
        rappor.aggregate(reports[:, :3])
    statistic = rappor.aggregate(reports)
    crafted = statistic.copy()
    crafted[0] = 5  # more reports with bit 0 than the cohort's reports
    with pytest.raises(ValueError, match="cohort 0"):
        rappor.bit_count_estimates(crafted)
    with pytest.raises(ValueError, match="39 integer counts"):
        rappor.bit_count_estimates(statistic[:-1])
    with pytest.raises(ValueError, match="MemoState"):
        RapporMechanism(n_bits=12, n_cohorts=4).randomize(np.array(["a", "b"], dtype=object),
                                                          rng, state)


def test_spec_round_trip():
    rappor = RapporMechanism(n_bits=64, n_hashes=3, n_cohorts=16, f=0.25, hash_seed=9)
    assert RapporMechanism.from_dict(rappor.to_dict()) == rappor
    with pytest.raises(ValueError, match="bloom_rappor"):
        RapporMechanism.from_dict({"mechanism": "bloom_rappor", "version": 1})


# ---------------------------------------------------------------------- the device's client
def _client_key(secret_row):
    return b"".join(int(word).to_bytes(8, "little") for word in secret_row)


def test_client_derives_the_servers_cohort_and_permanent_response_bit_for_bit():
    rappor = RapporMechanism(n_bits=100, n_hashes=3, n_cohorts=7, f=0.3, p=0.2, q=0.9,
                             hash_seed=5)
    built = client_module.RANDOMIZERS["bloom_rappor"](json.loads(rappor.to_json()))
    rng = np.random.default_rng(8)
    values = np.array([f"value {i} \u00e9\u4e2d" for i in range(60)], dtype=object)
    state = rappor.new_state(60, rng)
    permanent, cohorts = rappor.permanent_response(values, state)
    for i, value in enumerate(values):
        cohort, bits = built.derive(value, _client_key(state.secrets[i]))
        assert cohort == cohorts[i]
        assert bits == int.from_bytes(permanent[i].tobytes(), "little")


def test_client_reports_follow_the_law_given_the_permanent_response(tmp_path):
    rappor = RapporMechanism(n_bits=24, n_cohorts=4, f=0.5, p=0.25, q=0.75)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded on purpose
        client = Randomizer.from_json(rappor.to_json(), seed=9, state=tmp_path / "state")
        sent = [client.privatize("example.org") for _ in range(3000)]
    reports = reports_from_client(sent, rappor).reports
    assert reports.shape == (3000, rappor.report_width)
    secret = json.loads((tmp_path / "state").read_text())["state"]["secret"]
    cohort, bits = client_module.RANDOMIZERS["bloom_rappor"](rappor.to_dict()).derive(
        "example.org", bytes.fromhex(secret))
    assert (reports[:, 0].astype(int) * 256 + reports[:, 1] == cohort).all()  # for life
    permanent = np.array([(bits >> i) & 1 for i in range(24)], dtype=bool)
    means = np.unpackbits(reports[:, 2:], axis=1, bitorder="little")[:, :24].mean(axis=0)
    expected = np.where(permanent, 0.75, 0.25)
    assert np.all(np.abs(means - expected) < 4.5 * np.sqrt(expected * (1 - expected) / 3000))


def test_client_refuses_edited_specifications():
    spec = RapporMechanism().to_dict()
    for field, value in (("epsilon", spec["epsilon"] * 0.99), ("epsilon_inf", 1.0)):
        with pytest.raises(ValueError, match=field):
            client_module.RANDOMIZERS["bloom_rappor"]({**spec, field: value})
    with pytest.raises(ValueError, match="params.n_cohorts"):
        client_module.RANDOMIZERS["bloom_rappor"]({**spec, "params": {**spec["params"],
                                                                "n_cohorts": 0}})
    with pytest.raises(ValueError, match="epsilon"):
        mechanism_from_dict({**spec, "epsilon": 0.5})


@FUZZ
@given(data=st.data())
def test_fuzz_edited_specifications(data):
    spec = RapporMechanism(n_bits=16, n_cohorts=4).to_dict()
    leaves = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                       st.text(max_size=6))
    edited = mutate(spec, data, leaves)
    server = outcome(mechanism_from_dict, edited)
    client = outcome(client_module.RANDOMIZERS["bloom_rappor"], edited)
    if server is not None:  # what the server accepts, the device accepts too
        assert client is not None, edited


@FUZZ
@given(values=st.lists(st.one_of(st.text(max_size=70), st.none(), st.integers(),
                                 st.floats(), st.binary(max_size=4)), min_size=1, max_size=5))
def test_fuzz_values(values):
    rappor = RapporMechanism(n_bits=16, n_cohorts=4)
    array = np.empty(len(values), dtype=object)
    array[:] = values
    reports = outcome(rappor.randomize, array, np.random.default_rng(0))
    if reports is not None:
        assert reports.shape == (len(values), rappor.report_width)


def test_fresh_clients_follow_the_servers_exact_law(tmp_path):
    # Each report from a new device (its own state file: a new secret, cohort and permanent
    # response): the law of one report of a fresh user, as the server's exact_law states it.
    rappor = RapporMechanism(**SMALL)
    spec = rappor.to_json()
    sent = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded on purpose
        for device in range(1000):  # a state file each (fsync): slow, so few
            client = Randomizer.from_json(spec, seed=device, state=tmp_path / f"s{device}")
            sent.append(client.privatize("zz"))
    assert_sampled_law(rappor.exact_law("zz"), reports_from_client(sent, rappor).reports)
