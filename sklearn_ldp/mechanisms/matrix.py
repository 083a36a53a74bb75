r"""The central-model matrix mechanism with Gaussian noise (Li, Hay, Rastogi, Miklau, McGregor).

A trusted curator holds the data vector ``x`` (counts per domain cell). To answer a workload
``W`` it measures a *strategy* ``A`` (``r x n``) with the Gaussian mechanism,
``y = A x + N(0, sigma^2 I)``, reconstructs ``x_hat = (A^T A)^+ A^T y`` by least squares (a
Cholesky solve, or an eigendecomposition when ``A^T A`` is singular; never an explicit
inverse) and releases ``W x_hat``. All answers come from one
``x_hat``, so they are consistent (e.g. a total equals the sum of its parts). ``W x_hat`` is
unbiased exactly when every query lies in the row space of ``A``; otherwise the strategy
does not support the workload and a ValueError says so.

Privacy and calibration
-----------------------
Neighbouring data add or remove one record (LM12): ``x`` changes by one in one cell, so the
L2 sensitivity of ``A x`` is the **largest column norm** ``||A||_2 = max_j ||a_j||`` (not the
spectral norm). ``sigma = multiplier(eps, delta) * ||A||_2`` with

* ``calibration="analytic"`` (default): the exact smallest multiplier for which the Gaussian
  mechanism is (eps, delta)-DP (Balle & Wang 2018, :func:`~.gaussian.analytic_gaussian_sigma`).
  It is the default because it is exact, valid for every eps (the classic bound needs
  eps < 1) and less noisy: at eps = 0.5, delta = 1e-4 its variance is 0.438 of the classic
  one, at eps = 1, delta = 1e-5 0.570. Every strategy's error scales by the same factor, so
  the choice never changes which strategy wins.
* ``calibration="classic"``: ``sqrt(2 ln(2/delta)) / eps``, the LM12 formula (their
  ``P(eps, delta) = 2 ln(2/delta) / eps^2``).

Total squared error of the workload (the sum of the query variances; data-independent)::

    E||W x_hat - W x||^2 = sigma^2 tr(W^T W (A^T A)^+) = multiplier^2 ||A||_2^2 tr(W^T W (A^T A)^+)

and no strategy beats ``multiplier^2 svdb(W)`` (Li & Miklau's singular value bound,
:func:`~sklearn_ldp.optimize.eigen_design.singular_value_bound`).

Floating-point-safe noise: ``noise="discrete"``
-----------------------------------------------
Continuous noise from a floating-point sampler leaks: the set of doubles ``f(x) + noise`` can
reach depends on ``f(x)``, and its low-order bits can reveal the data (Mironov, CCS 2012).
This matters when the released numbers are published to an adversary at full precision
(production releases); it does not matter for simulations, for error studies, or when the
output is rounded coarsely before release. ``noise="discrete"`` removes the issue:

1. the strategy is quantized to an integer matrix ``A_int = round(s A)`` (``s`` chosen so the
   integer sensitivity is ``resolution``); the reconstruction and the error formulas then use
   ``A_int`` itself, so nothing is approximate;
2. ``A_int x`` is an exact integer vector and gets discrete Gaussian noise ``N_Z(0, sigma^2)``
   drawn by the exact rejection sampler of Canonne, Kamath & Steinke (NeurIPS 2020) from
   integer uniform draws only (:func:`sample_discrete_gaussian`), vectorized;
3. privacy: with integer sensitivity ``Delta``, the multivariate discrete Gaussian satisfies
   ``Delta^2 / (2 sigma^2)``-zCDP (CKS20, exactly as the continuous one: Renyi divergences of
   independent coordinates add), converted to (eps, delta)-DP with CKS20's conversion
   (:func:`zcdp_delta`). This conversion is slightly looser than the analytic Gaussian
   (noise multiplier 4.05 against 3.73 at eps = 1, delta = 1e-5; 6.54 against 5.89 at
   eps = 0.5, delta = 1e-4): the price of exactness.

The variance of ``N_Z(0, sigma^2)`` is below ``sigma^2`` (CKS20), so the error formulas are
upper bounds for discrete noise (equal for practical purposes when ``sigma >= 1``).

Private selection
-----------------
Choosing a strategy by the analytic error is data-independent and free. Choosing it from the
data (here: by the expected *relative* error, which depends on the answers) costs privacy:
:func:`select_strategy` uses the exponential mechanism (LN section 4,
``P(c) ~ exp(eps_s u(x, c) / (2 Delta_u))``) and its ``eps_s`` is taken out of the release's
budget (sequential composition), see :func:`build_central_mechanism`.

Pure numpy/scipy (Eigen-Design adds cvxpy); no scikit-learn here.
"""

import math
import numbers
import random

import numpy as np

from .._validation import (
    as_float_matrix,
    check_delta,
    check_dense_size,
    check_epsilon,
    check_positive_int,
)
from ..optimize import eigen_design as _eigen
from .factorization import PseudoInverse
from .fourier import cell_bit_strings, fourier_coefficients
from .gaussian import analytic_gaussian_sigma, classic_gaussian_sigma

