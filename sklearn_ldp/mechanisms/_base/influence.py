"""The influence of one report on the answers, as :meth:`.Mechanism.report_influence` returns it."""

from typing import NamedTuple

import numpy as np


class ReportInfluence(NamedTuple):
    """The influence of one report on each answer (:meth:`Mechanism.report_influence`).

    Attributes
    ----------
    low, high : ndarray of shape (p,)
        Per query, the smallest and the largest change of the unbiased answer that adding one
        valid report makes.
    low_reports, high_reports : ndarray or None
        Row ``i`` is a valid report (in the mechanism's format) whose change is ``low[i]``
        (``high[i]``); None when the mechanism cannot construct it.
    exact : bool
        True when ``low`` and ``high`` are attained; False when they are only bounds (the
        valid-report set is too large to search, e.g. the hash functions of local hashing).
    """

    low: np.ndarray
    high: np.ndarray
    low_reports: object = None
    high_reports: object = None
    exact: bool = True

    @property
    def largest(self):
        """Per query, the largest absolute change one report can make."""
        return np.maximum(np.abs(self.low), np.abs(self.high))
