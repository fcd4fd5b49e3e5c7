import keras
import numpy as np
import pytest

from kbert import BertConfig, BertEncoder


def _inputs(batch, seq, vocab=30522, seed=0, pad_from=None):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(batch, seq)).astype("int32")
    mask = np.ones((batch, seq), "int32")
    if pad_from is not None:
        mask[:, pad_from:] = 0
        ids[:, pad_from:] = 0
    types = np.zeros((batch, seq), "int32")
    return {"input_word_ids": ids, "input_mask": mask, "input_type_ids": types}


@pytest.fixture(scope="module")
def tiny():
    keras.utils.set_random_seed(1)
    return BertEncoder(BertConfig.preset("tiny", max_position_embeddings=64))


def test_outputs_follow_tf_hub_names_and_shapes(tiny):
    out = tiny(_inputs(3, 10))
    assert set(out) == {"sequence_output", "pooled_output", "encoder_outputs"}
    assert out["sequence_output"].shape == (3, 10, 128)
    assert out["pooled_output"].shape == (3, 128)
    assert len(out["encoder_outputs"]) == 2
    np.testing.assert_array_equal(out["encoder_outputs"][-1], out["sequence_output"])
    assert sorted(i.name for i in tiny.inputs) == ["input_mask", "input_type_ids", "input_word_ids"]


def test_padding_does_not_change_real_positions(tiny):
    short = _inputs(2, 7, seed=3)
    long = {k: np.pad(v, ((0, 0), (0, 9))) for k, v in short.items()}
    a = tiny(short)["sequence_output"].numpy()
    b = tiny(long)["sequence_output"].numpy()[:, :7]
    np.testing.assert_allclose(a, b, atol=1e-5)
    # and the padded tokens' contents are irrelevant
    noisy = {k: v.copy() for k, v in long.items()}
    noisy["input_word_ids"][:, 7:] = 999
    c = tiny(noisy)["sequence_output"].numpy()[:, :7]
    np.testing.assert_allclose(b, c, atol=1e-6)


def test_any_length_up_to_max_and_clear_error_beyond(tiny):
    assert tiny(_inputs(1, 64))["sequence_output"].shape == (1, 64, 128)
    assert tiny(_inputs(1, 1))["sequence_output"].shape == (1, 1, 128)
    with pytest.raises(Exception, match="max_position_embeddings"):
        tiny(_inputs(1, 65))


def test_dropout_only_in_training(tiny):
    x = _inputs(2, 8)
    a, b = tiny(x, training=False), tiny(x, training=False)
    np.testing.assert_array_equal(a["pooled_output"], b["pooled_output"])
    c = tiny(x, training=True)
    assert not np.allclose(a["sequence_output"], c["sequence_output"])


def test_pooler_is_tanh_dense_on_first_token(tiny):
    out = tiny(_inputs(2, 5))
    first = out["sequence_output"].numpy()[:, 0]
    kernel, bias = (w.numpy() for w in tiny.pooler.weights)
    np.testing.assert_allclose(out["pooled_output"], np.tanh(first @ kernel + bias), atol=1e-5)


def test_hidden_act_selects_the_ffn_activation():
    keras.utils.set_random_seed(2)
    a = BertEncoder(BertConfig.preset("tiny", hidden_act="gelu"))
    b = BertEncoder(BertConfig.preset("tiny", hidden_act="gelu_exact"))
    b.set_weights(a.get_weights())
    x = _inputs(1, 6)
    diff = np.abs(a(x)["sequence_output"] - b(x)["sequence_output"]).max()
    assert 0 < diff < 0.1


def test_config_round_trip_and_serialization(tiny, tmp_path):
    clone = BertEncoder.from_config(tiny.get_config())
    assert clone.config == tiny.config
    path = tmp_path / "tiny.weights.h5"
    tiny.save_weights(path)
    clone.load_weights(path)
    x = _inputs(2, 9)
    np.testing.assert_array_equal(tiny(x)["sequence_output"], clone(x)["sequence_output"])


def test_outputs_at_positions_equal_the_full_pass_and_its_gradients(tiny):
    """outputs_at (last block only at some positions) = the full call gathered there, values and
    gradients of every weight; with padding, repeated positions and a padded position."""
    import tensorflow as tf

    x = _inputs(3, 12, seed=4)
    x["input_mask"][1, 7:] = 0
    x["input_word_ids"][1, 7:] = 0
    positions = np.array([[1, 5, 5, 11], [0, 3, 6, 9], [2, 4, 8, 10]], "int32")
    probe = np.random.default_rng(0).normal(size=(3, 4, tiny.config.hidden_size)).astype("float32")

    def losses(inputs):
        full = tiny(inputs)
        at = tiny.outputs_at(inputs, positions)
        gathered = tf.gather(full["sequence_output"], positions, batch_dims=1)
        return (gathered, full["pooled_output"]), (at["sequence_output"], at["pooled_output"])

    with tf.GradientTape(persistent=True) as tape:
        (seq_full, pool_full), (seq_at, pool_at) = losses(x)
        loss_full = tf.reduce_sum(seq_full * probe) + tf.reduce_sum(pool_full)
        loss_at = tf.reduce_sum(seq_at * probe) + tf.reduce_sum(pool_at)
    assert seq_at.shape == (3, 4, tiny.config.hidden_size)
    np.testing.assert_allclose(seq_at, seq_full, atol=1e-5)
    np.testing.assert_allclose(pool_at, pool_full, atol=1e-5)
    weights = tiny.trainable_variables
    for w, g_full, g_at in zip(weights, tape.gradient(loss_full, weights), tape.gradient(loss_at, weights)):
        g_full, g_at = (tf.convert_to_tensor(g) for g in (g_full, g_at))
        np.testing.assert_allclose(g_at, g_full, atol=1e-4, rtol=1e-4, err_msg=w.path)
    # every weight is reached, the last block's too
    assert all(float(tf.reduce_sum(tf.abs(tf.convert_to_tensor(g)))) > 0
               for g in tape.gradient(loss_at, tiny.blocks[-1].trainable_variables))


