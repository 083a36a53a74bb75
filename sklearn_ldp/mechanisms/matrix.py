r"""The central-model matrix mechanism with Gaussian noise (Li, Hay, Rastogi, Miklau, McGregor).

A trusted curator holds the data vector ``x`` (counts per domain cell). To answer a workload
``W`` it measures a *strategy* ``A`` (``r x n``) with the Gaussian mechanism,
``y = A x + N(0, sigma^2 I)``, reconstructs ``x_hat = (A^T A)^+ A^T y`` by least squares (a
Cholesky solve, or an eigendecomposition when ``A^T A`` is singular; never an explicit
inverse) and releases ``W x_hat``. All answers come from one
``x_hat``, so they are consistent (e.g. a total equals the sum of its parts). ``W x_hat`` is
unbiased exactly when every query lies in the row space of ``A``; otherwise the strategy
does not support the workload and a ValueError says so.

This module holds the mechanism, its noise calibration and its error. The closed-form
strategies are in :mod:`.central_strategies`, the exact discrete Gaussian sampler in
:mod:`.discrete_gaussian` and the private choice of a strategy in :mod:`.private_selection`;
building a mechanism from a strategy name (Eigen-Design included) is the selection layer's
job (:func:`sklearn_ldp.selection.central.build_central_mechanism`).

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
   integer uniform draws only (:func:`~.discrete_gaussian.sample_discrete_gaussian`),
   vectorized;
3. privacy: with integer sensitivity ``Delta``, the multivariate discrete Gaussian satisfies
   ``Delta^2 / (2 sigma^2)``-zCDP (CKS20, exactly as the continuous one: Renyi divergences of
   independent coordinates add), converted to (eps, delta)-DP with CKS20's conversion
   (:func:`~.discrete_gaussian.zcdp_delta`). This conversion is slightly looser than the
   analytic Gaussian
   (noise multiplier 4.05 against 3.73 at eps = 1, delta = 1e-5; 6.54 against 5.89 at
   eps = 0.5, delta = 1e-4): the price of exactness.

The variance of ``N_Z(0, sigma^2)`` is below ``sigma^2`` (CKS20), so the error formulas are
upper bounds for discrete noise (equal for practical purposes when ``sigma >= 1``).

Pure numpy/scipy; no scikit-learn here.
"""

import math
import warnings

import numpy as np

from .._strategy_error import singular_value_bound, strategy_error
from .._validation import (
    as_float_matrix,
    check_delta,
    check_epsilon,
    check_positive_int,
)
from .discrete_gaussian import (
    _INT64_LIMIT,
    _zcdp_rho,
    discrete_gaussian_sigma2,
    sample_discrete_gaussian,
)
from .factorization import PseudoInverse
from .gaussian import analytic_gaussian_sigma, classic_gaussian_sigma

__all__ = [
    "MatrixMechanism",
    "gaussian_mechanism_error",
    "l2_sensitivity",
    "lower_bound",
    "noise_multiplier",
    "total_squared_error",
]

CALIBRATIONS = ("analytic", "classic")
NOISES = ("gaussian", "discrete")
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
    error = strategy_error(strategy, workload=workload_matrix)
    return noise_multiplier(epsilon, delta, calibration) ** 2 * error


def lower_bound(workload_matrix, epsilon, delta, calibration="analytic"):
    """Singular value bound on the total squared error of any strategy, in counts squared.

    Examples
    --------
    >>> round(lower_bound(np.eye(2), 1.0, 1e-5), 3)
    27.835
    """
    bound = singular_value_bound(workload=workload_matrix)
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
        bound = singular_value_bound(gram=gram)
        return float((self.sigma / self.sensitivity) ** 2 * bound)

    def __repr__(self):
        return (f"MatrixMechanism(name={self.name!r}, shape={self.A.shape}, "
                f"epsilon={self.epsilon}, delta={self.delta}, noise={self.noise!r})")


# Names that moved out of this module when it was split by job, importable from here until
# their removal: old imports and pickles keep working.
_MOVED_TO_CENTRAL_STRATEGIES = ("fourier_basis_strategy", "tree_strategy", "wavelet_strategy")
_MOVED_TO_DISCRETE_GAUSSIAN = ("zcdp_delta",)
_MOVED_TO_PRIVATE_SELECTION = ("PrivateSelection", "exponential_mechanism",
                               "exponential_probabilities", "relative_error_utilities",
                               "select_strategy")
_MOVED_TO_SELECTION = ("AUTO_OPTIONS", "CENTRAL_STRATEGIES", "NOISE_OPTIONS", "SELECTIONS",
                       "STRATEGY_OPTIONS", "build_central_mechanism", "central_strategy")


def __getattr__(name):
    """Deprecated names: imported lazily from their new module, with a DeprecationWarning."""
    if name in _MOVED_TO_CENTRAL_STRATEGIES:
        from . import central_strategies as home
    elif name in _MOVED_TO_DISCRETE_GAUSSIAN:
        from . import discrete_gaussian as home
    elif name in _MOVED_TO_PRIVATE_SELECTION:
        from . import private_selection as home
    elif name in _MOVED_TO_SELECTION:
        from ..selection import central as home
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"{__name__}.{name} is deprecated: import it from {home.__name__}.",
                  DeprecationWarning, stacklevel=2)
    return getattr(home, name)
