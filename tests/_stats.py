"""Statistical checks shared by the tests (one copy of each, imported as ``_stats``).

Every check takes its tolerance from the variance it tests against, at a stated level, so a
failure means the analytic formula or the sampler is wrong, not that a band was too tight.
"""

import numpy as np
from scipy import stats


def chi_square_p_value(observed, expected):
    """Pearson chi-square p-value; cells with expected count < 5 are pooled into one."""
    observed, expected = np.ravel(observed), np.ravel(expected)
    small = expected < 5
    if small.any():
        observed = np.append(observed[~small], observed[small].sum())
        expected = np.append(expected[~small], expected[small].sum())
    return stats.chi2.sf(np.sum((observed - expected) ** 2 / expected), observed.size - 1)


def variance_band(sample_variance, true_variance, n_samples, level=1e-6):
    """Whether every sample variance is within the two-sided chi-square band (at ``level``)
    of the true one."""
    dof = n_samples - 1
    low, high = stats.chi2.ppf([level / 2, 1 - level / 2], dof) / dof
    ratio = np.asarray(sample_variance) / np.asarray(true_variance)
    return bool(np.all((ratio >= low) & (ratio <= high)))


def check_unbiased(answers, truth, variance, z_max=4.5):
    """Replicates (R x ...) have mean ``truth``: every mean within ``z_max`` standard errors
    ``sqrt(variance / R)`` (the analytic variance of one replicate)."""
    replicates = answers.shape[0]
    variance = np.asarray(variance, dtype=float)
    z = (answers.mean(axis=0) - truth) / np.sqrt(variance / replicates)
    assert np.all(np.abs(z) < z_max), z


def check_unbiased_and_variance(answers, truth, variance, z_max=4.5, level=1e-6):
    """Replicates (R x ...) have mean ``truth`` (``z_max`` standard errors) and variance
    ``variance`` (chi-square band at ``level``)."""
    check_unbiased(answers, truth, variance, z_max)
    ratio_ok = variance_band(answers.var(axis=0, ddof=1), variance, answers.shape[0], level)
    assert ratio_ok, answers.var(axis=0, ddof=1) / np.asarray(variance, dtype=float)


def replicated_statistics(mechanism, users, n_replications, rng):
    """``n_replications`` statistics of the reports of ``users``, from one ``randomize``.

    A local randomizer draws each user's report independently, so one draw for
    ``n_replications`` copies of ``users``, cut into consecutive blocks, gives independent
    replications with the law of separate calls, without the cost of a call per replication
    (most of the time for a few hundred users)."""
    reports = mechanism.randomize(np.tile(users, n_replications), rng)
    return np.array([mechanism.aggregate(block)
                     for block in np.split(reports, n_replications)])
