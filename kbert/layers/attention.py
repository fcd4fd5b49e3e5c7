"""Multi-head self-attention with a padding mask (BERT's ``attention/self`` + ``attention/output``)."""

import keras
from keras import ops

from kbert.layers.initializers import truncated_normal


class MultiHeadSelfAttention(keras.layers.Layer):
    """Query/key/value projections [H, H], scaled dot-product attention, output projection [H, H].

    The projections keep Google's [in, out] kernel layout so checkpoints map one to one.
    ``padding_mask`` is [batch, seq] with 1 for real tokens; padded keys get no attention weight.
    """

    def __init__(self, hidden_size, num_heads, dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads})")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.dropout_rate = dropout
        self.initializer_range = initializer_range
        dense = lambda name: keras.layers.Dense(  # noqa: E731
            hidden_size, kernel_initializer=truncated_normal(initializer_range), name=name
        )
        self.query = dense("query")
        self.key = dense("key")
        self.value = dense("value")
        self.output_dense = dense("output")
        self.dropout = keras.layers.Dropout(dropout)

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, None, self.hidden_size))
        self.built = True

    def _split_heads(self, x):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        return ops.reshape(x, (batch, seq, self.num_heads, self.head_size))

    def call(self, x, padding_mask=None, training=None):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        q = self._split_heads(self.query(x))
        k = self._split_heads(self.key(x))
        v = self._split_heads(self.value(x))
        # [batch, heads, query, key] scores; BERT's scale is 1/sqrt(head_size).
        scores = ops.einsum("bqnd,bknd->bnqk", q, k) * (1.0 / float(self.head_size) ** 0.5)
        if padding_mask is not None:
            # Additive mask as in the original (-10000 there); a large negative in the score
            # dtype keeps padded keys at exactly zero weight after softmax.
            key_mask = ops.cast(padding_mask[:, None, None, :], scores.dtype)
            scores = scores + (1.0 - key_mask) * _large_negative(scores.dtype)
        weights = ops.softmax(ops.cast(scores, "float32"), axis=-1)
        weights = self.dropout(ops.cast(weights, v.dtype), training=training)
        context = ops.einsum("bnqk,bknd->bqnd", weights, v)
        context = ops.reshape(context, (batch, seq, self.hidden_size))
        return self.output_dense(context)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            dropout=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config


def _large_negative(dtype):
    return -1e4 if keras.backend.standardize_dtype(dtype) in ("float16",) else -1e9
