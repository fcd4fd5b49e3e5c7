"""kbert.layers.tf_elementwise: XLA-compiled GELU and dropout with written-out gradients (TensorFlow only)."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert import BertConfig, BertEncoder
from kbert.layers import tf_elementwise
from kbert.layers.dropout import Dropout


def _value_and_grad(f, x, dy):
    @tf.function
    def run(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        return y, tape.gradient(y, x, dy)
    return [np.asarray(t) for t in run(x)]


@pytest.mark.parametrize("approximate", [True, False])
def test_gelu_values_and_gradients_match_keras(approximate):
    rng = np.random.default_rng(0)
    x = tf.constant(rng.normal(scale=3.0, size=(64, 48)).astype("float32"))
    dy = tf.constant(rng.normal(size=(64, 48)).astype("float32"))
    ours = _value_and_grad(lambda v: tf_elementwise.gelu(v, approximate), x, dy)
    ref = _value_and_grad(lambda v: keras.activations.gelu(v, approximate=approximate), x, dy)
    np.testing.assert_allclose(ours[0], ref[0], atol=2e-6, rtol=1e-5)
    np.testing.assert_allclose(ours[1], ref[1], atol=2e-5, rtol=1e-4)


@pytest.mark.slow
def test_dropout_rate_scale_and_one_mask_for_both_passes():
    rate = 0.1
    x = tf.constant(np.random.default_rng(1).normal(size=(32, 4, 64, 65)).astype("float32"))  # odd size
    dy = tf.ones_like(x) * 2.0
    y, g = _value_and_grad(lambda v: tf_elementwise.dropout(v, rate, tf.constant([3, 4])), x, dy)
    kept = y != 0
    n = kept.size
    # kept fraction within 5 standard deviations of 1 - round(rate * 65536) / 65536
    p = 1 - round(rate * 65536) / 65536
    assert abs(kept.mean() - p) < 5 * np.sqrt(p * (1 - p) / n)
    scale = 1 / p
    np.testing.assert_allclose(y[kept], np.asarray(x)[kept] * scale, rtol=1e-6)
    np.testing.assert_array_equal(g != 0, kept)  # the gradient uses the forward's mask
    np.testing.assert_allclose(g[kept], 2.0 * scale, rtol=1e-6)
    same, _ = _value_and_grad(lambda v: tf_elementwise.dropout(v, rate, tf.constant([3, 4])), x, dy)
    other, _ = _value_and_grad(lambda v: tf_elementwise.dropout(v, rate, tf.constant([3, 5])), x, dy)
    np.testing.assert_array_equal(same, y)
    assert (other != 0).mean() == pytest.approx(p, abs=0.01) and not np.array_equal(other != 0, kept)
    with pytest.raises(ValueError, match="rate"):
        tf_elementwise.dropout(x, 1.0, tf.constant([1, 2]))


def test_dropout_layer_fuses_static_shapes_only_and_is_identity_in_inference():
    layer = Dropout(0.1)

    def ops_of(signature, training):
        f = tf.function(lambda v: layer(v, training=training), input_signature=[signature])
        return {op.type for op in f.get_concrete_function().graph.get_operations()}

    static = ops_of(tf.TensorSpec([8, 16]), True)
    assert "StatelessRandomUniformFullIntV2" in static
    assert "StatelessRandomUniformFullIntV2" not in ops_of(tf.TensorSpec([None, 16]), True)
    assert "StatelessRandomUniformV2" in ops_of(tf.TensorSpec([None, 16]), True)  # Keras' own
    x = tf.ones([8, 16])
    np.testing.assert_array_equal(layer(x, training=False), x)
    # successive calls draw new masks (the Keras seed generator advances)
    a, b = np.asarray(layer(x, training=True)), np.asarray(layer(x, training=True))
    assert not np.array_equal(a != 0, b != 0)


def test_fused_training_gradients_equal_the_plain_ops(monkeypatch):
    """With dropout off, an encoder's training-mode gradients are the same with the fused GELU and
    without (KBERT_FUSED_KERNELS=0)."""
    keras.utils.set_random_seed(0)
    config = BertConfig.preset("tiny", vocab_size=500, max_position_embeddings=32,
                               hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    for act in ("gelu", "gelu_exact"):
        config.hidden_act = act
        encoder = BertEncoder(config)
        rng = np.random.default_rng(0)
        probe = tf.constant(rng.normal(size=(3, 16, config.hidden_size)).astype("float32"))
        inputs = {"input_word_ids": tf.constant(rng.integers(1, 500, (3, 16)), tf.int32),
                  "input_mask": tf.ones([3, 16], tf.int32), "input_type_ids": tf.zeros([3, 16], tf.int32)}

        def grads():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(encoder(inputs, training=True)["sequence_output"] * probe)
            return [None if g is None else tf.convert_to_tensor(g)
                    for g in tape.gradient(loss, encoder.trainable_variables)]

        monkeypatch.setenv(tf_elementwise.FUSED_ENV, "1")
        with_fused = grads()
        monkeypatch.setenv(tf_elementwise.FUSED_ENV, "0")
        plain = grads()
        assert sum(g is not None for g in plain) == len(plain) - 2  # all but the pooler's
        for a, b, w in zip(with_fused, plain, encoder.trainable_variables):
            if b is None:
                assert a is None
                continue
            np.testing.assert_allclose(a, b, rtol=1e-4, atol=max(1e-4 * float(tf.reduce_max(tf.abs(b))), 1e-6),
                                       err_msg=f"{act} {w.path}")


def test_sparse_cross_entropy_matches_tensorflow_and_rejects_bad_labels():
    rng = np.random.default_rng(2)
    logits = tf.constant(rng.normal(scale=4.0, size=(3, 5, 301)).astype("float32"))
    labels = tf.constant(rng.integers(0, 301, (3, 5)), tf.int32)
    dy = tf.constant(rng.normal(size=(3, 5)).astype("float32"))

    def run(f):
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss = f(labels, logits)
        return loss.numpy(), tape.gradient(loss, logits, dy).numpy()

    ours = run(tf_elementwise.sparse_softmax_cross_entropy)
    ref = run(lambda y, z: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=z))
    assert ours[0].shape == (3, 5)
    np.testing.assert_allclose(ours[0], ref[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(ours[1], ref[1], rtol=1e-5, atol=1e-6)
    for bad in (301, -1):
        with pytest.raises(tf.errors.InvalidArgumentError, match="label"):
            tf_elementwise.sparse_softmax_cross_entropy(tf.constant([[0, bad]]), logits[:1, :2])


def test_dropout_with_residual_adds_in_the_same_kernel():
    rng = np.random.default_rng(3)
    x, r, dy = (tf.constant(rng.normal(size=(16, 24)).astype("float32")) for _ in range(3))
    seed = tf.constant([7, 8])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([x, r])
        plain = tf_elementwise.dropout(x, 0.1, seed) + r
        added = tf_elementwise.dropout(x, 0.1, seed, residual=r)
    np.testing.assert_allclose(added, plain, rtol=1e-6)
    gx, gr = tape.gradient(added, [x, r], dy)
    np.testing.assert_allclose(gx, tape.gradient(plain, x, dy), rtol=1e-6)
    np.testing.assert_array_equal(gr, dy)
    layer = Dropout(0.1)
    np.testing.assert_array_equal(layer.add_to(x, r, training=False), x + r)
    out = np.asarray(layer.add_to(x, r, training=True)) - np.asarray(r)
    assert 0 < (np.abs(out) < 1e-6).mean() < 0.3  # some dropped, most kept
