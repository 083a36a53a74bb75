"""Exact sampling of the marginal kinds: the law that is sampled is the law that is checked.

For every kind and epsilon: the exact law of each record (``exact_law``) is private on every
pair of records of a small domain (decided on integers), the server's and the client's reports
follow it (chi-square), the client computes the server's integers, and hostile specs are
refused naming the field.
"""

import json
import math

import numpy as np
import pytest
from _laws import assert_private, assert_sampled_law

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.client import _exact as client_exact
from sklearn_ldp.deploy.client import marginals as client_marginals
from sklearn_ldp.deploy.client import multi_attribute as client_multi_attribute
from sklearn_ldp.deploy.client import oracles as client_oracles
from sklearn_ldp.mechanisms._base.exact import TABLE_PRECISION, keep_numerator
from sklearn_ldp.mechanisms.marginals.em import InpEM
from sklearn_ldp.mechanisms.marginals.input_perturbation import InpHT, InpPS, InpRR
from sklearn_ldp.mechanisms.marginals.marginal_perturbation import MargHT, MargPS, MargRR
from sklearn_ldp.mechanisms.marginals.signs import check_sign_numerator, sign_numerator

pytestmark = pytest.mark.filterwarnings("ignore:Randomizer\\(seed=\\.\\.\\.\\):UserWarning")

EPSILONS = (0.5, 1.0, 2.0, 4.0)
N_SERVER = 20_000
N_CLIENT = 2_000

# Small instances: 2, 3 and 2 categories (a non-binary attribute has invalid codes).
KINDS = {
    "inp_ht": lambda eps: InpHT(12, eps, [2, 3, 2], 2),
    "marg_ht": lambda eps: MargHT(12, eps, [2, 3, 2], 2),
    "inp_rr": lambda eps: InpRR(8, eps, [2, 2, 2], 2),
    "inp_ps": lambda eps: InpPS(12, eps, [2, 3, 2], 2),
    "marg_rr": lambda eps: MargRR(12, eps, [2, 3, 2], 2),
    "marg_ps": lambda eps: MargPS(12, eps, [2, 3, 2], 2),
    "inp_em": lambda eps: InpEM(12, eps, [2, 3, 2], 2),
}


def _mechanism(kind, epsilon):
    mechanism = KINDS[kind](epsilon)
    try:
        mechanism.exact_law(0)
    except AttributeError as error:  # the oracle's exact_law comes with the exact oracles
        pytest.skip(f"{kind}: {error}")
    return mechanism


def _client_reports(mechanism, cell, n_reports, seed):
    randomizer = Randomizer.from_json(mechanism.to_json(), seed=seed)
    reports = json.loads(json.dumps([randomizer.privatize(cell) for _ in range(n_reports)]))
    return np.asarray(reports, dtype=np.asarray(mechanism.exact_law(cell).outputs).dtype)


# ---------------------------------------------------------------- integers
@pytest.mark.parametrize("epsilon", [0.01, 0.1, 0.5, 1.0, math.log(3.0), 2.0, 4.0, 8.0, 20.0,
                                     50.0])
def test_sign_numerator_is_the_clients_and_within_the_budget(epsilon):
    numerator, p, debias = sign_numerator(epsilon)
    assert numerator == client_exact._keep_numerator(epsilon, 2)
    assert p == numerator / 2**TABLE_PRECISION
    assert debias == pytest.approx(1 / (2 * p - 1), rel=1e-15)
    check_sign_numerator(numerator, epsilon)
    # The largest within e^eps: one more crosses it (where 2^52 leaves room for one more).
    if numerator + 1 < 2**TABLE_PRECISION:
        with pytest.raises(ValueError, match="numerator"):
            check_sign_numerator(numerator + 1, epsilon)


@pytest.mark.parametrize("n_outputs", [2, 3, 7, 16, 1000])
@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 4.0, 8.0])
def test_keep_numerator_is_the_clients(n_outputs, epsilon):
    assert keep_numerator(epsilon, n_outputs) == client_exact._keep_numerator(epsilon,
                                                                               n_outputs)


