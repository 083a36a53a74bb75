"""Memoized longitudinal collection: L-GRR, L-SUE (RAPPOR), L-OUE, L-OSUE, L-SOUE.

Exact privacy of one report (eps_1) and of the permanent response (eps_perm); unbiased rounds
with the analytic variance; and the point of memoization: averaging many rounds reveals the
permanent response only, never converging to the true value.
"""

import itertools
import math

import numpy as np
import pytest
from _stats import check_unbiased_and_variance

from sklearn_ldp.mechanisms._base.prf import new_secrets
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (
    LONGITUDINAL_PROTOCOLS,
    LongitudinalMechanism,
    MemoState,
    OneBitMeanPM,
)

PROTOCOLS = sorted(LONGITUDINAL_PROTOCOLS)


def _report_law(mechanism):
    """``law[v]``: probabilities of every possible report of a user of value ``v``."""
    k = mechanism.n_cells
    if not mechanism.unary:
        return {v: np.where(np.arange(k) == v, mechanism.P1, mechanism.P0) for v in range(k)}
    reports = np.array(list(itertools.product([0, 1], repeat=k)))
    return {v: np.prod(np.where(reports == 1, np.where(np.arange(k) == v, mechanism.P1,
                                                       mechanism.P0),
                                1 - np.where(np.arange(k) == v, mechanism.P1, mechanism.P0)),
                       axis=1) for v in range(k)}


def _permanent_ratio(mechanism):
    p, q = mechanism.p1, mechanism.q1
    return p / q if not mechanism.unary else p * (1 - q) / (q * (1 - p))


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("eps_perm, eps_1", [(2.0, 0.5), (4.0, 1.0), (1.0, 0.2)])
def test_exact_privacy_of_one_report_and_of_the_permanent_response(protocol, eps_perm,
                                                                   eps_1):
    mechanism = LongitudinalMechanism(4, eps_perm, eps_1, protocol)
    laws = _report_law(mechanism)
    assert all(law.sum() == pytest.approx(1.0) for law in laws.values())
    worst = max(float(np.max(laws[u] / laws[v])) for u, v in itertools.permutations(laws, 2))
    assert worst == pytest.approx(math.exp(eps_1), rel=1e-9)
    assert _permanent_ratio(mechanism) == pytest.approx(math.exp(eps_perm), rel=1e-9)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_rounds_are_unbiased_with_the_analytic_variance(protocol):
    rng = np.random.default_rng(77)
    mechanism = LongitudinalMechanism(5, 3.0, 1.0, protocol)
    values = rng.choice(5, size=3000, p=[0.4, 0.3, 0.15, 0.1, 0.05])
    truth = np.bincount(values, minlength=5)
    # Each replicate is one round of a fresh population of clients (a new state), so the
    # replicates are independent.
    answers = np.array([mechanism.estimate(mechanism.aggregate(mechanism.randomize(
        values, MemoState(mechanism, values.size, rng=rng), rng))) for _ in range(400)])
    check_unbiased_and_variance(answers, truth, mechanism.count_variance(truth / 3000, 3000))


@pytest.mark.parametrize("protocol", ["l_grr", "l_sue"])
def test_averaging_rounds_reveals_the_permanent_response_not_the_value(protocol):
    rng = np.random.default_rng(5)
    mechanism = LongitudinalMechanism(4, 1.0, 0.5, protocol)
    n_users, rounds = 3000, 300
    values = np.zeros(n_users, dtype=np.int64)  # everyone holds value 0
    state = MemoState(mechanism, n_users, rng=rng)
    support = np.zeros((n_users, 4))
    for _ in range(rounds):
        reports = mechanism.randomize(values, state, rng)
        if mechanism.unary:
            support += np.unpackbits(reports, axis=1, bitorder="little")[:, :4]
        else:
            support[np.arange(n_users), reports] += 1
    guessed = support.argmax(axis=1) == 0
    # After many rounds the best guess of a user's value is its permanent response, right
    # with the permanent step's own accuracy, never converging to 1.
    if mechanism.unary:  # bit 0 of the permanent is kept with p1, the rest may show ones
        assert guessed.mean() < 0.9
    else:
        band = 4.5 * math.sqrt(mechanism.p1 * (1 - mechanism.p1) / n_users)
        assert abs(guessed.mean() - mechanism.p1) < band + 0.02
    assert state.n_entries == n_users  # one memoized response per (user, value)
    # Without memoization (a fresh permanent response every round) the average converges.
    fresh = np.zeros((n_users, 4))
    for _ in range(rounds):
        reports = mechanism.randomize(values, MemoState(mechanism, n_users, rng=rng), rng)
        if mechanism.unary:
            fresh += np.unpackbits(reports, axis=1, bitorder="little")[:, :4]
        else:
            fresh[np.arange(n_users), reports] += 1
    assert (fresh.argmax(axis=1) == 0).mean() > 0.99


