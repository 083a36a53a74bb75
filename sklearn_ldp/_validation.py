"""Parameter validation shared by every layer (no sklearn imports here).

Besides the parameter checks, two trust boundaries of DESIGN.md section 7 live here so that
every layer uses one implementation:

* :func:`check_ldp_strategy`: the float gate of a strategy matrix that comes from outside (a
  user's matrix, an optimizer's output), before it is quantized into the integer table that
  is sampled and checked exactly (``sklearn_ldp.mechanisms._base.tables``);
* :class:`FreshEntropyMixin`: a noise generator that is drawn again from operating-system
  entropy in every copy (pickle, fork) of an unseeded estimator.
"""

import difflib
import functools
import inspect
import math
import numbers
import os
import reprlib

import numpy as np

# A dense strategy holds n_outputs * n_cells float64 entries; past this many the
# matrix no longer fits comfortably in memory (2**27 entries = 1 GiB).
MAX_DENSE_ENTRIES = 2**27

# Largest |column sum - 1| of a strategy matrix that is normalized rather than refused. It is
# absolute, not scaled by the number of rows: a scaled tolerance let a 10^5-row strategy leave
# 9e-5 of mass to the sampler's last output, enough to multiply that output's ratio by 10.
COLUMN_SUM_ATOL = 1e-9
# Relative slack on the epsilon a *float* matrix claims (its design was computed in floating
# point). It only decides whether the matrix is quantized; the integer table that is sampled
# meets the claim exactly (sklearn_ldp.mechanisms._base.tables), with no slack.
EPSILON_RTOL = 1e-9


# Smallest epsilon accepted: below it e^epsilon - 1 loses every digit in float64 (it is 0
# below 1.1e-16, a division by zero in every variance formula), and a collection would need
# more than 10^12 users for an estimate whose error is below the count it estimates.
MIN_EPSILON = 1e-6
# Smallest delta accepted: subnormal deltas make the Gaussian calibration's tail
# probabilities underflow (its search for sigma then divides by zero).
MIN_DELTA = 1e-300
# Deepest nesting of lists, tuples, dicts or sets a parameter may hold: past Python's
# recursion limit, repr, hash and pandas raise RecursionError (numpy even crashes).
MAX_NESTING = 64


def describe(value, limit=80):
    """A short, safe text showing ``value`` in an error message (its type and repr).

    Never recursive (``reprlib``), so a list nested a million deep costs nothing.

    Examples
    --------
    >>> describe(2**70)
    'int 1180591620717411303424'
    >>> describe([[[[[1]]]]])
    'list [[[[...]]]]'
    """
    return f"{type(value).__name__} {short_repr(value, limit)}"


def check_real(value, name, minimum=None, maximum=None, strict=False, allow_none=False):
    """``value`` as a finite float in ``[minimum, maximum]`` (``(minimum, ...`` if
    ``strict``), or a ValueError naming ``name`` and the value.

    Examples
    --------
    >>> check_real(0.5, "tol", minimum=0)
    0.5
    >>> check_real(float("nan"), "tol", minimum=0)
    Traceback (most recent call last):
    ...
    ValueError: tol must be a finite real number >= 0, got float nan.
    """
    if value is None and allow_none:
        return None
    bound = "" if minimum is None else f" {'>' if strict else '>='} {minimum}"
    if maximum is not None:
        bound += f"{' and' if bound else ''} <= {maximum}"
    problem = f"{name} must be {'None or ' if allow_none else ''}a finite real number{bound}"
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{problem}, got {describe(value)}.")
    number = float(value)
    if not math.isfinite(number) or (minimum is not None and (
            number < minimum or (strict and number == minimum))) or (
            maximum is not None and number > maximum):
        raise ValueError(f"{problem}, got {describe(value)}.")
    return number


def _too_deep(value, limit=MAX_NESTING):
    """Whether ``value`` nests lists, tuples, dicts or sets more than ``limit`` levels
    (walked without recursion, containers only)."""
    containers = (list, tuple, dict, set, frozenset)
    if not isinstance(value, containers):
        return False
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        # The types first (a C-level scan): a flat list of a million categories holds no
        # container, and is then passed over without a Python-level loop.
        if not any(issubclass(kind, containers) for kind in set(map(type, children))):
            continue
        stack.extend((child, depth + 1) for child in children
                     if isinstance(child, containers))
    return False


