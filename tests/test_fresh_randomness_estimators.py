"""Fresh randomness in every copy of an unseeded CountMechanism / AdaptiveQueryEstimator
(follow-up of issue 15, item 6; DESIGN.md section 7).

Both estimators keep their noise generator with ``FreshEntropyMixin``, as ``LDPEncoder``
does: copies of an unseeded estimator (unpickled, deep-copied, forked) each draw their own
operating-system entropy, while copies of a seeded one repeat its draws (reproducible
simulation). Before the fix both stored a plain generator, which every copy carried along.

Chance agreement is negligible in every "differs" assertion below: for the counts, 450
independent noisy counts of an epsilon=1 mechanism on groups of 8 agree with probability
below 0.57**450 < 1e-100; for the adaptive estimator, each of 6 rounds of 4000 users agrees with
probability about 1 / sqrt(pi * 4000) < 0.01, so all six together below 1e-12.
"""

import copy
import multiprocessing
import pickle
import sys

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from sklearn_ldp import AdaptiveQueryEstimator, CountMechanism

COUNTS = np.tile(np.arange(9), 50)
CATEGORIES = {"smoker": ["no", "yes"], "age": ["<30", "30-50", ">50"]}
N_USERS = 4000
N_ROUNDS = 6
RECORDS = pd.DataFrame({
    "smoker": np.random.default_rng(1).choice(["no", "yes"], N_USERS),
    "age": np.random.default_rng(2).choice(["<30", "30-50", ">50"], N_USERS),
})
QUERY = np.linspace(-1.0, 1.0, 6)  # one entry per cell of the 2 x 3 domain


def _count_mechanism(random_state):
    return CountMechanism(group_size=8, epsilon=1.0, random_state=random_state).fit()


def _adaptive(random_state):
    # Fitted as its docstring does: the 1-way marginals, answered by the first users.
    return AdaptiveQueryEstimator(categories=CATEGORIES, epsilon=1.0,
                                  random_state=random_state).fit(RECORDS)


def _count_draws(estimator):
    return estimator.transform(COUNTS)


def _adaptive_draws(estimator):
    """The answers of ``N_ROUNDS`` new rounds, each a fresh group of ``N_USERS`` users."""
    for _ in range(N_ROUNDS):
        estimator.partial_fit(RECORDS, query=QUERY)
    return estimator.answers_.to_numpy()[-N_ROUNDS:]


ESTIMATORS = {
    "count": (_count_mechanism, _count_draws),
    "adaptive": (_adaptive, _adaptive_draws),
}
KINDS = pytest.mark.parametrize("kind", sorted(ESTIMATORS))


def _same(a, b):
    return np.array_equal(np.asarray(a), np.asarray(b))


def _all_differ(draws):
    return not any(_same(draws[i], draws[j])
                   for i in range(len(draws)) for j in range(i + 1, len(draws)))


# ---------------------------------------------------------------- pickling and copies
@KINDS
def test_unpickled_copies_of_an_unseeded_estimator_draw_fresh_noise(kind):
    make, draw = ESTIMATORS[kind]
    estimator = make(None)
    data = pickle.dumps(estimator)
    first, second = pickle.loads(data), pickle.loads(data)
    assert first.random_state is None and second.random_state is None  # parameters unchanged
    assert _all_differ([draw(first), draw(second), draw(estimator)])


@KINDS
def test_the_pickle_of_an_unseeded_estimator_holds_no_generator_state(kind):
    make, _ = ESTIMATORS[kind]
    estimator = make(None)
    state = estimator._rng.bit_generator.state["state"]["state"]
    data = pickle.dumps(estimator)
    assert state.to_bytes(16, "little") not in data and state.to_bytes(16, "big") not in data
    assert pickle.loads(data)._rng.bit_generator.state != estimator._rng.bit_generator.state


@KINDS
def test_deep_copies_of_an_unseeded_estimator_draw_fresh_noise(kind):
    make, draw = ESTIMATORS[kind]
    estimator = make(None)
    assert _all_differ([draw(copy.deepcopy(estimator)), draw(copy.deepcopy(estimator))])


