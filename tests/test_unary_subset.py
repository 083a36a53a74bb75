"""Unary encoding (rappor, oue), subset selection, and the packed-bit utilities they share.

Statistical tests use fixed seeds and tolerances derived from the exact variances (the
shared checks of ``_stats``): means within 4.5 standard errors, sample variances in the
chi-square band at level 1e-6, chi-square goodness of fit per user type with a Bonferroni
p-value threshold.
"""

import math

import numpy as np
import pytest
from _stats import check_unbiased, check_unbiased_and_variance, chi_square_p_value

from sklearn_ldp import workloads
from sklearn_ldp.mechanisms._base import bits as _bits
from sklearn_ldp.mechanisms._base import mechanism as mechanisms_base
from sklearn_ldp.mechanisms._base.exact import exp_decimal
from sklearn_ldp.mechanisms._base.mechanism import mechanism_from_json
from sklearn_ldp.mechanisms.factorization.mechanism import privacy_ratio
from sklearn_ldp.mechanisms.oracles.subset_selection import (
    SubsetSelection,
    optimal_subset_size,
    subset_histogram_variance,
)
from sklearn_ldp.mechanisms.oracles.unary import (
    MAX_EXACT_RAPPOR_CELLS,
    OptimizedUnaryEncoding,
    SymmetricUnaryEncoding,
    UnaryEncoding,
    rappor_strategy,
)

UNARY = [SymmetricUnaryEncoding, OptimizedUnaryEncoding]
EPSILONS = [0.25, 1.0, 2.5, 6.0]


def nominal_unary(cls, epsilon):
    if cls is SymmetricUnaryEncoding:
        p = np.exp(epsilon / 2) / (1 + np.exp(epsilon / 2))
        return p, 1 - p
    return 0.5, 1 / (np.exp(epsilon) + 1)


def report_codes(reports):
    """Each packed report (at most 8 bytes) as the integer whose bit j is bit j of the report."""
    padded = np.zeros((reports.shape[0], 8), dtype=np.uint8)
    padded[:, : reports.shape[1]] = reports
    return padded.view("<u8").ravel().astype(np.int64)


def check_sampling_against_strategy(mechanism, output_codes, per_type, seed):
    """Chi-square of randomize's outputs per type against the exact strategy matrix."""
    n = mechanism.n_inputs
    Q = mechanism.strategy_matrix()
    types = np.repeat(np.arange(n), per_type)
    reports = mechanism.randomize(types, np.random.default_rng(seed))
    order = np.argsort(output_codes)
    rows = order[np.searchsorted(output_codes, report_codes(reports), sorter=order)]
    assert np.array_equal(output_codes[rows], report_codes(reports))  # every report an output
    observed = np.zeros(Q.shape)
    np.add.at(observed, (rows, types), 1)
    expected = Q * per_type
    # one Pearson test per user type (each column is one multinomial), Bonferroni over types
    p_values = [chi_square_p_value(observed[:, t], expected[:, t]) for t in range(n)]
    assert min(p_values) > 1e-6 / n


def check_dense_variance(mechanism, supports):
    """The SupportOracle variance equals the dense one of the explicit decoder on Q.

    ``supports[o]`` is the 0/1 support of output ``o``; the one-report estimate with the
    known-total step is ``L[:, o] = P (s_o - q) / (p - q) + 1/n``.
    """
    n = mechanism.n_inputs
    Q = mechanism.strategy_matrix()
    raw = (supports.T - mechanism.q) / (mechanism.p - mechanism.q)
    L = raw - raw.mean(axis=0) + 1.0 / n
    np.testing.assert_allclose(L @ Q, np.eye(n), atol=1e-9)  # unbiased
    for W in (np.eye(n), workloads.prefix(n).toarray(),
              np.random.default_rng(0).normal(size=(3, n))):
        G = W.T @ W
        dense = np.sum((W @ L) ** 2, axis=0) @ Q - np.diag(G)
        np.testing.assert_allclose(mechanism.per_user_variance(G), dense, rtol=1e-8, atol=1e-9)
        per_query = (W @ L) ** 2 @ Q - W**2
        np.testing.assert_allclose(mechanism.query_variance(W), per_query, rtol=1e-8,
                                   atol=1e-9)


