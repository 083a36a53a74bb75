"""The collector takes every kind the device client randomizes: the math-layer kinds.

Numeric (``duchi``, ``piecewise``, ``hybrid``, ``square_wave``, ``sampled_mean``),
``multi_attribute``, heavy hitters (``prefix_heavy_hitters``, ``sketch`` CMS and HCMS) and the
memoizing kinds (``longitudinal``, ``dbitflip_pm``, ``1bitmean_pm``). For each, on SQLite and
on PostgreSQL (``SKLEARN_LDP_TEST_POSTGRES``, see ``test_collector.py``): reports of the
Python client posted in batches (201), the store aggregated exactly as the mechanism
aggregates all the reports at once, the estimate within 5 standard errors of the truth, and a
report outside the valid set refused with 422 naming it, nothing stored.
"""

import json
import math
import random
import shutil
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402
from test_client_new_kinds import _MemoryMemo  # noqa: E402
from test_collector import make_store  # noqa: E402

from sklearn_ldp.deploy.client import Randomizer  # noqa: E402
from sklearn_ldp.deploy.collect import stack_client_reports  # noqa: E402
from sklearn_ldp.deploy.collector import aggregate, create_app  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.values import decode_values, encode_values  # noqa: E402
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (  # noqa: E402
    DBitFlipPM,
    LongitudinalMechanism,
    OneBitMeanPM,
)
from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism  # noqa: E402
from sklearn_ldp.mechanisms.numeric.means import (  # noqa: E402
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    SampledMeanMechanism,
)
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism  # noqa: E402

N_USERS = 3000
BATCH = 500


def device_reports(mechanism, values, seed, memoized=False):
    """One report per value from the Python client, after a JSON round trip."""
    spec = mechanism.to_dict()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seeded on purpose: a test
        if memoized:
            randomizer = Randomizer(spec, seed=seed, state="unused-state.json")
        else:
            randomizer = Randomizer(spec, seed=seed)
    reports = []
    for value in values:
        if memoized:  # a new device: a new secret, without a state file per device
            randomizer._state = _MemoryMemo()
        reports.append(randomizer.privatize(value))
    return json.loads(json.dumps(reports))


def mean_check(mechanism, statistic, values):
    estimate = mechanism.estimate_mean(statistic)
    return abs(estimate - np.mean(values)) <= 5 * math.sqrt(
        mechanism.estimate_mean_variance(statistic))


def _numbers(seed):
    return np.random.default_rng(seed).uniform(0.0, 10.0, N_USERS)


def _square_wave_check(mechanism, statistic, values):
    # Each bucket count against its expectation: the channel times the values' histogram.
    bins = np.minimum((np.asarray(values) / 10.0 * mechanism.n_bins).astype(int),
                      mechanism.n_bins - 1)
    histogram = np.bincount(bins, minlength=mechanism.n_bins) / len(values)
    p = mechanism.channel() @ histogram
    n = statistic.sum()
    return bool(np.all(np.abs(statistic - n * p) <= 5 * np.sqrt(n * p * (1 - p)) + 1e-9))


def _sampled_mean_check(mechanism, statistic, values):
    estimates = mechanism.estimate_means(statistic)
    bound = 5 * math.sqrt(mechanism.worst_case_variance() / statistic[0])
    return bool(np.all(np.abs(estimates - np.asarray(values).mean(axis=0)) <= bound))


def _multi_attribute_check(mechanism, statistic, values):
    values = np.asarray(values)
    for i, estimate in enumerate(mechanism.estimate(statistic)):
        truth = np.bincount(values[:, i], minlength=mechanism.shape[i])
        error = np.sqrt(mechanism.count_variance(i, truth / len(values), len(values)))
        if not np.all(np.abs(estimate - truth) <= 5 * error):
            return False
    return True


def _counts_check(mechanism, statistic, values, k):
    truth = np.bincount(np.asarray(values), minlength=k)
    error = np.sqrt(mechanism.count_variance(truth / len(values), len(values)))
    return bool(np.all(np.abs(mechanism.estimate(statistic) - truth) <= 5 * error))


