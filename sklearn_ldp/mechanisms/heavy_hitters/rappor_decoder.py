"""Decoding RAPPOR: candidate frequencies by regression on their Bloom bits, with tests.

As the paper's analysis (Erlingsson et al. 2014, section 4): the analyst supplies candidate
strings; the estimated Bloom bit counts ``t_(j, i)`` of every cohort ``j`` (unbiased, see
:mod:`.rappor`) are regressed on the candidates' Bloom bits. Row ``(j, i)`` of the design
matrix ``X`` has a 1 in column ``s`` when candidate ``s`` sets bit ``i`` in cohort ``j``.

Model. A user's cohort is uniform and independent of its value, so a cohort of ``N_j`` users
holds ``N_j beta_s`` users of candidate ``s`` on average, and ``E[t_(j, i)] = N_j (X beta)_(j,
i)`` when every value is a candidate. The variance of ``t_(j, i)`` is about ``N_j`` times a
constant, so the weighted least-squares estimate (weights ``N_j`` on ``y = t / N_j``) is

    beta = G^-1 X^T t,   G = X^T diag(N_j) X,

unbiased for the frequencies ``beta`` (given the cohort sizes). Its covariance, given which
users fell in which cohort, is ``G^-1 X^T diag(Var t) X G^-1`` with ``Var t_(j, i)`` from
:meth:`~.rappor.RapporMechanism.bit_count_variance`; the reported standard errors plug in the
fitted bit counts ``N_j (X beta)_(j, i)`` (clipped to ``[0, N_j]``).

The random split of the users into cohorts adds a term (:func:`cohort_split_covariance`):
given the cohort sizes, the users of each value are spread over the cohorts at random, so
the users ``n_j`` of cohort ``j`` holding each candidate vary, ``Cov(n_j, n_j') = (delta_jj'
N_j - N_j N_j' / N) Sigma / (N - 1)`` with ``Sigma = diag(beta) - beta beta^T`` (a random
permutation of the users: a contingency table with fixed margins). ``E[beta | split] = G^-1
sum_j M_j n_j`` with ``M_j = X_j^T X_j`` (cohort ``j``'s rows of ``X``) and ``G = sum_j N_j
M_j``, so the split adds

    Cov(E[beta | split]) = (N G^-1 (sum_j N_j M_j Sigma M_j) G^-1 - Sigma) / (N - 1),

0 with one cohort (every ``M_j`` equal), about ``beta_s (1 - beta_s) / N_j`` per cohort and
bit against the reports' ``p* (1 - p*) / ((q* - p*)^2 N_j)`` (about 1% of the variance at
the default parameters, most of it when ``f`` is small). The standard errors are the sum of
both terms, at the estimated frequencies (clipped to ``[0, 1]``), about the frequencies of
the users who reported.

Detection. Each candidate is tested for "frequency 0" against "frequency > 0" with ``z =
beta_s / se_s`` (one-sided normal p-value) and Holm's step-down procedure at family-wise
level ``alpha`` (default 0.05; it rejects at least what Bonferroni's ``alpha / C`` does, with
the same guarantee). Values outside the candidate list are not invented: their users add to
the bits they set, which biases the candidates that share those bits (the paper's caveat);
the estimates are unbiased only when the list covers every value reported.

Caps. ``X`` is sparse (``h`` ones per cohort and candidate) but ``G`` is a dense ``C x C``
matrix: at most :data:`MAX_RAPPOR_CANDIDATES` candidates, and no more than the ``m k``
observed bit counts. Candidates whose columns are linearly dependent (two candidates with the
same bits in every cohort, or too many candidates for the bits) cannot be told apart: a
ValueError names them.

References
----------
.. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", ACM CCS 2014.
.. [2] S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
   Journal of Statistics 6(2), 1979.
"""

from typing import NamedTuple

import numpy as np
import scipy.linalg
from scipy import sparse, special

from .rappor import rappor_docstring
from .significance import DEFAULT_ALPHA, check_alpha, holm_supported

MAX_RAPPOR_CANDIDATES = 4096
# Entries of the dense (cohorts x candidates) blocks of the cohort-split covariance.
SPLIT_CHUNK = 2**22


