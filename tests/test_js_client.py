"""The JavaScript device client (``clients/js/``): its Node test suite, run with Node's own
runner (no npm install). Skipped where ``node`` is not on PATH; CI machines have Node 20."""

import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

CLIENT = pathlib.Path(__file__).resolve().parents[1] / "clients" / "js"
NODE = shutil.which("node")
requires_node = pytest.mark.skipif(
    NODE is None, reason="node is not on PATH (the JavaScript client's tests need Node >= 20)")


def _js_reports(script, spec):
    """The JSON reports, one a line, that the ES-module ``script`` prints for ``spec``
    (``process.argv[1]``), run from the client's folder."""
    run = subprocess.run([NODE, "--input-type=module", "-e", script, spec], cwd=CLIENT,
                         capture_output=True, text=True, timeout=120, check=True)
    return [json.loads(line) for line in run.stdout.splitlines()]


@requires_node
def test_node_suite_passes():
    # The suite checks its fixtures with this interpreter (make_fixtures.py --check).
    env = {**os.environ, "LDP_PYTHON": sys.executable}
    run = subprocess.run([NODE, "--test", "test/"], cwd=CLIENT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def _n_rows(stacked):
    """Reports in what stack_client_reports returned: an array, a tuple of arrays
    (sampled_mean, sketches) or a dict (multi_attribute)."""
    if isinstance(stacked, dict):  # SMP: the chosen attribute of each report; SPL, RS+FD:
        # every attribute's reports, one row per report.
        attribute = stacked["attribute"]
        return len(attribute) if attribute is not None else len(stacked["reports"][0])
    return len(stacked[0] if isinstance(stacked, tuple) else stacked)


SPECS = [
    '{"version": 1, "mechanism": "randomized_response", "epsilon": 1.0, "n_inputs": 5, '
    '"params": {}}',
    '{"version": 1, "mechanism": "rappor", "epsilon": 1.0, "n_inputs": 11, "params": {}}',
    '{"version": 1, "mechanism": "oue", "epsilon": 2.0, "n_inputs": 9, "params": {}}',
    '{"version": 1, "mechanism": "olh", "epsilon": 1.0, "n_inputs": 6, '
    '"params": {"n_buckets": 4}}',
    '{"version": 1, "mechanism": "olh", "epsilon": 2.0, "n_inputs": 5000, '
    '"params": {"n_buckets": 8, "hash_family": "linear"}}',
    '{"version": 1, "mechanism": "blh", "epsilon": 1.0, "n_inputs": 6, "params": {}}',
    '{"version": 1, "mechanism": "hadamard", "epsilon": 2.0, "n_inputs": 6, '
    '"params": {"n_blocks": 2, "block_size": 4, "hole": 1}}',
    '{"version": 1, "mechanism": "hrr", "epsilon": 1.0, "n_inputs": 6, "params": {}}',
    '{"version": 1, "mechanism": "subset_selection", "epsilon": 1.0, "n_inputs": 6, '
    '"params": {"subset_size": 2}}',
    '{"version": 1, "mechanism": "haar", "epsilon": 1.0, "n_inputs": 12, "params": {}}',
    '{"version": 1, "mechanism": "hierarchical", "epsilon": 1.0, "n_inputs": 20, '
    '"params": {"branching": 3, "oracle": "oue"}}',
    '{"version": 1, "mechanism": "hierarchical", "epsilon": 1.0, "n_inputs": 20, '
    '"params": {"branching": 2, "oracle": "olh", "olh_hash": "by_size"}}',
    '{"version": 1, "mechanism": "hierarchical", "epsilon": 2.0, "n_inputs": 20, '
    '"params": {"branching": 4, "oracle": "hrr"}}',
    *(f'{{"version": 1, "mechanism": "{kind}", "epsilon": 1.0, "n_inputs": 24, '
      '"params": {"shape": [3, 2, 4], "max_order": 2}}'
      for kind in ("inp_rr", "inp_ps", "inp_em", "inp_ht", "marg_rr", "marg_ps", "marg_ht")),
]

# Prints one JSON report per line for the spec in argv[1], values 0, 1, ... cycling.
_PRINT_REPORTS = """
import { Randomizer, reportToJSON } from "./src/index.js";
const randomizer = Randomizer.fromJSON(process.argv[1]);
const lines = [];
for (let i = 0; i < 500; i++) {
  lines.push(reportToJSON(randomizer.privatize(i % randomizer.nInputs)));
}
console.log(lines.join("\\n"));
"""


@requires_node
@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.split('"mechanism": ')[1].split(",")[0])
def test_server_accepts_the_reports(spec):
    from sklearn_ldp.deploy.collect import reports_from_client

    reports = _js_reports(_PRINT_REPORTS, spec)
    stacked = reports_from_client(reports, spec)  # invalid="raise": every report is valid
    assert stacked.shape[0] == 500 and stacked.n_invalid == 0


