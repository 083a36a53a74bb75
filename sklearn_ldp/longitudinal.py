"""Collection repeated over time through the front door: :class:`LongitudinalEncoder`.

The same users report every round (a day of telemetry). The clients keep a memory, the
:class:`LongitudinalState`: a secret per user, from which the permanent randomized response
of every value is derived (memoization, :mod:`sklearn_ldp.mechanisms.longitudinal.mechanisms`), so
that
averaging the rounds reveals at most the permanent response, never the value; restoring a
saved state, or a second process, can never give a value a second permanent response. In a
simulation the server holds the state of every simulated user, keeps it between rounds and
may save it to a sealed file (:meth:`LongitudinalState.save`); on a device the
standard-library client keeps its own state file. Rows are the same users in the same order
every round.

Ledger rule (module :mod:`sklearn_ldp.deploy.budget`, section "Longitudinal collection"): a user
who reports ``c`` distinct values over the rounds is charged ``c * epsilon_perm`` (one
permanent response per value; RAPPOR's and Arcolezi et al.'s accounting). ``c`` is not
visible to the server and must not steer the ledger (a charge that depends on the data
leaks), but after ``T`` rounds ``c <= min(T, max_values)``, with ``max_values`` enforced by
the clients (a new value past the cap is refused, not reported). So each of the first
``max_values`` rounds of a collection is charged ``epsilon_perm`` and later rounds 0 (an
audit entry). ``T * epsilon_1`` is *not* a bound: the rounds of one value share their
permanent response, so they are not independent reports (two memoized L-GRR rounds over
50 values with ``epsilon_perm = 4``, ``epsilon_1 = 1`` are exactly 2.22-LDP, not 2;
``tests/test_longitudinal_front.py``). Not covered by any of it: the pattern of *which*
rounds changed value (see ``docs/longitudinal.md``).

<longitudinal references>
"""

import hashlib
import json
import math
import numbers
import os
import secrets
import sys
import tempfile
import zipfile

try:  # POSIX advisory locks; elsewhere a state file is not locked (see _StateLock)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.utils.validation import check_is_fitted

from ._glue import refuse_malformed
from ._validation import (
    FreshEntropyMixin,
    check_epsilon,
    check_positive_int,
    did_you_mean,
    store_params,
)
from .deploy.budget import EVERYONE, charge_ledger, resolve_ledger
from .deploy.limits import check_size, checksum_mismatch, fsync_directory, get_limits
from .mechanisms._base.docstrings import shared_sections
from .mechanisms.longitudinal.mechanisms import (
    LONGITUDINAL_PROTOCOLS,
    DBitFlipPM,
    LongitudinalMechanism,
    MemoState,
    OneBitMeanPM,
)

# The references of the longitudinal collection, written once: this module's docstring,
# LongitudinalEncoder's and LongitudinalEstimator's name them as ``<longitudinal references>``,
# LongitudinalReports' as ``<longitudinal references: 1>`` (the first only).
_REFERENCES = (
    """.. [1] U. Erlingsson, V. Pihur and A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", ACM CCS 2014.""",
    """.. [2] B. Ding, J. Kulkarni and S. Yekhanin, "Collecting telemetry data privately",
   NeurIPS 2017.""",
    """.. [3] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna and X. Xiao, "Improving the utility of
   locally differentially private protocols for longitudinal and multidimensional frequency
   estimates", Digital Communications and Networks, 2022.""",
)
# ``<longitudinal references: n>`` cites the first n only.
longitudinal_references = shared_sections({"longitudinal references": lambda first: "\n".join(
    ("References", "----------", *_REFERENCES[:int(first) if first else None]))})
longitudinal_references(sys.modules[__name__])

STRATEGIES = (*sorted(LONGITUDINAL_PROTOCOLS), "dbitflip", "1bitmean")
STATE_FORMAT = "sklearn_ldp.longitudinal_state"
# 3: permanent responses from one-block PRF messages (sklearn_ldp.mechanisms._base.prf); a
# version-2 file's secrets would give other responses, so it is refused.
STATE_VERSION = 3
# The arrays of a state file: the users' secrets (the permanent responses are derived from
# them, never stored) and the (user, value) pairs reported so far (the ledger's count).
_MEMO_ARRAYS = ("keys", "secrets")


def _spec_digest(spec):
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _round_charge(epsilon_perm, cap, charged):
    """What one round adds to the ledger: ``min(epsilon_perm, cap - charged)``, never < 0
    (``epsilon_perm`` for each of the first ``max_values`` rounds, then 0)."""
    return max(0.0, min(epsilon_perm, cap - charged))


