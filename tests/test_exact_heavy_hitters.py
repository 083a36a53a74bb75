"""Exact sampling of the heavy-hitter kinds (PEM, TreeHist, CMS, HCMS).

The hashes are public functions of public seeds (PEM / TreeHist: a uniform 64-bit seed per
report, drawn independently of the value; the sketches: the spec's ``hash_seed``), so each
kind's exact law is conditional on them and privacy is the ratio of two values' laws at the
same seed. Reports drawn with other seeds are moved to seed 0's frame by XOR-ing the bucket
with ``h_seed(x) XOR h_0(x)``: a bijection of the buckets that maps the own bucket to the own
bucket, under which randomized response's law (uniform over the others) is unchanged.
"""

import json

import numpy as np
import pytest
from _laws import assert_private, assert_sampled_law

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.client import heavy_hitters as client_heavy_hitters
from sklearn_ldp.mechanisms._base.bits import PRECISION
from sklearn_ldp.mechanisms.heavy_hitters.prefix import (
    LENGTH_ROUND_FIRST,
    PrefixHeavyHitters,
    check_prefix_numerator,
    length_oracle,
    length_round_spec,
)
from sklearn_ldp.mechanisms.heavy_hitters.sketches import (
    SketchFrequencyOracle,
    check_sketch_numerator,
)
from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values

pytestmark = pytest.mark.filterwarnings("ignore:Randomizer\\(seed=\\.\\.\\.\\):UserWarning")

EPSILONS = (0.5, 1.0, 2.0, 4.0)
BITS = 5
N_SERVER = 20_000
N_CLIENT = 2_000


def _finder(protocol, epsilon):
    return PrefixHeavyHitters(BITS, epsilon, protocol=protocol, n_candidates=2,
                              extension_bits=None if protocol == "treehist" else 2)


class _AtSeed:
    """The finder's laws at one seed (what ``assert_private`` compares)."""

    def __init__(self, finder, seed):
        self.finder, self.seed = finder, seed

    def exact_law(self, value):
        return self.finder.exact_law(value, seed=self.seed)


def _to_seed_zero(finder, value, reports):
    """Reports of ``value`` moved to seed 0's frame (module docstring)."""
    reports = np.asarray(reports, dtype=np.uint64)
    n = reports.shape[0]
    words = encode_values(np.full(n, value), finder.bit_length)
    rounds = reports[:, 0].astype(np.int64)
    own = finder.own_hashes(words, rounds, reports[:, 1])
    own_zero = finder.own_hashes(words, rounds, np.zeros(n, dtype=np.uint64))
    moved = reports.copy()
    moved[:, 1] = 0
    moved[:, 2] = reports[:, 2] ^ (own ^ own_zero).astype(np.uint64)
    return moved


