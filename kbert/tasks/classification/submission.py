"""GLUE's submission files: <Task>.tsv as the GLUE server takes them (SST-2.tsv, MNLI-m.tsv, ...):
header ``index<TAB>prediction``, one row per example in file order; label strings for classification
(entailment, 0/1, ...), a score with 3 decimals for STS-B.
"""

from __future__ import annotations

import pathlib

GLUE_FILES = {"cola": "CoLA.tsv", "sst2": "SST-2.tsv", "mrpc": "MRPC.tsv", "stsb": "STS-B.tsv",
              "qqp": "QQP.tsv", "qnli": "QNLI.tsv", "rte": "RTE.tsv", "wnli": "WNLI.tsv", "ax": "AX.tsv"}
MNLI_FILES = {"dev_matched": "MNLI-m.tsv", "test_matched": "MNLI-m.tsv",
              "dev_mismatched": "MNLI-mm.tsv", "test_mismatched": "MNLI-mm.tsv"}


def glue_file_name(task: str, split: str) -> str:
    if task == "mnli":
        return MNLI_FILES.get(split, "MNLI-m.tsv")
    return GLUE_FILES.get(task, f"{task}.tsv")


def write_glue(path, indices, predictions, label_names=None) -> pathlib.Path:
    """``predictions``: class ids (written as their label names) or scores (label_names None)."""
    path = pathlib.Path(path)
    with path.open("w", encoding="utf-8", newline="") as f:
        f.write(glue_text(indices, predictions, label_names))
    return path


def glue_text(indices, predictions, label_names=None) -> str:
    """The text of a GLUE submission TSV (see write_glue)."""
    lines = ["index\tprediction"]
    for index, value in zip(indices, predictions):
        text = label_names[int(value)] if label_names is not None else f"{float(value):.3f}"
        lines.append(f"{index}\t{text}")
    return "\n".join(lines) + "\n"