def check_unbiased_with_exact_variance(mechanism, type_counts, repetitions, seed):
    """Mean and variance of Histogram and Prefix answers over repeated randomizations."""
    n = mechanism.n_inputs
    rng = np.random.default_rng(seed)
    types = np.repeat(np.arange(n), type_counts)
    n_users = types.size
    # One randomize call for all repetitions, then one aggregate per repetition.
    reports = mechanism.randomize(np.tile(types, repetitions), rng)
    estimates = np.array([
        mechanism.estimate(mechanism.aggregate(reports[r * n_users:(r + 1) * n_users]))
        for r in range(repetitions)
    ])
    for W in (np.eye(n), workloads.prefix(n).toarray()):
        answers = estimates @ W.T
        truth = W @ type_counts
        variance = mechanism.query_variance(W) @ type_counts
        zero = variance < 1e-9 * variance.max()
        # Prefix's last query is the total: known exactly after the known-total step.
        np.testing.assert_allclose(answers[:, zero], np.broadcast_to(truth[zero], (
            repetitions, zero.sum())), rtol=1e-9)
        check_unbiased_and_variance(answers[:, ~zero], truth[~zero], variance[~zero])


# =============================================================================== _bits
@pytest.mark.parametrize("numerator, precision", [
    (1211204485066402, 52),  # OUE's q at eps = 1 (52 digits: dense and compacted phases)
    (2**51, 52),  # exactly 1/2: one digit
    (2**52 - 1, 52),  # 1 - 2^-52
    (1, 12),  # 2^-12: every digit below the first is 0
    (1700, 12),
    (5, 3),
])
def test_bernoulli_bits_have_the_exact_dyadic_frequency(numerator, precision):
    rng = np.random.default_rng(numerator % 1000)
    n_rows, n_bits = 100_000, 77  # 77 bits: a partial last byte
    prob = numerator / 2**precision
    packed = _bits.bernoulli_packed(rng, n_rows, n_bits, numerator, precision)
    assert packed.shape == (n_rows, 10) and packed.dtype == np.uint8
    assert not np.any(packed[:, -1] >> 5)  # bits 77..79 unused
    counts = _bits.column_counts(packed, n_bits)
    total = n_rows * n_bits
    sd = math.sqrt(total * prob * (1 - prob))
    assert abs(counts.sum() - total * prob) < 4.5 * sd
    # every column on its own
    column_sd = math.sqrt(n_rows * prob * (1 - prob))
    assert np.all(np.abs(counts - n_rows * prob) < 5 * column_sd)


def test_bernoulli_bits_are_pairwise_independent():
    """Within a 64-bit word (all bits share the random words) and across rows."""
    prob_num, precision = 1211204485066402, 52
    prob = prob_num / 2**precision
    rows = 40_000
    packed = _bits.bernoulli_packed(np.random.default_rng(1), rows, 64, prob_num, precision)
    bits = np.unpackbits(packed, axis=1, bitorder="little").astype(float)
    both = bits.T @ bits / rows  # P(bit i and bit j)
    off = ~np.eye(64, dtype=bool)
    sd = math.sqrt(prob**2 * (1 - prob**2) / rows)
    assert np.all(np.abs(both[off] - prob**2) < 5.5 * sd)
    consecutive = np.mean(bits[1:] * bits[:-1], axis=0)
    assert np.all(np.abs(consecutive - prob**2) < 5 * sd)


