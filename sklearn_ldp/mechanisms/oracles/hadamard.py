"""Hadamard response (Acharya, Sun, Zhang, AISTATS 2019) in its best layout, optimal decoder.

The mechanism (:class:`HadamardResponse`) and the choice of its layout
(:func:`hadamard_layout`). The strategy and its layouts are described in
:mod:`.hadamard_layout`, the optimal decoder in :mod:`.hadamard_decoder`, its exact variances
in :mod:`.hadamard_variance`.

Why it was not the best (issue 17: MSE * N 7.18 at d = 1024, eps = 1, against 4.67 for HRR).
A cell of a block holding the fraction ``f`` of the users has, to first order, the variance
``(B + g)(1 + g f) / g^2`` per user (``g = (e^eps - 1) / 2``: the block's share of the
reports over the squared gap between favoured and other outputs); with ``B`` equally loaded
blocks that is ``(B + g)^2 / (B g^2)``, least at ``B = g``, and ``B = 1`` beats ``B = 2`` while
``g < sqrt(2)``, i.e. ``e^eps < 1 + 2 sqrt(2)`` (``eps < 1.34``). The paper's rule compares
``e^eps`` (not ``g``) with the powers of two, so it takes two blocks from ``eps > ln 2``; and
filling blocks of ``b - 1`` cells in order leaves the last one nearly empty when ``n`` is a
power of two (1024 cells: blocks of 1023 and 1 cells), which costs a whole block's share of
noise: 7.18 where one block of 2048 outputs gives 4.675. Exact average variances
(``tests/test_hadamard_structured.py::test_the_chosen_layout_has_the_least_mean_variance``):

    d = 1024             eps = 0.5    1      2      3      4      5
    paper's layout        16.65      7.18   1.82   0.602  0.209  0.069
    chosen layout         16.65      4.675  1.262  0.416  0.145  0.048

Choosing the layout (:func:`hadamard_layout`). Every layout without empty blocks (``b`` a
power of two up to one block holding every cell, every hole) is scored by its exact mean
cell variance, ``(tr((Q^T D^-1 Q)^-1) - n) / n^2``, in ``O(B + b' log b')`` from the blockwise
closed forms below (blocks of more than ``EXACT_SCORE_BLOCK`` outputs, hundreds of cells each,
by the model above, within 0.1% there), and the best is taken among the layouts whose partial
block is small enough for the exact variance of every structured workload, when the paper's
layout is one of those (no ``(n, eps)`` loses its structured variances: 5000 or 10^4 cells at
eps = 1 keep two blocks, 5.62 instead of one block's 4.68, and 2^20 - 1 cells at eps = 2 take
1.44 instead of 1.27, both better than the paper's 6.21 and 1.83); otherwise the best overall,
unless such a layout is at most ``COMPUTABLE_TOLERANCE`` (2%) worse (10^6 cells at eps = 1:
one block, whose variances come from the rows only, as the paper's layout's did). The holes are
what makes equal loads possible: ``n = 2^k`` cells fill ``2^j`` blocks of ``2^(k-j+1)`` outputs
at their upper halves exactly (2^20 cells: one block of 2^21 outputs at eps = 1, four of 2^19
at eps = 2; 1024 cells: four blocks of 512 at eps = 2), with no partial block, whose variances
would otherwise need a dense ``m x b'`` part. No regime needs the paper's layout (it is never
better than the chosen one, but by the 2% above); it is kept for the specifications written
before the layout was recorded: a specification without a layout means the paper's, so old
specifications, saved reports and clients decode as before.

Client side, ``O(1)`` per user. One exactly uniform integer ``U`` in ``[0, (b/2) a + (K - b/2)
d)`` (:func:`~._ratio.sample_ratio_law`) picks a favoured output (the ``(U // a)``-th), one of
the ``b / 2`` unfavoured outputs of its own block, or one of the ``K - b`` outputs of the other
blocks (the ``((U - (b/2) a) // d)``-th of these ``K - b/2``), which gives exactly column ``j``
of the strategy matrix. The ``t``-th output of the block with a prescribed parity
``popcount(y & c) mod 2`` is ``t`` with a 0 inserted at the lowest set bit ``l`` of ``c``,
then bit ``l`` set if the parity is wrong: a bijection from ``[0, b/2)`` onto each half.

Exact simulation. Each user, independently: with probability ``K / Z`` an output uniform over
all ``K`` (``1/Z`` per output), with probability ``b g / Z`` one uniform on the favoured half
of its own block (``2 / b`` each, ``1/Z + 2g/Z = e/Z`` in total): exactly its column of ``Q``.
The first part is one multinomial over ``K``; the second a binomial per cell and
:func:`~._hadamard_blocks.hyperplane_counts` per block, ``O(K log b)`` draws whatever the
number of users.
"""

