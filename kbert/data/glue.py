"""GLUE distribution files (the TSVs that GLUE's download_glue_data.py writes).

Column layouts follow google-research/bert run_classifier.py and download_glue_data.py:

  task   dir      train/dev columns used                      test columns used
  cola   CoLA     no header: source, label, mark, sentence    header index, sentence
  sst2   SST-2    header sentence, label                      index, sentence
  mrpc   MRPC     Quality, #1 String, #2 String (BOM header)  index, #1 String, #2 String
  stsb   STS-B    sentence1, sentence2, score (float 0..5)    sentence1, sentence2
  qqp    QQP      question1, question2, is_duplicate          question1, question2
  mnli   MNLI     sentence1, sentence2, gold_label (last)     sentence1, sentence2
  qnli   QNLI     question, sentence, label                   question, sentence
  rte    RTE      sentence1, sentence2, label                 sentence1, sentence2
  wnli   WNLI     sentence1, sentence2, label                 sentence1, sentence2
  ax     diagnostic (test only, MNLI labels)                  sentence1, sentence2

Columns are found by header name (so MNLI's gold_label is found in train's 12 and dev's 16
columns), every row must have as many fields as the header, and files are split on tabs with no
quoting. Text is kept exactly as in the file (SST-2's trailing space, CoLA's U+0008 included).
"""

from __future__ import annotations

import dataclasses
import os

from kbert.data.examples import TaskData
from kbert.data.labels import label_index, parse_score
from kbert.data.textio import check_columns, header_index, tsv_rows
from kbert.errors import DataError, OptionsError


@dataclasses.dataclass(frozen=True)
class GlueTask:
    """How to read one GLUE task.

    Attributes:
      name: registry key, e.g. "sst2".
      directory: the task's folder name in the GLUE distribution, e.g. "SST-2".
      files: split name -> file name in that folder ("train", "dev", "test"; MNLI has
        "dev_matched", "dev_mismatched", "test_matched", "test_mismatched").
      text_columns: header names of text_a (and text_b).
      label_column: header name of the label.
      labels: label strings in index order, or None for regression.
      metrics: metric names for kbert.tasks.core.metrics.compute_metrics.
      id_column: header name of the row id, used when the file has it (test files always do).
      headerless: columns of files with no header line, for the splits listed in headerless_splits.
      label_range: allowed range of a regression label.
      label_names: the classes' names in the task definition (TFDS ``glue`` / the GLUE paper),
        index order = ``labels``: what fine-tuned models predict and exports answer ("negative"
        for SST-2's "0"). ``labels`` stay what the files and the GLUE server's submission TSVs
        hold. None: the same as ``labels`` (and for regression).
      no_consensus: the label of a pair whose annotators agreed on none (MultiNLI's "-"): GLUE's
        files leave such rows out and nothing scores them, so a file that has them (MultiNLI's own
        release) is read without them; meta "left_out" names them.
    """

    name: str
    directory: str
    files: dict
    text_columns: tuple
    label_column: str
    labels: tuple | None
    metrics: tuple
    id_column: str | None = "index"
    headerless: tuple | None = None
    headerless_splits: frozenset = frozenset()
    label_range: tuple | None = None
    label_names: tuple | None = None
    no_consensus: str | None = None

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def num_labels(self) -> int:
        return 1 if self.labels is None else len(self.labels)

    @property
    def class_names(self) -> tuple | None:
        """The names models predict: label_names, else labels (None for regression)."""
        return self.label_names or self.labels

    def is_labelled(self, split: str) -> bool:
        return not split.startswith("test")

    def file(self, split: str) -> str:
        try:
            return self.files[split]
        except KeyError:
            raise OptionsError(f"GLUE task {self.name!r} has no split {split!r}; expected one of "
                               f"{sorted(self.files)}", option="eval_split", value=split) from None

    def path(self, data_dir, split: str) -> str:
        """The split's file in data_dir, the task's own folder (as run_classifier's --data_dir);
        a GLUE root folder (glue_data/, holding SST-2/ etc.) works too."""
        direct = os.path.join(os.fspath(data_dir), self.file(split))
        nested = os.path.join(os.fspath(data_dir), self.directory, self.file(split))
        return nested if not os.path.exists(direct) and os.path.exists(nested) else direct


_NLI3 = ("contradiction", "entailment", "neutral")  # run_classifier.py MnliProcessor order
_NLI2 = ("entailment", "not_entailment")
_BINARY = ("0", "1")

