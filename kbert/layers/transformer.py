"""One post-LN BERT block: self-attention, residual + LayerNorm, GELU FFN (4H), residual + LayerNorm.

Inside the block activations are 2-D ``[batch * seq, H]`` so that on TensorFlow's oneDNN CPU
kernels each projection is one fused MatMul (+ bias, + GELU or + residual) and each LayerNorm one
fused op; see ``kbert.layers.attention.dense`` and ``layer_norm`` below.
"""

import keras
from keras import ops

from kbert.layers.activations import get_activation
from kbert.layers.attention import MultiHeadSelfAttention, dense, in_xla
from kbert.layers.fused import Dropout, training_activation
from kbert.layers.initializers import truncated_normal


def layer_norm(layer, x):
    """``layer`` (a built keras LayerNormalization over the last axis) applied to ``x``, in float32.

    On TensorFlow this is the formulation of tf.keras 2's LayerNormalization: a training-mode
    FusedBatchNormV3 over ``[1, rows, H, 1]`` then gamma and beta; oneDNN's remapper turns it into
    one ``_MklLayerNorm`` op in inference, and FusedBatchNormGradV3 is one op in the backward pass
    (Keras 3's own formulation is about ten element-wise ops each way). Statistics are computed in
    float32 for any input dtype; the result has the layer's compute dtype. Other backends call the
    layer.
    """
    if keras.backend.backend() != "tensorflow" or in_xla():
        return layer(x)  # XLA fuses Keras' formulation itself; its FusedBatchNorm lowering is slow
    import tensorflow as tf

    x32 = tf.cast(x, tf.float32)
    shape = tf.shape(x32)
    width = x.shape[-1]
    rows = tf.reduce_prod(shape[:-1])
    y, _, _ = tf.compat.v1.nn.fused_batch_norm(
        tf.reshape(x32, [1, rows, width, 1]),
        scale=tf.ones([rows]),
        offset=tf.zeros([rows]),
        epsilon=layer.epsilon,
        data_format="NCHW",
        is_training=True,
    )
    y = tf.reshape(y, shape) * tf.cast(layer.gamma, tf.float32) + tf.cast(layer.beta, tf.float32)
    return tf.cast(y, layer.compute_dtype)


def gather_rows(flat, positions, seq):
    """Rows of 2-D ``flat`` [batch * seq, H] at ``positions`` [batch, P] of each sequence -> [batch * P, H].

    One gather on the flattened rows (its gradient is a single segment sum), not a batched gather
    over [batch, seq, H].
    """
    positions = ops.cast(positions, "int32")
    offsets = ops.expand_dims(ops.arange(ops.shape(positions)[0], dtype="int32") * ops.cast(seq, "int32"), 1)
    return ops.take(flat, ops.reshape(positions + offsets, (-1,)), axis=0)


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
        self.attention_dropout_layer = Dropout(dropout)
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
        self.output_dropout = Dropout(dropout)
        self.output_layer_norm = keras.layers.LayerNormalization(epsilon=1e-12, name="output_layer_norm")

    def build(self, input_shape):
        shape = (None, None, self.hidden_size)
        self.attention.build(shape)
        self.attention_layer_norm.build(shape)
        self.intermediate.build(shape)
        self.output_dense.build((None, None, self.intermediate_size))
        self.output_layer_norm.build(shape)
        self.built = True

    def call(self, x, padding_mask=None, training=None, positions=None):
        """``x`` [batch, seq, H] -> [batch, seq, H]; with ``positions`` [batch, P] (int), only the
        outputs at those positions, [batch, P, H]: every position is still attended to (keys and
        values come from all of ``x``), but the queries, output projection, LayerNorms and FFN run
        on P rows instead of seq. A last block needed only at a few positions (MLM + [CLS] in
        pre-training) costs about a third of a full one."""
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        att = self.attention
        flat = ops.reshape(x, (-1, self.hidden_size))
        queries, rows = None, seq
        if positions is not None:
            rows = ops.shape(positions)[1]
            queries = (gather_rows(flat, positions, seq), rows)
        context = att.context(flat, batch, seq, att.mask_bias(padding_mask, self.compute_dtype), training, queries)
        flat = queries[0] if queries is not None else flat
        flat = layer_norm(self.attention_layer_norm,
                          self._residual(att.output_dense, context, flat, self.attention_dropout_layer, training))
        activation = self.intermediate.activation
        if training:
            activation = training_activation(activation, flat)
        hidden = dense(self.intermediate, flat, activation=activation)
        out = layer_norm(self.output_layer_norm,
                         self._residual(self.output_dense, hidden, flat, self.output_dropout, training))
        return ops.reshape(out, (batch, rows, self.hidden_size))

    def _residual(self, layer, x, residual, dropout, training):
        """``residual + dropout(layer(x))``; in inference dropout is the identity and the residual
        add fuses into the MatMul."""
        if not training or self.dropout_rate == 0:
            return dense(layer, x, residual=residual)
        return dropout.add_to(dense(layer, x), residual, training=training)

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
