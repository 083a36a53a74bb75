"""Write the JavaScript client's test fixtures from the server's mechanisms.

Run from the repository root (``python clients/js/test/make_fixtures.py``); it rewrites
``clients/js/test/fixtures/*.json``:

* ``laws.json``: for a few specifications and values, the server's exact law of one report
  (``mechanism.exact_law(value)``: every output, its integer weight, the total), outputs written
  as the JSON text of the report (``[seed,bucket]`` for local hashing, given that seed);
* ``integers.json``: for many epsilons, the server's integers of each oracle (two-weight laws'
  ``weights``, unary and subset numerators; the numeric kinds' in their spec's ``grid``) or
  ``"error"`` where the server refuses epsilon;
* ``hashes.json``: the server's local-hashing buckets ``H_seed(cell)`` for random 64-bit seeds
  and cells, both hash families;
* ``memo.json``: the memoizing kinds' PRF, bit for bit the server's: SipHash-2-4 words of
  messages of every length, PRF words (``prf_words``) of random secrets, labels, values and
  counters, and the PRF part of a report (``permanent_response``; dBitFlipPM's and
  1BitMean's ``randomize``, a function of the secret and the value) for random secrets;
* ``hostile.json``: edited specifications (sizes, probabilities, versions, unknown fields), each
  with the field its refusal must name and the Python client's message.

Integers are written as decimal strings (JavaScript numbers hold 53 bits). With ``--check``
nothing is written: the exit status is 1 (naming the file) when a committed fixture differs
from what the server gives now (the Node tests run this when Python can import sklearn_ldp).
"""

import json
import pathlib
import sys
import warnings

import numpy as np

# The repository's own sklearn_ldp (a script's folder, not the root, starts sys.path).
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3]))

from sklearn_ldp.deploy.client import Randomizer  # noqa: E402
from sklearn_ldp.mechanisms import (  # noqa: E402
    BinaryLocalHashing,
    FactorizationMechanism,
    HaarHRR,
    HadamardRandomizedResponse,
    HadamardResponse,
    HierarchicalHistogram,
    InpEM,
    InpHT,
    InpPS,
    InpRR,
    MargHT,
    MargPS,
    MargRR,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
    SymmetricUnaryEncoding,
)
from sklearn_ldp.mechanisms._base import prf as server_prf  # noqa: E402
from sklearn_ldp.mechanisms.heavy_hitters.prefix import (  # noqa: E402
    LENGTH_ROUND_FIRST,
    PrefixHeavyHitters,
    length_oracle,
    length_round_spec,
)
from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle  # noqa: E402
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (  # noqa: E402
    DBitFlipPM,
    LongitudinalMechanism,
    MemoState,
    OneBitMeanPM,
)
from sklearn_ldp.mechanisms.multi_attribute.columns import (  # noqa: E402
    ColumnsMechanism,
    column_part,
)
from sklearn_ldp.mechanisms.multi_attribute.mechanisms import (  # noqa: E402
    MultiAttributeMechanism,
)
from sklearn_ldp.mechanisms.numeric.means import (  # noqa: E402
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    SampledMeanMechanism,
)
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism  # noqa: E402
from sklearn_ldp.mechanisms.oracles.histogram_encoding import (  # noqa: E402
    ThresholdingHistogramEncoding,
)
from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR  # noqa: E402
from sklearn_ldp.mechanisms.set_valued.pckv_ue import PCKVUE  # noqa: E402
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism  # noqa: E402
from sklearn_ldp.mechanisms.set_valued.svsm import (  # noqa: E402
    itemset_round_mechanism,
    itemset_spec,
)

FIXTURES = pathlib.Path(__file__).parent / "fixtures"


def edit(spec, field, **changes):
    """A hostile-spec fixture: ``spec`` with ``changes`` (``a__b`` reaches a nested field,
    ``"<absent>"`` deletes it), refused by the clients naming ``field``."""
    edited = json.loads(json.dumps(spec))
    for key, value in changes.items():
        target = edited
        *path, last = key.split("__")
        for part in path:
            target = target[part]
        if value == "<absent>":
            del target[last]
        else:
            target[last] = value
    return {"field": field, "spec": edited}


def _key(output):
    """The JSON text of one report, as the JavaScript client's reportToJSON writes it."""
    value = np.asarray(output).tolist()
    return json.dumps(value, separators=(",", ":"))


def _law(name, mechanism, value, **kwargs):
    law = mechanism.exact_law(value, **kwargs)
    return {
        "name": name,
        "spec": mechanism.to_json(),
        "value": value,
        "outputs": [_key(output) for output in law.outputs],
        "weights": [str(int(w)) for w in law.weights],
        "total": str(int(law.total)),
        **({"seed": str(int(kwargs["seeds"][0]))} if "seeds" in kwargs else {}),
    }