def test_bernoulli_degenerate_probabilities_and_bad_numerators():
    rng = np.random.default_rng(0)
    assert not np.any(_bits.bernoulli_packed(rng, 5, 13, 0))
    ones = _bits.bernoulli_packed(rng, 5, 13, 2**52)
    np.testing.assert_array_equal(np.unpackbits(ones, axis=1, bitorder="little")[:, :13], 1)
    assert np.all(ones[:, 1] == 0b11111)  # trailing bits stay 0
    assert _bits.bernoulli_packed(rng, 0, 13, 3).shape == (0, 2)
    assert _bits.bernoulli_bits(rng, 0, 3).shape == (0,)
    with pytest.raises(ValueError, match="numerator"):
        _bits.bernoulli_packed(rng, 5, 13, 2**52 + 1)
    with pytest.raises(ValueError, match="numerator"):
        _bits.bernoulli_packed(rng, 5, 13, -1)


def test_dyadic_rounding_goes_in_the_requested_direction():
    value = exp_decimal(1.0) / 10  # 0.2718...
    down = _bits.dyadic_numerator(value, "down")
    up = _bits.dyadic_numerator(value, "up")
    assert up == down + 1 and down / 2**52 <= 0.2718281828459045 <= up / 2**52
    assert _bits.dyadic_numerator(0.5, "down") == _bits.dyadic_numerator(0.5, "up") == 2**51
    with pytest.raises(ValueError, match="rounding"):
        _bits.dyadic_numerator(0.5, "nearest")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        _bits.dyadic_numerator(1.5, "down")


@pytest.mark.parametrize("n_bits", [1, 7, 8, 9, 63, 64, 65, 200])
@pytest.mark.parametrize("n_rows", [0, 1, 254, 255, 256, _bits.COUNT_BLOCK + 3])
def test_column_counts_and_popcounts_match_unpackbits(n_bits, n_rows):
    rng = np.random.default_rng(n_bits * 1000 + n_rows)
    bits = rng.random((n_rows, n_bits)) < rng.random(n_bits)  # a different rate per column
    packed = np.packbits(bits, axis=1, bitorder="little")
    np.testing.assert_array_equal(_bits.column_counts(packed, n_bits), bits.sum(axis=0))
    assert _bits.column_counts(packed, n_bits).dtype == np.int64
    np.testing.assert_array_equal(_bits.row_popcounts(packed), bits.sum(axis=1))
    # a non-contiguous view (every other row) is counted the same way
    np.testing.assert_array_equal(_bits.column_counts(packed[::2], n_bits),
                                  bits[::2].sum(axis=0))


def test_first_row_without_popcount():
    bits = np.zeros((_bits.COUNT_BLOCK + 10, 20), dtype=bool)
    bits[:, :3] = True
    packed = np.packbits(bits, axis=1, bitorder="little")
    assert _bits.first_row_without_popcount(packed, 3) is None
    packed[_bits.COUNT_BLOCK + 4, 2] = 1  # a fourth bit in the second block
    assert _bits.first_row_without_popcount(packed, 3) == _bits.COUNT_BLOCK + 4
    assert _bits.first_row_without_popcount(packed, 2) == 0


def test_single_bit_access():
    rng = np.random.default_rng(4)
    bits = rng.random((50, 19)) < 0.5
    packed = np.packbits(bits, axis=1, bitorder="little")
    positions = rng.integers(0, 19, 50)
    np.testing.assert_array_equal(_bits.get_bits(packed, positions),
                                  bits[np.arange(50), positions])
    rows = np.array([3, 7, 40])
    np.testing.assert_array_equal(_bits.get_bits(packed, positions[:3], rows=rows),
                                  bits[rows, positions[:3]])
    values = rng.integers(0, 2, 50)
    _bits.set_bits(packed, positions, values)
    bits[np.arange(50), positions] = values
    _bits.flip_bits(packed, positions[:3], rows)
    bits[rows, positions[:3]] ^= True
    np.testing.assert_array_equal(np.unpackbits(packed, axis=1, bitorder="little")[:, :19],
                                  bits)


