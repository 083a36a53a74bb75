"""Frequencies of several categorical attributes per user."""
