"""Exact two-weight laws: randomized response in all its forms, sampled on integers.

k-ary randomized response, local hashing (randomized response on a bucket), Hadamard response
(a favoured half of a block) and the sign flips of HRR and Haar all have one shape: the
``F + R`` public outputs of a user split into ``F`` *favoured* outputs, each drawn with weight
``a``, and ``R`` others, each with weight ``d``, out of the total ``Z = F a + R d``. The law
is epsilon-LDP exactly when ``a / d <= e^eps`` (every output is favoured for some inputs and
not for others, and no other ratio occurs).

Integers. ``d = 2^s`` is the largest power of two with ``Z <= 2^62`` and ``a`` the largest
integer with ``a / d <= e^eps``, decided on integers (:func:`~._exact.largest_numerator_within`);
so the realised ratio is below ``e^eps`` by less than ``1 / d`` (relative ``2^-30`` and less
for every domain of at most ``2^24`` outputs and ``eps <= 8``), and it is the ratio the
estimators and variances use. (For very large ``eps`` the cap ``Z <= 2^62`` bounds ``a``
instead: the mechanism is then less than ``eps``-private, never more.)

Sampling. One exactly uniform integer ``U`` in ``[0, Z)`` (numpy's Lemire rejection, or
Python's ``randrange`` on a client) decides the report: ``U < F a`` is the favoured outputs,
the ``(U // a)``-th of them; otherwise the ``((U - F a) >> s)``-th other output. Each output
is the image of exactly its weight's worth of values of ``U``, so the law is exactly
``(a or d) / Z``; no floating-point number takes part.

Pure numpy and the standard library; no scikit-learn here.
"""

import decimal

import numpy as np

from .exact import exp_decimal, integer_ratio_at_most, largest_numerator_within, uniform_below

# Bits of the total weight Z: U = uniform_below(Z) stays an int64 (Lemire's method on 64 bits).
TOTAL_BITS = 62


def ratio_weights(epsilon, n_favoured, n_other, name):
    """``(a, d)``: the weights of the favoured and the other outputs (see the module).

    Parameters
    ----------
    epsilon : float
        The privacy budget.
    n_favoured, n_other : int
        ``F`` and ``R``, the numbers of favoured and other outputs, each at least 1.
    name : str
        The mechanism, for the error message.

    Returns
    -------
    a, d : int
        ``d = 2^s``, ``a / d <= e^eps`` (exactly), ``F a + R d <= 2^62``.

    Raises
    ------
    ValueError
        If ``epsilon`` is so small that ``a = d`` (the outputs carry no information).

    Examples
    --------
    >>> a, d = ratio_weights(1.0, 1, 3, "randomized_response")
    >>> d == 2**59, a / d < 2.718281828459046, a + 3 * d <= 2**62
    (True, True, True)
    """
    n_favoured, n_other = int(n_favoured), int(n_other)
    ceiling = int(exp_decimal(epsilon).to_integral_value(rounding=decimal.ROUND_CEILING))
    units = n_favoured * ceiling + n_other  # Z / d < 2^bit_length(units)
    d = 1 << max(0, TOTAL_BITS - units.bit_length())
    a = min(largest_numerator_within(d, epsilon), (2**TOTAL_BITS - n_other * d) // n_favoured)
    check_ratio_weights(a, d, epsilon, n_favoured, n_other, name)
    return a, d


def check_ratio_weights(a, d, epsilon, n_favoured, n_other, name):
    """The exact privacy check of a two-weight law: a ValueError unless ``d < a``,
    ``a / d <= e^eps`` (decided on integers) and ``F a + R d <= 2^62``.

    Examples
    --------
    >>> check_ratio_weights(27, 10, 1.0, 1, 1, "hrr")
    >>> check_ratio_weights(28, 10, 1.0, 1, 1, "hrr")
    Traceback (most recent call last):
    ...
    ValueError: the 'hrr' mechanism's weights a=28, d=10 have a / d > e^1.0: not 1.0-LDP.
    """
    if not isinstance(a, int) or not isinstance(d, int) or d < 1:
        raise ValueError(f"the {name!r} mechanism's weights must be integers with d >= 1, got "
                         f"a={a!r}, d={d!r}.")
    if a <= d:
        raise ValueError(f"epsilon={epsilon!r} is too small for the {name!r} mechanism: with "
                         f"integer weights of at most 62 bits the favoured outputs (weight {a}) "
                         f"are no more likely than the others ({d}); use epsilon >= 1e-12.")
    if not integer_ratio_at_most(a, d, epsilon):
        raise ValueError(f"the {name!r} mechanism's weights a={a}, d={d} have a / d > "
                         f"e^{epsilon}: not {epsilon}-LDP.")
    if n_favoured * a + n_other * d > 2**TOTAL_BITS:
        raise ValueError(f"the {name!r} mechanism's total weight exceeds 2^{TOTAL_BITS}.")


def sample_ratio_law(rng, size, n_favoured, n_other, a, d):
    """Draw ``size`` reports of the two-weight law: ``(favoured, index)``.

    Parameters
    ----------
    rng : numpy.random.Generator
    size : int
    n_favoured, n_other : int
        ``F`` and ``R``.
    a, d : int
        The weights (:func:`ratio_weights`); ``d`` a power of two.

    Returns
    -------
    favoured : ndarray of bool, shape (size,)
        Whether the report is a favoured output.
    index : ndarray of int64, shape (size,)
        Its index among the favoured outputs (``[0, F)``) or among the others (``[0, R)``),
        uniform given ``favoured``.

    Examples
    --------
    >>> favoured, index = sample_ratio_law(np.random.default_rng(0), 5, 1, 3, 3, 1)
    >>> favoured.dtype, bool(index.max() < 3)
    (dtype('bool'), True)
    """
    cut = n_favoured * a
    draws = uniform_below(rng, cut + n_other * d, size)
    favoured = draws < cut
    shift = np.int64(d.bit_length() - 1)
    if n_favoured == 1:
        index = np.subtract(draws, cut, out=draws)
        index >>= shift
        index[favoured] = 0
    else:
        index = np.where(favoured, draws // a, (draws - cut) >> shift)
    return favoured, index


def ratio_law_weights(favoured_mask, a, d):
    """Python-integer weights of one input's law: ``a`` where ``favoured_mask``, else ``d``
    (for :class:`~._exact.ExactLaw`).

    Examples
    --------
    >>> ratio_law_weights(np.array([False, True]), 5, 2)
    [2, 5]
    """
    return [a if flag else d for flag in np.asarray(favoured_mask).tolist()]


def sign_weights(epsilon, name):
    """``((a, d), p, debias)`` of binary randomized response on a sign (HRR, Haar):
    the sign is kept with weight ``a`` and flipped with weight ``d``, so the realised
    ``p = a / (a + d)`` and ``1 / (2p - 1) = (a + d) / (a - d)``, both from integers.

    Examples
    --------
    >>> (a, d), p, debias = sign_weights(1.0, "hrr")
    >>> round(p, 9), round(debias, 9)
    (0.731058579, 2.163953414)
    """
    a, d = ratio_weights(epsilon, 1, 1, name)
    return (a, d), a / (a + d), (a + d) / (a - d)


def kept_signs(rng, size, weights):
    """``size`` exact Bernoulli(``a / (a + d)``) draws: True where the sign is kept.

    Examples
    --------
    >>> kept_signs(np.random.default_rng(0), 4, (3, 1)).dtype
    dtype('bool')
    """
    a, d = weights
    return uniform_below(rng, a + d, size) < a
