"""Task heads: plain Keras layers on top of the encoder's outputs (Figure 3 of the paper).

  PooledHead    dropout + dense on the pooled [CLS] output: classification (softmax), regression
                (1 unit), multi-label (sigmoid per unit), multiple choice (1 unit per choice)
  TokenAttentionHead  PooledHead on the tokens pooled by a learned score instead of [CLS]
                (``window_pooling="attention"`` of long documents)
  SequenceHead  dropout + dense on every position: token tagging (one unit per tag), span QA
                (2 units: start and end)
  RecurrentSequenceHead  SequenceHead over one or more randomly initialised BiLSTM layers (the
                paper's Table 5 "+ BiLSTM"; its §5.4 feature-based NER: two layers)
  RecurrentPooledHead  a BiLSTM over every token, then dropout + dense on each direction's final
                output: classification, regression, multi-label with "+ BiLSTM"

They hold only their own weights (dense, and the BiLSTMs'), so a model directory stores each in its own small
``<name>.weights.h5`` next to the encoder's.
"""

from __future__ import annotations

import keras

from kbert.errors import OptionsError
from kbert.layers.attention import MASK_FILTER
from kbert.layers.initializers import truncated_normal


class _DenseHead(keras.layers.Layer):
    def __init__(self, hidden_size, num_outputs, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.num_outputs = int(num_outputs)
        self.dropout_rate = float(dropout)
        self.initializer_range = float(initializer_range)
        if self.num_outputs < 1:
            raise OptionsError(f"{type(self).__name__}: num_outputs must be >= 1, got {num_outputs}",
                               option="num_outputs", value=num_outputs)
        self.dropout = keras.layers.Dropout(self.dropout_rate)
        self.dense = keras.layers.Dense(self.num_outputs, kernel_initializer=truncated_normal(initializer_range),
                                        name="dense")

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, num_outputs=self.num_outputs,
                      dropout=self.dropout_rate, initializer_range=self.initializer_range)
        return config

    def call(self, features, training=None):
        return self.dense(self.dropout(features, training=training))


class PooledHead(_DenseHead):
    """[batch, H] pooled output -> [batch, num_outputs] logits."""

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.built = True


class SequenceHead(_DenseHead):
    """[batch, seq, H] sequence output -> [batch, seq, num_outputs] logits."""

    def build(self, input_shape=None):
        self.dense.build((None, None, self.hidden_size))
        self.built = True


class RecurrentSequenceHead(SequenceHead):
    """[batch, seq, input_size] -> ``num_layers`` bidirectional LSTMs (``units`` per direction, the two
    directions' outputs concatenated: 2 units wide) -> dropout + dense -> [batch, seq, num_outputs].

    ``mask`` ([batch, seq], 1 at real positions) keeps padding out of the recurrences: the backward
    LSTM starts at a row's last real token, so a row's outputs do not depend on how far its batch is
    padded. ``hidden_size`` is the width of the vectors read (the encoder's, or 4 H for a concat of
    four layers).
    """

    def __init__(self, hidden_size, num_outputs, units, num_layers=1, dropout=0.1, initializer_range=0.02,
                 **kwargs):
        super().__init__(hidden_size, num_outputs, dropout=dropout, initializer_range=initializer_range, **kwargs)
        self.units, self.num_layers = int(units), int(num_layers)
        if self.units < 1 or self.num_layers < 1:
            raise OptionsError(f"{type(self).__name__}: units and num_layers must be >= 1, got {units} and "
                               f"{num_layers}", option="units", value=units)
        self.recurrent = [keras.layers.Bidirectional(keras.layers.LSTM(self.units, return_sequences=True),
                                                     name=f"bilstm_{i}") for i in range(self.num_layers)]
        self.supports_masking = True  # the mask is read here (call's ``mask``), not lost

    def get_config(self):
        return {**super().get_config(), "units": self.units, "num_layers": self.num_layers}

    def compute_mask(self, inputs, mask=None):
        # The logits carry no Keras mask: one would reach compile()'s loss and metrics as sample
        # weights ([batch, seq] against a pooled head's [batch] rows), which the task's own weights
        # already are.
        return None

    def build(self, input_shape=None):
        width = self.hidden_size
        for layer in self.recurrent:
            layer.build((None, None, width))
            width = 2 * self.units
        self.dense.build((None, None, width))
        self.built = True

    def call(self, features, mask=None, training=None):
        mask = None if mask is None else keras.ops.cast(mask, "bool")
        for layer in self.recurrent:
            features = layer(features, mask=mask, training=training)
        return super().call(features, training=training)


