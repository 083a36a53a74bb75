"""Parameter validation shared by every layer (no sklearn imports here)."""

import math
import numbers

import numpy as np

# A dense strategy holds n_outputs * n_cells float64 entries; past this many the
# matrix no longer fits comfortably in memory (2**27 entries = 1 GiB).
MAX_DENSE_ENTRIES = 2**27


def check_epsilon(epsilon, name="epsilon"):
    """Return ``epsilon`` as a float, or raise a ValueError saying what is allowed."""
    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real):
        raise ValueError(f"{name} must be a positive real number, got {epsilon!r}.")
    epsilon = float(epsilon)
    if not math.isfinite(epsilon) or epsilon <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {epsilon!r}.")
    if epsilon > 50:
        # exp(50) ~ 5e21: the strategy ratios lose all floating-point meaning beyond this.
        raise ValueError(f"{name}={epsilon!r} is too large to be meaningful; use a value <= 50.")
    return epsilon


def check_delta(delta, name="delta"):
    """Return ``delta`` as a float in the open interval (0, 1), or raise a ValueError."""
    if isinstance(delta, bool) or not isinstance(delta, numbers.Real):
        raise ValueError(f"{name} must be a real number in (0, 1), got {delta!r}.")
    delta = float(delta)
    if not (0.0 < delta < 1.0):
        raise ValueError(f"{name} must lie in the open interval (0, 1), got {delta!r}.")
    return delta


def check_positive_int(value, name, minimum=1):
    """Return ``value`` as an int >= ``minimum``, or raise a ValueError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}.")
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
    array = np.asarray(matrix, dtype=float)
    if array.ndim == 1:
        array = array[np.newaxis, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must be a 2-D matrix, got an array with {array.ndim} dims.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite entries.")
    return array
