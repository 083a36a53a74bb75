r"""A one-bit eps-LDP randomizer for bounded real values (Bassily's adaptive protocol, §3.7).

A user holds a value ``s`` in ``[-r, r]`` (in the adaptive protocol ``s = q[v]``, the current
query evaluated at the user's record) and sends one bit: ``+1`` with probability

    P(+1 | s) = 1/2 + s / (2 c r),        c = (e^eps + 1) / (e^eps - 1),

else ``-1``. The server reads a bit ``b`` as the value ``b c r``:

* unbiased: ``E[b c r] = c r (2 P(+1) - 1) = s``;
* variance ``(c r)^2 - s^2`` (at most ``(c r)^2``, attained at ``s = 0``);
* exactly eps-LDP: ``P(+1 | s)`` ranges over ``[(1 - 1/c) / 2, (1 + 1/c) / 2]`` and the ratio
  of the two ends is ``(c + 1) / (c - 1) = e^eps``, the bound being attained by ``s = +-r``.

Decision: the paper does not pin its exact randomizer down; we use the standard unbiased
one-bit randomizer (Duchi-Jordan-Wainwright style), which gives the same rate. Reports are
``int8`` arrays of ``+1`` / ``-1``.

Pure numpy; nothing here knows about scikit-learn or pandas.
"""

import math
import numbers

import numpy as np

from .._validation import check_epsilon

# Values are accepted this far outside [-r, r] (relative to r) to absorb rounding.
BOUND_RTOL = 1e-12


def check_bound(bound, name="bound"):
    """Return ``bound`` as a finite float > 0, or raise a ValueError."""
    if isinstance(bound, bool) or not isinstance(bound, numbers.Real):
        raise ValueError(f"{name} must be a positive real number, got {bound!r}.")
    bound = float(bound)
    if not math.isfinite(bound) or bound <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {bound!r}.")
    return bound


