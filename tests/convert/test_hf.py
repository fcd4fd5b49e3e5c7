"""Hugging Face checkpoints (kbert.convert.hf): weights as in the safetensors file, the round trip through
Google's format with heads, and clear errors for weights or configs that are not BERT's (Google-only
cases: tests/convert/test_google.py). Weights files carrying a pickle payload that would create a
marker file (``pytorch_model.bin`` and ``model.safetensors`` saved by torch, a raw pickle as
``pytorch_model.bin``) are refused naming the file, without running it and without advising
``weights_only=False``."""

import json
import pickle
import shutil

import numpy as np
import pytest
import tensorflow as tf
from safetensors.numpy import load_file, save_file

from kbert.convert import google, hf
from kbert.convert.names import ConversionError
from kbert.model_dir import ENCODER_WEIGHTS, load_encoder, load_heads
from conftest import MINILM_DIR, require
from fixtures.hf_tiny import assert_bit_identical, model_weights
from fixtures.pickle_payload import Payload
from fixtures.cli import run_command


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
    assert_bit_identical(model_weights(first), model_weights(second))


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


# -- payloads that would run code --------------------------------------------------------------------
def _hf_dir(tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    for name in ("config.json", "vocab.txt"):
        shutil.copy(MINILM_DIR / name, hf / name)
    return hf


@pytest.mark.parametrize("file", ["pytorch_model.bin", "model.safetensors"])
def test_hf_weights_with_a_pickle_payload_are_refused_without_running_it(tmp_path, file):
    torch = require("torch")
    from kbert.convert import hf
    from kbert.convert.names import ConversionError

    marker = tmp_path / "PWNED"
    folder = _hf_dir(tmp_path)
    torch.save({"embeddings.word_embeddings.weight": Payload(marker)}, folder / file)
    with pytest.raises(ConversionError) as info:
        hf.convert(folder, tmp_path / "out")
    assert str(folder / file) in str(info.value)
    assert "weights_only=False" not in str(info.value)  # never advise the unsafe way out
    assert not marker.exists()
    assert not (tmp_path / "out" / "encoder.weights.h5").exists()


def test_a_plain_pickle_as_pytorch_model_bin_is_refused(tmp_path):
    require("torch")
    from kbert.convert import hf
    from kbert.convert.names import ConversionError

    marker = tmp_path / "PWNED"
    folder = _hf_dir(tmp_path)
    (folder / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(marker)))
    with pytest.raises(ConversionError, match="pytorch_model.bin"):
        hf.convert(folder, tmp_path / "out")
    assert not marker.exists()