def test_packed_report_check_names_the_problem():
    good = np.zeros((4, 2), dtype=np.uint8)
    assert _bits.check_packed_reports(good, 13, "oue") is not None
    with pytest.raises(ValueError, match="2-D uint8"):
        _bits.check_packed_reports(good.astype(np.int64), 13, "oue")
    with pytest.raises(ValueError, match="2-D uint8"):
        _bits.check_packed_reports(good.ravel(), 13, "oue")
    with pytest.raises(ValueError, match="2 bytes per report; got 3"):
        _bits.check_packed_reports(np.zeros((4, 3), dtype=np.uint8), 13, "oue")
    bad = good.copy()
    bad[2, 1] = 0b100000  # bit 13 of a 13-bit report
    with pytest.raises(ValueError, match="past bit 12"):
        _bits.check_packed_reports(bad, 13, "oue")


# =============================================================================== unary
@pytest.mark.parametrize("cls", UNARY)
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", [1, 3, 5, 9, 12])
def test_unary_strategy_is_exactly_private(cls, epsilon, n):
    mechanism = cls(n, epsilon)
    Q = mechanism.strategy_matrix()
    assert Q.shape == (2**n, n) and np.all(Q > 0)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-12)
    if n > 1:
        ratio = privacy_ratio(Q)
        assert ratio <= np.exp(epsilon) * (1 + 1e-9)
        assert ratio >= np.exp(epsilon) * (1 - 1e-9)  # the rounding costs no utility to speak of
    # realized probabilities: dyadic, p rounded down and q up, by less than 2^-52
    p_nominal, q_nominal = nominal_unary(cls, epsilon)
    assert mechanism.p == mechanism.p_numerator / 2**52
    assert mechanism.q == mechanism.q_numerator / 2**52
    assert -2.0**-52 <= mechanism.p - p_nominal <= 1e-16
    assert -1e-16 <= mechanism.q - q_nominal <= 2.0**-52
    assert mechanism.pair_own == mechanism.p * mechanism.q
    assert mechanism.pair_other == mechanism.q**2


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 3.0])
def test_unary_realized_ratio_never_exceeds_e_epsilon_exactly(epsilon):
    """Exact rational check of p (1 - q) / (q (1 - p)) <= e^eps with the integer numerators."""
    one = 2**52
    bound = exp_decimal(epsilon)
    for cls in UNARY:
        mechanism = cls(100, epsilon)
        p, q = mechanism.p_numerator, mechanism.q_numerator
        assert _bits.ratio_at_most(p * (one - q), q * (one - p), bound)
    rappor = SymmetricUnaryEncoding(100, epsilon)
    assert rappor.p_numerator + rappor.q_numerator == one  # still symmetric


def test_rappor_strategy_function_is_unchanged_and_close_to_the_realized_one():
    mechanism = SymmetricUnaryEncoding(6, 1.0)
    np.testing.assert_allclose(mechanism.strategy_matrix(), rappor_strategy(6, 1.0),
                               rtol=1e-13)
    with pytest.raises(ValueError, match="n <= 16"):
        rappor_strategy(MAX_EXACT_RAPPOR_CELLS + 1, 1.0)
    with pytest.raises(ValueError, match="limited to n <= 16"):
        OptimizedUnaryEncoding(MAX_EXACT_RAPPOR_CELLS + 1, 1.0).strategy_matrix()


@pytest.mark.parametrize("cls", UNARY)
def test_unary_sampling_follows_its_strategy(cls):
    mechanism = cls(5, 1.0)
    check_sampling_against_strategy(mechanism, np.arange(32), 20_000, seed=7)


