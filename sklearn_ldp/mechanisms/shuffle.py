"""Privacy amplification by shuffling: the central (epsilon, delta) of shuffled LDP reports.

When ``n`` users each send one report of the same ``epsilon_0``-LDP randomizer through a
shuffler (a party that forwards the reports in a uniformly random order, without who sent
them), the multiset of reports is ``(epsilon, delta)``-differentially private in the central
sense for an ``epsilon`` far below ``epsilon_0`` (about ``e^(epsilon_0 / 2) / sqrt(n)``).
This module computes that ``epsilon`` with the analysis of Feldman, McMillan and Talwar
(FOCS 2021):

* :func:`shuffle_epsilon` with ``bound="numerical"``: the hockey-stick divergence of the
  paper's two "clone" distributions (their Theorem 3.2), computed from binomial tail
  probabilities (a rigorous upper bound up to floating-point rounding, see the function);
* ``bound="closed_form"``: their Theorem 3.1 (in the conservative form of the authors'
  implementation), looser, valid when ``epsilon_0 <= log(n / (16 log(4 / delta)))``;
* :func:`local_epsilon_for`: the inverse, the largest ``epsilon_0`` whose shuffled
  collection meets a central target (bisection on the monotone numerical bound).

Neighbouring collections differ in one user's value (replacement); the guarantee needs every
user to run the same randomizer and the shuffler to hide which user sent which report.
"""

import math

import numpy as np
from scipy.stats import binom

from .._validation import check_delta, check_epsilon, check_positive_int
from ._base.docstrings import shared_sections

BOUNDS = ("numerical", "closed_form")
# The numerical bound sums over the likely numbers of clones, about 40 standard deviations of
# a binomial of n trials: beyond 1e10 users that is millions of terms per evaluation.
MAX_USERS = 10**10
# Bisection stops when the interval is this narrow (relative to its upper end) and returns
# that upper end, so the answer errs on the safe side by at most this much.
_RELATIVE_TOLERANCE = 1e-7

_with_references = shared_sections({"references": """\
References
----------
.. [1] V. Feldman, A. McMillan and K. Talwar, "Hiding Among the Clones: A Simple and Nearly
   Optimal Analysis of Privacy Amplification by Shuffling", FOCS 2021 (arXiv:2012.12803),
   Theorems 3.1 and 3.2."""})


def _check_inputs(epsilon, n_users, delta, epsilon_name):
    epsilon = check_epsilon(epsilon, epsilon_name)
    n_users = check_positive_int(n_users, "n_users", maximum=MAX_USERS)
    return epsilon, n_users, check_delta(delta)