NUMERIC_SPECS = [
    ("duchi", {"epsilon": 1.0, "bounds": (0.0, 10.0)}),
    ("piecewise", {"epsilon": 2.0, "bounds": (-1.0, 1.0), "grid_size": 64}),
    ("hybrid", {"epsilon": 1.5, "bounds": (0.0, 10.0)}),
    ("square_wave", {"epsilon": 1.0, "bounds": (0.0, 10.0), "n_buckets": 8}),
    ("sampled_mean", {"epsilon": 1.0, "bounds": [(0.0, 10.0)] * 3, "n_sampled": 2}),
]

# Prints 300 JSON reports of values spread over the bounds, one a line.
_PRINT_NUMERIC = """
import { Randomizer, reportToJSON } from "./src/index.js";
const randomizer = Randomizer.fromJSON(process.argv[1]);
const spec = JSON.parse(process.argv[1]);
const [low, high] = spec.mechanism === "sampled_mean" ? spec.bounds[0] : spec.bounds;
const lines = [];
for (let i = 0; i < 300; i++) {
  const x = low + (high - low) * (i / 299);
  const value = spec.mechanism === "sampled_mean" ? spec.bounds.map(() => x) : x;
  lines.push(reportToJSON(randomizer.privatize(value)));
}
console.log(lines.join("\\n"));
"""


@requires_node
@pytest.mark.parametrize(("kind", "kwargs"), NUMERIC_SPECS, ids=[k for k, _ in NUMERIC_SPECS])
def test_server_accepts_the_numeric_reports(kind, kwargs):
    from sklearn_ldp.deploy.collect import stack_client_reports
    from sklearn_ldp.mechanisms.numeric.means import (
        DuchiMechanism,
        HybridMechanism,
        PiecewiseMechanism,
        SampledMeanMechanism,
    )
    from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism

    classes = {"duchi": DuchiMechanism, "piecewise": PiecewiseMechanism,
               "hybrid": HybridMechanism, "square_wave": SquareWaveMechanism,
               "sampled_mean": SampledMeanMechanism}
    mechanism = classes[kind](**kwargs)
    spec = json.dumps(mechanism.to_dict())
    reports = _js_reports(_PRINT_NUMERIC, spec)
    stacked = stack_client_reports(reports, spec)  # every report checked, none dropped
    assert _n_rows(stacked) == 300


@requires_node
@pytest.mark.parametrize("protocol", ["pem", "treehist"])
def test_server_accepts_the_heavy_hitter_reports(protocol):
    from sklearn_ldp.deploy.collect import stack_client_reports
    from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters

    mechanism = PrefixHeavyHitters(48, 2.0, protocol=protocol, n_candidates=8)
    spec = json.dumps(mechanism.to_dict())
    script = ('import { Randomizer, reportToJSON } from "./src/index.js";\n'
              'const r = Randomizer.fromJSON(process.argv[1]);\n'
              'const values = ["ab", "\u00e9t\u00e9", 7, 4294967295n];\n'
              'for (let i = 0; i < 200; i++) {\n'
              '  console.log(reportToJSON(r.privatize(values[i % 4])));\n'
              '}\n')
    reports = _js_reports(script, spec)
    stacked = stack_client_reports(reports, spec)  # every report checked, none dropped
    assert _n_rows(stacked) == 200


