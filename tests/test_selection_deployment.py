"""Deployment-aware selection: report sizes, lower bounds before work, decodable picks.

``"auto"`` (and ``"optimized"``) leave out candidates whose reports exceed
``max_report_bytes``, record each candidate's bytes a user in ``selection_``, skip a costly
candidate whose lower bound already loses, and pick only strategies that the estimator
paired with the workload (docs/which_estimator.md) decodes.
"""

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sklearn_ldp import (
    AttributeHistogramEstimator,
    LDPEncoder,
    MarginalEstimator,
    WorkloadEstimator,
    workloads,
)
from sklearn_ldp.mechanisms._base.rows import empty_reports
from sklearn_ldp.mechanisms.factorization.mechanism import FactorizationMechanism
from sklearn_ldp.mechanisms.marginals.base import MARGINAL_STRATEGIES
from sklearn_ldp.mechanisms.marginals.fourier import fourier_strategy
from sklearn_ldp.selection import (
    BASELINES,
    DEFAULT_MAX_REPORT_BYTES,
    FACTORIZATION_BASELINES,
    SELECTION_COLUMNS,
    baseline_mechanism,
    build_mechanism,
    candidate_list,
    check_max_report_bytes,
    lower_bound,
    report_bytes,
    workload_eigenpairs,
)
from sklearn_ldp.selection.baselines import least_marginal_order, variances


# ---------------------------------------------------------------- report sizes
@pytest.mark.parametrize("n", [2, 7, 16, 255, 256, 1000, 5000])
def test_report_bytes_is_the_row_the_mechanism_produces(n):
    # The closed form of the packed bitmaps and the probe of the others: both the width
    # times the item size of one sampled report row.
    for name in BASELINES:
        if n > 256 and name in FACTORIZATION_BASELINES:
            continue
        mechanism = baseline_mechanism(name, (n,), 1.0)
        rows = mechanism.randomize(np.arange(3) % n, np.random.default_rng(0))
        assert report_bytes(mechanism) == rows.nbytes // 3, name
        empty = empty_reports(mechanism)
        assert report_bytes(mechanism) == empty.dtype.itemsize * int(np.prod(empty.shape[1:]))


@pytest.mark.parametrize("strategy", ["olh", "hadamard", "oue", "hierarchical", "haar"])
def test_report_bytes_is_what_transform_sends(strategy):
    encoder = LDPEncoder(categories={"x": list(range(300))}, strategy=strategy, epsilon=1.0,
                         random_state=0).fit()
    reports = encoder.transform(pd.DataFrame({"x": [0, 5, 299]}))
    row_bytes = np.asarray(reports.reports).nbytes // 3
    assert encoder.selection_.loc[strategy, "report_bytes"] == row_bytes


def test_protocol_report_bytes_are_the_encoder_rows():
    dom = {"a": list(range(4)), "b": list(range(300)), "c": list(range(5))}
    for protocol, oracle in [("spl", "grr"), ("smp", "oue"), ("rsfd", "oue_z")]:
        encoder = LDPEncoder(categories=dom, strategy=protocol, oracle=oracle, epsilon=1.0,
                             random_state=0).fit()
        reports = encoder.transform(pd.DataFrame({"a": [0, 1], "b": [7, 8], "c": [2, 3]}))
        mechanism = encoder.mechanism_.parts[0].mechanism
        assert report_bytes(mechanism) == np.asarray(reports.reports).nbytes // 2


def test_auto_on_a_large_histogram_picks_a_small_report():
    # Unary encodings and subset selection (128 KiB a user) are left out before being built.
    mechanism, report = build_mechanism("auto", (2**20,), 1.0)
    assert report["report_bytes"] <= 64
    assert report["chosen"] == "olh"
    rows = report["selection"]
    for name in ("rappor", "oue", "subset_selection"):
        assert rows[name]["status"] == "skipped"
        assert rows[name]["report_bytes"] == 2**17
        assert "max_report_bytes=1024" in rows[name]["reason"]
    for row in rows.values():
        assert set(row) == set(SELECTION_COLUMNS)


def test_no_limit_brings_back_the_large_reports():
    _, capped = build_mechanism("auto", (2**13 + 8,), 1.0)
    _, free = build_mechanism("auto", (2**13 + 8,), 1.0, max_report_bytes=None)
    assert capped["report_bytes"] <= DEFAULT_MAX_REPORT_BYTES
    assert free["chosen"] in ("oue", "subset_selection", "rappor")
    assert free["selection"][free["chosen"]]["worst_case"] <= \
        capped["selection"][capped["chosen"]]["worst_case"]


def test_selection_frame_lists_bytes_and_bounds():
    encoder = LDPEncoder(categories={"x": list(range(20_000))}, epsilon=1.0,
                         workload="prefix", random_state=0).fit()
    frame = encoder.selection_
    assert list(frame.columns) == SELECTION_COLUMNS
    assert frame.loc[encoder.strategy_, "report_bytes"] <= DEFAULT_MAX_REPORT_BYTES
    assert frame.loc["oue", "status"] == "skipped"
    assert frame.loc["oue", "report_bytes"] == 2500


