"""What every task type shares for ``python -m kbert.predict``: the options, the progress bar,
the output formats common to all (JSON lines, a simple TSV) and the atomic write.

Each task type (kbert.tasks.core.task_type.TaskType) reads its input (``read_prediction_input``),
predicts one dict per input row (``predict``) and writes them (``format_predictions``); this module
holds nothing task-specific. numpy-free and TensorFlow-free: the CLI imports it before the model.
"""

from __future__ import annotations

import dataclasses
import json
import math

from kbert.api_export import kbert_export
from kbert.errors import OptionsError


@kbert_export("kbert.PredictOptions")
@dataclasses.dataclass
class PredictOptions:
    """How kbert.predict reads the input and what it writes for each row.

    Attributes:
      task_format: how to read the input (None: from the model's task and the file's extension);
        see each task type's ``input_formats``.
      text_columns: table inputs: the text column(s) (default: those the model was trained on).
      id_column: table inputs: the column holding each row's id (default: the line number).
      probabilities: add the probabilities (classification, multi-label, multiple choice, QA).
      batch_size: rows per model call.
      long_documents, doc_stride: truncate, windows or sentences, and the windows' stride, instead of what the
        model was fine-tuned with (kbert.tasks.core.windows).

    Examples:
        >>> import kbert
        >>> kbert.PredictOptions(probabilities=True).batch_size
        64
    """

    task_format: str | None = None
    text_columns: tuple | None = None
    id_column: str | None = None
    probabilities: bool = False
    batch_size: int = 64
    # Texts longer than the model's seq_length (None: what the model directory recorded).
    long_documents: str | None = None
    doc_stride: int | None = None

    def model_settings(self) -> dict:
        """The load_task_model settings these options change."""
        return {k: v for k, v in (("long_documents", self.long_documents), ("doc_stride", self.doc_stride))
                if v is not None}


class RowProgress:
    """A Keras progress bar over what a task type predicts: ``start(total, unit)`` (rows, or e.g.
    SQuAD windows) once, then ``progress(n)`` after each batch (the task models call it). Shows
    nothing when ``show`` is False."""

    def __init__(self, show: bool = True):
        self.show = show
        self.bar = None

    def start(self, total: int, unit: str = "row"):
        if self.show and total:
            import sys

            import keras

            # On a terminal a bar rewritten in place; in a log file one line at the end.
            self.bar = keras.utils.Progbar(int(total), unit_name=unit, verbose=1 if sys.stdout.isatty() else 2)
        return self

    def __call__(self, rows: int):
        if self.bar is not None:
            self.bar.add(int(rows))


def plain(value):
    """numpy scalars/arrays and tuples -> JSON-ready Python values (floats rounded to 6 digits)."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else None
    return value


def jsonl_text(predictions) -> str:
    """One JSON object a line, in input order."""
    return "".join(json.dumps(plain(p), ensure_ascii=False) + "\n" for p in predictions)


def tsv_text(predictions) -> str:
    """A header line and one tab-separated line per prediction: a dict value becomes one column per
    key (``probabilities.positive``), a list is joined with spaces; tabs and line breaks inside a
    value become spaces (TSV has no quoting)."""
    rows = [_flat(plain(p)) for p in predictions]
    columns = list(dict.fromkeys(k for row in rows for k in row))
    lines = ["\t".join(columns)] + ["\t".join(_cell(row.get(c, "")) for c in columns) for row in rows]
    return "\n".join(lines) + "\n"


def _flat(prediction: dict) -> dict:
    out = {}
    for key, value in prediction.items():
        if isinstance(value, dict):
            out.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            out[key] = value
    return out


def _cell(value) -> str:
    if isinstance(value, list):
        text = " ".join(_cell(v) for v in value)
    elif isinstance(value, dict):
        text = json.dumps(value, ensure_ascii=False)
    else:
        text = "" if value is None else str(value)
    return " ".join(text.replace("\r", " ").replace("\n", " ").split("\t"))


def write_text(path, text: str) -> None:
    """Writes ``text`` to ``path`` atomically (a temporary file renamed over it): an error or a
    crash leaves the previous file, never half of a new one."""
    import pathlib

    from kbert.model_dir import atomic_write

    path = pathlib.Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def write_jsonl(path, rows):
    """``rows`` (plain Python values) as JSON lines, non-ASCII as it is and floats in full (a
    metric recomputed from the file is the run's), written atomically; returns ``path``."""
    write_text(path, "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    return path


class FilePredictor:
    """``kbert predict`` for a named task that reads its benchmark's own file (``reader``, under
    the ``--task-format`` name ``file_format``) and writes JSON lines (or TSV); subclasses give
    ``predict``. A NamedTask's ``predictor``."""

    def __init__(self, reader, file_format: str, what: str):
        self.reader, self.file_format, self.what = reader, file_format, what

    @property
    def input_formats(self):
        return (self.file_format,)

    def output_formats(self, task_meta):
        return ("jsonl", "tsv")

    def signatures(self, module):
        return None  # the task type's

    def read_prediction_input(self, task_meta, path, options):
        if options.task_format not in (None, self.file_format):
            raise OptionsError(f"--task-format {options.task_format!r}: a {self.what} model reads its own file "
                               f"({self.file_format!r})", option="task_format")
        if options.probabilities:
            raise OptionsError(f"--probabilities: the {self.what} prediction file has none", option="probabilities")
        return self.reader(path, labelled=False)

    def format_predictions(self, task_meta, data, predictions, fmt):
        return jsonl_text(predictions) if fmt == "jsonl" else tsv_text(predictions)


def task_metadata(model) -> dict:
    """The kbert.json ``task`` object of a loaded task model (its settings and saved ``info``)."""
    return {**model.task_metadata(), "info": dict(getattr(model, "saved_task_info", {}) or {})}