class RapporDecoding(NamedTuple):
    """What :func:`decode_candidates` found, one entry per candidate (in the given order).

    Parameters
    ----------
    candidates : list of str
    frequencies : ndarray of float
        Estimated share of the users holding each candidate.
    counts : ndarray of float
        ``frequencies`` times the number of reports.
    std_errors : ndarray of float
        Standard errors of ``frequencies``.
    p_values : ndarray of float
        One-sided p-values of "frequency 0".
    detected : ndarray of bool
        Holm's test at ``alpha``.
    covariance : ndarray of float, shape (C, C)
        The plug-in covariance of ``frequencies``.
    n_reports : int
    alpha : float
    """

    candidates: list
    frequencies: np.ndarray
    counts: np.ndarray
    std_errors: np.ndarray
    p_values: np.ndarray
    detected: np.ndarray
    covariance: np.ndarray
    n_reports: int
    alpha: float


def check_candidates(candidates):
    """The candidates as a list of distinct strings, or a ValueError / TypeError naming the
    bad one (a duplicate, a non-string, too many)."""
    if isinstance(candidates, (str, bytes)) or not hasattr(candidates, "__iter__"):
        raise TypeError(f"candidates must be a list of strings, got {candidates!r:.80}.")
    candidates = list(candidates)
    if not candidates:
        raise ValueError("candidates must list at least one string.")
    if len(candidates) > MAX_RAPPOR_CANDIDATES:
        raise ValueError(f"candidates lists {len(candidates)} strings, more than the "
                         f"{MAX_RAPPOR_CANDIDATES} RAPPOR's regression decodes (a dense C x C "
                         "system); to find frequent strings without a list use the "
                         "heavy-hitter strategy 'pem'.")
    seen = set()
    for index, value in enumerate(candidates):
        if not isinstance(value, str):
            raise TypeError(f"candidates[{index}] = {value!r} is a {type(value).__name__}, "
                            f"not a string.")
        if value in seen:
            raise ValueError(f"candidates[{index}] = {value!r} is a duplicate: every "
                             f"candidate must be listed once.")
        seen.add(value)
    return candidates


def design_matrix(mechanism, candidates):
    """Sparse ``(m k, C)`` 0/1 matrix: row ``j k + i``, column ``s`` is 1 when candidate
    ``s`` sets Bloom bit ``i`` in cohort ``j``."""
    fingerprints, inverse = mechanism.fingerprints(np.array(candidates, dtype=object))
    fingerprints = fingerprints[inverse]
    m, k, C = mechanism.n_cohorts, mechanism.n_bits, len(candidates)
    cohorts = np.repeat(np.arange(m), C)
    positions = mechanism.bloom_positions(np.tile(fingerprints, m), cohorts)  # (m C, h)
    rows = (cohorts[:, None] * k + positions).reshape(-1)
    columns = np.repeat(np.tile(np.arange(C), m), positions.shape[1])
    X = sparse.csr_matrix((np.ones(rows.size), (rows, columns)), shape=(m * k, C))
    X.data[:] = 1.0  # two hashes on one bit set it once
    return X


def _indistinguishable(X, G, candidates):
    """A message naming candidates the regression cannot tell apart."""
    columns = X.T.tocsr()
    seen = {}
    for s in range(columns.shape[0]):
        key = columns[s].indices.tobytes()
        if key in seen:
            return (f"candidates {candidates[seen[key]]!r} and {candidates[s]!r} set the same "
                    f"Bloom bits in every cohort")
        seen[key] = s
    return (f"the {len(candidates)} candidates' Bloom bits are linearly dependent (rank "
            f"{np.linalg.matrix_rank(G)}): too many candidates for the bits and cohorts")


