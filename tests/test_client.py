"""The standard-library client: stdlib only, same report distribution as the server, decoding.

Every statistical check uses fixed seeds; chi-square and Kolmogorov-Smirnov tests are at level
``ALPHA``, and moment checks allow ``Z`` standard errors derived from the exact variance.
"""

import ast
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import sklearn_ldp.deploy.client as client_module
from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.client import _exact as client_exact
from sklearn_ldp.deploy.client import oracles as client_oracles
from sklearn_ldp.deploy.collect import report_template, reports_from_client
from sklearn_ldp.domain import Domain
from sklearn_ldp.mechanisms import (
    BinaryLocalHashing,
    GaussianMechanism,
    GaussianRejectionMechanism,
    HaarHRR,
    HadamardRandomizedResponse,
    HadamardResponse,
    HierarchicalHistogram,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
    SymmetricUnaryEncoding,
)
from sklearn_ldp.mechanisms._base.bits import ratio_at_most
from sklearn_ldp.mechanisms._base.exact import exp_decimal
from sklearn_ldp.mechanisms.marginals.em import InpEM
from sklearn_ldp.mechanisms.marginals.input_perturbation import InpHT, InpPS, InpRR
from sklearn_ldp.mechanisms.marginals.marginal_perturbation import MargHT, MargPS, MargRR
from sklearn_ldp.mechanisms.oracles.hadamard_layout import hadamard_shape, hadamard_strategy
from sklearn_ldp.mechanisms.oracles.subset_selection import MAX_STRATEGY_ROWS
from sklearn_ldp.selection import baseline_mechanism

# These tests seed the client on purpose (reproducible statistics); the warning that a seed
# must never be used on a device is tested in test_fresh_randomness.py.
pytestmark = pytest.mark.filterwarnings("ignore:Randomizer\\(seed=\\.\\.\\.\\):UserWarning")

ALPHA = 1e-3
Z = 5.0
CLIENT_DIR = Path(client_module.__file__).parent  # the package a device copies

# Every LDP kind the client covers, on small domains (id -> server mechanism).
MECHANISMS = {
    "randomized_response": lambda: RandomizedResponse(5, 1.0),
    "rappor": lambda: SymmetricUnaryEncoding(4, 1.0),
    "oue": lambda: OptimizedUnaryEncoding(5, 2.0),
    "olh": lambda: OptimizedLocalHashing(7, 2.0),
    "blh": lambda: BinaryLocalHashing(6, 1.0),
    "hadamard": lambda: HadamardResponse(6, 1.0),
    "hrr": lambda: HadamardRandomizedResponse(5, 1.0),
    "subset_selection": lambda: SubsetSelection(6, 1.0),
    "factorization": lambda: baseline_mechanism("hierarchical_matrix", (8,), 1.0),
    "hierarchical-oue": lambda: HierarchicalHistogram(6, 1.0, branching=2, oracle="oue"),
    "hierarchical-olh": lambda: HierarchicalHistogram(6, 2.0, branching=2, oracle="olh"),
    "hierarchical-hrr": lambda: HierarchicalHistogram(7, 1.0, branching=2, oracle="hrr"),
    "haar": lambda: HaarHRR(6, 1.0),
    "gaussian": lambda: GaussianMechanism(3, 1.0, delta=1e-6,
                                          workload=[[1, 1, 0], [0, 1, 1]]),
    "gaussian_pure": lambda: GaussianRejectionMechanism(3, 1.0),
    "gaussian_pure-equalized": lambda: GaussianRejectionMechanism(
        3, 1.0, workload=[[1, 1, 0], [0, 2, 2]]),
}
# The marginal mechanisms (issue 5), on attributes of 2, 3 and 2 categories.
MARGINAL_MECHANISMS = {
    "inp_rr": lambda: InpRR(8, math.log(3.0), [2, 2, 2], 2),
    "inp_ps": lambda: InpPS(12, 1.0, [2, 3, 2], 2),
    "inp_ht": lambda: InpHT(12, 1.0, [2, 3, 2], 2),
    "inp_em": lambda: InpEM(12, 1.0, [2, 3, 2], 2),
    "marg_rr": lambda: MargRR(12, 1.0, [2, 3, 2], 2),
    "marg_ps": lambda: MargPS(12, 1.0, [2, 3, 2], 1),
    "marg_ht": lambda: MargHT(12, 1.0, [2, 3, 2], 2),
}


