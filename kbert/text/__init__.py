"""BERT's input side in the TensorFlow graph: tokenizer, packer, preprocessor, vocabularies.

The names below are imported on first use (PEP 562): the spec, the registry and the command-line
flags (``kbert.text.cli_args``) need no TensorFlow, so a command's ``--help`` stays fast.
"""

import importlib

_HOMES = {
    "BertPacker": "kbert.text.packer",
    "BertPreprocessor": "kbert.text.preprocessor",
    "BertTokenizer": "kbert.text.tokenizer",
    "TokenizerSpec": "kbert.text.spec",
    "create_tokenizer": "kbert.text.registry",
    "load_tokenizer": "kbert.text.registry",
    "register_tokenizer": "kbert.text.registry",
    "VocabError": "kbert.text.vocab",
    "load_vocab": "kbert.text.vocab",
    "special_token_ids": "kbert.text.vocab",
}
__all__ = sorted(_HOMES)


def __getattr__(name):
    if name in _HOMES:
        return getattr(importlib.import_module(_HOMES[name]), name)  # module names from a fixed table
    raise AttributeError(f"module 'kbert.text' has no attribute {name!r}")