def laws():
    seeds = [np.array([s], dtype=np.uint64) for s in (5, 2**64 - 1, 12345678901234567890)]
    cases = [
        _law("rr_5_eps1", RandomizedResponse(5, 1.0), 2),
        _law("rr_3_eps0.3", RandomizedResponse(3, 0.3), 0),
        _law("rappor_4_eps1", SymmetricUnaryEncoding(4, 1.0), 1),
        _law("oue_5_eps2", OptimizedUnaryEncoding(5, 2.0), 3),
        _law("subset_6_eps1", SubsetSelection(6, 1.0), 1),
        _law("subset_7_eps0.5_k3", SubsetSelection(7, 0.5, subset_size=3), 6),
        _law("hadamard_6_eps2", HadamardResponse(6, 2.0), 4),
        _law("hadamard_20_eps3", HadamardResponse(20, 3.0), 13),
        _law("hrr_6_eps1", HadamardRandomizedResponse(6, 1.0), 5),
        _law("hrr_9_eps0.5", HadamardRandomizedResponse(9, 0.5), 8),
        _law("blh_6_eps1", BinaryLocalHashing(6, 1.0), 2, seeds=seeds[0]),
        _law("the_5_eps1", ThresholdingHistogramEncoding(5, 1.0), 2),
        _law("the_4_eps2_s4k3", ThresholdingHistogramEncoding(4, 2.0, scale=4, threshold=3), 0),
    ]
    for i, seed in enumerate(seeds):
        cases.append(_law(f"olh_6_eps1_seed{i}", OptimizedLocalHashing(6, 1.0), 2, seeds=seed))
        # Tabulation (g = 21 at eps = 3, not a power of two), as specs may still ask.
        cases.append(_law(f"olh_tabulation_6_eps3_seed{i}",
                          OptimizedLocalHashing(6, 3.0, hash_family="tabulation"), 2, seeds=seed))
    cases.append(_law("blh_tabulation_6_eps1",
                      BinaryLocalHashing(6, 1.0, hash_family="tabulation"), 2, seeds=seeds[1]))
    cases.append(_law("olh_linear_5000_eps2", OptimizedLocalHashing(5000, 2.0), 4321,
                      seeds=seeds[2]))
    # The range kinds (the OLH tree given its seed, as local hashing).
    e = np.exp(1.0)
    rr_matrix = np.full((4, 4), 1 / (e + 3)) + np.eye(4) * (e - 1) / (e + 3)
    cases += [
        _law("haar_8_eps1", HaarHRR(8, 1.0), 5),
        _law("haar_6_eps0.7", HaarHRR(6, 0.7), 0),
        _law("hierarchical_oue_10_b3", HierarchicalHistogram(10, 1.0, branching=3), 4),
        _law("hierarchical_hrr_9_b2", HierarchicalHistogram(9, 2.0, branching=2, oracle="hrr"),
             7),
        _law("hierarchical_olh_10_b3",
             HierarchicalHistogram(10, 1.0, branching=3, oracle="olh"), 4, seeds=seeds[1]),
        _law("factorization_rr_4", FactorizationMechanism(rr_matrix, 1.0), 2),
    ]
    # The marginal kinds over a 3 x 2 x 2 domain (cell 7 = codes (1, 1, 1)).
    shape = (3, 2, 2)
    cases += [
        _law("inp_rr_eps1", InpRR(4, 1.0, (2, 2), 2), 3),  # 2^n outputs: a small domain
        _law("inp_ps_eps1", InpPS(12, 1.0, shape, 2), 7),
        _law("inp_em_eps2", InpEM(12, 2.0, shape, 2), 7),
        _law("inp_ht_eps1_order2", InpHT(12, 1.0, shape, 2), 7),
        _law("marg_rr_eps1_order2", MargRR(12, 1.0, shape, 2), 7),
        _law("marg_ps_eps1_order2", MargPS(12, 1.0, shape, 2), 10),
        _law("marg_ht_eps1_order2", MargHT(12, 1.0, shape, 2), 11),
    ]
    # Heavy hitters (PEM, TreeHist) given the report's hash seed.
    for name, mechanism, value, seed in [
            ("pem_12_eps2", PrefixHeavyHitters(12, 2.0, protocol="pem", n_candidates=4,
                                               extension_bits=2), 1234, 99),
            ("pem_string_24_eps4", PrefixHeavyHitters(24, 4.0, protocol="pem", n_candidates=8,
                                                      extension_bits=3), "ab", 2**64 - 1),
            ("treehist_string_72_eps1",
             PrefixHeavyHitters(72, 1.0, protocol="treehist", n_candidates=4), "h\u00e9llo",
             12345678901234567890),
            # The length round of strings: a device's UTF-8 length in bytes.
            ("string_length_round_eps2", length_oracle(2.0), 13, 77)]:
        law = mechanism.exact_law(value, seed=seed)
        cases.append({"name": name, "spec": json.dumps(mechanism.to_dict()), "value": value,
                      "seed": str(seed), "outputs": [_key(output) for output in law.outputs],
                      "weights": [str(int(w)) for w in law.weights],
                      "total": str(int(law.total))})
    # The length round as devices run it (length_round_spec): given the string, its UTF-8
    # length through length_oracle, the rows numbered from LENGTH_ROUND_FIRST.
    text, seed = "h\u00e9llo w\u00f6rld", 2**63 + 5
    law = length_oracle(2.0).exact_law(len(text.encode()), seed=seed)
    outputs = np.asarray(law.outputs).copy()
    outputs[:, 0] += np.uint64(LENGTH_ROUND_FIRST)
    cases.append({"name": "string_length_round_spec_eps2",
                  "spec": json.dumps(length_round_spec(2.0, 16)), "value": text,
                  "seed": str(seed), "outputs": [_key(output) for output in outputs],
                  "weights": [str(int(w)) for w in law.weights], "total": str(int(law.total))})
    # Sketches (CMS, HCMS); the server's CMS rows [j, bytes...] are sent as
    # [j // 256, j % 256, bytes...]; a spec with bit_length takes plain values.
    for name, mechanism, value, bit_length in [
            ("cms_w4_eps2", SketchFrequencyOracle(2.0, n_hashes=2, width=4,
                                                  hash_seed=2**64 - 5), 5, 8),
            ("cms_w6_eps3_string", SketchFrequencyOracle(3.0, n_hashes=3, width=6,
                                                         hash_seed=77), "ab", 16),
            ("hcms_w8_eps1", SketchFrequencyOracle(1.0, n_hashes=3, width=8, hadamard=True,
                                                   hash_seed=12345678901234567890), 300, 70)]:
        law = mechanism.exact_law(value, bit_length=bit_length)
        outputs = np.asarray(law.outputs).tolist()
        if not mechanism.hadamard:
            outputs = [[row[0] >> 8, row[0] & 0xFF, *row[1:]] for row in outputs]
        spec = mechanism.to_dict()
        if isinstance(value, str):
            spec["bit_length"] = bit_length  # as LDPEncoder.client_spec() declares it
        cases.append({"name": name, "spec": json.dumps(spec),
                      "value": value if isinstance(value, str) else [value, bit_length],
                      "outputs": [json.dumps(row, separators=(",", ":")) for row in outputs],
                      "weights": [str(int(w)) for w in law.weights],
                      "total": str(int(law.total))})
    # Multi-attribute records (category codes) of every protocol.
    for protocol, oracle, shape, record, epsilon in [
            ("smp", "oue", (3, 2), [2, 1], 1.0), ("smp", "grr", (4, 3, 2), [3, 0, 1], 2.0),
            ("spl", "grr", (3, 2), [2, 1], 1.0), ("spl", "oue", (3, 3), [0, 2], 3.0),
            ("rsfd", "grr", (3, 2, 2), [1, 1, 0], 1.0), ("rsfd", "oue_z", (3, 2), [2, 1], 1.0),
            ("rsfd", "oue_r", (3, 2), [0, 1], 2.0)]:
        mechanism = MultiAttributeMechanism(shape, epsilon, protocol=protocol, oracle=oracle)
        law = mechanism.exact_law(record)
        cases.append({"name": f"multi_{protocol}_{oracle}", "spec": json.dumps(mechanism.to_dict()),
                      "value": record, "outputs": [_key(output) for output in law.outputs],
                      "weights": [str(int(w)) for w in law.weights],
                      "total": str(int(law.total))})
    # LDPEncoder's "columns" records: the product of the parts' laws, keyed by value.
    for name, parts, record in [
            ("columns_duchi_rr_smp",
             [column_part(["x"], DuchiMechanism(0.5, (0.0, 1.0))),
              column_part(["pet"], RandomizedResponse(3, 0.25)),
              column_part(["a", "b"], MultiAttributeMechanism((2, 2), 0.75, protocol="smp"))],
             {"x": 0.25, "pet": 2, "a": 1, "b": 0}),
            ("columns_piecewise_oue",
             [column_part(["y"], PiecewiseMechanism(1.0, (0.0, 10.0), grid_size=8)),
              column_part(["c"], OptimizedUnaryEncoding(3, 0.5))],
             {"y": 7.5, "c": 1})]:
        mechanism = ColumnsMechanism(parts)
        law = mechanism.exact_law([record[c] for c in mechanism.columns])
        cases.append({"name": name, "spec": mechanism.to_json(), "value": record,
                      "numeric": True,
                      "outputs": np.asarray(law.outputs, dtype=float).tolist(),
                      "weights": [str(int(w)) for w in law.weights],
                      "total": str(int(law.total))})
    # The numeric kinds: outputs are grid values (floats; Duchi's 0 and 1), keyed by value.
    for name, mechanism, value in [
            ("duchi_eps1", DuchiMechanism(1.0, (0.0, 10.0)), 3.3),
            ("piecewise_eps2_grid32", PiecewiseMechanism(2.0, (-1.0, 1.0), grid_size=32), 0.25),
            ("piecewise_eps0.5_grid256", PiecewiseMechanism(0.5, (0.0, 100.0), grid_size=256),
             99.0),
            ("hybrid_eps1.5_grid16", HybridMechanism(1.5, (0.0, 10.0), grid_size=16), 3.3),
            ("hybrid_eps0.3_duchi_only", HybridMechanism(0.3, (0.0, 10.0)), 7.0),
            ("square_wave_eps1_grid16",
             SquareWaveMechanism(1.0, (0.0, 10.0), n_buckets=8, grid_size=16), 3.3),
            ("square_wave_eps3_grid64",
             SquareWaveMechanism(3.0, (-5.0, 5.0), n_buckets=32, grid_size=64), -5.0),
            ("sampled_mean_piecewise_3_2",
             SampledMeanMechanism(1.0, [(0, 1), (0, 10), (-1, 1)], n_sampled=2,
                                  base="piecewise", grid_size=8), [0.3, 4.0, -1.0]),
            ("sampled_mean_duchi_4_1",
             SampledMeanMechanism(0.7, [(0, 1)] * 4, n_sampled=1, base="duchi"),
             [0.1, 0.5, 0.9, 1.0])]:
        law = mechanism.exact_law(value)
        cases.append({"name": name, "spec": json.dumps(mechanism.to_dict()), "value": value,
                      "numeric": True,
                      "outputs": np.asarray(law.outputs, dtype=float).tolist(),
                      "weights": [str(int(w)) for w in law.weights],
                      "total": str(int(law.total))})
    # The memoizing kinds: the law of one report over a random secret (fresh device).
    for name, mechanism, value in MEMO_LAWS:
        law = mechanism.exact_law(value)
        cases.append({"name": name, "spec": json.dumps(mechanism.to_dict()), "value": value,
                      "memo": True, "outputs": [_key(output) for output in law.outputs],
                      "weights": [str(int(w)) for w in law.weights],
                      "total": str(int(law.total))})
    cases += _set_valued_laws()
    cases += _itemset_laws()
    return cases