@rappor_docstring
def decode_candidates(mechanism, statistic, candidates, alpha=DEFAULT_ALPHA):
    """Frequencies of the candidate strings from a RAPPOR statistic, with significance.

    Parameters
    ----------
    mechanism : RapporMechanism
    statistic : array-like of int
        :meth:`~.rappor.RapporMechanism.aggregate`'s statistic (summed over batches).
    candidates : sequence of str
        Distinct candidate strings (at most :data:`MAX_RAPPOR_CANDIDATES`).
    alpha : float, default=0.05
        Family-wise error rate of the detection (Holm).

    Returns
    -------
    RapporDecoding

    Raises
    ------
    ValueError
        A duplicate candidate, too many, candidates that cannot be told apart, a malformed
        statistic, or no reports.

    <erlingsson14 reference>

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.heavy_hitters.rappor import RapporMechanism
    >>> rappor = RapporMechanism()
    >>> rng = np.random.default_rng(0)
    >>> values = np.array(["a"] * 60_000 + ["b"] * 40_000, dtype=object)
    >>> reports = rappor.randomize(values, rng)  # fresh users, seeded: simulation
    >>> found = decode_candidates(rappor, rappor.aggregate(reports), ["a", "b", "c"])
    >>> found.detected.tolist()
    [True, True, False]
    >>> bool(np.all(np.abs(found.frequencies - [0.6, 0.4, 0.0]) < 4 * found.std_errors))
    True
    """
    candidates = check_candidates(candidates)
    alpha = check_alpha(alpha)
    table = mechanism.statistic_table(statistic)
    k = mechanism.n_bits
    sizes = table[:, k].astype(float)
    n_reports = int(table[:, k].sum())
    if n_reports == 0:
        raise ValueError("the RAPPOR statistic holds no reports: nothing to decode.")
    C = len(candidates)
    if C > table.shape[0] * k:
        raise ValueError(f"{C} candidates for {table.shape[0] * k} Bloom bit counts (cohorts "
                         "x bits): the regression needs at most one candidate per count.")
    X = design_matrix(mechanism, candidates)
    weights = np.repeat(sizes, k)
    G = (X.T @ sparse.diags(weights) @ X).toarray()
    t = mechanism.bit_count_estimates(statistic).reshape(-1)
    try:
        factor = scipy.linalg.cho_factor(G)
        # A nearly singular G: linearly dependent columns in floating point.
        if np.linalg.cond(G) > 1e12:
            raise np.linalg.LinAlgError
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        raise ValueError(f"{_indistinguishable(X, G, candidates)}: drop candidates, or use "
                         f"more bits or cohorts.") from None
    frequencies = scipy.linalg.cho_solve(factor, X.T @ t)
    fitted = np.clip(X @ frequencies * weights, 0.0, weights)
    variance = mechanism.bit_count_variance(fitted.reshape(-1, k), sizes).reshape(-1)
    covariance = (frequency_covariance(X, factor, variance)
                  + cohort_split_covariance(X, factor, sizes, frequencies, k))
    std_errors = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(std_errors > 0, frequencies / std_errors, 0.0)
    return RapporDecoding(candidates, frequencies, frequencies * n_reports, std_errors,
                          special.ndtr(-z), holm_supported(z, alpha), covariance, n_reports,
                          alpha)


def frequency_covariance(X, factor, variance):
    """``G^-1 X^T diag(variance) X G^-1`` for the Cholesky ``factor`` of ``G``."""
    middle = (X.T @ sparse.diags(variance) @ X).toarray()
    left = scipy.linalg.cho_solve(factor, middle)
    return scipy.linalg.cho_solve(factor, left.T)


