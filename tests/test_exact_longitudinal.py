"""Memoization that operators cannot break, and the exact laws of the memoized protocols.

* The PRF: SipHash-2-4 on the paper's test vector, server (numpy) and client (pure Python)
  bit for bit on random inputs, and their exact samplers (uniform, Bernoulli, bit lanes).
* Exact laws: every protocol's ``exact_law`` is what ``randomize`` and the client sample, and
  is private on adversarial inputs, decided on integers.
* Operators: restoring a backup (server state or device file) many times, a second writer,
  a crash between write and rename, and hostile state files and specs.
"""

import itertools
import json
import os
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from _laws import assert_private, assert_sampled_law

import sklearn_ldp.deploy.client as client_module
import sklearn_ldp.longitudinal as longitudinal_module
from sklearn_ldp.deploy.client import longitudinal as client_longitudinal
from sklearn_ldp.deploy.client import memo as client_memo
from sklearn_ldp.deploy.limits import limits
from sklearn_ldp.longitudinal import LongitudinalEncoder, LongitudinalState
from sklearn_ldp.mechanisms._base.exact import integer_ratio_at_most
from sklearn_ldp.mechanisms._base.prf import (
    new_secrets,
    prf_bernoulli_lanes,
    prf_uniform_below,
    prf_words,
    siphash24,
)
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (
    LONGITUDINAL_PROTOCOLS,
    DBitFlipPM,
    LongitudinalMechanism,
    MemoState,
    OneBitMeanPM,
)

PROTOCOLS = sorted(LONGITUDINAL_PROTOCOLS)
CATS = ["mail", "maps", "news", "chat"]


def _key(row):
    """A server secret row (two uint64) as the client's 16 bytes."""
    return int(row[0]).to_bytes(8, "little") + int(row[1]).to_bytes(8, "little")


class _Secret:
    """A client memo that hands out one fixed secret (a user whose secret is known)."""

    def __init__(self, secret):
        self._secret = secret

    def secret(self, rng):
        return self._secret


# ---------------------------------------------------------------- the PRF
def test_siphash_matches_the_papers_test_vector_on_server_and_client():
    key, message = bytes(range(16)), bytes(range(15))
    assert client_memo._siphash24(key, message) == 0xA129CA6149BE45E5
    k0, k1 = (np.uint64(int.from_bytes(key[i:i + 8], "little")) for i in (0, 8))
    m0 = np.uint64(int.from_bytes(message[:8], "little"))
    m1 = np.uint64(int.from_bytes(message[8:], "little") | (15 << 56))
    assert int(siphash24(k0, k1, [m0, m1])) == 0xA129CA6149BE45E5
    # Across the chunk boundary of the vectorized version: the same word everywhere.
    many = siphash24(np.full(40_000, k0), np.full(40_000, k1), [m0, m1])
    assert (many == np.uint64(0xA129CA6149BE45E5)).all()


def test_prf_words_and_samplers_are_the_clients_bit_for_bit():
    rng = np.random.default_rng(1)
    secrets = new_secrets(300, rng)
    values = rng.integers(0, 2**24, 300)  # a PRF message's value field
    counters = rng.integers(0, 2**24, 300)
    words = prf_words(secrets, "ue-plane", values, counters)
    for row, value, counter, word in zip(secrets, values, counters, words, strict=True):
        assert client_memo._prf(_key(row), "ue-plane", int(value), int(counter)) == int(word)
    for high in (1, 2, 7, 1000, 2**33 + 1):
        below = prf_uniform_below(secrets, "dbf-bckt", values, high)
        assert below.min() >= 0 and below.max() < high
        assert [client_memo._prf_below(_key(row), "dbf-bckt", int(v), high)
                for row, v in zip(secrets, values, strict=True)] == below.tolist()
    for n_bits, numerator in ((5, 2**51), (64, 12345678901), (70, 2**52 - 1), (9, 0),
                              (9, 2**52)):
        lanes = prf_bernoulli_lanes(secrets, "ue-plane", values, n_bits, numerator)
        for row, value, words in zip(secrets, values, lanes, strict=True):
            expected = sum(int(w) << (64 * g) for g, w in enumerate(words))
            assert client_memo._prf_lanes(_key(row), "ue-plane", int(value), n_bits,
                                            numerator) == expected


