"""A model directory (kbert.model_dir): saved and loaded whole; missing files, a vocabulary that does not
fit the embeddings, weights of another architecture and head paths outside it refused, named; a write
failing half way (a full disk) leaves the old file."""

import errno
import json
import os
import shutil

import numpy as np
import pytest

from kbert import BertConfig, BertEncoder
from kbert.layers.heads import build_head
from kbert.model_dir import ModelDirError, load_encoder, load_heads, read_metadata, save_model_dir
from conftest import UNCASED_VOCAB


def test_save_and_load_round_trip(tmp_path):
    config = BertConfig.preset("tiny")
    encoder = BertEncoder(config)
    mlm = build_head("mlm", config)
    save_model_dir(tmp_path / "m", encoder, vocab_file=UNCASED_VOCAB, do_lower_case=False,
                   heads={"mlm": (mlm, {"type": "mlm"})})
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == [
        "bert_config.json", "encoder.weights.h5", "kbert.json", "mlm.weights.h5", "vocab.txt"]
    assert read_metadata(tmp_path / "m")["do_lower_case"] is False
    loaded = load_encoder(tmp_path / "m")
    for a, b in zip(encoder.weights, loaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    head = load_heads(tmp_path / "m")["mlm"]
    np.testing.assert_array_equal(head.transform.kernel.numpy(), mlm.transform.kernel.numpy())


def test_missing_files_are_listed(tmp_path, tiny_model_dir):
    with pytest.raises(ModelDirError, match="not found"):
        load_encoder(tmp_path / "nowhere")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "bert_config.json").write_text((tiny_model_dir / "bert_config.json").read_text())
    with pytest.raises(ModelDirError, match="missing: vocab.txt, encoder.weights.h5"):
        load_encoder(tmp_path / "m")


def test_vocab_size_must_match_the_embeddings(tmp_path, tiny_model_dir):
    import shutil

    shutil.copytree(tiny_model_dir, tmp_path / "m")
    with open(tmp_path / "m" / "vocab.txt", "a") as f:
        f.write("[extra]\n")
    with pytest.raises(ModelDirError, match=r"30523 tokens .* vocab_size=30522"):
        load_encoder(tmp_path / "m")


def test_weights_of_another_architecture_are_refused(tmp_path, tiny_model_dir):
    import shutil

    shutil.copytree(tiny_model_dir, tmp_path / "m")
    cfg = json.loads((tmp_path / "m" / "bert_config.json").read_text())
    cfg.update(num_hidden_layers=3)
    (tmp_path / "m" / "bert_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ModelDirError, match="does not fit the architecture"):
        load_encoder(tmp_path / "m")


def test_head_paths_cannot_escape_the_model_directory(tmp_path, tiny_model_dir):
    import shutil

    shutil.copytree(tiny_model_dir, tmp_path / "m")
    meta = read_metadata(tmp_path / "m")
    meta["heads"]["mlm"] = {"type": "mlm", "weights": "../../etc/passwd"}
    (tmp_path / "m" / "kbert.json").write_text(json.dumps(meta))
    with pytest.raises(ModelDirError, match="outside the model directory"):
        load_heads(tmp_path / "m")


def test_model_directory_weights_write_failing_half_way_keeps_the_old_file(tmp_path, tiny_model_dir, monkeypatch):
    from kbert import model_dir as md

    shutil.copytree(tiny_model_dir, tmp_path / "m")
    before = (tmp_path / "m" / "encoder.weights.h5").read_bytes()
    encoder = md.load_encoder(tmp_path / "m")

    def disk_full(layer, path):
        with open(path, "wb") as f:
            f.write(before[: len(before) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(md, "save_weights", disk_full)
    with pytest.raises(OSError) as info:
        md.save_model_dir(tmp_path / "m", encoder, vocab_file=tmp_path / "m" / "vocab.txt")
    assert info.value.errno == errno.ENOSPC
    assert (tmp_path / "m" / "encoder.weights.h5").read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == sorted(p.name for p in tiny_model_dir.iterdir())
    monkeypatch.undo()
    md.load_encoder(tmp_path / "m")
