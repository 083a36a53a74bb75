"""Heavy hitters: PEM and TreeHist (prefix extension), CMS and HCMS (sketches).

Exact privacy of every randomizer for fixed public randomness (seeds, hash indices, rows);
unbiased estimates with the analytic variance; planted heavy hitters recovered.
"""

import itertools
import math

import numpy as np
import pytest
from _stats import check_unbiased_and_variance

from sklearn_ldp._fwht import fwht
from sklearn_ldp.mechanisms.heavy_hitters.prefix import (
    MAX_CANDIDATES,
    PrefixHeavyHitters,
    _column_sums,
    _comparison_path,
    _fourier_spectrum,
    _hash_dtype,
    _hash_own,
    _parities,
    _round_work,
    _seed_rows,
    _suffix_hashes,
    _suffixes,
    default_extension_bits,
    prefix_schedule,
)
from sklearn_ldp.mechanisms.heavy_hitters.significance import holm_supported
from sklearn_ldp.mechanisms.heavy_hitters.sketches import (
    SketchFrequencyOracle,
    default_sketch_hashes,
)
from sklearn_ldp.mechanisms.heavy_hitters.values import _prefix_mask, decode_values, encode_values


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
@pytest.mark.parametrize("epsilon", [0.5, 2.0, 4.0])
def test_prefix_reports_are_epsilon_ldp_for_every_seed(protocol, epsilon):
    finder = PrefixHeavyHitters(6, epsilon, protocol=protocol, n_candidates=2)
    values = encode_values(np.arange(64), 6)
    seeds = np.random.default_rng(0).integers(0, 2**63, size=20, dtype=np.uint64)
    n_outputs = finder.g if protocol == "pem" else 2
    for length in finder.lengths:
        prefixes = values & _prefix_mask(length, finder.W)
        for seed in seeds:
            own = _hash_own(_seed_rows(np.full(64, seed), finder.n_rows, length, finder.W),
                            prefixes)
            # P(y | x) for this seed: p at the own bucket, (1 - p) / (g - 1) elsewhere.
            law = np.where(np.arange(n_outputs)[None, :] == own[:, None], finder.p,
                           (1 - finder.p) / (n_outputs - 1))
            assert law.sum(axis=1) == pytest.approx(1.0)
            assert law.max(axis=0).max() / law.min(axis=0).min() == pytest.approx(
                math.exp(epsilon), rel=1e-12)


def test_randomizer_draws_the_stated_law():
    from _stats import chi_square_p_value
    rng = np.random.default_rng(4)
    finder = PrefixHeavyHitters(8, 2.0, n_candidates=2, extension_bits=8)
    # One selection round over the whole value, then the verification round.
    assert finder.lengths == [8, 8]
    words = encode_values(np.full(200_000, 77), 8)
    reports = finder.randomize(words, rng)
    own = _hash_own(_seed_rows(reports[:, 1], finder.n_rows, 8, finder.W), words)
    kept = np.count_nonzero(reports[:, 2] == own)
    assert chi_square_p_value([kept, len(words) - kept],
                              [finder.p * len(words), (1 - finder.p) * len(words)]) > 1e-6


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_candidate_counts_are_unbiased_with_the_analytic_variance(protocol):
    rng = np.random.default_rng(21)
    finder = PrefixHeavyHitters(12, 2.0, protocol=protocol, n_candidates=1,
                                extension_bits=12 if protocol == "pem" else None)
    finder.lengths = [12]  # one round: every user reports the whole value
    values = rng.choice([5, 900, 4000], p=[0.5, 0.3, 0.2], size=3000)
    words = encode_values(values, 12)
    candidates = encode_values(np.array([5, 900, 4000, 77]), 12)
    truth = np.array([np.sum(values == v) for v in (5, 900, 4000, 77)])
    answers = np.array([finder.estimate_counts(finder.randomize(words, rng), candidates)[0]
                        for _ in range(300)])
    f = truth / len(values)
    if protocol == "pem":
        p, q = finder.p, finder.q
        variance = len(values) * (f * p * (1 - p) + (1 - f) * q * (1 - q)) / (p - q) ** 2
    else:
        variance = len(values) * (finder.c ** 2 - f)
    check_unbiased_and_variance(answers, truth, variance)


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_planted_heavy_hitters_are_found(protocol):
    rng = np.random.default_rng(8)
    planted = rng.choice(2**24, size=5, replace=False)
    n = 150_000
    background = rng.integers(2**24, size=n)
    heavy = rng.random(n) < 0.4
    values = np.where(heavy, planted[rng.integers(5, size=n)], background)
    finder = PrefixHeavyHitters(24, 4.0, protocol=protocol, n_candidates=5)
    found = finder.identify(finder.randomize(encode_values(values, 24), rng))
    supported = holm_supported(found["z"])  # the candidates the final test keeps
    recovered = set(decode_values(found["values"][supported], 24, False).tolist())
    assert recovered == set(planted.tolist())
    truth = np.array([np.sum(values == v) for v in decode_values(found["values"], 24, False)])
    assert np.all(np.abs(found["counts"] - truth) < 5 * found["std_errors"])


