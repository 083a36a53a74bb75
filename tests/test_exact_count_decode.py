"""CountMechanism decodes and scores with the law it samples (the integer table / 2^52).

``transform`` draws from the exact integer table of ``matrix_`` (columns summing to 2^52);
``predict``, ``score`` and ``expected_error_`` must use that law, not the designed float
matrix (about 1e-11 off). Checked against the same computations in exact rationals.
"""

from fractions import Fraction

import numpy as np
import pytest

from sklearn_ldp.estimators.count import CountMechanism
from sklearn_ldp.mechanisms.central.count import cost_matrix, count_table, decode

PRECISION = 2**52


def exact_posterior_means(table, prior):
    """E[j | output i] in rationals from the integer table and the (float) prior."""
    n = table.shape[0] - 1
    weights = [Fraction(float(w)) for w in prior]
    means = []
    for i in range(n + 1):
        joint = [Fraction(int(table[i, j]), PRECISION) * weights[j] for j in range(n + 1)]
        evidence = sum(joint)
        means.append(sum(j * p for j, p in enumerate(joint)) / evidence)
    return means


@pytest.mark.parametrize("group_size, epsilon, prior", [
    (6, 1.0, None),
    (5, 0.5, [1, 2, 3, 4, 5, 6]),
    (40, 1.0, None),
])
def test_predict_is_the_exact_posterior_mean_of_the_sampled_table(group_size, epsilon, prior):
    cm = CountMechanism(group_size=group_size, epsilon=epsilon, prior=prior,
                        random_state=0).fit()
    table = count_table(cm.matrix_, epsilon)
    exact = exact_posterior_means(table, cm.prior_)
    outputs = np.arange(group_size + 1)
    predicted = cm.predict(outputs)
    # Float rounding of the posterior only (relative ~1e-15 per operation).
    error = max(abs(Fraction(float(p)) - e) for p, e in zip(predicted, exact, strict=True))
    assert error < Fraction(1, 10**12)
    # The decode of the designed float matrix is farther off for a wide geometric table:
    # the test above would not hold for it (premise of the fix).
    if group_size == 40:
        designed = decode(cm.matrix_, outputs, cm.prior_)
        off = max(abs(Fraction(float(p)) - e) for p, e in zip(designed, exact, strict=True))
        assert off > 100 * error


def test_map_decode_uses_the_sampled_table():
    cm = CountMechanism(group_size=6, epsilon=1.0, decode="map", random_state=0).fit()
    table = count_table(cm.matrix_, 1.0)
    weights = [Fraction(float(w)) for w in cm.prior_]
    expected = []
    for i in range(7):
        joint = [table[i, j] * weights[j] for j in range(7)]
        expected.append(max(range(7), key=lambda j: (joint[j], -j)))  # ties: smaller count
    assert cm.predict(np.arange(7)).tolist() == expected


@pytest.mark.parametrize("aggregation", ["sum", "max"])
def test_score_is_the_exact_expected_loss_of_the_sampled_table(aggregation):
    cm = CountMechanism(group_size=6, epsilon=0.5, loss="L1", aggregation=aggregation,
                        random_state=0).fit()
    table = count_table(cm.matrix_, 0.5)
    cost = cost_matrix(6, "L1")
    per_count = [sum(Fraction(int(table[i, j]), PRECISION) * Fraction(float(cost[i, j]))
                     for i in range(7)) for j in range(7)]
    counts = [0, 3, 3, 6, 1]
    expected = (max(per_count[c] for c in counts) if aggregation == "max"
                else sum(per_count[c] for c in counts) / len(counts))
    assert abs(Fraction(-cm.score(counts)) - expected) < Fraction(1, 10**14)


def test_expected_error_is_that_of_the_sampled_table():
    cm = CountMechanism(group_size=5, epsilon=1.0, random_state=0).fit()
    table = count_table(cm.matrix_, 1.0)
    means = exact_posterior_means(table, cm.prior_)
    per_count = [sum(Fraction(int(table[i, j]), PRECISION) * (means[i] - j) ** 2
                     for i in range(6)) for j in range(6)]
    worst = float(cm.expected_error_["worst_case"].iloc[0])
    assert abs(Fraction(worst) - max(per_count)) < Fraction(1, 10**12)


def test_a_tampered_matrix_is_refused_by_predict_and_score():
    from sklearn_ldp.mechanisms.central.count import geometric_mechanism

    cm = CountMechanism(group_size=6, epsilon=1.0, random_state=0).fit()
    cm.matrix_ = geometric_mechanism(6, 2.0)
    for call in (lambda: cm.predict([0, 1]), lambda: cm.score([0, 1])):
        with pytest.raises(ValueError, match=r"CountMechanism's matrix_ is not 1\.0-DP"):
            call()
