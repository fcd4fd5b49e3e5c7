"""TF Hub-style BERT preprocessor SavedModel.

The SavedModel holds the same ``kbert.text.BertPreprocessor`` code that feeds training, traced
into graphs of TensorFlow and tensorflow-text ops, so it loads and runs in a process that only
imports ``tensorflow`` and ``tensorflow_text``:

    pre = tf.saved_model.load(path)
    pre(tf.constant(["a sentence"]))            # input_word_ids, input_mask, input_type_ids [batch, seq_length]
    ids = pre.tokenize(tf.constant([...]))        # int32 ragged [batch, words, pieces]
    pre.tokenize.get_special_tokens_dict()        # vocab_size, padding_id, start_of_sequence_id, ...
    pre.tokenize_with_offsets(strings)            # ids, start and end byte offsets
    pre.bert_pack_inputs([ids_a, ids_b], seq_length=64)   # 1-3 segments, any seq_length
    pre.vocab_file, pre.do_lower_case             # asset and variable, as TF Hub's preprocessors
                                                  # (the tokenizer's spec.vocab_file and lower_case)

The ``serving_default`` signature maps ``text`` [batch] strings to the three packed inputs.

For a tokenizer with a Python step (``mecab-*``) the strings are words, ``string [batch, words]``
(MeCab surfaces, rows padded with ""; ``kbert.tasks.core.words_inputs``): ``serving_default`` takes
``words``, ``__call__`` and ``tokenize`` take such a tensor (each row joined in the graph, then
tokenized as today), and there is no ``tokenize_with_offsets`` (its offsets are into the raw text,
which the SavedModel never sees).
"""

from __future__ import annotations

import os
import pathlib

import tensorflow as tf

from kbert.export.tokenizer_assets import attach_tokenizer_assets
from kbert.model_dir import METADATA_FILE, read_tokenizer_spec
from kbert.tasks.core.words_inputs import join_words, takes_words
from kbert.text import BertPreprocessor
from kbert.text.registry import create_tokenizer
from kbert.text.spec import TokenizerSpec
from kbert.api_export import kbert_export

MAX_PACKED_SEGMENTS = 3


def resolve_tokenizer(model_dir_or_vocab, lower_case=None, tokenizer_type=None):
    """The tokenizer of a model directory (its kbert.json spec) or of a vocabulary file.

    ``lower_case`` (None: the directory's spec; True for a bare file) and ``tokenizer_type``
    (None: the directory's; WordPiece for a bare file) override the spec.
    """
    path = pathlib.Path(model_dir_or_vocab)
    if path.is_dir():
        spec, directory = read_tokenizer_spec(path), path
        if not (path / spec.vocab_file).is_file():
            raise FileNotFoundError(f"model directory {path} has no {spec.vocab_file} "
                                    f"(the file {path / METADATA_FILE} names for its {spec.type!r} tokenizer)")
    elif path.is_file():
        spec, directory = TokenizerSpec(vocab_file=os.fspath(path.resolve())), None
    else:
        raise FileNotFoundError(f"{path} is neither a model directory nor a vocab file")
    changes = {k: v for k, v in (("lower_case", lower_case), ("type", tokenizer_type)) if v is not None}
    return create_tokenizer(spec.replace(**changes) if changes else spec, directory)


