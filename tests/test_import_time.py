"""``import sklearn_ldp`` is cheap: the package loads its public names on first use.

Checked on what the import loads (``sys.modules`` in a fresh interpreter), which holds on a
loaded machine, where a wall time would not.
"""

import json
import subprocess
import sys

import pytest

import sklearn_ldp

HEAVY = ("sklearn", "scipy", "pandas", "pyarrow", "dask", "distributed", "matplotlib", "cvxpy")


def _loaded_after(code):
    """The top-level names in ``sys.modules`` after running ``code`` in a fresh interpreter."""
    script = (f"{code}\nimport json, sys\n"
              "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_loads_no_heavy_dependency():
    loaded = _loaded_after("import sklearn_ldp")
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_one_estimator_does_not_load_the_optional_dependencies():
    loaded = _loaded_after("from sklearn_ldp import LDPEncoder, WorkloadEstimator")
    assert not loaded & {"dask", "distributed", "matplotlib", "cvxpy"}


@pytest.mark.parametrize("name", sklearn_ldp.__all__)
def test_every_public_name_resolves(name):
    value = getattr(sklearn_ldp, name)
    assert value is getattr(sklearn_ldp, name)
    namespace = {}
    exec(f"from sklearn_ldp import {name}", namespace)
    assert namespace[name] is value


def test_dir_lists_every_public_name_before_use():
    script = ("import json, sklearn_ldp\n"
              "print(json.dumps([dir(sklearn_ldp), sklearn_ldp.__all__]))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True)
    names, public = json.loads(out.stdout)
    assert set(public) <= set(names)
    assert public == sorted(public)
    assert "__version__" in names


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'LDPEncodr'") as error:
        sklearn_ldp.LDPEncodr  # noqa: B018
    assert error.value.name == "LDPEncodr"


def test_the_public_modules_are_the_documented_ones():
    assert sklearn_ldp.io.__name__ == "sklearn_ldp.deploy.io"
    assert sklearn_ldp.budget.__name__ == "sklearn_ldp.deploy.budget"
    assert sklearn_ldp.workloads.__name__ == "sklearn_ldp.workloads"
    assert callable(sklearn_ldp.limits)