def check_nesting(owner, arguments):
    """Refuse, at the door of a method, an argument or a parameter of ``owner`` (an
    estimator) that nests lists or dicts more than ``MAX_NESTING`` levels.

    Called first thing as ``check_nesting(self, locals())``: the walk is iterative and only
    descends into containers, so it costs a scan of the lists given (a column of categories)
    and nothing for arrays or DataFrames. (A decorator catching RecursionError would cost
    nothing, but its frame would become the location of every warning the method issues.)

    Examples
    --------
    >>> check_nesting(None, {"X": [[1, 2], [3, 4]]})
    >>> deep = []
    >>> for _ in range(100):
    ...     deep = [deep]
    >>> check_nesting(None, {"X": deep})  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: X nests lists or dicts more than 64 levels deep, got list [[[[...]]]].
    """
    fields = {name: value for name, value in arguments.items() if name != "self"}
    if owner is not None and hasattr(owner, "get_params"):
        fields = {**owner.get_params(deep=False), **fields}
    for name, value in fields.items():
        if _too_deep(value):
            where = f"{type(owner).__name__}: " if owner is not None else ""
            raise ValueError(f"{where}{name} nests lists or dicts more than {MAX_NESTING} "
                             f"levels deep, got {describe(value)}.")


def store_params(estimator, arguments):
    """Store every ``__init__`` argument of ``estimator`` unchanged, under its own name.

    scikit-learn's convention (no logic in ``__init__``; all work in ``fit``) written once:
    the whole body of an estimator's ``__init__`` is ``store_params(self, locals())``, whose
    only names are then the arguments (a subclass's ``__init__`` stores its own the same way).

    Examples
    --------
    >>> class Example:
    ...     def __init__(self, alpha=1.0, beta=None):
    ...         store_params(self, locals())
    >>> vars(Example(beta=[2]))
    {'alpha': 1.0, 'beta': [2]}
    >>> class Child(Example):
    ...     def __init__(self, gamma=0, alpha=1.0):
    ...         super().__init__(alpha=alpha)
    ...         store_params(self, locals())
    >>> vars(Child(gamma=5))
    {'alpha': 1.0, 'beta': None, 'gamma': 5}
    """
    for name, value in arguments.items():
        if name not in ("self", "__class__"):
            setattr(estimator, name, value)


