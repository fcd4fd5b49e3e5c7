"""Training-time element-wise work as single XLA-compiled kernels with written-out gradients.

TensorFlow only. Without XLA, TensorFlow runs each element-wise op as its own pass over memory:
GELU's gradient is about fifteen of them, dropout draws float32 uniforms then compares, selects
and multiplies, softmax's gradient is four passes. XLA for the whole training step fuses them, but
on CPU its matmuls and LayerNorm lose more to oneDNN than the fusion wins (docs/performance.md).
So the matmuls stay oneDNN ops and only these element-wise groups are compiled by XLA
(``tf.function(jit_compile=True)`` called from the ordinary graph), each one loop forward and one
loop backward. Measured on the 2-vCPU machine, forward + backward: GELU on [4096, 2048]
52.6 -> 20.4 ms; dropout on attention probabilities [32, 8, 128, 128] 23.1 -> 10.7 ms.

Dropout's random bits come from TensorFlow's Philox kernel, not XLA's (XLA's CPU random number
generation measured ~100x slower), as 16-bit draws: an element is kept when its draw is >=
``round(rate * 65536)``, so the rate is exact to 1/65536 and kept values are scaled by the inverse
of the kept fraction. The bits are kept for the backward pass (2 bytes an element).

XLA compiles a kernel once per shape, so these are used only for fully known static shapes
(pre-training's fixed sequence length); fine-tuning batches trimmed to their longest row take the
plain ops. ``KBERT_FUSED_KERNELS=0`` turns them off. Inside an XLA-compiled step (``jit_compile``,
TPUs) the plain ops are used and XLA fuses them itself. Those decisions are made by
``kbert.layers.tf_fast``, the seam the layers ask, and the only module that imports this one.
"""

import functools
import math

from kbert.errors import OptionsError

FUSED_ENV = "KBERT_FUSED_KERNELS"
_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


# -- GELU ---------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _gelu_kernels(approximate: bool):
    import tensorflow as tf

    if approximate:  # google-research/bert's tanh form
        @tf.function(jit_compile=True, autograph=False)
        def forward(x):
            return 0.5 * x * (1.0 + tf.tanh(_SQRT_2_OVER_PI * (x + 0.044715 * x * x * x)))

        @tf.function(jit_compile=True, autograph=False)
        def backward(x, dy):
            x2 = x * x
            t = tf.tanh(_SQRT_2_OVER_PI * x * (1.0 + 0.044715 * x2))
            dt = _SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * x2)
            return dy * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * dt)
    else:  # x * Phi(x)
        @tf.function(jit_compile=True, autograph=False)
        def forward(x):
            return 0.5 * x * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))

        @tf.function(jit_compile=True, autograph=False)
        def backward(x, dy):
            cdf = 0.5 * (1.0 + tf.math.erf(x * (1.0 / math.sqrt(2.0))))
            return dy * (cdf + x * _INV_SQRT_2PI * tf.exp(-0.5 * x * x))
    return forward, backward


def gelu(x, approximate: bool):
    """GELU of ``x`` in one compiled loop, its gradient in another (see module docstring)."""
    import tensorflow as tf

    forward, backward = _gelu_kernels(bool(approximate))

    @tf.custom_gradient
    def _gelu(x):
        return forward(x), lambda dy: backward(x, dy)

    return _gelu(x)


# -- dropout ------------------------------------------------------------------------------------
def _threshold(rate: float) -> int:
    return int(round(rate * 65536))


@functools.lru_cache(maxsize=None)
def _dropout_kernel(threshold: int):
    import tensorflow as tf

    scale = 65536.0 / (65536 - threshold)  # 1 / the kept fraction: E[dropout(x)] = x

    @tf.function(jit_compile=True, autograph=False)
    def apply(x, bits):
        keep = tf.reshape(bits, tf.shape(x)) >= threshold
        return tf.where(keep, x * tf.cast(scale, x.dtype), tf.zeros_like(x))

    @tf.function(jit_compile=True, autograph=False)
    def apply_add(x, bits, residual):
        return residual + apply(x, bits)

    return apply, apply_add


