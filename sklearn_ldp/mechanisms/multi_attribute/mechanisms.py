"""Frequencies of several categorical attributes per user: SPL, SMP and RS+FD.

Each user holds one value of each of ``d`` attributes (attribute ``i`` has ``k_i`` values) and
the server wants every attribute's histogram. Three protocols, each with randomized response
("grr") or optimized unary encoding ("oue") as the frequency oracle inside; pure numpy.

* **SPL** (split the budget): every attribute is reported with ``eps / d`` (sequential
  composition: ``eps``-LDP for the whole record).
* **SMP** (sample): each user picks one attribute uniformly at random, reports which, and
  reports its value with the whole ``eps``. The choice does not depend on the data, so the
  record is ``eps``-LDP. Attribute ``i``'s counts are estimated from the ``n_i`` users who
  chose it and scaled by ``N / n_i`` (a simple random sample of the users, so unbiased given
  ``n_i``).
* **RS+FD** (random sampling plus fake data, Arcolezi et al. 2021): each user picks one
  attribute secretly, reports its value through the oracle with budget ``eps'`` and a *fake*
  report for every other attribute (GRR: a uniform value; "oue_z": unary encoding of no value,
  every bit 1 with probability ``q``; "oue_r": unary encoding of a uniform value). The server
  cannot tell the real report from the fakes.

The privacy of RS+FD, checked exactly. With ``L(y | x) = P_oracle(y | x) / P_fake(y)``,
``P(y_1..y_d | x) = prod_i P_fake(y_i) * (1/d) sum_j L(y_j | x_j)``, so the ratio for two
records is ``sum_j L(y_j | x_j) / sum_j L(y_j | x'_j)``. If the records differ in every
attribute, it reaches ``e^eps'`` (every report agreeing with ``x``): RS+FD is
``eps'``-LDP and no better. The paper's amplified ``eps' = ln(d (e^eps - 1) + 1)`` bounds the
ratio by ``e^eps`` only for records that differ in a *single* attribute ``j``, and only when
every attribute's smallest ``L`` is the same (GRR with equal domain sizes, "oue_z"): the
worst ratio is ``(S_j + A_j) / (S_j + B_j)``, with ``S_j`` the sum of the other attributes'
smallest ``L`` and ``(A_j, B_j)`` the most distant pair of ``L`` one report of attribute ``j``
gives two values (GRR: ``(k p, k q)`` and smallest ``k q``; "oue_z": ``(p/q, (1-p)/(1-q))``,
smallest ``(1-p)/(1-q)``; "oue_r", whose fake law is unary encoding of a uniform value, with
``m`` set bits: ``L = l(bit x) k / (m l(1) + (k - m) l(0))``, ``l(1) = p/q``,
``l(0) = (1-p)/(1-q)``).
So here ``neighbourhood="record"`` (default, standard LDP) uses ``eps' = eps``, and
``neighbourhood="attribute"`` the largest ``eps'`` whose exact worst ratio between records
that differ in one attribute is ``e^eps`` (the paper's value for equal domains with GRR, and
for "oue_z"); the mechanism's ``epsilon`` — what a privacy ledger records — is then that
``eps'``, with ``attribute_epsilon = eps``. ``tests/test_multi_attribute.py`` checks both on
the exact output law.

Estimators. For SPL and RS+FD every attribute's support count ``C_v`` (reports supporting
value ``v``) is a sum of independent per-user bits with probability ``P_1`` (users whose value
is ``v``) or ``P_0``; the unbiased estimate is ``(a C_v - b N) / c`` and its variance
``N (a / c)^2 [f P_1 (1 - P_1) + (1 - f) P_0 (1 - P_0)]`` at frequency ``f``, exactly. SMP's
variance, ``N d [f z_own + (1 - f) z_other] + N (d - 1) f (1 - f)`` with the oracle's own
per-user variances ``z`` (its estimate may use the known total), replaces ``E[N / n_i]`` by
``d`` (relative error ``O(d / N)``).

References
----------
.. [1] T. Wang, J. Blocki, N. Li and S. Jha, "Locally differentially private protocols for
   frequency estimation", USENIX Security 2017 (GRR, OUE).
.. [2] N. Wang et al., "Collecting and analyzing multidimensional data with local
   differential privacy", ICDE 2019 (sampling one attribute).
.. [3] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Random sampling plus fake
   data: multidimensional frequency estimates with local differential privacy", CIKM 2021.
"""