MEMO_LAWS = [
    ("longitudinal_l_grr_5", LongitudinalMechanism(5, 2.0, 1.0, "l_grr"), 2),
    ("longitudinal_l_sue_4", LongitudinalMechanism(4, 2.0, 1.0, "l_sue"), 0),
    ("longitudinal_l_oue_5", LongitudinalMechanism(5, 3.0, 1.0, "l_oue"), 4),
    ("longitudinal_l_osue_3", LongitudinalMechanism(3, 2.0, 0.5, "l_osue"), 1),
    ("longitudinal_l_soue_4", LongitudinalMechanism(4, 1.5, 0.5, "l_soue"), 3),
    ("dbitflip_6_2", DBitFlipPM(6, 2.0, n_sampled=2), 3),
    ("dbitflip_5_1", DBitFlipPM(5, 1.0, n_sampled=1), 0),
    ("1bitmean_10_4_at_3.3", OneBitMeanPM(10.0, 1.0, 4), 3.3),
    ("1bitmean_24_8_at_24", OneBitMeanPM(24.0, 0.5, 8), 24.0),
]


def _secret_hex(pair):
    """The Python client's 16-byte secret of a server secret row (two little-endian words)."""
    return b"".join(int(word).to_bytes(8, "little") for word in pair).hex()


