"""Exact integer tables for matrix strategies (issue 26): what is sampled is what is checked.

A factorization strategy (any two inputs are neighbours) and a count mechanism (adjacent
counts) are sampled from an integer table ``W`` whose columns sum to ``2^52``, by integer
inverse CDF on 52 random bits, on the server and in the standard-library client alike; the
privacy check runs on ``W``, exactly. These tests cover:

* the attack: a float strategy that passes the float check at eps = 0.01, whose float
  inverse-CDF sampler reaches an output from one input and never from the other;
* optimizer-built and closed-form strategies over a grid of sizes and epsilons: private on
  their exact laws (every pair) and sampled as their laws say (server and client);
* the quantizer, property-tested: any column-stochastic matrix meeting a ratio bound up to
  rounding gives a table that passes the exact check and stays close;
* hostile tables in a specification, refused by the server's loader and the client, naming
  the field, the row or column and the value.
"""

import json
import math
import warnings

import numpy as np
import pytest
from _laws import assert_private, assert_sampled_law
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ldp._validation import check_ldp_strategy, realised_epsilon
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms import FactorizationMechanism, mechanism_from_dict
from sklearn_ldp.mechanisms._base.exact import largest_numerator_within
from sklearn_ldp.mechanisms._base.tables import (
    lift_units,
    quantize_table,
    round_table,
    table_ratio_violation,
)
from sklearn_ldp.mechanisms.central.count import (
    count_law,
    count_table,
    explicit_fair_mechanism,
    geometric_mechanism,
)
from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
from sklearn_ldp.optimize.ldp_factorization import optimize_strategy
from sklearn_ldp.selection import baseline_mechanism

ONE = 2**52