import math
import numbers
from fractions import Fraction

import numpy as np

from ..._validation import check_epsilon
from .._base.bits import PRECISION, bernoulli_packed
from .._base.exact import (
    ExactLaw,
    check_law_size,
    integer_ratio_at_most,
    product_law,
    uniform_mixture,
    worst_pair_ratio,
)
from .._base.headers import SpecEquality
from .._base.mechanism import report_dtype
from ..oracles.randomized_response import RandomizedResponse
from ..oracles.unary import OptimizedUnaryEncoding

PROTOCOLS = ("spl", "smp", "rsfd")
ORACLES = {"spl": ("grr", "oue"), "smp": ("grr", "oue"), "rsfd": ("grr", "oue_z", "oue_r")}
NEIGHBOURHOODS = ("record", "attribute")
MAX_ATTRIBUTES = 1024


def rsfd_amplified_epsilon(epsilon, n_attributes):
    """The RS+FD paper's inner budget ``ln(d (e^eps - 1) + 1)``."""
    return math.log(n_attributes * math.expm1(epsilon) + 1)


def _nominal_pq(oracle, size, inner_epsilon):
    e = math.exp(inner_epsilon)
    return (e / (e + size - 1), 1 / (e + size - 1)) if oracle == "grr" else (0.5, 1 / (e + 1))


def rsfd_attribute_ratio(inner_epsilon, shape, oracle):
    """Exact worst ratio ``P(y | x) / P(y | x')`` of RS+FD over records ``x, x'`` that differ
    in one attribute, for the inner budget ``inner_epsilon`` (module docstring)."""
    return _rsfd_ratio([_nominal_pq(oracle, size, inner_epsilon) for size in shape], shape,
                       oracle)


def _rsfd_ratio(pq, shape, oracle):
    """The worst ratio of :func:`rsfd_attribute_ratio` for each attribute's ``(p, q)`` (floats,
    or Fractions for the exact check of the realised probabilities)."""
    smallest, pairs = [], []
    for size, (p, q) in zip(shape, pq, strict=True):
        if oracle == "grr":
            smallest.append(size * q)
            pairs.append((size * p, size * q))
            continue
        high, low = p / q, (1 - p) / (1 - q)
        if oracle == "oue_z":
            smallest.append(low)
            pairs.append((high, low))
        else:  # oue_r: the smallest L has bit x clear and every other bit set; the widest
            # pair one set bit (bit x) among clear ones.
            smallest.append(low * size / ((size - 1) * high + low))
            one_bit = (high + (size - 1) * low) / size
            pairs.append((high / one_bit, low / one_bit))
    total = sum(smallest)
    return max((total - smallest[j] + A) / (total - smallest[j] + B)
               for j, (A, B) in enumerate(pairs))


def rsfd_attribute_epsilon(epsilon, shape, oracle):
    """The largest inner budget of RS+FD whose exact worst ratio between records that differ
    in one attribute is ``e^epsilon`` (slightly below, for floating-point safety)."""
    target = epsilon + math.log1p(-1e-12)

    def excess(inner):
        return math.log(rsfd_attribute_ratio(inner, shape, oracle)) - target

    # The ratio grows with the inner budget from 1 (at 0); widen the bracket until it
    # passes e^epsilon.
    high = epsilon + math.log(len(shape)) + 1.0
    while excess(high) < 0:
        if high >= 50.0:
            raise ValueError(f"no inner budget up to 50 reaches epsilon={epsilon!r} between "
                             f"records that differ in one attribute for shape {shape}.")
        high = min(2 * high, 50.0)
    return _bisect_root(excess, 1e-12, high)


def _bisect_root(function, low, high):
    """The root of an increasing ``function`` on ``[low, high]``, bisected until the interval
    is one float wide: the client bisects the same function the same way, so both sides get
    the same float budget, hence the same sampled integers (brentq's last bits differ)."""
    for _ in range(2000):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        if function(middle) < 0:
            low = middle
        else:
            high = middle
    return (low + high) / 2


