"""The TF Hub-style encoder SavedModel: contract, training mode, assets, MLM subobject."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.export.encoder import export_encoder
from kbert.layers.heads import build_head
from kbert.model_dir import load_encoder, save_model_dir


@pytest.fixture(scope="module")
def tiny_with_mlm(tmp_path_factory, tiny_model_dir):
    encoder = load_encoder(tiny_model_dir)
    mlm = build_head("mlm", encoder.config)
    out = tmp_path_factory.mktemp("mlm") / "model"
    save_model_dir(out, encoder, vocab_file=tiny_model_dir / "vocab.txt",
                   heads={"mlm": (mlm, {"type": "mlm"})})
    export_encoder(out, out.parent / "sm")
    return out, encoder, mlm, tf.saved_model.load(str(out.parent / "sm"))


def _inputs(batch=2, seq=12):
    rng = np.random.default_rng(0)
    mask = np.ones((batch, seq), np.int32)
    mask[0, 8:] = 0
    return {"input_word_ids": tf.constant(rng.integers(1, 30000, (batch, seq)), tf.int32),
            "input_mask": tf.constant(mask), "input_type_ids": tf.zeros((batch, seq), tf.int32)}


@pytest.mark.slow
def test_hub_contract(tiny_with_mlm):
    _, encoder, _, sm = tiny_with_mlm
    x = _inputs()
    out = sm(x, training=False)
    assert set(out) == {"sequence_output", "pooled_output", "default", "encoder_outputs"}
    ref = encoder(x)
    np.testing.assert_allclose(out["sequence_output"], ref["sequence_output"], atol=1e-5)
    np.testing.assert_array_equal(out["default"], out["pooled_output"])
    assert len(out["encoder_outputs"]) == 2
    assert bool(sm.do_lower_case.numpy()) is True
    vocab = open(sm.vocab_file.asset_path.numpy().decode()).read().splitlines()
    assert len(vocab) == 30522 and vocab[101] == "[CLS]"
    assert len(sm.trainable_variables) == len(encoder.trainable_variables)
    assert len(sm.variables) >= len(sm.trainable_variables)


@pytest.mark.slow
def test_training_flag_turns_dropout_on(tiny_with_mlm):
    sm = tiny_with_mlm[3]
    x = _inputs()
    a = sm(x, training=False)["pooled_output"]
    b = sm(x, training=True)["pooled_output"]
    assert not np.allclose(a, b)


@pytest.mark.slow
def test_mlm_subobject_gives_logits_at_masked_positions(tiny_with_mlm):
    _, encoder, mlm, sm = tiny_with_mlm
    x = _inputs()
    positions = tf.constant([[1, 3, 5], [0, 2, 11]], tf.int32)
    out = sm.mlm({**x, "masked_lm_positions": positions})
    assert out["mlm_logits"].shape == (2, 3, 30522)
    seq = encoder(x)["sequence_output"]
    expected = mlm(seq, positions, encoder.word_embeddings)
    np.testing.assert_allclose(out["mlm_logits"], expected, atol=1e-4)
    assert "mlm" in sm.signatures


@pytest.mark.slow
def test_serving_signature_is_flat(tiny_with_mlm):
    sig = tiny_with_mlm[3].signatures["serving_default"]
    out = sig(**_inputs())
    assert {"encoder_outputs_0", "encoder_outputs_1", "pooled_output", "sequence_output", "default"} == set(out)


def test_wrong_dtype_is_rejected(tiny_with_mlm):
    sm = tiny_with_mlm[3]
    x = {k: tf.cast(v, tf.float32) for k, v in _inputs().items()}
    with pytest.raises(tf.errors.InvalidArgumentError, match="expected to be a int32 tensor"):
        sm.signatures["serving_default"](**x)
    with pytest.raises((TypeError, ValueError)):
        sm(x)  # the Python-level call refuses a dtype it has no function for


def test_keras3_tfsmlayer_consumes_the_export(tiny_with_mlm):
    import keras

    out_dir = tiny_with_mlm[0].parent / "sm"
    layer = keras.layers.TFSMLayer(str(out_dir), call_endpoint="serve")
    x = _inputs()
    out = layer(x)
    np.testing.assert_allclose(out["pooled_output"], tiny_with_mlm[1](x)["pooled_output"], atol=1e-5)


@pytest.mark.slow
def test_hub_keraslayer_fine_tunes_the_encoder_in_tf_keras(tiny_with_mlm, tmp_path):
    from conftest import run_fresh_python

    # Ids only (no strings-in head signatures): the export then loads with TensorFlow alone, as
    # TF Hub's encoders do (no tensorflow_text in this process).
    out_dir = export_encoder(tiny_with_mlm[0], tmp_path / "ids_only", head_signatures=False)
    result = run_fresh_python(f"""
import numpy as np, tensorflow as tf, tensorflow_hub as hub, tf_keras
enc = hub.KerasLayer({str(out_dir)!r}, trainable=True)
names = ("input_word_ids", "input_mask", "input_type_ids")
inputs = {{n: tf_keras.Input(shape=(None,), dtype=tf.int32, name=n) for n in names}}
pooled = enc(inputs)["pooled_output"]
model = tf_keras.Model(inputs, tf_keras.layers.Dense(2)(pooled))
model.compile(tf_keras.optimizers.Adam(1e-3),
              tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True))
rng = np.random.default_rng(0)
x = {{"input_word_ids": rng.integers(1, 30000, (16, 10)).astype("int32"),
      "input_mask": np.ones((16, 10), "int32"), "input_type_ids": np.zeros((16, 10), "int32")}}
y = rng.integers(0, 2, (16,))
before = [v.numpy().copy() for v in enc.trainable_variables]
assert len(before) > 20, len(before)
h = model.fit(x, y, epochs=5, batch_size=8, verbose=0).history["loss"]
changed = sum(not np.allclose(a, v.numpy()) for a, v in zip(before, enc.trainable_variables))
print("CHANGED", changed, len(before), h[0], h[-1])
""")
    changed, total, first, last = result.split("CHANGED")[1].split()
    assert int(changed) > int(total) // 2  # the encoder's own weights were fine-tuned
    assert float(last) < float(first)
