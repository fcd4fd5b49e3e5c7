"""Google checkpoint names (kbert.convert.names): a BertEncoder's weights under the names and [in, out]
shapes of google-research/bert's checkpoints (written out here by hand), NSP's transposed output
weights, optimizer slots that are not model weights, and an assignment that lists every difference."""

import types

import keras
import numpy as np
import pytest

from kbert.convert.names import (ConversionError, assign, encoder_variables, export_arrays, head_variables,
                                 heads_present, is_model_weight)
from kbert.model_dir import load_encoder

PER_LAYER = ["attention/self/query/kernel", "attention/self/query/bias", "attention/self/key/kernel",
             "attention/self/key/bias", "attention/self/value/kernel", "attention/self/value/bias",
             "attention/output/dense/kernel", "attention/output/dense/bias",
             "attention/output/LayerNorm/gamma", "attention/output/LayerNorm/beta",
             "intermediate/dense/kernel", "intermediate/dense/bias", "output/dense/kernel", "output/dense/bias",
             "output/LayerNorm/gamma", "output/LayerNorm/beta"]


@pytest.fixture(scope="module")
def encoder(tiny_model_dir):
    return load_encoder(tiny_model_dir)


def test_the_encoder_has_exactly_googles_names_and_shapes(encoder):
    c = encoder.config
    variables = encoder_variables(encoder)
    want = {"bert/embeddings/word_embeddings", "bert/embeddings/token_type_embeddings",
            "bert/embeddings/position_embeddings", "bert/embeddings/LayerNorm/gamma",
            "bert/embeddings/LayerNorm/beta", "bert/pooler/dense/kernel", "bert/pooler/dense/bias"}
    want |= {f"bert/encoder/layer_{i}/{n}" for i in range(c.num_hidden_layers) for n in PER_LAYER}
    assert set(variables) == want
    H, I = c.hidden_size, c.intermediate_size
    shapes = {k: tuple(v.shape) for k, v in variables.items()}
    assert shapes["bert/embeddings/word_embeddings"] == (c.vocab_size, H)
    assert shapes["bert/embeddings/position_embeddings"] == (c.max_position_embeddings, H)
    assert shapes["bert/encoder/layer_1/intermediate/dense/kernel"] == (H, I)
    assert shapes["bert/encoder/layer_1/output/dense/kernel"] == (I, H)
    assert len({id(v) for v in variables.values()}) == len(variables)  # no weight under two names


def test_nsp_output_weights_are_transposed_and_assign_inverts_export():
    dense = keras.layers.Dense(2)
    dense.build((None, 8))
    dense.kernel.assign(np.arange(16, dtype="float32").reshape(8, 2))
    variables = head_variables("nsp", types.SimpleNamespace(dense=dense))
    arrays = export_arrays(variables)
    assert arrays["cls/seq_relationship/output_weights"].shape == (2, 8)  # Google's [2, H]
    np.testing.assert_array_equal(arrays["cls/seq_relationship/output_weights"], dense.kernel.numpy().T)
    dense.kernel.assign(np.zeros((8, 2), "float32"))
    assign(variables, arrays, "ckpt")
    np.testing.assert_array_equal(dense.kernel.numpy(), np.arange(16, dtype="float32").reshape(8, 2))
    with pytest.raises(ValueError, match="'sop'"):
        head_variables("sop", None)


def test_assign_lists_missing_extra_and_wrong_shapes_and_changes_nothing(encoder):
    variables = encoder_variables(encoder)
    before = variables["bert/pooler/dense/bias"].numpy().copy()
    arrays = export_arrays(variables)
    del arrays["bert/encoder/layer_0/output/dense/bias"]
    arrays["bert/encoder/layer_7/output/dense/bias"] = np.zeros(3, "float32")
    arrays["bert/pooler/dense/kernel"] = np.zeros((3, 4), "float32")
    arrays["bert/pooler/dense/bias"] = before + 1
    with pytest.raises(ConversionError) as e:
        assign(variables, arrays, "x.ckpt")
    message = str(e.value)
    assert "missing from x.ckpt (1): bert/encoder/layer_0/output/dense/bias" in message
    assert "not used by the model (1): bert/encoder/layer_7/output/dense/bias" in message
    H = encoder.config.hidden_size
    assert f"bert/pooler/dense/kernel: checkpoint (3, 4), model ({H}, {H})" in message
    np.testing.assert_array_equal(variables["bert/pooler/dense/bias"].numpy(), before)


def test_optimizer_slots_are_not_weights_and_heads_are_found_by_prefix():
    assert is_model_weight("bert/pooler/dense/bias")
    for name in ("global_step", "bert/pooler/dense/bias/adam_m", "bert/pooler/dense/bias/adam_v",
                 "cls/predictions/output_bias/lamb_m", "loss_scale", "good_steps"):
        assert not is_model_weight(name)
    assert heads_present(["bert/pooler/dense/bias", "cls/seq_relationship/output_bias"]) == ["nsp"]
    assert heads_present(["cls/predictions/output_bias", "cls/seq_relationship/output_bias"]) == ["mlm", "nsp"]
    assert heads_present(["bert/pooler/dense/bias"]) == []
