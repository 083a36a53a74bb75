""":class:`Randomizer`: the public client, built from a specification, privatizes one record.
"""

import json
import random
import warnings
from collections.abc import Mapping

from ._spec import _spec_version, _ValueKind
from .memo import _StateFile
from .records import _Categories
from .registry import RANDOMIZERS

# Emitted when a seed is given: whoever knows the seed can recompute the noise.
SEEDED_WARNING = ("Randomizer(seed=...) makes the noise reproducible: deployed noise must not "
                  "be seeded, since whoever knows the seed can undo the randomization. Use a "
                  "seed for tests and simulation only; on devices pass no seed (operating-"
                  "system entropy).")


class Randomizer:
    """The randomizer of one LDP mechanism, rebuilt from its JSON specification.

    Parameters
    ----------
    spec : dict
        What the server's ``mechanism.to_dict()`` returns (``from_json`` parses the text).
    categories : mapping column -> list, optional
        The public categories of the server's domain, in its order. With them
        :meth:`privatize` takes records (a dict column -> value or a list of values) and
        encodes them like ``Domain.encode``; without, it takes flat cell indices. For
        ``multi_attribute`` one list per attribute; for ``"columns"`` the categorical
        columns' lists (a categorical column without them takes integer codes).
    seed : int, optional
        **Tests and simulation only.** ``None`` (default) draws from the operating system's
        entropy (``random.SystemRandom``); a seed makes the reports reproducible, and
        therefore reversible by anyone who knows it, so it emits a UserWarning (filter it
        where a test or a simulation seeds on purpose).
    state : str or os.PathLike, optional
        The client state file of the memoizing kinds (``longitudinal``, ``dbitflip_pm``,
        ``1bitmean_pm``),
        required by them and refused by the others: created on first use, rewritten
        atomically, bound to the specification and sealed by a SHA-256 (see
        ``docs/client.md``). One file per client and specification.

    Attributes
    ----------
    kind : str
        The mechanism kind (e.g. ``"oue"``).
    epsilon : float or None
        The privacy parameter of the specification (None if it has none).
    n_inputs : int or None
        Number of domain cells; for the value kinds the number of values in a record (1 for
        one number, the attributes or columns of a record), None for heavy hitters (bit
        strings).
    columns : list of str or None
        The record columns when ``categories`` was given.

    See Also
    --------
    sklearn_ldp.LDPEncoder.client_spec : The specification the server ships to clients.
    sklearn_ldp.reports_from_client : Stacks the clients' reports on the server.
    sklearn_ldp.mechanism_from_json : The server-side mechanism of the same specification.

    Notes
    -----
    Values of the kinds that do not take cell indices: ``duchi``, ``piecewise``, ``hybrid``,
    ``square_wave`` one number within the spec's bounds (refused outside, never clipped);
    ``sampled_mean`` a list of ``d`` numbers; ``multi_attribute`` a list of category codes
    (or a record, with ``categories``); ``"columns"`` a dict column -> value;
    ``prefix_heavy_hitters`` an integer below ``2^bit_length`` or a UTF-8 string of at most
    ``bit_length / 8`` bytes; ``sketch`` a pair ``[value, bit_length]`` (the bit length the
    server encodes candidates with); ``longitudinal``, ``dbitflip_pm`` a cell index;
    ``1bitmean_pm`` a counter in ``[0, max_value]``.

    Examples
    --------
    >>> spec = '{"version": 1, "mechanism": "randomized_response", "epsilon": 1.0, '
    >>> spec += '"n_inputs": 6, "params": {}}'
    >>> client = Randomizer.from_json(spec, categories={"age": ["<30", "30-50", ">50"],
    ...                                                 "smoker": ["no", "yes"]})
    >>> client.encode({"age": "30-50", "smoker": "yes"})
    3
    >>> report = client.privatize({"age": "30-50", "smoker": "yes"})
    >>> 0 <= report < 6
    True
    """

    def __init__(self, spec, categories=None, seed=None, state=None):
        if not isinstance(spec, Mapping) or "mechanism" not in spec:
            raise ValueError(f"not a mechanism specification (a JSON object with 'version' and "
                             f"'mechanism'): {str(spec)[:80]!r}.")
        kind = spec["mechanism"]
        expected = _spec_version(kind)
        if spec.get("version") != expected:
            raise ValueError(f"unsupported specification version {spec.get('version')!r}; this "
                             f"client reads version {expected} of {kind!r}.")
        if kind not in RANDOMIZERS:
            raise ValueError(f"unknown mechanism {kind!r}; this client randomizes "
                             f"{sorted(RANDOMIZERS)} (central-model mechanisms run on the "
                             "curator, not on clients).")
        self.kind = kind
        built = RANDOMIZERS[kind](dict(spec))
        self.epsilon = float(spec["epsilon"]) if "epsilon" in spec else None
        self._values, self._state = None, None
        if isinstance(built, _ValueKind):
            self._values, self._privatize_cell = built, None
            self.n_inputs = built.n_inputs
            if built.stateful:
                if state is None:
                    raise ValueError(f"the {kind!r} mechanism memoizes permanent responses: "
                                     "pass state=<path of this client's state file>.")
                self._state = _StateFile(state, spec, built.check_state)
        else:
            self.n_inputs, self._privatize_cell = built
        if state is not None and self._state is None:
            raise ValueError(f"state={state!r}: the {kind!r} mechanism keeps no client state.")
        self._categories = None
        if self._values is not None:
            if categories is not None:
                if built.bind is None:
                    raise ValueError(f"the {kind!r} mechanism takes no categories (its values "
                                     "are numbers, bit strings or cell indices).")
                built.bind(categories)
                self.columns = list(categories)
        else:
            self._categories = None if categories is None else _Categories(categories)
        if self._categories is not None and self._categories.size != self.n_inputs:
            raise ValueError(f"the categories describe {self._categories.size} cells "
                             f"({' x '.join(map(str, self._categories.sizes))}) but the "
                             f"{kind!r} mechanism covers {self.n_inputs}: they are not the "
                             "server's domain.")
        if self._values is not None and getattr(built, "columns", None) is not None:
            self.columns = list(built.columns)  # a "columns" record: every column
        elif self._values is None or categories is None:
            self.columns = None if self._categories is None else list(
                self._categories.columns)
        if seed is None:
            self._rng = random.SystemRandom()
        else:
            warnings.warn(SEEDED_WARNING, UserWarning, stacklevel=2)
            self._rng = random.Random(seed)

    @classmethod
    def from_json(cls, text, categories=None, seed=None, state=None):
        """Rebuild the randomizer from the text of ``mechanism.to_json()``.

        Parameters
        ----------
        text : str or bytes
            The JSON specification.
        categories : mapping column -> list, optional
            The public categories of the server's domain, in its order.
        seed : int, optional
            **Tests and simulation only** (see the class description).
        state : str or os.PathLike, optional
            The client state file of the memoizing kinds (see the class description).

        Returns
        -------
        Randomizer
            ``Randomizer(json.loads(text), categories, seed, state)``.

        Raises
        ------
        ValueError
            If ``text`` is not valid JSON or not a specification this client supports.
        """
        try:
            spec = json.loads(text)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the mechanism specification is not valid JSON: {exc}") from None
        return cls(spec, categories=categories, seed=seed, state=state)

    def encode(self, record):
        """The flat cell index of ``record`` (needs ``categories``).

        Parameters
        ----------
        record : dict, list or scalar
            A dict column -> value, a list of values in column order, or a single value for
            a one-column domain.

        Returns
        -------
        int
            The C-order flat index of the record's cell (first column slowest), as
            ``Domain.encode`` computes it on the server.

        Raises
        ------
        ValueError
            Without ``categories``, or for a missing column, a missing value or a value that
            is not among the categories.
        """
        if self._values is not None and self._values.encode is not None:
            return self._values.encode(record)
        if self._categories is None:
            raise ValueError("encode needs the domain's categories: build the Randomizer with "
                             "categories=...")
        return self._categories.encode(record)

    def privatize(self, value):
        """One privatized report of ``value``, in plain JSON-ready Python types.

        Parameters
        ----------
        value : int, float, str, dict or list
            A flat cell index in ``[0, n_inputs)``, or with ``categories`` a record; for the
            value kinds the value described in the class Notes.

        Returns
        -------
        report : int, float, list of int, list of float or None
            Exactly one row of the server's ``randomize`` (see ``docs/client.md``).
        """
        if self._values is not None:
            return self._values.privatize(value, self._rng, self._state)
        if self._categories is not None:
            cell = self._categories.encode(value)
        else:
            if isinstance(value, bool) or not isinstance(value, int) or not (
                    0 <= value < self.n_inputs):
                raise ValueError(f"the value must be a cell index, an integer in [0, "
                                 f"{self.n_inputs}), got {value!r} (pass categories= to "
                                 "privatize records).")
            cell = value
        return self._privatize_cell(cell, self._rng)
