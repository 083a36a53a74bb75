r"""Bassily's pure eps-LDP randomizer for linear queries (AISTATS 2019): rejection sampling.

The workload, its columns ``a_u`` and ``r = max_u ||a_u||_2`` are as in :mod:`.gaussian`, whose
(eps, delta) randomizer this one shares its reports of width ``d`` with.

Pure LDP: :class:`GaussianRejectionMechanism` (Algorithms 3-4)
--------------------------------------------------------------
A user draws ``v = h k``, ``k`` the exact discrete Gaussian ``N_Z(0, sigma2)^d`` on the
public lattice ``h = 2^-m`` (independent of the input; ``sigma = sqrt(sigma2) h``, 4096 to
8192 lattice steps), computes the privacy loss ``L = (2 <a, v> - ||a||^2) / (2 sigma^2)`` and
keeps ``v`` with probability ``n / 2^52``: ``n`` is ``e^L / 2`` inside the window
``[L_lo, L_hi]`` (:func:`loss_window`), ``1/2`` outside, rounded down to ``2^-52`` and clamped
into the envelope ``[lo, hi]`` (:func:`keep_envelope`); the keep bit is an exact Bernoulli.
Otherwise the report is the symbol "bottom", encoded as a row of NaN. (Spec version 2; the
earlier version drew float normals and kept them by a float test.)

* Privacy, on integers, whatever the floats computed: a kept report ``v`` has probability
  ``N_Z(k) n_a(v) / 2^52``, so two inputs' ratio is ``n_a / n_b <= hi / lo``; "bottom" has
  probability in ``[(2^52 - hi), (2^52 - lo)] / 2^52`` for every input, so its ratio is at
  most ``(2^52 - lo) / (2^52 - hi)``. Both are checked exactly against ``e^eps``
  (:func:`check_keep_envelope`) by the constructor, ``from_dict`` and the client. The
  continuous argument of the earlier version (``P(keep | a) = 1/2`` exactly, by the symmetry
  of a centred window) is not relied on: it fails on a lattice with clamped floats, and the
  centred window ``[e^{-eps/2} / 2, e^{eps/2} / 2]`` fails the bottom check. ``hi`` is the
  randomized-response numerator and ``lo = 2^52 - hi``, the widest envelope passing both (the
  window still has width ``eps``, shifted: ``[-0.620, 0.380]`` at ``eps = 1``); ``eps <= 2 ln
  2`` is still required. ``P(keep | a)`` now depends on ``a`` slightly (0.489 for a unit
  column at ``eps = 1``).
* Calibration (decision: the notes leave delta_0 open). ``calibration="paper"`` follows the paper's
  construction with ``delta_0 = tanh(eps / 2)``, the largest value with
  ``(1 + delta_0) / (1 - delta_0) <= e^eps``: sigma is the smallest value for which
  ``P(|L| <= eps/2) >= 1 - delta_0`` under both ``phi_a`` and ``phi_0`` for every column; the
  probability is ``Phi(eps/(2s) - s/2) - Phi(-eps/(2s) - s/2)`` with ``s = ||a|| / sigma``,
  decreasing in ``s``, so it binds at the largest column (bisection on ``s``).
  ``calibration="optimal"`` (default) picks the sigma that minimizes the per-user variance
  ``alpha / kappa^2 = r^2 / (2 E[t h(t)]^2)`` of the largest column instead, which is allowed
  because privacy does not depend on sigma (see above). Decision: "optimal" is the default
  because it is much more accurate: per-user variance of a unit column 653 ("paper") vs 67.7
  ("optimal") at eps = 1 (491 vs 58 with the earlier centred window).

Closeness to the lattice. The moments below are continuous integrals; the sampled law is on
the lattice, and the keep function jumps at the window's edges, so lattice sums differ by
``O(h / sigma)`` there: ``P(keep)`` by about ``1.5e-6`` at ``eps = 1`` for a unit column
(enumerated in ``tests/test_exact_gaussian.py``), a relative bias of that order in the
estimate, beyond what simulations of fewer than about ``10^12`` users can detect.

Exact unbiasedness (an improvement over the paper, whose mean of kept reports is only
approximately ``a``). Write ``v = sigma t a/||a|| + v_perp`` with ``t ~ N(0, 1)``
independent of ``v_perp``; the keep probability depends on ``t`` only, ``L = s t - s^2 / 2``.
Hence, with ``h(t)`` the keep probability,

    E[v 1(keep)]       = kappa(||a||) a,          kappa = sigma E[t h(t)] / ||a||
    E[v v^T 1(keep)]   = alpha I + beta a a^T,    alpha = sigma^2 E[h] = sigma^2 / 2,
                                                  beta  = sigma^2 (E[t^2 h] - 1/2) / ||a||^2

(closed forms with ``ndtr``; ``h(t) phi(t) = phi(t - s) / 2`` inside the window). The
statistic is ``[T (d), K, N]`` with ``T`` the sum of kept reports and ``K`` their number, so
``E[T] = A diag(kappa) x = B x`` and ``x_hat = B^+ T`` is exactly unbiased for every workload
in the row space of ``B``. The per-user covariance of ``T`` is ``alpha_u I + (beta_u -
kappa_u^2) a_u a_u^T``, which gives the exact variance of every query.

Decision (supported workloads). ``kappa`` decreases with the column norm, so the row space of
``B`` equals that of ``A`` when ``A`` has full column rank or equal column norms, but not in
general (e.g. a wide ``A`` with unequal norms would not support ``A`` itself). In that case
(``columns="auto"``) users plug in ``a_u`` rescaled to the norm ``m_u`` that makes ``kappa``
the same for all types (:func:`equalized_norms`; any input vector keeps the mechanism
eps-LDP), so that ``E[T] = lambda A x`` and every workload in the row space of ``A`` is
supported, at some cost in variance for the columns of smaller norm.

Pure numpy/scipy; nothing here knows about scikit-learn or pandas.
"""

