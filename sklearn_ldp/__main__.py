"""``python -m sklearn_ldp``: the ``sklearn-ldp`` command line (:mod:`sklearn_ldp.cli`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