@longitudinal_references
class LongitudinalReports:
    """One round of longitudinal reports, with the specification that produced them.

    Parameters
    ----------
    reports : ndarray or tuple of ndarray
        The mechanism's reports, one per user (see
        :mod:`sklearn_ldp.mechanisms.longitudinal.mechanisms`).
    spec : dict
        :attr:`LongitudinalEncoder.spec_` of the encoder that produced them.
    round : int
        The round's number in its collection (0 for the first).
    mechanism : object, default=None
        The mechanism of ``spec``, already built (rebuilt from ``spec`` when None).

    Attributes
    ----------
    mechanism : LongitudinalMechanism, DBitFlipPM or OneBitMeanPM
        Rebuilt from ``spec``.
    n_reports : int
        Number of users who reported.

    See Also
    --------
    LongitudinalEncoder.transform : Produces them.
    sklearn_ldp.estimators.longitudinal.LongitudinalEstimator : Decodes them.

    <longitudinal references: 1>

    Examples
    --------
    >>> enc = LongitudinalEncoder(categories=["a", "b"], random_state=0).fit()
    >>> state = enc.new_state(3)
    >>> reports = enc.transform(["a", "b", "a"], state=state)
    >>> reports.round, reports.n_reports
    (0, 3)
    """

    def __init__(self, reports, spec, round, mechanism=None):
        self.spec = dict(spec)
        # The encoder passes its own mechanism (rebuilding one solves for the instantaneous
        # step); a mechanism given must be the specification's.
        if mechanism is None:
            mechanism = _build_mechanism(self.spec)
        elif mechanism.to_dict() != self.spec.get("mechanism"):
            raise ValueError(f"mechanism {mechanism!r} is not the one of the specification "
                             f"{str(self.spec)[:80]!r}.")
        self.mechanism = mechanism
        self.reports = reports
        self.round = check_positive_int(round, "round", minimum=0)
        # The mechanism's own check of the reports (shapes, values, bits).
        self.statistic = self.mechanism.aggregate(reports)
        self.n_reports = int(self.statistic[-1])

    def __repr__(self):
        return (f"LongitudinalReports(round={self.round}, n_reports={self.n_reports}, "
                f"mechanism={self.mechanism!r})")


def _build_mechanism(spec):
    """The mechanism of an encoder's specification (a ValueError names a bad one)."""
    if not isinstance(spec, dict) or "mechanism" not in spec:
        raise ValueError(f"not a longitudinal specification: {str(spec)[:80]!r}.")
    classes = {cls.kind: cls for cls in (LongitudinalMechanism, DBitFlipPM, OneBitMeanPM)}
    cls = classes.get(spec["mechanism"].get("mechanism") if isinstance(spec["mechanism"], dict)
                      else None)
    if cls is None:
        raise ValueError(f"unknown longitudinal mechanism in {str(spec)[:80]!r}.")
    return cls.from_dict(spec["mechanism"])


