"""Every public class, function and method passes numpydoc validation.

"Public" is :mod:`sklearn_ldp._public_api` (the same list the documentation build checks
against ``docs/api.rst``). Codes left out, and why:

* layout and style: GL01/GL02/GL03 (blank lines around the text), SS05 (summary verb in the
  infinitive), SS06 (one-line summary), ES01 (extended summary), RT02 (a named return value),
  SA04 (a description for every See Also entry);
* for methods and properties, EX01 (Examples) and SA01 (See Also): they are documented on
  their class's page, whose Examples and See Also cover them, as in scikit-learn.

Mechanisms, the encoder and the estimators also cite the paper behind them in a References section.
"""

import inspect

import pytest
from numpydoc.docscrape import get_doc_object
from numpydoc.validate import validate

from sklearn_ldp import LDPEncoder
from sklearn_ldp._public_api import API_MODULES, public_members, public_objects
from sklearn_ldp.mechanisms import Mechanism

IGNORED = {"GL01", "GL02", "GL03", "SS05", "SS06", "ES01", "RT02", "SA04"}
IGNORED_FOR_MEMBERS = IGNORED | {"EX01", "SA01"}


def _documented_path(cls, name):
    """The import path of the docstring users see for ``cls.name`` (the nearest with one)."""
    for owner in cls.__mro__:
        member = vars(owner).get(name)
        if member is None:
            continue
        if isinstance(member, (staticmethod, classmethod)):
            member = member.__func__
        function = member.fget if isinstance(member, property) else member
        if getattr(function, "__doc__", None):
            return f"{owner.__module__}.{owner.__qualname__}.{name}"
    return f"{cls.__module__}.{cls.__qualname__}.{name}"


def _collect():
    objects, members, seen = [], set(), set()
    for module_name in API_MODULES:
        for _qualified, value in public_objects(module_name):
            if not (inspect.isclass(value) or inspect.isfunction(value)):
                continue  # constants are documented in docs/api.rst
            if id(value) in seen:
                continue
            seen.add(id(value))
            objects.append(f"{value.__module__}.{value.__qualname__}")
            if inspect.isclass(value):
                members.update(_documented_path(value, name) for name in public_members(value))
    return objects, sorted(members)


OBJECTS, MEMBERS = _collect()


def _errors(path, ignored):
    return [f"{code}: {message}" for code, message in validate(path)["errors"]
            if code not in ignored]


@pytest.mark.parametrize("path", OBJECTS)
def test_public_object_docstring(path):
    assert _errors(path, IGNORED) == []


@pytest.mark.parametrize("path", MEMBERS)
def test_public_member_docstring(path):
    assert _errors(path, IGNORED_FOR_MEMBERS) == []


def _cites_a_paper(path):
    module_name, _, name = path.rpartition(".")
    obj = getattr(__import__(module_name, fromlist=[name]), name)
    cites = inspect.isclass(obj) and (issubclass(obj, Mechanism) or obj is LDPEncoder
                                      or obj.__module__.startswith("sklearn_ldp.estimators"))
    return cites, obj


@pytest.mark.parametrize("path", [path for path in OBJECTS if _cites_a_paper(path)[0]])
def test_mechanisms_and_estimators_cite_their_paper(path):
    obj = _cites_a_paper(path)[1]
    assert get_doc_object(obj)["References"], f"{path} has no References section"
