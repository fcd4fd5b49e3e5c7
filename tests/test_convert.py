"""Weight interop: Hugging Face and Google TF1 checkpoints, both ways, and clear mismatch errors."""

import json
import shutil
import subprocess

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from kbert.convert import google, hf
from kbert.convert.names import ConversionError
from kbert.model_dir import ENCODER_WEIGHTS, load_encoder, load_heads
from conftest import MINILM_DIR, python
from hf_tiny import model_weights


def _assert_bit_identical(a, b):
    assert sorted(a) == sorted(b)
    for k in a:
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k]), k


@pytest.mark.slow
def test_converted_weights_equal_the_safetensors_values(minilm_model_dir):
    state = load_file(str(MINILM_DIR / "model.safetensors"))
    enc = load_encoder(minilm_model_dir)
    np.testing.assert_array_equal(
        enc.blocks[3].attention.query.kernel.numpy(), state["encoder.layer.3.attention.self.query.weight"].T
    )
    np.testing.assert_array_equal(enc.word_embeddings.numpy(), state["embeddings.word_embeddings.weight"])
    np.testing.assert_array_equal(enc.pooler.bias.numpy(), state["pooler.dense.bias"])
    assert enc.config.hidden_act == "gelu_exact"  # HF's "gelu" is the erf form


def _hf_with_heads(tmp_path):
    """A BertForPreTraining-style folder: ``bert.`` prefixes plus MLM and NSP heads."""
    rng = np.random.default_rng(0)
    state = {"bert." + k: v for k, v in load_file(str(MINILM_DIR / "model.safetensors")).items()}
    H, V = 384, 30522
    state.update({
        "cls.predictions.transform.dense.weight": rng.normal(size=(H, H)).astype("float32"),
        "cls.predictions.transform.dense.bias": rng.normal(size=(H,)).astype("float32"),
        "cls.predictions.transform.LayerNorm.weight": rng.normal(size=(H,)).astype("float32"),
        "cls.predictions.transform.LayerNorm.bias": rng.normal(size=(H,)).astype("float32"),
        "cls.predictions.bias": rng.normal(size=(V,)).astype("float32"),
        "cls.seq_relationship.weight": rng.normal(size=(2, H)).astype("float32"),
        "cls.seq_relationship.bias": rng.normal(size=(2,)).astype("float32"),
    })
    folder = tmp_path / "hf"
    folder.mkdir()
    for name in ("config.json", "vocab.txt", "tokenizer_config.json"):
        shutil.copy(MINILM_DIR / name, folder / name)
    save_file(state, str(folder / "model.safetensors"))
    return folder, state


@pytest.mark.slow
def test_round_trip_hf_google_kbert_is_bit_identical_with_heads(tmp_path):
    folder, state = _hf_with_heads(tmp_path)
    first = hf.convert(folder, tmp_path / "kbert1")
    heads = load_heads(first)
    assert set(heads) == {"mlm", "nsp"}
    np.testing.assert_array_equal(heads["nsp"].dense.kernel.numpy(), state["cls.seq_relationship.weight"].T)
    google.to_google(first, tmp_path / "google" / "bert_model.ckpt")
    reader = tf.train.load_checkpoint(str(tmp_path / "google" / "bert_model.ckpt"))
    shapes = reader.get_variable_to_shape_map()
    assert shapes["cls/seq_relationship/output_weights"] == [2, 384]  # Google's [2, H] layout
    assert shapes["bert/encoder/layer_5/intermediate/dense/kernel"] == [384, 1536]
    second = google.convert(tmp_path / "google" / "bert_model.ckpt", tmp_path / "kbert2")
    _assert_bit_identical(model_weights(first), model_weights(second))


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
    _assert_bit_identical(model_weights(out), model_weights(minilm_model_dir))


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


def test_unknown_hf_weight_and_missing_files_are_errors(tmp_path):
    folder, state = _hf_with_heads(tmp_path)
    state["bert.encoder.layer.0.attention.self.rotary.weight"] = np.zeros(3, np.float32)
    save_file(state, str(folder / "model.safetensors"))
    with pytest.raises(ConversionError, match="rotary"):
        hf.convert(folder, tmp_path / "out")
    (folder / "model.safetensors").unlink()
    with pytest.raises(ConversionError, match="neither model.safetensors nor pytorch_model.bin"):
        hf.convert(folder, tmp_path / "out")


def test_hf_config_that_is_not_bert_is_refused(tmp_path):
    folder, _ = _hf_with_heads(tmp_path)
    cfg = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**cfg, "layer_norm_eps": 1e-5}))
    with pytest.raises(ConversionError, match="layer_norm_eps"):
        hf.convert(folder, tmp_path / "out")


@pytest.mark.slow
def test_command_line(tmp_path):
    run = lambda *a: subprocess.run([*python("-m", "kbert.convert"), *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    ok = run("hf", str(MINILM_DIR), str(tmp_path / "m"))
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "m" / ENCODER_WEIGHTS).exists()
    bad = run("google", str(tmp_path / "nothing.ckpt"), str(tmp_path / "x"), "--config",
              str(tmp_path / "m" / "bert_config.json"), "--vocab", str(tmp_path / "m" / "vocab.txt"))
    assert bad.returncode == 1 and "cannot read checkpoint" in bad.stderr
