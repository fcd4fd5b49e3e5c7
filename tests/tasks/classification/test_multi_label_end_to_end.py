"""Multi-label classification from the command line (issue 17 item 2): list labels in JSONL, the
threshold and at-least-one-label decisions, micro/macro-F1 and exact match against values computed
by hand and by sklearn from the written predictions, and list labels round-tripping through
kbert.finetune -> kbert.predict."""

import json

import numpy as np
import pytest
import sklearn.metrics

from kbert.data.table import read_table
from kbert.errors import DataError
from kbert.tasks.core.options import FinetuneOptions
from kbert.tasks.classification.task import TableOptions
from kbert.tasks.core.registry import get_task

LABELS = ["a", "b", "c"]
# Gold label sets; the hand-set head below predicts the same set for every row.
GOLD = [["a"], ["a", "c"], "b", []]  # "b": a single string is a one-label list; []: no label


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _eval_file(tmp_path):
    texts = ["one row", "a second row here", "third", "and the last row of four"]
    return _write_jsonl(tmp_path / "eval.jsonl", [{"text": t, "labels": g} for t, g in zip(texts, GOLD)])


def _hand_set_model(tiny_model_dir, **kwargs):
    """A MultiLabelClassifier whose logits are the bias for every input: sigmoid(2, -2, 0.2) =
    (0.88, 0.12, 0.55)."""
    from kbert.tasks.classification.model import MultiLabelClassifier

    model = MultiLabelClassifier.from_model_dir(tiny_model_dir, label_names=LABELS, seq_length=32, **kwargs)
    kernel, bias = model.head.weights
    kernel.assign(np.zeros(kernel.shape, "float32"))
    bias.assign(np.array([2.0, -2.0, 0.2], "float32"))
    return model


def _recipe(eval_file, **table_options):
    task = get_task("jsonl")
    options = FinetuneOptions(task="jsonl", init="unused", model_dir="unused", train_file=str(eval_file),
                              eval_file=str(eval_file), task_options=TableOptions(
                                  text_columns=("text",), label_column="labels", multi_label=True, **table_options))
    return task.task_type.recipe(task, options)


@pytest.mark.parametrize("threshold, at_least_one, expected", [
    # every row predicted {a, c}: TP 3, FP 5, FN 1 -> micro 6/12; per label F1 a 2/3, b 0, c 0.4;
    # exact match: row 2 only
    (0.5, False, {"micro_f1": 0.5, "macro_f1": (2 / 3 + 0 + 0.4) / 3, "exact_match": 0.25}),
    # nothing passes 0.9: no TP -> 0; exact match: the row with no gold label
    (0.9, False, {"micro_f1": 0.0, "macro_f1": 0.0, "exact_match": 0.25}),
    # ... but at least one label: the most probable, a: TP 2, FP 2, FN 2 -> 0.5; a's F1 2/3
    (0.9, True, {"micro_f1": 0.5, "macro_f1": (2 / 3) / 3, "exact_match": 0.25}),
])
def test_thresholded_predictions_give_the_hand_computed_metrics(tiny_model_dir, tmp_path, threshold, at_least_one,
                                                                 expected):
    import tensorflow as tf

    recipe = _recipe(_eval_file(tmp_path), threshold=threshold, at_least_one_label=at_least_one)
    assert recipe.label_names == tuple(LABELS) and recipe.main_metric == "micro_f1"
    model = _hand_set_model(tiny_model_dir, threshold=threshold, at_least_one=at_least_one)
    metrics, indicators = recipe.evaluate(model)
    assert metrics == pytest.approx(expected)
    # The serving graph decides the same way as the Python path.
    served = model.serve(tf.constant(["one row", "another"]))["predictions"].numpy()
    np.testing.assert_array_equal(served, indicators[:2])


def test_list_labels_are_read_and_bad_labels_name_file_line_and_value(tmp_path):
    data = read_table(_eval_file(tmp_path), "text", "labels", multi_label=True)
    assert data.label_names == ("a", "b", "c")  # the union over the file
    assert [e["label"] for e in data.examples] == [(0,), (0, 2), (1,), ()]
    tsv = tmp_path / "t.tsv"
    tsv.write_text("text\tlabels\nhello\tb\n", encoding="utf-8")
    assert read_table(tsv, "text", "labels", multi_label=True, label_names=LABELS).examples[0]["label"] == (1,)

    unknown = _write_jsonl(tmp_path / "unknown.jsonl", [{"text": "x", "labels": ["a"]}, {"text": "y", "labels": ["zz"]}])
    expected = r"unknown\.jsonl, line 2: field 'labels': got 'zz'; expected one of 'a', 'b', 'c'"
    with pytest.raises(DataError, match=expected):
        read_table(unknown, "text", "labels", multi_label=True, label_names=LABELS)
    bad = _write_jsonl(tmp_path / "bad.jsonl", [{"text": "x", "labels": ["a", {"b": 1}]}])
    with pytest.raises(DataError, match=r"bad\.jsonl, line 1: field 'labels'.*list of string or number labels"):
        read_table(bad, "text", "labels", multi_label=True)


