"""Exact samplers of Bassily's Gaussian kinds (issue 26): lattice reports, exact checks.

``gaussian``: a user rounds ``a_u / h`` at random (exact dyadic bits) and adds the exact
discrete Gaussian; its (eps, delta) calibration is CKS20's zCDP conversion on integers. The
audit (``audit_privacy``) brackets the discrete Gaussian's transcendental weights by integers
and bounds the hockey-stick divergence above; here it is compared with an independent float
enumeration within ``+-T sigma`` (``T = 8``: the sub-Gaussian tail bound ``2 exp(-T^2 / 2)``
is below ``1e-13``), and sampled reports are compared with the bracketed law.

``gaussian_pure``: the ratio of two inputs' probabilities of a kept report is a ratio of
integer keep numerators (the discrete Gaussian factor cancels), checked exactly on every
lattice point within ``+-T sigma`` (outside it, the numerators are the clamped floats of the
same formula, and the clamp alone gives the bound); bottom by the envelope.
"""

import math
import random
import warnings
from fractions import Fraction

import numpy as np
import pytest
from _audit_cases import CASES, server_reports
from _stats import check_unbiased_and_variance, chi_square_p_value

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms import RandomizedResponse, audit_privacy
from sklearn_ldp.mechanisms._base.exact import hockey_stick_bound, integer_ratio_at_most
from sklearn_ldp.mechanisms._base.mechanism import mechanism_from_dict
from sklearn_ldp.mechanisms.bassily.gaussian import (
    GaussianMechanism,
    centre_sensitivity2,
    lattice_coordinates,
    on_lattice,
)
from sklearn_ldp.mechanisms.bassily.rejection import GaussianRejectionMechanism
from sklearn_ldp.mechanisms.central.discrete_gaussian import (
    discrete_gaussian_law,
    zcdp_delta,
    zcdp_delta_within,
    zcdp_log_delta_bound,
)

T_SIGMA = 8  # 2 exp(-T^2 / 2) < 1e-13: the mass outside +-T sigma, by the sub-Gaussian bound
TAIL = 2 * math.exp(-T_SIGMA**2 / 2)

WIDE = np.array([[1.0, 1.0, 1.0, 1.0, 0.0, 0.0],
                 [0.0, 1.0, 0.0, 0.0, 1.0, 0.0],
                 [0.0, 1.0, 0.0, 0.0, 1.0, 1.0],
                 [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]])
# d = 1, adversarial columns: the bounds, opposite signs, a value and its next double.
ONE_D = np.array([[1.0, -1.0, 0.3, np.nextafter(0.3, 1.0), 0.0, 1e-3]])


def _client(spec, seed=0):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return Randomizer(spec, seed=seed)


def _discrete_gaussian_pmf(sigma2, support):
    """``N_Z(0, sigma2)`` on ``support`` (floats), normalized over ``+-T sigma``."""
    weights = np.exp(-support.astype(float) ** 2 / (2.0 * sigma2))
    return weights / weights.sum()


# ---------------------------------------------------------------------- exact zCDP check
def test_zcdp_bound_is_above_the_float_value_and_tight():
    for sensitivity2, sigma2, epsilon in [(1, 17, 1.0), (4, 1000, 0.5), (2**21, 43052114, 1.0)]:
        rho = sensitivity2 / (2 * sigma2)
        bound = math.exp(float(zcdp_log_delta_bound(sensitivity2, sigma2, epsilon)))
        assert zcdp_delta(rho, epsilon) * (1 - 1e-9) <= bound <= zcdp_delta(rho, epsilon) * 1.001


def test_zcdp_within_is_monotone_and_decides_the_calibration():
    mechanism = GaussianMechanism(3, 1.0, delta=1e-6, workload=[[1, 1, 0], [0, 1, 1]])
    s2, sigma2 = mechanism.sensitivity2, mechanism.sigma2
    assert zcdp_delta_within(s2, sigma2, 1.0, 1e-6)
    assert not zcdp_delta_within(s2, sigma2 - 1, 1.0, 1e-6)