class OneBitRandomizer:
    """Unbiased one-bit eps-LDP randomizer for values in ``[-bound, bound]``.

    A user with value ``s`` sends ``+1`` with probability ``1/2 + s / (2 c r)`` and ``-1``
    otherwise; the server reads a bit ``b`` as ``b c r``, an unbiased estimate of ``s`` with
    variance ``(c r)^2 - s^2``. It is the client side of
    :class:`~sklearn_ldp.AdaptiveQueryEstimator` (one query per user).

    Parameters
    ----------
    epsilon : float
        Privacy budget of one bit.
    bound : float, default=1.0
        ``r``: every value must lie in ``[-r, r]``.

    Attributes
    ----------
    c : float
        ``(e^eps + 1) / (e^eps - 1)``; a bit ``b`` decodes to ``b * c * r``.
    scale : float
        ``c * r``, the magnitude of a decoded bit.

    See Also
    --------
    sklearn_ldp.AdaptiveQueryEstimator : Bassily's adaptive protocol, built on this
        randomizer.
    GaussianRejectionMechanism : Pure epsilon-LDP answers to many linear queries at once.

    References
    ----------
    .. [1] R. Bassily, "Linear queries estimation with local differential privacy", AISTATS
       2019 (PMLR 89), section 3.7 (the adaptive protocol).
    .. [2] J. C. Duchi, M. I. Jordan and M. J. Wainwright, "Local privacy and statistical
       minimax rates", FOCS 2013 (one-bit randomized response for bounded values).

    Examples
    --------
    >>> import numpy as np
    >>> randomizer = OneBitRandomizer(epsilon=1.0, bound=1.0)
    >>> bits = randomizer.randomize(np.full(100000, 0.3), np.random.default_rng(0))
    >>> bits.dtype, np.unique(bits).tolist()
    (dtype('int8'), [-1, 1])
    >>> bool(abs(randomizer.decode(bits).mean() - 0.3) < 0.05)
    True

    The mean of 10000 users' values, and its standard deviation:

    >>> randomizer = OneBitRandomizer(epsilon=1.0, bound=2.0)
    >>> bits = randomizer.randomize(np.full(10000, 0.5), np.random.default_rng(0))
    >>> round(randomizer.estimate_mean(bits), 3)
    0.488
    >>> round(float(np.sqrt(randomizer.variance(0.5) / 10000)), 3)
    0.043
    """

    def __init__(self, epsilon, bound=1.0):
        self.epsilon = check_epsilon(epsilon)
        self.bound = check_bound(bound)
        self.c = (math.exp(self.epsilon) + 1.0) / math.expm1(self.epsilon)
        self.scale = self.c * self.bound

    def check_values(self, values, what="values"):
        """Values as a float64 array, or a ValueError naming the first one out of range.

        Values within a relative ``BOUND_RTOL`` (``1e-12``) outside ``[-bound, bound]``
        (rounding errors) are moved onto the bound; anything farther is refused.

        Parameters
        ----------
        values : array-like of float
            The users' values.
        what : str, default="values"
            What the values are, for the error message.

        Returns
        -------
        values : ndarray of float64
            The values, in ``[-bound, bound]``.

        Raises
        ------
        ValueError
            If a value is NaN, infinite or outside ``[-bound, bound]``.
        """
        values = np.asarray(values, dtype=float)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"{what} must be finite numbers; found NaN or infinity.")
        outside = np.abs(values) > self.bound * (1 + BOUND_RTOL)
        if np.any(outside):
            first = values[outside].flat[0]
            raise ValueError(
                f"{what} must lie in [-bound, bound] = [{-self.bound}, {self.bound}]; found "
                f"{first!r} ({int(outside.sum())} values out of range)."
            )
        return np.clip(values, -self.bound, self.bound)

    def probability_plus(self, values):
        """``P(+1 | s) = 1/2 + s / (2 c r)`` for each value.

        Parameters
        ----------
        values : array-like of float
            Values in ``[-bound, bound]``.

        Returns
        -------
        probability : ndarray of float64
            The probability of sending ``+1``, in ``[(1 - 1/c) / 2, (1 + 1/c) / 2]``.
        """
        return 0.5 + self.check_values(values) / (2.0 * self.scale)

    def randomize(self, values, rng):
        """One bit per value, as an ``int8`` array of ``+1`` / ``-1`` (vectorized).

        Parameters
        ----------
        values : array-like of float
            Values in ``[-bound, bound]``.
        rng : numpy.random.Generator
            Source of randomness (the client's).

        Returns
        -------
        bits : ndarray of int8
            One report per value (same shape): ``+1`` or ``-1``.
        """
        plus = rng.random(np.shape(values)) < self.probability_plus(values)
        return np.where(plus, np.int8(1), np.int8(-1))

    def check_reports(self, bits):
        """Bits as an int8 array of +-1, or a ValueError naming the first other value.

        The valid-report set is ``{-1, +1}``: a report decodes to ``+-c r``, so one report
        moves the estimated sum by at most ``c r`` (the bound a crafted report can reach).

        Parameters
        ----------
        bits : array-like of int
            Reports to check.

        Returns
        -------
        bits : ndarray of int8
            The same reports, every one ``+1`` or ``-1``.

        Raises
        ------
        ValueError
            If the reports are not integers, or some report is neither ``+1`` nor ``-1``.
        """
        bits = np.asarray(bits)
        if bits.size and not np.issubdtype(bits.dtype, np.integer):
            raise ValueError(f"one-bit reports must be integers equal to +1 or -1, got dtype "
                             f"{bits.dtype}.")
        wrong = np.flatnonzero((bits != 1) & (bits != -1))
        if wrong.size:
            index = int(wrong[0])
            value = bits.ravel()[index].item()
            raise ValueError(
                f"one-bit reports must be integers equal to +1 or -1; report {index} of the "
                f"one-bit randomizer is {value!r} ({wrong.size} such reports).")
        return bits.astype(np.int8, copy=False)

    def decode(self, bits):
        """Each bit's unbiased value ``b c r``.

        Parameters
        ----------
        bits : array-like of int
            Reports as :meth:`randomize` returns them: ``+1`` or ``-1`` each.

        Returns
        -------
        values : ndarray of float64
            ``b c r`` for each bit: an unbiased estimate of that user's value.

        Raises
        ------
        ValueError
            If some report is neither ``+1`` nor ``-1``.
        """
        return self.scale * self.check_reports(bits).astype(float)

    def estimate_mean(self, bits):
        """Unbiased estimate of the mean of the users' values: ``c r mean(b)``.

        Parameters
        ----------
        bits : array-like of int
            Reports as :meth:`randomize` returns them: ``+1`` or ``-1`` each.

        Returns
        -------
        mean : float
            The estimated mean value; its variance is the mean of :meth:`variance` over the
            users divided by their number.

        Raises
        ------
        ValueError
            If there are no reports, or some report is neither ``+1`` nor ``-1``.
        """
        bits = self.check_reports(bits)
        if bits.size == 0:
            raise ValueError("no reports: the mean of zero values is undefined.")
        return float(self.scale * bits.mean(dtype=float))

    def variance(self, values):
        """Exact variance of each decoded bit: ``(c r)^2 - s^2``.

        Parameters
        ----------
        values : array-like of float
            Values in ``[-bound, bound]``.

        Returns
        -------
        variance : ndarray of float64
            The variance of ``decode`` of the bit of a user with each value.
        """
        values = self.check_values(values)
        return self.scale**2 - values**2

    def strategy_matrix(self, values):
        """``2 x k`` matrix of ``P(+1 | s)`` and ``P(-1 | s)``, for exact privacy checks.

        Parameters
        ----------
        values : array-like of float
            Values in ``[-bound, bound]``.

        Returns
        -------
        Q : ndarray of shape (2, k)
            Row 0: ``P(+1 | s)``, row 1: ``P(-1 | s)``, for the ``k`` values (flattened).
        """
        plus = self.probability_plus(np.ravel(values))
        return np.vstack([plus, 1.0 - plus])

    def to_dict(self):
        """The randomizer as plain JSON values, for :meth:`from_dict`.

        Returns
        -------
        spec : dict
            ``{"randomizer": "one_bit", "epsilon": ..., "bound": ...}``.
        """
        return {"randomizer": "one_bit", "epsilon": self.epsilon, "bound": self.bound}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild a randomizer from the dict :meth:`to_dict` returned.

        Parameters
        ----------
        spec : dict
            A specification from :meth:`to_dict`.

        Returns
        -------
        randomizer : OneBitRandomizer
            A randomizer equal to the one that wrote ``spec``.

        Raises
        ------
        ValueError
            If ``spec`` is not a one-bit randomizer specification, lacks the ``"epsilon"``
            or the ``"bound"`` field, or its values are invalid.
        """
        if not isinstance(spec, dict) or spec.get("randomizer") != "one_bit":
            raise ValueError(f"not a one-bit randomizer specification: {str(spec)[:80]!r}.")
        # to_dict always writes both fields: a spec without one is damaged, and the
        # constructor's default bound must not stand in for the bound the clients used.
        missing = [field for field in ("epsilon", "bound") if field not in spec]
        if missing:
            raise ValueError(f"the one-bit randomizer specification lacks the field(s) "
                             f"{missing!r}: {str(spec)[:80]!r}.")
        return cls(spec["epsilon"], spec["bound"])

    def __eq__(self, other):
        return isinstance(other, OneBitRandomizer) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash((self.epsilon, self.bound))

    def __repr__(self):
        return f"OneBitRandomizer(epsilon={self.epsilon}, bound={self.bound})"
