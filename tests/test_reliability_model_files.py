"""Issue 8, model files: every broken model directory is an error that says what is wrong.

Faults injected (counted in FAULTS, printed by report_faults): each required file missing; weights
files truncated, empty, random bytes, a pickle, a directory; weights of another architecture
(hidden size, layer count, vocabulary) for the encoder and a head; a vocab one token off the
embedding rows; bert_config.json and kbert.json that are not UTF-8, not JSON or carry impossible
values (hypothesis generates the values).
"""

from __future__ import annotations

import collections
import json
import math
import os
import pickle
import re
import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbert import BertConfig, BertEncoder
from kbert.config import ConfigError
from kbert.layers.heads import build_head
from kbert.model_dir import ModelDirError, load_encoder, load_heads, save_model_dir, save_weights

FAULTS = collections.Counter()
VOCAB = [f"t{i}" for i in range(60)]


def small_config(**overrides):
    return BertConfig.preset("tiny", vocab_size=len(VOCAB), max_position_embeddings=64, **overrides)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    config = small_config()
    out = tmp_path_factory.mktemp("md") / "model"
    save_model_dir(out, BertEncoder(config), vocab=VOCAB, heads={"mlm": (build_head("mlm", config), {"type": "mlm"}),
                                                               "nsp": (build_head("nsp", config), {"type": "nsp"})})
    return out


def copy(model_dir, tmp_path, name="m"):
    return shutil.copytree(model_dir, tmp_path / name)


@pytest.mark.parametrize("name", ["bert_config.json", "vocab.txt", "encoder.weights.h5"])
def test_each_missing_file_is_named(model_dir, tmp_path, name):
    m = copy(model_dir, tmp_path)
    (m / name).unlink()
    FAULTS["required file missing"] += 1
    with pytest.raises(ModelDirError, match=f"{re.escape(str(m))} is missing: {re.escape(name)}"):
        load_encoder(m)


def test_a_missing_head_file_is_named(model_dir, tmp_path):
    m = copy(model_dir, tmp_path)
    (m / "nsp.weights.h5").unlink()
    FAULTS["required file missing"] += 1
    with pytest.raises(ModelDirError, match=r"kbert.json lists head 'nsp' but .*nsp.weights.h5 is missing"):
        load_heads(m)


@pytest.mark.parametrize("damage", ["truncated", "empty", "random bytes", "pickle", "directory"])
@pytest.mark.parametrize("file", ["encoder.weights.h5", "mlm.weights.h5"])
def test_damaged_weights_files_are_named(model_dir, tmp_path, damage, file):
    m = copy(model_dir, tmp_path)
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
    FAULTS[f"weights file {damage}"] += 1
    with pytest.raises(ModelDirError) as info:
        load_encoder(m) if file.startswith("encoder") else load_heads(m)
    message = str(info.value)
    assert str(path) in message and "not a readable Keras .weights.h5 file" in message, message


def _with_config(model_dir, tmp_path, **changes):
    m = copy(model_dir, tmp_path)
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
    FAULTS["checkpoint of another architecture (encoder)"] += 1
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
    FAULTS["a weights file without one variable"] += 1
    with pytest.raises(ModelDirError, match=r"(?s)does not fit the architecture.*missing from the file"):
        load_encoder(tmp_path / "saved")


def test_a_head_of_another_architecture_lists_what_differs(model_dir, tmp_path):
    m = copy(model_dir, tmp_path)
    save_weights(build_head("mlm", BertConfig.preset("mini", vocab_size=len(VOCAB))), m / "mlm.weights.h5")
    FAULTS["checkpoint of another architecture (head)"] += 1
    with pytest.raises(ModelDirError, match=r"(?s)mlm.weights.h5 does not fit head 'mlm'.*file \[256, 256\].*"
                                            r"config \[128, 128\]") as info:
        load_heads(m)
    assert str(m / "mlm.weights.h5") in str(info.value)


