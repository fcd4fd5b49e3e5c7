"""kbert: BERT for Keras 3 on TensorFlow.

Every public object is ``kbert.NAME`` (a few also ``kbert.text.NAME``, ``kbert.tasks.NAME``,
``kbert.features.NAME``, ``kbert.explore.NAME``), declared where it is defined with
``kbert.api_export.kbert_export`` and imported on first use (PEP 562), so that ``import kbert``
and every command's ``--help`` start without TensorFlow. ``dir(kbert)`` lists them; the API
reference (docs/api/) documents each.
"""

import os as _os

_os.environ.setdefault("KERAS_BACKEND", "tensorflow")

from kbert.api_export import face as _face  # noqa: E402

__version__ = "0.1.0"
__getattr__, __dir__, _names = _face(__name__)
__all__ = [*_names, "__version__"]