def test_string_values_round_trip_and_are_found():
    rng = np.random.default_rng(3)
    urls = np.array(["example.org/a", "example.org/b", "news.site/x"], dtype=object)
    values = np.where(rng.random(120_000) < 0.5, urls[rng.integers(3, size=120_000)],
                      np.array([f"r{i}" for i in rng.integers(10**6, size=120_000)],
                               dtype=object))
    words = encode_values(values, 128)
    assert decode_values(words[:5], 128, True) == values[:5].tolist()
    finder = PrefixHeavyHitters(128, 6.0, n_candidates=3, extension_bits=8)
    found = finder.identify(finder.randomize(words, rng))
    supported = found["values"][holm_supported(found["z"])]
    assert set(decode_values(supported, 128, True)) == set(urls.tolist())


@pytest.mark.parametrize("hadamard", [False, True])
def test_sketch_reports_are_epsilon_ldp(hadamard):
    epsilon = 1.5
    sketch = SketchFrequencyOracle(epsilon, n_hashes=3, width=4, hadamard=hadamard)
    keep = sketch.keep
    if hadamard:  # one bit: kept with keep, flipped otherwise
        assert keep / (1 - keep) == pytest.approx(math.exp(epsilon))
        return
    # CMS: the +-1 vector given the hashed position; positions differ in two entries.
    vectors = np.array(list(itertools.product([0, 1], repeat=4)))
    laws = [np.prod(np.where(vectors == (np.arange(4) == a), keep, 1 - keep), axis=1)
            for a in range(4)]
    worst = max(float(np.max(x / y)) for x, y in itertools.permutations(laws, 2))
    assert worst == pytest.approx(math.exp(epsilon), rel=1e-12)


