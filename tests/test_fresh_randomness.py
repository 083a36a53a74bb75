"""Fresh randomness in every copy of an unseeded encoder, and warnings on seeded noise
(issue 15, item 6; DESIGN.md section 7).

Copies of an ``LDPEncoder(random_state=None)`` (unpickled, deep-copied, forked, sent to
Dask workers) must each draw their own operating-system entropy: the same noise in two
copies would let anyone holding two reports of one user cancel it. Seeded encoders keep
their draws in their copies (reproducible simulation), and exporting their client
specification, like seeding the standard-library client, warns.
"""

import copy
import json
import multiprocessing
import pickle
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_ldp import LDPEncoder
from sklearn_ldp.deploy.client import Randomizer

CATEGORIES = {"age": ["<30", "30-50", ">50"], "smoker": ["no", "yes"]}
RECORDS = pd.DataFrame({"age": ["<30", "30-50", ">50", "30-50"] * 100,
                        "smoker": ["no", "yes", "yes", "no"] * 100})
SEEDED_CLIENT = r"Randomizer\(seed=\.\.\.\)"

# Under randomized response on 6 cells at epsilon 1, two independent reports of one record
# agree with probability below 0.4: 400 records agree by chance with probability < 1e-150.


def _encoder(random_state, strategy="randomized_response"):
    return LDPEncoder(categories=CATEGORIES, strategy=strategy, epsilon=1.0,
                      random_state=random_state).fit()


def _reports(encoder):
    return encoder.transform(RECORDS).reports


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b))


# ---------------------------------------------------------------- pickling and copies
def test_unpickled_copies_of_an_unseeded_encoder_draw_fresh_noise():
    encoder = _encoder(None)
    data = pickle.dumps(encoder)
    first, second = pickle.loads(data), pickle.loads(data)
    assert first.random_state is None and second.random_state is None  # parameters unchanged
    assert first.mechanism_ == encoder.mechanism_
    reports = [_reports(first), _reports(second), _reports(encoder)]
    assert not _same(reports[0], reports[1])
    assert not _same(reports[0], reports[2]) and not _same(reports[1], reports[2])


def test_the_pickle_of_an_unseeded_encoder_holds_no_generator_state():
    encoder = _encoder(None)
    state = encoder._rng.bit_generator.state["state"]["state"]
    data = pickle.dumps(encoder)
    assert state.to_bytes(16, "little") not in data and state.to_bytes(16, "big") not in data
    assert pickle.loads(data)._rng.bit_generator.state != encoder._rng.bit_generator.state


def test_deep_copies_of_an_unseeded_encoder_draw_fresh_noise():
    encoder = _encoder(None)
    assert not _same(_reports(copy.deepcopy(encoder)), _reports(copy.deepcopy(encoder)))


def test_an_old_pickle_with_generator_state_is_renewed_on_load():
    """A pickle written before the fix carried the generator: loading draws a new one."""
    encoder = _encoder(None)
    state = dict(encoder.__dict__)  # what the old __getstate__ returned
    restored = LDPEncoder.__new__(LDPEncoder)
    restored.__setstate__(state)
    assert restored._rng is not encoder._rng
    assert restored._rng.bit_generator.state != encoder._rng.bit_generator.state


@pytest.mark.parametrize("strategy", ["randomized_response", "olh", "optimized"])
def test_seeded_copies_repeat_the_same_noise(strategy):
    encoder = LDPEncoder(categories=CATEGORIES, strategy=strategy, epsilon=1.0, max_iter=20,
                         random_state=0).fit()
    data = pickle.dumps(encoder)
    assert _same(_reports(pickle.loads(data)), _reports(pickle.loads(data)))
    assert _same(_reports(copy.deepcopy(encoder)), _reports(encoder))


def test_unseeded_simulations_differ_between_copies():
    encoder = _encoder(None)
    data = pickle.dumps(encoder)
    counts = np.full(6, 1000)
    first = pickle.loads(data).simulate_counts(counts).statistic
    second = pickle.loads(data).simulate_counts(counts).statistic
    assert not _same(first, second)