@requires_node
@pytest.mark.parametrize(("protocol", "oracle"), [("smp", "oue"), ("spl", "grr"),
                                                  ("rsfd", "oue_r")])
def test_server_accepts_the_multi_attribute_reports(protocol, oracle):
    from sklearn_ldp.deploy.collect import stack_client_reports
    from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism

    mechanism = MultiAttributeMechanism((3, 12, 2), 1.0, protocol=protocol, oracle=oracle)
    spec = json.dumps(mechanism.to_dict())
    script = ('import { Randomizer, reportToJSON } from "./src/index.js";\n'
              'const r = Randomizer.fromJSON(process.argv[1], {categories: {a: ["x", "y", "z"],'
              ' b: [...Array(12).keys()], c: [true, false]}});\n'
              'for (let i = 0; i < 200; i++) {\n'
              '  console.log(reportToJSON(r.privatize({a: "y", b: i % 12, c: i % 2 === 0})));\n'
              '}\n')
    reports = _js_reports(script, spec)
    stacked = stack_client_reports(reports, spec)  # every report checked, none dropped
    assert _n_rows(stacked) == 200


@requires_node
def test_server_accepts_the_columns_records():
    from sklearn_ldp.deploy.collect import reports_from_client
    from sklearn_ldp.mechanisms import OptimizedUnaryEncoding
    from sklearn_ldp.mechanisms.multi_attribute.columns import ColumnsMechanism, column_part
    from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
    from sklearn_ldp.mechanisms.numeric.registry import numeric_mechanism

    mechanism = ColumnsMechanism([
        column_part(["age"], numeric_mechanism("hybrid", 0.3, (0, 100))),
        column_part(["smoker", "region"], MultiAttributeMechanism((2, 3), 0.7, protocol="smp")),
        column_part(["pet"], OptimizedUnaryEncoding(4, 0.1))])
    spec = mechanism.to_json()
    script = ('import { Randomizer, reportToJSON } from "./src/index.js";\n'
              'const r = Randomizer.fromJSON(process.argv[1], {categories: {smoker: ["no", '
              '"yes"], region: ["n", "s", "w"], pet: ["cat", "dog", "fish", "none"]}});\n'
              'for (let i = 0; i < 200; i++) {\n'
              '  console.log(reportToJSON(r.privatize({age: i / 2, smoker: "yes", '
              'region: ["n", "s", "w"][i % 3], pet: "dog"})));\n'
              '}\n')
    reports = _js_reports(script, spec)
    assert reports_from_client(reports, spec).shape == (200, mechanism.width)


@requires_node
@pytest.mark.parametrize("hadamard", [False, True], ids=["cms", "hcms"])
def test_server_accepts_the_sketch_reports(hadamard):
    from sklearn_ldp.deploy.collect import stack_client_reports
    from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle

    mechanism = SketchFrequencyOracle(2.0, n_hashes=300, width=16, hadamard=hadamard,
                                      hash_seed=2**64 - 1)
    spec = json.dumps(mechanism.to_dict())
    script = ('import { Randomizer, reportToJSON } from "./src/index.js";\n'
              'const r = Randomizer.fromJSON(process.argv[1]);\n'
              'for (let i = 0; i < 200; i++) {\n'
              '  console.log(reportToJSON(r.privatize([i, 32])));\n'
              '}\n')
    reports = _js_reports(script, spec)
    stacked = stack_client_reports(reports, spec)  # every report checked, none dropped
    assert _n_rows(stacked) == 200


