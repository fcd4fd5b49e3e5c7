"""kbert's Dropout: Keras' layer (identity in inference, inverted dropout in training), add_to fused."""

import numpy as np
import tensorflow as tf

from kbert.layers.dropout import Dropout


def test_identity_in_inference_inverted_dropout_in_training(tf_path):
    x = np.random.default_rng(0).uniform(1, 2, size=(200, 50)).astype("float32")
    layer = Dropout(0.25, seed=1)
    np.testing.assert_array_equal(layer(x), x)
    y = np.asarray(layer(x, training=True))
    dropped = y == 0
    np.testing.assert_allclose(y[~dropped], x[~dropped] / 0.75, rtol=1e-6)
    assert abs(dropped.mean() - 0.25) < 0.02
    np.testing.assert_array_equal(Dropout(0.0)(x, training=True), x)


def test_add_to_is_residual_plus_dropout(tf_path):
    rng = np.random.default_rng(1)
    x, residual = rng.uniform(1, 2, size=(100, 20)).astype("float32"), rng.normal(size=(100, 20)).astype("float32")
    x, residual = tf.constant(x), tf.constant(residual)  # tensors, as inside a block (the fused kernel's case)
    layer = Dropout(0.5, seed=2)
    np.testing.assert_allclose(layer.add_to(x, residual), residual + x, rtol=1e-6)
    delta = np.asarray(layer.add_to(x, residual, training=True) - residual)
    kept = ~np.isclose(delta, 0, atol=1e-6)
    np.testing.assert_allclose(delta[kept], 2 * x.numpy()[kept], rtol=1e-5)
    assert 0.4 < kept.mean() < 0.6