def test_check_sign_numerator_refuses_hostile_values():
    for bad in (-1, 0, 2**51, 2**52, 2**60, 1.5, True, "3"):
        with pytest.raises(ValueError, match="numerator"):
            check_sign_numerator(bad, 1.0)


# ---------------------------------------------------------------- laws
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_every_pair_of_records_is_private(kind, epsilon):
    mechanism = _mechanism(kind, epsilon)
    worst = assert_private(mechanism, list(range(mechanism.n_inputs)), epsilon)
    assert worst <= epsilon
    law = mechanism.exact_law(0)
    assert sum(int(w) for w in law.weights) == int(law.total)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kind", list(KINDS))
def test_server_reports_follow_the_exact_law(kind, epsilon):
    mechanism = _mechanism(kind, epsilon)
    rng = np.random.default_rng(round(10 * epsilon))
    for cell in (0, mechanism.n_inputs - 1):  # the smallest and the largest record
        reports = mechanism.randomize(np.full(N_SERVER, cell), rng)
        assert_sampled_law(mechanism.exact_law(cell), reports)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
@pytest.mark.parametrize("kind", list(KINDS))
def test_client_reports_follow_the_servers_exact_law(kind, epsilon):
    mechanism = _mechanism(kind, epsilon)
    for seed, cell in enumerate((0, mechanism.n_inputs - 1)):
        reports = _client_reports(mechanism, cell, N_CLIENT, seed)
        assert_sampled_law(mechanism.exact_law(cell), reports)


@pytest.mark.parametrize("kind", list(KINDS))
def test_exact_law_refuses_a_value_outside_the_domain(kind):
    mechanism = _mechanism(kind, 1.0)
    for bad in (-1, mechanism.n_inputs, 2.5):
        with pytest.raises(ValueError):
            mechanism.exact_law(bad)


# ---------------------------------------------------------------- hostile specs
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize(("field", "value"), [("epsilon", -1.0), ("epsilon", float("nan")),
                                              ("n_inputs", 13), ("shape", [2, 3, 1]),
                                              ("max_order", 4), ("max_order", 0)])
def test_hostile_specs_are_refused_naming_the_field(kind, field, value):
    spec = json.loads(KINDS[kind](1.0).to_json())
    if field in ("shape", "max_order"):
        spec["params"][field] = value
    else:
        spec[field] = value
    with pytest.raises(ValueError, match=field.split("_")[0]):
        Randomizer(spec)


# ---------------------------------------------------------------- private selection
@pytest.mark.parametrize("epsilon", [0.1, *EPSILONS])
def test_exponential_mechanism_is_exactly_private_between_neighbouring_utilities(epsilon):
    from sklearn_ldp.mechanisms._base.exact import laws_within
    from sklearn_ldp.mechanisms.central.private_selection import GRID, exponential_law

    rng = np.random.default_rng(1)
    sensitivity = 0.37
    unit = sensitivity / GRID
    for _ in range(8):
        u = rng.normal(scale=3 * sensitivity, size=5)
        bases = [u, np.floor(u / unit) * unit, np.floor(u / unit) * unit - np.nextafter(0, 1)]
        if epsilon >= 4:  # a candidate far behind (the tail weight; large integers below)
            bases.append(np.append(u[:4], -1e6))
        # Adversarial neighbours: every utility moved by the whole sensitivity (either way),
        # from just below / on a grid point.
        for shift in (np.full(5, sensitivity), -np.full(5, sensitivity),
                      rng.choice([-1.0, 1.0], 5) * sensitivity, rng.uniform(-1, 1, 5)
                      * sensitivity):
            for base in bases:
                ok, worst = laws_within(exponential_law(base, epsilon, sensitivity),
                                        exponential_law(base + shift, epsilon, sensitivity),
                                        epsilon)
                assert ok, (base, shift, worst)


