"""JGLUE task files (yahoojapan/JGLUE ``datasets/``), read as JGLUE publishes them.

  task            files (a --data-dir holds both)                         fields read
  JSTS            train-v1.3.json, valid-v1.3.json                        sentence_pair_id, sentence1, sentence2,
                                                                          label (a 0-5 number)
  JNLI            train-v1.3.json, valid-v1.3.json                        sentence_pair_id, sentence1, sentence2,
                                                                          label (entailment / contradiction / neutral)
  JCommonsenseQA  train-v1.3.json, valid-v1.3.json                        q_id, question, choice0..choice4, label (0-4)
  JSQuAD          train-v1.3.json, valid-v1.3.json (SQuAD JSON)           kbert.data.squad

All but JSQuAD are JSON lines (one object per line; blank lines are skipped). Any file name of the
form ``train*.json`` and ``valid*.json`` / ``dev*.json`` is found (``split_path``): the shared data
has ``train.json``/``dev.json`` where it re-split the published valid set. A row with a missing
field, a field of the wrong JSON type or a label outside the task's set is a ``DataError`` naming
the file, the line and the field.
"""

from __future__ import annotations

import glob
import math
import os

from kbert.data.examples import TaskData
from kbert.data.textio import json_lines
from kbert.errors import DataError, OptionsError

# JNLI's labels in the order the task definition lists them (class id = position).
JNLI_LABELS = ("entailment", "contradiction", "neutral")
NUM_CHOICES = 5
CHOICE_FIELDS = tuple(f"choice{i}" for i in range(NUM_CHOICES))
JSTS_RANGE = (0.0, 5.0)
# Split name -> file-name patterns in --data-dir, most specific first.
SPLIT_PATTERNS = {"train": ("train-v*.json", "train.json", "train*.json"),
                  "dev": ("valid-v*.json", "dev.json", "valid*.json", "dev*.json")}
SPLIT_PATTERNS["valid"] = SPLIT_PATTERNS["dev"]


def split_path(data_dir, split: str) -> str:
    """The file of ``split`` ("train", "dev"/"valid") in ``data_dir``: the first pattern of
    SPLIT_PATTERNS that matches exactly one file; none or several is an error listing them."""
    if split not in SPLIT_PATTERNS:
        raise OptionsError(f"JGLUE tasks have the splits {sorted(SPLIT_PATTERNS)}, not {split!r}", option="eval_split",
                           value=split)
    folder = os.fspath(data_dir)
    for pattern in SPLIT_PATTERNS[split]:
        found = sorted(glob.glob(os.path.join(glob.escape(folder), pattern)))
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            names = ", ".join(os.path.basename(f) for f in found)
            raise DataError(folder, f"one {split} file matching {pattern!r} (pass --train-file/--eval-file)",
                            field="files", value=names)
    present = sorted(os.path.basename(f) for f in glob.glob(os.path.join(glob.escape(folder), "*.json")))
    raise DataError(folder, f"a {split} file named like {' or '.join(SPLIT_PATTERNS[split])}", field="files",
                    value=present)


def task_path(data_dir, split: str, override=None, task_name: str = "") -> str:
    """``override`` (--train-file / --eval-file) or the split's file in ``data_dir``."""
    if override:
        return os.fspath(override)
    if not data_dir:
        raise OptionsError(f"task {task_name!r} needs --data-dir (a folder with train*.json and "
                         "valid*.json or dev*.json) or --train-file and --eval-file", option="data_dir")
    return split_path(data_dir, split)


def _field(path, line, record, name, kinds, expected):
    if name not in record:
        raise DataError(path, expected, line=line, field=name)
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise DataError(path, expected, line=line, field=name, value=value)
    return value


def _text(path, line, record, name):
    return _field(path, line, record, name, str, "a string")


def _row_id(path, line, record, name):
    """The row's id as a string (JGLUE writes sentence_pair_id as a string, q_id as a number)."""
    return str(_field(path, line, record, name, (str, int), "a string or integer id"))


def _result(path, examples, label_names, task):
    if not examples:
        raise DataError(path, "at least one data row", value="no rows")
    return TaskData(examples, label_names, str(path), {"task": task})


def read_jsts(path, *, labelled: bool = True, data: bytes | None = None) -> TaskData:
    """JSTS: examples {"id", "text_a", "text_b", "label"} (label a float in [0, 5]; None unlabelled)."""
    examples = []
    for line, record in json_lines(path, data):
        label = None
        if labelled:
            label = float(_field(path, line, record, "label", (int, float), "a number in [0, 5]"))
            if not (math.isfinite(label) and JSTS_RANGE[0] <= label <= JSTS_RANGE[1]):
                raise DataError(path, "a number in [0, 5]", line=line, field="label", value=record["label"])
        examples.append({"id": _row_id(path, line, record, "sentence_pair_id"),
                         "text_a": _text(path, line, record, "sentence1"),
                         "text_b": _text(path, line, record, "sentence2"), "label": label})
    return _result(path, examples, None, "jsts")


def read_jnli(path, *, labelled: bool = True, data: bytes | None = None) -> TaskData:
    """JNLI: examples {"id", "text_a", "text_b", "label"} (label an index into JNLI_LABELS)."""
    examples = []
    for line, record in json_lines(path, data):
        label = None
        if labelled:
            expected = f"one of {', '.join(JNLI_LABELS)}"
            name = _field(path, line, record, "label", str, expected)
            if name not in JNLI_LABELS:
                raise DataError(path, expected, line=line, field="label", value=name)
            label = JNLI_LABELS.index(name)
        examples.append({"id": _row_id(path, line, record, "sentence_pair_id"),
                         "text_a": _text(path, line, record, "sentence1"),
                         "text_b": _text(path, line, record, "sentence2"), "label": label})
    return _result(path, examples, JNLI_LABELS, "jnli")


def read_jcommonsenseqa(path, *, labelled: bool = True, data: bytes | None = None) -> TaskData:
    """JCommonsenseQA: examples {"id", "question", "choices" (5 strings), "label" (0-4)}."""
    examples = []
    for line, record in json_lines(path, data):
        label = None
        if labelled:
            label = _field(path, line, record, "label", int, "an integer choice number 0-4")
            if not 0 <= label < NUM_CHOICES:
                raise DataError(path, "an integer choice number 0-4", line=line, field="label", value=label)
        examples.append({"id": _row_id(path, line, record, "q_id"),
                         "question": _text(path, line, record, "question"),
                         "choices": [_text(path, line, record, c) for c in CHOICE_FIELDS], "label": label})
    return _result(path, examples, tuple(str(i) for i in range(NUM_CHOICES)), "jcommonsenseqa")


def read_jsquad(path, *, data: bytes | None = None) -> TaskData:
    """JSQuAD (SQuAD JSON, kbert.data.squad.read_squad: every answer's text is kept, an answer that
    is no span of its context gets ``answer_start`` -1). JSQuAD is SQuAD 1.1-like and scored so
    (JGLUE's scripts never read ``is_impossible``, which its files set false everywhere): the flag is
    ignored, and a question without answers is a DataError naming the file and the question id."""
    from kbert.data.squad import left_out_of_training, read_squad

    result = read_squad(path, data=data)
    for example in result.examples:
        if example["is_impossible"] and not example["answers"]:
            raise DataError(path, "at least one answer (JSQuAD is scored as SQuAD 1.1: every question has one)",
                            record=f"question id {example['id']!r}", field="answers", value=[])
        example["is_impossible"] = False
    result.meta.update(task="jsquad", version_2_with_negative=False,
                       unplaced_questions=left_out_of_training(result.examples)[1])
    return result
