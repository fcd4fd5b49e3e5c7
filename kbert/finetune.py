"""``python -m kbert.finetune``: the command ``kbert finetune`` (it lives in ``kbert/commands/finetune.py``).

Kept so that ``python -m kbert.finetune ARGS...`` works as the design and the lectures write it; run
so, it imports nothing before the command does.

Imported instead (``import kbert.finetune``, or a tool that imports every module of the package), it
must not hide the public function ``kbert.finetune`` behind this module: once a submodule has run, Python
binds the package's attribute of that name to what ``sys.modules`` holds for it, so this module
puts the function there.
"""

import sys

if __name__ == "__main__":
    from kbert.cli import main

    sys.exit(main(["finetune", *sys.argv[1:]]))
else:
    from kbert.training.finetune import finetune as _public

    sys.modules[__name__] = _public
