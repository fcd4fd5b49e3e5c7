"""BertPreprocessor: strings -> BERT's inputs, the TF Hub BERT preprocessing contract.

``preprocessor(strings)`` or ``preprocessor([strings_a, strings_b])`` gives ``input_word_ids``,
``input_mask`` and ``input_type_ids`` (int32 [batch, seq_length]); ``.tokenize(strings)`` the
ragged ids [batch, words, pieces] (with ``.tokenize.get_special_tokens_dict()``), and
``.bert_pack_inputs(segments, seq_length=N)`` packs tokenized segments to any length.
"""

from __future__ import annotations

import keras
import tensorflow as tf

from kbert.text.inputs import as_string_tensor, shard_rows
from kbert.text.packer import BertPacker
from kbert.text.tokenizer import BertTokenizer


class BertPreprocessor(keras.layers.Layer):
    """Tokenizer + packer as one Keras layer.

    Args:
      vocab: path to ``vocab.txt`` or a list of tokens.
      lower_case: True for uncased models.
      seq_length: length of the packed outputs (default 128, as TF Hub).
      truncator: "round_robin" (default) or "waterfall", see ``BertPacker``.
      tokenizer: a tokenizer of any registered type (``kbert.text.registry``) instead of
        ``vocab``/``lower_case``.
    """

    def __init__(self, vocab=None, lower_case=True, seq_length=128, truncator="round_robin", tokenizer=None,
                 **kwargs):
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if tokenizer is None:
            tokenizer = BertTokenizer(vocab, lower_case=lower_case, name="tokenizer")
        self.tokenizer = tokenizer
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

    def call(self, inputs, seq_length=None):
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
        if tf.executing_eagerly():  # the tokenizer's graph shards the batch itself
            return self.packer([self.tokenizer(s) for s in segments], seq_length=seq_length)

        def preprocess(*rows):
            return self.packer([self.tokenizer.tokenize_serial(s) for s in rows], seq_length=seq_length)

        # Tokenize and pack slices of the batch in parallel (a concat of dense outputs after).
        return shard_rows(preprocess, segments, self.tokenizer.shards)

    def get_config(self):
        config = super().get_config()
        config.update(vocab=self.tokenizer.get_vocabulary(), lower_case=self.lower_case,
                      seq_length=self.seq_length, truncator=self.packer.truncator)
        return config


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
