"""Build a local (LDP) mechanism by strategy name: the registry of names, and the optimizer.

The selection layer: the only place that knows both :mod:`sklearn_ldp.mechanisms` and
:mod:`sklearn_ldp.optimize` (pure numpy; no scikit-learn here).

Names:

* frequency oracles (structured, any domain size): ``randomized_response``, ``rappor``
  (symmetric unary encoding), ``oue``, ``olh``, ``blh``, ``hadamard``, ``hrr``,
  ``subset_selection`` (the "flat" methods for range queries);
* structured range mechanisms (any domain size, thesis chapter 5): ``hierarchical`` (a B-ary
  tree, one sampled level per user through the frequency oracle ``oracle`` in {"oue", "olh",
  "hrr"}) and ``haar`` (HaarHRR);
* factorization baselines (dense strategy matrices): ``hierarchical_matrix`` (the same tree
  with Hadamard response per level, as one matrix with its optimal decoder), ``fourier``, and
  over domains of several columns ``marg_ps_matrix`` and ``marg_ht_matrix`` (the randomizers
  of the marginal strategies ``marg_ps`` and ``marg_ht`` of the least order that answers the
  workload, as one matrix with the optimal decoder for the workload);
* Bassily's randomizers for the workload's columns: ``gaussian`` ((epsilon, delta)-LDP) and
  ``gaussian_pure`` (epsilon-LDP by rejection sampling);
* marginal strategies (thesis chapter 4; every marginal of order <= ``max_order``, no
  workload): ``inp_rr``, ``inp_ps``, ``inp_ht``, ``marg_rr``, ``marg_ps``, ``marg_ht`` and the
  ``inp_em`` baseline (:mod:`sklearn_ldp.mechanisms.marginals`). On a workload of marginals
  of two or more columns, all but ``inp_em`` are candidates of ``auto`` and ``optimized``
  too, scored in closed form at any size with the error of their own decoder
  (:mod:`sklearn_ldp.selection.marginal_workloads`; ``MarginalEstimator`` decodes the pick);
* ``optimized`` (the strategy optimizer, compared with every closed form above: it returns
  whichever has the least worst-case error on the workload, so it is never worse than a
  closed form) and ``auto`` (the candidate with the least analytic worst-case error on the
  workload among the epsilon-LDP frequency oracles, the range mechanisms, the factorization
  baselines and the optimizer's strategy). Both leave out the candidates whose reports take
  more than ``max_report_bytes`` bytes a user
  (:func:`~sklearn_ldp.selection.baselines.report_bytes`), score the cheap candidates first
  (``candidate_list``) and ``auto`` skips a costly one whose :func:`lower_bound` already
  exceeds the best worst case found.

Marginal strategies as candidates of ``optimized`` and ``auto``: a
:class:`~sklearn_ldp.mechanisms.marginals.base.MarginalMechanism` answers marginal tables only
(its ``per_user_variance`` and ``estimate`` raise), so it is scored as itself only on a
workload of marginals (above). On every workload, those whose randomizer is a small matrix
are also candidates through that matrix with the optimal decoder (dense, up to
``AUTO_DENSE_MAX_CELLS`` cells in ``auto``): ``inp_ht`` is ``fourier`` (the same
coefficients), ``inp_ps`` is ``randomized_response``, ``inp_rr`` is ``rappor``, and
``marg_ps`` / ``marg_ht`` are ``marg_ps_matrix`` / ``marg_ht_matrix``. ``marg_rr`` is not:
its matrix has ``2^c`` rows per set of ``c`` cells (393,216 x 256 for the 2-way sets of
4 x 4 x 4 x 4), and the optimal decoder of that matrix needs each report's number of ones
besides the bit counts that ``marg_rr`` aggregates. ``inp_em`` (per-attribute randomized
response, eps/d per column) is full rank, but on the 2-way marginals of 4 x 4, 4 x 4 x 4 and
4 x 4 x 4 x 4 at eps 0.5 to 4 its worst case with the optimal decoder was 6 to 507 times the
best closed form's, so it is not scored (nor as itself: its EM tables are biased).
"""

import functools
import numbers
import time

import numpy as np

from .._logging import get_logger
from .._strategy_error import closed_form_eigensystem
from ..mechanisms.factorization.mechanism import FactorizationMechanism
from ..mechanisms.marginals.base import (
    MARGINAL_STRATEGIES,
    MarginalMechanism,
    build_marginal_mechanism,
)
from ..mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
from ..optimize.ldp_factorization import (
    DEFAULT_MAX_SECONDS,
    cubic_seconds,
    limit_blas_threads,
    optimize_strategy,
)
from ..workloads import histogram
from .baselines import (
    BASELINES,
    DEFAULT_MAX_REPORT_BYTES,
    FACTORIZATION_BASELINES,
    HISTOGRAM_ENCODINGS,
    ORACLES,
    RANGE_MECHANISMS,
    SCALABLE_ADVICE,
    WORKLOAD_RANDOMIZERS,
    baseline_mechanism,
    bitmap_report_bytes,
    check_max_report_bytes,
    check_strategy_name,
    coerce_workload,
    least_marginal_order,
    marginal_order,
    report_bytes,
    start_matrix,
    variances,
    workload_randomizer,
)
from .marginal_workloads import marginal_sets, score_marginal_strategies
from .multi_attribute import is_one_way_marginals, select_attribute_protocol

