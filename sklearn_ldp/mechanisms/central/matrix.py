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

import numpy as np

from ..._strategy_error import (
    GRAM_SUPPORT_RTOL,
    _full_inverse,
    dense_gram_matrix,
    gram_leak,
    is_structured_workload,
    query_matrix,
    singular_value_bound,
    strategy_error,
    workload_gram,
)
from ..._validation import (
    as_float_matrix,
    check_delta,
    check_epsilon,
    check_positive_int,
)
from ..bassily.gaussian import analytic_gaussian_sigma, classic_gaussian_sigma
from ..factorization.mechanism import PseudoInverse
from .discrete_gaussian import (
    _INT64_LIMIT,
    _zcdp_rho,
    discrete_gaussian_sigma2,
    sample_discrete_gaussian,
)

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
# A query is in the strategy's row space when its component in the null space is below this
# fraction of its norm.
SUPPORT_RTOL = 1e-8
# Labels of a failing workload are looked up (to name the failing queries) up to this size.
_NAMED_QUERIES_LIMIT = 2**20


# ---------------------------------------------------------------------- calibration
def l2_sensitivity(strategy):
    """Largest column L2 norm of the strategy: the sensitivity of ``A x`` (add/remove one).

    Squares of entries below about ``1e-162`` underflow to 0 and above ``1e154`` overflow:
    a strategy of tiny entries would get sensitivity 0, hence no noise at all, and release
    ``A x`` exactly. Such a matrix is scaled by its largest entry first.

    Examples
    --------
    >>> l2_sensitivity(np.array([[1.0, 1.0], [1.0, 0.0]]))
    1.4142135623730951
    >>> l2_sensitivity(np.array([[3e-170, 0.0], [4e-170, 1e-170]]))
    5e-170
    """
    A = np.asarray(strategy, dtype=float)
    scale = float(np.max(np.abs(A))) if A.size else 0.0
    if 1e-100 < scale < 1e100:  # the squares and their sums stay normal floats
        return float(np.sqrt(np.max(np.sum(A * A, axis=0))))
    if scale == 0.0 or not math.isfinite(scale):
        return scale
    B = A / scale
    return scale * float(np.sqrt(np.max(np.sum(B * B, axis=0))))


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

    ``multiplier^2 ||W||_*^2 / n``, with ``||W||_*`` the sum of the singular values of ``W``
    and ``multiplier`` the noise per unit of sensitivity: no strategy ``A`` measured by the
    Gaussian mechanism at (epsilon, delta) answers ``W`` with a smaller expected total
    squared error. Available before any data is collected, it tells how far a strategy is
    from the best possible.

    Parameters
    ----------
    workload_matrix : workload or array-like of shape (n_queries, n_cells)
        The queries ``W`` (a large structured workload is not made dense: the spectrum of
        its Gram is used).
    epsilon : float
        The privacy budget.
    delta : float in (0, 1)
        The failure probability of the guarantee.
    calibration : {"analytic", "classic"}, default="analytic"
        The noise calibration (see :class:`MatrixMechanism`).

    Returns
    -------
    float
        The bound, in squared counts summed over the queries.

    See Also
    --------
    MatrixMechanism.total_squared_error : The error of a given strategy.
    MatrixMechanism.lower_bound : The same bound at a mechanism's calibration.
    svd_lower_bound : The analogous bound in the local model.

    References
    ----------
    .. [1] C. Li and G. Miklau, "An adaptive mechanism for accurate query answering under
       differential privacy", PVLDB 5(6), 2012 (the singular value bound ``svdb``).

    Examples
    --------
    >>> round(lower_bound(np.eye(2), 1.0, 1e-5), 3)
    27.835

    Prefix sums over 16 cells: the bound, and how close the hierarchical tree comes.

    >>> from sklearn_ldp.mechanisms.central.strategies import tree_strategy
    >>> prefix = np.tril(np.ones((16, 16)))
    >>> tree = MatrixMechanism(tree_strategy((16,)), 1.0, 1e-5)
    >>> round(lower_bound(prefix, 1.0, 1e-5)), round(tree.total_squared_error(prefix.T @ prefix))
    (591, 837)
    """
    bound = singular_value_bound(workload=workload_matrix)
    return noise_multiplier(epsilon, delta, calibration) ** 2 * bound


def gaussian_mechanism_error(workload_matrix):
    """Error per unit noise of releasing ``W x`` + noise directly, *without* least squares.

    ``p ||W||_2^2`` for ``p`` queries: LM12's "Gaussian mechanism" baseline (Figure 1: 40).
    The matrix mechanism with ``A = W`` (``strategy="workload"``) reconstructs by least
    squares and has ``||W||_2^2 rank(W)`` instead (20 on Figure 1): consistency alone halves
    that error. ``workload_matrix`` may be a Workload (the column norms come from its Gram).

    Examples
    --------
    >>> round(gaussian_mechanism_error(np.ones((3, 2))), 6)
    9.0
    """
    if is_structured_workload(workload_matrix):
        return workload_matrix.shape[0] * float(workload_matrix.gram().diagonal().max())
    W = query_matrix(workload_matrix)
    return W.shape[0] * l2_sensitivity(W) ** 2


# ---------------------------------------------------------------------- the mechanism
class MatrixMechanism:
    """Measure a strategy ``A`` with Gaussian noise and answer queries by least squares.

    The central model: a trusted curator holds the counts ``x`` and releases
    ``y = A x + N(0, sigma^2 I)`` (:meth:`measure`); every answer comes from the one
    least-squares estimate ``x_hat = (A^T A)^+ A^T y`` (:meth:`estimate`), so the answers are
    consistent, and unbiased for the queries in the row space of ``A`` (:meth:`supports`).
    The error is data-independent and known in advance (:meth:`query_variance`,
    :meth:`total_squared_error`). Neighbouring data add or remove one record, so the
    sensitivity is the largest column norm of ``A``.

    Parameters
    ----------
    strategy : array of shape (r, n)
        The measurement matrix ``A``.
    epsilon : float
        The privacy budget (``epsilon > 0``).
    delta : float in (0, 1)
        The probability with which the ``epsilon`` guarantee may fail; choose it below
        ``1 / number of records``.
    calibration : {"analytic", "classic"}, default="analytic"
        How the noise is scaled: ``"analytic"`` is the exact smallest Gaussian noise for
        (epsilon, delta)-DP (Balle and Wang), valid for every epsilon; ``"classic"`` is
        ``sqrt(2 ln(2 / delta)) / epsilon`` per unit of sensitivity (Li and Miklau).
        Ignored for ``noise="discrete"`` (zCDP calibration).
    noise : {"gaussian", "discrete"}, default="gaussian"
        ``"discrete"``: exact discrete Gaussian on a quantized integer strategy (immune to
        floating-point attacks; see the module notes).
    resolution : int, optional
        Discrete noise only: the integer sensitivity of the quantized strategy (default: so
        that the noise has about ``2^12`` lattice units of standard deviation).
    name : str, default="custom"
        The strategy's name, for display and messages.
    strategy_gram : array of shape (n, n), optional
        ``A^T A`` when the caller already has it (Eigen-Design computes it from its
        eigen-queries, without the completion rows), to save an ``r n^2`` product. Used for
        Gaussian noise only (discrete noise measures a quantized ``A``); its diagonal is
        checked against the column norms of ``A``. Privacy does not depend on it (the
        noise is calibrated on ``A``), only the least-squares reconstruction does.

    Attributes
    ----------
    A : ndarray of shape (r, n)
        The strategy actually measured (the integer one for discrete noise).
    sensitivity : float
        Largest column norm of ``A``.
    sigma : float
        Noise standard deviation per measurement (units of ``A x``).
    n_inputs, n_measurements : int

    See Also
    --------
    tree_strategy : The hierarchical strategy for range queries.
    wavelet_strategy : The Haar wavelet strategy for range queries.
    fourier_basis_strategy : The Fourier strategy for marginals.
    lower_bound : The least error any strategy can reach.
    FactorizationMechanism : The local-model counterpart.

    References
    ----------
    .. [1] C. Li, M. Hay, V. Rastogi, G. Miklau and A. McGregor, "Optimizing linear counting
       queries under differential privacy", PODS 2010 (the matrix mechanism).
    .. [2] C. Li and G. Miklau, "An adaptive mechanism for accurate query answering under
       differential privacy", PVLDB 5(6), 2012 (the (epsilon, delta) Gaussian version, its
       error and the singular value bound).
    .. [3] B. Balle and Y.-X. Wang, "Improving the Gaussian mechanism for differential
       privacy: analytical calibration and optimal denoising", ICML 2018
       (``calibration="analytic"``).
    .. [4] C. L. Canonne, G. Kamath and T. Steinke, "The discrete Gaussian for differential
       privacy", NeurIPS 2020 (``noise="discrete"``).

    Examples
    --------
    >>> mech = MatrixMechanism(np.eye(3), epsilon=1.0, delta=1e-5)
    >>> y = mech.measure(np.array([10, 20, 30]), np.random.default_rng(0))
    >>> mech.estimate(y).shape, round(mech.sigma, 3)
    ((3,), 3.731)

    The hierarchical tree answers the prefix sums (a CDF) with less error than measuring
    every cell, and both are above the singular value bound:

    >>> from sklearn_ldp.mechanisms.central.strategies import tree_strategy
    >>> prefix = np.tril(np.ones((16, 16)))
    >>> tree = MatrixMechanism(tree_strategy((16,)), 1.0, 1e-5, name="tree")
    >>> cells = MatrixMechanism(np.eye(16), 1.0, 1e-5, name="identity")
    >>> gram = prefix.T @ prefix
    >>> [round(m.total_squared_error(gram)) for m in (tree, cells)], round(tree.lower_bound(gram))
    ([837, 1893], 591)
    """

    def __init__(self, strategy, epsilon, delta, calibration="analytic", noise="gaussian",
                 resolution=None, name="custom", strategy_gram=None):
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
        # A zero or infinite noise scale would release A x exactly, or nothing but infinities.
        if not (self.sigma > 0 and math.isfinite(self.sigma)):
            raise ValueError(f"the strategy matrix gives the noise scale sigma={self.sigma!r} "
                             f"(sensitivity {self.sensitivity!r}); its entries are too large "
                             "to calibrate noise in floating point. Rescale the strategy.")
        self.A.setflags(write=False)
        self.n_measurements, self.n_inputs = self.A.shape
        if strategy_gram is None or self._integer is not None:
            strategy_gram = self.A.T @ self.A
        else:
            strategy_gram = self._checked_strategy_gram(strategy_gram)
        self._solver = PseudoInverse(strategy_gram)
        self._covariance = None  # (A^T A)^+, computed on first use (see unit_covariance)

    def _checked_strategy_gram(self, strategy_gram):
        X = np.asarray(strategy_gram, dtype=float)
        if X.shape != (self.n_inputs, self.n_inputs):
            raise ValueError(f"strategy_gram must be {self.n_inputs} x {self.n_inputs} (A^T A),"
                             f" got shape {X.shape}.")
        norms2 = np.einsum("ij,ij->j", self.A, self.A)
        if not np.allclose(np.diagonal(X), norms2, rtol=1e-8, atol=1e-12 * norms2.max()):
            raise ValueError("strategy_gram is not A^T A: its diagonal differs from the squared "
                             "column norms of the strategy.")
        return X

    def __getstate__(self):
        state = self.__dict__.copy()
        state["_covariance"] = None  # a cache of n x n floats: recomputed on demand
        return state

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
    def _width(self, workload):
        if is_structured_workload(workload):
            width = workload.shape[1]
        else:
            width = query_matrix(workload).shape[1]
        if width != self.n_inputs:
            raise ValueError(f"the queries have {width} columns but the strategy covers "
                             f"{self.n_inputs} cells.")

    def supports(self, workload_matrix):
        """Whether each query is in the row space of ``A`` (answerable without bias).

        ``workload_matrix`` is a query matrix or a Workload; a Workload is applied to the
        null space of ``A^T A`` as an operator (``p x dim(null)`` numbers, nothing ``p x n``).

        Parameters
        ----------
        workload_matrix : workload or array-like of shape (n_queries, n_inputs)
            The queries to test, one row each (or a Workload).

        Returns
        -------
        ndarray of bool of shape (n_queries,)
            True for the queries whose component outside the row space of ``A`` is below
            ``1e-8`` of their norm.

        Raises
        ------
        ValueError
            If the queries do not have ``n_inputs`` columns.
        """
        null = self._solver.null_space
        if is_structured_workload(workload_matrix):
            self._width(workload_matrix)
            if null.shape[1] == 0:
                return np.ones(workload_matrix.shape[0], dtype=bool)
            residual = np.linalg.norm(workload_matrix.matvec(null), axis=1)
            norms = np.sqrt(workload_matrix.query_stats().sq_norms)
        else:
            W = query_matrix(workload_matrix)
            if null.shape[1] == 0:
                return np.ones(W.shape[0], dtype=bool)
            residual = np.linalg.norm(W @ null, axis=1)
            norms = np.linalg.norm(W, axis=1)
        return residual <= SUPPORT_RTOL * np.maximum(norms, 1e-300)

    def check_supports(self, workload_matrix, labels=None):
        """Raise a ValueError naming the queries outside the row space of the strategy.

        ``workload_matrix`` is a query matrix or a Workload (``labels`` default to its own).
        When the queries times the null-space directions are too many to form, the whole
        workload is checked through its Gram instead (``||W N||_F^2 = tr(N^T G N)``).

        Parameters
        ----------
        workload_matrix : workload or array-like of shape (n_queries, n_inputs)
            The queries.
        labels : sequence of str, optional
            A name for each query, used in the message (default: the workload's labels, or
            ``"query i"``).

        Raises
        ------
        ValueError
            If the queries have the wrong width, or some query is not in the row space of
            the strategy (the message names up to three of them).
        """
        self._width(workload_matrix)
        null = self._solver.null_space
        if null.shape[1] == 0:
            return  # full rank: every query is supported
        advice = ("Use a strategy that spans the workload: 'eigen', 'identity', 'workload', or "
                  "a Fourier order that covers it"
                  + (", or a larger resolution (quantization zeroed small entries)."
                     if self.noise == "discrete" else "."))
        try:
            ok = self.supports(workload_matrix)
        except ValueError:  # W N would be too large: check the whole workload via its Gram
            leak = gram_leak(null, workload_gram(workload_matrix))
            if leak <= GRAM_SUPPORT_RTOL:
                return
            raise ValueError(
                f"the strategy {self.name!r} does not support the workload: a fraction "
                f"{leak:.3g} of its squared norm lies outside the row space of the strategy, "
                f"so least squares cannot answer it without bias. {advice}"
            ) from None
        if ok.all():
            return
        bad = np.flatnonzero(~ok)
        if (labels is None and is_structured_workload(workload_matrix)
                and workload_matrix.shape[0] <= _NAMED_QUERIES_LIMIT):
            labels = workload_matrix.labels
        shown = [str(labels[i]) if labels is not None else f"query {i}" for i in bad[:3]]
        raise ValueError(
            f"the strategy {self.name!r} does not support the workload: {bad.size} of "
            f"{ok.size} queries (e.g. {', '.join(shown)}) are not in its row space, so "
            f"least squares cannot answer them without bias. {advice}"
        )

    # ------------------------------------------------------------------ release
    @property
    def n_cells(self):
        """Number of domain cells, the package's public name for it (``n_inputs`` is an
        alias kept for existing code).

        Returns
        -------
        int
            The width of the measurement matrix and of the workloads.
        """
        return self.n_inputs

    def measure(self, data_vector, rng):
        """The noisy measurements ``A x + noise`` of the counts ``x`` (the private release).

        Parameters
        ----------
        data_vector : array-like of shape (n_inputs,)
            The counts ``x`` of records per domain cell (non-negative integers for
            ``noise="discrete"``).
        rng : numpy.random.Generator
            The source of the noise. A seeded generator is for simulations only.

        Returns
        -------
        ndarray of shape (n_measurements,)
            ``A x`` plus independent Gaussian noise of standard deviation ``sigma`` (floats),
            or the integer ``A_int x`` plus discrete Gaussian noise (int64).

        Raises
        ------
        ValueError
            If ``data_vector`` has the wrong length, or (discrete noise) is not a vector of
            non-negative integer counts small enough for exact int64 arithmetic.
        """
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
        """Least-squares data vector ``x_hat = (A^T A)^+ A^T y`` (minimum norm).

        Parameters
        ----------
        measurements : array-like of shape (n_measurements,)
            The noisy measurements ``y`` (:meth:`measure`).

        Returns
        -------
        ndarray of shape (n_inputs,)
            ``x_hat``; ``w x_hat`` is an unbiased answer for every query ``w`` in the row
            space of ``A``.

        Raises
        ------
        ValueError
            If ``measurements`` does not have ``n_measurements`` entries.
        """
        y = np.asarray(measurements, dtype=float)
        if y.shape != (self.n_measurements,):
            raise ValueError(f"expected {self.n_measurements} measurements, got shape {y.shape}.")
        return self._solver.solve(self.A.T @ y)

    # ------------------------------------------------------------------ error
    def unit_covariance(self):
        """``(A^T A)^+``: the covariance of the estimated data vector over ``sigma^2``.

        Computed once (``2 n^3 / 3`` flops from the Cholesky factor) and kept: every
        per-query variance and the total error then cost ``O(n^2)`` or less.

        Returns
        -------
        ndarray of shape (n_inputs, n_inputs)
            ``(A^T A)^+``, symmetric and read-only.
        """
        if self._covariance is None:
            factor = getattr(self._solver, "_cholesky", None)
            if factor is not None and factor[1]:
                covariance = _full_inverse(factor[0])
            else:  # singular A^T A (or another factorization): apply the pseudo-inverse
                covariance = self._solver.solve(np.eye(self.n_inputs))
                covariance = 0.5 * (covariance + covariance.T)
            covariance.setflags(write=False)
            self._covariance = covariance
        return self._covariance

    def _row_variances(self, rows):
        """``w (A^T A)^+ w^T`` for each row of a dense block (the covariance when it is
        already there, else a solve, which is cheaper for a few rows)."""
        if self._covariance is None and rows.shape[0] < self.n_inputs:
            return np.einsum("ij,ji->i", rows, self._solver.solve(rows.T))
        return np.einsum("ij,ij->i", rows @ self.unit_covariance(), rows)

    def _interval_variances(self, lo, hi):
        """``Var(x_lo + ... + x_hi)`` over ``sigma^2`` for each interval, from the covariance
        ``C`` of the prefix sums ``S_a = x_0 + ... + x_{a-1}`` (``S_0 = 0``): ``C[hi + 1, hi +
        1] + C[lo, lo] - 2 C[lo, hi + 1]``. ``C`` is two cumulative sums of the covariance
        (``O(n^2)``, once), each interval ``O(1)``; single cells read the diagonal directly."""
        covariance = self.unit_covariance()
        n = self.n_inputs
        C = np.zeros((n + 1, n + 1))
        np.cumsum(np.cumsum(covariance, axis=0), axis=1, out=C[1:, 1:])
        variance = C[hi + 1, hi + 1] + C[lo, lo] - 2.0 * C[lo, hi + 1]
        single = lo == hi
        variance[single] = np.diagonal(covariance)[lo[single]]
        return variance

    def query_variance(self, workload_matrix):
        """Variance of each answer ``w x_hat``: ``sigma^2 w (A^T A)^+ w^T`` (data-independent).

        ``workload_matrix`` is a query matrix or a Workload. A workload of intervals (prefix,
        all ranges, chosen ranges, histogram) is answered from the covariance of the prefix
        sums in ``O(n^2 + p)``; any other Workload by its dense row blocks
        (``diag(B Cov B^T)`` per block), never as one ``p x n`` matrix.

        Parameters
        ----------
        workload_matrix : workload or array-like of shape (n_queries, n_inputs)
            The queries whose answers' variance to compute.

        Returns
        -------
        ndarray of shape (n_queries,)
            The variance of each answer, in squared counts.
        """
        if not is_structured_workload(workload_matrix):
            return self.sigma**2 * self._row_variances(query_matrix(workload_matrix))
        self._width(workload_matrix)
        bounds = workload_matrix.intervals()
        if bounds is not None:
            return self.sigma**2 * self._interval_variances(*bounds)
        variance = np.empty(workload_matrix.shape[0])
        for rows, block in workload_matrix.row_blocks():
            variance[rows] = self._row_variances(block)
        return self.sigma**2 * variance

    def query_variance_summary(self, workload):
        """``(worst, average)`` per query, as the local mechanisms report it.

        Both are :meth:`query_variance`, since the central error does not depend on the
        data.

        Parameters
        ----------
        workload : workload or array-like of shape (n_queries, n_inputs)
            The queries.

        Returns
        -------
        worst : ndarray of shape (n_queries,)
            The variance of each answer.
        average : ndarray of shape (n_queries,)
            The same array.
        """
        variance = self.query_variance(workload)
        return variance, variance

    def total_squared_error(self, gram):
        """``sigma^2 tr(W^T W (A^T A)^+)``: expected squared error summed over the queries.

        ``gram`` is ``W^T W`` (dense array or Gram operator) or a Workload; ``O(n^2)`` once
        the covariance is there (see :meth:`unit_covariance`).

        Parameters
        ----------
        gram : Gram, workload or ndarray of shape (n_inputs, n_inputs)
            ``W^T W`` for the workload ``W``.

        Returns
        -------
        float
            ``E ||W x_hat - W x||^2`` in squared counts (an upper bound for discrete noise,
            whose variance is below ``sigma^2``).
        """
        if isinstance(gram, np.ndarray):
            G = np.asarray(gram, dtype=float)
        else:
            G = dense_gram_matrix(workload_gram(gram))
        if G.shape != (self.n_inputs, self.n_inputs):
            raise ValueError(f"the Gram matrix must be {self.n_inputs} x {self.n_inputs}, got "
                             f"shape {G.shape}.")
        return float(self.sigma**2 * np.vdot(G, self.unit_covariance()))

    def lower_bound(self, gram, svdb=None):
        """Singular value bound at this mechanism's noise per unit sensitivity.

        ``gram`` is ``W^T W`` (dense array or Gram operator; prefix, all-range, identity and
        Kronecker Grams have closed-form spectra) or a Workload; ``svdb``, if given, is the
        workload's bound already computed (e.g. :attr:`EigenDesign.bound`).

        Parameters
        ----------
        gram : Gram, workload or ndarray of shape (n_inputs, n_inputs)
            ``W^T W`` for the workload ``W``.
        svdb : float, optional
            The singular value bound ``||W||_*^2 / n`` per unit noise, when already known.

        Returns
        -------
        float
            No strategy measured with this noise calibration has a smaller total squared
            error on the workload (squared counts).
        """
        if svdb is None:
            svdb = singular_value_bound(gram=gram)
        return float((self.sigma / self.sensitivity) ** 2 * svdb)

    def __repr__(self):
        return (f"MatrixMechanism(name={self.name!r}, shape={self.A.shape}, "
                f"epsilon={self.epsilon}, delta={self.delta}, noise={self.noise!r})")