def test_prf_lanes_are_bernoulli_with_the_numerator():
    from _stats import chi_square_p_value
    secrets = new_secrets(20_000, np.random.default_rng(2))
    numerator = 1234567890123456  # about 0.274
    lanes = prf_bernoulli_lanes(secrets, "ue-plane", np.zeros(20_000, np.int64), 70,
                                numerator)
    bits = np.unpackbits(lanes.astype("<u8").view(np.uint8), axis=1, bitorder="little")
    assert not bits[:, 70:].any()
    ones = int(bits[:, :70].sum())
    total = 70 * 20_000
    p = numerator / 2**52
    assert chi_square_p_value([ones, total - ones], [p * total, (1 - p) * total]) > 1e-4


def test_secrets_come_from_the_operating_system_unless_seeded():
    mechanism = LongitudinalMechanism(4, 2.0, 1.0)
    assert not np.array_equal(MemoState(mechanism, 5).secrets, MemoState(mechanism, 5).secrets)
    seeded = [MemoState(mechanism, 5, rng=np.random.default_rng(3)).secrets for _ in range(2)]
    assert np.array_equal(*seeded)
    enc = LongitudinalEncoder(categories=CATS).fit()
    assert not np.array_equal(enc.new_state(3).memo.secrets, enc.new_state(3).memo.secrets)


# ---------------------------------------------------------------- exact laws
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_longitudinal_exact_law_is_sampled_and_private(protocol):
    mechanism = LongitudinalMechanism(5, 2.5, 1.0, protocol)
    worst = assert_private(mechanism, range(5), 1.0)
    assert worst <= 1.0 + 1e-9
    rng = np.random.default_rng(4)
    for value in (0, 4):  # the smallest and the largest category
        n = 40_000
        state = MemoState(mechanism, n, rng=rng)  # fresh users: independent reports
        reports = mechanism.randomize(np.full(n, value), state, rng)
        assert_sampled_law(mechanism.exact_law(value), reports)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_permanent_step_is_within_epsilon_perm_exactly(protocol):
    mechanism = LongitudinalMechanism(7, 1.5, 0.7, protocol)
    numerators = mechanism.numerators()
    one = 2**52
    if mechanism.unary:
        p, q = numerators["p_perm"], numerators["q_perm"]
        a, b = p * (one - q), q * (one - p)
    else:
        keep = numerators["keep_perm"]
        a, b = keep * 6, one - keep
    assert integer_ratio_at_most(a, b, 1.5) and integer_ratio_at_most(b, a, 1.5)
    # The estimator's P1, P0 are the realized integers' (exactly unbiased for what is drawn).
    own, other, total = mechanism._report_weights()
    assert (mechanism.P1, mechanism.P0) == (own / total, other / total)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_client_reports_have_the_servers_exact_law(protocol, tmp_path):
    mechanism = LongitudinalMechanism(4, 2.0, 0.9, protocol)
    with pytest.warns(UserWarning, match="seed"):  # reproducible noise: a test
        randomizer = client_module.Randomizer(mechanism.to_dict(), seed=5,
                                              state=tmp_path / "s.json")
    rng = np.random.default_rng(6)
    secrets = new_secrets(4000, rng)
    # The client's permanent responses are the server's, user by user.
    values = rng.integers(4, size=200)
    server = mechanism.permanent_response(values, secrets[:200])
    derive = randomizer._values.derive
    for row, value, expected in zip(secrets, values, server, strict=False):
        got = derive(int(value), _key(row))
        assert (got == expected.tolist()) if mechanism.unary else got == int(expected)
    # Fresh users' reports (their own secret each) follow the server's exact law.
    value = 3
    reports = []
    for row in secrets:
        randomizer._state = _Secret(_key(row))
        reports.append(randomizer.privatize(value))
    reports = np.array(reports, dtype=np.uint8 if mechanism.unary else np.int64)
    assert_sampled_law(mechanism.exact_law(value), reports)