# ---------------------------------------------------------------------- lattice and rounding
def test_lattice_coordinates_are_exact_and_sensitivity_bounds_every_pair():
    A = np.array([[0.3, np.nextafter(0.3, 1), -1.0, 1e-20], [0.7, 0.1, 0.0, -2.5]])
    floor, numerators = lattice_coordinates(A, 5)
    np.testing.assert_array_equal(floor, np.floor(A * 32))
    assert np.all((numerators >= 0) & (numerators <= 2**52))
    sensitivity2 = centre_sensitivity2(floor, numerators)
    # every pair of reachable centres (each coordinate floor or floor + 1 as allowed)
    worst = 0
    for u in range(4):
        for v in range(4):
            diff = floor[:, u] - floor[:, v]
            up_u, up_v = numerators[:, u] > 0, numerators[:, v] > 0
            worst = max(worst, int(np.sum(np.maximum(np.abs(diff + up_u), np.abs(diff - up_v))
                                          ** 2)))
    assert worst <= sensitivity2
    with pytest.raises(ValueError, match="lattice exponent"):
        lattice_coordinates(A, 60)


@pytest.mark.parametrize("kind", ["gaussian", "gaussian_pure"])
def test_reports_lie_on_the_lattice(kind):
    mechanism = (GaussianMechanism(6, 1.0, delta=1e-6, workload=WIDE) if kind == "gaussian"
                 else GaussianRejectionMechanism(6, 1.0, workload=WIDE))
    reports = mechanism.randomize(np.arange(6).repeat(500), np.random.default_rng(0))
    finite = ~np.isnan(reports[:, 0])
    assert finite.sum() > 1000
    assert on_lattice(reports[finite], mechanism.lattice_exponent).all()
    if kind == "gaussian_pure":
        assert np.isnan(reports[~finite]).all() and (~finite).sum() > 1000
    assert mechanism.report_validity(reports).valid.all()
    off = reports[finite][:1] + 2.0 ** -(mechanism.lattice_exponent + 1)
    assert not mechanism.report_validity(off).valid.any()


# ---------------------------------------------------------------------- the (eps, delta) law
def _gaussian_law_1d(mechanism, u, support):
    """P(report = k h | u) over the integers ``support``: mixture over the rounding bit."""
    floor = int(mechanism._floor_t[u, 0])
    p_up = int(mechanism._numerators_t[u, 0]) / 2**52
    sigma2 = mechanism.sigma2
    law = ((1 - p_up) * np.exp(-(support - floor) ** 2 / (2.0 * sigma2))
           + p_up * np.exp(-(support - floor - 1) ** 2 / (2.0 * sigma2)))
    return law / np.sqrt(2 * np.pi * sigma2)  # the discrete Gaussian's normalizer (to 1e-300)


@pytest.mark.parametrize("epsilon,delta", [(0.5, 1e-6), (2.0, 1e-6), (0.5, 1e-3),
                                           (2.0, 1e-10)])
def test_gaussian_audit_bounds_the_hockey_stick_divergence(epsilon, delta):
    mechanism = GaussianMechanism(ONE_D.shape[1], epsilon, delta=delta, workload=ONE_D)
    audit = audit_privacy(mechanism, range(ONE_D.shape[1]))
    assert audit.private and audit.delta == delta and audit.realised_delta <= delta, audit
    assert audit.realised_delta > delta / 100  # the calibration is not loose by 100x
    # An independent float reference: the enumerated law within +-T sigma, both directions.
    sigma = math.sqrt(mechanism.sigma2)
    reach = int(np.abs(mechanism._floor_t).max()) + 1 + math.ceil(T_SIGMA * sigma)
    support = np.arange(-reach, reach + 1, dtype=float)
    laws = [_gaussian_law_1d(mechanism, u, support) for u in range(ONE_D.shape[1])]
    assert all(abs(law.sum() - 1) < 1e-9 for law in laws)
    worst = max(float(np.maximum(p - math.exp(epsilon) * q, 0.0).sum())
                for p in laws for q in laws)
    # The bound is above the truth, by the brackets and the tail only.
    assert worst - TAIL <= audit.realised_delta <= worst * (1 + 1e-9) + TAIL