__all__ = [
    "CENTRAL_STRATEGIES",
    "MatrixMechanism",
    "PrivateSelection",
    "build_central_mechanism",
    "central_strategy",
    "exponential_mechanism",
    "exponential_probabilities",
    "fourier_basis_strategy",
    "gaussian_mechanism_error",
    "l2_sensitivity",
    "lower_bound",
    "noise_multiplier",
    "relative_error_utilities",
    "sample_discrete_gaussian",
    "select_strategy",
    "total_squared_error",
    "tree_strategy",
    "wavelet_strategy",
    "zcdp_delta",
]

CENTRAL_STRATEGIES = ("identity", "workload", "hierarchical", "wavelet", "fourier", "eigen",
                      "auto")
CALIBRATIONS = ("analytic", "classic")
NOISES = ("gaussian", "discrete")
SELECTIONS = ("none", "relative_error")
# Options of each strategy (the ``strategy_params`` of WorkloadEstimator).
STRATEGY_OPTIONS = {
    "identity": (),
    "workload": (),
    "custom": (),
    "hierarchical": ("branching",),
    "wavelet": (),
    "fourier": ("max_order",),
    "eigen": ("speedup", "n_principal", "tail", "group_size", "row_scaling", "refine_iter",
              "solver", "solver_options"),
}
NOISE_OPTIONS = ("calibration", "noise", "resolution")
AUTO_OPTIONS = ("candidates", "selection", "selection_epsilon", "sanity_bound")
# The discrete sampler works in int64 while its integers stay below this (headroom for
# products); larger values go through exact Python integers.
_INT64_LIMIT = 2**62
# Default noise scale of the discrete sampler, in lattice units: large enough that the
# quantization of the strategy is fine, small enough that the int64 path covers all
# practical draws.
_TARGET_LATTICE_SIGMA = 2**12


# ---------------------------------------------------------------------- calibration
def l2_sensitivity(strategy):
    """Largest column L2 norm of the strategy: the sensitivity of ``A x`` (add/remove one).

    Examples
    --------
    >>> l2_sensitivity(np.array([[1.0, 1.0], [1.0, 0.0]]))
    1.4142135623730951
    """
    A = np.asarray(strategy, dtype=float)
    return float(np.sqrt(np.max(np.sum(A * A, axis=0))))


