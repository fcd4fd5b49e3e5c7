"""BertPreprocessor: strings -> BERT's inputs, the TF Hub BERT preprocessing contract.

``preprocessor(strings)`` or ``preprocessor([strings_a, strings_b])`` gives ``input_word_ids``,
``input_mask`` and ``input_type_ids`` (int32 [batch, seq_length]); ``.tokenize(strings)`` the
ragged ids [batch, words, pieces] (with ``.tokenize.get_special_tokens_dict()``), and
``.bert_pack_inputs(segments, seq_length=N)`` packs tokenized segments to any length.

The strings are RAW texts, as for the tokenizer (kbert.text.tokenizer_layer): a tokenizer with a
Python step (MeCab) runs ``pre_tokenize`` on them when the preprocessor is called eagerly, and
inside a graph raw texts are refused (``TokenizerInputError``); ``pre_tokenized=True`` says they are
``pre_tokenize()``'s output already, which is what task models, feature extraction, pre-training
data and exports give the graph.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from kbert import compat
from kbert.text.inputs import as_string_tensor, shard_rows
from kbert.text.packer import BertPacker
from kbert.text.pre_tokenize import needs_pre_tokenize
from kbert.text.registry import as_tokenizer, is_tokenizer
from kbert.text.tokenizer import BertTokenizer
from kbert.text.tokenizer_layer import TokenizerInputError
from kbert.api_export import kbert_export


@kbert_export("kbert.BertPreprocessor", "kbert.text.BertPreprocessor")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizer + packer as one Keras layer.

    Args:
      tokenizer: a tokenizer object (``kbert.text.load_tokenizer(model_dir)``,
        ``create_tokenizer(spec, dir)``, any registered type). For backwards compatibility a
        ``vocab.txt`` path or token list is taken too, as WordPiece with ``lower_case``
        (``BertPreprocessor.from_vocab(vocab, lower_case)`` says so explicitly).
      lower_case: only with a vocabulary: True for uncased models (default).
      tokenizer_options: only with a vocabulary: the WordPiece options of ``kbert.text.tokenizer.BertTokenizer``
        (``strip_accents``, ``tokenize_chinese_chars``, ``max_chars_per_word``, ``rules``).
      seq_length: length of the packed outputs (default 128, as TF Hub).
      truncator: "round_robin" (default) or "waterfall", see ``BertPacker``.
      vocab: the old keyword for a vocabulary (same as passing it as ``tokenizer``).

    The texts it takes are raw texts, for every tokenizer type. A tokenizer with a Python step
    (``tokenizer.in_graph`` False: MeCab) runs it on them when the preprocessor is called eagerly;
    inside a graph (``tf.function``, a ``tf.data`` map, a Keras functional model) it cannot, and raw
    texts are refused with ``TokenizerInputError`` (``kbert.text.tokenizer_layer``, a
    ``kbert.Error``): give the graph ``tokenizer.pre_tokenize``'s strings and call
    ``preprocessor(strings, pre_tokenized=True)``.

    Examples:
        >>> import kbert
        >>> preprocessor = kbert.BertPreprocessor(kbert.load_tokenizer(kbert.random_model_dir("runs/tiny")),
        ...                                       seq_length=8)
        >>> packed = preprocessor(["the quick fox"])
        >>> packed["input_word_ids"].numpy().tolist(), packed["input_mask"].numpy().tolist()
        ([[2, 12, 51, 53, 3, 0, 0, 0]], [[1, 1, 1, 1, 1, 0, 0, 0]])
    """

    def __init__(self, tokenizer=None, lower_case=None, seq_length=128, truncator="round_robin", vocab=None,
                 tokenizer_options=None, **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        compat.accept_raw_call_inputs(self)
        if vocab is not None:
            if tokenizer is not None:
                raise ValueError("BertPreprocessor: pass a tokenizer or vocab=, not both")
            tokenizer = vocab
        if is_tokenizer(tokenizer) or tokenizer is None:
            self.tokenizer = as_tokenizer(tokenizer, lower_case, "BertPreprocessor")
        else:  # a vocabulary (backwards compatibility)
            self.tokenizer = BertTokenizer(tokenizer, lower_case=True if lower_case is None else lower_case,
                                           name="tokenizer", **(tokenizer_options or {}))
        ids = self.tokenizer.special_token_ids
        self.packer = BertPacker(
            seq_length,
            start_of_sequence_id=ids["start_of_sequence_id"],
            end_of_segment_id=ids["end_of_segment_id"],
            padding_id=ids["padding_id"],
            truncator=truncator,
            name="packer",
        )
        self.built = True

    @classmethod
    def from_vocab(cls, vocab, lower_case=True, **kwargs):
        """A WordPiece preprocessor from ``vocab.txt`` (or a token list) and ``lower_case``."""
        return cls(BertTokenizer(vocab, lower_case=lower_case, name="tokenizer"), **kwargs)

    @property
    def tokenize(self):
        """The tokenizer layer: ``.tokenize(strings)``, ``.tokenize.get_special_tokens_dict()``."""
        return self.tokenizer

    @property
    def seq_length(self) -> int:
        return self.packer.seq_length

    @property
    def lower_case(self) -> bool:
        return self.tokenizer.lower_case

    def bert_pack_inputs(self, segments, seq_length=None):
        return self.packer(segments, seq_length=seq_length)

    def call(self, inputs, seq_length=None, word_starts=False, pre_tokenized=False, random_cut=False):
        """``word_starts``: also return ``word_starts`` (int32 [batch, seq_length], 1 where a token
        begins one of the tokenizer's words; see ``BertPacker``), for whole-word masking.
        ``pre_tokenized``: the strings are ``tokenizer.pre_tokenize()``'s output, not raw texts (see
        the class docstring; for in-graph tokenizers it changes nothing). ``random_cut``: segments
        that do not fit lose tokens at both ends at random, as pre-training data (``BertPacker``)."""
        if isinstance(inputs, dict):
            raise TypeError("BertPreprocessor expects strings or a list of string tensors, got a dict")
        # A list of tensors (or of lists of strings) is a list of segments; a list of Python
        # strings is one batch.
        is_segment_list = isinstance(inputs, (list, tuple)) and not all(
            isinstance(x, (str, bytes)) for x in inputs)
        segments = list(inputs) if is_segment_list else [inputs]
        if not segments:
            raise ValueError("BertPreprocessor needs at least one segment of strings")
        segments = [_as_batch(s, i) for i, s in enumerate(segments)]
        if tf.executing_eagerly():  # the tokenizer runs its Python step, and its graph shards the batch itself
            return self.packer([self.tokenizer(s, pre_tokenized=pre_tokenized) for s in segments],
                               seq_length=seq_length, word_starts=word_starts, random_cut=random_cut)
        if not pre_tokenized and needs_pre_tokenize(self.tokenizer):
            raise TokenizerInputError(
                f"BertPreprocessor ({self.tokenizer.spec.type!r} tokenizer): got raw text inside a TensorFlow graph, "
                "where the tokenizer's Python step (pre_tokenize) cannot run; call it eagerly, or give the graph "
                "tokenizer.pre_tokenize()'s strings with pre_tokenized=True (tf.data: "
                "kbert.text.pre_tokenize.pre_tokenize_tensor)")

        def preprocess(*rows):
            return self.packer([self.tokenizer.tokenize_serial(s, pre_tokenized=True) for s in rows], seq_length=seq_length,
                               word_starts=word_starts, random_cut=random_cut)

        # Tokenize and pack slices of the batch in parallel (a concat of dense outputs after).
        return shard_rows(preprocess, segments, getattr(self.tokenizer, "shards", 1))

    def get_config(self):
        config = super().get_config()
        config.update(seq_length=self.seq_length, truncator=self.packer.truncator)
        if type(self.tokenizer) is BertTokenizer:  # the config of earlier versions
            config.update(vocab=self.tokenizer.get_vocabulary(), lower_case=self.lower_case)
            if self.tokenizer.options:  # strip_accents, rules, ... (kbert.text.tokenizer.SPEC_OPTIONS)
                config.update(tokenizer_options=dict(self.tokenizer.options))
        else:
            config.update(tokenizer=keras.saving.serialize_keras_object(self.tokenizer))
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("tokenizer"), dict):
            config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)


def _as_batch(strings, index):
    """A [batch] string tensor; [batch, 1] (Keras' usual string input) is squeezed."""
    tensor = as_string_tensor(strings, f"BertPreprocessor (segment {index})")
    if isinstance(tensor, tf.RaggedTensor):
        raise ValueError(f"BertPreprocessor segment {index}: expected a dense [batch] string tensor, "
                         f"got a RaggedTensor of rank {tensor.shape.rank}")
    rank = tensor.shape.rank
    if rank == 2 and tensor.shape[1] == 1:
        return tf.squeeze(tensor, axis=1)
    if rank != 1:
        raise ValueError(f"BertPreprocessor segment {index}: expected strings of shape [batch], "
                         f"got shape {tensor.shape}")
    return tensor