def test_bracketed_law_holds_the_mass_and_the_checks_refuse_mixtures():
    law = discrete_gaussian_law(30, [-2, 3], [1, 3], (-60, 60))
    low = sum(int(w) for w in law.low)
    high = sum(int(w) for w in law.high)
    assert Fraction(low, law.total_high) <= 1 <= Fraction(high + law.tail, law.total_low)
    assert Fraction(high + law.tail, law.total_low) - Fraction(low, law.total_high) < 1e-12
    other = discrete_gaussian_law(30, [0], [1], (-59, 60))
    with pytest.raises(ValueError, match="different output sets"):
        hockey_stick_bound(law, other, 1.0)
    with pytest.raises(ValueError, match="inside the support"):
        discrete_gaussian_law(30, [70], [1], (-60, 60))
    # The same sigma2 for a shift of 1 at a delta below the truth: not private.
    a, b = (discrete_gaussian_law(30, [c], [1], (-80, 81)) for c in (0, 1))
    true = hockey_stick_bound(a, b, 0.2)
    assert 0 < true < 1
    mechanism = _Laws({0: a, 1: b}, 0.2, float(true) / 2)
    audit = audit_privacy(mechanism, [0, 1])
    assert not audit.private and audit.realised_delta >= float(true)
    with pytest.raises(ValueError, match="mix"):
        audit_privacy(_Laws({0: a, 1: RandomizedResponse(2, 1.0).exact_law(0)}, 1.0, 0.1),
                      [0, 1])


class _Laws:
    """A mechanism whose laws are given (for the audit's refusals)."""

    def __init__(self, laws, epsilon, delta):
        self.laws, self.epsilon, self.delta = laws, epsilon, delta

    def exact_law(self, value):
        return self.laws[value]


@pytest.mark.parametrize("kind", ["gaussian", "central_discrete_gaussian"])
def test_sampled_reports_follow_the_bracketed_law(kind):
    case = CASES[kind]
    mechanism = case.build(1.0)
    rng = np.random.default_rng(26)
    for value in (case.values[0], case.values[-1]):
        law = mechanism.exact_law(value)
        outputs = np.asarray(law.outputs, dtype=float).reshape(-1)
        reports = np.asarray(server_reports(mechanism, value, 40_000, rng),
                             dtype=float).reshape(-1)
        # 16 bins of equal law mass (midpoints of the brackets; their width is ~1e-15).
        mass = np.array([float(Fraction(int(lo) + int(hi), 2 * law.total_low))
                         for lo, hi in zip(law.low, law.high, strict=True)])
        cumulative = np.cumsum(mass) / mass.sum()
        cuts = outputs[np.searchsorted(cumulative, np.arange(1, 16) / 16)]
        observed = np.bincount(np.searchsorted(cuts, reports, side="right"), minlength=16)
        expected = np.bincount(np.searchsorted(cuts, outputs, side="right"), weights=mass,
                               minlength=16) / mass.sum() * reports.size
        assert chi_square_p_value(observed, expected) > 1e-4


def test_gaussian_unbiased_with_variance_on_the_lattice():
    mechanism = GaussianMechanism(ONE_D.shape[1], 1.0, delta=1e-6, workload=ONE_D)
    rng = np.random.default_rng(3)
    u = 3  # the next double after 0.3: its mean is the realised column
    reports = mechanism.randomize(np.full(200_000, u), rng)[:, 0]
    means = reports.reshape(400, 500).mean(axis=1)
    variance = mechanism.sigma**2 + mechanism.step**2 * mechanism._rounding_variance[0, u]
    check_unbiased_and_variance(means[:, None], [mechanism.realized_A[0, u]], [variance / 500])
    assert mechanism.realized_A[0, u] == pytest.approx(ONE_D[0, u], abs=2.0**-60)