import functools
import math

import numpy as np

from ..._fwht import hadamard_parity
from ..._gram import IdentityGram
from ..._validation import check_epsilon, check_positive_int
from .._base.exact import ExactLaw, check_law_size
from .._base.mechanism import (
    SPEC_VERSION,
    Mechanism,
    check_type_counts,
    check_type_indices,
    register,
    report_dtype,
)
from .._base.ratio import ratio_law_weights, ratio_weights, sample_ratio_law
from ._hadamard_blocks import hyperplane_counts
from .hadamard_layout import (
    block_and_column,
    block_counts,
    cells_and_budget,
    check_layout,
    hadamard_strategy,
    paper_layout,
)
from .hadamard_variance import PARTIAL_BLOCK_ENTRIES, _HadamardVariance


def _candidate_layouts(n):
    """Every layout without empty blocks: block sizes ``b = 2, 4, ...`` up to one block
    holding all ``n`` cells, holes ``1, 2, ..., b / 2`` (a layout whose only block is partial
    is listed once, with hole 1)."""
    layouts = []
    block_size = 2
    while True:
        hole = 1
        while 2 * hole <= block_size:
            n_full, rest = block_counts(n, block_size, hole)
            if n_full or hole == 1:
                layouts.append((n_full + (rest > 0), block_size, hole))
            hole *= 2
        if block_size > n:
            return layouts
        block_size *= 2


# Layouts whose blocks have at most this many outputs are scored by their exact variance when
# a layout is chosen; larger blocks (hundreds of cells each) by the block model, within 0.1%
# of the exact value there and O(1) to evaluate.
EXACT_SCORE_BLOCK = 2**12
# A layout whose exact per-user variance is computable for every structured workload (no large
# partial block) is preferred to a more accurate one that is not, when at most this much worse
# -- and always when the paper's layout was computable, so that no (n, eps) loses its
# structured variances.
COMPUTABLE_TOLERANCE = 0.02


def _model_variance(n, epsilon, layout):
    """The block model of a layout's mean cell variance: a cell of a block that holds the
    fraction ``f`` of the cells (uniform types) has variance about ``(B + g)(1 + g f) / g^2``
    (the block's share of reports over the squared favoured gap), averaged over the cells."""
    n_blocks, block_size, hole = layout
    g = 0.5 * math.expm1(epsilon)
    n_full, rest = block_counts(n, block_size, hole)
    squares = (n_full * (block_size - hole) ** 2 + rest * rest) / (n * n)
    return (n_blocks + g) * (1 + g * squares) / (g * g)


def _partial_entries(n, layout):
    """Entries of the dense part of the exact variance (the partial block's ``m x b'``)."""
    _n_blocks, block_size, hole = layout
    rest = block_counts(n, block_size, hole)[1]
    return rest * (1 << rest.bit_length()) if rest else 0


@functools.lru_cache(maxsize=256)
def _chosen_layout(n, epsilon):
    scored = []
    for layout in _candidate_layouts(n):
        if layout[1] <= EXACT_SCORE_BLOCK:
            score = HadamardResponse(n, epsilon, layout=layout)._mean_cell_variance()
        else:
            score = _model_variance(n, epsilon, layout)
        computable = _partial_entries(n, layout) <= PARTIAL_BLOCK_ENTRIES
        # Ties go to the layout without a hole, then to fewer outputs.
        scored.append((score, layout[2], layout[0] * layout[1], computable, layout))
    best = min(scored)
    best_computable = min((entry for entry in scored if entry[3]), default=None)
    if best_computable is not None and (
            _partial_entries(n, paper_layout(n, epsilon)) <= PARTIAL_BLOCK_ENTRIES
            or best_computable[0] <= (1 + COMPUTABLE_TOLERANCE) * best[0]):
        return best_computable[-1]
    return best[-1]


@functools.lru_cache(maxsize=16)
def _histogram_variance(n, epsilon, layout):
    """Per-user variances of the histogram (unit Gram) for one layout (read-only)."""
    mechanism = HadamardResponse(n, epsilon, layout=layout)
    variances = super(HadamardResponse, mechanism).per_user_variance(IdentityGram(n))
    variances.flags.writeable = False
    return variances


