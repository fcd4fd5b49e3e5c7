"""``python -m kbert.convert``: the command ``kbert convert`` (it lives in ``kbert/commands/convert.py``).

Kept so that ``python -m kbert.convert ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["convert", *sys.argv[1:]]))
