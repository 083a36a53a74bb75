"""Exact laws of the frequency oracles and range mechanisms (issue 26).

For each kind: the law ``exact_law(value)`` is private on every pair of inputs of a small
domain (decided on integers, for eps in EPSILONS), the server's reports and the client's
reports follow it (chi-square), the client's integers are the server's, and a hostile
specification is refused naming the field.
"""

import json
import math

import numpy as np
import pytest
from _laws import assert_private, assert_sampled_law

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.client import _exact as client_exact
from sklearn_ldp.deploy.client import oracles as client_oracles
from sklearn_ldp.deploy.collect import reports_from_client
from sklearn_ldp.mechanisms import RandomizedResponse, mechanism_from_dict
from sklearn_ldp.mechanisms._base.exact import integer_ratio_at_most
from sklearn_ldp.mechanisms._base.ratio import ratio_weights, sample_ratio_law

pytestmark = pytest.mark.filterwarnings("ignore:Randomizer\\(seed=\\.\\.\\.\\):UserWarning")

EPSILONS = (0.1, 0.5, 1.0, 2.0, 4.0, 8.0)
N_SAMPLES = 20_000


def server_reports(mechanism, value, n_reports=N_SAMPLES, seed=0):
    rng = np.random.default_rng(seed)
    return mechanism.randomize(np.full(n_reports, value), rng)


def client_reports(mechanism, value, n_reports=4000, seed=0):
    """Reports of one value by the stdlib client, through JSON, as the server stacks them."""
    randomizer = Randomizer.from_json(mechanism.to_json(), seed=seed)
    sent = [randomizer.privatize(value) for _ in range(n_reports)]
    return reports_from_client(json.loads(json.dumps(sent)), mechanism).reports


def assert_reports_follow_the_law(mechanism, values):
    """The server's and the client's reports of each value follow the server's exact law."""
    for value in values:
        law = mechanism.exact_law(value)
        assert_sampled_law(law, server_reports(mechanism, value))
        assert_sampled_law(law, client_reports(mechanism, value))


def refused(spec, field):
    """Both the server and the client refuse ``spec`` with a message naming ``field``."""
    with pytest.raises((ValueError, TypeError), match=field):
        mechanism_from_dict(spec)
    with pytest.raises((ValueError, TypeError), match=field):
        Randomizer(spec)


# ---------------------------------------------------------------- two-weight laws
@pytest.mark.parametrize("epsilon", EPSILONS + (1e-6, 20.0, 50.0))
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (4, 12), (512, 1536), (1, 2**24)])
def test_ratio_weights_are_private_and_the_servers_in_the_client(epsilon, shape):
    a, d = ratio_weights(epsilon, *shape, "test")
    assert d & (d - 1) == 0 and d < a
    assert integer_ratio_at_most(a, d, epsilon)
    assert shape[0] * a + shape[1] * d <= 2**62
    assert (a, d) == client_exact._ratio_weights(epsilon, *shape, "test")
    if epsilon <= 8.0:  # the realised ratio is e^eps up to 2^-30, relative
        assert a / d > math.exp(epsilon) * (1 - 2**-30)


def test_ratio_weights_refuse_an_epsilon_below_the_precision():
    with pytest.raises(ValueError, match="too small"):
        ratio_weights(1e-20, 1, 3, "test")
    with pytest.raises(ValueError, match="too small"):
        client_exact._ratio_weights(1e-20, 1, 3, "test")


def test_two_weight_sampler_follows_its_law():
    favoured, index = sample_ratio_law(np.random.default_rng(1), 60_000, 2, 3, 5, 2)
    outcome = np.where(favoured, index, 2 + index)
    counts = np.bincount(outcome, minlength=5)
    expected = 60_000 * np.array([5, 5, 2, 2, 2]) / 16
    assert np.all(np.abs(counts - expected) < 5 * np.sqrt(expected))


# ---------------------------------------------------------------- randomized response
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [2, 3, 8, 16])
def test_randomized_response_is_exactly_private(n, epsilon):
    mechanism = RandomizedResponse(n, epsilon)
    assert_private(mechanism, list(range(n)), epsilon)


