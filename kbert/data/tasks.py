"""Task names -> file and reader: "glue/<task>", "squad/v1.1", "squad/v2.0", "conll2003", "swag",
"table" (a generic CSV/TSV/JSONL file). Used by pipelines/task_data.py and the fine-tuning CLI."""

from __future__ import annotations

import dataclasses
import functools
import os
from typing import Callable

from kbert.data import conll, glue, squad, swag, table

SQUAD_FILES = {
    "v1.1": {"train": "train-v1.1.json", "dev": "dev-v1.1.json"},
    "v2.0": {"train": "train-v2.0.json", "dev": "dev-v2.0.json"},
}
CONLL_FILES = {"train": "train.txt", "dev": "valid.txt", "valid": "valid.txt", "test": "test.txt"}
SWAG_FILES = {"train": "train.csv", "dev": "val.csv", "val": "val.csv", "test": "test.csv"}


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A resolved task file.

    Attributes:
      name: the task name as given.
      kind: the TFRecord layout (kbert.data.tfrecord.KINDS): "classification", "regression",
        "squad", "conll" or "swag".
      path: the file to read.
      read: read(path, data=None) -> TaskData (data: the file's bytes, if already read).
      metrics: metric names for kbert.tasks.metrics.compute_metrics.
    """

    name: str
    kind: str
    path: str
    read: Callable
    metrics: tuple = ()


def _pick(files: dict, split: str, name: str) -> str:
    if split not in files:
        raise ValueError(f"task {name!r} has no split {split!r}; expected one of {sorted(files)}")
    return files[split]


def resolve_task(name: str, data_dir=None, split: str = "train", *, input_path=None,
                 text_columns=None, label_column=None, label_names=None,
                 regression: bool = False) -> TaskSpec:
    """Finds a task's file and reader.

    Args:
      name: "glue/<task>" (see kbert.data.glue.TASKS), "squad/v1.1", "squad/v2.0", "conll2003",
        "swag" or "table".
      data_dir: the folder with the task's files (for GLUE: the task's own folder, e.g.
        glue_data/MRPC, as run_classifier.py's --data_dir).
      split: "train", "dev", "test" (MNLI: "dev_matched", ...).
      input_path: the file itself, overriding data_dir/split (required for "table").
      text_columns, label_column, label_names, regression: for "table" (see read_table).
    """
    def where(file_name):
        if input_path is not None:
            return os.fspath(input_path)
        if data_dir is None:
            raise ValueError(f"task {name!r} needs data_dir or input_path")
        return os.path.join(os.fspath(data_dir), file_name)

    key = name.lower()
    if key.startswith("glue/"):
        task = glue.get_task(key)
        path = where(task.file(split))
        read = functools.partial(_read_glue, task, split)
        kind = "regression" if task.is_regression else "classification"
        return TaskSpec(name, kind, path, read, task.metrics)
    if key in ("squad", "squad/v1.1", "squad/v2.0"):
        version = "v2.0" if key.endswith("v2.0") else "v1.1"
        path = where(_pick(SQUAD_FILES[version], split, name))
        return TaskSpec(name, "squad", path, _read_squad, ("squad_exact_match", "squad_f1"))
    if key in ("conll2003", "conll"):
        path = where(_pick(CONLL_FILES, split, name))
        return TaskSpec(name, "conll", path, _read_conll, ("ner_precision", "ner_recall", "ner_f1"))
    if key == "swag":
        path = where(_pick(SWAG_FILES, split, name))
        return TaskSpec(name, "swag", path, _read_swag, ("accuracy",))
    if key == "table":
        if input_path is None or not text_columns:
            raise ValueError("task 'table' needs input_path and text_columns")
        read = functools.partial(_read_table, tuple(text_columns), label_column,
                                 tuple(label_names) if label_names else None, regression)
        kind = "regression" if regression else "classification"
        metrics = ("pearson", "spearman") if regression else ("accuracy",)
        return TaskSpec(name, kind, os.fspath(input_path), read, metrics)
    raise ValueError(f"unknown task {name!r}; expected glue/<task> (one of {sorted(glue.TASKS)}), "
                     "squad/v1.1, squad/v2.0, conll2003, swag or table")


# Module-level readers (picklable, so a Beam worker can receive them).
def _read_glue(task, split, path, data=None):
    return glue.read_glue(task, split, path=path, data=data)


def _read_squad(path, data=None):
    return squad.read_squad(path, data=data)


def _read_conll(path, data=None):
    return conll.read_conll(path, data=data)


def _read_swag(path, data=None):
    return swag.read_swag(path, data=data)


def _read_table(text_columns, label_column, label_names, regression, path, data=None):
    return table.read_table(path, text_columns, label_column, label_names=label_names,
                            regression=regression, data=data)


def read_task(name: str, data_dir=None, split: str = "train", **kwargs):
    """Reads a task split: resolve_task(...).read(path) -> TaskData."""
    spec = resolve_task(name, data_dir, split, **kwargs)
    return spec.read(spec.path)
