"""The faster PRF paths (a user's ``(tag, value)`` rounds absorbed once, dense bit lanes)
give exactly the words of the standard-library client, so memoized responses did not change.

The client (``sklearn_ldp/deploy/client/memo.py``) computes each word with a whole SipHash-2-4
of the
24-byte message, one lane at a time; the server now absorbs the message prefix once per user
and decides lanes densely per group. Both must agree bit for bit, at every group width
(full 64-lane groups, narrow last groups packing several digits per word) and at the
numerator's edges (0, 1, 2^52 - 1, 2^52).
"""

import numpy as np
import pytest

from sklearn_ldp.deploy.client import memo as client
from sklearn_ldp.mechanisms._base.prf import (
    new_secrets,
    prf_absorb,
    prf_bernoulli_lanes,
    prf_finish,
    prf_uniform_below,
    prf_words,
    siphash24,
    siphash24_absorb,
    siphash24_finish,
)
from sklearn_ldp.mechanisms.longitudinal.mechanisms import LongitudinalMechanism, MemoState

NUMERATORS = [0, 1, 2**51, 0x1E5F3A2B4C6D7, 2**52 - 1, 2**52]


def _secret_bytes(row):
    return int(row[0]).to_bytes(8, "little") + int(row[1]).to_bytes(8, "little")


def test_absorb_then_finish_is_siphash_of_the_whole_message():
    rng = np.random.default_rng(0)
    keys = new_secrets(3000, rng)
    blocks = [rng.integers(0, 2**63, 3000).astype(np.uint64) for _ in range(3)]
    whole = siphash24(keys[:, 0], keys[:, 1], blocks + [np.uint64(24 << 56)])
    for split in range(4):
        state = siphash24_absorb(keys[:, 0], keys[:, 1], blocks[:split])
        before = state.copy()
        assert np.array_equal(siphash24_finish(state, blocks[split:] + [np.uint64(24 << 56)]),
                              whole)
        assert np.array_equal(state, before)  # the cached prefix is not consumed
    state = prf_absorb(keys, "ue-plane", blocks[0] % 1000)
    for counter in (0, 1, 255, 256 * 15 + 3):
        assert np.array_equal(prf_finish(state, counter),
                              prf_words(keys, "ue-plane", blocks[0] % 1000, counter))


def test_words_past_one_chunk_match_the_client():
    rng = np.random.default_rng(1)
    n = 2**15 + 7  # two cache chunks
    keys = new_secrets(n, rng)
    values = rng.integers(0, 2**40, n)
    words = prf_finish(prf_absorb(keys, "dbf-bits", values), 9)
    for i in (0, 1, 2**15 - 1, 2**15, n - 1):
        assert int(words[i]) == client._prf(_secret_bytes(keys[i]), "dbf-bits",
                                            int(values[i]), 9)


@pytest.mark.parametrize("n_bits", [1, 2, 3, 7, 17, 33, 63, 64, 65, 100, 129, 200])
def test_bit_lanes_match_the_client(n_bits):
    rng = np.random.default_rng(n_bits)
    keys = new_secrets(40, rng)
    values = rng.integers(0, 1024, 40)
    for numerator in NUMERATORS:
        words = prf_bernoulli_lanes(keys, "ue-plane", values, n_bits, numerator)
        for i in range(0, 40, 3):
            expected = client._prf_lanes(_secret_bytes(keys[i]), "ue-plane", int(values[i]),
                                         n_bits, numerator)
            got = sum(int(word) << (64 * group) for group, word in enumerate(words[i]))
            assert got == expected, (n_bits, numerator, i)


def test_uniform_below_matches_the_client_including_rejections():
    rng = np.random.default_rng(3)
    keys = new_secrets(64, rng)
    values = rng.integers(0, 50, 64)
    # 2^63 + 1: about half the words are rejected, so later counters are exercised.
    for high in (1, 2, 3, 1023, 2**63 - 1, 2**62 + 1):
        got = prf_uniform_below(keys, "grr-othr", values, high)
        expected = [client._prf_below(_secret_bytes(keys[i]), "grr-othr", int(values[i]), high)
                    for i in range(64)]
        assert got.tolist() == expected, high


@pytest.mark.parametrize("protocol", ["l_grr", "l_sue", "l_oue", "l_osue", "l_soue"])
def test_permanent_responses_match_the_client_derivation(protocol):
    mechanism = LongitudinalMechanism(70, 2.0, 1.0, protocol)
    rng = np.random.default_rng(4)
    state = MemoState(mechanism, 30, rng=rng)
    values = rng.integers(0, 70, 30)
    permanent = mechanism.permanent_response(values, state.secrets)
    numerators = {"keep_perm": getattr(mechanism, "_keep1", None),
                  "q_perm": getattr(mechanism, "_q1", None),
                  "p_perm": getattr(mechanism, "_p1", None)}
    for i in range(30):
        secret, value = _secret_bytes(state.secrets[i]), int(values[i])
        if protocol == "l_grr":
            if client._prf_bit(secret, "grr-keep", value, 0, numerators["keep_perm"]):
                expected = value
            else:
                other = client._prf_below(secret, "grr-othr", value, 69)
                expected = other + (other >= value)
            assert int(permanent[i]) == expected
        else:
            bits = client._prf_lanes(secret, "ue-plane", value, 70, numerators["q_perm"])
            bits &= ~(1 << value)
            bits |= client._prf_bit(secret, "ue-ownbt", value, 0,
                                    numerators["p_perm"]) << value
            assert int.from_bytes(permanent[i].tobytes(), "little") == bits
