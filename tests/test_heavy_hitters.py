"""Heavy hitters: PEM and TreeHist (prefix extension), CMS and HCMS (sketches).

Exact privacy of every randomizer for fixed public randomness (seeds, hash indices, rows);
unbiased estimates with the analytic variance; planted heavy hitters recovered.
"""

import itertools
import math

import numpy as np
import pytest
from _stats import check_unbiased_and_variance

from sklearn_ldp.mechanisms.heavy_hitters import (
    PrefixHeavyHitters,
    SketchFrequencyOracle,
    _hash_own,
    _prefix_mask,
    _seed_rows,
    decode_values,
    encode_values,
)


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
    assert finder.lengths == [8]  # a single round over the whole value
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
    recovered = set(decode_values(found["values"], 24, False).tolist())
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
    assert set(decode_values(found["values"], 128, True)) == set(urls.tolist())


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
