"""BERT's pre-training heads, in the original layout (``cls/predictions``, ``cls/seq_relationship``)."""

import keras
from keras import ops

from kbert.layers import tf_fast
from kbert.layers.activations import get_activation
from kbert.layers.initializers import truncated_normal
from kbert.layers.normalization import make_layer_norm
from kbert.model_metadata import ModelDirError


class MaskedLMHead(keras.layers.Layer):
    """dense H + activation + LayerNorm, then logits against the (tied) word embeddings + bias.

    The decoder matrix is not a weight of this layer: it is the encoder's word-embedding table,
    passed to ``call`` so that saving the head never duplicates it. Logits are computed only at
    ``masked_positions`` [batch, num_predictions], never over the whole sequence.
    """

    def __init__(self, hidden_size, vocab_size, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.vocab_size = vocab_size
        self.activation = activation
        self.initializer_range = initializer_range
        self.transform = keras.layers.Dense(
            hidden_size,
            activation=get_activation(activation),
            kernel_initializer=truncated_normal(initializer_range),
            name="transform",
        )
        self.layer_norm = make_layer_norm("layer_norm")

    def build(self, input_shape=None):
        self.transform.build((None, None, self.hidden_size))
        self.layer_norm.build((None, None, self.hidden_size))
        self.output_bias = self.add_weight(name="output_bias", shape=(self.vocab_size,), initializer="zeros")
        self.built = True

    def call(self, sequence_output, masked_positions, embedding_table):
        """[batch, seq, H] and positions [batch, P] -> logits [batch, P, V]; with
        ``masked_positions=None``, ``sequence_output`` is already the [batch, P, H] rows to predict."""
        gathered = sequence_output
        if masked_positions is not None:
            gathered = ops.take_along_axis(
                sequence_output, ops.expand_dims(ops.cast(masked_positions, "int32"), -1), axis=1
            )
        x = self.layer_norm(self.transform(gathered))
        # One 2-D [batch*P, H] x [H, V] product rather than einsum("bph,vh->bpv"): the einsum
        # lowers to a batch matmul broadcast over the batch, whose gradient for the [V, H] table is
        # one [V, H] product per sequence summed afterwards; the 2-D form's is a single product.
        # Operands are rounded to the compute dtype, then multiplied in ``matmul_dtype`` (float32
        # for bf16 on CPUs without bf16 instructions, see kbert.layers.tf_fast).
        compute = tf_fast.matmul_dtype(x.dtype)
        flat = ops.cast(ops.reshape(x, (-1, self.hidden_size)), compute)
        table = ops.cast(ops.cast(embedding_table, x.dtype), compute)
        bias = ops.cast(ops.cast(self.output_bias, x.dtype), compute)
        if tf_fast.available():  # transpose_b: no transposed copy of the table, forward or backward
            logits = tf_fast.tied_logits(flat, table, bias)
        else:
            logits = ops.matmul(flat, ops.transpose(table)) + bias
        logits = ops.cast(logits, x.dtype)
        return ops.reshape(logits, (ops.shape(x)[0], ops.shape(x)[1], self.vocab_size))

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            vocab_size=self.vocab_size,
            activation=self.activation,
            initializer_range=self.initializer_range,
        )
        return config


class NextSentenceHead(keras.layers.Layer):
    """pooled output -> 2 logits (IsNext = 0, NotNext = 1, as in the original)."""

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(2, kernel_initializer=truncated_normal(initializer_range), name="dense")

    def build(self, input_shape=None):
        self.dense.build((None, self.hidden_size))
        self.built = True

    def call(self, pooled_output):
        return self.dense(pooled_output)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config


def build_head(name, config):
    """The pre-training head called ``name`` ("mlm" or "nsp") for a BertConfig, built."""
    if name == "mlm":
        head = MaskedLMHead(
            config.hidden_size, config.vocab_size, config.hidden_act, config.initializer_range, name="mlm"
        )
    elif name == "nsp":
        head = NextSentenceHead(config.hidden_size, config.initializer_range, name="nsp")
    else:
        raise ModelDirError(f"unknown pre-training head {name!r}; expected 'mlm' or 'nsp'")
    head.build()
    return head