@cells_and_budget
def hadamard_layout(n, epsilon):
    """The layout ``(n_blocks, block_size, hole)`` with the least average variance.

    Every layout without empty blocks is scored by the mean over the cells and the user
    types of a cell's per-user variance, ``(tr((Q^T D^-1 Q)^-1) - n) / n^2`` for the optimal
    decoder (exact for blocks of at most ``EXACT_SCORE_BLOCK`` outputs, else the block model,
    within 0.1% there), and the best is returned, among the layouts whose exact variance is
    computable for every structured workload (no large partial block) when the paper's
    layout is, else overall unless such a layout is at most ``COMPUTABLE_TOLERANCE`` worse.
    See the module docstring, "Choosing the layout".

    <cells and budget>

    Returns
    -------
    tuple of int
        ``(n_blocks, block_size, hole)``, for :class:`HadamardResponse` and
        :func:`~.hadamard_layout.hadamard_strategy`.

    See Also
    --------
    sklearn_ldp.mechanisms.oracles.hadamard_layout.hadamard_shape : The paper's layout, that
        of specifications without a layout.

    References
    ----------
    .. [1] J. Acharya, Z. Sun and H. Zhang, "Hadamard response: Estimating distributions
       privately, efficiently, and with little communication", AISTATS 2019.

    Examples
    --------
    >>> hadamard_layout(1024, 1.0)    # one block, as in the high-privacy regime
    (1, 2048, 1)
    >>> hadamard_layout(1024, 2.0)    # four blocks of 256 cells, in their upper halves
    (4, 512, 256)
    """
    n = check_positive_int(n, "n")
    return _chosen_layout(n, float(check_epsilon(epsilon)))