TASKS = {
    t.name: t
    for t in [
        GlueTask("cola", "CoLA", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("sentence",), "label", _BINARY, ("matthews_corrcoef",),
                 label_names=("unacceptable", "acceptable"), headerless=("source", "label", "mark", "sentence"),
                 headerless_splits=frozenset({"train", "dev"})),
        GlueTask("sst2", "SST-2", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("sentence",), "label", _BINARY, ("accuracy",),
                 label_names=("negative", "positive")),
        GlueTask("mrpc", "MRPC", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("#1 String", "#2 String"), "Quality", _BINARY, ("accuracy", "f1"),
                 label_names=("not_equivalent", "equivalent")),
        GlueTask("stsb", "STS-B", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("sentence1", "sentence2"), "score", None, ("pearson", "spearman"),
                 label_range=(0.0, 5.0)),
        GlueTask("qqp", "QQP", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("question1", "question2"), "is_duplicate", _BINARY, ("accuracy", "f1"),
                 id_column="id", label_names=("not_duplicate", "duplicate")),
        GlueTask("mnli", "MNLI",
                 {"train": "train.tsv", "dev_matched": "dev_matched.tsv",
                  "dev_mismatched": "dev_mismatched.tsv", "test_matched": "test_matched.tsv",
                  "test_mismatched": "test_mismatched.tsv"},
                 ("sentence1", "sentence2"), "gold_label", _NLI3, ("accuracy",), no_consensus="-"),
        GlueTask("qnli", "QNLI", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("question", "sentence"), "label", _NLI2, ("accuracy",)),
        GlueTask("rte", "RTE", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("sentence1", "sentence2"), "label", _NLI2, ("accuracy",)),
        GlueTask("wnli", "WNLI", {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"},
                 ("sentence1", "sentence2"), "label", _BINARY, ("accuracy",),
                 label_names=("not_entailment", "entailment")),
        GlueTask("ax", "diagnostic", {"test": "diagnostic.tsv"},
                 ("sentence1", "sentence2"), "label", _NLI3, ("matthews_corrcoef",)),
    ]
}


def get_task(name: str) -> GlueTask:
    key = name.lower().replace("-", "").replace("_", "")
    if key.startswith("glue/"):
        key = key[5:]
    try:
        return TASKS[key]
    except KeyError:
        raise OptionsError(f"unknown GLUE task {name!r}; expected one of {sorted(TASKS)}", option="task",
                           value=name) from None


def read_glue(task, split: str, data_dir=None, *, path=None, data: bytes | None = None) -> TaskData:
    """Reads one split of a GLUE task.

    Args:
      task: a GlueTask or its name ("sst2", "mnli", ...).
      split: "train", "dev", "test" (MNLI: "dev_matched", ...).
      data_dir: the task's folder (e.g. glue_data/SST-2); or give `path` to the file directly.
      data: the file's bytes, if already read (then `path`/data_dir only name it in errors).

    Returns:
      TaskData whose examples are {"id", "text_a", "text_b", "label"}: text_b is None for
      single-sentence tasks, label is an int index into label_names (float for STS-B) and None in
      test files. label_names is None for STS-B. meta "left_out": the rows read without (MNLI's
      no-consensus "-" rows, ``GlueTask.no_consensus``), as "line N (id X)".
    """
    task = get_task(task) if isinstance(task, str) else task
    task.file(split)  # validates the split name
    if path is None:
        if data_dir is None:
            raise OptionsError("read_glue needs data_dir or path", option="data_dir")
        path = task.path(data_dir, split)
    labelled = task.is_labelled(split)

    rows = tsv_rows(path, data)
    if split in task.headerless_splits:
        header = list(task.headerless)
    else:
        first = next(rows, None)
        if first is None:
            raise DataError(path, "a header line and at least one data row", value="empty file")
        header = first[1]
    text_idx = [header_index(path, header, c) for c in task.text_columns]
    label_idx = header_index(path, header, task.label_column) if labelled else None
    id_idx = header.index(task.id_column) if task.id_column in header else None

    examples, left_out = [], []
    for line, fields in rows:
        check_columns(path, line, fields, len(header), header)
        row = len(examples) + len(left_out)
        if labelled and task.no_consensus is not None and fields[label_idx] == task.no_consensus:
            left_out.append(f"line {line}" + (f" (id {fields[id_idx]})" if id_idx is not None else ""))
            continue
        example = {
            "id": fields[id_idx] if id_idx is not None else f"{split}-{row}",
            "text_a": fields[text_idx[0]],
            "text_b": fields[text_idx[1]] if len(text_idx) > 1 else None,
            "label": None,
        }
        if labelled:
            value = fields[label_idx]
            if task.is_regression:
                example["label"] = parse_score(path, line, task.label_column, value, task.label_range)
            else:
                example["label"] = label_index(path, line, task.label_column, value, task.labels)
        examples.append(example)
    if not examples:
        raise DataError(path, "at least one data row", value="no rows" if not left_out else
                        f"only rows labelled {task.no_consensus!r} (no consensus)")
    return TaskData(examples, task.labels, str(path), {"task": task.name, "split": split, "left_out": left_out})
