"""The packaging promises of the README: its test command installs everything the tests use,
the version lives in one place, and the wheel holds every package folder.

The wheel itself is built, checked (``twine check``) and installed in a clean environment by
``.ci/run``; these checks are the fast, static part, run with the tests.
"""

import ast
import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

tomllib = pytest.importorskip("tomllib")

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
PYTHON_FENCE = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _readme_bash_block(number):
    """The ``number``-th (1-based) ```bash block of README.md, as ``.ci/run`` reads it."""
    blocks = re.findall(r"^```bash\n(.*?)^```$", (ROOT / "README.md").read_text(encoding="utf-8"),
                        re.MULTILINE | re.DOTALL)
    return blocks[number - 1]


def _top_level_imports(source):
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            yield node.module.split(".")[0]


def _installed_by(requirements, extras=()):
    """Canonical names of the distributions that installing ``requirements`` brings, through
    their own requirements (read from the installed metadata)."""
    found, todo = set(), [(Requirement(text), ()) for text in requirements]
    while todo:
        requirement, parent_extras = todo.pop()
        environment = [{"extra": extra} for extra in parent_extras] or [{"extra": ""}]
        if requirement.marker and not any(requirement.marker.evaluate(env)
                                          for env in environment):
            continue
        name = canonicalize_name(requirement.name)
        if name in found:
            continue
        found.add(name)
        try:
            requires = metadata.requires(requirement.name) or []
        except metadata.PackageNotFoundError:
            continue
        todo.extend((Requirement(text), tuple(requirement.extras)) for text in requires)
    return found


def test_the_readme_test_command_installs_every_test_import():
    command = _readme_bash_block(2)
    extras = re.search(r'pip install -e "\.\[([\w,-]+)\]"', command)
    assert extras, f"README's test block installs no extra: {command!r}"
    project = PYPROJECT["project"]
    requirements = list(project["dependencies"])
    for extra in extras[1].split(","):
        requirements += project["optional-dependencies"][extra]
    installed = _installed_by(requirements)

    sources = [path.read_text(encoding="utf-8") for path in sorted((ROOT / "tests").glob("*.py"))]
    # The docs' and README's Python blocks run in the tests too (test_doc_code_blocks.py).
    for page in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        sources += PYTHON_FENCE.findall(page.read_text(encoding="utf-8"))
    local = {path.stem for path in (ROOT / "tests").glob("*.py")} | {"sklearn_ldp"}
    distributions = metadata.packages_distributions()
    missing = {}
    for source in sources:
        for module in _top_level_imports(source):
            if module in sys.stdlib_module_names or module in local:
                continue
            names = {canonicalize_name(name) for name in distributions.get(module, [module])}
            if not names & installed:
                missing[module] = sorted(names)
    assert not missing, f"imported by the tests, not installed by {command!r}: {missing}"


def test_the_version_lives_in_sklearn_ldp_init():
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {
        "attr": "sklearn_ldp.__version__"}
    init = (ROOT / "sklearn_ldp" / "__init__.py").read_text(encoding="utf-8")
    assert re.search(r'^__version__ = "\d+\.\d+\.\d+"$', init, re.MULTILINE)
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versioning = changelog.split("## Versioning", 1)[1].split("\n## ", 1)[0]
    assert "sklearn_ldp/__init__.py" in versioning


def test_the_wheel_holds_every_package_folder():
    # setuptools' find_packages takes a folder only if it has an __init__.py; a folder without
    # one (the device client's, say) would be silently left out of the wheel.
    folders = {path.parent for path in (ROOT / "sklearn_ldp").rglob("*.py")}
    assert all((folder / "__init__.py").exists() for folder in folders), sorted(
        str(folder) for folder in folders if not (folder / "__init__.py").exists())
    # Files other than Python modules would need package data in pyproject.toml.
    data = [path for path in (ROOT / "sklearn_ldp").rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")]
    assert not data or "package-data" in PYPROJECT["tool"]["setuptools"], data
