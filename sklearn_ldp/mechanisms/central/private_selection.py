r"""The exponential mechanism and the private choice of a central strategy.

Private selection
-----------------
Choosing a strategy by the analytic error is data-independent and free. Choosing it from the
data (here: by the expected *relative* error, which depends on the answers) costs privacy:
:func:`select_strategy` uses the exponential mechanism (LN section 4,
``P(c) ~ exp(eps_s u(x, c) / (2 Delta_u))``) and its ``eps_s`` is taken out of the release's
budget (sequential composition), see
:func:`~sklearn_ldp.selection.central.build_central_mechanism`.

Exact sampling. The choice is released, so it is drawn from an exact integer law, checked on
integers (:func:`exponential_law`). Each utility is put on a grid of ``GRID`` units per
sensitivity, ``k_c = floor(GRID u_c / Delta)``: one record moves ``u_c`` by at most
``Delta``, so ``k_c`` by at most ``J = GRID + 1`` units (the floor adds one; floating-point
error in ``u`` far below a unit changes nothing). The weight of candidate ``c`` is
``b^(k~_c)`` with ``k~_c = max(k_c, max_c' k_c' - M)`` (also ``J``-Lipschitz: a maximum of
``J``-Lipschitz functions) and ``b = p / q`` a rational with ``(p / q)^(2J) <= e^eps``,
decided exactly (:func:`check_exponential_base`): the numerator and the normalizer each move
by at most ``b^J``, so every ratio is at most ``e^eps``, exactly for the law that is
sampled. As integers, ``w_c = p^(D - d_c) q^(d_c)`` with ``d_c = min(max k - k_c, M)``
and ``D`` the largest ``d_c``.
Candidates more than ``M`` units behind the best keep the weight ``b^-M`` (about
``2^-TAIL_BITS`` of the best's): reachable, as privacy requires. The exponent is
``GRID / (GRID + 1)`` (97%) of the nominal ``eps / (2 Delta)``: the price of the grid.
The draw is one uniform integer below the total (rejection on random 64-bit words), then the
first candidate whose cumulative weight exceeds it.

Pure numpy; no scikit-learn here.
"""

import math
import numbers

import numpy as np

from ..._strategy_error import is_structured_workload, query_matrix
from ..._validation import check_epsilon
from .._base.exact import ExactLaw, integer_ratio_at_most, largest_numerator_within, random_words

# Grid units per sensitivity of the utilities.
GRID = 32
# Denominator q of the base b = p / q (resolution of b: 2^-20).
BASE_DENOMINATOR = 2**20
# Candidates further behind the best than b^-M ~ 2^-TAIL_BITS keep that weight.
TAIL_BITS = 30

__all__ = [
    "PrivateSelection",
    "exponential_mechanism",
    "exponential_probabilities",
    "relative_error_utilities",
    "select_strategy",
]


# ---------------------------------------------------------------------- private selection
def exponential_base(epsilon):
    """``(p, q)``: the base ``b = p / q`` of the exact exponential mechanism (module
    docstring), ``p`` the largest integer with ``(p / q)^(2 (GRID + 1)) <= e^eps``.

    Examples
    --------
    >>> p, q = exponential_base(1.0)
    >>> q, round(math.log(p / q) * 66, 4)
    (1048576, 1.0)
    """
    epsilon = check_epsilon(epsilon)
    power = 2 * (GRID + 1)
    p = largest_numerator_within(BASE_DENOMINATOR, epsilon / power)
    while p > BASE_DENOMINATOR and not integer_ratio_at_most(p**power,
                                                             BASE_DENOMINATOR**power, epsilon):
        p -= 1
    check_exponential_base(p, BASE_DENOMINATOR, epsilon)
    return p, BASE_DENOMINATOR


def check_exponential_base(p, q, epsilon):
    """Refuse a base ``p / q`` unless ``p > q > 0`` are integers and ``(p / q)^(2 (GRID + 1))
    <= e^eps``, decided exactly."""
    power = 2 * (GRID + 1)
    if any(isinstance(v, bool) or not isinstance(v, numbers.Integral) for v in (p, q)) \
            or not 0 < q < p or not integer_ratio_at_most(int(p)**power, int(q)**power,
                                                          epsilon):
        raise ValueError(f"the exponential mechanism's base {p!r}/{q!r} is not a ratio in "
                         f"(1, e^(eps / {power})] for eps={epsilon!r}.")


