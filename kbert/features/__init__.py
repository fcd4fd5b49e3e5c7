"""Feature extraction (the paper's §5.4 feature-based approach): ``kbert.features.extract`` holds
``FeatureExtractor``, the layer combinations of the paper's Table 7 and ``extract_arrays`` (rows of
text -> arrays); the command ``kbert features`` (``python -m kbert.features``) is
kbert/commands/features.py.

The library's names are reachable from here too (``from kbert.features import FeatureExtractor``),
loaded on first use so that the command's ``--help`` stays fast.
"""

from __future__ import annotations

import importlib

_EXPORTS = ("COMBINATIONS", "FeatureExtractor", "check_combinations", "combine_layers", "extract_arrays", "read_rows")
__all__ = list(_EXPORTS)


def __getattr__(name):
    if name in _EXPORTS:
        return getattr(importlib.import_module("kbert.features.extract"), name)
    raise AttributeError(f"module 'kbert.features' has no attribute {name!r}")
