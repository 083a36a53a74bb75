"""Error analysis from structured workloads: every mechanism's variance computed from a Gram
operator or a workload equals the dense formulas, and large domains never form an ``n x n``
Gram or a ``p x n`` workload."""

import functools

import numpy as np
import pytest
import scipy.sparse

from sklearn_ldp import _gram, workloads
from sklearn_ldp.mechanisms import (
    BinaryLocalHashing,
    FactorizationMechanism,
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
    fourier_strategy,
    hierarchical_strategy,
    randomized_response_strategy,
)
from sklearn_ldp.mechanisms.ranges.tree_structure import node_sums, tree_consistency

EPSILON = 1.0
# Two small domains: a mixed one (24 cells) and a binary one (16 cells, for parities).
DOMAINS = {
    "mixed": {"a": ["x", "y", "z"], "b": [0, 1], "c": ["p", "q", "r", "s"]},
    "binary": {"a": [0, 1], "b": [0, 1], "c": [0, 1], "d": [0, 1]},
}


def _workloads(domain_name):
    domain = DOMAINS[domain_name]
    n = int(np.prod([len(v) for v in domain.values()]))
    rng = np.random.default_rng(3)
    cases = {
        "histogram": workloads.histogram(domain),
        "total": workloads.total(domain),
        "prefix": workloads.prefix(domain),
        "all_range": workloads.all_range(domain),
        "ranges": workloads.ranges(domain, [(0, 3), (2, 2), (5, n - 1), (0, n - 1)]),
        "marginals_k1": workloads.marginals(domain, k=1),
        "marginals_k2": workloads.marginals(domain, k=2),
        "range_marginals": workloads.range_marginals(domain, k=2),
        "stack_weighted": workloads.stack(
            [workloads.histogram(domain), workloads.prefix(domain),
             workloads.marginals(domain, k=1)], weights=[2.0, 0.5, 1.5]),
        "dense": workloads.custom(rng.normal(size=(5, n))),
        "sparse": workloads.custom(
            scipy.sparse.random(6, n, density=0.3, random_state=4, format="csr")),
    }
    if domain_name == "binary":
        cases["parity"] = workloads.parity(domain, k=2)
    return cases


WORKLOADS = {(d, name): w for d in DOMAINS for name, w in _workloads(d).items()}


def _dense_baselines(n, shape):
    return {
        "hierarchical_matrix": FactorizationMechanism(
            hierarchical_strategy(n, EPSILON, 4), EPSILON, "hierarchical_matrix"),
        "fourier": FactorizationMechanism(fourier_strategy(shape, EPSILON, 2), EPSILON,
                                          "fourier"),
        "rr_matrix": FactorizationMechanism(randomized_response_strategy(n, EPSILON), EPSILON),
        "hadamard": HadamardResponse(n, EPSILON),
        "gaussian": GaussianMechanism(n, EPSILON, 1e-6,
                                      workloads.prefix(n).toarray()),
        "gaussian_pure": GaussianRejectionMechanism(n, EPSILON,
                                                    workloads.histogram(n).toarray()),
    }


@functools.cache
def _mechanisms(domain_name):
    shape = tuple(len(v) for v in DOMAINS[domain_name].values())
    n = int(np.prod(shape))
    mechanisms = {
        "randomized_response": RandomizedResponse(n, EPSILON),
        "sue": SymmetricUnaryEncoding(n, EPSILON),
        "oue": OptimizedUnaryEncoding(n, EPSILON),
        "olh": OptimizedLocalHashing(n, EPSILON),
        "blh": BinaryLocalHashing(n, EPSILON),
        "subset": SubsetSelection(n, EPSILON),
        "hrr": HadamardRandomizedResponse(n, EPSILON),
        "haar": HaarHRR(n, EPSILON),
        "hh_oue_2": HierarchicalHistogram(n, EPSILON, 2, "oue"),
        "hh_olh_3": HierarchicalHistogram(n, EPSILON, 3, "olh"),
        "hh_hrr_4": HierarchicalHistogram(n, EPSILON, 4, "hrr"),
        "hh_oue_5": HierarchicalHistogram(n, EPSILON, 5, "oue"),
    }
    mechanisms.update(_dense_baselines(n, shape))
    return mechanisms