def exponential_law(utilities, epsilon, sensitivity):
    """The exact law of the exponential mechanism's choice (module docstring).

    Parameters
    ----------
    utilities : array-like of float, shape (n_candidates,)
        Finite utilities; one record moves each by at most ``sensitivity``.
    epsilon : float
    sensitivity : float
        Positive and finite.

    Returns
    -------
    ExactLaw
        Outputs ``0 .. n_candidates - 1``, integer weights ``p^(D - d_c) q^(d_c)``.

    Examples
    --------
    >>> law = exponential_law([0.0, 0.0, -100.0], 1.0, 1.0)
    >>> law.weights[0] == law.weights[1] > law.weights[2] > 0
    True
    """
    u = np.asarray(utilities, dtype=float)
    if u.ndim != 1 or u.size == 0 or not np.isfinite(u).all():
        raise ValueError(f"utilities must be a non-empty 1-D array of finite numbers, got "
                         f"{np.asarray(utilities)!r}.")
    if not (isinstance(sensitivity, numbers.Real) and math.isfinite(sensitivity)
            and sensitivity > 0):
        raise ValueError(f"the utility's sensitivity must be finite and > 0, got "
                         f"{sensitivity!r}.")
    p, q = exponential_base(epsilon)
    tail = math.ceil(TAIL_BITS * math.log(2) / math.log(p / q))  # M: any value is private
    grid = [math.floor(v) for v in (u * (GRID / float(sensitivity))).tolist()]
    best = max(grid)
    behind = [min(best - k, tail) for k in grid]
    # b^-d = p^(far - d) q^d / p^far, far = the largest d: the smallest common scale (the
    # integers have about 20 (far - d) + 20 d bits, far <= M).
    far = max(behind)
    weights = [p ** (far - d) * q ** d for d in behind]
    return ExactLaw(np.arange(u.size), weights, sum(weights))


def exponential_probabilities(utilities, epsilon, sensitivity):
    """Output distribution of the exponential mechanism, ``P(c) ~ b^(k~_c)`` (about ``exp(eps
    u_c / (2 Delta))``): the exact law of :func:`exponential_law`, as floats.

    Examples
    --------
    >>> exponential_probabilities([0.0, 0.0], 1.0, 1.0).tolist()
    [0.5, 0.5]
    """
    law = exponential_law(utilities, epsilon, sensitivity)
    return np.array([w / law.total for w in law.weights])


