"""``python -m jaximp``: the same as the ``jaximp`` command."""

import sys

from ._cli import main

if __name__ == "__main__":
    sys.exit(main())
