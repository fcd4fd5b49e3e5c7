"""The pre-training heads against NumPy: MLM logits at masked positions against the tied table, NSP."""

import keras
import numpy as np
import pytest

from kbert import BertConfig
from kbert.layers.activations import gelu_tanh
from kbert.layers.heads import MaskedLMHead, NextSentenceHead, build_head


def _randomize(layer):
    rng = np.random.default_rng(0)
    for w in layer.weights:
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))


def test_mlm_logits_at_the_positions_against_the_tied_table():
    keras.utils.set_random_seed(0)
    head = MaskedLMHead(8, 11)
    head.build()
    _randomize(head)
    rng = np.random.default_rng(1)
    sequence = rng.normal(size=(2, 5, 8)).astype("float32")
    table = rng.normal(size=(11, 8)).astype("float32")
    positions = np.array([[4, 1, 1], [0, 2, 3]])
    rows = np.take_along_axis(sequence, positions[:, :, None], axis=1)
    kernel, bias = (w.numpy() for w in head.transform.weights)
    h = np.asarray(gelu_tanh(rows @ kernel + bias))
    gamma, beta = (w.numpy() for w in head.layer_norm.weights)
    h = (h - h.mean(-1, keepdims=True)) / np.sqrt(h.var(-1, keepdims=True) + 1e-12) * gamma + beta
    expected = h @ table.T + head.output_bias.numpy()
    np.testing.assert_allclose(head(sequence, positions, table), expected, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(head(rows, None, table), expected, rtol=1e-4, atol=1e-4)
    assert [w.name for w in head.weights if w.shape == table.shape] == []  # the table is not the head's


def test_nsp_head_and_build_head_by_name():
    head = NextSentenceHead(8)
    head.build()
    _randomize(head)
    pooled = np.random.default_rng(2).normal(size=(3, 8)).astype("float32")
    kernel, bias = (w.numpy() for w in head.dense.weights)
    np.testing.assert_allclose(head(pooled), pooled @ kernel + bias, rtol=1e-5, atol=1e-5)
    config = BertConfig.preset("tiny")
    mlm = build_head("mlm", config)
    assert mlm.built and mlm.output_bias.shape == (config.vocab_size,) and mlm.activation == config.hidden_act
    assert build_head("nsp", config).dense.kernel.shape == (config.hidden_size, 2)
    with pytest.raises(ValueError, match="unknown pre-training head 'sop'"):
        build_head("sop", config)