@KINDS
def test_seeded_copies_repeat_the_same_noise(kind):
    make, draw = ESTIMATORS[kind]
    estimator = make(0)
    data = pickle.dumps(estimator)
    first, second = pickle.loads(data), pickle.loads(data)
    assert first.random_state == 0  # stored as given
    assert _same(draw(first), draw(second))
    assert _same(draw(copy.deepcopy(estimator)), draw(estimator))


@KINDS
def test_integer_seeds_reproduce_fits_and_draws(kind):
    make, draw = ESTIMATORS[kind]
    first, second = make(7), make(7)
    assert first.get_params()["random_state"] == 7
    assert _same(draw(first), draw(second))
    unseeded = make(None)
    assert unseeded.get_params()["random_state"] is None
    assert clone(unseeded).get_params()["random_state"] is None


def test_adaptive_group_split_is_seeded_and_fresh_when_unseeded():
    """The split of ``fit`` into groups draws from the same generator."""
    seeded = [_adaptive(3).answers_.to_numpy() for _ in range(2)]
    assert _same(seeded[0], seeded[1])
    # Five marginal answers, each from a group of 800 users, split and randomized
    # independently: each agrees with probability about 0.02, all five below 1e-8.
    assert not _same(_adaptive(None).answers_.to_numpy(), _adaptive(None).answers_.to_numpy())


# ---------------------------------------------------------------- forked processes
def _draw_into(kind, estimator, queue):
    queue.put(np.asarray(ESTIMATORS[kind][1](estimator)).tolist())


def _forked_draws(kind, estimator, n_children=2):
    """Draws of ``n_children`` forked copies (the estimator reaches them by fork, not by
    pickle), then of the parent."""
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    children = [context.Process(target=_draw_into, args=(kind, estimator, queue))
                for _ in range(n_children)]
    for child in children:
        child.start()
    draws = [queue.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=120)
        assert child.exitcode == 0
    return draws + [np.asarray(ESTIMATORS[kind][1](estimator)).tolist()]


fork_only = pytest.mark.skipif(
    sys.platform != "linux" or "fork" not in multiprocessing.get_all_start_methods(),
    reason="the 'fork' start method is tested on Linux")


@fork_only
@KINDS
def test_forked_copies_of_an_unseeded_estimator_draw_fresh_noise(kind):
    estimator = ESTIMATORS[kind][0](None)
    assert _all_differ(_forked_draws(kind, estimator))


@fork_only
@KINDS
def test_forked_copies_of_a_seeded_estimator_repeat_the_parents_draws(kind):
    estimator = ESTIMATORS[kind][0](0)
    first, second, parent = _forked_draws(kind, estimator)
    assert _same(first, second) and _same(first, parent)


# ---------------------------------------------------------------- generator objects
def test_copies_of_an_estimator_with_a_generator_draw_fresh_noise():
    """A Generator as random_state: copies of the estimators (and of the LDPEncoder they fit
    inside) renew it, so the same stream is never replayed for other users."""
    from sklearn_ldp import MarginalEstimator

    estimator = MarginalEstimator(categories=CATEGORIES, strategy="inp_rr",
                                  epsilon=1.0, random_state=np.random.default_rng(3))
    data = pickle.dumps(estimator)
    first, second = pickle.loads(data), pickle.loads(data)
    assert isinstance(first.random_state, np.random.Generator)
    fitted = [e.fit(RECORDS).encoder_.transform(RECORDS).reports for e in (first, second)]
    assert not _same(*fitted)
    clones = [clone(estimator).fit(RECORDS).encoder_.transform(RECORDS).reports
              for _ in range(2)]
    assert not _same(*clones)


@KINDS
def test_copies_with_a_generator_draw_fresh_noise(kind):
    make, draw = ESTIMATORS[kind]
    estimator = make(np.random.default_rng(4))
    data = pickle.dumps(estimator)
    assert _all_differ([draw(pickle.loads(data)), draw(pickle.loads(data)), draw(estimator)])
    assert _all_differ([draw(copy.deepcopy(estimator)), draw(copy.deepcopy(estimator))])