@pytest.mark.parametrize("hadamard", [False, True])
def test_sketch_estimates_match_their_conditional_mean_and_variance(hadamard):
    # Given the hash functions, the estimate's mean is m/(m-1) (sum_u rho_u - n/m) and its
    # variance m^2/(m-1)^2 sum_u Var(W_u), rho_u the share of hashes where u collides with
    # the candidate (module docstring): checked exactly, and the reported standard error
    # (which takes rho = 1/m for other values) within 10%.
    rng = np.random.default_rng(13)
    k, m = 8, 64
    sketch = SketchFrequencyOracle(2.0, n_hashes=k, width=m, hadamard=hadamard, hash_seed=99)
    values = rng.choice(np.arange(40), p=np.r_[0.3, np.full(39, 0.7 / 39)], size=4000)
    words = encode_values(values, 16)
    candidate = encode_values(np.array([0]), 16)
    hashes = np.arange(k)
    own = sketch.hash(np.repeat(candidate, k, axis=0), hashes)
    rho = np.array([(sketch.hash(np.repeat(encode_values(np.array([v]), 16), k, axis=0),
                                 hashes) == own).mean() for v in range(40)])[values]
    n, c = len(values), sketch.c
    mean = m / (m - 1) * (rho.sum() - n / m)
    per_user = (c ** 2 - rho ** 2) if hadamard else ((c ** 2 - 1) / 4 + rho * (1 - rho))
    variance = (m / (m - 1)) ** 2 * per_user.sum()
    answers, errors = [], []
    for _ in range(400):
        counts, error = sketch.estimate_counts(sketch.aggregate(sketch.randomize(words, rng)),
                                               candidate)
        answers.append(counts)
        errors.append(error[0])
    check_unbiased_and_variance(np.array(answers), np.array([mean]), np.array([variance]))
    assert np.mean(errors) == pytest.approx(math.sqrt(variance), rel=0.1)


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="2\\^8"):
        encode_values(np.array([1, 256]), 8)
    with pytest.raises(ValueError, match="bytes"):
        encode_values(np.array(["a" * 20], dtype=object), 64)
    with pytest.raises(TypeError):
        encode_values(np.array([1.5]), 8)
    with pytest.raises(ValueError, match="protocol"):
        PrefixHeavyHitters(8, 1.0, protocol="x")
    finder = PrefixHeavyHitters(8, 1.0, n_candidates=2)
    with pytest.raises(ValueError, match="report 0"):
        finder.identify(np.array([[99, 0, 0]], dtype=np.uint64))
    with pytest.raises(ValueError, match="threshold"):
        finder.identify(np.array([[0, 0, 0]], dtype=np.uint64), threshold=2.0)
    with pytest.raises(ValueError, match="power-of-two"):
        SketchFrequencyOracle(1.0, width=100, hadamard=True)
    sketch = SketchFrequencyOracle(1.0, n_hashes=2, width=8)
    statistic = sketch.aggregate(sketch.randomize(encode_values(np.arange(5), 8),
                                                  np.random.default_rng(0)))
    bad = statistic.copy()
    bad[0] = 10**6
    with pytest.raises(ValueError, match="more ones"):
        sketch.estimate_counts(bad, encode_values(np.array([1]), 8))
    assert PrefixHeavyHitters.from_dict(finder.to_dict()) == finder
    assert SketchFrequencyOracle.from_dict(sketch.to_dict()) == sketch


# ---------------------------------------------------------------- server paths and defaults

@pytest.mark.parametrize("n_rows, W, start, count, kept", [
    (2, 1, 5, 5, 3), (6, 1, 0, 10, 1), (3, 2, 60, 8, 4), (1, 1, 7, 3, 5), (9, 1, 3, 11, 2),
    (6, 2, 61, 5, 4)])
def test_both_counting_paths_match_hashing_every_candidate(n_rows, W, start, count, kept):
    # matches[P, S] = users whose bucket y equals h(P | S): by comparing h(P) ^ y with the
    # suffix table, and by the Walsh-Hadamard identity, against hashing each candidate.
    rng = np.random.default_rng(n_rows + 10 * count)
    n, length = 2000, start + count
    rows = _seed_rows(rng.integers(0, 2**63, size=n, dtype=np.uint64), n_rows, length, W)
    prefixes = rng.integers(0, 2**63, size=(kept, W), dtype=np.uint64) & _prefix_mask(start, W)
    dtype = _hash_dtype(n_rows)
    y = rng.integers(1 << n_rows, size=n).astype(dtype)
    candidates = (prefixes[:, None, :] | _suffixes(start, count, W)[None]).reshape(-1, W)
    brute = (_parities(rows, candidates) == y[None, :]).sum(axis=1).reshape(kept, -1)
    target = (_parities(rows, prefixes) ^ y[None, :]).T
    equal = target[:, :, None] == _suffix_hashes(rows, start, count).T[:, None, :]
    direct = _column_sums(equal.view(np.uint8).reshape(n, -1)).reshape(kept, -1)
    bits = (target[:, :, None] >> np.arange(n_rows, dtype=dtype)) & dtype(1)
    spectrum = _fourier_spectrum(rows, bits, start, count)
    fourier = np.rint(fwht(spectrum, axis=1) / (1 << n_rows)).astype(np.int64)
    assert np.array_equal(direct, brute)
    assert np.array_equal(fourier, brute)