def _saved_function_names(path) -> list[str]:
    from tensorflow.core.protobuf import saved_model_pb2

    proto = saved_model_pb2.SavedModel.FromString((path / "saved_model.pb").read_bytes())
    return [f.signature.name for f in proto.meta_graphs[0].graph_def.library.function]


def test_a_savedmodel_holding_the_encoder_stores_only_the_functions_it_names(tiny, tmp_path):
    import tensorflow as tf

    from kbert import compat

    # Keras' default signature of a functional model is a property that makes a new tf.function on
    # each read: tf.saved_model.save read and traced it for the encoder inside every export.
    inp = keras.Input([3])
    plain = keras.Model(inp, keras.layers.Dense(2)(inp))
    assert plain._default_save_signature is not plain._default_save_signature
    assert tiny._default_save_signature is None

    module = compat.AutoTrackable()
    module.encoder = tiny
    module.embed = tf.function(lambda x: tiny({"input_word_ids": x, "input_mask": tf.ones_like(x),
                                               "input_type_ids": tf.zeros_like(x)})["pooled_output"],
                               input_signature=[tf.TensorSpec([None, None], tf.int32)])
    tf.saved_model.save(module, str(tmp_path / "module"), signatures={"embed": module.embed})
    names = _saved_function_names(tmp_path / "module")
    assert names and not any("serving_default" in n for n in names), names
    ids = _inputs(2, 5)
    restored = tf.saved_model.load(str(tmp_path / "module")).signatures["embed"]
    np.testing.assert_allclose(restored(x=tf.constant(ids["input_word_ids"]))["output_0"],
                               tiny({**ids, "input_mask": np.ones_like(ids["input_mask"])})["pooled_output"], atol=1e-5)
    # The encoder as the root saves (Keras' default signature, which returns a list, made it fail).
    tf.saved_model.save(tiny, str(tmp_path / "root"))
    reader = tf.train.load_checkpoint(str(tmp_path / "root" / "variables" / "variables"))
    saved = sorted(tuple(shape) for key, shape in reader.get_variable_to_shape_map().items() if "VARIABLE_VALUE" in key)
    assert saved == sorted(tuple(w.shape) for w in tiny.weights)


@pytest.fixture(scope="module")
def causal_tiny():
    keras.utils.set_random_seed(2)
    return BertEncoder(BertConfig.preset("tiny", vocab_size=200, max_position_embeddings=64), causal=True)


def _ragged_inputs():
    x = _inputs(3, 10, vocab=200, seed=5)
    for row, length in ((0, 6), (2, 3)):
        x["input_mask"][row, length:] = 0
        x["input_word_ids"][row, length:] = 0
    return x


def test_causal_outputs_up_to_t_ignore_every_token_after_t(causal_tiny, tiny):
    """Changing the tokens after position t leaves the causal encoder's outputs at positions <= t
    exactly as they were (and changes them after t); a bidirectional encoder's change everywhere."""
    x = _ragged_inputs()
    changed = {k: v.copy() for k, v in x.items()}
    changed["input_word_ids"][:, 4:] = np.where(x["input_mask"][:, 4:] > 0, 7, 0)
    changed["input_type_ids"][:, 6:] = x["input_mask"][:, 6:]
    a, b = (np.asarray(causal_tiny(v)["sequence_output"]) for v in (x, changed))
    np.testing.assert_array_equal(a[:, :4], b[:, :4])
    assert np.abs(a[:2, 4:6] - b[:2, 4:6]).max(-1).min() > 1e-3  # every later real position changed
    bidirectional = [np.asarray(tiny(v)["sequence_output"]) for v in (x, changed)]
    assert np.abs(bidirectional[0][:2, :4] - bidirectional[1][:2, :4]).max(-1).min() > 1e-3


def test_causal_pooled_output_reads_the_last_real_token(causal_tiny):
    """pooled_output = tanh dense of sequence_output at sum(input_mask) - 1, in the functional call,
    with output_attentions and in outputs_at (whose positions see the same left context)."""
    x = _ragged_inputs()
    out = causal_tiny(x)
    seq = np.asarray(out["sequence_output"])
    last = x["input_mask"].sum(1) - 1
    assert list(last) == [5, 9, 2]
    kernel, bias = (w.numpy() for w in causal_tiny.pooler.weights)
    expected = np.tanh(seq[np.arange(3), last] @ kernel + bias)
    np.testing.assert_allclose(out["pooled_output"], expected, atol=1e-5)
    np.testing.assert_allclose(causal_tiny(x, output_attentions=True)["pooled_output"], expected, atol=1e-5)
    positions = np.array([[0, 5], [3, 9], [1, 2]], "int32")
    at = causal_tiny.outputs_at(x, positions)
    np.testing.assert_allclose(at["pooled_output"], expected, atol=1e-5)
    np.testing.assert_allclose(at["sequence_output"], np.take_along_axis(seq, positions[..., None], 1), atol=1e-5)
    clone = BertEncoder.from_config(causal_tiny.get_config())
    assert clone.causal and not BertEncoder.from_config(BertEncoder(causal_tiny.config).get_config()).causal