def test_memo_state_keeps_one_response_per_user_and_value():
    mechanism = LongitudinalMechanism(3, 2.0, 1.0, "l_grr")
    rng = np.random.default_rng(0)
    state = MemoState(mechanism, 3, rng=rng)

    def lookup(values):
        return state.permanent(values, lambda users, points: mechanism.permanent_response(
            points, state.secrets[users]))

    first = lookup(np.array([0, 1, 2]))
    assert np.array_equal(lookup(np.array([0, 1, 2])), first)
    # User 1 changes its value: a new permanent response, the old one kept.
    lookup(np.array([0, 2, 2]))
    assert state.n_entries == 4
    assert np.array_equal(lookup(np.array([0, 1, 2])), first)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="epsilon_1"):
        LongitudinalMechanism(4, 1.0, 1.0)
    with pytest.raises(ValueError, match="protocol"):
        LongitudinalMechanism(4, 2.0, 1.0, "l_xyz")
    with pytest.raises(ValueError, match="too large"):
        LongitudinalMechanism(4, 2.0, 1.9, "l_oue")
    mechanism = LongitudinalMechanism(4, 2.0, 1.0, "l_sue")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"values\[1\] = 4"):
        mechanism.randomize(np.array([0, 4]), MemoState(mechanism, 2), rng)
    with pytest.raises(ValueError, match="MemoState of this mechanism"):
        mechanism.randomize(np.array([0]), MemoState(LongitudinalMechanism(4, 2.0, 0.5), 1), rng)
    with pytest.raises(ValueError, match="bit past"):
        mechanism.aggregate(np.array([[0b10001]], dtype=np.uint8))
    with pytest.raises(ValueError, match="statistic"):
        mechanism.estimate(np.array([5, 0, 0, 0, 3]))
    grr = LongitudinalMechanism(4, 2.0, 1.0, "l_grr")
    with pytest.raises(ValueError, match="statistic"):
        grr.estimate(np.array([1, 1, 0, 0, 3]))  # value reports must sum to N
    assert LongitudinalMechanism.from_dict(grr.to_dict()) == grr


def test_dbitflip_exact_privacy():
    from sklearn_ldp.mechanisms.longitudinal.mechanisms import DBitFlipPM
    for epsilon in (0.5, 1.0, 3.0):
        mechanism = DBitFlipPM(5, epsilon, n_sampled=3)
        e = mechanism.e
        buckets = np.array([0, 2, 4])  # any sample: the bits' law given the value
        bits = np.array(list(itertools.product([0, 1], repeat=3)))
        laws = []
        for value in range(5):
            own = buckets == value
            one = np.where(own, e / (e + 1), 1 / (e + 1))
            laws.append(np.prod(np.where(bits == 1, one, 1 - one), axis=1))
        worst = max(float(np.max(a / b)) for a, b in itertools.permutations(laws, 2))
        assert worst == pytest.approx(math.exp(epsilon), rel=1e-12)


@pytest.mark.parametrize("n_sampled", [1, 3])
def test_dbitflip_rounds_are_unbiased_and_memoized(n_sampled):
    from sklearn_ldp.mechanisms.longitudinal.mechanisms import DBitFlipPM
    rng = np.random.default_rng(9)
    mechanism = DBitFlipPM(6, 2.0, n_sampled=n_sampled)
    values = rng.choice(6, size=3000, p=[0.3, 0.25, 0.2, 0.1, 0.1, 0.05])
    truth = np.bincount(values, minlength=6)
    answers = []
    for _ in range(400):
        state = mechanism.new_state(len(values), rng)
        answers.append(mechanism.estimate(mechanism.aggregate(
            mechanism.randomize(values, state, rng))))
    check_unbiased_and_variance(np.array(answers), truth,
                                mechanism.count_variance(truth / 3000, 3000))
    # Memoized: the same value gives the same report every round.
    state = mechanism.new_state(len(values), rng)
    first = mechanism.randomize(values, state, rng)
    again = mechanism.randomize(values, state, rng)
    assert np.array_equal(first[1], again[1])
    with pytest.raises(ValueError, match="statistic"):
        stat = mechanism.aggregate(first)
        stat[0] = stat[6] + 1
        mechanism.estimate(stat)


# ---------------------------------------------------------------- packed bits, exact budgets