def test_dbitflip_exact_law_is_sampled_private_and_the_clients():
    mechanism = DBitFlipPM(5, 1.6, n_sampled=2)
    assert assert_private(mechanism, range(5), 1.6) <= 1.6 + 1e-9
    rng = np.random.default_rng(7)
    n = 40_000
    for value in (0, 4):
        state = mechanism.new_state(n, rng)
        buckets, bits = mechanism.randomize(np.full(n, value), state)
        assert_sampled_law(mechanism.exact_law(value), np.hstack([buckets, bits]))
    derive = client_longitudinal._dbitflip_pm(mechanism.to_dict()).derive
    secrets = new_secrets(300, rng)
    values = rng.integers(5, size=300)
    state = MemoState(mechanism, 300, secrets=secrets)
    buckets, bits = mechanism.randomize(values, state)
    for row, value, b, x in zip(secrets, values, buckets, bits, strict=True):
        assert derive(int(value), _key(row)) == b.tolist() + x.tolist()
    assert client_longitudinal._dbitflip_numerators(1.6) == (mechanism._own, mechanism._other)


def test_one_bit_mean_exact_law_is_sampled_private_and_the_clients():
    mechanism = OneBitMeanPM(24.0, 1.0, n_segments=8)
    # Adversarial counters: the bounds, neighbouring floats, grid points and just off them.
    values = [0.0, 5e-324, np.nextafter(3.0, 0), 3.0, np.nextafter(3.0, 4), 10.0, 23.999,
              np.nextafter(24.0, 0), 24.0]
    assert assert_private(mechanism, values, 1.0) <= 1.0 + 1e-9
    rng = np.random.default_rng(8)
    n = 40_000
    for value in (0.0, 10.0, 24.0, np.nextafter(3.0, 4)):
        state = mechanism.new_state(n, rng)
        assert_sampled_law(mechanism.exact_law(value),
                           mechanism.randomize(np.full(n, value), state))
    derive = client_longitudinal._one_bit_mean_pm(mechanism.to_dict()).derive
    secrets = new_secrets(300, rng)
    counters = rng.uniform(0, 24, 300)
    counters[:3] = [0.0, 24.0, np.nextafter(24.0, 0)]
    bits = mechanism.randomize(counters, MemoState(mechanism, 300, secrets=secrets))
    assert [derive(float(x), _key(row)) for x, row in zip(counters, secrets, strict=True)] \
        == bits.tolist()


# ---------------------------------------------------------------- restores and rebuilds
@pytest.mark.parametrize("strategy", ["l_osue", "l_grr", "dbitflip", "1bitmean"])
def test_restoring_a_server_state_backup_never_gives_a_second_permanent_response(
        strategy, tmp_path):
    counter = strategy == "1bitmean"
    enc = LongitudinalEncoder(categories=None if counter else CATS, strategy=strategy,
                              max_value=8.0 if counter else None).fit()
    mechanism = enc.mechanism_
    n = 300
    rng = np.random.default_rng(9)
    state = enc.new_state(n)
    path = tmp_path / "state.npz"
    state.save(path)  # the backup: before any value was reported
    state.close()
    backup = path.read_bytes()
    seen = {}  # (user, value or point) -> its permanent response

    def observe(loaded, codes):
        points = mechanism.memo_points(codes, loaded.memo)
        derive = {"dbitflip": lambda users, p: mechanism.permanent_bits(
                      p, loaded.memo.user_constant("buckets", mechanism.buckets)[users],
                      loaded.memo.secrets[users]),
                  "1bitmean": lambda users, p: mechanism.permanent_bits(
                      p, loaded.memo.secrets[users])}.get(
            strategy, lambda users, p: mechanism.permanent_response(p, loaded.memo.secrets[users]))
        responses = loaded.memo.permanent(points, derive)  # what randomize uses
        for user, (point, response) in enumerate(zip(points, responses, strict=True)):
            seen.setdefault((user, int(point)), set()).add(np.asarray(response).tobytes())

    for _ in range(12):  # restore the backup, report two rounds of new values, twice over
        path.write_bytes(backup)
        with enc.load_state(path) as loaded:
            for _ in range(2):
                codes = rng.uniform(0, 8, n) if counter else rng.integers(4, size=n)
                values = codes if counter else np.array(CATS, dtype=object)[codes]
                enc.transform(values, state=loaded)
                observe(loaded, enc._codes(values, n))
            loaded.save(path)
    assert len(seen) >= 500
    assert sum(len(responses) > 1 for responses in seen.values()) == 0


