"""Privacy budget ledger: record the epsilon and delta spent, and refuse to exceed a total.

Every output computed from people's records spends some of their privacy budget:

* a **collection** (local model): each user's report is epsilon-LDP (or (epsilon, delta)-LDP
  for the Gaussian randomizer), so it spends epsilon of *that user's* budget;
* a **release** (central model): the curator's noisy output is (epsilon, delta)-DP, so it
  spends (epsilon, delta) of the budget of *everyone in the data*.

:class:`PrivacyLedger` records each charge (kind, users, epsilon, delta, description, UTC
timestamp) and refuses, with :class:`BudgetExceededError`, any charge that would take some
person past the configured totals. A refused charge records nothing.

Composition (the accounting rule)
---------------------------------
**Basic sequential composition** of (epsilon, delta)-DP: the spent budget of a person is the
sum of the epsilons and the sum of the deltas of every charge that covers them. It holds for
any mix of pure and approximate DP, for local reports and central releases alike (an
epsilon-LDP report is an epsilon-DP function of its user's record), and for adaptively chosen
charges: with fixed totals, refusing any charge that would exceed them is a valid *privacy
filter* (Rogers, Roth, Ullman and Vadhan, 2016). It is the safe default; it is loose for many
Gaussian releases, which compose far better under zCDP or Renyi DP (not implemented: the
ledger never under-counts, it may over-count).

**Parallel composition** over disjoint groups: each charge names the group of users it
covers, ``users="all"`` (everyone, the default) or a named cohort declared with ``groups=``
(or :meth:`PrivacyLedger.add_groups`). Declaring cohorts asserts that they are pairwise
disjoint and that membership does not depend on the private data. The spent budget of a
cohort is the sum of its own charges plus the charges on everyone; the ledger's constraint
holds for every cohort and for the people in no cohort (who are charged only by ``"all"``).

Edge cases: a charge of zero is recorded (an audit entry) and never refused; negative, NaN or
infinite amounts, ``delta >= 1`` and an undeclared cohort are ValueErrors (an undeclared name
is refused rather than created, so that a typo cannot open a fresh budget). Sums use
``math.fsum`` and are compared with a relative tolerance of :data:`BUDGET_RTOL` so that ten
charges of 0.1 fit a total of 1.0.

Longitudinal collection
-----------------------
:class:`~sklearn_ldp.longitudinal.LongitudinalEncoder` charges one ordinary ``"collection"``
entry per round (the file format is unchanged). A user who reports ``c`` distinct values is
charged ``c * epsilon_perm`` (one memoized permanent response per value; every round's
``epsilon_1`` report is a randomization of it). ``c`` is invisible to the server and a
charge must not depend on the data, but after ``T`` rounds ``c <= min(T, max_values)``
(``max_values`` enforced by the clients): each of the first ``max_values`` rounds of a
collection is charged ``epsilon_perm``, later rounds 0 (an audit entry). ``T * epsilon_1``
would not be a bound: memoized rounds share their permanent response. The pattern of which
rounds changed value is not covered (see the longitudinal docs). Each entry's description
names the collection, the round, ``epsilon_1`` and the cap.

Sharing a ledger between estimators
-----------------------------------
Estimator parameters must be plain values (``clone`` deep-copies anything else), so the
estimators take ``ledger=`` as a **path** to a JSON ledger file (created with
:meth:`PrivacyLedger.create`) or the **name** of a ledger registered in this process with
:func:`register_ledger`. Clones, Pipeline steps and GridSearchCV's copies then charge the same
ledger. A file ledger is re-read and rewritten under an exclusive OS lock on every charge
(``fcntl.flock`` on the hidden file ``.<name>.lock`` next to it, released by the OS if its
holder dies; a charge waits up to :data:`LOCK_SECONDS` for another one, then raises
:class:`~sklearn_ldp.deploy.limits.FileLockedError` naming the file) and replaced atomically
(temporary file + ``fsync`` + ``os.replace``, then an ``fsync`` of the directory), so
concurrent processes lose no entry and a crash leaves the old or the new ledger, never a
mix; use a file when GridSearchCV runs with ``n_jobs > 1`` in worker processes (names
registered in the parent process do not exist there).

Ledger file format
------------------
A JSON object: ``format`` (``"sklearn_ldp.privacy_ledger"``), ``version`` (2),
``total_epsilon``, ``total_delta``, ``groups``, ``entries`` and ``sha256``, the SHA-256 of the
canonical JSON of all the other fields (sorted keys, no spaces, ASCII). Reading refuses a
mismatch ("checksum mismatch: the file was modified or truncated"), a file larger than the
``max_header_bytes`` cap of :mod:`sklearn_ldp.deploy.limits` and anything malformed, with a
ValueError naming the file and the field. A version-1 file (written by an earlier release, no
checksum) is refused too, since it cannot be told apart from a current ledger rewritten
without its checksum (with entries deleted, say, to reset the spent budget), unless it is
opened with ``PrivacyLedger.open(path, allow_unverified=True)``: it is then read with an
:class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` and rewritten as version 2 by its next
charge. The checksum detects damage, not forgery: whoever can write the
file can recompute it (the ledger is only as trustworthy as its file's permissions).
"""