def noise_multiplier(epsilon, delta, calibration="analytic"):
    """Noise standard deviation per unit of L2 sensitivity for (epsilon, delta)-DP.

    Examples
    --------
    >>> round(noise_multiplier(1.0, 1e-5), 4), round(noise_multiplier(1.0, 1e-5, "classic"), 4)
    (3.7306, 4.9409)
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    if calibration == "analytic":
        return analytic_gaussian_sigma(1.0, epsilon, delta)
    if calibration == "classic":
        return classic_gaussian_sigma(1.0, epsilon, delta)
    raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}.")


def total_squared_error(strategy, workload_matrix, epsilon, delta, calibration="analytic"):
    """Expected ``||W x_hat - W x||^2`` (counts squared) of the matrix mechanism.

    ``multiplier^2 ||A||_2^2 tr(W^T W (A^T A)^+)``; a ValueError if ``A`` does not support
    ``W``.

    Examples
    --------
    >>> round(total_squared_error(np.eye(2), np.eye(2), 1.0, 1e-5), 3)
    27.835
    """
    error = _eigen.strategy_error(strategy, workload=workload_matrix)
    return noise_multiplier(epsilon, delta, calibration) ** 2 * error


def lower_bound(workload_matrix, epsilon, delta, calibration="analytic"):
    """Singular value bound on the total squared error of any strategy, in counts squared.

    Examples
    --------
    >>> round(lower_bound(np.eye(2), 1.0, 1e-5), 3)
    27.835
    """
    bound = _eigen.singular_value_bound(workload=workload_matrix)
    return noise_multiplier(epsilon, delta, calibration) ** 2 * bound


def gaussian_mechanism_error(workload_matrix):
    """Error per unit noise of releasing ``W x`` + noise directly, *without* least squares.

    ``p ||W||_2^2`` for ``p`` queries: LM12's "Gaussian mechanism" baseline (Figure 1: 40).
    The matrix mechanism with ``A = W`` (``strategy="workload"``) reconstructs by least
    squares and has ``||W||_2^2 rank(W)`` instead (20 on Figure 1): consistency alone halves
    that error.

    Examples
    --------
    >>> round(gaussian_mechanism_error(np.ones((3, 2))), 6)
    9.0
    """
    W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
    return W.shape[0] * l2_sensitivity(W) ** 2


# ---------------------------------------------------------------------- discrete Gaussian
def zcdp_delta(rho, epsilon):
    """Smallest delta for which rho-zCDP implies (epsilon, delta)-DP (CKS20, Corollary 13).

    ``delta = inf_{a > 1} exp((a - 1)(a rho - eps)) / (a - 1) * (1 - 1/a)^a``; the exponent's
    derivative ``(2a - 1) rho - eps + ln(1 - 1/a)`` increases in ``a``, so its root is found
    by bisection. Any ``a`` gives a valid bound, so an imprecise root only errs on the safe
    side.

    Examples
    --------
    >>> round(zcdp_delta(0.05, 1.0), 6)
    0.000386
    """
    if rho <= 0:
        return 0.0
    low, high = 1.0 + 1e-12, (epsilon + 1.0) / (2.0 * rho) + 2.0
    for _ in range(200):
        alpha = 0.5 * (low + high)
        if (2 * alpha - 1) * rho - epsilon + math.log1p(-1.0 / alpha) < 0:
            low = alpha
        else:
            high = alpha
    alpha = high
    log_delta = ((alpha - 1) * (alpha * rho - epsilon) + alpha * math.log1p(-1.0 / alpha)
                 - math.log(alpha - 1))
    return min(math.exp(log_delta), 1.0)


def _zcdp_rho(epsilon, delta):
    """Largest rho whose zCDP guarantee implies (epsilon, delta)-DP (bisection on rho)."""
    low, high = 0.0, epsilon + 1.0
    for _ in range(200):
        middle = 0.5 * (low + high)
        if zcdp_delta(middle, epsilon) <= delta:
            low = middle
        else:
            high = middle
    return low


def discrete_gaussian_sigma2(sensitivity2, epsilon, delta):
    """Smallest integer ``sigma^2`` making ``q + N_Z(0, sigma^2)^r`` (epsilon, delta)-DP.

    ``q`` is integer-valued with squared L2 sensitivity ``sensitivity2`` (an integer).

    Examples
    --------
    >>> discrete_gaussian_sigma2(1, 1.0, 1e-5)
    17
    """
    epsilon, delta = check_epsilon(epsilon), check_delta(delta)
    rho = _zcdp_rho(epsilon, delta)
    sigma2 = max(1, math.ceil(sensitivity2 / (2.0 * rho)))
    while zcdp_delta(sensitivity2 / (2.0 * sigma2), epsilon) > delta:  # guard the rounding
        sigma2 += 1
    return sigma2


def _bernoulli_exp_small(num, den, rng):
    """``Bernoulli(exp(-num/den))`` for int64 arrays with ``0 <= num <= den`` (CKS20 Alg. 1).

    Draw ``A_k ~ Bernoulli(gamma / k)`` for ``k = 1, 2, ...`` until one is 0; the result is 1
    iff that ``k`` is odd. Each ``A_k`` is an exact integer comparison ``U < num`` with ``U``
    uniform on ``{0, ..., den k - 1}``.
    """
    k = np.ones(num.shape, dtype=np.int64)
    pending = np.arange(num.size)
    while pending.size:
        if k[pending[0]] >= 64:  # P <= 1/63!: finish exactly in Python integers, never overflow
            generator = random.Random(int(rng.integers(2**63)))
            for i in pending:
                while generator.randrange(int(den[i]) * int(k[i])) < int(num[i]):
                    k[i] += 1
            break
        high = den[pending] * k[pending]
        heads = rng.integers(0, high) < num[pending]
        k[pending[heads]] += 1
        pending = pending[heads]
    return (k % 2) == 1


def _bernoulli_exp(num, den, rng):
    """``Bernoulli(exp(-num/den))`` for int64 ``num >= 0``: ``floor`` coins of ``e^-1``, then
    one coin for the fractional part; the result is 1 iff every coin is 1."""
    whole, rest = np.divmod(num, den)
    result = _bernoulli_exp_small(rest, den, rng)
    left = whole.copy()
    alive = np.flatnonzero(result & (left > 0))
    while alive.size:
        ones = np.ones(alive.size, dtype=np.int64)
        heads = _bernoulli_exp_small(ones, ones, rng)
        result[alive[~heads]] = False
        left[alive] -= 1
        alive = alive[heads & (left[alive] > 0)]
    return result


def _discrete_laplace(t, size, rng):
    """``size`` draws of the discrete Laplace ``P(y) ~ exp(-|y| / t)`` (CKS20 Algorithm 2)."""
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    while pending.size:
        m = pending.size
        U = rng.integers(0, t, size=m)
        keep = _bernoulli_exp(U, np.full(m, t, dtype=np.int64), rng)
        # V = number of heads of Bernoulli(1/e) before the first tail (geometric).
        V = np.zeros(m, dtype=np.int64)
        alive = np.flatnonzero(keep)
        while alive.size:
            ones = np.ones(alive.size, dtype=np.int64)
            heads = _bernoulli_exp_small(ones, ones, rng)
            V[alive[heads]] += 1
            alive = alive[heads]
        negative = rng.integers(0, 2, size=m) == 1
        magnitude = U + t * V
        accept = keep & ~(negative & (magnitude == 0))  # -0 would count zero twice
        out[pending[accept]] = np.where(negative[accept], -magnitude[accept], magnitude[accept])
        pending = pending[~accept]
    return out


def _bernoulli_exp_python(num, den, generator):
    """Exact ``Bernoulli(exp(-num/den))`` with Python integers (any size; the slow path)."""
    def small(numerator, denominator):  # Bernoulli(exp(-numerator/denominator)), ratio <= 1
        k = 1
        while generator.randrange(denominator * k) < numerator:
            k += 1
        return k % 2 == 1

    whole, rest = divmod(num, den)
    return all(small(1, 1) for _ in range(whole)) and small(rest, den)


def sample_discrete_gaussian(sigma2, size, rng):
    """Exact draws of the discrete Gaussian ``P(y) ~ exp(-y^2 / (2 sigma^2))`` on the integers.

    Canonne, Kamath & Steinke (2020), Algorithm 3: discrete Laplace proposals with
    ``t = floor(sigma) + 1``, accepted with probability ``exp(-(|y| - sigma^2/t)^2 /
    (2 sigma^2))``. Only integer uniform draws are used, so the output distribution is exact
    (no floating point). Vectorized in int64; proposals whose integers would not fit (``|y|``
    beyond about 100 sigma at the default scale, or any proposal when ``sigma`` exceeds about
    13000) take an exact, slower Python-integer path.

    Parameters
    ----------
    sigma2 : int
        The variance parameter ``sigma^2`` (a positive integer, so every quantity is rational).
    size : int
    rng : numpy Generator

    Examples
    --------
    >>> draws = sample_discrete_gaussian(100, 5, np.random.default_rng(0))
    >>> draws.dtype, draws.shape
    (dtype('int64'), (5,))
    """
    if isinstance(sigma2, bool) or not isinstance(sigma2, numbers.Integral) or sigma2 < 1:
        raise ValueError(f"sigma2 must be an integer >= 1, got {sigma2!r}.")
    sigma2 = int(sigma2)
    t = math.isqrt(sigma2) + 1
    denominator = 2 * sigma2 * t * t  # gamma = (|y| t - sigma^2)^2 / (2 sigma^2 t^2)
    vectorized = denominator * 64 < _INT64_LIMIT  # den * k stays in int64 (k < 64 above)
    out = np.empty(size, dtype=np.int64)
    pending = np.arange(size)
    python_rng = None
    while pending.size:
        m = pending.size
        y = _discrete_laplace(t, m, rng)
        shift = np.abs(y) * t - sigma2
        fits = (np.abs(shift) < math.isqrt(_INT64_LIMIT)) & vectorized
        accept = np.zeros(m, dtype=bool)
        accept[fits] = _bernoulli_exp(shift[fits] ** 2, np.full(int(fits.sum()), denominator),
                                      rng)
        if not fits.all():
            if python_rng is None:
                python_rng = random.Random(int(rng.integers(2**63)))
            for i in np.flatnonzero(~fits):
                accept[i] = _bernoulli_exp_python(int(shift[i]) ** 2, denominator, python_rng)
        out[pending[accept]] = y[accept]
        pending = pending[~accept]
    return out


# ---------------------------------------------------------------------- strategies
def _haar_1d(n):
    """Unnormalized +-1 Haar matrix over ``n`` cells (padded to a power of two, then cut)."""
    levels = max(0, math.ceil(math.log2(n))) if n > 1 else 0
    size = 2**levels
    rows = [np.ones(size)]
    for level in range(levels):
        width = size >> level
        block = np.zeros((size // width, size))
        for node in range(size // width):
            block[node, node * width:node * width + width // 2] = 1.0
            block[node, node * width + width // 2:(node + 1) * width] = -1.0
        rows.append(block)
    H = np.vstack(rows)[:, :n]
    return H[np.any(H != 0, axis=1)]


def _tree_1d(n, branching):
    """Node indicators of a ``branching``-ary tree over ``n`` cells, leaves to root."""
    rows = []
    width = 1
    while True:
        nodes = -(-n // width)
        rows.append((np.arange(n)[None, :] // width == np.arange(nodes)[:, None]).astype(float))
        if nodes == 1:
            break
        width *= branching
    return np.vstack(rows)


def _kron(factors):
    result = np.ones((1, 1))
    for factor in factors:
        result = np.kron(result, factor)
    return result


def _shape_of(shape, n_cells):
    shape = (n_cells,) if shape is None else tuple(int(s) for s in shape)
    if math.prod(shape) != n_cells:
        raise ValueError(f"the domain shape {shape} does not match the {n_cells} cells.")
    return shape


def tree_strategy(shape, branching=2):
    """Hierarchical (Hay et al.) strategy: tree node counts per attribute, Kronecker product.

    Every level including the root is measured (in the central model the total is not known).
    Column norm ``sqrt(number of levels)`` per attribute.

    Examples
    --------
    >>> tree_strategy((4,)).shape
    (7, 4)
    """
    branching = check_positive_int(branching, "branching", minimum=2)
    shape = tuple(check_positive_int(s, "number of categories") for s in shape)
    rows = math.prod(_tree_1d(s, branching).shape[0] for s in shape)
    check_dense_size(rows, math.prod(shape), "hierarchical")
    return _kron([_tree_1d(s, branching) for s in shape])


def wavelet_strategy(shape):
    """Haar wavelet (Xiao et al.) strategy: +-1 Haar per attribute, Kronecker product.

    Squared sensitivity ``log2(n) + 1`` per attribute of ``n`` (a power of two; otherwise
    padded to the next one and cut to the real cells).

    Examples
    --------
    >>> wavelet_strategy((8,)).shape, round(l2_sensitivity(wavelet_strategy((8,))) ** 2)
    ((8, 8), 4)
    """
    shape = tuple(check_positive_int(s, "number of categories") for s in shape)
    check_dense_size(math.prod(_haar_1d(s).shape[0] for s in shape), math.prod(shape), "wavelet")
    return _kron([_haar_1d(s) for s in shape])


def _supports(A, W, rtol=1e-8):
    """Boolean per query (row of ``W``): is it in the row space of ``A``?"""
    null = PseudoInverse(A.T @ A).null_space
    W = np.atleast_2d(W)
    if null.shape[1] == 0:
        return np.ones(W.shape[0], dtype=bool)
    residual = np.linalg.norm(W @ null, axis=1)
    return residual <= rtol * np.maximum(np.linalg.norm(W, axis=1), 1e-300)


def fourier_basis_strategy(shape, workload_matrix=None, max_order=None):
    """Fourier (Barak et al.) strategy: +-1 parity queries over the records' bit strings.

    Each attribute is written in ``ceil(log2 r)`` bits; the rows are the characters
    ``(-1)^popcount(alpha & bits(cell))`` for the total (``alpha = 0``) and the coefficients
    touching at most ``max_order`` attributes. Unnecessary rows are removed (LM12): when
    every attribute has a power-of-two number of categories the characters are orthogonal and
    exactly those with ``W chi != 0`` are kept; otherwise (``max_order=None``) the least
    order that supports the workload is used. Sensitivity ``sqrt(rows)``.

    Examples
    --------
    >>> fourier_basis_strategy((2, 2)).shape
    (4, 4)
    """
    shape = tuple(check_positive_int(s, "number of categories") for s in shape)
    n = math.prod(shape)
    orders = [len(shape)] if max_order is None else [check_positive_int(max_order, "max_order")]
    power_of_two = all(s & (s - 1) == 0 for s in shape)
    if max_order is None and workload_matrix is not None and not power_of_two:
        orders = list(range(1, len(shape) + 1))
    for order in orders:
        masks, offsets = fourier_coefficients(shape, order)
        masks = np.concatenate([[0], masks]).astype(np.int64)
        check_dense_size(masks.size, n, "fourier")
        cells = cell_bit_strings(shape, offsets)
        A = 1.0 - 2.0 * (np.bitwise_count(masks[:, None] & cells[None, :]) & 1)
        if workload_matrix is None:
            return A
        W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
        if power_of_two:
            weight = np.sum((W @ A.T) ** 2, axis=0)
            A = A[weight > 1e-12 * max(weight.max(), 1e-300)]
        if _supports(A, W).all() or order == orders[-1]:
            return A
    return A


def central_strategy(name, workload_matrix, shape=None, **options):
    """The named central strategy for a workload: ``(A, design)``.

    Parameters
    ----------
    name : {"identity", "workload", "hierarchical", "wavelet", "fourier", "eigen"}
    workload_matrix : array of shape (p, n)
    shape : tuple of int, optional
        Categories per attribute (default: one attribute of ``n``); hierarchical, wavelet and
        Fourier work per attribute.
    **options
        ``branching`` (hierarchical, default 2), ``max_order`` (fourier), and the options of
        :func:`~sklearn_ldp.optimize.eigen_design.eigen_design` (eigen).

    Returns
    -------
    A : ndarray of shape (r, n)
    design : EigenDesign or None
        The Eigen-Design result (``"eigen"`` only).

    Examples
    --------
    >>> A, _ = central_strategy("wavelet", np.eye(4))
    >>> A.shape
    (4, 4)
    """
    W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
    if name not in STRATEGY_OPTIONS or name == "custom":
        raise ValueError(f"unknown central strategy {name!r}; choose one of "
                         f"{CENTRAL_STRATEGIES} or pass a strategy matrix.")
    unknown = sorted(set(options) - set(STRATEGY_OPTIONS[name]))
    if unknown:
        raise ValueError(f"options {unknown} do not apply to the {name!r} strategy; it takes "
                         f"{list(STRATEGY_OPTIONS[name]) or 'no options'}.")
    shape = _shape_of(shape, W.shape[1])
    if name == "identity":
        return np.eye(W.shape[1]), None
    if name == "workload":
        return W.copy(), None
    if name == "hierarchical":
        return tree_strategy(shape, options.get("branching", 2)), None
    if name == "wavelet":
        return wavelet_strategy(shape), None
    if name == "fourier":
        return fourier_basis_strategy(shape, W, options.get("max_order")), None
    design = _eigen.eigen_design(W, **options)
    return design.strategy, design


# ---------------------------------------------------------------------- the mechanism
class MatrixMechanism:
    """Measure a strategy ``A`` with Gaussian noise and answer queries by least squares.

    Parameters
    ----------
    strategy : array of shape (r, n)
        The measurement matrix ``A``.
    epsilon : float
    delta : float in (0, 1)
    calibration : {"analytic", "classic"}, default="analytic"
        See the module notes; ignored for ``noise="discrete"`` (zCDP calibration).
    noise : {"gaussian", "discrete"}, default="gaussian"
        ``"discrete"``: exact discrete Gaussian on a quantized integer strategy (immune to
        floating-point attacks; see the module notes).
    resolution : int, optional
        Discrete noise only: the integer sensitivity of the quantized strategy (default: so
        that the noise has about ``2^12`` lattice units of standard deviation).
    name : str, default="custom"

    Attributes
    ----------
    A : ndarray of shape (r, n)
        The strategy actually measured (the integer one for discrete noise).
    sensitivity : float
        Largest column norm of ``A``.
    sigma : float
        Noise standard deviation per measurement (units of ``A x``).
    n_inputs, n_measurements : int

    Examples
    --------
    >>> mech = MatrixMechanism(np.eye(3), epsilon=1.0, delta=1e-5)
    >>> y = mech.measure(np.array([10, 20, 30]), np.random.default_rng(0))
    >>> mech.estimate(y).shape, round(mech.sigma, 3)
    ((3,), 3.731)
    """

    def __init__(self, strategy, epsilon, delta, calibration="analytic", noise="gaussian",
                 resolution=None, name="custom"):
        A = as_float_matrix(strategy, "The strategy matrix")
        self.epsilon = check_epsilon(epsilon)
        if delta is None:
            raise ValueError("the central matrix mechanism adds Gaussian noise and needs delta, "
                             "a number in (0, 1) such as 1e-6 (below 1 / number of records).")
        self.delta = check_delta(delta)
        if calibration not in CALIBRATIONS:
            raise ValueError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}.")
        if noise not in NOISES:
            raise ValueError(f"noise must be one of {NOISES}, got {noise!r}.")
        self.calibration, self.noise, self.name = calibration, noise, str(name)
        if not np.any(A):
            raise ValueError("the strategy matrix is all zeros: it measures nothing.")
        if noise == "gaussian":
            self.A = A
            self.sensitivity = l2_sensitivity(A)
            self.sigma = noise_multiplier(self.epsilon, self.delta, calibration) * self.sensitivity
            self._integer = None
        else:
            self._quantize(A, resolution)
        self.A.setflags(write=False)
        self.n_measurements, self.n_inputs = self.A.shape
        self._solver = PseudoInverse(self.A.T @ self.A)

    def _quantize(self, A, resolution):
        if resolution is None:
            multiplier = math.sqrt(1.0 / (2.0 * _zcdp_rho(self.epsilon, self.delta)))
            resolution = max(16, round(_TARGET_LATTICE_SIGMA / multiplier))
        resolution = check_positive_int(resolution, "resolution")
        integer = np.rint(A * (resolution / l2_sensitivity(A))).astype(np.int64)
        sensitivity2 = int(np.max(np.sum(integer * integer, axis=0)))
        self.sigma2 = discrete_gaussian_sigma2(sensitivity2, self.epsilon, self.delta)
        self.resolution = resolution
        self._integer = integer
        self.A = integer.astype(float)
        self.sensitivity = math.sqrt(sensitivity2)
        self.sigma = math.sqrt(self.sigma2)

    # ------------------------------------------------------------------ support
    def supports(self, workload_matrix):
        """Boolean per query: is it in the row space of ``A`` (answerable without bias)?"""
        W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
        null = self._solver.null_space
        if null.shape[1] == 0:
            return np.ones(W.shape[0], dtype=bool)
        residual = np.linalg.norm(W @ null, axis=1)
        return residual <= 1e-8 * np.maximum(np.linalg.norm(W, axis=1), 1e-300)

    def check_supports(self, workload_matrix, labels=None):
        """Raise a ValueError naming the queries outside the row space of the strategy."""
        W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
        if W.shape[1] != self.n_inputs:
            raise ValueError(f"the queries have {W.shape[1]} columns but the strategy covers "
                             f"{self.n_inputs} cells.")
        ok = self.supports(W)
        if not ok.all():
            bad = np.flatnonzero(~ok)
            shown = [str(labels[i]) if labels is not None else f"query {i}" for i in bad[:3]]
            raise ValueError(
                f"the strategy {self.name!r} does not support the workload: {bad.size} of "
                f"{W.shape[0]} queries (e.g. {', '.join(shown)}) are not in its row space, so "
                "least squares cannot answer them without bias. Use a strategy that spans the "
                "workload: 'eigen', 'identity', 'workload', or a Fourier order that covers it"
                + (", or a larger resolution (quantization zeroed small entries)."
                   if self.noise == "discrete" else ".")
            )

    # ------------------------------------------------------------------ release
    def measure(self, data_vector, rng):
        """The noisy measurements ``A x + noise`` of the counts ``x`` (the private release)."""
        x = np.asarray(data_vector)
        if x.shape != (self.n_inputs,):
            raise ValueError(f"the data vector must have length {self.n_inputs}, got shape "
                             f"{x.shape}.")
        if self._integer is None:
            return self.A @ x.astype(float) + self.sigma * rng.standard_normal(self.n_measurements)
        if not np.all(x == np.round(x)) or np.any(x < 0):
            raise ValueError("discrete noise needs integer counts (a histogram of records).")
        x = x.astype(np.int64)
        if np.abs(self._integer).max() * float(x.sum()) >= _INT64_LIMIT:
            raise ValueError("the counts are too large for exact integer arithmetic; use a "
                             "smaller resolution.")
        noise = sample_discrete_gaussian(self.sigma2, self.n_measurements, rng)
        return self._integer @ x + noise

    def estimate(self, measurements):
        """Least-squares data vector ``x_hat = (A^T A)^+ A^T y`` (minimum norm)."""
        y = np.asarray(measurements, dtype=float)
        if y.shape != (self.n_measurements,):
            raise ValueError(f"expected {self.n_measurements} measurements, got shape {y.shape}.")
        return self._solver.solve(self.A.T @ y)

    # ------------------------------------------------------------------ error
    def query_variance(self, workload_matrix):
        """Variance of each answer ``w x_hat``: ``sigma^2 w (A^T A)^+ w^T`` (data-independent)."""
        W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
        return self.sigma**2 * np.sum(self._solver.solve(W.T).T * W, axis=1)

    def total_squared_error(self, gram):
        """``sigma^2 tr(W^T W (A^T A)^+)``: expected squared error summed over the queries."""
        return float(self.sigma**2 * np.trace(self._solver.solve(np.asarray(gram, dtype=float))))

    def lower_bound(self, gram):
        """Singular value bound at this mechanism's noise per unit sensitivity."""
        bound = _eigen.singular_value_bound(gram=gram)
        return float((self.sigma / self.sensitivity) ** 2 * bound)

    def __repr__(self):
        return (f"MatrixMechanism(name={self.name!r}, shape={self.A.shape}, "
                f"epsilon={self.epsilon}, delta={self.delta}, noise={self.noise!r})")


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


