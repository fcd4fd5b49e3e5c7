"""The tokenizer's files in an exported SavedModel, from the tokenizer interface (kbert.text.registry).

Every export keeps what TF Hub's BERT SavedModels hold: the ``vocab_file`` asset (the tokenizer's
``spec.vocab_file``: ``vocab.txt`` for WordPiece) and a ``do_lower_case`` bool variable. Other files
a tokenizer lists in ``asset_files`` are kept as ``tokenizer_assets`` (name -> asset). A tokenizer with
a Python step (the ``mecab-*`` types) exports its graph part: strings-in signatures then take words
(``kbert.tasks.core.words_inputs``).
"""

from __future__ import annotations

import os

import tensorflow as tf

from kbert.text.spec import TokenizerSpecError


def attach_tokenizer_assets(module, tokenizer, what: str, vocab_file=None) -> None:
    """Sets ``module.vocab_file``, ``module.do_lower_case`` (and ``module.tokenizer_assets``).

    ``vocab_file`` is only for a tokenizer built from a token list (which has no file of its own).
    """
    spec = tokenizer.spec
    files = dict(tokenizer.asset_files)
    if spec.vocab_file not in files:
        if vocab_file is None:
            raise TokenizerSpecError(f"{what}: the {spec.type!r} tokenizer has no {spec.vocab_file} file to export "
                                     "(it was built from a token list): build it from its file or a model directory")
        files[spec.vocab_file] = vocab_file
    module.vocab_file = tf.saved_model.Asset(os.fspath(files.pop(spec.vocab_file)))
    if spec.type != "wordpiece" and not hasattr(module, "tokenizer"):
        # The SavedModel keeps a kernel's resources (SentencePiece's model) only when an object that
        # owns them is tracked; WordPiece's tables are captured constants.
        module.tokenizer = tokenizer
    module.do_lower_case = tf.Variable(bool(spec.lower_case), trainable=False, name="do_lower_case")
    if files:
        module.tokenizer_assets = {name: tf.saved_model.Asset(os.fspath(path)) for name, path in sorted(files.items())}
