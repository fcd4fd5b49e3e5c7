"""Feature extraction: every combination of the paper's Table 7 recomputed by hand from the
per-layer outputs (embedding layer + each block) of the encoder."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert import BertConfig, BertEncoder
from kbert.errors import OptionsError
from kbert.features import COMBINATIONS, FeatureExtractor
from kbert.model_dir import save_model_dir
from conftest import UNCASED_VOCAB

TEXTS = ["The quick brown fox.", "Jumps over the lazy dog near the river bank today.", "Hi"]


@pytest.fixture(scope="module")
def five_layer_dir(tmp_path_factory):
    keras.utils.set_random_seed(0)
    config = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=5, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=64)
    out = tmp_path_factory.mktemp("five") / "model"
    save_model_dir(out, BertEncoder(config), vocab_file=UNCASED_VOCAB)
    return out


@pytest.mark.slow
def test_combinations_by_hand(five_layer_dir):
    extractor = FeatureExtractor.from_model_dir(five_layer_dir, seq_length=32)
    features = extractor.extract(TEXTS, batch_size=2)
    mask = features["input_mask"].astype(bool)
    width = mask.shape[1]
    assert width == mask.sum(axis=1).max()  # padded to the longest text only

    packed = extractor.preprocessor(tf.constant(TEXTS))
    encoder = extractor.encoder
    embedding = encoder.embeddings(packed["input_word_ids"], packed["input_type_ids"], training=False).numpy()
    blocks = [b.numpy() for b in encoder(packed, training=False)["encoder_outputs"]]
    assert len(blocks) == 5
    layers = [x[:, :width] for x in [embedding] + blocks]
    expected = {
        "embeddings": layers[0],
        "second_to_last_hidden": layers[4],
        "last_hidden": layers[5],
        "sum_last_four_hidden": layers[2] + layers[3] + layers[4] + layers[5],
        "concat_last_four_hidden": np.concatenate(layers[2:6], axis=-1),
        "sum_all_layers": sum(layers),
    }
    assert set(COMBINATIONS) <= set(features)
    for name, value in expected.items():
        assert features[name].shape == value.shape, name
        np.testing.assert_allclose(features[name][mask], value[mask], atol=1e-4, err_msg=name)
        assert (features[name][~mask] == 0).all()  # padding rows are zeros in extract()
    np.testing.assert_allclose(features["hidden_states"][:, mask], np.stack(layers)[:, mask], atol=1e-4)
    assert features["concat_last_four_hidden"].shape[-1] == 4 * 32


@pytest.mark.slow
def test_too_few_layers_for_last_four(tiny_model_dir):
    with pytest.raises(OptionsError, match="needs 4 Transformer blocks; the encoder has 2"):
        FeatureExtractor.from_model_dir(tiny_model_dir)
    extractor = FeatureExtractor.from_model_dir(tiny_model_dir, combinations=("last_hidden", "sum_all_layers"))
    assert set(extractor(tf.constant(["a b"]))) == {"hidden_states", "input_mask", "last_hidden", "sum_all_layers"}
    with pytest.raises(ValueError, match="unknown combination 'mean'"):
        FeatureExtractor.from_model_dir(tiny_model_dir, combinations=("mean",))