# ---------------------------------------------------------------- PEM / TreeHist
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 20.0])
@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_prefix_numerator_is_the_clients_and_within_the_budget(protocol, epsilon):
    finder = PrefixHeavyHitters(16, epsilon, protocol=protocol, n_candidates=4)
    privatize = Randomizer(finder.to_dict(), seed=0)._values.privatize
    assert privatize.keep_numerator == finder.keep_numerator
    assert finder.p == finder.keep_numerator / 2**PRECISION
    check_prefix_numerator(finder.keep_numerator, finder.g, epsilon)
    with pytest.raises(ValueError, match="numerator"):
        check_prefix_numerator(finder.keep_numerator + 1, finder.g, epsilon)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_prefix_laws_are_private_on_every_pair_of_values(protocol, epsilon):
    finder = _finder(protocol, epsilon)
    for seed in (0, 2**64 - 1, 12345):
        worst = assert_private(_AtSeed(finder, seed), list(range(2**BITS)), epsilon)
        assert worst <= epsilon


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_prefix_server_reports_follow_the_exact_law(protocol, epsilon):
    finder = _finder(protocol, epsilon)
    rng = np.random.default_rng(round(10 * epsilon))
    for value in (0, 2**BITS - 1):  # the two bounds of the bit length
        reports = finder.randomize(encode_values(np.full(N_SERVER, value), BITS), rng)
        assert_sampled_law(finder.exact_law(value), _to_seed_zero(finder, value, reports))


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_prefix_client_reports_follow_the_servers_exact_law(protocol, epsilon):
    finder = _finder(protocol, epsilon)
    for seed, value in enumerate((0, 2**BITS - 1)):
        randomizer = Randomizer(json.loads(json.dumps(finder.to_dict())), seed=seed)
        reports = [randomizer.privatize(value) for _ in range(N_CLIENT)]
        assert_sampled_law(finder.exact_law(value), _to_seed_zero(finder, value, reports))


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_length_round_client_reports_follow_the_servers_exact_law(epsilon):
    # Strings' length round: a device privatizes its UTF-8 length (8 bits) with
    # length_oracle's specification, as the server's fit does.
    finder = length_oracle(epsilon)
    for seed, value in enumerate((0, 13, 255)):
        randomizer = Randomizer(json.loads(json.dumps(finder.to_dict())), seed=seed)
        reports = [randomizer.privatize(value) for _ in range(N_CLIENT)]
        assert_sampled_law(finder.exact_law(value), _to_seed_zero(finder, value, reports))
    worst = assert_private(_AtSeed(finder, 7), list(range(0, 256, 17)), epsilon)
    assert worst <= epsilon


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_length_round_spec_reports_the_strings_length_with_the_servers_law(epsilon):
    # length_round_spec: the device is given the string and reports its UTF-8 length, in the
    # rows numbered from LENGTH_ROUND_FIRST (the server's own rows of a length round).
    finder = length_oracle(epsilon)
    spec = json.loads(json.dumps(length_round_spec(epsilon, 40)))
    for seed, text in enumerate(("", "mail", "caf\u00e9 au lait \u2603", "x" * 40)):
        randomizer = Randomizer(spec, seed=seed)
        reports = np.asarray([randomizer.privatize(text) for _ in range(N_CLIENT)],
                             dtype=np.uint64)
        assert np.all(reports[:, 0] >= LENGTH_ROUND_FIRST)
        reports[:, 0] -= np.uint64(LENGTH_ROUND_FIRST)
        length = len(text.encode())
        assert_sampled_law(finder.exact_law(length), _to_seed_zero(finder, length, reports))


def test_length_round_spec_refuses_hostile_specs_and_values():
    spec = length_round_spec(2.0, 16)
    randomizer = Randomizer(spec, seed=0)
    for bad, match in [(13, "the string itself"), ("x" * 17, "more than the declared maximum"),
                       ("a\0b", "NUL"), ("\ud800", "not a valid Unicode"),
                       (b"\xff", "not valid UTF-8")]:
        with pytest.raises(ValueError, match=match):
            randomizer.privatize(bad)
    for edit, match in [
            ({"length_round": [65536, 16]}, "must be an object"),
            ({"length_round": {"first_round": 65536}}, "must be an object"),
            ({"length_round": {"first_round": 7, "max_string_bytes": 16}}, "first_round"),
            ({"length_round": {"first_round": True, "max_string_bytes": 16}}, "first_round"),
            ({"length_round": {"first_round": 65536, "max_string_bytes": 0}},
             "max_string_bytes of"),
            ({"length_round": {"first_round": 65536, "max_string_bytes": 256}},
             "max_string_bytes of"),
            ({"length_round": {"first_round": 65536, "max_string_bytes": 16.0}},
             "max_string_bytes of"),
            ({"bit_length": 16, "n_candidates": 1, "extension_bits": 8}, "8-bit length"),
            ({"protocol": "treehist", "extension_bits": 1}, "8-bit length"),
            ({"max_string_bytes": 16}, "8-bit length")]:
        hostile = dict(spec, **edit)
        with pytest.raises(ValueError, match=match):
            Randomizer(hostile)
    with pytest.raises(ValueError, match="max_string_bytes"):
        length_round_spec(2.0, 256)


def test_prefix_exact_law_refuses_values_outside_the_bit_length():
    finder = _finder("pem", 1.0)
    for bad in (-1, 2**BITS):
        with pytest.raises(ValueError):
            finder.exact_law(bad)


@pytest.mark.parametrize(("field", "value"), [("epsilon", -1.0), ("epsilon", "1"),
                                              ("bit_length", 0), ("protocol", "olh"),
                                              ("n_candidates", 0), ("extension_bits", 99)])
def test_prefix_hostile_specs_are_refused_naming_the_field(field, value):
    spec = {**_finder("pem", 1.0).to_dict(), field: value}
    with pytest.raises(ValueError, match=field):
        Randomizer(spec)
    with pytest.raises((ValueError, TypeError)):
        PrefixHeavyHitters.from_dict(spec)


