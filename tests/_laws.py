"""Checks of exact output laws shared by the tests (one copy, imported as ``_laws``).

A mechanism's ``exact_law(value)`` lists its whole public output set, one report per row, and
integer weights. Two things are checked against it:

* the law is what is sampled: reports drawn by ``randomize`` (or a client) fall only on listed
  outputs of positive weight, with frequencies that pass a chi-square test;
* the law is private: every pair of inputs satisfies the ratio bound exactly (on integers).
"""

import math
from collections import Counter

import numpy as np
from _stats import chi_square_p_value
from scipy import stats

from sklearn_ldp.mechanisms._base.exact import audit_privacy


def _rows(array):
    array = np.asarray(array)
    return array.reshape(array.shape[0], -1) if array.ndim > 1 else array[:, None]


def output_counts(law, reports):
    """How many of ``reports`` fall on each output of ``law`` (AssertionError on any report
    outside the law's positive-weight outputs)."""
    outputs = _rows(law.outputs)
    reports = _rows(reports)
    keys = {row.tobytes(): i for i, row in
            enumerate(np.ascontiguousarray(outputs.astype(reports.dtype, copy=False)))}
    found = np.array([keys.get(row.tobytes(), -1)
                      for row in np.ascontiguousarray(reports)])
    assert (found >= 0).all(), f"report {reports[np.argmin(found)]!r} is not a listed output"
    counts = np.bincount(found, minlength=len(law.weights))
    weights = np.array([int(w) for w in law.weights], dtype=object)
    impossible = (counts > 0) & (weights == 0)
    assert not impossible.any(), f"outputs of weight 0 were sampled: {np.flatnonzero(impossible)}"
    return counts


def assert_sampled_law(law, reports, level=1e-3):
    """The reports' frequencies match the exact law (chi-square p-value above ``level``)."""
    counts = output_counts(law, reports)
    probabilities = np.array([int(w) / int(law.total) for w in law.weights])
    p_value = chi_square_p_value(counts, probabilities * counts.sum())
    assert p_value > level, f"sampled frequencies differ from the exact law (p = {p_value:.3g})"


def assert_private(mechanism, values, epsilon):
    """Every pair of ``values`` satisfies the ``epsilon`` bound exactly; returns the largest
    realised log-ratio (a float)."""
    audit = audit_privacy(mechanism, values, epsilon)
    assert audit.private, (f"inputs {audit.worst_pair!r}: realised epsilon "
                           f"{audit.realised!r} > {epsilon!r}")
    return audit.realised


def _keys(reports):
    """One hashable key per report row (bytes of the row)."""
    rows = np.ascontiguousarray(_rows(reports))
    return np.array([row.tobytes() for row in rows], dtype=object)


def _clopper_pearson(successes, trials, alpha):
    """Two-sided ``1 - alpha`` Clopper-Pearson interval of a binomial proportion."""
    low = 0.0 if successes == 0 else stats.beta.ppf(alpha / 2, successes,
                                                     trials - successes + 1)
    high = 1.0 if successes == trials else stats.beta.ppf(1 - alpha / 2, successes + 1,
                                                         trials - successes)
    return low, high


def empirical_epsilon_lower_bound(reports_a, reports_b, alpha=1e-3, event_keys=None):
    """A black-box lower bound on the epsilon that separates two inputs, from their reports.

    The first half of each sample chooses the event: the outputs ranked by their estimated
    likelihood ratio, cut where the ratio of the two empirical masses is largest (a
    likelihood-ratio test, in both directions). The second half, independent of that choice,
    bounds the event's probabilities with Clopper-Pearson intervals at ``alpha / 2`` each, so
    ``log(P_a(E)_low / P_b(E)_high)`` is below the true epsilon with probability at least
    ``1 - alpha``. ``event_keys`` maps reports to coarser keys (bins of a large output set).

    Returns
    -------
    bound : float
        The lower bound (0 when no event separates the inputs).
    """
    keys_a = _keys(reports_a) if event_keys is None else np.asarray(event_keys(reports_a))
    keys_b = _keys(reports_b) if event_keys is None else np.asarray(event_keys(reports_b))
    half_a, half_b = keys_a.size // 2, keys_b.size // 2
    best = 0.0
    for first, second, n_first, n_second in ((keys_a, keys_b, half_a, half_b),
                                             (keys_b, keys_a, half_b, half_a)):
        counts_first = Counter(first[:n_first].tolist())
        counts_second = Counter(second[:n_second].tolist())
        outputs = sorted(set(counts_first) | set(counts_second),
                         key=lambda k: -(counts_first[k] + 0.5) / (counts_second[k] + 0.5))
        mass_first = np.cumsum([counts_first[k] for k in outputs]) / max(n_first, 1)
        mass_second = np.cumsum([counts_second[k] for k in outputs]) / max(n_second, 1)
        ratio = (mass_first + 1.0 / n_first) / (mass_second + 1.0 / n_second)
        cut = int(np.argmax(np.where(mass_first > 0.01, ratio, 0.0)))  # events of some mass
        event = set(outputs[:cut + 1])
        held_first = sum(1 for k in first[n_first:].tolist() if k in event)
        held_second = sum(1 for k in second[n_second:].tolist() if k in event)
        low, _ = _clopper_pearson(held_first, first.size - n_first, alpha / 2)
        _, high = _clopper_pearson(held_second, second.size - n_second, alpha / 2)
        if low > 0 and high > 0:
            best = max(best, math.log(low / high))
    return best
