"""Feature extraction (the paper's §5.4 feature-based approach): contextual token vectors from
every layer of a frozen encoder, and the layer combinations of its Table 7, in one call.

"Layers" are the embedding output (word + position + type embeddings after LayerNorm: the input
of the first Transformer block, taken from ``encoder.embeddings``) followed by the L block outputs
(the encoder's ``encoder_outputs``); L + 1 tensors, as Hugging Face's ``hidden_states``.
Combinations (all [batch, seq, H] except the concat, [batch, seq, 4H]):

  embeddings             layer 0, the embedding output
  second_to_last_hidden  block L-1
  last_hidden            block L (= sequence_output)
  sum_last_four_hidden   blocks L-3 .. L, summed
  concat_last_four_hidden  blocks L-3 .. L, concatenated on the feature axis (in that order)
  sum_all_layers         the embedding output and all L blocks, summed (the paper's "all 12
                         layers" of BERT-Base; here L + 1 tensors)

The paper's table says "weighted sum"; the weights are not given, so these are plain sums (the
feature-based model on top can learn a scalar mix from ``hidden_states`` if it wants one).
"""

from __future__ import annotations

import pathlib

import keras
import numpy as np
import tensorflow as tf

from kbert import compat
from kbert.model_dir import load_encoder
from kbert.tasks.base import trim_to_longest
from kbert.tasks.text_inputs import take_rows, text_lengths, text_segments
from kbert.text import BertPreprocessor
from kbert.text.pre_tokenize import pre_tokenize_data
from kbert.text.registry import load_tokenizer


def _sum(tensors):
    total = tensors[0]
    for t in tensors[1:]:
        total = total + t
    return total


COMBINATIONS = {
    "embeddings": lambda layers: layers[0],
    "second_to_last_hidden": lambda layers: layers[-2],
    "last_hidden": lambda layers: layers[-1],
    "sum_last_four_hidden": lambda layers: _sum(layers[-4:]),
    "concat_last_four_hidden": lambda layers: tf.concat(layers[-4:], axis=-1),
    "sum_all_layers": lambda layers: _sum(layers),
}
_NEEDS_BLOCKS = {"second_to_last_hidden": 2, "sum_last_four_hidden": 4, "concat_last_four_hidden": 4}


def check_combinations(names, num_blocks: int) -> tuple:
    for name in names:
        if name not in COMBINATIONS:
            raise ValueError(f"unknown combination {name!r}; expected one of {list(COMBINATIONS)}")
        if num_blocks < _NEEDS_BLOCKS.get(name, 1):
            raise ValueError(f"combination {name!r} needs {_NEEDS_BLOCKS[name]} Transformer blocks; "
                             f"the encoder has {num_blocks}")
    return tuple(names)


def combine_layers(layers, names=tuple(COMBINATIONS)) -> dict:
    """The named combinations of ``layers`` ([embedding output, block 1, ..., block L])."""
    check_combinations(names, len(layers) - 1)
    return {name: COMBINATIONS[name](list(layers)) for name in names}


class FeatureExtractor(keras.Model):
    """Strings (one text, or a pair as ``{"text_a", "text_b"}``) -> per-token features.

    ``call`` returns ``hidden_states`` ([L + 1, batch, seq, H]: embedding output, then each
    block), ``input_mask`` [batch, seq] and one entry per combination in ``combinations``.
    Dropout is off (``training=False`` always): the encoder is a frozen feature source.

    ``tokenizer``: a tokenizer object (``kbert.text.load_tokenizer(model_dir)``), or a vocabulary
    with ``lower_case`` (WordPiece, as before). ``extract`` runs a tokenizer's Python step
    (``pre_tokenize``) itself; ``call`` takes its output.
    """

    def __init__(self, encoder, tokenizer, lower_case=None, seq_length=128, num_segments=1,
                 combinations=tuple(COMBINATIONS), dynamic_length=True, **kwargs):
        super().__init__(**kwargs)
        compat.accept_raw_call_inputs(self)
        self.encoder = encoder
        self.preprocessor = BertPreprocessor(tokenizer, lower_case=lower_case, seq_length=seq_length)
        self.num_segments = int(num_segments)
        self.dynamic_length = bool(dynamic_length)
        self.combinations = check_combinations(combinations, encoder.config.num_hidden_layers)
        # One pass for all layers: the embeddings layer's output is a node of the encoder's graph.
        self.all_layers = keras.Model(encoder.inputs,
                                      [encoder.embeddings.output, *encoder.output["encoder_outputs"]])

    @classmethod
    def from_model_dir(cls, model_dir, **kwargs):
        model_dir = pathlib.Path(model_dir)
        return cls(load_encoder(model_dir), load_tokenizer(model_dir), **kwargs)

    @property
    def tokenizer(self):
        return self.preprocessor.tokenizer

    def call(self, inputs, training=None):
        packed = self.preprocessor(text_segments(inputs, self.num_segments, "FeatureExtractor"))
        if self.dynamic_length:
            packed = trim_to_longest(packed)
        layers = self.all_layers(packed, training=False)
        return {"hidden_states": tf.stack(layers), "input_mask": packed["input_mask"],
                **combine_layers(layers, self.combinations)}

    def extract(self, inputs, batch_size=32) -> dict:
        """``call`` over many examples: numpy arrays padded to the longest example (padding
        positions are zeros), rows in input order (batched by length for speed)."""
        lengths = text_lengths(inputs, self.num_segments)
        order = np.argsort(lengths, kind="stable")
        step = tf.function(self.call, reduce_retracing=True)
        parts = []
        for start in range(0, len(order), batch_size):
            batch = pre_tokenize_data(self.tokenizer, take_rows(inputs, order[start:start + batch_size]))
            if isinstance(batch, dict):
                batch = {k: tf.constant(list(v), tf.string) for k, v in batch.items()}
            elif isinstance(batch, tuple):
                batch = tuple(tf.constant(list(v), tf.string) for v in batch)
            else:
                batch = tf.constant(list(batch), tf.string)
            parts.append({k: v.numpy() for k, v in step(batch).items()})
        width = max(p["input_mask"].shape[1] for p in parts)
        result = {}
        for key in parts[0]:
            axis = 2 if key == "hidden_states" else 1  # the sequence axis
            merged = np.concatenate([_pad_axis(p[key], axis, width) for p in parts], axis=axis - 1)
            result[key] = np.empty_like(merged)
            if key == "hidden_states":
                result[key][:, order] = merged
            else:
                result[key][order] = merged
        mask = result["input_mask"].astype(bool)
        for key, value in result.items():
            if key != "input_mask":  # padding positions are zeros
                value[..., ~mask, :] = 0
        return result


def _pad_axis(array, axis, width):
    pad = [(0, 0)] * array.ndim
    pad[axis] = (0, width - array.shape[axis])
    return np.pad(array, pad)
