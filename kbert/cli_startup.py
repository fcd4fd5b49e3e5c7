"""A command's start-up without the optional integrations TensorFlow and Keras import eagerly.

``import tensorflow`` (which imports Keras) also imports, when they are installed, packages that only
serve features a kbert command never uses:

* scikit-learn, for ``keras.wrappers`` (Keras models as scikit-learn estimators);
* matplotlib, for ``keras.visualization`` (image galleries);
* IPython, for ``keras.saving.file_editor`` (a notebook display);
* JAX, for ``tf.lite``'s JAX converter and Keras' Orbax checkpoint callback (under any other
  backend than JAX).

Each is a guarded import there (``try: import x / except ImportError: x = None``), and together they
are about 40% of TensorFlow's import on a machine that has them all (4 s of 10 on two busy cores,
the measurement in docs/contributing.md), paid again by every command. ``decline_optional_imports``
installs an import hook that answers ImportError to those four packages when TensorFlow or Keras
asks for them, so they fall back as if not installed. Anyone else gets the real package: kbert's
own metrics import scikit-learn and its attention pictures matplotlib, a JAX run imports JAX, and
TensorFlow or Keras asking for a package that is already imported gets it. Only ``cli_support.run``
installs it (a command's own process); ``import kbert`` in a user's program changes nothing.
"""

from __future__ import annotations

import importlib.abc
import sys

from kbert.compat import keras_backend_while_importing  # imports nothing at module import

# Who asks (the asking module's top package) -> the packages declined to it (above). JAX is declined to
# Keras only while its backend is not JAX (_keras_runs_on_jax).
DECLINED = {"keras": frozenset({"sklearn", "matplotlib", "IPython", "jax"}), "tensorflow": frozenset({"jax"})}
_IMPORT_MACHINERY = ("importlib", "_frozen_importlib", "_frozen_importlib_external")


def _asker() -> str:
    """The module whose code is running the import (the first frame outside the import machinery)."""
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name != __name__ and name.split(".")[0] not in _IMPORT_MACHINERY:
            return name
        frame = frame.f_back
    return ""


def _keras_runs_on_jax() -> bool:
    """Keras' backend as its configuration has read it (KERAS_BACKEND, ~/.keras/keras.json); True while
    it is not read yet, so that nothing a JAX run needs is declined."""
    return keras_backend_while_importing() in (None, "jax")


class DeclineOptionalImports(importlib.abc.MetaPathFinder):
    """Answers ImportError when TensorFlow or Keras imports a package ``DECLINED`` to it that is not
    imported yet; every other import is left to the next finder."""

    def __init__(self):
        self.declined: set[str] = set()

    def find_spec(self, fullname, path=None, target=None):
        top = fullname.partition(".")[0]
        if top in sys.modules or not any(top in names for names in DECLINED.values()):
            return None
        asker = _asker()
        if top not in DECLINED.get(asker.partition(".")[0], ()):
            return None
        if top == "jax" and asker.startswith("keras") and _keras_runs_on_jax():
            return None
        self.declined.add(top)
        raise ModuleNotFoundError(f"a kbert command does not import {top} for {asker}", name=fullname)


def decline_optional_imports() -> DeclineOptionalImports:
    """Installs the hook (once per process) and returns it; ``hook.declined`` names what it declined."""
    for finder in sys.meta_path:
        if isinstance(finder, DeclineOptionalImports):
            return finder
    finder = DeclineOptionalImports()
    sys.meta_path.insert(0, finder)
    return finder