# ---------------------------------------------------------------------- the pure law
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2 * math.log(2)])
def test_pure_every_output_ratio_exactly_within(epsilon):
    mechanism = GaussianRejectionMechanism(ONE_D.shape[1], epsilon, workload=ONE_D)
    sigma = math.sqrt(mechanism.sigma2)
    support = np.arange(-math.ceil(T_SIGMA * sigma), math.ceil(T_SIGMA * sigma) + 1)
    draws = np.ldexp(support.astype(float), -mechanism.lattice_exponent)[:, None]
    numerators = np.array([mechanism.keep_numerators(np.full(support.size, u), draws)
                           for u in range(ONE_D.shape[1])])
    most, least = numerators.max(axis=0), numerators.min(axis=0)
    worst = int(np.argmax(most / least))
    assert integer_ratio_at_most(int(most[worst]), int(least[worst]), epsilon)
    assert integer_ratio_at_most(mechanism.keep_high, mechanism.keep_low, epsilon)
    one = 2**52
    assert integer_ratio_at_most(one - mechanism.keep_low, one - mechanism.keep_high, epsilon)
    # bottom: sum over the lattice (the mass outside +-T sigma is below TAIL)
    pmf = _discrete_gaussian_pmf(mechanism.sigma2, support)
    bottom = 1.0 - (numerators / one) @ pmf
    assert bottom.max() / (bottom.min() - TAIL) <= math.exp(epsilon)
    # The continuous moments vs the lattice: the keep function jumps at the window's edges, so
    # the lattice sum differs by O(h / sigma) there (measured: 1.5e-6 at eps = 1).
    np.testing.assert_allclose(bottom, 1 - mechanism.p_keep, atol=1e-5)
    assert most[worst] / least[worst] > math.exp(0.7 * epsilon)  # the window is used


def test_pure_keep_rate_and_unbiased_with_variance():
    mechanism = GaussianRejectionMechanism(6, 1.0, workload=WIDE)
    rng = np.random.default_rng(4)
    counts = np.array([300, 200, 100, 250, 150, 0])
    users = np.repeat(np.arange(6), counts)
    statistics = np.array([mechanism.aggregate(mechanism.randomize(users, rng))
                           for _ in range(200)])
    p = mechanism.p_keep
    check_unbiased_and_variance(statistics[:, 4:5], [p @ counts], [(p * (1 - p)) @ counts])
    answers = np.array([WIDE @ mechanism.estimate(s) for s in statistics])
    check_unbiased_and_variance(answers, WIDE @ counts, mechanism.query_variance(WIDE) @ counts)


# ---------------------------------------------------------------------- client parity
def test_client_gaussian_integers_and_law_match_the_server():
    mechanism = GaussianMechanism(ONE_D.shape[1], 1.0, delta=1e-6, workload=ONE_D)
    client = _client(mechanism.to_dict(), seed=1)
    privatize = client._privatize_cell
    assert privatize.lattice == mechanism.lattice_spec()
    assert privatize.numerators == mechanism._numerators_t.T.tolist()
    sigma = math.sqrt(mechanism.sigma2)
    edges = np.linspace(-3 * sigma, 3 * sigma, 13)  # bins in lattice units around the centre
    for u in (0, 3):
        reports = np.array([client.privatize(u)[0] for _ in range(1500)])
        k = np.ldexp(reports, mechanism.lattice_exponent)
        assert np.all(k == np.round(k))
        server = np.ldexp(mechanism.randomize(np.full(60_000, u), np.random.default_rng(u))[:, 0],
                          mechanism.lattice_exponent)
        centre = mechanism._floor_t[u, 0]
        bins = np.concatenate([[-np.inf], edges, [np.inf]])
        observed = np.histogram(k - centre, bins)[0]
        expected = np.histogram(server - centre, bins)[0] / 60_000 * 1500
        assert chi_square_p_value(observed, expected) > 1e-4


