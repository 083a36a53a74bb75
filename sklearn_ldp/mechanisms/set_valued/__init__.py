"""Set-valued data: each user holds a set of items (padding and sampling, SVIM)."""
