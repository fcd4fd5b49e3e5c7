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

The ``serving_default`` signature maps ``text`` [batch] strings to the three packed inputs.
"""

from __future__ import annotations

import os
import pathlib

import tensorflow as tf

from kbert.model_dir import METADATA_FILE, VOCAB_FILE, read_metadata
from kbert.text import BertPreprocessor

MAX_PACKED_SEGMENTS = 3


def resolve_vocab(model_dir_or_vocab, lower_case=None):
    """(vocab file, lower_case) for a model directory or a vocab.txt.

    ``lower_case=None`` takes ``do_lower_case`` from the model directory's ``kbert.json``
    (True where there is none, as for a bare vocab file).
    """
    path = pathlib.Path(model_dir_or_vocab)
    if path.is_dir():
        vocab_file = path / VOCAB_FILE
        if not vocab_file.is_file():
            raise FileNotFoundError(f"model directory {path} has no {VOCAB_FILE}")
        if lower_case is None:
            lower_case = read_metadata(path).get("do_lower_case", True)
            if not isinstance(lower_case, bool):
                raise ValueError(f"{path / METADATA_FILE}: field 'do_lower_case' must be true or false, "
                                 f"got {lower_case!r}")
    elif path.is_file():
        vocab_file = path
    else:
        raise FileNotFoundError(f"{path} is neither a model directory nor a vocab file")
    return vocab_file, True if lower_case is None else bool(lower_case)


def build_preprocessor_module(preprocessor: BertPreprocessor, vocab_file) -> tf.Module:
    """A tf.Module with TF Hub's preprocessor interface around ``preprocessor``."""
    tokenizer, packer = preprocessor.tokenizer, preprocessor.packer
    strings_spec = tf.TensorSpec([None], tf.string)

    module = tf.Module()
    module.vocab_file = tf.saved_model.Asset(os.fspath(vocab_file))
    module.do_lower_case = tf.Variable(preprocessor.lower_case, trainable=False, name="do_lower_case")
    module.seq_length = tf.Variable(preprocessor.seq_length, trainable=False, name="seq_length")

    def traced(fn, *specs):
        return tf.function(fn, input_signature=list(specs), autograph=False)

    module.__call__ = traced(lambda text: preprocessor(text), strings_spec)

    tokenize = tf.Module()
    tokenize.__call__ = traced(lambda text: tokenizer(text), strings_spec)
    tokenize.get_special_tokens_dict = traced(tokenizer.get_special_tokens_dict)
    module.tokenize = tokenize
    module.tokenize_with_offsets = traced(lambda text: tokenizer.tokenize_with_offsets(text), strings_spec)

    @tf.function(autograph=False)
    def bert_pack_inputs(segments, seq_length=None):
        return packer(list(segments), seq_length=seq_length)

    for num_segments in range(1, MAX_PACKED_SEGMENTS + 1):
        for rank in (3, 2):
            spec = [tf.RaggedTensorSpec([None] * rank, tf.int32, ragged_rank=rank - 1,
                                        row_splits_dtype=tf.int64)] * num_segments
            bert_pack_inputs.get_concrete_function(spec)
            bert_pack_inputs.get_concrete_function(spec, seq_length=tf.TensorSpec([], tf.int32))
    module.bert_pack_inputs = bert_pack_inputs
    return module


def export_preprocessor(model_dir_or_vocab, out_dir, lower_case=None, seq_length=128) -> str:
    """Writes the preprocessor SavedModel to ``out_dir`` and returns its path."""
    vocab_file, lower_case = resolve_vocab(model_dir_or_vocab, lower_case)
    preprocessor = BertPreprocessor(vocab_file, lower_case=lower_case, seq_length=seq_length)
    module = build_preprocessor_module(preprocessor, vocab_file)
    serving = tf.function(lambda text: preprocessor(text), autograph=False,
                          input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    out_dir = os.fspath(out_dir)
    from kbert.export.endpoints import add_keras_endpoints

    # TFSMLayer(out_dir, call_endpoint="serve" or "serving_default"): [batch] strings or {"text": ...}.
    add_keras_endpoints(module, lambda inputs: preprocessor(inputs["text"]),
                        {"text": tf.TensorSpec([None], tf.string, name="text")}, bare_key="text")
    tf.saved_model.save(module, out_dir, signatures={"serving_default": serving.get_concrete_function()})
    return out_dir
