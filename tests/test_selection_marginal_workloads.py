"""The marginal strategies as candidates of "auto" on workloads of marginals, at any size."""

import numpy as np
import pandas as pd
import pytest
from _stats import replicated_statistics

from sklearn_ldp import LDPEncoder, MarginalEstimator, workloads
from sklearn_ldp._glue import marginal_error_table
from sklearn_ldp.mechanisms.marginals.base import (
    MARGINAL_STRATEGIES,
    MarginalMechanism,
    build_marginal_mechanism,
)
from sklearn_ldp.selection.baselines import baseline_mechanism, report_bytes, variances
from sklearn_ldp.selection.local import ONE_WAY_JOINT_MAX_CELLS, build_mechanism
from sklearn_ldp.selection.marginal_workloads import (
    MARGINAL_CANDIDATES,
    marginal_sets,
    marginal_workload_variance,
    score_marginal_strategies,
)
from sklearn_ldp.workloads import Stack


def _domain(shape):
    return {f"c{j}": list(range(size)) for j, size in enumerate(shape)}


def test_marginal_sets_recognizes_marginals_and_their_weights():
    dom = _domain((2, 3, 4))
    assert marginal_sets(workloads.marginals(dom, k=2), (2, 3, 4)) == [
        ((0, 1), 1.0), ((0, 2), 1.0), ((1, 2), 1.0)]
    explicit = workloads.marginals(dom, attributes=["c2", ("c0", "c1")])
    assert marginal_sets(explicit, (2, 3, 4)) == [((2,), 1.0), ((0, 1), 1.0)]
    weighted = Stack([workloads.marginals(dom, attributes=[("c0", "c2")]),
                      workloads.marginals(dom, attributes=[("c1",)])], weights=[2.0, 0.5])
    assert marginal_sets(weighted, (2, 3, 4)) == [((0, 2), 2.0), ((1,), 0.5)]
    assert marginal_sets(workloads.marginals(dom, attributes=[("c0", "c1", "c2")]),
                         (2, 3, 4)) == [((0, 1, 2), 1.0)]
    for other in (workloads.prefix(24), workloads.range_marginals(dom, k=1),
                  workloads.marginals(dom, k=0), workloads.all_range(24)):
        assert marginal_sets(other, (2, 3, 4)) is None


# inp_ps and inp_rr decode through their frequency oracle summed over each marginal's cells
# (a linear decoder): their closed-form score is the dense scoring of the same oracle.
@pytest.mark.parametrize("shape, k", [((2, 3, 4), 2), ((3, 3, 2, 2), 2), ((2, 5, 3), 3),
                                      ((4, 3, 2), 1)])
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_linear_decoders_match_the_dense_scoring_exactly(shape, k, epsilon):
    workload = workloads.marginals(_domain(shape), k=k)
    sets = marginal_sets(workload, shape)
    for marginal, oracle in (("inp_ps", "randomized_response"), ("inp_rr", "rappor")):
        mechanism = build_marginal_mechanism(marginal, shape, epsilon, k)
        dense = variances(baseline_mechanism(oracle, shape, epsilon), workload.gram())
        np.testing.assert_allclose(marginal_workload_variance(mechanism, sets), dense,
                                   rtol=1e-9)


def test_weights_enter_squared():
    shape, dom = (3, 4, 2), _domain((3, 4, 2))
    mechanism = build_marginal_mechanism("marg_ps", shape, 1.0, 2)
    one = marginal_workload_variance(mechanism, [((0, 1), 1.0)])
    scaled = marginal_workload_variance(mechanism, [((0, 1), 3.0)])
    np.testing.assert_allclose(scaled, 9.0 * np.asarray(one), rtol=1e-12)
    both = marginal_workload_variance(mechanism, marginal_sets(Stack(
        [workloads.marginals(dom, attributes=[("c0", "c1")]),
         workloads.marginals(dom, attributes=[("c1", "c2")])], weights=[3.0, 1.0]), shape))
    other = marginal_workload_variance(mechanism, [((1, 2), 1.0)])
    np.testing.assert_allclose(both[1], scaled[1] + other[1], rtol=1e-12)


@pytest.mark.parametrize("name", MARGINAL_CANDIDATES)
def test_score_is_the_sum_of_the_estimators_predicted_table_errors(name):
    # MarginalEstimator's data-independent prediction (uniform data) of every 2-way table,
    # summed over the workload's tables: the candidate's average case.
    shape = (3, 5, 4)
    mechanism = build_marginal_mechanism(name, shape, 1.0, 2)
    table = marginal_error_table(mechanism, [0, 1, 2])
    expected = table.loc[[key for key in table.index if len(key) == 2],
                         "per_user_variance"].sum()
    sets = marginal_sets(workloads.marginals(_domain(shape), k=2), shape)
    worst, average = marginal_workload_variance(mechanism, sets)
    np.testing.assert_allclose(average, expected, rtol=1e-9)
    assert worst >= average


