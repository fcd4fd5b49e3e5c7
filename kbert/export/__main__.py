"""``python -m kbert.export``: the command ``kbert export`` (it lives in ``kbert/commands/export.py``).

Kept so that ``python -m kbert.export ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["export", *sys.argv[1:]]))