# Dense strategy matrices (the factorization baselines, "optimized") have at least n x n
# entries and their error takes O(n^3): "auto" scores them up to this many cells, and
# "optimized" (O(m n^2) per iteration, m = 4n outputs) runs up to OPTIMIZED_MAX_CELLS.
AUTO_DENSE_MAX_CELLS = 256
AUTO_OPTIMIZE_MAX_CELLS = 64
OPTIMIZED_MAX_CELLS = 2048
# "auto" with multi_attribute=True on the one-way marginals of several columns, and "auto"
# or "optimized" on marginals of two or more columns: the joint-domain candidates are scored
# up to this many cells (their error on marginals grows with the joint domain, e.g. 2.9e7
# per user for OUE over 4^10 cells against 204 for SMP over 4 x 4 x 4 x 4 x 4, and scoring
# them took 10 s at 4^10 cells), the protocols and marginal strategies at every size.
ONE_WAY_JOINT_MAX_CELLS = 2**16
# The closed forms in the order they are scored: the cheap ones first, so that the costly ones
# (the Hadamard response's exact variance took 9 to 14 s on a prefix over 525,600 cells) meet
# a good best and their lower bound can spare them.
SCORING_ORDER = (tuple(name for name in ORACLES if name != "hadamard") + RANGE_MECHANISMS
                 + ("hadamard",) + FACTORIZATION_BASELINES)
# Eigen-queries of the workload (the largest eigenvalues of its Gram) in the lower bound of a
# candidate's error (lower_bound); on a prefix the first holds about 80% of the trace, and
# its bound was 0.46 of the flat oracles' and the Hadamard response's worst case there (0.23 on
# all ranges), far above the range mechanisms' error that rules them out.
BOUND_EIGENPAIRS = 1
# Mechanisms (by kind) whose exact error costs far more than their lower bound: the Hadamard
# response (exact variance 20 s, bound 1.2 s and construction 0.8 s on a prefix over 525,600
# cells, loaded machine). The others' bound costs about what their exact error does.
BOUND_FIRST_KINDS = ("hadamard",)
# The time budget of "optimized" past AUTO_DENSE_MAX_CELLS cells, in units of n^3 dense
# operations (optimize.ldp_factorization.cubic_seconds, measured at the call): a step is
# started only if its predicted time fits. Measured at 1,260 cells on the loaded 2-core machine
# (benchmarks/bench_optimizer.py --budgets): building and scoring a dense closed form
# (hierarchical_matrix, fourier) 5.4 to 5.6 units; the optimizer's factorization of W^T W 2,
# one objective value or gradient at m = 4n outputs 1 each (so its first iteration, start
# included, 6); building its strategy as a mechanism (Q^T D^-1 Q, its pseudo-inverse, the
# decoder) about 4.
DENSE_CANDIDATE_UNITS = 6.0
# "optimized" with a time budget: the costly structured closed forms are predicted from the
# first of them scored in the same call (same workload, same load). Measured at 360, 1,260
# and 2,040 cells (1- and 2-way marginals, loaded 2-core machine): haar took 0.6 to 1.3 times
# hierarchical, hadamard (every block layout scored) 1.7 to 4.1 times; the factors are the
# larger ends, rounded up.
RELATIVE_COSTS = {"haar": ("hierarchical", 1.5), "hadamard": ("hierarchical", 4.5)}
# Before any of them is scored (past AUTO_DENSE_MAX_CELLS cells): their predicted seconds are
# these numbers times n^2 dense operations (cubic_seconds(n) / n, the same load-aware unit):
# hierarchical took 349 and 353 such units at 1,260 and 2,040 cells on the loaded machine.
QUADRATIC_UNITS = {"hierarchical": 500.0, "haar": 750.0, "hadamard": 2250.0}
HIERARCHICAL_QUADRATIC_UNITS = 350.0  # measured (above): the unit implied by its seconds
OPTIMIZER_SETUP_UNITS = 2.0
OPTIMIZER_EVALUATIONS_PER_ITERATION = 4
OPTIMIZED_BUILD_UNITS = 4.0
# A bound skips a candidate only when it exceeds the best worst case by more than rounding.
BOUND_RTOL = 1e-6
logger = get_logger("selection")


# A tie between the optimizer's strategy and a closed form goes to the closed form: started
# from a closed form's matrix, the optimizer can return that very matrix, whose worst case
# then differs from the closed form's own computation in the last digits only.
TIE_RTOL = 1e-9


def _expected_error(row):
    """The ``expected_error`` dict of one user from a selection row (computed once)."""
    return {"worst_case": row["worst_case"], "average_case": row["average_case"]}


def _skip_reason(name, n, dense_limit=AUTO_DENSE_MAX_CELLS, duplicates=None):
    """Why the candidate ``name`` is not scored at ``n`` cells (None: it is).

    ``dense_limit``: the dense factorization baselines are scored up to this many cells
    (None: always, as ``"optimized"`` does); ``duplicates`` maps the candidates that are
    another candidate's strategy to the reason.
    """
    if duplicates and name in duplicates:
        return duplicates[name]
    if dense_limit is not None and name in FACTORIZATION_BASELINES and n > dense_limit:
        return (f"dense strategy matrix: its error costs O(n^3), scored up to "
                f"{dense_limit} cells")
    return None