def test_inp_em_is_not_a_candidate():
    assert set(MARGINAL_CANDIDATES) == set(MARGINAL_STRATEGIES) - {"inp_em"}


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_auto_picks_a_marginal_strategy_past_the_dense_limit(epsilon):
    # 2-way marginals of 6 x 9 x 12 = 648 cells (the dense marginal matrices are not scored
    # by "auto" there): a marginal strategy wins by more than 2x over every joint oracle.
    shape = (6, 9, 12)
    mechanism, report = build_mechanism("auto", shape, epsilon,
                                        workload=workloads.marginals(_domain(shape), k=2))
    assert isinstance(mechanism, MarginalMechanism) and mechanism.max_order == 2
    rows = report["selection"]
    assert report["chosen"] in MARGINAL_CANDIDATES and rows[report["chosen"]]["status"] == "chosen"
    joint = min(row["worst_case"] for key, row in rows.items()
                if key not in MARGINAL_CANDIDATES and row["status"] == "scored")
    assert joint > 2.0 * rows[report["chosen"]]["worst_case"]
    assert report["expected_error"]["worst_case"] == rows[report["chosen"]]["worst_case"]


def test_auto_scores_marginal_strategies_on_domains_too_large_for_joint_candidates():
    shape = (20, 30, 40, 50)  # 1.2 million cells
    assert np.prod(shape) > ONE_WAY_JOINT_MAX_CELLS
    mechanism, report = build_mechanism("auto", shape, 1.0,
                                        workload=workloads.marginals(_domain(shape), k=2))
    assert report["chosen"] in MARGINAL_CANDIDATES
    assert report["selection"]["olh"]["status"] == "skipped"
    assert "marginal strategies" in report["selection"]["olh"]["reason"]
    # inp_ps and inp_rr randomize the whole record over the joint domain.
    for name in ("inp_ps", "inp_rr"):
        assert report["selection"][name]["status"] == "skipped"
        assert "whole record" in report["selection"][name]["reason"]


def test_report_size_limit_applies_to_marginal_candidates():
    shape = (6, 9, 12)
    workload = workloads.marginals(_domain(shape), k=2)
    rows, mechanisms, oversized = score_marginal_strategies(
        shape, 1.0, marginal_sets(workload, shape), report_bytes, max_report_bytes=2)
    assert set(oversized) == {"marg_rr", "inp_rr"} and not set(oversized) & set(mechanisms)
    assert all(rows[name]["status"] == "skipped" for name in oversized)


def test_optimized_is_never_worse_than_auto_on_marginals():
    shape = (2, 3, 4)
    workload = workloads.marginals(_domain(shape), k=2)
    _, auto = build_mechanism("auto", shape, 1.0, workload=workload, max_iter=5,
                              random_state=0)
    _, optimized = build_mechanism("optimized", shape, 1.0, workload=workload, max_iter=5,
                                   random_state=0)
    assert (optimized["expected_error"]["worst_case"]
            <= auto["expected_error"]["worst_case"] * (1 + 1e-9))
    assert set(MARGINAL_CANDIDATES) <= set(optimized["selection"])


def test_one_way_marginals_keep_the_protocols():
    # Marginals of one column each: SPL, SMP and RS+FD answer them (the same randomizers).
    shape = (3, 4, 5)
    _, report = build_mechanism("auto", shape, 1.0,
                                workload=workloads.marginals(_domain(shape), k=1),
                                multi_attribute=True)
    assert not set(MARGINAL_CANDIDATES) & set(report["selection"])


@pytest.mark.parametrize("name", ["marg_rr", "marg_ps", "marg_ht", "inp_ht"])
def test_score_is_the_measured_error_of_the_decoded_tables(name):
    # Every user in one cell (a point mass: the data of the worst case for these shapes):
    # the workload's summed squared count error over N, averaged over replications, is the
    # score within 5 standard errors of that average (estimated from the replications).
    shape, n_users, replications = (3, 4, 2), 4000, 300
    sets = marginal_sets(workloads.marginals(_domain(shape), k=2), shape)
    mechanism = build_marginal_mechanism(name, shape, 1.0, 2)
    users = np.zeros(n_users, dtype=np.int64)
    statistics = replicated_statistics(mechanism, users, replications,
                                       np.random.default_rng(7))
    totals = np.zeros(replications)
    for attributes, weight in sets:
        truth = np.zeros(mechanism.marginal_shape(attributes))
        truth.flat[0] = 1.0
        for index, statistic in enumerate(statistics):
            error = n_users * (mechanism.estimate_marginal(statistic, attributes) - truth)
            totals[index] += weight**2 * np.sum(error**2) / n_users
    _, _, point = zip(*(mechanism.total_variance(attributes, n_users)
                        for attributes, _ in sets), strict=True)
    expected = n_users * sum(point)
    assert abs(totals.mean() - expected) <= 5 * totals.std(ddof=1) / np.sqrt(replications), (
        totals.mean(), expected)


def test_encoder_picks_and_decodes_a_marginal_strategy_over_2e10_cells():
    # 8 columns of 20 values: 2.56e10 joint cells, never materialized.
    domain = {f"c{j}": [f"v{i}" for i in range(20)] for j in range(8)}
    rng = np.random.default_rng(0)
    records = pd.DataFrame({column: rng.choice(values, 300) for column, values in domain.items()})
    encoder = LDPEncoder(categories=domain, epsilon=1.0,
                         workload=workloads.marginals(domain, k=2), random_state=0).fit()
    assert encoder.strategy_ in MARGINAL_CANDIDATES
    assert encoder.selection_.loc["inp_ps", "status"] == "skipped"
    estimator = MarginalEstimator(postprocess="none").fit(encoder.transform(records))
    assert len([key for key in estimator.marginals_ if len(key) == 2]) == 28
