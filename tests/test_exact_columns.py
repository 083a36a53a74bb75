"""Exact law of LDPEncoder's ``"columns"`` records (``ColumnsMechanism``).

A record is collected part by part, each part by its own mechanism with its share of the
budget, and the report is the row of the parts' reports. Its exact law is the product of the
parts' exact laws, so the record is audited as a whole: every pair of records (differing in
every column, at the bounds, the largest and smallest categories, neighbouring floats)
satisfies the summed budget exactly, the server's and the client's report rows follow the
product law (chi-square), and hostile specifications are refused naming the field.
"""

import json
import warnings

import numpy as np
import pytest
from _audit_cases import mixed_record
from _laws import assert_private, assert_sampled_law

from sklearn_ldp.deploy.client import Randomizer
from sklearn_ldp.deploy.collect import reports_from_client
from sklearn_ldp.mechanisms import OptimizedUnaryEncoding, audit_privacy
from sklearn_ldp.mechanisms._base.exact import MAX_LAW_OUTPUTS
from sklearn_ldp.mechanisms.multi_attribute.columns import ColumnsMechanism, column_part
from sklearn_ldp.mechanisms.multi_attribute.mechanisms import MultiAttributeMechanism
from sklearn_ldp.mechanisms.numeric.means import (
    DuchiMechanism,
    PiecewiseMechanism,
    SampledMeanMechanism,
)
from sklearn_ldp.mechanisms.numeric.square_wave import SquareWaveMechanism

N_SERVER = 20_000
N_CLIENT = 4_000


def _numbers(epsilon):
    """The other numeric parts: Duchi (uint8 reports in a row of floats), Square Wave and
    sampled means (Duchi base, one of two attributes per user)."""
    return ColumnsMechanism([
        column_part(["d"], DuchiMechanism(epsilon / 2, (-1.0, 1.0))),
        column_part(["w"], SquareWaveMechanism(epsilon / 4, (0.0, 1.0), n_bins=2,
                                               grid_size=4)),
        column_part(["y", "z"], SampledMeanMechanism(epsilon / 4, [(0.0, 1.0), (0.0, 2.0)],
                                                     base="duchi", n_sampled=1)),
    ])


def _categories(epsilon):
    """The other categorical parts: SPL with OUE (packed bits) and a unary-encoding
    oracle."""
    return ColumnsMechanism([
        column_part(["a", "b"], MultiAttributeMechanism((2, 2), epsilon / 2, protocol="spl",
                                                        oracle="oue")),
        column_part(["c"], OptimizedUnaryEncoding(3, epsilon / 2)),
    ])


# Records differing in every column: the bounds, the largest and smallest categories, and
# neighbouring floats.
MIXED_RECORDS = [[5.0, 0, 0, 0], [5.0000001, 2, 1, 1], [0.0, 0, 1, 0], [10.0, 2, 0, 1]]
HALF_UP = float(np.nextafter(0.5, 1.0))
NUMBER_RECORDS = [[-1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 2.0], [0.5, 0.5, 0.5, 1.0],
                  [HALF_UP, HALF_UP, HALF_UP, 1.0]]
CATEGORY_RECORDS = [[0, 0, 0], [1, 1, 2], [0, 1, 1], [1, 0, 0]]
BUILDERS = {"mixed": (mixed_record, MIXED_RECORDS), "numbers": (_numbers, NUMBER_RECORDS),
            "categories": (_categories, CATEGORY_RECORDS)}