def memo():
    rng = np.random.default_rng(20261129)
    key = bytes(range(16))
    cases = [{"case": "siphash", "key": key.hex(), "message": bytes(range(n)).hex(),
              "word": str(int(server_prf.siphash24(
                  np.array([int.from_bytes(key[:8], "little")], dtype=np.uint64),
                  np.array([int.from_bytes(key[8:], "little")], dtype=np.uint64),
                  _blocks(bytes(range(n))))[0]))} for n in range(16)]
    secrets = server_prf.new_secrets(24, rng)
    labels = rng.choice(server_prf.PURPOSES, 24)
    values = rng.integers(0, 2**24, 24)
    counters = rng.integers(0, 2**24, 24)
    for secret, label, value, counter in zip(secrets, labels, values, counters, strict=True):
        word = server_prf.prf_words(secret[None, :], str(label), [int(value)], [int(counter)])
        cases.append({"case": "prf", "secret": _secret_hex(secret), "label": str(label),
                      "value": int(value), "counter": int(counter), "word": str(int(word[0]))})
    secrets = server_prf.new_secrets(40, rng)
    for mechanism, values in MEMO_PARITY:
        values = np.asarray(values)
        if isinstance(mechanism, LongitudinalMechanism):
            derived = mechanism.permanent_response(values, secrets[:len(values)])
        else:
            state = MemoState(mechanism, len(values), secrets=secrets[:len(values)])
            derived = mechanism.randomize(values, state)
            if isinstance(derived, tuple):  # dBitFlipPM: buckets then bits
                derived = np.hstack(derived)
        cases.append({"case": "derive", "spec": json.dumps(mechanism.to_dict()),
                      "secrets": [_secret_hex(s) for s in secrets[:len(values)]],
                      "values": values.tolist(),
                      "reports": [_key(row) for row in derived]})
    return cases


def _blocks(message):
    """SipHash's 64-bit blocks of ``message``: whole words, then the tail with the length."""
    tail = len(message) - len(message) % 8
    words = [int.from_bytes(message[i:i + 8], "little") for i in range(0, tail, 8)]
    words.append(int.from_bytes(message[tail:], "little") | (len(message) & 0xFF) << 56)
    return [np.array([w], dtype=np.uint64) for w in words]


MEMO_PARITY = [
    (LongitudinalMechanism(7, 2.0, 1.0, "l_grr"), list(range(7)) * 4),
    (LongitudinalMechanism(70, 2.0, 1.0, "l_grr"), list(range(0, 70, 2))),
    (LongitudinalMechanism(5, 2.0, 1.0, "l_sue"), list(range(5)) * 6),
    (LongitudinalMechanism(9, 3.0, 1.0, "l_oue"), list(range(9)) * 3),
    (LongitudinalMechanism(130, 3.0, 1.0, "l_osue"), list(range(0, 130, 4))),
    (LongitudinalMechanism(64, 1.5, 0.5, "l_soue"), list(range(0, 64, 2))),
    (LongitudinalMechanism(2, 1.5, 0.5, "l_sue"), [0, 1] * 10),
    (DBitFlipPM(6, 2.0, n_sampled=2), list(range(6)) * 5),
    (DBitFlipPM(40, 1.0, n_sampled=7), list(range(40))),
    (OneBitMeanPM(10.0, 1.0, 4), [0.0, 1.0, 2.5, 3.3, 5.0, 7.77, 9.99, 10.0] * 4),
    (OneBitMeanPM(24.0, 0.5, 1000), [0.0, 0.001, 12.3456, 23.999, 24.0] * 8),
]


def integers():
    rng = np.random.default_rng(20261128)
    epsilons = [1e-12, 1e-6, 0.01, 0.1, 0.5, 1.0, 2.0, 4.0, 7.5, 10.0, 20.0, 35.0, 50.0]
    epsilons += [float(x) for x in rng.uniform(0.001, 50.0, 12)]
    makers = {
        "randomized_response": lambda e: RandomizedResponse(7, e),
        "rappor": lambda e: SymmetricUnaryEncoding(5, e),
        "oue": lambda e: OptimizedUnaryEncoding(5, e),
        "subset_selection": lambda e: SubsetSelection(9, e),
        "olh": lambda e: OptimizedLocalHashing(10, e),
        "blh": lambda e: BinaryLocalHashing(10, e),
        "hadamard": lambda e: HadamardResponse(10, e),
        "hrr": lambda e: HadamardRandomizedResponse(10, e),
        "duchi": lambda e: DuchiMechanism(e, (0.0, 1.0)),
        "piecewise": lambda e: PiecewiseMechanism(e, (0.0, 1.0)),
        "hybrid": lambda e: HybridMechanism(e, (0.0, 1.0), grid_size=512),
        "square_wave": lambda e: SquareWaveMechanism(e, (0.0, 1.0), n_buckets=64),
    }
    rows = []
    for epsilon in epsilons:
        for kind, make in makers.items():
            try:
                mechanism = make(epsilon)
            except ValueError as exc:
                rows.append({"kind": kind, "epsilon": epsilon, "error": str(exc)})
                continue
            spec = mechanism.to_json() if hasattr(mechanism, "to_json") else json.dumps(
                mechanism.to_dict())
            row = {"kind": kind, "epsilon": epsilon, "spec": spec}
            if hasattr(mechanism, "grid_spec"):  # numeric: the spec's grid holds the integers
                rows.append(row)
                continue
            if hasattr(mechanism, "q_numerator"):
                row["numerators"] = [str(mechanism.p_numerator), str(mechanism.q_numerator)]
            elif hasattr(mechanism, "p_numerator"):
                row["numerators"] = [str(mechanism.p_numerator)]
            else:
                row["weights"] = [str(int(w)) for w in mechanism.weights]
            rows.append(row)
    return rows


def hashes():
    rng = np.random.default_rng(31)
    cases = []
    for n, g, family in [(7, 3, "tabulation"), (1000, 5, "tabulation"), (2, 2, "tabulation"),
                         (100000, 1024, "tabulation"), (5000, 8, "linear"),
                         (3, 2, "linear"), (2**20, 64, "linear")]:
        if g == 2:
            mechanism = BinaryLocalHashing(n, 1.0, hash_family=family)
        else:
            mechanism = OptimizedLocalHashing(n, 1.0, n_buckets=g, hash_family=family)
        seeds = rng.integers(0, 2**64, 200, dtype=np.uint64, endpoint=False)
        seeds[:2] = [0, 2**64 - 1]
        cells = rng.integers(0, n, 200)
        cells[:2] = [0, n - 1]
        buckets = mechanism.hash_values(seeds, cells)
        cases.append({"spec": mechanism.to_json(),
                      "seeds": [str(int(s)) for s in seeds],
                      "cells": [int(c) for c in cells],
                      "buckets": [int(b) for b in buckets]})
    return cases


def _edited(kind, field, n_inputs=6, params=None, **top):
    spec = {"version": 1, "mechanism": kind, "epsilon": 1.0, "n_inputs": n_inputs,
            "params": {} if params is None else params}
    spec.update(top)
    return {"field": field, "spec": {k: v for k, v in spec.items() if v != "<absent>"}}


