"""``python -m kbert.pretrain``: the command ``kbert pretrain`` (it lives in ``kbert/commands/pretrain.py``).

Kept so that ``python -m kbert.pretrain ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["pretrain", *sys.argv[1:]]))
