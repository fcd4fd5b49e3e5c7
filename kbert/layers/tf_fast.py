"""The one seam between kbert's layers and TensorFlow's fast paths (oneDNN fusions, XLA kernels).

The layers are written in ``keras.ops`` and run as they are on every Keras backend. Where
TensorFlow runs a different formulation of the same numbers faster (docs/performance.md), a layer
asks ``available()`` (or ``kernels_enabled(x)`` for the XLA element-wise kernels) and calls the
function here instead of its plain code. Everything TensorFlow-specific about speed lives in this
module and in ``kbert.layers.tf_elementwise`` (the XLA kernels, which only this module imports):

* ``dense``: MatMul + BiasAdd (+ residual Add, + activation), the op order grappler fuses into one
  oneDNN MatMul;
* ``layer_norm``: LayerNorm as a training-mode FusedBatchNormV3 (one op each way);
* ``bf16_matmul_mode`` / ``matmul_dtype``: bfloat16 matmuls multiplied in float32 on CPUs without
  bf16 instructions;
* ``tied_logits``: the MLM decoder with ``transpose_b`` (no transposed copy of the table);
* ``training_activation``, ``dropout``, ``sparse_softmax_cross_entropy``: the XLA kernels;
* ``assert_length``: a run-time check for a dynamic sequence length in a TensorFlow graph.

Off switches: ``KBERT_FAST_PATHS=0`` (or ``with tf_fast.disabled():``) runs the plain Keras code
everywhere; ``KBERT_FUSED_KERNELS=0`` turns off only the XLA kernels. Other backends always take the
plain path. A layer decides when it is traced, so switch before building a ``tf.function``.

Why a module and not a backend package: there is one specialised backend (TensorFlow on CPU), and
each fast path is a drop-in for a few lines of one layer; a flat module keeps the pair (plain code
in the layer, fast code here) one ``grep`` apart.
"""

import contextlib
import functools
import os

import keras

from kbert import compat
from kbert.errors import OptionsError
from kbert.layers import tf_elementwise
from kbert.layers.activations import gelu_exact, gelu_tanh

FAST_PATHS_ENV = "KBERT_FAST_PATHS"
BF16_MATMUL_ENV = "KBERT_BF16_MATMUL"
_OFF = ("0", "false", "off", "no")
_disabled_depth = 0


def _tf():
    import tensorflow as tf

    return tf


# -- the switch ---------------------------------------------------------------------------------
def available() -> bool:
    """Whether the TensorFlow fast paths apply: TensorFlow backend, not ``KBERT_FAST_PATHS=0``,
    not inside ``disabled()``."""
    if _disabled_depth or keras.backend.backend() != "tensorflow":
        return False
    return os.environ.get(FAST_PATHS_ENV, "1").strip().lower() not in _OFF


@contextlib.contextmanager
def disabled():
    """Within this block (when layers are traced), every layer takes its plain Keras path."""
    global _disabled_depth
    _disabled_depth += 1
    try:
        yield
    finally:
        _disabled_depth -= 1


def in_xla() -> bool:
    """True while TensorFlow traces a function that XLA compiles (``jit_compile=True``, or inside one)."""
    if keras.backend.backend() != "tensorflow":
        return False
    tf = _tf()
    if tf.executing_eagerly():
        return False
    return compat.graph_in_xla_context(tf.compat.v1.get_default_graph())


def kernels_enabled(x) -> bool:
    """Whether the XLA element-wise kernels (``kbert.layers.tf_elementwise``) apply to tensor ``x``: fast
    paths available, ``KBERT_FUSED_KERNELS`` not 0, a fully static shape (XLA compiles once per
    shape), and not already inside an XLA-compiled function (XLA fuses the plain ops itself)."""
    if not available() or os.environ.get(tf_elementwise.FUSED_ENV, "1").strip().lower() in _OFF:
        return False
    return x.shape.is_fully_defined() and not in_xla()


# -- bfloat16 matmuls ---------------------------------------------------------------------------
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
        raise OptionsError(f"{BF16_MATMUL_ENV}={forced!r}: expected native, float32 or auto", option=BF16_MATMUL_ENV,
                           value=forced)
    if keras.backend.backend() != "tensorflow":
        return "native"
    tf = _tf()
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
    """The dtype a matmul of ``dtype`` operands is computed in: ``dtype`` itself, except bfloat16
    multiplied in float32 when the fast paths are available and ``bf16_matmul_mode()`` is "float32".

    The products of bf16 values are exact in float32 and the sums are float32, which is what a bf16
    matmul with float32 accumulation computes; without bf16 instructions oneDNN emulates bf16
    matmuls at about a fifth of its float32 speed, so the same numbers come out ~5x sooner.
    """
    if (keras.backend.standardize_dtype(dtype) == "bfloat16" and available()
            and bf16_matmul_mode() == "float32"):
        return "float32"
    return dtype


