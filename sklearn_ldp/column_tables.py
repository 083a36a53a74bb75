"""The per-column tables of a record mechanism (``ColumnsMechanism``) as DataFrames.

The mechanism itself is math (:mod:`sklearn_ldp.mechanisms.multi_attribute.columns`, no
pandas); :class:`~sklearn_ldp.LDPEncoder` shows its budget per column (``column_budget_``)
and the variance each answer gets from one user through these tables.
"""

import pandas as pd

from .mechanisms.multi_attribute.columns import (
    _MeanPart,
    _MultiAttributePart,
    _OraclePart,
    _SampledMeanPart,
)


def column_budget(mechanism):
    """One row per column: its part's ``strategy``, ``epsilon`` and position ``part``
    (the columns of one part share its budget)."""
    rows = [(column, part.strategy, part.epsilon, position)
            for position, part in enumerate(mechanism.parts) for column in part.columns]
    return pd.DataFrame(rows, columns=["column", "strategy", "epsilon", "part"]
                        ).set_index("column")


def column_answer_errors(mechanism, categories=None):
    """Every per-column answer with the variance one user adds to it.

    One row per mean of a numeric column (value units squared) and per category of a
    categorical column (the category's *count*, squared counts per user). Square-wave
    columns have none: their EM estimate's error has no closed form. The variance for
    ``N`` users is ``N`` times a count's and ``1 / N`` times a mean's.

    Parameters
    ----------
    mechanism : ColumnsMechanism
        The record mechanism.
    categories : dict or None, default=None
        Column -> its categories, for the labels (codes otherwise).

    Returns
    -------
    pandas.DataFrame
        Columns ``column``, ``answer`` (the label: the column, or ``"column=category"``),
        ``kind`` (``"mean"`` or ``"frequency"``), ``part``, ``code`` (the category's
        position, -1 for a mean), ``worst_case`` and ``average_case``.
    """
    rows = []
    for position, part in enumerate(mechanism.parts):
        if isinstance(part, _MeanPart | _SampledMeanPart):
            worst, average = part.per_user_variance()
            rows += [(column, column, "mean", position, -1, float(w), float(a))
                     for column, w, a in zip(part.columns, worst, average, strict=True)]
        elif isinstance(part, _MultiAttributePart | _OraclePart):
            for column, size, (worst, average) in zip(
                    part.columns, part.sizes(), part.per_user_variance(), strict=True):
                labels = (categories or {}).get(column)
                if labels is None or len(labels) != size:
                    labels = range(size)
                rows += [(column, f"{column}={label}", "frequency", position, code,
                          float(worst), float(average))
                         for code, label in enumerate(labels)]
    return pd.DataFrame(rows, columns=["column", "answer", "kind", "part", "code",
                                       "worst_case", "average_case"])