def _marginal_duplicates(shape, order):
    """The marginal matrix candidates that are the same strategy as another candidate.

    Over one column, or for a workload that needs the whole table (``order`` = the number of
    columns), the single set of a marginal strategy is the whole domain: ``marg_ps_matrix``
    is then ``randomized_response`` and ``marg_ht_matrix`` is ``fourier``.
    """
    if len(shape) < 2:
        why = "a single column"
    elif order is not None and order >= len(shape):
        why = "the workload needs the whole table (marginal order = number of columns)"
    else:
        return {}
    return {"marg_ps_matrix": f"{why}: the same strategy as 'randomized_response'",
            "marg_ht_matrix": f"{why}: the same strategy as 'fourier'"}


# The fields of a row of the selection report, in the order of the encoder's ``selection_``.
SELECTION_COLUMNS = ["worst_case", "average_case", "report_bytes", "lower_bound", "seconds",
                     "status", "reason"]
# Their types where the default (float, object) does not fit: bytes are whole, or missing.
SELECTION_DTYPES = {"report_bytes": "Int64"}


def _skipped_row(reason, seconds=0.0, size=np.nan, bound=np.nan):
    return {"worst_case": np.nan, "average_case": np.nan, "report_bytes": size,
            "lower_bound": bound, "seconds": seconds, "status": "skipped", "reason": reason}


def _scored_row(worst, average, size, seconds, reason="", bound=np.nan):
    return {"worst_case": worst, "average_case": average, "report_bytes": size,
            "lower_bound": bound, "seconds": seconds, "status": "scored", "reason": reason}


def candidate_list(closed_form):
    """The closed-form candidates of ``"auto"`` and ``"optimized"``, cheapest to score first.

    Parameters
    ----------
    closed_form : callable
        ``closed_form(name)`` builds the named baseline for the domain and workload.

    Returns
    -------
    list of (str, callable)
        ``(name, builder)`` pairs; ``builder()`` returns the candidate mechanism.

    Examples
    --------
    >>> names = [name for name, _ in candidate_list(print)]
    >>> names[:3], names.index("hadamard") > names.index("haar")
    (['randomized_response', 'rappor', 'oue'], True)
    """
    return [(name, functools.partial(closed_form, name)) for name in SCORING_ORDER]


def workload_eigenpairs(gram, top=BOUND_EIGENPAIRS):
    """The ``top`` largest eigenvalues of a workload's Gram and their eigenvectors (as rows),
    when known in closed form (prefix and all-range workloads, possibly scaled), else None.

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> values, vectors = workload_eigenpairs(workloads.prefix(100).gram(), top=2)
    >>> vectors.shape, bool(values[0] > values[1])
    ((2, 100), True)
    """
    return closed_form_eigensystem(gram, top=top)


def lower_bound(mechanism, eigenpairs):
    r"""A lower bound on the mechanism's worst-case per-user variance, from eigen-queries.

    A user of type ``u`` contributes a decoded vector of covariance ``C_u`` (positive
    semidefinite: the decoder is linear and unbiased), and the per-user variance of the
    workload is ``z_u = tr(G C_u)``. For eigenpairs ``(lambda_j, v_j)`` of the Gram ``G``,
    ``G' = sum_j lambda_j v_j v_j^T <= G``, so ``z_u >= tr(G' C_u) = sum_j lambda_j
    z_u(v_j)``, where ``z_u(v_j)`` is the per-user variance of the one query ``v_j``: the
    maximum over ``u`` bounds the worst case. It costs the variances of ``len(lambda)``
    queries instead of the whole workload.

    Parameters
    ----------
    mechanism : Mechanism
        The candidate.
    eigenpairs : (ndarray, ndarray)
        Eigenvalues and eigenvectors (rows) of the workload's Gram, as
        :func:`workload_eigenpairs` returns them.

    Returns
    -------
    float
        At most the worst case over the user types of the workload's per-user variance.

    References
    ----------
    .. [1] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive
       mechanism for linear queries under local differential privacy", PVLDB
       13(11):1905-1918, 2020 (the per-user variance ``tr(G C_u)``).

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> gram = workloads.prefix(64).gram()
    >>> olh = baseline_mechanism("olh", (64,), 1.0)
    >>> bool(lower_bound(olh, workload_eigenpairs(gram)) <= variances(olh, gram)[0])
    True
    """
    values, vectors = eigenpairs
    return float(np.max(values @ mechanism.query_variance(vectors)))


def _size_before_building(name, n, max_report_bytes):
    """The reason to skip a packed-bitmap oracle over the size limit before building it."""
    size = bitmap_report_bytes(name, n)
    if size is not None and max_report_bytes is not None and size > max_report_bytes:
        return size, _size_reason(size, max_report_bytes)
    return np.nan, None


def _size_reason(size, max_report_bytes):
    return f"reports of {size} bytes a user, over max_report_bytes={max_report_bytes}"


def _check_size(mechanism, max_report_bytes):
    """``(bytes a user, reason to skip or None)`` of a candidate under ``max_report_bytes``."""
    size = report_bytes(mechanism)
    if max_report_bytes is not None and size > max_report_bytes:
        return size, _size_reason(size, max_report_bytes)
    return size, None


