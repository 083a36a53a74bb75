"""The LDP workload factorization mechanism (McKenna, Maity, Mazumdar, Miklau, PVLDB 2020).

A strategy is a column-stochastic matrix ``Q`` (``m`` outputs x ``n`` user types) with
``Q[o, u] = P(report o | type u)``. The server counts the reports, ``y[o]``, and answers a
workload ``W`` with ``V y`` where ``V Q = W``. For a fixed ``Q`` the reconstruction with the
least variance is (Theorem "optimal V")::

    V* = W (Q^T D^-1 Q)^+ Q^T D^-1,        D = Diag(Q 1)   (row sums of Q)

so every workload in the row space of ``Q`` is answered as ``W x_hat`` with the single
unbiased data-vector estimate ``x_hat = (Q^T D^-1 Q)^+ Q^T D^-1 y``. Only the Gram matrix
``W^T W`` is needed for the error formulas.

This module is pure numpy/scipy; nothing here knows about scikit-learn or pandas.
"""

import hashlib

import numpy as np
from scipy import linalg

from ..._validation import EPSILON_RTOL, check_epsilon, check_ldp_strategy, realised_epsilon
from .._base.docstrings import shared_sections
from .._base.exact import TABLE_PRECISION, check_law_size, law_from_table_column, sample_table
from .._base.mechanism import (
    OutputIndexMechanism,
    check_output_counts,
    check_type_counts,
    check_type_indices,
    register,
    report_dtype,
)
from .._base.tables import check_exact_table, quantize_table, realised_matrix

# Relative slack of the float gate on a strategy from outside (kept under its old name for
# importers): a float matrix may exceed its claim by this fraction (rounding) and is then
# quantized into an integer table that meets the claim exactly.
PRIVACY_RTOL = EPSILON_RTOL

# Version of the factorization specification: 2 carries the integer table that is sampled
# (version 1 carried a float matrix, normalized and sampled in floating point).
FACTORIZATION_SPEC_VERSION = 2


# The paper behind this module, cited by a line ``<mmmm20 reference: the part cited>``.
mmmm20_reference = shared_sections({"mmmm20 reference": """\
.. [1] R. McKenna, R. K. Maity, A. Mazumdar and G. Miklau, "A workload-adaptive mechanism
   for linear queries under local differential privacy", PVLDB 13(11):1905-1918, 2020
   ({}).""".format})


def privacy_ratio(Q):
    """Largest ratio ``Q[o, u] / Q[o, u']`` over outputs ``o`` and user types ``u, u'``.

    A strategy is epsilon-LDP exactly when this ratio is at most ``e^epsilon``. Rows that
    are zero everywhere (outputs that never occur) are ignored; a row that is zero for some
    but not all types has an infinite ratio. ``exp`` of :func:`realised_epsilon`, the one
    implementation of the check.

    Examples
    --------
    >>> from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
    >>> Q = randomized_response_strategy(4, 1.0)
    >>> bool(np.isclose(np.log(privacy_ratio(Q)), 1.0))
    True
    """
    return float(np.exp(realised_epsilon(Q)))


def check_strategy(Q, epsilon):
    """Validate a strategy matrix and return the law that is sampled, ``W / 2^52``.

    The float gate of :func:`sklearn_ldp._validation.check_ldp_strategy` (finite,
    non-negative, every column summing to 1 within ``1e-9``, no output possible for some
    inputs only, a realised epsilon at most ``epsilon`` up to rounding), then the integer
    table :func:`strategy_table` and its exact check. Returns the realised matrix
    ``W / 2^52`` (exact float64) without the rows that are zero for every input, or raises a
    ValueError naming the entry, column or row that fails.

    Examples
    --------
    >>> check_strategy([[0.75, 0.25], [0.25, 0.75]], 1.1).tolist()
    [[0.75, 0.25], [0.25, 0.75]]
    """
    return realised_matrix(strategy_table(Q, epsilon))


