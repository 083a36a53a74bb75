"""Exact numeric mechanisms (issue 26): every numeric report is a point of a public grid drawn
with exact integer probabilities, the same on the server and in the client.

* what is sampled is the exact law (``assert_sampled_law``), server and client;
* the exact laws are private on adversarial inputs (neighbouring floats, the bounds, ages
  0..100), decided on integers, for every kind and epsilon;
* the analytic variance is the realised one and within 2% of the continuous formulas;
* hostile specifications are refused, naming the field.
"""

import copy
import json
import math
import warnings

import numpy as np
import pytest
from _laws import assert_private, assert_sampled_law
from scipy.optimize import brentq

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms._base.exact import integer_ratio_at_most, laws_within
from sklearn_ldp.mechanisms.numeric.means import (
    HYBRID_EPSILON_STAR,
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    SampledMeanMechanism,
    _hybrid_constant_variance,
    duchi_constant,
)
from sklearn_ldp.mechanisms.numeric.one_bit import OneBitRandomizer
from sklearn_ldp.mechanisms.numeric.registry import numeric_mechanism, numeric_mechanism_from_dict
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism

KINDS = ("duchi", "piecewise", "hybrid", "square_wave")
EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)
ADVERSARIAL = (5.0, 5.0000001, 0.0, 10.0)


