"""k-way marginals of several attributes (Kulkarni's thesis, chapter 4)."""
