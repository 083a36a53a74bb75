"""Property-based fuzzing of everything that crosses a trust boundary (DESIGN.md section 7).

Every case must end in one of three ways: accepted (and then harmless: a spec that loads is
as private as it claims), ``ValueError`` or ``TypeError`` naming the problem. Any other
exception (``KeyError``, ``IndexError``, ``JSONDecodeError``, ``BadZipFile``, numpy's
``_ArrayMemoryError``...) escaping is a failure, and so is a case that runs longer than
``_fuzzing.CASE_SECONDS`` (a SIGALRM timer turns a hang into a failure instead of stalling the
suite).

How many cases each property tries is set by ``FUZZ_EXAMPLES`` (hypothesis's
``max_examples``); ``SKLEARN_LDP_FUZZ_EXAMPLES`` in the environment raises it for a long run.
"""

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _fuzzing import FUZZ, CaseTimeout, mutate, outcome, time_limit
from hypothesis import given
from hypothesis import strategies as st

import sklearn_ldp.deploy.client as client_module
from sklearn_ldp import LDPEncoder, workloads
from sklearn_ldp.deploy.budget import PrivacyLedger
from sklearn_ldp.deploy.io import read_reports, write_reports
from sklearn_ldp.domain import Domain
from sklearn_ldp.mechanisms._base.mechanism import (
    _REGISTRY,
    mechanism_from_dict,
    mechanism_from_json,
)
from sklearn_ldp.reports import AggregatedReports, LDPReports
from sklearn_ldp.workloads.spec import workload_from_spec

FUZZ_EXAMPLES = FUZZ.max_examples


# ---------------------------------------------------------------- value strategies
scalars = st.one_of(
    st.none(), st.booleans(),
    st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
small_lists = st.lists(scalars, max_size=6)
json_values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)),
    max_leaves=12)
sizes = st.one_of(st.integers(min_value=-3, max_value=40),
                  st.sampled_from([0, 2**20, 2**24 + 1, 2**31, 10**12, 2**63, 2**64]),
                  st.floats(allow_nan=True), st.text(max_size=4), st.none())
epsilons = st.one_of(st.floats(min_value=-1, max_value=60), st.sampled_from(
    [0.0, -0.0, math.nan, math.inf, 1e-300, 1e300]), st.text(max_size=3), st.none(),
    st.integers(min_value=-5, max_value=5))
KINDS = sorted(_REGISTRY)
PARAM_NAMES = ["n_buckets", "hash_family", "branching", "oracle", "olh_hash", "matrix",
               "strategy", "k", "delta", "sigma", "shape", "max_order", "order", "attributes",
               "workload", "sensitivity", "radius", "norms", "n_outputs", "bits"]


def spec_dicts():
    params = st.dictionaries(st.sampled_from(PARAM_NAMES), json_values, max_size=3)
    return st.fixed_dictionaries({
        "version": st.one_of(st.just(1), scalars),
        "mechanism": st.one_of(st.sampled_from(KINDS), st.text(max_size=6)),
        "epsilon": epsilons,
        "n_inputs": sizes,
        "params": st.one_of(params, scalars),
    })


def _realized_epsilon(mechanism):
    """``max log(Q[y, u] / Q[y, u'])`` of a small mechanism's strategy matrix, else None."""
    if mechanism.n_inputs > 64:
        return None
    try:
        Q = np.asarray(mechanism.strategy_matrix(), dtype=float)
    except (ValueError, NotImplementedError):
        return None
    if Q.size > 2**16:
        return None
    rows = Q[Q.max(axis=1) > 0]
    if np.any(rows.min(axis=1) <= 0):
        return math.inf
    return float(np.max(np.log(rows.max(axis=1) / rows.min(axis=1))))


# ---------------------------------------------------------------- specs (server side)
@FUZZ
@given(spec=spec_dicts())
def test_fuzz_mechanism_specs(spec):
    mechanism = outcome(mechanism_from_dict, spec)
    if mechanism is None:
        return
    realized = outcome(_realized_epsilon, mechanism)
    if realized is not None:
        assert realized <= mechanism.epsilon * (1 + 1e-9) + 1e-12, (spec, realized)


