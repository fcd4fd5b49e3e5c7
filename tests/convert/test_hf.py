"""Hugging Face checkpoints (kbert.convert.hf): weights as in the safetensors file, the round trip through
Google's format with heads, and clear errors for weights or configs that are not BERT's (Google-only
cases: tests/convert/test_google.py)."""

import json
import shutil

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from kbert.convert import google, hf
from kbert.convert.names import ConversionError
from kbert.model_dir import ENCODER_WEIGHTS, load_encoder, load_heads
from conftest import MINILM_DIR
from fixtures.cli import run_command
from fixtures.hf_tiny import model_weights


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
    ok = run_command("convert", "hf", MINILM_DIR, tmp_path / "m")
    assert ok.status == 0, ok.err
    assert (tmp_path / "m" / ENCODER_WEIGHTS).exists()
    bad = run_command("convert", "google", tmp_path / "nothing.ckpt", tmp_path / "x", "--config",
                      tmp_path / "m" / "bert_config.json", "--vocab", tmp_path / "m" / "vocab.txt")
    assert bad.status == 1 and "cannot read checkpoint" in bad.err
