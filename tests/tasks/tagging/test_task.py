"""The tagging task type (kbert.tasks.tagging.task): conll2003 through kbert finetune on a tiny
subset with BERT-Tiny; the entity scores recomputed with seqeval from predictions.txt."""

import json

import pytest
import seqeval.metrics

from conftest import SHARED
from kbert.commands.finetune import main
from kbert.tasks import load_task_model
from fixtures.task_runs import TINY_FLAGS


@pytest.mark.slow
def test_conll_tagging_writes_conlleval_file(tiny_model_dir, tmp_path):
    out = tmp_path / "ner"
    main(["--task", "conll2003", "--data-dir", str(SHARED / "conll2003"), "--init", str(tiny_model_dir),
          "--model-dir", str(out), "--max-train-examples", "32", "--max-eval-examples", "16", *TINY_FLAGS])
    results = json.loads((out / "eval_results.json").read_text())
    assert {"precision", "recall", "f1"} <= set(results["best"]) and results["main_metric"] == "f1"  # plain names
    sentences = (out / "predictions.txt").read_text().strip("\n").split("\n\n")
    assert len(sentences) == 16
    model = load_task_model(out)
    gold, predicted = [], []
    for sentence in sentences:
        rows = [line.split(" ") for line in sentence.splitlines()]
        assert all(g in model.label_names and p in model.label_names for _, g, p in rows)
        gold.append([g for _, g, _ in rows])
        predicted.append([p for _, _, p in rows])
    # The entity scores recomputed with seqeval (conlleval's rules) from the file's two columns.
    for name in ("precision", "recall", "f1"):
        expected = getattr(seqeval.metrics, f"{name}_score")(gold, predicted, zero_division=0)
        assert results["best"][name] == pytest.approx(expected, abs=1e-6), name


@pytest.mark.slow
def test_conll_feature_based_run_keeps_the_inits_encoder(tiny_model_dir, tmp_path):
    """--features (the paper's Table 7): the saved encoder is the init's, weight for weight; the saved
    model is the feature-based tagger again (its BiLSTM's units from --bilstm) and answers as it did."""
    import numpy as np

    from kbert.model_dir import load_encoder

    out = tmp_path / "features"
    main(["--task", "conll2003", "--data-dir", str(SHARED / "conll2003"), "--init", str(tiny_model_dir),
          "--model-dir", str(out), "--max-train-examples", "16", "--max-eval-examples", "8",
          "--features", "sum_all_layers", "--bilstm", "8", *TINY_FLAGS])
    task = json.loads((out / "kbert.json").read_text())["task"]
    assert (task["features"], task["bilstm"]) == ("sum_all_layers", 8)
    results = json.loads((out / "eval_results.json").read_text())
    assert (results["features"], results["bilstm"]) == ("sum_all_layers", 8)
    init, saved = load_encoder(tiny_model_dir), load_encoder(out)
    assert [w.path for w in init.weights] == [w.path for w in saved.weights]
    for a, b in zip(init.weights, saved.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=a.path)
    model = load_task_model(out)
    assert (model.combination, model.head.units, model.head.num_layers) == ("sum_all_layers", 8, 2)
    sentences = (out / "predictions.txt").read_text().strip("\n").split("\n\n")
    words = [[line.split(" ")[0] for line in s.splitlines()] for s in sentences]
    assert model.predict_words(words) == [[line.split(" ")[2] for line in s.splitlines()] for s in sentences]
