"""The fast Walsh-Hadamard transform lives in :mod:`sklearn_ldp._fwht` (workloads use it too)."""

from .._fwht import fwht, hadamard_parity, hadamard_signs, is_power_of_two  # noqa: F401
