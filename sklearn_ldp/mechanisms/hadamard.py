"""Hadamard response (Acharya, Sun, Zhang, AISTATS 2019), general privacy regime.

Strategy. The ``K = B b`` outputs are split into ``B`` blocks of size ``b`` (powers of two,
from :func:`hadamard_shape`). Input ``j`` lives in block ``j // (b - 1)`` at Hadamard column
``c = j % (b - 1) + 1`` (column 0, all ones, is not used). It reports each of the ``b / 2``
outputs ``y`` of its block where ``H_b[y mod b, c] = +1`` (its "favoured" outputs) with
probability ``e^eps / Z`` and every other output with probability ``1 / Z``, where

    Z = (b / 2) e^eps + K - b / 2.

Every output row holds only the values ``e^eps / Z`` and ``1 / Z``, so the strategy is exactly
epsilon-LDP.

Client side, ``O(1)`` per user. A user draws one of three events: a favoured output (probability
``(b/2) e^eps / Z``), one of the ``b / 2`` unfavoured outputs of its own block (``(b/2) / Z``),
or one of the ``K - b`` outputs of the other blocks (``(K - b) / Z``); inside each event the
output is uniform, which gives exactly column ``j`` of the strategy matrix. A uniform output of
the block with a prescribed parity ``popcount(y' & c) mod 2`` is drawn as a uniform
``y'`` in ``[0, b)`` whose parity is then fixed, if wrong, by flipping the lowest set bit of
``c`` in ``y'``: that flip is a bijection between the even and odd halves of ``[0, b)``, so the
result is uniform on the wanted half.

Server side. Decision (not from the paper): the reports are decoded with the optimal linear
decoder of the dense strategy, ``V* = W (Q^T D^-1 Q)^+ Q^T D^-1`` (see
:mod:`.factorization`), instead of ASZ's block-wise estimator. Measured: on the Prefix workload
ASZ's worst-case variance is 3-25x that of ``V*`` (n = 16, eps = 1: 3.7x; n = 64, eps = 3:
24.7x; n = 1024, eps = 1: 3.0x), on the Histogram 0.2-45% higher
(``tests/test_hadamard.py::test_optimal_decoder_beats_the_block_estimator``). So
:class:`HadamardResponse` is a :class:`~.factorization.FactorizationMechanism` on the dense
``K x n`` strategy (which also gives the exact variance of any workload), and only its
sampler (structured), aggregation (chunked) and serialization (``n`` and ``eps``, no matrix)
are its own. The statistic is the count of each of the ``K`` outputs; the estimate is one dense
``n x K`` matrix-vector product.
"""

import math

import numpy as np
from scipy.linalg import hadamard

from .._validation import check_dense_size, check_epsilon, check_positive_int
from ._fwht import hadamard_parity
from .base import (
    SPEC_VERSION,
    Mechanism,
    check_type_indices,
    register,
    report_dtype,
)
from .factorization import FactorizationMechanism


def hadamard_shape(n, epsilon):
    """``(n_blocks, block_size)`` of the general-regime construction.

    ``B = 2^(ceil(log2 min(e^eps, 2n)) - 1)`` blocks of ``b = 2^ceil(log2(n / B + 1))``
    outputs each, so that the ``B (b - 1)`` usable Hadamard columns cover the ``n`` inputs.

    Examples
    --------
    >>> hadamard_shape(16, 1.0), hadamard_shape(16, 3.0)
    ((2, 16), (16, 2))
    """
    # Exponents are rounded to 9 decimals before the ceiling: at eps = ln 4, say, e^eps lands
    # one ulp above or below 4 depending on the platform's exp, which would change the layout
    # a client (sklearn_ldp.client, the same formula) derives from the same specification.
    n_blocks = 2 ** (math.ceil(round(math.log2(min(math.exp(epsilon), 2 * n)), 9)) - 1)
    block_size = 2 ** math.ceil(round(math.log2(n / n_blocks + 1), 9))
    return n_blocks, block_size


def hadamard_strategy(n, epsilon):
    """The ``K x n`` Hadamard response strategy matrix.

    Examples
    --------
    >>> hadamard_strategy(16, 1.0).shape
    (32, 16)
    """
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    n_blocks, block_size = hadamard_shape(n, epsilon)
    n_outputs = n_blocks * block_size
    check_dense_size(n_outputs, n, "hadamard")
    inputs = np.arange(n)
    block = inputs // (block_size - 1)
    column = inputs % (block_size - 1) + 1
    signs = hadamard(block_size)[:, column]  # (block_size, n): +1 where the output is favoured
    Q = np.ones((n_outputs, n))
    rows = block[None, :] * block_size + np.arange(block_size)[:, None]
    Q[rows, inputs[None, :]] = np.where(signs > 0, np.exp(epsilon), 1.0)
    return Q / Q.sum(axis=0)


