"""The order in which the suite's two workers take its test files.

pyproject.toml's ``addopts`` run the suite on two workers, a whole file at a time each
(``--dist loadfile``), in collection order (``--no-loadscope-reorder``: xdist's default order
is by number of tests, which puts the files of a few long tests last, where one of them keeps
a worker busy long after the other has finished). Here the longest files are collected first
(longest-processing-time-first scheduling), so that the short files at the end fill in around
them and the two workers finish together. Every test still runs, in its file's own order.
"""

# The longest files, longest first: seconds of one file on the 2-core machine at a load
# average of 5 to 7 (``python -m pytest --durations=0``, summed per file). A file not listed
# keeps its alphabetical place after these; a stale entry only costs balance, never a test.
LONGEST_FIRST = [
    "test_doc_code_blocks.py",             # 294
    "test_heavy_hitter_std_error.py",      # 285
    "test_spark.py",                       # 276
    "test_js_client.py",                   # 212
    "test_marginal_estimator.py",          # 193
    "test_central.py",                     # 186
    "test_bassily.py",                     # 179
    "test_hadamard_structured.py",         # 171
    "test_privacy_audit.py",               # 161
    "test_numeric_selection.py",           # 121
    "test_exact_gaussian.py",              # 99
    "test_optimized_never_worse.py",       # 98
    "test_heavy_hitter_estimator.py",      # 88
    "test_rappor.py",                      # 77
    "test_client_new_kinds.py",            # 76
    "test_optimizer.py",                   # 75
    "test_longitudinal.py",                # 73
    "test_longitudinal_front.py",          # 72
    "test_multi_attribute_estimators.py",  # 70
    "test_large_domains.py",               # 70
]


def pytest_collection_modifyitems(config, items):
    rank = {name: position for position, name in enumerate(LONGEST_FIRST)}
    # A stable sort: the tests of one file keep their order (and their module fixtures).
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