@pytest.mark.parametrize("epsilon", [0.5, 2.0, 8.0])
def test_randomized_response_samples_its_law(epsilon):
    mechanism = RandomizedResponse(6, epsilon)
    assert_reports_follow_the_law(mechanism, (0, 5))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [2, 5, 64, 2**20])
def test_randomized_response_client_has_the_servers_integers(n, epsilon):
    mechanism = RandomizedResponse(n, epsilon)
    assert client_oracles._make_randomized_response(n, epsilon).weights == mechanism.weights
    a, d = mechanism.weights
    assert mechanism.p == a / (a + (n - 1) * d) and mechanism.q == d / (a + (n - 1) * d)


def test_randomized_response_refuses_hostile_specifications():
    spec = RandomizedResponse(4, 1.0).to_dict()
    refused({**spec, "n_inputs": 0}, "n_inputs")
    refused({**spec, "n_inputs": -3}, "n_inputs")
    refused({**spec, "epsilon": -1.0}, "epsilon")
    refused({**spec, "epsilon": float("nan")}, "epsilon")
    # The integers are derived from epsilon on both sides: a spec cannot carry its own.
    refused({**spec, "params": {"weights": [2**62, 1]}}, "weights")


# ---------------------------------------------------------------- local hashing
def _local_hashing(kind, n, epsilon, **params):
    spec = {"version": 1, "mechanism": kind, "epsilon": epsilon, "n_inputs": n,
            "params": params}
    return mechanism_from_dict(spec)


LOCAL_HASHING = [("olh", {}), ("olh", {"hash_family": "linear"}), ("blh", {}),
                 ("olh", {"n_buckets": 7})]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kind, params", LOCAL_HASHING)
def test_local_hashing_is_exactly_private_for_every_seed(kind, params, epsilon):
    mechanism = _local_hashing(kind, 9, epsilon, **params)
    n_seeds = 6 if mechanism.n_buckets <= 64 else 1  # eps = 8: 2982 or 4096 buckets a seed
    seeds = np.arange(1, n_seeds + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    laws = [mechanism.exact_law(value, seeds) for value in range(9)]
    assert_private(type("Laws", (), {"exact_law": staticmethod(lambda v: laws[v])}),
                   list(range(9)), epsilon)


@pytest.mark.parametrize("kind, params", LOCAL_HASHING)
def test_local_hashing_samples_its_law_given_the_seeds(kind, params):
    import random

    mechanism = _local_hashing(kind, 9, 1.5, **params)
    seeds = np.array([3, 11, 2**63 + 5], dtype=np.uint64)
    rng = np.random.default_rng(4)
    privatize = Randomizer(mechanism.to_dict(), seed=0)._privatize_cell
    client_rng = random.Random(7)
    for value in (0, 8):
        law = mechanism.exact_law(value, seeds)
        drawn = seeds[rng.integers(0, seeds.size, N_SAMPLES)]
        server = mechanism._randomize_given_seeds(np.full(N_SAMPLES, value), drawn, rng)
        assert_sampled_law(law, server)
        sent = [privatize.report_given_seed(value, int(seed), client_rng)
                for seed in drawn[:4000].tolist()]
        assert_sampled_law(law, np.array(sent, dtype=np.uint64))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kind, params", LOCAL_HASHING)
def test_local_hashing_client_has_the_servers_integers(kind, params, epsilon):
    mechanism = _local_hashing(kind, 9, epsilon, **params)
    privatize = Randomizer(mechanism.to_dict(), seed=0)._privatize_cell
    assert privatize.weights == mechanism.weights
    a, d = mechanism.weights
    assert mechanism.p == a / (a + (mechanism.n_buckets - 1) * d)


def test_local_hashing_refuses_hostile_specifications():
    spec = _local_hashing("olh", 9, 1.0).to_dict()
    refused({**spec, "params": {"n_buckets": 1}}, "n_buckets")
    refused({**spec, "params": {"n_buckets": 2**21}}, "n_buckets")
    refused({**spec, "params": {"n_buckets": 6, "hash_family": "linear"}}, "n_buckets")
    refused({**spec, "params": {"n_buckets": 4, "hash_family": "md5"}}, "hash_family")


# ---------------------------------------------------------------- HRR and HaarHRR
def _spec(kind, n, epsilon, **params):
    return {"version": 1, "mechanism": kind, "epsilon": epsilon, "n_inputs": n,
            "params": params}


SIGN_KINDS = ["hrr", "haar"]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [2, 5, 8, 13])
@pytest.mark.parametrize("kind", SIGN_KINDS)
def test_sign_oracles_are_exactly_private(kind, n, epsilon):
    mechanism = mechanism_from_dict(_spec(kind, n, epsilon))
    assert_private(mechanism, list(range(n)), epsilon)


