"""Google TF1 checkpoints (kbert.convert.google): one written by a plain TF1 Saver under the original
names loads, and a checkpoint or vocabulary that does not fit the model is refused listing every difference."""

import json

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file

from kbert.convert import google
from kbert.convert.names import ConversionError
from kbert.model_dir import ENCODER_WEIGHTS
from conftest import MINILM_DIR
from fixtures.hf_tiny import assert_bit_identical, model_weights


@pytest.mark.slow
def test_checkpoint_written_by_tf1_saver_under_original_names_loads(tmp_path, minilm_model_dir):
    # Written here independently of kbert.convert.google.to_google: plain TF1 Saver, original names,
    # plus the optimizer slots and global_step that Google's pre-training checkpoints carry.
    state = load_file(str(MINILM_DIR / "model.safetensors"))
    arrays = {}
    for key, value in state.items():
        if key == "embeddings.position_ids":
            continue
        name = "bert/" + key.replace(".weight", "/kernel" if "dense" in key or "self" in key else "").replace(
            ".bias", "/bias" if "LayerNorm" not in key else "/beta").replace(".", "/")
        name = name.replace("encoder/layer/", "encoder/layer_")
        if "LayerNorm" in key and key.endswith(".weight"):
            name = name + "/gamma" if not name.endswith("/gamma") else name
        arrays[name] = value.T if name.endswith("/kernel") else value
    with tf.Graph().as_default():
        tf_vars = [tf.compat.v1.Variable(v, name=n) for n, v in arrays.items()]
        tf_vars.append(tf.compat.v1.Variable(np.zeros((384,), np.float32), name="bert/pooler/dense/bias/adam_m"))
        tf_vars.append(tf.compat.v1.train.get_or_create_global_step())
        saver = tf.compat.v1.train.Saver(tf_vars)
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            saver.save(s, str(tmp_path / "bert_model.ckpt"), write_meta_graph=False)
    config = tmp_path / "bert_config.json"
    hf_config = json.loads((MINILM_DIR / "config.json").read_text())
    config.write_text(json.dumps({k: hf_config[k] for k in (
        "attention_probs_dropout_prob", "hidden_dropout_prob", "hidden_size", "initializer_range",
        "intermediate_size", "max_position_embeddings", "num_attention_heads", "num_hidden_layers",
        "type_vocab_size", "vocab_size")} | {"hidden_act": "gelu_exact"}))
    out = google.convert(tmp_path / "bert_model.ckpt", tmp_path / "out", vocab_file=MINILM_DIR / "vocab.txt")
    assert_bit_identical(model_weights(out), model_weights(minilm_model_dir))


def _google_ckpt(tmp_path, arrays):
    with tf.Graph().as_default():
        tf_vars = [tf.compat.v1.Variable(v, name=n) for n, v in arrays.items()]
        saver = tf.compat.v1.train.Saver(tf_vars)
        with tf.compat.v1.Session() as s:
            s.run(tf.compat.v1.global_variables_initializer())
            saver.save(s, str(tmp_path / "bad.ckpt"), write_meta_graph=False)
    return tmp_path / "bad.ckpt"


@pytest.mark.slow
def test_mismatched_checkpoint_lists_every_difference(tmp_path, minilm_model_dir):
    google.to_google(minilm_model_dir, tmp_path / "g" / "model.ckpt")
    arrays = google.read_checkpoint(tmp_path / "g" / "model.ckpt")
    del arrays["bert/encoder/layer_2/output/dense/bias"]
    arrays["bert/encoder/layer_9/output/dense/bias"] = np.zeros(384, np.float32)
    arrays["bert/pooler/dense/kernel"] = np.zeros((384, 10), np.float32)
    prefix = _google_ckpt(tmp_path, arrays)
    with pytest.raises(ConversionError) as e:
        google.convert(prefix, tmp_path / "out", config_file=tmp_path / "g" / "bert_config.json",
                       vocab_file=tmp_path / "g" / "vocab.txt")
    message = str(e.value)
    assert "missing" in message and "layer_2/output/dense/bias" in message
    assert "not used" in message and "layer_9/output/dense/bias" in message
    assert "bert/pooler/dense/kernel: checkpoint (384, 10), model (384, 384)" in message
    assert not (tmp_path / "out" / ENCODER_WEIGHTS).exists()


@pytest.mark.slow
def test_vocab_size_mismatch_is_an_error(tmp_path, minilm_model_dir):
    google.to_google(minilm_model_dir, tmp_path / "g" / "model.ckpt")
    short_vocab = tmp_path / "vocab.txt"
    short_vocab.write_text("".join(f"t{i}\n" for i in range(100)))
    with pytest.raises(ConversionError, match=r"100 tokens.*30522 rows.*vocab_size=30522"):
        google.convert(tmp_path / "g" / "model.ckpt", tmp_path / "out", vocab_file=short_vocab)
