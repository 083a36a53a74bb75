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

    Examples
    --------
    >>> import numpy as np
    >>> randomizer = OneBitRandomizer(epsilon=1.0, bound=1.0)
    >>> bits = randomizer.randomize(np.full(100000, 0.3), np.random.default_rng(0))
    >>> bits.dtype, np.unique(bits).tolist()
    (dtype('int8'), [-1, 1])
    >>> bool(abs(randomizer.decode(bits).mean() - 0.3) < 0.05)
    True
    """

    def __init__(self, epsilon, bound=1.0):
        self.epsilon = check_epsilon(epsilon)
        self.bound = check_bound(bound)
        self.c = (math.exp(self.epsilon) + 1.0) / math.expm1(self.epsilon)
        self.scale = self.c * self.bound

    def check_values(self, values, what="values"):
        """Values as a float64 array, or a ValueError naming the first one out of range."""
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
        """``P(+1 | s) = 1/2 + s / (2 c r)`` for each value."""
        return 0.5 + self.check_values(values) / (2.0 * self.scale)

    def randomize(self, values, rng):
        """One bit per value, as an ``int8`` array of ``+1`` / ``-1`` (vectorized)."""
        plus = rng.random(np.shape(values)) < self.probability_plus(values)
        return np.where(plus, np.int8(1), np.int8(-1))

    def check_reports(self, bits):
        """Bits as an int8 array of +-1, or a ValueError naming the first other value.

        The valid-report set is ``{-1, +1}``: a report decodes to ``+-c r``, so one report
        moves the estimated sum by at most ``c r`` (the bound a crafted report can reach).
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
        """Each bit's unbiased value ``b c r``."""
        return self.scale * self.check_reports(bits).astype(float)

    def estimate_mean(self, bits):
        """Unbiased estimate of the mean of the users' values: ``c r mean(b)``."""
        bits = self.check_reports(bits)
        if bits.size == 0:
            raise ValueError("no reports: the mean of zero values is undefined.")
        return float(self.scale * bits.mean(dtype=float))

    def variance(self, values):
        """Exact variance of each decoded bit: ``(c r)^2 - s^2``."""
        values = self.check_values(values)
        return self.scale**2 - values**2

    def strategy_matrix(self, values):
        """``2 x k`` matrix of ``P(+1 | s)`` and ``P(-1 | s)``, for exact privacy checks."""
        plus = self.probability_plus(np.ravel(values))
        return np.vstack([plus, 1.0 - plus])

    def to_dict(self):
        return {"randomizer": "one_bit", "epsilon": self.epsilon, "bound": self.bound}

    @classmethod
    def from_dict(cls, spec):
        if not isinstance(spec, dict) or spec.get("randomizer") != "one_bit":
            raise ValueError(f"not a one-bit randomizer specification: {str(spec)[:80]!r}.")
        return cls(spec["epsilon"], spec["bound"])

    def __eq__(self, other):
        return isinstance(other, OneBitRandomizer) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash((self.epsilon, self.bound))

    def __repr__(self):
        return f"OneBitRandomizer(epsilon={self.epsilon}, bound={self.bound})"