def _score_candidates(candidates, gram, n, deadline, label="auto",
                      dense_limit=AUTO_DENSE_MAX_CELLS, duplicates=None,
                      max_report_bytes=DEFAULT_MAX_REPORT_BYTES, gram_eigenpairs=None,
                      predicted_seconds=0.0, relative_costs=None, first_always=False):
    """Score each ``(name, builder)`` candidate on the workload; returns ``(rows,
    mechanisms, too_large)``.

    A candidate is started only if ``predicted_seconds`` (its predicted time to build and
    score, or a function of its name that returns it) from now ends before ``deadline``;
    with ``relative_costs`` (name -> (reference,
    factor)), a candidate whose reference was scored first is predicted to take ``factor``
    times the reference's seconds. ``first_always``: the first candidate is scored whatever
    the deadline (the caller then knows what the cheapest costs).

    ``rows`` maps every name to a dict (``worst_case``, ``average_case``, ``report_bytes``,
    ``lower_bound``, ``seconds``, ``status`` "scored" or "skipped", ``reason``);
    ``mechanisms`` the scored ones; ``too_large`` those left out by ``max_report_bytes``
    (name -> mechanism, or -> bytes a user when not built). A candidate of a kind in
    ``BOUND_FIRST_KINDS`` whose :func:`lower_bound` (from ``gram_eigenpairs()``, which
    returns the eigenpairs or None) exceeds the best worst case scored so far is skipped
    without its exact error. ``label`` (the strategy asked for) prefixes the log messages.
    """
    rows, mechanisms, too_large = {}, {}, {}
    best = (None, np.inf)  # name and worst case of the best candidate scored so far
    for index, (name, build) in enumerate(candidates):
        reason = _skip_reason(name, n, dense_limit, duplicates)
        predicted = predicted_seconds(name) if callable(predicted_seconds) else \
            predicted_seconds
        reference, factor = (relative_costs or {}).get(name, (None, 0.0))
        if reference in rows and rows[reference]["status"] == "scored":
            predicted = factor * rows[reference]["seconds"]  # measured in this call
        if (reason is None and not (first_always and index == 0)
                and time.perf_counter() + predicted > deadline):
            reason = ("selection time budget used up" if not predicted else
                      f"predicted {predicted:.1f} s to build and score: past the "
                      f"time budget")
        size = np.nan
        if reason is None:
            size, reason = _size_before_building(name, n, max_report_bytes)
            if reason is not None:
                too_large[name] = size
        if reason is not None:
            rows[name] = _skipped_row(reason, size=size)
            logger.info("%s: skipped %s (%s)", label, name, reason)
            continue
        start = time.perf_counter()
        mechanism, row, oversized = _assess(build, gram, max_report_bytes, best,
                                            gram_eigenpairs)
        rows[name] = dict(row, seconds=time.perf_counter() - start)
        if row["status"] == "skipped":
            if oversized:
                too_large[name] = mechanism
            logger.info("%s: skipped %s (%s)", label, name, row["reason"])
            continue
        mechanisms[name] = mechanism
        if row["worst_case"] < best[1]:
            best = (name, row["worst_case"])
        logger.info("%s: scored %s: worst-case per-user variance %.6g, %d bytes a user "
                    "(%.2f s)", label, name, row["worst_case"], row["report_bytes"],
                    rows[name]["seconds"])
    return rows, mechanisms, too_large


def _check_budget_scored_one(start, deadline, max_seconds, cheapest, finished):
    """The ValueError of ``"optimized"`` when its budget ran out before even its cheapest
    candidate (scored whatever the budget) was, at ``finished``: it names the smallest
    ``max_seconds`` that would have scored it, as measured (set-up included)."""
    if finished <= deadline:
        return
    needed = float(f"{1.05 * (finished - start):.2g}")  # rounded up past the measured time
    raise ValueError(f"max_seconds={max_seconds!r} is too short for strategy='optimized' to "
                     f"score even its cheapest candidate ({cheapest!r}): that took "
                     f"{finished - start:.3g} s with the set-up; pass max_seconds={needed:g} "
                     f"or more.")


def _assess(build, gram, max_report_bytes, best, gram_eigenpairs):
    """Build one candidate and score it unless its size or its lower bound rules it out.

    ``best``: ``(name, worst case)`` of the best candidate so far. Returns ``(mechanism,
    row, oversized)``: ``oversized`` when ``max_report_bytes`` left it out.
    """
    try:
        mechanism = build()
        size, reason = _check_size(mechanism, max_report_bytes)
        if reason is not None:
            return mechanism, _skipped_row(reason, size=size), True
        bound = np.nan
        if (np.isfinite(best[1]) and gram_eigenpairs is not None
                and mechanism.kind in BOUND_FIRST_KINDS and gram_eigenpairs() is not None):
            try:
                bound = lower_bound(mechanism, gram_eigenpairs())
            except (ValueError, MemoryError):
                bound = np.nan  # no bound: the exact error decides
            if bound > best[1] * (1.0 + BOUND_RTOL):
                return None, _skipped_row(
                    f"lower bound {bound:.6g} on its worst case already above {best[0]!r}'s "
                    f"{best[1]:.6g}", size=size, bound=bound), False
        worst, average = variances(mechanism, gram)
    except (ValueError, NotImplementedError, MemoryError) as exc:
        return None, _skipped_row(f"{type(exc).__name__}: {exc}"), False
    return mechanism, _scored_row(worst, average, size, 0.0, "" if np.isfinite(worst) else
                                  "cannot answer the workload without bias", bound), False