@_with_references
def clone_delta(epsilon_local, n_users, epsilon):
    """The delta at which ``n_users`` shuffled ``epsilon_local``-LDP reports are
    ``epsilon``-DP, from the clone reduction (an upper bound on the true delta).

    Derivation ([1]_, Theorem 3.2). Write ``e0 = exp(epsilon_local)`` and ``p = e0 / (e0 + 1)``.
    The shuffled reports on two neighbouring collections are post-processings of

        P0 = (A + D, C - A + 1 - D),   P1 = (A + 1 - D, C - A + D),

    with ``C ~ Bin(n_users - 1, 1 / e0)`` (the other users that are "clones" of the changed
    one), ``A ~ Bin(C, 1/2)`` and ``D ~ Bernoulli(p)``. So the collection is
    ``(epsilon, delta)``-DP for every ``delta`` at least the hockey-stick divergence
    ``H = sum max(0, P0 - e^epsilon P1)`` (the reverse divergence is the same: swapping the
    two coordinates maps P0 onto P1). Given ``C = c`` a pair is fixed by its first
    coordinate ``x`` in ``0..c+1``, with ``b`` the pmf of ``Bin(c, 1/2)``:

        P0(x | c) = p b(x-1) + (1-p) b(x),   P1(x | c) = (1-p) b(x-1) + p b(x).

    Their ratio is ``(p t + 1 - p) / ((1 - p) t + p)`` with ``t = b(x-1) / b(x) =
    x / (c - x + 1)``, increasing in ``x`` (``p > 1/2``), so the positive part of
    ``P0 - e^epsilon P1`` is a tail ``x >= k`` and, with ``S(k) = Pr[Bin(c, 1/2) >= k]``,

        H = sum_c Pr[C = c] max_k [p S(k-1) + (1-p) S(k) - e^epsilon ((1-p) S(k-1) + p S(k))].

    The maximising ``k`` is the least ``x`` with ``t > T = (e^epsilon p - (1-p)) /
    (p - e^epsilon (1-p))``, ``k = floor(T (c+1) / (1+T)) + 1``; evaluating ``k - 1``, ``k``,
    ``k + 1`` and the empty tail (0) makes a rounding of ``T`` harmless. Only the ``c``
    within 12 standard deviations (plus 40) of the mean of ``C`` are summed; each omitted
    ``c`` adds at most ``Pr[C = c]``, so the omitted mass is added to keep an upper bound.
    The remaining error is the floating-point rounding of SciPy's binomial tails (relative
    ~1e-15 per term).

    Parameters
    ----------
    epsilon_local : float
        The local epsilon of each report (> 0).
    n_users : int
        The number of shuffled reports (>= 1).
    epsilon : float
        The central epsilon (>= 0); at ``epsilon >= epsilon_local`` the result is 0.

    Returns
    -------
    float
        An upper bound on the smallest ``delta`` of the shuffled collection at ``epsilon``.

    See Also
    --------
    shuffle_epsilon : The central epsilon at a given delta (this function inverted).

    <references>

    Examples
    --------
    One user (no one to hide among) keeps randomized response's divergence,
    ``p - e^epsilon (1 - p)``:

    >>> import math
    >>> round(clone_delta(math.log(3), 1, math.log(2)), 12)
    0.25
    """
    epsilon_local = check_epsilon(epsilon_local, "epsilon_local")
    n_users = check_positive_int(n_users, "n_users", maximum=MAX_USERS)
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.floating)) \
            or not 0 <= epsilon < math.inf:
        raise ValueError(f"epsilon must be a finite number >= 0, got {epsilon!r}.")
    if epsilon >= epsilon_local:
        return 0.0
    e0, e_eps = math.exp(epsilon_local), math.exp(epsilon)
    p = e0 / (e0 + 1.0)
    clone = 1.0 / e0
    # The numbers of clones worth summing: 12 standard deviations (and 40) either side of the
    # mean leave far below 1e-18 outside, and that mass, computed, is added (at most 1 per c).
    mean = (n_users - 1) * clone
    half_width = 12 * math.sqrt(mean * (1 - clone)) + 40
    lo, hi = max(int(mean - half_width), 0), min(int(mean + half_width) + 1, n_users - 1)
    outside = float(binom.cdf(lo - 1, n_users - 1, clone) + binom.sf(hi, n_users - 1, clone))
    c = np.arange(lo, hi + 1)
    weight = binom.pmf(c, n_users - 1, clone)
    ratio = (e_eps * p - (1.0 - p)) / (p - e_eps * (1.0 - p))
    k0 = np.floor(ratio * (c + 1) / (1.0 + ratio)) + 1
    # Pr[Bin(c, 1/2) >= k] for k = k0 - 2 .. k0 + 1, the tails the three candidates need.
    tails = [binom.sf(k0 + shift - 1, c, 0.5) for shift in (-2, -1, 0, 1)]
    best = np.zeros(c.shape)
    for s_km1, s_k in zip(tails[:-1], tails[1:], strict=True):
        gap = p * s_km1 + (1 - p) * s_k - e_eps * ((1 - p) * s_km1 + p * s_k)
        best = np.maximum(best, gap)
    return float(min(np.dot(weight, best) + outside, 1.0))



def _closed_form(epsilon_local, n_users, delta):
    """Theorem 3.1 of [1] in its conservative form; a ValueError outside its condition.

    The theorem's factor ``(e0 - 1) / (e0 + 1)`` comes from ``1 - e^-eps0`` over
    ``1 + e^-eps0``; the authors' own implementation divides by ``1 + e^(-eps0 - eps1)``
    instead, where ``eps1 = log(1 + gain)`` is the bound before that factor, and asks
    ``epsilon_local <= log(n / (16 log(4 / delta)))``. Both changes can only raise the bound
    or narrow its range, so this form is the safer of the two and reproduces the authors'
    published figure (0.5378 at eps0 = 4, n = 10^5, delta = 1e-6).
    """
    log_term = math.log(4 / delta)
    limit = math.log(n_users / (16 * log_term)) if n_users > 16 * log_term else -math.inf
    if epsilon_local > limit:
        raise ValueError(
            f"the closed-form bound needs epsilon_local <= log(n_users / (16 log(4 / delta))) "
            f"= {limit:.4g}, got epsilon_local={epsilon_local!r} (n_users={n_users}, "
            f"delta={delta!r}); use bound='numerical', which holds for every value.")
    e0 = math.exp(epsilon_local)
    gain = 8 * (math.sqrt(e0 * log_term / n_users) + e0 / n_users)
    factor = -math.expm1(-epsilon_local) / (1 + math.exp(-epsilon_local - math.log1p(gain)))
    return math.log1p(factor * gain)


