"""Exact simulation of Hadamard randomized response with signed inputs, in O(K log K).

Setting. ``K = 2^k``. Each of ``plus[u]`` users holds the vector ``+e_u`` and each of
``minus[u]`` users ``-e_u``. A user samples a coefficient ``j`` uniformly (from ``[0, K)``, or
from ``[1, K)`` when coefficient 0 is excluded, as the HRR frequency oracle does), computes
the true sign ``t = s H[j, u]`` with ``H[j, u] = (-1)^popcount(j & u)``, and sends ``t``
with probability ``p``, ``-t`` otherwise. The server keeps, per coefficient, the number of
users who sent ``+1`` and the number who sent ``-1``.

Why not one draw per user. Drawing the users' coefficients type by type costs ``O(n K)``
(a multinomial over ``K`` coefficients per type), which is ``2^40`` at ``n = K = 2^20``.

Bit-by-bit splitting. ``popcount(j & u) = sum_b j_b u_b``, so the sign factorizes over the
bits. Process the bits of ``j`` from the most significant one down: after ``t`` bits, group
the users by (the ``t`` top bits of ``j`` chosen so far, the low ``k - t`` bits of ``u``,
the sign accumulated so far). Choosing the next bit ``b`` of ``j`` is a binomial split of
every group, and the user's next bit ``c`` of ``u`` multiplies the sign by ``(-1)^(b c)``:

* ``b = 0``: the sign is unchanged;
* ``b = 1``: the sign flips for ``c = 1``.

Each step touches ``2K`` group counts (``2^t`` prefixes x ``K / 2^t`` suffixes x 2 signs), so
the whole draw is ``2 K log2 K`` binomials. When ``j = 0`` is excluded, the prefix of zeros
still has ``R - 1`` admissible completions out of ``R`` (``R`` the remaining range), of which
``R / 2`` start with a 1: its split probability is ``(R/2) / (R - 1)`` instead of ``1/2``.

The result has the distribution of the per-user protocol: every split is the conditional law
of the next bit of independent uniform choices. It is a simulation (no report leaves a
device): the binomials are numpy's floating-point draws, with the *realised* probability
``p = a / (a + d)`` of the mechanism (its integer weights), not the integer sampler of
``randomize``.
"""

import numpy as np


def simulate_signed_hrr(plus, minus, p, rng, exclude_zero=False):
    """Per-coefficient counts of ``+1`` and ``-1`` reports, drawn exactly.

    Parameters
    ----------
    plus, minus : array-like of non-negative int, shape (K,)
        Users holding ``+e_u`` and ``-e_u``; ``K`` a power of two (>= 2 if ``exclude_zero``).
    p : float
        Probability of sending the true sign: the mechanism's realised ``a / (a + d)``.
    rng : numpy.random.Generator
    exclude_zero : bool, default=False
        Sample ``j`` from ``[1, K)`` instead of ``[0, K)``.

    Returns
    -------
    sent_plus, sent_minus : ndarray of int64, shape (K,)

    Examples
    --------
    >>> sent_plus, sent_minus = simulate_signed_hrr([5, 0], [0, 3], 1.0,
    ...                                             np.random.default_rng(0), exclude_zero=True)
    >>> sent_plus.tolist(), sent_minus.tolist()   # j = 1: +e_0 -> +1, -e_1 -> +1
    ([0, 8], [0, 0])
    """
    plus = np.asarray(plus, dtype=np.int64)
    minus = np.asarray(minus, dtype=np.int64)
    size = plus.shape[0]
    if plus.shape != minus.shape or plus.ndim != 1 or size & (size - 1):
        raise ValueError("plus and minus must be 1-D arrays of the same power-of-two length.")
    if exclude_zero and size < 2:
        raise ValueError("excluding coefficient 0 needs at least 2 coefficients.")
    # groups[prefix, suffix, sign]: sign 0 is +1, sign 1 is -1.
    groups = np.stack([plus, minus], axis=-1)[None, :, :]
    while groups.shape[1] > 1:
        n_prefixes, remaining = groups.shape[0], groups.shape[1]
        half = remaining // 2
        probability = np.full((n_prefixes, 1, 1), 0.5)
        if exclude_zero:
            probability[0] = half / (remaining - 1)
        # Users whose next u-bit is 0 (first half of the suffixes) or 1 (second half).
        low, high = groups[:, :half, :], groups[:, half:, :]
        low_one = rng.binomial(low, probability)
        high_one = rng.binomial(high, probability)
        zero_branch = (low - low_one) + (high - high_one)
        one_branch = low_one + high_one[:, :, ::-1]  # j-bit 1 and u-bit 1: the sign flips
        # New prefix index = 2 * prefix + chosen bit.
        groups = np.stack([zero_branch, one_branch], axis=1).reshape(2 * n_prefixes, half, 2)
    true_plus, true_minus = groups[:, 0, 0], groups[:, 0, 1]
    kept_plus = rng.binomial(true_plus, p)
    kept_minus = rng.binomial(true_minus, p)
    sent_plus = kept_plus + (true_minus - kept_minus)
    sent_minus = kept_minus + (true_plus - kept_plus)
    return sent_plus.astype(np.int64), sent_minus.astype(np.int64)