def _no_candidate_fits(too_large, gram, max_report_bytes):
    """The ValueError when ``max_report_bytes`` leaves no candidate that answers the workload:
    it names the smallest report size that does."""
    # SPL, SMP, RS+FD and the marginal strategies are candidates only for the marginals,
    # which they answer; the unary encodings and subset selection (not built) answer every
    # workload.
    sizes = sorted((mechanism, name) if isinstance(mechanism, numbers.Integral) else
                   (report_bytes(mechanism), name) for name, mechanism in too_large.items()
                   if isinstance(mechanism, (numbers.Integral, MultiAttributeMechanism,
                                             MarginalMechanism))
                   or mechanism.supports_gram(gram))
    if not sizes:
        return None
    size, name = sizes[0]
    return ValueError(f"max_report_bytes={max_report_bytes} leaves no candidate strategy that "
                      f"answers this workload; the smallest reports that do take {size} "
                      f"bytes a user ({name!r}): pass max_report_bytes={size} or more.")


def _choose(rows):
    """The chosen candidate: least worst case, a tie (``TIE_RTOL``) going to a closed form."""
    scored = {key: row["worst_case"] for key, row in rows.items() if row["status"] == "scored"}
    finite = {key: value for key, value in scored.items() if np.isfinite(value)}
    if not finite:
        raise ValueError(f"no candidate strategy can answer this workload: "
                         f"{ {key: row['reason'] for key, row in rows.items()} }")
    closed = {key: value for key, value in finite.items() if key != "optimized"}
    best = min(closed, key=closed.get) if closed else "optimized"
    if "optimized" in finite and closed and (
            finite["optimized"] < closed[best] * (1.0 - TIE_RTOL)):
        best = "optimized"
    return best, scored


def check_optimized_size(n, n_outputs=None):
    """Refuse ``"optimized"`` at once past ``OPTIMIZED_MAX_CELLS`` cells, naming what scales."""
    if n > OPTIMIZED_MAX_CELLS:
        raise ValueError(
            f"strategy='optimized' optimizes a dense {4 * n if n_outputs is None else n_outputs}"
            f" x {n} strategy matrix (O(m n^2) per iteration) and runs up to "
            f"{OPTIMIZED_MAX_CELLS} cells; this domain has {n}. Use a structured strategy: "
            f"{SCALABLE_ADVICE}.")


