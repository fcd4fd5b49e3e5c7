"""Multi-head self-attention with a padding mask (BERT's ``attention/self`` + ``attention/output``).

Written for speed on TensorFlow's oneDNN CPU kernels (see README, Performance) and still in
``keras.ops``: activations stay 2-D ``[batch * seq, H]`` between the projections, so every
projection is one MatMul that TensorFlow fuses with its bias (and the residual, in the block); the
scores are ``matmul(q, k_t) * scale + mask_bias`` with the mask expanded by ``expand_dims``, the op
order that oneDNN runs as one fused batch-matmul; softmax is computed in float32.
"""

import functools
import os

import keras
from keras import ops

from kbert.layers.fused import Dropout
from kbert.layers.initializers import truncated_normal

BF16_MATMUL_ENV = "KBERT_BF16_MATMUL"


@functools.lru_cache(maxsize=None)
def bf16_matmul_mode() -> str:
    """How bfloat16 matmuls run: "native" or "float32" (see ``matmul_dtype``).

    "float32" on a TensorFlow CPU without bf16 dot-product instructions (neither AVX512_BF16 nor
    AMX in /proc/cpuinfo) and no GPU/TPU; "native" otherwise. ``KBERT_BF16_MATMUL=native|float32``
    forces one; the choice is made once per process (``bf16_matmul_mode.cache_clear()`` to redo).
    """
    forced = os.environ.get(BF16_MATMUL_ENV, "auto").strip().lower()
    if forced in ("native", "float32"):
        return forced
    if forced not in ("", "auto"):
        raise ValueError(f"{BF16_MATMUL_ENV}={forced!r}: expected native, float32 or auto")
    if keras.backend.backend() != "tensorflow":
        return "native"
    import tensorflow as tf

    if tf.config.list_physical_devices("GPU") or tf.config.list_physical_devices("TPU"):
        return "native"
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), None)
    except OSError:
        flags = None
    if flags is None:
        return "native"
    return "native" if {"avx512_bf16", "amx_bf16"} & set(flags) else "float32"


def matmul_dtype(dtype):
    """The dtype a matmul of ``dtype`` operands is computed in.

    bfloat16 operands are multiplied in float32 when ``bf16_matmul_mode()`` is "float32": the
    products of bf16 values are exact in float32 and the sums are float32, which is what a bf16
    matmul with float32 accumulation computes; without bf16 instructions oneDNN emulates bf16
    matmuls at about a fifth of its float32 speed, so the same numbers come out ~5x sooner.
    """
    if keras.backend.standardize_dtype(dtype) == "bfloat16" and bf16_matmul_mode() == "float32":
        return "float32"
    return dtype


def matmul(a, b):
    """``a @ b`` for operands of the compute dtype, result in that dtype (see ``matmul_dtype``)."""
    compute = matmul_dtype(a.dtype)
    if compute == a.dtype:
        return ops.matmul(a, b)
    return ops.cast(ops.matmul(ops.cast(a, compute), ops.cast(b, compute)), a.dtype)


def in_xla():
    """True while TensorFlow traces a function that XLA compiles (``jit_compile=True``, or inside one)."""
    if keras.backend.backend() != "tensorflow":
        return False
    import tensorflow as tf
    from tensorflow.python.ops import control_flow_util

    if tf.executing_eagerly():
        return False
    return control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def dense(layer, x, residual=None, activation=None):
    """``layer`` (a built Dense with a bias) applied to a 2-D ``x``, plus ``residual``, then ``activation``.

    The op order (MatMul, BiasAdd, Add, activation) is the one TensorFlow's grappler remapper fuses
    into a single oneDNN MatMul on CPU; ``keras.ops.add`` for the bias would leave GELU unfused.
    Reading ``layer.kernel`` inside a calling layer's ``call`` gets Keras' autocast (bf16 under
    ``mixed_bfloat16``), exactly as the Dense layer itself would.
    """
    out_dtype = x.dtype
    compute = matmul_dtype(out_dtype)
    # Operands rounded to the compute dtype first (a no-op unless bf16 is multiplied in float32).
    kernel = ops.cast(ops.cast(layer.kernel, out_dtype), compute)
    bias = ops.cast(ops.cast(layer.bias, out_dtype), compute)
    y = ops.matmul(ops.cast(x, compute), kernel)
    if residual is not None:
        residual = ops.cast(residual, compute)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        y = tf.nn.bias_add(y, bias)
    else:
        y = y + bias
    if residual is not None:
        y = residual + y
    if activation is not None:
        y = activation(y)
    return ops.cast(y, out_dtype)


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
        dense_layer = lambda name: keras.layers.Dense(  # noqa: E731
            hidden_size, kernel_initializer=truncated_normal(initializer_range), name=name
        )
        self.query = dense_layer("query")
        self.key = dense_layer("key")
        self.value = dense_layer("value")
        self.output_dense = dense_layer("output")
        self.dropout = Dropout(dropout)

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

    def context(self, x, batch, seq, mask_bias=None, training=None, queries=None):
        """2-D ``x`` [batch * seq, H] -> attention context [batch * seq, H] (before the output projection).

        ``queries``: optional ``(rows, count)``, 2-D rows [batch * count, H] of ``x`` (e.g. gathered at
        some positions) that attend to all of ``x``; the context is then [batch * count, H], the
        same numbers as those rows of the full context for a fraction of the work.
        """
        heads, size = self.num_heads, self.head_size
        q_rows, q_len = queries if queries is not None else (x, seq)
        q = ops.transpose(ops.reshape(dense(self.query, q_rows), (batch, q_len, heads, size)), (0, 2, 1, 3))
        k_t = ops.transpose(ops.reshape(dense(self.key, x), (batch, seq, heads, size)), (0, 2, 3, 1))
        v = ops.transpose(ops.reshape(dense(self.value, x), (batch, seq, heads, size)), (0, 2, 1, 3))
        # [batch, heads, query, key]; BERT's scale is 1/sqrt(head_size). With bf16 multiplied in
        # float32 the scores stay float32 (softmax is float32 anyway).
        compute = matmul_dtype(q.dtype)
        scores = ops.matmul(ops.cast(q, compute), ops.cast(k_t, compute)) * (1.0 / float(size) ** 0.5)
        if mask_bias is not None:
            scores = scores + ops.cast(mask_bias, scores.dtype)
        weights = ops.softmax(ops.cast(scores, "float32"), axis=-1)
        weights = self.dropout(ops.cast(weights, v.dtype), training=training)
        context = ops.transpose(matmul(weights, v), (0, 2, 1, 3))  # [batch, seq, heads, size]
        return ops.reshape(context, (-1, self.hidden_size))

    def call(self, x, padding_mask=None, training=None):
        batch, seq = ops.shape(x)[0], ops.shape(x)[1]
        flat = ops.reshape(x, (-1, self.hidden_size))
        context = self.context(flat, batch, seq, self.mask_bias(padding_mask, self.compute_dtype), training)
        return ops.reshape(dense(self.output_dense, context), (batch, seq, self.hidden_size))

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
