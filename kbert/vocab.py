"""``python -m kbert.vocab``: the command ``kbert vocab`` (it lives in ``kbert/commands/vocab.py``).

Kept so that ``python -m kbert.vocab ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["vocab", *sys.argv[1:]]))