def relative_error_utilities(data_vector, workload_matrix, mechanisms, sanity_bound):
    r"""Utility and sensitivity for choosing a strategy by its expected relative error.

    ``u_c(x) = -(1/p) sum_i V_{c,i} / max(|w_i x|, s)^2``: minus the mean squared relative
    error of the queries (variance ``V_{c,i}`` of candidate ``c``), with the sanity bound
    ``s`` keeping small answers from dominating (the relative-error convention we chose: the
    seed leaves it open). ``f(a) = V / max(|a|, s)^2`` is ``2 V / s^3``-Lipschitz and one
    record moves ``w_i x`` by ``|w_ij|``, so ``Delta_u = max_c max_j (2 / (p s^3)) sum_i
    V_{c,i} |w_ij|``.

    Returns
    -------
    utilities : ndarray of shape (n_candidates,)
    sensitivity : float
    """
    W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
    if not (isinstance(sanity_bound, numbers.Real) and sanity_bound > 0):
        raise ValueError(f"sanity_bound must be a positive count, got {sanity_bound!r}.")
    answers = np.maximum(np.abs(W @ np.asarray(data_vector, dtype=float)), sanity_bound)
    variances = np.array([m.query_variance(W) for m in mechanisms])
    utilities = -np.mean(variances / answers**2, axis=1)
    sensitivity = 2.0 / (W.shape[0] * sanity_bound**3) * float(
        np.max(variances @ np.abs(W)))
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
    workload_matrix : array of shape (p, n)
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


