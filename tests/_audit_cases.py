"""Small instances of every mechanism kind and their adversarial inputs, for the privacy
audit (``tests/test_privacy_audit.py`` and ``benchmarks/audit_privacy.py``).

Each case builds one mechanism per epsilon and lists the inputs to compare, as ``randomize``
takes them for one user: the smallest and the largest category, the two bounds, neighbouring
floats (5.0 and 5.0000001 within bounds (0, 10)).
"""

import json
import math
import warnings
from typing import Callable, NamedTuple

import numpy as np

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.collect import reports_from_client, stack_client_reports
from sklearn_ldp.mechanisms import (
    BinaryLocalHashing,
    FactorizationMechanism,
    HaarHRR,
    HadamardRandomizedResponse,
    HadamardResponse,
    HierarchicalHistogram,
    OneBitRandomizer,
    OptimizedLocalHashing,
    OptimizedUnaryEncoding,
    RandomizedResponse,
    SubsetSelection,
    SymmetricUnaryEncoding,
    hadamard_strategy,
)
from sklearn_ldp.mechanisms._base.mechanism import Mechanism
from sklearn_ldp.mechanisms.bassily.gaussian import GaussianMechanism
from sklearn_ldp.mechanisms.bassily.rejection import (
    MAX_REJECTION_EPSILON,
    GaussianRejectionMechanism,
)
from sklearn_ldp.mechanisms.central.count import count_law, geometric_mechanism, sample_outputs
from sklearn_ldp.mechanisms.central.discrete_gaussian import (
    audit_reach,
    discrete_gaussian_law,
    sample_discrete_gaussian,
)
from sklearn_ldp.mechanisms.central.matrix import MatrixMechanism
from sklearn_ldp.mechanisms.heavy_hitters.prefix import PrefixHeavyHitters
from sklearn_ldp.mechanisms.heavy_hitters.rappor import RapporMechanism
from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle
from sklearn_ldp.mechanisms.heavy_hitters.values import encode_values
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (
    DBitFlipPM,
    LongitudinalMechanism,
    MemoState,
    OneBitMeanPM,
)
from sklearn_ldp.mechanisms.marginals.em import InpEM
from sklearn_ldp.mechanisms.marginals.input_perturbation import InpHT, InpPS, InpRR
from sklearn_ldp.mechanisms.marginals.marginal_perturbation import MargHT, MargPS, MargRR
from sklearn_ldp.mechanisms.multi_attribute.columns import ColumnsMechanism, column_part
from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
from sklearn_ldp.mechanisms.multi_range.grids import GridRangeMechanism
from sklearn_ldp.mechanisms.numeric.means import (
    DuchiMechanism,
    HybridMechanism,
    PiecewiseMechanism,
    SampledMeanMechanism,
)
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism
from sklearn_ldp.mechanisms.oracles.histogram_encoding import (
    SummationHistogramEncoding,
    ThresholdingHistogramEncoding,
)
from sklearn_ldp.mechanisms.set_valued.pckv import PCKVGRR
from sklearn_ldp.mechanisms.set_valued.pckv_ue import PCKVUE
from sklearn_ldp.mechanisms.set_valued.svim import SetItemMechanism


class CountRelease(NamedTuple):
    """A central count mechanism seen through the audit's interface: neighbouring inputs
    are adjacent counts, so a case lists one adjacent pair of counts."""

    P: np.ndarray
    epsilon: float

    def exact_law(self, count):
        return count_law(self.P, self.epsilon, count)

    def randomize(self, counts, rng):
        return sample_outputs(self.P, np.asarray(counts), rng, epsilon=self.epsilon)


class FirstRound(NamedTuple):
    """A memoizing mechanism's first report, as the audit sees it: every report comes from a
    fresh user (a new secret), and the claim is the first report's epsilon (``epsilon_1``
    for the RAPPOR-style protocols). The client's state files are audited in
    ``tests/test_exact_longitudinal.py``."""

    mechanism: object
    epsilon: float

    def exact_law(self, value):
        return self.mechanism.exact_law(value)

    def randomize(self, values, rng):
        state = MemoState(self.mechanism, len(values), rng=rng)
        return self.mechanism.randomize(np.asarray(values), state, rng)


