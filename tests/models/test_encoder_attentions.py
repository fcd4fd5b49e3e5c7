"""BertEncoder(...)(inputs, output_attentions=True): attention probabilities per layer, on request only."""

import collections

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert import BertConfig, BertEncoder
from kbert.model_dir import load_encoder

NAMES = ("input_word_ids", "input_mask", "input_type_ids")


@pytest.fixture(scope="module")
def tiny():
    keras.utils.set_random_seed(2)
    return BertEncoder(BertConfig.preset("tiny", vocab_size=200, max_position_embeddings=32))


def _padded(batch=3, seq=12):
    rng = np.random.default_rng(0)
    mask = (np.arange(seq)[None, :] < np.array([seq, 7, 3])[:batch, None]).astype("int32")
    return {"input_word_ids": rng.integers(1, 200, (batch, seq)).astype("int32") * mask,
            "input_mask": mask, "input_type_ids": np.zeros((batch, seq), "int32")}


def test_probabilities_are_rows_of_a_softmax_over_the_real_keys(tiny):
    x = _padded()
    out = tiny(x, output_attentions=True)
    probs = [np.asarray(p) for p in out["attention_probs"]]
    assert len(probs) == tiny.config.num_hidden_layers
    for p in probs:
        assert p.shape == (3, tiny.config.num_attention_heads, 12, 12) and p.dtype == np.float32
        np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-6)
        padded_keys = np.broadcast_to(x["input_mask"][:, None, None, :] == 0, p.shape)
        assert np.all(p[padded_keys] == 0.0)
        assert np.all(p[~padded_keys] > 0.0)


def test_the_other_outputs_are_those_of_the_plain_call(tiny):
    x = _padded()
    plain, with_probs = tiny(x), tiny(x, output_attentions=True)
    assert set(plain) == {"sequence_output", "pooled_output", "encoder_outputs"}
    assert set(with_probs) == set(plain) | {"attention_probs"}
    for name in ("sequence_output", "pooled_output"):
        np.testing.assert_allclose(with_probs[name], plain[name], atol=1e-6)
    for a, b in zip(with_probs["encoder_outputs"], plain["encoder_outputs"]):
        np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_array_equal(tiny.attention_probs(x)[0], with_probs["attention_probs"][0])


def test_not_requested_costs_nothing(tiny):
    """The default call traces the same ops as calling the functional graph itself."""
    spec = {name: tf.TensorSpec([None, None], tf.int32) for name in NAMES}

    def ops(fn):
        return collections.Counter(op.type for op in tf.function(fn).get_concrete_function(spec).graph.get_operations())

    default = ops(lambda x: tiny(x))
    assert default == ops(lambda x: super(BertEncoder, tiny).call(x))  # Functional.call: the graph as built
    assert ops(lambda x: tiny(x, output_attentions=True)["attention_probs"]) != default


def test_minilm_probabilities_equal_transformers_output_attentions(minilm_model_dir, shared_data):
    """Reference: transformers' output_attentions (eager attention) for all-MiniLM-L6-v2."""
    ref = np.load(shared_data / "reference" / "minilm_attentions.npz")
    encoder = load_encoder(minilm_model_dir)
    probs = encoder({name: ref[name] for name in NAMES}, output_attentions=True)["attention_probs"]
    assert len(probs) == ref["attentions"].shape[0]
    for layer, (ours, theirs) in enumerate(zip(probs, ref["attentions"])):
        np.testing.assert_allclose(np.asarray(ours), theirs, atol=1e-5, rtol=1e-4, err_msg=f"layer {layer}")