def oracle_worst_ratio(oracle):
    """The largest ``P(y | x) / P(y | x')`` of one report of a frequency oracle, as integers
    ``(numerator, denominator)`` of the law it samples: unary encoding (two bits differ)
    ``p (1 - q) / (q (1 - p))`` on its numerators; randomized response, from its exact laws of
    two values (every pair of values has the same worst ratio)."""
    if hasattr(oracle, "p_numerator"):
        one, p, q = 2**PRECISION, int(oracle.p_numerator), int(oracle.q_numerator)
        return p * (one - q), q * (one - p)
    return worst_pair_ratio(oracle.exact_law(0), oracle.exact_law(1))


def realised_pq(oracle):
    """The sampled ``(p, q)`` of an oracle as Fractions (own value / another value reported
    or supported)."""
    if hasattr(oracle, "p_numerator"):
        return (Fraction(int(oracle.p_numerator), 2**PRECISION),
                Fraction(int(oracle.q_numerator), 2**PRECISION))
    law = oracle.exact_law(0)
    return Fraction(int(law.weights[0]), int(law.total)), Fraction(int(law.weights[1]),
                                                                   int(law.total))


def check_composed_budget(ratios, epsilon, what):
    """Refuse unless the product of the ratios ``(numerator, denominator)`` is within
    ``e^epsilon``, decided exactly (sequential composition of independent reports)."""
    numerator = math.prod(int(n) for n, _ in ratios)
    denominator = math.prod(int(d) for _, d in ratios)
    if not integer_ratio_at_most(numerator, denominator, epsilon):
        raise ValueError(f"{what}: the sampled probabilities give a worst ratio "
                         f"{numerator / denominator if denominator else math.inf!r}, above "
                         f"e^epsilon for epsilon={epsilon!r}.")


def split_budget(epsilon, n_parts, build):
    """The oracles of ``n_parts`` independent reports whose composition is within ``e^eps``.

    ``build(share)`` returns the oracles at budget ``share`` each. The share starts at
    ``eps / n_parts``; ``n_parts * share`` can round above ``eps``, and each oracle's sampled
    ratio is only within ``e^share``, so the product of the sampled worst ratios is checked
    exactly and the share lowered by one float step until it passes (deterministic: the
    client lowers it the same way). Oracles without an exact law (floating-point randomized
    response) are returned at ``eps / n_parts``.

    Returns
    -------
    share : float
    oracles : list
    """
    share = epsilon / n_parts
    for _ in range(64):
        oracles = build(share)
        ratios = [oracle_worst_ratio(oracle) for oracle in oracles]
        numerator = math.prod(int(n) for n, _ in ratios)
        denominator = math.prod(int(d) for _, d in ratios)
        if integer_ratio_at_most(numerator, denominator, epsilon):
            return share, oracles
        share = math.nextafter(share, 0.0)
    raise ValueError(f"no budget share near epsilon / {n_parts} composes within "
                     f"epsilon={epsilon!r}.")


def smp_groups(attribute, n_attributes):
    """``(order, bounds)``: the users sorted by the attribute they chose (stably, so in user
    order within each attribute), and where each attribute's users start and stop in it.

    ``order[bounds[i]:bounds[i + 1]]`` are the rows of ``attribute == i``: one stable sort
    (radix sort on small integer dtypes) instead of a mask and a copy per attribute.

    Examples
    --------
    >>> order, bounds = smp_groups(np.array([1, 0, 1, 2], dtype=np.uint8), 3)
    >>> order.tolist(), bounds.tolist()
    ([1, 0, 2, 3], [0, 1, 3, 4])
    """
    order = np.argsort(attribute, kind="stable")
    bounds = np.zeros(n_attributes + 1, dtype=np.int64)
    np.cumsum(np.bincount(attribute, minlength=n_attributes), out=bounds[1:])
    return order, bounds


def _check_shape(shape):
    try:
        shape = tuple(shape)
    except TypeError:
        raise ValueError(f"shape must be a sequence of category counts, got {shape!r}.") \
            from None
    if not 1 <= len(shape) <= MAX_ATTRIBUTES:
        raise ValueError(f"shape must name between 1 and {MAX_ATTRIBUTES} attributes, got "
                         f"{len(shape)}.")
    for size in shape:
        if isinstance(size, bool) or not isinstance(size, numbers.Integral) or size < 2:
            raise ValueError(f"every attribute needs an integer number >= 2 of categories; "
                             f"shape={shape!r}.")
    return tuple(int(size) for size in shape)