def test_vocab_size_not_embedding_rows(model_dir, tmp_path):
    m = copy(model_dir, tmp_path)
    (m / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB[:-1]))
    FAULTS["vocab size != embedding rows"] += 1
    with pytest.raises(ModelDirError, match=r"vocab.txt has 59 tokens but .*bert_config.json says vocab_size=60"):
        load_encoder(m)
    m2 = _with_config(model_dir, tmp_path / "b", vocab_size=61)
    (m2 / "vocab.txt").write_text("".join(t + "\n" for t in VOCAB + ["extra"]))
    FAULTS["vocab size != embedding rows"] += 1
    with pytest.raises(ModelDirError, match=r"(?s)word_embeddings.*file \[60, 128\].*config \[61, 128\]"):
        load_encoder(m2)


@pytest.mark.parametrize("content,match", [
    (b"\xff\xfe{", r"bert_config.json.*not UTF-8"),
    (b"{\"hidden_size\": ", r"bert_config.json is not valid JSON"),
    (b"[1, 2]", r"bert_config.json.*must be a JSON object"),
])
def test_unreadable_config_files_are_named(model_dir, tmp_path, content, match):
    m = copy(model_dir, tmp_path)
    (m / "bert_config.json").write_bytes(content)
    FAULTS["bert_config.json unreadable"] += 1
    with pytest.raises(ConfigError, match=match):
        load_encoder(m)


@pytest.mark.parametrize("metadata,match", [
    (b"\xff", r"kbert.json.*not UTF-8"),
    (b"{", r"kbert.json is not valid JSON"),
    (b'{"heads": ["mlm"]}', r"kbert.json.*'heads' object"),
    (b'{"heads": {"mlm": "mlm.weights.h5"}}', r"kbert.json: head 'mlm' must be an object"),
    (b'{"heads": {"mlm": {"type": "mlm"}}}', r"kbert.json: head 'mlm' has no 'weights' file name"),
    (b'{"heads": {"mlm": {"type": "mlm", "weights": 5}}}', r"kbert.json: head 'mlm' has no 'weights' file name"),
])
def test_malformed_kbert_json_is_named(model_dir, tmp_path, metadata, match):
    m = copy(model_dir, tmp_path)
    (m / "kbert.json").write_bytes(metadata)
    FAULTS["kbert.json malformed"] += 1
    with pytest.raises(ModelDirError, match=match):
        load_heads(m)


def test_vocab_that_is_not_utf8_is_named(model_dir, tmp_path):
    m = copy(model_dir, tmp_path)
    (m / "vocab.txt").write_bytes(b"\xff\n" * len(VOCAB))
    FAULTS["vocab.txt not UTF-8"] += 1
    with pytest.raises((ModelDirError, ValueError), match=r"vocab.txt.*UTF-8"):
        load_encoder(m)


# -- impossible config values (hypothesis) -------------------------------------------------------------
FIELDS = ["vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
          "hidden_act", "hidden_dropout_prob", "attention_probs_dropout_prob", "max_position_embeddings",
          "type_vocab_size", "initializer_range"]
JSON_VALUES = st.one_of(
    st.integers(-10, 10), st.integers(-(2**40), 2**40), st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(), st.none(), st.text(max_size=8), st.sampled_from(["gelu", "relu", "12", "0.1", "", "nan"]),
    st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=1),
)


def _plausible(config: BertConfig) -> bool:
    ints = [config.vocab_size, config.hidden_size, config.num_hidden_layers, config.num_attention_heads,
            config.intermediate_size, config.max_position_embeddings, config.type_vocab_size]
    return (all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in ints)
            and config.hidden_size % config.num_attention_heads == 0
            and all(isinstance(p, (int, float)) and math.isfinite(p) and 0 <= p < 1
                    for p in (config.hidden_dropout_prob, config.attention_probs_dropout_prob))
            and isinstance(config.initializer_range, (int, float)) and math.isfinite(config.initializer_range)
            and config.initializer_range > 0)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(changes=st.dictionaries(st.sampled_from(FIELDS), JSON_VALUES, min_size=1, max_size=3))