@pytest.mark.parametrize("cls", UNARY)
def test_unary_bits_of_a_partial_byte(cls):
    """n = 11: per-bit frequencies given the type, and the unused bits stay 0."""
    n, per_type = 11, 4000
    mechanism = cls(n, 2.0)
    types = np.repeat(np.arange(n), per_type)
    reports = mechanism.randomize(types, np.random.default_rng(2))
    assert reports.shape == (n * per_type, 2) and not np.any(reports[:, 1] >> 3)
    bits = np.unpackbits(reports, axis=1, bitorder="little")[:, :n].reshape(n, per_type, n)
    frequency = bits.mean(axis=1)  # [type, bit]
    expected = np.where(np.eye(n, dtype=bool), mechanism.p, mechanism.q)
    sd = np.sqrt(expected * (1 - expected) / per_type)
    assert np.all(np.abs(frequency - expected) < 5 * sd)


@pytest.mark.parametrize("cls", UNARY)
def test_unary_variance_formula_matches_the_dense_decoder(cls):
    mechanism = cls(6, 1.3)
    supports = (np.arange(64)[:, None] >> np.arange(6)) & 1
    check_dense_variance(mechanism, supports.astype(float))


@pytest.mark.parametrize("cls", UNARY)
def test_unary_estimate_is_unbiased_with_the_exact_variance(cls):
    type_counts = np.array([400, 0, 35, 120, 7, 60, 0, 250, 18, 90, 3, 17])
    check_unbiased_with_exact_variance(cls(12, 1.0), type_counts, 1500, seed=11)


@pytest.mark.parametrize("cls", UNARY)
def test_unary_simulated_statistic_has_the_exact_distribution(cls):
    mechanism = cls(10, 1.0)
    type_counts = np.array([300, 0, 50, 120, 7, 0, 80, 443, 1, 30])
    total = type_counts.sum()
    rng = np.random.default_rng(5)
    repetitions = 4000
    draws = np.array([mechanism.simulate_statistic(type_counts, rng)
                      for _ in range(repetitions)])
    assert draws.dtype == np.int64 and np.all(draws[:, -1] == total)
    counts = draws[:, :-1]
    mean = type_counts * mechanism.p + (total - type_counts) * mechanism.q
    variance = (type_counts * mechanism.p * (1 - mechanism.p)
                + (total - type_counts) * mechanism.q * (1 - mechanism.q))
    check_unbiased_and_variance(counts, mean, variance)
    # independent across cells
    correlation = np.corrcoef(counts.T)[~np.eye(10, dtype=bool)]
    assert np.all(np.abs(correlation) < 5 / np.sqrt(repetitions))
    # the same law as aggregating randomized reports (means of 300 aggregates)
    types = np.repeat(np.arange(10), type_counts)
    aggregated = np.array([mechanism.aggregate(mechanism.randomize(types, rng))[:-1]
                           for _ in range(300)])
    check_unbiased(aggregated, mean, variance)


@pytest.mark.parametrize("cls", UNARY)
def test_unary_aggregation_is_additive_and_chunked(cls, monkeypatch):
    mechanism = cls(70, 1.0)
    rng = np.random.default_rng(0)
    reports = mechanism.randomize(rng.integers(0, 70, 5000), rng)
    whole = mechanism.aggregate(reports)
    np.testing.assert_array_equal(
        whole[:-1], np.unpackbits(reports, axis=1, bitorder="little")[:, :70].sum(axis=0))
    np.testing.assert_array_equal(
        whole, mechanism.aggregate(reports[:1234]) + mechanism.aggregate(reports[1234:]))
    monkeypatch.setattr(mechanisms_base, "AGGREGATE_CHUNK", 999)
    chunked = mechanism.aggregate(reports)
    np.testing.assert_array_equal(whole, chunked)
    assert chunked.dtype == np.int64 and chunked[-1] == 5000


def test_unary_single_cell_domain():
    mechanism = OptimizedUnaryEncoding(1, 1.0)
    reports = mechanism.randomize(np.zeros(10, dtype=int), np.random.default_rng(0))
    assert reports.shape == (10, 1) and not np.any(reports >> 1)
    np.testing.assert_allclose(mechanism.estimate(mechanism.aggregate(reports)), [10.0])