def _valid_specs():
    from sklearn_ldp.mechanisms import (
        HadamardResponse,
        HierarchicalHistogram,
        OptimizedLocalHashing,
        OptimizedUnaryEncoding,
        RandomizedResponse,
    )

    return [m.to_dict() for m in (RandomizedResponse(5, 1.0), OptimizedUnaryEncoding(9, 0.5),
                                  OptimizedLocalHashing(3000, 2.0), HadamardResponse(12, 1.0),
                                  HierarchicalHistogram(20, 1.0, oracle="olh"))]


@FUZZ
@given(data=st.data())
def test_fuzz_edited_valid_specs(data):
    spec = data.draw(st.sampled_from(_valid_specs()))
    edited = mutate(spec, data, json_values)
    mechanism = outcome(mechanism_from_dict, edited)
    if mechanism is not None:
        realized = outcome(_realized_epsilon, mechanism)
        if realized is not None:
            assert realized <= mechanism.epsilon * (1 + 1e-9) + 1e-12
    text = json.dumps(edited, allow_nan=True)
    outcome(mechanism_from_json, text)
    outcome(client_module.Randomizer, edited, seed=None)


@FUZZ
@given(text=st.one_of(st.text(max_size=60), st.binary(max_size=60).map(
    lambda b: b.decode("latin-1"))))
def test_fuzz_spec_json_text(text):
    outcome(mechanism_from_json, text)
    outcome(client_module.Randomizer.from_json, text)


# ---------------------------------------------------------------- specs (client side)
@FUZZ
@given(spec=spec_dicts())
def test_fuzz_client_specs(spec):
    randomizer = outcome(client_module.Randomizer, spec)
    if randomizer is not None:
        outcome(randomizer.privatize, 0)


# ---------------------------------------------------------------- domains and workloads
@FUZZ
@given(columns=st.dictionaries(st.one_of(st.text(max_size=4), st.integers()),
                               st.one_of(small_lists, scalars, st.just(range(3))),
                               max_size=3))
def test_fuzz_domains(columns):
    outcome(Domain, columns)


@FUZZ
@given(bounds=st.lists(st.tuples(scalars, scalars), max_size=5))
def test_fuzz_range_workloads(bounds):
    domain = Domain({"t": list(range(10))})
    outcome(workloads.ranges, domain, bounds)


@FUZZ
@given(spec=json_values, arrays=st.dictionaries(st.text(max_size=5), st.lists(
    st.integers(-5, 50), max_size=5).map(np.array), max_size=3))
def test_fuzz_workload_specs(spec, arrays):
    outcome(workload_from_spec, spec, arrays)


# ---------------------------------------------------------------- reports and aggregates
def _mechanisms():
    from sklearn_ldp.mechanisms import (
        HadamardRandomizedResponse,
        OptimizedLocalHashing,
        OptimizedUnaryEncoding,
        RandomizedResponse,
    )

    return [RandomizedResponse(6, 1.0), OptimizedUnaryEncoding(10, 1.0),
            OptimizedLocalHashing(3000, 1.0), HadamardRandomizedResponse(8, 1.0)]


report_arrays = st.one_of(
    st.lists(st.integers(-2**65, 2**65), max_size=8).map(lambda v: np.array(v, dtype=object)),
    st.lists(st.integers(-2**63, 2**63 - 1), max_size=8).map(np.array),
    st.lists(st.floats(allow_nan=True), max_size=8).map(np.array),
    st.lists(st.lists(st.integers(0, 2**64 - 1), min_size=2, max_size=3), max_size=5).map(
        lambda rows: np.array(rows, dtype=object)),
    st.lists(st.integers(0, 255), max_size=12).map(lambda v: np.array(v, dtype=np.uint8)),
    st.lists(st.text(max_size=3), max_size=4).map(np.array),
)


@FUZZ
@given(index=st.integers(0, 3), reports=report_arrays)
def test_fuzz_reports(index, reports):
    mechanism = _mechanisms()[index]
    built = outcome(LDPReports, reports, mechanism)
    if built is not None:
        outcome(built.aggregate)


@FUZZ
@given(index=st.integers(0, 3), statistic=report_arrays)
def test_fuzz_aggregates(index, statistic):
    mechanism = _mechanisms()[index]
    aggregated = outcome(AggregatedReports, statistic, mechanism)
    if aggregated is not None:
        counts = np.asarray(aggregated.statistic)
        assert counts.dtype.kind in "iuf" and np.all(counts >= 0)
        outcome(mechanism.estimate, counts)


