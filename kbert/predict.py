"""``python -m kbert.predict``: the command ``kbert predict`` (it lives in ``kbert/commands/predict.py``).

Kept so that ``python -m kbert.predict ARGS...`` works as the design and the lectures write it; it
imports nothing until it runs as the program.
"""

if __name__ == "__main__":
    import sys

    from kbert.cli import main

    sys.exit(main(["predict", *sys.argv[1:]]))