@pytest.mark.parametrize("cls", UNARY)
def test_unary_json_round_trip(cls):
    mechanism = cls(37, 0.7)
    rebuilt = mechanism_from_json(mechanism.to_json())
    assert type(rebuilt) is cls and rebuilt == mechanism
    assert (rebuilt.p, rebuilt.q) == (mechanism.p, mechanism.q)
    assert rebuilt != cls(37, 0.8) and rebuilt != cls(38, 0.7)
    other = OptimizedUnaryEncoding if cls is SymmetricUnaryEncoding else SymmetricUnaryEncoding
    assert rebuilt != other(37, 0.7)
    with pytest.raises(ValueError, match="not"):
        other.from_json(mechanism.to_json())


@pytest.mark.parametrize("cls", UNARY)
def test_unary_bad_inputs(cls):
    for n in (0, -3, 2.5, True, "8"):
        with pytest.raises(ValueError, match="n_inputs"):
            cls(n, 1.0)
    for epsilon in (0, -1.0, float("nan"), float("inf"), "1", 51.0):
        with pytest.raises(ValueError, match="epsilon"):
            cls(8, epsilon)
    with pytest.raises(ValueError, match="too small"):
        cls(8, 1e-17)
    mechanism = cls(13, 1.0)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"in \[0, 13\); entry 1 is 13"):
        mechanism.randomize(np.array([0, 13]), rng)
    with pytest.raises(ValueError, match=r"entry 2 is -1"):
        mechanism.randomize(np.array([0, 4, -1, 20]), rng)
    reports = mechanism.randomize(np.array([0, 12, 5]), rng)
    with pytest.raises(ValueError, match="2 bytes per report; got 1"):
        mechanism.aggregate(reports[:, :1])
    with pytest.raises(ValueError, match="2-D uint8"):
        mechanism.aggregate(reports.astype(np.int16))
    with pytest.raises(ValueError, match="2-D uint8"):
        mechanism.aggregate(np.unpackbits(reports, axis=1).astype(bool))
    leaky = reports.copy()
    leaky[1, 1] |= 0b1000_0000
    with pytest.raises(ValueError, match="past bit 12"):
        mechanism.aggregate(leaky)
    with pytest.raises(ValueError, match="14 entries"):
        mechanism.estimate(np.zeros(13))
    with pytest.raises(TypeError, match="abstract"):
        UnaryEncoding(8, 1.0)


# =============================================================================== subset selection
SUBSET_CASES = [(2, 1), (3, 1), (3, 2), (5, 2), (6, 4), (9, 3), (11, 5), (12, 11)]


def brute_force_support_probabilities(mechanism):
    """``p, q, r_own, r_other`` for every type, from the strategy matrix and the outputs."""
    Q = mechanism.strategy_matrix()
    members = mechanism.subset_outputs().astype(float)
    n = mechanism.n_inputs
    together = np.einsum("ou,oj,ok->ujk", Q, members, members)  # P(j, k in S | u)
    result = {"p": [], "q": [], "pair_own": [], "pair_other": []}
    for u in range(n):
        others = [j for j in range(n) if j != u]
        result["p"] += [together[u, u, u]]
        result["q"] += [together[u, j, j] for j in others]
        result["pair_own"] += [together[u, u, j] for j in others]
        result["pair_other"] += [together[u, j, k] for j in others for k in others if j != k]
    return result