import math
import numbers

import numpy as np
from scipy import special

from ..._validation import check_epsilon
from .._base.exact import (
    TABLE_PRECISION,
    RatioLaw,
    bernoulli_below,
    integer_ratio_at_most,
    keep_numerator,
)
from .._base.mechanism import (
    check_type_counts,
    check_type_indices,
    check_workload_matrix,
    chunks,
    register,
)
from ..central.discrete_gaussian import sample_discrete_gaussian
from .gaussian import (
    LATTICE_SIGMA_BITS,
    RANDOMIZE_CHUNK,
    _lattice_box,
    _MinimumNorm,
    _VectorReportMechanism,
    tail_multiplier,
)

# Largest epsilon for which the rejection-sampling window [e^{-eps/2}/2, e^{eps/2}/2] is a
# range of probabilities.
MAX_REJECTION_EPSILON = 2.0 * math.log(2.0)

_SQRT_2PI = math.sqrt(2.0 * math.pi)


_ONE = 2**TABLE_PRECISION


# ---------------------------------------------------------------------- the exact envelope
def keep_envelope(epsilon):
    """Integers ``(lo, hi)``: every keep probability is ``n / 2^52`` with ``lo <= n <= hi``.

    Kept draws: ``P(v | a) / P(v | b) <= hi / lo``. Bottom: ``P(bottom | a)`` lies in
    ``[(2^52 - hi) / 2^52, (2^52 - lo) / 2^52]`` whatever the input, so the ratio is at most
    ``(2^52 - lo) / (2^52 - hi)``. Both must be at most ``e^eps``; with ``hi`` the
    randomized-response numerator (the largest ``hi`` with ``hi / (2^52 - hi) <= e^eps``)
    and ``lo = 2^52 - hi`` both ratios are that one, decided exactly, and the window has the
    largest width (``ln(hi / lo)`` close to ``eps``) that both checks allow.

    Examples
    --------
    >>> lo, hi = keep_envelope(1.0)
    >>> lo + hi == 2**52, round(hi / 2**52, 4)
    (True, 0.7311)
    """
    high = keep_numerator(epsilon, 2)
    return _ONE - high, high


