"""The accelerator fast paths (kbert.layers.accel) against the plain keras.ops reference.

Fused attention (keras.ops.dot_product_attention) must give the plain path's numbers with a
padding mask: 1e-5 in float32, and bf16 within the rounding of bf16; mixed precision must keep
LayerNorm statistics and the attention softmax in float32. The JAX checks run in one child
interpreter (Keras fixes its backend at import); its numbers come back in an .npz.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import keras
import numpy as np
import pytest

from kbert import BertConfig, BertEncoder
from kbert.layers import accel
from kbert.layers.attention import MultiHeadSelfAttention

from conftest import require

REPO = pathlib.Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent("""
    import json, sys
    import keras, numpy as np
    from kbert import BertConfig
    from kbert.layers.attention import MultiHeadSelfAttention
    from kbert.models.encoder import BertEncoder
    assert keras.backend.backend() == "jax", keras.backend.backend()
    out_file = sys.argv[1]
    numpy = keras.ops.convert_to_numpy
    out = {}
    rng = np.random.default_rng(11)
    lengths = np.array([16, 9, 3, 12])
    mask = (np.arange(16)[None, :] < lengths[:, None]).astype("int32")
    x = rng.normal(size=(4, 16, 64)).astype("float32")
    positions = np.array([[0, 2, 5], [1, 8, 3], [0, 1, 2], [11, 4, 7]], dtype="int32")

    # One attention layer, both implementations on the same weights.
    plain = MultiHeadSelfAttention(64, 4, dropout=0.1, output_dropout=0.1, name="a")
    fused = MultiHeadSelfAttention(64, 4, dropout=0.1, output_dropout=0.1, attention_impl="fused", name="a")
    plain.build((None, None, 64)); fused.build((None, None, 64))
    for w in plain.weights:  # non-zero biases, so a dropped bias would show
        w.assign(rng.normal(scale=0.2, size=w.shape).astype("float32"))
    fused.set_weights(plain.get_weights())
    out["att_plain"], out["att_fused"] = numpy(plain(x, mask)), numpy(fused(x, mask))
    out["att_pos_plain"] = numpy(plain(x, mask, positions=positions))
    out["att_pos_fused"] = numpy(fused(x, mask, positions=positions))
    out["att_nomask_plain"], out["att_nomask_fused"] = numpy(plain(x)), numpy(fused(x))

    config = BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=32)
    ids = {"input_word_ids": (rng.integers(1, 300, (4, 16)) * mask).astype("int32"), "input_mask": mask,
           "input_type_ids": ((np.arange(16)[None, :] >= 5) * mask).astype("int32")}
    # (no keras.utils.set_random_seed: it imports TensorFlow where installed)
    enc_plain = BertEncoder(config)
    weights = enc_plain.get_weights()
    enc_fused = BertEncoder(config, attention_impl="fused")
    enc_fused.set_weights(weights)
    out["enc_f32_plain"] = numpy(enc_plain(ids)["sequence_output"])
    out["enc_f32_fused"] = numpy(enc_fused(ids)["sequence_output"])
    # "fused" in training: the hidden dropouts still apply, the attention-probability dropout does not.
    nodrop = BertConfig.preset("tiny", vocab_size=300, max_position_embeddings=32, hidden_dropout_prob=0.0,
                               attention_probs_dropout_prob=0.5)
    for impl in ("plain", "fused"):
        enc = BertEncoder(nodrop, attention_impl=impl)
        enc.set_weights(weights)
        out[f"train_{impl}"] = numpy(enc(ids, training=True)["sequence_output"])
        out[f"infer_{impl}"] = numpy(enc(ids)["sequence_output"])

    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    for impl in ("plain", "fused"):
        enc = BertEncoder(config, attention_impl=impl)
        enc.set_weights(weights)
        o = enc(ids)["sequence_output"]
        out[f"enc_bf16_{impl}"] = numpy(keras.ops.cast(o, "float32"))
        out[f"enc_bf16_{impl}_dtype"] = np.array(str(o.dtype))
    out["variable_dtypes"] = np.array(sorted({v.dtype for v in enc.weights}))
    probs = BertEncoder(config)(ids, output_attentions=True)["attention_probs"][0]
    out["probs_dtype"], out["probs"] = np.array(str(probs.dtype)), numpy(probs)
    # LayerNorm over rows with a large common offset: statistics taken in bf16 would lose the
    # spread entirely; in float32 they see it.
    ln = keras.layers.LayerNormalization(epsilon=1e-12)
    rows = (1000.0 + rng.normal(scale=4.0, size=(8, 64))).astype("float32")
    y = ln(rows)
    out["ln_in"], out["ln_out"], out["ln_dtype"] = rows, numpy(keras.ops.cast(y, "float32")), np.array(str(y.dtype))
    np.savez(out_file, **out)
    assert "tensorflow" not in sys.modules, "the accelerator path imported TensorFlow"
