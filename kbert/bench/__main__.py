"""``python -m kbert.bench``: the command ``kbert bench`` (it lives in ``kbert/commands/bench.py``).

Kept so that ``python -m kbert.bench ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["bench", *sys.argv[1:]]))
