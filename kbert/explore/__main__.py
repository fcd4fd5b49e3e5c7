"""``python -m kbert.explore``: the command ``kbert explore`` (it lives in ``kbert/commands/explore.py``).

Kept so that ``python -m kbert.explore ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["explore", *sys.argv[1:]]))