def _one_bit_check(mechanism, statistic, values):
    error = math.sqrt(mechanism.mean_variance(np.asarray(values, dtype=float)))
    return abs(mechanism.estimate(statistic) - np.mean(values)) <= 5 * error


def _sketch_check(mechanism, statistic, values):
    words = [value for value, _ in values]
    counts, errors = mechanism.estimate_counts(statistic, encode_values(np.array([7]), 40))
    return abs(counts[0] - words.count(7)) <= 5 * errors[0]


def _sketch_values(seed):
    rng = random.Random(seed)
    return [[7 if rng.random() < 0.3 else rng.randrange(1000), 40] for _ in range(N_USERS)]


def _prefix_check(mechanism, reports, values):
    found = mechanism.identify(reports)
    return decode_values(found["values"], 32, True)[0] == "cat"


def _categories(seed, shape):
    rng = np.random.default_rng(seed)
    return np.stack([rng.choice(k, N_USERS, p=np.arange(1, k + 1) / (k * (k + 1) / 2))
                     for k in shape], axis=1)


# kind -> (mechanism, values (list), check(mechanism, aggregate, values), memoized, bad report)
CASES = {
    "duchi": (DuchiMechanism(1.0, bounds=(0, 10)), lambda s: _numbers(s).tolist(),
              mean_check, False, 2),
    "piecewise": (PiecewiseMechanism(1.0, bounds=(0, 10)), lambda s: _numbers(s).tolist(),
                  mean_check, False, 1e6),
    "hybrid": (HybridMechanism(1.0, bounds=(0, 10)), lambda s: _numbers(s).tolist(),
               mean_check, False, 0.123456789),
    "square_wave": (SquareWaveMechanism(1.0, bounds=(0, 10), n_bins=16, n_buckets=16),
                    lambda s: _numbers(s).tolist(), _square_wave_check, False, 0.5e-9),
    "sampled_mean": (SampledMeanMechanism(2.0, bounds=[(0, 10)] * 3, n_sampled=1),
                     lambda s: np.random.default_rng(s).uniform(0, 10, (N_USERS, 3)).tolist(),
                     _sampled_mean_check, False, [7, 0.0]),
    "multi_attribute": (MultiAttributeMechanism((3, 4), 2.0, protocol="spl"),
                        lambda s: _categories(s, (3, 4)).tolist(), _multi_attribute_check,
                        False, [3, 0]),
    "prefix_heavy_hitters": (PrefixHeavyHitters(32, 4.0, n_candidates=2, extension_bits=8),
                             lambda s: ["cat"] * 1800 + [f"w{i % 1000}" for i in range(1200)],
                             _prefix_check, False, [9, 1, 0]),
    "sketch_cms": (SketchFrequencyOracle(3.0, n_hashes=8, width=64, hash_seed=99),
                   _sketch_values, _sketch_check, False, [0, 8] + [0] * 8),
    "sketch_hcms": (SketchFrequencyOracle(3.0, n_hashes=8, width=64, hadamard=True,
                                          hash_seed=99),
                    _sketch_values, _sketch_check, False, [0, 64, 1]),
    "longitudinal_l_grr": (LongitudinalMechanism(6, 2.0, 0.8, "l_grr"),
                           lambda s: _categories(s, (6,))[:, 0].tolist(),
                           lambda m, st, v: _counts_check(m, st, v, 6), True, 6),
    "longitudinal_l_oue": (LongitudinalMechanism(12, 2.0, 0.8, "l_oue"),
                           lambda s: _categories(s, (12,))[:, 0].tolist(),
                           lambda m, st, v: _counts_check(m, st, v, 12), True, [0, 16]),
    "dbitflip_pm": (DBitFlipPM(8, 1.0, n_sampled=2),
                    lambda s: _categories(s, (8,))[:, 0].tolist(),
                    lambda m, st, v: _counts_check(m, st, v, 8), True, [1, 1, 0, 1]),
    "1bitmean_pm": (OneBitMeanPM(max_value=24.0, epsilon=1.0, n_segments=8),
                    lambda s: np.random.default_rng(s).uniform(0, 24, N_USERS).tolist(),
                    _one_bit_check, True, 2),
}


