"""Structured Hadamard response: the block-Hadamard decoder, its variances and its simulation
equal the dense factorization mechanism on the same strategy, and scale to 2^20 cells."""

import itertools

import numpy as np
import pytest
from _stats import chi_square_p_value
from scipy import stats
from scipy.linalg import hadamard

from sklearn_ldp import _gram, workloads
from sklearn_ldp.mechanisms import base as mechanisms_base
from sklearn_ldp.mechanisms import hadamard as hadamard_module
from sklearn_ldp.mechanisms._hadamard_blocks import (
    gram_block_product,
    hyperplane_counts,
    interval_walsh,
    walsh_block_diagonals,
)
from sklearn_ldp.mechanisms.base import mechanism_from_json
from sklearn_ldp.mechanisms.factorization import FactorizationMechanism
from sklearn_ldp.mechanisms.hadamard import HadamardResponse, hadamard_shape, hadamard_strategy

EPSILONS = [0.1, 0.5, 1.0, 2.0, 5.0, 10.0]
# Every n up to 70 (full, partial and empty blocks in all combinations), a few powers of two
# (for eps < ln 2 one block, partly filled; above, full blocks plus a small partial one) and
# 2^k - 1 (one full block at small eps).
SIZES = list(range(1, 71)) + [127, 128, 256, 1023, 1024]
RTOL = 1e-9
# Family-wise false-alarm level of each statistical test (fixed seeds make them deterministic).
ALPHA = 1e-4


def _dense(n, epsilon):
    return FactorizationMechanism(hadamard_strategy(n, epsilon), epsilon, "hadamard")


def _assert_close(actual, expected, scale):
    """Equal to ``RTOL`` relative, or ``RTOL * scale`` absolute where the exact value is a
    cancellation (a zero variance, e.g. the total count or n = 1)."""
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=RTOL * scale)


def _grams(n, rng):
    X = rng.normal(size=(3, n))
    return {
        "histogram": workloads.histogram(n).gram(),
        "prefix": workloads.prefix(n).gram(),
        "all_range": workloads.all_range(n).gram(),
        "random": _gram.DenseGram(X.T @ X),
    }


@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("n", SIZES)
def test_structured_equals_the_dense_factorization(n, epsilon):
    if n >= 1023 and (n, epsilon) not in ((1023, 0.5), (1024, 1.0)):
        pytest.skip("the dense reference costs seconds per case at n ~ 2^10: one block "
                    "(1023 cells, eps < ln 2) and two blocks (1024 cells, eps = 1) suffice")
    mechanism, dense = HadamardResponse(n, epsilon), _dense(n, epsilon)
    assert (mechanism.n_outputs, mechanism.n_inputs) == dense.Q.shape
    rng = np.random.default_rng(n * 100 + int(10 * epsilon))
    counts = rng.integers(0, 50, size=mechanism.n_outputs)
    expected = dense.estimate(counts)
    _assert_close(mechanism.estimate(counts), expected, np.abs(expected).max())
    for gram in _grams(n, rng).values():
        G = gram.toarray()
        reference = dense.per_user_variance(G)
        # The second moment sum_o Q[o, u] ||W V e_o||^2 bounds the cancellation in z.
        scale = np.max(reference + np.diag(G))
        for given in (gram, G):
            _assert_close(mechanism.per_user_variance(given), reference, scale)
        answers = dense.sum_of_squared_answers(counts, G)
        assert mechanism.sum_of_squared_answers(counts, gram) == pytest.approx(answers,
                                                                               rel=RTOL)
    ends = np.sort(rng.integers(0, n, size=(4, 2)), axis=1)
    intervals = (np.arange(n) >= ends[:, :1]) & (np.arange(n) <= ends[:, 1:])
    W = np.vstack([rng.normal(size=(3, n)), workloads.prefix(n).toarray()[-4:], intervals])
    reference = dense.query_variance(W)
    scale = np.max(reference + W * W)
    _assert_close(mechanism.query_variance(W), reference, scale)
    _assert_close(mechanism.query_variance(W[0]), reference[:1], scale)
    for workload in (W, workloads.prefix(n)):
        rows = workload if isinstance(workload, np.ndarray) else workload.toarray()
        z = dense.query_variance(rows)
        worst, average = mechanism.query_variance_summary(workload)
        _assert_close(worst, z.max(axis=1), np.max(z + rows * rows))
        _assert_close(average, z.mean(axis=1), np.max(z + rows * rows))


