"""kbert.tasks.core.heads against numpy: the pooled and sequence heads' dense layer,
TokenAttentionHead.window_outputs (a softmax over each window's real tokens, then the dense layer;
the log-sum-exp of the scores as the window's weight) and RecurrentSequenceHead (BiLSTMs by hand)."""

import keras
import numpy as np
import pytest

from kbert.tasks.core.heads import PooledHead, RecurrentSequenceHead, SequenceHead, TokenAttentionHead
from fixtures.numpy_lstm import numpy_bilstm


def _dense(head, x):
    kernel, bias = (w.numpy() for w in head.dense.weights)
    return x @ kernel + bias


def test_pooled_and_sequence_heads_are_one_dense_layer():
    rng = np.random.default_rng(0)
    pooled, sequence = PooledHead(8, 3), SequenceHead(8, 5)
    pooled.build(), sequence.build()
    x, xs = rng.normal(size=(4, 8)).astype("float32"), rng.normal(size=(2, 6, 8)).astype("float32")
    np.testing.assert_allclose(pooled(x).numpy(), _dense(pooled, x), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(sequence(xs).numpy(), _dense(sequence, xs), rtol=1e-5, atol=1e-6)
    assert len(pooled.weights) == 2  # only the dense kernel and bias are stored
    dropped = PooledHead(8, 3, dropout=0.5)
    dropped.build()
    assert not np.allclose(dropped(x, training=True).numpy(), _dense(dropped, x))
    config = pooled.get_config()
    assert (config["hidden_size"], config["num_outputs"], config["dropout"]) == (8, 3, 0.1)
    with pytest.raises(ValueError, match="SequenceHead: num_outputs must be >= 1, got 0"):
        SequenceHead(8, 0)


def test_token_attention_window_outputs_against_numpy():
    keras.utils.set_random_seed(1)
    head = TokenAttentionHead(8, 3)
    head.build()
    rng = np.random.default_rng(2)
    sequence = rng.normal(size=(3, 5, 8)).astype("float32")
    mask = np.array([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=np.int32)
    logits, weight = (t.numpy() for t in head.window_outputs(sequence, mask))
    w, b = (v.numpy() for v in head.score.weights)
    scores = (sequence @ w + b)[..., 0].astype(np.float64)
    for i in range(2):  # windows with real tokens: softmax over those only
        s = scores[i, mask[i].astype(bool)]
        attention = np.exp(s - s.max()) / np.exp(s - s.max()).sum()
        pooled = attention @ sequence[i, mask[i].astype(bool)]
        np.testing.assert_allclose(logits[i], _dense(head, pooled), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(weight[i], np.log(np.exp(s - s.max()).sum()) + s.max(), rtol=1e-5)
    # a window without real tokens (host padding) gets finite logits and a weight that drops it
    assert np.isfinite(logits[2]).all() and weight[2] < -1e8


def test_recurrent_sequence_head_is_bilstms_then_dense_by_hand():
    """Two BiLSTM layers (as the feature-based approach has) over each row's real tokens only, then the
    dense layer: padding changes no real position's logits."""
    keras.utils.set_random_seed(3)
    head = RecurrentSequenceHead(6, 4, units=5, num_layers=2)
    head.build()
    rng = np.random.default_rng(4)
    x = rng.normal(size=(3, 7, 6)).astype("float32")
    mask = np.array([[1] * 7, [1] * 4 + [0] * 3, [1] + [0] * 6], dtype=np.int32)
    expected = _dense(head, numpy_bilstm(numpy_bilstm(x, mask, head.recurrent[0]), mask, head.recurrent[1]))
    got = head(x, mask=mask).numpy()
    real = mask.astype(bool)
    np.testing.assert_allclose(got[real], expected[real], rtol=1e-4, atol=1e-5)
    alone = head(x[1:2, :4], mask=mask[1:2, :4]).numpy()  # the same row without its padding
    np.testing.assert_allclose(alone[0], got[1, :4], rtol=1e-5, atol=1e-6)
    assert head.get_config()["units"] == 5 and head.get_config()["num_layers"] == 2
    assert head.dense.kernel.shape == (10, 4)  # both directions' outputs
