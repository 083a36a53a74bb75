r"""Build the central-model matrix mechanism for a workload by strategy name.

The selection layer of the central model (it knows both :mod:`sklearn_ldp.mechanisms` and
:mod:`sklearn_ldp.optimize`): the registry of central strategy names and their options, the
strategy matrix of a name (closed forms from :mod:`sklearn_ldp.mechanisms.central.strategies`,
or Eigen-Design from :mod:`sklearn_ldp.optimize.eigen_design`) and ``"auto"``, which picks the
candidate of least analytic error or, at a price in budget, selects one privately
(:func:`~sklearn_ldp.mechanisms.central.private_selection.select_strategy`). The mechanism itself is
:class:`~sklearn_ldp.mechanisms.central.matrix.MatrixMechanism`.

The workload is a structured :class:`~sklearn_ldp.workloads.Workload` (or, for backward
compatibility, a dense query matrix). Only its Gram ``W^T W`` enters the strategies and their
errors, so nothing here forms the ``p x n`` matrix of a large workload (all ranges over 1024
cells have 524800 queries): Eigen-Design decomposes the ``n x n`` Gram (in closed form for
prefix and all-range), ``"auto"`` scores each candidate by ``||A||_2^2 tr(G (A^T A)^+)``, and
the ``"workload"`` strategy of a workload with many queries measures a square root ``R`` of
``G`` (``R^T R = G``, the same column norms: the same error, LM12's error-equivalence).

Pure numpy/scipy (Eigen-Design adds cvxpy); no scikit-learn here.
"""

import math
import numbers

import numpy as np
from scipy import linalg

from .._gram import DenseGram, Gram
from .._strategy_error import (
    dense_gram_matrix,
    is_structured_workload,
    query_matrix,
    workload_gram,
)
from .._validation import as_float_matrix, check_delta, check_epsilon, did_you_mean
from ..mechanisms.central.matrix import MatrixMechanism, noise_multiplier
from ..mechanisms.central.private_selection import select_strategy
from ..mechanisms.central.strategies import (
    _shape_of,
    fourier_basis_strategy,
    tree_strategy,
    wavelet_strategy,
)
from ..optimize import eigen_design as _eigen

__all__ = [
    "CENTRAL_STRATEGIES",
    "build_central_mechanism",
    "central_strategy",
]

CENTRAL_STRATEGIES = ("identity", "workload", "hierarchical", "wavelet", "fourier", "eigen",
                      "auto")
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
# The "workload" strategy measures the workload's own rows up to this many matrix entries
# (32 MiB); beyond, a square root of its Gram (at most n x n, the same error).
WORKLOAD_STRATEGY_ENTRIES = 2**22


def _n_cells(workload):
    if isinstance(workload, Gram):
        return workload.n
    if is_structured_workload(workload):
        return workload.shape[1]
    return query_matrix(workload).shape[1]


def gram_root(gram):
    """``R`` with ``R^T R = G`` (rows spanning the workload's row space).

    The transposed Cholesky factor when ``G`` is well conditioned (``n^3 / 3``), else the
    eigen-queries scaled by the square roots of their eigenvalues (zero ones dropped).
    """
    G = dense_gram_matrix(gram)
    try:
        factor = linalg.cholesky(G, lower=True, check_finite=False)
        diag = np.diag(factor)
        if diag.min() ** 2 > 1e-12 * diag.max() ** 2:
            return np.ascontiguousarray(factor.T)
    except linalg.LinAlgError:
        pass
    values, queries, _ = _eigen.eigen_queries(gram=gram)
    return np.sqrt(values)[:, None] * queries


def _workload_strategy(workload):
    """The ``"workload"`` strategy: the query matrix itself when it is small, else a root of
    its Gram (same ``A^T A`` and column norms, so the same reconstruction and error)."""
    if isinstance(workload, Gram):
        return gram_root(workload)
    if not is_structured_workload(workload):
        return query_matrix(workload).copy()
    p, n = workload.shape
    if p * n <= WORKLOAD_STRATEGY_ENTRIES:
        return workload.toarray()
    return gram_root(workload.gram())


