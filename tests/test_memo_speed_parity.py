"""The fast PRF paths of the server give exactly the words and responses of the
standard-library client.

The client (``sklearn_ldp/deploy/client/memo.py``) computes each word with a whole SipHash-2-4
of its 7-byte message and decides lanes one at a time; the server hashes one-block messages in
cache-sized chunks, decides lanes densely per group (the value's own lane with its own
numerator) and derives a GRR permanent response from one word. Both must agree bit for bit,
at every group width (full 64-lane groups, narrow last groups packing several digits per
word), at the numerators' edges (0, 1, 2^52 - 1, 2^52) and at the message fields' limits.
"""

import numpy as np
import pytest

from sklearn_ldp.deploy.client import longitudinal as client_longitudinal
from sklearn_ldp.deploy.client import memo as client
from sklearn_ldp.mechanisms._base.prf import (
    FIELD_LIMIT,
    PURPOSES,
    new_secrets,
    prf_bernoulli_lanes,
    prf_message,
    prf_uniform_below,
    prf_words,
    siphash24,
)
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (
    DBitFlipPM,
    LongitudinalMechanism,
    MemoState,
    OneBitMeanPM,
)

NUMERATORS = [0, 1, 2**51, 0x1E5F3A2B4C6D7, 2**52 - 1, 2**52]


def _secret_bytes(row):
    return int(row[0]).to_bytes(8, "little") + int(row[1]).to_bytes(8, "little")


def test_one_block_message_is_siphash_of_its_seven_bytes():
    rng = np.random.default_rng(0)
    keys = new_secrets(50, rng)
    values = rng.integers(0, FIELD_LIMIT, 50)
    counters = rng.integers(0, FIELD_LIMIT, 50)
    for label in PURPOSES:
        words = prf_words(keys, label, values, counters)
        for i in range(0, 50, 7):
            message = (PURPOSES.index(label) + 1) | int(values[i]) << 8 | int(counters[i]) << 32
            expected = client._siphash24(_secret_bytes(keys[i]), message.to_bytes(7, "little"))
            assert int(words[i]) == expected
            assert client._prf(_secret_bytes(keys[i]), label, int(values[i]),
                               int(counters[i])) == expected
    # The field limits are refused on both sides, naming the field.
    for bad in (-1, FIELD_LIMIT):
        with pytest.raises(ValueError, match="value"):
            prf_message("grr-perm", bad, 0)
        with pytest.raises(ValueError, match="counter"):
            prf_message("grr-perm", 0, bad)
        with pytest.raises(ValueError, match="2\\^24"):
            client._prf(bytes(16), "grr-perm", bad, 0)
    with pytest.raises(ValueError, match="purpose"):
        prf_words(keys[:1], "grr-keep", 0, 0)


def test_words_past_one_chunk_match_the_client():
    rng = np.random.default_rng(1)
    n = 2**15 + 7  # two cache chunks
    keys = new_secrets(n, rng)
    values = rng.integers(0, FIELD_LIMIT, n)
    words = prf_words(keys, "dbf-bits", values, 9)
    whole = siphash24(keys[:, 0], keys[:, 1], [prf_message("dbf-bits", values, 9)])
    assert np.array_equal(words, whole)
    for i in (0, 1, 2**14 - 1, 2**14, 2**15, n - 1):
        assert int(words[i]) == client._prf(_secret_bytes(keys[i]), "dbf-bits",
                                            int(values[i]), 9)


@pytest.mark.parametrize("n_bits", [1, 2, 3, 7, 17, 33, 63, 64, 65, 100, 129, 200])
def test_bit_lanes_match_the_client(n_bits):
    rng = np.random.default_rng(n_bits)
    keys = new_secrets(40, rng)
    values = rng.integers(0, n_bits, 40)
    for numerator in NUMERATORS:
        for own in (None, 0, 2**51, 2**52):
            words = prf_bernoulli_lanes(keys, "ue-plane", values, n_bits, numerator,
                                        own_numerator=own)
            for i in range(0, 40, 3):
                expected = client._prf_lanes(_secret_bytes(keys[i]), "ue-plane",
                                             int(values[i]), n_bits, numerator, own)
                got = sum(int(word) << (64 * group) for group, word in enumerate(words[i]))
                assert got == expected, (n_bits, numerator, own, i)


