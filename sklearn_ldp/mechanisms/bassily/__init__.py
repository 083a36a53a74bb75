"""Bassily's protocols for linear queries (AISTATS 2019): Gaussian randomizers."""
