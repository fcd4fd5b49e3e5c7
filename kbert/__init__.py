"""kbert: BERT for Keras 3 on TensorFlow."""

import os as _os

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from kbert.config import BertConfig, ConfigError, PRESETS  # noqa: E402
from kbert.models import BertEncoder  # noqa: E402

__version__ = "0.1.0"
__all__ = ["BertConfig", "BertEncoder", "ConfigError", "PRESETS", "__version__"]
