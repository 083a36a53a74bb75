"""The LDP workload factorization mechanism: a strategy matrix, sampled exactly."""
