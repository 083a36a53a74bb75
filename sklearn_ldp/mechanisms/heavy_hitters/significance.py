"""Which heavy-hitter candidates are supported by the reports: significance tests.

Prefix extension scores many candidates per round, and the largest noise among thousands of
zero-count candidates is several standard errors. Two tests keep noise out of the results:

* **Per round** (:func:`round_critical_z`): a candidate prefix is kept only if its estimate
  exceeds ``z`` null standard errors, ``z`` chosen so that on average at most a quarter of
  the ``k`` kept slots go to prefixes no user holds. This only saves work and slots; it
  promises nothing by itself.
* **Final** (:func:`holm_supported`): every complete value the rounds selected is estimated
  again on users who took no part in selecting it (held out), and kept only if Holm's
  step-down test rejects "frequency 0" at the family-wise level ``alpha`` over all the values
  tested. So with probability at least ``1 - alpha`` no returned value has frequency 0 (up
  to the normal approximation of a sum of many independent reports).

References
----------
.. [1] S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
   Journal of Statistics 6(2), 1979.
"""

import numbers

import numpy as np
from scipy import special

# Expected share of the kept slots of a round that null prefixes may take (per round test).
ROUND_NOISE_SHARE = 0.25
# ... but never a cut above this many standard errors: the slots are bounded by k anyway, and
# a stricter cut loses real prefixes of the rounds with many candidates.
ROUND_MAX_Z = 3.0
DEFAULT_ALPHA = 0.05


def check_alpha(alpha):
    """``alpha`` as a float in ``(0, 1)``, or a ValueError naming it."""
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) \
            or not 0 < alpha < 1:
        raise ValueError(f"alpha must be a family-wise error rate in (0, 1), got {alpha!r}.")
    return float(alpha)


def upper_quantile(probability):
    """``z`` with ``P(Z > z) = probability`` for a standard normal ``Z``.

    Examples
    --------
    >>> round(upper_quantile(0.025), 2)
    1.96
    """
    return float(-special.ndtri(probability))


def round_critical_z(n_scored, n_candidates):
    """The per-round cut in null standard errors: ``P(Z > z) = share k / c``.

    Parameters
    ----------
    n_scored : int
        Candidates scored in the round, ``c``.
    n_candidates : int
        Slots kept per round, ``k``.

    Returns
    -------
    float
        At least 0 (never keeps a candidate estimated below zero).

    Examples
    --------
    >>> round(round_critical_z(640, 20), 2)
    2.42
    """
    share = min(0.5, ROUND_NOISE_SHARE * n_candidates / max(n_scored, 1))
    return min(ROUND_MAX_Z, upper_quantile(share))


def holm_supported(z_scores, alpha=DEFAULT_ALPHA):
    """Holm's step-down test of "frequency 0" against "frequency > 0", one-sided.

    Parameters
    ----------
    z_scores : array-like of float
        Each value's estimate divided by its standard error under frequency 0.
    alpha : float, default=0.05
        Family-wise error rate: the probability that any value of frequency 0 is declared
        supported.

    Returns
    -------
    ndarray of bool
        Which values are supported (the null hypothesis rejected).

    References
    ----------
    .. [1] S. Holm, "A simple sequentially rejective multiple test procedure", Scandinavian
       Journal of Statistics 6(2), 1979.

    Examples
    --------
    >>> holm_supported([5.0, 1.5, 0.3]).tolist()
    [True, False, False]
    """
    alpha = check_alpha(alpha)
    z = np.asarray(z_scores, dtype=float)
    p_values = special.ndtr(-z)
    order = np.argsort(p_values, kind="stable")
    m = z.size
    # Reject the i-th smallest p-value while every smaller one was rejected too.
    passes = p_values[order] <= alpha / (m - np.arange(m))
    n_rejected = m if passes.all() else int(np.argmin(passes))
    supported = np.zeros(m, dtype=bool)
    supported[order[:n_rejected]] = True
    return supported
