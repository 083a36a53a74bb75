"""Bounded reports (issue 15): every mechanism refuses reports outside its valid-report set,
naming the mechanism, the row and the value, or drops and counts them when asked."""

import logging
import re

import numpy as np
import pytest
from scipy import special

from sklearn_ldp import WorkloadEstimator
from sklearn_ldp.deploy.collect import reports_from_client
from sklearn_ldp.mechanisms import (
    GaussianMechanism,
    GaussianRejectionMechanism,
    HaarHRR,
    HadamardRandomizedResponse,
    HadamardResponse,
    HierarchicalHistogram,
    OneBitRandomizer,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
)
from sklearn_ldp.mechanisms.bassily.gaussian import REPORT_TAIL_PROBABILITY, tail_multiplier
from sklearn_ldp.mechanisms.marginals.base import build_marginal_mechanism
from sklearn_ldp.reports import LDPReports


def _honest(mechanism, n_users, seed=0):
    rng = np.random.default_rng(seed)
    return mechanism.randomize(rng.integers(0, mechanism.n_inputs, n_users), rng)


def _crafted(mechanism, honest):
    """``honest`` with row 3 replaced by a report outside the valid set, and its text."""
    bad = honest.copy()
    if isinstance(mechanism, RandomizedResponse):
        bad[3] = mechanism.n_inputs  # a cell past the domain
    elif isinstance(mechanism, HadamardRandomizedResponse):
        bad[3] = 1  # coefficient 0, never sent
    elif isinstance(mechanism, HaarHRR | HadamardResponse):
        bad[3] = mechanism.n_outputs
    elif isinstance(mechanism, OptimizedUnaryEncoding):
        bad[3, -1] |= 0x80  # a bit past the domain (n = 13)
    elif isinstance(mechanism, SubsetSelection):
        bad[3] = 0
        bad[3, 0] = 0b111  # three cells instead of k = 2
    elif isinstance(mechanism, HierarchicalHistogram):
        bad[3, 0] = mechanism.height + 1  # no such level
    elif isinstance(mechanism, GaussianRejectionMechanism):
        bad[3] = 0.0
        bad[3, 1] = mechanism.report_bounds()[1][1] * 1.001
    elif isinstance(mechanism, GaussianMechanism):
        bad[3, 1] = mechanism.report_bounds()[1][1] + 1e-6
    else:  # a marginal mechanism with index reports
        bad[3] = np.iinfo(bad.dtype).max
    return bad


MECHANISMS = {
    "randomized_response": RandomizedResponse(13, 1.0),
    "oue": OptimizedUnaryEncoding(13, 1.0),
    "subset_selection": SubsetSelection(13, 1.0, subset_size=2),
    "hadamard": HadamardResponse(13, 1.0),
    "hrr": HadamardRandomizedResponse(13, 1.0),
    "haar": HaarHRR(13, 1.0),
    "hierarchical": HierarchicalHistogram(13, 1.0, branching=2, oracle="oue"),
    "gaussian": GaussianMechanism(5, 1.0, delta=1e-6),
    "gaussian_pure": GaussianRejectionMechanism(5, 1.0),
    "marg_ps": build_marginal_mechanism("marg_ps", (2, 3, 2), 1.0, 2),
}


@pytest.mark.parametrize("kind", list(MECHANISMS))
def test_a_report_outside_the_valid_set_is_refused_by_row_and_value(kind):
    mechanism = MECHANISMS[kind]
    honest = _honest(mechanism, 20)
    mechanism.check_reports(honest)  # honest reports pass
    bad = _crafted(mechanism, honest)
    pattern = rf"report 3 of the {re.escape(repr(mechanism.name))} mechanism is"
    if kind == "subset_selection":
        pattern = r"'subset_selection' mechanism .* report 3 has 3"
    with pytest.raises(ValueError, match=pattern):
        mechanism.check_reports(bad)
    with pytest.raises(ValueError, match="report 3"):
        mechanism.aggregate(bad)
    with pytest.raises(ValueError, match="report 3"):
        LDPReports(bad, mechanism)
    # Dropping is explicit: the other 19 reports are kept, one is counted.
    kept, dropped = mechanism.drop_invalid_reports(bad)
    assert dropped == 1 and kept.shape[0] == 19
    np.testing.assert_array_equal(kept, np.delete(honest, 3, axis=0))