def hostile():
    cases = [
        _edited("randomized_response", "version", version=2),
        _edited("randomized_response", "version", version="<absent>"),
        _edited("randomized_response", "version", version="1"),
        _edited("oue", "unknown mechanism", mechanism="oue2"),
        _edited("oue", "mechanism", mechanism="<absent>"),
        {"field": "mechanism", "spec": [1, 2]},
        _edited("randomized_response", "n_inputs", n_inputs=0),
        _edited("randomized_response", "n_inputs", n_inputs=-3),
        _edited("randomized_response", "n_inputs", n_inputs=2.5),
        _edited("randomized_response", "n_inputs", n_inputs="5"),
        _edited("randomized_response", "n_inputs", n_inputs=True),
        _edited("randomized_response", "n_inputs", n_inputs="<absent>"),
        _edited("rappor", "epsilon", epsilon=0),
        _edited("rappor", "epsilon", epsilon=-1.0),
        _edited("rappor", "epsilon", epsilon=51.0),
        _edited("rappor", "epsilon", epsilon=1e308),
        _edited("rappor", "epsilon", epsilon="1.0"),
        _edited("rappor", "epsilon", epsilon=None),
        _edited("rappor", "epsilon", epsilon="<absent>"),
        _edited("oue", "params", params=[1]),
        # An edited probability: oracles derive theirs from epsilon and refuse any other.
        _edited("oue", "'p_numerator'", params={"p_numerator": 2**52 - 1}),
        _edited("randomized_response", "'keep_probability'",
                params={"keep_probability": 0.99}),
        _edited("olh", "n_buckets", params={"n_buckets": 1}),
        _edited("olh", "n_buckets", params={"n_buckets": 2**21}),
        _edited("olh", "n_buckets", params={"n_buckets": 2.5}),
        _edited("olh", "n_buckets", params={"n_buckets": 6, "hash_family": "linear"}),
        _edited("olh", "hash_family", params={"n_buckets": 4, "hash_family": "md5"}),
        _edited("blh", "'n_buckets'", params={"n_buckets": 4}),
        _edited("subset_selection", "subset_size", params={}),
        _edited("subset_selection", "subset_size", params={"subset_size": 0}),
        _edited("subset_selection", "subset_size", params={"subset_size": 6}),
        _edited("subset_selection", "n_inputs", n_inputs=1, params={"subset_size": 1}),
        _edited("hadamard", "n_blocks", params={"n_blocks": 2, "block_size": 4}),
        _edited("hadamard", "block_size", params={"n_blocks": 2, "block_size": 3, "hole": 1}),
        _edited("hadamard", "hole", params={"n_blocks": 2, "block_size": 4, "hole": 3}),
        _edited("hadamard", "n_blocks", params={"n_blocks": 1, "block_size": 4, "hole": 1}),
        _edited("hadamard", "n_blocks", params={"n_blocks": 64, "block_size": 4, "hole": 1}),
        _edited("hrr", "'n_blocks'", params={"n_blocks": 2}),
    ]
    numeric = [json.loads(json.dumps(m.to_dict())) for m in (
        PiecewiseMechanism(1.0, (0.0, 1.0), grid_size=64), HybridMechanism(1.5, (0.0, 1.0)),
        SquareWaveMechanism(1.0, (0.0, 1.0), n_buckets=8, grid_size=16),
        DuchiMechanism(1.0, (0.0, 1.0)))]
    piecewise, hybrid, square_wave, duchi = numeric

    e = np.exp(1.0)
    table_spec = json.loads(FactorizationMechanism(
        np.full((3, 3), 1 / (e + 2)) + np.eye(3) * (e - 1) / (e + 2), 1.0).to_json())
    table = table_spec["table"]

    def with_table(field, rows, **top):
        return {"field": field, "spec": {**table_spec, "table": rows, **top}}

    cases += [
        with_table("table", [table[0][:2], *table[1:]]),
        with_table("table", [[table[0][0] + 0.5, *table[0][1:]], *table[1:]]),
        with_table("table", [[2**52 + 1, *table[0][1:]], *table[1:]]),
        with_table("column 0", [[table[0][0] + 1, *table[0][1:]], *table[1:]]),
        # Column sums kept, row 0's ratio pushed past e^eps.
        with_table("row 0", [[table[0][0] + table[1][0] - 1, *table[0][1:]],
                             [1, *table[1][1:]], table[2]]),
        with_table("table", []),
        with_table("precision", table, precision=53),
        with_table("'Q'", table, Q=[[1]]),
        _edited("haar", "'branching'", params={"branching": 2}),
        _edited("hierarchical", "branching", params={"branching": 1}),
        _edited("hierarchical", "oracle", params={"oracle": "rappor"}),
        _edited("hierarchical", "olh_hash", params={"oracle": "olh", "olh_hash": "md5"}),
        _edited("marg_ht", "shape", n_inputs=12, params={"shape": [3, 2, 3], "max_order": 2}),
        _edited("marg_rr", "shape", n_inputs=12, params={"shape": [12, 1], "max_order": 1}),
        _edited("inp_ht", "shape", n_inputs=12, params={"shape": "3x4", "max_order": 1}),
        _edited("marg_ps", "max_order", n_inputs=12, params={"shape": [3, 4], "max_order": 3}),
        _edited("inp_em", "max_order", n_inputs=12, params={"shape": [3, 4]}),
        _edited("inp_rr", "'order'", n_inputs=12, params={"shape": [3, 4], "max_order": 1,
                                                          "order": 2}),
    ]
    sampled = json.loads(json.dumps(SampledMeanMechanism(
        1.0, [(0, 1), (0, 10)], n_sampled=2, base="piecewise", grid_size=8).to_dict()))
    cases += [
        edit(sampled, "grid['value_epsilon']", grid__value_epsilon=1.0),
        edit(sampled, "grid['base']", grid__base__window=5),
        edit(sampled, "params['n_sampled']", params__n_sampled=3),
        edit(sampled, "params['base']", params__base="square_wave"),
        edit(sampled, "params", params__extra=1),
        edit(sampled, "params['grid_size']", params__base="duchi"),
        edit(sampled, "bounds[1]", bounds=[[0, 1], [2, 1]]),
        edit(sampled, "bounds", bounds=[]),
    ]
    prefix = json.loads(json.dumps(PrefixHeavyHitters(
        16, 2.0, protocol="pem", n_candidates=4, extension_bits=2).to_dict()))
    cases += [
        edit(prefix, "bit_length", bit_length=0),
        edit(prefix, "bit_length", bit_length=2048),
        edit(prefix, "protocol", protocol="sfp"),
        edit(prefix, "n_candidates", n_candidates=0),
        edit(prefix, "extension_bits", protocol="treehist"),
        edit(prefix, "n_candidates * 2^extension_bits", n_candidates=2**15),
        edit(prefix, "'n_candidates'", n_candidates="<absent>"),
        edit(prefix, "'seed'", seed=3),
    ]
    sketch = json.loads(json.dumps(SketchFrequencyOracle(2.0, n_hashes=2, width=8).to_dict()))
    cases += [
        edit(sketch, "n_hashes", n_hashes=0),
        edit(sketch, "width", width=1),
        edit(sketch, "width", width=6, hadamard=True),
        edit(sketch, "hadamard", hadamard=1),
        edit(sketch, "hash_seed", hash_seed=-1),
        edit(sketch, "hash_seed", hash_seed=2**64),
        edit(sketch, "bit_length", bit_length=0),
        edit(sketch, "'hash_seeds'", hash_seeds=[1]),
    ]
    multi = json.loads(json.dumps(MultiAttributeMechanism((3, 2), 1.0).to_dict()))
    cases += [
        edit(multi, "shape", shape=[3, 1]),
        edit(multi, "shape", shape=[]),
        edit(multi, "shape", shape=[2**24, 2]),
        edit(multi, "params['protocol']", params__protocol="lh"),
        edit(multi, "params['oracle']", params__oracle="oue_z"),
        edit(multi, "params['neighbourhood']", params__neighbourhood="user"),
        edit(multi, "params['neighbourhood']", params__neighbourhood="attribute"),
        edit(multi, "params", params__seed=1),
        edit(multi, "'shape'", shape="<absent>"),
    ]
    mixed = json.loads(ColumnsMechanism([
        column_part(["x"], DuchiMechanism(0.5, (0.0, 1.0))),
        column_part(["pet"], RandomizedResponse(3, 0.25))]).to_json())
    x_part, pet_part = mixed["params"]["parts"]
    cases += [
        edit(mixed, "epsilon=0.5", epsilon=0.5),
        edit(mixed, "n_inputs=3", n_inputs=3),
        edit(mixed, "params", params__parts=[]),
        {"field": "['x']", "spec": {**mixed, "params": {"parts": [
            x_part, {"columns": ["x"], "spec": pet_part["spec"]}]}}},
        {"field": "part 1", "spec": {**mixed, "params": {"parts": [
            x_part, {"columns": ["pet"], "spec": {**pet_part["spec"], "version": 2}}]}}},
        {"field": "'gaussian'", "spec": {**mixed, "params": {"parts": [
            x_part, {"columns": ["pet"], "spec": {**pet_part["spec"],
                                                  "mechanism": "gaussian", "version": 2}}]}}},
        {"field": "part 1", "spec": {**mixed, "params": {"parts": [
            x_part, {"columns": ["pet"]}]}}},
    ]
    weights = piecewise["grid"]["weights"]
    cases += [
        # Edited probabilities: the grid's integer weights, window, size and mixture.
        edit(piecewise, "grid['weights']", grid__weights=[weights[0] + 1, weights[1]]),
        edit(piecewise, "grid['weights']", grid__weights=[weights[1], weights[0]]),
        edit(piecewise, "grid['window']", grid__window=piecewise["grid"]["window"] + 1),
        edit(piecewise, "grid['cells']", grid__cells=128),
        edit(hybrid, "grid['alpha_numerator']", grid__alpha_numerator=2**52),
        edit(duchi, "grid['weights']", grid__weights=[2**28 - 1, 1]),
        edit(square_wave, "grid['fraction_bits']", grid__fraction_bits=51),
        edit(piecewise, "grid", grid="<absent>"),
        edit(piecewise, "'grid'", grid=[1, 2]),
        edit(piecewise, "version", version=1),
        edit(piecewise, "'extra'", extra=1),
        edit(piecewise, "bounds", bounds=[1.0, 1.0]),
        edit(piecewise, "bounds", bounds=[0.0]),
        edit(piecewise, "bounds", bounds=["0", 1.0]),
        edit(piecewise, "bounds", bounds=[1e15, 1e15 + 2]),
        edit(piecewise, "epsilon", epsilon=0.0),
        edit(piecewise, "params['grid_size']", params__grid_size=2**17),
        edit(piecewise, "params['grid_size']", params__grid_size=None),
        edit(duchi, "'grid_size'", params__grid_size=16),
        edit(square_wave, "n_buckets", params__n_buckets=1),
        edit(square_wave, "n_buckets", params__grid_size=20),
    ]
    # A string column's length round (length_round_spec): its field and its oracle.
    length_spec = length_round_spec(2.0, 16)
    cases += [
        {"field": "length_round", "spec": {**length_spec, "length_round": [65536, 16]}},
        {"field": "first_round", "spec": {**length_spec, "length_round": {
            "first_round": 7, "max_string_bytes": 16}}},
        {"field": "max_string_bytes", "spec": {**length_spec, "length_round": {
            "first_round": 65536, "max_string_bytes": 256}}},
        {"field": "8-bit length", "spec": {**length_spec, "bit_length": 16}},
        {"field": "8-bit length", "spec": {**length_spec, "max_string_bytes": 16}},
    ]
    cases += _memo_hostile()
    cases += _set_valued_hostile()
    cases += _itemset_hostile()
    for case in cases:
        try:
            Randomizer(case["spec"])
        except ValueError as exc:
            case["python_message"] = str(exc)
        else:
            raise AssertionError(f"the Python client accepts {case['spec']}")
    return cases


