"""Per-query error of the hierarchical tree from its structure (issue 14).

``HierarchicalHistogram.range_variance_summary`` (and ``query_variance_summary`` on interval
workloads) gives the worst and the average over the user types of each range's per-user
variance without a length-``n`` row. Here it is checked against the dense ``O(p n)``
computation for every level oracle, several branchings, consistency on and off, domains that
are and are not powers of the branching, and intervals at block boundaries; then at 2^20 cells,
where the dense rows were refused past 16 queries at a time.
"""

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp import LDPEncoder, WorkloadEstimator, workloads
from sklearn_ldp.mechanisms.ranges.tree import HierarchicalHistogram
from sklearn_ldp.mechanisms.ranges.tree_variance import _tail_tables

ORACLES = ("oue", "olh", "hrr")
BRANCHINGS = (2, 3, 4, 16)
# Powers of 2, 3 and 4 and sizes that are none of them (a short spine at every level).
SIZES = (1, 2, 5, 16, 23, 81, 100, 257)


def _intervals(n, branching, rng):
    """Random ranges, every single cell up to 40, the whole domain, and the nodes of every
    level with their neighbours (ranges that start or end at a block boundary, the last
    block included)."""
    lo, hi = [0], [n - 1]
    singles = np.unique(np.linspace(0, n - 1, min(n, 40)).astype(np.int64))
    lo += singles.tolist()
    hi += singles.tolist()
    width = 1
    while width < n:
        for start in range(0, n, width):
            stop = min(start + width, n) - 1
            for a, b in ((start, stop), (start, n - 1), (0, stop), (max(start - 1, 0), stop),
                         (start, min(stop + 1, n - 1))):
                lo.append(a)
                hi.append(b)
            if start > 6 * width:  # a few blocks per level are enough
                break
        width *= branching
    bounds = np.sort(rng.integers(0, n, size=(150, 2)), axis=1)
    lo = np.concatenate([lo, bounds[:, 0]])
    hi = np.concatenate([hi, bounds[:, 1]])
    return lo, hi