def rappor_case(epsilon):
    """A small RAPPOR (6 bits, 2 hashes, 2 cohorts, f = 1/4, p = 1 - q) with the largest ``q
    = j / 256`` whose one-report epsilon is within ``epsilon``; its ``randomize`` draws fresh
    users (a new secret each: cohort and permanent response). The permanent response's
    ``epsilon_inf`` is checked in ``tests/test_rappor.py``."""
    for j in range(255, 128, -1):
        mechanism = RapporMechanism(6, 2, 2, f=0.25, p=1 - j / 256, q=j / 256)
        if mechanism.epsilon_1 <= epsilon:
            return mechanism
    raise ValueError(f"no small RAPPOR instance within epsilon={epsilon!r}.")


class CentralDiscreteGaussian(NamedTuple):
    """The central matrix mechanism with discrete Gaussian noise (``noise="discrete"``) on a
    one-row strategy, seen through the audit's interface: an input is a data vector (counts
    per cell), and a case lists neighbours only (datasets one record apart), since every pair
    of listed inputs is compared. Its release is ``A_int x`` plus ``N_Z(0, sigma2)``."""

    mechanism: MatrixMechanism
    support: tuple

    @classmethod
    def build(cls, strategy, epsilon, delta, counts):
        mechanism = MatrixMechanism(strategy, epsilon, delta, noise="discrete")
        centres = [int(mechanism._integer[0] @ np.asarray(c)) for c in counts]
        reach = audit_reach(mechanism.sigma2, delta)
        return cls(mechanism, (min(centres) - reach, max(centres) + reach))

    @property
    def epsilon(self):
        return self.mechanism.epsilon

    @property
    def delta(self):
        return self.mechanism.delta

    def exact_law(self, counts):
        centre = int(self.mechanism._integer[0] @ np.asarray(counts))
        return discrete_gaussian_law(self.mechanism.sigma2, [centre], [1], self.support)

    def randomize(self, counts, rng):
        # measure() releases one data vector: n releases of one vector draw the same noise
        # (sample_discrete_gaussian) around the same centre, in one call.
        counts = np.asarray(counts)
        centres = counts @ self.mechanism._integer[0]
        return (centres + sample_discrete_gaussian(self.mechanism.sigma2, len(counts),
                                                   rng))[:, None]


class KeyValuePairs(NamedTuple):
    """PCKV-GRR seen through the audit's interface: an input is one user's list of
    ``[key, value]`` pairs (``randomize`` takes the keys and values apart)."""

    mechanism: PCKVGRR

    @property
    def epsilon(self):
        return self.mechanism.epsilon

    def exact_law(self, pairs):
        return self.mechanism.exact_law(pairs)

    def to_dict(self):
        return self.mechanism.to_dict()

    def randomize(self, rows, rng):
        rows = np.asarray(rows, dtype=float).reshape(len(rows), -1, 2)
        lengths = np.full(rows.shape[0], rows.shape[1])
        keys = rows[:, :, 0].astype(np.int64).ravel()
        return self.mechanism.randomize((lengths, keys, rows[:, :, 1].ravel()), rng)


class Case(NamedTuple):
    """How to audit one kind."""

    build: Callable  # epsilon -> mechanism (a small instance)
    values: list  # adversarial inputs; the first two and the last two are sampled
    client: bool = True  # the standard-library client has this kind
    enumerable_reports: bool = True  # sampled reports lie in a finite listed set
    # Reports are not rows of the law's outputs (PEM / TreeHist: the law is given the public
    # seed, and reports carry fresh seeds): their sampling against the law is tested in this
    # module. The black box still runs on them (event_keys).
    sampling_tested_in: str = None
    max_epsilon: float = math.inf  # larger claims are refused by the kind (gaussian_pure)