def strategy_table(Q, epsilon, name="strategy matrix Q"):
    """The integer table sampled for a float strategy ``Q`` claiming ``epsilon``.

    The float gate (:func:`sklearn_ldp._validation.check_ldp_strategy`), then the quantizer
    (:func:`sklearn_ldp.mechanisms._base.tables.quantize_table`, any two inputs are neighbours):
    an int64 table whose columns sum to ``2^52``, every row's ``max <= e^eps min`` decided
    exactly, within a few units of ``2^-52`` of the normalized ``Q`` (plus a uniform mixture
    of weight ``L m 2^-52``, see the quantizer); rows that are zero for every input dropped.

    Examples
    --------
    >>> W = strategy_table([[0.6, 0.4], [0.4, 0.6]], 0.5)
    >>> W.sum(axis=0).tolist() == [2**52, 2**52], bool(abs(W[0, 0] / 2**52 - 0.6) < 1e-13)
    (True, True)
    """
    epsilon = check_epsilon(epsilon)
    normalized, _ = check_ldp_strategy(Q, epsilon, name)
    table = quantize_table(normalized, epsilon, "all", name=name)
    return table[table.max(axis=1) > 0]


class PseudoInverse:
    """Solves with a symmetric positive semi-definite matrix ``M``, through its pseudo-inverse.

    A Cholesky factorization is used when ``M`` is positive definite (the common case, and
    the cheap one); otherwise an eigendecomposition drops the null space, so ``solve`` applies
    ``M^+`` and ``null_space`` spans the directions a strategy cannot measure.
    """

    def __init__(self, M, rtol=1e-10):
        M = np.asarray(M, dtype=float)
        self.size = M.shape[0]
        self._cholesky = None
        try:
            self._cholesky = linalg.cho_factor(M, lower=True, check_finite=False)
            diag = np.diag(self._cholesky[0])
            # Cholesky can "succeed" on a numerically singular matrix; fall back if so.
            if diag.min() ** 2 < rtol * diag.max() ** 2:
                self._cholesky = None
        except linalg.LinAlgError:
            self._cholesky = None
        if self._cholesky is None:
            eigenvalues, eigenvectors = linalg.eigh(M, check_finite=False)
            keep = eigenvalues > rtol * max(eigenvalues.max(), np.finfo(float).tiny)
            self._basis = eigenvectors[:, keep]
            self._inverse_eigenvalues = 1.0 / eigenvalues[keep]
            self.null_space = eigenvectors[:, ~keep]
        else:
            self.null_space = np.zeros((self.size, 0))

    @property
    def rank(self):
        return self.size - self.null_space.shape[1]

    def solve(self, B):
        """``M^+ B`` for a vector or matrix ``B``."""
        if self._cholesky is not None:
            return linalg.cho_solve(self._cholesky, B, check_finite=False)
        coefficients = self._basis.T @ B
        if coefficients.ndim == 2:
            return self._basis @ (self._inverse_eigenvalues[:, None] * coefficients)
        return self._basis @ (self._inverse_eigenvalues * coefficients)


def workload_in_row_space(workload_matrix, null_space, rtol=1e-8):
    """Whether every query (row) is orthogonal to the given null space, up to ``rtol``."""
    if null_space.shape[1] == 0:
        return True
    residual = np.linalg.norm(workload_matrix @ null_space)
    return residual <= rtol * max(np.linalg.norm(workload_matrix), 1.0)


