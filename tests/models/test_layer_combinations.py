"""kbert.models.layer_combinations: ``feature_model`` gives ``combine_layers``' numbers from the
encoder's own layers and runs only the layers its combination reads; the names stay public as
``kbert.features.*``. (Each combination against a hand-made sum or concat of the layers:
tests/features/test_extract.py and tests/tasks/core/test_sequence_features.py.)"""

import keras
import numpy as np
import pytest

import kbert
from kbert.errors import OptionsError
from kbert.layers.transformer import TransformerBlock
from kbert.models.layer_combinations import COMBINATIONS, all_layers, combine_layers, feature_model


@pytest.fixture(scope="module")
def encoder(tmp_path_factory):
    model_dir = kbert.random_model_dir(tmp_path_factory.mktemp("four") / "model", num_hidden_layers=4,
                                       hidden_size=16, num_attention_heads=2, intermediate_size=32, heads=False)
    return kbert.load_encoder(model_dir)


def _blocks(model) -> int:
    return sum(isinstance(layer, TransformerBlock) for layer in model.layers)


def test_feature_models_give_combine_layers_numbers_and_run_only_what_they_read(encoder):
    rng = np.random.default_rng(0)
    inputs = {"input_word_ids": rng.integers(5, 100, (2, 6)).astype("int32"),
              "input_mask": np.array([[1] * 6, [1] * 3 + [0] * 3], "int32"),
              "input_type_ids": np.zeros((2, 6), "int32")}
    layers = [keras.ops.convert_to_numpy(x) for x in keras.Model(encoder.inputs, all_layers(encoder))(inputs)]
    combined = combine_layers(layers)
    for name in COMBINATIONS:
        model = feature_model(encoder, name)
        np.testing.assert_allclose(keras.ops.convert_to_numpy(model(inputs)), keras.ops.convert_to_numpy(combined[name]),
                                   rtol=1e-5, atol=1e-5, err_msg=name)
    assert _blocks(feature_model(encoder, "embeddings")) == 0
    assert _blocks(feature_model(encoder, "second_to_last_hidden")) == 3
    assert _blocks(feature_model(encoder, "sum_all_layers")) == 4
    assert kbert.features.COMBINATIONS is COMBINATIONS and kbert.features.combine_layers is combine_layers
    with pytest.raises(OptionsError, match="unknown combination 'mean'"):
        feature_model(encoder, "mean")