def test_bit_lanes_past_one_chunk_match_the_client():
    # Several row chunks, and rows still undecided after the chunked digits (pooled).
    n = 2**14 + 300
    rng = np.random.default_rng(8)
    keys = new_secrets(n, rng)
    values = rng.integers(0, 130, n)
    words = prf_bernoulli_lanes(keys, "ue-plane", values, 130, 0x1E5F3A2B4C6D7,
                                own_numerator=2**51)
    for i in [*range(0, n, 997), n - 1]:
        expected = client._prf_lanes(_secret_bytes(keys[i]), "ue-plane", int(values[i]), 130,
                                     0x1E5F3A2B4C6D7, 2**51)
        assert sum(int(word) << (64 * group) for group, word in enumerate(words[i])) \
            == expected, i


def test_own_lane_has_its_own_law():
    from _stats import chi_square_p_value
    n = 20_000
    keys = new_secrets(n, np.random.default_rng(5))
    values = np.full(n, 3)
    own, other = 0x3000000000000, 0x0400000000000  # 3/16 and 1/64 of 2^52
    words = prf_bernoulli_lanes(keys, "ue-plane", values, 10, other, own_numerator=own)
    bits = np.unpackbits(words.astype("<u8").view(np.uint8), axis=1, bitorder="little")
    for lane, numerator in ((3, own), (0, other), (9, other)):
        ones, p = int(bits[:, lane].sum()), numerator / 2**52
        assert chi_square_p_value([ones, n - ones], [p * n, (1 - p) * n]) > 1e-4, lane
    assert not bits[:, 10:].any()


def test_uniform_below_matches_the_client_including_rejections():
    rng = np.random.default_rng(3)
    keys = new_secrets(64, rng)
    values = rng.integers(0, 50, 64)
    # 2^63 + 1: about half the words are rejected, so later counters are exercised.
    for high in (1, 2, 3, 1023, 2**63 - 1, 2**62 + 1):
        got = prf_uniform_below(keys, "dbf-bckt", values, high)
        expected = [client._prf_below(_secret_bytes(keys[i]), "dbf-bckt", int(values[i]), high)
                    for i in range(64)]
        assert got.tolist() == expected, high


def _client_kind(spec):
    kinds = {"longitudinal": client_longitudinal._longitudinal,
             "dbitflip_pm": client_longitudinal._dbitflip_pm,
             "1bitmean_pm": client_longitudinal._one_bit_mean_pm}
    return kinds[spec["mechanism"]](spec)


@pytest.mark.parametrize("protocol", ["l_grr", "l_sue", "l_oue", "l_osue", "l_soue"])
@pytest.mark.parametrize("k", [2, 3, 70])
def test_permanent_responses_match_the_client(protocol, k):
    mechanism = LongitudinalMechanism(k, 2.0, 1.0, protocol)
    rng = np.random.default_rng(4)
    state = MemoState(mechanism, 300, rng=rng)
    values = rng.integers(0, k, 300)
    permanent = mechanism.permanent_response(values, state.secrets)
    derive = _client_kind(mechanism.to_dict()).derive
    for i in range(300):
        got = derive(int(values[i]), _secret_bytes(state.secrets[i]))
        if protocol == "l_grr":
            assert int(permanent[i]) == got
        else:
            assert permanent[i].tolist() == got


def test_memoized_reports_of_dbitflip_and_onebitmean_match_the_client():
    rng = np.random.default_rng(6)
    for mechanism, values in ((DBitFlipPM(9, 1.5, n_sampled=3), rng.integers(0, 9, 200)),
                              (OneBitMeanPM(24.0, 1.0), rng.uniform(0, 24, 200))):
        state = mechanism.new_state(200, rng)
        reports = mechanism.randomize(values, state)
        derive = _client_kind(mechanism.to_dict()).derive
        for i in range(200):
            got = derive(values[i].item(), _secret_bytes(state.secrets[i]))
            if isinstance(mechanism, DBitFlipPM):
                assert reports[0][i].tolist() + reports[1][i].tolist() == got
            else:
                assert int(reports[i]) == got


def test_grr_permanent_step_is_one_exact_word():
    # 2^52 - keep_perm is a multiple of k - 1, so every other value has m / 2^52.
    for k in (2, 3, 64, 1000, 2**24):
        mechanism = LongitudinalMechanism(k, 2.0, 1.0)
        keep = mechanism.numerators()["keep_perm"]
        assert (2**52 - keep) % (k - 1) == 0 and keep < 2**52
