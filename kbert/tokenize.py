"""``python -m kbert.tokenize``: the command ``kbert tokenize`` (it lives in ``kbert/commands/tokenize.py``).

Kept so that ``python -m kbert.tokenize ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["tokenize", *sys.argv[1:]]))