@FUZZ
@given(values=st.lists(st.one_of(scalars, st.lists(scalars, max_size=3)), max_size=6))
def test_fuzz_client_report_lists(values):
    from sklearn_ldp.deploy.collect import reports_from_client

    for mechanism in _mechanisms():
        outcome(reports_from_client, values, mechanism)


# ---------------------------------------------------------------- files
def _saved_files(directory):
    mechanism = _mechanisms()[0]
    reports = LDPReports(mechanism.randomize(np.arange(6).repeat(3),
                                             np.random.default_rng(0)), mechanism)
    paths = {"npz": directory / "reports.npz", "agg": directory / "aggregate.npz",
             "csv": directory / "reports.csv", "ledger": directory / "ledger.json"}
    reports.save(paths["npz"])
    reports.aggregate().save(paths["agg"])
    write_reports(reports, paths["csv"])
    PrivacyLedger.create(paths["ledger"], total_epsilon=4.0)
    return paths


LOADERS = {
    "npz": LDPReports.load,
    "agg": AggregatedReports.load,
    "csv": read_reports,
    "ledger": PrivacyLedger.open,
}


@FUZZ
@given(data=st.data())
def test_fuzz_edited_files(tmp_path_factory, data):
    directory = tmp_path_factory.mktemp("fuzz")
    paths = _saved_files(directory)
    kind = data.draw(st.sampled_from(sorted(paths)))
    path = paths[kind]
    content = bytearray(path.read_bytes())
    action = data.draw(st.sampled_from(["flip", "truncate", "insert", "replace"]))
    if action == "flip" and content:
        position = data.draw(st.integers(0, len(content) - 1))
        content[position] ^= data.draw(st.integers(1, 255))
    elif action == "truncate":
        del content[data.draw(st.integers(0, max(len(content) - 1, 0))):]
    elif action == "insert":
        position = data.draw(st.integers(0, len(content)))
        content[position:position] = data.draw(st.binary(min_size=1, max_size=8))
    else:
        content = bytearray(data.draw(st.binary(max_size=200)))
    original = _content(kind, LOADERS[kind](path))
    if bytes(content) == path.read_bytes():
        return
    path.write_bytes(bytes(content))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loaded = outcome(LOADERS[kind], path)
    # An edit is refused, or it touched only bytes that carry no content (zip headers the
    # reader does not use, say): what loads is then exactly what was saved.
    if loaded is not None:
        assert _content(kind, loaded) == original, (kind, action)


def _content(kind, loaded):
    """What a loaded file means, comparable with ``==``."""
    if kind == "ledger":
        return json.dumps(loaded.to_dict(), sort_keys=True)
    array = loaded.statistic if kind == "agg" else np.asarray(loaded)
    return (loaded.mechanism.fingerprint(), np.asarray(array).dtype.str,
            np.asarray(array).tobytes())


# ---------------------------------------------------------------- estimator parameters
@FUZZ
@given(strategy=st.one_of(st.sampled_from(["auto", "olh", "hrr", "hierarchical", "optimized",
                                           "randomized_response", "nonsense"]), scalars),
       epsilon=epsilons, frame=st.lists(st.sampled_from(["a", "b", "c", None, 1.5]),
                                        min_size=1, max_size=6))
def test_fuzz_encoder_parameters(strategy, epsilon, frame):
    encoder = LDPEncoder(categories={"x": ["a", "b", "c"]}, strategy=strategy, epsilon=epsilon,
                         random_state=0)
    data = pd.DataFrame({"x": frame})
    fitted = outcome(encoder.fit, data)
    if fitted is not None:
        outcome(fitted.transform, data)


def test_fuzz_suite_runs_enough_cases():
    # The notes quote how many inputs the suite tries: one per example and property.
    properties = [name for name in globals() if name.startswith("test_fuzz_")
                  and name != "test_fuzz_suite_runs_enough_cases"]
    assert len(properties) >= 12 and FUZZ_EXAMPLES >= 50
    with pytest.raises(CaseTimeout):
        with time_limit(0.05):
            while True:
                pass