# -- fused oneDNN formulations ------------------------------------------------------------------
def dense(layer, x, residual=None, activation=None):
    """``layer`` (a built Dense with a bias) applied to a 2-D ``x``, plus ``residual``, then ``activation``.

    The op order (MatMul, BiasAdd, Add, activation) is the one TensorFlow's grappler remapper fuses
    into a single oneDNN MatMul on CPU; ``keras.ops.add`` for the bias would leave GELU unfused.
    Reading ``layer.kernel`` inside a calling layer's ``call`` gets Keras' autocast (bf16 under
    ``mixed_bfloat16``), exactly as the Dense layer itself would.
    """
    tf = _tf()
    out_dtype = x.dtype
    compute = matmul_dtype(out_dtype)
    # Operands rounded to the compute dtype first (a no-op unless bf16 is multiplied in float32).
    kernel = tf.cast(tf.cast(layer.kernel, out_dtype), compute)
    bias = tf.cast(tf.cast(layer.bias, out_dtype), compute)
    y = tf.nn.bias_add(tf.linalg.matmul(tf.cast(x, compute), kernel), bias)
    if residual is not None:
        y = tf.cast(residual, compute) + y
    if activation is not None:
        y = activation(y)
    return tf.cast(y, out_dtype)


def layer_norm_available() -> bool:
    """Whether ``layer_norm`` applies (not inside XLA: XLA fuses Keras' formulation itself, and its
    FusedBatchNorm lowering is slow)."""
    return available() and not in_xla()


def layer_norm(layer, x):
    """``layer`` (a built keras LayerNormalization over the last axis) applied to ``x``, in float32.

    The formulation of tf.keras 2's LayerNormalization: a training-mode FusedBatchNormV3 over
    ``[1, rows, H, 1]`` then gamma and beta; oneDNN's remapper turns it into one ``_MklLayerNorm``
    op in inference, and FusedBatchNormGradV3 is one op in the backward pass (Keras 3's own
    formulation is about ten element-wise ops each way). Statistics are computed in float32 for
    any input dtype; the result has the layer's compute dtype.
    """
    tf = _tf()
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


def tied_logits(flat, table, bias):
    """``flat @ table^T + bias`` (operands already in one dtype) with ``transpose_b``: neither the
    forward product nor the table's gradient ([V, H], from dlogits^T @ flat) materialises a
    transposed [H, V] copy of the table (transposing that gradient back was a visible share of a
    pre-training step: docs/bench/code-notes)."""
    tf = _tf()
    return tf.nn.bias_add(tf.linalg.matmul(flat, table, transpose_b=True), bias)


def assert_length(seq_length, max_length, message):
    """A run-time check that a dynamic ``seq_length`` in a TensorFlow graph is <= ``max_length``."""
    tf = _tf()
    tf.debugging.assert_less_equal(seq_length, max_length, message=message)


# -- the XLA element-wise kernels (kbert.layers.tf_elementwise) ------------------------------------------
def training_activation(activation, x):
    """The fused kernel standing in for ``activation`` (kbert's GELUs) on ``x`` in training, where
    ``kernels_enabled``; otherwise ``activation`` itself."""
    if activation in (gelu_tanh, gelu_exact) and kernels_enabled(x):
        return functools.partial(tf_elementwise.gelu, approximate=activation is gelu_tanh)
    return activation


def dropout(x, rate, seed, residual=None):
    """``kbert.layers.tf_elementwise.dropout``: inverted dropout (+ residual) in one compiled loop each way;
    ``seed`` is a Keras ``SeedGenerator`` draw (int64 state folded into int32 here)."""
    tf = _tf()
    if seed.dtype != tf.int32:  # SeedGenerator state is int64; stateless ops want int32
        seed = tf.cast(tf.math.floormod(seed, tf.int32.max - 1), tf.int32)
    return tf_elementwise.dropout(x, rate, seed, residual=residual)


sparse_softmax_cross_entropy = tf_elementwise.sparse_softmax_cross_entropy