@pytest.mark.parametrize("mechanism", [GaussianMechanism(4, 1.0, delta=1e-6),
                                       GaussianMechanism(3, 4.0, delta=1e-9,
                                                         workload=[[1, 2, 0], [0, -3, 1]]),
                                       GaussianRejectionMechanism(4, 0.5),
                                       GaussianRejectionMechanism(4, 1.3)],
                         ids=["gaussian", "gaussian-wide", "pure-0.5", "pure-1.3"])
def test_a_million_honest_gaussian_reports_pass_the_bound(mechanism):
    """Per report the bound fails with probability < 1e-12: 10^6 honest reports pass (the
    chance that one fails is below 1e-6)."""
    reports = _honest(mechanism, 10**6, seed=1)
    valid = mechanism.report_validity(reports).valid
    assert valid.all()
    assert mechanism.drop_invalid_reports(reports)[1] == 0
    # How close the honest reports come: the largest |noise| in units of sigma.
    low, high = mechanism.report_bounds()
    finite = reports[~np.isnan(reports[:, 0])]
    assert np.all(finite >= low) and np.all(finite <= high)


def test_the_gaussian_bound_is_the_union_bound_of_the_normal_tail():
    for d in (1, 7, 1000):
        z = tail_multiplier(d)
        assert d * 2 * special.ndtr(-z) == pytest.approx(REPORT_TAIL_PROBABILITY, rel=1e-9)
    A = np.array([[1.0, 2.0, 0.0], [0.0, -3.0, 1.0]])
    mechanism = GaussianMechanism(3, 1.0, delta=1e-6, workload=A)
    low, high = mechanism.report_bounds()
    # Spec version 2 (lattice): the discrete Gaussian's tail is the normal's shifted by a
    # step, and the centre is within a step of a_u / h; reports must be lattice points.
    step = 2.0**-mechanism.lattice_exponent
    spread = mechanism.sigma * tail_multiplier(2) + 2 * step
    np.testing.assert_allclose(low, A.min(axis=1) - spread, rtol=0, atol=step)  # on the lattice
    np.testing.assert_allclose(high, A.max(axis=1) + spread, rtol=0, atol=step)
    # Just inside passes, just outside is refused, and so are NaN and infinity.
    inside = np.array([[np.floor(high[0] / step) * step, np.ceil(low[1] / step) * step]])
    assert mechanism.report_validity(inside).valid.all()
    for value in (high[0] * (1 + 1e-9), np.nan, np.inf):
        with pytest.raises(ValueError, match=r"report 0 of the 'gaussian' mechanism .*must be "
                                             r"finite vectors"):
            mechanism.check_reports(np.array([[value, 0.0]]))
    # pure: kept draws are N_Z(0, sigma2) h tilted by at most keep_high / 2^52 (version 2).
    pure = GaussianRejectionMechanism(3, 1.0)
    z = tail_multiplier(3, density_factor=pure.keep_high / 2**52)
    assert pure.report_bounds()[1] == pytest.approx(np.full(3, pure.sigma * z + pure.step),
                                                    abs=pure.step)


def test_one_gaussian_report_moves_the_estimate_a_bounded_amount():
    mechanism = GaussianMechanism(4, 1.0, delta=1e-6)
    honest = _honest(mechanism, 1000)
    huge = np.full((1, 4), 1e12)
    with pytest.raises(ValueError, match="must be finite vectors"):
        mechanism.aggregate(np.vstack([honest, huge]))
    largest = mechanism.report_influence(np.eye(4)).largest
    low, high = mechanism.report_bounds()
    # A = I: the estimate of a cell moves by at most the box's reach on that coordinate.
    np.testing.assert_allclose(largest, np.maximum(np.abs(low), np.abs(high)))


def test_gaussian_pure_keeps_bottom_rows_and_refuses_partial_ones():
    mechanism = GaussianRejectionMechanism(3, 1.0)
    # lattice points (spec version 2: reports are multiples of 2^-m)
    reports = np.array([[np.nan] * 3, [0.125, -0.25, 0.5], [np.nan, 0.0, 0.0]])
    check = mechanism.report_validity(reports)
    np.testing.assert_array_equal(check.valid, [True, True, False])
    with pytest.raises(ValueError, match=r"report 2 .*some NaN or infinite"):
        mechanism.check_reports(reports)


def test_hierarchical_reports_are_checked_row_by_row():
    for oracle in ("oue", "hrr"):
        tree = HierarchicalHistogram(20, 1.0, branching=4, oracle=oracle)
        reports = _honest(tree, 50)
        bad = reports.copy()
        if oracle == "oue":
            row = int(np.flatnonzero(reports[:, 0] == 1)[0])  # level 1: 2 nodes, 2 bits
            bad[row, 1] |= 0x80
            message = "past bit"
        else:
            row = 4
            bad[row] = tree._report_offsets[1] + 1  # level 2, coefficient 0
            message = "coefficient 0"
        with pytest.raises(ValueError, match=rf"report {row} .*{message}"):
            tree.aggregate(bad)
        assert tree.drop_invalid_reports(bad)[1] == 1


