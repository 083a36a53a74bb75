"""LDPEncoder's RAPPOR: a column of strings through Bloom filters and cohorts.

The part of :class:`~sklearn_ldp.encoder.LDPEncoder` that fits and privatizes a column
declared as ``"strings"`` with ``strategy="rappor"`` (Erlingsson et al. 2014, as Chrome
deployed it) or with an explicit
:class:`~sklearn_ldp.mechanisms.heavy_hitters.rappor.RapporMechanism` as the strategy. A mixin
of the encoder: it uses the encoder's parameters and the heavy-hitter mixin's column reading.

``strategy="rappor"`` on a *listed* column stays symmetric unary encoding (RAPPOR's basic
one-time form, one bit per category); on a column declared as ``"strings"`` it is the full
protocol, with the paper's Chrome parameters (128 Bloom bits, ``n_hashes`` hash functions
(default 2), 64 cohorts, ``p = 0.5``, ``q = 0.75``) and ``f`` set so that the permanent
response is ``epsilon``-LDP: ``epsilon = eps_inf = 2 h ln((1 - f/2) / (f/2))``, i.e. ``f = 2 /
(1 + e^(epsilon / 2h))`` (``epsilon = 4 ln 3`` gives the paper's ``f = 0.5``). One report is
then ``epsilon_1``-LDP, less than ``epsilon`` (``mechanism_.epsilon``).
"""

import math
from collections.abc import Mapping

import numpy as np

from ._encoder_heavy_hitters import is_value_declaration
from .mechanisms.heavy_hitters.rappor import RapporMechanism
from .reports import LDPReports

# The paper's Chrome collections (Erlingsson et al. 2014, section 5).
CHROME_PARAMETERS = {"n_bits": 128, "n_hashes": 2, "n_cohorts": 64, "p": 0.5, "q": 0.75}
# Longest string without max_string_bytes (the mechanism's own default).
DEFAULT_RAPPOR_STRING_BYTES = 64


def rappor_for_epsilon(epsilon, n_hashes=2, max_string_bytes=DEFAULT_RAPPOR_STRING_BYTES,
                       hash_seed=0):
    """The Chrome-parameter RAPPOR whose permanent response is ``epsilon``-LDP (at most).

    Parameters
    ----------
    epsilon : float
        ``eps_inf``, the budget of everything a user reports about one value.
    n_hashes : int, default=2
    max_string_bytes : int, default=64
    hash_seed : int, default=0

    Returns
    -------
    RapporMechanism

    Raises
    ------
    ValueError
        When no ``f`` in ``(0, 1)`` realizes ``epsilon`` (too small or too large for the
        2^-52 grid).

    Examples
    --------
    >>> mechanism = rappor_for_epsilon(4 * math.log(3))
    >>> mechanism.f, mechanism.epsilon_inf <= 4 * math.log(3)
    (0.5, True)
    """
    f = 2 / (1 + math.exp(epsilon / (2 * n_hashes)))
    parameters = {**CHROME_PARAMETERS, "n_hashes": n_hashes}
    for _ in range(64):
        if not 0 < f < 1:
            break
        mechanism = RapporMechanism(**parameters, f=f, max_string_bytes=max_string_bytes,
                                    hash_seed=hash_seed)
        if mechanism.epsilon_inf <= epsilon:
            return mechanism
        f = math.nextafter(f, 1.0)  # more noise: the float f fell below the exact one
    raise ValueError(f"epsilon={epsilon!r} cannot be realized by RAPPOR's f in (0, 1) with "
                     f"{n_hashes} hash functions.")


def _is_rappor_strategy(strategy):
    return isinstance(strategy, RapporMechanism)


class RapporEncoderMixin:
    """Fitting and privatizing a RAPPOR column (see the module docstring)."""

    def _rappor_mode(self):
        """Whether the encoder reports a declared column by RAPPOR: an explicit
        RapporMechanism, ``strategy="bloom_rappor"``, or ``strategy="rappor"`` on a column
        declared as ``"strings"`` (a bit length is refused by :meth:`_fit_rappor`)."""
        if _is_rappor_strategy(self.strategy) or self.strategy == RapporMechanism.kind:
            return True
        return self.strategy == "rappor" and isinstance(self.categories, Mapping) and any(
            is_value_declaration(value) for value in self.categories.values())

    def _fit_rappor(self, X, epsilon):
        """``fit`` for RAPPOR: the mechanism (a fresh public hash seed) and the column."""
        column, value_type, _ = self._heavy_hitter_column()
        if value_type != "strings":
            raise ValueError(f"RAPPOR reports strings: declare categories={{{column!r}: "
                             f"'strings'}}, got {self.categories[column]!r}.")
        self._check_handling()
        if self.handle_unknown != "error" or self.unknown_category is not None:
            raise ValueError(f"handle_unknown={self.handle_unknown!r}: the column {column!r} "
                             "has no list of categories, so no value is unknown; leave "
                             "handle_unknown='error' and unknown_category=None.")
        for name in ("bounds", "sketch_width", "extension_bits"):
            if getattr(self, name) is not None:
                raise ValueError(f"{name}={getattr(self, name)!r} is not a parameter of "
                                 f"RAPPOR; leave it None.")
        rng = np.random.default_rng(self._random_state())
        if _is_rappor_strategy(self.strategy):
            mechanism = self.strategy  # an explicit parameter set, used as given
        else:
            size = self.max_string_bytes or DEFAULT_RAPPOR_STRING_BYTES
            mechanism = rappor_for_epsilon(
                epsilon, 2 if self.n_hashes is None else self.n_hashes, size,
                int(rng.integers(2**63)))  # a fresh public hash seed per collection
        self._check_missing_category(
            column, lambda value: mechanism.fingerprints(np.array([value], dtype=object)))
        if X is not None:
            self._heavy_hitter_values(X, column, reset=True)
        self._rappor_column = column
        # Per user of a cohort: the variance of one Bloom bit count's estimate, for a user
        # whose bit is set (q*) or clear (p*); candidate errors come from RapporEstimator.
        qs, ps = mechanism.q_star, mechanism.p_star
        per_bit = np.array([qs * (1 - qs), ps * (1 - ps)]) / (qs - ps) ** 2
        self._one_column_attributes(X, column, mechanism, mechanism.kind, mechanism.epsilon_inf,
                                    (per_bit.max(), per_bit[1]),
                                    "Bloom bit count of one cohort", rng)
        return self

    def _transform_rappor(self, X):
        """One report per row of ``X``, from fresh users (one-off collection)."""
        values = self._heavy_hitter_values(X, self._rappor_column)
        array = np.asarray(values.to_numpy(), dtype=object)
        self._charge_collection(array.shape[0], "transform")
        return LDPReports(self.mechanism_.randomize(array, self._generator()), self.mechanism_)