def test_impossible_config_values_name_the_field(tmp_path, changes):
    path = tmp_path / "bert_config.json"
    data = {**small_config().to_dict(), **changes}
    try:
        text = json.dumps(data)
    except ValueError:
        return
    path.write_text(text)
    FAULTS["generated bert_config.json values"] += 1
    try:
        config = BertConfig.from_json_file(path)
    except ConfigError as e:
        message = str(e)
        assert str(path) in message, message
        assert any(field in message for field in FIELDS), message
        return
    assert _plausible(config), config


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
    m = copy(model_dir, tmp_path)
    before = {p.name: p.read_bytes() for p in m.iterdir()}
    vocab_file = tmp_path / "vocab-source.txt"
    vocab_file.write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
    config = small_config()
    encoder, mlm = BertEncoder(config), build_head("mlm", config)  # new weights: every file would change
    _interrupt_writing(monkeypatch, file)
    FAULTS["save interrupted mid-write"] += 1
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
    m = copy(model_dir, tmp_path)
    before = {p.name: p.read_bytes() for p in m.iterdir()}

    def fsync(fd):
        raise OSError(5, "Input/output error (injected)")

    monkeypatch.setattr(os, "fsync", fsync)
    FAULTS["save interrupted mid-write"] += 1
    with pytest.raises(OSError, match="injected"):
        save_model_dir(m, BertEncoder(small_config()), vocab=VOCAB, do_lower_case=False)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in m.iterdir()} == before


def test_a_vocab_that_does_not_fit_replaces_nothing(model_dir, tmp_path):
    m = copy(model_dir, tmp_path)
    before = {p.name: p.read_bytes() for p in m.iterdir()}
    with pytest.raises(ModelDirError, match="vocab has 59 tokens but the encoder's vocab_size is 60"):
        save_model_dir(m, BertEncoder(small_config()), vocab=VOCAB[:-1])
    assert {p.name: p.read_bytes() for p in m.iterdir()} == before


# -- task heads (a fine-tuned model's <head>.weights.h5) go through the same checks ------------------
@pytest.fixture(scope="module")
def classifier_dirs(tiny_model_dir, tmp_path_factory):
    """Fine-tuned-model directories of a 2-class and a 3-class TextClassifier (untrained heads)."""
    from kbert.tasks import TextClassifier

    out = tmp_path_factory.mktemp("classifiers")
    for n in (2, 3):
        TextClassifier.from_model_dir(tiny_model_dir, num_classes=n, seq_length=16).save_model_dir(out / f"c{n}")
    return out


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "empty", "random bytes"])
def test_a_damaged_task_head_file_is_named(classifier_dirs, tmp_path, damage):
    from kbert.tasks import TaskModelError, load_task_model

    m = copy(classifier_dirs / "c2", tmp_path)
    path = m / "classifier.weights.h5"
    data = path.read_bytes()
    path.write_bytes({"truncated": data[: len(data) // 2], "empty": b"", "random bytes": os.urandom(4096)}[damage])
    FAULTS[f"task head file {damage}"] += 1
    with pytest.raises(TaskModelError) as info:
        load_task_model(m)
    message = str(info.value)
    assert str(path) in message and "not a readable Keras .weights.h5 file" in message, message


def test_a_task_head_of_another_number_of_classes_lists_what_differs(classifier_dirs, tmp_path):
    from kbert.tasks import TaskModelError, TextClassifier, load_task_model

    m = copy(classifier_dirs / "c2", tmp_path)
    shutil.copyfile(classifier_dirs / "c3" / "classifier.weights.h5", m / "classifier.weights.h5")
    FAULTS["task head of another number of classes"] += 1
    for load in (load_task_model, TextClassifier.from_model_dir):
        with pytest.raises(TaskModelError) as info:
            load(m)
        message = str(info.value)
        assert str(m / "classifier.weights.h5") in message, message
        assert "does not fit the text_classifier head that" in message and "kbert.json" in message, message
        assert re.search(r"2 difference\(s\):.*shape differs: dense/vars/0: file \[128, 3\], config \[128, 2\]"
                         r".*shape differs: dense/vars/1: file \[3\], config \[2\]", message, re.S), message


@pytest.fixture(scope="module", autouse=True)
def report_faults():
    """Prints the faults this module's tests injected, after the last of them, whichever ran
    (pytest -s shows it). Each test asserts its own outcome; this only reports."""
    yield
    print("\nfaults injected (model files):", dict(FAULTS), "total", sum(FAULTS.values()))