def test_client_pure_integers_and_keep_rate_match_the_server():
    mechanism = GaussianRejectionMechanism(ONE_D.shape[1], 1.0, workload=ONE_D)
    client = _client(mechanism.to_dict(), seed=2)
    assert client._privatize_cell.lattice == mechanism.lattice_spec()
    for u in (0, 1):
        reports = [client.privatize(u) for _ in range(3000)]
        kept = [r for r in reports if r is not None]
        k = np.ldexp(np.array(kept)[:, 0], mechanism.lattice_exponent)
        assert np.all(k == np.round(k))
        p = mechanism.p_keep[u]
        assert abs(len(kept) / 3000 - p) < 4.5 * math.sqrt(p * (1 - p) / 3000)
        # mean of a kept report along the column: kappa a / p_keep
        mean = float(np.mean(np.array(kept)[:, 0]))
        target = mechanism.kappa[u] * ONE_D[0, u] / p
        spread = math.sqrt(mechanism.alpha[u] / p) / math.sqrt(len(kept))
        assert abs(mean - target) < 4.5 * spread


# ---------------------------------------------------------------------- hostile specs
def _edited(spec, **lattice):
    return {**spec, "lattice": {**spec["lattice"], **lattice}}


@pytest.mark.parametrize("edit,field", [
    ({"sigma2": 1}, "sigma2"), ({"sigma2": 2**25}, "sigma2"),
    ({"sigma2": "many"}, "sigma2"), ({"exponent": 1}, "exponent"),
    ({"exponent": 10**6}, "exponent"), ({"sensitivity2": 4}, "sensitivity2"),
])
def test_gaussian_hostile_lattice_refused(edit, field):
    mechanism = GaussianMechanism(3, 1.0, delta=1e-6, workload=[[1, 1, 0], [0, 1, 1]])
    spec = mechanism.to_dict()
    key = next(iter(edit))
    if key in ("sigma2", "exponent") and isinstance(edit[key], int) and edit[key] < 100:
        edit = {key: spec["lattice"][key] + edit[key]}  # a neighbouring integer
    for load in (mechanism_from_dict, _client):
        with pytest.raises(ValueError, match=r"lattice\["):  # names the lattice's field
            load(_edited(spec, **edit))
    for load in (mechanism_from_dict, _client):
        with pytest.raises(ValueError, match="sigma2|lattice"):
            load(_edited(spec, sigma2=spec["lattice"]["sigma2"] - 1))
        with pytest.raises(ValueError, match="lattice"):
            load({key: value for key, value in spec.items() if key != "lattice"})
        with pytest.raises(ValueError, match="lattice|sigma2"):
            load({**spec, "epsilon": 2.0})  # an edited epsilon: the lattice no longer fits
        with pytest.raises(ValueError, match="version"):
            load({**spec, "version": 1})


@pytest.mark.parametrize("edit,field", [
    ({"keep_low": -1}, "keep_low"), ({"keep_high": 1}, "keep_high"),
    ({"exponent": 1}, "exponent"), ({"sigma2": 2**20}, "sigma2"),
])
def test_pure_hostile_lattice_refused(edit, field):
    mechanism = GaussianRejectionMechanism(3, 1.0, workload=[[1, 1, 0], [0, 1, 1]])
    spec = mechanism.to_dict()
    key, delta = next(iter(edit.items()))
    value = spec["lattice"][key] + delta if key != "sigma2" else delta
    for load in (mechanism_from_dict, _client):
        with pytest.raises(ValueError, match=rf"lattice\['{field}'\]"):
            load(_edited(spec, **{key: value}))
        with pytest.raises(ValueError, match="keep_high|keep_low|lattice"):
            load({**spec, "epsilon": 1.2})
        with pytest.raises(ValueError, match="2 ln 2"):
            load({**spec, "epsilon": 1.5})