@register
@mmmm20_reference
class FactorizationMechanism(OutputIndexMechanism):
    """An epsilon-LDP mechanism given by a strategy matrix ``Q``.

    Parameters
    ----------
    Q : array of shape (n_outputs, n_inputs)
        Column-stochastic strategy, ``Q[o, u] = P(report o | type u)``. Outputs that never
        occur (zero rows) are removed, every column is divided by its sum (which must be 1
        within ``1e-9``) and the result must meet ``epsilon`` up to float rounding
        (:func:`~sklearn_ldp._validation.check_ldp_strategy`). It is then quantized into an
        integer table ``W`` whose columns sum to ``2^52`` (:func:`strategy_table`), checked
        exactly (``max_u W[o, u] <= e^eps min_u W[o, u]`` on integers), and ``W`` is what is
        sampled (integer inverse CDF on 52 random bits) and decoded: ``Q`` becomes
        ``W / 2^52``, within about ``1e-12`` of the matrix given. Use
        :meth:`from_table` for a table that is already exact.
    epsilon : float
        Privacy budget the strategy was built for.
    name : str
        The strategy's name (e.g. ``"hierarchical"``), kept for display and serialization.
    params : dict, optional
        The parameters the strategy was built with (plain values), kept for display.

    Attributes
    ----------
    table : ndarray of int64 of shape (n_outputs, n_inputs)
        The integer law sampled: ``P(o | u) = table[o, u] / 2^precision`` (read-only).
    precision : int
        ``K = 52``: the columns of ``table`` sum to ``2^K``.
    Q : ndarray of shape (n_outputs, n_inputs)
        The realised strategy ``table / 2^K`` (exact float64), sampled and decoded
        (read-only): estimates are unbiased for exactly what is sampled.
    n_outputs : int
        Number of outputs (rows of ``Q``).
    n_inputs : int
        Number of user types (domain cells, columns of ``Q``).

    See Also
    --------
    optimal_reconstruction : The decoder ``V*`` for any strategy and workload.
    per_user_variance : The per-user variance ``z_u`` of any factorization ``(V, Q)``.
    svd_lower_bound : The least worst-case variance any epsilon-LDP strategy can reach.
    sample_complexity : Users needed for a target variance per query.
    randomized_response_strategy : A closed-form strategy matrix.
    hadamard_strategy : Another closed-form strategy matrix.

    References
    ----------
    <mmmm20 reference: the factorization mechanism, the optimal reconstruction and the variance>

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
    >>> mech = FactorizationMechanism(randomized_response_strategy(3, 1.0), 1.0)
    >>> reports = mech.randomize(np.array([0, 1, 2, 2]), np.random.default_rng(0))
    >>> mech.estimate(mech.aggregate(reports)).shape
    (3,)

    Any column-stochastic matrix is accepted once its privacy is verified: here a
    strategy that reports the parity of the record (two outputs over four cells).

    >>> Q = np.array([[0.6, 0.4, 0.6, 0.4], [0.4, 0.6, 0.4, 0.6]])
    >>> parity = FactorizationMechanism(Q, epsilon=np.log(1.5), name="parity")
    >>> parity.n_outputs, parity.null_space_dim  # it measures 2 of the 4 directions
    (2, 2)
    >>> bool(parity.supports(np.array([[1.0, -1.0, 1.0, -1.0]])))  # the parity query: yes
    True
    >>> bool(parity.supports(np.array([[1.0, 0.0, 0.0, 0.0]])))    # a single cell: no
    False

    The exact law of one report (:meth:`exact_law`):

    >>> mech = FactorizationMechanism.from_table([[3 * 2**50, 2**50], [2**50, 3 * 2**50]],
    ...                                          1.1)
    >>> law = mech.exact_law(1)
    >>> [w * 4 // law.total for w in law.weights]
    [1, 3]
    """

    kind = "factorization"
    spec_version = FACTORIZATION_SPEC_VERSION

    def __init__(self, Q, epsilon, name="custom", params=None):
        self.epsilon = check_epsilon(epsilon)
        self._set_table(strategy_table(Q, self.epsilon), name, params)

    @classmethod
    def from_table(cls, table, epsilon, name="custom", params=None):
        """The mechanism that samples an exact integer table, checked as it is.

        Parameters
        ----------
        table : array-like of int of shape (n_outputs, n_inputs)
            Non-negative integers, every column summing to ``2^52``, no row zero for every
            input, and ``max_u table[o, u] <= e^epsilon min_u table[o, u]`` for every row,
            decided exactly on the integers.
        epsilon : float
            The privacy budget the table must meet.
        name : str, default="custom"
            The strategy's name.
        params : dict, optional
            The parameters the strategy was built with.

        Returns
        -------
        FactorizationMechanism
            The mechanism that samples ``table`` as it is.

        Raises
        ------
        ValueError
            Naming the field ``table``, the row or column and the realised ratio.

        Examples
        --------
        >>> W = [[3 * 2**50, 2**50], [2**50, 3 * 2**50]]
        >>> FactorizationMechanism.from_table(W, 1.1).Q.tolist()
        [[0.75, 0.25], [0.25, 0.75]]
        """
        mechanism = cls.__new__(cls)
        mechanism.epsilon = check_epsilon(epsilon)
        table = check_exact_table(table, mechanism.epsilon, "all", "table of the strategy")
        dead = np.flatnonzero(table.max(axis=1) == 0)
        if dead.size:
            raise ValueError(f"row {int(dead[0])} of the table of the strategy is 0 for every "
                             "input: an output that is never reported must not be listed.")
        mechanism._set_table(table, name, params)
        return mechanism

    def _set_table(self, table, name, params):
        """Install the checked integer table and everything decoded from it."""
        self.precision = TABLE_PRECISION
        self.table = np.array(table, dtype=np.int64)
        self.Q = realised_matrix(self.table, self.precision)
        for matrix in (self.table, self.Q):
            matrix.setflags(write=False)
        self.name = str(name)
        self.params = dict(params or {})
        self.n_outputs, self.n_inputs = self.Q.shape
        row_sums = self.Q.sum(axis=1)
        self._scaled = self.Q / row_sums[:, None]  # D^-1 Q
        self._gram_solver = PseudoInverse(self.Q.T @ self._scaled)  # Q^T D^-1 Q
        # Column o of `_decoder` maps one report o to its contribution to x_hat.
        self._decoder = self._gram_solver.solve(self._scaled.T)  # (n, m) = M^+ Q^T D^-1

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Privatize user types ``indices`` (ints in [0, n_inputs)); one report per user.

        Exact integer inverse CDF: a uniform 52-bit integer ``U`` per user, the report is the
        first output whose cumulative weight in the user's column of ``table`` exceeds ``U``
        (:func:`~sklearn_ldp.mechanisms._base.exact.sample_table`), so
        ``P(o | u) = table[o, u] / 2^52`` exactly.

        Parameters
        ----------
        indices : array-like of int of shape (n_users,)
            Each user's flat domain cell, in ``[0, n_inputs)``.
        rng : numpy.random.Generator
            The source of randomness (seeded for simulations only).

        Returns
        -------
        ndarray of shape (n_users,)
            Each user's output index ``o`` in ``[0, n_outputs)``, drawn with probability
            ``Q[o, u]``, in the smallest unsigned integer type that holds them.
        """
        indices = check_type_indices(indices, self.n_inputs)
        outputs = sample_table(rng, self.table, indices, self.precision)
        return outputs.astype(report_dtype(self.n_outputs))

    def exact_law(self, value):
        # Outputs 0 .. n_outputs - 1, weights the integers of column value of table, total 2^52.
        check_law_size(self.n_outputs, self.kind)
        u = int(check_type_indices(np.array([value]), self.n_inputs)[0])
        return law_from_table_column(self.table, u)

    # ------------------------------------------------------------------ server side
    def simulate_statistic(self, type_counts, rng):
        # One multinomial per user type, O(n m).
        counts = check_type_counts(type_counts, self.n_inputs)
        return rng.multinomial(counts, self.Q.T).sum(axis=0).astype(np.int64)

    def strategy_matrix(self):
        return np.array(self.Q)

    def estimate(self, statistic):
        # x_hat = (Q^T D^-1 Q)^+ Q^T D^-1 y: for every workload W in the row space of Q, W @
        # estimate(y) equals V* y.
        counts = check_output_counts(statistic, self.n_outputs, self.name)
        return self._decoder @ counts.astype(float)

    def sum_of_squared_answers(self, statistic, gram):
        # sum_o y_o ||V*_{:,o}||^2 from the dense Gram (n is small here).
        # Validated as estimate() does: a negative or non-integer statistic is refused, not
        # turned into a negative "sum of squares".
        counts = check_output_counts(statistic, self.n_outputs, self.name)
        return float(self._output_norms(self._dense_gram(gram)) @ counts.astype(float))

    # ------------------------------------------------------------------ analysis
    def supports(self, workload_matrix):
        """Whether the workload lies in the row space of ``Q`` (so it can be answered).

        Parameters
        ----------
        workload_matrix : workload or array-like of shape (n_queries, n_inputs)
            A query matrix or a workload (a large one is checked through its Gram matrix).

        Returns
        -------
        bool
            True when every query is orthogonal to the null space of ``Q`` (up to a
            relative ``1e-8``).
        """
        null_space = self._gram_solver.null_space
        if null_space.shape[1] == 0:
            return True
        return workload_in_row_space(self._support_rows(workload_matrix), null_space)

    def supports_gram(self, gram):
        """Whether the workload with Gram matrix ``W^T W`` lies in the row space of ``Q``.

        Parameters
        ----------
        gram : Gram or ndarray of shape (n_inputs, n_inputs)
            ``W^T W`` (an operator or a dense array).

        Returns
        -------
        bool
            True when ``W^T W`` vanishes on the null space of ``Q`` (up to a relative
            ``1e-8``).
        """
        null_space = self._gram_solver.null_space
        if null_space.shape[1] == 0:
            return True
        gram = self._dense_gram(gram)
        return np.linalg.norm(gram @ null_space) <= 1e-8 * max(np.linalg.norm(gram), 1.0)

    @property
    def null_space_dim(self):
        """Dimension of the data directions the strategy cannot measure (0: full rank)."""
        return self._gram_solver.null_space.shape[1]

    def reconstruction(self, workload_matrix):
        """The optimal reconstruction ``V* = W (Q^T D^-1 Q)^+ Q^T D^-1`` (p x m).

        Parameters
        ----------
        workload_matrix : array-like of shape (n_queries, n_inputs)
            The queries ``W``, one dense row each.

        Returns
        -------
        ndarray of shape (n_queries, n_outputs)
            ``V*``: the answers are ``V* y`` for output counts ``y``, unbiased when the
            workload is supported (:meth:`supports`).
        """
        return np.asarray(workload_matrix, dtype=float) @ self._decoder

    def per_user_variance(self, gram):
        # z_u = sum_o ||V_{:,o}||^2 Q[o,u] - ||w_u||^2 with the optimal reconstruction V*, from the
        # Gram matrix only (an operator or a workload is densified: n is small here).
        gram = self._dense_gram(gram)
        return self._output_norms(gram) @ self.Q - np.diag(gram)

    def _output_norms(self, gram):
        """``||V*_{:,o}||^2`` for every output ``o``, from the Gram matrix ``W^T W``."""
        return np.sum((gram @ self._decoder) * self._decoder, axis=0)

    def query_variance(self, workload_matrix):
        # z[i, u] = sum_o V*[i, o]^2 Q[o, u] - W[i, u]^2.
        W = np.asarray(workload_matrix, dtype=float)
        V = W @ self._decoder
        return (V * V) @ self.Q - W * W

    # ------------------------------------------------------------------ serialization
    def to_dict(self):
        return {
            "version": FACTORIZATION_SPEC_VERSION,
            "mechanism": self.kind,
            "strategy": self.name,
            "params": self.params,
            "epsilon": self.epsilon,
            # The integer law that is sampled: from_dict and the standard-library client
            # check it exactly and sample it as it is (no float matrix to normalize).
            "precision": self.precision,
            "table": self.table.tolist(),
        }

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`: the integer table, checked exactly.

        A spec carrying a float matrix ``"Q"`` (version 1) is refused: the law that is
        sampled must be the one that was shipped and checked, identical on the server and
        on every client, so a float matrix is quantized once, by the constructor, and
        shipped as its table.

        Parameters
        ----------
        spec : dict
            ``"version"`` 2, ``"epsilon"``, ``"precision"`` 52, ``"table"`` (rows of
            integers), and optionally ``"strategy"`` and ``"params"``.

        Returns
        -------
        FactorizationMechanism
            Equal to the mechanism whose :meth:`to_dict` wrote ``spec``.

        Raises
        ------
        ValueError
            Naming the field (``version``, ``precision``, ``table``) and the row, column or
            value that fails (:meth:`from_table`).

        Examples
        --------
        >>> mech = FactorizationMechanism([[0.6, 0.4], [0.4, 0.6]], 0.5)
        >>> FactorizationMechanism.from_dict(mech.to_dict()) == mech
        True
        """
        if spec.get("version") != FACTORIZATION_SPEC_VERSION:
            raise ValueError(f"unsupported 'factorization' specification version "
                             f"{spec.get('version')!r}: this sklearn_ldp reads version "
                             f"{FACTORIZATION_SPEC_VERSION} (an integer 'table').")
        if "Q" in spec:
            raise ValueError("the 'factorization' specification carries a float matrix 'Q': "
                             "version 2 carries the integer 'table' that is sampled; build "
                             "FactorizationMechanism(Q, epsilon) and ship its to_json().")
        precision = spec["precision"]
        if precision != TABLE_PRECISION or isinstance(precision, bool):
            raise ValueError(f"precision of the 'factorization' specification must be "
                             f"{TABLE_PRECISION}, got {precision!r}.")
        table = spec["table"]
        if not isinstance(table, list) or not table or not all(
                isinstance(row, list) for row in table):
            raise ValueError("table of the 'factorization' specification must be a non-empty "
                             "list of rows (lists of integers).")
        for o, row in enumerate(table):
            for value in row:
                if isinstance(value, bool) or not isinstance(value, int):
                    raise ValueError(f"table of the 'factorization' specification must hold "
                                     f"integers; row {o} holds {value!r}.")
                if not 0 <= value <= 2**TABLE_PRECISION:
                    raise ValueError(f"table of the 'factorization' specification must hold "
                                     f"weights in [0, 2**{TABLE_PRECISION}]; row {o} holds "
                                     f"{value!r}.")
        try:
            table = np.array(table, dtype=np.int64)
        except ValueError:
            raise ValueError("table of the 'factorization' specification is not rectangular."
                             ) from None
        return cls.from_table(table, spec["epsilon"], spec.get("strategy", "custom"),
                              spec.get("params"))

    def fingerprint(self):
        """A value equal for two mechanisms whose reports are interchangeable.

        Returns
        -------
        tuple
            ``(kind, epsilon, shape of the table, SHA-256 hex digest of the table)``: the
            same in every process (Python's ``hash`` of bytes is salted per process, so it
            cannot name a strategy across processes or files); ``==`` also compares the
            tables themselves.
        """
        # int64 in C order and little-endian: the same bytes for the same table whatever its
        # memory layout or the machine.
        data = np.ascontiguousarray(self.table, dtype="<i8")
        return (self.kind, self.epsilon, self.table.shape,
                hashlib.sha256(data.tobytes()).hexdigest())

    def __eq__(self, other):
        return isinstance(other, FactorizationMechanism) and (
            self.fingerprint() == other.fingerprint() and np.array_equal(self.table,
                                                                         other.table)
        )

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        return (
            f"FactorizationMechanism(strategy={self.name!r}, epsilon={self.epsilon}, "
            f"n_outputs={self.n_outputs}, n_inputs={self.n_inputs})"
        )