def test_exponential_mechanism_samples_its_exact_law():
    from sklearn_ldp.mechanisms.central.private_selection import (
        exponential_law,
        exponential_mechanism,
    )

    utilities = [0.0, -1.0, -3.0, -0.5, -1e9]
    law = exponential_law(utilities, 2.0, 1.0)
    rng = np.random.default_rng(3)
    draws = np.array([exponential_mechanism(utilities, 2.0, 1.0, rng) for _ in range(4000)])
    assert_sampled_law(law, draws)
    assert law.weights[-1] > 0  # far behind, still reachable (privacy needs it)


def test_exponential_mechanism_refuses_hostile_input():
    from sklearn_ldp.mechanisms.central.private_selection import (
        check_exponential_base,
        exponential_base,
        exponential_law,
    )

    for utilities in ([np.nan, 0.0], [np.inf], [], [[0.0]]):
        with pytest.raises(ValueError, match="utilities"):
            exponential_law(utilities, 1.0, 1.0)
    for sensitivity in (0.0, -1.0, np.inf, np.nan, "1"):
        with pytest.raises(ValueError, match="sensitivity"):
            exponential_law([0.0, 1.0], 1.0, sensitivity)
    p, q = exponential_base(1.0)
    with pytest.raises(ValueError, match="base"):
        check_exponential_base(p + 1, q, 1.0)
    for bad in ((q, q), (q - 1, q), (1.5, 1), (True, 1)):
        with pytest.raises(ValueError, match="base"):
            check_exponential_base(*bad, 1.0)


# ---------------------------------------------------------------- several attributes
MULTI = [("spl", "grr", "record"), ("spl", "oue", "record"), ("smp", "grr", "record"),
         ("smp", "oue", "record"), ("rsfd", "grr", "record"), ("rsfd", "oue_z", "record"),
         ("rsfd", "oue_r", "record"), ("rsfd", "grr", "attribute"),
         ("rsfd", "oue_z", "attribute")]
MULTI_SHAPE = (2, 3)


def _multi(protocol, oracle, neighbourhood, epsilon):
    from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism

    mechanism = MultiAttributeMechanism(MULTI_SHAPE, epsilon, protocol, oracle, neighbourhood)
    try:
        mechanism.exact_law([0, 0])
    except AttributeError as error:  # the oracles' exact_law comes with the exact oracles
        pytest.skip(f"{protocol}/{oracle}: {error}")
    return mechanism


RECORDS = [[a, b] for a in range(MULTI_SHAPE[0]) for b in range(MULTI_SHAPE[1])]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize(("protocol", "oracle", "neighbourhood"), MULTI)
def test_multi_attribute_records_are_private(protocol, oracle, neighbourhood, epsilon):
    mechanism = _multi(protocol, oracle, neighbourhood, epsilon)
    if neighbourhood == "record":
        assert_private(mechanism, RECORDS, mechanism.epsilon)
    else:  # within attribute_epsilon between records that differ in one attribute only
        for a, b in [(r, s) for r in RECORDS for s in RECORDS
                     if sum(x != y for x, y in zip(r, s, strict=True)) == 1]:
            assert_private(mechanism, [a, b], mechanism.attribute_epsilon)


@pytest.mark.parametrize("epsilon", [0.5, 4.0])
@pytest.mark.parametrize(("protocol", "oracle", "neighbourhood"), MULTI)
def test_multi_attribute_server_and_client_reports_follow_the_exact_law(
        protocol, oracle, neighbourhood, epsilon):
    mechanism = _multi(protocol, oracle, neighbourhood, epsilon)
    rng = np.random.default_rng(5)
    spec = json.loads(json.dumps(mechanism.to_dict()))
    for seed, record in enumerate(([0, 0], [1, 2])):
        law = mechanism.exact_law(record)
        reports = mechanism.randomize(np.tile(record, (N_SERVER, 1)), rng)
        assert_sampled_law(law, mechanism.report_rows(reports))
        randomizer = Randomizer(spec, seed=seed)
        client = [randomizer.privatize(record) for _ in range(N_CLIENT)]
        assert_sampled_law(law, _client_multi_rows(mechanism, client))


def _client_multi_rows(mechanism, reports):
    """The client's multi-attribute reports as :meth:`report_rows` rows."""
    from sklearn_ldp.deploy.collect import stack_client_reports

    return mechanism.report_rows(stack_client_reports(reports, mechanism.to_dict()))