def test_a_restored_device_file_gives_one_permanent_response_40_times(tmp_path):
    path = tmp_path / "device.json"
    for mechanism in (DBitFlipPM(8, 1.0, n_sampled=3), OneBitMeanPM(10.0, 1.0, 4)):
        path.unlink(missing_ok=True)
        value = 5 if isinstance(mechanism, DBitFlipPM) else 6.3
        client_module.Randomizer(mechanism.to_dict(), state=path).privatize(value)
        backup = path.read_bytes()
        reports = set()
        for _ in range(40):
            path.write_bytes(backup)  # the operator restores the backup
            randomizer = client_module.Randomizer(mechanism.to_dict(), state=path)
            reports.add(json.dumps(randomizer.privatize(value)))
        assert len(reports) == 1  # dBitFlipPM / 1BitMean reports are the permanent response
    # L-GRR: the derived permanent response of the restored secret is always the same.
    mechanism = LongitudinalMechanism(6, 2.0, 1.0, "l_grr")
    path.unlink()
    client_module.Randomizer(mechanism.to_dict(), state=path).privatize(2)
    backup = path.read_bytes()
    derive = client_longitudinal._longitudinal(mechanism.to_dict()).derive
    permanents = set()
    for _ in range(40):
        path.write_bytes(backup)
        secret = client_memo._StateFile(path, mechanism.to_dict()).secret(None)
        permanents.add(derive(2, secret))
    assert len(permanents) == 1


def test_a_rebuilt_state_with_the_same_secrets_gives_the_same_responses():
    enc = LongitudinalEncoder(categories=CATS, strategy="l_sue").fit()
    state = enc.new_state(50)
    codes = np.random.default_rng(10).integers(4, size=50)
    first = enc.mechanism_.permanent_response(codes, state.memo.secrets)
    rebuilt = LongitudinalState(enc.spec_, 50, {"secrets": state.memo.secrets.copy(),
                                                "keys": np.zeros(0, np.int64)})
    assert np.array_equal(enc.mechanism_.permanent_response(codes, rebuilt.memo.secrets), first)


# ---------------------------------------------------------------- one writer at a time
def test_a_second_writer_of_a_server_state_file_is_refused(tmp_path):
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    path = tmp_path / "state.npz"
    first = enc.new_state(20)
    first.save(path)
    second = enc.new_state(20)
    with pytest.raises(ValueError, match="state.npz.*in use by another writer"):
        second.save(path)
    with pytest.raises(ValueError, match="state.npz.*in use by another writer"):
        enc.load_state(path)
    copy = pickle.loads(pickle.dumps(first))  # a copy holds no lock, and releases none
    del copy
    with pytest.raises(ValueError, match="in use by another writer"):
        enc.load_state(path)
    first.close()
    with enc.load_state(path) as loaded:  # released: the next writer may go
        assert np.array_equal(loaded.memo.secrets, first.memo.secrets)