""")


@pytest.fixture(scope="module")
def jax_run(tmp_path_factory):
    require("jax")
    out = tmp_path_factory.mktemp("accel") / "out.npz"
    env = dict(os.environ, KERAS_BACKEND="jax", JAX_PLATFORMS="cpu",
               PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", CHILD, str(out)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return dict(np.load(out))


def _max_diff(a, b):
    return float(np.max(np.abs(a.astype("float64") - b.astype("float64"))))


def _rel(a, b):
    return float(np.linalg.norm(a.astype("float64") - b) / np.linalg.norm(b.astype("float64")))


def test_fused_attention_matches_plain_in_float32_with_padding(jax_run):
    for name in ("att", "att_pos", "att_nomask"):
        assert _max_diff(jax_run[f"{name}_fused"], jax_run[f"{name}_plain"]) <= 1e-5, name
    assert _max_diff(jax_run["enc_f32_fused"], jax_run["enc_f32_plain"]) <= 1e-5


def test_fused_attention_in_bf16_is_within_bf16_rounding_of_float32(jax_run):
    reference = jax_run["enc_f32_plain"]
    assert str(jax_run["enc_bf16_fused_dtype"]) == "bfloat16"
    plain, fused = _rel(jax_run["enc_bf16_plain"], reference), _rel(jax_run["enc_bf16_fused"], reference)
    # bf16 keeps 8 significant bits (relative rounding 2^-9 = 2e-3 per value); two blocks of
    # matmuls land between 1e-3 and 1e-2 of the float32 result; fused no worse than plain.
    assert plain < 2e-2 and fused < 2e-2, (plain, fused)
    assert _rel(jax_run["enc_bf16_fused"], jax_run["enc_bf16_plain"]) < 2e-2


def test_fused_training_drops_no_attention_probabilities(jax_run):
    # Hidden dropout 0, attention dropout 0.5: plain training differs from inference, fused does not
    # (keras.ops.dot_product_attention has no dropout: the stated difference of "fused").
    assert _max_diff(jax_run["train_plain"], jax_run["infer_plain"]) > 1e-2
    assert _max_diff(jax_run["train_fused"], jax_run["infer_fused"]) <= 1e-5
    assert _max_diff(jax_run["infer_fused"], jax_run["infer_plain"]) <= 1e-5


def test_mixed_bfloat16_keeps_float32_where_it_matters(jax_run):
    assert list(jax_run["variable_dtypes"]) == ["float32"]
    assert str(jax_run["probs_dtype"]) == "float32"
    np.testing.assert_allclose(jax_run["probs"].sum(-1), 1.0, atol=1e-6)
    assert str(jax_run["ln_dtype"]) == "bfloat16"
    # LayerNorm in float64; bf16 statistics of rows near 1000 (bf16 spacing 4 there) would miss
    # the spread of the rows (std 4) by far more than the 2^-9 rounding of the bf16 output.
    x = jax_run["ln_in"].astype("float64")
    ref = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-12)
    assert _rel(jax_run["ln_out"], ref) < 1e-2


def test_fused_attention_matches_plain_on_this_backend():
    rng = np.random.default_rng(5)
    x = rng.normal(size=(3, 10, 32)).astype("float32")
    mask = (np.arange(10)[None, :] < np.array([10, 4, 7])[:, None]).astype("int32")
    plain = MultiHeadSelfAttention(32, 4)
    fused = MultiHeadSelfAttention(32, 4, attention_impl="fused")
    plain.build((None, None, 32))
    fused.build((None, None, 32))
    fused.set_weights(plain.get_weights())
    np.testing.assert_allclose(keras.ops.convert_to_numpy(fused(x, mask)),
                               keras.ops.convert_to_numpy(plain(x, mask)), atol=1e-5)


def test_attention_impl_choice():
    with pytest.raises(ValueError, match="attention_impl is 'flash'"):
        MultiHeadSelfAttention(32, 4, attention_impl="flash")
    # The probabilities need the plain path, whatever was asked for.
    assert not accel.use_fused("fused", training=False, dropout_rate=0.0, return_attention=True)
    assert accel.use_fused("fused", training=True, dropout_rate=0.1)
    assert not accel.use_fused("plain", training=False, dropout_rate=0.0)
    if not accel.on_accelerator():
        assert not accel.use_fused("auto", training=False, dropout_rate=0.0)
    config = BertConfig.preset("tiny", vocab_size=50, max_position_embeddings=16)
    encoder = BertEncoder(config, attention_impl="fused")
    clone = BertEncoder.from_config(json.loads(json.dumps(encoder.get_config())))
    assert clone.attention_impl == "fused"
    assert clone.blocks[0].attention.attention_impl == "fused"
    assert BertEncoder.from_config({"config": config.to_dict()}).attention_impl == "plain"