def _memo_hostile():
    """Edited specifications of the memoizing kinds (refused before any state is touched)."""
    grr = LongitudinalMechanism(5, 2.0, 1.0, "l_grr").to_dict()
    sue = LongitudinalMechanism(4, 2.0, 1.0, "l_sue").to_dict()
    oue = LongitudinalMechanism(4, 2.0, 1.0, "l_oue").to_dict()
    dbit = DBitFlipPM(6, 1.0, n_sampled=2).to_dict()
    one_bit = OneBitMeanPM(10.0, 1.0, 4).to_dict()

    def edit(spec, field, numerators=None, **changes):
        edited = json.loads(json.dumps(spec))
        edited.update(changes)
        edited["numerators" if numerators is not None else "_"] = numerators
        edited.pop("_", None)
        return {"field": field, "spec": {k: v for k, v in edited.items() if v != "<absent>"}}

    numerators = grr["numerators"]
    return [
        edit(grr, "version", version=2),
        edit(grr, "n_cells", n_cells=1),
        edit(grr, "n_cells", n_cells=2**24 + 1),
        edit(grr, "n_cells", n_cells="5"),
        edit(grr, "epsilon_perm", epsilon_perm=0.0),
        edit(grr, "epsilon_1", epsilon_1=2.0),
        edit(grr, "epsilon_1", epsilon_1="<absent>"),
        edit(grr, "protocol", protocol="l_xyz"),
        edit(grr, "'extra'", extra=1),
        edit(grr, "numerators", numerators={"keep_perm": numerators["keep_perm"]}),
        edit(grr, "numerators.keep_instant",
             numerators={**numerators, "keep_instant": 2**52 + 1}),
        edit(grr, "numerators.keep_perm", numerators={**numerators, "keep_perm": 2**52}),
        edit(grr, "numerators.keep_perm",
             numerators={**numerators, "keep_perm": numerators["keep_perm"] + 1}),
        edit(grr, "epsilon_perm", numerators={**numerators, "keep_perm": 2**52 - 4}),
        edit(grr, "epsilon_1", numerators={**numerators, "keep_instant": 2**52 - 1}),
        edit(sue, "numerators.p_perm",
             numerators={**sue["numerators"], "p_perm": sue["numerators"]["p_perm"] - 1}),
        edit(oue, "numerators.p_instant",
             numerators={**oue["numerators"], "p_instant": 2**52}),
        edit(sue, "epsilon_perm", numerators={**sue["numerators"], "q_perm": 1,
                                              "p_perm": 2**52 - 1}),
        edit(dbit, "n_sampled", n_sampled=0),
        edit(dbit, "n_sampled", n_sampled=7),
        edit(dbit, "n_cells", n_cells=True),
        edit(dbit, "epsilon", epsilon=51.0),
        edit(dbit, "'numerators'", numerators={}),
        edit(one_bit, "max_value", max_value=0.0),
        edit(one_bit, "max_value", max_value=-1.0),
        edit(one_bit, "max_value", max_value="10"),
        edit(one_bit, "n_segments", n_segments=0),
        edit(one_bit, "n_segments", n_segments=2**20 + 1),
        edit(one_bit, "epsilon", epsilon=None),
    ]


