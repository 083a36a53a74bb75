"""The Hadamard response in the layout of blocks with the least error on a workload.

:func:`~.hadamard.hadamard_layout` chooses the layout ``(n_blocks, block_size, hole)`` for the
histogram (the least mean cell variance). On other workloads the best layout differs, and by
much: with the optimal decoder, the worst-case per-user variance of the best layout on the
workload against the histogram's layout (``python benchmarks/bench_optimizer.py
--hadamard-layouts``):

    workload        n     eps   best layout      worst case   histogram's layout
    prefix          64    4     (11, 8, 2)       23.1         (22, 4, 1): 34.2
    all ranges      64    4     (16, 8, 4)       832          (22, 4, 1): 904
    prefix          256   1     (8, 64, 32)      22,303       (1, 512, 1): 74,056

Smaller blocks than the histogram's, cut into equal loads by their holes, suit range
workloads: a range sums whole blocks, whose favoured halves then cancel in the decoder.

:func:`workload_hadamard` scores the histogram's layout, then every layout of
:func:`~.hadamard._candidate_layouts` (every block size and hole without empty blocks; those
with a large partial block left out) by its exact worst-case per-user variance on the
workload's Gram, through the structured variances of :class:`~.hadamard.HadamardResponse`
(a Gram without Walsh diagonals, such as the Kronecker Gram of marginals, is made dense
once, up to ``DENSE_GRAM_CELLS`` cells), cheapest layouts first (within an optional
deadline), and keeps the best: never worse than the histogram's layout. The selection layer builds
its ``"hadamard"`` candidate this way, so ``"auto"`` and ``"optimized"`` compare the
workload's layout, and the optimizer can start from it.

Each layout is the same exactly epsilon-private construction (two integer weights,
:func:`~.._base.ratio.ratio_weights`); :func:`block_law_violation` re-checks it from the
integer laws of every cell.

Pure numpy; no scikit-learn here.
"""

import time

import numpy as np

from ..._gram import DenseGram, Gram, IdentityGram, KronGram, ScaledGram
from ..._validation import check_epsilon, check_positive_int
from .._base.exact import integer_ratio_at_most
from .._base.tables import table_ratio_violation
from ._hadamard_blocks import walsh_block_diagonals
from .hadamard import HadamardResponse, _candidate_layouts, _partial_entries, hadamard_layout
from .hadamard_layout import cells_and_budget
from .hadamard_variance import DENSE_GRAM_CELLS

# Layouts whose partial block needs a dense part of more entries than this are scored only
# when no other layout exists (one such part costs seconds: 3 s for one block of 2048
# outputs over 1,260 cells, where the other layouts take 0.5 s).
LARGE_PARTIAL_ENTRIES = 2**18
# Workloads over at most this many cells get their own layout (the histogram's beyond):
# scoring every layout took 0.3 s at 64 cells and 0.7 s at 256 (prefix), but 3.6 s at 2048
# and 20 s for the marginals of 1,260 cells on the loaded 2-core machine, and "auto" scores
# its "hadamard" candidate this way too. No clock decides which layouts are scored, so the
# layout chosen for a workload is the same on every machine.
WORKLOAD_LAYOUT_MAX_CELLS = 256
# Cells up to which block_law_violation builds the n x K table of integer weights.
LAW_CHECK_MAX_CELLS = 4096


def _as_scorable_gram(gram, n):
    """The Gram as the variances can use it at once: made dense (once, not per layout) when
    its structure has no Walsh diagonals and the domain is small enough."""
    if not isinstance(gram, Gram):
        return DenseGram(np.asarray(gram, dtype=float))
    if n <= DENSE_GRAM_CELLS and walsh_block_diagonals(gram, 1, 1) is None:
        return DenseGram(gram.toarray())
    return gram


def _is_histogram(gram):
    """Whether the Gram is a multiple of the identity (the histogram's layout is then best on
    average, and every cell alike)."""
    if isinstance(gram, IdentityGram):
        return True
    if isinstance(gram, ScaledGram):
        return _is_histogram(gram.gram)
    return isinstance(gram, KronGram) and all(_is_histogram(factor) for factor in gram.factors)