def build_preprocessor_module(preprocessor: BertPreprocessor, vocab_file=None) -> tf.Module:
    """A tf.Module with TF Hub's preprocessor interface around ``preprocessor``.

    The ``vocab_file`` asset is the tokenizer's file (``tokenizer.asset_files``); the argument is
    only needed for a tokenizer built from a token list. For a words-in tokenizer
    (``kbert.tasks.core.words_inputs``) ``__call__`` and ``tokenize`` take ``string [batch, words]``.
    """
    tokenizer, packer = preprocessor.tokenizer, preprocessor.packer
    strings_spec, strings = _strings_input(tokenizer)

    module = tf.Module()
    attach_tokenizer_assets(module, tokenizer, "preprocessor export", vocab_file)
    module.seq_length = tf.Variable(preprocessor.seq_length, trainable=False, name="seq_length")

    def traced(fn, *specs):
        return tf.function(fn, input_signature=list(specs), autograph=False)

    module.__call__ = traced(lambda text: preprocessor(strings(text), pre_tokenized=True), strings_spec)

    tokenize = tf.Module()
    tokenize.__call__ = traced(lambda text: tokenizer(strings(text), pre_tokenized=True), strings_spec)
    tokenize.get_special_tokens_dict = traced(tokenizer.get_special_tokens_dict)
    module.tokenize = tokenize
    if not takes_words(tokenizer):  # MeCab types: offsets into the raw text need the Python step
        module.tokenize_with_offsets = traced(lambda text: tokenizer.tokenize_with_offsets(text), strings_spec)

    @tf.function(autograph=False)
    def bert_pack_inputs(segments, seq_length=None):
        return packer(list(segments), seq_length=seq_length)

    for num_segments in range(1, MAX_PACKED_SEGMENTS + 1):
        for rank in (3, 2):
            spec = [tf.RaggedTensorSpec([None] * rank, tf.int32, ragged_rank=rank - 1,
                                        row_splits_dtype=tf.int64)] * num_segments
            bert_pack_inputs.get_concrete_function(spec)
            # Named as the save names it when it looks the trace up (unnamed, it traced each again).
            bert_pack_inputs.get_concrete_function(spec, seq_length=tf.TensorSpec([], tf.int32, name="seq_length"))
    module.bert_pack_inputs = bert_pack_inputs
    return module


def _strings_input(tokenizer):
    """(spec, fn): what the strings-in functions take, and what turns it into the tokenizer's
    strings: raw text [batch] as it is, or words [batch, words] joined (``join_words``)."""
    if takes_words(tokenizer):
        return tf.TensorSpec([None, None], tf.string, name="words"), join_words
    return tf.TensorSpec([None], tf.string, name="text"), lambda text: text


@kbert_export("kbert.export_preprocessor")
def export_preprocessor(model_dir_or_vocab, out_dir, lower_case=None, seq_length=128, tokenizer_type=None,
                        overwrite: bool = False) -> str:
    """Exports a tokenizer and packer as a TF Hub-style preprocessor SavedModel (strings in, ids out).

    Args:
        model_dir_or_vocab: a model directory (its tokenizer), or a ``vocab.txt``.
        out_dir: the SavedModel's folder, written whole (an earlier kbert export there is replaced,
            anything else refused unless ``overwrite``).
        lower_case: with a vocabulary only: True for uncased.
        seq_length: the packed length of ``default`` (``bert_pack_inputs`` takes any).
        tokenizer_type: with a vocabulary only: its tokenizer type (default ``wordpiece``).
        overwrite: replace a folder that holds something else.

    Returns:
        ``out_dir``, a string.

    Examples:
        >>> import kbert
        >>> kbert.export_preprocessor(kbert.random_model_dir("runs/tiny"), "saved_models/tiny_preprocessor/1",
        ...                           seq_length=16)
        'saved_models/tiny_preprocessor/1'
    """
    tokenizer = resolve_tokenizer(model_dir_or_vocab, lower_case, tokenizer_type)
    preprocessor = BertPreprocessor(tokenizer, seq_length=seq_length)
    from kbert.export.endpoints import add_keras_endpoints
    from kbert import compat
    from kbert.export.serving import write_export

    with compat.tracing_for_save():  # each function traced once, not again by the save
        module = build_preprocessor_module(preprocessor)
        spec, strings = _strings_input(tokenizer)  # words: MeCab's split, made by the client
        name = spec.name
        # The signature's input is named after the function's argument. It and the Keras endpoints
        # call module.__call__ (the same graph), traced once, rather than tracing the tokenizer and
        # packer again each.
        serving = tf.function((lambda words: module.__call__(words)) if name == "words"
                              else (lambda text: module.__call__(text)), autograph=False,
                              input_signature=[spec])
        # TFSMLayer(out_dir, call_endpoint="serve" or "serving_default"): the bare strings or {"text": ...}
        # ({"words": ...} and [batch, words] for a words-in tokenizer).
        add_keras_endpoints(module, lambda inputs: module.__call__(inputs[name]), {name: spec}, bare_key=name)
        signatures = {"serving_default": serving.get_concrete_function()}
    out_dir = os.fspath(out_dir)
    write_export(out_dir, lambda tmp: tf.saved_model.save(module, os.fspath(tmp), signatures=signatures),
                 kind="preprocessor", source=model_dir_or_vocab, overwrite=overwrite)
    return out_dir