import contextlib
import hashlib
import json
import math
import numbers
import os
import threading
import warnings
from datetime import datetime, timezone
from typing import NamedTuple

import pandas as pd

from ..mechanisms._base.docstrings import shared_sections
from .limits import (
    UnverifiedFileWarning,
    atomic_write,
    check_size,
    checksum_mismatch,
    writer_lock,
)

LEDGER_FORMAT = "sklearn_ldp.privacy_ledger"
# Version 2 added the field "sha256"; version-1 files are read only on request (unverified).
LEDGER_VERSION = 2
UNVERIFIED_LEDGER_VERSIONS = (1,)
CHECKSUM_KEY = "sha256"
STATE_KEYS = ("format", "version", "total_epsilon", "total_delta", "groups", "entries")
EVERYONE = "all"
KINDS = ("collection", "release")

# The parameter and the error of the queries by cohort (lines ``<cohort parameter>`` and
# ``<cohort error>`` of a docstring; :mod:`sklearn_ldp.mechanisms._base.docstrings`).
_cohort_query = shared_sections({
    "cohort parameter": """\
Parameters
----------
users : str, default="all"
    A declared cohort, or ``"all"``.""",
    "cohort error": """\
Raises
------
ValueError
    If ``users`` is not ``"all"`` or a declared cohort.""",
})
# Relative slack of the comparison spent <= total: absorbs the rounding of float sums
# (0.1 + 0.1 + 0.1 > 0.3 in binary floating point) and nothing more.
BUDGET_RTOL = 1e-9
ENTRY_KEYS = ("id", "timestamp", "kind", "users", "epsilon", "delta", "description")
# Seconds a charge waits for another process's charge of the same ledger file (each holds
# the lock for one read-modify-write, milliseconds) before FileLockedError.
LOCK_SECONDS = 30.0


class Budget(NamedTuple):
    """An amount of privacy budget.

    Parameters
    ----------
    epsilon : float
        The epsilon of (epsilon, delta)-differential privacy.
    delta : float
        The delta of (epsilon, delta)-differential privacy (0 for pure DP).

    See Also
    --------
    PrivacyLedger.spent : The budget spent, as a Budget.
    PrivacyLedger.remaining : The budget left, as a Budget.

    Examples
    --------
    >>> budget = Budget(epsilon=1.0, delta=1e-6)
    >>> budget.epsilon, budget.delta
    (1.0, 1e-06)
    """

    epsilon: float
    delta: float


class BudgetExceededError(ValueError):
    """A charge would exceed the ledger's total; nothing was recorded.

    Attributes ``requested``, ``spent``, ``remaining`` (:class:`Budget`) and ``users`` (the
    group charged) describe the refusal. A subclass of ValueError.

    Parameters
    ----------
    message : str
        The error message.
    requested : Budget
        The budget the refused charge asked for.
    spent : Budget
        The budget already spent by ``users``.
    remaining : Budget
        The budget ``users`` could still spend.
    users : str
        The group of users charged (``"all"`` or a declared cohort).

    See Also
    --------
    PrivacyLedger.charge : Raises it when a charge would exceed the totals.

    Examples
    --------
    >>> ledger = PrivacyLedger(total_epsilon=1.0)
    >>> try:
    ...     ledger.charge(2.0, description="too much")
    ... except BudgetExceededError as error:
    ...     print(error.requested.epsilon, error.remaining.epsilon, error.users)
    2.0 1.0 all
    """

    def __init__(self, message, requested, spent, remaining, users):
        super().__init__(message)
        self.requested = requested
        self.spent = spent
        self.remaining = remaining
        self.users = users


