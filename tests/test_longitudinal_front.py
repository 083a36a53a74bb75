"""Longitudinal collection through the front door: LongitudinalEncoder -> LongitudinalEstimator.

Rounds of the same users end to end; per-round variance against the analytic formula; the
point of memoization (averaging rounds reveals the permanent response, not the value); the
ledger rule; sealed state files; fuzzing of the constructors and the loader.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from _fuzzing import fuzz_settings, outcome
from _stats import check_unbiased_and_variance
from hypothesis import given
from hypothesis import strategies as st
from sklearn.utils.estimator_checks import parametrize_with_checks

from sklearn_ldp.deploy.budget import (
    BudgetExceededError,
    PrivacyLedger,
    register_ledger,
    resolve_ledger,
    unregister_ledger,
)
from sklearn_ldp.estimators.longitudinal import LongitudinalEstimator
from sklearn_ldp.longitudinal import LongitudinalEncoder, LongitudinalReports, LongitudinalState
from sklearn_ldp.mechanisms.longitudinal.mechanisms import LongitudinalMechanism

CATS = ["mail", "maps", "news", "chat"]
CATEGORICAL = ["l_grr", "l_sue", "l_oue", "l_osue", "l_soue", "dbitflip"]


def _two_rounds(rng, n):
    """Round 0 values and round 1 values (a fifth of the users change)."""
    first = rng.choice(len(CATS), size=n, p=[0.4, 0.3, 0.2, 0.1])
    second = np.where(rng.random(n) < 0.2, rng.integers(len(CATS), size=n), first)
    return first, second


# ---------------------------------------------------------------- end to end
@pytest.mark.parametrize("strategy", CATEGORICAL)
def test_rounds_end_to_end_unbiased_with_the_analytic_variance(strategy):
    rng = np.random.default_rng(101)
    n, replicates = 1000, 200
    first, second = _two_rounds(rng, n)
    names = np.array(CATS, dtype=object)
    enc = LongitudinalEncoder(categories=CATS, strategy=strategy, epsilon_perm=3.0,
                              epsilon_1=1.0, n_sampled=2, random_state=102).fit()
    estimates = np.empty((replicates, 2, len(CATS)))
    for r in range(replicates):  # each replicate: a fresh population of clients
        state = enc.new_state(n)
        est = LongitudinalEstimator()
        for values in (first, second):
            est.partial_fit(enc.transform(names[values], state=state))
        estimates[r] = est.estimates_.to_numpy()
    for t, values in enumerate((first, second)):
        truth = np.bincount(values, minlength=len(CATS))
        variance = enc.mechanism_.count_variance(truth / n, n)
        check_unbiased_and_variance(estimates[:, t], truth, variance)
    # The estimator's data-independent and plug-in errors describe the same variance.
    assert est.expected_error_.shape == (2, 2)
    assert list(est.expected_error_.columns) == ["worst_case", "average_case"]
    worst = est.expected_error_["worst_case"].to_numpy()
    assert np.all(variance[:, None] <= worst[None, :] * (1 + 1e-12))
    assert list(est.estimates_.index) == [0, 1] and est.n_rounds_ == 2
    assert est.standard_errors_.shape == est.estimates_.shape


def test_counter_rounds_end_to_end_unbiased_with_the_analytic_variance():
    rng = np.random.default_rng(103)
    n, replicates = 300, 800
    hours = rng.uniform(0, 6, n)
    enc = LongitudinalEncoder(strategy="1bitmean", max_value=6.0, epsilon_perm=1.0,
                              n_segments=6, random_state=104).fit()
    means = np.empty(replicates)
    for r in range(replicates):
        state = enc.new_state(n)
        means[r] = LongitudinalEstimator().fit(enc.transform(hours, state=state)) \
            .estimates_["mean"].iloc[0]
    check_unbiased_and_variance(means[:, None], np.array([hours.mean()]),
                                np.array([enc.mechanism_.mean_variance(hours)]))
    est = LongitudinalEstimator().fit(enc.transform(hours, state=enc.new_state(n)))
    assert est.expected_error_["worst_case"].iloc[0] >= enc.mechanism_.mean_variance(hours)


def test_normalized_estimates_are_fractions():
    rng = np.random.default_rng(105)
    values = np.array(CATS, dtype=object)[rng.choice(4, 20_000, p=[0.4, 0.3, 0.2, 0.1])]
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    counts = LongitudinalEstimator().fit(enc.transform(values, state=enc.new_state(20_000)))
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    fractions = LongitudinalEstimator(normalize=True).fit(
        enc.transform(values, state=enc.new_state(20_000)))
    assert np.allclose(fractions.estimates_.to_numpy() * 20_000, counts.estimates_.to_numpy())
    assert np.allclose(fractions.expected_error_.to_numpy() * 20_000**2,
                       counts.expected_error_.to_numpy())


# ---------------------------------------------------------------- memoization
def test_averaging_memoized_rounds_converges_to_the_permanent_response_not_the_value():
    rng = np.random.default_rng(106)
    n, rounds = 2000, 60
    values = np.array(CATS, dtype=object)[rng.integers(4, size=n)]
    enc = LongitudinalEncoder(categories=CATS, strategy="l_grr", epsilon_perm=1.0,
                              epsilon_1=0.5, random_state=107).fit()
    state = enc.new_state(n)
    memoized = np.array([enc.transform(values, state=state).reports for _ in range(rounds)])
    fresh = np.array([enc.transform(values, state=enc.new_state(n)).reports
                      for _ in range(rounds)])
    truth = pd.Index(CATS).get_indexer(values)

    def mode(reports):
        return np.argmax(np.apply_along_axis(np.bincount, 0, reports, minlength=4), axis=0)

    # Memoized: the mode of a user's rounds is its permanent response, which is the value
    # with probability p1 only; fresh randomization: the mode is the value (P1 > P0).
    permanent = enc.mechanism_.permanent_response(truth, state.memo.secrets)
    assert np.mean(mode(memoized) == permanent) > 0.97
    p1 = enc.mechanism_.p1
    hit = np.mean(mode(memoized) == truth)
    assert abs(hit - p1) < 4.5 * math.sqrt(p1 * (1 - p1) / n) + 0.03, (hit, p1)
    # Fresh: measured 0.83 with these seeds (P1 = 0.355 against P0 = 0.215 per round).
    assert np.mean(mode(fresh) == truth) > 0.75
    assert p1 < 0.6  # so the two regimes are far apart


# ---------------------------------------------------------------- the ledger
def test_ledger_charges_each_round_up_to_the_cap(tmp_path):
    path = tmp_path / "ledger.json"
    PrivacyLedger.create(path, total_epsilon=10.0)
    enc = LongitudinalEncoder(categories=CATS, epsilon_perm=2.0, epsilon_1=0.5, max_values=2,
                              ledger=str(path), random_state=0).fit()
    state = enc.new_state(50)
    values = np.array(CATS, dtype=object)[np.arange(50) % 4]
    for _ in range(12):
        enc.transform(values, state=state)
    ledger = PrivacyLedger.open(path)  # the file stays readable, entries in the old format
    charges = [entry["epsilon"] for entry in ledger.entries]
    # eps_perm for each of the first max_values rounds, then nothing.
    assert charges == [2.0] * 2 + [0.0] * 10
    assert ledger.spent().epsilon == pytest.approx(4.0) == state.charged_epsilon
    assert "permanent epsilon_perm=2 x max_values=2 = cap 4" in ledger.entries[0]["description"]
    assert "first round" in ledger.entries[0]["description"]


def test_max_values_cap_refuses_a_new_value_and_changes_nothing():
    register_ledger("front-cap", PrivacyLedger(total_epsilon=2.0))
    try:
        enc = LongitudinalEncoder(categories=CATS, epsilon_perm=1.0, epsilon_1=0.5,
                                  max_values=2, ledger="front-cap", random_state=0).fit()
        state = enc.new_state(3)
        enc.transform(["mail", "maps", "news"], state=state)
        enc.transform(["maps", "maps", "news"], state=state)  # user 0: a second value
        keys = state.memo.keys.copy()
        with pytest.raises(ValueError, match="user 0 .* max_values=2"):
            enc.transform(["news", "maps", "news"], state=state)
        assert state.rounds == 2 and np.array_equal(state.memo.keys, keys)
        assert len(resolve_ledger("front-cap").entries) == 2
        enc.transform(["mail", "maps", "mail"], state=state)  # values already held
        assert state.values_per_user().tolist() == [2, 1, 2]
    finally:
        unregister_ledger("front-cap")


def test_ledger_refusal_reports_nothing():
    register_ledger("front-refuse", PrivacyLedger(total_epsilon=4.0))
    try:
        enc = LongitudinalEncoder(categories=CATS, epsilon_perm=2.0, epsilon_1=0.5,
                                  ledger="front-refuse", random_state=0).fit()
        state = enc.new_state(4)
        for _ in range(2):
            enc.transform(CATS, state=state)
        keys = state.memo.keys.copy()
        with pytest.raises(BudgetExceededError):  # a third value is possible: 2 more
            enc.transform(CATS, state=state)
        assert state.rounds == 2 and state.charged_epsilon == 4.0
        assert np.array_equal(state.memo.keys, keys)
    finally:
        unregister_ledger("front-refuse")


def _joint_epsilon_of_memoized_grr_rounds(mechanism, n_rounds):
    """Exact epsilon of ``n_rounds`` memoized L-GRR reports of one unchanged value: the
    largest log-ratio, over every sequence of reports and two values, of
    ``sum_B P(B | v) prod_t P(r_t | B)`` (by symmetry, values 0 and 1 suffice)."""
    k = mechanism.n_cells
    instant = np.full((k, k), mechanism.q2)
    np.fill_diagonal(instant, mechanism.p2)
    laws = []
    for value in (0, 1):
        permanent = np.full(k, (1 - mechanism.p1) / (k - 1))
        permanent[value] = mechanism.p1
        joint = np.einsum("b,br->br", permanent, instant)
        for _ in range(n_rounds - 1):  # joint[b, r_1, ..., r_t] then summed over b
            joint = joint[..., None] * instant.reshape((k,) + (1,) * (joint.ndim - 1) + (k,))
        laws.append(joint.sum(axis=0))
    return float(np.max(np.abs(np.log(laws[0] / laws[1]))))


def test_memoized_rounds_are_not_t_times_epsilon_1():
    """Why the ledger charges epsilon_perm per possible value, not epsilon_1 per round: the
    rounds of one value share their permanent response, so two rounds can reveal more than
    2 epsilon_1 (never more than epsilon_perm)."""
    mechanism = LongitudinalMechanism(50, 4.0, 1.0, "l_grr")
    one, two, three = (_joint_epsilon_of_memoized_grr_rounds(mechanism, t) for t in (1, 2, 3))
    assert one == pytest.approx(1.0, rel=1e-9)
    # 2.216 and 3.231 (docs/privacy_budget.md): T x epsilon_1 would under-count.
    assert two == pytest.approx(2.216, abs=5e-4) and three == pytest.approx(3.231, abs=5e-4)
    assert max(one, two, three) <= 4.0 * (1 + 1e-9)   # the permanent response bounds them
    assert one < two < three


# ---------------------------------------------------------------- states and files
@pytest.mark.parametrize("strategy", [*CATEGORICAL, "1bitmean"])
def test_state_file_round_trip_continues_the_collection(strategy, tmp_path):
    counter = strategy == "1bitmean"
    enc = LongitudinalEncoder(categories=None if counter else CATS, strategy=strategy,
                              max_value=5.0 if counter else None, random_state=1).fit()
    values = np.linspace(0, 5, 40) if counter else np.array(CATS * 10, dtype=object)
    state = enc.new_state(40)
    first = enc.transform(values, state=state)
    path = enc_path = tmp_path / "state.npz"
    state.save(path)
    state.close()  # the file's lock: one writer at a time
    loaded = enc.load_state(enc_path)
    assert (loaded.rounds, loaded.charged_epsilon, loaded.collection_id) == (
        state.rounds, state.charged_epsilon, state.collection_id)
    assert np.array_equal(loaded.memo.keys, state.memo.keys)
    assert np.array_equal(loaded.memo.secrets, state.memo.secrets)
    again = enc.transform(values, state=loaded)
    assert again.round == 1 and loaded.n_entries == state.n_entries
    if strategy in ("dbitflip", "1bitmean"):  # memoized bits only: the same report again
        for a, b in zip(np.atleast_1d(first.reports), np.atleast_1d(again.reports),
                        strict=True):
            assert np.array_equal(a, b)


def test_edited_or_foreign_state_files_are_refused(tmp_path):
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    state = enc.new_state(20)
    enc.transform(np.array(CATS * 5, dtype=object), state=state)
    path = tmp_path / "state.npz"
    state.save(path)
    state.close()
    # Another memo saved under the old seal: the checksum refuses it.
    with np.load(path) as data:
        arrays = {name: data[name] for name in data.files}
    arrays["secrets"] = arrays["secrets"] ^ np.uint64(1)
    edited = tmp_path / "edited.npz"
    np.savez(edited, **arrays)
    with pytest.raises(ValueError, match="edited.npz.*checksum mismatch"):
        enc.load_state(edited)
    # Bytes flipped in the file, a truncated file, and garbage: named, refused.
    raw = path.read_bytes()
    assert raw.count(b'"rounds": 1') == 1
    flipped = tmp_path / "flipped.npz"
    flipped.write_bytes(raw.replace(b'"rounds": 1', b'"rounds": 7'))
    with pytest.raises(ValueError, match="flipped.npz"):
        enc.load_state(flipped)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match="truncated.npz"):
        enc.load_state(truncated)
    with pytest.raises(ValueError, match="missing.npz.*does not exist"):
        enc.load_state(tmp_path / "missing.npz")
    # The state of another spec (other budgets, categories or cap).
    for other in (LongitudinalEncoder(categories=CATS, epsilon_perm=3.0),
                  LongitudinalEncoder(categories=CATS[::-1]),
                  LongitudinalEncoder(categories=CATS, max_values=2),
                  LongitudinalEncoder(categories=CATS, strategy="l_grr")):
        with pytest.raises(ValueError, match="state.npz.*another specification"):
            other.fit().load_state(path)


def test_state_of_another_encoder_or_size_is_refused():
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    other = LongitudinalEncoder(categories=CATS, epsilon_1=0.5).fit()
    with pytest.raises(ValueError, match="another encoder specification"):
        enc.transform(CATS, state=other.new_state(4))
    with pytest.raises(ValueError, match="3 users"):
        enc.transform(CATS, state=enc.new_state(3))
    with pytest.raises(ValueError, match="needs state="):
        enc.transform(CATS)
    with pytest.raises(ValueError, match=r"X\[1\] = 'web' is not one of"):
        enc.transform(["mail", "web", "news", "chat"], state=enc.new_state(4))
    with pytest.raises(ValueError, match=r"X\[0\] = nan"):
        enc.transform([np.nan, "maps", "news", "chat"], state=enc.new_state(4))


def test_estimator_refuses_mixed_or_repeated_rounds():
    enc = LongitudinalEncoder(categories=CATS, random_state=0).fit()
    state = enc.new_state(4)
    est = LongitudinalEstimator().partial_fit(enc.transform(CATS, state=state))
    with pytest.raises(ValueError, match="round 0 is already fitted"):
        est.partial_fit(LongitudinalReports(np.zeros((4, 1), np.uint8), enc.spec_, 0))
    other = LongitudinalEncoder(categories=CATS, strategy="l_grr", random_state=0).fit()
    with pytest.raises(ValueError, match="another specification"):
        est.partial_fit(other.transform(CATS, state=other.new_state(4)))
    with pytest.raises(ValueError, match="fits LongitudinalReports"):
        est.partial_fit(np.zeros((4, 1)))
    assert est.predict([0]).shape == (1, 4)
    with pytest.raises(ValueError, match="not fitted"):
        est.predict([5])


# ---------------------------------------------------------------- scikit-learn checks
FIT_TAKES_REPORTS = ("LongitudinalEstimator decodes LongitudinalReports (one round with the "
                     "encoder's specification) and refuses a raw feature matrix by design")
EXPECTED_FAILED = dict.fromkeys(
    ["check_dict_unchanged", "check_dont_overwrite_parameters",
     "check_dtype_object", "check_estimators_dtypes", "check_estimators_fit_returns_self",
     "check_estimators_nan_inf", "check_estimators_overwrite_params",
     "check_estimators_pickle", "check_f_contiguous_array_estimator", "check_fit2d_1feature",
     "check_fit2d_1sample", "check_fit2d_predict1d", "check_fit_check_is_fitted",
     "check_fit_idempotent", "check_fit_score_takes_y",
     "check_methods_sample_order_invariance", "check_methods_subset_invariance",
     "check_n_features_in", "check_n_features_in_after_fitting", "check_pipeline_consistency",
     "check_positive_only_tag_during_fit", "check_readonly_memmap_input"],
    FIT_TAKES_REPORTS)


@parametrize_with_checks([LongitudinalEstimator()],
                         expected_failed_checks=lambda estimator: EXPECTED_FAILED)
def test_sklearn_compatible_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        check(estimator)


# ---------------------------------------------------------------- fuzzing
FUZZ = fuzz_settings(40)
json_values = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6),
                        st.floats(allow_nan=True), st.text(max_size=5))


@FUZZ
@given(strategy=st.one_of(st.sampled_from([*CATEGORICAL, "1bitmean"]), json_values),
       categories=st.one_of(st.lists(st.integers(0, 9), max_size=6), json_values),
       epsilon_perm=st.one_of(st.floats(-1, 60), json_values),
       epsilon_1=st.one_of(st.floats(-1, 60), json_values),
       n_sampled=json_values, max_value=json_values, n_segments=json_values,
       max_values=json_values)
def test_fuzz_encoder_parameters(strategy, categories, epsilon_perm, epsilon_1, n_sampled,
                                 max_value, n_segments, max_values):
    enc = LongitudinalEncoder(categories=categories, strategy=strategy,
                              epsilon_perm=epsilon_perm, epsilon_1=epsilon_1,
                              n_sampled=n_sampled, max_value=max_value, n_segments=n_segments,
                              max_values=max_values, random_state=0)
    if outcome(enc.fit) is None:
        return
    # What fits works: one round, decoded.
    values = (np.linspace(0, enc.mechanism_.max_value, 5) if enc.categories_ is None
              else np.array((enc.categories_ * 5)[:5], dtype=object))
    state = enc.new_state(5)
    est = LongitudinalEstimator().fit(enc.transform(values, state=state))
    assert np.isfinite(est.estimates_.to_numpy()).all()


@FUZZ
@given(data=st.data())
def test_fuzz_state_files(data, tmp_path_factory):
    directory = tmp_path_factory.mktemp("fuzz")
    enc = LongitudinalEncoder(categories=CATS, strategy=data.draw(st.sampled_from(CATEGORICAL)),
                              random_state=0).fit()
    state = enc.new_state(8)
    enc.transform(np.array(CATS * 2, dtype=object), state=state)
    path = directory / "state.npz"
    state.save(path)
    state.close()
    raw = bytearray(path.read_bytes())
    edits = data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(1, 255)),
                               min_size=1, max_size=4))
    for position, flip in edits:
        raw[position] ^= flip
    cut = data.draw(st.integers(1, len(raw)))
    (directory / "edited.npz").write_bytes(bytes(raw[:cut]))
    # Never anything but a named ValueError (or, if the edit hit unused zip bytes, the state).
    try:
        loaded = outcome(enc.load_state, directory / "edited.npz")
    except Exception as error:  # pragma: no cover - reported below
        raise AssertionError(f"unexpected {type(error).__name__}: {error}") from None
    if loaded is not None:
        assert isinstance(loaded, LongitudinalState)
        loaded.close()
        assert np.array_equal(loaded.memo.keys, state.memo.keys)
        assert np.array_equal(loaded.memo.secrets, state.memo.secrets)
