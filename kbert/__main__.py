"""``python -m kbert COMMAND ...``: the same as the ``kbert`` command (see kbert.cli)."""

import sys

from kbert.cli import main

if __name__ == "__main__":
    sys.exit(main())
