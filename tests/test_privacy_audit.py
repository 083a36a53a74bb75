"""The privacy audit: every mechanism kind, on the law it actually samples.

For each kind, a small instance and its adversarial inputs (the largest and smallest
categories, the two bounds, neighbouring floats such as 5.0 and 5.0000001):

1. **Exact.** The exact output laws (``exact_law``: integer weights over the whole public
   output set) of every pair of inputs satisfy the claimed epsilon, decided on integers
   (:func:`sklearn_ldp.mechanisms.audit_privacy`), over a grid of epsilons. The Gaussian
   kinds' (epsilon, delta) laws: the hockey-stick divergence, bounded above with integer
   brackets of the discrete Gaussian's weights and its tail, is at most the claimed delta.
2. **Sampled = checked.** Reports drawn by the server's ``randomize`` and by the
   standard-library client fall only on outputs the law lists, with its frequencies
   (chi-square), so the law checked is the law sampled.
3. **Black box.** A distinguisher that sees only reports (a held-out likelihood-ratio event,
   Clopper-Pearson bounds) gives a lower bound on epsilon, with confidence 1 - 1e-3, below
   the claim, for server and client reports.

``benchmarks/audit_privacy.py`` prints the same figures as a table (docs/privacy_audit.md).
"""

import numpy as np
import pytest
from _audit_cases import CASES, client_reports, event_keys, sampled_pairs, server_reports
from _laws import assert_sampled_law, empirical_epsilon_lower_bound

from sklearn_ldp.mechanisms import audit_privacy
from sklearn_ldp.mechanisms._base.mechanism import _REGISTRY, _import_all_mechanisms

EPSILONS = (0.1, 1.0, 4.0, 8.0)
N_REPORTS = 20_000
# Kinds that are not audited here, with the reason (none today).
NOT_AUDITED = {}


def test_every_registered_kind_is_audited():
    _import_all_mechanisms()
    missing = set(_REGISTRY) - set(CASES) - set(NOT_AUDITED)
    assert not missing, f"kinds without an audit case: {sorted(missing)}"


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("kind", sorted(CASES))
def test_exact_laws_are_private(kind, epsilon):
    case = CASES[kind]
    if epsilon > case.max_epsilon:
        pytest.skip(f"{kind} refuses epsilon above {case.max_epsilon}")
    mechanism = case.build(epsilon)
    audit = audit_privacy(mechanism, case.values)
    assert audit.private, audit
    assert audit.realised <= epsilon * (1 + 1e-12), audit
    assert audit.realised_delta <= audit.delta, audit
    assert audit.delta == getattr(mechanism, "delta", 0.0), audit


@pytest.mark.parametrize("kind", sorted(CASES))
def test_sampled_reports_follow_the_exact_law(kind):
    case = CASES[kind]
    if case.sampling_tested_in:
        pytest.skip(f"{kind}: sampling against the exact law is tested in "
                    f"{case.sampling_tested_in}")
    if not case.enumerable_reports:
        pytest.skip(f"{kind}: reports carry a fresh public 64-bit seed, so no finite set of "
                    "sampled reports can be matched; its law is conditional on the seed "
                    "(tested in its own module)")
    mechanism = case.build(1.0)
    rng = np.random.default_rng(26)
    for value in (case.values[0], case.values[-1]):
        assert_sampled_law(mechanism.exact_law(value), server_reports(mechanism, value,
                                                                     N_REPORTS, rng))
        if case.client:
            assert_sampled_law(mechanism.exact_law(value),
                               client_reports(mechanism, value, 4_000, seed=26))


@pytest.mark.parametrize("kind", sorted(CASES))
def test_black_box_distinguisher_stays_below_the_claim(kind):
    case = CASES[kind]
    epsilon = 1.0
    mechanism = case.build(epsilon)
    rng = np.random.default_rng(2026)
    for first, second in sampled_pairs(case):
        keys = event_keys(mechanism, first)
        bound = empirical_epsilon_lower_bound(
            server_reports(mechanism, first, N_REPORTS, rng),
            server_reports(mechanism, second, N_REPORTS, rng), event_keys=keys)
        assert bound <= epsilon, (first, second, bound)
        if case.client:
            bound = empirical_epsilon_lower_bound(
                client_reports(mechanism, first, 4_000, seed=1),
                client_reports(mechanism, second, 4_000, seed=2), event_keys=keys)
            assert bound <= epsilon, (first, second, bound)