# ---------------------------------------------------------------------- validation
def _check_amount(value, name, upper=math.inf):
    """A finite float in ``[0, upper)``, or a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a real number >= 0, got {value!r}.")
    value = float(value)
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{name} must be a finite number >= 0, got {value!r}.")
    if value >= upper:
        raise ValueError(f"{name} must be < {upper:g}, got {value!r}.")
    return value


def _check_totals(total_epsilon, total_delta):
    total_epsilon = _check_amount(total_epsilon, "total_epsilon")
    if total_epsilon == 0:
        raise ValueError("total_epsilon must be > 0 (a ledger with no budget refuses everything).")
    return total_epsilon, _check_amount(total_delta, "total_delta", upper=1.0)


def _check_group_name(name):
    if not isinstance(name, str) or not name:
        raise ValueError(f"a group of users is named by a non-empty string, got {name!r}.")
    if name == EVERYONE:
        raise ValueError(f"{EVERYONE!r} means everyone and cannot be declared as a group.")
    return name


def _check_groups(groups):
    if isinstance(groups, str):
        raise ValueError(f"groups must be a list of group names, got the string {groups!r}.")
    names = [_check_group_name(name) for name in groups]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"groups must be distinct, got {repeated} more than once.")
    return names


def _check_users(users, groups):
    if users == EVERYONE:
        return users
    if not isinstance(users, str) or users not in groups:
        raise ValueError(
            f"unknown group of users {users!r}: use {EVERYONE!r} (everyone) or a declared "
            f"group {sorted(groups)} (declare disjoint cohorts with groups= or add_groups)."
        )
    return users


def _spent_by_group(state):
    """{group: Budget} for every declared group, and for ``EVERYONE`` (people in no group)."""
    def total(users, key):
        return math.fsum(e[key] for e in state["entries"] if e["users"] == users)
    everyone = Budget(total(EVERYONE, "epsilon"), total(EVERYONE, "delta"))
    spent = {EVERYONE: everyone}
    for group in state["groups"]:
        spent[group] = Budget(everyone.epsilon + total(group, "epsilon"),
                              everyone.delta + total(group, "delta"))
    return spent


def _worst(budgets):
    return Budget(max(b.epsilon for b in budgets), max(b.delta for b in budgets))


def _spent(state, users):
    """Budget spent by a cohort, or by the most charged person for ``"all"``."""
    users = _check_users(users, state["groups"])
    spent = _spent_by_group(state)
    return _worst(spent.values()) if users == EVERYONE else spent[users]


def _remaining(state, spent):
    return Budget(max(state["total_epsilon"] - spent.epsilon, 0.0),
                  max(state["total_delta"] - spent.delta, 0.0))


def _within(amount, total):
    return amount <= total * (1.0 + BUDGET_RTOL)


def _check_entry(entry, position, groups):
    """One recorded charge, validated (every key, with its type)."""
    if not isinstance(entry, dict) or set(entry) != set(ENTRY_KEYS):
        raise ValueError(f"entry {position} must have exactly the keys {ENTRY_KEYS}.")
    if entry["kind"] not in KINDS:
        raise ValueError(f"entry {position} has kind {entry['kind']!r}, not one of {KINDS}.")
    if isinstance(entry["id"], bool) or not isinstance(entry["id"], int):
        raise ValueError(f"entry {position}: id must be an integer, got {entry['id']!r}.")
    for key in ("timestamp", "description"):
        if not isinstance(entry[key], str):
            raise ValueError(f"entry {position}: {key} must be a string, got "
                             f"{type(entry[key]).__name__}.")
    return {
        **entry,
        "users": _check_users(entry["users"], groups),
        "epsilon": _check_amount(entry["epsilon"], f"entry {position} epsilon"),
        "delta": _check_amount(entry["delta"], f"entry {position} delta", upper=1.0),
    }


def _check_state(data, source):
    """Validate a ledger read from ``source`` (its format, version, totals and entries).

    Returns the state in the current version (without a checksum field).
    """
    if not isinstance(data, dict) or data.get("format") != LEDGER_FORMAT:
        raise ValueError(f"{source} is not a privacy ledger (expected a JSON object with "
                         f"format={LEDGER_FORMAT!r}).")
    version = data.get("version")
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"{source}: invalid ledger version {version!r}.")
    if version > LEDGER_VERSION:
        raise ValueError(f"{source} has ledger version {version}, newer than this sklearn_ldp "
                         f"understands ({LEDGER_VERSION}); upgrade sklearn_ldp.")
    missing = [key for key in STATE_KEYS if key not in data]
    if missing:
        raise ValueError(f"{source}: malformed ledger: missing field {missing[0]!r}.")
    try:
        total_epsilon, total_delta = _check_totals(data["total_epsilon"], data["total_delta"])
        if not isinstance(data["groups"], list) or not isinstance(data["entries"], list):
            raise ValueError("malformed ledger: the fields 'groups' and 'entries' must be "
                             "lists.")
        groups = _check_groups(data["groups"])
        entries = [_check_entry(entry, position, groups)
                   for position, entry in enumerate(data["entries"])]
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{source}: malformed ledger ({exc!r}).") from None
    except ValueError as exc:
        raise ValueError(f"{source}: {exc}") from None
    state = {"format": LEDGER_FORMAT, "version": LEDGER_VERSION, "total_epsilon": total_epsilon,
             "total_delta": total_delta, "groups": groups, "entries": entries}
    worst = _worst(_spent_by_group(state).values())
    if not (_within(worst.epsilon, total_epsilon) and _within(worst.delta, total_delta)):
        raise ValueError(
            f"{source}: the recorded charges (epsilon={worst.epsilon:g}, delta={worst.delta:g} "
            f"for the most charged users) exceed the totals (epsilon={total_epsilon:g}, "
            f"delta={total_delta:g}); the ledger is inconsistent.")
    return state


def _state_digest(data):
    """SHA-256 (hex) of the canonical JSON of a ledger's fields, its checksum excepted."""
    fields = {key: value for key, value in data.items() if key != CHECKSUM_KEY}
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _sealed(state):
    """The state with its checksum field, as written to a file."""
    return {**state, CHECKSUM_KEY: _state_digest(state)}