def mixed_record(epsilon):
    """A small ``"columns"`` record (LDPEncoder's mixed frames): a number by Piecewise on a
    16-point grid (half the budget), a category by randomized response (a quarter) and two
    categories by SMP (a quarter); the shares add up to ``epsilon`` exactly."""
    return ColumnsMechanism([
        column_part(["x"], PiecewiseMechanism(epsilon / 2, BOUNDS, grid_size=16)),
        column_part(["c"], RandomizedResponse(3, epsilon / 4)),
        column_part(["a", "b"], MultiAttributeMechanism((2, 2), epsilon / 4, protocol="smp")),
    ])


CELLS = [0, 7, 1, 6]  # the smallest and largest category first
SET_VALUES = [[0, 1, 2], [5, 6, 7], [-1, -1, -1], [3, 4, 7]]  # sets padded with -1
# Contained candidate itemsets (SVSM's itemset round), padded with -1 to 12.
ITEMSET_VALUES = [[0, 1, 2, 3] + [-1] * 8, [8, 9, 10, 11] + [-1] * 8, [-1] * 12,
                  list(range(12))]
NUMBERS = [5.0, 5.0000001, 0.0, 10.0]
BOUNDS = (0.0, 10.0)
SKETCH_VALUES = [0, 2**64 - 1, 1, 2**64 - 2]
# One query (a report's law is enumerated on a 1-D lattice): the bounds +-1, a value and its
# next double, 0 and a small entry; types 0..3 are compared.
ONE_QUERY = np.array([[1.0, -1.0, 0.3, np.nextafter(0.3, 1.0), 0.0, 1e-3]])
GAUSSIAN_DELTA = 1e-6