MECHANISM_NAMES = sorted(_mechanisms("mixed"))


def _scale(reference, dense_gram):
    """A magnitude for absolute tolerances: a workload the mechanism answers exactly (the
    total, for range mechanisms) has a variance that is round-off."""
    return max(float(np.max(np.abs(reference))), float(np.trace(dense_gram)), 1.0)


@pytest.mark.parametrize("workload_key", sorted(WORKLOADS), ids="-".join)
@pytest.mark.parametrize("mechanism_name", MECHANISM_NAMES)
def test_structured_errors_equal_the_dense_formulas(mechanism_name, workload_key):
    mechanism = _mechanisms(workload_key[0])[mechanism_name]
    workload = WORKLOADS[workload_key]
    W = workload.toarray()
    dense_gram = W.T @ W
    z_matrix = mechanism.query_variance(W)
    reference = z_matrix.sum(axis=0)  # sum over the queries of the dense per-query variance
    atol = 1e-9 * _scale(reference, dense_gram)

    from_operator = mechanism.per_user_variance(workload.gram())
    from_array = mechanism.per_user_variance(dense_gram)
    from_workload = mechanism.per_user_variance(workload)
    for z in (from_operator, from_array, from_workload):
        assert z.shape == (mechanism.n_inputs,)
        np.testing.assert_allclose(z, reference, rtol=1e-9, atol=atol)

    error = mechanism.expected_error(workload.gram(), n_users=7)
    assert error["worst_case"] == pytest.approx(7 * reference.max(), rel=1e-9, abs=7 * atol)
    assert error["average_case"] == pytest.approx(7 * reference.mean(), rel=1e-9, abs=7 * atol)

    worst, average = mechanism.query_variance_summary(workload)
    row_atol = 1e-9 * max(float(np.max(np.abs(z_matrix))), float(np.max(np.sum(W * W, axis=1))))
    np.testing.assert_allclose(worst, z_matrix.max(axis=1), rtol=1e-9, atol=row_atol)
    np.testing.assert_allclose(average, z_matrix.mean(axis=1), rtol=1e-9, atol=row_atol)
    dense_worst, dense_average = mechanism.query_variance_summary(W)
    np.testing.assert_allclose(dense_worst, worst, rtol=1e-9, atol=row_atol)
    np.testing.assert_allclose(dense_average, average, rtol=1e-9, atol=row_atol)

    rng = np.random.default_rng(5)
    statistic = mechanism.aggregate(mechanism.randomize(rng.integers(0, W.shape[1], 50), rng))
    expected = mechanism.sum_of_squared_answers(statistic, dense_gram)
    assert mechanism.sum_of_squared_answers(statistic, workload.gram()) == pytest.approx(
        expected, rel=1e-8, abs=1e-8 * 50 * _scale(reference, dense_gram))

    assert mechanism.supports(workload) == mechanism.supports(W)
    assert mechanism.supports_gram(workload.gram()) == mechanism.supports_gram(dense_gram)