def _verify_state(data, source, allow_unverified=False):
    """Check the checksum of a ledger of the current version; refuse an older version (no
    checksum) unless ``allow_unverified``, then warn.

    A version-1 ledger cannot be told apart from a current one rewritten without its
    checksum, e.g. with entries deleted: accepting it silently would reset the budget spent.
    """
    if not isinstance(data, dict):
        return  # _check_state says what is wrong
    version = data.get("version")
    if version in UNVERIFIED_LEDGER_VERSIONS and not isinstance(version, bool):
        if not allow_unverified:
            raise ValueError(
                f"{source}: ledger version {version} carries no checksum (written by an "
                "earlier sklearn_ldp, or a current ledger rewritten without it, e.g. with "
                "entries deleted); refused, since its spent budget cannot be verified. If you "
                "trust the file, open it with PrivacyLedger.open(path, allow_unverified=True): "
                f"its next charge rewrites it with a checksum (version {LEDGER_VERSION}).")
        warnings.warn(f"{source} was written by an earlier sklearn_ldp (ledger version "
                      f"{version}) without a checksum: it is read unverified "
                      "(allow_unverified=True), and rewritten with one (version "
                      f"{LEDGER_VERSION}) by its next charge.", UnverifiedFileWarning,
                      stacklevel=4)
        return
    if version != LEDGER_VERSION or data.get("format") != LEDGER_FORMAT:
        return  # _check_state refuses it with the reason
    if data.get(CHECKSUM_KEY) != _state_digest(data):
        raise checksum_mismatch(source)


# ---------------------------------------------------------------------- file storage
def _read_file(path, allow_unverified=False):
    """The validated state of the ledger file ``path`` (size capped, checksum verified; a
    version-1 file refused unless ``allow_unverified``)."""
    source = f"privacy ledger {path!r}"
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size:
                check_size(size, "the file size", "max_header_bytes", source)
            text = handle.read().decode("utf-8")
        data = json.loads(text)
    except FileNotFoundError:
        raise ValueError(f"no privacy ledger file at {path!r}; create one with "
                         "PrivacyLedger.create(path, total_epsilon=...).") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{source} is not UTF-8 text ({exc}).") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{source} is not valid JSON ({exc}); the file was modified or "
                         "truncated.") from None
    except RecursionError:
        raise ValueError(f"{source}: the JSON nests too deeply to be a ledger.") from None
    except OSError as exc:
        raise ValueError(f"{source} cannot be read ({exc}).") from None
    _verify_state(data, source, allow_unverified)
    return _check_state(data, source)


def _write_file(path, state):
    """Replace ``path`` atomically: readers see the old or the new ledger, never a mix.

    The new content (with its checksum) goes to a temporary file of the same directory,
    is flushed to disk, renamed onto ``path``, and the directory is flushed too, so that
    the rename survives a crash (:func:`~sklearn_ldp.deploy.limits.atomic_write`, shared with
    every writer of the package). The caller holds the ledger's lock.
    """
    text = json.dumps(_sealed(state), indent=1, allow_nan=False)
    with atomic_write(path) as handle:
        handle.write(text.encode("utf-8"))


def _ledger_lock(path):
    """The ledger's OS lock: waited for (charges are short), refused after
    :data:`LOCK_SECONDS` with a FileLockedError naming the file."""
    return writer_lock(path, timeout=LOCK_SECONDS, what="privacy ledger")


