"""Black-box privacy audit of the memoizing kinds on the standard-library client.

``tests/test_privacy_audit.py`` runs the black-box distinguisher (a held-out likelihood-ratio
event with Clopper-Pearson bounds, :func:`_laws.empirical_epsilon_lower_bound`: a lower
bound on epsilon with confidence ``1 - 1e-3``) on the client's reports of every kind but the
memoizing ones, whose client reports need a state file per device. Here the same estimator
runs on reports of ``sklearn_ldp.deploy.client`` (one ``Randomizer`` and one state file per
simulated device, every report through ``privatize``), for two neighbouring inputs (the
smallest and the largest category, or the two bounds of 1BitMean's counter):

* **One report, fresh devices** (``longitudinal``): the round-1 report of each device; the
  claim is ``epsilon_1``.
* **Every round of a device, fresh devices** (all three kinds): an observer who keeps every
  report of a device can average its rounds; memoization limits what that reveals to the
  permanent response, so the claim is ``epsilon_perm`` (dBitFlipPM and 1BitMean:
  ``epsilon``, and every round repeats the first report). The observer's statistic is how
  many more rounds supported the first input than the second (the reports equal to it, or
  the bits set for it). The control: without memoization (a new secret every round, drawn
  on the server's path, which samples the same law) the same statistic of as many devices
  and rounds sees through ``epsilon_perm``, so the test has the power to see a broken memo.
* **One device, fixed permanent responses** (``longitudinal``): the reports of one device
  for each of the two values. Given the secret, a report is the instantaneous step applied
  to the value's permanent response, so the claim is the instantaneous step's own epsilon
  for two permanent responses, computed exactly from the shipped numerators (``epsilon_1``
  is a claim over fresh secrets, not for one fixed secret).
"""

import json
import math
import os
import warnings

import numpy as np
import pytest
from _laws import empirical_epsilon_lower_bound

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.mechanisms.longitudinal.mechanisms import (
    LONGITUDINAL_PROTOCOLS,
    DBitFlipPM,
    LongitudinalMechanism,
    MemoState,
    OneBitMeanPM,
)

PROTOCOLS = sorted(LONGITUDINAL_PROTOCOLS)
# epsilon_1 close to epsilon_perm: 12 rounds of fresh reports would reveal about 2 (the
# control measures 1.4 to 2.0 with these sizes), memoized ones at most epsilon_perm.
EPSILON_PERM, EPSILON_1 = 1.0, 0.9
# One report of these protocols is at most 0.76 (l_oue) and 0.66 (l_soue) here.
EPSILON_1_BELOW = {"l_oue": 0.7, "l_soue": 0.6}
N_DEVICES = 400  # per input
N_ROUNDS = 12  # longitudinal; the kinds without fresh noise repeat their report (3 rounds)
N_REPORTS = 1_000  # per input, one device
_ONE = 2**52