def _set_valued_laws():
    """Set-valued and key-value records: sets shorter and longer than the pad length, the
    empty record (dummies only), labelled items, local hashing given the report's seed."""
    grr = SetItemMechanism(6, 3, 1.0, oracle="grr", max_set_size=4)
    olh = SetItemMechanism(6, 3, 1.0, oracle="olh", max_set_size=4, items=list("abcdef"))
    pckv = PCKVGRR(4, 2, 1.0, value_steps=4, max_set_size=3)
    cases = [_law("set_items_grr_short", grr, [0, 2]),
             _law("set_items_grr_long", grr, [5, 1, 3, 4]),
             _law("set_items_grr_empty", grr, []),
             _law("pckv_grr_short", pckv, [[3, -1.0], [1, 0.5]]),
             _law("pckv_grr_long", pckv, [[0, 1.0], [1, 0.25], [2, -0.75]]),
             _law("pckv_grr_empty", pckv, []),
             _law("pckv_grr_eps3_steps1", PCKVGRR(3, 1, 3.0, value_steps=1), [[2, -1.0]])]
    # PCKV-UE: 3^(d + L) packed reports (27 and 81 here); labelled keys travel in the spec.
    pckv_ue = PCKVUE(2, 2, 1.0, value_steps=4, max_set_size=2)
    cases += [_law("pckv_ue_short", pckv_ue, [[1, 0.5]]),
              _law("pckv_ue_empty", pckv_ue, []),
              _law("pckv_ue_eps3_steps1", PCKVUE(2, 1, 3.0, value_steps=1), [[0, -1.0]])]
    labelled = PCKVUE(2, 1, 1.0, value_steps=2, keys=["x", 7])
    case = _law("pckv_ue_labels", labelled, [[1, 0.5]])
    cases.append({**case, "value": [[7, 0.5]]})  # the label of the key code 1
    for i, seed in enumerate((5, 2**64 - 1)):
        case = _law(f"set_items_olh_labels_seed{i}", olh, [4, 1],
                    seeds=np.array([seed], dtype=np.uint64))
        cases.append({**case, "value": ["e", "b"]})  # the labels of the codes [4, 1]
    return cases