def refuse_deep_nesting(method):
    """Turn a RecursionError of ``method`` into a ValueError naming the argument or the
    estimator parameter that nests too deeply (found by an iterative walk, after the error,
    so that valid calls pay nothing)."""
    signature = inspect.signature(method)

    @functools.wraps(method)
    def guarded(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except RecursionError:
            fields = {}
            try:
                fields.update(signature.bind(*args, **kwargs).arguments)
            except TypeError:
                pass
            owner = fields.pop("self", None)
            if owner is not None and hasattr(owner, "get_params"):
                fields = {**owner.get_params(deep=False), **fields}
            where = method.__qualname__.replace(".__init__", "")
            for name, value in fields.items():
                if _too_deep(value):
                    raise ValueError(f"{where}: {name} nests lists or dicts more than "
                                     f"{MAX_NESTING} levels deep, got {describe(value)}."
                                     ) from None
            raise ValueError(f"{where}: an argument nests too deeply to be read (Python's "
                             "recursion limit).") from None

    return guarded


def check_positive_real(value, name):
    """Return ``value`` as a finite float > 0, or raise a ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a positive real number, got {value!r}.")
    value = float(value)
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}.")
    return value


def check_epsilon(epsilon, name="epsilon"):
    """Return ``epsilon`` as a float, or raise a ValueError saying what is allowed."""
    epsilon = check_positive_real(epsilon, name)
    if epsilon > 50:
        # exp(50) ~ 5e21: the strategy ratios lose all floating-point meaning beyond this.
        raise ValueError(f"{name}={epsilon!r} is too large to be meaningful; use a value <= 50.")
    if epsilon < MIN_EPSILON:
        raise ValueError(f"{name}={epsilon!r} is too small to be meaningful (e^epsilon - 1 "
                         f"vanishes in floating point); use a value >= {MIN_EPSILON:g}.")
    return epsilon


def check_delta(delta, name="delta"):
    """Return ``delta`` as a float in the open interval (0, 1), or raise a ValueError."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(f"{name} must be a real number in (0, 1), got {delta!r}.")
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {delta!r}.")
    if delta < MIN_DELTA:
        raise ValueError(f"{name}={delta!r} is below {MIN_DELTA:g}: the Gaussian tails that "
                         "calibrate the noise underflow there (use a value >= 1e-300).")
    return delta


def check_positive_int(value, name, minimum=1, maximum=None):
    """Return ``value`` as an int >= ``minimum`` (and <= ``maximum``), or raise a ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum \
            or (maximum is not None and value > maximum):
        bound = f"in [{minimum}, {maximum}]" if maximum is not None else f">= {minimum}"
        raise ValueError(f"{name} must be an integer {bound}, got {short_repr(value)}.")
    return int(value)


def check_dense_size(n_outputs, n_cells, strategy):
    """Refuse a dense strategy that would not fit in memory, suggesting what to do instead."""
    if n_outputs * n_cells > MAX_DENSE_ENTRIES:
        raise ValueError(
            f"The domain has {n_cells} cells, too many for the dense strategy {strategy!r} "
            f"({n_outputs} x {n_cells} matrix). Use fewer or coarser categories, or a "
            "structured strategy such as 'hierarchical' (ranges) or 'fourier' (marginals)."
        )


def as_float_matrix(matrix, name):
    """A 2-D finite float64 array, or a ValueError naming ``name``."""
    try:
        array = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"{name} must be a 2-D matrix of real numbers, got "
                         f"{describe(matrix)} ({exc}).") from None
    if array.ndim == 1:
        array = array[np.newaxis, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array with {array.ndim} dims "
                         f"({describe(matrix)}).")
    finite = np.isfinite(array)
    if not finite.all():
        i, j = (int(k) for k in np.argwhere(~finite)[0])
        raise ValueError(f"{name} contains NaN or infinite entries (row {i}, column {j} holds "
                         f"{float(array[i, j])!r}).")
    return array


def realised_epsilon(Q):
    """The epsilon a strategy matrix actually achieves: ``max_o log(max_u Q[o,u] / min_u Q[o,u])``.

    Rows that are zero for every input (outputs that never occur) are ignored; a row that is
    zero for some inputs but not all gives ``inf`` (that output rules those inputs out).

    Parameters
    ----------
    Q : array of shape (n_outputs, n_inputs)
        Non-negative entries.

    Returns
    -------
    float
        ``log1p((max - min) / min)`` of the worst row: accurate to a few ulps of epsilon even
        when the ratio is within rounding of 1 (small epsilon), where ``log(max / min)``
        would lose every digit.

    Examples
    --------
    >>> round(realised_epsilon(np.array([[0.5, 0.25], [0.5, 0.75]])), 6)  # log(0.5 / 0.25)
    0.693147
    >>> realised_epsilon(np.array([[1.0, 0.0], [0.0, 1.0]]))
    inf
    """
    Q = np.asarray(Q, dtype=float)
    row_max = Q.max(axis=1)
    row_min = Q.min(axis=1)
    live = row_max > 0
    if not live.any():
        return 0.0
    row_max, row_min = row_max[live], row_min[live]
    if np.any(row_min <= 0):
        return math.inf
    with np.errstate(over="ignore"):  # a ratio past the float range is an infinite epsilon
        return float(np.max(np.log1p((row_max - row_min) / row_min)))


def check_column_sums(Q, name):
    """The column sums of a probability matrix, each within ``COLUMN_SUM_ATOL`` of 1.

    Shared by every check of a matrix that is sampled column by column
    (:func:`check_ldp_strategy`, and the count mechanisms, whose neighbours are adjacent
    counts rather than all pairs of inputs, so they check the ratios themselves).

    Parameters
    ----------
    Q : ndarray of shape (n_outputs, n_inputs)
        Finite, non-negative entries (checked by the caller).
    name : str
        How the error message names the matrix.

    Returns
    -------
    sums : ndarray of shape (n_inputs,)
        The column sums added down the rows in order (``np.cumsum`` is sequential), exactly
        as the sampler's cumulative table and the standard-library client add them: divide
        the columns by them to get the matrix to sample.

    Raises
    ------
    ValueError
        Naming the first column whose sum is off, and that sum. The tolerance is absolute,
        whatever the number of rows (see ``COLUMN_SUM_ATOL``).

    Examples
    --------
    >>> check_column_sums(np.array([[0.25, 0.5], [0.75, 0.5]]), "Q").tolist()
    [1.0, 1.0]
    """
    sums = np.cumsum(Q, axis=0)[-1]
    off = np.abs(sums - 1.0) > COLUMN_SUM_ATOL
    if off.any():
        u = int(np.flatnonzero(off)[0])
        raise ValueError(f"column {u} of the {name} sums to {float(sums[u])!r}: every column "
                         f"must sum to 1 within {COLUMN_SUM_ATOL:g} (a deficit or a surplus is "
                         "given to or taken from the last outputs by the sampler, which breaks "
                         "the privacy ratio).")
    return sums


def check_ldp_strategy(Q, epsilon, name="strategy matrix Q"):
    """The float gate of a strategy matrix from outside; returns the matrix to quantize.

    ``Q[o, u] = P(report o | input u)``. This decides whether a float matrix is a
    distribution per column that meets its claim up to float rounding; it does not decide
    privacy. What is sampled is the integer table the normalized matrix is quantized into
    (``sklearn_ldp.mechanisms._base.tables.quantize_table``), and that table is checked exactly on
    integers, with no tolerance. A matrix that is not a distribution per column is not what
    an inverse-CDF sampler draws (it gives the missing mass to the last outputs), so every
    column is normalized first. In order:

    1. entries finite and non-negative;
    2. rows that are zero for every input are dropped (they are never reported);
    3. each column sum (added down the rows in order, as the sampler's cumulative table and
       the standard-library client do) is within ``COLUMN_SUM_ATOL`` of 1, whatever the
       number of rows; the column is then divided by its sum;
    4. no row of the normalized matrix is zero for some inputs and positive for others;
    5. the realised epsilon (:func:`realised_epsilon`) of the normalized matrix is at most
       ``epsilon * (1 + EPSILON_RTOL)`` (float rounding of the design; the quantizer then
       meets ``epsilon`` itself, exactly).

    Parameters
    ----------
    Q : array-like of shape (n_outputs, n_inputs)
    epsilon : float
        The epsilon the matrix claims (already validated by :func:`check_epsilon`).
    name : str, default="strategy matrix Q"
        How error messages name the matrix.

    Returns
    -------
    normalized : ndarray of shape (n_live, n_inputs)
        The matrix to quantize: zero rows dropped, columns divided by their sums.
    source : ndarray of shape (n_live, n_inputs)
        The same rows before normalization.

    Raises
    ------
    ValueError
        Naming the entry, column or row that fails, with the offending value.

    Examples
    --------
    >>> Q, _ = check_ldp_strategy([[0.6, 0.4], [0.4, 0.6 - 1e-12]], 0.5)
    >>> Q.sum(axis=0).tolist()
    [1.0, 1.0]
    """
    Q = as_float_matrix(Q, name)
    if Q.shape[1] == 0:
        raise ValueError(f"{name} has no columns: it must have one column per input.")
    negative = Q < 0
    if negative.any():
        o, u = (int(k) for k in np.argwhere(negative)[0])
        raise ValueError(f"{name} has a negative entry {float(Q[o, u])!r} at row {o}, column "
                         f"{u}; it must hold probabilities.")
    source = Q[Q.max(axis=1) > 0]
    if source.shape[0] == 0:
        raise ValueError(f"{name} is all zeros: every column must sum to 1.")
    sums = check_column_sums(source, name)
    normalized = source / sums
    row_max = normalized.max(axis=1)
    partly_zero = normalized.min(axis=1) <= 0
    if partly_zero.any():
        o = int(np.flatnonzero(partly_zero)[0])
        u = int(np.flatnonzero(normalized[o] <= 0)[0])
        v = int(np.argmax(normalized[o]))
        raise ValueError(f"row {o} (among the non-zero rows) of the {name} is 0 for input {u} "
                         f"but {float(row_max[o])!r} for input {v}: that output rules input {u} "
                         "out, an unbounded privacy ratio.")
    realised = realised_epsilon(normalized)
    if realised > epsilon * (1.0 + EPSILON_RTOL):
        raise ValueError(f"the {name} is not {epsilon}-LDP: its realised epsilon (largest "
                         f"log Q[o,u] / Q[o,u'] of the normalized matrix) is {realised!r} > "
                         f"{epsilon}.")
    return normalized, source


def is_generator_object(random_state):
    """Whether ``random_state`` is a generator object (a numpy ``Generator`` or
    ``RandomState``) rather than a seed (an int, a SeedSequence) or None.

    Examples
    --------
    >>> is_generator_object(np.random.default_rng(0)), is_generator_object(0)
    (True, False)
    """
    return isinstance(random_state, np.random.Generator | np.random.RandomState)


def check_random_state(random_state, name="random_state"):
    """``random_state`` if numpy can seed a generator from it safely, else a ValueError.

    Accepted: None, an integer >= 0, a flat list/tuple/1-D array of such integers, a
    ``SeedSequence``, a ``BitGenerator``, a ``Generator`` or a ``RandomState``. Checked before
    numpy sees it: ``np.random.default_rng`` crashes the interpreter (a segmentation fault) on
    a deeply nested list, and names no parameter on a float or a string.

    Examples
    --------
    >>> check_random_state(3)
    3
    >>> check_random_state(1.5)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: random_state must be None, an integer >= 0, ... got 1.5.
    """
    if random_state is None or isinstance(random_state, np.random.SeedSequence
                                          | np.random.BitGenerator) \
            or is_generator_object(random_state):
        return random_state
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool) \
            and random_state >= 0:
        return random_state
    if isinstance(random_state, list | tuple) and random_state and all(
            isinstance(word, numbers.Integral) and not isinstance(word, bool) and word >= 0
            for word in random_state):
        return random_state
    if isinstance(random_state, np.ndarray) and random_state.ndim == 1 \
            and random_state.size and random_state.dtype.kind in "iu" \
            and (random_state >= 0).all():
        return random_state
    shown = f"{type(random_state).__name__} of shape {random_state.shape}" \
        if isinstance(random_state, np.ndarray) else short_repr(random_state)
    raise ValueError(f"{name} must be None, an integer >= 0, a SeedSequence or a numpy "
                     f"Generator / RandomState, got {shown}.")


def short_repr(value, limit=80):
    """``repr(value)`` cut to ``limit`` characters, safe on any nesting (reprlib)."""
    shortener = reprlib.Repr()
    shortener.maxlevel, shortener.maxstring, shortener.maxother = 3, limit, limit
    text = shortener.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _fresh_like(generator):
    """A generator of the same type as ``generator``, drawn from operating-system entropy."""
    if isinstance(generator, np.random.RandomState):
        return np.random.RandomState()
    return np.random.default_rng()


class FreshEntropyMixin:
    """Keep an estimator's noise generator ``_rng`` fresh in every copy of it.

    With ``random_state=None`` the generator draws from operating-system entropy; a copy
    that carried its state (a pickle sent to a worker, a forked process) would draw the same
    noise as the original, which two reports of one user would reveal. So, when
    ``random_state`` is None:

    * a pickle carries no generator state, and unpickling draws a new generator from the
      operating system;
    * :meth:`_generator` draws a new one when called in another process than the one that
      made the generator (a fork copies the memory, so only the process id tells).

    A generator *object* (a numpy ``Generator`` or ``RandomState``) as ``random_state`` is a
    stream that belongs to one process: its noise is as seeded as whatever made it (nothing
    tells ``default_rng()`` from ``default_rng(0)``), so it is warned about like a seed where
    seeds are (``LDPEncoder.client_spec``), but its copies are treated like those of an
    unseeded estimator: an unpickled, deep-copied or forked copy replaces both
    ``random_state`` and ``_rng`` by a new generator of the same type drawn from
    operating-system entropy, so two copies never replay one stream for different users.
    :meth:`__sklearn_clone__` gives each clone an independent child stream instead
    (``Generator.spawn``; for a ``RandomState``, one seeded by a draw of the original): clones
    stay reproducible from the original's seed, yet never share noise. Refusing generator
    objects was rejected: scikit-learn accepts them everywhere (``check_random_state``), and
    simulations pass one generator through a pipeline; what made them unsafe was only the
    replay in copies, which this removes.

    An integer or ``SeedSequence`` seed keeps its state in its copies: a seed is for
    reproducible simulation, where identical copies are the point.

    Subclasses call :meth:`_set_generator` in ``fit`` (with
    ``np.random.default_rng(self._random_state())``) and :meth:`_generator` wherever they
    draw; list the mixin before ``BaseEstimator``.
    """

    def _renews_in_copies(self):
        """Whether copies of this estimator must not repeat its draws."""
        random_state = self.__dict__.get("random_state")
        return random_state is None or is_generator_object(random_state)

    def _renew(self):
        """In a copy: replace a generator-object ``random_state`` and, once fitted, the noise
        generator ``_rng`` by new ones drawn from operating-system entropy."""
        random_state = self.__dict__.get("random_state")
        if is_generator_object(random_state):
            self.random_state = _fresh_like(random_state)
        if "_rng" in self.__dict__:
            self._set_generator(np.random.default_rng(self.random_state))

    def _set_generator(self, rng):
        self._rng = rng
        self._rng_pid = os.getpid()

    def _random_state(self):
        """``random_state`` for ``fit``: a generator object inherited by a forked process is
        renewed first, so that a refit in the child does not replay the parent's stream."""
        check_random_state(self.random_state)
        if is_generator_object(self.random_state) \
                and getattr(self, "_rng_pid", os.getpid()) != os.getpid():
            self.random_state = _fresh_like(self.random_state)
        return self.random_state

    def _generator(self):
        """The generator to draw from, renewed from OS entropy in a forked copy (unseeded, or
        seeded by a generator object)."""
        if self._renews_in_copies() and getattr(self, "_rng_pid", None) != os.getpid():
            self._renew()
        return self._rng

    def __getstate__(self):
        parent = getattr(super(), "__getstate__", None)
        state = dict(parent() if parent is not None else self.__dict__)
        random_state = state.get("random_state")
        if random_state is None or is_generator_object(random_state):
            # No state in the pickle: every copy draws its own (the type of a generator
            # object is kept, so that get_params still returns one).
            if is_generator_object(random_state):
                state["random_state"] = _fresh_like(random_state)
            if "_rng" in state:
                state["_rng"] = None
                state.pop("_rng_pid", None)
        return state

    def __setstate__(self, state):
        parent = getattr(super(), "__setstate__", None)
        if parent is not None:
            parent(state)
        else:
            self.__dict__.update(state)
        # Pickles made before the mixin carried the state: renewed as well.
        if self._renews_in_copies():
            self._renew()

    def __sklearn_clone__(self):
        """A clone (``sklearn.base.clone``) whose generator object, if any, is an independent
        child of this estimator's: reproducible from the original's seed, never its noise."""
        clone = super().__sklearn_clone__()  # BaseEstimator's: the parameters, deep-copied
        random_state = self.random_state
        if isinstance(random_state, np.random.Generator):
            try:
                clone.random_state = random_state.spawn(1)[0]
            except TypeError:  # a bit generator made without a SeedSequence
                clone.random_state = np.random.default_rng(
                    random_state.integers(2**63, size=4))
        elif isinstance(random_state, np.random.RandomState):
            clone.random_state = np.random.RandomState(
                random_state.randint(2**32, size=4, dtype=np.int64))
        return clone


def did_you_mean(name, choices):
    """`` Did you mean 'x'?`` for the choice closest to a mistyped ``name`` (empty when none
    is close), to end an "unknown name" message with.

    Examples
    --------
    >>> did_you_mean("hadamrd", ["hadamard", "hierarchical"])
    " Did you mean 'hadamard'?"
    >>> did_you_mean("zzz", ["hadamard"])
    ''
    """
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name, [str(choice) for choice in choices], n=1)
    return f" Did you mean {close[0]!r}?" if close else ""
