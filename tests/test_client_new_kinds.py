"""The standard-library client on the math-layer kinds (issues 18 and 19).

Numeric (Duchi, Piecewise, Hybrid, Square Wave, k of d), several categorical attributes (SPL,
SMP, RS+FD), "columns" records, heavy hitters (PEM, TreeHist, CMS, HCMS) and longitudinal
collection (l_grr .. l_soue, dBitFlipPM) with the client state file. Every distribution check
compares the client's reports with the exact law of the server's reports (computed from the
server mechanism's own constants, and checked on the server's reports too) by a chi-square
test at level ``ALPHA`` with fixed seeds; moment checks use the analytic variance.
"""

import itertools
import json
import math
import random

import numpy as np
import pytest
from _fuzzing import FUZZ, outcome
from _stats import check_unbiased_and_variance, chi_square_p_value
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats
from test_fuzz import scalars

import sklearn_ldp.deploy.client as client_module
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.client import heavy_hitters as client_heavy_hitters
from sklearn_ldp.deploy.client import longitudinal as client_longitudinal
from sklearn_ldp.deploy.client import memo as client_memo
from sklearn_ldp.deploy.client import multi_attribute as client_multi_attribute
from sklearn_ldp.deploy.client import numeric as client_numeric
from sklearn_ldp.deploy.collect import reports_from_client, stack_client_reports
from sklearn_ldp.mechanisms import OptimizedUnaryEncoding, RandomizedResponse
from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters, _hash_own, _seed_rows
from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle
from sklearn_ldp.mechanisms.heavy_hitters.values import _prefix_mask, decode_values, encode_values
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (
    DBitFlipPM,
    LongitudinalMechanism,
    OneBitMeanPM,
)
from sklearn_ldp.mechanisms.multi_attribute.columns import ColumnsMechanism, column_part
from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
from sklearn_ldp.mechanisms.numeric.means import (
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    SampledMeanMechanism,
    piecewise_constant,
)
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism

pytestmark = pytest.mark.filterwarnings("ignore:Randomizer\\(seed=\\.\\.\\.\\):UserWarning")

ALPHA = 1e-3


def client(spec, seed, **kwargs):
    return Randomizer(spec if isinstance(spec, dict) else spec.to_dict(), seed=seed, **kwargs)


# ---------------------------------------------------------------- numeric: exact laws
def _interval_mass(a, b, low, high):
    """Length of ``[a, b] & [low, high]``."""
    return max(0.0, min(b, high) - max(a, low))


def _piecewise_law(epsilon, t, edges):
    """Exact probability of each bin ``[edges[i], edges[i + 1])`` of a Piecewise report."""
    C, s = piecewise_constant(epsilon), math.exp(epsilon / 2)
    left = (C + 1) / 2 * t - (C - 1) / 2
    right = left + C - 1
    out = []
    for a, b in itertools.pairwise(edges):
        centre = _interval_mass(a, b, left, right)
        total = _interval_mass(a, b, -C, C)
        out.append(s / (s + 1) * centre / (C - 1) + 1 / (s + 1) * (total - centre) / (C + 1))
    return np.array(out)


def _p_value(observed, probabilities, n):
    """Chi-square p-value of ``observed`` counts against ``n`` times the exact law; a cell of
    probability 0 must be empty (and is left out of the test)."""
    observed, probabilities = np.asarray(observed), np.asarray(probabilities)
    impossible = probabilities == 0
    assert not observed[impossible].any(), "a report of probability 0"
    return chi_square_p_value(observed[~impossible], n * probabilities[~impossible])


def _binned(reports, edges):
    return np.histogram(reports, bins=edges)[0]


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 5.0])
def test_duchi_reports_have_the_servers_law(epsilon):
    mechanism = DuchiMechanism(epsilon, bounds=(0, 10))
    randomizer = client(mechanism, 1)
    value = 7.5
    n = 20_000
    reports = np.array([randomizer.privatize(value) for _ in range(n)])
    plus = 0.5 + mechanism._to_unit(np.array([value]))[0] * math.tanh(epsilon / 2) / 2
    observed = np.bincount(reports, minlength=2)
    assert chi_square_p_value(observed, n * np.array([1 - plus, plus])) > ALPHA
    server = mechanism.randomize(np.full(n, value), np.random.default_rng(1))
    assert chi_square_p_value(np.bincount(server, minlength=2),
                              n * np.array([1 - plus, plus])) > ALPHA


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 4.0])
@pytest.mark.parametrize("value", [0.0, 3.0, 10.0])
def test_piecewise_reports_have_the_servers_law(epsilon, value):
    mechanism = PiecewiseMechanism(epsilon, bounds=(0, 10))
    randomizer = client(mechanism, 2)
    n = 12_000
    C = piecewise_constant(epsilon)
    edges = np.linspace(-C, C, 25)
    t = mechanism._to_unit(np.array([value]))[0]
    law = _piecewise_law(epsilon, t, edges)
    reports = np.array([randomizer.privatize(value) for _ in range(n)])
    assert np.all(np.abs(reports) <= C)
    assert chi_square_p_value(_binned(reports, edges), n * law) > ALPHA
    server = mechanism.randomize(np.full(n, value), np.random.default_rng(2))
    assert chi_square_p_value(_binned(server, edges), n * law) > ALPHA


