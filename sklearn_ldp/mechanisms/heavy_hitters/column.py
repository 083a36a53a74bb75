"""One column of values for heavy hitters: the mechanism the report containers carry.

One column whose values are too many to list (strings of a declared byte length, integers of
a declared bit length): the reports of PEM / TreeHist (prefix extension) or of Apple's CMS /
HCMS sketches. :class:`HeavyHitterMechanism` (kind ``"heavy_hitters"``) lets
:class:`~sklearn_ldp.LDPReports`, :class:`~sklearn_ldp.AggregatedReports`, their files and
frames carry such reports; the math is that of
:mod:`sklearn_ldp.mechanisms.heavy_hitters`, whose ``to_dict`` specification (the
one the clients rebuild the randomizer from) is kept unchanged inside this one's ``params``.
Its spec kind is dispatched by :func:`~sklearn_ldp.mechanisms._base.specs.load_mechanism`.
"""

import numpy as np

from ...deploy.limits import check_size
from .._base.docstrings import from_dict_docstring
from .._base.headers import check_spec_header
from .._base.mechanism import MAX_REPORTS, Mechanism, ReportCheck, exact_total
from .prefix import LENGTH_ROUND_FIRST, PrefixHeavyHitters, length_oracle
from .sketches import SketchFrequencyOracle
from .values import MAX_BIT_LENGTH, decode_values, encode_values, n_words

HEAVY_HITTERS_KIND = "heavy_hitters"
# Version 2: the prefix protocol's verification round, and the strings' declared maximum.
HEAVY_HITTERS_SPEC_VERSION = 2
HEAVY_HITTER_STRATEGIES = ("pem", "treehist", "cms", "hcms")
VALUE_TYPES = ("strings", "integers")
# Longest values: integers are numpy integers (64 bits); strings at most MAX_BIT_LENGTH bits.
MAX_INTEGER_BITS = 64
MAX_STRING_BYTES = MAX_BIT_LENGTH // 8


def _check_value_spec(value_type, bit_length, where):
    """``(value_type, bit_length)`` validated, or a ValueError naming ``where``."""
    if not isinstance(value_type, str) or value_type not in VALUE_TYPES:
        raise ValueError(f"{where}: the values must be one of {VALUE_TYPES}, got "
                         f"{value_type!r}.")
    top = MAX_INTEGER_BITS if value_type == "integers" else MAX_BIT_LENGTH
    if isinstance(bit_length, bool) or not isinstance(bit_length, int) \
            or not 1 <= bit_length <= top or (value_type == "strings" and bit_length % 8):
        raise ValueError(f"{where}: the bit length of {value_type} must be an integer in "
                         f"[1, {top}]{' and a multiple of 8' if value_type == 'strings' else ''},"
                         f" got {bit_length!r}.")
    return value_type, bit_length