class RecurrentPooledHead(RecurrentSequenceHead):
    """[batch, seq, H] and ``mask`` -> the BiLSTM(s) over each row's real tokens -> the forward LSTM's
    output at the row's last real token and the backward LSTM's at its first ([CLS]), side by side
    (each direction's summary of the whole text) -> dropout + dense -> [batch, num_outputs]."""

    def call(self, features, mask=None, training=None):
        ops = keras.ops
        if mask is None:
            mask = ops.ones(ops.shape(features)[:2], "int32")
        for layer in self.recurrent:
            features = layer(features, mask=ops.cast(mask, "bool"), training=training)
        last = ops.maximum(ops.sum(ops.cast(mask, "int32"), axis=1) - 1, 0)
        at_last = ops.expand_dims(ops.one_hot(last, ops.shape(features)[1], dtype=features.dtype), -1)
        forward = ops.sum(features[..., :self.units] * at_last, axis=1)
        pooled = ops.concatenate([forward, features[:, 0, self.units:]], axis=-1)
        return self.dense(self.dropout(pooled, training=training))


class TokenAttentionHead(PooledHead):
    """A window's tokens pooled by attention (a learned score per token, softmax over the window's
    real tokens), then dropout + dense: [windows, seq, H] -> [windows, num_outputs] logits, and
    each window's log total attention weight (the log-sum-exp of its scores).

    Over a document read in windows, attention over every token of every window is the windows'
    logits averaged with weights softmax(log total weight): the dense layer is linear and each
    window's attention sums to one, so ``window_inputs.combine(..., "attention", weights=...)``
    gives exactly the logits of the document's tokens pooled together.
    """

    def __init__(self, hidden_size, num_outputs, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(hidden_size, num_outputs, dropout=dropout, initializer_range=initializer_range, **kwargs)
        self.score = keras.layers.Dense(1, kernel_initializer=truncated_normal(initializer_range), name="score")

    def build(self, input_shape=None):
        self.score.build((None, None, self.hidden_size))
        super().build(input_shape)

    def window_outputs(self, sequence, mask, training=None):
        """(logits [windows, num_outputs], log total weight [windows], float32) of each window's
        tokens (``mask`` 1 for the real ones). A window without real tokens (host padding) pools
        all its positions evenly; combine drops it."""
        ops = keras.ops
        scores = ops.cast(ops.squeeze(self.score(sequence), axis=-1), "float32")  # float32 under mixed precision
        scores = ops.where(ops.cast(mask, "bool"), scores, MASK_FILTER)
        weight = ops.logsumexp(scores, axis=1)
        attention = ops.softmax(scores, axis=1)
        pooled = ops.sum(ops.expand_dims(attention, -1) * ops.cast(sequence, "float32"), axis=1)
        return self.dense(self.dropout(pooled, training=training)), weight


class SentenceAttentionHead(PooledHead):
    """Attention over a document's sentences (``--long-documents sentences``): each sentence's
    pooled [CLS] vector gives its logits (dropout + dense, as ``PooledHead``) and a learned score;
    ``window_inputs.combine(..., "attention", weights=scores)`` then averages the sentences' logits
    with weights softmax(score) over the document's sentences, which (the dense layer being
    linear) is the dense layer applied to the attention-pooled [CLS] vectors. A document of one
    sentence gets that sentence's ``PooledHead`` logits."""

    def __init__(self, hidden_size, num_outputs, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(hidden_size, num_outputs, dropout=dropout, initializer_range=initializer_range, **kwargs)
        self.score = keras.layers.Dense(1, kernel_initializer=truncated_normal(initializer_range), name="score")

    def build(self, input_shape=None):
        self.score.build((None, self.hidden_size))
        super().build(input_shape)

    def unit_outputs(self, pooled, training=None):
        """(logits [sentences, num_outputs], score [sentences], float32) of each sentence's pooled
        vector."""
        ops = keras.ops
        scores = ops.cast(ops.squeeze(self.score(pooled), axis=-1), "float32")
        return self(pooled, training=training), scores
