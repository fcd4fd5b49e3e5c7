"""Multi-head self-attention with a padding mask (BERT's ``attention/self`` + ``attention/output``).

Written for speed on TensorFlow's oneDNN CPU kernels (see docs/performance.md) and still in
``keras.ops``: activations stay 2-D ``[batch * seq, H]`` between the projections, so every
projection is one MatMul that TensorFlow fuses with its bias and the residual
(``kbert.layers.projections``); the scores are ``matmul(q, k_t) * scale + mask_bias`` with the
mask expanded by ``expand_dims``, the op order that oneDNN runs as one fused batch-matmul; softmax
is computed in float32.

``attention_impl`` chooses the attention itself: ``"plain"`` (this module's reference code),
``"auto"`` or ``"fused"`` (``kbert.layers.accel``: cuDNN flash attention with the padding as
sequence lengths and the attention dropout on NVIDIA GPUs under JAX; every path keeps the
attention dropout in training).

``causal=True`` (a left-to-right language model's attention, kbert.BertLMPretrainer): each query
attends only to itself and the keys to its left, besides the padding mask. It always runs the
plain path, whatever ``attention_impl`` says: the fused kernels here take padding only.
"""

import itertools


import keras
from keras import ops

from kbert.config import ConfigError
from kbert.layers import accel, tf_fast
from kbert.layers.dropout import Dropout
from kbert.layers.initializers import truncated_normal
from kbert.layers.projections import dense, dense_dropout_add, matmul

# What a padded position's score gets (added, or in its place) before a softmax, so that its weight
# is exactly zero in float32: here, in the attention pooling of long documents
# (kbert.tasks.core.heads.TokenAttentionHead) and in the ONNX export of both. float16 cannot hold
# it: FLOAT16_MASK_FILTER there.
MASK_FILTER = -1e9
FLOAT16_MASK_FILTER = -1e4


class MultiHeadSelfAttention(keras.layers.Layer):
    """Query/key/value projections [H, H], scaled dot-product attention, output projection [H, H].

    The projections keep Google's [in, out] kernel layout so checkpoints map one to one.
    ``padding_mask`` is [batch, seq] with 1 for real tokens; padded keys get no attention weight.
    ``dropout`` applies to the attention probabilities, ``output_dropout`` to the output projection
    (before the ``residual`` add, when one is given). ``attention_impl``: "plain", "fused" or
    "auto" (``kbert.layers.accel``). ``causal``: each position attends only to itself and the
    positions to its left (always the plain path).
    """

    def __init__(self, hidden_size, num_heads, dropout=0.1, initializer_range=0.02, output_dropout=0.0,
                 attention_impl="auto", causal=False, **kwargs):
        super().__init__(**kwargs)
        self.causal = bool(causal)
        self.attention_impl = accel.check_attention_impl(attention_impl)
        if hidden_size % num_heads:
            raise ConfigError(f"hidden_size ({hidden_size}) must be divisible by num_heads ({num_heads})",
                              field="hidden_size")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.head_size = hidden_size // num_heads
        self.dropout_rate = dropout
        self.output_dropout_rate = output_dropout
        self.initializer_range = initializer_range
        dense_layer = lambda name: keras.layers.Dense(  # noqa: E731
            hidden_size, kernel_initializer=truncated_normal(initializer_range), name=name
        )
        self.query = dense_layer("query")
        self.key = dense_layer("key")
        self.value = dense_layer("value")
        self.output_dense = dense_layer("output")
        self.dropout = Dropout(dropout)
        self.output_dropout = Dropout(output_dropout)
        self.kernel_seed = _kernel_seed(self.dropout)

    def build(self, input_shape):
        for layer in (self.query, self.key, self.value, self.output_dense):
            layer.build((None, None, self.hidden_size))
        self.built = True

    def mask_bias(self, padding_mask, dtype):
        """[batch, seq] 1/0 mask -> additive [batch, 1, 1, seq] bias (0 or a large negative).

        The original adds -10000; a larger negative keeps padded keys at exactly zero weight.
        ``expand_dims`` rather than ``[:, None, None, :]``: the strided slice blocks oneDNN's
        batch-matmul + scale + add fusion.
        """
        if padding_mask is None:
            return None
        bias = (1.0 - ops.cast(padding_mask, dtype)) * _large_negative(dtype)
        return ops.expand_dims(ops.expand_dims(bias, 1), 1)

    def call(self, x, padding_mask=None, training=None, positions=None, residual=False, return_attention=False):
        """``x`` [batch, seq, H] -> [batch, Q, H], the output projection of the attention context.

        ``positions``: optional [batch, Q] (int): only the rows of ``x`` at those positions query
        (keys and values still cover all of ``x``), the same numbers as those rows of the full
        output for a fraction of the work; default every position (Q = seq). ``residual``: add the
        querying rows of ``x`` to the output after its dropout (BERT's residual; on TensorFlow the
        add fuses into the output projection). ``return_attention``: also return the attention
        probabilities [batch, heads, Q, seq] (float32, before dropout): ``(output, probabilities)``.
        """
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        heads, size, width = self.num_heads, self.head_size, self.hidden_size
        flat = ops.reshape(x, (-1, width))
        q_rows, q_len = flat, seq
        if positions is not None:
            q_rows, q_len = gather_rows(flat, positions, seq), ops.shape(positions)[1]
        # A causal call runs the plain path: the fused kernels take the padding mask only.
        kernel = "plain" if self.causal else accel.choose_kernel(
            self.attention_impl, training=training, dropout_rate=self.dropout_rate, dtype=self.compute_dtype,
            head_size=size, return_attention=return_attention, padding=padding_mask is not None)
        context = None
        if kernel != "plain":
            # [batch, rows, heads, size], the layout the fused kernels take: no transposes.
            context = accel.attention(
                kernel,
                ops.reshape(dense(self.query, q_rows), (batch, q_len, heads, size)),
                ops.reshape(dense(self.key, flat), (batch, seq, heads, size)),
                ops.reshape(dense(self.value, flat), (batch, seq, heads, size)),
                padding_mask, 1.0 / float(size) ** 0.5, dropout_rate=self.dropout_rate, training=training,
                seed=self.kernel_seed)
        ran = kernel if context is not None else "plain"
        accel.record_call(ran, training, bool(training) and self.dropout_rate > 0.0 and ran in ("plain", "cudnn"))
        if context is not None:
            context, probabilities = ops.reshape(context, (-1, width)), None
        else:
            context, probabilities = self._plain_attention(q_rows, flat, batch, seq, q_len, padding_mask, training,
                                                           positions)
        if residual:
            out = dense_dropout_add(self.output_dense, context, q_rows, self.output_dropout, training)
        else:
            out = self.output_dropout(dense(self.output_dense, context), training=training)
        out = ops.reshape(out, (batch, q_len, width))
        return (out, probabilities) if return_attention else out

    def _plain_attention(self, q_rows, flat, batch, seq, q_len, padding_mask, training, positions=None):
        """The reference: context [batch * Q, H] and the probabilities [batch, heads, Q, seq]."""
        heads, size, width = self.num_heads, self.head_size, self.hidden_size
        q = ops.transpose(ops.reshape(dense(self.query, q_rows), (batch, q_len, heads, size)), (0, 2, 1, 3))
        k_t = ops.transpose(ops.reshape(dense(self.key, flat), (batch, seq, heads, size)), (0, 2, 3, 1))
        v = ops.transpose(ops.reshape(dense(self.value, flat), (batch, seq, heads, size)), (0, 2, 1, 3))
        # [batch, heads, query, key]; BERT's scale is 1/sqrt(head_size). With bf16 multiplied in
        # float32 the scores stay float32 (softmax is float32 anyway).
        compute = tf_fast.matmul_dtype(q.dtype)
        scores = ops.matmul(ops.cast(q, compute), ops.cast(k_t, compute)) * (1.0 / float(size) ** 0.5)
        mask_bias = self.mask_bias(padding_mask, self.compute_dtype)
        if mask_bias is not None:
            scores = scores + ops.cast(mask_bias, scores.dtype)
        if self.causal:
            scores = scores + ops.cast(causal_bias(seq, positions, self.compute_dtype), scores.dtype)
        probabilities = ops.softmax(ops.cast(scores, "float32"), axis=-1)
        weights = self.dropout(ops.cast(probabilities, v.dtype), training=training)
        context = ops.reshape(ops.transpose(matmul(weights, v), (0, 2, 1, 3)), (-1, width))
        return context, probabilities

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            dropout=self.dropout_rate,
            initializer_range=self.initializer_range,
            output_dropout=self.output_dropout_rate,
            attention_impl=self.attention_impl,
            causal=self.causal,
        )
        return config


