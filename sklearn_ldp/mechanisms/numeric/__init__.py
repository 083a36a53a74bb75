"""Bounded numeric values: mean and distribution estimation on a public grid."""