@pytest.mark.parametrize("kind", SIGN_KINDS)
def test_sign_oracles_sample_their_law(kind):
    mechanism = mechanism_from_dict(_spec(kind, 6, 1.5))
    assert_reports_follow_the_law(mechanism, (0, 3, 5))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kind", SIGN_KINDS)
def test_sign_oracles_client_has_the_servers_integers(kind, epsilon):
    mechanism = mechanism_from_dict(_spec(kind, 11, epsilon))
    privatize = Randomizer(mechanism.to_dict(), seed=0)._privatize_cell
    assert privatize.weights == mechanism.weights
    a, d = mechanism.weights
    assert mechanism.p == a / (a + d) and mechanism.debias == (a + d) / (a - d)


@pytest.mark.parametrize("kind", SIGN_KINDS)
def test_sign_oracles_refuse_hostile_specifications(kind):
    spec = _spec(kind, 8, 1.0)
    refused({**spec, "n_inputs": 0}, "n_inputs")
    refused({**spec, "n_inputs": 2.5}, "n_inputs")
    refused({**spec, "epsilon": 0.0}, "epsilon")
    refused({**spec, "params": {"layout": 3}}, "layout")


# ---------------------------------------------------------------- Hadamard response
def _hadamard_layouts(n):
    from sklearn_ldp.mechanisms.oracles.hadamard import _candidate_layouts
    return [None, "paper"] + list(_candidate_layouts(n))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [2, 5, 8, 13, 16])
def test_hadamard_is_exactly_private_in_every_layout(n, epsilon):
    from sklearn_ldp.mechanisms import HadamardResponse

    for layout in _hadamard_layouts(n):
        mechanism = HadamardResponse(n, epsilon, layout=layout)
        assert_private(mechanism, list(range(n)), epsilon)


@pytest.mark.parametrize("n, layout", [(6, None), (6, "paper"), (12, (2, 8, 2)),
                                       (12, (4, 8, 4)), (16, (1, 32, 16)), (5, (3, 4, 1))])
def test_hadamard_samples_its_law(n, layout):
    from sklearn_ldp.mechanisms import HadamardResponse

    mechanism = HadamardResponse(n, 2.5, layout=layout)
    assert_reports_follow_the_law(mechanism, (0, n // 2, n - 1))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [3, 16, 1000, 2**16])
def test_hadamard_client_has_the_servers_integers(n, epsilon):
    from sklearn_ldp.mechanisms import HadamardResponse

    for layout in (None, "paper"):
        mechanism = HadamardResponse(n, epsilon, layout=layout)
        privatize = Randomizer(mechanism.to_dict(), seed=0)._privatize_cell
        assert privatize.weights == mechanism.weights
        a, d = mechanism.weights
        assert mechanism._g == (a - d) / (2 * d)


def test_hadamard_refuses_hostile_layouts():
    from sklearn_ldp.mechanisms import HadamardResponse

    spec = HadamardResponse(12, 1.0, layout=(2, 8, 2)).to_dict()
    for key, value in [("block_size", 6), ("block_size", 1), ("hole", 3), ("hole", 8),
                       ("n_blocks", 1), ("n_blocks", 10**6)]:
        refused({**spec, "params": {**spec["params"], key: value}}, key)
    refused({**spec, "params": {"n_blocks": 2, "block_size": 8}}, "hole")


# ---------------------------------------------------------------- unary encoding, subsets
BIT_KINDS = [("rappor", {}), ("oue", {}), ("subset_selection", {}),
             ("subset_selection", {"subset_size": 1}), ("subset_selection", {"subset_size": 3})]


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [2, 5, 8])
@pytest.mark.parametrize("kind, params", BIT_KINDS)
def test_bit_vector_oracles_are_exactly_private(kind, params, n, epsilon):
    if params.get("subset_size", 1) > n - 1:
        pytest.skip("subset_size must be below n")
    mechanism = mechanism_from_dict(_spec(kind, n, epsilon, **params))
    assert_private(mechanism, list(range(n)), epsilon)


@pytest.mark.parametrize("kind, params", BIT_KINDS)
def test_bit_vector_oracles_sample_their_law(kind, params):
    mechanism = mechanism_from_dict(_spec(kind, 5, 1.0, **params))
    assert_reports_follow_the_law(mechanism, (0, 4))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [2, 9, 1000])
