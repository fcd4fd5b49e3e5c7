"""kbert.tasks.core.base: a task model saved and reloaded by load_task_model (the same answers, its
info, one head), and the directories it refuses, named. Damaged head files: tests/test_reliability_model_files.py."""

import json

import numpy as np
import pytest

from kbert.tasks import TaskModelError, TextClassifier, load_task_model


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
