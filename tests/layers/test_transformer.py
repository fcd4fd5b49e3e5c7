"""TransformerBlock: BERT's post-LayerNorm block, checked against NumPy around its attention layer."""

import keras
import numpy as np
import pytest

from kbert.layers.activations import gelu_tanh
from kbert.layers.transformer import TransformerBlock


def _ln(x, gamma, beta, eps=1e-12):
    mean, var = x.mean(-1, keepdims=True), x.var(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


@pytest.fixture(scope="module")
def block():
    keras.utils.set_random_seed(0)
    block = TransformerBlock(8, 2, 16, dropout=0.1, attention_dropout=0.1, attention_impl="plain")
    block.build((None, None, 8))
    rng = np.random.default_rng(0)
    for w in block.weights:
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    return block


def test_block_is_attention_add_norm_ffn_add_norm(block):
    x = np.random.default_rng(1).normal(size=(2, 4, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1], [1, 1, 0, 0]], "int32")
    attended = np.asarray(block.attention(x, mask)) + x
    a = _ln(attended, *(w.numpy() for w in block.attention_layer_norm.weights))
    w1, b1 = (w.numpy() for w in block.intermediate.weights)
    w2, b2 = (w.numpy() for w in block.output_dense.weights)
    hidden = np.asarray(gelu_tanh(a @ w1 + b1))
    expected = _ln(a + hidden @ w2 + b2, *(w.numpy() for w in block.output_layer_norm.weights))
    out = block(x, mask)  # inference: no dropout
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    positions = np.array([[3], [0]])
    np.testing.assert_allclose(block(x, mask, positions=positions),
                               np.take_along_axis(expected, positions[:, :, None], axis=1), rtol=1e-4, atol=1e-4)
    assert not np.allclose(block(x, mask, training=True), expected, atol=1e-3)  # dropout in training
    config = block.get_config()
    assert (config["intermediate_size"], config["num_heads"], config["attention_impl"]) == (16, 2, "plain")
