"""kbert: BERT for Keras 3 on TensorFlow."""

import os as _os

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from kbert.config import BertConfig, ConfigError, PRESETS  # noqa: E402

__version__ = "0.1.0"
__all__ = ["BertConfig", "BertEncoder", "ConfigError", "PRESETS", "__version__"]


def __getattr__(name):
    # BertEncoder is imported on first use (PEP 562), so that importing any kbert module, e.g. a
    # command line's --help, does not start TensorFlow.
    if name == "BertEncoder":
        from kbert.models import BertEncoder

        return BertEncoder
    raise AttributeError(f"module 'kbert' has no attribute {name!r}")
