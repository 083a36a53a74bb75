"""What every display shares: the optional matplotlib import, the axes, the intervals.

matplotlib is an optional extra: it is imported only when a figure is drawn, so that the
package imports, fits and estimates without it.
"""

import numbers
from statistics import NormalDist

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..mechanisms._base.docstrings import shared_sections

INSTALL = 'pip install "sklearn_ldp[examples]"'


def pyplot():
    """``matplotlib.pyplot``, or an ImportError saying how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError(f"drawing a display needs matplotlib, which is not installed: "
                          f"{INSTALL}") from exc
    return plt


def check_confidence(confidence):
    """The confidence level as a float in (0, 1), or a ValueError naming it."""
    if (isinstance(confidence, bool) or not isinstance(confidence, numbers.Real)
            or not 0.0 < confidence < 1.0):
        raise ValueError(f"confidence must be a number in (0, 1), e.g. 0.95; got "
                         f"{confidence!r}.")
    return float(confidence)


def check_flag(value, name):
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be True or False, got {value!r}.")
    return bool(value)


def z_value(confidence):
    """The two-sided normal quantile of a confidence level (1.96 at 0.95)."""
    return NormalDist().inv_cdf(0.5 + check_confidence(confidence) / 2.0)


def interval(estimates, std_errors, confidence, clip_negative):
    """``(center, lower, upper)`` of the normal interval ``estimate +- z * std_error``.

    With ``clip_negative`` the three are cut at 0 (a share or a count is never negative; the
    unbiased estimate can be, and the display keeps it in its ``estimates``).
    """
    estimates = np.asarray(estimates, dtype=float)
    half = z_value(confidence) * np.asarray(std_errors, dtype=float)
    center, lower, upper = estimates, estimates - half, estimates + half
    if clip_negative:
        center, lower, upper = (np.maximum(a, 0.0) for a in (center, lower, upper))
    return center, lower, upper


def std_errors_from(variances, name):
    """Standard errors from an ``expected_error_`` column, refusing negative variances."""
    variances = np.asarray(variances, dtype=float)
    if variances.size and not (np.all(np.isfinite(variances)) and variances.min() >= 0):
        raise ValueError(f"{name} holds variances that are negative or not finite; no "
                         "interval can be drawn from them.")
    return np.sqrt(variances)


def check_error_kind(error, allowed):
    if error not in allowed:
        raise ValueError(f"error must be one of {list(allowed)!r}, got {error!r}.")
    return error


def fitted(estimator, kinds, attribute):
    """Refuse an estimator of another kind (TypeError) or not fitted (NotFittedError)."""
    if not isinstance(estimator, kinds):
        names = ", ".join(kind.__name__ for kind in kinds)
        raise TypeError(f"expected a fitted {names}; got {type(estimator).__name__}.")
    check_is_fitted(estimator, attribute)
    return estimator


def check_same_length(name, values, length):
    """``values`` as floats, one per estimate and finite, or an error naming ``name``."""
    try:
        values = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must hold numbers, got {values!r}.") from None
    if values.ndim != 1 or values.shape[0] != length:
        raise ValueError(f"{name} must hold one number per estimate ({length}), got shape "
                         f"{values.shape}.")
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} holds values that are not finite.")
    return values


class Display:
    """What every display shares: its docstrings, the axes, the level, the labels.

    A display names what its drawing methods pass ``**kwargs`` to in ``kwargs_to``; the
    shared sections of its docstring and of its ``plot`` and ``from_*`` methods are written
    in when the class is defined (see :func:`shared_docstring`).
    """

    _kwargs_to = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        fill = shared_docstring(cls._kwargs_to)
        fill(cls)
        for name, member in vars(cls).items():
            if name == "plot" or name.startswith("from_"):
                fill(getattr(member, "__func__", member))  # a classmethod's function

    def _axes(self, ax):
        plt = pyplot()
        if ax is None:  # constrained: long tick labels stay inside the figure
            _, ax = plt.subplots(layout="constrained")
        self.ax_ = ax
        self.figure_ = ax.figure
        return ax

    def _interval(self, estimates, std_errors):
        """``(center, lower, upper)`` of :func:`interval` at the display's ``confidence``,
        cut at 0 if the display has ``clip_negative=True`` (a mean or a CDF has none)."""
        clip = check_flag(getattr(self, "clip_negative", False), "clip_negative")
        return interval(estimates, std_errors, self.confidence, clip)

    def _level(self):
        return f"{100 * check_confidence(self.confidence):g}% interval"

    def _labelled(self, xlabel=None, ylabel=None, **legend):
        """Label the axes (None: leave the label), draw the legend if given its keyword
        arguments, and return ``self``: the last step of every ``plot``."""
        if xlabel is not None:
            self.ax_.set_xlabel(xlabel)
        if ylabel is not None:
            self.ax_.set_ylabel(ylabel)
        if legend:
            self.ax_.legend(**legend)
        return self


_SHARED_DOCS = {
    "ax parameter": """ax : matplotlib Axes or None, default=None
    Where to draw; None: a new figure.""",
    "figure attributes": """ax_ : matplotlib Axes
    The axes drawn on.
figure_ : matplotlib Figure
    The figure of ``ax_``.""",
    "confidence parameter": """confidence : float, default=0.95
    Level of the intervals, in (0, 1).""",
    # ``<interval attributes: n_values, true_values>``: the shape and the truth's parameter.
    "interval attributes": lambda argument: """lower_, upper_ : ndarray of shape ({0},)
    The ends of the intervals drawn.
truth_ : matplotlib Line2D or None
    The markers of ``{1}``.""".format(*argument.split(", ")),
}


def shared_docstring(kwargs_to=None):
    """Fill a docstring's ``<ax parameter>``, ``<figure attributes>``, ``<confidence
    parameter>``, ``<interval attributes: shape, parameter>`` lines (at their indentation),
    ``<kwargs>`` (the ``**kwargs`` entry, passed
    to ``kwargs_to``), ``<plot sections>`` (the Parameters and Returns of ``plot``) and
    ``<drawing sections>`` (the last parameters and the Returns of a ``from_*`` method),
    with the package's :func:`~sklearn_ldp.mechanisms._base.docstrings.shared_sections`."""
    parts = dict(_SHARED_DOCS)
    if kwargs_to is not None:
        parts["kwargs"] = f"**kwargs : dict\n    Passed to {kwargs_to}."

    def fill(obj):
        # The Returns entry names the display class the method belongs to.
        owner = obj.__qualname__.split(".")[0]
        ending = [_SHARED_DOCS["ax parameter"], parts.get("kwargs", ""), "", "Returns",
                  "-------", owner]
        sections = dict(parts)
        sections["plot sections"] = "\n".join(
            ["Parameters", "----------", *ending,
             "    ``self``, with ``ax_``, ``figure_`` and the artists set."])
        sections["drawing sections"] = "\n".join([*ending, "    The display, drawn."])
        if obj.__doc__ is not None:
            shared_sections(sections)(obj)
        return obj

    return fill
