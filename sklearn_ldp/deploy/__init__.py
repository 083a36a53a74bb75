"""Deployment: the device client, report files, collection, distributed aggregation,
the budget ledger and the size limits."""