def test_multi_attribute_refuses_a_composition_above_the_budget(monkeypatch):
    from sklearn_ldp.mechanisms.multi_attribute import mechanisms as multi_attribute

    # An oracle whose sampled ratio is a hair above e^(eps / d): SPL's product is refused.
    mechanism = _multi("spl", "oue", "record", 1.0)
    ratio = multi_attribute.oracle_worst_ratio(mechanism.oracles[0])
    with pytest.raises(ValueError, match="SPL"):
        multi_attribute.check_composed_budget([(ratio[0] + ratio[0] // 10**6, ratio[1])] * 2,
                                              1.0, "SPL over every attribute")


@pytest.mark.parametrize(("field", "value"), [("epsilon", -1.0), ("epsilon", "1"),
                                              ("shape", [2, 1]), ("shape", "ab"),
                                              ("protocol", "all"), ("oracle", "olh")])
def test_multi_attribute_hostile_specs_are_refused_naming_the_field(field, value):
    from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism

    spec = MultiAttributeMechanism(MULTI_SHAPE, 1.0, "smp", "grr").to_dict()
    if field in ("protocol", "oracle"):
        spec["params"] = {**spec["params"], field: value}
    else:
        spec[field] = value
    with pytest.raises(ValueError, match=field):
        Randomizer(spec)
    with pytest.raises((ValueError, TypeError)):
        MultiAttributeMechanism.from_dict(spec)


@pytest.mark.parametrize("epsilon", [math.log(3.0), 0.5, 1.0, 2.0, 4.0, 7.3])
@pytest.mark.parametrize("oracle", ["grr", "oue"])
def test_split_budget_composes_exactly_and_matches_the_client(oracle, epsilon):
    from sklearn_ldp.mechanisms.multi_attribute.mechanisms import (
        MultiAttributeMechanism,
        check_composed_budget,
        oracle_worst_ratio,
    )

    for shape in ((2, 3), (2, 3, 2), (5, 2, 3, 4, 2, 3, 2)):
        mechanism = MultiAttributeMechanism(shape, epsilon, "spl", oracle)
        share, _ = client_marginals._split_budget(epsilon, list(shape), oracle != "grr")
        assert share == mechanism.inner_epsilon  # the same float, hence the same integers
        if oracle == "oue" or hasattr(mechanism.oracles[0], "exact_law"):
            check_composed_budget([oracle_worst_ratio(o) for o in mechanism.oracles],
                                  epsilon, "SPL")
        if oracle == "grr":
            em = InpEM(math.prod(shape), epsilon, list(shape), 1)
            assert em.share == mechanism.inner_epsilon


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 1.5, 2.0, 4.0])
@pytest.mark.parametrize(("shape", "oracle"), [((3, 4), "grr"), ((5, 5, 5), "grr"),
                                               ((4, 9), "oue_z"), ((2, 6), "oue_r"),
                                               ((2, 3), "grr"), ((2, 3), "oue_z")])
def test_rsfd_attribute_budget_is_the_clients_float(shape, oracle, epsilon):
    from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism

    mechanism = MultiAttributeMechanism(shape, epsilon, "rsfd", oracle, "attribute")
    assert client_multi_attribute._rsfd_attribute_epsilon(epsilon, list(shape), oracle) \
        == mechanism.inner_epsilon  # the same float, hence the same sampled integers
    spec = mechanism.to_dict()
    Randomizer(spec, seed=0)  # the client's exact check passes
    oracles = [client_oracles._make_randomized_response(k, mechanism.inner_epsilon)
               for k in shape]
    if oracle == "grr" and not hasattr(oracles[0], "weights"):
        return  # floating-point randomized response (before the exact oracles): no integers
    with pytest.raises(ValueError, match="RS\\+FD"):  # the same integers, a smaller claim
        client_multi_attribute._check_rsfd_attribute(epsilon * 0.9, list(shape), oracle,
                                            mechanism.inner_epsilon, oracles)
