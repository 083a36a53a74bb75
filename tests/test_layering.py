"""The layering of DESIGN.md section 3, checked on the source (``ast``, nothing is imported).

* ``sklearn_ldp/mechanisms/`` is pure math: it imports neither the optimizers
  (``sklearn_ldp.optimize``), nor the selection layer (``sklearn_ldp.selection``), nor
  scikit-learn, pandas, the encoder or the estimators;
* ``sklearn_ldp/optimize/`` holds numerical programs only: no mechanism, no scikit-learn;
* the selection layer (``sklearn_ldp/selection/``) and the glue shared by the encoder and the
  estimators (``sklearn_ldp/_glue.py``) sit below the encoder and the estimators.

Every import statement counts, at module level or inside a function, except those of a
module-level ``__getattr__``: that is where a module keeps the names that moved out of it
importable from their old place, lazily and with a DeprecationWarning (e.g. the names
``sklearn_ldp.mechanisms`` re-exports from ``sklearn_ldp.selection``); nothing is imported
until such a name is used. Relative imports are resolved to absolute module names.
"""

import ast
from pathlib import Path

import pytest

import sklearn_ldp

PACKAGE_ROOT = Path(sklearn_ldp.__file__).resolve().parent
PACKAGE = "sklearn_ldp"

FORBIDDEN = {
    "mechanisms": (
        "sklearn_ldp.optimize",
        "sklearn_ldp.selection",
        "sklearn_ldp.encoder",
        "sklearn_ldp.estimators",
        "sklearn",
        "pandas",
    ),
    "optimize": (
        "sklearn_ldp.mechanisms",
        "sklearn_ldp.selection",
        "sklearn_ldp.encoder",
        "sklearn_ldp.estimators",
        "sklearn",
    ),
    # Below the encoder and the estimators too.
    "selection": (
        "sklearn_ldp.encoder",
        "sklearn_ldp.estimators",
        "sklearn",
    ),
    "_glue.py": (
        "sklearn_ldp.encoder",
        "sklearn_ldp.estimators",
    ),
}


def _module_name(path, root=None):
    """Dotted name of the module at ``path`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(root or PACKAGE_ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def _resolve(module, is_package, node):
    """Absolute names an ``Import``/``ImportFrom`` node imports, relative ones resolved.

    ``from X import a`` yields ``X`` and ``X.a`` (``a`` may be a submodule, as in
    ``from .. import selection``).
    """
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([node.module] if node.module else []))
    else:
        base = node.module
    return [base] + [f"{base}.{alias.name}" for alias in node.names if alias.name != "*"]


def _deprecation_shim_nodes(tree):
    """Nodes inside the module-level ``__getattr__`` (a deprecation shim), if any."""
    return {id(inner) for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
            for inner in ast.walk(node)}


def imports_of(path, root=None):
    """``(line, absolute name)`` of every import in the file at ``path`` (shims excluded)."""
    module = _module_name(path, root)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    shim = _deprecation_shim_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in shim:
            names = _resolve(module, path.name == "__init__.py", node)
            found.extend((node.lineno, name) for name in names)
    return found


def _matches(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def _layer_files(layer):
    """The modules of a layer: a package's files, or one module."""
    path = PACKAGE_ROOT / layer
    files = [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    assert files and files[0].exists(), f"no module found at sklearn_ldp/{layer}"
    return files


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_nothing_above_it(layer):
    offending = {}  # (module, line, forbidden prefix) -> the shortest name imported
    for path in _layer_files(layer):
        for line, name in imports_of(path):
            for prefix in FORBIDDEN[layer]:
                if _matches(name, prefix):
                    key = (_module_name(path), line, prefix)
                    offending[key] = min(offending.get(key, name), name, key=len)
    violations = [f"{module} (line {line}) imports {name}: {layer} must not import {prefix}"
                  for (module, line, prefix), name in sorted(offending.items())]
    assert not violations, "layering violations:\n" + "\n".join(violations)


def test_relative_imports_are_resolved():
    path = PACKAGE_ROOT / "mechanisms" / "central" / "matrix.py"
    names = {name for _, name in imports_of(path)}
    assert "sklearn_ldp.mechanisms.factorization.mechanism" in names  # from ..factorization...
    assert "sklearn_ldp._validation" in names  # from ..._validation import ...
    init = PACKAGE_ROOT / "optimize" / "__init__.py"
    assert "sklearn_ldp.optimize.eigen_design" in {name for _, name in imports_of(init)}


def test_the_checker_sees_a_forbidden_import(tmp_path):
    """Imports inside functions count; only a module-level ``__getattr__`` shim is exempt."""
    root = tmp_path / "sklearn_ldp"
    (root / "mechanisms").mkdir(parents=True)
    (root / "mechanisms" / "__init__.py").write_text(
        "from .base import x\n\n\ndef __getattr__(name):\n"
        "    from ..selection import build_mechanism\n")
    (root / "mechanisms" / "bad.py").write_text(
        "def f():\n    from ..optimize.hull import project_onto_hull\n    import pandas\n")
    bad = imports_of(root / "mechanisms" / "bad.py", root)
    assert (2, "sklearn_ldp.optimize.hull") in bad and (3, "pandas") in bad
    shim = imports_of(root / "mechanisms" / "__init__.py", root)
    assert shim == [(1, "sklearn_ldp.mechanisms.base"), (1, "sklearn_ldp.mechanisms.base.x")]


def test_deprecated_names_still_work_from_mechanisms():
    import sklearn_ldp.mechanisms as mechanisms
    from sklearn_ldp import selection
    from sklearn_ldp.optimize import hull

    for name, home in [("build_mechanism", selection), ("baseline_mechanism", selection),
                       ("BASELINES", selection), ("STRATEGIES", selection),
                       ("build_central_mechanism", selection), ("central_strategy", selection),
                       ("CENTRAL_STRATEGIES", selection), ("project_onto_hull", hull)]:
        with pytest.warns(DeprecationWarning, match=home.__name__):
            assert getattr(mechanisms, name) is getattr(home, name)
    with pytest.raises(AttributeError):
        mechanisms.no_such_name  # noqa: B018


def test_deprecated_names_still_work_from_their_old_modules():
    from sklearn_ldp import encoder, optimize, selection
    from sklearn_ldp.estimators import _base
    from sklearn_ldp.mechanisms.bassily import gaussian
    from sklearn_ldp.mechanisms.bassily import rejection as gaussian_rejection
    from sklearn_ldp.optimize import count_lp, hull
    from sklearn_ldp.selection import count

    cases = [(gaussian, "GaussianRejectionMechanism", gaussian_rejection),
             (gaussian, "project_onto_hull", hull),
             (count_lp, "CountLPResult", count),
             (count_lp, "solve_count_lp", count),
             (optimize, "design_count_mechanism", selection),
             (encoder, "reports_or_privatized", _base)]
    for old, name, home in cases:
        with pytest.warns(DeprecationWarning, match=home.__name__):
            assert getattr(old, name) is getattr(home, name)
        with pytest.raises(AttributeError):
            old.no_such_name  # noqa: B018
