"""What a self-attention layer's dropout does to the attention probabilities, seen from its output.

Used in-process (TensorFlow) by tests/layers/test_accel.py and in its JAX child. With the query and
key projections zero, every real key gets probability 1/L; with the value and output projections
the identity, one-hot inputs and no output dropout, output[b, i, j] is the kept-and-rescaled
probability of key j for query i: keep / ((1 - rate) · L), 0 at padded keys.
"""

import numpy as np


def dropout_probe(impl, rate=0.25, batch=64, seq=16, length=12, dtype=None):
    """(fraction of real-key probabilities dropped, mean of L·output over real keys, max |output| at
    padded keys) of one training call of a MultiHeadSelfAttention(attention_impl=impl)."""
    import keras

    from kbert.layers.attention import MultiHeadSelfAttention

    layer = MultiHeadSelfAttention(seq, 1, dropout=rate, output_dropout=0.0, attention_impl=impl, dtype=dtype)
    layer.build((None, None, seq))
    for dense in (layer.query, layer.key):
        dense.kernel.assign(np.zeros((seq, seq), "float32"))
    for dense in (layer.value, layer.output_dense):
        dense.kernel.assign(np.eye(seq, dtype="float32"))
    for dense in (layer.query, layer.key, layer.value, layer.output_dense):
        dense.bias.assign(np.zeros((seq,), "float32"))
    x = np.broadcast_to(np.eye(seq, dtype="float32"), (batch, seq, seq)).copy()
    mask = (np.arange(seq)[None, :] < length).astype("int32").repeat(batch, 0)
    out = keras.ops.convert_to_numpy(keras.ops.cast(layer(x, mask, training=True), "float32")).astype("float64")
    real = out[:, :, :length] * length
    return float(np.mean(real < 0.5)), float(real.mean()), float(np.abs(out[:, :, length:]).max())