def test_pure_wider_envelope_fails_the_exact_checks():
    mechanism = GaussianRejectionMechanism(3, 1.0, workload=[[1, 1, 0], [0, 1, 1]])
    spec = mechanism.to_dict()
    # The old window [e^{-eps/2}/2, e^{eps/2}/2] as numerators: bottom would not be private.
    low, high = (int(math.exp(-0.5) / 2 * 2**52), int(math.exp(0.5) / 2 * 2**52))
    for load in (mechanism_from_dict, _client):
        with pytest.raises(ValueError, match="keep"):
            load(_edited(spec, keep_low=low, keep_high=high))
    assert not integer_ratio_at_most(2**52 - low, 2**52 - high, 1.0)


def test_client_sampler_is_the_discrete_gaussian():
    from sklearn_ldp.deploy.client.bassily import _discrete_gaussian

    rng = random.Random(5)
    draws = np.array([_discrete_gaussian(30, rng) for _ in range(20_000)])
    support = np.arange(-40, 41)
    expected = _discrete_gaussian_pmf(30, support) * draws.size
    observed = np.array([(draws == k).sum() for k in support])
    assert chi_square_p_value(observed, expected) > 1e-4


# ---------------------------------------------------------------------- the audit's refusals
def test_audit_refuses_bad_claims_and_laws_it_cannot_list():
    mechanism = GaussianMechanism(ONE_D.shape[1], 1.0, delta=1e-6, workload=ONE_D)
    for bad, field in [(-1e-6, "delta"), (1.0, "delta"), (float("nan"), "delta"),
                       ("1e-6", "delta"), (True, "delta")]:
        with pytest.raises(ValueError, match=f"audit_privacy's {field}"):
            audit_privacy(mechanism, [0, 1], delta=bad)
    for bad in (-0.5, float("nan"), None, "1"):
        with pytest.raises(ValueError, match="audit_privacy's epsilon"):
            audit_privacy(mechanism, [0, 1], epsilon=bad if bad is not None else [1])
    with pytest.raises(ValueError, match="user types must be integers in"):
        mechanism.exact_law(ONE_D.shape[1])
    wide = GaussianMechanism(6, 1.0, delta=1e-6, workload=WIDE)
    with pytest.raises(ValueError, match="one-query workloads"):
        wide.exact_law(0)
    # A delta below the realised one fails; a larger epsilon needs less delta.
    audit = audit_privacy(mechanism, [0, 1])
    assert not audit_privacy(mechanism, [0, 1], delta=audit.realised_delta / 2).private
    assert audit_privacy(mechanism, [0, 1], epsilon=2.0).realised_delta < audit.realised_delta


def test_pure_audit_lists_keep_ratios_and_the_envelope_decides():
    mechanism = GaussianRejectionMechanism(ONE_D.shape[1], 1.0, workload=ONE_D)
    audit = audit_privacy(mechanism, range(ONE_D.shape[1]))
    assert audit.private and audit.delta == 0.0 and audit.realised <= 1.0, audit
    # The envelope is the worst ratio: hi / lo is within e^eps, just.
    assert audit.realised == pytest.approx(math.log(mechanism.keep_high / mechanism.keep_low))
    assert not audit_privacy(mechanism, [0, 1], epsilon=0.999).private
    # Multi-query workloads: the envelope alone (every kept report and bottom).
    wide = GaussianRejectionMechanism(6, 1.0, workload=WIDE)
    law = wide.exact_law(0)
    assert len(law.weights) == 0 and audit_privacy(wide, [0, 5]).private