def client_for(mechanism, seed=0, **kwargs):
    return Randomizer.from_json(mechanism.to_json(), seed=seed, **kwargs)


def client_reports(mechanism, cell, n_reports, seed):
    """``n_reports`` reports of one cell, through a JSON round trip (as on the wire)."""
    randomizer = client_for(mechanism, seed)
    return json.loads(json.dumps([randomizer.privatize(cell) for _ in range(n_reports)]))


def assert_fits(observed, probabilities):
    """Chi-square goodness of fit; outputs of probability 0 must never occur."""
    observed = np.asarray(observed, dtype=float)
    probabilities = np.asarray(probabilities, dtype=float)
    assert observed[probabilities == 0].sum() == 0
    expected = observed.sum() * probabilities
    small = expected < 5  # pooled into one bin so the chi-square approximation holds
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    if exp[-1] == 0:
        obs, exp = obs[:-1], exp[:-1]
    assert stats.chisquare(obs, exp).pvalue > ALPHA


# ---------------------------------------------------------------- standard library only
def test_client_imports_only_the_standard_library(tmp_path):
    """The folder, copied alone under another name and loaded with every non-stdlib import
    blocked (no numpy, no sklearn_ldp), rebuilds randomizers of several kinds and privatizes."""
    device = tmp_path / "device_client"
    shutil.copytree(CLIENT_DIR, device, ignore=shutil.ignore_patterns("__pycache__"))
    specs = [MECHANISMS[name]().to_json() for name in
             ("oue", "olh", "subset_selection", "hierarchical-hrr", "gaussian_pure", "haar")]
    specs.append(MARGINAL_MECHANISMS["inp_ht"]().to_json())
    script = f"""
import importlib.abc, json, sys

class BlockNonStandard(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.split(".")[0]
        if top not in sys.stdlib_module_names and top != "device_client":
            raise ImportError("blocked: " + name)

sys.meta_path.insert(0, BlockNonStandard())
sys.path[:] = [{str(tmp_path)!r}] + [p for p in sys.path if "site-packages" not in p]
before = set(sys.modules)
import device_client as client
assert client.__file__.startswith({str(device)!r}), client.__file__
try:
    import numpy
    raise SystemExit("numpy could be imported")
except ImportError:
    pass
try:
    import sklearn_ldp
    raise SystemExit("sklearn_ldp could be imported")
except ImportError:
    pass
outside = sorted(m for m in set(sys.modules) - before
                 if m.split(".")[0] not in sys.stdlib_module_names
                 and m.split(".")[0] != "device_client")
assert not outside, outside
categories = {{"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}}
reports = []
for text in json.loads(sys.stdin.read()):
    n = json.loads(text)["n_inputs"]
    if n == 6:
        randomizer = client.Randomizer.from_json(text, categories=categories)
        reports.append(randomizer.privatize({{"age": ">50", "smoker": "no"}}))
    else:
        reports.append(client.Randomizer.from_json(text).privatize(n - 1))
print(json.dumps(reports))
"""
    result = subprocess.run([sys.executable, "-I", "-S", "-c", script], input=json.dumps(specs),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    reports = json.loads(result.stdout)
    assert len(reports) == len(specs)
    for text, report in zip(specs, reports, strict=True):
        from sklearn_ldp.mechanisms import mechanism_from_json
        assert len(reports_from_client([report], mechanism_from_json(text))) == 1


def test_client_package_imports_only_the_standard_library_and_itself():
    """Every import in the folder, lazy ones included: stdlib modules or the folder's own
    modules (relative), never numpy, scipy, pandas or the rest of sklearn_ldp."""
    own = {path.stem for path in CLIENT_DIR.glob("*.py")}
    for path in sorted(CLIENT_DIR.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 1, (path.name, node.module)
                targets = [node.module] if node.module else [a.name for a in node.names]
                assert set(targets) <= own, (path.name, targets)
                continue
            else:
                continue
            for name in names:
                assert name.split(".")[0] in sys.stdlib_module_names, (path.name, name)


def test_default_entropy_is_the_operating_system():
    randomizer = Randomizer.from_json(RandomizedResponse(4, 1.0).to_json())
    assert type(randomizer._rng).__name__ == "SystemRandom"
    seeded = Randomizer.from_json(RandomizedResponse(4, 1.0).to_json(), seed=3)
    again = Randomizer.from_json(RandomizedResponse(4, 1.0).to_json(), seed=3)
    assert [seeded.privatize(1) for _ in range(50)] == [again.privatize(1) for _ in range(50)]


def test_every_registered_ldp_kind_has_a_client():
    from sklearn_ldp.deploy.collect import MATH_LAYER_KINDS
    from sklearn_ldp.mechanisms._base.mechanism import _REGISTRY, _import_all_mechanisms
    from sklearn_ldp.mechanisms.multi_attribute.columns import COLUMNS_KIND
    _import_all_mechanisms()
    # Beyond the registered Mechanism kinds: the math-layer kinds (numeric, multi-attribute,
    # heavy hitters, longitudinal), LDPEncoder's "columns" records, set-valued columns
    # ("set_items") and key-value pairs ("pckv_grr", "pckv_ue"); nothing else.
    assert set(client_module.RANDOMIZERS) == set(_REGISTRY) | set(MATH_LAYER_KINDS) | {
        COLUMNS_KIND, "set_items", "pckv_grr", "pckv_ue", "itemsets"}


# ---------------------------------------------------------------- same arithmetic
@pytest.mark.parametrize("epsilon", [0.05, 0.5, 1.0, math.log(3.0), 2.0, 5.0, 12.0])
def test_dyadic_probabilities_equal_the_servers_and_are_exactly_private(epsilon):
    for server in (SymmetricUnaryEncoding(8, epsilon), OptimizedUnaryEncoding(8, epsilon)):
        p_num, q_num = client_oracles._unary_numerators(server.kind, epsilon)
        assert (p_num, q_num) == (server.p_numerator, server.q_numerator)
        one = 2**52
        assert ratio_at_most(p_num * (one - q_num), q_num * (one - p_num), exp_decimal(epsilon))
    for n, k in ((6, 2), (20, 5), (9, 8)):
        server = SubsetSelection(n, epsilon, subset_size=k)
        p_num = client_oracles._subset_numerator(n, k, epsilon)
        assert p_num == server.p_numerator
        assert ratio_at_most(p_num * (n - k), (2**52 - p_num) * k, exp_decimal(epsilon))


def test_uniform_words_are_52_bit_and_uniform():
    import random
    words = client_exact._uniform_words(random.Random(0), 4000)
    assert max(words) < 2**52
    top = np.bincount(np.array(words, dtype=np.int64) >> 48, minlength=16)
    assert_fits(top, np.full(16, 1 / 16))


@pytest.mark.parametrize("n", [1, 2, 3, 5, 6, 16, 17, 100, 1000])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 7, 11])
def test_hadamard_shape_matches_the_server(n, k):
    # Includes eps = k ln 2, where e^eps is (nearly) a power of two.
    for epsilon in (k * math.log(2.0), math.log(2.0**k), 0.3 * k):
        assert client_oracles.hadamard_shape(n, epsilon) == hadamard_shape(n, epsilon)


