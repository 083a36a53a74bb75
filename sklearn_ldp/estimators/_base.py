"""Glue shared by the estimators (scikit-learn side; the encoder and the reports below it)."""

from ..encoder import LDPEncoder
from ..reports import AggregatedReports, LDPReports


def reports_or_privatized(estimator, X, first_call, strategy_params=None, **encoder_params):
    """``X`` if it holds reports, else raw records privatized by the estimator's own encoder.

    For estimators that accept raw records as a simulation convenience when their
    ``strategy`` is set: the first call fits ``estimator.encoder_ = LDPEncoder(strategy=...,
    epsilon=..., categories=..., random_state=..., ledger=..., ledger_users=...,
    **encoder_params, **strategy_params)`` on ``X`` (privatizing raw records is a collection,
    so the estimator's ledger is charged) and copies its ``n_features_in_`` /
    ``feature_names_in_``; every call returns ``encoder_.transform(X)``.
    """
    if isinstance(X, LDPReports | AggregatedReports):
        return X
    name = type(estimator).__name__
    if estimator.strategy is None:
        raise ValueError(
            f"{name}.fit expects LDPReports (the output of LDPEncoder.transform) or "
            "AggregatedReports (LDPEncoder.simulate). To fit on raw records, set strategy= and "
            "epsilon= so that the estimator privatizes them itself (a simulation of the "
            "clients)."
        )
    if first_call:
        try:
            encoder = LDPEncoder(strategy=estimator.strategy, epsilon=estimator.epsilon,
                                 categories=estimator.categories,
                                 random_state=estimator.random_state, ledger=estimator.ledger,
                                 ledger_users=estimator.ledger_users, **encoder_params,
                                 **(strategy_params or {}))
        except TypeError as exc:
            raise ValueError(f"strategy_params does not fit LDPEncoder: {exc}") from None
        estimator.encoder_ = encoder.fit(X)
        for attribute in ("n_features_in_", "feature_names_in_"):
            if hasattr(estimator.encoder_, attribute):
                setattr(estimator, attribute, getattr(estimator.encoder_, attribute))
    return estimator.encoder_.transform(X)
