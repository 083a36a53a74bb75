"""The device's memoization state: SipHash-2-4 keyed PRF and the client state file.

The secret lives in a JSON state file, written atomically under a lock, bound to the spec by
the SHA-256 of its canonical JSON and sealed by a SHA-256 of its content.

SipHash-2-4 repeats ``sklearn_ldp.mechanisms._base.prf`` bit for bit, and the atomic write
(temporary file, fsync, rename, fsync of the folder) repeats ``fsync_directory`` of
``sklearn_ldp.deploy.limits``: the client uses the standard library only, so that a device
can copy this folder alone.
"""

import hashlib
import itertools
import json
import os
import random
import secrets
import tempfile

from ._exact import _MASK64, _ONE, PRECISION

STATE_FORMAT = "sklearn_ldp.client_state"
# 3: permanent responses from one-block PRF messages (sklearn_ldp.mechanisms._base.prf);
# a version-2 file's secret would give other responses, so it is refused.
STATE_VERSION = 3


def _canonical(obj):
    """The canonical JSON text of ``obj`` (sorted keys, no spaces): what digests cover."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _sha256(text):
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# The PRF that derives permanent responses from the client's secret, bit for bit the server's
# (sklearn_ldp.mechanisms._base.prf): SipHash-2-4 (Aumasson and Bernstein 2012) of the 7-byte
# message tag | value << 8 | counter << 32 (little-endian; value and counter below 2^24).
PURPOSES = ("grr-perm", "ue-plane", "dbf-bckt", "dbf-bits", "1bm-alph", "1bm-bits",
            "rap-chrt", "rap-perm")
FIELD_LIMIT = 2**24
_GROUP_WORDS = 64  # prf lanes: the word of digit block b of group g has counter 64 g + b
def _rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & _MASK64


def _sip_rounds(v0, v1, v2, v3, count):
    for _ in range(count):
        v0 = (v0 + v1) & _MASK64
        v1 = _rotl(v1, 13) ^ v0
        v0 = _rotl(v0, 32)
        v2 = (v2 + v3) & _MASK64
        v3 = _rotl(v3, 16) ^ v2
        v0 = (v0 + v3) & _MASK64
        v3 = _rotl(v3, 21) ^ v0
        v2 = (v2 + v1) & _MASK64
        v1 = _rotl(v1, 17) ^ v2
        v2 = _rotl(v2, 32)
    return v0, v1, v2, v3


def _siphash24(key, message):
    """SipHash-2-4 of ``message`` (bytes) under the 16-byte ``key``: a 64-bit integer."""
    k0, k1 = int.from_bytes(key[:8], "little"), int.from_bytes(key[8:16], "little")
    v0, v1 = k0 ^ 0x736F6D6570736575, k1 ^ 0x646F72616E646F6D
    v2, v3 = k0 ^ 0x6C7967656E657261, k1 ^ 0x7465646279746573
    tail = len(message) - len(message) % 8
    blocks = [int.from_bytes(message[i:i + 8], "little") for i in range(0, tail, 8)]
    blocks.append(int.from_bytes(message[tail:], "little") | ((len(message) & 0xFF) << 56))
    for block in blocks:
        v3 ^= block
        v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 2)
        v0 ^= block
    v2 ^= 0xFF
    v0, v1, v2, v3 = _sip_rounds(v0, v1, v2, v3, 4)
    return v0 ^ v1 ^ v2 ^ v3


def _prf(secret, label, value, counter):
    """The PRF word of ``(label, value, counter)`` under the client's 16-byte ``secret``."""
    if not (0 <= value < FIELD_LIMIT and 0 <= counter < FIELD_LIMIT):
        raise ValueError(f"PRF values and counters must lie in [0, 2^24), got {value!r}, "
                         f"{counter!r}.")
    message = (PURPOSES.index(label) + 1) | value << 8 | counter << 32
    return _siphash24(secret, message.to_bytes(7, "little"))


def _prf_bit(secret, label, value, counter, numerator):
    """1 with probability ``numerator / 2^52`` exactly: the top 52 bits of a PRF word below
    the numerator."""
    return int((_prf(secret, label, value, counter) >> 12) < numerator)