def build_mechanism(
    name,
    shape,
    epsilon,
    workload=None,
    branching=4,
    max_order=None,
    n_outputs=None,
    init="best",
    max_iter=500,
    tol=1e-6,
    random_state=None,
    verbose=0,
    delta=None,
    oracle="auto",
    max_seconds=None,
    workload_matrix=None,
    multi_attribute=False,
    max_report_bytes=DEFAULT_MAX_REPORT_BYTES,
):
    """Build the named strategy for a domain of the given shape and an optional workload.

    Parameters
    ----------
    workload : Workload, array or None
        The queries (default the histogram); ``workload_matrix`` is its former name.
    init : {"best", "random", "baseline"} or array
        Start of the optimizer: a random feasible strategy, the best closed form whose
        strategy matrix can start it (full rank, at most ``MAX_START_OUTPUTS_PER_CELL``
        outputs per cell), both ("best": the run with the lesser worst case is kept), or a
        strategy matrix. Whatever the start, ``"optimized"`` returns the optimizer's strategy
        only if it beats every closed form.
    max_seconds : float or None
        Time budget of ``"optimized"`` (None: ``DEFAULT_MAX_SECONDS``, 30 s; what
        ``"auto"`` scores is scored first, whatever the budget, the dense closed forms past
        ``AUTO_DENSE_MAX_CELLS`` cells while it lasts; the optimizer gets what is left,
        starts no step that would end past it and returns its best iterate when it runs
        out: ``report["stopped_by_budget"]``; with no time left it does not start) and of
        ``"auto"`` (candidates not scored by then are skipped, and the optimizer gets what
        is left).
    verbose : int
        Progress of the optimizer and of the selection through :mod:`logging` (logger
        ``"sklearn_ldp"``): > 0 sets it to INFO level if it has no level yet.
    multi_attribute : bool, default=False
        ``"auto"`` only: when the workload is the one-way marginals of every column (two or
        more), also score SPL, SMP and RS+FD with each of their oracles (named
        ``"protocol/oracle"``, :mod:`sklearn_ldp.selection.multi_attribute`) by the same
        worst-case per-user variance; the joint-domain candidates are then scored up to
        ``ONE_WAY_JOINT_MAX_CELLS`` cells. A protocol that wins is returned as a
        :class:`~sklearn_ldp.mechanisms.multi_attribute.mechanisms.MultiAttributeMechanism`
        (``report["protocol"]``:
        its ``(protocol, oracle)``), which answers per-attribute histograms, not the workload
        matrix: a caller that asks for it must decode it as such. Whatever this flag, on a
        workload of marginals of two or more columns (:func:`~sklearn_ldp.selection.
        marginal_workloads.marginal_sets`) ``"auto"`` and ``"optimized"`` also score the
        marginal strategies (:mod:`sklearn_ldp.selection.marginal_workloads`) and the
        joint-domain candidates up to ``ONE_WAY_JOINT_MAX_CELLS`` cells; a marginal strategy
        that wins is returned as a
        :class:`~sklearn_ldp.mechanisms.marginals.base.MarginalMechanism`, decoded by
        ``MarginalEstimator`` into the marginal tables.
    max_report_bytes : int or None, default=DEFAULT_MAX_REPORT_BYTES
        ``"auto"`` and ``"optimized"`` only: the candidates whose reports take more bytes a
        user (:func:`~sklearn_ldp.selection.baselines.report_bytes`) are left out (listed
        as skipped); None: no limit. The default, 1024, keeps one report within one network
        packet. A strategy asked for by name is built whatever its size. Raises a
        ValueError naming the smallest size that would do when no candidate fits.

    Returns
    -------
    mechanism : Mechanism
        For ``"optimized"``: the optimizer's strategy, or the closed form that is at least as
        good on the worst case (``report["fallback"]`` names it).
    report : dict
        ``candidates`` (strategy name -> worst-case per-user variance of every scored
        candidate, ``inf`` if it cannot answer the workload), ``selection`` (one dict per
        candidate considered: ``worst_case``, ``average_case``, ``report_bytes`` (bytes a
        user, NaN if not built), ``lower_bound`` (:func:`lower_bound` on the worst case, NaN
        if not computed), ``seconds``, ``status`` in {"scored", "skipped", "chosen"} and a
        ``reason``: why it was skipped, or for ``"optimized"`` the comparison), ``chosen``
        (the name of the candidate returned), ``report_bytes`` (its bytes a user),
        ``expected_error``; when the optimizer ran: ``n_iter``, ``history``, ``converged``,
        ``stopped_by_budget``, ``optimizer`` (``worst_case``, ``average_case`` and ``start``
        of the optimizer's strategy, ``runs``: the worst case of each start) and, for
        ``"optimized"``, ``fallback`` (the closed form returned instead of the optimizer's
        strategy, or None).
    """
    check_strategy_name(name)
    max_report_bytes = check_max_report_bytes(max_report_bytes)
    shape = tuple(int(size) for size in shape)
    if name in MARGINAL_STRATEGIES:  # no workload: every marginal up to max_order
        mechanism = build_marginal_mechanism(name, shape, epsilon, marginal_order(shape,
                                                                                  max_order))
        return mechanism, {"candidates": {}, "selection": {}}
    n = int(np.prod(shape))
    workload = coerce_workload(workload, workload_matrix)
    if workload is None:
        workload = histogram(n)
    workload.check_width(n)
    gram = workload.gram()
    start = time.perf_counter()
    if max_seconds is None and name == "optimized":
        max_seconds = DEFAULT_MAX_SECONDS
    deadline = np.inf if max_seconds is None else start + float(max_seconds)
    get_logger("selection", verbose)

    def baseline(strategy):
        return baseline_mechanism(strategy, shape, epsilon, workload, branching, max_order,
                                  oracle)

    if name in BASELINES or name in HISTOGRAM_ENCODINGS or name in WORKLOAD_RANDOMIZERS:
        if name in BASELINES or name in HISTOGRAM_ENCODINGS:
            mechanism = baseline(name)
        else:
            mechanism = workload_randomizer(name, n, epsilon, workload, delta)
        worst, average = variances(mechanism, gram)
        size = report_bytes(mechanism)
        row = dict(_scored_row(worst, average, size, time.perf_counter() - start),
                   status="chosen")
        return mechanism, {"candidates": {name: worst}, "selection": {name: row},
                           "chosen": name, "expected_error": _expected_error(row),
                           "report_bytes": size}

    if isinstance(init, str) and init not in ("random", "baseline", "best"):
        raise ValueError(
            f"init must be 'random', 'baseline', 'best' or a strategy matrix, got {init!r}."
        )
    if name == "optimized":
        check_optimized_size(n, n_outputs)
    # "optimized" scores every closed form, whatever its size or the time budget: that
    # comparison is its guarantee. "auto" scores the dense ones up to AUTO_DENSE_MAX_CELLS
    # cells, and none after its deadline.
    dense_limit = None if name == "optimized" else AUTO_DENSE_MAX_CELLS
    order = max_order
    sets = (marginal_sets(workload, shape) if name in ("auto", "optimized") and len(shape) >= 2
            and min(shape) >= 2 else None)
    if order is None and sets is not None:
        order = max(len(attributes) for attributes, _ in sets)  # no pass over the Gram
    if order is None and len(shape) >= 2 and (dense_limit is None or n <= dense_limit):
        try:  # found once for fourier and the marginal matrices
            order = least_marginal_order(shape, epsilon, workload)
        except ValueError:
            order = None  # each candidate then reports its own error

    def closed_form(strategy):
        return baseline_mechanism(strategy, shape, epsilon, workload, branching, order,
                                  oracle)

    # The protocols need two categories per column (a constant column: joint candidates only).
    one_way = (name == "auto" and multi_attribute and len(shape) >= 2 and min(shape) >= 2
               and is_one_way_marginals(workload, shape))
    # Marginals of two or more columns: the marginal strategies are candidates too, scored
    # in closed form at any size (selection.marginal_workloads).
    if sets is not None and max(len(attributes) for attributes, _ in sets) < 2:
        sets = None  # one-way marginals: SPL, SMP and RS+FD (the same randomizers) answer
    joint = not (one_way or sets is not None) or n <= ONE_WAY_JOINT_MAX_CELLS
    # Small dense products: one BLAS thread (see optimize.ldp_factorization; measured 8x
    # faster scoring of the closed forms at n = 256 on the loaded 2-core machine).
    with limit_blas_threads(n):
        if joint:
            # Both score the closed forms cheapest first while the budget lasts ("auto"
            # has none unless asked): "optimized" the same candidates as "auto" in the same
            # order (so it is never worse than auto's pick when that was scored in the
            # budget), every one exactly (no lower-bound skips), the costly ones only when
            # their predicted time fits (past AUTO_DENSE_MAX_CELLS cells: QUADRATIC_UNITS and
            # the dense units below; at any size RELATIVE_COSTS once hierarchical is scored).
            always = dense_until = deadline
            # Past AUTO_DENSE_MAX_CELLS cells, the dense steps of "optimized" (seconds each
            # at 1,000 cells) start only when their predicted time fits in its budget.
            unit = (cubic_seconds(n) if name == "optimized" and n > AUTO_DENSE_MAX_CELLS
                    and np.isfinite(deadline) else 0.0)
            eigenpairs = None if name == "optimized" else functools.cache(
                lambda: workload_eigenpairs(gram))
            candidates = candidate_list(closed_form)
            rows, mechanisms, oversized = {}, {}, {}
            scoring_began = time.perf_counter()
            for dense, until in ((False, always), (True, dense_until)):
                part = [pair for pair in candidates
                        if (pair[0] in FACTORIZATION_BASELINES) == dense]
                part_rows, part_mechanisms, part_oversized = _score_candidates(
                    part, gram, n, until, name, dense_limit,
                    _marginal_duplicates(shape, order), max_report_bytes, eigenpairs,
                    DENSE_CANDIDATE_UNITS * unit if dense else
                    (lambda candidate, unit=unit: QUADRATIC_UNITS.get(candidate, 0.0) * unit / n),
                    RELATIVE_COSTS if name == "optimized" else None,
                    first_always=not dense)
                rows.update(part_rows)
                mechanisms.update(part_mechanisms)
                oversized.update(part_oversized)
                if unit and part_rows.get("hierarchical", {}).get("status") == "scored":
                    # The load over seconds of this call, not over the unit's milliseconds
                    # (a quiet moment once predicted 2 s for a dense step of 19 s).
                    unit = max(unit, part_rows["hierarchical"]["seconds"] * n
                               / HIERARCHICAL_QUADRATIC_UNITS)
        else:
            too_large = (f"joint domain of {n} cells: scored for marginals up to "
                         f"{ONE_WAY_JOINT_MAX_CELLS} cells (" + (
                             "SPL, SMP, RS+FD" if one_way else "the marginal strategies")
                         + " answer them)")
            rows, mechanisms, oversized = {key: _skipped_row(too_large)
                                           for key in BASELINES}, {}, {}
        if joint and name == "optimized":
            cheapest = candidates[0][0]
            _check_budget_scored_one(start, deadline, max_seconds, cheapest,
                                     scoring_began + rows[cheapest]["seconds"])
        run_optimizer = joint and (name == "optimized" or n <= AUTO_OPTIMIZE_MAX_CELLS)
        report = {}
        if run_optimizer:
            # Its first iteration (start included) and building its strategy as a mechanism
            # must fit, else it would only return its start, a closed form scored above.
            outputs = 4 * n if n_outputs is None or not isinstance(init, str) else n_outputs
            evaluation = unit * max(outputs / (4.0 * n), 1.0)
            first_step = (OPTIMIZER_SETUP_UNITS * unit
                          + OPTIMIZER_EVALUATIONS_PER_ITERATION * evaluation)
            build_time = OPTIMIZED_BUILD_UNITS * evaluation
        if run_optimizer and time.perf_counter() + first_step + build_time >= deadline:
            report = {"n_iter": 0, "history": [], "converged": False, "stopped_by_budget": True,
                      "optimizer": {"start": None, "runs": {}}}
            rows["optimized"] = _skipped_row(
                "time budget used up before the optimizer's first step" if not unit else
                f"its first step and building its strategy predicted to take "
                f"{first_step + build_time:.1f} s: past the time budget")
        elif run_optimizer:
            optimizer_start = time.perf_counter()
            result, report = _optimize(gram, epsilon, n_outputs, init, rows, mechanisms,
                                       max_iter, tol, random_state, deadline - build_time,
                                       verbose)
            # The optimizer's own worst case of the strategy it returns (with the optimal
            # decoder, as every candidate is scored): re-scoring it took seconds at 1,000 cells.
            worst, average = result.worst_case, result.average_case
            report["optimizer"].update(worst_case=worst, average_case=average)
            closed = [row["worst_case"] for row in rows.values()
                      if row["status"] == "scored" and np.isfinite(row["worst_case"])]
            started = f"optimizer started from {report['optimizer']['start']}"
            if closed and worst >= min(closed) * (1.0 - TIE_RTOL):
                # A closed form is returned (_choose): its matrix need not be built.
                rows["optimized"] = _scored_row(worst, average, np.nan,
                                                time.perf_counter() - optimizer_start,
                                                f"{started} (not built: a closed form is at "
                                                f"least as good)")
            else:
                optimized = FactorizationMechanism(result.Q, epsilon, "optimized")
                size, reason = _check_size(optimized, max_report_bytes)
                seconds = time.perf_counter() - optimizer_start
                if reason is None:
                    rows["optimized"] = _scored_row(worst, average, size, seconds, started)
                    mechanisms["optimized"] = optimized
                else:
                    rows["optimized"] = _skipped_row(reason, seconds, size)
                    oversized["optimized"] = optimized
        elif not joint:
            rows["optimized"] = _skipped_row(too_large)
        else:
            rows["optimized"] = _skipped_row(
                f"the optimizer runs in 'auto' up to {AUTO_OPTIMIZE_MAX_CELLS} cells; ask for "
                f"strategy='optimized' explicitly (up to {OPTIMIZED_MAX_CELLS} cells)")
    if one_way:
        # SPL, SMP, RS+FD: the same worst-case per-user variance of the workload (added after
        # the optimizer, which starts from joint-domain strategy matrices only).
        _, protocol_rows, protocol_mechanisms = select_attribute_protocol(shape, epsilon)
        for key, row in protocol_rows.items():
            size, reason = _check_size(protocol_mechanisms[key], max_report_bytes)
            if reason is None:
                rows[key] = _scored_row(row["worst_case"], row["average_case"], size,
                                        row["seconds"], row["reason"])
                mechanisms[key] = protocol_mechanisms[key]
            else:
                rows[key] = _skipped_row(reason, row["seconds"], size)
                oversized[key] = protocol_mechanisms[key]
    if sets is not None:
        # After the optimizer, which starts from joint-domain strategy matrices only.
        marginal_rows, marginal_mechanisms, marginal_oversized = score_marginal_strategies(
            shape, epsilon, sets, report_bytes, max_report_bytes)
        rows.update(marginal_rows)
        mechanisms.update(marginal_mechanisms)
        oversized.update(marginal_oversized)
    if not any(row["status"] == "scored" and np.isfinite(row["worst_case"])
               for row in rows.values()):
        error = _no_candidate_fits(oversized, gram, max_report_bytes)
        if error is not None:
            raise error
    best, scored = _choose(rows)
    rows[best]["status"] = "chosen"
    if name == "optimized":
        report["fallback"] = None if best == "optimized" else best
        if best != "optimized":
            # The guarantee at work: say so in the table the encoder keeps (selection_).
            rows[best]["reason"] = (
                f"returned by 'optimized': worst case {rows[best]['worst_case']:.6g}, not "
                f"above the optimizer's {rows['optimized']['worst_case']:.6g}")
            if rows["optimized"]["status"] == "scored":
                rows["optimized"]["reason"] += f"; not returned: {best!r} is at least as good"
            logger.info("optimized: the closed form %s (worst-case per-user variance %.6g) "
                        "is at least as good as the optimizer's strategy (%.6g): returned "
                        "instead", best, scored[best], rows["optimized"]["worst_case"])
    logger.info("%s: chose %s (worst-case per-user variance %.6g) in %.2f s", name, best,
                scored[best], time.perf_counter() - start)
    report["candidates"] = scored
    report["selection"] = rows
    report["chosen"] = best
    report["expected_error"] = _expected_error(rows[best])
    report["report_bytes"] = rows[best]["report_bytes"]
    if isinstance(mechanisms[best], MultiAttributeMechanism):
        report["protocol"] = (mechanisms[best].protocol, mechanisms[best].oracle)
    return mechanisms[best], report


