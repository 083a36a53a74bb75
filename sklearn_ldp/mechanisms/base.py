"""The interface every LDP mechanism implements, and the registry that rebuilds them from JSON.

A mechanism has a client side and a server side:

* ``randomize(indices, rng)``: privatize one record per user (``indices`` are flat domain
  cells) and return the reports as one compact array (output indices, packed bits, or
  ``(seed, value)`` pairs; never a float matrix of one-hot rows).
* ``aggregate(reports)``: the sufficient statistic, a 1-D array that is *additive* over
  disjoint sets of reports (so chunked and distributed aggregation just sums). It works in
  bounded memory on any number of reports (it processes them in chunks of
  ``AGGREGATE_CHUNK`` users) and counts in int64, so it cannot overflow.
* ``estimate(statistic)``: an unbiased estimate of the data vector (users per cell).
* ``per_user_variance(gram)`` and ``query_variance(W)``: the exact variance of the workload
  answers that one user of each type contributes (the answers' variance is the sum over
  users), so errors are known before any data is collected.

Everything here is pure numpy; nothing knows about scikit-learn or pandas.
"""

import importlib
import json

import numpy as np

SPEC_VERSION = 1

# Users processed at once by `aggregate` (bounds the memory of the temporaries).
AGGREGATE_CHUNK = 2**18

_REGISTRY = {}


def register(cls):
    """Class decorator: make ``mechanism_from_dict`` able to rebuild ``cls`` by its ``kind``."""
    _REGISTRY[cls.kind] = cls
    return cls


def mechanism_class(kind):
    """The registered mechanism class of the given kind."""
    _import_all_mechanisms()
    if kind not in _REGISTRY:
        raise ValueError(f"unknown mechanism {kind!r}; known: {sorted(_REGISTRY)}.")
    return _REGISTRY[kind]


# Modules that define registered mechanisms.
MECHANISM_MODULES = ("factorization", "gaussian", "haar", "hadamard", "hadamard_coefficient",
                     "local_hashing", "marginal_em", "marginals", "randomized_response",
                     "range_tree", "subset_selection", "unary")


def _import_all_mechanisms():
    """Import every mechanism module once, so that all of them are registered."""
    for module in MECHANISM_MODULES:
        importlib.import_module(f"{__package__}.{module}")


def mechanism_from_dict(spec):
    """Rebuild any registered mechanism from the dict its ``to_dict()`` returned."""
    _import_all_mechanisms()
    if not isinstance(spec, dict) or spec.get("mechanism") not in _REGISTRY:
        raise ValueError(
            f"not a mechanism specification (known mechanisms: {sorted(_REGISTRY)}): "
            f"{str(spec)[:80]!r}."
        )
    if spec.get("version") != SPEC_VERSION:
        raise ValueError(
            f"unsupported specification version {spec.get('version')!r}; this sklearn_ldp "
            f"reads version {SPEC_VERSION}."
        )
    return _REGISTRY[spec["mechanism"]].from_dict(spec)


def mechanism_from_json(text):
    """Rebuild a mechanism from the JSON its ``to_json()`` wrote."""
    return mechanism_from_dict(json.loads(text))


def check_type_indices(indices, n_inputs):
    """User types as an int64 array, or a ValueError if any lies outside ``[0, n_inputs)``."""
    indices = np.asarray(indices)
    if indices.ndim != 1 or (indices.size and not np.issubdtype(indices.dtype, np.integer)):
        raise ValueError("user types must be a 1-D array of integer cell indices.")
    indices = indices.astype(np.int64, copy=False)
    if indices.size and (indices.min() < 0 or indices.max() >= n_inputs):
        raise ValueError(f"user types must be integers in [0, {n_inputs}).")
    return indices


def check_type_counts(type_counts, n_inputs):
    """Users per cell as an int64 array of length ``n_inputs`` (for simulation)."""
    counts = np.asarray(type_counts)
    if counts.shape != (n_inputs,) or not np.issubdtype(counts.dtype, np.integer):
        raise ValueError(f"type_counts must be {n_inputs} integer counts, one per cell.")
    if np.any(counts < 0):
        raise ValueError("type_counts must be non-negative.")
    return counts.astype(np.int64)


def report_dtype(n_values):
    """The smallest unsigned integer type that holds every value in ``[0, n_values)``."""
    for dtype in (np.uint8, np.uint16, np.uint32):
        if n_values <= np.iinfo(dtype).max + 1:
            return dtype
    return np.uint64


def check_index_reports(reports, n_values, name):
    """Reports that are one index in ``[0, n_values)`` per user, as a 1-D integer array."""
    reports = np.asarray(reports)
    if reports.ndim != 1 or not np.issubdtype(reports.dtype, np.integer):
        raise ValueError(
            f"reports of the {name!r} mechanism must be a 1-D array of integer output indices, "
            f"got an array of shape {reports.shape} and dtype {reports.dtype}."
        )
    if reports.size and (reports.min() < 0 or reports.max() >= n_values):
        raise ValueError(
            f"reports of the {name!r} mechanism are indices in [0, {n_values}); got values "
            f"from {reports.min()} to {reports.max()}: they come from another mechanism or "
            "domain."
        )
    return reports


def count_outputs(reports, n_outputs):
    """How many reports name each output index, as int64, counted in chunks."""
    counts = np.zeros(n_outputs, dtype=np.int64)
    for rows in chunks(reports.shape[0]):
        counts += np.bincount(reports[rows], minlength=n_outputs)
    return counts


def check_output_counts(counts, n_outputs, name):
    """A statistic of output counts, or a ValueError if its length is not ``n_outputs``."""
    counts = np.asarray(counts)
    if counts.shape != (n_outputs,):
        raise ValueError(
            f"the statistic of {name!r} holds {n_outputs} output counts, got shape "
            f"{counts.shape}: it comes from another mechanism, epsilon or domain."
        )
    return counts


