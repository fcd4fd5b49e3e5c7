"""MultiHeadSelfAttention against scaled dot-product attention written in NumPy."""

import keras
import numpy as np
import pytest

from kbert.config import ConfigError
from kbert.layers.attention import MultiHeadSelfAttention, gather_rows


def _randomize(layer, seed=0):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))


def np_attention(layer, x, mask, heads, causal=False):
    """BERT's self-attention with the layer's weights: softmax(q k^T / sqrt(d) + mask) v, then the output
    Dense; ``causal``: each query's keys cut to itself and the positions to its left."""
    q, k, v, o = ([w.numpy() for w in d.weights] for d in (layer.query, layer.key, layer.value, layer.output_dense))
    batch, seq, width = x.shape
    size = width // heads

    def split(t):
        return t.reshape(batch, seq, heads, size).transpose(0, 2, 1, 3)

    scores = split(x @ q[0] + q[1]) @ split(x @ k[0] + k[1]).transpose(0, 1, 3, 2) / np.sqrt(size)
    allowed = mask[:, None, None, :] > 0
    if causal:
        allowed = allowed & np.tril(np.ones((seq, seq), bool))[None, None]
    scores = np.where(allowed, scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ split(x @ v[0] + v[1])).transpose(0, 2, 1, 3).reshape(batch, seq, width)
    return context @ o[0] + o[1], probs


@pytest.fixture(scope="module")
def layer():
    keras.utils.set_random_seed(0)
    layer = MultiHeadSelfAttention(8, 2, dropout=0.0, attention_impl="plain")
    layer.build((None, None, 8))
    _randomize(layer)
    return layer


def _inputs():
    x = np.random.default_rng(1).normal(size=(2, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]], "int32")
    return x, mask


def test_output_and_probabilities_equal_numpy(layer):
    x, mask = _inputs()
    expected, probs = np_attention(layer, x, mask, heads=2)
    out, got_probs = layer(x, mask, return_attention=True)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_probs, probs, atol=1e-5)
    assert np.all(np.asarray(got_probs)[1, :, :, 3:] == 0)  # padded keys get no weight at all
    np.testing.assert_allclose(layer(x, mask, residual=True), expected + x, rtol=1e-4, atol=1e-4)


def test_positions_give_those_rows_of_the_full_output(layer):
    x, mask = _inputs()
    positions = np.array([[4, 0], [2, 2]])
    full = np.asarray(layer(x, mask))
    np.testing.assert_allclose(layer(x, mask, positions=positions),
                               np.take_along_axis(full, positions[:, :, None], axis=1), rtol=1e-5, atol=1e-5)


def test_gather_rows_and_bad_head_count():
    flat = np.arange(12, dtype="float32").reshape(6, 2)  # batch 2, seq 3
    np.testing.assert_array_equal(gather_rows(flat, np.array([[2, 0], [1, 1]]), 3), flat[[2, 0, 4, 4]])
    with pytest.raises(ConfigError, match=r"hidden_size \(10\) must be divisible by num_heads \(4\)"):
        MultiHeadSelfAttention(10, 4)


@pytest.mark.parametrize("impl", ["plain", "auto", "fused"])
def test_causal_attention_equals_numpy_with_a_lower_triangular_mask(layer, impl):
    """Every attention choice runs the causal mask (the fused kernels fall back to the plain path),
    for every query and for the queries at ``positions`` alone."""
    causal = MultiHeadSelfAttention(8, 2, dropout=0.0, attention_impl=impl, causal=True)
    causal.build((None, None, 8))
    for mine, theirs in zip(causal.weights, layer.weights):
        mine.assign(theirs)
    x, mask = _inputs()
    expected, probs = np_attention(causal, x, mask, heads=2, causal=True)
    out, got_probs = causal(x, mask, return_attention=True)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(got_probs, probs, atol=1e-5)
    np.testing.assert_allclose(causal(x, mask), expected, rtol=1e-4, atol=1e-4)
    positions = np.array([[0, 3], [4, 1]], "int32")
    np.testing.assert_allclose(causal(x, mask, positions=positions), np.take_along_axis(expected, positions[..., None], 1),
                               rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(causal(x, None), np_attention(causal, x, np.ones_like(mask), heads=2, causal=True)[0],
                               rtol=1e-4, atol=1e-4)
    assert MultiHeadSelfAttention.from_config(causal.get_config()).causal
