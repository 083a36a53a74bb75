"""WorkloadEstimator: answer any linear counting queries from LDP reports (the server side)."""

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from .. import workloads
from ..encoder import LDPEncoder, resolve_workload, validate_records
from ..postprocess import POSTPROCESS, postprocess
from ..reports import AggregatedReports, LDPReports, statistic_of


def _as_reports(estimator, X, first_call):
    """LDP reports from ``X``: passed through, or (raw records) privatized by the estimator."""
    if isinstance(X, LDPReports | AggregatedReports):
        return X
    if estimator.strategy is None:
        raise ValueError(
            "WorkloadEstimator.fit expects LDPReports (the output of LDPEncoder.transform). To "
            "fit on raw records, set strategy= and epsilon= so that the estimator privatizes "
            "them itself (a simulation of the clients)."
        )
    if first_call:
        estimator.encoder_ = LDPEncoder(
            categories=estimator.categories,
            strategy=estimator.strategy,
            epsilon=estimator.epsilon,
            workload=estimator.workload,
            random_state=estimator.random_state,
        ).fit(X)
        estimator.n_features_in_ = estimator.encoder_.n_features_in_
        if hasattr(estimator.encoder_, "feature_names_in_"):
            estimator.feature_names_in_ = estimator.encoder_.feature_names_in_
    return estimator.encoder_.transform(X)


