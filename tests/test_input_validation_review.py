"""Input-validation bugs found by the docstring review (issue 16, item 4).

Each public entry point below used to accept a bad argument silently, or to fail with another
library's message (range(), pandas' 'chunksize', numpy's matmul, a KeyError). Each now raises
a ValueError naming the parameter and the offending value; the valid calls still work.
"""

import os

import numpy as np
import pytest

from sklearn_ldp import LDPReports
from sklearn_ldp.deploy.io import iter_report_chunks, read_reports, write_reports
from sklearn_ldp.mechanisms import (
    GaussianMechanism,
    GaussianRejectionMechanism,
    OneBitRandomizer,
    RandomizedResponse,
)
from sklearn_ldp.workloads import Parity, parity
from sklearn_ldp.workloads.spec import workload_from_spec

BAD_CHUNK_SIZES = [0, -1, -(2**20), 2.0, "10", True, None]


# ---------------------------------------------------------------------- io: chunk_size
@pytest.fixture
def reports():
    return LDPReports(np.array([0, 2, 1, 1, 0]), RandomizedResponse(3, 1.0))


@pytest.mark.parametrize("chunk_size", BAD_CHUNK_SIZES)
def test_write_reports_refuses_a_bad_chunk_size_and_writes_nothing(tmp_path, reports,
                                                                   chunk_size):
    path = tmp_path / "reports.csv"
    with pytest.raises(ValueError, match=r"chunk_size must be an integer >= 1, got "
                                         + repr(chunk_size).replace("(", r"\(")):
        write_reports(reports, path, chunk_size=chunk_size)
    assert os.listdir(tmp_path) == []  # no file, no temporary file left behind


def test_write_reports_with_a_bad_chunk_size_leaves_an_existing_file_alone(tmp_path, reports):
    path = tmp_path / "reports.csv"
    write_reports(reports, path)
    before = path.read_bytes()
    with pytest.raises(ValueError, match="chunk_size"):
        write_reports(LDPReports(np.array([1]), reports.mechanism), path, chunk_size=-5)
    assert path.read_bytes() == before


@pytest.mark.parametrize("chunk_size", [1, 2, np.int64(3), 10**9])
def test_write_reports_writes_every_report_at_any_valid_chunk_size(tmp_path, reports,
                                                                   chunk_size):
    path = tmp_path / "reports.csv"
    write_reports(reports, path, chunk_size=chunk_size)
    assert read_reports(path).reports.tolist() == [0, 2, 1, 1, 0]


@pytest.mark.parametrize("chunk_size", BAD_CHUNK_SIZES)
def test_iter_report_chunks_refuses_a_bad_chunk_size_at_the_call(tmp_path, reports, chunk_size):
    path = tmp_path / "reports.csv"
    write_reports(reports, path)
    with pytest.raises(ValueError, match="chunk_size must be an integer >= 1") as error:
        iter_report_chunks(path, chunk_size=chunk_size)  # no next(): refused at the call
    assert "chunksize" not in str(error.value)


def test_iter_report_chunks_still_yields_checked_chunks(tmp_path, reports):
    path = tmp_path / "reports.csv"
    write_reports(reports, path)
    chunks = [chunk.tolist() for chunk in iter_report_chunks(path, chunk_size=np.int32(2))]
    assert chunks == [[0, 2], [1, 1], [0]]


# ---------------------------------------------------------------------- Parity
def test_parity_refuses_a_mask_outside_the_domain():
    # 8 >= n would have raised numpy's IndexError in matvec, long after construction.
    with pytest.raises(ValueError, match=r"masks must be integers in \[1, 8\).*masks\[1\] is 8"):
        Parity(8, [1, 8], ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"masks\[0\] is -3"):
        Parity(8, [-3, 1], ["a", "b", "c"])


def test_parity_refuses_mask_zero():
    # Mask 0 is the all-ones row (the total), which used to be labelled "parity()".
    with pytest.raises(ValueError, match=r"0 would be the total\); masks\[2\] is 0"):
        Parity(4, [1, 2, 0], ["a", "b"])


@pytest.mark.parametrize("masks", [[1.0, 2.0], [[1, 2]], [], [True], "12"])
def test_parity_refuses_masks_that_are_not_a_1d_integer_array(masks):
    with pytest.raises(ValueError, match="masks must be a non-empty 1-D array of integers"):
        Parity(4, masks, ["a", "b"])


@pytest.mark.parametrize("bit_names", [["a"], ["a", "b", "c"], []])
def test_parity_refuses_bit_names_of_the_wrong_length(bit_names):
    # Two names over 8 cells used to give labels naming the wrong bits.
    with pytest.raises(ValueError, match=rf"n = 4 cells must be 2 \*\* len\(bit_names\).*got "
                                         rf"{len(bit_names)} bit_names"):
        Parity(4, [1], bit_names)


@pytest.mark.parametrize("bit_names", ["ab", None, 3, ["a", 1], {"a": 0, "b": 1}])
def test_parity_refuses_bit_names_that_are_not_strings(bit_names):
    with pytest.raises(ValueError, match="bit_names must be"):
        Parity(4, [1], bit_names)


@pytest.mark.parametrize("n", [0, -4, 4.0, True])
def test_parity_refuses_a_bad_n(n):
    with pytest.raises(ValueError, match=r"Parity: n_cells must be an integer >= 1, got "):
        Parity(n, [1], ["a", "b"])


