"""The privacy check of strategy matrices from outside (issue 15, item 1; issue 26; DESIGN.md
section 7).

A float strategy that comes from a user is checked (columns normalized, the realised epsilon
of the normalized matrix compared with the claim up to rounding), then quantized into the
integer table that is sampled, and that table is checked exactly. A specification carries the
integer table; the server (``mechanism_from_json``) and the client (``client.Randomizer``)
check it exactly and sample it as it is. The first tests rebuild the attack of issue 15 and
show that the old checks let it through.
"""

import json
import re

import numpy as np
import pytest
from _stats import chi_square_p_value

from sklearn_ldp._validation import (
    COLUMN_SUM_ATOL,
    as_float_matrix,
    check_ldp_strategy,
    realised_epsilon,
)
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms import (
    FactorizationMechanism,
    MatrixMechanism,
    mechanism_from_dict,
    mechanism_from_json,
)
from sklearn_ldp.mechanisms.central.matrix import l2_sensitivity
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
from sklearn_ldp.selection import baseline_mechanism

# The issue's strategy: 10^5 outputs, 2 inputs, claimed epsilon 0.1.
N_ROWS = 100_000
CLAIMED = 0.1
SHIFT = 9e-5  # mass missing from (or added to) column 1
ONE = 2**52


def _shifted_spec(sign):
    """Column 0 uniform; column 1 uniform times ``1 + sign * delta`` on every row but the last,
    so that it sums to ``1 + sign * 9e-5``. Each row's ratio is about ``e^(9e-5)``, far below
    ``e^0.1``."""
    Q = np.full((N_ROWS, 2), 1.0 / N_ROWS)
    delta = SHIFT / ((N_ROWS - 1) / N_ROWS)
    Q[:-1, 1] *= 1.0 + sign * delta
    return Q


def _spec(Q, epsilon):
    """A version-1 specification: a float matrix (refused since the table format)."""
    return {"version": 1, "mechanism": "factorization", "strategy": "custom", "params": {},
            "epsilon": epsilon, "Q": np.asarray(Q).tolist()}


def _table_spec(table, epsilon):
    """A version-2 specification carrying ``table`` as it is (possibly hostile)."""
    return {"version": 2, "mechanism": "factorization", "strategy": "custom", "params": {},
            "epsilon": epsilon, "precision": 52,
            "table": [[int(w) for w in row] for row in np.asarray(table)]}


def _naive_sampled_probabilities(Q):
    """What an inverse-CDF sampler that does not normalize draws: the cumulative columns with
    the last entry forced to 1 (the old sampler), differenced; a cumulative value >= 1 before
    the last row makes every later output impossible."""
    cumulative = np.minimum(np.cumsum(Q, axis=0), 1.0)
    cumulative[-1] = 1.0
    return np.diff(cumulative, axis=0, prepend=0.0)


def _as_table(Q):
    """``floor(Q 2^52)`` with each column's rounding loss added to its largest entry: the
    integer table of the same column sums as ``Q`` (what a hostile spec would carry)."""
    Q = np.asarray(Q, dtype=float)
    table = np.floor(Q * ONE).astype(np.int64)
    sums = np.cumsum(Q, axis=0)[-1]
    # Sums within float rounding of 1 are exactly 2^52; the others keep their offset.
    sums = np.where(np.abs(sums - 1.0) < 1e-9, ONE, np.round(sums * ONE)).astype(np.int64)
    table[np.argmax(Q, axis=0), np.arange(Q.shape[1])] += sums - table.sum(axis=0)
    return table


def _refused_everywhere(Q, epsilon, server_match, client_match):
    """The server's constructor refuses the float ``Q``; its version-1 spec is refused on both
    sides; the client refuses the integer table ``floor(Q 2^52)`` (what a spec could carry)."""
    with pytest.raises(ValueError, match=server_match):
        FactorizationMechanism(Q, epsilon)
    with pytest.raises(ValueError, match="version 1"):
        mechanism_from_json(json.dumps(_spec(Q, epsilon)))
    with pytest.raises(ValueError, match="version 1"):
        Randomizer(_spec(Q, epsilon))
    table = _as_table(Q)
    with pytest.raises(ValueError, match=client_match):
        Randomizer(_table_spec(table, epsilon))
    with pytest.raises(ValueError, match=client_match):
        mechanism_from_dict(_table_spec(table, epsilon))


