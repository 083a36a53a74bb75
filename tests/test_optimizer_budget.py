"""The optimizer keeps its time budget inside iterations, and ``"optimized"`` keeps its own.

Slow iterations are simulated by a sleep added to every objective evaluation (the work
itself is tiny), so the ratios wall time / budget measure the budget logic, not the load.
"""

import logging
import time

import numpy as np
import pytest

from sklearn_ldp import workloads
from sklearn_ldp.mechanisms.factorization.mechanism import FactorizationMechanism
from sklearn_ldp.optimize import ldp_factorization, optimize_strategy
from sklearn_ldp.selection import build_mechanism, local
from sklearn_ldp.selection.baselines import variances

# Seconds added to each objective value and gradient: an iteration of a large domain.
SLOW_EVALUATION = 0.4


@pytest.fixture
def slow_evaluations(monkeypatch):
    objective = ldp_factorization.AverageCaseObjective
    value, gradient = objective.value, objective.gradient

    def slow_value(self, Qt):
        time.sleep(SLOW_EVALUATION)
        return value(self, Qt)

    def slow_gradient(self, evaluation):
        time.sleep(SLOW_EVALUATION)
        return gradient(self, evaluation)

    monkeypatch.setattr(objective, "value", slow_value)
    monkeypatch.setattr(objective, "gradient", slow_gradient)


@pytest.mark.parametrize("budget", [2.0, 3.1])
def test_the_optimizer_ends_within_its_budget(slow_evaluations, budget):
    # An iteration costs at least 0.8 s here: checked only between iterations, the run
    # would end up to an iteration (and every backtrack) past the budget, 1.25x and more.
    began = time.perf_counter()
    result = optimize_strategy(workloads.prefix(16).gram().toarray(), 1.0, max_iter=1000,
                               max_seconds=budget, random_state=0)
    elapsed = time.perf_counter() - began
    assert elapsed <= 1.2 * budget, (elapsed, budget)
    assert result.stopped_by_budget and not result.converged
    assert result.n_iter >= 1 and result.history[-1]["seconds"] <= budget


def test_optimized_ends_within_its_budget_and_is_never_worse_than_auto(slow_evaluations):
    # 96 cells: auto compares the closed forms only (its optimizer runs up to 64 cells).
    workload = workloads.prefix(96)
    auto = build_mechanism("auto", (96,), 1.0, workload, random_state=0)[1]
    budget = 4.0
    began = time.perf_counter()
    _, report = build_mechanism("optimized", (96,), 1.0, workload, max_seconds=budget,
                                random_state=0)
    elapsed = time.perf_counter() - began
    assert elapsed <= 1.2 * budget, (elapsed, budget)
    assert report["stopped_by_budget"]
    assert report["expected_error"]["worst_case"] <= auto["expected_error"]["worst_case"]


def test_optimized_has_a_default_budget(slow_evaluations, monkeypatch):
    monkeypatch.setattr(local, "DEFAULT_MAX_SECONDS", 2.0)
    began = time.perf_counter()
    _, report = build_mechanism("optimized", (16,), 1.0, workloads.prefix(16),
                                random_state=0)
    assert time.perf_counter() - began <= 1.2 * 2.0 + 1.0  # + the closed forms' scoring
    assert report["stopped_by_budget"]
    assert ldp_factorization.DEFAULT_MAX_SECONDS == 30.0


def test_the_stop_is_logged(caplog):
    with caplog.at_level(logging.INFO, logger="sklearn_ldp"):
        optimize_strategy(np.eye(8), 1.0, max_iter=3, random_state=0, verbose=1)
    assert "reached max_iter=3 after 3 iterations" in caplog.text


def _short_budget_call(shape, workload, budget):
    """``(report, budget)`` of ``build_mechanism("optimized")`` with the least budget it
    accepts from ``budget`` on."""
    for _ in range(5):  # the machine is shared: a slower call may need a little more
        try:
            return build_mechanism("optimized", shape, 1.0, workload, max_seconds=budget,
                                   random_state=0)[1], budget
        except ValueError as error:
            assert "is too short" in str(error)
            budget = float(str(error).split("pass max_seconds=")[1].split(" ")[0])
    raise AssertionError(f"no budget accepted up to {budget}")