def random_bits16(shape, seed):
    """``prod(shape)`` uniform uint16 draws (flat) from TensorFlow's stateless Philox kernel;
    ``seed`` int32 [2]."""
    import tensorflow as tf

    n = math.prod(shape)
    words = tf.random.stateless_uniform([(n + 1) // 2], seed, minval=None, maxval=None, dtype=tf.uint32)
    bits = tf.reshape(tf.bitcast(words, tf.uint16), [-1])
    return bits if n % 2 == 0 else bits[:n]


def dropout(x, rate: float, seed, residual=None):
    """Inverted dropout of ``x`` at ``rate`` (0 < rate < 1) with the int32 [2] ``seed``, plus
    ``residual`` if given (the add in the same loop); one compiled loop forward, one backward, the
    same mask for both."""
    import tensorflow as tf

    if not 0.0 < rate < 1.0:
        raise OptionsError(f"dropout rate must be in (0, 1), got {rate}", option="dropout", value=rate)
    apply, apply_add = _dropout_kernel(_threshold(rate))
    bits = random_bits16(x.shape, seed)

    if residual is None:
        @tf.custom_gradient
        def _dropout(x):
            return apply(x, bits), lambda dy: apply(dy, bits)

        return _dropout(x)

    @tf.custom_gradient
    def _dropout_add(x, residual):
        return apply_add(x, bits, residual), lambda dy: (apply(dy, bits), dy)

    return _dropout_add(x, residual)


# -- softmax cross-entropy with integer labels ----------------------------------------------------
@functools.lru_cache(maxsize=None)
def _xent_kernel():
    import tensorflow as tf

    @tf.function(jit_compile=True, autograph=False)
    def loss_and_grad(logits, labels):
        top = tf.reduce_max(logits, -1, keepdims=True)
        e = tf.exp(logits - top)
        total = tf.reduce_sum(e, -1, keepdims=True)
        picked = tf.gather(logits, labels, batch_dims=1)
        loss = tf.math.log(total[:, 0]) + top[:, 0] - picked
        correct = tf.cast(picked >= top[:, 0], logits.dtype)  # the label's logit is the largest
        return loss, e / total - tf.one_hot(labels, tf.shape(logits)[-1], dtype=logits.dtype), correct

    return loss_and_grad


def sparse_softmax_cross_entropy(labels, logits, return_correct=False):
    """``-log softmax(logits)[label]`` per row (``labels`` [...] int, ``logits`` [..., V] float32),
    as ``tf.nn.sparse_softmax_cross_entropy_with_logits``, in one compiled kernel.

    On the MLM logits of pre-training the XLA loop is the faster (docs/bench/code-notes); loss
    and gradient are computed together, the gradient kept for the backward pass as TensorFlow's
    op does. Labels outside [0, V) raise, as with TensorFlow's op.
    ``return_correct``: also whether each row's label has the largest logit (1.0/0.0; a tie for
    the largest counts as correct), found in the same loop: the accuracy metric then needs no
    argmax pass (Keras' argmax adds four more passes over the logits for negative zeros).
    """
    import tensorflow as tf

    vocab = logits.shape[-1]
    labels = tf.cast(labels, tf.int32)
    checks = [
        tf.debugging.assert_non_negative(labels, message="label < 0 in the cross-entropy"),
        tf.debugging.assert_less(labels, vocab, message=f"label >= the {vocab} classes of the logits"),
    ]
    with tf.control_dependencies(checks):
        flat_labels = tf.reshape(labels, [-1])
    flat_logits = tf.reshape(logits, [-1, vocab])
    loss_and_grad = _xent_kernel()

    loss, grad, correct = loss_and_grad(flat_logits, flat_labels)

    @tf.custom_gradient
    def _xent(flat_logits):
        return tf.identity(loss), lambda dloss: tf.expand_dims(dloss, -1) * grad

    loss = tf.reshape(_xent(flat_logits), tf.shape(labels))
    return (loss, tf.reshape(correct, tf.shape(labels))) if return_correct else loss
