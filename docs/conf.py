"""Sphinx configuration of the sklearn_ldp documentation site.

Build (from the repository root; the same command runs in CI, warnings are errors):

    pip install -e ".[docs]" && python -m sphinx -W --keep-going -b html docs docs/_build/html

Pages are the Markdown files of this folder (MyST), the API reference is generated from the
docstrings (autosummary + numpydoc, ``api.rst``), and the gallery from ``examples/``
(sphinx-gallery; the examples not in ``NOT_EXECUTED_EXAMPLES`` run during the build).
"""

import importlib
import inspect
import os
import re
import sys
from pathlib import Path

import matplotlib

# The gallery and autodoc import pyplot; no display exists on CI machines.
matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
# The package is normally installed (editable); this makes a plain checkout build too.
sys.path.insert(0, str(ROOT))

from threadpoolctl import threadpool_limits  # noqa: E402 - a scikit-learn dependency

import sklearn_ldp  # noqa: E402

# The examples' matrices are small and CI runs on a shared 2-core machine: one BLAS thread
# avoids oversubscription (examples/quickstart.py under load: 38 s with OpenBLAS's default
# threads, 15 s with one). Set after importing the package, so that numpy's and scipy's BLAS
# are loaded; an explicit thread count in the environment is left alone.
if not any(name in os.environ for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                                           "MKL_NUM_THREADS")):
    threadpool_limits(limits=1)

# -- Project -------------------------------------------------------------------------------

project = "sklearn_ldp"
author = "the sklearn_ldp developers"
copyright = "the sklearn_ldp developers, BSD-3-Clause"
release = sklearn_ldp.__version__
version = ".".join(release.split(".")[:2])

root_doc = "index"
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    # sphinx-gallery writes the executed scripts and notebooks next to their pages; only the
    # .rst pages are documents.
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.md5",
    "auto_examples/*.json",
    "auto_examples/*.zip",
]

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

# Intersphinx needs the network (it downloads the other projects' inventories), and an
# unreachable inventory is a warning, so -W would fail offline. Opt in with
# SKLEARN_LDP_DOCS_INTERSPHINX=1 on a machine with network access.
if os.environ.get("SKLEARN_LDP_DOCS_INTERSPHINX") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "pandas": ("https://pandas.pydata.org/docs", None),
        "sklearn": ("https://scikit-learn.org/stable", None),
    }

# -- Markdown pages (MyST) -----------------------------------------------------------------

# Anchors for the pages' headings, so that [text](page.md#a-heading) links resolve.
myst_heading_anchors = 3

# -- API reference (autosummary, autodoc, numpydoc) ----------------------------------------

autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"  # the numpydoc "Parameters" sections already give the types

# The class template (_templates/autosummary/class.rst) lists the members itself.
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
# Off on purpose: the docstrings are being brought to the numpydoc standard separately, and
# validation warnings would fail the -W build until then.
numpydoc_validation_checks = set()

# -- Gallery (sphinx-gallery) --------------------------------------------------------------

# Every example is shown with its code; those executed during the build also with their
# output and figures.
# Measured on the loaded 2-core machine with one BLAS thread (seconds): marginals 60,
# deployment 16, plot_sample_complexity 8, quickstart 7, range_queries 4, frequency_oracles
# 3, central_strategies 3, count_mechanism 2, large_domains 2, the others under 1; the rest
# of the build takes about 100 s. Only examples/marginals.py does not run: it is the slowest
# by far, and docs/marginals.md shows its figure. The build takes about 2.5 minutes.
# SKLEARN_LDP_DOCS_ALL_EXAMPLES=1 executes every example (a complete gallery, for a release).
NOT_EXECUTED_EXAMPLES = ["marginals"]

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": (r"\.py$" if os.environ.get("SKLEARN_LDP_DOCS_ALL_EXAMPLES") == "1"
                         else re.escape(os.sep) + "(?!(" + "|".join(NOT_EXECUTED_EXAMPLES)
                         + r")\.py$)[^" + re.escape(os.sep) + r"]+\.py$"),
    # A failing example must fail the build, not leave a page with a traceback.
    "abort_on_example_error": True,
    # The examples run in two processes (joblib), one per core of a CI machine, each whole
    # and independent of the others (joblib gives each process one BLAS thread, as the limit
    # above does); one that starts processes of its own (Dask) opts out with the comment
    # "# sphinx_gallery_parallel = False" and runs alone.
    "parallel": 2,
    "within_subsection_order": "FileNameSortKey",
    # The example pages and the API pages link to each other ("Examples using ...").
    "doc_module": ("sklearn_ldp",),
    "backreferences_dir": "generated/backreferences",
    "download_all_examples": False,
    # Keep the build reproducible (no per-machine timing tables in the sources).
    "write_computation_times": False,
}

# -- HTML ----------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"sklearn_ldp {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}


# -- A check: every public object is in the API reference ----------------------------------