def test_pem_with_more_than_256_buckets_draws_the_stated_law():
    # epsilon = 6.5: g = 512 buckets (9-bit hashes): the own bucket with p, each other with
    # (1 - p) / (g - 1), none beyond g - 1.
    from _stats import chi_square_p_value
    rng = np.random.default_rng(17)
    finder = PrefixHeavyHitters(12, 6.5, n_candidates=2, extension_bits=12)
    finder.lengths = [12]
    assert finder.g == 512 and _hash_dtype(finder.n_rows) == np.uint16
    words = encode_values(np.full(300_000, 1234), 12)
    reports = finder.randomize(words, rng)
    own = _hash_own(_seed_rows(reports[:, 1], finder.n_rows, 12, finder.W), words)
    y = reports[:, 2].astype(np.int64)
    assert y.max() < finder.g
    kept = y == own
    assert chi_square_p_value([kept.sum(), (~kept).sum()],
                              [finder.p * y.size, (1 - finder.p) * y.size]) > 1e-6
    # The other buckets, relative to the own one, are uniform over 1 .. g - 1.
    shift = (y[~kept] - own[~kept].astype(np.int64)) % finder.g
    counts = np.bincount(shift, minlength=finder.g)[1:]
    assert chi_square_p_value(counts, np.full(finder.g - 1, shift.size / (finder.g - 1))) \
        > 1e-6


def test_prefix_schedule_spreads_the_bits_evenly():
    assert prefix_schedule(32, 20, 5) == [10, 15, 20, 24, 28, 32]
    assert prefix_schedule(32, 20, 1) == list(range(6, 33))
    assert prefix_schedule(20, 4, 30) == [20]
    for bits, k, eta in [(32, 20, 3), (64, 7, 6), (128, 3, 8), (9, 1, 2)]:
        lengths = prefix_schedule(bits, k, eta)
        steps = np.diff(lengths)
        assert lengths[-1] == bits and lengths[0] == min(bits, math.ceil(math.log2(max(k, 2)))
                                                         + eta)
        assert steps.max() <= eta and steps.max() - steps.min() <= 1
        # As many rounds as the plain schedule l_1, l_1 + eta, ..., L.
        assert len(lengths) == len(range(lengths[0], bits, eta)) + 1


def test_default_extension_bits_follows_the_work_budget():
    # More users: a smaller eta (more rounds), so the server work stays bounded.
    etas = [default_extension_bits(32, 4.0, 20, n) for n in (10**5, 10**6, 10**7)]
    assert etas == sorted(etas, reverse=True) and etas[1] == 5
    for n in (10**5, 10**6, 10**7):
        eta = default_extension_bits(32, 4.0, 20, n)
        g = PrefixHeavyHitters(32, 4.0, n_users=n).g
        assert n * _round_work(prefix_schedule(32, 20, eta), 20, g) <= max(2**29, 256 * n)
        assert 20 << eta <= MAX_CANDIDATES
    assert PrefixHeavyHitters(32, 4.0).extension_bits == 5  # N = 10^6 assumed
    # The comparison path when the candidates are few against the buckets.
    assert _comparison_path(20, 5, 64) and not _comparison_path(1, 10, 64)


