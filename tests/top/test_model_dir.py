"""A model directory (kbert.model_dir): saved and loaded whole, and every broken one an error that says
what is wrong.

Faults injected (on a copy of a small model directory, tests/fixtures/small_model_dir.py): each
required file missing; weights files truncated, empty, random bytes, a pickle, a directory; weights
of another architecture (hidden size, layer count, vocabulary) for the encoder and a head, and a
weights file without one variable; a vocab one token off the embedding rows. Loading draws no random
weights. Saves: every file ``save_model_dir`` writes is replaced whole or not at all when its write
fails half way (a full disk) or its fsync fails, and a vocab that does not fit replaces nothing;
``replace_dir`` (the step under every export) leaves the old folder or the new one, never a mix.
Weights files that are pickles (a payload that would create a marker file, with a stray
``model.pkl`` and ``pytorch_model.bin`` beside them) are refused without running anything.
(Malformed kbert.json and file names in it: tests/top/test_model_metadata.py; unreadable
bert_config.json: tests/top/test_config.py.)
"""

import errno
import hashlib
import json
import os
import pickle
import re
import shutil

import numpy as np
import pytest

from kbert import BertConfig, BertEncoder
from kbert.layers.heads import build_head
from kbert.model_dir import ModelDirError, load_encoder, load_heads, read_metadata, save_model_dir, save_weights
from conftest import UNCASED_VOCAB
from fixtures.file_tree import tree
from fixtures.pickle_payload import Payload
from fixtures.small_model_dir import VOCAB, copy_dir, small_config, write_small_model_dir


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


def test_a_causal_encoder_is_recorded_in_kbert_json_and_loaded_causal(tmp_path):
    """kbert.json says "causal": true for a left-only encoder (bert_config.json stays Google's);
    load_encoder builds it causal unless told otherwise; saving a bidirectional encoder over it
    removes the record; a value other than a bool is refused naming the file."""
    from kbert.model_dir import is_causal

    config = small_config()
    save_model_dir(tmp_path / "m", BertEncoder(config, causal=True), vocab=VOCAB)
    assert read_metadata(tmp_path / "m")["causal"] is True and is_causal(tmp_path / "m")
    assert BertConfig.from_json_file(tmp_path / "m" / "bert_config.json") == config
    assert load_encoder(tmp_path / "m").causal and not load_encoder(tmp_path / "m", causal=False).causal
    save_model_dir(tmp_path / "m", BertEncoder(config), vocab=VOCAB)
    assert "causal" not in read_metadata(tmp_path / "m") and not load_encoder(tmp_path / "m").causal
    metadata = json.loads((tmp_path / "m" / "kbert.json").read_text())
    (tmp_path / "m" / "kbert.json").write_text(json.dumps({**metadata, "causal": "yes"}))
    with pytest.raises(ModelDirError, match="kbert.json: 'causal' must be true or false, got 'yes'"):
        load_encoder(tmp_path / "m")


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


# -- broken model directories ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return write_small_model_dir(tmp_path_factory.mktemp("md") / "model")


@pytest.mark.parametrize("name", ["bert_config.json", "vocab.txt", "encoder.weights.h5"])
def test_each_missing_file_is_named(model_dir, tmp_path, name):
    m = copy_dir(model_dir, tmp_path)
    (m / name).unlink()
    with pytest.raises(ModelDirError, match=f"{re.escape(str(m))} is missing: {re.escape(name)}"):
        load_encoder(m)


def test_a_missing_head_file_is_named(model_dir, tmp_path):
    m = copy_dir(model_dir, tmp_path)
    (m / "nsp.weights.h5").unlink()
    with pytest.raises(ModelDirError, match=r"kbert.json lists head 'nsp' but .*nsp.weights.h5 is missing"):
        load_heads(m)


@pytest.mark.parametrize("damage", ["truncated", "empty", "random bytes", "pickle", "directory"])
@pytest.mark.parametrize("file", ["encoder.weights.h5", "mlm.weights.h5"])
def test_damaged_weights_files_are_named(model_dir, tmp_path, damage, file):
    m = copy_dir(model_dir, tmp_path)
    path = m / file
    data = path.read_bytes()
    path.unlink()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    elif damage == "random bytes":
        path.write_bytes(os.urandom(4096))
    elif damage == "pickle":
        path.write_bytes(pickle.dumps({"kernel": [1.0, 2.0]}))
    else:
        path.mkdir()
    with pytest.raises(ModelDirError) as info:
        load_encoder(m) if file.startswith("encoder") else load_heads(m)
    message = str(info.value)
    assert str(path) in message and "not a readable Keras .weights.h5 file" in message, message


