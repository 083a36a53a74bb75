"""SPL, SMP and RS+FD over several categorical attributes.

Privacy is checked on the exact law of a whole record's output (all attributes together),
both for the standard LDP neighbourhood (any two records) and for records that differ in one
attribute; estimates are checked for unbiasedness and variance by simulation.
"""

import itertools
import math

import numpy as np
import pytest
from _stats import check_unbiased_and_variance

from sklearn_ldp.mechanisms.multi_attribute.mechanisms import (
    MultiAttributeMechanism,
    rsfd_amplified_epsilon,
)

VARIANTS = [("spl", "grr"), ("spl", "oue"), ("smp", "grr"), ("smp", "oue"), ("rsfd", "grr"),
            ("rsfd", "oue_z"), ("rsfd", "oue_r")]


def _oracle_law(oracle, kind):
    """``Q[y, x]`` of one attribute's oracle and the law of its fake report (RS+FD)."""
    Q = oracle.strategy_matrix()
    k = Q.shape[1]
    fake = {"grr": np.full(Q.shape[0], 1.0 / k), "oue_r": Q.mean(axis=1)}
    if kind == "oue_z":  # no value: every bit 1 with probability q
        bits = (np.arange(Q.shape[0])[:, None] >> np.arange(k)) & 1
        fake["oue_z"] = np.prod(np.where(bits == 1, oracle.q, 1 - oracle.q), axis=1)
    return Q, fake.get(kind)


def _record_law(mechanism):
    """``{record: probability vector over every output}`` (the exact law of the protocol)."""
    laws = [_oracle_law(oracle, mechanism.oracle) for oracle in mechanism.oracles]
    d = mechanism.n_attributes
    result = {}
    for record in itertools.product(*(range(k) for k in mechanism.shape)):
        if mechanism.protocol == "smp":  # output (j, y_j)
            law = np.concatenate([laws[j][0][:, record[j]] / d for j in range(d)])
        else:
            law = 0.0
            for j in range(d) if mechanism.protocol == "rsfd" else [None]:
                factors = []
                for i in range(d):
                    Q, fake = laws[i]
                    factors.append(Q[:, record[i]] if j is None or i == j else fake)
                term = factors[0]
                for factor in factors[1:]:
                    term = np.multiply.outer(term, factor).ravel()
                law = law + (term if j is None else term / d)
        result[record] = law
    return result


def _largest_ratio(laws, one_attribute=False):
    worst = 1.0
    for (x, law_x), (y, law_y) in itertools.product(laws.items(), repeat=2):
        if one_attribute and sum(a != b for a, b in zip(x, y, strict=True)) != 1:
            continue
        worst = max(worst, float(np.max(law_x / law_y)))
    return worst


@pytest.mark.parametrize("protocol, oracle", VARIANTS)
def test_exact_privacy_of_the_whole_record(protocol, oracle):
    mechanism = MultiAttributeMechanism((2, 3, 2), 1.0, protocol=protocol, oracle=oracle)
    laws = _record_law(mechanism)
    assert all(law.sum() == pytest.approx(1.0) for law in laws.values())
    assert _largest_ratio(laws) <= math.exp(mechanism.epsilon) * (1 + 1e-9)
    assert mechanism.epsilon == pytest.approx(1.0)


@pytest.mark.parametrize("oracle", ["grr", "oue_z", "oue_r"])
@pytest.mark.parametrize("shape", [(3, 3, 3), (2, 3, 2), (2, 4)])
def test_rsfd_attribute_budget_holds_only_between_records_differing_in_one_attribute(oracle,
                                                                                      shape):
    epsilon = 1.0
    mechanism = MultiAttributeMechanism(shape, epsilon, protocol="rsfd", oracle=oracle,
                                        neighbourhood="attribute")
    laws = _record_law(mechanism)
    # The guarantee between records that differ in one attribute: e^eps, attained.
    assert _largest_ratio(laws, one_attribute=True) == pytest.approx(math.exp(epsilon),
                                                                     rel=1e-6)
    assert _largest_ratio(laws, one_attribute=True) <= math.exp(epsilon) * (1 + 1e-9)
    # Records that differ in every attribute: e^eps', which the mechanism declares.
    assert mechanism.inner_epsilon > epsilon
    assert _largest_ratio(laws) == pytest.approx(math.exp(mechanism.inner_epsilon), rel=1e-6)
    assert mechanism.epsilon == mechanism.inner_epsilon
    assert mechanism.attribute_epsilon == epsilon
    # The paper's amplified budget is this one exactly when every attribute's smallest
    # likelihood ratio is the same: GRR over equal domains, and unary encoding of no value.
    if oracle == "oue_z" or (oracle == "grr" and len(set(shape)) == 1):
        assert mechanism.inner_epsilon == pytest.approx(
            rsfd_amplified_epsilon(epsilon, len(shape)), rel=1e-9)


