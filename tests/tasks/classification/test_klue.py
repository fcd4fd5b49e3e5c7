"""klue/nli and klue/sts (kbert.tasks.classification.klue): KLUE STS's F1 by hand, as KLUE's baseline
computes it; both tasks fine-tuned on the shared dev files, the metrics of eval_results.json
recomputed from the predictions files, kbert predict on an official file of those rows."""

import json

import numpy as np
import pytest

from conftest import SHARED
from kbert.tasks.classification import klue as m
from fixtures.task_runs import finetune_tiny, read_jsonl, same_to_2_decimals

KLUE = SHARED / "klue"
NLI_FILE = KLUE / "klue-nli-v1.1" / "klue-nli-v1.1_dev.json"
STS_FILE = KLUE / "klue-sts-v1.1" / "klue-sts-v1.1_dev.json"


def test_klue_sts_f1_by_hand():
    # gold binary 1 1 0 0; predicted scores cut at 3.0 -> 1 0 1 0: TP 1, FP 1, FN 1 -> F1 0.5
    assert m.klue_sts_f1([3.0, 2.99, 4.0, 0.5], [1, 1, 0, 0]) == pytest.approx(50.0)
    # gold given as 0-5 scores is cut at 3.0 the same way
    assert m.klue_sts_f1([3.0, 2.99, 4.0, 0.5], [4.2, 3.0, 2.0, 0.0]) == pytest.approx(50.0)
    result = m.klue_sts_metrics([1.0, 2.0, 3.0], [1.0, 2.0, 4.0], [0, 0, 1])
    assert result["f1"] == 100.0
    assert result["pearson"] == pytest.approx(np.corrcoef([1, 2, 3], [1, 2, 4])[0, 1])


@pytest.mark.slow
def test_klue_nli_and_sts(tiny_model_dir, tmp_path):
    from kbert.tasks.core.predict import predict_file

    raw = json.loads(NLI_FILE.read_text(encoding="utf-8"))
    result = finetune_tiny(tiny_model_dir, tmp_path / "nli", "klue/nli", train_file=str(NLI_FILE), eval_file=str(NLI_FILE),
                       train_rows=":48", eval_rows="1970:", seq_length=64)
    rows = read_jsonl(tmp_path / "nli" / "predictions.jsonl")
    gold = {r["guid"]: r["gold_label"] for r in raw[1970:]}
    assert [r["guid"] for r in rows] == list(gold)
    same_to_2_decimals(result["best"]["accuracy"], sum(r["label"] == gold[r["guid"]] for r in rows) / len(rows))
    # kbert predict on an official file of those rows: the same rows, guid and label
    unlabelled = tmp_path / "nli_rows.json"
    unlabelled.write_text(json.dumps([{k: v for k, v in r.items() if k != "gold_label"} for r in raw[1970:]],
                                     ensure_ascii=False), encoding="utf-8")
    predict_file(tmp_path / "nli", unlabelled, tmp_path / "nli_predicted.jsonl")
    assert read_jsonl(tmp_path / "nli_predicted.jsonl") == rows

    raw = json.loads(STS_FILE.read_text(encoding="utf-8"))
    result = finetune_tiny(tiny_model_dir, tmp_path / "sts", "klue/sts", train_file=str(STS_FILE), eval_file=str(STS_FILE),
                       train_rows=":48", eval_rows="310:", seq_length=64)
    rows = read_jsonl(tmp_path / "sts" / "predictions.jsonl")
    scores = np.array([r["score"] for r in rows])
    assert ((scores >= 0) & (scores <= 5)).all()
    labels = np.array([r["labels"]["label"] for r in raw[310:]])
    binary = np.array([r["labels"]["binary-label"] for r in raw[310:]])
    same_to_2_decimals(result["best"]["pearson"], np.corrcoef(scores, labels)[0, 1])
    tp = int(((scores >= 3) & (binary == 1)).sum())
    fp, fn = int(((scores >= 3) & (binary == 0)).sum()), int(((scores < 3) & (binary == 1)).sum())
    same_to_2_decimals(result["best"]["f1"], 0.0 if tp == 0 else 100 * 2 * tp / (2 * tp + fp + fn))
    assert set(result["best"]) >= {"pearson", "f1"}
