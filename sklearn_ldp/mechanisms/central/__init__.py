"""The central model: matrix mechanism, its strategies, count data, discrete Gaussian."""