@mmmm20_reference
def optimal_reconstruction(Q, workload_matrix):
    """``V* = W (Q^T D^-1 Q)^+ Q^T D^-1`` for an arbitrary strategy ``Q`` (no privacy check).

    Among the reconstructions ``V`` with ``V Q = W``, ``V*`` has the least total variance
    (MMMM20, Theorem "optimal V"); ``D = Diag(Q 1)`` holds the row sums of ``Q``.

    Parameters
    ----------
    Q : array-like of shape (n_outputs, n_inputs)
        A column-stochastic strategy; every row must have a positive sum (drop the outputs
        that never occur first). Its privacy is not checked.
    workload_matrix : array-like of shape (n_queries, n_inputs)
        The queries ``W``.

    Returns
    -------
    ndarray of shape (n_queries, n_outputs)
        ``V*``. It satisfies ``V* Q = W`` exactly when ``W`` lies in the row space of ``Q``.

    See Also
    --------
    FactorizationMechanism.reconstruction : The same for a checked strategy.
    per_user_variance : The variance of a reconstruction.

    References
    ----------
    <mmmm20 reference: Theorem "optimal V">

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
    >>> Q = randomized_response_strategy(3, 1.0)
    >>> W = np.array([[1.0, 1.0, 0.0]])  # how many users are in cell 0 or 1
    >>> V = optimal_reconstruction(Q, W)
    >>> V.shape, bool(np.allclose(V @ Q, W))
    ((1, 3), True)
    """
    Q = np.asarray(Q, dtype=float)
    scaled = Q / Q.sum(axis=1)[:, None]
    solver = PseudoInverse(Q.T @ scaled)
    return np.asarray(workload_matrix, dtype=float) @ solver.solve(scaled.T)


