"""The public API surface: which modules, objects and methods users are promised.

Used by the documentation build (``docs/conf.py`` checks that ``docs/api.rst`` lists every
public object) and by ``tests/test_docstrings.py`` (numpydoc validation of each of them), so
that both agree on what "public" means.
"""

import importlib
import inspect
import re

# The modules whose public names (``__all__``, or the public functions and classes defined
# there when there is no ``__all__``) are the package's API.
API_MODULES = (
    "sklearn_ldp",
    "sklearn_ldp.workloads",
    "sklearn_ldp.mechanisms",
    "sklearn_ldp.deploy.io",
    "sklearn_ldp.deploy.distributed",
    "sklearn_ldp.deploy.collector",
    "sklearn_ldp.deploy.budget",
    "sklearn_ldp.binning",
    "sklearn_ldp.deploy.client",
    "sklearn_ldp.postprocess",
    "sklearn_ldp.longitudinal",
)

# scikit-learn gives every estimator generated ``set_<method>_request`` methods (metadata
# routing); they are scikit-learn's API, documented there.
SKLEARN_GENERATED = re.compile(r"set_\w+_request")


def public_objects(module_name):
    """``(qualified name, object)`` for the public names of a module (submodules excluded)."""
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [name for name, value in vars(module).items()
                 if not name.startswith("_") and (inspect.isfunction(value)
                                                  or inspect.isclass(value))
                 and value.__module__ == module_name]
    return [(f"{module_name}.{name}", getattr(module, name)) for name in names
            if not inspect.ismodule(getattr(module, name))]


def public_members(cls):
    """Names of the public methods and properties of ``cls`` defined by this package.

    Members that ``cls`` inherits from the package's own (possibly private) base classes
    count: users call them on ``cls``. Members of other libraries' classes (scikit-learn's
    ``get_params``, the generated metadata-routing ``set_<method>_request``) are those
    libraries' API, documented there.
    """
    members = []
    for owner in cls.__mro__:
        if not owner.__module__.startswith("sklearn_ldp"):
            continue
        for name, member in vars(owner).items():
            if name.startswith("_") or SKLEARN_GENERATED.fullmatch(name) or name in members:
                continue
            if isinstance(member, (staticmethod, classmethod)):
                member = member.__func__
            if inspect.isfunction(member) or isinstance(member, property):
                members.append(name)
    return members
