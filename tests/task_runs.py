"""Helpers of the family tests that fine-tune named tasks on the shared benchmark files (JGLUE, KLUE,
KorQuAD, CMRC 2018) with tiny models and recompute the run's metrics from its prediction files: the
JGLUE folders and flags, gold rows read here with json, and the fine-tuning call. The fixtures that
run them once per session (``ja_mecab_dir``, ``jglue_finetuned``) are in conftest.py."""

import json

import pytest

from conftest import REFERENCE, SHARED

# kbert finetune's flags for a short run of BERT-Tiny (the task-type tests of each family)
TINY_FLAGS = ["--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3", "--seq-length", "32", "--quiet"]
JGLUE = SHARED / "jglue"
JGLUE_FLAGS = ["--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3", "--quiet",
               "--max-train-examples", "24", "--max-eval-examples", "16"]
JGLUE_SEQ = {"jsts": "64", "jnli": "64", "jcommonsenseqa": "64", "jsquad": "128"}
PAIR = {"sentence_pair_id": "0", "sentence1": "犬が走る。", "sentence2": "動物が走る。"}


def read_jsonl(path) -> list:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def write_jsonl_rows(path, rows):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def reference_rows(source, n) -> list:
    """The first ``n`` lines of ``source`` in reference/ja_tokenizers.jsonl (transformers' and
    sentencepiece's ids, fugashi's MeCab words)."""
    lines = (REFERENCE / "ja_tokenizers.jsonl").read_text(encoding="utf-8").splitlines()
    return [r for r in map(json.loads, lines) if r["source"] == source][:n]


# -- JGLUE ---------------------------------------------------------------------------------------
def jglue_eval_file(task):
    return next(p for p in sorted((JGLUE / task).glob("*.json")) if not p.name.startswith("train"))


def jglue_gold_rows(task) -> dict:
    key = "q_id" if task == "jcommonsenseqa" else "sentence_pair_id"
    lines = jglue_eval_file(task).read_text(encoding="utf-8").splitlines()
    return {str(r[key]): r for r in map(json.loads, filter(str.strip, lines))}


def jglue_predict_agrees_with_evaluation(out, task, tmp_path):
    """The fine-tuned model directory ``out`` through kbert.predict on the evaluated rows of the JGLUE
    file without their labels: the same answers fine-tuning wrote for them, in input order."""
    from kbert.tasks.core.predict import predict_file

    evaluated = {p["id"]: p for p in read_jsonl(out / "predictions.jsonl")}
    key = "q_id" if task == "jcommonsenseqa" else "sentence_pair_id"
    rows = [r for r in read_jsonl(jglue_eval_file(task)) if str(r[key]) in evaluated]
    for r in rows:
        del r["label"]
    unlabelled = write_jsonl_rows(tmp_path / "unlabelled.json", rows)
    result = predict_file(out, unlabelled, tmp_path / "predicted.jsonl")
    predicted = read_jsonl(tmp_path / "predicted.jsonl")
    assert result["rows"] == len(predicted) == len(rows) == len(evaluated)
    for row, p in zip(rows, predicted):
        expected = evaluated[str(row[key])]
        if task == "jsts":
            assert p["score"] == pytest.approx(expected["score"], abs=1e-4)
        elif task == "jnli":
            assert p["label"] == expected["label"]
        else:
            assert (p["choice"], p["label"]) == (expected["choice"], expected["label"])


# -- KLUE, KorQuAD, CMRC 2018 ---------------------------------------------------------------------
def finetune_tiny(init, model_dir, task, **kwargs):
    """kbert.training.finetune for one epoch of ``task``; ``train_rows``/``eval_rows`` are the KLUE
    tasks' own options (RowsOptions), the other keywords FinetuneOptions'."""
    from kbert.tasks.core.options import FinetuneOptions, RowsOptions
    from kbert.training.finetune import finetune

    rows = {k: kwargs.pop(k) for k in ("train_rows", "eval_rows") if k in kwargs}
    if rows:
        kwargs["named_options"] = RowsOptions(**rows)
    return finetune(FinetuneOptions(task=task, init=str(init), model_dir=str(model_dir), epochs=1, batch_size=8,
                                    learning_rate=1e-3, **kwargs), progress_bar=False)


def same_to_2_decimals(reported, recomputed):
    """The official scripts print 2 decimals: equal there."""
    assert round(reported, 2) == pytest.approx(round(recomputed, 2), abs=0.01)