def test_bit_vector_oracles_client_has_the_servers_integers(n, epsilon):
    for kind in ("rappor", "oue"):
        mechanism = mechanism_from_dict(_spec(kind, n, epsilon))
        assert client_oracles._unary_numerators(kind, epsilon) == (
            mechanism.p_numerator, mechanism.q_numerator)
    mechanism = mechanism_from_dict(_spec("subset_selection", n, epsilon))
    assert client_oracles._subset_numerator(n, mechanism.subset_size, epsilon) == (
        mechanism.p_numerator)


def test_subset_selection_refuses_hostile_specifications():
    spec = mechanism_from_dict(_spec("subset_selection", 8, 1.0)).to_dict()
    refused({**spec, "params": {"subset_size": 8}}, "subset_size")
    refused({**spec, "params": {"subset_size": 0}}, "subset_size")
    refused({**spec, "params": {"subset_size": 2.0}}, "subset_size")
    refused({**spec, "n_inputs": 1}, "n_inputs")


# ---------------------------------------------------------------- the hierarchical tree
TREES = [("oue", 2), ("oue", 3), ("olh", 2), ("hrr", 2), ("hrr", 4)]


def _tree(n, epsilon, oracle, branching):
    return mechanism_from_dict(_spec("hierarchical", n, epsilon, branching=branching,
                                     oracle=oracle))


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("oracle, branching", TREES)
def test_tree_is_exactly_private(oracle, branching, epsilon):
    n = {"oue": 8, "olh": 6}.get(oracle, 13)
    mechanism = _tree(n, epsilon, oracle, branching)
    if oracle == "olh":
        few = 4 if epsilon <= 4 else 1
        seeds = np.arange(1, few + 1, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        laws = [mechanism.exact_law(value, seeds) for value in range(n)]
        mechanism = type("Laws", (), {"exact_law": staticmethod(lambda v: laws[v])})
    assert_private(mechanism, list(range(n)), epsilon)


@pytest.mark.parametrize("oracle, branching", [("oue", 2), ("hrr", 2), ("hrr", 3)])
def test_tree_samples_its_law(oracle, branching):
    mechanism = _tree(6, 1.0, oracle, branching)
    assert_reports_follow_the_law(mechanism, (0, 5))


def test_tree_with_olh_levels_samples_its_law_given_the_seeds():
    mechanism = _tree(6, 1.0, "olh", 2)
    seeds = np.array([1, 2**40 + 3], dtype=np.uint64)
    rng = np.random.default_rng(5)
    law = mechanism.exact_law(4, seeds)
    levels = rng.integers(0, mechanism.height, N_SAMPLES)
    drawn = seeds[rng.integers(0, seeds.size, N_SAMPLES)]
    reports = np.empty((N_SAMPLES, 3), dtype=np.uint64)
    reports[:, 0] = levels + 1
    for k, oracle in enumerate(mechanism.level_oracles):
        rows = np.flatnonzero(levels == k)
        node = np.full(rows.size, 4 // mechanism.widths[k])
        reports[rows, 1:] = oracle._randomize_given_seeds(node, drawn[rows], rng)
    assert_sampled_law(law, reports)


def test_tree_refuses_hostile_specifications():
    spec = _tree(8, 1.0, "oue", 2).to_dict()
    refused({**spec, "params": {**spec["params"], "branching": 1}}, "branching")
    refused({**spec, "params": {**spec["params"], "oracle": "grr"}}, "oracle")
    refused({**spec, "params": {"branching": 2, "oracle": "olh", "olh_hash": "md5"}},
            "olh_hash")
