"""KLUE task files (KLUE-benchmark/KLUE ``klue_benchmark/``), read as KLUE distributes them.

  task   files (official names)                                 fields read
  NLI    klue-nli-v1.1_train.json, klue-nli-v1.1_dev.json       a JSON list: guid, premise, hypothesis,
                                                                gold_label (entailment / neutral / contradiction)
  STS    klue-sts-v1.1_train.json, klue-sts-v1.1_dev.json       a JSON list: guid, sentence1, sentence2,
                                                                labels.label (0-5), labels.binary-label (0/1)
  NER    klue-ner-v1.1_train.tsv, klue-ner-v1.1_dev.tsv         one character a line ``CHAR<TAB>TAG`` (a space
                                                                is its own line), a blank line between
                                                                sentences, each headed by ``## GUID<TAB>marked
                                                                sentence``; ``##`` lines before the first
                                                                sentence describe the format

``select_rows`` takes a ``START:END`` slice of a file's rows (the sentences of a NER file), so that
one file can be split into a training and an evaluation part. A bad row is a DataError naming the
file, the row (JSON: ``row N``, 0-based as the list; TSV: the line) and the field.
"""

from __future__ import annotations

import math
import os

from kbert.data.examples import TaskData
from kbert.data.textio import load_json, read_text
from kbert.errors import DataError, OptionsError

NLI_LABELS = ("entailment", "neutral", "contradiction")  # KLUE's order (class id = position)
NER_TYPES = ("DT", "LC", "OG", "PS", "QT", "TI")
# The 13 BIO labels of KLUE-NER, in KLUE's baseline order (O last).
NER_LABELS = tuple(f"{p}-{t}" for t in NER_TYPES for p in ("B", "I")) + ("O",)
STS_RANGE = (0.0, 5.0)
# task -> (folder, file prefix, extension) of the official files
FILES = {"nli": ("klue-nli-v1.1", "klue-nli-v1.1", "json"), "sts": ("klue-sts-v1.1", "klue-sts-v1.1", "json"),
         "ner": ("klue-ner-v1.1", "klue-ner-v1.1", "tsv")}


def split_path(data_dir, task: str, split: str) -> str:
    """``<prefix>_<split>.<ext>`` in ``data_dir`` or in its official sub-folder (so both the task
    folder and the folder above it work)."""
    folder, prefix, ext = FILES[task]
    name = f"{prefix}_{split}.{ext}"
    for path in (os.path.join(os.fspath(data_dir), name), os.path.join(os.fspath(data_dir), folder, name)):
        if os.path.isfile(path):
            return path
    raise DataError(os.fspath(data_dir), f"the official file {name} (or {folder}/{name}); pass --train-file/"
                    "--eval-file for other names", field="files", value=sorted(os.listdir(data_dir))
                    if os.path.isdir(data_dir) else "no such folder")


def parse_rows(spec) -> tuple:
    """(start, end) of a "START:END" slice (either side may be empty), or None for no slice."""
    if not spec:
        return None
    parts = str(spec).split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        return tuple(int(p) if p.strip() else None for p in parts)
    except ValueError:
        raise OptionsError(f"rows must be START:END (e.g. :1500 or 1500:), got {spec!r}", value=spec) from None


def select_rows(data: TaskData, spec) -> TaskData:
    """The rows ``spec`` ("START:END", a Python slice of the file's rows) of ``data``."""
    bounds = parse_rows(spec)
    if bounds is None:
        return data
    chosen = data.examples[slice(*bounds)]
    if not chosen:
        raise OptionsError(f"rows {spec!r} select none of the {len(data.examples)} rows of {data.source}", value=spec)
    return TaskData(chosen, data.label_names, data.source, {**data.meta, "rows": spec})


def task_splits(kind: str, *, data_dir=None, eval_split: str = "dev", train_file=None, eval_file=None,
                train_rows=None, eval_rows=None, task_name: str = "") -> tuple:
    """(training rows, evaluation rows) of KLUE task ``kind`` ("nli", "sts", "ner"): the files
    (``train_file`` / ``eval_file``, or the official names in ``data_dir``) sliced by
    ``train_rows`` / ``eval_rows`` ("START:END"). One file for both needs both slices, and the
    slices may not share a row."""
    def path(split, override):
        if override:
            return os.fspath(override)
        if not data_dir:
            raise OptionsError(f"task {task_name!r} needs --data-dir (KLUE's klue-{kind}-v1.1 folder) or "
                               "--train-file and --eval-file", option="data_dir")
        return split_path(data_dir, kind, split)

    train_path, eval_path = path("train", train_file), path(eval_split, eval_file)
    read = READERS[kind]
    train_all = read(train_path)
    eval_all = train_all if os.path.abspath(eval_path) == os.path.abspath(train_path) else read(eval_path)
    if eval_all is train_all and not (train_rows and eval_rows):
        raise OptionsError("training and evaluating on the same KLUE file needs --train-rows and --eval-rows "
                           "(e.g. :1500 and 1500:)", option="eval_rows")
    train, dev = select_rows(train_all, train_rows), select_rows(eval_all, eval_rows)
    overlap = {e["id"] for e in train.examples} & {e["id"] for e in dev.examples}
    if overlap:
        raise OptionsError(f"{len(overlap)} rows are in both the training and the evaluation rows "
                           f"(e.g. guid {sorted(overlap)[0]!r})", option="eval_rows")
    return train, dev


def _json_list(path, data):
    text = read_text(path, data)
    root = load_json(path, text)
    if not isinstance(root, list):
        raise DataError(path, "a JSON list of rows (KLUE's format)", value=type(root).__name__)
    return root


