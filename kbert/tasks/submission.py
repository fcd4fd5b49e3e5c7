"""Prediction files in each benchmark's submission format.

  GLUE      <Task>.tsv as the GLUE server takes them (SST-2.tsv, MNLI-m.tsv, ...): header
            ``index<TAB>prediction``, one row per example in file order; label strings for
            classification (entailment, 0/1, ...), a score with 3 decimals for STS-B
  SQuAD     predictions.json {question id: answer text} (what evaluate-v1.1.py / -v2.0.py read),
            nbest_predictions.json, and null_odds.json {id: score_diff} for 2.0 (as run_squad.py)
  CoNLL     predictions.txt, conlleval's input: "word gold predicted" per line, blank line
            between sentences
  SWAG      predictions.csv: id and pred (the chosen ending, 0-3), one row per example
"""

from __future__ import annotations

import csv
import dataclasses
import json
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


def write_squad(out_dir, predictions: dict, version_2_with_negative: bool) -> list:
    """``predictions``: {question id: SquadPrediction}."""
    out_dir = pathlib.Path(out_dir)
    paths = [out_dir / "predictions.json", out_dir / "nbest_predictions.json"]
    _write_json(paths[0], {qid: p.text for qid, p in predictions.items()})
    _write_json(paths[1], {qid: [dataclasses.asdict(a) for a in p.nbest] for qid, p in predictions.items()})
    if version_2_with_negative:
        paths.append(out_dir / "null_odds.json")
        _write_json(paths[2], {qid: p.score_diff for qid, p in predictions.items()})
    return paths


def write_conll(path, sentences, gold_tags, predicted_tags) -> pathlib.Path:
    path = pathlib.Path(path)
    with path.open("w", encoding="utf-8") as f:
        for words, gold, predicted in zip(sentences, gold_tags, predicted_tags):
            for word, g, p in zip(words, gold, predicted):
                f.write(f"{word} {g} {p}\n")
            f.write("\n")
    return path


def write_swag(path, ids, choices) -> pathlib.Path:
    path = pathlib.Path(path)
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["id", "pred"])
        for qid, choice in zip(ids, choices):
            writer.writerow([qid, int(choice)])
    return path


def _write_json(path, data):
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