@cells_and_budget
def score_layouts(n, epsilon, gram, deadline=None, first=None):
    """Every Hadamard response layout scored on a workload, best first.

    <cells and budget>
    gram : Gram or array of shape (n, n)
        ``W^T W`` of the workload.
    deadline : float, optional
        ``time.perf_counter()`` value after which no further layout is scored (at least one
        always is).
    first : tuple of int, optional
        A layout scored before the others (whatever the deadline).

    Returns
    -------
    list of tuple
        ``(worst_case, average_case, layout)`` per scored layout, by increasing worst-case
        per-user variance with the optimal decoder.

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> best = score_layouts(64, 4.0, workloads.prefix(64).gram())[0]
    >>> round(best[0], 2), best[2]
    (23.12, (11, 8, 2))
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    gram = _as_scorable_gram(gram, n)
    layouts = _candidate_layouts(n)
    small = [layout for layout in layouts if _partial_entries(n, layout) <= LARGE_PARTIAL_ENTRIES]
    # Cheapest first (fewest outputs, then smallest partial block): within a deadline, the
    # most layouts get scored.
    ordered = sorted(small or layouts,
                     key=lambda layout: (layout[0] * layout[1], _partial_entries(n, layout)))
    if first is not None:
        ordered = [first] + [layout for layout in ordered if layout != first]
    scored = []
    for layout in ordered:
        if scored and deadline is not None and time.perf_counter() > deadline:
            break
        variances = HadamardResponse(n, epsilon, layout=layout).per_user_variance(gram)
        scored.append((float(variances.max()), float(variances.mean()), layout))
    return sorted(scored, key=lambda entry: (entry[0], entry[2]))


@cells_and_budget
def workload_hadamard(n, epsilon, gram=None, max_seconds=None):
    """The Hadamard response in the layout with the least worst-case error on a workload.

    <cells and budget>
    gram : Gram, array of shape (n, n) or None
        ``W^T W`` of the workload. None, the histogram, or more than
        ``WORKLOAD_LAYOUT_MAX_CELLS`` cells: the histogram's layout
        (:func:`~.hadamard.hadamard_layout`), which is otherwise scored first.
    max_seconds : float or None, default=None
        No further layout is scored after this (:func:`score_layouts`); None: every layout
        (the same choice on every machine).

    Returns
    -------
    HadamardResponse
        In the best layout scored (``mechanism.layout``); exactly epsilon-LDP, decoded by the
        optimal linear decoder; its specification records the layout.

    See Also
    --------
    sklearn_ldp.mechanisms.oracles.hadamard.hadamard_layout : The layout for the histogram.

    References
    ----------
    .. [1] J. Acharya, Z. Sun and H. Zhang, "Hadamard response: Estimating distributions
       privately, efficiently, and with little communication", AISTATS 2019.
    .. [2] McKenna, Maity, Mazumdar and Miklau, PVLDB 13(11), 2020: the optimal decoder and
       the worst-case error that ranks the layouts.

    Examples
    --------
    >>> from sklearn_ldp import workloads
    >>> workload_hadamard(64, 4.0, workloads.all_range(64).gram()).layout   # equal blocks
    (16, 8, 4)
    >>> workload_hadamard(64, 4.0).layout                                   # the histogram's
    (22, 4, 1)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    if gram is None or _is_histogram(gram) or n > WORKLOAD_LAYOUT_MAX_CELLS:
        return HadamardResponse(n, epsilon)
    deadline = None if max_seconds is None else time.perf_counter() + max_seconds
    best = score_layouts(n, epsilon, gram, deadline, first=hadamard_layout(n, epsilon))[0]
    return HadamardResponse(n, epsilon, layout=best[2])


def block_law_violation(mechanism):
    """The exact privacy check of a Hadamard response layout from its integer laws.

    Builds the integer weights of every cell's law (:meth:`HadamardResponse.exact_law`, one
    column per cell) and checks that every cell's weights have the same total and that no
    output's largest weight exceeds ``e^eps`` times its smallest, decided on integers.

    Parameters
    ----------
    mechanism : HadamardResponse
        At most ``LAW_CHECK_MAX_CELLS`` cells.

    Returns
    -------
    None or str
        None when the laws are exactly epsilon-LDP, else what fails.

    Examples
    --------
    >>> block_law_violation(HadamardResponse(64, 4.0, layout=(16, 8, 4))) is None
    True
    """
    n = mechanism.n_inputs
    if n > LAW_CHECK_MAX_CELLS:
        raise ValueError(f"block_law_violation builds an n x K table: at most "
                         f"{LAW_CHECK_MAX_CELLS} cells, got {n}.")
    laws = [mechanism.exact_law(value) for value in range(n)]
    totals = {int(law.total) for law in laws}
    if len(totals) != 1:
        return f"the cells' laws have different totals: {sorted(totals)[:4]}"
    table = np.array([law.weights for law in laws], dtype=np.int64).T  # (K, n)
    violation = table_ratio_violation(table, mechanism.epsilon)
    if violation is not None:
        row, high_cell, low_cell, high, low = violation
        return (f"output {row}: weight {high} for cell {high_cell} against {low} for cell "
                f"{low_cell}, a ratio above e^{mechanism.epsilon}")
    a, d = mechanism.weights
    if not integer_ratio_at_most(a, d, mechanism.epsilon):
        return f"the weights {a} / {d} exceed e^{mechanism.epsilon}"
    return None