def check_keep_envelope(low, high, epsilon, kind="gaussian_pure"):
    """Refuse an envelope whose exact checks fail: ``lo <= 2^51 <= hi``, ``hi / lo <=
    e^eps`` and ``(2^52 - lo) / (2^52 - hi) <= e^eps`` (on integers).

    Examples
    --------
    >>> check_keep_envelope(*keep_envelope(1.0), 1.0)
    >>> try:
    ...     check_keep_envelope(2**50, 3 * 2**50, 1.0)
    ... except ValueError as error:
    ...     print(str(error)[:42])
    lattice['keep_high'] / lattice['keep_low']
    """
    for name, value in (("keep_low", low), ("keep_high", high)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not (
                0 < value < _ONE):
            raise ValueError(f"lattice[{name!r}] of the {kind!r} specification must be an "
                             f"integer in (0, 2^52), got {value!r}.")
    if not low <= _ONE // 2 <= high:
        raise ValueError(f"lattice['keep_low'], lattice['keep_high'] of the {kind!r} "
                         f"specification are {low}, {high}: they must bracket 2^51 (the keep "
                         "probability 1/2 outside the window).")
    if not integer_ratio_at_most(high, low, epsilon):
        raise ValueError(f"lattice['keep_high'] / lattice['keep_low'] of the {kind!r} "
                         f"specification is {high}/{low}, above e^{epsilon}: the kept reports "
                         f"would not be {epsilon}-LDP.")
    if not integer_ratio_at_most(_ONE - low, _ONE - high, epsilon):
        raise ValueError(f"(2^52 - lattice['keep_low']) / (2^52 - lattice['keep_high']) of the "
                         f"{kind!r} specification is {_ONE - low}/{_ONE - high}, above "
                         f"e^{epsilon}: bottom would not be {epsilon}-LDP.")


def loss_window(epsilon):
    """``(L_lo, L_hi) = (ln(2 lo / 2^52), ln(2 hi / 2^52))``: where ``e^L / 2`` lies in the
    envelope (floats; they only shape the keep probability, which is clamped anyway).

    Examples
    --------
    >>> low, high = loss_window(1.0)
    >>> round(low, 4), round(high, 4), round(high - low, 6)
    (-0.6201, 0.3799, 1.0)
    """
    low, high = keep_envelope(epsilon)
    return math.log(2.0 * low / _ONE), math.log(2.0 * high / _ONE)


def rejection_lattice(sigma):
    """``(exponent, sigma2)``: the lattice ``2^-exponent`` with ``sigma`` between 2^12 and
    2^13 steps, and ``sigma2 = round((sigma / h)^2)`` (the discrete Gaussian's integer).

    Examples
    --------
    >>> rejection_lattice(1.0)
    (12, 16777216)
    """
    exponent = LATTICE_SIGMA_BITS + 1 - math.frexp(sigma)[1]
    return exponent, round(math.ldexp(sigma, exponent) ** 2)


# ---------------------------------------------------------------------- pure eps: rejection
def _window(s, epsilon):
    """Bounds ``(t_lo, t_hi)`` in ``t`` of the window ``L_lo <= s t - s^2/2 <= L_hi``
    (:func:`loss_window`; ``s > 0``)."""
    loss_low, loss_high = loss_window(epsilon)
    return s / 2 + loss_low / s, s / 2 + loss_high / s


def _normal_pdf(t):
    return np.exp(-0.5 * np.square(t)) / _SQRT_2PI


def window_probability(s, epsilon):
    """``P(|L| <= eps/2)`` under ``phi_a`` (equal under ``phi_0``), ``s = ||a|| / sigma``.

    ``L ~ N(s^2/2, s^2)``, so the probability is ``Phi(eps/(2s) - s/2) - Phi(-eps/(2s) - s/2)``.

    Examples
    --------
    >>> round(float(window_probability(0.5, 1.0)), 4)
    0.6677
    """
    s = np.asarray(s, dtype=float)
    with np.errstate(divide="ignore"):
        half_width = np.where(s > 0, epsilon / (2 * np.where(s > 0, s, 1.0)), np.inf)
    return special.ndtr(half_width - s / 2) - special.ndtr(-half_width - s / 2)


def rejection_moments(norms, sigma, epsilon):
    """Exact ``(p_keep, kappa, alpha, beta)`` of the rejection sampler for columns of given norm.

    For a column ``a`` with ``||a|| = norms[u]``: ``P(keep)``; ``E[v 1(keep)] = kappa a``;
    ``E[v v^T 1(keep)] = alpha I + beta a a^T`` (see the module docstring). Columns of norm 0
    are kept with probability 1/2 and then ``v ~ N(0, sigma^2 I)``: ``kappa = beta = 0``.

    Examples
    --------
    >>> p_keep, kappa, alpha, beta = rejection_moments(np.array([1.0]), 2.0, 1.0)
    >>> round(float(p_keep[0]), 4), round(float(kappa[0]), 4)
    (0.4721, 0.0898)
    """
    norms = np.asarray(norms, dtype=float)
    positive = norms > 0
    s = np.where(positive, norms / sigma, 1.0)
    low, high = _window(s, epsilon)
    # Inside the window h(t) phi(t) = phi(t - s) / 2; outside h = 1/2. Truncated moments:
    # int_l^h phi = dPhi; int_l^h t phi = phi(l) - phi(h); int_l^h t^2 phi = dPhi + l phi(l)
    # - h phi(h).
    shifted_low, shifted_high = low - s, high - s
    mass_in = special.ndtr(shifted_high) - special.ndtr(shifted_low)
    first_in = _normal_pdf(shifted_low) - _normal_pdf(shifted_high)
    second_in = (mass_in + shifted_low * _normal_pdf(shifted_low)
                 - shifted_high * _normal_pdf(shifted_high))
    # Moments of t = u + s with u standard normal restricted to [low - s, high - s].
    window_t = s * mass_in + first_in
    window_t2 = second_in + 2 * s * first_in + s * s * mass_in
    mass_g = special.ndtr(high) - special.ndtr(low)
    first_g = _normal_pdf(low) - _normal_pdf(high)
    second_g = mass_g + low * _normal_pdf(low) - high * _normal_pdf(high)
    p_keep = 0.5 * mass_in + 0.5 * (1.0 - mass_g)
    mean_t = 0.5 * window_t + 0.5 * (0.0 - first_g)  # outside-window part: -int_G t phi
    mean_t2 = 0.5 * window_t2 + 0.5 * (1.0 - second_g)
    safe = np.where(positive, norms, 1.0)
    kappa = np.where(positive, sigma * mean_t / safe, 0.0)
    alpha = sigma**2 * np.where(positive, p_keep, 0.5)
    beta = np.where(positive, sigma**2 * (mean_t2 - p_keep) / safe**2, 0.0)
    return np.where(positive, p_keep, 0.5), kappa, alpha, beta


def _mean_t(s, epsilon):
    """``E[t h(t)]`` for ``s = ||a|| / sigma`` (``sigma = 1``): the signal of one report."""
    s = np.asarray(s, dtype=float)
    _, kappa, _, _ = rejection_moments(s, 1.0, epsilon)
    return kappa * s


def equalized_norms(norms, sigma, epsilon):
    """Norms ``m_u`` that give every column the same mean factor ``kappa`` (the largest one's).

    A user plugs ``a_u m_u / ||a_u||`` into the sampler instead of ``a_u``, with ``m_u`` the
    solution of ``E[t h](m_u / sigma) = E[t h](r / sigma) ||a_u|| / r`` on the increasing
    branch of ``E[t h]`` (bisection, all columns at once). Then ``E[report | u] = lambda a_u``
    with one ``lambda`` for all types, so the estimate is unbiased on the row space of ``A``
    itself, whatever the column norms.

    Examples
    --------
    >>> m = equalized_norms(np.array([0.5, 1.0]), 4.0, 1.0)
    >>> bool(m[1] == 1.0 and m[0] < 0.5)
    True
    """
    norms = np.asarray(norms, dtype=float)
    radius = norms.max()
    s_max = radius / sigma
    # The increasing branch ends at the maximizer of E[t h]; search up to it (or s_max).
    s_peak = radius / optimal_rejection_sigma(radius, epsilon)
    upper = min(s_max, s_peak)
    target = _mean_t(s_max, epsilon) * norms / radius
    low = np.zeros_like(norms)
    high = np.full_like(norms, upper)
    for _ in range(100):
        middle = 0.5 * (low + high)
        below = _mean_t(middle, epsilon) < target
        low = np.where(below, middle, low)
        high = np.where(below, high, middle)
    result = sigma * 0.5 * (low + high)
    result[norms == radius] = radius
    result[norms == 0] = 0.0
    return result


def paper_rejection_sigma(radius, epsilon, delta0=None):
    """Sigma of the paper's construction: the smallest with window probability >= 1 - delta0.

    ``window_probability(r / sigma, eps)`` decreases in ``r / sigma``; the largest ``s`` with
    probability at least ``1 - delta0`` is found by bisection and ``sigma = r / s``.
    Default ``delta0 = tanh(eps / 2)``.

    Examples
    --------
    >>> round(paper_rejection_sigma(1.0, 1.0), 4)
    1.5486
    """
    if delta0 is None:
        delta0 = math.tanh(epsilon / 2)
    target = 1.0 - delta0
    low, high = 0.0, 1.0
    while window_probability(high, epsilon) >= target:
        low, high = high, 2 * high
    for _ in range(200):
        middle = 0.5 * (low + high)
        if window_probability(middle, epsilon) >= target:
            low = middle
        else:
            high = middle
        if high - low <= 1e-14 * high:
            break
    return radius / low


def optimal_rejection_sigma(radius, epsilon):
    """Sigma minimizing the per-user variance ``alpha / kappa^2`` of the largest column.

    ``alpha / kappa^2 = r^2 / (2 E[t h(t)]^2)`` depends on ``s = r / sigma`` only; the
    maximizer of ``E[t h(t)]`` is found by a golden-section search on ``log s``.

    Examples
    --------
    >>> round(optimal_rejection_sigma(1.0, 1.0) / paper_rejection_sigma(1.0, 1.0), 2)
    2.74
    """

    def gain(log_s):
        s = math.exp(log_s)
        _, kappa, _, _ = rejection_moments(np.array([s]), 1.0, epsilon)
        return float(kappa[0]) * s  # = E[t h(t)] with sigma = 1, ||a|| = s

    low, high = math.log(1e-3), math.log(1e2)
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    left, right = high - ratio * (high - low), low + ratio * (high - low)
    gain_left, gain_right = gain(left), gain(right)
    while high - low > 1e-10:
        if gain_left < gain_right:
            low, left, gain_left = left, right, gain_right
            right = low + ratio * (high - low)
            gain_right = gain(right)
        else:
            high, right, gain_right = right, left, gain_left
            left = high - ratio * (high - low)
            gain_left = gain(left)
    return radius / math.exp(0.5 * (low + high))


@register
class GaussianRejectionMechanism(_VectorReportMechanism):
    """Bassily's pure eps-LDP randomizer: a Gaussian draw kept by rejection sampling.

    A user of type ``u`` draws ``v ~ N(0, sigma^2 I_d)`` and keeps it with probability
    ``exp(L) / 2`` if the privacy loss ``L = (2 <a_u, v> - ||a_u||^2) / (2 sigma^2)`` lies in
    ``[-eps/2, eps/2]``, else with probability ``1/2``. A kept report is ``v``; a dropped one
    ("bottom") is a row of NaN. The estimate ``(A diag(kappa))^+ T`` is exactly unbiased (see
    the module docstring).

    With ``columns="equalized"`` a user of type ``u`` plugs ``a_u m_u / ||a_u||`` into the
    sampler instead of ``a_u`` (:func:`equalized_norms`), chosen so that ``kappa`` is the same
    for every type: ``E[T] = lambda A x``, and every workload in the row space of ``A`` is
    supported. With raw columns, ``kappa`` decreases with the column norm and the supported
    row space is that of ``A diag(kappa)``, which differs from that of ``A`` when ``A`` is rank
    deficient and its columns have different norms; raw columns have the smaller variance
    when both are possible (columns of smaller norm keep more signal).

    Parameters
    ----------
    n_inputs : int
        Domain size ``n``.
    epsilon : float in (0, 2 ln 2]
        The acceptance probabilities ``e^{+-eps/2} / 2`` must be at most 1.
    workload : array of shape (d, n), Workload or None, default=None
        The matrix ``A`` (default: the identity).
    calibration : {"optimal", "paper"}, default="optimal"
        How sigma is chosen; privacy does not depend on it (the integer envelope alone
        makes it eps-LDP).
        ``"optimal"``: least variance for the largest column; ``"paper"``: the paper's
        construction with ``delta_0 = tanh(eps/2)`` (several times more variance).
    columns : {"auto", "raw", "equalized"}, default="auto"
        ``"auto"`` resolves (and is stored as) ``"raw"`` when ``A`` has full column rank or
        all its nonzero columns have the same norm (the two row spaces agree), else
        ``"equalized"``.

    Attributes
    ----------
    sigma : float
        Standard deviation of each coordinate of a draw ``v``.
    kappa, alpha, beta : ndarray of shape (n_inputs,)
        Exact moments of one report per type, relative to the column ``a_u``:
        ``E[r] = kappa a``, ``E[r r^T] = alpha I + beta a a^T`` (``P(keep) = p_keep``, near 1/2).
    effective_norms : ndarray of shape (n_inputs,)
        Norm of the vector each type plugs into the sampler.

    See Also
    --------
    GaussianMechanism : The (epsilon, delta) randomizer of the same paper.
    FactorizationMechanism : Workload-adaptive strategies with pure epsilon-LDP.

    References
    ----------
    .. [1] R. Bassily, "Linear queries estimation with local differential privacy", AISTATS
       2019 (PMLR 89), Algorithms 3-4. The exactly unbiased estimator and the choice of
       sigma are this module's (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = GaussianRejectionMechanism(3, 1.0)
    >>> reports = mechanism.randomize(np.array([0, 1, 2, 2]), np.random.default_rng(0))
    >>> reports.shape
    (4, 3)
    >>> statistic = mechanism.aggregate(reports)
    >>> mechanism.n_reports(statistic), mechanism.estimate(statistic).shape
    (4, (3,))

    About half the users send "bottom" (a row of NaN), whatever their type. The per-user
    total variance of the four cell counts with each calibration of sigma, and with the
    (epsilon, delta) Gaussian randomizer at ``delta = 1e-6``:

    >>> from sklearn_ldp.mechanisms import GaussianMechanism
    >>> [round(float(m.per_user_variance(np.eye(4))[0]), 1) for m in (
    ...     GaussianRejectionMechanism(4, 1.0),
    ...     GaussianRejectionMechanism(4, 1.0, calibration="paper"),
    ...     GaussianMechanism(4, 1.0, delta=1e-6))]
    [267.8, 2653.0, 328.5]
    """

    kind = "gaussian_pure"
    CALIBRATIONS = ("optimal", "paper")

    COLUMNS = ("auto", "raw", "equalized")

    def __init__(self, n_inputs, epsilon, workload=None, calibration="optimal", columns="auto"):
        if isinstance(epsilon, numbers.Real) and not isinstance(epsilon, bool) and (
            float(epsilon) > MAX_REJECTION_EPSILON
        ):
            raise ValueError(
                f"epsilon={epsilon!r} is too large for the rejection-sampling randomizer: it "
                f"needs epsilon <= 2 ln 2 = {MAX_REJECTION_EPSILON:.6f} (the acceptance "
                "probability e^(epsilon/2)/2 must not exceed 1). Use a smaller epsilon, or the "
                "'gaussian' mechanism with a delta."
            )
        self.epsilon = check_epsilon(epsilon)
        if calibration not in self.CALIBRATIONS:
            raise ValueError(f"calibration must be one of {self.CALIBRATIONS}, got "
                             f"{calibration!r}.")
        self.calibration = calibration
        if columns not in self.COLUMNS:
            raise ValueError(f"columns must be one of {self.COLUMNS}, got {columns!r}.")
        self._setup_workload(n_inputs, workload)
        self.name = "gaussian_pure"
        if columns == "auto":
            nonzero = self.column_norms[self.column_norms > 0]
            equal = np.all(np.abs(nonzero - self.radius) <= 1e-12 * self.radius)
            columns = "raw" if equal or _MinimumNorm(self.A).null_space_dim == 0 else "equalized"
        self.columns = columns
        if calibration == "paper":
            self.delta0 = math.tanh(self.epsilon / 2)
            sigma = paper_rejection_sigma(self.radius, self.epsilon, self.delta0)
        else:
            self.delta0 = None
            sigma = optimal_rejection_sigma(self.radius, self.epsilon)
        # The draws live on the lattice 2^-m Z^d (exact discrete Gaussian); the moments below
        # use the realised sigma = sqrt(sigma2) h.
        self.lattice_exponent, self.sigma2 = rejection_lattice(sigma)
        self.keep_low, self.keep_high = keep_envelope(self.epsilon)
        check_keep_envelope(self.keep_low, self.keep_high, self.epsilon)
        self._set_moments()

    def _set_moments(self):
        self.step = math.ldexp(1.0, -self.lattice_exponent)
        self.sigma = math.sqrt(self.sigma2) * self.step
        if self.columns == "equalized":
            self.effective_norms = equalized_norms(self.column_norms, self.sigma, self.epsilon)
        else:
            self.effective_norms = self.column_norms.copy()
        self.p_keep, kappa, self.alpha, beta = rejection_moments(
            self.effective_norms, self.sigma, self.epsilon)
        # Moments relative to a_u: the sampler sees a_u scaled by m_u / ||a_u||.
        ratio = self.effective_norms / np.where(self.column_norms > 0, self.column_norms, 1.0)
        self.kappa = kappa * ratio
        self.beta = beta * ratio**2
        self._effective = np.ascontiguousarray((self.A * ratio[None, :]).T)  # rows: plugged in
        self._solver_cache = None
        # A kept draw has density at most that of N_Z(0, sigma2) times hi / 2^52.
        self._tail = tail_multiplier(self.n_queries, density_factor=self.keep_high / _ONE)

    def lattice_spec(self):
        """The integers of the sampled law (the specification's ``lattice``).

        Returns
        -------
        dict
            ``exponent`` (``h = 2^-exponent``), ``sigma2`` (the discrete Gaussian, lattice
            units), ``keep_low`` and ``keep_high`` (the envelope, over ``2^52``).
        """
        return {"exponent": self.lattice_exponent, "sigma2": self.sigma2,
                "keep_low": self.keep_low, "keep_high": self.keep_high}

    def _check_lattice(self, lattice):
        # The exact envelope checks, and the lattice the epsilon and params give.
        expected = self.lattice_spec()
        if not isinstance(lattice, dict) or set(lattice) != set(expected):
            raise ValueError(f"the lattice of the 'gaussian_pure' specification must be an "
                             f"object with the integers {sorted(expected)}, got {lattice!r}.")
        check_keep_envelope(lattice["keep_low"], lattice["keep_high"], self.epsilon)
        for key in sorted(expected):
            if lattice[key] != expected[key] or isinstance(lattice[key], bool):
                raise ValueError(f"lattice[{key!r}] of the 'gaussian_pure' specification is "
                                 f"{lattice[key]!r}, but its epsilon and params give "
                                 f"{expected[key]!r}: an edited lattice is refused.")

    _statistic_extra = 2

    def _scalar_params(self):
        return {"calibration": self.calibration, "columns": self.columns}

    def report_bounds(self):
        """``[-sigma z - h, sigma z + h]`` per coordinate: a kept report is a draw ``v`` of
        ``N_Z(0, sigma2) h`` (whatever the input; its tail is at most the continuous one
        shifted by a step, CKS20) kept with probability at most ``hi / 2^52``, so some
        ``|v_i| > sigma z + h`` with probability below ``REPORT_TAIL_PROBABILITY`` (``z``
        from :func:`~.gaussian.tail_multiplier`).

        Returns
        -------
        low, high : ndarray of shape (d,)
            The smallest and largest accepted value of each coordinate of a kept report.
        """
        bound = np.full(self.n_queries, self.sigma * self._tail + self.step)
        return _lattice_box(-bound, bound, self.lattice_exponent)

    @property
    def _solver(self):
        if self._solver_cache is None:
            self._solver_cache = _MinimumNorm(self.A * self.kappa[None, :])  # B = A diag(kappa)
        return self._solver_cache

    def keep_probability(self, indices, draws):
        """Probability that users of types ``indices`` keep their draws ``v`` (rows).

        ``exp(L) / 2`` inside the window ``[L_lo, L_hi]`` (:func:`loss_window`), ``1/2``
        outside, as a float; :meth:`keep_numerators` turns it into the exact integers that
        are sampled.

        Parameters
        ----------
        indices : ndarray of int of shape (n_users,)
            The users' types: cells in ``[0, n)``.
        draws : ndarray of float of shape (n_users, d)
            Each user's Gaussian draw ``v``.

        Returns
        -------
        probability : ndarray of shape (n_users,)
            The probability that each user keeps (sends) their draw.

        Raises
        ------
        ValueError
            If ``indices`` is not a 1-D array of cells in ``[0, n)`` (a negative index would
            silently pick another type's column), or ``draws`` is not ``(n_users, d)``.
        """
        indices = np.asarray(indices)
        if indices.ndim == 1 and indices.size and np.issubdtype(indices.dtype, np.integer):
            bad = (indices < 0) | (indices >= self.n_inputs)
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise ValueError(
                    f"indices must be cells in [0, {self.n_inputs}); indices[{first}] is "
                    f"{indices[first]} ({int(bad.sum())} such indices).")
        indices = check_type_indices(indices, self.n_inputs)  # the dimension and dtype
        draws = np.asarray(draws, dtype=float)
        if draws.shape != (indices.shape[0], self.n_queries):
            raise ValueError(f"draws must have shape (n_users, d) = ({indices.shape[0]}, "
                             f"{self.n_queries}), one row per index, got shape {draws.shape}.")
        columns = self._effective[indices]
        loss = (2.0 * np.einsum("ij,ij->i", columns, draws)
                - self.effective_norms[indices] ** 2)
        loss /= 2.0 * self.sigma**2
        low, high = loss_window(self.epsilon)
        inside = (loss >= low) & (loss <= high)
        return np.where(inside, 0.5 * np.exp(np.clip(loss, low, high)), 0.5)

    def keep_numerators(self, indices, draws):
        """The integers ``n`` of the keep probabilities ``n / 2^52`` actually sampled.

        The float :meth:`keep_probability` rounded down to ``2^-52`` and clamped into the
        envelope ``[keep_low, keep_high]``, whose exact checks make the mechanism eps-LDP
        whatever the floats computed.

        Parameters
        ----------
        indices : ndarray of int of shape (n_users,)
            The users' types: cells in ``[0, n)``.
        draws : ndarray of float of shape (n_users, d)
            Each user's draw ``v`` (a lattice point).

        Returns
        -------
        numerators : ndarray of int64 of shape (n_users,)
            Each in ``[keep_low, keep_high]``.

        Examples
        --------
        >>> mechanism = GaussianRejectionMechanism(2, 1.0)
        >>> n = mechanism.keep_numerators(np.array([0, 1]), np.zeros((2, 2)))
        >>> bool(np.all((mechanism.keep_low <= n) & (n <= mechanism.keep_high)))
        True
        """
        probability = self.keep_probability(indices, draws)
        numerators = np.floor(np.ldexp(probability, TABLE_PRECISION)).astype(np.int64)
        return np.clip(numerators, self.keep_low, self.keep_high)

    def exact_law(self, value):
        """The law of one report of a user of type ``value``, up to the draw's probability
        (for :func:`~sklearn_ldp.mechanisms.audit_privacy`).

        A kept report ``v`` has probability ``P(v) n(v) / 2^52``: ``P(v)``, the discrete
        Gaussian's (transcendental), is the same for every type, so two types' ratio is that
        of their integer keep numerators ``n``. The law lists them on the lattice points within
        ``+-4 sigma`` of 0 (one-query workloads; none for more queries); every other kept
        report has a ratio at most ``keep_high / keep_low``, and bottom at most ``(2^52 -
        keep_low) / (2^52 - keep_high)``, whatever the type (the envelope).

        Parameters
        ----------
        value : int
            A cell in ``[0, n)``.

        Returns
        -------
        RatioLaw
            Listed lattice points as report rows (``(m, d)`` floats), their keep numerators
            over ``2^52``, and the envelope for every other report.

        Examples
        --------
        >>> mechanism = GaussianRejectionMechanism(2, 1.0, workload=[[1.0, -1.0]])
        >>> law = mechanism.exact_law(0)
        >>> law.total == 2**52, len(law.envelope)
        (True, 2)
        """
        u = int(check_type_indices(np.array([value]), self.n_inputs)[0])
        reach = 4 * (math.isqrt(self.sigma2) + 1) if self.n_queries == 1 else -1
        lattice = np.arange(-reach, reach + 1, dtype=np.int64)
        draws = np.zeros((lattice.size, self.n_queries))  # one query, or none listed
        draws[:, 0] = np.ldexp(lattice.astype(float), -self.lattice_exponent)
        numerators = self.keep_numerators(np.full(lattice.size, u), draws)
        envelope = ((self.keep_high, self.keep_low), (_ONE - self.keep_low, _ONE - self.keep_high))
        return RatioLaw(draws, numerators.tolist(), _ONE, envelope)

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Kept draws as rows of an ``(N, d)`` float64 array; dropped users are NaN rows.

        A draw is ``h k``, ``k`` the exact discrete Gaussian ``N_Z(0, sigma2)^d`` (integer
        arithmetic only, independent of the input); it is kept by an exact Bernoulli of the
        integer :meth:`keep_numerators` over ``2^52``.

        Parameters
        ----------
        indices : array-like of int of shape (n_users,)
            The users' types (flat domain cells in ``[0, n)``).
        rng : numpy.random.Generator
            Source of randomness (the client's).

        Returns
        -------
        reports : ndarray of float64 of shape (n_users, d)
            One row per user: the kept draw (a lattice point), or NaN everywhere ("bottom").
        """
        indices = check_type_indices(indices, self.n_inputs)
        reports = np.empty((indices.shape[0], self.n_queries))
        for rows in chunks(indices.shape[0], RANDOMIZE_CHUNK):
            draws = sample_discrete_gaussian(self.sigma2, (rows.stop - rows.start)
                                             * self.n_queries, rng)
            block = np.ldexp(draws.reshape(-1, self.n_queries).astype(float),
                             -self.lattice_exponent)
            keep = bernoulli_below(rng, self.keep_numerators(indices[rows], block))
            block[~keep] = np.nan
            reports[rows] = block
        return reports

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        # Rows of NaN (bottom), or finite rows inside :meth:`report_bounds`.
        return self._box_validity(reports, bottom_allowed=True)

    def _check_statistic(self, statistic, extra):
        """As for every Gaussian statistic, and the kept reports are at most all reports."""
        statistic = super()._check_statistic(statistic, extra)
        kept, total = statistic[-2], statistic[-1]
        if extra == 2 and kept > total:
            raise ValueError(
                f"the statistic of the {self.kind!r} mechanism counts {int(kept)} kept reports "
                f"out of {int(total)}: more kept than sent, so it is corrupted or crafted.")
        return statistic

    def aggregate(self, reports):
        """``[sum of kept reports (d), number kept, N]`` as float64 (additive over chunks).

        Parameters
        ----------
        reports : ndarray of float of shape (n_reports, d)
            Reports as :meth:`randomize` returns them.

        Returns
        -------
        statistic : ndarray of float64 of shape (d + 2,)
            The sum of the kept reports, their number, and the number of all reports;
            statistics of disjoint sets of reports add.

        Raises
        ------
        ValueError
            If some report is invalid (see :meth:`report_validity`).
        """
        reports = self.check_reports(reports)
        total = np.zeros(self.n_queries)
        kept = 0
        for rows in chunks(reports.shape[0]):
            block = reports[rows]
            keep = ~np.isnan(block[:, 0]) if self.n_queries else np.ones(block.shape[0], bool)
            total += block[keep].sum(axis=0)
            kept += int(keep.sum())
        return np.concatenate([total, [float(kept), float(reports.shape[0])]])

    def n_kept(self, statistic):
        """Number of kept (non-bottom) reports in ``statistic``.

        Parameters
        ----------
        statistic : array-like of float of shape (d + 2,)
            As :meth:`aggregate` returns it.

        Returns
        -------
        n_kept : int
            The reports that are not bottom.

        Raises
        ------
        ValueError
            If ``statistic`` is not a valid statistic of this mechanism.
        """
        return int(self._check_statistic(statistic, 2)[-2])

    def simulate_statistic(self, type_counts, rng):
        """Exact draw of ``[T, K, N]`` with one scalar draw per kept user (not one vector).

        Along ``a_u/||a_u||`` a kept draw has density ``h(t) phi(t)`` (times ``sigma``): with
        probability ``P_a(G)/2`` a normal ``N(s, 1)`` truncated to the window, with
        probability ``(1 - P_0(G))/2`` a standard normal truncated to the two tails; the
        component orthogonal to ``a_u`` is ``N(0, sigma^2 (I - a a^T/||a||^2))`` whatever
        happens, so the sum of ``K_u`` of them is one Gaussian draw per type. Categories
        (window, tails, dropped) are multinomial per type; truncated normals are drawn by
        inverse CDF. Memory: ``O(n d)`` plus the kept scalars in blocks.

        Parameters
        ----------
        type_counts : array-like of int of shape (n_inputs,)
            Number of users of each type (at most ``2^62`` in all).
        rng : numpy.random.Generator
            Source of randomness.

        Returns
        -------
        statistic : ndarray of float64 of shape (d + 2,)
            Distributed exactly as ``aggregate(randomize(users))``.
        """
        counts = check_type_counts(type_counts, self.n_inputs)
        positive = self.effective_norms > 0
        s = np.where(positive, self.effective_norms / self.sigma, 1.0)
        low, high = _window(s, self.epsilon)
        in_mass = special.ndtr(high - s) - special.ndtr(low - s)  # P_a(G)
        lower_tail, upper_tail = special.ndtr(low), special.ndtr(-high)  # P_0(G^c) parts
        probabilities = np.stack([0.5 * in_mass, 0.5 * (lower_tail + upper_tail)], axis=1)
        probabilities[~positive] = [0.5, 0.0]  # zero column: kept w.p. 1/2, v ~ N(0, sigma^2 I)
        probabilities = np.column_stack([probabilities, 1.0 - probabilities.sum(axis=1)])
        categories = rng.multinomial(counts, np.clip(probabilities, 0.0, 1.0))
        in_window = np.where(positive, categories[:, 0], 0)
        in_tails = categories[:, 1]
        kept = categories[:, 0] + categories[:, 1]
        along = np.zeros(self.n_inputs)  # sum of t over the kept users of each type
        for start, stop in _scalar_blocks(in_window + in_tails):
            types = np.arange(start, stop)
            owners = np.repeat(types, in_window[types])
            lo = special.ndtr(low[owners] - s[owners])
            hi = special.ndtr(high[owners] - s[owners])
            uniform = 1.0 - rng.random(owners.size)  # in (0, 1]: ndtri stays finite
            draws = s[owners] + special.ndtri(lo + uniform * (hi - lo))
            along += np.bincount(owners, weights=draws, minlength=self.n_inputs)
            # Standard normal restricted to (-inf, low] U [high, inf), by inverse CDF.
            owners = np.repeat(types, in_tails[types])
            below, above = lower_tail[owners], upper_tail[owners]
            pick = (1.0 - rng.random(owners.size)) * (below + above)
            upper = np.clip(pick - below, np.finfo(float).tiny, above)
            draws = np.where(pick <= below, special.ndtri(np.minimum(pick, below)),
                             -special.ndtri(upper))
            along += np.bincount(owners, weights=draws, minlength=self.n_inputs)
        # Orthogonal parts, all kept users of a type at once (for zero columns: the whole
        # N(0, sigma^2 I) draws, nothing is removed).
        noise = rng.standard_normal((self.n_inputs, self.n_queries))
        noise *= (self.sigma * np.sqrt(kept))[:, None]
        unit = self._effective / np.where(positive, self.effective_norms, 1.0)[:, None]
        noise -= unit * np.sum(noise * unit, axis=1, keepdims=True)
        T = self.sigma * (along @ unit) + noise.sum(axis=0)
        return np.concatenate([T, [float(kept.sum()), float(counts.sum())]])

    # ------------------------------------------------------------------ analysis
    def per_user_variance(self, gram):
        # z_u = alpha_u ||W B^+||_F^2 + (beta_u - kappa_u^2) ||W B^+ a_u||^2.
        gram = self._dense_gram(gram)
        pinv = self._solver.pinv  # B^+, n x d
        frobenius = float(np.sum((gram @ pinv) * pinv))
        mapped = pinv @ self.A  # B^+ A, n x n
        along = np.sum((gram @ mapped) * mapped, axis=0)  # ||W B^+ a_u||^2
        return self.alpha * frobenius + (self.beta - self.kappa**2) * along

    def query_variance(self, workload_matrix):
        # z[i, u] = alpha_u ||c_i||^2 + (beta_u - kappa_u^2) (c_i . a_u)^2, c = W B^+.
        W = check_workload_matrix(workload_matrix, self.n_inputs)
        coefficients = W @ self._solver.pinv  # p x d
        norms = np.sum(coefficients**2, axis=1)
        along = (coefficients @ self.A) ** 2  # p x n
        return norms[:, None] * self.alpha[None, :] + along * (self.beta - self.kappa**2)


def _scalar_blocks(per_type, block=2**20):
    """Ranges of types whose total number of scalar draws stays near ``block``."""
    bounds = np.searchsorted(np.cumsum(per_type), np.arange(block, int(per_type.sum()), block))
    edges = np.unique(np.concatenate([[0], bounds + 1, [per_type.shape[0]]]))
    edges = np.minimum(edges, per_type.shape[0])
    return [(int(a), int(b)) for a, b in zip(edges[:-1], edges[1:], strict=True) if b > a]