def _bisect(holds, lo, hi):
    """The boundary of a monotone predicate on [lo, hi]: ``holds(lo)`` is True,
    ``holds(hi)`` False; returns ``(last True, first False)`` within the tolerance."""
    while hi - lo > _RELATIVE_TOLERANCE * hi:
        mid = 0.5 * (lo + hi)
        if holds(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


@_with_references
def shuffle_epsilon(epsilon_local, n_users, delta, bound="numerical"):
    """The central epsilon of ``n_users`` shuffled ``epsilon_local``-LDP reports at ``delta``.

    Parameters
    ----------
    epsilon_local : float
        The local epsilon of each user's report (in (0, 50]).
    n_users : int
        The number of reports the shuffler mixes (in [1, 10^10]).
    delta : float
        The central delta (in (0, 1)).
    bound : {"numerical", "closed_form"}, default="numerical"
        ``"numerical"``: the smallest epsilon at which :func:`clone_delta` is at most
        ``delta`` (bisection, rounded up by a relative 1e-7), the tight analysis of [1]_.
        ``"closed_form"``: Theorem 3.1 of [1]_,
        ``log(1 + (e0 - 1) / (e0 + 1) * 8 (sqrt(e0 log(4/delta) / n) + e0 / n))`` with
        ``e0 = exp(epsilon_local)``, which requires
        ``epsilon_local <= log(n / (16 log(4 / delta)))``; it is never below the numerical
        bound.

    Returns
    -------
    float
        The central epsilon, at most ``epsilon_local`` for the numerical bound (shuffling
        never hurts).

    Raises
    ------
    ValueError
        If an argument is out of range (the message names it), or ``bound="closed_form"``
        outside its condition.

    See Also
    --------
    local_epsilon_for : The largest local epsilon meeting a central target.
    clone_delta : The delta at a given central epsilon.

    <references>

    Examples
    --------
    Reports at local epsilon 4 from a million users are about 0.049-DP once shuffled:

    >>> round(shuffle_epsilon(4.0, 10**6, 1e-6), 3)
    0.049
    >>> shuffle_epsilon(4.0, 10**6, 1e-6, bound="closed_form") > shuffle_epsilon(
    ...     4.0, 10**6, 1e-6)
    True
    """
    epsilon_local, n_users, delta = _check_inputs(epsilon_local, n_users, delta,
                                                  "epsilon_local")
    if bound == "closed_form":
        return _closed_form(epsilon_local, n_users, delta)
    if bound != "numerical":
        raise ValueError(f"bound must be one of {BOUNDS}, got {bound!r}.")
    if clone_delta(epsilon_local, n_users, 0.0) <= delta:
        return 0.0
    return _bisect(lambda eps: clone_delta(epsilon_local, n_users, eps) > delta,
                   0.0, epsilon_local)[1]



@_with_references
def local_epsilon_for(central_epsilon, n_users, delta):
    """The largest local epsilon whose ``n_users`` shuffled reports are
    ``(central_epsilon, delta)``-DP by the numerical bound of :func:`shuffle_epsilon`.

    The numerical bound grows with the local epsilon (fewer clones, each less alike), so a
    bisection between ``central_epsilon`` (which always meets the target: shuffling never
    hurts) and the first doubling that misses it finds the boundary; the answer is rounded
    down by a relative 1e-7, so it meets the target.

    Parameters
    ----------
    central_epsilon : float
        The target central epsilon (in (0, 50]).
    n_users : int
        The number of reports the shuffler mixes (in [1, 10^10]).
    delta : float
        The central delta (in (0, 1)).

    Returns
    -------
    float
        The local epsilon to give the encoder (``LDPEncoder(epsilon=...)``), at least
        ``central_epsilon`` and at most 50.

    Raises
    ------
    ValueError
        If an argument is out of range (the message names it).

    See Also
    --------
    shuffle_epsilon : The central epsilon of a local epsilon.

    <references>

    Examples
    --------
    >>> eps0 = local_epsilon_for(0.1, 10**5, 1e-6)
    >>> round(eps0, 2), shuffle_epsilon(eps0, 10**5, 1e-6) <= 0.1
    (3.12, True)
    """
    central_epsilon, n_users, delta = _check_inputs(central_epsilon, n_users, delta,
                                                    "central_epsilon")

    def meets(epsilon_local):
        # shuffle_epsilon(epsilon_local) <= central_epsilon, without its inner bisection.
        return clone_delta(epsilon_local, n_users, central_epsilon) <= delta

    lo, hi = central_epsilon, min(2 * central_epsilon, 50.0)
    while meets(hi):
        if hi == 50.0:
            return 50.0
        lo, hi = hi, min(2 * hi, 50.0)
    return _bisect(meets, lo, hi)[0]