@mmmm20_reference
def per_user_variance(V, Q, workload_matrix):
    """``z_u = sum_o ||V_{:,o}||^2 Q[o,u] - ||w_u||^2`` for any reconstruction ``V`` with VQ=W.

    ``z_u`` is the total variance over the workload's answers that one user of type ``u``
    contributes (MMMM20, Theorem "variance"): ``N`` users of the worst type give
    ``N max_u z_u``, users spread evenly ``N mean_u z_u``.

    Parameters
    ----------
    V : array-like of shape (n_queries, n_outputs)
        A reconstruction with ``V Q = W`` (not checked), e.g.
        :func:`optimal_reconstruction`.
    Q : array-like of shape (n_outputs, n_inputs)
        The strategy.
    workload_matrix : array-like of shape (n_queries, n_inputs)
        The queries ``W``.

    Returns
    -------
    ndarray of shape (n_inputs,)
        ``z_u`` for every user type ``u``, in squared counts per user.

    See Also
    --------
    optimal_reconstruction : The reconstruction with the least variance.
    sample_complexity : Users needed for a target variance, from ``max_u z_u``.
    Mechanism.per_user_variance : The same for a built mechanism.

    References
    ----------
    <mmmm20 reference: Theorem "variance">

    Examples
    --------
    Randomized response on the histogram of 8 cells at epsilon = 1 (the paper's closed
    form ``(n - 1)(n + 2 e^eps - 2) / (e^eps - 1)^2`` gives 27.1147):

    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.oracles.randomized_response import randomized_response_strategy
    >>> Q, W = randomized_response_strategy(8, 1.0), np.eye(8)
    >>> z = per_user_variance(optimal_reconstruction(Q, W), Q, W)
    >>> z.shape, round(float(z.max()), 4)
    ((8,), 27.1147)
    """
    W = np.asarray(workload_matrix, dtype=float)
    return np.sum(V * V, axis=0) @ np.asarray(Q, dtype=float) - np.sum(W * W, axis=0)


