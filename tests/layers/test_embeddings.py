"""BertEmbeddings: word + position + token-type rows, summed, LayerNorm; the position table's limit."""

import keras
import numpy as np
import pytest

from kbert.errors import OptionsError
from kbert.layers.embeddings import BertEmbeddings


def test_sum_of_three_tables_then_layer_norm():
    keras.utils.set_random_seed(0)
    layer = BertEmbeddings(20, 8, max_position_embeddings=6, type_vocab_size=2, dropout=0.5)
    layer.build()
    rng = np.random.default_rng(0)
    for w in layer.weights:
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    ids = np.array([[3, 7, 19, 0], [1, 1, 2, 5]])
    types = np.array([[0, 0, 1, 1], [0, 1, 1, 1]])
    x = (layer.word_embeddings.embeddings.numpy()[ids] + layer.token_type_embeddings.embeddings.numpy()[types]
         + layer.position_embeddings.numpy()[None, :4])
    gamma, beta = (w.numpy() for w in layer.layer_norm.weights)
    expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12) * gamma + beta
    np.testing.assert_allclose(layer(ids, types), expected, rtol=1e-5, atol=1e-5)
    dropped = np.asarray(layer(ids, types, training=True))
    assert 0 < (dropped == 0).mean() < 1
    with pytest.raises(OptionsError, match="sequence length 7 exceeds max_position_embeddings \\(6\\)"):
        layer(np.zeros((1, 7), "int32"), np.zeros((1, 7), "int32"))
    assert BertEmbeddings.from_config(layer.get_config()).max_position_embeddings == 6
