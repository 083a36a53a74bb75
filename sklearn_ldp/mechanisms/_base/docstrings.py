"""Docstring sections that a family of classes shares, written once.

A class docstring names a shared section by a line of its own, ``<name>`` or
``<name: argument>``; the decorator that :func:`shared_sections` returns writes the section in
at that line's indentation, so that ``help()``, numpydoc and the documentation all read the
whole text. A section is a string, or a function of the argument that returns one.
"""

import re
import textwrap

_MARKER = re.compile(r"^( *)<([a-z][\w ,-]*?)(?:: ([^>]*))?>$", re.MULTILINE)


def shared_sections(sections):
    """Class decorator that writes ``sections`` (name -> text or function) into docstrings.

    Examples
    --------
    >>> with_budget = shared_sections({"budget": "epsilon : float"})
    >>> @with_budget
    ... class Example:
    ...     '''Parameters
    ...     <budget>
    ...     '''
    >>> Example.__doc__.splitlines()[1].strip()
    'epsilon : float'
    """

    def section(match):
        indent, name, argument = match.groups()
        if name not in sections:
            return match.group(0)
        text = sections[name]
        return textwrap.indent(text(argument) if callable(text) else text, indent)

    def decorate(cls):
        cls.__doc__ = _MARKER.sub(section, cls.__doc__)
        return cls

    return decorate


# The parameter and the return type of a ``from_dict`` that reads its own ``to_dict``: a line
# ``<from dict: ReturnType>`` of the method's docstring, the return's description below it.
from_dict_docstring = shared_sections({"from dict": lambda returns: f"""\
Parameters
----------
spec : dict
    A specification written by :meth:`to_dict`.

Returns
-------
{returns}"""})