# ---------------------------------------------------------------------- the ledger
class PrivacyLedger:
    """Record the privacy budget spent and refuse any charge beyond the totals.

    An in-memory ledger lives in this object (share it between estimators by registering it,
    :func:`register_ledger`); a file ledger (:meth:`create`, :meth:`open`) lives in a JSON
    file that every charge re-reads and atomically rewrites under a lock, so several
    objects, processes or machines on a shared file system can charge it.

    Parameters
    ----------
    total_epsilon : float
        Budget of every person, > 0 (basic sequential composition: the epsilons of all
        charges that cover a person add up).
    total_delta : float, default=0.0
        Total delta in [0, 1); 0 (the default) refuses any approximate-DP charge.
    groups : sequence of str, default=()
        Named cohorts of users, declared **pairwise disjoint**: charges on different cohorts
        compose in parallel. ``"all"`` (everyone) always exists and cannot be declared.

    See Also
    --------
    register_ledger : Share an in-memory ledger with estimators by name.
    BudgetExceededError : The error of a refused charge.
    sklearn_ldp.LDPEncoder : Charges a ledger (``ledger=``) for each collection.

    References
    ----------
    .. [1] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential Privacy",
       Foundations and Trends in Theoretical Computer Science 9(3-4), 2014 (basic sequential
       and parallel composition).
    .. [2] R. Rogers, A. Roth, J. Ullman and S. Vadhan, "Privacy Odometers and Filters:
       Pay-as-you-Go Composition", Advances in Neural Information Processing Systems
       (NIPS), 2016 (refusing charges past fixed totals is a valid privacy filter).

    Examples
    --------
    >>> ledger = PrivacyLedger(total_epsilon=2.0, groups=["wave1", "wave2"])
    >>> _ = ledger.charge(1.5, users="wave1", description="survey, first wave")
    >>> _ = ledger.charge(1.5, users="wave2", description="survey, second wave")
    >>> ledger.spent()            # the most charged person: parallel composition
    Budget(epsilon=1.5, delta=0.0)
    >>> ledger.remaining("wave1")
    Budget(epsilon=0.5, delta=0.0)
    >>> try:
    ...     ledger.charge(1.0, description="everyone again")
    ... except BudgetExceededError:
    ...     print("refused")
    refused
    >>> len(ledger.entries)
    2
    """

    def __init__(self, total_epsilon, total_delta=0.0, groups=()):
        total_epsilon, total_delta = _check_totals(total_epsilon, total_delta)
        self._state = {"format": LEDGER_FORMAT, "version": LEDGER_VERSION,
                       "total_epsilon": total_epsilon, "total_delta": total_delta,
                       "groups": _check_groups(groups), "entries": []}
        self._path = None
        self._thread_lock = threading.RLock()

    # ------------------------------------------------------------------ construction
    @classmethod
    def create(cls, path, total_epsilon, total_delta=0.0, groups=()):
        """Create a new ledger file at ``path`` (refused if the file exists).

        An existing ledger is never overwritten: starting afresh would forget the budget
        already spent. Open it with :meth:`open` instead.

        Parameters
        ----------
        path : str or os.PathLike
            Where to write the JSON ledger file; its directory must exist.
        total_epsilon : float
            Budget of every person, > 0.
        total_delta : float, default=0.0
            Total delta in [0, 1).
        groups : sequence of str, default=()
            Named, pairwise disjoint cohorts of users.

        Returns
        -------
        PrivacyLedger
            The file ledger, with no entries.

        Raises
        ------
        ValueError
            If a file exists at ``path`` or a total or group is invalid.

        Examples
        --------
        >>> import os, tempfile
        >>> folder = tempfile.TemporaryDirectory()
        >>> path = os.path.join(folder.name, "ledger.json")
        >>> ledger = PrivacyLedger.create(path, total_epsilon=4.0)
        >>> _ = ledger.charge(1.0, description="survey")
        >>> PrivacyLedger.open(path).spent()
        Budget(epsilon=1.0, delta=0.0)
        >>> folder.cleanup()
        """
        ledger = cls(total_epsilon, total_delta, groups)
        path = os.fspath(path)
        # Under the ledger's lock, so that no other creator or charge runs between the check
        # and the write; the content appears whole (never an empty file that readers refuse).
        with _ledger_lock(path):
            if os.path.lexists(path):
                raise ValueError(f"a file already exists at {path!r}; open an existing ledger "
                                 "with PrivacyLedger.open(path) (creating would reset its "
                                 "spent budget).")
            _write_file(path, ledger._state)
        return cls.open(path)

    @classmethod
    def open(cls, path, *, allow_unverified=False):
        """The ledger stored in the file ``path`` (checked now, re-read at every use).

        Parameters
        ----------
        path : str or os.PathLike
            A ledger file written by :meth:`create` (or by a charge of a file ledger).
        allow_unverified : bool, default=False
            Accept a version-1 file (no checksum) with an
            :class:`~sklearn_ldp.deploy.limits.UnverifiedFileWarning` instead of refusing it; its
            next charge rewrites it with a checksum. Only for a file you trust: a ledger
            without a checksum may have lost entries (budget spent).

        Returns
        -------
        PrivacyLedger
            A file ledger: every read and charge goes to the file.

        Raises
        ------
        ValueError
            If there is no file, it is not a valid ledger, its checksum does not match, or
            it has no checksum (version 1) and ``allow_unverified`` is False.

        Warns
        -----
        UnverifiedFileWarning
            For a version-1 file opened with ``allow_unverified=True``.

        Examples
        --------
        >>> import json, tempfile
        >>> from pathlib import Path
        >>> path = Path(tempfile.mkdtemp()) / "ledger.json"
        >>> _ = PrivacyLedger.create(path, total_epsilon=1.0)
        >>> content = json.loads(path.read_text())
        >>> _ = content.pop("sha256"); content["version"] = 1  # the checksum stripped
        >>> _ = path.write_text(json.dumps(content))
        >>> PrivacyLedger.open(path)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: privacy ledger ...: ledger version 1 carries no checksum ...
        """
        if not isinstance(allow_unverified, bool):
            raise TypeError(f"allow_unverified must be True or False, got "
                            f"{allow_unverified!r}.")
        path = os.fspath(path)
        _read_file(path, allow_unverified)
        ledger = cls.__new__(cls)
        ledger._state = None
        ledger._path = path
        ledger._allow_unverified = allow_unverified
        ledger._thread_lock = threading.RLock()
        return ledger

    @classmethod
    def from_dict(cls, data):
        """An in-memory ledger from :meth:`to_dict`'s output (format and version checked).

        A ``sha256`` field (the content of a ledger file) is verified; a dict without one is
        accepted (it is already in memory).

        Parameters
        ----------
        data : dict
            The output of :meth:`to_dict`, or the parsed content of a ledger file.

        Returns
        -------
        PrivacyLedger
            An in-memory ledger with the same totals, groups and entries.

        Raises
        ------
        ValueError
            If ``data`` is malformed, inconsistent or fails its checksum.
        """
        try:
            data = json.loads(json.dumps(data, allow_nan=False))
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"ledger dict: not plain JSON values ({exc}).") from None
        if isinstance(data, dict) and CHECKSUM_KEY in data \
                and data[CHECKSUM_KEY] != _state_digest(data):
            raise checksum_mismatch("ledger dict")
        state = _check_state(data, "ledger dict")
        ledger = cls(state["total_epsilon"], state["total_delta"], state["groups"])
        ledger._state["entries"] = state["entries"]
        return ledger

    def to_dict(self):
        """The ledger as plain JSON-compatible values (with its format and version).

        Returns
        -------
        dict
            ``format``, ``version``, ``total_epsilon``, ``total_delta``, ``groups`` and
            ``entries`` (a copy: changing it does not change the ledger).
        """
        return json.loads(json.dumps(self._read()))

    # ------------------------------------------------------------------ storage
    @property
    def path(self):
        """The ledger file, or None for an in-memory ledger."""
        return self._path

    def _read(self):
        if self._path is None:
            return self._state
        return _read_file(self._path, self._allow_unverified)

    @contextlib.contextmanager
    def _transaction(self):
        """Yield the current state; what the block leaves in it is stored atomically."""
        with self._thread_lock:
            if self._path is None:
                state = json.loads(json.dumps(self._state))  # a working copy
                yield state
                self._state = state
            else:
                with _ledger_lock(self._path):
                    state = _read_file(self._path, self._allow_unverified)
                    yield state
                    _write_file(self._path, state)

    # ------------------------------------------------------------------ reading
    @property
    def total_epsilon(self):
        """The epsilon budget of every person (float)."""
        return self._read()["total_epsilon"]

    @property
    def total_delta(self):
        """The delta budget of every person (float)."""
        return self._read()["total_delta"]

    @property
    def groups(self):
        """The declared (pairwise disjoint) cohorts."""
        return list(self._read()["groups"])

    @property
    def entries(self):
        """Every recorded charge, oldest first (a list of dicts; copies)."""
        return [dict(entry) for entry in self._read()["entries"]]

    @_cohort_query
    def spent(self, users=EVERYONE):
        """Budget spent by ``users``: a cohort, or ``"all"`` for the most charged person.

        <cohort parameter>

        Returns
        -------
        Budget
            For a cohort, its charges plus the charges on everyone; for ``"all"``, the
            largest of these over the cohorts and the people in no cohort.

        <cohort error>
        """
        return _spent(self._read(), users)

    @_cohort_query
    def remaining(self, users=EVERYONE):
        """Budget ``users`` can still spend (for ``"all"``: what a charge on everyone may use).

        <cohort parameter>

        Returns
        -------
        Budget
            The totals minus :meth:`spent`, floored at zero.

        <cohort error>
        """
        state = self._read()
        return _remaining(state, _spent(state, users))

    def to_frame(self):
        """The entries as a pandas DataFrame indexed by entry id.

        Returns
        -------
        DataFrame
            One row per charge, oldest first, with the columns ``timestamp``, ``kind``,
            ``users``, ``epsilon``, ``delta`` and ``description``.
        """
        return pd.DataFrame(self.entries, columns=list(ENTRY_KEYS)).set_index("id")

    def __repr__(self):
        state = self._read()
        where = "in memory" if self._path is None else f"file {self._path!r}"
        worst = _worst(_spent_by_group(state).values())
        return (f"PrivacyLedger({where}, spent epsilon={worst.epsilon:g} of "
                f"{state['total_epsilon']:g}, delta={worst.delta:g} of "
                f"{state['total_delta']:g}, {len(state['entries'])} entries)")

    # ------------------------------------------------------------------ writing
    def add_groups(self, *names):
        """Declare new cohorts, pairwise disjoint from each other and from the existing ones.

        Parameters
        ----------
        *names : str
            The new cohort names (non-empty, distinct, not ``"all"``).

        Raises
        ------
        ValueError
            If a name is invalid or already declared (no cohort is added then).
        """
        with self._transaction() as state:
            state["groups"] = _check_groups(state["groups"] + list(names))

    def charge(self, epsilon, delta=0.0, *, kind="collection", users=EVERYONE, description=""):
        """Record a charge, or raise BudgetExceededError and record nothing.

        Parameters
        ----------
        epsilon : float
            The epsilon spent, a finite number >= 0.
        delta : float, default=0.0
            The delta spent, in [0, 1).
        kind : {"collection", "release"}, default="collection"
            ``"collection"``: local-model reports (each covered user spends ``epsilon``);
            ``"release"``: a central-model output (everyone covered spends it).
        users : str, default="all"
            ``"all"`` or a declared cohort: who is covered by the charge.
        description : str, default=""
            What the budget is spent on (kept in the entry, for the audit).

        Returns
        -------
        dict
            The recorded entry (``id``, ``timestamp`` in UTC ISO 8601, and the arguments).

        Raises
        ------
        BudgetExceededError
            If the charge would take some person covered past a total (nothing is recorded).
        ValueError
            If an amount, ``kind``, ``users`` or ``description`` is invalid.
        """
        epsilon = _check_amount(epsilon, "epsilon")
        delta = _check_amount(delta, "delta", upper=1.0)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}, got {kind!r}.")
        if not isinstance(description, str):
            raise ValueError(f"description must be a string, got {type(description).__name__}.")
        with self._transaction() as state:
            spent = _spent(state, users)
            totals = Budget(state["total_epsilon"], state["total_delta"])
            if not (_within(spent.epsilon + epsilon, totals.epsilon)
                    and _within(spent.delta + delta, totals.delta)):
                remaining = _remaining(state, spent)
                where = "in-memory ledger" if self._path is None else f"ledger {self._path!r}"
                raise BudgetExceededError(
                    f"privacy budget exceeded ({where}, users={users!r}): asked epsilon="
                    f"{epsilon:g}, delta={delta:g} for {kind} {description!r}; already spent "
                    f"epsilon={spent.epsilon:g}, delta={spent.delta:g} of the totals epsilon="
                    f"{totals.epsilon:g}, delta={totals.delta:g}; remaining epsilon="
                    f"{remaining.epsilon:g}, delta={remaining.delta:g}. Nothing was recorded.",
                    requested=Budget(epsilon, delta), spent=spent, remaining=remaining,
                    users=users)
            entry = {"id": len(state["entries"]),
                     "timestamp": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
                     "kind": kind, "users": users, "epsilon": epsilon, "delta": delta,
                     "description": description}
            state["entries"].append(entry)
        return dict(entry)