# ---------------------------------------------------------------- bounds before work
@pytest.mark.parametrize("make", [workloads.prefix, workloads.all_range])
@pytest.mark.parametrize("n, epsilon", [(37, 0.5), (256, 1.0), (1000, 4.0)])
def test_lower_bound_never_exceeds_the_worst_case(make, n, epsilon):
    gram = make(n).gram()
    for top in (1, 3):
        pairs = workload_eigenpairs(gram, top=top)
        for name in ("olh", "hrr", "hadamard", "oue", "randomized_response", "haar",
                     "hierarchical"):
            mechanism = baseline_mechanism(name, (n,), epsilon)
            worst = variances(mechanism, gram)[0]
            assert lower_bound(mechanism, pairs) <= worst * (1 + 1e-9), (name, top)


def test_eigenpairs_are_the_gram_s_largest():
    gram = workloads.prefix(50).gram()
    values, vectors = workload_eigenpairs(gram, top=3)
    dense = gram.toarray()
    exact = np.linalg.eigvalsh(dense)[::-1][:3]
    assert np.allclose(values, exact)
    assert np.allclose(dense @ vectors.T, vectors.T * values)
    assert workload_eigenpairs(workloads.histogram(50).gram()) is None


def test_hadamard_is_skipped_on_a_long_prefix_with_its_bound():
    n = 525_600
    mechanism, report = build_mechanism("auto", (n,), 1.0, workload=workloads.prefix(n))
    rows = report["selection"]
    best = rows[report["chosen"]]["worst_case"]
    assert report["chosen"] == "haar"
    assert rows["hadamard"]["status"] == "skipped"
    assert rows["hadamard"]["lower_bound"] > best
    assert "lower bound" in rows["hadamard"]["reason"]


def test_a_skipped_candidate_would_have_lost():
    # Where scoring everything is cheap, the bound skips only candidates that lose.
    n = 4096
    _, report = build_mechanism("auto", (n,), 1.0, workload=workloads.prefix(n))
    hadamard = baseline_mechanism("hadamard", (n,), 1.0)
    worst = variances(hadamard, workloads.prefix(n).gram())[0]
    assert report["selection"]["hadamard"]["status"] == "skipped"
    assert worst > report["selection"][report["chosen"]]["worst_case"]


def test_candidate_list_covers_every_baseline_once():
    names = [name for name, _ in candidate_list(lambda name: name)]
    assert sorted(names) == sorted(BASELINES)
    assert [build() for _, build in candidate_list(lambda name: name)] == names


# ---------------------------------------------------------------- every pick decodable
DOMAIN = {"carrier": [f"c{i}" for i in range(6)], "origin": [f"o{i}" for i in range(9)],
          "month": list(range(12))}


def _decode(encoder, records):
    reports = encoder.transform(records)
    if encoder.strategy_ in ("spl", "smp", "rsfd"):
        estimator = AttributeHistogramEstimator().fit(reports)
        assert set(estimator.histograms_) == set(records.columns)
    elif encoder.strategy_ in MARGINAL_STRATEGIES:
        # Every marginal the workload asks for, as a table of the estimator.
        estimator = MarginalEstimator(postprocess="none").fit(reports)
        wanted = {tuple(label.split("=")[0] for label in query.split(" & "))
                  for query in encoder.workload_.labels}
        assert wanted <= set(estimator.marginals_)
        assert all(np.all(np.isfinite(table)) for table in estimator.marginals_.values())
    else:
        estimator = WorkloadEstimator().fit(reports)
        assert np.all(np.isfinite(estimator.answers_))
    return estimator


def _records(domain, size, rng):
    return pd.DataFrame({column: rng.choice(values, size) for column, values in domain.items()})


@pytest.mark.parametrize("n", [8, 64, 300, 1500])
@pytest.mark.parametrize("kind", ["histogram", "prefix", "all_range"])
def test_auto_pick_is_decoded_by_the_paired_estimator_one_column(kind, n):
    domain = {"x": list(range(n))}
    encoder = LDPEncoder(categories=domain, epsilon=1.0, workload=kind, random_state=0).fit()
    assert encoder.selection_.loc[encoder.strategy_, "report_bytes"] <= DEFAULT_MAX_REPORT_BYTES
    _decode(encoder, _records(domain, 200, np.random.default_rng(n)))


@pytest.mark.parametrize("sizes", [(2, 3, 4), (4, 6, 12), (6, 9, 12), (12, 30, 12),
                                   (40, 60, 48, 12)])