def test_sketch_aggregate_counts_the_set_bits_per_hash():
    rng = np.random.default_rng(2)
    sketch = SketchFrequencyOracle(3.0, n_hashes=5, width=20)
    j, packed = sketch.randomize(encode_values(rng.integers(50, size=3000), 8), rng)
    statistic = sketch.aggregate((j, packed))
    bits = np.unpackbits(packed, axis=1, bitorder="little")[:, :20].astype(np.int64)
    expected = np.zeros((5, 20), dtype=np.int64)
    np.add.at(expected, j.astype(np.int64), bits)
    assert np.array_equal(statistic[:100].reshape(5, 20), expected)
    assert np.array_equal(statistic[100:], np.bincount(j, minlength=5))
    bad = packed.copy()
    bad[0, -1] |= 0x80  # bit 23 of a 20-bit sketch row
    with pytest.raises(ValueError, match="past the sketch width"):
        sketch.aggregate((j, bad))


def test_cms_report_bits_follow_the_stated_law():
    from _stats import chi_square_p_value
    rng = np.random.default_rng(6)
    sketch = SketchFrequencyOracle(2.0, n_hashes=4, width=16)
    words = encode_values(np.full(40_000, 9), 8)
    j, packed = sketch.randomize(words, rng)
    position = sketch.hash(words, j)
    bits = np.unpackbits(packed, axis=1, bitorder="little")[:, :16].astype(bool)
    at_own = bits[np.arange(len(j)), position]
    others = bits.sum() - at_own.sum()
    n_others = bits.size - len(j)
    assert chi_square_p_value([at_own.sum(), len(j) - at_own.sum()],
                              [sketch.keep * len(j), (1 - sketch.keep) * len(j)]) > 1e-6
    assert chi_square_p_value([others, n_others - others],
                              [(1 - sketch.keep) * n_others, sketch.keep * n_others]) > 1e-6
    # The realized flip probability is a multiple of 2^-52 and keeps the ratio <= e^(eps/2).
    assert (1 - sketch.keep) * 2**52 == int((1 - sketch.keep) * 2**52)
    assert sketch.keep / (1 - sketch.keep) <= math.exp(1.0)


def test_default_sketch_hashes_grow_with_users_and_epsilon():
    assert default_sketch_hashes(4.0, 1024, False, 10**6) == 1024
    assert default_sketch_hashes(2.0, 1024, False, 10**6) == 128
    assert default_sketch_hashes(4.0, 1024, True, 10**6) == 128
    assert default_sketch_hashes(1.0, 1024, False, 10**4) == 16
    assert default_sketch_hashes(8.0, 1024, False, 10**9) == 2**22 // 1024
    assert SketchFrequencyOracle(2.0).n_hashes == 128


@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_frequency_variance_is_the_simulated_variance_over_fresh_rounds(protocol):
    # Every collection draws the users' rounds afresh, so the estimate among all the users
    # varies with the reports' noise *and* with which users the whole-value rounds hold:
    # frequency_variance adds the second, the estimate's own std_error too.
    rng = np.random.default_rng(33)
    finder = PrefixHeavyHitters(12, 2.0, protocol=protocol, n_candidates=2,
                                extension_bits=6 if protocol == "pem" else None)
    n = 4000
    values = rng.choice([5, 900, 4000], p=[0.5, 0.3, 0.2], size=n)
    words = encode_values(values, 12)
    candidates = encode_values(np.array([5, 900, 4000, 77]), 12)
    f = np.array([np.mean(values == v) for v in (5, 900, 4000, 77)])
    replicates = [finder.estimate_counts(finder.randomize(words, rng), candidates, n)
                  for _ in range(300)]
    answers = np.array([counts for counts, _ in replicates]) / n
    # The last selection round and the verification round report whole values.
    whole = sum(length == 12 for length in finder.lengths)
    m = n * whole / finder.n_rounds
    variance = finder.frequency_variance(f, m, n)
    check_unbiased_and_variance(answers, f, variance)
    reported = np.mean([errors ** 2 for _, errors in replicates], axis=0) / n ** 2
    assert np.allclose(reported, variance, rtol=0.1), reported / variance
