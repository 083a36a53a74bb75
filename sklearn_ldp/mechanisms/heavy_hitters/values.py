"""Values of the heavy-hitter protocols: bit strings of a public length, as uint64 words.

Values are bit strings of a public length ``L``: integers below ``2^L`` or byte strings of at
most ``L / 8`` bytes (padded with zero bytes), held as ``(n, W)`` uint64 words, most
significant bit first (bit 0 of the value is the top bit of word 0), so that a prefix of
``l`` bits is the value with its other bits cleared.

The protocols are in :mod:`.prefix` (PEM, TreeHist) and :mod:`.sketches` (CMS, HCMS).
"""

import numbers

import numpy as np

# Multiplier of the SplitMix64 sequences (seeded hash rows, value fingerprints).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
MAX_BIT_LENGTH = 1024
# Users assumed by the defaults of the protocols when the number of users is not given.
DEFAULT_USERS = 10**6


def n_words(bit_length):
    """uint64 words that hold ``bit_length`` bits."""
    return -(-bit_length // 64)


def check_bit_length(bit_length):
    """The bit length as an int in ``[1, MAX_BIT_LENGTH]``, or a ValueError."""
    if isinstance(bit_length, bool) or not isinstance(bit_length, numbers.Integral) \
            or not 1 <= bit_length <= MAX_BIT_LENGTH:
        raise ValueError(f"bit_length must be an integer in [1, {MAX_BIT_LENGTH}], got "
                         f"{bit_length!r}.")
    return int(bit_length)


def encode_values(values, bit_length):
    """Values as ``(n, W)`` uint64 words, most significant bit first.

    Integers must lie in ``[0, 2^bit_length)``; strings (or bytes) must encode in UTF-8 to at
    most ``bit_length / 8`` bytes (``bit_length`` a multiple of 8); they are padded with zero
    bytes, so strings that differ only by trailing NUL characters are not told apart.
    """
    bit_length = check_bit_length(bit_length)
    values = np.asarray(values)
    W = n_words(bit_length)
    if values.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {values.shape}.")
    if values.dtype.kind in "iu":
        if values.size and (values.min() < 0 or (bit_length < 64 and int(values.max())
                                                 >= 1 << bit_length)):
            row = int(np.argmax((values < 0) | (values >= (1 << min(bit_length, 63)) * 2
                                                if bit_length < 64 else values < 0)))
            raise ValueError(f"values[{row}] = {values[row]} is not in [0, 2^{bit_length}).")
        words = np.zeros((values.size, W), dtype=np.uint64)
        # The integer sits in the lowest bits of the L-bit string: shift it to the top.
        pad = W * 64 - bit_length
        low = values.astype(np.uint64)
        if pad == 0:
            words[:, -1] = low
        else:
            words[:, -1] = low << np.uint64(pad)
            if W > 1:
                words[:, -2] = low >> np.uint64(64 - pad)
        return words
    if values.dtype.kind in "OUS":
        if bit_length % 8:
            raise ValueError(f"string values need a bit_length that is a multiple of 8, got "
                             f"{bit_length}.")
        n_bytes = bit_length // 8
        encoded = [value.encode("utf-8") if isinstance(value, str) else value
                   for value in values.tolist()]
        for row, value in enumerate(encoded):
            if not isinstance(value, bytes):
                raise TypeError(f"values[{row}] is a {type(value).__name__}, not a string.")
            if len(value) > n_bytes:
                raise ValueError(f"values[{row}] takes {len(value)} bytes in UTF-8, more than "
                                 f"the {n_bytes} of bit_length={bit_length}.")
        buffer = np.frombuffer(b"".join(value.ljust(W * 8, b"\0") for value in encoded),
                               dtype=">u8")
        return buffer.reshape(len(encoded), W).astype(np.uint64)
    raise TypeError(f"values must be integers or strings, got dtype {values.dtype}.")


def decode_values(words, bit_length, as_strings):
    """The inverse of :func:`encode_values` (strings lose their trailing NUL bytes)."""
    words = np.asarray(words, dtype=np.uint64)
    if as_strings:
        raw = words.astype(">u8").tobytes()
        width = words.shape[1] * 8
        return [raw[i * width:(i + 1) * width][:bit_length // 8].rstrip(b"\0")
                .decode("utf-8", errors="replace") for i in range(words.shape[0])]
    pad = words.shape[1] * 64 - bit_length
    value = words[:, -1] >> np.uint64(pad) if pad else words[:, -1].copy()
    if words.shape[1] > 1 and pad:
        value |= words[:, -2] << np.uint64(64 - pad)
    return value


def _prefix_mask(length, W):
    """``(W,)`` uint64 mask of the first ``length`` bits."""
    mask = np.zeros(W, dtype=np.uint64)
    full, rest = divmod(length, 64)
    mask[:full] = np.uint64(0xFFFFFFFFFFFFFFFF)
    if rest:
        mask[full] = np.uint64(((1 << rest) - 1) << (64 - rest))
    return mask



def _one_value_words(value, bit_length):
    """One value as ``(1, W)`` uint64 words: already encoded words, or :func:`encode_values`
    of an integer or a string."""
    if isinstance(value, np.ndarray) and value.dtype == np.uint64 and value.ndim == 2:
        if value.shape != (1, n_words(bit_length)):
            raise ValueError(f"encoded words of one value have shape (1, "
                             f"{n_words(bit_length)}), got {value.shape}.")
        return value
    values = np.array([value], dtype=object if isinstance(value, (str, bytes)) else None)
    return encode_values(values, bit_length)
