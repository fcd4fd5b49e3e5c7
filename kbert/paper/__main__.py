"""``python -m kbert.paper``: the command ``kbert paper`` (kbert/commands/paper.py)."""

import sys

if __name__ == "__main__":
    from kbert.cli import main

    sys.exit(main(["paper", *sys.argv[1:]]))