# ---------------------------------------------------------------- the issue's attack
def test_the_old_checks_passed_the_deficit_spec_and_it_was_not_private():
    """Why the check changed: the old tolerance (1e-9 per row) and the old ratio check both
    accept the deficit spec, yet the sampler gives the missing mass to the last output."""
    Q = _shifted_spec(-1)
    sums = np.cumsum(Q, axis=0)[-1]
    assert abs(sums[1] - (1 - SHIFT)) < 1e-12
    assert np.max(np.abs(sums - 1.0)) <= 1e-9 * N_ROWS  # the old column-sum tolerance
    assert privacy_ratio(Q) <= np.exp(CLAIMED)  # the old ratio check on Q as given
    sampled = _naive_sampled_probabilities(Q)
    assert realised_epsilon(sampled) == pytest.approx(np.log(10.0), rel=1e-6)  # e^2.3


def test_the_deficit_spec_of_the_issue_is_refused_naming_the_column_and_its_sum():
    Q = _shifted_spec(-1)
    _refused_everywhere(Q, CLAIMED, r"column 1 of the strategy matrix Q sums to 0\.9999099",
                        r"column 1 of the table .* sums to 450319430")


def test_a_surplus_spec_is_refused():
    Q = _shifted_spec(+1)
    # Not normalized, the last outputs are impossible for input 1 only: an unbounded ratio.
    assert realised_epsilon(_naive_sampled_probabilities(Q)) == np.inf
    _refused_everywhere(Q, CLAIMED, r"column 1 of the strategy matrix Q sums to 1\.00009",
                        r"column 1 of the table .* sums to 450400495")


def test_the_column_sum_tolerance_does_not_grow_with_the_number_of_rows():
    Q = np.full((N_ROWS, 2), 1.0 / N_ROWS)
    Q[0, 1] += 5 * COLUMN_SUM_ATOL  # 5e-9 of surplus: within 1e-9 * rows, beyond 1e-9
    _refused_everywhere(Q, 1.0, "column 1", "column 1")


# ---------------------------------------------------------------- each refusal
def test_a_row_zero_for_one_input_only_is_refused_naming_the_row():
    Q = np.array([[0.5, 0.5, 0.5], [0.5, 0.0, 0.25], [0.0, 0.5, 0.25]])
    _refused_everywhere(Q, 5.0, r"row 1 .* is 0 for input 1", r"row 1 of the table .* infinite")


def test_a_realised_epsilon_above_the_claim_is_refused_with_its_value():
    Q = randomized_response_strategy(4, 1.0)
    for claimed in (0.5, 1.0 - 2e-9):  # far below, and just past the 1e-9 relative slack
        with pytest.raises(ValueError, match=f"not {claimed}-LDP") as server:
            FactorizationMechanism(Q, claimed)
        realised = float(re.search(r"realised epsilon .*? is ([0-9.e-]+) >",
                                   str(server.value)).group(1))
        assert realised == pytest.approx(1.0, rel=1e-12)
        # The table of the epsilon-1 strategy, shipped with the smaller claim: refused on the
        # integers, by the server's loader and by the client, with the realised ratio.
        table_spec = _table_spec(FactorizationMechanism(Q, 1.0).table, claimed)
        for load in (mechanism_from_dict, Randomizer):
            with pytest.raises(ValueError, match=f"is not {claimed}-LDP") as error:
                load(table_spec)
            ratio = float(re.search(r"realised ratio (?:is )?([0-9.e-]+)",
                                    str(error.value)).group(1))
            assert np.log(ratio) == pytest.approx(1.0, rel=1e-12)


def test_a_realised_epsilon_within_the_slack_is_accepted():
    Q = randomized_response_strategy(4, 1.0)
    mechanism = FactorizationMechanism(Q, 1.0 - 5e-10)
    # Quantized into the smaller claim exactly: the table meets 1 - 5e-10 on the integers.
    Randomizer(mechanism.to_dict())
    assert mechanism_from_dict(mechanism.to_dict()) == mechanism


