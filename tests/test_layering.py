"""The layering of DESIGN.md section 3, checked on the source (``ast``, nothing is imported).

Every import statement counts, at module level or inside a function (a lazy import is still
an arrow). Relative imports are resolved; ``from X import y`` is an arrow to the module
``X.y`` when ``y`` is a module, to ``X`` otherwise. Three checks, over every module:

* the layer rules (``RULES``): math at the bottom (``mechanisms/``, next to the numerical
  programs of ``optimize/``, neither importing the other), the selection layer above them,
  post-processing and the report containers, the sklearn layer (``_glue``, ``encoder``,
  ``estimators/``, ``model_selection``), deployment on top; ``deploy.client`` imports nothing
  of the package, and no module but the package's ``__init__`` imports the package itself
  (whose ``__init__`` imports everything);
* no import cycle between modules (Tarjan's strongly connected components; the failure
  prints one cycle of each);
* no module over ``MAX_LINES`` lines.

The checker runs on a synthetic tree too, so that it cannot pass vacuously.
"""

import ast
from pathlib import Path

import sklearn_ldp

PACKAGE_ROOT = Path(sklearn_ldp.__file__).resolve().parent
PACKAGE = "sklearn_ldp"
MAX_LINES = 1200

# The bottom: shared helpers, importing nothing above them.
BASE = ("sklearn_ldp._validation", "sklearn_ldp._logging", "sklearn_ldp._fwht",
        "sklearn_ldp._gram", "sklearn_ldp._strategy_error", "sklearn_ldp.deploy.limits")
ENCODER = ("sklearn_ldp.encoder", "sklearn_ldp._encoder_columns",
           "sklearn_ldp._encoder_heavy_hitters", "sklearn_ldp._encoder_multi_range")
SKLEARN_LAYER = ("sklearn_ldp._glue", *ENCODER, "sklearn_ldp.estimators",
                 "sklearn_ldp.model_selection", "sklearn_ldp.binning",
                 "sklearn_ldp.longitudinal")
# Deployment above the sklearn layer; the sklearn layer uses only the file formats (io), the
# budget ledger and the limits of ``deploy``.
DEPLOY_ABOVE = ("sklearn_ldp.deploy.client", "sklearn_ldp.deploy.collect",
                "sklearn_ldp.deploy.collector", "sklearn_ldp.deploy.distributed")
DEPLOY_ABOVE_LIMITS = DEPLOY_ABOVE + ("sklearn_ldp.deploy.io", "sklearn_ldp.deploy.budget")
ABOVE_MATH = ("sklearn_ldp.selection", "sklearn_ldp.postprocess", "sklearn_ldp.reports",
              *SKLEARN_LAYER, *DEPLOY_ABOVE_LIMITS)

# (the modules a rule applies to, the names they must not import). A name matches a prefix
# when it is the prefix or starts with the prefix and a dot.
RULES = [
    (BASE, ("sklearn_ldp.domain", "sklearn_ldp.workloads", "sklearn_ldp.mechanisms",
            "sklearn_ldp.optimize", *ABOVE_MATH)),
    (("sklearn_ldp.domain", "sklearn_ldp.workloads"),
     ("sklearn_ldp.mechanisms", "sklearn_ldp.optimize", *ABOVE_MATH, "sklearn")),
    (("sklearn_ldp.mechanisms",),
     ("sklearn_ldp.optimize", *ABOVE_MATH, "sklearn", "pandas")),
    (("sklearn_ldp.optimize",),
     ("sklearn_ldp.mechanisms", *ABOVE_MATH, "sklearn", "pandas")),
    (("sklearn_ldp.selection",),
     (*ABOVE_MATH[1:], "sklearn", "pandas")),
    (("sklearn_ldp.postprocess", "sklearn_ldp.reports"),
     ("sklearn_ldp.selection", *SKLEARN_LAYER, *DEPLOY_ABOVE_LIMITS, "sklearn")),
    (("sklearn_ldp._glue",), (*ENCODER, "sklearn_ldp.estimators",
                              "sklearn_ldp.model_selection", *DEPLOY_ABOVE)),
    (ENCODER, ("sklearn_ldp.estimators", "sklearn_ldp.model_selection", *DEPLOY_ABOVE)),
    # The encoder's parts are mixins of LDPEncoder, below it.
    (ENCODER[1:], ENCODER[:1]),
    (("sklearn_ldp.estimators",), ("sklearn_ldp.model_selection", *DEPLOY_ABOVE)),
    (("sklearn_ldp.deploy.client",), ("sklearn_ldp", "numpy", "scipy", "pandas", "sklearn")),
]

# ---------------------------------------------------------------------- the checker
def modules_of(root):
    """``{dotted name: path}`` of the modules under ``root`` (a package's ``__init__`` is the
    package)."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports_of(module, path, modules):
    """``(line, name)`` of every import in the module at ``path``, lazy ones included.

    Names are absolute; a package's own modules are resolved as the arrow they draw (``from
    X import y``: ``X.y`` if it is a module, else ``X``); other names are kept as written.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    anchor = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parent = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join(parent + ([node.module] if node.module else []))
            else:
                base = node.module
            names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                     for alias in node.names]
        else:
            continue
        found.extend((node.lineno, name) for name in dict.fromkeys(names))
    return found