def causal_bias(seq, positions, dtype):
    """The additive bias of causal attention: 0 where a key is at or left of its query, else a
    large negative. [1, 1, seq, seq] for every query, or [batch, 1, P, seq] for the queries at
    ``positions`` [batch, P] (int)."""
    keys = ops.arange(seq, dtype="int32")
    queries = ops.expand_dims(keys, 0) if positions is None else ops.cast(positions, "int32")
    later = ops.cast(ops.expand_dims(keys, 0) > ops.expand_dims(queries, -1), dtype)  # [1 or batch, Q, seq]
    return ops.expand_dims(later * _large_negative(dtype), 1)


def gather_rows(flat, positions, seq):
    """Rows of 2-D ``flat`` [batch * seq, H] at ``positions`` [batch, P] of each sequence -> [batch * P, H].

    One gather on the flattened rows (its gradient is a single segment sum), not a batched gather
    over [batch, seq, H].
    """
    positions = ops.cast(positions, "int32")
    offsets = ops.expand_dims(ops.arange(ops.shape(positions)[0], dtype="int32") * ops.cast(seq, "int32"), 1)
    return ops.take(flat, ops.reshape(positions + offsets, (-1,)), axis=0)


_layer_numbers = itertools.count()


def _kernel_seed(dropout) -> int:
    """The cuDNN kernel's dropout seed: a compile-time constant (the kernel advances its offset on
    every execution), one per layer so that layers do not share masks. From the seed the layer's
    Dropout already drew (Keras draws it from Python's random, which keras.utils.set_random_seed
    seeds), plus the layer's number in this process; no draw of its own, so the initial weights
    of a seeded run stay what they were."""
    number = next(_layer_numbers)
    try:
        drawn = int(ops.convert_to_numpy(dropout.seed_generator.state.value)[0])
    except Exception:  # built inside a traced function: the number alone
        drawn = 0
    return (drawn * 1_000_003 + number) % 2**31


def _large_negative(dtype):
    return FLOAT16_MASK_FILTER if keras.backend.standardize_dtype(dtype) in ("float16",) else MASK_FILTER
