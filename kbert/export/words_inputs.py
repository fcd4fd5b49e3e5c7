"""Exports of tokenizers with a Python step (``in_graph`` False: the ``mecab-*`` types): words in.

A SavedModel cannot run MeCab, so for such a tokenizer every strings-in signature takes what
``tokenizer.pre_tokenize`` returns instead of the raw text: per text ONE string holding its words
(MeCab surfaces of the NFKC-normalised text; a special token written in the text, ``[MASK]`` or
``[SEP]``, is a word of its own) joined by one ASCII space. NFKC is the client's (``pre_tokenize``
applies it before MeCab, as transformers' ``BertJapaneseTokenizer`` does); the graph splits at the
spaces and does the rest (WordPiece within each word, or one token per character; packing; the
model). One string per text keeps the request's shape that of a raw-text model's, and rows of
different word counts need no padding (TF Serving's row format stacks equal shapes only).

The inputs are renamed so that a request with raw text fails ("missing input 'words'") instead of
being tokenized wrongly (``words_name``):

    text -> words        text_a -> words_a        text_b -> words_b        any other X -> X_words
                                                  (multiple_choice: context_words, choices_words)

A client makes the request with ``words_request(tokenizer, {"text": [...]})`` (this module),
``python -m kbert.tokenize MODEL_DIR --words`` (one ``{"words": ...}`` per input line), or the few
fugashi lines in README "Japanese". ``serving_ids`` (ids in) is the same for every tokenizer type.
Signatures that answer with character offsets into the raw text (``span_qa``, ``token_tagger``)
answer in word indices instead, for the SavedModel never sees that text (kbert.export.words_answers).
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kbert.text.pre_tokenize import needs_pre_tokenize


def takes_words(tokenizer) -> bool:
    """True when an export of ``tokenizer`` takes words (its ``pre_tokenize`` output), not raw text."""
    return needs_pre_tokenize(tokenizer)


def words_name(name: str) -> str:
    """The input name a words-in signature gives a raw-text input ``name`` (see the module docstring)."""
    if name == "text":
        return "words"
    if name.startswith("text_"):
        return "words_" + name[len("text_"):]
    return name + "_words"


def words_request(tokenizer, inputs: dict) -> dict:
    """A raw-text request ``{input name: text or (nested) list of texts}`` -> the words request an
    export of ``tokenizer`` takes: every text through ``tokenizer.pre_tokenize``, names renamed with
    ``words_name``. For an in-graph tokenizer the request is returned unchanged."""
    if not takes_words(tokenizer):
        return dict(inputs)
    out = {}
    for name, value in inputs.items():
        array = np.asarray(value, dtype=object)
        flat = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in array.reshape(-1)]
        words = np.asarray(tokenizer.pre_tokenize(flat) if flat else [], dtype=object).reshape(array.shape)
        out[words_name(name)] = words.tolist() if isinstance(value, (list, tuple)) else (
            words.item() if array.ndim == 0 else words)
    return out


def join_words(words):
    """``string [..., words]`` (rows padded with "" at the end) -> ``string [...]``: each row's words
    joined by one space, the form the in-graph part of a words-in tokenizer splits again. MeCab
    surfaces never hold whitespace, so the join is lossless."""
    joined = tf.strings.reduce_join(words, axis=-1, separator=" ")
    return tf.strings.strip(tf.strings.regex_replace(joined, " +", " "))


def words_signature(serve):
    """``serve`` (a tf.function taking one dict of named string tensors) with its inputs renamed by
    ``words_name``: the same graph, fed with the words strings."""
    spec = serve.input_signature[0]
    renamed = {words_name(name): tf.TensorSpec(s.shape, s.dtype, name=words_name(name)) for name, s in spec.items()}

    @tf.function(input_signature=[renamed])
    def serve_words(inputs):
        return serve({name: inputs[words_name(name)] for name in spec})

    return serve_words