# Hadamard response layouts: full blocks with a hole (the cells in the upper columns), with
# and without a partial block, one block holding its upper half, the chosen layout, and the
# paper's (with empty blocks), which a specification without a layout means.
HADAMARD_LAYOUTS = [(30, 2.0, (8, 8, 4)), (64, 1.0, (1, 128, 64)), (50, 2.0, (3, 32, 8)),
                    (64, 2.0, None), (20, 4.0, "paper")]


@pytest.mark.parametrize("n, epsilon, layout", HADAMARD_LAYOUTS)
def test_hadamard_client_matches_every_layout(n, epsilon, layout):
    mechanism = HadamardResponse(n, epsilon, layout=layout)
    Q = mechanism.strategy_matrix()
    n_full = mechanism._n_full * (mechanism.block_size - mechanism.hole)
    cells = sorted({0, n - 1, min(n_full, n - 1), n // 2})  # incl. a partial block's first
    for seed, cell in enumerate(cells):
        reports = client_reports(mechanism, cell, 4000, seed)
        assert_fits(np.bincount(reports, minlength=Q.shape[0]), Q[:, cell])


def test_hadamard_client_reads_specifications_without_a_layout():
    """Specifications written before the layout was recorded: the paper's layout, on the
    client as on the server; and the layout fields are checked as the server checks them."""
    spec = HadamardResponse(30, 2.0).to_dict()
    assert spec["params"] == {"n_blocks": 5, "block_size": 8, "hole": 2}
    old = {**spec, "params": {}}
    Q = hadamard_strategy(30, 2.0)  # the paper's layout: 4 blocks of 16 outputs
    randomizer = Randomizer(old, seed=3)
    reports = [randomizer.privatize(29) for _ in range(4000)]
    assert_fits(np.bincount(reports, minlength=Q.shape[0]), Q[:, 29])
    for params, message in [({"n_blocks": 5}, "all of"),
                            ({"n_blocks": 5, "block_size": 6, "hole": 2}, "power of two"),
                            ({"n_blocks": 5, "block_size": 8, "hole": 8}, "hole must be"),
                            ({"n_blocks": 4, "block_size": 8, "hole": 2}, "at least 5"),
                            ({"n_blocks": 5, "block_size": 8, "hole": 0}, "hole must be"),
                            ({"n_blocks": 5.0, "block_size": 8, "hole": 2}, "n_blocks")]:
        with pytest.raises(ValueError, match=message):
            Randomizer({**spec, "params": params})
        with pytest.raises((ValueError, TypeError)):
            HadamardResponse.from_dict({**spec, "params": params})


@pytest.mark.parametrize("epsilon", [0.1, 0.5, 1.0, 2.0, 3.0, math.log(7.4), math.log(2.5), 40.0])
def test_olh_buckets_match_the_server(epsilon):
    for family in ("tabulation", "linear"):
        server = OptimizedLocalHashing(10, epsilon, hash_family=family)
        assert client_oracles._olh_buckets(epsilon, family) == server.n_buckets


@pytest.mark.parametrize("name", ["olh", "blh"])
def test_local_hashing_hash_equals_the_servers(name):
    server = MECHANISMS[name]()
    _, privatize = client_module.RANDOMIZERS[server.kind](server.to_dict())
    seeds = np.random.default_rng(1).integers(0, 2**64, size=300, dtype=np.uint64)
    expected = server.hash_values(seeds[:, None], np.arange(server.n_inputs)[None, :])
    computed = [[privatize.bucket(int(seed), cell) for cell in range(server.n_inputs)]
                for seed in seeds]
    np.testing.assert_array_equal(np.array(computed, dtype=np.uint64), expected)


@pytest.mark.parametrize("name", ["gaussian", "gaussian_pure", "gaussian_pure-equalized"])
def test_gaussian_calibration_equals_the_servers(name):
    server = MECHANISMS[name]()
    _, privatize = client_module.RANDOMIZERS[server.kind](server.to_dict())
    assert privatize.sigma == pytest.approx(server.sigma, rel=1e-9)
    if server.kind == "gaussian_pure":
        np.testing.assert_allclose(privatize.effective_norms, server.effective_norms, rtol=1e-9)
    paper = GaussianRejectionMechanism(3, 0.5, workload=[[1, 1, 0], [0, 2, 2]],
                                       calibration="paper")
    _, privatize = client_module.RANDOMIZERS["gaussian_pure"](paper.to_dict())
    assert privatize.sigma == pytest.approx(paper.sigma, rel=1e-9)
    # Spec version 2: the client re-checks the server's lattice integers (no "classic").
    exact = GaussianMechanism(3, 0.5, delta=1e-5)
    _, privatize = client_module.RANDOMIZERS["gaussian"](exact.to_dict())
    assert privatize.sigma == exact.sigma and privatize.lattice == exact.lattice_spec()


# ---------------------------------------------------------------- same distribution
def _row_of_report(mechanism):
    """Maps one (JSON) client report to its row of ``mechanism.strategy_matrix()``."""
    kind = mechanism.kind
    if kind in ("randomized_response", "hadamard", "factorization", "haar", "inp_ps", "inp_ht",
                "inp_em", "marg_ps", "marg_ht"):
        return lambda report: report
    if kind == "hrr":
        return lambda report: report - 2
    if kind == "marg_rr":
        return lambda report: int(mechanism.report_rows(np.array([report], dtype=np.uint8))[0])
    if kind in ("rappor", "oue", "inp_rr"):
        return lambda report: int.from_bytes(bytes(report), "little")
    if kind == "subset_selection":
        members = mechanism.subset_outputs()
        rows = {frozenset(np.flatnonzero(row).tolist()): i for i, row in enumerate(members)}
        return lambda report: rows[frozenset(
            j for j in range(mechanism.n_inputs) if report[j >> 3] >> (j & 7) & 1)]
    assert kind == "hierarchical"
    blocks = np.cumsum([0] + [oracle.strategy_matrix().shape[0]
                              for oracle in mechanism.level_oracles])
    if mechanism.oracle == "oue":
        return lambda report: int(blocks[report[0] - 1]) + int.from_bytes(bytes(report[1:]),
                                                                          "little")
    offsets = mechanism._report_offsets

    def hrr_row(report):
        level = int(np.searchsorted(offsets, report, side="right")) - 1
        return int(blocks[level]) + report - int(offsets[level]) - 2

    return hrr_row


@pytest.mark.parametrize("name", ["randomized_response", "rappor", "oue", "hadamard", "hrr",
                                  "subset_selection", "factorization", "hierarchical-oue",
                                  "hierarchical-hrr", "haar", *MARGINAL_MECHANISMS])
def test_client_matches_the_strategy_matrix(name):
    mechanism = {**MECHANISMS, **MARGINAL_MECHANISMS}[name]()
    Q = mechanism.strategy_matrix()
    assert Q.shape[0] <= MAX_STRATEGY_ROWS
    row_of = _row_of_report(mechanism)
    for seed, cell in enumerate((0, mechanism.n_inputs - 1)):
        reports = client_reports(mechanism, cell, 4000, seed)
        counts = np.bincount([row_of(report) for report in reports], minlength=Q.shape[0])
        assert counts.shape == (Q.shape[0],)
        assert_fits(counts, Q[:, cell])


def test_goodness_of_fit_detects_a_wrong_epsilon():
    # The check has power: a client at epsilon 1.3 does not pass as the epsilon-1 mechanism.
    reports = client_reports(RandomizedResponse(5, 1.3), 2, 4000, seed=0)
    Q = RandomizedResponse(5, 1.0).strategy_matrix()
    counts = np.bincount(reports, minlength=5)
    expected = 4000 * Q[:, 2]
    assert stats.chisquare(counts, expected).pvalue < ALPHA


def _hashing_outcomes(reports, p_bucket, hash_values, g):
    """Chi-square of each report's bucket relative to the hashed cell: kept, or which other."""
    seeds = np.array([report[0] for report in reports], dtype=np.uint64)
    buckets = np.array([report[1] for report in reports], dtype=np.int64)
    hashed = hash_values(seeds).astype(np.int64)
    outcome = np.where(buckets == hashed, 0, 1 + buckets - (buckets > hashed))
    probabilities = np.append(p_bucket, np.full(g - 1, (1 - p_bucket) / (g - 1)))
    assert_fits(np.bincount(outcome, minlength=g), probabilities)
    # The seeds are uniform 64-bit words: their top and bottom 4 bits are uniform.
    assert_fits(np.bincount((seeds >> np.uint64(60)).astype(np.int64), minlength=16),
                np.full(16, 1 / 16))
    assert_fits(np.bincount((seeds & np.uint64(15)).astype(np.int64), minlength=16),
                np.full(16, 1 / 16))


@pytest.mark.parametrize("name", ["olh", "blh"])
def test_local_hashing_client_distribution(name):
    mechanism = MECHANISMS[name]()
    cell = 3
    reports = client_reports(mechanism, cell, 4000, seed=5)
    _hashing_outcomes(reports, mechanism.p, lambda seeds: mechanism.hash_values(seeds, cell),
                      mechanism.n_buckets)


def test_hierarchical_olh_client_distribution():
    mechanism = MECHANISMS["hierarchical-olh"]()
    cell = 4
    reports = client_reports(mechanism, cell, 6000, seed=2)
    levels = np.array([report[0] for report in reports])
    assert_fits(np.bincount(levels - 1, minlength=mechanism.height),
                np.full(mechanism.height, 1 / mechanism.height))
    for k, oracle in enumerate(mechanism.level_oracles):
        node = cell // mechanism.widths[k]
        rows = [report[1:] for report in reports if report[0] == k + 1]
        _hashing_outcomes(rows, oracle.p, lambda seeds, o=oracle, j=node: o.hash_values(seeds, j),
                          oracle.n_buckets)


def test_gaussian_client_matches_the_server():
    mechanism = MECHANISMS["gaussian"]()
    cell, n_reports = 1, 4000
    reports = np.array(client_reports(mechanism, cell, n_reports, seed=3))
    server = mechanism.randomize(np.full(n_reports, cell), np.random.default_rng(3))
    column = mechanism.A[:, cell]
    standard_error = mechanism.sigma / math.sqrt(n_reports)
    assert np.all(np.abs(reports.mean(axis=0) - column) < Z * standard_error)
    for coordinate in range(mechanism.n_queries):
        residuals = (reports[:, coordinate] - column[coordinate]) / mechanism.sigma
        assert stats.kstest(residuals, "norm").pvalue > ALPHA
        assert stats.ks_2samp(reports[:, coordinate], server[:, coordinate]).pvalue > ALPHA


@pytest.mark.parametrize("name", ["gaussian_pure", "gaussian_pure-equalized"])
def test_gaussian_pure_client_matches_the_server(name):
    mechanism = MECHANISMS[name]()
    cell, n_reports = 0, 6000
    reports = client_reports(mechanism, cell, n_reports, seed=4)
    kept = np.array([report for report in reports if report is not None])
    # P(keep) = 1/2 exactly, for every type.
    assert abs(kept.shape[0] - n_reports / 2) < Z * math.sqrt(n_reports / 4)
    # E[v 1(keep)] = kappa a and Var = alpha + beta a_i^2 - (kappa a_i)^2, per coordinate.
    column = mechanism.A[:, cell]
    kappa, alpha, beta = mechanism.kappa[cell], mechanism.alpha[cell], mechanism.beta[cell]
    mean = kept.sum(axis=0) / n_reports
    variance = alpha + beta * column**2 - (kappa * column) ** 2
    assert np.all(np.abs(mean - kappa * column) < Z * np.sqrt(variance / n_reports))
    server = mechanism.randomize(np.full(n_reports, cell), np.random.default_rng(4))
    server_kept = server[~np.isnan(server[:, 0])]
    for coordinate in range(mechanism.n_queries):
        assert stats.ks_2samp(kept[:, coordinate], server_kept[:, coordinate]).pvalue > ALPHA


# ---------------------------------------------------------------- decoding on the server
def _collected(mechanism, seed):
    """``(users per cell, LDPReports)``: 150, 200, 250... users per cell, privatized by the
    client and stacked by the server after a JSON round trip."""
    counts = 150 + 50 * np.arange(mechanism.n_inputs)
    randomizer = client_for(mechanism, seed=seed)
    sent = [randomizer.privatize(cell) for cell in np.repeat(np.arange(counts.size), counts)
            .tolist()]
    reports = reports_from_client(json.loads(json.dumps(sent)), mechanism)
    template = report_template(mechanism)
    assert reports.reports.dtype == template.dtype
    assert reports.reports.shape[1:] == template.shape[1:]
    return counts, reports


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_client_reports_decode_without_bias(name):
    mechanism = MECHANISMS[name]()
    counts, reports = _collected(mechanism, seed=11)
    estimate = mechanism.estimate(mechanism.aggregate(reports.reports))
    variance = mechanism.query_variance(np.eye(mechanism.n_inputs)) @ counts
    assert np.all(np.abs(estimate - counts) < Z * np.sqrt(variance))


@pytest.mark.parametrize("name", sorted(MARGINAL_MECHANISMS))
def test_client_reports_decode_marginals_without_bias(name):
    mechanism = MARGINAL_MECHANISMS[name]()
    counts, reports = _collected(mechanism, seed=12)
    statistic = mechanism.aggregate(reports.reports)
    fractions = (counts / counts.sum()).reshape(mechanism.shape)
    for order in range(1, mechanism.max_order + 1):
        for attributes in mechanism.attribute_sets(order):
            others = tuple(a for a in range(len(mechanism.shape)) if a not in attributes)
            truth = fractions.sum(axis=others)
            estimate = mechanism.estimate_marginal(statistic, attributes)
            variance = mechanism.marginal_variance(attributes, counts.sum(), truth)
            assert np.all(np.abs(estimate - truth) < Z * np.sqrt(variance))


def test_records_encode_like_the_domain():
    categories = {"age": ["<30", "30-50", ">50"], "visits": [0, 1, 2, 5], "score": [0.5, 1.0]}
    domain = Domain(categories)
    spec = RandomizedResponse(domain.size, 1.0).to_json()
    randomizer = Randomizer.from_json(spec, categories=categories, seed=0)
    rows = domain.cells()
    expected = domain.encode(rows)
    for row, cell in zip(rows.itertuples(index=False), expected, strict=True):
        record = dict(zip(domain.columns, row, strict=True))
        assert randomizer.encode(record) == cell
        assert randomizer.encode(list(record.values())) == cell
    # Equal numbers match like in pandas (1.0 is category 1, 1 is category 1.0).
    assert randomizer.encode({"age": ">50", "visits": 1.0, "score": 1}) == domain.encode(
        [[">50", 1.0, 1]])[0]
    single = Randomizer.from_json(RandomizedResponse(2, 1.0).to_json(),
                                  categories={"smoker": ["no", "yes"]}, seed=0)
    assert single.encode("yes") == 1 and single.encode({"smoker": "no", "extra": 3}) == 0
    assert single.privatize("yes") in (0, 1)


# ---------------------------------------------------------------- bad input
def _spec(**changes):
    spec = json.loads(OptimizedUnaryEncoding(4, 1.0).to_json())
    spec.update(changes)
    return json.dumps(spec)


@pytest.mark.parametrize("text, message", [
    (_spec(version=2), "unsupported specification version 2"),
    (_spec(mechanism="telepathy"), "unknown mechanism 'telepathy'"),
    (_spec(params={"n_buckets": 3}), r"parameters \['n_buckets'\] that this client does not"),
    (_spec(epsilon=-1.0), "epsilon"),
    (_spec(n_inputs=0), "n_inputs"),
    ("{not json", "not valid JSON"),
    ("[1, 2]", "not a mechanism specification"),
])
def test_bad_specifications(text, message):
    with pytest.raises(ValueError, match=message):
        Randomizer.from_json(text)


def test_specifications_the_client_refuses_to_trust():
    spec = json.loads(baseline_mechanism("hierarchical_matrix", (4,), 1.0).to_json())
    spec["epsilon"] = 0.5  # the strategy is 1-LDP, not 0.5-LDP
    with pytest.raises(ValueError, match="is not 0.5-LDP"):
        Randomizer(spec)
    spec = json.loads(GaussianRejectionMechanism(3, 1.0).to_json())
    spec["params"]["columns"] = "auto"
    with pytest.raises(ValueError, match="resolved value"):
        Randomizer(spec)
    spec = json.loads(SubsetSelection(6, 1.0).to_json())
    spec["params"]["subset_size"] = None
    with pytest.raises(ValueError, match="subset_size"):
        Randomizer(spec)


def test_bad_records():
    categories = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}
    spec = RandomizedResponse(6, 1.0).to_json()
    randomizer = Randomizer.from_json(spec, categories=categories, seed=0)
    with pytest.raises(ValueError, match=r"column 'smoker' has the value 'maybe'"):
        randomizer.privatize({"age": "<30", "smoker": "maybe"})
    with pytest.raises(ValueError, match=r"no value for column\(s\) \['smoker'\]"):
        randomizer.privatize({"age": "<30"})
    with pytest.raises(ValueError, match="column 'age' has a missing value"):
        randomizer.privatize([float("nan"), "no"])
    with pytest.raises(ValueError, match="has 3 values but the domain has 2 columns"):
        randomizer.privatize(["<30", "no", "extra"])
    with pytest.raises(ValueError, match="a record must be a dict"):
        randomizer.privatize("<30")
    with pytest.raises(ValueError, match="column 'smoker' has the value True"):
        Randomizer.from_json(spec, categories={"a": [0, 1, 2], "smoker": [0, 1]}).privatize(
            [0, True])
    with pytest.raises(ValueError, match="describe 4 cells"):
        Randomizer.from_json(spec, categories={"a": [0, 1], "b": [0, 1]})
    with pytest.raises(ValueError, match="duplicate category"):
        Randomizer.from_json(spec, categories={"a": [0, 1, 1, 2, 3, 4]})
    plain = Randomizer.from_json(spec, seed=0)
    for value in (6, -1, True, 2.0, "2"):
        with pytest.raises(ValueError, match=r"integer in \[0, 6\)"):
            plain.privatize(value)
    with pytest.raises(ValueError, match="encode needs the domain's categories"):
        plain.encode({"age": "<30"})


@pytest.mark.parametrize("name, reports, message", [
    ("randomized_response", [1, 2.0], r"report 1 \(2.0\) is not a report"),
    ("randomized_response", [1, True], r"report 1 \(True\)"),
    ("randomized_response", [1, [2]], r"report 1 \(\[2\]\)"),
    ("randomized_response", [1, -3], r"integers in \[0, 255\]; got values from -3"),
    ("randomized_response", [1, 7], r"indices in \[0, 5\)"),
    ("oue", [[1], [2, 0]], r"report 1 \(\[2, 0\]\).*a list of 1 integers"),
    ("oue", [[1], "ab"], r"report 1 \('ab'\)"),
    ("oue", [[1], [256]], r"integers in \[0, 255\]"),
    ("oue", [[1], [64]], "bits set past bit 4"),
    ("olh", [[5, 1], [5, 9]], r"buckets in \[0, 8\)"),
    ("olh", [[5, 1], [2**64, 1]], r"got values from 1 to 18446744073709551616"),
    ("subset_selection", [[7]], "have exactly 2 bits set"),
    ("hierarchical-oue", [[4, 1]], r"level in \[1, 3\]"),
    ("gaussian", [[0.5, 1.0], None], "must be finite"),
    ("gaussian", [[0.5, 1.0], [1.0, "x"]], r"report 1 \(\[1.0, 'x'\]\).*list of 2 numbers"),
    ("gaussian_pure", [[0.5, 1.0, 2.0], [1.0]], r"report 1 \(\[1.0\]\)"),
])
def test_malformed_reports(name, reports, message):
    with pytest.raises(ValueError, match=message):
        reports_from_client(reports, MECHANISMS[name]())


def test_reports_from_client_accepts_bytes_json_and_empty():
    mechanism = OptimizedUnaryEncoding(10, 1.0)
    as_bytes = reports_from_client([b"\x05\x02", bytearray(b"\x00\x01")], mechanism.to_json())
    np.testing.assert_array_equal(as_bytes.reports, [[5, 2], [0, 1]])
    assert as_bytes.mechanism == mechanism
    empty = reports_from_client([], mechanism)
    assert empty.shape == (0, 2)
    dropped = reports_from_client([None, [1.0, 2.0, 3.0]], GaussianRejectionMechanism(3, 1.0))
    assert np.isnan(dropped.reports[0]).all() and len(dropped) == 2
    with pytest.raises(ValueError, match="sequence of reports"):
        reports_from_client("123", mechanism)


def test_an_epsilon_too_small_to_be_meaningful_is_refused_as_on_the_server():
    # e^eps - 1 vanishes below 1e-6: the server refuses such a budget, and Hadamard response's
    # layout derived from e^eps would be empty (no block), which must not crash the device.
    from sklearn_ldp.deploy.client import Randomizer

    spec = {"version": 1, "mechanism": "hadamard", "epsilon": 1e-12, "n_inputs": 10,
            "params": {}}
    with pytest.raises(ValueError, match="too small to be meaningful, got 1e-12"):
        Randomizer(spec)