CASES = {
    "randomized_response": Case(lambda eps: RandomizedResponse(8, eps), CELLS),
    "rappor": Case(lambda eps: SymmetricUnaryEncoding(8, eps), CELLS),
    "oue": Case(lambda eps: OptimizedUnaryEncoding(8, eps), CELLS),
    "olh": Case(lambda eps: OptimizedLocalHashing(8, eps), CELLS, enumerable_reports=False),
    "blh": Case(lambda eps: BinaryLocalHashing(8, eps), CELLS, enumerable_reports=False),
    "hadamard": Case(lambda eps: HadamardResponse(8, eps), CELLS),
    "hrr": Case(lambda eps: HadamardRandomizedResponse(8, eps), CELLS),
    "subset_selection": Case(lambda eps: SubsetSelection(8, eps), CELLS),
    "hierarchical": Case(lambda eps: HierarchicalHistogram(8, eps, branching=2,
                                                           oracle="hrr"), CELLS),
    "haar": Case(lambda eps: HaarHRR(8, eps), CELLS),
    # A dense strategy matrix, sampled from its integer table.
    "factorization": Case(lambda eps: FactorizationMechanism(hadamard_strategy(8, eps), eps),
                          CELLS),
    # Central counts 0..40 (the geometric mechanism): adjacent counts are the neighbours.
    "count": Case(lambda eps: CountRelease(geometric_mechanism(40, eps), eps), [20, 21],
                  client=False),
    "count_edge": Case(lambda eps: CountRelease(geometric_mechanism(40, eps), eps), [0, 1],
                       client=False),
    # (epsilon, delta): Bassily's Gaussian (exact rounding bit, discrete Gaussian) and the
    # central discrete Gaussian on a one-row strategy, the record added to the cell of the
    # largest entry; gaussian_pure (pure epsilon, claims up to 2 ln 2).
    "gaussian": Case(lambda eps: GaussianMechanism(6, eps, delta=GAUSSIAN_DELTA,
                                                   workload=ONE_QUERY), [0, 1, 2, 3],
                     enumerable_reports=False, sampling_tested_in="tests/test_exact_gaussian.py"),
    "gaussian_pure": Case(lambda eps: GaussianRejectionMechanism(6, eps, workload=ONE_QUERY),
                          [0, 1, 2, 3], enumerable_reports=False,
                          sampling_tested_in="tests/test_exact_gaussian.py",
                          max_epsilon=MAX_REJECTION_EPSILON),
    "central_discrete_gaussian": Case(
        lambda eps: CentralDiscreteGaussian.build([[0.5, -1.0, 0.25]], eps, GAUSSIAN_DELTA,
                                                  [[3, 2, 1], [3, 3, 1]]),
        [[3, 2, 1], [3, 3, 1]], client=False, enumerable_reports=False,
        sampling_tested_in="tests/test_exact_gaussian.py"),
    # Marginals over 2 x 3 x 2 cells (a non-binary attribute has invalid codes), 2-way.
    "inp_rr": Case(lambda eps: InpRR(8, eps, [2, 2, 2], 2), [0, 7, 1, 6]),
    "inp_ps": Case(lambda eps: InpPS(12, eps, [2, 3, 2], 2), [0, 11, 1, 10]),
    "inp_ht": Case(lambda eps: InpHT(12, eps, [2, 3, 2], 2), [0, 11, 1, 10]),
    "marg_rr": Case(lambda eps: MargRR(12, eps, [2, 3, 2], 2), [0, 11, 1, 10]),
    "marg_ps": Case(lambda eps: MargPS(12, eps, [2, 3, 2], 2), [0, 11, 1, 10]),
    "marg_ht": Case(lambda eps: MargHT(12, eps, [2, 3, 2], 2), [0, 11, 1, 10]),
    "inp_em": Case(lambda eps: InpEM(12, eps, [2, 3, 2], 2), [0, 11, 1, 10]),
    # Heavy hitters on 5-bit values (laws given the public seed 0) and a 2 x 4 sketch.
    "prefix_heavy_hitters": Case(
        lambda eps: PrefixHeavyHitters(5, eps, protocol="pem", n_candidates=2,
                                       extension_bits=2), [0, 31, 1, 30],
        sampling_tested_in="tests/test_exact_heavy_hitters.py"),
    "treehist": Case(
        lambda eps: PrefixHeavyHitters(5, eps, protocol="treehist", n_candidates=2),
        [0, 31, 1, 30], sampling_tested_in="tests/test_exact_heavy_hitters.py"),
    # Sketch reports are rows of the law's outputs (report_rows) for the public hash seed.
    # The smallest and largest 64-bit values and their neighbours (with hash seed 77, 1 and
    # 30 share both buckets: identical laws, nothing for a distinguisher to find).
    "sketch": Case(lambda eps: SketchFrequencyOracle(eps, n_hashes=2, width=4, hash_seed=77),
                   SKETCH_VALUES),
    "sketch_hadamard": Case(
        lambda eps: SketchFrequencyOracle(eps, n_hashes=2, width=4, hadamard=True,
                                          hash_seed=77), SKETCH_VALUES),
    # Several attributes (3 x 2 categories): a record per user (rows of report_rows).
    **{f"multi_attribute_{protocol}_{oracle}": Case(
        lambda eps, p=protocol, o=oracle: MultiAttributeMechanism([3, 2], eps, p, o),
        [[0, 0], [2, 1], [1, 0], [2, 0]])
       for protocol, oracle in (("spl", "grr"), ("spl", "oue"), ("smp", "grr"),
                                ("smp", "oue"), ("rsfd", "grr"), ("rsfd", "oue_z"),
                                ("rsfd", "oue_r"))},
    # Memoized collection: one round, fresh users (epsilon_perm = 2 * epsilon_1).
    **{protocol: Case(lambda eps, p=protocol: FirstRound(LongitudinalMechanism(
        5, 2 * eps, eps, p), eps), [0, 4, 1, 3], client=False)
       for protocol in ("l_grr", "l_oue", "l_osue", "l_sue", "l_soue")},
    "dbitflip_pm": Case(lambda eps: FirstRound(DBitFlipPM(5, eps, n_sampled=2), eps),
                        [0, 4, 1, 3], client=False),
    # RAPPOR: one report of a fresh user; values whose Bloom filters differ.
    "bloom_rappor": Case(rappor_case, ["a", "zz", "", "example.com"], client=False),
    "1bitmean_pm": Case(lambda eps: FirstRound(OneBitMeanPM(10.0, eps), eps),
                        [5.0, 5.0000001, 0.0, 10.0], client=False),
    "duchi": Case(lambda eps: DuchiMechanism(eps, BOUNDS), NUMBERS),
    # Grids of 64 cells: the client's 4,000 reports fill them enough for a chi-square test.
    "piecewise": Case(lambda eps: PiecewiseMechanism(eps, BOUNDS, grid_size=64), NUMBERS),
    "hybrid": Case(lambda eps: HybridMechanism(eps, BOUNDS, grid_size=64), NUMBERS),
    "square_wave": Case(lambda eps: SquareWaveMechanism(eps, BOUNDS, n_bins=16,
                                                        grid_size=64), NUMBERS),
    "sampled_mean": Case(lambda eps: SampledMeanMechanism(eps, [BOUNDS, BOUNDS],
                                                          grid_size=64),
                         [[5.0, 0.0], [5.0000001, 10.0], [0.0, 0.0], [10.0, 10.0]]),
    "one_bit": Case(lambda eps: OneBitRandomizer(eps, 10.0), [5.0, 5.0000001, -10.0, 10.0],
                    client=False),
    # LDPEncoder's mixed records, as a whole (the product of the parts' laws): records that
    # differ in every column, neighbouring floats, the bounds, extreme categories.
    "columns": Case(mixed_record, [[5.0, 0, 0, 0], [5.0000001, 2, 1, 1], [0.0, 0, 1, 0],
                                   [10.0, 2, 0, 1]]),
    # TDG / HDG over two numbers (laws given the seed among 0..7): neighbouring floats on a
    # cell edge (5.0 starts the second of 2 cells), the bounds.
    **{"multi_range" + ("" if method == "hdg" else "_tdg"): Case(
        lambda eps, m=method: GridRangeMechanism(eps, [BOUNDS, BOUNDS], method=m, g2=2,
                                                 g1=4 if m == "hdg" else None),
        [[5.0, 0.0], [np.nextafter(5.0, 0.0), 10.0], [0.0, 0.0], [10.0, 10.0]],
        enumerable_reports=False) for method in ("hdg", "tdg")},
    # Histogram encoding: SHE's law on 3 cells (a window of 6^3 outputs and the envelope
    # r^-2 beyond), its sampler tested coordinate by coordinate in its own module; THE is
    # unary encoding's law.
    "she": Case(lambda eps: SummationHistogramEncoding(3, eps), [0, 2, 1],
                sampling_tested_in="tests/test_she_the.py"),
    "the": Case(lambda eps: ThresholdingHistogramEncoding(8, eps), CELLS),
    # Set-valued data (SVIM): one user's set of at most 3 of 8 items, padded to 3; the worst
    # pairs are disjoint full sets, and a full set against the empty set.
    "set_items": Case(lambda eps: SetItemMechanism(8, 3, eps, oracle="grr", max_set_size=3),
                      SET_VALUES),
    "set_items_olh": Case(lambda eps: SetItemMechanism(8, 3, eps, oracle="olh",
                                                       max_set_size=3),
                          SET_VALUES, enumerable_reports=False),
    # Frequent itemsets (SVSM): the itemset round is set_items over the indices of 2k = 12
    # candidate itemsets, padded to 4; a user contains 0 .. 12 of them. Disjoint lists of 4,
    # none against all 12.
    "set_items_itemsets": Case(lambda eps: SetItemMechanism(12, 4, eps, oracle="grr",
                                                            max_set_size=12), ITEMSET_VALUES),
    "set_items_itemsets_olh": Case(lambda eps: SetItemMechanism(12, 4, eps, oracle="olh",
                                                                max_set_size=12),
                                   ITEMSET_VALUES, enumerable_reports=False),
    # Key-value data (PCKV-GRR): pairs of 4 keys, values on the lattice of 1/2; the same key
    # with opposite values, disjoint keys, the empty set.
    "pckv_grr": Case(lambda eps: KeyValuePairs(PCKVGRR(4, 2, eps, value_steps=2,
                                                       max_set_size=2)),
                     [[[0, 1.0], [1, -1.0]], [[0, -1.0], [1, 1.0]], [], [[2, 0.5]]]),
    # Key-value data (PCKV-UE): 2 keys padded to 1 (27 outputs), values on the lattice of
    # 1/2; the same key with opposite values, disjoint keys, the empty set.
    "pckv_ue": Case(lambda eps: KeyValuePairs(PCKVUE(2, 1, eps, value_steps=2,
                                                     max_set_size=1)),
                    [[[0, 1.0]], [[0, -1.0]], [], [[1, 0.5]]]),
}