def test_parity_valid_construction_and_spec_round_trip():
    W = Parity(8, np.array([4, 1, 7], dtype=np.uint8), ["a", "b", "c"])
    assert W.labels.tolist() == ["parity(a)", "parity(c)", "parity(a, b, c)"]
    assert W.masks.dtype == np.int64
    np.testing.assert_array_equal(W.toarray()[2], [1, -1, -1, 1, -1, 1, 1, -1])
    spec, arrays = parity(8, k=2).to_spec()
    assert workload_from_spec(spec, arrays).labels.tolist() == parity(8, k=2).labels.tolist()


def test_parity_spec_loading_uses_the_same_validation():
    spec, arrays = parity(8).to_spec()
    with pytest.raises(ValueError, match=r"^workload spec: Parity: masks .* masks\[0\] is 0"):
        workload_from_spec(spec, {"masks": np.array([0, 1])})
    with pytest.raises(ValueError, match=r"^workload spec: Parity: n = 8 cells must be"):
        workload_from_spec({**spec, "bit_names": ["a", "b"]}, arrays)
    with pytest.raises(ValueError, match=r"^workload spec: Parity: bit_names must be"):
        workload_from_spec({**spec, "bit_names": "abc"}, arrays)
    with pytest.raises(ValueError, match="the array 'masks' is missing"):
        workload_from_spec(spec, {})


# ---------------------------------------------------------------------- OneBitRandomizer
@pytest.mark.parametrize("missing", [["epsilon"], ["bound"], ["epsilon", "bound"]])
def test_one_bit_from_dict_names_a_missing_field(missing):
    spec = {key: value for key, value in OneBitRandomizer(1.0, 2.0).to_dict().items()
            if key not in missing}
    with pytest.raises(ValueError, match=rf"lacks the field\(s\) {missing!r}".replace("[", r"\[")
                       .replace("]", r"\]")):
        OneBitRandomizer.from_dict(spec)


def test_one_bit_from_dict_round_trip_and_bad_values():
    randomizer = OneBitRandomizer(0.5, 3.0)
    assert OneBitRandomizer.from_dict(randomizer.to_dict()) == randomizer
    with pytest.raises(ValueError, match="epsilon"):
        OneBitRandomizer.from_dict({"randomizer": "one_bit", "epsilon": -1.0, "bound": 1.0})


# ---------------------------------------------------------------------- Gaussian mechanisms
@pytest.fixture(scope="module")
def rejection():
    return GaussianRejectionMechanism(4, 1.0)


@pytest.mark.parametrize("indices, first, value", [([0, -1, 2], 1, -1), ([4, 0], 0, 4),
                                                    ([-4, -4], 0, -4)])
def test_keep_probability_refuses_indices_outside_the_domain(rejection, indices, first, value):
    # A negative index used to select another type's column (numpy's wrap-around).
    draws = np.zeros((len(indices), rejection.n_queries))
    with pytest.raises(ValueError, match=rf"indices must be cells in \[0, 4\); "
                                         rf"indices\[{first}\] is {value}"):
        rejection.keep_probability(np.array(indices), draws)


@pytest.mark.parametrize("indices", [np.array([0.0, 1.0]), np.array([[0, 1]])])
def test_keep_probability_refuses_indices_that_are_not_1d_integers(rejection, indices):
    with pytest.raises(ValueError, match="1-D array of integer cell indices"):
        rejection.keep_probability(indices, np.zeros((2, rejection.n_queries)))


def test_keep_probability_refuses_draws_of_the_wrong_shape(rejection):
    with pytest.raises(ValueError, match=r"draws must have shape .* got shape \(3, 4\)"):
        rejection.keep_probability(np.array([0, 1]), np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"draws must have shape .* got shape \(2, 5\)"):
        rejection.keep_probability(np.array([0, 1]), np.zeros((2, 5)))


def test_keep_probability_of_valid_indices_stays_in_its_privacy_window(rejection):
    rng = np.random.default_rng(0)
    indices = rng.integers(0, 4, 500)
    draws = rejection.sigma * rng.standard_normal((500, rejection.n_queries))
    keep = rejection.keep_probability(indices, draws)
    # Spec version 2: the window is the exact envelope [lo, hi] / 2^52 (hi / lo <= e^eps).
    assert keep.min() >= rejection.keep_low / 2**52 * (1 - 1e-12)
    assert keep.max() <= rejection.keep_high / 2**52 * (1 + 1e-12)
    numerators = rejection.keep_numerators(indices, draws)
    assert rejection.keep_low <= numerators.min() <= numerators.max() <= rejection.keep_high


@pytest.mark.parametrize("make", [lambda: GaussianMechanism(4, 1.0, delta=1e-6),
                                  lambda: GaussianRejectionMechanism(4, 1.0),
                                  lambda: RandomizedResponse(4, 1.0)],
                         ids=["gaussian", "gaussian_rejection", "randomized_response"])
def test_query_variance_checks_the_workload_width(make):
    mechanism = make()
    for bad in (np.ones((2, 5)), np.ones(3), np.ones((2, 2, 4))):
        with pytest.raises(ValueError, match=r"the workload must have 4 columns .* got shape"):
            mechanism.query_variance(bad)
    # One query as a 1-D row, and a matrix, still work and agree.
    W = np.array([[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    np.testing.assert_allclose(mechanism.query_variance(W[0]), mechanism.query_variance(W)[:1])
    assert mechanism.query_variance(W).shape == (2, 4)