def chunks(n_rows, chunk=None):
    """Slices covering ``range(n_rows)`` in blocks of ``chunk`` rows (``AGGREGATE_CHUNK``)."""
    chunk = AGGREGATE_CHUNK if chunk is None else chunk
    return [slice(start, min(start + chunk, n_rows)) for start in range(0, n_rows, chunk)]


class Mechanism:
    """Base class of LDP mechanisms (see the module docstring for the contract).

    Subclasses set ``kind`` (registry key), and in ``__init__`` the attributes ``epsilon``,
    ``n_inputs``, ``name`` and ``params`` (the plain-valued constructor arguments other than
    ``n_inputs`` and ``epsilon``, used by :meth:`to_dict`), and implement ``randomize``,
    ``check_reports``, ``aggregate``, ``estimate``, ``n_reports``, ``per_user_variance`` and
    ``query_variance``.
    """

    kind = None

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        raise NotImplementedError

    # ------------------------------------------------------------------ server side
    def check_reports(self, reports):
        """The reports as an array, or a ValueError if they cannot come from this mechanism."""
        raise NotImplementedError

    def aggregate(self, reports):
        raise NotImplementedError

    def estimate(self, statistic):
        raise NotImplementedError

    def n_reports(self, statistic):
        """Number of reports summarized by ``statistic``."""
        raise NotImplementedError

    def simulate_statistic(self, type_counts, rng):
        """Draw ``aggregate(randomize(users))`` directly from its exact distribution.

        ``type_counts[u]`` users of type ``u``. Only mechanisms whose aggregate has a
        distribution that can be sampled without one draw per user implement this.
        """
        raise NotImplementedError(
            f"the {self.name!r} mechanism has no exact simulation of its aggregate; "
            "privatize the records with randomize (or LDPEncoder.transform) instead."
        )

    def sum_of_squared_answers(self, statistic, gram):
        """Unbiased estimate of ``sum_i ||W x_i||^2`` over the users in ``statistic``.

        ``x_i`` is user ``i``'s one-report contribution to the estimate, whose second moment
        for a user of type ``u`` is ``z_u + ||w_u||^2``; that is linear in the user types, so
        plugging in the unbiased data-vector estimate keeps it unbiased. Held-out scoring
        uses it to subtract the held-out answers' own variance.
        """
        second_moments = self.per_user_variance(gram) + np.diag(gram)
        return float(self.estimate(statistic) @ second_moments)

    # ------------------------------------------------------------------ analysis
    def per_user_variance(self, gram):
        """``z_u``: total variance of the workload answers contributed by one user of type u."""
        raise NotImplementedError

    def query_variance(self, workload_matrix):
        """Per-user variance of each query for each type: a ``(p, n)`` matrix."""
        raise NotImplementedError

    def expected_error(self, gram, n_users=1):
        """Worst-case and average-case total variance of the workload for ``n_users``."""
        z = self.per_user_variance(gram)
        return {"worst_case": n_users * float(z.max()), "average_case": n_users * float(z.mean())}

    def supports(self, workload_matrix):
        """Whether every query can be answered without bias (frequency oracles: always)."""
        return True

    def supports_gram(self, gram):
        return True

    @property
    def null_space_dim(self):
        """Dimension of the data directions the mechanism cannot measure (0: full rank)."""
        return 0

    def check_supports(self, workload_matrix):
        """Raise a ValueError if the workload has the wrong width or cannot be answered."""
        if np.shape(workload_matrix)[-1] != self.n_inputs:
            raise ValueError(
                f"the workload has {np.shape(workload_matrix)[-1]} columns but the mechanism "
                f"covers {self.n_inputs} cells."
            )
        if not self.supports(workload_matrix):
            raise ValueError(
                f"the {self.name!r} strategy cannot answer this workload without bias: the "
                "queries are not in the row space of its strategy matrix. Choose a strategy "
                "built for this workload (e.g. strategy='optimized' with workload=...)."
            )

    def strategy_matrix(self):
        """The exact ``m x n`` matrix ``P(report | type)``, for mechanisms small enough.

        Used by the exact privacy check in the tests and to start the optimizer.
        """
        raise ValueError(f"the {self.name!r} mechanism has no finite strategy matrix here.")

    # ------------------------------------------------------------------ serialization
    def to_dict(self):
        return {
            "version": SPEC_VERSION,
            "mechanism": self.kind,
            "epsilon": self.epsilon,
            "n_inputs": self.n_inputs,
            "params": dict(self.params),
        }

    def to_json(self):
        """A JSON string from which ``mechanism_from_json`` rebuilds the same mechanism."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, spec):
        return cls(spec["n_inputs"], spec["epsilon"], **spec.get("params", {}))

    @classmethod
    def from_json(cls, text):
        """Rebuild from JSON; a ValueError if the JSON describes another kind of mechanism."""
        mechanism = mechanism_from_json(text)
        if not isinstance(mechanism, cls):
            raise ValueError(f"the JSON describes a {mechanism.kind!r} mechanism, not "
                             f"{cls.kind!r}.")
        return mechanism

    def fingerprint(self):
        """A value equal for two mechanisms exactly when their reports are interchangeable."""
        return json.dumps(self.to_dict(), sort_keys=True)

    def __eq__(self, other):
        return isinstance(other, Mechanism) and self.fingerprint() == other.fingerprint()

    def __hash__(self):
        return hash(self.fingerprint())

    def __repr__(self):
        params = "".join(f", {key}={value!r}" for key, value in self.params.items())
        return (f"{type(self).__name__}(n_inputs={self.n_inputs}, epsilon={self.epsilon}"
                f"{params})")