def test_a_second_process_is_refused_and_nothing_is_lost(tmp_path):
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    path = tmp_path / "state.npz"
    state = enc.new_state(34)
    enc.transform(np.array(CATS * 8 + CATS[:2], dtype=object), state=state)
    state.save(path)
    entries = state.n_entries
    state.close()
    # Another process holds the state; this one cannot load or overwrite it meanwhile.
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys, time
            sys.path.insert(0, {os.getcwd()!r})
            from sklearn_ldp.longitudinal import LongitudinalEncoder
            enc = LongitudinalEncoder(categories={CATS!r}, random_state=0).fit()
            state = enc.load_state({str(path)!r})
            print("locked", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ValueError, match="in use by another writer"):
            enc.load_state(path)
        other = enc.new_state(34)
        with pytest.raises(ValueError, match="in use by another writer"):
            other.save(path)
    finally:
        holder.communicate("\n", timeout=60)
    with enc.load_state(path) as loaded:
        assert loaded.n_entries == entries  # the holder's file, intact
    # The device client: a second process in the middle of a use is refused.
    mechanism = DBitFlipPM(4, 1.0)
    device = tmp_path / "device.json"
    client_module.Randomizer(mechanism.to_dict(), state=device).privatize(1)
    holder = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import fcntl, os, sys
            fd = os.open({str(device) + '.lock'!r}, os.O_RDWR)
            fcntl.flock(fd, fcntl.LOCK_EX)
            print("locked", flush=True)
            sys.stdin.readline()
        """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(ValueError, match="device.json.*in use by another process"):
            client_module.Randomizer(mechanism.to_dict(), state=device).privatize(1)
    finally:
        holder.communicate("\n", timeout=60)


def test_a_crash_between_write_and_rename_leaves_the_previous_file(tmp_path, monkeypatch):
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    path = tmp_path / "state.npz"
    state = enc.new_state(10)
    state.save(path)
    before = path.read_bytes()
    enc.transform(np.array(CATS * 2 + CATS[:2], dtype=object), state=state)

    def crash(temporary, target):
        raise KeyboardInterrupt("killed between write and rename")

    monkeypatch.setattr(longitudinal_module, "_replace", crash)
    with pytest.raises(KeyboardInterrupt):
        state.save(path)
    monkeypatch.undo()
    state.close()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["state.npz", "state.npz.lock"]
    with enc.load_state(path) as loaded:
        assert loaded.rounds == 0


def test_a_killed_saving_process_leaves_the_previous_file(tmp_path):
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    path = tmp_path / "state.npz"
    state = enc.new_state(10)
    state.save(path)
    state.close()
    before = path.read_bytes()
    # A process that saves a large state and is killed (SIGKILL) while writing.
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.getcwd()!r})
        import numpy as np
        import sklearn_ldp.longitudinal as module
        from sklearn_ldp.longitudinal import LongitudinalEncoder
        enc = LongitudinalEncoder(categories={CATS!r}, random_state=0).fit()
        state = enc.load_state({str(path)!r})
        big = module.LongitudinalState(enc.spec_, 2_000_000, module.MemoState(
            enc.mechanism_, 2_000_000))
        state.close()
        original = np.savez
        def slow(*args, **kwargs):
            print("writing", flush=True)
            sys.stdin.readline()  # killed here, mid-write
            original(*args, **kwargs)
        np.savez = slow
        big.save({str(path)!r})
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "writing"
    child.kill()
    child.wait(timeout=60)
    assert path.read_bytes() == before
    with enc.load_state(path) as loaded:
        assert loaded.n_users == 10


# ---------------------------------------------------------------- hostile files and specs
def _reseal(path, header, arrays):
    header = dict(header)
    header.pop("sha256", None)
    header["arrays"] = {name: [array.dtype.str, list(array.shape)]
                        for name, array in arrays.items()}
    header["sha256"] = LongitudinalState._digest(header, arrays)
    text = json.dumps(header, sort_keys=True)
    np.savez(path, header=np.frombuffer(text.encode("ascii"), dtype=np.uint8), **arrays)


def test_hostile_server_state_files_are_refused_naming_the_field(tmp_path):
    enc = LongitudinalEncoder(categories=CATS, max_values=2, random_state=0).fit()
    state = enc.new_state(6)
    enc.transform(np.array(CATS[:3] * 2, dtype=object), state=state)
    path = tmp_path / "state.npz"
    state.save(path)
    state.close()
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    header = json.loads(bytes(arrays.pop("header")).decode("ascii"))
    edits = {
        "secrets": lambda h, a: a.update(secrets=a["secrets"][:, :1].copy()),
        "secrets must be": lambda h, a: a.update(secrets=a["secrets"].astype(np.int64)),
        "rounds": lambda h, a: h.update(rounds=-1),
        "charged_epsilon": lambda h, a: h.update(charged_epsilon=-1.0),
        "keys must be": lambda h, a: a.update(keys=a["keys"][::-1].copy()),
        "past max_values": lambda h, a: a.update(keys=np.array([0, 1, 2], np.int64)),
        r"secrets must be \(7, 2\)": lambda h, a: h.update(n_users=7),
        "n_users must be": lambda h, a: h.update(n_users="6"),
    }
    for field, edit in edits.items():
        h, a = json.loads(json.dumps(header)), {k: v.copy() for k, v in arrays.items()}
        edit(h, a)
        hostile = tmp_path / "hostile.npz"
        _reseal(hostile, h, a)
        with pytest.raises(ValueError, match=f"hostile.npz.*{field}"):
            enc.load_state(hostile)


def test_hostile_client_state_files_and_specs_are_refused(tmp_path):
    mechanism = LongitudinalMechanism(5, 2.0, 1.0, "l_osue")
    spec = mechanism.to_dict()
    path = tmp_path / "s.json"
    client_module.Randomizer(spec, state=path).privatize(1)
    content = json.loads(path.read_text())
    for secret in ("ab" * 15, "AB" * 16, "zz" * 16, 12, None):
        edited = dict(content, state={"secret": secret})
        del edited["sha256"]
        edited["sha256"] = client_memo._sha256(client_memo._canonical(edited))
        path.write_text(json.dumps(edited))
        with pytest.raises(ValueError, match="s.json.*'secret' must be 32"):
            client_module.Randomizer(spec, state=path).privatize(1)
    edited = dict(content, state={"secret": "ab" * 16, "permanent": {}})
    del edited["sha256"]
    edited["sha256"] = client_memo._sha256(client_memo._canonical(edited))
    path.write_text(json.dumps(edited))
    with pytest.raises(ValueError, match="exactly a 'secret'"):
        client_module.Randomizer(spec, state=path).privatize(1)
    # Specs: numerators out of range, of the wrong type, missing, or past a budget.
    for name, value, message in (("p_perm", 2**53, "numerators.p_perm"),
                                 ("q_perm", 1.5, "numerators.q_perm"),
                                 ("q_perm", True, "numerators.q_perm"),
                                 ("p_perm", 2**52 // 2 + 1, "numerators.p_perm"),
                                 ("q_perm", 1, "epsilon_perm")):
        hostile = json.loads(json.dumps(spec))
        hostile["numerators"][name] = value
        with pytest.raises(ValueError, match=message):
            client_module.Randomizer(hostile, state=tmp_path / "h.json")
    hostile = json.loads(json.dumps(spec))
    del hostile["numerators"]["q_instant"]
    with pytest.raises(ValueError, match="numerators of the 'longitudinal'"):
        client_module.Randomizer(hostile, state=tmp_path / "h.json")
    with pytest.raises(ValueError, match="version"):
        client_module.Randomizer(dict(spec, version=1), state=tmp_path / "h.json")


# ---------------------------------------------------------------- size caps
def test_encoder_applies_the_size_caps_before_allocating():
    with limits(max_cells=16):
        with pytest.raises(ValueError, match="number of categories = 17 exceeds the limit "
                                             "max_cells"):
            LongitudinalEncoder(categories=[f"c{i}" for i in range(17)]).fit()
        with pytest.raises(ValueError, match="n_segments \\+ 1.*max_cells"):
            LongitudinalEncoder(strategy="1bitmean", max_value=1.0, n_segments=16).fit()
    enc = LongitudinalEncoder(categories=CATS).fit()
    with limits(max_array_bytes=2**20):
        with pytest.raises(ValueError, match="n_users=65537.*max_array_bytes"):
            enc.new_state(2**16 + 1)
    with pytest.raises(ValueError, match="max_array_bytes"):
        enc.new_state(10**12)


def test_exact_laws_refuse_to_enumerate_huge_output_sets():
    with pytest.raises(ValueError, match="outputs, more than an exact law"):
        LongitudinalMechanism(30, 2.0, 1.0, "l_sue").exact_law(0)
    with pytest.raises(ValueError, match="outputs, more than an exact law"):
        DBitFlipPM(40, 1.0, n_sampled=10).exact_law(0)
    assert len(list(itertools.islice(LongitudinalMechanism(30, 2.0, 1.0).exact_law(
        0).weights, 5))) == 5
