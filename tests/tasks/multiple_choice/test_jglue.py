"""JCommonsenseQA (kbert.tasks.multiple_choice.jglue) from the command line on a few dozen rows of
``shared/data/jglue`` with the converted ``ja-tiny-random-bert`` (mecab-wordpiece): the accuracy of
``eval_results.json`` recomputed from the predictions file and the gold file read with ``json``;
kbert predict on the same rows without labels; bad rows named by file, line and field."""

import re

import pytest
import sklearn.metrics

from conftest import require
from fixtures.task_runs import jglue_gold_rows, jglue_predict_agrees_with_evaluation, read_jsonl, write_jsonl_rows

require("fugashi")
require("unidic_lite")

from kbert.data import jglue  # noqa: E402
from kbert.errors import DataError  # noqa: E402


@pytest.mark.slow
def test_jcommonsenseqa_accuracy_from_the_predictions_file(jglue_finetuned, ja_mecab_dir):
    out, results = jglue_finetuned("jcommonsenseqa", ja_mecab_dir)
    predictions, gold = read_jsonl(out / "predictions.jsonl"), jglue_gold_rows("jcommonsenseqa")
    assert len(predictions) == 16
    for p in predictions:
        assert p["label"] == gold[p["id"]][f"choice{p['choice']}"]
    accuracy = sklearn.metrics.accuracy_score([gold[p["id"]]["label"] for p in predictions],
                                              [p["choice"] for p in predictions])
    assert results["best"]["accuracy"] == pytest.approx(accuracy, abs=1e-12)


@pytest.mark.parametrize("reader, row, message", [
    (jglue.read_jcommonsenseqa, {"q_id": 1, "question": "何？", **{f"choice{i}": "a" for i in range(4)}, "label": 0},
     r"line 2: field 'choice4': missing"),
    (jglue.read_jcommonsenseqa, {"q_id": 1, "question": "何？", **{f"choice{i}": "a" for i in range(5)}, "label": 5},
     r"line 2: field 'label': got 5; expected an integer choice number 0-4"),
])
def test_bad_rows_name_the_file_line_and_field(tmp_path, reader, row, message):
    good = {"q_id": 0, "question": "何？", **{f"choice{i}": "a" for i in range(5)}, "label": 1}
    path = write_jsonl_rows(tmp_path / "train-v1.3.json", [good, row])
    with pytest.raises(DataError, match=re.escape(str(path)) + ", " + message):
        reader(path)


@pytest.mark.slow
def test_predict_reads_jglue_files_and_agrees_with_evaluation(jglue_finetuned, ja_mecab_dir, tmp_path):
    """kbert.predict on the evaluated rows of the JCommonsenseQA file without their labels: the
    choices fine-tuning wrote for them, in input order."""
    jglue_predict_agrees_with_evaluation(jglue_finetuned("jcommonsenseqa", ja_mecab_dir)[0], "jcommonsenseqa",
                                         tmp_path)
