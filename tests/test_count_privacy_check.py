"""The privacy check of count mechanism matrices (follow-up of issue 15, item 1).

``check_properties`` accepted column sums within ``tol * (n + 1)`` of 1: a tolerance growing
with the number of rows, the bug fixed for strategy matrices in ``_validation``. A column of
1001 rows lacking 9e-5 of its mass passed as valid and DP, yet an inverse-CDF sampler gives
that mass to the last output and exceeds the claim there. Now every column sum is held to
``COLUMN_SUM_ATOL`` (absolute), the columns are normalized, the normalized matrix's realised
epsilon (between adjacent counts) is compared with the claim up to rounding, and it is
quantized into the integer table that is sampled (issue 26): the table is checked exactly on
integers, and its realised matrix ``W / 2^52`` is what is decoded with.
"""

import re

import numpy as np
import pytest
from _laws import assert_private, assert_sampled_law

from sklearn_ldp import CountMechanism
from sklearn_ldp._validation import COLUMN_SUM_ATOL, check_ldp_strategy
from sklearn_ldp.deploy.budget import PrivacyLedger, register_ledger, unregister_ledger
from sklearn_ldp.mechanisms._base.tables import table_ratio_violation
from sklearn_ldp.mechanisms.central.count import (
    check_count_matrix,
    check_properties,
    count_law,
    count_table,
    decode,
    geometric_mechanism,
    posterior,
    privacy_loss,
    sample_outputs,
)

N_ROWS = 1001  # the old tolerance: 1e-7 * 1001 = 1.001e-4 > SHIFT
SHIFT = 9e-5
CLAIMED = 0.05
ONE = 2**52


def _shifted_matrix(sign):
    """Uniform columns, but column 1 scaled by ``1 + sign * delta`` on every row but the last,
    so that it sums to ``1 + sign * 9e-5``. Adjacent ratios are about ``e^(9e-5)``."""
    P = np.full((N_ROWS, N_ROWS), 1.0 / N_ROWS)
    delta = SHIFT / ((N_ROWS - 1) / N_ROWS)
    P[:-1, 1] *= 1.0 + sign * delta
    return P


def _naive_sampled_probabilities(P):
    """What an inverse-CDF sampler that does not normalize draws: the cumulative columns with
    the last entry forced to 1, differenced."""
    cumulative = np.minimum(np.cumsum(P, axis=0), 1.0)
    cumulative[-1] = 1.0
    return np.diff(cumulative, axis=0, prepend=0.0)


def _column_message(column, total):
    return (rf"column {column} of the count mechanism matrix sums to "
            rf"{re.escape(repr(float(total)))}: every column must sum to 1 within 1e-09")


# ---------------------------------------------------------------- the attack
def test_the_old_tolerance_passed_the_deficit_matrix_and_it_was_not_private():
    """Why the check changed: the old row-scaled tolerance and the ratios of the entries both
    accept the deficit matrix, yet the missing mass given to the last output breaks the claim."""
    P = _shifted_matrix(-1)
    assert np.allclose(P.sum(axis=0), 1.0, rtol=0.0, atol=1e-7 * P.shape[0])  # the old check
    assert privacy_loss(P)[0] < 1e-4  # the entries look private
    assert privacy_loss(_naive_sampled_probabilities(P))[0] > 1.5 * CLAIMED


@pytest.mark.parametrize("sign", [-1, 1], ids=["deficit", "surplus"])
def test_deficit_and_surplus_matrices_are_refused_naming_the_column_and_its_sum(sign):
    P = _shifted_matrix(sign)
    total = np.cumsum(P, axis=0)[-1, 1]
    assert abs(total - 1.0 - sign * SHIFT) < 1e-12
    match = _column_message(1, total)
    for check in (lambda: check_count_matrix(P, CLAIMED),
                  lambda: sample_outputs(P, [0, 1, 2], np.random.default_rng(0),
                                         epsilon=CLAIMED),
                  lambda: sample_outputs(P, [1], np.random.default_rng(0)),
                  lambda: decode(P, [0, 1]),
                  lambda: posterior(P)):
        with pytest.raises(ValueError, match=match):
            check()
    properties = check_properties(P, CLAIMED)
    assert not properties["valid"] and not properties["DP"]


