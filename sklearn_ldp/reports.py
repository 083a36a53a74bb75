"""LDPReports: what the server receives, together with the mechanism that produced it."""

import numpy as np

from .mechanisms import Mechanism


class LDPReports:
    """Privatized reports plus the mechanism (and domain) needed to decode them.

    Parameters
    ----------
    reports : array-like with one row per user
        The reports as the mechanism's ``randomize`` returns them: output indices (shape
        ``(n_users,)``), packed bit vectors (``(n_users, n_bytes)`` uint8) or
        ``(seed, value)`` pairs, depending on the mechanism.
    mechanism : Mechanism
        The mechanism the clients ran. Reports from real clients are wrapped with the
        mechanism rebuilt from its JSON: ``LDPReports(array, mechanism=mechanism_from_json(s))``.
    domain : Domain, optional
        The public domain the user types index into (for labelled answers).
    workload : Workload, optional
        The workload the strategy was built for; estimators use it when given none.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import baseline_mechanism
    >>> mech = baseline_mechanism("randomized_response", (3,), 1.0)
    >>> reports = LDPReports(np.array([0, 2, 1, 1]), mech)
    >>> len(reports), len(reports[:2]), len(LDPReports.concat([reports, reports]))
    (4, 2, 8)
    """

    def __init__(self, reports, mechanism, domain=None, workload=None):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(
                f"mechanism must be a mechanism object (e.g. from mechanism_from_json), got "
                f"{type(mechanism).__name__}."
            )
        self.reports = mechanism.check_reports(reports)
        self.mechanism = mechanism
        self.domain = domain
        self.workload = workload

    def __len__(self):
        return self.reports.shape[0]

    @property
    def shape(self):
        return self.reports.shape

    def __getitem__(self, key):
        """Row selection (slice, integer array or boolean mask) keeps the mechanism."""
        if isinstance(key, (int, np.integer)):
            key = slice(key, key + 1 if key != -1 else None)
        return LDPReports(self.reports[key], self.mechanism, self.domain, self.workload)

    def __array__(self, dtype=None, copy=None):
        return self.reports if dtype is None else self.reports.astype(dtype)

    @classmethod
    def concat(cls, parts):
        """Concatenate reports produced by the same mechanism (else a ValueError)."""
        parts = list(parts)
        if not parts:
            raise ValueError("concat needs at least one LDPReports.")
        first = parts[0]
        for part in parts[1:]:
            if part.mechanism != first.mechanism:
                raise ValueError(
                    "cannot concatenate reports from different mechanisms "
                    f"({first.mechanism!r} vs {part.mechanism!r})."
                )
        return cls(
            np.concatenate([part.reports for part in parts]),
            first.mechanism,
            first.domain,
            first.workload,
        )

    def __repr__(self):
        return f"LDPReports(n_users={len(self)}, mechanism={self.mechanism!r})"


class AggregatedReports:
    """The server's sufficient statistic of many reports, with the mechanism that made them.

    What :meth:`LDPEncoder.simulate <sklearn_ldp.encoder.LDPEncoder.simulate>` returns: the
    aggregate drawn directly from its exact distribution, statistically identical to
    ``mechanism.aggregate(encoder.transform(X).reports)`` but without one draw per user, so
    simulations with 10^8 or more users are cheap. Estimators fit on it like on
    :class:`LDPReports`. (It is also what a deployment would keep after aggregating the
    reports of one partition.)

    Parameters
    ----------
    statistic : ndarray
        The mechanism's additive statistic (see ``Mechanism.aggregate``).
    mechanism : Mechanism
    domain, workload : optional, as in :class:`LDPReports`.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ldp.mechanisms import RandomizedResponse
    >>> mechanism = RandomizedResponse(3, 1.0)
    >>> statistic = mechanism.simulate_statistic(np.array([10**8, 0, 0]),
    ...                                          np.random.default_rng(0))
    >>> len(AggregatedReports(statistic, mechanism))
    100000000
    """

    def __init__(self, statistic, mechanism, domain=None, workload=None):
        if not isinstance(mechanism, Mechanism):
            raise ValueError(f"mechanism must be a mechanism object, got "
                             f"{type(mechanism).__name__}.")
        self.statistic = np.asarray(statistic)
        self.mechanism = mechanism
        self.domain = domain
        self.workload = workload

    def __len__(self):
        return self.mechanism.n_reports(self.statistic)

    def __repr__(self):
        return f"AggregatedReports(n_users={len(self)}, mechanism={self.mechanism!r})"


def statistic_of(reports):
    """The additive statistic of LDPReports (aggregated now) or AggregatedReports."""
    if isinstance(reports, AggregatedReports):
        return reports.statistic
    return reports.mechanism.aggregate(reports.reports)


def check_same_mechanism(reports, mechanism):
    """Refuse reports that another mechanism (strategy, epsilon or domain) produced."""
    if reports.mechanism != mechanism:
        raise ValueError(
            "these reports come from a different mechanism than the ones already fitted "
            f"({reports.mechanism!r} vs {mechanism!r}); a different strategy, epsilon "
            "or domain cannot be mixed into one estimate."
        )
