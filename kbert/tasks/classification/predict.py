"""kbert.predict for the classification task type: reading unlabelled tables and GLUE TSVs, one
answer per row, and the GLUE server's submission TSV (the Classification TaskType's prediction
methods, kept here so that kbert/tasks/classification/task.py stays about fine-tuning).

Rows: ``{"id", "label"}`` (+ ``"probabilities": {label: p}``), ``{"id", "labels": [...]}``
(multi-label, + the per-label sigmoid probabilities), ``{"id", "score"}`` (regression). The id is
the GLUE file's index (its row number where it has none), a table's ``--id-column`` or its line
number.
"""

from __future__ import annotations

import os

import numpy as np

from kbert.data import glue, table
from kbert.data.textio import tsv_rows
from kbert.errors import OptionsError
from kbert.tasks.classification import submission
from kbert.tasks.core.prediction import RowProgress

TABLE_FORMATS = ("csv", "tsv", "jsonl")


def glue_task_of(task_meta: dict):
    """The GLUE task a model was fine-tuned on (kbert.json task.info.task_name "glue/..."), or None."""
    name = str((task_meta.get("info") or {}).get("task_name", ""))
    if not name.lower().startswith("glue/"):
        return None
    try:
        return glue.get_task(name)
    except ValueError:
        return None


def _read_glue_rows(task, path):
    """A GLUE file of ``task`` (a test file: no labels; a train/dev file: labels ignored). Ids are
    the file's index column, or the row number (0-based) where it has none."""
    header = next(tsv_rows(path), (1, []))[1]
    if task.headerless and task.text_columns[0] not in header:  # CoLA's train/dev files have no header
        data = glue.read_glue(task, "dev", path=path)
    else:
        data = glue.read_glue(task, "test_matched" if task.name == "mnli" else "test", path=path)
    if task.id_column not in header:
        for row, example in enumerate(data.examples):
            example["id"] = str(row)
    return data


def _softmax(logits):
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


class ClassificationPrediction:
    """The TaskType methods of kbert.predict for text_classifier, text_regressor and
    multi_label_classifier models."""

    input_formats = ("glue", *TABLE_FORMATS)

    def output_formats(self, task_meta):
        if task_meta.get("type") == "multi_label_classifier":
            return ("jsonl", "tsv")
        return ("jsonl", "tsv", "glue")

    def read_prediction_input(self, task_meta, path, options):
        kind = task_meta.get("type")
        if options.probabilities and kind == "text_regressor":
            raise OptionsError("--probabilities: a regression model predicts a score, not probabilities",
                               option="probabilities")
        glue_task = glue_task_of(task_meta)
        fmt = options.task_format
        if fmt is None and glue_task is not None and os.fspath(path).lower().endswith(".tsv") \
                and not options.text_columns:
            fmt = "glue"
        if fmt not in (None, *self.input_formats):
            raise OptionsError(f"--task-format {fmt!r}: a {kind} model reads one of {', '.join(self.input_formats)}",
                               option="task_format")
        if fmt == "glue":
            if glue_task is None:
                raise OptionsError("--task-format glue needs a model fine-tuned on a GLUE task (glue/...); this one "
                                   f"was fine-tuned on {(task_meta.get('info') or {}).get('task_name')!r}",
                                   option="task_format")
            return _read_glue_rows(glue_task, path)
        info = task_meta.get("info") or {}
        num_segments = int(task_meta.get("num_segments", 1))
        default = glue_task.text_columns if glue_task else ("text",) if num_segments == 1 else ("text_a", "text_b")
        columns = options.text_columns or info.get("text_columns") or default
        columns = tuple(columns)
        if len(columns) != num_segments:
            raise OptionsError(f"--text-columns {','.join(columns)}: this model takes {num_segments} text(s) per row",
                               option="text_columns")
        label_column = info.get("label_column")  # checked where present: a label the model does not know
        return table.read_table(path, columns, label_column, label_names=task_meta.get("label_names"),
                                regression=kind == "text_regressor", multi_label=kind == "multi_label_classifier",
                                label_required=False, id_column=options.id_column, format=fmt)

    def predict(self, model, data, options, progress=None):
        examples = data.examples
        text_a = np.array([e["text_a"] for e in examples], dtype=object)
        if model.num_segments == 1:
            x = text_a
        else:
            x = {"text_a": text_a, "text_b": np.array([e["text_b"] or "" for e in examples], dtype=object)}
        progress = (progress or RowProgress(show=False)).start(len(examples))
        logits = model.predict_logits(x, batch_size=options.batch_size, progress=progress)
        kind = model.task_type
        if kind == "text_regressor":
            return [{"id": e["id"], "score": float(s)} for e, s in zip(examples, logits)]
        names = model.label_names or [str(i) for i in range(logits.shape[-1])]
        rows = []
        if kind == "multi_label_classifier":
            chosen, probabilities = model.indicators(logits), 1.0 / (1.0 + np.exp(-logits))
            for e, row, p in zip(examples, chosen, probabilities):
                rows.append({"id": e["id"], "labels": [names[j] for j in np.flatnonzero(row)]})
                if options.probabilities:
                    rows[-1]["probabilities"] = dict(zip(names, p.tolist()))
            return rows
        probabilities = _softmax(logits)
        for e, p in zip(examples, probabilities):
            rows.append({"id": e["id"], "label": names[int(p.argmax())]})
            if options.probabilities:
                rows[-1]["probabilities"] = dict(zip(names, p.tolist()))
        return rows

    def format_predictions(self, task_meta, data, predictions, fmt):
        if fmt != "glue" or task_meta.get("type") == "multi_label_classifier":
            return super().format_predictions(task_meta, data, predictions, fmt)
        ids = [p["id"] for p in predictions]
        if task_meta.get("type") == "text_regressor":
            return submission.glue_text(ids, [p["score"] for p in predictions])
        glue_task = glue_task_of(task_meta)
        names = list(task_meta.get("label_names") or [str(i) for i in range(int(task_meta.get("num_classes", 0)))])
        # A GLUE model answers with the task's label names; the server's TSV holds its own labels.
        file_labels = glue_task.labels if glue_task is not None else names
        return submission.glue_text(ids, [names.index(p["label"]) for p in predictions], file_labels)