def import_graph(root):
    """``{module: {imported module of the package: first line}}`` for the tree at ``root``."""
    modules = modules_of(root)
    package = root.name
    graph = {}
    for module, path in modules.items():
        edges = graph.setdefault(module, {})
        for line, name in imports_of(module, path, modules):
            while name not in modules and "." in name:  # ``import a.b.c``: the module part
                name = name.rpartition(".")[0]
            if name in modules and name != module and name.split(".")[0] == package:
                edges.setdefault(name, line)
    return graph


def _matches(name, prefix):
    return name == prefix or name.startswith(prefix + ".")


def layer_violations(root, rules):
    """Every import that a rule forbids, and every import of the top package."""
    modules = modules_of(root)
    package = root.name
    found = []
    for module, path in modules.items():
        for line, name in imports_of(module, path, modules):
            if name == package and module != package:
                found.append(f"{module} (line {line}) imports the package {package} itself")
                continue
            for applies_to, forbidden in rules:
                layer = next((prefix for prefix in applies_to if _matches(module, prefix)), None)
                if layer is None:
                    continue
                for prefix in forbidden:
                    # a layer's own modules may import each other (the client package)
                    if _matches(name, prefix) and not _matches(name, layer):
                        found.append(f"{module} (line {line}) imports {name}: {prefix} is "
                                     "above it")
    return sorted(set(found))


def strongly_connected(graph):
    """Tarjan's strongly connected components of ``graph`` with more than one module."""
    index, low, stack, on_stack, components = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def one_cycle(graph, component):
    """A cycle through the first module of a strongly connected ``component``, as text."""
    members, start = set(component), component[0]
    path, seen = [start], {start}

    def walk(node):
        for target in sorted(graph[node]):
            if target == start:
                return True
            if target in members and target not in seen:
                seen.add(target)
                path.append(target)
                if walk(target):
                    return True
                path.pop()
        return False

    walk(start)
    steps = [f"{a} (line {graph[a][b]})" for a, b in zip(path, path[1:] + [start], strict=True)]
    return " -> ".join(steps + [start])


def long_modules(root, limit=MAX_LINES):
    """``(module, lines)`` of the modules over ``limit`` lines."""
    return [(module, n) for module, path in modules_of(root).items()
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > limit]


# ---------------------------------------------------------------------- the package
def test_every_module_imports_only_below_it():
    violations = layer_violations(PACKAGE_ROOT, RULES)
    assert not violations, "layering violations:\n" + "\n".join(violations)


def test_no_import_cycle():
    graph = import_graph(PACKAGE_ROOT)
    cycles = [one_cycle(graph, component) for component in strongly_connected(graph)]
    assert not cycles, "import cycles:\n" + "\n".join(cycles)


def test_no_module_over_the_size_limit():
    long = long_modules(PACKAGE_ROOT)
    assert not long, f"modules over {MAX_LINES} lines: {long}"


def test_the_graph_resolves_relative_and_submodule_imports():
    graph = import_graph(PACKAGE_ROOT)
    matrix = graph["sklearn_ldp.mechanisms.central.matrix"]
    assert "sklearn_ldp.mechanisms.factorization.mechanism" in matrix  # from ..factorization
    assert "sklearn_ldp._validation" in matrix  # from ..._validation import ...
    assert "sklearn_ldp.optimize.eigen_design" in graph["sklearn_ldp.optimize"]
    # ``from .. import workloads``: the module, not the package's __init__.
    assert "sklearn_ldp.workloads" in graph["sklearn_ldp.estimators.workload"]
    assert "sklearn_ldp" not in graph["sklearn_ldp.estimators.workload"]


# ---------------------------------------------------------------------- the checker itself
def _tree(tmp_path, files):
    root = tmp_path / "pkg"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_checker_sees_a_forbidden_lazy_import(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "math/__init__.py": "",
        "math/ok.py": "from .. import base\n",
        "math/bad.py": "def f():\n    from ..top import x\n    import pandas\n",
        "base.py": "",
        "top.py": "from . import base\nx = 1\n",
        "user.py": "import pkg\n",
    })
    rules = [(("pkg.math",), ("pkg.top", "pandas"))]
    violations = layer_violations(root, rules)
    assert violations == [
        "pkg.math.bad (line 2) imports pkg.top: pkg.top is above it",
        "pkg.math.bad (line 3) imports pandas: pandas is above it",
        "pkg.user (line 1) imports the package pkg itself",
    ]


def test_the_checker_sees_a_lazy_import_cycle(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "a.py": "from .b import g\n\ndef f():\n    return g()\n",
        "b.py": "def g():\n    from .c import h\n    return h()\n",
        "c.py": "def h():\n    from . import a\n    return a\n",
        "d.py": "from . import a\n",
    })
    graph = import_graph(root)
    assert graph["pkg.c"] == {"pkg.a": 2} and graph["pkg.d"] == {"pkg.a": 1}
    components = strongly_connected(graph)
    assert components == [["pkg.a", "pkg.b", "pkg.c"]]
    assert one_cycle(graph, components[0]) == \
        "pkg.a (line 1) -> pkg.b (line 2) -> pkg.c (line 2) -> pkg.a"
    assert strongly_connected({"x": {"y": 1}, "y": {}}) == []


def test_the_checker_sees_a_long_module(tmp_path):
    root = _tree(tmp_path, {"__init__.py": "", "long.py": "x = 1\n" * 1201,
                            "short.py": "x = 1\n" * 1200})
    assert long_modules(root) == [("pkg.long", 1201)]