def cohort_split_covariance(X, factor, sizes, frequencies, n_bits):
    """The covariance the random split of the users into cohorts adds to the decoded
    frequencies (module docstring): ``(N G^-1 (sum_j N_j M_j Sigma M_j) G^-1 - Sigma) / (N -
    1)``, ``Sigma = diag(beta) - beta beta^T`` at ``frequencies`` clipped to ``[0, 1]``.

    Parameters
    ----------
    X : scipy.sparse matrix of shape (m k, C)
        :func:`design_matrix`.
    factor : tuple
        The Cholesky factor of ``G = X^T diag(N_j) X`` (``scipy.linalg.cho_factor``).
    sizes : ndarray of shape (m,)
        Users of each cohort, ``N_j``.
    frequencies : ndarray of shape (C,)
        The candidates' frequencies ``beta``.
    n_bits : int
        Bloom bits per cohort, ``k``.

    Returns
    -------
    ndarray of shape (C, C)

    Examples
    --------
    >>> import scipy.linalg
    >>> from sklearn_ldp.mechanisms.heavy_hitters.rappor import RapporMechanism
    >>> rappor = RapporMechanism(n_bits=8, n_cohorts=1)
    >>> X = design_matrix(rappor, ["a", "b"])
    >>> G = (X.T @ X).toarray() * 1000
    >>> split = cohort_split_covariance(X, scipy.linalg.cho_factor(G), np.array([1000.0]),
    ...                                 np.array([0.7, 0.3]), 8)
    >>> bool(np.abs(split).max() < 1e-12)  # one cohort: no split
    True
    """
    beta = np.clip(np.asarray(frequencies, dtype=float), 0.0, 1.0)
    sizes = np.asarray(sizes, dtype=float)
    n = sizes.sum()
    C = X.shape[1]
    if n <= 1:
        return np.zeros((C, C))
    X = sparse.csr_matrix(X)
    inner = np.zeros((C, C))
    # Cohorts in chunks (each a dense cohorts x C block of M_j beta).
    step = max(1, SPLIT_CHUNK // C)
    for start in range(0, sizes.size, step):
        part = sizes[start:start + step]
        rows = X[start * n_bits:(start + part.size) * n_bits].tocoo()
        cohort = rows.row // n_bits
        # Y: cohort j's rows of X in its own block of C columns, so that Y diag(beta) Y^T
        # holds X_j diag(beta) X_j^T for every cohort and nothing across cohorts.
        Y = sparse.csr_matrix((rows.data, (rows.row, cohort * C + rows.col)),
                              shape=(rows.shape[0], part.size * C))
        X_part = rows.tocsr()
        blocks = Y @ sparse.diags(np.tile(beta, part.size)) @ Y.T
        inner += (X_part.T @ sparse.diags(np.repeat(part, n_bits)) @ blocks
                  @ X_part).toarray()  # sum_j N_j M_j diag(beta) M_j
        spread = (Y.T @ (X_part @ beta)).reshape(part.size, C)  # row j: M_j beta
        inner -= spread.T @ (part[:, None] * spread)
    propagated = scipy.linalg.cho_solve(factor, scipy.linalg.cho_solve(factor, inner).T)
    return (n * propagated - (np.diag(beta) - np.outer(beta, beta))) / (n - 1)


def candidate_variance(mechanism, candidates, true_counts):
    """The covariance of the decoded frequencies given the users' values per cohort.

    The reports' noise only: :func:`decode_candidates` adds the random split of the users
    into cohorts (:func:`cohort_split_covariance`) to its plug-in of this.

    Parameters
    ----------
    mechanism : RapporMechanism
    candidates : sequence of str
    true_counts : array-like of shape (m, C)
        Users of cohort ``j`` holding candidate ``s`` (every user holds a candidate).

    Returns
    -------
    ndarray of shape (C, C)

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.heavy_hitters.rappor import RapporMechanism
    >>> rappor = RapporMechanism(n_cohorts=2)
    >>> cov = candidate_variance(rappor, ["a", "b"], [[500, 500], [500, 500]])
    >>> cov.shape, bool(cov[0, 0] > 0)
    ((2, 2), True)
    """
    candidates = check_candidates(candidates)
    counts = np.asarray(true_counts, dtype=float)
    X = design_matrix(mechanism, candidates)
    k = mechanism.n_bits
    sizes = counts.sum(axis=1)
    weights = np.repeat(sizes, k)
    G = (X.T @ sparse.diags(weights) @ X).toarray()
    # Users of cohort j with bit i set: sum over the candidates setting it.
    per_row = np.repeat(counts, k, axis=0)  # row j k + i holds cohort j's counts
    bits = np.asarray((X.multiply(per_row)).sum(axis=1)).reshape(-1)
    variance = mechanism.bit_count_variance(bits.reshape(-1, k), sizes).reshape(-1)
    return frequency_covariance(X, scipy.linalg.cho_factor(G), variance)
