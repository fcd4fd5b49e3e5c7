"""Task names -> file and reader, for pipelines/task_data.py (TFRecords): any task of the task
registry (kbert.tasks.core.registry: "glue/<task>", "squad/v1.1", "squad/v2.0", "conll2003", "swag",
"table"/"csv" a generic CSV/TSV/JSONL file, and registered plug-ins); each task type says where a
split's file is and how to read it (TaskType.data_source)."""

from __future__ import annotations

import dataclasses
import os
from typing import Callable

from kbert.errors import OptionsError


@dataclasses.dataclass(frozen=True)
class TaskSpec:
    """A resolved task file.

    Attributes:
      name: the task name as given.
      kind: the TFRecord layout (kbert.data.tfrecord.KINDS): "classification", "regression",
        "squad", "conll" or "swag".
      path: the file to read.
      read: read(path, data=None) -> TaskData (data: the file's bytes, if already read).
      metrics: metric names for kbert.tasks.core.metrics.compute_metrics.
    """

    name: str
    kind: str
    path: str
    read: Callable
    metrics: tuple = ()


def resolve_task(name: str, data_dir=None, split: str = "train", *, input_path=None, **options) -> TaskSpec:
    """Finds a task's file and reader.

    Args:
      name: a registered task name (kbert.tasks.core.registry.task_names()), e.g. "glue/mrpc",
        "squad/v1.1", "conll2003", "swag", "table".
      data_dir: the folder with the task's files (for GLUE: the task's own folder, e.g.
        glue_data/MRPC, as run_classifier.py's --data_dir).
      split: "train", "dev", "test" (MNLI: "dev_matched", ...).
      input_path: the file itself, overriding data_dir/split (required for "table").
      options: the task type's options (its Options dataclass fields), e.g. for "table":
        text_columns, label_column, label_names, regression (see read_table). Options of other
        task types are ignored (a pipeline passes its flags to every task).
    """
    from kbert.tasks.core.registry import get_task

    task = get_task(name)
    if not task.tfrecords:  # e.g. the JGLUE tasks: kbert.finetune reads their files
        raise OptionsError(f"task {name!r} has no TFRecord pipeline; fine-tune it from its files (kbert.finetune)")
    task_type = task.task_type
    fields = {f.name for f in dataclasses.fields(task_type.Options)}
    source = task_type.data_source(task, split, task_type.Options(**{k: v for k, v in options.items() if k in fields}))
    if input_path is not None:
        path = os.fspath(input_path)
    elif source.file is None:
        raise OptionsError(f"task {name!r} needs input_path (the file itself)")
    elif data_dir is None:
        raise OptionsError(f"task {name!r} needs data_dir or input_path")
    else:
        path = os.path.join(os.fspath(data_dir), source.file)
    return TaskSpec(name, source.kind, path, source.read, source.metrics)