def _set_valued_hostile():
    """Edited set_items and pckv_grr specifications (sizes, oracles, weights, params)."""
    items = json.loads(SetItemMechanism(6, 3, 1.0, oracle="grr", max_set_size=4).to_json())
    pckv = json.loads(PCKVGRR(4, 2, 1.0, value_steps=4, max_set_size=3).to_json())
    a, d, keep, flip = pckv["weights"]
    ue = json.loads(PCKVUE(2, 1, 1.0, value_steps=4, keys=["a", "b"]).to_json())
    ue_keep, ue_flip, q_num = ue["weights"]

    short_oracle = {"mechanism": "randomized_response", "n_inputs": 9, "epsilon": 1.0}
    return [
        edit(items, "params", params__extra=1),
        edit(items, "params", params__items="<absent>"),
        edit(items, "'params'", params="<absent>"),
        edit(items, "n_inputs", n_inputs=0),
        edit(items, "n_inputs", n_inputs="6"),
        edit(items, "pad_length", params__pad_length=0),
        edit(items, "pad_length", params__pad_length=4097),
        edit(items, "max_set_size", params__max_set_size=4097),
        edit(items, "max_set_size", params__max_set_size=2.5),
        edit(items, "'oracle'", oracle="<absent>"),
        edit(items, "oracle", oracle={**short_oracle, "mechanism": "oue"}),
        edit(items, "oracle", oracle={**short_oracle, "n_inputs": 8}),
        edit(items, "oracle", oracle={**short_oracle, "epsilon": 2.0}),
        edit(items, "oracle", oracle=[1]),
        edit(items, "'keep_probability'", oracle__params={"keep_probability": 0.99}),
        edit(items, "epsilon", epsilon=0.0, oracle__epsilon=0.0),
        edit(items, "items", params__items=["a", "b"]),
        edit(items, "items", params__items="abcdef"),
        edit(pckv, "params", params__extra=1),
        edit(pckv, "params", params=[1]),
        edit(pckv, "listed twice", params__keys=["a", "a", "b", "c"]),
        edit(pckv, "key label", params__keys=["a", 1.5, "b", "c"]),
        edit(pckv, "key label", params__keys=["a", None, "b", "c"]),
        edit(pckv, "key label", params__keys=["a", "b", "c", "x" * 300]),
        edit(pckv, "4 labels", params__keys=["a", "b", "c", "d", "e"]),
        edit(pckv, "4 labels", params__keys="abcd"),
        edit(pckv, "epsilon", epsilon=0.0),
        edit(pckv, "epsilon", epsilon="1.0"),
        edit(pckv, "n_inputs", n_inputs=2.5),
        edit(pckv, "value_steps", params__value_steps=0),
        edit(pckv, "value_steps", params__value_steps=2**30 + 1),
        edit(pckv, "pad_length", params__pad_length=-1),
        edit(pckv, "'weights'", weights="<absent>"),
        edit(pckv, "weights", weights=[a, d, keep]),
        edit(pckv, "weights", weights=[a, d, keep, 0]),
        edit(pckv, "weights", weights=[a, d, keep, 2**62]),
        edit(pckv, "weights", weights=[a, d, keep, True]),
        edit(pckv, "weights", weights=[a, d, keep, 1.5]),
        # Edited probabilities: a stronger key signal, a sign kept more often, no signal.
        edit(pckv, "weights", weights=[2 * a, d, keep, flip]),
        edit(pckv, "weights", weights=[a, d, 2 * keep, flip]),
        edit(pckv, "weights", weights=[a, d, flip, keep]),
        edit(pckv, "weights", weights=[d, a, keep, flip]),
        # PCKV-UE: its three weights (value kept, flipped, the fake entries' numerator).
        edit(ue, "weights", weights=[ue_keep, ue_flip]),
        edit(ue, "weights", weights=[ue_keep, ue_flip, 0]),
        edit(ue, "weights", weights=[ue_keep, ue_flip, q_num // 2]),   # fewer fakes
        edit(ue, "weights", weights=[ue_keep, ue_flip, 2**52]),        # all fake: no signal
        edit(ue, "weights", weights=[2 * ue_keep, ue_flip, q_num]),
        edit(ue, "listed twice", params__keys=["a", "a"]),
    ]


ITEMSET_PHASE1 = {"mail": 0.6, "maps": 0.5, "chat": 0.3, "news": 0.1}
ITEMSET_ITEMS = ["mail", "maps", "chat", "news", "games"]


def _itemset_laws():
    """Itemset records (SVSM's itemset round): a set containing every candidate, one
    containing none, one containing one; local hashing given the report's seed. The law is
    set_items' over the contained candidates."""
    cases = []
    for oracle, sets in (("grr", (["mail", "maps", "chat"], ["news"], ["chat", "maps"])),
                         ("olh", (["mail", "maps", "chat"],))):
        spec = itemset_spec(ITEMSET_PHASE1, ITEMSET_ITEMS, 3, 1.0, top_k=3, pad_length=2,
                            oracle=oracle)
        mechanism = itemset_round_mechanism(spec)
        candidates = [set(itemset) for itemset in spec["params"]["candidates"]]
        for i, value in enumerate(sets):
            contained = [j for j, itemset in enumerate(candidates) if itemset <= set(value)]
            extra = {"seeds": np.array([2**64 - 3], dtype=np.uint64)} if oracle == "olh" else {}
            case = _law(f"itemsets_{oracle}_{i}", mechanism, contained, **extra)
            cases.append({**case, "spec": json.dumps(spec), "value": value})
    return cases


def _itemset_hostile():
    """Edited itemset specifications: candidates listed twice, unknown items, over the cap,
    of one item, items listed twice, a set_items part not over the candidates."""
    spec = itemset_spec(ITEMSET_PHASE1, ITEMSET_ITEMS, 3, 1.0, top_k=3)
    pairs = spec["params"]["candidates"]
    return [
        edit(spec, "is listed twice", params__candidates=pairs + [["maps", "mail"]]),
        edit(spec, "'tetris'", params__candidates=[["mail", "tetris"]] + pairs[1:]),
        edit(spec, "max_set_size=3", params__candidates=[["mail", "maps", "chat", "news"]]
             + pairs[1:]),
        edit(spec, "max_set_size=3", params__candidates=[["mail"]] + pairs[1:]),
        edit(spec, "lists an item twice", params__candidates=[["mail", "mail"]] + pairs[1:]),
        edit(spec, "listed twice in items", params__items=ITEMSET_ITEMS + ["mail"]),
        edit(spec, "items", params__items=["mail"]),
        edit(spec, "candidates", params__candidates=[]),
        edit(spec, "'set_items'", params__candidates=pairs[:-1]),
        edit(spec, "'set_items'", set_items__epsilon=2.0),
        edit(spec, "max_set_size", params__max_set_size=4097),
        edit(spec, "params", params__extra=1),
    ]


def main(check=False):
    FIXTURES.mkdir(exist_ok=True)
    stale = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # decoders of extreme epsilons warn; unused here
        for name, rows in (("laws", laws()), ("integers", integers()), ("hashes", hashes()),
                           ("memo", memo()), ("hostile", hostile())):
            # One case a line: diffs stay readable, the file small.
            text = "[\n" + ",\n".join(json.dumps(row) for row in rows) + "\n]\n"
            path = FIXTURES / f"{name}.json"
            if not check:
                path.write_text(text)
            elif not path.exists() or path.read_text() != text:
                stale.append(str(path))
    if stale:
        print(f"stale fixtures (rerun clients/js/test/make_fixtures.py): {stale}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(check="--check" in sys.argv[1:]))