@pytest.fixture(params=["sqlite", "postgres"])
def store(request, tmp_path):
    store = make_store(request.param, tmp_path)
    yield store
    store.close()


def post(http, name, spec_hash, batch_id, reports):
    return http.post(f"/collections/{name}/batches",
                     json={"batch_id": batch_id, "spec_hash": spec_hash, "reports": reports})


@pytest.mark.parametrize("case", sorted(CASES))
def test_every_kind_is_collected_aggregated_and_estimated(store, case):
    mechanism, make_values, check, memoized, bad = CASES[case]
    name = case.replace("_", "-")
    store.add_collection(name, json.dumps(mechanism.to_dict()))
    http = TestClient(create_app(store, max_batch_reports=BATCH, max_body_bytes=2**22))
    served = http.get(f"/collections/{name}/spec").json()
    device = Randomizer.from_json(json.dumps(served["spec"]),
                                  **({"state": "never-written.json"} if memoized else {}))
    assert device.kind == mechanism.kind  # the served spec rebuilds the client
    values = make_values(sum(map(ord, case)))
    reports = device_reports(mechanism, values, seed=len(case), memoized=memoized)
    for start in range(0, len(reports), BATCH):
        response = post(http, name, served["spec_hash"], f"b{start}",
                        reports[start:start + BATCH])
        assert response.status_code == 201, response.text
    assert post(http, name, served["spec_hash"], "b0", reports[:BATCH]).status_code == 200
    assert store.count(name) == (math.ceil(len(reports) / BATCH), len(reports))

    collected = aggregate(store, name)
    in_memory = stack_client_reports(reports, mechanism)
    if isinstance(mechanism, PrefixHeavyHitters):  # the reports themselves, in batch-id order
        collected, in_memory = (array[np.lexsort(array.T[::-1])]
                                for array in (collected, in_memory))
    else:
        in_memory = mechanism.aggregate(in_memory)
    if collected.dtype.kind == "f":
        np.testing.assert_allclose(collected, in_memory, rtol=1e-12)
    else:
        np.testing.assert_array_equal(collected, in_memory)
    assert check(mechanism, collected, values)

    # One report outside the valid set: 422 naming it, nothing stored.
    batch = reports[:5] + [bad] + reports[5:10]
    response = post(http, name, served["spec_hash"], "bad-batch", batch)
    assert response.status_code == 422, response.text
    assert "report 5" in response.json()["error"]
    assert "bad-batch" not in store.batch_ids(name)
    assert store.count(name)[1] == len(reports)


def test_math_layer_aggregate_takes_no_domain_and_empty_collections_aggregate(store):
    duchi = DuchiMechanism(1.0, bounds=(0, 10))
    store.add_collection("scores", json.dumps(duchi.to_dict()))
    assert aggregate(store, "scores").tolist() == [0.0, 0.0, 0.0]
    finder = PrefixHeavyHitters(32, 4.0, n_candidates=2, extension_bits=8)
    store.add_collection("words", json.dumps(finder.to_dict()))
    assert aggregate(store, "words").shape == (0, 3)
    with pytest.raises(ValueError, match="math-layer kind"):
        aggregate(store, "scores", domain=["a"])