def _get(path, n, record, name, kinds, expected):
    where = f"row {n}" + (f" (guid {record['guid']!r})" if isinstance(record, dict) and
                          isinstance(record.get("guid"), str) else "")
    if not isinstance(record, dict):
        raise DataError(path, "a JSON object", record=f"row {n}", value=record)
    if name not in record:
        raise DataError(path, expected, record=where, field=name)
    value = record[name]
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise DataError(path, expected, record=where, field=name, value=value)
    return value


def _result(path, examples, label_names, task):
    if not examples:
        raise DataError(path, "at least one row", value="no rows")
    return TaskData(examples, label_names, str(path), {"task": task})


def read_nli(path, *, labelled: bool = True, data: bytes | None = None) -> TaskData:
    """KLUE-NLI: examples {"id" (guid), "text_a" (premise), "text_b" (hypothesis), "label"
    (an index into NLI_LABELS; None unlabelled)}."""
    examples = []
    for n, record in enumerate(_json_list(path, data)):
        guid = _get(path, n, record, "guid", str, "a string guid")
        label = None
        if labelled:
            expected = f"one of {', '.join(NLI_LABELS)}"
            name = _get(path, n, record, "gold_label", str, expected)
            if name not in NLI_LABELS:
                raise DataError(path, expected, record=f"row {n} (guid {guid!r})", field="gold_label", value=name)
            label = NLI_LABELS.index(name)
        examples.append({"id": guid, "text_a": _get(path, n, record, "premise", str, "a string"),
                         "text_b": _get(path, n, record, "hypothesis", str, "a string"), "label": label})
    return _result(path, examples, NLI_LABELS, "klue/nli")


def read_sts(path, *, labelled: bool = True, data: bytes | None = None) -> TaskData:
    """KLUE-STS: examples {"id", "text_a", "text_b", "label" (the 0-5 ``labels.label``),
    "binary_label" (``labels.binary-label``, 0/1)}; labels None unlabelled."""
    examples = []
    for n, record in enumerate(_json_list(path, data)):
        guid = _get(path, n, record, "guid", str, "a string guid")
        where = f"row {n} (guid {guid!r})"
        label = binary = None
        if labelled:
            labels = _get(path, n, record, "labels", dict, "an object with label and binary-label")
            if "label" not in labels or isinstance(labels["label"], bool) or \
                    not isinstance(labels["label"], (int, float)) or not math.isfinite(labels["label"]) or \
                    not STS_RANGE[0] <= labels["label"] <= STS_RANGE[1]:
                raise DataError(path, "a number in [0, 5]", record=where, field="labels.label",
                                value=labels.get("label"))
            if labels.get("binary-label") not in (0, 1) or isinstance(labels.get("binary-label"), bool):
                raise DataError(path, "0 or 1", record=where, field="labels.binary-label",
                                value=labels.get("binary-label"))
            label, binary = float(labels["label"]), int(labels["binary-label"])
        examples.append({"id": guid, "text_a": _get(path, n, record, "sentence1", str, "a string"),
                         "text_b": _get(path, n, record, "sentence2", str, "a string"), "label": label,
                         "binary_label": binary})
    return _result(path, examples, None, "klue/sts")


def read_ner(path, *, labelled: bool = True, data: bytes | None = None) -> TaskData:
    """KLUE-NER: examples {"id" (guid), "text" (the sentence: its characters, spaces included),
    "tags" (one per character; None unlabelled), "marked" (the ``##`` line's sentence with
    ``<entity:TYPE>`` marks)}. A character line without a tab, a line of more than one character
    or an unknown tag is an error naming the line."""
    text = read_text(path, data)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    examples, current = [], None

    def close(line_number):
        if current is not None:
            if not current["text"]:
                raise DataError(path, "at least one character line after the ## header", line=line_number,
                                record=f"guid {current['id']!r}")
            current["text"] = "".join(current["text"])
            examples.append(current)

    for number, line in enumerate(lines, start=1):
        line = line[:-1] if line.endswith("\r") else line
        if line == "":
            close(number)
            current = None
            continue
        if line.startswith("##"):
            if current is not None and current["text"]:
                raise DataError(path, "a blank line before the next sentence's ## header", line=number)
            head = line[2:].strip()
            if "\t" in head:  # "## GUID<TAB>marked sentence"; other ## lines describe the format
                guid, marked = head.split("\t", 1)
                current = {"id": guid.strip(), "text": [], "tags": [] if labelled else None, "marked": marked}
            continue
        if current is None:
            raise DataError(path, "a '## GUID<TAB>sentence' header before the sentence's character lines",
                            line=number, value=line)
        if "\t" not in line:
            raise DataError(path, "CHAR<TAB>TAG", line=number, record=f"guid {current['id']!r}", field="tab",
                            value=line)
        char, tag = line.split("\t", 1)
        if len(char) != 1:
            raise DataError(path, "one character before the tab", line=number, record=f"guid {current['id']!r}",
                            field="CHAR", value=char)
        current["text"].append(char)
        if labelled:
            if tag not in NER_LABELS:
                raise DataError(path, f"one of the 13 KLUE tags ({', '.join(NER_LABELS)})", line=number,
                                record=f"guid {current['id']!r}", field="NE_TAG", value=tag)
            current["tags"].append(tag)
    close(len(lines) + 1)
    return _result(path, examples, NER_LABELS, "klue/ner")


READERS = {"nli": read_nli, "sts": read_sts, "ner": read_ner}
