"""Rebuilding a workload from its JSON-able spec (:meth:`Workload.to_spec`), for files."""

import scipy.sparse

from ..deploy.limits import check_size
from ..domain import as_domain
from .algebra import Kron, Stack
from .base import Workload
from .fourier import Parity
from .intervals import AllRange, Identity, Intervals, Prefix, Total
from .subsets import _column_domain

# Structured kinds rebuilt from a spec; sizes are capped (the configurable max_cells of
# sklearn_ldp.deploy.limits) so that a tampered file cannot ask for an unbounded allocation (the
# matrix kinds carry their arrays, already in memory).


def _spec_size(spec, key="n"):
    value = spec.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"workload spec: {key!r} must be a positive integer, got {value!r}.")
    check_size(value, f"workload spec {key!r}", "max_cells")
    return value


def _sub_arrays(arrays, index):
    prefix = f"{index}."
    return {key[len(prefix):]: value for key, value in arrays.items() if key.startswith(prefix)}


def _from_spec(spec, arrays, domain):
    if not isinstance(spec, dict):
        raise ValueError(f"workload spec must be a JSON object, got {type(spec).__name__}.")
    kind = spec.get("kind")
    name = spec.get("name", kind)
    if not isinstance(name, str):
        raise ValueError(f"workload spec: name must be a string, got {name!r}.")
    simple = {"histogram": Identity, "total": Total, "prefix": Prefix, "all_range": AllRange}
    if kind in simple:
        return simple[kind](_spec_size(spec), domain=domain, name=name)
    if kind == "ranges":
        return Intervals(_spec_size(spec), arrays["lo"], arrays["hi"], domain=domain, name=name)
    if kind == "parity":
        n = _spec_size(spec)
        try:  # Parity validates the names and masks (one copy of the rules)
            return Parity(n, arrays["masks"], spec.get("bit_names"), domain=domain,
                          name=name)
        except ValueError as exc:
            raise ValueError(f"workload spec: {exc}") from None
    if kind in ("kron", "stack"):
        key = "factors" if kind == "kron" else "blocks"
        children = spec.get(key)
        if not isinstance(children, list) or not children:
            raise ValueError(f"workload spec: {kind} needs a non-empty list {key!r}.")
        if kind == "stack":
            child_domains = [domain] * len(children)
        elif domain is not None and domain.n_columns == len(children):
            # Marginal-type products: factor i ranges over column i (its labels name it).
            child_domains = [_column_domain(domain, c) for c in domain.columns]
        else:
            child_domains = [None] * len(children)
        parts = [_from_spec(child, _sub_arrays(arrays, i), child_domain)
                 for i, (child, child_domain) in enumerate(zip(children, child_domains,
                                                               strict=True))]
        if kind == "kron":
            return Kron(parts, domain=domain, name=name)
        return Stack(parts, weights=spec.get("weights"), domain=domain, name=name)
    if kind == "matrix":
        return Workload(arrays["matrix"], domain=domain, name=name)
    if kind == "sparse":
        shape = spec.get("shape")
        if not (isinstance(shape, list) and len(shape) == 2):
            raise ValueError("workload spec: sparse needs a shape [p, n].")
        matrix = scipy.sparse.csr_array(
            (arrays["data"], arrays["indices"], arrays["indptr"]),
            shape=(_spec_size({"p": shape[0]}, "p"), _spec_size({"n": shape[1]})))
        matrix.check_format(full_check=True)
        return Workload(matrix, domain=domain, name=name)
    raise ValueError(f"workload spec: unknown kind {kind!r}.")


def workload_from_spec(spec, arrays=None, domain=None):
    """Rebuild a workload from :meth:`Workload.to_spec` output (``spec``, ``arrays``).

    Examples
    --------
    >>> from sklearn_ldp.workloads import histogram, prefix, stack
    >>> spec, arrays = stack([histogram(4), prefix(4)]).to_spec()
    >>> workload_from_spec(spec, arrays).n_queries
    8
    """
    arrays = {} if arrays is None else dict(arrays)
    labels = arrays.pop("labels", None)
    try:
        workload = _from_spec(spec, arrays, None if domain is None else as_domain(domain))
    except KeyError as exc:
        raise ValueError(f"workload spec: the array {exc} is missing.") from None
    if labels is not None:
        workload._labels = workload._checked_labels(labels)
    return workload