def _plain(value):
    """A numpy scalar as the Python value (for messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _is_pandas_vector(values):
    """Whether ``values`` is a pandas Series or Index (without importing pandas here)."""
    return type(values).__module__.startswith("pandas") and hasattr(values, "to_numpy")


def _first_row(bad, inverse=None):
    """The first user holding a bad value: ``bad`` flags the values (the distinct values
    ``inverse`` indexes, when given)."""
    if inverse is None:
        return int(np.flatnonzero(bad)[0])
    return int(np.flatnonzero(bad[inverse])[0])


def _is_missing(value):
    """Whether one value is missing as pandas counts it: None, NaN, NaT or ``pd.NA``."""
    if value is None:
        return True
    try:
        return bool(value != value)  # NaN, NaT (and a Decimal NaN) differ from themselves
    except (TypeError, ValueError):  # pd.NA: its truth value is ambiguous
        return type(value).__name__ == "NAType"


def _missing(array):
    """The missing entries of a 1-D array, as ``pandas.isna`` finds them."""
    if array.dtype.kind in "fc":
        return np.isnan(array)
    if array.dtype.kind in "mM":
        return np.isnat(array)
    if array.dtype.kind != "O":
        return np.zeros(array.shape, dtype=bool)
    return np.array([_is_missing(value) for value in array.tolist()], dtype=bool)


def _is_real_number(value):
    """An int or float (Python or numpy), not a boolean: what an integer column may hold."""
    return isinstance(value, int | float | np.integer | np.floating) \
        and not isinstance(value, bool | np.bool_)


class HeavyHitterMechanism(Mechanism):
    """The reports of one column of strings or integers for heavy hitters and frequencies.

    Wraps a :class:`~sklearn_ldp.mechanisms.heavy_hitters.prefix.PrefixHeavyHitters` (PEM,
    TreeHist) or a :class:`~sklearn_ldp.mechanisms.heavy_hitters.sketches.SketchFrequencyOracle`
    (CMS, HCMS) with the column's name and how its values are encoded, so that
    :class:`LDPReports` (and its files, with their SHA-256 and size caps) carry the reports of
    ``LDPEncoder(categories={"url": "strings"}, strategy="pem")``.
    :class:`~sklearn_ldp.HeavyHitterEstimator` decodes them.

    Report layout (one row per user): PEM / TreeHist ``[round, seed, y]`` (uint64, the math
    layer's), and with ``max_string_bytes`` the length round's rows ``[LENGTH_ROUND_FIRST +
    j, seed, y]`` (a device's UTF-8 length through ``length_oracle``, ``j`` its round);
    HCMS ``[j, l, bit]`` (uint32); CMS ``2 + ceil(m / 8)`` bytes (uint8): the hash index
    ``j`` big-endian in two bytes, then the packed ``+-1`` vector.

    Parameters
    ----------
    oracle : PrefixHeavyHitters or SketchFrequencyOracle
        The protocol.
    column : str
        The column's name.
    value_type : {"strings", "integers"}
        Strings (UTF-8, at most ``bit_length / 8`` bytes) or integers in
        ``[0, 2^bit_length)``.
    bit_length : int
        Bits of a value (for the sketches, of the encoding that is hashed).
    max_string_bytes : int or None, default=None
        Strings found by PEM or TreeHist whose rounds were fitted by a length round: the
        declared maximum in bytes (``bit_length / 8`` to 255); longer values are refused,
        values longer than the rounds cover are sent truncated, and the length round's rows
        are read. None: no length round, at most ``bit_length / 8`` bytes.

    See Also
    --------
    sklearn_ldp.HeavyHitterEstimator : Decodes the reports.
    sklearn_ldp.LDPEncoder : Builds this mechanism for ``strategy="pem"`` (and the others).

    References
    ----------
    .. [1] T. Wang, N. Li and S. Jha, "Locally differentially private heavy hitter
       identification", IEEE TDSC, 2019.
    .. [2] Apple Differential Privacy Team, "Learning with privacy at scale", Apple Machine
       Learning Journal, 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms.heavy_hitters.sketches import SketchFrequencyOracle
    >>> mechanism = HeavyHitterMechanism(SketchFrequencyOracle(2.0, 16, 64, hadamard=True),
    ...                                  "app", "strings", 64)
    >>> reports = mechanism.randomize(mechanism.encode(["mail", "maps"], "apps"),
    ...                               np.random.default_rng(0))
    >>> reports.shape, mechanism.strategy
    ((2, 3), 'hcms')
    """

    kind = HEAVY_HITTERS_KIND

    def __init__(self, oracle, column, value_type, bit_length, max_string_bytes=None):
        if not isinstance(oracle, PrefixHeavyHitters | SketchFrequencyOracle):
            raise ValueError(f"oracle must be a PrefixHeavyHitters or a SketchFrequencyOracle, "
                             f"got {type(oracle).__name__}.")
        if not isinstance(column, str):
            raise ValueError(f"column must be a str, got {column!r}.")
        self.value_type, self.bit_length = _check_value_spec(value_type, bit_length,
                                                             f"column {column!r}")
        if self.value_type == "strings" and self.bit_length % 8:
            raise ValueError(f"column {column!r}: strings need a multiple of 8 bits.")
        self.prefix = isinstance(oracle, PrefixHeavyHitters)
        if self.prefix and oracle.bit_length != self.bit_length:
            raise ValueError(f"column {column!r}: the protocol's bit_length "
                             f"{oracle.bit_length} is not the values' {self.bit_length}.")
        if not self.prefix:
            check_size(oracle.n_hashes * oracle.width, "the sketch's cells (n_hashes * width)",
                       "max_matrix_entries", f"column {column!r}")
        # Strings whose prefix rounds were fitted by a length round (max_string_bytes given):
        # the users of the length round report their length through `length_oracle`
        # (rounds numbered from LENGTH_ROUND_FIRST), and a value longer than bit_length / 8
        # bytes (at most max_string_bytes) is reported truncated, without its end (a found
        # value without an end is dropped as truncated).
        self.declared_bytes = max_string_bytes
        self.max_string_bytes = self._check_cap(max_string_bytes, value_type, column)
        self.truncates = self.prefix and self.max_string_bytes > self.bit_length // 8
        self.length_oracle = length_oracle(oracle.epsilon) \
            if self.prefix and max_string_bytes is not None else None
        self.oracle = oracle
        self.column = column
        self.epsilon = float(oracle.epsilon)
        self.n_inputs = None  # the domain (every value of bit_length bits) is not listed
        self.name = self.strategy
        self.params = {}

    def _check_cap(self, cap, value_type, column):
        """The declared maximum of a string (``bit_length / 8`` when None); 0 for integers."""
        if value_type != "strings" or not self.prefix:
            if cap is not None:
                raise ValueError(f"column {column!r}: max_string_bytes (a length round) is "
                                 f"for strings found by PEM or TreeHist, got {cap!r}.")
            return 0 if value_type != "strings" else self.bit_length // 8
        if cap is None:
            return self.bit_length // 8
        if isinstance(cap, bool) or not isinstance(cap, int) \
                or not self.bit_length // 8 <= cap <= MAX_STRING_BYTES:
            raise ValueError(f"column {column!r}: max_string_bytes must be an integer in "
                             f"[{self.bit_length // 8}, {MAX_STRING_BYTES}], got {cap!r}.")
        return cap

    def randomize_lengths(self, words, rng):
        """The length round's reports of encoded strings: each value's length in bytes
        through ``length_oracle`` (an 8-bit PEM), its rounds numbered from
        ``LENGTH_ROUND_FIRST`` (the rows of :func:`~.prefix.length_round_spec`'s devices)."""
        lengths = np.count_nonzero(
            np.frombuffer(np.asarray(words, dtype=np.uint64).astype(">u8").tobytes(),
                          dtype=np.uint8).reshape(words.shape[0], -1), axis=1)
        reports = self.length_oracle.randomize(encode_values(lengths, 8), rng)
        reports[:, 0] += np.uint64(LENGTH_ROUND_FIRST)
        return reports

    def prefix_reports(self, reports):
        """The rows of the prefix rounds (without the length round's)."""
        return reports[reports[:, 0] < self.oracle.n_rounds]

    @property
    def strategy(self):
        """``"pem"``, ``"treehist"``, ``"cms"`` or ``"hcms"``."""
        if self.prefix:
            return self.oracle.protocol
        return "hcms" if self.oracle.hadamard else "cms"

    @property
    def n_words(self):
        """uint64 words per encoded value."""
        return n_words(self.bit_length)

    def __repr__(self):
        return (f"HeavyHitterMechanism({self.strategy}, column={self.column!r}, "
                f"{self.value_type} of {self.bit_length} bits, epsilon={self.epsilon:g})")

    # ------------------------------------------------------------------ spec
    def to_dict(self):
        """The specification: the column, its values and the protocol's own ``to_dict``.

        Returns
        -------
        dict
            ``"version"``, ``"mechanism"`` (``"heavy_hitters"``), ``"epsilon"`` and
            ``"params"``: ``"column"``, ``"values"``, ``"bit_length"``, ``"oracle"``.
        """
        return {"version": HEAVY_HITTERS_SPEC_VERSION, "mechanism": HEAVY_HITTERS_KIND,
                "epsilon": self.epsilon,
                "params": {"column": self.column, "values": self.value_type,
                           "bit_length": self.bit_length, "oracle": self.oracle.to_dict(),
                           "max_string_bytes": self.declared_bytes}}

    @classmethod
    @from_dict_docstring
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`; every problem is a ValueError naming the field.

        <from dict: HeavyHitterMechanism>
            The mechanism it describes (sizes checked before anything is allocated).
        """
        check_spec_header(spec, HEAVY_HITTERS_KIND, HEAVY_HITTERS_SPEC_VERSION)
        params = spec.get("params")
        if not isinstance(params, dict) or set(params) != {"column", "values", "bit_length",
                                                           "oracle", "max_string_bytes"}:
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification's params must have "
                             "exactly the fields column, values, bit_length, oracle and "
                             "max_string_bytes.")
        oracle_spec = params["oracle"]
        if not isinstance(oracle_spec, dict):
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification's oracle must be an "
                             f"object, got {type(oracle_spec).__name__}.")
        kind = oracle_spec.get("mechanism")
        if kind == SketchFrequencyOracle.kind:
            # The sketch's k x m cells are allocated by every aggregate: capped before.
            k, m = oracle_spec.get("n_hashes"), oracle_spec.get("width")
            if all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in (k, m)):
                check_size(k * m, "the sketch's cells (n_hashes * width)",
                           "max_matrix_entries", f"the {HEAVY_HITTERS_KIND!r} specification")
            build = SketchFrequencyOracle.from_dict
        elif kind == PrefixHeavyHitters.kind:
            build = PrefixHeavyHitters.from_dict
        else:
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification's oracle is "
                             f"{kind!r}, not {PrefixHeavyHitters.kind!r} or "
                             f"{SketchFrequencyOracle.kind!r}.")
        try:
            oracle = build(oracle_spec)
        except (TypeError, KeyError, OverflowError) as exc:
            raise ValueError(f"malformed {HEAVY_HITTERS_KIND!r} oracle: {exc}") from None
        mechanism = cls(oracle, params["column"], params["values"], params["bit_length"],
                        params["max_string_bytes"])
        claimed = spec.get("epsilon")
        if isinstance(claimed, bool) or not isinstance(claimed, int | float) \
                or claimed != mechanism.epsilon:
            raise ValueError(f"the {HEAVY_HITTERS_KIND!r} specification claims epsilon="
                             f"{claimed!r}, its oracle {mechanism.epsilon!r}.")
        return mechanism

    def client_dict(self):
        """The protocol's own specification (what the clients rebuild the randomizer from);
        a sketch's also carries the values' ``bit_length`` (its hashes cover the encoded
        words, so a device needs it to encode a value)."""
        spec = self.oracle.to_dict()
        if not self.prefix:
            spec["bit_length"] = self.bit_length
        if self.truncates:  # longer strings, up to this, are sent truncated
            spec["max_string_bytes"] = self.max_string_bytes
        return spec

    # ------------------------------------------------------------------ values
    def encode(self, values, column=None, inverse=None):
        """The values as ``(n, W)`` uint64 words; a ValueError naming a bad value.

        Strings must be ``str`` valid in UTF-8 (no lone surrogates), without NUL characters
        (the zero padding), of at most ``bit_length / 8`` bytes; integers must be integers
        (an integral float is accepted; booleans are not) in ``[0, 2^bit_length)``. Missing
        values are refused here (the encoder replaces them first, as ``handle_missing``
        says).

        Parameters
        ----------
        values : array-like of shape (n,)
            The values.
        column : str or None, default=None
            Named in the messages (default: the mechanism's column).
        inverse : array-like of int, shape (n,), or None, default=None
            Strings only: ``values`` are the distinct values and user ``i`` holds
            ``values[inverse[i]]`` (each distinct string is then checked and encoded once;
            the messages name the first row holding a bad value).

        Returns
        -------
        ndarray of uint64, shape (n, W)
            :func:`~sklearn_ldp.mechanisms.heavy_hitters.values.encode_values` of the values.
        """
        column = self.column if column is None else column
        array = values.to_numpy() if _is_pandas_vector(values) \
            else np.asarray(values, dtype=None if isinstance(values, np.ndarray) else object)
        if array.ndim != 1:
            raise ValueError(f"column {column!r}: the values must be one-dimensional, got "
                             f"shape {array.shape}.")
        inverse = self._check_inverse(array, inverse, column)
        if array.size:
            absent = _missing(array)
            if absent.any():
                row = _first_row(absent, inverse)
                raise ValueError(f"column {column!r} has {int(absent.sum())} missing values "
                                 f"(first at row {row}): pass handle_missing='category' with "
                                 "missing_category=<a value> to count them as that value.")
        if self.value_type == "strings":
            return self.encode_utf8(self._utf8(array, column, inverse)[0])
        return self._encode_integers(array, column)

    def _check_inverse(self, array, inverse, column):
        """``inverse`` as an int64 array indexing ``array`` (None stays None)."""
        if inverse is None:
            return None
        if self.value_type != "strings":
            raise ValueError(f"column {column!r}: inverse is for strings; integers are "
                             "encoded as they are.")
        inverse = np.asarray(inverse)
        if inverse.ndim != 1 or inverse.dtype.kind not in "iu" or (inverse.size and (
                int(inverse.min()) < 0 or int(inverse.max()) >= array.shape[0])):
            raise ValueError(f"column {column!r}: inverse must be 1-D integers in "
                             f"[0, {array.shape[0]}), got dtype {inverse.dtype} and shape "
                             f"{inverse.shape}.")
        return inverse.astype(np.int64, copy=False)

    def utf8(self, values, column=None, inverse=None):
        """Strings as UTF-8 bytes and their lengths, checked as :meth:`encode` checks them
        (at most ``max_string_bytes``), not yet encoded to ``bit_length`` bits
        (:meth:`encode_utf8` does that).

        Parameters
        ----------
        values : array-like of str, shape (n,)
            The values.
        column : str or None, default=None
            Named in the messages (default: the mechanism's column).
        inverse : array-like of int, shape (n,), or None, default=None
            As in :meth:`encode`: ``values`` are the distinct values, user ``i`` holds
            ``values[inverse[i]]``.

        Returns
        -------
        encoded : ndarray of bytes, shape (n,)
        lengths : ndarray of int, shape (n,)
        """
        column = self.column if column is None else column
        array = values.to_numpy() if _is_pandas_vector(values) \
            else np.asarray(values, dtype=None if isinstance(values, np.ndarray) else object)
        if array.ndim != 1 or self.value_type != "strings":
            raise ValueError(f"column {column!r}: utf8 takes a 1-D array of strings.")
        return self._utf8(array, column, self._check_inverse(array, inverse, column))

    def encode_utf8(self, encoded):
        """:meth:`utf8`'s bytes as ``(n, W)`` uint64 words (what :meth:`encode` returns)."""
        encoded = encoded.astype(f"S{self.bit_length // 8}")  # longer truncated (__init__)
        padded = encoded.astype(f"S{self.n_words * 8}")  # zero bytes after the value
        return np.frombuffer(padded.tobytes(), dtype=">u8").reshape(encoded.shape[0],
                                                                    self.n_words) \
            .astype(np.uint64)

    def _utf8(self, array, column, inverse=None):
        """The strings as UTF-8 bytes (a numpy bytes array) and their lengths; a ValueError
        names a value that is not a str, not valid UTF-8, holds a NUL or is over the cap.
        With ``inverse``, ``array`` holds the distinct values: each is checked and encoded
        once, then gathered per user."""
        original = array
        if array.dtype.kind != "U":
            not_str = np.array([not isinstance(v, str) for v in array.tolist()], dtype=bool)
            if not_str.any():
                row = _first_row(not_str, inverse)
                value = array[np.flatnonzero(not_str)[0]]
                raise ValueError(f"column {column!r} holds strings, but row {row} is "
                                 f"{_plain(value)!r} ({type(value).__name__}).")
            array = array.astype(str) if array.size else np.zeros(0, dtype="U1")
        try:
            encoded = np.char.encode(array, "utf-8")
        except UnicodeEncodeError:
            bad = np.zeros(array.shape, dtype=bool)
            for i, value in enumerate(array.tolist()):  # only to name the bad value
                try:
                    value.encode("utf-8")
                except UnicodeEncodeError as exc:
                    bad[i], reason = True, exc.reason
                    break
            else:
                raise
            raise ValueError(f"column {column!r}: the value {_plain(array[i])!r} at row "
                             f"{_first_row(bad, inverse)} is not valid in UTF-8 "
                             f"({reason}).") from None
        lengths = np.char.str_len(encoded) if encoded.size else np.zeros(0, dtype=int)
        # Checked on the Python strings (numpy's fixed-width strings drop trailing NULs).
        nul = np.array(["\0" in value for value in original.tolist()], dtype=bool) \
            if array.size else np.zeros(0, dtype=bool)
        if nul.any():
            raise ValueError(f"column {column!r}: the value {original[np.flatnonzero(nul)[0]]!r}"
                             f" at row {_first_row(nul, inverse)} holds a NUL character, which "
                             "the zero padding of the encoding cannot tell apart.")
        too_long = lengths > self.max_string_bytes
        if too_long.any():
            i = int(np.flatnonzero(too_long)[0])
            raise ValueError(f"column {column!r}: the value {_plain(array[i])!r} at row "
                             f"{_first_row(too_long, inverse)} takes "
                             f"{int(lengths[i])} bytes in UTF-8, more than the declared "
                             f"{self.max_string_bytes} (max_string_bytes).")
        if inverse is not None:
            return encoded[inverse], lengths[inverse]
        return encoded, lengths

    def _encode_integers(self, array, column):
        if array.dtype.kind == "b":
            raise ValueError(f"column {column!r} holds integers, got booleans.")
        if array.dtype.kind == "O" and array.size:
            if not all(_is_real_number(v) for v in array.tolist()):
                bad = [i for i, v in enumerate(array.tolist())
                       if isinstance(v, bool) or not isinstance(v, int | float | np.number)]
                row = bad[0] if bad else 0
                raise ValueError(f"column {column!r} holds integers, but row {row} is "
                                 f"{_plain(array[row])!r}.")
            if all(isinstance(v, int) for v in array.tolist()):
                try:
                    array = array.astype(np.int64)
                except OverflowError:  # above 2^63 (a 64-bit value) or below -2^63
                    try:
                        array = array.astype(np.uint64)
                    except OverflowError:
                        array = array.astype(float)  # refused below, named
            else:
                array = array.astype(float)
        if array.dtype.kind == "f":
            bad = ~np.isfinite(array) | (array != np.floor(array))
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ValueError(f"column {column!r}: the value {_plain(array[row])!r} at row "
                                 f"{row} is not an integer.")
            limit = 2.0 ** self.bit_length
            bad = (array < 0) | (array >= limit)
            if bad.any():
                row = int(np.flatnonzero(bad)[0])
                raise ValueError(f"column {column!r}: the value {_plain(array[row])!r} at row "
                                 f"{row} is outside [0, 2^{self.bit_length}).")
            array = array.astype(np.uint64)
        elif array.dtype.kind not in "iu" and array.size:
            raise ValueError(f"column {column!r} holds integers, got dtype {array.dtype}.")
        array = array.astype(np.int64 if array.dtype.kind == "i" else np.uint64, copy=False) \
            if array.size else np.zeros(0, dtype=np.uint64)
        bad = array < 0
        if self.bit_length < 64:
            bad = bad | (array >= (1 << self.bit_length))
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise ValueError(f"column {column!r}: the value {int(array[row])} at row {row} is "
                             f"outside [0, 2^{self.bit_length}).")
        return encode_values(array.astype(np.uint64), self.bit_length)

    def possible(self, words):
        """Which encoded values some user can hold: every integer; a string whose bytes,
        without the zero padding, hold no zero byte and are valid UTF-8 (a prefix-extension
        protocol can return others only as false positives)."""
        words = np.asarray(words, dtype=np.uint64)
        if self.value_type == "integers":
            return np.ones(words.shape[0], dtype=bool)
        raw = words.astype(">u8").tobytes()
        width = words.shape[1] * 8
        ok = np.ones(words.shape[0], dtype=bool)
        for i in range(words.shape[0]):  # a few found values, never the users
            whole = raw[i * width:(i + 1) * width][:self.bit_length // 8]
            value = whole.rstrip(b"\0")
            if self.truncates and len(value) == len(whole):  # no end: a truncated value
                ok[i] = False
                continue
            try:
                ok[i] = b"\0" not in value and value.decode("utf-8") is not None
            except UnicodeDecodeError:
                ok[i] = False
        return ok

    def possible_prefix(self, words, length):
        """Which ``(c, W)`` candidate prefixes of ``length`` bits some user's value can start
        with: every integer prefix; for strings, once a zero byte (the end) appears every
        later bit must be zero, and the complete bytes before it must be a valid UTF-8
        prefix (a whole one when the string ended). Vectorized over the candidates: a
        UTF-8 state machine that steps through the bytes."""
        words = np.asarray(words, dtype=np.uint64)
        if self.value_type == "integers":
            return np.ones(words.shape[0], dtype=bool)
        n_bytes = -(-length // 8)  # the last byte may be partial (its low bits are zero)
        raw = words.astype(">u8").view(np.uint8).reshape(words.shape[0], -1)[:, :n_bytes]
        raw = raw.astype(np.int64)
        zero = raw == 0
        ended = zero.any(axis=1)
        end = np.where(ended, np.argmax(zero, axis=1), length // 8)
        ok = ~((np.arange(n_bytes) > end[:, None]) & ~zero).any(axis=1)
        need = np.zeros(words.shape[0], dtype=np.int64)  # continuation bytes still due
        low = np.full(words.shape[0], 0x80)
        high = np.full(words.shape[0], 0xBF)
        for j in range(int(end.max(initial=0))):
            active = j < end
            b = raw[:, j]
            inside = need > 0
            lead = np.select([b < 0x80, (b >= 0xC2) & (b <= 0xDF), (b >= 0xE0) & (b <= 0xEF),
                              (b >= 0xF0) & (b <= 0xF4)], [0, 1, 2, 3], -1)
            ok &= ~active | np.where(inside, (b >= low) & (b <= high), lead >= 0)
            step = active & ok
            # The second byte of E0, ED, F0 and F4 sequences has narrower bounds (no
            # overlong forms, surrogates or code points above U+10FFFF).
            low = np.where(step, np.where(~inside & (b == 0xE0), 0xA0,
                                          np.where(~inside & (b == 0xF0), 0x90, 0x80)), low)
            high = np.where(step, np.where(~inside & (b == 0xED), 0x9F,
                                           np.where(~inside & (b == 0xF4), 0x8F, 0xBF)), high)
            need = np.where(step, np.where(inside, need - 1, np.maximum(lead, 0)), need)
        return ok & ~(ended & (need > 0))  # an ended string holds whole characters

    def ended_prefix(self, words, length):
        """Which ``(c, W)`` candidate prefixes of ``length`` bits are whole strings already: a
        complete zero byte (the end of the value) lies within them. Integers end only at
        ``bit_length`` (all False)."""
        words = np.asarray(words, dtype=np.uint64)
        if self.value_type == "integers" or length < 8:
            return np.zeros(words.shape[0], dtype=bool)
        raw = np.frombuffer(words.astype(">u8").tobytes(), dtype=np.uint8)
        complete = raw.reshape(words.shape[0], 8 * words.shape[1])[:, :length // 8]
        return (complete == 0).any(axis=1)

    def decode(self, words):
        """Values (a list of str, or an int64/uint64 array) of ``(n, W)`` words."""
        values = decode_values(words, self.bit_length, self.value_type == "strings")
        if self.value_type == "integers" and self.bit_length < 64:
            return np.asarray(values, dtype=np.int64)
        return values

    # ------------------------------------------------------------------ client side
    def randomize(self, indices, rng):
        """Privatize encoded values (``(n, W)`` uint64 words, :meth:`encode`) or 1-D values.

        Parameters
        ----------
        indices : ndarray
            ``(n, W)`` uint64 words, or one value per user (encoded by :meth:`encode`).
        rng : numpy.random.Generator
            The source of randomness.

        Returns
        -------
        ndarray
            One report row per user (layout in the class docstring).
        """
        words = np.asarray(indices)
        if not (words.ndim == 2 and words.dtype == np.uint64):
            words = self.encode(indices)
        if self.prefix:
            return self.oracle.randomize(words, rng)
        parts = self.oracle.randomize(words, rng)
        if self.oracle.hadamard:
            return np.column_stack(parts).astype(np.uint32)
        j, bits = parts
        head = np.column_stack([(j >> 8).astype(np.uint8), (j & 0xFF).astype(np.uint8)])
        return np.concatenate([head, bits], axis=1)

    def exact_law(self, value, seed=0):
        """The exact law of one user's report row, given the public hashes (the report's
        seed for PEM / TreeHist, ``hash_seed`` for the sketches): the oracle's law with its
        outputs in this mechanism's row layout.

        Parameters
        ----------
        value : str or int
            The user's value (as :meth:`encode` takes it).
        seed : int, default=0
            PEM / TreeHist: the report's hash seed (ignored by the sketches).

        Returns
        -------
        ExactLaw
            The oracle's law, its outputs in this mechanism's report-row layout.
        """
        words = self.encode([value])
        if self.prefix:
            return self.oracle.exact_law(words, seed=seed)
        law = self.oracle.exact_law(words, bit_length=self.bit_length)
        rows = np.asarray(law.outputs)
        if self.oracle.hadamard:
            return law._replace(outputs=rows.astype(np.uint32))
        head = np.column_stack([rows[:, 0] >> 8, rows[:, 0] & 0xFF])
        return law._replace(outputs=np.concatenate([head, rows[:, 1:]], axis=1)
                            .astype(np.uint8))

    def empty_reports(self):
        """Zero reports with the layout of this mechanism's report rows."""
        if self.prefix:
            return np.zeros((0, 3), dtype=np.uint64)
        if self.oracle.hadamard:
            return np.zeros((0, 3), dtype=np.uint32)
        return np.zeros((0, 2 + (self.oracle.width + 7) // 8), dtype=np.uint8)

    # ------------------------------------------------------------------ server side
    def report_validity(self, reports):
        """Which reports the protocol can send, as a ``ReportCheck`` (a wrong layout raises).

        Parameters
        ----------
        reports : array-like
            Report rows (layout in the class docstring).

        Returns
        -------
        ReportCheck
            The reports, a boolean per report and the rule in words.
        """
        reports = np.asarray(reports)
        empty = self.empty_reports()
        if reports.ndim != 2 or reports.shape[1] != empty.shape[1] \
                or reports.dtype != empty.dtype:
            raise ValueError(f"{self!r} reports are a (n, {empty.shape[1]}) {empty.dtype} "
                             f"array, got shape {reports.shape} and dtype {reports.dtype}.")
        if self.prefix:
            limit = self.oracle.g if self.oracle.protocol == "pem" else 2
            prefix = reports[:, 0] < self.oracle.n_rounds
            bad = ~prefix | (reports[:, 2] >= limit)
            rule = f"round < {self.oracle.n_rounds}, y < {limit}"
            if self.length_oracle is not None:
                # The length round's rows: rounds LENGTH_ROUND_FIRST + j of length_oracle.
                first = LENGTH_ROUND_FIRST
                end = first + self.length_oracle.n_rounds
                length = (reports[:, 0] >= first) & (reports[:, 0] < end)
                bad = np.where(length, reports[:, 2] >= self.length_oracle.g, bad)
                rule += f"; length rounds {first} to {end - 1}, y < {self.length_oracle.g}"
        elif self.oracle.hadamard:
            k, m = self.oracle.n_hashes, self.oracle.width
            bad = (reports[:, 0] >= k) | (reports[:, 1] >= m) | (reports[:, 2] > 1)
            rule = f"j < {k}, l < {m}, bit in {{0, 1}}"
        else:
            k, m = self.oracle.n_hashes, self.oracle.width
            j = (reports[:, 0].astype(np.uint32) << np.uint32(8)) | reports[:, 1]
            bad = j >= k
            if m % 8:  # no bit past the sketch width
                bad = bad | ((reports[:, -1] >> np.uint8(m % 8)) != 0)
            rule = f"j < {k}, no bit past the width {m}"
        return ReportCheck(reports, ~bad, rule)

    def _parts(self, reports):
        """The math layer's report tuple of this mechanism's report rows."""
        if self.oracle.hadamard:
            return reports[:, 0], reports[:, 1], reports[:, 2]
        j = (reports[:, 0].astype(np.uint32) << np.uint32(8)) | reports[:, 1]
        return j, np.ascontiguousarray(reports[:, 2:])

    def aggregate(self, reports):
        """The sketches' additive statistic (the math layer's); prefix extension has none.

        Raises
        ------
        ValueError
            For PEM and TreeHist: their rounds choose the candidates of the next round from
            the estimates of the previous one, so the server keeps the reports themselves.
        """
        if self.prefix:
            raise ValueError(f"{self.strategy!r} reports have no additive statistic (each "
                             "round's candidates come from the previous round's estimates): "
                             "fit HeavyHitterEstimator on the LDPReports themselves.")
        return self.oracle.aggregate(self._parts(self.check_reports(reports)))

    def n_reports(self, statistic):
        """The number of reports a sketch statistic counts."""
        statistic = self.check_statistic(statistic)
        k, m = self.oracle.n_hashes, self.oracle.width
        return int(statistic[k * m:].sum())

    def check_statistic(self, statistic):
        """A sketch statistic checked (integer counts, consistent totals) as int64."""
        if self.prefix:
            raise ValueError(f"{self.strategy!r} reports have no additive statistic.")
        statistic = np.asarray(statistic)
        if statistic.dtype.kind not in "iu":
            raise ValueError(f"the statistic of {self!r} holds integer counts, got dtype "
                             f"{statistic.dtype}.")
        if statistic.size and statistic.max() > MAX_REPORTS:
            raise ValueError(f"the statistic of {self!r} holds a count above 2^62.")
        statistic = statistic.astype(np.int64)
        try:
            self.oracle._sketch(statistic)  # shape, signs and totals (ones <= reports)
        except ValueError as exc:
            raise ValueError(f"the statistic of {self!r}: {exc}") from None
        k, m = self.oracle.n_hashes, self.oracle.width
        if self.oracle.hadamard:
            exact_total(statistic[k * m:])
        elif exact_total(statistic[k * m:]) > MAX_REPORTS:
            raise ValueError(f"the statistic of {self!r} counts more than 2^62 reports.")
        return statistic

    def count_variance_per_user(self, frequency):
        """Variance of a value's estimated count among ``N`` users, over ``N`` (the math
        layer's ``count_variance_per_user``)."""
        return self.oracle.count_variance_per_user(frequency)

    def per_user_variance(self, workload=None):
        """``(worst_case, average_case)`` variance of one value's count, over ``N``: the
        largest over the value's share, and that of a value of share 0."""
        shares = np.linspace(0.0, 1.0, 101)
        return (float(np.max(self.count_variance_per_user(shares))),
                float(self.count_variance_per_user(0.0)))