def _mechanism(kind, epsilon, bounds=(0.0, 10.0), grid=None):
    """A mechanism of ``kind``; ``grid`` cells for the grid kinds (default: the default)."""
    params = {}
    if kind == "square_wave":
        params = {"n_bins": min(16, grid // 2) if grid else 16}
    if kind != "duchi" and grid:
        params["grid_size"] = grid
    return numeric_mechanism(kind, epsilon, bounds, **params)


def _assert_private_same_total(laws, epsilon):
    """All pairs of laws with one common total, exactly: for each output the largest and the
    smallest weight over the laws satisfy ``max <= e^eps min`` (decided on integers), which
    is every pair's bound at once (``assert_private`` checks pairs one by one)."""
    assert len({int(law.total) for law in laws}) == 1
    columns = zip(*(law.weights for law in laws), strict=True)
    for weights in columns:
        weights = [int(w) for w in weights]
        assert min(weights) > 0
        assert integer_ratio_at_most(max(weights), min(weights), epsilon)


def _client(spec, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded-client warning
        return Randomizer(json.loads(json.dumps(spec)), seed=seed)


# ---------------------------------------------------------------- what is sampled
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_server_reports_follow_the_exact_law(kind, epsilon):
    rng = np.random.default_rng(2026)
    mechanism = _mechanism(kind, epsilon)
    for value in (0.0, 3.7, 5.0, 5.0000001, 10.0):
        reports = mechanism.randomize(np.full(200_000, value), rng)
        assert_sampled_law(mechanism.exact_law(value), reports)


@pytest.mark.parametrize("kind", KINDS)
def test_client_reports_follow_the_servers_exact_law(kind):
    # The client loads the server's spec (re-deriving and comparing its integers) and its
    # reports fall only on the server's outputs, with the server's exact frequencies.
    mechanism = _mechanism(kind, 1.0, grid=64)
    client = _client(mechanism.to_dict(), seed=5)
    for value in (5.0, 10.0):
        reports = np.array([client.privatize(value) for _ in range(20_000)])
        if kind == "duchi":
            reports = reports.astype(np.uint8)
        assert_sampled_law(mechanism.exact_law(value), reports)


def test_one_bit_randomizer_follows_its_exact_law_and_is_private():
    rng = np.random.default_rng(4)
    randomizer = OneBitRandomizer(1.0, bound=2.0)
    for value in (-2.0, 0.3, 2.0):
        bits = randomizer.randomize(np.full(100_000, value), rng)
        assert_sampled_law(randomizer.exact_law(value), bits)
    for epsilon in EPSILONS:
        randomizer = OneBitRandomizer(epsilon, bound=2.0)
        assert assert_private(randomizer, (-2.0, -1e-300, 0.0, 1.9999999, 2.0), epsilon) \
            <= epsilon
    spec = randomizer.to_dict()
    assert OneBitRandomizer.from_dict(spec) == randomizer
    with pytest.raises(ValueError, match="weights"):
        OneBitRandomizer.from_dict(dict(spec, weights=[spec["weights"][0] + 1, 1]))


# ---------------------------------------------------------------- privacy
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_neighbouring_floats_and_bounds_are_exactly_private(kind, epsilon):
    # The attack of the issue: 5.0 vs 5.0000001 (bounds (0, 10)) had outputs one reaches
    # and the other cannot. Now every output of one is an output of the other, with a
    # ratio <= e^eps decided on integers; realised epsilon never above the claimed one.
    # Pairwise on a 256-cell grid (the pair check costs a decimal per output), and at once
    # on the default grid.
    realised = assert_private(_mechanism(kind, epsilon, grid=256), ADVERSARIAL, epsilon)
    assert realised <= epsilon
    mechanism = _mechanism(kind, epsilon)
    laws = [mechanism.exact_law(value) for value in ADVERSARIAL]
    assert all(len(law.weights) <= 65_536 for law in laws)
    if kind == "hybrid":
        laws = [law._replace(weights=list(law.weights)) for law in laws]
    _assert_private_same_total(laws, epsilon)


@pytest.mark.parametrize("kind", KINDS)
def test_ages_are_exactly_private(kind):
    # Ages 0..100 (integers): the 5050 pairs one by one on a 4-cell grid (a decimal per
    # output and pair), all at once on the default grid.
    mechanism = _mechanism(kind, 1.0, bounds=(0, 100), grid=4)
    assert assert_private(mechanism, list(range(101)), 1.0) <= 1.0
    mechanism = _mechanism(kind, 1.0, bounds=(0, 100))
    _assert_private_same_total([mechanism.exact_law(age) for age in range(101)], 1.0)


@pytest.mark.parametrize("kind", ["piecewise", "hybrid", "square_wave"])
def test_a_report_rules_out_no_age(kind):
    # Every age reaches every grid value: one report of 37 rules out no other age.
    mechanism = _mechanism(kind, 1.0, bounds=(0, 100))
    for age in (0, 37, 100):
        assert min(int(w) for w in mechanism.exact_law(age).weights) > 0


def test_sampled_mean_record_law_is_sampled_and_private():
    rng = np.random.default_rng(9)
    mechanism = SampledMeanMechanism(2.0, [(0, 10), (-1, 1)], base="piecewise",
                                     n_sampled=2, grid_size=8)
    record = np.array([5.0, 0.25])
    law = mechanism.exact_law(record)
    attributes, values = mechanism.randomize(np.tile(record, (100_000, 1)), rng)
    assert_sampled_law(law, np.hstack([attributes.astype(float), values]))
    records = [[5.0, 0.25], [5.0000001, 0.25], [0.0, -1.0], [10.0, 1.0]]
    assert assert_private(mechanism, records, 2.0) <= 2.0
    # Duchi base, 3 attributes, one sampled: the record's law through the client too.
    duchi = SampledMeanMechanism(1.0, [(0, 1)] * 3, base="duchi", n_sampled=1)
    law = duchi.exact_law([0.2, 0.9, 0.5])
    client = _client(duchi.to_dict(), seed=3)
    reports = np.array([client.privatize([0.2, 0.9, 0.5]) for _ in range(20_000)], dtype=float)
    assert_sampled_law(law, reports)
    assert assert_private(duchi, [[0, 0, 0], [1, 1, 1], [0.2, 0.9, 0.5]], 1.0) <= 1.0


def test_sampled_mean_budget_composes_exactly():
    from fractions import Fraction

    from sklearn_ldp.mechanisms.numeric.base import split_budget
    for epsilon, k in [(1.0, 3), (0.3, 7), (2.5, 10), (4.9, 1)]:
        share = split_budget(epsilon, k)
        assert Fraction(share) * k <= Fraction(epsilon)
        assert share == pytest.approx(epsilon / k, rel=1e-15)


def test_sampled_attributes_are_uniform_ordered_choices():
    from _stats import chi_square_p_value
    mechanism = SampledMeanMechanism(1.0, [(0, 1)] * 4, base="duchi", n_sampled=2)
    chosen = mechanism.sample_attributes(120_000, np.random.default_rng(1))
    assert (chosen[:, 0] != chosen[:, 1]).all()
    codes = chosen[:, 0] * 4 + chosen[:, 1]
    counts = np.bincount(codes, minlength=16)[[4 * a + b for a in range(4) for b in range(4)
                                               if a != b]]
    assert chi_square_p_value(counts, np.full(12, 10_000.0)) > 1e-3


# ---------------------------------------------------------------- report values
def test_encoder_probe_has_few_distinct_report_values():
    pd = pytest.importorskip("pandas")
    from sklearn_ldp import LDPEncoder
    frame = pd.DataFrame({"v": np.full(20_000, 5.0)})
    encoder = LDPEncoder(bounds={"v": (0, 10)}, strategy="piecewise", epsilon=1,
                         random_state=0).fit(frame)
    reports = np.asarray(encoder.transform(frame).reports, dtype=float)
    assert len(np.unique(reports)) <= 10_000


@pytest.mark.parametrize("kind", ["piecewise", "hybrid", "square_wave"])
def test_off_grid_reports_are_refused(kind):
    mechanism = _mechanism(kind, 1.0)
    reports = mechanism.randomize(np.full(100, 5.0), np.random.default_rng(0))
    assert mechanism.report_validity(reports).all()
    for bad in (np.nextafter(reports[:1], np.inf), reports[:1] + 1e-9, np.array([np.nan]),
                np.array([np.inf])):
        assert not mechanism.report_validity(bad).any()


# ---------------------------------------------------------------- variance
def _continuous_variance(kind, epsilon, t):
    s = math.exp(epsilon / 2)
    duchi = duchi_constant(epsilon) ** 2 - t ** 2
    piecewise = t ** 2 / (s - 1) + (s + 3) / (3 * (s - 1) ** 2)
    if kind == "duchi":
        return duchi
    if kind == "piecewise":
        return piecewise
    if epsilon > HYBRID_EPSILON_STAR:
        return np.full_like(t, _hybrid_constant_variance(epsilon))
    return duchi


@pytest.mark.parametrize("kind", ["duchi", "piecewise", "hybrid"])
@pytest.mark.parametrize("epsilon", EPSILONS)
def test_analytic_variance_is_the_grid_laws_and_near_the_continuous(kind, epsilon):
    mechanism = _mechanism(kind, epsilon, bounds=(-1, 1))
    t = np.array([-1.0, -0.3, 0.0, 0.5, 1.0])
    variance = mechanism.unit_variance(t)
    for value, expected in zip(t, variance, strict=True):
        law = mechanism.exact_law(value)
        outputs = mechanism.report_values(law.outputs)
        p = np.array([int(w) / int(law.total) for w in law.weights])
        assert p @ outputs == pytest.approx(value, abs=1e-9)
        assert p @ outputs ** 2 - (p @ outputs) ** 2 == pytest.approx(expected, rel=1e-8)
    ratio = variance / _continuous_variance(kind, epsilon, t)
    assert np.all(np.abs(ratio - 1) < 0.02), ratio
    assert mechanism.worst_case_variance() >= variance.max()


@pytest.mark.parametrize("kind", ["duchi", "piecewise", "hybrid"])
def test_mse_matches_the_analytic_variance(kind):
    # Mean squared error of the reports about the truth, sum (y_i - t_i)^2 / N, against the
    # mean analytic variance: within 5% (its standard error here is below 0.5%).
    rng = np.random.default_rng(77)
    mechanism = _mechanism(kind, 1.0, bounds=(0, 100))
    values = 100 * rng.beta(2, 5, size=400_000)
    y = mechanism.report_values(mechanism.randomize(values, rng))
    t = values / 50 - 1
    ratio = np.mean((y - t) ** 2) / np.mean(mechanism.unit_variance(t))
    assert abs(ratio - 1) < 0.05


def test_hybrid_epsilon_star_is_the_root():
    root = brentq(lambda eps: _hybrid_constant_variance(eps) - duchi_constant(eps) ** 2,
                  0.1, 2.0, xtol=1e-15)
    assert HYBRID_EPSILON_STAR == pytest.approx(root, abs=1e-13)


def test_square_wave_channel_is_the_realised_law():
    # Bucket probabilities of the exact law (one value) equal the channel's continuous
    # formula with the realised b, p, q at that value (bins of width 0: a point).
    mechanism = SquareWaveMechanism(1.0, n_bins=16)
    law = mechanism.exact_law(0.37)
    cells = mechanism.grid.indices(law.outputs)[0]
    buckets = np.bincount(cells // (mechanism.law.cells // 16),
                          weights=[int(w) / int(law.total) for w in law.weights])
    u = mechanism.law.positions(np.array([0.37]))
    v = (u[0][0] + u[1][0] / 2**52) / mechanism.law.span  # the rounded position
    edges = np.linspace(-mechanism.b, 1 + mechanism.b, 17)
    overlap = np.clip(np.minimum(v + mechanism.b, edges[1:])
                      - np.maximum(v - mechanism.b, edges[:-1]), 0, None)
    expected = mechanism.q * np.diff(edges) + (mechanism.p - mechanism.q) * overlap
    np.testing.assert_allclose(buckets, expected, rtol=1e-9, atol=1e-15)


# ---------------------------------------------------------------- hostile specs
def _edits(spec):
    """(edited spec, field the error must name) pairs."""
    grid = spec["grid"]
    edits = []
    inner = grid if "cells" in grid else (grid.get("piecewise") or grid.get("base"))
    path = [] if "cells" in grid else (["piecewise"] if "piecewise" in grid else ["base"])
    if "piecewise" in inner:  # sampled_mean over hybrid
        path, inner = path + ["piecewise"], inner["piecewise"]
    for key, value in (("cells", inner["cells"] + 1), ("window", inner["window"] + 1),
                       ("weights", [inner["weights"][0] + 1, inner["weights"][1]]),
                       ("fraction_bits", 40)):
        edited = copy.deepcopy(spec)
        target = edited["grid"]
        for step in path:
            target = target[step]
        target[key] = value
        edits.append((edited, "grid"))
    edited = copy.deepcopy(spec)
    edited.pop("grid")
    edits.append((edited, "grid"))
    return edits


@pytest.mark.parametrize("kind", KINDS + ("sampled_mean",))
def test_edited_grids_are_refused_by_server_and_client(kind):
    if kind == "sampled_mean":
        mechanism = SampledMeanMechanism(2.0, [(0, 1), (0, 5)], base="hybrid", n_sampled=1)
    else:
        mechanism = _mechanism(kind, 2.0)
    spec = mechanism.to_dict()
    assert numeric_mechanism_from_dict(copy.deepcopy(spec)) == mechanism or kind == \
        "sampled_mean"
    _client(spec)  # the genuine spec loads
    for edited, field in _edits(spec):
        with pytest.raises(ValueError, match=field):
            numeric_mechanism_from_dict(edited)
        with pytest.raises(ValueError, match=field):
            _client(edited)


def test_edited_hybrid_alpha_is_refused():
    spec = HybridMechanism(2.0).to_dict()
    for value in (spec["grid"]["alpha_numerator"] + 1, 2**52 + 1, -1, 0.5):
        edited = copy.deepcopy(spec)
        edited["grid"]["alpha_numerator"] = value
        with pytest.raises(ValueError, match="alpha_numerator"):
            numeric_mechanism_from_dict(edited)
        with pytest.raises(ValueError, match="alpha_numerator"):
            _client(edited)


@pytest.mark.parametrize("kind", KINDS)
def test_bounds_too_narrow_for_float64_are_refused(kind):
    # Bounds (1e16, 1e16 + 2): the upper bound mapped to t = 2 (realised eps 2.58 for 1).
    bounds = (1e16, 1e16 + 2)
    with pytest.raises(ValueError, match="too narrow"):
        numeric_mechanism(kind, 1.0, bounds)
    spec = _mechanism(kind, 1.0).to_dict()
    spec["bounds"] = list(bounds)
    with pytest.raises(ValueError, match="too narrow"):
        _client(spec)


def test_spec_grid_size_is_bounded():
    with pytest.raises(ValueError, match="grid_size"):
        PiecewiseMechanism(1.0, grid_size=2**16 + 1)
    with pytest.raises(ValueError, match="grid_size"):
        SquareWaveMechanism(1.0, n_bins=16, grid_size=100)  # not a multiple of 16
    spec = PiecewiseMechanism(1.0).to_dict()
    spec["params"]["grid_size"] = 2**20
    with pytest.raises(ValueError, match="grid_size"):
        _client(spec)


def test_laws_of_different_kinds_do_not_compare():
    with pytest.raises(ValueError, match="different output sets"):
        laws_within(DuchiMechanism(1.0).exact_law(0.0), PiecewiseMechanism(1.0).exact_law(0.0),
                    1.0)


@pytest.mark.parametrize("epsilon", EPSILONS + (1e-6, 0.6093524930273104, 13.9, 30.0, 50.0))
def test_client_derives_the_servers_integers(epsilon):
    # The client (standard library only) repeats the server's derivations: the same
    # integers, the same floats, for every epsilon (it compares them with the spec's grid).
    from sklearn_ldp.deploy.client import numeric as client
    from sklearn_ldp.mechanisms._base import window as _window
    from sklearn_ldp.mechanisms.numeric.base import split_budget
    from sklearn_ldp.mechanisms.numeric.means import hybrid_alpha_numerator
    from sklearn_ldp.mechanisms.numeric.square_wave import _square_wave_bandwidth_decimal
    assert client._window_weights(epsilon) == _window.window_weights(epsilon)
    assert client._two_point_weights(epsilon) == _window.two_point_weights(epsilon)
    assert client._square_wave_bandwidth(epsilon) == _square_wave_bandwidth_decimal(epsilon)
    assert client.HYBRID_EPSILON_STAR == HYBRID_EPSILON_STAR
    for k in (1, 3, 7):
        assert client._even_share(epsilon, k) == split_budget(epsilon, k)
    if epsilon >= 1e-3:
        mechanism = HybridMechanism(epsilon, grid_size=1024)
        _, grid = client._unit_randomizer("hybrid", epsilon, 1024, "hybrid")
        assert grid == mechanism.grid_spec()
        assert grid["alpha_numerator"] == hybrid_alpha_numerator(epsilon,
                                                                 mechanism.piecewise.law)