def _client(spec, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # seeded on purpose: a test
        return Randomizer(spec, seed=seed)


def _client_reports(mechanism, cell, n, seed):
    client = _client(mechanism.to_dict(), seed)
    return np.array([client._privatize_cell(cell, client._rng) for _ in range(n)])


# ---------------------------------------------------------------- the attack
def _attack_strategy():
    """Two inputs, three outputs, claimed epsilon 0.01. Output 1 has weight ``t = 3e-17`` for
    both inputs (ratio 1); output 0 has 0.5 and ``v`` ~ 0.4975 (ratio 1.005 < e^0.01). In
    the float inverse CDF, ``0.5 + t`` rounds back to 0.5 (half an ulp is 5.6e-17), so output
    1 is empty for input 0, while ``v + t`` rounds up to the next double: output 1 holds one
    53-bit uniform for input 1. An infinite ratio, with probability 2^-53 per report."""
    t = 3e-17
    v = 0.4975
    while (v * 2.0**53) % 1 != 0:  # v on the 53-bit grid of numpy's uniforms
        v = np.nextafter(v, 1.0)
    return np.array([[0.5, v], [t, t], [0.5 - t, 1.0 - v - t]]), t


def _float_sampler_probabilities(Q):
    """The probability of each output under the old float sampler (53-bit uniforms ``k
    2^-53`` against the float cumulative sums): the number of grid points in each step."""
    cumulative = np.cumsum(Q, axis=0)
    cumulative[-1] = 1.0
    grid = np.ceil(cumulative * 2.0**53)  # uniforms below cumulative[o]
    return np.diff(grid, axis=0, prepend=0.0) / 2.0**53


def test_the_attack_passes_the_float_check_and_the_float_sampler_is_not_private():
    Q, _ = _attack_strategy()
    normalized, _ = check_ldp_strategy(Q, 0.01)  # the old check accepts it
    assert realised_epsilon(normalized) < 0.01
    sampled = _float_sampler_probabilities(normalized)
    assert sampled[1, 0] == 0.0 and sampled[1, 1] > 0.0  # output 1: never for input 0
    assert realised_epsilon(sampled) == math.inf


def test_the_attack_is_made_exact_on_the_server_and_the_client():
    Q, t = _attack_strategy()
    mechanism = FactorizationMechanism(Q, 0.01)
    table = mechanism.table
    # Output 1 has the same positive weight for both inputs (t lifted to L units), and every
    # ratio is within e^0.01 on the integers.
    assert table.shape == (3, 2) and (table[1] > 0).all()
    assert table_ratio_violation(table, 0.01) is None
    np.testing.assert_array_equal(table.sum(axis=0), ONE)
    assert np.max(np.abs(mechanism.Q - Q)) <= (lift_units(0.01) * 3 + 2) / ONE  # 4.3e-12
    assert_private(mechanism, [0, 1], 0.01)
    client = _client(mechanism.to_dict(), 0)
    np.testing.assert_array_equal(np.array(client._privatize_cell.table), table)


def test_the_attack_as_a_table_is_refused_by_the_server_and_the_client():
    """The float sampler's law, shipped as an integer table: output 1 is 0 for input 0 only."""
    table = [[ONE // 2, ONE // 2 - 1], [0, 1], [ONE // 2, ONE // 2]]
    spec = {"version": 2, "mechanism": "factorization", "strategy": "attack", "params": {},
            "epsilon": 0.01, "precision": 52, "table": table}
    for load in (mechanism_from_dict, Randomizer):
        with pytest.raises(ValueError, match=r"row 1 of the table .* 0 for input 0|"
                                             r"row 1 of the table .*infinite"):
            load(spec)


# ---------------------------------------------------------------- built strategies
@pytest.mark.parametrize("n", [2, 5, 8])
@pytest.mark.parametrize("epsilon", [0.05, 1.0, 4.0])
def test_optimized_strategies_are_private_and_sampled_as_their_laws(n, epsilon):
    result = optimize_strategy(np.eye(n), epsilon, max_iter=30, random_state=n)
    mechanism = FactorizationMechanism(result.Q, epsilon, "optimized")
    assert assert_private(mechanism, list(range(n)), epsilon) <= epsilon
    rng = np.random.default_rng(100 * n + int(10 * epsilon))
    for cell in (0, n - 1):
        law = mechanism.exact_law(cell)
        assert_sampled_law(law, mechanism.randomize(np.full(20_000, cell), rng))
    # The client samples the same law (1500 draws, stdlib Random).
    assert_sampled_law(mechanism.exact_law(n - 1), _client_reports(mechanism, n - 1, 1500, n))


@pytest.mark.parametrize("name, shape", [("hierarchical_matrix", (8,)), ("fourier", (2, 2, 2)),
                                         ("marg_ps_matrix", (2, 4))])
def test_baseline_factorizations_are_private_and_the_client_agrees(name, shape):
    mechanism = baseline_mechanism(name, shape, 1.0)
    assert isinstance(mechanism, FactorizationMechanism)
    assert_private(mechanism, list(range(8)), 1.0)
    client = _client(mechanism.to_dict(), 3)
    np.testing.assert_array_equal(np.array(client._privatize_cell.table), mechanism.table)
    assert_sampled_law(mechanism.exact_law(5), _client_reports(mechanism, 5, 2000, 5))


def test_adversarial_inputs_of_a_factorization():
    """The first and the last cell, and neighbours, of a strategy built at a tiny epsilon."""
    mechanism = FactorizationMechanism(randomized_response_strategy(64, 1e-4), 1e-4)
    assert assert_private(mechanism, [0, 1, 62, 63], 1e-4) <= 1e-4


@pytest.mark.parametrize("build", [geometric_mechanism, explicit_fair_mechanism])
@pytest.mark.parametrize("n, epsilon", [(1, 0.5), (6, 0.01), (30, 1.0), (200, 3.0)])
def test_count_tables_are_private_between_adjacent_counts(build, n, epsilon):
    P = build(n, epsilon)
    table = count_table(P, epsilon)
    assert table_ratio_violation(table, epsilon, "adjacent") is None
    assert table.min() > 0  # even where P underflows 2^-52
    assert np.max(np.abs(table / ONE - P)) <= (lift_units(epsilon) * (n + 1) + 2) / ONE

    class Laws:
        def exact_law(self, count):
            return count_law(P, epsilon, count)

    for j in sorted({0, n // 2, n - 1}):  # the bounds and the middle
        assert_private(Laws(), [j, j + 1], epsilon)


def test_count_samples_follow_the_count_law():
    from sklearn_ldp.mechanisms.central.count import sample_outputs
    P = geometric_mechanism(10, 0.7)
    drawn = sample_outputs(P, np.full(30_000, 4), np.random.default_rng(1), epsilon=0.7)
    assert_sampled_law(count_law(P, 0.7, 4), drawn)


# ---------------------------------------------------------------- the quantizer
@st.composite
def _strategies(draw):
    m = draw(st.integers(1, 12))
    n = draw(st.integers(2, 6))
    low = draw(st.floats(1e-6, 1.0))
    entries = draw(st.lists(st.floats(low, 1.0), min_size=m * n, max_size=m * n))
    Q = np.array(entries).reshape(m, n)
    return Q / np.cumsum(Q, axis=0)[-1]


@settings(max_examples=150, deadline=None)
@given(_strategies())
def test_the_quantizer_passes_the_exact_check_and_stays_close(Q):
    """Claim the matrix's own float epsilon (the tightest claim it meets up to rounding)."""
    epsilon = max(realised_epsilon(Q), 1e-6)
    W = quantize_table(Q, epsilon)
    assert W.dtype == np.int64
    np.testing.assert_array_equal(W.sum(axis=0), ONE)
    assert table_ratio_violation(W, epsilon) is None
    # Within the uniform lift (L m units) plus one unit of rounding, per entry.
    bound = (lift_units(epsilon) * Q.shape[0] + 2) / ONE
    assert np.max(np.abs(W / ONE - Q)) <= bound
    # A realised table is a fixed point.
    np.testing.assert_array_equal(quantize_table(W / ONE, epsilon), W)


@settings(max_examples=60, deadline=None)
@given(_strategies(), st.floats(0.05, 3.0))
def test_the_quantizer_never_exceeds_a_claim_below_the_matrix(Q, shrink):
    """Claiming less than the matrix has: the quantizer caps into the claim or refuses; a
    table it returns always passes the exact check (it never loosens the claim)."""
    epsilon = realised_epsilon(Q) / (1.0 + shrink)
    if epsilon <= 0:
        return
    try:
        W = quantize_table(Q, epsilon)
    except ValueError as error:
        assert "cannot be sampled exactly" in str(error)
        return
    assert table_ratio_violation(W, epsilon) is None


def test_round_table_keeps_zeros_and_sums():
    P = np.array([[1 / 3, 0.0, 1.0], [2 / 3, 1.0, 0.0]])
    W = round_table(P)
    np.testing.assert_array_equal(W.sum(axis=0), ONE)
    assert W[1, 0] - W[0, 0] in (ONE // 3, ONE // 3 + 1) and W[0, 1] == 0 and W[1, 2] == 0


# ---------------------------------------------------------------- hostile tables
def _hostile_table(kind):
    """A valid 3 x 2 table at eps = 1 whose row 0 is exactly at its cap, then one edit."""
    b = 2**48
    a = largest_numerator_within(b, 1.0)
    table = np.array([[a, b], [2**50, 2**50], [0, 0]], dtype=object)
    table[2] = [ONE - a - 2**50, ONE - b - 2**50]
    if kind == "ratio one unit over":
        table[0, 0] += 1
        table[2, 0] -= 1
    elif kind == "zero entry":
        table[2, 1] += table[0, 1]
        table[0, 1] = 0
    elif kind == "column sum off by one":
        table[2, 0] += 1
    elif kind == "negative":
        table[1, 1] = -1
        table[2, 1] += 2**50 + 1
    elif kind == "float":
        table[1, 1] = float(2**50)
    elif kind == "past 2^52":
        table[1, 1] = ONE + 1
    elif kind == "zero row":
        table = np.vstack([table, [0, 0]])
    return [[int(w) if not isinstance(w, float) else w for w in row] for row in table]


def _table_spec(rows, **changes):
    spec = {"version": 2, "mechanism": "factorization", "strategy": "custom", "params": {},
            "epsilon": 1.0, "precision": 52, "table": rows}
    spec.update(changes)
    return spec


def test_the_valid_table_at_its_cap_is_accepted():
    spec = _table_spec(_hostile_table("valid"))
    mechanism = mechanism_from_dict(spec)
    client = Randomizer(spec)
    np.testing.assert_array_equal(np.array(client._privatize_cell.table), mechanism.table)
    assert json.loads(mechanism.to_json())["table"] == spec["table"]


@pytest.mark.parametrize("kind, server, client", [
    ("ratio one unit over", r"row 0 of the table .* 2\.71828182845904\d* \(log 1\.0000000000",
     r"row 0 of the table .* realised ratio 2\.71828182845904\d* exceeds e\^1\.0"),
    ("zero entry", r"row 0 of the table .* 0 for input 1 .* infinite",
     r"row 0 of the table .* infinite"),
    ("column sum off by one", r"column 0 of the table .* sums to 4503599627370497",
     r"column 0 of the table .* sums to 4503599627370497"),
    ("negative", r"table .* weights in \[0, 2\*\*52\]; row 1 holds -1",
     r"table .* weights in \[0, 2\*\*52\]; row 1 holds -1"),
    ("float", r"table .* must hold integers; row 1 holds 1125899906842624\.0",
     r"table .* must hold integers; row 1 holds 1125899906842624\.0"),
    ("past 2^52", r"row 1 holds 4503599627370497", r"row 1 holds 4503599627370497"),
    ("zero row", r"row 3 of the table .* 0 for every input", r"row 3 of the table .* 0 for "
                                                              "every input"),
])
def test_hostile_tables_are_refused_naming_the_field(kind, server, client):
    spec = _table_spec(_hostile_table(kind))
    with pytest.raises(ValueError, match=server):
        mechanism_from_dict(spec)
    with pytest.raises(ValueError, match=client):
        Randomizer(spec)


@pytest.mark.parametrize("changes, message", [
    ({"precision": 53}, "precision of the 'factorization' specification must be 52, got 53"),
    ({"precision": True}, "precision .* must be 52, got True"),
    ({"version": 1}, "version 1"),
    ({"Q": [[0.5, 0.5], [0.5, 0.5]]}, "float matrix 'Q'"),
    ({"table": [[ONE, ONE], [0]]}, "not rectangular"),
    ({"table": "[[1]]"}, "list of"),
])
def test_hostile_fields_are_refused(changes, message):
    spec = _table_spec(_hostile_table("valid"), **changes)
    for load in (mechanism_from_dict, Randomizer):
        with pytest.raises(ValueError, match=message):
            load(spec)


def test_huge_tables_are_refused_before_they_are_read():
    spec = _table_spec([[0] * 2**14] * 2**14)
    with pytest.raises(ValueError, match=r"entries of table \(16384 x 16384\) .* "
                                         "max_matrix_entries"):
        mechanism_from_dict(spec)
    with pytest.raises(ValueError, match=r"16384 x 16384 entries, more than 134217728"):
        Randomizer(spec)