def _dense_tree_variance(mechanism, gram):
    """The former dense ``O(h n^2)`` computation of the tree's ``z``: ``M G M`` by two
    consistency passes over the columns, then the level Grams ``T_l G T_l^T``."""
    n, height = mechanism.n_inputs, mechanism.height
    root = mechanism.root_weights()
    both_sides = mechanism._consistency_operator(mechanism._consistency_operator(gram)[-1].T)
    toward_root = mechanism._consistency_operator(gram @ root)
    z = -np.diag(gram).copy()
    for k, (oracle, width, m, s2) in enumerate(zip(
            mechanism.level_oracles, mechanism.widths, mechanism.level_sizes,
            mechanism.level_variances, strict=True)):
        level_gram = node_sums(both_sides[k].T, width, m) / (s2 * s2)
        per_node = (height * oracle.per_user_variance(level_gram)
                    + height * np.diag(level_gram) + 2 * toward_root[k] / s2
                    + float(root @ gram @ root) / height)
        z += per_node[np.arange(n) // width]
    return z


@pytest.mark.parametrize("n", [37, 100, 1000])
@pytest.mark.parametrize("branching", [2, 3, 4, 5])
def test_tree_matches_the_dense_path_off_powers_of_the_branching(n, branching):
    rng = np.random.default_rng(n + branching)
    oracle = ["oue", "olh", "hrr"][(n + branching) % 3]
    mechanism = HierarchicalHistogram(n, EPSILON, branching, oracle)
    X = rng.normal(size=(8, n))
    cases = [workloads.histogram(n), workloads.prefix(n), workloads.all_range(n),
             workloads.stack([workloads.prefix(n), workloads.histogram(n)], weights=[1.0, 3.0])]
    for workload in cases:
        dense_gram = workload.gram().toarray()
        reference = _dense_tree_variance(mechanism, dense_gram)
        np.testing.assert_allclose(mechanism.per_user_variance(workload.gram()), reference,
                                   rtol=1e-9, atol=1e-9 * _scale(reference, dense_gram))
    # A general (dense) Gram goes through the same structured algorithm.
    dense_gram = X.T @ X
    reference = _dense_tree_variance(mechanism, dense_gram)
    np.testing.assert_allclose(mechanism.per_user_variance(dense_gram), reference, rtol=1e-9,
                               atol=1e-9 * _scale(reference, dense_gram))


def test_tree_level_diagonals_are_the_consistent_node_weights():
    # D_l[j] = (M 1_j)^T G (M 1_j) / s_l^4 with M 1_j from the consistency pass itself.
    mechanism = HierarchicalHistogram(23, EPSILON, 3, "oue")
    gram = workloads.all_range(23).gram()
    diagonals = mechanism._level_gram_diagonals(gram)
    dense = gram.toarray()
    for k, (width, m, s2) in enumerate(zip(mechanism.widths, mechanism.level_sizes,
                                           mechanism.level_variances, strict=True)):
        indicators = np.zeros((m, 23))
        for j in range(m):
            indicators[j, j * width:(j + 1) * width] = 1.0
        weights = mechanism._consistency_operator(indicators)[-1]  # rows: M 1_j
        expected = np.einsum("ij,jk,ik->i", weights, dense, weights) / s2**2
        np.testing.assert_allclose(diagonals[k], expected, rtol=1e-10,
                                   atol=1e-10 * np.abs(expected).max())


# ---------------------------------------------------------------------- Gram extensions
GRAM_CASES = {
    "identity": workloads.histogram(37),
    "ones": workloads.total(37),
    "prefix": workloads.prefix(37),
    "all_range": workloads.all_range(37),
    "weighted": workloads.stack([workloads.histogram(37), workloads.all_range(37)],
                                weights=[2.0, 0.5]),
    "kron": workloads.kron([workloads.prefix(4), workloads.total(2), workloads.all_range(8)]),
    "marginals": workloads.marginals(DOMAINS["mixed"], k=2),
    "ranges": workloads.ranges(37, [(0, 5), (3, 36)]),
}


@pytest.mark.parametrize("name", sorted(GRAM_CASES))
@pytest.mark.parametrize("width", [1, 2, 3, 4, 8, 12, 16, 37, 64])
def test_block_row_sums_match_the_dense_gram(name, width):
    gram = GRAM_CASES[name].gram()
    dense = GRAM_CASES[name].toarray()
    dense = dense.T @ dense
    n = dense.shape[0]
    block = np.arange(n) // width
    expected = np.array([dense[x, block == block[x]].sum() for x in range(n)])
    np.testing.assert_allclose(gram.block_row_sums(width), expected, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(_gram.DenseGram(dense).block_row_sums(width), expected,
                               rtol=1e-12, atol=1e-9)
    # Summing R over a block gives the block's own sum.
    np.testing.assert_allclose(node_sums(gram.block_row_sums(width), width, -(-n // width)),
                               gram.block_sums(width), rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(gram.block_sums(width), _gram.DenseGram(dense).block_sums(width),
                               rtol=1e-12, atol=1e-9)


def test_interval_gram_matches_the_dense_gram():
    rng = np.random.default_rng(6)
    for n in (1, 2, 37, 100):
        ends = rng.integers(0, n, size=(2, 40))
        lo, hi = ends.min(axis=0), ends.max(axis=0)
        gram = _gram.IntervalGram(n, lo, hi)
        dense = workloads.Intervals(n, lo, hi).toarray()
        dense = _gram.DenseGram(dense.T @ dense)
        np.testing.assert_allclose(gram.toarray(), dense.toarray())
        np.testing.assert_allclose(gram.diagonal(), dense.diagonal())
        np.testing.assert_allclose(gram.row_sums(), dense.row_sums())
        for width in (1, 2, 3, 8, 37, 128):
            np.testing.assert_allclose(gram.block_sums(width), dense.block_sums(width))
            np.testing.assert_allclose(gram.block_sums(width, 1), dense.block_sums(width, 1))
            np.testing.assert_allclose(gram.block_row_sums(width), dense.block_row_sums(width))
    with pytest.raises(ValueError, match="lo <= hi"):
        _gram.IntervalGram(5, [3], [2])


def test_range_mechanisms_use_interval_grams_for_chosen_ranges(monkeypatch):
    # A ranges workload has no closed-form Gram, but its intervals give the block sums at
    # n = 2^16 without any dense array; the per-query dense rows are the reference.
    n = 2**16
    rng = np.random.default_rng(7)
    ends = rng.integers(0, n, size=(2, 40))
    workload = workloads.ranges(n, list(zip(ends.min(axis=0).tolist(),
                                            ends.max(axis=0).tolist(), strict=True)))
    mechanisms = (HaarHRR(n, EPSILON), HierarchicalHistogram(n, EPSILON, 4, "olh"),
                  HierarchicalHistogram(n, EPSILON, 3, "oue"))
    with monkeypatch.context() as patch:
        _refuse_dense(patch)
        structured = [m.per_user_variance(workload.gram()) for m in mechanisms]
    for mechanism, z in zip(mechanisms, structured, strict=True):
        np.testing.assert_allclose(z, mechanism._per_user_variance_from_rows(workload),
                                   rtol=1e-9)


def test_supports_blocks_says_which_grams_are_structured():
    assert all(GRAM_CASES[name].gram().supports_blocks(w)
               for name in ("identity", "ones", "prefix", "all_range", "weighted")
               for w in (1, 3, 37, 64))
    kron = GRAM_CASES["kron"].gram()  # factor sizes 4, 2, 8: flat widths that cut no factor
    assert [kron.supports_blocks(w) for w in (1, 2, 8, 16, 32, 64, 128)] == [True] * 7
    assert not kron.supports_blocks(3) and not kron.supports_blocks(12)
    assert GRAM_CASES["ranges"].gram().supports_blocks(2)  # chosen ranges: an IntervalGram
    assert _gram.DenseGram(np.eye(3)).supports_blocks(2)


def test_summary_gram_holds_what_oracles_need():
    summary = _gram.SummaryGram([1.0, 2.0], [0.5, -0.5], 0.0)
    assert summary.trace() == 3.0 and summary.total() == 0.0
    np.testing.assert_array_equal(summary.row_sums(), [0.5, -0.5])
    with pytest.raises(ValueError, match="no products"):
        summary.matvec(np.ones(2))
    dense = np.array([[1.0, -1.0], [-1.0, 2.0]])
    oracle = OptimizedUnaryEncoding(2, EPSILON)
    np.testing.assert_allclose(
        oracle.per_user_variance(_gram.SummaryGram(np.diag(dense), dense.sum(axis=1),
                                                   dense.sum())),
        oracle.per_user_variance(dense))


# ---------------------------------------------------------------------- fallbacks, supports
def test_range_mechanisms_fall_back_to_the_rows_of_large_workloads():
    # Above the dense fallback, a matrix workload (no block structure, not intervals) with
    # few rows is summed over its rows.
    n = 5000
    W = np.zeros((3, n))
    W[0, :10], W[1, 7:] = 1.0, np.linspace(-1.0, 2.0, n - 7)
    W[2, 2500:2600] = 3.0
    workload = workloads.custom(scipy.sparse.csr_array(W))
    assert not workload.gram().supports_blocks(4)
    for mechanism in (HaarHRR(n, EPSILON), HierarchicalHistogram(n, EPSILON, 4, "olh")):
        expected = mechanism.query_variance(W).sum(axis=0)
        np.testing.assert_allclose(mechanism.per_user_variance(workload.gram()), expected,
                                   rtol=1e-9)


def test_range_mechanisms_refuse_grams_without_structure_at_scale():
    # Marginals whose flat blocks cut across the attributes, beyond the dense fallback.
    domain = {"a": list(range(17)), "b": list(range(19)), "c": list(range(23))}
    gram = workloads.marginals(domain, k=1).gram()
    for mechanism in (HaarHRR(gram.n, EPSILON), HierarchicalHistogram(gram.n, EPSILON, 4)):
        with pytest.raises(ValueError, match="needs block sums of the Gram"):
            mechanism.per_user_variance(gram)
    # A matrix workload with too many rows to sum: refused as well.
    n = 2**16
    rows = np.repeat(np.arange(2100), 3)
    columns = np.random.default_rng(8).integers(0, n, size=rows.shape[0])
    many = workloads.custom(scipy.sparse.csr_array((np.ones(rows.shape[0]), (rows, columns)),
                                                   shape=(2100, n)))
    with pytest.raises(ValueError, match="fewer queries"):
        HaarHRR(n, EPSILON).per_user_variance(many.gram())
    # The frequency oracles need only the diagonal and row sums: any Gram works.
    z = OptimizedUnaryEncoding(gram.n, EPSILON).per_user_variance(gram)
    assert z.shape == (gram.n,) and np.all(z > 0)


def test_supports_takes_workloads():
    n = 800  # all ranges: 320400 x 800 entries, beyond the dense limit, checked by its Gram
    strategy = FactorizationMechanism(hierarchical_strategy(n, EPSILON, 4), EPSILON)
    assert strategy.supports(workloads.all_range(n))
    strategy.check_supports(workloads.all_range(n))
    fourier = FactorizationMechanism(fourier_strategy((2, 2, 2), EPSILON, 1), EPSILON)
    assert not fourier.supports(workloads.histogram(8))
    assert not fourier.supports_gram(workloads.histogram(8).gram())
    assert fourier.supports(workloads.marginals({"a": [0, 1], "b": [0, 1], "c": [0, 1]}, k=1))
    with pytest.raises(ValueError, match="cannot answer this workload"):
        fourier.check_supports(workloads.histogram(8))
    for mechanism in (OptimizedLocalHashing(n, EPSILON), HaarHRR(n, EPSILON),
                      HierarchicalHistogram(n, EPSILON)):
        assert mechanism.supports(workloads.all_range(n))
        with pytest.raises(ValueError, match="columns but the mechanism covers"):
            mechanism.check_supports(workloads.prefix(n + 1))


def test_summaries_of_rows_with_more_than_two_values():
    # The smallest centered entry of a row with three values is not in query_stats: HRR and
    # local hashing (c_own < 0) reduce those rows from the dense rows, the others stay O(1).
    n = 12
    W = np.zeros((3, n))
    W[0, :4] = [1.0, 2.0, 3.0, 0.5]
    W[1, :] = 1.0
    W[2, 3:7] = 1.0
    workload = workloads.custom(W)
    for mechanism in (HadamardRandomizedResponse(n, EPSILON), OptimizedLocalHashing(n, EPSILON),
                      OptimizedUnaryEncoding(n, EPSILON)):
        z = mechanism.query_variance(W)
        worst, average = mechanism.query_variance_summary(workload)
        np.testing.assert_allclose(worst, z.max(axis=1), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(average, z.mean(axis=1), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------------- scale
def _refuse_dense(patch):
    """Make every dense Gram or dense workload an error (``patch``: a MonkeyPatch)."""
    def refuse(self, *args, **kwargs):
        raise AssertionError(f"{type(self).__name__}.toarray() was called")

    patch.setattr(_gram.Gram, "toarray", refuse)
    patch.setattr(_gram.DenseGram, "toarray", refuse)
    patch.setattr(workloads.Workload, "toarray", refuse)


@pytest.fixture
def no_dense(monkeypatch):
    """Fail if anything forms a dense Gram or a dense workload."""
    _refuse_dense(monkeypatch)


LARGE_WORKLOADS = {"histogram": workloads.histogram, "prefix": workloads.prefix,
                   "all_range": workloads.all_range}


def _check_large(z, n):
    assert z.shape == (n,)
    assert np.all(np.isfinite(z)) and np.all(z > 0)


@pytest.mark.parametrize("n", [2**16, 2**20])
@pytest.mark.parametrize("name", sorted(LARGE_WORKLOADS))
def test_frequency_oracles_and_haar_at_scale(no_dense, n, name):
    workload = LARGE_WORKLOADS[name](n)
    for mechanism in (OptimizedUnaryEncoding(n, EPSILON), OptimizedLocalHashing(n, EPSILON),
                      RandomizedResponse(n, EPSILON), HadamardRandomizedResponse(n, EPSILON),
                      HaarHRR(n, EPSILON)):
        z = mechanism.per_user_variance(workload.gram())
        _check_large(z, n)
        if name != "all_range":
            # Independent route: the per-query means from query_stats / the intervals (no Gram)
            # add up to the mean over the cells of the Gram-based z.
            _worst, average = mechanism.query_variance_summary(workload)
            assert average.sum() == pytest.approx(z.mean(), rel=1e-9)


def test_haar_histogram_closed_form_at_scale(no_dense):
    # Histogram (G = I) on n = D cells: every level has D / 2^l nodes of 2^l cells, so
    # tr(A_l A_l^T) = D, and (P G P)_uu = 1 - 1/D.
    n = 2**20
    mechanism = HaarHRR(n, EPSILON)
    z = mechanism.per_user_variance(workloads.histogram(n).gram())
    h, c2 = mechanism.height, mechanism.debias**2
    noise = h * c2 * sum(n / 4.0**level for level in range(1, h + 1))
    np.testing.assert_allclose(z, noise - (1 - 1 / n), rtol=1e-12)


@pytest.mark.parametrize("branching, oracle", [(2, "oue"), (3, "olh"), (4, "hrr")])
@pytest.mark.parametrize("name", sorted(LARGE_WORKLOADS))
def test_tree_at_scale(no_dense, branching, oracle, name):
    n = 2**16
    mechanism = HierarchicalHistogram(n, EPSILON, branching, oracle)
    z = mechanism.per_user_variance(LARGE_WORKLOADS[name](n).gram())
    _check_large(z, n)
    # The total is known exactly: its variance is round-off against the histogram's.
    exact = mechanism.per_user_variance(workloads.total(n).gram())
    assert np.max(np.abs(exact)) <= 1e-12 * z.max()


def test_tree_at_scale_equals_its_rows():
    # Aligned Kronecker products keep block structure at n = 2^16; few rows, so the dense
    # per-query path is an independent reference.
    parts = [workloads.kron([workloads.total(4096), workloads.histogram(16)]),
             workloads.kron([workloads.prefix(16), workloads.total(4096)])]
    workload = workloads.stack(parts, weights=[1.0, 0.5])
    n = workload.n_cells
    for mechanism in (HierarchicalHistogram(n, EPSILON, 4, "oue"),
                      HierarchicalHistogram(n, EPSILON, 2, "hrr"), HaarHRR(n, EPSILON)):
        expected = mechanism._per_user_variance_from_rows(workload)
        np.testing.assert_allclose(mechanism.per_user_variance(workload.gram()), expected,
                                   rtol=1e-9)


def test_tree_average_case_matches_its_trace_off_powers():
    # Mean of z over the cells against the per-query averages of the dense rows, at a size
    # that is not a power of the branching (spine nodes at every level).
    n = 2000
    workload = workloads.prefix(n)
    for branching in (3, 5):
        mechanism = HierarchicalHistogram(n, EPSILON, branching, "oue")
        z = mechanism.per_user_variance(workload.gram())
        average = mechanism.average_query_variance(workload.toarray())
        assert z.mean() == pytest.approx(average.sum(), rel=1e-9)


def test_tree_consistency_operator_is_what_the_algorithm_inverts():
    # M 1 = 0 (the level Grams' row sums vanish) on a tree with short spine nodes.
    levels = [np.zeros(m) for m in (2, 4, 7)]
    levels[-1] = np.ones(7)
    consistent = tree_consistency(levels, 0.0, 2)
    np.testing.assert_allclose(consistent[-1], 0.0, atol=1e-12)