def _best_seed(rows, mechanisms):
    """``(name, Q)`` of the best scored closed form whose matrix can start the optimizer."""
    ranked = sorted((row["worst_case"], key) for key, row in rows.items()
                    if key in mechanisms and np.isfinite(row["worst_case"]))
    for _, key in ranked:
        Q = start_matrix(mechanisms[key])
        if Q is not None:
            return key, Q
    return None


def _optimize(gram, epsilon, n_outputs, init, rows, mechanisms, max_iter, tol, random_state,
              deadline, verbose):
    """Run the LDP factorization optimizer from each start; the best run by worst case.

    Returns the best run's :class:`~sklearn_ldp.optimize.ldp_factorization.OptimizationResult`
    and the report entries of the runs (``optimizer``: ``start`` of the kept run and ``runs``,
    the worst case of every start).
    """
    if not isinstance(init, str):
        starts = [("the given matrix", init)]
    else:
        starts = [("random", "random")] if init in ("random", "best") else []
        if init in ("baseline", "best"):
            seed = _best_seed(rows, mechanisms)
            if seed is not None:
                starts.append(seed)
        if not starts:
            starts = [("random", "random")]  # "baseline" with no closed form that can start
    dense_gram = np.asarray(gram.toarray())
    runs = []
    for index, (label, start) in enumerate(starts):
        # Split what is left of the budget between the starts still to run.
        remaining = None if not np.isfinite(deadline) else max(
            deadline - time.perf_counter(), 0.0) / (len(starts) - index)
        result = optimize_strategy(dense_gram, epsilon, n_outputs=n_outputs, init=start,
                                   max_iter=max_iter, tol=tol, max_seconds=remaining,
                                   random_state=random_state, verbose=verbose)
        logger.info("optimizer from %s: worst-case per-user variance %.6g after %d "
                    "iterations", label, result.worst_case, result.n_iter)
        runs.append((label, result))
    # Several starts: keep the run with the least worst-case variance. A run started from a
    # closed form's matrix is never worse than that matrix with the optimal reconstruction
    # (the start is a kept iterate).
    label, result = min(runs, key=lambda run: run[1].worst_case)
    return result, {"n_iter": result.n_iter, "history": result.history,
                       "converged": result.converged,
                       "stopped_by_budget": not result.converged and result.n_iter < max_iter,
                       "optimizer": {"start": label,
                                     "runs": {run_label: run.worst_case
                                              for run_label, run in runs}}}
