"""The shuffle model's amplified privacy (``sklearn_ldp.mechanisms.shuffle``)."""

import math
from fractions import Fraction
from math import comb

import numpy as np
import pytest

from sklearn_ldp.mechanisms.shuffle import clone_delta, local_epsilon_for, shuffle_epsilon


def exact_clone_delta(n_users):
    """The hockey-stick divergence of the clone pair, summed over every (c, x) in exact
    rationals, at e^epsilon_local = 3 and e^epsilon = 2 (clone probability 1/3, p = 3/4)."""
    clone, p, e_eps = Fraction(1, 3), Fraction(3, 4), 2
    total = Fraction(0)
    for c in range(n_users):
        weight = comb(n_users - 1, c) * clone**c * (1 - clone) ** (n_users - 1 - c)

        def b(x, c=c):
            return Fraction(comb(c, x), 2**c) if 0 <= x <= c else Fraction(0)

        for x in range(c + 2):
            p0 = p * b(x - 1) + (1 - p) * b(x)
            p1 = (1 - p) * b(x - 1) + p * b(x)
            total += weight * max(Fraction(0), p0 - e_eps * p1)
    return total


@pytest.mark.parametrize("n_users", [1, 2, 3, 7, 15, 30])
def test_clone_delta_matches_exact_rational_sum(n_users):
    assert clone_delta(math.log(3), n_users, math.log(2)) == pytest.approx(
        float(exact_clone_delta(n_users)), rel=1e-10, abs=1e-15)


def shuffled_rr_delta(epsilon_local, n_users, epsilon):
    """The exact delta of shuffled binary randomized response at epsilon: the shuffled output
    is the number of ones; the worst case over the others' values and both directions."""
    keep = math.exp(epsilon_local) / (math.exp(epsilon_local) + 1)
    worst = 0.0
    for ones in range(n_users):      # others holding a 1
        others = np.array([1.0])
        for bit in [1] * ones + [0] * (n_users - 1 - ones):
            q = keep if bit else 1 - keep
            others = np.convolve(others, [1 - q, q])
        count0 = np.convolve(others, [keep, 1 - keep])      # the changed user holds 0
        count1 = np.convolve(others, [1 - keep, keep])      # ... or 1
        for a, b in ((count0, count1), (count1, count0)):
            worst = max(worst, np.clip(a - math.exp(epsilon) * b, 0, None).sum())
    return worst


@pytest.mark.parametrize("epsilon_local", [0.5, 1.0, 2.0, 3.0])
def test_clone_delta_bounds_shuffled_randomized_response(epsilon_local):
    for n_users in (1, 5, 20, 40):
        for epsilon in np.linspace(0, epsilon_local, 7):
            exact = shuffled_rr_delta(epsilon_local, n_users, epsilon)
            assert exact <= clone_delta(epsilon_local, n_users, epsilon) + 1e-12
    # One user: nothing to hide among, the bound is randomized response's own divergence.
    assert clone_delta(epsilon_local, 1, 0.0) == pytest.approx(
        shuffled_rr_delta(epsilon_local, 1, 0.0))


def test_monotone():
    by_users = [shuffle_epsilon(2.0, n, 1e-6) for n in (10**3, 10**4, 10**5)]
    assert by_users == sorted(by_users, reverse=True)
    by_local = [shuffle_epsilon(e0, 10**4, 1e-6) for e0 in (0.5, 1.0, 2.0, 4.0, 6.0)]
    assert by_local == sorted(by_local)
    by_delta = [shuffle_epsilon(1.0, 10**4, d) for d in (1e-8, 1e-6, 1e-4)]
    assert by_delta == sorted(by_delta, reverse=True)
    assert all(e <= 2.0 for e in by_users)
    deltas = [clone_delta(1.0, 10**4, eps) for eps in (0.0, 0.02, 0.05, 0.1, 1.0)]
    assert deltas == sorted(deltas, reverse=True) and deltas[-1] == 0.0


@pytest.mark.parametrize("n_users", [10**3, 10**4, 10**5, 10**6])
@pytest.mark.parametrize("epsilon_local", [0.1, 1.0, 2.0, 4.0, 8.0])
def test_closed_form_never_below_numerical(n_users, epsilon_local):
    delta = 1e-6
    if epsilon_local > math.log(n_users / (16 * math.log(4 / delta))):
        with pytest.raises(ValueError, match="closed-form bound needs epsilon_local"):
            shuffle_epsilon(epsilon_local, n_users, delta, bound="closed_form")
        return
    assert shuffle_epsilon(epsilon_local, n_users, delta, bound="closed_form") >= \
        shuffle_epsilon(epsilon_local, n_users, delta)