def average_case_objective(Q, gram):
    """``L(Q) = tr[(Q^T D^-1 Q)^+ W^T W]``, the quantity the optimizer minimizes."""
    Q = np.asarray(Q, dtype=float)
    solver = PseudoInverse(Q.T @ (Q / Q.sum(axis=1)[:, None]))
    return float(np.trace(solver.solve(gram)))


@mmmm20_reference
def svd_lower_bound(workload_matrix, epsilon):
    """Lower bound on the worst-case per-user variance of any epsilon-LDP factorization.

    ``(e^-eps ||W||_*^2 - ||W||_F^2) / n`` with ``||W||_*`` the nuclear norm (sum of
    singular values): the average-case bound ``L(Q) >= e^-eps ||W||_*^2`` turned into a
    per-user figure, which bounds the worst case from below too.

    Parameters
    ----------
    workload_matrix : array-like of shape (n_queries, n_inputs)
        The queries ``W`` (dense: its singular values are computed).
    epsilon : float
        The privacy budget.

    Returns
    -------
    float
        No epsilon-LDP factorization mechanism has ``max_u z_u`` below this (squared counts
        per user). The bound is weak at small epsilon: it stays finite as epsilon goes to 0.

    See Also
    --------
    per_user_variance : The per-user variance of a given factorization.
    lower_bound : The analogous singular value bound of the central matrix mechanism.

    References
    ----------
    <mmmm20 reference: Theorem "lower bound" and its worst-case corollary>

    Examples
    --------
    The histogram of 8 cells at epsilon = 1: no strategy goes below 1.94, randomized
    response has 27.11.

    >>> import numpy as np
    >>> round(svd_lower_bound(np.eye(8), 1.0), 2)
    1.94
    """
    W = np.asarray(workload_matrix, dtype=float)
    singular_values = linalg.svdvals(W)
    nuclear = singular_values.sum()
    return float((np.exp(-epsilon) * nuclear**2 - np.sum(W * W)) / W.shape[1])


