"""GLUE models answer with the task definitions' label names; the GLUE submission TSVs keep the
labels the GLUE server reads."""

import numpy as np
import pytest

from kbert.data import glue
from kbert.tasks.core.options import FinetuneOptions
from kbert.tasks.core.registry import get_task
from conftest import SHARED

# tensorflow_datasets' glue builder (label_classes of each config), index = the label's id there.
TFDS_LABEL_CLASSES = {
    "cola": ["unacceptable", "acceptable"],
    "sst2": ["negative", "positive"],
    "mrpc": ["not_equivalent", "equivalent"],
    "qqp": ["not_duplicate", "duplicate"],
    "mnli": ["entailment", "neutral", "contradiction"],
    "qnli": ["entailment", "not_entailment"],
    "rte": ["entailment", "not_entailment"],
    "wnli": ["not_entailment", "entailment"],
    "ax": ["entailment", "neutral", "contradiction"],
}
# What the GLUE files (and so the server's submission TSVs) hold for TFDS's label ids.
FILE_LABEL_OF_TFDS_ID = {
    "cola": ["0", "1"], "sst2": ["0", "1"], "mrpc": ["0", "1"], "qqp": ["0", "1"], "wnli": ["0", "1"],
    "mnli": TFDS_LABEL_CLASSES["mnli"], "ax": TFDS_LABEL_CLASSES["ax"],
    "qnli": TFDS_LABEL_CLASSES["qnli"], "rte": TFDS_LABEL_CLASSES["rte"],
}


@pytest.mark.parametrize("name", sorted(TFDS_LABEL_CLASSES))
def test_class_names_pair_with_the_file_labels_as_in_tfds(name):
    task = glue.TASKS[name]
    tfds_name_of_file_label = dict(zip(FILE_LABEL_OF_TFDS_ID[name], TFDS_LABEL_CLASSES[name]))
    assert len(task.class_names) == len(task.labels)
    for file_label, class_name in zip(task.labels, task.class_names):
        assert tfds_name_of_file_label[file_label] == class_name
    assert glue.TASKS["stsb"].class_names is None


def _recipe(task_name, data_dir, **options):
    task = get_task(task_name)
    return task.task_type.recipe(task, FinetuneOptions(task=task_name, init="unused", model_dir="unused",
                                                       data_dir=data_dir, **options))


@pytest.mark.parametrize("name,directory,server_file", [("sst2", "SST-2", "SST-2.tsv"), ("cola", "CoLA", "CoLA.tsv"),
                                                         ("mrpc", "MRPC", "MRPC.tsv")])
def test_models_get_names_and_the_submission_gets_file_labels(tmp_path, name, directory, server_file):
    recipe = _recipe(f"glue/{name}", SHARED / "glue" / directory, max_eval_examples=12, seed=3)
    assert recipe.label_names == glue.TASKS[name].class_names
    logits = np.random.default_rng(0).normal(size=(recipe.num_eval, 2))
    (path,) = recipe.write_predictions(tmp_path, logits)
    rows = [r.split("\t") for r in path.read_text().splitlines()]
    assert path.name == server_file and rows[0] == ["index", "prediction"]
    dev = glue.read_glue(name, "dev", SHARED / "glue" / directory).examples
    assert [int(r[0]) for r in rows[1:]] == list(recipe.dev_index)
    assert [r[1] for r in rows[1:]] == ["0" if a > b else "1" for a, b in logits]
    # The rows are the dev rows the recipe evaluated, in file order.
    assert [dev[int(r[0])]["text_a"] for r in rows[1:]] == [e["text_a"] for e in recipe.dev]


def test_mnli_submission_holds_the_nli_labels(tmp_path):
    header = "index\tsentence1\tsentence2\tgold_label\n"
    rows = [("A man sleeps.", "A person rests.", "entailment"), ("A dog runs.", "A cat sits.", "contradiction"),
            ("Kids play.", "Kids play outside.", "neutral")]
    body = "".join(f"{i}\t{a}\t{b}\t{y}\n" for i, (a, b, y) in enumerate(rows))
    for file in ("train.tsv", "dev_matched.tsv"):
        (tmp_path / file).write_text(header + body)
    recipe = _recipe("glue/mnli", tmp_path)
    assert recipe.split == "dev_matched" and recipe.label_names == ("contradiction", "entailment", "neutral")
    logits = np.eye(3)[[1, 0, 2]]  # class ids 1, 0, 2
    (path,) = recipe.write_predictions(tmp_path, logits)
    assert path.name == "MNLI-m.tsv"
    assert path.read_text().splitlines() == ["index\tprediction", "0\tentailment", "1\tcontradiction", "2\tneutral"]