@pytest.mark.parametrize("epsilon", [0.4, 1.0, 3.0])
def test_hybrid_reports_have_the_servers_law(epsilon):
    mechanism = HybridMechanism(epsilon, bounds=(-5, 5))
    randomizer = client(mechanism, 3)
    value, n = 1.0, 15_000
    t = mechanism._to_unit(np.array([value]))[0]
    # The realised mixture weight and Duchi atoms of the exact grid law (spec version 2).
    alpha, (minus_d, Cd) = mechanism.alpha, mechanism.duchi_values
    Cp = piecewise_constant(epsilon)
    edges = np.linspace(-Cp, Cp, 17)
    plus = 0.5 + t * math.tanh(epsilon / 2) / 2
    # Cells: the two Duchi atoms (exact values), then the bins of the Piecewise part.
    law = np.concatenate([[(1 - alpha) * (1 - plus), (1 - alpha) * plus],
                          alpha * _piecewise_law(epsilon, t, edges)])

    def cells(reports):
        reports = np.asarray(reports)
        atoms = [np.sum(reports == minus_d), np.sum(reports == Cd)]
        rest = reports[(reports != minus_d) & (reports != Cd)]
        return np.concatenate([atoms, _binned(rest, edges)])

    reports = [randomizer.privatize(value) for _ in range(n)]
    assert _p_value(cells(reports), law, n) > ALPHA
    server = mechanism.randomize(np.full(n, value), np.random.default_rng(3))
    assert _p_value(cells(server), law, n) > ALPHA
    # The server accepts them (Duchi atoms exactly +-C).
    stack_client_reports(reports, mechanism.to_dict())


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_square_wave_reports_have_the_servers_law(epsilon):
    mechanism = SquareWaveMechanism(epsilon, bounds=(0, 4), n_bins=8)
    randomizer = client(mechanism, 4)
    value, n = 1.0, 15_000
    b, p, q = mechanism.b, mechanism.p, mechanism.q
    v = value / 4
    edges = np.linspace(-b, 1 + b, 21)
    law = np.array([p * _interval_mass(a, c, v - b, v + b)
                    + q * (c - a - _interval_mass(a, c, v - b, v + b))
                    for a, c in itertools.pairwise(edges)])
    assert abs(law.sum() - 1) < 1e-12
    reports = [randomizer.privatize(value) for _ in range(n)]
    assert chi_square_p_value(_binned(reports, edges), n * law) > ALPHA
    server = mechanism.randomize(np.full(n, value), np.random.default_rng(4))
    assert chi_square_p_value(_binned(server, edges), n * law) > ALPHA
    counts = mechanism.aggregate(stack_client_reports(reports, mechanism))
    assert counts.sum() == n


@pytest.mark.parametrize("make", [
    lambda: DuchiMechanism(1.0, bounds=(0, 10)),
    lambda: PiecewiseMechanism(1.0, bounds=(0, 10)),
    lambda: HybridMechanism(2.0, bounds=(0, 10)),
], ids=["duchi", "piecewise", "hybrid"])
def test_numeric_client_means_are_unbiased_with_the_analytic_variance(make):
    mechanism = make()
    randomizer = client(mechanism.to_json() if hasattr(mechanism, "to_json")
                        else mechanism.to_dict(), 5)
    values = np.array([0.0, 2.5, 6.0, 10.0] * 50)
    replicates = 150
    answers = np.empty(replicates)
    for r in range(replicates):
        reports = [randomizer.privatize(float(x)) for x in values]
        answers[r] = mechanism.estimate_mean(mechanism.aggregate(
            stack_client_reports(reports, mechanism)))
    variance = mechanism.variance(values).sum() / values.size ** 2
    check_unbiased_and_variance(answers, values.mean(), variance)


def test_sampled_mean_client_is_unbiased_with_the_analytic_variance():
    bounds = [(0, 1), (-2, 2), (0, 100)]
    mechanism = SampledMeanMechanism(3.0, bounds, base="hybrid", n_sampled=2)
    spec = column_part(["a", "b", "c"], mechanism).spec()["spec"]
    randomizer = client(spec, 6)
    record = [0.25, -1.0, 90.0]
    n, replicates = 200, 150
    answers = np.empty((replicates, 3))
    for r in range(replicates):
        reports = [randomizer.privatize(record) for _ in range(n)]
        answers[r] = mechanism.estimate_means(mechanism.aggregate(
            stack_client_reports(reports, spec)))
    t = np.array([(x - (lo + hi) / 2) / ((hi - lo) / 2) for x, (lo, hi) in zip(
        record, bounds, strict=True)])
    half = np.array([(hi - lo) / 2 for lo, hi in bounds])
    variance = mechanism.unit_variance(t) * half ** 2 / n
    check_unbiased_and_variance(answers, np.array(record), variance)
    # k distinct attributes per report, uniformly chosen.
    chosen = np.array([randomizer.privatize(record)[:2] for _ in range(6000)])
    assert np.all(chosen[:, 0] != chosen[:, 1])
    assert chi_square_p_value(np.bincount(chosen.ravel(), minlength=3),
                              np.full(3, chosen.size / 3)) > ALPHA


def test_numbers_outside_the_bounds_are_refused_not_clipped():
    randomizer = client(HybridMechanism(1.0, bounds=(0, 10)), 7)
    for bad in (-0.001, 10.5, float("nan"), float("inf"), "3", True, None):
        with pytest.raises(ValueError, match="value"):
            randomizer.privatize(bad)
    assert -3 < randomizer.privatize(10) < 3