def _assert_summary_equal(summary, dense, mechanism):
    """(worst, average) equal the dense max and mean over the types to rtol 1e-9. The whole
    domain's variance is 0 up to rounding: an absolute margin of 1e-12 of the largest
    variance, or of one cell's."""
    one_cell = mechanism.range_variance([0], [0]).max()
    scale = max(np.abs(dense).max(), one_cell)
    np.testing.assert_allclose(summary[0], dense.max(axis=1), rtol=1e-9, atol=1e-12 * scale)
    np.testing.assert_allclose(summary[1], dense.mean(axis=1), rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize("consistency", [True, False])
@pytest.mark.parametrize("branching", BRANCHINGS)
@pytest.mark.parametrize("oracle", ORACLES)
def test_summary_equals_the_dense_variance(oracle, branching, consistency):
    rng = np.random.default_rng(branching)
    for n in SIZES:
        mechanism = HierarchicalHistogram(n, 1.0, branching=branching, oracle=oracle)
        lo, hi = _intervals(n, branching, rng)
        dense = mechanism.range_variance(lo, hi, consistency=consistency)
        _assert_summary_equal(mechanism.range_variance_summary(lo, hi, consistency), dense,
                              mechanism)


def _other_rows(n):
    """Three rows that are not intervals (arbitrary weights)."""
    return np.random.default_rng(7).normal(size=(3, n))


@pytest.mark.parametrize("oracle", ORACLES)
def test_interval_workloads_use_the_structure_and_equal_the_dense_rows(oracle):
    """Ranges, prefix, all-range, histogram, total and (weighted) stacks of them; a workload
    that is no list of intervals still goes through the dense rows."""
    n = 45
    mechanism = HierarchicalHistogram(n, 0.8, branching=4, oracle=oracle)
    chosen = workloads.ranges(n, [(0, 0), (3, 17), (16, 31), (0, n - 1), (44, 44)])
    cases = [chosen, workloads.prefix(n), workloads.all_range(n), workloads.histogram(n),
             workloads.total(n), workloads.Stack([chosen, workloads.prefix(n)]),
             workloads.Stack([chosen, workloads.histogram(n)], weights=[2.0, 0.5]),
             workloads.Stack([chosen, workloads.Workload(_other_rows(n))], weights=[1.0, 3.0]),
             workloads.Workload(_other_rows(n))]
    for workload in cases:
        dense = mechanism.query_variance(workload.toarray())
        _assert_summary_equal(mechanism.query_variance_summary(workload), dense, mechanism)
    # A dense query matrix is reduced from its rows, as before.
    _assert_summary_equal(mechanism.query_variance_summary(chosen.toarray()),
                          mechanism.query_variance(chosen.toarray()), mechanism)


def test_consistency_lowers_the_average_error_of_every_range():
    """The consistent estimate is least squares for the levels' average noise, not for each
    user type, so this is a measured property, not a theorem: over 1000 cells its average-case
    variance is at most 0.8 of the raw decomposition's on every one of 500 random ranges
    (B = 2: at most 0.61; B = 4: 0.79), at sizes only the structured form reaches quickly."""
    rng = np.random.default_rng(5)
    for branching in (2, 4):
        mechanism = HierarchicalHistogram(1000, 1.0, branching=branching, oracle="hrr")
        bounds = np.sort(rng.integers(0, 1000, size=(500, 2)), axis=1)
        _, consistent = mechanism.range_variance_summary(bounds[:, 0], bounds[:, 1])
        _, raw = mechanism.range_variance_summary(bounds[:, 0], bounds[:, 1], consistency=False)
        assert np.all(consistent <= 0.8 * raw)


def test_two_to_the_twenty_cells_with_ten_thousand_intervals():
    """10^4 chosen ranges over 2^20 cells: refused before (dense rows, 1.0e10 entries past
    the 2^24 limit), now from the structure; a few of them equal the dense rows."""
    n = 2**20
    rng = np.random.default_rng(11)
    bounds = np.sort(rng.integers(0, n, size=(10**4, 2)), axis=1)
    bounds[0] = (0, n - 1)
    bounds[1] = (5, 5)
    bounds[2] = (4**6, 2 * 4**6 - 1)  # one node of the B = 4 tree
    queries = workloads.ranges(n, [tuple(b) for b in bounds])
    mechanism = HierarchicalHistogram(n, 1.0, branching=4, oracle="hrr")
    worst, average = mechanism.query_variance_summary(queries)
    assert worst.shape == average.shape == (10**4,)
    assert np.all(np.isfinite(worst)) and np.all(worst >= average)
    assert worst[0] == average[0] == 0.0  # the whole domain is the known total
    for consistency in (True, False):
        few = slice(0, 4)
        dense = mechanism.range_variance(bounds[few, 0], bounds[few, 1], consistency)
        summary = mechanism.range_variance_summary(bounds[few, 0], bounds[few, 1], consistency)
        _assert_summary_equal(summary, dense, mechanism)


def test_expected_error_through_the_estimator_at_two_to_the_sixteen():
    """WorkloadEstimator.expected_error_ for 1000 chosen ranges over 2^16 cells (refused
    before) equals predict_error on a few of them, and the dense rows."""
    n = 2**16
    domain = {"t": range(n)}
    rng = np.random.default_rng(3)
    frame = pd.DataFrame({"t": rng.integers(0, n, 2000)})
    bounds = np.sort(rng.integers(0, n, size=(1000, 2)), axis=1)
    queries = workloads.ranges(domain, [tuple(b) for b in bounds])
    encoder = LDPEncoder(categories=domain, strategy="hierarchical", epsilon=1.0,
                         random_state=0).fit(frame)
    estimator = WorkloadEstimator(workload=queries).fit(encoder.transform(frame))
    table = estimator.expected_error_
    assert table.shape == (1000, 2)
    few = workloads.ranges(domain, [tuple(b) for b in bounds[:3]])
    np.testing.assert_allclose(estimator.predict_error(few).to_numpy(),
                               table.iloc[:3].to_numpy(), rtol=1e-12)
    # The table is the per-user variance times one scale (users, fractions): its ratio to
    # the dense rows' max and mean is the same number for every entry.
    dense = estimator.mechanism_.query_variance(few.toarray())
    ratio = table.iloc[:3].to_numpy() / np.c_[dense.max(axis=1), dense.mean(axis=1)]
    np.testing.assert_allclose(ratio, ratio[0, 0], rtol=1e-9)


@pytest.mark.parametrize(("lo", "hi", "message"), [
    ([3], [2], r"range \[3, 2\] is not a closed range"),
    ([0], [10], r"range \[0, 10\] is not a closed range.*< 10"),
    ([-1], [4], r"range \[-1, 4\]"),
    ([0.5], [2], "integer cell indices"),
])
def test_bad_ranges_are_refused(lo, hi, message):
    mechanism = HierarchicalHistogram(10, 1.0)
    with pytest.raises(ValueError, match=message):
        mechanism.range_variance_summary(lo, hi)


def test_consistency_must_be_a_bool():
    with pytest.raises(ValueError, match="consistency must be True or False, got 'yes'"):
        HierarchicalHistogram(10, 1.0).range_variance_summary([0], [3], consistency="yes")


def test_no_ranges_give_empty_arrays():
    worst, average = HierarchicalHistogram(10, 1.0).range_variance_summary(
        np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    assert worst.shape == average.shape == (0,)


def test_tail_tables_keep_every_value_when_the_head_is_not_constant():
    table, tail = _tail_tables([[1.0, 1.0, 1.0, 2.0, 3.0]], 2)
    assert tail == 2 and table.tolist() == [[1.0, 2.0, 3.0]]
    table, tail = _tail_tables([[1.0, 5.0, 1.0, 2.0, 3.0]], 2)
    assert tail == 5 and table.tolist() == [[1.0, 1.0, 5.0, 1.0, 2.0, 3.0]]
