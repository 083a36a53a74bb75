"""Range queries: hierarchical histograms, the Haar transform, their error bounds."""