# ---------------------------------------------------------------------- strategies
def central_strategy(name, workload_matrix, shape=None, **options):
    """The named central strategy for a workload: ``(A, design)``.

    Parameters
    ----------
    name : {"identity", "workload", "hierarchical", "wavelet", "fourier", "eigen"}
    workload_matrix : Workload, array of shape (p, n), or Gram operator
        The queries: a structured workload (used through its Gram), a dense query matrix, or
        the Gram ``W^T W`` itself (a :class:`~sklearn_ldp._gram.Gram`).
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
    if name not in STRATEGY_OPTIONS or name == "custom":
        raise ValueError(f"unknown central strategy {name!r}."
                         f"{did_you_mean(name, CENTRAL_STRATEGIES)} Choose one of "
                         f"{CENTRAL_STRATEGIES} or pass a strategy matrix.")
    unknown = sorted(set(options) - set(STRATEGY_OPTIONS[name]))
    if unknown:
        raise ValueError(f"options {unknown} do not apply to the {name!r} strategy; it takes "
                         f"{list(STRATEGY_OPTIONS[name]) or 'no options'}.")
    n = _n_cells(workload_matrix)
    shape = _shape_of(shape, n)
    if name == "identity":
        return np.eye(n), None
    if name == "workload":
        return _workload_strategy(workload_matrix), None
    if name == "hierarchical":
        return tree_strategy(shape, options.get("branching", 2)), None
    if name == "wavelet":
        return wavelet_strategy(shape), None
    if name == "fourier":
        return fourier_basis_strategy(shape, workload_matrix, options.get("max_order")), None
    if isinstance(workload_matrix, Gram):
        design = _eigen.eigen_design(gram=workload_matrix, **options)
    else:
        design = _eigen.eigen_design(workload_matrix, **options)
    return design.strategy, design


# ---------------------------------------------------------------------- orchestration
def _mechanism(built, epsilon, delta, name, noise):
    """The matrix mechanism of a built ``(A, design)``; Eigen-Design hands over its ``A^T A``
    (computed from the eigen-queries, saving an ``r n^2`` product)."""
    A, design = built
    gaussian = noise.get("noise", "gaussian") == "gaussian"  # discrete noise re-quantizes A
    strategy_gram = design.strategy_gram if design is not None and gaussian else None
    return MatrixMechanism(A, epsilon, delta, name=name, strategy_gram=strategy_gram, **noise)


def build_central_mechanism(strategy, workload_matrix, shape, epsilon, delta, data_vector=None,
                            rng=None, params=None):
    """Build (and, if asked, privately select) the central mechanism for a workload.

    Parameters
    ----------
    strategy : str or array of shape (r, n)
        A name in :data:`CENTRAL_STRATEGIES` or a custom strategy matrix.
    workload_matrix : Workload or array of shape (p, n)
        The queries: a structured workload (used through its Gram operator; the selection
        ``"relative_error"`` also answers it through its products) or a dense query matrix.
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
        raise ValueError("the central model (a central strategy name or a strategy matrix) "
                         "adds Gaussian noise and needs delta, a number in (0, 1) such as "
                         "1e-6 (well below 1 / number of records).")
    delta = check_delta(delta)
    if is_structured_workload(workload_matrix) or isinstance(workload_matrix, Gram):
        workload = workload_matrix
    else:
        workload = query_matrix(workload_matrix)
    gram = workload_gram(workload)
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
            built[name] = central_strategy(name, workload, shape, **options)
        unused = sorted(set(params) - {k for c in names for k in STRATEGY_OPTIONS[c]})
        if unused:
            raise ValueError(f"options {unused} apply to none of the candidates {names}.")
        errors = {}
        dense = None
        for name, (A, design) in built.items():
            if design is not None:  # Eigen-Design computed its own error from the Gram
                errors[name] = design.error
                continue
            if dense is None:  # n x n, once for all candidates
                dense = DenseGram(dense_gram_matrix(gram))
            try:
                errors[name] = _eigen.strategy_error(A, gram=dense)
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
            if isinstance(workload, Gram):
                raise ValueError("a data-dependent selection answers the queries: pass the "
                                 "workload, not only its Gram.")
            mechanisms = {name: _mechanism(built[name], epsilon - selection_epsilon, delta,
                                           name, noise) for name in usable}
            report["selection"] = select_strategy(data_vector, workload, mechanisms,
                                                  selection_epsilon, auto.get("sanity_bound"),
                                                  rng)
            chosen = report["selection"].choice
        A, report["design"] = built[chosen]
        name = chosen
    elif isinstance(strategy, str):
        A, report["design"] = central_strategy(strategy, workload, shape, **params)
        name = strategy
    else:
        if params:
            raise ValueError(f"a custom strategy matrix takes no strategy options, got "
                             f"{sorted(params)}.")
        A, name = as_float_matrix(strategy, "The strategy matrix"), "custom"
        if A.shape[1] != gram.n:
            raise ValueError(f"the strategy matrix has {A.shape[1]} columns but the domain has "
                             f"{gram.n} cells.")
    measurement_epsilon = epsilon - selection_epsilon
    mechanism = _mechanism((A, report["design"]), measurement_epsilon, delta, name, noise)
    report["strategy"] = name
    report["budget"] = {"selection_epsilon": float(selection_epsilon),
                        "measurement_epsilon": float(measurement_epsilon), "delta": delta}
    return mechanism, report
