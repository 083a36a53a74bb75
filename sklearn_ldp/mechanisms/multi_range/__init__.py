"""Multi-dimensional range queries over numeric attributes: TDG and HDG (Yang et al. 2020)."""
