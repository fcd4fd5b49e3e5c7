"""JSTS and JNLI (kbert.tasks.classification.jglue) from the command line on a few dozen rows of
``shared/data/jglue`` with the converted ``ja-tiny-random-bert`` (mecab-wordpiece): each metric of
``eval_results.json`` recomputed from the written predictions file and the gold file read with
``json`` (scipy, sklearn); kbert predict on the same rows without labels; bad rows named by file,
line and field."""

import re

import pytest
import scipy.stats
import sklearn.metrics

from conftest import require
from fixtures.task_runs import (JGLUE, JGLUE_FLAGS, PAIR, jglue_gold_rows, jglue_predict_agrees_with_evaluation, read_jsonl,
                       write_jsonl_rows)

require("fugashi")
require("unidic_lite")

from kbert.data import jglue  # noqa: E402
from kbert.errors import DataError  # noqa: E402
from kbert.commands.finetune import main  # noqa: E402
from kbert.tasks import load_task_model  # noqa: E402


@pytest.mark.slow
def test_jsts_pearson_and_spearman_from_the_predictions_file(jglue_finetuned, ja_mecab_dir):
    out, results = jglue_finetuned("jsts", ja_mecab_dir)
    predictions, gold = read_jsonl(out / "predictions.jsonl"), jglue_gold_rows("jsts")
    assert len(predictions) == results["eval_examples"] == 16 and results["train_examples"] == 24
    scores = [p["score"] for p in predictions]
    labels = [gold[p["id"]]["label"] for p in predictions]
    assert results["main_metric"] == "pearson"
    # (abs 1e-6: the recipe holds the labels as float32, as Keras trains on them)
    assert results["best"]["pearson"] == pytest.approx(scipy.stats.pearsonr(scores, labels)[0], abs=1e-6)
    assert results["best"]["spearman"] == pytest.approx(scipy.stats.spearmanr(scores, labels)[0], abs=1e-6)
    assert load_task_model(out).saved_task_info["task_name"] == "jglue/jsts"


@pytest.mark.slow
def test_jnli_accuracy_from_the_predictions_file(jglue_finetuned, ja_mecab_dir):
    out, results = jglue_finetuned("jnli", ja_mecab_dir)
    predictions, gold = read_jsonl(out / "predictions.jsonl"), jglue_gold_rows("jnli")
    assert len(predictions) == 16 and {p["label"] for p in predictions} <= set(jglue.JNLI_LABELS)
    accuracy = sklearn.metrics.accuracy_score([gold[p["id"]]["label"] for p in predictions],
                                              [p["label"] for p in predictions])
    assert results["best"]["accuracy"] == pytest.approx(accuracy, abs=1e-12)
    assert load_task_model(out).label_names == ["entailment", "contradiction", "neutral"]


@pytest.mark.parametrize("reader, row, message", [
    (jglue.read_jsts, {**PAIR, "label": 3.2, "sentence2": None}, r"line 2: field 'sentence2': got None; expected a string"),
    (jglue.read_jsts, {k: v for k, v in PAIR.items() if k != "sentence1"} | {"label": 1.0},
     r"line 2: field 'sentence1': missing; expected a string"),
    (jglue.read_jsts, {**PAIR, "label": 7.5}, r"line 2: field 'label': got 7\.5; expected a number in \[0, 5\]"),
    (jglue.read_jnli, {**PAIR, "label": "maybe"},
     r"line 2: field 'label': got 'maybe'; expected one of entailment, contradiction, neutral"),
    (jglue.read_jnli, PAIR, r"line 2: field 'label': missing"),
])
def test_bad_rows_name_the_file_line_and_field(tmp_path, reader, row, message):
    good = {jglue.read_jsts: {**PAIR, "label": 1.0}, jglue.read_jnli: {**PAIR, "label": "neutral"}}[reader]
    path = write_jsonl_rows(tmp_path / "train-v1.3.json", [good, row])
    with pytest.raises(DataError, match=re.escape(str(path)) + ", " + message):
        reader(path)


def test_data_dir_files_and_bad_rows_through_the_command_line(tmp_path, ja_mecab_dir):
    assert jglue.split_path(JGLUE / "jsts", "dev").endswith("valid-v1.3.json")
    assert jglue.split_path(JGLUE / "jnli", "dev").endswith("dev.json")
    folder = tmp_path / "jnli"
    folder.mkdir()
    write_jsonl_rows(folder / "train.json", [{**PAIR, "label": "neutral"}, {**PAIR, "label": "entailment"}])
    args = ["--task", "jglue/jnli", "--data-dir", str(folder), "--init", str(ja_mecab_dir),
            "--model-dir", str(tmp_path / "out"), *JGLUE_FLAGS]
    with pytest.raises(DataError, match=r"expected a dev file named like valid-v\*\.json or dev\.json"):
        main(args)
    write_jsonl_rows(folder / "dev.json", [{**PAIR, "label": "neutral"}, {"sentence_pair_id": "9", "sentence1": "x", "label": "neutral"}])
    with pytest.raises(DataError, match=re.escape(str(folder / "dev.json")) + r", line 2: field 'sentence2': missing"):
        main(args)


@pytest.mark.slow
@pytest.mark.parametrize("task", ["jsts", "jnli"])
def test_predict_reads_jglue_files_and_agrees_with_evaluation(jglue_finetuned, ja_mecab_dir, task, tmp_path):
    """kbert.predict on the evaluated rows of the JGLUE file without their labels: the answers
    fine-tuning wrote for them, in input order."""
    jglue_predict_agrees_with_evaluation(jglue_finetuned(task, ja_mecab_dir)[0], task, tmp_path)