# ---------------------------------------------------------------------- sharing by name
_REGISTRY = {}
_REGISTRY_LOCK = threading.Lock()


def register_ledger(name, ledger, replace=False):
    """Make ``ledger`` reachable by ``name`` in this process (for ``ledger=name`` parameters).

    Names live in this process only: GridSearchCV workers in other processes
    (``n_jobs > 1`` with the default backend) do not see them; use a file ledger there.
    A registered name takes precedence over a file of the same name.

    Parameters
    ----------
    name : str
        A non-empty name, passed as the estimators' ``ledger`` parameter.
    ledger : PrivacyLedger
        The ledger to share.
    replace : bool, default=False
        Whether a different ledger already registered under ``name`` may be replaced.

    Raises
    ------
    ValueError
        If ``name`` is empty, ``ledger`` is not a PrivacyLedger, or ``name`` is taken by
        another ledger and ``replace`` is False.

    See Also
    --------
    unregister_ledger : Forget a registered ledger.
    resolve_ledger : The ledger an estimator's ``ledger`` parameter names.

    Examples
    --------
    >>> register_ledger("doctest-survey", PrivacyLedger(total_epsilon=1.0))
    >>> resolve_ledger("doctest-survey").total_epsilon
    1.0
    >>> unregister_ledger("doctest-survey")
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a ledger is registered under a non-empty string, got {name!r}.")
    if not isinstance(ledger, PrivacyLedger):
        raise ValueError(f"register_ledger needs a PrivacyLedger, got {type(ledger).__name__}.")
    with _REGISTRY_LOCK:
        if name in _REGISTRY and _REGISTRY[name] is not ledger and not replace:
            raise ValueError(f"a different ledger is already registered as {name!r}; "
                             "unregister it first or pass replace=True.")
        _REGISTRY[name] = ledger


def unregister_ledger(name):
    """Forget the ledger registered as ``name`` (a ValueError if there is none).

    Parameters
    ----------
    name : str
        The name given to :func:`register_ledger`.

    Raises
    ------
    ValueError
        If no ledger is registered as ``name``.

    See Also
    --------
    register_ledger : Register a ledger by name.

    Examples
    --------
    >>> register_ledger("doctest-pilot", PrivacyLedger(total_epsilon=1.0))
    >>> unregister_ledger("doctest-pilot")
    >>> resolve_ledger("doctest-pilot")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: ledger 'doctest-pilot' is neither a ledger registered in this process ...
    """
    with _REGISTRY_LOCK:
        if name not in _REGISTRY:
            raise ValueError(f"no ledger is registered as {name!r}.")
        del _REGISTRY[name]


def resolve_ledger(ledger, users=EVERYONE):
    """The PrivacyLedger named by an estimator's ``ledger`` parameter, or None.

    ``ledger`` is None, the name of a registered ledger, or the path of a ledger file;
    ``users`` (the estimator's ``ledger_users``) must be ``"all"`` or a declared group.

    Parameters
    ----------
    ledger : str, os.PathLike or None
        A name given to :func:`register_ledger` (looked up first) or the path of a ledger
        file; None for no ledger.
    users : str, default="all"
        The group the estimator charges; it must exist in the ledger.

    Returns
    -------
    PrivacyLedger or None
        The registered ledger, the file ledger, or None if ``ledger`` is None.

    Raises
    ------
    ValueError
        If ``ledger`` is a PrivacyLedger object (not a plain value), names neither a
        registered ledger nor an existing file, or ``users`` is not a group of it.

    See Also
    --------
    register_ledger : Register a ledger by name.
    charge_ledger : Charge the ledger a parameter names.

    Examples
    --------
    >>> register_ledger("doctest-panel", PrivacyLedger(total_epsilon=3.0))
    >>> resolve_ledger("doctest-panel").remaining()
    Budget(epsilon=3.0, delta=0.0)
    >>> resolve_ledger(None) is None
    True
    >>> unregister_ledger("doctest-panel")
    """
    if ledger is None:
        return None
    if isinstance(ledger, PrivacyLedger):
        raise ValueError(
            "ledger must be a plain value: the path of a ledger file or the name given to "
            "register_ledger, not a PrivacyLedger object (clone and GridSearchCV copy "
            "objects, so the copies would not share it). Pass ledger.path for a file ledger, "
            "or register_ledger('name', ledger) and pass 'name'.")
    if not isinstance(ledger, str | os.PathLike):
        raise ValueError(f"ledger must be None, a registered ledger name or a ledger file path, "
                         f"got {type(ledger).__name__}.")
    with _REGISTRY_LOCK:
        registered = _REGISTRY.get(ledger) if isinstance(ledger, str) else None
    if registered is not None:
        resolved = registered
    elif os.path.exists(ledger):
        resolved = PrivacyLedger.open(ledger)
    else:
        raise ValueError(f"ledger {os.fspath(ledger)!r} is neither a ledger registered in this "
                         f"process (registered: {sorted(_REGISTRY)}) nor an existing ledger "
                         "file (create one with PrivacyLedger.create).")
    _check_users(users, resolved.groups)
    return resolved


def charge_ledger(ledger, epsilon, delta=0.0, *, kind, users=EVERYONE, description):
    """Charge the ledger named by an estimator parameter (nothing if ``ledger`` is None).

    Parameters
    ----------
    ledger : str, os.PathLike or None
        A registered ledger name or a ledger file path (see :func:`resolve_ledger`); None
        charges nothing.
    epsilon : float
        The epsilon spent, >= 0.
    delta : float, default=0.0
        The delta spent, in [0, 1).
    kind : {"collection", "release"}
        A local-model collection or a central-model release.
    users : str, default="all"
        ``"all"`` or a declared cohort of the ledger.
    description : str
        What the budget is spent on.

    Returns
    -------
    dict or None
        The recorded entry (see :meth:`PrivacyLedger.charge`), or None without a ledger.

    Raises
    ------
    BudgetExceededError
        If the charge would exceed the ledger's totals (nothing is recorded).
    ValueError
        If ``ledger`` cannot be resolved or an argument is invalid.

    See Also
    --------
    resolve_ledger : The ledger a parameter names.
    PrivacyLedger.charge : Record a charge on a ledger object.

    Examples
    --------
    >>> register_ledger("doctest-census", PrivacyLedger(total_epsilon=2.0))
    >>> entry = charge_ledger("doctest-census", 0.5, kind="collection", description="wave 1")
    >>> entry["epsilon"], resolve_ledger("doctest-census").remaining().epsilon
    (0.5, 1.5)
    >>> charge_ledger(None, 0.5, kind="collection", description="no ledger") is None
    True
    >>> unregister_ledger("doctest-census")
    """
    resolved = resolve_ledger(ledger, users)
    if resolved is None:
        return None
    return resolved.charge(epsilon, delta, kind=kind, users=users, description=description)