@pytest.mark.parametrize("n, k", SUBSET_CASES)
def test_subset_pair_probabilities_match_brute_force(n, k):
    mechanism = SubsetSelection(n, 1.1, subset_size=k)
    for name, values in brute_force_support_probabilities(mechanism).items():
        np.testing.assert_allclose(values, getattr(mechanism, name), rtol=1e-12, atol=1e-15,
                                   err_msg=name)


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n, k", SUBSET_CASES)
def test_subset_strategy_is_exactly_private(n, k, epsilon):
    mechanism = SubsetSelection(n, epsilon, subset_size=k)
    Q = mechanism.strategy_matrix()
    assert Q.shape == (math.comb(n, k), n)
    np.testing.assert_allclose(Q.sum(axis=0), 1.0, atol=1e-12)
    ratio = privacy_ratio(Q)
    assert ratio <= np.exp(epsilon) * (1 + 1e-9)
    assert ratio >= np.exp(epsilon) * (1 - 1e-9)
    e = np.exp(epsilon)
    assert -2.0**-52 <= mechanism.p - k * e / (k * e + n - k) <= 1e-16
    assert mechanism.p == mechanism.p_numerator / 2**52
    assert _bits.ratio_at_most(mechanism.p_numerator * (n - k),
                               (2**52 - mechanism.p_numerator) * k, exp_decimal(epsilon))


@pytest.mark.parametrize("n, k", [(5, 2), (6, 4), (9, 3)])
def test_subset_variance_formula_matches_the_dense_decoder(n, k):
    mechanism = SubsetSelection(n, 0.9, subset_size=k)
    check_dense_variance(mechanism, mechanism.subset_outputs().astype(float))


@pytest.mark.parametrize("n, epsilon", [(2, 1.0), (10, 0.5), (33, 1.0), (33, 3.0), (64, 0.1)])
def test_subset_size_minimizes_the_exact_histogram_variance(n, epsilon):
    by_size = [SubsetSelection(n, epsilon, subset_size=k).per_user_variance(np.eye(n))
               for k in range(1, n)]
    worst = np.array([v.max() for v in by_size])
    np.testing.assert_allclose(worst, [v.min() for v in by_size], rtol=1e-9)  # type-free
    # the vectorized closed form agrees with SupportOracle's formula
    np.testing.assert_allclose(subset_histogram_variance(n, epsilon, np.arange(1, n)), worst,
                               rtol=1e-9)
    chosen = SubsetSelection(n, epsilon)
    assert chosen.subset_size == optimal_subset_size(n, epsilon)
    assert worst[chosen.subset_size - 1] <= worst.min() * (1 + 1e-9)
    assert chosen.params == {"subset_size": chosen.subset_size}


def test_subset_size_near_ye_barg():
    """Ye and Barg's choice is about n / (e^eps + 1)."""
    for n, epsilon in [(1024, 1.0), (1024, 2.0), (500, 0.5)]:
        k = optimal_subset_size(n, epsilon)
        assert abs(k - n / (np.exp(epsilon) + 1)) <= 0.05 * n


@pytest.mark.parametrize("n, k", [(6, 2), (6, 4), (9, 3)])
def test_subset_sampling_follows_its_strategy(n, k):
    mechanism = SubsetSelection(n, 1.0, subset_size=k)
    codes = report_codes(np.packbits(mechanism.subset_outputs(), axis=1, bitorder="little"))
    check_sampling_against_strategy(mechanism, codes, 8000, seed=n * 10 + k)


@pytest.mark.parametrize("fill", [(0, 10), (1, 10), (1023, 10), (1024, 10), (1, 1)])
def test_subset_sampling_is_exact_whatever_the_fill(fill):
    """Empty or nearly empty fills (cells added), full or nearly full (removed), half: same law."""
    mechanism = SubsetSelection(7, 1.0, subset_size=3)
    mechanism._fill = fill
    codes = report_codes(np.packbits(mechanism.subset_outputs(), axis=1, bitorder="little"))
    check_sampling_against_strategy(mechanism, codes, 6000, seed=fill[0])


def test_subset_reports_have_exactly_k_ones_at_scale():
    mechanism = SubsetSelection(1000, 1.0)  # 1000 bits: a partial last byte
    k = mechanism.subset_size
    types = np.random.default_rng(0).integers(0, 1000, 20_000)
    reports = mechanism.randomize(types, np.random.default_rng(1))
    assert reports.shape == (20_000, 125) and reports.dtype == np.uint8
    np.testing.assert_array_equal(_bits.row_popcounts(reports), k)
    own = _bits.get_bits(reports, types)
    # P(u in S) = p: within 4.5 sd
    assert abs(own.mean() - mechanism.p) < 4.5 * math.sqrt(mechanism.p * (1 - mechanism.p)
                                                            / types.size)