class MultiAttributeMechanism(SpecEquality):
    """Per-attribute histograms of ``d`` categorical attributes by SPL, SMP or RS+FD.

    Parameters
    ----------
    shape : sequence of int
        Number of categories of each attribute.
    epsilon : float
        Privacy budget of one user's whole record (standard LDP).
    protocol : {"spl", "smp", "rsfd"}, default="smp"
        How the budget is shared between the attributes (see the module docstring).
    oracle : str, default="grr"
        Frequency oracle inside: "grr" or "oue" (SPL, SMP); "grr", "oue_z" or "oue_r"
        (RS+FD).
    neighbourhood : {"record", "attribute"}, default="record"
        RS+FD only: "attribute" uses the paper's amplified inner budget, which is
        ``epsilon``-LDP only between records that differ in one attribute; ``epsilon_``
        then holds the (larger) standard guarantee.

    Attributes
    ----------
    epsilon : float
        The standard (record-level) LDP guarantee.
    inner_epsilon : float
        Budget of each oracle report.
    oracles : list of Mechanism
        The frequency oracle of each attribute.

    See Also
    --------
    sklearn_ldp.mechanisms.MarginalMechanism : Joint (marginal) tables of the attributes.

    References
    ----------
    .. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Random sampling plus fake
       data: multidimensional frequency estimates with local differential privacy", CIKM
       2021.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> mechanism = MultiAttributeMechanism((3, 4), 2.0, protocol="smp")
    >>> records = np.column_stack([rng.integers(3, size=20_000), rng.integers(4, size=20_000)])
    >>> estimates = mechanism.estimate(mechanism.aggregate(mechanism.randomize(records, rng)))
    >>> [round(float(counts.sum())) for counts in estimates]
    [20000, 20000]
    """

    kind = "multi_attribute"

    def __init__(self, shape, epsilon, protocol="smp", oracle="grr", neighbourhood="record"):
        self.shape = _check_shape(shape)
        self.attribute_epsilon = check_epsilon(epsilon)
        if protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}.")
        if oracle not in ORACLES[protocol]:
            raise ValueError(f"oracle must be one of {ORACLES[protocol]} for protocol "
                             f"{protocol!r}, got {oracle!r}.")
        if neighbourhood not in NEIGHBOURHOODS:
            raise ValueError(f"neighbourhood must be one of {NEIGHBOURHOODS}, got "
                             f"{neighbourhood!r}.")
        if neighbourhood == "attribute" and protocol != "rsfd":
            raise ValueError("neighbourhood='attribute' applies to protocol='rsfd' only (SPL "
                             "and SMP are epsilon-LDP for whole records).")
        self.protocol, self.oracle, self.neighbourhood = protocol, oracle, neighbourhood
        oracle_class = RandomizedResponse if oracle == "grr" else OptimizedUnaryEncoding

        def build(budget):
            return [oracle_class(size, budget) for size in self.shape]

        if protocol == "spl":  # eps / d each, lowered until the product is exactly within
            inner, self.oracles = split_budget(self.attribute_epsilon, len(self.shape), build)
        else:
            inner = self.attribute_epsilon
            if protocol == "rsfd" and neighbourhood == "attribute":
                inner = rsfd_attribute_epsilon(self.attribute_epsilon, self.shape, oracle)
            self.oracles = build(inner)
        self.inner_epsilon = inner
        # The standard guarantee: composition for SPL (d * eps / d), the inner budget for
        # SMP and RS+FD (exactly attained by RS+FD, see the module docstring).
        self.epsilon = self.attribute_epsilon if protocol == "spl" else inner
        self._check_privacy()

    def _check_privacy(self):
        """The exact check of the composed budget on the sampled integers: SPL, the product
        of the attributes' worst ratios within ``e^eps``; SMP and RS+FD between whole records,
        every attribute's within ``e^eps'`` (the sum over the attributes in RS+FD's ratio is
        at most its largest term's ratio); RS+FD between records that differ in one
        attribute, the module docstring's worst ratio on the realised ``p``, ``q`` (exact
        fractions) within ``e^eps``."""
        ratios = [oracle_worst_ratio(oracle) for oracle in self.oracles]
        if self.protocol == "spl":
            check_composed_budget(ratios, self.attribute_epsilon, "SPL over every attribute")
        else:
            for i, ratio in enumerate(ratios):
                check_composed_budget([ratio], self.epsilon, f"attribute {i}'s report")
        if self.neighbourhood == "attribute":
            worst = _rsfd_ratio([realised_pq(oracle) for oracle in self.oracles], self.shape,
                                self.oracle)
            if not integer_ratio_at_most(worst.numerator, worst.denominator,
                                         self.attribute_epsilon):
                raise ValueError(f"RS+FD's worst ratio between records that differ in one "
                                 f"attribute, {float(worst)!r}, is above e^epsilon for "
                                 f"epsilon={self.attribute_epsilon!r}.")

    @property
    def n_attributes(self):
        """Number of attributes ``d``."""
        return len(self.shape)

    def _params(self):
        return {"protocol": self.protocol, "oracle": self.oracle,
                "neighbourhood": self.neighbourhood}

    def to_dict(self):
        """A JSON-ready specification (rebuilt by :meth:`from_dict`)."""
        return {"version": 1, "mechanism": self.kind, "epsilon": self.attribute_epsilon,
                "shape": list(self.shape), "params": self._params()}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field."""
        if not isinstance(spec, dict) or spec.get("mechanism") != cls.kind \
                or spec.get("version") != 1:
            raise ValueError(f"not a version-1 {cls.kind!r} specification: {str(spec)[:80]!r}.")
        params = spec.get("params", {})
        if not isinstance(params, dict) or not set(params) <= {"protocol", "oracle",
                                                               "neighbourhood"}:
            raise ValueError(f"malformed params of a {cls.kind!r} specification: {params!r}.")
        if "shape" not in spec or "epsilon" not in spec:
            raise ValueError(f"a {cls.kind!r} specification needs 'shape' and 'epsilon'.")
        return cls(spec["shape"], spec["epsilon"], **params)

    def __repr__(self):
        return (f"MultiAttributeMechanism(shape={self.shape}, epsilon="
                f"{self.attribute_epsilon}, protocol={self.protocol!r}, oracle="
                f"{self.oracle!r}, neighbourhood={self.neighbourhood!r})")

    # ------------------------------------------------------------------ client side
    def _check_records(self, records):
        records = np.asarray(records)
        if records.ndim != 2 or records.shape[1] != self.n_attributes:
            raise ValueError(f"records must be an (n_users, {self.n_attributes}) integer "
                             f"array, got shape {records.shape}.")
        if records.dtype.kind not in "iu":
            raise TypeError(f"records must hold integer category codes, got dtype "
                            f"{records.dtype}.")
        bad = (records < 0) | (records >= np.array(self.shape))
        if bad.any():
            row, column = np.argwhere(bad)[0]
            raise ValueError(f"records[{row}, {column}] = {records[row, column]} is not a "
                             f"category of attribute {column} (0..{self.shape[column] - 1}).")
        return records

    def _fake(self, i, n, rng):
        """Fake reports of attribute ``i`` for ``n`` users (RS+FD)."""
        oracle = self.oracles[i]
        if self.oracle == "grr":
            return rng.integers(self.shape[i], size=n).astype(report_dtype(self.shape[i]))
        if self.oracle == "oue_z":
            return bernoulli_packed(rng, n, self.shape[i], oracle.q_numerator)
        return oracle.randomize(rng.integers(self.shape[i], size=n), rng)

    def randomize(self, records, rng):
        """Privatize one record per user.

        Parameters
        ----------
        records : ndarray of int, shape (n_users, n_attributes)
            Category codes, column ``i`` in ``[0, shape[i])``.
        rng : numpy.random.Generator
            Source of randomness (the clients').

        Returns
        -------
        reports : dict
            ``"attribute"``: the attribute each user reported (SMP; None otherwise) and
            ``"reports"``: a list with each attribute's oracle reports (for SMP, only the
            users who chose that attribute, in user order).
        """
        return self._randomize(records, rng)[0]

    def randomize_rows(self, records, rng, dtype=np.int64):
        """``report_rows(randomize(records, rng), dtype)``: the same draws, in one pass.

        Examples
        --------
        >>> mechanism = MultiAttributeMechanism((2, 3), 1.0, protocol="smp")
        >>> records = np.array([[0, 2], [1, 0], [1, 1]])
        >>> rows = mechanism.randomize_rows(records, np.random.default_rng(0))
        >>> same = mechanism.report_rows(mechanism.randomize(records, np.random.default_rng(0)))
        >>> bool((rows == same).all())
        True
        """
        reports, groups = self._randomize(records, rng)
        return self.report_rows(reports, dtype, groups)

    def _randomize(self, records, rng):
        """:meth:`randomize`'s reports, and SMP's grouping of the users (else None)."""
        records = self._check_records(records)
        n = records.shape[0]
        if self.protocol == "spl":
            return {"attribute": None,
                    "reports": [oracle.randomize(records[:, i], rng)
                                for i, oracle in enumerate(self.oracles)]}, None
        chosen = rng.integers(self.n_attributes, size=n)
        if self.protocol == "smp":
            attribute = chosen.astype(np.min_scalar_type(self.n_attributes - 1))
            order, bounds = smp_groups(attribute, self.n_attributes)
            # Each user's value of the attribute they chose, grouped by attribute (users in
            # order within a group, as a mask per attribute would select them).
            values = records[order, attribute[order]]
            return {"attribute": attribute,
                    "reports": [oracle.randomize(values[start:stop], rng)
                                for oracle, start, stop in zip(self.oracles, bounds[:-1],
                                                               bounds[1:], strict=True)]}, \
                (order, bounds)
        reports = []
        for i, oracle in enumerate(self.oracles):
            column = self._fake(i, n, rng)
            real = chosen == i
            column[real] = oracle.randomize(records[real, i], rng)
            reports.append(column)
        return {"attribute": None, "reports": reports}, None

    def _columns(self, i):
        """Columns of attribute ``i``'s report in a row: 1 (a value) or its packed bytes."""
        return 1 if self.oracle == "grr" else (self.shape[i] + 7) // 8

    def report_rows(self, reports, dtype=np.int64, groups=None):
        """:meth:`randomize`'s reports as one row per user (the rows of :meth:`exact_law`,
        in ``dtype``): every attribute's report side by side (SPL, RS+FD), or the chosen
        attribute then its report, padded with zeros (SMP; ``groups``: the attribute's
        :func:`smp_groups` when known)."""
        parts = [np.asarray(part) for part in reports["reports"]]
        widths = [self._columns(i) for i in range(self.n_attributes)]
        if self.protocol != "smp":
            n = len(parts[0])
            rows = np.empty((n, sum(widths)), dtype=dtype)
            start = 0
            for part, width in zip(parts, widths, strict=True):
                rows[:, start:start + width] = part.reshape(n, width)
                start += width
            return rows
        attribute = np.asarray(reports["attribute"])
        rows = np.zeros((attribute.shape[0], 1 + max(widths)), dtype=dtype)
        rows[:, 0] = attribute
        order, bounds = groups or smp_groups(attribute, self.n_attributes)
        for i, (part, width) in enumerate(zip(parts, widths, strict=True)):
            # Explicit widths: an attribute no user sampled has an empty part.
            rows[order[bounds[i]:bounds[i + 1]], 1:1 + width] = part.reshape(len(part), width)
        return rows

    def exact_law(self, record):
        """The exact law of one user's report (rows of :meth:`report_rows`).

        SPL: the product of the attributes' oracle laws. SMP: a uniform attribute (``1 /
        d``), then its oracle law. RS+FD: a uniform secret attribute ``j``, its oracle law
        times the fake laws of the others (uniform values for GRR; bits of numerator ``q``
        for "oue_z"; unary encoding of a uniform value for "oue_r"), summed over ``j``.
        Small instances only (the outputs multiply across attributes).

        Parameters
        ----------
        record : sequence of int
            The user's category codes, one per attribute.

        Returns
        -------
        ExactLaw
            Rows of :meth:`report_rows`, integer weights over one common total.
        """
        record = self._check_records(np.asarray([record]))[0].tolist()
        laws = [oracle.exact_law(code) for oracle, code in zip(self.oracles, record,
                                                                 strict=True)]
        columns = [self._columns(i) for i in range(self.n_attributes)]
        if self.protocol == "spl":
            return product_law(laws, np.int64, self.kind)
        if self.protocol == "smp":
            width = max(columns)
            outputs = []
            for i, law in enumerate(laws):
                rows = np.zeros((len(law.weights), 1 + width), dtype=np.int64)
                rows[:, 0] = i
                rows[:, 1:1 + columns[i]] = np.asarray(law.outputs).astype(np.int64).reshape(
                    len(law.weights), -1)
                outputs.append(rows)
            return uniform_mixture(laws, np.concatenate(outputs))
        fakes = [self._fake_law(i) for i in range(self.n_attributes)]
        secret = [product_law([laws[i] if i == j else fakes[i]
                               for i in range(self.n_attributes)], np.int64, self.kind)
                  for j in range(self.n_attributes)]
        total = uniform_mixture(secret, secret[0].outputs)
        size = len(secret[0].weights)
        # The same outputs for every secret attribute: sum the d blocks of the mixture.
        weights = [sum(total.weights[j * size + o] for j in range(self.n_attributes))
                   for o in range(size)]
        return ExactLaw(secret[0].outputs, weights, total.total)

    def _fake_law(self, i):
        """The exact law of attribute ``i``'s fake report (RS+FD)."""
        oracle, k = self.oracles[i], self.shape[i]
        if self.oracle == "grr":
            return ExactLaw(np.arange(k).astype(report_dtype(k)), [1] * k, k)
        if self.oracle == "oue_r":
            laws = [oracle.exact_law(v) for v in range(k)]  # the same total 2^(52 k)
            return ExactLaw(laws[0].outputs, [sum(int(law.weights[o]) for law in laws)
                                              for o in range(len(laws[0].weights))],
                            k * int(laws[0].total))
        one, q = 2**PRECISION, int(oracle.q_numerator)
        check_law_size(2**k, self.kind)
        codes = np.arange(2**k, dtype=np.int64)
        bits = ((codes[:, None] >> np.arange(k)) & 1).astype(np.uint8)
        ones = bits.sum(axis=1).tolist()
        return ExactLaw(np.packbits(bits, axis=1, bitorder="little"),
                        [q**c * (one - q)**(k - c) for c in ones], one**k)

    # ------------------------------------------------------------------ server side
    def aggregate(self, reports):
        """Each attribute's oracle statistic ``[C_0 .. C_(k-1), n_i]``, concatenated (int64).

        Every oracle checks its reports; for SMP the reported attributes must be valid and
        match the number of reports of each attribute.
        """
        if not isinstance(reports, dict) or set(reports) != {"attribute", "reports"}:
            raise ValueError("reports must be the dict that randomize returns (keys "
                             "'attribute' and 'reports').")
        parts = reports["reports"]
        if not isinstance(parts, (list, tuple)) or len(parts) != self.n_attributes:
            raise ValueError(f"reports['reports'] must hold {self.n_attributes} arrays, one "
                             "per attribute.")
        lengths = [len(part) for part in parts]
        if self.protocol == "smp":
            attribute = np.asarray(reports["attribute"])
            if attribute.ndim != 1 or attribute.dtype.kind not in "iu" or (
                    attribute.size and (attribute.min() < 0
                                        or attribute.max() >= self.n_attributes)):
                raise ValueError(f"reports['attribute'] must be attribute indices in [0, "
                                 f"{self.n_attributes}).")
            expected = np.bincount(attribute, minlength=self.n_attributes).tolist()
            if expected != lengths:
                raise ValueError(f"the reports per attribute {lengths} do not match the "
                                 f"reported attributes {expected}.")
        elif len(set(lengths)) > 1:
            raise ValueError(f"every attribute needs one report per user; got {lengths}.")
        return np.concatenate([oracle.aggregate(part)
                               for oracle, part in zip(self.oracles, parts, strict=True)])

    def _split(self, statistic):
        statistic = np.asarray(statistic)
        expected = sum(self.shape) + self.n_attributes
        if statistic.shape != (expected,):
            raise ValueError(f"the statistic has {expected} entries (each attribute's support "
                             f"counts and report count), got shape {statistic.shape}.")
        bounds = np.cumsum([0] + [size + 1 for size in self.shape])
        parts = [oracle._check_statistic(statistic[start:stop])
                 for oracle, start, stop in zip(self.oracles, bounds[:-1], bounds[1:],
                                                strict=True)]
        totals = {int(part[-1]) for part in parts}
        if self.protocol != "smp" and len(totals) > 1:
            raise ValueError(f"the attributes' report counts {sorted(totals)} differ: every "
                             "user reports every attribute.")
        return parts

    def _linear(self, i):
        """``(a, b, c, P_0, P_1)`` of attribute ``i``: estimate ``(a C - b N) / c``; support
        probabilities of a user without / with the value (SPL and RS+FD)."""
        oracle, d, k = self.oracles[i], self.n_attributes, self.shape[i]
        p, q = oracle.p, oracle.q
        if self.protocol == "spl":
            return 1.0, q, p - q, q, p
        fake = {"grr": 1.0 / k, "oue_z": q, "oue_r": p / k + q * (k - 1) / k}[self.oracle]
        b = (d - 1) * fake + q
        return float(d), b, p - q, (q + (d - 1) * fake) / d, (p + (d - 1) * fake) / d

    def estimate(self, statistic):
        """Unbiased count estimates of every attribute's categories.

        Parameters
        ----------
        statistic : ndarray of int64
            :meth:`aggregate`'s statistic (or a sum of several).

        Returns
        -------
        estimates : list of ndarray of float
            Attribute ``i``'s estimated user counts, shape ``(shape[i],)``.
        """
        parts = self._split(statistic)
        if self.protocol == "smp":
            n_users = sum(int(part[-1]) for part in parts)
            estimates = []
            for oracle, part in zip(self.oracles, parts, strict=True):
                n_i = int(part[-1])
                if n_i == 0:
                    raise ValueError("an attribute was chosen by no user: its counts cannot "
                                     "be estimated (collect more reports).")
                estimates.append(oracle.estimate(part) * (n_users / n_i))
            return estimates
        estimates = []
        for i, part in enumerate(parts):
            a, b, c, _, _ = self._linear(i)
            n = float(part[-1])
            estimates.append((a * part[:-1].astype(float) - b * n) / c)
        return estimates

    def count_variance(self, i, frequencies, n_users):
        """Variance of attribute ``i``'s count estimates for users with the given value
        frequencies (exact for SPL and RS+FD; SMP up to ``O(d / N)``, module docstring).

        Parameters
        ----------
        i : int
            The attribute.
        frequencies : array-like of float, shape (shape[i],)
            True fraction of users holding each value.
        n_users : int
            Number of users ``N``.

        Returns
        -------
        variance : ndarray of float, shape (shape[i],)
            Variance of each count estimate.
        """
        f = np.asarray(frequencies, dtype=float)
        if self.protocol == "smp":
            # SMP decodes through the oracle's own estimate (OUE's uses the known total,
            # which lowers the variance below the plain (C - n q) / (p - q)): its per-user
            # variances of one cell's count, for a user of that value and of another, are
            # read from the oracle (``query_variance`` of the first cell's query).
            first = np.zeros((1, self.shape[i]))
            first[0, 0] = 1.0
            own, other = self.oracles[i].query_variance(first)[0, :2]
            d = self.n_attributes
            return n_users * (d * (f * own + (1 - f) * other) + (d - 1) * f * (1 - f))
        a, _, c, P0, P1 = self._linear(i)
        return n_users * (a / c) ** 2 * (f * P1 * (1 - P1) + (1 - f) * P0 * (1 - P0))

    def histogram_variance(self, n_users=1):
        """Worst case over the data of the total variance of every attribute's counts.

        The sum over the attributes ``i`` and their values ``v`` of ``count_variance``, the
        error of the per-attribute histograms (the one-way marginals) that ``strategy="auto"``
        compares with the other candidates. For SPL and RS+FD each cell's variance is linear
        in its frequency, so the sum over a column's cells, whose frequencies add up to 1,
        does not depend on the data. SMP adds ``N (d - 1) f (1 - f)`` per cell, whose sum
        ``N (d - 1) (1 - sum_v f_v^2)`` is largest for uniform values: the worst case is at
        uniform frequencies for every protocol, where it is computed.

        Parameters
        ----------
        n_users : int, default=1
            Number of users ``N`` (the default gives the per-user variance).

        Returns
        -------
        variance : float
            ``sum_i sum_v Var[count estimate of value v of attribute i]`` at its worst.
        """
        return float(sum(self.count_variance(i, np.full(k, 1.0 / k), n_users).sum()
                         for i, k in enumerate(self.shape)))

    def expected_error(self, n_users=1):
        """Per attribute, the worst-case and the uniform-data variance of a count estimate.

        Returns
        -------
        errors : list of dict
            ``{"worst_case": ..., "average_case": ...}`` for each attribute; the worst case
            over a cell's frequency in ``[0, 1]``.
        """
        errors = []
        for i, k in enumerate(self.shape):
            grid = np.linspace(0.0, 1.0, 1001)  # each variance is a quadratic in f
            errors.append({"worst_case": float(self.count_variance(i, grid, n_users).max()),
                           "average_case": float(self.count_variance(i, np.full(k, 1 / k),
                                                                     n_users).mean())})
        return errors