def test_sklearn_conventions_hold():
    """random_state is stored as given; an int seed reproduces fits and reports; clones of an
    unseeded encoder are independent."""
    seeded = [_encoder(7), _encoder(7)]
    assert seeded[0].get_params()["random_state"] == 7
    assert _same(_reports(seeded[0]), _reports(seeded[1]))
    unseeded = _encoder(None)
    assert unseeded.get_params()["random_state"] is None
    assert not _same(_reports(clone(unseeded).fit()), _reports(clone(unseeded).fit()))


# ---------------------------------------------------------------- forked processes
def _report_into(encoder, queue):
    queue.put(_reports(encoder).tolist())


def _forked_reports(encoder, n_children=2):
    """Reports of ``n_children`` forked copies (the encoder reaches them by fork, not by
    pickle), then of the parent."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [context.Process(target=_report_into, args=(encoder, queue))
                for _ in range(n_children)]
    for child in children:
        child.start()
    reports = [queue.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=120)
        assert child.exitcode == 0
    return reports + [_reports(encoder).tolist()]


fork_only = pytest.mark.skipif(
    sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods(),
    reason="the 'fork' start method is tested on Linux")


@fork_only
def test_forked_copies_of_an_unseeded_encoder_draw_fresh_noise():
    encoder = _encoder(None)
    first, second, parent = _forked_reports(encoder)
    assert not _same(first, second)
    assert not _same(first, parent) and not _same(second, parent)


@fork_only
def test_forked_copies_of_a_seeded_encoder_repeat_the_parents_draws():
    encoder = _encoder(0)
    first, second, parent = _forked_reports(encoder)
    assert _same(first, second) and _same(first, parent)


@fork_only
def test_a_fork_pool_of_an_unseeded_encoder_draws_fresh_noise():
    """Pool workers receive the encoder by pickle: each task its own entropy."""
    encoder = _encoder(None)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        reports = pool.map(_reports, [encoder] * 3)
    assert not any(_same(reports[i], reports[j]) for i, j in ((0, 1), (0, 2), (1, 2)))


def test_dask_workers_draw_fresh_noise():
    dask = pytest.importorskip("dask")
    unseeded, seeded = _encoder(None), _encoder(0)
    tasks = [dask.delayed(_reports)(encoder) for encoder in (unseeded, unseeded, seeded, seeded)]
    # The process scheduler pickles every argument to its workers.
    reports = dask.compute(*tasks, scheduler="processes", num_workers=2)
    assert not _same(reports[0], reports[1])
    assert _same(reports[2], reports[3])


# ---------------------------------------------------------------- warnings on seeded noise
def test_exporting_the_client_spec_of_a_seeded_encoder_warns():
    with pytest.warns(UserWarning, match="Deployed noise must not be seeded"):
        spec = _encoder(3).client_spec()
    assert Randomizer.from_json(spec).n_inputs == 6


def test_exporting_the_client_spec_of_an_unseeded_encoder_is_silent():
    encoder = _encoder(None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        spec = encoder.client_spec()
        client = Randomizer.from_json(spec)
    assert spec == encoder.mechanism_.to_json()
    assert type(client._rng).__name__ == "SystemRandom"


def test_a_seeded_standard_library_client_warns():
    spec = _encoder(None).mechanism_.to_json()
    with pytest.warns(UserWarning, match="deployed noise must not be seeded"):
        Randomizer.from_json(spec, seed=1)
    with pytest.warns(UserWarning, match=SEEDED_CLIENT):
        Randomizer(json.loads(spec), seed=0)


# ---------------------------------------------------------------- generator objects
# A Generator or RandomState as random_state is a stream of one process: warned about like a
# seed, yet its copies (pickle, deepcopy, fork, clone) never replay it for other users.
STREAMS = pytest.mark.parametrize("make_stream", [
    lambda: np.random.default_rng(), lambda: np.random.default_rng(5),
    lambda: np.random.RandomState(5)], ids=["generator", "seeded generator", "RandomState"])


@STREAMS
def test_exporting_the_spec_of_an_encoder_seeded_by_a_generator_warns(make_stream):
    with pytest.warns(UserWarning, match="Deployed noise must not be seeded"):
        _encoder(make_stream()).client_spec()


@STREAMS
def test_unpickled_copies_of_an_encoder_with_a_generator_draw_fresh_noise(make_stream):
    encoder = _encoder(make_stream())
    data = pickle.dumps(encoder)
    first, second = pickle.loads(data), pickle.loads(data)
    assert type(first.random_state) is type(encoder.random_state)  # still a generator
    assert first.random_state is not second.random_state
    reports = [_reports(first), _reports(second), _reports(encoder)]
    assert not any(_same(reports[i], reports[j]) for i, j in ((0, 1), (0, 2), (1, 2)))
    # a refit of a copy draws from its own stream too
    assert not _same(_reports(first.fit()), _reports(second.fit()))


@STREAMS
def test_the_pickle_of_an_encoder_with_a_generator_holds_none_of_its_state(make_stream):
    encoder = _encoder(make_stream())
    state = encoder._rng.bit_generator.state["state"]
    data = pickle.dumps(encoder)
    if "key" in state:  # MT19937 (RandomState): 624 words
        assert state["key"].tobytes()[:64] not in data
    else:  # PCG64: a 128-bit integer
        assert state["state"].to_bytes(16, "little") not in data
        assert state["state"].to_bytes(16, "big") not in data


@STREAMS
def test_deep_copies_of_an_encoder_with_a_generator_draw_fresh_noise(make_stream):
    encoder = _encoder(make_stream())
    assert not _same(_reports(copy.deepcopy(encoder)), _reports(copy.deepcopy(encoder)))


@STREAMS
def test_clones_of_an_encoder_with_a_generator_are_independent_and_reproducible(make_stream):
    encoder = LDPEncoder(categories=CATEGORIES, strategy="randomized_response", epsilon=1.0,
                         random_state=make_stream())
    first, second = _reports(clone(encoder).fit()), _reports(clone(encoder).fit())
    assert not _same(first, second)
    if not isinstance(encoder.random_state, np.random.Generator) \
            or encoder.random_state.bit_generator.seed_seq.entropy != 5:
        return
    # From the same seed, the same sequence of clones: reproducible simulation.
    again = LDPEncoder(categories=CATEGORIES, strategy="randomized_response", epsilon=1.0,
                       random_state=np.random.default_rng(5))
    assert _same(_reports(clone(again).fit()), first)


@fork_only
@STREAMS
def test_forked_copies_of_an_encoder_with_a_generator_draw_fresh_noise(make_stream):
    encoder = _encoder(make_stream())
    first, second, parent = _forked_reports(encoder)
    assert not _same(first, second)
    assert not _same(first, parent) and not _same(second, parent)


def _refit_reports_into(encoder, queue):
    queue.put(_reports(encoder.fit()).tolist())


@fork_only
def test_a_refit_in_a_forked_copy_does_not_replay_the_generator():
    encoder = _encoder(np.random.default_rng(5))
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [context.Process(target=_refit_reports_into, args=(encoder, queue))
                for _ in range(2)]
    for child in children:
        child.start()
    first, second = (queue.get(timeout=120) for _ in children)
    for child in children:
        child.join(timeout=120)
        assert child.exitcode == 0
    assert not _same(first, second)


def test_an_int_seed_still_repeats_in_clones_and_copies():
    encoder = _encoder(11)
    assert _same(_reports(clone(encoder).fit()), _reports(clone(encoder).fit()))
    assert _same(_reports(pickle.loads(pickle.dumps(encoder))), _reports(encoder))