@pytest.mark.parametrize("bad, server_match", [
    (-0.1, r"negative entry -0\.1 at row 0, column 1"),
    (np.nan, r"NaN or infinite .*row 0, column 1 holds nan"),
    (np.inf, r"NaN or infinite .*row 0, column 1 holds inf"),
])
def test_negative_and_non_finite_entries_are_refused(bad, server_match):
    Q = np.array([[0.5, bad], [0.5, 0.5]])
    with pytest.raises(ValueError, match=server_match):
        FactorizationMechanism(Q, 1.0)
    spec = _table_spec([[ONE // 2] * 2] * 2, 1.0)
    spec["table"][0][1] = float(bad)
    for load in (mechanism_from_dict, Randomizer):
        with pytest.raises(ValueError, match="must hold integers; row 0 holds"):
            load(spec)
    spec["table"][0][1] = -1
    for load in (mechanism_from_dict, Randomizer):
        with pytest.raises(ValueError, match=r"weights in \[0, 2\*\*52\]; row 0 holds -1"):
            load(spec)


def test_an_all_zero_matrix_and_a_matrix_without_columns_are_refused():
    with pytest.raises(ValueError, match="all zeros"):
        FactorizationMechanism(np.zeros((3, 2)), 1.0)
    for load in (mechanism_from_dict, Randomizer):
        with pytest.raises(ValueError, match="column 0 of the table .* sums to 0"):
            load(_table_spec(np.zeros((3, 2), dtype=np.int64), 1.0))
    with pytest.raises(ValueError, match="no columns"):
        check_ldp_strategy(np.zeros((3, 0)), 1.0)


def test_non_finite_matrix_message_names_the_entry():
    with pytest.raises(ValueError, match=r"row 1, column 0 holds -inf"):
        as_float_matrix([[1.0, 2.0], [-np.inf, 0.0]], "the matrix")


# ---------------------------------------------------------------- normalization
def _slightly_off():
    """Randomized response whose columns are scaled by 1 +- a few 1e-10: within tolerance."""
    Q = randomized_response_strategy(5, 1.0)
    return Q * (1.0 + np.array([4e-10, -7e-10, 0.0, 9e-10, -1e-10]))


def test_a_slightly_off_spec_is_normalized_and_its_exact_table_is_sampled():
    raw = _slightly_off()
    mechanism = FactorizationMechanism(raw, 1.0)
    sums = np.cumsum(raw, axis=0)[-1]
    # The table's columns sum to 2^52 exactly; its law W / 2^52 (the mechanism's Q, exact
    # float64) is within 1e-13 of the normalized matrix: the 1e-9 offsets are gone.
    np.testing.assert_array_equal(mechanism.table.sum(axis=0), ONE)
    np.testing.assert_array_equal(mechanism.Q, mechanism.table / ONE)
    np.testing.assert_array_equal(mechanism.strategy_matrix(), mechanism.Q)
    assert np.max(np.abs(mechanism.Q - raw / sums)) < 1e-13
    row_ratio = mechanism.table.max(axis=1) / mechanism.table.min(axis=1)
    assert np.all(row_ratio <= np.exp(1.0))


class _FixedDraws:
    """A generator stub whose draws are chosen 52-bit integers ``U``: numpy's ``integers``
    (the server's 64-bit words, ``U`` in the top 52 bits) and the stdlib's ``getrandbits``."""

    def __init__(self, values):
        self.values = [int(v) for v in values]

    def integers(self, low, high, size=None, dtype=None, endpoint=False):
        count = int(np.prod(size))
        drawn, self.values = self.values[:count], self.values[count:]
        return np.array([v << 12 for v in drawn], dtype=np.uint64).reshape(size)

    def getrandbits(self, k):
        assert k == 52
        return self.values.pop(0)


def _boundary_draws(table, cell):
    """For each output ``o`` of positive weight, the smallest and largest ``U`` that must map
    to it (``cum[o-1]`` and ``cum[o] - 1``): mapping them right for every ``o`` pins the
    sampled probability of each output to ``table[o, cell] / 2^52``."""
    cumulative = np.cumsum(table[:, cell])
    lows = np.concatenate([[0], cumulative[:-1]])
    live = table[:, cell] > 0
    draws = np.column_stack([lows, cumulative - 1])[live]
    return np.ravel(draws), np.repeat(np.flatnonzero(live), 2)


def test_server_and_client_sample_the_same_table_exactly():
    raw = _slightly_off()
    mechanism = FactorizationMechanism(raw, 1.0)
    # The spec carries the integer table; both sides check it and sample it as it is.
    spec = json.loads(mechanism.to_json())
    np.testing.assert_array_equal(np.array(spec["table"]), mechanism.table)
    reloaded = mechanism_from_dict(spec)
    assert reloaded == mechanism
    np.testing.assert_array_equal(reloaded.Q, mechanism.Q)
    with pytest.warns(UserWarning, match="seed"):  # seeded on purpose below
        client = Randomizer(spec, seed=0)
    np.testing.assert_array_equal(np.array(client._privatize_cell.table), mechanism.table)
    for cell in range(mechanism.n_inputs):
        draws, expected = _boundary_draws(mechanism.table, cell)
        server = mechanism.randomize(np.full(draws.size, cell), _FixedDraws(draws))
        np.testing.assert_array_equal(server, expected)
        stub = _FixedDraws(draws)
        np.testing.assert_array_equal(
            [client._privatize_cell(cell, stub) for _ in range(draws.size)], expected)


def test_sampling_fits_the_realised_matrix():
    """Chi-square (fixed seed) of the server's draws against the realised columns."""
    mechanism = FactorizationMechanism(_slightly_off(), 1.0)
    rng = np.random.default_rng(15)
    for cell in (0, 3):
        reports = mechanism.randomize(np.full(20_000, cell), rng)
        observed = np.bincount(reports, minlength=mechanism.n_outputs)
        expected = 20_000 * mechanism.Q[:, cell]
        assert chi_square_p_value(observed, expected) > 1e-3


def test_exact_specs_are_left_unchanged_and_round_trip():
    mechanism = baseline_mechanism("hierarchical_matrix", (8,), 1.0)
    again = mechanism_from_json(mechanism.to_json())
    assert again == mechanism
    np.testing.assert_array_equal(again.Q, mechanism.Q)
    twice = mechanism_from_json(again.to_json())
    np.testing.assert_array_equal(twice.Q, mechanism.Q)


def test_zero_rows_are_dropped_on_both_sides_so_the_outputs_agree():
    Q = np.array([[0.0, 0.0], [0.6, 0.4], [0.0, 0.0], [0.4, 0.6]])
    mechanism = FactorizationMechanism(Q, 0.5)
    assert mechanism.n_outputs == 2
    client = Randomizer(mechanism.to_dict())
    np.testing.assert_array_equal(np.array(client._privatize_cell.table), mechanism.table)


def test_realised_epsilon_is_accurate_at_small_epsilon():
    for epsilon in (1e-6, 1e-3, 1.0, 8.0):
        Q = randomized_response_strategy(6, epsilon)
        assert realised_epsilon(Q) == pytest.approx(epsilon, rel=1e-9)
        Randomizer(FactorizationMechanism(Q, epsilon).to_dict())


# ---------------------------------------------------------------- central matrix mechanism
def test_tiny_strategies_get_noise_scaled_to_their_sensitivity():
    """Squares of 1e-170 underflow to 0: a naive column norm gave sigma = 0 (no noise)."""
    assert np.sqrt(np.max(np.sum((1e-170 * np.eye(3)) ** 2, axis=0))) == 0.0
    assert l2_sensitivity(1e-170 * np.eye(3)) == pytest.approx(1e-170, rel=1e-15)
    tiny = MatrixMechanism(1e-170 * np.eye(3), epsilon=1.0, delta=1e-5)
    plain = MatrixMechanism(np.eye(3), epsilon=1.0, delta=1e-5)
    assert tiny.sigma == pytest.approx(1e-170 * plain.sigma, rel=1e-12)
    assert l2_sensitivity(1e200 * np.eye(3)) == pytest.approx(1e200, rel=1e-15)


def test_a_strategy_whose_noise_scale_overflows_is_refused():
    with pytest.raises(ValueError, match="sigma=inf"):
        MatrixMechanism(1e308 * np.eye(3), epsilon=1.0, delta=1e-5)
