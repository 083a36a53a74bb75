"""The header check of the specifications whose kinds keep their own version number."""


def check_spec_header(spec, kind, version, name=None):
    """Raise a ValueError unless ``spec`` is a dict of mechanism ``kind`` at ``version``.

    Parameters
    ----------
    spec : object
        The specification read (anything: it comes from a file or another party).
    kind : str
        The expected ``"mechanism"`` field.
    version : int
        The expected ``"version"`` field.
    name : str, optional
        The kind as the version error names it (default: ``repr(kind)``).

    Examples
    --------
    >>> check_spec_header({"mechanism": "columns", "version": 1}, "columns", 1)
    >>> check_spec_header({"mechanism": "columns", "version": 2}, "columns", 1)
    Traceback (most recent call last):
    ...
    ValueError: unsupported 'columns' specification version 2; this sklearn_ldp reads 1.
    """
    if not isinstance(spec, dict) or spec.get("mechanism") != kind:
        raise ValueError(f"not a {kind!r} specification: {str(spec)[:80]!r}.")
    if spec.get("version") != version:
        raise ValueError(f"unsupported {name or repr(kind)} specification version "
                         f"{spec.get('version')!r}; this sklearn_ldp reads {version}.")


def check_version_one_fields(spec, kind, fields):
    """Raise a ValueError unless ``spec`` is a version-1 dict of ``kind`` with ``fields``.

    Parameters
    ----------
    spec : object
        The specification read.
    kind : str
        The expected ``"mechanism"`` field.
    fields : set of str
        The fields the specification must have (others are allowed).

    Examples
    --------
    >>> check_version_one_fields([], "cms", {"epsilon"})
    Traceback (most recent call last):
    ...
    ValueError: not a version-1 'cms' specification with fields ['epsilon']: '[]'.
    """
    if not isinstance(spec, dict) or spec.get("mechanism") != kind \
            or spec.get("version") != 1 or not fields <= set(spec):
        raise ValueError(f"not a version-1 {kind!r} specification with fields "
                         f"{sorted(fields)}: {str(spec)[:80]!r}.")


class SpecEquality:
    """Mixin: equal when of the same type with the same :meth:`to_dict`, hashed by it.

    For the classes that describe themselves by a specification (``to_dict``) and are not
    :class:`~sklearn_ldp.mechanisms.Mechanism` subclasses.
    """

    def __eq__(self, other):
        return type(other) is type(self) and other.to_dict() == self.to_dict()

    def __hash__(self):
        return hash(repr(self.to_dict()))


class FieldSpec(SpecEquality):
    """Mixin: the version-1 specification of the constructor's arguments ``spec_fields`` (in
    order, each an attribute of the same name), and the repr that names them."""

    spec_fields = ()

    def to_dict(self):
        """A JSON-ready specification (rebuilt by :meth:`from_dict`)."""
        return {"version": 1, "mechanism": self.kind,
                **{name: getattr(self, name) for name in self.spec_fields}}

    @classmethod
    def from_dict(cls, spec):
        """Rebuild from :meth:`to_dict`'s specification; a ValueError names a bad field."""
        check_version_one_fields(spec, cls.kind, set(cls.spec_fields))
        return cls(*(spec[name] for name in cls.spec_fields))

    def __repr__(self):
        arguments = ", ".join(f"{name}={getattr(self, name)}" for name in self.spec_fields)
        return f"{type(self).__name__}({arguments})"
