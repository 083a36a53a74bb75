"""What every mechanism shares: the contract, exact sampling, bits, hashing, laws."""
