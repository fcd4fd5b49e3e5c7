"""The block's projections against NumPy: Dense with residual and activation, and dropout + add."""

import keras
import numpy as np

from kbert.layers.dropout import Dropout
from kbert.layers.projections import dense, dense_dropout_add, matmul


def _dense():
    layer = keras.layers.Dense(5)
    layer.build((None, 4))
    rng = np.random.default_rng(0)
    layer.set_weights([rng.normal(size=(4, 5)).astype("float32"), rng.normal(size=5).astype("float32")])
    return layer


def test_dense_with_residual_and_activation(tf_path):
    layer = _dense()
    kernel, bias = layer.get_weights()
    rng = np.random.default_rng(1)
    x, residual = rng.normal(size=(3, 4)).astype("float32"), rng.normal(size=(3, 5)).astype("float32")
    np.testing.assert_allclose(dense(layer, x), x @ kernel + bias, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(dense(layer, x, residual=residual, activation=keras.activations.relu),
                               np.maximum(residual + x @ kernel + bias, 0), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(matmul(x, kernel), x @ kernel, rtol=1e-5, atol=1e-5)


def test_dense_dropout_add_drops_only_the_projection_in_training(tf_path):
    layer = _dense()
    kernel, bias = layer.get_weights()
    rng = np.random.default_rng(2)
    x, residual = rng.normal(size=(64, 4)).astype("float32"), rng.normal(size=(64, 5)).astype("float32")
    dropout = Dropout(0.5, seed=3)
    np.testing.assert_allclose(dense_dropout_add(layer, x, residual, dropout, training=False),
                               residual + x @ kernel + bias, rtol=1e-5, atol=1e-5)
    kept = (np.asarray(dense_dropout_add(layer, x, residual, dropout, training=True)) - residual) / (x @ kernel + bias)
    # each projected value is either dropped (0) or kept and scaled by 1 / (1 - rate)
    assert np.all(np.isclose(kept, 0, atol=1e-4) | np.isclose(kept, 2, atol=1e-3))
    assert 0.3 < np.isclose(kept, 0, atol=1e-4).mean() < 0.7
