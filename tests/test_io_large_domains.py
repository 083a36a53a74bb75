"""Reports files over joint domains past ``max_cells`` read back, per mechanism.

The mechanisms that never allocate one entry per cell of the joint domain (SPL / SMP / RS+FD
columns, InpHT, the marginal-set kinds) collect over domains far past ``max_cells``; their
files must load. The cap on the domain's product stays for every mechanism that does index
the joint domain, refused from the header before anything is allocated.
"""

import json

import numpy as np
import pandas as pd
import pytest

from sklearn_ldp import LDPEncoder, LDPReports, get_limits
from sklearn_ldp.deploy.io import read_reports, write_reports
from sklearn_ldp.deploy.npz import _members_digest
from sklearn_ldp.mechanisms import RandomizedResponse
from sklearn_ldp.reports import AggregatedReports

pytest.importorskip("pyarrow")

# 9 columns of 10 categories: 10^9 cells, past max_cells (2^24).
DOMAIN = {f"c{i}": list(range(10)) for i in range(9)}


def _records(n=60):
    rng = np.random.default_rng(0)
    return pd.DataFrame({column: rng.integers(0, 10, n) for column in DOMAIN})


@pytest.mark.parametrize("strategy", ["spl", "smp", "rsfd", "inp_ht", "marg_ht"])
def test_reports_over_a_huge_product_domain_round_trip(tmp_path, strategy):
    assert 10**9 > get_limits()["max_cells"]  # the premise
    X = _records()
    encoder = LDPEncoder(categories=DOMAIN, strategy=strategy, epsilon=1.0,
                         random_state=0).fit(X)
    reports = encoder.transform(X)
    assert reports.domain.n_cells == 10**9
    reports.save(tmp_path / "r.npz")
    loaded = LDPReports.load(tmp_path / "r.npz")
    assert loaded.domain.shape == reports.domain.shape
    np.testing.assert_array_equal(loaded.reports, reports.reports)
    assert loaded.mechanism == reports.mechanism
    # The aggregate file and the streamed Parquet file too.
    reports.aggregate().save(tmp_path / "a.npz")
    statistic = AggregatedReports.load(tmp_path / "a.npz")
    assert statistic.domain.n_cells == 10**9
    write_reports(reports, tmp_path / "r.parquet")
    streamed = read_reports(tmp_path / "r.parquet")
    np.testing.assert_array_equal(streamed.reports, reports.reports)


def _rewrite_header(path, change):
    """Edit the header and store a matching checksum, so the content checks run."""
    with np.load(path, allow_pickle=False) as data:
        contents = {key: data[key] for key in data.files}
    header = json.loads(str(contents["header"]))
    change(header)
    contents["header"] = np.array(json.dumps(header))
    contents["sha256"] = np.array(_members_digest(contents))
    with open(path, "wb") as file:
        np.savez(file, **contents)


def test_a_huge_domain_is_still_refused_for_a_mechanism_that_indexes_it(tmp_path):
    path = tmp_path / "r.npz"
    LDPReports(np.array([0, 3, 2]), RandomizedResponse(4, 1.0)).save(path)
    _rewrite_header(path, lambda header: header.update(
        categories={f"c{i}": list(range(10)) for i in range(9)}))
    with pytest.raises(ValueError, match=r"r\.npz: the cells of the domain \(product of "
                                         r"category counts\) = 100000000 exceeds the limit "
                                         r"max_cells"):
        LDPReports.load(path)


def test_a_product_free_domain_past_int64_indices_is_refused(tmp_path):
    X = _records()
    reports = LDPEncoder(categories=DOMAIN, strategy="spl", epsilon=1.0,
                         random_state=0).fit(X).transform(X)
    path = tmp_path / "r.npz"
    reports.save(path)
    _rewrite_header(path, lambda header: header.update(
        categories={f"c{i}": list(range(10)) for i in range(20)}))
    with pytest.raises(ValueError, match=r"r\.npz: the cells of the domain .* exceed 2\^62"):
        LDPReports.load(path)


def test_a_product_free_spec_past_int64_indices_is_refused():
    from sklearn_ldp.mechanisms import mechanism_from_dict

    spec = {"mechanism": "inp_ht", "n_inputs": 4, "epsilon": 1.0,
            "params": {"shape": [10] * 20, "max_order": 1}}
    with pytest.raises(ValueError, match=r"'inp_ht' specification: the product of "
                                         r"params\.shape .* exceeds 2\^62"):
        mechanism_from_dict(spec)
    spec.update(n_inputs=10**20, params={"shape": [2, 2], "max_order": 1})
    with pytest.raises(ValueError, match=r"'inp_ht' specification: n_inputs = 10{20} "
                                         r"exceeds 2\^62"):
        mechanism_from_dict(spec)