class LongitudinalState:
    """The clients' memory across rounds of one collection (held by the caller).

    Made by :meth:`LongitudinalEncoder.new_state`; pass it to every
    :meth:`LongitudinalEncoder.transform` of the collection. It keeps each user's 128-bit
    secret (the permanent responses are derived from it, never stored: see
    :class:`~sklearn_ldp.mechanisms.longitudinal.mechanisms.MemoState`), the (user, value) pairs
    reported so far (what ``max_values`` caps), the number of rounds, the epsilon charged to
    the ledger so far and an identifier of the collection (in the ledger's descriptions).
    Row ``i`` is the same user every round. A state loaded or saved holds the file's lock
    until :meth:`close` (or the end of a ``with`` block).

    Parameters
    ----------
    spec : dict
        The encoder's :attr:`~LongitudinalEncoder.spec_`.
    n_users : int
        Number of users.
    memo : MemoState or dict of ndarray
        The users' memory: a :class:`~sklearn_ldp.mechanisms.longitudinal.mechanisms.MemoState`, or
        its
        arrays ``secrets`` (``(n_users, 2)`` uint64) and ``keys`` (sorted int64).
    rounds : int, default=0
        Rounds already reported.
    charged_epsilon : float, default=0.0
        Epsilon charged to the ledger so far for this collection.
    collection_id : str, default=None
        Identifier of the collection; a fresh random one when None.

    See Also
    --------
    LongitudinalEncoder.new_state : Make one.
    LongitudinalEncoder.load_state : Read a saved one, checked against the encoder.

    References
    ----------
    .. [1] B. Ding, J. Kulkarni and S. Yekhanin, "Collecting telemetry data privately",
       NeurIPS 2017 (memoization).

    Examples
    --------
    >>> enc = LongitudinalEncoder(categories=["a", "b", "c"], random_state=0).fit()
    >>> state = enc.new_state(2)
    >>> _ = enc.transform(["a", "c"], state=state)
    >>> _ = enc.transform(["a", "c"], state=state)
    >>> state.rounds, state.n_entries
    (2, 2)
    """

    def __init__(self, spec, n_users, memo, rounds=0, charged_epsilon=0.0, collection_id=None):
        self.spec = dict(spec)
        self.n_users = check_positive_int(n_users, "n_users", minimum=0)
        if not isinstance(memo, MemoState):
            memo = MemoState(_build_mechanism(self.spec), self.n_users, secrets=memo["secrets"],
                             keys=memo["keys"])
        self.memo = memo
        self.rounds = check_positive_int(rounds, "rounds", minimum=0)
        if isinstance(charged_epsilon, bool) or not isinstance(
                charged_epsilon, numbers.Real) or not (math.isfinite(charged_epsilon)
                                                       and charged_epsilon >= 0):
            raise ValueError(f"charged_epsilon must be a finite number >= 0, got "
                             f"{charged_epsilon!r}.")
        self.charged_epsilon = float(charged_epsilon)
        if collection_id is not None and not isinstance(collection_id, str):
            raise ValueError(f"collection_id must be a string, got {collection_id!r}.")
        self.collection_id = collection_id if collection_id is not None else secrets.token_hex(8)
        self._locks = {}  # path -> _StateLock held while this state uses the file

    @property
    def n_entries(self):
        """Number of (user, value) pairs reported so far."""
        return self.memo.n_entries

    def close(self):
        """Release the locks of the state files this state loaded or saved (another process
        may then use them). Also done when the state is garbage-collected."""
        locks, self._locks = getattr(self, "_locks", {}), {}
        for lock in locks.values():
            lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def __del__(self):
        self.close()

    def __getstate__(self):
        # A copy (pickle, deepcopy) holds no lock: the descriptors are this process's.
        state = dict(self.__dict__)
        state["_locks"] = {}
        return state

    def _lock(self, path):
        """Hold the lock of ``path`` (taken once; a ValueError if another writer holds it)."""
        key = os.path.realpath(path)
        if key not in self._locks:
            self._locks[key] = _StateLock(path)
        return self._locks[key]

    def values_per_user(self):
        """Distinct values each user has reported so far.

        Returns
        -------
        ndarray of int64, shape (n_users,)
            Memoized responses per user (what ``max_values`` caps).
        """
        return self.memo.values_per_user()

    def __repr__(self):
        return (f"LongitudinalState(n_users={self.n_users}, rounds={self.rounds}, "
                f"n_entries={self.n_entries}, charged_epsilon={self.charged_epsilon:g})")

    # ------------------------------------------------------------------ files
    def _arrays(self):
        return {"keys": self.memo.keys, "secrets": self.memo.secrets}

    def _header(self):
        return {"format": STATE_FORMAT, "version": STATE_VERSION, "spec": self.spec,
                "n_users": self.n_users, "rounds": self.rounds,
                "charged_epsilon": self.charged_epsilon, "collection_id": self.collection_id,
                "arrays": {name: [array.dtype.str, list(array.shape)]
                           for name, array in self._arrays().items()}}

    @staticmethod
    def _digest(header, arrays):
        """SHA-256 over the canonical JSON header and every array's bytes (in name order)."""
        digest = hashlib.sha256(json.dumps(header, sort_keys=True, separators=(",", ":"),
                                           ensure_ascii=True, allow_nan=False).encode("ascii"))
        for name in sorted(arrays):
            digest.update(name.encode("ascii") + b"\0")
            digest.update(np.ascontiguousarray(arrays[name]).tobytes())
        return digest.hexdigest()

    def save(self, path):
        """Write the state to ``path`` (an ``.npz`` file sealed with SHA-256).

        The file holds the users' secrets (keep it as secret as the data: whoever reads it
        can recompute every permanent response) and the (user, value) pairs reported so far;
        no response is stored, so a restored copy gives the same responses. The state takes
        the lock ``path + ".lock"`` (``fcntl.flock``, held until :meth:`close`): a second
        writer of the same file is refused. The file is written to a temporary file in the
        same folder, fsynced, renamed over ``path`` and the folder fsynced, so a crash
        leaves the old file or the new one. The seal covers the specification, the counters
        and every array: :meth:`LongitudinalEncoder.load_state` refuses an edited or
        truncated file and the state of another specification. It detects damage, not
        forgery (whoever can write the file can recompute the seal).

        Parameters
        ----------
        path : str or os.PathLike
            Destination (``.npz`` is not appended).

        Returns
        -------
        str
            The path written.
        """
        path = os.fspath(path)
        self._lock(path)
        header = self._header()
        arrays = self._arrays()
        header["sha256"] = self._digest(header, arrays)
        text = json.dumps(header, sort_keys=True, ensure_ascii=True, allow_nan=False)
        directory = os.path.dirname(os.path.abspath(path))
        # mkstemp creates the file readable by its owner only (0600): it holds secrets.
        handle, temporary = tempfile.mkstemp(dir=directory, prefix=".state-", suffix=".npz")
        try:
            with os.fdopen(handle, "wb") as stream:
                np.savez(stream, header=np.frombuffer(text.encode("ascii"), dtype=np.uint8),
                         **arrays)
                stream.flush()
                os.fsync(stream.fileno())
            _replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        fsync_directory(directory)
        return path

    @classmethod
    def load(cls, path, spec):
        """Read a state saved by :meth:`save`, checking its seal and that it is of ``spec``.

        The returned state holds the file's lock until :meth:`close` (or use it in a
        ``with`` block): a second process (or a second state) loading or saving the same
        file meanwhile is refused.

        Parameters
        ----------
        path : str or os.PathLike
            The state file.
        spec : dict
            The encoder's :attr:`~LongitudinalEncoder.spec_` the state must belong to.

        Returns
        -------
        LongitudinalState
            The saved state.

        Raises
        ------
        ValueError
            Naming the file: unreadable, not a state file, a checksum mismatch (edited or
            truncated), the state of another specification, inconsistent arrays, or in use
            by another writer.
        """
        lock = _StateLock(path)
        try:
            state = cls._read(path, spec)
        except BaseException:
            lock.release()
            raise
        state._locks[os.path.realpath(path)] = lock
        return state

    @classmethod
    def _read(cls, path, spec):
        where = f"longitudinal state file {os.fspath(path)!r}"
        size = os.path.getsize(path) if os.path.exists(path) else None
        if size is None:
            raise ValueError(f"{where} does not exist.")
        if size > get_limits()["max_array_bytes"]:
            raise ValueError(f"{where} is {size} bytes, past the limit max_array_bytes.")
        try:
            with np.load(path, allow_pickle=False) as data:
                arrays = {name: data[name] for name in data.files}
        except (OSError, ValueError, zipfile.BadZipFile, EOFError, KeyError) as exc:
            raise ValueError(f"{where} is not a readable state file ({exc}).") from None
        try:
            header = json.loads(bytes(arrays.pop("header")).decode("ascii"))
        except (KeyError, UnicodeDecodeError, ValueError, TypeError):
            raise ValueError(f"{where} is not a longitudinal state file (no header).") from None
        if not isinstance(header, dict) or header.get("format") != STATE_FORMAT:
            raise ValueError(f"{where} is not a longitudinal state file.")
        if header.get("version") != STATE_VERSION:
            raise ValueError(f"{where} has version {header.get('version')!r}; this "
                             f"sklearn_ldp reads version {STATE_VERSION}.")
        seal = header.pop("sha256", None)
        if not isinstance(seal, str) or seal != cls._digest(header, arrays):
            raise checksum_mismatch(where)
        if header.get("spec") != spec:
            raise ValueError(
                f"{where} holds the state of another specification "
                f"(sha256 {_spec_digest(header.get('spec'))[:12]} vs this encoder's "
                f"{_spec_digest(spec)[:12]}): {header.get('spec')!r}; a state is bound to "
                "the categories, strategy and budgets that made it.")
        try:
            _check_memo(header, arrays, spec)
            state = cls(spec, header["n_users"], arrays, header["rounds"],
                        header["charged_epsilon"], header["collection_id"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{where}: inconsistent state ({exc}).") from None
        return state


def _replace(temporary, path):
    """``os.replace`` (a name of its own so that tests can simulate a crash before it)."""
    os.replace(temporary, path)


class _StateLock:
    """An exclusive, non-blocking ``fcntl.flock`` on ``path + ".lock"``, held until
    :meth:`release`.

    The lock is on a companion file because the state file itself is replaced by rename at
    every save (a lock on the old inode would not exclude a writer of the new one). The
    companion file is never deleted (deleting it would let two writers lock two different
    files). Advisory: it excludes writers that use this package (or ``client.py``), not
    arbitrary programs. Not available on Windows (no lock there).
    """

    def __init__(self, path):
        self.path = os.fspath(path) + ".lock"
        self._descriptor = None
        if fcntl is None:  # pragma: no cover - Windows
            return
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            raise ValueError(
                f"longitudinal state file {os.fspath(path)!r} is in use by another writer "
                f"(its lock {self.path!r} is held): one writer at a time, so that no "
                "process's reports are lost; close() the other state first.") from None
        self._descriptor = descriptor

    def release(self):
        if self._descriptor is not None:
            descriptor, self._descriptor = self._descriptor, None
            fcntl.flock(descriptor, fcntl.LOCK_UN)
            os.close(descriptor)


def _check_memo(header, arrays, spec):
    """Structural checks of a state file's fields and arrays, each naming the field."""
    mechanism = _build_mechanism(spec)
    if set(arrays) != set(_MEMO_ARRAYS):
        raise ValueError(f"arrays {sorted(arrays)}, expected {sorted(_MEMO_ARRAYS)}")
    n = header["n_users"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n_users must be an integer >= 0, got {n!r}")
    for name in ("rounds",):
        if isinstance(header[name], bool) or not isinstance(header[name], int) \
                or header[name] < 0:
            raise ValueError(f"{name} must be an integer >= 0, got {header[name]!r}")
    secrets_, keys, k = arrays["secrets"], arrays["keys"], mechanism.n_cells
    if secrets_.dtype != np.uint64 or secrets_.shape != (n, 2):
        raise ValueError(f"secrets must be ({n}, 2) uint64 (128 bits per user), got "
                         f"{secrets_.dtype} of shape {secrets_.shape}")
    if keys.dtype != np.int64 or keys.ndim != 1 or (keys.size and (
            keys[0] < 0 or keys[-1] >= n * k or (np.diff(keys) <= 0).any())):
        raise ValueError("keys must be sorted distinct int64 in [0, n_users * n_cells)")
    held = np.bincount(keys // k, minlength=n) if keys.size else np.zeros(n, np.int64)
    if held.size and held.max() > spec["max_values"]:
        raise ValueError(f"keys give user {int(held.argmax())} {int(held.max())} distinct values,"
                         f" past max_values={spec['max_values']}")


@longitudinal_references
class LongitudinalEncoder(FreshEntropyMixin, TransformerMixin, BaseEstimator,
                          auto_wrap_output_keys=None):
    """Privatize rounds of the same users' values with memoization (client side).

    ``fit`` is data-independent: it builds the mechanism from the public ``categories`` and
    the budgets. :meth:`new_state` makes the clients' memory for ``n_users`` users;
    ``transform(X_round, state=state)`` privatizes one round (row ``i`` is user ``i`` every
    round) and returns :class:`LongitudinalReports`, which
    :class:`~sklearn_ldp.estimators.longitudinal.LongitudinalEstimator` decodes round by
    round.

    Parameters
    ----------
    categories : list, dict or None, default=None
        The public values: a list, or a dict of one column name to its list (``X`` is then
        a DataFrame with that column). Required except for ``strategy="1bitmean"``.
    strategy : {"l_osue", "l_grr", "l_sue", "l_oue", "l_soue", "dbitflip", "1bitmean"}, \
default="l_osue"
        ``l_*``: a permanent response per value plus fresh noise each round (Arcolezi et al.;
        ``l_sue`` is basic RAPPOR); L-OSUE (optimized unary permanent step, symmetric unary
        instantaneous step) is the default, the most accurate of the family for most budgets
        and domains in Arcolezi et al.'s comparison; ``l_grr`` can be better for a few
        categories (compare the estimators' ``expected_error_``). ``dbitflip``: Ding et
        al.'s dBitFlipPM (memoized bits, no fresh noise, ``epsilon_1`` unused).
        ``1bitmean``: a counter in ``[0, max_value]`` (1BitMean with alpha-point
        rounding).
    epsilon_perm : float, default=2.0
        Budget of the permanent response (``eps_inf``): what any number of rounds of an
        unchanged value reveal. For ``dbitflip`` and ``1bitmean`` it is the budget of the
        memoized report.
    epsilon_1 : float, default=1.0
        Budget of one round's report, below ``epsilon_perm`` (``l_*`` only).
    n_sampled : int, default=1
        Buckets each user samples (``dbitflip``).
    max_value : float, default=None
        Largest counter value (``1bitmean``, required there).
    n_segments : int, default=8
        Rounding grid of ``1bitmean``.
    max_values : int or None, default=None
        Cap on the distinct values (rounded points for ``1bitmean``) one user may report
        over the collection, enforced by the clients: a round that would take a user past
        it is refused with a ValueError (nothing is reported or charged). None: no cap
        beyond the number of values. The ledger's bound is ``max_values * epsilon_perm``.
    ledger : str, path or None, default=None
        Privacy ledger to charge (see :mod:`sklearn_ldp.deploy.budget`): each round is charged
        ``epsilon_perm`` for each of the first ``max_values`` rounds of a collection, 0
        afterwards (at most ``max_values`` distinct values, one permanent response each),
        for ``ledger_users``; see the module docstring.
    ledger_users : str, default="all"
        The cohort charged.
    random_state : int, Generator or None, default=None
        Seed for simulations; None draws from the operating system (deployment: real
        clients draw their own randomness). The users' secrets of :meth:`new_state` come
        from the operating system unless it is seeded (then from the seed: whoever knows it
        can recompute every permanent response).

    Attributes
    ----------
    mechanism_ : LongitudinalMechanism, DBitFlipPM or OneBitMeanPM
        The math layer's mechanism.
    categories_ : list or None
        The categories (None for counters).
    spec_ : dict
        What a state and reports are bound to: the mechanism's specification, categories
        and ``max_values``.
    max_values_ : int
        The cap in force.
    epsilon_round_ : float
        The epsilon one round's report spends (``epsilon_1``, or ``epsilon_perm`` for the
        memoized-only strategies).
    ledger_cap_ : float
        ``max_values_ * epsilon_perm``: the most one collection is charged.

    See Also
    --------
    LongitudinalState : The clients' memory.
    sklearn_ldp.estimators.longitudinal.LongitudinalEstimator : Per-round estimates.

    <longitudinal references>

    Examples
    --------
    >>> enc = LongitudinalEncoder(categories=["mail", "maps", "news"], epsilon_perm=2.0,
    ...                           epsilon_1=0.5, random_state=0).fit()
    >>> state = enc.new_state(4)
    >>> day_1 = enc.transform(["mail", "news", "news", "maps"], state=state)
    >>> day_2 = enc.transform(["mail", "news", "maps", "maps"], state=state)
    >>> day_2.round, state.values_per_user().tolist()
    (1, [1, 1, 2, 1])
    """

    def __init__(self, categories=None, strategy="l_osue", epsilon_perm=2.0, epsilon_1=1.0,
                 n_sampled=1, max_value=None, n_segments=8, max_values=None, ledger=None,
                 ledger_users=EVERYONE, random_state=None):
        store_params(self, locals())

    def _check_categories(self):
        categories, column = self.categories, None
        if isinstance(categories, dict):
            if len(categories) != 1:
                raise ValueError(f"categories must name one column, got {len(categories)} "
                                 f"columns {list(categories)[:5]!r}.")
            (column, categories), = categories.items()
        if isinstance(categories, str) or not isinstance(categories, list | tuple | np.ndarray
                                                         | pd.Index):
            raise ValueError(f"categories must be a list of the public values (or a dict of "
                             f"one column to its list), got {self.categories!r}.")
        # The package's size cap before anything of that size is built (a set, an index,
        # a mechanism of that many cells).
        check_size(len(categories), "the number of categories", "max_cells",
                   "LongitudinalEncoder")
        categories = list(categories)
        if len(categories) < 2:
            raise ValueError(f"categories must hold at least 2 values, got {categories!r}.")
        if len(set(map(repr, categories))) != len(categories) or pd.Index(
                categories).has_duplicates:
            raise ValueError(f"categories must be distinct, got {categories!r}.")
        if pd.isna(pd.Index(categories)).any():
            raise ValueError(f"categories must not contain NaN/None, got {categories!r}.")
        return column, categories

    def fit(self, X=None, y=None):
        """Build the mechanism (data-independent: ``X`` is not read).

        Parameters
        ----------
        X : array-like or None, default=None
            Accepted for Pipeline compatibility; its values are not read, but what no round
            can be (sparse, complex, empty, NaN or inf numbers) is refused with
            scikit-learn's message.
        y : ignored
            Not used.

        Returns
        -------
        self : LongitudinalEncoder
            The fitted encoder.
        """
        if X is not None:
            refuse_malformed(X)
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}."
                             f"{did_you_mean(self.strategy, STRATEGIES)}")
        epsilon_perm = check_epsilon(self.epsilon_perm, "epsilon_perm")
        if self.strategy == "1bitmean":
            if self.categories is not None:
                raise ValueError("categories must be None for strategy='1bitmean' (a counter "
                                 f"in [0, max_value]), got {self.categories!r}.")
            if self.max_value is None:
                raise ValueError("strategy='1bitmean' needs max_value (the largest counter).")
            self.column_, self.categories_ = None, None
            if isinstance(self.n_segments, int) and not isinstance(self.n_segments, bool):
                check_size(self.n_segments + 1, "n_segments + 1 (rounding points)", "max_cells",
                           "LongitudinalEncoder")
            mechanism = OneBitMeanPM(self.max_value, epsilon_perm, self.n_segments)
        else:
            if self.categories is None:
                raise ValueError(f"categories is required for strategy={self.strategy!r}: "
                                 "the public values (never read from private data).")
            self.column_, self.categories_ = self._check_categories()
            k = len(self.categories_)
            if self.strategy == "dbitflip":
                mechanism = DBitFlipPM(k, epsilon_perm, self.n_sampled)
            else:
                mechanism = LongitudinalMechanism(k, epsilon_perm, check_epsilon(
                    self.epsilon_1, "epsilon_1"), self.strategy)
        n_cells = mechanism.n_cells
        if self.max_values is None:
            self.max_values_ = n_cells
        else:
            self.max_values_ = check_positive_int(self.max_values, "max_values")
            if self.max_values_ > n_cells:
                raise ValueError(f"max_values must be at most the {n_cells} values a user can "
                                 f"report, got {self.max_values!r}.")
        resolve_ledger(self.ledger, self.ledger_users)  # a bad ledger fails here, not later
        self.mechanism_ = mechanism
        self.epsilon_round_ = (mechanism.epsilon_1 if isinstance(mechanism,
                                                                 LongitudinalMechanism)
                               else mechanism.epsilon)
        self.ledger_cap_ = self.max_values_ * epsilon_perm
        self._epsilon_perm = epsilon_perm
        self.spec_ = {"mechanism": mechanism.to_dict(),
                      "categories": None if self.categories_ is None
                      else [_json_value(c) for c in self.categories_],
                      "column": None if self.column_ is None else str(self.column_),
                      "max_values": self.max_values_}
        self._set_generator(np.random.default_rng(self.random_state))
        return self

    def new_state(self, n_users):
        """The memory of ``n_users`` clients before their first round.

        Parameters
        ----------
        n_users : int
            Number of users (rows of every round).

        Returns
        -------
        LongitudinalState
            No value reported yet, no epsilon charged, a fresh collection identifier.
        """
        check_is_fitted(self, "mechanism_")
        n_users = check_positive_int(n_users, "n_users")
        # 16 bytes of secret per user: the cap on one array, checked before allocating.
        check_size(16 * n_users, f"the users' secrets (16 bytes x n_users={n_users})",
                   "max_array_bytes", "LongitudinalEncoder.new_state")
        # Secrets from the operating system unless the encoder is seeded (simulation:
        # whoever knows the seed can recompute every permanent response).
        rng = None if self.random_state is None else self._generator()
        return LongitudinalState(self.spec_, n_users, MemoState(self.mechanism_, n_users,
                                                                rng=rng))

    def load_state(self, path):
        """Read a state saved with :meth:`LongitudinalState.save`, checked against this
        encoder (seal, specification, arrays); a ValueError names the file otherwise.

        Parameters
        ----------
        path : str or os.PathLike
            The state file.

        Returns
        -------
        LongitudinalState
            The saved state, ready for the next round.
        """
        check_is_fitted(self, "mechanism_")
        return LongitudinalState.load(path, self.spec_)

    def _codes(self, X, n_users):
        """One round's values as the mechanism's codes (or floats for counters)."""
        if isinstance(X, pd.DataFrame):
            if self.column_ is not None and self.column_ in X.columns:
                values = X[self.column_].to_numpy()
            elif X.shape[1] == 1:
                values = X.iloc[:, 0].to_numpy()
            else:
                raise ValueError(f"X must have one column (or the column {self.column_!r}), "
                                 f"got columns {list(X.columns)[:5]!r}.")
        else:
            values = np.asarray(X.to_numpy() if isinstance(X, pd.Series) else X,
                                dtype=object if not isinstance(X, np.ndarray) else None)
            if values.ndim == 2 and values.shape[1] == 1:
                values = values[:, 0]
            if values.ndim != 1:
                raise ValueError(f"X must be one value per user (1-D, or one column), got "
                                 f"shape {values.shape}.")
        if values.shape[0] != n_users:
            raise ValueError(f"X has {values.shape[0]} rows but the state holds {n_users} "
                             "users: every round has the same users in the same order.")
        if self.categories_ is None:
            try:
                values = values.astype(float)
            except (TypeError, ValueError):
                raise ValueError("X must hold numbers (counters) for strategy='1bitmean'.") \
                    from None
            return self.mechanism_.check_values(values)
        # Typed indexes where both sides are numbers (a hash of int64 keys, not of objects);
        # matching is Python equality either way (1 == 1.0 == True, as in a dict).
        categories = pd.Index(self.categories_)
        numeric = categories.dtype.kind in "iuf" and values.dtype.kind in "iuf"
        codes = categories.get_indexer(pd.Index(values) if numeric else pd.Index(
            values, dtype=object))
        if (codes < 0).any():
            row = int(np.argmax(codes < 0))
            value = values[row].item() if isinstance(values[row], np.generic) else values[row]
            raise ValueError(f"X[{row}] = {value!r} is not one of the categories "
                             f"{self.categories_[:10]!r}.")
        return codes.astype(np.int64)

    def _memo_keys(self, codes, state):
        """Each user's memo key for this round (``user * n_cells + value or point``)."""
        points = self.mechanism_.memo_points(codes, state.memo)
        return np.arange(codes.shape[0], dtype=np.int64) * self.mechanism_.n_cells + points

    def transform(self, X, state=None):
        """Privatize one round of every user's value, updating ``state`` in place.

        Order: the values and the ``max_values`` cap are checked, then the ledger is
        charged, then the reports are drawn; a refusal at any step changes nothing.

        Parameters
        ----------
        X : array-like of shape (n_users,) or (n_users, 1), Series or DataFrame
            This round's value of each user (categories, or counters for ``1bitmean``).
        state : LongitudinalState
            The clients' memory from :meth:`new_state` (or :meth:`load_state`).

        Returns
        -------
        LongitudinalReports
            The round's reports, numbered ``state.rounds`` before the call.

        Raises
        ------
        ValueError
            No state, a state of another encoder or another number of users, an unknown
            value, a user past ``max_values``, or a ledger refusal
            (:class:`~sklearn_ldp.deploy.budget.BudgetExceededError`).
        """
        check_is_fitted(self, "mechanism_")
        if not isinstance(state, LongitudinalState):
            raise ValueError("transform needs state= (the LongitudinalState of the "
                             f"collection, from new_state), got {type(state).__name__}.")
        if state.spec != self.spec_:
            raise ValueError(
                f"the state belongs to another encoder specification (sha256 "
                f"{_spec_digest(state.spec)[:12]}, this encoder {_spec_digest(self.spec_)[:12]}"
                "): a state is bound to the categories, strategy and budgets that made it.")
        codes = self._codes(X, state.n_users)
        keys, memo = self._memo_keys(codes, state), state.memo
        position = np.searchsorted(memo.keys, keys)
        known = position < memo.keys.size
        known[known] = memo.keys[position[known]] == keys[known]
        held = state.values_per_user()
        over = ~known & (held >= self.max_values_)
        if over.any():
            row = int(np.argmax(over))
            value = (float(codes[row]) if self.categories_ is None
                     else self.categories_[int(codes[row])])
            raise ValueError(
                f"user {row} would report a value ({value!r}) past max_values="
                f"{self.max_values_} distinct values (it has reported {int(held[row])}): the "
                "ledger's bound would not hold. Nothing was reported or charged.")
        charge = _round_charge(self._epsilon_perm, self.ledger_cap_, state.charged_epsilon)
        first = "first round, " if state.rounds == 0 else ""
        charge_ledger(
            self.ledger, charge, kind="collection", users=self.ledger_users,
            description=(
                f"longitudinal {self.strategy} collection {state.collection_id} round "
                f"{state.rounds} ({first}{state.n_users} users): permanent epsilon_perm="
                f"{self._epsilon_perm:g} x max_values={self.max_values_} = cap "
                f"{self.ledger_cap_:g}; epsilon_1={self.epsilon_round_:g} per report, covered "
                f"by the permanent responses; charged min(epsilon_perm, cap - "
                f"{state.charged_epsilon:g}) = {charge:g}"))
        reports = self.mechanism_.randomize(codes, memo, self._generator())
        state.rounds += 1
        state.charged_epsilon += charge
        return LongitudinalReports(reports, self.spec_, state.rounds - 1, self.mechanism_)

    def fit_transform(self, X, y=None, state=None):
        """:meth:`fit`, then :meth:`transform` of ``X`` with ``state``.

        Parameters
        ----------
        X : array-like
            One round of values.
        y : ignored
            Not used.
        state : LongitudinalState
            The clients' memory (needed: without it there is nothing to memoize into).

        Returns
        -------
        LongitudinalReports
            The round's reports.
        """
        return self.fit(X).transform(X, state=state)


def _json_value(value):
    """A category as a JSON value (numpy scalars as Python ones; other objects refused)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise ValueError(f"categories must be strings or numbers, got {value!r} "
                     f"({type(value).__name__}).")
