"""Checks of exact output laws shared by the tests (one copy, imported as ``_laws``).

A mechanism's ``exact_law(value)`` lists its whole public output set, one report per row, and
integer weights. Two things are checked against it:

* the law is what is sampled: reports drawn by ``randomize`` (or a client) fall only on listed
  outputs of positive weight, with frequencies that pass a chi-square test;
* the law is private: every pair of inputs satisfies the ratio bound exactly (on integers).
"""

import itertools

import numpy as np
from _stats import chi_square_p_value

from sklearn_ldp.mechanisms._exact import laws_within


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
    laws = [mechanism.exact_law(value) for value in values]
    worst = 0.0
    for (a, law_a), (b, law_b) in itertools.combinations(zip(values, laws, strict=True), 2):
        ok, realised = laws_within(law_a, law_b, epsilon)
        assert ok, f"inputs {a!r} and {b!r}: realised epsilon {realised!r} > {epsilon!r}"
        worst = max(worst, realised)
    return worst