@pytest.mark.parametrize("k", [1, 2])
def test_auto_pick_is_decoded_by_the_paired_estimator_marginals(sizes, k):
    columns = {**DOMAIN, "day": list(range(60))}
    domain = {column: [f"{column}{i}" for i in range(size)] for column, size in
              zip(columns, sizes, strict=False)}
    encoder = LDPEncoder(categories=domain, epsilon=1.0,
                         workload=workloads.marginals(domain, k=k), random_state=0).fit()
    _decode(encoder, _records(domain, 200, np.random.default_rng(k)))


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("value", [0, -1, 1.5, "64", True, np.float64(8.0), [64]])
def test_bad_max_report_bytes_is_refused_naming_the_value(value):
    with pytest.raises(ValueError, match="max_report_bytes") as info:
        build_mechanism("auto", (16,), 1.0, max_report_bytes=value)
    assert repr(value) in str(info.value)
    with pytest.raises(ValueError, match="max_report_bytes"):
        LDPEncoder(categories={"x": list(range(16))}, max_report_bytes=value).fit()


@settings(max_examples=40, deadline=2000)
@given(st.one_of(st.integers(), st.floats(allow_nan=True), st.text(max_size=3), st.booleans(),
                 st.none()))
def test_check_max_report_bytes_property(value):
    if value is None or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
        assert check_max_report_bytes(value) == value
    else:
        with pytest.raises(ValueError, match="max_report_bytes") as info:
            check_max_report_bytes(value)
        assert repr(value) in str(info.value)


@pytest.mark.parametrize("n, workload", [(1024, None), (600, "prefix"), (70_000, None)])
def test_a_limit_no_candidate_meets_names_the_smallest_feasible(n, workload):
    with pytest.raises(ValueError, match="smallest reports that do take") as info:
        build_mechanism("auto", (n,), 1.0, max_report_bytes=1,
                        workload=None if workload is None else workloads.prefix(n))
    smallest = int(str(info.value).split("pass max_report_bytes=")[1].split(" ")[0])
    _, report = build_mechanism("auto", (n,), 1.0, max_report_bytes=smallest,
                                workload=None if workload is None else workloads.prefix(n))
    assert report["report_bytes"] == smallest


def test_encoder_limit_no_candidate_meets_is_a_value_error():
    with pytest.raises(ValueError, match="pass max_report_bytes=2 or more"):
        LDPEncoder(categories={"x": list(range(1024))}, max_report_bytes=1).fit()


def test_named_strategy_ignores_the_limit_and_records_its_size():
    encoder = LDPEncoder(categories={"x": list(range(20_000))}, strategy="oue",
                         random_state=0).fit()
    assert encoder.selection_.loc["oue", "report_bytes"] == 2500


@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2), (2, 2, 2, 2), (3, 2, 4)])
def test_least_marginal_order_is_the_least_fourier_order_that_answers(shape):
    domain = {f"c{i}": list(range(size)) for i, size in enumerate(shape)}
    cases = [workloads.marginals(domain, k=k) for k in range(1, len(shape) + 1)]
    cases += [workloads.histogram(domain), workloads.prefix(int(np.prod(shape))),
              workloads.marginals(domain, attributes=["c0", ("c0", "c1")])]
    for workload in cases:
        expected = next(order for order in range(1, len(shape) + 1)
                        if order == len(shape) or FactorizationMechanism(
                            fourier_strategy(shape, 1.0, order), 1.0).supports(workload))
        assert least_marginal_order(shape, 1.0, workload) == expected
    assert least_marginal_order(shape, 1.0, None) == len(shape)


def _record_encoder(**params):
    # A numeric column beside: the categorical columns' histograms are compared by the
    # encoder (one oracle per column, or SPL, SMP, RS+FD), not by build_mechanism.
    dom = {"a": list(range(4)), "b": list(range(3000)), "c": list(range(50))}
    return LDPEncoder(categories=dom, bounds={"x": (0, 10)}, strategy="auto", epsilon=2.0,
                      workload=workloads.marginals(dom, k=1), random_state=0, **params)


def test_records_of_categorical_columns_record_and_limit_report_bytes():
    table = _record_encoder().fit().selection_
    assert table["report_bytes"].notna().all(), table
    assert table.loc["per_column", "report_bytes"] == 1 + 375 + 7  # RR, OUE, OUE
    # A limit between the sizes: the larger candidates are skipped, never chosen.
    limit = 300
    small = _record_encoder(max_report_bytes=limit).fit().selection_
    over = small["report_bytes"] > limit
    assert over.any() and (small.loc[over, "status"] == "skipped").all()
    assert (small.loc[~over, "status"] != "skipped").all()
    assert small.loc[small["status"] == "chosen", "report_bytes"].iloc[0] <= limit
    # The per-column oracle of the 3000 categories is then HRR (OUE would take 375 bytes).
    assert "hrr" in small.loc["per_column", "reason"]


def test_records_of_categorical_columns_name_the_smallest_report():
    table = _record_encoder(max_report_bytes=None).fit().selection_
    smallest = int(table["report_bytes"].min())
    with pytest.raises(ValueError, match=f"max_report_bytes={smallest} or more"):
        _record_encoder(max_report_bytes=smallest - 1).fit()
