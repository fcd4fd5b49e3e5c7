"""``python -m kbert.pretrain``: the command ``kbert pretrain`` (it lives in ``kbert/commands/pretrain.py``).

Kept so that ``python -m kbert.pretrain ARGS...`` works as the design and the lectures write it; run
so, it imports nothing before the command does.

Imported instead (``import kbert.pretrain``, or a tool that imports every module of the package), it
must not hide the public function ``kbert.pretrain`` behind this module: once a submodule has run, Python
binds the package's attribute of that name to what ``sys.modules`` holds for it, so this module
puts the function there.
"""

import sys

if __name__ == "__main__":
    from kbert.cli import main

    sys.exit(main(["pretrain", *sys.argv[1:]]))
else:
    from kbert.training.pretrain import pretrain as _public

    sys.modules[__name__] = _public