def test_values_at_delta_1e6():
    # Regression figures of this implementation (delta = 1e-6), cross-checked against the
    # exact rational sum and shuffled randomized response above.
    expected = {(10**4, 1.0): 0.0530, (10**4, 4.0): 0.6009, (10**5, 2.0): 0.0450,
                (10**6, 4.0): 0.0493, (10**6, 8.0): 0.4445}
    for (n_users, epsilon_local), value in expected.items():
        assert shuffle_epsilon(epsilon_local, n_users, 1e-6) == pytest.approx(value, abs=1e-4)


@pytest.mark.parametrize("central", [0.05, 0.3, 1.0])
def test_local_epsilon_for_inverts(central):
    eps0 = local_epsilon_for(central, 10**4, 1e-6)
    assert eps0 >= central
    # The target holds exactly (its delta at the central epsilon); shuffle_epsilon rounds up
    # by its bisection's relative tolerance.
    assert clone_delta(eps0, 10**4, central) <= 1e-6
    assert shuffle_epsilon(eps0, 10**4, 1e-6) <= central * (1 + 1e-6)
    assert shuffle_epsilon(eps0 * 1.001, 10**4, 1e-6) > central


@pytest.mark.parametrize("kwargs, field", [
    ({"epsilon_local": 0}, "epsilon_local"), ({"epsilon_local": -1.0}, "epsilon_local"),
    ({"epsilon_local": float("nan")}, "epsilon_local"), ({"epsilon_local": "1"}, "epsilon_local"),
    ({"epsilon_local": 51.0}, "epsilon_local"), ({"n_users": 0}, "n_users"),
    ({"n_users": 2.5}, "n_users"), ({"n_users": True}, "n_users"),
    ({"n_users": 10**11}, "n_users"), ({"delta": 0.0}, "delta"), ({"delta": 1.0}, "delta"),
    ({"delta": float("nan")}, "delta"), ({"bound": "tight"}, "bound"),
])
def test_bad_input_names_the_field(kwargs, field):
    arguments = {"epsilon_local": 1.0, "n_users": 1000, "delta": 1e-6, **kwargs}
    with pytest.raises(ValueError, match=field):
        shuffle_epsilon(**arguments)


def test_inverse_bad_input():
    with pytest.raises(ValueError, match="central_epsilon"):
        local_epsilon_for(-0.1, 1000, 1e-6)
    with pytest.raises(ValueError, match="epsilon must be a finite number"):
        clone_delta(1.0, 10, -1.0)


def test_reports_give_their_shuffled_epsilon():
    from sklearn_ldp import LDPReports
    from sklearn_ldp.selection import baseline_mechanism

    mech = baseline_mechanism("randomized_response", (3,), 2.0)
    reports = LDPReports(np.zeros(5000, dtype=int), mech)
    assert reports.shuffled_epsilon(1e-6) == shuffle_epsilon(2.0, 5000, 1e-6) < 2.0


def test_public_names():
    import sklearn_ldp

    assert sklearn_ldp.shuffle_epsilon is shuffle_epsilon
    assert sklearn_ldp.local_epsilon_for is local_epsilon_for


def test_margin_of_error_with_a_shuffler():
    from sklearn.base import clone

    from sklearn_ldp import LDPEncoder, margin_of_error

    encoder = LDPEncoder(categories={"a": ["x", "y", "z"]}, epsilon=1.0)
    eps0 = local_epsilon_for(0.5, 20_000, 1e-6)
    shuffled = margin_of_error(encoder, 20_000, shuffle=(0.5, 1e-6))
    assert shuffled == margin_of_error(clone(encoder).set_params(epsilon=eps0), 20_000)
    assert shuffled < margin_of_error(encoder, 20_000)
    assert encoder.epsilon == 1.0                          # the model is not modified
    with pytest.raises(ValueError, match="shuffle must be a"):
        margin_of_error(encoder, 20_000, shuffle=0.5)
    with pytest.raises(ValueError, match="central_epsilon"):
        margin_of_error(encoder, 20_000, shuffle=(-1.0, 1e-6))


def test_matches_the_authors_published_figures():
    # The figures the paper's authors publish with their implementation (local epsilon 4,
    # 10^5 users, delta 1e-6): the numerical epsilon lies between the two ends of their
    # bisection, 0.1675385583317841 and 0.172790550755978; the closed form is
    # 0.5378040242374512.
    numerical = shuffle_epsilon(4.0, 10**5, 1e-6)
    assert 0.1675385583317841 <= numerical <= 0.172790550755978
    assert shuffle_epsilon(4.0, 10**5, 1e-6, bound="closed_form") == pytest.approx(
        0.5378040242374512, rel=1e-12)