# Prints 300 JSON reports of fresh devices (a new secret each), values cycling over the domain
# (1bitmean_pm: counters spread over [0, max_value]), one a line.
_PRINT_MEMOIZED = """
import { MemoryStorage, Randomizer, reportToJSON } from "./src/index.js";
const spec = JSON.parse(process.argv[1]);
const lines = [];
for (let i = 0; i < 300; i++) {
  const randomizer = new Randomizer(spec, { state: new MemoryStorage() });
  const value = spec.mechanism === "1bitmean_pm" ? spec.max_value * (i / 299)
    : i % randomizer.nInputs;
  lines.push(reportToJSON(randomizer.privatize(value)));
}
console.log(lines.join("\\n"));
"""


def _memoizing_mechanisms():
    from sklearn_ldp.mechanisms.longitudinal.mechanisms import (
        DBitFlipPM,
        LongitudinalMechanism,
        OneBitMeanPM,
    )

    return {**{protocol: LongitudinalMechanism(11, 2.0, 0.5, protocol)
               for protocol in ("l_grr", "l_sue", "l_oue", "l_osue", "l_soue")},
            "dbitflip_pm": DBitFlipPM(12, 1.0, n_sampled=3),
            "1bitmean_pm": OneBitMeanPM(24.0, 1.0, 8)}


@requires_node
@pytest.mark.parametrize("name", ["l_grr", "l_sue", "l_oue", "l_osue", "l_soue", "dbitflip_pm",
                                  "1bitmean_pm"])
def test_server_accepts_the_memoized_reports(name):
    from sklearn_ldp.deploy.collect import stack_client_reports

    spec = json.dumps(_memoizing_mechanisms()[name].to_dict())
    reports = _js_reports(_PRINT_MEMOIZED, spec)
    stacked = stack_client_reports(reports, spec)  # every report checked, none dropped
    assert _n_rows(stacked) == 300


# Prints 200 JSON reports of set-valued or key-value records (RECORDS, cycled), one a line.
_PRINT_RECORDS = """
import { Randomizer, reportToJSON } from "./src/index.js";
const randomizer = Randomizer.fromJSON(process.argv[1]);
const records = RECORDS;
const lines = [];
for (let i = 0; i < 200; i++) {
  lines.push(reportToJSON(randomizer.privatize(records[i % records.length])));
}
console.log(lines.join("\\n"));
"""


def _set_valued_cases():
    from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR
    from sklearn_ldp.mechanisms.set_valued.pckv_ue import PCKVUE
    from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism

    return {
        "set_items_grr": (SetItemMechanism(6, 3, 1.0, oracle="grr"), [[], [0, 5], [1, 2, 3, 4]]),
        "set_items_olh_labels": (
            SetItemMechanism(40, 4, 1.0, oracle="olh", items=[f"t{i}" for i in range(40)]),
            [["t0", "t39"], [], ["t7"]]),
        "pckv_grr": (PCKVGRR(5, 2, 2.0, value_steps=100),
                     [[[0, 0.5], [4, -1.0]], [], [[1, 0.25], [2, 1.0], [3, -0.01]]]),
        "pckv_ue_labels": (PCKVUE(11, 2, 2.0, value_steps=100, keys=[f"k{i}" for i in range(11)]),
                           [[["k0", 0.5], ["k10", -1.0]], [], [["k3", 0.25]]]),
    }


@requires_node
@pytest.mark.parametrize("case", ["set_items_grr", "set_items_olh_labels", "pckv_grr",
                                  "pckv_ue_labels"])
def test_server_accepts_the_set_valued_reports(case):
    from sklearn_ldp.deploy.client import Randomizer as PythonRandomizer
    from sklearn_ldp.deploy.collect import reports_from_client

    mechanism, records = _set_valued_cases()[case]
    spec = mechanism.to_json()
    reports = _js_reports(_PRINT_RECORDS.replace("RECORDS", json.dumps(records)), spec)
    stacked = reports_from_client(reports, spec)  # invalid="raise": every report is valid
    assert stacked.shape[0] == 200 and stacked.n_invalid == 0
    # The Python client's wire form: the same layout, report for report.
    python = PythonRandomizer.from_json(spec, seed=0).privatize(records[1])
    assert reports_from_client([python], spec).shape[1:] == stacked.shape[1:]
