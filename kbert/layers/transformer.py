"""One post-LN BERT block: self-attention, residual + LayerNorm, GELU FFN (4H), residual + LayerNorm."""

import keras

from kbert.layers.activations import get_activation
from kbert.layers.attention import MultiHeadSelfAttention
from kbert.layers.initializers import truncated_normal


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
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.activation = activation
        self.dropout_rate = dropout
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        init = truncated_normal(initializer_range)
        self.attention = MultiHeadSelfAttention(
            hidden_size, num_heads, attention_dropout, initializer_range, name="attention"
        )
        self.attention_dropout_layer = keras.layers.Dropout(dropout)
        self.attention_layer_norm = keras.layers.LayerNormalization(
            epsilon=1e-12, name="attention_layer_norm"
        )
        self.intermediate = keras.layers.Dense(
            intermediate_size,
            activation=get_activation(activation),
            kernel_initializer=init,
            name="intermediate",
        )
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=init, name="output")
        self.output_dropout = keras.layers.Dropout(dropout)
        self.output_layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, name="output_layer_norm")

    def build(self, input_shape):
        shape = (None, None, self.hidden_size)
        self.attention.build(shape)
        self.attention_layer_norm.build(shape)
        self.intermediate.build(shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(shape)
        self.built = True

    def call(self, x, padding_mask=None, training=None):
        attended = self.attention(x, padding_mask=padding_mask, training=training)
        x = self.attention_layer_norm(x + self.attention_dropout_layer(attended, training=training))
        ffn = self.output_dense(self.intermediate(x))
        return self.output_layer_norm(x + self.output_dropout(ffn, training=training))

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
        )
        return config