def test_past_256_cells_the_dense_closed_forms_wait_for_the_budget():
    # With the least budget that scores the cheapest candidate, the dense ones and the
    # optimizer are skipped by their predicted time.
    report, _ = _short_budget_call((300,), workloads.prefix(300), 1e-9)
    rows = report["selection"]
    for key in ("hierarchical_matrix", "fourier", "optimized"):
        assert rows[key]["status"] == "skipped" and "budget" in rows[key]["reason"], key
    assert rows["randomized_response"]["status"] in ("scored", "chosen")
    assert report["stopped_by_budget"] and report["n_iter"] == 0


def test_a_budget_no_candidate_fits_is_a_value_error_naming_the_least():
    with pytest.raises(ValueError, match=r"max_seconds=1e-09 is too short.*'randomized_"
                                         r"response'.*pass max_seconds=[0-9.e-]+ or more"):
        build_mechanism("optimized", (300,), 1.0, workloads.prefix(300), max_seconds=1e-9)


def test_optimized_keeps_a_budget_shorter_than_the_closed_forms_on_1260_cells():
    # The 1- and 2-way marginals of 105 x 12 cells. "auto" scores every structured closed
    # form (range mechanisms and Hadamard layouts: seconds here); "optimized" gets a third of
    # auto's time, scores cheapest first, skips what its predicted time does not fit
    # (RELATIVE_COSTS, dense units), and keeps the budget.
    domain = {"route": list(range(105)), "month": list(range(12))}
    workload = workloads.marginals(domain, attributes=["route", "month", ("route", "month")])
    began = time.perf_counter()
    auto = build_mechanism("auto", (105, 12), 1.0, workload, random_state=0)[1]
    budget = (time.perf_counter() - began) / 3.0
    began = time.perf_counter()
    report, budget = _short_budget_call((105, 12), workload, budget)
    elapsed = time.perf_counter() - began
    rows = report["selection"]
    assert elapsed <= 1.2 * budget, (elapsed, budget)
    assert any(row["status"] == "skipped" and "budget" in row["reason"] for row in rows.values())
    # Never worse than auto's pick when that was scored in the budget, nor than anything
    # it scored.
    chosen = report["expected_error"]["worst_case"]
    if rows[auto["chosen"]]["status"] != "skipped":
        assert chosen <= auto["expected_error"]["worst_case"] * (1 + 1e-9)
    assert all(chosen <= row["worst_case"] * (1 + 1e-9) for row in rows.values()
               if row["status"] == "scored")


def test_optimized_keeps_its_budget_on_1260_cells():
    # The 1- and 2-way marginals of 105 x 12 cells: the dense closed forms and the optimizer
    # start only when their predicted time fits, the least marginal order is one pass over
    # the Gram, and the optimizer's strategy is not re-scored (before: 58 s at 10 s).
    domain = {"route": list(range(105)), "month": list(range(12))}
    workload = workloads.marginals(domain, attributes=["route", "month", ("route", "month")])
    budget = 10.0
    began = time.perf_counter()
    _, report = build_mechanism("optimized", (105, 12), 1.0, workload, max_seconds=budget,
                                random_state=0)
    elapsed = time.perf_counter() - began
    assert elapsed <= 1.2 * budget + 2.0, elapsed  # + 2 s for the shared machine's load
    # Never worse than anything it scored, cheapest first (the oracles at least).
    rows = report["selection"]
    chosen = report["expected_error"]["worst_case"]
    for key in ("randomized_response", "oue", "olh", "subset_selection"):
        assert rows[key]["status"] in ("scored", "chosen"), key
    assert all(chosen <= row["worst_case"] * (1 + 1e-9) for row in rows.values()
               if row["status"] == "scored")


def test_the_optimizers_worst_case_is_its_mechanisms():
    # "optimized" takes the worst case of its strategy from the optimizer, not re-scored.
    gram = workloads.prefix(16).gram()
    result = optimize_strategy(np.asarray(gram.toarray()), 1.0, max_iter=30, random_state=0)
    worst, average = variances(FactorizationMechanism(result.Q, 1.0), gram)
    assert np.isclose(result.worst_case, worst, rtol=1e-8)
    assert np.isclose(result.average_case, average, rtol=1e-8)
