"""kbert's commands, one module per subcommand (``kbert NAME`` = ``python -m kbert.NAME``).

Each module parses its flags before it imports TensorFlow (so ``--help`` and flag errors are
instant), turns them into the typed options of a library function (``kbert.training``,
``kbert.export``, ``kbert.convert``, ...) and prints what that function returns. No library module
parses flags or exits the process (tests/repo/test_layering.py checks it; the benchmarks under
kbert/bench/ are programs of their own, run as ``kbert bench NAME``). ``kbert.cli`` maps names to
these modules; ``kbert.cli_support.run`` wraps their ``main(argv)`` (quiet start-up, one-line
errors, ``--verbose``).
"""