@register
class HadamardResponse(FactorizationMechanism):
    """Hadamard response (Acharya-Sun-Zhang, general regime) with a structured sampler.

    A :class:`~.factorization.FactorizationMechanism` on :func:`hadamard_strategy` (so the
    estimate is the optimal decoder ``V*`` and every variance is exact), whose ``randomize``
    draws each user's output in ``O(1)`` from exactly its column of the strategy, and whose
    specification is just ``n`` and ``eps`` (see the module docstring).

    Parameters
    ----------
    n_inputs : int
        Domain size ``n`` (the dense ``K x n`` strategy must fit in memory).
    epsilon : float

    Attributes
    ----------
    n_blocks, block_size : int
        ``B`` and ``b`` of the construction; ``n_outputs = B b``.
    Q : ndarray of shape (n_outputs, n_inputs)
        The strategy matrix.

    Examples
    --------
    >>> import numpy as np
    >>> mechanism = HadamardResponse(6, 1.0)
    >>> mechanism.n_outputs, mechanism.n_blocks, mechanism.block_size
    (8, 2, 4)
    >>> reports = mechanism.randomize(np.array([0, 3, 5, 5]), np.random.default_rng(0))
    >>> mechanism.estimate(mechanism.aggregate(reports)).shape
    (6,)
    """

    kind = "hadamard"

    def __init__(self, n_inputs, epsilon):
        n_inputs = check_positive_int(n_inputs, "n_inputs")
        epsilon = check_epsilon(epsilon)
        super().__init__(hadamard_strategy(n_inputs, epsilon), epsilon, name="hadamard",
                         params={})
        self.n_blocks, self.block_size = hadamard_shape(n_inputs, epsilon)
        half = self.block_size // 2
        e = np.exp(epsilon)
        normalizer = half * e + self.n_outputs - half
        # Thresholds on one uniform draw: [0, t0) favoured, [t0, t1) the block's unfavoured
        # outputs, [t1, 1) the outputs of the other blocks.
        self._favoured_threshold = half * e / normalizer
        self._block_threshold = (half * e + half) / normalizer

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Privatize user types ``indices``: one output index per user, ``O(1)`` work each.

        Draws exactly from column ``u`` of :func:`hadamard_strategy` (see the module
        docstring); three random numbers per user, no loop over users or outputs.
        """
        indices = check_type_indices(indices, self.n_inputs)
        n_users = indices.shape[0]
        b, n_outputs = self.block_size, self.n_outputs
        start = (indices // (b - 1)) * b  # first output of the user's block
        column = indices % (b - 1) + 1  # the user's Hadamard column, never 0
        event = rng.random(n_users)
        position = rng.integers(0, b, size=n_users)
        # The wanted parity of popcount(position & column): 0 (favoured, H = +1) or 1.
        wanted = (event >= self._favoured_threshold).astype(np.uint8)
        wrong = hadamard_parity(position, column) != wanted
        position ^= wrong * (column & -column)  # flip the lowest set bit of the column
        reports = start + position
        if n_outputs > b:
            outside = rng.integers(0, n_outputs - b, size=n_users)
            outside += b * (outside >= start)  # skip the user's own block
            reports = np.where(event >= self._block_threshold, outside, reports)
        return reports.astype(report_dtype(n_outputs))


    # ------------------------------------------------------------------ serialization
    def to_dict(self):
        """``n_inputs`` and ``epsilon`` only: the strategy is rebuilt from them."""
        return Mechanism.to_dict(self)

    @classmethod
    def from_dict(cls, spec):
        if spec.get("mechanism") != cls.kind or spec.get("version") != SPEC_VERSION:
            raise ValueError(f"not a version-{SPEC_VERSION} {cls.kind!r} specification: "
                             f"{str(spec)[:80]!r}.")
        if spec.get("params"):
            raise ValueError(f"the {cls.kind!r} mechanism takes no parameters besides "
                             f"n_inputs and epsilon, got {spec['params']!r}.")
        return cls(spec["n_inputs"], spec["epsilon"])

    def fingerprint(self):
        """Equal for two Hadamard responses with the same ``n`` and ``eps``."""
        return Mechanism.fingerprint(self)

    def __eq__(self, other):
        return isinstance(other, HadamardResponse) and self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        return f"HadamardResponse(n_inputs={self.n_inputs}, epsilon={self.epsilon})"