def sampled_pairs(case):
    """The pairs of inputs whose reports are sampled: the first two and the last two."""
    return [tuple(case.values[:2]), tuple(case.values[-2:])]


def server_reports(mechanism, value, n, rng):
    """``n`` reports of one input drawn by the server's ``randomize``, one row each."""
    if isinstance(mechanism, SketchFrequencyOracle):
        values = encode_values(np.full(n, value, dtype=np.uint64), 64)
    elif isinstance(mechanism, PrefixHeavyHitters):
        values = encode_values(np.full(n, value, dtype=np.uint64), mechanism.bit_length)
    else:
        values = np.repeat(np.asarray([value]), n, axis=0)
    return _as_rows(mechanism.randomize(values, rng), mechanism)


def _as_rows(reports, mechanism):
    """Reports as one array, one row each, as the exact law lists them (sampled means come
    as (attributes, values); multi-attribute reports and sketches have ``report_rows``)."""
    if isinstance(mechanism, (MultiAttributeMechanism, SketchFrequencyOracle)):
        return mechanism.report_rows(reports)
    if isinstance(reports, tuple):
        return np.hstack([np.asarray(part, dtype=float).reshape(len(part), -1)
                          for part in reports])
    return getattr(reports, "reports", reports)


def client_reports(mechanism, value, n, seed):
    """``n`` reports of one input drawn by the standard-library client (seeded for the test),
    stacked as the server reads them."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded-client warning: seeded on purpose
        randomizer = Randomizer.from_json(json.dumps(mechanism.to_dict()), seed=seed)
        if isinstance(mechanism, ColumnsMechanism):  # a record is a dict column -> value
            value = dict(zip(mechanism.columns, value, strict=True))
        elif isinstance(mechanism, SketchFrequencyOracle):  # a value and its bit length
            value = [value, 64]
        elif isinstance(mechanism, SetItemMechanism):  # a set: its items without the -1 padding
            value = [item for item in value if item != -1]
        elif isinstance(mechanism, KeyValuePairs):  # [key, value] pairs, keys as integers
            value = [[int(key), number] for key, number in value]
            mechanism = mechanism.mechanism
        sent = [json.loads(json.dumps(randomizer.privatize(value))) for _ in range(n)]
    if isinstance(mechanism, Mechanism):
        return reports_from_client(sent, mechanism).reports
    return _as_rows(stack_client_reports(sent, mechanism), mechanism)


def event_keys(mechanism, value):
    """How the black-box distinguisher groups reports into events (None: one event per
    report).

    Local hashing: whether the report's bucket is the hash of ``value`` under its public seed
    (every report carries a fresh seed, so raw reports never repeat). PEM / TreeHist
    (reports ``[round, seed, y]``, a fresh seed each): the round, and whether ``y`` is the
    hash of ``value``'s prefix of that round under the report's seed -- the output the two
    inputs differ on most. Real-valued reports: 64 equal bins of their range (for the
    Gaussian kinds, of a fixed range: 4 sigma beyond the centres; bottom its own event);
    ``"columns"``
    records, 4 per report column. Sketches and multi-attribute reports of the small cases
    have few enough outputs to be events themselves.
    """
    if isinstance(mechanism, (OptimizedLocalHashing, BinaryLocalHashing)):
        return lambda reports: (mechanism.hash_values(
            reports[:, 0], np.full(reports.shape[0], value)) == reports[:, 1]).astype(int)
    if isinstance(mechanism, PrefixHeavyHitters):
        return lambda reports: _prefix_keys(mechanism, value, reports)
    if isinstance(mechanism, GridRangeMechanism):
        return lambda reports: _grid_keys(mechanism, value, reports)
    if isinstance(mechanism, ColumnsMechanism):
        # 4 bins per report column: the categorical codes of the small case stay apart, the
        # number's 16 grid points become 4 events, so the record's few hundred outputs
        # become few enough events for the held-out half to bound.
        return lambda reports: _bins(np.asarray(reports, dtype=float), n_bins=4)
    if isinstance(mechanism, (GaussianMechanism, GaussianRejectionMechanism,
                              CentralDiscreteGaussian)):
        return _gaussian_bins(mechanism)
    if isinstance(mechanism, (PiecewiseMechanism, HybridMechanism, SquareWaveMechanism,
                              DuchiMechanism, SampledMeanMechanism)):
        return lambda reports: _bins(np.asarray(reports, dtype=float))
    return None


def _prefix_keys(finder, value, reports):
    """``2 round + [y == own hash of value]`` for PEM / TreeHist reports."""
    reports = np.asarray(reports, dtype=np.uint64)
    words = encode_values(np.full(reports.shape[0], value, dtype=np.uint64), finder.bit_length)
    rounds = reports[:, 0].astype(np.int64)
    own = finder.own_hashes(words, rounds, reports[:, 1])
    return 2 * rounds + (np.asarray(own, dtype=np.uint64) == reports[:, 2])


def _grid_keys(mechanism, value, reports):
    """``2 group + [bucket == own hash of value's cell]`` for TDG / HDG reports."""
    reports = np.asarray(reports, dtype=np.uint64)
    codes = mechanism.codes(np.asarray([value], dtype=float))
    keys = 2 * reports[:, 0].astype(np.int64)
    for k in range(mechanism.n_groups):
        rows = reports[:, 0] == k
        cell = np.full(int(rows.sum()), mechanism.group_cells(codes, k)[0])
        own = mechanism.oracle_of(k).hash_values(reports[rows, 1], cell)
        keys[rows] += own == reports[rows, 2]
    return keys


def _bins(reports, n_bins=64):
    """``n_bins`` equal bins per report column, over the range of the mechanism's
    reports."""
    rows = reports.reshape(reports.shape[0], -1)
    low, high = rows.min(axis=0), rows.max(axis=0)
    width = np.where(high > low, high - low, 1.0)
    codes = np.minimum((rows - low) / width * n_bins, n_bins - 1).astype(np.int64)
    return np.ravel_multi_index(tuple(codes.T), (n_bins,) * rows.shape[1])



def _gaussian_bins(mechanism):
    """64 equal bins over the centres +- 4 sigma (the same edges for both inputs' reports),
    the outside as two more events and bottom (a NaN row of gaussian_pure) as one more."""
    if isinstance(mechanism, CentralDiscreteGaussian):
        low, high = mechanism.support
        sigma = math.sqrt(mechanism.mechanism.sigma2)
        low, high = low + (high - low) / 2 - 4 * sigma, low + (high - low) / 2 + 4 * sigma
    elif isinstance(mechanism, GaussianMechanism):
        low = float(mechanism.A.min()) - 4 * mechanism.sigma
        high = float(mechanism.A.max()) + 4 * mechanism.sigma
    else:
        low, high = -4 * mechanism.sigma, 4 * mechanism.sigma

    def keys(reports):
        values = np.asarray(reports, dtype=float).reshape(len(reports), -1)[:, 0]
        codes = np.floor((values - low) / (high - low) * 64)
        codes = np.where(np.isnan(codes), 66, np.clip(codes, -1, 64) + 1)
        return codes.astype(np.int64)

    return keys