@pytest.mark.parametrize("protocol, oracle", VARIANTS)
def test_estimates_are_unbiased_with_the_analytic_variance(protocol, oracle):
    rng = np.random.default_rng(2024)
    shape, n_users, replicates = (3, 4), 4000, 300
    mechanism = MultiAttributeMechanism(shape, 2.0, protocol=protocol, oracle=oracle)
    records = np.column_stack([rng.choice(k, size=n_users, p=np.arange(1, k + 1) /
                                          (k * (k + 1) / 2)) for k in shape])
    answers = [[] for _ in shape]
    for _ in range(replicates):
        estimates = mechanism.estimate(mechanism.aggregate(mechanism.randomize(records, rng)))
        for i, counts in enumerate(estimates):
            answers[i].append(counts)
    for i, k in enumerate(shape):
        truth = np.bincount(records[:, i], minlength=k)
        variance = mechanism.count_variance(i, truth / n_users, n_users)
        # SMP's formula holds to O(d / N) (module docstring); the others exactly.
        check_unbiased_and_variance(np.array(answers[i]), truth, variance)
        # Averaged over the cells, the sample variance is within 15% of the formula (the
        # band above allows each cell more; this catches a formula that is off everywhere,
        # as SMP's with OUE was before it used the oracle's own per-user variance).
        ratio = np.array(answers[i]).var(axis=0, ddof=1) / variance
        assert 0.85 < ratio.mean() < 1.15, ratio


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="protocol"):
        MultiAttributeMechanism((2, 2), 1.0, protocol="all")
    with pytest.raises(ValueError, match="oracle"):
        MultiAttributeMechanism((2, 2), 1.0, protocol="spl", oracle="oue_z")
    with pytest.raises(ValueError, match="neighbourhood"):
        MultiAttributeMechanism((2, 2), 1.0, protocol="smp", neighbourhood="attribute")
    with pytest.raises(ValueError, match="categories"):
        MultiAttributeMechanism((2, 1), 1.0)
    mechanism = MultiAttributeMechanism((2, 3), 1.0, protocol="smp")
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match=r"records\[1, 1\] = 3"):
        mechanism.randomize(np.array([[0, 0], [1, 3]]), rng)
    with pytest.raises(TypeError, match="integer"):
        mechanism.randomize(np.array([[0.5, 0]]), rng)
    reports = mechanism.randomize(np.zeros((50, 2), dtype=int), rng)
    reports["attribute"] = reports["attribute"][::-1].copy() if reports["attribute"][0] != \
        reports["attribute"][-1] else reports["attribute"]
    tampered = {"attribute": np.zeros(50, dtype=np.uint8), "reports": reports["reports"]}
    with pytest.raises(ValueError, match="do not match"):
        mechanism.aggregate(tampered)
    statistic = mechanism.aggregate(mechanism.randomize(np.zeros((50, 2), dtype=int), rng))
    with pytest.raises(ValueError, match="entries"):
        mechanism.estimate(statistic[:-1])
    bad = statistic.copy()
    bad[0] = 10**6
    with pytest.raises(ValueError):
        mechanism.estimate(bad)


@pytest.mark.parametrize("protocol, oracle", VARIANTS)
def test_spec_round_trip(protocol, oracle):
    mechanism = MultiAttributeMechanism((2, 5, 3), 1.5, protocol=protocol, oracle=oracle)
    assert MultiAttributeMechanism.from_dict(mechanism.to_dict()) == mechanism


@pytest.mark.parametrize(("protocol", "oracle"), VARIANTS)
def test_smp_grouping_draws_what_a_mask_per_attribute_draws(protocol, oracle):
    """SMP groups its users by one stable sort; the reports are exactly those of selecting
    each attribute's users with a mask (same seed, same reports), and randomize_rows writes
    report_rows of the same draws."""
    mechanism = MultiAttributeMechanism((2, 3, 5, 9, 17), 1.0, protocol=protocol, oracle=oracle)
    rng = np.random.default_rng(7)
    records = np.column_stack([rng.integers(k, size=3000) for k in mechanism.shape])
    reports = mechanism.randomize(records, np.random.default_rng(11))
    if protocol == "smp":
        rng = np.random.default_rng(11)
        chosen = rng.integers(mechanism.n_attributes, size=records.shape[0])
        masked = [oracle.randomize(records[chosen == i, i], rng)
                  for i, oracle in enumerate(mechanism.oracles)]
        assert np.array_equal(reports["attribute"], chosen)
        for mine, reference in zip(reports["reports"], masked, strict=True):
            assert np.array_equal(mine, reference)
    rows = mechanism.randomize_rows(records, np.random.default_rng(11), np.uint8)
    reference = mechanism.report_rows(reports)
    assert rows.dtype == np.uint8
    assert np.array_equal(rows, reference)
    assert np.array_equal(mechanism.aggregate(reports),
                          mechanism.aggregate(mechanism.randomize(records,
                                                                  np.random.default_rng(11))))