def sample_weights(rng, weights, total):
    """One index drawn with probability ``weights[i] / total`` (Python integers), exactly: a
    uniform integer below ``total`` by rejection on random 64-bit words, then the first index
    whose cumulative weight exceeds it.

    Examples
    --------
    >>> sample_weights(np.random.default_rng(0), [0, 5, 0], 5)
    1
    """
    total = int(total)
    n_bits = (total - 1).bit_length()
    n_words = max(1, -(-n_bits // 64))
    while True:
        words = random_words(rng, n_words).tolist()
        draw = int.from_bytes(b"".join(w.to_bytes(8, "little") for w in words), "little")
        draw >>= 64 * n_words - n_bits
        if draw < total:  # accepted with probability > 1/2
            break
    cumulative = 0
    for index, weight in enumerate(weights):
        cumulative += int(weight)
        if draw < cumulative:
            return index
    raise ValueError("the weights do not sum to the total.")


def exponential_mechanism(utilities, epsilon, sensitivity, rng):
    """Index drawn by the exponential mechanism (epsilon-DP if ``sensitivity`` bounds ``u``),
    exactly from :func:`exponential_law`.

    Examples
    --------
    >>> exponential_mechanism([0.0, 100.0], 1.0, 1.0, np.random.default_rng(0))
    1
    """
    law = exponential_law(utilities, epsilon, sensitivity)
    return sample_weights(rng, law.weights, law.total)


def _abs_transpose_product(workload, V):
    """``V |W|`` for rows ``V`` (``(c, p)``): by the transposed product when no entry of the
    workload is negative (``|W| = W``), else block by block over its dense rows."""
    if workload.query_stats().mins.min() >= 0:
        return workload.rmatvec(V.T).T
    result = np.zeros((V.shape[0], workload.shape[1]))
    for rows, block in workload.row_blocks():
        result += V[:, rows] @ np.abs(block)
    return result


def relative_error_utilities(data_vector, workload_matrix, mechanisms, sanity_bound):
    r"""Utility and sensitivity for choosing a strategy by its expected relative error.

    ``u_c(x) = -(1/p) sum_i V_{c,i} / max(|w_i x|, s)^2``: minus the mean squared relative
    error of the queries (variance ``V_{c,i}`` of candidate ``c``), with the sanity bound
    ``s`` keeping small answers from dominating (the relative-error convention we chose: the
    seed leaves it open). ``f(a) = V / max(|a|, s)^2`` is ``2 V / s^3``-Lipschitz and one
    record moves ``w_i x`` by ``|w_ij|``, so ``Delta_u = max_c max_j (2 / (p s^3)) sum_i
    V_{c,i} |w_ij|``.

    ``workload_matrix`` is a query matrix or a Workload; a Workload is answered and
    multiplied through its products (and its per-query variances come from the mechanisms'
    structured ``query_variance``), never as a dense ``p x n`` matrix.

    Returns
    -------
    utilities : ndarray of shape (n_candidates,)
    sensitivity : float
    """
    structured = is_structured_workload(workload_matrix)
    W = workload_matrix if structured else query_matrix(workload_matrix)
    if not (isinstance(sanity_bound, numbers.Real) and sanity_bound > 0):
        raise ValueError(f"sanity_bound must be a positive count, got {sanity_bound!r}.")
    answers = np.maximum(np.abs(W @ np.asarray(data_vector, dtype=float)), sanity_bound)
    variances = np.array([m.query_variance(W) for m in mechanisms])
    utilities = -np.mean(variances / answers**2, axis=1)
    spread = _abs_transpose_product(W, variances) if structured else variances @ np.abs(W)
    sensitivity = 2.0 / (W.shape[0] * sanity_bound**3) * float(np.max(spread))
    return utilities, sensitivity


class PrivateSelection:
    """Outcome of :func:`select_strategy`: ``choice``, ``names``, ``probabilities``,
    ``utilities``, ``sensitivity`` and ``epsilon`` (the budget the selection spent)."""

    def __init__(self, choice, names, probabilities, utilities, sensitivity, epsilon):
        self.choice, self.names = choice, list(names)
        self.probabilities, self.utilities = probabilities, utilities
        self.sensitivity, self.epsilon = sensitivity, epsilon

    def __repr__(self):
        return f"PrivateSelection(choice={self.choice!r}, epsilon={self.epsilon})"


def select_strategy(data_vector, workload_matrix, mechanisms, epsilon, sanity_bound, rng):
    """Choose among mechanisms by expected relative error with the exponential mechanism.

    Parameters
    ----------
    data_vector : array of shape (n,)
        The private counts.
    workload_matrix : array of shape (p, n) or Workload
    mechanisms : dict name -> MatrixMechanism
        The candidates, calibrated to the budget of the release that follows.
    epsilon : float
        Budget of the selection itself (epsilon-DP); add it to the release's.
    sanity_bound : float
        Answers below it count as it (a public guess of a "small" count).
    rng : numpy Generator

    Returns
    -------
    PrivateSelection

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.central.matrix import MatrixMechanism
    >>> mechs = {"identity": MatrixMechanism(np.eye(2), 1.0, 1e-5)}
    >>> select_strategy(np.array([5, 7]), np.eye(2), mechs, 0.1, 10.0,
    ...                 np.random.default_rng(0)).choice
    'identity'
    """
    names = list(mechanisms)
    utilities, sensitivity = relative_error_utilities(
        data_vector, workload_matrix, [mechanisms[n] for n in names], sanity_bound)
    law = exponential_law(utilities, epsilon, sensitivity)
    probabilities = np.array([w / law.total for w in law.weights])
    choice = names[sample_weights(rng, law.weights, law.total)]
    return PrivateSelection(choice, names, probabilities, utilities, sensitivity, epsilon)
