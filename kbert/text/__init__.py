"""BERT's input side in the TensorFlow graph: tokenizer, packer, preprocessor, vocabularies.

The names below are imported on first use (PEP 562, ``kbert.api_export``): the spec and the registry
need no TensorFlow, so a command's ``--help`` stays fast.
"""

from kbert.api_export import face as _face

__getattr__, __dir__, __all__ = _face(__name__)
