r"""The exponential mechanism and the private choice of a central strategy.

Private selection
-----------------
Choosing a strategy by the analytic error is data-independent and free. Choosing it from the
data (here: by the expected *relative* error, which depends on the answers) costs privacy:
:func:`select_strategy` uses the exponential mechanism (LN section 4,
``P(c) ~ exp(eps_s u(x, c) / (2 Delta_u))``) and its ``eps_s`` is taken out of the release's
budget (sequential composition), see
:func:`~sklearn_ldp.selection.central.build_central_mechanism`.

Pure numpy; no scikit-learn here.
"""

import numbers

import numpy as np

from .._strategy_error import is_structured_workload, query_matrix
from .._validation import check_epsilon

__all__ = [
    "PrivateSelection",
    "exponential_mechanism",
    "exponential_probabilities",
    "relative_error_utilities",
    "select_strategy",
]


# ---------------------------------------------------------------------- private selection
def exponential_probabilities(utilities, epsilon, sensitivity):
    """Output distribution of the exponential mechanism: ``P(c) ~ exp(eps u_c / (2 Delta))``.

    Examples
    --------
    >>> exponential_probabilities([0.0, 0.0], 1.0, 1.0).tolist()
    [0.5, 0.5]
    """
    u = np.asarray(utilities, dtype=float)
    epsilon = check_epsilon(epsilon)
    if not sensitivity > 0:
        raise ValueError(f"the utility's sensitivity must be > 0, got {sensitivity!r}.")
    logits = epsilon * (u - u.max()) / (2.0 * sensitivity)
    weights = np.exp(logits)
    return weights / weights.sum()


def exponential_mechanism(utilities, epsilon, sensitivity, rng):
    """Index drawn by the exponential mechanism (epsilon-DP if ``sensitivity`` bounds ``u``).

    Examples
    --------
    >>> exponential_mechanism([0.0, 100.0], 1.0, 1.0, np.random.default_rng(0))
    1
    """
    p = exponential_probabilities(utilities, epsilon, sensitivity)
    return int(rng.choice(p.size, p=p))


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
    >>> from sklearn_ldp.mechanisms.matrix import MatrixMechanism
    >>> mechs = {"identity": MatrixMechanism(np.eye(2), 1.0, 1e-5)}
    >>> select_strategy(np.array([5, 7]), np.eye(2), mechs, 0.1, 10.0,
    ...                 np.random.default_rng(0)).choice
    'identity'
    """
    names = list(mechanisms)
    utilities, sensitivity = relative_error_utilities(
        data_vector, workload_matrix, [mechanisms[n] for n in names], sanity_bound)
    probabilities = exponential_probabilities(utilities, epsilon, sensitivity)
    choice = names[int(rng.choice(len(names), p=probabilities))]
    return PrivateSelection(choice, names, probabilities, utilities, sensitivity, epsilon)