# ---------------------------------------------------------------------- orchestration
def build_central_mechanism(strategy, workload_matrix, shape, epsilon, delta, data_vector=None,
                            rng=None, params=None):
    """Build (and, if asked, privately select) the central mechanism for a workload.

    Parameters
    ----------
    strategy : str or array of shape (r, n)
        A name in :data:`CENTRAL_STRATEGIES` or a custom strategy matrix.
    workload_matrix : array of shape (p, n)
    shape : tuple of int or None
        Categories per attribute.
    epsilon, delta : float
        The whole budget of the release (selection included).
    data_vector : array, optional
        Only for a data-dependent selection (``selection="relative_error"``).
    rng : numpy Generator, optional
    params : dict, optional
        Strategy options (see :func:`central_strategy`), noise options (``calibration``,
        ``noise``, ``resolution``) and, for ``"auto"``: ``candidates`` (names; default all),
        ``selection`` (``"none"``: least analytic error, free; ``"relative_error"``: the
        exponential mechanism on the data), ``selection_epsilon`` (taken out of ``epsilon``)
        and ``sanity_bound``.

    Returns
    -------
    mechanism : MatrixMechanism
    report : dict
        ``strategy`` (name built), ``candidates`` (analytic total squared error of each
        candidate, ``"auto"`` only), ``selection`` (PrivateSelection or None), ``budget``
        (``selection_epsilon``, ``measurement_epsilon``, ``delta``) and ``design``
        (EigenDesign or None).

    Examples
    --------
    >>> mech, report = build_central_mechanism("auto", np.tril(np.ones((4, 4))), (4,),
    ...                                        1.0, 1e-5, params={"candidates": ["identity",
    ...                                                                       "wavelet"]})
    >>> report["strategy"]
    'wavelet'
    """
    epsilon = check_epsilon(epsilon)
    if delta is None:
        raise ValueError("the central model adds Gaussian noise and needs delta, a number in "
                         "(0, 1) such as 1e-6 (well below 1 / number of records).")
    delta = check_delta(delta)
    W = np.atleast_2d(np.asarray(workload_matrix, dtype=float))
    params = dict(params or {})
    noise = {key: params.pop(key) for key in NOISE_OPTIONS if key in params}
    report = {"candidates": None, "selection": None, "design": None}
    selection_epsilon = 0.0
    if isinstance(strategy, str) and strategy == "auto":
        auto = {key: params.pop(key) for key in AUTO_OPTIONS if key in params}
        names = list(auto.get("candidates", CENTRAL_STRATEGIES[:-1]))
        bad = [c for c in names if c not in CENTRAL_STRATEGIES[:-1]]
        if bad or not names:
            raise ValueError(f"candidates must be a non-empty list of {CENTRAL_STRATEGIES[:-1]},"
                             f" got {names!r}.")
        built = {}
        for name in names:
            options = {k: v for k, v in params.items() if k in STRATEGY_OPTIONS[name]}
            built[name] = central_strategy(name, W, shape, **options)
        unused = sorted(set(params) - {k for c in names for k in STRATEGY_OPTIONS[c]})
        if unused:
            raise ValueError(f"options {unused} apply to none of the candidates {names}.")
        errors = {}
        gram = W.T @ W
        for name, (A, _) in built.items():
            try:
                errors[name] = _eigen.strategy_error(A, gram=gram)
            except ValueError:
                errors[name] = math.inf  # this candidate cannot answer the workload
        multiplier2 = noise_multiplier(epsilon, delta, noise.get("calibration", "analytic"))**2
        report["candidates"] = {name: multiplier2 * e for name, e in errors.items()}
        selection = auto.get("selection", "none")
        if selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {SELECTIONS}, got {selection!r}.")
        if selection == "none":
            chosen = min(errors, key=errors.get)
        else:
            selection_epsilon = auto.get("selection_epsilon")
            if not (isinstance(selection_epsilon, numbers.Real)
                    and 0 < selection_epsilon < epsilon):
                raise ValueError(f"selection_epsilon must be in (0, epsilon={epsilon}); it is "
                                 f"taken out of the budget. Got {selection_epsilon!r}.")
            if data_vector is None or rng is None:
                raise ValueError("a data-dependent selection needs the data vector and an rng.")
            usable = [name for name in names if math.isfinite(errors[name])]
            mechanisms = {name: MatrixMechanism(built[name][0], epsilon - selection_epsilon,
                                                delta, name=name, **noise) for name in usable}
            report["selection"] = select_strategy(data_vector, W, mechanisms, selection_epsilon,
                                                  auto.get("sanity_bound"), rng)
            chosen = report["selection"].choice
        A, report["design"] = built[chosen]
        name = chosen
    elif isinstance(strategy, str):
        A, report["design"] = central_strategy(strategy, W, shape, **params)
        name = strategy
    else:
        if params:
            raise ValueError(f"a custom strategy matrix takes no strategy options, got "
                             f"{sorted(params)}.")
        A, name = as_float_matrix(strategy, "The strategy matrix"), "custom"
        if A.shape[1] != W.shape[1]:
            raise ValueError(f"the strategy matrix has {A.shape[1]} columns but the domain has "
                             f"{W.shape[1]} cells.")
    measurement_epsilon = epsilon - selection_epsilon
    mechanism = MatrixMechanism(A, measurement_epsilon, delta, name=name, **noise)
    report["strategy"] = name
    report["budget"] = {"selection_epsilon": float(selection_epsilon),
                        "measurement_epsilon": float(measurement_epsilon), "delta": delta}
    return mechanism, report