def test_the_column_sum_tolerance_does_not_grow_with_the_number_of_rows():
    for n_rows in (2, 11, N_ROWS):
        base = geometric_mechanism(n_rows - 1, 0.1)  # alpha^1000 = e^-100: no underflow
        base = base / np.cumsum(base, axis=0)[-1]
        for scale, accepted in ((1.0 - 0.5 * COLUMN_SUM_ATOL, True),
                                (1.0 - 2.0 * COLUMN_SUM_ATOL, False),
                                (1.0 + 2.0 * COLUMN_SUM_ATOL, False)):
            P = base.copy()
            P[:, -1] *= scale
            assert check_properties(P, 0.1)["valid"] is accepted, (n_rows, scale)
            assert check_properties(P, 0.1)["DP"] is accepted, (n_rows, scale)
            if accepted:
                check_count_matrix(P, 0.1)
            else:
                with pytest.raises(ValueError, match=f"column {n_rows - 1} of the count"):
                    check_count_matrix(P, 0.1)


def test_the_count_and_strategy_checks_share_the_column_sum_check():
    """Same rule and same words as check_ldp_strategy (one helper in _validation)."""
    P = np.array([[0.5, 0.25], [0.5, 0.75 + 3e-9]])
    with pytest.raises(ValueError) as count_error:
        check_count_matrix(P)
    with pytest.raises(ValueError) as strategy_error:
        check_ldp_strategy(P, 1.0, name="count mechanism matrix")
    assert str(count_error.value) == str(strategy_error.value)


def test_a_negative_entry_is_refused_naming_it():
    P = np.array([[1.1, 0.2], [-0.1, 0.8]])
    with pytest.raises(ValueError, match=r"negative entry -0\.1 at row 1, column 0"):
        sample_outputs(P, [0], np.random.default_rng(0))


# ---------------------------------------------------------------- realised epsilon
def test_a_realised_epsilon_above_the_claim_is_refused_with_its_value():
    P = geometric_mechanism(6, 1.0)
    realised = privacy_loss(P / np.cumsum(P, axis=0)[-1])[0]
    assert realised == pytest.approx(1.0, rel=1e-12)
    match = rf"not 0\.9-DP: .* is {re.escape(repr(realised))} > 0\.9"
    with pytest.raises(ValueError, match=match):
        check_count_matrix(P, 0.9)
    with pytest.raises(ValueError, match=match):
        sample_outputs(P, [0, 3], np.random.default_rng(0), epsilon=0.9)
    assert not check_properties(P, 0.9)["DP"]
    # At its own epsilon, within the rounding slack, the same matrix is accepted.
    check_count_matrix(P, 1.0)
    assert sample_outputs(P, [0, 3], np.random.default_rng(0), epsilon=1.0).shape == (2,)


def test_a_zero_next_to_a_positive_entry_is_refused_as_an_infinite_loss():
    """The check reports the loss and where it is reached."""
    P = geometric_mechanism(3, 1.0)
    P[0, 1], P[1, 1] = 0.0, P[1, 1] + P[0, 1]
    with pytest.raises(ValueError, match=r"is inf > 1\.0, reached at output 0, counts (0 and 1"
                                         r"|1 and 0|1 and 2|2 and 1)"):
        sample_outputs(P, [1], np.random.default_rng(0), epsilon=1.0)


