"""The CMS / HCMS variance with hash collisions (math layer): the second moment estimated from
the sketch, the standard errors of estimate_counts and count_variance_per_user, checked by
simulation over fresh hash seeds (the variance is over the reports and the hash functions)."""

import numpy as np
import pytest
from _stats import check_unbiased, check_unbiased_and_variance

from sklearn_ldp.mechanisms.heavy_hitters.sketches import (
    SKETCH_SQUARED_MASS,
    SketchFrequencyOracle,
)
from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values

N_VALUES = 300


def _data(n_users, seed=1):
    """Zipf(1.05) over 300 values: a few large shares, so collisions matter in small sketches."""
    rng = np.random.default_rng(seed)
    law = 1.0 / np.arange(1, N_VALUES + 1) ** 1.05
    values = rng.choice(N_VALUES, size=n_users, p=law / law.sum())
    return values, np.bincount(values, minlength=N_VALUES).astype(float)


def _collections(hadamard, n_users, replicates, n_hashes=16, width=64, epsilon=4.0):
    values, truth = _data(n_users)
    words, candidates = encode_values(values, 32), encode_values(np.arange(N_VALUES), 32)
    counts, errors, moments = [], [], []
    for r in range(replicates):
        rng = np.random.default_rng(100 + r)
        sketch = SketchFrequencyOracle(epsilon, n_hashes=n_hashes, width=width,
                                       hadamard=hadamard, hash_seed=int(rng.integers(2**63)))
        statistic = sketch.aggregate(sketch.randomize(words, rng))
        estimate, error = sketch.estimate_counts(statistic, candidates)
        counts.append(estimate)
        errors.append(error)
        moments.append(sketch.second_moment(statistic))
    return sketch, truth, np.array(counts), np.array(errors), np.array(moments)


@pytest.mark.parametrize("hadamard", [False, True])
def test_collision_variance_matches_the_simulation(hadamard):
    # 16 hashes x 64 buckets at eps = 4: for CMS the collisions are most of the variance of
    # the largest values, for HCMS about a quarter.
    n_users, replicates = 20_000, 120
    sketch, truth, counts, errors, moments = _collections(hadamard, n_users, replicates)
    squared_mass = np.sum((truth / n_users) ** 2)
    variance = n_users * sketch.count_variance_per_user(truth / n_users, n_users, squared_mass)
    top = slice(0, 5)
    check_unbiased_and_variance(counts[:, top], truth[top], variance[top])
    # The noise alone is far below the truth for these values: the collision term is tested.
    noise = n_users * sketch.count_variance_per_user(truth[top] / n_users, n_users, 0.0)
    assert np.all(variance[top] > 1.25 * noise)
    # The standard errors reported (at the estimated count and second moment) match.
    assert np.all(np.abs(errors[:, top].mean(axis=0) / np.sqrt(variance[top]) - 1) < 0.1)
    z = (counts - truth) / errors
    assert abs(z.mean()) < 0.1 and abs(z.std() - 1) < 0.1, (z.mean(), z.std())


@pytest.mark.parametrize("hadamard", [False, True])
def test_second_moment_is_unbiased(hadamard):
    n_users, replicates = 20_000, 40
    _, truth, _, _, moments = _collections(hadamard, n_users, replicates)
    second = np.sum(truth**2)
    # Its spread, measured, bounds the tolerance: the mean within 4.5 standard errors.
    check_unbiased(moments[:, None] / second, np.ones(1),
                   np.array([moments.var(ddof=1) / second**2]))
    assert abs(moments.mean() / second - 1) < 0.05


def test_count_variance_per_user_defaults_and_terms():
    sketch = SketchFrequencyOracle(2.0, n_hashes=64, width=256, n_users=10_000)
    noise = sketch.count_variance_per_user(0.0, squared_mass=0.0)
    collisions = 10_000 * SKETCH_SQUARED_MASS / (64 * 255)
    assert sketch.count_variance_per_user(0.0) == pytest.approx(noise + collisions)
    assert sketch.count_variance_per_user(0.0, 20_000) == pytest.approx(noise + 2 * collisions)
    # A value holding all the squared mass collides with nothing.
    alone = sketch.count_variance_per_user(0.1, 10_000, 0.01)
    assert alone == pytest.approx(sketch.count_variance_per_user(0.1, 10_000, 0.0))
    # Built without n_users: 10^6; rebuilt from its specification: the same.
    default = SketchFrequencyOracle(2.0, n_hashes=64, width=256)
    assert default.n_users == 10**6
    assert SketchFrequencyOracle.from_dict(default.to_dict()).n_users == 10**6


@pytest.mark.parametrize("kwargs, match", [
    ({"n_users": 0}, "n_users"),
    ({"n_users": 2.5}, "n_users"),
    ({"n_users": True}, "n_users"),
    ({"squared_mass": -0.1}, "squared_mass"),
    ({"squared_mass": 1.5}, "squared_mass"),
    ({"squared_mass": float("nan")}, "squared_mass"),
])
def test_count_variance_per_user_refuses_bad_arguments(kwargs, match):
    sketch = SketchFrequencyOracle(2.0, n_hashes=16, width=64)
    with pytest.raises(ValueError, match=match):
        sketch.count_variance_per_user(0.0, **kwargs)


def test_no_candidates_and_a_large_vocabulary():
    sketch = SketchFrequencyOracle(2.0, n_hashes=1024, width=256)
    rng = np.random.default_rng(0)
    statistic = sketch.aggregate(sketch.randomize(encode_values(rng.integers(50, size=2000),
                                                                32), rng))
    counts, errors = sketch.estimate_counts(statistic, np.zeros((0, 1), dtype=np.uint64))
    assert counts.shape == errors.shape == (0,)
    # More candidates than one block of (candidate, hash) cells: the same as one by one.
    candidates = encode_values(np.arange(4200), 32)
    counts, errors = sketch.estimate_counts(statistic, candidates)
    single, single_errors = sketch.estimate_counts(statistic, candidates[4100:4101])
    assert counts[4100] == pytest.approx(single[0])
    assert np.all(np.isfinite(errors)) and errors.shape == (4200,)
