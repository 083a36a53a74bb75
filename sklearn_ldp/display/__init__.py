"""Figures of fitted estimators in one line, in the scikit-learn style.

Each display holds the numbers of a figure; ``Display.from_estimator(estimator)`` reads
them from a fitted estimator and draws, ``display.plot(ax=...)`` draws again; the axes,
the figure and the artists are then attributes (``ax_``, ``figure_``, ...). matplotlib
is imported when a figure is drawn only: ``pip install "sklearn_ldp[examples]"``.
"""

from ._bars import HeavyHitterDisplay, HistogramDisplay, MeanDisplay
from ._curves import CDFDisplay, LongitudinalDisplay
from ._strategies import StrategyComparisonDisplay

__all__ = [
    "CDFDisplay",
    "HeavyHitterDisplay",
    "HistogramDisplay",
    "LongitudinalDisplay",
    "MeanDisplay",
    "StrategyComparisonDisplay",
]
