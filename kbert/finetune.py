"""``python -m kbert.finetune``: the command ``kbert finetune`` (it lives in ``kbert/commands/finetune.py``).

Kept so that ``python -m kbert.finetune ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["finetune", *sys.argv[1:]]))