@register
class HadamardResponse(_HadamardVariance):
    """Hadamard response (Acharya, Sun and Zhang) with the optimal decoder, in the layout of
    blocks with the least error.

    The ``K`` outputs are cut into blocks of ``b`` (a power of two); the cells of a block are
    Hadamard columns of it, and a user reports an output of the favoured half of their block
    with ``e^eps`` times the probability of any other output (exactly epsilon-LDP). The
    layout, ``(n_blocks, block_size, hole)``, is by default the one with the least average
    variance (:func:`hadamard_layout`): one block while ``e^eps < 1 + 2 sqrt(2)``
    (``eps < 1.34``), as in the paper's high-privacy regime, else about ``(e^eps - 1) / 2``
    equally loaded blocks. ``randomize`` draws each user's output in ``O(1)`` from exactly their
    column of the strategy; the estimate is the optimal linear decoder ``V*`` of the
    strategy and every variance is exact, all computed from the block-Hadamard structure in
    ``O(K log b)`` without the dense strategy (see the module docstring). The specification
    is ``n``, ``eps`` and the layout.

    Parameters
    ----------
    n_inputs : int
        Domain size ``n`` (``2^20`` cells and more).
    epsilon : float
        The privacy budget, ``> 0``.
    layout : None, "paper" or tuple of int, default=None
        None: :func:`hadamard_layout` (the least average variance). ``"paper"``: the
        paper's general-regime layout (:func:`~.hadamard_layout.hadamard_shape`), which a
        specification without a layout means. Or ``(n_blocks, block_size, hole)`` (see
        :func:`~.hadamard_layout.check_layout`).

    Attributes
    ----------
    layout : tuple of int
        ``(n_blocks, block_size, hole)``.
    n_blocks, block_size, hole : int
        ``B``, ``b`` and the hole of the full blocks (their cells are at the Hadamard
        columns ``hole .. b - 1``); ``n_outputs = B b``.
    Q : ndarray of shape (n_outputs, n_inputs)
        The dense strategy matrix, built on access for small domains only (refused past the
        dense size guard); the mechanism itself never uses it.

    See Also
    --------
    HadamardRandomizedResponse : One Hadamard coefficient per report (the same accuracy as
        one block, closed forms at any size).
    sklearn_ldp.mechanisms.oracles.hadamard_layout.hadamard_strategy : The dense strategy of
        a layout.

    References
    ----------
    .. [1] J. Acharya, Z. Sun and H. Zhang, "Hadamard response: Estimating distributions
       privately, efficiently, and with little communication", AISTATS 2019.
    .. [2] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
       for linear queries under local differential privacy", PVLDB 13(11), 2020 (the
       optimal decoder of a strategy).

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = HadamardResponse(1024, 1.0)
    >>> mechanism.layout                      # one block of 2048 outputs
    (1, 2048, 1)
    >>> z = mechanism.per_user_variance(np.eye(1024))  # per user of each type, all cells
    >>> round(float(z.mean()) / 1024, 3)                 # MSE * N per cell, uniform types
    4.675
    >>> HadamardResponse(1024, 1.0, layout="paper").layout   # specifications without a layout
    (2, 1024, 1)
    >>> reports = mechanism.randomize(np.array([0, 3, 5, 5]), np.random.default_rng(0))
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (1024,)

    The exact law of one report (:meth:`exact_law`):

    >>> mechanism = HadamardResponse(3, 1.0)
    >>> law = mechanism.exact_law(0)
    >>> law.outputs.tolist(), sorted(set(law.weights)) == sorted(mechanism.weights)
    ([0, 1, 2, 3], True)
    """

    kind = "hadamard"

    def __init__(self, n_inputs, epsilon, layout=None):
        self.n_inputs = check_positive_int(n_inputs, "n_inputs")
        self.epsilon = check_epsilon(epsilon)
        self.name = "hadamard"
        paper = paper_layout(self.n_inputs, self.epsilon)
        if layout is None:
            layout = hadamard_layout(self.n_inputs, self.epsilon)
        elif isinstance(layout, str):
            if layout != "paper":
                raise ValueError(f"layout must be None, 'paper' or a triple (n_blocks, "
                                 f"block_size, hole); got {layout!r}.")
            layout = paper
        self.layout = check_layout(self.n_inputs, layout)
        self.n_blocks, self.block_size, self.hole = self.layout
        # A specification without a layout means the paper's (every specification written
        # before the layout was recorded): that one is kept implicit, so that those
        # specifications, their fingerprints and the clients that read them stay valid.
        self.params = {} if self.layout == paper else dict(
            zip(("n_blocks", "block_size", "hole"), self.layout, strict=True))
        self.n_outputs = self.n_blocks * self.block_size
        half = self.block_size // 2
        # Integer weights of a favoured output (a) and of any other (d): the exact privacy
        # check of the integers sampled runs in ratio_weights.
        self.weights = ratio_weights(self.epsilon, half, self.n_outputs - half, self.name)
        self._dense_strategy = None
        self._set_up_decoder()

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        # One exactly uniform integer per user draws exactly from column u of the strategy (module
        # docstring, "Client side"): O(1) each, no loop over users or outputs; output indices in the
        # smallest unsigned type that holds n_outputs.
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        b, n_outputs = self.block_size, self.n_outputs
        block, column = block_and_column(indices, b, self.hole, self._n_full)
        start = block * b  # first output of the user's block; column: never 0
        half = b // 2
        favoured, index = sample_ratio_law(rng, n_users, half, n_outputs - half,
                                           *self.weights)
        # The wanted parity of popcount(position & column): 0 (favoured, H = +1) or 1; the
        # index-th position of that parity (index < b / 2 inside the block).
        wanted = (~favoured).astype(np.uint8)
        low = column & -column  # the lowest set bit of the column
        position = ((index & -low) << 1) | (index & (low - 1))  # a 0 inserted at that bit
        wrong = hadamard_parity(position, column) != wanted
        position |= wrong * low
        reports = start + position
        if n_outputs > b:
            outside = index - half  # the others past the block's own b / 2
            outside += b * (outside >= start)  # skip the user's own block
            reports = np.where(favoured | (index < half), reports, outside)
        return reports.astype(report_dtype(n_outputs))

    def exact_law(self, value):
        # Weight a on the favoured half of the user's block, d on every other output, over Z = (b/2)
        # a + (K - b/2) d; outputs 0 .. K - 1 in the report dtype.
        value = int(check_type_indices([value], self.n_inputs)[0])
        check_law_size(self.n_outputs, self.name)
        b = self.block_size
        block, column = block_and_column(np.array([value]), b, self.hole, self._n_full)
        favoured = np.zeros(self.n_outputs, dtype=bool)
        positions = np.arange(b)
        favoured[int(block[0]) * b + positions] = hadamard_parity(positions, column[0]) == 0
        weights = ratio_law_weights(favoured, *self.weights)
        return ExactLaw(np.arange(self.n_outputs).astype(report_dtype(self.n_outputs)),
                        weights, sum(weights))

    def simulate_statistic(self, type_counts, rng):
        # Per user, an output uniform over all K or one uniform on the favoured half of its block
        # (module docstring). A simulation (no report leaves a device): numpy's floating-point
        # binomial with the realised b g / Z, not the integer sampler of randomize. Both parts are
        # drawn per user when they have at most K users (O(N)), else as a multinomial and by
        # hyperplane_counts: O(K log b) whatever the number of users.
        counts = check_type_counts(type_counts, self.n_inputs)
        b, K = self.block_size, self.n_outputs
        favoured = rng.binomial(counts, b * self._g / self._Z)
        uniform = int(counts.sum() - favoured.sum())
        if uniform <= K:
            statistic = np.bincount(rng.integers(0, K, size=uniform), minlength=K)
        else:
            statistic = rng.multinomial(uniform, np.full(K, 1.0 / K))
        n_favoured = int(favoured.sum())
        if n_favoured <= K:
            # As in randomize: a uniform position whose parity is fixed, if odd, by flipping
            # the lowest set bit of the column (a bijection between the two halves).
            cells = np.repeat(np.arange(self.n_inputs), favoured)
            block, column = block_and_column(cells, b, self.hole, self._n_full)
            position = rng.integers(0, b, size=n_favoured)
            position ^= hadamard_parity(position, column) * (column & -column)
            statistic += np.bincount(block * b + position, minlength=K)
        else:
            block, column = block_and_column(np.arange(self.n_inputs), b, self.hole,
                                              self._n_full)
            columns = np.zeros(K, dtype=np.int64)
            columns[block * b + column] = favoured
            statistic += hyperplane_counts(columns.reshape(self.n_blocks, b), rng).ravel()
        return statistic.astype(np.int64)

    def strategy_matrix(self):
        """The dense ``K x n`` strategy (small domains only; the exact privacy tests).

        Returns
        -------
        ndarray of shape (n_outputs, n_inputs)
            :func:`~.hadamard_layout.hadamard_strategy` with this mechanism's layout (a new array).
        """
        return np.array(hadamard_strategy(self.n_inputs, self.epsilon, self.layout))

    @property
    def Q(self):
        """The dense strategy matrix, built once on first access (small domains only)."""
        if self._dense_strategy is None:
            Q = hadamard_strategy(self.n_inputs, self.epsilon, self.layout)
            Q.setflags(write=False)
            self._dense_strategy = Q
        return self._dense_strategy

    # ------------------------------------------------------------------ analysis
    @property
    def null_space_dim(self):
        """0: ``Q^T D^-1 Q`` is positive definite (the Hadamard columns of a block are
        independent, and orthogonal to its all-ones column)."""
        return 0

    def supports(self, workload_matrix):
        """Always True: the strategy has full column rank, every query is answered.

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries (not inspected).

        Returns
        -------
        bool
            True.
        """
        return True

    def supports_gram(self, gram):
        return True

    def per_user_variance(self, gram):
        # The histogram's variances depend only on (n, epsilon, layout) and scale with the
        # Gram (they are linear in it): computed once per process, so that refitting an
        # encoder (a grid search, a pipeline refitted per batch) does not redo the dense
        # partial block's transform.
        if type(gram) is IdentityGram:
            return gram.scale * _histogram_variance(self.n_inputs, self.epsilon, self.layout)
        return super().per_user_variance(gram)

    # ------------------------------------------------------------------ serialization
    def to_dict(self):
        """``n_inputs``, ``epsilon`` and the layout: ``params`` holds ``n_blocks``,
        ``block_size`` and ``hole``, or nothing for the paper's layout (so that a
        specification written before the layout was recorded keeps meaning the same
        mechanism, with the same fingerprint).

        Returns
        -------
        dict
            ``"version"``, ``"mechanism"``, ``"epsilon"``, ``"n_inputs"`` and ``"params"``.
        """
        return Mechanism.to_dict(self)

    @classmethod
    def from_dict(cls, spec):
        if spec.get("mechanism") != cls.kind or spec.get("version") != SPEC_VERSION:
            raise ValueError(f"not a version-{SPEC_VERSION} {cls.kind!r} specification: "
                             f"{str(spec)[:80]!r}.")
        params = spec.get("params") or {}
        keys = ("n_blocks", "block_size", "hole")
        if not isinstance(params, dict) or (params and set(params) != set(keys)):
            raise ValueError(f"the {cls.kind!r} mechanism takes no parameters besides "
                             f"n_inputs, epsilon and its layout {keys} (all three, or none "
                             f"for the paper's layout), got {params!r}.")
        layout = tuple(params[key] for key in keys) if params else "paper"
        return cls(spec["n_inputs"], spec["epsilon"], layout=layout)

    def fingerprint(self):
        """Equal for two Hadamard responses with the same ``n``, ``eps`` and layout.

        Returns
        -------
        str
            The specification as JSON with sorted keys.
        """
        return Mechanism.fingerprint(self)

    def __eq__(self, other):
        return isinstance(other, HadamardResponse) and self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        return (f"HadamardResponse(n_inputs={self.n_inputs}, epsilon={self.epsilon}, "
                f"layout={self.layout})")