def _client_rows(mechanism, record, seed, n):
    """``n`` report rows of ``record`` drawn by the standard-library client."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seeded-client warning: seeded on purpose
        randomizer = Randomizer.from_json(mechanism.to_json(), seed=seed)
        values = {column: (value if isinstance(value, float) else int(value))
                  for column, value in zip(mechanism.columns, record, strict=True)}
        sent = [randomizer.privatize(values) for _ in range(n)]
    return reports_from_client(json.loads(json.dumps(sent)), mechanism).reports


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 4.0, 8.0])
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_records_are_private_at_the_summed_budget(name, epsilon):
    build, records = BUILDERS[name]
    mechanism = build(epsilon)
    assert mechanism.epsilon == epsilon  # the shares add up exactly
    worst = assert_private(mechanism, records, epsilon)
    assert worst <= epsilon


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_record_is_audited_as_a_whole(name):
    # The parts' worst ratios are reached on the same pair of records, so the product law
    # realises nearly the whole summed budget: a claim of 95% of it fails.
    build, records = BUILDERS[name]
    mechanism = build(1.0)
    audit = audit_privacy(mechanism, records)
    assert audit.private and 0.95 < audit.realised <= 1.0, audit
    assert not audit_privacy(mechanism, records, 0.95).private


def test_product_law_lists_every_combination_with_the_product_weights():
    mechanism = mixed_record(1.0)
    law = mechanism.exact_law(MIXED_RECORDS[0])
    parts = [part.exact_law(np.asarray(MIXED_RECORDS[0], dtype=float)[positions])
             for part, positions in zip(mechanism.parts, mechanism._positions, strict=True)]
    assert len(law.weights) == np.prod([len(part.weights) for part in parts])
    assert law.total == np.prod([part.total for part in parts], dtype=object)
    assert sum(law.weights) == law.total
    assert law.outputs.dtype == mechanism.report_dtype
    assert law.outputs.shape == (len(law.weights), mechanism.width)
    # The canonical order is the same for every record.
    other = mechanism.exact_law(MIXED_RECORDS[-1])
    assert np.array_equal(law.outputs, other.outputs)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_server_reports_follow_the_product_law(name):
    build, records = BUILDERS[name]
    mechanism = build(1.0)
    rng = np.random.default_rng(5)
    for record in (records[0], records[1]):
        rows = mechanism.randomize(np.repeat(np.asarray([record], dtype=float), N_SERVER,
                                             axis=0), rng)
        assert_sampled_law(mechanism.exact_law(record), rows)


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_client_reports_follow_the_servers_product_law(name):
    build, records = BUILDERS[name]
    mechanism = build(1.0)
    for seed, record in enumerate((records[0], records[-1])):
        assert_sampled_law(mechanism.exact_law(record),
                           _client_rows(mechanism, record, seed, N_CLIENT))


def test_exact_law_refuses_a_record_of_the_wrong_length():
    mechanism = mixed_record(1.0)
    for bad in ([5.0, 0, 0], [5.0, 0, 0, 0, 0], [[5.0, 0, 0, 0]]):
        with pytest.raises(ValueError, match="one value per column"):
            mechanism.exact_law(bad)


def test_exact_law_refuses_a_product_too_large_to_enumerate():
    # 4096 * 4096 grid points: more than MAX_LAW_OUTPUTS rows.
    mechanism = ColumnsMechanism([
        column_part(["x"], PiecewiseMechanism(0.5, (0.0, 1.0), grid_size=4096)),
        column_part(["y"], PiecewiseMechanism(0.5, (0.0, 1.0), grid_size=4096))])
    assert 4096**2 > MAX_LAW_OUTPUTS
    with pytest.raises(ValueError, match="'columns' mechanism has 16777216 outputs"):
        mechanism.exact_law([0.5, 0.5])


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize(("edit", "field"), [
    (lambda spec: spec.update(epsilon=2.0), "epsilon"),
    (lambda spec: spec.update(epsilon=np.nextafter(1.0, 0.0)), "epsilon"),
    (lambda spec: spec.update(n_inputs=3), "n_inputs"),
    (lambda spec: spec["params"]["parts"][1]["spec"].update(epsilon=0.5), "epsilon"),
    (lambda spec: spec["params"]["parts"][0].update(columns=[]), "columns"),
])
def test_hostile_specs_are_refused_naming_the_field(edit, field):
    spec = json.loads(mixed_record(1.0).to_json())
    edit(spec)
    with pytest.raises(ValueError, match=field):
        ColumnsMechanism.from_dict(spec)
    with pytest.raises(ValueError, match=field):
        Randomizer(spec)
