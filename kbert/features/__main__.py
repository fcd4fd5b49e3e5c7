"""``python -m kbert.features``: the command ``kbert features`` (it lives in ``kbert/commands/features.py``).

Kept so that ``python -m kbert.features ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["features", *sys.argv[1:]]))