def test_one_bit_reports_name_the_first_bad_one():
    randomizer = OneBitRandomizer(1.0)
    with pytest.raises(ValueError, match=r"report 2 of the one-bit randomizer is 3"):
        randomizer.check_reports(np.array([1, -1, 3, 0]))


# ---------------------------------------------------------------------- collection
def test_reports_from_client_drops_and_counts_on_request(caplog):
    mechanism = RandomizedResponse(4, 1.0)
    values = [0, 3, 9, "x", -1, 2, [1], 1]
    with pytest.raises(ValueError):
        reports_from_client(values, mechanism)
    with caplog.at_level(logging.WARNING, logger="sklearn_ldp"):
        reports = reports_from_client(values, mechanism, invalid="drop")
    assert reports.reports.tolist() == [0, 3, 2, 1]
    assert reports.n_invalid == 4
    assert "dropped 4 of 8 reports" in caplog.text
    with pytest.raises(ValueError, match="invalid must be 'raise'"):
        reports_from_client(values, mechanism, invalid="clip")
    # An array in the mechanism's layout goes through the same check as a whole.
    array = np.array([0, 1, 7, 2], dtype=np.uint8)
    with pytest.raises(ValueError, match=r"report 2 of the 'randomized_response' mechanism "
                                         r"is 7"):
        reports_from_client(array, mechanism)
    assert reports_from_client(array, mechanism, invalid="drop").n_invalid == 1


def test_reports_from_client_drops_gaussian_reports_beyond_the_bound():
    mechanism = GaussianMechanism(3, 1.0, delta=1e-6)
    honest = _honest(mechanism, 30).tolist()
    values = honest + [[1e9, 0.0, 0.0], [0.0, float("nan"), 0.0], [0.0, 0.0]]
    reports = reports_from_client(values, mechanism, invalid="drop")
    assert len(reports) == 30 and reports.n_invalid == 3
    with pytest.raises(ValueError, match="report 30 of the 'gaussian' mechanism"):
        reports_from_client(values[:-1], mechanism)


def test_estimators_record_the_dropped_reports(caplog):
    mechanism = OptimizedUnaryEncoding(10, 1.0)
    rng = np.random.default_rng(0)
    rows = mechanism.randomize(rng.integers(0, 10, 200), rng).tolist()
    first = reports_from_client(rows[:100] + [[0, 4], [255, 255]], mechanism, invalid="drop")
    second = reports_from_client(rows[100:] + [[1, 2, 3]], mechanism, invalid="drop")
    assert (first.n_invalid, second.n_invalid) == (2, 1)
    with caplog.at_level(logging.WARNING, logger="sklearn_ldp"):
        estimator = WorkloadEstimator().fit(first)
        assert estimator.n_invalid_reports_ == 2
        estimator.partial_fit(second)
    assert estimator.n_invalid_reports_ == 3 and estimator.n_users_ == 200
    assert "3 in all" in caplog.text
    # A fit from scratch starts counting again; reports built directly count none.
    estimator.fit(LDPReports(np.asarray(rows, dtype=np.uint8), mechanism))
    assert estimator.n_invalid_reports_ == 0


def test_the_count_of_dropped_reports_travels_with_the_reports(tmp_path):
    """n_invalid is part of LDPReports: saved and loaded, summed by concat, 0 on a selection
    of rows (the dropped reports belong to none), validated."""
    from sklearn_ldp import LDPReports
    from sklearn_ldp.deploy.collect import reports_from_client
    from sklearn_ldp.mechanisms import RandomizedResponse

    mechanism = RandomizedResponse(4, 1.0)
    kept = reports_from_client([0, 1, 9, 2, -1, 3], mechanism, invalid="drop")
    assert len(kept) == 4 and kept.n_invalid == 2
    kept.save(tmp_path / "kept.npz")
    assert LDPReports.load(tmp_path / "kept.npz").n_invalid == 2
    assert LDPReports.concat([kept, kept]).n_invalid == 4
    assert kept[:2].n_invalid == 0
    for bad in (-1, 1.5, True, 2**63):
        with pytest.raises(ValueError, match="n_invalid must be an integer"):
            LDPReports(np.array([0, 1]), mechanism, n_invalid=bad)