def _randomizer(spec, folder, device, seed):
    """The client of one device: its own state file, seeded (a test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded-client warning: seeded on purpose
        return Randomizer.from_json(spec, seed=seed,
                                    state=os.path.join(folder, f"device-{device}.json"))


def _device_rounds(mechanism, value, folder, n_devices, n_rounds, seed):
    """``(n_devices, n_rounds)`` list of the reports of fresh devices, every round through
    the client (as sent: JSON)."""
    spec = json.dumps(mechanism.to_dict())
    rows = []
    for device in range(n_devices):
        client = _randomizer(spec, folder, f"{seed}-{device}", seed * 10**6 + device)
        rows.append([json.loads(json.dumps(client.privatize(value))) for _ in range(n_rounds)])
    return rows


def _report_key(report):
    """One report as a hashable event key (an int or a tuple)."""
    return tuple(report) if isinstance(report, list) else report


def _keys(rows):
    return np.array([hash(_report_key(row[0])) for row in rows])


def _rounds_statistic(mechanism, rows, pair):
    """What the observer keeps of each device's rounds: how many more of them supported the
    first input of ``pair`` than the second (longitudinal: reports equal to it, or bits set
    for it); the first report for the kinds without fresh noise."""
    if not isinstance(mechanism, LongitudinalMechanism):
        return _keys(rows)
    first, second = pair
    if mechanism.unary:
        bits = np.unpackbits(np.array(rows, dtype=np.uint8), axis=2, bitorder="little")
        return bits[:, :, first].sum(axis=1).astype(int) - bits[:, :, second].sum(axis=1)
    reports = np.array(rows)
    return (reports == first).sum(axis=1) - (reports == second).sum(axis=1)


def _longitudinal(protocol):
    return LongitudinalMechanism(4, EPSILON_PERM, EPSILON_1_BELOW.get(protocol, EPSILON_1),
                                 protocol)


def _instantaneous_epsilon(mechanism):
    """The instantaneous step's epsilon for any two permanent responses, exactly from its
    numerators: GRR ``ln(keep (k - 1) / (2^52 - keep))``; unary, every bit may differ, each
    costing ``ln`` of the larger of ``p / q`` and ``(1 - q) / (1 - p)``."""
    numerators = mechanism.numerators()
    if not mechanism.unary:
        keep = numerators["keep_instant"]
        return math.log(keep * (mechanism.n_cells - 1) / (_ONE - keep))
    p, q = numerators["p_instant"], numerators["q_instant"]
    return mechanism.n_cells * max(math.log(p / q), math.log((_ONE - q) / (_ONE - p)))


@pytest.fixture(scope="module")
def rounds_of_fresh_devices(tmp_path_factory):
    """Every round of fresh devices for the two inputs of each kind (built once)."""
    folder = str(tmp_path_factory.mktemp("devices"))
    cases = {protocol: (_longitudinal(protocol), (0, 3), N_ROUNDS) for protocol in PROTOCOLS}
    cases["dbitflip_pm"] = (DBitFlipPM(5, EPSILON_PERM, n_sampled=2), (0, 4), 3)
    cases["1bitmean_pm"] = (OneBitMeanPM(10.0, EPSILON_PERM), (0.0, 10.0), 3)
    with pytest.MonkeyPatch.context() as patch:
        # Each of the 5,600 devices saves its state file once, and the two fsyncs of a save
        # were nearly all of this module's time. The audit is about the reports: the state
        # is still written, sealed and read back every round; only the flush to disk goes.
        patch.setattr(os, "fsync", lambda descriptor: None)
        return {name: (mechanism, pair, [_device_rounds(mechanism, value, folder, N_DEVICES,
                                                        n_rounds, seed=2 * index + side)
                                         for side, value in enumerate(pair)])
                for index, (name, (mechanism, pair, n_rounds))
                in enumerate(sorted(cases.items()))}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_one_report_of_fresh_devices_stays_below_epsilon_1(rounds_of_fresh_devices,
                                                            protocol):
    mechanism, _, (first, second) = rounds_of_fresh_devices[protocol]
    bound = empirical_epsilon_lower_bound(_keys(first), _keys(second))
    print(f"{protocol} one report, fresh devices: bound {bound:.3f} <= {mechanism.epsilon_1}")
    assert bound <= mechanism.epsilon_1, bound


@pytest.mark.parametrize("kind", [*PROTOCOLS, "dbitflip_pm", "1bitmean_pm"])
def test_every_round_of_fresh_devices_stays_below_epsilon_perm(rounds_of_fresh_devices, kind):
    mechanism, pair, (first, second) = rounds_of_fresh_devices[kind]
    claim = getattr(mechanism, "epsilon_perm", getattr(mechanism, "epsilon", None))
    if not isinstance(mechanism, LongitudinalMechanism):
        # Nothing is fresh: every round repeats the device's first report.
        for row in first + second:
            assert all(report == row[0] for report in row), row
    bound = empirical_epsilon_lower_bound(_rounds_statistic(mechanism, first, pair),
                                          _rounds_statistic(mechanism, second, pair))
    print(f"{kind} every round, fresh devices: bound {bound:.3f} <= {claim}")
    assert bound <= claim, bound


def test_without_memoization_the_rounds_reveal_more_than_epsilon_perm():
    # The control: a new secret every round (as a device whose state is lost every round),
    # on the server's path (the same law, faster). The same observer sees through
    # epsilon_perm.
    mechanism = _longitudinal("l_grr")
    rng = np.random.default_rng(90)
    rounds = []
    for value in (0, 3):
        reports = [mechanism.randomize(np.full(N_DEVICES, value),
                                       MemoState(mechanism, N_DEVICES, rng=rng), rng)
                   for _ in range(N_ROUNDS)]
        rounds.append(np.stack(reports, axis=1).tolist())
    bound = empirical_epsilon_lower_bound(*(_rounds_statistic(mechanism, rows, (0, 3))
                                            for rows in rounds))
    print(f"l_grr without memoization: bound {bound:.3f} > {mechanism.epsilon_perm}")
    assert bound > mechanism.epsilon_perm, bound


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_reports_of_one_device_stay_below_the_instantaneous_epsilon(tmp_path, protocol):
    mechanism = _longitudinal(protocol)
    client = _randomizer(json.dumps(mechanism.to_dict()), str(tmp_path), "one", seed=7)
    reports = [np.array([hash(_report_key(json.loads(json.dumps(client.privatize(value)))))
                         for _ in range(N_REPORTS)]) for value in (0, 3)]
    claim = _instantaneous_epsilon(mechanism)
    assert claim > mechanism.epsilon_1  # a fixed secret is not covered by epsilon_1
    bound = empirical_epsilon_lower_bound(*reports)
    print(f"{protocol} one device: bound {bound:.3f} <= {claim:.3f}")
    assert bound <= claim, bound
