"""The projections inside a block: a Dense applied to 2-D ``[rows, in]`` activations, with the
residual add and the activation, in one place so TensorFlow can run them as one fused MatMul."""

from keras import ops

from kbert.layers import tf_fast


def dense(layer, x, residual=None, activation=None):
    """``activation(residual + x @ layer.kernel + layer.bias)`` for a built Dense ``layer`` and a
    2-D ``x``; ``residual`` and ``activation`` optional. The result has ``x``'s dtype (the kernel
    is read in the calling layer's compute dtype, as the Dense layer itself would)."""
    if tf_fast.available():
        return tf_fast.dense(layer, x, residual=residual, activation=activation)
    y = ops.matmul(x, ops.cast(layer.kernel, x.dtype)) + ops.cast(layer.bias, x.dtype)
    if residual is not None:
        y = ops.cast(residual, y.dtype) + y
    if activation is not None:
        y = activation(y)
    return ops.cast(y, x.dtype)


def matmul(a, b):
    """``a @ b`` for operands of the compute dtype, result in that dtype, multiplied in
    ``tf_fast.matmul_dtype`` (bf16 in float32 on CPUs without bf16 instructions)."""
    compute = tf_fast.matmul_dtype(a.dtype)
    if compute == a.dtype:
        return ops.matmul(a, b)
    return ops.cast(ops.matmul(ops.cast(a, compute), ops.cast(b, compute)), a.dtype)


def dense_dropout_add(layer, x, residual, dropout, training=None):
    """``residual + dropout(dense(layer, x))``: in inference (or at rate 0) dropout is the identity
    and the residual add goes into the projection (one fused MatMul on TensorFlow); in training
    ``dropout.add_to`` (a ``kbert.layers.dropout.Dropout``) adds it, in its kernel where it can."""
    if not training or dropout.rate == 0:
        return dense(layer, x, residual=residual)
    return dropout.add_to(dense(layer, x), residual, training=training)
