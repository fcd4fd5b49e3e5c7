"""Task heads: plain Keras layers on top of the encoder's outputs (Figure 3 of the paper).

  PooledHead    dropout + dense on the pooled [CLS] output: classification (softmax), regression
                (1 unit), multi-label (sigmoid per unit), multiple choice (1 unit per choice)
  SequenceHead  dropout + dense on every position: token tagging (one unit per tag), span QA
                (2 units: start and end)

They hold only their dense weights, so a model directory stores each in its own small
``<name>.weights.h5`` next to the encoder's.
"""

from __future__ import annotations

import keras

from kbert.layers.initializers import truncated_normal


class _DenseHead(keras.layers.Layer):
    def __init__(self, hidden_size, num_outputs, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = int(hidden_size)
        self.num_outputs = int(num_outputs)
        self.dropout_rate = float(dropout)
        self.initializer_range = float(initializer_range)
        if self.num_outputs < 1:
            raise ValueError(f"{type(self).__name__}: num_outputs must be >= 1, got {num_outputs}")
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