# ---------------------------------------------------------------- sketches
def _sketch(hadamard, epsilon):
    return SketchFrequencyOracle(epsilon, n_hashes=2, width=4, hadamard=hadamard,
                                 hash_seed=77)


def _client_rows(hadamard, reports):
    """Client reports as :meth:`SketchFrequencyOracle.report_rows` rows (CMS: the client
    sends ``j`` in two bytes)."""
    rows = np.asarray(reports, dtype=np.int64)
    if hadamard:
        return rows
    return np.column_stack([rows[:, 0] * 256 + rows[:, 1], rows[:, 2:]])


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 4.0, 8.0, 20.0])
@pytest.mark.parametrize("hadamard", [False, True])
def test_sketch_numerator_is_the_clients_and_within_the_budget(hadamard, epsilon):
    sketch = _sketch(hadamard, epsilon)
    flip = sketch._flip_numerator
    assert client_heavy_hitters._sketch_flip_numerator(epsilon, hadamard) == flip
    check_sketch_numerator(flip, epsilon, hadamard)
    with pytest.raises(ValueError, match="flip numerator"):
        check_sketch_numerator(flip - 1, epsilon, hadamard)
    for bad in (0, -3, 2**51, 1.5, True):
        with pytest.raises(ValueError, match="flip numerator"):
            check_sketch_numerator(bad, epsilon, hadamard)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("hadamard", [False, True])
def test_sketch_laws_are_private_on_every_pair_of_values(hadamard, epsilon):
    worst = assert_private(_sketch(hadamard, epsilon), list(range(16)), epsilon)
    assert worst <= epsilon


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("hadamard", [False, True])
def test_sketch_server_reports_follow_the_exact_law(hadamard, epsilon):
    sketch = _sketch(hadamard, epsilon)
    rng = np.random.default_rng(round(10 * epsilon))
    for value in (0, 2**64 - 1):
        words = encode_values(np.full(N_SERVER, value, dtype=np.uint64), 64)
        reports = sketch.report_rows(sketch.randomize(words, rng))
        assert_sampled_law(sketch.exact_law(value), reports)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("hadamard", [False, True])
def test_sketch_client_reports_follow_the_servers_exact_law(hadamard, epsilon):
    sketch = _sketch(hadamard, epsilon)
    for seed, value in enumerate((0, 2**64 - 1)):
        randomizer = Randomizer(json.loads(json.dumps(sketch.to_dict())), seed=seed)
        reports = [randomizer.privatize([value, 64]) for _ in range(N_CLIENT)]
        assert_sampled_law(sketch.exact_law(value), _client_rows(hadamard, reports))


@pytest.mark.parametrize(("field", "value"), [("epsilon", 0.0), ("epsilon", "2"),
                                              ("width", 1), ("n_hashes", 0),
                                              ("hash_seed", -1), ("hadamard", 1)])
def test_sketch_hostile_specs_are_refused_naming_the_field(field, value):
    spec = {**_sketch(True, 1.0).to_dict(), field: value}
    with pytest.raises(ValueError, match=field):
        Randomizer(spec)


# ---------------------------------------------------------------- the encoder's mechanism
@pytest.mark.parametrize("strategy", ["pem", "treehist", "cms", "hcms"])
def test_heavy_hitter_mechanism_rows_follow_the_exact_law(strategy):
    from sklearn_ldp import LDPEncoder

    options = {"sketch_width": 4, "n_hashes": 2} if strategy in ("cms", "hcms") else {}
    encoder = LDPEncoder(categories={"id": 16}, strategy=strategy, epsilon=1.0,
                         random_state=0, **options).fit()
    mechanism = encoder.mechanism_
    rng = np.random.default_rng(8)
    for value in (0, 15):
        law = mechanism.exact_law(value)
        reports = mechanism.randomize(np.full(N_SERVER, value), rng)
        if strategy in ("pem", "treehist"):
            reports = _to_seed_zero(mechanism.oracle, value, reports)
        assert_sampled_law(law, reports)
    if strategy in ("pem", "treehist"):
        assert_private(_AtSeed(mechanism, 99), list(range(16)), 1.0)
    else:
        assert_private(mechanism, list(range(16)), 1.0)