from sklearn_ldp._public_api import API_MODULES, SKLEARN_GENERATED  # noqa: E402
from sklearn_ldp._public_api import public_objects as _public_objects  # noqa: E402


def _documented_names(api_text):
    """Names in api.rst's autosummary tables and auto* directives, fully qualified."""
    names, module = set(), None
    in_autosummary = False
    for line in api_text.splitlines():
        stripped = line.strip()
        current = re.match(r"\.\.\s+(?:currentmodule|module)::\s+(\S+)", stripped)
        if current:
            module = current.group(1)
            in_autosummary = False
            continue
        directive = re.match(r"\.\.\s+auto(?:data|function|class|exception)::\s+(\S+)",
                             stripped)
        if directive:
            names.add(directive.group(1) if directive.group(1).startswith("sklearn_ldp")
                      else f"{module}.{directive.group(1)}")
            continue
        if stripped.startswith(".. autosummary::"):
            in_autosummary = True
            continue
        if in_autosummary and stripped and not stripped.startswith(":"):
            if not line.startswith((" ", "\t")):
                in_autosummary = False
            else:
                names.add(f"{module}.{stripped}")
    return names


def _check_api_coverage(app):
    """Warn (an error under -W) about public objects the API reference does not list.

    An object counts as listed if api.rst names it under any of its public paths (e.g.
    ``sklearn_ldp.PrivacyLedger`` covers ``sklearn_ldp.deploy.budget.PrivacyLedger``); constants
    are matched by name, since equal numbers are not the same documentation.
    """
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    documented = _documented_names((HERE / "api.rst").read_text(encoding="utf-8"))
    documented_ids = set()
    for name in documented:
        module_name, _, attribute = name.rpartition(".")
        try:
            documented_ids.add(id(getattr(importlib.import_module(module_name), attribute)))
        except (ImportError, AttributeError):
            logger.warning("api.rst lists %s, which does not exist", name)
    for module_name in API_MODULES:
        for name, value in _public_objects(module_name):
            is_code = inspect.isclass(value) or callable(value)
            if name not in documented and not (is_code and id(value) in documented_ids):
                logger.warning("public object %s is missing from docs/api.rst", name)


# -- Docstring handling --------------------------------------------------------------------

# scikit-learn's generated ``set_<method>_request`` methods link into scikit-learn's own
# glossary, which does not exist here.
_SKLEARN_GENERATED = SKLEARN_GENERATED


def _defining_module(member):
    """The module that defines a class member (a function, method, property or built-in
    descriptor), or None for anything else (data attributes: their ``__module__`` is their
    type's)."""
    if isinstance(member, property):
        member = member.fget
    if isinstance(member, (classmethod, staticmethod)):
        member = member.__func__
    owner = getattr(member, "__objclass__", None)  # tuple.count, BaseException.args
    if owner is not None:
        return owner.__module__
    if inspect.isfunction(member) or inspect.ismethod(member):
        return member.__module__
    return None


def _skip_sklearn_generated(app, what, name, obj, skip, options):
    """Skip the class members this package does not define.

    The class pages (``_templates/autosummary/class.rst``) list inherited members, since users
    call ``randomize`` or ``estimate`` on the public class whatever base defines them, but only
    those of the package's own bases (``_public_api.public_members`` says the same):
    scikit-learn's (``get_params``, ``set_output``, metadata routing, and the generated
    ``set_<method>_request``, which link into scikit-learn's glossary) and Python's
    (``tuple.count``, ``BaseException.args``) are documented by their projects.
    """
    if _SKLEARN_GENERATED.fullmatch(name):
        return True
    if what in ("class", "exception"):
        module = _defining_module(obj)
        if module is not None and not module.startswith("sklearn_ldp"):
            return True
    return None


# In a numpydoc type such as ``ndarray of shape (n_rounds_, n_cells)``, a fitted attribute's
# name ends with "_", which reStructuredText reads as a link to a target of that name.
# Escaping the final "_" keeps the text as written.
_SHAPE = re.compile(r"shape \(([^)]*)\)")
_TRAILING_UNDERSCORE = re.compile(r"\b([A-Za-z]\w*[A-Za-z0-9])_(?=[\s,)]|$)")


# Only definition lines ("name : type"), so that prose and literals are left alone.
_DEFINITION = re.compile(r"^\s*\w+\s+:\s")


def _escape_shape_names(app, what, name, obj, options, lines):
    for i, line in enumerate(lines):
        if _DEFINITION.match(line):
            lines[i] = _SHAPE.sub(
                lambda shape: "shape (" + _TRAILING_UNDERSCORE.sub(r"\1\\_", shape.group(1))
                + ")", line)


def setup(app):
    app.connect("builder-inited", _check_api_coverage)
    app.connect("autodoc-skip-member", _skip_sklearn_generated)
    # Priority below numpydoc's (500): the escape happens before numpydoc parses the text.
    app.connect("autodoc-process-docstring", _escape_shape_names, priority=400)