def _micro_f1_by_hand(predicted, gold):
    tp = sum(len(set(p) & set(g)) for p, g in zip(predicted, gold))
    fp = sum(len(set(p) - set(g)) for p, g in zip(predicted, gold))
    fn = sum(len(set(g) - set(p)) for p, g in zip(predicted, gold))
    return 2 * tp / (2 * tp + fp + fn) if tp else 0.0


@pytest.mark.slow
def test_finetune_multi_label_then_predict_round_trips_the_lists(tiny_model_dir, tmp_path):
    from kbert.commands.finetune import main as finetune
    from kbert.commands.predict import main as predict
    from kbert.tasks import load_task_model

    rng = np.random.default_rng(0)
    words = ["film", "plot", "actor", "music", "city", "river"]
    topics = {"film": "cinema", "plot": "cinema", "actor": "cinema", "music": "art", "city": "place", "river": "place"}

    def rows(n):
        out = []
        for _ in range(n):
            chosen = list(rng.choice(words, size=rng.integers(1, 4), replace=False))
            labels = sorted({topics[w] for w in chosen})
            out.append({"text": " ".join(chosen), "labels": labels[0] if len(labels) == 1 else labels})
        return out

    train = _write_jsonl(tmp_path / "train.jsonl", rows(40) + [{"text": "nothing here", "labels": []}])
    dev_rows = rows(12)
    dev = _write_jsonl(tmp_path / "dev.jsonl", dev_rows)
    out = tmp_path / "run"
    finetune(["--task", "jsonl", "--train-file", str(train), "--eval-file", str(dev), "--text-columns", "text",
              "--label-column", "labels", "--multi-label", "--at-least-one-label", "--init", str(tiny_model_dir),
              "--model-dir", str(out), "--epochs", "1", "--batch-size", "8", "--learning-rate", "1e-3",
              "--seq-length", "32", "--quiet"])
    results = json.loads((out / "eval_results.json").read_text())
    assert results["main_metric"] == "micro_f1"
    best = results["best"]
    assert {"micro_f1", "macro_f1", "exact_match"} <= set(best)

    # The metrics equal those computed from the written predictions, by hand and by sklearn.
    written = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert [w["id"] for w in written] == [str(i) for i in range(1, 13)]  # the eval file's line numbers
    gold = [r["labels"] if isinstance(r["labels"], list) else [r["labels"]] for r in dev_rows]
    predicted = [w["labels"] for w in written]
    assert all(predicted), "--at-least-one-label: every row has a label"
    assert best["micro_f1"] == pytest.approx(_micro_f1_by_hand(predicted, gold))
    names = ["art", "cinema", "place"]
    y_true = np.array([[n in g for n in names] for g in gold], dtype=int)
    y_pred = np.array([[n in p for n in names] for p in predicted], dtype=int)
    assert best["macro_f1"] == pytest.approx(sklearn.metrics.f1_score(y_true, y_pred, average="macro", zero_division=0))
    assert best["exact_match"] == pytest.approx(sklearn.metrics.accuracy_score(y_true, y_pred))

    # The model directory records the decision rule; kbert.predict gives the same lists, in order.
    model = load_task_model(out)
    assert model.task_type == "multi_label_classifier" and model.at_least_one and model.threshold == 0.5
    assert model.label_names == names
    predict([str(out), "--input", str(dev), "--output", str(tmp_path / "pred.jsonl"), "--probabilities", "--quiet"])
    again = [json.loads(line) for line in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert [r["labels"] for r in again] == predicted and [r["id"] for r in again] == [w["id"] for w in written]
    assert all(set(r["probabilities"]) == set(names) for r in again)
    assert model.predict_labels([r["text"] for r in dev_rows]) == predicted

    # The export serves the same decisions: raw strings in, the 0/1 label indicators and the
    # probabilities out (the at-least-one rule included), in a process with TF-Text's ops loaded.
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (the exported graph's tokenizer ops)

    from kbert.export.task import export_task

    exported = tf.saved_model.load(str(export_task(out, tmp_path / "export" / "1", warmup=False)))
    served = exported.signatures["serving_default"](text=tf.constant([r["text"] for r in dev_rows]))
    indicators = served["predictions"].numpy()
    assert [[names[j] for j in np.flatnonzero(row)] for row in indicators] == predicted
    probabilities = served["probabilities"].numpy()
    expected = np.array([[r["probabilities"][n] for n in names] for r in again])
    np.testing.assert_allclose(probabilities, expected, atol=1e-5)
