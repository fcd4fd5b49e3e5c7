"""kbert.tasks.core.task_dir: a task model saved and reloaded by load_task_model (the same answers, its
info, one head), and the directories it refuses, named: a task head file (<head>.weights.h5)
truncated, empty or random bytes, and the head of a classifier with another number of classes, each
listing what differs, through load_task_model and from_model_dir alike."""

import json
import os
import re
import shutil

import numpy as np
import pytest

from fixtures.small_model_dir import copy_dir
from kbert.tasks import TaskModelError, TextClassifier, load_task_model


@pytest.mark.slow
def test_save_and_reload_answer_the_same(tiny_model_dir, tmp_path):
    model = TextClassifier.from_model_dir(tiny_model_dir, label_names=["neg", "pos", "mixed"], seq_length=16)
    rng = np.random.default_rng(0)
    for w in model.head.weights:  # a head that answers differently per text
        w.assign(rng.normal(0, 0.5, w.shape).astype("float32"))
    texts = ["a fine film", "nothing worked", "ünïcode and 字"]
    saved = model.save_model_dir(tmp_path / "m", extra_info={"task_name": "csv", "epoch": 2})
    reloaded = load_task_model(saved)
    assert type(reloaded) is TextClassifier and reloaded.label_names == ["neg", "pos", "mixed"]
    assert reloaded.saved_task_info == {"task_name": "csv", "epoch": 2}
    np.testing.assert_allclose(reloaded.predict_logits(texts), model.predict_logits(texts), atol=1e-6)
    metadata = json.loads((saved / "kbert.json").read_text(encoding="utf-8"))
    assert list(metadata["heads"]) == [model.head_name] and metadata["task"]["type"] == "text_classifier"


def test_refused_directories_name_the_file_and_field(tiny_model_dir, tmp_path):
    where = tiny_model_dir / "kbert.json"
    with pytest.raises(TaskModelError, match=f"{where} has no 'task' object: {tiny_model_dir} is not a fine-tuned"):
        load_task_model(tiny_model_dir)
    saved = TextClassifier.from_model_dir(tiny_model_dir, num_classes=2, seq_length=16).save_model_dir(tmp_path / "m")
    metadata = json.loads((saved / "kbert.json").read_text(encoding="utf-8"))
    metadata["task"]["type"] = "poem_writer"
    (saved / "kbert.json").write_text(json.dumps(metadata), encoding="utf-8")
    with pytest.raises(TaskModelError, match=r"field 'task.type' is 'poem_writer'; expected one of .*text_classifier"):
        load_task_model(saved)


# -- damaged task head files -------------------------------------------------------------------------
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

    m = copy_dir(classifier_dirs / "c2", tmp_path)
    path = m / "classifier.weights.h5"
    data = path.read_bytes()
    path.write_bytes({"truncated": data[: len(data) // 2], "empty": b"", "random bytes": os.urandom(4096)}[damage])
    with pytest.raises(TaskModelError) as info:
        load_task_model(m)
    message = str(info.value)
    assert str(path) in message and "not a readable Keras .weights.h5 file" in message, message


@pytest.mark.slow
def test_a_task_head_of_another_number_of_classes_lists_what_differs(classifier_dirs, tmp_path):
    from kbert.tasks import TaskModelError, TextClassifier, load_task_model

    m = copy_dir(classifier_dirs / "c2", tmp_path)
    shutil.copyfile(classifier_dirs / "c3" / "classifier.weights.h5", m / "classifier.weights.h5")
    for load in (load_task_model, TextClassifier.from_model_dir):
        with pytest.raises(TaskModelError) as info:
            load(m)
        message = str(info.value)
        assert str(m / "classifier.weights.h5") in message, message
        assert "does not fit the text_classifier head that" in message and "kbert.json" in message, message
        assert re.search(r"2 difference\(s\):.*shape differs: dense/vars/0: file \[128, 3\], config \[128, 2\]"
                         r".*shape differs: dense/vars/1: file \[3\], config \[2\]", message, re.S), message
