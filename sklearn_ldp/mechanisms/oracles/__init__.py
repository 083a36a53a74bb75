"""Frequency oracles: one categorical value per user, a histogram estimate."""