@pytest.mark.parametrize("protocol", ["l_sue", "l_oue", "l_osue", "l_soue"])
def test_unary_probabilities_are_dyadic_and_within_both_budgets_exactly(protocol):
    from fractions import Fraction

    from sklearn_ldp.mechanisms._base.exact import exp_decimal as decimal_exp
    for eps_perm, eps_1 in [(2.0, 1.0), (4.0, 0.5), (1.0, 0.2), (8.0, 3.0)]:
        try:
            mechanism = LongitudinalMechanism(16, eps_perm, eps_1, protocol)
        except ValueError:  # eps_1 out of reach for this pair of steps
            continue
        p1, q1, p2, q2 = (Fraction(value) for value in (mechanism.p1, mechanism.q1,
                                                         mechanism.p2, mechanism.q2))
        assert all(value * 2**52 == int(value * 2**52) for value in (p1, q1, p2, q2))
        P1, P0 = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
        one_report = P1 * (1 - P0) / (P0 * (1 - P1))
        permanent = p1 * (1 - q1) / (q1 * (1 - p1))
        assert one_report <= Fraction(str(decimal_exp(eps_1)))
        assert permanent <= Fraction(str(decimal_exp(eps_perm)))
        assert float(one_report) == pytest.approx(math.exp(eps_1), rel=1e-12)


@pytest.mark.parametrize("protocol", ["l_sue", "l_oue"])
def test_packed_permanent_and_instantaneous_bits_follow_their_laws(protocol):
    from _stats import chi_square_p_value
    rng = np.random.default_rng(31)
    mechanism = LongitudinalMechanism(11, 2.0, 1.0, protocol)
    n = 60_000
    values = rng.integers(11, size=n)
    permanent = mechanism.permanent_response(values, new_secrets(n, rng))
    assert permanent.shape == (n, 2) and permanent.dtype == np.uint8
    bits = np.unpackbits(permanent, axis=1, bitorder="little")
    assert not bits[:, 11:].any()
    own = bits[np.arange(n), values].astype(bool)
    others = bits[:, :11].sum() - own.sum()
    assert chi_square_p_value([own.sum(), n - own.sum()],
                              [mechanism.p1 * n, (1 - mechanism.p1) * n]) > 1e-6
    assert chi_square_p_value([others, 10 * n - others],
                              [mechanism.q1 * 10 * n, (1 - mechanism.q1) * 10 * n]) > 1e-6
    report = np.unpackbits(mechanism.instantaneous(permanent, rng), axis=1,
                           bitorder="little")
    assert not report[:, 11:].any()
    for set_bit, probability in ((1, mechanism.p2), (0, mechanism.q2)):
        where = bits[:, :11] == set_bit
        ones = report[:, :11][where].sum()
        assert chi_square_p_value([ones, where.sum() - ones],
                                  [probability * where.sum(),
                                   (1 - probability) * where.sum()]) > 1e-6


def test_unary_aggregate_counts_the_packed_bits():
    rng = np.random.default_rng(4)
    mechanism = LongitudinalMechanism(13, 2.0, 1.0, "l_osue")
    reports = mechanism.randomize(rng.integers(13, size=5000), MemoState(mechanism, 5000), rng)
    expected = np.unpackbits(reports, axis=1, bitorder="little")[:, :13].sum(axis=0)
    assert np.array_equal(mechanism.aggregate(reports), np.append(expected, 5000))


@pytest.mark.parametrize("k, d", [(5, 2), (6, 5), (4, 4), (7, 1), (10, 9), (12, 10),
                                  (9, 9)])
def test_dbitflip_samples_every_bucket_subset_uniformly(k, d):
    # Floyd's algorithm on PRF words of the users' secrets.
    from _stats import chi_square_p_value

    from sklearn_ldp.mechanisms.longitudinal.mechanisms import _derived_subsets
    rng = np.random.default_rng(k * 10 + d)
    subsets = _derived_subsets(new_secrets(60_000, rng), k, d)
    assert ((subsets >= 0) & (subsets < k)).all()
    assert (np.diff(subsets, axis=1) > 0).all()  # d distinct buckets
    codes = (subsets * k ** np.arange(d)).sum(axis=1)
    _, counts = np.unique(codes, return_counts=True)
    assert counts.size == math.comb(k, d)
    if counts.size > 1:
        assert chi_square_p_value(counts, np.full(counts.size, 60_000 / counts.size)) > 1e-6


