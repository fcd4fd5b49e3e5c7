"""Feature extraction (the paper's §5.4 feature-based approach): ``kbert.features.extract`` holds
``FeatureExtractor``, the layer combinations of the paper's Table 7 and ``extract_arrays`` (rows of
text -> arrays); the command ``kbert features`` (``python -m kbert.features``) is
kbert/commands/features.py.

The library's names are reachable from here too (``from kbert.features import FeatureExtractor``),
loaded on first use (``kbert.api_export``) so that the command's ``--help`` stays fast.
"""

from kbert.api_export import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