def _prf_below(secret, label, value, high):
    """A uniform integer in ``[0, high)``: the first PRF word (counters 0, 1, ...) at or above
    ``2^64 mod high``, reduced modulo ``high`` (the server's ``prf_uniform_below``)."""
    limit = (1 << 64) % high
    for counter in itertools.count():
        word = _prf(secret, label, value, counter)
        if word >= limit:
            return word % high
    raise AssertionError("unreachable")  # pragma: no cover


def _prf_lanes(secret, label, value, n_bits, numerator, own_numerator=None):
    """``n_bits`` independent bits (an integer, bit ``j`` for value ``j``), each 1 with
    probability ``numerator / 2^52`` (bit ``value`` with ``own_numerator`` when given): the
    server's bit-sliced ``prf_bernoulli_lanes`` (digit ``t`` of lane ``j`` of group ``g`` is
    bit ``(t mod P) L + j`` of the word of counter ``64 g + t div P``, ``L`` the power of two
    at least the group's width, ``P = 64 / L``; a lane's digits are compared with its
    numerator's, top digit first; a numerator of ``2^52`` is 1 without digits)."""
    own = numerator if own_numerator is None else own_numerator
    bits = 0
    for group in range((n_bits + 63) // 64):
        width = min(64, n_bits - 64 * group)
        valid = (1 << width) - 1
        own_bit = 1 << (value - 64 * group) if 0 <= value - 64 * group < width else 0
        result, undecided = 0, 0
        for lanes, a in ((valid & ~own_bit, numerator), (own_bit, own)):
            if a == _ONE:
                result |= lanes
            else:
                undecided |= lanes
        lane_bits = 1 << (width - 1).bit_length()
        per_word = 64 // lane_bits
        for t in range(PRECISION):
            if not undecided:
                break
            if t % per_word == 0:
                stored = _prf(secret, label, value, _GROUP_WORDS * group + t // per_word)
            word = stored >> ((t % per_word) * lane_bits)
            # The numerators' digit t, lane by lane (the own lane's may differ).
            digit = valid if (numerator >> (PRECISION - 1 - t)) & 1 else 0
            if (own >> (PRECISION - 1 - t)) & 1:
                digit |= own_bit
            else:
                digit &= ~own_bit
            decided = undecided & (word ^ digit)
            result |= decided & digit
            undecided &= ~decided
        bits |= result << (64 * group)
    return bits


try:  # POSIX advisory locks (standard library); elsewhere the state file is not locked
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None


def _new_secret(rng):
    """16 bytes of secret: from the operating system (``secrets``) unless the Randomizer is
    seeded (simulation: whoever knows the seed can recompute the permanent responses)."""
    if isinstance(rng, random.SystemRandom):
        return secrets.token_bytes(16)
    return rng.getrandbits(128).to_bytes(16, "little")


def _check_secret_state(state):
    """The problem of a state object (``{"secret": 32 lowercase hex digits}``), or None."""
    if not isinstance(state, dict) or set(state) != {"secret"}:
        return "it must hold exactly a 'secret'"
    secret = state["secret"]
    if not isinstance(secret, str) or len(secret) != 32 or any(
            c not in "0123456789abcdef" for c in secret):
        return (f"'secret' must be 32 lowercase hex digits (128 bits), got "
                f"{str(secret)[:40]!r}")
    return None


class _StateFile:
    """The client's secret, in a small JSON file: its permanent responses derive from it.

    A memoizing kind does not store its permanent responses: the response of a value is a
    function of the client's 128-bit secret and the value (SipHash-2-4), so a restored
    backup, a second process or a rebuilt file with the same secret gives the same
    responses, never a second one. The file holds ``format``, ``version``, ``spec_sha256``
    (the SHA-256 of the canonical JSON of the specification: the state of another spec is
    refused), ``kind``, ``state`` (``{"secret": hex}``) and ``sha256``, the SHA-256 of the
    canonical JSON of all the other fields (a seal: an edited or truncated file is refused).
    It is created on first use (permissions 0600), under an exclusive non-blocking
    ``fcntl.flock`` of ``path + ".lock"`` (a second process using the file at the same time
    is refused), and written atomically (a temporary file in the same folder, fsync,
    ``os.replace``, fsync of the folder). A file that cannot be read, that belongs to
    another spec, whose seal does not match, or that disappeared after this client used it
    is a ValueError naming the file: the client never draws a new secret in its place.
    """

    def __init__(self, path, spec, check_state=_check_secret_state):
        try:
            self.path = os.fspath(path)
        except TypeError:
            raise ValueError(f"state must be a file path, got {path!r}.") from None
        try:
            self.spec_digest = _sha256(_canonical(dict(spec)))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the specification cannot be written as JSON ({exc}), so no "
                             "state file can be bound to it.") from None
        self.kind = spec["mechanism"]
        self.check_state = check_state
        self._seen = False  # whether this client has read or written the file already

    def secret(self, rng):
        """The client's 16-byte secret: read from the file, or created (and saved) on first
        use, under the file's lock."""
        descriptor = self._lock()
        try:
            state = self.load()
            if state is None:
                state = {"secret": _new_secret(rng).hex()}
                self.save(state)
        finally:
            if descriptor is not None:
                fcntl.flock(descriptor, fcntl.LOCK_UN)
                os.close(descriptor)
        return bytes.fromhex(state["secret"])

    def _lock(self):
        if fcntl is None:  # pragma: no cover - Windows
            return None
        lock = self.path + ".lock"
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(descriptor)
            raise ValueError(f"the state file {self.path!r} is in use by another process (its "
                             f"lock {lock!r} is held): one writer at a time.") from None
        return descriptor

    def load(self):
        """The kind's state from the file (``None`` if the file does not exist yet)."""
        try:
            with open(self.path, "rb") as handle:
                raw = handle.read()
        except FileNotFoundError:
            if self._seen:
                raise ValueError(f"the state file {self.path!r} disappeared after this client "
                                 "used it; refusing to draw a new secret (restore the file: a "
                                 "new secret means new permanent responses).") from None
            return None
        try:
            content = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):
            raise ValueError(f"the state file {self.path!r} is not valid JSON (truncated or "
                             "edited); refusing to draw a new secret.") from None
        if not isinstance(content, dict) or set(content) != {
                "format", "version", "spec_sha256", "kind", "state", "sha256"}:
            raise ValueError(f"the state file {self.path!r} is not a client state file (fields "
                             f"{sorted(content) if isinstance(content, dict) else None}).")
        if content["format"] != STATE_FORMAT or content["version"] != STATE_VERSION:
            raise ValueError(f"the state file {self.path!r} has format {content['format']!r} "
                             f"version {content['version']!r}; this client writes "
                             f"{STATE_FORMAT!r} version {STATE_VERSION}.")
        seal = content.pop("sha256")
        if not isinstance(seal, str) or seal != _sha256(_canonical(content)):
            raise ValueError(f"the state file {self.path!r} does not match its SHA-256 seal: it "
                             "was edited or damaged; refusing to draw a new secret.")
        if content["spec_sha256"] != self.spec_digest or content["kind"] != self.kind:
            raise ValueError(f"the state file {self.path!r} belongs to another specification "
                             f"(kind {content['kind']!r}, spec digest "
                             f"{str(content['spec_sha256'])[:12]}...); use one state file per "
                             "specification.")
        problem = self.check_state(content["state"])
        if problem:
            raise ValueError(f"the state file {self.path!r} holds an invalid state: {problem}.")
        self._seen = True
        return content["state"]

    def save(self, state):
        """Write ``state`` sealed, atomically and durably."""
        content = {"format": STATE_FORMAT, "version": STATE_VERSION,
                   "spec_sha256": self.spec_digest, "kind": self.kind, "state": state}
        content["sha256"] = _sha256(_canonical(content))
        folder = os.path.dirname(os.path.abspath(self.path))
        # mkstemp: readable by the owner only (the file holds the secret).
        handle, temporary = tempfile.mkstemp(prefix=".state-", suffix=".tmp", dir=folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                stream.write(_canonical(content))
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise
        try:  # the rename itself made durable (POSIX; skipped where folders cannot be opened)
            descriptor = os.open(folder, os.O_RDONLY)
        except OSError:  # pragma: no cover - Windows
            descriptor = None
        if descriptor is not None:
            try:
                os.fsync(descriptor)
            except OSError:  # pragma: no cover - file systems without directory fsync
                pass
            finally:
                os.close(descriptor)
        self._seen = True