# ---------------------------------------------------------------- 1BitMean (counters)
@pytest.mark.parametrize("epsilon", [0.25, 1.0, 3.0])
@pytest.mark.parametrize("n_segments", [1, 4, 7])
def test_one_bit_mean_exact_privacy(epsilon, n_segments):
    from fractions import Fraction

    from sklearn_ldp.mechanisms._base.bits import PRECISION, ratio_at_most
    from sklearn_ldp.mechanisms._base.exact import exp_decimal as decimal_exp
    mechanism = OneBitMeanPM(10.0, epsilon, n_segments)
    numerators = [int(a) for a in mechanism._numerators]
    one = 2**PRECISION
    # Every pair of points, both outcomes of the bit, as exact fractions.
    worst = max(max(Fraction(a, b), Fraction(one - a, one - b))
                for a in numerators for b in numerators)
    assert ratio_at_most(worst.numerator, worst.denominator, decimal_exp(epsilon))
    assert float(worst) == pytest.approx(math.exp(epsilon), rel=1e-12)
    assert numerators == sorted(numerators)
    # The points are on the 1BitMean line up to the 2^-52 rounding.
    line = 1 / (math.exp(epsilon) + 1) + np.arange(n_segments + 1) / n_segments * (
        math.exp(epsilon) - 1) / (math.exp(epsilon) + 1)
    assert np.allclose(mechanism.p, line, atol=2**-51)


def test_one_bit_mean_rounds_are_unbiased_with_the_analytic_variance():
    rng = np.random.default_rng(91)
    mechanism = OneBitMeanPM(24.0, 1.0, n_segments=6)
    values = np.concatenate([rng.uniform(0, 24, 300), [0.0, 24.0, 12.0, 3.9]])
    # Replicates: fresh clients (new alpha, new memo) each time, so they are independent.
    estimates = np.array([mechanism.estimate(mechanism.aggregate(mechanism.randomize(
        values, mechanism.new_state(values.size, rng), rng))) for _ in range(3000)])
    check_unbiased_and_variance(estimates[:, None], np.array([values.mean()]),
                                np.array([mechanism.mean_variance(values)]))
    assert mechanism.mean_variance(values) <= mechanism.worst_case_variance(values.size)


def test_alpha_rounding_is_unbiased_and_memoized():
    rng = np.random.default_rng(92)
    mechanism = OneBitMeanPM(8.0, 1.0, n_segments=4)  # points 0, 2, 4, 6, 8
    alpha = rng.random(200_000)
    points = mechanism.rounded_points(np.full(alpha.size, 4.5), alpha)
    assert set(np.unique(points)) == {2, 3}
    up = (points == 3).mean()  # 4.5 covers a quarter of the segment [4, 6]
    assert abs(up - 0.25) < 4.5 * math.sqrt(0.25 * 0.75 / alpha.size)
    # A counter moving within its segment keeps its rounded value (with this alpha).
    assert (mechanism.rounded_points(np.array([4.1, 4.4]), np.array([0.2, 0.2])) == 2).all()
    assert (mechanism.rounded_points(np.array([0.0, 8.0]), np.array([0.99, 0.99]))
            == [0, 4]).all()


def test_one_bit_mean_memoization_does_not_average_out():
    rng = np.random.default_rng(93)
    mechanism = OneBitMeanPM(1.0, 0.5, n_segments=2)
    values = np.full(2000, 0.5)  # a grid point: rounded to itself whatever alpha
    state = mechanism.new_state(values.size, rng)
    rounds = np.array([mechanism.randomize(values, state, rng) for _ in range(50)])
    # Every round repeats the memoized bit: a user's average is its permanent bit (0 or 1),
    # never the value's probability p = 1/2.
    per_user = rounds.mean(axis=0)
    assert set(np.unique(per_user)) <= {0.0, 1.0}
    assert state.keys.size == values.size
    # Fresh 1BitMean bits each round would average to p = 1/2 for every user.
    fresh = np.array([mechanism.randomize(values, mechanism.new_state(values.size, rng), rng)
                      for _ in range(50)]).mean(axis=0)
    assert np.abs(fresh - 0.5).max() < 0.5 and np.abs(per_user - 0.5).min() == 0.5


def test_one_bit_mean_bad_input_is_refused():
    with pytest.raises(ValueError, match="max_value"):
        OneBitMeanPM(0.0, 1.0)
    with pytest.raises(ValueError, match="n_segments"):
        OneBitMeanPM(1.0, 1.0, n_segments=0)
    mechanism = OneBitMeanPM(5.0, 1.0)
    state = mechanism.new_state(3, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"values\[1\] = nan"):
        mechanism.randomize(np.array([1.0, np.nan, 2.0]), state, np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"values\[2\] = 6.0"):
        mechanism.randomize(np.array([1.0, 2.0, 6.0]), state, np.random.default_rng(0))
    with pytest.raises(ValueError, match="3 counters"):
        mechanism.randomize(np.array([1.0]), state, np.random.default_rng(0))
    with pytest.raises(ValueError, match="bits"):
        mechanism.aggregate(np.array([0, 2]))
    assert OneBitMeanPM.from_dict(mechanism.to_dict()) == mechanism
    with pytest.raises(ValueError, match="specification"):
        OneBitMeanPM.from_dict({"mechanism": "1bitmean_pm"})