def test_the_client_constants_equal_the_servers():
    from sklearn_ldp.mechanisms.multi_attribute.mechanisms import rsfd_attribute_epsilon
    from sklearn_ldp.mechanisms.numeric.means import HYBRID_EPSILON_STAR
    assert client_numeric.HYBRID_EPSILON_STAR == pytest.approx(HYBRID_EPSILON_STAR, abs=1e-13)
    for shape, oracle in (([3, 4], "grr"), ([5, 5, 5], "grr"), ([4, 9], "oue_z"),
                          ([2, 6], "oue_r")):
        assert client_multi_attribute._rsfd_attribute_epsilon(1.5, shape, oracle) == pytest.approx(
            rsfd_attribute_epsilon(1.5, shape, oracle), rel=1e-13)
    for hadamard in (False, True):
        for epsilon in (0.3, 1.0, 2.0, 7.5):
            sketch = SketchFrequencyOracle(epsilon, n_hashes=4, width=16, hadamard=hadamard)
            assert client_heavy_hitters._sketch_flip_numerator(epsilon, hadamard) \
                == sketch._flip_numerator


# ---------------------------------------------------------------- several attributes
def _oracle_law(oracle, code):
    """``{report: probability}`` of one oracle report of ``code`` (exact, from the server's
    p and q: a value for RR, the packed byte tuple for OUE)."""
    if isinstance(oracle, RandomizedResponse):
        return {(y,): oracle.p if y == code else oracle.q for y in range(oracle.n_inputs)}
    return _unary_law(oracle.n_inputs, code, oracle.p_numerator / 2**52,
                      oracle.q_numerator / 2**52)