@pytest.mark.parametrize("n, epsilon", [(6, 1.0), (24, 2.0), (13, 0.5), (40, 5.0)])
def test_grams_without_closed_forms_go_dense(n, epsilon):
    """Kronecker marginals, chosen intervals, sums mixing them, custom workloads."""
    mechanism, dense = HadamardResponse(n, epsilon), _dense(n, epsilon)
    domain = {"a": list(range(n // 2 if n % 2 == 0 else n)), "b": [0, 1] if n % 2 == 0 else [0]}
    rng = np.random.default_rng(n)
    cases = [workloads.marginals(domain, k=1),
             workloads.ranges(n, [(0, n // 2), (1, n - 1), (n // 3, n // 3)]),
             workloads.stack([workloads.prefix(domain), workloads.marginals(domain, k=1)],
                             weights=[1.0, 2.0]),
             workloads.custom(rng.normal(size=(4, n)))]
    for workload in cases:
        G = workload.toarray().T @ workload.toarray()
        reference = dense.per_user_variance(G)
        _assert_close(mechanism.per_user_variance(workload), reference,
                      np.max(reference + np.diag(G)))


def test_fallbacks_past_the_dense_limits(monkeypatch):
    """A partial block too large for the dense part: from the dense Gram's eigenvectors (small
    n), from the workload's rows, else a ValueError that says why and what to do."""
    n, epsilon = 50, 0.5  # one block of 64 outputs holding 50 cells
    mechanism, dense = HadamardResponse(n, epsilon), _dense(n, epsilon)
    assert mechanism.n_blocks == 1 and mechanism.block_size == 64
    monkeypatch.setattr(hadamard_module, "PARTIAL_BLOCK_ENTRIES", 100)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(5, n))
    indefinite = X[:2].T @ X[:2] - X[2:].T @ X[2:]  # z is linear in G: any symmetric G
    for gram in (workloads.prefix(n).gram(), _gram.DenseGram(indefinite)):
        G = gram.toarray()
        reference = dense.per_user_variance(G)
        _assert_close(mechanism.per_user_variance(gram), reference,
                      np.max(np.abs(reference) + np.abs(np.diag(G))))
    monkeypatch.setattr(hadamard_module, "DENSE_GRAM_CELLS", 10)
    workload = workloads.prefix(n)
    reference = dense.per_user_variance(workload.toarray().T @ workload.toarray())
    _assert_close(mechanism.per_user_variance(workload), reference, reference.max())
    counts = rng.integers(0, 9, size=mechanism.n_outputs)
    expected = dense.sum_of_squared_answers(counts, workload.toarray().T @ workload.toarray())
    assert mechanism.sum_of_squared_answers(counts, workload) == pytest.approx(expected,
                                                                              rel=RTOL)
    with pytest.raises(ValueError, match=r"last block holds 50 of its 63 cells.*'olh', 'hrr'"):
        mechanism.per_user_variance(_gram.MinMaxGram.prefix(n))  # no rows behind it
    mechanism = HadamardResponse(24, 2.0)  # full blocks of 7 cells
    monkeypatch.setattr(mechanisms_base, "DENSE_GRAM_CELLS", 10)  # gram_with_blocks' limit
    marginals = workloads.marginals({"a": list(range(12)), "b": [0, 1]}, k=1)
    with pytest.raises(ValueError, match="no block sums over 7 consecutive cells|Walsh"):
        mechanism.per_user_variance(marginals.gram().terms[0])  # a bare Kronecker Gram


# ------------------------------------------------------------------ helpers
@pytest.mark.parametrize("size", [1, 2, 4, 8, 64])
def test_interval_walsh_is_the_transform_of_an_interval(size):
    H = hadamard(size)
    for length in range(size + 1):
        np.testing.assert_array_equal(interval_walsh(length, size), H[:, :length].sum(axis=1))


@pytest.mark.parametrize("n, n_blocks, width", [(7, 1, 7), (20, 2, 7), (100, 3, 31),
                                                (3, 3, 1), (64, 2, 15)])
def test_walsh_block_diagonals_and_block_products(n, n_blocks, width):
    H = hadamard(width + 1)
    rng = np.random.default_rng(width)
    X = rng.normal(size=(4, n))
    grams = [_gram.MinMaxGram.prefix(n), _gram.MinMaxGram.all_range(n),
             _gram.IdentityGram(n, 2.0), _gram.OnesGram(n, 3.0), _gram.DenseGram(X.T @ X),
             _gram.SumGram([_gram.ScaledGram(_gram.MinMaxGram.prefix(n), 0.5),
                            _gram.IdentityGram(n)]),
             workloads.marginals({"a": list(range(n // 2 or 1)), "b": [0, 1]}, k=1).gram()
             if n % 2 == 0 else workloads.ranges(n, [(0, n - 1), (1, 1)]).gram()]
    for gram in grams:
        G = gram.toarray()
        expected = np.zeros((n_blocks, width + 1))
        for k in range(n_blocks):
            block = np.zeros((width + 1, width + 1))
            block[1:, 1:] = G[k * width:(k + 1) * width, k * width:(k + 1) * width]
            expected[k] = np.diag(H @ block @ H)
        diagonals = walsh_block_diagonals(gram, n_blocks, width)
        if diagonals is not None:  # None: no closed form (Kronecker, intervals)
            np.testing.assert_allclose(diagonals, expected, rtol=1e-12,
                                       atol=1e-12 * np.abs(expected).max())
        start, stop = 1, min(n, 1 + width)
        Y = rng.normal(size=(stop - start, 3))
        np.testing.assert_allclose(gram_block_product(gram, start, stop, Y),
                                   G[start:stop, start:stop] @ Y, rtol=1e-12, atol=1e-9)


def test_hyperplane_counts_have_the_exact_distribution():
    """Users of columns 1, 2 and 3 of a block of 4 (hyperplanes {0,2}, {0,1}, {0,3}) and of
    column 5 of a block of 8, against every joint outcome enumerated."""
    b = 8
    counts = np.zeros((2, b), dtype=np.int64)
    counts[0, [1, 2, 3]] = [1, 1, 1]
    counts[1, 5] = 2
    H = hadamard(b)
    users = [(k, c) for k in range(2) for c in range(b) for _ in range(counts[k, c])]
    choices = [np.flatnonzero(H[:, c] > 0) for _k, c in users]
    distribution = {}
    for outputs in itertools.product(*choices):
        result = np.zeros((2, b), dtype=np.int64)
        for (k, _c), y in zip(users, outputs, strict=True):
            result[k, y] += 1
        key = result.tobytes()
        distribution[key] = distribution.get(key, 0.0) + 1.0 / np.prod(
            [len(choice) for choice in choices])
    index = {key: i for i, key in enumerate(distribution)}
    rng = np.random.default_rng(4)
    draws = 5000
    observed = np.zeros(len(index))
    for _ in range(draws):
        drawn = hyperplane_counts(counts, rng)
        assert drawn.dtype == np.int64 and np.array_equal(drawn.sum(axis=1), counts.sum(axis=1))
        observed[index[drawn.tobytes()]] += 1
    expected = draws * np.array(list(distribution.values()))
    assert chi_square_p_value(observed, expected) > ALPHA


@pytest.mark.parametrize("n, epsilon, per_cell", [(13, 2.0, 200), (30, 1.0, 3), (9, 0.5, 400),
                                                  (20, 5.0, 500), (100, 3.0, 1)])
def test_simulate_statistic_moments(n, epsilon, per_cell):
    """Mean and variance of the simulated output counts equal the multinomial ones; the
    large counts take the multinomial and bit-splitting paths, the small ones per-user
    draws."""
    mechanism = HadamardResponse(n, epsilon)
    Q = mechanism.strategy_matrix()
    rng = np.random.default_rng(n)
    type_counts = rng.integers(0, 2 * per_cell + 1, size=n)
    type_counts[n // 2] = 0
    draws = 2000
    statistics = np.array([mechanism.simulate_statistic(type_counts, rng)
                           for _ in range(draws)])
    assert statistics.dtype == np.int64
    assert np.all(statistics.sum(axis=1) == type_counts.sum())
    mean = Q @ type_counts
    variance = (Q * (1 - Q)) @ type_counts  # independent users: sums of Bernoulli variances
    m = Q.shape[0]
    z = (statistics.mean(axis=0) - mean) / np.sqrt(variance / draws)
    assert np.max(np.abs(z)) < stats.norm.isf(ALPHA / (2 * m))
    ratio = statistics.var(axis=0, ddof=1) / variance
    assert np.all(ratio > stats.chi2.ppf(ALPHA / (2 * m), draws - 1) / (draws - 1))
    assert np.all(ratio < stats.chi2.isf(ALPHA / (2 * m), draws - 1) / (draws - 1))
    assert not mechanism.simulate_statistic(np.zeros(n, dtype=int), rng).any()


def test_the_simulation_agrees_with_randomize_and_the_exact_estimate_moments():
    """Estimates from simulated statistics: unbiased, with the analytic variance."""
    n, epsilon, repeats = 37, 1.0, 600
    mechanism = HadamardResponse(n, epsilon)
    rng = np.random.default_rng(2)
    x = rng.integers(0, 300, size=n)
    estimates = np.array([mechanism.estimate(mechanism.simulate_statistic(x, rng))
                          for _ in range(repeats)])
    W = workloads.prefix(n).toarray()[:-1]  # the last prefix, the total, is exact
    answers = estimates @ W.T
    variance = mechanism.query_variance(W) @ x
    z = (answers.mean(axis=0) - W @ x) / np.sqrt(variance / repeats)
    assert np.max(np.abs(z)) < stats.norm.isf(ALPHA / (2 * W.shape[0]))
    ratio = answers.var(axis=0, ddof=1) / variance
    assert np.all(ratio > stats.chi2.ppf(ALPHA / (2 * W.shape[0]), repeats - 1) / (repeats - 1))
    assert np.all(ratio < stats.chi2.isf(ALPHA / (2 * W.shape[0]), repeats - 1) / (repeats - 1))
    np.testing.assert_allclose(estimates.sum(axis=1), x.sum(), rtol=1e-9)


# ------------------------------------------------------------------ interface
def test_interface_without_the_dense_strategy():
    mechanism = HadamardResponse(21, 2.0)
    np.testing.assert_array_equal(mechanism.Q, hadamard_strategy(21, 2.0))
    np.testing.assert_array_equal(mechanism.strategy_matrix(), mechanism.Q)
    assert mechanism.null_space_dim == 0
    assert mechanism.supports(workloads.prefix(21)) and mechanism.supports_gram(np.eye(21))
    with pytest.raises(ValueError, match="21 columns"):
        mechanism.query_variance(np.ones((2, 20)))
    with pytest.raises(ValueError, match="statistic"):
        mechanism.estimate(np.zeros(mechanism.n_outputs - 1))
    with pytest.raises(ValueError, match="Gram matrix must be 21 x 21"):
        mechanism.per_user_variance(np.eye(20))
    large = HadamardResponse(2**16, 1.0)  # the dense strategy would be 2^17 x 2^16
    assert mechanism_from_json(large.to_json()) == large
    for dense in (large.strategy_matrix, lambda: large.Q):
        with pytest.raises(ValueError, match="too many for the dense strategy"):
            dense()


# ------------------------------------------------------------------ scale
def test_two_to_the_twenty_cells():
    n, epsilon, n_users = 2**20, 1.0, 200_000
    mechanism = HadamardResponse(n, epsilon)
    assert (mechanism.n_blocks, mechanism.block_size) == hadamard_shape(n, epsilon)
    rng = np.random.default_rng(20)
    weights = 1.0 / np.arange(1, n + 1)
    x = rng.multinomial(n_users, weights / weights.sum())
    statistic = mechanism.simulate_statistic(x, rng)
    assert statistic.shape == (mechanism.n_outputs,) and statistic.sum() == n_users
    estimate = mechanism.estimate(statistic)
    assert estimate.shape == (n,) and np.all(np.isfinite(estimate))
    assert estimate.sum() == pytest.approx(n_users, rel=1e-9)  # V* reproduces the total
    for workload in (workloads.histogram(n), workloads.prefix(n)):
        z = mechanism.per_user_variance(workload.gram())
        assert z.shape == (n,) and np.all(np.isfinite(z)) and np.all(z > 0)
    # Unbiasedness, loosely: a few queries within their analytic standard deviations.
    W = np.zeros((4, n))
    W[0, : n // 2] = 1.0
    W[1, : 1000] = 1.0
    W[2, 7] = 1.0
    W[3] = rng.normal(size=n)
    sd = np.sqrt(mechanism.query_variance(W) @ x)
    assert np.all(np.abs(W @ estimate - W @ x) < stats.norm.isf(ALPHA / 8) * sd)
    # The histogram's z summed over the cells is the sum of the per-cell variances.
    cells = np.zeros((3, n))
    cells[np.arange(3), [0, 5, n - 1]] = 1.0
    z_hist = mechanism.per_user_variance(workloads.histogram(n).gram())
    single = mechanism.query_variance(cells)  # (3, n): z of cells 0, 5, n-1 for every type
    assert np.all(single.sum(axis=0) <= z_hist * (1 + 1e-9))
