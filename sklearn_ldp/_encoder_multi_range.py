"""LDPEncoder's multi-dimensional range collections: ``strategy="hdg"`` or ``"tdg"``.

The part of :class:`~sklearn_ldp.encoder.LDPEncoder` that fits and encodes records of two or
more numeric columns (``bounds``) for range queries over several of them at once (TDG and
HDG, :mod:`sklearn_ldp.mechanisms.multi_range.grids`; docs/multi_range.md). A mixin of the
encoder: it uses the encoder's parameters (``bounds``, ``epsilon``, ``n_users``, ``clip``).
"""

from collections.abc import Mapping

import numpy as np
import pandas as pd

from ._encoder_columns import as_frame
from ._glue import validate_records
from ._validation import check_positive_int
from .mechanisms.multi_range.grids import METHODS, GridRangeMechanism, grid_sizes
from .mechanisms.numeric.base import check_bounds

MULTI_RANGE_STRATEGIES = METHODS
# Users assumed by the grid sizes when n_users is None (as the heavy-hitter defaults).
DEFAULT_RANGE_USERS = 10**6


class MultiRangeEncoderMixin:
    """Fitting and encoding records for multi-dimensional range queries (module docstring)."""

    def _multi_range_mode(self):
        """Whether ``strategy`` names TDG or HDG."""
        return isinstance(self.strategy, str) and self.strategy in MULTI_RANGE_STRATEGIES

    def _fitted_multi_range(self):
        """Whether the fitted mechanism is TDG or HDG."""
        return isinstance(self.mechanism_, GridRangeMechanism)

    def _fit_multi_range(self, X, epsilon):
        """``fit`` for ``strategy="hdg"``/``"tdg"``: a :class:`GridRangeMechanism` over the
        numeric columns of ``bounds``, its grids sized for ``n_users`` users."""
        if not isinstance(self.bounds, Mapping) or len(self.bounds) < 2:
            raise ValueError(f"strategy={self.strategy!r} answers range queries over several "
                             "numeric columns: declare two or more with public bounds, e.g. "
                             "bounds={'age': (0, 100), 'income': (0, 200000)}; got bounds="
                             f"{self.bounds!r}.")
        if self.categories is not None:
            raise ValueError(f"strategy={self.strategy!r} reports numeric columns only; leave "
                             f"categories=None (got {self.categories!r}).")
        if not isinstance(self.clip, bool | np.bool_):
            raise ValueError(f"clip must be True or False, got {self.clip!r}.")
        bounds = {}
        for column, pair in self.bounds.items():
            if not isinstance(column, str):
                raise ValueError(f"bounds: column names must be strings, got {column!r}.")
            if isinstance(pair, str):
                raise ValueError(f"bounds[{column!r}]={pair!r}: strategy={self.strategy!r} "
                                 "needs declared public bounds (low, high).")
            bounds[column] = check_bounds(pair, f"bounds[{column!r}]")
        n_users = DEFAULT_RANGE_USERS if self.n_users is None else check_positive_int(
            self.n_users, "n_users")
        columns = list(bounds)
        if X is not None:
            validate_records(self, X, reset=True, allow_nan=False)
            frame = as_frame(X)
            missing = [column for column in columns if column not in frame.columns]
            if missing:
                raise ValueError(f"X has no column(s) {missing!r} of bounds.")
        g1, g2 = grid_sizes(n_users, epsilon, len(columns), self.strategy)
        self.mechanism_ = GridRangeMechanism(epsilon, [bounds[c] for c in columns],
                                             method=self.strategy, g2=g2, g1=g1,
                                             columns=columns)
        self.strategy_ = self.strategy
        self.bounds_ = bounds
        self.domain_ = None
        self.workload_ = None
        self.epsilon_ = float(self.mechanism_.epsilon)
        self.column_budget_ = None
        self.n_clipped_ = dict.fromkeys(columns, 0)
        self.candidates_ = pd.Series(dtype=float, name="worst_case_per_user_variance")
        self.selection_ = None
        self.expected_total_error_ = None
        self._expected_error = self._grid_cell_errors(n_users)
        self.n_iter_, self.history_ = 0, []
        self._columns_without_data = X is None
        if X is None:
            self.n_features_in_ = len(columns)
            self.feature_names_in_ = np.asarray(columns, dtype=object)
        self._set_generator(np.random.default_rng(self._random_state()))
        return self

    def _grid_cell_errors(self, n_users):
        """``expected_error_``: per grid, the variance of one cell's estimated fraction (about
        all users' fraction) for ``n_users`` users (groups of ``n_users / m``), worst over the
        cell's fraction (0 or 1) and with the users spread evenly over the grid's cells."""
        mechanism = self.mechanism_
        group_users = n_users / mechanism.n_groups
        rows = {}
        for k, group in enumerate(mechanism.groups):
            n = mechanism.group_sizes[k]
            cell = np.zeros((1, n))
            cell[0, 0] = 1.0
            at = [np.eye(n)[0], np.eye(n)[1], np.full(n, 1.0 / n)]
            worst, other, even = (float(mechanism.linear_variance(k, cell, f, group_users,
                                                                  n_users)[0]) for f in at)
            rows[" x ".join(mechanism.columns[a] for a in group)] = (max(worst, other), even)
        table = pd.DataFrame.from_dict(rows, orient="index",
                                       columns=["worst_case", "average_case"])
        table.index.name = "grid"
        return table

    def _multi_range_records(self, X):
        """``X``'s values of the bounded columns, ``(N, d)`` floats within the bounds (a
        ValueError names the column, row and value outside them; clipped and counted with
        ``clip=True``), and how many were clipped per column."""
        frame = as_frame(X)
        if frame.shape[0] == 0:
            raise ValueError("X has no rows; there is nothing to encode.")
        columns = list(self.bounds_)
        missing = [column for column in columns if column not in frame.columns]
        if missing:
            raise ValueError(f"The data is missing the column(s) {missing!r} of bounds "
                             f"{columns!r}.")
        records = np.empty((frame.shape[0], len(columns)), dtype=np.float64)
        clipped = {}
        for j, column in enumerate(columns):
            records[:, j], clipped[column] = self._numeric_column(frame[column], column)
        return records, clipped