def _with_config(model_dir, tmp_path, **changes):
    m = copy_dir(model_dir, tmp_path)
    config = json.loads((m / "bert_config.json").read_text())
    config.update(changes)
    (m / "bert_config.json").write_text(json.dumps(config))
    return m


@pytest.mark.parametrize("changes,differences", [
    ({"hidden_size": 256, "num_attention_heads": 4, "intermediate_size": 1024},
     [r"word_embeddings.*file \[60, 128\].*config \[60, 256\]"]),
    ({"num_hidden_layers": 3}, [r"missing from the file: .*transformer.*2"]),
    ({"num_hidden_layers": 1}, [r"in the file but not in bert_config.json: .*transformer.*1"]),
    ({"intermediate_size": 256}, [r"intermediate.*file \[128, 512\].*config \[128, 256\]"]),
])
@pytest.mark.slow
def test_weights_of_another_architecture_list_what_differs(model_dir, tmp_path, changes, differences):
    m = _with_config(model_dir, tmp_path, **changes)
    with pytest.raises(ModelDirError) as info:
        load_encoder(m)
    message = str(info.value)
    assert str(m / "encoder.weights.h5") in message and "does not fit the architecture" in message
    for pattern in differences:
        assert re.search(pattern, message, re.S), message


def test_loading_draws_no_weights_and_refuses_a_file_without_one(model_dir, tmp_path, monkeypatch):
    """load_encoder builds the encoder with zeros (kbert.layers.initializers.weights_read_next), not
    110M truncated normals for BERT-Base, since the file fills every weight; so a file that lacks
    one variable must be refused, not leave it at zero."""
    import h5py
    import keras
    import numpy as np

    drawn = []
    draw = keras.initializers.TruncatedNormal.__call__
    monkeypatch.setattr(keras.initializers.TruncatedNormal, "__call__",
                        lambda self, *a, **k: drawn.append(1) or draw(self, *a, **k))
    saved = BertEncoder(small_config())
    assert drawn  # built outside load_encoder: BERT's initializer
    save_model_dir(tmp_path / "saved", saved, vocab=VOCAB)
    import random

    random.seed(5)
    BertEncoder(small_config())
    after_building = random.random()
    random.seed(5)
    drawn.clear()
    loaded = load_encoder(tmp_path / "saved")
    assert not drawn
    # What comes after a load (a new head under the same seed) is drawn as when the encoder's
    # weights were drawn: unseeded Keras initializers take their seeds from Python's random.
    assert random.random() == after_building
    for a, b in zip(saved.weights, loaded.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    with h5py.File(tmp_path / "saved" / "encoder.weights.h5", "a") as f:
        names = []
        f.visit(lambda n: names.append(n) if isinstance(f[n], h5py.Dataset) else None)
        del f[names[len(names) // 2]]
    with pytest.raises(ModelDirError, match=r"(?s)does not fit the architecture.*missing from the file"):
        load_encoder(tmp_path / "saved")


def test_a_head_of_another_architecture_lists_what_differs(model_dir, tmp_path):
    m = copy_dir(model_dir, tmp_path)
    save_weights(build_head("mlm", BertConfig.preset("mini", vocab_size=len(VOCAB))), m / "mlm.weights.h5")
    with pytest.raises(ModelDirError, match=r"(?s)mlm.weights.h5 does not fit head 'mlm'.*file \[256, 256\].*"
                                            r"config \[128, 128\]") as info:
        load_heads(m)
    assert str(m / "mlm.weights.h5") in str(info.value)


def test_vocab_size_not_embedding_rows(model_dir, tmp_path):
    m = copy_dir(model_dir, tmp_path)
    (m / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB[:-1]))
    with pytest.raises(ModelDirError, match=r"vocab.txt has 59 tokens but .*bert_config.json says vocab_size=60"):
        load_encoder(m)
    m2 = _with_config(model_dir, tmp_path / "b", vocab_size=61)
    (m2 / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB + ["extra"]))
    with pytest.raises(ModelDirError, match=r"(?s)word_embeddings.*file \[60, 128\].*config \[61, 128\]"):
        load_encoder(m2)


# -- interrupted saves: every file save_model_dir writes is replaced whole or not at all ------------
def _interrupt_writing(monkeypatch, file_name):
    """The writer of ``file_name`` (or of a temporary file for it) writes half of it, then fails
    as a full disk would."""
    import errno
    import pathlib

    from kbert import model_dir as model_dir_lib

    stem = file_name.split(".")[0]

    def breaking(real, dest_arg):
        def write(*args, **kwargs):
            real(*args, **kwargs)
            dest = pathlib.Path(args[dest_arg])
            if stem in dest.name:
                data = dest.read_bytes()
                dest.write_bytes(data[: len(data) // 2])
                raise OSError(errno.ENOSPC, "No space left on device (injected)", str(dest))
        return write

    monkeypatch.setattr(BertConfig, "to_json_file", breaking(BertConfig.to_json_file, 1))
    monkeypatch.setattr(pathlib.Path, "write_text", breaking(pathlib.Path.write_text, 0))
    monkeypatch.setattr(shutil, "copyfile", breaking(shutil.copyfile, 1))
    monkeypatch.setattr(model_dir_lib, "save_weights", breaking(model_dir_lib.save_weights, 1))


@pytest.mark.parametrize("file,vocab_from", [
    ("bert_config.json", "list"), ("vocab.txt", "list"), ("vocab.txt", "file"), ("encoder.weights.h5", "list"),
    ("mlm.weights.h5", "list"), ("kbert.json", "list")])
def test_a_save_interrupted_mid_write_leaves_the_previous_file(model_dir, tmp_path, monkeypatch, file, vocab_from):
    m = copy_dir(model_dir, tmp_path)
    before = {p.name: p.read_bytes() for p in m.iterdir()}
    vocab_file = tmp_path / "vocab-source.txt"
    vocab_file.write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
    config = small_config()
    encoder, mlm = BertEncoder(config), build_head("mlm", config)  # new weights: every file would change
    _interrupt_writing(monkeypatch, file)
    with pytest.raises(OSError, match="injected"):
        save_model_dir(m, encoder, vocab=None if vocab_from == "file" else VOCAB,
                       vocab_file=vocab_file if vocab_from == "file" else None,
                       do_lower_case=False, heads={"mlm": (mlm, {"type": "mlm"})})
    monkeypatch.undo()
    after = {p.name: p.read_bytes() for p in m.iterdir()}
    assert sorted(after) == sorted(before), "temporary files left behind"
    assert after[file] == before[file], f"{file} was left half-written"
    load_encoder(m), load_heads(m)  # the directory still loads


def test_a_failed_fsync_leaves_the_previous_file(model_dir, tmp_path, monkeypatch):
    m = copy_dir(model_dir, tmp_path)
    before = {p.name: p.read_bytes() for p in m.iterdir()}

    def fsync(fd):
        raise OSError(5, "Input/output error (injected)")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(OSError, match="injected"):
        save_model_dir(m, BertEncoder(small_config()), vocab=VOCAB, do_lower_case=False)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in m.iterdir()} == before


def test_a_vocab_that_does_not_fit_replaces_nothing(model_dir, tmp_path):
    m = copy_dir(model_dir, tmp_path)
    before = {p.name: p.read_bytes() for p in m.iterdir()}
    with pytest.raises(ModelDirError, match="vocab has 59 tokens but the encoder's vocab_size is 60"):
        save_model_dir(m, BertEncoder(small_config()), vocab=VOCAB[:-1])
    assert {p.name: p.read_bytes() for p in m.iterdir()} == before


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


def test_replace_dir_is_old_or_new_whole(tmp_path, monkeypatch):
    """kbert.model_dir.replace_dir, the step under every export: a failure while writing, or while
    putting the new folder in place, leaves the old folder as it was and no temporary folder."""
    import kbert.model_dir as model_dir

    target = tmp_path / "out" / "1"
    target.mkdir(parents=True)
    (target / "old.txt").write_text("old")
    before = tree(tmp_path)

    def half(tmp):
        tmp.mkdir()
        (tmp / "new.txt").write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        model_dir.replace_dir(target, half)
    assert tree(tmp_path) == before

    def whole(tmp):
        tmp.mkdir()
        (tmp / "new.txt").write_text("new")

    renames = []
    real_rename = os.rename

    def rename(src, dst):  # the old folder moves aside, then putting the new one in fails
        renames.append(dst)
        if len(renames) == 2:
            raise OSError("rename failed")
        real_rename(src, dst)

    monkeypatch.setattr(model_dir.os, "rename", rename)
    with pytest.raises(OSError, match="rename failed"):
        model_dir.replace_dir(target, whole)
    monkeypatch.setattr(model_dir.os, "rename", real_rename)
    assert tree(tmp_path) == before
    model_dir.replace_dir(target, whole)
    assert tree(target) == {"new.txt": hashlib.sha256(b"new").hexdigest()} and os.listdir(target.parent) == ["1"]


def test_a_stop_during_the_write_removes_what_is_under_way_and_waits_for_the_swap(tmp_path, monkeypatch):
    """What kbert.commands.signals' handler relies on: while ``write(tmp)`` runs, the temporary folder
    is a pending write that ``remove_pending_writes`` removes; a stop asked for during the two
    renames (``at_safe_point``) runs only once they are done, so the output is the new one whole."""
    import kbert.model_dir as model_dir

    target = tmp_path / "out" / "1"
    target.mkdir(parents=True)
    (target / "old.txt").write_text("old")
    removed = []

    def interrupted(tmp):
        tmp.mkdir()
        (tmp / "new.txt").write_text("half")
        removed.extend(model_dir.remove_pending_writes())  # what the handler does before it exits
        assert not tmp.exists()
        raise SystemExit(143)

    with pytest.raises(SystemExit):
        model_dir.replace_dir(target, interrupted)
    assert len(removed) == 1 and removed[0].name.startswith(".tmp-")
    assert (target / "old.txt").read_text() == "old" and os.listdir(target.parent) == ["1"]

    stops, real_rename = [], os.rename

    def rename(src, dst):  # a signal lands between the two renames
        real_rename(src, dst)
        model_dir.at_safe_point(lambda: stops.append(sorted(os.listdir(target.parent))))
        stops.append("renamed")

    def whole(tmp):
        tmp.mkdir()
        (tmp / "new.txt").write_text("new")

    monkeypatch.setattr(model_dir.os, "rename", rename)
    model_dir.replace_dir(target, whole)
    # the two stops ran after both renames: the new folder in place, no temporary one left
    assert stops[:2] == ["renamed", "renamed"] and len(stops) == 4
    assert all("1" in listing and not any(n.startswith(".tmp-") for n in listing) for listing in stops[2:])
    assert (target / "new.txt").read_text() == "new" and not model_dir._PENDING


# -- weights files that are pickles ---------------------------------------------------------------
@pytest.mark.parametrize("file", ["encoder.weights.h5", "mlm.weights.h5"])
def test_kbert_weights_that_are_pickles_are_refused_without_running_them(tmp_path, tiny_model_dir, file):
    from kbert.layers.heads import build_head
    from kbert.model_dir import ModelDirError, load_encoder, load_heads, read_metadata, save_weights, write_metadata

    m = shutil.copytree(tiny_model_dir, tmp_path / "m")
    encoder = load_encoder(m)
    save_weights(build_head("mlm", encoder.config), m / "mlm.weights.h5")
    meta = read_metadata(m)
    meta["heads"]["mlm"] = {"type": "mlm", "weights": "mlm.weights.h5"}
    write_metadata(m, meta)
    marker = tmp_path / "PWNED"
    (m / file).write_bytes(pickle.dumps(Payload(marker)))
    (m / "model.pkl").write_bytes(pickle.dumps(Payload(marker)))  # a stray pickle is never opened
    (m / "pytorch_model.bin").write_bytes(pickle.dumps(Payload(marker)))
    with pytest.raises(ModelDirError, match=f"{file} is not a readable Keras .weights.h5 file"):
        load_encoder(m) if file.startswith("encoder") else load_heads(m)
    assert not marker.exists()
