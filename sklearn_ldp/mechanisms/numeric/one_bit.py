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

Exactness (issue 26). The bit is drawn from an exact dyadic law, Duchi's two-point law of
:mod:`sklearn_ldp.mechanisms._base.window`: integers ``a + b = 2^28`` with ``a / b <= e^eps``
decided exactly, ``F`` the value's ``(s + r) / (2 r)`` rounded to 35 bits, and ``P(+1) = (b
2^35 + F (a - b)) / 2^63`` drawn by one 63-bit Bernoulli. ``c`` is the realised ``(a + b) / (a
- b)`` (the formula's within ``1e-7``), so ``b c r`` stays exactly unbiased for the rounded
value. ``exact_law(s)`` is the integer law of one bit.

Pure numpy; nothing here knows about scikit-learn or pandas.
"""

from fractions import Fraction

import numpy as np

from ..._validation import check_epsilon, check_positive_real
from .._base.docstrings import from_dict_docstring, shared_sections
from .._base.exact import ExactLaw
from .._base.window import TWO_POINT_FRACTION_BITS, WindowLaw, two_point_weights, unit_fraction

# Values are accepted this far outside [-r, r] (relative to r) to absorb rounding.
BOUND_RTOL = 1e-12


def check_bound(bound, name="bound"):
    """Return ``bound`` as a finite float > 0, or raise a ValueError."""
    return check_positive_real(bound, name)


# The values parameter of the methods taking values (a line ``<bounded values>``;
# :mod:`sklearn_ldp.mechanisms._base.docstrings`).
_values_docstring = shared_sections({"bounded values": """\
Parameters
----------
values : array-like of float
    Values in ``[-bound, bound]``."""})

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
        ``(a + b) / (a - b)`` of the exact two-point law (``(e^eps + 1) / (e^eps - 1)``
        within ``1e-7``); a bit ``b`` decodes to ``b * c * r``.
    law : WindowLaw
        The exact law of the bit (weights ``a``, ``b``; the value's rounding on 35 bits).
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
    >>> round(float(np.sqrt(randomizer.variance(0.5) / 10000)), 3)
    0.043
    >>> randomizer.exact_law(0.5).outputs.tolist()
    [-1, 1]
    """

    def __init__(self, epsilon, bound=1.0):
        self.epsilon = check_epsilon(epsilon)
        self.bound = check_bound(bound)
        a, b = two_point_weights(self.epsilon)
        self.law = WindowLaw(2, 1, a, b, self.epsilon, TWO_POINT_FRACTION_BITS,
                             name="one_bit")
        self.c = float(Fraction(a + b, a - b))
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

    def _numerators(self, values):
        """``(w0, F)`` of the two-point law for each value (``F / 2^35`` the rounded ``(s +
        r) / (2 r)``)."""
        return self.law.positions(unit_fraction(self.check_values(values),
                                                (-self.bound, self.bound)))

    @_values_docstring
    def probability_plus(self, values):
        """``P(+1 | s)``, the exact ``(b 2^35 + F (a - b)) / 2^63`` as a float (``1/2 + s /
        (2 c r)`` for the rounded value), for each value.

        <bounded values>

        Returns
        -------
        probability : ndarray of float64
            The probability of sending ``+1``, in ``[(1 - 1/c) / 2, (1 + 1/c) / 2]``.
        """
        _, numerators = self._numerators(values)
        # (b 2^K + F (a - b)) / (2^K T) in float64 (relative error about 1e-16).
        step = (self.law.a - self.law.b) / float(2**self.law.fraction_bits)
        return (self.law.b + numerators * step) / self.law.total

    def exact_law(self, value):
        """The exact law of one value's bit: outputs ``[-1, +1]`` (int8), integer weights.

        Parameters
        ----------
        value : float
            A value in ``[-bound, bound]``.

        Returns
        -------
        law : ExactLaw
            ``P(outputs[o]) = weights[o] / total``.
        """
        w0, numerators = self._numerators(np.array([value]))
        return ExactLaw(np.array([-1, 1], dtype=np.int8),
                        self.law.law_weights(w0[0], numerators[0]),
                        self.law.total * 2**self.law.fraction_bits)

    @_values_docstring
    def randomize(self, values, rng):
        """One bit per value, as an ``int8`` array of ``+1`` / ``-1`` (vectorized).

        <bounded values>
        rng : numpy.random.Generator
            Source of randomness (the client's).

        Returns
        -------
        bits : ndarray of int8
            One report per value (same shape): ``+1`` or ``-1``.
        """
        bits = self.law.sample(rng, *self._numerators(values))
        return np.where(bits == 1, np.int8(1), np.int8(-1))

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
            The reports, as for :meth:`decode`.

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

    @_values_docstring
    def variance(self, values):
        """Exact variance of each decoded bit: ``(c r)^2 - s'^2``, ``s'`` the value rounded
        as the law rounds it (``s`` within ``2^-34 r``).

        <bounded values>

        Returns
        -------
        variance : ndarray of float64
            The variance of ``decode`` of the bit of a user with each value.
        """
        _, numerators = self._numerators(values)
        rounded = self.bound * (numerators / float(2**(self.law.fraction_bits - 1)) - 1.0)
        return self.scale**2 - rounded**2

    @_values_docstring
    def strategy_matrix(self, values):
        """``2 x k`` matrix of ``P(+1 | s)`` and ``P(-1 | s)``, for exact privacy checks.

        <bounded values>

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
            ``{"randomizer": "one_bit", "epsilon": ..., "bound": ..., "weights": [a, b],
            "fraction_bits": 35}``: the integers of the sampled law.
        """
        return {"randomizer": "one_bit", "epsilon": self.epsilon, "bound": self.bound,
                "weights": [self.law.a, self.law.b], "fraction_bits": self.law.fraction_bits}

    @classmethod
    @from_dict_docstring
    def from_dict(cls, spec):
        """Rebuild a randomizer from the dict :meth:`to_dict` returned.

        <from dict: randomizer : OneBitRandomizer>
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
        for fields in (("epsilon", "bound"), ("weights", "fraction_bits")):
            missing = [field for field in fields if field not in spec]
            if missing:
                raise ValueError(f"the one-bit randomizer specification lacks the field(s) "
                                 f"{missing!r}: {str(spec)[:80]!r}.")
            if fields[0] == "epsilon":
                randomizer = cls(spec["epsilon"], spec["bound"])
        # The integers of the law are re-derived from epsilon: an edited one is refused.
        for field in ("weights", "fraction_bits"):
            if spec[field] != randomizer.to_dict()[field]:
                raise ValueError(f"the one-bit randomizer specification's {field!r} is "
                                 f"{spec[field]!r}, but epsilon={randomizer.epsilon!r} gives "
                                 f"{randomizer.to_dict()[field]!r}: an edited law is refused.")
        return randomizer

    def __eq__(self, other):
        return isinstance(other, OneBitRandomizer) and self.to_dict() == other.to_dict()

    def __hash__(self):
        return hash((self.epsilon, self.bound))

    def __repr__(self):
        return f"OneBitRandomizer(epsilon={self.epsilon}, bound={self.bound})"
