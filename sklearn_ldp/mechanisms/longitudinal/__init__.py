"""Collection repeated over time: memoized and instantaneous randomization."""