@mmmm20_reference
def sample_complexity(worst_case_per_user, n_queries, alpha=0.01):
    """Users needed so that the normalized worst-case variance per query is ``alpha``.

    ``N = max_u z_u / (p alpha)`` (MMMM20, corollary "sample complexity"): with ``N`` users,
    the variance of an average query's answer on the *fractions* ``x / N`` is ``alpha`` in
    the worst case over the data.

    Parameters
    ----------
    worst_case_per_user : float
        ``max_u z_u``, the worst-case per-user variance summed over the queries (e.g.
        ``expected_error(gram)["worst_case"]`` for one user).
    n_queries : int
        ``p``, the number of queries in the workload.
    alpha : float, default=0.01
        The target variance per query, on fractions of users.

    Returns
    -------
    float
        The number of users ``N`` (not rounded).

    See Also
    --------
    per_user_variance : The per-user variance ``z_u``.
    Mechanism.expected_error : The worst-case variance of a built mechanism.
    sklearn_ldp.users_needed : Users for a margin of error at a confidence level, in the
        answers' units (a share of users, a mean's unit).

    References
    ----------
    <mmmm20 reference: corollary "sample complexity">

    Examples
    --------
    Randomized response on 8 cells at epsilon = 1 has ``max_u z_u = 27.1147``:

    >>> round(sample_complexity(27.1147, n_queries=8, alpha=0.01))
    339
    """
    return float(worst_case_per_user) / (n_queries * alpha)