@pytest.mark.parametrize("k", [None, 2, 9])
def test_subset_estimate_is_unbiased_with_the_exact_variance(k):
    type_counts = np.array([400, 0, 35, 120, 7, 60, 0, 250, 18, 90, 3, 17])
    mechanism = SubsetSelection(12, 1.0, subset_size=k)
    check_unbiased_with_exact_variance(mechanism, type_counts, 1500, seed=13)


def test_subset_json_round_trip_pins_the_chosen_size():
    mechanism = SubsetSelection(40, 1.0)
    spec = mechanism.to_dict()
    assert spec["params"] == {"subset_size": mechanism.subset_size}
    rebuilt = mechanism_from_json(mechanism.to_json())
    assert type(rebuilt) is SubsetSelection and rebuilt == mechanism
    assert rebuilt.subset_size == mechanism.subset_size and rebuilt.p == mechanism.p
    assert rebuilt != SubsetSelection(40, 1.0, subset_size=mechanism.subset_size + 1)
    assert SubsetSelection(40, 1.0, subset_size=mechanism.subset_size) == mechanism


def test_subset_has_no_exact_simulation_and_a_bounded_strategy_matrix():
    mechanism = SubsetSelection(40, 1.0, subset_size=20)
    with pytest.raises(NotImplementedError, match="no exact simulation"):
        mechanism.simulate_statistic(np.ones(40, dtype=int), np.random.default_rng(0))
    with pytest.raises(ValueError, match="limited to"):
        mechanism.strategy_matrix()


def test_subset_bad_inputs():
    for n in (1, 0, 2.5, True):
        with pytest.raises(ValueError, match="n_inputs"):
            SubsetSelection(n, 1.0)
    for size in (0, 8, 9, 2.5, "3", True):
        with pytest.raises(ValueError, match="subset_size"):
            SubsetSelection(8, 1.0, subset_size=size)
    for epsilon in (0, -2.0, float("nan"), None):
        with pytest.raises(ValueError, match="epsilon"):
            SubsetSelection(8, epsilon)
    with pytest.raises(ValueError, match="too small"):
        SubsetSelection(8, 1e-17, subset_size=3)
    mechanism = SubsetSelection(13, 1.0, subset_size=4)
    rng = np.random.default_rng(0)
    reports = mechanism.randomize(np.array([0, 12, 5, 5]), rng)
    np.testing.assert_array_equal(_bits.row_popcounts(reports), 4)
    # reports of unary encoding over the same domain: refused by their popcount
    unary = OptimizedUnaryEncoding(13, 1.0).randomize(np.zeros(200, dtype=int), rng)
    with pytest.raises(ValueError, match="exactly 4 bits set; report"):
        mechanism.aggregate(unary)
    wrong = reports.copy()
    wrong[2, 0] ^= 1
    with pytest.raises(ValueError, match="report 2 has"):
        mechanism.aggregate(wrong)
    with pytest.raises(ValueError, match="subset_size=5 have exactly 5 bits set; report 0 has 4"):
        SubsetSelection(13, 1.0, subset_size=5).aggregate(reports)
    with pytest.raises(ValueError, match="2 bytes per report; got 3"):
        mechanism.aggregate(np.zeros((2, 3), dtype=np.uint8))
    with pytest.raises(ValueError, match="2-D uint8"):
        mechanism.aggregate(reports.view(np.int8))
    leaky = reports.copy()
    leaky[0, 1] |= 0b0100_0000
    with pytest.raises(ValueError, match="past bit 12"):
        mechanism.aggregate(leaky)
    with pytest.raises(ValueError, match="user types"):
        mechanism.randomize(np.array([13]), rng)
