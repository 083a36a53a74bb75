"""Shared pieces of the property-based fuzz tests (DESIGN.md section 7).

Every fuzz case must end accepted, or in a ``ValueError``/``TypeError`` with a message; any
other exception fails the test, and so does a case running past ``CASE_SECONDS`` (a SIGALRM
timer turns a hang into a failure instead of stalling the suite). ``SKLEARN_LDP_FUZZ_EXAMPLES``
in the environment raises the number of cases per property for a long run.
"""

import contextlib
import os
import signal
import warnings

from hypothesis import HealthCheck, settings

CASE_SECONDS = 10.0
ACCEPTABLE = (ValueError, TypeError)


def fuzz_settings(default_examples=60):
    """hypothesis settings of a fuzz property: ``default_examples`` cases unless the
    environment says otherwise, no per-example deadline (``time_limit`` bounds a case),
    derandomized so that CI runs are reproducible."""
    examples = int(os.environ.get("SKLEARN_LDP_FUZZ_EXAMPLES", str(default_examples)))
    return settings(max_examples=examples, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


FUZZ = fuzz_settings()


class CaseTimeout(Exception):
    """A fuzz case ran past CASE_SECONDS (raised by the SIGALRM handler)."""


@contextlib.contextmanager
def time_limit(seconds=CASE_SECONDS):
    """Raise CaseTimeout in the block after ``seconds`` of wall time."""
    def expire(signum, frame):
        raise CaseTimeout(f"a fuzz case ran longer than {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def outcome(call, *args, **kwargs):
    """Run ``call`` under the time limit: its result, or None after an acceptable error
    (which must carry a message)."""
    with time_limit(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return call(*args, **kwargs)
        except ACCEPTABLE as error:
            assert str(error), f"{type(error).__name__} without a message"
            return None


def mutate(value, data, leaves):
    """One random edit somewhere inside a JSON-like ``value`` (a spec): a dict entry replaced
    by a draw of ``leaves``, deleted, or edited recursively; a list item edited; a scalar
    replaced. ``data`` is hypothesis's ``st.data()``."""
    from hypothesis import strategies as st

    if isinstance(value, dict) and value:
        key = data.draw(st.sampled_from(sorted(value)))
        edited = dict(value)
        action = data.draw(st.sampled_from(["replace", "delete", "recurse"]))
        if action == "delete":
            del edited[key]
        elif action == "replace":
            edited[key] = data.draw(leaves)
        else:
            edited[key] = mutate(value[key], data, leaves)
        return edited
    if isinstance(value, list) and value:
        index = data.draw(st.integers(0, len(value) - 1))
        edited = list(value)
        edited[index] = mutate(value[index], data, leaves)
        return edited
    return data.draw(leaves)