class WorkloadEstimator(BaseEstimator):
    """Unbiased answers to a workload of linear queries from LDP reports.

    ``fit`` aggregates the reports (LDPReports, or an AggregatedReports from a simulation)
    into the mechanism's sufficient statistic and reconstructs the unbiased data vector
    (for factorization mechanisms with the optimal linear reconstruction); ``partial_fit``
    adds reports (chunked fits equal one fit exactly); ``predict`` answers any linear queries
    in the strategy's row space; ``score`` estimates the workload error from held-out
    *reports* only.

    Parameters
    ----------
    workload : Workload, array, {"histogram", "prefix", "all_range"} or None, default=None
        Queries to answer in ``answers_``. Default: the workload carried by the reports (the
        one the encoder optimized for), else the histogram.
    postprocess : {"none", "clip", "norm_sub", "simplex", "wnnls"}, default="none"
        Only ``"none"`` is unbiased. ``"clip"`` (negatives to zero), ``"norm_sub"`` /
        ``"simplex"`` (the same projection onto non-negative counts with the known total;
        Wang et al.'s Norm-Sub) and ``"wnnls"`` (non-negative least squares on the workload)
        lower the variance at the price of bias; ``expected_error_`` describes the unbiased
        estimate.
    normalize : bool, default=False
        Answer in fractions of users instead of counts.
    strategy, epsilon, categories : optional
        Only for fitting on raw records: the estimator then privatizes them itself with an
        :class:`~sklearn_ldp.encoder.LDPEncoder` of these parameters (a simulation
        convenience, identical to a Pipeline of the two).
    random_state : int, Generator or None, default=None
        Used only when privatizing raw records.

    Attributes
    ----------
    answers_ : pandas.Series
        Answer of every workload query, indexed by the query labels.
    expected_error_ : pandas.DataFrame
        Analytic variance of each answer for the number of users fitted: columns
        ``worst_case`` (all users of the worst type for that query) and ``average_case``
        (users spread uniformly over the domain). Same units as ``answers_``.
    counts_ : ndarray
        The mechanism's sufficient statistic of all reports fitted (for factorization
        mechanisms the number of users who sent each output; for frequency oracles the
        support count of every cell followed by the number of reports).
    n_users_ : int
    data_vector_ : ndarray
        Estimated count of users per domain cell (post-processed if requested).
    mechanism_, domain_, workload_ : the objects the reports came with.

    Examples
    --------
    >>> import pandas as pd
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_ldp import LDPEncoder
    >>> df = pd.DataFrame({"smoker": ["no", "yes"] * 500})
    >>> pipe = make_pipeline(
    ...     LDPEncoder(categories={"smoker": ["no", "yes"]},
    ...                strategy="randomized_response", random_state=0),
    ...     WorkloadEstimator())
    >>> answers = pipe.fit(df)[-1].answers_
    >>> list(answers.index)
    ['smoker=no', 'smoker=yes']
    """

    def __init__(
        self,
        workload=None,
        postprocess="none",
        normalize=False,
        strategy=None,
        epsilon=None,
        categories=None,
        random_state=None,
    ):
        self.workload = workload
        self.postprocess = postprocess
        self.normalize = normalize
        self.strategy = strategy
        self.epsilon = epsilon
        self.categories = categories
        self.random_state = random_state

    # ------------------------------------------------------------------ fitting
    def fit(self, X, y=None):
        """Aggregate the reports in ``X`` and reconstruct the workload answers."""
        for attribute in ("counts_", "encoder_"):
            if hasattr(self, attribute):
                delattr(self, attribute)
        return self.partial_fit(X)

    def partial_fit(self, X, y=None):
        """Add the reports in ``X`` to those seen so far and update the answers."""
        if self.postprocess not in POSTPROCESS:
            raise ValueError(f"postprocess must be one of {POSTPROCESS}, got {self.postprocess!r}.")
        first_call = not hasattr(self, "counts_")
        reports = _as_reports(self, X, first_call)
        if len(reports) == 0:
            raise ValueError("no reports to fit: X has 0 rows.")
        if first_call:
            self.mechanism_ = reports.mechanism
            self.domain_ = reports.domain
            self.counts_ = 0  # the mechanism's additive statistic, summed over all reports
            self.n_users_ = 0
            self.workload_ = self._workload_for(reports)
            self.mechanism_.check_supports(self.workload_.matrix)
        elif reports.mechanism != self.mechanism_:
            raise ValueError(
                "these reports come from a different mechanism than the ones already fitted "
                f"({reports.mechanism!r} vs {self.mechanism_!r}); a different strategy, epsilon "
                "or domain cannot be mixed into one estimate."
            )
        self.counts_ = self.counts_ + statistic_of(reports)
        self.n_users_ += len(reports)
        self._reconstruct()
        return self

    def _workload_for(self, reports):
        domain = reports.domain
        if self.workload is None and reports.workload is not None:
            return reports.workload
        if domain is None:
            if self.workload is None:
                return workloads.histogram(self.mechanism_.n_inputs)
            result = workloads.as_workload(self.workload)
            result.check_width(self.mechanism_.n_inputs)
            return result
        return resolve_workload(self.workload, domain)

    def _reconstruct(self):
        raw = self.mechanism_.estimate(self.counts_)
        gram = self.workload_.gram()
        self.data_vector_ = postprocess(raw, self.postprocess, gram, self.n_users_)
        scale = 1.0 / self.n_users_ if self.normalize else 1.0
        W = self.workload_.matrix
        self.answers_ = pd.Series(scale * (W @ self.data_vector_), index=self.workload_.labels,
                                  name="answer")
        z = self.mechanism_.query_variance(W)
        variance_scale = 1.0 / self.n_users_ if self.normalize else float(self.n_users_)
        self.expected_error_ = pd.DataFrame(
            {"worst_case": variance_scale * z.max(axis=1),
             "average_case": variance_scale * z.mean(axis=1)},
            index=self.workload_.labels,
        )

    # ------------------------------------------------------------------ answering
    def _query_matrix(self, queries):
        """(matrix, labels or None) for a Workload, a matrix, or records (point queries)."""
        if isinstance(queries, workloads.Workload):
            queries.check_width(self.mechanism_.n_inputs)
            return queries.matrix, queries.labels
        if hasattr(self, "n_features_in_") and np.shape(queries)[-1] != self.mechanism_.n_inputs:
            validate_records(self, queries, reset=False)  # records: check their width
        if isinstance(queries, pd.DataFrame) or (
            self.domain_ is not None
            and np.ndim(queries) == 2
            and np.shape(queries)[1] == self.domain_.n_columns
            and self.domain_.n_columns != self.mechanism_.n_inputs
        ):
            if self.domain_ is None:
                raise ValueError("point queries need the domain; these reports carry none.")
            cells = self.domain_.encode(queries)
            return np.eye(self.mechanism_.n_inputs)[cells], None
        matrix = np.asarray(queries, dtype=float)
        if matrix.ndim == 1:
            matrix = matrix[np.newaxis, :]
        workloads.as_workload(matrix).check_width(self.mechanism_.n_inputs)
        return matrix, None

    def predict(self, queries):
        """Answer linear queries over the same domain.

        Parameters
        ----------
        queries : Workload, array of shape (p, n_cells) or (n_cells,), or records
            A workload or query matrix returns a labelled Series (one answer per query). A
            DataFrame (or 2-D array) of records over the domain columns asks, for each
            record, how many users share its cell, and returns an array of one answer per
            record.
        """
        check_is_fitted(self, "counts_")
        matrix, labels = self._query_matrix(queries)
        if self.postprocess == "none":
            self.mechanism_.check_supports(matrix)
        scale = 1.0 / self.n_users_ if self.normalize else 1.0
        answers = scale * (matrix @ self.data_vector_)
        if labels is None and not isinstance(queries, np.ndarray | list):
            return answers
        return pd.Series(answers, index=labels, name="answer") if labels is not None else answers

    def score(self, X, y=None):
        """Unbiased estimate of the negative mean squared error per workload query.

        Computed from held-out *privatized* reports only: with ``a`` the fitted answers and
        ``b`` the unbiased answers of the held-out reports (both as fractions of users),
        ``E||a - b||^2 = ||a - W p||^2 + tr Cov(b)``, and ``tr Cov(b)`` is estimated without
        bias from the spread of the held-out users' one-report estimates. The score is
        ``-(||a - b||^2 - tr Cov(b)) / p``; it may be slightly positive by chance.
        """
        check_is_fitted(self, "counts_")
        reports = _as_reports(self, X, first_call=False)
        if reports.mechanism != self.mechanism_:
            raise ValueError("held-out reports must come from the mechanism that was fitted.")
        n_test = len(reports)
        if n_test < 2:
            raise ValueError("score needs at least 2 held-out reports.")
        counts = statistic_of(reports)
        W = self.workload_.matrix
        gram = self.workload_.gram()
        fitted = W @ self.data_vector_ / self.n_users_
        held_out = W @ self.mechanism_.estimate(counts) / n_test
        sum_of_squares = self.mechanism_.sum_of_squared_answers(counts, gram)
        sample_variance = (sum_of_squares - n_test * held_out @ held_out) / (n_test - 1)
        squared_distance = float(np.sum((fitted - held_out) ** 2))
        return -(squared_distance - sample_variance / n_test) / W.shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.requires_fit = True
        return tags
