"""BERT's LayerNorm: epsilon 1e-12 over the last axis, the same numbers on either path."""

import numpy as np

from kbert.layers.normalization import LAYER_NORM_EPSILON, layer_norm, make_layer_norm


def test_layer_norm_is_the_formula_with_berts_epsilon(tf_path):
    layer = make_layer_norm("ln")
    layer.build((None, 6))
    rng = np.random.default_rng(0)
    gamma, beta = rng.normal(size=6).astype("float32"), rng.normal(size=6).astype("float32")
    layer.set_weights([gamma, beta])
    assert layer.epsilon == LAYER_NORM_EPSILON == 1e-12 and layer.name == "ln"
    x = rng.normal(3, 0.01, size=(4, 6)).astype("float32")  # variance 1e-4: a larger epsilon would show
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) * gamma + beta
    np.testing.assert_allclose(layer_norm(layer, x), expected, rtol=1e-4, atol=1e-4)