def test_the_estimator_refuses_a_tampered_matrix_before_charging():
    ledger = PrivacyLedger(total_epsilon=10.0)
    register_ledger("count-privacy-check", ledger)
    try:
        cm = CountMechanism(group_size=6, epsilon=1.0, ledger="count-privacy-check",
                            random_state=0).fit()
        cm.transform(np.array([0, 3, 6]))  # the designed matrix passes
        assert len(ledger.entries) == 1
        cm.matrix_ = geometric_mechanism(6, 2.0)  # a matrix weaker than the claim
        with pytest.raises(ValueError, match=r"CountMechanism's matrix_ is not 1\.0-DP: .* "
                                             r"is 2\.0\d* > 1\.0"):
            cm.transform(np.array([0, 3, 6]))
        deficit = geometric_mechanism(6, 1.0)
        deficit[:-1, 2] *= 1.0 - 1e-6
        cm.matrix_ = deficit
        with pytest.raises(ValueError, match=r"column 2 of the CountMechanism's matrix_ sums"):
            cm.transform(np.array([0, 3, 6]))
        assert len(ledger.entries) == 1  # nothing charged for the refused releases
    finally:
        unregister_ledger("count-privacy-check")


# ---------------------------------------------------------------- the exact table
def _slightly_off():
    """The geometric mechanism with column 2 short of 1 by 8e-10 (within the tolerance)."""
    P = geometric_mechanism(4, 1.0)
    P = P / np.cumsum(P, axis=0)[-1]
    P[:, 2] *= 1.0 - 8e-10
    return P


def test_a_slightly_off_matrix_is_normalized_then_made_an_exact_table():
    P = _slightly_off()
    assert abs(np.cumsum(P, axis=0)[-1, 2] - 1.0) > 1e-10  # really off, within 1e-9
    realised = check_count_matrix(P, 1.0)
    table = count_table(P, 1.0)
    np.testing.assert_array_equal(realised, table / ONE)
    np.testing.assert_array_equal(table.sum(axis=0), ONE)
    # Within 1e-13 of the normalized matrix: the 8e-10 deficit is gone, not left to a row.
    assert np.max(np.abs(realised - P / np.cumsum(P, axis=0)[-1])) < 1e-13
    np.testing.assert_array_equal(check_count_matrix(P), P / np.cumsum(P, axis=0)[-1])
    assert check_properties(P, 1.0)["valid"] and check_properties(P, 1.0)["DP"]
    # Quantizing the realised matrix gives the same table back (what the estimator does).
    np.testing.assert_array_equal(count_table(realised, 1.0), table)


def test_the_table_is_sampled_exactly():
    """The draws are those of an independent integer inverse CDF of the table fed the same
    52-bit integers, draw for draw."""
    P = _slightly_off()
    table = count_table(P, 1.0)
    counts = np.tile(np.arange(5), 4000)
    drawn = sample_outputs(P, counts, np.random.default_rng(2024), epsilon=1.0)
    draws = np.random.default_rng(2024).integers(0, 2**64 - 1, size=counts.shape,
                                                  dtype=np.uint64, endpoint=True) >> np.uint64(12)
    cdf = np.cumsum(table, axis=0)
    expected = np.array([np.searchsorted(cdf[:, j], int(u), side="right")
                         for j, u in zip(counts, draws, strict=True)])
    np.testing.assert_array_equal(drawn, expected)


def test_sampling_fits_the_table():
    P = _slightly_off()
    n_draws = 50_000
    drawn = sample_outputs(P, np.full(n_draws, 2), np.random.default_rng(7), epsilon=1.0)
    assert_sampled_law(count_law(P, 1.0, 2), drawn)


def test_a_far_tail_below_2_to_the_minus_52_is_kept_positive():
    """The geometric mechanism's far tail underflows 2^-52 (e^-60 here): rounded down it
    would be 0 next to a positive entry, an infinite loss. The table keeps every entry
    positive and every adjacent ratio within e^eps, exactly."""
    P = geometric_mechanism(80, 1.0)
    assert P.min() < 2.0**-80
    table = count_table(P, 1.0)
    assert table.min() > 0
    assert table_ratio_violation(table, 1.0, "adjacent") is None
    assert np.max(np.abs(table / ONE - P)) < 1e-11
    for j in (0, 40, 79):
        assert_private(_CountLaws(P, 1.0), [j, j + 1], 1.0)


class _CountLaws:
    """``exact_law`` of the count mechanism ``P`` at ``epsilon`` (for ``assert_private``)."""

    def __init__(self, P, epsilon):
        self.P, self.epsilon = P, epsilon

    def exact_law(self, count):
        return count_law(self.P, self.epsilon, count)
