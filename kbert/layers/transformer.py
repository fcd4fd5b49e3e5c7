"""One post-LN BERT block: self-attention, residual + LayerNorm, GELU FFN (4H), residual + LayerNorm.

Inside the block activations are 2-D ``[batch * seq, H]`` so that on TensorFlow's oneDNN CPU
kernels each projection is one fused MatMul (+ bias, + GELU or + residual) and each LayerNorm one
fused op; see ``kbert.layers.projections`` and ``kbert.layers.normalization``.
"""

import keras
from keras import ops

from kbert.layers import accel, tf_fast
from kbert.layers.activations import get_activation
from kbert.layers.attention import MultiHeadSelfAttention
from kbert.layers.dropout import Dropout
from kbert.layers.initializers import truncated_normal
from kbert.layers.normalization import layer_norm, make_layer_norm
from kbert.layers.projections import dense, dense_dropout_add


class TransformerBlock(keras.layers.Layer):
    def __init__(
        self,
        hidden_size,
        num_heads,
        intermediate_size,
        activation="gelu",
        dropout=0.1,
        attention_dropout=0.1,
        initializer_range=0.02,
        attention_impl="auto",
        causal=False,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.causal = bool(causal)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout_rate = dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.attention_impl = attention_impl
        init = truncated_normal(initializer_range)
        self.attention = MultiHeadSelfAttention(
            hidden_size, num_heads, attention_dropout, initializer_range, output_dropout=dropout,
            attention_impl=attention_impl, causal=causal, name="attention"
        )
        self.attention_layer_norm = make_layer_norm("attention_layer_norm")
        self.intermediate = keras.layers.Dense(
            intermediate_size,
            activation=get_activation(activation),
            kernel_initializer=init,
            name="intermediate",
        )
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init, name="output")
        self.output_dropout = Dropout(dropout)
        self.output_layer_norm = make_layer_norm("output_layer_norm")

    def build(self, input_shape):
        shape = (None, None, self.hidden_size)
        self.attention.build(shape)
        self.attention_layer_norm.build(shape)
        self.intermediate.build(shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(shape)
        self.built = True

    def call(self, x, padding_mask=None, training=None, positions=None, return_attention=False):
        """``x`` [batch, seq, H] -> [batch, seq, H]; with ``positions`` [batch, P] (int), only the
        outputs at those positions, [batch, P, H]: every position is still attended to (keys and
        values come from all of ``x``), but the queries, output projection, LayerNorms and FFN run
        on P rows instead of seq. A last block needed only at a few positions (MLM + [CLS] in
        pre-training) costs about a third of a full one. ``return_attention``: also return the
        attention probabilities [batch, heads, rows, seq] (float32): ``(output, probabilities)``."""
        if accel.remat_policy() != "none" and training and not return_attention:
            # Seeds drawn outside the checkpoint; the recomputed forward draws the same masks.
            with accel.predrawn_seeds((self.attention.dropout, self.attention.output_dropout, self.output_dropout)):
                return accel.rematerialized(
                    lambda x, mask, rows: self._forward(x, mask, training, rows, False))(x, padding_mask, positions)
        return self._forward(x, padding_mask, training, positions, return_attention)

    def _forward(self, x, padding_mask, training, positions, return_attention):
        batch, width = ops.shape(x)[0], self.hidden_size
        rows = ops.shape(x)[1] if positions is None else ops.shape(positions)[1]
        attended = self.attention(x, padding_mask, training=training, positions=positions, residual=True,
                                  return_attention=return_attention)
        attended, probabilities = attended if return_attention else (attended, None)
        flat = layer_norm(self.attention_layer_norm, ops.reshape(attended, (-1, width)))
        activation = self.intermediate.activation
        if training:
            activation = tf_fast.training_activation(activation, flat)
        hidden = dense(self.intermediate, flat, activation=activation)
        out = layer_norm(self.output_layer_norm,
                         dense_dropout_add(self.output_dense, hidden, flat, self.output_dropout, training))
        out = ops.reshape(out, (batch, rows, width))
        return (out, probabilities) if return_attention else out

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            activation=self.activation,
            dropout=self.dropout_rate,
            attention_dropout=self.attention_dropout,
            initializer_range=self.initializer_range,
            attention_impl=self.attention_impl,
            causal=self.causal,
        )
        return config