@pytest.mark.parametrize("strategy", ["pem", "cms"])
def test_encoder_heavy_hitter_collection_feeds_the_estimator(store, strategy):
    import pandas as pd

    from sklearn_ldp import AggregatedReports, HeavyHitterEstimator, LDPEncoder, LDPReports

    urls = ["cat.org"] * 1200 + [f"w{i % 300}.org" for i in range(800)]
    encoder = LDPEncoder(strategy=strategy, epsilon=4.0, categories={"url": "strings"})
    spec = encoder.fit(pd.DataFrame({"url": urls})).client_spec()
    collection = store.add_collection("urls", spec)
    http = TestClient(create_app(store))
    device = Randomizer.from_json(spec)
    reports = json.loads(json.dumps([device.privatize(u) for u in urls]))
    for start in range(0, len(reports), BATCH):
        response = post(http, "urls", collection.spec_hash, f"u{start}",
                        reports[start:start + BATCH])
        assert response.status_code == 201, response.text
    collected = aggregate(store, "urls")
    wrap = LDPReports if strategy == "pem" else AggregatedReports
    estimator = HeavyHitterEstimator(candidates=["cat.org", "w1.org"]).fit(
        wrap(collected, encoder.mechanism_, encoder.domain_))
    top = estimator.heavy_hitters_.iloc[0]
    assert top["value"] == "cat.org"
    assert abs(top["count"] - 1200) <= 5 * top["count_std_error"]


# ---------------------------------------------------------------------- property test
_entries = (st.integers(min_value=-2, max_value=2**64 + 1)
            | st.floats(allow_nan=False, allow_infinity=False)  # the body must be JSON
            | st.booleans() | st.none() | st.text(max_size=3))
_reports = st.lists(_entries | st.lists(_entries, max_size=11), min_size=1, max_size=6)


@settings(max_examples=80, deadline=5000,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(sorted(CASES)), reports=_reports)
def test_any_math_layer_batch_is_stored_whole_or_refused_with_4xx(tmp_path_factory, case,
                                                                  reports):
    """Random reports for a math-layer collection: 201 and every report stored and
    aggregated (the mechanism accepts them all), or a 4xx and nothing stored."""
    from sklearn_ldp.deploy.collector import SQLiteStore

    mechanism = CASES[case][0]
    store = SQLiteStore(tmp_path_factory.mktemp("prop") / "r.db")
    collection = store.add_collection("c", json.dumps(mechanism.to_dict()))
    http = TestClient(create_app(store))
    response = post(http, "c", collection.spec_hash, "b1", reports)
    if response.status_code == 201:
        assert store.count("c") == (1, len(reports))
        aggregate(store, "c")  # the stored reports read back through the same checks
    else:
        assert 400 <= response.status_code < 500, response.text
        assert store.count("c") == (0, 0)


# ---------------------------------------------------------------------- the JavaScript client
_JS_DEVICES = """import { MemoryStorage, Randomizer, reportToJSON } from "./src/index.js";
const spec = process.argv[1];
const kind = JSON.parse(spec).mechanism;
const values = { prefix_heavy_hitters: (i) => (i % 3 ? "cat" : `w${i}`), hybrid: (i) => i % 11,
  dbitflip_pm: (i) => i % 8, sketch: (i) => [i % 5, 40] };
for (let i = 0; i < 300; i++) {  // 300 devices (a memoizing kind: each with its own state)
  const device = Randomizer.fromJSON(spec,
    kind === "dbitflip_pm" ? { state: new MemoryStorage() } : {});
  console.log(reportToJSON(device.privatize(values[kind](i))));
}
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="the JavaScript client needs node")
@pytest.mark.parametrize("case", ["prefix_heavy_hitters", "hybrid", "dbitflip_pm",
                                  "sketch_hcms"])
def test_javascript_client_reports_are_collected(store, case):
    from test_js_client import _js_reports

    mechanism = CASES[case][0]
    spec = json.dumps(mechanism.to_dict())
    collection = store.add_collection("js", spec)
    reports = _js_reports(_JS_DEVICES, spec)
    http = TestClient(create_app(store))
    response = post(http, "js", collection.spec_hash, "js-1", reports)
    assert response.status_code == 201, response.text
    in_memory = stack_client_reports(reports, mechanism)
    if not isinstance(mechanism, PrefixHeavyHitters):
        in_memory = mechanism.aggregate(in_memory)
    np.testing.assert_array_equal(aggregate(store, "js"), in_memory)