def _unary_law(k, code, p, q):
    law = {}
    for bits in itertools.product((0, 1), repeat=k):
        probability = 1.0
        for j, bit in enumerate(bits):
            one = p if j == code else q
            probability *= one if bit else 1 - one
        packed = tuple(int(np.packbits(np.array(bits, dtype=np.uint8), bitorder="little")[i])
                       for i in range((k + 7) // 8))
        law[packed] = law.get(packed, 0.0) + probability
    return law


def _multi_attribute_law(mechanism, codes):
    """Exact law of one report row of the multi-attribute part for the record ``codes``."""
    oracles, d = mechanism.oracles, mechanism.n_attributes
    own = [_oracle_law(oracle, code) for oracle, code in zip(oracles, codes, strict=True)]
    if mechanism.protocol == "spl":
        law = {}
        for combination in itertools.product(*[law_i.items() for law_i in own]):
            row = sum((report for report, _ in combination), ())
            law[row] = math.prod(p for _, p in combination)
        return law
    if mechanism.protocol == "smp":
        widest = max(len(next(iter(law_i))) for law_i in own)
        return {(i,) + report + (0,) * (widest - len(report)): p / d
                for i, law_i in enumerate(own) for report, p in law_i.items()}
    fakes = []
    for oracle, size in zip(oracles, mechanism.shape, strict=True):
        if mechanism.oracle == "grr":
            fakes.append({(y,): 1 / size for y in range(size)})
        elif mechanism.oracle == "oue_z":
            fakes.append(_unary_law(size, -1, 0.0, oracle.q_numerator / 2**52))
        else:
            mixed = {}
            for value in range(size):
                for report, p in _oracle_law(oracle, value).items():
                    mixed[report] = mixed.get(report, 0.0) + p / size
            fakes.append(mixed)
    law = {}
    for chosen in range(d):
        laws = [own[i] if i == chosen else fakes[i] for i in range(d)]
        for combination in itertools.product(*[law_i.items() for law_i in laws]):
            row = sum((report for report, _ in combination), ())
            law[row] = law.get(row, 0.0) + math.prod(p for _, p in combination) / d
    return law


def _law_test(rows, law):
    keys = list(law)
    index = {key: i for i, key in enumerate(keys)}
    observed = np.zeros(len(keys))
    for row in rows:
        observed[index[tuple(int(v) for v in row)]] += 1  # a row outside the law: KeyError
    return chi_square_p_value(observed, len(rows) * np.array([law[key] for key in keys]))


@pytest.mark.parametrize("protocol, oracle, neighbourhood", [
    ("spl", "grr", "record"), ("spl", "oue", "record"), ("smp", "grr", "record"),
    ("smp", "oue", "record"), ("rsfd", "grr", "record"), ("rsfd", "oue_z", "record"),
    ("rsfd", "oue_r", "record"), ("rsfd", "grr", "attribute")])
def test_multi_attribute_rows_have_the_servers_law(protocol, oracle, neighbourhood):
    mechanism = MultiAttributeMechanism((2, 3), 1.5, protocol=protocol, oracle=oracle,
                                        neighbourhood=neighbourhood)
    codes = [1, 2]
    law = _multi_attribute_law(mechanism, codes)
    assert abs(sum(law.values()) - 1) < 1e-12
    randomizer = client(mechanism, 8, categories={"x": ["a", "b"], "y": [10, 20, 30]})
    n = 6000
    rows = [randomizer.privatize({"x": "b", "y": 30}) for _ in range(n)]
    assert _law_test(rows, law) > ALPHA
    part = column_part(["x", "y"], mechanism)
    server = part.randomize(np.tile(codes, (n, 1)), np.random.default_rng(8))
    assert _law_test(server, law) > ALPHA
    stacked = stack_client_reports(rows, mechanism.to_dict())
    assert [int(c[-1]) for c in mechanism._split(mechanism.aggregate(stacked))] \
        == ([n, n] if protocol != "smp" else [int(np.sum(stacked["attribute"] == i))
                                              for i in range(2)])


def test_multi_attribute_refuses_bad_records():
    randomizer = client(MultiAttributeMechanism((2, 3), 1.0), 9)
    for bad in ([0], [0, 3], [0, -1], [True, 0], "01", [0.0, 1]):
        with pytest.raises(ValueError):
            randomizer.privatize(bad)
    with pytest.raises(ValueError, match="categories"):
        client(MultiAttributeMechanism((2, 3), 1.0), 9, categories={"x": [0, 1]})


# ---------------------------------------------------------------- "columns" records
def test_columns_records_from_the_encoder_are_decoded_by_the_server():
    from sklearn_ldp.mechanisms.numeric.registry import numeric_mechanism
    parts = [column_part(["age"], numeric_mechanism("hybrid", 1.0, (0, 100))),
             column_part(["smoker", "region"],
                         MultiAttributeMechanism((2, 3), 1.0, protocol="smp")),
             column_part(["pet"], OptimizedUnaryEncoding(4, 1.0))]
    mechanism = ColumnsMechanism(parts)
    spec = mechanism.to_json()
    categories = {"smoker": ["no", "yes"], "region": ["n", "s", "w"],
                  "pet": ["cat", "dog", "fish", "none"]}
    randomizer = Randomizer.from_json(spec, categories=categories, seed=10)
    assert randomizer.n_inputs == 4
    n = 4000
    rng = random.Random(0)
    records = [{"age": rng.uniform(20, 60), "smoker": rng.choice(["no", "yes"]),
                "region": "s", "pet": rng.choice(["cat", "dog"])} for _ in range(n)]
    reports = [randomizer.privatize(record) for record in records]
    collected = reports_from_client(json.loads(json.dumps(reports)), spec)
    assert collected.shape == (n, mechanism.width)
    statistic = collected.aggregate().statistic
    mean_part = mechanism.parts[0]
    mean, error = mean_part.means(mechanism.part_statistic(statistic, 0))
    assert abs(mean[0] - np.mean([r["age"] for r in records])) < 5 * error[0]
    oue = mechanism.parts[2].mechanism
    counts = oue.estimate(mechanism.part_statistic(statistic, 2))
    truth = np.bincount([categories["pet"].index(r["pet"]) for r in records], minlength=4)
    sd = np.sqrt(oue.count_variance(truth / n, n)) if hasattr(oue, "count_variance") else \
        np.sqrt(n * 4.0)
    assert np.all(np.abs(counts - truth) < 5 * sd)
    # Integer codes work without categories; bad records are refused.
    plain = Randomizer.from_json(spec, seed=11)
    assert len(plain.privatize({"age": 1, "smoker": 0, "region": 2, "pet": 3})) \
        == mechanism.width
    for bad in ({"age": 101, "smoker": 0, "region": 2, "pet": 3},
                {"age": 1, "smoker": 2, "region": 2, "pet": 3},
                {"age": 1, "smoker": 0, "region": 2},
                {"age": 1, "smoker": 0, "region": 2, "pet": 3, "extra": 1}):
        with pytest.raises(ValueError):
            plain.privatize(bad)


def test_columns_of_every_part_kind_are_accepted_by_the_server():
    parts = [column_part(["w"], SquareWaveMechanism(1.0, (0, 1), n_bins=8)),
             column_part(["x", "y", "z"], SampledMeanMechanism(
                 1.0, [(0, 1), (0, 2), (-1, 1)], base="duchi", n_sampled=2)),
             column_part(["a", "b"], MultiAttributeMechanism(
                 (2, 4), 1.0, protocol="rsfd", oracle="grr", neighbourhood="attribute")),
             column_part(["c"], RandomizedResponse(3, 0.5))]
    mechanism = ColumnsMechanism(parts)
    randomizer = Randomizer.from_json(mechanism.to_json(), seed=20)
    assert randomizer.columns == ["w", "x", "y", "z", "a", "b", "c"]
    record = {"w": 0.3, "x": 0.5, "y": 2.0, "z": -1.0, "a": 1, "b": 3, "c": 2}
    reports = [randomizer.privatize(record) for _ in range(3000)]
    collected = reports_from_client(json.loads(json.dumps(reports)), mechanism.to_json())
    statistic = collected.aggregate().statistic
    # The sampled-mean part: unbiased means (5 standard errors of the estimate).
    means, errors = mechanism.parts[1].means(mechanism.part_statistic(statistic, 1))
    assert np.all(np.abs(means - [0.5, 2.0, -1.0]) < 5 * errors)
    # The multi-attribute part: counts of the record's categories near 3000.
    counts = mechanism.parts[2].counts(mechanism.part_statistic(statistic, 2))
    for i, (code, size) in enumerate(((1, 2), (3, 4))):
        truth = np.eye(size)[code] * 3000
        sd = np.sqrt(mechanism.parts[2].count_variance(i, truth / 3000, 3000))
        assert np.all(np.abs(counts[i] - truth) < 5 * sd)


def test_columns_spec_of_an_encoder():
    import pandas as pd

    from sklearn_ldp import LDPEncoder
    frame = pd.DataFrame({"age": [20.0, 30.0, 40.0], "smoker": ["no", "yes", "no"]})
    with pytest.warns(UserWarning):
        encoder = LDPEncoder(bounds={"age": (0, 100)}, categories={"smoker": ["no", "yes"]},
                             strategy="piecewise", epsilon=2.0, random_state=0).fit(frame)
        spec = encoder.client_spec()
    randomizer = Randomizer.from_json(spec, categories={"smoker": ["no", "yes"]}, seed=0)
    reports = [randomizer.privatize({"age": 33.0, "smoker": "yes"}) for _ in range(50)]
    assert reports_from_client(reports, spec).shape[0] == 50


# ---------------------------------------------------------------- heavy hitters
@pytest.mark.parametrize("protocol, bit_length", [("pem", 20), ("pem", 100),
                                                  ("treehist", 70)])
def test_prefix_hashes_are_the_servers_bit_for_bit(protocol, bit_length):
    finder = PrefixHeavyHitters(bit_length, 3.0, protocol=protocol, n_candidates=4)
    randomizer = client(finder, 12)
    own_hash = randomizer._values.privatize.own_hash
    rng = np.random.default_rng(12)
    values = rng.integers(0, 2**min(bit_length, 62), size=40)
    words = encode_values(values, bit_length)
    seeds = rng.integers(0, 2**64 - 1, size=40, dtype=np.uint64, endpoint=True)
    for length in finder.lengths:
        prefixes = words & _prefix_mask(length, finder.W)
        server = _hash_own(_seed_rows(seeds, finder.n_rows, length, finder.W), prefixes)
        x = [client_heavy_hitters._bit_string(int(v), bit_length) for v in values]
        top = finder.W * 64
        mask = ((1 << length) - 1) << (top - length)
        ours = [own_hash(int(s), xi & mask, length) for s, xi in zip(seeds, x, strict=True)]
        assert ours == server.tolist()


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_prefix_reports_have_the_servers_law_and_find_the_planted_value(protocol):
    epsilon = 4.0
    finder = PrefixHeavyHitters(20, epsilon, protocol=protocol, n_candidates=4,
                                extension_bits=None if protocol == "treehist" else 5)
    randomizer = client(finder, 13)
    rng = random.Random(13)
    n = 40_000 if protocol == "pem" else 60_000
    values = [123456 if rng.random() < 0.4 else rng.randrange(2**20) for _ in range(n)]
    reports = stack_client_reports([randomizer.privatize(v) for v in values], finder)
    # Rounds uniform; y equal to the own hash with the server's probability p.
    rounds = np.bincount(reports[:, 0].astype(np.int64), minlength=finder.n_rounds)
    assert chi_square_p_value(rounds, np.full(finder.n_rounds, n / finder.n_rounds)) > ALPHA
    words = encode_values(np.array(values), 20)
    own = np.empty(n, dtype=np.uint64)
    for index, length in enumerate(finder.lengths):
        members = np.flatnonzero(reports[:, 0] == index)
        own[members] = _hash_own(_seed_rows(reports[members, 1], finder.n_rows, length,
                                            finder.W), words[members] & _prefix_mask(
                                                length, finder.W))
    kept = int(np.sum(own == reports[:, 2]))
    assert chi_square_p_value([kept, n - kept], [n * finder.p, n * (1 - finder.p)]) > ALPHA
    found = finder.identify(reports)
    assert int(decode_values(found["values"], 20, False)[0]) == 123456


def test_strings_are_encoded_as_the_server_and_bad_values_refused():
    finder = PrefixHeavyHitters(32, 2.0, n_candidates=4)
    randomizer = client(finder, 14)
    for text in ("abc", "é", "", "a\u20ac"):
        words = encode_values(np.array([text], dtype=object), 32)
        assert client_heavy_hitters._bit_string(text, 32) == int(words[0, 0])
    for bad, message in (("\ud800", "valid"), ("abcde", "bytes"), (2**32, "2\\^32"),
                         (-1, "not in"), (b"\xff", "UTF-8"), (1.5, "integer or a string"),
                         ("a\0", "NUL"),
                         (True, "integer or a string")):
        with pytest.raises(ValueError, match=message):
            randomizer.privatize(bad)
    odd = client(PrefixHeavyHitters(12, 2.0, n_candidates=2), 14)
    with pytest.raises(ValueError, match="multiple of 8"):
        odd.privatize("a")


@pytest.mark.parametrize("hadamard", [False, True])
def test_sketch_reports_have_the_servers_law_and_count_the_planted_value(hadamard):
    sketch = SketchFrequencyOracle(3.0, n_hashes=8, width=64, hadamard=hadamard,
                                   hash_seed=99)
    randomizer = client(sketch, 15)
    position = randomizer._values.privatize.position
    values = np.arange(50)
    words = encode_values(values, 40)
    for j in range(8):
        server = sketch.hash(words, np.full(50, j))
        assert [position(client_heavy_hitters._bit_string(int(v), 40), 1, j) for v in values] \
            == server.tolist()
    rng = random.Random(15)
    n = 8000
    data = [7 if rng.random() < 0.3 else rng.randrange(1000) for _ in range(n)]
    raw = [randomizer.privatize([v, 40]) for v in data]
    reports = stack_client_reports(raw, sketch.to_dict())
    j = reports[0].astype(np.int64)
    assert chi_square_p_value(np.bincount(j, minlength=8), np.full(8, n / 8)) > ALPHA
    own = sketch.hash(encode_values(np.array(data), 40), j)
    flip = sketch._flip_numerator / 2**52
    if hadamard:
        sign = (np.bitwise_count((reports[1].astype(np.int64) & own).astype(np.uint64)) & 1) == 0
        agree = int(np.sum(sign == reports[2].astype(bool)))
        assert chi_square_p_value([agree, n - agree], [n * (1 - flip), n * flip]) > ALPHA
    else:
        bits = np.unpackbits(reports[1], axis=1, bitorder="little")[:, :64]
        at_own = int(bits[np.arange(n), own].sum())
        assert chi_square_p_value([at_own, n - at_own], [n * (1 - flip), n * flip]) > ALPHA
        others = int(bits.sum()) - at_own
        assert chi_square_p_value([others, 63 * n - others],
                                  [63 * n * flip, 63 * n * (1 - flip)]) > ALPHA
    counts, errors = sketch.estimate_counts(sketch.aggregate(reports),
                                            encode_values(np.array([7]), 40))
    assert abs(counts[0] - data.count(7)) < 5 * errors[0]
    with pytest.raises(ValueError, match="bit_length"):
        randomizer.privatize(7)


# ---------------------------------------------------------------- longitudinal
class _MemoryMemo:
    """An in-memory stand-in of the state file (fresh users for the distribution tests)."""

    def __init__(self):
        self.state = None

    def load(self):
        return self.state

    def save(self, state):
        self.state = state

    def secret(self, rng):  # a new user: a new secret (from the seeded generator)
        return rng.getrandbits(128).to_bytes(16, "little")


def _fresh_reports(randomizer, value, n):
    reports = []
    for _ in range(n):
        randomizer._state = _MemoryMemo()
        reports.append(randomizer.privatize(value))
    return reports


@pytest.mark.parametrize("protocol", ["l_grr", "l_sue", "l_oue", "l_osue", "l_soue"])
def test_longitudinal_reports_have_the_servers_law(protocol, tmp_path):
    mechanism = LongitudinalMechanism(6, 2.0, 0.8, protocol)
    randomizer = client(mechanism, 16, state=tmp_path / "state.json")
    n, value = 8000, 2
    reports = stack_client_reports(_fresh_reports(randomizer, value, n), mechanism)
    statistic = mechanism.aggregate(reports)
    law = np.where(np.arange(6) == value, mechanism.P1, mechanism.P0)
    if not mechanism.unary:
        assert chi_square_p_value(statistic[:-1], n * law) > ALPHA
    else:  # independent bits: the sum of the squared z-scores is chi-square with 6 dof
        z2 = (statistic[:-1] - n * law) ** 2 / (n * law * (1 - law))
        assert stats.chi2.sf(z2.sum(), 6) > ALPHA
    # The server's own reports of fresh users, the same test.
    from sklearn_ldp.mechanisms.longitudinal.mechanisms import MemoState
    server = mechanism.aggregate(mechanism.randomize(
        np.full(n, value), MemoState(mechanism, n, rng=np.random.default_rng(15)),
        np.random.default_rng(16)))
    z2 = (server[:-1] - n * law) ** 2 / (n * law * (1 - law))
    assert stats.chi2.sf(z2.sum(), 6) > ALPHA


def test_the_shipped_numerators_are_used_exactly_and_checked(tmp_path):
    """The server ships its numerators: the client draws with exactly those integers, and a
    spec whose numerators would break epsilon_perm or epsilon_1 (or the step's form) is
    refused, naming the field."""
    for protocol in ("l_grr", "l_sue", "l_oue", "l_osue", "l_soue"):
        mechanism = LongitudinalMechanism(10, 2.0, 1.0, protocol)
        spec = mechanism.to_dict()
        assert spec["numerators"] == mechanism.numerators()
        permanent, instant = client_longitudinal.LONGITUDINAL_PROTOCOLS[protocol]
        assert client_longitudinal._longitudinal_numerators(spec, 10, permanent, instant, 2.0,
                                                      1.0) == mechanism.numerators()
        client_module.Randomizer(spec, state=tmp_path / f"{protocol}.json")  # as shipped
        name = "keep_instant" if protocol == "l_grr" else "q_instant"
        hostile = json.loads(json.dumps(spec))
        hostile["numerators"][name] = (hostile["numerators"][name] * 3) // 4 \
            if protocol != "l_grr" else hostile["numerators"][name] + 2**48
        if protocol == "l_sue":  # keep the sue form so that the budget check decides
            hostile["numerators"]["p_instant"] = 2**52 - hostile["numerators"]["q_instant"]
        with pytest.raises(ValueError, match="numerators"):
            client_module.Randomizer(hostile, state=tmp_path / f"{protocol}-hostile.json")
        with pytest.raises(ValueError, match=r"numerators\.\w+ of .* not the realized"):
            LongitudinalMechanism.from_dict(hostile)


def test_memoization_reuses_the_permanent_response_across_rounds(tmp_path):
    mechanism = LongitudinalMechanism(5, 1.0, 0.5, "l_grr")
    path = tmp_path / "device.json"
    # A seed whose permanent response is not the value (probability 1 - p1, about 0.6).
    derive = client_longitudinal._longitudinal(mechanism.to_dict()).derive
    for seed in range(50):
        path.unlink(missing_ok=True)
        randomizer = client(mechanism, seed, state=path)
        randomizer.privatize(1)
        secret = bytes.fromhex(json.loads(path.read_text())["state"]["secret"])
        permanent = derive(1, secret)
        if permanent != 1:
            break
    before = path.read_bytes()
    rounds = [randomizer.privatize(1) for _ in range(200)]
    assert path.read_bytes() == before  # nothing re-drawn
    # A new Randomizer on the same file reuses it too.
    again = client(mechanism, 1234, state=path)
    rounds += [again.privatize(1) for _ in range(200)]
    counts = np.bincount(rounds, minlength=5)
    law = np.where(np.arange(5) == permanent, mechanism.p2, mechanism.q2)
    # The rounds are the instantaneous law around the permanent response, not the value:
    # their average does not converge to the value.
    assert chi_square_p_value(counts, 400 * law) > ALPHA
    assert counts.argmax() == permanent != 1


def test_dbitflip_reports_repeat_and_have_the_servers_law(tmp_path):
    mechanism = DBitFlipPM(6, 2.0, n_sampled=2)
    path = tmp_path / "dbit.json"
    randomizer = client(mechanism, 17, state=path)
    first = randomizer.privatize(3)
    assert all(randomizer.privatize(3) == first for _ in range(200))
    secret = bytes.fromhex(json.loads(path.read_text())["state"]["secret"])
    assert client_longitudinal._dbitflip_pm(mechanism.to_dict()).derive(3, secret) == first
    # Fresh users: buckets uniform pairs, bits with e/(e+1) on the own bucket.
    n = 6000
    reports = stack_client_reports(_fresh_reports(randomizer, 3, n), mechanism)
    buckets, bits = reports
    pairs = buckets[:, 0] * 6 + buckets[:, 1]
    expected = np.zeros(36)
    for a, b in itertools.combinations(range(6), 2):
        expected[a * 6 + b] = n / 15
    assert chi_square_p_value(np.bincount(pairs, minlength=36)[expected > 0],
                              expected[expected > 0]) > ALPHA
    own = buckets == 3
    ones_own, n_own = int(bits[own].sum()), int(own.sum())
    p = mechanism.e / (mechanism.e + 1)
    assert chi_square_p_value([ones_own, n_own - ones_own], [n_own * p, n_own * (1 - p)]) \
        > ALPHA
    ones_other, n_other = int(bits[~own].sum()), int((~own).sum())
    assert chi_square_p_value([ones_other, n_other - ones_other],
                              [n_other * (1 - p), n_other * p]) > ALPHA
    counts = mechanism.estimate(mechanism.aggregate(reports))
    sd = np.sqrt(mechanism.count_variance(np.eye(6)[3], n))
    assert np.all(np.abs(counts - n * np.eye(6)[3]) < 5 * sd)


def test_one_bit_mean_reports_have_the_servers_law_and_repeat(tmp_path):
    mechanism = OneBitMeanPM(max_value=24.0, epsilon=1.0, n_segments=8)
    path = tmp_path / "counter.json"
    randomizer = client(mechanism, 19, state=path)
    numerators = [int(n) for n in mechanism._numerators]
    first = randomizer.privatize(10.0)
    assert all(randomizer.privatize(10.0) == first for _ in range(200))
    secret = bytes.fromhex(json.loads(path.read_text())["state"]["secret"])
    secrets = np.array([[int.from_bytes(secret[:8], "little"),
                         int.from_bytes(secret[8:], "little")]], dtype=np.uint64)
    point = mechanism.rounded_points(np.array([10.0]), mechanism.alpha(secrets))
    assert mechanism.permanent_bits(point, secrets)[0] == first
    # Fresh users: P(bit) = (1 - u) p_lower + u p_upper, u the covered fraction (3 + 1/3).
    n, value = 20_000, 10.0
    bits = stack_client_reports(_fresh_reports(randomizer, value, n), mechanism)
    u = value * 8 / 24 - 3
    p = (1 - u) * numerators[3] / 2**52 + u * numerators[4] / 2**52
    ones = int(bits.sum())
    assert chi_square_p_value([ones, n - ones], [n * p, n * (1 - p)]) > ALPHA
    # Unbiased means with the analytic variance (fresh users each replicate).
    values = np.array([0.0, 5.5, 13.0, 24.0] * 25)
    answers = np.array([mechanism.estimate(mechanism.aggregate(stack_client_reports(
        [r for x in values for r in _fresh_reports(randomizer, float(x), 1)], mechanism)))
        for _ in range(150)])
    check_unbiased_and_variance(answers, values.mean(), mechanism.mean_variance(values))
    for bad in (-1.0, 24.5, float("nan"), "3"):
        with pytest.raises(ValueError, match="counter"):
            randomizer.privatize(bad)
    # The realized numerators are the server's.
    for epsilon in (0.2, 1.0, 3.3):
        assert client_heavy_hitters._sketch_flip_numerator(epsilon, True) \
            == int(OneBitMeanPM(5.0, epsilon)._numerators[0])


def test_math_layer_reports_go_through_stack_client_reports():
    for mechanism in (DuchiMechanism(1.0), DBitFlipPM(4, 1.0)):
        with pytest.raises(ValueError, match="stack_client_reports"):
            reports_from_client([0, 1], mechanism)
        with pytest.raises(ValueError, match="stack_client_reports"):
            reports_from_client([0, 1], json.dumps(mechanism.to_dict()))
    with pytest.raises(ValueError, match="report 2"):
        stack_client_reports([0, 1, 2], DuchiMechanism(1.0))
    with pytest.raises(ValueError, match="report 1"):
        stack_client_reports([[0, 1, 1, 0], [1, 1, 0, 1]], DBitFlipPM(4, 1.0, 2))
    with pytest.raises(ValueError, match="report 0"):
        stack_client_reports([[9, 2**64, 0]], PrefixHeavyHitters(16, 1.0, n_candidates=2))
    with pytest.raises(ValueError, match="report 0"):
        stack_client_reports([float("nan")], PiecewiseMechanism(1.0))


def test_state_files_of_another_spec_edited_or_truncated_are_refused(tmp_path):
    mechanism = LongitudinalMechanism(5, 2.0, 1.0, "l_oue")
    path = tmp_path / "s.json"
    client(mechanism, 18, state=path).privatize(2)
    good = path.read_text()
    other = LongitudinalMechanism(5, 2.0, 0.9, "l_oue")
    with pytest.raises(ValueError, match="another specification"):
        client(other, 18, state=path).privatize(2)
    content = json.loads(good)
    content["state"]["secret"] = "0" * 32
    path.write_text(json.dumps(content))
    with pytest.raises(ValueError, match="s.json.*SHA-256"):
        client(mechanism, 18, state=path).privatize(2)
    path.write_text(good[:len(good) // 2])
    with pytest.raises(ValueError, match="s.json.*not valid JSON"):
        client(mechanism, 18, state=path).privatize(2)
    path.write_text(good)
    randomizer = client(mechanism, 18, state=path)
    randomizer.privatize(2)
    path.unlink()
    with pytest.raises(ValueError, match="disappeared"):
        randomizer.privatize(2)
    # A re-sealed file with an invalid entry is refused by the entry check.
    content = json.loads(good)
    content["state"]["secret"] = "ab" * 15  # 120 bits
    del content["sha256"]
    content["sha256"] = client_memo._sha256(client_memo._canonical(content))
    path.write_text(json.dumps(content))
    with pytest.raises(ValueError, match="invalid state.*'secret' must be 32"):
        client(mechanism, 18, state=path).privatize(2)
    with pytest.raises(ValueError, match="state="):
        client(mechanism, 18)
    with pytest.raises(ValueError, match="keeps no client state"):
        client(DuchiMechanism(1.0), 18, state=path)


# ---------------------------------------------------------------- fuzzed specifications
def _spec_variants(base):
    """Specs that replace, drop or add one field of ``base`` (top level or params)."""
    keys = sorted(base) + ["extra"]
    return st.tuples(st.sampled_from(keys), st.one_of(scalars, st.lists(scalars, max_size=4),
                                                      st.just("__drop__"))).map(
        lambda change: _changed(base, *change))


def _changed(base, key, value):
    spec = json.loads(json.dumps(base))
    if value == "__drop__":
        spec.pop(key, None)
    else:
        spec[key] = value
    return spec


BASE_SPECS = [
    DuchiMechanism(1.0, (0, 1)).to_dict(), HybridMechanism(2.0, (-1, 3)).to_dict(),
    SquareWaveMechanism(1.0, (0, 1), n_bins=8).to_dict(),
    column_part(["a", "b"], SampledMeanMechanism(2.0, [(0, 1), (0, 2)])).spec()["spec"],
    MultiAttributeMechanism((2, 3), 1.0, protocol="rsfd", oracle="oue_r").to_dict(),
    ColumnsMechanism([column_part(["a"], PiecewiseMechanism(1.0, (0, 1))),
                      column_part(["b"], RandomizedResponse(3, 1.0))]).to_dict(),
    PrefixHeavyHitters(16, 2.0, n_candidates=2, extension_bits=3).to_dict(),
    SketchFrequencyOracle(2.0, n_hashes=4, width=16).to_dict(),
    LongitudinalMechanism(4, 2.0, 1.0, "l_sue").to_dict(),
    DBitFlipPM(4, 1.0, 2).to_dict(),
    OneBitMeanPM(10.0, 1.0, 4).to_dict(),
]
PROBES = [0, 0.5, [0, 1], [0.5, 0.5], {"a": 0.5, "b": 1}, "ab", [3, 16]]


@FUZZ
@given(data=st.data())
def test_fuzz_new_kind_specs(data, tmp_path_factory):
    base = data.draw(st.sampled_from(BASE_SPECS))
    spec = data.draw(_spec_variants(base))
    if isinstance(spec.get("params"), dict) and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(spec["params"]) + ["extra"]))
        spec["params"][key] = data.draw(st.one_of(scalars, st.lists(scalars, max_size=3)))
    state = None
    if spec.get("mechanism") in client_longitudinal.STATEFUL_KINDS:
        state = tmp_path_factory.mktemp("fuzz") / "state.json"
    randomizer = outcome(Randomizer, spec, state=state)
    if randomizer is not None:
        for probe in PROBES:
            outcome(randomizer.privatize, probe)


@FUZZ
@given(index=st.integers(0, len(BASE_SPECS) - 1),
       values=st.lists(st.one_of(scalars, st.lists(scalars, max_size=4)), max_size=5))
def test_fuzz_stacked_client_reports(index, values):
    if BASE_SPECS[index]["mechanism"] == "columns":
        outcome(reports_from_client, values, json.dumps(BASE_SPECS[index]))
    else:
        outcome(stack_client_reports, values, BASE_SPECS[index])
